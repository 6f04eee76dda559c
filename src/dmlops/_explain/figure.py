"""The Matplotlib figure: :func:`explain`, :func:`draw` and :func:`save` (Matplotlib imported
at the first drawing, never with this module)."""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import Names
from .geometries import (INPUT, PADDING, PHANTOM, Coord, Geometry, geometry, position_text,
                         value_text, window_label)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure


def explain(op: str | Callable[..., Any], input_sizes: Sequence[int], /, *args: Any,
            outputs: Sequence[Sequence[int] | int] | None = None, values: Any = None,
            ceil_mode: bool = False, **keywords: Any) -> Figure:
    """A Matplotlib figure of a pooling's or a padding's geometry.

    Call it as the function ``op`` (its name, or the function), each array replaced by its
    sizes, with the function's own keywords; it checks them as the function does. Operators:
    average_pooling, max_pooling, lp_pooling, quantized_linear_average_pooling, the two
    gradients (drawn as their forward windows: ``max_pooling_grad`` takes ``x``'s then
    ``dy``'s sizes, ``average_pooling_grad`` ``dy``'s with ``input_sizes=``) and padding.

    Pooling: the input cells, padding cells and phantom cells (where the window of an F + 1
    output reaches past the padding: never read, never counted), the windows of ``outputs``
    (by default the first, one in the middle and the last; dilation's holes left out) and
    beside it the output, each position with its divisor for averages. ``ceil_mode=True``
    asks for the F + 1 outputs as ``pooling_output_sizes`` gives them. Padding: every cell
    with the input index it copies (per mode, pads wider than the input too). ``values``, a
    small array of the input's (or the drawn plane's) sizes, is written into the cells.
    One or two dimensions are drawn: the last two spatial ones (padding: the last two).

    Each cell's patch has a ``gid`` naming it: ``input:(r,c)``, ``padding:(r,c)``,
    ``phantom:(r,c)``; a window's marks ``window:(i,j):(r,c)``; output cells ``output:(i,j)``
    or ``extra:(i,j)`` (the F + 1 ones), their divisors' texts ``divisor:(i,j)``; padding's
    texts ``source:(r,c)`` (the copied index) or ``constant:(r,c)``. Needs Matplotlib
    (``pip install "dmlops[plot]"``); :func:`explain_text` draws with characters.

    >>> import dmlops
    >>> fig = dmlops.explain("average_pooling", (1, 1, 5), 2, strides=2, ceil_mode=True)
    >>> [p.get_gid() for p in fig.findobj() if str(p.get_gid()).startswith("phantom")]
    ['phantom:(5)']
    >>> [t.get_text() for t in fig.findobj() if str(t.get_gid()).startswith("divisor")]
    ['÷2', '÷2', '÷1']
    """
    return draw([geometry(op, input_sizes, *args, outputs=outputs, values=values,
                          ceil_mode=ceil_mode, **keywords)])


_FACE = {INPUT: "#d6e6f5", PADDING: "#e4e4e4", PHANTOM: "#ffffff"}
_WINDOW_COLOURS = ("#e6550d", "#31a354", "#756bb1", "#d6616b", "#3182bd", "#8c6d31")
CELL_INCHES = 0.42


def _matplotlib(title: str) -> type[Figure]:
    try:
        import matplotlib  # noqa: F401  (first the package: a submodule may be kept loaded)
        from matplotlib.figure import Figure
    except ImportError:
        raise Names(title).unsupported(
            'explain draws with Matplotlib, which is not installed: pip install '
            '"dmlops[plot]" (explain_text and `dmlops explain --text` need no Matplotlib)'
        ) from None
    return Figure


