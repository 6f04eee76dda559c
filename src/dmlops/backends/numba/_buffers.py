"""Arrays as kernels see them: a flat buffer, the offset of element (0, ..., 0) and the
element strides. Any NumPy layout (channels-last, negative strides, zero strides) is read in
place, without a copy."""

from __future__ import annotations

import numpy as np

from ._half import buffer_view


def flat(a: np.ndarray):
    """``(buffer, offset, strides)`` with ``a[i] == buffer[offset + Σ i_d * strides[d]]``.

    float16 comes back as its uint16 bit patterns. Axes with negative strides are flipped to
    find the lowest address, which becomes ``buffer[0]``.
    """
    a = buffer_view(a)
    flags = a.flags
    if flags.c_contiguous and flags.writeable and a.size:
        # the common case, typed as the general one (1-D, C, writable) at a third of its cost
        return a.reshape(-1), 0, _c_steps(a.shape)
    item = a.itemsize
    if any(s % item for s in a.strides):        # an unaligned view: the one case that copies
        a = np.ascontiguousarray(a)
    steps = [s // item for s in a.strides]
    lowest = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in steps)]
    offset = sum((n - 1) * -s for n, s in zip(a.shape, steps) if s < 0)
    span = sum((n - 1) * abs(s) for n, s in zip(a.shape, steps)) + 1
    # Built from the array interface rather than as_strided so that a read-only input is
    # typed like a writable one: Numba would otherwise compile every kernel a second time for
    # read-only arrays. Kernels never write their inputs.
    interface = {"shape": (span,), "strides": (item,), "typestr": lowest.dtype.str,
                 "data": (lowest.__array_interface__["data"][0], False), "version": 3}
    buf = np.asarray(_Memory(interface, lowest))
    return buf, offset, np.array(steps, dtype=np.int64)


def _c_steps(shape) -> np.ndarray:
    """Row-major element strides of ``shape``."""
    steps, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        steps[d] = acc
        acc *= shape[d]
    return np.array(steps, np.int64)


class _Memory:
    """Exposes a raw array interface; holds ``base`` so the memory outlives the view."""

    def __init__(self, interface, base):
        self.__array_interface__ = interface
        self.base = base


def bits(a: np.ndarray) -> np.ndarray:
    """The same memory as unsigned integers of its width (a view, any strides): for kernels
    that only move values, or indices, which are never negative."""
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def ints(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)
