"""The cpu backend's padding kernel, called directly, against the reference kernel (SPEC 3.9, 5).

SPEC 5: "Every backend gives bitwise the same result as reference for ... padding" and
"Results do not depend on the number of threads". Property tests over ranks 1..5, all 11 data
types (random bits, so NaNs with payloads too), all modes, pads several periods wider than
the input, inputs of any layout (transposed, reversed, stepped, broadcast) and outputs that are
strided views into a bigger buffer whose other elements must stay untouched.
"""

import importlib

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

numba = pytest.importorskip("numba")

import oracles as O  # noqa: E402

# the modules, not the ``padding`` functions that the backend packages export by that name
cpu = importlib.import_module("dmlops.backends.cpu.padding")
ref = importlib.import_module("dmlops.backends.reference.padding")

CONSTANT, EDGE, REFLECTION, SYMMETRIC, WRAP = range(5)
BUDGET = 4000           # output elements per example


def random_bits(seed, shape, dtype):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).view(dtype) \
        .reshape(shape)


@st.composite
def pad_cases(draw):
    mode = draw(st.sampled_from(range(5)))
    rank = draw(st.integers(1, 5))
    shape = [draw(st.integers(1, 4 if rank <= 3 else 3)) for _ in range(rank)]
    start, end = [], []
    for n in shape:
        if mode == REFLECTION and n == 1:
            start.append(0)         # SPEC 3.9: validation rejects this pad before any kernel
            end.append(0)
            continue
        period = 2 * (n - 1) if mode == REFLECTION else 2 * n
        # none, within the dimension, or several periods wide
        pad = st.one_of(st.just(0), st.integers(0, n), st.integers(0, 3 * period + 2))
        start.append(draw(pad))
        end.append(draw(pad))
    while np.prod([n + a + b for n, a, b in zip(shape, start, end)]) > BUDGET:
        d = int(np.argmax([a + b for a, b in zip(start, end)]))
        start[d] //= 2
        end[d] //= 2
    return mode, tuple(shape), tuple(start), tuple(end)


@st.composite
def layouts(draw, rank, broadcast):
    """How a logical array sits in memory: axis order, steps, reversals, zero strides."""
    return dict(perm=draw(st.permutations(range(rank))),
                steps=[draw(st.sampled_from([1, 1, 2, 3])) for _ in range(rank)],
                flips=[draw(st.booleans()) for _ in range(rank)],
                skip=[draw(st.integers(0, 1)) for _ in range(rank)],
                zero=[broadcast and draw(st.integers(0, 3)) == 0 for _ in range(rank)])


def memory_shape(shape, lay):
    logical = [1 if z else k + n * s for n, s, k, z in
               zip(shape, lay["steps"], lay["skip"], lay["zero"])]
    return [logical[d] for d in lay["perm"]]


def view(mem, shape, lay):
    """The view of ``mem`` (allocated with :func:`memory_shape`) of logical ``shape``."""
    a = mem.transpose(np.argsort(lay["perm"]))
    index = []
    for n, s, k, f, z in zip(shape, lay["steps"], lay["skip"], lay["flips"], lay["zero"]):
        sl = slice(None) if z else slice(k, k + n * s, s)
        index.append(sl)
    a = a[tuple(index)]
    a = a[tuple(slice(None, None, -1) if f else slice(None) for f in lay["flips"])]
    return np.broadcast_to(a, shape) if any(lay["zero"]) else a


@settings(max_examples=200)
@given(case=pad_cases(), dtype=st.sampled_from(O.ALL_DTYPES), seed=st.integers(0, 2**32 - 1),
       chunk=st.sampled_from([cpu.CHUNK, 1, 2, 3, 7]),
       short=st.sampled_from([cpu.SHORT, 0, 10**9]), data=st.data())
