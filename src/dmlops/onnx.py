"""ONNX nodes run through DirectML's operators: an ``onnx.backend.base.Backend`` (SPEC 6).

Supported nodes (default domain unless said): AveragePool, MaxPool (values and int64
``Indices``, ``storage_order`` 0 or 1), LpPool, MaxUnpool (with or without ``output_shape``),
GlobalAveragePool, GlobalMaxPool, Pad (opset 1-2 attributes, opset 11+ inputs ``pads``,
``constant_value``, ``axes``; modes constant, edge, reflect, wrap), Constant, and
``com.microsoft`` QLinearAveragePool (with ``channels_last``). A model may chain several of
them; its nodes run in the order the graph lists them (ONNX requires topological order).

ONNX's pooling attributes reach DirectML in one place, :func:`pool_arguments`, as ONNX
Runtime's DirectML provider maps them: ``kernel_shape`` -> ``window_size``, ``strides``,
``dilations``, ``auto_pad``/``pads`` -> ``start_padding``/``end_padding`` through
:func:`dmlops.onnx_pads`, ``ceil_mode`` -> an ``F + 1`` output size from
:func:`dmlops.pooling_output_sizes` (``ceil_mode=True``), ``count_include_pad`` ->
``include_padding``. Where ONNX and DirectML differ (index layout, MaxUnpool's
``output_shape``, Pad's negative pads, ...), this module converts around the operators and
never changes their semantics; docs/differences.md ("ONNX") lists every such place.

An unsupported operator, attribute, data type or device is a :class:`dmlops.UnsupportedError`,
a bad value an :class:`dmlops.InvalidArgumentError`; both name the node.

>>> import numpy as np
>>> from onnx import helper
>>> import dmlops.onnx
>>> node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2],
...                         storage_order=1)
>>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
>>> y, i = dmlops.onnx.run_node(node, [x], backend="reference")
>>> y[0, 0].tolist(), i[0, 0].tolist()          # column-major indices (storage_order=1)
([[4.0, 4.0], [6.0, 7.0]], [[4, 4], [5, 8]])
>>> pad = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")
>>> dmlops.onnx.run_node(pad, [x, np.array([0, 0, 0, 1, 0, 0, 0, 1])],
...                      backend="reference")[0][0, 0, 0].tolist()
[2.0, 1.0, 2.0, 3.0, 2.0]

With a model: ``rep = dmlops.onnx.prepare(model); outputs = rep.run([x])`` (a tuple that can
also be indexed by output name), or ``dmlops.onnx.run_model(model, [x])``.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep, namedtupledict

from . import functional as _fn
from .descs import QuantizedLinearAveragePoolingDesc, compile_operator
from .errors import DmlError, InvalidArgumentError, UnsupportedError
from .tensor import TensorDesc
from .window import onnx_pads, pooling_output_sizes

if TYPE_CHECKING:
    from ._types import PaddingModeName

__all__ = ["DmlBackend", "DmlBackendRep", "prepare", "run_model", "run_node",
           "supports_device", "is_compatible", "pool_arguments", "SUPPORTED_OPS"]

MS_DOMAIN = "com.microsoft"


# --- node context ---------------------------------------------------------------------------

def _label(node: Any, index: Any = None) -> str:
    where = f" {node.name!r}" if node.name else (f" #{index}" if index is not None else "")
    dom = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
    return f"ONNX {dom}{node.op_type} node{where}"


@contextlib.contextmanager
def _in_node(label: str) -> Iterator[Any]:
    """Prefix the node to any dmlops error raised inside (einops style: ``from None``)."""
    try:
        yield
    except DmlError as e:
        if str(e).startswith(label):
            raise
        raise e.prefixed(label) from None


def _attributes(node: Any, label: Any) -> dict[str, Any]:
    out = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.UNDEFINED:
            raise InvalidArgumentError(f"{label}: attribute {a.name} has no type (ONNX "
                                       f"requires one; its value cannot be read)")
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            try:
                v = v.decode()
            except UnicodeDecodeError:
                raise InvalidArgumentError(f"{label}: attribute {a.name} = {v!r} is not UTF-8 "
                                           f"text") from None
        out[a.name] = v
    return out


def _flag(attrs: Any, name: Any, label: Any, default: Any = 0) -> bool:
    v = attrs.get(name, default)
    if v not in (0, 1):
        raise InvalidArgumentError(f"{label}: attribute {name} = {v!r} must be 0 or 1")
    return bool(v)


# --- the attribute mapping (one place) ------------------------------------------------------

def _int_list(values: Any, name: Any, label: Any) -> tuple[int, ...]:
    """An INTS attribute's values, as ints (a FLOATS one, e.g. ``[2.0, 2.0]``, is refused)."""
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidArgumentError(f"{label}: attribute {name} = {values!r} must hold "
                                       f"integers (an INTS attribute)")
    return tuple(int(v) for v in values)