def draw(geometries: Sequence[Geometry]) -> Figure:
    """One figure, a row of panels per geometry (input beside output for pooling)."""
    Figure = _matplotlib(geometries[0].title)
    shapes = []
    for g in geometries:
        rows = g.hi[0] - g.lo[0] if len(g.lo) == 2 else 1
        cols = g.hi[-1] - g.lo[-1]
        out_cols = g.output_sizes[-1] + 1 if g.output_sizes else 0
        shapes.append((rows, cols, out_cols))
    width = max(6.0, max(CELL_INCHES * (c + oc) + 1.2 for _, c, oc in shapes))
    headings, heights = [], []
    for g, (rows, _, _) in zip(geometries, shapes):
        chars = int(width * 13)         # (characters of 8-point text per line)
        heading = "\n".join([textwrap.fill(f"{g.title}: {g.summary}", chars)]
                            + [textwrap.fill(n, int(chars * 1.2)) for n in g.notes])
        legend = max(len(g.windows) + 1 if g.windows else 0, 3 if g.sources is None else 2)
        headings.append(heading)
        heights.append(CELL_INCHES * rows + 0.16 * (heading.count("\n") + 1) + 0.14 * legend
                       + 0.45)
    fig = Figure(figsize=(width, sum(heights)), layout="constrained")
    panels = fig.subfigures(len(geometries), 1, height_ratios=heights, squeeze=False)[:, 0]
    for g, panel, heading, (_, cols, out_cols) in zip(geometries, panels, headings, shapes):
        _draw_panel(g, panel, heading, cols, out_cols)
    return fig


def save(geometries: Sequence[Geometry], target: str | os.PathLike[str]) -> None:
    """Draw ``geometries`` into the picture file ``target`` (its suffix names the format,
    PNG without one), whole or not at all: written beside it, then renamed."""
    path = Path(target)
    fmt = path.suffix[1:].lower() or "png"
    fig = draw(geometries)
    if fmt not in fig.canvas.get_supported_filetypes():
        raise Names("explain").invalid(f"{str(target)!r}: Matplotlib writes no .{fmt} "
                                       f"pictures; use .png, .svg or .pdf")
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        fig.savefig(part, format=fmt, dpi=100)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def _setup(ax: Axes, lo: Coord, hi: Coord) -> None:
    two = len(lo) == 2
    ax.set_xlim(lo[-1] - 0.5, hi[-1] - 0.5)
    ax.set_ylim((hi[0] - 0.5, lo[0] - 0.5) if two else (0.5, -0.5))
    ax.set_aspect("equal")
    ax.xaxis.tick_top()
    ax.set_xticks(range(lo[-1], hi[-1]))
    ax.set_yticks(range(lo[0], hi[0]) if two else [])
    ax.tick_params(length=0, labelsize=7)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _xy(x: Coord) -> tuple[float, float]:
    return (float(x[-1]), float(x[0]) if len(x) == 2 else 0.0)


def _draw_panel(g: Geometry, panel: Figure | SubFigure, heading: str, cols: int,
                out_cols: int) -> None:
    from matplotlib.patches import Rectangle
    if g.output_sizes:
        ax, out_ax = panel.subplots(1, 2, width_ratios=[cols, out_cols], squeeze=True)
    else:
        ax, out_ax = panel.subplots(1, 1), None
    panel.suptitle(heading, fontsize=8, ha="left", x=0.01, linespacing=1.3)
    _setup(ax, g.lo, g.hi)
    count = max(1, len(g.sizes) and math.prod(g.sizes))
    from matplotlib import colormaps
    cmap = colormaps["tab10"]
    for x, kind in g.kinds.items():
        cx, cy = _xy(x)
        face: Any = _FACE[kind]
        alpha = 1.0
        if g.sources is not None:
            src = g.sources[x]
            if src is not None:
                flat = int(np.ravel_multi_index(src, g.sizes)) if src else 0
                face = cmap(flat % 10)
                alpha = 1.0 if kind == INPUT else 0.45
        ax.add_patch(Rectangle((cx - 0.5, cy - 0.5), 1, 1, facecolor=face, alpha=alpha,
                               edgecolor="#b02020" if kind == PHANTOM else "#999999",
                               hatch="///" if kind == PHANTOM else None, linewidth=0.6,
                               gid=f"{kind}:{position_text(x)}"))
    # the input's border
    lo_in = (-0.5, -0.5)
    ax.add_patch(Rectangle((lo_in[0], lo_in[1] if len(g.sizes) == 2 else -0.5),
                           g.sizes[-1], g.sizes[0] if len(g.sizes) == 2 else 1,
                           fill=False, edgecolor="#222222", linewidth=1.6, gid="border"))
    small = 6 if count > 1 else 7
    if g.sources is not None:
        for x, src in g.sources.items():
            cx, cy = _xy(x)
            if src is None:
                ax.text(cx, cy, value_text(g.value), ha="center", va="center", fontsize=small,
                        style="italic", color="#555555", gid=f"constant:{position_text(x)}")
                continue
            has_value = g.values is not None
            ax.text(cx, cy + (0.25 if has_value else 0.0), ",".join(map(str, src)),
                    ha="center", va="center", fontsize=small - (1 if has_value else 0),
                    color="#333333", gid=f"source:{position_text(x)}")
            if g.values is not None:
                ax.text(cx, cy - 0.08, value_text(g.values[src]), ha="center", va="center",
                        fontsize=8, gid=f"value:{position_text(x)}")
    elif g.values is not None:
        for x, kind in g.kinds.items():
            if kind == INPUT:
                cx, cy = _xy(x)
                ax.text(cx, cy, value_text(g.values[x]), ha="center", va="center", fontsize=7,
                        gid=f"value:{position_text(x)}")
    for i, w in enumerate(g.windows):
        colour = _WINDOW_COLOURS[i % len(_WINDOW_COLOURS)]
        inset = 0.07 + 0.08 * (i % 4)
        for c in w.cells:
            cx, cy = _xy(c)
            ax.add_patch(Rectangle((cx - 0.5 + inset, cy - 0.5 + inset), 1 - 2 * inset,
                                   1 - 2 * inset, fill=False, edgecolor=colour, linewidth=1.8,
                                   gid=f"window:{position_text(w.output)}:{position_text(c)}"))
    _legend(g, panel)
    if out_ax is not None:
        _draw_outputs(g, out_ax)


