"""Compiled pooling kernels (SPEC 3.1, 3.3, 3.4, 3.5): one N-D kernel per operation.

Layout of the work: the output is cut into *rows* (every output dimension but the last);
rows are shared out among threads (``_threads.parallel``), each writing only its own
outputs, so the result never depends on the thread count. A row is a plane (the first two
dimensions) and a *position* (the other spatial coordinates but the last); what the planes
share per position, the input offsets of the real outer-window elements in row-major order,
is listed once per call (``_row_table``). Then for each of them and each offset ``j`` of the last
dimension, a tight loop runs over the output positions whose element is real. Every output
position thus visits its window in row-major offset order: ascending flat input index, the
order the tie rule and the fixed summation order of SPEC 5 need. Validity is carried
explicitly, never by a sentinel value.

Rows are short (tens of outputs), so what a row costs besides its loops matters: helpers
get borrowed arrays (``_nrt``), whose reference counts the threads do not fight over, and
max pooling compares integer keys: where the input's rows are evenly spaced, whole blocks
of rows along the last dimension in one loop (``_flat_rows``, indices too, and the gradient's
argmaxes), else, for values alone, row by row, columns first (``_keys_row``). With a unit
window along a contiguous last dimension (channels-last data), a row is the element-wise
best of whole input rows, compared as stored (``_whole_rows``, indices too). Sums keep
their order (SPEC 5): a pass adds up to three window offsets of a row, or three outer
elements' worth of them, to each output in turn (``_row_sums``). float16 and quantized rows
are staged first, each input row once (``_staged``): converted, or less its zero point, and
padded with zeros, so that every output of a row reads its whole window from the stage.
Quantized pooling with unit strides, whose integer sums may go in any order, goes a plane at
a time instead, one dimension after another (``planes``).
"""

from __future__ import annotations

import sys
import threading
from functools import lru_cache

import numpy as np
from numba import njit, types
from numba.extending import overload

from . import _cache  # noqa: F401  (routes the on-disk cache to the user cache directory)
from ._coords import advance as _advance
from ._coords import decode as _decode
from ._half import half_tag, is_half, load, narrow, store, value_array, widen
from ._nrt import borrowed as _b
from ._stream import BIG, fence, prefetch, stream_copy
from ._threads import parallel

_OPTS = dict(cache=True, nogil=True)
TABLE = 1 << 22         # the most outer-window offsets a call tabulates (32 MiB)
EMPTY_INDEX = np.uint64(2**64 - 1)  # "no element": all ones, at either index width (``_put``)


@njit(**_OPTS)
def _valid_range(q0, dilation, size, window):
    """Window offsets ``j`` with ``0 <= q0 + j*dilation < size``, as [lo, hi)."""
    lo = 0
    if q0 < 0:
        lo = (-q0 + dilation - 1) // dilation
    last = size - 1 - q0
    if last < 0:
        return 0, 0
    hi = min(window, last // dilation + 1)
    return lo, max(hi, lo)


@njit(**_OPTS)
def _out_range(j, size, out_size, stride, pad, dilation):
    """Output positions ``o`` whose element ``o*stride + j*dilation - pad`` is real."""
    shift = j * dilation - pad
    lo = 0
    if shift < 0:
        lo = (-shift + stride - 1) // stride
    if size - 1 - shift < 0:
        return 0, 0
    hi = min(out_size, (size - 1 - shift) // stride + 1)
    return lo, max(hi, lo)


@njit(**_OPTS)
def _window_ranges(insz, outsz, win, strd, pad, dil):
    """``wr[0, i, o], wr[1, i, o]``: the window offsets [lo, hi) of output ``o`` along
    spatial dimension ``i`` that land on real elements (computed once per call, so rows do
    no divisions)."""
    k = win.shape[0]
    most = 1
    for i in range(k):
        most = max(most, outsz[2 + i])
    wr = np.zeros((2, k, most), np.int64)
    for i in range(k):
        for o in range(outsz[2 + i]):
            a, b = _valid_range(o * strd[i] - pad[i], dil[i], insz[2 + i], win[i])
            wr[0, i, o] = a
            wr[1, i, o] = b
    return wr


@njit(inline="always", **_OPTS)
def _outer(coords, wr, xs, win, strd, pad, dil, pitch, offs, flats, scratch):
    """List the real outer-window elements of a row: element offsets and flat-index parts,
    row-major over the outer spatial offsets (``wr``: ``_window_ranges``). Returns how
    many."""
    k = win.shape[0]
    count = 1
    lo = scratch[0]
    hi = scratch[1]
    for i in range(k - 1):
        a, b = wr[0, i, coords[2 + i]], wr[1, i, coords[2 + i]]
        lo[i] = a
        hi[i] = b
        count *= b - a
    if count == 0:
        return 0
    if k == 1:
        offs[0] = 0
        flats[0] = 0
        return 1
    j = scratch[2]
    j[:] = lo
    for t in range(count):
        off = 0
        flat = 0
        for i in range(k - 1):
            x = coords[2 + i] * strd[i] + j[i] * dil[i] - pad[i]
            off += x * xs[2 + i]
            flat += x * pitch[2 + i]
        offs[t] = off
        flats[t] = flat
        i = k - 2                                  # odometer, last outer dimension fastest
        while i >= 0:
            j[i] += 1
            if j[i] < hi[i]:
                break
            j[i] = lo[i]
            i -= 1
    return count


@njit(**_OPTS)
def _last_dim(insz, outsz, win, strd, pad, dil):
    """What every row shares along the last dimension: for each window offset ``j`` the
    output range ``[lo[j], hi[j])`` whose element is real, and for each output the first
    such offset (-1: none). Computed once per call, so rows do no divisions."""
    rank = insz.shape[0]
    k = rank - 2
    wk, olast = win[k - 1], outsz[rank - 1]
    lo = np.empty(wk, np.int64)
    hi = np.empty(wk, np.int64)
    first = np.full(olast, -1, np.int64)
    for j in range(wk - 1, -1, -1):
        a, b = _out_range(j, insz[rank - 1], olast, strd[k - 1], pad[k - 1], dil[k - 1])
        lo[j] = a
        hi[j] = b
        for o in range(a, b):
            first[o] = j
    return lo, hi, first


@njit(**_OPTS)
def _nones(jfirst):
    """The outputs along the last dimension whose windows hold no real element."""
    n = 0
    for j in jfirst:
        n += j < 0
    out = np.empty(n, np.int64)
    n = 0
    for o in range(jfirst.shape[0]):
        if jfirst[o] < 0:
            out[n] = o
            n += 1
    return out


@njit(**_OPTS)
def _rows(outsz, win):
    """Rows (every output dimension but the last) and the outer window's size."""
    rank = outsz.shape[0]
    rows = 1
    for d in range(rank - 1):
        rows *= outsz[d]
    nouter = 1
    for i in range(win.shape[0] - 1):
        nouter *= win[i]
    return rows, nouter


@njit(**_OPTS)
def _columns(jlo, jhi, sk, pk, dk):
    """The input columns (last dimension) that some window of a row reads, as [c0, c1)."""
    c0, c1 = -1, 0
    for j in range(jlo.shape[0]):
        if jlo[j] < jhi[j]:
            a = jlo[j] * sk + j * dk - pk
            c0 = a if c0 < 0 else min(c0, a)
            c1 = max(c1, (jhi[j] - 1) * sk + j * dk - pk + 1)
    return max(c0, 0), c1


@njit(inline="always", **_OPTS)
def _wins(v, b, t, tb):
    """Whether candidate ``v`` (from outer window element ``t``) replaces the best ``b`` (from
    ``tb``), for candidates not visited in window order: greater; equal (−0.0 and +0.0 too)
    and from an earlier outer element; a NaN over a non-NaN, or over a later NaN."""
    return (v > b) | ((v == b) & (t < tb)) | ((v != v) & ((b == b) | (t < tb)))


@njit(inline="always", **_OPTS)
def _copy_pass(xb, base, step, u0, u1, tag, cv, ct, d):
    """Row ``d`` of the column scratch = the input row at ``base`` (outer element 0)."""
    for x in range(u0, u1):
        cv[d, x] = load(xb[base + x * step], tag)
        ct[d, x] = 0


@njit(inline="always", **_OPTS)
def _column_pass(xb, base, step, u0, u1, tag, t, cv, ct, s, d):
    """Row ``d`` of the column scratch = the better of row ``s`` and the input row at
    ``base`` (outer element ``t``), per column: a later element wins only if greater, or a
    NaN over a non-NaN."""
    for x in range(u0, u1):
        v = load(xb[base + x * step], tag)
        c, tc = cv[s, x], ct[s, x]
        take = (v > c) | ((v != v) & (c == c))
        cv[d, x] = v if take else c
        ct[d, x] = t if take else tc


@njit(inline="always", **_OPTS)
def _first_pass(cv, ct, c, e0, step, ulo, uhi, bv, bt, bj):
    """Row 0 of the output scratch = the columns ``e0 + o*step`` of column row ``c``
    (last-dimension offset 0), for the outputs ``o`` in [ulo, uhi)."""
    for o in range(ulo, uhi):
        x = e0 + o * step
        bv[0, o] = cv[c, x]
        bt[0, o] = ct[c, x]
        bj[0, o] = 0


@njit(inline="always", **_OPTS)
def _edge(cv, ct, c, o, jfirst, sk, pk, dk, bv, bt, bj):
    """Row 0 of the output scratch at output ``o`` from its first real offset, if any."""
    j = jfirst[o]
    if j >= 0:
        x = o * sk + j * dk - pk
        bv[0, o], bt[0, o], bj[0, o] = cv[c, x], ct[c, x], j


@njit(inline="always", **_OPTS)
def _output_pass(cv, ct, c, e0, step, ulo, uhi, j, bv, bt, bj, s, d):
    """Row ``d`` of the output scratch = the better of row ``s`` and the columns
    ``e0 + o*step`` of column row ``c`` (last-dimension offset ``j``), for the outputs
    ``o`` in [ulo, uhi)."""
    for o in range(ulo, uhi):
        x = e0 + o * step
        v, t = cv[c, x], ct[c, x]
        b, tb, jb = bv[s, o], bt[s, o], bj[s, o]
        take = _wins(v, b, t, tb)
        bv[d, o] = v if take else b
        bt[d, o] = t if take else tb
        bj[d, o] = j if take else jb


@njit(**_OPTS)
def _separable(xb, xrow, xsk, offs, count, olast, wk, sk, pk, dk, jlo, jhi, jfirst, c0, c1,
               tag, cv, ct, bv, bt, bj):
    """``_max_row`` for a separable row (see there); returns the row of ``bv``/``bt``/``bj``
    holding the result. Each pass reads one row of its two-row scratch and writes the other
    (a select writing back where it read becomes masked loads and stores, several times
    slower). Unit input strides and output strides 1 and 2 get loops of their own
    (constant strides vectorise)."""
    u0, u1 = np.uint64(c0), np.uint64(c1)
    step = np.uint64(xsk)
    one = np.uint64(1)
    base = np.uint64(xrow + offs[0])
    if xsk == 1:
        _copy_pass(xb, base, one, u0, u1, tag, cv, ct, 0)
    else:
        _copy_pass(xb, base, step, u0, u1, tag, cv, ct, 0)
    c = 0
    for t in range(1, count):
        base = np.uint64(xrow + offs[t])
        if xsk == 1:
            _column_pass(xb, base, one, u0, u1, tag, np.int32(t), cv, ct, c, 1 - c)
        else:
            _column_pass(xb, base, step, u0, u1, tag, np.int32(t), cv, ct, c, 1 - c)
        c = 1 - c
    # offset 0 where it is real, the other outputs from their first real offset; then the
    # other offsets
    ustep = np.uint64(sk)
    two = np.uint64(2)
    lo, hi = jlo[0], jhi[0]
    if sk == 2:
        _first_pass(cv, ct, c, np.uint64(-pk), two, np.uint64(lo), np.uint64(hi), bv, bt, bj)
    else:
        _first_pass(cv, ct, c, np.uint64(-pk), ustep, np.uint64(lo), np.uint64(hi), bv, bt, bj)
    for o in range(min(lo, olast)):
        _edge(cv, ct, c, o, jfirst, sk, pk, dk, bv, bt, bj)
    for o in range(max(hi, lo), olast):
        _edge(cv, ct, c, o, jfirst, sk, pk, dk, bv, bt, bj)
    b = 0
    for jj in range(1, wk):
        e0 = np.uint64(jj * dk - pk)
        lo, hi = jlo[jj], jhi[jj]
        ulo, uhi = np.uint64(lo), np.uint64(hi)
        j32 = np.int32(jj)
        if sk == 2:
            _output_pass(cv, ct, c, e0, two, ulo, uhi, j32, bv, bt, bj, b, 1 - b)
        elif sk == 1:
            _output_pass(cv, ct, c, e0, one, ulo, uhi, j32, bv, bt, bj, b, 1 - b)
        else:
            _output_pass(cv, ct, c, e0, ustep, ulo, uhi, j32, bv, bt, bj, b, 1 - b)
        for o in range(min(lo, olast)):         # the outputs the pass skipped
            bv[1 - b, o], bt[1 - b, o], bj[1 - b, o] = bv[b, o], bt[b, o], bj[b, o]
        for o in range(max(hi, lo), olast):
            bv[1 - b, o], bt[1 - b, o], bj[1 - b, o] = bv[b, o], bt[b, o], bj[b, o]
        b = 1 - b
    return b


@njit(**_OPTS)
def _max_row(xb, xrow, xsk, offs, count, olast, wk, sk, pk, dk, jlo, jhi, jfirst, c0, c1,
             tag, want_wj, cv, ct, bv, bt, bj):
    """The winners of one output row's windows (``count`` >= 1 real outer elements), left
    in row ``r`` (returned) of the scratch (``_max_scratch``): ``bv[r, o]`` the value as
    compared (bits intact), ``bt[r, o]`` its outer element number and ``bj[r, o]`` its
    last-dimension offset, for every output with a real element (``jfirst[o] >= 0``).
    ``want_wj``: the general path tracks ``bt``/``bj`` only when asked.

    Separable evaluation, unless the row's windows read few of its columns: first each input
    column's maximum over the outer elements (won by the element in ``ct``; contiguous loads
    that vectorise), then each output's maximum over its columns, equal values (which may
    differ in bits: −0.0 and +0.0, NaNs) going to the earlier outer element, then the
    earlier column: the winner of visiting the whole window in row-major offset order, as
    the SPEC's tie and NaN rules need. (Taking the columns second would need no tie-break
    but would repeat the strided, costlier part for every outer element.)

    Otherwise (the general path) every window offset makes one strided pass over the
    outputs, in row-major order, strict comparisons keeping the first winner.

    Indices are unsigned in the inner loops: Numba's wraparound of negative (signed)
    indices would keep them from being vectorised; all are >= 0 there. ``bt``/``bj`` are
    int32: an outer window of 2^31 elements would need far more memory for ``offs``."""
    if c1 - c0 <= 2 * wk * olast:
        return _separable(xb, xrow, xsk, offs, count, olast, wk, sk, pk, dk, jlo, jhi,
                          jfirst, c0, c1, tag, cv, ct, bv, bt, bj)
    base = xrow + offs[0]           # each window starts from its first real element
    for o in range(olast):
        j = jfirst[o]
        if j >= 0:
            bv[0, o] = load(xb[base + (o * sk + j * dk - pk) * xsk], tag)
        bt[0, o] = 0
        bj[0, o] = max(j, 0)
    ustep = np.uint64(sk * xsk)
    for t in range(count):
        base = xrow + offs[t]
        t32 = np.int32(t)
        for jj in range(wk):
            u0 = np.uint64(base + (jj * dk - pk) * xsk)
            ulo, uhi = np.uint64(jlo[jj]), np.uint64(jhi[jj])
            j32 = np.int32(jj)
            if want_wj:
                for o in range(ulo, uhi):
                    v = load(xb[u0 + o * ustep], tag)
                    b = bv[0, o]
                    if (v > b) | ((v != v) & (b == b)):
                        bv[0, o] = v
                        bt[0, o] = t32
                        bj[0, o] = j32
            else:
                for o in range(ulo, uhi):
                    v = load(xb[u0 + o * ustep], tag)
                    b = bv[0, o]
                    bv[0, o] = v if (v > b) | ((v != v) & (b == b)) else b
    return 0


# --- on integer keys --------------------------------------------------------------------
# Among equal values, only −0.0/+0.0 and NaNs differ in their bits. So a row without −0.0
# and NaN (``_odd``) is reduced on integer keys (a float's sign-magnitude bits made two's
# complement keep its order: for float16 too, at 16 lanes where float32 would give 8),
# whose equal keys are equal bits (the first of them is kept where indices are wanted); a
# row holding one goes the tie-tracking way. Integers are their own keys.

def _key(b, kspec):  # pragma: no cover - replaced by the overload inside kernels
    raise NotImplementedError


@overload(_key)
def _key_impl(b, kspec):
    """Float bits ``b`` (as a signed integer) <-> their ordered key (an involution);
    integers (``kspec`` None) unchanged. The constants are the width's, so the arithmetic
    stays at that width (and vectorises at that many lanes)."""
    if isinstance(kspec, types.NoneType):
        return lambda b, kspec: b
    kt = getattr(np, f"int{b.bitwidth}")
    sh, mx = kt(b.bitwidth - 1), kt(np.iinfo(kt).max)
    return lambda b, kspec: kt(b ^ ((b >> sh) & mx))


def _negzero(k, kspec):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_negzero)
def _negzero_impl(k, kspec):
    """Whether key ``k`` is −0.0's (−1)."""
    if isinstance(kspec, types.NoneType):
        return lambda k, kspec: False
    neg = getattr(np, f"int{k.bitwidth}")(-1)
    return lambda k, kspec: k == neg


def _nans(hi, lo, kspec):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_nans)
def _nans_impl(hi, lo, kspec):
    """Whether keys between ``lo`` and ``hi`` (the largest and smallest of some) hold a
    NaN's (beyond ±∞'s keys): with ``_negzero``, ``_odd`` of each of them, from two
    reductions instead of two comparisons an element."""
    if isinstance(kspec, types.NoneType):
        return lambda hi, lo, kspec: False
    kt = getattr(np, f"int{hi.bitwidth}")
    inf = {16: 0x7C00, 32: 0x7F800000, 64: 0x7FF0000000000000}[hi.bitwidth]
    top, bottom = kt(inf), kt(-inf - 1)
    return lambda hi, lo, kspec: (hi > top) | (lo < bottom)