def _ints(attrs: Any, name: Any, k: int, default: int, label: Any) -> tuple[int, ...]:
    v = attrs.get(name)
    if v is None:
        return (default,) * k
    v = _int_list(v, name, label)
    if len(v) != k:
        raise InvalidArgumentError(f"{label}: attribute {name} has {len(v)} values {list(v)}; "
                                   f"expected {k}, one per spatial dimension")
    return v


def pool_arguments(x_shape: Any, attrs: dict[str, Any], label: str = "ONNX pooling node",
                   window_size: Any = None) -> dict[str, Any]:
    """Keyword arguments of the dmlops pooling functions from ONNX pooling attributes.

    ``attrs`` holds ``kernel_shape`` (or ``window_size`` is given, as for the global
    poolings), ``strides``, ``dilations``, ``auto_pad``, ``pads`` and ``ceil_mode``, as in an
    ONNX node. ``auto_pad``/``pads`` go through :func:`dmlops.onnx_pads`; ``ceil_mode``
    becomes the full ``output_sizes`` of :func:`dmlops.pooling_output_sizes` (``F`` or
    ``F + 1``; the paddings stay, and the extra window's positions past the end padding are
    never read or counted).

    >>> pool_arguments((1, 1, 4, 4), {"kernel_shape": [3, 3], "strides": [2, 2],
    ...                               "ceil_mode": 1})["output_sizes"]
    (1, 1, 2, 2)
    >>> pool_arguments((1, 1, 5, 5), {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'window_size': (2, 2), 'strides': (1, 1), 'start_padding': (1, 1), 'end_padding': (0, 0),
     'dilations': (1, 1), 'output_sizes': (1, 1, 5, 5)}
    """
    x_shape = tuple(int(s) for s in x_shape)
    k = len(x_shape) - 2
    if k < 1:
        raise UnsupportedError(f"{label}: input X is {len(x_shape)}-D; pooling needs N, C and "
                               f"at least one spatial dimension")
    if window_size is None:
        if "kernel_shape" not in attrs:
            raise InvalidArgumentError(f"{label}: attribute kernel_shape is required")
        window_size = _ints(attrs, "kernel_shape", k, 1, label)
    strides = _ints(attrs, "strides", k, 1, label)
    dilations = _ints(attrs, "dilations", k, 1, label)
    ceil_mode = _flag(attrs, "ceil_mode", label)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    pads = attrs.get("pads")
    if pads is not None:
        pads = _int_list(pads, "pads", label)
        if auto_pad not in ("NOTSET", "") and any(pads):
            raise InvalidArgumentError(f"{label}: attributes auto_pad = {auto_pad!r} and pads "
                                       f"= {list(pads)} cannot be used together (ONNX)")
    with _in_node(label):
        start, end = onnx_pads(x_shape, window_size, strides=strides, dilations=dilations,
                               auto_pad=auto_pad, pads=pads)
        sizes = pooling_output_sizes(x_shape, window_size, strides=strides,
                                     start_padding=start, end_padding=end,
                                     dilations=dilations, ceil_mode=ceil_mode)
    return dict(window_size=tuple(window_size), strides=strides, start_padding=start,
                end_padding=end, dilations=dilations, output_sizes=sizes)


# --- index layout ---------------------------------------------------------------------------

def _column_major(indices: np.ndarray, x_shape: Any) -> np.ndarray:
    """Row-major flat indices (DirectML) -> ONNX ``storage_order=1``: the spatial dimensions
    column-major (the first one fastest), N and C as before; -1 ("no element") stays."""
    spatial = tuple(x_shape[2:])
    plane = math.prod(spatial)
    valid = indices >= 0
    i = np.where(valid, indices, 0)
    base, rem = np.divmod(i, plane)
    coords = np.unravel_index(rem, spatial)
    col = np.ravel_multi_index(coords[::-1], spatial[::-1])
    return np.where(valid, base * plane + col, indices).astype(np.int64)


