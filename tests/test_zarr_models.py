"""``dmlops run`` with zarr stores (SPEC 6, issue 29): resources read from zarr arrays (a
store, or an array inside a group), ``writeFile`` targets written as zarr arrays, chunk for
chunk, lazily through Dask; the in-memory results, nothing left behind by a failing model,
a progress bar on a terminal only, ``--scheduler`` on a dask.distributed cluster."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlops as dml
from dmlops.cli import main
from dmlops.dxdispatch import ModelError, load_model

zarr = pytest.importorskip("zarr")
da = pytest.importorskip("dask.array")

X_SHAPE = (2, 3, 20, 18)


def _volume(tmp_path, name="in.zarr", component=None, chunks=(1, 2, 7, 8)):
    x = np.random.default_rng(1).standard_normal(X_SHAPE).astype(np.float32)
    x[0, 1, 3, 4] = x[0, 1, 3, 5]       # (a tie)
    if component is None:
        z = zarr.create_array(store=str(tmp_path / name), shape=x.shape, chunks=chunks,
                              dtype=x.dtype)
    else:
        g = zarr.open_group(store=str(tmp_path / name), mode="a")
        z = g.create_array(component, shape=x.shape, chunks=chunks, dtype=x.dtype)
    z[...] = x
    return x


def _pool_model(source, targets, *, dtype=None, window=3, out=None, pads=(1, 1)):
    n, c, h, w = X_SHAPE
    oh, ow = (h + pads[0] + pads[1] - window) // 2 + 1, (w + pads[0] + pads[1] - window) // 2 + 1
    out = out or [n, c, oh, ow]
    src = {"initialValues": {"sourcePath": source}}
    if dtype:
        src["initialValuesDataType"] = dtype
    count = int(np.prod(out))
    return {
        "resources": {
            "x": src,
            "y": {"initialValuesDataType": "FLOAT32",
                  "initialValues": {"valueCount": count, "value": 0}},
            "i": {"initialValuesDataType": "UINT32",
                  "initialValues": {"valueCount": count, "value": 0}},
        },
        "dispatchables": {"pool": {"type": "DML_OPERATOR_MAX_POOLING2", "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": list(X_SHAPE)},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": out},
            "OutputIndicesTensor": {"DataType": "UINT32", "Sizes": out},
            "DimensionCount": 2, "Strides": [2, 2], "WindowSize": [window, window],
            "StartPadding": [pads[0]] * 2, "EndPadding": [pads[1]] * 2, "Dilations": [1, 1]}}},
        "commands": [{"type": "dispatch", "dispatchable": "pool",
                      "bindings": {"InputTensor": "x", "OutputTensor": "y",
                                   "OutputIndicesTensor": "i"}}] +
                    [{"type": "writeFile", "resource": r, "targetPath": t}
                     for r, t in targets],
    }


def _unpool_model(idx, idx_binding, targets):
    """Max unpooling of in.zarr (X_SHAPE) at indices resource ``idx`` (bound as
    ``idx_binding``) into y, then writeFile of y to each of ``targets``."""
    count = int(np.prod(X_SHAPE))
    return {
        "resources": {
            "x": {"initialValues": {"sourcePath": "in.zarr"}},
            "idx": idx,
            "y": {"initialValuesDataType": "FLOAT32",
                  "initialValues": {"valueCount": count, "value": 0}}},
        "dispatchables": {"unpool": {"type": "DML_OPERATOR_MAX_UNPOOLING", "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": list(X_SHAPE)},
            "IndicesTensor": {"DataType": "UINT32", "Sizes": list(X_SHAPE)},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": list(X_SHAPE)}}}},
        "commands": [
            {"type": "dispatch", "dispatchable": "unpool",
             "bindings": {"InputTensor": "x", "IndicesTensor": idx_binding,
                          "OutputTensor": "y"}}] +
                    [{"type": "writeFile", "resource": "y", "targetPath": t} for t in targets],
    }


def _write(tmp_path, model) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    return path


def _run(path, *args, err=None):
    """``dmlops run`` as from the command line: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), err or io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        rc = main(["run", str(path), *args])
    finally:
        sys.stdout, sys.stderr = saved
    return rc, out.getvalue(), err.getvalue()


