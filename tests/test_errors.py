"""Misuse of the API (SPEC 4.3 and 7): the error class, the message, and untouched arrays.

Each case is (callable, expected class, words the message must contain, caller arrays). SPEC
4.3: "A message names the operator and the field, shows the value received ... An error leaves
every caller-owned array untouched". SPEC 7 classifies: "every data-type or rank problem
(including a type mismatch between tensors, or with out=) is an UnsupportedError; every size,
shape value or numeric value problem is an InvalidArgumentError".
"""

import os
import re

import numpy as np
import pytest

import dmlops as dml

Inv, Uns = dml.InvalidArgumentError, dml.UnsupportedError
F32 = np.float32


def x4(shape=(1, 1, 4, 4), dtype=F32):
    return np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)


def td(dtype, sizes, strides=None, **kw):
    return dml.TensorDesc(dtype, sizes, strides, **kw)


def expect(cls, fn, arrays=(), words=()):
    """Run fn; it must raise exactly the class ``cls`` of SPEC 7 (not the other one), with
    every word of ``words`` in its message (a word may be a compiled regex), and leave every
    array of ``arrays`` bit-for-bit as it was."""
    before = [(a, a.copy(), a.flags.writeable) for a in arrays]
    with pytest.raises(dml.DmlError) as info:
        fn()
    e = info.value
    other = Uns if cls is Inv else Inv
    assert isinstance(e, cls) and not isinstance(e, other), (type(e), str(e))
    # SPEC 4.3: InvalidArgumentError is a ValueError, UnsupportedError a TypeError.
    assert isinstance(e, ValueError if cls is Inv else TypeError)
    msg = str(e)
    for w in words:
        if isinstance(w, re.Pattern):
            assert w.search(msg), (w.pattern, msg)
        else:
            assert w in msg, (w, msg)
    for a, copy, writeable in before:
        assert a.flags.writeable == writeable
        assert a.tobytes() == copy.tobytes(), "caller array changed"
    return msg


def test_error_classes():
    # SPEC 4.3: "dml.DmlError is the base class. dml.InvalidArgumentError(DmlError,
    # ValueError) ... dml.UnsupportedError(DmlError, TypeError)".
    assert issubclass(Inv, dml.DmlError) and issubclass(Inv, ValueError)
    assert issubclass(Uns, dml.DmlError) and issubclass(Uns, TypeError)
    assert not issubclass(Inv, TypeError) and not issubclass(Uns, ValueError)


# --- functional layer: types and ranks ---------------------------------------------------

@pytest.mark.parametrize("fn,dtype,word", [
    ("max_pooling", np.bool_, "bool"),
    ("average_pooling", np.complex64, "complex64"),
    ("max_pooling_grad", np.complex128, "complex128"),
    ("padding", np.longdouble, "float128"),
    ("average_pooling", np.int8, "int8"),              # SPEC 3.1: float types only
    ("max_pooling_grad", np.int32, "int32"),           # SPEC 3.5: float types only
    ("quantized_linear_average_pooling", np.float32, "float32"),   # SPEC 3.3: INT8/UINT8
    ("quantized_linear_average_pooling", np.int16, "int16"),
    ("max_pooling", np.dtype("U1"), "<u1"),
    ("padding", np.dtype(object), "object"),
    ("max_pooling", np.dtype("datetime64[s]"), "datetime64"),
])
def test_bad_dtype(fn, dtype, word):
    if dtype is np.longdouble and np.dtype(np.longdouble).itemsize == 8:
        pytest.skip("no distinct long double on this platform")
    x = np.zeros((1, 1, 3, 3), dtype)
    call = {
        "max_pooling": lambda: dml.max_pooling(x, 2),
        "average_pooling": lambda: dml.average_pooling(x, 2),
        "max_pooling_grad": lambda: dml.max_pooling_grad(x, np.zeros((1, 1, 2, 2), dtype), 2),
        "padding": lambda: dml.padding(x, 1, 1),
        "quantized_linear_average_pooling": lambda: dml.quantized_linear_average_pooling(
            x, 1.0, None, 1.0, None, 2),
    }[fn]
    msg = expect(Uns, call, [x], [fn])
    # The message shows the type received (any spelling: NumPy's or DirectML's).
    assert word in msg.lower() or word.upper() in msg or (word == "float128" and
                                                          "longdouble" in msg), msg


@pytest.mark.parametrize("shape", [(3, 3), (5,), ()])
def test_pooling_rank_below_three(shape):
    # SPEC 7: "pooling inputs of rank < 3 are an UnsupportedError".
    x = np.zeros(shape, F32)
    expect(Uns, lambda: dml.max_pooling(x, 1), [x], ["max_pooling", str(len(shape))])
    expect(Uns, lambda: dml.average_pooling(x, 1), [x], ["average_pooling"])


def test_rank_above_eight():
    # SPEC 2 / 1.2: rank at most 8 everywhere (extended mode allows 1 <= k <= 6).
    x = np.zeros((1,) * 9, F32)
    expect(Uns, lambda: dml.max_pooling(x, 1), [x], ["max_pooling", "9"])
    expect(Uns, lambda: dml.padding(x, 0, 0), [x], ["padding", "9"])


# --- functional layer: lengths and values -------------------------------------------------

def test_window_size_wrong_length():
    x = x4()
    expect(Inv, lambda: dml.max_pooling(x, (2, 2, 2)), [x], ["max_pooling", "window_size", "3"])


def test_zero_window():
    x = x4()
    expect(Inv, lambda: dml.max_pooling(x, (2, 0)), [x],
           ["max_pooling", "window_size[1]", "0"])


def test_zero_stride():
    x = x4()
    expect(Inv, lambda: dml.average_pooling(x, 2, strides=(1, 0)), [x],
           ["average_pooling", "strides[1]", "0"])


def test_zero_dilation():
    x = x4()
    expect(Inv, lambda: dml.max_pooling(x, 2, dilations=0), [x], ["max_pooling", "dilations"])


def test_negative_padding():
    x = x4()
    expect(Inv, lambda: dml.max_pooling(x, 2, start_padding=(0, -1)), [x],
           ["max_pooling", "start_padding[1]", "-1"])
    expect(Inv, lambda: dml.padding(x, 0, (0, 0, 0, -2)), [x], ["padding", "end_padding[3]",
                                                               "-2"])


def test_effective_window_larger_than_padded_size():
    # SPEC 2: "E > P is an error". W = 3, d = 2: E = 5 > P = 4.
    x = x4()
    msg = expect(Inv, lambda: dml.max_pooling(x, 3, dilations=(1, 2)), [x], ["max_pooling"])
    assert "5" in msg and "4" in msg
    expect(Inv, lambda: dml.average_pooling(x, (1, 5)), [x], ["average_pooling", "5"])


def test_output_sizes_not_f_or_f_plus_one():
    # SPEC 2 / 4.3: names the dimension and both accepted values (the SPEC's own example).
    x = np.zeros((1, 1, 9, 9), F32)
    kw = dict(strides=2, start_padding=1, end_padding=1)
    expect(Inv, lambda: dml.max_pooling(x, 3, output_sizes=(5, 7), **kw), [x],
           ["max_pooling", "output_sizes[1] = 7", "5", "6"])
    # SPEC 7: "A message indexes a sequence as the caller passed it": full form -> [3].
    expect(Inv, lambda: dml.max_pooling(x, 3, output_sizes=(1, 1, 5, 7), **kw), [x],
           ["output_sizes[3] = 7", "5", "6"])
    expect(Inv, lambda: dml.average_pooling(x, 3, output_sizes=(4, 5), **kw), [x],
           ["average_pooling", "output_sizes[0] = 4"])


def test_output_sizes_full_form_wrong_batch_or_channel():
    # SPEC 4.1: full output sizes have "the first two equal to the input's N and C".
    x = np.zeros((2, 3, 4, 4), F32)
    expect(Inv, lambda: dml.max_pooling(x, 2, output_sizes=(1, 3, 3, 3)), [x],
           ["max_pooling", "output_sizes[0]", "1"])
    expect(Inv, lambda: dml.max_pooling(x, 2, output_sizes=(2, 4, 3, 3)), [x],
           ["output_sizes[1]", "4"])
    expect(Inv, lambda: dml.max_pooling(x, 2, output_sizes=(3, 3, 3)), [x], ["output_sizes"])


def test_indices_uint32_for_more_than_2_32_elements():
    # SPEC 3.4 / 7: "an explicit uint32 for a larger input is an InvalidArgumentError". A
    # zero-stride view: no memory is needed, and validation comes before any work (SPEC 4.3).
    x = np.broadcast_to(F32(0), (1, 1, 65536, 65537))
    expect(Inv, lambda: dml.max_pooling(x, (65536, 65537), output_indices=True,
                                        indices_dtype=np.uint32), [],
           ["max_pooling", "indices_dtype"])


@pytest.mark.parametrize("idt", [np.float32, np.int32, np.uint16, np.bool_])
def test_indices_dtype_not_an_index_type(idt):
    # SPEC 3.4: indices are UINT32, UINT64 (extended: INT64); any other is a type problem.
    x = x4()
    expect(Uns, lambda: dml.max_pooling(x, 2, output_indices=True, indices_dtype=idt), [x],
           ["max_pooling", "indices_dtype"])


# --- out= (SPEC 7) ------------------------------------------------------------------------

def test_out_wrong_shape():
    x = x4()
    out = np.full((1, 1, 2, 2), 7, F32)
    expect(Inv, lambda: dml.max_pooling(x, 2, out=out), [x, out], ["max_pooling", "out"])


def test_out_wrong_dtype():
    x = x4()
    out = np.full((1, 1, 3, 3), 7, np.float64)
    expect(Uns, lambda: dml.average_pooling(x, 2, out=out), [x, out],
           ["average_pooling", "out", "float64"])


def test_out_read_only():
    x = x4()
    out = np.full((1, 1, 3, 3), 7, F32)
    out.flags.writeable = False
    expect(Inv, lambda: dml.max_pooling(x, 2, out=out), [x, out], ["max_pooling", "out"])


