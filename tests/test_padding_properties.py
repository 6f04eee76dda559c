"""PADDING / PADDING1 and the functional ``padding`` (SPEC 3.9, 4.1, 7).

Property tests over ranks 1..5, pads several periods wider than the input, all 11 data types,
against the closed-form oracle (tests/oracles.py) and NumPy's ``np.pad``, which agrees with
SPEC 3.9's index maps for these modes, wide pads included; then the padding value's conversion
rules, literally.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dmlops as dml
import oracles as O

BACKENDS = tuple(dml.backends())
DTYPES = O.ALL_DTYPES
MODES = ("constant", "edge", "reflection", "symmetric", "wrap")
NP_MODE = {"constant": "constant", "edge": "edge", "reflection": "reflect",
           "symmetric": "symmetric", "wrap": "wrap"}
BUDGET = 3000           # output elements per example (the oracle loops in Python)


@st.composite
def pad_cases(draw, modes=MODES):
    mode = draw(st.sampled_from(modes))
    rank = draw(st.integers(1, 5))
    shape = [draw(st.integers(1, 4 if rank <= 3 else 3)) for _ in range(rank)]
    start, end = [], []
    for d, n in enumerate(shape):
        rest = int(np.prod(shape[d + 1:]))
        done = int(np.prod([s + a + b for s, a, b in zip(shape, start, end)]))
        cap = max(0, BUDGET // (done * rest) - n)
        if mode == "reflection" and n == 1:
            cap = 0         # SPEC 3.9: n = 1 with a non-zero pad is an error (tested below)
        # none, within the dimension, or several periods wide
        pad = st.one_of(st.just(0), st.integers(0, min(cap, n)),
                        st.integers(0, min(cap, 3 * n + 3)))
        a = draw(pad)
        b = draw(st.integers(0, min(cap - a, 3 * n + 3))) if draw(st.booleans()) else \
            draw(st.integers(0, max(0, min(cap - a, n))))
        start.append(a)
        end.append(b)
    return mode, tuple(shape), tuple(start), tuple(end)


def array_of(draw, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        el = st.one_of(st.integers(-5, 5).map(float),
                       st.sampled_from([math.nan, -0.0, math.inf, -math.inf]),
                       st.floats(-6e4, 6e4, width=32))
        a = draw(hnp.arrays(np.float64, shape, elements=el)).astype(dtype)
        if a.size and draw(st.booleans()):   # a NaN with unusual bits must be copied as is
            ub = a.view(f"u{a.itemsize}").reshape(-1)
            ub[draw(st.integers(0, a.size - 1))] = (1 << (8 * a.itemsize)) - 1
        return a
    info = np.iinfo(dtype)
    return draw(hnp.arrays(dtype, shape, elements=st.one_of(
        st.integers(max(info.min, -5), 5), st.sampled_from([info.min, info.max]),
        st.integers(info.min, info.max))))


def assert_bits(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    ok = O.bits(got) == O.bits(want)
    assert ok.all(), (np.argwhere(~ok)[:5], got[~ok][:5], want[~ok][:5])


def representable_value(draw, dtype):
    """A Python number that converts to ``dtype`` exactly (so np.pad, which casts, agrees)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return float(draw(st.sampled_from([0.0, -0.0, 9.0, -2.5, math.inf, 0.5])))
    info = np.iinfo(dtype)
    return int(draw(st.sampled_from([0, 9, info.min, info.max])))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=150)
@given(case=pad_cases(), dtype=st.sampled_from(DTYPES), data=st.data())
def test_padding_matches_oracle_and_np_pad(backend, case, dtype, data):
    mode, shape, start, end = case
    event(f"rank={len(shape)}")
    if any(max(a, b) > n for a, b, n in zip(start, end, shape)):
        event("pad wider than the dimension")
    if any(max(a, b) > 2 * n for a, b, n in zip(start, end, shape)):
        event("pad wider than a period")
    x = array_of(data.draw, dtype, shape)
    value = representable_value(data.draw, dtype)
    conv = np.asarray(value).astype(dtype)
    y = dml.padding(x, start, end, mode=mode, value=value, backend=backend)
    # SPEC 3.9: Out[i] = In[i] + StartPadding[i] + EndPadding[i]; closed-form index maps.
    assert_bits(y, O.padding(x, start, end, mode, conv))
    pads = list(zip(start, end))
    if mode == "constant":
        want = np.pad(x, pads, mode="constant", constant_values=conv)
    else:
        want = np.pad(x, pads, mode=NP_MODE[mode])
    assert_bits(y, want)
    assert y.flags.c_contiguous