# --- node implementations -------------------------------------------------------------------
# Each takes (label, attrs, inputs, n_outputs, backend) and returns the list of outputs; an
# input the node left out (empty name) is None.

def _input(inputs: Any, i: Any, label: Any, name: Any) -> Any:
    if len(inputs) <= i or inputs[i] is None:
        raise InvalidArgumentError(f"{label}: input {name} is required")
    try:
        return np.asarray(inputs[i])
    except (ValueError, TypeError) as e:        # (ragged nested lists, among others)
        raise InvalidArgumentError(f"{label}: input {name} cannot be read as an array: "
                                   f"{e}") from None


def _int_input(inputs: Any, i: Any, label: Any, name: Any) -> tuple[int, ...]:
    """An integer tensor input (pads, axes, output_shape), as ints: ONNX types these int64
    (axes int32 too); NaN, None, strings or fractions are refused, not converted."""
    v = _input(inputs, i, label, name)
    if v.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{label}: input {name} holds {v.dtype} values "
                                   f"{v.ravel()[:8].tolist()}; it must hold integers (int64)")
    return tuple(int(e) for e in v.ravel())


def _average_pool(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
    x = _input(inputs, 0, label, "X")
    args = pool_arguments(x.shape, attrs, label)
    include = _flag(attrs, "count_include_pad", label)
    with _in_node(label):
        return [_fn.average_pooling(x, **args, include_padding=include, backend=backend)]


def _max_pool(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
    x = _input(inputs, 0, label, "X")
    args = pool_arguments(x.shape, attrs, label)
    order = attrs.get("storage_order", 0)
    if order not in (0, 1):
        raise InvalidArgumentError(f"{label}: attribute storage_order = {order!r} must be 0 "
                                   f"(row-major) or 1 (column-major)")
    with _in_node(label):
        if n_out < 2:
            return [_fn.max_pooling(x, **args, backend=backend)]
        y, i = _fn.max_pooling(x, **args, output_indices=True, indices_dtype=np.int64,
                               backend=backend)
    return [y, _column_major(i, x.shape) if order == 1 else i]


def _lp_pool(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
    x = _input(inputs, 0, label, "X")
    args = pool_arguments(x.shape, attrs, label)
    p = attrs.get("p", 2)
    if isinstance(p, float):          # LpPool-1 had a float p
        if not p.is_integer():
            raise UnsupportedError(f"{label}: attribute p = {p!r}; DirectML's LP_POOLING takes "
                                   f"an integer p >= 1")
        p = int(p)
    with _in_node(label):
        return [_fn.lp_pooling(x, **args, p=p, backend=backend)]


def _global(kind: Any) -> Any:
    def run(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
        x = _input(inputs, 0, label, "X")
        args = pool_arguments(x.shape, {}, label, window_size=x.shape[2:])
        pool = _fn.average_pooling if kind == "average" else _fn.max_pooling
        with _in_node(label):
            return [pool(x, **args, backend=backend)]
    return run


def _max_unpool(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
    x = _input(inputs, 0, label, "X")
    idx = _input(inputs, 1, label, "I")
    k = x.ndim - 2
    if k < 1:
        raise UnsupportedError(f"{label}: input X is {x.ndim}-D; MaxUnpool needs N, C and at "
                               f"least one spatial dimension")
    if "kernel_shape" not in attrs:
        raise InvalidArgumentError(f"{label}: attribute kernel_shape is required")
    kernel = _ints(attrs, "kernel_shape", k, 1, label)
    strides = _ints(attrs, "strides", k, 1, label)
    pads = _int_list(attrs.get("pads", (0,) * 2 * k), "pads", label)
    if len(pads) != 2 * k:
        raise InvalidArgumentError(f"{label}: attribute pads has {len(pads)} values; expected "
                                   f"{2 * k} (begin values then end values)")
    # ONNX's default output shape: (in - 1) * stride - pad_begin - pad_end + kernel
    inferred = x.shape[:2] + tuple((x.shape[2 + d] - 1) * strides[d] - pads[d] - pads[k + d]
                                   + kernel[d] for d in range(k))
    if any(s < 1 for s in inferred[2:]):
        raise InvalidArgumentError(f"{label}: the default output shape {list(inferred)} has an "
                                   f"empty dimension; check kernel_shape, strides and pads")
    shape = inferred
    if len(inputs) > 2 and inputs[2] is not None:
        shape = _int_input(inputs, 2, label, "output_shape")
        if (len(shape) != x.ndim or shape[:2] != inferred[:2]
                or any(s < t for s, t in zip(shape, inferred))):
            raise InvalidArgumentError(
                f"{label}: output_shape = {list(shape)} must have X's rank, N and C, and be at "
                f"least the default output shape {list(inferred)} in every dimension")
    with _in_node(label):
        # The indices address the default shape; a larger output_shape adds zeros at the end
        # of each dimension (what ONNX's reference and its tests do).
        try:
            y = _fn.max_unpooling(x, idx, inferred, backend=backend)
        except InvalidArgumentError as e:
            if shape == inferred or "outside the output" not in str(e):
                raise
            raise InvalidArgumentError(
                f"{e}. The indices address the default output shape {list(inferred)} (as "
                f"ONNX's reference does); output_shape = {list(shape)} only adds zeros at the "
                f"end of each dimension") from None
        if shape != inferred:
            y = _fn.padding(y, 0, tuple(s - t for s, t in zip(shape, inferred)),
                            backend=backend)
    return [y]


_PAD_MODES: dict[str, PaddingModeName] = {"constant": "constant", "edge": "edge",
                                          "reflect": "reflection", "wrap": "wrap"}


def _pad(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
    data = _input(inputs, 0, label, "data")
    mode = attrs.get("mode", "constant")
    if not isinstance(mode, str):
        raise InvalidArgumentError(f"{label}: attribute mode = {mode!r} must be a string "
                                   f"(one of {', '.join(_PAD_MODES)})")
    if mode not in _PAD_MODES:
        raise UnsupportedError(f"{label}: attribute mode = {mode!r} is not one of "
                               f"{', '.join(_PAD_MODES)}")
    if "pads" in attrs or "paddings" in attrs:
        pads, value, axes = _pad_attributes(label, attrs, data.ndim)
    else:
        pads, value, axes = _pad_inputs(label, attrs, inputs, data.ndim)
    data, start, end = _pads_per_dimension(label, data, pads, axes)
    is_bool = data.dtype == np.bool_
    if is_bool:                                          # DirectML has no BOOL: pad bytes
        data = data.view(np.uint8)
        value = int(bool(value))
    with _in_node(label):
        y = _padded(data, start, end, _PAD_MODES[mode], value, backend)
    return [y.view(np.bool_) if is_bool else y]


def _pad_attributes(label: Any, attrs: Any, rank: int) -> tuple[Any, Any, tuple[int, ...]]:
    """Pad-1 and Pad-2: the pads (every axis) and the constant as attributes."""
    key = "pads" if "pads" in attrs else "paddings"
    pads = _int_list(attrs[key], key, label)
    value = attrs.get("value", 0.0)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise InvalidArgumentError(f"{label}: attribute value = {value!r} must be a "
                                   f"number (FLOAT)")
    return pads, float(value), tuple(range(rank))


def _pad_inputs(label: Any, attrs: Any, inputs: Any, rank: int
                ) -> tuple[Any, Any, tuple[int, ...]]:
    """Pad-11 and later: the pads, the constant and the axes as inputs."""
    if "value" in attrs:
        raise UnsupportedError(f"{label}: attribute value belongs to Pad-1 and Pad-2 "
                               f"(pads as an attribute); Pad-11 and later take the "
                               f"constant as their third input, constant_value")
    pads = _int_input(inputs, 1, label, "pads")
    value = 0
    if len(inputs) > 2 and inputs[2] is not None:
        v = _input(inputs, 2, label, "constant_value")
        if v.dtype.kind not in "biuf":
            raise InvalidArgumentError(f"{label}: input constant_value holds {v.dtype} "
                                       f"values; it must be a number")
        if v.size != 1:
            raise InvalidArgumentError(f"{label}: input constant_value has shape "
                                       f"{v.shape}; it must hold one value")
        value = v.ravel()[0].item()
    axes = tuple(range(rank))
    if len(inputs) > 3 and inputs[3] is not None:
        axes = _int_input(inputs, 3, label, "axes")
        for a in axes:
            if not -rank <= a < rank:
                raise InvalidArgumentError(f"{label}: axes value {a} is out of range for "
                                           f"the {rank}-D data")
        axes = tuple(a % rank for a in axes)
        if len(set(axes)) != len(axes):
            raise InvalidArgumentError(f"{label}: axes {list(axes)} repeats an axis")
    return pads, value, axes


def _pads_per_dimension(label: Any, data: Any, pads: Any, axes: tuple[int, ...]
                        ) -> tuple[Any, list[int], list[int]]:
    """``data`` cropped by the negative pads, and the start and end pads of every dimension
    (non-negative, as DirectML's)."""
    rank = data.ndim
    if len(pads) != 2 * len(axes):
        raise InvalidArgumentError(f"{label}: pads has {len(pads)} values; expected "
                                   f"{2 * len(axes)} (begin values then end values, one per "
                                   f"axis)")
    start, end = [0] * rank, [0] * rank
    for j, a in enumerate(axes):
        start[a], end[a] = pads[j], pads[len(axes) + j]
    # Negative pads crop, before anything is padded (as ONNX Runtime does); DirectML's pads
    # are non-negative. A dimension cropped to nothing can still be padded in constant mode.
    for n, s, e in zip(data.shape, start, end):
        if max(0, -s) + max(0, -e) > n:
            raise InvalidArgumentError(f"{label}: negative pads {list(pads)} remove more than "
                                       f"the {n} elements of a dimension of data")
    crop = tuple(slice(max(0, -s), data.shape[d] - max(0, -e))
                 for d, (s, e) in enumerate(zip(start, end)))
    return data[crop], [max(0, s) for s in start], [max(0, e) for e in end]


def _padded(data: Any, start: list[int], end: list[int], mode: PaddingModeName, value: Any,
            backend: Any) -> Any:
    if mode == "reflection" and any(n == 1 and (s or e)
                                    for n, s, e in zip(data.shape, start, end)):
        # NumPy/ONNX reflect a single element into copies of it; DirectML's REFLECTION
        # has nothing to mirror there, so those dimensions are padded with EDGE (each
        # dimension's index map is independent, so two passes give the same result).
        one = [n == 1 for n in data.shape]
        y = _fn.padding(data, [0 if o else s for o, s in zip(one, start)],
                        [0 if o else e for o, e in zip(one, end)], mode="reflection",
                        backend=backend)
        return _fn.padding(y, [s if o else 0 for o, s in zip(one, start)],
                           [e if o else 0 for o, e in zip(one, end)], mode="edge",
                           backend=backend)
    return _fn.padding(data, start, end, mode=mode, value=value, backend=backend)


def _tensor_value(t: Any, where: str) -> np.ndarray:
    """A TensorProto's values; one whose data does not match its shape and type (a short
    raw_data) is an InvalidArgumentError."""
    try:
        values: np.ndarray = numpy_helper.to_array(t)
        return values
    except Exception as e:          # (onnx raises ValueError, TypeError or its own)
        raise InvalidArgumentError(f"{where}: the tensor cannot be read: "
                                   f"{str(e).strip() or type(e).__name__}") from None


def _constant(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
    if len(attrs) != 1:
        raise InvalidArgumentError(f"{label}: a Constant node needs exactly one value "
                                   f"attribute, got {sorted(attrs)}")
    name, v = next(iter(attrs.items()))
    if name == "value":
        return [_tensor_value(v, f"{label}: attribute value")]
    if name in ("value_float", "value_floats"):
        return [np.asarray(v, np.float32)]
    if name in ("value_int", "value_ints"):
        return [np.asarray(v, np.int64)]
    raise UnsupportedError(f"{label}: attribute {name} is not supported")


def _quant_param(v: Any, c: Any, label: Any, name: Any, channel_axis_size: Any) -> Any:
    """A per-tensor (one value) or per-channel (C values) scale or zero point, in DirectML's
    shapes: a NumPy scalar or ``(1, C, 1, ...)``; numbers only (a string would reach the
    kernels' float conversion)."""
    v = np.asarray(v)
    if v.dtype.kind not in "iuf":
        raise InvalidArgumentError(f"{label}: input {name} holds {v.dtype} values; it must "
                                   f"hold numbers")
    if v.size == 1:
        return v.reshape(())
    if v.ndim == 1 and v.size == c:
        return v.reshape((1, c) + (1,) * channel_axis_size)
    raise InvalidArgumentError(f"{label}: input {name} has shape {v.shape}; expected one value "
                               f"(per tensor) or {c} values (per channel)")


def _phantoms_as_padding(x_shape: Any, args: Any) -> dict[str, Any]:
    """ONNX Runtime's QLinearAveragePool with ``count_include_pad`` divides a ceil-mode
    window that reaches past the end padding by the whole kernel size: its phantom positions
    count. DirectML never counts phantoms, so they become end padding (read as zero, counted
    with IncludePadding); the output size, now the floor size, is unchanged."""
    end = list(args["end_padding"])
    for d, o in enumerate(args["output_sizes"][2:]):
        e = (args["window_size"][d] - 1) * args["dilations"][d] + 1
        p = x_shape[2 + d] + args["start_padding"][d] + end[d]
        end[d] += max(0, (o - 1) * args["strides"][d] + e - p)
    return {**args, "end_padding": tuple(end)}


def _qlinear_average_pool(label: Any, attrs: Any, inputs: Any, n_out: Any, backend: Any) -> Any:
    x = _input(inputs, 0, label, "X")
    if x.dtype not in (np.int8, np.uint8):
        raise UnsupportedError(f"{label}: input X has dtype {x.dtype}; QLinearAveragePool "
                               f"takes int8 or uint8")
    if x.ndim < 3:
        raise UnsupportedError(f"{label}: input X is {x.ndim}-D; pooling needs N, C and at "
                               f"least one spatial dimension")
    channels_last = _flag(attrs, "channels_last", label)
    if channels_last:                                  # N, spatial..., C -> N, C, spatial...
        x = np.moveaxis(x, -1, 1)
    c, k = x.shape[1], x.ndim - 2
    args = pool_arguments(x.shape, attrs, label)
    include = _flag(attrs, "count_include_pad", label)
    if include:
        args = _phantoms_as_padding(x.shape, args)
    s_in = _quant_param(_input(inputs, 1, label, "x_scale"), c, label, "x_scale", k)
    s_out = _quant_param(_input(inputs, 3, label, "y_scale"), c, label, "y_scale", k)
    zps = []
    for i, name in ((2, "x_zero_point"), (4, "y_zero_point")):
        zp = inputs[i] if len(inputs) > i else None
        zps.append(None if zp is None else _quant_param(zp, c, label, name, k))
    out_dtype = zps[1].dtype if zps[1] is not None else x.dtype
    rank = x.ndim

    def desc(arr: Any, dtype: Any) -> Any:
        shape = (1,) * rank if arr.ndim == 0 else arr.shape
        return TensorDesc(dtype, shape), np.ascontiguousarray(arr, dtype=dtype).reshape(shape)

    with _in_node(label):
        # The description layer, because only it takes the F + 1 output size of ceil mode
        # for this operator.
        bind = {"input_tensor": np.ascontiguousarray(x)}
        fields: dict[str, Any] = {"input_tensor": TensorDesc(x.dtype, x.shape),
                                  "output_tensor": TensorDesc(out_dtype, args["output_sizes"])}
        for field, arr, dtype in (("input_scale_tensor", s_in, np.float32),
                                  ("output_scale_tensor", s_out, np.float32),
                                  ("input_zero_point_tensor", zps[0], x.dtype),
                                  ("output_zero_point_tensor", zps[1], out_dtype)):
            if arr is None:
                continue
            if dtype is not np.float32 and arr.dtype != dtype:
                raise UnsupportedError(f"{label}: {field.replace('_tensor', '')} has dtype "
                                       f"{arr.dtype}; it must be {np.dtype(dtype)}")
            fields[field], bind[field] = desc(arr, dtype)
        d = QuantizedLinearAveragePoolingDesc(
            **fields, strides=args["strides"], window_size=args["window_size"],
            start_padding=args["start_padding"], end_padding=args["end_padding"],
            dilations=args["dilations"], include_padding=include)
        y = compile_operator(d, backend=backend).execute(**bind)["output_tensor"]
    return [np.ascontiguousarray(np.moveaxis(y, 1, -1)) if channels_last else y]


_POOL = frozenset({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"})

# (domain, op_type) -> (implementation, accepted attributes, number of outputs at most)
SUPPORTED_OPS = {
    ("", "AveragePool"): (_average_pool, _POOL | {"count_include_pad"}, 1),
    ("", "MaxPool"): (_max_pool, _POOL | {"storage_order"}, 2),
    ("", "LpPool"): (_lp_pool, _POOL | {"p"}, 1),
    ("", "MaxUnpool"): (_max_unpool, frozenset({"kernel_shape", "pads", "strides"}), 1),
    ("", "GlobalAveragePool"): (_global("average"), frozenset(), 1),
    ("", "GlobalMaxPool"): (_global("max"), frozenset(), 1),
    ("", "Pad"): (_pad, frozenset({"mode", "pads", "paddings", "value"}), 1),
    ("", "Constant"): (_constant, frozenset({"value", "value_float", "value_floats",
                                             "value_int", "value_ints"}), 1),
    # (com.microsoft's QLinearAveragePool has no dilations)
    (MS_DOMAIN, "QLinearAveragePool"): (_qlinear_average_pool,
                                        (_POOL - {"dilations"})
                                        | {"count_include_pad", "channels_last"}, 1),
}


class _Node:
    """A checked node: its implementation, attributes and input/output names."""

    def __init__(self, node: Any, index: Any = None) -> None:
        self.label = _label(node, index)
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        entry = SUPPORTED_OPS.get((domain, node.op_type))
        if entry is None:
            names = ", ".join(f"{d + '.' if d else ''}{o}" for d, o in SUPPORTED_OPS)
            raise UnsupportedError(f"{self.label}: operator {domain + '.' if domain else ''}"
                                   f"{node.op_type} is not supported; dmlops.onnx runs {names}")
        self.run_impl, accepted, max_out = entry
        self.attrs = _attributes(node, self.label)
        for name in self.attrs:
            if name not in accepted:
                raise UnsupportedError(f"{self.label}: attribute {name} is not supported "
                                       f"(accepted: {', '.join(sorted(accepted)) or 'none'})")
        if len(node.output) > max_out:
            raise UnsupportedError(f"{self.label}: has {len(node.output)} outputs; "
                                   f"{node.op_type} has at most {max_out}")
        self.inputs = list(node.input)
        self.outputs = list(node.output)

    def run(self, values: dict[str, Any], backend: Any) -> None:
        args = [values.get(n) if n else None for n in self.inputs]
        n_out = len(self.outputs)
        while n_out and not self.outputs[n_out - 1]:
            n_out -= 1
        results = self.run_impl(self.label, self.attrs, args, n_out, backend)
        for name, r in zip(self.outputs, results):
            if name:
                values[name] = r


def _check_device(device: Any) -> None:
    if not DmlBackend.supports_device(device):
        raise UnsupportedError(f"dmlops.onnx: device {device!r} is not supported; dmlops "
                               f"runs on the CPU (device 'CPU')")


class DmlBackendRep(BackendRep):  # type: ignore[misc]  # (onnx's types are skipped: Any)
    """A prepared model: ``run(inputs)`` takes a list (graph inputs in order, initializers
    excluded), a dict by name, or one array, and returns a tuple indexable by output name."""

    def __init__(self, model: Any, backend: Any = None) -> None:
        graph = model.graph
        self._backend = backend
        self._constants = {t.name: _tensor_value(t, f"dmlops.onnx: initializer {t.name!r}")
                           for t in graph.initializer}
        self.input_names = [v.name for v in graph.input if v.name not in self._constants]
        self.output_names = [v.name for v in graph.output]
        self._nodes = [_Node(n, i) for i, n in enumerate(graph.node)]
        self._tuple = namedtupledict("Outputs", self.output_names)

    def run(self, inputs: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise InvalidArgumentError(f"dmlops.onnx: run() takes no keyword arguments, got "
                                       f"{sorted(kwargs)}")
        values = dict(self._constants)
        if isinstance(inputs, dict):
            values.update(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            inputs = _sequence(inputs)
            if len(inputs) != len(self.input_names):
                raise InvalidArgumentError(f"dmlops.onnx: the model takes "
                                           f"{len(self.input_names)} inputs "
                                           f"{self.input_names}, got {len(inputs)}")
            values.update(zip(self.input_names, inputs))
        missing = [n for n in self.input_names if n not in values]
        if missing:
            raise InvalidArgumentError(f"dmlops.onnx: missing inputs {missing}")
        for node in self._nodes:
            node.run(values, self._backend)
        return self._tuple(*(values[n] for n in self.output_names))


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def _sequence(inputs: Any) -> list[Any]:
    """The inputs given as a list, tuple or other sequence of arrays, as a list."""
    if isinstance(inputs, (str, bytes)) or not hasattr(inputs, "__len__") or not hasattr(
            inputs, "__getitem__"):
        raise InvalidArgumentError(f"dmlops.onnx: the inputs must be a list of arrays, a dict "
                                   f"by name or one array, not {type(inputs).__name__}")
    return list(inputs)


def _model_of(model: Any) -> onnx.ModelProto:
    """``model`` as a ModelProto: given as one, as the path of a file or as its bytes."""
    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, (str, os.PathLike)):
            return onnx.load(model)
        if isinstance(model, (bytes, bytearray, memoryview)):
            return onnx.load_from_string(bytes(model))
    except Exception as e:      # (a missing file, or bytes that are no model)
        raise InvalidArgumentError(f"dmlops.onnx: cannot read the model {_short(model)}: "
                                   f"{_first_line(e)}") from None
    raise InvalidArgumentError(f"dmlops.onnx: a model is an onnx.ModelProto, the path of a "
                               f".onnx file or its bytes, not {type(model).__name__}")


def _short(model: Any) -> str:
    r = repr(model if not isinstance(model, (bytes, bytearray, memoryview)) else bytes(model))
    return r if len(r) <= 60 else r[:57] + "..."


def _check_nodes(model: Any) -> None:
    """Every node of ``model`` is one that dmlops runs, with attributes it accepts."""
    for i, n in enumerate(model.graph.node):
        _Node(n, i)


class DmlBackend(Backend):  # type: ignore[misc]  # (onnx's types are skipped: Any)
    """``onnx.backend.base.Backend`` over dmlops. Keyword ``backend=`` picks the dmlops
    backend (``"cpu"``, ``"reference"``; default as :func:`dmlops.set_backend` says)."""

    @classmethod
    def is_compatible(cls, model: Any, device: Any = "CPU", **kwargs: Any) -> bool:
        """Whether dmlops runs every node of ``model`` on ``device``: False for anything it
        cannot read as a model."""
        try:
            _check_nodes(model)
            return cls.supports_device(device)
        except Exception:       # (an answer, not an error: whatever the argument was)
            return False

    @classmethod
    def prepare(cls, model: Any, device: Any = "CPU", backend: Any = None, **kwargs: Any
                ) -> DmlBackendRep:
        if kwargs:
            raise InvalidArgumentError(f"dmlops.onnx: prepare() got unknown keyword arguments "
                                       f"{sorted(kwargs)}")
        _check_device(device)
        model = _model_of(model)
        # (the nodes first: an unsupported operator or attribute is reported as dmlops
        # reports it, naming the node, before onnx's checker finds it unknown)
        _check_nodes(model)
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as e:
            raise InvalidArgumentError(f"dmlops.onnx: the model is not valid ONNX: "
                                       f"{_first_line(e)}") from None
        return DmlBackendRep(model, backend)

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: Any = "CPU", backend: Any = None,
                  **kwargs: Any) -> Any:
        return cls.prepare(model, device, backend=backend, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: Any = "CPU", outputs_info: Any = None,
                 backend: Any = None, **kwargs: Any) -> Any:
        """Run one node on a list of input arrays (None for an omitted optional input);
        returns a tuple over the node's outputs."""
        _check_device(device)
        if not isinstance(node, onnx.NodeProto):
            raise InvalidArgumentError(f"dmlops.onnx: run_node() takes an onnx.NodeProto, not "
                                       f"{type(node).__name__}")
        n = _Node(node)
        if isinstance(inputs, dict):
            values = dict(inputs)
        else:
            values = {name: v for name, v in zip(n.inputs, _sequence(inputs)) if name}
        n.run(values, backend)
        names = [o for o in n.outputs if o]
        return namedtupledict("Outputs", names)(*(values[o] for o in names))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).split(":")[0].upper() == "CPU"


prepare = DmlBackend.prepare
run_model = DmlBackend.run_model
run_node = DmlBackend.run_node
supports_device = DmlBackend.supports_device
is_compatible = DmlBackend.is_compatible