def test_out_overlapping_input():
    x = x4()
    expect(Inv, lambda: dml.average_pooling(x, 1, out=x), [x], ["average_pooling", "out"])
    big = np.zeros((1, 1, 5, 5), F32)
    inp, out = big[:, :, :4, :4], big[:, :, 2:, 2:]
    expect(Inv, lambda: dml.padding(inp[:, :, :3, :3], 0, 0, out=out[:, :, :3, :3]),
           [big], ["padding", "out"])
    # Every input counts: dy of the gradient, x of quantized pooling.
    dy = np.ones((1, 1, 4, 4), F32)
    expect(Inv, lambda: dml.max_pooling_grad(x, dy, 1, out=dy), [x, dy],
           ["max_pooling_grad", "out"])
    xq = np.arange(16, dtype=np.int8).reshape(1, 1, 4, 4)
    expect(Inv, lambda: dml.quantized_linear_average_pooling(xq, 1.0, 0, 1.0, 0, 1, out=xq),
           [xq], ["quantized_linear_average_pooling", "out"])
    v = np.zeros((1, 1, 4, 4), F32)
    expect(Inv, lambda: dml.max_pooling(x, 1, output_indices=True,
                                        out=(v, x.view(np.uint32))), [x, v], ["out"])


def test_out_indices_wrong_dtype_and_pair():
    # SPEC 7: "out indices must have the resolved type"; "both elements of the pair must be
    # arrays" (the SPEC does not classify the latter; only DmlError is required here).
    x = x4()
    v = np.full((1, 1, 3, 3), 7, F32)
    i64 = np.full((1, 1, 3, 3), 7, np.uint64)
    expect(Uns, lambda: dml.max_pooling(x, 2, output_indices=True, out=(v, i64)), [x, v, i64],
           ["max_pooling", "out"])
    with pytest.raises(dml.DmlError):
        dml.max_pooling(x, 2, output_indices=True, out=(v, None))
    with pytest.raises(dml.DmlError):
        dml.max_pooling(x, 2, output_indices=True, out=v)      # "out is a pair"
    assert (v == 7).all()


def test_out_wrong_shape_padding_and_grad():
    x = x4()
    out = np.full((1, 1, 5, 5), 7, F32)
    expect(Inv, lambda: dml.padding(x, 1, 1, out=out), [x, out], ["padding", "out"])
    dy = np.ones((1, 1, 3, 3), F32)
    out2 = np.full((1, 1, 3, 3), 7, F32)
    expect(Inv, lambda: dml.max_pooling_grad(x, dy, 2, out=out2), [x, dy, out2],
           ["max_pooling_grad", "out"])


# --- max-pooling gradient ------------------------------------------------------------------

def test_grad_dy_wrong_shape_or_type():
    x = x4()
    dy = np.ones((1, 1, 2, 2), F32)          # the forward output is 3x3 (F) or 4x4 (F + 1)
    expect(Inv, lambda: dml.max_pooling_grad(x, dy, 2), [x, dy], ["max_pooling_grad", "dy"])
    dy16 = np.ones((1, 1, 3, 3), np.float16)
    expect(Uns, lambda: dml.max_pooling_grad(x, dy16, 2), [x, dy16], ["max_pooling_grad"])


# --- quantized (SPEC 3.3, 7) ---------------------------------------------------------------

QX = np.arange(2 * 3 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3, 3)


def q(*args, **kw):
    return lambda: dml.quantized_linear_average_pooling(QX, *args, **kw)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf"), -0.0, 1e-50, 1e39])
def test_quantized_bad_scale(scale):
    # SPEC 3.3: "A scale that is 0, negative, NaN or infinite is an error"; SPEC 7: "cast to
    # float32 (round to nearest) and then must be finite and > 0" (1e-50 -> 0, 1e39 -> inf).
    expect(Inv, q(scale, None, 1.0, None, 2), [QX],
           ["quantized_linear_average_pooling", "input_scale"])
    s = np.full((1, 1, 1, 1), scale)
    expect(Inv, q(1.0, None, s, None, 2), [QX, s], ["output_scale"])


def test_quantized_per_channel_scale_with_one_bad_channel():
    s = np.array([1, 0, 1], F32).reshape(1, 3, 1, 1)
    expect(Inv, q(s, None, 1.0, None, 2), [QX, s], ["input_scale", "0"])


def test_quantized_scale_shape_c_suggests_reshape():
    # SPEC 7: "(C,) is an InvalidArgumentError whose message suggests reshape(1, C, 1, 1)".
    s = np.ones(3, F32)
    msg = expect(Inv, q(s, None, 1.0, None, 2), [QX, s], ["input_scale"])
    assert re.search(r"reshape\(1, ?(3|C), ?1, ?1\)", msg), msg
    for bad in (np.ones((1, 3, 1), F32), np.ones((1, 2, 1, 1), F32), np.ones((3, 1, 1, 1), F32)):
        expect(Inv, q(1.0, None, bad, None, 2), [QX, bad], ["output_scale"])


def test_quantized_zero_point_out_of_range():
    # SPEC 7: "an int outside the type's range is an InvalidArgumentError".
    expect(Inv, q(1.0, 300, 1.0, None, 2), [QX], ["input_zero_point", "300"])
    expect(Inv, q(1.0, -1, 1.0, None, 2), [QX], ["input_zero_point", "-1"])
    expect(Inv, q(1.0, None, 1.0, 128, 2, output_dtype=np.int8), [QX],
           ["output_zero_point", "128"])


def test_quantized_zero_point_array_wrong_type():
    # SPEC 7: "a zero-point array must have exactly its tensor's type" (a type problem).
    zp = np.full((1, 1, 1, 1), 3, np.int16)
    expect(Uns, q(1.0, zp, 1.0, None, 2), [QX, zp], ["input_zero_point"])
    zp8 = np.int8(3)
    expect(Uns, q(1.0, zp8, 1.0, None, 2), [QX], ["input_zero_point"])


def test_quantized_output_type_disagreement():
    # SPEC 7: "Output type: output_dtype, else out.dtype, else the output zero point's type,
    # else the input's; any disagreement among those given is an error" (a type mismatch:
    # UnsupportedError).
    zp = np.uint8(3)
    expect(Uns, q(1.0, None, 1.0, zp, 2, output_dtype=np.int8), [QX], ["output"])
    out = np.full((2, 3, 2, 2), 5, np.int8)
    expect(Uns, q(1.0, None, 1.0, None, 2, output_dtype=np.uint8, out=out), [QX, out], ["out"])
    expect(Uns, q(1.0, None, 1.0, np.full((1, 1, 1, 1), 3, np.uint8), 2, out=out), [QX, out],
           ["out"])
    expect(Uns, q(1.0, None, 1.0, None, 2, output_dtype=np.int16), [QX], ["output_dtype"])


# --- padding --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["mirror", "DML_PADDING_MODE_MIRROR", 5, -1])
def test_unknown_padding_mode(mode):
    # SPEC 5: "a value that no level accepts is an InvalidArgumentError".
    x = x4()
    expect(Inv, lambda: dml.padding(x, 1, 1, mode=mode), [x], ["padding", "mode", str(mode)])


def test_padding_sequence_wrong_length():
    x = x4()
    expect(Inv, lambda: dml.padding(x, (1, 1), 0), [x], ["padding", "start_padding"])


# --- check order (SPEC 7: types, ranks and level; then lengths; then values) --------------

def test_types_before_values():
    x = np.zeros((1, 1, 3, 3), np.bool_)
    expect(Uns, lambda: dml.max_pooling(x, 0, strides=0), [x], ["max_pooling"])
    y = np.zeros((3, 3), F32)
    expect(Uns, lambda: dml.max_pooling(y, 0), [y], ["max_pooling"])


def test_lengths_before_values():
    x = x4()
    msg = expect(Inv, lambda: dml.max_pooling(x, (2, 2), strides=0, start_padding=(1, 1, 1)),
                 [x], ["start_padding"])
    assert "strides" not in msg


def test_quantized_lengths_before_zero_point_values():
    # a Python int zero point's range is a value: the window's length is checked first
    msg = expect(Inv, q(1.0, 300, 1.0, None, (2, 2, 2)), [QX], ["window_size"])
    assert "300" not in msg
    s = np.ones(5, F32)
    msg = expect(Inv, q(s, None, 1.0, -1, 2), [QX, s], ["input_scale"])
    assert "output_zero_point" not in msg


# --- description layer: compile_operator (SPEC 4.2, 5, 7) --------------------------------

def maxpool2(in_t="FLOAT32", out_t=None, shape=(1, 1, 3, 3), out_shape=None, idx=None, **kw):
    k = len(shape) - 2
    base = dict(strides=(1,) * k, window_size=(2,) * k, start_padding=(0,) * k,
                end_padding=(0,) * k, dilations=(1,) * k)
    base.update(kw)
    out_shape = out_shape or shape[:2] + tuple(s - 1 for s in shape[2:])
    extra = {"output_indices_tensor": td(idx, out_shape)} if idx else {}
    return dml.MaxPooling2Desc(input_tensor=td(in_t, shape), output_tensor=td(out_t or in_t,
                                                                              out_shape),
                               **extra, **base)


LEVEL_RE = [re.compile(r"1[._]0"), re.compile(r"6[._]4"), re.compile(r"3[._]1")]


@pytest.mark.parametrize("level", ["6.5", "7.0", "6_5", "DML_FEATURE_LEVEL_6_5", 0x6500,
                                   "latest", "", 64])
def test_feature_level_misspelled(level):
    # SPEC 7: "Anything else is an InvalidArgumentError listing the 15 levels."
    expect(Inv, lambda: dml.compile_operator(maxpool2(), feature_level=level), [],
           LEVEL_RE + [str(level)])


