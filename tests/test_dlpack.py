"""Arrays of other libraries (issue 30, part 3): a PyTorch tensor (contiguous, a strided
view, channels-last) is read in place through DLPack, and the results come back as tensors
sharing their memory; a tensor given as ``out`` is written in place. Tensors that need a
gradient or cannot be read in place are a clear UnsupportedError."""

import numpy as np
import pytest

import dmlops as dml

torch = pytest.importorskip("torch")


def _layouts():
    base = torch.arange(2 * 3 * 9 * 8, dtype=torch.float32).reshape(2, 3, 9, 8)
    base = (base * 7919 % 101 - 50) / 4     # (ties and both signs)
    yield "contiguous", base
    yield "channels-last", base.to(memory_format=torch.channels_last)
    yield "strided view", torch.cat([base, base], dim=3)[:, :, :, ::2]


LAYOUTS = list(_layouts())
POOL = dict(strides=2, start_padding=1, end_padding=1)


def _calls(x):
    """Every function on a float tensor x (N, C, 9, 8), with its other tensor arguments."""
    y, i = dml.max_pooling(x.numpy(), 3, output_indices=True, **POOL)
    dy = torch.from_numpy(y * 0.5 + 1)
    yield "max_pooling", lambda a: dml.max_pooling(a, 3, output_indices=True, **POOL)
    yield "average_pooling", lambda a: dml.average_pooling(a, 3, **POOL)
    yield "lp_pooling", lambda a: dml.lp_pooling(a, 3, p=2, **POOL)
    yield "max_pooling_grad", lambda a: dml.max_pooling_grad(a, dy, 3, **POOL)
    yield "average_pooling_grad", lambda a: dml.average_pooling_grad(
        a[:, :, :5, :4], 3, input_sizes=(9, 8), **POOL)
    yield "max_unpooling", lambda a: dml.max_unpooling(
        a[:, :, :5, :4], torch.from_numpy(i.astype(np.int64)), (2, 3, 9, 8))
    yield "roi_pooling", lambda a: dml.roi_pooling(
        a, torch.tensor([[1, 0, 0, 5, 6], [0, 2, 1, 7, 8]], dtype=torch.float32),
        spatial_scale=1.0, pooled_size=(2, 3))
    yield "padding", lambda a: dml.padding(a, (0, 0, 3, 9), (0, 0, 2, 1), mode="symmetric")
    yield "quantized_linear_average_pooling", lambda a: dml.quantized_linear_average_pooling(
        _u8(a), 0.5, 3, 0.25, 7, 3, **POOL)


def _u8(a):
    return (a.abs() * 3).to(torch.uint8) if isinstance(a, torch.Tensor) else \
        (np.abs(a) * 3).astype(np.uint8)


def _no_array_protocol(monkeypatch):
    """np.asarray(tensor) goes through Tensor.__array__ (a copy for some layouts); reading in
    place goes through __dlpack__: make the first fail."""
    def refuse(self, *a, **k):
        raise AssertionError("read through __array__, not DLPack")
    monkeypatch.setattr(torch.Tensor, "__array__", refuse)


@pytest.mark.parametrize("layout, x", LAYOUTS, ids=[n for n, _ in LAYOUTS])
def test_tensors_in_tensors_out_every_function(layout, x, monkeypatch):
    """Each function on tensors gives tensors, the NumPy results bit for bit."""
    numpy_results = {}
    for name, call in _calls(x):
        got = call(x.numpy().copy())
        numpy_results[name] = got if isinstance(got, tuple) else (got,)
    _no_array_protocol(monkeypatch)
    for name, call in _calls(x):
        got = call(x)
        got = got if isinstance(got, tuple) else (got,)
        assert all(isinstance(g, torch.Tensor) for g in got), name
        for g, w in zip(got, numpy_results[name]):
            assert g.numpy().tobytes() == w.tobytes(), name


def test_results_share_memory_with_the_returned_tensors():
    x = LAYOUTS[1][1]
    y = dml.average_pooling(x, 3, **POOL)
    view = np.from_dlpack(y)
    view[0, 0, 0, 0] = 123.0
    assert y[0, 0, 0, 0].item() == 123.0


def test_a_tensor_out_is_written_in_place():
    x = LAYOUTS[0][1]
    out = torch.full((2, 3, 5, 4), -1.0)
    idx = torch.zeros((2, 3, 5, 4), dtype=torch.int64)
    got = dml.max_pooling(x, 3, output_indices=True, indices_dtype="int64", out=(out, idx),
                          **POOL)
    want_y, want_i = dml.max_pooling(x.numpy(), 3, output_indices=True, indices_dtype="int64",
                                     **POOL)
    assert got[0] is out and got[1] is idx
    assert np.array_equal(out.numpy(), want_y) and np.array_equal(idx.numpy(), want_i)


def test_tensors_that_cannot_be_read_in_place_are_refused():
    """(A tensor that requires a gradient goes through dmlops.torch's ops:
    test_torch_ops.py; one given as out= is refused.)"""
    with pytest.raises(dml.UnsupportedError, match="bfloat16"):
        dml.max_pooling(torch.ones((1, 1, 4, 4), dtype=torch.bfloat16), 2)
    with pytest.raises(dml.UnsupportedError, match="dy requires a gradient"):
        dml.max_pooling_grad(torch.ones((1, 1, 4, 4)), torch.ones((1, 1, 2, 2),
                             requires_grad=True), 2, strides=2)
    with pytest.raises(dml.UnsupportedError, match="out"):
        dml.average_pooling(torch.ones((1, 1, 4, 4)), 2,
                            out=torch.ones((1, 1, 3, 3), requires_grad=True))

