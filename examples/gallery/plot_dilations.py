"""
Dilations
=========

A dilation spreads a window's taps apart: a 3 × 3 window with dilation 2 covers a 5 × 5 area
(the effective window ``E = (3 − 1)·2 + 1 = 5``) and reads every other cell of it. Here max
pooling of a 7 × 7 input with stride 1: the output is ``7 − 5 + 1 = 3`` wide, and the windows of
outputs (0, 0) and (2, 2) are drawn (dilation's holes left out).
"""

import numpy as np

import dmlops

fig = dmlops.explain("max_pooling", (1, 1, 7, 7), 3, dilations=2, outputs=[(0, 0), (2, 2)])

x = np.arange(49, dtype=np.float32).reshape(1, 1, 7, 7)
y, i = dmlops.max_pooling(x, 3, dilations=2, output_indices=True)
print(y[0, 0])
print(i[0, 0])                   # flat indices of the maxima: the bottom-right tap of each

# %%
# Dilations combine with asymmetric padding: here 1 before and 2 after, in one dimension, with
# stride 2. The padding cells never win a maximum.

fig = dmlops.explain("max_pooling", (1, 1, 8), 3, dilations=2, strides=2, start_padding=1,
                     end_padding=2, values=np.array([4, 1, 7, 3, 9, 2, 8, 5]))
