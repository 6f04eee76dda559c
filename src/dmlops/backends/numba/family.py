"""Compiled kernels for the rest of the pooling family (SPEC 3.2, 3.6, 3.7, 3.8): Lp pooling,
the average-pooling gradient, max unpooling and ROI pooling.

Each is one N-D kernel whose tasks, shared out among threads (``_threads.parallel``), are
independent pieces of the output (rows for Lp, (n, c) planes for the gradient and unpooling,
(region, channel) pairs for ROI pooling), so results never depend on the thread count. Window elements are visited in row-major offset order, the
order the reference backend uses.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _cache  # noqa: F401  (routes the on-disk cache to the user cache directory)
from ._coords import decode as _decode
from ._half import load, narrow, store_double, widen
from ._threads import parallel
from .pooling import _out_range, _valid_range

_OPTS = dict(cache=True, nogil=True)


@njit(inline="always", **_OPTS)
def _window_offsets(coords, insz, xs, win, strd, pad, dil, offs, lo, hi, j):
    """Element offsets ``Σ x_i * xs[2 + i]`` of the real elements of the window at output
    position ``coords[2:]``, in row-major offset order. Returns how many."""
    k = win.shape[0]
    count = 1
    for i in range(k):
        lo[i], hi[i] = _valid_range(coords[2 + i] * strd[i] - pad[i], dil[i], insz[2 + i],
                                    win[i])
        count *= hi[i] - lo[i]
    if count == 0:
        return 0
    for i in range(k):
        j[i] = lo[i]
    for t in range(count):
        off = 0
        for i in range(k):
            off += (coords[2 + i] * strd[i] + j[i] * dil[i] - pad[i]) * xs[2 + i]
        offs[t] = off
        i = k - 1                                  # odometer, last dimension fastest
        while i >= 0:
            j[i] += 1
            if j[i] < hi[i]:
                break
            j[i] = lo[i]
            i -= 1
    return count


def lp_kernel(xb, xo, xs, insz, yb, yo, ys, outsz, win, strd, pad, dil, p, tag):
    """``(Σ |x|^p)^(1/p)`` per window (``_lp_rows``), rows shared out among threads."""
    parallel(_lp_rows, int(np.prod(outsz[:-1])), xb, xo, xs, insz, yb, yo, ys, outsz, win,
             strd, pad, dil, p, tag, item_size=outsz[-1])


@njit(**_OPTS)
def _lp_rows(r0, r1, xb, xo, xs, insz, yb, yo, ys, outsz, win, strd, pad, dil, p, tag):
    """Rows [r0, r1) of ``(Σ |x|^p)^(1/p)`` per window, in float64 as
    ``m * (Σ (|x|/m)^p)^(1/p)``.

    A row of outputs is done offset by offset, like the reference: first ``m`` (and whether
    a NaN is present) of every window, then the scaled terms added in row-major offset order,
    each offset a tight loop over the outputs it reaches."""
    rank = insz.shape[0]
    k = rank - 2
    last = rank - 1
    outer = 1
    for i in range(k - 1):
        outer *= win[i]
    olast, wk = outsz[last], win[k - 1]
    sk, pk, dk, xsk = strd[k - 1], pad[k - 1], dil[k - 1], xs[last]
    fp = np.float64(p)
    inv = 1.0 / fp
    jlo = np.empty(wk, np.int64)
    jhi = np.empty(wk, np.int64)
    for jj in range(wk):
        jlo[jj], jhi[jj] = _out_range(jj, insz[last], olast, sk, pk, dk)
    for row in range(r0, r1):
        coords = np.empty(rank, np.int64)
        lo = np.empty(k, np.int64)
        hi = np.empty(k, np.int64)
        j = np.empty(k, np.int64)
        offs = np.empty(outer, np.int64)
        m = np.zeros(olast, np.float64)
        nan = np.zeros(olast, np.bool_)
        total = np.zeros(olast, np.float64)
        _decode(row, outsz, 0, last, coords)
        xrow = xo + coords[0] * xs[0] + coords[1] * xs[1]
        # the real elements of the outer dimensions' window (all but the last)
        n = _window_offsets(coords, insz, xs, win[:k - 1], strd[:k - 1], pad[:k - 1],
                            dil[:k - 1], offs, lo, hi, j)
        for t in range(n):
            for jj in range(wk):
                e = xrow + offs[t] + (jj * dk - pk) * xsk
                for o in range(jlo[jj], jhi[jj]):     # selects, no branches: vectorises
                    v = abs(np.float64(load(xb[e + o * sk * xsk], tag)))
                    nan[o] |= v != v
                    m[o] = v if v > m[o] else m[o]
        for o in range(olast):       # the divisor of the terms: m where it is a number > 0
            total[o] = m[o] if m[o] > 0.0 and m[o] < np.inf else 1.0
        scale = total.copy()
        total[:] = 0.0
        for t in range(n):
            for jj in range(wk):
                e = xrow + offs[t] + (jj * dk - pk) * xsk
                if p == 1:
                    for o in range(jlo[jj], jhi[jj]):
                        total[o] += abs(np.float64(load(xb[e + o * sk * xsk], tag))) / scale[o]
                elif p == 2:                       # as NumPy's fast path: a square
                    for o in range(jlo[jj], jhi[jj]):
                        q = abs(np.float64(load(xb[e + o * sk * xsk], tag))) / scale[o]
                        total[o] += q * q
                else:
                    for o in range(jlo[jj], jhi[jj]):
                        q = abs(np.float64(load(xb[e + o * sk * xsk], tag))) / scale[o]
                        total[o] += q ** fp
        yrow = yo
        for d in range(last):
            yrow += coords[d] * ys[d]
        for o in range(olast):
            mo = m[o]
            if nan[o]:
                result = np.nan
            elif mo == 0.0 or mo == np.inf:
                result = mo
            elif p == 1:
                result = mo * total[o]
            elif p == 2:                           # NumPy's fast path for ** 0.5: sqrt
                result = mo * np.sqrt(total[o])
            else:
                result = mo * total[o] ** inv
            yb[yrow + o * ys[last]] = store_double(result, tag, yb.dtype.type)


@njit(inline="always", **_OPTS)
def _step2(idx, sizes, s1, s2, first, e1, e2):
    """Advance the row-major counter ``idx[first:]`` over ``sizes`` by one element, and with
    it the memory offsets ``e1``, ``e2`` of two tensors of those sizes (no divisions)."""
    d = sizes.shape[0] - 1
    while d >= first:
        idx[d] += 1
        e1 += s1[d]
        e2 += s2[d]
        if idx[d] < sizes[d]:
            break
        e1 -= idx[d] * s1[d]
        e2 -= idx[d] * s2[d]
        idx[d] = 0
        d -= 1
    return e1, e2


@njit(inline="always", **_OPTS)
def _step(idx, sizes, strides, first, e):
    return _step2(idx, sizes, strides, strides, first, e, e)[0]


def average_grad_kernel(gb, go, gs, outsz, db, do, ds, insz, win, strd, pad, dil, counts,
                        cstart, tag, acc_proto):
    """The average-pooling gradient (``_average_grad_planes``), planes shared out among
    threads."""
    parallel(_average_grad_planes, int(insz[0] * insz[1]), gb, go, gs, outsz, db, do, ds, insz,
             win, strd, pad, dil, counts, cstart, tag, acc_proto,
             item_size=np.prod(insz[2:]))


@njit(**_OPTS)
def _average_grad_planes(p0, p1, gb, go, gs, outsz, db, do, ds, insz, win, strd, pad, dil,
                         counts, cstart, tag, acc_proto):
    """Planes [p0, p1). Per (n, c) plane: ``g = dy / divisor``, then for each window offset, in descending
    row-major order, ``g`` is added to the elements that offset reaches. For one element the
    offsets come in ascending output order, so it sums its contributions in that order, from
    +0.0, in the accumulator's type (as the reference backend does, slice by slice)."""
    rank = insz.shape[0]
    k = rank - 2
    plane_in = 1
    plane_out = 1
    volume = 1
    for i in range(k):
        plane_in *= insz[2 + i]
        plane_out *= outsz[2 + i]
        volume *= win[i]
    ipitch = np.ones(rank, np.int64)               # packed strides of one plane
    opitch = np.ones(rank, np.int64)
    for d in range(rank - 2, 1, -1):
        ipitch[d] = ipitch[d + 1] * insz[d + 1]
        opitch[d] = opitch[d + 1] * outsz[d + 1]
    sk = strd[k - 1]
    for pl in range(p0, p1):
        idx = np.zeros(rank, np.int64)
        j = np.empty(k, np.int64)
        lo = np.empty(k, np.int64)
        hi = np.empty(k, np.int64)
        acc = np.zeros(plane_in, acc_proto.dtype)
        g = np.empty(plane_out, acc_proto.dtype)
        _decode(pl, insz, 0, 2, idx)
        e = go + idx[0] * gs[0] + idx[1] * gs[1]
        dplane = do + idx[0] * ds[0] + idx[1] * ds[1]
        idx[:] = 0
        for q in range(plane_out):
            div = 1
            for i in range(k):
                div *= counts[cstart[i] + idx[2 + i]]
            g[q] = acc_proto.dtype.type(widen(gb[e], tag)) / acc_proto.dtype.type(max(div, 1))
            e = _step(idx, outsz, gs, 2, e)
        for jn in range(volume - 1, -1, -1):
            rest = jn
            empty = False
            for i in range(k - 1, -1, -1):
                j[i] = rest % win[i]
                rest //= win[i]
                lo[i], hi[i] = _out_range(j[i], insz[2 + i], outsz[2 + i], strd[i], pad[i],
                                          dil[i])
                empty |= hi[i] <= lo[i]
            if empty:
                continue
            rows = 1
            for i in range(k - 1):
                rows *= hi[i] - lo[i]
            for r in range(rows):                   # the outer output coordinates, in order
                rest = r
                obase = 0
                xbase = 0
                for i in range(k - 2, -1, -1):
                    o = lo[i] + rest % (hi[i] - lo[i])
                    rest //= hi[i] - lo[i]
                    obase += o * opitch[2 + i]
                    xbase += (o * strd[i] + j[i] * dil[i] - pad[i]) * ipitch[2 + i]
                xbase += j[k - 1] * dil[k - 1] - pad[k - 1]
                for o in range(lo[k - 1], hi[k - 1]):
                    acc[xbase + o * sk] += g[obase + o]
        idx[:] = 0
        e = dplane
        for q in range(plane_in):
            db[e] = narrow(acc[q], tag, db.dtype.type)
            e = _step(idx, insz, ds, 2, e)


