"""Compiled pooling kernels (SPEC 3.1, 3.3, 3.4, 3.5): one N-D kernel per operation.

Layout of the work: the output is cut into *rows* (every output dimension but the last);
rows are shared out among threads (``prange``), each writing only its own outputs, so the
result never depends on the thread count. Within a row, the window offsets of the outer
spatial dimensions that land on real elements are listed once (``_outer``), in row-major
order; then for each of them and each offset ``j`` of the last dimension, a tight loop runs
over the output positions whose element is real. Every output position thus visits its
window in row-major offset order: ascending flat input index, the order the tie rule and the
fixed summation order of SPEC 5 need. Validity is carried explicitly (``has``), never by a
sentinel value.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import _cache  # noqa: F401  (routes the on-disk cache to the user cache directory)
from ._half import is_half, load, store, value_array

_OPTS = dict(cache=True, nogil=True)


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


@njit(inline="always", **_OPTS)
def _decode(r, sizes, first, last, coords):
    """Row number ``r`` -> ``coords[first:last]`` over ``sizes`` (row-major)."""
    for d in range(last - 1, first - 1, -1):
        coords[d] = r % sizes[d]
        r //= sizes[d]


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
    """Rows (every output dimension but the last), outer window size, and the chunks the
    rows are shared out in (a chunk's scratch is allocated once)."""
    rank = outsz.shape[0]
    rows = 1
    for d in range(rank - 1):
        rows *= outsz[d]
    nouter = 1
    for i in range(win.shape[0] - 1):
        nouter *= win[i]
    return rows, nouter, min(rows, 4096)


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
              nones, c0, c1, nouter, wr):
    """Output rows [r0, r1) of ``max_pool_kernel`` (one task; a plain function, so that the
    parallel kernel stays small and quick to compile)."""
    rank = insz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    xsk, ysk, isk, plast = xs[rank - 1], ys[rank - 1], ist[rank - 1], pitch[rank - 1]
    # float16 outputs are copied from the input (converting back would be slower)
    reread = is_half(tag)
    coords = np.empty(rank, np.int64)
    scratch = np.empty((3, k), np.int64)
    offs = np.empty(nouter, np.int64)
    flats = np.empty(nouter, np.int64)
    cv, ct, bv, bt, bj = _max_scratch(olast, insz[rank - 1], xb, tag)
    for r in range(r0, r1):
        _decode(r, outsz, 0, rank - 1, coords)
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
                    ib[irow + o * isk] = empty_index
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
            for o in range(olast):
                xk = o * sk + bj[w, o] * dk - pk
                ib[irow + o * isk] = frow + flats[bt[w, o]] + xk * plast
        for o in nones:                 # windows of padding and phantom positions only
            if want_values:
                yb[yrow + o * ysk] = empty_value
            if want_indices:
                ib[irow + o * isk] = empty_index


@njit(parallel=True, **_OPTS)
def max_pool_kernel(xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win, strd, pad,
                    dil, tag, empty_value, empty_index, want_values, want_indices):
    """Arguments: ``xb, xo, xs`` input buffer, offset of element 0 and element strides;
    ``insz`` input sizes; ``pitch`` each dimension's step in the flat index of the caller's
    input (its logical row-major strides, permuted along with the dimensions);
    ``yb/yo/ys`` and ``ib/io/ist`` the value and index outputs likewise; ``outsz`` output
    sizes; ``win, strd, pad, dil`` the window over the spatial dimensions."""
    k = insz.shape[0] - 2
    jlo, jhi, jfirst = _last_dim(insz, outsz, win, strd, pad, dil)
    c0, c1 = _columns(jlo, jhi, strd[k - 1], pad[k - 1], dil[k - 1])
    nones = _nones(jfirst)
    wr = _window_ranges(insz, outsz, win, strd, pad, dil)
    rows, nouter, chunks = _rows(outsz, win)
    for chunk in prange(chunks):
        _max_rows(chunk * rows // chunks, (chunk + 1) * rows // chunks, xb, xo, xs, insz,
                  pitch, yb, yo, ys, ib, io, ist, outsz, win, strd, pad, dil, tag,
                  empty_value, empty_index, want_values, want_indices, jlo, jhi, jfirst,
                  nones, c0, c1, nouter, wr)


