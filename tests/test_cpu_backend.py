"""The compiled cpu backend against the reference backend (SPEC 5): bitwise for max pooling,
indices, quantized pooling and the max-pooling gradient, and here bitwise for averages too
(both sum in the same fixed order); the same bits with 1 and 2 threads; float16 conversions
on every one of the 65,536 patterns; the on-disk cache in the user cache directory."""

import importlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

numba = pytest.importorskip("numba")
import dmlops as dml  # noqa: E402

if "cpu" not in dml.backends():
    pytest.skip("the cpu backend is not available", allow_module_level=True)

from dmlops.backends.cpu import _half, _nrt  # noqa: E402

ALL = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
       np.uint32, np.int64, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]


@numba.njit
def _h2f(a):
    out = np.empty(a.shape[0], np.float32)
    for i in range(a.shape[0]):
        out[i] = _half.half_to_float(a[i])
    return out


@numba.njit
def _f2h(a):
    out = np.empty(a.shape[0], np.uint16)
    for i in range(a.shape[0]):
        out[i] = _half.float_to_half(a[i])
    return out


@numba.njit(inline="always")
def _row_max(a, b, c, i, n):
    for o in range(i * n, (i + 1) * n):
        c[o] = max(a[o], b[o])


@numba.njit
def _rows_max(a, b, c, n):
    # the kernels' pattern: a task's function, its helpers inlined per row
    for i in range(c.shape[0] // n):
        _row_max(a, b, c, i, n)
        _row_max(b, a, c, i, n)
        _row_max(c, b, c, i, n)


@numba.njit
def _lend(a, b, c, n):
    _rows_max(_nrt.borrowed(a), _nrt.borrowed(b), _nrt.borrowed(c), n)


def test_borrowed_arrays_count_no_references():
    """A function handed ``borrowed`` arrays makes no reference-count calls (those left in
    its row loop clobbered registers: int8 pooling ran 1.4x slower with them)."""
    a, b = np.arange(12.0), np.full(12, 5.0)
    for run in (_rows_max, _lend):
        c = np.zeros(12)
        run(a, b, c, 4)
        assert np.array_equal(c, np.maximum(a, b))
    counts = {}
    for sig in _rows_max.signatures:
        calls = re.findall(r"call void @NRT_(?:incref|decref)", _rows_max.inspect_llvm(sig))
        counts[isinstance(sig[0], _nrt.Borrowed)] = len(calls)
    assert counts[False] > 0 and counts[True] == 0


def test_half_to_float_is_exact_on_all_patterns():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    want = bits.view(np.float16).astype(np.float32)
    assert np.array_equal(_h2f(bits).view(np.uint32), want.view(np.uint32))


def test_float_to_half_round_trips_all_patterns():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    assert np.array_equal(_f2h(bits.view(np.float16).astype(np.float32)), bits)


def test_float_to_half_rounds_like_numpy():
    # every float32 halfway between two float16 values, its neighbours, and random bits
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    h = h[np.isfinite(h)].astype(np.float64)
    h.sort()
    mids = ((h[:-1] + h[1:]) / 2).astype(np.float32)
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    vals = np.concatenate([mids, np.nextafter(mids, np.float32(np.inf)),
                           np.nextafter(mids, np.float32(-np.inf)), noise,
                           np.array([65504, 65519.99, 65520, 1e9, -1e9, 6e-8, 2.9e-8, 3e-8],
                                    np.float32)])
    with np.errstate(all="ignore"):
        want = vals.astype(np.float16).view(np.uint16)
    assert np.array_equal(_f2h(vals), want)


@numba.njit
def _widen_all(a, tag):
    out = np.empty(a.shape[0], np.float32)
    for i in range(a.shape[0]):
        out[i] = _half.widen(a[i], tag)
    return out


@numba.njit
def _narrow_all(a, tag):
    out = np.empty(a.shape[0], np.uint16)
    for i in range(a.shape[0]):
        out[i] = _half.narrow(a[i], tag, np.uint16)
    return out


def _quiet(bits32):
    """float32 bits with a NaN's quiet bit set, as a CPU's conversion leaves a signalling
    NaN (the one way ``widen``/``narrow`` may differ from NumPy's bit moves)."""
    nan = (bits32 & 0x7F800000) == 0x7F800000
    nan &= (bits32 & 0x7FFFFF) != 0
    return np.where(nan, bits32 | np.uint32(0x400000), bits32)


def test_widen_is_exact_on_all_patterns():
    """The conversion the sums use (the CPU's where it has one): every pattern as NumPy
    converts it, a signalling NaN at most made quiet."""
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    want = bits.view(np.float16).astype(np.float32).view(np.uint32)
    got = _widen_all(bits, _half.HALF).view(np.uint32)
    assert np.array_equal(_quiet(got), _quiet(want))
    finite = np.isfinite(bits.view(np.float16))
    assert np.array_equal(got[finite], want[finite])


def test_narrow_rounds_like_numpy():
    """The sums' float32 -> float16 store: every float16 value, every halfway point and its
    neighbours, overflow, subnormals and random bits, as NumPy rounds them (to nearest
    even); quiet NaNs keep their top payload bits."""
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    exact = _quiet(h.astype(np.float32).view(np.uint32)).view(np.float32)
    h = h[np.isfinite(h)].astype(np.float64)
    h.sort()
    mids = ((h[:-1] + h[1:]) / 2).astype(np.float32)
    rng = np.random.default_rng(9)
    noise = rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    vals = np.concatenate([exact, mids, np.nextafter(mids, np.float32(np.inf)),
                           np.nextafter(mids, np.float32(-np.inf)),
                           _quiet(noise).view(np.float32),
                           np.array([65504, 65519.99, 65520, 1e9, -1e9, 6e-8, 2.9e-8, 3e-8,
                                     1e-45, -1e-45], np.float32)])
    with np.errstate(all="ignore"):
        want = vals.astype(np.float16).view(np.uint16)
    assert np.array_equal(_narrow_all(vals, _half.HALF), want)


def test_half_averages_without_the_cpus_conversions(tmp_path):
    """Where the CPU has no float16 conversions (here: F16C switched off for Numba), the
    sums convert in software, with the same results."""
    import llvmlite.binding as ll
    features = numba.config.CPU_FEATURES or ll.get_host_cpu_features().flatten()
    if "+f16c" not in features.split(","):
        pytest.skip("this CPU converts float16 in software already (the other tests ran it)")
    code = """if True:
        import numpy as np, dmlops as dml
        from dmlops.backends.cpu import _half
        assert not _half.HARDWARE_HALF
        rng = np.random.default_rng(3)
        x = (rng.standard_normal((2, 3, 19, 23)) * 1000).astype(np.float16)
        x.flat[::7] = -0.0
        x.flat[5] = np.inf
        for xx in (x, np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):
            for incl in (False, True):
                kw = dict(strides=2, start_padding=1, end_padding=(0, 1),
                          include_padding=incl)
                a = dml.average_pooling(xx, 3, backend="cpu", **kw)
                b = dml.average_pooling(xx, 3, backend="reference", **kw)
                assert np.array_equal(a.view(np.uint16), b.view(np.uint16))
        print("ok")
    """
    env = dict(os.environ, DMLOPS_CACHE_DIR=str(tmp_path),
               NUMBA_CPU_FEATURES=features.replace("+f16c", "-f16c"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


@numba.njit
def _d2h(a):
    out = np.empty(a.shape[0], np.uint16)
    for i in range(a.shape[0]):
        out[i] = _half.double_to_half(a[i])
    return out


def test_double_to_half_rounds_once_like_numpy():
    # float16 midpoints and their float64 neighbours: rounding through float32 first would
    # turn a value one float64 ulp above a midpoint into the midpoint, then round it to even
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    h = h[np.isfinite(h)].astype(np.float64)
    h.sort()
    mids = (h[:-1] + h[1:]) / 2
    rng = np.random.default_rng(8)
    noise = rng.integers(0, 2**64, 1_000_000, dtype=np.uint64).view(np.float64)
    noise = noise[np.isfinite(noise)]
    vals = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                           noise, np.array([65504, 65520, 1e300, -1e300, 1e-300, np.inf,
                                            -np.inf, 0.0, -0.0, 2.0**-25, 2.0**-25 * 1.0000001])])
    with np.errstate(all="ignore"):
        want = vals.astype(np.float16).view(np.uint16)
    assert np.array_equal(_d2h(vals), want)


def _layout(draw, shape, dtype, data):
    """x with a random memory layout: transposed, reversed or strided views."""
    kind = draw(st.sampled_from(["c", "transposed", "reversed", "stepped"]))
    if kind == "transposed":                         # channels-last memory
        base = np.ascontiguousarray(np.moveaxis(data, 1, -1))
        return np.moveaxis(base, -1, 1)
    if kind == "reversed":
        return np.ascontiguousarray(data[..., ::-1])[..., ::-1]
    if kind == "stepped":
        big = np.repeat(data, 2, axis=-1)
        return big[..., ::2]
    return data


def _geometry(draw, most_size=7, most_window=3, most_stride=3):
    """A shape and a window geometry: ``shape, window, dil, strides, start, end, sizes``."""
    k = draw(st.integers(1, 3))
    spatial = draw(st.lists(st.integers(1, most_size), min_size=k, max_size=k))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(spatial)
    window = tuple(draw(st.integers(1, most_window)) for _ in range(k))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(k))
    strides = tuple(draw(st.integers(1, most_stride)) for _ in range(k))
    start = tuple(draw(st.integers(0, 3)) for _ in range(k))
    end = [draw(st.integers(0, 3)) for _ in range(k)]
    for i in range(k):      # the effective window must fit the padded input
        need = (window[i] - 1) * dil[i] + 1 - (spatial[i] + start[i] + end[i])
        end[i] += max(0, need)
    sizes = dml.pooling_output_sizes(shape, window, strides=strides, start_padding=start,
                                     end_padding=end, dilations=dil)
    return shape, window, dil, strides, start, end, sizes


