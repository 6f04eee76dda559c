"""Property tests for AVERAGE_POOLING_GRAD, LP_POOLING, MAX_UNPOOLING and ROI_POOLING against
the SPEC oracles of tests/oracles_family.py, against PyTorch where PyTorch implements the
SPEC's rule, across thread counts and across memory layouts.

Shapes are tiny (the oracles loop in Python); k = 1..3 spatial dimensions (extended mode);
outputs (forward outputs, for the gradient) of size F and F + 1 (SPEC 2). Every backend that
``dml.backends()`` lists is checked against the oracle (SPEC 5: bitwise for max unpooling and
ROI pooling, the summation bound for the average gradient, one ulp for Lp pooling).
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dmlops as dml
import oracles as O
import oracles_family as OF

BACKENDS = tuple(dml.backends())
FLOATS = (np.float16, np.float32, np.float64)
NAN_BITS = {np.dtype(np.float16): [0xFE00, 0x7C01, 0xFFFF],       # -NaN, signalling, payload
            np.dtype(np.float32): [0xFFC00000, 0x7F800001, 0x7FC12345],
            np.dtype(np.float64): [0xFFF8000000000000, 0x7FF0000000000001,
                                   0x7FF8000000012345]}

backend_param = pytest.mark.parametrize("backend", BACKENDS)


# --- strategies ---------------------------------------------------------------------------

@st.composite
def geometries(draw, max_k=3, ceil=True):
    """Input sizes and window parameters (SPEC 2), always valid (E <= P), with the output's
    spatial sizes F or F + 1. Paddings: none, within the window, or wider than it."""
    k = draw(st.integers(1, max_k))
    lim_s, lim_w, lim_p = {1: (7, 4, 5), 2: (4, 3, 3), 3: (3, 2, 2)}[k]
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    window, strides, start, end, dil, out = [], [], [], [], [], []
    for _ in range(k):
        S = draw(st.integers(1, lim_s))
        W = draw(st.integers(1, lim_w))
        s = draw(st.integers(1, 3))
        d = draw(st.integers(1, 2))
        pads = st.one_of(st.just(0), st.integers(0, max(0, W - 1)), st.integers(0, lim_p))
        a, b = draw(pads), draw(pads)
        E = (W - 1) * d + 1
        if E > S + a + b:
            b = E - S - a
        F = O.floor_size(S, W, s, a, b, d)
        shape.append(S)
        window.append(W)
        strides.append(s)
        start.append(a)
        end.append(b)
        dil.append(d)
        out.append(F + int(draw(st.booleans()) if ceil else 0))
    return dict(shape=tuple(shape), window=tuple(window), strides=tuple(strides),
                start=tuple(start), end=tuple(end), dilations=tuple(dil), out=tuple(out))


def floor_of(g):
    return tuple(O.floor_size(S, W, s, a, b, d) for S, W, s, a, b, d in zip(
        g["shape"][2:], g["window"], g["strides"], g["start"], g["end"], g["dilations"]))


def pool_kwargs(g):
    return dict(strides=g["strides"], start_padding=g["start"], end_padding=g["end"],
                dilations=g["dilations"])


def oracle_kwargs(g):
    return dict(strides=g["strides"], start=g["start"], end=g["end"], dilations=g["dilations"])


def inject_nans(draw, a):
    """Overwrite one or two elements with NaNs of unusual bits (sign, signalling, payload)."""
    if a.size and draw(st.booleans()):
        ub = a.view(f"u{a.itemsize}").reshape(-1)
        for _ in range(draw(st.integers(1, 2))):
            ub[draw(st.integers(0, a.size - 1))] = draw(st.sampled_from(NAN_BITS[a.dtype]))
    return a


def float_data(draw, dtype, shape, specials=True, wide=False, nonneg=False):
    """Small integers (ties, exact sums), general floats, optionally -0.0 / +-inf / NaN and, with
    ``wide``, magnitudes over the whole range of the type (subnormals to near the maximum)."""
    fi = np.finfo(dtype)
    parts = [st.integers(-4, 4).map(float), st.floats(-1e4, 1e4),
             st.sampled_from([1e8, -1e8, 2048.0, 0.1, -0.0, 1 / 3])]
    if wide:
        parts.append(st.builds(math.ldexp, st.floats(-1, 1),
                               st.integers(int(fi.minexp) - int(fi.nmant), int(fi.maxexp) - 1)))
    if specials:
        parts.append(st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf]))
    a = draw(hnp.arrays(np.float64, shape, elements=st.one_of(*parts)))
    if nonneg:
        a = np.abs(a)
    with np.errstate(over="ignore"):
        a = a.astype(dtype)
    return inject_nans(draw, a) if specials else a


def int_data(draw, dtype, shape):
    info = np.iinfo(dtype)
    small = st.integers(max(-3, info.min), 3)
    edges = st.sampled_from([info.min, info.max, info.min + 1, info.max - 1, 0])
    return draw(hnp.arrays(dtype, shape, elements=st.one_of(small, edges,
                                                            st.integers(info.min, info.max))))


def assert_bits(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    ok = O.bits(got) == O.bits(want)
    assert ok.all(), (np.argwhere(~ok)[:5], got[~ok][:5], want[~ok][:5])


def assert_same(got, want):
    """Bitwise, except that NaNs only have to be NaNs (where the SPEC leaves payloads open)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    gn, wn = np.isnan(got), np.isnan(want)
    assert np.array_equal(gn, wn), np.argwhere(gn != wn)[:5]
    ok = (O.bits(got) == O.bits(want)) | gn
    assert ok.all(), (np.argwhere(~ok)[:5], got[~ok][:5], want[~ok][:5])


