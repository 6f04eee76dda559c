"""Dispatchables: JSON descriptions -> description objects -> compiled operators, and the
core's errors re-spelled at their JSON location (:class:`ErrorMapper`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..dtypes import DataType, FLOAT_TYPES
from ..dtypes import padding_mode
from ..errors import DmlError, Names
from ._json import (ModelError, check_keys, describe, is_int, json_bool, json_data_type,
                    json_item, json_key, json_list, json_number, json_object, json_str,
                    json_uint, json_uint_list)
from ._values import to_type


def _camel(snake: str) -> str:
    """DirectML's field name of a snake_case field: ``roi_tensor`` -> ``ROITensor``."""
    special = {"roi": "ROI"}
    return "".join(special.get(part, part[:1].upper() + part[1:])
                   for part in snake.split("_"))


_TENSOR_SUBFIELDS = {
    "data_type": "DataType", "sizes": "Sizes", "strides": "Strides", "flags": "Flags",
    "dimension_count": "DimensionCount",
    "total_tensor_size_in_bytes": "TotalTensorSizeInBytes",
    "guaranteed_base_offset_alignment": "GuaranteedBaseOffsetAlignment",
}
_TENSOR_KEYS = ("Type", "Desc") + tuple(_TENSOR_SUBFIELDS.values())

# Fields whose JSON form is not obvious from their name. A field not listed here and not a
# tensor (``*_tensor``) is passed through as its JSON value, so new description classes work.
_UINT_ARRAYS = {"strides", "window_size", "start_padding", "end_padding", "dilations",
                "output_padding"}
_UINTS = {"dimension_count", "p", "axis"}
_BOOLS = {"include_padding"}
_FLOATS = {"spatial_scale"}

# DirectML's optional tensors (``_Maybenull_`` in DirectML.h / DxDispatch's schema).
_OPTIONAL_TENSORS = {"output_indices_tensor", "input_zero_point_tensor",
                     "output_zero_point_tensor"}
# Fields a JSON description may leave out (derived from the tensors).
_OPTIONAL_FIELDS = {"dimension_count"}

_FLAG_NAMES = {"NONE": 0, "OWNED_BY_DML": 1}
_EXEC_FLAGS = {"NONE", "ALLOW_HALF_PRECISION_COMPUTATION", "DISABLE_META_COMMANDS",
               "DESCRIPTORS_VOLATILE"}
_COMPILE_TYPES = {"DmlCompileOp", "DmlCompileGraph"}

# Members of DML_SCALAR_UNION and the DataType each holds.
_UNION_MEMBERS = {
    "Int8": DataType.INT8, "UInt8": DataType.UINT8, "Int16": DataType.INT16,
    "UInt16": DataType.UINT16, "Int32": DataType.INT32, "UInt32": DataType.UINT32,
    "Int64": DataType.INT64, "UInt64": DataType.UINT64, "Float32": DataType.FLOAT32,
    "Float64": DataType.FLOAT64,
}
_MEMBER_OF = {dt: m for m, dt in _UNION_MEMBERS.items()}
_MEMBER_OF[DataType.FLOAT16] = "UInt16"       # FLOAT16 is stored as its bits


def _desc_classes() -> dict[str, Any]:
    from .. import descs
    return descs.DESC_CLASSES


def _fields(cls: Any) -> list[Any]:
    return [f for f in dataclasses.fields(cls) if f.init]


def _is_tensor_field(name: str) -> bool:
    return name.endswith("_tensor") or name.endswith("_tensors")


def _bind_points(cls: Any) -> list[Any]:
    """``(field, "input"|"output", optional)`` of each tensor of a description class: asked of
    the class (``bind_points()``), else DirectML's naming (``Output*Tensor`` fields other than
    quantization parameters are outputs; optional tensors from DirectML's schema)."""
    getter = getattr(cls, "bind_points", None)
    if callable(getter):
        return [(f, "output" if kind == "output" else "input", bool(opt))
                for f, kind, opt in getter()]
    out = []
    for f in _fields(cls):
        if not _is_tensor_field(f.name):
            continue
        is_out = f.name.startswith("output_") and not f.name.startswith(
            ("output_scale", "output_zero_point"))
        out.append((f.name, "output" if is_out else "input", f.name in _OPTIONAL_TENSORS))
    return out


class Dispatchable:
    """A compiled operator with its JSON name and tensor bind points."""

    def __init__(self, name: Any, operator_type: Any, desc: Any, op: Any, tensors: Any,
                 bind_points: Any, camel: Any) -> None:
        self.name = name
        self.operator_type = operator_type
        self.desc = desc
        self.op = op
        self.tensors = tensors        # snake field -> TensorDesc, for the tensors present
        self.bind_points = [f for f, _, _ in bind_points]
        self.outputs = {f for f, kind, _ in bind_points if kind == "output"}
        self.camel = camel            # snake field -> JSON name