@st.composite
def cases(draw, dtypes):
    shape, window, dil, strides, start, end, sizes = _geometry(draw)
    k = len(window)
    extra = tuple(draw(st.integers(0, 1)) for _ in range(k))
    out = tuple(s + e for s, e in zip(sizes[2:], extra))
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        data = rng.integers(-4, 4, shape).astype(dtype)        # ties on purpose
        if draw(st.booleans()):
            flat = data.reshape(-1)
            flat[rng.integers(0, flat.size, 2)] = [np.nan, -np.inf]
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x = _layout(draw, shape, dtype, data)
    kw = dict(strides=strides, start_padding=start, end_padding=tuple(end), dilations=dil)
    return x, window, kw, out, rng


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def _max_as_reference(x, window, indices, **kw):
    """The cpu backend's max pooling of ``x`` has the reference's bits (and indices)."""
    got = dml.max_pooling(x, window, backend="cpu", output_indices=indices, **kw)
    want = dml.max_pooling(x, window, backend="reference", output_indices=indices, **kw)
    if indices:
        assert _same(got[0], want[0]) and np.array_equal(got[1], want[1])
    else:
        assert _same(got, want)


# One test per data type: each compiles two kernels (most of a cold CI run), and separate
# tests let parallel workers (pytest-xdist) share them out.
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@settings(max_examples=12)
@given(data=st.data(), idt=st.sampled_from([np.uint32, np.uint64, np.int64]))
def test_max_pooling_bitwise(dtype, data, idt):
    x, window, kw, out, _ = data.draw(cases([dtype]))
    got = dml.max_pooling(x, window, output_sizes=out, output_indices=True, indices_dtype=idt,
                          backend="cpu", **kw)
    want = dml.max_pooling(x, window, output_sizes=out, output_indices=True,
                           indices_dtype=idt, backend="reference", **kw)
    assert _same(got[0], want[0]) and _same(got[1], want[1])
    assert _same(dml.max_pooling(x, window, output_sizes=out, backend="cpu", **kw), want[0])


@settings(max_examples=100)
@given(c=cases(FLOATS), incl=st.booleans())
def test_average_pooling_matches(c, incl):
    x, window, kw, out, _ = c
    got = dml.average_pooling(x, window, output_sizes=out, include_padding=incl,
                              backend="cpu", **kw)
    want = dml.average_pooling(x, window, output_sizes=out, include_padding=incl,
                               backend="reference", **kw)
    assert _same(got, want)


@st.composite
def sum_cases(draw):
    """Average pooling on floats whose sums round differently in every other order: terms
    of widely different magnitudes (small integers, as ``cases`` draws, sum exactly in any
    order), sometimes -0.0 in half the places, the common windows (up to 3, steps 1 and 2)
    over rows long enough to have edges and an interior, in any layout."""
    k = draw(st.integers(1, 3))
    spatial = tuple(draw(st.integers(1, 12)) for _ in range(k))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + spatial
    window = tuple(draw(st.integers(1, 3)) for _ in range(k))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(k))
    dil = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(k))
    start = tuple(draw(st.integers(0, w - 1)) for w in window)
    end = [draw(st.integers(0, w - 1)) for w in window]
    for i in range(k):
        need = (window[i] - 1) * dil[i] + 1 - (spatial[i] + start[i] + end[i])
        end[i] += max(0, need)
    dtype = draw(st.sampled_from(FLOATS))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    spread = 8 if dtype == np.float16 else 30
    vals = rng.standard_normal(shape) * 2.0 ** rng.integers(-spread, spread, shape)
    if draw(st.booleans()):
        vals[rng.random(shape) < 0.5] = -0.0
    x = _layout(draw, shape, dtype, vals.astype(dtype))
    kw = dict(strides=strides, start_padding=start, end_padding=tuple(end), dilations=dil)
    return x, window, kw


