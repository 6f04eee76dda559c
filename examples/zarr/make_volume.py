"""Makes examples/zarr/volume.zarr, the input of examples/zarr/max_pooling_volume.json: a
float32 volume (N=1, C=1, 64 x 256 x 256; 16 MiB) of smooth noise, in zarr chunks of
32 x 128 x 128, written block by block through Dask (a larger SIZE makes a larger volume
without holding it in memory).

    python examples/zarr/make_volume.py [SIZE]     # SIZE: the last two sizes (default 256)
    dmlops run examples/zarr/max_pooling_volume.json
"""

import sys
from pathlib import Path

import dask.array as da
import numpy as np


def volume(size: int):
    """(1, 1, 64, size, size) float32, each block from its own seed: the same values on
    every run and every chunking of the computation."""
    def block(block_info=None):
        loc = block_info[None]["chunk-location"]
        shape = block_info[None]["chunk-shape"]
        seed = int(np.ravel_multi_index(loc, block_info[None]["num-chunks"]))
        return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return da.map_blocks(block, dtype=np.float32,
                         chunks=((1,), (1,), (32, 32), *(((128,) * (size // 128),) * 2)))


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    if size % 128:
        sys.exit("SIZE must be a multiple of 128")
    target = Path(__file__).with_name("volume.zarr")
    volume(size).to_zarr(str(target), overwrite=True)
    print(f"wrote {target} (1, 1, 64, {size}, {size}) float32")