@njit(parallel=True, **_OPTS)
def sum_pool_kernel(xb, xo, xs, insz, pitch, yb, yo, ys, outsz, win, strd, pad, dil, counts,
                    cstart, tag, acc_proto, zp_in, scale_in, zp_out, scale_out, quantized,
                    qlo, qhi):
    """Window sums in row-major offset order, then the average (``quantized`` False: float
    accumulation in ``acc_proto``'s type, divided by the divisor) or SPEC 3.3's requantization
    (``quantized`` True: exact integer sums, float32 arithmetic, round half to even, clamp).
    ``counts[cstart[i] + o]`` is dimension ``i``'s share of the divisor at output ``o``;
    ``qlo``/``qhi`` the output type's range (quantized only)."""
    rank = insz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    xsk, ysk = xs[rank - 1], ys[rank - 1]
    jlo, jhi, _ = _last_dim(insz, outsz, win, strd, pad, dil)
    wr = _window_ranges(insz, outsz, win, strd, pad, dil)
    rows, nouter, chunks = _rows(outsz, win)
    for chunk in prange(chunks):
        coords = np.empty(rank, np.int64)
        scratch = np.empty((3, k), np.int64)
        offs = np.empty(nouter, np.int64)
        flats = np.empty(nouter, np.int64)
        acc = np.empty(olast, acc_proto.dtype)
        for r in range(chunk * rows // chunks, (chunk + 1) * rows // chunks):
            _decode(r, outsz, 0, rank - 1, coords)
            c = coords[1]
            xrow = xo + coords[0] * xs[0] + c * xs[1]
            count = _outer(coords, wr, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
            acc[:] = 0
            zp = zp_in[c if zp_in.shape[0] > 1 else 0]
            for t in range(count):
                base = xrow + offs[t]
                for jj in range(wk):
                    e0 = base + (jj * dk - pk) * xsk
                    step = sk * xsk
                    u0, ustep = np.uint64(e0), np.uint64(step)     # (see max_pool_kernel)
                    ulo, uhi = np.uint64(jlo[jj]), np.uint64(jhi[jj])
                    if quantized:
                        for o in range(ulo, uhi):
                            acc[o] += np.int64(xb[u0 + o * ustep]) - zp
                    else:
                        for o in range(ulo, uhi):
                            acc[o] += load(xb[u0 + o * ustep], tag)
            outer_div = 1
            for i in range(k - 1):
                outer_div *= counts[cstart[i] + coords[2 + i]]
            yrow = yo
            for d in range(rank - 1):
                yrow += coords[d] * ys[d]
            if quantized:
                zq = zp_out[c if zp_out.shape[0] > 1 else 0]
                s_in = scale_in[c if scale_in.shape[0] > 1 else 0]
                s_out = scale_out[c if scale_out.shape[0] > 1 else 0]
            for o in range(olast):
                div = outer_div * counts[cstart[k - 1] + o]
                e = yrow + o * ysk
                if quantized:
                    if div == 0:
                        yb[e] = zq
                    else:
                        q = np.float32(acc[o]) * s_in
                        q = q / np.float32(div)
                        q = q / s_out
                        v = np.float64(np.rint(q)) + zq
                        yb[e] = min(max(v, qlo), qhi)
                elif div == 0:
                    yb[e] = store(acc_proto[0], tag, yb.dtype.type)    # +0.0
                else:
                    yb[e] = store(acc[o] / acc_proto.dtype.type(div), tag, yb.dtype.type)


@njit(**_OPTS)
def _grad_plane(p, xb, xo, xs, insz, pitch, dyb, dyo, dys, outsz, win, strd, pad, dil, dxb,
                dxo, dxs, dxsz, tag, acc_proto, dx_packed, jlo, jhi, jfirst, c0, c1, nouter,
                wr):
    """Plane ``p`` of ``max_grad_kernel`` (one task; a plain function, see ``_max_rows``)."""
    rank = insz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    xsk, dysk, plast = xs[rank - 1], dys[rank - 1], pitch[rank - 1]
    in_plane = 1
    plane_rows = 1
    for d in range(2, rank):
        in_plane *= insz[d]
    for d in range(2, rank - 1):
        plane_rows *= outsz[d]
    coords = np.empty(rank, np.int64)
    scratch = np.empty((3, k), np.int64)
    offs = np.empty(nouter, np.int64)
    flats = np.empty(nouter, np.int64)
    cv, ct, bv, bt, bj = _max_scratch(olast, insz[rank - 1], xb, tag)
    acc = np.zeros(in_plane, acc_proto.dtype)
    for r in range(p * plane_rows, (p + 1) * plane_rows):
        _decode(r, outsz, 0, rank - 1, coords)
        count = _outer(coords, wr, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
        if count == 0:
            continue
        xrow = xo + coords[0] * xs[0] + coords[1] * xs[1]
        w = _max_row(xb, xrow, xsk, offs, count, olast, wk, sk, pk, dk, jlo, jhi, jfirst,
                     c0, c1, tag, True, cv, ct, bv, bt, bj)
        dyrow = dyo
        for d in range(rank - 1):
            dyrow += coords[d] * dys[d]
        for o in range(olast):
            if jfirst[o] >= 0:
                xk = o * sk + bj[w, o] * dk - pk
                acc[flats[bt[w, o]] + xk * plast] += load(dyb[dyrow + o * dysk], tag)
    first = p * in_plane
    if dx_packed:
        for i in range(in_plane):
            dxb[dxo + first + i] = store(acc[i], tag, dxb.dtype.type)
        return
    for i in range(in_plane):
        rest = first + i
        e = dxo
        for d in range(dxsz.shape[0] - 1, -1, -1):
            e += (rest % dxsz[d]) * dxs[d]
            rest //= dxsz[d]
        dxb[e] = store(acc[i], tag, dxb.dtype.type)


@njit(parallel=True, **_OPTS)
def max_grad_kernel(xb, xo, xs, insz, pitch, dyb, dyo, dys, outsz, win, strd, pad, dil,
                    dxb, dxo, dxs, dxsz, tag, acc_proto, dx_packed):
    """Each window's argmax (as ``max_pool_kernel`` finds it) receives the window's gradient,
    one plane (the first two dimensions) per task, in the same pass.

    Every input element belongs to one plane and only that plane's windows choose it, so a
    plane's scatter, run in ascending output order by one thread, adds each element's
    contributions in the SPEC's order: no atomics, the same bits for any thread count. (With
    the channels innermost, a plane is a whole sample and each channel's outputs still come
    in ascending order.) ``pitch`` gives each dimension's step in the caller's flat index, so
    a plane's accumulator is in the caller's logical order; ``dxsz``/``dxs`` describe the
    caller's ``dx``, C-contiguous when ``dx_packed``. Sums run in ``acc_proto``'s type from
    +0.0 and are rounded once at the end."""
    k = insz.shape[0] - 2
    jlo, jhi, jfirst = _last_dim(insz, outsz, win, strd, pad, dil)
    c0, c1 = _columns(jlo, jhi, strd[k - 1], pad[k - 1], dil[k - 1])
    _, nouter, _ = _rows(outsz, win)
    wr = _window_ranges(insz, outsz, win, strd, pad, dil)
    for p in prange(insz[0] * insz[1]):
        _grad_plane(p, xb, xo, xs, insz, pitch, dyb, dyo, dys, outsz, win, strd, pad, dil,
                    dxb, dxo, dxs, dxsz, tag, acc_proto, dx_packed, jlo, jhi, jfirst, c0, c1,
                    nouter, wr)