def test_kernel_matches_reference_bitwise(case, dtype, seed, chunk, short, data):
    mode, shape, start, end = case
    rank = len(shape)
    out_shape = tuple(n + a + b for n, a, b in zip(shape, start, end))
    if any(max(a, b) > 2 * n for a, b, n in zip(start, end, shape)):
        event("pad wider than a period")
    xl = data.draw(layouts(rank, broadcast=True), label="x layout")
    yl = data.draw(layouts(rank, broadcast=False), label="y layout")
    xmem = random_bits(seed, memory_shape(shape, xl), dtype)
    x = view(xmem, shape, xl)
    x_before = xmem.copy()
    big = random_bits(seed + 1, memory_shape(out_shape, yl), dtype)
    got_mem, want_mem = big.copy(), big.copy()
    value = random_bits(seed + 2, (), dtype)
    ref.padding(x, view(want_mem, out_shape, yl), start, mode, value)
    saved = cpu.CHUNK, cpu.SHORT
    # small chunks split rows into several tasks; SHORT 0: no GATHER runs, huge: all GATHER
    cpu.CHUNK, cpu.SHORT = chunk, short
    try:
        cpu.padding(x, view(got_mem, out_shape, yl), start, mode, value)
    finally:
        cpu.CHUNK, cpu.SHORT = saved
    # the whole buffer: y's elements as the reference wrote them, the others untouched
    assert np.array_equal(O.bits(got_mem), O.bits(want_mem)), (
        np.argwhere(O.bits(got_mem) != O.bits(want_mem))[:5])
    assert np.array_equal(O.bits(xmem), O.bits(x_before))


@settings(max_examples=200)
@given(mode=st.sampled_from(range(5)), n=st.integers(1, 9), start=st.integers(0, 60),
       end=st.integers(0, 60), short=st.sampled_from([cpu.SHORT, 0, 3, 10**9]))
def test_runs_reproduce_the_reference_index_map(mode, n, start, end, short):
    # the innermost dimension travels as runs: VALUE, REPEAT, COPY, MIRROR or GATHER
    if mode == REFLECTION and n == 1:
        start = end = 0
    out = n + start + end
    first, kind, source, lookup = cpu._runs(mode, n, start, out, short)
    assert first[0] == 0 and first[-1] == out and (np.diff(first) > 0).all()
    o = np.arange(out)
    k = np.searchsorted(first, o, side="right") - 1
    offset = o - first[k]
    got = np.select([kind[k] == cpu.VALUE, kind[k] == cpu.REPEAT, kind[k] == cpu.COPY,
                     kind[k] == cpu.MIRROR],
                    [-1, source[k], source[k] + offset, source[k] - offset],
                    lookup[o] if lookup.size else -2)
    index, inside = ref.index_map(mode, n, start, out)
    assert got.tolist() == np.where(inside | (mode != CONSTANT), index, -1).tolist()
    if short > out:                      # all but PaddingValue comes from the map
        assert set(kind.tolist()) <= {cpu.VALUE, cpu.GATHER}


SPEC_X = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32)[None, None]
SPEC_ROWS = {  # SPEC 3.9's examples: StartPadding {0,0,1,2}, EndPadding {0,0,3,4}
    EDGE: [[1, 1, 1, 2, 3, 4, 4, 4, 4, 4]] * 2 + [[5, 5, 5, 6, 7, 8, 8, 8, 8, 8]]
    + [[1, 1, 1, 2, 3, 4, 4, 4, 4, 4]] + [[5, 5, 5, 6, 7, 8, 8, 8, 8, 8]] * 4,
    REFLECTION: [[7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]] * 4,
    SYMMETRIC: [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1]] * 2 + [[6, 5, 5, 6, 7, 8, 8, 7, 6, 5]]
    + [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1]] + [[6, 5, 5, 6, 7, 8, 8, 7, 6, 5]] * 2
    + [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]],
    CONSTANT: [[9] * 10] + [[9, 9, r, r + 1, r + 2, r + 3, 9, 9, 9, 9] for r in (1, 5, 1, 5)]
    + [[9] * 10] * 3,
}


