"""Work shared out among threads: a compiled task over a range of independent items.

The kernels are plain ``nogil`` functions ``task(lo, hi, *args)``, and ``parallel`` runs
them on ``numba.get_num_threads()`` threads (the calling thread included), each on its own
contiguous share of ``[0, n)``. Numba's ``prange`` would do the same from inside a kernel,
but its parallel passes cost about 6 s of compilation per signature, more than the task
they run, and the kernels are compiled once per data type.

Each item is written by one task only, so results never depend on the thread count.

    >>> import numpy as np
    >>> from numba import njit
    >>> @njit(nogil=True)
    ... def fill(lo, hi, out):
    ...     for i in range(lo, hi):
    ...         out[i] = i * i
    >>> out = np.zeros(6, np.int64)
    >>> parallel(fill, 6, out)
    >>> out.tolist()
    [0, 1, 4, 9, 16, 25]
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba

# The fewest outputs worth a thread of their own (read at call time). Handing a share to a
# pool thread and waiting for it costs about 60 µs on the 2-core VM we measure on (a sleeping
# vCPU is woken); 65536 outputs are 30-120 µs of one thread's work (padding to max pooling,
# from the benchmark's times). With 4096, small calls split and ran 2-3x slower (padding a
# [1, 3, 64, 64] by 16: 190 µs in two shares, 60 µs in one).
MIN_WORK = 1 << 16

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="dmlops")
        return _pool


def _forget_pool():         # a forked child has none of the parent's threads
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def parallel(task, n: int, *args, item_size: int = MIN_WORK) -> None:
    """Run ``task(lo, hi, *args)`` over ``[0, n)`` on up to ``numba.get_num_threads()``
    threads, each given at least ``MIN_WORK`` outputs' worth of items (an item writes about
    ``item_size`` outputs); returns when all are done."""
    threads = max(1, min(numba.get_num_threads(), n * max(1, int(item_size)) // MIN_WORK))
    if threads == 1:
        task(0, n, *args)
        return
    cuts = [n * i // threads for i in range(threads + 1)]
    pool = _workers()
    futures = [pool.submit(task, cuts[i], cuts[i + 1], *args) for i in range(1, threads)]
    try:
        task(0, cuts[1], *args)
    finally:
        for f in futures:
            f.result()
