"""Normalisers shared by every operator family: integers, spatial tuples, level checks.

Each returns the canonical form or raises with the caller's spelling (see :class:`Names`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .dtypes import DataType, FeatureLevel, data_type
from .errors import DmlError, Names
from .support import OPERATORS, first_level

if TYPE_CHECKING:
    from typing import TypeGuard

    from .support import Row

_T = TypeVar("_T")


def is_int(value: object) -> TypeGuard[int | np.integer[Any]]:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def as_int_tuple(value: Any, names: Names, field: str) -> tuple[int, ...]:
    """A sequence of integers (no bools, no floats), as given: lengths are checked later."""
    if is_int(value):
        return (int(value),)
    if isinstance(value, (set, frozenset, dict)):
        raise names.invalid(lambda n: f"{n(field)} = {value!r} must be an integer or a sequence of "
                                      f"integers (a {type(value).__name__} has no order)")
    try:
        items = list(value)
    except TypeError:
        raise names.invalid(lambda n: f"{n(field)} = {value!r} must be an integer or a sequence of "
                                      f"integers") from None
    out = []
    for i, v in enumerate(items):
        if not is_int(v):
            raise names.invalid(lambda n: f"{n(field, i)} = {v!r} must be an integer")
        out.append(int(v))
    return tuple(out)


def spatial(value: Any, k: int, names: Names, field: str, rank: int, allow_scalar: bool = True
            ) -> tuple[int, ...]:
    """An int (every spatial dimension) or a sequence of ``k`` ints."""
    if allow_scalar and is_int(value):
        return (int(value),) * k
    values = as_int_tuple(value, names, field)
    if len(values) != k:
        raise names.invalid(lambda n: f"{n(field)} has {len(values)} values {list(values)}; "
                                      f"expected {k}, one per spatial dimension of the {rank}-D "
                                      f"input")
    return values


UINT_MAX = 2**32 - 1


def check_bounds(values: Any, minimum: int, names: Names, field: str, rule: str, *,
                 uint: bool = True, first: int = 0) -> None:
    """Each value (an int, or a sequence whose indices start at ``first`` in messages) at
    least ``minimum`` (else ``rule``), and with ``uint`` at most ``UINT_MAX``: the window,
    stride, dilation, padding and size fields are DirectML's 32-bit UINTs (larger ones would
    also overflow the kernels' 64-bit offsets). An array's sizes are not bounded: a
    broadcast view may be longer."""
    items = [(None, values)] if is_int(values) else enumerate(values, first)
    for i, v in items:
        if v < minimum:
            raise names.invalid(lambda n: f"{n(field, i)} = {v} {rule}")
        if uint and v > UINT_MAX:
            raise names.invalid(lambda n: f"{n(field, i)} = {v} is larger than {UINT_MAX} "
                                          f"(2^32-1), the largest value of DirectML's UINT fields")


def reraise(names: Names, fn: Callable[..., _T], *args: Any, field: str | None = None,
            subfield: str | None = None) -> _T:
    """Call a context-free normaliser and prefix its error with the operator's name; with
    ``field``, the message starts with its label (given to ``fn`` in ``args``), and the
    field (narrowed to ``subfield``) is the error's place."""
    try:
        return fn(*args)
    except DmlError as e:
        if field is None:
            raise names.error(type(e), str(e)) from None
        raise names.wrap(e, field, subfield) from None


def dtype_of(value: Any, names: Names, field: str) -> DataType:
    return reraise(names, data_type, value, f"{names(field)} has data type", field=field,
                   subfield="data_type")


def operator_row(op: str, level: FeatureLevel | None, names: Names) -> Row:
    """The support row of ``op`` at ``level``; an operator the level lacks is unsupported."""
    info = OPERATORS[op]
    row = info.row(level)
    if row is None:     # (about the operator itself: its place is the operator type)
        raise names.unsupported(f"{info.operator_type} needs feature level {info.since} or "
                                f"later; the target level is {level}", field="operator_type")
    return row


def _level_text(level: FeatureLevel | None) -> str:
    return "extended mode" if level is None else f"feature level {level}"


def check_type(op: str, level: FeatureLevel | None, row: Row, role: str, dt: DataType,
               names: Names, field: str) -> None:
    allowed = row.types[role]
    if dt in allowed:
        return
    later = first_level(op, lambda r: dt in r.types.get(role, ()))
    hint = f" ({dt.name} needs feature level {later} or later)" if later and level is not None \
        and later > level else ""
    listed = ", ".join(t.name for t in DataType if t in allowed)
    raise names.unsupported(lambda n: f"{n(field)} has data type {dt.name}, which "
                                      f"{_level_text(level)} does not support here; accepted: "
                                      f"{listed}{hint}",
                            subfield="data_type")


def check_rank(op: str, level: FeatureLevel | None, row: Row, rank: int, names: Names,
               field: str, what: str = "tensor") -> None:
    if rank in row.ranks:
        return
    later = first_level(op, lambda r: rank in r.ranks)
    hint = f" ({rank}-D needs feature level {later} or later)" if later and level is not None \
        and later > level else ""
    listed = ", ".join(str(r) for r in sorted(row.ranks))
    raise names.unsupported(lambda n: f"{n(field)} is {rank}-D; {_level_text(level)} accepts a "
                                      f"{what} of rank {listed}{hint}", subfield="sizes")

