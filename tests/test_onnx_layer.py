"""dmlops.onnx beyond ONNX's own cases: ONNX Runtime as an oracle on random nodes, small
multi-node models, the layout and shape conversions, and the errors.

ONNX Runtime is compared only where ONNX defines the result and ONNX Runtime's CPU kernels
follow it; the places where they do not are listed in docs/differences.md ("ONNX") and pinned here.
The random comparisons run on the reference backend (no kernel compilation; the cpu backend
is bitwise equal to it, tests/test_cpu_backend.py); ONNX's own cases run on the default one.
"""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmlops as dml  # noqa: E402
import dmlops.onnx as dox  # noqa: E402

REF = "reference"
_ONNX_TYPES = {np.dtype(t): helper.np_dtype_to_tensor_dtype(np.dtype(t)) for t in (
    np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8, np.bool_)}


def _info(name, dtype, rank):
    dims = [f"{name}_{d}" for d in range(rank)]
    return helper.make_tensor_value_info(name, _ONNX_TYPES[np.dtype(dtype)], dims)


def _model(nodes, inputs, outputs, initializers=()):
    """A model ONNX Runtime 1.31 loads (IR 10, opset 21); inputs and outputs are
    (name, dtype, rank)."""
    graph = helper.make_graph(nodes, "g", [_info(*i) for i in inputs],
                              [_info(*o) for o in outputs], initializer=list(initializers))
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])


def _ort(model, feeds):
    options = ort.SessionOptions()
    options.log_severity_level = 4
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _run_both(node, arrays, out_types, out_rank):
    names = list(node.input)
    model = _model([node], [(n, a.dtype, a.ndim) for n, a in zip(names, arrays)],
                   [(n, t, out_rank) for n, t in zip(node.output, out_types)])
    want = _ort(model, dict(zip(names, arrays)))
    got = dox.run_model(model, arrays, backend=REF)
    return got, want


def _geometry(rng, k, dilations=True):
    """Sizes and pooling attributes inside what ONNX Runtime's CPU kernels accept and agree
    on: pads smaller than the window, SAME only without dilations and with a non-negative
    total."""
    sizes = [int(rng.integers(1, 6 if k == 3 else 10)) for _ in range(k)]
    kernel = [int(rng.integers(1, 5)) for _ in range(k)]
    strides = [int(rng.integers(1, 4)) for _ in range(k)]
    dil = [int(rng.integers(1, 3)) if dilations else 1 for _ in range(k)]
    attrs = dict(kernel_shape=kernel, strides=strides)
    if any(d > 1 for d in dil):
        attrs["dilations"] = dil
    if rng.random() < 0.15 and "dilations" not in attrs:
        for i in range(k):
            while (-(-sizes[i] // strides[i]) - 1) * strides[i] + kernel[i] < sizes[i]:
                kernel[i] += 1
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER"]))
    else:
        pads = [int(rng.integers(0, w)) for w in kernel + kernel]
        for i in range(k):
            while sizes[i] + pads[i] + pads[k + i] < (kernel[i] - 1) * dil[i] + 1:
                sizes[i] += 1
        attrs["pads"] = pads
        if rng.random() < 0.3:
            attrs["ceil_mode"] = 1
    return sizes, attrs


@pytest.mark.parametrize("op", ["AveragePool", "MaxPool", "LpPool", "GlobalAveragePool",
                                "GlobalMaxPool"])
def test_pooling_matches_onnxruntime(op):
    rng = np.random.default_rng(["AveragePool", "MaxPool", "LpPool", "GlobalAveragePool",
                                 "GlobalMaxPool"].index(op))
    for _ in range(60):
        k = int(rng.choice([1, 2, 2, 3]))
        sizes, attrs = _geometry(rng, k)
        if op.startswith("Global"):
            attrs = {}
        elif op == "AveragePool":
            attrs["count_include_pad"] = int(rng.integers(0, 2))
        elif op == "LpPool":
            attrs["p"] = int(rng.integers(1, 4))
        x = rng.standard_normal([int(rng.integers(1, 3)), int(rng.integers(1, 4))] + sizes)
        x = x.astype(np.float32)
        outputs, types = ["y"], [np.float32]
        if op == "MaxPool" and rng.random() < 0.7:
            outputs, types = ["y", "i"], [np.float32, np.int64]
            attrs["storage_order"] = int(rng.integers(0, 2))
            if rng.random() < 0.3:
                x = np.round(x)          # ties: the lowest index wins in both
        node = helper.make_node(op, ["x"], outputs, **attrs)
        got, want = _run_both(node, [x], types, x.ndim)
        assert [g.shape for g in got] == [w.shape for w in want], attrs
        if op == "MaxPool":
            # A window of padding only (dilations can skip every real element): DirectML
            # gives -inf and index -1, ONNX Runtime the lowest float and an arbitrary index.
            empty = got[0] == -np.inf
            assert np.all(want[0][empty] == np.finfo(np.float32).min), attrs
            np.testing.assert_array_equal(got[0][~empty], want[0][~empty], str(attrs))
            if len(got) == 2:
                assert np.all(got[1][empty] == -1)
                np.testing.assert_array_equal(got[1][~empty], want[1][~empty], str(attrs))
        else:
            np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6,
                                       err_msg=str(attrs))


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "LpPool"])
def test_empty_auto_pad_is_notset_as_in_onnxruntime(op):
    """ONNX Runtime's own tests write auto_pad="" for NOTSET; with pads and without."""
    x = np.random.default_rng(3).standard_normal((1, 2, 7, 6)).astype(np.float32)
    for pads in (None, [1, 0, 2, 1]):
        attrs = dict(kernel_shape=[3, 2], strides=[2, 1], auto_pad="")
        if pads is not None:
            attrs["pads"] = pads
        node = helper.make_node(op, ["x"], ["y"], **attrs)
        got, want = _run_both(node, [x], [np.float32], 4)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, err_msg=str(attrs))
    assert dml.onnx_pads((1, 1, 5), 3, auto_pad=b"", pads=[1, 2]) == ((1,), (2,))
    with pytest.raises(dml.InvalidArgumentError, match="auto_pad = b'.xff' is not UTF-8"):
        dml.onnx_pads((1, 1, 5), 3, auto_pad=b"\xff")


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "LpPool", "GlobalMaxPool",
                                "GlobalAveragePool"])
