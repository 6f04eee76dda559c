"""``dmlops run --scheduler`` on a real cluster (SPEC 6, issue 43 item 1): a LocalCluster of
worker processes started in a working directory of their own, never the model's. The
project's zarr models give the in-memory results bit for bit; a store the workers cannot
reach, a chunk write that fails and a target left incomplete are each exit 2 naming the
command and the store, with nothing readable left behind."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlops as dml
from dmlops.dxdispatch import ModelError, load_model

zarr = pytest.importorskip("zarr")
distributed = pytest.importorskip("distributed")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_zarr_models import X_SHAPE, _pool_model, _run, _unpool_model, _volume, _write  # noqa: E402

sys.path.pop(0)
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "zarr"


def test_the_example_model_on_a_cluster(tmp_path, monkeypatch, cluster):
    """examples/zarr/max_pooling_volume.json, run from its folder by relative paths: the
    in-memory max pooling, bit for bit."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import make_volume
    finally:
        sys.path.remove(str(EXAMPLES))
    make_volume.volume(256).to_zarr(str(tmp_path / "volume.zarr"))
    shutil.copy(EXAMPLES / "max_pooling_volume.json", tmp_path / "model.json")
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run("model.json", "--scheduler", cluster.scheduler_address)
    assert rc == 0, err
    x = zarr.open_array(store=str(tmp_path / "volume.zarr"), mode="r")[...]
    y = zarr.open_array(store=str(tmp_path / "pooled.zarr"), mode="r")[...]
    assert y.tobytes() == dml.max_pooling(x, 3, strides=2, start_padding=1).tobytes()


def test_the_test_models_on_a_cluster(tmp_path, monkeypatch, cluster):
    """A group's array in; values, indices (one target inside a group, an all-zero chunk
    among them) and a .npy out; then a lazy unpooling: each the in-memory result."""
    monkeypatch.chdir(tmp_path)
    x = _volume(tmp_path, "g.zarr", "raw/volume")
    _volume(tmp_path)
    # the first batch item all zeros: chunks of y that hold only the fill value, written too
    x[0] = 0.0
    zarr.open_array(store=str(tmp_path / "g.zarr"), path="raw/volume", mode="r+")[...] = x
    model = _pool_model("g.zarr/raw/volume", [("y", "y.zarr"), ("i", "out.zarr/pool/indices"),
                                              ("i", "i.npy")])
    _write(tmp_path, model)
    rc, _, err = _run("model.json", "--scheduler", cluster.scheduler_address)
    assert rc == 0, err
    y, i = dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                           output_indices=True)
    assert zarr.open_array(store=str(tmp_path / "y.zarr"), mode="r")[...].tobytes() == \
        y.tobytes()
    zi = zarr.open_array(store=str(tmp_path / "out.zarr"), path="pool/indices", mode="r")
    assert zi[...].tobytes() == i.tobytes()
    assert np.array_equal(np.load(tmp_path / "i.npy"), i.reshape(-1))

    # unpooling in.zarr at indices that reverse it (a sequence, in memory)
    count = int(np.prod(X_SHAPE))
    idx = {"initialValuesDataType": "UINT32",
           "initialValues": {"valueCount": count, "valueStart": count - 1, "valueDelta": -1}}
    _write(tmp_path, _unpool_model(idx, "idx", ["r.zarr"]))
    rc, _, err = _run("model.json", "--scheduler", cluster.scheduler_address)
    assert rc == 0, err
    z = zarr.open_array(store=str(tmp_path / "in.zarr"), mode="r")[...]
    got = zarr.open_array(store=str(tmp_path / "r.zarr"), mode="r")[...]
    assert got.tobytes() == z.reshape(-1)[::-1].reshape(X_SHAPE).tobytes()


