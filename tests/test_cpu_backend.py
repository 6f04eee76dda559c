"""The compiled cpu backend against the reference backend (SPEC 5): bitwise for max pooling,
indices, quantized pooling and the max-pooling gradient, and here bitwise for averages too
(both sum in the same fixed order); the same bits with 1 and 2 threads; float16 conversions
on every one of the 65,536 patterns. Every test runs at each CPU level this machine has and
with the fast paths and the plain kernels alike (the ``level_and_path`` fixture)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dmlops as dml
from dmlops.backends import cpu
from levels import examples, level_paths


ALL = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
       np.uint32, np.int64, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]


@pytest.fixture(autouse=True, params=level_paths(),
                ids=lambda p: f"{p[0]}-{p[1]}")
def level_and_path(request, monkeypatch):
    """Each test at every CPU level this machine runs with the fast paths, and with the plain
    kernels (which every fast path must match bit for bit) at the lowest and the highest
    (levels.level_paths)."""
    level, path = request.param
    cpu.set_level(level)
    monkeypatch.setattr(cpu, "FORCE_PLAIN", path == "plain")
    yield level
    cpu.set_level(None)


def test_float16_widens_exactly_on_all_patterns():
    """A 1x1 average of each of the 65,536 float16 patterns is the pattern itself (the
    conversion to float32 and back is exact), NaNs aside, which come back canonical, and
    -0.0, which comes back +0.0 (every sum starts from +0.0)."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    x = bits.view(np.float16).reshape(1, 1, -1)
    got = dml.average_pooling(x, 1, backend="cpu").view(np.uint16).reshape(-1)
    nan = np.isnan(x.reshape(-1))
    want = np.where(bits == 0x8000, 0, bits)
    assert np.array_equal(got[~nan], want[~nan])
    assert (got[nan] == 0x7E00).all()


def test_the_window_reaches_the_kernels_as_one_struct():
    """The plan's window is bound once (``Window``, five fields of k values each) and every
    pooling kernel takes it whole; fields of unequal lengths are refused at the binding."""
    k = cpu.kernels()
    w = k.Window([3, 3], [2, 2], [1, 1], [0, 1], [1, 1])
    x = np.arange(49, dtype=np.float32).reshape(1, 1, 7, 7)
    y = np.empty((1, 1, 3, 4), np.float32)    # (the last column's window in the end padding)
    k.average_pool(x, y, w, True, 1, cpu.FORCE_PLAIN)
    want = dml.average_pooling(x, 3, strides=2, start_padding=1, end_padding=(0, 1),
                               include_padding=True, backend="reference")
    assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
    with pytest.raises(ValueError, match="unequal lengths"):
        k.Window([3, 3], [2], [1, 1], [0, 0], [1, 1])
    with pytest.raises(TypeError):      # the five lists one by one: no longer a signature
        k.average_pool(x, y, [3, 3], [2, 2], [1, 1], [0, 1], [1, 1], True, 1, False)


def test_float16_rounds_like_numpy():
    """Averages of two float16 values round to nearest even exactly as NumPy's float32 ->
    float16 conversion: every sum of a pattern and its neighbour, halved."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    vals = bits.view(np.float16)
    pairs = np.stack([vals, np.roll(vals, 1)], axis=-1).reshape(1, 1, -1)
    got = dml.average_pooling(pairs, 2, strides=2, backend="cpu").reshape(-1)
    want = dml.average_pooling(pairs, 2, strides=2, backend="reference").reshape(-1)
    assert _same(got, want)


def test_nan_results_of_sums_are_canonical():
    """SPEC 5: whatever NaNs (payloads, signs) went in, a summing operator's NaN is the
    canonical quiet NaN of its type."""
    for dtype, nan_bits, canonical in ((np.float32, 0xFFC12345, 0x7FC00000),
                                       (np.float16, 0xFE55, 0x7E00),
                                       (np.float64, 0xFFF8000000000123, 0x7FF8000000000000)):
        ubits = np.dtype(f"u{np.dtype(dtype).itemsize}")
        x = np.ones((1, 1, 4, 4), dtype)
        x.view(ubits)[0, 0, 1, 1] = nan_bits
        for backend in ("cpu", "reference"):
            y = dml.average_pooling(x, 2, backend=backend).view(ubits)
            assert y[0, 0, 0, 0] == canonical and y[0, 0, 1, 1] == canonical
            dx = dml.average_pooling_grad(np.full((1, 1, 3, 3), np.nan, dtype), 2,
                                          input_sizes=(4, 4), backend=backend).view(ubits)
            assert (dx == canonical).all()


def _layout(draw, shape, dtype, data):
    """x with a random memory layout: transposed, reversed or strided views."""
    kind = draw(st.sampled_from(["c", "transposed", "reversed", "stepped"]))
    if kind == "transposed":                         # channels-last memory
        base = np.ascontiguousarray(np.moveaxis(data, 1, -1))
        return np.moveaxis(base, -1, 1)
    if kind == "reversed":
        return np.ascontiguousarray(data[..., ::-1])[..., ::-1]
    if kind == "stepped":
        big = np.repeat(data, 2, axis=-1)
        return big[..., ::2]
    return data


def _geometry(draw, most_size=7, most_window=3, most_stride=3):
    """A shape and a window geometry: ``shape, window, dil, strides, start, end, sizes``."""
    k = draw(st.integers(1, 3))
    spatial = draw(st.lists(st.integers(1, most_size), min_size=k, max_size=k))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(spatial)
    window = tuple(draw(st.integers(1, most_window)) for _ in range(k))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(k))
    strides = tuple(draw(st.integers(1, most_stride)) for _ in range(k))
    start = tuple(draw(st.integers(0, 3)) for _ in range(k))
    end = [draw(st.integers(0, 3)) for _ in range(k)]
    for i in range(k):      # the effective window must fit the padded input
        need = (window[i] - 1) * dil[i] + 1 - (spatial[i] + start[i] + end[i])
        end[i] += max(0, need)
    sizes = dml.pooling_output_sizes(shape, window, strides=strides, start_padding=start,
                                     end_padding=end, dilations=dil)
    return shape, window, dil, strides, start, end, sizes


@st.composite
def cases(draw, dtypes):
    shape, window, dil, strides, start, end, sizes = _geometry(draw)
    k = len(window)
    extra = tuple(draw(st.integers(0, 1)) for _ in range(k))
    out = tuple(s + e for s, e in zip(sizes[2:], extra))
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        data = rng.integers(-4, 4, shape).astype(dtype)        # ties on purpose
        if draw(st.booleans()):
            flat = data.reshape(-1)
            flat[rng.integers(0, flat.size, 2)] = [np.nan, -np.inf]
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x = _layout(draw, shape, dtype, data)
    kw = dict(strides=strides, start_padding=start, end_padding=tuple(end), dilations=dil)
    return x, window, kw, out, rng


@pytest.mark.parametrize("op", ["max", "max_indices", "average", "grad", "average_grad",
                                "quantized", "pad", "lp", "unpool"])
def test_same_bits_with_one_and_two_threads(op):
    """Large enough to be shared out among threads: the same bits with 1, 2 and 3 threads."""
    rng = np.random.default_rng(11)
    x = rng.integers(-3, 3, (4, 16, 67, 65)).astype(np.float32)
    xq = rng.integers(0, 255, x.shape).astype(np.uint8)
    dy = rng.standard_normal((4, 16, 34, 33)).astype(np.float32)
    kw = dict(strides=2, start_padding=1, end_padding=1)
    calls = {
        "max": lambda: dml.max_pooling(x, 3, backend="cpu", **kw),
        "max_indices": lambda: dml.max_pooling(x, 3, output_indices=True, backend="cpu",
                                               **kw)[1],
        "average": lambda: dml.average_pooling(x, 3, backend="cpu", **kw),
        "grad": lambda: dml.max_pooling_grad(x, dy, 3, backend="cpu", **kw),
        "average_grad": lambda: dml.average_pooling_grad(dy, 3, input_sizes=x.shape,
                                                         backend="cpu", **kw),
        "quantized": lambda: dml.quantized_linear_average_pooling(xq, 0.02, 128, 0.015, 120,
                                                                  3, backend="cpu", **kw),
        "pad": lambda: dml.padding(x, (0, 0, 40, 3), (0, 0, 2, 41), mode="symmetric",
                                   backend="cpu"),
        "lp": lambda: dml.lp_pooling(x, 3, p=3, backend="cpu", **kw),
        "unpool": lambda: dml.max_unpooling(dy, rng.permutation(x.size)[:dy.size].reshape(
            dy.shape).astype(np.uint32), x.shape, backend="cpu"),
    }
    results = []
    for n in (1, 2, 3):
        dml.set_num_threads(n)
        rng = np.random.default_rng(12)
        try:
            results.append(calls[op]())
        finally:
            dml.set_num_threads(None)
    assert _same(results[0], results[1]) and _same(results[0], results[2])


def test_shares_taken_by_whichever_thread_claims_them():
    """A call's shares go to whichever thread claims them first, the caller going on past its
    own (common/threads.cpp): calls back to back (the pool's threads awake), calls after they
    fell asleep (a late thread finds its share taken), at 1 to 4 threads, and calls from
    several Python threads at once, each give one thread's bits."""
    import threading
    import time
    rng = np.random.default_rng(21)
    # 2, 6 and 12 shares' worth of work at most (kMinWorkPerThread)
    xs = [rng.standard_normal((1, c, 64, 64)).astype(np.float32) for c in (16, 48, 96)]

    def call(x):
        return dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                               output_indices=True, backend="cpu")

    dml.set_num_threads(1)
    try:
        want = [call(x) for x in xs]
        for i in range(240):
            dml.set_num_threads(1 + i % 4)
            if i % 40 == 39:
                time.sleep(0.003)
            got = call(xs[i % 3])
            assert _same(got[0], want[i % 3][0]) and _same(got[1], want[i % 3][1]), i
        dml.set_num_threads(2)
        errors = []

        def work(seed):
            order = np.random.default_rng(seed).integers(0, 3, 60)
            for k in order:
                got = call(xs[k])
                if not (_same(got[0], want[k][0]) and _same(got[1], want[k][1])):
                    errors.append((seed, k))

        threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
    finally:
        dml.set_num_threads(None)


