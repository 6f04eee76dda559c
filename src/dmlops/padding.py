"""Validation and planning of PADDING / PADDING1 (SPEC 3.9): one path for the functional API
and the description layer."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ._args import (as_int_tuple, check_bounds, check_rank, check_type, is_int, operator_row,
                    reraise)
from .dtypes import DataType, PaddingMode, padding_mode
from .errors import Names
from .support import first_level

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import NDArray

    from ._call import Operands
    from .dtypes import FeatureLevel
    from .support import Row


@dataclass(frozen=True)
class PadPlan:
    op: str
    dtype: DataType
    in_sizes: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    mode: PaddingMode
    value: object             # already of ``dtype`` (a NumPy scalar)
    prepared_by: ClassVar[str | None] = "prepare_padding"    # (as pooling.PoolPlan's)

    @property
    def out_sizes(self) -> tuple[int, ...]:
        return tuple(n + a + b for n, a, b in zip(self.in_sizes, self.start, self.end))

    def run(self, kernels: ModuleType, x: Any, outputs: Sequence[NDArray[Any]],
            operands: Operands | None = None, names: Names | None = None) -> None:
        """(as ``pooling.PoolPlan.run``)"""
        y = outputs[0]
        kernels.padding(x, y, self.start, int(self.mode), np.asarray(self.value, dtype=y.dtype))

    def lazy(self, x: Any, operands: Operands, call: Any, kernels: ModuleType,
             chunks: Any, names: Names) -> list[Any]:
        from . import _dask
        return [_dask.padding(x, self, chunks, names)]


def check_mode(op: str, level: FeatureLevel | None, row: Row, mode: object, names: Names
               ) -> PaddingMode:
    mode = reraise(names, padding_mode, mode, names("mode"), field="mode")
    if mode not in row.modes:
        later = first_level(op, lambda r: mode in r.modes)
        raise names.unsupported(lambda n: f"{n('mode')} = {mode.name} needs feature level {later} "
                                          f"or later; the target level is {level}")
    return mode


def pad_lengths(start: Any, end: Any, rank: int, names: Names, allow_scalar: bool
                ) -> list[tuple[int, ...]]:
    pads = []
    for field, value in (("start_padding", start), ("end_padding", end)):
        if is_int(value) and allow_scalar:
            pads.append((int(value),) * rank)
            continue
        values = as_int_tuple(value, names, field)
        if len(values) != rank:
            raise names.invalid(lambda n: f"{n(field)} has {len(values)} values {list(values)}; "
                                          f"expected {rank}, one per dimension of the {rank}-D "
                                          f"input (padding covers every dimension, N and C "
                                          f"included)")
        pads.append(values)
    return pads


def check_pad_values(in_sizes: Sequence[int], start: Sequence[int], end: Sequence[int],
                     mode: PaddingMode, names: Names) -> None:
    check_bounds(start, 0, names, "start_padding", "must not be negative")
    check_bounds(end, 0, names, "end_padding", "must not be negative")
    if mode == PaddingMode.REFLECTION:
        for d, n in enumerate(in_sizes):
            if n == 1 and (start[d] or end[d]):
                raise names.invalid(
                    lambda n: f"{n('start_padding' if start[d] else 'end_padding', d)} = "
                              f"{start[d] or end[d]}: REFLECTION cannot pad dimension {d} of size "
                              f"1 (it has no element to mirror); use EDGE or SYMMETRIC there")


def plan_padding(op: str, level: FeatureLevel | None, names: Names, dt: DataType, rank: int,
                 out_dt: DataType | None, out_rank: int | None, mode: object) -> PaddingMode:
    """Phase 1: types, ranks, level and mode."""
    row = operator_row(op, level, names)
    check_type(op, level, row, "data", dt, names, "input")
    check_rank(op, level, row, rank, names, "input")
    if out_dt is not None and out_dt != dt:
        raise names.unsupported(lambda n: f"{n('output')} has data type {out_dt.name}; it must "
                                          f"match {n('input')} ({dt.name})",
                                subfield="data_type")
    if out_rank is not None and out_rank != rank:
        raise names.unsupported(lambda n: f"{n('output')} is {out_rank}-D; it must have the rank "
                                          f"of {n('input')} ({rank}-D)", subfield="sizes")
    return check_mode(op, level, row, mode, names)


def source_map(mode: PaddingMode, n: int, start: int, out_size: int
               ) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Along one dimension of size ``n``, each output coordinate's input coordinate (SPEC
    3.9's closed form, never a re-read of padded output) and whether it lies inside the
    input: CONSTANT's padding is where it does not (its coordinate there is clamped)."""
    x = np.arange(-start, out_size - start, dtype=np.int64)
    inside = (x >= 0) & (x < n)
    if mode == PaddingMode.REFLECTION and n > 1:
        m = x % (2 * n - 2)
        return np.minimum(m, 2 * n - 2 - m), inside
    if mode == PaddingMode.SYMMETRIC:
        m = x % (2 * n)
        return np.minimum(m, 2 * n - 1 - m), inside
    if mode == PaddingMode.WRAP:
        return x % n, inside
    return np.clip(x, 0, max(n - 1, 0)), inside