@pytest.mark.parametrize("mode", sorted(SPEC_ROWS))
def test_spec_examples(mode):
    y = np.full((1, 1, 8, 10), -1, np.float32)
    cpu.padding(SPEC_X, y, (0, 0, 1, 2), mode, np.asarray(9, np.float32))
    assert y[0, 0].tolist() == SPEC_ROWS[mode]


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 Numba threads")
@pytest.mark.parametrize("mode", range(5))
@pytest.mark.parametrize("shape, start, end, chunk", [
    ((3, 5, 37, 41), (0, 2, 30, 90), (1, 0, 45, 3), cpu.CHUNK),
    ((100_003,), (70_001,), (5,), cpu.CHUNK),       # one row, split into several tasks
    ((2, 9, 50), (1, 3, 77), (2, 40, 1), 5),
])
def test_one_and_two_threads_agree(mode, shape, start, end, chunk):
    # SPEC 5: "Results do not depend on the number of threads".
    x = random_bits(mode, shape, np.float32)[..., ::-1]
    out = tuple(n + a + b for n, a, b in zip(shape, start, end))
    value = np.asarray(np.nan, np.float32)
    want = np.empty(out, np.float32)
    ref.padding(x, want, start, mode, value)
    from dmlops.backends.cpu import _threads
    threads, saved, work = numba.get_num_threads(), cpu.CHUNK, _threads.MIN_WORK
    results = []
    try:
        cpu.CHUNK, _threads.MIN_WORK = chunk, 1         # every task worth a thread
        for n in (1, 2):
            numba.set_num_threads(n)
            y = np.empty(out, np.float32)
            cpu.padding(x, y, start, mode, value)
            results.append(y)
    finally:
        numba.set_num_threads(threads)
        cpu.CHUNK, _threads.MIN_WORK = saved, work
    for y in results:
        assert np.array_equal(O.bits(y), O.bits(want))


@pytest.mark.parametrize("shares", [2, 3, 7, 10**9])
@pytest.mark.parametrize("mode", [EDGE, REFLECTION, SYMMETRIC, WRAP])
@pytest.mark.parametrize("chunk", [cpu.CHUNK, 4])
def test_each_share_of_the_tasks_stands_alone(monkeypatch, shares, mode, chunk):
    # A row may be copied from an earlier output row with the same input row, but only from
    # the same share of the tasks: here the shares run last one first, over an output full of
    # random bits, so a copy from another share's row would copy those bits.
    x = random_bits(1, (2, 3, 5, 9), np.float32)
    start, end = (0, 1, 12, 3), (1, 0, 9, 20)
    out = tuple(n + a + b for n, a, b in zip(x.shape, start, end))
    want = np.empty(out, np.float32)
    ref.padding(x, want, start, mode, np.asarray(0, np.float32))

    def backwards(task, n, *args, item_size):
        cuts = sorted({n * i // min(shares, n) for i in range(min(shares, n) + 1)})
        for lo, hi in reversed(list(zip(cuts, cuts[1:]))):
            task(lo, hi, *args)

    monkeypatch.setattr(cpu, "parallel", backwards)
    monkeypatch.setattr(cpu, "CHUNK", chunk)
    y = random_bits(2, out, np.float32)
    cpu.padding(x, y, start, mode, np.asarray(0, np.float32))
    assert np.array_equal(O.bits(y), O.bits(want))


def test_empty():
    y = np.empty((0, 3), np.int8)
    cpu.padding(np.empty((0, 1), np.int8), y, (0, 1), CONSTANT, np.asarray(5, np.int8))
    # only CONSTANT can pad an empty dimension: every output is the value
    y = np.zeros((2, 3), np.int8)
    cpu.padding(np.empty((0, 3), np.int8), y, (1, 0), CONSTANT, np.asarray(5, np.int8))
    assert (y == 5).all()
