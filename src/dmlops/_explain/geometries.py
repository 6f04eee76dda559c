"""The geometry a picture shows (:class:`Geometry`): plain data, built from the plan that a
function or a model's operator runs; and the labels both renderers write."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import functional as _fn
from .. import pooling as _pool
from .._args import as_int_tuple, check_bounds, is_int
from ..dtypes import PaddingMode
from ..errors import DmlError, Names
from ..padding import PadPlan
from ..window import ceil_extra, floor_size, window_counts

if TYPE_CHECKING:
    from ..dxdispatch import Model


Coord = tuple[int, ...]

INPUT, PADDING, PHANTOM = "input", "padding", "phantom"

# The most cells drawn along one dimension: past it, a picture's labels stop being legible
# (explain a smaller input with the same window: the geometry at the borders is the same).
MOST_CELLS = 64

# Public functions explain understands: the planner the function runs, the arrays it takes
# (explain takes their sizes in their place) and the data type the stand-ins have.
_FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[str, ...], str]] = {
    name: (getattr(_fn, name), _fn.PLANNERS[name], arrays, dtype) for name, arrays, dtype in (
        ("average_pooling", ("x",), "float32"), ("max_pooling", ("x",), "float32"),
        ("lp_pooling", ("x",), "float32"), ("average_pooling_grad", ("dy",), "float32"),
        ("max_pooling_grad", ("x", "dy"), "float32"),
        ("quantized_linear_average_pooling", ("x",), "uint8"), ("padding", ("x",), "float32"))}
_NOT_GEOMETRY = ("out", "backend", "chunks")
# the functions' spelling of the fields whose name differs from the descriptions'
_FUNCTION_LABELS = {"padding_mode": "mode", "padding_value": "value"}
_AVERAGES = ("average", "average_grad", "quantized")


@dataclass(frozen=True, eq=False)
class OutputWindow:
    """One output's window: the drawn cells it covers (dilation's holes left out, phantom
    cells kept), its divisor (averages; None otherwise) and its count of real elements."""

    output: Coord
    cells: tuple[Coord, ...]
    divisor: int | None
    real: int


@dataclass(frozen=True, eq=False)
class Geometry:
    """What one picture shows; see :mod:`dmlops._explain` for the coordinates."""

    title: str
    summary: str
    notes: tuple[str, ...]
    kind: str                        # the plan's kind ("average", "max", ...) or "padding"
    sizes: Coord                     # drawn input sizes
    lo: Coord                        # drawn coordinates: lo <= x < hi per dimension
    hi: Coord
    kinds: dict[Coord, str]          # every drawn cell: INPUT, PADDING or PHANTOM
    windows: tuple[OutputWindow, ...] = ()
    output_sizes: Coord = ()         # pooling: drawn output sizes
    floor_sizes: Coord = ()          # pooling: F per drawn dimension
    divisors: dict[Coord, int] | None = None     # averages: every drawn output's divisor
    sources: dict[Coord, Coord | None] | None = None     # padding: None is the constant
    value: Any = None                # padding: constant mode's value
    values: np.ndarray | None = None  # the drawn input plane's values, if given


# --- from a call to the geometry ---------------------------------------------------------

def _model_values(model: Model, name: str, plan: Any) -> np.ndarray | None:
    """The initial values of the input a model's first dispatch of ``name`` binds, when the
    model gives them (not an earlier dispatch's output, not a lazy zarr array)."""
    if isinstance(plan, _pool.PoolPlan) and plan.kind == "average_grad":
        return None         # (its input is the gradient, not the drawn forward input)
    return model.initial_values(name, "input_tensor")


def model_geometries(model: Model, dispatch: str | None = None) -> tuple[list[Geometry],
                                                                         list[str]]:
    """The geometry of each dispatchable of a parsed DxDispatch model that explain draws (or
    of the one named ``dispatch``), with the fields and sizes the model gives, the input's
    initial values written in; and a note on each one left out. Raises ``ModelError``."""
    from ..dxdispatch import ModelError, json_key
    if dispatch is not None and dispatch not in model.dispatchables:
        known = ", ".join(repr(n) for n in model.dispatchables) or "none"
        raise ModelError("--dispatch", f"no dispatchable named {dispatch!r} (defined: "
                                       f"{known})")
    geometries, skipped = [], []
    for name in [dispatch] if dispatch is not None else list(model.dispatchables):
        d = model.dispatchables[name]
        plan, path = d.op.plan, json_key("dispatchables", name)
        draw = _GEOMETRIES.get(type(plan))
        if draw is None:
            why = f"{d.operator_type} has no sliding window or padding to draw"
            if dispatch is not None:
                raise ModelError(path, why)
            skipped.append(f"{path}: {why}")
            continue
        title = f"{name} ({d.operator_type})"
        values = _model_values(model, name, plan)
        try:
            geometries.append(draw(plan, title, _fields(d.camel), None, values))
        except DmlError as e:
            raise ModelError(path, str(e).removeprefix(f"{title}: ")) from None
    if not geometries:
        raise ModelError("dispatchables", "none of them is an operator explain draws "
                                          "(pooling or padding)")
    return geometries, skipped


def _op_name(op: object, names: Names) -> str:
    name = getattr(op, "__name__", op) if callable(op) else op
    if not isinstance(name, str) or name not in _FUNCTIONS:
        known = ", ".join(_FUNCTIONS)
        what = name if isinstance(name, str) else type(op).__name__
        other = " (max_unpooling and roi_pooling have no sliding window or padding to draw)" \
            if what in ("max_unpooling", "roi_pooling") else ""
        raise names.unsupported(lambda n: f"{n('op')} = {what!r} is not an operator explain "
                                          f"draws{other}; expected one of {known}")
    return name


def _stand_in(sizes: object, dtype: np.dtype[Any], names: Names, field: str) -> np.ndarray:
    """An array of ``sizes`` that costs no memory, for the planner to read the shape of."""
    shape = as_int_tuple(sizes, names, field)
    check_bounds(shape, 0, names, field, "must not be negative", uint=False)
    try:
        return np.broadcast_to(np.zeros((), dtype), shape)
    except ValueError as e:         # (more elements than NumPy can count)
        raise names.invalid(lambda n: f"{n(field)} = {list(shape)} is more than an array can "
                                      f"hold ({e})") from None


def _plan_call(op: str, input_sizes: object, args: tuple[Any, ...], keywords: dict[str, Any],
               dtype: np.dtype[Any], ceil_mode: bool, names: Names) -> Any:
    """The plan the function would make for arrays of these sizes (its own checks, its own
    error messages)."""
    fn, planner, arrays, _ = _FUNCTIONS[op]
    if not isinstance(ceil_mode, (bool, np.bool_)):
        raise names.invalid(lambda n: f"{n('ceil_mode')} = {ceil_mode!r} must be a bool")
    for key in _NOT_GEOMETRY:
        if key in keywords:
            raise names.invalid(lambda n: f"{n(key)} is not a geometry keyword of {op}; leave it "
                                          f"out")
    given = [input_sizes, *args[:len(arrays) - 1]]
    if len(given) < len(arrays):
        raise names.invalid(f"{op} takes the sizes of {', '.join(arrays)} first; "
                            f"{arrays[-1]}'s sizes are missing")
    stand_ins = [_stand_in(s, dtype, names, "input_sizes" if i == 0 else f"{arrays[i]} sizes")
                 for i, s in enumerate(given)]
    try:
        bound = inspect.signature(fn).bind(*stand_ins, *args[len(arrays) - 1:], **keywords)
    except TypeError as e:
        raise names.invalid(f"{op}'s arguments do not fit its signature: {e}") from None
    bound.apply_defaults()
    values = dict(bound.arguments)
    if ceil_mode:
        if "output_sizes" not in values:
            raise names.invalid(lambda n: f"{n('ceil_mode')} applies to the functions with "
                                          f"output_sizes (average_pooling, max_pooling, "
                                          f"lp_pooling), not {op}")
        if values["output_sizes"] is not None:
            raise names.invalid(lambda n: f"give {n('ceil_mode')} or {n('output_sizes')}, not "
                                          f"both")
    values["out"] = None
    values["pair"] = bool(values.get("output_indices", False))    # (max_pooling's planner)
    params = inspect.signature(planner).parameters.values()
    arrays_out = [p.name for p in params if p.kind is not p.KEYWORD_ONLY]
    keywords_of = [p.name for p in params if p.kind is p.KEYWORD_ONLY]

    def plan() -> Any:
        return planner(*(values[p] for p in arrays_out), **{p: values[p] for p in keywords_of})
    call = plan()
    if ceil_mode:
        g = call.plan.geometry
        extra = [ceil_extra(s, *a) for s, *a in zip(g.input_sizes[2:], g.window, g.strides,
                                                    g.start, g.end, g.dilations)]
        values["output_sizes"] = tuple(o + e for o, e in zip(g.output_sizes[2:], extra))
        call = plan()
    return call.plan


def _chosen_outputs(outputs: Sequence[Sequence[int] | int] | None, sizes: Coord,
                    names: Names) -> list[Coord]:
    """The outputs whose windows are drawn: by default the first, one in the middle and the
    last; negative indices count from the end."""
    if outputs is None:
        picks = [tuple(0 for _ in sizes), tuple(n // 2 for n in sizes),
                 tuple(n - 1 for n in sizes)]
    else:
        if is_int(outputs) or isinstance(outputs, (str, bytes)):
            raise names.invalid(lambda n: f"{n('outputs')} = {outputs!r} must be a list of output "
                                          f"indices, such as [(0, 0), (-1, -1)]")
        picks = []
        for i, o in enumerate(outputs):
            index = as_int_tuple(o, names, f"outputs[{i}]")
            if len(index) != len(sizes):
                raise names.invalid(lambda n: f"{n('outputs', i)} = {o!r} has {len(index)} "
                                              f"indices; the drawn output has {len(sizes)} "
                                              f"dimensions, sizes {list(sizes)}")
            for d, (v, size) in enumerate(zip(index, sizes)):
                if not -size <= v < size:
                    raise names.invalid(lambda n: f"{n('outputs', i)}[{d}] = {v} is outside the "
                                                  f"output's {size} positions in that "
                                                  f"dimension")
            picks.append(tuple(v % n for v, n in zip(index, sizes)))
    unique: list[Coord] = []
    for p in picks:
        if p not in unique:
            unique.append(p)
    return unique


def _drawn_values(values: object, full: Coord, drawn: Coord, names: Names) -> np.ndarray | None:
    """``values`` of the drawn plane's sizes, or of the whole input (its first plane drawn)."""
    if values is None:
        return None
    arr = np.asarray(values)
    if arr.shape == drawn:
        return arr
    if arr.shape == full:
        return np.asarray(arr[(0,) * (len(full) - len(drawn))])
    raise names.invalid(lambda n: f"{n('values')} has shape {arr.shape}; expected the drawn "
                                  f"input's {drawn} or the whole input's {full}")


def _check_drawable(extent: Sequence[int], names: Names, what: str) -> None:
    if any(n > MOST_CELLS for n in extent):
        raise names.invalid(f"{what} would draw {' x '.join(map(str, extent))} cells; explain "
                            f"draws at most {MOST_CELLS} per dimension: explain a smaller input "
                            f"with the same window and padding (the borders look the same)")


def _kind(x: int, size: int, start: int, end: int) -> str:
    if 0 <= x < size:
        return INPUT
    return PADDING if -start <= x < size + end else PHANTOM


def _combined(kinds: Sequence[str]) -> str:
    return PHANTOM if PHANTOM in kinds else PADDING if PADDING in kinds else INPUT


def _fields(labels: dict[str, str]) -> Callable[[str], str]:
    return lambda field: labels.get(field, field)


def _dims_text(values: Sequence[int]) -> str:
    return " x ".join(map(str, values))


def pooling_geometry(plan: Any, title: str, label: Callable[[str], str],
                     outputs: Sequence[Sequence[int] | int] | None = None,
                     values: object = None) -> Geometry:
    """The geometry of a pooling plan (:class:`dmlops.pooling.PoolPlan`)."""
    names = Names(title)
    g = plan.geometry
    k = g.k
    drawn = tuple(range(max(0, k - 2), k))          # spatial indices drawn
    sizes = tuple(g.input_sizes[2 + i] for i in drawn)
    out = tuple(g.output_sizes[2 + i] for i in drawn)
    w, s, a, b, d = g.window, g.strides, g.start, g.end, g.dilations
    floor = tuple(floor_size(g.input_sizes[2 + i], w[i], s[i], a[i], b[i], d[i])
                  for i in range(k))
    lo = tuple(-a[i] for i in drawn)
    hi = tuple(max(g.input_sizes[2 + i] + b[i],
                   (g.output_sizes[2 + i] - 1) * s[i] + (w[i] - 1) * d[i] - a[i] + 1)
               for i in drawn)
    _check_drawable([h - l for l, h in zip(lo, hi)], names, "this input with its padding")
    _check_drawable(out, names, "this output")
    kinds = {}
    for cell in np.ndindex(*(h - l for l, h in zip(lo, hi))):
        x = tuple(c + l for c, l in zip(cell, lo))
        kinds[x] = _combined([_kind(x[j], sizes[j], a[i], b[i]) for j, i in enumerate(drawn)])

    # per dimension, each output's (real positions, real and padding positions)
    dim_count = [tuple(window_counts(g.input_sizes[2 + i], g.output_sizes[2 + i], w[i], s[i],
                                     a[i], b[i], d[i], padded) for padded in (False, True))
                 for i in range(k)]

    def counts(i: int, o: int) -> tuple[int, int]:
        return int(dim_count[i][0][o]), int(dim_count[i][1][o])

    rest = [counts(i, 0) for i in range(k) if i not in drawn]
    average = plan.kind in _AVERAGES

    def divisor_of(o: Coord) -> tuple[int, int]:
        per = [counts(i, v) for i, v in zip(drawn, o)] + rest
        real = math.prod(c[0] for c in per)
        return real, (math.prod(c[1] for c in per) if plan.include_padding else real)

    divisors = {o: divisor_of(o)[1] for o in np.ndindex(*out)} if average else None
    windows = []
    for o in _chosen_outputs(outputs, out, names.with_fields()):
        per_dim = [[o[j] * s[i] + t * d[i] - a[i] for t in range(w[i])]
                   for j, i in enumerate(drawn)]
        cells = tuple(tuple(int(v) for v in c) for c in np.array(
            np.meshgrid(*per_dim, indexing="ij")).reshape(len(drawn), -1).T)
        real, divisor = divisor_of(o)
        windows.append(OutputWindow(o, cells, divisor if average else None, real))
    extra = [j for j, i in enumerate(drawn) if g.output_sizes[2 + i] > floor[i]]
    summary = (f"{label('window_size')} {list(w)}, {label('strides')} {list(s)}, "
               f"{label('start_padding')} {list(a)}, {label('end_padding')} {list(b)}"
               + (f", {label('dilations')} {list(d)}" if any(v != 1 for v in d) else "")
               + (f", {label('include_padding')} {str(plan.include_padding).lower()}"
                  if average else "")
               + (f", {label('p')} {plan.p}" if plan.kind == "lp" else ""))
    notes = [f"input {_dims_text(g.input_sizes)}, output {_dims_text(g.output_sizes)}"
             + (f" (F + 1 in dimension{'s' if len(extra) > 1 else ''} "
                f"{', '.join(str(2 + drawn[j]) for j in extra)}: ceil mode)" if extra else "")]
    if k > 2:
        notes.append(f"drawn: the last two of {k} spatial dimensions, the others at output 0")
    if plan.kind in ("average_grad", "max_grad"):
        notes.append("gradient: the forward windows; each incoming value goes to "
                     + ("every real cell of its window, divided by the divisor"
                        if plan.kind == "average_grad" else "its window's argmax"))
    return Geometry(title, summary, tuple(notes), plan.kind, sizes, lo, hi, kinds,
                    tuple(windows), out, tuple(floor[i] for i in drawn), divisors,
                    values=_drawn_values(values, tuple(g.input_sizes), sizes, names))


def _copies(n: int, start: int, end: int, mode: PaddingMode) -> list[int | None]:
    """The input index each position of a padded dimension copies (None: the constant), as
    :func:`dmlops.padding` computes it on the indices themselves."""
    y = _fn.padding(np.arange(n, dtype=np.int64), start, end, mode=mode, value=-1)
    return [None if v < 0 else int(v) for v in y.tolist()]


# what a mode does past the input's width, for the notes
_WIDE: dict[PaddingMode, Callable[[int], str]] = {
    PaddingMode.EDGE: lambda n: "edge copies the end elements all the way",
    PaddingMode.REFLECTION: lambda n: f"reflection repeats every 2(n - 1) = {2 * n - 2}",
    PaddingMode.SYMMETRIC: lambda n: f"symmetric repeats every 2n = {2 * n}",
    PaddingMode.WRAP: lambda n: f"wrap repeats every n = {n}",
}


def padding_geometry(plan: PadPlan, title: str, label: Callable[[str], str],
                     outputs: Sequence[Sequence[int] | int] | None = None,
                     values: object = None) -> Geometry:
    """The geometry of a padding plan (:class:`dmlops.padding.PadPlan`); ``outputs`` (as
    ``pooling_geometry``'s) must be None: padding has no windows to choose."""
    names = Names(title)
    if outputs is not None:
        raise names.invalid(lambda n: f"{n('outputs')} chooses pooling windows; padding has "
                                      f"none")
    rank = len(plan.in_sizes)
    drawn = tuple(range(max(0, rank - 2), rank))
    sizes = tuple(plan.in_sizes[i] for i in drawn)
    lo = tuple(-plan.start[i] for i in drawn)
    hi = tuple(plan.in_sizes[i] + plan.end[i] for i in drawn)
    _check_drawable([h - l for l, h in zip(lo, hi)], names, "this padding")
    if 0 in sizes:
        raise names.invalid(f"input {list(plan.in_sizes)} is empty: there is no element to "
                            f"copy or to draw")
    per_dim = [_copies(plan.in_sizes[i], plan.start[i], plan.end[i], plan.mode) for i in drawn]
    kinds, sources = {}, {}
    for cell in np.ndindex(*(h - l for l, h in zip(lo, hi))):
        x = tuple(c + l for c, l in zip(cell, lo))
        kinds[x] = INPUT if all(0 <= v < n for v, n in zip(x, sizes)) else PADDING
        src = [per_dim[j][c] for j, c in enumerate(cell)]
        sources[x] = None if None in src else tuple(src)
    mode = plan.mode.name.lower()
    summary = (f"{label('padding_mode')} {mode}, {label('start_padding')} {list(plan.start)}, "
               f"{label('end_padding')} {list(plan.end)}"
               + (f", {label('padding_value')} {value_text(plan.value)}"
                  if plan.mode == PaddingMode.CONSTANT else ""))
    out = [n + x + y for n, x, y in zip(plan.in_sizes, plan.start, plan.end)]
    notes = [f"input {_dims_text(plan.in_sizes)}, output {_dims_text(out)}"]
    for i in drawn:
        n = plan.in_sizes[i]
        if max(plan.start[i], plan.end[i]) > n and plan.mode != PaddingMode.CONSTANT:
            notes.append(f"dimension {i}: pads wider than the input (n = {n}): "
                         + _WIDE[plan.mode](n))
    if rank > 2:
        hidden = [i for i in range(rank - 2) if plan.start[i] or plan.end[i]]
        notes.append(f"drawn: the last two of {rank} dimensions"
                     + (f" (dimension {', '.join(map(str, hidden))} is padded too)"
                        if hidden else ""))
    return Geometry(title, summary, tuple(notes), "padding", sizes, lo, hi, kinds,
                    sources=sources, value=plan.value,
                    values=_drawn_values(values, tuple(plan.in_sizes), sizes, names))


# what each kind of plan draws as (a plan of another kind has nothing to draw)
_GEOMETRIES: dict[type, Callable[..., Geometry]] = {
    _pool.PoolPlan: pooling_geometry, PadPlan: padding_geometry}


def geometry(op: str | Callable[..., Any], input_sizes: Sequence[int], /, *args: Any,
             outputs: Sequence[Sequence[int] | int] | None = None, values: Any = None,
             ceil_mode: bool = False, **keywords: Any) -> Geometry:
    """The :class:`Geometry` that :func:`explain` draws, for the same arguments."""
    names = Names("explain")
    name = _op_name(op, names)
    # (the geometry does not depend on the data type; values are only written into cells)
    dtype = np.dtype(_FUNCTIONS[name][3])
    plan = _plan_call(name, input_sizes, args, keywords, dtype, ceil_mode, names)
    return _GEOMETRIES[type(plan)](plan, name, _fields(_FUNCTION_LABELS), outputs, values)


def value_text(v: Any) -> str:
    v = v.item() if isinstance(v, np.generic) else v
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def position_text(x: Coord) -> str:
    return "(" + ",".join(map(str, x)) + ")"


def window_label(w: OutputWindow, geometry: Geometry, kinds: dict[Coord, str]) -> str:
    phantom = sum(kinds.get(c) == PHANTOM for c in w.cells)
    parts = [f"output {position_text(w.output)}"]
    if w.divisor is not None:
        parts.append(f"divisor {w.divisor}")
    elif w.real == 0:
        parts.append("no real element: " + ("-inf" if geometry.kind in ("max", "max_grad")
                                            else "0"))
    if phantom:
        parts.append(f"{phantom} phantom")
    return ", ".join(parts)