@pytest.mark.parametrize("build,level,words", [
    # SPEC 3: operators by level; SPEC 5 "AVERAGE_POOLING1 before 6.2, SYMMETRIC before 3.0".
    (lambda: dml.AveragePooling1Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1), include_padding=False), "6.1", ["AVERAGE_POOLING1"]),
    (lambda: dml.PaddingDesc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 5, 5)),
        padding_mode="SYMMETRIC", padding_value=0.0, start_padding=(0, 0, 1, 1),
        end_padding=(0, 0, 1, 1)), "2.1", ["PADDING", "SYMMETRIC"]),
    (lambda: dml.PaddingDesc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 5, 5)),
        padding_mode="WRAP", padding_value=0.0, start_padding=(0, 0, 1, 1),
        end_padding=(0, 0, 1, 1)), "6.3", ["PADDING", "WRAP"]),
    (lambda: dml.Padding1Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 5, 5)),
        padding_mode="WRAP", padding_value_data_type="FLOAT32", padding_value=0.0,
        start_padding=(0, 0, 1, 1), end_padding=(0, 0, 1, 1)), "6.3", ["PADDING1", "WRAP"]),
    (lambda: dml.Padding1Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 5, 5)),
        padding_mode="CONSTANT", padding_value_data_type="FLOAT32", padding_value=0.0,
        start_padding=(0, 0, 1, 1), end_padding=(0, 0, 1, 1)), "4.1", ["PADDING1"]),
    (lambda: dml.PaddingDesc(      # INT32 from FL 2.1
        input_tensor=td("INT32", (1, 1, 3, 3)), output_tensor=td("INT32", (1, 1, 5, 5)),
        padding_mode="CONSTANT", padding_value=0.0, start_padding=(0, 0, 1, 1),
        end_padding=(0, 0, 1, 1)), "2.0", ["PADDING", "INT32"]),
    (lambda: dml.PaddingDesc(      # FLOAT64 from FL 5.0
        input_tensor=td("FLOAT64", (1, 1, 3, 3)), output_tensor=td("FLOAT64", (1, 1, 5, 5)),
        padding_mode="CONSTANT", padding_value=0.0, start_padding=(0, 0, 1, 1),
        end_padding=(0, 0, 1, 1)), "4.1", ["PADDING", "FLOAT64"]),
    (lambda: dml.PaddingDesc(      # 1-3 dims from FL 3.1
        input_tensor=td("FLOAT32", (3, 3)), output_tensor=td("FLOAT32", (5, 5)),
        padding_mode="CONSTANT", padding_value=0.0, start_padding=(1, 1),
        end_padding=(1, 1)), "3.0", ["PADDING"]),
    (lambda: maxpool2("INT8"), "2.1", ["MAX_POOLING2", "INT8"]),        # INT8 from FL 3.0
    (lambda: maxpool2("INT32"), "4.1", ["MAX_POOLING2", "INT32"]),      # INT32 from FL 5.0
    (lambda: maxpool2("FLOAT64"), "6.4", ["MAX_POOLING2", "FLOAT64"]),  # extended only
    (lambda: maxpool2(idx="UINT64"), "4.1", ["MAX_POOLING2", "UINT64"]),
    (lambda: maxpool2(idx="INT64"), "6.4", ["MAX_POOLING2", "INT64"]),  # extended only
    (lambda: maxpool2(shape=(1, 1, 3)), "6.4", ["MAX_POOLING2"]),       # k = 1: extended only
    (lambda: maxpool2(shape=(1, 1, 3, 3, 3, 3)), "6.4", ["MAX_POOLING2"]),
    (lambda: maxpool2(), "2.0", ["MAX_POOLING2"]),                      # MAX_POOLING2: FL 2.1
    (lambda: dml.MaxPooling1Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0)), "1.0",
     ["MAX_POOLING1"]),
    (lambda: dml.MaxPoolingGradDesc(    # 5-D from FL 4.0
        input_tensor=td("FLOAT32", (1, 1, 3, 3, 3)),
        input_gradient_tensor=td("FLOAT32", (1, 1, 2, 2, 2)),
        output_gradient_tensor=td("FLOAT32", (1, 1, 3, 3, 3)), strides=(1, 1, 1),
        window_size=(2, 2, 2), start_padding=(0, 0, 0), end_padding=(0, 0, 0),
        dilations=(1, 1, 1)), "3.0", ["MAX_POOLING_GRAD"]),
    (lambda: dml.MaxPoolingGradDesc(    # the operator is FL 3.0
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), input_gradient_tensor=td("FLOAT32",
                                                                           (1, 1, 2, 2)),
        output_gradient_tensor=td("FLOAT32", (1, 1, 3, 3)), strides=(1, 1), window_size=(2, 2),
        start_padding=(0, 0), end_padding=(0, 0), dilations=(1, 1)), "2.1",
     ["MAX_POOLING_GRAD"]),
    (lambda: dml.AveragePoolingDesc(
        input_tensor=td("FLOAT64", (1, 1, 3, 3)), output_tensor=td("FLOAT64", (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        include_padding=False), "6.4", ["AVERAGE_POOLING", "FLOAT64"]),
    (lambda: dml.QuantizedLinearAveragePoolingDesc(
        input_tensor=td("UINT8", (1, 1, 3, 3)), input_scale_tensor=td("FLOAT32", (1, 1, 1, 1)),
        output_scale_tensor=td("FLOAT32", (1, 1, 1, 1)), output_tensor=td("UINT8",
                                                                          (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1), include_padding=False), "6.1", ["QUANTIZED_LINEAR_AVERAGE_POOLING"]),
])
def test_not_in_feature_level(build, level, words):
    expect(Uns, lambda: dml.compile_operator(build(), feature_level=level), [], words)


def test_next_level_accepts():
    # The counterpart of the table above: each rejected thing is accepted at its level.
    dml.compile_operator(maxpool2("INT8"), feature_level="3.0")
    dml.compile_operator(maxpool2("INT32", idx="UINT64"), feature_level="5.0")
    dml.compile_operator(maxpool2(), feature_level="2.1")
    dml.compile_operator(maxpool2("FLOAT64", idx="INT64", shape=(1, 1, 3)))
    dml.compile_operator(dml.MaxPoolingGradDesc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3, 3)),
        input_gradient_tensor=td("FLOAT32", (1, 1, 2, 2, 2)),
        output_gradient_tensor=td("FLOAT32", (1, 1, 3, 3, 3)), strides=(1, 1, 1),
        window_size=(2, 2, 2), start_padding=(0, 0, 0), end_padding=(0, 0, 0),
        dilations=(1, 1, 1)), feature_level="4.0")
    dml.compile_operator(dml.PaddingDesc(
        input_tensor=td("FLOAT32", (3, 3)), output_tensor=td("FLOAT32", (5, 5)),
        padding_mode="SYMMETRIC", padding_value=0.0, start_padding=(1, 1),
        end_padding=(1, 1)), feature_level="3.1")


def test_desc_type_mismatch_between_tensors():
    expect(Uns, lambda: dml.compile_operator(maxpool2("FLOAT32", "FLOAT16")), [],
           ["MAX_POOLING2", "output_tensor"])
    expect(Uns, lambda: dml.compile_operator(maxpool2(idx="FLOAT32")), [],
           ["MAX_POOLING2", "output_indices_tensor"])


def test_desc_output_sizes_wrong():
    msg = expect(Inv, lambda: dml.compile_operator(maxpool2(out_shape=(1, 1, 2, 4))), [],
                 ["MAX_POOLING2", "output_tensor", "4"])
    assert "2" in msg and "3" in msg            # both accepted values: F = 2, F + 1 = 3
    expect(Inv, lambda: dml.compile_operator(maxpool2(out_shape=(1, 2, 2, 2))), [],
           ["output_tensor"])


def test_desc_window_size_wrong_length_and_dimension_count():
    expect(Inv, lambda: dml.compile_operator(maxpool2(window_size=(2, 2, 2))), [],
           ["MAX_POOLING2", "window_size"])
    # SPEC 7: "dimension_count is optional (derived) and checked when given". Our reading: a
    # wrong count is a value problem (InvalidArgumentError), like a wrong argument length.
    expect(Inv, lambda: dml.compile_operator(maxpool2(dimension_count=4)), [],
           ["MAX_POOLING2", "dimension_count", "4"])
    pad = dml.PaddingDesc(input_tensor=td("FLOAT32", (1, 1, 3, 3)),
                          output_tensor=td("FLOAT32", (1, 1, 5, 5)), padding_mode="EDGE",
                          padding_value=0.0, start_padding=(0, 0, 1, 1),
                          end_padding=(0, 0, 1, 1), dimension_count=2)
    expect(Inv, lambda: dml.compile_operator(pad), [], ["PADDING", "dimension_count", "2"])


def test_desc_zero_window_and_effective_window():
    expect(Inv, lambda: dml.compile_operator(maxpool2(window_size=(2, 0))), [],
           ["window_size[1]", "0"])
    expect(Inv, lambda: dml.compile_operator(maxpool2(strides=(0, 1))), [], ["strides[0]"])
    expect(Inv, lambda: dml.compile_operator(maxpool2(window_size=(4, 2), out_shape=(1, 1, 1, 2))),
           [], ["MAX_POOLING2"])


def test_desc_rank_below_three():
    expect(Uns, lambda: dml.compile_operator(dml.MaxPoolingDesc(
        input_tensor=td("FLOAT32", (3, 3)), output_tensor=td("FLOAT32", (2, 2)), strides=(),
        window_size=(), start_padding=(), end_padding=())), [], ["MAX_POOLING"])


def test_tensor_desc_size_zero():
    # SPEC 7: "any size 0 in a TensorDesc is an InvalidArgumentError"; constructors only
    # normalise spellings, compile_operator checks.
    desc = maxpool2(shape=(1, 0, 3, 3), out_shape=(1, 0, 2, 2))
    expect(Inv, lambda: dml.compile_operator(desc), [], ["MAX_POOLING2", "sizes", "0"])


def test_tensor_desc_total_size_too_small():
    # SPEC 1.2: the minimum rounds up to a multiple of 4; "a smaller given value is an error".
    for given in (8, 9, 11):
        desc = dml.PaddingDesc(
            input_tensor=td("UINT8", (1, 1, 3, 3), total_tensor_size_in_bytes=given),
            output_tensor=td("UINT8", (1, 1, 3, 3)), padding_mode="CONSTANT", padding_value=0,
            start_padding=(0, 0, 0, 0), end_padding=(0, 0, 0, 0))
        expect(Inv, lambda: dml.compile_operator(desc), [],
               ["PADDING", "total_tensor_size_in_bytes", str(given)])
    ok = dml.PaddingDesc(input_tensor=td("UINT8", (1, 1, 3, 3), total_tensor_size_in_bytes=12),
                         output_tensor=td("UINT8", (1, 1, 3, 3)), padding_mode="CONSTANT",
                         padding_value=0, start_padding=(0, 0, 0, 0), end_padding=(0, 0, 0, 0))
    dml.compile_operator(ok)


