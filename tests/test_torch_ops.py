"""dmlops as PyTorch ops (SPEC 6, issue 44): torch.library ops with fake kernels
(``opcheck``), autograd through dmlops's own backward operators (``gradcheck``,
``gradgradcheck``, and PyTorch's own backward bit for bit where it adds in the same order),
``torch.compile(fullgraph=True)`` and ``torch.export``, the modules, the errors."""

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dmlops as dml  # noqa: E402
import dmlops.torch as dt  # noqa: E402

F = torch.nn.functional
OPS = torch.ops.dmlops


def _x(shape, dtype=torch.float64, seed=0, grad=True):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=dtype).requires_grad_(grad)


def _bits(t):
    return t.detach().numpy().view(np.uint8)


# --- the ops and their fake kernels -----------------------------------------------------------

def _samples():
    x = _x((2, 3, 7, 6), torch.float32, grad=False)
    cl = x.contiguous(memory_format=torch.channels_last)
    x3 = _x((1, 2, 5, 6, 4), torch.float16, grad=False)
    y, i = dml.max_pooling(x, 2, output_indices=True)
    yield OPS.max_pooling, (x, [3, 3], [2, 2], [1, 1], [1, 0], [1, 1], None)
    yield OPS.max_pooling, (cl, [2, 2], [1, 1], [0, 0], [0, 0], [2, 1], None)
    yield OPS.max_pooling, (x3, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], [1, 1, 1], None)
    yield OPS.max_pooling_with_indices, (x, [2, 2], [2, 2], [0, 0], [0, 0], [1, 1], None, None)
    yield OPS.max_pooling_with_indices, (cl, [2, 2], [1, 1], [1, 1], [0, 0], [1, 1], [8, 7],
                                         "uint64")
    yield OPS.average_pooling, (x, [3, 2], [1, 2], [1, 0], [1, 1], [1, 1], False, None)
    yield OPS.average_pooling, (x3, [2, 2, 2], [1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 1, 1],
                                True, None)
    yield OPS.lp_pooling, (x, [2, 2], 3, [1, 1], [0, 0], [0, 0], [1, 1], None)
    yield OPS.max_pooling_grad, (x, torch.ones(2, 3, 3, 3), [2, 2], [2, 2], [0, 0], [0, 0],
                                 [1, 1])
    yield OPS.average_pooling_grad, (torch.ones(2, 3, 3, 3), [2, 2], [2, 3, 7, 6], [2, 2],
                                     [0, 0], [0, 0], [1, 1], False)
    yield OPS.max_unpooling, (y, i, [2, 3, 7, 6])
    yield OPS.roi_pooling, (x, torch.tensor([[0, 0, 0, 4, 4], [1, 1, 2, 5, 5]],
                                            dtype=torch.float32), 1.0, [2, 2])
    yield OPS.roi_pooling_grad, (x, torch.tensor([[0, 0, 0, 4, 4], [1, 1, 2, 5, 5]],
                                                 dtype=torch.float32), torch.ones(2, 3, 2, 2),
                                 1.0, [2, 2])
    yield OPS.quantized_linear_average_pooling, (
        torch.randint(0, 255, (1, 3, 6, 6), dtype=torch.uint8), torch.tensor(0.02),
        torch.tensor(128, dtype=torch.uint8), torch.tensor(0.015),
        torch.tensor(120, dtype=torch.uint8), [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], False,
        None)
    yield OPS.quantized_linear_average_pooling, (
        torch.randint(-128, 127, (1, 2, 5, 5), dtype=torch.int8), torch.tensor(0.02),
        torch.tensor(3, dtype=torch.int8), torch.tensor(0.015),
        torch.tensor(120, dtype=torch.uint8), [2, 2], [2, 2], [0, 0], [1, 1], [1, 1], True,
        "UINT8")
    yield OPS.padding, (x, [0, 1, 2, 9], [1, 0, 3, 1], "symmetric", 0.0)
    yield OPS.padding, (torch.arange(12, dtype=torch.int16).reshape(3, 4), [2, 5], [1, 0],
                        "wrap", 0.0)
    yield OPS.padding_grad, (torch.ones(3, 4, 12, 16), [2, 3, 7, 6], [0, 1, 2, 9],
                             [1, 0, 3, 1], "reflection")


@pytest.mark.parametrize("op, args", list(_samples()),
                         ids=lambda v: getattr(v, "__name__", None) or "")
