"""How many threads the ``cpu`` backend's kernels use (SPEC 5: results never depend on it).

The count is ``set_num_threads(n)`` if called, else the environment variable
``DMLOPS_NUM_THREADS`` (read at call time), else the number of CPUs this process may use
(looked up again at most once a second: the look-up is a system call, a tenth of a small
call's time).

>>> import dmlops
>>> dmlops.set_num_threads(1)
>>> dmlops.get_num_threads()
1
>>> dmlops.set_num_threads(None)    # back to DMLOPS_NUM_THREADS or the usable CPUs
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import InvalidArgumentError

_chosen: int | None = None


def environ(name: str) -> str | None:
    """The environment variable ``name`` now (``os.environ.get``), read without encoding
    the name again at every call where the platform keeps ``os.environ`` as a dict of
    bytes (POSIX CPython): a call reads two variables, which cost 1 us each the usual way.

    >>> import os
    >>> os.environ["DMLOPS_EXAMPLE"] = "3"
    >>> environ("DMLOPS_EXAMPLE")
    '3'
    >>> del os.environ["DMLOPS_EXAMPLE"]
    >>> environ("DMLOPS_EXAMPLE") is None
    True
    """
    data = getattr(os.environ, "_data", None)
    if type(data) is dict and os.name == "posix":
        key = _KEYS.get(name)
        if key is None:
            key = _KEYS[name] = os.fsencode(name)
        value = data.get(key)
        return None if value is None else os.fsdecode(value)
    return os.environ.get(name)


_KEYS: dict[str, bytes] = {}


# (when the usable CPUs were last looked up, how many there were)
_cpus: tuple[float, int] = (float("-inf"), 1)
CPUS_FRESH_SECONDS = 1.0


def _usable_cpus() -> int:
    global _cpus
    now = time.monotonic()
    if now - _cpus[0] < CPUS_FRESH_SECONDS:
        return _cpus[1]
    try:
        n = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):      # not Linux
        n = max(1, os.cpu_count() or 1)
    _cpus = (now, n)
    return n


def _positive(value: object, origin: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{origin} = {value!r} must be a positive integer "
                                   f"(the number of threads the cpu kernels use)")
    return value


def set_num_threads(n: int | None) -> None:
    """Use ``n`` threads in the cpu kernels (``None``: back to the default)."""
    global _chosen
    _chosen = None if n is None else _positive(n, "set_num_threads(n)")


class _Local(threading.local):
    alone = False       # (a class default: a missing attribute costs an exception per call)


_local = _Local()


@contextmanager
def on_this_thread() -> Iterator[None]:
    """Within it, kernels that this thread calls run on this thread alone: inside a Dask
    task the scheduler's threads are the parallelism, and a pool of the kernels' own beside
    them would oversubscribe the cores. Other threads keep their count.

    >>> with on_this_thread():
    ...     get_num_threads()
    1
    """
    was = _local.alone
    _local.alone = True
    try:
        yield
    finally:
        _local.alone = was


def get_num_threads() -> int:
    """The number of threads the cpu kernels use now."""
    if _local.alone:
        return 1
    if _chosen is not None:
        return _chosen
    env = environ("DMLOPS_NUM_THREADS")
    if env:
        value: int | str
        try:
            value = int(env)
        except ValueError:
            value = env
        return _positive(value, "DMLOPS_NUM_THREADS")
    return _usable_cpus()