@settings(max_examples=80)
@given(case=pad_cases(), dtype=st.sampled_from(DTYPES), v1=st.booleans(), data=st.data())
def test_padding_desc_matches_oracle(case, dtype, v1, data):
    # PADDING and PADDING1 in extended mode; DimensionCount = rank (SPEC 3.9).
    mode, shape, start, end = case
    x = array_of(data.draw, dtype, shape)
    value = representable_value(data.draw, dtype)
    name = np.dtype(dtype).name.upper()
    out_shape = tuple(n + a + b for n, a, b in zip(shape, start, end))
    kw = dict(input_tensor=dml.TensorDesc(name, shape), output_tensor=dml.TensorDesc(name,
                                                                                     out_shape),
              padding_mode=mode, padding_value=value, start_padding=start, end_padding=end)
    if v1:
        desc = dml.Padding1Desc(padding_value_data_type=name, dimension_count=len(shape), **kw)
    else:
        if np.dtype(dtype).kind in "iu" and abs(value) > 2**24:
            value = 0                       # keep the FLOAT field's value exact here
            kw["padding_value"] = value
        desc = dml.PaddingDesc(**kw)
    y = dml.compile_operator(desc).execute(input_tensor=x)["output_tensor"]
    assert_bits(y, O.padding(x, start, end, mode, np.asarray(value).astype(dtype)))


@pytest.mark.parametrize("pad", [3, (0, 3, 1)])
def test_padding_int_argument_means_every_dimension(pad):
    # SPEC 7: "a padding argument of padding is an int (every dimension) or a sequence over all
    # dimensions".
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    y = dml.padding(x, pad, pad, mode="wrap")
    p = (pad,) * 3 if isinstance(pad, int) else pad
    assert_bits(y, np.pad(x, list(zip(p, p)), mode="wrap"))


@pytest.mark.parametrize("mode", ["reflection", "REFLECT", 2])
def test_reflection_on_size_one_dimension(mode):
    # SPEC 3.9: "n = 1 with a non-zero pad in that dimension is an error"; a zero pad there is
    # fine (the other dimensions may be padded).
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    before = x.copy()
    for start, end in (((1, 0), (0, 0)), ((0, 0), (1, 0)), ((1, 1), (1, 1))):
        with pytest.raises(dml.InvalidArgumentError):
            dml.padding(x, start, end, mode=mode)
    assert_bits(x, before)
    y = dml.padding(x, (0, 5), (0, 6), mode=mode)
    assert_bits(y, np.pad(x, [(0, 0), (5, 6)], mode="reflect"))
    # The description layer shares the rule.
    desc = dml.PaddingDesc(input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 1, 4)),
                           output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 4)),
                           padding_mode="REFLECTION", padding_value=0.0,
                           start_padding=(0, 0, 1, 0), end_padding=(0, 0, 0, 0))
    with pytest.raises(dml.InvalidArgumentError):
        dml.compile_operator(desc)


# --- the padding value (SPEC 3.9, 7) ------------------------------------------------------

def pad_value(dtype, value, **kw):
    """The constant that ``padding`` writes for ``value`` into a ``dtype`` array."""
    x = np.zeros((1, 1), dtype)
    y = dml.padding(x, (0, 0), (0, 1), mode="constant", value=value, **kw)
    assert y.dtype == np.dtype(dtype) and y.shape == (1, 2)
    return y[0, 1]


