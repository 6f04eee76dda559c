"""The everyday layer (SPEC 4.1): NumPy in, NumPy out (PyTorch tensors in, tensors out;
Dask arrays in, lazy Dask arrays out), the public functions and their planners.

Each function validates through the same family modules as :func:`compile_operator` (in
extended mode, with the caller's argument names in messages), then runs the chosen backend's
kernel straight into ``out`` or a new C-contiguous array.

A function has two halves. Its planner (``_plan_*``) checks everything that follows from the
arguments' values and the arrays' shapes, strides and dtypes, and returns a :class:`dmlops._call.Call`;
being pure, it is kept by the plan cache (``_plancache``), so a repeated call skips it. The
rest runs on every call, the same for every function (``_calling``): it converts the arrays,
allocates the outputs not given, checks that a given one overlaps no input, chooses the
backend and runs the kernel. Both halves keep SPEC 7's order of checks, so a call raises the
same error whether or not a plan was kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from . import _dask
from . import padding as _pad
from . import pooling as _pool
from ._args import as_int_tuple, check_type, dtype_of, is_int
from ._call import Call
from ._calling import (execute, input_array, kernels_of, lazy_call, lazy_grad, lazy_pooling,
                       lazy_result, make_outputs, not_lazy, results_as_given)
from ._plancache import ArrayFacts, planned
from .dtypes import DataType, PaddingMode
from .errors import Names
from .tensor import check_distinct, native, native_dtype

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import ArrayLike, NDArray

    from ._types import (ArrayInput, Chunks, DaskArrayLike, DataTypeLike, Float, ForeignT,
                         IndexArray, IntOrInts, LazyT, PaddingModeLike, QuantizedArray, ScalarT)
    from .support import Row
    from .window import Window

__all__ = ["average_pooling", "average_pooling_grad", "max_pooling", "max_pooling_grad",
           "quantized_linear_average_pooling", "lp_pooling", "max_unpooling", "roi_pooling",
           "padding", "padding_grad"]


def _names(op: str, **fields: tuple[str, int]) -> Names:
    base = {"input": ("x", 0), "output": ("out", 0)}
    base.update(fields)
    return Names(op, base)


# --- every call -------------------------------------------------------------------------


# --- planning: pure, kept by the plan cache ---------------------------------------------

def _output_sizes_label(output_sizes: Any, rank: int) -> tuple[str, int]:
    if output_sizes is None or is_int(output_sizes):
        return ("output_sizes", -2)
    try:
        n = len(output_sizes)
    except TypeError:
        return ("output_sizes", -2)
    return ("output_sizes", 0 if n == rank else -2)


def _full_output_sizes(output_sizes: Any, in_sizes: Sequence[int], names: Names
                       ) -> tuple[int, ...] | None:
    """``None``, k spatial sizes or the k + 2 full sizes -> full sizes (phase 2: lengths)."""
    return None if output_sizes is None else _full_sizes(output_sizes, in_sizes, names,
                                                         "output_sizes")


def _full_sizes(sizes: Any, like: Sequence[int], names: Names, field: str) -> tuple[int, ...]:
    """``sizes`` as k spatial sizes or k + 2 full sizes (N, C as ``like``'s) -> full sizes."""
    k, rank = len(like) - 2, len(like)
    values = (int(sizes),) * k if is_int(sizes) else as_int_tuple(sizes, names, field)
    if len(values) == k:
        return tuple(like[:2]) + values
    if len(values) == rank:
        return values
    raise names.invalid(lambda n: f"{n(field)} has {len(values)} values {list(values)}; "
                                  f"expected {k} (spatial sizes) or {rank} (full sizes, N and C "
                                  f"first)")


def _out_type(out: object, dt: DataType, names: Names, field: str) -> None:
    """Phase 1 check of an ``out=`` array (its facts, to a planner): an array of the right
    dtype."""
    if not isinstance(out, ArrayFacts):
        raise names.invalid(lambda n: f"{n(field)} must be a NumPy array, got {type(out).__name__}")
    if native_dtype(out) != dt.dtype:
        raise names.unsupported(lambda n: f"{n(field)} has dtype {out.dtype}; expected {dt.dtype}")


def _out_values(out: ArrayFacts, shape: Sequence[int], names: Names, field: str) -> None:
    if out.shape != tuple(shape):
        raise names.invalid(lambda n: f"{n(field)} has shape {out.shape}; expected {tuple(shape)}")
    if not out.flags.writeable:
        raise names.invalid(lambda n: f"{n(field)} is read-only; out= must be writable")
    check_distinct(out, names, field)


def _call(names: Names, plan: object, inputs: Sequence[str], outs: Sequence[Any],
          specs: Sequence[tuple[str, Sequence[int], DataType]],
          extra: dict[str, NDArray[Any]] | None = None) -> Call:
    """Phase 3 of the given ``out=`` arrays (shape, writable, distinct elements), and the
    planned call. ``inputs``: the array operands' fields; ``specs``: ``(field, shape,
    DataType)`` of each output."""
    for out, (field, shape, _) in zip(outs, specs):
        if out is not None:
            _out_values(out, shape, names, field)
    return Call(names, plan, tuple(names(f) for f in inputs),
                 tuple((names(f), tuple(shape), dt.dtype) for f, shape, dt in specs), extra)


def _spatial_sizes_ok(sizes: Sequence[int], names: Names, field: str = "input") -> None:
    for d in range(2, len(sizes)):
        if sizes[d] < 1:
            raise names.invalid(lambda n: f"{n(field)} has spatial size {sizes[d]} in dimension "
                                          f"{d}; spatial sizes must be at least 1 (only N or C may "
                                          f"be 0)")


def _geometry(row: Row, names: Names, x: ArrayFacts, window: tuple[Any, Any, Any, Any, Any],
              output_sizes: Any) -> Window:
    """``window``: the function's window_size, strides, start_padding, end_padding and
    dilations, as given."""
    params = _pool.window_params(names, x.ndim, *window, allow_scalar=True)
    full = _full_output_sizes(output_sizes, x.shape, names)
    _spatial_sizes_ok(x.shape, names)
    return _pool.geometry(row, names, x.shape, params, full)


def _include_padding(value: object, names: Names) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise names.invalid(lambda n: f"{n('include_padding')} = {value!r} must be a bool")
    return bool(value)


# --- the functions ----------------------------------------------------------------------

def _plan_average_pooling(x: ArrayFacts, out: Any, *, window_size: Any, strides: Any,
                          start_padding: Any, end_padding: Any, dilations: Any,
                          include_padding: Any, output_sizes: Any) -> Call:
    names = _names("average_pooling", output_sizes=_output_sizes_label(output_sizes, x.ndim))
    dt = dtype_of(x.dtype, names, "input")
    row = _pool.check_tensor_types("AVERAGE_POOLING1", None, names,
                                   [("input", "data", dt, x.ndim)])
    if out is not None:
        _out_type(out, dt, names, "output")
    g = _geometry(row, names, x,
                  (window_size, strides, start_padding, end_padding, dilations), output_sizes)
    include = _include_padding(include_padding, names)
    _pool.check_divisors(names, g, include)
    plan = _pool.PoolPlan("average", "AVERAGE_POOLING1", g, dt, dt, None, include)
    return _call(names, plan, ["input"], [out], [("output", g.output_sizes, dt)])


@overload
def average_pooling(x: NDArray[ScalarT], window_size: IntOrInts, *, strides: IntOrInts = ...,
                    start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                    dilations: IntOrInts = ..., include_padding: bool | np.bool_ = ...,
                    output_sizes: IntOrInts | None = ..., out: NDArray[Any] | None = ...,
                    backend: str | None = ..., chunks: None = ...) -> NDArray[ScalarT]: ...


@overload
def average_pooling(x: ForeignT, window_size: IntOrInts, *, strides: IntOrInts = ...,
                    start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                    dilations: IntOrInts = ..., include_padding: bool | np.bool_ = ...,
                    output_sizes: IntOrInts | None = ...,
                    out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
                    chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def average_pooling(x: ArrayLike, window_size: IntOrInts, *, strides: IntOrInts = ...,
                    start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                    dilations: IntOrInts = ..., include_padding: bool | np.bool_ = ...,
                    output_sizes: IntOrInts | None = ..., out: NDArray[Any] | None = ...,
                    backend: str | None = ..., chunks: None = ...) -> NDArray[Any]: ...


@results_as_given
def average_pooling(x: ArrayInput, window_size: IntOrInts, *, strides: IntOrInts = 1,
                    start_padding: IntOrInts = 0, end_padding: IntOrInts = 0,
                    dilations: IntOrInts = 1, include_padding: bool | np.bool_ = False,
                    output_sizes: IntOrInts | None = None, out: Any = None,
                    backend: str | None = None, chunks: Chunks | None = None) -> Any:
    """Average of the real elements of each window (SPEC 3.1).

    The divisor counts real elements, or with ``include_padding`` real and padding positions
    (never the phantom positions past the padding of an ``F + 1`` output); a window with
    divisor 0 gives +0.0. Accumulates in float32 (float64 for float64 input).

    >>> import numpy as np
    >>> x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    >>> average_pooling(x, 2)[0, 0].tolist()
    [[3.0, 4.0], [6.0, 7.0]]

    A Dask array gives a lazy Dask array, the same bits whatever the chunking (SPEC 6);
    ``chunks`` (Dask inputs only) chunks the output, by default cut where the input is,
    divided by the stride.
    """
    params = {"window_size": window_size, "strides": strides, "start_padding": start_padding,
              "end_padding": end_padding, "dilations": dilations,
              "include_padding": include_padding, "output_sizes": output_sizes}
    if _dask.is_dask(x) or chunks is not None:
        return lazy_pooling("average_pooling", x, out, backend, chunks, _plan_average_pooling,
                            params)
    x = input_array(x, "average_pooling")
    call = planned(_plan_average_pooling, (x, out), params)
    (y,) = make_outputs(call, [out], [x])
    execute(call, backend, x, [y])
    return y


def _plan_max_pooling(x: ArrayFacts, out: Any, *, window_size: Any, strides: Any,
                      start_padding: Any, end_padding: Any, dilations: Any, output_sizes: Any,
                      pair: bool, indices_dtype: Any) -> Call:
    names = _names("max_pooling",
                   output_sizes=_output_sizes_label(output_sizes, x.ndim),
                   output=("out[0]" if pair else "out", 0),
                   indices=("out[1]" if indices_dtype is None else "indices_dtype", 0))
    dt = dtype_of(x.dtype, names, "input")
    row = _pool.check_tensor_types("MAX_POOLING2", None, names, [("input", "data", dt, x.ndim)])
    outs = [out, None] if pair else [out]
    idx_dt = None
    if pair:
        idx_dt = (_pool.default_index_type(x.shape) if indices_dtype is None
                  else dtype_of(indices_dtype, names, "indices"))
        check_type("MAX_POOLING2", None, row, "indices", idx_dt, names.with_fields(
            indices=("indices_dtype", 0)), "indices")
        if out is not None:
            if not (isinstance(out, (tuple, list)) and len(out) == 2
                    and all(isinstance(o, ArrayFacts) for o in out)):
                raise names.invalid(lambda n: f"{n('out')} must be a pair (values, indices) of "
                                              f"NumPy arrays when output_indices=True, got "
                                              f"{type(out).__name__}")
            outs = list(out)
            _out_type(outs[0], dt, names, "output")
            _out_type(outs[1], idx_dt, names.with_fields(indices=("out[1]", 0)), "indices")
    elif out is not None:
        _out_type(out, dt, names, "output")
    g = _geometry(row, names, x,
                  (window_size, strides, start_padding, end_padding, dilations), output_sizes)
    specs = [("output", g.output_sizes, dt)]
    if pair:
        assert idx_dt is not None   # (set above for a pair)
        _pool.check_index_type(x.shape, idx_dt, names.with_fields(
            indices=("indices_dtype", 0)), "indices")
        specs.append(("indices", g.output_sizes, idx_dt))
        names = names.with_fields(indices=("out[1]", 0))
    plan = _pool.PoolPlan("max", "MAX_POOLING2", g, dt, dt, idx_dt)
    return _call(names, plan, ["input"], outs, specs)


@overload
def max_pooling(x: NDArray[ScalarT], window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: Literal[False] = ..., indices_dtype: DataTypeLike | None = ...,
                out: NDArray[Any] | None = ..., backend: str | None = ..., chunks: None = ...
                ) -> NDArray[ScalarT]: ...


@overload
def max_pooling(x: NDArray[ScalarT], window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: Literal[True], indices_dtype: DataTypeLike | None = ...,
                out: Sequence[NDArray[Any]] | None = ..., backend: str | None = ...,
                chunks: None = ...) -> tuple[NDArray[ScalarT], IndexArray]: ...


@overload
def max_pooling(x: NDArray[ScalarT], window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: int | np.bool_ | np.integer[Any],
                indices_dtype: DataTypeLike | None = ...,
                out: NDArray[Any] | Sequence[NDArray[Any]] | None = ...,
                backend: str | None = ..., chunks: None = ...
                ) -> NDArray[ScalarT] | tuple[NDArray[ScalarT], IndexArray]: ...


@overload
def max_pooling(x: ForeignT, window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: Literal[False] = ..., indices_dtype: DataTypeLike | None = ...,
                out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
                chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def max_pooling(x: ForeignT, window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: Literal[True], indices_dtype: DataTypeLike | None = ...,
                out: Sequence[ForeignT | NDArray[Any]] | None = ..., backend: str | None = ...,
                chunks: Chunks | None = ...) -> tuple[ForeignT, ForeignT]: ...


@overload
def max_pooling(x: ForeignT, window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: int | np.bool_ | np.integer[Any],
                indices_dtype: DataTypeLike | None = ...,
                out: ForeignT | NDArray[Any] | Sequence[ForeignT | NDArray[Any]] | None = ...,
                backend: str | None = ..., chunks: Chunks | None = ...
                ) -> ForeignT | tuple[ForeignT, ForeignT]: ...


@overload
def max_pooling(x: ArrayLike, window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: Literal[False] = ..., indices_dtype: DataTypeLike | None = ...,
                out: NDArray[Any] | None = ..., backend: str | None = ..., chunks: None = ...
                ) -> NDArray[Any]: ...


@overload
def max_pooling(x: ArrayLike, window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: Literal[True], indices_dtype: DataTypeLike | None = ...,
                out: Sequence[NDArray[Any]] | None = ..., backend: str | None = ...,
                chunks: None = ...) -> tuple[NDArray[Any], IndexArray]: ...


@overload
def max_pooling(x: ArrayLike, window_size: IntOrInts, *, strides: IntOrInts = ...,
                start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
                output_indices: int | np.bool_ | np.integer[Any],
                indices_dtype: DataTypeLike | None = ...,
                out: NDArray[Any] | Sequence[NDArray[Any]] | None = ...,
                backend: str | None = ..., chunks: None = ...
                ) -> NDArray[Any] | tuple[NDArray[Any], IndexArray]: ...


@results_as_given
def max_pooling(x: ArrayInput, window_size: IntOrInts, *, strides: IntOrInts = 1,
                start_padding: IntOrInts = 0, end_padding: IntOrInts = 0, dilations: IntOrInts = 1,
                output_sizes: IntOrInts | None = None,
                output_indices: int | np.bool_ | np.integer[Any] = False,
                indices_dtype: DataTypeLike | None = None, out: Any = None,
                backend: str | None = None, chunks: Chunks | None = None) -> Any:
    """Maximum of the real elements of each window, optionally with its flat index (SPEC 3.4).

    Padding never wins; ties go to the lowest flat index; a NaN wins (the first NaN). The
    index is the row-major position over the whole input, N and C included. A window with no
    real element gives -inf (or the integer type's minimum) and the index 2^32-1 (UINT32),
    2^64-1 (UINT64) or -1 (INT64). ``indices_dtype`` defaults to uint32, or uint64 for inputs
    with more than 2^32-1 elements.

    >>> import numpy as np
    >>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
    >>> y, i = max_pooling(x, 2, output_indices=True)
    >>> y[0, 0].tolist(), i[0, 0].tolist()
    ([[4.0, 4.0], [6.0, 7.0]], [[4, 4], [7, 8]])

    A Dask array gives a lazy Dask array, the same bits whatever the chunking (SPEC 6);
    ``chunks`` (Dask inputs only) chunks the output, by default cut where the input is,
    divided by the stride.
    """
    if not isinstance(output_indices, (bool, np.bool_, int, np.integer)):
        raise Names("max_pooling").invalid(lambda n: f"{n('output_indices')} = "
                                                     f"{output_indices!r} must be a bool")
    pair = bool(output_indices)
    params = {"window_size": window_size, "strides": strides, "start_padding": start_padding,
              "end_padding": end_padding, "dilations": dilations, "output_sizes": output_sizes,
              "pair": pair, "indices_dtype": indices_dtype}
    if _dask.is_dask(x) or chunks is not None:
        return lazy_pooling("max_pooling", x, out, backend, chunks, _plan_max_pooling, params)
    x = input_array(x, "max_pooling")
    call = planned(_plan_max_pooling, (x, out), params)
    outs = ([None, None] if out is None else list(out)) if pair else [out]
    ys = make_outputs(call, outs, [x])
    execute(call, backend, x, ys)
    return (ys[0], ys[1]) if pair else ys[0]


def _plan_max_pooling_grad(x: ArrayFacts, dy: ArrayFacts, out: Any, *, window_size: Any,
                           strides: Any, start_padding: Any, end_padding: Any, dilations: Any
                           ) -> Call:
    names = _names("max_pooling_grad", output_sizes=("dy.shape", 0), dy=("dy", 0))
    dt = dtype_of(x.dtype, names, "input")
    gdt = dtype_of(dy.dtype, names, "dy")
    row = _pool.check_tensor_types("MAX_POOLING_GRAD", None, names,
                                   [("input", "data", dt, x.ndim), ("dy", "data", gdt, dy.ndim)])
    _pool.same_type(names, "input", dt, "dy", gdt)
    if out is not None:
        _out_type(out, dt, names, "output")
    g = _geometry(row, names, x,
                  (window_size, strides, start_padding, end_padding, dilations), dy.shape)
    plan = _pool.PoolPlan("max_grad", "MAX_POOLING_GRAD", g, dt, dt)
    return _call(names, plan, ["input", "dy"], [out], [("output", x.shape, dt)])


@overload
def max_pooling_grad(x: NDArray[ScalarT], dy: NDArray[Any], window_size: IntOrInts, *,
                     strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                     end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                     out: NDArray[Any] | None = ..., backend: str | None = ...,
                     chunks: None = ...) -> NDArray[ScalarT]: ...


@overload
def max_pooling_grad(x: ForeignT, dy: ArrayLike | DaskArrayLike, window_size: IntOrInts, *,
                     strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                     end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                     out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
                     chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def max_pooling_grad(x: ArrayLike, dy: LazyT, window_size: IntOrInts, *, strides: IntOrInts = ...,
                     start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
                     dilations: IntOrInts = ..., out: None = ..., backend: str | None = ...,
                     chunks: Chunks | None = ...) -> LazyT: ...


@overload
def max_pooling_grad(x: ArrayLike, dy: ArrayLike, window_size: IntOrInts, *,
                     strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                     end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                     out: NDArray[Any] | None = ..., backend: str | None = ...,
                     chunks: None = ...) -> NDArray[Any]: ...


@results_as_given
def max_pooling_grad(x: ArrayInput, dy: ArrayInput, window_size: IntOrInts, *,
                     strides: IntOrInts = 1, start_padding: IntOrInts = 0,
                     end_padding: IntOrInts = 0, dilations: IntOrInts = 1, out: Any = None,
                     backend: str | None = None, chunks: Chunks | None = None) -> Any:
    """Gradient of max pooling (SPEC 3.5): each window's incoming gradient goes to its argmax
    (the element :func:`max_pooling` would index); contributions to one element are summed in
    ascending forward-output order, in float32 (float64 for float64), so results are
    bitwise reproducible.

    >>> import numpy as np
    >>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
    >>> dy = np.array([[1, 2], [4, 5]], np.float32).reshape(1, 1, 2, 2)
    >>> max_pooling_grad(x, dy, 2)[0, 0].tolist()
    [[0.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 4.0, 5.0]]

    Dask arrays (``x``, ``dy`` or both) give a lazy Dask array, the same bits whatever the
    chunking (SPEC 6); ``chunks`` chunks it, by default as ``x``.
    """
    params = {"window_size": window_size, "strides": strides, "start_padding": start_padding,
              "end_padding": end_padding, "dilations": dilations}
    if _dask.is_dask(x) or _dask.is_dask(dy) or chunks is not None:
        return lazy_grad("max_pooling_grad", [("x", x), ("dy", dy)], out, backend, chunks,
                         _plan_max_pooling_grad, params)
    x = input_array(x, "max_pooling_grad")
    dy = input_array(dy, "max_pooling_grad", "dy")
    call = planned(_plan_max_pooling_grad, (x, dy, out), params)
    (dx,) = make_outputs(call, [out], [x, dy])
    execute(call, backend, x, [dx], {"dy": native(dy)})
    return dx


def _plan_average_pooling_grad(dy: ArrayFacts, out: Any, *, window_size: Any, input_sizes: Any,
                               strides: Any, start_padding: Any, end_padding: Any,
                               dilations: Any, include_padding: Any) -> Call:
    names = _names("average_pooling_grad", output_sizes=("dy.shape", 0),
                   input=("dy", 0), input_sizes=("input_sizes", 0))
    dt = dtype_of(dy.dtype, names, "input")
    row = _pool.check_tensor_types("AVERAGE_POOLING_GRAD", None, names,
                                   [("input", "data", dt, dy.ndim)])
    if out is not None:
        _out_type(out, dt, names, "output")
    params = _pool.window_params(names, dy.ndim, window_size, strides, start_padding,
                                 end_padding, dilations, allow_scalar=True)
    sizes = _full_sizes(input_sizes, dy.shape, names, "input_sizes")
    _spatial_sizes_ok(dy.shape, names)
    offset = 0 if is_int(input_sizes) or len(sizes) == len(tuple(input_sizes)) else -2
    given = names.with_fields(input_sizes=("input_sizes", offset))     # (as the caller gave it)
    for d, v in enumerate(sizes):
        if d < 2 and v != dy.shape[d]:
            raise names.invalid(lambda n: f"{n('input_sizes', d)} = {v} must equal "
                                          f"{n('input')}'s {'N' if d == 0 else 'C'} "
                                          f"({dy.shape[d]})")
        if d >= 2 and v < 1:
            raise given.invalid(lambda n: f"{n('input_sizes', d)} = {v} must be at least 1")
    g = _pool.geometry(row, names, sizes, params, dy.shape)
    include = _include_padding(include_padding, names)
    _pool.check_divisors(names, g, include)
    plan = _pool.PoolPlan("average_grad", "AVERAGE_POOLING_GRAD", g, dt, dt, None, include)
    return _call(names, plan, ["input"], [out], [("output", sizes, dt)])


@overload
def average_pooling_grad(dy: NDArray[ScalarT], window_size: IntOrInts, *, input_sizes: IntOrInts,
                         strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                         end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                         include_padding: bool | np.bool_ = ..., out: NDArray[Any] | None = ...,
                         backend: str | None = ..., chunks: None = ...) -> NDArray[ScalarT]: ...


@overload
def average_pooling_grad(dy: ForeignT, window_size: IntOrInts, *, input_sizes: IntOrInts,
                         strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                         end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                         include_padding: bool | np.bool_ = ...,
                         out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
                         chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def average_pooling_grad(dy: ArrayLike, window_size: IntOrInts, *, input_sizes: IntOrInts,
                         strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                         end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                         include_padding: bool | np.bool_ = ..., out: NDArray[Any] | None = ...,
                         backend: str | None = ..., chunks: None = ...) -> NDArray[Any]: ...


@results_as_given
def average_pooling_grad(dy: ArrayInput, window_size: IntOrInts, *, input_sizes: IntOrInts,
                         strides: IntOrInts = 1, start_padding: IntOrInts = 0,
                         end_padding: IntOrInts = 0, dilations: IntOrInts = 1,
                         include_padding: bool | np.bool_ = False, out: Any = None,
                         backend: str | None = None, chunks: Chunks | None = None) -> Any:
    """Gradient of average pooling (SPEC 3.2): each incoming value, divided by its window's
    divisor (as :func:`average_pooling` counts it), is added to every real element of the
    window. ``input_sizes`` are the forward input's sizes (k spatial sizes, or all k + 2);
    ``dy`` has the forward output's sizes. Contributions are summed in ascending
    forward-output order, in float32 (float64 for float64), so results are reproducible.

    >>> import numpy as np
    >>> dy = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    >>> average_pooling_grad(dy, 2, input_sizes=(3, 3))[0, 0].tolist()
    [[0.25, 0.75, 0.5], [1.0, 2.5, 1.5], [0.75, 1.75, 1.0]]

    A Dask ``dy`` gives a lazy Dask array, the same bits whatever the chunking (SPEC 6);
    ``chunks`` chunks it, by default cut where ``dy`` is, times the stride.
    """
    params = {"window_size": window_size, "input_sizes": input_sizes, "strides": strides,
              "start_padding": start_padding, "end_padding": end_padding, "dilations": dilations,
              "include_padding": include_padding}
    if _dask.is_dask(dy) or chunks is not None:
        return lazy_grad("average_pooling_grad", [("dy", dy)], out, backend, chunks,
                         _plan_average_pooling_grad, params)
    dy = input_array(dy, "average_pooling_grad", "dy")
    call = planned(_plan_average_pooling_grad, (dy, out), params)
    (dx,) = make_outputs(call, [out], [dy])
    execute(call, backend, dy, [dx])
    return dx


def _plan_lp_pooling(x: ArrayFacts, out: Any, *, window_size: Any, p: Any, strides: Any,
                     start_padding: Any, end_padding: Any, dilations: Any, output_sizes: Any
                     ) -> Call:
    names = _names("lp_pooling", output_sizes=_output_sizes_label(output_sizes, x.ndim))
    dt = dtype_of(x.dtype, names, "input")
    row = _pool.check_tensor_types("LP_POOLING1", None, names, [("input", "data", dt, x.ndim)])
    if out is not None:
        _out_type(out, dt, names, "output")
    g = _geometry(row, names, x,
                  (window_size, strides, start_padding, end_padding, dilations), output_sizes)
    p = _pool.check_p(p, names)
    plan = _pool.PoolPlan("lp", "LP_POOLING1", g, dt, dt, p=p)
    return _call(names, plan, ["input"], [out], [("output", g.output_sizes, dt)])


@overload
def lp_pooling(x: NDArray[ScalarT], window_size: IntOrInts, *, p: int = ...,
               strides: IntOrInts = ..., start_padding: IntOrInts = ...,
               end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
               output_sizes: IntOrInts | None = ..., out: NDArray[Any] | None = ...,
               backend: str | None = ..., chunks: None = ...) -> NDArray[ScalarT]: ...


@overload
def lp_pooling(x: ForeignT, window_size: IntOrInts, *, p: int = ..., strides: IntOrInts = ...,
               start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
               dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
               out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
               chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def lp_pooling(x: ArrayLike, window_size: IntOrInts, *, p: int = ..., strides: IntOrInts = ...,
               start_padding: IntOrInts = ..., end_padding: IntOrInts = ...,
               dilations: IntOrInts = ..., output_sizes: IntOrInts | None = ...,
               out: NDArray[Any] | None = ..., backend: str | None = ..., chunks: None = ...
               ) -> NDArray[Any]: ...


@results_as_given
def lp_pooling(x: ArrayInput, window_size: IntOrInts, *, p: int = 2, strides: IntOrInts = 1,
               start_padding: IntOrInts = 0, end_padding: IntOrInts = 0, dilations: IntOrInts = 1,
               output_sizes: IntOrInts | None = None, out: Any = None, backend: str | None = None,
               chunks: Chunks | None = None) -> Any:
    """Lp pooling (SPEC 3.6): ``(Σ |x|^p)^(1/p)`` over the real elements of each window, for
    an integer ``p >= 1``. Computed in float64 as ``m * (Σ (|x|/m)^p)^(1/p)`` with ``m`` the
    window's largest ``|x|`` and rounded once, so tiny and huge values neither underflow nor
    overflow; a NaN gives NaN, an infinity inf, a window without real elements 0.

    >>> import numpy as np
    >>> x = np.array([[3, -4], [0, 0]], np.float32).reshape(1, 1, 2, 2)
    >>> lp_pooling(x, 2, p=2).ravel().tolist(), lp_pooling(x, 2, p=1).ravel().tolist()
    ([5.0], [7.0])

    A Dask array gives a lazy Dask array, as ``average_pooling`` describes.
    """
    params = {"window_size": window_size, "p": p, "strides": strides,
              "start_padding": start_padding, "end_padding": end_padding, "dilations": dilations,
              "output_sizes": output_sizes}
    if _dask.is_dask(x) or chunks is not None:
        return lazy_pooling("lp_pooling", x, out, backend, chunks, _plan_lp_pooling, params)
    x = input_array(x, "lp_pooling")
    call = planned(_plan_lp_pooling, (x, out), params)
    (y,) = make_outputs(call, [out], [x])
    execute(call, backend, x, [y])
    return y


def _plan_max_unpooling(x: ArrayFacts, indices: ArrayFacts, out: Any, *, output_sizes: Any
                        ) -> Call:
    names = _names("max_unpooling", indices=("indices", 0),
                   output_sizes=("output_sizes", 0))
    dt = dtype_of(x.dtype, names, "input")
    idt = dtype_of(indices.dtype, names, "indices")
    _pool.check_tensor_types("MAX_UNPOOLING", None, names,
                             [("input", "data", dt, x.ndim),
                              ("indices", "indices", idt, indices.ndim)])
    if out is not None:
        _out_type(out, dt, names, "output")
    sizes = as_int_tuple(output_sizes, names, "output_sizes")
    if len(sizes) != x.ndim:
        raise names.invalid(lambda n: f"{n('output_sizes')} has {len(sizes)} values "
                                      f"{list(sizes)}; expected {x.ndim}, the full output shape "
                                      f"(the input's rank)")
    _spatial_sizes_ok(x.shape, names)
    _pool.unpool_sizes(x.shape, indices.shape, sizes, names)
    plan = _pool.UnpoolPlan("MAX_UNPOOLING", dt, idt, x.shape, sizes)
    return _call(names, plan, ["input", "indices"], [out], [("output", sizes, dt)])


@overload
def max_unpooling(x: NDArray[ScalarT], indices: NDArray[Any], output_sizes: IntOrInts, *,
                  out: NDArray[Any] | None = ..., backend: str | None = ..., chunks: None = ...
                  ) -> NDArray[ScalarT]: ...


@overload
def max_unpooling(x: ForeignT, indices: ArrayLike | DaskArrayLike, output_sizes: IntOrInts, *,
                  out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
                  chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def max_unpooling(x: ArrayLike, indices: LazyT, output_sizes: IntOrInts, *, out: None = ...,
                  backend: str | None = ..., chunks: Chunks | None = ...) -> LazyT: ...


@overload
def max_unpooling(x: ArrayLike, indices: ArrayLike, output_sizes: IntOrInts, *,
                  out: NDArray[Any] | None = ..., backend: str | None = ..., chunks: None = ...
                  ) -> NDArray[Any]: ...


@results_as_given
def max_unpooling(x: ArrayInput, indices: ArrayInput, output_sizes: IntOrInts, *, out: Any = None,
                  backend: str | None = None, chunks: Chunks | None = None) -> Any:
    """Max unpooling (SPEC 3.7): a zero output of ``output_sizes`` (the full shape, N and C
    as the input's), with ``x[i]`` written at flat position ``indices[i]`` (as
    :func:`max_pooling` returns them). The "no element" index (2^32-1, 2^64-1, or -1 for
    int64) is skipped; of two elements naming one position the later wins; any other index
    outside the output is an error, raised before anything is written.

    >>> import numpy as np
    >>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
    >>> y, i = max_pooling(x, 2, strides=1, output_indices=True)
    >>> max_unpooling(y, i, (1, 1, 3, 3))[0, 0].tolist()
    [[0.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 6.0, 7.0]]

    Dask arrays (``x``, ``indices`` or both) give a lazy Dask array, the same bits whatever
    the chunking (SPEC 6); an index outside the output is the error above, raised at the
    call where the indices are in memory, else when the block holding it is computed.
    ``chunks`` chunks the output, by default N and C as the input's and the other dimensions
    cut where the input's are, scaled to the output's size.
    """
    if _dask.is_dask(x) or _dask.is_dask(indices) or chunks is not None:
        def build(call: Call, kernels: ModuleType, lazy_x: Any, lazy_indices: Any) -> Any:
            if not _dask.is_dask(indices):      # (in memory: checked now, as in memory)
                _pool.check_unpool_indices(
                    call.plan, input_array(indices, "max_unpooling", "indices"), call.names)
            return call.plan.lazy(lazy_x, {"indices": lazy_indices}, call, kernels, chunks,
                                  call.names)[0]
        return lazy_result("max_unpooling", [("x", x), ("indices", indices)], out, backend,
                           chunks, _plan_max_unpooling, {"output_sizes": output_sizes}, build)
    x = input_array(x, "max_unpooling")
    indices = input_array(indices, "max_unpooling", "indices")
    call = planned(_plan_max_unpooling, (x, indices, out), {"output_sizes": output_sizes})
    (y,) = make_outputs(call, [out], [x, indices])
    execute(call, backend, x, [y], {"indices": native(indices)})
    return y


def _plan_roi_pooling(x: ArrayFacts, rois: ArrayFacts, out: Any, *, spatial_scale: Any,
                      pooled_size: Any) -> Call:
    names = _names("roi_pooling", rois=("rois", 0))
    dt = dtype_of(x.dtype, names, "input")
    rdt = dtype_of(rois.dtype, names, "rois")
    op = "ROI_POOLING"
    roi_rank = 4 if rois.ndim == 2 else rois.ndim      # (R, 5) stands for (1, 1, R, 5)
    _pool.check_tensor_types(op, None, names, [("input", "data", dt, x.ndim),
                                               ("rois", "data", rdt, roi_rank)])
    _pool.same_type(names, "input", dt, "rois", rdt)
    if out is not None:
        _out_type(out, dt, names, "output")
    if rois.shape[-1:] != (5,) or (rois.ndim == 4 and rois.shape[:2] != (1, 1)):
        raise names.invalid(lambda n: f"{n('rois')} has shape {rois.shape}; expected (R, 5) or "
                                      f"(1, 1, R, 5), rows [batch, x1, y1, x2, y2]")
    pooled = _pool.check_pooled_size(pooled_size, names)
    scale = _pool.check_spatial_scale(spatial_scale, names)
    _spatial_sizes_ok(x.shape, names)
    num = rois.shape[-2]
    plan = _pool.RoiPlan(op, dt, x.shape, num, scale, pooled)
    sizes = (num, x.shape[1]) + pooled
    return _call(names, plan, ["input", "rois"], [out], [("output", sizes, dt)])


@overload
def roi_pooling(x: NDArray[ScalarT], rois: ArrayLike, *, spatial_scale: Float,
                pooled_size: IntOrInts, out: NDArray[Any] | None = ..., backend: str | None = ...,
                chunks: None = ...) -> NDArray[ScalarT]: ...


@overload
def roi_pooling(x: ForeignT, rois: ArrayLike, *, spatial_scale: Float, pooled_size: IntOrInts,
                out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
                chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def roi_pooling(x: ArrayLike, rois: ArrayLike, *, spatial_scale: Float, pooled_size: IntOrInts,
                out: NDArray[Any] | None = ..., backend: str | None = ..., chunks: None = ...
                ) -> NDArray[Any]: ...


@results_as_given
def roi_pooling(x: ArrayInput, rois: ArrayLike, *, spatial_scale: Float, pooled_size: IntOrInts,
                out: Any = None, backend: str | None = None, chunks: Chunks | None = None) -> Any:
    """ROI max pooling (SPEC 3.8). ``rois`` is ``(R, 5)`` (or DirectML's ``(1, 1, R, 5)``)
    with rows ``[batch, x1, y1, x2, y2]`` in input coordinates times ``spatial_scale``;
    ``pooled_size`` is ``(height, width)``. Corners are scaled and rounded half away from
    zero; each of the ``PH x PW`` bins takes the max of its input rows
    ``[floor(ph*RH/PH), ceil((ph+1)*RH/PH)) + y1`` (likewise columns), clipped to the input;
    an empty bin gives 0. The result is ``(R, C, PH, PW)``.

    >>> import numpy as np
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> rois = np.array([[0, 0, 0, 3, 3]], np.float32)     # the input's type
    >>> roi_pooling(x, rois, spatial_scale=1.0, pooled_size=(2, 2))[0, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]

    A Dask ``x`` gives a lazy Dask array, the same bits whatever the chunking (SPEC 6); the
    boxes stay NumPy, checked at the call. ``chunks`` chunks the output, by default all
    boxes in one chunk and C as the input's.
    """
    params = {"spatial_scale": spatial_scale, "pooled_size": pooled_size}
    if _dask.is_dask(x) or chunks is not None:
        boxes = input_array(rois, "roi_pooling", "rois")      # (the boxes stay NumPy)
        return lazy_result("roi_pooling", [("x", x), ("rois", boxes)], out, backend, chunks,
                           _plan_roi_pooling, params,
                           lambda call, kernels, x, _: call.plan.lazy(
                               x, {"rois": boxes}, call, kernels, chunks, call.names)[0])
    x = input_array(x, "roi_pooling")
    rois = input_array(rois, "roi_pooling", "rois")
    call = planned(_plan_roi_pooling, (x, rois, out), params)
    (y,) = make_outputs(call, [out], [x, rois])
    execute(call, backend, x, [y], {"rois": native(rois)})
    return y


def _zero_point(zp: object, dt: DataType, names: Names, field: str) -> None:
    """A zero point's type: None (0), a Python int, or a NumPy array/scalar of ``dt``. A
    Python int's range is a value, checked after the lengths (SPEC 7's order:
    ``_zero_point_values``)."""
    not_lazy(zp, names, field)
    if isinstance(zp, (np.ndarray, np.generic)):
        zdt = dtype_of(zp.dtype, names, field)
        if zdt != dt:
            raise names.unsupported(lambda n: f"{n(field)} has dtype {zp.dtype}; a zero-point "
                                              f"array must have its tensor's type {dt.dtype}")
    elif zp is not None and not is_int(zp):
        raise names.invalid(lambda n: f"{n(field)} = {zp!r} must be an integer, a NumPy array of "
                                      f"{dt.dtype}, or None")


def _zero_point_values(zp: Any, dt: DataType, names: Names, field: str) -> NDArray[np.int64]:
    """A zero point (checked by ``_zero_point``) as int64, a Python int's range checked."""
    if zp is None:
        return np.zeros((), dtype=np.int64)
    if isinstance(zp, (np.ndarray, np.generic)):
        return np.asarray(zp).astype(np.int64)
    _pool.check_zero_point_values(np.asarray(zp, dtype=object), dt, names, field)
    return np.asarray(int(zp), dtype=np.int64)


def _scale(s: object, names: Names, field: str) -> NDArray[np.float32]:
    not_lazy(s, names, field)
    try:
        arr = np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError):
        raise names.invalid(lambda n: f"{n(field)} = {s!r} must be a number or an array of "
                                      f"numbers") from None
    with np.errstate(over="ignore"):
        return arr.astype(np.float32)


def _plan_quantized(x: ArrayFacts, out: Any, *, input_scale: Any, input_zero_point: Any,
                    output_scale: Any, output_zero_point: Any, window_size: Any, strides: Any,
                    start_padding: Any, end_padding: Any, dilations: Any, include_padding: Any,
                    output_dtype: Any) -> Call:
    names = _names("quantized_linear_average_pooling")
    dt = dtype_of(x.dtype, names, "input")
    op = "QUANTIZED_LINEAR_AVERAGE_POOLING"
    row = _pool.check_tensor_types(op, None, names, [("input", "data", dt, x.ndim)])
    # output type: output_dtype, out.dtype, output zero point's dtype, else the input's
    # ((field, subfield), type) of each
    candidates: list[tuple[tuple[str, str | None], DataType]] = []
    if output_dtype is not None:
        candidates.append((("output_dtype", None), dtype_of(output_dtype, names, "output_dtype")))
    if out is not None:
        if not isinstance(out, ArrayFacts):
            raise names.invalid(lambda n: f"{n('out')} must be a NumPy array, got "
                                          f"{type(out).__name__}")
        candidates.append((("out", "dtype"), dtype_of(native_dtype(out), names, "output")))
    if isinstance(output_zero_point, (np.ndarray, np.generic)):
        candidates.append((("output_zero_point", "dtype"),
                           dtype_of(output_zero_point.dtype, names, "output_zero_point")))
    for ((f1, s1), d1), ((f2, s2), d2) in zip(candidates, candidates[1:]):
        if d1 != d2:
            raise names.unsupported(lambda n: f"{n(f1, subfield=s1)} is {d1.name} but "
                                              f"{n(f2, subfield=s2)} is {d2.name}; the output "
                                              f"type must agree")
    (source, _), out_dt = candidates[0] if candidates else (("input", None), dt)
    check_type(op, None, row, "output", out_dt,
               names.with_fields(output=(names(source), 0)), "output")
    _zero_point(input_zero_point, dt, names, "input_zero_point")
    _zero_point(output_zero_point, out_dt, names, "output_zero_point")
    s_in = _scale(input_scale, names, "input_scale")
    s_out = _scale(output_scale, names, "output_scale")
    g = _geometry(row, names, x,
                  (window_size, strides, start_padding, end_padding, dilations), None)
    given = {"input_scale": s_in, "input_zero_point": input_zero_point,
             "output_scale": s_out, "output_zero_point": output_zero_point}
    for field, arr in given.items():
        _pool.quantization_param_shape(np.shape(arr), x.shape, names, field)
    # then values (SPEC 7): the zero points' ranges and the scales
    given["input_zero_point"] = _zero_point_values(input_zero_point, dt, names,
                                                   "input_zero_point")
    given["output_zero_point"] = _zero_point_values(output_zero_point, out_dt, names,
                                                    "output_zero_point")
    params = {field: arr.reshape(arr.shape + (1,) * (x.ndim - arr.ndim))
              for field, arr in given.items()}
    _pool.check_scale_values(s_in, names, "input_scale")
    _pool.check_scale_values(s_out, names, "output_scale")
    include = _include_padding(include_padding, names)
    _pool.check_divisors(names, g, include)
    plan = _pool.PoolPlan("quantized", op, g, dt, out_dt, None, include)
    extra = {"scale_in": params["input_scale"], "zp_in": params["input_zero_point"],
             "scale_out": params["output_scale"], "zp_out": params["output_zero_point"]}
    for a in extra.values():    # (the plan may be kept: no kernel may write them)
        a.flags.writeable = False
    return _call(names, plan, ["input"], [out], [("output", g.output_sizes, out_dt)], extra)


@overload
def quantized_linear_average_pooling(x: NDArray[Any], input_scale: ArrayLike,
                                     input_zero_point: ArrayLike | None, output_scale: ArrayLike,
                                     output_zero_point: ArrayLike | None, window_size: IntOrInts,
                                     *, strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                                     end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                                     include_padding: bool | np.bool_ = ...,
                                     output_dtype: DataTypeLike | None = ...,
                                     out: NDArray[Any] | None = ..., backend: str | None = ...,
                                     chunks: None = ...) -> QuantizedArray: ...


@overload
def quantized_linear_average_pooling(x: ForeignT, input_scale: ArrayLike,
                                     input_zero_point: ArrayLike | None, output_scale: ArrayLike,
                                     output_zero_point: ArrayLike | None, window_size: IntOrInts,
                                     *, strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                                     end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                                     include_padding: bool | np.bool_ = ...,
                                     output_dtype: DataTypeLike | None = ...,
                                     out: ForeignT | NDArray[Any] | None = ...,
                                     backend: str | None = ..., chunks: Chunks | None = ...
                                     ) -> ForeignT: ...


@overload
def quantized_linear_average_pooling(x: ArrayLike, input_scale: ArrayLike,
                                     input_zero_point: ArrayLike | None, output_scale: ArrayLike,
                                     output_zero_point: ArrayLike | None, window_size: IntOrInts,
                                     *, strides: IntOrInts = ..., start_padding: IntOrInts = ...,
                                     end_padding: IntOrInts = ..., dilations: IntOrInts = ...,
                                     include_padding: bool | np.bool_ = ...,
                                     output_dtype: DataTypeLike | None = ...,
                                     out: NDArray[Any] | None = ..., backend: str | None = ...,
                                     chunks: None = ...) -> NDArray[Any]: ...


@results_as_given
def quantized_linear_average_pooling(x: ArrayInput, input_scale: ArrayLike,
                                     input_zero_point: ArrayLike | None, output_scale: ArrayLike,
                                     output_zero_point: ArrayLike | None, window_size: IntOrInts,
                                     *, strides: IntOrInts = 1, start_padding: IntOrInts = 0,
                                     end_padding: IntOrInts = 0, dilations: IntOrInts = 1,
                                     include_padding: bool | np.bool_ = False,
                                     output_dtype: DataTypeLike | None = None, out: Any = None,
                                     backend: str | None = None,
                                     chunks: Chunks | None = None) -> Any:
    """Quantized average pooling (SPEC 3.3), bit-exact: ``acc = Σ (x - zp_in)`` over real
    elements; in float32 ``t = acc * s_in / count / s_out``; ``q = round_half_even(t) + zp_out``
    clamped. Scales and zero points are per tensor (scalars) or per channel ``(1, C, 1, ...)``.

    >>> import numpy as np
    >>> x = np.array([[10, 20], [30, 41]], np.uint8).reshape(1, 1, 2, 2)
    >>> quantized_linear_average_pooling(x, 0.5, 0, 0.25, 3, 2).ravel().tolist()
    [53]

    A Dask ``x`` gives a lazy Dask array, the same bits whatever the chunking (SPEC 6); the
    scales and zero points stay NumPy. ``chunks`` chunks the output, by default cut where the
    input is, divided by the stride.
    """
    params = {"input_scale": input_scale, "input_zero_point": input_zero_point,
              "output_scale": output_scale, "output_zero_point": output_zero_point,
              "window_size": window_size, "strides": strides, "start_padding": start_padding,
              "end_padding": end_padding, "dilations": dilations,
              "include_padding": include_padding, "output_dtype": output_dtype}
    if _dask.is_dask(x) or chunks is not None:
        return lazy_pooling("quantized_linear_average_pooling", x, out, backend, chunks,
                            _plan_quantized, params)
    x = input_array(x, "quantized_linear_average_pooling")
    call = planned(_plan_quantized, (x, out), params)
    (y,) = make_outputs(call, [out], [x])
    execute(call, backend, x, [y], call.extra)
    return y


def _lazy_padding(x: Any, params: dict[str, Any], out: object, backend: str | None,
                  chunks: Chunks | None) -> Any:
    """``padding`` of a Dask array: validated now, computed when asked (``_dask.padding``)."""
    call, _, (stand,), (x,) = lazy_call("padding", [("x", x)], out, backend, chunks,
                                        _plan_padding, params)
    if stand.size == 0:
        # only CONSTANT pads an empty dimension: the in-memory answer, made lazy
        import dask.array as da
        y = padding(np.zeros(stand.shape, stand.dtype), params["start_padding"],
                    params["end_padding"], mode=params["mode"], value=params["value"],
                    backend=backend)
        return da.from_array(y, chunks=_dask.output_chunks(chunks, y.shape, y.dtype,
                                                           call.names, "auto"))
    return call.plan.lazy(x, {}, call, None, chunks, call.names)[0]


def _plan_padding(x: ArrayFacts, out: Any, *, start_padding: Any, end_padding: Any, mode: Any,
                  value: Any) -> Call:
    names = _names("padding")
    dt = dtype_of(x.dtype, names, "input")
    pmode = _pad.plan_padding("PADDING1", None, names, dt, x.ndim, None, None, mode)
    if out is not None:
        _out_type(out, dt, names, "output")
    start, end = _pad.pad_lengths(start_padding, end_padding, x.ndim, names, allow_scalar=True)
    _pad.check_pad_values(x.shape, start, end, pmode, names)
    converted = _pad.mode_value(pmode, dt, lambda: _pad.convert_value(value, dt, names))
    plan = _pad.PadPlan("PADDING1", dt, x.shape, start, end, pmode, converted)
    return _call(names, plan, ["input"], [out], [("output", plan.out_sizes, dt)])


@overload
def padding(x: NDArray[ScalarT], start_padding: IntOrInts, end_padding: IntOrInts, *,
            mode: PaddingModeLike = ..., value: Float = ..., out: NDArray[Any] | None = ...,
            backend: str | None = ..., chunks: None = ...) -> NDArray[ScalarT]: ...


@overload
def padding(x: ForeignT, start_padding: IntOrInts, end_padding: IntOrInts, *,
            mode: PaddingModeLike = ..., value: Float = ...,
            out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
            chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def padding(x: ArrayLike, start_padding: IntOrInts, end_padding: IntOrInts, *,
            mode: PaddingModeLike = ..., value: Float = ..., out: NDArray[Any] | None = ...,
            backend: str | None = ..., chunks: None = ...) -> NDArray[Any]: ...


@results_as_given
def padding(x: ArrayInput, start_padding: IntOrInts, end_padding: IntOrInts, *,
            mode: PaddingModeLike = "constant", value: Float = 0, out: Any = None,
            backend: str | None = None, chunks: Chunks | None = None) -> Any:
    """Pad every dimension (SPEC 3.9). ``start_padding`` / ``end_padding`` are an int (every
    dimension) or one value per dimension, N and C included.

    Modes map each output coordinate ``x`` (relative to the input's start) to an input
    coordinate, per dimension, in closed form, so pads of any width work:
    constant (``value`` outside), edge ``clamp(x, 0, n-1)``, reflection (period 2(n-1), edge
    not repeated), symmetric (period 2n, edge repeated), wrap ``x mod n``. ``value`` (read by
    constant mode alone: the others ignore it) is converted to the array's type: integers
    truncate toward zero and saturate (NaN -> 0); floats round to nearest.

    >>> import numpy as np
    >>> x = np.array([1, 2, 3], np.int8)
    >>> padding(x, 2, 2, mode="reflection").tolist(), padding(x, 2, 2, mode="symmetric").tolist()
    ([3, 2, 1, 2, 3, 2, 1], [2, 1, 1, 2, 3, 3, 2])
    >>> padding(x, 1, 1, value=-10.6).tolist()
    [-10, 1, 2, 3, -10]

    A Dask array gives a lazy Dask array, the same bits whatever the chunking (SPEC 6);
    ``chunks`` (Dask inputs only) chunks the output, by default as the input, the pads in
    pieces of the input's largest chunk:

    >>> import dask.array as da
    >>> y = padding(da.arange(6, chunks=2), 3, 1, mode="wrap")
    >>> y.chunks, y.compute().tolist()
    (((2, 1, 2, 2, 2, 1),), [3, 4, 5, 0, 1, 2, 3, 4, 5, 0])
    """
    params = {"start_padding": start_padding, "end_padding": end_padding, "mode": mode,
              "value": value}
    if _dask.is_dask(x) or chunks is not None:
        return _lazy_padding(x, params, out, backend, chunks)
    x = input_array(x, "padding")
    call = planned(_plan_padding, (x, out), params)
    (y,) = make_outputs(call, [out], [x])
    plan = call.plan
    if x.size == 0:
        kernels_of(call, backend)     # (a backend's error before the arrays')
        if y.size:
            if plan.mode != PaddingMode.CONSTANT:
                raise call.names.invalid(lambda n: f"{n('input')} has shape {x.shape}; only "
                                                   f"constant padding can pad an empty "
                                                   f"dimension")
            y[...] = plan.value
        return y
    execute(call, backend, x, [y])
    return y


def _plan_padding_grad(dy: ArrayFacts, out: Any, *, input_sizes: Any, start_padding: Any,
                       end_padding: Any, mode: Any) -> Call:
    names = _names("padding_grad", input=("dy", 0))
    dt = dtype_of(dy.dtype, names, "dy")
    if out is not None:
        _out_type(out, dt, names, "output")
    plan = _pad.plan_padding_grad(names, dt, dy.shape, input_sizes, start_padding,
                                  end_padding, mode)
    return _call(names, plan, ["dy"], [out], [("output", plan.in_sizes, dt)])


@overload
def padding_grad(dy: NDArray[ScalarT], input_sizes: IntOrInts, start_padding: IntOrInts,
                 end_padding: IntOrInts, *, mode: PaddingModeLike = ...,
                 out: NDArray[Any] | None = ..., backend: str | None = ...,
                 chunks: None = ...) -> NDArray[ScalarT]: ...


@overload
def padding_grad(dy: ForeignT, input_sizes: IntOrInts, start_padding: IntOrInts,
                 end_padding: IntOrInts, *, mode: PaddingModeLike = ...,
                 out: ForeignT | NDArray[Any] | None = ..., backend: str | None = ...,
                 chunks: Chunks | None = ...) -> ForeignT: ...


@overload
def padding_grad(dy: ArrayLike, input_sizes: IntOrInts, start_padding: IntOrInts,
                 end_padding: IntOrInts, *, mode: PaddingModeLike = ...,
                 out: NDArray[Any] | None = ..., backend: str | None = ...,
                 chunks: None = ...) -> NDArray[Any]: ...


@results_as_given
def padding_grad(dy: ArrayInput, input_sizes: IntOrInts, start_padding: IntOrInts,
                 end_padding: IntOrInts, *, mode: PaddingModeLike = "constant",
                 out: Any = None, backend: str | None = None,
                 chunks: Chunks | None = None) -> Any:
    """The backward of :func:`padding` (SPEC 3.10): every input element receives the sum of
    ``dy`` over the outputs that copy it (constant mode's pads give nothing; reflection,
    symmetric and wrap fold several outputs onto one input). ``dy`` has the forward output's
    sizes, ``input_sizes`` are the forward input's (every dimension); the pads and ``mode``
    are the forward's. Each element sums from +0.0 in ascending output order, in float32
    (float64 for float64), so results are the same bits everywhere.

    >>> import numpy as np
    >>> dy = np.array([1, 2, 3, 4, 5, 6], np.float32)
    >>> padding_grad(dy, [3], [2], [1], mode="reflection").tolist()
    [3.0, 12.0, 6.0]
    >>> padding_grad(dy, [4], [1], [1]).tolist()      # constant: the inner copy
    [2.0, 3.0, 4.0, 5.0]

    A Dask ``dy`` gives a lazy Dask array, the same bits whatever the chunking; ``chunks``
    chunks the result (by default, ``dy``'s chunks over the input's place in it).
    """
    params = {"input_sizes": input_sizes, "start_padding": start_padding,
              "end_padding": end_padding, "mode": mode}
    if _dask.is_dask(dy) or chunks is not None:
        return _lazy_padding_grad(dy, params, out, backend, chunks)
    dy = input_array(dy, "padding_grad", "dy")
    call = planned(_plan_padding_grad, (dy, out), params)
    (dx,) = make_outputs(call, [out], [dy])
    execute(call, backend, dy, [dx])
    return dx


def _lazy_padding_grad(dy: Any, params: dict[str, Any], out: object, backend: str | None,
                       chunks: Chunks | None) -> Any:
    call, _, _, (dy,) = lazy_call("padding_grad", [("dy", dy)], out, backend, chunks,
                                  _plan_padding_grad, params)
    return call.plan.lazy(dy, {}, call, None, chunks, call.names)[0]


# Each function's planner, for what plans as the function does: explain's pictures and the
# PyTorch ops (the arrays by position, then the parameters by keyword, ``planned``).
PLANNERS: dict[str, Any] = {
    "average_pooling": _plan_average_pooling, "max_pooling": _plan_max_pooling,
    "max_pooling_grad": _plan_max_pooling_grad,
    "average_pooling_grad": _plan_average_pooling_grad, "lp_pooling": _plan_lp_pooling,
    "max_unpooling": _plan_max_unpooling, "roi_pooling": _plan_roi_pooling,
    "quantized_linear_average_pooling": _plan_quantized, "padding": _plan_padding,
    "padding_grad": _plan_padding_grad}
