"""``dmlops run`` with zarr arrays on an object store (SPEC 6, issue 43 item 2): a real
S3-compatible server (moto's, on 127.0.0.1, started and stopped here), sources and targets as
``s3://`` URLs with ``--storage-option``, in this process's threads and on a cluster of
worker processes; on a store without rename the chunks go first and each array's metadata
last, and a failure removes what was written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlops as dml

zarr = pytest.importorskip("zarr")
s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_zarr_models import X_SHAPE, _pool_model, _run, _unpool_model  # noqa: E402

sys.path.pop(0)
BUCKET = "volumes"
# (a few chunks: each is a request to the server, the tests' time)
CHUNKS = (1, 3, 10, 9)


def _fs(options):
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    return fs


def _clear(options):
    fs = _fs(options)
    for p in fs.ls(BUCKET):
        fs.rm(p, recursive=True)


def _args(options):
    return [a for k, v in options.items() for a in ("--storage-option", f"{k}={v}")]


def _volume_on_s3(options, name="in.zarr", component=None):
    x = np.random.default_rng(2).standard_normal(X_SHAPE).astype(np.float32)
    url = f"s3://{BUCKET}/{name}"
    if component is None:
        z = zarr.create_array(store=url, shape=x.shape, chunks=CHUNKS, dtype=x.dtype,
                              storage_options=options)
    else:
        g = zarr.open_group(store=url, mode="a", storage_options=options)
        z = g.create_array(component, shape=x.shape, chunks=CHUNKS, dtype=x.dtype)
    z[...] = x
    return x


def _write(tmp_path, model):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    return path


@pytest.mark.parametrize("on_cluster", [False, True])
def test_from_and_to_s3(tmp_path, s3, request, on_cluster):
    """A group's array read from S3, values to a new store and indices into a group of it
    on S3, a .npy beside the model: the in-memory results bit for bit; nothing else in the
    bucket."""
    _clear(s3)
    x = _volume_on_s3(s3, "g.zarr", "raw/volume")
    model = _pool_model(f"s3://{BUCKET}/g.zarr/raw/volume",
                        [("y", f"s3://{BUCKET}/y.zarr"), ("i", f"s3://{BUCKET}/out.zarr/pool/i"),
                         ("i", str(tmp_path / "i.npy"))])
    extra = ["--scheduler", request.getfixturevalue("cluster").scheduler_address] \
        if on_cluster else []
    rc, out, err = _run(_write(tmp_path, model), *_args(s3), *extra)
    assert rc == 0, err
    y, i = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                           output_indices=True)
    got = zarr.open_array(store=f"s3://{BUCKET}/y.zarr", mode="r", storage_options=s3)
    assert got[...].tobytes() == y.tobytes()
    zi = zarr.open_array(store=f"s3://{BUCKET}/out.zarr", path="pool/i", mode="r",
                         storage_options=s3)
    assert zi[...].tobytes() == i.tobytes()
    assert np.array_equal(np.load(tmp_path / "i.npy"), i.reshape(-1))
    assert sorted(p.rsplit("/", 1)[-1] for p in _fs(s3).ls(BUCKET)) == \
        ["g.zarr", "out.zarr", "y.zarr"]


def test_the_metadata_comes_last(tmp_path, s3, monkeypatch):
    """While the chunks are written no reader can open the target: its zarr.json appears
    only after every chunk of every target is in the store."""
    from dmlops import _zarrio
    _clear(s3)
    _volume_on_s3(s3)
    seen = []
    store = _zarrio.Session.store

    def watching(self, sources, targets):
        store(self, sources, targets)
        fs = _fs(s3)
        for name in ("a.zarr", "b.zarr"):
            keys = fs.find(f"{BUCKET}/{name}")
            seen.append((name, len(keys), any(k.endswith("zarr.json") for k in keys)))
    monkeypatch.setattr(_zarrio.Session, "store", watching)
    model = _pool_model(f"s3://{BUCKET}/in.zarr", [("y", f"s3://{BUCKET}/a.zarr"),
                                                   ("i", f"s3://{BUCKET}/b.zarr")])
    rc, _, err = _run(_write(tmp_path, model), *_args(s3))
    assert rc == 0, err
    assert [(name, metadata) for name, _, metadata in seen] == [("a.zarr", False),
                                                                ("b.zarr", False)]
    assert all(count > 0 for _, count, _ in seen)
    assert zarr.open_array(store=f"s3://{BUCKET}/a.zarr", mode="r", storage_options=s3).shape \
        == (2, 3, 10, 9)


def test_a_failing_model_leaves_nothing_on_s3(tmp_path, s3):
    """An index outside the output met while computing: exit 2 at the command, and neither
    chunks nor metadata of the targets left in the bucket."""
    _clear(s3)
    _volume_on_s3(s3)
    idx = np.zeros(X_SHAPE, np.uint32)
    idx[1, 2, 19, 17] = 10**6
    zarr.create_array(store=f"s3://{BUCKET}/idx.zarr", shape=X_SHAPE, chunks=CHUNKS,
                      dtype="uint32", storage_options=s3)[...] = idx
    model = _unpool_model({"initialValues": {"sourcePath": f"s3://{BUCKET}/idx.zarr"}}, "idx",
                          [f"s3://{BUCKET}/new.zarr", f"s3://{BUCKET}/grp.zarr/deep/new"])
    model["resources"]["x"] = {"initialValues": {"sourcePath": f"s3://{BUCKET}/in.zarr"}}
    rc, out, err = _run(_write(tmp_path, model), *_args(s3))
    assert rc == 2 and "commands[1].targetPath" in err and "is outside" in err
    assert sorted(p.rsplit("/", 1)[-1] for p in _fs(s3).ls(BUCKET)) == ["idx.zarr", "in.zarr"]


def test_an_existing_array_on_s3_is_not_replaced(tmp_path, s3):
    """An object store has no rename: a target that exists is an error naming it (exit 2),
    the array as it was."""
    _clear(s3)
    _volume_on_s3(s3)
    old = zarr.create_array(store=f"s3://{BUCKET}/old.zarr", shape=(3,), dtype="int8",
                            storage_options=s3)
    old[...] = [1, 2, 3]
    model = _pool_model(f"s3://{BUCKET}/in.zarr", [("y", f"s3://{BUCKET}/old.zarr")])
    rc, _, err = _run(_write(tmp_path, model), *_args(s3))
    assert rc == 2 and "commands[1].targetPath" in err
    assert f"'s3://{BUCKET}/old.zarr' exists" in err
    got = zarr.open_array(store=f"s3://{BUCKET}/old.zarr", mode="r", storage_options=s3)
    assert got[...].tolist() == [1, 2, 3]


def test_storage_options_are_checked_and_read_as_json(tmp_path, capsys):
    """--storage-option takes KEY=VALUE, VALUE as JSON where it reads as JSON; anything else
    is a usage error (exit 2)."""
    from dmlops.cli import _storage_option, main
    assert _storage_option("anon=true") == ("anon", True)
    assert _storage_option("endpoint_url=http://h:9000") == ("endpoint_url", "http://h:9000")
    assert _storage_option('client_kwargs={"region_name": "x"}') == \
        ("client_kwargs", {"region_name": "x"})
    assert main(["run", "m.json", "--storage-option", "novalue"]) == 2
    assert "'novalue' is not KEY=VALUE" in capsys.readouterr().err


def test_a_url_names_a_zarr_array(tmp_path, s3):
    """A URL target that names no zarr array is an error at the command (exit 2)."""
    _clear(s3)
    _volume_on_s3(s3)
    model = _pool_model(f"s3://{BUCKET}/in.zarr", [("y", f"s3://{BUCKET}/y.npy")])
    rc, _, err = _run(_write(tmp_path, model), *_args(s3))
    assert rc == 2 and "commands[1].targetPath" in err and "a URL names a zarr array" in err


def test_file_and_memory_urls(tmp_path, monkeypatch):
    """A file:// source is the local path it names; a memory:// target (fsspec's in-process
    store) takes the object-store route, metadata last: the in-memory results."""
    monkeypatch.chdir(tmp_path)
    x = np.random.default_rng(7).standard_normal(X_SHAPE).astype(np.float32)
    zarr.create_array(store=str(tmp_path / "in.zarr"), shape=X_SHAPE, chunks=CHUNKS,
                      dtype=x.dtype)[...] = x
    model = _pool_model(f"file://{tmp_path / 'in.zarr'}", [("y", "memory://dmlops-test/y.zarr")])
    rc, _, err = _run(_write(tmp_path, model))
    assert rc == 0, err
    y = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1)
    assert zarr.open_array(store="memory://dmlops-test/y.zarr", mode="r")[...].tobytes() == \
        y.tobytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json"]