def test_a_zarr_volume_pooled_into_zarr_and_npy(tmp_path, monkeypatch):
    """An array inside a group in, the values to a new store, the indices into a folder of
    an existing group and to a .npy: the in-memory results, zarr chunks that a Dask task
    each writes whole."""
    monkeypatch.chdir(tmp_path)
    x = _volume(tmp_path, "g.zarr", "raw/volume")
    zarr.open_group(store=str(tmp_path / "out.zarr"), mode="w")
    model = _pool_model("g.zarr/raw/volume",
                        [("y", "y.zarr"), ("i", "out.zarr/pool/indices"), ("i", "i.npy")])
    rc, out, err = _run(_write(tmp_path, model))
    assert (rc, out, err) == (0, "", "")
    y, i = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                           output_indices=True)
    zy = zarr.open_array(store=str(tmp_path / "y.zarr"), mode="r")
    zi = zarr.open_array(store=str(tmp_path / "out.zarr"), path="pool/indices", mode="r")
    assert zy.shape == y.shape and zy[...].tobytes() == y.tobytes()
    assert np.array_equal(zi[...], i) and zi.dtype == np.uint32
    assert np.array_equal(np.load(tmp_path / "i.npy"), i.reshape(-1))
    # nothing else left: no temporary store or file
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["g.zarr", "i.npy", "model.json", "out.zarr", "y.zarr"]
    assert sorted(p.name for p in (tmp_path / "out.zarr" / "pool").iterdir()) == \
        ["indices", "zarr.json"]


def test_a_failing_model_leaves_the_stores_as_they_were(tmp_path, monkeypatch):
    """An index outside the output met while computing (max unpooling of a zarr input):
    exit 2 naming the command, the new store not made, the existing one unchanged."""
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    old = zarr.create_array(store=str(tmp_path / "old.zarr"), shape=(3,), dtype="int8")
    old[...] = [1, 2, 3]
    idx = np.zeros(X_SHAPE, np.uint32)
    idx[1, 2, 19, 17] = 10**6
    zarr.create_array(store=str(tmp_path / "idx.zarr"), shape=X_SHAPE, chunks=(1, 1, 5, 5),
                      dtype="uint32")[...] = idx
    model = _unpool_model({"initialValues": {"sourcePath": "idx.zarr"}}, "idx",
                          ["new.zarr", "old.zarr"])
    rc, out, err = _run(_write(tmp_path, model))
    assert rc == 2 and "commands[1].targetPath" in err
    assert "indices_tensor[1, 2, 19, 17] = 1000000 is outside" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["idx.zarr", "in.zarr", "model.json", "old.zarr"]
    assert zarr.open_array(store=str(tmp_path / "old.zarr"), mode="r")[...].tolist() == [1, 2, 3]


def test_a_failed_write_waits_for_the_writes_running_beside_it(tmp_path, monkeypatch):
    """The second chunk write fails while the other thread is inside a slow one: the model
    fails once that write has ended, and the cleanup after it leaves no store behind."""
    import asyncio
    import threading
    import time

    from zarr.storage import LocalStore
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("dask.system.CPU_COUNT", 2)
    _volume(tmp_path)
    saved, calls, lock = LocalStore.set, [], threading.Lock()

    async def slow_or_failing(store, key, value):
        if "/c/" in f"/{key}":
            with lock:
                calls.append(key)
                second = len(calls) == 2
            if second:
                await asyncio.sleep(0.05)       # (the other write under way)
                raise OSError(28, "No space left on device")
            await asyncio.sleep(0.3)
        return await saved(store, key, value)

    monkeypatch.setattr(LocalStore, "set", slow_or_failing)
    rc, out, err = _run(_write(tmp_path, _pool_model("in.zarr", [("y", "new.zarr")])))
    assert rc == 2 and "commands[1].targetPath" in err and "No space left on device" in err
    time.sleep(0.5)     # (a write that outlived the model would have ended by now)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json"]