def test_output_strides_that_alias():
    # SPEC 7: "output strides that make two elements share memory are an InvalidArgumentError".
    desc = dml.MaxPooling2Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)),
        output_tensor=td("FLOAT32", (1, 1, 2, 2), (4, 4, 0, 1)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1))
    x = x4((1, 1, 3, 3))
    buf = np.full(8, 5, F32)

    def run():
        dml.compile_operator(desc).execute(input_tensor=x, output_tensor=buf)
    expect(Inv, run, [x, buf], ["MAX_POOLING2", "output_tensor"])


def test_output_strides_that_do_not_alias_are_accepted():
    # Only strides that really make two elements share memory are an error (SPEC 4.2):
    # (2, 3) with strides (3, 2) addresses 0, 2, 4, 3, 5, 7, all distinct, though the
    # smaller stride's reach passes the larger.
    desc = dml.PaddingDesc(input_tensor=td("FLOAT32", (2, 3)),
                           output_tensor=td("FLOAT32", (2, 3), (3, 2)),
                           start_padding=(0, 0), end_padding=(0, 0))
    x = np.arange(6, dtype=F32).reshape(2, 3)
    buf = np.full(8, -1, F32)
    dml.compile_operator(desc).execute(input_tensor=x, output_tensor=buf)
    np.testing.assert_array_equal(buf, [0, -1, 1, 3, 2, 4, -1, 5])
    for sizes, strides in (((2, 3), (2, 1)), ((3, 4), (3, 1)), ((2, 2, 2), (3, 2, 1))):
        bad = dml.PaddingDesc(input_tensor=td("FLOAT32", sizes),
                              output_tensor=td("FLOAT32", sizes, strides),
                              start_padding=(0,) * len(sizes), end_padding=(0,) * len(sizes))
        expect(Inv, lambda: dml.compile_operator(bad), [], ["PADDING", "output_tensor.strides"])


def test_strides_alias_is_exact():
    from hypothesis import given, settings, strategies as st
    from dmlops.tensor import strides_alias

    @settings(max_examples=400, deadline=None)
    @given(st.lists(st.tuples(st.integers(1, 6), st.integers(-25, 25)), min_size=1, max_size=4),
           st.sampled_from([1, 2, 4]))
    def check(dims, itemsize):
        offsets = np.zeros(1, np.int64)
        for n, stride in dims:
            offsets = (offsets[:, None] + np.arange(n) * stride).ravel()
        offsets.sort()
        shares = bool(np.any(np.diff(offsets) < itemsize))
        assert strides_alias([n for n, _ in dims], [s for _, s in dims], itemsize) == shares
    check()


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_out_whose_elements_share_memory(backend):
    # An out= written twice over would depend on the order of the writes: the same rule as
    # for descriptions' output strides, and nothing is written.
    from numpy.lib.stride_tricks import as_strided
    x = np.arange(2 * 3 * 6 * 7, dtype=F32).reshape(2, 3, 6, 7)
    buf = np.zeros(400, F32)
    out = as_strided(buf, (2, 3, 8, 9), (200, 200, 12, 4))
    expect(Inv, lambda: dml.padding(x, (0, 0, 1, 1), (0, 0, 1, 1), mode="reflection", out=out,
                                    backend=backend), [x, buf], ["padding", "out", "share"])
    xm = x4()
    zero = as_strided(np.zeros(9, F32), (1, 1, 3, 3), (0, 0, 0, 4))
    expect(Inv, lambda: dml.max_pooling(xm, 2, out=zero, backend=backend), [xm],
           ["max_pooling", "out"])
    # a layout whose elements are distinct, though not nested, is fine
    fine = as_strided(np.zeros(8, F32), (2, 3), (12, 8))
    dml.padding(np.ones((2, 3), F32), 0, 0, out=fine, backend=backend)
    assert fine.tolist() == [[1, 1, 1], [1, 1, 1]]


def test_execute_output_binding_whose_elements_share_memory():
    from numpy.lib.stride_tricks import as_strided
    desc = dml.PaddingDesc(input_tensor=td("FLOAT32", (2, 3)), output_tensor=td("FLOAT32", (2, 3)),
                           start_padding=(0, 0), end_padding=(0, 0))
    x = np.ones((2, 3), F32)
    buf = np.zeros(4, F32)
    out = as_strided(buf, (2, 3), (4, 4))
    expect(Inv, lambda: dml.compile_operator(desc).execute(input_tensor=x, output_tensor=out),
           [x, buf], ["PADDING", "output_tensor", "share"])


def test_desc_missing_input_tensor():
    # None for a required tensor is an error naming it (not an AttributeError from deriving
    # dimension_count); an array where a TensorDesc belongs is one too.
    for make in (lambda t: dml.PaddingDesc(input_tensor=t, output_tensor=td("FLOAT32", (2,)),
                                           start_padding=0, end_padding=0),
                 lambda t: dml.MaxPooling2Desc(input_tensor=t,
                                               output_tensor=td("FLOAT32", (1, 1, 2, 2)),
                                               window_size=1)):
        expect(Inv, lambda: dml.compile_operator(make(None)), [], ["input_tensor", "required"])
        with pytest.raises(dml.DmlError, match="input_tensor"):
            dml.compile_operator(make(np.zeros((1, 1, 2, 2), F32)))


def test_tensor_desc_data_type_none_and_total_size_not_an_int():
    desc = dml.PaddingDesc(input_tensor=td(None, (2,)), output_tensor=td("FLOAT32", (2,)),
                           start_padding=0, end_padding=0)
    expect(Uns, lambda: dml.compile_operator(desc), [], ["PADDING", "input_tensor", "None"])
    for total in (12.0, "8", True):
        desc = dml.PaddingDesc(input_tensor=td("FLOAT32", (2,), total_tensor_size_in_bytes=total),
                               output_tensor=td("FLOAT32", (2,)), start_padding=0, end_padding=0)
        expect(Inv, lambda: dml.compile_operator(desc), [],
               ["PADDING", "total_tensor_size_in_bytes", "integer"])


def test_unordered_collections_are_not_sequences():
    # A spatial argument is an int or a sequence (SPEC 4.1): a set's order is arbitrary.
    x = x4()
    expect(Inv, lambda: dml.max_pooling(x, {1, 2}), [x], ["max_pooling", "window_size", "set"])
    expect(Inv, lambda: dml.padding(x, {0, 1}, 0), [x], ["padding", "start_padding", "set"])
    expect(Inv, lambda: dml.average_pooling(x, 2, dilations=frozenset({1, 2})), [x],
           ["dilations", "frozenset"])
    desc = dml.MaxPooling2Desc(input_tensor=td("FLOAT32", (1, 1, 4, 4)),
                               output_tensor=td("FLOAT32", (1, 1, 4, 3)), window_size={1, 2})
    expect(Inv, lambda: dml.compile_operator(desc), [], ["MAX_POOLING2", "window_size", "set"])


def test_compile_unknown_backend():
    expect(Uns, lambda: dml.compile_operator(maxpool2(), backend="no-such-backend"), [],
           ["no-such-backend"])


# --- description layer: execute (SPEC 7) --------------------------------------------------

@pytest.fixture
def mp1():
    desc = dml.MaxPooling1Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0))
    return dml.compile_operator(desc)


def test_execute_unknown_bind_point(mp1):
    x = x4((1, 1, 3, 3))
    expect(Inv, lambda: mp1.execute(input_tensor=x, bogus_tensor=x), [x], ["bogus_tensor"])


def test_execute_missing_required_binding(mp1):
    expect(Inv, lambda: mp1.execute(), [], ["input_tensor"])


def test_execute_binding_for_left_out_optional_tensor(mp1):
    x = x4((1, 1, 3, 3))
    idx = np.full((1, 1, 2, 2), 9, np.uint32)
    expect(Inv, lambda: mp1.execute(input_tensor=x, output_indices_tensor=idx), [x, idx],
           ["output_indices_tensor"])


def test_execute_wrong_dtype_binding(mp1):
    # SPEC 7: "a binding whose dtype differs from the description is an UnsupportedError (no
    # casting)"; the output buffer stays untouched.
    x = x4((1, 1, 3, 3), np.float64)
    out = np.full((1, 1, 2, 2), 7, F32)
    expect(Uns, lambda: mp1.execute(input_tensor=x, output_tensor=out), [x, out],
           ["input_tensor", "float64"])
    x32 = x4((1, 1, 3, 3))
    out16 = np.full((1, 1, 2, 2), 7, np.float16)
    expect(Uns, lambda: mp1.execute(input_tensor=x32, output_tensor=out16), [x32, out16],
           ["output_tensor"])


def test_execute_flat_buffer_too_small(mp1):
    # SPEC 7: a 1-D binding whose shape differs from sizes is a flat buffer, which must hold
    # at least sum((sizes-1)*strides) + 1 elements (here 9).
    x = np.arange(8, dtype=F32)
    out = np.full((1, 1, 2, 2), 7, F32)
    expect(Inv, lambda: mp1.execute(input_tensor=x, output_tensor=out), [x, out],
           ["input_tensor", "8"])
    xs = x4((1, 1, 3, 3))
    small = np.full(3, 7, F32)
    expect(Inv, lambda: mp1.execute(input_tensor=xs, output_tensor=small), [xs, small],
           ["output_tensor"])


def test_execute_strided_flat_buffer_too_small():
    desc = dml.MaxPooling1Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3), (0, 0, 4, 1)),
        output_tensor=td("FLOAT32", (1, 1, 2, 2)), strides=(1, 1), window_size=(2, 2),
        start_padding=(0, 0), end_padding=(0, 0))
    buf = np.arange(10, dtype=F32)            # needs 2*4 + 2*1 + 1 = 11
    expect(Inv, lambda: dml.compile_operator(desc).execute(input_tensor=buf), [buf],
           ["input_tensor"])


