"""Property tests: the pooling operators against the SPEC oracles (tests/oracles.py) and,
where PyTorch implements exactly the SPEC's rule, against PyTorch.

Shapes are tiny (the oracles loop in Python); k = 1..3 spatial dimensions (extended mode, the
functional layer's mode, allows 1..6: SPEC 2); paddings may exceed the window (SPEC 2 only
requires E <= P); outputs of size F and F + 1 (SPEC 2). Every backend that ``dml.backends()``
lists is checked (SPEC 5: every backend gives the reference's bits, or the average bound).
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dmlops as dml
import oracles as O

BACKENDS = tuple(dml.backends())
FLOATS = (np.float16, np.float32, np.float64)
INTS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)
NAN_BITS = {np.dtype(np.float16): [0xFE00, 0x7C01, 0xFFFF],       # -NaN, signalling, payload
            np.dtype(np.float32): [0xFFC00000, 0x7F800001, 0x7FC12345],
            np.dtype(np.float64): [0xFFF8000000000000, 0x7FF0000000000001,
                                   0x7FF8000000012345]}

backend_param = pytest.mark.parametrize("backend", BACKENDS)


# --- strategies ---------------------------------------------------------------------------

@st.composite
def geometries(draw, max_k=3, dilations=True, ceil=True):
    """Input sizes and window parameters (SPEC 2), always valid (E <= P), with the output's
    spatial sizes F or F + 1."""
    k = draw(st.integers(1, max_k))
    lim_s, lim_w, lim_p = {1: (7, 4, 5), 2: (4, 3, 3), 3: (3, 2, 2)}[k]
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    window, strides, start, end, dil, out = [], [], [], [], [], []
    for _ in range(k):
        S = draw(st.integers(1, lim_s))
        W = draw(st.integers(1, lim_w))
        s = draw(st.integers(1, 3))
        d = draw(st.integers(1, 2)) if dilations else 1
        # Paddings: none, within the window, or wider than it (DirectML allows any, SPEC 2).
        pads = st.one_of(st.just(0), st.integers(0, max(0, W - 1)), st.integers(0, lim_p))
        a = draw(pads)
        b = draw(pads)
        E = (W - 1) * d + 1
        if E > S + a + b:
            b = E - S - a
        F = O.floor_size(S, W, s, a, b, d)
        extra = draw(st.booleans()) if ceil else False
        shape.append(S)
        window.append(W)
        strides.append(s)
        start.append(a)
        end.append(b)
        dil.append(d)
        out.append(F + int(extra))
    return dict(shape=tuple(shape), window=tuple(window), strides=tuple(strides),
                start=tuple(start), end=tuple(end), dilations=tuple(dil), out=tuple(out))


def float_data(draw, dtype, shape, lo=-1e6, hi=1e6, specials=True):
    """Mostly small integers (ties), some -0.0 / +-inf / NaN / general floats, and a few NaNs
    with unusual bits (sign, signalling, payload)."""
    parts = [st.integers(-3, 3).map(float), st.floats(lo, hi, width=32)]
    if specials:
        parts.append(st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf]))
    a = draw(hnp.arrays(np.float64, shape, elements=st.one_of(*parts)))
    with np.errstate(over="ignore"):
        a = a.astype(dtype)
    if specials and a.size and draw(st.booleans()):
        ub = a.view(f"u{a.itemsize}").reshape(-1)
        for _ in range(draw(st.integers(1, 2))):
            pos = draw(st.integers(0, a.size - 1))
            ub[pos] = draw(st.sampled_from(NAN_BITS[np.dtype(dtype)]))
    return a


def int_data(draw, dtype, shape):
    info = np.iinfo(dtype)
    small = st.integers(max(-3, info.min), 3)
    edges = st.sampled_from([info.min, info.max, info.min + 1, info.max - 1, 0])
    return draw(hnp.arrays(dtype, shape, elements=st.one_of(small, small, edges,
                                                            st.integers(info.min, info.max))))


def data_for(draw, dtype, shape):
    if np.dtype(dtype).kind == "f":
        return float_data(draw, dtype, shape)
    return int_data(draw, dtype, shape)


def pool_kwargs(g):
    return dict(strides=g["strides"], start_padding=g["start"], end_padding=g["end"],
                dilations=g["dilations"])


def oracle_kwargs(g):
    return dict(strides=g["strides"], start=g["start"], end=g["end"], dilations=g["dilations"])


def out_sizes_arg(draw, g):
    """SPEC 4.1: output_sizes as the k spatial sizes, the full sizes, or None (meaning F)."""
    floor = tuple(O.floor_size(S, W, s, a, b, d) for S, W, s, a, b, d in zip(
        g["shape"][2:], g["window"], g["strides"], g["start"], g["end"], g["dilations"]))
    choices = [g["out"], g["shape"][:2] + g["out"]]
    if floor == g["out"]:
        choices.append(None)
    return draw(st.sampled_from(choices))


def assert_bits(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    ok = O.bits(got) == O.bits(want)
    assert ok.all(), (np.argwhere(~ok)[:5], got[~ok][:5], want[~ok][:5])


def describe(g, x, idx=None):
    """Hypothesis events (see --hypothesis-show-statistics): what the examples covered."""
    event(f"k={len(g['window'])}")
    floor = tuple(O.floor_size(S, W, s, a, b, d) for S, W, s, a, b, d in zip(
        g["shape"][2:], g["window"], g["strides"], g["start"], g["end"], g["dilations"]))
    if floor != g["out"]:
        event("F+1 output")
    if any(a >= W or b >= W for a, b, W in zip(g["start"], g["end"], g["window"])):
        event("padding >= window")
    if x.dtype.kind == "f" and np.isnan(x).any():
        event("NaN input")
    if idx is not None and (idx == O.NO_ELEMENT[idx.dtype]).any():
        event("window without real element")


# --- max pooling (SPEC 3.4) ---------------------------------------------------------------

@backend_param
@settings(max_examples=150)
@given(g=geometries(), dtype=st.sampled_from(FLOATS + INTS),
       idt=st.sampled_from([None, np.uint32, np.uint64, np.int64]), data=st.data())
def test_max_pooling_matches_oracle(backend, g, dtype, idt, data):
    x = data_for(data.draw, dtype, g["shape"])
    want_v, want_i = O.max_pooling(x, g["window"], out_spatial=g["out"],
                                   indices_dtype=idt or np.uint32, **oracle_kwargs(g))
    osz = out_sizes_arg(data.draw, g)
    v, i = dml.max_pooling(x, g["window"], output_sizes=osz, output_indices=True,
                           indices_dtype=idt, backend=backend, **pool_kwargs(g))
    describe(g, x, want_i)
    assert_bits(v, want_v)          # bits copied exactly, NaN/tie/no-element rules
    assert_bits(i, want_i)          # flat index, lowest wins, "no element" value
    v2 = dml.max_pooling(x, g["window"], output_sizes=osz, backend=backend, **pool_kwargs(g))
    assert_bits(v2, want_v)
    assert v2.flags.c_contiguous and i.flags.c_contiguous


@settings(max_examples=60)
@given(g=geometries(max_k=3), dtype=st.sampled_from(FLOATS + INTS), data=st.data())
def test_max_pooling2_desc_matches_oracle(g, dtype, data):
    # SPEC 4.2: the description layer in extended mode (any k, float64, int64 indices).
    x = data_for(data.draw, dtype, g["shape"])
    idt = data.draw(st.sampled_from(["UINT32", "UINT64", "INT64"]))
    want_v, want_i = O.max_pooling(x, g["window"], out_spatial=g["out"],
                                   indices_dtype=idt.lower(), **oracle_kwargs(g))
    k = len(g["window"])
    desc = dml.MaxPooling2Desc(
        input_tensor=dml.TensorDesc(x.dtype, x.shape),
        output_tensor=dml.TensorDesc(x.dtype, want_v.shape),
        output_indices_tensor=dml.TensorDesc(idt, want_v.shape),
        strides=g["strides"], window_size=g["window"], start_padding=g["start"],
        end_padding=g["end"], dilations=g["dilations"], dimension_count=k)
    out = dml.compile_operator(desc).execute(input_tensor=x)
    assert_bits(out["output_tensor"], want_v)
    assert_bits(out["output_indices_tensor"], want_i)


def test_max_pooling_specials_by_hand():
    # SPEC 3.4: NaN wins with the lowest-index NaN; ties (-0.0 == +0.0) keep the lowest index
    # and its bits; -inf and the type minimum are real results.
    nan_a = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    nan_b = np.array([0xFFC00002], np.uint32).view(np.float32)[0]
    x = np.array([1, nan_a, 5, nan_b, -0.0, 0.0, -np.inf, -np.inf], np.float32)
    v, i = dml.max_pooling(x.reshape(1, 1, 8), 2, strides=2, output_indices=True)
    assert O.bits(v).tolist() == [[[0x7FC00001, 0xFFC00002, 0x80000000, 0xFF800000]]]
    assert i.tolist() == [[[1, 3, 4, 6]]]
    xi = np.array([-128, -128, 3, 3], np.int8).reshape(1, 1, 4)
    v, i = dml.max_pooling(xi, 2, strides=2, output_indices=True)
    assert v.tolist() == [[[-128, 3]]] and i.tolist() == [[[0, 2]]]


@pytest.mark.parametrize("dtype,empty", [(np.float32, -np.inf), (np.float16, -np.inf),
                                         (np.int8, -128), (np.uint16, 0), (np.int64, -2**63)])
@pytest.mark.parametrize("idt,none", [(np.uint32, 2**32 - 1), (np.uint64, 2**64 - 1),
                                      (np.int64, -1)])
def test_max_pooling_window_without_real_element(dtype, empty, idt, none):
    # SPEC 3.4: "-inf (floats) or the type's minimum (integers), and the index 2^32-1 (UINT32),
    # 2^64-1 (UINT64) or -1 (INT64)". Start padding 3, window 2: output 0 covers x = -3, -2;
    # output 1 covers x = -1, 0.
    x = np.array([7, 8], dtype).reshape(1, 1, 2)
    v, i = dml.max_pooling(x, 2, strides=2, start_padding=3, end_padding=1,
                           output_indices=True, indices_dtype=idt)
    assert v.dtype == dtype and i.dtype == idt
    assert v[0, 0, 0] == empty and v[0, 0, 1] == 7 and v[0, 0, 2] == 8
    assert int(i[0, 0, 0]) == none and int(i[0, 0, 1]) == 0 and int(i[0, 0, 2]) == 1


# --- average pooling (SPEC 3.1, precision SPEC 5) ----------------------------------------

@backend_param
@settings(max_examples=150)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), incl=st.booleans(), data=st.data())
def test_average_pooling_matches_oracle(backend, g, dtype, incl, data):
    x = float_data(data.draw, dtype, g["shape"])
    describe(g, x)
    y = dml.average_pooling(x, g["window"], include_padding=incl,
                            output_sizes=out_sizes_arg(data.draw, g), backend=backend,
                            **pool_kwargs(g))
    O.average_pooling_check(y, x, g["window"], include_padding=incl, out_spatial=g["out"],
                            **oracle_kwargs(g))


@settings(max_examples=60)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), incl=st.booleans(), data=st.data())
def test_average_pooling1_desc_matches_oracle(g, dtype, incl, data):
    x = float_data(data.draw, dtype, g["shape"])
    osz = x.shape[:2] + g["out"]
    desc = dml.AveragePooling1Desc(
        input_tensor=dml.TensorDesc(x.dtype, x.shape), output_tensor=dml.TensorDesc(x.dtype, osz),
        strides=g["strides"], window_size=g["window"], start_padding=g["start"],
        end_padding=g["end"], dilations=g["dilations"], include_padding=incl)
    y = dml.compile_operator(desc).execute(input_tensor=x)["output_tensor"]
    O.average_pooling_check(y, x, g["window"], include_padding=incl, out_spatial=g["out"],
                            **oracle_kwargs(g))


def test_average_pooling_accumulates_in_float32_for_float16():
    # SPEC 3.1: "float32 for FLOAT16/FLOAT32 (FLOAT16 rounds once, at the end)". 2048 + 1 + 1
    # in float16 steps would stay 2048; in float32 it is 2050, /3 = 683.33 -> 683.5 in float16.
    x = np.array([2048, 1, 1], np.float16).reshape(1, 1, 3)
    y = dml.average_pooling(x, 3)
    assert y.dtype == np.float16
    assert y[0, 0, 0] == np.float16(np.float32(2050) / np.float32(3))


# --- max-pooling gradient (SPEC 3.5) ------------------------------------------------------

@backend_param
@settings(max_examples=120)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), data=st.data())
def test_max_pooling_grad_matches_oracle(backend, g, dtype, data):
    x = float_data(data.draw, dtype, g["shape"])
    dy_shape = g["shape"][:2] + g["out"]
    # Large and small magnitudes, so that the summation order and precision show.
    dy = data.draw(hnp.arrays(np.float64, dy_shape, elements=st.one_of(
        st.integers(-3, 3).map(float), st.sampled_from([1e8, -1e8, 2048.0, 0.1, -0.0]),
        st.floats(-1e4, 1e4))))
    with np.errstate(over="ignore"):
        dy = dy.astype(dtype)
    want = O.max_pooling_grad(x, dy, g["window"], **oracle_kwargs(g))
    got = dml.max_pooling_grad(x, dy, g["window"], backend=backend, **pool_kwargs(g))
    assert_bits(got, want)


@settings(max_examples=40)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), data=st.data())
def test_max_pooling_grad_desc_matches_oracle(g, dtype, data):
    x = float_data(data.draw, dtype, g["shape"])
    dy_shape = g["shape"][:2] + g["out"]
    dy = data.draw(hnp.arrays(np.float64, dy_shape, elements=st.integers(-9, 9).map(float)))
    dy = dy.astype(dtype)
    desc = dml.MaxPoolingGradDesc(
        input_tensor=dml.TensorDesc(x.dtype, x.shape),
        input_gradient_tensor=dml.TensorDesc(x.dtype, dy_shape),
        output_gradient_tensor=dml.TensorDesc(x.dtype, x.shape),
        strides=g["strides"], window_size=g["window"], start_padding=g["start"],
        end_padding=g["end"], dilations=g["dilations"])
    got = dml.compile_operator(desc).execute(input_tensor=x, input_gradient_tensor=dy)
    assert_bits(got["output_gradient_tensor"], O.max_pooling_grad(
        x, dy, g["window"], **oracle_kwargs(g)))


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pooling_grad_of_opposite_infinities_is_the_canonical_nan(backend, dtype):
    # SPEC 5: +inf and -inf into one element give the canonical quiet NaN (x86 makes its
    # negative "default NaN"); the oracle's is canonical too
    x = np.array([0, 10, 0], dtype).reshape(1, 1, 3)
    dy = np.array([np.inf, -np.inf, 1], dtype).reshape(1, 1, 3)
    got = dml.max_pooling_grad(x, dy, 3, start_padding=1, end_padding=1, backend=backend)
    want = O.max_pooling_grad(x, dy, (3,), start=(1,), end=(1,))
    assert O.is_canonical_nan(want[0, 0, 1])
    assert_bits(got, want)


def test_max_pooling_grad_order_and_precision_by_hand():
    # SPEC 3.5: start at +0.0, add in ascending flat index of the forward output, in float32.
    # x = [0, 10, 0], window 3, padding 1+1: all three windows pick x[1].
    x = np.array([0, 10, 0], np.float32).reshape(1, 1, 3)
    dy = np.array([1, 1e8, -1e8], np.float32).reshape(1, 1, 3)
    # ((0 + 1) + 1e8) + -1e8 = 0 in float32 (1e8 + 1 rounds to 1e8).
    got = dml.max_pooling_grad(x, dy, 3, start_padding=1, end_padding=1)
    assert O.bits(got).tolist() == [[[0, 0, 0]]]
    # FLOAT16 accumulates in float32 and rounds once: 2048 + 1 + 1 = 2050 (float16 steps: 2048).
    x16 = x.astype(np.float16)
    got = dml.max_pooling_grad(x16, np.array([2048, 1, 1], np.float16).reshape(1, 1, 3), 3,
                               start_padding=1, end_padding=1)
    assert got.dtype == np.float16 and got[0, 0, 1] == 2050
    # A single -0.0 contribution added to +0.0 gives +0.0.
    got = dml.max_pooling_grad(x, np.full((1, 1, 3), -0.0, np.float32), 3, start_padding=1,
                               end_padding=1)
    assert not np.signbit(got).any()


# --- quantized average pooling (SPEC 3.3) -------------------------------------------------

SCALES = st.one_of(st.floats(2**-8, 2**6, width=32),
                   st.sampled_from([0.5, 0.25, 1.0, 2.0, 1 / 3, 0.1, 1e-30, 3e38]))


def quantized_params(data, g, din, dout, per_channel):
    """Scales and zero points in every form SPEC 3.3 / 7 accept: per tensor a scalar (Python
    or NumPy), shape () or an all-ones shape of rank <= the input's; per channel exactly
    (1, C, 1, ...). A zero point may be None (0)."""
    C, rank = g["shape"][1], len(g["shape"])

    def param(strategy, dtype):
        if per_channel:
            return np.array([data.draw(strategy) for _ in range(C)], dtype).reshape(
                (1, C) + (1,) * (rank - 2))
        form = data.draw(st.sampled_from(["python", "numpy", "ones"]))
        v = data.draw(strategy)
        if form == "python":
            return v
        if form == "numpy":
            return dtype(v)
        return np.full((1,) * data.draw(st.integers(0, rank)), v, dtype)

    zin_i, zout_i = np.iinfo(din), np.iinfo(dout)
    s_in, s_out = param(SCALES, np.float32), param(SCALES, np.float32)
    z_in = None if data.draw(st.booleans()) else param(st.integers(zin_i.min, zin_i.max), din)
    z_out = None if data.draw(st.booleans()) else param(st.integers(zout_i.min, zout_i.max), dout)
    return s_in, z_in, s_out, z_out


@backend_param
@settings(max_examples=150)
@given(g=geometries(ceil=False), din=st.sampled_from([np.int8, np.uint8]),
       dout=st.sampled_from([np.int8, np.uint8]), per_channel=st.booleans(),
       incl=st.booleans(), data=st.data())
def test_quantized_matches_oracle(backend, g, din, dout, per_channel, incl, data):
    # The functional signature of SPEC 4.1 has no output_sizes: outputs are of size F here
    # (F + 1 is covered through the description layer below).
    x = int_data(data.draw, din, g["shape"])
    s_in, z_in, s_out, z_out = quantized_params(data, g, din, dout, per_channel)
    want = O.quantized_average_pooling(
        x, s_in, z_in, s_out, z_out, g["window"], include_padding=incl, out_spatial=g["out"],
        out_dtype=dout, **oracle_kwargs(g))
    # SPEC 3.3: the output type is output_dtype if given, else the dtype of a NumPy output
    # zero point, else the input's.
    numpy_zp = isinstance(z_out, (np.ndarray, np.generic))
    if numpy_zp and data.draw(st.booleans()):
        extra = {}
    elif not numpy_zp and dout == din and data.draw(st.booleans()):
        extra = {}
    else:
        extra = {"output_dtype": dout}
    got = dml.quantized_linear_average_pooling(
        x, s_in, z_in, s_out, z_out, g["window"], include_padding=incl, backend=backend,
        **extra, **pool_kwargs(g))
    assert_bits(got, want)


@settings(max_examples=60)
@given(g=geometries(), din=st.sampled_from([np.int8, np.uint8]),
       dout=st.sampled_from([np.int8, np.uint8]), per_channel=st.booleans(),
       incl=st.booleans(), data=st.data())
def test_quantized_desc_matches_oracle(g, din, dout, per_channel, incl, data):
    # The description layer, with F + 1 outputs too (SPEC 2) and optional zero points left out.
    x = int_data(data.draw, din, g["shape"])
    C, rank = g["shape"][1], len(g["shape"])
    pshape = (1, C) + (1,) * (rank - 2) if per_channel else (1,) * rank
    s_in, z_in, s_out, z_out = (None if v is None else np.broadcast_to(
        np.asarray(v, dt), pshape).copy() for v, dt in zip(
        quantized_params(data, g, din, dout, per_channel),
        (np.float32, din, np.float32, dout)))
    want = O.quantized_average_pooling(
        x, s_in, z_in, s_out, z_out, g["window"], include_padding=incl, out_spatial=g["out"],
        out_dtype=dout, **oracle_kwargs(g))
    kw = dict(input_tensor=dml.TensorDesc(din, x.shape),
              input_scale_tensor=dml.TensorDesc("FLOAT32", pshape),
              output_scale_tensor=dml.TensorDesc("FLOAT32", pshape),
              output_tensor=dml.TensorDesc(dout, want.shape), strides=g["strides"],
              window_size=g["window"], start_padding=g["start"], end_padding=g["end"],
              dilations=g["dilations"], include_padding=incl)
    bind = dict(input_tensor=x, input_scale_tensor=s_in, output_scale_tensor=s_out)
    if z_in is not None:
        kw["input_zero_point_tensor"] = dml.TensorDesc(din, pshape)
        bind["input_zero_point_tensor"] = z_in
    if z_out is not None:
        kw["output_zero_point_tensor"] = dml.TensorDesc(dout, pshape)
        bind["output_zero_point_tensor"] = z_out
    op = dml.compile_operator(dml.QuantizedLinearAveragePoolingDesc(**kw))
    assert_bits(op.execute(**bind)["output_tensor"], want)


def test_quantized_round_half_even_and_float32_steps():
    # SPEC 3.3 step 4, half to even: acc = 5, count 2 -> 2.5 -> 2; acc = 7 -> 3.5 -> 4.
    x = np.array([5, 0, 7, 0], np.uint8).reshape(1, 1, 4)
    q = dml.quantized_linear_average_pooling(x, 1.0, None, 1.0, None, 2, strides=2)
    assert q.tolist() == [[[2, 4]]]
    # Negative half: acc = -5, count 2 -> -2.5 -> -2.
    x = np.array([-5, 0], np.int8).reshape(1, 1, 2)
    assert dml.quantized_linear_average_pooling(x, 1.0, 0, 1.0, 0, 2).tolist() == [[[-2]]]
    # SPEC 3.3 step 3 is float32 in a fixed order. acc = 9, s_in = 0.5, count = 6,
    # s_out = float32(0.1): (4.5 / 6) / 0.1 = 7.5 in float32 -> 8; dividing by
    # (6 * 0.1) instead gives 7.4999995 -> 7, and float64 gives 7.4999999 -> 7.
    x = np.array([1, 1, 1, 2, 2, 2], np.uint8).reshape(1, 1, 6)
    assert dml.quantized_linear_average_pooling(x, 0.5, 0, 0.1, 0, 6).tolist() == [[[8]]]
    # acc = -39, s_in = s_out = float32(0.1), count 6: float32 steps give -6.5000005 -> -7;
    # exact arithmetic gives -6.5 -> -6 (half even).
    x = np.array([-6, -6, -6, -7, -7, -7], np.int8).reshape(1, 1, 6)
    assert dml.quantized_linear_average_pooling(x, 0.1, 0, 0.1, 0, 6).tolist() == [[[-7]]]


# --- PyTorch, where it implements the SPEC's rule exactly --------------------------------

TORCH_MAX = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
             3: torch.nn.functional.max_pool3d}
TORCH_AVG = {1: torch.nn.functional.avg_pool1d, 2: torch.nn.functional.avg_pool2d,
             3: torch.nn.functional.avg_pool3d}


@st.composite
def torch_cases(draw, dilations=True):
    """Symmetric padding <= window // 2 (PyTorch's limit), sizes where PyTorch accepts them."""
    k = draw(st.integers(1, 3))
    lim = {1: 9, 2: 6, 3: 4}[k]
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)))
    window, strides, pads, dil = [], [], [], []
    for _ in range(k):
        W = draw(st.integers(1, 3))
        d = draw(st.integers(1, 2)) if dilations else 1
        p = draw(st.integers(0, W // 2))
        lo = max(1, (W - 1) * d + 1 - 2 * p, W)
        S = draw(st.integers(lo, max(lo, lim)))
        shape += (S,)
        window.append(W)
        strides.append(draw(st.integers(1, 3)))
        pads.append(p)
        dil.append(d)
    return shape, tuple(window), tuple(strides), tuple(pads), tuple(dil), draw(st.booleans())


def plane_offsets(shape):
    k = len(shape) - 2
    return (np.arange(shape[0] * shape[1]) * int(np.prod(shape[2:]))).reshape(
        shape[:2] + (1,) * k)


@settings(max_examples=100)
@given(case=torch_cases(), seed=st.integers(0, 2**32 - 1))
def test_max_pooling_matches_torch(case, seed):
    # PyTorch's max_pool with return_indices: padding never wins, ceil_mode is SPEC 2's
    # ceil rule, and indices are per (n, c) plane (add the plane offset for SPEC 2's flat
    # index). Distinct values, since PyTorch's tie rule is not the SPEC's.
    shape, W, s, p, d, ceil = case
    x = np.random.default_rng(seed).permutation(int(np.prod(shape))).astype(np.float32)
    x = (x - x.size / 2).reshape(shape)
    tv, ti = TORCH_MAX[len(W)](torch.from_numpy(x), W, s, p, d, ceil_mode=ceil,
                               return_indices=True)
    tv, ti = tv.numpy(), ti.numpy() + plane_offsets(shape)
    # SPEC 2: pooling_output_sizes(ceil_mode=...) is "the rule of the ONNX operator spec and
    # PyTorch".
    assert tuple(int(v) for v in dml.pooling_output_sizes(
        shape, W, strides=s, start_padding=p, end_padding=p, dilations=d,
        ceil_mode=ceil)) == tv.shape
    v, i = dml.max_pooling(x, W, strides=s, start_padding=p, end_padding=p, dilations=d,
                           output_sizes=tv.shape[2:], output_indices=True,
                           indices_dtype=np.int64)
    real = np.isfinite(tv)      # PyTorch gives -inf where a window has no real element
    assert np.array_equal(v[real], tv[real])
    assert np.array_equal(i[real], ti[real])
    assert np.all(v[~real] == -np.inf) and np.all(i[~real] == -1)


@settings(max_examples=100)
@given(case=torch_cases(dilations=False), incl=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_average_pooling_matches_torch(case, incl, seed):
    # count_include_pad counts padding but not positions past P (what SPEC 3.1 calls phantom),
    # in floor and in ceil mode. Small integers: both sums are exact, so the quotients agree to
    # an ulp.
    shape, W, s, p, _, ceil = case
    x = np.random.default_rng(seed).integers(-20, 20, size=shape).astype(np.float32)
    try:
        t = TORCH_AVG[len(W)](torch.from_numpy(x), W, s, p, ceil_mode=ceil,
                              count_include_pad=incl).numpy()
    except RuntimeError:        # PyTorch refuses some shapes that SPEC 2 allows
        return
    y = dml.average_pooling(x, W, strides=s, start_padding=p, end_padding=p,
                            include_padding=incl, output_sizes=t.shape[2:])
    assert y.shape == t.shape
    np.testing.assert_allclose(y, t, rtol=2**-22, atol=0)


@settings(max_examples=80)
@given(case=torch_cases(), seed=st.integers(0, 2**32 - 1))
def test_max_pooling_grad_matches_torch(case, seed):
    # Autograd of max_pool scatters each window's gradient to its argmax and sums: SPEC 3.5.
    # Distinct inputs and small integer gradients, so order does not matter here.
    shape, W, s, p, d, ceil = case
    rng = np.random.default_rng(seed)
    x = rng.permutation(int(np.prod(shape))).astype(np.float32).reshape(shape)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ty = TORCH_MAX[len(W)](tx, W, s, p, d, ceil_mode=ceil)
    if not torch.isfinite(ty).all():
        return      # PyTorch scatters a no-element window somewhere; SPEC 3.5 drops it
    dy = rng.integers(-5, 6, size=tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.from_numpy(dy))
    got = dml.max_pooling_grad(x, dy, W, strides=s, start_padding=p, end_padding=p,
                               dilations=d)
    assert np.array_equal(got, tx.grad.numpy())


@settings(max_examples=100)
@given(case=torch_cases())
def test_pooling_output_sizes_ceil_rule(case):
    # SPEC 2: ceil_mode gives F + 1 iff (P - E) % s != 0 and F * s < S + StartPadding;
    # asymmetric paddings too (PyTorch cannot express those).
    shape, W, s, p, d, _ = case
    end = tuple(pi + 1 for pi in p)
    for ceil in (False, True):
        got = dml.pooling_output_sizes(shape, W, strides=s, start_padding=p, end_padding=end,
                                       dilations=d, ceil_mode=ceil)
        f = O.ceil_size if ceil else O.floor_size
        want = shape[:2] + tuple(f(S, w, si, a, b, di) for S, w, si, a, b, di in
                                 zip(shape[2:], W, s, p, end, d))
        assert tuple(int(v) for v in got) == want


# --- more spatial dimensions; larger inputs on every backend ------------------------------

@pytest.mark.parametrize("k", [4, 5, 6])
def test_extended_mode_up_to_six_spatial_dimensions(k):
    # SPEC 2: "extended mode allows 1 <= k <= 6 (rank at most 8 everywhere)".
    rng = np.random.default_rng(k)
    shape = (1, 2) + (3,) * (k - 1) + (2,)
    x = rng.integers(-3, 4, size=shape).astype(np.float32)
    kw = dict(strides=(2,) + (1,) * (k - 1), start_padding=(1,) + (0,) * (k - 1),
              end_padding=(0,) * (k - 1) + (1,), dilations=(1,) * (k - 1) + (2,))
    okw = dict(strides=kw["strides"], start=kw["start_padding"], end=kw["end_padding"],
               dilations=kw["dilations"])
    v, i = dml.max_pooling(x, 2, output_indices=True, **kw)
    want_v, want_i = O.max_pooling(x, 2, **okw)
    assert_bits(v, want_v)
    assert_bits(i, want_i)
    O.average_pooling_check(dml.average_pooling(x, 2, include_padding=True, **kw), x, 2,
                            include_padding=True, **okw)
    dy = rng.integers(-3, 4, size=v.shape).astype(np.float32)
    assert_bits(dml.max_pooling_grad(x, dy, 2, **kw), O.max_pooling_grad(x, dy, 2, **okw))


LARGE_CASES = [
    # (input shape, window, strides, start, end, dilations, output spatial: None = F)
    ((2, 3, 17, 19), (3, 3), (2, 1), (1, 0), (2, 3), (1, 2), None),
    ((1, 4, 23, 9), (2, 4), (3, 2), (4, 1), (0, 5), (2, 1), "ceil"),
    ((3, 2, 6, 7, 5), (2, 3, 2), (1, 2, 2), (0, 1, 2), (2, 2, 0), (2, 1, 1), "ceil"),
    ((2, 5, 41), (5,), (3,), (7,), (6,), (2,), "ceil"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", LARGE_CASES)
def test_larger_inputs_every_backend(backend, case):
    # SPEC 5: bitwise the reference's results (here: the oracle's) for max pooling, indices,
    # quantized pooling and the max-pooling gradient; the bound for average pooling - on
    # inputs big enough for a compiled backend to tile or thread.
    shape, W, s, a, b, d, mode = case
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    okw = dict(strides=s, start=a, end=b, dilations=d)
    kw = dict(strides=s, start_padding=a, end_padding=b, dilations=d)
    out = None
    if mode == "ceil":
        out = tuple(O.floor_size(S, w, si, ai, bi, di) + 1 for S, w, si, ai, bi, di in
                    zip(shape[2:], W, s, a, b, d))
    x = rng.integers(-4, 5, size=shape).astype(np.float32)
    x[rng.random(shape) < 0.02] = np.nan
    v, i = dml.max_pooling(x, W, output_indices=True, output_sizes=out, backend=backend, **kw)
    want_v, want_i = O.max_pooling(x, W, out_spatial=out, **okw)
    assert_bits(v, want_v)
    assert_bits(i, want_i)
    xi = rng.integers(-128, 128, size=shape).astype(np.int8)
    v, i = dml.max_pooling(xi, W, output_indices=True, output_sizes=out, backend=backend,
                           indices_dtype=np.uint64, **kw)
    want_v, want_i = O.max_pooling(xi, W, out_spatial=out, indices_dtype=np.uint64, **okw)
    assert_bits(v, want_v)
    assert_bits(i, want_i)
    xf = (rng.standard_normal(shape) * 100).astype(np.float16)
    for incl in (False, True):
        y = dml.average_pooling(xf, W, include_padding=incl, output_sizes=out, backend=backend,
                                **kw)
        O.average_pooling_check(y, xf, W, include_padding=incl, out_spatial=out, **okw)
    dy = (rng.standard_normal(want_v.shape) * 1e4).astype(np.float32)
    xg = rng.integers(-2, 3, size=shape).astype(np.float32)      # many ties
    assert_bits(dml.max_pooling_grad(xg, dy, W, backend=backend, **kw),
                O.max_pooling_grad(xg, dy, W, **okw))
    if out is None:
        xq = rng.integers(0, 256, size=shape).astype(np.uint8)
        C = shape[1]
        s_in = rng.uniform(0.01, 1, size=C).astype(np.float32).reshape((1, C) + (1,) *
                                                                       (len(shape) - 2))
        got = dml.quantized_linear_average_pooling(xq, s_in, np.uint8(3), 0.37, np.int8(-5), W,
                                                   include_padding=True, backend=backend,
                                                   **kw)
        assert_bits(got, O.quantized_average_pooling(xq, s_in, 3, np.float32(0.37), -5, W,
                                                     include_padding=True, out_dtype=np.int8,
                                                     **okw))