def describe(g):
    event(f"k={len(g['window'])}")
    if floor_of(g) != g["out"]:
        event("F+1 output")


# --- AVERAGE_POOLING_GRAD (SPEC 3.2, bound SPEC 5) ------------------------------------------

def grad_dy(draw, g, dtype):
    return float_data(draw, dtype, g["shape"][:2] + g["out"])


def input_sizes_arg(draw, g):
    """SPEC 4.1: input_sizes as the k spatial sizes or the full sizes."""
    return draw(st.sampled_from([g["shape"], g["shape"][2:]]))


@backend_param
@settings(max_examples=60)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), incl=st.booleans(), data=st.data())
def test_average_pooling_grad_matches_oracle(backend, g, dtype, incl, data):
    dy = grad_dy(data.draw, g, dtype)
    describe(g)
    got = dml.average_pooling_grad(dy, g["window"], input_sizes=input_sizes_arg(data.draw, g),
                                   include_padding=incl, backend=backend, **pool_kwargs(g))
    assert got.flags.c_contiguous
    OF.average_pooling_grad_check(got, dy, g["window"], g["shape"], include_padding=incl,
                                  **oracle_kwargs(g))


@settings(max_examples=50)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), incl=st.booleans(), data=st.data())
def test_average_pooling_grad_backends_agree_bitwise(g, dtype, incl, data):
    # SPEC 5: "Each window's terms are summed in a fixed order ... never depending on tiling,
    # threads or chunks". Read (as the brief asks) as: every backend adds the same terms in the
    # same order, so results agree bit for bit (NaN payloads aside).
    dy = grad_dy(data.draw, g, dtype)
    res = [dml.average_pooling_grad(dy, g["window"], input_sizes=g["shape"],
                                    include_padding=incl, backend=b, **pool_kwargs(g))
           for b in BACKENDS]
    for r in res[1:]:
        assert_same(r, res[0])


@settings(max_examples=40)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), incl=st.booleans(), data=st.data())
def test_average_pooling_grad_desc_matches_oracle(g, dtype, incl, data):
    # SPEC 4.2, extended mode: any k, float64, dilations.
    dy = grad_dy(data.draw, g, dtype)
    desc = dml.AveragePoolingGradDesc(
        input_gradient_tensor=dml.TensorDesc(dy.dtype, dy.shape),
        output_gradient_tensor=dml.TensorDesc(dy.dtype, g["shape"]),
        strides=g["strides"], window_size=g["window"], start_padding=g["start"],
        end_padding=g["end"], dilations=g["dilations"], include_padding=incl)
    got = dml.compile_operator(desc).execute(input_gradient_tensor=dy)["output_gradient_tensor"]
    OF.average_pooling_grad_check(got, dy, g["window"], g["shape"], include_padding=incl,
                                  **oracle_kwargs(g))


@pytest.mark.parametrize("backend", BACKENDS)
def test_average_pooling_grad_by_hand(backend):
    f32 = np.float32
    # SPEC 3.2's example.
    dy = np.array([[1, 2], [3, 4]], f32).reshape(1, 1, 2, 2)
    got = dml.average_pooling_grad(dy, 2, input_sizes=(3, 3), backend=backend)
    assert got.tolist() == [[[[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]]]]
    # F + 1 output, S = 3, window 2, stride 2, end padding 1: o = 1 covers x = 2 (real) and
    # x = 3 (padding); o = 2 covers x = 4, 5 (phantom: never counted, divisor 0).
    dy = np.array([4, 6, 8], f32).reshape(1, 1, 3)
    kw = dict(input_sizes=(1, 1, 3), strides=2, end_padding=1, backend=backend)
    assert dml.average_pooling_grad(dy, 2, include_padding=True, **kw).tolist() == [[[2, 2, 3]]]
    assert dml.average_pooling_grad(dy, 2, include_padding=False, **kw).tolist() == [[[2, 2, 6]]]
    # F + 1 without end padding: o = 1 covers x = 2 (real) and x = 3 (phantom): divisor 1
    # whether or not padding is included.
    dy = np.array([4, 6], f32).reshape(1, 1, 2)
    for incl in (False, True):
        assert dml.average_pooling_grad(dy, 2, input_sizes=(3,), strides=2,
                                        include_padding=incl, backend=backend).tolist() == [
            [[2, 2, 6]]]
    # Accumulation in float32 for FLOAT16, one rounding at the end (SPEC 3.1/3.2): S = 1,
    # window 3, padding 2 + 2: three windows, each with the single real element (divisor 1).
    # 2048 + 1 + 1 = 2050 in float32; float16 steps would give 2048.
    dy = np.array([2048, 1, 1], np.float16).reshape(1, 1, 3)
    got = dml.average_pooling_grad(dy, 3, input_sizes=(1,), start_padding=2, end_padding=2,
                                   backend=backend)
    assert got.dtype == np.float16 and got.tolist() == [[[2050]]]
    # float64 accumulates in float64: 1 + 2^-40 survives.
    dy = np.array([1, 2.0**-40], np.float64).reshape(1, 1, 2)
    got = dml.average_pooling_grad(dy, 2, input_sizes=(1,), start_padding=1, end_padding=1,
                                   backend=backend)
    assert got.tolist() == [[[1 + 2.0**-40]]]


