"""Every worked example of SPEC.md, through the functional layer and the description layer.

Each example is checked literally (the numbers are copied from the SPEC, or computed by hand in
the comments where the SPEC gives only the rule), and through both layers of SPEC 4.1 / 4.2.
"""

import numpy as np
import pytest

import dmlops as dml

F32 = np.float32

# SPEC 3.1: 2x2 window, stride 1, no padding.
AVG_X = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).reshape(1, 1, 3, 3)
AVG_Y = np.array([[3, 4], [6, 7]]).reshape(1, 1, 2, 2)
# SPEC 3.4 / 3.5.
MAX_X = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]]).reshape(1, 1, 3, 3)
MAX_Y = np.array([[4, 4], [6, 7]]).reshape(1, 1, 2, 2)
MAX_I = np.array([[4, 4], [7, 8]]).reshape(1, 1, 2, 2)
GRAD_DY = np.array([[1, 2], [4, 5]]).reshape(1, 1, 2, 2)
GRAD_DX = np.array([[0, 0, 0], [0, 3, 0], [0, 4, 5]]).reshape(1, 1, 3, 3)
# SPEC 3.9.
PAD_X = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]]).reshape(1, 1, 4, 4)
PAD_START = (0, 0, 1, 2)
PAD_END = (0, 0, 3, 4)
_A, _B = [9, 9, 1, 2, 3, 4, 9, 9, 9, 9], [9, 9, 5, 6, 7, 8, 9, 9, 9, 9]
_E1, _E5 = [1, 1, 1, 2, 3, 4, 4, 4, 4, 4], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8]
_R7, _R3 = [7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]
_S2, _S6 = [2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]
# WRAP is not worked out in the SPEC; from "x mod n" (SPEC 3.9): output row r reads input row
# (r - 1) mod 4, output column c reads input column (c - 2) mod 4.
_W7, _W3 = [7, 8, 5, 6, 7, 8, 5, 6, 7, 8], [3, 4, 1, 2, 3, 4, 1, 2, 3, 4]
PAD_EXPECTED = {
    "constant": [[9] * 10, _A, _B, _A, _B, [9] * 10, [9] * 10, [9] * 10],
    "edge": [_E1, _E1, _E5, _E1, _E5, _E5, _E5, _E5],
    "reflection": [_R7, _R3] * 4,
    "symmetric": [_S2, _S2, _S6, _S2, _S6, _S6, _S2, _S6],
    "wrap": [_W7, _W3] * 4,
}
# The lowest feature level that has each mode (SPEC 3.9: SYMMETRIC FL 3.0, WRAP FL 6.4).
PAD_MODE_LEVEL = {"constant": "1.0", "edge": "1.0", "reflection": "1.0",
                  "symmetric": "3.0", "wrap": "6.4"}


def td(dtype, sizes, strides=None, **kw):
    return dml.TensorDesc(dtype, sizes, strides, **kw)


def assert_same(got, want, dtype):
    """Equal values, the expected dtype and shape, bit for bit."""
    got = np.asarray(got)
    want = np.asarray(want).astype(dtype)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got.view(f"u{got.dtype.itemsize}"),
                          np.ascontiguousarray(want).view(f"u{want.dtype.itemsize}")), got


# --- SPEC 3.1 average pooling -------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_average_pooling_example_functional(dtype):
    y = dml.average_pooling(AVG_X.astype(dtype), 2)
    assert_same(y, AVG_Y, dtype)
    # SPEC 4.1: "Without out=, a new C-contiguous array is returned."
    assert y.flags.c_contiguous and isinstance(y, np.ndarray)
    # A spatial argument given as a sequence of k means the same thing.
    assert_same(dml.average_pooling(AVG_X.astype(dtype), (2, 2), strides=(1, 1),
                                    start_padding=(0, 0), end_padding=(0, 0),
                                    dilations=(1, 1)), AVG_Y, dtype)


@pytest.mark.parametrize("cls,level", [("AveragePoolingDesc", "1.0"),
                                       ("AveragePoolingDesc", None),
                                       ("AveragePooling1Desc", "6.2"),
                                       ("AveragePooling1Desc", "6.4")])
def test_average_pooling_example_desc(cls, level):
    kw = dict(input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 2, 2)),
              strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
              include_padding=False)
    if cls == "AveragePooling1Desc":
        kw["dilations"] = (1, 1)
    desc = getattr(dml, cls)(**kw)
    op = dml.compile_operator(desc, feature_level=level)
    out = op.execute(input_tensor=AVG_X.astype(F32))
    assert set(out) == {"output_tensor"}      # SPEC 4.2: dict keyed by output bind points
    assert_same(out["output_tensor"], AVG_Y, F32)
    # SPEC 4.2: "executes many times"; a given buffer is written.
    buf = np.full((1, 1, 2, 2), -1, F32)
    out2 = op.execute(input_tensor=AVG_X.astype(F32), output_tensor=buf)
    assert_same(buf, AVG_Y, F32)
    assert np.shares_memory(out2["output_tensor"], buf)


