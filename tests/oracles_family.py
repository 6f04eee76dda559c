"""Slow, obvious oracles for AVERAGE_POOLING_GRAD, LP_POOLING, MAX_UNPOOLING and ROI_POOLING,
written from SPEC.md alone (sections 2, 3.1, 3.2, 3.4, 3.6, 3.7, 3.8, 5 and 7).

Independent of ``dmlops``: nothing here imports the library. The sliding window (SPEC 2) is the
one of ``oracles.Geometry``. Averages and Lp norms are computed exactly (``fractions`` and a
60-digit ``decimal`` root), so the checks below measure the library against the true value,
not against another floating-point evaluation.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np

from oracles import NO_ELEMENT, PAD, REAL, Geometry, bits, is_canonical_nan, spatial_tuple


def _ulp(dtype, value):
    """One ulp of ``dtype`` at ``value`` (a float64): the spacing at the value rounded to the
    type, or the smallest subnormal at 0."""
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore"):
        v = abs(dtype.type(value))
    if v == 0:
        return float(np.finfo(dtype).smallest_subnormal)
    if np.isinf(v):
        return float(np.spacing(np.finfo(dtype).max))
    return float(np.spacing(v))


def _exact_sum(vals):
    """(sum, sum of |terms|) of floats, exactly; IEEE rules for NaN and infinities."""
    if any(math.isnan(v) for v in vals) or (math.inf in vals and -math.inf in vals):
        return math.nan, math.inf
    if math.inf in vals:
        return math.inf, math.inf
    if -math.inf in vals:
        return -math.inf, math.inf
    return sum((Fraction(v) for v in vals), Fraction(0)), sum(
        (abs(Fraction(v)) for v in vals), Fraction(0))


# --- AVERAGE_POOLING_GRAD (SPEC 3.2) --------------------------------------------------------

def divisor(win, include_padding):
    """SPEC 3.1: IncludePadding TRUE counts real + padding positions, FALSE real positions
    only; phantom positions (only in an F + 1 output) never count."""
    real = sum(1 for kind, _ in win if kind == REAL)
    pad = sum(1 for kind, _ in win if kind == PAD)
    return real + pad if include_padding else real


def average_pooling_grad_terms(dy, window, input_sizes, strides=1, start=0, end=0, dilations=1,
                               include_padding=False):
    """SPEC 3.2: "Each incoming value divided by its window's divisor is added to every real
    element of that window." Returns a dict: input coordinate -> list of (dy value as a float,
    divisor), every window that covers that element, in flat order of dy."""
    dy = np.asarray(dy)
    g = Geometry(input_sizes, window, strides, start, end, dilations, dy.shape[2:])
    assert dy.shape == g.out_sizes, (dy.shape, g.out_sizes)
    terms = {}
    for n, c, o in g.positions():
        win = g.window_of(o)
        d = divisor(win, include_padding)
        for kind, xs in win:
            if kind == REAL:        # a real element implies d >= 1
                terms.setdefault((n, c) + xs, []).append((float(dy[(n, c) + o]), d))
    return terms


def average_pooling_grad_check(got, dy, window, input_sizes, strides=1, start=0, end=0,
                               dilations=1, include_padding=False):
    """Assert SPEC 5's bound element by element: |y - y_exact| <= n * 2^-23 * sum|t_i| + one
    ulp of the output type, with t_i = dy_i / d_i the n terms added to that element (our
    reading of "n summed terms x_i and divisor d" when every term has its own divisor), and
    y_exact their exact sum. Elements no window reaches are 0 (sign not checked: SPEC 3.2 does
    not say where the sum starts). A non-finite exact result must be met exactly (IEEE
    arithmetic gives it whatever the order)."""
    dy = np.asarray(dy)
    got = np.asarray(got)
    assert got.shape == tuple(input_sizes), (got.shape, input_sizes)
    assert got.dtype == dy.dtype, (got.dtype, dy.dtype)
    terms = average_pooling_grad_terms(dy, window, input_sizes, strides, start, end, dilations,
                                       include_padding)
    for idx in np.ndindex(got.shape):
        g = float(got[idx])
        ts = terms.get(idx, [])
        if not ts:
            assert g == 0.0, (idx, g)
            continue
        vals = [v for v, _ in ts]
        if not all(math.isfinite(v) for v in vals):
            want, _ = _exact_sum(vals)
            if math.isnan(want):
                assert is_canonical_nan(got[idx]), (idx, got[idx], want)
            else:
                assert g == want, (idx, g, want)
            continue
        exact = sum((Fraction(v) / d for v, d in ts), Fraction(0))
        abs_sum = sum((abs(Fraction(v)) / d for v, d in ts), Fraction(0))
        want = float(exact)
        with np.errstate(over="ignore"):
            if got.dtype.type(want) == got[idx]:
                continue        # the correctly rounded result (inf included) always passes
        bound = Fraction(len(ts)) * Fraction(2) ** -23 * abs_sum + Fraction(
            _ulp(got.dtype, want))
        assert math.isfinite(g) and abs(Fraction(g) - exact) <= bound, (
            idx, g, want, float(bound), ts)


# --- LP_POOLING (SPEC 3.6) --------------------------------------------------------------------

def lp_exact(vals, p):
    """SPEC 3.6: (sum |x|^P)^(1/P) over the real elements: NaN if some x is NaN, else inf if
    some |x| is inf, else the true value as a 60-digit Decimal (0 for an empty window)."""
    if any(math.isnan(v) for v in vals):
        return math.nan
    if any(math.isinf(v) for v in vals):
        return math.inf
    s = sum((abs(Fraction(v)) ** p for v in vals), Fraction(0))
    if s == 0:
        return decimal.Decimal(0)
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        ctx.Emax = 10**6
        ctx.Emin = -10**6
        q = decimal.Decimal(s.numerator) / decimal.Decimal(s.denominator)
        return q if p == 1 else q ** (decimal.Decimal(1) / decimal.Decimal(p))


def lp_pooling_windows(x, window, p, strides=1, start=0, end=0, dilations=1, out_spatial=None):
    """For every output position (flat order): (output index, list of real element values)."""
    x = np.asarray(x)
    g = Geometry(x.shape, window, strides, start, end, dilations, out_spatial)
    out = []
    for n, c, o in g.positions():
        vals = [float(x[(n, c) + xs]) for kind, xs in g.window_of(o) if kind == REAL]
        out.append(((n, c) + o, vals))
    return g.out_sizes, out


def lp_pooling_check(y, x, window, p, strides=1, start=0, end=0, dilations=1,
                     out_spatial=None):
    """Assert SPEC 3.6 / 5: NaN, inf and 0 (+0.0: the result is m * (...)^(1/P), m >= 0) met
    exactly; otherwise within one ulp of the output type of the true value for FLOAT16/FLOAT32
    (an infinity is accepted when the true value is above the type's largest finite value), and
    within n * 2^-23 * sum|x_i| + one ulp for FLOAT64 (SPEC 5's bound with d = 1)."""
    x = np.asarray(x)
    y = np.asarray(y)
    sizes, wins = lp_pooling_windows(x, window, p, strides, start, end, dilations, out_spatial)
    assert y.shape == sizes, (y.shape, sizes)
    assert y.dtype == x.dtype, (y.dtype, x.dtype)
    fi = np.finfo(y.dtype)
    for idx, vals in wins:
        got = y[idx]
        g = float(got)
        want = lp_exact(vals, p)
        if isinstance(want, float):         # NaN or inf
            if math.isnan(want):
                assert is_canonical_nan(got), (idx, got, vals)
            else:
                assert g == math.inf, (idx, g, vals)
            continue
        if want == 0:
            assert g == 0 and not np.signbit(got), (idx, g, vals)
            continue
        assert not math.isnan(g) and g >= 0, (idx, g, vals)
        if math.isinf(g):
            assert want > decimal.Decimal(float(fi.max)), (idx, g, want, vals)
            continue
        wf = float(want)
        if y.dtype == np.float64:
            tol = Fraction(len(vals)) * Fraction(2) ** -23 * sum(
                (abs(Fraction(v)) for v in vals), Fraction(0)) + Fraction(_ulp(y.dtype, wf))
        else:
            tol = Fraction(_ulp(y.dtype, wf))
        err = abs(Fraction(g) - Fraction(want))
        assert err <= tol, (idx, g, str(want), float(tol), p, vals)


# --- MAX_UNPOOLING (SPEC 3.7) -----------------------------------------------------------------

def max_unpooling(x, indices, output_sizes):
    """SPEC 3.7: output starts at 0; each input element, in flat input order, is written (bits
    copied) at flat position indices[i] of the output, so a later element wins; the "no
    element" value of the index type (2^32-1 UINT32, 2^64-1 UINT64, -1 INT64; SPEC 3.4) is
    skipped. Raises ValueError for any other index outside [0, output size) - before writing."""
    x = np.asarray(x)
    indices = np.asarray(indices)
    assert x.shape == indices.shape
    xb = bits(x).reshape(-1)
    ib = [int(v) for v in np.ascontiguousarray(indices).reshape(-1)]
    total = int(np.prod(output_sizes))
    skip = NO_ELEMENT.get(indices.dtype)
    for v in ib:
        if v != skip and not 0 <= v < total:
            raise ValueError(f"index {v} outside [0, {total})")
    out = np.zeros(total, xb.dtype)
    for i, v in enumerate(ib):
        if v == skip:
            continue
        out[v] = xb[i]
    return out.view(x.dtype).reshape(tuple(output_sizes))


# --- ROI_POOLING (SPEC 3.8, 7) ------------------------------------------------------------

def round_half_away(v):
    """Round a float to the nearest integer, halves away from zero, exactly."""
    f = Fraction(v)
    r = math.floor(abs(f) + Fraction(1, 2))
    return r if f >= 0 else -r


def roi_corners(roi, spatial_scale):
    """SPEC 3.8 and 7: SpatialScale rounded to float32 first; each corner scaled in float64
    (one rounding of the product) and rounded half away from zero. The batch index is
    truncated toward zero. Returns (batch, x1', y1', x2', y2')."""
    scale = float(np.float32(spatial_scale))
    b = float(roi[0])
    assert not math.isnan(b)
    corners = [round_half_away(float(c) * scale) for c in roi[1:]]
    return (math.trunc(b), *corners)


def roi_pooling(x, rois, spatial_scale, pooled_size):
    """SPEC 3.8: region RH = y2' - y1' + 1, RW = x2' - x1' + 1 (at least 1: an inverted box has
    size 1); bin (ph, pw) covers rows [floor(ph*RH/PH), ceil((ph+1)*RH/PH)) + y1' and columns
    likewise (exact integer arithmetic), clipped to the input; result = max over the bin by
    SPEC 3.4's rules (ties: lowest flat index, whose bits are copied; NaN: the lowest-index
    NaN), +0.0 for an empty bin. Raises ValueError for a batch index outside [0, N)."""
    x = np.asarray(x)
    rois = np.asarray(rois).reshape(-1, 5)
    N, C, H, W = x.shape
    PH, PW = spatial_tuple(pooled_size, 2)
    xb = bits(x)
    out = np.zeros((rois.shape[0], C, PH, PW), xb.dtype)
    for r in range(rois.shape[0]):
        b, x1, y1, x2, y2 = roi_corners(rois[r], spatial_scale)
        if not 0 <= b < N:
            raise ValueError(f"batch index {b} outside [0, {N})")
        RH = max(y2 - y1 + 1, 1)
        RW = max(x2 - x1 + 1, 1)
        for c in range(C):
            for ph in range(PH):
                h0 = max((ph * RH) // PH + y1, 0)
                h1 = min(-((-(ph + 1) * RH) // PH) + y1, H)
                for pw in range(PW):
                    w0 = max((pw * RW) // PW + x1, 0)
                    w1 = min(-((-(pw + 1) * RW) // PW) + x1, W)
                    best = None         # (value, (h, w)); row-major = ascending flat index
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            v = float(x[b, c, h, w])
                            if best is not None and math.isnan(best[0]):
                                break
                            if best is None or math.isnan(v) or v > best[0]:
                                best = (v, (h, w))
                    if best is not None:
                        out[r, c, ph, pw] = xb[(b, c) + best[1]]
    return out.view(x.dtype)
