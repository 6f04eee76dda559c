"""PADDING_GRAD (SPEC 3.10): the backward of padding. Every backend, CPU level and kernel path
against a one-element-at-a-time oracle, bit for bit, at any rank, width, mode and layout; the
SPEC's example; PyTorch's own backward of ``F.pad`` (bit for bit where it adds in the same
order); the adjoint identity; Dask at any chunking; threads; the errors."""

import importlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmlops as dml
import oracles as O
from test_cpu_padding import layouts, memory_shape, pad_cases, view
from levels import examples, level_paths

cpu = importlib.import_module("dmlops.backends.cpu")
MODES = ["constant", "edge", "reflection", "symmetric", "wrap"]
FLOATS = [np.float16, np.float32, np.float64]


def _dy(seed, shape, dtype, nans=False):
    rng = np.random.default_rng(seed)
    dy = rng.standard_normal(shape).astype(dtype)
    if nans and dy.size > 1:
        dy.reshape(-1)[rng.integers(0, dy.size)] = np.nan
    return dy


def test_the_spec_example():
    """Input {1,1,1,3}, REFLECTION, StartPadding {0,0,0,2}, EndPadding {0,0,0,1}: sources
    [2,1,0,1,2,1], so dy = [1..6] gives [3, 2+4+6, 1+5]."""
    dy = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 1, 6)
    for backend in ("reference", "cpu"):
        dx = dml.padding_grad(dy, (1, 1, 1, 3), (0, 0, 0, 2), (0, 0, 0, 1), mode="REFLECTION",
                              backend=backend)
        assert dx.shape == (1, 1, 1, 3) and dx.tolist() == [[[[3.0, 12.0, 6.0]]]]


@pytest.fixture(params=level_paths(),
                ids=lambda p: f"{p[0]}-{p[1]}")
def cpu_path(request, monkeypatch):
    level, path = request.param
    cpu.set_level(level)
    monkeypatch.setattr(cpu, "FORCE_PLAIN", path == "plain")
    yield
    cpu.set_level(None)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=pad_cases(), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_every_path_is_the_oracle_bitwise(cpu_path, case, dtype, seed, data):
    """Ranks 1 to 5, pads several periods wide, a NaN among the values; dy and dx of any
    layout (transposed, reversed, stepped; dy broadcast), dx's neighbours untouched."""
    mode, shape, start, end = case
    out_shape = tuple(n + a + b for n, a, b in zip(shape, start, end))
    want = O.padding_grad(_dy(seed, out_shape, dtype, nans=seed % 4 == 0), shape, start,
                          MODES[mode])
    dyl = data.draw(layouts(len(shape), broadcast=True), label="dy layout")
    dxl = data.draw(layouts(len(shape), broadcast=False), label="dx layout")
    dy = view(np.zeros(memory_shape(out_shape, dyl), dtype), out_shape, dyl)
    if dy.flags.writeable:
        dy[...] = _dy(seed, out_shape, dtype, nans=seed % 4 == 0)
    else:       # (broadcast: one value along the zero strides)
        base = np.asarray(dy.base if dy.base is not None else dy)
        base[...] = 1.5
        dy = view(base, out_shape, dyl)
        want = O.padding_grad(np.ascontiguousarray(dy), shape, start, MODES[mode])
    for backend in ("reference", "cpu"):
        mem = O.random_bits(seed + 1, memory_shape(shape, dxl), dtype)
        before = mem.copy()
        dx = view(mem, shape, dxl)
        got = dml.padding_grad(dy, shape, start, end, mode=MODES[mode], out=dx, backend=backend)
        assert got is dx
        assert np.array_equal(O.bits(np.ascontiguousarray(dx)), O.bits(want)), backend
        untouched = np.ones(mem.shape, bool)
        view(untouched, shape, dxl)[...] = False
        assert np.array_equal(O.bits(mem)[untouched], O.bits(before)[untouched])


@pytest.mark.parametrize("mode", MODES)
def test_same_bits_at_every_thread_count(mode):
    """A large case the kernel shares out among threads: the same bits at 1, 2 and 3."""
    shape, start, end = (3, 70, 130), (1, 40, 300), (2, 90, 7)
    if mode == "reflection":
        start, end = (1, 40, 120), (1, 60, 7)
    out_shape = tuple(n + a + b for n, a, b in zip(shape, start, end))
    dy = _dy(7, out_shape, np.float32)
    results = []
    try:
        for n in (1, 2, 3):
            dml.set_num_threads(n)
            results.append(dml.padding_grad(dy, shape, start, end, mode=mode, backend="cpu"))
    finally:
        dml.set_num_threads(None)
    assert all(np.array_equal(O.bits(r), O.bits(results[0])) for r in results)
    want = dml.padding_grad(dy, shape, start, end, mode=mode, backend="reference")
    assert np.array_equal(O.bits(results[0]), O.bits(want))


