"""Dask arrays through the functions and ``execute`` (SPEC 6): the call is validated at
once, exactly as in memory (on a stand-in of the array's shape and type that holds no
data), and returns a lazy Dask array whose computed result is the in-memory result bit for
bit, whatever the chunking. Every plan runs the in-memory kernel on local problems:

- padding: each output block gathers its elements from the input chunks their sources lie
  in (``padding``);
- average, max, Lp and quantized pooling: from the output side, each output block on the
  input its windows cover (``pooling``);
- the gradients: from the input side, each block of dx on the outputs whose windows touch it
  (``pooling_grad``);
- unpooling: each input block sorts its (position, index, value) triples into the output
  chunks they name, each output chunk applies its own in input order (``unpooling``);
- ROI pooling: per image and chunk of channels, the bounding box of the image's boxes
  (``roi_pooling``).

Dask is imported only here, only when a Dask array is passed (the ``dask`` extra).
"""

from __future__ import annotations

import dataclasses
import math
import operator
import uuid
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import Names
from .padding import source_map
from .dtypes import PaddingMode
from .threads import on_this_thread

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import NDArray

    from ._types import Chunks
    from ._call import Call
    from .window import Window


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a Dask array (without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask" and hasattr(x, "chunks")


def stand_in(x: Any, names: Names, field: str = "x") -> np.ndarray:
    """A NumPy array of ``x``'s shape and type holding no data (every element the same one),
    for the in-memory validation and planning."""
    if any(isinstance(n, float) and math.isnan(n) for n in x.shape):
        raise names.invalid(lambda n: f"{n(field)} has chunks of unknown size (shape {x.shape}); "
                                      f"call {field}.compute_chunk_sizes() first")
    try:
        one = np.zeros(1, x.dtype)
    except TypeError:
        one = np.zeros(1, object)
    return np.lib.stride_tricks.as_strided(one, tuple(int(n) for n in x.shape),
                                           (0,) * x.ndim, writeable=False)


def output_chunks(chunks: Chunks | None, out_shape: Any, dtype: Any, names: Names, default: Any
                  ) -> Any:
    """The output's chunking: ``chunks=`` (anything ``dask.array`` accepts), else
    ``default``; normalised against the output's shape."""
    from dask.array.core import normalize_chunks

    try:
        return normalize_chunks(default if chunks is None else chunks, tuple(out_shape),
                                dtype=np.dtype(dtype))
    except (ValueError, TypeError) as e:
        raise names.invalid(lambda n: f"{n('chunks')} = {chunks!r} cannot chunk an output of "
                                      f"shape {tuple(out_shape)}: {e}") from None


def _pieces(n: int, beside: tuple[int, ...]) -> tuple[int, ...]:
    """``n`` as pieces of the largest of the chunks ``beside`` (the last piece shorter)."""
    step = max(beside) if beside else 1
    return (step,) * (n // step) + ((n % step,) if n % step else ())


def padding(x: Any, plan: Any, chunks: Chunks | None, names: Names) -> Any:
    """The lazy padding of Dask array ``x`` by ``plan`` (a PadPlan), chunked by ``chunks``
    (None: the input's chunks, and the pads in pieces of its largest chunk along their
    dimension): one task per output block, which gathers its elements from the few input
    chunks their sources lie in (``source_map``, SPEC 3.9's closed form, per dimension)
    and fills the rest with the value (constant mode). Any mode and width: reflection,
    symmetry and wrap pads many periods wide included."""
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    default = tuple(_pieces(plan.start[d], cs) + tuple(cs) + _pieces(plan.end[d], cs)
                    for d, cs in enumerate(x.chunks))
    out_chunks = output_chunks(chunks, plan.out_sizes, x.dtype, names, default)
    maps: list[tuple[NDArray[Any], NDArray[Any] | None]] = [
        source_map(plan.mode, n, a, m)
            for n, a, m in zip(x.shape, plan.start, plan.out_sizes)]
    if plan.mode != PaddingMode.CONSTANT:
        maps = [(idx, None) for idx, _ in maps]
    starts = [np.cumsum((0,) + c) for c in x.chunks]
    value = np.asarray(plan.value, dtype=x.dtype)
    name = "dmlops-padding-" + tokenize(x, plan.mode, plan.start, plan.end, value.tobytes(),
                                        out_chunks)
    spans = _spans(out_chunks)
    # per dimension and output chunk (the same for every block beside it)
    each = [[_sources(maps[d], a, b, starts[d]) for a, b in spans[d]] for d in range(x.ndim)]
    dsk: dict[tuple[Any, ...], Any] = {}
    for index in np.ndindex(*(len(c) for c in out_chunks)):
        sources = [each[d][j] for d, j in enumerate(index)]
        shape = tuple(out_chunks[d][j] for d, j in enumerate(index))
        if any(s is None for s in sources):        # constant alone along some dimension
            dsk[(name,) + index] = (np.full, shape, value, value.dtype)
            continue
        keys = np.empty(tuple(len(s[0]) for s in sources), dtype=object)
        for at in np.ndindex(*keys.shape):
            keys[at] = (x.name,) + tuple(int(s[0][a]) for s, a in zip(sources, at))
        dsk[(name,) + index] = (_gather, keys.tolist(), tuple(s[1] for s in sources),
                                tuple(s[2] for s in sources), value)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, out_chunks, meta=np.empty((0,) * x.ndim, x.dtype))


def _sources(m: Any, o0: Any, o1: Any, starts: Any) -> Any:
    """Output coordinates [o0, o1) of a dimension with index map ``m`` (sources, and where
    they are real: None but in constant mode): the input chunks their sources lie in, each
    one's place in those chunks set side by side, and where they are real (None: all); None
    where no source is real."""
    idx, inside = m
    idx = idx[o0:o1]
    inside = None if inside is None else inside[o0:o1]
    real = idx if inside is None else idx[inside]
    if real.size == 0:
        return None
    owner = np.searchsorted(starts, idx, side="right") - 1
    used = np.unique(owner if inside is None else owner[inside])
    # the used chunks side by side: where each begins there
    begin = np.zeros(len(starts), np.int64)
    sizes = np.diff(starts)[used]
    begin[used] = np.cumsum(np.concatenate([[0], sizes[:-1]]))
    local = begin[owner] + idx - starts[owner]
    if inside is not None:
        local = np.where(inside, local, 0)
    return used, local, inside


def _gather(parts: Any, local: Any, inside: Any, value: Any) -> Any:
    """An output block of padding: its sources' chunks (nested lists, one level a
    dimension) set side by side, gathered by ``local`` per dimension; ``value`` where a
    dimension's ``inside`` is False."""
    y = np.block(parts)[np.ix_(*local)] if len(local) > 1 else np.block(parts)[local[0]]
    outside = None
    for d, real in enumerate(inside):
        if real is None or real.all():
            continue
        shape = [1] * y.ndim
        shape[d] = real.size
        out = ~real.reshape(shape)
        outside = out if outside is None else outside | out
    if outside is not None:
        y[np.broadcast_to(outside, y.shape)] = value
    return y


def padding_grad(dy: Any, plan: Any, chunks: Chunks | None, names: Names) -> Any:
    """The lazy backward of a padding (a PadGradPlan) of Dask array ``dy``, chunked by
    ``chunks`` (None: ``dy``'s chunks over the input's place in it): one task per block of
    the result, which gathers the outputs whose sources lie in the block, in ascending order
    from the few chunks of ``dy`` they lie in, and sums them in that order (``_fold``), as in
    memory."""
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    dtype = plan.dtype.dtype
    if 0 in plan.in_sizes:
        return da.zeros(plan.in_sizes, dtype=dtype)
    default = tuple(_cut(cs, n, lambda b, a=a: b - a)
                    for cs, n, a in zip(dy.chunks, plan.in_sizes, plan.start))
    out_chunks = output_chunks(chunks, plan.in_sizes, dtype, names, default)
    constant = plan.mode == PaddingMode.CONSTANT
    maps = [source_map(plan.mode, n, a, m)
            for n, a, m in zip(plan.in_sizes, plan.start, plan.out_sizes)]
    starts = [np.cumsum((0,) + c) for c in dy.chunks]
    name = "dmlops-padding-grad-" + tokenize(dy, plan, out_chunks)
    # per dimension and block: the dy chunks read, the places gathered there, and the
    # block's element each of them adds to
    each = []
    for d, (idx, inside) in enumerate(maps):
        per = []
        for a, b in _spans(out_chunks)[d]:
            sel = np.flatnonzero((idx >= a) & (idx < b) & (inside if constant else True))
            used, local, _ = _sources((sel, None), 0, sel.size, starts[d])
            per.append((used, local, idx[sel] - a))
        each.append(per)
    dsk: dict[tuple[Any, ...], Any] = {}
    for index in np.ndindex(*(len(c) for c in out_chunks)):
        parts = [each[d][j] for d, j in enumerate(index)]
        shape = tuple(out_chunks[d][j] for d, j in enumerate(index))
        keys = np.empty(tuple(len(p[0]) for p in parts), dtype=object)
        for at in np.ndindex(*keys.shape):
            keys[at] = (dy.name,) + tuple(int(p[0][i]) for p, i in zip(parts, at))
        dsk[(name,) + index] = (_fold, keys.tolist(), tuple(p[1] for p in parts),
                                tuple(p[2] for p in parts), shape, dtype)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[dy])
    return da.Array(graph, name, out_chunks, meta=np.empty((0,) * dy.ndim, dtype))