def test_average_pooling_padding_divisor_by_hand():
    # SPEC 3.1 on x = 1..9 (3x3), window 2, stride 2, padding 1+1 (P = 5, F = 2).
    # Window (0,0) holds the real element 1 and three padding positions; (0,1) holds 2, 3;
    # (1,0) holds 4, 7; (1,1) holds 5, 6, 8, 9.
    x = AVG_X.astype(F32)
    incl = dml.average_pooling(x, 2, strides=2, start_padding=1, end_padding=1,
                               include_padding=True)
    excl = dml.average_pooling(x, 2, strides=2, start_padding=1, end_padding=1,
                               include_padding=False)
    assert_same(incl, np.array([[1 / 4, 5 / 4], [11 / 4, 28 / 4]]).reshape(1, 1, 2, 2), F32)
    assert_same(excl, np.array([[1, 5 / 2], [11 / 2, 28 / 4]]).reshape(1, 1, 2, 2), F32)


@pytest.mark.parametrize("include_padding", [False, True])
def test_average_pooling_phantom_positions_by_hand(include_padding):
    # SPEC 2 / 3.1: input W = 3 ([1, 2, 3]), window 2, stride 2, end padding 1: P = 4, E = 2,
    # F = 2, so F + 1 = 3 is accepted. Output 0 covers x = 0, 1 (real); output 1 covers x = 2
    # (real) and 3 (padding, as 3 < S + EndPadding = 4); output 2 covers x = 4, 5: phantom only,
    # so its divisor is 0 and it gives +0.0 (SPEC 3.1).
    x = np.array([1, 2, 3], F32).reshape(1, 1, 1, 3)
    y = dml.average_pooling(x, (1, 2), strides=(1, 2), end_padding=(0, 1),
                            include_padding=include_padding, output_sizes=(1, 3))
    second = 3 / 2 if include_padding else 3.0
    assert_same(y, np.array([1.5, second, 0.0]).reshape(1, 1, 1, 3), F32)
    # Without end padding (P = 3, F = 1, F + 1 = 2), output 1 covers x = 2 (real) and 3
    # (phantom): the phantom position is not counted, whatever IncludePadding says.
    y = dml.average_pooling(x, (1, 2), strides=(1, 2), include_padding=include_padding,
                            output_sizes=(1, 1, 1, 2))   # full form (SPEC 4.1)
    assert_same(y, np.array([1.5, 3.0]).reshape(1, 1, 1, 2), F32)


def test_average_pooling_no_real_element_gives_positive_zero():
    # SPEC 3.1: "A window with divisor 0 ... gives +0.0". Start padding 2, window 2: output 0
    # covers x = -2, -1 only. With IncludePadding TRUE its divisor is 2 and its sum 0.
    x = np.array([-1, -2, -3], F32).reshape(1, 1, 1, 3)
    for incl in (False, True):
        y = dml.average_pooling(x, (1, 2), start_padding=(0, 2), include_padding=incl)
        assert y.shape == (1, 1, 1, 4)
        assert y[0, 0, 0, 0] == 0 and not np.signbit(y[0, 0, 0, 0])


# --- SPEC 3.4 max pooling -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint8,
                                   np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64])
def test_max_pooling_example_functional(dtype):
    x = MAX_X.astype(dtype)
    assert_same(dml.max_pooling(x, 2), MAX_Y, dtype)
    y, i = dml.max_pooling(x, 2, output_indices=True)
    assert_same(y, MAX_Y, dtype)
    assert_same(i, MAX_I, np.uint32)     # SPEC 7: indices_dtype None -> uint32 (small input)


def test_numpy_integers_as_spatial_arguments():
    # SPEC 4.1: "A spatial argument is an int ... or a sequence of length k"; NumPy integers
    # and arrays are ints and sequences (our reading).
    x = MAX_X.astype(F32)
    assert_same(dml.max_pooling(x, np.int64(2), strides=np.array([1, 1]),
                                start_padding=np.uint8(0)), MAX_Y, F32)


@pytest.mark.parametrize("idt", [np.uint32, np.uint64, np.int64, "uint64", "UINT64"])
def test_max_pooling_example_index_types(idt):
    y, i = dml.max_pooling(MAX_X.astype(F32), 2, output_indices=True, indices_dtype=idt)
    assert_same(y, MAX_Y, F32)
    want = np.uint64 if str(idt).lower() == "uint64" else idt
    assert_same(i, MAX_I, want)


def test_max_pooling_flat_index_includes_batch_and_channel():
    # SPEC 2: "for 4-D, ((n*C + c)*H + h)*W + w".
    N, C = 2, 3
    x = np.empty((N, C, 3, 3), F32)
    x[:] = MAX_X[0, 0]
    _, i = dml.max_pooling(x, 2, output_indices=True)
    for n in range(N):
        for c in range(C):
            assert_same(i[n, c], MAX_I[0, 0] + (n * C + c) * 9, np.uint32)


