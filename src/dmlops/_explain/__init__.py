"""Pictures of the geometry of pooling and padding: :func:`explain` and :func:`explain_text`.

Two layers, as the rest of the library has them. The *geometry* (:class:`Geometry`) is plain
data: the kind of every drawn cell (input, padding, phantom), the cells and divisor of chosen
outputs' windows, the input element every padded cell copies. It is built from the plan the
function itself would run (the ``_plan_*`` of :mod:`dmlops.functional`, or a model's compiled
operator), and padding's copies come from running :func:`dmlops.padding` on the indices
``0 .. n-1``, so a picture shows what the kernels do. Two renderers read it: a Matplotlib
figure (Matplotlib imported only then: ``pip install "dmlops[plot]"``) and a character diagram.

Coordinates are the SPEC's: relative to the input's first element, so start padding is
negative. In 2-D a cell is phantom if either coordinate is, else padding if either is.
Inputs with more than two spatial dimensions (padding: more than two dimensions) are drawn in
their last two; pooling's other spatial dimensions are taken at output index 0 (their first
window), and their counts are part of the divisors shown.

Three modules: ``geometries`` (the data, from a call or a model), ``text`` (the character
diagram) and ``figure`` (Matplotlib's).
"""

from .figure import CELL_INCHES, draw, explain, save
from .geometries import (INPUT, MOST_CELLS, PADDING, PHANTOM, Coord, Geometry, OutputWindow,
                         geometry, model_geometries, padding_geometry, pooling_geometry)
from .text import explain_text, render_text

__all__ = ["explain", "explain_text", "Geometry", "OutputWindow", "geometry", "model_geometries",
           "pooling_geometry", "padding_geometry", "render_text", "draw", "save", "Coord",
           "INPUT", "PADDING", "PHANTOM", "MOST_CELLS", "CELL_INCHES"]