@njit(**_OPTS)
def _offset(flat, sizes, strides, base):
    """Memory offset of the element with row-major position ``flat`` over ``sizes``."""
    e = np.int64(base)
    rest = np.int64(flat)
    for d in range(sizes.shape[0] - 1, -1, -1):
        e += (rest % sizes[d]) * strides[d]
        rest //= sizes[d]
    return e


def unpool_local(ib, io, ist, insz, outsz, empty, skip):
    """Whether every index of plane (n, c) names an element of the output's plane (n, c),
    so the planes can be scattered in parallel."""
    ok = np.ones(int(insz[0] * insz[1]), np.bool_)
    parallel(_unpool_local_planes, ok.size, ib, io, ist, insz, outsz, empty, skip, ok,
             item_size=np.prod(insz[2:]))
    return bool(ok.all())


@njit(**_OPTS)
def _unpool_local_planes(p0, p1, ib, io, ist, insz, outsz, empty, skip, ok):
    """``ok[pl]`` False for the planes in [p0, p1) with an index outside their own."""
    rank = insz.shape[0]
    plane_in = 1
    plane_out = 1
    for d in range(2, rank):
        plane_in *= insz[d]
        plane_out *= outsz[d]
    for pl in range(p0, p1):
        idx = np.zeros(rank, np.int64)
        e = _offset(pl * plane_in, insz, ist, io)
        first = pl * plane_out
        for q in range(plane_in):
            v = ib[e]
            e = _step(idx, insz, ist, 2, e)
            if skip and v == empty:
                continue
            iv = np.int64(v)                       # in range: checked before the kernel
            if iv < first or iv >= first + plane_out:
                ok[pl] = False
                break