# --- LP_POOLING (SPEC 3.6) ------------------------------------------------------------------

P_VALUES = st.one_of(st.integers(1, 4), st.integers(1, 4).map(np.int64),
                     st.integers(1, 4).map(np.int32))


def lp_out_arg(draw, g):
    choices = [g["out"], g["shape"][:2] + g["out"]]
    if floor_of(g) == g["out"]:
        choices.append(None)
    return draw(st.sampled_from(choices))


@backend_param
@settings(max_examples=60)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), p=P_VALUES, data=st.data())
def test_lp_pooling_matches_oracle(backend, g, dtype, p, data):
    x = float_data(data.draw, dtype, g["shape"], wide=True)
    describe(g)
    event(f"p={int(p)}")
    y = dml.lp_pooling(x, g["window"], p=p, output_sizes=lp_out_arg(data.draw, g),
                       backend=backend, **pool_kwargs(g))
    assert y.flags.c_contiguous
    OF.lp_pooling_check(y, x, g["window"], int(p), out_spatial=g["out"], **oracle_kwargs(g))


@settings(max_examples=40)
@given(g=geometries(), dtype=st.sampled_from(FLOATS), p=st.integers(1, 4), data=st.data())
def test_lp_pooling1_desc_matches_oracle(g, dtype, p, data):
    x = float_data(data.draw, dtype, g["shape"], wide=True)
    desc = dml.LpPooling1Desc(
        input_tensor=dml.TensorDesc(x.dtype, x.shape),
        output_tensor=dml.TensorDesc(x.dtype, g["shape"][:2] + g["out"]),
        strides=g["strides"], window_size=g["window"], start_padding=g["start"],
        end_padding=g["end"], dilations=g["dilations"], p=p)
    y = dml.compile_operator(desc).execute(input_tensor=x)["output_tensor"]
    OF.lp_pooling_check(y, x, g["window"], p, out_spatial=g["out"], **oracle_kwargs(g))


@pytest.mark.parametrize("backend", BACKENDS)
def test_lp_pooling_by_hand(backend):
    def lp(vals, dtype, p):
        x = np.array(vals, dtype).reshape(1, 1, -1)
        return dml.lp_pooling(x, len(vals), p=p, backend=backend)[0, 0, 0]
    # No overflow on the way (SPEC 3.6): 2e38^2 overflows float32, the result does not.
    assert lp([2e38, 1e38], np.float32, 2) == np.float32(math.sqrt(5) * 1e38)
    assert lp([1e300, 1e300], np.float64, 2) == math.sqrt(2) * 1e300
    # No underflow: (1e-300)^4 underflows float64.
    y = lp([1e-300, 1e-300], np.float64, 4)
    assert abs(y - 2**0.25 * 1e-300) <= 2 * np.spacing(2**0.25 * 1e-300)
    assert lp([6e-8, 6e-8], np.float16, 3) > 0           # float16 subnormals
    # 3-4-5, NaN beats inf, inf, all zeros and -0.0 give +0.0, P = 1 is sum |x|.
    assert lp([3, -4], np.float32, 2) == 5
    assert math.isnan(lp([np.inf, np.nan, 1], np.float32, 2))
    assert lp([-np.inf, 1], np.float16, 3) == np.inf
    z = lp([-0.0, 0.0], np.float32, 2)
    assert z == 0 and not np.signbit(z)
    assert lp([-1.5, 2.5, -3], np.float64, 1) == 7
    # A window with no real element: sum over nothing = 0.
    x = np.array([5], np.float32).reshape(1, 1, 1)
    y = dml.lp_pooling(x, 2, start_padding=2, backend=backend)
    assert y.tolist() == [[[0.0, 5.0]]] and not np.signbit(y).any()


