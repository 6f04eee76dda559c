"""Dask arrays through the functions (SPEC 6): the call is validated at once, exactly as in
memory (on a stand-in of the array's shape and type that holds no data), and returns a lazy
Dask array whose computed result is the in-memory result bit for bit, whatever the chunking.

Padding is planned per dimension: the start and end pads are gathers (``take``) of the few
input slices their sources lie in, or blocks of the value (constant mode), set beside the
input itself, so an output block reads only the input it copies; pads wider than the input
(several periods of reflection, symmetry or wrap) included. Average, max and Lp pooling are
planned from the output side: each output block runs the in-memory kernel on the input its
windows cover (``pooling``). The gradients, quantized pooling, unpooling and ROI pooling of
Dask arrays arrive with a later version.

Dask is imported only here, only when a Dask array is passed (the ``dask`` extra).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .backends.reference.padding import index_map
from .errors import Names
from .padding import PaddingMode
from .threads import on_this_thread


def is_dask(x) -> bool:
    """Whether ``x`` is a Dask array (without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask" and hasattr(x, "chunks")


def stand_in(x, names: Names, field: str = "x") -> np.ndarray:
    """A NumPy array of ``x``'s shape and type holding no data (every element the same one),
    for the in-memory validation and planning."""
    if any(isinstance(n, float) and math.isnan(n) for n in x.shape):
        raise names.invalid(f"{names(field)} has chunks of unknown size (shape {x.shape}); "
                            f"call {field}.compute_chunk_sizes() first")
    try:
        one = np.zeros(1, x.dtype)
    except TypeError:
        one = np.zeros(1, object)
    return np.lib.stride_tricks.as_strided(one, tuple(int(n) for n in x.shape),
                                           (0,) * x.ndim, writeable=False)


def output_chunks(chunks, out_shape, dtype, names: Names, default):
    """The output's chunking: ``chunks=`` (anything ``dask.array`` accepts), else
    ``default``; normalised against the output's shape."""
    from dask.array.core import normalize_chunks

    try:
        return normalize_chunks(default if chunks is None else chunks, tuple(out_shape),
                                dtype=np.dtype(dtype))
    except (ValueError, TypeError) as e:
        raise names.invalid(f"chunks = {chunks!r} cannot chunk an output of shape "
                            f"{tuple(out_shape)}: {e}") from None


def _pieces(n: int, beside: tuple) -> tuple:
    """``n`` as pieces of the largest of the chunks ``beside`` (the last piece shorter)."""
    step = max(beside) if beside else 1
    return (step,) * (n // step) + ((n % step,) if n % step else ())


def padding(x, plan, chunks, names: Names):
    """The lazy padding of Dask array ``x`` by ``plan`` (a PadPlan), chunked by ``chunks``
    (None: the input's chunks, and the pads in pieces of its largest chunk along their
    dimension)."""
    import dask.array as da

    default = tuple(_pieces(plan.start[d], cs) + tuple(cs) + _pieces(plan.end[d], cs)
                    for d, cs in enumerate(x.chunks))
    out_chunks = output_chunks(chunks, plan.out_sizes, x.dtype, names, default)
    y = x
    for d in range(x.ndim):
        a, b = plan.start[d], plan.end[d]
        if a == 0 and b == 0:
            continue
        n = x.shape[d]
        parts = []
        for count, first in ((a, 0), (b, a + n)):
            if count == 0:
                parts.append(None)
            elif plan.mode == PaddingMode.CONSTANT:
                shape, chunked = list(y.shape), list(y.chunks)
                shape[d], chunked[d] = count, _pieces(count, y.chunks[d])
                parts.append(da.full(tuple(shape), plan.value, dtype=x.dtype,
                                     chunks=tuple(chunked)))
            else:
                # the sources of output coordinates [first, first + count) (index_map counts
                # output coordinates from the pad's start)
                idx, _ = index_map(int(plan.mode), n, a, first + count)
                parts.append(da.take(y, idx[first:], axis=d))
        y = da.concatenate([p for p in (parts[0], y, parts[1]) if p is not None], axis=d)
    return y.rechunk(out_chunks)


def _pool_chunks(x, g):
    """Output chunks that follow the input's: along each spatial dimension, an output
    belongs to the input chunk its window starts in (the first chunk also takes the windows
    that start in the padding); N and C as the input."""
    out = [x.chunks[0], x.chunks[1]]
    for i in range(g.k):
        size, s, a = g.output_sizes[2 + i], g.strides[i], g.start[i]
        starts = np.cumsum((0,) + x.chunks[2 + i])[1:-1]
        cuts = [0] + [min(size, max(0, -(-(int(b) + a) // s))) for b in starts] + [size]
        out.append(tuple(hi - lo for lo, hi in zip(cuts, cuts[1:]) if hi > lo))
    return tuple(out)


def pooling(x, call, kernels, chunks, names: Names):
    """The lazy pooling of Dask array ``x`` by ``call.plan`` (average, max with or without
    indices, Lp): each output block reads the input its windows cover and runs the in-memory
    kernel on that local problem (the same windows, the same real elements and divisors, so
    the same sums in the same order); flat indices made global. Blocks whose windows cover no
    real element along some dimension are that result's fill (computed in memory)."""
    import dask
    import dask.array as da

    from . import pooling as _pool
    from .window import Window, effective

    plan = call.plan
    g = plan.geometry
    k = g.k
    pair = plan.kind == "max" and plan.indices_dtype is not None
    out_dtype = np.dtype(call.outputs[0][2])
    idx_dtype = np.dtype(call.outputs[1][2]) if pair else None
    out_chunks = output_chunks(chunks, g.output_sizes, out_dtype, names, _pool_chunks(x, g))
    eff = [effective(g.window[i], g.dilations[i]) for i in range(k)]
    fills = _fills(plan, kernels, x.dtype, out_dtype, idx_dtype)
    full = tuple(int(n) for n in x.shape)
    bounds = [np.cumsum((0,) + c) for c in out_chunks]

    def block(index):
        o = [(int(bounds[d][j]), int(bounds[d][j + 1])) for d, j in enumerate(index)]
        shape = tuple(b - a for a, b in o)
        region, start, end = [slice(*o[0]), slice(*o[1])], [], []
        for i in range(k):
            (o0, o1), n = o[2 + i], full[2 + i]
            lo = o0 * g.strides[i] - g.start[i]
            hi = (o1 - 1) * g.strides[i] - g.start[i] + eff[i]
            rlo, rhi = max(lo, 0), min(hi, n)
            if rlo >= rhi:          # no window of the block reads a real element here
                return [da.full(shape, f, dtype=f.dtype) for f in fills]
            region.append(slice(rlo, rhi))
            start.append(rlo - lo)
            end.append(max(0, min(hi, n + g.end[i]) - rhi))
        local = x[tuple(region)].rechunk(-1)
        lg = Window(local.shape, g.window, g.strides, tuple(start), tuple(end), g.dilations,
                    shape)
        lplan = dataclasses.replace(plan, geometry=lg)
        origin = [o[0][0], o[1][0]] + [r.start for r in region[2:]]

        def run(xb):
            ys = [np.empty(shape, out_dtype)]
            if pair:
                ys.append(np.empty(shape, idx_dtype))
            with on_this_thread():      # (the scheduler's threads are the parallelism)
                _pool.run_pooling(lplan, kernels, np.ascontiguousarray(xb), ys)
            if pair:
                ys[1] = _global_indices(ys[1], xb.shape, origin, full, plan.empty_index)
            return tuple(ys)
        task = dask.delayed(run, nout=2 if pair else 1, pure=False)(local)
        if not pair:
            return [da.from_delayed(task[0], shape, dtype=out_dtype)]
        return [da.from_delayed(task[0], shape, dtype=out_dtype),
                da.from_delayed(task[1], shape, dtype=idx_dtype)]

    blocks = np.empty(tuple(len(c) for c in out_chunks), dtype=object)
    for index in np.ndindex(*blocks.shape):
        blocks[index] = block(index)
    outs = []
    for j in range(2 if pair else 1):
        nested = np.empty(blocks.shape, dtype=object)
        for index in np.ndindex(*blocks.shape):
            nested[index] = blocks[index][j]
        outs.append(da.block(nested.tolist()))
    return (outs[0], outs[1]) if pair else outs[0]


def _global_indices(local, local_shape, origin, full, empty):
    """Flat indices over the local block ``local_shape`` at ``origin`` made flat indices over
    the whole input ``full`` (the empty index kept)."""
    flat = local.astype(np.uint64)
    none = local == np.asarray(empty, dtype=local.dtype)
    coords = np.unravel_index(np.where(none, 0, flat).astype(np.int64), local_shape)
    glob = np.ravel_multi_index(tuple(c + o for c, o in zip(coords, origin)), full)
    return np.where(none, local, glob.astype(local.dtype))


def _fills(plan, kernels, dtype, out_dtype, idx_dtype):
    """The outputs of a window that reads no real element (value, then index), as the
    kernel writes them: one such window run in memory."""
    from . import pooling as _pool
    from .window import Window

    g = plan.geometry
    k = g.k
    x = np.zeros((1, 1) + (1,) * k, dtype)
    lg = Window(x.shape, (1,) * k, (1,) * k, (1,) * k, (0,) * k, (1,) * k, (1, 1) + (1,) * k)
    ys = [np.empty((1, 1) + (1,) * k, out_dtype)]
    if idx_dtype is not None:
        ys.append(np.empty((1, 1) + (1,) * k, idx_dtype))
    with on_this_thread():
        _pool.run_pooling(dataclasses.replace(plan, geometry=lg), kernels, x, ys)
    return [y.reshape(()) for y in ys]
