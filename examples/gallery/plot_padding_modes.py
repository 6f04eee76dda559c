"""
The five padding modes
======================

``[1, 2, 3]`` padded by 2 on each side in each of DirectML's modes. Each cell shows the value
it holds and, small, the index of the input element it copies; the colour is that element's.
Each mode maps an output coordinate to an input coordinate in closed form, dimension by
dimension: constant (the value outside), edge (clamped), reflection (period 2(n − 1), the edge
not repeated), symmetric (period 2n, the edge repeated), wrap (``x mod n``).
"""

# sphinx_gallery_thumbnail_number = 6
# sphinx_gallery_multi_image = "single"

import numpy as np

import dmlops

x = np.array([1, 2, 3])
for mode in ("constant", "edge", "reflection", "symmetric", "wrap"):
    print(f"{mode:10}", dmlops.padding(x, 2, 2, mode=mode).tolist())

# %%
# The pictures, one per mode (``value=0`` is constant mode's default):

figures = [dmlops.explain("padding", (3,), 2, 2, mode=mode, values=x)
           for mode in ("constant", "edge", "reflection", "symmetric", "wrap")]

# %%
# Every dimension is padded by its own index map; here symmetric padding of a 3 × 3 input by
# 1 row and 2 columns before, 2 rows and 1 column after.

fig_2d = dmlops.explain("padding", (3, 3), (1, 2), (2, 1), mode="symmetric",
                        values=np.arange(1, 10).reshape(3, 3))
