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
from ._half import load, store, value_array

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


@njit(inline="always", **_OPTS)
def _outer(coords, insz, xs, win, strd, pad, dil, pitch, offs, flats, scratch):
    """List the real outer-window elements of a row: element offsets and flat-index parts,
    row-major over the outer spatial offsets. Returns how many."""
    k = win.shape[0]
    count = 1
    lo = scratch[0]
    hi = scratch[1]
    for i in range(k - 1):
        q0 = coords[2 + i] * strd[i] - pad[i]
        a, b = _valid_range(q0, dil[i], insz[2 + i], win[i])
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


@njit(parallel=True, **_OPTS)
def max_pool_kernel(xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win, strd, pad,
                    dil, tag, empty_value, empty_index, want_values, want_indices):
    """Arguments: ``xb, xo, xs`` input buffer, offset of element 0 and element strides;
    ``insz`` input sizes; ``pitch`` each dimension's step in the flat index of the caller's
    input (its logical row-major strides, permuted along with the dimensions);
    ``yb/yo/ys`` and ``ib/io/ist`` the value and index outputs likewise; ``outsz`` output
    sizes; ``win, strd, pad, dil`` the window over the spatial dimensions."""
    rank = insz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    xsk, ysk, isk, plast = xs[rank - 1], ys[rank - 1], ist[rank - 1], pitch[rank - 1]
    jlo, jhi, jfirst = _last_dim(insz, outsz, win, strd, pad, dil)
    rows, nouter, chunks = _rows(outsz, win)
    for chunk in prange(chunks):
        coords = np.empty(rank, np.int64)
        scratch = np.empty((3, k), np.int64)
        offs = np.empty(nouter, np.int64)
        flats = np.empty(nouter, np.int64)
        best = value_array(olast, xb, tag)
        wt = np.zeros(olast, np.int64)       # the winner: outer combination and last offset
        wj = np.zeros(olast, np.int64)
        for r in range(chunk * rows // chunks, (chunk + 1) * rows // chunks):
            _decode(r, outsz, 0, rank - 1, coords)
            xrow = xo + coords[0] * xs[0] + coords[1] * xs[1]
            frow = coords[0] * pitch[0] + coords[1] * pitch[1]
            count = _outer(coords, insz, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
            if count > 0:       # each window starts from its first real element
                base = xrow + offs[0]
                for o in range(olast):
                    j = jfirst[o]
                    if j >= 0:
                        best[o] = load(xb[base + (o * sk + j * dk - pk) * xsk], tag)
                    wt[o] = 0
                    wj[o] = max(j, 0)
            for t in range(count):
                base = xrow + offs[t]
                for jj in range(wk):
                    e0 = base + (jj * dk - pk) * xsk
                    step = sk * xsk
                    # unsigned indices: Numba's wraparound of negative (signed) indices
                    # would keep these loops from being vectorised; all are >= 0 here
                    u0, ustep = np.uint64(e0), np.uint64(step)
                    ulo, uhi = np.uint64(jlo[jj]), np.uint64(jhi[jj])
                    if want_indices:
                        for o in range(ulo, uhi):
                            v = load(xb[u0 + o * ustep], tag)
                            b = best[o]
                            if (v > b) | ((v != v) & (b == b)):
                                best[o] = v
                                wt[o] = t
                                wj[o] = jj
                    else:           # values only: a plain select the compiler vectorises
                        for o in range(ulo, uhi):
                            v = load(xb[u0 + o * ustep], tag)
                            b = best[o]
                            best[o] = v if (v > b) | ((v != v) & (b == b)) else b
            yrow = yo
            irow = io
            for d in range(rank - 1):
                yrow += coords[d] * ys[d]
                irow += coords[d] * ist[d]
            for o in range(olast):
                real = count > 0 and jfirst[o] >= 0
                xk = o * sk + wj[o] * dk - pk
                # separate stores, not a conditional expression: that would unify int64
                # and uint64 to float64 and lose the UINT64 "no element" value
                if want_values:
                    if real and not want_indices:       # best holds the element, bits intact
                        yb[yrow + o * ysk] = store(best[o], tag, yb.dtype.type)
                    elif real:
                        yb[yrow + o * ysk] = xb[xrow + offs[wt[o]] + xk * xsk]
                    else:
                        yb[yrow + o * ysk] = empty_value
                if want_indices:
                    if real:
                        ib[irow + o * isk] = frow + flats[wt[o]] + xk * plast
                    else:
                        ib[irow + o * isk] = empty_index


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
            count = _outer(coords, insz, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
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


@njit(parallel=True, **_OPTS)
def max_grad_kernel(dyb, dyo, dys, outsz, argb, insz, dxb, dxo, dxs, tag, acc_proto,
                    dy_packed, dx_packed):
    """Scatter each window's gradient to its chosen element, one (n, c) plane per task.

    Every input element belongs to one plane and only that plane's outputs choose it, so a
    plane's scatter, run in ascending flat output order by one thread, adds each element's
    contributions in exactly the SPEC's order: no atomics, the same bits for any thread
    count. ``argb`` holds each output's chosen flat input index (-1: none), C-contiguous;
    sums run in ``acc_proto``'s type from +0.0 and are rounded once at the end.
    ``dy_packed`` / ``dx_packed``: that array is C-contiguous (offsets need no decoding).
    """
    rank = insz.shape[0]
    planes = insz[0] * insz[1]
    in_plane = 1
    out_plane = 1
    for d in range(2, rank):
        in_plane *= insz[d]
        out_plane *= outsz[d]
    for p in prange(planes):
        n = p // insz[1]
        c = p - n * insz[1]
        acc = np.zeros(in_plane, acc_proto.dtype)
        icoords = np.empty(rank, np.int64)
        first = p * in_plane
        for q in range(out_plane):
            chosen = argb[p * out_plane + q]
            if chosen >= 0 and dy_packed:
                acc[chosen - first] += load(dyb[dyo + p * out_plane + q], tag)
            elif chosen >= 0:
                rest = q
                e = dyo + n * dys[0] + c * dys[1]
                for d in range(rank - 1, 1, -1):
                    icoords[d] = rest % outsz[d]
                    rest //= outsz[d]
                for d in range(2, rank):
                    e += icoords[d] * dys[d]
                acc[chosen - first] += load(dyb[e], tag)
        base = dxo + n * dxs[0] + c * dxs[1]
        if dx_packed:
            for i in range(in_plane):
                dxb[dxo + first + i] = store(acc[i], tag, dxb.dtype.type)
            continue
        for i in range(in_plane):
            rest = i
            e = base
            for d in range(rank - 1, 1, -1):
                e += (rest % insz[d]) * dxs[d]
                rest //= insz[d]
            dxb[e] = store(acc[i], tag, dxb.dtype.type)
