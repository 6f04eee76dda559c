"""
A Dask volume's pyramid
=======================

:func:`dmlops.pyramid` makes the levels of a multiscale image from a NumPy or Dask array, as
lazy Dask arrays: each level is the previous one average-pooled with window = stride = 2 along
the spatial axes, the ends padded so that the last partial block pools its real elements only
(a size ``n`` becomes ``ceil(n / 2)``). The result is bit for bit the chained in-memory calls,
whatever the chunking; :func:`dmlops.write_pyramid` would write it as an OME-Zarr image.

Here a small (z, y, x) volume of 12 × 45 × 45 in chunks of 6 × 16 × 16, whose middle slice
shows rings.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

import dmlops

z, y, x = np.meshgrid(np.linspace(-1, 1, 12), np.linspace(-1, 1, 45), np.linspace(-1, 1, 45),
                      indexing="ij")
volume = da.from_array((np.cos(12 * np.sqrt(x**2 + y**2 + z**2)) * (1 - z**2)).astype("float32"),
                       chunks=(6, 16, 16))

levels = dmlops.pyramid(volume, levels=4)
for level in levels:
    print(level.shape, level.chunks)

# %%
# The middle slice of each level. The last level is the chained in-memory calls' result, bit
# for bit.

fig, axes = plt.subplots(1, len(levels), figsize=(10, 2.9), layout="constrained")
for n, (ax, level) in enumerate(zip(axes, levels)):
    plane = level[level.shape[0] // 2].compute()
    ax.imshow(plane, cmap="magma", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_title(f"level {n}: {' x '.join(map(str, level.shape))}", fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])

chained = volume.compute()
for _ in range(3):
    chained = dmlops.average_pooling(chained[None, None], 2, strides=2,
                                     end_padding=[-s % 2 for s in chained.shape])[0, 0]
print("bitwise the in-memory calls:", bool((levels[3].compute() == chained).all()))