# --- the padding value -------------------------------------------------------------------

def _round_int_to_float(v: int, dtype: np.dtype[Any]) -> Any:
    """A Python int rounded once, to nearest (ties to even), to a float type."""
    with np.errstate(over="ignore"):   # (overflow gives an infinity, as rounding does)
        if -2**53 <= v <= 2**53:       # exact in float64, so NumPy's conversion rounds once
            return dtype.type(v)
        try:
            f = dtype.type(float(v))
        except OverflowError:
            return dtype.type(math.inf if v > 0 else -math.inf)
    if not np.isfinite(f):
        return f
    from fractions import Fraction     # (only here: 2 ms of every import otherwise)

    exact = Fraction(v)
    best = f
    with np.errstate(over="ignore"):
        neighbours = (np.nextafter(f, dtype.type(-np.inf)), np.nextafter(f, dtype.type(np.inf)))
    for cand in neighbours:
        if not np.isfinite(cand):
            continue
        dc, db = abs(Fraction(float(cand)) - exact), abs(Fraction(float(best)) - exact)
        if dc < db or (dc == db and int(cand.view(f"u{dtype.itemsize}")) % 2 == 0):
            best = cand
    return best


def mode_value(mode: PaddingMode, dt: DataType, convert: Callable[[], Any]) -> Any:
    """The padding value, ``convert()``, read in constant mode alone: the other modes ignore
    it, unchecked (SPEC 3.9 and 7)."""
    return convert() if mode == PaddingMode.CONSTANT else dt.dtype.type(0)


def convert_value(value: Any, dt: DataType, names: Names, field: str = "value") -> Any:
    """A number converted to ``dt``: integers truncate toward zero and saturate (NaN -> 0);
    floats round to nearest."""
    dtype = dt.dtype
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if not isinstance(value, (int, float)):
        raise names.invalid(lambda n: f"{n(field)} = {value!r} must be a real number")
    if dtype.kind == "f":
        if isinstance(value, int):
            return _round_int_to_float(value, dtype)
        with np.errstate(over="ignore"):
            return dtype.type(value)
    info = np.iinfo(dtype)
    if isinstance(value, float):
        if math.isnan(value):
            return dtype.type(0)
        if math.isinf(value):
            return dtype.type(info.max if value > 0 else info.min)
        value = math.trunc(value)
    return dtype.type(min(max(value, info.min), info.max))