@settings(max_examples=150)
@given(c=sum_cases(), incl=st.booleans())
def test_average_pooling_sums_in_row_major_order(c, incl):
    # bitwise the reference, whose sums go in SPEC 5's order (row-major window offsets,
    # from +0.0)
    x, window, kw = c
    got = dml.average_pooling(x, window, include_padding=incl, backend="cpu", **kw)
    want = dml.average_pooling(x, window, include_padding=incl, backend="reference", **kw)
    assert _same(got, want)


@settings(max_examples=100)
@given(c=cases(FLOATS))
def test_max_pooling_grad_bitwise(c):
    x, window, kw, out, rng = c
    dy = rng.standard_normal(x.shape[:2] + out).astype(x.dtype)
    got = dml.max_pooling_grad(x, dy, window, backend="cpu", **kw)
    want = dml.max_pooling_grad(x, dy, window, backend="reference", **kw)
    assert _same(got, want)


@settings(max_examples=30)
@given(c=cases(FLOATS))
def test_max_pooling_grad_streamed_bitwise(c):
    """Where dx is large, its planes are written with streaming stores (``_stream``): here
    for every size (``BIG`` 0), packed or strided dx, planes of any length (so runs start
    and end anywhere in a vector)."""
    from dmlops.backends.cpu import pooling

    x, window, kw, out, rng = c
    dy = rng.standard_normal(x.shape[:2] + out).astype(x.dtype)
    want = dml.max_pooling_grad(x, dy, window, backend="reference", **kw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pooling, "BIG", 0)
        got = dml.max_pooling_grad(x, dy, window, backend="cpu", **kw)
        big = np.full((2,) + x.shape, np.nan, x.dtype)
        dml.max_pooling_grad(x, dy, window, backend="cpu", out=big[1], **kw)
    assert _same(got, want) and _same(big[1], want)
    assert np.isnan(big[0]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint16, np.uint8])
def test_stream_copy_any_alignment(dtype):
    """Runs copied with streaming stores: any start (aligned to the vector or not), any
    length around the streaming threshold; nothing outside the run written."""
    from numba import njit

    from dmlops.backends.cpu._stream import LONG, fence, stream_copy

    @njit
    def copy(dst, d0, src, s0, n, stream):
        stream_copy(dst, d0, src, s0, n, stream)
        fence()

    src = np.arange(3000).astype(dtype)
    for d0 in range(0, 40, 3):
        for n in (0, 5, LONG - 1, LONG, LONG + 7, 1001):
            for stream in (False, True):
                dst = np.zeros(3000, dtype)
                copy(dst, d0, src, 7, n, stream)
                want = np.zeros(3000, dtype)
                want[d0:d0 + n] = src[7:7 + n]
                assert np.array_equal(dst, want), (d0, n, stream)


def test_prefetch_spans_are_clamped_hints():
    """``prefetch`` (the next block's input, ``_stream``) takes any span, however far
    outside its array (before it, past its end, empty or reversed), without a fault or a
    change; and the code that issues it is really there (``prefetcht1``, on x86)."""
    import platform

    from numba import njit

    from dmlops.backends.cpu._stream import prefetch

    @njit
    def hint(a, lo, hi):
        prefetch(a, lo, hi)
        return a.sum()

    a = np.arange(1000, dtype=np.float32)
    for lo, hi in ((0, 1000), (-(1 << 40), 1 << 40), (990, 5000), (5000, 9000),
                   (-500, -1), (700, 300), (0, 0)):
        assert hint(a, lo, hi) == np.arange(1000, dtype=np.float32).sum()
    assert np.array_equal(a, np.arange(1000, dtype=np.float32))
    if platform.machine() in ("x86_64", "AMD64"):
        asm = hint.inspect_asm(hint.signatures[0])
        assert "prefetcht1" in asm


@settings(max_examples=100)
@given(c=cases([np.int8, np.uint8]), dout=st.sampled_from([np.int8, np.uint8]),
       per_channel=st.booleans(), incl=st.booleans())
def test_quantized_bitwise(c, dout, per_channel, incl):
    x, window, kw, out, rng = c
    C = x.shape[1]
    shape = (1, C) + (1,) * (x.ndim - 2)
    if per_channel:
        s_in = (rng.random(shape) * 0.1 + 0.001).astype(np.float32)
        s_out = (rng.random(shape) * 0.1 + 0.001).astype(np.float32)
        zi = rng.integers(0, 100, shape).astype(x.dtype)
        zo = rng.integers(0, 100, shape).astype(dout)
    else:
        s_in, s_out = float(rng.random() + 0.01), float(rng.random() * 0.1 + 0.001)
        zi, zo = np.asarray(int(rng.integers(0, 100))).astype(x.dtype)[()], \
            np.asarray(int(rng.integers(0, 100))).astype(dout)[()]
    args = (x, s_in, zi, s_out, zo, window)
    got = dml.quantized_linear_average_pooling(*args, include_padding=incl, backend="cpu", **kw)
    want = dml.quantized_linear_average_pooling(*args, include_padding=incl,
                                                backend="reference", **kw)
    assert _same(got, want)


@pytest.mark.parametrize("window", [(8, 16), (12, 12)])      # 128 elements: int16 sums
@pytest.mark.parametrize("din", [np.uint8, np.int8])
def test_quantized_sums_at_the_accumulators_limits(window, din):
    """Sums as large as a window allows, both signs: every element as far from the zero
    point as the type permits (255 away), where the kernel's accumulator narrows to int16
    (up to 128 elements) and where it must not (144: 36,720 > 32,767). A sum that wrapped
    would move the average by 65,536 / 144 = 455 (outputs of 64 at most, scale 4)."""
    info = np.iinfo(din)
    for fill, zp in ((info.max, info.min), (info.min, info.max)):
        x = np.full((1, 2, 12, 16), fill, din)
        x[0, 1, ::3, ::5] = zp                   # a few terms of 0, so the sums differ
        args = (x, 1.0, np.asarray(zp, din)[()], 4.0, np.asarray(0, np.int8)[()], window)
        got = dml.quantized_linear_average_pooling(*args, output_dtype=np.int8,
                                                   backend="cpu")
        want = dml.quantized_linear_average_pooling(*args, output_dtype=np.int8,
                                                    backend="reference")
        assert _same(got, want)
        assert abs(int(got[0, 0, 0, 0])) == 64         # all 255 from the zero point