def _fold(parts: Any, local: Any, target: Any, shape: Any, dtype: Any) -> Any:
    """A block of padding's gradient: the gathered outputs (``parts`` side by side, taken at
    ``local`` per dimension), each added to its block element (``target`` per dimension) in
    row-major order, from +0.0, in float32 (float64 for float64), NaNs canonical."""
    g = np.block(parts)[np.ix_(*local)] if len(local) > 1 else np.block(parts)[local[0]]
    acc_t = np.float64 if dtype == np.float64 else np.float32
    flat = np.ravel_multi_index(np.meshgrid(*target, indexing="ij"), shape).ravel()
    acc = np.zeros(int(np.prod(shape)), acc_t)
    np.add.at(acc, flat, g.astype(acc_t).ravel())     # (one pair at a time, in order)
    acc[np.isnan(acc)] = np.nan
    return acc.reshape(shape).astype(dtype)


def _cut(chunks: Any, size: Any, where: Any) -> tuple[Any, ...]:
    """Chunks of a dimension of ``size`` elements cut at ``where(b)`` for each boundary ``b``
    between chunks ``chunks`` of another dimension (clipped to the dimension)."""
    cuts = sorted({0, size} | {min(size, max(0, where(int(b)))) for b in np.cumsum(chunks)[:-1]})
    return tuple(hi - lo for lo, hi in zip(cuts, cuts[1:]))


