"""DxDispatch JSON models: ``dmlops run model.json`` (SPEC 6, SPEC 7 "dmlops run").

A model has three members, as in DirectML's DxDispatch tool:

* ``resources``: name -> byte buffer, filled from ``initialValues`` read as
  ``initialValuesDataType`` (an array, ``{valueCount, value}``,
  ``{valueCount, valueStart, valueDelta}`` or ``{sourcePath}`` of a ``.npy``/``.dat``/``.bin``
  file), optionally enlarged by ``sizeInBytes``;
* ``dispatchables``: name -> ``{"type": "DML_OPERATOR_<NAME>", "desc": {...}}`` with the
  operator description's fields by their DirectML names;
* ``commands``: ``dispatch`` (bind resources to the operator's tensors and run it), ``print``
  and ``writeFile``.

The whole model is parsed and validated (every description compiled, every binding resolved
and its size checked) before anything runs; the commands then run in memory, and files are
written (and ``print``'s text shown) only after the last command succeeded, so a model that
fails writes nothing. A model that names zarr stores (a resource's ``sourcePath``, a
``writeFile`` target) runs lazily through Dask where its inputs are lazy (SPEC 6:
``_plan_laziness``, ``_zarrio``). Every problem is a :class:`ModelError` naming its JSON location, e.g.
``dispatchables.pool.desc.WindowSize: ...`` or ``commands[2].bindings.InputTensor: ...``.

Rules of this implementation where DxDispatch's own documentation is silent or differs:

* A binding reads the resource's bytes as the bound tensor's data type (no conversion).
  ``elementOffset`` / ``elementCount`` count elements of the resource's
  ``initialValuesDataType`` (``elementStride`` bytes each when given), as DxDispatch computes
  DirectML binding offsets; the bound range must hold the tensor's ``TotalTensorSizeInBytes``
  and start at a multiple of its element size (and of ``GuaranteedBaseOffsetAlignment``).
  An output may not overlap any other tensor bound in the same dispatch.
* Every tensor present in a description must be bound; optional tensors left out of the
  description (``OutputIndicesTensor``, zero points), or given as ``null``, must not be.
* ``print`` shows the initialised elements of a resource (not the padding that ``sizeInBytes``
  or 4-byte rounding added), in ``initialValuesDataType``. ``writeFile`` writes the same
  elements as a 1-D ``.npy`` (``.dat``/``.bin``: raw bytes); ``dimensions`` reshapes, and may
  name up to every element of the buffer.
* A number given as PADDING1's ``PaddingValue`` is a value of ``PaddingValueDataType`` (also
  for FLOAT16, where DxDispatch would store it as bits); the union form ``{"Float32": v}``
  must use the member of that type (``{"UInt16": bits}`` for FLOAT16, or ``{"Bytes": [...]}``).
* Array initialisers must hold values of their type: an integer type rejects fractions and
  out-of-range values rather than converting them; float types round to nearest.
* ``executionFlags`` and ``dmlCompileType`` of a dispatchable are checked and have no effect.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import io
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from .dtypes import DataType, FLOAT_TYPES, data_type, feature_level as _feature_level
from .dtypes import padding_mode
from . import tensor as tensor_module
from .errors import DmlError

if TYPE_CHECKING:
    from typing import TypeGuard

    from .tensor import TensorDesc

__all__ = ["ModelError", "Model", "load_model", "run_model"]


class ModelError(Exception):
    """A caller error in a DxDispatch model, at a JSON location (``path``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


# --------------------------------------------------------------------------------------------
# JSON paths and JSON value checks

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def _key(path: str, name: str) -> str:
    """``path.name`` (``path["odd name"]`` when ``name`` is not identifier-like)."""
    if _IDENT.match(name):
        return f"{path}.{name}" if path else name
    return f"{path}[{json.dumps(name)}]"


def _item(path: str, i: int) -> str:
    return f"{path}[{i}]"


class _Obj(dict[str, Any]):
    """A JSON object that remembers keys given twice (reported with their location)."""

    duplicates: tuple[Any, ...] = ()


def _object_pairs(pairs: Any) -> Any:
    obj = _Obj()
    dups = []
    for k, v in pairs:
        if k in obj:
            dups.append(k)
        obj[k] = v
    if dups:
        obj.duplicates = tuple(dups)
    return obj


def _reject_constant(name: Any) -> None:
    raise ValueError(f"{name} is not JSON; write \"nan\", \"inf\" or \"-inf\" as a string")


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _obj(value: Any, path: str, what: str = "an object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelError(path, f"expected {what}, got {_describe(value)}")
    dups = getattr(value, "duplicates", ())
    if dups:
        raise ModelError(_key(path, dups[0]), "key given twice in one object")
    return value


def _keys(obj: dict[str, Any], path: str, allowed: Any, required: Any = ()) -> None:
    """Unknown keys are errors (``$schema`` is ignored); required keys must be present."""
    for k in obj:
        if k == "$schema" or k in allowed:
            continue
        close = [a for a in allowed if a.lower() == k.lower()] or \
            difflib.get_close_matches(k, list(allowed), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else \
            f"; expected {', '.join(sorted(allowed))}" if allowed else ""
        raise ModelError(_key(path, k), f"unknown key {k!r}{hint}")
    for k in required:
        if k not in obj:
            raise ModelError(_key(path, k), "missing (required)")


def _list(value: Any, path: str, what: str = "an array") -> list[Any]:
    if not isinstance(value, list):
        raise ModelError(path, f"expected {what}, got {_describe(value)}")
    return value


def _str(value: Any, path: str, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise ModelError(path, f"expected {what}, got {_describe(value)}")
    return value


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _uint(value: Any, path: str, minimum: int = 0, maximum: int = 2**64 - 1) -> int:
    if not _is_int(value):
        raise ModelError(path, f"expected a non-negative integer, got {_describe(value)}")
    if value < minimum:
        raise ModelError(path, f"{value} must be at least {minimum}")
    if value > maximum:
        raise ModelError(path, f"{value} is larger than {maximum}")
    return value


def _uint_list(value: Any, path: str, minimum: int = 0, maximum: int = 2**32 - 1) -> list[Any]:
    items = _list(value, path, "an array of non-negative integers")
    return [_uint(v, _item(path, i), minimum, maximum) for i, v in enumerate(items)]


def _bool(value: Any, path: str) -> bool:
    if isinstance(value, bool):
        return value
    if _is_int(value) and value in (0, 1):
        return bool(value)
    raise ModelError(path, f"expected true, false, 0 or 1, got {_describe(value)}")


_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
                   "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}


def _number(value: Any, path: str, allow_special: Any = True) -> Any:
    """A JSON number (int or float, not bool), or "nan"/"inf"/"-inf" for a float."""
    if _is_int(value) or isinstance(value, float):
        return value
    if allow_special and isinstance(value, str) and value.strip().lower() in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[value.strip().lower()]
    special = ', or "nan", "inf", "-inf"' if allow_special else ""
    raise ModelError(path, f"expected a number{special}, got {_describe(value)}")


def _data_type_name(value: Any, path: str) -> DataType:
    text = _str(value, path, "a DML_TENSOR_DATA_TYPE name such as FLOAT32")
    try:
        return data_type(text)
    except DmlError:
        if text.strip().upper() in ("UNKNOWN", "DML_TENSOR_DATA_TYPE_UNKNOWN"):
            raise ModelError(path, "UNKNOWN (list initializers) is not supported; give one "
                                   "data type") from None
        if text.strip().upper().replace("DML_TENSOR_DATA_TYPE_", "") in ("UINT4", "INT4"):
            raise ModelError(path, f"{text} is not supported by dmlops") from None
        names = ", ".join(t.name for t in DataType)
        raise ModelError(path, f"{text!r} is not a data type; expected one of {names} "
                               f"(the DML_TENSOR_DATA_TYPE_ prefix is optional)") from None


# --------------------------------------------------------------------------------------------
# Values of a data type

def _to_type(values: list[Any], dt: DataType, path: str, paths: Any = None) -> np.ndarray:
    """Convert checked JSON numbers to ``dt``: floats round to nearest (overflowing to inf as
    an IEEE conversion does); integers must be integral and in range."""
    dtype = dt.dtype
    if dt in FLOAT_TYPES:
        try:
            wide = np.array([float(v) for v in values], dtype=np.float64)
        except OverflowError:
            bad = next(i for i, v in enumerate(values) if _is_int(v) and abs(v) > 2**1023)
            raise ModelError(paths(bad) if paths else path,
                             f"{values[bad]} is too large for {dt.name}") from None
        with np.errstate(over="ignore"):
            return wide.astype(dtype)
    info = np.iinfo(dtype)
    out = []
    for i, v in enumerate(values):
        where = paths(i) if paths else path
        if isinstance(v, float):
            if not math.isfinite(v) or not v.is_integer():
                raise ModelError(where, f"{_describe(v)} is not a value of {dt.name} "
                                        f"(an integer type)")
            v = int(v)
        if not info.min <= v <= info.max:
            raise ModelError(where, f"{v} is outside the range of {dt.name} "
                                    f"[{info.min}, {info.max}]")
        out.append(v)
    return np.array(out, dtype=dtype)


def _values(items: list[Any], dt: DataType, path: str) -> np.ndarray:
    allow_special = dt in FLOAT_TYPES
    checked = [_number(v, _item(path, i), allow_special) for i, v in enumerate(items)]
    return _to_type(checked, dt, path, paths=lambda i: _item(path, i))


def _format_value(v: Any, dt: DataType) -> str:
    if dt in FLOAT_TYPES:
        f = float(v)
        if math.isfinite(f) and f == int(f) and abs(f) < 1e16:
            return ("-0" if math.copysign(1.0, f) < 0 else "0") if f == 0 else str(int(f))
        return str(v)        # numpy's shortest repr of the type: 0.1, nan, inf, 1e+30
    return str(int(v))


# --------------------------------------------------------------------------------------------
# Resources

class Resource:
    """A named byte buffer; ``count`` elements of ``data_type`` were initialised. A lazy
    one (a zarr array, or a fill in a model that names zarr stores) holds a Dask array of
    its elements instead of bytes, and binds whole."""

    def __init__(self, name: str, dt: DataType, data: Any, count: int, lazy: Any = None,
                 size: Any = None) -> None:
        self.name = name
        self.data_type = dt
        self.data = data            # uint8, length a multiple of 4 (None where lazy)
        self.count = count
        self.lazy = lazy
        self.size = size            # bytes, where lazy

    @property
    def nbytes(self) -> int:
        return len(self.data) if self.data is not None else self.size

    @property
    def capacity(self) -> int:
        """Elements of ``data_type`` that the whole buffer holds."""
        return self.nbytes // self.data_type.itemsize


_RESOURCE_KEYS = ("initialValuesDataType", "initialValues", "sizeInBytes")


# The longest file name (one path component) and path this system takes, in bytes.
NAME_MAX, PATH_MAX = 255, 4096


def _file_name_ok(text: str, path: str) -> None:
    """A file path the file system can take: no NUL, encodable in the file system's
    encoding, no name longer than NAME_MAX bytes nor path longer than PATH_MAX (checked
    before anything runs, where the system would fail later or half-way)."""
    if "\0" in text:
        raise ModelError(path, f"{text!r} contains a NUL character")
    try:
        raw = os.fsencode(text)
    except UnicodeError:
        raise ModelError(path, f"{text!r} cannot be a file name on this system (not "
                               f"encodable as {sys.getfilesystemencoding()})") from None
    if len(raw) > PATH_MAX:
        raise ModelError(path, f"a path of {len(raw)} bytes, longer than {PATH_MAX}")
    longest = max(raw.split(os.fsencode(os.sep)), key=len)
    if len(longest) > NAME_MAX:
        raise ModelError(path, f"a file name of {len(longest)} bytes "
                               f"({os.fsdecode(longest)[:40]!r}...), longer than {NAME_MAX}")


def _resolve_source(text: str, base_dir: Path, path: str) -> Path:
    _file_name_ok(text, path)
    p = Path(text).expanduser()
    bases = [None] if p.is_absolute() else [base_dir, Path.cwd()]
    for base in bases:
        c = p if base is None else base / p
        try:
            if c.is_file():
                return c
        except OSError as e:        # (a folder on the way that cannot be read)
            raise ModelError(path, f"cannot look for {str(c)!r}: {e.strerror or e}") from None
    where = "" if bases == [None] else " (looked in the model's folder " + \
        f"{os.path.abspath(base_dir)} and the working directory {os.getcwd()})"
    raise ModelError(path, f"file {text!r} not found{where}")


def _check_npy_size(file: Path, spath: str) -> None:
    """A .npy file's header against the file's size, before anything is allocated for it: a
    header may claim any number of elements (a 100-byte file claiming 2^60)."""
    with open(file, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            return      # (np.load says what it makes of other versions)
        start = f.tell()
    if dtype.hasobject:
        return          # (refused by np.load without pickles)
    need = math.prod(shape) * dtype.itemsize
    have = os.path.getsize(file) - start
    if need > have:
        raise ModelError(spath, f"{str(file)!r}: its header claims {math.prod(shape)} values "
                                f"of {dtype} (shape {tuple(shape)}, {need} bytes), but the file "
                                f"holds {have} bytes of data")


def _zarr_source(text: str, dt_value: Any, base_dir: Path, path: str,
                 options: dict[str, Any]) -> Any:
    """A resource's zarr array (``store.zarr`` or ``store.zarr/path/in/group``, or a URL
    fsspec reads with ``options``): its data type and its elements as a Dask array of the
    store's chunks."""
    from . import _zarrio
    spath = _key(path, "sourcePath")
    store, component = _zarrio.split(text)
    if _zarrio.is_url(store):
        try:
            arr = _zarrio.open_source(store, component, options)
        except _zarrio.ZarrError as e:
            raise ModelError(spath, str(e)) from None
        return _source_type(arr, text, dt_value, path), arr
    p = store.expanduser()
    found = [c.absolute() for c in ([p] if p.is_absolute() else [base_dir / p, Path.cwd() / p])
             if c.is_dir()]
    if not found:
        raise ModelError(spath, f"zarr store {str(store)!r} not found (looked in the model's "
                                f"folder {os.path.abspath(base_dir)} and the working "
                                f"directory {os.getcwd()})")
    try:
        arr = _zarrio.open_source(found[0], component)
    except _zarrio.ZarrError as e:
        raise ModelError(spath, str(e)) from None
    return _source_type(arr, text, dt_value, path), arr


def _source_type(arr: Any, name: str, dt_value: Any, path: str) -> DataType:
    """A source's data type, which ``initialValuesDataType`` (if given) must agree with;
    an empty source is an error."""
    spath = _key(path, "sourcePath")
    try:
        dt = data_type(arr.dtype)
    except DmlError:
        raise ModelError(spath, f"{name!r} holds {arr.dtype} values, which is not a DirectML "
                                f"data type") from None
    if dt_value is not None and dt_value != dt:
        raise ModelError(_key(path.rsplit(".", 1)[0], "initialValuesDataType"),
                         f"{dt_value.name} differs from the data type of {name!r} "
                         f"({dt.name}); leave it out or make them agree")
    if arr.size == 0:
        raise ModelError(spath, f"{name!r} holds no values")
    return dt


def _is_zarr(text: Any) -> bool:
    from . import _zarrio
    return isinstance(text, str) and _zarrio.split(text) is not None


def _load_source(obj: dict[str, Any], dt_value: Any, base_dir: Path, path: str,
                 options: dict[str, Any]) -> Any:
    spath = _key(path, "sourcePath")
    text = _str(obj["sourcePath"], spath, "a file path")
    if _is_zarr(text):
        _file_name_ok(text, spath)
        return _zarr_source(text, dt_value, base_dir, path, options)
    file = _resolve_source(text, base_dir, spath)
    ext = file.suffix.lower()
    if ext == ".npy":
        try:
            _check_npy_size(file, spath)
            arr = np.load(file, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise ModelError(spath, f"cannot read {str(file)!r} as a .npy file: {e}") from None
        dt = _source_type(arr, str(file), dt_value, path)
        return dt, np.ascontiguousarray(arr.astype(dt.dtype, copy=False)).reshape(-1)
    if ext in (".dat", ".bin"):
        if dt_value is None:
            raise ModelError(_key(path.rsplit(".", 1)[0], "initialValuesDataType"),
                             f"missing: a raw {ext} file needs a data type")
        raw = file.read_bytes()
        if not raw or len(raw) % dt_value.itemsize:
            raise ModelError(spath, f"{str(file)!r} has {len(raw)} bytes, not a positive "
                                    f"multiple of {dt_value.itemsize} ({dt_value.name})")
        return dt_value, np.frombuffer(raw, dtype=dt_value.dtype).copy()
    raise ModelError(spath, f"{str(file)!r}: unsupported file type {ext or '(none)'}; dmlops "
                            f"reads .npy, .dat and .bin files and zarr arrays")


def _parse_resource(name: str, value: Any, base_dir: Path, path: str, lazy: Any = False,
                    options: dict[str, Any] | None = None) -> Resource:
    """``lazy``: the model names zarr stores, so fills (``{valueCount, value}``) stay lazy
    (an output declared as zeros is never made in memory); ``options``: fsspec's, for
    URLs."""
    obj = _obj(value, path)
    _keys(obj, path, _RESOURCE_KEYS, required=("initialValues",))
    ipath = _key(path, "initialValues")
    dpath = _key(path, "initialValuesDataType")
    dt = _data_type_name(obj["initialValuesDataType"], dpath) \
        if "initialValuesDataType" in obj else None
    init = obj["initialValues"]
    if isinstance(init, dict) and "sourcePath" in init:
        _obj(init, ipath)
        _keys(init, ipath, ("sourcePath",))
        dt, values = _load_source(init, dt, base_dir, ipath, options or {})
        if hasattr(values, "dask"):
            if "sizeInBytes" in obj:
                raise ModelError(_key(path, "sizeInBytes"), "a zarr resource has its array's "
                                                            "size; leave sizeInBytes out")
            return Resource(name, dt, None, values.size, lazy=values,
                            size=values.size * dt.itemsize)
    else:
        if dt is None:
            raise ModelError(dpath, "missing (required unless initialValues is a .npy file)")
        if isinstance(init, list):
            if not init:
                raise ModelError(ipath, "an array initializer needs at least one value")
            values = _values(init, dt, ipath)
        elif isinstance(init, dict):
            _obj(init, ipath)
            if "valueStart" in init or "valueDelta" in init:
                _keys(init, ipath, ("valueCount", "valueStart", "valueDelta"),
                      required=("valueCount", "valueStart", "valueDelta"))
                count = _uint(init["valueCount"], _key(ipath, "valueCount"), 1)
                values = _sequence(init, count, dt, ipath)
            else:
                _keys(init, ipath, ("valueCount", "value"), required=("valueCount", "value"))
                count = _uint(init["valueCount"], _key(ipath, "valueCount"), 1)
                one = _values([init["value"]], dt, ipath)
                if lazy:
                    return _lazy_fill(name, obj, dt, count, one[0], path)
                values = _full(count, one[0], ipath)
        else:
            raise ModelError(ipath, f"expected an array of values or an object "
                                    f"({{valueCount, value}}, {{valueCount, valueStart, "
                                    f"valueDelta}} or {{sourcePath}}), got {_describe(init)}")
    data = _alloc(_buffer_bytes(obj, values.size, dt, path), path)
    data[:values.size * dt.itemsize] = values.view(np.uint8)
    return Resource(name, dt, data, values.size)


def _buffer_bytes(obj: dict[str, Any], count: int, dt: DataType, path: str) -> int:
    """A resource's bytes: its ``count`` initial values, or ``sizeInBytes`` where given (no
    fewer), rounded up to 4."""
    nbytes = size = count * dt.itemsize
    if "sizeInBytes" in obj:
        spath = _key(path, "sizeInBytes")
        size = _uint(obj["sizeInBytes"], spath)
        if size < nbytes:
            raise ModelError(spath, f"{size} is smaller than the {nbytes} bytes of "
                                    f"initialValues ({count} x {dt.name})")
    return (size + 3) // 4 * 4


def _lazy_fill(name: Any, obj: Any, dt: DataType, count: int, value: Any, path: str) -> Resource:
    import dask.array as da
    return Resource(name, dt, None, count, lazy=da.full((count,), value, dtype=dt.dtype),
                    size=_buffer_bytes(obj, count, dt, path))


def _affordable(nbytes: int, path: str, what: str) -> None:
    """A model's buffer within the machine's memory, else a ModelError naming the size: the
    system would promise it and kill the process as it fills."""
    too_big = tensor_module.beyond_memory(nbytes)
    if too_big:
        raise ModelError(path, f"{what} needs {too_big}")


def _alloc(nbytes: int, path: str) -> np.ndarray:
    _affordable(nbytes, path, "the resource")
    try:
        return np.zeros(nbytes, dtype=np.uint8)
    except (MemoryError, ValueError):
        raise ModelError(path, f"cannot allocate {nbytes} bytes") from None


def _full(count: int, value: Any, path: str) -> np.ndarray:
    _affordable(count * value.dtype.itemsize, _key(path, "valueCount"), f"{count} values")
    try:
        return np.full(count, value, dtype=value.dtype)
    except (MemoryError, ValueError):
        raise ModelError(_key(path, "valueCount"), f"cannot allocate {count} values") from None


def _sequence(init: dict[str, Any], count: int, dt: DataType, path: str) -> np.ndarray:
    allow_special = dt in FLOAT_TYPES
    # (the sequence is made in 8-byte lanes, float64 or int64, then narrowed)
    _affordable(count * 8, _key(path, "valueCount"), f"{count} values")
    start = _number(init["valueStart"], _key(path, "valueStart"), allow_special)
    delta = _number(init["valueDelta"], _key(path, "valueDelta"), allow_special)
    if dt in FLOAT_TYPES:
        try:
            steps = np.arange(count, dtype=np.float64)
        except (MemoryError, ValueError):
            raise ModelError(_key(path, "valueCount"),
                             f"cannot allocate {count} values") from None
        with np.errstate(over="ignore", invalid="ignore"):
            return (float(start) + float(delta) * steps).astype(dt.dtype)
    _to_type([start], dt, _key(path, "valueStart"))          # integral and in range
    if isinstance(delta, float) and not delta.is_integer():
        raise ModelError(_key(path, "valueDelta"), f"{delta!r} is not an integer; {dt.name} "
                                                   f"is an integer type")
    start, delta = int(start), int(delta)
    last = start + delta * (count - 1)
    info = np.iinfo(dt.dtype)
    if not info.min <= last <= info.max:
        raise ModelError(_key(path, "valueCount"), f"the sequence reaches {last}, outside the "
                                                   f"range of {dt.name} [{info.min}, "
                                                   f"{info.max}]")
    try:
        if -2**63 <= min(start, last) and max(start, last) < 2**63:
            return (start + delta * np.arange(count, dtype=np.int64)).astype(dt.dtype)
        return np.array([start + delta * i for i in range(count)], dtype=dt.dtype)
    except (MemoryError, ValueError):
        raise ModelError(_key(path, "valueCount"), f"cannot allocate {count} values") from None


# --------------------------------------------------------------------------------------------
# Dispatchables: JSON descriptions -> description objects -> compiled operators

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
    from . import descs
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
    from . import TensorDesc
    obj = _obj(value, path, "a tensor description {DataType, Sizes, ...}")
    if "Desc" in obj:                 # DxDispatch's long form {Type, Desc: {...}}
        _keys(obj, path, ("Type", "Desc"), required=("Desc",))
        _tensor_type(obj, path)
        path = _key(path, "Desc")
        obj = _obj(obj["Desc"], path)
    _keys(obj, path, _TENSOR_KEYS[:1] + _TENSOR_KEYS[2:], required=("DataType", "Sizes"))
    _tensor_type(obj, path)
    dt = _data_type_name(obj["DataType"], _key(path, "DataType"))
    sizes = _uint_list(obj["Sizes"], _key(path, "Sizes"))
    strides = None
    if obj.get("Strides") is not None:
        strides = _uint_list(obj["Strides"], _key(path, "Strides"))
    kwargs = {}
    if "Flags" in obj:
        kwargs["flags"] = _flags(obj["Flags"], _key(path, "Flags"))
    if "DimensionCount" in obj:
        kwargs["dimension_count"] = _uint(obj["DimensionCount"], _key(path, "DimensionCount"))
    if "TotalTensorSizeInBytes" in obj:
        kwargs["total_tensor_size_in_bytes"] = _uint(obj["TotalTensorSizeInBytes"],
                                                     _key(path, "TotalTensorSizeInBytes"))
    if "GuaranteedBaseOffsetAlignment" in obj:
        kwargs["guaranteed_base_offset_alignment"] = _uint(
            obj["GuaranteedBaseOffsetAlignment"], _key(path, "GuaranteedBaseOffsetAlignment"),
            maximum=2**32 - 1)
    return TensorDesc(dt, tuple(sizes), None if strides is None else tuple(strides), **kwargs)


def _tensor_type(obj: dict[str, Any], path: str) -> None:
    if "Type" in obj:
        t = _str(obj["Type"], _key(path, "Type"))
        if t.upper() not in ("BUFFER", "DML_TENSOR_TYPE_BUFFER"):
            raise ModelError(_key(path, "Type"), f"{t!r}: only DML_TENSOR_TYPE_BUFFER tensors "
                                                 f"exist")


def _flag_names(value: Any, path: str, kind: str, known: Any) -> Iterator[Any]:
    """A DirectML flag name or a list of them (prefix optional, any case), each checked
    against ``known``; yields the bare names."""
    items = value if isinstance(value, list) else [value]
    for i, v in enumerate(items):
        where = _item(path, i) if isinstance(value, list) else path
        text = _str(v, where, f"DML_{kind}_FLAG names")
        name = text.strip().upper()
        for prefix in (f"DML_{kind}_FLAGS_", f"DML_{kind}_FLAG_"):
            if name.startswith(prefix):
                name = name[len(prefix):]
        if name not in known:
            raise ModelError(where, f"{text!r} is not a DML_{kind}_FLAG; expected one of "
                                    f"{', '.join(sorted(known))}")
        yield name


def _flags(value: Any, path: str) -> int:
    if _is_int(value):
        return _uint(value, path, maximum=2**32 - 1)
    out = 0
    for name in _flag_names(value, path, "TENSOR", _FLAG_NAMES):
        out |= _FLAG_NAMES[name]
    return out


def _padding_value(value: Any, cls: Any, kwargs: Any, path: str, typed: bool) -> Any:
    """PADDING's FLOAT field, or PADDING1's DML_SCALAR_UNION read as PaddingValueDataType."""
    if not typed:
        return float(_number(value, path))
    dt = kwargs.get("padding_value_data_type")
    if not isinstance(dt, DataType):
        raise ModelError(path, "needs a valid PaddingValueDataType")
    if isinstance(value, dict):
        obj = _obj(value, path)
        if len(obj) != 1:
            raise ModelError(path, f"a DML_SCALAR_UNION object has exactly one member, such "
                                   f"as {{\"{_MEMBER_OF[dt]}\": value}}")
        member, v = next(iter(obj.items()))
        mpath = _key(path, member)
        if member == "Bytes":
            raw = _uint_list(v, mpath, 0, 255)
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
        stored = _to_type([_number(v, mpath, mdt in FLOAT_TYPES)], mdt, mpath)
        return stored.view(dt.dtype)[0]
    # a number is a value of the type, not bits; the core rounds it (float types) or checks
    # that it is one of the type (integer types)
    return _number(value, path, dt in FLOAT_TYPES)


def _pooled_size(value: Any, path: str) -> Any:
    obj = _obj(value, path, "an object {\"Width\": w, \"Height\": h}")
    _keys(obj, path, ("Width", "Height"), required=("Width", "Height"))
    w = _uint(obj["Width"], _key(path, "Width"), maximum=2**32 - 1)
    h = _uint(obj["Height"], _key(path, "Height"), maximum=2**32 - 1)
    return (h, w)


def _field_value(snake: str, value: Any, cls: Any, kwargs: Any, path: str) -> Any:
    if _is_tensor_field(snake):
        if snake.endswith("_tensors"):
            items = _list(value, path, "an array of tensor descriptions")
            return tuple(_tensor(v, _item(path, i)) for i, v in enumerate(items))
        return _tensor(value, path)
    if snake in _UINT_ARRAYS:
        return tuple(_uint_list(value, path))
    if snake in _UINTS:
        return _uint(value, path, maximum=2**32 - 1)
    if snake in _BOOLS:
        return _bool(value, path)
    if snake in _FLOATS:
        return float(_number(value, path))
    if snake == "padding_mode":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ModelError(path, f"expected a DML_PADDING_MODE name, got {_describe(value)}")
        try:
            return padding_mode(value)
        except DmlError:
            raise ModelError(path, f"{_describe(value)} is not a DML_PADDING_MODE; expected "
                                   f"CONSTANT, EDGE, REFLECTION, SYMMETRIC or WRAP (the "
                                   f"DML_PADDING_MODE_ prefix is optional)") from None
    if snake.endswith("data_type"):
        return _data_type_name(value, path)
    if snake == "padding_value":
        typed = any(f.name == "padding_value_data_type" for f in _fields(cls))
        return _padding_value(value, cls, kwargs, path, typed)
    if snake == "pooled_size":
        return _pooled_size(value, path)
    return value


def _operator_class(value: Any, path: str) -> Any:
    text = _str(value, path, "an operator type such as DML_OPERATOR_MAX_POOLING2")
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


def _parse_dispatchable(name: str, value: Any, path: str, level: Any, backend: Any) -> Dispatchable:
    from . import compile_operator
    obj = _obj(value, path)
    _keys(obj, path, _DISPATCHABLE_KEYS, required=("type",))
    op_name, cls = _operator_class(obj["type"], _key(path, "type"))
    if "desc" in obj and "Desc" in obj:
        raise ModelError(_key(path, "Desc"), "give either desc or Desc, not both")
    dkey = "desc" if "desc" in obj else "Desc"
    if dkey not in obj:
        raise ModelError(_key(path, "desc"), "missing (required)")
    if "executionFlags" in obj:
        _execution_flags(obj["executionFlags"], _key(path, "executionFlags"))
    if "dmlCompileType" in obj:
        t = _str(obj["dmlCompileType"], _key(path, "dmlCompileType"))
        if t not in _COMPILE_TYPES:
            raise ModelError(_key(path, "dmlCompileType"),
                             f"{t!r}: expected DmlCompileOp or DmlCompileGraph")
    dpath = _key(path, dkey)
    desc_json = _obj(obj[dkey], dpath)
    fields = _fields(cls)
    camel = {f.name: _camel(f.name) for f in fields}
    by_json = {c: s for s, c in camel.items()}
    _keys(desc_json, dpath, list(by_json))
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
        kwargs[f.name] = _field_value(f.name, desc_json[key], cls, kwargs, _key(dpath, key))
    for f in fields:
        if f.name in kwargs or f.name in _OPTIONAL_FIELDS or f.name in optional or \
                f.name in getattr(cls, "_json_optional", ()):
            continue
        if not _is_tensor_field(f.name) and f.name not in _KNOWN_FIELDS and \
                (f.default is not dataclasses.MISSING
                 or f.default_factory is not dataclasses.MISSING):
            continue            # a field this runner does not know, with a default
        raise ModelError(_key(dpath, camel[f.name]), f"missing (required by "
                                                     f"DML_OPERATOR_{op_name})")
    mapper = _ErrorMapper(camel)
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
        raise mapper.model_error(e, dpath, level=level) from None
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


class _ErrorMapper:
    """Re-spell a core error (snake_case fields) at its JSON location (DirectML names)."""

    _PREFIX = re.compile(r"^(?:DML_OPERATOR_)?[A-Z][A-Z0-9_]*: ")

    def __init__(self, camel: dict[str, Any]) -> None:
        self.camel = camel
        names = sorted(set(camel) | {"output_sizes"}, key=len, reverse=True)
        sub = "|".join(sorted(_TENSOR_SUBFIELDS, key=len, reverse=True))
        self.pattern = re.compile(
            r"(?<![A-Za-z0-9_.])(" + "|".join(map(re.escape, names)) + r")"
            r"(?:\.(" + sub + r"))?((?:\[\d+\])?)(?![A-Za-z0-9_])")

    def _spell(self, m: Any) -> str:
        field, sub, index = m.group(1), m.group(2), m.group(3)
        if field == "output_sizes":
            field, sub = "output_tensor", "sizes"
        text: str = self.camel.get(field, _camel(field))
        if sub:
            text += "." + _TENSOR_SUBFIELDS[sub]
        if index and field in _JSON_MEMBERS:    # e.g. PooledSize[0] is PooledSize.Height
            return f"{text}.{_JSON_MEMBERS[field][int(index[1:-1])]}"
        return f"{text}{index}"

    def translate(self, message: str) -> tuple[str | None, str]:
        """``(json_field_path or None, message in DirectML spelling)``."""
        message = self._PREFIX.sub("", message, count=1)
        first = self.pattern.search(message)
        where = self._spell(first) if first else None
        if first and not first.group(2) and not first.group(3) and \
                _is_tensor_field(first.group(1)):
            rest = message[first.end():]
            if rest.startswith(" has data type"):
                where = f"{where}.DataType"
            elif re.match(r" is \d+-D", rest):
                where = f"{where}.Sizes"
        return where, self.pattern.sub(self._spell, message)

    def model_error(self, e: DmlError, base: str, level: Any = None, tensor_base: str | None = None
                    ) -> Any:
        where, text = self.translate(str(e))
        if where is None:
            path = base.rsplit(".", 1)[0] if base.endswith((".desc", ".Desc")) else base
            if level is not None and "feature level" in text:
                path = _key(path, "type")
        elif tensor_base is not None:
            # an error found while running: a tensor is located at its binding
            tensors = {self.camel[s] for s in self.camel if _is_tensor_field(s)}
            head = where.split(".")[0].split("[")[0]
            path = f"{tensor_base}.{head}" if head in tensors else base
        else:
            path = f"{base}.{where}"
        return ModelError(path, text)


# --------------------------------------------------------------------------------------------
# Commands

class _Binding:
    def __init__(self, field: str, resource: Resource, offset: int, nbytes: int, path: str) -> None:
        self.field = field
        self.resource = resource
        self.offset = offset        # bytes
        self.nbytes = nbytes        # bytes from offset that the binding may touch
        self.path = path


class _Dispatch:
    def __init__(self, index: Any, dispatchable: Dispatchable, bindings: dict[str, Any],
                 path: str) -> None:
        self.index = index
        self.dispatchable = dispatchable
        self.bindings = bindings    # snake field -> _Binding
        self.path = path
        self.lazy = False           # an input is lazy: so are the outputs (_plan_laziness)

    def run(self, state: Any, shapes: Any, session: Any) -> None:
        d = self.dispatchable
        mapper = _ErrorMapper(d.camel)
        if self.lazy:       # (NumPy inputs beside the lazy ones bind as in memory)
            arrays = {f: _lazy_view(state[b.resource.name], b, d.tensors[f])
                      for f, b in self.bindings.items() if f not in d.outputs}
        else:
            for b in self.bindings.values():        # (lazy fills this dispatch writes into)
                state[b.resource.name] = _in_memory(state[b.resource.name], b.resource,
                                                    session, b.path)
            arrays = {field: _view(state[b.resource.name], b, d.tensors[field])
                      for field, b in self.bindings.items()}
        try:
            results = d.op.execute(**arrays)    # in memory: written into the bound bytes
        except DmlError as e:
            raise mapper.model_error(e, self.path, tensor_base=_key(self.path, "bindings")) \
                from None
        for field in d.outputs:
            b = self.bindings.get(field)
            if b is None:
                continue
            if self.lazy:
                state[b.resource.name] = results[field]
            if _whole(b, d.tensors[field]):
                shapes[b.resource.name] = tuple(d.tensors[field].sizes)


def _whole(b: "_Binding", t: Any) -> bool:
    """Whether binding ``b`` of tensor ``t`` is its resource's initialised elements, whole
    and in order (as a lazy resource binds)."""
    return (b.offset == 0 and t.strides is None and
            math.prod(t.sizes) == b.resource.count)


def _lazy_view(value: Any, b: "_Binding", t: Any) -> Any:
    """A resource's elements as tensor ``t``: a lazy one's reshaped to its sizes, a byte
    buffer's viewed through binding ``b`` (``_view``)."""
    if isinstance(value, np.ndarray):
        return _view(value, b, t)
    return value if tuple(value.shape) == tuple(t.sizes) else value.reshape(t.sizes)


def _in_memory(value: Any, r: Resource, session: Any, path: str) -> np.ndarray:
    """A resource's bytes, made from its lazy elements where it holds them (an in-memory
    dispatch writes into it)."""
    if isinstance(value, np.ndarray):
        return value
    _affordable(r.nbytes, path, f"resource {r.name!r}, made in memory for this dispatch,")
    data = np.zeros(r.nbytes, np.uint8)
    data[:r.count * r.data_type.itemsize] = \
        np.ascontiguousarray(session.compute(value)).reshape(-1).view(np.uint8)
    return data


def _elements(value: Any, r: Resource, session: Any) -> np.ndarray:
    """A resource's initialised elements, 1-D, in memory."""
    if isinstance(value, np.ndarray):
        return value[:r.count * r.data_type.itemsize].view(r.data_type.dtype)
    values: np.ndarray = session.compute(value).reshape(-1)
    return values


class _Print:
    def __init__(self, resource: Resource, verbose: bool, path: str = "") -> None:
        self.resource = resource
        self.verbose = verbose
        self.path = path

    def run(self, state: Any, out: Any, session: Any) -> None:
        r = self.resource
        values = _elements(state[r.name], r, session)
        if self.verbose:
            width = len(str(max(r.count - 1, 0)))
            raw = values.view(np.dtype(f"u{r.data_type.itemsize}"))
            lines = [f"[{i:>{width}}] {_format_value(v, r.data_type)} "
                     f"(0x{int(b):0{2 * r.data_type.itemsize}X})"
                     for i, (v, b) in enumerate(zip(values, raw))]
            out.write(f"{r.name}:\n" + "\n".join(lines) + "\n")
        else:
            text = ", ".join(_format_value(v, r.data_type) for v in values)
            out.write(f"{r.name}: {text}\n")


class _WriteFile:
    """``target``: a Path, or the URL of a zarr array on an object store."""

    def __init__(self, resource: Resource, target: Path | str, dims: Any, path: str,
                 zarr: Any = None) -> None:
        self.resource = resource
        self.target = target
        self.dims = dims
        self.path = path
        self.zarr = zarr            # (store, component) of a zarr target

    def run(self, state: Any, shapes: Any, pending: dict[Any, Any], session: Any) -> None:
        r = self.resource
        # the command's dimensions, else (zarr) the sizes the resource was last written with
        shape = self.dims or (shapes.get(r.name) if self.zarr else None) or (r.count,)
        value = state[r.name]
        if isinstance(value, np.ndarray):
            count = int(np.prod(shape, dtype=object))
            value = value[:count * r.data_type.itemsize].view(r.data_type.dtype).copy()
        pending[self.target] = (_shaped(value, shape), self.path, self.zarr)


_COMMAND_KEYS = {
    "dispatch": (("type", "dispatchable", "bindings"), ("dispatchable", "bindings")),
    "print": (("type", "resource", "verbose"), ("resource",)),
    "writeFile": (("type", "targetPath", "resource", "dimensions"), ("targetPath", "resource")),
}
_BINDING_KEYS = ("name", "elementOffset", "elementCount", "elementStride")


def _resource_ref(value: Any, resources: dict[str, Resource], path: str) -> Resource:
    name = _str(value, path, "a resource name")
    if name not in resources:
        known = ", ".join(repr(n) for n in resources) or "none"
        close = difflib.get_close_matches(name, list(resources), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ModelError(path, f"no resource named {name!r}{hint} (defined: {known})")
    return resources[name]


def _parse_binding(value: Any, field: str, t: Any, resources: Any, path: str) -> _Binding:
    if isinstance(value, list):
        if len(value) != 1:
            raise ModelError(path, f"this bind point takes 1 resource, {len(value)} were "
                                   f"given")
        value, path = value[0], _item(path, 0)
    if isinstance(value, str):
        res = _resource_ref(value, resources, path)
        offset, limit = 0, res.nbytes
    else:
        obj = _obj(value, path, "a resource name or {\"name\": ..., \"elementOffset\": ...}")
        _keys(obj, path, _BINDING_KEYS, required=("name",))
        res = _resource_ref(obj["name"], resources, _key(path, "name"))
        esize = res.data_type.itemsize
        if "elementStride" in obj:
            esize = _uint(obj["elementStride"], _key(path, "elementStride"), 1)
        first = _uint(obj.get("elementOffset", 0), _key(path, "elementOffset"))
        offset = first * esize
        if offset > res.nbytes:
            raise ModelError(_key(path, "elementOffset"),
                             f"{first} elements of {esize} bytes start past the end of "
                             f"resource {res.name!r} ({res.nbytes} bytes)")
        limit = res.nbytes
        if "elementCount" in obj:
            count = _uint(obj["elementCount"], _key(path, "elementCount"), 1)
            if offset + count * esize > res.nbytes:
                raise ModelError(_key(path, "elementCount"),
                                 f"{count} elements of {esize} bytes from byte {offset} run "
                                 f"past the end of resource {res.name!r} ({res.nbytes} "
                                 f"bytes)")
            limit = offset + count * esize
    itemsize = t.dtype.itemsize
    align = max(itemsize, t.guaranteed_base_offset_alignment or 0)
    if offset % align:
        why = f"GuaranteedBaseOffsetAlignment {align}" if align != itemsize else \
            f"the {itemsize}-byte elements of {t.data_type.name}"
        raise ModelError(path, f"starts at byte {offset} of resource {res.name!r}, which is "
                               f"not a multiple of {align} ({why})")
    need = t.total_tensor_size_in_bytes if t.total_tensor_size_in_bytes is not None \
        else t.minimum_size_in_bytes
    have = limit - offset
    if have < need:
        strides = "" if t.strides is None else f", strides {list(t.strides)}"
        raise ModelError(path, f"resource {res.name!r} has {have} bytes from byte {offset}, "
                               f"but the tensor ({t.data_type.name}, sizes {list(t.sizes)}"
                               f"{strides}) needs {need} (TotalTensorSizeInBytes)")
    return _Binding(field, res, offset, have, path)


def _parse_dispatch(i: Any, obj: Any, path: Any, resources: Any, dispatchables: Any) -> _Dispatch:
    dname = _str(obj["dispatchable"], _key(path, "dispatchable"), "a dispatchable name")
    if dname not in dispatchables:
        known = ", ".join(repr(n) for n in dispatchables) or "none"
        raise ModelError(_key(path, "dispatchable"), f"no dispatchable named {dname!r} "
                                                     f"(defined: {known})")
    d = dispatchables[dname]
    bpath = _key(path, "bindings")
    bobj = _obj(obj["bindings"], bpath)
    by_json = {d.camel[s]: s for s in d.bind_points}
    bindings = {}
    for key, value in bobj.items():
        kpath = _key(bpath, key)
        if key == "$schema":
            continue
        if key not in by_json:
            close = [k for k in by_json if k.lower() == key.lower()] or \
                difflib.get_close_matches(key, list(by_json), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ModelError(kpath, f"{d.operator_type} has no bind point {key!r}{hint} "
                                    f"(bind points: {', '.join(by_json)})")
        field = by_json[key]
        if field not in d.tensors:
            raise ModelError(kpath, f"dispatchable {dname!r} has no {key}: its description "
                                    f"leaves this optional tensor out")
        bindings[field] = _parse_binding(value, field, d.tensors[field], resources, kpath)
    for field in d.tensors:
        if field not in bindings:
            raise ModelError(_key(bpath, d.camel[field]),
                             f"nothing bound for {d.camel[field]} (every tensor of the "
                             f"description must be bound)")
    _check_overlaps(d, bindings)
    return _Dispatch(i, d, bindings, path)


def _view(buf: np.ndarray, b: "_Binding", t: TensorDesc) -> np.ndarray:
    """The elements of tensor ``t`` in ``buf`` (a resource's bytes) as bound by ``b``: an
    array of ``t.sizes`` when ``t`` has no strides, else the flat buffer its strides index."""
    usable = b.nbytes // t.dtype.itemsize * t.dtype.itemsize
    flat: np.ndarray = buf[b.offset:b.offset + usable].view(t.dtype)
    if t.strides is None:
        return flat[:int(np.prod(t.sizes, dtype=np.int64))].reshape(t.sizes)
    return flat


def _strided(flat: np.ndarray, t: Any) -> np.ndarray:
    if t.strides is None:
        return flat
    return np.lib.stride_tricks.as_strided(
        flat, shape=t.sizes, strides=tuple(s * flat.itemsize for s in t.strides),
        writeable=False)


def _check_overlaps(d: Dispatchable, bindings: dict[str, Any]) -> None:
    """An output may share no element with another tensor of the dispatch (DirectML's
    operators do not run in place)."""
    items = [b for b in bindings.values() if b.resource.data is not None]
    for a in items:
        if a.field not in d.outputs:
            continue
        va = _strided(_view(a.resource.data, a, d.tensors[a.field]), d.tensors[a.field])
        for b in items:
            if b is a or b.resource is not a.resource:
                continue
            vb = _strided(_view(b.resource.data, b, d.tensors[b.field]), d.tensors[b.field])
            try:
                # (NumPy's stubs allow max_work -1 or 0 alone; any bound works)
                overlap = np.shares_memory(va, vb, max_work=1_000_000)  # type: ignore[arg-type]
            except np.exceptions.TooHardError:
                overlap = True
            if overlap:
                raise ModelError(a.path, f"output {d.camel[a.field]} shares elements of "
                                         f"resource {a.resource.name!r} with "
                                         f"{d.camel[b.field]}; DirectML operators do not run "
                                         f"in place (bind another resource or a disjoint "
                                         f"range)")


def _parse_command(i: Any, value: Any, resources: Any, dispatchables: Any, path: Any) -> Any:
    obj = _obj(value, path)
    if "type" not in obj:
        raise ModelError(_key(path, "type"), "missing (required): dispatch, print or "
                                             "writeFile")
    kind = _str(obj["type"], _key(path, "type"))
    if kind not in _COMMAND_KEYS:
        close = [k for k in _COMMAND_KEYS if k.lower() == kind.lower()]
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ModelError(_key(path, "type"), f"unknown command type {kind!r}{hint}; expected "
                                             f"dispatch, print or writeFile")
    allowed, required = _COMMAND_KEYS[kind]
    _keys(obj, path, allowed, required)
    if kind == "dispatch":
        return _parse_dispatch(i, obj, path, resources, dispatchables)
    res = _resource_ref(obj["resource"], resources, _key(path, "resource"))
    if kind == "print":
        verbose = _bool(obj.get("verbose", False), _key(path, "verbose"))
        return _Print(res, verbose, path)
    tpath = _key(path, "targetPath")
    text = _str(obj["targetPath"], tpath, "a file path")
    if not text.strip():
        raise ModelError(tpath, "an empty path")
    _file_name_ok(text, tpath)
    if "://" in text and not text.lower().startswith("file://"):
        from . import _zarrio
        zarr = _zarrio.split(text)
        if zarr is None:
            raise ModelError(tpath, f"{text!r}: a URL names a zarr array (a path ending in "
                                    f".zarr, or inside one); .npy, .dat and .bin files are "
                                    f"written to local paths")
        dims = _write_dims(obj, res, path)
        return _WriteFile(res, text, dims, path, zarr)
    if text.lower().startswith("file://"):
        text = text[len("file://"):]
    target = Path(text).expanduser()
    if not target.is_absolute():
        target = Path.cwd() / target
    if ".." in target.parts:
        # (the folder that ".." names: making "sub" for "sub/../x.npy" would leave it behind,
        # and realpath reads ".." after a symbolic link as the system does)
        target = Path(os.path.realpath(target))
    zarr = None
    if _is_zarr(str(target)):
        from . import _zarrio
        zarr = _zarrio.split(str(target))
    elif target.suffix.lower() not in (".npy", ".dat", ".bin"):
        raise ModelError(tpath, f"{text!r}: dmlops writes .npy, .dat and .bin files and zarr "
                                f"arrays (a path ending in .zarr, or inside one)")
    elif target.is_dir():
        raise ModelError(tpath, f"{text!r} is a directory")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ModelError(tpath, f"{str(parent)!r} is not a directory")
            break
    return _WriteFile(res, target, _write_dims(obj, res, path), path, zarr)


def _write_dims(obj: dict[str, Any], res: Any, path: str) -> Any:
    """A writeFile's ``dimensions``, if given."""
    if "dimensions" not in obj:
        return None
    dpath = _key(path, "dimensions")
    dims = tuple(_uint_list(obj["dimensions"], dpath, 1))
    if not dims:
        raise ModelError(dpath, "needs at least one dimension")
    n = int(np.prod(dims, dtype=object))
    if n > res.capacity:
        raise ModelError(dpath, f"{list(dims)} is {n} elements; resource {res.name!r} "
                                f"holds {res.capacity} {res.data_type.name} elements")
    return dims


# --------------------------------------------------------------------------------------------
# Models

class Model:
    """A parsed, validated DxDispatch model, ready to :meth:`run`."""

    def __init__(self, path: Any, resources: Any, dispatchables: Any, commands: Any,
                 storage_options: dict[str, Any] | None = None) -> None:
        self.path = path
        self.resources = resources
        self.dispatchables = dispatchables
        self.commands = commands
        # fsspec's options for the URLs the model names (its sources were opened with them)
        self.storage_options = dict(storage_options or {})

    def run(self, out: Any = None, *, scheduler: Any = None, progress: Any = False) -> list[Any]:
        """Run the commands in order (resources start from their initial values), then write
        the files of the ``writeFile`` commands and the text of the ``print`` commands (to
        ``out``, default ``sys.stdout``), both only once every command succeeded; returns the
        paths written. Lazy work (zarr models) runs on this process's threads, or on the
        dask.distributed ``scheduler`` (an address), with a progress bar on stderr where
        ``progress``."""
        from ._zarrio import Session
        out = sys.stdout if out is None else out
        state = {name: r.lazy if r.lazy is not None else r.data.copy()
                 for name, r in self.resources.items()}
        # resource -> the sizes of the tensor last written whole into it
        shapes: dict[Any, Any] = {}
        pending: dict[Any, Any] = {}
        printed = io.StringIO()
        session = Session(scheduler, progress)
        try:
            for cmd in self.commands:
                if isinstance(cmd, _Dispatch):
                    cmd.run(state, shapes, session)
                elif isinstance(cmd, _Print):
                    with _computing(cmd.resource.name, _key(cmd.path, "resource")):
                        cmd.run(state, printed, session)
                else:
                    cmd.run(state, shapes, pending, session)
            written = _write_files(pending, session, self.storage_options)
        finally:
            session.close()
        # (held back until every command succeeded: a model that fails writes nothing)
        write_text(out, printed.getvalue())
        return written


@contextlib.contextmanager
def _computing(name: str, path: str) -> Iterator[Any]:
    """A lazy computation's failure (a bad index met by a block, a store that cannot be
    read, the scheduler gone) as a ModelError at the command that asked for it."""
    from ._zarrio import ZarrError
    try:
        yield
    except ModelError:
        raise
    except DmlError as e:
        raise ModelError(path, f"computing {name!r}: {e}") from None
    except ZarrError as e:
        raise ModelError(path, str(e)) from None
    except Exception as e:      # (zarr's, Dask's and distributed's own errors among them:
        # `dmlops run` exits with 0 or 2, never a traceback)
        raise ModelError(path, f"computing {name!r}: {type(e).__name__}: {e}") from None


def write_text(out: Any, text: str) -> None:
    """``text`` to ``out``, characters its encoding lacks (a resource named with a lone
    surrogate, say) written as escapes rather than failing the model."""
    try:
        out.write(text)
    except UnicodeEncodeError:
        enc = getattr(out, "encoding", None) or "utf-8"
        out.write(text.encode(enc, "backslashreplace").decode(enc))


def _write_files(pending: dict[Any, Any], session: Any, options: dict[str, Any]) -> list[Any]:
    """Write every file to a temporary name beside it (zarr arrays too, in one pass over
    their Dask graphs), then move them all into place: a failure leaves no new file, store
    or folder behind (the files already moved into place and the folders made are removed
    again, a store set aside is put back, and the message says so)."""
    from ._zarrio import Staged, ZarrError
    staged, moved, made = [], [], []
    stores = Staged(options)
    files = [(t, v) for t, v in pending.items() if v[2] is None]
    # (a failure of the zarr targets together is reported at the first of them)
    first_zarr = next((p for _, (_, p, z) in pending.items() if z is not None), None)
    failure, done = None, False     # (the command's path, what failed)
    try:
        for target, (values, path, zarr) in pending.items():
            where = _key(path, "targetPath")
            if zarr is not None:
                try:
                    if isinstance(zarr[0], Path):
                        made += _make_folders(zarr[0].parent)
                except OSError as e:
                    failure = (path, f"cannot make the folder of {str(target)!r}: "
                                     f"{e.strerror or e}")
                    break
                stores.add(zarr[0], zarr[1], values)
                continue
            try:
                with _computing(str(target), where):
                    values = session.compute(values)
                made += _make_folders(target.parent)
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                           dir=target.parent)
                with os.fdopen(fd, "wb") as f:
                    staged.append(tmp)
                    if target.suffix.lower() == ".npy":
                        np.save(f, values, allow_pickle=False)
                    else:
                        f.write(values.tobytes())
            except OSError as e:
                failure = (path, f"cannot write {str(target)!r}: {e.strerror or e}")
                break
        if failure is None:
            try:
                with _computing("the zarr targets", ""):
                    stores.write(session)
            except (ModelError, ZarrError) as e:
                failure = (first_zarr, e.message if isinstance(e, ModelError) else str(e))
            except OSError as e:
                failure = (first_zarr, f"cannot write the zarr targets: {e.strerror or e}")
        umask = os.umask(0)
        os.umask(umask)
        for tmp, (target, (_, path, _)) in zip(staged if failure is None else [], files):
            # (mkstemp makes its file private; a written result gets the usual mode)
            try:
                os.chmod(tmp, 0o666 & ~umask)
                os.replace(tmp, target)
            except OSError as e:
                failure = (path, f"cannot move {str(target)!r} into place: {e.strerror or e}")
                break
            moved.append(target)
        if failure is None:
            try:
                stores.commit()
            except OSError as e:
                failure = (first_zarr, f"cannot move a zarr target into place: "
                                       f"{e.strerror or e}")
        done = failure is None
    finally:
        if not done:
            for tmp in staged:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            stores.discard()
            undone = _undo(moved, made)
            if failure is not None:
                raise ModelError(_key(failure[0], "targetPath"), failure[1] + undone)
    return list(pending)


def _shaped(values: Any, shape: Any) -> Any:
    """``values`` (1-D NumPy elements or a lazy array) as an array of ``shape``."""
    if tuple(values.shape) == tuple(shape):
        return values
    return values.reshape(-1)[:math.prod(shape)].reshape(shape)


def _make_folders(folder: Path) -> list[Any]:
    """Make ``folder`` and any missing parents; returns those it made, deepest last."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for f in reversed(missing):
        f.mkdir()
    return list(reversed(missing))


def _undo(moved: list[Any], made: list[Any]) -> str:
    """Removes the files already moved into place and the folders made (deepest first);
    returns what the message says of it."""
    for target in moved:
        try:
            os.unlink(target)
        except OSError:
            pass
    for folder in sorted(made, key=lambda f: len(f.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass
    if not moved and not made:
        return ""
    return (f"; the {len(moved)} file(s) already written and {len(made)} folder(s) made "
            f"were removed again")


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ModelError(str(path), "no such file") from None
    except IsADirectoryError:
        raise ModelError(str(path), "is a directory, not a model file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(str(path), f"cannot read: {e}") from None
    try:
        return json.loads(text, object_pairs_hook=_object_pairs,
                          parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ModelError(f"{path}:{e.lineno}:{e.colno}", f"invalid JSON: {e.msg}") from None
    except ValueError as e:
        raise ModelError(str(path), f"invalid JSON: {e}") from None
    except RecursionError:
        raise ModelError(str(path), "invalid JSON: nested too deeply") from None


def parse_model(data: Any, base_dir: Any = ".", *, feature_level: Any = None, backend: Any = None,
                name: Any = "model", storage_options: dict[str, Any] | None = None) -> Model:
    """Validate a model given as already-decoded JSON; ``base_dir`` resolves ``sourcePath``;
    ``storage_options``: fsspec's, for the URLs the model names (``s3://...``)."""
    try:
        level = _feature_level(feature_level)
    except DmlError as e:
        raise ModelError("--feature-level", str(e)) from None
    from .backends import resolve
    try:
        resolve(backend)
    except DmlError as e:
        raise ModelError("--backend" if backend is not None else "DMLOPS_BACKEND",
                         str(e)) from None
    root = _obj(data, name, "a JSON object {resources, dispatchables, commands}")
    _keys(root, "", ("resources", "dispatchables", "commands"),
          required=("resources", "dispatchables", "commands"))
    # absolute before anything is opened: a lazy task reads by the path it is given, in a
    # worker whose working directory is not this process's
    base_dir = Path(base_dir).absolute()
    resources = {}
    robj = _obj(root["resources"], "resources")
    lazy = _names_zarr(robj, root["commands"])
    for rname, value in robj.items():
        if rname == "$schema":          # ignored wherever it appears (SPEC 7)
            continue
        resources[rname] = _parse_resource(rname, value, base_dir, _key("resources", rname),
                                           lazy, storage_options)
    dispatchables = {}
    dobj = _obj(root["dispatchables"], "dispatchables")
    for dname, value in dobj.items():
        if dname == "$schema":
            continue
        dispatchables[dname] = _parse_dispatchable(dname, value, _key("dispatchables", dname),
                                                   level, backend)
    commands = []
    for i, value in enumerate(_list(root["commands"], "commands")):
        commands.append(_parse_command(i, value, resources, dispatchables,
                                       _item("commands", i)))
    _targets_apart(commands)
    _plan_laziness(commands, resources)
    return Model(name, resources, dispatchables, commands, storage_options)


def _names_zarr(resources: dict[str, Any], commands: Any) -> bool:
    """Whether a model names a zarr store (a resource's sourcePath, a writeFile target):
    then it runs lazily, its fills too (looked at before the model is checked: anything
    malformed is left to the checks)."""
    for value in resources.values():
        init = value.get("initialValues") if isinstance(value, dict) else None
        if isinstance(init, dict) and _is_zarr(init.get("sourcePath")):
            return True
    for value in commands if isinstance(commands, list) else []:
        if isinstance(value, dict) and value.get("type") == "writeFile" and \
                _is_zarr(value.get("targetPath")):
            return True
    return False


def _plan_laziness(commands: Any, resources: dict[str, Any]) -> None:
    """Which dispatches run lazily (one of their inputs is lazy: a zarr array, a lazy fill,
    or the output of a lazy dispatch), checked before anything runs: there a lazy input binds
    whole (its initialised elements as the tensor's sizes, from element 0, no strides), and
    so does an output, which then holds the lazy result; in-memory inputs beside them bind as
    usual. An in-memory dispatch writing into a lazy fill makes it in memory first."""
    lazy = {name for name, r in resources.items() if r.lazy is not None}
    for cmd in commands:
        if not isinstance(cmd, _Dispatch):
            continue
        d = cmd.dispatchable
        inputs = {f: b for f, b in cmd.bindings.items() if f not in d.outputs}
        cmd.lazy = any(b.resource.name in lazy for b in inputs.values())
        for f, b in cmd.bindings.items():
            if cmd.lazy and (f in d.outputs or b.resource.name in lazy) and \
                    not _whole(b, d.tensors[f]):
                t = d.tensors[f]
                raise ModelError(b.path, f"resource {b.resource.name!r} is lazy here (the "
                                         f"model names zarr stores) and binds whole: the "
                                         f"tensor's sizes {list(t.sizes)} must hold its "
                                         f"{b.resource.count} elements from element 0, "
                                         f"without strides")
        for f, b in cmd.bindings.items():
            if f in d.outputs:
                (lazy.add if cmd.lazy else lazy.discard)(b.resource.name)


def _targets_apart(commands: Any) -> None:
    """No writeFile target inside another's, nor a folder of another's: one would need a
    folder where the other writes a file (checked before anything runs)."""
    earlier: dict[Any, Any] = {}
    for cmd in commands:
        if not isinstance(cmd, _WriteFile):
            continue
        where = _key(cmd.path, "targetPath")
        # (a URL as a path of its scheme's folder: s3:/bucket/volume.zarr)
        mine = cmd.target if isinstance(cmd.target, Path) else PurePosixPath(cmd.target)
        for target, its in earlier.items():
            if target in mine.parents:
                raise ModelError(where, f"{str(cmd.target)!r} would be inside {str(target)!r}, "
                                        f"the file {its} writes")
            if mine in target.parents:
                raise ModelError(where, f"{str(cmd.target)!r} is a folder of {str(target)!r}, "
                                        f"the file {its} writes")
        earlier.setdefault(mine, where)


def load_model(path: Any, *, feature_level: Any = None, backend: Any = None,
               storage_options: dict[str, Any] | None = None) -> Model:
    """Read and validate a model file; raises :class:`ModelError`."""
    path = Path(path)
    data = _read_json(path)
    return parse_model(data, path.parent, feature_level=feature_level, backend=backend,
                       name=str(path), storage_options=storage_options)


def run_model(path: Any, *, feature_level: Any = None, backend: Any = None, out: Any = None,
              scheduler: Any = None, progress: Any = False) -> list[Any]:
    """Validate ``path`` completely, then run it; returns the files written."""
    return load_model(path, feature_level=feature_level, backend=backend).run(
        out, scheduler=scheduler, progress=progress)