@pytest.mark.parametrize("dtype,value,want", [
    # "truncated toward zero and saturated to the type's range (10.6 -> 10, -10.6 -> -10,
    # 1e9 -> 127 for INT8, NaN -> 0)"; "A value of +-inf for an integer type saturates".
    (np.int8, 10.6, 10), (np.int8, -10.6, -10), (np.int8, 1e9, 127), (np.int8, -1e9, -128),
    (np.int8, math.nan, 0), (np.int8, math.inf, 127), (np.int8, -math.inf, -128),
    (np.uint8, -5, 0), (np.uint8, -0.9, 0), (np.uint8, 255.9, 255), (np.uint8, 300, 255),
    (np.int16, 40000, 32767), (np.uint16, -math.inf, 0), (np.int32, 2**40, 2**31 - 1),
    (np.uint32, -1, 0), (np.uint32, 4294967295.5, 2**32 - 1), (np.int64, 1e30, 2**63 - 1),
    (np.int64, -1e30, -2**63), (np.uint64, 1e30, 2**64 - 1), (np.uint64, math.nan, 0),
    # converted "directly from the given Python number": large ints stay exact.
    (np.int64, 2**62 + 1, 2**62 + 1), (np.uint64, 2**64 - 1, 2**64 - 1),
    (np.int64, 2**63, 2**63 - 1), (np.int64, -2**70, -2**63), (np.int32, -0.0, 0),
])
def test_functional_value_to_integer_types(dtype, value, want):
    assert int(pad_value(dtype, value)) == want


@pytest.mark.parametrize("dtype,value,want_bits", [
    # "for float types rounded to nearest"; "a Python int beyond 2^53 for a float type is
    # rounded to nearest" - directly, not through float64: 2^60 + 2^36 + 1 is just above the
    # midpoint between two float32 neighbours (2^60 + 2^37 is the nearest), while rounding to
    # float64 first would lose the +1 and tie to even (2^60).
    (np.float32, 2**60 + 2**36 + 1, np.float32(2**60 + 2**37).view(np.uint32)),
    (np.float64, 2**53 + 1, np.float64(2**53).view(np.uint64)),
    (np.float64, 2**53 + 3, np.float64(2**53 + 4).view(np.uint64)),
    (np.float16, 1 / 3, np.float16(1 / 3).view(np.uint16)),
    (np.float16, 65519, np.float16(65504).view(np.uint16)),
    (np.float16, 1e6, np.float16(np.inf).view(np.uint16)),   # round to nearest overflows
    (np.float32, 0.1, np.float32(0.1).view(np.uint32)),
    (np.float32, -0.0, np.uint32(0x80000000)),
    (np.float64, -math.inf, np.float64(-np.inf).view(np.uint64)),
    # Directly from the Python float: 1 + 2^-11 + 2^-30 lies above the float16 midpoint, so it
    # rounds up (through float32 it would tie to 1.0; see the PADDING desc test below).
    (np.float16, 1 + 2**-11 + 2**-30, np.uint16(0x3C01)),
])
def test_functional_value_to_float_types(dtype, value, want_bits):
    got = pad_value(dtype, value)
    assert int(np.asarray(got).view(f"u{np.dtype(dtype).itemsize}")) == int(want_bits)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_integer_values_round_once_around_every_shortcut(dtype):
    # Integers up to 2^53 take a shortcut (NumPy's conversion, through an exact float64);
    # beyond, the exact rounding. Either way: round to nearest, ties to even (float16: 2049
    # -> 2048, 2051 -> 2052; float32: 2^24 + 1 -> 2^24, 2^24 + 3 -> 2^24 + 4).
    from dmlops.padding import _round_int_to_float
    # 2^54 + 2^30 + 1: through float64 it would lose the +1 and tie (float32: to 2^54)
    ties = [2**24 + 1, 2**24 + 3, 2**53 - 1, 2**53, 2**53 + 1, 2**53 + 3, 2**54 + 2**30 + 1]
    values = list(range(-5000, 5001)) + ties + [-t for t in ties]
    for v in (v for v in values if abs(v) < float(np.finfo(dtype).max)):
        got = _round_int_to_float(v, np.dtype(dtype))
        f = Fraction(v)
        below, above = (np.nextafter(got, dtype(-np.inf)), np.nextafter(got, dtype(np.inf)))
        d = abs(Fraction(float(got)) - f)
        assert got.dtype == np.dtype(dtype) and np.isfinite(got), v
        for n in (n for n in (below, above) if np.isfinite(n)):
            dn = abs(Fraction(float(n)) - f)
            assert d < dn or (d == dn and int(got.view(f"u{got.itemsize}")) % 2 == 0), v


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_functional_nan_value_for_float_types(dtype):
    assert np.isnan(pad_value(dtype, math.nan))


def test_value_ignored_unless_constant():
    # SPEC 7: "value is ignored by modes other than constant" - even one that would not
    # convert cleanly.
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    for mode in ("edge", "reflection", "symmetric", "wrap"):
        assert_bits(dml.padding(x, 1, 2, mode=mode, value=-1e30),
                    np.pad(x, [(1, 2), (1, 2)], mode=NP_MODE[mode]))