def test_pooling_nodes_of_an_empty_batch_or_channel_give_empty_results(op):
    """As the functions do: N or C of 0 is an empty result of the output's shape."""
    for shape in ((0, 2, 4), (2, 0, 4, 5)):
        x = np.zeros(shape, np.float32)
        k = x.ndim - 2
        attrs = {} if op.startswith("Global") else {"kernel_shape": [2] * k}
        (y,) = dox.run_node(helper.make_node(op, ["x"], ["y"], **attrs), [x], backend=REF)
        spatial = (1,) * k if op.startswith("Global") else tuple(n - 1 for n in shape[2:])
        assert y.shape == shape[:2] + spatial and y.dtype == np.float32
    assert dml.pooling_output_sizes((0, 0, 5), 2) == (0, 0, 4)
    with pytest.raises(dml.InvalidArgumentError, match=r"input_sizes\[2\] = 0 must be at least"):
        dml.pooling_output_sizes((1, 1, 0), 2)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_])
def test_pad_matches_onnxruntime(dtype):
    rng = np.random.default_rng(np.dtype(dtype).num)
    for _ in range(40):
        rank = int(rng.integers(1, 5))
        shape = [int(rng.integers(1, 6)) for _ in range(rank)]
        mode = str(rng.choice(["constant", "edge", "reflect", "wrap"]))
        axes = list(range(rank))
        if rng.random() < 0.4:
            axes = sorted(rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False))
            axes = [int(a) - (rank if rng.random() < 0.5 else 0) for a in axes]
        pads = []
        for side in range(2):
            for a in axes:
                n = shape[a]
                # ONNX Runtime's reflect needs pads < n; negative pads crop first in both
                hi = n - 1 if mode == "reflect" else n + 2
                lo = 0 if mode == "reflect" else -((n - 1) // 2)
                pads.append(int(rng.integers(lo, hi + 1)) if hi >= lo else 0)
        x = rng.integers(-50, 200, size=shape).astype(dtype)
        args = [("x", x), ("pads", np.array(pads, np.int64)), ("", None)]
        if mode == "constant":
            args[2] = ("value", np.array(rng.integers(0, 100), dtype))
        if axes != list(range(rank)):
            args.append(("axes", np.array(axes, np.int64)))
        node = helper.make_node("Pad", [n for n, _ in args], ["y"], mode=mode)
        feeds = [(n, a) for n, a in args if n]
        model = _model([node], [(n, a.dtype, a.ndim) for n, a in feeds], [("y", dtype, rank)])
        want = _ort(model, dict(feeds))[0]
        got = dox.run_model(model, [a for _, a in feeds], backend=REF)[0]
        np.testing.assert_array_equal(got, want, str((mode, shape, pads, axes)))
        assert got.dtype == want.dtype


def test_pad_beyond_onnxruntime_follows_numpy():
    # reflect wider than the axis and over a single element: NumPy's np.pad (ONNX's
    # reference); negative pads crop first.
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")
    pads = np.array([0, 2, 7, 1, 1, 5])
    y = dox.run_node(node, [x, pads], backend=REF)[0]
    np.testing.assert_array_equal(y, np.pad(x, [(0, 1), (2, 1), (7, 5)], mode="reflect"))
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge")
    y = dox.run_node(node, [x, np.array([0, -1, 2, 0, 0, -1])], backend=REF)[0]
    np.testing.assert_array_equal(y, np.pad(x[:, 1:, :2], [(0, 0), (0, 0), (2, 0)], "edge"))


def test_pad_crops_a_dimension_to_nothing():
    # Cropped to no elements, a dimension can still be padded with a constant (np.pad does
    # the same); the other modes have nothing to copy, and cropping more than a dimension
    # holds is an error.
    x = np.ones((3, 1), np.float32)
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant")
    y = dox.run_node(node, [x, np.array([0, 2, 0, -1])], backend=REF)[0]
    np.testing.assert_array_equal(y, np.pad(x[:, :0], [(0, 0), (2, 0)]))
    assert dox.run_node(node, [x, np.array([0, -1, 0, 0])], backend=REF)[0].shape == (3, 0)
    with pytest.raises(dml.InvalidArgumentError, match="remove more than"):
        dox.run_node(node, [x, np.array([0, 3, 0, -2])], backend=REF)
    edge = helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge")
    with pytest.raises(dml.InvalidArgumentError, match="only constant padding"):
        dox.run_node(edge, [x, np.array([0, 2, 0, -1])], backend=REF)


def test_pad_opset2_attributes():
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    node = helper.make_node("Pad", ["x"], ["y"], mode="constant", pads=[0, 0, 1, 0, 0, 0, 0, 1],
                            value=-1.5)
    y = dox.run_node(node, [x], backend=REF)[0]
    np.testing.assert_array_equal(y, np.pad(x, [(0, 0), (0, 0), (1, 0), (0, 1)],
                                            constant_values=-1.5))


def test_pad_opset2_value_of_text_is_an_error():
    """Pad-2's value attribute typed STRING is dmlops's error naming it, not Python's
    ValueError from a float conversion (issue 42)."""
    x = np.zeros((1, 1, 2, 2), np.float32)
    node = helper.make_node("Pad", ["x"], ["y"], mode="constant", pads=[0, 0, 1, 0, 0, 0, 0, 1],
                            value="1.5")
    with pytest.raises(dml.InvalidArgumentError, match="attribute value = .* must be a number"):
        dox.run_node(node, [x], backend=REF)


def test_storage_order_column_major_3d():
    # index = ((n*C + c)*W + w)*H + h for 2-D; for 3-D the first spatial dimension fastest
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2, 2],
                            strides=[2, 1, 3], storage_order=1)
    y, i = dox.run_node(node, [x], backend=REF)
    _, rows = dml.max_pooling(x, 2, strides=(2, 1, 3), output_indices=True,
                              indices_dtype=np.int64, backend=REF)
    n_c, rem = np.divmod(rows, 4 * 5 * 6)
    d, h, w = np.unravel_index(rem, (4, 5, 6))
    np.testing.assert_array_equal(i, n_c * 120 + (w * 5 + h) * 4 + d)
    np.testing.assert_array_equal(x.ravel()[rows], y)