def test_a_failed_share_fails_its_call_alone():
    """A share that throws (bad_alloc for its scratch) fails its call with MemoryError once
    every share is over, whichever thread ran it (the caller's own share 0, or one a pool
    thread took), instead of ending the process or leaving shares running on a call that
    has returned; the next calls run whole (common/threads.cpp)."""
    k = cpu.kernels()
    n = 1000
    work = float(1 << 22)          # 128 shares' worth (kMinWorkPerThread 2^15): threads decide
    for threads in (1, 2, 4):
        whole = np.full(n, -1, np.int64)
        k.check_pool(whole, work, threads, -1)
        starts = np.unique(whole)
        assert len(starts) == threads and starts[0] == 0 and (whole >= 0).all()
        for rep in range(40):
            failing = int(starts[rep % threads]) + rep % 3
            out = np.full(n, -1, np.int64)
            with pytest.raises(MemoryError):
                k.check_pool(out, work, threads, failing)
            share = whole == whole[failing]
            assert (out[share] == -1).all() and np.array_equal(out[~share], whole[~share])
            again = np.full(n, -1, np.int64)
            k.check_pool(again, work, threads, -1)
            assert np.array_equal(again, whole)
    with pytest.raises(ValueError, match="packed 1-D int64"):
        k.check_pool(np.zeros(4, np.int32), work, 2, -1)


def test_default_threads_are_the_usable_cpus(monkeypatch):
    """Without set_num_threads or DMLOPS_NUM_THREADS, the count is the CPUs the process may
    use, looked up again once threads.CPUS_FRESH_SECONDS have passed (not at every call)."""
    from dmlops import threads
    clock = [1000.0]
    allowed = [{0, 1, 2}]
    looked = []
    monkeypatch.setattr(threads.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(threads.os, "sched_getaffinity",
                        lambda pid: looked.append(pid) or set(allowed[0]), raising=False)
    monkeypatch.setattr(threads, "_cpus", (float("-inf"), 1))
    monkeypatch.delenv("DMLOPS_NUM_THREADS", raising=False)
    dml.set_num_threads(None)
    assert dml.get_num_threads() == 3 and dml.get_num_threads() == 3 and len(looked) == 1
    allowed[0] = {0}
    clock[0] += threads.CPUS_FRESH_SECONDS / 2
    assert dml.get_num_threads() == 3
    clock[0] += threads.CPUS_FRESH_SECONDS
    assert dml.get_num_threads() == 1 and len(looked) == 2
    monkeypatch.setenv("DMLOPS_NUM_THREADS", "5")
    assert dml.get_num_threads() == 5


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def _max_as_reference(x, window, indices, **kw):
    """The cpu backend's max pooling of ``x`` has the reference's bits (and indices)."""
    got = dml.max_pooling(x, window, backend="cpu", output_indices=indices, **kw)
    want = dml.max_pooling(x, window, backend="reference", output_indices=indices, **kw)
    if indices:
        assert _same(got[0], want[0]) and np.array_equal(got[1], want[1])
    else:
        assert _same(got, want)


# One test per data type: each compiles two kernels (most of a cold CI run), and separate
# tests let parallel workers (pytest-xdist) share them out.
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@settings(max_examples=examples(12))
@given(data=st.data(), idt=st.sampled_from([np.uint32, np.uint64, np.int64]))
def test_max_pooling_bitwise(dtype, data, idt):
    x, window, kw, out, _ = data.draw(cases([dtype]))
    got = dml.max_pooling(x, window, output_sizes=out, output_indices=True, indices_dtype=idt,
                          backend="cpu", **kw)
    want = dml.max_pooling(x, window, output_sizes=out, output_indices=True,
                           indices_dtype=idt, backend="reference", **kw)
    assert _same(got[0], want[0]) and _same(got[1], want[1])
    assert _same(dml.max_pooling(x, window, output_sizes=out, backend="cpu", **kw), want[0])


@settings(max_examples=examples(100))
@given(c=cases(FLOATS), incl=st.booleans())
def test_average_pooling_matches(c, incl):
    x, window, kw, out, _ = c
    got = dml.average_pooling(x, window, output_sizes=out, include_padding=incl,
                              backend="cpu", **kw)
    want = dml.average_pooling(x, window, output_sizes=out, include_padding=incl,
                               backend="reference", **kw)
    assert _same(got, want)


@st.composite
def sum_cases(draw):
    """Average pooling on floats whose sums round differently in every other order: terms
    of widely different magnitudes (small integers, as ``cases`` draws, sum exactly in any
    order), sometimes -0.0 in half the places, the common windows (up to 3, steps 1 and 2)
    over rows long enough to have edges and an interior, in any layout."""
    k = draw(st.integers(1, 3))
    spatial = tuple(draw(st.integers(1, 12)) for _ in range(k))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + spatial
    window = tuple(draw(st.integers(1, 3)) for _ in range(k))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(k))
    dil = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(k))
    start = tuple(draw(st.integers(0, w - 1)) for w in window)
    end = [draw(st.integers(0, w - 1)) for w in window]
    for i in range(k):
        need = (window[i] - 1) * dil[i] + 1 - (spatial[i] + start[i] + end[i])
        end[i] += max(0, need)
    dtype = draw(st.sampled_from(FLOATS))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    spread = 8 if dtype == np.float16 else 30
    vals = rng.standard_normal(shape) * 2.0 ** rng.integers(-spread, spread, shape)
    if draw(st.booleans()):
        vals[rng.random(shape) < 0.5] = -0.0
    x = _layout(draw, shape, dtype, vals.astype(dtype))
    kw = dict(strides=strides, start_padding=start, end_padding=tuple(end), dilations=dil)
    return x, window, kw


@settings(max_examples=examples(150))
@given(c=sum_cases(), incl=st.booleans())
def test_average_pooling_sums_in_row_major_order(c, incl):
    # bitwise the reference, whose sums go in SPEC 5's order (row-major window offsets,
    # from +0.0)
    x, window, kw = c
    got = dml.average_pooling(x, window, include_padding=incl, backend="cpu", **kw)
    want = dml.average_pooling(x, window, include_padding=incl, backend="reference", **kw)
    assert _same(got, want)



