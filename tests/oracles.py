"""Slow, obvious oracles written from SPEC.md alone (sections 2, 3.1, 3.3, 3.4, 3.5, 3.9).

Independent of ``dmlops``: nothing here imports the library. Every oracle is a plain loop over
output positions and window offsets, so it only suits tiny shapes. The sections cited are the
SPEC's; each rule is spelled out where it is implemented.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

REAL, PAD, PHANTOM = "real", "padding", "phantom"

FLOAT_DTYPES = (np.float16, np.float32, np.float64)
INT_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES

NO_ELEMENT = {np.dtype(np.uint32): 2**32 - 1, np.dtype(np.uint64): 2**64 - 1,
              np.dtype(np.int64): -1}


def spatial_tuple(v, k):
    """SPEC 4.1: a spatial argument is an int (every spatial dimension) or a sequence of k."""
    if isinstance(v, (int, np.integer)):
        return (int(v),) * k
    v = tuple(int(t) for t in v)
    assert len(v) == k
    return v


def random_bits(seed, shape, dtype):
    """An array of ``dtype`` made of random bytes: every pattern, NaNs with payloads too."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).view(dtype) \
        .reshape(shape)


def bits(a):
    """The raw bits of an array (C order), for bitwise comparisons."""
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


# SPEC 5: a NaN result of a summing operator is the canonical quiet NaN of the output type
_CANONICAL_NAN_BITS = {np.dtype(np.float16): 0x7E00, np.dtype(np.float32): 0x7FC00000,
                       np.dtype(np.float64): 0x7FF8000000000000}


def is_canonical_nan(v) -> bool:
    """Whether the float scalar ``v`` (a NumPy scalar of its output type) is SPEC 5's
    canonical quiet NaN, bit for bit."""
    a = np.asarray(v)
    return int(bits(a.reshape(1))[0]) == _CANONICAL_NAN_BITS[a.dtype]


def canonical_nans(a: np.ndarray) -> np.ndarray:
    """``a`` with every NaN made the canonical quiet NaN of its type (SPEC 5)."""
    a = np.array(a, copy=True)
    nan = np.array(_CANONICAL_NAN_BITS[a.dtype], bits(a).dtype).view(a.dtype)
    a[np.isnan(a)] = nan
    return a


def floor_size(S, W, s, sp, ep, d):
    """SPEC 2: E = (W-1)*d + 1, P = S + sp + ep, F = (P - E) // s + 1 (E > P is an error)."""
    E = (W - 1) * d + 1
    P = S + sp + ep
    assert E <= P
    return (P - E) // s + 1


def ceil_size(S, W, s, sp, ep, d):
    """SPEC 2, pooling_output_sizes(ceil_mode=True): F + 1 when (P - E) % s != 0 and the extra
    window starts inside the input or its start padding (F * s < S + sp)."""
    E = (W - 1) * d + 1
    P = S + sp + ep
    F = (P - E) // s + 1
    return F + 1 if (P - E) % s != 0 and F * s < S + sp else F


def classify(x, S, ep):
    """SPEC 2: 0 <= x < S real; -sp <= x < 0 or S <= x < S + ep padding; x >= S + ep phantom."""
    if 0 <= x < S:
        return REAL
    if x < S + ep:          # x >= -sp always holds, since q = o*s + j*d >= 0
        return PAD
    return PHANTOM


