"""The types of the public signatures (issue 30): what each argument accepts, as a type.

Read by type checkers only: every module imports it under ``if TYPE_CHECKING:``, so it
costs ``import dmlops`` nothing, and nothing here may be needed at run time.

The string spellings are ``Literal`` types so that a type checker rejects a misspelt mode
or level. The normalisers (``dtypes.padding_mode``, ``dtypes.feature_level``) also take any
letter case and surrounding spaces; the literals list the spellings the documentation uses
(lower, upper and title case, and DirectML's prefixed names), as ``np.pad`` lists its modes.
A string known only at run time goes through the enum: ``PaddingMode[name.upper()]`` or
``dmlops.dtypes.padding_mode(name)``.

Data types are the exception: NumPy's whole dtype vocabulary (``"f4"``, ``"<f2"``,
``"half"``, ...) is accepted, an open set of strings, so :data:`DataTypeLike` includes
``str``; :data:`DataTypeName` lists DirectML's names for readers and editors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .dtypes import DataType, FeatureLevel, PaddingMode

# SPEC 3.9's modes; "reflect" is REFLECTION as NumPy and ONNX spell it
PaddingModeName = Literal[
    "constant", "edge", "reflection", "symmetric", "wrap", "reflect",
    "Constant", "Edge", "Reflection", "Symmetric", "Wrap", "Reflect",
    "CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP", "REFLECT",
    "DML_PADDING_MODE_CONSTANT", "DML_PADDING_MODE_EDGE", "DML_PADDING_MODE_REFLECTION",
    "DML_PADDING_MODE_SYMMETRIC", "DML_PADDING_MODE_WRAP"]
# a member, its value 0-4 (an int: PaddingMode is an IntEnum), or a name
PaddingModeLike = Union[PaddingMode, int, PaddingModeName]

# SPEC 1.1's types: DirectML's names, NumPy's (the same in lower case), DirectML's enum names
DataTypeName = Literal[
    "FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8", "INT32", "INT16", "INT8", "FLOAT64",
    "UINT64", "INT64",
    "float32", "float16", "uint32", "uint16", "uint8", "int32", "int16", "int8", "float64",
    "uint64", "int64",
    "DML_TENSOR_DATA_TYPE_FLOAT32", "DML_TENSOR_DATA_TYPE_FLOAT16",
    "DML_TENSOR_DATA_TYPE_UINT32", "DML_TENSOR_DATA_TYPE_UINT16", "DML_TENSOR_DATA_TYPE_UINT8",
    "DML_TENSOR_DATA_TYPE_INT32", "DML_TENSOR_DATA_TYPE_INT16", "DML_TENSOR_DATA_TYPE_INT8",
    "DML_TENSOR_DATA_TYPE_FLOAT64", "DML_TENSOR_DATA_TYPE_UINT64", "DML_TENSOR_DATA_TYPE_INT64"]
# a member, its value 1-11, a name, a NumPy dtype or scalar type (np.uint32, float), or any
# other string NumPy reads as a dtype ("f4")
DataTypeLike = Union[DataType, int, DataTypeName, np.dtype[Any], type[np.generic],
                     type[int], type[float], str]

# SPEC 1.3's levels as "6.4", "6_4" or DirectML's enum name; "extended" (or None) is
# extended mode
FeatureLevelName = Literal[
    "1.0", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1", "5.2", "6.0", "6.1", "6.2",
    "6.3", "6.4",
    "1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1", "5_2", "6_0", "6_1", "6_2",
    "6_3", "6_4",
    "DML_FEATURE_LEVEL_1_0", "DML_FEATURE_LEVEL_2_0", "DML_FEATURE_LEVEL_2_1",
    "DML_FEATURE_LEVEL_3_0", "DML_FEATURE_LEVEL_3_1", "DML_FEATURE_LEVEL_4_0",
    "DML_FEATURE_LEVEL_4_1", "DML_FEATURE_LEVEL_5_0", "DML_FEATURE_LEVEL_5_1",
    "DML_FEATURE_LEVEL_5_2", "DML_FEATURE_LEVEL_6_0", "DML_FEATURE_LEVEL_6_1",
    "DML_FEATURE_LEVEL_6_2", "DML_FEATURE_LEVEL_6_3", "DML_FEATURE_LEVEL_6_4",
    "extended", "EXTENDED"]
FeatureLevelLike = Union[FeatureLevel, int, FeatureLevelName, None]

# ONNX's auto_pad attribute (an empty one is NOTSET, as ONNX Runtime reads it); bytes as
# ONNX's protobuf attributes hold it
AutoPad = Union[Literal["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", "notset", "valid",
                        "same_upper", "same_lower", ""], bytes]

# an int (every spatial dimension) or one per dimension; NumPy integers too
Int = Union[int, np.integer[Any]]
IntOrInts = Union[Int, Sequence[Int], NDArray[np.integer[Any]]]
Ints = Union[Sequence[Int], NDArray[np.integer[Any]]]

# the element type of a NumPy array that goes in and comes out
ScalarT = TypeVar("ScalarT", bound=np.generic)
Float = Union[float, np.floating[Any], np.integer[Any]]


class TorchTensorLike(Protocol):
    """A PyTorch tensor, structurally (dmlops imports no torch for its types): the functions
    give tensors for tensors (``_calling.results_as_given``)."""

    @property
    def requires_grad(self) -> bool: ...

    def detach(self) -> Any: ...

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...


class DaskArrayLike(Protocol):
    """A Dask array, structurally: the functions give lazy arrays for lazy arrays (SPEC 6)."""

    @property
    def chunks(self) -> Any: ...

    def __dask_graph__(self) -> Any: ...


TensorT = TypeVar("TensorT", bound=TorchTensorLike)
LazyT = TypeVar("LazyT", bound=DaskArrayLike)

# a Dask output's chunking: anything ``dask.array`` accepts
Chunks = Union[int, str, Sequence[Any], Mapping[Any, Any]]
ForeignT = TypeVar("ForeignT", bound=Union[TorchTensorLike, DaskArrayLike])
# what an array argument may be, in an implementation's signature (the overloads say more)
ArrayInput = Union[ArrayLike, TorchTensorLike, DaskArrayLike]
# max_pooling's indices: UINT32 (the default), UINT64 or INT64 (``indices_dtype``)
IndexArray = NDArray[Union[np.uint32, np.uint64, np.int64]]
# quantized pooling's output: INT8 or UINT8
QuantizedArray = NDArray[Union[np.int8, np.uint8]]