@st.composite
def unit_stride_cases(draw):
    """Quantized pooling that the cpu backend does a plane at a time (``planes``): unit
    strides, any rank, window (wider than 3 too), dilation and padding, outputs past the
    end padding, any layout of x and of out, per-tensor or per-channel parameters."""
    shape, window, dil, _, start, end, sizes = _geometry(draw, 9, 5, 1)
    k = len(window)
    out = sizes[:2] + tuple(s + draw(st.integers(0, 1)) for s in sizes[2:])
    din = draw(st.sampled_from([np.int8, np.uint8]))
    dout = draw(st.sampled_from([np.int8, np.uint8]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    info = np.iinfo(din)
    x = _layout(draw, shape, din, rng.integers(info.min, info.max, shape, din, endpoint=True))
    pshape = (1, shape[1]) + (1,) * k if draw(st.booleans()) else ()
    params = ((rng.random(pshape) * 0.1 + 0.001).astype(np.float32),
              rng.integers(0, 100, pshape).astype(din),
              (rng.random(pshape) * 0.1 + 0.001).astype(np.float32),
              rng.integers(0, 100, pshape).astype(dout))
    kw = dict(start_padding=start, end_padding=tuple(end), dilations=dil,
              include_padding=draw(st.booleans()))
    y = np.zeros(out, dout)
    if draw(st.booleans()):                          # out= reversed along its last axis
        y = np.zeros(out, dout)[..., ::-1]
    return x, params, window, kw, y


def _quantized_desc_run(x, params, window, kw, out_shape, backend):
    """Quantized pooling through the description layer, whose output sizes may exceed the
    computed ones (SPEC 2: windows past the end padding)."""
    s_in, z_in, s_out, z_out = params
    k = len(window)
    ps = (1,) * (2 + k) if np.ndim(s_in) == 0 else np.shape(s_in)
    f = {np.dtype(np.int8): "INT8", np.dtype(np.uint8): "UINT8"}
    desc = dml.QuantizedLinearAveragePoolingDesc(
        input_tensor=dml.TensorDesc(f[x.dtype], x.shape),
        input_scale_tensor=dml.TensorDesc("FLOAT32", ps),
        input_zero_point_tensor=dml.TensorDesc(f[z_in.dtype], ps),
        output_scale_tensor=dml.TensorDesc("FLOAT32", ps),
        output_zero_point_tensor=dml.TensorDesc(f[z_out.dtype], ps),
        output_tensor=dml.TensorDesc(f[z_out.dtype], out_shape), strides=(1,) * k,
        window_size=window, start_padding=kw["start_padding"], end_padding=kw["end_padding"],
        dilations=kw["dilations"], include_padding=kw["include_padding"])
    op = dml.compile_operator(desc, backend=backend)
    bind = dict(input_tensor=x, input_scale_tensor=np.reshape(s_in, ps),
                input_zero_point_tensor=np.reshape(z_in, ps),
                output_scale_tensor=np.reshape(s_out, ps),
                output_zero_point_tensor=np.reshape(z_out, ps))
    return op.execute(**bind)["output_tensor"]


@settings(max_examples=150)
@given(c=unit_stride_cases())
def test_quantized_unit_strides_plane_way(c):
    from dmlops.backends.cpu import planes
    x, params, window, kw, y = c
    assert planes.extents(x.shape[2:], y.shape[2:], window, (1,) * len(window),
                          kw["start_padding"], kw["dilations"]) is not None
    sizes = dml.pooling_output_sizes(x.shape, window, start_padding=kw["start_padding"],
                                     end_padding=kw["end_padding"], dilations=kw["dilations"])
    if y.shape != tuple(sizes):
        got, want = (_quantized_desc_run(x, params, window, kw, y.shape, b)
                     for b in ("cpu", "reference"))
    else:
        got = dml.quantized_linear_average_pooling(x, *params, window, out=y, backend="cpu",
                                                   **kw)
        want = dml.quantized_linear_average_pooling(x, *params, window, backend="reference",
                                                    **kw)
        assert got is y
    assert _same(got, want)


def test_quantized_plane_way_limit(monkeypatch):
    """Planes past ``PLANE_MOST`` go the row way, with the same bits; both ways at int32
    sums too (a 12x12 window: 144 elements)."""
    from dmlops.backends.cpu import planes
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, (2, 3, 20, 31), np.uint8)
    for window in (3, 12):
        args = (x, 0.01, np.uint8(3), 0.05, np.uint8(128), window)
        kw = dict(start_padding=2, end_padding=(1, 4), include_padding=False)
        want = dml.quantized_linear_average_pooling(*args, backend="reference", **kw)
        assert planes.extents(x.shape[2:], want.shape[2:], (window,) * 2, (1, 1), (2, 2),
                              (1, 1)) is not None
        plane = dml.quantized_linear_average_pooling(*args, backend="cpu", **kw)
        monkeypatch.setattr(planes, "PLANE_MOST", 100)
        assert planes.extents(x.shape[2:], want.shape[2:], (window,) * 2, (1, 1), (2, 2),
                              (1, 1)) is None
        rows = dml.quantized_linear_average_pooling(*args, backend="cpu", **kw)
        monkeypatch.undo()
        assert _same(plane, want) and _same(rows, want)
        assert len(np.unique(want)) > 10


def test_out_with_any_strides():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 10)).astype(np.float32)
    big = np.full((2, 3, 10, 15), 7.0, np.float32)
    out = big[:, :, ::2, 1::3][:, ::-1]              # reversed channels, stepped rows/cols
    res = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1, out=out,
                          backend="cpu")
    assert res is out
    want = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                           backend="reference")
    assert np.array_equal(out, want)
    untouched = np.ones(big.shape, bool)
    untouched[:, :, ::2, 1::3] = False
    assert np.all(big[untouched] == 7.0)


@pytest.mark.parametrize("op", ["max", "max_indices", "average", "grad", "quantized", "pad"])
def test_same_bits_with_one_and_two_threads(op, monkeypatch):
    from dmlops.backends.cpu import _threads
    monkeypatch.setattr(_threads, "MIN_WORK", 1)        # small as it is, split it
    rng = np.random.default_rng(11)
    x = rng.integers(-3, 3, (2, 8, 33, 35)).astype(np.float32)
    xq = rng.integers(0, 255, (2, 8, 33, 35)).astype(np.uint8)
    dy = rng.standard_normal((2, 8, 17, 18)).astype(np.float32)
    kw = dict(strides=2, start_padding=1, end_padding=1)
    calls = {
        "max": lambda: dml.max_pooling(x, 3, backend="cpu", **kw),
        "max_indices": lambda: dml.max_pooling(x, 3, output_indices=True, backend="cpu",
                                               **kw)[1],
        "average": lambda: dml.average_pooling(x, 3, backend="cpu", **kw),
        "grad": lambda: dml.max_pooling_grad(x, dy, 3, backend="cpu", **kw),
        "quantized": lambda: dml.quantized_linear_average_pooling(xq, 0.02, 128, 0.015, 120,
                                                                  3, backend="cpu", **kw),
        "pad": lambda: dml.padding(x, (0, 0, 40, 3), (0, 0, 2, 41), mode="symmetric",
                                   backend="cpu"),
    }
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = calls[op]()
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = calls[op]()
    finally:
        numba.set_num_threads(before)
    assert _same(one, two)