def desc_value(op, data_type, value, dtype_field=None, level=None):
    """The constant written by PADDING (op='PADDING') or PADDING1 for ``value``."""
    tdesc = dml.TensorDesc(data_type, (1, 1, 1, 1))
    kw = dict(input_tensor=tdesc, output_tensor=dml.TensorDesc(data_type, (1, 1, 1, 2)),
              padding_mode="CONSTANT", padding_value=value, start_padding=(0, 0, 0, 0),
              end_padding=(0, 0, 0, 1))
    if op == "PADDING":
        desc = dml.PaddingDesc(**kw)
    else:
        desc = dml.Padding1Desc(padding_value_data_type=dtype_field or data_type, **kw)
    x = np.zeros((1, 1, 1, 1), np.dtype(data_type.lower()))
    out = dml.compile_operator(desc, feature_level=level).execute(input_tensor=x)
    return out["output_tensor"][0, 0, 0, 1]


@pytest.mark.parametrize("data_type,value,want", [
    # SPEC 3.9: PADDING's value is a 32-bit FLOAT field: first rounded to float32, then
    # converted like the functional value.
    ("INT32", 16777217, 16777216),          # float32(16777217) = 16777216
    ("INT64", 2**62 + 1, 2**62),
    ("INT8", 10.6, 10), ("INT8", -10.6, -10), ("INT8", 1e9, 127), ("INT8", math.nan, 0),
    ("UINT8", -5, 0), ("INT16", 1e39, 32767),   # float32(1e39) = inf, which saturates
    ("UINT32", -math.inf, 0),
])
def test_padding_desc_value_rounds_to_float32_first_int(data_type, value, want):
    assert int(desc_value("PADDING", data_type, value)) == want


@pytest.mark.parametrize("data_type,value,want", [
    ("FLOAT64", 0.1, float(np.float32(0.1))),
    ("FLOAT16", 1 + 2**-11 + 2**-30, 1.0),  # float32 drops 2^-30; the tie goes to even
    ("FLOAT32", 2**60 + 2**36 + 1, float(np.float32(2**60 + 2**37))),
])
def test_padding_desc_value_rounds_to_float32_first_float(data_type, value, want):
    assert float(desc_value("PADDING", data_type, value)) == want


def test_padding_desc_value_at_feature_levels():
    # PADDING INT8 exists from FL 2.1 (SPEC 3.9); the conversion is the same there.
    assert int(desc_value("PADDING", "INT8", 10.6, level="2.1")) == 10


@pytest.mark.parametrize("data_type,value,want", [
    ("INT8", 10, 10), ("INT8", 10.0, 10), ("INT8", -128, -128), ("UINT8", 255, 255),
    ("INT64", 2**62 + 1, 2**62 + 1), ("UINT64", 2**64 - 1, 2**64 - 1),
    ("FLOAT16", 0.5, 0.5), ("FLOAT64", 0.1, 0.1),
])
def test_padding1_value_exact_in_output_type(data_type, value, want):
    # SPEC 3.9: PADDING1's value "is given in the output type" (no float32 detour).
    assert desc_value("PADDING1", data_type, value) == want


@pytest.mark.parametrize("data_type,value", [
    ("INT8", 10.6), ("INT8", 128), ("INT8", -129), ("UINT8", -1), ("UINT8", 256),
    ("INT8", math.nan), ("INT32", math.inf), ("UINT64", 2**64), ("INT16", 0.5),
])
def test_padding1_value_not_representable(data_type, value):
    # SPEC 7: "PADDING1's value must be exactly representable in the output type (10.6 for
    # INT8 is an InvalidArgumentError)".
    with pytest.raises(dml.InvalidArgumentError) as e:
        desc_value("PADDING1", data_type, value)
    assert "padding_value" in str(e.value)


@pytest.mark.parametrize("field", ["INT16", "FLOAT32", "UINT8"])
def test_padding1_value_type_must_equal_output_type(field):
    # SPEC 3.9: "PaddingValueDataType != output type is an InvalidArgumentError".
    with pytest.raises(dml.InvalidArgumentError) as e:
        desc_value("PADDING1", "INT8", 1, dtype_field=field)
    assert "padding_value_data_type" in str(e.value)