def test_execute_wrong_shape_binding(mp1):
    # A binding that is neither of the description's sizes nor 1-D (SPEC 4.2).
    x = x4((1, 1, 3, 4))
    expect(Inv, lambda: mp1.execute(input_tensor=x), [x], ["input_tensor"])


def test_execute_read_only_output(mp1):
    # Our reading: SPEC 7's rule for a read-only out= holds for a bound output buffer too.
    x = x4((1, 1, 3, 3))
    out = np.full((1, 1, 2, 2), 7, F32)
    out.flags.writeable = False
    expect(Inv, lambda: mp1.execute(input_tensor=x, output_tensor=out), [x, out],
           ["output_tensor"])


# --- more description-layer constraints (SPEC 3.3, 3.4, 3.5, 3.9) -------------------------

def qdesc(**over):
    one = (1, 1, 1, 1)
    kw = dict(input_tensor=td("UINT8", (1, 2, 3, 3)), input_scale_tensor=td("FLOAT32", one),
              output_scale_tensor=td("FLOAT32", one), output_tensor=td("UINT8", (1, 2, 2, 2)),
              strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
              dilations=(1, 1), include_padding=False)
    kw.update(over)
    return dml.QuantizedLinearAveragePoolingDesc(**kw)


@pytest.mark.parametrize("over,cls,words", [
    # Scales: FLOAT32 (SPEC 3.3).
    (dict(input_scale_tensor=td("FLOAT16", (1, 1, 1, 1))), Uns, ["input_scale_tensor"]),
    # Zero points: "the type of the tensor they belong to".
    (dict(input_zero_point_tensor=td("INT8", (1, 1, 1, 1))), Uns, ["input_zero_point_tensor"]),
    (dict(output_zero_point_tensor=td("INT8", (1, 1, 1, 1))), Uns,
     ["output_zero_point_tensor"]),
    # Input / output INT8 or UINT8.
    (dict(input_tensor=td("INT16", (1, 2, 3, 3))), Uns, ["input_tensor"]),
    # Scale shape: all ones or {1, C, 1, 1}.
    (dict(input_scale_tensor=td("FLOAT32", (1, 3, 1, 1))), Inv, ["input_scale_tensor"]),
    (dict(output_scale_tensor=td("FLOAT32", (2, 1, 1, 1))), Inv, ["output_scale_tensor"]),
    # Output sizes F or F + 1.
    (dict(output_tensor=td("UINT8", (1, 2, 4, 2))), Inv, ["output_tensor"]),
])
def test_quantized_desc_constraints(over, cls, words):
    expect(cls, lambda: dml.compile_operator(qdesc(**over)), [],
           ["QUANTIZED_LINEAR_AVERAGE_POOLING"] + words)


def test_quantized_desc_rank_at_level():
    # SPEC 3.3: "4-D or 5-D (extended: any k)".
    d = qdesc(input_tensor=td("UINT8", (1, 2, 3)), output_tensor=td("UINT8", (1, 2, 2)),
              input_scale_tensor=td("FLOAT32", (1, 1, 1)),
              output_scale_tensor=td("FLOAT32", (1, 1, 1)), strides=(1,), window_size=(2,),
              start_padding=(0,), end_padding=(0,), dilations=(1,))
    expect(Uns, lambda: dml.compile_operator(d, feature_level="6.2"), [],
           ["QUANTIZED_LINEAR_AVERAGE_POOLING"])
    dml.compile_operator(d)        # extended mode


def test_quantized_scale_rank_above_input():
    # SPEC 7: per tensor "an all-ones shape of rank <= the input's".
    s = np.ones((1, 1, 1, 1, 1), F32)
    expect(Inv, q(s, None, 1.0, None, 2), [QX, s], ["input_scale"])


def test_max_pooling_indices_sizes_must_match_output():
    # SPEC 3.4: "OutputIndices has Output's sizes".
    d = dml.MaxPooling2Desc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 2, 2)),
        output_indices_tensor=td("UINT32", (1, 1, 2, 3)), strides=(1, 1), window_size=(2, 2),
        start_padding=(0, 0), end_padding=(0, 0), dilations=(1, 1))
    expect(Inv, lambda: dml.compile_operator(d), [], ["MAX_POOLING2", "output_indices_tensor"])


def test_max_pooling_desc_uint32_indices_for_huge_input():
    # SPEC 3.4: "An input with more than 2^32-1 elements needs 64-bit indices".
    d = dml.MaxPooling2Desc(
        input_tensor=td("FLOAT32", (1, 1, 65536, 65537)),
        output_tensor=td("FLOAT32", (1, 1, 1, 1)),
        output_indices_tensor=td("UINT32", (1, 1, 1, 1)), strides=(1, 1),
        window_size=(65536, 65537), start_padding=(0, 0), end_padding=(0, 0), dilations=(1, 1))
    expect(Inv, lambda: dml.compile_operator(d), [], ["MAX_POOLING2", "output_indices_tensor"])


def test_max_pooling_grad_desc_constraints():
    # SPEC 3.5: InputGradient has the forward output's sizes, OutputGradient the forward
    # input's; types FLOAT32/FLOAT16 (extended FLOAT64), all three the same.
    def g(dt=("FLOAT32",) * 3, dy=(1, 1, 2, 2), dx=(1, 1, 3, 3)):
        return dml.MaxPoolingGradDesc(
            input_tensor=td(dt[0], (1, 1, 3, 3)), input_gradient_tensor=td(dt[1], dy),
            output_gradient_tensor=td(dt[2], dx), strides=(1, 1), window_size=(2, 2),
            start_padding=(0, 0), end_padding=(0, 0), dilations=(1, 1))
    expect(Inv, lambda: dml.compile_operator(g(dx=(1, 1, 3, 4))), [],
           ["MAX_POOLING_GRAD", "output_gradient_tensor"])
    expect(Inv, lambda: dml.compile_operator(g(dy=(1, 1, 4, 2))), [],
           ["MAX_POOLING_GRAD", "input_gradient_tensor"])
    expect(Uns, lambda: dml.compile_operator(g(dt=("FLOAT32", "FLOAT16", "FLOAT32"))), [],
           ["MAX_POOLING_GRAD", "input_gradient_tensor"])
    expect(Uns, lambda: dml.compile_operator(g(dt=("FLOAT64",) * 3), feature_level="6.4"), [],
           ["MAX_POOLING_GRAD", "FLOAT64"])
    expect(Uns, lambda: dml.compile_operator(g(dt=("INT32",) * 3)), [], ["MAX_POOLING_GRAD"])
    dml.compile_operator(g(dy=(1, 1, 3, 3)))          # F + 1 forward output sizes are fine
    dml.compile_operator(g(dt=("FLOAT64",) * 3))


def test_padding_desc_constraints():
    def p(in_t="FLOAT32", out_t="FLOAT32", out=(1, 1, 5, 5)):
        return dml.PaddingDesc(input_tensor=td(in_t, (1, 1, 3, 3)), output_tensor=td(out_t, out),
                               padding_mode="EDGE", padding_value=0.0,
                               start_padding=(0, 0, 1, 1), end_padding=(0, 0, 1, 1))
    # SPEC 3.9: "Out[i] = In[i] + StartPadding[i] + EndPadding[i]"; same type and rank.
    expect(Inv, lambda: dml.compile_operator(p(out=(1, 1, 5, 6))), [], ["PADDING",
                                                                         "output_tensor"])
    expect(Uns, lambda: dml.compile_operator(p(out_t="FLOAT16")), [], ["PADDING",
                                                                        "output_tensor"])
    expect(Inv, lambda: dml.compile_operator(dml.PaddingDesc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 5, 5)),
        padding_mode="EDGE", padding_value=0.0, start_padding=(0, 0, 1, 1),
        end_padding=(0, 0, 1, -1))), [], ["PADDING", "end_padding[3]", "-1"])
    expect(Inv, lambda: dml.compile_operator(dml.PaddingDesc(
        input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 5, 5)),
        padding_mode="MIRROR", padding_value=0.0, start_padding=(0, 0, 1, 1),
        end_padding=(0, 0, 1, 1))), [], ["PADDING", "MIRROR"])


# --- the feature-level support tables of SPEC 1.3 / 3, checked exhaustively ---------------

LEVEL_VALUES = [0x1000, 0x2000, 0x2100, 0x3000, 0x3100, 0x4000, 0x4100, 0x5000, 0x5100,
                0x5200, 0x6000, 0x6100, 0x6200, 0x6300, 0x6400, None]
ALL11 = ["FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8", "INT32", "INT16", "INT8",
         "FLOAT64", "UINT64", "INT64"]
F16_32 = {"FLOAT32", "FLOAT16"}
FL50 = F16_32 | {"INT64", "INT32", "INT16", "INT8", "UINT64", "UINT32", "UINT16", "UINT8"}


def since(level, v):
    return level is None or level >= v


def allowed(op, level, dt, rank):
    """SPEC 3's tables (None = extended mode: 6.4 plus the extensions of SPEC 1.3)."""
    ext = level is None
    pool_ranks = set(range(3, 9)) if ext else {4, 5}
    if op in ("AVERAGE_POOLING", "AVERAGE_POOLING1"):
        first = 0x1000 if op == "AVERAGE_POOLING" else 0x6200
        types = F16_32 | ({"FLOAT64"} if ext else set())
        return since(level, first) and dt in types and rank in pool_ranks
    if op in ("MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2"):
        first = {"MAX_POOLING": 0x1000, "MAX_POOLING1": 0x2000, "MAX_POOLING2": 0x2100}[op]
        if ext:
            types = FL50 | {"FLOAT64"}
        elif level >= 0x5000:
            types = FL50
        elif level >= 0x3000:
            types = F16_32 | {"INT8", "UINT8"}
        else:
            types = F16_32
        return since(level, first) and dt in types and rank in pool_ranks
    if op == "MAX_POOLING_GRAD":
        ranks = pool_ranks if ext else ({4, 5} if level >= 0x4000 else {4})
        types = F16_32 | ({"FLOAT64"} if ext else set())
        return since(level, 0x3000) and dt in types and rank in ranks
    if op in ("PADDING", "PADDING1"):
        if op == "PADDING1" and not since(level, 0x5000):
            return False
        if ext or level >= 0x5000:
            types = set(ALL11)
        elif level >= 0x2100:
            types = F16_32 | {"INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"}
        else:
            types = F16_32
        ranks = set(range(1, 9)) if ext or level >= 0x3100 else {4, 5}
        return dt in types and rank in ranks
    if op == "QUANTIZED_LINEAR_AVERAGE_POOLING":
        return since(level, 0x6200) and dt in {"INT8", "UINT8"} and rank in pool_ranks
    raise AssertionError(op)


