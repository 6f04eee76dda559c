"""The Numba kernels that were the ``cpu`` backend until the C++ kernels replaced them
(issue 27). Not part of the package, not a registered backend: the benchmarks load it from
the source tree to compare, until the C++ kernels are at least as fast at every workload.
Same interface and results as the reference backend (bitwise for max pooling, indices, padding, quantized
pooling and the max-pooling gradient; within SPEC 5's bound for averages)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import family as _f
from . import planes as _p
from . import pooling as _k
from .padding import padding  # noqa: F401
from ._buffers import bits, flat, ints
from ._half import tag_for

NAME = "numba"


def _pitch(sizes):
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= s
    return ints(out[::-1])


def _window(window, strides, start, dilations):
    return ints(window), ints(strides), ints(start), ints(dilations)


def _channels_last(x):
    """Whether to run with the channels innermost: when C is the input's smallest memory
    stride (channels-last data), pooling is re-cast as (N, 1, S1..Sk, C) with a unit window
    over C, so the inner loops read contiguous channels instead of striding over them."""
    spatial = [abs(s) for s, n in zip(x.strides[2:], x.shape[2:]) if n > 1]
    return x.shape[1] > 1 and bool(spatial) and abs(x.strides[1]) < min(spatial)


def _to_channels_last(a):
    """(N, C, S...) -> the view (N, 1, S..., C)."""
    return np.moveaxis(a, 1, -1)[:, None]


def _window_cl(window, strides, start, end, dilations):
    return (tuple(window) + (1,), tuple(strides) + (1,), tuple(start) + (0,),
            tuple(end) + (0,), tuple(dilations) + (1,))


def _max_layout(x, window, strides, start, dilations, *outputs):
    """The pitch, window and views max pooling and its gradient run with: channels-last
    inputs with the channels innermost (the pitch keeps flat indices in the caller's order)."""
    pitch = _pitch(x.shape)
    if _channels_last(x):
        window, strides, start, _, dilations = _window_cl(window, strides, start, start,
                                                          dilations)
        pitch = ints([pitch[0], 0] + list(pitch[2:]) + [pitch[1]])
        x = _to_channels_last(x)
        outputs = tuple(None if a is None else _to_channels_last(a) for a in outputs)
    return (pitch, x, window, strides, start, dilations) + tuple(outputs)


def _max_keys(dtype, xb):
    """What max pooling's kernels take for a ``dtype`` input in buffer ``xb``: the value of
    a window with no element (as ``xb``'s type), and ``key_spec``'s keys."""
    return (_empty_value(np.dtype(dtype), xb.dtype),) + _k.key_spec(xb, dtype)


@lru_cache(maxsize=None)
def _empty_value(dtype, buf_dtype):
    if dtype == np.float16:
        empty = np.uint16(0xFC00)
    elif dtype.kind == "f":
        empty = dtype.type(-np.inf)
    else:
        empty = np.iinfo(dtype).min
    return np.array(empty).astype(buf_dtype)[()]


def max_pooling(x, y, indices, window, strides, start, dilations, empty_index):
    # (SPEC's "no element" index, empty_index, is all ones at every width: _k.EMPTY_INDEX)
    pitch, x, window, strides, start, dilations, y, indices = _max_layout(
        x, window, strides, start, dilations, y, indices)
    xb, xo, xs = flat(x)
    yb, yo, ys = flat(y)
    # indices as unsigned integers of their width (their values are never negative), in a
    # pair of 32- and 64-bit buffers, one of them empty: one compiled kernel per data type
    ib = (np.empty(0, np.uint32), np.empty(0, np.uint64))
    io, ist = 0, ints([0] * y.ndim)
    if indices is not None:
        buf, io, ist = flat(bits(indices))
        ib = (buf, ib[1]) if buf.dtype == np.uint32 else (ib[0], buf)
    empty, xi, kspec, kmin = _max_keys(x.dtype, xb)
    _k.max_pool_kernel(xb, xo, xs, ints(x.shape), pitch, yb, yo, ys, ib, io, ist,
                       ints(y.shape), *_window(window, strides, start, dilations),
                       tag_for(x.dtype), empty, _k.EMPTY_INDEX, True, indices is not None,
                       xi, _k.key_spec(yb, x.dtype)[0], kspec, kmin, _k.TABLE, _k.FLAT,
                       None if indices is None else np.array([np.iinfo(xi.dtype).max],
                                                             xi.dtype))


def _counts(in_spatial, out_spatial, window, strides, start, end, dilations, include_padding):
    """Per spatial dimension, the divisor's factor at each output position (the divisor of a
    window is their product): real positions, or real and padding ones."""
    parts = []
    for i, (size, osz) in enumerate(zip(in_spatial, out_spatial)):
        o = np.arange(osz)[:, None]
        q = o * strides[i] + np.arange(window[i])[None, :] * dilations[i]
        ok = (q < size + start[i] + end[i]) if include_padding else \
            (q >= start[i]) & (q < size + start[i])
        parts.append(ok.sum(axis=1))
    starts = np.cumsum([0] + [len(p) for p in parts[:-1]])
    return ints(np.concatenate(parts)), ints(starts)


@lru_cache(maxsize=32)
def _divisors(in_spatial, out_spatial, window, strides, start, end, dilations,
              include_padding, wide):
    """``_counts`` and the last dimension's factors as floats (float64 where ``wide``),
    read-only and kept for later calls."""
    counts, cstart = _counts(in_spatial, out_spatial, window, strides, start, end, dilations,
                             include_padding)
    fdiv = counts[cstart[-1]:].astype(np.float64 if wide else np.float32)
    for a in (counts, cstart, fdiv):
        a.flags.writeable = False
    return counts, cstart, fdiv


def _per_channel(a, dtype):
    """A per-tensor or per-channel parameter (broadcastable to (1, C, 1, ...)) as a flat
    array of 1 or C values."""
    a = np.asarray(a)
    return np.ascontiguousarray(a.reshape(-1) if a.size > 1 else a.reshape(1), dtype=dtype)


_NO_Q = (np.zeros(1, np.int64), np.ones(1, np.float32))


def _sum_pool(x, y, window, strides, start, end, dilations, include_padding, acc, quant):
    xb, xo, xs = flat(x)
    yb, yo, ys = flat(y)
    counts, cstart, fdiv = _divisors(x.shape[2:], y.shape[2:], tuple(window), tuple(strides),
                                     tuple(start), tuple(end), tuple(dilations),
                                     bool(include_padding), acc == np.float64)
    zp_in, s_in, zp_out, s_out = quant
    ext = None if quant is _NO_QUANT else _p.extents(x.shape[2:], y.shape[2:], window,
                                                     strides, start, dilations)
    if ext is not None:
        _p.plane_sum_kernel(xb, xo, xs, ints(x.shape), yb, yo, ys, ints(y.shape), ints(window),
                            ints(start), ints(dilations), ext, counts, cstart, fdiv,
                            tag_for(x.dtype), np.zeros(1, acc), zp_in, s_in, zp_out, s_out,
                            *_range(y.dtype))
        return
    _k.sum_pool_kernel(xb, xo, xs, ints(x.shape), _pitch(x.shape), yb, yo, ys, ints(y.shape),
                       *_window(window, strides, start, dilations), counts, cstart, fdiv,
                       tag_for(x.dtype), np.zeros(1, acc), zp_in, s_in, zp_out, s_out,
                       quant is not _NO_QUANT, *_range(y.dtype), _k.TABLE)


_NO_QUANT = _NO_Q + _NO_Q


def _range(dtype):
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return float(info.min), float(info.max)
    return 0.0, 0.0


def average_pooling(x, y, window, strides, start, end, dilations, include_padding):
    acc = np.float64 if x.dtype == np.float64 else np.float32
    if _channels_last(x):
        window, strides, start, end, dilations = _window_cl(window, strides, start, end,
                                                            dilations)
        x, y = _to_channels_last(x), _to_channels_last(y)
    _sum_pool(x, y, window, strides, start, end, dilations, include_padding, acc, _NO_QUANT)


def quantized_average_pooling(x, scale_in, zp_in, scale_out, zp_out, y, window, strides, start,
                              end, dilations, include_padding):
    quant = (_per_channel(zp_in, np.int64), _per_channel(scale_in, np.float32),
             _per_channel(zp_out, np.int64), _per_channel(scale_out, np.float32))
    # |x - zp| <= 255: a window's sum fits int16 up to 128 elements, int32 below 2^23 (and
    # sums that wrap on the way come out right where the result fits)
    volume = np.prod(window, dtype=np.float64)
    acc = np.int16 if volume <= 128 else np.int32 if volume < 2.0**23 else np.int64
    _sum_pool(x, y, window, strides, start, end, dilations, include_padding, acc, quant)


def max_pooling_grad(x, dy, dx, window, strides, start, dilations):
    dxb, dxo, dxs = flat(dx)
    dxsz = ints(dx.shape)
    acc = np.float64 if x.dtype == np.float64 else np.float32
    tag = tag_for(x.dtype)
    pitch, x, window, strides, start, dilations, dy = _max_layout(
        x, window, strides, start, dilations, dy)
    xb, xo, xs = flat(x)
    dyb, dyo, dys = flat(dy)
    _k.max_grad_kernel(xb, xo, xs, ints(x.shape), pitch, dyb, dyo, dys, ints(dy.shape),
                       *_window(window, strides, start, dilations), dxb, dxo, dxs, dxsz, tag,
                       np.zeros(1, acc), dx.flags.c_contiguous, *_max_keys(x.dtype, xb),
                       _k.FLAT)


WARMUP_TYPES = {
    "max_pooling": ("float32", "float16", "float64", "int8", "uint8", "int32"),
    "average_pooling": ("float32", "float16", "float64"),
    "max_pooling_grad": ("float32", "float16", "float64"),
    "quantized_linear_average_pooling": (("uint8", "uint8"), ("int8", "int8")),
    "padding": ("float32", "float16", "float64", "int8", "uint8", "int32", "int64"),
    "average_pooling_grad": ("float32", "float16"),
    "lp_pooling": ("float32", "float16"),
    # unpooling compiles per data width and index width: float32 covers every 4-byte type
    "max_unpooling": (("float32", "uint32"), ("float32", "int64"), ("float16", "uint32")),
    "roi_pooling": ("float32", "float16"),
}


def _warmup_calls() -> list:
    """``(name, call)`` for each signature of ``WARMUP_TYPES``, in its order (the costliest,
    max pooling's, first)."""
    import dmlops as dml

    def x_of(dtype):
        return np.arange(16).astype(dtype).reshape(1, 1, 4, 4)

    calls = []
    for dt in WARMUP_TYPES["max_pooling"]:
        calls.append((f"max_pooling {dt}",
                      lambda dt=dt: dml.max_pooling(x_of(dt), 2, backend=NAME)))
        calls.append((f"max_pooling {dt} + uint32 indices",
                      lambda dt=dt: dml.max_pooling(x_of(dt), 2, output_indices=True,
                                                    backend=NAME)))
    for dt in WARMUP_TYPES["average_pooling"]:
        calls.append((f"average_pooling {dt}",
                      lambda dt=dt: dml.average_pooling(x_of(dt), 2, backend=NAME)))
    for dt in WARMUP_TYPES["max_pooling_grad"]:
        calls.append((f"max_pooling_grad {dt}", lambda dt=dt: dml.max_pooling_grad(
            x_of(dt), np.ones((1, 1, 3, 3), dt), 2, backend=NAME)))
    for din, dout in WARMUP_TYPES["quantized_linear_average_pooling"]:
        calls.append((f"quantized_linear_average_pooling {din} -> {dout}",
                      lambda din=din, dout=dout: dml.quantized_linear_average_pooling(
                          x_of(din), 0.5, 0, 0.5, 0, 2, output_dtype=dout, backend=NAME)))
    for dt in WARMUP_TYPES["padding"]:
        calls.append((f"padding {dt}", lambda dt=dt: dml.padding(
            x_of(dt), (0, 0, 1, 1), (0, 0, 1, 1), mode="reflection", backend=NAME)))
    for dt in WARMUP_TYPES["average_pooling_grad"]:
        calls.append((f"average_pooling_grad {dt}", lambda dt=dt: dml.average_pooling_grad(
            np.ones((1, 1, 3, 3), dt), 2, input_sizes=(4, 4), backend=NAME)))
    for dt in WARMUP_TYPES["lp_pooling"]:
        calls.append((f"lp_pooling {dt}",
                      lambda dt=dt: dml.lp_pooling(x_of(dt), 2, backend=NAME)))
    for dt, it in WARMUP_TYPES["max_unpooling"]:
        calls.append((f"max_unpooling {dt} + {it} indices",
                      lambda dt=dt, it=it: dml.max_unpooling(
                          x_of(dt), np.arange(16).astype(it).reshape(1, 1, 4, 4),
                          (1, 1, 4, 4), backend=NAME)))
    for dt in WARMUP_TYPES["roi_pooling"]:
        calls.append((f"roi_pooling {dt}", lambda dt=dt: dml.roi_pooling(
            x_of(dt), np.array([[0, 0, 0, 3, 3]], dt), spatial_scale=1.0, pooled_size=2,
            backend=NAME)))
    return calls


def _timed(call) -> float:
    """The seconds ``call()`` takes."""
    import time

    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _warmup_one(name: str) -> float:
    """Compile one of ``_warmup_calls`` by name (in a worker process); its seconds."""
    return _timed(dict(_warmup_calls())[name])


def warmup(report=None, jobs: int = 1):
    """Compile (or load from the on-disk cache) the kernels of the common signatures, so a
    later first call starts at once. ``report(name, seconds)`` is told of each, as each
    ends. ``jobs`` > 1 compiles in that many worker processes at once (Numba compiles one
    function at a time per process; the cache is safe for several), largest first; a
    kernel that two signatures share may then be compiled by two workers."""
    calls = _warmup_calls()
    if jobs <= 1 or len(calls) < 2:
        done = ((name, _timed(call)) for name, call in calls)
    else:
        done = in_workers(_warmup_one, [name for name, _ in calls], jobs)
    for name, seconds in done:
        if report is not None:
            report(name, seconds)


def in_workers(fn, names, jobs: int):
    """``(name, fn(name))`` for each of ``names``, as each ends, ``fn`` run in ``jobs``
    spawned worker processes, taking ``names`` in order (``fn`` must be importable there)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # (spawned, not forked: a fork of a process with Numba's threads running is unsafe)
    with ProcessPoolExecutor(min(jobs, len(names)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {pool.submit(fn, name): name for name in names}
        for done in as_completed(running):
            yield running[done], done.result()


# --- the rest of the pooling family (kernels in family.py) -------------------------------

def lp_pooling(x, y, window, strides, start, dilations, p):
    xb, xo, xs = flat(x)
    yb, yo, ys = flat(y)
    _f.lp_kernel(xb, xo, xs, ints(x.shape), yb, yo, ys, ints(y.shape),
                 *_window(window, strides, start, dilations), int(p), tag_for(x.dtype))


def average_pooling_grad(dy, dx, window, strides, start, end, dilations, include_padding):
    gb, go, gs = flat(dy)
    db, do, ds = flat(dx)
    counts, cstart = _counts(dx.shape[2:], dy.shape[2:], window, strides, start, end,
                             dilations, include_padding)
    acc = np.float64 if dx.dtype == np.float64 else np.float32
    _f.average_grad_kernel(gb, go, gs, ints(dy.shape), db, do, ds, ints(dx.shape),
                           *_window(window, strides, start, dilations), counts, cstart,
                           tag_for(dx.dtype), np.zeros(1, acc))


def max_unpooling(x, indices, y, empty_index):
    skip = empty_index is not None
    empty = np.array(empty_index if skip else 0).astype(indices.dtype)
    # unpooling only moves values: one compiled kernel per width serves every type (and
    # int64's -1 becomes uint64's 2^64-1, the other "no element" value)
    xb, xo, xs = flat(bits(x))
    ib, io, ist = flat(bits(indices))
    yb, yo, ys = flat(bits(y))
    empty = bits(empty)[()]
    insz, outsz = ints(x.shape), ints(y.shape)
    local = _f.unpool_local(ib, io, ist, insz, outsz, empty, skip)
    _f.unpool_kernel(xb, xo, xs, ib, io, ist, insz, yb, yo, ys, outsz, empty, skip, local,
                     y.flags.c_contiguous)


def roi_pooling(x, regions, y):
    xb, xo, xs = flat(x)
    yb, yo, ys = flat(y)
    _f.roi_kernel(xb, xo, xs, np.ascontiguousarray(regions, np.int64), yb, yo, ys,
                  ints(y.shape), x.shape[2], x.shape[3], tag_for(x.dtype))
