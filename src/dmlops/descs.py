"""The DirectML layer (SPEC 4.2): one description class per operator and version,
:func:`compile_operator` (validates once) and :class:`CompiledOperator` (executes many times).

>>> import numpy as np, dmlops as dml
>>> desc = dml.MaxPooling2Desc(
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
...     output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
...     output_indices_tensor=dml.TensorDesc("UINT32", (1, 1, 2, 2)),
...     strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
...     dilations=(1, 1))
>>> op = dml.compile_operator(desc, feature_level="6.4")
>>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
>>> out = op.execute(input_tensor=x)
>>> out["output_tensor"][0, 0].tolist(), out["output_indices_tensor"][0, 0].tolist()
([[4.0, 4.0], [6.0, 7.0]], [[4, 4], [7, 8]])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, overload

import numpy as np

from .backends import resolve as resolve_backend
from . import _dask
from . import pooling as _pool
from ._args import is_int, reraise
from ._plancache import planned
from .dtypes import DataType, PaddingMode, data_type, feature_level as _feature_level
from .dtypes import padding_mode
from ._call import Call
from .errors import DmlError, Names
from .padding import (PadPlan, check_pad_values, convert_value, exact_value, float32_field,
                      mode_value, pad_lengths, plan_padding)
from .support import OPERATORS
from .tensor import (TensorDesc, bind, check_no_overlap, check_tensor_desc, check_tensor_values,
                     native, new_array, strides_alias, with_native_outputs)

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import ArrayLike, NDArray

    from ._types import (DaskArrayLike, DataTypeLike, FeatureLevelLike, Float, IntOrInts,
                         PaddingModeLike)
    from .dtypes import FeatureLevel

__all__ = ["AveragePoolingDesc", "AveragePooling1Desc", "AveragePoolingGradDesc",
           "QuantizedLinearAveragePoolingDesc", "MaxPoolingDesc", "MaxPooling1Desc",
           "MaxPooling2Desc", "MaxPoolingGradDesc", "LpPoolingDesc", "LpPooling1Desc",
           "MaxUnpoolingDesc", "RoiPoolingDesc", "PaddingDesc", "Padding1Desc",
           "compile_operator", "CompiledOperator", "DESC_CLASSES"]

IN, OUT = "input", "output"
# the bind points that stay NumPy beside a Dask input (SPEC 6)
_STAY_NUMPY = frozenset({"roi_tensor", "input_scale_tensor", "input_zero_point_tensor",
                         "output_scale_tensor", "output_zero_point_tensor"})
# a description's inputs besides the first, by their role in a plan's run (_call.Operands),
# and the roles' names in messages
_ROLES = {"indices_tensor": "indices", "roi_tensor": "rois", "input_gradient_tensor": "dy"}
_ROLE_NAMES = {"indices": ("indices_tensor", 0), "rois": ("roi_tensor", 0)}


def _spelling(value: Any) -> Any:
    """Sequences become tuples of ints where they are ints; anything else is kept as given
    for compile_operator to report."""
    if value is None or is_int(value) or isinstance(value, (str, bytes, set, frozenset, dict)):
        return int(value) if is_int(value) else value
    try:
        return tuple(int(v) if is_int(v) else v for v in value)
    except TypeError:
        return value


class _Desc:
    """Common behaviour of the description classes (``operator_type`` and
    ``operator_type_value`` are class attributes set by ``_desc``)."""

    _op: ClassVar[str] = ""
    # (field, input/output, optional)
    _tensors: ClassVar[tuple[tuple[str, str, bool], ...]] = ()
    operator_type: ClassVar[str]
    operator_type_value: ClassVar[int]
    # (each description class is a dataclass)
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("strides", "window_size", "start_padding", "end_padding",
                          "dilations", "pooled_size"):
                object.__setattr__(self, f.name, _spelling(value))
            elif f.name == "padding_mode":
                try:
                    object.__setattr__(self, f.name, padding_mode(value))
                except DmlError:
                    pass
            elif f.name == "padding_value_data_type" and value is not None:
                try:
                    object.__setattr__(self, f.name, data_type(value))
                except DmlError:
                    pass
            elif f.name == "include_padding" and isinstance(value, (int, np.integer)):
                object.__setattr__(self, f.name, bool(value) if value in (0, 1) else value)
        if getattr(self, "dimension_count", 0) is None:
            # derived: the spatial rank for pooling, the whole rank for padding
            x = getattr(self, "input_tensor", None)
            if x is None:
                x = getattr(self, "input_gradient_tensor", None)
            if isinstance(x, TensorDesc) and isinstance(x.sizes, tuple):
                spatial = 0 if self._op.startswith("PADDING") else 2
                object.__setattr__(self, "dimension_count", max(len(x.sizes) - spatial, 0))

    @classmethod
    def bind_points(cls) -> tuple[tuple[str, str, bool], ...]:
        return cls._tensors


_D = TypeVar("_D", bound=_Desc)


def _desc(op: str, tensors: tuple[tuple[str, str, bool], ...]
          ) -> Callable[[type[_D]], type[_D]]:
    def wrap(cls: type[_D]) -> type[_D]:
        cls._op = op
        cls._tensors = tensors
        cls.operator_type = "DML_OPERATOR_" + op
        cls.operator_type_value = OPERATORS[op].value
        return cls
    return wrap


_POOL_TENSORS = (("input_tensor", IN, False), ("output_tensor", OUT, False))


@_desc("AVERAGE_POOLING", _POOL_TENSORS)
@dataclass(frozen=True, kw_only=True)
class AveragePoolingDesc(_Desc):
    """DML_AVERAGE_POOLING_OPERATOR_DESC (FL 1.0)."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    include_padding: bool | Literal[0, 1] = False


