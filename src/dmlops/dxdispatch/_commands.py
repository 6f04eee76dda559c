"""Commands: ``dispatch`` (its bindings resolved and checked, then run), ``print`` and
``writeFile``."""

from __future__ import annotations

import difflib
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DmlError
from ._dispatchables import Dispatchable, ErrorMapper
from ._json import (ModelError, check_keys, json_bool, json_item, json_key, json_object,
                    json_str, json_uint, json_uint_list)
from ._resources import Resource, affordable, file_name_ok, is_zarr
from ._values import format_value

if TYPE_CHECKING:
    from ..tensor import TensorDesc


class _Binding:
    def __init__(self, field: str, resource: Resource, offset: int, nbytes: int, path: str) -> None:
        self.field = field
        self.resource = resource
        self.offset = offset        # bytes
        self.nbytes = nbytes        # bytes from offset that the binding may touch
        self.path = path


class Dispatch:
    def __init__(self, index: Any, dispatchable: Dispatchable, bindings: dict[str, Any],
                 path: str) -> None:
        self.index = index
        self.dispatchable = dispatchable
        self.bindings = bindings    # snake field -> _Binding
        self.path = path
        self.lazy = False           # an input is lazy: so are the outputs (_plan_laziness)

    def run(self, state: Any, shapes: Any, session: Any) -> None:
        d = self.dispatchable
        mapper = ErrorMapper(d.camel)
        if self.lazy:       # (NumPy inputs beside the lazy ones bind as in memory)
            arrays = {f: _lazy_view(state[b.resource.name], b, d.tensors[f])
                      for f, b in self.bindings.items() if f not in d.outputs}
        else:
            for b in self.bindings.values():        # (lazy fills this dispatch writes into)
                state[b.resource.name] = _in_memory(state[b.resource.name], b.resource,
                                                    session, b.path)
            arrays = {field: view(state[b.resource.name], b, d.tensors[field])
                      for field, b in self.bindings.items()}
        try:
            results = d.op.execute(**arrays)    # in memory: written into the bound bytes
        except DmlError as e:
            raise mapper.model_error(e, self.path, tensor_base=json_key(self.path, "bindings")) \
                from None
        for field in d.outputs:
            b = self.bindings.get(field)
            if b is None:
                continue
            if self.lazy:
                state[b.resource.name] = results[field]
            if whole(b, d.tensors[field]):
                shapes[b.resource.name] = tuple(d.tensors[field].sizes)


def whole(b: "_Binding", t: Any) -> bool:
    """Whether binding ``b`` of tensor ``t`` is its resource's initialised elements, whole
    and in order (as a lazy resource binds)."""
    return (b.offset == 0 and t.strides is None and
            math.prod(t.sizes) == b.resource.count)


def _lazy_view(value: Any, b: "_Binding", t: Any) -> Any:
    """A resource's elements as tensor ``t``: a lazy one's reshaped to its sizes, a byte
    buffer's viewed through binding ``b`` (``view``)."""
    if isinstance(value, np.ndarray):
        return view(value, b, t)
    return value if tuple(value.shape) == tuple(t.sizes) else value.reshape(t.sizes)


def _in_memory(value: Any, r: Resource, session: Any, path: str) -> np.ndarray:
    """A resource's bytes, made from its lazy elements where it holds them (an in-memory
    dispatch writes into it)."""
    if isinstance(value, np.ndarray):
        return value
    affordable(r.nbytes, path, f"resource {r.name!r}, made in memory for this dispatch,")
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


class Print:
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
            lines = [f"[{i:>{width}}] {format_value(v, r.data_type)} "
                     f"(0x{int(b):0{2 * r.data_type.itemsize}X})"
                     for i, (v, b) in enumerate(zip(values, raw))]
            out.write(f"{r.name}:\n" + "\n".join(lines) + "\n")
        else:
            text = ", ".join(format_value(v, r.data_type) for v in values)
            out.write(f"{r.name}: {text}\n")


class WriteFile:
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


def _shaped(values: Any, shape: Any) -> Any:
    """``values`` (1-D NumPy elements or a lazy array) as an array of ``shape``."""
    if tuple(values.shape) == tuple(shape):
        return values
    return values.reshape(-1)[:math.prod(shape)].reshape(shape)


_COMMAND_KEYS = {
    "dispatch": (("type", "dispatchable", "bindings"), ("dispatchable", "bindings")),
    "print": (("type", "resource", "verbose"), ("resource",)),
    "writeFile": (("type", "targetPath", "resource", "dimensions"), ("targetPath", "resource")),
}
_BINDING_KEYS = ("name", "elementOffset", "elementCount", "elementStride")