@pytest.mark.parametrize("cls,level,indices", [("MaxPoolingDesc", "1.0", False),
                                               ("MaxPooling1Desc", "2.0", False),
                                               ("MaxPooling1Desc", "2.0", True),
                                               ("MaxPooling2Desc", "2.1", True),
                                               ("MaxPooling2Desc", None, True),
                                               ("MaxPooling2Desc", "6.4", False)])
def test_max_pooling_example_desc(cls, level, indices):
    kw = dict(input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 2, 2)),
              strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0))
    if indices:
        kw["output_indices_tensor"] = td("UINT32", (1, 1, 2, 2))
    if cls == "MaxPooling2Desc":
        kw["dilations"] = (1, 1)
    desc = getattr(dml, cls)(**kw)
    out = dml.compile_operator(desc, feature_level=level).execute(input_tensor=MAX_X.astype(F32))
    expected_keys = {"output_tensor", "output_indices_tensor"} if indices else {"output_tensor"}
    assert set(out) == expected_keys
    assert_same(out["output_tensor"], MAX_Y, F32)
    if indices:
        assert_same(out["output_indices_tensor"], MAX_I, np.uint32)


def test_max_pooling2_desc_from_spec_4_2_literally():
    desc = dml.MaxPooling2Desc(
        input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
        output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
        output_indices_tensor=dml.TensorDesc("UINT32", (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1))
    op = dml.compile_operator(desc, feature_level="6.4")
    x = MAX_X.astype(F32)
    outputs = op.execute(input_tensor=x)
    assert_same(outputs["output_tensor"], MAX_Y, F32)
    assert_same(outputs["output_indices_tensor"], MAX_I, np.uint32)
    y_buffer = np.zeros((1, 1, 2, 2), F32)
    outputs = op.execute(input_tensor=x, output_tensor=y_buffer)
    assert_same(y_buffer, MAX_Y, F32)
    # SPEC 7: "The returned dict holds every output"; the unbound indices are a new array.
    assert_same(outputs["output_indices_tensor"], MAX_I, np.uint32)


def test_max_pooling_uint64_indices_desc():
    # SPEC 3.4: UINT32 or UINT64 indices from FL 5.0.
    desc = dml.MaxPooling2Desc(
        input_tensor=td("INT32", (1, 1, 3, 3)), output_tensor=td("INT32", (1, 1, 2, 2)),
        output_indices_tensor=td("UINT64", (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1))
    out = dml.compile_operator(desc, feature_level="5.0").execute(
        input_tensor=MAX_X.astype(np.int32))
    assert_same(out["output_tensor"], MAX_Y, np.int32)
    assert_same(out["output_indices_tensor"], MAX_I, np.uint64)


# --- SPEC 3.5 max-pooling gradient --------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_max_pooling_grad_example_functional(dtype):
    dx = dml.max_pooling_grad(MAX_X.astype(dtype), GRAD_DY.astype(dtype), 2)
    assert_same(dx, GRAD_DX, dtype)
    assert dx.flags.c_contiguous
    # Every other element is +0.0 (SPEC 3.5: "each output element starts at +0.0").
    assert not np.signbit(dx).any()


@pytest.mark.parametrize("level", ["3.0", "4.0", None])
def test_max_pooling_grad_example_desc(level):
    desc = dml.MaxPoolingGradDesc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)),
        input_gradient_tensor=td("FLOAT32", (1, 1, 2, 2)),
        output_gradient_tensor=td("FLOAT32", (1, 1, 3, 3)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1))
    out = dml.compile_operator(desc, feature_level=level).execute(
        input_tensor=MAX_X.astype(F32), input_gradient_tensor=GRAD_DY.astype(F32))
    assert set(out) == {"output_gradient_tensor"}
    assert_same(out["output_gradient_tensor"], GRAD_DX, F32)


# --- SPEC 3.3 quantized average pooling, worked by hand -----------------------------------
# x (INT8, 1x1x2x3) = [[-3, 0, 5], [7, -128, 127]], window 2x2, stride 1, no padding,
# s_in = 0.5, zp_in = -1, s_out = 2.0.
#   window 0: x - zp = -2, 1, 8, -127 -> acc = -120; t = -60; t = -15; t = -7.5 -> -8 (half even)
#   window 1: x - zp =  1, 6, -127, 128 -> acc = 8;   t = 4;   t = 1;   t = 0.5  ->  0 (half even)
# zp_out = 5 (INT8): [-3, 5]. zp_out = 2 (UINT8 output): [-6 -> clamped 0, 2].
# s_out = 0.0625: t = -240 -> -235 clamped to -128; t = 16 -> 21.
Q_X = np.array([[-3, 0, 5], [7, -128, 127]], np.int8).reshape(1, 1, 2, 3)


