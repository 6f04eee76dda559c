"""Data types, feature levels and padding modes: the tables of SPEC 1.1, 1.3 and 3.9, and one
normaliser for each spelling."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .errors import InvalidArgumentError, UnsupportedError

__all__ = ["DataType", "FeatureLevel", "PaddingMode", "data_type", "numpy_dtype",
           "feature_level", "padding_mode", "FLOAT_TYPES", "INTEGER_TYPES", "ALL_TYPES"]


class DataType(enum.IntEnum):
    """DirectML's DML_TENSOR_DATA_TYPE values (SPEC 1.1)."""

    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11

    @property
    def dtype(self) -> np.dtype[Any]:
        return _NUMPY[self]

    @property
    def itemsize(self) -> int:
        return _NUMPY[self].itemsize


_NUMPY = {t: np.dtype(t.name.lower()) for t in DataType}
_BY_DTYPE = {v: k for k, v in _NUMPY.items()}
NATIVE_DTYPES = frozenset(_BY_DTYPE)    # the types' NumPy dtypes, in native byte order

FLOAT_TYPES = frozenset({DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64})
INTEGER_TYPES = frozenset(DataType) - FLOAT_TYPES
ALL_TYPES = frozenset(DataType)


def data_type(value: Any, what: str = "data type") -> DataType:
    """Normalise a DirectML name (prefix optional, any case), enum value, NumPy dtype or dtype
    name to a :class:`DataType`.

    >>> data_type("DML_TENSOR_DATA_TYPE_float16"), data_type(np.uint8), data_type(6)
    (<DataType.FLOAT16: 2>, <DataType.UINT8: 5>, <DataType.INT32: 6>)
    """
    if isinstance(value, DataType):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        try:
            return DataType(int(value))
        except ValueError:
            pass
    elif isinstance(value, str):
        name = value.strip().upper()
        if name.startswith("DML_TENSOR_DATA_TYPE_"):
            name = name[len("DML_TENSOR_DATA_TYPE_"):]
        if name in DataType.__members__:
            return DataType[name]
    if value is not None and not isinstance(value, (int, np.integer)):
        # (not None: np.dtype(None) is float64)
        try:
            dt = np.dtype(value)
        except (TypeError, ValueError):
            dt = None
        if dt is not None:
            found = _BY_DTYPE.get(dt.newbyteorder("=")) if dt.byteorder != "|" else _BY_DTYPE.get(dt)
            if found is not None:
                return found
    names = ", ".join(t.name for t in DataType)
    shown = str(value) if isinstance(value, np.dtype) else repr(value)
    raise UnsupportedError(f"{what} {shown}, which is not a supported data type; expected one of "
                           f"{names} (or their NumPy dtypes / enum values 1-11)")


def numpy_dtype(value: Any) -> np.dtype[Any]:
    return data_type(value).dtype


class FeatureLevel(enum.IntEnum):
    """DML_FEATURE_LEVEL values (SPEC 1.3)."""

    L1_0 = 0x1000
    L2_0 = 0x2000
    L2_1 = 0x2100
    L3_0 = 0x3000
    L3_1 = 0x3100
    L4_0 = 0x4000
    L4_1 = 0x4100
    L5_0 = 0x5000
    L5_1 = 0x5100
    L5_2 = 0x5200
    L6_0 = 0x6000
    L6_1 = 0x6100
    L6_2 = 0x6200
    L6_3 = 0x6300
    L6_4 = 0x6400

    def __str__(self) -> str:
        return self.name[1:].replace("_", ".")


def feature_level(value: object) -> FeatureLevel | None:
    """Normalise a feature level; ``None`` (or ``"extended"``) is extended mode.

    >>> feature_level("6.2"), feature_level("DML_FEATURE_LEVEL_3_1"), feature_level(0x2100)
    (<FeatureLevel.L6_2: 25088>, <FeatureLevel.L3_1: 12544>, <FeatureLevel.L2_1: 8448>)
    """
    if value is None:
        return None
    if isinstance(value, FeatureLevel):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        try:
            return FeatureLevel(int(value))
        except ValueError:
            pass
    elif isinstance(value, str):
        text = value.strip().upper()
        if text == "EXTENDED":
            return None
        if text.startswith("DML_FEATURE_LEVEL_"):
            text = text[len("DML_FEATURE_LEVEL_"):]
        text = text.replace(".", "_")
        if text.startswith("L"):
            text = text[1:]
        if "L" + text in FeatureLevel.__members__:
            return FeatureLevel["L" + text]
    levels = ", ".join(str(level) for level in FeatureLevel)
    raise InvalidArgumentError(f"feature_level {value!r} is not a DirectML feature level; "
                               f"expected one of {levels} (also spelled '6_4', "
                               f"'DML_FEATURE_LEVEL_6_4', 0x6400, FeatureLevel.L6_4), "
                               f"or None / 'extended' for extended mode")


class PaddingMode(enum.IntEnum):
    """DML_PADDING_MODE values (SPEC 4.2)."""

    CONSTANT = 0
    EDGE = 1
    REFLECTION = 2
    SYMMETRIC = 3
    WRAP = 4


_MODE_ALIASES = {"REFLECT": PaddingMode.REFLECTION}


def padding_mode(value: object, what: str = "mode") -> PaddingMode:
    """Normalise a padding mode: a member, its value 0-4, or its name in any case, with or
    without ``DML_PADDING_MODE_`` (``"reflect"`` is accepted for REFLECTION, as NumPy and ONNX
    spell it)."""
    if isinstance(value, PaddingMode):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        try:
            return PaddingMode(int(value))
        except ValueError:
            pass
    elif isinstance(value, str):
        name = value.strip().upper()
        if name.startswith("DML_PADDING_MODE_"):
            name = name[len("DML_PADDING_MODE_"):]
        if name in PaddingMode.__members__:
            return PaddingMode[name]
        if name in _MODE_ALIASES:
            return _MODE_ALIASES[name]
    raise InvalidArgumentError(f"{what} = {value!r} is not a padding mode; expected one of "
                               f"constant, edge, reflection (or reflect), symmetric, wrap "
                               f"(any case, DML_PADDING_MODE_* names, or values 0-4)")