@pytest.mark.parametrize("shape,window,kw", [
    ((3, 2, 9, 40), 3, dict(strides=2, start_padding=1, end_padding=1)),
    ((2, 3, 6, 37), (2, 3), dict(strides=(1, 1), dilations=(2, 1))),
    ((2, 2, 4, 5, 33), 2, dict(strides=2)),
])
def test_max_indices_past_32_bits(monkeypatch, shape, window, kw):
    """Flat indices that do not fit 32 bits (a batch pitch of 2^33 stretches the index space
    the kernels are given) take the register path's 64-bit form, each winner's index from its
    window row's start; below 2^32 the path carries 32-bit indices. Both against the
    reference's indices, recomputed with the stretched pitch; ties included."""
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 3, shape).astype(np.float32)
    want_y, want_i = dml.max_pooling(x, window, output_indices=True, indices_dtype=np.uint64,
                                     backend="reference", **kw)
    coords = np.unravel_index(want_i.astype(np.int64), shape)
    stretch = 2**33
    want_far = coords[0].astype(np.uint64) * np.uint64(stretch) + np.ravel_multi_index(
        (np.zeros_like(coords[0]),) + coords[1:], shape).astype(np.uint64)
    real = cpu._pitch
    monkeypatch.setattr(cpu, "_pitch", lambda sizes: [stretch] + list(real(sizes))[1:])
    got_y, got_i = dml.max_pooling(x, window, output_indices=True, indices_dtype=np.uint64,
                                   backend="cpu", **kw)
    assert _same(got_y, want_y) and np.array_equal(got_i, want_far)



@pytest.mark.parametrize("grad", ["max", "average"])
def test_gradients_larger_than_the_caches(grad):
    """A gradient whose dx passes 8 MiB has its planes streamed to memory (planes of odd
    sizes, so most start off a cache line): the reference's bits (canonical NaNs included), as
    through a strided out=, which is written as usual, elements it does not address
    untouched."""
    rng = np.random.default_rng(3)
    x = rng.integers(-4, 4, (1, 2, 1031, 1037)).astype(np.float32)
    kw = dict(strides=2, start_padding=1, end_padding=1)
    dy = rng.standard_normal((1, 2, 516, 519)).astype(np.float32)
    # NaNs of another payload, and infinities of both signs (their sums NaN): canonical in dx
    dy[0, :, ::7, ::5] = np.array(0xFFC00123, np.uint32).view(np.float32)
    dy[0, :, 3::11, 1::2] = np.inf
    dy[0, :, 3::11, ::2] = -np.inf
    if grad == "max":
        def run(backend, out=None):
            return dml.max_pooling_grad(x, dy, 3, out=out, backend=backend, **kw)
    else:
        def run(backend, out=None):
            return dml.average_pooling_grad(dy, 3, input_sizes=x.shape, out=out,
                                            backend=backend, **kw)
    want = run("reference")
    assert _same(run("cpu"), want)
    store = np.full(x.shape[:3] + (2 * x.shape[3],), 5, np.float32)
    run("cpu", out=store[..., ::2])
    assert _same(np.ascontiguousarray(store[..., ::2]), want) and (store[..., 1::2] == 5).all()


@settings(max_examples=examples(100))
@given(c=cases(FLOATS), wide_argmax=st.booleans(),
       group_bytes=st.sampled_from([0, 100, 300, cpu.GRAD_GROUP_BYTES]))
def test_max_pooling_grad_bitwise(c, wide_argmax, group_bytes):
    """The gradient against the reference, through a 4-byte argmax and (``wide_argmax``:
    the form of inputs of 2^32 elements or more) an 8-byte one; the argmax found a plane at a
    time, a few planes at a time (``group_bytes``: groups that end inside an image and at its
    end) and as it runs by default."""
    x, window, kw, out, rng = c
    default = cpu.GRAD_GROUP_BYTES
    if wide_argmax:
        cpu.ARGMAX32_MOST = 0
    cpu.GRAD_GROUP_BYTES = group_bytes
    try:
        dy = rng.standard_normal(x.shape[:2] + out).astype(x.dtype)
        got = dml.max_pooling_grad(x, dy, window, backend="cpu", **kw)
        want = dml.max_pooling_grad(x, dy, window, backend="reference", **kw)
        assert _same(got, want)
    finally:
        cpu.ARGMAX32_MOST = 2**32 - 1
        cpu.GRAD_GROUP_BYTES = default


def test_max_pooling_grad_groups_of_planes():
    """Many images of many planes, two threads: each group of planes' argmax (found here,
    flat indices from the group's first plane) scatters into its own planes only."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 37, 41, 43)).astype(np.float32)
    x[1, 5, 2, 3] = np.nan
    kw = dict(strides=2, start_padding=1, end_padding=1)
    dy = rng.standard_normal((3, 37, 21, 22)).astype(np.float32)
    want = dml.max_pooling_grad(x, dy, 3, backend="reference", **kw)
    default = cpu.GRAD_GROUP_BYTES
    try:
        dml.set_num_threads(2)
        for group_bytes in (0, 5 * 41 * 43 * 4, 16 * 41 * 43 * 4, default):
            cpu.GRAD_GROUP_BYTES = group_bytes
            assert _same(dml.max_pooling_grad(x, dy, 3, backend="cpu", **kw), want)
    finally:
        cpu.GRAD_GROUP_BYTES = default
        dml.set_num_threads(None)


@settings(max_examples=examples(100))
@given(c=cases([np.int8, np.uint8]), dout=st.sampled_from([np.int8, np.uint8]),
       per_channel=st.booleans(), incl=st.booleans())
def test_quantized_bitwise(c, dout, per_channel, incl):
    x, window, kw, out, rng = c
    C = x.shape[1]
    shape = (1, C) + (1,) * (x.ndim - 2)
    if per_channel:
        s_in = (rng.random(shape) * 0.1 + 0.001).astype(np.float32)
        s_out = (rng.random(shape) * 0.1 + 0.001).astype(np.float32)
        zi = rng.integers(0, 100, shape).astype(x.dtype)
        zo = rng.integers(0, 100, shape).astype(dout)
    else:
        s_in, s_out = float(rng.random() + 0.01), float(rng.random() * 0.1 + 0.001)
        zi, zo = np.asarray(int(rng.integers(0, 100))).astype(x.dtype)[()], \
            np.asarray(int(rng.integers(0, 100))).astype(dout)[()]
    args = (x, s_in, zi, s_out, zo, window)
    got = dml.quantized_linear_average_pooling(*args, include_padding=incl, backend="cpu", **kw)
    want = dml.quantized_linear_average_pooling(*args, include_padding=incl,
                                                backend="reference", **kw)
    assert _same(got, want)


@pytest.mark.parametrize("window", [(8, 16), (12, 12)])      # 128 elements: int16 sums
@pytest.mark.parametrize("din", [np.uint8, np.int8])
def test_quantized_sums_at_the_accumulators_limits(window, din):
    """Sums as large as a window allows, both signs: every element as far from the zero
    point as the type permits (255 away), where the kernel's accumulator narrows to int16
    (up to 128 elements) and where it must not (144: 36,720 > 32,767). A sum that wrapped
    would move the average by 65,536 / 144 = 455 (outputs of 64 at most, scale 4)."""
    info = np.iinfo(din)
    for fill, zp in ((info.max, info.min), (info.min, info.max)):
        x = np.full((1, 2, 12, 16), fill, din)
        x[0, 1, ::3, ::5] = zp                   # a few terms of 0, so the sums differ
        args = (x, 1.0, np.asarray(zp, din)[()], 4.0, np.asarray(0, np.int8)[()], window)
        got = dml.quantized_linear_average_pooling(*args, output_dtype=np.int8,
                                                   backend="cpu")
        want = dml.quantized_linear_average_pooling(*args, output_dtype=np.int8,
                                                    backend="reference")
        assert _same(got, want)
        assert abs(int(got[0, 0, 0, 0])) == 64         # all 255 from the zero point



def _scales_one_rounding_gets_wrong(sums, divisor, rng):
    """Scales (s_in, s_out) for which SPEC 3.3's three float32 roundings of
    sum * s_in / divisor / s_out and a single multiplier s_in / (divisor * s_out) round some
    of ``sums`` to different integers: those lanes lie within a rounding of a half."""
    f = np.float32
    c = sums.astype(f)
    for _ in range(5000):
        s_in, s_out = f(rng.uniform(0.5, 2)), f(rng.uniform(0.5, 2))
        t = (c * s_in) / f(divisor) / s_out
        k = f(np.float64(s_in) / (np.float64(f(divisor)) * np.float64(s_out)))
        if np.any(np.rint(c * k) != np.rint(t)):
            return s_in, s_out
    raise AssertionError("no scales found")


@pytest.mark.parametrize("spatial", [(3, 1000), (3, 3, 400)])    # separable, rows paths
def test_quantized_outputs_near_a_half_are_exact(spatial):
    """The kernels may requantize by one multiplier per output where that cannot change the
    rounded result; outputs within a rounding of a half take SPEC 3.3's exact arithmetic. Here
    scales are searched for which a single multiplier would round some outputs the wrong way,
    and exact halves (ties to even), scales outside the multiplier's range and divisors of
    every border are checked too: the reference's bits throughout."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, (1, 2) + spatial, dtype=np.uint8)
    window = (3,) * len(spatial)
    sums = np.lib.stride_tricks.sliding_window_view(
        x.astype(np.int64), window, axis=tuple(range(2, x.ndim))).sum(
        axis=tuple(range(-len(spatial), 0)))
    s_in, s_out = _scales_one_rounding_gets_wrong(sums.reshape(-1), 3 ** len(spatial), rng)
    cases = [(s_in, s_out, {}),
             (1.0, 2.0, {}),                                   # eighths, ninths: ties
             (1.0, 0.125, dict(start_padding=1, end_padding=1, include_padding=True)),
             (2.0 ** -45, 2.0 ** -46, dict(start_padding=1, end_padding=2)),
             (2.0 ** 41, 2.0 ** 44, {})]
    for s_in, s_out, kw in cases:
        args = (x, s_in, np.uint8(0), s_out, np.uint8(3), window)
        got = dml.quantized_linear_average_pooling(*args, backend="cpu", **kw)
        want = dml.quantized_linear_average_pooling(*args, backend="reference", **kw)
        assert _same(got, want), (s_in, s_out, kw)


