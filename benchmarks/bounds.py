"""What bounds a workload's time (a profile without hardware counters, which this machine's
virtual CPUs do not expose): the cpu backend's time with two threads and with one, its rate
in GB/s (bytes read once + written once, as run.py counts them) beside the copy bandwidth,
and its rate at one thread when its data fits in the core's L2 cache (the workload's planes
cut down to about 1 MiB of input, timed in a loop; each call's Python overhead of about
15 µs counted in, so this rate is a lower bound).

Reading it: a kernel as fast in the cache as on the whole input is bound by its own
instructions (two threads then give about twice the speed); one much faster in the cache,
which two threads speed up little, waits on memory.

    python benchmarks/bounds.py [IDS]      e.g. 1,2a,2b,4,7,8a,9b,10,10a,10b
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers            # noqa: E402
import run as runner    # noqa: E402

import dmlops           # noqa: E402

CACHE_INPUT_BYTES = 1 << 20


def _median_seconds(call, seconds: float) -> float:
    call()
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _in_cache(w: peers.Workload) -> peers.Workload:
    """``w`` with its input about CACHE_INPUT_BYTES: fewer planes (N = 1, fewer channels),
    or for channels-last data, whose channels are the kernel's innermost run, every channel
    and a smaller square plane."""
    item = np.dtype(w.dtype).itemsize
    c, spatial = w.shape[1], w.shape[2:]
    if w.channels_last:
        side = int((CACHE_INPUT_BYTES / (c * item)) ** (1 / len(spatial)))
        return dataclasses.replace(w, shape=(1, c) + tuple(min(s, side) for s in spatial))
    planes = max(1, CACHE_INPUT_BYTES // (math.prod(spatial) * item))
    return dataclasses.replace(w, shape=(1, min(c, planes)) + tuple(spatial))


def profile(w: peers.Workload, copy_gbps: float, seconds: float) -> str:
    data = peers.Data(0)
    full = peers._dmlops_call("cpu")(w, data).run
    small_w = _in_cache(w)
    small = peers._dmlops_call("cpu")(small_w, data).run
    dmlops.set_num_threads(2)
    t2 = _median_seconds(full, seconds)
    dmlops.set_num_threads(1)
    t1 = _median_seconds(full, seconds)
    tc = _median_seconds(small, seconds)
    dmlops.set_num_threads(None)
    gb = w.nbytes / 1e9
    return (f"{w.id:4} {w.title[:34]:34} {t2 * 1e3:8.2f} {gb / t2:6.1f} "
            f"{100 * gb / t2 / copy_gbps:5.0f} {t1 * 1e3:8.2f} {t1 / t2:5.2f} {gb / t1:6.1f} "
            f"{small_w.nbytes / 1e9 / tc:7.1f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="?", default=None, help="workload ids, comma-separated")
    ap.add_argument("--seconds", type=float, default=1.0, help="per timing")
    args = ap.parse_args(argv)
    ids = None if args.ids is None else set(args.ids.split(","))
    copy = runner.copy_bandwidth(runs=5)
    print(f"dmlops {dmlops.__version__}, cpu backend; copy bandwidth {copy:.1f} GB/s "
          f"(2 threads, 1 GiB)")
    print(f"{'id':4} {'workload':34} {'ms 2t':>8} {'GB/s':>6} {'%copy':>5} {'ms 1t':>8} "
          f"{'1t/2t':>5} {'GB/s1':>6} {'cache1':>7}")
    for w in peers.WORKLOADS:
        if ids is None or w.id in ids:
            print(profile(w, copy, args.seconds), flush=True)


if __name__ == "__main__":
    main()