@pytest.mark.parametrize("p", [0, -1, 2.0, True, np.float32(2), "2", None])
def test_lp_pooling_rejects_p(p):
    # SPEC 3.6: P >= 1, a Python/NumPy integer; anything else (bool included) is invalid.
    x = np.ones((1, 1, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError):
        dml.lp_pooling(x, 2, p=p)


# --- MAX_UNPOOLING (SPEC 3.7, 7) ------------------------------------------------------------

UNPOOL_DTYPES = (np.float32, np.float16, np.float64, np.int8, np.uint16, np.int64)
INDEX_DTYPES = (np.uint32, np.uint64, np.int32, np.int64)


@st.composite
def unpooling_cases(draw):
    """Input (rank 3..5), indices with many duplicates and, for the types that have one,
    "no element" values (SPEC 3.4); an output of the input's rank, N and C, any spatial size."""
    k = draw(st.integers(1, 3))
    lim = {1: 6, 2: 3, 3: 2}[k]
    N, C = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    shape = (N, C) + tuple(draw(st.integers(1, lim)) for _ in range(k))
    out = (N, C) + tuple(draw(st.integers(1, lim + 1)) for _ in range(k))
    total = int(np.prod(out))
    dtype = np.dtype(draw(st.sampled_from(UNPOOL_DTYPES)))
    idt = np.dtype(draw(st.sampled_from(INDEX_DTYPES)))
    hi = draw(st.sampled_from([min(2, total - 1), total - 1]))      # few targets: duplicates
    parts = [st.integers(0, hi), st.integers(0, total - 1)]
    if idt in O.NO_ELEMENT:
        parts.append(st.just(O.NO_ELEMENT[idt]))
    idx = draw(hnp.arrays(idt, shape, elements=st.one_of(*parts)))
    return dtype, shape, out, idx


@backend_param
@settings(max_examples=60)
@given(case=unpooling_cases(), data=st.data())
def test_max_unpooling_matches_oracle(backend, case, data):
    dtype, shape, out, idx = case
    if dtype.kind == "f":
        x = float_data(data.draw, dtype, shape)
    else:
        x = int_data(data.draw, dtype, shape)
    want = OF.max_unpooling(x, idx, out)
    flat = idx.reshape(-1).astype(object)
    if len(set(flat.tolist())) < flat.size:
        event("duplicate indices")
    if idx.dtype in O.NO_ELEMENT and (idx == O.NO_ELEMENT[idx.dtype]).any():
        event("no-element indices")
    got = dml.max_unpooling(x, idx, out, backend=backend)
    assert got.flags.c_contiguous
    assert_bits(got, want)      # bitwise (SPEC 5): bits copied, later wins, the rest +0


@settings(max_examples=40)
@given(case=unpooling_cases(), data=st.data())
def test_max_unpooling_desc_matches_oracle(case, data):
    dtype, shape, out, idx = case
    x = float_data(data.draw, dtype, shape) if dtype.kind == "f" else int_data(
        data.draw, dtype, shape)
    desc = dml.MaxUnpoolingDesc(input_tensor=dml.TensorDesc(dtype, shape),
                                indices_tensor=dml.TensorDesc(idx.dtype, shape),
                                output_tensor=dml.TensorDesc(dtype, out))
    got = dml.compile_operator(desc).execute(input_tensor=x, indices_tensor=idx)
    assert_bits(got["output_tensor"], OF.max_unpooling(x, idx, out))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("idt,bad", [
    (np.uint32, 12), (np.uint64, 2**32 - 1), (np.uint64, 12), (np.int64, -2), (np.int64, 12),
    (np.int32, -1), (np.int32, 12), (np.int64, 2**32 - 1)])
def test_max_unpooling_bad_index_writes_nothing(backend, idt, bad):
    # SPEC 3.7: an index outside [0, 12) other than the type's "no element" value (none for
    # INT32; 2^32-1 is not UINT64's) is an InvalidArgumentError raised before anything is
    # written; SPEC 7: negative indices other than INT64's -1 likewise.
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
    idx = np.array([0, 3, bad, 5], idt).reshape(1, 1, 4)
    with pytest.raises(dml.InvalidArgumentError):
        dml.max_unpooling(x, idx, (1, 1, 12), backend=backend)
    out = np.full((1, 1, 12), 7.0, np.float32)
    with pytest.raises(dml.InvalidArgumentError):
        dml.max_unpooling(x, idx, (1, 1, 12), out=out, backend=backend)
    assert (out == 7).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_unpooling_shape_and_type_errors(backend):
    # SPEC 3.7 / 7: Output has the input's N and C; Input and Indices have the same sizes
    # (size problems: InvalidArgumentError); indices of a type outside uint32/uint64/int32/
    # int64 are a type problem (UnsupportedError).
    x = np.ones((1, 2, 3), np.float32)
    idx = np.zeros((1, 2, 3), np.uint32)
    for sizes in [(2, 2, 6), (1, 1, 6)]:
        with pytest.raises(dml.InvalidArgumentError):
            dml.max_unpooling(x, idx, sizes, backend=backend)
    with pytest.raises(dml.InvalidArgumentError):
        dml.max_unpooling(x, np.zeros((1, 2, 2), np.uint32), (1, 2, 6), backend=backend)
    for bad in (np.float32, np.int16, np.uint8):
        with pytest.raises(dml.UnsupportedError):
            dml.max_unpooling(x, idx.astype(bad), (1, 2, 6), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_unpooling_by_hand(backend):
    # Later element wins; no-element skipped; untouched positions are +0.0 even in a dirty out.
    x = np.array([1, 2, 3, -0.0], np.float32).reshape(1, 1, 4)
    idx = np.array([5, 5, 2**32 - 1, 0], np.uint32).reshape(1, 1, 4)
    out = np.full((1, 1, 6), np.nan, np.float32)
    got = dml.max_unpooling(x, idx, (1, 1, 6), out=out, backend=backend)
    assert got is out
    assert O.bits(out).tolist() == [[[0x80000000, 0, 0, 0, 0, O.bits(np.float32(2))]]]
    # Indices are flat over the whole output, N and C included (SPEC 2).
    x = np.array([10, 20], np.int16).reshape(1, 2, 1)
    idx = np.array([3, -1], np.int64).reshape(1, 2, 1)
    assert dml.max_unpooling(x, idx, (1, 2, 2), backend=backend).tolist() == [[[0, 0], [0, 10]]]


# --- ROI_POOLING (SPEC 3.8, 7) --------------------------------------------------------------

SCALES = st.sampled_from([1.0, 0.5, 0.25, 2.0, 1 / 3, 1 / 6, 0.1, 0.0625, 1.7, 0.3, 0.75])


@st.composite
def roi_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(FLOATS)))
    N, C = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    H, W = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    x = float_data(draw, dtype, (N, C, H, W))
    R = draw(st.integers(1, 4))
    scale = draw(SCALES)
    # Corners: halves and integers around and beyond the input (in input units / scale), so
    # boxes stick out, are inverted, negative, or land on .5 after scaling.
    coord = st.one_of(st.integers(-4, 10).map(float), st.integers(-8, 20).map(lambda v: v / 2),
                      st.integers(-30, 30).map(lambda v: v / scale))
    rows = []
    for _ in range(R):
        b = draw(st.one_of(st.integers(0, N - 1).map(float),
                           st.floats(-0.99, N - 0.01, allow_nan=False)))
        rows.append([b] + [draw(coord) for _ in range(4)])
    rois = np.array(rows, np.float64).astype(dtype)
    # float16 may round a batch index up to N: keep the case valid (errors are tested apart).
    rois[:, 0] = np.clip(rois[:, 0], dtype.type(-0.5), np.nextafter(dtype.type(N), dtype.type(0)))
    if draw(st.booleans()):
        rois = rois.reshape(1, 1, R, 5)
    pooled = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return x, rois, scale, pooled