def test_cache_goes_to_the_user_cache_dir(tmp_path):
    """A second process loads the kernels from DMLOPS_CACHE_DIR; nothing is written beside
    the package (which may be read-only)."""
    # (padding: the quickest kernel to compile; any kernel goes through the same cache)
    code = ("import numpy as np, dmlops as d; "
            "print(d.padding(np.arange(16, dtype=np.float32).reshape(1,1,4,4), 1, 1, "
            "backend='cpu').sum())")
    env = dict(os.environ, DMLOPS_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    cached = [p for p in tmp_path.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert cached, "no cache files in DMLOPS_CACHE_DIR"
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=600)
    assert second.returncode == 0 and second.stdout == first.stdout
    # (dmlops.backends is the function of SPEC 5, so the subpackage is reached by name)
    package = os.path.dirname(importlib.import_module("dmlops.backends.cpu").__file__)
    pycache = os.path.join(package, "__pycache__")
    beside = os.listdir(pycache) if os.path.isdir(pycache) else []
    assert [f for f in beside if f.endswith((".nbi", ".nbc"))] == []


@pytest.mark.parametrize("window,strides", [((3, 3), (2, 2)), ((2, 3), (1, 1)),
                                            ((3, 2), (2, 4)), ((2, 1), (1, 3)), ((1, 3), (1, 2))])
@pytest.mark.parametrize("layout", ["c", "channels_last", "reversed"])
def test_max_rows_separable_and_general_agree_on_ties(window, strides, layout):
    """Both ways of evaluating a row (separable, when the windows read most of the row's
    columns; window offset by offset otherwise, e.g. stride 3 over a window of 1) keep the
    SPEC's winner where equal values differ in bits: −0.0 / +0.0 and NaNs with different
    payloads, so only the lowest flat index gives the reference's bits and indices."""
    rng = np.random.default_rng(5)
    nans = np.array([0x7FC00001, 0x7FC00002, 0xFFC00003], np.uint32).view(np.float32)
    pool = np.concatenate([np.array([0.0, -0.0, -1.0], np.float32), nans])
    x = pool[rng.integers(0, pool.size, (2, 3, 11, 13))]
    if layout == "channels_last":
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    elif layout == "reversed":
        x = np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    kw = dict(strides=strides, start_padding=(1, 1), end_padding=(1, 2))
    out = dml.pooling_output_sizes(x.shape, window, ceil_mode=True, **kw)
    got = dml.max_pooling(x, window, output_sizes=out, output_indices=True, backend="cpu",
                          **kw)
    want = dml.max_pooling(x, window, output_sizes=out, output_indices=True,
                           backend="reference", **kw)
    assert _same(got[0], want[0]) and _same(got[1], want[1])
    assert _same(dml.max_pooling(x, window, output_sizes=out, backend="cpu", **kw), want[0])
    dy = rng.standard_normal(out).astype(np.float32)
    assert _same(dml.max_pooling_grad(x, dy, window, backend="cpu", **kw),
                 dml.max_pooling_grad(x, dy, window, backend="reference", **kw))
    h = x.astype(np.float16)
    assert _same(dml.max_pooling(h, window, output_sizes=out, backend="cpu", **kw),
                 dml.max_pooling(h, window, output_sizes=out, backend="reference", **kw))


def _extremes(dtype):
    """Values that test an ordering: the type's ends and, for floats, ±∞, ±0 and NaNs of
    both signs and two payloads."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], dtype)
    bits = {2: (0x7E01, 0xFE02), 4: (0x7FC00001, 0xFFC00002),
            8: (0x7FF8000000000001, 0xFFF8000000000002)}[np.dtype(dtype).itemsize]
    nans = np.array(bits, f"u{np.dtype(dtype).itemsize}").view(dtype)
    return np.concatenate([np.array([-np.inf, np.inf, 0.0, -0.0, -1.0, 1.0], dtype), nans])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("width", [1, 2, 5, 16, 33])
def test_max_values_by_keys_bitwise(dtype, width):
    """Max pooling without indices compares integer keys, and rows that read a −0.0 or a
    NaN go the tie-tracking way: here most rows are plain and a few hold the type's extreme
    values, for every type (uint16 must not be taken for float16 bits), odd and even widths,
    strides 1-3 (2 splits the columns into even and odd ones) and a strided input."""
    rng = np.random.default_rng(width)
    shape = (2, 3, 7, width)
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-50, 50, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -50), min(info.max, 50), shape).astype(dtype)
    ext = _extremes(dtype)
    rows = rng.integers(0, 2 * 3 * 7, 6)                  # a few rows get extreme values
    flat = x.reshape(-1, width)
    for r in rows:
        flat[r, rng.integers(0, width, max(1, width // 3))] = rng.choice(ext)
    views = [x, np.repeat(x, 2, axis=-1)[..., ::2]]
    for v in views:
        for window, strides, pad in [((3, 3), (2, 2), 1), ((2, 3), (1, 2), (0, 2)),
                                     ((3, 1), (2, 3), (1, 0)), ((1, 2), (1, 1), 0)]:
            kw = dict(strides=strides, start_padding=pad, end_padding=pad)
            if any(width + 2 * p < w for w, p in zip(window[1:], np.broadcast_to(pad, 2)[1:])):
                continue
            got = dml.max_pooling(v, window, backend="cpu", **kw)
            want = dml.max_pooling(v, window, backend="reference", **kw)
            assert _same(got, want), (window, strides, pad)


@st.composite
def flat_cases(draw):
    """Geometries whose rows go the flat way (``pooling._flat_pitch``): rows a whole number
    of last-dimension steps apart (with a gap after each row, sometimes), windows that reach
    beyond their row (padding, dilations wider than the row), 2-D and 3-D."""
    k = draw(st.integers(2, 3))
    step = draw(st.integers(1, 3))
    owp = draw(st.integers(1, 9))
    width = draw(st.integers(1, step * owp))            # the row pitch is step * owp
    wk, dk = draw(st.integers(1, 4)), draw(st.integers(1, 7))
    p0, p1 = draw(st.integers(0, 8)), draw(st.integers(0, 8))
    p1 += max(0, (wk - 1) * dk + 1 - (width + p0 + p1))
    olast = (width + p0 + p1 - (wk - 1) * dk - 1) // step + 1
    assume(olast <= owp)
    rows = draw(st.integers(1, 9))
    wm = draw(st.integers(1, 3))
    sm = draw(st.integers(1, wm))
    pm = draw(st.integers(0, wm - 1))
    outer = [draw(st.integers(1, 4)) for _ in range(k - 2)]
    ow = [draw(st.integers(1, 2)) for _ in range(k - 2)]
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *outer, rows, width)
    window = (*ow, wm, wk)
    kw = dict(strides=(*[1] * (k - 2), sm, step), start_padding=(*[0] * (k - 2), pm, p0),
              end_padding=(*[ow_ - 1 for ow_ in ow], max(0, wm - rows), p1),
              dilations=(*[1] * (k - 2), 1, dk))
    return shape, step * owp, window, kw


@settings(max_examples=200, deadline=None)
@given(c=flat_cases(), dtype=st.sampled_from([np.float32, np.int8, np.float16, np.uint16]),
       flat=st.sampled_from([1, 1 << 15]), odd=st.booleans(), seed=st.integers(0, 2**31),
       indices=st.booleans())
def test_max_values_flat_runs(c, dtype, flat, odd, seed, indices):
    """Max pooling reduces runs of rows along the last dimension in one flat loop where it
    can, then each row's window over the run's rows; runs in blocks of a few rows when
    ``FLAT`` (read at call time) is small. With indices, the first of equal keys keeps its
    position at both steps (many ties: small integers). A −0.0 or NaN sends its block the
    tie-tracking way. Same bits as the reference, indices too."""
    from dmlops.backends.cpu import pooling

    shape, pitch, window, kw = c
    rng = np.random.default_rng(seed)
    base = rng.integers(-20, 20, shape[:-1] + (pitch,)).astype(dtype)
    if odd and np.dtype(dtype).kind == "f":
        flat_view = base.reshape(-1)
        flat_view[rng.integers(0, flat_view.size, 2)] = np.array([-0.0, np.nan], dtype)
    x = base[..., :shape[-1]]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pooling, "FLAT", flat)
        _max_as_reference(x, window, indices, **kw)


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.uint16])
@pytest.mark.parametrize("window, strides, start, end", [
    ((3, 3), (2, 2), (1, 1), (1, 1)), ((2, 3), (1, 2), (0, 1), (1, 1)),
    ((1, 2), (1, 2), (0, 0), (0, 0)), ((2, 1, 3), (1, 1, 2), (0, 0, 1), (1, 0, 1)),
    ((3, 1, 2), (2, 1, 1), (1, 0, 0), (1, 0, 1)), ((1, 3, 3), (1, 2, 2), (0, 1, 1), (0, 1, 1))])
def test_max_flat_full_rows(dtype, window, strides, start, end):
    """Rows whose window lies whole in the flat runs (at most three run rows, values alone,
    1-byte keys) go a loop of their own (``_full_rows``; wider keys take the general loop
    on the same geometries): window rows along the run dimension or, in 3-D, real elements
    of the outer dimension (fewer at its edges), rows of many outputs, in whole ``FLAT``
    blocks and in blocks of one row. Same bits as the reference."""
    from dmlops.backends.cpu import pooling

    rng = np.random.default_rng(len(window))
    shape = (2, 3, *([4] if len(window) == 3 else []), 11, 70)
    x = rng.integers(0, 100, shape).astype(dtype)
    kw = dict(strides=strides, start_padding=start, end_padding=end)
    want = dml.max_pooling(x, window, backend="reference", **kw)
    for flat in (1, pooling.FLAT):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(pooling, "FLAT", flat)
            assert _same(dml.max_pooling(x, window, backend="cpu", **kw), want), flat


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("window, strides", [((3, 3), 2), ((2, 2), 2), ((3, 3), 1)])
@pytest.mark.parametrize("nan", [None, 1, -1])
def test_max_flat_runs_see_signed_zeros_and_nans(dtype, window, strides, nan):
    """Windows whose largest values are −0.0 and +0.0 in either order (equal: the first
    wins, SPEC 3.4), well inside rows that go the flat way, and NaNs of either sign there:
    the flat loops must notice them (−0.0 per element, NaNs from the range of the keys)
    and hand the block to the tie-tracking way. Bits and indices as the reference's."""
    rng = np.random.default_rng(7)
    # (no −0.0 with the NaNs: either alone must send its block the other way; NaNs of two
    # payloads, so that the larger key is not the first NaN)
    nans = np.array([0x7FC00000, 0x7FE00000], np.uint32) | (0x80000000 if nan == -1 else 0)
    values = [-0.0, 0.0, -1.0] if nan is None else [1.0, -1.0, *nans.view(np.float32)]
    p = [0.2, 0.2, 0.6] if nan is None else [0.2, 0.78, 0.01, 0.01]
    x = rng.choice(np.array(values, dtype), (2, 3, 24, 48), p=p)
    x[..., :3] = x[..., -3:] = -1      # none in the columns done one by one (the rows' edges)
    kw = dict(strides=strides, start_padding=1, end_padding=1)
    for indices in (False, True):
        _max_as_reference(x, window, indices, **kw)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float16, np.float32,
                                   np.uint32])
