"""Quantized average pooling with unit strides, a plane at a time (SPEC 3.3).

Integer sums are exact, so their order is free, and with unit strides every window of a
plane (the spatial dimensions of one sample and channel) is the same shape at a constant
flat offset from its output's position in a zero-padded copy of the plane. The sums then
go one dimension at a time (separable): the plane, less its zero point, is staged into
zeroed scratch laid out with the padding around it, and each dimension's pass adds its
window offsets to every position in one flat loop. A 3×3 window costs four additions an
output instead of eight, and the loops run over whole planes instead of rows of tens of
outputs (the row way's per-row work was most of the time of workload 7). Each sum is
requantized as the row way does it (``_requantized``, the same divisor's float): the same
bits.

A position near the end of a padded row adds elements of the next row: its sum is
meaningless, but no output reads it, since an output's window stays inside the padded
plane along every dimension. Positions past the padding that an output reads (windows
that extend beyond the end padding) read zeros, which add nothing.

    >>> import numpy as np, dmlops as dml
    >>> x = np.arange(9, dtype=np.uint8).reshape(1, 1, 3, 3)
    >>> dml.quantized_linear_average_pooling(x, 1.0, 0, 1.0, 0, 3, start_padding=1,
    ...     end_padding=1, backend="cpu")[0, 0].tolist()
    [[2, 2, 3], [4, 4, 4], [5, 6, 6]]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _cache  # noqa: F401  (routes the on-disk cache to the user cache directory)
from ._coords import advance
from ._nrt import borrowed as _b
from ._threads import parallel
from .pooling import _convert, _outer_divisors, _positions, _requantized, channel_params

_OPTS = dict(cache=True, nogil=True)

# The most elements of a padded plane. A task holds three planes (the stage and two of sums,
# int16 or int32), in a core's L2 cache up to here (768 KiB at int32); beyond, the passes would
# stream each plane through memory several times, and the row way reads it once.
PLANE_MOST = 1 << 16


def extents(in_spatial, out_spatial, window, strides, start, dilations):
    """The padded plane's extents (the input after ``start`` zeros, and as far as the last
    window reaches), or None where the plane way does not apply: a stride other than 1,
    an empty input or output, or a plane larger than ``PLANE_MOST`` (those go the row
    way)."""
    if (any(s != 1 for s in strides) or any(p < 0 for p in start)
            or min(in_spatial) < 1 or min(out_spatial) < 1):
        return None
    ext = [max(p + i, o + (w - 1) * d)
           for i, o, w, p, d in zip(in_spatial, out_spatial, window, start, dilations)]
    if np.prod(ext, dtype=np.float64) > PLANE_MOST:
        return None
    return np.array(ext, np.int64)


@njit(inline="always", **_OPTS)
def _pass(src, dst, n, off, w):
    """``dst[p]`` = the sum of ``src[p + j*off]`` for ``j`` in [0, w) (``w`` > 1), ``p`` in
    [0, n): three offsets a loop."""
    un, uo = np.uint64(n), np.uint64(off)
    two = np.uint64(2)
    if w == 2:
        for p in range(un):
            dst[p] = src[p] + src[p + uo]
    else:
        for p in range(un):
            dst[p] = src[p] + src[p + uo] + src[p + two * uo]
    j = 3
    while j < w:
        at = np.uint64(j * off)
        if w - j == 1:
            for p in range(un):
                dst[p] += src[p + at]
        elif w - j == 2:
            for p in range(un):
                dst[p] += src[p + at] + src[p + at + uo]
        else:
            for p in range(un):
                dst[p] += src[p + at] + src[p + at + uo] + src[p + at + two * uo]
        j += 3


@njit(**_OPTS)
def _plane_task(p0, p1, xb, xo, xs, insz, yb, yo, ys, outsz, win, pad, dil, ext, pitch, ytab,
                stab, odiv, fdiv, zp_in, scale_in, zp_out, scale_out, qlo, qhi, tag, acc_proto):
    """Planes [p0, p1) of ``plane_sum_kernel`` (one thread's task): ``pitch[2:]`` the padded
    plane's pitches, ``stab[pos]`` and ``ytab[pos]`` each output row's first sum and output,
    ``odiv`` and ``fdiv`` the divisors' factors (``sum_pool_kernel``)."""
    xb, xs, insz, yb, ys, outsz = _b(xb), _b(xs), _b(insz), _b(yb), _b(ys), _b(outsz)
    win, pad, dil, ext, ytab, stab = _b(win), _b(pad), _b(dil), _b(ext), _b(ytab), _b(stab)
    pitch = _b(pitch)
    odiv, fdiv, zp_in, scale_in = _b(odiv), _b(fdiv), _b(zp_in), _b(scale_in)
    zp_out, scale_out, tag = _b(zp_out), _b(scale_out), _b(tag)
    rank = insz.shape[0]
    k = rank - 2
    pp = pitch[2:]                          # the padded plane's pitches
    size = ext[0] * pp[0]
    # the stage (zeros around the plane, written again only inside) and two planes of sums
    stage = np.zeros(size, acc_proto.dtype)
    s0, s1 = np.empty(size, acc_proto.dtype), np.empty(size, acc_proto.dtype)
    ncols, olast = insz[rank - 1], outsz[rank - 1]
    nin = 1                                 # input rows per plane
    for d in range(2, rank - 1):
        nin *= insz[d]
    coords = np.zeros(rank, np.int64)
    uxsk = np.uint64(xs[rank - 1])
    fqlo, fqhi = np.float32(qlo), np.float32(qhi)
    for p in range(p0, p1):
        n, c = p // insz[1], p % insz[1]
        zp, zq, s_in, s_out = channel_params(zp_in, scale_in, zp_out, scale_out, c, acc_proto)
        xplane = xo + n * xs[0] + c * xs[1]
        for d in range(rank):
            coords[d] = 0
        for r in range(nin):
            if r > 0:
                advance(coords, insz, 2, rank - 1)
            at, to = xplane, pad[k - 1]
            for d in range(2, rank - 1):
                at += coords[d] * xs[d]
                to += (coords[d] + pad[d - 2]) * pp[d - 2]
            if uxsk == 1:
                _convert(xb, np.uint64(at), np.uint64(1), stage, np.uint64(to), 0, ncols, tag,
                         zp)
            else:
                _convert(xb, np.uint64(at), uxsk, stage, np.uint64(to), 0, ncols, tag, zp)
        # one pass a dimension (the last first), each over the positions the next reads
        src, live, nxt = stage, size, 0
        for d in range(k - 1, -1, -1):
            if win[d] > 1:
                live -= (win[d] - 1) * dil[d] * pp[d]
                dst = s0 if nxt == 0 else s1
                _pass(src, dst, live, dil[d] * pp[d], win[d])
                src, nxt = dst, 1 - nxt
        _requantize_rows(_b(src), stab, ytab, odiv, fdiv, s_in, s_out, np.float32(zq), fqlo,
                         fqhi, yb, yo + n * ys[0] + c * ys[1], ys[rank - 1], olast)


SPAN = 16       # outputs per fixed-length loop of a row's requantization (64 bytes of float32)


@njit(**_OPTS)
def _requantize_rows(src, stab, ytab, odiv, fdiv, s_in, s_out, zq, qlo, qhi, yb, yplane, ysk,
                     olast):
    """A plane's outputs from its sums (``_requantized``), a row at a time in spans of
    ``SPAN`` outputs, the last span overlapping the one before where the row is not a
    whole number of them: every loop is a whole vector (rows of 56 outputs left 8 to the
    vector loop's scalar remainder, a tenth of the time), and an output written twice is
    the same. (A function of its own, given borrowed arrays: in the task's loop, the sums'
    array, reassigned per pass, had its reference count updated per row.)"""
    uo, us, uysk = np.uint64(olast), np.uint64(SPAN), np.uint64(ysk)
    n = min(uo, us)
    nspan = (uo + n - np.uint64(1)) // n
    for pos in range(stab.shape[0]):
        # (the divisor's float as the row way rounds it: the same bits)
        fod = fdiv.dtype.type(odiv[pos])
        at, yrow = np.uint64(stab[pos]), np.uint64(yplane + ytab[pos])
        for i in range(nspan):
            o0 = min(i * n, uo - n)
            if uysk == 1:
                for o in range(o0, o0 + n):
                    yb[yrow + o] = _requantized(src[at + o], fod * fdiv[o], s_in, s_out, zq,
                                                qlo, qhi, yb.dtype.type)
            else:
                for o in range(o0, o0 + n):
                    yb[yrow + o * uysk] = _requantized(src[at + o], fod * fdiv[o], s_in, s_out,
                                                       zq, qlo, qhi, yb.dtype.type)


def plane_sum_kernel(xb, xo, xs, insz, yb, yo, ys, outsz, win, pad, dil, ext, counts, cstart,
                     fdiv, tag, acc_proto, zp_in, scale_in, zp_out, scale_out, qlo, qhi):
    """``sum_pool_kernel``'s quantized pooling (the same arguments, the same bits) where
    every stride is 1 and ``ext`` (``extents``) is not None: planes are shared out among
    threads, each written by one task."""
    pp = np.zeros(len(insz), np.int64)     # the padded plane's pitches, in pp[2:]
    pp[2:] = np.cumprod(np.append(1, ext[:0:-1]))[::-1]
    ytab, stab = _positions(outsz, ys), _positions(outsz, pp)
    odiv = _outer_divisors(outsz, counts, cstart, ytab.shape[0])
    parallel(_plane_task, int(insz[0] * insz[1]), xb, xo, xs, insz, yb, yo, ys, outsz, win,
             pad, dil, ext, pp, ytab, stab, odiv, fdiv, zp_in, scale_in, zp_out, scale_out,
             qlo, qhi, tag, acc_proto, item_size=int(np.prod(outsz[2:])))