@pytest.mark.parametrize("mode, torch_mode", [("reflection", "reflect"), ("edge", "replicate"),
                                              ("constant", "constant"), ("wrap", "circular")])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_torch_pads_backward(mode, torch_mode, rank):
    """PyTorch's backward of F.pad: bit for bit where it adds in ascending output order
    (reflect, replicate, constant), within float32 rounding where it does not (circular)."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    shape = (2, 3) + (9, 7, 5)[:rank]
    pads = [(3, 2), (1, 4), (2, 0)][:rank]
    x = torch.zeros(shape, dtype=torch.float32, requires_grad=True)
    flat = [p for pair in reversed(pads) for p in pair]     # (F.pad: last dimension first)
    y = F.pad(x, flat, mode=torch_mode)
    dy = torch.from_numpy(_dy(3, tuple(y.shape), np.float32))
    y.backward(dy)
    start = (0, 0) + tuple(a for a, _ in pads)
    end = (0, 0) + tuple(b for _, b in pads)
    got = dml.padding_grad(dy.numpy(), shape, start, end, mode=mode)
    if torch_mode == "circular":
        np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-6, atol=1e-6)
    else:
        assert np.array_equal(O.bits(got), O.bits(x.grad.numpy()))


@pytest.mark.parametrize("mode", MODES)
def test_the_adjoint_of_padding(mode):
    """<padding(x), dy> = <x, padding_grad(dy)> (float64, wide pads)."""
    shape, start, end = (4, 3, 5), (9, 0, 2), (1, 7, 11)
    x = _dy(1, shape, np.float64)
    y = dml.padding(x, start, end, mode=mode, value=0)
    dy = _dy(2, y.shape, np.float64)
    dx = dml.padding_grad(dy, shape, start, end, mode=mode)
    assert np.isclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-12)


def test_float16_rounds_once():
    """float16 sums in float32 and rounds once: 2048 + 1 + 1 (each step would round the 1s
    away in float16) gives 2050."""
    dy = np.array([1, 1, 2048, 1, 1], np.float16)      # edge: every output onto one input
    dx = dml.padding_grad(dy, [1], [2], [2], mode="edge")
    assert dx.dtype == np.float16 and dx.tolist() == [2052.0]


def test_an_empty_input_dimension():
    """Only constant padding pads an empty dimension: its gradient is empty."""
    dx = dml.padding_grad(np.ones((3, 4), np.float32), (0, 4), (1, 0), (2, 0))
    assert dx.shape == (0, 4)


@pytest.mark.parametrize("chunks", [(2, 5, 3), (1, 1, 4), (5, 17, 30)])
@pytest.mark.parametrize("mode", MODES)
def test_dask_at_any_chunking(mode, chunks):
    da = pytest.importorskip("dask.array")
    shape, start, end = (3, 4, 5), (2, 9, 0), (1, 3, 12)
    out_shape = tuple(n + a + b for n, a, b in zip(shape, start, end))
    dy = _dy(5, out_shape, np.float32)
    want = dml.padding_grad(dy, shape, start, end, mode=mode)
    lazy = dml.padding_grad(da.from_array(dy, chunks=chunks), shape, start, end, mode=mode)
    assert lazy.shape == shape
    assert np.array_equal(O.bits(lazy.compute()), O.bits(want))
    again = dml.padding_grad(da.from_array(dy, chunks=chunks), shape, start, end, mode=mode,
                             chunks=2)
    assert again.chunks[0] == (2, 1) and np.array_equal(O.bits(again.compute()), O.bits(want))


@pytest.mark.parametrize("call, error, words", [
    (lambda: dml.padding_grad(np.ones(5, np.int32), [3], [1], [1]), dml.UnsupportedError,
     "padding_grad: dy has data type INT32"),
    (lambda: dml.padding_grad(np.ones(5, np.float32), [4], [1], [1]), dml.InvalidArgumentError,
     "dy has shape (5,); expected the forward output's (6,)"),
    (lambda: dml.padding_grad(np.ones(5, np.float32), [3, 1], [1], [1]),
     dml.InvalidArgumentError, "input_sizes has 2 values [3, 1]; expected 1"),
    (lambda: dml.padding_grad(np.ones(3, np.float32), [1], [1], [1], mode="reflection"),
     dml.InvalidArgumentError, "REFLECTION cannot pad dimension 0 of size 1"),
    (lambda: dml.padding_grad(np.ones(3, np.float32), [3], [-1], [1]),
     dml.InvalidArgumentError, "start_padding[0] = -1 must not be negative"),
    (lambda: dml.padding_grad(np.ones(3, np.float32), [3], [0], [0], mode="mirror"),
     dml.InvalidArgumentError, "mode"),
    (lambda: dml.padding_grad(np.ones(2, np.float32), [0], [1], [1], mode="edge"),
     dml.InvalidArgumentError, "only constant padding can pad an empty dimension"),
    (lambda: dml.padding_grad(np.ones(3, np.float32), [3], [0], [0],
                              out=np.ones(3, np.float64)), dml.UnsupportedError, "dtype"),
])
def test_errors_name_the_field(call, error, words):
    with pytest.raises(error) as e:
        call()
    assert words in str(e.value), str(e.value)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_the_source_map_is_the_spec_formula(mode, n):
    """padding.source_map (the Dask paths' index map) against the oracle's SPEC 3.9 formula,
    pads several periods wide."""
    from dmlops.dtypes import padding_mode
    from dmlops.padding import source_map
    if n == 0 and mode != "constant" or n == 1 and mode == "reflection":
        return      # (no such padding: validation refuses it)
    start, out = 13, n + 13 + 11
    src, inside = source_map(padding_mode(mode), n, start, out)
    for o in range(out):
        want = O.pad_index(o - start, n, mode)
        assert bool(inside[o]) == (0 <= o - start < n)
        if want is not None:
            assert src[o] == want, (o, mode, n)
