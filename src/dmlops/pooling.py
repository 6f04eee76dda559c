"""Validation and planning of the pooling family (SPEC 2, 3.1-3.8): one path for the
functional API and the description layer.

Checks run in SPEC 7's order: types, ranks and feature level; then argument lengths; then
values. A plan is a frozen, hashable record of everything a kernel needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ._args import (as_int_tuple, check_bounds, check_rank, check_type, is_int,
                    operator_row, spatial)
from .dtypes import DataType
from .window import Window, check_fits, check_output_size, check_window_values, floor_size

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import NDArray

    from ._call import Operands
    from .dtypes import FeatureLevel
    from .errors import Names
    from .support import Row

# window, strides, start and end padding, dilations: one value per spatial dimension
WindowParams = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...],
                     tuple[int, ...]]

INDEX_LIMIT_32 = 2**32 - 1
EMPTY_INDEX: dict[DataType | None, int] = {DataType.UINT32: 2**32 - 1, DataType.UINT64: 2**64 - 1,
                                           DataType.INT64: -1}


@dataclass(frozen=True)
class PoolPlan:
    kind: str       # "average" | "average_grad" | "max" | "max_grad" | "quantized" | "lp"
    op: str                    # DirectML operator name
    geometry: Window           # the forward pooling's window (gradients: input = dx's sizes)
    dtype: DataType            # input data type
    out_dtype: DataType        # output data type
    indices_dtype: DataType | None = None
    include_padding: bool = False
    p: int | None = None       # Lp pooling's exponent
    # the backend's function that prepares a runner of this plan, where it has one
    prepared_by: ClassVar[str | None] = "prepare_pooling"

    @property
    def empty_index(self) -> int | None:
        return EMPTY_INDEX.get(self.indices_dtype)

    # (run and lazy: the Plan protocol of _call.py, which every caller goes through)

    def run(self, kernels: ModuleType, x: NDArray[Any], outputs: Sequence[NDArray[Any]],
            operands: Operands | None = None, names: Names | None = None) -> None:
        """Values first, then indices for max pooling; AVERAGE_POOLING_GRAD's ``x`` is
        ``dy``."""
        g = self.geometry
        if self.kind == "average":
            kernels.average_pooling(x, outputs[0], g, self.include_padding)
        elif self.kind == "max":
            kernels.max_pooling(x, outputs[0], outputs[1] if len(outputs) > 1 else None, g,
                                self.empty_index)
        elif self.kind == "lp":
            kernels.lp_pooling(x, outputs[0], g, self.p)
        elif self.kind == "average_grad":
            kernels.average_pooling_grad(x, outputs[0], g, self.include_padding)
        elif self.kind == "max_grad":
            assert operands is not None    # (the gradient dy)
            kernels.max_pooling_grad(x, operands["dy"], outputs[0], g)
        elif self.kind == "quantized":
            assert operands is not None    # (the scales and zero points)
            kernels.quantized_average_pooling(x, operands["scale_in"], operands["zp_in"],
                                              operands["scale_out"], operands["zp_out"],
                                              outputs[0], g, self.include_padding)
        else:  # pragma: no cover
            raise AssertionError(self.kind)

    def lazy(self, x: Any, operands: Operands, call: Any, kernels: ModuleType, chunks: Any,
             names: Names) -> list[Any]:
        from . import _dask
        if self.kind in ("max_grad", "average_grad"):
            return [_dask.pooling_grad(x if self.kind == "max_grad" else None, operands["dy"],
                                       call, kernels, chunks, names)]
        ys = _dask.pooling(x, call, kernels, chunks, names)
        return list(ys) if isinstance(ys, tuple) else [ys]


def check_tensor_types(op: str, level: FeatureLevel | None, names: Names,
                       roles: Sequence[tuple[str, str, DataType, int]]) -> Row:
    """``roles``: ``(field, role, DataType, rank)`` of each tensor; the first is the input,
    whose rank the others must share. Data type and rank problems are unsupported."""
    row = operator_row(op, level, names)
    _, _, _, rank = roles[0]
    for field, role, dt, r in roles:
        check_type(op, level, row, role, dt, names, field)
    check_rank(op, level, row, rank, names, roles[0][0],
               what=f"tensor (N, C and {', '.join(str(r - 2) for r in sorted(row.ranks))} "
                    f"spatial dimensions)")
    for field, role, dt, r in roles[1:]:
        if r != rank:
            raise names.unsupported(lambda n: f"{n(field)} is {r}-D; it must have the rank of "
                                              f"{n(roles[0][0])} ({rank}-D)", subfield="sizes")
    return row


def same_type(names: Names, first: str, dt1: DataType, second: str, dt2: DataType) -> None:
    if dt1 != dt2:
        raise names.unsupported(lambda n: f"{n(second)} has data type {dt2.name}; it must match "
                                          f"{n(first)} ({dt1.name})", subfield="data_type")


def window_params(names: Names, rank: int, window_size: Any, strides: Any, start_padding: Any,
                  end_padding: Any, dilations: Any, allow_scalar: bool) -> WindowParams:
    """Lengths of the spatial arguments (phase 2)."""
    k = rank - 2
    w = spatial(window_size, k, names, "window_size", rank, allow_scalar)
    s = spatial(strides, k, names, "strides", rank, allow_scalar)
    a = spatial(start_padding, k, names, "start_padding", rank, allow_scalar)
    b = spatial(end_padding, k, names, "end_padding", rank, allow_scalar)
    d = spatial(dilations, k, names, "dilations", rank, allow_scalar)
    return w, s, a, b, d


def geometry(row: Row, names: Names, in_sizes: Sequence[int], params: WindowParams,
             output_sizes: Sequence[int] | None, extended: Row | None = None) -> Window:
    """Values (phase 3): window values, fit, output sizes ``F`` or ``F + 1``.

    ``output_sizes`` is None (floor) or the full output sizes, indexed as canonical full
    dimensions (the caller's Names maps them to its own spelling). ``extended`` is the
    operator's extended-mode row when a feature level is targeted.
    """
    w, s, a, b, d = params
    check_window_values(w, s, a, b, d, names)
    if not row.dilations and any(v != 1 for v in d):
        if extended is not None and extended.dilations:    # e.g. AVERAGE_POOLING_GRAD's
            raise names.unsupported(lambda n: f"{n('dilations')} = {list(d)}: this operator's "
                                              f"dilations are a dmlops extension; they need "
                                              f"extended mode (no feature level)")
        raise names.invalid(lambda n: f"{n('dilations')} = {list(d)}: this operator has no "
                                      f"dilations (they must all be 1)")
    check_fits(in_sizes[2:], w, s, a, b, d, names)
    if output_sizes is None:
        out = tuple(floor_size(in_sizes[2 + i], w[i], s[i], a[i], b[i], d[i])
                    for i in range(len(w)))
        output_sizes = tuple(in_sizes[:2]) + out
    else:
        for dim in (0, 1):
            if output_sizes[dim] != in_sizes[dim]:
                what = "N" if dim == 0 else "C"
                raise names.invalid(lambda n: f"{n('output_sizes', dim)} = {output_sizes[dim]} "
                                              f"must equal the input's {what} ({in_sizes[dim]})")
        for i in range(len(w)):
            check_output_size(2 + i, output_sizes[2 + i],
                              (in_sizes[2 + i], w[i], s[i], a[i], b[i], d[i]), names)
    return Window(tuple(in_sizes), w, s, a, b, d, tuple(output_sizes))


# The largest divisor the kernels count exactly (64-bit integers).
MOST_DIVISOR = 2**63 - 1


def check_divisors(names: Names, g: Window, include_padding: bool) -> None:
    """With ``include_padding``, a window's divisor counts its padding positions too: their
    product over the dimensions (at most the window's positions that fit in the padded
    extent, per dimension) must be a count the kernels hold exactly, else an
    InvalidArgumentError (without padding, a divisor counts real elements, at most the
    input's size)."""
    if not include_padding:
        return
    most = 1
    for w, d, a, b, n in zip(g.window, g.dilations, g.start, g.end, g.input_sizes[2:]):
        most *= min(w, (a + n + b - 1) // d + 1)
    if most > MOST_DIVISOR:
        raise names.invalid(
            lambda n: f"{n('window_size')} = {list(g.window)} with include_padding: a window's "
                      f"divisor would reach {most:.3e} positions (real and padding), beyond "
                      f"2^63-1, the largest count kept exactly")


def check_index_type(in_sizes: Sequence[int], idx_dt: DataType, names: Names, field: str
                     ) -> None:
    count = int(np.prod(in_sizes, dtype=object))
    if idx_dt == DataType.UINT32 and count > INDEX_LIMIT_32:
        raise names.invalid(lambda n: f"{n(field)} is UINT32, but the input has {count} elements, "
                                      f"more than 2^32-1: its indices need UINT64 (or INT64)")


def default_index_type(in_sizes: Sequence[int]) -> DataType:
    count = int(np.prod(in_sizes, dtype=object))
    return DataType.UINT32 if count <= INDEX_LIMIT_32 else DataType.UINT64


def quantization_param_shape(shape: Sequence[int], in_sizes: Sequence[int], names: Names,
                             field: str) -> None:
    """Per tensor: all ones of rank <= the input's (or a scalar); per channel: exactly
    ``(1, C, 1, ...)`` at the input's rank."""
    shape = tuple(shape)
    rank, c = len(in_sizes), in_sizes[1]
    if len(shape) <= rank and all(v == 1 for v in shape):
        return
    if len(shape) == rank and shape[1] == c and all(v == 1 for i, v in enumerate(shape)
                                                     if i != 1):
        return
    per_channel = (1, c) + (1,) * (rank - 2)
    raise names.invalid(
        lambda n: f"{n(field)} has shape {shape}; expected all ones (per tensor, e.g. "
                  f"{(1,) * rank}) or {per_channel} (per channel); for C per-channel values use "
                  f"reshape{per_channel}")


def check_scale_values(scale: NDArray[Any], names: Names, field: str) -> None:
    bad = ~(np.isfinite(scale) & (scale > 0))
    if bad.any():
        value = scale.reshape(-1)[np.argmax(bad.reshape(-1))].item()
        raise names.invalid(lambda n: f"{n(field)} contains {value!r}; a scale must be finite and "
                                      f"greater than 0 (after rounding to float32)")


def check_zero_point_values(zp: NDArray[Any], dt: DataType, names: Names, field: str) -> None:
    info = np.iinfo(dt.dtype)
    values = np.asarray(zp, dtype=object).reshape(-1)
    for v in values:
        if not info.min <= int(v) <= info.max:
            raise names.invalid(lambda n: f"{n(field)} = {int(v)} is outside the range of "
                                          f"{dt.name} [{info.min}, {info.max}]")


def check_p(p: object, names: Names) -> int:
    """Lp pooling's ``P``: a Python/NumPy integer of at least 1 (SPEC 3.6)."""
    if not is_int(p):
        raise names.invalid(lambda n: f"{n('p')} = {p!r} must be an integer (bool and float are "
                                      f"not accepted)")
    check_bounds(p, 1, names, "p", "must be at least 1")
    return int(p)


# --- max unpooling (SPEC 3.7) ------------------------------------------------------------

@dataclass(frozen=True)
class UnpoolPlan:
    op: str
    dtype: DataType
    indices_dtype: DataType
    input_sizes: tuple[int, ...]
    output_sizes: tuple[int, ...]
    prepared_by: ClassVar[str | None] = None

    @property
    def empty_index(self) -> int | None:
        """The "no element" index that is skipped; INT32 has none (SPEC 7)."""
        return EMPTY_INDEX.get(self.indices_dtype)

    def run(self, kernels: ModuleType, x: NDArray[Any], outputs: Sequence[NDArray[Any]],
            operands: Operands | None = None, names: Names | None = None) -> None:
        """(as ``PoolPlan.run``; the indices checked before anything is written)"""
        assert operands is not None and names is not None
        check_unpool_indices(self, operands["indices"], names)
        kernels.max_unpooling(x, operands["indices"], outputs[0], self.empty_index)

    def lazy(self, x: Any, operands: Operands, call: Any, kernels: ModuleType, chunks: Any,
             names: Names) -> list[Any]:
        from . import _dask
        return [_dask.unpooling(x, operands["indices"], call, kernels, chunks, names)]


def unpool_sizes(in_sizes: Sequence[int], idx_sizes: Sequence[int], out_sizes: Sequence[int],
                 names: Names) -> None:
    """Phase 3: indices of the input's sizes; an output of the input's N and C."""
    if tuple(idx_sizes) != tuple(in_sizes):
        raise names.invalid(lambda n: f"{n('indices')} has sizes {list(idx_sizes)}; they must "
                                      f"equal the input's {list(in_sizes)}")
    for dim in (0, 1):
        if out_sizes[dim] != in_sizes[dim]:
            what = "N" if dim == 0 else "C"
            raise names.invalid(lambda n: f"{n('output_sizes', dim)} = {out_sizes[dim]} must equal "
                                          f"the input's {what} ({in_sizes[dim]})")
    check_bounds(out_sizes[2:], 1, names, "output_sizes", "must be at least 1 (only N and C "
                 "may be 0)", first=2)


def check_unpool_indices(plan: UnpoolPlan, indices: NDArray[Any], names: Names,
                         origin: Sequence[int] | None = None) -> None:
    """Every index names an output element, or is the "no element" value (SPEC 3.7); checked
    on the data before anything is written. ``origin``: where ``indices`` lies in the whole
    indices tensor (a block of it), for the message."""
    count = int(np.prod(plan.output_sizes, dtype=object))
    flat = indices.reshape(-1)
    if flat.size == 0:
        return
    empty = plan.empty_index
    if count > np.iinfo(flat.dtype).max:        # every value of the type names an element
        bad = flat < 0
    else:
        bad = (flat >= count) | (flat < 0) if flat.dtype.kind == "i" else flat >= count
    if empty is not None:
        bad &= flat != empty
    if bad.any():
        i = int(np.argmax(bad))
        where = tuple(int(v) + (origin[d] if origin else 0)
                      for d, v in enumerate(np.unravel_index(i, indices.shape)))
        skip = f"; {empty} means \"no element\"" if empty is not None else ""
        raise names.invalid(lambda n: f"{n('indices')}[{', '.join(map(str, where))}] = {flat[i]} "
                                      f"is outside the output's {count} elements (valid: 0 to "
                                      f"{count - 1}{skip})")


# --- ROI pooling (SPEC 3.8) --------------------------------------------------------------

COORD_LIMIT = 2**31


@dataclass(frozen=True)
class RoiPlan:
    op: str
    dtype: DataType
    input_sizes: tuple[int, ...]
    num_rois: int
    spatial_scale: float       # already rounded to float32
    pooled_size: tuple[int, ...]     # (height, width)
    prepared_by: ClassVar[str | None] = None

    def run(self, kernels: ModuleType, x: NDArray[Any], outputs: Sequence[NDArray[Any]],
            operands: Operands | None = None, names: Names | None = None) -> None:
        """(as ``PoolPlan.run``)"""
        assert operands is not None and names is not None
        kernels.roi_pooling(x, roi_regions(self, operands["rois"], names), outputs[0])

    def lazy(self, x: Any, operands: Operands, call: Any, kernels: ModuleType, chunks: Any,
             names: Names) -> list[Any]:
        """(the boxes stay NumPy: ``operands["rois"]`` is in memory)"""
        from . import _dask
        regions = roi_regions(self, operands["rois"], names)
        return [_dask.roi_pooling(x, regions, call, kernels, chunks, names)]


def check_spatial_scale(value: object, names: Names) -> float:
    """SpatialScale is a FLOAT field: rounded to float32, then finite and > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise names.invalid(lambda n: f"{n('spatial_scale')} = {value!r} must be a number")
    with np.errstate(over="ignore"):
        scale = np.float32(value)
    if not (np.isfinite(scale) and scale > 0):
        raise names.invalid(lambda n: f"{n('spatial_scale')} = {value!r} must be finite and "
                                      f"greater than 0 (after rounding to float32: {scale})")
    return float(scale)


def check_pooled_size(value: object, names: Names) -> tuple[int, ...]:
    """``(height, width)``, each at least 1 (an int means both)."""
    size = (int(value),) * 2 if is_int(value) else as_int_tuple(value, names, "pooled_size")
    if len(size) != 2:
        raise names.invalid(lambda n: f"{n('pooled_size')} has {len(size)} values {list(size)}; "
                                      f"expected 2 (height, width)")
    check_bounds(size, 1, names, "pooled_size", "must be at least 1")
    return size


def _round_half_away(v: NDArray[Any]) -> NDArray[Any]:
    t = np.trunc(v)
    rounded: NDArray[Any] = t + np.sign(v) * (np.abs(v - t) >= 0.5)
    return rounded


def roi_regions(plan: RoiPlan, rois: NDArray[Any], names: Names) -> NDArray[np.int64]:
    """``(R, 5)`` int64 rows ``[batch, x1, y1, x2, y2]``: the batch index truncated toward
    zero, the corners scaled and rounded half away from zero, in float64 (SPEC 3.8). Checked
    on the data: a NaN or out-of-range batch index, or a non-finite corner, is an error."""
    r = np.asarray(rois, dtype=np.float64).reshape(-1, 5)
    batches = plan.input_sizes[0]
    with np.errstate(invalid="ignore", over="ignore"):
        batch = np.trunc(r[:, 0])
        corners = _round_half_away(r[:, 1:] * plan.spatial_scale)
    for i in range(r.shape[0]):
        b = float(r[i, 0])
        if np.isnan(b):
            raise names.invalid(lambda n: f"{n('rois', i)} has batch index NaN; it must be a "
                                          f"number in [0, {batches})")
        if not 0 <= batch[i] < batches:
            raise names.invalid(lambda n: f"{n('rois', i)} has batch index {b!r} (truncated: "
                                          f"{batch[i]:g}); the input has N = {batches}, so it "
                                          f"must lie in [0, {batches})")
        bad = ~(np.abs(corners[i]) < COORD_LIMIT)
        if bad.any():
            j = int(np.argmax(bad))
            raise names.invalid(
                lambda n: f"{n('rois', i)} has {'x1 y1 x2 y2'.split()[j]} = "
                          f"{float(r[i, 1 + j])!r}, which scaled by {plan.spatial_scale} is "
                          f"{corners[i, j]}; a scaled corner must be finite and within ±2^31")
    return np.concatenate([batch[:, None], corners], axis=1).astype(np.int64)
