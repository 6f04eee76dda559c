"""Tensor descriptions (SPEC 1.2) and the binding of arrays to them.

A :class:`TensorDesc` only records what it is given (spellings normalised); every rule is
checked by :func:`check_tensor_desc` when an operator is compiled.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ._args import UINT_MAX, dtype_of, is_int
from .dtypes import DataType, data_type
from .errors import DmlError, Names

if TYPE_CHECKING:
    from numpy.typing import DTypeLike, NDArray

    from ._plancache import ArrayFacts
    from ._types import DataTypeLike, Ints, ScalarT

__all__ = ["TensorDesc"]


def _maybe_type(value: Any) -> Any:
    try:
        return data_type(value)
    except DmlError:
        return value          # reported by compile_operator


def _maybe_tuple(value: Any) -> Any:
    if value is None:
        return None
    try:
        return tuple(int(v) if is_int(v) else v for v in value)
    except TypeError:
        return value


@dataclass(frozen=True, init=False)
class TensorDesc:
    """DirectML's DML_BUFFER_TENSOR_DESC: data type, sizes, optional element strides.

    >>> t = TensorDesc("FLOAT32", (1, 1, 3, 5), strides=(15, 1, 5, 1))   # NHWC in memory
    >>> t.minimum_size_in_bytes
    60
    """

    # the normalised spellings; a value that is none is kept as given, for compile_operator
    # to report (so these say what a valid description holds)
    data_type: DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None
    total_tensor_size_in_bytes: int | None
    flags: int
    guaranteed_base_offset_alignment: int
    dimension_count: int | None

    def __init__(self, data_type: DataTypeLike, sizes: Ints,
                 strides: Ints | None = None, *,
                 total_tensor_size_in_bytes: int | None = None, flags: int = 0,
                 guaranteed_base_offset_alignment: int = 0,
                 dimension_count: int | None = None) -> None:
        set_ = object.__setattr__
        set_(self, "data_type", _maybe_type(data_type))
        set_(self, "sizes", _maybe_tuple(sizes))
        set_(self, "strides", _maybe_tuple(strides))
        set_(self, "flags", flags)
        set_(self, "guaranteed_base_offset_alignment", guaranteed_base_offset_alignment)
        if dimension_count is None and isinstance(self.sizes, tuple):
            dimension_count = len(self.sizes)
        set_(self, "dimension_count", dimension_count)
        if total_tensor_size_in_bytes is None:
            try:    # defaults to the minimum; a malformed desc is reported at compile time
                total_tensor_size_in_bytes = self.minimum_size_in_bytes
            except (AttributeError, TypeError, ValueError):
                pass
        set_(self, "total_tensor_size_in_bytes", total_tensor_size_in_bytes)

    @property
    def dtype(self) -> np.dtype:
        return self.data_type.dtype

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def element_strides(self) -> tuple[int, ...]:
        """The strides in elements (packed row-major when none were given)."""
        if self.strides is not None:
            return self.strides
        out, acc = [], 1
        for size in reversed(self.sizes):
            out.append(acc)
            acc *= size
        return tuple(reversed(out))

    @property
    def span(self) -> int:
        """Elements a buffer must hold: ``Σ (sizes-1)*strides + 1``."""
        return sum((s - 1) * t for s, t in zip(self.sizes, self.element_strides)) + 1

    @property
    def minimum_size_in_bytes(self) -> int:
        raw = self.span * self.data_type.itemsize
        return (raw + 3) // 4 * 4


def check_tensor_desc(t: object, names: Names, field: str) -> None:
    """Every rule of SPEC 1.2 for one tensor; data type and rank problems are unsupported."""
    if not isinstance(t, TensorDesc):
        raise names.invalid(lambda n: f"{n(field)} must be a TensorDesc, got {type(t).__name__}")
    if not isinstance(t.data_type, DataType):
        dtype_of(t.data_type, names, field)     # raises
    if not isinstance(t.sizes, tuple) or not all(is_int(v) for v in t.sizes):
        raise names.invalid(lambda n: f"{n(field, subfield='sizes')} = {t.sizes!r} must be a "
                                      f"sequence of integers")
    if not 1 <= len(t.sizes) <= 8:
        raise names.unsupported(lambda n: f"{n(field, subfield='sizes')} has {len(t.sizes)} "
                                          f"dimensions; a tensor has 1 to 8")


def check_tensor_values(t: TensorDesc, names: Names, field: str) -> None:
    """Phase-3 checks of a tensor description: sizes, strides, total size, flags."""
    if t.dimension_count is not None and t.dimension_count != len(t.sizes):
        raise names.invalid(lambda n: f"{n(field, subfield='dimension_count')} = "
                                      f"{t.dimension_count!r} does not match its {len(t.sizes)} "
                                      f"sizes")
    for i, v in enumerate(t.sizes):
        if v < 1:
            raise names.invalid(lambda n: f"{n(field, i, 'sizes')} = {v} must be at least 1 "
                                          f"(DirectML has no empty tensors)")
    if t.strides is not None:
        if not isinstance(t.strides, tuple) or len(t.strides) != len(t.sizes):
            raise names.invalid(lambda n: f"{n(field, subfield='strides')} = {t.strides!r} must "
                                          f"have one value per dimension ({len(t.sizes)})")
        for i, v in enumerate(t.strides):
            if not is_int(v) or v < 0:
                raise names.invalid(lambda n: f"{n(field, i, 'strides')} = {v!r} must be a "
                                              f"non-negative integer (strides count elements)")
            if v > UINT_MAX:
                raise names.invalid(lambda n: f"{n(field, i, 'strides')} = {v} is larger than "
                                              f"{UINT_MAX} (2^32-1), the largest value of "
                                              f"DirectML's UINT strides")
    total = t.total_tensor_size_in_bytes
    if total is not None:
        if not is_int(total):
            raise names.invalid(lambda n: f"{n(field, subfield='total_tensor_size_in_bytes')} = "
                                          f"{total!r} must be an integer (a number of bytes)")
        if total < t.minimum_size_in_bytes:
            raise names.invalid(lambda n: f"{n(field, subfield='total_tensor_size_in_bytes')} = "
                                          f"{total!r} is smaller than the minimum "
                                          f"{t.minimum_size_in_bytes} bytes (last element offset + "
                                          f"1, times the element size, rounded up to 4)")
    if t.flags not in (0, 1):
        raise names.invalid(lambda n: f"{n(field, subfield='flags')} = {t.flags!r}; accepted: 0 "
                                      f"(NONE) or 1 (OWNED_BY_DML)")
    align = t.guaranteed_base_offset_alignment
    if not is_int(align) or (align != 0 and (align & (align - 1) or align < t.data_type.itemsize)):
        raise names.invalid(lambda n: f"{n(field, subfield='guaranteed_base_offset_alignment')} = "
                                      f"{align!r} must be 0 or a power of two at least the element "
                                      f"size")


def strides_alias(sizes: Sequence[int], strides: Sequence[int], itemsize: int = 1) -> bool:
    """Whether two distinct elements of a layout share memory: ``strides`` in units of which
    each element spans ``itemsize`` (elements for a description, bytes for an array), of any
    sign. Exact.

    Most layouts nest (sorted by stride, each steps over all that the smaller ones span),
    which settles it at once. Otherwise the layout is halved along a dimension again and
    again: it is one-to-one exactly when its larger half is and the two halves are disjoint
    (the smaller half is a shifted part of the larger), and NumPy decides disjointness
    exactly (``np.shares_memory``); a problem beyond its effort bound counts as sharing.

    >>> strides_alias((2, 3), (3, 2)), strides_alias((2, 3), (2, 1))
    (False, True)
    """
    sizes = [int(n) for n in sizes]
    strides = [abs(int(st)) for st in strides]
    dims = sorted((st, n) for n, st in zip(sizes, strides) if n > 1)
    span = itemsize
    for st, n in dims:
        if st < span:
            break
        span += (n - 1) * st
    else:
        return False
    if any(st == 0 for st, _ in dims):
        return True
    if itemsize + sum((n - 1) * st for st, n in dims) >= 2**62:
        return True             # (beyond any address space: NumPy's arithmetic would wrap)
    shape = [n for _, n in dims]
    base = np.empty(1, np.dtype((np.void, itemsize)))
    # (views that describe the layout; nothing reads through them)
    whole = np.lib.stride_tricks.as_strided(base, shape, [st for st, _ in dims])
    while max(shape) > 1:
        d = shape.index(max(shape))
        m = shape[d] // 2
        cut = [slice(None)] * len(shape)
        cut[d] = slice(0, m)
        lower = whole[tuple(cut)]
        cut[d] = slice(m, shape[d])
        whole = whole[tuple(cut)]
        try:
            # (NumPy's stubs allow max_work -1 or 0 alone; any bound works)
            if np.shares_memory(lower, whole, max_work=1_000_000):  # type: ignore[arg-type]
                return True
        except np.exceptions.TooHardError:
            return True
        shape[d] -= m
    return False


def native(a: NDArray[ScalarT]) -> NDArray[ScalarT]:
    """``a`` in native byte order (a copy only when it is not)."""
    return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


def native_dtype(a: NDArray[Any] | ArrayFacts) -> np.dtype[Any]:
    return a.dtype if a.dtype.isnative else a.dtype.newbyteorder("=")


def bind(array: Any, t: TensorDesc, names: Names, field: str, output: bool) -> NDArray[Any]:
    """A view of ``array`` with ``t``'s logical sizes (SPEC 4.2 bindings)."""
    if output:
        if not isinstance(array, np.ndarray):
            raise names.invalid(lambda n: f"{n(field)} must be a NumPy array to be written into, "
                                          f"got {type(array).__name__}")
    else:
        array = np.asarray(array)
    if native_dtype(array) != t.dtype:
        raise names.unsupported(lambda n: f"{n(field)} has dtype {array.dtype}; the description "
                                          f"says {t.data_type.name} ({t.dtype}), and bindings are "
                                          f"not cast")
    if output and not array.flags.writeable:
        raise names.invalid(lambda n: f"{n(field)} is read-only; an output must be writable")
    view: NDArray[Any]
    if t.strides is None and array.shape == t.sizes:
        view = array
    else:
        view = _strided_view(array, t, names, field, output)
    if output:
        check_distinct(view, names, field)
    return view