@pytest.mark.parametrize("width", [7, 8, 33, 64])
@pytest.mark.parametrize("pad", [0, 1])
def test_max_stride2_runs_words_and_carry(dtype, width, pad):
    """The common 3-wide, stride-2 window's runs, with and without indices: 1-byte keys
    read as 16-bit words (split in registers), wider keys with the element two outputs
    share carried from one to the next. Rows starting at even and odd elements (odd widths,
    padding moving the first window), odd and even widths, the last output near the end of
    the input (whose word could reach past it), a 1-byte buffer at an odd address (read
    the plain way). Few distinct values, so that windows tie (the first wins). Bits and
    indices as the reference's."""
    rng = np.random.default_rng(width + pad)
    shape = (2, 3, 9, width + 1)
    if np.dtype(dtype).kind == "f":
        base = rng.integers(-3, 4, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        base = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        base[0] //= 64                  # (ties)
    for x in (base[..., 1:], base[..., :-1], np.ascontiguousarray(base[..., 1:])):
        for window in (3, (2, 3)):
            for indices in (False, True):
                _max_as_reference(x, window, indices, strides=2, start_padding=pad,
                                  end_padding=pad)


def _cl(a):
    """``a`` with channels-last memory (the same values)."""
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
@pytest.mark.parametrize("channels", [5, 64, 70])
@pytest.mark.parametrize("window", [(2, 2), (2, 3), (3, 3), (4, 4)])
def test_max_whole_windows_channels_last(dtype, channels, window):
    """Channels-last data runs each output row (its channels) as the element-wise best of
    whole window elements, three at a time: a later element wins only where greater, so
    the first of −0.0 and +0.0 stays; a NaN wins over a non-NaN, the first of two NaNs
    stays (values alone: the row goes the tie-tracking way). Bits and indices as the
    reference's, for output rows shorter and longer than a pass's 64 outputs (and not a
    multiple of it), windows of 4, 6, 9 and 16 elements, padding (fewer), and channels-last
    and packed outputs, whose steps differ."""
    rng = np.random.default_rng(channels)
    shape = (2, channels, 9, 10)
    if dtype == np.int8:
        x = rng.integers(-128, 128, shape).astype(dtype)
    else:
        nans = np.array([0x7FC00000, 0x7FE00000, 0xFFC00001], np.uint32).view(np.float32)
        x = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0, *nans], dtype), shape,
                       p=[0.3, 0.3, 0.2, 0.18, 0.01, 0.005, 0.005])
    x = _cl(x)
    kw = dict(strides=(2, 1), start_padding=1, end_padding=(1, 2))
    sizes = dml.pooling_output_sizes(shape, window, **kw)
    for idt in (None, np.uint32, np.int64):
        want = dml.max_pooling(x, window, backend="reference", output_indices=idt is not None,
                               indices_dtype=idt or np.uint32, **kw)
        outs = [None, _cl(np.empty(sizes, dtype))]
        for out in outs:
            if idt is None:
                assert _same(dml.max_pooling(x, window, backend="cpu", out=out, **kw), want)
                continue
            pair = None if out is None else (out, _cl(np.empty(sizes, idt)))
            got = dml.max_pooling(x, window, backend="cpu", output_indices=True,
                                  indices_dtype=idt, out=pair, **kw)
            assert _same(np.ascontiguousarray(got[0]), want[0])
            assert _same(np.ascontiguousarray(got[1]), want[1])
    if dtype != np.int8:
        dy = rng.standard_normal(sizes).astype(dtype)
        assert _same(dml.max_pooling_grad(x, dy, window, backend="cpu", **kw),
                     dml.max_pooling_grad(x, dy, window, backend="reference", **kw))


