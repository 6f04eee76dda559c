"""The ``cpu`` backend: C++ kernels compiled when the package is built (``src/kernels``), run
at the best level this CPU has (``_levels``), multi-threaded without the GIL. Same interface
and results as the reference backend: bitwise for max pooling, its indices and gradient,
unpooling, padding and quantized pooling; averages summed in the same order.

This module only adapts arrays: views for channels-last data, aligned buffers, the thread
count. Everything was validated by the caller.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from ...threads import get_num_threads
from ._levels import baseline, kernels, level, set_level, supported  # noqa: F401

if TYPE_CHECKING:
    from ...window import Window
    from numpy.typing import DTypeLike, NDArray

_A = TypeVar("_A", bound="NDArray[Any] | None")

NAME = "cpu"
# run(x, outputs, extra): one call of a prepared operator
Runner = Callable[..., None]
ALL_ONES = (1 << 64) - 1      # SPEC's "no element" index, all ones at every width
FORCE_PLAIN = False           # run the plain kernels only (tests compare the paths)

# A build without its kernels makes the backend unavailable (an ImportError here); a bad
# DMLOPS_CPU_LEVEL is each call's UnsupportedError (``ready``), so the other backends stay
# usable.
baseline()


def ready() -> None:
    """Raises the UnsupportedError of a level this CPU cannot run (``DMLOPS_CPU_LEVEL``)."""
    kernels()


def _pitch(sizes: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= s
    return out[::-1]


def _channels_last(x: NDArray[Any]) -> bool:
    """Whether to run with the channels innermost: when C is the input's smallest memory
    stride (channels-last data), pooling is re-cast as (N, 1, S1..Sk, C) with a unit window
    over C, so the inner loops read contiguous channels instead of striding over them."""
    if x.shape[1] <= 1:
        return False
    spatial = [abs(s) for s, n in zip(x.strides[2:], x.shape[2:]) if n > 1]
    return bool(spatial) and abs(x.strides[1]) < min(spatial)


def _to_channels_last(a: NDArray[Any]) -> NDArray[Any]:
    """(N, C, S...) -> the view (N, 1, S..., C)."""
    return np.moveaxis(a, 1, -1)[:, None]


class _Window:
    """The plan's window as the kernels' bound struct (``Window``), made once per level's
    module (the level can change between calls: ``set_level``); for channels-last data,
    with a unit window over the channels innermost (``_to_channels_last``)."""

    __slots__ = ("fields", "module", "bound")

    def __init__(self, g: Window, channels_last: bool = False) -> None:
        fields = [g.window, g.strides, g.start, g.end, g.dilations]
        if channels_last:
            fields = [(*f, unit) for f, unit in zip(fields, (1, 1, 0, 0, 1))]
        self.fields = fields
        self.module: Any = None
        self.bound: Any = None

    def bind(self, k: Any) -> Any:
        if k is not self.module:
            self.module, self.bound = k, k.Window(*self.fields)
        return self.bound


def _readable(a: NDArray[Any]) -> NDArray[Any]:
    """``a`` itself when the kernels can read it in place (elements aligned to their size),
    else an aligned copy."""
    return a if a is None or a.flags.aligned else np.array(a)


def _writable(a: _A) -> _A:
    """``a`` itself when the kernels can write it in place (elements aligned to their size),
    else an aligned stand-in that ``_copy_back`` copies into ``a``. (Two plain functions,
    not a context manager: a small call's time is mostly such per-call overhead.)"""
    return a if a is None or a.flags.aligned else cast("_A", np.empty_like(a))


def _copy_back(given: NDArray[Any] | None, used: NDArray[Any] | None) -> None:
    if used is not given:
        assert given is not None
        given[...] = used


def _max_runner(x: NDArray[Any], g: Window) -> Runner:
    """Max pooling (values, indices or both) of inputs of ``x``'s shape and strides:
    channels-last inputs run with the channels innermost, and the pitch keeps their flat
    indices in the caller's order."""
    pitch = _pitch(x.shape)
    cl = _channels_last(x)
    w = _Window(g, cl)
    if cl:
        pitch = [pitch[0], 0] + pitch[2:] + [pitch[1]]

    def run(x: NDArray[Any], outputs: Sequence[NDArray[Any] | None], extra: Any = None
            ) -> None:
        y, indices = outputs[0], outputs[1] if len(outputs) > 1 else None
        if cl:
            x = _to_channels_last(x)
            y = None if y is None else _to_channels_last(y)
            indices = None if indices is None else _to_channels_last(indices)
        y_out, i_out = _writable(y), _writable(indices)
        # (a window with no element: all ones at the indices' width, ALL_ONES at any width)
        k = kernels()
        k.max_pool(_readable(x), y_out, i_out, w.bind(k), pitch, ALL_ONES, get_num_threads(),
                   FORCE_PLAIN)
        _copy_back(y, y_out)
        _copy_back(indices, i_out)
    return run


def max_pooling(x: NDArray[Any], y: NDArray[Any], indices: NDArray[Any], g: Window,
                empty_index: int | None) -> None:
    _max_runner(x, g)(x, (y, indices))


def _average_runner(x: NDArray[Any], g: Window, include_padding: bool) -> Runner:
    """Average pooling of inputs of ``x``'s shape and strides."""
    cl = _channels_last(x)
    w = _Window(g, cl)
    include = bool(include_padding)

    def run(x: NDArray[Any], outputs: Sequence[NDArray[Any]], extra: Any = None) -> None:
        y = outputs[0]
        if cl:
            x, y = _to_channels_last(x), _to_channels_last(y)
        out = _writable(y)
        k = kernels()
        k.average_pool(_readable(x), out, w.bind(k), include, get_num_threads(), FORCE_PLAIN)
        _copy_back(y, out)
    return run


def average_pooling(x: NDArray[Any], y: NDArray[Any], g: Window, include_padding: bool
                    ) -> None:
    _average_runner(x, g, include_padding)(x, (y,))


def _per_channel(a: NDArray[Any], dtype: DTypeLike) -> NDArray[Any]:
    """A per-tensor or per-channel parameter (broadcastable to (1, C, 1, ...)) as a packed
    array of 1 or C values."""
    a = np.asarray(a)
    return np.ascontiguousarray(a.reshape(-1) if a.size > 1 else a.reshape(1), dtype=dtype)


def quantized_average_pooling(x: NDArray[Any], scale_in: NDArray[Any], zp_in: NDArray[Any],
                              scale_out: NDArray[Any], zp_out: NDArray[Any], y: NDArray[Any],
                              g: Window, include_padding: bool) -> None:
    params = [_per_channel(zp_in, np.int64), _per_channel(scale_in, np.float32),
              _per_channel(zp_out, np.int64), _per_channel(scale_out, np.float32)]
    count = max(p.size for p in params)
    params = [p if p.size == count else np.ascontiguousarray(np.broadcast_to(p, (count,)))
              for p in params]
    channel = 1
    cl = _channels_last(x)
    if cl:
        x, y = _to_channels_last(x), _to_channels_last(y)
        channel = x.ndim - 1
    out = _writable(y)
    k = kernels()
    k.quantized_average_pool(_readable(x), out, tuple(params), channel, _Window(g, cl).bind(k),
                             bool(include_padding), get_num_threads(), FORCE_PLAIN)
    _copy_back(y, out)


def lp_pooling(x: NDArray[Any], y: NDArray[Any], g: Window, p: int) -> None:
    out = _writable(y)
    k = kernels()
    k.lp_pool(_readable(x), out, _Window(g).bind(k), int(p), get_num_threads())
    _copy_back(y, out)


# The gradient's argmax is 4-byte for inputs of fewer elements than this (tests lower it to
# run the 8-byte form on small inputs).
ARGMAX32_MOST = 2**32 - 1
# About this many bytes of x's planes have their argmax found and scattered together: enough
# that max_pool's set-up per call is a small part of it (a plane of 112 x 112 at a time took
# 1.2 times as long), few enough that the group's argmax (a quarter of it at 3x3 stride 2)
# stays in the second-level cache (tests lower it to make many groups).
GRAD_GROUP_BYTES = 1 << 20


def max_pooling_grad(x: NDArray[Any], dy: NDArray[Any], dx: NDArray[Any], g: Window) -> None:
    # the argmax of every window (flat indices, as max pooling gives them), then the scatter,
    # a group of planes at a time; 4-byte indices where every flat index and the empty marker
    # (all ones) fit. Channels-last x runs with its channels innermost, dy and dx with it,
    # where dx is channels-last too; into another dx the sums go plane by plane (an image's,
    # in x's order, written across dx's planes, took 3.5 times as long), the argmax found
    # whole first.
    out = _writable(dx)
    index_bytes = 4 if x.size < ARGMAX32_MOST else 8
    cl, arg = _channels_last(x), None
    if cl and not _channels_last(out):
        arg = np.empty(dy.shape, np.uint32 if index_bytes == 4 else np.uint64)
        _max_runner(x, g)(x, (None, arg))
        cl = False
    xs, dys, dxs = (x, dy, out) if not cl else map(_to_channels_last, (x, dy, out))
    k = kernels()
    k.max_pool_grad(_readable(xs), _readable(dys), arg, dxs, _Window(g, cl).bind(k), index_bytes,
                    GRAD_GROUP_BYTES, get_num_threads(), FORCE_PLAIN)
    _copy_back(dx, out)


def average_pooling_grad(dy: NDArray[Any], dx: NDArray[Any], g: Window, include_padding: bool
                         ) -> None:
    out = _writable(dx)
    k = kernels()
    k.average_pool_grad(_readable(dy), out, _Window(g).bind(k), bool(include_padding),
                        get_num_threads())
    _copy_back(dx, out)


def _bits(a: NDArray[Any]) -> NDArray[Any]:
    """The same memory as unsigned integers of its width: unpooling only moves values, and
    indices are never negative (INT64's "no element" -1 reads as 2^64 - 1)."""
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def max_unpooling(x: NDArray[Any], indices: NDArray[Any], y: NDArray[Any], empty_index: int|None
                  ) -> None:
    skip = empty_index is not None
    empty = int(np.array(empty_index if skip else 0).astype(indices.dtype).view(
        f"u{indices.dtype.itemsize}"))
    out = _writable(y)
    kernels().max_unpool(_bits(_readable(x)), _bits(_readable(indices)), _bits(out), empty,
                         skip, get_num_threads())
    _copy_back(y, out)


def roi_pooling(x: NDArray[Any], regions: NDArray[Any], y: NDArray[Any]) -> None:
    out = _writable(y)
    kernels().roi_pool(_readable(x), np.ascontiguousarray(regions, np.int64), out,
                       get_num_threads())
    _copy_back(y, out)


def _padding_runner(x: NDArray[Any], start: Sequence[int], mode: int, value: Any) -> Runner:
    """Padding of inputs of ``x``'s data type: the value as the bits of that type."""
    dtype = x.dtype.newbyteorder("=")
    bits = int.from_bytes(np.asarray(value, dtype).tobytes(), sys.byteorder)
    start, mode = list(start), int(mode)

    def run(x: NDArray[Any], outputs: Sequence[NDArray[Any]], extra: Any = None) -> None:
        y = outputs[0]
        out = _writable(y)
        kernels().padding(_readable(x), out, start, mode, bits, get_num_threads(), FORCE_PLAIN)
        _copy_back(y, out)
    return run


def padding(x: NDArray[Any], y: NDArray[Any], start: Sequence[int], mode: int, value: Any) -> None:
    _padding_runner(x, start, mode, value)(x, (y,))


def padding_grad(dy: NDArray[Any], dx: NDArray[Any], start: Sequence[int], mode: int) -> None:
    out = _writable(dx)
    kernels().padding_grad(_readable(dy), out, list(start), int(mode), get_num_threads(),
                           FORCE_PLAIN)
    _copy_back(dx, out)


# Runners prepared once per planned call (the functions keep them with the plan): the
# layout work above, done on every call otherwise, is a small call's largest cost after
# the kernel itself. Each is called as ``run(x, outputs, extra)``, as a plan's ``run``.
def prepare_pooling(plan: Any, x: NDArray[Any]) -> Runner | None:
    """A runner of pooling ``plan`` for inputs of ``x``'s shape, strides and data type, or
    None where this backend has none (the caller then calls the functions above)."""
    if plan.kind == "max":
        return _max_runner(x, plan.geometry)
    if plan.kind == "average":
        return _average_runner(x, plan.geometry, plan.include_padding)
    return None


def prepare_padding(plan: Any, x: NDArray[Any]) -> Runner:
    """A runner of padding ``plan`` for inputs of ``x``'s data type."""
    return _padding_runner(x, plan.start, plan.mode, plan.value)