def _quantized_desc_run(x, params, window, kw, out_shape, backend):
    """Quantized pooling through the description layer, whose output sizes may exceed the
    computed ones (SPEC 2: windows past the end padding)."""
    s_in, z_in, s_out, z_out = params
    k = len(window)
    ps = (1,) * (2 + k) if np.ndim(s_in) == 0 else np.shape(s_in)
    f = {np.dtype(np.int8): "INT8", np.dtype(np.uint8): "UINT8"}
    desc = dml.QuantizedLinearAveragePoolingDesc(
        input_tensor=dml.TensorDesc(f[x.dtype], x.shape),
        input_scale_tensor=dml.TensorDesc("FLOAT32", ps),
        input_zero_point_tensor=dml.TensorDesc(f[z_in.dtype], ps),
        output_scale_tensor=dml.TensorDesc("FLOAT32", ps),
        output_zero_point_tensor=dml.TensorDesc(f[z_out.dtype], ps),
        output_tensor=dml.TensorDesc(f[z_out.dtype], out_shape), strides=(1,) * k,
        window_size=window, start_padding=kw["start_padding"], end_padding=kw["end_padding"],
        dilations=kw["dilations"], include_padding=kw["include_padding"])
    op = dml.compile_operator(desc, backend=backend)
    bind = dict(input_tensor=x, input_scale_tensor=np.reshape(s_in, ps),
                input_zero_point_tensor=np.reshape(z_in, ps),
                output_scale_tensor=np.reshape(s_out, ps),
                output_zero_point_tensor=np.reshape(z_out, ps))
    return op.execute(**bind)["output_tensor"]


def test_out_with_any_strides():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 10)).astype(np.float32)
    big = np.full((2, 3, 10, 15), 7.0, np.float32)
    out = big[:, :, ::2, 1::3][:, ::-1]              # reversed channels, stepped rows/cols
    res = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1, out=out,
                          backend="cpu")
    assert res is out
    want = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                           backend="reference")
    assert np.array_equal(out, want)
    untouched = np.ones(big.shape, bool)
    untouched[:, :, ::2, 1::3] = False
    assert np.all(big[untouched] == 7.0)


@pytest.mark.parametrize("window,strides", [((3, 3), (2, 2)), ((2, 3), (1, 1)),
                                            ((3, 2), (2, 4)), ((2, 1), (1, 3)), ((1, 3), (1, 2))])
@pytest.mark.parametrize("layout", ["c", "channels_last", "reversed"])
def test_max_rows_separable_and_general_agree_on_ties(window, strides, layout):
    """Both ways of evaluating a row (separable, when the windows read most of the row's
    columns; window offset by offset otherwise, e.g. stride 3 over a window of 1) keep the
    SPEC's winner where equal values differ in bits: −0.0 / +0.0 and NaNs with different
    payloads, so only the lowest flat index gives the reference's bits and indices."""
    rng = np.random.default_rng(5)
    nans = np.array([0x7FC00001, 0x7FC00002, 0xFFC00003], np.uint32).view(np.float32)
    pool = np.concatenate([np.array([0.0, -0.0, -1.0], np.float32), nans])
    x = pool[rng.integers(0, pool.size, (2, 3, 11, 13))]
    if layout == "channels_last":
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    elif layout == "reversed":
        x = np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    kw = dict(strides=strides, start_padding=(1, 1), end_padding=(1, 2))
    out = dml.pooling_output_sizes(x.shape, window, ceil_mode=True, **kw)
    got = dml.max_pooling(x, window, output_sizes=out, output_indices=True, backend="cpu",
                          **kw)
    want = dml.max_pooling(x, window, output_sizes=out, output_indices=True,
                           backend="reference", **kw)
    assert _same(got[0], want[0]) and _same(got[1], want[1])
    assert _same(dml.max_pooling(x, window, output_sizes=out, backend="cpu", **kw), want[0])
    dy = rng.standard_normal(out).astype(np.float32)
    assert _same(dml.max_pooling_grad(x, dy, window, backend="cpu", **kw),
                 dml.max_pooling_grad(x, dy, window, backend="reference", **kw))
    h = x.astype(np.float16)
    assert _same(dml.max_pooling(h, window, output_sizes=out, backend="cpu", **kw),
                 dml.max_pooling(h, window, output_sizes=out, backend="reference", **kw))


def _extremes(dtype):
    """Values that test an ordering: the type's ends and, for floats, ±∞, ±0 and NaNs of
    both signs and two payloads."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], dtype)
    bits = {2: (0x7E01, 0xFE02), 4: (0x7FC00001, 0xFFC00002),
            8: (0x7FF8000000000001, 0xFFF8000000000002)}[np.dtype(dtype).itemsize]
    nans = np.array(bits, f"u{np.dtype(dtype).itemsize}").view(dtype)
    return np.concatenate([np.array([-np.inf, np.inf, 0.0, -0.0, -1.0, 1.0], dtype), nans])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("width", [1, 2, 5, 16, 33])
def test_max_values_by_keys_bitwise(dtype, width):
    """Max pooling without indices compares integer keys, and rows that read a −0.0 or a
    NaN go the tie-tracking way: here most rows are plain and a few hold the type's extreme
    values, for every type (uint16 must not be taken for float16 bits), odd and even widths,
    strides 1-3 (2 splits the columns into even and odd ones) and a strided input."""
    rng = np.random.default_rng(width)
    shape = (2, 3, 7, width)
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-50, 50, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -50), min(info.max, 50), shape).astype(dtype)
    ext = _extremes(dtype)
    rows = rng.integers(0, 2 * 3 * 7, 6)                  # a few rows get extreme values
    flat = x.reshape(-1, width)
    for r in rows:
        flat[r, rng.integers(0, width, max(1, width // 3))] = rng.choice(ext)
    views = [x, np.repeat(x, 2, axis=-1)[..., ::2]]
    for v in views:
        for window, strides, pad in [((3, 3), (2, 2), 1), ((2, 3), (1, 2), (0, 2)),
                                     ((3, 1), (2, 3), (1, 0)), ((1, 2), (1, 1), 0)]:
            kw = dict(strides=strides, start_padding=pad, end_padding=pad)
            if any(width + 2 * p < w for w, p in zip(window[1:], np.broadcast_to(pad, 2)[1:])):
                continue
            got = dml.max_pooling(v, window, backend="cpu", **kw)
            want = dml.max_pooling(v, window, backend="reference", **kw)
            assert _same(got, want), (window, strides, pad)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("window, strides", [((3, 3), 2), ((2, 2), 2), ((3, 3), 1)])
@pytest.mark.parametrize("nan", [None, 1, -1])
def test_max_flat_runs_see_signed_zeros_and_nans(dtype, window, strides, nan):
    """Windows whose largest values are −0.0 and +0.0 in either order (equal: the first
    wins, SPEC 3.4), well inside rows that go the flat way, and NaNs of either sign there:
    the flat loops must notice them (−0.0 per element, NaNs from the range of the keys)
    and hand the block to the tie-tracking way. Bits and indices as the reference's."""
    rng = np.random.default_rng(7)
    # (no −0.0 with the NaNs: either alone must send its block the other way; NaNs of two
    # payloads, so that the larger key is not the first NaN)
    nans = np.array([0x7FC00000, 0x7FE00000], np.uint32) | (0x80000000 if nan == -1 else 0)
    values = [-0.0, 0.0, -1.0] if nan is None else [1.0, -1.0, *nans.view(np.float32)]
    p = [0.2, 0.2, 0.6] if nan is None else [0.2, 0.78, 0.01, 0.01]
    x = rng.choice(np.array(values, dtype), (2, 3, 24, 48), p=p)
    x[..., :3] = x[..., -3:] = -1      # none in the columns done one by one (the rows' edges)
    kw = dict(strides=strides, start_padding=1, end_padding=1)
    for indices in (False, True):
        _max_as_reference(x, window, indices, **kw)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float16, np.float32,
                                   np.uint32])