def build(op, dt, rank):
    shape = tuple([1, 2] + [2] * (rank - 2))
    t = td(dt, shape)
    k = rank - 2
    pool = dict(strides=(1,) * k, window_size=(1,) * k, start_padding=(0,) * k,
                end_padding=(0,) * k)
    if op == "AVERAGE_POOLING":
        return dml.AveragePoolingDesc(input_tensor=t, output_tensor=t, include_padding=False,
                                      **pool)
    if op == "AVERAGE_POOLING1":
        return dml.AveragePooling1Desc(input_tensor=t, output_tensor=t, include_padding=False,
                                       dilations=(1,) * k, **pool)
    if op == "MAX_POOLING":
        return dml.MaxPoolingDesc(input_tensor=t, output_tensor=t, **pool)
    if op == "MAX_POOLING1":
        return dml.MaxPooling1Desc(input_tensor=t, output_tensor=t, **pool)
    if op == "MAX_POOLING2":
        return dml.MaxPooling2Desc(input_tensor=t, output_tensor=t, dilations=(1,) * k, **pool)
    if op == "MAX_POOLING_GRAD":
        return dml.MaxPoolingGradDesc(input_tensor=t, input_gradient_tensor=t,
                                      output_gradient_tensor=t, dilations=(1,) * k, **pool)
    if op == "QUANTIZED_LINEAR_AVERAGE_POOLING":
        one = td("FLOAT32", (1,) * rank)
        return dml.QuantizedLinearAveragePoolingDesc(
            input_tensor=t, input_scale_tensor=one, output_scale_tensor=one, output_tensor=t,
            dilations=(1,) * k, include_padding=False, **pool)
    shape = tuple(range(1, rank + 1))
    t = td(dt, shape)
    kw = dict(input_tensor=t, output_tensor=t, padding_mode="CONSTANT", padding_value=0,
              start_padding=(0,) * rank, end_padding=(0,) * rank)
    if op == "PADDING":
        return dml.PaddingDesc(**kw)
    return dml.Padding1Desc(padding_value_data_type=dt, **kw)


POOL_OPS = ["AVERAGE_POOLING", "AVERAGE_POOLING1", "MAX_POOLING", "MAX_POOLING1",
            "MAX_POOLING2", "MAX_POOLING_GRAD", "QUANTIZED_LINEAR_AVERAGE_POOLING"]


@pytest.mark.parametrize("op", POOL_OPS + ["PADDING", "PADDING1"])
def test_feature_level_support_matrix(op):
    # SPEC 5: "An operator, mode, type or rank that the target feature level lacks ... is an
    # UnsupportedError". Every level x data type x rank, against SPEC 3's tables.
    ranks = [3, 4, 5, 6, 8] if op in POOL_OPS else [1, 2, 3, 4, 5, 6, 8]
    wrong = []
    for level in LEVEL_VALUES:
        for dt in ALL11:
            for rank in ranks:
                desc = build(op, dt, rank)
                try:
                    dml.compile_operator(desc, feature_level=level, backend="reference")
                    ok = True
                except dml.UnsupportedError:
                    ok = False
                if ok != allowed(op, level, dt, rank):
                    wrong.append((None if level is None else hex(level), dt, rank, ok))
    assert not wrong, f"{op}: (level, type, rank, accepted) disagreeing with SPEC 3: {wrong}"


@pytest.mark.parametrize("op", ["MAX_POOLING1", "MAX_POOLING2"])
def test_feature_level_index_types(op):
    # SPEC 3.4: "Indices: UINT32 (FL 2.0), UINT32 or UINT64 (FL 5.0) (extended: INT64)".
    wrong = []
    for level in LEVEL_VALUES:
        for it in ALL11:
            t = td("FLOAT32", (1, 1, 2, 2))
            kw = dict(input_tensor=t, output_tensor=t,
                      output_indices_tensor=td(it, (1, 1, 2, 2)), strides=(1, 1),
                      window_size=(1, 1), start_padding=(0, 0), end_padding=(0, 0))
            if op == "MAX_POOLING2":
                kw["dilations"] = (1, 1)
            desc = getattr(dml, "MaxPooling1Desc" if op == "MAX_POOLING1" else
                           "MaxPooling2Desc")(**kw)
            try:
                dml.compile_operator(desc, feature_level=level, backend="reference")
                ok = True
            except dml.UnsupportedError:
                ok = False
            first = 0x2000 if op == "MAX_POOLING1" else 0x2100
            types = {"UINT32"}
            if level is None or level >= 0x5000:
                types.add("UINT64")
            if level is None:
                types.add("INT64")
            want = since(level, first) and it in types
            if ok != want:
                wrong.append((None if level is None else hex(level), it, ok))
    assert not wrong, wrong


@pytest.mark.parametrize("op", ["PADDING", "PADDING1"])
def test_feature_level_padding_modes(op):
    # SPEC 3.9: CONSTANT/EDGE/REFLECTION from the operator's level, SYMMETRIC from FL 3.0,
    # WRAP from FL 6.4.
    first_mode = {"CONSTANT": 0x1000, "EDGE": 0x1000, "REFLECTION": 0x1000,
                  "SYMMETRIC": 0x3000, "WRAP": 0x6400}
    wrong = []
    for level in LEVEL_VALUES:
        for mode, first in first_mode.items():
            t = td("FLOAT32", (1, 1, 2, 2))
            kw = dict(input_tensor=t, output_tensor=t, padding_mode=mode, padding_value=0.0,
                      start_padding=(0,) * 4, end_padding=(0,) * 4)
            desc = dml.PaddingDesc(**kw) if op == "PADDING" else dml.Padding1Desc(
                padding_value_data_type="FLOAT32", **kw)
            try:
                dml.compile_operator(desc, feature_level=level, backend="reference")
                ok = True
            except dml.UnsupportedError:
                ok = False
            want = since(level, first) and since(level, 0x5000 if op == "PADDING1" else 0)
            if ok != want:
                wrong.append((None if level is None else hex(level), mode, ok))
    assert not wrong, wrong


def _pad_desc(value, cls=dml.PaddingDesc, **kw):
    t = td("FLOAT32", (2,))
    return cls(input_tensor=t, output_tensor=td("FLOAT32", (4,)), start_padding=(1,),
               end_padding=(1,), padding_value=value, **kw)


def _lp_desc(p):
    return dml.LpPoolingDesc(input_tensor=td("FLOAT32", (1, 1, 3, 3)),
                             output_tensor=td("FLOAT32", (1, 1, 2, 2)), window_size=(2, 2),
                             p=p)


def test_compile_operator_tells_apart_what_equality_does_not():
    # a description equal (==) to one compiled before, but of other types or signs, is
    # validated and converted afresh: 0.0 == -0.0, 2 == 2.0, 1 == True
    x = np.ones(2, F32)
    dml.compile_operator(_pad_desc(0.0))
    y = dml.compile_operator(_pad_desc(-0.0)).execute(input_tensor=x)["output_tensor"]
    assert np.signbit(y).tolist() == [True, False, False, True]
    dml.compile_operator(_lp_desc(2))
    expect(Inv, lambda: dml.compile_operator(_lp_desc(2.0)), words=["p = 2.0", "integer"])
    dml.compile_operator(_lp_desc(1))
    expect(Inv, lambda: dml.compile_operator(_lp_desc(True)), words=["p = True", "integer"])


@pytest.mark.parametrize("call, words", [
    (lambda x: dml.max_pooling(x, 1, strides=2**70), ["max_pooling", "strides[0]",
                                                      str(2**70), "4294967295"]),
    (lambda x: dml.average_pooling(x, 1, dilations=(1, 2**64)), ["average_pooling",
                                                                  "dilations[1]", "UINT"]),
    (lambda x: dml.max_pooling(x, 2, start_padding=2**40), ["start_padding[0]", "2^32-1"]),
    (lambda x: dml.lp_pooling(x, 2, p=10**30), ["lp_pooling", "p = " + str(10**30)]),
    (lambda x: dml.lp_pooling(x, 2, p=np.uint64(2**64 - 1)), ["p = 18446744073709551615"]),
    (lambda x: dml.padding(x, (0, 0, 2**33, 0), 0), ["padding", "start_padding[2]"]),
    (lambda x: dml.quantized_linear_average_pooling(x.astype(np.uint8), 1.0, 0, 1.0, 0, 1,
                                                    strides=2**64), ["strides[0]"]),
])
@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_integer_fields_beyond_uint32(call, words, backend):
    # SPEC 2/3 give no upper bound; DirectML's fields are 32-bit UINTs, and the library's
    # rule is theirs: larger is an InvalidArgumentError on every backend (not an overflow)
    if backend not in dml.backends():
        pytest.skip(f"{backend} is not available")
    x = x4()
    dml.set_backend(backend)
    try:
        expect(Inv, lambda: call(x), [x], words)
    finally:
        dml.set_backend(None)


def test_integer_fields_at_uint32_max():
    x = x4()
    for backend in dml.backends():
        y = dml.max_pooling(x, 1, strides=2**32 - 1, backend=backend)
        assert y.ravel().tolist() == [0.0]
        assert dml.lp_pooling(x, 4, p=2**32 - 1, backend=backend).shape == (1, 1, 1, 1)


