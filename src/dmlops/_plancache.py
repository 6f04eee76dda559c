"""The plan cache: a repeated call is validated and planned once (issue 27: a small call's
latency was mostly Python checking arguments it had checked before).

A planner is a pure function from a call's facts to a plan: it reads the arrays it is given
only through :class:`ArrayFacts` (shape, strides, dtype, writeability; never memory), and its
other arguments only by value. So a plan may be kept under a key that holds exactly those
facts and values, and a later call with the same key reuses it without changing anything the
caller can see:

- a valid call gets the plan that validating it again would give;
- an invalid call is never kept (an exception is not a plan), so it raises from the planner
  itself, every time, with today's class and message, whatever valid call came before;
- what a key cannot hold is the caller's business on every call: whether an output overlaps
  an input in memory, alignment, the arrays' contents, the backend.

Keys tell apart what ``==`` does not (``True`` and ``1``, ``2`` and ``2.0``, ``0.0`` and
``-0.0`` validate or convert differently), and an argument of any other kind than the plain
values below is planned without the cache rather than trusted to be immutable.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np

__all__ = ["ArrayFacts", "planned", "clear"]

# Plans kept (each a few hundred bytes): far more than the distinct calls of one model's
# layers, so a model run layer by layer stays in the cache.
CACHE_SIZE = 1024
# An array argument (per-channel scales, a window size given as an array) is keyed by its
# bytes up to this many elements; a longer one is planned without the cache.
VALUE_ARRAY_LIMIT = 4096


if TYPE_CHECKING:
    from numpy.typing import NDArray

_T = TypeVar("_T")


class _Flags(NamedTuple):
    writeable: bool
    c_contiguous: bool
    f_contiguous: bool


class ArrayFacts:
    """What a planner may know of an array: its layout and dtype, never its memory. It reads
    like the array for those attributes (``shape``, ``strides``, ``dtype``, ``ndim``,
    ``itemsize``, ``flags.writeable`` / ``c_contiguous`` / ``f_contiguous``), so the checks
    written for arrays take it as well. All of it follows from :func:`array_key` (NumPy's
    contiguity flags are a function of shape, strides and item size)."""

    __slots__ = ("shape", "strides", "dtype", "flags")

    def __init__(self, a: np.ndarray) -> None:
        self.shape, self.strides, self.dtype = a.shape, a.strides, a.dtype
        f = a.flags
        self.flags = _Flags(f.writeable, f.c_contiguous, f.f_contiguous)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __repr__(self) -> str:
        return f"ArrayFacts(shape={self.shape}, strides={self.strides}, dtype={self.dtype})"


def array_key(a: NDArray[Any]) -> tuple[Any, ...]:
    return a.shape, a.strides, a.dtype, a.flags.writeable


class _Uncacheable(Exception):
    """An argument that is not a plain value: plan this call without the cache."""


_double_bits = struct.Struct("<d").pack
_ATOMS = (int, bool, str, type(None))
_ATOM_TYPES = frozenset(_ATOMS)


def value_key(v: Any) -> Any:
    """``v`` as a hashable key that only an equal value of the same type shares."""
    t = type(v)
    if t in _ATOMS:
        return t, v
    if t is float:          # by its bits: 0.0 and -0.0, NaN payloads
        return t, _double_bits(v)
    if t is tuple or t is list:
        return t, _values_key(v)
    if isinstance(v, np.generic):
        return t, v.dtype, v.tobytes()
    if t is np.ndarray and v.dtype.kind in "biuf" and v.size <= VALUE_ARRAY_LIMIT:
        return t, v.dtype, v.shape, v.tobytes()
    if isinstance(v, (np.dtype, enum.Enum)):
        return t, v
    if isinstance(v, type) and (v in (int, float, bool) or issubclass(v, np.generic)):
        return t, v         # a dtype spelled as a type: np.uint32, float
    if dataclasses.is_dataclass(v) and not isinstance(v, type) \
            and getattr(v, "__dataclass_params__").frozen:     # descriptions and TensorDesc
        return (t,) + tuple(value_key(getattr(v, f.name)) for f in dataclasses.fields(v))
    raise _Uncacheable


def _values_key(values: Sequence[Any]) -> tuple[Any, ...]:
    """The key of a sequence of values."""
    types = tuple(map(type, values))
    if _ATOM_TYPES.issuperset(types):   # the usual case: what value_key's pairs would say,
        return types, tuple(values)     # without a call per value
    keys: list[Any] = []                # (each value's type is in ``types``)
    for v, t in zip(values, types):
        if t in _ATOM_TYPES:
            keys.append(v)
        elif t is tuple:                # (sizes and paddings, usually the caller's constants)
            hit = _tuple_keys.get(id(v))
            keys.append(hit[1] if hit is not None and hit[0] is v else _tuple_key(v))
        elif t is float:                # (by its bits, as value_key)
            keys.append(_double_bits(v))
        else:
            keys.append(value_key(v))
    return types, tuple(keys)


# Keys of tuples of atoms by the tuple's identity (the entry holds the tuple, so its id is not
# reused while kept): a call's sizes are usually constants of the caller's code, the same
# object at every call, and keying their elements again cost most of a padding call's key.
_tuple_keys: dict[int, tuple[tuple[Any, ...], Any]] = {}


def _tuple_key(v: tuple[Any, ...]) -> Any:
    inner = tuple(map(type, v))
    if not _ATOM_TYPES.issuperset(inner):
        return value_key(v)
    key = (inner, v)
    if len(_tuple_keys) >= CACHE_SIZE:
        _tuple_keys.clear()
    _tuple_keys[id(v)] = (v, key)
    return key


def _operand_key(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return array_key(v)
    if type(v) is tuple or type(v) is list:     # out= pairs
        return (type(v),) + tuple(_operand_key(e) for e in v)
    return value_key(v)


def _operands_key(operands: tuple[Any, ...]) -> tuple[Any, ...]:
    """``tuple(map(_operand_key, operands))``, the usual operands (arrays, ``None``) without
    a call each: this runs on every call."""
    keys: list[Any] = []
    for v in operands:
        if type(v) is np.ndarray:
            keys.append((v.shape, v.strides, v.dtype, v.flags.writeable))
        elif v is None:
            keys.append(None)
        else:
            keys.append(_operand_key(v))
    return tuple(keys)


def _operand_facts(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ArrayFacts(v)
    if type(v) is tuple or type(v) is list:
        return type(v)(_operand_facts(e) for e in v)
    return v        # None, or a wrong kind of argument for the planner to report


class _Plans:
    """The kept plans, at most ``size``: the oldest is dropped first. Looking up is one
    dictionary read (atomic, so calls from several threads need no lock); adding takes a
    lock, so that dropping stays exact."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._plans: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.lookup = self._plans.get       # (the dictionary's own method: one call less)

    def put(self, key: Any, plan: Any) -> None:
        with self._lock:
            self._plans[key] = plan
            while len(self._plans) > self.size:
                self._plans.popitem(last=False)

    def __len__(self) -> int:
        return len(self._plans)

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()