class Geometry:
    """The sliding window of SPEC 2 over input sizes {N, C, S1..Sk}."""

    def __init__(self, in_sizes, window, strides=1, start=0, end=0, dilations=1,
                 out_spatial=None):
        self.in_sizes = tuple(int(s) for s in in_sizes)
        k = len(self.in_sizes) - 2
        self.k = k
        self.window = spatial_tuple(window, k)
        self.strides = spatial_tuple(strides, k)
        self.start = spatial_tuple(start, k)
        self.end = spatial_tuple(end, k)
        self.dil = spatial_tuple(dilations, k)
        self.spatial = self.in_sizes[2:]
        self.floor = tuple(floor_size(S, W, s, a, b, d) for S, W, s, a, b, d in zip(
            self.spatial, self.window, self.strides, self.start, self.end, self.dil))
        if out_spatial is None:
            out_spatial = self.floor
        self.out_spatial = tuple(int(o) for o in out_spatial)
        for o, F in zip(self.out_spatial, self.floor):
            assert o in (F, F + 1)
        self.out_sizes = self.in_sizes[:2] + self.out_spatial

    def flat(self, n, c, xs):
        """SPEC 2: row-major position over the logical input sizes, N and C included."""
        f = n * self.in_sizes[1] + c
        for x, S in zip(xs, self.spatial):
            f = f * S + x
        return f

    def window_of(self, o):
        """Positions of output o's window, in row-major order over the window offsets j:
        a list of (kind, input spatial coordinates or None)."""
        out = []
        for j in itertools.product(*(range(W) for W in self.window)):
            xs = tuple(oi * s + ji * d - a for oi, ji, s, d, a in
                       zip(o, j, self.strides, self.dil, self.start))
            kinds = [classify(x, S, e) for x, S, e in zip(xs, self.spatial, self.end)]
            if PHANTOM in kinds:
                out.append((PHANTOM, None))
            elif all(kd == REAL for kd in kinds):
                out.append((REAL, xs))
            else:
                out.append((PAD, None))
        return out

    def positions(self):
        """Every (n, c, o) of the output, in flat (row-major) output order."""
        N, C = self.in_sizes[:2]
        for n in range(N):
            for c in range(C):
                for o in itertools.product(*(range(s) for s in self.out_spatial)):
                    yield n, c, o


def _divisor(win, include_padding):
    """SPEC 3.1: IncludePadding TRUE counts real + padding positions (phantom excluded);
    FALSE counts real positions only."""
    real = sum(1 for kind, _ in win if kind == REAL)
    pad = sum(1 for kind, _ in win if kind == PAD)
    return real + pad if include_padding else real


def average_pooling(x, window, strides=1, start=0, end=0, dilations=1, include_padding=False,
                    out_spatial=None):
    """SPEC 3.1 and the SPEC 5 bound. Returns (y_exact float64, n_terms, divisor, abs_sum),
    each of the output's shape: y_exact = (exact sum of the real elements) / divisor, computed
    in float64 from an exactly rounded sum (math.fsum); divisor 0 gives +0.0."""
    x = np.asarray(x)
    g = Geometry(x.shape, window, strides, start, end, dilations, out_spatial)
    y = np.zeros(g.out_sizes, np.float64)
    nterms = np.zeros(g.out_sizes, np.int64)
    div = np.zeros(g.out_sizes, np.int64)
    asum = np.zeros(g.out_sizes, np.float64)
    for n, c, o in g.positions():
        win = g.window_of(o)
        vals = [float(x[(n, c) + xs]) for kind, xs in win if kind == REAL]
        d = _divisor(win, include_padding)
        idx = (n, c) + o
        nterms[idx] = len(vals)
        div[idx] = d
        if d == 0:
            y[idx] = 0.0
            continue
        with np.errstate(all="ignore"):
            if any(math.isnan(v) for v in vals) or (math.inf in vals and -math.inf in vals):
                s = math.nan
            elif math.inf in vals:
                s = math.inf
            elif -math.inf in vals:
                s = -math.inf
            else:
                s = math.fsum(vals)
            y[idx] = s / d
            asum[idx] = math.fsum(abs(v) for v in vals) if math.isfinite(s) else math.inf
    return y, nterms, div, asum


def average_pooling_check(y, x, window, strides=1, start=0, end=0, dilations=1,
                          include_padding=False, out_spatial=None):
    """Assert the SPEC 5 bound |y - y_exact| <= n * 2^-23 * sum|x_i| / d + one ulp of the output
    type, element by element. Divisor 0 must give +0.0 exactly (SPEC 3.1). A non-finite exact
    result (a NaN or an infinity in the window) must be met exactly: IEEE arithmetic gives it
    whatever the summation order, so the bound reads that way (our reading)."""
    x = np.asarray(x)
    y_exact, nterms, div, asum = average_pooling(x, window, strides, start, end, dilations,
                                                 include_padding, out_spatial)
    assert y.shape == y_exact.shape, (y.shape, y_exact.shape)
    assert y.dtype == x.dtype
    yf = y.astype(np.float64)
    for idx in np.ndindex(y.shape):
        got, want = yf[idx], y_exact[idx]
        if div[idx] == 0:
            assert got == 0.0 and not math.copysign(1.0, got) < 0, (idx, got)
            continue
        if not math.isfinite(want):
            if math.isnan(want):
                assert is_canonical_nan(y[idx]), (idx, y[idx], want)
            else:
                assert got == want, (idx, got, want)
            continue
        ulp = float(np.spacing(np.abs(x.dtype.type(want)))) if want != 0 else float(
            np.finfo(x.dtype).smallest_subnormal)
        bound = nterms[idx] * 2.0**-23 * asum[idx] / div[idx] + ulp
        assert abs(got - want) <= bound, (idx, got, want, bound)