def test_padding_value_beyond_float_range_rounds_to_infinity():
    # SPEC 7: a Python int beyond 2^53 for a float type is rounded to nearest
    for dtype in (np.float16, np.float32, np.float64):
        y = dml.padding(np.zeros(1, dtype), 1, 1, value=10**400)
        assert y.tolist() == [np.inf, 0.0, np.inf]
        y = dml.padding(np.zeros(1, dtype), 1, 0, value=-10**400)
        assert y.tolist() == [-np.inf, 0.0]


@pytest.mark.parametrize("mode", ["edge", "reflection", "symmetric", "wrap"])
def test_padding_value_ignored_by_other_modes(mode):
    # SPEC 7: "value is ignored by modes other than constant" (so not checked either)
    x = np.array([1, 2, 3], np.int8)
    want = dml.padding(x, 1, 1, mode=mode)
    for value in ("zz", None, 10**400, float("nan")):
        assert np.array_equal(dml.padding(x, 1, 1, mode=mode, value=value), want)
    expect(Inv, lambda: dml.padding(x, 1, 1, value="zz"), [x], ["padding", "value = 'zz'"])


def test_backend_and_level_errors_name_the_operator():
    x = x4()
    expect(Uns, lambda: dml.max_pooling(x, 2, backend="foo"), [x],
           ["max_pooling: backend = 'foo'"])
    msg = expect(Inv, lambda: dml.compile_operator(_lp_desc(2), feature_level="7.0"),
                 words=["LP_POOLING", "'7.0'"])
    assert msg.startswith("LP_POOLING: ")


@pytest.mark.parametrize("cls", [dml.PaddingDesc, dml.Padding1Desc])
def test_padding_desc_value_ignored_by_other_modes(cls):
    # SPEC 3.9: "outside [0, n) the value is PaddingValue (ignored by the other modes)"
    extra = {"padding_value_data_type": "INT8"} if cls is dml.Padding1Desc else {}
    x = np.array([1, 2, 3], np.int8)

    def desc(mode, value):
        return cls(input_tensor=td("INT8", (3,)), output_tensor=td("INT8", (5,)),
                   start_padding=(1,), end_padding=(1,), padding_mode=mode,
                   padding_value=value, **extra)
    for value in (10.6, "zz", 10**400):
        y = dml.compile_operator(desc("EDGE", value)).execute(input_tensor=x)["output_tensor"]
        assert y.tolist() == [1, 1, 2, 3, 3]
    if cls is dml.Padding1Desc:
        expect(Inv, lambda: dml.compile_operator(desc("CONSTANT", 10.6)),
               words=["padding_value = 10.6", "INT8"])


def _lazy(module):
    """A stand-in for a Dask or CuPy array (neither is a test dependency): what dmlops checks
    is the type's module."""
    class Lazy:
        def __init__(self, a):
            self.a = np.asarray(a)

        def __array__(self, dtype=None, copy=None):
            return self.a
    Lazy.__module__ = module
    return Lazy


@pytest.mark.parametrize("module", ["dask.array.core", "cupy._core.core"])
def test_dask_and_cupy_inputs_unsupported(module):
    # SPEC 5: "until then a CuPy input is an UnsupportedError that says so", for every array
    # argument (data, indices, scales, zero points); SPEC 6: Dask inputs are taken
    # (tests/test_dask.py) but quantization parameters (and ROI boxes) stay NumPy
    lazy, word = _lazy(module), module.split(".")[0]
    x, xi = x4(), x4(dtype=np.int8)
    if word == "cupy":
        expect(Uns, lambda: dml.max_pooling(lazy(x), 2), words=["max_pooling", word])
        expect(Uns, lambda: dml.padding(lazy(x), 1, 1), words=["padding", word])
    else:
        word = "Dask"
    ones, zeros = np.ones((1, 1, 1, 1), F32), np.zeros((1, 1, 1, 1), np.int8)
    calls = [lambda: dml.quantized_linear_average_pooling(xi, lazy(ones), None, 1.0, None, 2),
             lambda: dml.quantized_linear_average_pooling(xi, 1.0, lazy(zeros), 1.0, None, 2),
             lambda: dml.quantized_linear_average_pooling(xi, 1.0, None, lazy(ones), None, 2),
             lambda: dml.quantized_linear_average_pooling(xi, 1.0, None, 1.0, lazy(zeros), 2)]
    for field, call in zip(["input_scale", "input_zero_point", "output_scale",
                            "output_zero_point"], calls):
        expect(Uns, call, [xi], ["quantized_linear_average_pooling", field, word])


def test_cuda_backend_is_unavailable_not_unknown():
    # SPEC 5 names cuda ("where a CUDA GPU and its Python packages are present"): until it
    # exists it is unavailable, an UnsupportedError that says so
    x = x4()
    expect(Uns, lambda: dml.max_pooling(x, 2, backend="cuda"), [x],
           ["max_pooling: backend = 'cuda' is not available here", "later version"])
    assert "cuda" not in dml.backends()


def test_unreadable_arguments_are_dmlops_errors():
    """Only dmlops's errors escape (issue 28): ragged nested lists as an input, an array
    where a flag belongs."""
    x = np.ones((1, 1, 4, 4), np.float32)
    ragged = [[[[1.0, 2.0], [3.0]]]]
    for fn in (lambda: dml.max_pooling(ragged, 1), lambda: dml.average_pooling(ragged, 1),
               lambda: dml.padding(ragged, (0, 0, 0, 1), (0, 0, 0, 1))):
        with pytest.raises(dml.InvalidArgumentError, match="x cannot be read as an array"):
            fn()
    with pytest.raises(dml.InvalidArgumentError, match=r"output_indices = array\(\[1, 2\]\) "
                                                       r"must be a bool"):
        dml.max_pooling(x, 2, output_indices=np.array([1, 2]))
    with pytest.raises(dml.InvalidArgumentError, match="output_indices = 'yes' must be a bool"):
        dml.max_pooling(x, 2, output_indices="yes")
    assert len(dml.max_pooling(x, 2, output_indices=np.True_)) == 2
    assert len(dml.max_pooling(x, 2, output_indices=1)) == 2


def test_divisors_beyond_64_bits_are_refused_not_wrapped():
    """With include_padding, a divisor counts padding positions: one past 2^63-1 is an
    InvalidArgumentError (it wrapped to 0.0 or a negative gradient), one below it is exact."""
    x = np.ones((1, 1) + (1,) * 6, np.float32)
    big = dict(start_padding=1023, end_padding=1023, include_padding=True)
    calls = [lambda: dml.average_pooling(x, 2047, **big),
             lambda: dml.average_pooling_grad(x, 2047, input_sizes=x.shape, **big),
             lambda: dml.quantized_linear_average_pooling(x.astype(np.uint8), 1.0, 0, 1.0, 0,
                                                          2047, **big),
             lambda: dml.compile_operator(dml.AveragePoolingDesc(
                 input_tensor=td("FLOAT32", x.shape), output_tensor=td("FLOAT32", x.shape),
                 strides=1, window_size=2047, start_padding=1023, end_padding=1023,
                 include_padding=True))]
    for call in calls:
        with pytest.raises(dml.InvalidArgumentError, match=r"2047.*include_padding.*7\.357e\+19"
                                                           r".*beyond 2\^63-1"):
            call()
    assert dml.average_pooling(x, 2047, start_padding=1023, end_padding=1023).item() == 1.0
    # (2^21 - 1)^3 positions: the largest such count below 2^63, kept exactly
    w, p = 2**21 - 1, 2**20 - 1
    x3 = np.full((1, 1, 1, 1, 1), 3.0, np.float32)
    want = np.float32(3.0 / float(w) ** 3)
    assert dml.average_pooling(x3, w, start_padding=p, end_padding=p, include_padding=True,
                               backend="cpu").item() == want
    assert dml.average_pooling_grad(x3, w, input_sizes=x3.shape, start_padding=p, end_padding=p,
                                    include_padding=True, backend="cpu").item() == want


def test_outputs_beyond_memory_are_refused_naming_the_size(monkeypatch):
    """A request whose output cannot be allocated is an InvalidArgumentError naming the size
    (NumPy said "array is too big", or the system promised the memory and killed the
    process later), functions and descriptions alike (issue 28)."""
    x = np.ones((1, 1, 4, 4), np.float32)
    cases = [
        (lambda: dml.padding(x, (0, 0, 2**31, 2**31), (0, 0, 2**31, 2**31)),
         r"padding: out of shape \[1, 1, 4294967300, 4294967300\] \(float32\) needs "
         r"73786976432277160000 bytes"),
        (lambda: dml.max_unpooling(x[..., :1, :1], np.zeros((1, 1, 1, 1), np.uint32),
                                   (1, 1, 2**31, 2**31)), "needs 18446744073709551616 bytes"),
        (lambda: dml.compile_operator(dml.PaddingDesc(
            input_tensor=td("FLOAT32", (1, 1, 1, 1)),
            output_tensor=td("FLOAT32", (1, 1, 2**31, 2**31)), padding_mode="CONSTANT",
            padding_value=0, start_padding=(0, 0, 2**31 - 1, 2**31 - 1),
            end_padding=(0, 0, 0, 0))).execute(input_tensor=x[..., :1, :1]),
         "PADDING: output_tensor of shape .* needs 18446744073709551616 bytes"),
    ]
    for call, message in cases:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            call()
    # each output within the memory, both together not
    from dmlops import tensor
    monkeypatch.setattr(tensor, "memory_bytes", lambda: 100)
    with pytest.raises(dml.InvalidArgumentError, match=r"out\[0\], out\[1\] together need 128 "
                                                       r"bytes .*more than"):
        dml.max_pooling(np.ones((1, 1, 16), np.float32), 1, output_indices=True)
    with pytest.raises(dml.InvalidArgumentError, match="needs 400 bytes .*more than"):
        dml.max_pooling(np.ones((1, 1, 100), np.float32), 1)
    monkeypatch.undo()
    # a kernel that runs out of memory for its scratch
    from dmlops.backends import cpu

    class NoMemory:         # (every kernel raises what nanobind makes of std::bad_alloc)
        def __getattr__(self, name):
            def kernel(*args):
                raise MemoryError("std::bad_alloc")
            return kernel

    monkeypatch.setattr(cpu, "kernels", NoMemory)
    for call in (lambda: dml.max_pooling(x, 2, backend="cpu"),
                 lambda: dml.average_pooling(x, 2, backend="cpu"),
                 lambda: dml.max_pooling_grad(x, x[..., :2, :2], 2, strides=2, backend="cpu"),
                 lambda: dml.padding(x, 1, 1, backend="cpu")):
        with pytest.raises(dml.InvalidArgumentError, match="out of memory running"):
            call()