def _strided_view(array: NDArray[Any], t: TensorDesc, names: Names, field: str, output: bool
                  ) -> NDArray[Any]:
    """``bind``'s view of a flat buffer (or of a contiguous array, flattened) by ``t``'s
    sizes and element strides."""
    if t.strides is None and array.ndim != 1:
        raise names.invalid(lambda n: f"{n(field)} has shape {array.shape}; expected the sizes "
                                      f"{t.sizes} or a flat 1-D buffer")
    flat = array.reshape(-1) if array.ndim != 1 else array
    if output and not np.shares_memory(flat, array):
        raise names.invalid(lambda n: f"{n(field)} of shape {array.shape} cannot be viewed as a "
                                      f"flat buffer without a copy; bind a 1-D or contiguous array")
    if flat.shape[0] < t.span:
        raise names.invalid(lambda n: f"{n(field)} holds {flat.shape[0]} elements; the tensor's "
                                      f"sizes {t.sizes} and strides {t.element_strides} need at "
                                      f"least {t.span}")
    step = flat.strides[0]
    return np.lib.stride_tricks.as_strided(
        flat, shape=t.sizes, strides=tuple(s * step for s in t.element_strides),
        writeable=output)


def check_distinct(out: NDArray[Any] | ArrayFacts, names: Names, field: str) -> None:
    """An output array's elements must not share memory (SPEC 4.2): a layout written twice
    over would depend on the order of the writes."""
    if out.flags.c_contiguous or out.flags.f_contiguous:
        return
    if strides_alias(out.shape, out.strides, out.itemsize):
        raise names.invalid(lambda n: f"{n(field)} has shape {out.shape} and byte strides "
                                      f"{out.strides}, which make two of its elements share "
                                      f"memory; an output's elements must be distinct")


