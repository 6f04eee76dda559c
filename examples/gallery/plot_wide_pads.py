"""
Pads wider than the input
=========================

DirectML's padding modes are periodic, so a pad may be many times wider than the dimension.
``[1, 2, 3]`` padded by 5 on each side: reflection repeats every 2(n − 1) = 4 without repeating
the edge, symmetric every 2n = 6 repeating it. PyTorch's ``F.pad`` and ONNX Runtime refuse
these pads; dmlops computes each cell's source in closed form, as NumPy's ``np.pad`` does.
"""

# sphinx_gallery_thumbnail_number = 3

import numpy as np

import dmlops

x = np.array([1, 2, 3])
for mode, numpy_mode in (("reflection", "reflect"), ("symmetric", "symmetric")):
    y = dmlops.padding(x, 5, 5, mode=mode)
    print(f"{mode:10}", y.tolist(), "np.pad agrees:", bool((y == np.pad(x, 5, mode=numpy_mode)).all()))

fig_reflection = dmlops.explain("padding", (3,), 5, 5, mode="reflection", values=x)
fig_symmetric = dmlops.explain("padding", (3,), 5, 5, mode="symmetric", values=x)

# %%
# In two dimensions each dimension maps on its own: a 2 × 3 input reflected by 3 rows and 4
# columns on each side, wider than both of its dimensions.

fig_2d = dmlops.explain("padding", (2, 3), 3, 4, mode="reflection",
                        values=np.arange(6).reshape(2, 3))
