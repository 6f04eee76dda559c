"""The reference backend: plain NumPy, written to be read; the oracle of the test suite.

Every kernel takes plain arrays (inputs of any strides, native byte order; outputs of any
strides, written completely) and integers. Work is vectorised over output positions and
loops only over window offsets, each offset a pair of basic slices (see ``window.py``).
"""

from __future__ import annotations

from .pooling import (average_pooling, average_pooling_grad, lp_pooling,  # noqa: F401
                      max_pooling, max_pooling_grad, max_unpooling, quantized_average_pooling,
                      roi_pooling)
from .padding import padding, padding_grad  # noqa: F401

NAME = "reference"