def test_an_existing_target_is_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = _volume(tmp_path)
    zarr.create_array(store=str(tmp_path / "y.zarr"), shape=(3,), dtype="int8")
    rc, _, err = _run(_write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")])))
    assert rc == 0, err
    y = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1)
    assert zarr.open_array(store=str(tmp_path / "y.zarr"), mode="r")[...].tobytes() == \
        y.tobytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json", "y.zarr"]


@pytest.mark.parametrize("change, where, words", [
    (dict(dtype="FLOAT16"), "resources.x.initialValuesDataType", "differs from the data type"),
    (dict(source="missing.zarr"), "resources.x.initialValues.sourcePath", "not found"),
    (dict(source="g.zarr"), "resources.x.initialValues.sourcePath", "is a zarr group"),
    (dict(source="g.zarr/raw/nothing"), "resources.x.initialValues.sourcePath", "cannot open"),
    (dict(extra=10), "commands[0].bindings.OutputTensor", "binds whole"),
])
def test_zarr_mistakes_are_located_errors(tmp_path, monkeypatch, change, where, words):
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path, "g.zarr", "raw/volume")
    kw = dict(change)
    source = kw.pop("source", "g.zarr/raw/volume")
    extra = kw.pop("extra", 0)
    model = _pool_model(source, [("y", "y.zarr")], **kw)
    # (a lazy output holding more elements than the tensor: it would not be bound whole)
    model["resources"]["y"]["initialValues"]["valueCount"] += extra
    with pytest.raises(ModelError) as e:
        load_model(_write(tmp_path, model)).run(io.StringIO())
    assert e.value.path == where and words in e.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.zarr", "model.json"]


