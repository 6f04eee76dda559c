"""dmlops: DirectML's pooling and padding operators, with their exact semantics, off Windows.

Two layers share one validation:

- functions (NumPy in, NumPy out): :func:`average_pooling`, :func:`max_pooling`,
  :func:`max_pooling_grad`, :func:`average_pooling_grad`, :func:`quantized_linear_average_pooling`,
  :func:`lp_pooling`, :func:`max_unpooling`, :func:`roi_pooling`, :func:`padding`,
  :func:`padding_grad` (its backward), and the
  helpers :func:`pooling_output_sizes` and :func:`onnx_pads`, and pictures of their
  geometry, :func:`explain` (Matplotlib) and :func:`explain_text`;
- DirectML's descriptions: ``*Desc`` classes, :func:`compile_operator`, ``execute``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .backends import backends, get_backend, set_backend
from .dtypes import DataType, FeatureLevel, PaddingMode
from .errors import DmlError, InvalidArgumentError, UnsupportedError
from .functional import (average_pooling, average_pooling_grad, lp_pooling, max_pooling,
                         max_pooling_grad, max_unpooling, padding, padding_grad,
                         quantized_linear_average_pooling, roi_pooling)
from .tensor import TensorDesc
from .threads import get_num_threads, set_num_threads
from .window import onnx_pads, pooling_output_sizes

if TYPE_CHECKING:
    from ._explain import explain, explain_text
    from ._pyramid import pyramid, write_pyramid
    from .descs import (DESC_CLASSES, AveragePooling1Desc, AveragePoolingDesc,
                        AveragePoolingGradDesc, CompiledOperator, LpPooling1Desc, LpPoolingDesc,
                        MaxPooling1Desc, MaxPooling2Desc, MaxPoolingDesc, MaxPoolingGradDesc,
                        MaxUnpoolingDesc, Padding1Desc, PaddingDesc,
                        QuantizedLinearAveragePoolingDesc, RoiPoolingDesc, compile_operator)

# Imported at first use (PEP 562): the descriptions' dataclasses and the pictures' module are
# a third of the package's import time, which a script calling the functions never needs.
_LAZY = {"explain": "._explain", "explain_text": "._explain",
         "pyramid": "._pyramid", "write_pyramid": "._pyramid",
         **dict.fromkeys(("DESC_CLASSES", "AveragePooling1Desc", "AveragePoolingDesc",
                          "AveragePoolingGradDesc", "CompiledOperator", "LpPooling1Desc",
                          "LpPoolingDesc", "MaxPooling1Desc", "MaxPooling2Desc",
                          "MaxPoolingDesc", "MaxPoolingGradDesc", "MaxUnpoolingDesc",
                          "Padding1Desc", "PaddingDesc", "QuantizedLinearAveragePoolingDesc",
                          "RoiPoolingDesc", "compile_operator"), ".descs")}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dmlops' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "average_pooling", "average_pooling_grad", "max_pooling", "max_pooling_grad",
    "quantized_linear_average_pooling", "lp_pooling", "max_unpooling", "roi_pooling",
    "padding", "padding_grad", "pooling_output_sizes", "onnx_pads", "explain", "explain_text", "pyramid",
    "write_pyramid",
    "TensorDesc", "AveragePoolingDesc", "AveragePooling1Desc", "AveragePoolingGradDesc",
    "QuantizedLinearAveragePoolingDesc", "MaxPoolingDesc", "MaxPooling1Desc", "MaxPooling2Desc",
    "MaxPoolingGradDesc", "LpPoolingDesc", "LpPooling1Desc", "MaxUnpoolingDesc",
    "RoiPoolingDesc", "PaddingDesc", "Padding1Desc", "DESC_CLASSES", "compile_operator",
    "CompiledOperator", "DataType", "FeatureLevel", "PaddingMode",
    "DmlError", "InvalidArgumentError", "UnsupportedError",
    "backends", "set_backend", "get_backend", "set_num_threads", "get_num_threads",
    "__version__",
]
