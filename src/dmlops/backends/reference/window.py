"""Window bookkeeping for the reference kernels: for one window offset, which output
positions see a real element, as basic slices (no gathers, no sentinels)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray


def real_offsets(in_spatial: Sequence[int], out_spatial: Sequence[int], window: Sequence[int],
                 strides: Sequence[int], start: Sequence[int], dilations: Sequence[int]
                 ) -> list[tuple[int, ...]]:
    """The window offsets that read a real element for at least one output, in row-major
    order (for a fixed output position also ascending flat input index, which is what makes
    "first wins" the lowest-index tie rule). The others add nothing and are skipped: so the
    work follows the data, not the window's size (a 1-element input under a window of 2^27
    offsets has one such offset)."""
    per_dim = [_dim_offsets(*a) for a in zip(in_spatial, out_spatial, window, strides, start,
                                              dilations)]
    return list(itertools.product(*per_dim))


def _dim_offsets(size: int, out_size: int, window: int, stride: int, start: int, dilation: int
                 ) -> list[int]:
    """Offsets j of one dimension for which some output o has a real element
    ``0 <= o*stride + j*dilation - start < size``: the union over o of a run of j, at most
    ``out_size * ceil(size / dilation)`` of them."""
    runs = []
    for o in range(out_size):
        base = o * stride - start
        lo = max(0, -(base // dilation))                       # ceil(-base / dilation)
        hi = min(window, -(-(size - base) // dilation))        # ceil((size - base) / dilation)
        if lo < hi:
            runs.append((lo, hi))
    runs.sort()
    out: list[int] = []
    end = 0
    for lo, hi in runs:
        lo = max(lo, end)
        if lo < hi:
            out.extend(range(lo, hi))
            end = hi
    return out


def dim_slices(j: int, size: int, out_size: int, stride: int, start: int, dilation: int
               ) -> tuple[slice, slice] | None:
    """Output positions ``o`` whose element ``x = o*stride + j*dilation - start`` is real
    (``0 <= x < size``), as (output slice, input slice), or None when there are none."""
    shift = j * dilation - start
    lo = (-shift + stride - 1) // stride if shift < 0 else 0      # ceil(-shift / stride)
    hi = min(out_size, (size - 1 - shift) // stride + 1) if size - 1 - shift >= 0 else 0
    if hi <= lo:
        return None
    x0 = lo * stride + shift
    return slice(lo, hi), slice(x0, x0 + (hi - lo - 1) * stride + 1, stride)


def offset_slices(j: Sequence[int], in_spatial: Sequence[int], out_spatial: Sequence[int],
                  strides: Sequence[int], start: Sequence[int], dilations: Sequence[int]
                  ) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """(output index, input index) tuples over all dimensions for offset ``j``, or None."""
    outs, ins = [slice(None), slice(None)], [slice(None), slice(None)]
    for i, jj in enumerate(j):
        pair = dim_slices(jj, in_spatial[i], out_spatial[i], strides[i], start[i], dilations[i])
        if pair is None:
            return None
        outs.append(pair[0])
        ins.append(pair[1])
    return tuple(outs), tuple(ins)


def dim_counts(size: int, out_size: int, window: int, stride: int, start: int, end: int,
               dilation: int, *, include_padding: bool, dtype: Any = np.int64) -> NDArray[Any]:
    """Along one dimension, each output position's count of real positions (or, with
    ``include_padding``, real and padding ones): ``dim_counts(4, 3, 3, 2, 1, 1, 1,
    include_padding=False)`` is ``[2, 3, 1]`` (ceil mode's third window holds one real, one
    padding and one phantom position)."""
    # the positions o*stride + j*dilation (j < window) within [lo, hi) of the padded axis
    lo, hi = (0, size + start + end) if include_padding else (start, size + start)
    base = np.arange(out_size, dtype=dtype) * stride
    first = np.maximum(0, -((base - lo) // dilation))
    stop = np.minimum(window, -((base - hi) // dilation))
    count: NDArray[Any] = np.maximum(stop - first, 0)
    return count


def counts(in_spatial: Sequence[int], out_spatial: Sequence[int], window: Sequence[int],
           strides: Sequence[int], start: Sequence[int], end: Sequence[int],
           dilations: Sequence[int], include_padding: bool) -> NDArray[Any]:
    """The divisor of every output position, shape ``(1, 1, O1, ..., Ok)``: the number of real
    positions, or with ``include_padding`` of real and padding (never phantom) positions.
    Counted per dimension from the window's bounds (never one entry per window position), as
    Python integers where their product (at most the window's volume) could pass 2^63-1."""
    dt = np.int64 if math.prod(window) < 2**63 else object
    per_dim = [dim_counts(size, osz, window[i], strides[i], start[i], end[i], dilations[i],
                          include_padding=include_padding, dtype=dt)
               for i, (size, osz) in enumerate(zip(in_spatial, out_spatial))]
    total = np.ones((1, 1) + (1,) * len(window), dtype=dt)
    for i, c in enumerate(per_dim):
        shape = [1] * total.ndim
        shape[2 + i] = len(c)
        total = total * c.reshape(shape)
    return total