@pytest.mark.parametrize("width", [7, 8, 33, 64])
@pytest.mark.parametrize("pad", [0, 1])
def test_max_stride2_runs_words_and_carry(dtype, width, pad):
    """The common 3-wide, stride-2 window's runs, with and without indices: 1-byte keys
    read as 16-bit words (split in registers), wider keys with the element two outputs
    share carried from one to the next. Rows starting at even and odd elements (odd widths,
    padding moving the first window), odd and even widths, the last output near the end of
    the input (whose word could reach past it), a 1-byte buffer at an odd address (read
    the plain way). Few distinct values, so that windows tie (the first wins). Bits and
    indices as the reference's."""
    rng = np.random.default_rng(width + pad)
    shape = (2, 3, 9, width + 1)
    if np.dtype(dtype).kind == "f":
        base = rng.integers(-3, 4, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        base = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        base[0] //= 64                  # (ties)
    for x in (base[..., 1:], base[..., :-1], np.ascontiguousarray(base[..., 1:])):
        for window in (3, (2, 3)):
            for indices in (False, True):
                _max_as_reference(x, window, indices, strides=2, start_padding=pad,
                                  end_padding=pad)


def _cl(a):
    """``a`` with channels-last memory (the same values)."""
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
@pytest.mark.parametrize("channels", [5, 64, 70])
@pytest.mark.parametrize("window", [(2, 2), (2, 3), (3, 3), (4, 4)])
def test_max_whole_windows_channels_last(dtype, channels, window):
    """Channels-last data runs each output row (its channels) as the element-wise best of
    whole window elements, three at a time: a later element wins only where greater, so
    the first of −0.0 and +0.0 stays; a NaN wins over a non-NaN, the first of two NaNs
    stays (values alone: the row goes the tie-tracking way). Bits and indices as the
    reference's, for output rows shorter and longer than a pass's 64 outputs (and not a
    multiple of it), windows of 4, 6, 9 and 16 elements, padding (fewer), and channels-last
    and packed outputs, whose steps differ."""
    rng = np.random.default_rng(channels)
    shape = (2, channels, 9, 10)
    if dtype == np.int8:
        x = rng.integers(-128, 128, shape).astype(dtype)
    else:
        nans = np.array([0x7FC00000, 0x7FE00000, 0xFFC00001], np.uint32).view(np.float32)
        x = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0, *nans], dtype), shape,
                       p=[0.3, 0.3, 0.2, 0.18, 0.01, 0.005, 0.005])
    x = _cl(x)
    kw = dict(strides=(2, 1), start_padding=1, end_padding=(1, 2))
    sizes = dml.pooling_output_sizes(shape, window, **kw)
    for idt in (None, np.uint32, np.int64):
        want = dml.max_pooling(x, window, backend="reference", output_indices=idt is not None,
                               indices_dtype=idt or np.uint32, **kw)
        outs = [None, _cl(np.empty(sizes, dtype))]
        for out in outs:
            if idt is None:
                assert _same(dml.max_pooling(x, window, backend="cpu", out=out, **kw), want)
                continue
            pair = None if out is None else (out, _cl(np.empty(sizes, idt)))
            got = dml.max_pooling(x, window, backend="cpu", output_indices=True,
                                  indices_dtype=idt, out=pair, **kw)
            assert _same(np.ascontiguousarray(got[0]), want[0])
            assert _same(np.ascontiguousarray(got[1]), want[1])
    if dtype != np.int8:
        dy = rng.standard_normal(sizes).astype(dtype)
        assert _same(dml.max_pooling_grad(x, dy, window, backend="cpu", **kw),
                     dml.max_pooling_grad(x, dy, window, backend="reference", **kw))


@pytest.mark.parametrize("op", ["max", "max with indices", "max with int64 indices",
                                "max gradient", "average", "average with padding",
                                "max float16", "max int8", "max uint8", "average float16",
                                "average with padding float16"])
@pytest.mark.parametrize("channels", [16, 17, 96, 257])
def test_channels_last_pixel_paths(op, channels):
    """Channels-last data takes the pixel paths (max_pool/README.md and
    avg_pool/README.md, "Pixels"): max pooling's two passes (each input row's maxima along W
    into a ring of rows, blocks of 16 output rows), the averages' rows of pixels (each
    pixel's window summed in row-major order); max pooling's indices (each lane's winner as
    its flat index) and the gradient's argmax too. Here a plane of 37 rows (several blocks),
    dilated window rows (the ring longer than the window), windows that are all padding,
    channel counts that are and are not a multiple of a register, pixels further apart than
    their channels, reversed rows, values with tied signed zeros and, in some calls, NaNs of
    two payloads (max: the block done again in SPEC 3.4's order; averages: canonical NaNs),
    into the default C-contiguous output and a channels-last one: the reference's bits.
    Float32 throughout; max pooling's values of float16 (compared as keys), int8 and uint8,
    and float16 averages (summed in float32) too."""
    rng = np.random.default_rng(channels)
    dtype = np.dtype(op.split()[-1] if op.split()[-1] in ("float16", "int8", "uint8")
                     else "float32")
    nans = np.array([0x7FC00001, 0xFFC00002], np.uint32).view(np.float32)
    geometries = [dict(window=(3, 3), strides=2, start_padding=1, end_padding=1),
                  dict(window=(3, 3), strides=1, start_padding=1, end_padding=1),
                  dict(window=(2, 3), strides=(1, 2), start_padding=(1, 0), end_padding=(0, 1),
                       dilations=(2, 1)),
                  dict(window=(5, 2), strides=(3, 1), start_padding=(2, 1), end_padding=(0, 0),
                       dilations=(1, 2)),
                  dict(window=(2, 2), strides=1, start_padding=(3, 4), end_padding=(3, 4))]
    def pool(x, window, out=None, **kw):
        if op.startswith("average"):
            return dml.average_pooling(x, window, include_padding="padding" in op, out=out, **kw)
        if op == "max" or op.split()[-1] == dtype.name:
            return dml.max_pooling(x, window, out=out, **kw)
        if op == "max gradient":
            geo = {k: v for k, v in kw.items() if k != "backend"}
            dy = np.random.default_rng(3).standard_normal(
                dml.pooling_output_sizes(x.shape, window, **geo)).astype(np.float32)
            return dml.max_pooling_grad(x, dy, window, out=out, **kw)
        if op.startswith("max with"):
            idt = np.int64 if "int64" in op else np.uint32
            pair = None if out is None else (out, _cl(np.full(out.shape, 7, idt)))
            got = dml.max_pooling(x, window, output_indices=True, indices_dtype=idt, out=pair,
                                  **kw)
            return np.concatenate([np.ascontiguousarray(got[0]).view(np.uint32).ravel(),
                                   np.ascontiguousarray(got[1]).view(np.uint32).ravel()])
        raise AssertionError(op)
    for g, kw in enumerate(geometries):
        window = kw.pop("window")
        if dtype.kind == "f":
            x = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0, 2.5], dtype), (2, channels, 37, 13))
            if g % 2:
                x.flat[rng.integers(0, x.size, 3)] = nans[rng.integers(0, 2, 3)].astype(dtype)
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, int(info.max) + 1, (2, channels, 37, 13)).astype(dtype)
        wide = np.zeros((2, 37, 13, channels + 5), dtype)
        wide[..., :channels] = np.moveaxis(x, 1, -1)
        layouts = {"channels-last": _cl(x),
                   "pixels apart": np.moveaxis(wide[..., :channels], -1, 1),
                   "reversed rows": _cl(x[:, :, ::-1])[:, :, ::-1]}
        want = pool(x, window, backend="reference", **kw)
        shape = (x.shape if op == "max gradient" else
                 dml.pooling_output_sizes(x.shape, window, **kw))
        for name, v in layouts.items():
            assert np.array_equal(v, x, equal_nan=True)
            assert _same(pool(v, window, backend="cpu", **kw), want), (g, name)
            out = _cl(np.full(shape, 7, dtype))
            got = pool(v, window, backend="cpu", out=out, **kw)
            assert _same(got, want) and (op.startswith("max with") or _same(out, want)), (g, name)


