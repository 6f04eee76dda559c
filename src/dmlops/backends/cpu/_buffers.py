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
    item = a.itemsize
    if any(s % item for s in a.strides):        # an unaligned view: the one case that copies
        a = np.ascontiguousarray(a)
    steps = [s // item for s in a.strides]
    lowest = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in steps)]
    offset = sum((n - 1) * -s for n, s in zip(a.shape, steps) if s < 0)
    span = sum((n - 1) * abs(s) for n, s in zip(a.shape, steps)) + 1
    buf = np.lib.stride_tricks.as_strided(lowest, shape=(span,), strides=(item,),
                                          writeable=a.flags.writeable)
    return buf, offset, np.array(steps, dtype=np.int64)


def ints(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)