def test_opcheck(op, args):
    """Schema, fake kernel (sizes and dtypes) and autograd registration agree with the real
    kernel; AOT dispatch with static and dynamic shapes (a compile each, the slow part) for
    the ops of test_compile_fullgraph_and_export."""
    full = op in (OPS.max_pooling, OPS.average_pooling, OPS.padding)
    torch.library.opcheck(op.default, args, test_utils="ALL" if full else (
        "test_schema", "test_autograd_registration", "test_faketensor"))


def _bits_of(out):
    return [_bits(t).tobytes() for t in (out if isinstance(out, tuple) else (out,))]


def test_every_way_through_the_dispatcher_gives_the_same_bits():
    """Without a gradient, an op's autograd kernel runs the computation itself (issue 44: no
    second pass through the dispatcher); under no_grad, in inference mode (no autograd kernel)
    and twice (a kept plan) the same bits, and a gradient where an input wants one."""
    for op, args in _samples():
        want = _bits_of(op(*args))
        assert _bits_of(op(*args)) == want, op
        with torch.no_grad():
            assert _bits_of(op(*args)) == want, op
        with torch.inference_mode():
            assert _bits_of(op(*args)) == want, op
    x = _x((1, 1, 4, 4))
    y = OPS.max_pooling(x, [2, 2], [2, 2], [0, 0], [0, 0], [1, 1], None)
    assert y.requires_grad and "GeneratedBackwardFor_dmlops_max_pooling" in str(y.grad_fn)
    with torch.no_grad():
        assert not OPS.max_pooling(x, [2, 2], [2, 2], [0, 0], [0, 0], [1, 1], None).requires_grad


def test_kept_plans_tell_the_arguments_apart():
    """The ops keep their plans under the dispatcher's arguments: a value of another sign,
    another layout, another window is planned anew, and an invalid call raises every time
    with the function's message."""
    x = _x((1, 2, 3, 4), torch.float32, grad=False)
    for value in (-0.0, 0.0, -0.0):
        y = OPS.padding(x, [0, 0, 1, 1], [0, 0, 1, 1], "constant", value)
        assert torch.signbit(y[0, 0, 0, 0]).item() == (str(value) == "-0.0")
    for t in (x, x.contiguous(memory_format=torch.channels_last), x[..., ::2]):
        for w in ([2, 2], [1, 2], [2, 2]):
            got = OPS.max_pooling(t, w, [1, 1], [0, 0], [0, 0], [1, 1], None)
            assert torch.equal(got, torch.from_numpy(dml.max_pooling(t.numpy(), w)))
    with pytest.raises(dml.InvalidArgumentError) as want:
        dml.max_pooling(x.numpy(), [0, 2], strides=[1, 1])
    for _ in range(2):
        with pytest.raises(dml.InvalidArgumentError) as got:
            OPS.max_pooling(x, [0, 2], [1, 1], [0, 0], [0, 0], [1, 1], None)
        assert str(got.value) == str(want.value)


def test_an_op_without_a_backward_says_so():
    x = _x((1, 1, 4, 4))
    dx = OPS.max_pooling_grad(x, torch.ones(1, 1, 2, 2, dtype=torch.float64), [2, 2], [2, 2],
                              [0, 0], [0, 0], [1, 1])
    assert dx.requires_grad
    with pytest.raises(RuntimeError, match="no autograd formula"):
        dx.sum().backward()


# --- autograd ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, kw", [
    (dml.max_pooling, dict(window_size=3, strides=2, start_padding=1, end_padding=(0, 2))),
    (dml.max_pooling, dict(window_size=(2, 3), dilations=(2, 1), output_sizes=(6, 4))),
    (dml.average_pooling, dict(window_size=3, strides=2, start_padding=1, end_padding=1)),
    (dml.average_pooling, dict(window_size=2, include_padding=True, start_padding=1,
                               output_sizes=(8, 6))),
    (dml.lp_pooling, dict(window_size=2, p=2, strides=1, start_padding=1)),
    (dml.lp_pooling, dict(window_size=(3, 2), p=3, strides=2)),
    (dml.padding, dict(start_padding=(0, 1, 2, 9), end_padding=(1, 0, 3, 1),
                       mode="symmetric")),
    (dml.padding, dict(start_padding=(0, 0, 8, 1), end_padding=(0, 0, 3, 13), mode="wrap")),
    (dml.padding, dict(start_padding=(0, 0, 5, 1), end_padding=(0, 1, 3, 11),
                       mode="reflection")),
    (dml.padding, dict(start_padding=1, end_padding=2, mode="edge")),
    (dml.padding, dict(start_padding=1, end_padding=2, value=3.5)),
])
def test_gradcheck(fn, kw):
    """The functions themselves, given a tensor that requires a gradient: their backward
    against finite differences, in float64."""
    x = _x((2, 2, 7, 6))
    assert fn(x, **kw).requires_grad
    assert torch.autograd.gradcheck(lambda t: fn(t, **kw), (x,))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflection", "symmetric", "wrap"])