@pytest.mark.parametrize("window", [(2, 130), (130, 3), (9, 5)])
def test_max_indices_beyond_tracked_positions(window):
    """Tracked positions are numbered in the key type: int8 keys number 127 at most, so a
    window with more last-dimension offsets (or more rows) than that takes the
    tie-tracking way; still the reference's values and indices."""
    x = np.random.default_rng(3).integers(-3, 3, (1, 2, 140, 140)).astype(np.int8)
    x[..., 131:, :] = 50                                # winners late in the window,
    x[..., 131:] = 60                                   # beyond position 127
    kw = dict(strides=(1, 2), start_padding=(0, 1), end_padding=(0, 1))
    got = dml.max_pooling(x, window, backend="cpu", output_indices=True, **kw)
    want = dml.max_pooling(x, window, backend="reference", output_indices=True, **kw)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_flat_runs_cover_the_common_windows():
    """The flat way is taken for the usual pooling geometries (NCHW and channels-last 3x3
    stride 2, 2x2 stride 2, 3-D 2x2x2) and not where rows are not evenly spaced."""
    from dmlops.backends.cpu import pooling

    def pitch(xs, insz, outsz, win, strd, dil=None):
        a = [np.array(v, np.int64) for v in (xs, insz, outsz, win, strd)]
        return pooling._flat_pitch(*a, np.ones(len(win), np.int64) if dil is None
                                   else np.array(dil, np.int64))
    assert pitch((0, 0, 112, 1), (32, 64, 112, 112), (32, 64, 56, 56), (3, 3), (2, 2)) == 56
    assert pitch((0, 0, 64, 1), (1, 1, 16, 16), (1, 1, 8, 8), (2, 2), (2, 2)) == 32
    assert pitch((0, 0, 4096, 64, 1), (4, 32, 32, 64, 64), (4, 32, 16, 32, 32), (2, 2, 2),
                 (2, 2, 2)) == 32
    # channels-last runs as (N, 1, H, W, C) with a unit window over C
    assert pitch((0, 0, 7168, 64, 1), (32, 1, 112, 112, 64), (32, 1, 56, 56, 64), (3, 3, 1),
                 (2, 2, 1)) == 64
    assert pitch((0, 0, 113, 1), (1, 1, 113, 113), (1, 1, 57, 57), (3, 3), (2, 2)) == 0
    assert pitch((0, 0, 224, 2), (1, 1, 112, 112), (1, 1, 56, 56), (3, 3), (2, 2)) == 0
    assert pitch((0, 0, 112), (1, 1, 112), (1, 1, 56), (3,), (2,)) == 0


@pytest.mark.parametrize("layout", ["c", "channels_last"])
def test_many_rows_per_task(layout):
    """A task takes many output rows and walks them by position and plane: every operator
    against the reference there, with per-channel quantization (a plane change must change
    the channel's parameters)."""
    rng = np.random.default_rng(3)
    shape = (3, 5, 41, 23)
    x = rng.integers(-9, 9, shape).astype(np.float32) / 4
    xq = rng.integers(0, 255, shape).astype(np.uint8)
    if layout == "channels_last":
        x, xq = (np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)
                 for a in (x, xq))
    kw = dict(strides=(1, 2), start_padding=1, end_padding=(2, 1))
    sizes = dml.pooling_output_sizes(shape, 3, **kw)
    dy = rng.standard_normal(sizes).astype(np.float32)
    s_in = rng.uniform(0.01, 0.05, (1, 5, 1, 1)).astype(np.float32)
    zp_in = rng.integers(100, 150, (1, 5, 1, 1)).astype(np.uint8)
    calls = [
        lambda b: dml.max_pooling(x, 3, backend=b, **kw),
        lambda b: dml.max_pooling(x, 3, output_indices=True, backend=b, **kw)[1],
        lambda b: dml.average_pooling(x, 3, include_padding=True, backend=b, **kw),
        lambda b: dml.max_pooling_grad(x, dy, 3, backend=b, **kw),
        lambda b: dml.quantized_linear_average_pooling(xq, s_in, zp_in, 0.015, np.uint8(120),
                                                       3, backend=b, **kw),
    ]
    for call in calls:
        assert _same(call("cpu"), call("reference"))


def test_cache_path_follows_every_source_file(tmp_path):
    """Numba checks a cached kernel against its own file only; the cache path carries a
    digest of all the backend's sources, so a changed helper file means fresh kernels."""
    from dmlops.backends.cpu import _cache

    assert _cache.SOURCES == _cache.sources_digest()
    for name in ("pooling.py", "_half.py"):
        (tmp_path / name).write_text("x = 1\n")
    before = _cache.sources_digest(tmp_path)
    (tmp_path / "_half.py").write_text("x = 2\n")
    assert _cache.sources_digest(tmp_path) != before


