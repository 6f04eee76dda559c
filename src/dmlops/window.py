"""Sliding-window geometry shared by every pooling operator (SPEC section 2).

Per spatial dimension: effective window ``E = (W - 1) * D + 1``, padded extent
``P = S + start + end``, floor output ``F = (P - E) // stride + 1``. An output may have ``F``
or ``F + 1`` positions; the last window of an ``F + 1`` output can reach past ``P`` into
*phantom* positions, which no operator reads or counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import Names
from ._args import as_int_tuple, check_bounds, spatial

if TYPE_CHECKING:
    from ._types import AutoPad, IntOrInts, Ints

__all__ = ["pooling_output_sizes", "onnx_pads", "Window"]


@dataclass(frozen=True)
class Window:
    """A validated sliding window over ``k`` spatial dimensions."""

    input_sizes: tuple[int, ...]      # full (N, C, S1..Sk)
    window: tuple[int, ...]
    strides: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    dilations: tuple[int, ...]
    output_sizes: tuple[int, ...]     # full (N, C, O1..Ok)

    @property
    def k(self) -> int:
        return len(self.window)


def effective(window: int, dilation: int) -> int:
    return (window - 1) * dilation + 1


def floor_size(size: int, window: int, stride: int, start: int, end: int, dilation: int) -> int:
    return (size + start + end - effective(window, dilation)) // stride + 1


def ceil_extra(size: int, window: int, stride: int, start: int, end: int, dilation: int
               ) -> bool:
    """Whether ceil mode adds an output: the division leaves a remainder and the extra window
    starts inside the input or its start padding (the ONNX spec's and PyTorch's rule)."""
    rem = (size + start + end - effective(window, dilation)) % stride
    f = floor_size(size, window, stride, start, end, dilation)
    return rem != 0 and f * stride < size + start


def _describe(size: int, window: int, stride: int, start: int, end: int, dilation: int) -> str:
    dil = f", dilation {dilation}" if dilation != 1 else ""
    return f"input {size}, window {window}{dil}, stride {stride}, padding {start}+{end}"


def window_counts(size: int, out_size: int, window: int, stride: int, start: int, end: int,
                  dilation: int, include_padding: bool) -> list[int]:
    """Along one dimension, how many of each output's window positions are real (with
    ``include_padding``: real or padding; never phantom): ``window_counts(4, 3, 3, 2, 1, 1, 1,
    False)`` is ``[2, 3, 1]``. Exact Python integers, for the pictures' divisors."""
    import numpy as np
    lo = 0 if include_padding else start
    hi = size + start + (end if include_padding else 0)
    at = np.arange(out_size, dtype=np.int64) * stride   # each window's first position
    first = np.maximum(0, (lo - at + dilation - 1) // dilation)
    past = np.minimum(window, (hi - at + dilation - 1) // dilation)
    counts: list[int] = np.maximum(0, past - first).tolist()
    return counts


def check_window_values(window: Sequence[int], strides: Sequence[int], start: Sequence[int],
                        end: Sequence[int], dilations: Sequence[int], names: Names) -> None:
    check_bounds(window, 1, names, "window_size", "must be at least 1")
    check_bounds(strides, 1, names, "strides", "must be at least 1")
    check_bounds(start, 0, names, "start_padding", "must not be negative")
    check_bounds(end, 0, names, "end_padding", "must not be negative")
    check_bounds(dilations, 1, names, "dilations", "must be at least 1")


def check_fits(spatial_sizes: Sequence[int], window: Sequence[int], strides: Sequence[int],
               start: Sequence[int], end: Sequence[int], dilations: Sequence[int], names: Names
               ) -> None:
    """``E > P`` is an error (SPEC 2)."""
    for i, s in enumerate(spatial_sizes):
        e = effective(window[i], dilations[i])
        p = s + start[i] + end[i]
        if e > p:
            dil = (f" (window {window[i]} with dilation {dilations[i]})"
                   if dilations[i] != 1 else "")
            raise names.invalid(
                lambda n: f"{n('window_size', i)} = {window[i]} does not fit: the effective window "
                          f"{e}{dil} is larger than the padded input {p} (input {s} + padding "
                          f"{start[i]}+{end[i]}); use a smaller window or more padding")


def check_output_size(d: int, got: int, dim: tuple[int, int, int, int, int, int],
                      names: Names) -> None:
    """An output dimension must be ``F`` or ``F + 1`` (SPEC 2); ``d`` is the full index,
    ``dim`` the dimension's (size, window, stride, start, end, dilation)."""
    f = floor_size(*dim)
    if got not in (f, f + 1):
        raise names.invalid(
            lambda n: f"{n('output_sizes', d)} = {got} does not fit: with "
                      f"{_describe(*dim)} the output size is "
                      f"{f} (floor) or {f + 1} (one more, as ceil mode gives)")


def pooling_output_sizes(input_sizes: Ints, window_size: IntOrInts, *, strides: IntOrInts = 1,
                         start_padding: IntOrInts = 0, end_padding: IntOrInts = 0,
                         dilations: IntOrInts = 1, ceil_mode: bool = False) -> tuple[int, ...]:
    """Full output sizes ``(N, C, O1, ..., Ok)`` of a pooling.

    >>> pooling_output_sizes((1, 1, 9, 9), 3, strides=2, start_padding=1, end_padding=1)
    (1, 1, 5, 5)
    >>> pooling_output_sizes((1, 1, 10), 3, strides=2, ceil_mode=True)
    (1, 1, 5)
    """
    names = Names("pooling_output_sizes")
    sizes = as_int_tuple(input_sizes, names, "input_sizes")
    if len(sizes) < 3:
        raise names.invalid(lambda n: f"{n('input_sizes')} = {list(sizes)} needs at least 3 "
                                      f"values (N, C and one spatial size)")
    # an empty batch or channel dimension is an empty result, as the functions give it
    check_bounds(sizes[:2], 0, names, "input_sizes", "must not be negative", uint=False)
    check_bounds(sizes[2:], 1, names, "input_sizes", "must be at least 1", uint=False, first=2)
    k, rank = len(sizes) - 2, len(sizes)
    w = spatial(window_size, k, names, "window_size", rank)
    s = spatial(strides, k, names, "strides", rank)
    a = spatial(start_padding, k, names, "start_padding", rank)
    b = spatial(end_padding, k, names, "end_padding", rank)
    d = spatial(dilations, k, names, "dilations", rank)
    check_window_values(w, s, a, b, d, names)
    check_fits(sizes[2:], w, s, a, b, d, names)
    out = []
    for i, size in enumerate(sizes[2:]):
        f = floor_size(size, w[i], s[i], a[i], b[i], d[i])
        out.append(f + 1 if ceil_mode and ceil_extra(size, w[i], s[i], a[i], b[i], d[i]) else f)
    return sizes[:2] + tuple(out)


_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def onnx_pads(input_sizes: Ints, window_size: IntOrInts, *, strides: IntOrInts = 1,
              dilations: IntOrInts = 1, auto_pad: AutoPad = "NOTSET",
              pads: Ints | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(start_padding, end_padding)`` from ONNX's ``auto_pad`` / ``pads`` attributes.

    ``pads`` is ONNX's ``[x1_begin, x2_begin, ..., x1_end, x2_end, ...]``. SAME_UPPER puts an
    odd padding element at the end, SAME_LOWER at the start (as ONNX Runtime does). An empty
    ``auto_pad`` is NOTSET, as ONNX Runtime reads it.

    >>> onnx_pads((1, 1, 5, 5), 2, auto_pad="SAME_UPPER")
    ((0, 0), (1, 1))
    >>> onnx_pads((1, 1, 5, 5), 3, pads=[1, 0, 1, 2])
    ((1, 0), (1, 2))
    """
    names = Names("onnx_pads")
    sizes = as_int_tuple(input_sizes, names, "input_sizes")
    if len(sizes) < 3:
        raise names.invalid(lambda n: f"{n('input_sizes')} = {list(sizes)} needs at least 3 "
                                      f"values (N, C and one spatial size)")
    k, rank = len(sizes) - 2, len(sizes)
    w = spatial(window_size, k, names, "window_size", rank)
    s = spatial(strides, k, names, "strides", rank)
    d = spatial(dilations, k, names, "dilations", rank)
    check_bounds(w, 1, names, "window_size", "must be at least 1")
    check_bounds(s, 1, names, "strides", "must be at least 1")
    check_bounds(d, 1, names, "dilations", "must be at least 1")
    mode: str | bytes = auto_pad
    if isinstance(mode, bytes):
        try:
            mode = mode.decode()
        except UnicodeDecodeError:
            raise names.invalid(lambda n: f"{n('auto_pad')} = {auto_pad!r} is not UTF-8 "
                                          f"text") from None
    # an empty auto_pad is NOTSET, as ONNX Runtime reads it (its own tests write it so)
    mode = str(mode).upper() or "NOTSET"
    if mode not in _AUTO_PADS:
        raise names.invalid(lambda n: f"{n('auto_pad')} = {auto_pad!r} is not one of "
                                      f"{', '.join(_AUTO_PADS)}")
    if mode == "NOTSET":
        if pads is None:
            return (0,) * k, (0,) * k
        p = as_int_tuple(pads, names, "pads")
        if len(p) != 2 * k:
            raise names.invalid(lambda n: f"{n('pads')} has {len(p)} values {list(p)}; expected "
                                          f"{2 * k} (begin values then end values, {k} spatial "
                                          f"dimensions)")
        check_bounds(p, 0, names, "pads", "must not be negative")
        return p[:k], p[k:]
    if mode == "VALID":
        return (0,) * k, (0,) * k
    start, end = [], []
    for i, size in enumerate(sizes[2:]):
        total = max(0, (math.ceil(size / s[i]) - 1) * s[i] + effective(w[i], d[i]) - size)
        small, big = total // 2, total - total // 2
        start.append(small if mode == "SAME_UPPER" else big)
        end.append(big if mode == "SAME_UPPER" else small)
    return tuple(start), tuple(end)


