"""The model: parsed and validated whole before anything runs (:func:`parse_model`,
:func:`load_model`), its laziness planned, then run."""

from __future__ import annotations

import io
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ..dtypes import feature_level as _feature_level
from ..errors import DmlError
from ._commands import Dispatch, Print, WriteFile, parse_command, strided, view, whole
from ._dispatchables import parse_dispatchable
from ._files import computing, write_files, write_text
from ._json import (ModelError, check_keys, json_item, json_key, json_list, json_object,
                    read_json)
from ._resources import is_zarr, parse_resource


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
        from .._zarrio import Session
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
                if isinstance(cmd, Dispatch):
                    cmd.run(state, shapes, session)
                elif isinstance(cmd, Print):
                    with computing(cmd.resource.name, json_key(cmd.path, "resource")):
                        cmd.run(state, printed, session)
                else:
                    cmd.run(state, shapes, pending, session)
            written = write_files(pending, session, self.storage_options)
        finally:
            session.close()
        # (held back until every command succeeded: a model that fails writes nothing)
        write_text(out, printed.getvalue())
        return written

    def initial_values(self, dispatchable: str, field: str = "input_tensor"
                       ) -> np.ndarray | None:
        """The values that the first dispatch of ``dispatchable`` binding tensor ``field``
        (snake_case: ``input_tensor``) reads there before anything runs, as an array of the
        tensor's sizes (a copy); None where the model does not give them: no such dispatch,
        a resource an earlier dispatch writes, a lazy zarr array."""
        written: set[str] = set()
        for cmd in self.commands:
            if not isinstance(cmd, Dispatch):
                continue
            d = cmd.dispatchable
            b = cmd.bindings.get(field)
            if d.name == dispatchable and b is not None:
                r = b.resource
                if r.data is None or r.name in written:
                    return None
                t = d.tensors[field]
                return np.array(strided(view(r.data, b, t), t))
            written |= {b.resource.name for f, b in cmd.bindings.items() if f in d.outputs}
        return None


def parse_model(data: Any, base_dir: Any = ".", *, feature_level: Any = None, backend: Any = None,
                name: Any = "model", storage_options: dict[str, Any] | None = None) -> Model:
    """Validate a model given as already-decoded JSON; ``base_dir`` resolves ``sourcePath``;
    ``storage_options``: fsspec's, for the URLs the model names (``s3://...``)."""
    try:
        level = _feature_level(feature_level)
    except DmlError as e:
        raise ModelError("--feature-level", str(e)) from None
    from ..backends import resolve
    try:
        resolve(backend)
    except DmlError as e:
        raise ModelError("--backend" if backend is not None else "DMLOPS_BACKEND",
                         str(e)) from None
    root = json_object(data, name, "a JSON object {resources, dispatchables, commands}")
    check_keys(root, "", ("resources", "dispatchables", "commands"),
               required=("resources", "dispatchables", "commands"))
    # absolute before anything is opened: a lazy task reads by the path it is given, in a
    # worker whose working directory is not this process's
    base_dir = Path(base_dir).absolute()
    resources = {}
    robj = json_object(root["resources"], "resources")
    lazy = _names_zarr(robj, root["commands"])
    for rname, value in robj.items():
        if rname == "$schema":          # ignored wherever it appears (SPEC 7)
            continue
        resources[rname] = parse_resource(rname, value, base_dir, json_key("resources", rname),
                                          lazy, storage_options)
    dispatchables = {}
    dobj = json_object(root["dispatchables"], "dispatchables")
    for dname, value in dobj.items():
        if dname == "$schema":
            continue
        dispatchables[dname] = parse_dispatchable(dname, value, json_key("dispatchables", dname),
                                                  level, backend)
    commands = []
    for i, value in enumerate(json_list(root["commands"], "commands")):
        commands.append(parse_command(i, value, resources, dispatchables,
                                      json_item("commands", i)))
    _targets_apart(commands)
    _plan_laziness(commands, resources)
    return Model(name, resources, dispatchables, commands, storage_options)


def _names_zarr(resources: dict[str, Any], commands: Any) -> bool:
    """Whether a model names a zarr store (a resource's sourcePath, a writeFile target):
    then it runs lazily, its fills too (looked at before the model is checked: anything
    malformed is left to the checks)."""
    for value in resources.values():
        init = value.get("initialValues") if isinstance(value, dict) else None
        if isinstance(init, dict) and is_zarr(init.get("sourcePath")):
            return True
    for value in commands if isinstance(commands, list) else []:
        if isinstance(value, dict) and value.get("type") == "writeFile" and \
                is_zarr(value.get("targetPath")):
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
        if not isinstance(cmd, Dispatch):
            continue
        d = cmd.dispatchable
        inputs = {f: b for f, b in cmd.bindings.items() if f not in d.outputs}
        cmd.lazy = any(b.resource.name in lazy for b in inputs.values())
        for f, b in cmd.bindings.items():
            if cmd.lazy and (f in d.outputs or b.resource.name in lazy) and \
                    not whole(b, d.tensors[f]):
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
        if not isinstance(cmd, WriteFile):
            continue
        where = json_key(cmd.path, "targetPath")
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
    data = read_json(path)
    return parse_model(data, path.parent, feature_level=feature_level, backend=backend,
                       name=str(path), storage_options=storage_options)


def run_model(path: Any, *, feature_level: Any = None, backend: Any = None, out: Any = None,
              scheduler: Any = None, progress: Any = False) -> list[Any]:
    """Validate ``path`` completely, then run it; returns the files written."""
    return load_model(path, feature_level=feature_level, backend=backend).run(
        out, scheduler=scheduler, progress=progress)
