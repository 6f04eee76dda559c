"""The gallery's helpers: its order, and a scraper for the figures ``dmlops.explain`` returns.

``dmlops.explain`` makes a bare ``matplotlib.figure.Figure`` (not one of pyplot's), so the
gallery's default Matplotlib scraper, which asks pyplot for its figures, does not see it. This
one saves every such figure found among the example's variables after each code block, once.
Pyplot's figures are left to the default scraper.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

# The gallery's order: the window's geometry first, then padding, then the Dask pyramid.
ORDER = ("plot_ceil_mode.py", "plot_dilations.py", "plot_padding_modes.py",
         "plot_wide_pads.py", "plot_dask_pyramid.py")


class GalleryOrder:
    """``within_subsection_order``: the scripts in ``ORDER``'s order, any other after them by
    name."""

    def __init__(self, src_dir: str) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        name = Path(filename).name
        return (ORDER.index(name) if name in ORDER else len(ORDER), name)


def figures_in_globals(block: Any, block_vars: dict[str, Any], gallery_conf: dict[str, Any]) -> str:
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    found: list[Figure] = []
    for value in block_vars["example_globals"].values():
        for fig in value if isinstance(value, (list, tuple)) else (value,):
            if (isinstance(fig, Figure) and fig.canvas.manager is None
                    and not getattr(fig, "_dmlops_gallery_saved", False)):
                found.append(fig)
    paths = []
    for fig, path in zip(found, block_vars["image_path_iterator"]):
        fig.savefig(path)
        fig._dmlops_gallery_saved = True
        paths.append(PurePosixPath(path))
    if not paths:
        return ""
    return figure_rst(paths, gallery_conf["src_dir"])
