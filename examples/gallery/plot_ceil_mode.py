"""
Ceil mode, phantom cells and divisors
=====================================

A 4 × 4 input, 3 × 3 windows, stride 2, padding 1 on each side: the floor output is 2 × 2.
ONNX's and PyTorch's ``ceil_mode`` asks for one more output per dimension (``F + 1``); its last
window reaches past the end padding into *phantom* cells (hatched), which no operator reads or
counts. The paddings do not move.
"""

import numpy as np

import dmlops

values = np.arange(1, 17).reshape(4, 4)
print(dmlops.pooling_output_sizes((1, 1, 4, 4), 3, strides=2, start_padding=1, end_padding=1))
print(dmlops.pooling_output_sizes((1, 1, 4, 4), 3, strides=2, start_padding=1, end_padding=1,
                                  ceil_mode=True))

# %%
# Without ``include_padding`` each window divides by its real elements: the last window holds
# one real element (16), so its divisor is 1.

fig = dmlops.explain("average_pooling", (1, 1, 4, 4), 3, strides=2, start_padding=1,
                     end_padding=1, ceil_mode=True, values=values)

# %%
# With ``include_padding=True`` the divisor counts the padding cells too, never the phantom
# ones: the last window divides by 4 (one real element and three padding cells), not by 9.

fig = dmlops.explain("average_pooling", (1, 1, 4, 4), 3, strides=2, start_padding=1,
                     end_padding=1, ceil_mode=True, include_padding=True, values=values)
x = values.astype(np.float32).reshape(1, 1, 4, 4)
print(dmlops.average_pooling(x, 3, strides=2, start_padding=1, end_padding=1,
                             output_sizes=(3, 3), include_padding=True)[0, 0])