def test_pixel_paths_take_3d_windows_of_unit_width():
    """The pixel paths' precondition is a shape, not a layout: 3-D pooling of NCDHW data with
    a window of width 1 along W (no padding there) is the same recast shape, W taking the
    channels' place. Values, indices and averages as the reference's."""
    rng = np.random.default_rng(8)
    x = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0, 2.5], np.float32), (2, 3, 9, 11, 20))
    kw = dict(strides=(2, 1, 1), start_padding=(1, 0, 0), end_padding=(1, 2, 0))
    for f, extra in ((dml.max_pooling, dict(output_indices=True)),
                     (dml.average_pooling, dict(include_padding=False)),
                     (dml.average_pooling, dict(include_padding=True))):
        got = f(x, (3, 2, 1), backend="cpu", **extra, **kw)
        want = f(x, (3, 2, 1), backend="reference", **extra, **kw)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert _same(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.float64])
@pytest.mark.parametrize("channels_last", [False, True])
def test_max_pooling_volumes(dtype, channels_last):
    """3-D windows a D-plane at a time (max_pool/README.md "Volumes"): each input D-plane's
    2-D maxima (the separable path; the pixel path for channels-last data), then each output
    D-plane the first of the best of its window's. Against the reference: padding and
    dilation along D, strides 1 and 2, windows whose D part or (H, W) part is all padding,
    NaNs of two payloads and signed zeros tied across D-planes (the earlier D-plane wins),
    64 and 17 channels; C-contiguous and channels-last outputs; values, UINT32 and UINT64
    indices, and the gradient (its argmax)."""
    rng = np.random.default_rng(12)
    for channels in (64, 17):
        shape = (2, channels, 7, 9, 20)
        if np.dtype(dtype).kind == "f":
            x = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0, 2.5], dtype), shape)
            first, later = {np.float16: (0x7E01, 0xFE02), np.float32: (0x7FC00001, 0xFFC00002),
                            np.float64: (0x7FF8000000000001, 0xFFF8000000000002)}[dtype]
            bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
            x[0, 1, 2, 3, 4] = np.array(first, bits).view(dtype)
            x[0, 1, 4, 3, 4] = np.array(later, bits).view(dtype)
        else:
            x = rng.integers(-3, 3, shape).astype(dtype)
        if channels_last:
            x = np.ascontiguousarray(np.moveaxis(x, 1, -1)).transpose(0, 4, 1, 2, 3)
        for window, kw in (((3, 3, 3), dict(strides=2, start_padding=1, end_padding=1)),
                           ((2, 2, 2), dict(strides=(1, 2, 2))),
                           ((2, 3, 2), dict(strides=(2, 1, 2), dilations=(3, 1, 1),
                                            start_padding=(2, 0, 1), end_padding=(4, 1, 0))),
                           ((2, 2, 3), dict(start_padding=(3, 3, 0), end_padding=(0, 2, 1)))):
            want = dml.max_pooling(x, window, backend="reference", **kw)
            assert _same(dml.max_pooling(x, window, backend="cpu", **kw), want), (window, kw)
            out = np.full((want.shape[0],) + want.shape[2:] + want.shape[1:2], 7, want.dtype)
            out = np.moveaxis(out, -1, 1)
            dml.max_pooling(x, window, backend="cpu", out=out, **kw)
            assert _same(np.ascontiguousarray(out), want), (window, kw)
            for idt in (np.uint32, np.uint64):
                got = dml.max_pooling(x, window, backend="cpu", output_indices=True,
                                      indices_dtype=idt, **kw)
                ref = dml.max_pooling(x, window, backend="reference", output_indices=True,
                                      indices_dtype=idt, **kw)
                assert _same(got[0], ref[0]) and _same(got[1], ref[1]), (window, kw, idt)
            if np.dtype(dtype).kind == "f":
                dy = rng.standard_normal(want.shape).astype(dtype)
                assert _same(dml.max_pooling_grad(x, dy, window, backend="cpu", **kw),
                             dml.max_pooling_grad(x, dy, window, backend="reference", **kw))


def test_max_pooling_volumes_of_reversed_views():
    """Volumes read through views with negative strides (D-planes and channels reversed,
    which the volumes path takes; H and W reversed too): values and indices as the
    reference's."""
    rng = np.random.default_rng(14)
    base = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0, 2.5], np.float32), (2, 19, 7, 9, 20))
    cl = np.ascontiguousarray(np.moveaxis(base, 1, -1))
    for x in (base[:, ::-1, ::-1], base[:, ::-1, ::-1, ::-1, ::-1],
              np.moveaxis(cl[:, ::-1], -1, 1), np.moveaxis(cl[:, ::-1, ::-1, ::-1, ::-1], -1, 1)):
        for kw in (dict(strides=2, start_padding=1, end_padding=1), dict(strides=(1, 2, 2))):
            got = dml.max_pooling(x, 3, backend="cpu", output_indices=True, **kw)
            want = dml.max_pooling(x, 3, backend="reference", output_indices=True, **kw)
            assert _same(got[0], want[0]) and _same(got[1], want[1])


def test_max_pooling_volumes_in_pieces():
    """A volume whose D-planes' 2-D maxima pass the scratch's bound is done some output
    D-planes at a time (each piece's input D-planes pooled again where pieces share them):
    the plain kernel's bits, values and indices (a later piece's from its first D-plane's)."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((1, 2, 21, 520, 516)).astype(np.float32)
    kw = dict(strides=2, start_padding=1, end_padding=1, output_indices=True)
    got = dml.max_pooling(x, 3, backend="cpu", **kw)
    try:
        cpu.FORCE_PLAIN = True
        want = dml.max_pooling(x, 3, backend="cpu", **kw)
    finally:
        cpu.FORCE_PLAIN = False
    assert _same(got[0], want[0]) and _same(got[1], want[1])
    assert _same(dml.max_pooling(x, 3, backend="cpu", strides=2, start_padding=1,
                                 end_padding=1), want[0])


@pytest.mark.parametrize("window", [(2, 130), (130, 3), (9, 5)])
def test_max_indices_beyond_tracked_positions(window):
    """Tracked positions are numbered in the key type: int8 keys number 127 at most, so a
    window with more last-dimension offsets (or more rows) than that takes the
    tie-tracking way; still the reference's values and indices."""
    x = np.random.default_rng(3).integers(-3, 3, (1, 2, 140, 140)).astype(np.int8)
    x[..., 131:, :] = 50                                # winners late in the window,
    x[..., 131:] = 60                                   # beyond position 127
    kw = dict(strides=(1, 2), start_padding=(0, 1), end_padding=(0, 1))
    got = dml.max_pooling(x, window, backend="cpu", output_indices=True, **kw)
    want = dml.max_pooling(x, window, backend="reference", output_indices=True, **kw)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("layout", ["c", "channels_last"])