def _tensor(value: Any, path: str) -> Any:
    from .. import TensorDesc
    obj = json_object(value, path, "a tensor description {DataType, Sizes, ...}")
    if "Desc" in obj:                 # DxDispatch's long form {Type, Desc: {...}}
        check_keys(obj, path, ("Type", "Desc"), required=("Desc",))
        _tensor_type(obj, path)
        path = json_key(path, "Desc")
        obj = json_object(obj["Desc"], path)
    check_keys(obj, path, _TENSOR_KEYS[:1] + _TENSOR_KEYS[2:], required=("DataType", "Sizes"))
    _tensor_type(obj, path)
    dt = json_data_type(obj["DataType"], json_key(path, "DataType"))
    sizes = json_uint_list(obj["Sizes"], json_key(path, "Sizes"))
    strides = None
    if obj.get("Strides") is not None:
        strides = json_uint_list(obj["Strides"], json_key(path, "Strides"))
    kwargs = {}
    if "Flags" in obj:
        kwargs["flags"] = _flags(obj["Flags"], json_key(path, "Flags"))
    if "DimensionCount" in obj:
        kwargs["dimension_count"] = json_uint(obj["DimensionCount"],
                                              json_key(path, "DimensionCount"))
    if "TotalTensorSizeInBytes" in obj:
        kwargs["total_tensor_size_in_bytes"] = json_uint(obj["TotalTensorSizeInBytes"],
                                                         json_key(path, "TotalTensorSizeInBytes"))
    if "GuaranteedBaseOffsetAlignment" in obj:
        kwargs["guaranteed_base_offset_alignment"] = json_uint(
            obj["GuaranteedBaseOffsetAlignment"], json_key(path, "GuaranteedBaseOffsetAlignment"),
            maximum=2**32 - 1)
    return TensorDesc(dt, tuple(sizes), None if strides is None else tuple(strides), **kwargs)


def _tensor_type(obj: dict[str, Any], path: str) -> None:
    if "Type" in obj:
        t = json_str(obj["Type"], json_key(path, "Type"))
        if t.upper() not in ("BUFFER", "DML_TENSOR_TYPE_BUFFER"):
            raise ModelError(json_key(path, "Type"), f"{t!r}: only DML_TENSOR_TYPE_BUFFER tensors "
                                                     f"exist")


def _flag_names(value: Any, path: str, kind: str, known: Any) -> Iterator[Any]:
    """A DirectML flag name or a list of them (prefix optional, any case), each checked
    against ``known``; yields the bare names."""
    items = value if isinstance(value, list) else [value]
    for i, v in enumerate(items):
        where = json_item(path, i) if isinstance(value, list) else path
        text = json_str(v, where, f"DML_{kind}_FLAG names")
        name = text.strip().upper()
        for prefix in (f"DML_{kind}_FLAGS_", f"DML_{kind}_FLAG_"):
            if name.startswith(prefix):
                name = name[len(prefix):]
        if name not in known:
            raise ModelError(where, f"{text!r} is not a DML_{kind}_FLAG; expected one of "
                                    f"{', '.join(sorted(known))}")
        yield name


def _flags(value: Any, path: str) -> int:
    if is_int(value):
        return json_uint(value, path, maximum=2**32 - 1)
    out = 0
    for name in _flag_names(value, path, "TENSOR", _FLAG_NAMES):
        out |= _FLAG_NAMES[name]
    return out


def _padding_value(value: Any, cls: Any, kwargs: Any, path: str, typed: bool) -> Any:
    """PADDING's FLOAT field, or PADDING1's DML_SCALAR_UNION read as PaddingValueDataType."""
    if not typed:
        return float(json_number(value, path))
    dt = kwargs.get("padding_value_data_type")
    if not isinstance(dt, DataType):
        raise ModelError(path, "needs a valid PaddingValueDataType")
    if isinstance(value, dict):
        obj = json_object(value, path)
        if len(obj) != 1:
            raise ModelError(path, f"a DML_SCALAR_UNION object has exactly one member, such "
                                   f"as {{\"{_MEMBER_OF[dt]}\": value}}")
        member, v = next(iter(obj.items()))
        mpath = json_key(path, member)
        if member == "Bytes":
            raw = json_uint_list(v, mpath, 0, 255)
            if len(raw) > 8:
                raise ModelError(mpath, f"has {len(raw)} bytes; a scalar union has 8")
            union = bytes(raw) + bytes(8 - len(raw))
            return np.frombuffer(union[:dt.itemsize], dtype=dt.dtype)[0]
        if member not in _UNION_MEMBERS:
            raise ModelError(mpath, f"{member!r} is not a DML_SCALAR_UNION member; expected "
                                    f"Bytes, {', '.join(_UNION_MEMBERS)}")
        if member != _MEMBER_OF[dt]:
            bits = " (FLOAT16 values are given as their bits)" if dt == DataType.FLOAT16 else ""
            raise ModelError(mpath, f"PaddingValueDataType is {dt.name}; give the value as "
                                    f"{{\"{_MEMBER_OF[dt]}\": ...}}{bits}, or as a number")
        mdt = _UNION_MEMBERS[member]
        stored = to_type([json_number(v, mpath, mdt in FLOAT_TYPES)], mdt, mpath)
        return stored.view(dt.dtype)[0]
    # a number is a value of the type, not bits; the core rounds it (float types) or checks
    # that it is one of the type (integer types)
    return json_number(value, path, dt in FLOAT_TYPES)


