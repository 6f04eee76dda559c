"""The character diagram: :func:`explain_text` and :func:`render_text` (no Matplotlib)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .geometries import (INPUT, PADDING, PHANTOM, Coord, Geometry, geometry, value_text,
                         window_label)


def explain_text(op: str | Callable[..., Any], input_sizes: Sequence[int], /, *args: Any,
                 outputs: Sequence[Sequence[int] | int] | None = None, values: Any = None,
                 ceil_mode: bool = False, **keywords: Any) -> str:
    """:func:`explain`'s picture as characters (no Matplotlib needed): ``.`` input, ``p``
    padding, ``x`` phantom, the letters of the windows that cover a cell; for padding, the
    input index each cell copies (``|`` and ``-`` border the input).

    >>> import dmlops
    >>> print(dmlops.explain_text("padding", (3,), 4, 4, mode="reflection"))
    padding: mode reflection, start_padding [4], end_padding [4]
      input 3, output 11
      dimension 0: pads wider than the input (n = 3): reflection repeats every 2(n - 1) = 4
      input index copied:
       -4 -3 -2 -1 |  0  1  2 |  3  4  5  6
        0  1  2  1 |  0  1  2 |  1  0  1  2
    """
    return render_text([geometry(op, input_sizes, *args, outputs=outputs, values=values,
                                 ceil_mode=ceil_mode, **keywords)])


_SYMBOL = {INPUT: ".", PADDING: "p", PHANTOM: "x"}
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _grid(geometry: Geometry, text: Callable[[Coord], str]) -> list[str]:
    """Rows of right-aligned cells with coordinate headers, ``|`` / ``-`` at the input's
    borders."""
    lo, hi = geometry.lo, geometry.hi
    two = len(lo) == 2
    rows = range(lo[0], hi[0]) if two else range(1)
    cols = range(lo[-1], hi[-1])
    cells = {(r, c): text((r, c) if two else (c,)) for r in rows for c in cols}
    width = max([len(t) for t in cells.values()] + [len(str(c)) for c in cols])
    head_w = max(len(str(r)) for r in rows) + 1 if two else 0
    n = geometry.sizes[-1]

    def line(items: Callable[[int], str], lead: str) -> str:
        parts = [lead.rjust(head_w)]
        for c in cols:
            if c in (0, n):
                parts.append("|")
            parts.append(items(c).rjust(width))
        return " ".join(parts).rstrip()

    out = [line(str, "")]
    for r in rows:
        if two and r in (0, geometry.sizes[0]):
            out.append(" " * head_w + "-" * (len(out[0]) - head_w))
        out.append(line(lambda c: cells[(r, c)], str(r) if two else ""))
    return ["  " + t for t in out]


def render_text(geometries: Sequence[Geometry]) -> str:
    """The character diagram of each geometry, one after the other."""
    blocks = []
    for g in geometries:
        lines = [f"{g.title}: {g.summary}"] + ["  " + n for n in g.notes]
        if g.sources is not None:
            sources, values = g.sources, g.values
            constant = (f" (c: the constant {value_text(g.value)})"
                        if None in sources.values() else "")
            lines.append(f"  input index copied{constant}:")
            lines += _grid(g, lambda x: "c" if sources[x] is None
                           else ",".join(map(str, sources[x] or ())))
            if values is not None:
                plane: np.ndarray = values
                lines.append("  value:")
                lines += _grid(g, lambda x: value_text(g.value if sources[x] is None
                                                       else plane[sources[x]]))
        else:
            letters = {w.output: _LETTERS[i % 26] for i, w in enumerate(g.windows)}
            cover: dict[Coord, str] = {}
            for w in g.windows:
                for c in w.cells:
                    cover[c] = cover.get(c, "") + letters[w.output]
            lines.append("  cells: . input, p padding, x phantom; letters: the windows of")
            lines += [f"    {letters[w.output]} {window_label(w, g, g.kinds)}"
                      for w in g.windows]
            values = g.values

            def cell(x: Coord) -> str:
                mark = _SYMBOL[g.kinds[x]]
                if values is not None and g.kinds[x] == INPUT:
                    mark = value_text(values[x])
                return mark + cover.get(x, "")

            lines += _grid(g, cell)
            if g.divisors is not None:
                lines.append("  divisor of every output:")
                lines += _output_grid(g)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _output_grid(g: Geometry) -> list[str]:
    assert g.divisors is not None
    rows = g.output_sizes[0] if len(g.output_sizes) == 2 else 1
    cols = g.output_sizes[-1]
    width = max(len(str(v)) for v in g.divisors.values())
    out = []
    for r in range(rows):
        items = [str(g.divisors[(r, c) if len(g.output_sizes) == 2 else (c,)]).rjust(width)
                 for c in range(cols)]
        out.append("    " + " ".join(items))
    return out
