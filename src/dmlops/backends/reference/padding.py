"""Reference padding kernel (SPEC 3.9): a closed-form index map per dimension, never a
re-read of already padded output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

CONSTANT, EDGE, REFLECTION, SYMMETRIC, WRAP = range(5)


def index_map(mode: int, n: int, start: int, out_size: int
              ) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """Input coordinate of every output coordinate of one dimension; for CONSTANT the
    out-of-range coordinates are clamped and reported by the returned mask."""
    x = np.arange(out_size, dtype=np.int64) - start
    inside = (x >= 0) & (x < n)
    if mode in (CONSTANT, EDGE):
        return np.clip(x, 0, n - 1), inside
    if mode == REFLECTION:
        if n == 1:
            return np.zeros_like(x), inside
        p = 2 * (n - 1)
        m = np.mod(x, p)
        return np.where(m < n, m, p - m), inside
    if mode == SYMMETRIC:
        p = 2 * n
        m = np.mod(x, p)
        return np.where(m < n, m, p - 1 - m), inside
    return np.mod(x, n), inside


def padding(x: NDArray[Any], y: NDArray[Any], start: Sequence[int], mode: int, value: Any
            ) -> None:
    """Pad ``x`` into ``y``; ``value`` is a 0-d array of ``y``'s type (CONSTANT only)."""
    result = x
    outside = np.zeros((1,) * x.ndim, dtype=bool)
    for d in range(x.ndim):
        idx, inside = index_map(mode, x.shape[d], start[d], y.shape[d])
        result = np.take(result, idx, axis=d)
        shape = [1] * x.ndim
        shape[d] = y.shape[d]
        outside = outside | ~inside.reshape(shape)
    if mode == CONSTANT:
        result = np.where(outside, value, result)
    y[...] = result


def padding_grad(dy: NDArray[Any], dx: NDArray[Any], start: Sequence[int], mode: int) -> None:
    """PADDING_GRAD (SPEC 3.10): every input element the sum of ``dy`` over the outputs that
    copy it, from +0.0, in ascending flat output order (CONSTANT's padding adds nothing), in
    float32 for float16 and float32 (rounded once), float64 for float64; NaNs canonical, as
    every summing operator's (SPEC 5)."""
    acc_t = np.float64 if dx.dtype == np.float64 else np.float32
    maps, keep = [], np.ones((1,) * dx.ndim, dtype=bool)
    for d in range(dx.ndim):
        idx, inside = index_map(mode, dx.shape[d], start[d], dy.shape[d])
        shape = [1] * dx.ndim
        shape[d] = dy.shape[d]
        maps.append(idx.reshape(shape))
        keep = keep & (inside.reshape(shape) if mode == CONSTANT else True)
    # every output's input element, as a flat index of dx, in row-major output order
    target = np.ravel_multi_index(np.broadcast_arrays(*maps), dx.shape).ravel()
    values = dy.astype(acc_t).ravel()
    kept = np.broadcast_to(keep, dy.shape).ravel()
    acc = np.zeros(dx.size, dtype=acc_t)
    # ufunc.at adds one pair at a time in the order given: ascending output order
    np.add.at(acc, target[kept], values[kept])
    acc[np.isnan(acc)] = np.nan
    dx[...] = acc.reshape(dx.shape).astype(dx.dtype)
