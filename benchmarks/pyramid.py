"""OME-Zarr pyramids: dmlops against ngff-zarr's to_multiscales on the same input.

    python benchmarks/pyramid.py [--gib 1] [--levels 4] [--repeats 3] [--scheduler ADDRESS]

A float32 volume (1, Z, Y, X) of --gib GiB is generated block by block (each 64^3 chunk
from its own seed: never whole in memory) and pyramided into a new zarr store in a temporary
folder: dmlops (`dmlops.pyramid` + `dmlops.write_pyramid`, 2x2x2 average, IncludePadding
false) and ngff-zarr (`to_multiscales` with its DASK_BIN_SHRINK method, the same 2x2x2 mean,
then `to_ngff_zarr`), interleaved, each run in a new process so that its peak resident
memory is its own. Reported: the median wall time, the source's GB per second, the peak
resident memory (MiB). Both write NGFF 0.5 in zarr v3 with the same chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CHUNK = 64


def volume(gib: float):
    """(1, Z, Y, X) float32 of about ``gib`` GiB, Z = Y = X / 4 rounded to chunks."""
    import dask.array as da
    import numpy as np

    side = int(round((gib * 2**30) ** (1 / 3) / CHUNK)) * CHUNK or CHUNK   # (4 bytes x side^3 / 4)
    shape = (1, max(CHUNK, side // 4), side, side)

    def block(block_info=None):
        info = block_info[None]
        seed = int(np.ravel_multi_index(info["chunk-location"], info["num-chunks"]))
        return np.random.default_rng(seed).standard_normal(info["chunk-shape"],
                                                           dtype=np.float32)
    chunks = tuple((CHUNK,) * (n // CHUNK) if n > 1 else (1,) for n in shape)
    return da.map_blocks(block, dtype=np.float32, chunks=chunks)


def run_one(who: str, gib: float, levels: int, scheduler: str | None) -> dict[str, float]:
    """One pyramid, in this process: its seconds and peak resident MiB."""
    vol = volume(gib)
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "pyramid.zarr")
        start = time.perf_counter()
        if who == "dmlops":
            import dmlops
            lv = dmlops.pyramid(vol, levels, method="average", axes="czyx")
            dmlops.write_pyramid(lv, target, axes="czyx", method="average",
                                 scheduler=scheduler)
        else:
            import ngff_zarr as nz
            image = nz.to_ngff_image(vol, dims=("c", "z", "y", "x"))
            ms = nz.to_multiscales(image, scale_factors=[2 ** i for i in range(1, levels)],
                                   method=nz.Methods.DASK_BIN_SHRINK,
                                   chunks=(1, CHUNK, CHUNK, CHUNK))
            nz.to_ngff_zarr(target, ms, version="0.5")
        seconds = time.perf_counter() - start
    return {"seconds": seconds,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gib": vol.nbytes / 2**30}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--levels", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scheduler", default=None)
    parser.add_argument("--one", choices=("dmlops", "ngff-zarr"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.gib, args.levels, args.scheduler)))
        return
    runs: dict[str, list[dict[str, float]]] = {"dmlops": [], "ngff-zarr": []}
    for r in range(args.repeats):
        for who in runs:
            cmd = [sys.executable, __file__, "--one", who, "--gib", str(args.gib),
                   "--levels", str(args.levels)]
            if args.scheduler:
                cmd += ["--scheduler", args.scheduler]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs[who].append(json.loads(out.strip().splitlines()[-1]))
            print(f"run {r + 1} {who}: {runs[who][-1]['seconds']:.2f} s", file=sys.stderr)
    gib = runs["dmlops"][0]["gib"]
    print(f"pyramid of a {gib:.2f} GiB float32 volume, {args.levels} levels, 2x2x2 average, "
          f"{CHUNK}^3 chunks, {args.repeats} runs each (medians)")
    print(f"{'':10} {'seconds':>8} {'GB/s':>6} {'peak MiB':>9}")
    for who, rs in runs.items():
        s = statistics.median(r["seconds"] for r in rs)
        peak = statistics.median(r["peak_mib"] for r in rs)
        print(f"{who:10} {s:8.2f} {gib * 2**30 / 1e9 / s:6.2f} {peak:9.0f}")
    d = statistics.median(r["seconds"] for r in runs["dmlops"])
    n = statistics.median(r["seconds"] for r in runs["ngff-zarr"])
    print(f"dmlops / ngff-zarr time: {d / n:.2f}")


if __name__ == "__main__":
    main()