def unpool_kernel(xb, xo, xs, ib, io, ist, insz, yb, yo, ys, outsz, empty, skip, local,
                  y_packed):
    """Zero the output, then write each input element at its index, in flat input order
    (the later of two elements naming one position wins). Parallel over planes when every
    index stays in its own plane, else one pass in order. ``y_packed``: the output is
    C-contiguous, so an index is its offset."""
    plane_out = int(np.prod(outsz[2:]))
    parallel(_unpool_zero, int(outsz[0] * outsz[1]), yb, yo, ys, outsz,
             item_size=plane_out)
    parts = int(insz[0] * insz[1]) if local else 1
    parallel(_unpool_scatter, parts, xb, xo, xs, ib, io, ist, insz, yb, yo, ys, outsz, empty,
             skip, local, y_packed, item_size=np.prod(insz[2:]))


@njit(**_OPTS)
def _unpool_zero(p0, p1, yb, yo, ys, outsz):
    """Zero the output's planes [p0, p1)."""
    rank = outsz.shape[0]
    plane_out = 1
    for d in range(2, rank):
        plane_out *= outsz[d]
    for pl in range(p0, p1):
        idx = np.zeros(rank, np.int64)
        e = _offset(pl * plane_out, outsz, ys, yo)
        for q in range(plane_out):
            yb[e] = 0
            e = _step(idx, outsz, ys, 2, e)


