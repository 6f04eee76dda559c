"""Window bookkeeping for the reference kernels: for one window offset, which output
positions see a real element, as basic slices (no gathers, no sentinels)."""

from __future__ import annotations

import itertools

import numpy as np


def offsets(window):
    """Window offsets in row-major order: for a fixed output position this is also ascending
    flat input index, which is what makes "first wins" the lowest-index tie rule."""
    return itertools.product(*(range(w) for w in window))


def dim_slices(j, size, out_size, stride, start, dilation):
    """Output positions ``o`` whose element ``x = o*stride + j*dilation - start`` is real
    (``0 <= x < size``), as (output slice, input slice), or None when there are none."""
    shift = j * dilation - start
    lo = (-shift + stride - 1) // stride if shift < 0 else 0      # ceil(-shift / stride)
    hi = min(out_size, (size - 1 - shift) // stride + 1) if size - 1 - shift >= 0 else 0
    if hi <= lo:
        return None
    x0 = lo * stride + shift
    return slice(lo, hi), slice(x0, x0 + (hi - lo - 1) * stride + 1, stride)


def offset_slices(j, in_spatial, out_spatial, strides, start, dilations):
    """(output index, input index) tuples over all dimensions for offset ``j``, or None."""
    outs, ins = [slice(None), slice(None)], [slice(None), slice(None)]
    for i, jj in enumerate(j):
        pair = dim_slices(jj, in_spatial[i], out_spatial[i], strides[i], start[i], dilations[i])
        if pair is None:
            return None
        outs.append(pair[0])
        ins.append(pair[1])
    return tuple(outs), tuple(ins)


def counts(in_spatial, out_spatial, window, strides, start, end, dilations, include_padding):
    """The divisor of every output position, shape ``(1, 1, O1, ..., Ok)``: the number of real
    positions, or with ``include_padding`` of real and padding (never phantom) positions."""
    total = np.ones((1, 1) + (1,) * len(window), dtype=np.int64)
    for i, (size, osz) in enumerate(zip(in_spatial, out_spatial)):
        o = np.arange(osz)[:, None]
        q = o * strides[i] + np.arange(window[i])[None, :] * dilations[i]
        if include_padding:
            ok = q < size + start[i] + end[i]
        else:
            ok = (q >= start[i]) & (q < size + start[i])
        shape = [1] * total.ndim
        shape[2 + i] = osz
        total = total * ok.sum(axis=1).reshape(shape)
    return total