def _legend(g: Geometry, panel: Figure | SubFigure) -> None:
    """The cell kinds (lower right) and the chosen windows (lower left, in their colours)."""
    from matplotlib.patches import Patch
    if g.sources is not None:
        handles = [Patch(facecolor="#bbbbbb", edgecolor="#222222", linewidth=1.6,
                         label="input (colour: the element)"),
                   Patch(facecolor="#bbbbbb", alpha=0.45, edgecolor="#999999",
                         label="padding: the element it copies (small: its index)")]
    else:
        kinds = set(g.kinds.values())
        handles = [Patch(facecolor=_FACE[k], edgecolor="#b02020" if k == PHANTOM else "#999999",
                         hatch="///" if k == PHANTOM else None,
                         label=k + (" (past the padding: not read, not counted)"
                                    if k == PHANTOM else ""))
                   for k in (INPUT, PADDING, PHANTOM) if k in kinds]
    panel.legend(handles=handles, loc="outside lower right", fontsize=7, frameon=False)
    if not g.windows:
        return
    colours = [_WINDOW_COLOURS[i % len(_WINDOW_COLOURS)] for i in range(len(g.windows))]
    marks = [Patch(fill=False, edgecolor=c, linewidth=1.8, label=window_label(w, g, g.kinds))
             for w, c in zip(g.windows, colours)]
    legend = panel.legend(handles=marks, loc="outside lower left", fontsize=8, frameon=False,
                          title="windows of", title_fontsize=7, alignment="left")
    for text, w, c in zip(legend.get_texts(), g.windows, colours):
        text.set_color(c)
        text.set_gid(f"label:{position_text(w.output)}")


def _draw_outputs(g: Geometry, ax: Axes) -> None:
    from matplotlib.patches import Rectangle
    sizes = g.output_sizes
    _setup(ax, (0,) * len(sizes), sizes)
    chosen = {w.output: _WINDOW_COLOURS[i % len(_WINDOW_COLOURS)]
              for i, w in enumerate(g.windows)}
    for o in np.ndindex(*sizes):
        cx, cy = _xy(o)
        extra = any(v >= f for v, f in zip(o, g.floor_sizes))
        ax.add_patch(Rectangle((cx - 0.5, cy - 0.5), 1, 1,
                               facecolor="#fbe3b5" if extra else "#f7f7f7",
                               edgecolor="#999999", linewidth=0.6,
                               gid=f"{'extra' if extra else 'output'}:{position_text(o)}"))
        if o in chosen:
            ax.add_patch(Rectangle((cx - 0.42, cy - 0.42), 0.84, 0.84, fill=False,
                                   edgecolor=chosen[o], linewidth=2.0,
                                   gid=f"chosen:{position_text(o)}"))
        if g.divisors is not None:
            ax.text(cx, cy, f"÷{g.divisors[o]}", ha="center", va="center", fontsize=7,
                    gid=f"divisor:{position_text(o)}")
    extra_dims = [f for f, n in zip(g.floor_sizes, sizes) if n > f]
    ax.set_title(("output, each with its divisor" if g.divisors is not None else "output")
                 + ("\n(orange: the F + 1 outputs)" if extra_dims else ""),
                 fontsize=8)
