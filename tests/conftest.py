"""Shared test configuration: a deterministic hypothesis profile for CI.

``derandomize=True`` makes every property test draw the same examples on every run, so CI is
deterministic; ``HYPOTHESIS_PROFILE=explore`` switches to random exploration locally.
"""

import os
import socket
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # so that ``import oracles`` works

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile(
    "explore",
    derandomize=False,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def shard(items, spec):
    """(kept, left out) of ``items`` for ``spec`` "i/n": every n-th from the i-th (0-based), so
    that n processes side by side share a run; every n-th, not a block, spreads the heavy
    ones (tests/test_sharding.py)."""
    i, n = (int(part) for part in spec.split("/"))
    if not 0 <= i < n:
        raise pytest.UsageError(f"DMLOPS_TEST_SHARD = {spec!r}: i/n with 0 <= i < n")
    return items[i::n], [t for k, t in enumerate(items) if k % n != i]


def pytest_collection_modifyitems(config, items):
    """``DMLOPS_TEST_SHARD=i/n``: one share of the collected tests (shard; tests/aarch64.sh,
    whose emulated interpreter has no pytest-xdist)."""
    spec = os.environ.get("DMLOPS_TEST_SHARD")
    if spec:
        items[:], left = shard(items, spec)
        config.hook.pytest_deselected(items=left)


# Shared by tests/test_cluster.py, test_object_stores.py and test_pyramid.py, started once per
# test process (each start costs seconds: worker processes importing Dask, zarr and s3fs).
X_SHAPE = (2, 3, 20, 18)        # (test_zarr_models's)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """A LocalCluster of two worker processes whose working directory is a folder of their
    own, which holds a decoy ``in.zarr`` of zeros: a task that opened a model's relative
    path there would read it."""
    distributed = pytest.importorskip("distributed")
    zarr = pytest.importorskip("zarr")
    home = tmp_path_factory.mktemp("workers")
    zarr.create_array(store=str(home / "in.zarr"), shape=X_SHAPE, chunks=(1, 2, 7, 8),
                      dtype="float32", fill_value=0.0)[...] = 0
    before = os.getcwd()
    os.chdir(home)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as c:
            with distributed.Client(c) as client:
                assert set(client.run(os.getcwd).values()) == {str(home)}
            os.chdir(before)
            yield c
    finally:
        os.chdir(before)


@pytest.fixture(scope="session")
def s3():
    """moto's S3 server on a free port of 127.0.0.1, with a bucket "volumes": the options
    that reach it (the storage options a user passes)."""
    moto_server = pytest.importorskip("moto.server")
    s3fs = pytest.importorskip("s3fs")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    options = {"key": "testing", "secret": "testing",
               "endpoint_url": f"http://127.0.0.1:{port}"}
    try:
        fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
        if not fs.exists("volumes"):    # (moto keeps its buckets per process, across servers)
            fs.mkdir("volumes")
        yield options
    finally:
        server.stop()