@njit(inline="always", **_OPTS)
def _odd(k, kspec):
    """Whether key ``k`` is −0.0's (−1) or a NaN's (beyond ±∞'s keys)."""
    return _negzero(k, kspec) | _nans(k, k, kspec)


@njit(inline="always", **_OPTS)
def _keep(hk, hj, ht, i, v, j, t, first):
    """``hk[i] = v`` (``first``) or the larger of them; with positions tracked (``hj``, and
    ``ht`` if not None, arrays) ``v``'s own (``j``, ``t``) go along where ``v`` wins, which
    it does only when strictly larger: the earlier of equal keys stays. (None arguments
    prune their branches at compile time.)"""
    if hj is None:
        hk[i] = v if first else max(hk[i], v)
    else:
        # (every load unconditional, so that the loop vectorises: selects, no branches)
        h, hjo = hk[i], hj[i]
        w = first | (v > h)
        hk[i] = v if w else h
        hj[i] = j if w else hjo
        if ht is not None:
            hto = ht[i]
            ht[i] = t if w else hto


@njit(inline="always", **_OPTS)
def _jat(hj, i):
    """``hj[i]``, or 0 where positions are not tracked (``hj`` None)."""
    if hj is None:
        return 0
    return hj[i]


@njit(inline="always", **_OPTS)
def _put(ib, at, v):
    """Index ``v`` into ``ib``: a pair of 32- and 64-bit index buffers, the caller's and an
    empty one, so that one compiled kernel serves both widths (``v`` is cast to the width:
    "no element", all ones, stays all ones)."""
    if ib[1].shape[0] > 0:
        ib[1][at] = v
    else:
        ib[0][at] = v


def _like(proto, n):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_like)
def _like_impl(proto, n):
    """``np.empty(n)`` of ``proto``'s type, or None for a None ``proto``."""
    if isinstance(proto, types.NoneType):
        return lambda proto, n: None
    return lambda proto, n: np.empty(n, proto.dtype)


# Scratch arrays are indexed, never sliced: a view (or an array iterator) is a reference
# count update, and updates of arrays the threads share contend for one cache line.

@njit(inline="always", **_OPTS)
def _pairs(xi, base, i0, i1, kspec, ck, half, first):
    """Columns 2i and 2i+1 of the input row at ``base`` into the even and odd halves of
    ``ck`` (``first``) or their maxima with what is there."""
    odd = False
    two, one = np.uint64(2), np.uint64(1)
    if first:
        for i in range(i0, i1):
            a = _key(xi[base + i * two], kspec)
            b = _key(xi[base + i * two + one], kspec)
            ck[i] = a
            ck[half + i] = b
            odd |= _odd(a, kspec) | _odd(b, kspec)
    else:
        for i in range(i0, i1):
            a = _key(xi[base + i * two], kspec)
            b = _key(xi[base + i * two + one], kspec)
            ck[i] = max(ck[i], a)
            ck[half + i] = max(ck[half + i], b)
            odd |= _odd(a, kspec) | _odd(b, kspec)
    return odd


@njit(inline="always", **_OPTS)
def _cols(xi, base, step, u0, u1, kspec, ck, first):
    """Columns [u0, u1) of the input row at ``base`` into ``ck`` (``first``) or their maxima
    with what is there."""
    odd = False
    if first:
        for u in range(u0, u1):
            a = _key(xi[base + u * step], kspec)
            ck[u] = a
            odd |= _odd(a, kspec)
    else:
        for u in range(u0, u1):
            a = _key(xi[base + u * step], kspec)
            ck[u] = max(ck[u], a)
            odd |= _odd(a, kspec)
    return odd


@njit(inline="always", **_OPTS)
def _fold(ck, shift, step, ulo, uhi, bk):
    for o in range(ulo, uhi):
        bk[o] = max(bk[o], ck[o * step + shift])


@njit(**_OPTS)
def _keys_row(xi, xrow, xsk, offs, count, olast, wk, sk, pk, dk, jlo, jhi, c0, c1, kspec,
              kmin, ck, bk):
    """The maxima of one output row (``count`` >= 1 real outer elements) as keys in ``bk``,
    or False where the row reads a −0.0 or NaN (``bk`` is then undefined).

    Columns first: each column's maximum over the outer elements (contiguous loads), then
    each output's over its columns. Stride 2 (the common downsampling) keeps the column
    maxima split into even columns (``ck[i]``) and odd ones (``ck[half + i]``), so both
    passes run on contiguous keys."""
    odd = False
    one = np.uint64(1)
    if sk == 2 and xsk == 1:
        half = ck.shape[0] // 2
        i0, i1 = np.uint64(c0 >> 1), np.uint64(c1 >> 1)
        for t in range(count):
            base = np.uint64(xrow + offs[t])
            odd |= _pairs(xi, base, i0, i1, kspec, ck, np.uint64(half), t == 0)
            if c1 & 1:                                      # a last, even column
                a = _key(xi[base + np.uint64(c1 - 1)], kspec)
                ck[i1] = a if t == 0 else max(ck[i1], a)
                odd |= _odd(a, kspec)
        if odd:
            return False
        for o in range(olast):
            bk[o] = kmin
        for jj in range(wk):
            e = jj * dk - pk
            shift = np.uint64((e >> 1) + (half if e & 1 else 0))
            _fold(ck, shift, one, np.uint64(jlo[jj]), np.uint64(jhi[jj]), bk)
        return True
    u0, u1 = np.uint64(c0), np.uint64(c1)
    for t in range(count):
        base = np.uint64(xrow + offs[t])
        if xsk == 1:
            odd |= _cols(xi, base, one, u0, u1, kspec, ck, t == 0)
        else:
            odd |= _cols(xi, base, np.uint64(xsk), u0, u1, kspec, ck, t == 0)
    if odd:
        return False
    for o in range(olast):
        bk[o] = kmin
    for jj in range(wk):
        shift = np.uint64(jj * dk - pk)
        ulo, uhi = np.uint64(jlo[jj]), np.uint64(jhi[jj])
        if sk == 1:
            _fold(ck, shift, one, ulo, uhi, bk)
        else:
            _fold(ck, shift, np.uint64(sk), ulo, uhi, bk)
    return True


@njit(inline="always", **_OPTS)
def _max_scratch(olast, ncols, xb, tag):
    """A row's scratch for ``_max_row``, two rows each (one pass reads, the next writes):
    column values and outer elements, output values, outer elements and last offsets
    (zeroed: entries no output reads may still be copied)."""
    cv = value_array((2, ncols), xb, tag)
    bv = value_array((2, olast), xb, tag)
    bv[:] = 0
    return (cv, np.zeros((2, ncols), np.int32), bv, np.zeros((2, olast), np.int32),
            np.zeros((2, olast), np.int32))


