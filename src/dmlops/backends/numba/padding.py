"""Compiled padding kernel (SPEC 3.9): one N-D Numba kernel for every rank, mode and type.

Each output coordinate ``o`` of dimension ``d`` reads input coordinate ``map_d[o]``, a closed
formula of ``x = o - start`` (never a re-read of padded output):

- CONSTANT: ``x`` inside ``[0, n)``, else ``-1``, which marks "PaddingValue here";
- EDGE: ``clamp(x, 0, n-1)``;
- REFLECTION: ``m = x mod 2(n-1)``, then ``m`` if ``m < n`` else ``2(n-1) - m``;
- SYMMETRIC: ``m = x mod 2n``, then ``m`` if ``m < n`` else ``2n - 1 - m``;
- WRAP: ``x mod n``.

For example EDGE with ``n = 3``, ``start = 2``, 7 outputs gives the map ``[0, 0, 0, 1, 2, 2,
2]``. The maps are computed in Python (small: the sum of the output sizes). The kernel walks
the output row by row in parallel (a row runs along the innermost dimension), finds the input
row from the outer maps, or sees that the row is all PaddingValue, and fills the row.

Along a row the map is piecewise monotone, so the innermost map is handed to the kernel as
*runs* of outputs, each filled by a tight loop: VALUE (CONSTANT's PaddingValue), REPEAT (EDGE's
edge element), COPY (the 1:1 interior, and every ascending period of WRAP, REFLECTION,
SYMMETRIC), MIRROR (their descending periods). The example above is REPEAT input 0 for outputs
0-1, COPY from input 0 for outputs 2-4, REPEAT input 2 for outputs 5-6. A pad several periods
wide costs about what the interior costs per element. Where runs are short (a small input
padded many times over), a loop per run costs more than a look-up per element, so neighbouring
runs shorter than ``SHORT`` become one GATHER run that reads the map itself. And a row whose
input row an earlier row of the same task already wrote (every row of a pad, or of a pad
wider than the input, repeats one) is copied from that earlier output row: a straight run
instead of the runs (``_twins``). A thread writes only its own rows, so it never reads
another's.

Padding is a pure copy, so every element is the bits of one input element or of the value:
the result is bitwise the reference's whatever the layout or the number of threads (each
output element is written by exactly one task). The kernel moves every type as the unsigned
integers of its size (float32 as uint32, int8 as uint8, ...): the same bits, and four compiled
versions instead of eleven.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit
from numba import uint64 as U

from . import _cache  # noqa: F401  (routes the on-disk cache before any kernel is defined)
from ._buffers import bits, flat, ints
from ._coords import advance, decode
from ._threads import parallel

CONSTANT, EDGE, REFLECTION, SYMMETRIC, WRAP = range(5)
VALUE, REPEAT, COPY, MIRROR, GATHER = range(5)             # how a run of outputs is filled

# Runs shorter than this are read through the map (GATHER). Measured on [2000, 7] padded by
# 5000 and on [20000, 2..3] padded by 500: 2-9x faster than a loop per run; on [64, 64, 16, 16]
# padded by 40 and [16, 3, 512, 512] padded by 32, any value from 0 to 64 is within 10%.
SHORT = 16

# Rows longer than this are split into several tasks, so that a long 1-D (or few-row)
# padding still uses every thread; shorter rows are one task each.
CHUNK = 1 << 15


def _index_map(mode: int, n: int, start: int, out_size: int) -> np.ndarray:
    """Input coordinate of every output coordinate of one dimension (-1: the padding value)."""
    x = np.arange(out_size, dtype=np.int64) - start
    if mode == CONSTANT:
        return np.where((x >= 0) & (x < n), x, -1)
    if mode == EDGE:
        return np.clip(x, 0, n - 1)
    if mode == REFLECTION:
        if n == 1:               # validation allows n = 1 only with no pad: the map is x = 0
            return np.zeros_like(x)
        p = 2 * (n - 1)
        m = np.mod(x, p)
        return np.where(m < n, m, p - m)
    if mode == SYMMETRIC:
        p = 2 * n
        m = np.mod(x, p)
        return np.where(m < n, m, p - 1 - m)
    if mode == WRAP:
        return np.mod(x, n)
    raise ValueError(f"padding mode {mode} is not one of 0..4")


@lru_cache(maxsize=16)
def _plan(mode: int, in_sizes: tuple, start: tuple, out_sizes: tuple, order: tuple,
          short: int):
    """For the dimensions in ``order`` (outermost first): the index maps of all but the last,
    concatenated, where each one begins, and the runs of the last."""
    outer = [_index_map(mode, in_sizes[d], start[d], out_sizes[d]) for d in order[:-1]]
    offsets = np.cumsum([0] + [m.size for m in outer]).astype(np.int64)
    maps = np.concatenate(outer + [np.empty(0, np.int64)])
    twins = _twins(outer[-1]) if outer else np.zeros(1, np.int64)
    for a in (maps, offsets, twins):
        a.flags.writeable = False
    last = order[-1]
    runs = _runs(mode, in_sizes[last], start[last], out_sizes[last], short)
    return (maps, offsets, twins) + runs


def _twins(index: np.ndarray) -> np.ndarray:
    """How far back the nearest earlier coordinate with the same input coordinate is (0:
    none, or the padding value). ``[2, 1, 0, 1, 2, 1]`` gives ``[0, 0, 0, 2, 4, 2]``."""
    twins = np.zeros(index.size, np.int64)
    last = {}
    for o, i in enumerate(index.tolist()):
        if i >= 0:
            twins[o] = o - last.get(i, o)
            last[i] = o
    return twins


def _pieces(mode: int, n: int):
    """``(period, starts)``: between consecutive starts (input-relative coordinates ``x``,
    repeated every period; period 0: not periodic) the map moves by a constant step."""
    if mode in (CONSTANT, EDGE):
        return 0, (0, n)
    if n == 1:                                                  # the map is all 0
        return 0, ()
    if mode == WRAP:
        return n, (0,)
    if mode == REFLECTION:
        return 2 * (n - 1), (0, n - 1)
    return 2 * n, (0, n)                                        # SYMMETRIC


def _runs(mode: int, n: int, start: int, out_size: int, short: int):
    """One dimension's map as runs ``(first, kind, source, lookup)``: the outputs
    ``first[k] <= o < first[k+1]`` are the value (VALUE), input ``source[k]`` repeated
    (REPEAT), input ``source[k] + (o - first[k])`` (COPY), ``source[k] - (o - first[k])``
    (MIRROR) or input ``lookup[o]`` (GATHER: consecutive runs shorter than ``short``, where a
    loop per run costs more than a look-up per element). ``first`` ends with ``out_size``;
    ``lookup`` is the whole map where there is a GATHER run, else empty."""
    index = _index_map(mode, n, start, out_size)
    x = np.arange(out_size, dtype=np.int64) - start
    period, starts = _pieces(mode, n)
    begins = np.isin(np.mod(x, period) if period else x, starts)
    begins[0] = True
    first = np.flatnonzero(begins)
    length = np.diff(np.append(first, out_size))
    source = index[first]
    step = np.where(length > 1, index[np.minimum(first + 1, out_size - 1)] - source, 0)
    kind = np.select([source < 0, step == 0, step > 0], [VALUE, REPEAT, COPY], MIRROR)
    gather = (length < short) & (source >= 0)
    lookup = np.empty(0, np.int64)
    if gather.any():
        kind[gather] = GATHER
        merged = np.zeros(first.size, bool)
        merged[1:] = gather[1:] & gather[:-1]        # joins the GATHER run before it
        first, kind, source = first[~merged], kind[~merged], source[~merged]
        lookup = index
    runs = ints(np.append(first, out_size)), ints(kind), ints(source), ints(lookup)
    for a in runs:
        a.flags.writeable = False
    return runs


def _pad(xbuf, xoff, xstr, ybuf, yoff, ystr, yshape, maps, moff, twins, first, kind, source,
         lookup, value, chunk):
    """Fill ``ybuf`` (offset ``yoff``, strides ``ystr``, shape ``yshape``) from ``xbuf``,
    the tasks (``_pad_tasks``) shared out among threads."""
    n_last = int(yshape[-1])
    tasks = int(np.prod(yshape[:-1])) * -(-n_last // chunk)
    parallel(_pad_tasks, tasks, xbuf, xoff, xstr, ybuf, yoff, ystr, yshape, maps, moff, twins,
             first, kind, source, lookup, value, chunk, item_size=min(chunk, n_last))


@njit(cache=True, nogil=True)
def _pad_tasks(t0, t1, xbuf, xoff, xstr, ybuf, yoff, ystr, yshape, maps, moff, twins, first,
               kind, source, lookup, value, chunk):
    """Tasks [t0, t1) of ``_pad``: fill ``ybuf`` (offset ``yoff``, strides ``ystr``, shape
    ``yshape``) from ``xbuf``.

    ``maps[moff[d] + o]`` is the input coordinate of output coordinate ``o`` in the outer
    dimension ``d`` (-1: ``value[0]``); the last dimension comes as the runs of ``_runs``.
    A task is one row, or one ``chunk`` of a long row.

    Every buffer index is non-negative (``flat`` puts the lowest address at 0), so it is
    cast to ``uint64``: Numba then skips its negative-index wraparound, which otherwise keeps
    LLVM from vectorising the copy loops (2x slower).
    """
    last = yshape.size - 1
    n_last = yshape[last]
    chunks = (n_last + chunk - 1) // chunk
    xs = xstr[last]
    ys = ystr[last]
    v = value[0]
    # The output coordinates of the first task's row, then counted up row by row: a division
    # per dimension and row costs more than a short row's copy.
    co = np.zeros(max(last, 1), np.int64)
    r = t0 // chunks
    c = t0 - r * chunks
    decode(r, yshape, 0, last, co)
    # Rows step along dimension ``inner``; what the dimensions outside it add to a row's
    # offsets changes only when ``inner`` wraps, so it is kept (a loop over every dimension
    # per row cost 5-30 % of a padding of 576-element rows, one thread).
    inner = max(last - 1, 0)
    xs1, ys1, m1, n1 = xstr[inner], ystr[inner], moff[inner], yshape[inner]
    xo_out, yo_out, padded_out = _outer(co, maps, moff, xstr, ystr, xoff, yoff, inner)
    for task in range(t0, t1):
        if task > t0:
            c += 1
            if c == chunks:
                c = 0
                # ``inner`` counted here, ``advance`` only on a wrap: calling it per row (and
                # testing for the wrap after) was 6-10 % slower, one thread
                co[inner] += 1
                if co[inner] == n1:
                    co[inner] = 0
                    advance(co, yshape, 0, inner)
                    xo_out, yo_out, padded_out = _outer(co, maps, moff, xstr, ystr, xoff,
                                                        yoff, inner)
        c0 = c * chunk
        c1 = min(c0 + chunk, n_last)
        xp = xo_out
        yp = yo_out
        padded_row = padded_out
        if last > 0:
            i = maps[m1 + co[inner]]
            if i < 0:
                padded_row = True
            else:
                xp += i * xs1
            yp += co[inner] * ys1
        if last > 0 and not padded_row:
            # An earlier row of this task with the same input row: copy it, a straight run,
            # instead of re-reading the input through the runs (a gather where they are short).
            back = twins[co[last - 1]]
            if back > 0 and task - back * chunks >= t0:
                yq = yp - back * ystr[last - 1]
                if ys == 1:
                    for o in range(c0, c1):
                        ybuf[U(yp + o)] = ybuf[U(yq + o)]
                else:
                    for o in range(c0, c1):
                        ybuf[U(yp + o * ys)] = ybuf[U(yq + o * ys)]
                continue
        if padded_row:
            for o in range(c0, c1):
                ybuf[U(yp + o * ys)] = v
        else:
            k = 0 if c0 == 0 else np.searchsorted(first, c0, side="right") - 1
            while k < kind.size and first[k] < c1:
                a = max(first[k], c0)
                b = min(first[k + 1], c1)
                i0 = source[k]
                how = kind[k]
                if how == VALUE:
                    for o in range(a, b):
                        ybuf[U(yp + o * ys)] = v
                elif how == REPEAT:
                    w = xbuf[U(xp + i0 * xs)]
                    for o in range(a, b):
                        ybuf[U(yp + o * ys)] = w
                elif how == COPY:
                    xq = xp + (i0 - first[k]) * xs       # x element of output o: xq + o * xs
                    if xs == 1 and ys == 1:
                        for o in range(a, b):
                            ybuf[U(yp + o)] = xbuf[U(xq + o)]
                    else:
                        for o in range(a, b):
                            ybuf[U(yp + o * ys)] = xbuf[U(xq + o * xs)]
                elif how == MIRROR:
                    xq = xp + (i0 + first[k]) * xs       # x element of output o: xq - o * xs
                    if xs == 1 and ys == 1:
                        for o in range(a, b):
                            ybuf[U(yp + o)] = xbuf[U(xq - o)]
                    else:
                        for o in range(a, b):
                            ybuf[U(yp + o * ys)] = xbuf[U(xq - o * xs)]
                elif xs == 1 and ys == 1:                       # GATHER
                    for o in range(a, b):
                        ybuf[U(yp + o)] = xbuf[U(xp + lookup[U(o)])]
                else:
                    for o in range(a, b):
                        ybuf[U(yp + o * ys)] = xbuf[U(xp + lookup[U(o)] * xs)]
                k += 1


@njit(inline="always", cache=True, nogil=True)
def _outer(co, maps, moff, xstr, ystr, xoff, yoff, upto):
    """Offsets of the row at coordinates ``co[:upto]`` (the dimensions outside the one rows
    step along) in x and y, and whether one of them is in a CONSTANT pad."""
    xp = xoff
    yp = yoff
    padded = False
    for d in range(upto):
        i = maps[moff[d] + co[d]]
        if i < 0:
            padded = True
        else:
            xp += i * xstr[d]
        yp += co[d] * ystr[d]
    return xp, yp, padded


def _order(y_shape, y_strides) -> list:
    """Dimensions from outermost to innermost: size-1 dimensions first, then by decreasing
    |output stride|, so that a row runs along the output's fastest dimension."""
    return sorted(range(len(y_shape)), key=lambda d: (y_shape[d] > 1, -abs(int(y_strides[d]))))


def padding(x, y, start, mode, value):
    """Pad ``x`` into ``y``; ``value`` is a 0-d array of ``y``'s type (CONSTANT only)."""
    if y.size == 0:
        return
    if x.size == 0:              # only CONSTANT can pad an empty dimension: all value
        y[...] = value
        return
    mode = int(mode)
    start = tuple(int(s) for s in start)
    xbuf, xoff, xstr = flat(bits(x))
    ybuf, yoff, ystr = flat(bits(y))
    xbuf = xbuf.view()
    xbuf.flags.writeable = False             # the kernel cannot write x; one compiled version
    order = _order(y.shape, ystr)
    plan = _plan(mode, tuple(x.shape), start, tuple(y.shape), tuple(order), SHORT)
    val = bits(np.asarray(value, dtype=y.dtype).reshape(1))
    _pad(xbuf, xoff, xstr[order], ybuf, yoff, ystr[order], ints(y.shape)[order], *plan, val,
         CHUNK)