def max_pooling(x, window, strides=1, start=0, end=0, dilations=1, out_spatial=None,
                indices_dtype=np.uint32):
    """SPEC 3.4. Returns (values, indices). Values are bit copies of the chosen real element;
    ties -> lowest flat index; a NaN in the window -> its lowest-index NaN; no real element ->
    -inf (floats) or the type's minimum (integers) and the "no element" index."""
    x = np.asarray(x)
    g = Geometry(x.shape, window, strides, start, end, dilations, out_spatial)
    dt = x.dtype
    is_float = dt.kind == "f"
    xb = bits(x)
    vals_bits = np.zeros(g.out_sizes, xb.dtype)
    idt = np.dtype(indices_dtype)
    idx_out = np.zeros(g.out_sizes, idt)
    if is_float:
        empty = np.array(-np.inf, dt)
    else:
        empty = np.array(np.iinfo(dt).min, dt)
    empty_bits = bits(empty.reshape(1))[0]
    for n, c, o in g.positions():
        cands = []          # (flat index, comparable value, input coordinates)
        for kind, xs in g.window_of(o):
            if kind != REAL:
                continue
            v = x[(n, c) + xs]
            cands.append((g.flat(n, c, xs), float(v) if is_float else int(v), (n, c) + xs))
        oi = (n, c) + o
        if not cands:
            vals_bits[oi] = empty_bits
            idx_out[oi] = NO_ELEMENT[idt]
            continue
        nans = [cd for cd in cands if is_float and math.isnan(cd[1])]
        if nans:
            best = min(nans, key=lambda cd: cd[0])
        else:
            m = max(cd[1] for cd in cands)                  # -0.0 == 0.0: a tie
            best = min((cd for cd in cands if cd[1] == m), key=lambda cd: cd[0])
        vals_bits[oi] = xb[best[2]]
        idx_out[oi] = best[0]
    return vals_bits.view(dt), idx_out


def max_pooling_grad(x, dy, window, strides=1, start=0, end=0, dilations=1):
    """SPEC 3.5 and 7: each window's argmax (3.4 rules) receives the window's incoming gradient;
    every element starts at +0.0 and adds its contributions in ascending flat index of dy (the
    forward output), in float32 for FLOAT16/FLOAT32 (FLOAT16 rounds once at the end), float64
    for FLOAT64. Windows without a real element contribute nothing."""
    x = np.asarray(x)
    dy = np.asarray(dy)
    acc_t = np.float64 if x.dtype == np.float64 else np.float32
    _, arg = max_pooling(x, window, strides, start, end, dilations,
                         out_spatial=dy.shape[2:], indices_dtype=np.int64)
    acc = np.zeros(x.size, acc_t)          # +0.0 everywhere
    flat_arg = arg.reshape(-1)
    flat_dy = dy.reshape(-1)
    for f in range(flat_dy.size):          # ascending flat forward-output index
        e = int(flat_arg[f])
        if e < 0:
            continue
        acc[e] = acc_t(acc[e] + acc_t(flat_dy[f]))
    return canonical_nans(acc.reshape(x.shape).astype(x.dtype))


def _param(v, c):
    """A per-tensor (all-ones shape / scalar) or per-channel {1, C, 1...} parameter, at c."""
    if v is None:
        return None
    a = np.asarray(v)
    if a.size == 1:
        return a.reshape(-1)[0]
    return a.reshape(-1)[c]