_plans = _Plans(CACHE_SIZE)


def planned(planner: Callable[..., _T], operands: tuple[Any, ...], params: dict[str, Any]
            ) -> _T:
    """``planner(*operands, **params)``, kept for the next call with the same key.

    ``operands`` are the call's arrays (inputs and ``out=``, already ``np.asarray``-ed where
    the caller converts): each array, also inside a tuple or list, reaches the planner as its
    :class:`ArrayFacts`; anything else as given. ``params`` are the planner's keyword-only
    parameters, every one of them in the planner's order (they have no defaults, and each
    caller writes them in that order: ``tests/test_plan_cache.py`` checks it), so they are
    keyed by value alone (their names in the key cost a small call a third of a µs). They
    reach the planner as given; it must keep no reference to one (a copy where it needs the
    values) and may raise: nothing is kept then.
    """
    try:
        key = (planner, _operands_key(operands), _values_key(tuple(params.values())))
    except _Uncacheable:
        return planner(*map(_operand_facts, operands), **params)
    plan: _T | None = _plans.lookup(key)
    if plan is None:
        plan = planner(*map(_operand_facts, operands), **params)
        _plans.put(key, plan)
    return plan


def clear() -> None:
    """Forget every kept plan (tests: a cold call)."""
    _plans.clear()