def test_padding_is_twice_differentiable(mode):
    x = _x((2, 1, 3, 3))
    assert torch.autograd.gradgradcheck(
        lambda t: dml.padding(t, (1, 0, 2, 4), (0, 0, 1, 3), mode=mode), (x,))


def test_max_unpooling_backward_is_the_gather():
    x = _x((1, 2, 6, 6))
    y, i = dml.max_pooling(x.detach().numpy(), 2, strides=2, output_indices=True)
    yt = torch.from_numpy(y).requires_grad_()
    it = torch.from_numpy(i)
    assert torch.autograd.gradcheck(lambda t: dml.max_unpooling(t, it, x.shape), (yt,))
    out = dml.max_unpooling(yt, it, x.shape)
    dy = _x(x.shape, grad=False)
    out.backward(dy)
    assert torch.equal(yt.grad.reshape(-1), dy.reshape(-1)[it.reshape(-1).to(torch.int64)])


def test_roi_pooling_backward_is_the_scatter_to_each_bins_winner():
    """gradcheck (clipped regions, empty bins among them), and the scatter itself: every
    bin's dy at its winner, summed in dy's order."""
    x = _x((2, 3, 9, 8))
    rois = torch.tensor([[0, 0, 0, 5, 4], [1, 2, 1, 7, 8], [0, -2, 3, 20, 6]],
                        dtype=torch.float64)
    f = lambda t: dml.roi_pooling(t, rois, spatial_scale=1.0, pooled_size=(2, 3))  # noqa: E731
    assert torch.autograd.gradcheck(f, (x,))
    y = f(x)
    dy = _x(tuple(y.shape), seed=2, grad=False)
    y.backward(dy)
    want = torch.zeros_like(x).reshape(-1)
    flat = x.detach().reshape(-1)
    for r, c, i, j in np.ndindex(*y.shape):
        hits = torch.nonzero((x[int(rois[r, 0])] == y[r, c, i, j]).reshape(-1)).reshape(-1)
        if y[r, c, i, j] != 0 or hits.numel():
            k = int(rois[r, 0]) * x[0].numel() + int(hits[0]) if hits.numel() else None
            if k is not None and flat[k] == y[r, c, i, j]:
                want[k] += dy[r, c, i, j]
    torch.testing.assert_close(x.grad.reshape(-1), want)


@pytest.mark.parametrize("rank", [2, 3])
def test_max_pooling_backward_is_pytorchs_bitwise(rank):
    """No ties (random values): MAX_POOLING_GRAD gives PyTorch's max_pool backward bit for
    bit in float32."""
    x = _x((2, 3) + (9, 8, 7)[:rank], torch.float32)
    pool = F.max_pool2d if rank == 2 else F.max_pool3d
    y = pool(x, 3, stride=2, padding=1)
    dy = _x(tuple(y.shape), torch.float32, seed=1, grad=False)
    y.backward(dy)
    want = x.grad.clone()
    x.grad = None
    dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1).backward(dy)
    assert np.array_equal(_bits(x.grad), _bits(want))


def test_average_pooling_backward_agrees_with_pytorchs():
    x = _x((2, 3, 9, 8), torch.float32)
    y = F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)
    dy = _x(tuple(y.shape), torch.float32, seed=1, grad=False)
    y.backward(dy)
    want = x.grad.clone()
    x.grad = None
    dml.average_pooling(x, 3, strides=2, start_padding=1, end_padding=1).backward(dy)
    torch.testing.assert_close(x.grad, want)


@pytest.mark.parametrize("mode, torch_mode", [("reflection", "reflect"),
                                              ("edge", "replicate"), ("constant", "constant")])
def test_padding_backward_is_pytorchs_bitwise(mode, torch_mode):
    x = _x((2, 3, 9, 8), torch.float32)
    y = F.pad(x, (3, 1, 2, 4), mode=torch_mode)
    dy = _x(tuple(y.shape), torch.float32, seed=1, grad=False)
    y.backward(dy)
    want = x.grad.clone()
    x.grad = None
    dml.padding(x, (0, 0, 2, 3), (0, 0, 4, 1), mode=mode).backward(dy)
    assert np.array_equal(_bits(x.grad), _bits(want))


