"""Dask arrays through the functions and ``execute`` (SPEC 6, issue 29): a lazy result,
validated at the call with the in-memory errors, computed only when asked, bit for bit the
in-memory result whatever the chunking: padding (every mode, pads several periods wider than
the input, every data type's random bits, NaN payloads included), average, max (global flat
indices), Lp and quantized pooling, both gradients, unpooling, ROI pooling; chunks of one
element up."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops as dml
import oracles as O

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

MODES = ["constant", "edge", "reflection", "symmetric", "wrap"]


@st.composite
def pad_cases(draw):
    mode = draw(st.sampled_from(MODES))
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 6 if rank <= 2 else 3)) for _ in range(rank)]
    start, end, chunks = [], [], []
    for n in shape:
        if mode == "reflection" and n == 1:
            start.append(0)         # (SPEC 3.9: nothing to mirror; refused in memory too)
            end.append(0)
        else:
            pad = st.sampled_from([0, 1, n]) | st.integers(0, 3 * 2 * n + 2)
            start.append(draw(pad))
            end.append(draw(pad))
        # a chunking of the dimension: pieces of 1 to n elements
        sizes, left = [], n
        while left:
            sizes.append(draw(st.integers(1, left)))
            left -= sizes[-1]
        chunks.append(tuple(sizes))
    dtype = draw(st.sampled_from(O.ALL_DTYPES))
    out_chunks = draw(st.sampled_from([None, None, 1, 3, "auto"]))
    return mode, tuple(shape), tuple(start), tuple(end), tuple(chunks), dtype, out_chunks


@settings(max_examples=25)
@given(case=pad_cases(), seed=st.integers(0, 2**32 - 1))
def test_padding_of_dask_arrays_is_the_in_memory_result(case, seed):
    mode, shape, start, end, chunks, dtype, out_chunks = case
    x = O.random_bits(seed, shape, dtype)
    value = O.random_bits(seed + 1, (), dtype)[()]
    want = dml.padding(x, start, end, mode=mode, value=value)
    y = dml.padding(da.from_array(x, chunks=chunks), start, end, mode=mode, value=value,
                    chunks=out_chunks)
    assert isinstance(y, da.Array) and y.shape == want.shape and y.dtype == want.dtype
    got = y.compute(scheduler="synchronous")
    assert np.array_equal(O.bits(got), O.bits(want))
    if out_chunks is None:
        # the input's chunks, the pads in pieces of its largest chunk
        for d, cs in enumerate(chunks):
            big = max(cs)
            pieces = lambda n: (big,) * (n // big) + ((n % big,) if n % big else ())
            assert y.chunks[d] == pieces(start[d]) + cs + pieces(end[d])


def test_default_chunks_follow_the_input():
    x = da.arange(10, chunks=4)
    y = dml.padding(x, 9, 2, mode="reflection")
    assert y.chunks == ((4, 4, 1, 4, 4, 2, 2),)
    assert y.compute().tolist() == dml.padding(np.arange(10), 9, 2, mode="reflection").tolist()


def test_nothing_is_computed_until_asked():
    """The call validates and plans, it does not compute: an input whose computation fails
    fails only at compute()."""
    def broken():
        raise RuntimeError("computed")
    x = da.from_delayed(dask.delayed(broken)(), (3, 4), np.float32)
    y = dml.padding(x, 1, 2, mode="symmetric")
    assert y.shape == (6, 7)
    with pytest.raises(RuntimeError, match="computed"):
        y.compute(scheduler="synchronous")


@pytest.mark.parametrize("kw, error, words", [
    (dict(start_padding=1, end_padding=1, mode="bogus"), dml.InvalidArgumentError,
     "not a padding mode"),
    (dict(start_padding=(1, 2, 3), end_padding=1), dml.InvalidArgumentError, "padding"),
    (dict(start_padding=-1, end_padding=0), dml.InvalidArgumentError, "start_padding"),
    (dict(start_padding=1, end_padding=1, backend="bogus"), dml.UnsupportedError, "bogus"),
])
def test_errors_at_the_call_are_the_in_memory_ones(kw, error, words):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(error, match=words) as memory:
        dml.padding(x, **kw)
    with pytest.raises(error) as lazy:
        dml.padding(da.from_array(x, chunks=1), **kw)
    assert str(lazy.value) == str(memory.value)


def test_unsupported_types_and_arguments():
    x = da.ones((2, 3), dtype=bool, chunks=1)
    with pytest.raises(dml.UnsupportedError, match="bool"):
        dml.padding(x, 1, 1)
    with pytest.raises(dml.UnsupportedError, match="out ="):
        dml.padding(da.ones((2, 3), chunks=1), 1, 1, out=np.empty((4, 5)))
    with pytest.raises(dml.InvalidArgumentError, match="chunks = 2 is for Dask inputs"):
        dml.padding(np.ones((2, 3)), 1, 1, chunks=2)
    with pytest.raises(dml.InvalidArgumentError, match="cannot chunk"):
        dml.padding(da.ones((2, 3), chunks=1), 1, 1, chunks=(1, 2, 3))
    unknown = da.ones(6, chunks=2)[da.ones(6, chunks=2) > 0]
    with pytest.raises(dml.InvalidArgumentError, match="compute_chunk_sizes"):
        dml.padding(unknown, 1, 1)
    # ROI boxes and quantization parameters stay NumPy
    x4 = da.ones((1, 2, 4, 4), np.float32, chunks=2)
    with pytest.raises(dml.UnsupportedError, match="rois is a Dask array.*stay NumPy"):
        dml.roi_pooling(x4, da.zeros((1, 5), np.float32), spatial_scale=1, pooled_size=2)
    with pytest.raises(dml.UnsupportedError, match="input_scale is a Dask array"):
        dml.quantized_linear_average_pooling(x4.astype(np.uint8), da.ones(()), 0, 1.0, 0, 2)
    with pytest.raises(dml.UnsupportedError, match="out ="):
        dml.max_pooling(da.ones((1, 1, 4, 4), chunks=2), 2, out=np.empty((1, 1, 3, 3)))
    with pytest.raises(dml.InvalidArgumentError, match="chunks = 2 is for Dask inputs"):
        dml.average_pooling(np.ones((1, 1, 4, 4)), 2, chunks=2)


def test_empty_dimensions_take_constant_padding_only():
    x = da.ones((0, 3), dtype=np.int8, chunks=1)
    y = dml.padding(x, (1, 0), (1, 0), value=5)
    assert y.compute().tolist() == [[5, 5, 5], [5, 5, 5]]
    with pytest.raises(dml.InvalidArgumentError, match="only constant padding"):
        dml.padding(x, (1, 0), (1, 0), mode="edge")


POOL_OPS = ["average", "average_incl", "max", "max_indices", "lp", "quantized"]


@st.composite
def pool_cases(draw, ops=POOL_OPS):
    op = draw(st.sampled_from(ops))
    k = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 3))]
    window, strides, dil, start, end, sizes, chunks = [], [], [], [], [], [], []
    for _ in range(k):
        n = draw(st.integers(1, 9 if k == 1 else 6))
        w, d, s = draw(st.integers(1, 4)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
        eff = (w - 1) * d + 1
        a, b = draw(st.integers(0, eff + 2)), draw(st.integers(0, eff + 2))
        b += max(0, eff - (n + a + b))
        f = (n + a + b - eff) // s + 1
        shape.append(n)
        window.append(w), strides.append(s), dil.append(d), start.append(a), end.append(b)
        sizes.append(f + draw(st.sampled_from([0, 0, 1])))
    for n in shape:
        parts, left = [], n
        while left:
            parts.append(draw(st.integers(1, left)))
            left -= parts[-1]
        chunks.append(tuple(parts))
    floats = [np.float32, np.float16, np.float64]
    dtype = draw(st.sampled_from([np.uint8, np.int8] if op == "quantized" else
                                 O.ALL_DTYPES if op.startswith("max") else floats))
    kw = dict(strides=strides, start_padding=start, end_padding=end, dilations=dil,
              output_sizes=sizes)
    out_chunks = draw(st.sampled_from([None, None, 2, "auto"]))
    return op, tuple(shape), window, kw, tuple(chunks), dtype, out_chunks


def _quantization(c, dtype, seed):
    """Per-channel or per-tensor scales and zero points of ``dtype`` for C channels."""
    rng = np.random.default_rng(seed)
    shape = (1, c) + (1,) * 3 if seed % 2 else ()
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    zp = lambda: rng.integers(lo, hi + 1, shape[:2]).astype(dtype).reshape(shape[:2] + (1,) * 2) \
        if shape else dtype(rng.integers(lo, hi + 1))
    scale = lambda: rng.uniform(0.01, 3.0, shape[:2]).astype(np.float32) if shape else 0.7
    return scale(), zp(), scale(), zp()


def _pool_call(op, x, window, kw, **more):
    if op == "quantized":
        rank = len(x.shape)
        q = [a.reshape(a.shape[:2] + (1,) * (rank - 2)) if isinstance(a, np.ndarray) else a
             for a in _quantization(x.shape[1], np.dtype(x.dtype).type, kw["seed"])]
        seed = kw["seed"]
        kw = {k: v for k, v in kw.items() if k not in ("seed", "output_sizes")}
        return dml.quantized_linear_average_pooling(x, *q, window, include_padding=seed & 2 > 0,
                                                    **kw, **more)
    kw = {k: v for k, v in kw.items() if k != "seed"}
    if op.startswith("average"):
        return dml.average_pooling(x, window, include_padding=op == "average_incl", **kw, **more)
    if op == "lp":
        return dml.lp_pooling(x, window, p=2, **kw, **more)
    return dml.max_pooling(x, window, output_indices=op == "max_indices", **kw, **more)


@settings(max_examples=80)
@given(case=pool_cases(), seed=st.integers(0, 2**32 - 1))
def test_pooling_of_dask_arrays_is_the_in_memory_result(case, seed):
    """Average (real or padded divisors), max (with global flat indices), Lp and quantized
    (per tensor or per channel) pooling of Dask arrays: windows, dilations, asymmetric pads and F + 1 outputs straddling chunks of
    one element up, windows that read no real element: the in-memory bits."""
    op, shape, window, kw, chunks, dtype, out_chunks = case
    kw = dict(kw, seed=seed)
    if np.dtype(dtype).kind == "f":
        x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    else:
        x = O.random_bits(seed, shape, dtype)
    try:
        want = _pool_call(op, x, window, kw)
    except dml.DmlError as e:      # the same refusal, at the call
        with pytest.raises(type(e)) as lazy:
            _pool_call(op, da.from_array(x, chunks=chunks), window, kw)
        assert str(lazy.value) == str(e)
        return
    got = _pool_call(op, da.from_array(x, chunks=chunks), window, kw, chunks=out_chunks)
    want, got = (want, got) if op == "max_indices" else ((want,), (got,))
    for g, w in zip(got, want):
        assert isinstance(g, da.Array) and g.shape == w.shape and g.dtype == w.dtype
        assert np.array_equal(O.bits(g.compute(scheduler="synchronous")), O.bits(w))


def test_pooling_output_chunks_follow_the_input():
    x = da.zeros((1, 1, 100), np.float32, chunks=(1, 1, 30))
    y = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1)
    # cut where the input is, divided by the stride: regular chunks give regular chunks
    assert y.chunks == ((1,), (1,), (15, 15, 15, 5))
    z = dml.average_pooling(da.zeros((1, 1, 64, 128), np.float32, chunks=(1, 1, 16, 32)), 3,
                            strides=2, start_padding=1)
    assert z.chunks[2:] == ((8,) * 4, (16,) * 4)


def test_global_indices_of_a_large_dask_input_are_uint64():
    """More than 2^32 - 1 elements (never materialised: zeros, one block computed): the
    indices default to UINT64, as in memory, and are flat over the whole tensor."""
    x = da.zeros((1, 2, 2**31 + 8), np.int8, chunks=(1, 1, 2**24))
    y, i = dml.max_pooling(x, 2, strides=2, output_indices=True)
    assert i.dtype == np.uint64
    assert i[0, 1, :3].compute().tolist() == [2**31 + 8, 2**31 + 10, 2**31 + 12]


def test_kernels_inside_dask_tasks_run_on_the_task_thread(monkeypatch):
    """Inside a Dask task a kernel runs on the task's thread alone (no pool of the kernels'
    own beside the scheduler's threads); the in-memory call keeps its threads."""
    from dmlops import threads
    from dmlops.backends import cpu
    seen = []

    def spy():          # (the count each kernel call is given)
        seen.append(threads.get_num_threads())
        return seen[-1]
    monkeypatch.setattr(cpu, "get_num_threads", spy)
    dml.set_num_threads(2)
    try:
        x = np.ones((1, 1, 40, 40), np.float32)
        dml.average_pooling(x, 3, backend="cpu")
        y = dml.average_pooling(da.from_array(x, chunks=10), 3, backend="cpu")
        y.compute(scheduler="threads")
    finally:
        dml.set_num_threads(None)
    assert seen[0] == 2 and len(seen) > 2 and set(seen[1:]) == {1}


