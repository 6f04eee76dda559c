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