def test_maxpool_maxunpool_model_and_output_shape():
    # a two-node model; MaxUnpool's output_shape pads the default shape at the end
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    shape = numpy_helper.from_array(np.array([1, 2, 5, 6], np.int64), "shape")
    nodes = [helper.make_node("MaxPool", ["x"], ["v", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxUnpool", ["v", "i"], ["u"], kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("MaxUnpool", ["v", "i", "shape"], ["w"], kernel_shape=[2, 2],
                              strides=[2, 2])]
    model = _model(nodes, [("x", np.float32, 4)], [("u", np.float32, 4), ("w", np.float32, 4)],
                   [shape])
    u, w = dox.prepare(model, backend=REF).run({"x": x})
    want_u, want_w = _ort(model, {"x": x})
    np.testing.assert_array_equal(u, want_u)
    assert w.shape == want_w.shape == (1, 2, 5, 6)
    np.testing.assert_array_equal(w[:, :, :4, :4], u)
    assert not w[:, :, 4:].any() and not w[:, :, :, 4:].any()
    # ONNX Runtime instead reads the indices as flat positions of the larger shape
    assert not np.array_equal(w, want_w)


def test_pad_then_pool_model_with_initializers():
    x = np.random.default_rng(6).standard_normal((1, 1, 5, 5)).astype(np.float32)
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], mode="edge"),
             helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[3, 3], ceil_mode=1,
                              strides=[2, 2])]
    model = _model(nodes, [("x", np.float32, 4)], [("y", np.float32, 4)], [pads])
    rep = dox.prepare(model, backend=REF)
    assert rep.input_names == ["x"]
    np.testing.assert_allclose(rep.run([x])[0], _ort(model, {"x": x})[0], rtol=1e-6)
    assert rep.run([x])["y"].shape == (1, 1, 3, 3)


