"""Shapes other than the benchmark's (a script, not a test): short rows (7 to 28 wide), long
rows (a 3584-wide plane), odd sizes and [16, 96, 100, 100], 3x3 windows at strides 1 and 2
with padding 1; the cpu backend's median in ms and the bytes it moves per second (read once
and written once).

    python benchmarks/shapes.py [--op avg|max] [--dtype float32] [--stride 2] [--reps 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dmlops

SHAPES = [(32, 64, 112, 112), (64, 256, 28, 28), (64, 512, 14, 14), (128, 512, 7, 7),
          (32, 64, 448, 28), (1, 1, 3584, 3584), (1, 1, 3584, 1000), (16, 96, 100, 100),
          (8, 3, 601, 599)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", choices=["avg", "max"], default="avg")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--stride", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    fn = dmlops.average_pooling if args.op == "avg" else dmlops.max_pooling
    geo = dict(strides=args.stride, start_padding=1, end_padding=1)
    print(f"{args.op} pooling 3x3, stride {args.stride}, {args.dtype}; median ms")
    print(f"{'shape':22}{'ms':>9}{'GB/s':>9}")
    for shape in SHAPES:
        x = np.random.default_rng(0).standard_normal(shape).astype(args.dtype)
        y = np.empty(dmlops.pooling_output_sizes(shape, 3, **geo), x.dtype)
        fn(x, 3, out=y, **geo)
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            fn(x, 3, out=y, **geo)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"{str(list(shape)):22}{med * 1e3:9.2f}{(x.nbytes + y.nbytes) / med / 1e9:9.2f}",
              flush=True)

if __name__ == "__main__":
    main()
