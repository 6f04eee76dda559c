"""dmlops's operators as PyTorch ops (SPEC 6; the ``torch`` extra).

Importing this module registers every function as a ``torch.library`` op in the namespace
``dmlops`` (``torch.ops.dmlops.max_pooling``, ...), each with a fake kernel that gives its
output's sizes and dtype without computing it, so that ``torch.compile(fullgraph=True)`` and
``torch.export`` trace through them; the differentiable ones carry their backward, which is
dmlops's own operator (deterministic: the same bits on every run and thread count):

========================  ===========================================================
op                        backward
========================  ===========================================================
``max_pooling``           ``max_pooling_grad`` (SPEC 3.5: ties to the lowest index)
``average_pooling``       ``average_pooling_grad``
``lp_pooling``            Lp's derivative, ``|x|^(p-1) sign(x) / y^(p-1)`` per window (0
                          where the window's norm is 0)
``padding``               ``padding_grad`` (SPEC 3.10)
``max_unpooling``         the gather of ``dy`` at the indices (0 where none)
``roi_pooling``           each bin's ``dy`` to its winner (the forward's first maximum)
``padding_grad``          ``padding`` (constant mode, value 0): twice differentiable
========================  ===========================================================

``dmlops.max_pooling`` and the other functions route tensors that require a gradient here
by themselves; this module adds the ``nn.Module`` s:

>>> import torch
>>> from dmlops.torch import MaxPool, Pad
>>> net = torch.nn.Sequential(Pad(1, mode="symmetric"), MaxPool(2, strides=2))
>>> x = torch.arange(16.0).reshape(1, 1, 4, 4).requires_grad_()
>>> y = net(x)
>>> y.shape, y.sum().backward(), x.grad.sum().item()
(torch.Size([1, 1, 3, 3]), None, 9.0)

``import dmlops`` never imports torch: this module is loaded by ``import dmlops.torch`` or
by the first call of a function with a tensor that requires a gradient.
"""

from __future__ import annotations

import inspect
import struct
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch

from . import functional
from ._calling import execute, input_array, make_outputs
from ._plancache import planned
from .dtypes import data_type
from .errors import Names, UnsupportedError
from .pooling import RoiPlan, check_spatial_scale, roi_regions
from .tensor import native
from .window import window_counts

__all__ = ["max_pooling", "average_pooling", "lp_pooling", "max_unpooling", "padding",
           "padding_grad", "max_pooling_grad", "average_pooling_grad", "roi_pooling",
           "quantized_linear_average_pooling", "MaxPool", "AvgPool", "LpPool", "MaxUnpool",
           "Pad"]

# the functions without their overloads: the ops' arguments are plain lists and strings
F: Any = functional
_INDEX_DTYPES = {"uint32": torch.uint32, "uint64": torch.uint64, "int64": torch.int64}


def _np(t: torch.Tensor) -> Any:
    return (t.detach() if t.requires_grad else t).numpy()


def _t(a: Any) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def _spatial(v: Any, k: int) -> list[int]:
    """An int or sequence as k spatial values (the ops take lists)."""
    if isinstance(v, int):
        return [v] * k
    values = [int(e) for e in v]
    return values[2:] if len(values) == k + 2 else values


def _sizes(x: torch.Tensor, window: list[int], strides: list[int], start: list[int],
           end: list[int], dilations: list[int], output_sizes: list[int] | None
           ) -> list[int]:
    """A pooling's full output sizes (the fake kernels' answer)."""
    if output_sizes:
        out = list(output_sizes)
        return list(x.shape[:2]) + out if len(out) == x.dim() - 2 else out
    # SPEC 2's floor size, in arithmetic that symbolic sizes (torch.compile's) follow
    return list(x.shape[:2]) + [(n + a + b - (w - 1) * d - 1) // s + 1 for n, w, s, a, b, d
                                in zip(x.shape[2:], window, strides, start, end, dilations)]


# --- the ops -------------------------------------------------------------------------------
#
# Each op's computation is the function's, on NumPy views of the tensors. The pooling and
# padding ops call it as the function's body does (_calling's input_array, make_outputs and
# execute; planned), with the plan also kept here under the op's arguments as the dispatcher gives
# them: lists, which the plan cache keys value by value (a few µs a call; issue 44).


