"""dmlops on Dask arrays (issue 29): bounded memory on a volume larger than the machine's
memory, and speed against the in-memory call and the coarsening Dask and xarray offer.

    python benchmarks/dask_volume.py volume [--gib 64] [--out DIR] [--keep]
    python benchmarks/dask_volume.py compare [--gib 2] [--repeats 5]

``volume``: max and average pooling (3x3x3, stride 2, start padding 1) of a float32 volume
of GIB GiB generated block by block (never whole in memory: each block, 16 x 512 x 512 or
``--depth`` deep, from its own seed) into two zarr stores under DIR, in one pass over the input (Dask's threads). Prints the
wall time, the input's throughput, the process's peak resident memory, the stores' sizes and
the largest file written; checks blocks of both results against the in-memory call on the
same input region, bit for bit. The stores are removed unless ``--keep``.

``compare``: a GiB-sized float32 volume in memory, chunked in about 64 MiB: the in-memory
call (the kernels' own threads), the same call on the Dask array (a task per output block, a
thread each), ``dask.array.coarsen(np.mean, ...)`` and xarray's ``coarsen(...).mean()`` for
the same non-overlapping 2x2x2 average, interleaved, medians of ``--repeats``. Dask's result
must equal the in-memory one bit for bit; the coarsen results (float32 means summed in
another order) are compared to it within 1e-6.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import dmlops as dml

BLOCK = (1, 1, 64, 512, 512)        # 64 MiB of float32


def _shape(gib: float):
    """(1, 1, D, S, S) float32 of about ``gib`` GiB in whole blocks of BLOCK, D about S / 4
    (64 GiB: 1024 x 4096 x 4096)."""
    blocks = max(1, round(gib * 2**30 / (np.prod(BLOCK) * 4)))
    side = max(s for s in range(1, blocks + 1)
               if blocks % (s * s) == 0 and s * s * 2 * s <= max(blocks, 2))
    return (1, 1, blocks // (side * side) * BLOCK[2], side * BLOCK[3], side * BLOCK[4])


def _block(block_info=None):
    info = block_info[None]
    seed = int(np.ravel_multi_index(info["chunk-location"], info["num-chunks"]))
    return np.random.default_rng(seed).standard_normal(info["chunk-shape"], dtype=np.float32)


def generated(shape, depth=BLOCK[2]):
    """A lazily generated float32 volume of ``shape`` in blocks of BLOCK, ``depth`` deep."""
    import dask.array as da
    block = BLOCK[:2] + (depth,) + BLOCK[3:]
    chunks = tuple((b,) * (n // b) for n, b in zip(shape, block))
    return da.map_blocks(_block, dtype=np.float32, chunks=chunks)


POOL = dict(strides=2, start_padding=1)


def volume(args):
    import dask
    import dask.array as da
    import zarr

    shape = _shape(args.gib)
    x = generated(shape, args.depth)
    gib = x.nbytes / 2**30
    out = Path(args.out or tempfile.gettempdir()) / f"dmlops-volume-{os.getpid()}"
    out.mkdir(parents=True)
    stores = {"max": out / "max.zarr", "average": out / "average.zarr"}
    results = {"max": dml.max_pooling(x, 3, **POOL), "average": dml.average_pooling(x, 3, **POOL)}
    print(f"input {shape} float32, {gib:.1f} GiB in {x.npartitions} blocks of "
          f"{np.prod(x.chunksize) * 4 / 2**20:.0f} MiB, generated as computed; output "
          f"{results['max'].shape} x 2 ({results['max'].nbytes / 2**30:.2f} GiB each); "
          f"machine memory {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} "
          f"GiB, {os.cpu_count()} cores", flush=True)
    targets, sources = [], []
    for name, y in results.items():
        y = y.rechunk(tuple(max(c) for c in y.chunks))
        targets.append(zarr.create_array(store=str(stores[name]), shape=y.shape,
                                         chunks=y.chunksize, dtype=y.dtype))
        sources.append(y)
    from dask.diagnostics import ProgressBar
    t0 = time.perf_counter()
    with dask.config.set(scheduler="threads"), ProgressBar(out=sys.stderr, dt=5):
        da.store(sources, targets, lock=False)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20     # KiB -> GiB
    sizes = {n: sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
             for n, p in stores.items()}
    largest = max(f.stat().st_size for p in stores.values() for f in p.rglob("*")
                  if f.is_file())
    print(f"wall {wall:.1f} s; input {gib / wall:.2f} GiB/s; peak resident memory "
          f"{peak:.2f} GiB; stores {', '.join(f'{n} {s / 2**30:.2f} GiB' for n, s in sizes.items())}"
          f"; largest file {largest / 2**20:.1f} MiB", flush=True)
    # blocks of the results against the in-memory call on the same input region
    rng = np.random.default_rng(0)
    for _ in range(3):
        o = [int(rng.integers(0, n - 8)) if n > 8 else 0 for n in results["max"].shape[2:]]
        lo = [max(0, 2 * v - 1) for v in o]
        hi = [min(n, 2 * (v + 8) + 1) for v, n in zip(o, shape[2:])]
        region = x[(0, 0) + tuple(slice(a, b) for a, b in zip(lo, hi))].compute()[None, None]
        pads = [1 if v == 0 else 0 for v in o]
        for name, f in (("max", dml.max_pooling), ("average", dml.average_pooling)):
            want = f(region, 3, strides=2, start_padding=pads, end_padding=0)[
                (0, 0) + tuple(slice(0, 8) for _ in o)]
            got = zarr.open_array(store=str(stores[name]), mode="r")[
                (0, 0) + tuple(slice(v, v + 8) for v in o)]
            assert got.tobytes() == want.tobytes(), (name, o)
    print("blocks checked against the in-memory call: bitwise equal", flush=True)
    if not args.keep:
        shutil.rmtree(out)


def compare(args):
    import dask.array as da
    try:
        import xarray as xr
    except ImportError:
        xr = None
    shape = _shape(args.gib)
    x = generated(shape).compute()
    xd = da.from_array(x, chunks=(1, 1, 16, shape[3], shape[4]) if shape[3] * shape[4] *
                       16 * 4 <= 2**26 else BLOCK)
    print(f"input {shape} float32, {x.nbytes / 2**30:.2f} GiB; Dask chunks "
          f"{xd.chunksize} ({np.prod(xd.chunksize) * 4 / 2**20:.0f} MiB), {xd.npartitions} "
          f"blocks; {os.cpu_count()} cores; 2x2x2 average, stride 2", flush=True)
    want = dml.average_pooling(x, 2, strides=2)
    lazy = dml.average_pooling(xd, 2, strides=2)
    target = np.zeros(lazy.shape, lazy.dtype)
    empty = xd.map_blocks(lambda b: np.empty(b[:, :, ::2, ::2, ::2].shape, b.dtype),
                          chunks=lazy.chunks)
    identity = xd.map_blocks(lambda b: b, dtype=xd.dtype)
    runs = {
        "dmlops in memory": lambda: dml.average_pooling(x, 2, strides=2),
        "dmlops on Dask": lambda: dml.average_pooling(xd, 2, strides=2).compute(),
        # the same, each block stored into its place of one array made beforehand (no
        # concatenation at the end)
        "dmlops on Dask, stored into an array": lambda: _stored(lazy, target),
        # what any Dask computation of these blocks pays: a task per block, its output
        # allocated, the blocks concatenated into one array
        "(Dask's floor: empty blocks, concatenated)": lambda: empty.compute(),
        # issue 43's floor: the same chunks through an identity map_blocks, concatenated
        "(Dask's floor: identity map_blocks, concatenated)": lambda: identity.compute(),
        "dask.array.coarsen(np.mean)": lambda: da.coarsen(np.mean, xd, {2: 2, 3: 2, 4: 2})
        .compute(),
    }
    if xr is not None:
        xa = xr.DataArray(xd, dims=("n", "c", "z", "y", "x"))
        runs["xarray coarsen().mean()"] = lambda: xa.coarsen(z=2, y=2, x=2).mean().values
    for name, f in runs.items():        # (checks, and one untimed call each)
        got = np.asarray(f())
        if name.startswith("dmlops on Dask"):
            assert got.tobytes() == want.tobytes(), name
        elif not name.startswith("("):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, f in runs.items():
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    base = statistics.median(times["dmlops in memory"])
    print("| implementation | median s | x in-memory | GB/s (input) |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.3f} | {m / base:.2f} | {x.nbytes / m / 1e9:.2f} |")
    dask_time = statistics.median(times["dmlops on Dask"])
    for floor in [n for n in times if n.startswith("(Dask's floor")]:
        print(f"dmlops on Dask / {floor[1:-1]}: "
              f"{dask_time / statistics.median(times[floor]):.2f}")
    if xr is None:
        print("(xarray not installed: skipped)")


def _stored(lazy, target):
    import dask.array as da
    da.store(lazy, target, lock=False)
    return target


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    v = sub.add_parser("volume")
    v.add_argument("--gib", type=float, default=64)
    v.add_argument("--out", default=None)
    v.add_argument("--keep", action="store_true")
    v.add_argument("--depth", type=int, default=16,
                   help="the blocks' depth (512 x 512 each; 16: 16 MiB blocks)")
    c = sub.add_parser("compare")
    c.add_argument("--gib", type=float, default=2)
    c.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    (volume if args.what == "volume" else compare)(args)


if __name__ == "__main__":
    main()