def _pooled_size(value: Any, path: str) -> Any:
    obj = json_object(value, path, "an object {\"Width\": w, \"Height\": h}")
    check_keys(obj, path, ("Width", "Height"), required=("Width", "Height"))
    w = json_uint(obj["Width"], json_key(path, "Width"), maximum=2**32 - 1)
    h = json_uint(obj["Height"], json_key(path, "Height"), maximum=2**32 - 1)
    return (h, w)


def _field_value(snake: str, value: Any, cls: Any, kwargs: Any, path: str) -> Any:
    if _is_tensor_field(snake):
        if snake.endswith("_tensors"):
            items = json_list(value, path, "an array of tensor descriptions")
            return tuple(_tensor(v, json_item(path, i)) for i, v in enumerate(items))
        return _tensor(value, path)
    if snake in _UINT_ARRAYS:
        return tuple(json_uint_list(value, path))
    if snake in _UINTS:
        return json_uint(value, path, maximum=2**32 - 1)
    if snake in _BOOLS:
        return json_bool(value, path)
    if snake in _FLOATS:
        return float(json_number(value, path))
    if snake == "padding_mode":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ModelError(path, f"expected a DML_PADDING_MODE name, got {describe(value)}")
        try:
            return padding_mode(value)
        except DmlError:
            raise ModelError(path, f"{describe(value)} is not a DML_PADDING_MODE; expected "
                                   f"CONSTANT, EDGE, REFLECTION, SYMMETRIC or WRAP (the "
                                   f"DML_PADDING_MODE_ prefix is optional)") from None
    if snake.endswith("data_type"):
        return json_data_type(value, path)
    if snake == "padding_value":
        typed = any(f.name == "padding_value_data_type" for f in _fields(cls))
        return _padding_value(value, cls, kwargs, path, typed)
    if snake == "pooled_size":
        return _pooled_size(value, path)
    return value


def _operator_class(value: Any, path: str) -> Any:
    text = json_str(value, path, "an operator type such as DML_OPERATOR_MAX_POOLING2")
    name = text.strip().upper()
    if name.startswith("DML_OPERATOR_"):
        name = name[len("DML_OPERATOR_"):]
    classes = _desc_classes()
    if name in classes:
        return name, classes[name]
    if text.strip().lower() in ("hlsl", "onnx", "dmlserializedgraph"):
        raise ModelError(path, f"{text!r} dispatchables are not supported; dmlops runs "
                               f"DirectML operators (DML_OPERATOR_*)")
    known = ", ".join(sorted(classes))
    raise ModelError(path, f"{text!r} is not an operator dmlops implements; expected "
                           f"DML_OPERATOR_ followed by one of {known}")


_DISPATCHABLE_KEYS = ("type", "desc", "Desc", "executionFlags", "dmlCompileType")


