"""Mid-sized calls at one thread and at all of them (a script, not a test): what sharing a
call out among threads gains where the call is only tens of microseconds of work, in a loop
of calls (the pool's threads awake) and with a pause before each call (asleep: the pool's
threads wake late and the caller takes their shares).

For each operator and each plane count C, max and average pooling of [1, C, 112, 112]
(3x3, stride 2, padding 1) and reflection padding by 4: the median µs per call at one
thread and at `--threads` (2), and their ratio.

    python benchmarks/threads.py [--threads 2] [--calls 400] [--pause-ms 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dmlops


def _median_us(call, calls: int, pause: float) -> float:
    call()
    times = []
    for _ in range(calls):
        if pause:
            time.sleep(pause)
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--pause-ms", type=float, default=2.0)
    a = ap.parse_args()
    pool = dict(strides=2, start_padding=1, end_padding=1)
    print(f"dmlops {dmlops.__version__}; µs per call (median), 1 thread / {a.threads} threads")
    print(f"{'call':34} {'in a loop':>22} {'after a pause':>22}")
    for c in (8, 16, 32, 64):
        x = np.random.default_rng(0).standard_normal((1, c, 112, 112), dtype=np.float32)
        y = np.empty((1, c, 56, 56), np.float32)
        p = np.empty((1, c, 120, 120), np.float32)
        calls = {
            "max_pooling": lambda: dmlops.max_pooling(x, 3, out=y, **pool),
            "average_pooling": lambda: dmlops.average_pooling(x, 3, out=y, **pool),
            "padding, reflection": lambda: dmlops.padding(x, (0, 0, 4, 4), (0, 0, 4, 4),
                                                          mode="reflection", out=p),
        }
        for name, call in calls.items():
            cells = []
            for pause in (0.0, a.pause_ms / 1e3):
                t = []
                for n in (1, a.threads):
                    dmlops.set_num_threads(n)
                    t.append(_median_us(call, a.calls, pause))
                cells.append(f"{t[0]:7.1f} / {t[1]:6.1f} ({t[1] / t[0]:.2f})")
            dmlops.set_num_threads(None)
            print(f"{name + f' [1,{c},112,112]':34} {cells[0]:>22} {cells[1]:>22}")


if __name__ == "__main__":
    main()