def test_errors_name_the_node():
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1")
    with pytest.raises(dml.UnsupportedError, match="Conv node 'conv1'.*not supported"):
        dox.run_node(node, [np.zeros((1, 1, 3, 3), np.float32)] * 2)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                            foo=3)
    with pytest.raises(dml.UnsupportedError, match="MaxPool node 'pool': attribute foo"):
        dox.run_node(node, [np.zeros((1, 1, 3, 3), np.float32)])
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], storage_order=2)
    with pytest.raises(dml.InvalidArgumentError, match="storage_order = 2"):
        dox.run_node(node, [np.zeros((1, 1, 3, 3), np.float32)])
    node = helper.make_node("AveragePool", ["x"], ["y"], name="avg", kernel_shape=[5, 5])
    with pytest.raises(dml.InvalidArgumentError, match="AveragePool node 'avg': .*window_size"):
        dox.run_node(node, [np.zeros((1, 1, 3, 3), np.float32)])
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="symmetric")
    with pytest.raises(dml.UnsupportedError, match="mode"):
        dox.run_node(node, [np.zeros((2, 2), np.float32), np.zeros(4, np.int64)])
    with pytest.raises(dml.UnsupportedError, match="device"):
        dox.prepare(_model([helper.make_node("GlobalMaxPool", ["x"], ["y"])],
                           [("x", np.float32, 4)], [("y", np.float32, 4)]), "CUDA")
    assert dox.supports_device("CPU") and not dox.supports_device("CUDA")
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [("x", np.float32, 4)],
                   [("y", np.float32, 4)])
    assert not dox.DmlBackend.is_compatible(model)


def test_attributes_onnx_refuses_are_refused():
    """Attributes that ONNX's schemas reject are errors naming the node, not ignored."""
    x = np.arange(36, dtype=np.uint8).reshape(1, 1, 6, 6)
    q = helper.make_node("QLinearAveragePool", ["x", "s", "z", "s2", "z2"], ["y"],
                         domain="com.microsoft", kernel_shape=[2, 2], dilations=[2, 2],
                         name="q")
    scale, zp = np.float32(0.1), np.uint8(3)
    with pytest.raises(dml.UnsupportedError, match="'q'.*attribute dilations"):
        dox.run_node(q, [x, scale, zp, scale, zp], backend=REF)
    xf = np.ones((1, 1, 4, 4), np.float32)
    q = helper.make_node("QLinearAveragePool", ["x", "s", "z", "s2", "z2"], ["y"],
                         domain="com.microsoft", kernel_shape=[2, 2])
    with pytest.raises(dml.UnsupportedError, match="X has dtype float32"):
        dox.run_node(q, [xf, scale, zp, scale, zp], backend=REF)
    pad = helper.make_node("Pad", ["x", "p"], ["y"], value=7.0)
    with pytest.raises(dml.UnsupportedError, match="constant_value"):
        dox.run_node(pad, [xf, np.array([0, 0, 1, 1, 0, 0, 1, 1])], backend=REF)
    both = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                            auto_pad="SAME_UPPER", pads=[1, 1, 1, 1])
    with pytest.raises(dml.InvalidArgumentError, match="cannot be used together"):
        dox.run_node(both, [xf], backend=REF)
    floats = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2.0, 2.0])
    with pytest.raises(dml.InvalidArgumentError, match="kernel_shape .* must hold integers"):
        dox.run_node(floats, [xf], backend=REF)


def test_prepare_reports_an_unknown_attribute_as_dmlops_does():
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], foo=1, name="pool1")
    model = _model([node], [("x", np.float32, 4)], [("y", np.float32, 4)])
    with pytest.raises(dml.UnsupportedError, match="'pool1'.*attribute foo is not supported"):
        dox.prepare(model)