def float32_field(value: Any, names: Names, field: str) -> float:
    """PADDING's PaddingValue is a 32-bit FLOAT: round it to float32 first."""
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, int):
        return float(_round_int_to_float(value, np.dtype(np.float32)))
    if not isinstance(value, float):
        raise names.invalid(lambda n: f"{n(field)} = {value!r} must be a real number")
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def exact_value(value: Any, dt: DataType, names: Names, field: str) -> Any:
    """PADDING1's value, given in the output type: an integer type needs an integral value in
    range; a float type rounds to nearest but may not overflow to infinity."""
    converted = convert_value(value, dt, names, field)
    raw = value.item() if isinstance(value, (np.ndarray, np.generic)) else value
    if dt.dtype.kind in "iu":
        ok = (isinstance(raw, (int, bool)) or (isinstance(raw, float) and math.isfinite(raw)
                                               and raw == math.trunc(raw)))
        if not ok or int(raw) != int(converted):
            info = np.iinfo(dt.dtype)
            raise names.invalid(lambda n: f"{n(field)} = {raw!r} is not exactly representable in "
                                          f"{dt.name} (integers in [{info.min}, {info.max}])")
    elif np.isinf(converted) and not (isinstance(raw, float) and math.isinf(raw)):
        raise names.invalid(lambda n: f"{n(field)} = {raw!r} overflows {dt.name}")
    return converted


# --- PADDING_GRAD (SPEC 3.10) ------------------------------------------------------------

GRAD_TYPES = (DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64)


@dataclass(frozen=True)
class PadGradPlan:
    """The backward of a padding: ``dy`` of ``out_sizes`` summed into ``in_sizes``."""

    dtype: DataType
    in_sizes: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    mode: PaddingMode
    prepared_by: ClassVar[str | None] = None

    @property
    def out_sizes(self) -> tuple[int, ...]:
        return tuple(n + a + b for n, a, b in zip(self.in_sizes, self.start, self.end))

    def run(self, kernels: ModuleType, dy: Any, outputs: Sequence[NDArray[Any]],
            operands: Operands | None = None, names: Names | None = None) -> None:
        if outputs[0].size:
            kernels.padding_grad(dy, outputs[0], self.start, int(self.mode))

    def lazy(self, dy: Any, operands: Operands, call: Any, kernels: ModuleType,
             chunks: Any, names: Names) -> list[Any]:
        from . import _dask
        return [_dask.padding_grad(dy, self, chunks, names)]


def plan_padding_grad(names: Names, dt: DataType, dy_shape: Sequence[int], input_sizes: Any,
                      start_padding: Any, end_padding: Any, mode: object) -> PadGradPlan:
    """``padding_grad``'s checks: a float ``dy`` of rank 1 to 8, the forward's pads and mode,
    and ``dy``'s shape the forward output's."""
    if dt not in GRAD_TYPES:
        raise names.unsupported(lambda n: f"{n('dy')} has data type {dt.name}; padding_grad takes "
                                          f"{', '.join(t.name for t in GRAD_TYPES)} (gradients are "
                                          f"real-valued)", subfield="data_type")
    rank = len(dy_shape)
    if not 1 <= rank <= 8:
        raise names.unsupported(lambda n: f"{n('dy')} is {rank}-D; padding_grad takes 1 to 8 "
                                          f"dimensions", subfield="sizes")
    pmode = reraise(names, padding_mode, mode, names("mode"), field="mode")
    sizes = as_int_tuple(input_sizes, names, "input_sizes")
    if len(sizes) != rank:
        raise names.invalid(lambda n: f"{n('input_sizes')} has {len(sizes)} values {list(sizes)}; "
                                      f"expected {rank}, one per dimension of {n('dy')}")
    check_bounds(sizes, 0, names, "input_sizes", "must not be negative")
    start, end = pad_lengths(start_padding, end_padding, rank, names, allow_scalar=True)
    check_pad_values(sizes, start, end, pmode, names)
    plan = PadGradPlan(dt, sizes, start, end, pmode)
    for d, (got, want) in enumerate(zip(dy_shape, plan.out_sizes)):
        if got != want:
            raise names.invalid(
                lambda n: f"{n('dy')} has shape {tuple(dy_shape)}; expected the forward output's "
                          f"{plan.out_sizes} (input_sizes + start_padding + end_padding; dimension "
                          f"{d} differs)")
        if sizes[d] == 0 and got and pmode != PaddingMode.CONSTANT:
            raise names.invalid(lambda n: f"{n('input_sizes', d)} = 0: only constant padding can "
                                          f"pad an empty dimension")
    return plan