@pytest.mark.parametrize("s_out,zp_out,out_dtype,want", [
    (2.0, np.int8(5), np.int8, [-3, 5]),
    (2.0, np.uint8(2), np.uint8, [0, 2]),
    (0.0625, np.int8(5), np.int8, [-128, 21]),
])
def test_quantized_example_functional(s_out, zp_out, out_dtype, want):
    q = dml.quantized_linear_average_pooling(Q_X, 0.5, np.int8(-1), s_out, zp_out, 2)
    assert_same(q, np.array(want).reshape(1, 1, 1, 2), out_dtype)
    # Python ints for zero points, the output type given by output_dtype (SPEC 3.3).
    q = dml.quantized_linear_average_pooling(Q_X, 0.5, -1, s_out, int(zp_out), 2,
                                             output_dtype=out_dtype)
    assert_same(q, np.array(want).reshape(1, 1, 1, 2), out_dtype)
    # Scale / zero-point tensors of shape {1,1,1,1} (per tensor).
    q = dml.quantized_linear_average_pooling(
        Q_X, np.full((1, 1, 1, 1), 0.5, F32), np.full((1, 1, 1, 1), -1, np.int8),
        np.full((1, 1, 1, 1), s_out, F32), np.full((1, 1, 1, 1), zp_out, out_dtype), 2)
    assert_same(q, np.array(want).reshape(1, 1, 1, 2), out_dtype)


def test_quantized_missing_zero_points_and_default_output_type():
    # SPEC 3.3: "Zero points ... missing means 0"; output type defaults to the input's.
    # UINT8 x = [[10, 20, 30], [40, 50, 60]], s_in = 1, s_out = 4 (zp 0):
    #   window 0: acc = 120 -> 120 / 4 = 30 -> 7.5 -> 8 (half even)
    #   window 1: acc = 160 -> 40 -> 10
    x = np.array([[10, 20, 30], [40, 50, 60]], np.uint8).reshape(1, 1, 2, 3)
    q = dml.quantized_linear_average_pooling(x, 1.0, None, 4.0, None, 2)
    assert_same(q, np.array([8, 10]).reshape(1, 1, 1, 2), np.uint8)


@pytest.mark.parametrize("include_padding", [False, True])
def test_quantized_empty_window_gives_output_zero_point(include_padding):
    # UINT8 x = [4, 6], window 2, stride 2, start padding 2 (P = 4, F = 2), zp_in = 1,
    # s_in = 0.5, s_out = 0.25, zp_out = 7.
    #   output 0 covers x = -2, -1: count 0 (excl.) -> zp_out = 7 (step 5);
    #             with IncludePadding count 2, acc 0 -> t = 0 -> 7.
    #   output 1: acc = 3 + 5 = 8 -> 4 -> 2 -> 8 -> 15.
    x = np.array([4, 6], np.uint8).reshape(1, 1, 1, 2)
    q = dml.quantized_linear_average_pooling(x, 0.5, np.uint8(1), 0.25, np.uint8(7), (1, 2),
                                             strides=(1, 2), start_padding=(0, 2),
                                             include_padding=include_padding)
    assert_same(q, np.array([7, 15]).reshape(1, 1, 1, 2), np.uint8)


def test_quantized_per_channel_by_hand():
    # Per channel {1, C, 1, 1} (SPEC 3.3). C = 2, each channel x = [[1, 2], [3, 4]] (UINT8),
    # window 2: acc = 10 - 4 * zp_in[c]. Channel 0: zp_in 0, s_in 1, s_out 1, zp_out 0 -> 2.5
    # -> 2 (half even). Channel 1: zp_in 1, s_in 2, s_out 0.5, zp_out 100: acc = 6 -> 12 -> 3
    # -> 6 -> 106.
    x = np.tile(np.array([[1, 2], [3, 4]], np.uint8), (1, 2, 1, 1))
    q = dml.quantized_linear_average_pooling(
        x, np.array([1, 2], F32).reshape(1, 2, 1, 1),
        np.array([0, 1], np.uint8).reshape(1, 2, 1, 1),
        np.array([1, 0.5], F32).reshape(1, 2, 1, 1),
        np.array([0, 100], np.uint8).reshape(1, 2, 1, 1), 2)
    assert_same(q, np.array([2, 106]).reshape(1, 2, 1, 1), np.uint8)