@lru_cache(maxsize=None)
def memory_bytes() -> int:
    """This machine's memory in bytes (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0


def beyond_memory(nbytes: int) -> str:
    """What to say of the size of a buffer of ``nbytes`` larger than the machine's memory (which the
    system might promise and then kill the process for as it fills), or "" where it fits or
    the memory is unknown."""
    memory = memory_bytes()
    if not memory or nbytes <= memory:
        return ""
    return (f"{nbytes} bytes ({nbytes / 2**30:.1f} GiB), more than this machine's "
            f"{memory / 2**30:.1f} GiB of memory")


def new_array(shape: Sequence[int], dtype: DTypeLike, names: Names, field: str
              ) -> NDArray[Any]:
    """A new output array, or an InvalidArgumentError naming its size where it cannot be
    had: more bytes than the machine's memory (``beyond_memory``), or than NumPy or the
    allocator give.

    >>> new_array((2, 3), np.float32, Names("example"), "output").shape
    (2, 3)
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    # (messages made only on failure: a small call's time is mostly such work)
    too_big = beyond_memory(nbytes)
    if too_big:
        raise names.invalid(lambda n: f"{n(field)} of shape {list(shape)} ({dtype}) needs "
                                      f"{too_big}")
    try:
        return np.empty(shape, dtype=dtype)
    except (MemoryError, ValueError) as e:
        raise names.invalid(lambda n: f"{n(field)} of shape {list(shape)} ({dtype}) needs {nbytes} "
                                      f"bytes, which cannot be allocated: {e}") from None


