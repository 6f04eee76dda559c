"""Compile the suite's kernels before its tests run: in parallel, and each kernel once.

A cold run of the suite is mostly Numba compiling kernels (about 1,000 CPU-seconds on this
project's 2-core machine, against about 70 s of testing). Left to the test workers, two of
them would often compile the same kernel at once (a fifth of that time, measured), and the
last one could be left compiling alone. Here the kernels are compiled first, in groups that
share kernels (a data type's max pooling, its indices and its gradient), each group in one
process, the largest first; the workers then load every kernel from the on-disk cache.

This only moves compilation: tests run the very kernels they would have compiled. A marker
beside the cache skips it when this table's kernels are already in the cache.
"""

from __future__ import annotations

import hashlib
import os
import time
from functools import partial
from pathlib import Path

import numpy as np

FLOATS = ("float16", "float32", "float64")
INTEGERS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def _x(dtype):
    return np.arange(2 * 3 * 5 * 6).astype(dtype).reshape(2, 3, 5, 6)


def _max(dt):
    import dmlops as dml

    dml.max_pooling(_x(dt), 3, strides=2, start_padding=1, end_padding=1, backend="cpu")
    dml.max_pooling(_x(dt), 3, strides=2, start_padding=1, end_padding=1,
                    output_indices=True, backend="cpu")
    if dt in FLOATS:
        dml.max_pooling_grad(_x(dt), np.ones((2, 3, 3, 3), dt), 3, strides=2,
                             start_padding=1, end_padding=1, backend="cpu")


def _float_family(dt):
    import dmlops as dml

    dml.average_pooling(_x(dt), 2, backend="cpu")
    dml.average_pooling_grad(np.ones((2, 3, 4, 5), dt), 2, input_sizes=(5, 6), backend="cpu")
    dml.lp_pooling(_x(dt), 2, backend="cpu")
    dml.roi_pooling(_x(dt), np.array([[0, 0, 0, 3, 3]], dt), spatial_scale=1.0,
                    pooled_size=2, backend="cpu")


def _quantized(din):
    import dmlops as dml

    for dout in ("int8", "uint8"):
        for window, strides in ((2, 2), (3, 1), (12, 1)):
            dml.quantized_linear_average_pooling(
                _x(din), 0.5, 0, 0.5, 0, window, strides=strides,
                start_padding=window // 2, end_padding=window // 2, output_dtype=dout,
                backend="cpu")


def _moves():
    import dmlops as dml

    for dt in ("uint8", "uint16", "float32", "float64"):
        dml.padding(_x(dt), (0, 0, 1, 1), (0, 0, 1, 1), mode="reflection", backend="cpu")
        for it in ("uint32", "int64"):
            dml.max_unpooling(_x(dt), np.arange(180).astype(it).reshape(2, 3, 5, 6),
                              (2, 3, 5, 6), backend="cpu")


# (name, compile), largest first
GROUPS = ([(f"max {dt}", partial(_max, dt)) for dt in FLOATS + INTEGERS]
          + [(f"quantized {dt}", partial(_quantized, dt)) for dt in ("uint8", "int8")]
          + [(f"float family {dt}", partial(_float_family, dt)) for dt in FLOATS]
          + [("padding, unpooling", _moves)])


def run_group(name: str) -> float:
    """Compile one group (in a worker process); its seconds."""
    from dmlops.backends.cpu import _timed

    return _timed(dict(GROUPS)[name])


def _marker() -> Path:
    from dmlops.backends.cpu._cache import SOURCES, cache_dir

    table = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return Path(cache_dir()) / SOURCES / f"precompiled-{table}"


def precompile(jobs: int, say=print) -> None:
    """Compile ``GROUPS`` in ``jobs`` spawned processes, unless the marker says done."""
    from dmlops.backends.cpu import in_workers

    marker = _marker()
    if marker.exists():
        return
    say(f"compiling the suite's kernels first, in {jobs} processes "
        f"(once per cache: {marker.parent})")
    t0 = time.perf_counter()
    try:
        for _ in in_workers(run_group, [name for name, _ in GROUPS], jobs):
            pass
    except Exception as e:          # the tests then compile as they go, and show the failure
        say(f"compiling first failed ({type(e).__name__}: {e}); the tests compile as they go")
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    say(f"kernels compiled in {time.perf_counter() - t0:.0f} s")


def wanted(config) -> int:
    """How many processes to compile in: the xdist workers' number when this is the
    controller of a parallel run of the whole suite, else 0 (a worker, one process, or a
    selection of tests, which would not use most of the table)."""
    if hasattr(config, "workerinput") or os.environ.get("DMLOPS_TEST_PRECOMPILE") == "0":
        return 0
    import pytest

    if getattr(config, "args_source", None) != pytest.Config.ArgsSource.TESTPATHS:
        return 0
    n = getattr(config.option, "numprocesses", None)
    if not isinstance(n, int) or n < 2:
        return 0
    return min(n, getattr(config.option, "maxprocesses", None) or n)