def test_an_in_memory_dispatch_into_a_zarr_target(tmp_path, monkeypatch):
    """Inputs in memory, the output declared as zeros (lazy in a zarr model): made in memory
    for the dispatch, written as a zarr array of the tensor's sizes."""
    monkeypatch.chdir(tmp_path)
    model = {
        "resources": {
            "x": {"initialValuesDataType": "INT16", "initialValues": list(range(12))},
            "y": {"initialValuesDataType": "INT16",
                  "initialValues": {"valueCount": 30, "value": 0}}},
        "dispatchables": {"pad": {"type": "DML_OPERATOR_PADDING", "desc": {
            "InputTensor": {"DataType": "INT16", "Sizes": [1, 1, 3, 4]},
            "OutputTensor": {"DataType": "INT16", "Sizes": [1, 1, 5, 6]},
            "PaddingMode": "DML_PADDING_MODE_SYMMETRIC", "PaddingValue": 0,
            "DimensionCount": 4, "StartPadding": [0, 0, 1, 1], "EndPadding": [0, 0, 1, 1]}}},
        "commands": [{"type": "dispatch", "dispatchable": "pad",
                      "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
                     {"type": "writeFile", "resource": "y", "targetPath": "p.zarr/pad"},
                     {"type": "print", "resource": "y"}]}
    rc, out, err = _run(_write(tmp_path, model))
    assert rc == 0, err
    want = dml.padding(np.arange(12, dtype=np.int16).reshape(1, 1, 3, 4), (0, 0, 1, 1),
                       (0, 0, 1, 1), mode="symmetric")
    got = zarr.open_array(store=str(tmp_path / "p.zarr"), path="pad", mode="r")
    assert np.array_equal(got[...], want)
    assert out == "y: " + ", ".join(str(v) for v in want.reshape(-1)) + "\n"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("quiet", [False, True])
def test_a_progress_bar_on_a_terminal_only(tmp_path, monkeypatch, quiet):
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    path = _write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")]))
    rc, out, err = _run(path, *(["--quiet"] if quiet else []), err=_Terminal())
    assert rc == 0 and out == ""
    assert ("100% Completed" in err) != quiet
    rc, out, err = _run(path)       # (stderr not a terminal)
    assert (rc, out, err) == (0, "", "")


def test_the_example_model(tmp_path, monkeypatch):
    """examples/zarr: the generator's volume, the model's pooled store."""
    root = Path(__file__).resolve().parent.parent / "examples" / "zarr"
    sys.path.insert(0, str(root))
    try:
        import make_volume
    finally:
        sys.path.remove(str(root))
    monkeypatch.chdir(tmp_path)
    make_volume.volume(256).to_zarr(str(tmp_path / "volume.zarr"))
    model = json.loads((root / "max_pooling_volume.json").read_text())
    rc, _, err = _run(_write(tmp_path, model))
    assert rc == 0, err
    x = zarr.open_array(store=str(tmp_path / "volume.zarr"), mode="r")[...]
    y = zarr.open_array(store=str(tmp_path / "pooled.zarr"), mode="r")
    assert y[...].tobytes() == dml.max_pooling(x, 3, strides=2, start_padding=1).tobytes()


def test_without_the_extra_the_error_names_it(tmp_path, monkeypatch):
    """zarr missing: a model naming a store is a located error saying which extra to
    install; models without stores run as before."""
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    monkeypatch.setitem(sys.modules, "zarr", None)      # (import zarr raises ImportError)
    with pytest.raises(ModelError) as e:
        load_model(_write(tmp_path, _pool_model("in.zarr", [("y", "y.npy")])))
    assert e.value.path == "resources.x.initialValues.sourcePath"
    assert 'pip install "dmlops[dask]"' in e.value.message
    examples = Path(__file__).resolve().parent.parent / "examples"
    assert load_model(examples / "max_pooling2_indices.json").run(io.StringIO()) == []


def test_a_damaged_store_is_a_located_error(tmp_path, monkeypatch):
    """A chunk of the input store that cannot be decoded, met while computing: exit 2 at the
    target's command, nothing written."""
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    chunk = next(p for p in (tmp_path / "in.zarr").rglob("*")
                 if p.is_file() and p.name != "zarr.json")
    chunk.write_bytes(b"not a compressed chunk")
    rc, out, err = _run(_write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")])))
    assert rc == 2 and out == "" and "commands[1].targetPath" in err and "computing" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json"]


def test_a_file_where_the_store_goes_is_replaced(tmp_path, monkeypatch):
    """A plain file at the target's path is replaced by the store, and nothing is left
    aside."""
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    (tmp_path / "y.zarr").write_text("an old file")
    rc, _, err = _run(_write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")])))
    assert rc == 0, err
    assert (tmp_path / "y.zarr").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json", "y.zarr"]


def test_two_arrays_into_one_new_store(tmp_path, monkeypatch):
    """Two targets inside one store that does not exist yet: both arrays are there."""
    monkeypatch.chdir(tmp_path)
    x = _volume(tmp_path)
    rc, _, err = _run(_write(tmp_path, _pool_model(
        "in.zarr", [("y", "both.zarr/values"), ("i", "both.zarr/deep/indices")])))
    assert rc == 0, err
    y, i = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                           output_indices=True)
    both = str(tmp_path / "both.zarr")
    assert zarr.open_array(store=both, path="values", mode="r")[...].tobytes() == y.tobytes()
    assert np.array_equal(zarr.open_array(store=both, path="deep/indices", mode="r")[...], i)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["both.zarr", "in.zarr", "model.json"]


def test_a_lazy_dispatch_with_an_input_in_memory(tmp_path, monkeypatch):
    """Unpooling a zarr input at indices from a sequence initialiser (in memory, bound as
    usual, through an element offset): the in-memory result, here the input reversed."""
    monkeypatch.chdir(tmp_path)
    x = _volume(tmp_path)
    count = int(np.prod(X_SHAPE))
    # count + 2, count + 1, ..., 0: from element 3 on, count - 1 down to 0
    idx = {"initialValuesDataType": "UINT32",
           "initialValues": {"valueCount": count + 3, "valueStart": count + 2,
                             "valueDelta": -1}}
    model = _unpool_model(idx, {"name": "idx", "elementOffset": 3}, ["y.zarr"])
    rc, _, err = _run(_write(tmp_path, model))
    assert rc == 0, err
    got = zarr.open_array(store=str(tmp_path / "y.zarr"), mode="r")[...]
    assert got.tobytes() == x.reshape(-1)[::-1].reshape(X_SHAPE).tobytes()