@pytest.mark.parametrize("out_type,zp_out,want", [("INT8", 5, [-3, 5]), ("UINT8", 2, [0, 2])])
def test_quantized_example_desc(out_type, zp_out, want):
    one = (1, 1, 1, 1)
    desc = dml.QuantizedLinearAveragePoolingDesc(
        input_tensor=td("INT8", (1, 1, 2, 3)),
        input_scale_tensor=td("FLOAT32", one), input_zero_point_tensor=td("INT8", one),
        output_scale_tensor=td("FLOAT32", one), output_zero_point_tensor=td(out_type, one),
        output_tensor=td(out_type, (1, 1, 1, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1), include_padding=False)
    odt = np.dtype(out_type.lower())
    for level in ("6.2", None):
        out = dml.compile_operator(desc, feature_level=level).execute(
            input_tensor=Q_X, input_scale_tensor=np.full(one, 0.5, F32),
            input_zero_point_tensor=np.full(one, -1, np.int8),
            output_scale_tensor=np.full(one, 2.0, F32),
            output_zero_point_tensor=np.full(one, zp_out, odt))
        assert set(out) == {"output_tensor"}
        assert_same(out["output_tensor"], np.array(want).reshape(1, 1, 1, 2), odt)


def test_quantized_desc_optional_zero_points_left_out():
    # SPEC 3.3: InputZeroPointTensor and OutputZeroPointTensor are optional; missing means 0.
    one = (1, 1, 1, 1)
    desc = dml.QuantizedLinearAveragePoolingDesc(
        input_tensor=td("UINT8", (1, 1, 2, 3)), input_scale_tensor=td("FLOAT32", one),
        output_scale_tensor=td("FLOAT32", one), output_tensor=td("UINT8", (1, 1, 1, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1), include_padding=False)
    x = np.array([[10, 20, 30], [40, 50, 60]], np.uint8).reshape(1, 1, 2, 3)
    out = dml.compile_operator(desc).execute(input_tensor=x,
                                             input_scale_tensor=np.ones(one, F32),
                                             output_scale_tensor=np.full(one, 4, F32))
    assert_same(out["output_tensor"], np.array([8, 10]).reshape(1, 1, 1, 2), np.uint8)


# --- SPEC 3.9 padding ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(PAD_EXPECTED))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.uint8])
def test_padding_examples_functional(mode, dtype):
    want = np.array(PAD_EXPECTED[mode]).reshape(1, 1, 8, 10)
    x = PAD_X.astype(dtype)
    for spelling in (mode, mode.upper(), "DML_PADDING_MODE_" + mode.upper(),
                     getattr(dml.PaddingMode, mode.upper()),
                     int(getattr(dml.PaddingMode, mode.upper()))):
        y = dml.padding(x, PAD_START, PAD_END, mode=spelling, value=9)
        assert_same(y, want, dtype)
        assert y.flags.c_contiguous


def test_padding_reflect_alias():
    # SPEC 7: "reflection (alias reflect, as NumPy and ONNX say)".
    want = np.array(PAD_EXPECTED["reflection"]).reshape(1, 1, 8, 10)
    assert_same(dml.padding(PAD_X.astype(F32), PAD_START, PAD_END, mode="reflect"), want, F32)
    assert_same(dml.padding(PAD_X.astype(F32), PAD_START, PAD_END, mode="Reflect"), want, F32)


def test_padding_value_ignored_by_other_modes():
    # SPEC 3.9: "PaddingValue (ignored by the other modes)".
    for mode in ("edge", "reflection", "symmetric", "wrap"):
        y = dml.padding(PAD_X.astype(F32), PAD_START, PAD_END, mode=mode, value=123.0)
        assert_same(y, np.array(PAD_EXPECTED[mode]).reshape(1, 1, 8, 10), F32)


@pytest.mark.parametrize("mode", list(PAD_EXPECTED))
def test_padding_examples_desc(mode):
    want = np.array(PAD_EXPECTED[mode]).reshape(1, 1, 8, 10)
    desc = dml.PaddingDesc(input_tensor=td("FLOAT32", (1, 1, 4, 4)),
                           output_tensor=td("FLOAT32", (1, 1, 8, 10)),
                           padding_mode="DML_PADDING_MODE_" + mode.upper(), padding_value=9.0,
                           start_padding=PAD_START, end_padding=PAD_END)
    for level in (PAD_MODE_LEVEL[mode], None):
        out = dml.compile_operator(desc, feature_level=level).execute(
            input_tensor=PAD_X.astype(F32))
        assert set(out) == {"output_tensor"}
        assert_same(out["output_tensor"], want, F32)


@pytest.mark.parametrize("mode", list(PAD_EXPECTED))
def test_padding1_examples_desc(mode):
    # SPEC 3.9: "the same four examples (with PaddingValueDataType FLOAT32)"; PADDING1 is FL 5.0.
    want = np.array(PAD_EXPECTED[mode]).reshape(1, 1, 8, 10)
    desc = dml.Padding1Desc(input_tensor=td("FLOAT32", (1, 1, 4, 4)),
                            output_tensor=td("FLOAT32", (1, 1, 8, 10)),
                            padding_mode=getattr(dml.PaddingMode, mode.upper()),
                            padding_value_data_type="FLOAT32", padding_value=9.0,
                            start_padding=PAD_START, end_padding=PAD_END, dimension_count=4)
    level = max(PAD_MODE_LEVEL[mode], "5.0", key=float)    # PADDING1 is FL 5.0
    for lv in (level, None):
        out = dml.compile_operator(desc, feature_level=lv).execute(input_tensor=PAD_X.astype(F32))
        assert_same(out["output_tensor"], want, F32)


def test_padding1_int_example_desc():
    want = np.array(PAD_EXPECTED["constant"]).reshape(1, 1, 8, 10)
    desc = dml.Padding1Desc(input_tensor=td("INT16", (1, 1, 4, 4)),
                            output_tensor=td("INT16", (1, 1, 8, 10)), padding_mode="constant",
                            padding_value_data_type="INT16", padding_value=9,
                            start_padding=PAD_START, end_padding=PAD_END)
    out = dml.compile_operator(desc, feature_level="5.0").execute(
        input_tensor=PAD_X.astype(np.int16))
    assert_same(out["output_tensor"], want, np.int16)


# --- SPEC 7: description fields, operator types, enums ------------------------------------

OPERATOR_TYPES = {
    "AveragePoolingDesc": ("DML_OPERATOR_AVERAGE_POOLING", 56),
    "MaxPoolingDesc": ("DML_OPERATOR_MAX_POOLING", 58),
    "PaddingDesc": ("DML_OPERATOR_PADDING", 64),
    "MaxPooling1Desc": ("DML_OPERATOR_MAX_POOLING1", 91),
    "MaxPooling2Desc": ("DML_OPERATOR_MAX_POOLING2", 110),
    "MaxPoolingGradDesc": ("DML_OPERATOR_MAX_POOLING_GRAD", 131),
    "Padding1Desc": ("DML_OPERATOR_PADDING1", 155),
    "AveragePooling1Desc": ("DML_OPERATOR_AVERAGE_POOLING1", 166),
    "QuantizedLinearAveragePoolingDesc": ("DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING", 169),
}


def _example_desc(cls_name):
    """One valid description of each class (the SPEC's 3x3 examples)."""
    i4, o4 = td("FLOAT32", (1, 1, 3, 3)), td("FLOAT32", (1, 1, 2, 2))
    pool = dict(strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0))
    one = (1, 1, 1, 1)
    return {
        "AveragePoolingDesc": lambda: dml.AveragePoolingDesc(
            input_tensor=i4, output_tensor=o4, include_padding=False, **pool),
        "AveragePooling1Desc": lambda: dml.AveragePooling1Desc(
            input_tensor=i4, output_tensor=o4, include_padding=False, dilations=(1, 1), **pool),
        "MaxPoolingDesc": lambda: dml.MaxPoolingDesc(input_tensor=i4, output_tensor=o4, **pool),
        "MaxPooling1Desc": lambda: dml.MaxPooling1Desc(input_tensor=i4, output_tensor=o4, **pool),
        "MaxPooling2Desc": lambda: dml.MaxPooling2Desc(input_tensor=i4, output_tensor=o4,
                                                       dilations=(1, 1), **pool),
        "MaxPoolingGradDesc": lambda: dml.MaxPoolingGradDesc(
            input_tensor=i4, input_gradient_tensor=o4,
            output_gradient_tensor=td("FLOAT32", (1, 1, 3, 3)), dilations=(1, 1), **pool),
        "PaddingDesc": lambda: dml.PaddingDesc(
            input_tensor=i4, output_tensor=td("FLOAT32", (1, 1, 4, 4)), padding_mode="CONSTANT",
            padding_value=0.0, start_padding=(0, 0, 1, 0), end_padding=(0, 0, 0, 1)),
        "Padding1Desc": lambda: dml.Padding1Desc(
            input_tensor=i4, output_tensor=td("FLOAT32", (1, 1, 4, 4)), padding_mode="CONSTANT",
            padding_value_data_type="FLOAT32", padding_value=0.0,
            start_padding=(0, 0, 1, 0), end_padding=(0, 0, 0, 1)),
        "QuantizedLinearAveragePoolingDesc": lambda: dml.QuantizedLinearAveragePoolingDesc(
            input_tensor=td("UINT8", (1, 1, 3, 3)), input_scale_tensor=td("FLOAT32", one),
            output_scale_tensor=td("FLOAT32", one), output_tensor=td("UINT8", (1, 1, 2, 2)),
            dilations=(1, 1), include_padding=False, **pool),
    }[cls_name]()


@pytest.mark.parametrize("cls_name", list(OPERATOR_TYPES))
def test_operator_type_and_value(cls_name):
    # SPEC 7: "Each description class has operator_type ... and operator_type_value".
    name, value = OPERATOR_TYPES[cls_name]
    cls = getattr(dml, cls_name)
    assert cls.operator_type == name
    assert cls.operator_type_value == value
    desc = _example_desc(cls_name)
    assert desc.operator_type == name
    assert desc.operator_type_value == value
    dml.compile_operator(desc)        # and each example description is valid


def test_desc_fields_are_normalised_spellings():
    # SPEC 4.2 / 7: constructors normalise spellings; fields are DirectML's in snake_case;
    # dimension_count is optional and derived.
    desc = dml.MaxPooling2Desc(
        input_tensor=td("float32", [1, 1, 3, 3]), output_tensor=td(1, (1, 1, 2, 2)),
        output_indices_tensor=td("DML_TENSOR_DATA_TYPE_UINT32", (1, 1, 2, 2)),
        strides=[1, 1], window_size=[2, 2], start_padding=[0, 0], end_padding=[0, 0],
        dilations=[1, 1])
    assert tuple(desc.window_size) == (2, 2)
    assert tuple(desc.strides) == (1, 1)
    assert tuple(desc.start_padding) == (0, 0) and tuple(desc.end_padding) == (0, 0)
    assert tuple(desc.dilations) == (1, 1)
    assert desc.dimension_count == 2          # SPEC 3: k spatial dimensions for pooling
    assert desc.input_tensor.data_type == dml.DataType.FLOAT32
    assert desc.output_tensor.data_type == dml.DataType.FLOAT32
    assert desc.output_indices_tensor.data_type == dml.DataType.UINT32
    assert tuple(desc.input_tensor.sizes) == (1, 1, 3, 3)
    pad = _example_desc("PaddingDesc")
    assert pad.dimension_count == 4           # SPEC 3.9: "DimensionCount (= the rank)"
    assert pad.padding_mode == dml.PaddingMode.CONSTANT


@pytest.mark.parametrize("spelling", ["FLOAT32", "float32", "Float32",
                                      "DML_TENSOR_DATA_TYPE_FLOAT32",
                                      "dml_tensor_data_type_float32", 1, np.float32,
                                      np.dtype(np.float32)])
def test_data_type_spellings(spelling):
    # SPEC 1.1: "the DirectML name (with or without the prefix, case-insensitive), the enum
    # value, a NumPy dtype, or a NumPy dtype name".
    t = td(spelling, (1, 1, 3, 3))
    assert t.data_type == dml.DataType.FLOAT32


def test_data_type_enum_values():
    # SPEC 1.1 table.
    table = {"FLOAT32": 1, "FLOAT16": 2, "UINT32": 3, "UINT16": 4, "UINT8": 5, "INT32": 6,
             "INT16": 7, "INT8": 8, "FLOAT64": 9, "UINT64": 10, "INT64": 11}
    for name, value in table.items():
        assert int(getattr(dml.DataType, name)) == value
        t = td(value, (1,))
        assert t.data_type == getattr(dml.DataType, name)
        assert td(np.dtype(name.lower()), (1,)).data_type == getattr(dml.DataType, name)


def test_padding_mode_enum_values():
    # SPEC 7: "dml.PaddingMode: CONSTANT 0, EDGE 1, REFLECTION 2, SYMMETRIC 3, WRAP 4".
    assert [int(dml.PaddingMode[m]) for m in ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC",
                                              "WRAP")] == [0, 1, 2, 3, 4]