def test_on_a_local_cluster_of_two_worker_processes():
    """A real engine: a dask.distributed LocalCluster of two worker processes, started and
    stopped here, computes max pooling with global indices, averages with padded divisors
    and a wide reflection pad: the in-memory bits."""
    distributed = pytest.importorskip("distributed")
    x = np.random.default_rng(5).standard_normal((2, 3, 37, 41)).astype(np.float32)
    xd = da.from_array(x, chunks=(1, 3, 20, 21))
    pool = dict(strides=2, start_padding=1, end_padding=2)
    pads = ((0, 0, 5, 60), (0, 0, 7, 2))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        y, i, a, p = client.compute(
            [*dml.max_pooling(xd, 3, output_indices=True, **pool),
             dml.average_pooling(xd, 2, include_padding=True, **pool),
             dml.padding(xd, *pads, mode="reflection")], sync=True)
    want_y, want_i = dml.max_pooling(x, 3, output_indices=True, **pool)
    assert y.tobytes() == want_y.tobytes() and np.array_equal(i, want_i)
    assert a.tobytes() == dml.average_pooling(x, 2, include_padding=True, **pool).tobytes()
    assert p.tobytes() == dml.padding(x, *pads, mode="reflection").tobytes()


def test_pooling_an_empty_batch_gives_empty_outputs():
    """N or C 0: an empty result, as in memory (SPEC 7), lazy."""
    x = da.ones((0, 2, 4), np.float32, chunks=1)
    y, i = dml.max_pooling(x, 2, output_indices=True)
    want, want_i = dml.max_pooling(np.ones((0, 2, 4), np.float32), 2, output_indices=True)
    assert isinstance(y, da.Array) and y.shape == want.shape and i.dtype == want_i.dtype
    assert dml.average_pooling(da.ones((2, 0, 4, 4), chunks=1), 3).compute().shape == \
        (2, 0, 2, 2)


