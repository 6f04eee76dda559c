"""The ``cpu`` backend: C++ kernels compiled when the package is built (``src/kernels``), run
at the best level this CPU has (``_levels``), multi-threaded without the GIL. Same interface
and results as the reference backend: bitwise for max pooling, its indices and gradient,
unpooling, padding and quantized pooling; averages summed in the same order.

This module only adapts arrays: views for channels-last data, aligned buffers, the thread
count. Everything was validated by the caller.
"""

from __future__ import annotations

import numpy as np

from ...threads import get_num_threads
from ._levels import baseline, kernels, level, set_level, supported  # noqa: F401

NAME = "cpu"
ALL_ONES = (1 << 64) - 1      # SPEC's "no element" index, all ones at every width
FORCE_PLAIN = False           # run the plain kernels only (tests compare the paths)

# A build without its kernels makes the backend unavailable (an ImportError here); a bad
# DMLOPS_CPU_LEVEL is each call's UnsupportedError (``ready``), so the other backends stay
# usable.
baseline()


def ready() -> None:
    """Raises the UnsupportedError of a level this CPU cannot run (``DMLOPS_CPU_LEVEL``)."""
    kernels()


def _pitch(sizes):
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= s
    return out[::-1]


def _channels_last(x) -> bool:
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


def _readable(a):
    """``a`` itself when the kernels can read it in place (elements aligned to their size),
    else an aligned copy."""
    return a if a is None or a.flags.aligned else np.array(a)


class _Writable:
    """Outputs the kernels write in place, or aligned stand-ins copied back on exit."""

    def __init__(self, *arrays):
        self.given = arrays
        self.arrays = tuple(a if a is None or a.flags.aligned else np.empty_like(a)
                            for a in arrays)

    def __enter__(self):
        return self.arrays

    def __exit__(self, *exc):
        if exc[0] is None:
            for given, used in zip(self.given, self.arrays):
                if used is not given:
                    given[...] = used


def _max_layout(x, window, strides, start, dilations, *outputs):
    """The pitch, window and views max pooling and its gradient's argmax run with:
    channels-last inputs with the channels innermost (the pitch keeps flat indices in the
    caller's order)."""
    pitch = _pitch(x.shape)
    if _channels_last(x):
        window, strides, start, _, dilations = _window_cl(window, strides, start, start,
                                                          dilations)
        pitch = [pitch[0], 0] + pitch[2:] + [pitch[1]]
        x = _to_channels_last(x)
        outputs = tuple(None if a is None else _to_channels_last(a) for a in outputs)
    return (pitch, x, window, strides, start, dilations) + outputs


def max_pooling(x, y, indices, window, strides, start, dilations, empty_index):
    # (empty_index, all ones at its width, is what ALL_ONES writes at any width)
    pitch, x, window, strides, start, dilations, y, indices = _max_layout(
        x, window, strides, start, dilations, y, indices)
    with _Writable(y, indices) as (y, indices):
        kernels().max_pool(_readable(x), y, indices, window, strides, start, dilations, pitch,
                           ALL_ONES, get_num_threads(), FORCE_PLAIN)


def average_pooling(x, y, window, strides, start, end, dilations, include_padding):
    if _channels_last(x):
        window, strides, start, end, dilations = _window_cl(window, strides, start, end,
                                                            dilations)
        x, y = _to_channels_last(x), _to_channels_last(y)
    with _Writable(y) as (y,):
        kernels().average_pool(_readable(x), y, window, strides, start, end, dilations,
                               bool(include_padding), get_num_threads(), FORCE_PLAIN)


def _per_channel(a, dtype):
    """A per-tensor or per-channel parameter (broadcastable to (1, C, 1, ...)) as a packed
    array of 1 or C values."""
    a = np.asarray(a)
    return np.ascontiguousarray(a.reshape(-1) if a.size > 1 else a.reshape(1), dtype=dtype)


def quantized_average_pooling(x, scale_in, zp_in, scale_out, zp_out, y, window, strides, start,
                              end, dilations, include_padding):
    params = [_per_channel(zp_in, np.int64), _per_channel(scale_in, np.float32),
              _per_channel(zp_out, np.int64), _per_channel(scale_out, np.float32)]
    count = max(p.size for p in params)
    params = [np.ascontiguousarray(np.broadcast_to(p, (count,))) for p in params]
    channel = 1
    if _channels_last(x):
        window, strides, start, end, dilations = _window_cl(window, strides, start, end,
                                                            dilations)
        x, y = _to_channels_last(x), _to_channels_last(y)
        channel = x.ndim - 1
    with _Writable(y) as (y,):
        kernels().quantized_average_pool(_readable(x), y, *params, channel, window, strides,
                                         start, end, dilations, bool(include_padding),
                                         get_num_threads(), FORCE_PLAIN)


def lp_pooling(x, y, window, strides, start, dilations, p):
    with _Writable(y) as (y,):
        kernels().lp_pool(_readable(x), y, window, strides, start, dilations, int(p), get_num_threads())


def max_pooling_grad(x, dy, dx, window, strides, start, dilations):
    # the argmax of every window (flat indices, as max pooling gives them), then the scatter
    arg = np.empty(dy.shape, np.uint64)
    pitch, x, window, strides, start, dilations, arg_view = _max_layout(
        x, window, strides, start, dilations, arg)
    k = kernels()
    k.max_pool(_readable(x), None, arg_view, window, strides, start, dilations, pitch,
               ALL_ONES, get_num_threads(), FORCE_PLAIN)
    with _Writable(dx) as (dx,):
        k.max_pool_grad(_readable(dy), arg, dx, ALL_ONES, get_num_threads())


def average_pooling_grad(dy, dx, window, strides, start, end, dilations, include_padding):
    with _Writable(dx) as (dx,):
        kernels().average_pool_grad(_readable(dy), dx, window, strides, start, end, dilations,
                                    bool(include_padding), get_num_threads())


def _bits(a):
    """The same memory as unsigned integers of its width: unpooling only moves values, and
    indices are never negative (INT64's "no element" -1 reads as 2^64 - 1)."""
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def max_unpooling(x, indices, y, empty_index):
    skip = empty_index is not None
    empty = int(np.array(empty_index if skip else 0).astype(indices.dtype).view(
        f"u{indices.dtype.itemsize}"))
    with _Writable(y) as (y,):
        kernels().max_unpool(_bits(_readable(x)), _bits(_readable(indices)), _bits(y), empty,
                             skip, get_num_threads())


def roi_pooling(x, regions, y):
    with _Writable(y) as (y,):
        kernels().roi_pool(_readable(x), np.ascontiguousarray(regions, np.int64), y, get_num_threads())


def padding(x, y, start, mode, value):
    bits = int(np.asarray(value, y.dtype).reshape(()).view(f"u{y.dtype.itemsize}"))
    with _Writable(y) as (y,):
        kernels().padding(_readable(x), y, list(start), int(mode), bits, get_num_threads(),
                          FORCE_PLAIN)