class _Planned:
    """One function's NumPy call, ``run(arrays, params, outputs)``: the arrays checked
    (``_input``) and the call planned (``planned(planner, (*arrays, None), params)``, the
    parameters named as the planner's keyword-only ones, in their order) on the
    first call of a key, the outputs made and the kernel run on every call, as the function
    does with ``out=None`` and the default backend. The key is exact: the arrays' layouts and
    dtypes, the parameters by value (lists as tuples, floats by their bits)."""

    def __init__(self, op: str, fields: tuple[str, ...]) -> None:
        self.op, self.planner, self.fields = op, functional.PLANNERS[op], fields
        self.names = [p.name for p in inspect.signature(self.planner).parameters.values()
                      if p.kind is inspect.Parameter.KEYWORD_ONLY]
        self.plans: dict[Any, Any] = {}

    def __call__(self, arrays: tuple[Any, ...], params: tuple[Any, ...], outputs: int = 1,
                 extra: dict[str, Any] | None = None) -> list[Any]:
        key = (tuple([(a.shape, a.strides, a.dtype, a.flags.writeable) for a in arrays]),
               tuple([tuple(v) if type(v) is list else _bits(v) if type(v) is float else v
                      for v in params]))
        call = self.plans.get(key)
        if call is None:
            arrays = tuple(input_array(a, self.op, f) for a, f in zip(arrays, self.fields))
            call = planned(self.planner, (*arrays, None), dict(zip(self.names, params)))
            if len(self.plans) >= _PLANS:
                self.plans.clear()
            self.plans[key] = call
        ys = make_outputs(call, [None] * outputs, arrays)
        execute(call, None, arrays[0], ys, extra)
        return cast("list[Any]", ys)


_PLANS = 1024       # (kept per op, as many as the plan cache keeps)
_bits = struct.Struct("<d").pack
_MAX = _Planned("max_pooling", ("x",))
_MAX_GRAD = _Planned("max_pooling_grad", ("x", "dy"))
_AVERAGE = _Planned("average_pooling", ("x",))
_AVERAGE_GRAD = _Planned("average_pooling_grad", ("dy",))
_LP = _Planned("lp_pooling", ("x",))
_PADDING = _Planned("padding", ("x",))
_PADDING_GRAD = _Planned("padding_grad", ("dy",))


def _max_pooling(x: torch.Tensor, window: list[int], strides: list[int], start: list[int],
                 end: list[int], dilations: list[int], output_sizes: list[int] | None
                 ) -> torch.Tensor:
    (y,) = _MAX((_np(x),), (window, strides, start, end, dilations, output_sizes, False, None))
    return _t(y)


def _max_pooling_with_indices(x: torch.Tensor, window: list[int], strides: list[int],
                              start: list[int], end: list[int], dilations: list[int],
                              output_sizes: list[int] | None, indices_dtype: str | None
                              ) -> tuple[torch.Tensor, torch.Tensor]:
    y, i = _MAX((_np(x),), (window, strides, start, end, dilations, output_sizes, True,
                            indices_dtype), 2)
    return _t(y), _t(i)


def _average_pooling(x: torch.Tensor, window: list[int], strides: list[int], start: list[int],
                     end: list[int], dilations: list[int], include_padding: bool,
                     output_sizes: list[int] | None) -> torch.Tensor:
    (y,) = _AVERAGE((_np(x),), (window, strides, start, end, dilations, include_padding,
                                output_sizes))
    return _t(y)


def _lp_pooling(x: torch.Tensor, window: list[int], p: int, strides: list[int],
                start: list[int], end: list[int], dilations: list[int],
                output_sizes: list[int] | None) -> torch.Tensor:
    (y,) = _LP((_np(x),), (window, p, strides, start, end, dilations, output_sizes))
    return _t(y)


def _max_pooling_grad(x: torch.Tensor, dy: torch.Tensor, window: list[int],
                      strides: list[int], start: list[int], end: list[int],
                      dilations: list[int]) -> torch.Tensor:
    xs, g = _np(x), _np(dy)
    (dx,) = _MAX_GRAD((xs, g), (window, strides, start, end, dilations), 1,
                      {"dy": native(g)})
    return _t(dx)


def _average_pooling_grad(dy: torch.Tensor, window: list[int], input_sizes: list[int],
                          strides: list[int], start: list[int], end: list[int],
                          dilations: list[int], include_padding: bool) -> torch.Tensor:
    (dx,) = _AVERAGE_GRAD((_np(dy),), (window, input_sizes, strides, start, end, dilations,
                                       include_padding))
    return _t(dx)