@backend_param
@settings(max_examples=60)
@given(case=roi_cases())
def test_roi_pooling_matches_oracle(backend, case):
    x, rois, scale, pooled = case
    want = OF.roi_pooling(x, rois, scale, pooled)
    if np.isnan(x).any():
        event("NaN input")
    got = dml.roi_pooling(x, rois, spatial_scale=scale, pooled_size=pooled, backend=backend)
    assert got.flags.c_contiguous
    assert_bits(got, want)


@settings(max_examples=30)
@given(case=roi_cases())
def test_roi_pooling_desc_matches_oracle(case):
    x, rois, scale, pooled = case
    rois4 = rois.reshape(1, 1, -1, 5)
    want = OF.roi_pooling(x, rois, scale, pooled)
    desc = dml.RoiPoolingDesc(input_tensor=dml.TensorDesc(x.dtype, x.shape),
                              roi_tensor=dml.TensorDesc(x.dtype, rois4.shape),
                              output_tensor=dml.TensorDesc(x.dtype, want.shape),
                              spatial_scale=scale, pooled_size=pooled)
    got = dml.compile_operator(desc).execute(input_tensor=x, roi_tensor=rois4)
    assert_bits(got["output_tensor"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_roi_pooling_rounding_by_hand(backend):
    # A 1 x 1 x 1 x 8 input whose value is its column: a 1 x 1 pooled ROI spanning [x1', x2']
    # returns x2' (clipped), so x2' is visible directly; x1' = 0 throughout.
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)

    def x2(v, scale):
        rois = np.array([[0, 0, 0, v, 0]], np.float32)
        return dml.roi_pooling(x, rois, spatial_scale=scale, pooled_size=(1, 1),
                               backend=backend)[0, 0, 0, 0]
    assert x2(5, 0.5) == 3          # 2.5 -> 3: half away from zero (not to even)
    assert x2(3, 0.5) == 2          # 1.5 -> 2
    # SpatialScale rounds to float32 first: float32(1/6) * 3 = 0.50000001 -> 1 (float64
    # 1/6 would give 0.49999999999999994 -> 0).
    assert x2(3, 1 / 6) == 1
    # The product is in float64: float32(0.1) * 15 = 1.5000000223 -> 2.
    assert x2(15, 0.1) == 2
    # Negative halves round away from zero: x1' = round(-5 * 0.5) = -3, region [-3, 0],
    # RW = 4, two bins: columns [-3, -1) (empty after clipping: 0) and [-1, 1) -> x[0] = 0.
    rois = np.array([[0, -5, 0, 0, 0]], np.float32)
    y = dml.roi_pooling(x + 1, rois, spatial_scale=0.5, pooled_size=(1, 2), backend=backend)
    assert y.tolist() == [[[[0.0, 1.0]]]]
    # x1' = round(-3.5) = -4, x2' = round(0.5) = 1, RW = 6, three bins [-4, -2), [-2, 0),
    # [0, 2) -> 0, 0, max(1, 2). (Half up would give x1' = -3 and a middle bin [-2, 1) -> 1;
    # half to even would give x2' = 0.)
    rois = np.array([[0, -7, 0, 1, 0]], np.float32)
    y = dml.roi_pooling(x + 1, rois, spatial_scale=0.5, pooled_size=(1, 3), backend=backend)
    assert y.tolist() == [[[[0.0, 0.0, 2.0]]]]
    # Inverted box: width and height 1 at (x1', y1'). Batch index truncated toward zero.
    x2d = np.arange(2 * 12, dtype=np.float64).reshape(2, 1, 3, 4)
    rois = np.array([[1.9, 2, 1, 0, 0], [-0.7, 3, 2, 1, 1]], np.float64)
    y = dml.roi_pooling(x2d, rois, spatial_scale=1.0, pooled_size=(2, 1), backend=backend)
    assert y.tolist() == [[[[18.0], [18.0]]], [[[11.0], [11.0]]]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_roi_pooling_nan_and_ties_by_hand(backend):
    # SPEC 3.4 rules in a bin: the lowest-index NaN's bits; ties keep the lowest index's bits.
    nan_a = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    nan_b = np.array([0xFFC00002], np.uint32).view(np.float32)[0]
    x = np.array([[-0.0, 0.0, nan_b, nan_a], [0.0, -0.0, 1.0, nan_a]],
                 np.float32).reshape(1, 1, 2, 4)
    rois = np.array([[0, 0, 0, 3, 1]], np.float32)
    y = dml.roi_pooling(x, rois, spatial_scale=1.0, pooled_size=(1, 2), backend=backend)
    assert O.bits(y).tolist() == [[[[0x80000000, 0xFFC00002]]]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_roi_pooling_errors(backend):
    x = np.zeros((2, 1, 3, 3), np.float32)

    def call(roi, scale=1.0, rois_dtype=np.float32):
        return dml.roi_pooling(x, np.array([roi], rois_dtype), spatial_scale=scale,
                               pooled_size=(1, 1), backend=backend)
    for b in (2.0, -1.0, 2.5, np.nan):       # outside [0, N) after truncation; NaN
        with pytest.raises(dml.InvalidArgumentError):
            call([b, 0, 0, 1, 1])
    for s in (0.0, -1.0, np.nan, np.inf, 1e-50, 1e39):  # the last two round to 0 / inf
        with pytest.raises(dml.InvalidArgumentError):
            call([0, 0, 0, 1, 1], scale=s)
    with pytest.raises(dml.UnsupportedError):                # ROIs of another type
        call([0, 0, 0, 1, 1], rois_dtype=np.float64)
    assert call([1.99, 0, 0, 1, 1]).shape == (1, 1, 1, 1)


# --- PyTorch, where it implements the SPEC's rule exactly ---------------------------------

F = torch.nn.functional
TORCH_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
TORCH_UNPOOL = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}
TORCH_LP = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}


@st.composite
def torch_cases(draw, max_pad=True):
    """Symmetric padding <= window // 2 (PyTorch's limit), sizes PyTorch accepts."""
    k = draw(st.integers(1, 3))
    lim = {1: 9, 2: 6, 3: 4}[k]
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)))
    window, strides, pads = [], [], []
    for _ in range(k):
        W = draw(st.integers(1, 3))
        p = draw(st.integers(0, W // 2)) if max_pad else 0
        S = draw(st.integers(max(1, W - 2 * p, W), max(W, lim)))
        shape += (S,)
        window.append(W)
        strides.append(draw(st.integers(1, 3)))
        pads.append(p)
    return shape, tuple(window), tuple(strides), tuple(pads), draw(st.booleans())


def plane_offsets(shape):
    k = len(shape) - 2
    return (np.arange(shape[0] * shape[1]) * int(np.prod(shape[2:]))).reshape(
        shape[:2] + (1,) * k)


@settings(max_examples=60)
@given(case=torch_cases(), incl=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**32 - 1))
def test_average_pooling_grad_matches_torch(case, incl, dtype, seed):
    # Autograd of avg_pool: each window's gradient / divisor to its real elements.
    # count_include_pad <-> include_padding (positions past P, SPEC's phantom, never count);
    # ceil_mode gives the F + 1 output.
    shape, W, s, p, ceil = case
    tx = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    try:
        ty = TORCH_AVG[len(W)](tx, W, s, p, ceil_mode=ceil, count_include_pad=incl)
    except RuntimeError:        # PyTorch refuses some shapes SPEC 2 allows
        return
    dy = np.random.default_rng(seed).integers(-20, 21, size=tuple(ty.shape)).astype(dtype)
    ty.backward(torch.from_numpy(dy.astype(np.float64)))
    want = tx.grad.numpy()
    for backend in BACKENDS:
        got = dml.average_pooling_grad(dy, W, input_sizes=shape, strides=s, start_padding=p,
                                       end_padding=p, include_padding=incl, backend=backend)
        assert got.dtype == dtype
        # Precision is the oracle tests' business (SPEC 5's bound); here the divisors and
        # the windows: a wrong divisor is off by >= 20/6, far above float32 rounding.
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=1e-3 if dtype == np.float32 else 1e-11)


