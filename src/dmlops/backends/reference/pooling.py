"""Reference pooling kernels (SPEC 3.1-3.8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .window import counts, offset_slices, real_offsets

if TYPE_CHECKING:
    from ...window import Window
    from numpy.typing import NDArray


def _fields(g: Window) -> tuple[tuple[int, ...], ...]:
    """The window's sizes, strides, start and end paddings and dilations."""
    return g.window, g.strides, g.start, g.end, g.dilations


def _accumulator(dtype: np.dtype[Any]) -> type[np.floating[Any]]:
    return np.float64 if dtype == np.float64 else np.float32


def _canonical(a: NDArray[Any]) -> NDArray[Any]:
    """``a`` with every NaN the canonical quiet NaN (SPEC 5: a summing operator's NaN does not
    carry the payload of whichever NaN or infinities made it)."""
    a[np.isnan(a)] = np.nan
    return a


def _window_sums(x: NDArray[Any], out_spatial: Sequence[int], window: Sequence[int],
                 strides: Sequence[int], start: Sequence[int], dilations: Sequence[int],
                 acc_dtype: type[np.floating[Any]]) -> NDArray[Any]:
    """Σ of the real elements of every window, in row-major window-offset order."""
    acc = np.zeros(x.shape[:2] + tuple(out_spatial), dtype=acc_dtype)
    with np.errstate(invalid="ignore", over="ignore"):     # inf - inf is NaN, as it should be
        for j in real_offsets(x.shape[2:], out_spatial, window, strides, start, dilations):
            sl = offset_slices(j, x.shape[2:], out_spatial, strides, start, dilations)
            if sl is not None:
                acc[sl[0]] += x[sl[1]].astype(acc_dtype)
    return acc