LEVELS = ["1.0", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1", "5.2", "6.0", "6.1",
          "6.2", "6.3", "6.4"]


def test_feature_level_values_and_spellings():
    # SPEC 1.3: 15 levels, values 0x1000 ... 0x6400; SPEC 7: accepted spellings.
    for lv in LEVELS:
        major, minor = lv.split(".")
        member = getattr(dml.FeatureLevel, f"L{major}_{minor}")
        assert int(member) == int(major, 16) * 0x1000 + int(minor, 16) * 0x100
    desc = _example_desc("MaxPooling2Desc")
    x = MAX_X.astype(F32)
    for spelling in ("2.1", "2_1", "DML_FEATURE_LEVEL_2_1", "dml_feature_level_2_1", 0x2100,
                     dml.FeatureLevel.L2_1, None, "extended", "EXTENDED"):
        out = dml.compile_operator(desc, feature_level=spelling).execute(input_tensor=x)
        assert_same(out["output_tensor"], MAX_Y, F32)


def test_tensor_desc_total_size_default():
    # SPEC 1.2: "(sum (sizes[d]-1)*strides[d] + 1) * element_size, rounded up to a multiple of 4".
    assert td("UINT8", (1, 1, 3, 3)).total_tensor_size_in_bytes == 12
    assert td("FLOAT16", (1, 1, 1, 3)).total_tensor_size_in_bytes == 8
    assert td("FLOAT32", (1, 1, 3, 4), (0, 0, 0, 1)).total_tensor_size_in_bytes == 16
    assert td("FLOAT64", (2, 3), (5, 1)).total_tensor_size_in_bytes == (5 + 2 + 1) * 8
    assert td("UINT8", (1, 1, 3, 3), total_tensor_size_in_bytes=100).total_tensor_size_in_bytes \
        == 100


