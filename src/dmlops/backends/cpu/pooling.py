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


@njit(**_OPTS)
def _decode(r, sizes, first, last, coords):
    """Row number ``r`` -> ``coords[first:last]`` over ``sizes`` (row-major)."""
    for d in range(last - 1, first - 1, -1):
        coords[d] = r % sizes[d]
        r //= sizes[d]


@njit(**_OPTS)
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
    j = lo.copy()
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


def _row_setup_doc():  # pragma: no cover - documentation anchor for the argument lists
    """Kernel arguments: ``xb, xo, xs`` input buffer/offset/strides, ``insz`` input sizes,
    ``yb, yo, ys`` output, ``outsz`` output sizes, ``win, strd, pad, dil`` window (int64
    arrays over the spatial dimensions), ``pitch`` logical row-major strides of the input."""


@njit(parallel=True, **_OPTS)
def max_pool_kernel(xb, xo, xs, insz, pitch, yb, yo, ys, ib, io, ist, outsz, win, strd, pad,
                    dil, tag, empty_value, empty_index, want_values, want_indices):
    rank = insz.shape[0]
    k = rank - 2
    olast = outsz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    size_k, xsk = insz[rank - 1], xs[rank - 1]
    rows = 1
    for d in range(rank - 1):
        rows *= outsz[d]
    nouter = 1
    for i in range(k - 1):
        nouter *= win[i]
    chunks = min(rows, 1024)
    for chunk in prange(chunks):
        coords = np.empty(rank, np.int64)
        scratch = np.empty((2, k), np.int64)
        offs = np.empty(nouter, np.int64)
        flats = np.empty(nouter, np.int64)
        best = value_array(olast, xb, tag)
        code = np.empty(olast, np.int64)     # winner: outer combination * wk + last offset
        has = np.empty(olast, np.bool_)
        for r in range(chunk * rows // chunks, (chunk + 1) * rows // chunks):
            _decode(r, outsz, 0, rank - 1, coords)
            xrow = xo + coords[0] * xs[0] + coords[1] * xs[1]
            frow = (coords[0] * insz[1] + coords[1]) * pitch[1]
            count = _outer(coords, insz, xs, win, strd, pad, dil, pitch, offs, flats, scratch)
            # the first real element of each window (outer combination 0) starts it off
            for o in range(olast):
                lo, hi = _valid_range(o * sk - pk, dk, size_k, wk)
                has[o] = count > 0 and lo < hi
                if has[o]:
                    best[o] = load(xb[xrow + offs[0] + (o * sk + lo * dk - pk) * xsk], tag)
                    code[o] = lo
            for t in range(count):
                base = xrow + offs[t]
                for jj in range(wk):
                    lo, hi = _out_range(jj, size_k, olast, sk, pk, dk)
                    e0 = base + (jj * dk - pk) * xsk
                    step = sk * xsk
                    c = t * wk + jj
                    if want_indices:
                        for o in range(lo, hi):
                            v = load(xb[e0 + o * step], tag)
                            b = best[o]
                            if (v > b) | ((v != v) & (b == b)):
                                best[o] = v
                                code[o] = c
                    else:           # values only: a plain select the compiler vectorises
                        for o in range(lo, hi):
                            v = load(xb[e0 + o * step], tag)
                            b = best[o]
                            best[o] = v if (v > b) | ((v != v) & (b == b)) else b
            yrow = yo
            irow = io
            for d in range(rank - 1):
                yrow += coords[d] * ys[d]
                irow += coords[d] * ist[d]
            for o in range(olast):
                t = code[o] // wk
                xk = o * sk + (code[o] % wk) * dk - pk
                # separate stores, not a conditional expression: that would unify int64
                # and uint64 to float64 and lose the UINT64 "no element" value
                if want_values:
                    if has[o] and not want_indices:     # best holds the element, bits intact
                        yb[yrow + o * ys[rank - 1]] = store(best[o], tag, yb.dtype.type)
                    elif has[o]:
                        yb[yrow + o * ys[rank - 1]] = xb[xrow + offs[t] + xk * xsk]
                    else:
                        yb[yrow + o * ys[rank - 1]] = empty_value
                if want_indices:
                    if has[o]:
                        ib[irow + o * ist[rank - 1]] = frow + flats[t] + xk
                    else:
                        ib[irow + o * ist[rank - 1]] = empty_index


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
    size_k, xsk = insz[rank - 1], xs[rank - 1]
    rows = 1
    for d in range(rank - 1):
        rows *= outsz[d]
    nouter = 1
    for i in range(k - 1):
        nouter *= win[i]
    chunks = min(rows, 1024)
    for chunk in prange(chunks):
        coords = np.empty(rank, np.int64)
        scratch = np.empty((2, k), np.int64)
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
                    lo, hi = _out_range(jj, size_k, olast, sk, pk, dk)
                    e0 = base + (jj * dk - pk) * xsk
                    step = sk * xsk
                    for o in range(lo, hi):
                        if quantized:
                            acc[o] += np.int64(xb[e0 + o * step]) - zp
                        else:
                            acc[o] += load(xb[e0 + o * step], tag)
            outer_div = 1
            for i in range(k - 1):
                outer_div *= counts[cstart[i] + coords[2 + i]]
            yrow = yo
            for d in range(rank - 1):
                yrow += coords[d] * ys[d]
            for o in range(olast):
                div = outer_div * counts[cstart[k - 1] + o]
                e = yrow + o * ys[rank - 1]
                if quantized:
                    zq = zp_out[c if zp_out.shape[0] > 1 else 0]
                    if div == 0:
                        yb[e] = zq
                    else:
                        q = np.float32(acc[o]) * scale_in[c if scale_in.shape[0] > 1 else 0]
                        q = q / np.float32(div)
                        q = q / scale_out[c if scale_out.shape[0] > 1 else 0]
                        v = np.float64(np.rint(q)) + zq
                        v = min(max(v, qlo), qhi)
                        yb[e] = v
                elif div == 0:
                    yb[e] = store(acc_proto[0], tag, yb.dtype.type)    # +0.0
                else:
                    yb[e] = store(acc[o] / acc_proto.dtype.type(div), tag, yb.dtype.type)


@njit(parallel=True, **_OPTS)
def max_grad_kernel(dyb, dyo, dys, outsz, argb, insz, pitch, dxb, dxo, dxs, win, strd, pad,
                    dil, tag, acc_proto):
    """Gather, per input element, the gradients of the windows that chose it, in ascending
    forward-output order (no atomics, so any thread count gives the same bits).
    ``argb`` holds each output's chosen flat input index (-1: none), C-contiguous."""
    rank = insz.shape[0]
    k = rank - 2
    rows = 1
    for d in range(rank - 1):
        rows *= insz[d]
    size_k = insz[rank - 1]
    wk, sk, pk, dk = win[k - 1], strd[k - 1], pad[k - 1], dil[k - 1]
    opitch = np.empty(rank, np.int64)
    acc_o = 1
    for d in range(rank - 1, -1, -1):
        opitch[d] = acc_o
        acc_o *= outsz[d]
    nouter = 1
    for i in range(k - 1):
        nouter *= win[i]
    chunks = min(rows, 1024)
    for chunk in prange(chunks):
        coords = np.empty(rank, np.int64)
        cand = np.empty(max(nouter, 1), np.int64)    # outer candidate outputs (flat part)
        odo = np.empty((3, k), np.int64)
        for r in range(chunk * rows // chunks, (chunk + 1) * rows // chunks):
            _decode(r, insz, 0, rank - 1, coords)
            # outer candidates: per dimension the outputs o with o*s + j*d - p = x, ascending o
            ncand = 1
            for i in range(k - 1):
                x = coords[2 + i]
                first, n = _candidates(x, win[i], strd[i], pad[i], dil[i], outsz[2 + i])
                odo[0, i] = first
                odo[1, i] = n
                odo[2, i] = 0
                ncand *= n
            nbase = (coords[0] * outsz[1] + coords[1]) * opitch[1]
            for t in range(ncand):
                flat_o = nbase
                for i in range(k - 1):
                    o = odo[0, i] + odo[2, i] * _cand_step(win[i], strd[i], dil[i])
                    flat_o += o * opitch[2 + i]
                cand[t] = flat_o
                i = k - 2
                while i >= 0:
                    odo[2, i] += 1
                    if odo[2, i] < odo[1, i]:
                        break
                    odo[2, i] = 0
                    i -= 1
            frow = 0
            for d in range(rank - 1):
                frow += coords[d] * pitch[d]
            dxrow = dxo
            for d in range(rank - 1):
                dxrow += coords[d] * dxs[d]
            step_o = _cand_step(wk, sk, dk)
            for xk in range(size_k):
                first, n = _candidates(xk, wk, sk, pk, dk, outsz[rank - 1])
                me = frow + xk
                total = acc_proto[0]                  # +0.0 of the accumulation type
                for t in range(ncand):
                    for m in range(n):
                        fo = cand[t] + first + m * step_o
                        if argb[fo] == me:
                            o_rest = fo - nbase
                            total += load(dyb[_dy_offset(o_rest, nbase, coords, outsz,
                                                         opitch, dyo, dys)], tag)
                dxb[dxrow + xk * dxs[rank - 1]] = store(total, tag, dxb.dtype.type)


@njit(**_OPTS)
def _candidates(x, window, stride, pad, dilation, out_size):
    """Outputs ``o`` (ascending) with ``o*stride + j*dilation - pad == x`` for a window
    offset ``j``: ``(first, count)``, consecutive candidates ``_cand_step`` apart."""
    # o*stride = x + pad - j*dilation; j runs down as o runs up
    first = -1
    count = 0
    step = _cand_step(window, stride, dilation)
    for j in range(window - 1, -1, -1):
        num = x + pad - j * dilation
        if num < 0 or num % stride != 0:
            continue
        o = num // stride
        if o >= out_size:
            break
        if first < 0:
            first = o
        count = (o - first) // step + 1
    if first < 0:
        return 0, 0
    return first, count


@njit(**_OPTS)
def _cand_step(window, stride, dilation):
    """Distance between consecutive candidate outputs: lcm(stride, dilation) / stride."""
    a, b = stride, dilation
    while b:
        a, b = b, a % b
    return dilation // a


@njit(**_OPTS)
def _dy_offset(o_rest, nbase, coords, outsz, opitch, dyo, dys):
    rank = outsz.shape[0]
    off = dyo + coords[0] * dys[0] + coords[1] * dys[1]
    for d in range(2, rank):
        q = o_rest // opitch[d]
        o_rest -= q * opitch[d]
        off += q * dys[d]
    return off
