"""com.microsoft QLinearAveragePool: dmlops.onnx against ONNX Runtime's own kernel.

Seeded random cases over ranks 1-3, windows, strides, explicit pads, auto_pad, ceil_mode,
count_include_pad, channels_last, uint8/int8, zero points and scales. Random scales agree
bit for bit; exact binary scales make halfway values common, and there the two rounding paths
differ by one: ONNX Runtime rounds ``t + y_zero_point`` half to even, DirectML (SPEC 3.3)
rounds ``t`` half to even and then adds the zero point, so they part exactly when ``t`` is
halfway and the output zero point is odd. Rarely (1 element in 474,969 with random scales)
a value a few ulps from halfway lands on different sides in the two float32 paths. The test
asserts that every difference is one of those, and a minimum agreement rate. It runs on
the reference backend (the cpu backend is bitwise equal to it for this operator, SPEC 5); the
literal case runs on the default backend.
"""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import dmlops as dml  # noqa: E402
import dmlops.onnx as dox  # noqa: E402

CASES = 400
# Measured on these CASES with onnxruntime 1.31.1: 99.21% of 13,339 output elements equal
# (the rest are the halfway cases above); asserted with a margin.
MIN_AGREEMENT = 0.985

_TYPES = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
_NAMES = ["x", "x_scale", "x_zero_point", "y_scale", "y_zero_point"]


def _case(rng):
    k = int(rng.choice([1, 2, 2, 2, 3]))
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
    sizes = [int(rng.integers(1, 6 if k == 3 else 10)) for _ in range(k)]
    kernel = [int(rng.integers(1, min(4, s + 2) + 1)) for s in sizes]
    strides = [int(rng.integers(1, 4)) for _ in range(k)]
    attrs = dict(kernel_shape=kernel, strides=strides)
    if rng.random() < 0.15:
        auto_pad = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
        if auto_pad == "VALID" and any(w > s for w, s in zip(kernel, sizes)):
            auto_pad = "SAME_UPPER"
        if auto_pad != "VALID":
            # ONNX Runtime's CPU kernels take a negative SAME total (a window smaller than
            # the stride) as negative pads and shift the windows; dmlops clamps it to 0, as
            # ONNX Runtime's DirectML provider does. Not compared here (see docs/differences.md).
            for i in range(k):
                while (-(-sizes[i] // strides[i]) - 1) * strides[i] + kernel[i] < sizes[i]:
                    kernel[i] += 1
        attrs["auto_pad"] = auto_pad
    else:
        pads = [int(rng.integers(0, w)) for w in kernel + kernel]
        for i in range(k):
            while sizes[i] + pads[i] + pads[k + i] < kernel[i]:
                pads[k + i] += 1
        attrs["pads"] = pads
        if rng.random() < 0.3:
            attrs["ceil_mode"] = 1
    attrs["count_include_pad"] = int(rng.integers(0, 2))
    attrs["channels_last"] = int(rng.integers(0, 2))
    dt = np.dtype(np.uint8 if rng.random() < 0.5 else np.int8)
    info = np.iinfo(dt)
    shape = [n, c] + sizes if not attrs["channels_last"] else [n] + sizes + [c]
    x = rng.integers(info.min, info.max + 1, size=shape).astype(dt)
    if rng.random() < 0.3:         # exact binary scales: halfway values are common
        xs = 2.0 ** -int(rng.integers(0, 8))
        ys = xs * 2.0 ** int(rng.integers(-2, 3))
    else:
        xs = 10 ** rng.uniform(-3, 0)
        ys = xs * 10 ** rng.uniform(-1, 1)
    zps = [np.array(rng.integers(info.min, info.max + 1), dt) for _ in range(2)]
    inputs = [x, np.array(xs, np.float32), zps[0], np.array(ys, np.float32), zps[1]]
    return attrs, inputs


def _node(attrs):
    return helper.make_node("QLinearAveragePool", _NAMES, ["y"], domain="com.microsoft",
                            **attrs)


def _ort(node, inputs):
    t = _TYPES[inputs[0].dtype]
    types = [t, TensorProto.FLOAT, t, TensorProto.FLOAT, t]
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, ty, None) for n, ty in zip(_NAMES, types)],
        [helper.make_tensor_value_info("y", t, None)])
    model = helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(_NAMES, inputs)))[0]


def _exact_t(attrs, inputs):
    """``t = mean(x - zp_in) * s_in / s_out`` in float64, NCHW, for classifying differences."""
    x = inputs[0]
    if attrs["channels_last"]:
        x = np.moveaxis(x, -1, 1)
    args = dox.pool_arguments(x.shape, attrs)
    include = bool(attrs["count_include_pad"])
    if include:
        args = dox._phantoms_as_padding(x.shape, args)
    mean = dml.average_pooling(x.astype(np.float64) - float(inputs[2]), **args,
                               include_padding=include, backend="reference")
    t = mean * float(inputs[1]) / float(inputs[3])
    return np.moveaxis(t, 1, -1) if attrs["channels_last"] else t


def test_qlinear_average_pool_matches_onnxruntime():
    rng = np.random.default_rng(20261122)
    total = equal = 0
    for _ in range(CASES):
        attrs, inputs = _case(rng)
        node = _node(attrs)
        want = _ort(node, inputs)
        got = dox.run_node(node, inputs, backend="reference")[0]
        assert got.shape == want.shape and got.dtype == want.dtype, attrs
        diff = got.astype(np.int64) - want.astype(np.int64)
        total += diff.size
        equal += int((diff == 0).sum())
        if diff.any():
            assert np.abs(diff).max() == 1, attrs
            t = _exact_t(attrs, inputs)[diff != 0]
            frac = t - np.floor(t)
            assert np.all(np.abs(frac - 0.5) < 1e-4), (attrs, t)   # (near-)halfway only
            if np.any(frac == 0.5):                                # exact: zero point odd
                assert int(inputs[4]) % 2 == 1, attrs
    rate = equal / total
    print(f"QLinearAveragePool agreement with onnxruntime: {rate:.4%} of {total} elements")
    assert rate >= MIN_AGREEMENT


def test_qlinear_average_pool_literal():
    # 2x2 window over [[10, 20], [30, 41]]: (101 - 4*0) * 0.5 / 4 / 0.25 = 50.5 -> 50 (even),
    # + 3 = 53; channels_last gives the same for one channel.
    x = np.array([[10, 20], [30, 41]], np.uint8).reshape(1, 1, 2, 2)
    inputs = [x, np.float32(0.5), np.uint8(0), np.float32(0.25), np.uint8(3)]
    for last in (0, 1):
        node = _node(dict(kernel_shape=[2, 2], channels_last=last))
        xi = np.moveaxis(x, 1, -1) if last else x
        assert dox.run_node(node, [xi] + inputs[1:])[0].ravel().tolist() == [53]


def test_a_scale_of_text_is_an_error_not_a_conversion():
    """A STRING-typed scale (an input or a STRING initializer) is dmlops's error naming the
    input, not Python's ValueError from a float conversion (issue 42)."""
    x = np.array([[10, 20], [30, 41]], np.uint8).reshape(1, 1, 2, 2)
    node = _node(dict(kernel_shape=[2, 2]))
    for i, name in ((1, "x_scale"), (3, "y_scale")):
        inputs = [x, np.float32(0.5), np.uint8(0), np.float32(0.25), np.uint8(3)]
        inputs[i] = np.array("0.5")
        with pytest.raises(dml.InvalidArgumentError, match=f"input {name} holds <U3 values"):
            dox.run_node(node, inputs)