def test_many_rows_per_task(layout):
    """A task takes many output rows and walks them by position and plane: every operator
    against the reference there, with per-channel quantization (a plane change must change
    the channel's parameters)."""
    rng = np.random.default_rng(3)
    shape = (3, 5, 41, 23)
    x = rng.integers(-9, 9, shape).astype(np.float32) / 4
    xq = rng.integers(0, 255, shape).astype(np.uint8)
    if layout == "channels_last":
        x, xq = (np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)
                 for a in (x, xq))
    kw = dict(strides=(1, 2), start_padding=1, end_padding=(2, 1))
    sizes = dml.pooling_output_sizes(shape, 3, **kw)
    dy = rng.standard_normal(sizes).astype(np.float32)
    s_in = rng.uniform(0.01, 0.05, (1, 5, 1, 1)).astype(np.float32)
    zp_in = rng.integers(100, 150, (1, 5, 1, 1)).astype(np.uint8)
    calls = [
        lambda b: dml.max_pooling(x, 3, backend=b, **kw),
        lambda b: dml.max_pooling(x, 3, output_indices=True, backend=b, **kw)[1],
        lambda b: dml.average_pooling(x, 3, include_padding=True, backend=b, **kw),
        lambda b: dml.max_pooling_grad(x, dy, 3, backend=b, **kw),
        lambda b: dml.quantized_linear_average_pooling(xq, s_in, zp_in, 0.015, np.uint8(120),
                                                       3, backend=b, **kw),
    ]
    for call in calls:
        assert _same(call("cpu"), call("reference"))


# --- what calls keep for later calls ------------------------------------------------------




@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("stride", [1, 2])
def test_short_rows_bitwise(dtype, stride):
    """Averages of rows 1 to 40 wide, so that the interior outputs of a row fill the widest
    registers, registers of half or a quarter their lanes, or none: the same bits as the
    reference, with values whose sums depend on their order."""
    rng = np.random.default_rng(stride)
    for width in range(1, 41):
        x = rng.standard_normal((2, 3, 5, width)).astype(dtype)
        for incl in (False, True):
            kw = dict(strides=stride, start_padding=1, end_padding=1, include_padding=incl)
            assert _same(dml.average_pooling(x, 3, backend="cpu", **kw),
                         dml.average_pooling(x, 3, backend="reference", **kw)), (width, incl)


@pytest.mark.parametrize("width", [1025, 2100, 3500])
def test_rows_of_several_tiles_bitwise(width):
    """Rows longer than a task's tile of outputs (1024): the first, middle and last tiles'
    counts are kept side by side, also across the rows at the other dimensions' borders,
    whose counts differ; averages and quantized averages, the same bits as the reference."""
    rng = np.random.default_rng(width)
    x = rng.standard_normal((1, 2, 4, width)).astype(np.float32)
    q = rng.integers(0, 256, x.shape).astype(np.uint8)
    for stride in (1, 2):
        for incl in (False, True):
            kw = dict(strides=stride, start_padding=1, end_padding=2, include_padding=incl)
            assert _same(dml.average_pooling(x, 3, backend="cpu", **kw),
                         dml.average_pooling(x, 3, backend="reference", **kw))
            qa = (q, 0.02, 100, 0.03, 90, 3)
            assert _same(dml.quantized_linear_average_pooling(*qa, backend="cpu", **kw),
                         dml.quantized_linear_average_pooling(*qa, backend="reference", **kw))


@st.composite
def long_rows(draw):
    """Rows long enough for the register paths (16 lanes, two vectors side by side), with
    windows, strides 1 and 2, dilations and paddings that leave borders on both sides."""
    k = draw(st.integers(1, 3))
    spatial = [draw(st.integers(1, 4)) for _ in range(k - 1)] + [draw(st.integers(16, 90))]
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(spatial)
    window = tuple(draw(st.integers(1, 4)) for _ in range(k))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(k))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(k))
    start = tuple(draw(st.integers(0, 2)) for _ in range(k))
    end = [draw(st.integers(0, 2)) for _ in range(k)]
    for i in range(k):
        end[i] += max(0, (window[i] - 1) * dil[i] + 1 - (spatial[i] + start[i] + end[i]))
    kw = dict(strides=strides, start_padding=start, end_padding=tuple(end), dilations=dil)
    return shape, window, kw


@settings(max_examples=examples(25))
@given(case=long_rows(), dtype=st.sampled_from([np.float32, np.float16, np.float64, np.int8,
                                                np.uint16, np.int64]),
       seed=st.integers(0, 2**31), layout=st.sampled_from(["c", "reversed", "stepped"]))
def test_register_paths_bitwise(case, dtype, seed, layout):
    """Max pooling (values, indices, the gradient's argmax) and the summing operators over
    rows long enough for the register paths, against the reference: same bits."""
    shape, window, kw = case
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        data = rng.integers(-3, 3, shape).astype(dtype)
        flat = data.reshape(-1)
        flat[rng.integers(0, flat.size, 3)] = [np.nan, -0.0, np.inf]
    else:
        data = rng.integers(0, 4, shape).astype(dtype)
    x = {"c": data, "reversed": np.ascontiguousarray(data[..., ::-1])[..., ::-1],
         "stepped": np.repeat(data, 2, axis=-1)[..., ::2]}[layout]
    for indices in (False, True):
        got = dml.max_pooling(x, window, output_indices=indices, backend="cpu", **kw)
        want = dml.max_pooling(x, window, output_indices=indices, backend="reference", **kw)
        for g, w in zip(*((got, want) if indices else ((got,), (want,)))):
            assert _same(g, w)
    if np.dtype(dtype).kind == "f":
        for incl in (False, True):
            assert _same(dml.average_pooling(x, window, include_padding=incl, backend="cpu",
                                             **kw),
                         dml.average_pooling(x, window, include_padding=incl,
                                             backend="reference", **kw))
        y = dml.max_pooling(x, window, backend="reference", **kw)
        dy = rng.standard_normal(y.shape).astype(dtype)
        assert _same(dml.max_pooling_grad(x, dy, window, backend="cpu", **kw),
                     dml.max_pooling_grad(x, dy, window, backend="reference", **kw))
    if dtype == np.int8:
        xq = (x.astype(np.int16) * 40 + 7).astype(np.uint8)
        args = (xq, 0.02, 100, 0.03, 90, window)
        assert _same(dml.quantized_linear_average_pooling(*args, backend="cpu", **kw),
                     dml.quantized_linear_average_pooling(*args, backend="reference", **kw))