def test_tensor_desc_strides_are_directml_uints():
    """A stride past 2^32-1 is refused when the description is compiled (it was accepted,
    then an OverflowError at execute)."""
    out = td("FLOAT32", (1, 1, 3, 3))

    def pool(strides):
        return dml.compile_operator(dml.MaxPoolingDesc(
            input_tensor=td("FLOAT32", (1, 1, 4, 4), strides), output_tensor=out, strides=1,
            window_size=2, start_padding=0, end_padding=0))

    with pytest.raises(dml.InvalidArgumentError, match=r"input_tensor.strides\[0\] = "
                                                       r"1180591620717411303424 is larger than "
                                                       r"4294967295"):
        pool((2**70, 16, 4, 1))
    op = pool((2**32 - 1, 16, 4, 1))
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert op.execute(input_tensor=x)["output_tensor"][0, 0, 0].tolist() == [5.0, 6.0, 7.0]


def test_reference_cost_follows_the_data_not_the_window():
    """The reference backend visits only the window offsets that read a real element and
    counts divisors from each dimension's bounds (issue 28: a window of 20000 over 40000
    elements took 4 GB, one of 2^27 over one element did not finish): the extreme cases give
    the cpu backend's bits."""
    from dmlops.backends.reference.window import counts, real_offsets
    assert real_offsets((1,), (2,), (2**27,), (1,), (2**26,), (1,)) == [(2**26 - 1,), (2**26,)]
    # 5 elements, 3 outputs 2 apart: offsets 2^19 - 4 to 2^19 + 4 along the first dimension
    assert len(real_offsets((5, 7), (3, 4), (2**20, 3), (2, 2), (2**19, 1), (1, 1))) == 9 * 3
    div = counts((1,), (2,), (2**27,), (1,), (2**26,), (2**26,), (1,), True)
    assert div.ravel().tolist() == [2**27, 2**27]
    x1 = np.full((1, 1, 1), 3.0, np.float32)
    for include in (False, True):
        kw = dict(start_padding=2**26, end_padding=2**26, include_padding=include)
        got = [dml.average_pooling(x1, 2**27, backend=b, **kw) for b in ("reference", "cpu")]
        assert got[0].tobytes() == got[1].tobytes()
    x = np.random.default_rng(0).standard_normal((1, 2, 400)).astype(np.float32)
    got = [dml.average_pooling(x, 200, backend=b) for b in ("reference", "cpu")]
    assert got[0].shape == (1, 2, 201) and got[0].tobytes() == got[1].tobytes()
    got = [dml.max_pooling(x, 200, start_padding=150, end_padding=199, output_indices=True,
                           backend=b) for b in ("reference", "cpu")]
    assert got[0][0].tobytes() == got[1][0].tobytes()
    assert np.array_equal(got[0][1], got[1][1])


# Each line one call of issue 28's "cost grows with the data" cases (they took 3.4-4.2 GB, a
# MemoryError or did not finish): in a child whose address space is limited, each must give a
# result or dmlops's error, and the child must finish in time.
_BOUNDED_CHILD = r"""
import sys
import numpy as np
import dmlops as dml
x = np.ones((1, 1, 40000), np.float32)
x1 = np.full((1, 1, 1), 3.0, np.float32)
x3 = np.ones((1, 1, 1, 1, 1), np.float32)
q = np.arange(16, dtype=np.uint8).reshape(1, 1, 4, 4)
near = dict(start_padding=2**32 - 2, end_padding=2**32 - 2)
calls = {
    "average 20000 over 40000": lambda b: dml.average_pooling(x, 20000, backend=b),
    "max 20000 over 40000": lambda b: dml.max_pooling(x, 20000, output_indices=True, backend=b),
    "quantized stride 2^24": lambda b: dml.quantized_linear_average_pooling(
        q, 0.5, 3, 0.25, 1, 2, strides=2**24, start_padding=2**24, end_padding=2**24,
        backend=b),
    "window 2^27 over one element": lambda b: dml.average_pooling(
        x1, 2**27, start_padding=2**26, end_padding=2**26, include_padding=True, backend=b),
    "average padding 2^32 - 2": lambda b: dml.average_pooling(x1, 2**32 - 1, backend=b, **near),
    "max padding 2^32 - 2": lambda b: dml.max_pooling(x1, 2**32 - 1, output_indices=True,
                                                      backend=b, **near),
    "lp padding 2^32 - 2": lambda b: dml.lp_pooling(x1, 2**32 - 1, backend=b, **near),
    "gradient of one element, window 2047 in 3-D": lambda b: dml.average_pooling_grad(
        np.ones((1, 1, 1, 1, 1), np.float32), 2047, input_sizes=x3.shape, start_padding=1023,
        end_padding=1023, backend=b),
}
for name, call in calls.items():
    for b in ("reference", "cpu"):
        try:
            call(b)
        except dml.DmlError:
            pass
        print(name, b, "ok", flush=True)
"""


def test_cost_is_bounded_in_a_child_with_little_memory(tmp_path):
    """Issue 28's cases whose cost a parameter's value drove, in a child limited to 1 GiB of
    address space (about 100 MB after import): every call returns or raises dmlops's error,
    within the time limit."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    script = tmp_path / "child.py"
    script.write_text(_BOUNDED_CHILD)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, preexec_fn=limit,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count(" ok") == 16, done.stdout


# --- errors carry their place (issue 42) -------------------------------------------------------

def place(e):
    return e.field, e.index, e.subfield


def test_an_error_carries_its_field_and_index():
    x = x4()
    e = pytest.raises(Inv, dml.max_pooling, x, 2, strides=[1, 0]).value
    assert str(e) == "max_pooling: strides[1] = 0 must be at least 1"
    assert place(e) == ("strides", 1, None)
    # the index is the canonical one (a full dimension); the message spells the caller's own
    e = pytest.raises(Inv, dml.max_pooling, x, 2, output_sizes=[3, 9]).value
    assert str(e).startswith("max_pooling: output_sizes[1] = 9 does not fit")
    assert place(e) == ("output_sizes", 3, None)
    assert e.text().startswith("output_sizes[1] = 9 does not fit")
    # a data type's problem is about the data type
    e = pytest.raises(Uns, dml.max_pooling, x.astype(np.complex64), 2).value
    assert place(e) == ("x", None, "data_type")


def test_a_description_error_carries_its_field_and_subfield():
    def compiled(**tensors):
        desc = dml.MaxPooling2Desc(**{"input_tensor": td("FLOAT32", (1, 1, 4, 4)),
                                      "output_tensor": td("FLOAT32", (1, 1, 3, 3)), **tensors},
                                   window_size=2, strides=1)
        return lambda: dml.compile_operator(desc)

    e = pytest.raises(Inv, compiled(output_tensor=td("FLOAT32", (1, 1, 3, 9)))).value
    assert str(e).startswith("MAX_POOLING2: output_tensor.sizes[3] = 9 does not fit")
    assert place(e) == ("output_sizes", 3, None)
    e = pytest.raises(Inv, compiled(input_tensor=td("FLOAT32", (1, 1, 4, 4),
                                                    (16, 16, 4, -1)))).value
    assert str(e) == ("MAX_POOLING2: input_tensor.strides[3] = -1 must be a non-negative "
                      "integer (strides count elements)")
    assert place(e) == ("input_tensor", 3, "strides")
    # the first field named is the place, narrowed to its data type
    e = pytest.raises(Uns, compiled(output_tensor=td("FLOAT16", (1, 1, 3, 3)))).value
    assert str(e) == ("MAX_POOLING2: output_tensor has data type FLOAT16; it must match "
                      "input_tensor (FLOAT32)")
    assert place(e) == ("output", None, "data_type")
    # an operator the level lacks: the operator type
    desc = dml.AveragePooling1Desc(input_tensor=td("FLOAT32", (1, 1, 4, 4)),
                                   output_tensor=td("FLOAT32", (1, 1, 3, 3)), window_size=2)
    e = pytest.raises(Uns, dml.compile_operator, desc, feature_level="6.1").value
    assert place(e) == ("operator_type", None, None)


def test_a_message_is_spelled_again_in_another_callers_labels():
    """The one naming rule spells a message for every caller: the error's text in other
    labels changes the fields it names and nothing else (its rule text is not searched)."""
    from dmlops.errors import Names

    names = Names("OP", {"output_sizes": ("out.shape", -2)})
    e = names.invalid(lambda n: f"{n('output_sizes', 3)} = 9: the strides and "
                                f"{n('window_size', 0)} disagree")
    assert str(e) == "OP: out.shape[1] = 9: the strides and window_size[0] disagree"
    assert place(e) == ("output_sizes", 3, None)
    other = Names("OP", {"output_sizes": ("Out.Sizes", 0), "window_size": ("Window", 0)})
    assert e.text(other) == "Out.Sizes[3] = 9: the strides and Window[0] disagree"
    # a place the text does not spell, given as data; a plain error has none
    e = names.unsupported("this window does not fit", field="window_size", index=1)
    assert place(e) == ("window_size", 1, None) and e.text(other) == "this window does not fit"
    assert place(Inv("no place")) == (None, None, None)


def test_the_place_survives_pickling_and_the_onnx_prefix():
    import pickle

    x = x4()
    e = pytest.raises(Inv, dml.max_pooling, x, 2, strides=[1, 0]).value
    back = pickle.loads(pickle.dumps(e))          # (as Dask's workers send it)
    assert (type(back), str(back), place(back), back.text()) == \
        (type(e), str(e), place(e), e.text())
    prefixed = e.prefixed("ONNX MaxPool node")
    assert str(prefixed) == f"ONNX MaxPool node: {e}" and place(prefixed) == place(e)