def average_pooling(x: NDArray[Any], y: NDArray[Any], g: Window, include_padding: bool) -> None:
    """y = Σ real elements / divisor; a zero divisor gives +0.0 (SPEC 3.1)."""
    window, strides, start, end, dilations = _fields(g)
    acc_dtype = _accumulator(y.dtype)
    out_spatial = y.shape[2:]
    acc = _window_sums(x, out_spatial, window, strides, start, dilations, acc_dtype)
    div = counts(x.shape[2:], out_spatial, window, strides, start, end, dilations,
                 include_padding).astype(acc_dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(div > 0, acc / np.where(div > 0, div, 1), acc_dtype(0))
    y[...] = _canonical(result).astype(y.dtype)


def argmax(x: NDArray[Any], out_spatial: Sequence[int], window: Sequence[int],
           strides: Sequence[int], start: Sequence[int], dilations: Sequence[int]
           ) -> tuple[Any, ...]:
    """(values, winning offset number, has-a-real-element, the offsets numbered) of every
    window.

    Offsets are visited in row-major order, i.e. ascending flat input index, and a candidate
    replaces the best only if strictly greater, or NaN when the best is not NaN: so ties keep
    the lowest index and the first NaN sticks.
    """
    shape = x.shape[:2] + tuple(out_spatial)
    best = np.zeros(shape, dtype=x.dtype)
    arg = np.zeros(shape, dtype=np.int64)
    has = np.zeros(shape, dtype=bool)
    is_float = x.dtype.kind == "f"
    visited = real_offsets(x.shape[2:], out_spatial, window, strides, start, dilations)
    for number, j in enumerate(visited):
        sl = offset_slices(j, x.shape[2:], out_spatial, strides, start, dilations)
        if sl is None:
            continue
        cand, b, h = x[sl[1]], best[sl[0]], has[sl[0]]
        if is_float:
            take = ~h | (~np.isnan(b) & (np.isnan(cand) | (cand > b)))
        else:
            take = ~h | (cand > b)
        np.copyto(b, cand, where=take)
        arg[sl[0]][take] = number
        h |= take
    return best, arg, has, visited


def flat_indices(in_sizes: Sequence[int], arg: NDArray[Any], visited: NDArray[Any],
                 window: Sequence[int], strides: Sequence[int], start: Sequence[int],
                 dilations: Sequence[int]) -> NDArray[Any]:
    """Flat row-major index over the logical input sizes of each window's winning element
    (``arg``: its number among the offsets ``visited``)."""
    n, c = arg.shape[:2]
    out_spatial = arg.shape[2:]
    flat = (np.arange(n)[:, None] * in_sizes[1] + np.arange(c)[None, :])
    flat = flat.reshape((n, c) + (1,) * len(window))
    table = np.array(visited, dtype=np.int64).reshape(-1, len(window))
    js = [table[:, i][arg] if len(table) else np.zeros_like(arg) for i in range(len(window))]
    for i, size in enumerate(in_sizes[2:]):
        o = np.arange(out_spatial[i]).reshape((1, 1) + tuple(
            out_spatial[i] if d == i else 1 for d in range(len(window))))
        xi = o * strides[i] + js[i] * dilations[i] - start[i]
        flat = flat * size + xi
    return flat


def max_pooling(x: NDArray[Any], y: NDArray[Any], indices: NDArray[Any], g: Window,
                empty_index: int | None) -> None:
    """Max of the real elements with its flat index (SPEC 3.4). A window without real elements
    gives -inf (floats) or the type's minimum, and ``empty_index``."""
    window, strides, start, _, dilations = _fields(g)
    best, arg, has, visited = argmax(x, y.shape[2:], window, strides, start, dilations)
    if x.dtype.kind == "f":
        empty = -np.inf
    else:
        empty = np.iinfo(x.dtype).min
    np.copyto(best, np.array(empty, dtype=x.dtype), where=~has)
    y[...] = best
    if indices is not None:
        flat = flat_indices(x.shape, arg, visited, window, strides, start, dilations)
        flat = np.where(has, flat, 0).astype(indices.dtype)
        np.copyto(flat, np.array(empty_index).astype(indices.dtype), where=~has)
        indices[...] = flat


def max_pooling_grad(x: NDArray[Any], dy: NDArray[Any], dx: NDArray[Any], g: Window) -> None:
    """Scatter each window's gradient to its argmax (SPEC 3.5).

    For one input element, the windows that can choose it are visited here in descending
    window-offset order, which is ascending forward-output order (the output coordinate falls
    as the offset grows); an offset never maps two outputs to one input element. So every
    element sums its contributions, from +0.0, in ascending flat output order.
    """
    window, strides, start, _, dilations = _fields(g)
    acc_dtype = _accumulator(dx.dtype)
    out_spatial = dy.shape[2:]
    _, arg, has, visited = argmax(x, out_spatial, window, strides, start, dilations)
    grad = dy.astype(acc_dtype)
    acc = np.zeros(x.shape, dtype=acc_dtype)
    for number in range(len(visited) - 1, -1, -1):
        sl = offset_slices(visited[number], x.shape[2:], out_spatial, strides, start,
                           dilations)
        if sl is None:
            continue
        chosen = has[sl[0]] & (arg[sl[0]] == number)
        target = acc[sl[1]]
        with np.errstate(invalid="ignore", over="ignore"):
            np.add(target, grad[sl[0]], out=target, where=chosen)
    dx[...] = _canonical(acc).astype(dx.dtype)


def quantized_average_pooling(x: NDArray[Any], scale_in: NDArray[Any], zp_in: NDArray[Any],
                              scale_out: NDArray[Any], zp_out: NDArray[Any], y: NDArray[Any],
                              g: Window, include_padding: bool) -> None:
    """Dequantize, average, quantize, with SPEC 3.3's exact arithmetic.

    ``scale_*`` are float32 and ``zp_*`` int64 arrays broadcastable to ``(N, C, 1, ...)``.
    """
    window, strides, start, end, dilations = _fields(g)
    out_spatial = y.shape[2:]
    acc = np.zeros(x.shape[:2] + tuple(out_spatial), dtype=np.int64)
    xs = x.astype(np.int64) - zp_in
    for j in real_offsets(x.shape[2:], out_spatial, window, strides, start, dilations):
        sl = offset_slices(j, x.shape[2:], out_spatial, strides, start, dilations)
        if sl is not None:
            acc[sl[0]] += xs[sl[1]]
    div = counts(x.shape[2:], out_spatial, window, strides, start, end, dilations,
                 include_padding)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        t = acc.astype(np.float32) * scale_in
        t = t / np.where(div > 0, div, 1).astype(np.float32)
        t = t / scale_out
        q = np.rint(t).astype(np.float64) + zp_out
    info = np.iinfo(y.dtype)
    q = np.clip(q, info.min, info.max)
    q = np.where(div > 0, q, np.broadcast_to(zp_out, q.shape))
    y[...] = q.astype(y.dtype)


def average_pooling_grad(dy: NDArray[Any], dx: NDArray[Any], g: Window, include_padding: bool
                         ) -> None:
    """Each incoming value divided by its window's divisor is added to every real element of
    the window (SPEC 3.2). As in :func:`max_pooling_grad`, offsets are visited in descending
    order, so every element adds its contributions, from +0.0, in ascending forward-output
    order."""
    window, strides, start, end, dilations = _fields(g)
    acc_dtype = _accumulator(dx.dtype)
    out_spatial = dy.shape[2:]
    div = counts(dx.shape[2:], out_spatial, window, strides, start, end, dilations,
                 include_padding)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        grad = dy.astype(acc_dtype) / np.where(div > 0, div, 1).astype(acc_dtype)
    acc = np.zeros(dx.shape, dtype=acc_dtype)
    visited = real_offsets(dx.shape[2:], out_spatial, window, strides, start, dilations)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in reversed(visited):
            sl = offset_slices(j, dx.shape[2:], out_spatial, strides, start, dilations)
            if sl is not None:
                acc[sl[1]] += grad[sl[0]]
    dx[...] = _canonical(acc).astype(dx.dtype)


def lp_pooling(x: NDArray[Any], y: NDArray[Any], g: Window, p: int) -> None:
    """``(Σ |x|^p)^(1/p)`` over the real elements (SPEC 3.6), in float64 and scaled by the
    window's largest ``|x|`` so that nothing underflows or overflows on the way."""
    window, strides, start, _, dilations = _fields(g)
    out_spatial = y.shape[2:]
    with np.errstate(invalid="ignore"):         # a signalling NaN stays a NaN
        ax = np.abs(x.astype(np.float64))
    slices = [sl for sl in (offset_slices(j, x.shape[2:], out_spatial, strides, start,
                                          dilations)
                            for j in real_offsets(x.shape[2:], out_spatial, window, strides,
                                                  start, dilations))
              if sl is not None]
    m = np.zeros(x.shape[:2] + tuple(out_spatial), dtype=np.float64)
    for out_sl, in_sl in slices:
        np.maximum(m[out_sl], ax[in_sl], out=m[out_sl])        # NaN propagates
    scale = np.where(np.isfinite(m) & (m > 0), m, 1.0)
    total = np.zeros_like(m)
    with np.errstate(over="ignore", invalid="ignore"):    # only in windows discarded below
        for out_sl, in_sl in slices:
            total[out_sl] += (ax[in_sl] / scale[out_sl]) ** float(p)
        result = np.where(np.isfinite(m) & (m > 0), m * total ** (1.0 / p), m)
    result[np.isnan(m)] = np.nan
    y[...] = _canonical(result).astype(y.dtype)


def max_unpooling(x: NDArray[Any], indices: NDArray[Any], y: NDArray[Any], empty_index: int|None
                  ) -> None:
    """``y`` = 0, then ``y.flat[indices[i]] = x[i]`` for every index other than
    ``empty_index``; of two elements naming one position the later (in flat input order)
    wins (SPEC 3.7). The indices are already checked to be in range."""
    idx = indices.reshape(-1)
    keep = np.arange(idx.size) if empty_index is None else \
        np.flatnonzero(idx != np.asarray(empty_index).astype(idx.dtype))
    targets = idx[keep].astype(np.int64)
    # the last occurrence of each target: first occurrence in the reversed order
    _, first_rev = np.unique(targets[::-1], return_index=True)
    last = keep[len(keep) - 1 - first_rev]
    flat = np.zeros(y.size, dtype=y.dtype)
    flat[idx[last].astype(np.int64)] = x.reshape(-1)[last]
    y[...] = flat.reshape(y.shape)


def roi_pooling(x: NDArray[Any], regions: NDArray[Any], y: NDArray[Any]) -> None:
    """Max over each bin of each region (SPEC 3.8). ``regions`` is an int64 array
    ``(R, 5)``: batch and the scaled, rounded corners ``x1, y1, x2, y2`` (already checked)."""
    c, h, w = x.shape[1:]
    ph_n, pw_n = y.shape[2:]
    result = np.zeros(y.shape, dtype=y.dtype)
    for r, (b, x1, y1, x2, y2) in enumerate(regions):
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for ph in range(ph_n):
            h0 = min(max(ph * rh // ph_n + y1, 0), h)
            h1 = min(max(-(-(ph + 1) * rh // ph_n) + y1, 0), h)
            for pw in range(pw_n):
                w0 = min(max(pw * rw // pw_n + x1, 0), w)
                w1 = min(max(-(-(pw + 1) * rw // pw_n) + x1, 0), w)
                if h0 >= h1 or w0 >= w1:
                    continue
                block = x[b, :, h0:h1, w0:w1].reshape(c, -1)
                # argmax keeps the first maximum and the first NaN: SPEC 3.4's rules
                pick = np.argmax(block, axis=1)
                result[r, :, ph, pw] = block[np.arange(c), pick]
    y[...] = result