# --- SPEC 2 helpers -----------------------------------------------------------------------

@pytest.mark.parametrize("args,kw,want", [
    # The SPEC 4.3 message example: input 9, window 3, stride 2, padding 1+1 -> 5 (floor);
    # (P - E) % s = 0, so ceil mode gives 5 as well.
    (((1, 1, 9, 9), 3), dict(strides=2, start_padding=1, end_padding=1), (1, 1, 5, 5)),
    (((1, 1, 9, 9), 3), dict(strides=2, start_padding=1, end_padding=1, ceil_mode=True),
     (1, 1, 5, 5)),
    # S = 8, W = 3, s = 2: F = 3, (8-3) % 2 = 1, F*s = 6 < 8 -> 4 in ceil mode.
    (((2, 3, 8), 3), dict(strides=2), (2, 3, 3)),
    (((2, 3, 8), 3), dict(strides=2, ceil_mode=True), (2, 3, 4)),
    # S = 5, W = 2, s = 3, pads 1+1: P = 7, F = 2, (7-2) % 3 = 2 but F*s = 6 >= S + sp = 6:
    # the extra window would start in the end padding, so no F + 1.
    (((1, 1, 5), 2), dict(strides=3, start_padding=1, end_padding=1, ceil_mode=True), (1, 1, 2)),
    # Dilations: W = 3, d = 2 -> E = 5; S = 6: F = 2 (stride 1); per-dimension sequences.
    (((1, 2, 6, 7, 5), (3, 2, 1)), dict(dilations=(2, 1, 1), strides=(1, 2, 3)),
     (1, 2, 2, 3, 2)),
])
def test_pooling_output_sizes(args, kw, want):
    assert tuple(int(v) for v in dml.pooling_output_sizes(*args, **kw)) == want