def _resource_ref(value: Any, resources: dict[str, Resource], path: str) -> Resource:
    name = json_str(value, path, "a resource name")
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
        value, path = value[0], json_item(path, 0)
    if isinstance(value, str):
        res = _resource_ref(value, resources, path)
        offset, limit = 0, res.nbytes
    else:
        obj = json_object(value, path, "a resource name or {\"name\": ..., \"elementOffset\": ...}")
        check_keys(obj, path, _BINDING_KEYS, required=("name",))
        res = _resource_ref(obj["name"], resources, json_key(path, "name"))
        esize = res.data_type.itemsize
        if "elementStride" in obj:
            esize = json_uint(obj["elementStride"], json_key(path, "elementStride"), 1)
        first = json_uint(obj.get("elementOffset", 0), json_key(path, "elementOffset"))
        offset = first * esize
        if offset > res.nbytes:
            raise ModelError(json_key(path, "elementOffset"),
                             f"{first} elements of {esize} bytes start past the end of "
                             f"resource {res.name!r} ({res.nbytes} bytes)")
        limit = res.nbytes
        if "elementCount" in obj:
            count = json_uint(obj["elementCount"], json_key(path, "elementCount"), 1)
            if offset + count * esize > res.nbytes:
                raise ModelError(json_key(path, "elementCount"),
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


def _parse_dispatch(i: Any, obj: Any, path: Any, resources: Any, dispatchables: Any) -> Dispatch:
    dname = json_str(obj["dispatchable"], json_key(path, "dispatchable"), "a dispatchable name")
    if dname not in dispatchables:
        known = ", ".join(repr(n) for n in dispatchables) or "none"
        raise ModelError(json_key(path, "dispatchable"), f"no dispatchable named {dname!r} "
                                                         f"(defined: {known})")
    d = dispatchables[dname]
    bpath = json_key(path, "bindings")
    bobj = json_object(obj["bindings"], bpath)
    by_json = {d.camel[s]: s for s in d.bind_points}
    bindings = {}
    for key, value in bobj.items():
        kpath = json_key(bpath, key)
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
            raise ModelError(json_key(bpath, d.camel[field]),
                             f"nothing bound for {d.camel[field]} (every tensor of the "
                             f"description must be bound)")
    _check_overlaps(d, bindings)
    return Dispatch(i, d, bindings, path)


def view(buf: np.ndarray, b: "_Binding", t: TensorDesc) -> np.ndarray:
    """The elements of tensor ``t`` in ``buf`` (a resource's bytes) as bound by ``b``: an
    array of ``t.sizes`` when ``t`` has no strides, else the flat buffer its strides index."""
    usable = b.nbytes // t.dtype.itemsize * t.dtype.itemsize
    flat: np.ndarray = buf[b.offset:b.offset + usable].view(t.dtype)
    if t.strides is None:
        return flat[:int(np.prod(t.sizes, dtype=np.int64))].reshape(t.sizes)
    return flat


def strided(flat: np.ndarray, t: Any) -> np.ndarray:
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
        va = strided(view(a.resource.data, a, d.tensors[a.field]), d.tensors[a.field])
        for b in items:
            if b is a or b.resource is not a.resource:
                continue
            vb = strided(view(b.resource.data, b, d.tensors[b.field]), d.tensors[b.field])
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


def parse_command(i: Any, value: Any, resources: Any, dispatchables: Any, path: Any) -> Any:
    obj = json_object(value, path)
    if "type" not in obj:
        raise ModelError(json_key(path, "type"), "missing (required): dispatch, print or "
                                                 "writeFile")
    kind = json_str(obj["type"], json_key(path, "type"))
    if kind not in _COMMAND_KEYS:
        close = [k for k in _COMMAND_KEYS if k.lower() == kind.lower()]
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ModelError(json_key(path, "type"), f"unknown command type {kind!r}{hint}; expected "
                                                 f"dispatch, print or writeFile")
    allowed, required = _COMMAND_KEYS[kind]
    check_keys(obj, path, allowed, required)
    if kind == "dispatch":
        return _parse_dispatch(i, obj, path, resources, dispatchables)
    res = _resource_ref(obj["resource"], resources, json_key(path, "resource"))
    if kind == "print":
        verbose = json_bool(obj.get("verbose", False), json_key(path, "verbose"))
        return Print(res, verbose, path)
    tpath = json_key(path, "targetPath")
    text = json_str(obj["targetPath"], tpath, "a file path")
    if not text.strip():
        raise ModelError(tpath, "an empty path")
    file_name_ok(text, tpath)
    if "://" in text and not text.lower().startswith("file://"):
        from .. import _zarrio
        zarr = _zarrio.split(text)
        if zarr is None:
            raise ModelError(tpath, f"{text!r}: a URL names a zarr array (a path ending in "
                                    f".zarr, or inside one); .npy, .dat and .bin files are "
                                    f"written to local paths")
        dims = _write_dims(obj, res, path)
        return WriteFile(res, text, dims, path, zarr)
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
    if is_zarr(str(target)):
        from .. import _zarrio
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
    return WriteFile(res, target, _write_dims(obj, res, path), path, zarr)


def _write_dims(obj: dict[str, Any], res: Any, path: str) -> Any:
    """A writeFile's ``dimensions``, if given."""
    if "dimensions" not in obj:
        return None
    dpath = json_key(path, "dimensions")
    dims = tuple(json_uint_list(obj["dimensions"], dpath, 1))
    if not dims:
        raise ModelError(dpath, "needs at least one dimension")
    n = int(np.prod(dims, dtype=object))
    if n > res.capacity:
        raise ModelError(dpath, f"{list(dims)} is {n} elements; resource {res.name!r} "
                                f"holds {res.capacity} {res.data_type.name} elements")
    return dims