def _pool_chunks(x: Any, g: Window) -> Any:
    """Output chunks that follow the input's: along each spatial dimension the output is cut
    where the input is, divided by the stride (rounded up), so that regular input chunks
    give regular output chunks (zarr's); N and C as the input."""
    return x.chunks[:2] + tuple(
        _cut(x.chunks[2 + i], g.output_sizes[2 + i], lambda b, s=g.strides[i]: -(-b // s))
        for i in range(g.k))


def _reach(g: Window, eff: Any, i: Any, o0: Any, o1: Any, n: Any) -> Any:
    """Outputs [o0, o1) along spatial dimension ``i`` (input size ``n``): the real input
    rows their windows read, [lo, hi), and the local pads (start, end) that give a local
    problem on those rows the same windows (padding only where the whole problem has it);
    None where they read no real element."""
    lo = o0 * g.strides[i] - g.start[i]
    hi = (o1 - 1) * g.strides[i] - g.start[i] + eff[i]
    rlo, rhi = max(lo, 0), min(hi, n)
    if rlo >= rhi:
        return None
    return rlo, rhi, rlo - lo, max(0, min(hi, n + g.end[i]) - rhi)


class _Graph:
    """The tasks of one lazy result, keyed by hand: each output block a task that reads its
    inputs' chunks by their keys, beside the tasks it reads (parts of chunks, ...). Calling
    ``dask.delayed`` with Delayed arguments instead merges every argument's whole graph at
    each call: quadratic in the blocks (a pyramid level of a 4 GiB volume in 64^3 chunks took
    4.7 s to build, of a 64 GiB one about an hour)."""

    def __init__(self, what: str, *inputs: Any) -> None:
        self.name = f"dmlops-{what}-{uuid.uuid4().hex}"     # (a new result at each call)
        self.inputs = inputs
        self.dsk: dict[Any, Any] = {}

    def task(self, fn: Any, *args: Any) -> tuple[str, int]:
        """The key of a new task ``fn(*args)``: a key in ``args`` (in lists too) stands for
        its result."""
        key = (self.name + "-task", len(self.dsk))
        self.dsk[key] = (fn, *args)
        return key

    def _array(self, name: str, layer: dict[Any, Any], chunks: Any, dtype: Any) -> Any:
        import dask.array as da
        from dask.highlevelgraph import HighLevelGraph

        graph = HighLevelGraph.from_collections(name, layer, dependencies=self.inputs)
        return da.Array(graph, name, chunks, dtype=dtype)

    def arrays(self, shape: Any, block: Any, count: int, chunks: Any, dtypes: Any) -> list[Any]:
        """The ``count`` arrays of a grid of ``shape`` blocks (``chunks``): ``block(index)``
        gives the key of each one's block at ``index``."""
        blocks = {index: block(index) for index in np.ndindex(*shape)}
        outs = []
        for j in range(count):
            name = f"{self.name}-{j}"
            layer = dict(self.dsk)
            layer.update(((name, *index), keys[j]) for index, keys in blocks.items())
            outs.append(self._array(name, layer, chunks, dtypes[j]))
        return outs

    def array(self, key: Any, shape: Any, dtype: Any) -> Any:
        """The result of task ``key`` as an array of one block."""
        name = f"{self.name}-{len(self.dsk)}"
        layer = dict(self.dsk)
        layer[(name,) + (0,) * len(shape)] = key
        return self._array(name, layer, tuple((n,) for n in shape), dtype)


def _spans(chunks: Any) -> list[list[tuple[int, int]]]:
    """Each dimension's chunk boundaries, as (start, stop) per chunk."""
    return [list(zip(np.cumsum((0,) + c)[:-1].tolist(), np.cumsum(c).tolist()))
            for c in chunks]


class _Reader:
    """Regions of Dask array ``x`` as task arguments of ``graph``: the chunks a region meets,
    nested a level per dimension, each whole (the chunk's key) or as the part of it the region
    takes (a task of its own, copied: shared by every region that takes that part). Assembled
    inside the task (``_assemble``). Slicing the Dask array instead would let Dask's fusion
    compute a chunk once per slice of it (a generated or zarr-read chunk read by the halos of
    its neighbours four times over); and a chunk is released once its own block and its parts
    are made, so memory stays bounded by a few chunks a thread."""

    def __init__(self, x: Any, graph: _Graph) -> None:
        self.name, self.graph = x.name, graph
        self.starts = [np.cumsum((0,) + c) for c in x.chunks]
        self.parts: dict[Any, Any] = {}

    def __call__(self, region: Any) -> tuple[list[Any]]:
        ids, cuts = [], []
        for sl, st in zip(region, self.starts):
            first = int(np.searchsorted(st, sl.start, side="right")) - 1
            last = int(np.searchsorted(st, sl.stop - 1, side="right")) - 1
            ids.append(list(range(first, last + 1)))
            cuts.append([(max(sl.start, st[c]) - st[c], min(sl.stop, st[c + 1]) - st[c])
                         for c in range(first, last + 1)])
        grid = np.empty(tuple(len(i) for i in ids), dtype=object)
        for at in np.ndindex(*grid.shape):
            index = tuple(i[a] for i, a in zip(ids, at))
            cut = tuple(c[a] for c, a in zip(cuts, at))
            whole = all(a == 0 and b == int(st[j + 1] - st[j])
                        for (a, b), st, j in zip(cut, self.starts, index))
            grid[at] = (self.name, *index) if whole else self._part(index, cut)
        return (grid.tolist(),)

    def _part(self, index: Any, cut: Any) -> Any:
        key = (index, cut)
        if key not in self.parts:
            self.parts[key] = self.graph.task(_copied, (self.name, *index),
                                              tuple(slice(a, b) for a, b in cut))
        return self.parts[key]


def _copied(chunk: Any, cut: Any) -> Any:
    return np.array(chunk[cut])


def _assemble(parts: Any) -> np.ndarray:
    """A region from its chunks and parts of chunks (``_Reader``): the one piece itself
    where there is one (the kernels read any strides), else the pieces side by side."""
    one = parts
    while isinstance(one, list) and len(one) == 1:
        one = one[0]
    return one if not isinstance(one, list) else np.block(parts)


def _channel_part(a: Any, c0: Any, c1: Any) -> Any:
    """Channels [c0, c1) of a per-channel array (1, C, 1, ...); a per-tensor one as it is."""
    return a[:, c0:c1] if a.ndim > 1 and a.shape[1] > 1 else a


def _channels(extra: Any, c0: Any, c1: Any) -> Any:
    """Quantization parameters for channels [c0, c1)."""
    if extra is None:
        return None
    return {k: _channel_part(a, c0, c1) for k, a in extra.items()}


def pooling(x: Any, call: Call, kernels: ModuleType, chunks: Chunks | None, names: Names) -> Any:
    """The lazy pooling of Dask array ``x`` by ``call.plan`` (average, max with or without
    indices, Lp, quantized average): each output block reads the input its windows cover
    and runs the in-memory kernel on that local problem (the same windows, the same real
    elements and divisors, so the same sums in the same order); flat indices made global,
    per-channel quantization parameters sliced to the block's channels. Blocks whose windows
    cover no real element along some dimension are that result's fill (computed in
    memory)."""

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
    fills = _fills(plan, kernels, x.dtype, out_dtype, idx_dtype, call.extra)
    full = tuple(int(n) for n in x.shape)
    spans = _spans(out_chunks)
    graph = _Graph("pooling", x)
    read = _Reader(x, graph)

    def block(index: Any) -> Any:
        o: list[tuple[int, int]] = [spans[d][j] for d, j in enumerate(index)]
        shape = tuple(b - a for a, b in o)
        region, start, end = [slice(*o[0]), slice(*o[1])], [], []
        for i in range(k):
            reach = _reach(g, eff, i, *o[2 + i], full[2 + i])
            if reach is None:       # no window of the block reads a real element here
                return [graph.task(np.broadcast_to, _channel_part(f, *o[1]), shape)
                        for f in fills]
            region.append(slice(reach[0], reach[1]))
            start.append(reach[2])
            end.append(reach[3])
        sizes = tuple(r.stop - r.start for r in region)
        lg = Window(sizes, g.window, g.strides, tuple(start), tuple(end), g.dilations, shape)
        lplan = dataclasses.replace(plan, geometry=lg)
        extra = _channels(call.extra, *o[1])
        origin = [o[0][0], o[1][0]] + [r.start for r in region[2:]]

        def run(parts: Any) -> Any:
            xb = _assemble(parts)
            ys = [np.empty(shape, out_dtype)]
            if pair:
                ys.append(np.empty(shape, idx_dtype))
            with on_this_thread():      # (the scheduler's threads are the parallelism)
                lplan.run(kernels, xb, ys, extra)
            if pair:
                ys[1] = _global_indices(ys[1], xb.shape, origin, full, plan.empty_index)
            return tuple(ys)
        task = graph.task(run, *read(tuple(region)))
        return [graph.task(operator.getitem, task, j) for j in range(len(dtypes))]

    dtypes = (out_dtype, idx_dtype) if pair else (out_dtype,)
    outs = graph.arrays(tuple(len(c) for c in out_chunks), block, len(dtypes), out_chunks,
                        dtypes)
    return (outs[0], outs[1]) if pair else outs[0]


def _grad_chunks(dy: Any, g: Window) -> Any:
    """dx's chunks where only dy is given: N and C as dy's, each spatial dimension cut where
    dy's is, times the stride (the inverse of ``_pool_chunks``)."""
    return dy.chunks[:2] + tuple(
        _cut(dy.chunks[2 + i], g.input_sizes[2 + i], lambda b, s=g.strides[i]: b * s)
        for i in range(g.k))


def pooling_grad(x: Any, dy: Any, call: Call, kernels: ModuleType, chunks: Chunks | None,
                 names: Names) -> Any:
    """The lazy gradient (max: ``x`` and ``dy``; average: ``dy`` alone, ``x`` None),
    planned from the input side: each block of dx gathers the forward outputs whose windows
    touch it (their dy and, for max, the input those windows read) and runs the in-memory
    kernel on that local problem, so every element gets the same contributions in the same
    ascending output order; the block is cut from the local result. No atomics, no
    scatter."""

    from . import pooling as _pool
    from .window import Window, effective

    plan = call.plan
    g = plan.geometry
    k = g.k
    dtype = np.dtype(call.outputs[0][2])
    default = x.chunks if x is not None else _grad_chunks(dy, g)
    out_chunks = output_chunks(chunks, g.input_sizes, dtype, names, default)
    eff = [effective(g.window[i], g.dilations[i]) for i in range(k)]
    spans = _spans(out_chunks)
    graph = _Graph("pooling-grad", *([dy] if x is None else [dy, x]))
    read_dy = _Reader(dy, graph)
    read_x = _Reader(x, graph) if x is not None else None

    def block(index: Any) -> Any:
        o: list[tuple[int, int]] = [spans[d][j] for d, j in enumerate(index)]
        shape = tuple(b - a for a, b in o)
        outs, region, start, end, cut = [slice(*o[0]), slice(*o[1])], [], [], [], []
        for i in range(k):
            (b0, b1), s, a = o[2 + i], g.strides[i], g.start[i]
            f = g.output_sizes[2 + i]
            # the outputs whose window [o * s - a, o * s - a + eff) meets [b0, b1)
            o0 = max(0, (b0 + a - eff[i]) // s + 1)
            o1 = min(f, -(-(b1 + a) // s))
            reach = _reach(g, eff, i, o0, o1, g.input_sizes[2 + i]) if o0 < o1 else None
            if reach is None or reach[1] <= b0 or reach[0] >= b1:
                return [graph.task(np.zeros, shape, dtype)]
            outs.append(slice(o0, o1))
            region.append(slice(reach[0], reach[1]))
            start.append(reach[2])
            end.append(reach[3])
            lo, hi = max(b0, reach[0]), min(b1, reach[1])
            cut.append((slice(lo - b0, hi - b0), slice(lo - reach[0], hi - reach[0])))
        sizes = shape[:2] + tuple(r.stop - r.start for r in region)
        lg = Window(sizes, g.window, g.strides, tuple(start), tuple(end), g.dilations,
                    shape[:2] + tuple(r.stop - r.start for r in outs[2:]))
        lplan = dataclasses.replace(plan, geometry=lg)

        def run(dy_parts: Any, x_parts: Any = None) -> Any:
            dyb = _assemble(dy_parts)
            dx = np.empty(sizes, dtype)
            with on_this_thread():
                if x_parts is None:
                    lplan.run(kernels, dyb, [dx])
                else:
                    lplan.run(kernels, _assemble(x_parts), [dx], {"dy": dyb})
            y = np.zeros(shape, dtype)
            y[(slice(None),) * 2 + tuple(c[0] for c in cut)] = \
                dx[(slice(None),) * 2 + tuple(c[1] for c in cut)]
            return y
        args: tuple[list[Any], ...] = read_dy(tuple(outs))
        if read_x is not None:      # (an x was given)
            args += read_x(tuple(outs[:2] + region))
        return [graph.task(run, *args)]

    return graph.arrays(tuple(len(c) for c in out_chunks), block, 1, out_chunks, [dtype])[0]


def _global_indices(local: Any, local_shape: Any, origin: Any, full: Any, empty: Any) -> Any:
    """Flat indices over the local block ``local_shape`` at ``origin`` made flat indices over
    the whole input ``full`` (the empty index kept)."""
    flat = local.astype(np.uint64)
    none = local == np.asarray(empty, dtype=local.dtype)
    coords = np.unravel_index(np.where(none, 0, flat).astype(np.int64), local_shape)
    glob = np.ravel_multi_index(tuple(c + o for c, o in zip(coords, origin)), full)
    return np.where(none, local, glob.astype(local.dtype))


def _fills(plan: Any, kernels: ModuleType, dtype: Any, out_dtype: Any, idx_dtype: Any,
           extra: Any = None) -> Any:
    """The outputs of a window that reads no real element (value, then index), as the
    kernel writes them: one such window run in memory, per channel where a quantization
    parameter is (the output zero point is the fill), shaped (1, C or 1, 1, ...)."""
    from . import pooling as _pool
    from .window import Window

    g = plan.geometry
    k = g.k
    c = max([a.shape[1] for a in (extra or {}).values() if a.ndim > 1] + [1])
    x = np.zeros((1, c) + (1,) * k, dtype)
    lg = Window(x.shape, (1,) * k, (1,) * k, (1,) * k, (0,) * k, (1,) * k, x.shape)
    ys = [np.empty(x.shape, out_dtype)]
    if idx_dtype is not None:
        ys.append(np.empty(x.shape, idx_dtype))
    with on_this_thread():
        dataclasses.replace(plan, geometry=lg).run(kernels, x, ys, extra)
    return ys


def unpooling(x: Any, indices: Any, call: Call, kernels: ModuleType, chunks: Chunks | None,
              names: Names) -> Any:
    """The lazy max unpooling of ``x`` at ``indices`` (Dask arrays of one shape): each input
    block checks its indices and sorts its (position, index, value) triples into the output
    chunks they name; each output chunk applies the triples it is sent in flat input order
    (the in-memory kernel on them, so the later of two elements naming one place wins, as in
    memory). Output chunks: N and C as the input's, the others cut where the input's are,
    scaled to the output's size. An index outside the output is the in-memory error, raised
    when the block holding it is computed."""

    from . import pooling as _pool

    plan = call.plan
    dtype = np.dtype(call.outputs[0][2])
    full, out_sizes = tuple(plan.input_sizes), tuple(plan.output_sizes)
    default = x.chunks[:2] + tuple(
        _cut(x.chunks[d], out_sizes[d], lambda b, n=full[d], m=out_sizes[d]: b * m // n)
        for d in range(2, x.ndim))
    out_chunks = output_chunks(chunks, out_sizes, dtype, names, default)
    ix = indices.rechunk(x.chunks)
    graph = _Graph("unpooling", x, ix)
    bounds = [np.cumsum((0,) + c) for c in out_chunks]
    grid = tuple(len(c) for c in out_chunks)
    in_spans = _spans(x.chunks)
    empty = plan.empty_index

    def sort(xb: Any, ib: Any, origin: Any) -> Any:
        _pool.check_unpool_indices(plan, ib, names, origin)
        return _sorted_triples(xb, ib, origin, full, out_sizes, bounds, grid, empty)

    parts = {}
    for index in np.ndindex(*x.numblocks):
        origin = [in_spans[d][j][0] for d, j in enumerate(index)]
        parts[index] = graph.task(sort, (x.name, *index), (ix.name, *index), origin)
    spans = _spans(out_chunks)

    def block(index: Any) -> Any:
        shape = tuple(b - a for a, b in (spans[d][j] for d, j in enumerate(index)))
        flat = int(np.ravel_multi_index(index, grid))
        pieces = [graph.task(_piece, t, flat) for t in parts.values()]

        def run(pieces: Any) -> Any:
            y = np.zeros(shape, dtype)
            got = [p for p in pieces if p is not None]
            if got:
                pos = np.concatenate([p[0] for p in got])
                order = np.argsort(pos, kind="stable")
                at = np.concatenate([p[1] for p in got])[order]
                v = np.concatenate([p[2] for p in got])[order]
                with on_this_thread():     # (no triple holds a "no element" index)
                    kernels.max_unpooling(v.reshape(1, 1, -1), at.reshape(1, 1, -1),
                                          y.reshape(1, 1, -1), 2**64 - 1)
            return y
        return [graph.task(run, pieces)]

    return graph.arrays(grid, block, 1, out_chunks, [dtype])[0]


def _piece(triples: Any, flat: Any) -> Any:
    return triples.get(flat)


def _sorted_triples(xb: Any, ib: Any, origin: Any, full: Any, out_sizes: Any, bounds: Any,
                    grid: Any, empty: Any) -> Any:
    """A block's (input position, place in its output chunk, value) triples by output chunk
    (flat chunk number), "no element" indices left out."""
    flat = ib.reshape(-1)
    keep = np.ones(flat.shape, bool) if empty is None else flat != np.asarray(empty, flat.dtype)
    at = flat[keep].astype(np.uint64)
    values = np.ascontiguousarray(xb).reshape(-1)[keep]
    coords = np.indices(ib.shape).reshape(ib.ndim, -1)[:, keep]
    pos = np.ravel_multi_index(tuple(c + o for c, o in zip(coords, origin)), full)
    out = np.unravel_index(at.astype(np.int64), out_sizes)
    which = [np.searchsorted(b, c, side="right") - 1 for b, c in zip(bounds, out)]
    chunk = np.ravel_multi_index(tuple(which), grid)
    shapes = [np.diff(b)[w] for b, w in zip(bounds, which)]
    rel = [c - b[w] for c, b, w in zip(out, bounds, which)]
    local = np.zeros(at.shape, np.uint64)
    for r, n in zip(rel, shapes):
        local = local * n.astype(np.uint64) + r.astype(np.uint64)
    order = np.argsort(chunk, kind="stable")
    chunk, pos, local, values = chunk[order], pos[order], local[order], values[order]
    cuts = np.flatnonzero(np.diff(chunk)) + 1
    return {int(c[0]): (p, l, v) for c, p, l, v in zip(np.split(chunk, cuts),
                                                      np.split(pos, cuts),
                                                      np.split(local, cuts),
                                                      np.split(values, cuts)) if c.size}


def roi_pooling(x: Any, regions: Any, call: Call, kernels: ModuleType, chunks: Chunks | None,
                names: Names) -> Any:
    """The lazy ROI pooling of Dask array ``x`` by ``regions`` (the boxes already scaled,
    rounded and checked at the call: ``pooling.roi_regions``): per image and chunk of
    channels, one task reads the bounding box of that image's boxes (clipped to the input)
    and runs the in-memory kernel on the boxes moved into it (a bin clipped to the box is
    the bin clipped to the input: the box holds every real element of every bin). Outputs in
    the boxes' order; ``chunks`` chunks them, by default all boxes in one chunk and C as the
    input's."""
    import dask.array as da

    dtype = np.dtype(call.outputs[0][2])
    ph, pw = call.plan.pooled_size
    h, w = int(x.shape[2]), int(x.shape[3])
    out_chunks = output_chunks(chunks, call.outputs[0][1], dtype, names,
                               ((len(regions),), x.chunks[1], (ph,), (pw,)))
    rows, groups = [], []
    graph = _Graph("roi-pooling", x)
    read = _Reader(x, graph)
    for b in np.unique(regions[:, 0]):
        which = np.flatnonzero(regions[:, 0] == b)
        r = regions[which]
        # each box's real rows and columns: [y1, y1 + RH) and [x1, x1 + RW), clipped
        y0, x0 = np.maximum(r[:, 2], 0), np.maximum(r[:, 1], 0)
        y1 = np.minimum(r[:, 2] + np.maximum(r[:, 4] - r[:, 2] + 1, 1), h)
        x1 = np.minimum(r[:, 1] + np.maximum(r[:, 3] - r[:, 1] + 1, 1), w)
        real = (y1 > y0) & (x1 > x0)
        box = (int(y0[real].min()), int(y1[real].max()), int(x0[real].min()),
               int(x1[real].max())) if real.any() else None
        parts = []
        for c0, c1 in _spans((x.chunks[1],))[0]:
            shape = (len(which), c1 - c0, ph, pw)
            if box is None:         # every bin of every box is empty: 0
                parts.append(da.zeros(shape, dtype=dtype))
                continue
            local = r.copy()
            local[:, 0] = 0
            local[:, [1, 3]] -= box[2]
            local[:, [2, 4]] -= box[0]

            def run(x_parts: Any, local: Any = local, shape: Any = shape) -> Any:
                y = np.empty(shape, dtype)
                with on_this_thread():
                    kernels.roi_pooling(_assemble(x_parts), local, y)
                return y
            box_region = (slice(int(b), int(b) + 1), slice(c0, c1), slice(box[0], box[1]),
                          slice(box[2], box[3]))
            parts.append(graph.array(graph.task(run, *read(box_region)), shape, dtype))
        groups.append(da.concatenate(parts, axis=1))
        rows.append(which)
    order = np.argsort(np.concatenate(rows), kind="stable")
    return da.concatenate(groups, axis=0)[order].rechunk(out_chunks)