def _max_unpooling(x: torch.Tensor, indices: torch.Tensor, output_sizes: list[int]
                   ) -> torch.Tensor:
    return _t(F.max_unpooling(_np(x), _np(indices), output_sizes))


def _roi_pooling(x: torch.Tensor, rois: torch.Tensor, spatial_scale: float,
                 pooled_size: list[int]) -> torch.Tensor:
    return _t(F.roi_pooling(_np(x), _np(rois), spatial_scale=spatial_scale,
                            pooled_size=pooled_size))


def _roi_pooling_grad(x: torch.Tensor, rois: torch.Tensor, dy: torch.Tensor,
                      spatial_scale: float, pooled_size: list[int]) -> torch.Tensor:
    """ROI pooling's backward: each dy element to its bin's winner (the first maximum in
    row-major order, as the forward picks it), summed from +0.0 in ascending dy order, in
    float32 (float64 for float64), NaNs canonical."""
    xs = _np(x)
    names = Names("roi_pooling")
    plan = RoiPlan("ROI_POOLING", data_type(xs.dtype), tuple(xs.shape), int(rois.shape[-2]),
                   check_spatial_scale(spatial_scale, names), tuple(pooled_size))
    regions = roi_regions(plan, _np(rois), names)
    g = _np(dy)
    c, h, w = xs.shape[1:]
    bins_h, bins_w = pooled_size
    target = np.full(g.shape, -1, np.int64)       # each dy element's x element (flat)
    for r, (b, x1, y1, x2, y2) in enumerate(regions.tolist()):
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(bins_h):
            h0 = min(max(i * rh // bins_h + y1, 0), h)
            h1 = min(max(-(-(i + 1) * rh // bins_h) + y1, 0), h)
            for j in range(bins_w):
                w0 = min(max(j * rw // bins_w + x1, 0), w)
                w1 = min(max(-(-(j + 1) * rw // bins_w) + x1, 0), w)
                if h0 < h1 and w0 < w1:
                    win = np.argmax(xs[b, :, h0:h1, w0:w1].reshape(c, -1), axis=1)
                    at = (h0 + win // (w1 - w0)) * w + w0 + win % (w1 - w0)
                    target[r, :, i, j] = (b * c + np.arange(c)) * h * w + at
    acc_t = np.float64 if xs.dtype == np.float64 else np.float32
    acc = np.zeros(xs.size, acc_t)
    kept = target >= 0
    np.add.at(acc, target[kept], g[kept].astype(acc_t))     # (in dy's row-major order)
    acc[np.isnan(acc)] = np.nan
    return _t(acc.reshape(xs.shape).astype(xs.dtype))


def _quantized(x: torch.Tensor, input_scale: torch.Tensor, input_zero_point: torch.Tensor,
               output_scale: torch.Tensor, output_zero_point: torch.Tensor, window: list[int],
               strides: list[int], start: list[int], end: list[int], dilations: list[int],
               include_padding: bool, output_dtype: str | None) -> torch.Tensor:
    return _t(F.quantized_linear_average_pooling(
        _np(x), _np(input_scale), _np(input_zero_point), _np(output_scale),
        _np(output_zero_point), window, strides=strides, start_padding=start,
        end_padding=end, dilations=dilations, include_padding=include_padding,
        output_dtype=output_dtype))


def _padding(x: torch.Tensor, start: list[int], end: list[int], mode: str, value: float
             ) -> torch.Tensor:
    xs = _np(x)
    if xs.size == 0:        # (the function fills the output itself)
        return _t(F.padding(xs, start, end, mode=mode, value=value))
    (y,) = _PADDING((xs,), (start, end, mode, value))
    return _t(y)


def _padding_grad(dy: torch.Tensor, input_sizes: list[int], start: list[int], end: list[int],
                  mode: str) -> torch.Tensor:
    (dx,) = _PADDING_GRAD((_np(dy),), (input_sizes, start, end, mode))
    return _t(dx)


# --- fake kernels: sizes and dtypes only ------------------------------------------------------

def _empty(x: torch.Tensor, sizes: Sequence[int], dtype: torch.dtype | None = None
           ) -> torch.Tensor:
    return x.new_empty(list(sizes), dtype=dtype or x.dtype)


def _index_dtype(x: torch.Tensor, name: str | None) -> torch.dtype:
    if name is None:
        return torch.uint64 if x.numel() > 2**32 - 1 else torch.uint32
    return _INDEX_DTYPES[str(name).lower()]


# (by op name; each takes the op's arguments)
_FAKES: dict[str, Any] = {
    "max_pooling": lambda x, w, s, a, b, d, o: _empty(x, _sizes(x, w, s, a, b, d, o)),
    "max_pooling_with_indices": lambda x, w, s, a, b, d, o, t: (
        _empty(x, _sizes(x, w, s, a, b, d, o)),
        _empty(x, _sizes(x, w, s, a, b, d, o), _index_dtype(x, t))),
    "average_pooling": lambda x, w, s, a, b, d, inc, o: _empty(x, _sizes(x, w, s, a, b, d, o)),
    "lp_pooling": lambda x, w, p, s, a, b, d, o: _empty(x, _sizes(x, w, s, a, b, d, o)),
    "max_pooling_grad": lambda x, dy, w, s, a, b, d: _empty(x, x.shape),
    "average_pooling_grad": lambda dy, w, n, s, a, b, d, inc: _empty(
        dy, list(dy.shape[:2]) + list(n) if len(n) == dy.dim() - 2 else n),
    "max_unpooling": lambda x, i, o: _empty(x, o),
    "roi_pooling_grad": lambda x, r, dy, sc, ps: _empty(x, x.shape),
    "roi_pooling": lambda x, r, sc, ps: _empty(x, [r.shape[0], x.shape[1], *ps]),
    "quantized_linear_average_pooling": lambda x, si, zi, so, zo, w, s, a, b, d, inc, t: _empty(
        x, _sizes(x, w, s, a, b, d, None),
        None if t is None else getattr(torch, data_type(t).dtype.name)),
    "padding": lambda x, a, b, m, v: _empty(x, [n + p + q for n, p, q in zip(x.shape, a, b)]),
    "padding_grad": lambda dy, n, a, b, m: _empty(dy, n),
}


# --- backward --------------------------------------------------------------------------------

def _keep_inputs(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.inputs = inputs
    ctx.save_for_backward(inputs[0], output[0] if isinstance(output, tuple) else output)


def _max_backward(ctx: Any, dy: torch.Tensor, *rest: Any) -> tuple[Any, ...]:
    x, _ = ctx.saved_tensors
    w, s, a, b, d = ctx.inputs[1:6]
    dx = torch.ops.dmlops.max_pooling_grad(x, dy.contiguous(), w, s, a, b, d)
    return (dx,) + (None,) * (len(ctx.inputs) - 1)


def _average_backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
    x, _ = ctx.saved_tensors
    w, s, a, b, d, inc = ctx.inputs[1:7]
    dx = torch.ops.dmlops.average_pooling_grad(dy.contiguous(), w, list(x.shape), s, a, b, d,
                                               inc)
    return (dx,) + (None,) * (len(ctx.inputs) - 1)


def _lp_backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
    """d y / d x_i = |x_i|^(p-1) sign(x_i) / y^(p-1) for each window holding x_i (0 where y
    is 0): the windows' dy / y^(p-1), times each window's count of real elements, spread by
    AVERAGE_POOLING_GRAD (which divides by that count), times |x|^(p-1) sign(x)."""
    x, y = ctx.saved_tensors
    w, p, s, a, b, d = ctx.inputs[1:7]
    counts = torch.ones((), dtype=torch.float64)
    k = x.dim() - 2
    for i in range(k):
        c = window_counts(int(x.shape[2 + i]), int(y.shape[2 + i]), w[i], s[i], a[i], b[i],
                          d[i], False)
        shape = [1] * x.dim()
        shape[2 + i] = len(c)
        counts = counts * torch.tensor(c, dtype=torch.float64).reshape(shape)
    scale = torch.where(y == 0, torch.zeros_like(y), dy / y.pow(p - 1))
    spread = torch.ops.dmlops.average_pooling_grad(
        (scale * counts.to(y.dtype)).contiguous(), w, list(x.shape), s, a, b, d, False)
    dx = spread * x.abs().pow(p - 1) * torch.sign(x)
    return (dx,) + (None,) * (len(ctx.inputs) - 1)


def _padding_backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
    x, _ = ctx.saved_tensors
    a, b, mode = ctx.inputs[1:4]
    return (torch.ops.dmlops.padding_grad(dy.contiguous(), list(x.shape), a, b, mode),
            None, None, None, None)


def _padding_grad_backward(ctx: Any, ddx: torch.Tensor) -> tuple[Any, ...]:
    # padding_grad is linear in dy; its adjoint is the padding itself (constant: zeros)
    n, a, b, mode = ctx.inputs[1:5]
    return (torch.ops.dmlops.padding(ddx.contiguous(), a, b, mode, 0.0), None, None, None,
            None)


def _unpool_backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
    x, indices = ctx.saved_tensors
    flat = indices.reshape(-1).to(torch.int64)
    # "no element" is all ones: 2^32 - 1 in uint32, and uint64's reads as -1 in int64
    real = flat != (2**32 - 1 if indices.dtype == torch.uint32 else -1)
    picked = dy.reshape(-1)[torch.where(real, flat, torch.zeros_like(flat))]
    dx = torch.where(real, picked, torch.zeros_like(picked)).reshape(x.shape)
    return dx, None, None


def _keep_unpool(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.inputs = inputs
    ctx.save_for_backward(inputs[0], inputs[1])


def _roi_backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
    x, rois = ctx.saved_tensors
    scale, pooled = ctx.inputs[2:4]
    return (torch.ops.dmlops.roi_pooling_grad(x, rois, dy.contiguous(), scale, pooled), None,
            None, None)


# --- registration --------------------------------------------------------------------------
#
# One library, the ops' schemas written out (as torch.library.custom_op inferred them, but the
# window's fields int[]: _GEOMETRY), each op with three kernels: the computation
# (CompositeExplicitAutograd), the fake kernel (Meta), and its own autograd kernel
# (Autograd). The autograd kernel takes the shortest way where no gradient is wanted: no
# autograd.Function, and where the tensors are plain CPU tensors the computation called in
# place of a second pass through the dispatcher (issue 44: a call's cost over the NumPy
# call). Every kernel runs with TorchDynamo off, as custom_op's do.

_LIB = torch.library.Library("dmlops", "DEF")
_BELOW_AUTOGRAD = torch._C._after_autograd_keyset


def _autograd(op: Any, kernel: Any, backward: Any, setup_context: Any) -> Any:
    """The Autograd kernel of ``op``: what register_autograd's is (an autograd.Function whose
    forward redispatches below autograd and keeps what ``setup_context`` chooses, whose
    backward is ``backward``), taken only where a gradient is wanted."""
    def forward(ctx: Any, keyset: Any, *args: Any) -> Any:
        with torch._C._AutoDispatchBelowAutograd():
            output = op.redispatch(keyset & _BELOW_AUTOGRAD, *args)
            if setup_context is not None:
                setup_context(ctx, args, output)
        return output

    def backward_(ctx: Any, *grads: Any) -> Any:
        if backward is None:
            raise RuntimeError(f"Trying to backward through {op} but no autograd formula was "
                               f"registered. Please use register_autograd to add one.")
        return (None, *backward(ctx, *grads))

    function: Any = type(f"GeneratedBackwardFor_dmlops_{op._opname}_default",
                          (torch.autograd.Function,),
                          {"forward": staticmethod(forward),
                           "backward": staticmethod(backward_)})
    grad_enabled, any_requires_grad = torch._C.is_grad_enabled, torch._C._any_requires_grad

    def autograd(keyset: Any, *args: Any) -> Any:
        if grad_enabled() and any_requires_grad(*args):
            return function.apply(keyset, *args)
        key = _keyset_key(keyset)
        direct = _DIRECT.get(key)
        if direct is None:      # (whether a redispatch below autograd reaches the CPU kernel)
            direct = _DIRECT[key] = \
                (keyset & _BELOW_AUTOGRAD).highestPriorityTypeId() == torch._C.DispatchKey.CPU
        if direct:
            return kernel(*args)
        with torch._C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & _BELOW_AUTOGRAD, *args)
    return autograd


# the keysets seen by the autograd kernels, by their bits: whether the computation is the
# kernel that a redispatch would reach (plain CPU tensors: yes; FakeTensors, modes: no)
_DIRECT: dict[Any, bool] = {}
_keyset_key = getattr(torch._C.DispatchKeySet, "raw_repr", repr)


def _define(schema: str, kernel: Any, backward: Any = None, setup_context: Any = None) -> None:
    name = schema.split("(", 1)[0]
    _LIB.define(schema, tags=(torch.Tag.pt2_compliant_tag,))
    op = getattr(torch.ops.dmlops, name).default
    _LIB.impl(name, torch._disable_dynamo(kernel), "CompositeExplicitAutograd")
    torch.library.register_fake(f"dmlops::{name}", _FAKES[name], lib=_LIB)
    _LIB.impl(name, torch._disable_dynamo(_autograd(op, kernel, backward, setup_context)),
              "Autograd", with_keyset=True)


# The window's fields are int[] (constants of the model, as a pooling layer's): a dispatcher
# call parses an int[] faster than a SymInt[] (5 lists: 21 µs against 25 for an op that
# computes nothing, benchmarks/latency.py's floor); sizes that may follow a tensor's shape
# (output_sizes, input_sizes) stay SymInt[].
_GEOMETRY = "int[] strides, int[] start, int[] end, int[] dilations"
_define(f"max_pooling(Tensor x, int[] window, {_GEOMETRY}, SymInt[]? output_sizes) -> Tensor",
        _max_pooling, _max_backward, _keep_inputs)
_define(f"max_pooling_with_indices(Tensor x, int[] window, {_GEOMETRY}, "
        f"SymInt[]? output_sizes, str? indices_dtype) -> (Tensor, Tensor)",
        _max_pooling_with_indices, _max_backward, _keep_inputs)
_define(f"average_pooling(Tensor x, int[] window, {_GEOMETRY}, bool include_padding, "
        f"SymInt[]? output_sizes) -> Tensor", _average_pooling, _average_backward, _keep_inputs)
_define(f"lp_pooling(Tensor x, int[] window, int p, {_GEOMETRY}, "
        f"SymInt[]? output_sizes) -> Tensor", _lp_pooling, _lp_backward, _keep_inputs)
_define(f"max_pooling_grad(Tensor x, Tensor dy, int[] window, {_GEOMETRY}) -> Tensor",
        _max_pooling_grad)
_define(f"average_pooling_grad(Tensor dy, int[] window, SymInt[] input_sizes, {_GEOMETRY}, "
        f"bool include_padding) -> Tensor", _average_pooling_grad)
_define("max_unpooling(Tensor x, Tensor indices, SymInt[] output_sizes) -> Tensor",
        _max_unpooling, _unpool_backward, _keep_unpool)
_define("roi_pooling(Tensor x, Tensor rois, float spatial_scale, int[] pooled_size) -> Tensor",
        _roi_pooling, _roi_backward, _keep_unpool)
_define("roi_pooling_grad(Tensor x, Tensor rois, Tensor dy, float spatial_scale, "
        "int[] pooled_size) -> Tensor", _roi_pooling_grad)
_define(f"quantized_linear_average_pooling(Tensor x, Tensor input_scale, "
        f"Tensor input_zero_point, Tensor output_scale, Tensor output_zero_point, "
        f"int[] window, {_GEOMETRY}, bool include_padding, str? output_dtype) -> Tensor",
        _quantized)
_define("padding(Tensor x, int[] start, int[] end, str mode, float value) -> Tensor",
        _padding, _padding_backward, _keep_inputs)
_define("padding_grad(Tensor dy, SymInt[] input_sizes, int[] start, int[] end, "
        "str mode) -> Tensor", _padding_grad, _padding_grad_backward, _keep_inputs)


# --- the functions, with dmlops's keywords -------------------------------------------------

def _check(x: torch.Tensor, op: str, field: str = "x", grad: bool = True) -> None:
    if x.device.type != "cpu":
        raise UnsupportedError(f"{op}: {field} is on {x.device}; dmlops runs on the CPU: pass "
                               f"{field}.cpu()")
    if x.dtype == torch.bfloat16:
        raise UnsupportedError(f"{op}: {field} is bfloat16, which dmlops lacks: pass "
                               f"{field}.float()")
    if not grad and x.requires_grad:
        why = ("quantized values are not differentiable" if op.startswith("quantized")
               else "not yet differentiable")
        raise UnsupportedError(f"{op}: {field} requires a gradient, and {op} has none "
                               f"({why}): pass {field}.detach()")


def _window(x: torch.Tensor, window_size: Any, strides: Any, start_padding: Any,
            end_padding: Any, dilations: Any) -> tuple[list[int], ...]:
    k = x.dim() - 2
    return tuple(_spatial(v, k) for v in (window_size, strides, start_padding, end_padding,
                                          dilations))


def _opt(sizes: Any) -> list[int] | None:
    return None if sizes is None else [int(s) for s in sizes]


def max_pooling(x: torch.Tensor, window_size: Any, *, strides: Any = 1, start_padding: Any = 0,
                end_padding: Any = 0, dilations: Any = 1, output_sizes: Any = None,
                output_indices: bool = False, indices_dtype: Any = None) -> Any:
    """:func:`dmlops.max_pooling` as a differentiable op (backward: MAX_POOLING_GRAD)."""
    _check(x, "max_pooling")
    geometry = _window(x, window_size, strides, start_padding, end_padding, dilations)
    if output_indices:
        name = None if indices_dtype is None else str(getattr(indices_dtype, "name",
                                                              indices_dtype))
        return torch.ops.dmlops.max_pooling_with_indices(x, *geometry, _opt(output_sizes),
                                                         name)
    return torch.ops.dmlops.max_pooling(x, *geometry, _opt(output_sizes))


def average_pooling(x: torch.Tensor, window_size: Any, *, strides: Any = 1,
                    start_padding: Any = 0, end_padding: Any = 0, dilations: Any = 1,
                    include_padding: bool = False, output_sizes: Any = None) -> torch.Tensor:
    """:func:`dmlops.average_pooling` as a differentiable op."""
    _check(x, "average_pooling")
    geometry = _window(x, window_size, strides, start_padding, end_padding, dilations)
    return torch.ops.dmlops.average_pooling(x, *geometry, bool(include_padding),
                                            _opt(output_sizes))


def lp_pooling(x: torch.Tensor, window_size: Any, *, p: int = 2, strides: Any = 1,
               start_padding: Any = 0, end_padding: Any = 0, dilations: Any = 1,
               output_sizes: Any = None) -> torch.Tensor:
    """:func:`dmlops.lp_pooling` as a differentiable op."""
    _check(x, "lp_pooling")
    w, s, a, b, d = _window(x, window_size, strides, start_padding, end_padding, dilations)
    return torch.ops.dmlops.lp_pooling(x, w, int(p), s, a, b, d, _opt(output_sizes))


def max_pooling_grad(x: torch.Tensor, dy: torch.Tensor, window_size: Any, *, strides: Any = 1,
                     start_padding: Any = 0, end_padding: Any = 0, dilations: Any = 1
                     ) -> torch.Tensor:
    _check(x, "max_pooling_grad", grad=False)
    _check(dy, "max_pooling_grad", "dy", grad=False)
    geometry = _window(x, window_size, strides, start_padding, end_padding, dilations)
    return torch.ops.dmlops.max_pooling_grad(x, dy, *geometry)


def average_pooling_grad(dy: torch.Tensor, window_size: Any, *, input_sizes: Any,
                         strides: Any = 1, start_padding: Any = 0, end_padding: Any = 0,
                         dilations: Any = 1, include_padding: bool = False) -> torch.Tensor:
    _check(dy, "average_pooling_grad", "dy", grad=False)
    w, s, a, b, d = _window(dy, window_size, strides, start_padding, end_padding, dilations)
    return torch.ops.dmlops.average_pooling_grad(dy, w, _spatial(input_sizes, dy.dim() - 2)
                                                 if isinstance(input_sizes, int)
                                                 else [int(n) for n in input_sizes],
                                                 s, a, b, d, bool(include_padding))


def max_unpooling(x: torch.Tensor, indices: torch.Tensor, output_sizes: Any) -> torch.Tensor:
    """:func:`dmlops.max_unpooling` as a differentiable op (backward: the gather of dy at the
    indices)."""
    _check(x, "max_unpooling")
    return torch.ops.dmlops.max_unpooling(x, indices, [int(n) for n in output_sizes])


def roi_pooling(x: torch.Tensor, rois: torch.Tensor, *, spatial_scale: float,
                pooled_size: Any) -> torch.Tensor:
    _check(x, "roi_pooling")
    if rois.requires_grad:
        raise UnsupportedError("roi_pooling: rois requires a gradient; the regions' corners "
                               "are rounded to whole elements and have none: pass "
                               "rois.detach()")
    return torch.ops.dmlops.roi_pooling(x, rois, float(spatial_scale),
                                        _spatial(pooled_size, 2))


def quantized_linear_average_pooling(x: torch.Tensor, input_scale: Any, input_zero_point: Any,
                                     output_scale: Any, output_zero_point: Any,
                                     window_size: Any, *, strides: Any = 1,
                                     start_padding: Any = 0, end_padding: Any = 0,
                                     dilations: Any = 1, include_padding: bool = False,
                                     output_dtype: Any = None) -> torch.Tensor:
    _check(x, "quantized_linear_average_pooling", grad=False)
    geometry = _window(x, window_size, strides, start_padding, end_padding, dilations)
    params = [v if isinstance(v, torch.Tensor) else torch.as_tensor(np.asarray(v))
              for v in (input_scale, input_zero_point, output_scale, output_zero_point)]
    for field, v in zip(("input_scale", "output_scale"), (params[0], params[2])):
        _check(v, "quantized_linear_average_pooling", field, grad=False)
    return torch.ops.dmlops.quantized_linear_average_pooling(
        x, *params, *geometry, bool(include_padding),
        None if output_dtype is None else data_type(output_dtype).name)


def _pads(x: torch.Tensor, v: Any) -> list[int]:
    return [int(v)] * x.dim() if isinstance(v, int) else [int(e) for e in v]


def padding(x: torch.Tensor, start_padding: Any, end_padding: Any, *, mode: Any = "constant",
            value: float = 0) -> torch.Tensor:
    """:func:`dmlops.padding` as a differentiable op (backward: ``padding_grad``)."""
    _check(x, "padding")
    return torch.ops.dmlops.padding(x, _pads(x, start_padding), _pads(x, end_padding),
                                    str(getattr(mode, "name", mode)), float(value))


def padding_grad(dy: torch.Tensor, input_sizes: Any, start_padding: Any, end_padding: Any, *,
                 mode: Any = "constant") -> torch.Tensor:
    _check(dy, "padding_grad", "dy")
    return torch.ops.dmlops.padding_grad(dy, [int(n) for n in input_sizes],
                                         _pads(dy, start_padding), _pads(dy, end_padding),
                                         str(getattr(mode, "name", mode)))


# --- modules -------------------------------------------------------------------------------

class _Op(torch.nn.Module):
    """A module holding an op's keywords (no parameters); ``repr`` shows them."""

    def __init__(self, **kw: Any) -> None:
        super().__init__()
        self.kw = kw

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.kw.items())


class MaxPool(_Op):
    """``MaxPool(3, strides=2, start_padding=1)``: :func:`dmlops.max_pooling`, any rank."""

    def __init__(self, window_size: Any, **kw: Any) -> None:
        super().__init__(window_size=window_size, **kw)

    def forward(self, x: torch.Tensor) -> Any:
        return max_pooling(x, **self.kw)


class AvgPool(_Op):
    """``AvgPool(2, include_padding=True)``: :func:`dmlops.average_pooling`."""

    def __init__(self, window_size: Any, **kw: Any) -> None:
        super().__init__(window_size=window_size, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return average_pooling(x, **self.kw)


class LpPool(_Op):
    """``LpPool(2, p=3)``: :func:`dmlops.lp_pooling`."""

    def __init__(self, window_size: Any, **kw: Any) -> None:
        super().__init__(window_size=window_size, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return lp_pooling(x, **self.kw)


class MaxUnpool(_Op):
    """``MaxUnpool()(y, indices, output_sizes)``: :func:`dmlops.max_unpooling`."""

    def forward(self, x: torch.Tensor, indices: torch.Tensor, output_sizes: Any
                ) -> torch.Tensor:
        return max_unpooling(x, indices, output_sizes)


class Pad(_Op):
    """``Pad(padding, mode="symmetric")``: :func:`dmlops.padding` of the spatial dimensions
    (an int: every one; a sequence: one per spatial dimension, or ``(start, end)`` pairs per
    spatial dimension), or with ``start_padding`` / ``end_padding`` of every dimension."""

    def __init__(self, padding: Any = None, *, mode: str = "constant", value: float = 0,
                 start_padding: Any = None, end_padding: Any = None) -> None:
        super().__init__(padding=padding, mode=mode, value=value,
                         start_padding=start_padding, end_padding=end_padding)

    def _pads(self, x: torch.Tensor) -> tuple[list[int], list[int]]:
        kw = self.kw
        if kw["padding"] is None:
            return _pads(x, kw["start_padding"] or 0), _pads(x, kw["end_padding"] or 0)
        k, p = x.dim() - 2, kw["padding"]
        if isinstance(p, int):
            pairs = [(p, p)] * k
        else:
            pairs = [(e, e) if isinstance(e, int) else tuple(e) for e in p]
        return [0, 0] + [a for a, _ in pairs], [0, 0] + [b for _, b in pairs]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        start, end = self._pads(x)
        return padding(x, start, end, mode=self.kw["mode"], value=self.kw["value"])