def test_backward_is_deterministic_across_threads():
    """torch.use_deterministic_algorithms(True) is honoured: the same bits at 1 and 2
    threads, ties included (a constant input: every window ties)."""
    grads = []
    try:
        torch.use_deterministic_algorithms(True)
        for n in (1, 2, 1):
            dml.set_num_threads(n)
            x = torch.ones(2, 4, 40, 40, requires_grad=True)
            dml.max_pooling(dml.padding(x, 2, 3, mode="symmetric"), 3, strides=2).sum().backward()
            grads.append(_bits(x.grad).copy())
    finally:
        dml.set_num_threads(None)
        torch.use_deterministic_algorithms(False)
    assert all(np.array_equal(g, grads[0]) for g in grads)


# --- torch.compile, torch.export, modules -------------------------------------------------------

def test_compile_fullgraph_and_export():
    """A function that calls dmlops compiles with no graph break, forward and backward."""
    def f(t):
        p = dml.padding(t, (0, 0, 1, 2), (0, 0, 2, 1), mode="symmetric")
        return dml.average_pooling(dml.max_pooling(p, 2, strides=1), 2, strides=2)

    x = _x((1, 2, 8, 8), torch.float32)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = compiled(x)
    want = f(x)
    assert torch.equal(got, want)
    got.sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    want.sum().backward()
    assert torch.equal(g1, x.grad)

    class Net(torch.nn.Module):
        def forward(self, t):
            return f(t)
    exported = torch.export.export(Net(), (x.detach(),))
    assert torch.equal(exported.module()(x.detach()), want.detach())
    assert "dmlops.padding" in str(exported.graph)


def test_modules_train_save_and_load(tmp_path):
    net = torch.nn.Sequential(dt.Pad(1, mode="symmetric"), torch.nn.Conv2d(1, 2, 3),
                              dt.MaxPool(2, strides=2), dt.AvgPool(2, include_padding=True),
                              dt.LpPool(1, p=2))
    assert "Pad(padding=1, mode='symmetric'" in repr(net)
    assert "MaxPool(window_size=2, strides=2)" in repr(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, target = _x((4, 1, 8, 8), torch.float32, grad=False), torch.zeros(4, 2, 3, 3)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((net(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    torch.save(net.state_dict(), tmp_path / "net.pt")
    again = torch.nn.Sequential(dt.Pad(1, mode="symmetric"), torch.nn.Conv2d(1, 2, 3),
                                dt.MaxPool(2, strides=2), dt.AvgPool(2, include_padding=True),
                                dt.LpPool(1, p=2))
    again.load_state_dict(torch.load(tmp_path / "net.pt"))
    assert torch.equal(again(x), net(x))
    assert torch.equal(torch.compile(again, fullgraph=True, backend="aot_eager")(x), net(x))


def test_pad_pairs_and_unpool_module():
    x = _x((1, 1, 3, 4), torch.float32, grad=False)
    assert dt.Pad([(1, 2), (0, 3)], mode="wrap")(x).shape == (1, 1, 6, 7)
    y, i = dml.max_pooling(x, 2, output_indices=True)
    assert dt.MaxUnpool()(y, i, x.shape).shape == x.shape


# --- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, words", [
    (lambda: dml.max_pooling(torch.ones(1, 1, 4, 4, dtype=torch.bfloat16, requires_grad=True),
                             2), "bfloat16"),
    (lambda: dt.max_pooling(torch.ones(1, 1, 4, 4, device="meta"), 2), "on meta"),
    (lambda: dml.quantized_linear_average_pooling(
        torch.ones(1, 1, 4, 4, requires_grad=True), 0.1, 0, 0.1, 0, 2), "has none"),
    (lambda: dml.roi_pooling(torch.ones(1, 1, 4, 4),
                             torch.zeros((1, 5), requires_grad=True), spatial_scale=1.0,
                             pooled_size=1), "rois requires a gradient"),
])
def test_errors(call, words):
    with pytest.raises(dml.UnsupportedError) as e:
        call()
    assert words in str(e.value)


def test_import_dmlops_does_not_import_torch():
    code = "import sys, dmlops, numpy as np; dmlops.max_pooling(np.ones((1, 1, 2, 2)), 2); " \
           "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