def quantized_average_pooling(x, s_in, zp_in, s_out, zp_out, window, strides=1, start=0, end=0,
                              dilations=1, include_padding=False, out_spatial=None,
                              out_dtype=None):
    """SPEC 3.3, the five steps:
    1. acc = sum(x - zp_in) over the real elements, exact integers;
    2. count = the 3.1 divisor;
    3. float32: t = float32(acc) * s_in; t = t / float32(count); t = t / s_out;
    4. q = round_half_to_even(t) + zp_out, clamped to the output type;
    5. count == 0 gives zp_out."""
    x = np.asarray(x)
    out_dtype = np.dtype(out_dtype if out_dtype is not None else x.dtype)
    g = Geometry(x.shape, window, strides, start, end, dilations, out_spatial)
    lo, hi = np.iinfo(out_dtype).min, np.iinfo(out_dtype).max
    y = np.zeros(g.out_sizes, out_dtype)
    for n, c, o in g.positions():
        win = g.window_of(o)
        si = np.float32(_param(s_in, c))
        so = np.float32(_param(s_out, c))
        zi = int(_param(zp_in, c)) if zp_in is not None else 0
        zo = int(_param(zp_out, c)) if zp_out is not None else 0
        acc = sum(int(x[(n, c) + xs]) - zi for kind, xs in win if kind == REAL)
        count = _divisor(win, include_padding)
        if count == 0:
            q = zo
        else:
            with np.errstate(all="ignore"):
                t = np.float32(acc) * si
                t = t / np.float32(count)
                t = t / so
            assert t.dtype == np.float32
            if math.isinf(t):
                q = hi if t > 0 else lo
            else:
                q = int(np.rint(t)) + zo        # np.rint rounds half to even
        y[(n, c) + o] = min(max(q, lo), hi)
    return y


# --- padding (SPEC 3.9) -------------------------------------------------------------------

def pad_index(x, n, mode):
    """SPEC 3.9: input coordinate for output coordinate x (relative to the input's start) in a
    dimension of size n; None means "the padding value" (CONSTANT outside [0, n))."""
    if mode == "constant":
        return x if 0 <= x < n else None
    if mode == "edge":
        return min(max(x, 0), n - 1)
    if mode == "reflection":
        if n == 1:
            assert x == 0
            return 0
        p = 2 * (n - 1)
        m = x % p
        return m if m < n else p - m
    if mode == "symmetric":
        p = 2 * n
        m = x % p
        return m if m < n else p - 1 - m
    if mode == "wrap":
        return x % n
    raise AssertionError(mode)


def padding(x, start, end, mode, value_in_dtype=None):
    """SPEC 3.9, one output element at a time. ``value_in_dtype`` is the padding value already
    converted to x's type (a 0-d array of that type)."""
    x = np.asarray(x)
    r = x.ndim
    start = spatial_tuple(start, r)
    end = spatial_tuple(end, r)
    out_shape = tuple(n + a + b for n, a, b in zip(x.shape, start, end))
    xb = bits(x)
    out = np.zeros(out_shape, xb.dtype)
    vb = None
    if value_in_dtype is not None:
        vb = bits(np.asarray(value_in_dtype, x.dtype).reshape(1))[0]
    for oi in np.ndindex(*out_shape):
        src = [pad_index(o - a, n, mode) for o, a, n in zip(oi, start, x.shape)]
        if any(s is None for s in src):
            out[oi] = vb
        else:
            out[oi] = xb[tuple(src)]
    return out.view(x.dtype)


def padding_grad(dy, in_sizes, start, mode):
    """SPEC 3.10, one output element at a time in row-major order: its value added to the
    input element it copies (none in CONSTANT's padding), every element from +0.0, in float32
    (float64 for float64), rounded once, NaNs canonical."""
    dy = np.asarray(dy)
    acc_t = np.float64 if dy.dtype == np.float64 else np.float32
    acc = np.zeros(in_sizes, acc_t)
    with np.errstate(invalid="ignore", over="ignore"):
        for oi in np.ndindex(*dy.shape):
            src = [pad_index(o - a, n, mode) for o, a, n in zip(oi, start, in_sizes)]
            if all(s is not None for s in src):
                acc[tuple(src)] = acc_t(acc[tuple(src)] + acc_t(dy[oi]))
    return canonical_nans(acc.astype(dy.dtype))


def int_pad_value(v, dtype):
    """SPEC 3.9: to an integer type, truncated toward zero and saturated (NaN -> 0)."""
    info = np.iinfo(dtype)
    if isinstance(v, float):
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return info.max if v > 0 else info.min
        v = math.trunc(v)
    return min(max(int(v), info.min), info.max)