@settings(max_examples=50)
@given(case=torch_cases(max_pad=False), idt=st.sampled_from([np.int64, np.uint32]),
       seed=st.integers(0, 2**32 - 1))
def test_max_unpooling_matches_torch(case, idt, seed):
    # Indices from max_pooling with non-overlapping windows (stride = window, no duplicates);
    # PyTorch's indices are per (n, c) plane: SPEC 2's flat index minus the plane offset.
    shape, W, _, _, _ = case
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    v, i = dml.max_pooling(x, W, strides=W, output_indices=True, indices_dtype=idt)
    ti = i.astype(np.int64) - plane_offsets(shape)
    want = TORCH_UNPOOL[len(W)](torch.from_numpy(v), torch.from_numpy(ti), W, W,
                                output_size=shape[2:]).numpy()
    for backend in BACKENDS:
        assert_bits(dml.max_unpooling(v, i, shape, backend=backend), want)


@settings(max_examples=50)
@given(case=torch_cases(max_pad=False), p=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_lp_pooling_matches_torch(case, p, seed):
    # lp_pool: (sum x^p)^(1/p), no padding; non-negative float64 inputs (PyTorch computes
    # through avg_pool and pow, exact enough in float64). Floor outputs only: PyTorch's
    # ceil-mode lp_pool rescales partial windows by the full window size.
    shape, W, s, _, _ = case
    x = np.random.default_rng(seed).uniform(0, 4, size=shape)
    tw, ts = (W[0], s[0]) if len(W) == 1 else (W, s)     # lp_pool1d wants ints
    want = TORCH_LP[len(W)](torch.from_numpy(x), float(p), tw, ts).numpy()
    for backend in BACKENDS:
        got = dml.lp_pooling(x, W, p=p, strides=s, backend=backend)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


# --- thread count (SPEC 5: "Results do not depend on the number of threads") -------------

THREAD_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
import dmlops as dml
rng = np.random.default_rng(7)
res = {}
dy = (rng.standard_normal((2, 8, 24, 21)) * 1e3).astype(np.float32)
res["avg_grad"] = dml.average_pooling_grad(
    dy, (3, 4), input_sizes=(2, 8, 70, 63), strides=(3, 3), start_padding=(2, 1),
    end_padding=(1, 3), dilations=(1, 2), include_padding=True, backend="cpu")
x = (rng.standard_normal((2, 8, 40, 37)) * 10).astype(np.float32)
res["lp"] = dml.lp_pooling(x, (3, 3), p=3, strides=(2, 1), start_padding=1, end_padding=1,
                           backend="cpu")
v = rng.standard_normal((2, 8, 30, 30)).astype(np.float32)
idx = rng.integers(0, 2 * 8 * 40 * 40 // 3, size=v.shape).astype(np.uint32)
res["unpool"] = dml.max_unpooling(v, idx, (2, 8, 40, 40), backend="cpu")
rois = np.concatenate([rng.integers(0, 2, (64, 1)), rng.integers(-5, 45, (64, 4))],
                      axis=1).astype(np.float32)
res["roi"] = dml.roi_pooling(x, rois, spatial_scale=0.75, pooled_size=(5, 4), backend="cpu")
hashes = {k: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
          for k, a in res.items()}
"""


PRINT = "json.dump(hashes, sys.stdout)\n"


def test_results_do_not_depend_on_thread_count():
    procs = []
    for n in (1, 2):
        env = dict(os.environ, DMLOPS_NUM_THREADS=str(n))
        env.pop("DMLOPS_BACKEND", None)
        procs.append(subprocess.Popen([sys.executable, "-c", THREAD_SCRIPT + PRINT], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = []
    for pr in procs:
        out, err = pr.communicate(timeout=600)
        assert pr.returncode == 0, err
        outs.append(json.loads(out))
    assert outs[0] == outs[1]
    # And the same bits in this process (default thread count).
    ns = {}
    exec(compile(THREAD_SCRIPT, "<threads>", "exec"), ns)
    assert ns["hashes"] == outs[0]


# --- memory layouts, out=, caller's arrays untouched (SPEC 4.1, 7) -----------------------

def layouts(a, rng):
    """The same logical array in other memory layouts: channels-last, negative strides,
    a strided view of a larger buffer, read-only, big-endian."""
    out = {}
    out["channels_last"] = np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)
    flip = tuple(slice(None, None, -1) for _ in range(a.ndim))
    out["negative"] = np.ascontiguousarray(a[flip])[flip]
    big = np.zeros(tuple(2 * s for s in a.shape), a.dtype)
    big[tuple(slice(None, None, 2) for _ in range(a.ndim))] = a
    out["strided"] = big[tuple(slice(None, None, 2) for _ in range(a.ndim))]
    ro = a.copy()
    ro.setflags(write=False)
    out["readonly"] = ro
    if a.dtype.itemsize > 1:
        out["bigendian"] = a.astype(a.dtype.newbyteorder(">"))
    return out


def strided_out(shape, dtype):
    """A non-contiguous, dirty output array of the given shape (every other element of a
    buffer, filled with 99)."""
    buf = np.full(shape[:-1] + (2 * shape[-1],), 99, dtype)
    return buf[..., ::2]


def layout_cases(rng):
    """(name, function of the inputs, inputs) per operator, mid-size and irregular."""
    dy = (rng.standard_normal((2, 3, 5, 7)) * 100).astype(np.float32)
    x = (rng.standard_normal((2, 3, 9, 8)) * 100).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    v = rng.standard_normal((2, 3, 4, 5)).astype(np.float16)
    idx = rng.integers(0, 2 * 3 * 7 * 6 // 4, size=v.shape).astype(np.uint64)
    idx[0, 0, 0, :2] = 2**64 - 1
    rois = np.array([[0, -2, 1, 7, 9], [1.5, 3, 3, 2, 1], [1, 0, 0, 12, 5]], np.float32)
    return [
        ("avg_grad", lambda dy, **k: dml.average_pooling_grad(
            dy, (3, 2), input_sizes=(2, 3, 9, 8), strides=(2, 1), start_padding=(1, 0),
            end_padding=(1, 1), dilations=(1, 2), include_padding=False, **k), (dy,)),
        ("lp", lambda x, **k: dml.lp_pooling(x, (2, 3), p=3, strides=(2, 2), start_padding=1,
                                             output_sizes=(5, 4), **k), (x,)),
        ("unpool", lambda v, i, **k: dml.max_unpooling(v, i, (2, 3, 7, 6), **k), (v, idx)),
        ("roi", lambda x, r, **k: dml.roi_pooling(x, r, spatial_scale=0.5, pooled_size=(3, 2),
                                                  **k), (x, rois)),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["avg_grad", "lp", "unpool", "roi"])
def test_layouts_and_out_read_in_place(backend, op):
    rng = np.random.default_rng(3)
    name, fn, args = next(c for c in layout_cases(rng) if c[0] == op)
    want = fn(*args, backend=backend)
    assert want.flags.c_contiguous
    snapshots = [O.bits(a).copy() for a in args]
    for pos in range(len(args)):
        for lname, alt in layouts(args[pos], rng).items():
            alt_args = list(args)
            alt_args[pos] = alt
            before = O.bits(alt).copy()
            got = fn(*alt_args, backend=backend)
            assert np.array_equal(O.bits(got), O.bits(want)), (lname, pos)
            assert np.array_equal(O.bits(alt), before), (lname, pos)
    out = strided_out(want.shape, want.dtype)
    assert fn(*args, backend=backend, out=out) is out
    assert_bits(out, want)
    out = np.full(want.shape, 99, want.dtype, order="F")
    fn(*args, backend=backend, out=out)
    assert_bits(out, want)
    for a, s in zip(args, snapshots):
        assert np.array_equal(O.bits(a), s)         # the library never changes the inputs


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_batch(backend):
    # SPEC 7: "the functional API returns an empty result when N or C is 0".
    dy = np.zeros((0, 2, 2), np.float32)
    assert dml.average_pooling_grad(dy, 2, input_sizes=(0, 2, 3),
                                    backend=backend).shape == (0, 2, 3)
    assert dml.lp_pooling(np.zeros((2, 0, 3), np.float32), 2,
                          backend=backend).shape == (2, 0, 2)
    x = np.zeros((2, 0, 3, 3), np.float32)
    assert dml.roi_pooling(x, np.zeros((3, 5), np.float32), spatial_scale=1.0,
                           pooled_size=(2, 2), backend=backend).shape == (3, 0, 2, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_batch_max_unpooling(backend):
    assert dml.max_unpooling(np.zeros((0, 1, 2), np.float32), np.zeros((0, 1, 2), np.uint32),
                             (0, 1, 4), backend=backend).shape == (0, 1, 4)