@njit(**_OPTS)
def _unpool_scatter(q0, q1, xb, xo, xs, ib, io, ist, insz, yb, yo, ys, outsz, empty, skip,
                    local, y_packed):
    """Parts [q0, q1) of the scatter: input planes (``local``), or the one whole pass."""
    rank = insz.shape[0]
    planes = insz[0] * insz[1]
    plane_in = 1
    for d in range(2, rank):
        plane_in *= insz[d]
    for part in range(q0, q1):
        idx = np.zeros(rank, np.int64)
        first = part * plane_in if local else 0
        count = plane_in if local else planes * plane_in
        ex = _offset(first, insz, xs, xo)
        ei = _offset(first, insz, ist, io)
        _decode(first, insz, 0, rank, idx)
        top = 2 if local else 0
        for q in range(count):
            v = ib[ei]
            if not (skip and v == empty):
                target = yo + np.int64(v) if y_packed else _offset(np.int64(v), outsz, ys, yo)
                yb[target] = xb[ex]
            ex, ei = _step2(idx, insz, xs, ist, top, ex, ei)   # one counter, two tensors


def roi_kernel(xb, xo, xs, regions, yb, yo, ys, outsz, h, w, tag):
    """Per (region, channel): each bin's maximum (``_roi_pairs``), the pairs shared out
    among threads."""
    parallel(_roi_pairs, int(outsz[0] * outsz[1]), xb, xo, xs, regions, yb, yo, ys, outsz, h,
             w, tag, item_size=outsz[2] * outsz[3])


@njit(**_OPTS)
def _roi_pairs(i0, i1, xb, xo, xs, regions, yb, yo, ys, outsz, h, w, tag):
    """(Region, channel) pairs [i0, i1): each bin's maximum by SPEC 3.4's rules (the first
    maximum, the first NaN), its bits copied; an empty bin gives 0."""
    c, ph_n, pw_n = outsz[1], outsz[2], outsz[3]
    for rc in range(i0, i1):
        r = rc // c
        ch = rc % c
        b, x1, y1 = regions[r, 0], regions[r, 1], regions[r, 2]
        rh = max(regions[r, 4] - y1 + 1, 1)
        rw = max(regions[r, 3] - x1 + 1, 1)
        xplane = xo + b * xs[0] + ch * xs[1]
        yplane = yo + r * ys[0] + ch * ys[1]
        for ph in range(ph_n):
            h0 = min(max(ph * rh // ph_n + y1, 0), h)
            h1 = min(max(-((-(ph + 1) * rh) // ph_n) + y1, 0), h)
            for pw in range(pw_n):
                w0 = min(max(pw * rw // pw_n + x1, 0), w)
                w1 = min(max(-((-(pw + 1) * rw) // pw_n) + x1, 0), w)
                e = yplane + ph * ys[2] + pw * ys[3]
                if h0 >= h1 or w0 >= w1:
                    yb[e] = 0
                    continue
                best_e = xplane + h0 * xs[2] + w0 * xs[3]
                best = load(xb[best_e], tag)
                for hh in range(h0, h1):
                    for ww in range(w0, w1):
                        f = xplane + hh * xs[2] + ww * xs[3]
                        v = load(xb[f], tag)
                        if (v > best) | ((v != v) & (best == best)):
                            best = v
                            best_e = f
                yb[e] = xb[best_e]