@pytest.mark.parametrize("args,kw,want", [
    (((1, 1, 9, 9), 3), dict(pads=[1, 2, 3, 4]), ((1, 2), (3, 4))),
    (((1, 1, 9, 9), 3), dict(auto_pad="VALID"), ((0, 0), (0, 0))),
    (((1, 1, 9, 9), 3), dict(pads=[1, 2, 3, 4], auto_pad="NOTSET"), ((1, 2), (3, 4))),
    # SAME: total = max(0, (ceil(S/stride) - 1)*stride + E - S).
    # S = 4, W = 2, s = 1: total 1 -> UPPER (0, 1), LOWER (1, 0).
    (((1, 1, 4), 2), dict(auto_pad="SAME_UPPER"), ((0,), (1,))),
    (((1, 1, 4), 2), dict(auto_pad="SAME_LOWER"), ((1,), (0,))),
    # S = 5, s = 2, W = 3, d = 2 (E = 5): total = 2*2 + 5 - 5 = 4 -> (2, 2).
    (((1, 1, 5), 3), dict(strides=2, dilations=2, auto_pad="SAME_UPPER"), ((2,), (2,))),
    # S = 7, s = 3, W = 2: total = 2*3 + 2 - 7 = 1.  S = 2, s = 3, W = 1: total = max(0, -1) = 0.
    (((1, 1, 7, 2), (2, 1)), dict(strides=3, auto_pad="SAME_LOWER"), ((1, 0), (0, 0))),
    (((1, 1, 7, 2), (2, 1)), dict(strides=3, auto_pad="SAME_UPPER"), ((0, 0), (1, 0))),
])
def test_onnx_pads(args, kw, want):
    start, end = dml.onnx_pads(*args, **kw)
    assert (tuple(int(v) for v in start), tuple(int(v) for v in end)) == want


@pytest.mark.parametrize("level", LEVELS)
def test_f_plus_one_accepted_at_every_level(level):
    # SPEC 7: "An output size of F + 1 is accepted at every level." W = 4, window 2, stride 2,
    # start padding 1: P = 5, F = 2, F + 1 = 3 (the last window covers x = 3 (real) and 4
    # (phantom)); rows: W = 3, window 2: F = 2, F + 1 = 3 (x = 2 real, 3 phantom).
    x = np.array([[1, 9, 3, 4], [5, 2, 8, 0], [7, 7, 6, 1]], F32).reshape(1, 1, 3, 4)
    desc = dml.MaxPoolingDesc(input_tensor=td("FLOAT32", (1, 1, 3, 4)),
                              output_tensor=td("FLOAT32", (1, 1, 3, 3)), strides=(1, 2),
                              window_size=(2, 2), start_padding=(0, 1), end_padding=(0, 0))
    out = dml.compile_operator(desc, feature_level=level).execute(input_tensor=x)
    # columns: {pad, 0}, {1, 2}, {3, phantom}; rows {0,1}, {1,2}, {2, phantom}
    want = [[5, 9, 4], [7, 8, 1], [7, 7, 1]]
    assert_same(out["output_tensor"], np.array(want).reshape(1, 1, 3, 3), F32)
