"""Which feature level supports what: the one table (SPEC 1.3, 3, 5).

Each operator has an entry with its DirectML enum value, the level that introduced it, and a
list of ``(level, row)`` steps: from that level on, ``row`` says which data types each tensor
role accepts and which ranks. Extended mode (no level given) is the 6.4 row plus the
``EXTENDED`` row. Nothing else in the library decides support.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .dtypes import DataType as T, FeatureLevel as L, PaddingMode as M

F16_32 = frozenset({T.FLOAT16, T.FLOAT32})
F_ALL = F16_32 | {T.FLOAT64}
INT8S = frozenset({T.INT8, T.UINT8})
FL50_TYPES = F16_32 | {T.INT64, T.INT32, T.INT16, T.INT8, T.UINT64, T.UINT32, T.UINT16, T.UINT8}
PAD21_TYPES = F16_32 | {T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8}
ALL = frozenset(T)
U32 = frozenset({T.UINT32})
U32_64 = frozenset({T.UINT32, T.UINT64})


@dataclass(frozen=True)
class Row:
    """What a level accepts: ``types`` maps a tensor role to its data types; ``ranks`` is the
    set of tensor ranks; ``modes`` the padding modes; ``dilations`` whether the operator's
    Dilations field may differ from 1 (in extended mode, for operators DirectML gives none)."""

    types: dict[str, frozenset[T]]
    ranks: frozenset[int]
    modes: frozenset[M] = frozenset()
    dilations: bool = False


@dataclass(frozen=True)
class OperatorInfo:
    name: str                  # DirectML's name without DML_OPERATOR_
    value: int                 # DML_OPERATOR_TYPE value
    since: L
    steps: tuple[tuple[L, Row], ...]   # ascending; a later row replaces an earlier
    extended: Row | None = field(default=None)

    @property
    def operator_type(self) -> str:
        return "DML_OPERATOR_" + self.name

    def row(self, level: L | None) -> Row | None:
        """The row in force at ``level`` (``None``: extended mode); ``None`` if the operator
        does not exist yet at that level."""
        if level is None:
            return self.extended
        found = None
        for since, row in self.steps:
            if level >= since:
                found = row
        return found


R45 = frozenset({4, 5})
R4 = frozenset({4})
R_EXT = frozenset(range(3, 9))          # 1 to 6 spatial dimensions
R_PAD = frozenset(range(1, 9))
MODES_10 = frozenset({M.CONSTANT, M.EDGE, M.REFLECTION})
MODES_30 = MODES_10 | {M.SYMMETRIC}
MODES_64 = MODES_30 | {M.WRAP}


def _max_pool_steps(since: L, indices: bool, dilations: bool
                    ) -> tuple[tuple[tuple[L, Row], ...], Row]:
    def idx(s: frozenset[T]) -> dict[str, frozenset[T]]:
        return {"indices": s} if indices else {}

    steps = [(since, Row({"data": F16_32, **idx(U32)}, R45, dilations=dilations)),
             (L.L3_0, Row({"data": F16_32 | INT8S, **idx(U32)}, R45, dilations=dilations)),
             (L.L5_0, Row({"data": FL50_TYPES, **idx(U32_64)}, R45, dilations=dilations))]
    ext = Row({"data": FL50_TYPES | {T.FLOAT64}, **idx(U32_64 | {T.INT64})}, R_EXT,
              dilations=dilations)
    return tuple(s for s in steps if s[0] >= since or s is steps[0]), ext


def _op(name: str, value: int, since: L, steps: Sequence[tuple[L, Row]], extended: Row
        ) -> OperatorInfo:
    return OperatorInfo(name, value, since, tuple(steps), extended)


OPERATORS = {
    info.name: info for info in [
        _op("AVERAGE_POOLING", 56, L.L1_0, [(L.L1_0, Row({"data": F16_32}, R45))],
            Row({"data": F_ALL}, R_EXT)),
        _op("AVERAGE_POOLING1", 166, L.L6_2, [(L.L6_2, Row({"data": F16_32}, R45, dilations=True))],
            Row({"data": F_ALL}, R_EXT, dilations=True)),
        _op("AVERAGE_POOLING_GRAD", 130, L.L3_0, [(L.L3_0, Row({"data": F16_32}, R45))],
            Row({"data": F_ALL}, R_EXT, dilations=True)),
        _op("QUANTIZED_LINEAR_AVERAGE_POOLING", 169, L.L6_2,
            [(L.L6_2, Row({"data": INT8S, "output": INT8S}, R45, dilations=True))],
            Row({"data": INT8S, "output": INT8S}, R_EXT, dilations=True)),
        _op("MAX_POOLING", 58, L.L1_0, *_max_pool_steps(L.L1_0, False, False)),
        _op("MAX_POOLING1", 91, L.L2_0, *_max_pool_steps(L.L2_0, True, False)),
        _op("MAX_POOLING2", 110, L.L2_1, *_max_pool_steps(L.L2_1, True, True)),
        _op("MAX_POOLING_GRAD", 131, L.L3_0,
            [(L.L3_0, Row({"data": F16_32}, R4, dilations=True)),
             (L.L4_0, Row({"data": F16_32}, R45, dilations=True))],
            Row({"data": F_ALL}, R_EXT, dilations=True)),
        _op("LP_POOLING", 57, L.L1_0, [(L.L1_0, Row({"data": F16_32}, R45))],
            Row({"data": F_ALL}, R_EXT)),
        _op("LP_POOLING1", 165, L.L6_2, [(L.L6_2, Row({"data": F16_32}, R45, dilations=True))],
            Row({"data": F_ALL}, R_EXT, dilations=True)),
        _op("MAX_UNPOOLING", 92, L.L2_0,
            [(L.L2_0, Row({"data": F16_32, "indices": U32}, R4)),
             (L.L5_0, Row({"data": FL50_TYPES, "indices": U32_64}, R4))],
            Row({"data": FL50_TYPES | {T.FLOAT64},
                 "indices": U32_64 | {T.INT32, T.INT64}}, frozenset(range(3, 9)))),
        _op("ROI_POOLING", 59, L.L1_0, [(L.L1_0, Row({"data": F16_32}, R4))],
            Row({"data": F_ALL}, R4)),
        _op("PADDING", 64, L.L1_0,
            [(L.L1_0, Row({"data": F16_32}, R45, MODES_10)),
             (L.L2_1, Row({"data": PAD21_TYPES}, R45, MODES_10)),
             (L.L3_0, Row({"data": PAD21_TYPES}, R45, MODES_30)),
             (L.L3_1, Row({"data": PAD21_TYPES}, R_PAD, MODES_30)),
             (L.L5_0, Row({"data": ALL}, R_PAD, MODES_30)),
             (L.L6_4, Row({"data": ALL}, R_PAD, MODES_64))],
            Row({"data": ALL}, R_PAD, MODES_64)),
        _op("PADDING1", 155, L.L5_0,
            [(L.L5_0, Row({"data": ALL}, R_PAD, MODES_30)),
             (L.L6_4, Row({"data": ALL}, R_PAD, MODES_64))],
            Row({"data": ALL}, R_PAD, MODES_64)),
    ]
}


def first_level(op: str, predicate: Callable[[Row], bool]) -> L | None:
    """The lowest level whose row satisfies ``predicate`` (used to say "needs level X")."""
    info = OPERATORS[op]
    for level in L:
        row = info.row(level)
        if row is not None and predicate(row):
            return level
    return None