@st.composite
def planes(draw):
    """2-D max pooling for the separable path: rows short and long (a block's rows read as
    one flat row), windows, strides, dilations and paddings of every kind, the rows' pitch
    equal to the row or longer (a cropped view), and odd pitches (the path's precondition
    fails for stride 2: the row walk takes them)."""
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 20)),
             draw(st.integers(1, 140)))
    window = (draw(st.integers(1, 5)), draw(st.integers(1, 6)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    dil = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    start = tuple(draw(st.integers(0, 3)) for _ in range(2))
    end = [draw(st.integers(0, 3)) for _ in range(2)]
    for i in range(2):
        end[i] += max(0, (window[i] - 1) * dil[i] + 1 - (shape[i + 2] + start[i] + end[i]))
    kw = dict(strides=strides, start_padding=start, end_padding=tuple(end), dilations=dil)
    return shape, window, kw, draw(st.integers(0, 3))


def _plane_data(shape, extra, dtype, rng, spread):
    """Input of `shape`, a view of rows `extra` elements longer: values in [-spread,
    spread) (floats, with a NaN, -0.0 and both infinities) or [0, spread + 1), so ties are
    common."""
    wide = shape[:3] + (shape[3] + extra,)
    if np.dtype(dtype).kind == "f":
        data = rng.integers(-spread, spread, wide).astype(dtype)
        flat = data.reshape(-1)
        flat[rng.integers(0, flat.size, 4)] = [np.nan, -0.0, np.inf, -np.inf]
    else:
        data = rng.integers(0, spread + 1, wide).astype(dtype)
    return data[..., :shape[3]]


@settings(max_examples=examples(40))
@given(case=planes(), dtype=st.sampled_from([np.float32, np.float16, np.float64, np.int8,
                                             np.uint8, np.int64]),
       seed=st.integers(0, 2**31), strided_out=st.booleans())
def test_separable_max_pooling_bitwise(case, dtype, seed, strided_out):
    """Max pooling values of 2-D windows (the separable path where it applies) against the
    reference: same bits, ties, -0.0 and NaNs included; out= of any strides keeps the
    elements it does not address."""
    shape, window, kw, extra = case
    rng = np.random.default_rng(seed)
    x = _plane_data(shape, extra, dtype, rng, 3)
    want = dml.max_pooling(x, window, backend="reference", **kw)
    if strided_out:
        store = np.full(want.shape[:3] + (2 * want.shape[3],), 7, dtype)
        out = store[..., ::2]
        dml.max_pooling(x, window, out=out, backend="cpu", **kw)
        assert _same(out, want)
        assert (store[..., 1::2] == 7).all()
    else:
        assert _same(dml.max_pooling(x, window, backend="cpu", **kw), want)


@settings(max_examples=examples(40))
@given(case=planes(), dtype=st.sampled_from([np.float32, np.float16, np.float64, np.int8,
                                             np.uint16, np.int32]),
       indices_dtype=st.sampled_from([np.uint32, np.uint64, np.int64]),
       seed=st.integers(0, 2**31), strided_out=st.booleans())
def test_separable_max_pooling_indices_bitwise(case, dtype, indices_dtype, seed, strided_out):
    """Max pooling values and flat indices of 2-D windows (the separable path's indexed form
    where it applies) against the reference: ties to the first in row-major order, -0.0 and
    NaNs, windows with no real element, columns whose every offset is padding; indices of
    every width, out= of any strides keeping what it does not address; and the gradient,
    which scatters through the same argmax."""
    shape, window, kw, extra = case
    rng = np.random.default_rng(seed)
    x = _plane_data(shape, extra, dtype, rng, 2)
    want = dml.max_pooling(x, window, output_indices=True, indices_dtype=indices_dtype,
                           backend="reference", **kw)
    if strided_out:
        ys = np.full(want[0].shape[:3] + (2 * want[0].shape[3],), 7, dtype)
        js = np.full(want[1].shape[:3] + (2 * want[1].shape[3],), 7, indices_dtype)
        dml.max_pooling(x, window, output_indices=True, indices_dtype=indices_dtype,
                        out=(ys[..., ::2], js[..., ::2]), backend="cpu", **kw)
        got = (ys[..., ::2], js[..., ::2])
        assert (ys[..., 1::2] == 7).all() and (js[..., 1::2] == 7).all()
    else:
        got = dml.max_pooling(x, window, output_indices=True, indices_dtype=indices_dtype,
                              backend="cpu", **kw)
    assert _same(got[0], want[0]) and _same(got[1], want[1])
    if np.dtype(dtype).kind == "f":
        dy = rng.standard_normal(want[0].shape).astype(dtype)
        assert _same(dml.max_pooling_grad(x, dy, window, backend="cpu", **kw),
                     dml.max_pooling_grad(x, dy, window, backend="reference", **kw))


@settings(max_examples=examples(30))
@given(case=planes(), dtype=st.sampled_from([np.uint8, np.int8]),
       out_dtype=st.sampled_from([np.uint8, np.int8]), seed=st.integers(0, 2**31),
       per_channel=st.booleans(), include_padding=st.booleans())
def test_separable_quantized_sums_bitwise(case, dtype, out_dtype, seed, per_channel,
                                          include_padding):
    """Quantized average pooling of 2-D windows (integer sums: the separable path where it
    applies) against the reference, per tensor and per channel, divisors with and without
    padding: same bits."""
    shape, window, kw, extra = case
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    data = rng.integers(info.min, int(info.max) + 1, shape[:3] + (shape[3] + extra,),
                        dtype=dtype)
    x = data[..., :shape[3]]
    c = shape[1]

    def zero_points(t):  # within the type's range
        return rng.integers(max(-20, np.iinfo(t).min), 20, (1, c, 1, 1)).astype(t)

    if per_channel:
        params = (rng.uniform(0.01, 0.1, (1, c, 1, 1)).astype(np.float32), zero_points(dtype),
                  rng.uniform(0.01, 0.1, (1, c, 1, 1)).astype(np.float32),
                  zero_points(out_dtype))
    else:
        params = (0.03, 7, 0.05, 3)
    args = (x, *params, window)
    kw = dict(kw, include_padding=include_padding, output_dtype=out_dtype)
    assert _same(dml.quantized_linear_average_pooling(*args, backend="cpu", **kw),
                 dml.quantized_linear_average_pooling(*args, backend="reference", **kw))


@pytest.mark.parametrize("pads", [(1, 1), (0, 2), (0, 0)])
def test_ordered_separable_meets_a_lone_nan(pads):
    """One NaN alone in a plane, at each place in turn, on the separable path's 3-wide
    stride-2 loop (`ordered_pairs3`): the NaN at the element a block's last vector moves on
    to (no other vector reads it) included, where a second NaN would have sent the block
    back to SPEC 3.4's order anyway; values and indices."""
    rng = np.random.default_rng(8)
    h, w, c = 9, 38, 41
    base = rng.standard_normal((1, c, h, w)).astype(np.float32)
    kw = dict(strides=2, start_padding=pads[0], end_padding=pads[1])
    for call in range(-(-h * w // c)):
        x = base.copy()
        for ch in range(c):
            place = (call * c + ch) % (h * w)
            x[0, ch, place // w, place % w] = np.nan
        _max_as_reference(x, 3, False, **kw)
        _max_as_reference(x, 3, True, **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stride, pads", [(2, (1, 1)), (1, (1, 1)), (2, (0, 2))])
@pytest.mark.parametrize("channels_last, width", [(False, 37), (False, 38), (True, 9)])
def test_ordered_max_pooling_meets_each_nan(dtype, stride, pads, channels_last, width):
    """Floats take one vmaxps per offset, exact where no NaN is met, and a block (separable
    path) or a register of outputs (register path, channels-last data) that met one is done
    again in SPEC 3.4's order (max_pool/README.md, "Ordered floats"): a NaN at every place
    of a plane (row edges, the element a stride-2 vector moves on to, the last of a row), a
    second NaN of other bits after it (the first wins) and signed zeros tied around it,
    against the reference bit for bit, values, indices and the gradient; the rest of the
    input, without a NaN, in the same call. An even width takes the separable path at stride 2 too (its rows a whole number of
    strides apart), the 3-wide window there its own loop (`ordered_pairs3`)."""
    bits = np.uint32 if dtype == np.float32 else np.uint64
    first = np.array(0x7FC00001 if dtype == np.float32 else 0x7FF8000000000001, bits)
    later = np.array(0xFFC00002 if dtype == np.float32 else 0xFFF8000000000002, bits)
    rng = np.random.default_rng(5)
    h, w, c = (9, width, 23) if not channels_last else (7, width, 37)
    base = rng.integers(-3, 3, (1, c, h, w)).astype(dtype)
    base[base == 0] = -0.0
    if channels_last:
        base = np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    kw = dict(strides=stride, start_padding=pads[0], end_padding=pads[1])
    # each call puts its NaNs in every channel but the first, at consecutive places: every
    # place of a plane in a few calls, and a channel without a NaN in each
    for call in range(-(-h * w // (c - 1))):
        x = base.copy(order="K")
        for ch in range(1, c):
            place = (call * (c - 1) + ch - 1) % (h * w)
            r, col = divmod(place, w)
            x[0, ch, r, col] = first.view(dtype)
            x[0, ch, (r + col) % h, (5 * col + 3) % w] = later.view(dtype)
            x[0, ch, r, (col + 1) % w] = 0.0
        got = dml.max_pooling(x, 3, backend="cpu", **kw)
        assert _same(got, dml.max_pooling(x, 3, backend="reference", **kw)), call
        _max_as_reference(x, 3, True, **kw)
        dy = np.arange(got.size, dtype=dtype).reshape(got.shape)
        assert _same(dml.max_pooling_grad(x, dy, 3, backend="cpu", **kw),
                     dml.max_pooling_grad(x, dy, 3, backend="reference", **kw)), call