@_desc("AVERAGE_POOLING1", _POOL_TENSORS)
@dataclass(frozen=True, kw_only=True)
class AveragePooling1Desc(_Desc):
    """DML_AVERAGE_POOLING1_OPERATOR_DESC (FL 6.2): adds Dilations."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    dilations: IntOrInts = 1
    include_padding: bool | Literal[0, 1] = False


@_desc("AVERAGE_POOLING_GRAD", (("input_gradient_tensor", IN, False),
                                ("output_gradient_tensor", OUT, False)))
@dataclass(frozen=True, kw_only=True)
class AveragePoolingGradDesc(_Desc):
    """DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC (FL 3.0). ``input_gradient_tensor`` has the
    forward output's sizes, ``output_gradient_tensor`` the forward input's. Dilations are an
    extension (extended mode only; DirectML's description has none)."""
    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    dilations: IntOrInts = 1
    include_padding: bool | Literal[0, 1] = False
    _json_optional = ("dilations",)


@_desc("QUANTIZED_LINEAR_AVERAGE_POOLING",
       (("input_tensor", IN, False), ("input_scale_tensor", IN, False),
        ("input_zero_point_tensor", IN, True), ("output_scale_tensor", IN, False),
        ("output_zero_point_tensor", IN, True), ("output_tensor", OUT, False)))
@dataclass(frozen=True, kw_only=True)
class QuantizedLinearAveragePoolingDesc(_Desc):
    """DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC (FL 6.2)."""
    input_tensor: TensorDesc
    input_scale_tensor: TensorDesc
    input_zero_point_tensor: TensorDesc | None = None
    output_scale_tensor: TensorDesc
    output_zero_point_tensor: TensorDesc | None = None
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    dilations: IntOrInts = 1
    include_padding: bool | Literal[0, 1] = False


@_desc("MAX_POOLING", _POOL_TENSORS)
@dataclass(frozen=True, kw_only=True)
class MaxPoolingDesc(_Desc):
    """DML_MAX_POOLING_OPERATOR_DESC (FL 1.0)."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0


_MAX_TENSORS = _POOL_TENSORS + (("output_indices_tensor", OUT, True),)


@_desc("MAX_POOLING1", _MAX_TENSORS)
@dataclass(frozen=True, kw_only=True)
class MaxPooling1Desc(_Desc):
    """DML_MAX_POOLING1_OPERATOR_DESC (FL 2.0): optional indices."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    output_indices_tensor: TensorDesc | None = None
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0


@_desc("MAX_POOLING2", _MAX_TENSORS)
@dataclass(frozen=True, kw_only=True)
class MaxPooling2Desc(_Desc):
    """DML_MAX_POOLING2_OPERATOR_DESC (FL 2.1): indices and Dilations."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    output_indices_tensor: TensorDesc | None = None
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    dilations: IntOrInts = 1


@_desc("MAX_POOLING_GRAD", (("input_tensor", IN, False), ("input_gradient_tensor", IN, False),
                            ("output_gradient_tensor", OUT, False)))
@dataclass(frozen=True, kw_only=True)
class MaxPoolingGradDesc(_Desc):
    """DML_MAX_POOLING_GRAD_OPERATOR_DESC (FL 3.0)."""
    input_tensor: TensorDesc
    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    dilations: IntOrInts = 1


@_desc("LP_POOLING", _POOL_TENSORS)
@dataclass(frozen=True, kw_only=True)
class LpPoolingDesc(_Desc):
    """DML_LP_POOLING_OPERATOR_DESC (FL 1.0): ``(Σ |x|^p)^(1/p)`` over each window."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    p: int = 2


@_desc("LP_POOLING1", _POOL_TENSORS)
@dataclass(frozen=True, kw_only=True)
class LpPooling1Desc(_Desc):
    """DML_LP_POOLING1_OPERATOR_DESC (FL 6.2): adds Dilations."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: IntOrInts = 1
    window_size: IntOrInts
    start_padding: IntOrInts = 0
    end_padding: IntOrInts = 0
    dilations: IntOrInts = 1
    p: int = 2


@_desc("MAX_UNPOOLING", (("input_tensor", IN, False), ("indices_tensor", IN, False),
                         ("output_tensor", OUT, False)))
@dataclass(frozen=True, kw_only=True)
class MaxUnpoolingDesc(_Desc):
    """DML_MAX_UNPOOLING_OPERATOR_DESC (FL 2.0): writes each input element at the flat output
    position its index names; the rest of the output is 0."""
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    output_tensor: TensorDesc


@_desc("ROI_POOLING", (("input_tensor", IN, False), ("roi_tensor", IN, False),
                       ("output_tensor", OUT, False)))
@dataclass(frozen=True, kw_only=True)
class RoiPoolingDesc(_Desc):
    """DML_ROI_POOLING_OPERATOR_DESC (FL 1.0). ``roi_tensor`` is ``{1, 1, NumROIs, 5}`` with
    rows ``[batch, x1, y1, x2, y2]``; ``pooled_size`` is ``(height, width)``."""
    input_tensor: TensorDesc
    roi_tensor: TensorDesc
    output_tensor: TensorDesc
    spatial_scale: Float = 1.0
    pooled_size: IntOrInts


@_desc("PADDING", _POOL_TENSORS)
@dataclass(frozen=True, kw_only=True)
class PaddingDesc(_Desc):
    """DML_PADDING_OPERATOR_DESC (FL 1.0); PaddingValue is a 32-bit FLOAT."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    padding_mode: PaddingModeLike = PaddingMode.CONSTANT
    padding_value: Float = 0.0
    dimension_count: int | None = None
    start_padding: IntOrInts
    end_padding: IntOrInts


@_desc("PADDING1", _POOL_TENSORS)
@dataclass(frozen=True, kw_only=True)
class Padding1Desc(_Desc):
    """DML_PADDING1_OPERATOR_DESC (FL 5.0); PaddingValue is given in the output type
    (``padding_value_data_type``, which must equal it; ``None`` means the output's type)."""
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    padding_mode: PaddingModeLike = PaddingMode.CONSTANT
    padding_value_data_type: DataTypeLike | None = None
    padding_value: Float = 0
    dimension_count: int | None = None
    start_padding: IntOrInts
    end_padding: IntOrInts


DESC_CLASSES = {cls._op: cls for cls in (
    AveragePoolingDesc, AveragePooling1Desc, AveragePoolingGradDesc,
    QuantizedLinearAveragePoolingDesc, MaxPoolingDesc, MaxPooling1Desc, MaxPooling2Desc,
    MaxPoolingGradDesc, LpPoolingDesc, LpPooling1Desc, MaxUnpoolingDesc, RoiPoolingDesc,
    PaddingDesc, Padding1Desc)}


# --- compile ----------------------------------------------------------------------------

_FIELD_LABELS = {
    "input": ("input_tensor", 0), "output": ("output_tensor", 0),
    "indices": ("output_indices_tensor", 0), "output_sizes": ("output_tensor.sizes", 0),
    "mode": ("padding_mode", 0), "value": ("padding_value", 0),
}


def _names(desc: Any) -> Names:
    return Names(desc._op, _FIELD_LABELS)


def _tensor_phase1(desc: Any, names: Names) -> None:
    for field, _, optional in desc._tensors:
        t = getattr(desc, field)
        if t is None:
            if not optional:
                raise names.invalid(lambda n: f"{n(field)} is required")
            continue
        check_tensor_desc(t, names, field)


def _tensor_phase3(desc: Any, names: Names) -> None:
    for field, kind, _ in desc._tensors:
        t = getattr(desc, field)
        if t is None:
            continue
        check_tensor_values(t, names, field)
        if kind == OUT and t.strides is not None and strides_alias(t.sizes, t.strides):
            raise names.invalid(lambda n: f"{n(field, subfield='strides')} = {list(t.strides)} "
                                          f"make two elements of sizes {list(t.sizes)} share "
                                          f"memory; an output's elements must be distinct")


def _check_dimension_count(desc: Any, names: Names, k: int, what: str) -> None:
    dc = desc.dimension_count
    if dc is not None and (not is_int(dc) or dc != k):
        raise names.invalid(lambda n: f"{n('dimension_count')} = {dc!r} does not match {what} "
                                      f"({k})")


def _pool_params(desc: Any, names: Names, rank: Any) -> _pool.WindowParams:
    return _pool.window_params(names, rank, desc.window_size, desc.strides,
                               desc.start_padding, desc.end_padding,
                               getattr(desc, "dilations", 1), allow_scalar=True)


def _bool_field(desc: Any, names: Names, field: str) -> bool:
    value = getattr(desc, field)
    if not isinstance(value, (bool, np.bool_)):
        raise names.invalid(lambda n: f"{n(field)} = {value!r} must be a bool (or 0/1)")
    return bool(value)


_KINDS = {"AVERAGE_POOLING": "average", "AVERAGE_POOLING1": "average",
          "AVERAGE_POOLING_GRAD": "average_grad", "QUANTIZED_LINEAR_AVERAGE_POOLING": "quantized",
          "MAX_POOLING_GRAD": "max_grad", "LP_POOLING": "lp", "LP_POOLING1": "lp"}


def _compile_pool(desc: Any, level: FeatureLevel | None, names: Names) -> _pool.PoolPlan:
    op = desc._op
    kind = _KINDS.get(op, "max")
    _tensor_phase1(desc, names)
    if kind == "max_grad":
        x = desc.input_tensor
        names = names.with_fields(output_sizes=("input_gradient_tensor.sizes", 0),
                                  output=("output_gradient_tensor", 0))
        roles = [("input", "data", x.data_type, x.rank),
                 ("input_gradient_tensor", "data", desc.input_gradient_tensor.data_type,
                  desc.input_gradient_tensor.rank),
                 ("output", "data", desc.output_gradient_tensor.data_type,
                  desc.output_gradient_tensor.rank)]
        forward_in, forward_out = x, desc.input_gradient_tensor
    elif kind == "average_grad":
        # the "input" of this operator is the forward output's gradient
        x, dx = desc.input_gradient_tensor, desc.output_gradient_tensor
        names = names.with_fields(output_sizes=("input_gradient_tensor.sizes", 0),
                                  input=("input_gradient_tensor", 0),
                                  output=("output_gradient_tensor", 0))
        roles = [("input", "data", x.data_type, x.rank),
                 ("output", "data", dx.data_type, dx.rank)]
        forward_in, forward_out = dx, x
    else:
        x = desc.input_tensor
        out_role = "output" if kind == "quantized" else "data"
        roles = [("input", "data", x.data_type, x.rank),
                 ("output", out_role, desc.output_tensor.data_type, desc.output_tensor.rank)]
        idx = getattr(desc, "output_indices_tensor", None)
        if idx is not None:
            roles.append(("indices", "indices", idx.data_type, idx.rank))
        forward_in, forward_out = x, desc.output_tensor
    row = _pool.check_tensor_types(op, level, names, roles)
    if kind != "quantized":
        for field, _, dt, _ in roles[1:]:
            if field != "indices":
                _pool.same_type(names, "input", x.data_type, field, dt)
    quant = None
    if kind == "quantized":
        quant = _quant_desc_types(desc, names)
    # phase 2: lengths
    _check_dimension_count(desc, names, x.rank - 2, f"the {x.rank}-D input's spatial "
                           f"dimension count")
    params = _pool_params(desc, names, x.rank)
    # phase 3: values
    _tensor_phase3(desc, names)
    geometry = _pool.geometry(row, names, forward_in.sizes, params, forward_out.sizes,
                              None if level is None else OPERATORS[op].extended)
    include = _bool_field(desc, names, "include_padding") if hasattr(desc, "include_padding") \
        else False
    _pool.check_divisors(names, geometry, include)
    p = _pool.check_p(desc.p, names) if kind == "lp" else None
    idx_dt = None
    if kind == "max" and getattr(desc, "output_indices_tensor", None) is not None:
        idx = desc.output_indices_tensor
        if idx.sizes != geometry.output_sizes:
            raise names.invalid(lambda n: f"{n('output_indices_tensor', subfield='sizes')} = "
                                          f"{list(idx.sizes)} must equal "
                                          f"{n('output_tensor', subfield='sizes')} "
                                          f"{list(geometry.output_sizes)}")
        _pool.check_index_type(x.sizes, idx.data_type, names, "indices")
        idx_dt = idx.data_type
    if kind == "max_grad" and desc.output_gradient_tensor.sizes != x.sizes:
        raise names.invalid(lambda n: f"{n('output_gradient_tensor', subfield='sizes')} = "
                                      f"{list(desc.output_gradient_tensor.sizes)} must equal "
                                      f"{n('input_tensor', subfield='sizes')} {list(x.sizes)}")
    if quant is not None:
        for field in ("input_scale_tensor", "input_zero_point_tensor", "output_scale_tensor",
                      "output_zero_point_tensor"):
            t = getattr(desc, field)
            if t is not None:
                _pool.quantization_param_shape(t.sizes, x.sizes, names, field)
    out_dt = desc.output_tensor.data_type if kind in ("quantized", "max", "average", "lp") \
        else x.data_type
    return _pool.PoolPlan(kind, op, geometry, x.data_type, out_dt, idx_dt, include, p)


def _compile_unpool(desc: Any, level: FeatureLevel | None, names: Names) -> _pool.UnpoolPlan:
    names = names.with_fields(indices=("indices_tensor", 0))
    _tensor_phase1(desc, names)
    x, idx, y = desc.input_tensor, desc.indices_tensor, desc.output_tensor
    _pool.check_tensor_types(desc._op, level, names, [
        ("input", "data", x.data_type, x.rank), ("indices", "indices", idx.data_type, idx.rank),
        ("output", "data", y.data_type, y.rank)])
    _pool.same_type(names, "input", x.data_type, "output", y.data_type)
    _tensor_phase3(desc, names)
    _pool.unpool_sizes(x.sizes, idx.sizes, y.sizes, names)
    return _pool.UnpoolPlan(desc._op, x.data_type, idx.data_type, x.sizes, y.sizes)


def _compile_roi(desc: Any, level: FeatureLevel | None, names: Names) -> _pool.RoiPlan:
    names = names.with_fields(rois=("roi_tensor", 0))
    _tensor_phase1(desc, names)
    x, rois, y = desc.input_tensor, desc.roi_tensor, desc.output_tensor
    _pool.check_tensor_types(desc._op, level, names, [
        ("input", "data", x.data_type, x.rank), ("roi_tensor", "data", rois.data_type, rois.rank),
        ("output", "data", y.data_type, y.rank)])
    _pool.same_type(names, "input", x.data_type, "roi_tensor", rois.data_type)
    _pool.same_type(names, "input", x.data_type, "output", y.data_type)
    _tensor_phase3(desc, names)
    scale = _pool.check_spatial_scale(desc.spatial_scale, names)
    pooled = _pool.check_pooled_size(desc.pooled_size, names)
    if rois.sizes[:2] != (1, 1) or rois.sizes[3] != 5:
        raise names.invalid(lambda n: f"{n('roi_tensor', subfield='sizes')} = {list(rois.sizes)}; "
                                      f"expected [1, 1, NumROIs, 5] (rows [batch, x1, y1, x2, "
                                      f"y2])")
    expected = (rois.sizes[2], x.sizes[1]) + pooled
    if y.sizes != expected:
        raise names.invalid(lambda n: f"{n('output_tensor', subfield='sizes')} = {list(y.sizes)} "
                                      f"must be [NumROIs, C, pooled height, pooled width] = "
                                      f"{list(expected)}")
    return _pool.RoiPlan(desc._op, x.data_type, x.sizes, rois.sizes[2], scale, pooled)


def _quant_desc_types(desc: Any, names: Names) -> bool:
    for field in ("input_scale_tensor", "output_scale_tensor"):
        t = getattr(desc, field)
        if t.data_type != DataType.FLOAT32:
            raise names.unsupported(lambda n: f"{n(field)} has data type {t.data_type.name}; "
                                              f"scales are FLOAT32", subfield="data_type")
    for field, owner in (("input_zero_point_tensor", "input_tensor"),
                         ("output_zero_point_tensor", "output_tensor")):
        t = getattr(desc, field)
        if t is not None and t.data_type != getattr(desc, owner).data_type:
            raise names.unsupported(lambda n: f"{n(field)} has data type {t.data_type.name}; it "
                                              f"must match {n(owner)} "
                                              f"({getattr(desc, owner).data_type.name})",
                                    subfield="data_type")
    return True


def _compile_pad(desc: Any, level: FeatureLevel | None, names: Names) -> PadPlan:
    op = desc._op
    _tensor_phase1(desc, names)
    x, y = desc.input_tensor, desc.output_tensor
    mode = plan_padding(op, level, names, x.data_type, x.rank, y.data_type, y.rank,
                        desc.padding_mode)
    if op == "PADDING1" and desc.padding_value_data_type is not None:
        vdt = reraise(names, data_type, desc.padding_value_data_type,
                      names("padding_value_data_type"), field="padding_value_data_type")
        if vdt != y.data_type:
            raise names.invalid(lambda n: f"{n('padding_value_data_type')} = {vdt.name} must "
                                          f"equal the output type {y.data_type.name}")
    _check_dimension_count(desc, names, x.rank, f"the {x.rank}-D input's rank")
    start, end = pad_lengths(desc.start_padding, desc.end_padding, x.rank, names,
                             allow_scalar=True)
    _tensor_phase3(desc, names)
    check_pad_values(x.sizes, start, end, mode, names)
    expected = tuple(n + a + b for n, a, b in zip(x.sizes, start, end))
    if y.sizes != expected:
        d = next(i for i in range(len(expected)) if y.sizes[i] != expected[i])
        raise names.invalid(lambda n: f"{n('output_tensor', d, 'sizes')} = {y.sizes[d]} must be "
                                      f"input size {x.sizes[d]} + {n('start_padding')} "
                                      f"{start[d]} + {n('end_padding')} {end[d]} = "
                                      f"{expected[d]}")
    if op == "PADDING":
        value = mode_value(mode, x.data_type, lambda: convert_value(
            float32_field(desc.padding_value, names, "value"), x.data_type, names))
    else:
        value = mode_value(mode, x.data_type, lambda: exact_value(
            desc.padding_value, x.data_type, names, "value"))
    return PadPlan(op, x.data_type, x.sizes, start, end, mode, value)


def _plan(*, desc: Any, level: FeatureLevel | None) -> Any:
    names = _names(desc)
    if desc._op.startswith("PADDING"):
        return _compile_pad(desc, level, names)
    if desc._op == "MAX_UNPOOLING":
        return _compile_unpool(desc, level, names)
    if desc._op == "ROI_POOLING":
        return _compile_roi(desc, level, names)
    return _compile_pool(desc, level, names)


def compile_operator(desc: _Desc, feature_level: FeatureLevelLike = None, *,
                     backend: str | None = None) -> CompiledOperator:
    """Validate ``desc`` against ``feature_level`` (``None``: extended mode) once, and return
    an operator that executes many times."""
    if not isinstance(desc, _Desc):
        raise Names("compile_operator").invalid(
            lambda n: f"{n('desc')} must be one of the description classes "
                      f"({', '.join(c.__name__ for c in DESC_CLASSES.values())}), got "
                      f"{type(desc).__name__}")
    names = _names(desc)
    level = reraise(names, _feature_level, feature_level, field="feature_level")
    plan = planned(_plan, (), {"desc": desc, "level": level})
    name, kernels = reraise(names, resolve_backend, backend, field="backend")
    return CompiledOperator(desc, level, plan, name, kernels)


class CompiledOperator:
    """A validated operator. ``execute(**bindings)`` binds arrays by bind point (snake_case
    DirectML names) and returns a dict of every output."""

    def __init__(self, desc: _Desc, level: FeatureLevel | None, plan: Any, backend_name: str,
                 kernels: ModuleType) -> None:
        self.desc = desc
        self.feature_level = level
        self.plan = plan
        self.backend = backend_name
        self._kernels = kernels

    def __repr__(self) -> str:
        return f"<CompiledOperator {self.desc.operator_type} backend={self.backend}>"

    @overload
    def execute(self, **bindings: NDArray[Any] | None) -> dict[str, NDArray[Any]]: ...

    @overload
    def execute(self, **bindings: ArrayLike | DaskArrayLike | None) -> dict[str, Any]: ...

    def execute(self, **bindings: Any) -> dict[str, Any]:
        desc, names = self.desc, _names(self.desc)
        known = {field: (kind, optional) for field, kind, optional in desc._tensors}
        for key in bindings:
            if key not in known:
                raise names.invalid(f"execute: unknown bind point {key!r}; this operator's "
                                    f"bind points are {', '.join(known)}", field=key)
            if getattr(desc, key) is None and bindings[key] is not None:
                raise names.invalid(lambda n: f"execute: {n(key)} is bound, but the description "
                                              f"leaves it out")
        if any(_dask.is_dask(v) for v in bindings.values()):
            return self._execute_lazy(bindings, known, names)
        views, given = {}, {}
        for field, (kind, optional) in known.items():
            t = getattr(desc, field)
            if t is None:
                continue
            value = bindings.get(field)
            if value is None:
                if kind == IN:
                    raise names.invalid(lambda n: f"execute: the input {n(field)} is not bound")
                continue
            views[field] = bind(value, t, names, field, output=(kind == OUT))
            given[field] = value
        inputs = [f for f, (k, _) in known.items() if k == IN and f in views]
        outputs = [f for f, (k, _) in known.items() if k == OUT and f in views]
        check_no_overlap(names, [(f, views[f]) for f in inputs], [(f, views[f]) for f in outputs])
        extra = self._quantization(views, names)
        result = {}
        out_views = []
        for field, (kind, _) in known.items():
            t = getattr(desc, field)
            if kind != OUT or t is None:
                continue
            if field in views:
                result[field] = given[field]
                out_views.append(views[field])
            else:
                arr = new_array(t.sizes, t.dtype, names, field)
                result[field] = arr
                out_views.append(arr)
        x = native(views[inputs[0]])
        with_native_outputs(out_views, lambda outs: self._run(x, outs, views, extra, names))
        return result

    def _execute_lazy(self, bindings: Any, known: Any, names: Names) -> dict[str, Any]:
        """``execute`` with a Dask input (SPEC 6): lazy outputs, the same bits as in memory.
        A Dask binding is taken by its logical shape, which must be the tensor's sizes (a
        description's strides lay out memory, which a Dask array does not have); NumPy
        inputs beside it bind as usual; outputs cannot be bound."""
        import dask.array as da

        desc, plan = self.desc, self.plan
        lazy, views = {}, {}
        for field, (kind, _) in known.items():
            t, value = getattr(desc, field), bindings.get(field)
            if t is None or value is None:
                if kind == IN and t is not None:
                    raise names.invalid(lambda n: f"execute: the input {n(field)} is not bound")
                continue
            if kind == OUT:
                raise names.unsupported(lambda n: f"execute: {n(field)} is bound, but the inputs "
                                                  f"are Dask arrays: the outputs are new lazy "
                                                  f"arrays (store them with dask.array.store)")
            if field in _STAY_NUMPY and _dask.is_dask(value):
                raise names.unsupported(lambda n: f"{n(field)} is a Dask array; ROI boxes and "
                                                  f"quantization scales and zero points stay NumPy "
                                                  f"(SPEC 6)")
            if not _dask.is_dask(value):
                views[field] = bind(value, t, names, field, output=False)
                lazy[field] = da.from_array(np.ascontiguousarray(views[field]), chunks=-1)
                continue
            if value.dtype != t.dtype:
                raise names.unsupported(lambda n: f"{n(field)} has dtype {value.dtype}; the "
                                                  f"description says {t.data_type.name} "
                                                  f"({t.dtype}), and bindings are not cast")
            if tuple(value.shape) != tuple(t.sizes):
                raise names.invalid(lambda n: f"{n(field)} is a Dask array of shape {value.shape}; "
                                              f"a Dask binding must have the tensor's sizes "
                                              f"{t.sizes}")
            lazy[field] = value
        outs = [(f, getattr(desc, f).sizes, getattr(desc, f).dtype) for f, (k, _) in known.items()
                if k == OUT and getattr(desc, f) is not None]
        x = lazy.get("input_tensor")
        extra = self._quantization({f: v for f, v in views.items() if f in _STAY_NUMPY}, names)
        call = Call(names, plan, tuple(lazy), outs, extra)
        operands = {role: native(views[f]) if f in _STAY_NUMPY else lazy[f]
                    for f, role in _ROLES.items() if f in lazy}
        ys = plan.lazy(x, {**operands, **(extra or {})}, call, self._kernels, None,
                       names.with_fields(**_ROLE_NAMES))
        return {f: y for (f, _, _), y in zip(outs, ys)}

    def _run(self, x: Any, outs: Any, views: Any, extra: Any, names: Names) -> None:
        operands = {role: native(views[f]) for f, role in _ROLES.items() if f in views}
        self.plan.run(self._kernels, x, outs, {**operands, **(extra or {})},
                      names.with_fields(**_ROLE_NAMES))

    def _quantization(self, views: Any, names: Names) -> dict[str, NDArray[Any]] | None:
        """Quantized pooling's scales and zero points, shaped for the kernel; None for the
        other operators."""
        if getattr(self.plan, "kind", None) != "quantized":
            return None
        desc: Any = self.desc
        rank = desc.input_tensor.rank
        out = {}
        for key, field in (("scale_in", "input_scale_tensor"), ("scale_out", "output_scale_tensor")):
            s = np.asarray(native(views[field]), dtype=np.float32)
            _pool.check_scale_values(s, names, field)
            out[key] = s.reshape(s.shape + (1,) * (rank - s.ndim)) if s.ndim < rank else s
        for key, field in (("zp_in", "input_zero_point_tensor"), ("zp_out", "output_zero_point_tensor")):
            if field in views:
                z = np.asarray(views[field]).astype(np.int64)
                out[key] = z.reshape(z.shape + (1,) * (rank - z.ndim)) if z.ndim < rank else z
            else:
                out[key] = np.zeros((1,) * rank, dtype=np.int64)
        return out
