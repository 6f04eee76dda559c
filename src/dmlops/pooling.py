"""Validation and planning of the pooling family (SPEC 2, 3.1-3.5): one path for the
functional API and the description layer.

Checks run in SPEC 7's order: types, ranks and feature level; then argument lengths; then
values. A plan is a frozen, hashable record of everything a kernel needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._args import check_rank, check_type, operator_row, spatial
from .dtypes import DataType
from .window import Window, check_fits, check_output_size, check_window_values, floor_size

INDEX_LIMIT_32 = 2**32 - 1
EMPTY_INDEX = {DataType.UINT32: 2**32 - 1, DataType.UINT64: 2**64 - 1, DataType.INT64: -1}


@dataclass(frozen=True)
class PoolPlan:
    kind: str                  # "average" | "max" | "max_grad" | "quantized"
    op: str                    # DirectML operator name
    geometry: Window
    dtype: DataType            # input data type
    out_dtype: DataType        # output data type
    indices_dtype: DataType | None = None
    include_padding: bool = False

    @property
    def empty_index(self):
        return EMPTY_INDEX.get(self.indices_dtype)


def check_tensor_types(op, level, names, roles):
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
            raise names.unsupported(f"{names(field)} is {r}-D; it must have the rank of "
                                    f"{names(roles[0][0])} ({rank}-D)")
    return row


def same_type(names, first, dt1, second, dt2):
    if dt1 != dt2:
        raise names.unsupported(f"{names(second)} has data type {dt2.name}; it must match "
                                f"{names(first)} ({dt1.name})")


def window_params(names, rank, window_size, strides, start_padding, end_padding,
                  dilations, allow_scalar):
    """Lengths of the spatial arguments (phase 2)."""
    k = rank - 2
    w = spatial(window_size, k, names, "window_size", rank, allow_scalar)
    s = spatial(strides, k, names, "strides", rank, allow_scalar)
    a = spatial(start_padding, k, names, "start_padding", rank, allow_scalar)
    b = spatial(end_padding, k, names, "end_padding", rank, allow_scalar)
    d = spatial(dilations, k, names, "dilations", rank, allow_scalar)
    return w, s, a, b, d


def check_sizes(sizes, names, field):
    for i, v in enumerate(sizes):
        if v < 1:
            raise names.invalid(f"{names(field, i)} = {v} must be at least 1 (only N and C "
                                f"may be 0, and only in the functional API)")


def geometry(row, names, in_sizes, params, output_sizes):
    """Values (phase 3): window values, fit, output sizes ``F`` or ``F + 1``.

    ``output_sizes`` is None (floor) or the full output sizes, indexed as canonical full
    dimensions (the caller's Names maps them to its own spelling).
    """
    w, s, a, b, d = params
    check_window_values(w, s, a, b, d, names)
    if not row.dilations and any(v != 1 for v in d):
        raise names.invalid(f"{names('dilations')} = {list(d)}: this operator has no "
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
                raise names.invalid(f"{names('output_sizes', dim)} = {output_sizes[dim]} must "
                                    f"equal the input's {what} ({in_sizes[dim]})")
        for i in range(len(w)):
            check_output_size(2 + i, output_sizes[2 + i], in_sizes[2 + i], w[i], s[i], a[i],
                              b[i], d[i], names)
    return Window(tuple(in_sizes), w, s, a, b, d, tuple(output_sizes))


def check_index_type(in_sizes, idx_dt, names, field):
    count = int(np.prod(in_sizes, dtype=object))
    if idx_dt == DataType.UINT32 and count > INDEX_LIMIT_32:
        raise names.invalid(f"{names(field)} is UINT32, but the input has {count} elements, "
                            f"more than 2^32-1: its indices need UINT64 (or INT64)")


def default_index_type(in_sizes) -> DataType:
    count = int(np.prod(in_sizes, dtype=object))
    return DataType.UINT32 if count <= INDEX_LIMIT_32 else DataType.UINT64


def quantization_param_shape(shape, in_sizes, names, field):
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
        f"{names(field)} has shape {shape}; expected all ones (per tensor, e.g. "
        f"{(1,) * rank}) or {per_channel} (per channel); for C per-channel values use "
        f"reshape{per_channel}")


def check_scale_values(scale: np.ndarray, names, field):
    bad = ~(np.isfinite(scale) & (scale > 0))
    if bad.any():
        value = scale.reshape(-1)[np.argmax(bad.reshape(-1))].item()
        raise names.invalid(f"{names(field)} contains {value!r}; a scale must be finite and "
                            f"greater than 0 (after rounding to float32)")


def check_zero_point_values(zp: np.ndarray, dt: DataType, names, field):
    info = np.iinfo(dt.dtype)
    values = np.asarray(zp, dtype=object).reshape(-1)
    for v in values:
        if not info.min <= int(v) <= info.max:
            raise names.invalid(f"{names(field)} = {int(v)} is outside the range of "
                                f"{dt.name} [{info.min}, {info.max}]")


# --- execution ---------------------------------------------------------------------------

def run_pooling(plan: PoolPlan, kernels, x, outputs, extra=None):
    """Run ``plan`` on native-order input arrays; ``outputs`` are views the kernel fills
    (values first, then indices for max pooling)."""
    g = plan.geometry
    if plan.kind == "average":
        kernels.average_pooling(x, outputs[0], g.window, g.strides, g.start, g.end,
                                g.dilations, plan.include_padding)
    elif plan.kind == "max":
        kernels.max_pooling(x, outputs[0], outputs[1] if len(outputs) > 1 else None, g.window,
                            g.strides, g.start, g.dilations, plan.empty_index)
    elif plan.kind == "max_grad":
        kernels.max_pooling_grad(x, extra["dy"], outputs[0], g.window, g.strides, g.start,
                                 g.dilations)
    elif plan.kind == "quantized":
        kernels.quantized_average_pooling(x, extra["scale_in"], extra["zp_in"],
                                          extra["scale_out"], extra["zp_out"], outputs[0],
                                          g.window, g.strides, g.start, g.end, g.dilations,
                                          plan.include_padding)
    else:  # pragma: no cover
        raise AssertionError(plan.kind)