@njit(**_OPTS)
def _max_rows(r0, r1, xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win, strd, pad,
              dil, tag, empty_value, empty_index, want_values, want_indices, jlo, jhi, jfirst,
              nones, c0, c1, nouter, wr, xi, xw, yi, kspec, kmin, otab, ftab, ocnt, ytab,
              itab, flat, track):
    """Output rows [r0, r1) of ``max_pool_kernel`` (one thread's task). With a unit window
    along a contiguous last dimension (channels-last data), rows are element-wise maxima of
    whole input rows (``_whole_rows``, indices too). Else rows go by keys where they allow:
    in flat runs (``_flat_rows``; ``xw`` 1-byte keys as words or None, ``words``) where
    the rows are evenly spaced, with the winners' positions tracked for indices (``track``:
    None, or a one-element array of the key type holding its largest value, the most window
    positions a run may number); else, for values alone, row by row (``_keys_rows``). A
    block or row that reads a −0.0 or NaN, and rows with indices that are not evenly
    spaced, go the tie-tracking way (``_max_loop``)."""
    xb, xs, insz, pitch, yb, ys = _b(xb), _b(xs), _b(insz), _b(pitch), _b(yb), _b(ys)
    ist, outsz, win, strd, pad = _b(ist), _b(outsz), _b(win), _b(strd), _b(pad)
    ib = (_b(ib[0]), _b(ib[1]))
    dil, tag, jlo, jhi, jfirst, nones = _b(dil), _b(tag), _b(jlo), _b(jhi), _b(jfirst), _b(nones)
    wr, xi, yi, otab, ocnt, ytab = _b(wr), _b(xi), _b(yi), _b(otab), _b(ocnt), _b(ytab)
    ftab, itab = _b(ftab), _b(itab)
    rank = insz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    # whole windows over contiguous rows (``_whole_rows``: channels-last data)
    whole = (whole_ok(xb, kspec) and win[k - 1] == 1 and strd[k - 1] == 1 and pad[k - 1] == 0
             and xs[rank - 1] == 1 and nones.shape[0] == 0 and otab.shape[0] > 0
             and (ftab.shape[0] > 0 or not want_indices))
    coords = np.empty(rank, np.int64)
    scratch = np.empty((3, k), np.int64)
    offs = np.empty(nouter, np.int64)
    flats = np.empty(nouter, np.int64)
    cv, ct, bv, bt, bj = _max_scratch(olast, insz[rank - 1], xb, tag)
    ck = np.empty(2 * (insz[rank - 1] // 2 + 1), xi.dtype)
    bk = np.empty(olast, xi.dtype)
    by_keys = want_values and not want_indices and c1 - c0 <= 2 * win[k - 1] * olast
    ne = 1
    for i in range(k - 2):
        ne *= win[i]
    wm = win[max(k - 2, 0)]
    # tracked positions are numbered in the key type; with a unit window along the last
    # dimension (channels-last data), the tie-tracking rows are long, and faster
    tracks = (want_indices and track is not None and 1 < win[k - 1]
              and max(win[k - 1], ne * wm) <= _jat(track, 0))
    owp = _flat_pitch(xs, insz, outsz, win, strd, dil) if by_keys or tracks else 0
    wout = win[:k - 1]
    jv, nj = _live(jlo, jhi)
    hk = np.empty(max(flat, ne * wm * owp) if owp > 0 else 0, xi.dtype)
    ho, rf = np.empty(ne * wm, np.int64), np.empty(ne * wm, np.int64)
    hj, fj, ft = _like(track, hk.shape[0]), _like(track, olast), _like(track, olast)
    jk, tk = np.empty(nj, xi.dtype), np.empty(ne * wm, xi.dtype)
    for i in range(nj):
        jk[i] = jv[i]
    for i in range(ne * wm):
        tk[i] = i
    acc, nacc = np.empty((2, WHOLE), xb.dtype), np.empty(WHOLE, xb.dtype)
    n64, n32 = (olast, 0) if ib[1].shape[0] > 0 else (0, olast)
    iacc64, fcol64 = np.empty((2, WHOLE), np.uint64), np.empty(n64, np.uint64)
    iacc32, fcol32 = np.empty((2, WHOLE), np.uint32), np.empty(n32, np.uint32)
    r = r0
    while r < r1:
        if whole:
            if want_indices and ib[1].shape[0] > 0:
                r = _whole_rows(r, r1, xb, xo, xs, yb, yo, ys, ib[1], io, ist, outsz, otab,
                                ftab, ocnt, ytab, itab, pitch, kspec, empty_value, empty_index,
                                want_values, acc, nacc, iacc64, fcol64)
            elif want_indices:
                r = _whole_rows(r, r1, xb, xo, xs, yb, yo, ys, ib[0], io, ist, outsz, otab,
                                ftab, ocnt, ytab, itab, pitch, kspec, empty_value, empty_index,
                                want_values, acc, nacc, iacc32, fcol32)
            else:
                r = _whole_rows(r, r1, xb, xo, xs, yb, yo, ys, None, io, ist, outsz, otab,
                                ftab, ocnt, ytab, itab, pitch, kspec, empty_value, empty_index,
                                want_values, acc, nacc, iacc32, fcol32)
            if r == r1:
                break
            # a row whose windows hold a NaN
            _max_loop(r, r + 1, xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win,
                      strd, pad, dil, tag, empty_value, empty_index, want_values, want_indices,
                      jlo, jhi, jfirst, nones, c0, c1, wr, coords, scratch, offs, flats, cv, ct,
                      bv, bt, bj)
            r += 1
            continue
        if owp > 0:
            a, b = _flat_rows(r, r1, xi, xw, xo, xs, insz, yi, yb, yo, ys, outsz, win, wout, strd,
                              pad, dil, pitch, wr, jlo, jhi, jv, nj, nones, ytab, owp, kspec,
                              kmin, empty_value, hk, offs, flats, ho, bk, coords, scratch, hj,
                              fj, ft, jk, tk, rf, ib, io, ist, empty_index)
            if a == r1:
                break
            _max_loop(a, b, xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win,
                      strd, pad, dil, tag, empty_value, empty_index, want_values, want_indices,
                      jlo, jhi, jfirst, nones, c0, c1, wr, coords, scratch, offs, flats, cv, ct,
                      bv, bt, bj)
            r = b
            continue
        if track is None:                   # (the tracking kernels never go row by row)
            if by_keys:
                r = _keys_rows(r, r1, xi, xo, xs, yi, yb, yo, ys, outsz, win, strd, pad, dil,
                               pitch, wr, jlo, jhi, nones, c0, c1, otab, ocnt, ytab, kspec,
                               kmin, empty_value, ck, bk, coords, offs, flats, scratch)
                if r == r1:
                    break
        # the rows with indices, or the one a key pass could not do (it read a NaN or −0.0)
        last = r + 1 if by_keys else r1
        _max_loop(r, last, xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win,
                  strd, pad, dil, tag, empty_value, empty_index, want_values, want_indices,
                  jlo, jhi, jfirst, nones, c0, c1, wr, coords, scratch, offs, flats, cv, ct, bv,
                  bt, bj)
        r = last


@njit(**_OPTS)
def _row_table(xs, ys, outsz, win, strd, pad, dil, pitch, wr, most, want_flats):
    """Per row position (the spatial output coordinates but the last), what every plane
    (the first two dimensions) shares: ``ocnt[pos]`` its real outer-window elements, their
    input offsets ``otab[pos, :ocnt[pos]]`` (``_outer``), their flat-index parts
    ``ftab[pos, :ocnt[pos]]`` (``want_flats``, else empty) and ``ytab[pos]`` the output
    row's offset. ``otab`` and ``ftab`` are left empty when they would hold more than
    ``most`` offsets (rows then find theirs with ``_offsets``)."""
    rank = outsz.shape[0]
    k = rank - 2
    npos = 1
    for d in range(2, rank - 1):
        npos *= outsz[d]
    nouter = 1
    for i in range(k - 1):
        nouter *= win[i]
    otab = np.empty((npos if npos * nouter <= most else 0, nouter), np.int64)
    ftab = np.empty((otab.shape[0] if want_flats else 0, nouter), np.int64)
    ocnt = np.empty(npos, np.int64)
    ytab = np.zeros(npos, np.int64)
    coords = np.zeros(rank, np.int64)
    scratch = np.empty((3, k), np.int64)
    offs = np.empty(nouter, np.int64)
    flats = np.empty(nouter, np.int64)
    for pos in range(npos):
        _decode(pos, outsz, 2, rank - 1, coords)
        ocnt[pos] = _outer(coords, wr, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
        if otab.shape[0] > 0:
            otab[pos, :] = offs
        if ftab.shape[0] > 0:
            ftab[pos, :] = flats
        for d in range(2, rank - 1):
            ytab[pos] += coords[d] * ys[d]
    return otab, ftab, ocnt, ytab


@njit(inline="always", **_OPTS)
def _row_plane(r, npos, outsz):
    """Row ``r``'s position in ``_row_table`` and its plane ``(n, c)``."""
    plane = r // npos
    return r % npos, plane // outsz[1], plane % outsz[1]


@njit(inline="always", **_OPTS)
def _next_row(pos, n, c, npos, outsz):
    """The position and plane of the row after ``(pos, n, c)``."""
    pos += 1
    if pos == npos:
        pos = 0
        c += 1
        if c == outsz[1]:
            c = 0
            n += 1
    return pos, n, c


@njit(inline="always", **_OPTS)
def _offsets(pos, otab, outsz, wr, xs, win, strd, pad, dil, pitch, coords, offs, flats,
             scratch):
    """Row position ``pos``'s outer-window offsets: its ``otab`` row, or found now."""
    if otab.shape[0] > 0:
        return otab[pos]
    _decode(pos, outsz, 2, outsz.shape[0] - 1, coords)
    _outer(coords, wr, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
    return offs


@njit(**_OPTS)
def _keys_rows(r0, r1, xi, xo, xs, yi, yb, yo, ys, outsz, win, strd, pad, dil, pitch, wr, jlo,
               jhi, nones, c0, c1, otab, ocnt, ytab, kspec, kmin, empty_value, ck, bk, coords,
               offs, flats, scratch):
    """Rows [r0, r1) by keys (``_keys_row``), the geometry from ``_row_table``; returns the
    first row not done (r1, or a row that read a NaN or −0.0)."""
    ck, bk, coords, offs = _b(ck), _b(bk), _b(coords), _b(offs)
    flats, scratch = _b(flats), _b(scratch)
    rank = outsz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    xsk, ysk = xs[rank - 1], ys[rank - 1]
    npos = ocnt.shape[0]
    pos, n, c = _row_plane(r0, npos, outsz)
    xplane = xo + n * xs[0] + c * xs[1]
    yplane = yo + n * ys[0] + c * ys[1]
    uys = np.uint64(ysk)
    for r in range(r0, r1):
        count = ocnt[pos]
        yrow = yplane + ytab[pos]
        if count == 0:
            for o in range(olast):
                yb[yrow + o * ysk] = empty_value
        elif _keys_row(xi, xplane, xsk, _offsets(pos, otab, outsz, wr, xs, win, strd, pad, dil,
                                                 pitch, coords, offs, flats, scratch),
                       count, olast, wk, sk, pk, dk, jlo, jhi, c0, c1, kspec, kmin, ck, bk):
            uy = np.uint64(yrow)
            for o in range(np.uint64(olast)):
                yi[uy + o * uys] = _key(bk[o], kspec)
            for i in range(nones.shape[0]):
                yb[yrow + nones[i] * ysk] = empty_value
        else:
            return r
        pos, n, c = _next_row(pos, n, c, npos, outsz)
        if pos == 0:
            xplane = xo + n * xs[0] + c * xs[1]
            yplane = yo + n * ys[0] + c * ys[1]
    return r1


# --- whole windows over contiguous rows (channels innermost) -----------------------------
# With a unit window along a contiguous last dimension (channels-last data, re-cast), output
# row ``r`` is, element by element, the maximum of its outer elements' input rows. Visited
# in row-major order, a later element replaces the best so far only where greater (``_gt``:
# x86's ``maxps``), so the first of equal values stays, −0.0 and +0.0 too, as SPEC 3.4's tie
# rule wants. A NaN must win instead: values alone check for one (a NaN makes a sum a NaN)
# and send the row the tie-tracking way; with indices, the comparison takes it (``_takes``).

WHOLE = 64      # outputs per fixed-length loop: whole cache lines, read in address order


@njit(inline="always", **_OPTS)
def _gt(v, a):
    """``v`` where it is greater than ``a``, else ``a``."""
    return v if v > a else a


@njit(inline="always", **_OPTS)
def _takes(v, a):
    """Whether a later element ``v`` replaces the best ``a``: greater, or a NaN over a
    non-NaN (``not v <= a`` holds for both, and a NaN ``a`` stays)."""
    return (not v <= a) & (a == a)


@njit(inline="always", **_OPTS)
def _whole3(xb, a0, a1, a2, o0, n, first, acc, s, d, nacc, kspec):
    """For ``o`` in ``o0 + [0, n)``: the best of the elements at ``a0..a2 + o``, in that
    order, into ``acc[d, i]`` (``first``) or after ``acc[s, i]`` (a select writing back
    where it read would become a masked store, several times slower); with float data
    their sums (a NaN check) into ``nacc``."""
    for i in range(n):
        o = o0 + i
        v0, v1, v2 = xb[a0 + o], xb[a1 + o], xb[a2 + o]
        m = _gt(v2, _gt(v1, v0))
        acc[d, i] = m if first else _gt(m, acc[s, i])
        if kspec is not None:
            t = v0 + v1 + v2
            nacc[i] = t if first else nacc[i] + t


@njit(inline="always", **_OPTS)
def _whole3i(xb, a0, a1, a2, f0, f1, f2, o0, n, first, acc, iacc, s, d):
    """``_whole3`` with positions: ``iacc[d, i]`` the winner's flat-index part
    (``f0..f2``)."""
    for i in range(n):
        o = o0 + i
        v, f = xb[a0 + o], f0
        w = xb[a1 + o]
        t = _takes(w, v)
        v, f = (w if t else v), (f1 if t else f)
        w = xb[a2 + o]
        t = _takes(w, v)
        v, f = (w if t else v), (f2 if t else f)
        if not first:
            a, g = acc[s, i], iacc[s, i]
            t = _takes(v, a)
            v, f = (v if t else a), (f if t else g)
        acc[d, i] = v
        iacc[d, i] = f


@njit(**_OPTS)
def _whole_rows(r0, r1, xb, xo, xs, yb, yo, ys, ib, io, ist, outsz, otab, ftab, ocnt, ytab,
                itab, pitch, kspec, empty_value, empty_index, want_values, acc, nacc, iacc,
                fcol):
    """Rows [r0, r1) of a unit window along a contiguous last dimension, their outer
    elements' offsets (and flat-index parts) from ``_row_table``, up to ``WHOLE`` outputs
    at a time, three outer elements a pass into ``acc`` (and ``iacc``), then stored. ``ib``
    an index buffer (None: no indices; ``iacc`` and ``fcol``, the last dimension's length,
    of its type: 32-bit indices add in 32 bits), ``itab`` each row position's offset in it.
    Returns the first row not done: r1, or (values alone) a row whose windows hold a NaN."""
    xs, yb, ys, ist, outsz = _b(xs), _b(yb), _b(ys), _b(ist), _b(outsz)
    otab, ftab, ocnt, ytab, itab = _b(otab), _b(ftab), _b(ocnt), _b(ytab), _b(itab)
    acc, nacc, iacc, pitch, fcol = _b(acc), _b(nacc), _b(iacc), _b(pitch), _b(fcol)
    rank = outsz.shape[0]
    olast = outsz[rank - 1]
    uo, uys, uis = np.uint64(olast), np.uint64(ys[rank - 1]), np.uint64(ist[rank - 1])
    chunk, one = np.uint64(WHOLE), np.uint64(1)
    it = iacc.dtype.type
    for o in range(fcol.shape[0]):      # each output's column part of its flat index
        fcol[o] = it(o * pitch[rank - 1])
    npos = ocnt.shape[0]
    pos, n, c = _row_plane(r0, npos, outsz)
    for r in range(r0, r1):
        xplane = xo + n * xs[0] + c * xs[1]
        uy = np.uint64(yo + n * ys[0] + c * ys[1] + ytab[pos])
        ui = np.uint64(io + n * ist[0] + c * ist[1] + itab[pos])
        fo = it(n * pitch[0] + c * pitch[1])
        count = ocnt[pos]
        if count == 0:
            for o in range(uo):
                if want_values:
                    yb[uy + o * uys] = empty_value
                if ib is not None:
                    ib[ui + o * uis] = empty_index
        bad = False
        for q in range((uo + chunk - one) // chunk if count > 0 else np.uint64(0)):
            o0 = q * chunk
            m = min(chunk, uo - o0)
            for g in range(0, count, 3):
                g1, g2 = min(g + 1, count - 1), min(g + 2, count - 1)
                a0 = np.uint64(xplane + otab[pos, g])
                a1 = np.uint64(xplane + otab[pos, g1])
                a2 = np.uint64(xplane + otab[pos, g2])
                d = (g // 3) % 2
                if ib is None:
                    _whole3(xb, a0, a1, a2, o0, m, g == 0, acc, 1 - d, d, nacc, kspec)
                else:
                    _whole3i(xb, a0, a1, a2, it(ftab[pos, g]), it(ftab[pos, g1]),
                             it(ftab[pos, g2]), o0, m, g == 0, acc, iacc, 1 - d, d)
            d = ((count - 1) // 3) % 2          # the row holding the results
            if ib is None and kspec is not None:
                for i in range(m):
                    bad |= nacc[i] != nacc[i]
            if want_values and uys == one:      # (a unit step of its own: it vectorises)
                for i in range(m):
                    yb[uy + o0 + i] = acc[d, i]
            elif want_values:
                for i in range(m):
                    yb[uy + (o0 + i) * uys] = acc[d, i]
            if ib is not None and uis == one:
                for i in range(m):
                    ib[ui + o0 + i] = iacc[d, i] + (fo + fcol[o0 + i])
            elif ib is not None:
                for i in range(m):
                    ib[ui + (o0 + i) * uis] = iacc[d, i] + (fo + fcol[o0 + i])
        if bad:
            return r
        pos, n, c = _next_row(pos, n, c, npos, outsz)
    return r1


def whole_ok(xb, kspec):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(whole_ok)
def _whole_ok(xb, kspec):
    """Whether ``_whole_rows`` serves this data type (a compile-time constant): compared as
    it is stored, so float16 (its bit patterns, with keys) does not."""
    ok = isinstance(xb.dtype, types.Float) or isinstance(kspec, types.NoneType)
    return lambda xb, kspec: ok


# --- horizontal first over runs of rows -----------------------------------------------
# When the input's rows along the second-to-last dimension lie ``P`` elements apart and
# ``P`` is a whole number of window steps (``P = owp * S``, ``S`` the last dimension's step
# in elements), the element of output ``o`` in row ``h`` at offset ``j`` sits at
# ``(h*owp + o)*S + e_j``: linear in one flat index. So the last dimension's maxima of a
# whole run of rows are one long loop (short rows cost their loop set-up otherwise), and
# the rest of the window is a maximum over those rows' results. Values alone compare keys
# only, in any order. With indices, each step keeps the position of the first of equal
# keys (offsets, then window rows, both in ascending order): the row-major first, the
# lowest flat index, as SPEC 3.4 wants. The gradient takes its argmaxes from the same rows.

FLAT = 1 << 15          # the keys a task's runs may hold (in a core's L2 cache)


@njit(**_OPTS)
def _live(jlo, jhi):
    """The last dimension's window offsets that some output reads, and how many."""
    jv = np.empty(jlo.shape[0], np.int64)
    n = 0
    for j in range(jlo.shape[0]):
        if jlo[j] < jhi[j]:
            jv[n] = j
            n += 1
    return jv, n


@njit(**_OPTS)
def _flat_pitch(xs, insz, outsz, win, strd, dil):
    """``owp`` (the flat index's row pitch) where rows go the flat way, else 0: unit steps
    along the last dimension, rows a whole number of steps apart, and along the
    second-to-last dimension windows that leave no row between them unread (so a run reads
    no row for nothing)."""
    rank = insz.shape[0]
    k = rank - 2
    if k < 2 or xs[rank - 1] != 1 or dil[k - 2] != 1 or strd[k - 2] > win[k - 2]:
        return 0
    step, pitch = strd[k - 1], xs[rank - 2]
    if pitch <= 0 or pitch % step != 0 or pitch // step < outsz[rank - 1]:
        return 0
    return pitch // step


def _halves(w):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_halves)
def _halves_impl(w):
    """A word's two keys, in memory order (little-endian: the low half first)."""
    kt = getattr(np, f"{'' if w.signed else 'u'}int{w.bitwidth // 2}")
    sh = getattr(np, str(w))(w.bitwidth // 2)
    return lambda w: (kt(w), kt(w >> sh))


@njit(inline="always", **_OPTS)
def _three(xi, xw, wq, half, carry, prev, base, g, step, d1, d2, kspec):
    """The keys of the elements at ``base + g*step`` plus 0, ``d1`` and ``d2``, and the
    third again (the next ``g``'s ``prev``). With ``carry`` (step 2, distances 1 and 2)
    the first is ``prev``, the previous ``g``'s third, so that the loads left are pairs
    of neighbours; with words ``xw`` (not None; the same window) all three come from words
    ``wq + g`` and the next (``half``: the first element is its high half). Either lets
    neighbouring ``g`` load whole vectors where the strided third element would be
    gathered one lane at a time."""
    if xw is not None:
        lo, hi = _halves(xw[wq + g])
        lo2, hi2 = _halves(xw[wq + g + np.uint64(1)])
        if half == 0:
            return _key(lo, kspec), _key(hi, kspec), _key(lo2, kspec), prev
        return _key(hi, kspec), _key(lo2, kspec), _key(hi2, kspec), prev
    p = base + g * step
    c = _key(xi[p + d2], kspec)
    if carry:
        return prev, _key(xi[p + d1], kspec), c, c
    return _key(xi[p], kspec), _key(xi[p + d1], kspec), c, c


@njit(inline="always", **_OPTS)
def _run3(xi, xw, wq, half, carry, base, step, d1, d2, g0, g1, kspec, hk, first, hj, j0, j1,
          j2):
    """``hk[g]`` (``first``) or its maximum with: the largest key of the elements at
    ``base + g*step`` plus 0, ``d1`` and ``d2`` (window offsets ``j0..j2``, kept in ``hj``
    where tracked: ``_keep``), for ``g`` in [g0, g1); whether one of them is −0.0 or a NaN.
    (Constant steps and distances let the loads of neighbouring ``g`` become whole vectors,
    deinterleaved in registers; ``xw, wq, half, carry``: the loads of ``_three``. A None
    ``hj`` prunes the tracking code at compile time.)"""
    # whether a key is odd (``_odd``): −0.0 per element, NaNs from the keys' range
    neg = False
    hi = _key(xi[base + g0 * step], kspec)
    lo, prev = hi, hi
    if hj is not None:
        for g in range(g0, g1):
            a, b, c, prev = _three(xi, xw, wq, half, carry, prev, base, g, step, d1, d2, kspec)
            j = j1 if b > a else j0
            v = max(a, b)
            _keep(hk, hj, None, g, max(v, c), j2 if c > v else j, j0, first)
            hi, lo = max(hi, max(v, c)), min(lo, min(min(a, b), c))
            neg |= _negzero(a, kspec) | _negzero(b, kspec) | _negzero(c, kspec)
    elif first:
        for g in range(g0, g1):
            a, b, c, prev = _three(xi, xw, wq, half, carry, prev, base, g, step, d1, d2, kspec)
            v = max(max(a, b), c)
            hk[g] = v
            hi, lo = max(hi, v), min(lo, min(min(a, b), c))
            neg |= _negzero(a, kspec) | _negzero(b, kspec) | _negzero(c, kspec)
    else:
        for g in range(g0, g1):
            a, b, c, prev = _three(xi, xw, wq, half, carry, prev, base, g, step, d1, d2, kspec)
            v = max(max(a, b), c)
            hk[g] = max(hk[g], v)
            hi, lo = max(hi, v), min(lo, min(min(a, b), c))
            neg |= _negzero(a, kspec) | _negzero(b, kspec) | _negzero(c, kspec)
    return neg | _nans(hi, lo, kspec)


@njit(**_OPTS)
def _run(xi, xw, base, nrun, pitch, owp, ncols, olast, sk, dk, pk, jlo, jhi, jv, nj, kspec,
         kmin, hk, h0, hj, jk):
    """The last dimension's maxima (keys) of ``nrun`` rows, ``pitch`` apart from ``base``:
    ``hk[h0 + h*owp + o]`` for each row ``h`` and output ``o`` (``jv[:nj]``: the offsets
    that some output reads; ``jk`` the same as keys), and in ``hj`` where tracked the
    first offset holding it (a 3-wide stride-2 window's loops carry the element two
    outputs share, or read 1-byte keys as words: ``_three``). One flat pass where every
    element read lies in the run, then the rows' edges (outputs whose window leaves the
    row), an output at a time. Returns whether an element read is −0.0 or a NaN."""
    ubase, ustep = np.uint64(base), np.uint64(sk)
    emin, emax = 0, 0
    for i in range(nj):
        e = jv[i] * dk - pk
        emin = e if i == 0 else min(emin, e)
        emax = e if i == 0 else max(emax, e)
    last = (nrun - 1) * pitch + ncols - 1
    ga = 0 if emin >= 0 else (-emin + sk - 1) // sk
    gb = min(nrun * owp, (last - emax) // sk + 1) if last >= emax else 0
    odd = False
    if gb > ga:
        u0, u1 = np.uint64(h0 + ga), np.uint64(h0 + gb)
        sub = ubase - np.uint64(h0) * ustep            # (wraps; the sum is in range)
        one, two, zero = np.uint64(1), np.uint64(2), np.uint64(0)
        for i in range(0, nj, 3):
            i1, i2 = min(i + 1, nj - 1), min(i + 2, nj - 1)
            e0 = np.uint64(jv[i] * dk - pk)
            d1 = (jv[i1] - jv[i]) * dk
            d2 = (jv[i2] - jv[i]) * dk
            j0, j1, j2 = jk[i], jk[i1], jk[i2]
            # the common windows' first three offsets get loops of their own
            # (``xw is None`` alone in its test: Numba prunes the other branch at compile
            # time, so the word loops are compiled only for the types that have words)
            if i == 0 and sk == 2 and d1 == 1 and d2 == 2:
                if xw is None:
                    odd |= _run3(xi, None, zero, 0, True, sub + e0, two, one, two, u0, u1,
                                 kspec, hk, True, hj, j0, j1, j2)
                elif xw.shape[0] == 0 or u1 <= u0 + one:
                    odd |= _run3(xi, None, zero, 0, True, sub + e0, two, one, two, u0, u1,
                                 kspec, hk, True, hj, j0, j1, j2)
                else:
                    # two keys a word, but for the last output: its second word could reach
                    # past the input
                    p = sub + e0 + u0 * two
                    wq = (p >> one) - u0                 # (wraps; wq + g is in range)
                    if p % two == zero:     # (a literal half: each loop splits its words)
                        odd |= _run3(xi, xw, wq, 0, False, sub + e0, two, one, two, u0,
                                     u1 - one, kspec, hk, True, hj, j0, j1, j2)
                    else:
                        odd |= _run3(xi, xw, wq, 1, False, sub + e0, two, one, two, u0,
                                     u1 - one, kspec, hk, True, hj, j0, j1, j2)
                    odd |= _run3(xi, None, zero, 0, True, sub + e0, two, one, two, u1 - one,
                                 u1, kspec, hk, True, hj, j0, j1, j2)
            elif i == 0 and sk == 2 and d1 == 1 and d2 == 1:
                odd |= _run3(xi, None, zero, 0, False, sub + e0, two, one, one, u0, u1, kspec,
                             hk, True, hj, j0, j1, j2)
            elif i == 0 and sk == 1 and d1 == 1 and d2 == 2:
                odd |= _run3(xi, None, zero, 0, False, sub + e0, one, one, two, u0, u1, kspec,
                             hk, True, hj, j0, j1, j2)
            elif i == 0 and sk == 1 and d1 == 0:
                odd |= _run3(xi, None, zero, 0, False, sub + e0, one, zero, zero, u0, u1,
                             kspec, hk, True, hj, j0, j1, j2)
            else:
                odd |= _run3(xi, None, zero, 0, False, sub + e0, ustep, np.uint64(d1),
                             np.uint64(d2), u0, u1, kspec, hk, i == 0, hj, j0, j1, j2)
    # outputs [olo, ohi) read only their own row: the flat range [ga, gb) holds them all
    # (its ends are the first row's olo and the last row's ohi, or beyond); the others
    # (edges) are done again from their real offsets
    olo, ohi = 0, olast
    for i in range(nj):
        olo = max(olo, jlo[jv[i]])
        ohi = min(ohi, jhi[jv[i]])
    for o in range(min(olo, olast)):
        odd |= _edge_column(xi, base, nrun, pitch, owp, o, sk, dk, pk, jlo, jhi, jv, nj,
                            kspec, kmin, hk, h0, hj, jk)
    for o in range(max(ohi, olo), olast):
        odd |= _edge_column(xi, base, nrun, pitch, owp, o, sk, dk, pk, jlo, jhi, jv, nj,
                            kspec, kmin, hk, h0, hj, jk)
    return odd


@njit(inline="always", **_OPTS)
def _edge_column(xi, base, nrun, pitch, owp, o, sk, dk, pk, jlo, jhi, jv, nj, kspec, kmin,
                 hk, h0, hj, jk):
    """``hk[h0 + h*owp + o]`` (and ``hj``) for output ``o`` of every row of a run, from its
    real offsets only (the same for every row): one loop over the rows per offset; whether
    an element read is −0.0 or a NaN."""
    odd = False
    first = True
    # (unsigned: every position is a real element's, and the rows step forwards; signed,
    # each load paid a negative-index test, and these loops cost int8 pooling 13 %)
    uh, up, uw = np.uint64(h0 + o), np.uint64(pitch), np.uint64(owp)
    for i in range(nj):
        j = jv[i]
        if jlo[j] <= o < jhi[j]:
            at = np.uint64(base + o * sk + j * dk - pk)
            for h in range(np.uint64(nrun)):
                v = _key(xi[at + h * up], kspec)
                _keep(hk, hj, None, uh + h * uw, v, jk[i], jk[i], first)
                odd |= _odd(v, kspec)
            first = False
    if first:
        for h in range(nrun):
            hk[h0 + h * owp + o] = kmin
    return odd


CHUNK = 32     # outputs per fixed-length loop (LLVM vectorises those whole; rows are short)


@njit(inline="always", **_OPTS)
def _rows3_at(hk, a0, a1, a2, o0, n, kspec, out, u0, ustep, bk, mode, hj, bj, bt, t0, t1,
              t2):
    if hj is None:
        for i in range(n):
            o = o0 + i
            v = max(max(hk[a0 + o], hk[a1 + o]), hk[a2 + o])
            if mode == 0:
                bk[o] = v
            elif mode == 1:
                bk[o] = max(bk[o], v)
            else:
                out[u0 + o * ustep] = _key(v, kspec)
        return
    for i in range(n):
        o = o0 + i
        v, j, t = hk[a0 + o], hj[a0 + o], t0
        w, jw = hk[a1 + o], hj[a1 + o]       # (loads before the selects: see _keep)
        m = w > v
        j = jw if m else j
        t = t1 if m else t
        v = max(v, w)
        w, jw = hk[a2 + o], hj[a2 + o]
        m = w > v
        j = jw if m else j
        t = t2 if m else t
        _keep(bk, bj, bt, o, max(v, w), j, t, mode == 0)


@njit(inline="always", **_OPTS)
def _rows3(hk, a0, a1, a2, olast, kspec, out, u0, ustep, bk, mode, hj, bj, bt, t0, t1, t2):
    """For ``o`` in [0, olast), the largest key ``v`` of three rows of ``hk`` (from offsets
    ``a0..a2``, window rows ``t0..t2``) into ``bk[o]`` (``mode`` 0), or the larger of it
    and ``bk[o]`` (1), with its offset and row in ``bj``/``bt`` where tracked (the first of
    equal keys: ``_keep``); or as a value into ``out[u0 + o*ustep]`` (2). In chunks of
    ``CHUNK`` outputs, the last one overlapping the one before (a maximum taken twice is
    the same, and so is its position)."""
    uo = np.uint64(olast)
    if uo < CHUNK:
        _rows3_at(hk, a0, a1, a2, np.uint64(0), uo, kspec, out, u0, ustep, bk, mode, hj, bj,
                  bt, t0, t1, t2)
        return
    for q in range((uo + np.uint64(CHUNK - 1)) // np.uint64(CHUNK)):
        c = min(q * np.uint64(CHUNK), uo - np.uint64(CHUNK))
        _rows3_at(hk, a0, a1, a2, c, np.uint64(CHUNK), kspec, out, u0, ustep, bk, mode, hj,
                  bj, bt, t0, t1, t2)


@njit(**_OPTS)
def _full_rows(hk, h0, hstep, d1, d2, olast, kspec, yi, y0, ytab, pos, i0, i1, xi, ahead,
               per):
    """Rows ``i`` in [i0, i1) of a ``_flat_rows`` block, values alone, whose windows lie
    whole in the block's runs: output ``o`` is the largest of ``hk`` at ``h0 + i*hstep + o``
    plus 0, ``d1`` and ``d2``, written to ``yi[y0 + ytab[pos + i] + o]``. A loop of its own,
    so that its few variables stay in registers: per-row bookkeeping in the general loop
    (spilled to the stack) was a third of int8 pooling's time there. 1-byte keys only: with
    float32's, workload 1 ran 1.09-1.14x slower this way (alternating processes)."""
    one = np.uint64(1)
    for i in range(i0, i1):
        prefetch(xi, ahead + i * per, ahead + (i + 1) * per)
        a0 = np.uint64(h0 + i * hstep)
        _rows3(hk, a0, a0 + np.uint64(d1), a0 + np.uint64(d2), olast, kspec, yi,
               np.uint64(y0 + ytab[pos + i]), one, hk, 2, None, None, None, 0, 0, 0)


@njit(**_OPTS)
def _flat_rows(r0, r1, xi, xw, xo, xs, insz, yi, yb, yo, ys, outsz, win, wout, strd, pad, dil,
               pitch, wr, jlo, jhi, jv, nj, nones, ytab, owp, kspec, kmin, empty_value, hk,
               eo, flats, ho, bk, coords, scratch, hj, bj, bt, jk, tk, rf, ib, io, ist,
               empty_index):
    """Rows [r0, r1) the flat way, in blocks: consecutive rows of one plane that differ only
    along the second-to-last dimension, as many as ``hk`` holds the runs of. A block's runs
    (one per real element of the window's other dimensions, ``wout``) are reduced along the
    last dimension (``_run``), then each row takes the maximum of its window's run rows.
    With ``hj`` (not None) the winners' positions are tracked too (``bj``/``bt`` a row's
    last offsets and window rows, ``jk``/``tk`` those numbers as keys, ``rf`` each window
    row's flat index) and written as indices to ``ib``. Returns ``(a, b)``: rows [r0, a)
    are done, and [a, b) read a −0.0 or NaN (to be done with the ties tracked); ``a == r1``
    when all are done."""
    xs, insz, yi, yb, ys, outsz = _b(xs), _b(insz), _b(yi), _b(yb), _b(ys), _b(outsz)
    win, wout, strd, pad, dil, pitch = _b(win), _b(wout), _b(strd), _b(pad), _b(dil), _b(pitch)
    wr, jlo, jhi, jv, nones, ytab = _b(wr), _b(jlo), _b(jhi), _b(jv), _b(nones), _b(ytab)
    hk, eo, flats, ho, bk = _b(hk), _b(eo), _b(flats), _b(ho), _b(bk)
    coords, scratch, ist, rf = _b(coords), _b(scratch), _b(ist), _b(rf)
    ib = (_b(ib[0]), _b(ib[1]))
    rank = insz.shape[0]
    k = rank - 2
    m = k - 2                                   # the spatial index of the run dimension
    olast, ncols = outsz[rank - 1], insz[rank - 1]
    sk, pk, dk = strd[k - 1], pad[k - 1], dil[k - 1]
    wm, sm, pm, inm, outm = win[m], strd[m], pad[m], insz[rank - 2], outsz[rank - 2]
    rpitch, plast = xs[rank - 2], pitch[rank - 1]
    npos = ytab.shape[0]
    uys, one = np.uint64(ys[rank - 1]), np.uint64(1)
    direct = hj is None             # values straight to the output where one group does
    # the rows along the run dimension whose window is whole (a contiguous range): where
    # the values go straight to the output they take ``_full_rows``
    full_lo, full_hi = outm, outm
    for om in range(outm):
        if wr[0, m, om] == 0 and wr[1, m, om] == wm:
            full_lo = min(full_lo, om)
            full_hi = om + 1
    r = r0
    while r < r1:
        plane, pos = r // npos, r % npos
        n, c = plane // outsz[1], plane % outsz[1]
        om0 = pos % outm
        _decode(pos, outsz, 2, rank - 1, coords)
        ne = _outer(coords, wr, xs, wout, strd, pad, dil, pitch, eo, flats, scratch)
        ha = max(0, om0 * sm - pm)
        nb = min(r1 - r, outm - om0)
        # as many rows as the runs fit in hk (one at least)
        if ne > 0:
            nb = max(1, min(nb, (hk.shape[0] // (ne * owp) - wm) // sm + 1))
        hb = min(inm, (om0 + nb - 1) * sm - pm + wm)
        nrun = hb - ha
        xplane = xo + n * xs[0] + c * xs[1]
        yplane = yo + n * ys[0] + c * ys[1]
        odd = False
        if ne > 0 and nrun > 0:
            for e in range(ne):
                odd |= _run(xi, xw, xplane + eo[e] + ha * rpitch, nrun, rpitch, owp, ncols,
                            olast, sk, dk, pk, jlo, jhi, jv, nj, kspec, kmin, hk, e * nrun * owp,
                            hj, jk)
        if odd:
            return r, r + nb
        # the next block's rows, while this block's rows are reduced (from the cache): else
        # the memory idles until its runs. Where rows are dense (planes of NCHW data), they
        # follow this block's in memory; elsewhere this only fetches lines for nothing.
        ahead = xplane + eo[ne - 1] + hb * rpitch if ne > 0 else 0
        span = nrun * rpitch if ne > 0 else 0
        per = (span + nb - 1) // nb             # (row i fetches [i*per, (i+1)*per) of it)
        f0, f1 = 0, 0
        if (direct and hk.itemsize == 1 and uys == 1 and nones.shape[0] == 0
                and 0 < ne * wm <= 3 and nrun > 0):
            f0 = min(max(full_lo - om0, 0), nb)
            f1 = max(min(full_hi - om0, nb), f0)
        if f1 > f0:
            # a whole window's run rows, in the general loop's order (outer element ``e``,
            # then window row ``jm``), lie ``(e*nrun + jm) * owp`` past its first
            n3 = ne * wm
            t1, t2 = min(1, n3 - 1), min(2, n3 - 1)
            _full_rows(hk, (om0 * sm - pm - ha) * owp, sm * owp,
                       (t1 // wm * nrun + t1 % wm) * owp, (t2 // wm * nrun + t2 % wm) * owp,
                       olast, kspec, yi, yplane, ytab, pos, f0, f1, xi, ahead, per)
        for i in range(nb):
            if f0 <= i < f1:
                continue
            prefetch(xi, ahead + i * per, ahead + (i + 1) * per)
            om = om0 + i
            yrow = yplane + ytab[pos + i]
            a, b = wr[0, m, om], wr[1, m, om]
            count = ne * (b - a) if nrun > 0 else 0
            irow = io
            if hj is not None:
                irow += n * ist[0] + c * ist[1] + om * ist[rank - 2]
                for d in range(2, rank - 2):
                    irow += coords[d] * ist[d]
            if count == 0:
                for o in range(olast):
                    yb[yrow + o * ys[rank - 1]] = empty_value
                    if hj is not None:
                        _put(ib, irow + o * ist[rank - 1], empty_index)
                continue
            t = 0
            for e in range(ne):
                for jm in range(a, b):
                    ho[t] = (e * nrun + om * sm + jm - pm - ha) * owp
                    if hj is not None:
                        rf[t] = (n * pitch[0] + c * pitch[1] + flats[e]
                                 + (om * sm + jm - pm) * pitch[rank - 2] - pk * plast)
                    t += 1
            uy = np.uint64(yrow)
            for g in range(0, count, 3):
                g1, g2 = min(g + 1, count - 1), min(g + 2, count - 1)
                a0, a1, a2 = np.uint64(ho[g]), np.uint64(ho[g1]), np.uint64(ho[g2])
                t0, t1, t2 = tk[g], tk[g1], tk[g2]
                if g == 0 and g + 3 >= count and uys == 1 and direct:    # the common case
                    _rows3(hk, a0, a1, a2, olast, kspec, yi, uy, one, bk, 2, hj, bj, bt, t0,
                           t1, t2)
                elif g == 0:
                    _rows3(hk, a0, a1, a2, olast, kspec, yi, uy, one, bk, 0, hj, bj, bt, t0,
                           t1, t2)
                else:
                    _rows3(hk, a0, a1, a2, olast, kspec, yi, uy, one, bk, 1, hj, bj, bt, t0,
                           t1, t2)
            if hj is None:
                if count > 3 or uys != 1:
                    for o in range(np.uint64(olast)):
                        yi[uy + o * uys] = _key(bk[o], kspec)
            else:
                for o in range(np.uint64(olast)):
                    yi[uy + o * uys] = _key(bk[o], kspec)
                # (unsigned: no checks for negative indices; a negative step wraps back)
                ui, uisk = np.uint64(irow), np.uint64(ist[rank - 1])
                cs, cj = sk * plast, dk * plast
                rstep = pitch[rank - 2] if ne == 1 else 0
                if ib[1].shape[0] > 0:          # (the width's test out of the loop)
                    _flat_index_row(ib[1], ui, uisk, olast, rf, rstep, bt, bj, cs, cj)
                else:
                    _flat_index_row(ib[0], ui, uisk, olast, rf, rstep, bt, bj, cs, cj)
            for j in range(nones.shape[0]):
                yb[yrow + nones[j] * ys[rank - 1]] = empty_value
                if hj is not None:
                    _put(ib, irow + nones[j] * ist[rank - 1], empty_index)
        r += nb
    return r1, r1


@njit(inline="always", **_OPTS)
def _flat_index_row(ib, ui, uisk, olast, rf, rstep, bt, bj, cs, cj):
    """A row's indices from ``_flat_rows``'s winners: window row ``bt[o]`` starts at flat
    index ``rf[bt[o]]``, which is ``rf[0] + bt[o] * rstep`` where the rows are evenly spaced
    (``rstep`` not 0): arithmetic instead of a look-up, so that the loop vectorises."""
    if rstep != 0 and uisk == 1:
        # in the index type: 32-bit lanes for uint32 indices (exact: the index fits, and
        # the arithmetic wraps modulo 2^32 on the way there)
        t = ib.dtype.type
        r0, trs, tcs, tcj = t(rf[0]), t(rstep), t(cs), t(cj)
        for o in range(np.uint64(olast)):
            w = t(t(t(bt[o]) * trs) + t(t(o) * tcs))
            ib[ui + o] = t(t(r0 + w) + t(t(bj[o]) * tcj))
    else:
        for o in range(olast):
            ib[ui + np.uint64(o) * uisk] = rf[np.uint64(bt[o])] + o * cs + bj[o] * cj


@njit(inline="always", **_OPTS)
def _index_row(ib, ui, uisk, olast, frow, flats, count, bt, bj, w, sk, dk, pk, plast):
    """A row's indices from ``_max_row``'s winners (``bt``/``bj`` row ``w``). Where they
    are contiguous and the outer elements few, the outer element's part is added in one
    pass per element (selects that vectorise) rather than looked up per index."""
    if uisk == 1 and count <= 16:
        f0 = frow + flats[0]
        for o in range(np.uint64(olast)):
            ib[ui + o] = f0 + (np.int64(o) * sk + bj[w, o] * dk - pk) * plast
        for t in range(1, count):
            d, t32 = flats[t] - flats[0], np.int32(t)
            for o in range(np.uint64(olast)):
                e = ib[ui + o]
                ib[ui + o] = e + d if bt[w, o] == t32 else e
        return
    for o in range(olast):
        xk = o * sk + bj[w, o] * dk - pk
        ib[ui + np.uint64(o) * uisk] = frow + flats[bt[w, o]] + xk * plast


@njit(**_OPTS)
def _max_loop(r0, r1, xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win, strd, pad,
              dil, tag, empty_value, empty_index, want_values, want_indices, jlo, jhi, jfirst,
              nones, c0, c1, wr, coords, scratch, offs, flats, cv, ct, bv, bt, bj):
    """The row loop of ``_max_rows``, on borrowed scratch (``_nrt``: the calls per row
    update no reference counts; ``_max_rows`` keeps the arrays alive)."""
    coords, scratch, offs, flats = _b(coords), _b(scratch), _b(offs), _b(flats)
    cv, ct, bv, bt, bj = _b(cv), _b(ct), _b(bv), _b(bt), _b(bj)
    rank = insz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    xsk, ysk, isk, plast = xs[rank - 1], ys[rank - 1], ist[rank - 1], pitch[rank - 1]
    # float16 outputs are copied from the input (converting back would be slower)
    reread = is_half(tag)
    _decode(r0, outsz, 0, rank - 1, coords)
    for r in range(r0, r1):
        if r > r0:
            _advance(coords, outsz, 0, rank - 1)
        xrow = xo + coords[0] * xs[0] + coords[1] * xs[1]
        frow = coords[0] * pitch[0] + coords[1] * pitch[1]
        count = _outer(coords, wr, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
        yrow = yo
        irow = io
        for d in range(rank - 1):
            yrow += coords[d] * ys[d]
            irow += coords[d] * ist[d]
        # separate stores, not conditional expressions: those would unify int64 and uint64
        # to float64 and lose the UINT64 "no element" value
        if count == 0:
            for o in range(olast):
                if want_values:
                    yb[yrow + o * ysk] = empty_value
                if want_indices:
                    _put(ib, irow + o * isk, empty_index)
            continue
        w = _max_row(xb, xrow, xsk, offs, count, olast, wk, sk, pk, dk, jlo, jhi, jfirst,
                     c0, c1, tag, want_indices or reread, cv, ct, bv, bt, bj)
        if want_values and reread:
            for o in range(olast):
                if jfirst[o] >= 0:
                    xk = o * sk + bj[w, o] * dk - pk
                    yb[yrow + o * ysk] = xb[xrow + offs[bt[w, o]] + xk * xsk]
        elif want_values:               # bv holds the elements, bits intact
            uy, uys = np.uint64(yrow), np.uint64(ysk)
            for o in range(np.uint64(olast)):
                yb[uy + o * uys] = store(bv[w, o], tag, yb.dtype.type)
        if want_indices:
            # (unsigned: no checks for negative indices; a negative step wraps back)
            ui, uisk = np.uint64(irow), np.uint64(isk)
            if ib[1].shape[0] > 0:          # (the width's test out of the loop)
                _index_row(ib[1], ui, uisk, olast, frow, flats, count, bt, bj, w, sk, dk, pk,
                           plast)
            else:
                _index_row(ib[0], ui, uisk, olast, frow, flats, count, bt, bj, w, sk, dk, pk,
                           plast)
        for i in range(nones.shape[0]):     # windows of padding and phantom positions only
            o = nones[i]
            if want_values:
                yb[yrow + o * ysk] = empty_value
            if want_indices:
                _put(ib, irow + o * isk, empty_index)


_PLANS: dict = {}             # _plan's results kept, by geometry and strides
_POSITIONS: dict = {}         # _positions' likewise
_KEPT_LOCK = threading.Lock()
PLANS_KEPT = 32               # results kept per store (each under PLAN_BYTES)
PLAN_BYTES = 1 << 20


def _kept(store, key, make):
    """``make()`` (an array or a tuple with arrays), made read-only and kept in ``store``
    for later calls with the same ``key`` when small: for a small operator, working it out
    again costs more than the kernel. Read-only whether kept or not (one compiled type),
    so calls and threads share it safely: Numba refuses to compile a write to it."""
    got = store.get(key)
    if got is None:
        got = make()
        arrays = [a for a in (got if isinstance(got, tuple) else (got,))
                  if isinstance(a, np.ndarray)]
        for a in arrays:
            a.flags.writeable = False
        if sum(a.nbytes for a in arrays) <= PLAN_BYTES:
            with _KEPT_LOCK:
                if len(store) >= PLANS_KEPT:
                    store.pop(next(iter(store)))      # the oldest
                store[key] = got
    return got


def _plan(insz, outsz, win, strd, pad, dil, xs, ys, pitch, table, want_flats):
    """``_make_plan``, kept (``_kept``)."""
    key = tuple(tuple(a.tolist()) for a in (insz, outsz, win, strd, pad, dil, xs, ys, pitch))
    return _kept(_PLANS, key + (table, want_flats), lambda: _make_plan(
        insz, outsz, win, strd, pad, dil, xs, ys, pitch, table, want_flats))


@njit(**_OPTS)
def _make_plan(insz, outsz, win, strd, pad, dil, xs, ys, pitch, table, want_flats):
    """What every row of a pooling (max, its gradient, sums) shares: the last dimension's
    window (``_last_dim``, ``_columns``, ``_nones``), the window ranges, the number of rows
    and outer-window elements, and the row table (``_row_table``, ``table`` offsets at
    most). Its types are the same for every data type, so it compiles once."""
    k = insz.shape[0] - 2
    jlo, jhi, jfirst = _last_dim(insz, outsz, win, strd, pad, dil)
    c0, c1 = _columns(jlo, jhi, strd[k - 1], pad[k - 1], dil[k - 1])
    wr = _window_ranges(insz, outsz, win, strd, pad, dil)
    rows, nouter = _rows(outsz, win)
    otab, ftab, ocnt, ytab = _row_table(xs, ys, outsz, win, strd, pad, dil, pitch, wr, table,
                                        want_flats)
    return (jlo, jhi, jfirst, c0, c1, _nones(jfirst), wr, rows, nouter, otab, ftab, ocnt,
            ytab)


def max_pool_kernel(xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win, strd, pad,
                    dil, tag, empty_value, empty_index, want_values, want_indices, xi, yi,
                    kspec, kmin, table, flat, track=None):
    """Arguments: ``xb, xo, xs`` input buffer, offset of element 0 and element strides;
    ``insz`` input sizes; ``pitch`` each dimension's step in the flat index of the caller's
    input (its logical row-major strides, permuted along with the dimensions);
    ``yb/yo/ys`` and ``ib/io/ist`` the value and index outputs likewise; ``outsz`` output
    sizes; ``win, strd, pad, dil`` the window over the spatial dimensions; ``xi``/``yi``
    the input and output buffers as integers of their width, ``kspec``/``kmin`` their keys'
    description and lowest key (``key_spec``); ``table`` the most offsets ``_row_table``
    may list (``TABLE``), ``flat`` the keys a task's runs may hold (``FLAT``); ``track``
    (with indices) a one-element array of the key type holding its largest value, so that
    the flat runs track the winners' positions (a kernel of its own: without it, none of
    that code is compiled)."""
    jlo, jhi, jfirst, c0, c1, nones, wr, rows, nouter, otab, ftab, ocnt, ytab = _plan(
        insz, outsz, win, strd, pad, dil, xs, ys, pitch, table, want_indices)
    parallel(_max_rows, rows, xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win,
             strd, pad, dil, tag, empty_value, empty_index, want_values, want_indices, jlo,
             jhi, jfirst, nones, c0, c1, nouter, wr, xi, words(xi), yi, kspec, kmin, otab, ftab,
             ocnt, ytab, _positions(outsz, ist), flat, track, item_size=outsz[-1])


def words(xi):
    """1-byte keys as 16-bit words (the same signedness; an odd last byte left out), for the
    stride-2 runs (``_three``): an empty array where the buffer starts at an odd address
    (an unaligned view would be compiled anew); None for wider keys (their runs carry the
    window's shared element instead: wider words came out slower) or on a big-endian
    machine (``_halves`` splits little-endian words)."""
    if xi.itemsize != 1 or sys.byteorder != "little":
        return None
    wt = np.int16 if xi.dtype.kind == "i" else np.uint16
    if xi.ctypes.data % 2:
        return np.empty(0, wt)
    return xi[:xi.size // 2 * 2].view(wt)


def _positions(outsz, strides):
    """Each row position's offset (the spatial output coordinates but the last, row-major)
    along ``strides``, kept (``_kept``)."""
    key = tuple(outsz.tolist()), tuple(np.asarray(strides).tolist())
    return _kept(_POSITIONS, key, lambda: _positions_of(*key))


def _positions_of(outsz, strides):
    at = np.zeros(1, np.int64)
    for d in range(2, len(outsz) - 1):
        at = (at[:, None] + np.arange(outsz[d], dtype=np.int64) * strides[d]).ravel()
    return at


def key_spec(buf, dtype):
    """``(keys, kspec, kmin)`` for ``max_pool_kernel``: the kernel buffer of a ``dtype``
    tensor as the integers its keys are, whether they are float keys (None for integers:
    their own keys) and the lowest key."""
    kt, kspec, kmin = _key_types(buf.dtype, np.dtype(dtype))
    return (buf if kt is None else buf.view(kt)), kspec, kmin


@lru_cache(maxsize=None)
def _key_types(buf_dtype, dtype):
    """``key_spec`` less the buffer (per call, this is the costly part: ``np.iinfo``)."""
    if dtype.kind in "iu":
        return None, None, buf_dtype.type(np.iinfo(buf_dtype).min)
    kt = np.dtype(f"i{buf_dtype.itemsize}")
    return kt, True, kt.type(np.iinfo(kt).min)


def _term(v, tag, zp):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_term, inline="always")
def _term_impl(v, tag, zp):
    """An input element as a summed term: quantized (integer data) ``x - zp`` in ``zp``'s
    type, else its value (float16 converted). Decided by type, so loops hold no branch."""
    if isinstance(v, types.Integer) and not half_tag(tag):
        zt = getattr(np, str(zp))
        return lambda v, tag, zp: zt(v) - zp
    return lambda v, tag, zp: widen(v, tag)


@njit(**_OPTS)
def _sum_passes(jlo, jhi, olast, sk, pk, dk, xsk):
    """How every row's sums go (``_row_sums``): ``passes[:npass]`` (input offset, kind)
    over the outputs [olo, ohi) that read every live offset of the last dimension, in
    offset order, three offsets a pass where a loop of its own does them (kind 0: step 2,
    offsets +0, 1, 2; kind 1: step 1, +0, 1, 2; kind 2: step 2, +0, 1), else one (kind 3:
    step 1; kind 4: any). ``trio`` >= 0 (kinds 0, 1, 3) where one pass does an outer
    element, so that three of them can go in one pass. The other outputs ``eo[i]`` each
    add the elements at ``erel[est[i]:est[i + 1]]`` from every outer element's start."""
    jv, nj = _live(jlo, jhi)
    olo, ohi = 0, olast
    for i in range(nj):
        olo = max(olo, jlo[jv[i]])
        ohi = min(ohi, jhi[jv[i]])
    ohi = max(olo, ohi)
    passes = np.empty((nj, 2), np.int64)
    npass, i = 0, 0
    while i < nj:
        e = (jv[i] * dk - pk) * xsk
        nx = jv[i + 1] - jv[i] if i + 1 < nj else 0
        ny = jv[i + 2] - jv[i] if i + 2 < nj else 0
        step = sk * xsk
        if xsk == 1 and dk == 1 and nx == 1 and ny == 2 and sk <= 2:
            kind, i = 2 - sk, i + 3
        elif xsk == 1 and dk == 1 and nx == 1 and sk == 2:
            kind, i = 2, i + 2
        else:
            kind, i = (3 if step == 1 else 4), i + 1
        passes[npass, 0], passes[npass, 1] = e, kind
        npass += 1
    neo = olo + olast - ohi
    eo, est = np.empty(neo, np.int64), np.zeros(neo + 1, np.int64)
    erel = np.empty(neo * max(nj, 1), np.int64)
    n = 0
    for i in range(neo):
        o = i if i < olo else ohi + i - olo
        eo[i] = o
        for q in range(nj):
            j = jv[q]
            if jlo[j] <= o < jhi[j]:
                erel[n] = o * sk * xsk + (j * dk - pk) * xsk
                n += 1
        est[i + 1] = n
    # three outer elements a pass: the three offsets of kinds 0 and 1 (trio 0, 1), or the
    # one offset of kind 3 (trio 2)
    trio = -1
    if npass == 1 and passes[0, 1] <= 1:
        trio = passes[0, 1]
    elif npass == 1 and passes[0, 1] == 3:
        trio = 2
    return passes, npass, eo, est, erel, trio, olo, ohi


def _staged(xb, tag, n, acc):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_staged, inline="always")
def _staged_impl(xb, tag, n, acc):
    """What the sums read, and its tag: float16 rows converted to float32, and quantized
    rows less their zero point in the accumulator's type, in zeroed scratch (``n`` values;
    each element converted once, not at every window offset that reads it); float rows
    where they are."""
    if _stages(xb):
        return lambda xb, tag, n, acc: (np.zeros(n, acc.dtype), np.empty(0, np.int8))
    return lambda xb, tag, n, acc: (xb, tag)


def _stages(xb):
    # integer buffers: float16 bit patterns and quantized data
    return isinstance(xb.dtype, types.Integer)


def is_staged(xb, tag):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(is_staged)
def _is_staged(xb, tag):
    """Whether the sums read staged rows (``_staged``), as a compile-time constant."""
    staged = _stages(xb)
    return lambda xb, tag: staged


@njit(inline="always", **_OPTS)
def _terms(xb, p, d1, d2, m, tag, zp, s):
    """``s`` plus the ``m`` (1 to 3) elements at ``p``, ``p + d1``, ``p + d2``, in order."""
    s += _term(xb[p], tag, zp)
    if m > 1:
        s += _term(xb[p + d1], tag, zp)
    if m > 2:
        s += _term(xb[p + d2], tag, zp)
    return s


@njit(inline="always", **_OPTS)
def _add9(xb, u0, ustep, d1, d2, ulo, uhi, tag, zp, acc):
    """``acc[o]`` plus the elements at ``u0 + o*ustep`` + 0, 1, 2, then the same from
    ``u0 + d1`` and from ``u0 + d2``, added one after the other, for ``o`` in [ulo, uhi)."""
    one, two = np.uint64(1), np.uint64(2)
    for o in range(ulo, uhi):
        p = u0 + o * ustep
        s = _terms(xb, p, one, two, 3, tag, zp, acc[o])
        s = _terms(xb, p + d1, one, two, 3, tag, zp, s)
        acc[o] = _terms(xb, p + d2, one, two, 3, tag, zp, s)


@njit(inline="always", **_OPTS)
def _add_carried(xb, u0, d1, d2, rows, ulo, uhi, tag, zp, acc):
    """``_add9`` (``rows`` 3) or ``_add3`` of three offsets (``rows`` 1: ``d1``, ``d2``
    unused) with step 2: each output's third element of a window row is the next output's
    first, so it is carried over instead of loaded (a recurrence LLVM vectorises; loaded,
    it is gathered a lane at a time). The same terms in the same order: the same sums."""
    one, two = np.uint64(1), np.uint64(2)
    if uhi <= ulo:
        return
    p = u0 + ulo * two
    a0 = _term(xb[p], tag, zp)
    a1 = _term(xb[p + d1], tag, zp) if rows == 3 else a0
    a2 = _term(xb[p + d2], tag, zp) if rows == 3 else a0
    for o in range(ulo, uhi):
        p = u0 + o * two
        c0 = _term(xb[p + two], tag, zp)
        s = acc[o] + a0 + _term(xb[p + one], tag, zp) + c0
        a0 = c0
        if rows == 3:
            c1 = _term(xb[p + d1 + two], tag, zp)
            c2 = _term(xb[p + d2 + two], tag, zp)
            s = s + a1 + _term(xb[p + d1 + one], tag, zp) + c1
            s = s + a2 + _term(xb[p + d2 + one], tag, zp) + c2
            a1, a2 = c1, c2
        acc[o] = s


@njit(inline="always", **_OPTS)
def _add3(xb, u0, ustep, d1, d2, m, ulo, uhi, tag, zp, acc):
    """``acc[o]`` plus the ``m`` (1 to 3) elements at ``u0 + o*ustep`` + 0, ``d1``, ``d2``,
    added one after the other, for ``o`` in [ulo, uhi): a row's next ``m`` window offsets
    in one pass (constant arguments let the loads of neighbouring outputs become whole
    vectors)."""
    for o in range(ulo, uhi):
        acc[o] = _terms(xb, u0 + o * ustep, d1, d2, m, tag, zp, acc[o])


@njit(inline="always", **_OPTS)
def channel_params(zp_in, scale_in, zp_out, scale_out, c, acc):
    """Channel ``c``'s ``(zp_in, zp_out, scale_in, scale_out)``, each given per tensor (one
    value) or per channel; the input's zero point in the sums' type (``acc``'s)."""
    one = zp_in.shape[0] == 1
    return (acc.dtype.type(zp_in[0 if one else c]), zp_out[0 if zp_out.shape[0] == 1 else c],
            scale_in[0 if scale_in.shape[0] == 1 else c],
            scale_out[0 if scale_out.shape[0] == 1 else c])


@njit(inline="always", **_OPTS)
def _requantized(a, d, s_in, s_out, zq, qlo, qhi, yt):
    """SPEC 3.3 steps 3-5 for a sum ``a`` and its divisor's float ``d``, in float32
    throughout: ``rint(t) + zq`` is exact wherever the clamp does not decide the result."""
    t = np.float32(a) * s_in
    t = t / (d if d > 0 else np.float32(1))
    t = t / s_out
    v = min(max(np.float32(np.rint(t)) + zq, qlo), qhi)
    return yt(v if d > 0 else zq)


@njit(inline="always", **_OPTS)
def _requantize_row(acc, fdiv, fod, s_in, s_out, zq, qlo, qhi, yb, yrow, ysk, olast):
    """A row's requantized outputs (``_requantized``)."""
    for o in range(np.uint64(olast)):
        yb[yrow + o * ysk] = _requantized(acc[o], fod * fdiv[o], s_in, s_out, zq, qlo, qhi,
                                          yb.dtype.type)


@njit(inline="always", **_OPTS)
def _average_row(acc, fdiv, fod, yb, yrow, ysk, olast, tag):
    """A row's averages: each sum over its divisor (a divisor of 0 gives +0.0)."""
    for o in range(np.uint64(olast)):
        d = fod * fdiv[o]
        v = acc[o] / d if d > 0 else acc.dtype.type(0)
        yb[yrow + o * ysk] = narrow(v, tag, yb.dtype.type)


@njit(inline="always", **_OPTS)
def _convert(xb, u, step, dst, v, c0, c1, tag, zp):
    """Columns [c0, c1) of the row at ``u`` as terms (``_term``) into ``dst[v + q]``."""
    for q in range(np.uint64(c0), np.uint64(c1)):
        dst[v + q] = _term(xb[u + q * step], tag, zp)


@njit(inline="always", **_OPTS)
def _row_sums(src, rowb, count, passes, npass, trio, eo, est, erel, ulo, uhi, ustep, tag, zp,
              acc):
    """One output row's window sums into ``acc``, its outer elements starting at
    ``rowb[:count]`` in ``src``: each output adds its terms in row-major offset order,
    from +0.0. The outputs [ulo, uhi) that read every live offset go in passes over the
    row (three outer elements a pass where ``trio`` says how, else one), the others
    (``eo``) each on its own."""
    one, two = np.uint64(1), np.uint64(2)
    for o in range(acc.shape[0]):
        acc[o] = 0
    t = 0
    while t < count:
        u = np.uint64(rowb[t])
        if t + 3 <= count and trio >= 0:
            u0 = u + np.uint64(passes[0, 0])
            d1, d2 = np.uint64(rowb[t + 1] - rowb[t]), np.uint64(rowb[t + 2] - rowb[t])
            if trio == 0:
                _add_carried(src, u0, d1, d2, 3, ulo, uhi, tag, zp, acc)
            elif trio == 1:
                _add9(src, u0, one, d1, d2, ulo, uhi, tag, zp, acc)
            else:
                _add3(src, u0, one, d1, d2, 3, ulo, uhi, tag, zp, acc)
            t += 3
            continue
        for q in range(npass):
            u0, kind = u + np.uint64(passes[q, 0]), passes[q, 1]
            if kind == 0:
                _add_carried(src, u0, u0, u0, 1, ulo, uhi, tag, zp, acc)
            elif kind == 1:
                _add3(src, u0, one, one, two, 3, ulo, uhi, tag, zp, acc)
            elif kind == 2:
                _add3(src, u0, two, one, one, 2, ulo, uhi, tag, zp, acc)
            elif kind == 3:
                _add3(src, u0, one, u0, u0, 1, ulo, uhi, tag, zp, acc)
            else:
                _add3(src, u0, ustep, u0, u0, 1, ulo, uhi, tag, zp, acc)
        t += 1
    for i in range(eo.shape[0]):
        v = acc.dtype.type(0)
        for t in range(count):
            u = np.uint64(rowb[t])
            for q in range(est[i], est[i + 1]):
                v += _term(src[u + np.uint64(erel[q])], tag, zp)
        acc[eo[i]] = v


@njit(**_OPTS)
def _sum_rows(r0, r1, xb, xo, xs, insz, yb, yo, ys, outsz, win, strd, pad, dil, pitch, wr,
              tag, jlo, jhi, c0, c1, nouter, otab, ocnt, ytab, odiv, fdiv, zp_in, scale_in,
              zp_out, scale_out, quantized, qlo, qhi, acc_proto):
    """Rows [r0, r1) of ``sum_pool_kernel`` (one thread's task), the geometry from
    ``_row_table``: each row's window sums (``_row_sums``), then its averages or
    requantized values. float16 and quantized rows are staged first (``_staged``)."""
    # The task's scratch reaches ``_sum_task`` as arguments, which it borrows (``_b``):
    # arrays allocated where they are used cost an atomic reference-count update or two
    # per row (measured: 45 % of the row loop's own time), and LLVM leaves the sum loops
    # scalar where they read one (float16 averages, 9b: 10.9 -> 8.6 ms)
    rank = outsz.shape[0]
    k = rank - 2
    olast, ncols = outsz[rank - 1], insz[rank - 1]
    staged = is_staged(xb, tag)
    nslot = nouter + 2
    sk, pk, dk = strd[k - 1], pad[k - 1], dil[k - 1]
    nacc, width, padl = olast, ncols, 0
    if staged:
        # Staged rows are padded with zeros, which add nothing to a sum (exactly: a float
        # sum from +0.0 is never -0.0), so every output reads every window offset: no
        # edge outputs, and as many outputs as whole vectors (those past the row unused):
        # of 64 bytes, the widest here (of 32, a row of 56 float sums left 8 to the sum
        # loop's scalar remainder: 16 % of a float16 average pooling's profile, one thread)
        blk = 64 // acc_proto.itemsize
        nacc = -(-olast // blk) * blk
        padl = max(0, pk)
        width = max(padl + ncols, (nacc - 1) * sk + (win[k - 1] - 1) * dk - pk + padl + 1)
        jlo, jhi = np.zeros(jlo.shape[0], np.int64), np.full(jhi.shape[0], nacc, np.int64)
    src, stag = _staged(xb, tag, nslot * width, acc_proto)
    # each staged row's first slot to try, by input row (a division a row saved)
    rpitch = max(1, abs(xs[rank - 2])) if rank > 2 else 1
    okey = np.empty((otab.shape[0] if staged else 0, nouter), np.int64)
    for pos in range(okey.shape[0]):
        for t in range(ocnt[pos]):
            okey[pos, t] = (otab[pos, t] // rpitch) % nslot
    xsk = 1 if staged else xs[rank - 1]
    passes, npass, eo, est, erel, trio, olo, ohi = _sum_passes(jlo, jhi, nacc, sk, pk - padl,
                                                               dk, xsk)
    nheld = nslot if staged else 0
    _sum_task(r0, r1, xb, xo, xs, yb, yo, ys, outsz, win, strd, pad, dil, pitch, wr, tag, c0,
              c1, nouter, otab, ocnt, ytab, odiv, fdiv, zp_in, scale_in, zp_out, scale_out,
              quantized, qlo, qhi, src, stag, width, padl, okey,
              np.empty(nacc, acc_proto.dtype), np.empty(rank, np.int64),
              np.empty(nouter, np.int64), np.empty(nouter, np.int64),
              np.empty((3, k), np.int64), np.empty(nouter, np.int64),
              np.full(nheld, -1, np.int64), np.full(nheld, -1, np.int64), passes, npass, eo,
              est, erel, trio, olo, ohi)


@njit(**_OPTS)
def _sum_task(r0, r1, xb, xo, xs, yb, yo, ys, outsz, win, strd, pad, dil, pitch, wr, tag, c0,
              c1, nouter, otab, ocnt, ytab, odiv, fdiv, zp_in, scale_in, zp_out, scale_out,
              quantized, qlo, qhi, src, stag, width, padl, okey, acc, coords, offs, flats,
              scratch, rowb, held, stamp, passes, npass, eo, est, erel, trio, olo, ohi):
    """``_sum_rows``'s work, reading the sums' terms from ``src`` (the input, or its
    staged rows: ``nouter + 2`` slots of ``width``, a row's first element at ``padl``),
    the passes from ``_sum_passes``, the rest scratch."""
    xb, xs, yb, ys, outsz, win = _b(xb), _b(xs), _b(yb), _b(ys), _b(outsz), _b(win)
    strd, pad, dil, pitch, wr, tag = _b(strd), _b(pad), _b(dil), _b(pitch), _b(wr), _b(tag)
    otab, ocnt, ytab, odiv = _b(otab), _b(ocnt), _b(ytab), _b(odiv)
    fdiv, zp_in, scale_in = _b(fdiv), _b(zp_in), _b(scale_in)
    zp_out, scale_out, src, stag = _b(zp_out), _b(scale_out), _b(src), _b(stag)
    acc, coords, offs, flats, scratch = _b(acc), _b(coords), _b(offs), _b(flats), _b(scratch)
    rowb, held, stamp, passes, eo = _b(rowb), _b(held), _b(stamp), _b(passes), _b(eo)
    est, erel, okey = _b(est), _b(erel), _b(okey)
    rank = outsz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    sk = strd[k - 1]
    xsk, ysk = xs[rank - 1], ys[rank - 1]
    fqlo, fqhi = np.float32(qlo), np.float32(qhi)
    npos = ocnt.shape[0]
    staged = is_staged(xb, tag)
    nslot = nouter + 2
    rpitch = max(1, abs(xs[rank - 2])) if rank > 2 else 1
    ulo, uhi = np.uint64(olo), np.uint64(ohi)
    ustep = np.uint64(sk if staged else sk * xsk)
    pos, n, c = _row_plane(r0, npos, outsz)
    for r in range(r0, r1):
        if r == r0 or pos == 0:
            xplane = xo + n * xs[0] + c * xs[1]
            yplane = yo + n * ys[0] + c * ys[1]
            zp, zq, s_in, s_out = channel_params(zp_in, scale_in, zp_out, scale_out, c, acc)
        count = ocnt[pos]
        if count > 0:
            orow = _offsets(pos, otab, outsz, wr, xs, win, strd, pad, dil, pitch, coords,
                            offs, flats, scratch)
        for t in range(count):
            if staged:
                # the columns the row reads, converted, in a slot by input row: the next
                # output row finds the rows it shares with this one there
                at = xplane + orow[t]
                slot = okey[pos, t] if okey.shape[0] > 0 else (at // rpitch) % nslot
                while stamp[slot] == r and held[slot] != at:     # (taken in this row)
                    slot = (slot + 1) % nslot
                stamp[slot] = r
                if held[slot] != at:
                    u, v = np.uint64(at), np.uint64(slot * width + padl)
                    if xsk == 1:
                        _convert(xb, u, np.uint64(1), src, v, c0, c1, tag, zp)
                    else:
                        _convert(xb, u, np.uint64(xsk), src, v, c0, c1, tag, zp)
                    held[slot] = at
                rowb[t] = slot * width
            else:
                rowb[t] = xplane + orow[t]
        # (staged quantized rows are less their zero point already)
        _row_sums(src, rowb, count, passes, npass, trio, eo, est, erel, ulo, uhi, ustep, stag,
                  acc.dtype.type(0) if staged else zp, acc)
        yrow = yplane + ytab[pos]
        od = odiv[pos]
        # divisors as floats: the product of two exact factors, rounded once like the
        # integer product's conversion
        fod = fdiv.dtype.type(od)
        if quantized:
            fzq = np.float32(zq)
            if ysk == 1:
                _requantize_row(acc, fdiv, fod, s_in, s_out, fzq, fqlo, fqhi, yb,
                                np.uint64(yrow), np.uint64(1), olast)
            else:
                _requantize_row(acc, fdiv, fod, s_in, s_out, fzq, fqlo, fqhi, yb,
                                np.uint64(yrow), np.uint64(ysk), olast)
        elif ysk == 1:
            _average_row(acc, fdiv, fod, yb, np.uint64(yrow), np.uint64(1), olast, tag)
        else:
            _average_row(acc, fdiv, fod, yb, np.uint64(yrow), np.uint64(ysk), olast, tag)
        pos, n, c = _next_row(pos, n, c, npos, outsz)


@njit(**_OPTS)
def _outer_divisors(outsz, counts, cstart, npos):
    """Per row position (``npos`` of them), the product of its outer dimensions' divisor
    factors."""
    rank = outsz.shape[0]
    coords = np.zeros(rank, np.int64)
    odiv = np.ones(npos, np.int64)
    for pos in range(npos):
        _decode(pos, outsz, 2, rank - 1, coords)
        for i in range(rank - 3):
            odiv[pos] *= counts[cstart[i] + coords[2 + i]]
    return odiv


def sum_pool_kernel(xb, xo, xs, insz, pitch, yb, yo, ys, outsz, win, strd, pad, dil, counts,
                    cstart, fdiv, tag, acc_proto, zp_in, scale_in, zp_out, scale_out,
                    quantized, qlo, qhi, table):
    """Window sums in row-major offset order, then the average (``quantized`` False: float
    accumulation in ``acc_proto``'s type, divided by the divisor; a divisor of 0 gives
    +0.0) or SPEC 3.3's requantization (``quantized`` True: exact integer sums, float32
    arithmetic, round half to even, clamp). ``counts[cstart[i] + o]`` is dimension ``i``'s
    share of the divisor at output ``o``, ``fdiv`` the last dimension's as floats (float32,
    or float64 for float64); ``qlo``/``qhi`` the output type's range (quantized only).
    Quantized sums run in ``acc_proto``'s type: int32 where no window can overflow it.
    ``table``: as for ``max_pool_kernel``."""
    jlo, jhi, _, c0, c1, _, wr, rows, nouter, otab, _, ocnt, ytab = _plan(
        insz, outsz, win, strd, pad, dil, xs, ys, pitch, table, False)
    parallel(_sum_rows, rows, xb, xo, xs, insz, yb, yo, ys, outsz, win, strd, pad, dil, pitch,
             wr, tag, jlo, jhi, c0, c1, nouter, otab, ocnt, ytab,
             _outer_divisors(outsz, counts, cstart, ocnt.shape[0]), fdiv, zp_in, scale_in,
             zp_out, scale_out, quantized, qlo, qhi, acc_proto, item_size=outsz[-1])


def _store_sums(dxb, at, acc, n, tag, stream):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_store_sums)
def _store_sums_impl(dxb, at, acc, n, tag, stream):
    """``dxb[at:at + n]`` = the sums ``acc[:n]`` in ``dxb``'s type: streamed where asked and
    the types are the same (a plane of the gradient is written once and not read back),
    else converted one by one."""
    if dxb.dtype == acc.dtype:
        return lambda dxb, at, acc, n, tag, stream: stream_copy(dxb, at, acc, 0, n, stream)

    def convert(dxb, at, acc, n, tag, stream):
        udx = np.uint64(at)
        for i in range(np.uint64(n)):
            dxb[udx + i] = store(acc[i], tag, dxb.dtype.type)
    return convert


@njit(**_OPTS)
def _grad_planes(p0, p1, xb, xo, xs, insz, pitch, dyb, dyo, dys, dytab, outsz, win, strd, pad,
                 dil, dxb, dxo, dxs, dxsz, tag, acc_proto, dx_packed, jlo, jhi, jfirst, nones,
                 c0, c1, nouter, wr, xi, words_of_x, kspec, kmin, otab, ftab, ocnt, ytab, flat,
                 track, empty_value, empty_index, wide, gone, ysc, at, no, yes, stream):
    """Planes [p0, p1) of ``max_grad_kernel`` (one thread's task): a plane's argmaxes as max
    pooling finds them (``_max_rows``, into a plane of scratch indices laid out by ``ysc``
    from offset ``at``), then its gradient added to them in ascending output order. (``at``
    0, ``no`` False and ``yes`` True come as arguments, not literals, so that the rows
    compiled for max pooling serve here; so are the arrays ``_max_rows`` takes, not
    borrowed ones, whose type would compile it anew. ``stream``: a large ``dx`` is written
    with streaming stores, ``_stream``.)"""
    dyb, dys, dxb, dxs, dxsz, dytab = _b(dyb), _b(dys), _b(dxb), _b(dxs), _b(dxsz), _b(dytab)
    btag = _b(tag)
    rank = insz.shape[0]
    in_plane = 1
    for d in range(2, rank):
        in_plane *= insz[d]
    npos, olast = ocnt.shape[0], outsz[rank - 1]
    acc = np.empty(in_plane, acc_proto.dtype)
    yb, yi = np.empty(npos * olast, xb.dtype), np.empty(npos * olast, xi.dtype)
    ib = (np.empty(0 if wide else npos * olast, np.uint32),
          np.empty(npos * olast if wide else 0, np.uint64))
    udysk = np.uint64(dys[rank - 1])
    for p in range(p0, p1):
        # (a plane's scratch is allocated afresh: small blocks, which malloc reuses)
        _max_rows(p * npos, (p + 1) * npos, xb, xo, xs, insz, pitch, yb, at, ysc, ib, at, ysc,
                  outsz, win, strd, pad, dil, tag, empty_value, empty_index, no, yes, jlo, jhi,
                  jfirst, nones, c0, c1, nouter, wr, xi, words_of_x, yi, kspec, kmin, otab, ftab,
                  ocnt, ytab, ytab, flat, track)
        n, c = p // outsz[1], p % outsz[1]
        pbase = n * pitch[0] + c * pitch[1]
        dyplane = dyo + n * dys[0] + c * dys[1]
        for i in range(in_plane):
            acc[i] = 0
        # (unsigned indices here: no checks for negative ones, and the loops vectorise)
        q, one = np.uint64(0), np.uint64(1)
        # the next plane's dy, row by row while this plane's is added (``_stream``)
        dyahead = dyo + (p + 1) // outsz[1] * dys[0] + (p + 1) % outsz[1] * dys[1]
        dyrow = (olast - 1) * dys[rank - 1] + 1
        for pos in range(npos):
            if p + 1 < p1:
                prefetch(dyb, dyahead + dytab[pos], dyahead + dytab[pos] + dyrow)
            udy = np.uint64(dyplane + dytab[pos])
            for o in range(olast):
                e = np.int64(ib[1][q]) if wide else np.int64(ib[0][q])
                q += one
                if e != gone:
                    acc[np.uint64(e - pbase)] += load(dyb[udy + np.uint64(o) * udysk], btag)
        first = p * in_plane
        if dx_packed:
            _store_sums(dxb, dxo + first, acc, in_plane, btag, stream)
            continue
        for i in range(in_plane):
            rest = first + i
            e = dxo
            for d in range(dxsz.shape[0] - 1, -1, -1):
                e += (rest % dxsz[d]) * dxs[d]
                rest //= dxsz[d]
            dxb[e] = store(acc[i], btag, dxb.dtype.type)
    fence()                     # (the streamed stores of _store_sums)


def max_grad_kernel(xb, xo, xs, insz, pitch, dyb, dyo, dys, outsz, win, strd, pad, dil,
                    dxb, dxo, dxs, dxsz, tag, acc_proto, dx_packed, empty_value, xi, kspec,
                    kmin, flat):
    """Each window's argmax, as ``max_pool_kernel`` finds it (the same compiled rows, into
    a plane of scratch indices), receives the window's gradient, plane by plane (the first
    two dimensions; planes are shared out among threads).

    Every input element belongs to one plane and only that plane's windows choose it, so a
    plane's scatter, run in ascending output order by one thread, adds each element's
    contributions in the SPEC's order: no atomics, the same bits for any thread count. (With
    the channels innermost, a plane is a whole sample and each channel's outputs still come
    in ascending order.) ``pitch`` gives each dimension's step in the caller's flat index, so
    a plane's accumulator is in the caller's logical order; ``dxsz``/``dxs`` describe the
    caller's ``dx``, C-contiguous when ``dx_packed``. Sums run in ``acc_proto``'s type from
    +0.0 and are rounded once at the end. ``empty_value, xi, kspec, kmin, flat`` as for
    ``max_pool_kernel``."""
    rank = len(insz)
    # a plane of outputs, packed: its scratch indices' strides (the planes share it)
    ysc = np.zeros(rank, np.int64)
    ysc[rank - 1] = 1
    for d in range(rank - 2, 1, -1):
        ysc[d] = ysc[d + 1] * outsz[d + 1]
    jlo, jhi, jfirst, c0, c1, nones, wr, _, nouter, otab, ftab, ocnt, ytab = _plan(
        insz, outsz, win, strd, pad, dil, xs, ysc, pitch, TABLE, True)
    dytab = _positions(outsz, dys)          # each row position's offset in dy
    # scratch indices of 32 bits where they fit; "no element" reads back as ``gone``
    wide = bool(np.prod(insz, dtype=np.float64) >= 2.0**32 - 1)
    gone = -1 if wide else 2**32 - 1
    track = np.array([np.iinfo(xi.dtype).max], xi.dtype)
    parallel(_grad_planes, int(insz[0] * insz[1]), xb, xo, xs, insz, pitch, dyb, dyo, dys,
             dytab, outsz, win, strd, pad, dil, dxb, dxo, dxs, dxsz, tag, acc_proto, dx_packed,
             jlo, jhi, jfirst, nones, c0, c1, nouter, wr, xi, words(xi), kspec, kmin, otab, ftab,
             ocnt, ytab, flat, track, empty_value, EMPTY_INDEX, wide, gone, ysc, 0, False, True,
             bool(dx_packed and np.prod(dxsz, dtype=np.float64) * dxb.itemsize >= BIG),
             item_size=np.prod(insz[2:]))