@settings(max_examples=50)
@given(case=pool_cases(ops=["max", "average", "average_incl"]), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_gradients_of_dask_arrays_are_the_in_memory_result(case, seed, data):
    """Both gradients, planned from the input side (each block of dx gathers the outputs
    whose windows touch it), on every chunking of x and of dy: the in-memory bits, ties
    and windows of no real element included."""
    op, shape, window, kw, chunks, _, out_chunks = case
    dtype = data.draw(st.sampled_from([np.float32, np.float16, np.float64]))
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(dtype)        # (ties)
    kw = dict(kw)
    sizes = kw.pop("output_sizes")
    try:
        y = dml.max_pooling(x, window, output_sizes=sizes, **kw)
    except dml.DmlError:
        return
    dy = rng.standard_normal(y.shape).astype(dtype)
    dy_chunks = tuple(data.draw(st.integers(1, max(n, 1))) for n in dy.shape)
    if op == "max":
        want = dml.max_pooling_grad(x, dy, window, **kw)
        got = dml.max_pooling_grad(da.from_array(x, chunks=chunks),
                                   da.from_array(dy, chunks=dy_chunks), window, **kw,
                                   chunks=out_chunks)
    else:
        args = dict(kw, input_sizes=shape[2:], include_padding=op == "average_incl")
        try:
            want = dml.average_pooling_grad(dy, window, **args)
        except dml.DmlError as e:
            with pytest.raises(type(e)) as lazy:
                dml.average_pooling_grad(da.from_array(dy, chunks=dy_chunks), window, **args)
            assert str(lazy.value) == str(e)
            return
        got = dml.average_pooling_grad(da.from_array(dy, chunks=dy_chunks), window, **args,
                                       chunks=out_chunks)
    assert isinstance(got, da.Array) and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(O.bits(got.compute(scheduler="synchronous")), O.bits(want))


@st.composite
def unpool_cases(draw):
    k = draw(st.integers(1, 2))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + \
        tuple(draw(st.integers(1, 5)) for _ in range(k))
    out = shape[:2] + tuple(n * draw(st.integers(1, 3)) for n in shape[2:])
    chunk = lambda n: draw(st.integers(1, n))
    return (shape, out, tuple(chunk(n) for n in shape), tuple(chunk(n) for n in shape),
            draw(st.sampled_from([None, 2, tuple(chunk(n) for n in out)])),
            draw(st.sampled_from([np.uint32, np.uint64, np.int64])),
            draw(st.sampled_from(O.ALL_DTYPES)))


@settings(max_examples=40)
@given(case=unpool_cases(), seed=st.integers(0, 2**32 - 1))
def test_unpooling_of_dask_arrays_is_the_in_memory_result(case, seed):
    """Max unpooling at arbitrary indices (duplicates: the later in flat input order wins;
    "no element" ones skipped) with x, the indices and the output chunked apart."""
    shape, out, x_chunks, i_chunks, out_chunks, idt, dtype = case
    rng = np.random.default_rng(seed)
    x = O.random_bits(seed, shape, dtype)
    count = int(np.prod(out))
    # few distinct places: many duplicates
    idx = rng.integers(0, max(1, count // 3), shape).astype(idt)
    idx[rng.random(shape) < 0.2] = np.iinfo(idt).max if idt != np.int64 else -1
    want = dml.max_unpooling(x, idx, out)
    got = dml.max_unpooling(da.from_array(x, chunks=x_chunks),
                            da.from_array(idx, chunks=i_chunks), out, chunks=out_chunks)
    assert isinstance(got, da.Array) and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(O.bits(got.compute(scheduler="synchronous")), O.bits(want))


def test_unpooling_an_index_outside_the_output_is_the_in_memory_error():
    x = np.ones((1, 2, 3, 3), np.float32)
    idx = np.zeros(x.shape, np.uint32)
    idx[0, 1, 2, 1] = 2 * 6 * 6
    with pytest.raises(dml.InvalidArgumentError) as memory:
        dml.max_unpooling(x, idx, (1, 2, 6, 6))
    y = dml.max_unpooling(da.from_array(x, chunks=1), da.from_array(idx, chunks=2),
                          (1, 2, 6, 6))
    with pytest.raises(dml.InvalidArgumentError) as lazy:
        y.compute(scheduler="synchronous")
    assert str(lazy.value) == str(memory.value)
    assert "indices[0, 1, 2, 1] = 72" in str(memory.value)
    # NumPy indices beside a Dask input: checked at the call, as in memory (issue 43)
    with pytest.raises(dml.InvalidArgumentError) as at_call:
        dml.max_unpooling(da.from_array(x, chunks=1), idx, (1, 2, 6, 6))
    assert str(at_call.value) == str(memory.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("chunks", [1, 2, (2, 3, 5, 4), -1])
def test_roi_pooling_of_dask_arrays_is_the_in_memory_result(dtype, chunks):
    """Boxes inside, across and outside the input, inverted and fractional ones, several
    per image, any order: the in-memory bits."""
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 6, (3, 5, 13, 11)).astype(dtype)
    rois = np.array([[2, 1, 1, 5, 7], [0, -3, -2, 20, 4], [2, 8, 9, 3, 1],
                     [1, 30, 30, 40, 40], [0, 2.6, 3.4, 6.5, 8.5], [2, 0, 0, 10, 12]], dtype)
    want = dml.roi_pooling(x, rois, spatial_scale=0.9, pooled_size=(3, 2))
    got = dml.roi_pooling(da.from_array(x, chunks=chunks), rois, spatial_scale=0.9,
                          pooled_size=(3, 2))
    assert got.chunks[:2] == ((6,), da.from_array(x, chunks=chunks).chunks[1])
    assert np.array_equal(O.bits(got.compute(scheduler="synchronous")), O.bits(want))
    # the boxes are checked at the call
    with pytest.raises(dml.InvalidArgumentError, match="batch index"):
        dml.roi_pooling(da.from_array(x, chunks=chunks), rois + 3, spatial_scale=1,
                        pooled_size=2)


def _descs():
    t = dml.TensorDesc
    f32, u32 = "FLOAT32", "UINT32"
    pool = dict(strides=(2, 2), window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1))
    yield dml.MaxPooling2Desc(input_tensor=t(f32, (2, 3, 9, 8)),
                              output_tensor=t(f32, (2, 3, 5, 4)),
                              output_indices_tensor=t(u32, (2, 3, 5, 4)),
                              dilations=(1, 1), **pool), ("input_tensor",)
    yield dml.AveragePooling1Desc(input_tensor=t(f32, (2, 3, 9, 8)),
                                  output_tensor=t(f32, (2, 3, 5, 4)), dilations=(1, 1),
                                  include_padding=True, **pool), ("input_tensor",)
    yield dml.MaxPoolingGradDesc(input_tensor=t(f32, (2, 3, 9, 8)),
                                 input_gradient_tensor=t(f32, (2, 3, 5, 4)),
                                 output_gradient_tensor=t(f32, (2, 3, 9, 8)), dilations=(1, 1),
                                 **pool), ("input_tensor", "input_gradient_tensor")
    yield dml.AveragePoolingGradDesc(input_gradient_tensor=t(f32, (2, 3, 5, 4)),
                                     output_gradient_tensor=t(f32, (2, 3, 9, 8)),
                                     **pool), ("input_gradient_tensor",)
    yield dml.Padding1Desc(input_tensor=t(f32, (2, 3, 9, 8)),
                           output_tensor=t(f32, (2, 3, 30, 9)), padding_mode="SYMMETRIC",
                           start_padding=(0, 0, 20, 0), end_padding=(0, 0, 1, 1)), \
        ("input_tensor",)


@pytest.mark.parametrize("desc, lazy", list(_descs()), ids=lambda v: getattr(v, "op", None))
def test_execute_takes_dask_arrays(desc, lazy):
    """CompiledOperator.execute with Dask inputs (some or all of them): lazy outputs, the
    in-memory bits."""
    op = dml.compile_operator(desc)
    rng = np.random.default_rng(0)
    arrays = {f: rng.integers(-4, 5, getattr(desc, f).sizes).astype(np.float32) for f in lazy}
    want = op.execute(**arrays)
    got = op.execute(**{f: da.from_array(a, chunks=2) if f == lazy[0] else a
                        for f, a in arrays.items()})
    assert set(got) == set(want)
    for f in want:
        assert isinstance(got[f], da.Array)
        assert np.array_equal(O.bits(got[f].compute(scheduler="synchronous")), O.bits(want[f]))
    with pytest.raises(dml.UnsupportedError, match="lazy"):
        op.execute(**{f: da.from_array(a) for f, a in arrays.items()},
                   **{f: np.empty(w.shape, w.dtype) for f, w in want.items()})


def test_execute_takes_dask_arrays_beside_numpy_parameters():
    """execute of quantized pooling (scales and zero points NumPy, per channel), unpooling
    (indices NumPy) and ROI pooling (boxes NumPy) with a Dask input: the in-memory bits;
    Dask boxes are refused."""
    t = dml.TensorDesc
    rng = np.random.default_rng(2)
    q = dml.QuantizedLinearAveragePoolingDesc(
        input_tensor=t("UINT8", (1, 3, 9, 8)), input_scale_tensor=t("FLOAT32", (1, 3, 1, 1)),
        input_zero_point_tensor=t("UINT8", (1, 3, 1, 1)),
        output_scale_tensor=t("FLOAT32", (1, 1, 1, 1)), output_tensor=t("UINT8", (1, 3, 5, 4)),
        strides=(2, 2), window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1))
    x = rng.integers(0, 256, (1, 3, 9, 8)).astype(np.uint8)
    params = dict(input_scale_tensor=np.array([0.5, 1.5, 0.1], np.float32).reshape(1, 3, 1, 1),
                  input_zero_point_tensor=np.array([3, 200, 0], np.uint8).reshape(1, 3, 1, 1),
                  output_scale_tensor=np.full((1, 1, 1, 1), 0.7, np.float32))
    u = dml.MaxUnpoolingDesc(input_tensor=t("FLOAT32", (1, 3, 5, 4)),
                             indices_tensor=t("UINT32", (1, 3, 5, 4)),
                             output_tensor=t("FLOAT32", (1, 3, 9, 8)))
    xf = rng.standard_normal((1, 3, 5, 4)).astype(np.float32)
    idx = rng.integers(0, 3 * 72, (1, 3, 5, 4)).astype(np.uint32)
    r = dml.RoiPoolingDesc(input_tensor=t("FLOAT32", (2, 3, 9, 8)),
                           roi_tensor=t("FLOAT32", (1, 1, 2, 5)),
                           output_tensor=t("FLOAT32", (2, 3, 2, 2)), pooled_size=(2, 2))
    xr = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    rois = np.array([[1, 0, 0, 4, 5], [0, 2, 3, 7, 8]], np.float32).reshape(1, 1, 2, 5)
    for desc, data, other in ((q, x, params), (u, xf, dict(indices_tensor=idx)),
                              (r, xr, dict(roi_tensor=rois))):
        op = dml.compile_operator(desc)
        want = op.execute(input_tensor=data, **other)["output_tensor"]
        got = op.execute(input_tensor=da.from_array(data, chunks=2), **other)["output_tensor"]
        assert isinstance(got, da.Array)
        assert got.compute(scheduler="synchronous").tobytes() == want.tobytes()
    with pytest.raises(dml.UnsupportedError, match="stay NumPy"):
        dml.compile_operator(r).execute(input_tensor=da.from_array(xr),
                                        roi_tensor=da.from_array(rois))


def test_empty_outputs_decide_as_in_memory():
    """An empty output is made at once, as in memory, where no kernel runs (ROI pooling of
    no channels reads no box); a non-empty one over an empty batch still checks its boxes
    (ROI pooling over N = 0 refuses batch index 0, as in memory)."""
    x = np.zeros((0, 3, 4, 4), np.float32)
    rois = np.array([[0, 0, 0, 1, 1]], np.float32)
    kw = dict(spatial_scale=1.0, pooled_size=2)
    with pytest.raises(dml.InvalidArgumentError) as memory:
        dml.roi_pooling(x, rois, **kw)
    with pytest.raises(dml.InvalidArgumentError) as lazy:
        dml.roi_pooling(da.from_array(x), rois, **kw)
    assert str(lazy.value) == str(memory.value)
    far = np.array([[5, 0, 0, 1, 1]], np.float32)       # (no image 5)
    assert dml.roi_pooling(np.zeros((2, 0, 4, 4), np.float32), far, **kw).shape == (1, 0, 2, 2)
    y = dml.roi_pooling(da.zeros((2, 0, 4, 4), dtype=np.float32), far, **kw)
    assert y.shape == (1, 0, 2, 2) and y.compute().shape == (1, 0, 2, 2)


class _CountedGraph(dict):
    """An input's task graph that counts how often its keys are walked through."""
    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


@pytest.mark.parametrize("op", ["average", "max_indices", "grad", "unpool", "roi"])
def test_a_lazy_result_is_built_without_walking_its_input_graph_per_block(op):
    """Building a lazy result references its input's graph; walking it once per output block
    (as dask.delayed does with each Delayed argument) made building quadratic in the blocks:
    a 64 GiB volume in 64^3 chunks took an hour a pyramid level before computing anything."""
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    base = da.from_array(np.arange(2 * 3 * 24 * 20, dtype=np.float32).reshape(2, 3, 24, 20),
                         chunks=(1, 1, 4, 5))                  # 144 blocks
    layer = _CountedGraph(base.__dask_graph__().to_dict())
    x = da.Array(HighLevelGraph({base.name: MaterializedLayer(layer)}, {base.name: set()}),
                 base.name, base.chunks, dtype=base.dtype)
    _CountedGraph.walks = 0
    if op == "average":
        y = dml.average_pooling(x, 3, strides=2, start_padding=1, end_padding=1)
    elif op == "max_indices":
        y = dml.max_pooling(x, 2, strides=2, output_indices=True)[1]
    elif op == "grad":
        y = dml.average_pooling_grad(x, 2, input_sizes=(2, 3, 48, 40), strides=2)
    elif op == "unpool":
        idx = (np.arange(x.size, dtype=np.uint32) * 2).reshape(x.shape)
        y = dml.max_unpooling(x, idx, (2, 3, 48, 40))
    else:
        boxes = np.array([[0, 0, 0, 9, 9], [1, 2, 3, 19, 23]], dtype=np.float32)
        y = dml.roi_pooling(x, boxes, spatial_scale=1.0, pooled_size=(2, 2))
    assert _CountedGraph.walks <= 2, _CountedGraph.walks
    if op == "average":     # (the others' values: the tests above, at any chunking)
        want = dml.average_pooling(base.compute(), 3, strides=2, start_padding=1, end_padding=1)
        assert np.array_equal(y.compute(), want)
