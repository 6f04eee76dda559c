"""Values of a data type: checked JSON numbers as a DataType's elements (converted, never
wrapped), and elements printed back."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import DataType, FLOAT_TYPES
from ._json import ModelError, describe, is_int, json_item, json_number


def to_type(values: list[Any], dt: DataType, path: str, paths: Any = None) -> np.ndarray:
    """Convert checked JSON numbers to ``dt``: floats round to nearest (overflowing to inf as
    an IEEE conversion does); integers must be integral and in range."""
    dtype = dt.dtype
    if dt in FLOAT_TYPES:
        try:
            wide = np.array([float(v) for v in values], dtype=np.float64)
        except OverflowError:
            bad = next(i for i, v in enumerate(values) if is_int(v) and abs(v) > 2**1023)
            raise ModelError(paths(bad) if paths else path,
                             f"{values[bad]} is too large for {dt.name}") from None
        with np.errstate(over="ignore"):
            return wide.astype(dtype)
    info = np.iinfo(dtype)
    out = []
    for i, v in enumerate(values):
        where = paths(i) if paths else path
        if isinstance(v, float):
            if not math.isfinite(v) or not v.is_integer():
                raise ModelError(where, f"{describe(v)} is not a value of {dt.name} "
                                        f"(an integer type)")
            v = int(v)
        if not info.min <= v <= info.max:
            raise ModelError(where, f"{v} is outside the range of {dt.name} "
                                    f"[{info.min}, {info.max}]")
        out.append(v)
    return np.array(out, dtype=dtype)


def typed_values(items: list[Any], dt: DataType, path: str) -> np.ndarray:
    allow_special = dt in FLOAT_TYPES
    checked = [json_number(v, json_item(path, i), allow_special) for i, v in enumerate(items)]
    return to_type(checked, dt, path, paths=lambda i: json_item(path, i))


def format_value(v: Any, dt: DataType) -> str:
    if dt in FLOAT_TYPES:
        f = float(v)
        if math.isfinite(f) and f == int(f) and abs(f) < 1e16:
            return ("-0" if math.copysign(1.0, f) < 0 else "0") if f == 0 else str(int(f))
        return str(v)        # numpy's shortest repr of the type: 0.1, nan, inf, 1e+30
    return str(int(v))