def test_a_store_the_workers_cannot_reach(tmp_path, monkeypatch, cluster):
    """The source store gone between the model's check and its tasks (as on a worker that
    does not see the client's file system): exit 2 naming the command and the store, where
    a pickled array would have read fill values and reported success."""
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    model = load_model(_write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")])))
    (tmp_path / "in.zarr").rename(tmp_path / "elsewhere.zarr")
    with pytest.raises(ModelError) as e:
        model.run(scheduler=cluster.scheduler_address)
    assert e.value.path == "commands[1].targetPath"
    assert f"cannot read the zarr array {str(tmp_path / 'in.zarr')!r} where the task runs" \
        in e.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.zarr", "model.json"]


class _FailingWrites(distributed.WorkerPlugin):
    """Worker 0's second chunk write raises, as on a full disk; every other chunk write takes
    0.3 s, so that the other worker is inside one when the failure is reported."""

    def setup(self, worker):
        import asyncio
        from zarr.storage import LocalStore
        self.saved, calls, first = LocalStore.set, [], worker.name == 0

        async def slow_or_failing(store, key, value):
            if "/c/" in f"/{key}":
                calls.append(key)
                if first and len(calls) == 2:
                    raise OSError(28, "No space left on device")
                await asyncio.sleep(0.3)
            return await self.saved(store, key, value)
        LocalStore.set = slow_or_failing

    def teardown(self, worker):
        from zarr.storage import LocalStore
        LocalStore.set = self.saved


def _idle(client, timeout=30.0):
    """Back once the workers run no task."""
    import time
    deadline = time.monotonic() + timeout
    while any(client.run(lambda dask_worker: len(dask_worker.state.executing)).values()):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_chunk_write_that_fails_on_a_worker(tmp_path, monkeypatch, cluster):
    """Exit 2 at the target's command naming the failure, once the writes still running
    have ended: no store left (none made again by a late write), an existing one as it
    was."""
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    old = zarr.create_array(store=str(tmp_path / "old.zarr"), shape=(3,), dtype="int8")
    old[...] = [1, 2, 3]
    path = _write(tmp_path, _pool_model("in.zarr", [("y", "new.zarr"), ("i", "old.zarr")]))
    with distributed.Client(cluster) as client:
        client.register_plugin(_FailingWrites(), name="failing-writes")
        try:
            rc, out, err = _run(path, "--scheduler", cluster.scheduler_address)
            _idle(client)
        finally:
            client.unregister_worker_plugin("failing-writes")
    assert rc == 2 and "commands[1].targetPath" in err and "No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json", "old.zarr"]
    assert zarr.open_array(store=str(tmp_path / "old.zarr"), mode="r")[...].tolist() == [1, 2, 3]


class _DyingWrite(distributed.WorkerPlugin):
    """The first chunk write on any worker ends its process (a machine lost, the kernel's
    OOM killer): the task is lost with the worker."""

    def __init__(self, flag):
        self.flag = str(flag)

    def setup(self, worker):
        from zarr.storage import LocalStore
        saved, flag = LocalStore.set, self.flag

        async def dying(store, key, value):
            if "/c/" in f"/{key}":
                try:
                    os.close(os.open(flag, os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    pass
                else:
                    os._exit(1)
            return await saved(store, key, value)
        LocalStore.set = dying


def test_a_task_lost_with_its_worker(tmp_path, tmp_path_factory, monkeypatch):
    """A worker process dies in a chunk write, on a cluster that gives a task no second
    worker (allowed-failures 0; by default Dask reruns it elsewhere, and the target is then
    checked complete): exit 2 at the target's command naming the store and the lost worker;
    nothing left behind."""
    import cloudpickle
    import dask
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.chdir(tmp_path_factory.mktemp("dying-workers"))
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.register_plugin(_DyingWrite(tmp_path / "died"), name="dying-write")
        monkeypatch.chdir(tmp_path)
        _volume(tmp_path)
        path = _write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")]))
        rc, out, err = _run(path, "--scheduler", cluster.scheduler_address)
    assert (tmp_path / "died").exists()
    assert rc == 2 and "commands[1].targetPath" in err, err
    assert str(tmp_path / "y.zarr") in err and "died" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["died", "in.zarr", "model.json"]


def test_a_target_left_incomplete_is_an_error(tmp_path, monkeypatch, cluster):
    """A chunk missing after the writes (a worker that wrote to a disk of its own, a write
    lost): exit 2 naming the store; nothing left behind."""
    from dmlops import _zarrio
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    store = _zarrio.Session.store

    def losing_a_chunk(self, sources, targets):
        store(self, sources, targets)
        chunk = next(p for p in Path(str(targets[0].store.root)).rglob("*")
                     if p.is_file() and p.name != "zarr.json")
        chunk.unlink()
    monkeypatch.setattr(_zarrio.Session, "store", losing_a_chunk)
    rc, out, err = _run(_write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")])),
                        "--scheduler", cluster.scheduler_address)
    assert rc == 2 and "commands[1].targetPath" in err
    assert f"the zarr target {str(tmp_path / 'y.zarr')!r} is incomplete" in err
    have, need = map(int, re.search(r"(\d+) of its (\d+) chunks are in the store", err).groups())
    assert have == need - 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json"]


def test_a_scheduler_that_cannot_be_reached(tmp_path, monkeypatch):
    """--scheduler at an address where none listens: exit 2 saying so, nothing written."""
    from dmlops import _zarrio
    monkeypatch.chdir(tmp_path)
    _volume(tmp_path)
    path = _write(tmp_path, _pool_model("in.zarr", [("y", "y.zarr")]))
    monkeypatch.setattr(_zarrio, "CONNECT_TIMEOUT", "1s")
    rc, _, err = _run(path, "--scheduler", "tcp://127.0.0.1:9")
    assert rc == 2 and "cannot reach the dask.distributed scheduler" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "model.json"]
