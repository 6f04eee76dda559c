"""Row coordinates for the kernels: a row number to its coordinates, and on to the next row's.

A task finds its first row's coordinates with ``decode`` (a division per dimension) and
steps through the rest with ``advance`` (no division: short rows cost less than the
divisions would).

    >>> import numpy as np
    >>> from numba import njit
    >>> @njit
    ... def rows(sizes, r0, n):
    ...     coords = np.zeros(sizes.shape[0], np.int64)
    ...     out = np.empty((n, sizes.shape[0]), np.int64)
    ...     decode(r0, sizes, 0, sizes.shape[0], coords)
    ...     for i in range(n):
    ...         if i > 0:
    ...             advance(coords, sizes, 0, sizes.shape[0])
    ...         out[i] = coords
    ...     return out
    >>> rows(np.array([2, 3]), 2, 3).tolist()
    [[0, 2], [1, 0], [1, 1]]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _cache  # noqa: F401  (routes the on-disk cache to the user cache directory)


@njit(inline="always", cache=True, nogil=True)
def decode(r, sizes, first, last, coords):
    """Row number ``r`` -> ``coords[first:last]`` over ``sizes`` (row-major)."""
    rest = np.int64(r)
    for d in range(last - 1, first - 1, -1):
        coords[d] = rest % sizes[d]
        rest //= sizes[d]


@njit(inline="always", cache=True, nogil=True)
def advance(coords, sizes, first, last):
    """``coords[first:last]`` of the next row (``decode``'s of ``r + 1``), without a
    division."""
    d = last - 1
    while d >= first:
        coords[d] += 1
        if coords[d] < sizes[d]:
            return
        coords[d] = 0
        d -= 1