def test_max_unpool_output_shape_error_explains_the_indices():
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    pool = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])
    y, i = dox.run_node(pool, [x], backend=REF)
    unpool = helper.make_node("MaxUnpool", ["y", "i", "shape"], ["z"], kernel_shape=[2, 2],
                              strides=[2, 2])
    with pytest.raises(dml.InvalidArgumentError, match="default output shape .1, 1, 4, 4."):
        dox.run_node(unpool, [y, i, np.array([1, 1, 5, 5])], backend=REF)


def test_arguments_that_are_no_model_node_or_inputs_are_dmlops_errors(tmp_path):
    """Only dmlops's errors escape dmlops.onnx (issue 28), and is_compatible answers False
    for anything it cannot read."""
    x = np.ones((1, 1, 4, 4), np.float32)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    model = _model([node], [("x", np.float32, 4)], [("y", np.float32, 4)])
    cases = [
        (lambda: dox.prepare(123), "a model is an onnx.ModelProto.*not int"),
        (lambda: dox.prepare(b"\x01\x02 no model"), "cannot read the model"),
        (lambda: dox.prepare(str(tmp_path / "missing.onnx")), "cannot read the model"),
        (lambda: dox.run_node(None, [x]), r"run_node\(\) takes an onnx.NodeProto, not NoneType"),
        (lambda: dox.run_node(node, None), "the inputs must be a list of arrays"),
        (lambda: dox.prepare(model).run(None), "the inputs must be a list of arrays"),
    ]
    for call, message in cases:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            call()
    no_shape = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]))
    with pytest.raises(dml.InvalidArgumentError, match="not valid ONNX"):
        dox.prepare(no_shape)
    for thing in (None, 123, "not a model", b"\x00", node):
        assert dox.is_compatible(thing) is False
    assert dox.is_compatible(model) is True
    assert dox.prepare(model.SerializeToString()).run(x)[0].shape == (1, 1, 3, 3)


def test_values_onnx_types_as_integers_or_text_are_checked_not_converted():
    """Only dmlops's errors escape (issue 28): NaN, None, strings or floats in Pad's pads
    and axes and MaxUnpool's output_shape (inputs or initializers), an object array as Pad's
    constant, non-UTF-8 bytes as an attribute string, an attribute without a type, a Constant
    whose raw_data is short."""
    x = np.ones((1, 1, 4, 4), np.float32)
    pad = helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")
    padc = helper.make_node("Pad", ["x", "p", "c"], ["y"], mode="constant")
    pad_axes = helper.make_node("Pad", ["x", "p", "", "a"], ["y"], mode="reflect")
    unpool = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2],
                              strides=[2, 2])
    typeless = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    typeless.attribute.append(onnx.AttributeProto(name="strides"))
    short = onnx.TensorProto(name="v", data_type=TensorProto.INT64, dims=[8],
                             raw_data=bytes(12))
    pads8 = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    cases = [
        (pad, [x, np.array([0, 0, 1, np.nan, 0, 0, 1, 1])], "input pads holds float64"),
        (pad, [x, np.array([0, 0, 1, None, 0, 0, 1, 1], dtype=object)], "pads holds object"),
        (pad, [x, np.array(["0"] * 8)], "input pads holds <U1"),
        (pad, [x, [[0, 0], [1]]], "input pads cannot be read as an array"),
        (padc, [x, pads8, np.array(1.0, dtype=object)], "constant_value holds object"),
        (pad_axes, [x, np.array([1, 1, 1, 1]), None, np.array([2.0, np.nan])],
         "input axes holds float64"),
        (unpool, [np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 2, 2), np.int64),
                  np.array([1, 1, np.nan, 4])], "input output_shape holds float64"),
        (helper.make_node("Pad", ["x", "p"], ["y"], mode=b"\xff"), [x, pads8],
         "attribute mode = b'.xff' is not UTF-8"),
        (typeless, [x], "attribute strides has no type"),
        (helper.make_node("Pad", ["x", "p"], ["y"], mode=[1, 2]), [x, pads8],
         r"attribute mode = \[1, 2\] must be a string"),
        (helper.make_node("Constant", [], ["p"], value=short), [],
         "attribute value: the tensor cannot be read"),
    ]
    for node, inputs, message in cases:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            dox.run_node(node, inputs, backend=REF)
    # the same through an initializer
    model = _model([pad], [("x", np.float32, 4)], [("y", np.float32, 4)],
                   [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1.5]), "p")])
    with pytest.raises(dml.InvalidArgumentError, match="input pads holds float64"):
        dox.prepare(model).run(x)
    assert dox.run_node(padc, [x, pads8, np.float32(1.5)], backend=REF)[0][0, 0, 0, 0] == 1.5
