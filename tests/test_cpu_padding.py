"""The cpu backend's padding kernel, called directly, against the reference kernel (SPEC 3.9, 5).

SPEC 5: "Every backend gives bitwise the same result as reference for ... padding" and
"Results do not depend on the number of threads". Property tests over ranks 1..5, all 11 data
types (random bits, so NaNs with payloads too), all modes, pads several periods wider than
the input, inputs of any layout (transposed, reversed, stepped, broadcast) and outputs that are
strided views into a bigger buffer whose other elements must stay untouched; at every CPU
level this machine runs, with the fast path and the plain kernel.
"""

import functools
import importlib

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import dmlops as dml
import oracles as O
from levels import examples, level_paths, levels_under_test

cpu = importlib.import_module("dmlops.backends.cpu")
# the module, not the ``padding`` function that the backend package exports by that name
ref = importlib.import_module("dmlops.backends.reference.padding")

CONSTANT, EDGE, REFLECTION, SYMMETRIC, WRAP = range(5)
BUDGET = 4000           # output elements per example


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


@pytest.fixture(autouse=True, params=level_paths(),
                ids=lambda p: f"{p[0]}-{p[1]}")
def level_and_path(request, monkeypatch):
    level, path = request.param
    cpu.set_level(level)
    monkeypatch.setattr(cpu, "FORCE_PLAIN", path == "plain")
    yield level
    cpu.set_level(None)


@settings(max_examples=examples(100))
@given(case=pad_cases(), dtype=st.sampled_from(O.ALL_DTYPES), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_kernel_matches_reference_bitwise(case, dtype, seed, data):
    mode, shape, start, end = case
    rank = len(shape)
    out_shape = tuple(n + a + b for n, a, b in zip(shape, start, end))
    if any(max(a, b) > 2 * n for a, b, n in zip(start, end, shape)):
        event("pad wider than a period")
    xl = data.draw(layouts(rank, broadcast=True), label="x layout")
    yl = data.draw(layouts(rank, broadcast=False), label="y layout")
    xmem = O.random_bits(seed, memory_shape(shape, xl), dtype)
    x = view(xmem, shape, xl)
    x_before = xmem.copy()
    big = O.random_bits(seed + 1, memory_shape(out_shape, yl), dtype)
    got_mem, want_mem = big.copy(), big.copy()
    value = O.random_bits(seed + 2, (), dtype)
    ref.padding(x, view(want_mem, out_shape, yl), start, mode, value)
    cpu.padding(x, view(got_mem, out_shape, yl), start, mode, value)
    # the whole buffer: y's elements as the reference wrote them, the others untouched
    assert np.array_equal(O.bits(got_mem), O.bits(want_mem)), (
        np.argwhere(O.bits(got_mem) != O.bits(want_mem))[:5])
    assert np.array_equal(O.bits(xmem), O.bits(x_before))


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


@pytest.mark.parametrize("mode", range(5))
@pytest.mark.parametrize("shape, start, end", [
    ((3, 5, 37, 41), (0, 2, 30, 90), (1, 0, 45, 3)),
    ((100_003,), (70_001,), (5,)),
    ((2, 9, 50), (1, 3, 77), (2, 40, 1)),
])
def test_one_and_two_threads_agree(mode, shape, start, end):
    # SPEC 5: "Results do not depend on the number of threads".
    x = O.random_bits(mode, shape, np.float32)[..., ::-1]
    out = tuple(n + a + b for n, a, b in zip(shape, start, end))
    value = np.asarray(np.nan, np.float32)
    want = np.empty(out, np.float32)
    ref.padding(x, want, start, mode, value)
    results = []
    try:
        for n in (1, 2, 3):
            dml.set_num_threads(n)
            y = np.empty(out, np.float32)
            cpu.padding(x, y, start, mode, value)
            results.append(y)
    finally:
        dml.set_num_threads(None)
    for y in results:
        assert np.array_equal(O.bits(y), O.bits(want))


def test_empty():
    y = np.empty((0, 3), np.int8)
    cpu.padding(np.empty((0, 1), np.int8), y, (0, 1), CONSTANT, np.asarray(5, np.int8))
    # only CONSTANT can pad an empty dimension: every output is the value
    y = np.zeros((2, 3), np.int8)
    cpu.padding(np.empty((0, 3), np.int8), y, (1, 0), CONSTANT, np.asarray(5, np.int8))
    assert (y == 5).all()



@functools.lru_cache(maxsize=None)
def _large_case(mode, dtype, step=-1):
    """An input, its start pads and the reference's output of more than 8 MiB, rows of odd
    lengths past 512 bytes (most start off a cache line); the pads along H wider than the
    input, so that rows repeat one written before, and CONSTANT's rows are the value; the
    input's rows read backwards (step -1) or packed (1: the rows ahead asked for)."""
    item = np.dtype(dtype).itemsize
    w = 9 * 1024 // item + 3
    h = (9 << 20) // (w * item * 2) // 3
    x = O.random_bits(mode + 7, (2, 1, h, w - 20), dtype)[..., ::step]
    return _past_8_mib(x, (0, 1, h + 1, 11), (0, 0, h - 1, 9), mode)


@functools.lru_cache(maxsize=None)
def _short_rows_case(mode, dtype):
    """An output of more than 8 MiB whose rows are short (332 or 664 bytes) and whose planes
    fit padding's 64 KiB scratch: the planes staged whole; pads along H several times the
    input's height, so that most rows repeat one made before in the same plane; an odd count
    of planes, so that two threads split one; CONSTANT's first plane and rows the value."""
    x, start, want = _past_8_mib(O.random_bits(mode + 11, (13, 38, 9, 13), dtype),
                                 (0, 1, 25, 40), (0, 0, 20, 30), mode)
    assert want[0, 0].nbytes <= 64 << 10
    return x, start, want


def _past_8_mib(x, start, end, mode):
    """x, its start pads and the reference's output, which must pass 8 MiB (CONSTANT's
    value 3)."""
    out = tuple(n + a + b for n, a, b in zip(x.shape, start, end))
    want = np.empty(out, x.dtype)
    assert want.nbytes > 8 << 20
    ref.padding(x, want, start, mode, np.asarray(3, x.dtype))
    return x, start, want


# (the fast paths alone: the plain kernel has no path that depends on the output's size)
@pytest.mark.parametrize("level_and_path", [(lv, "fast") for lv in levels_under_test()],
                         indirect=True, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("mode", range(5))
@pytest.mark.parametrize("dtype, step", [(np.float16, -1), (np.float64, -1), (np.float32, 1),
                                         (np.float32, "short rows"), (np.float64, "short rows")])
def test_outputs_larger_than_the_caches(mode, dtype, step, level_and_path):
    """An output much larger than the caches has its rows made in scratch and streamed to
    memory (short rows: a plane at a time): the reference's bits, with one thread and two."""
    x, start, want = (_short_rows_case(mode, dtype) if step == "short rows" else
                      _large_case(mode, dtype, step))
    try:
        for n in (1, 2):
            dml.set_num_threads(n)
            y = np.empty(want.shape, dtype)
            cpu.padding(x, y, start, mode, np.asarray(3, dtype))
            assert np.array_equal(O.bits(y), O.bits(want)), n
    finally:
        dml.set_num_threads(None)