def test_kernels_compiled_in_process_are_optimised_twice(tmp_path):
    """A kernel compiled in this process runs its callees as compiled first (optimised
    once, and then some loops are not vectorised: up to 3x slower than the same kernel
    from the cache). While one of the package's functions compiles, Numba's first module
    pass runs at -O3 with loop vectorisation; other functions keep Numba's settings, which
    are restored after. (A fresh process and cache: nothing is loaded, all is compiled.)"""
    code = """if True:
        import numba
        from dmlops.backends.cpu import _cache, pooling
        assert _cache.OPTIMISED, "Numba's code generator lacks _loopvect/_opt_level"
        cg = _cache._codegen
        default = (cg._opt_level, cg._loopvect)
        numba.njit(lambda a: a)(1)      # (Numba's own runtime compiles first, as it is)
        seen = {"ours": set(), "other": set()}
        now = "ours"
        make = cg._module_pass_manager
        def spy(**kw):
            if kw.get("cost") == "cheap":
                seen[now].add((kw.get("opt"), kw.get("loop_vectorize")))
            return make(**kw)
        cg._module_pass_manager = spy
        pooling._valid_range.compile("(int64, int64, int64, int64)")
        now = "other"
        @numba.njit
        def other(a):
            return a + 1
        other(1)
        assert (cg._opt_level, cg._loopvect) == default
        print(seen == {"ours": {(3, True)}, "other": {default}}, seen)
    """
    env = dict(os.environ, DMLOPS_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.startswith("True"), proc.stdout + proc.stderr


def test_rows_without_a_table(monkeypatch):
    """Calls whose row table would be too large find each row's window offsets as they go
    (``pooling.TABLE``, read at call time; 0 here forces that path): same bits."""
    from dmlops.backends.cpu import pooling

    rng = np.random.default_rng(4)
    x = rng.integers(-9, 9, (2, 3, 5, 9, 11)).astype(np.float32)
    x.reshape(-1)[::7] = -0.0                   # some rows take the tie-tracking way
    xq = rng.integers(0, 255, x.shape).astype(np.uint8)
    kw = dict(strides=(1, 2, 2), start_padding=1, end_padding=(0, 1, 2))
    calls = [
        lambda b: dml.max_pooling(x, (2, 3, 3), backend=b, **kw),
        lambda b: dml.max_pooling(x.astype(np.int16), (2, 3, 3), backend=b, **kw),
        lambda b: dml.average_pooling(x, (2, 3, 3), backend=b, **kw),
        lambda b: dml.quantized_linear_average_pooling(xq, 0.02, 128, 0.015, 120, (2, 3, 3),
                                                       backend=b, **kw),
    ]
    want = [call("reference") for call in calls]
    monkeypatch.setattr(pooling, "TABLE", 0)
    for call, w in zip(calls, want):
        assert _same(call("cpu"), w)


@numba.njit(nogil=True)
def _count_items(lo, hi, seen):
    for i in range(lo, hi):
        seen[i] += 1


@pytest.mark.parametrize("n,item_size", [(0, 4096), (1, 4096), (7, 4096), (1001, 4096),
                                         (1001, 7), (5000, 1)])
def test_parallel_covers_every_item_once(n, item_size):
    from dmlops.backends.cpu._threads import MIN_WORK, parallel
    seen = np.zeros(n, np.int64)
    parallel(_count_items, n, seen, item_size=item_size)
    assert (seen == 1).all()
    # as many contiguous shares as threads, each worth MIN_WORK outputs at least
    shares = []
    parallel(lambda lo, hi: shares.append((lo, hi)), n, item_size=item_size)
    want = max(1, min(numba.get_num_threads(), n * item_size // MIN_WORK))
    assert sorted(shares) == [(n * i // want, n * (i + 1) // want) for i in range(want)]


# --- what calls keep for later calls ------------------------------------------------------

@pytest.mark.parametrize("shape,dtype,writeable", [
    ((2, 3, 4), np.float32, True), ((2, 3, 4), np.float32, False),
    ((1, 5, 1, 3), np.float16, True), ((4,), np.int8, True), ((1, 1), np.uint64, True),
])
def test_flat_sees_every_element_where_it_is(shape, dtype, writeable):
    from dmlops.backends.cpu._buffers import flat
    a = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    a.flags.writeable = writeable
    buf, off, steps = flat(a)
    assert buf.ndim == 1 and buf.flags.c_contiguous and buf.flags.writeable
    bits = a.view(np.uint16) if a.dtype == np.float16 else a
    for idx in np.ndindex(*shape):
        assert buf[off + int(np.dot(idx, steps))] == bits[idx]
    # a strided view (general path) of the same memory agrees element for element
    v = a[..., ::-1]
    vb, vo, vs = flat(v)
    vbits = v.view(np.uint16) if v.dtype == np.float16 else v
    for idx in np.ndindex(*v.shape):
        assert vb[vo + int(np.dot(idx, vs))] == vbits[idx]


def test_plans_kept_are_keyed_by_layout_and_bounded(monkeypatch):
    from dmlops.backends.cpu import pooling
    monkeypatch.setattr(pooling, "_PLANS", {})
    monkeypatch.setattr(pooling, "PLANS_KEPT", 3)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 9, 11)).astype(np.float32)
    kw = dict(strides=2, start_padding=1, end_padding=1)
    # the same geometry in three layouts (input and output): each its own plan, each right
    cl = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for xx in (x, cl, x[:, ::-1]):
        for _ in range(2):
            _max_as_reference(xx, 3, True, **kw)
            want = dml.average_pooling(xx, 3, backend="reference", **kw)
            for out in (np.empty(want.shape, np.float32),
                        np.empty(want.shape[::-1], np.float32).T):       # a transposed out=
                dml.average_pooling(xx, 3, backend="cpu", out=out, **kw)
                assert _same(out, want)
    assert 1 <= len(pooling._PLANS) <= 3
    for window in (2, 3, 4, 5):
        _max_as_reference(x, window, False, **kw)
    assert len(pooling._PLANS) <= 3


def test_small_plans_only_are_kept(monkeypatch):
    from dmlops.backends.cpu import pooling
    monkeypatch.setattr(pooling, "_PLANS", {})
    monkeypatch.setattr(pooling, "PLAN_BYTES", 0)
    x = np.random.default_rng(6).standard_normal((1, 2, 7, 7)).astype(np.float32)
    _max_as_reference(x, 3, False, strides=2)
    assert pooling._PLANS == {}
