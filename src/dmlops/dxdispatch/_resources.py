"""Resources: a model's named buffers, filled from their initial values, from a .npy, .dat
or .bin file, or lazily from a zarr array."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import DataType, FLOAT_TYPES, data_type
from .. import tensor as tensor_module
from ..errors import DmlError
from ._json import (ModelError, check_keys, describe, json_data_type, json_key,
                    json_number, json_object, json_str, json_uint)
from ._values import to_type, typed_values


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


def file_name_ok(text: str, path: str) -> None:
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
    file_name_ok(text, path)
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
    from .. import _zarrio
    spath = json_key(path, "sourcePath")
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
    spath = json_key(path, "sourcePath")
    try:
        dt = data_type(arr.dtype)
    except DmlError:
        raise ModelError(spath, f"{name!r} holds {arr.dtype} values, which is not a DirectML "
                                f"data type") from None
    if dt_value is not None and dt_value != dt:
        raise ModelError(json_key(path.rsplit(".", 1)[0], "initialValuesDataType"),
                         f"{dt_value.name} differs from the data type of {name!r} "
                         f"({dt.name}); leave it out or make them agree")
    if arr.size == 0:
        raise ModelError(spath, f"{name!r} holds no values")
    return dt


def is_zarr(text: Any) -> bool:
    from .. import _zarrio
    return isinstance(text, str) and _zarrio.split(text) is not None


def _load_source(obj: dict[str, Any], dt_value: Any, base_dir: Path, path: str,
                 options: dict[str, Any]) -> Any:
    spath = json_key(path, "sourcePath")
    text = json_str(obj["sourcePath"], spath, "a file path")
    if is_zarr(text):
        file_name_ok(text, spath)
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
            raise ModelError(json_key(path.rsplit(".", 1)[0], "initialValuesDataType"),
                             f"missing: a raw {ext} file needs a data type")
        raw = file.read_bytes()
        if not raw or len(raw) % dt_value.itemsize:
            raise ModelError(spath, f"{str(file)!r} has {len(raw)} bytes, not a positive "
                                    f"multiple of {dt_value.itemsize} ({dt_value.name})")
        return dt_value, np.frombuffer(raw, dtype=dt_value.dtype).copy()
    raise ModelError(spath, f"{str(file)!r}: unsupported file type {ext or '(none)'}; dmlops "
                            f"reads .npy, .dat and .bin files and zarr arrays")


def parse_resource(name: str, value: Any, base_dir: Path, path: str, lazy: Any = False,
                   options: dict[str, Any] | None = None) -> Resource:
    """``lazy``: the model names zarr stores, so fills (``{valueCount, value}``) stay lazy
    (an output declared as zeros is never made in memory); ``options``: fsspec's, for
    URLs."""
    obj = json_object(value, path)
    check_keys(obj, path, _RESOURCE_KEYS, required=("initialValues",))
    ipath = json_key(path, "initialValues")
    dpath = json_key(path, "initialValuesDataType")
    dt = json_data_type(obj["initialValuesDataType"], dpath) \
        if "initialValuesDataType" in obj else None
    init = obj["initialValues"]
    if isinstance(init, dict) and "sourcePath" in init:
        json_object(init, ipath)
        check_keys(init, ipath, ("sourcePath",))
        dt, values = _load_source(init, dt, base_dir, ipath, options or {})
        if hasattr(values, "dask"):
            if "sizeInBytes" in obj:
                raise ModelError(json_key(path, "sizeInBytes"), "a zarr resource has its array's "
                                                                "size; leave sizeInBytes out")
            return Resource(name, dt, None, values.size, lazy=values,
                            size=values.size * dt.itemsize)
    else:
        if dt is None:
            raise ModelError(dpath, "missing (required unless initialValues is a .npy file)")
        if isinstance(init, list):
            if not init:
                raise ModelError(ipath, "an array initializer needs at least one value")
            values = typed_values(init, dt, ipath)
        elif isinstance(init, dict):
            json_object(init, ipath)
            if "valueStart" in init or "valueDelta" in init:
                check_keys(init, ipath, ("valueCount", "valueStart", "valueDelta"),
                           required=("valueCount", "valueStart", "valueDelta"))
                count = json_uint(init["valueCount"], json_key(ipath, "valueCount"), 1)
                values = _sequence(init, count, dt, ipath)
            else:
                check_keys(init, ipath, ("valueCount", "value"), required=("valueCount", "value"))
                count = json_uint(init["valueCount"], json_key(ipath, "valueCount"), 1)
                one = typed_values([init["value"]], dt, ipath)
                if lazy:
                    return _lazy_fill(name, obj, dt, count, one[0], path)
                values = _full(count, one[0], ipath)
        else:
            raise ModelError(ipath, f"expected an array of values or an object "
                                    f"({{valueCount, value}}, {{valueCount, valueStart, "
                                    f"valueDelta}} or {{sourcePath}}), got {describe(init)}")
    data = _alloc(_buffer_bytes(obj, values.size, dt, path), path)
    data[:values.size * dt.itemsize] = values.view(np.uint8)
    return Resource(name, dt, data, values.size)


def _buffer_bytes(obj: dict[str, Any], count: int, dt: DataType, path: str) -> int:
    """A resource's bytes: its ``count`` initial values, or ``sizeInBytes`` where given (no
    fewer), rounded up to 4."""
    nbytes = size = count * dt.itemsize
    if "sizeInBytes" in obj:
        spath = json_key(path, "sizeInBytes")
        size = json_uint(obj["sizeInBytes"], spath)
        if size < nbytes:
            raise ModelError(spath, f"{size} is smaller than the {nbytes} bytes of "
                                    f"initialValues ({count} x {dt.name})")
    return (size + 3) // 4 * 4


def _lazy_fill(name: Any, obj: Any, dt: DataType, count: int, value: Any, path: str) -> Resource:
    import dask.array as da
    return Resource(name, dt, None, count, lazy=da.full((count,), value, dtype=dt.dtype),
                    size=_buffer_bytes(obj, count, dt, path))


def affordable(nbytes: int, path: str, what: str) -> None:
    """A model's buffer within the machine's memory, else a ModelError naming the size: the
    system would promise it and kill the process as it fills."""
    too_big = tensor_module.beyond_memory(nbytes)
    if too_big:
        raise ModelError(path, f"{what} needs {too_big}")


def _alloc(nbytes: int, path: str) -> np.ndarray:
    affordable(nbytes, path, "the resource")
    try:
        return np.zeros(nbytes, dtype=np.uint8)
    except (MemoryError, ValueError):
        raise ModelError(path, f"cannot allocate {nbytes} bytes") from None


def _full(count: int, value: Any, path: str) -> np.ndarray:
    affordable(count * value.dtype.itemsize, json_key(path, "valueCount"), f"{count} values")
    try:
        return np.full(count, value, dtype=value.dtype)
    except (MemoryError, ValueError):
        raise ModelError(json_key(path, "valueCount"), f"cannot allocate {count} values") from None


def _sequence(init: dict[str, Any], count: int, dt: DataType, path: str) -> np.ndarray:
    allow_special = dt in FLOAT_TYPES
    # (the sequence is made in 8-byte lanes, float64 or int64, then narrowed)
    affordable(count * 8, json_key(path, "valueCount"), f"{count} values")
    start = json_number(init["valueStart"], json_key(path, "valueStart"), allow_special)
    delta = json_number(init["valueDelta"], json_key(path, "valueDelta"), allow_special)
    if dt in FLOAT_TYPES:
        try:
            steps = np.arange(count, dtype=np.float64)
        except (MemoryError, ValueError):
            raise ModelError(json_key(path, "valueCount"),
                             f"cannot allocate {count} values") from None
        with np.errstate(over="ignore", invalid="ignore"):
            return (float(start) + float(delta) * steps).astype(dt.dtype)
    to_type([start], dt, json_key(path, "valueStart"))          # integral and in range
    if isinstance(delta, float) and not delta.is_integer():
        raise ModelError(json_key(path, "valueDelta"), f"{delta!r} is not an integer; {dt.name} "
                                                       f"is an integer type")
    start, delta = int(start), int(delta)
    last = start + delta * (count - 1)
    info = np.iinfo(dt.dtype)
    if not info.min <= last <= info.max:
        raise ModelError(json_key(path, "valueCount"), f"the sequence reaches {last}, outside the "
                                                       f"range of {dt.name} [{info.min}, "
                                                       f"{info.max}]")
    try:
        if -2**63 <= min(start, last) and max(start, last) < 2**63:
            return (start + delta * np.arange(count, dtype=np.int64)).astype(dt.dtype)
        return np.array([start + delta * i for i in range(count)], dtype=dt.dtype)
    except (MemoryError, ValueError):
        raise ModelError(json_key(path, "valueCount"), f"cannot allocate {count} values") from None