def check_fits_memory(arrays: Sequence[tuple[str, Sequence[int], DTypeLike]], names: Names
                      ) -> None:
    """Several new arrays ``(field, shape, dtype)`` together within the machine's memory."""
    total = 0
    for _, shape, dt in arrays:
        total += math.prod(shape) * np.dtype(dt).itemsize
    too_big = beyond_memory(total)
    if too_big:
        raise names.invalid(lambda n: f"{', '.join(n(f) for f, _, _ in arrays)} together need "
                                      f"{too_big}")


def check_no_overlap(names: Names, inputs: Iterable[tuple[str, NDArray[Any]]],
                     outputs: Iterable[tuple[str, NDArray[Any]]]) -> None:
    """An output may share memory neither with an input nor with another output."""
    earlier = list(inputs)
    for fo, o in outputs:
        for fi, a in earlier:
            if np.may_share_memory(o, a):
                try:
                    # (NumPy's stubs allow max_work -1 or 0 alone; any bound works)
                    overlap = np.shares_memory(o, a, max_work=100_000)  # type: ignore[arg-type]
                except np.exceptions.TooHardError:
                    overlap = True
                if overlap:
                    raise names.invalid(lambda n: f"{n(fo)} shares memory with {n(fi)}; outputs "
                                                  f"must not overlap inputs or each other")
        earlier.append((fo, o))


def with_native_outputs(views: list[NDArray[Any]], run: Callable[[list[NDArray[Any]]], object]
                        ) -> None:
    """Run ``run(outputs)`` with native-byte-order outputs, copying back where a view is not."""
    for v in views:     # (a loop, not all(): this runs on every call)
        if not v.dtype.isnative:
            break
    else:                   # the usual case: no copies
        run(views)
        return
    temps = [v if v.dtype.isnative else np.empty(v.shape, v.dtype.newbyteorder("="))
             for v in views]
    run(temps)
    for v, t in zip(views, temps):
        if t is not v:
            v[...] = t