def parse_dispatchable(name: str, value: Any, path: str, level: Any, backend: Any) -> Dispatchable:
    from .. import compile_operator
    obj = json_object(value, path)
    check_keys(obj, path, _DISPATCHABLE_KEYS, required=("type",))
    op_name, cls = _operator_class(obj["type"], json_key(path, "type"))
    if "desc" in obj and "Desc" in obj:
        raise ModelError(json_key(path, "Desc"), "give either desc or Desc, not both")
    dkey = "desc" if "desc" in obj else "Desc"
    if dkey not in obj:
        raise ModelError(json_key(path, "desc"), "missing (required)")
    if "executionFlags" in obj:
        _execution_flags(obj["executionFlags"], json_key(path, "executionFlags"))
    if "dmlCompileType" in obj:
        t = json_str(obj["dmlCompileType"], json_key(path, "dmlCompileType"))
        if t not in _COMPILE_TYPES:
            raise ModelError(json_key(path, "dmlCompileType"),
                             f"{t!r}: expected DmlCompileOp or DmlCompileGraph")
    dpath = json_key(path, dkey)
    desc_json = json_object(obj[dkey], dpath)
    fields = _fields(cls)
    camel = {f.name: _camel(f.name) for f in fields}
    by_json = {c: s for s, c in camel.items()}
    check_keys(desc_json, dpath, list(by_json))
    bind_points = _bind_points(cls)
    optional = {f for f, _, opt in bind_points if opt}
    kwargs: dict[str, Any] = {}
    # data types first: PADDING1's PaddingValue is read as PaddingValueDataType
    order = sorted(fields, key=lambda f: (not f.name.endswith("data_type"),))
    for f in order:
        key = camel[f.name]
        # (an optional tensor given as null is left out, as DirectML's null pointer)
        if key not in desc_json or (desc_json[key] is None and f.name in optional):
            continue
        kwargs[f.name] = _field_value(f.name, desc_json[key], cls, kwargs, json_key(dpath, key))
    for f in fields:
        if f.name in kwargs or f.name in _OPTIONAL_FIELDS or f.name in optional or \
                f.name in getattr(cls, "_json_optional", ()):
            continue
        if not _is_tensor_field(f.name) and f.name not in _KNOWN_FIELDS and \
                (f.default is not dataclasses.MISSING
                 or f.default_factory is not dataclasses.MISSING):
            continue            # a field this runner does not know, with a default
        raise ModelError(json_key(dpath, camel[f.name]), f"missing (required by "
                                                         f"DML_OPERATOR_{op_name})")
    mapper = ErrorMapper(camel)
    try:
        desc = cls(**kwargs)
    except DmlError as e:
        raise mapper.model_error(e, dpath) from None
    try:
        if backend is None:
            op = compile_operator(desc, feature_level=level)
        else:
            op = compile_operator(desc, feature_level=level, backend=backend)
    except DmlError as e:
        raise mapper.model_error(e, dpath) from None
    tensors = {s: v for s, v in kwargs.items() if _is_tensor_field(s) and v is not None}
    return Dispatchable(name, f"DML_OPERATOR_{op_name}", desc, op, tensors, bind_points,
                        camel)


_KNOWN_FIELDS = _UINT_ARRAYS | _UINTS | _BOOLS | _FLOATS | {
    "padding_mode", "padding_value", "padding_value_data_type", "pooled_size"}


def _execution_flags(value: Any, path: str) -> None:
    for _ in _flag_names(value, path, "EXECUTION", _EXEC_FLAGS):
        pass


# fields that JSON spells as an object, by the core's index (``_pooled_size``)
_JSON_MEMBERS = {"pooled_size": ("Height", "Width")}


class _JsonNames(Names):
    """A description's labels in DirectML's spelling, where an index of a field that JSON
    spells as an object is its member: ``PooledSize.Height``."""

    __slots__ = ()

    def __call__(self, field: str, index: int | None = None, subfield: str | None = None
                 ) -> str:
        members = _JSON_MEMBERS.get(field, ())
        at = None if index is None else index + self.fields.get(field, (field, 0))[1]
        if at is not None and subfield is None and 0 <= at < len(members):
            return f"{super().__call__(field)}.{members[at]}"
        return super().__call__(field, index, subfield)


class ErrorMapper:
    """Re-spell a core error at its JSON location, in DirectML's names: from the field, index
    and sub-field the error carries, through the description's own labels (its ``names``)."""

    def __init__(self, camel: dict[str, Any]) -> None:
        self.camel = camel

    def _json(self, names: Names) -> Names:
        """``names`` (snake_case labels such as ``output_tensor.sizes``) in DirectML's
        spelling; a label that is no field of this description is kept."""
        fields = {s: (c, 0) for s, c in self.camel.items()}
        for key, (label, offset) in names.fields.items():
            head, dot, sub = label.partition(".")
            if head in self.camel:
                spelled = self.camel[head] + (dot + _TENSOR_SUBFIELDS.get(sub, sub) if dot else "")
                fields[key] = (spelled, offset)
        return _JsonNames(names.op, fields, _TENSOR_SUBFIELDS)

    def model_error(self, e: DmlError, base: str, tensor_base: str | None = None
                    ) -> ModelError:
        """``e`` at ``base`` (a description's path) or, found while running, at its tensor's
        binding below ``tensor_base``; a field that is none of the description's stays at
        the dispatchable."""
        above = base.rsplit(".", 1)[0] if base.endswith((".desc", ".Desc")) else base
        if e.names is None:             # (not raised by a description's check)
            return ModelError(above, e.text())
        json, field = self._json(e.names), e.field
        # the description field the place is in: the head of its label (output_tensor.sizes)
        head = "" if field is None else e.names(field).partition(".")[0]
        if field == "operator_type":    # (the operator, at the feature level targeted)
            path = json_key(above, "type")
        elif field is None or head not in self.camel:
            path = above
        elif tensor_base is not None:
            path = json_key(tensor_base, self.camel[head]) if _is_tensor_field(head) else base
        else:
            path = f"{base}.{json(field, e.index, e.subfield)}"
        return ModelError(path, e.text(json))
