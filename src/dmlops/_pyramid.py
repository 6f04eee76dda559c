"""OME-Zarr multiscale pyramids (SPEC 6): level 0 the source, each next level the one before
pooled by dmlops (average with IncludePadding false, or max) with window = stride = the factor
along the spatial axes and end padding so that the last partial block pools its real elements
only (size ceil(n / factor)), bit for bit the chained in-memory calls, whatever the chunking;
written as NGFF 0.5 in zarr v3 (or 0.4 in zarr v2) through ``_zarrio.Staged``, all levels in
one pass, the group's metadata last.

    >>> import numpy as np, dmlops
    >>> levels = dmlops.pyramid(np.arange(36.0).reshape(6, 6), levels=3)
    >>> [lv.shape for lv in levels]
    [(6, 6), (3, 3), (2, 2)]
    >>> levels[2].compute()       # 3 x 3 into 2 x 2: the last block holds one real row
    array([[10.5, 13.5],
           [28.5, 31.5]])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import Names

METHODS = ("average", "max")
SPACE = "zyx"
# an axis letter's NGFF type
TYPES = {"t": "time", "c": "channel", "z": "space", "y": "space", "x": "space"}
_PYRAMID, _WRITE = Names("pyramid"), Names("write_pyramid")


def _axes(axes: str | None, ndim: int) -> str:
    """The axes' letters: given (``tczyx`` style, one per dimension), else the last
    ``ndim`` of ``tczyx``."""
    if axes is None:
        if not 2 <= ndim <= 5:
            raise _PYRAMID.unsupported(lambda n: f"an array of {ndim} dimensions needs "
                                                 f"{n('axes')} = letters naming them (2 to 5 "
                                                 f"of tczyx)")
        return "tczyx"[-ndim:]
    if not isinstance(axes, str) or len(axes) != ndim or len(set(axes)) != ndim or \
            any(a not in TYPES for a in axes):
        raise _PYRAMID.invalid(lambda n: f"{n('axes')} = {axes!r} must name each of the "
                                         f"{ndim} dimensions once with letters of 'tczyx'")
    spatial = [a for a in axes if a in SPACE]
    if not spatial or axes[-len(spatial):] != "".join(spatial) or \
            "".join(spatial) != "".join(a for a in SPACE if a in spatial):
        raise _PYRAMID.invalid(lambda n: f"{n('axes')} = {axes!r}: the spatial axes (z, y, x, "
                                         f"in that order) come last, at least one")
    if len(axes) - len(spatial) > 2:
        raise _PYRAMID.unsupported(lambda n: f"{n('axes')} = {axes!r}: at most two axes "
                                             f"before the spatial ones (t and c)")
    return axes


def _check(method: Any, factor: Any, levels: Any) -> None:
    if method not in METHODS:
        raise _PYRAMID.invalid(lambda n: f"{n('method')} = {method!r} must be one of "
                                         f"{', '.join(METHODS)}")
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor < 2:
        raise _PYRAMID.invalid(lambda n: f"{n('factor')} = {factor!r} must be an integer of "
                                         f"at least 2")
    if levels is not None and (isinstance(levels, bool) or
                               not isinstance(levels, (int, np.integer)) or levels < 1):
        raise _PYRAMID.invalid(lambda n: f"{n('levels')} = {levels!r} must be a positive "
                                         f"integer (level 0, the source, included)")


def pyramid(array: Any, levels: int | None = None, *, method: str = "average", factor: int = 2,
            axes: str | None = None, chunks: Any = None) -> list[Any]:
    """The levels of a multiscale pyramid of ``array`` (NumPy or Dask), as lazy Dask arrays:
    level 0 the array itself, each next level the previous one pooled by
    :func:`average_pooling` (``include_padding=False``) or :func:`max_pooling` with window =
    stride = ``factor`` along the spatial axes (of ``axes``, default the last up to 3), the
    ends padded so that the last partial block pools its real elements only (size
    ``ceil(n / factor)``). ``levels`` counts them, level 0 included; default: until the
    largest spatial size fits one chunk. ``chunks``: every level's chunk shape, one size for
    every axis or one per axis (default the source's)."""
    import dask.array as da

    from . import functional as fn

    _check(method, factor, levels)
    if isinstance(chunks, (int, np.integer)):
        chunks = (int(chunks),) * np.ndim(array)
    x = array if hasattr(array, "dask") else da.from_array(np.asarray(array),
                                                           chunks="auto" if chunks is None
                                                           else chunks)
    names = _axes(axes, x.ndim)
    k = sum(a in SPACE for a in names)
    lead = x.ndim - k
    # every level's chunk shape: the one asked for, else the source's (its first chunks)
    level_chunks = tuple(chunks) if chunks is not None else \
        tuple(int(c[0]) if c else 1 for c in x.chunks)
    if levels is None:
        sizes, fits, levels = list(x.shape[lead:]), list(level_chunks[lead:]), 1
        while any(n > c for n, c in zip(sizes, fits)):
            sizes = [math.ceil(n / factor) for n in sizes]
            levels += 1
    pool: Any = fn.average_pooling if method == "average" else fn.max_pooling
    extra: dict[str, Any] = {"include_padding": False} if method == "average" else {}
    out = [x]
    cur = x
    for _ in range(int(levels) - 1):
        sizes = cur.shape[lead:]
        ends = [math.ceil(n / factor) * factor - n for n in sizes]
        four = cur[(None,) * (2 - lead)] if lead < 2 else cur
        want = tuple(four.shape[:2]) + tuple(math.ceil(n / factor) for n in sizes)
        # (each level chunked as asked, clipped to its shape)
        cut = tuple(min(c, n) for c, n in zip((1,) * (2 - lead) + level_chunks, want))
        y = pool(four, factor, strides=factor, end_padding=ends, chunks=cut, **extra)
        cur = y[(0,) * (2 - lead)] if lead < 2 else y
        out.append(cur)
    return out


def multiscales(levels: list[Any], axes: str, method: str, factor: int, ngff: str, *,
                name: str | None = None, units: dict[str, str] | None = None,
                scale: Any = None, translation: Any = None) -> dict[str, Any]:
    """The group attributes of an OME-Zarr image of ``levels`` (datasets "0", "1", ...).
    Level i's voxel along a spatial axis spans factor^i of level 0's, so its scale is
    ``scale * factor**i`` and its centre lies ``(factor**i - 1) / 2`` level-0 voxels past
    level 0's first: ``translation + (factor**i - 1) / 2 * scale`` (written only where level 0
    has a translation)."""
    lead = sum(a not in SPACE for a in axes)
    s0 = [1.0] * len(axes) if scale is None else [float(v) for v in scale]

    def transforms(i: int) -> list[dict[str, Any]]:
        grow = [1] * lead + [factor ** i] * (len(axes) - lead)
        out = [{"type": "scale", "scale": [s * g for s, g in zip(s0, grow)]}]
        if translation is not None:
            out.append({"type": "translation",
                        "translation": [float(t) + (g - 1) / 2 * s
                                        for t, s, g in zip(translation, s0, grow)]})
        return out

    datasets = [{"path": str(i), "coordinateTransformations": transforms(i)}
                for i in range(len(levels))]
    entry: dict[str, Any] = {
        "axes": [{"name": a, "type": TYPES[a], **({"unit": units[a]} if units and a in units
                                                   else {})} for a in axes],
        "datasets": datasets,
        "type": method,
        "metadata": {"method": f"dmlops.{method}_pooling", "factor": factor,
                     "padding": "end, real elements only"},
    }
    if name:
        entry["name"] = name
    if ngff == "0.4":
        return {"multiscales": [{"version": "0.4", **entry}]}
    return {"ome": {"version": "0.5", "multiscales": [entry]}}


def from_source(found: dict[str, Any], axes: str | None) -> dict[str, Any]:
    """``write_pyramid``'s axes, units, scale and translation from what a source says of its
    axes (``_zarrio.source_axes``): its names where they are letters of ``tczyx`` and
    ``axes`` is not given; the units of the axes named alike; level 0's scale and
    translation where the axes are the source's own."""
    named = [a.get("name") for a in found.get("axes", [])]
    own = "".join(named) if named and all(isinstance(a, str) and len(a) == 1 and a in TYPES
                                          for a in named) else None
    chosen = axes if axes is not None else own
    units = {a["name"]: a["unit"] for a in found.get("axes", [])
             if isinstance(a.get("unit"), str) and chosen and a["name"] in chosen}
    same = chosen is not None and chosen == own
    return {"axes": chosen, "units": units or None,
            "scale": found.get("scale") if same else None,
            "translation": found.get("translation") if same else None}


def _numbers(values: Any, ndim: int, field: str, positive: bool) -> list[float] | None:
    if values is None:
        return None
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        out = []
    if len(out) != ndim or not all(math.isfinite(v) and (v > 0 or not positive) for v in out):
        rule = "positive finite numbers" if positive else "finite numbers"
        raise _WRITE.invalid(lambda n: f"{n(field)} = {values!r} must be {ndim} {rule}, one "
                                       f"per axis")
    return out


def write_pyramid(levels: list[Any], url: str, *, axes: str | None = None,
                  method: str = "average", factor: int = 2, ngff: str = "0.5",
                  storage_options: dict[str, Any] | None = None, scheduler: Any = None,
                  progress: bool = False, name: str | None = None,
                  units: dict[str, str] | None = None, scale: Any = None,
                  translation: Any = None) -> None:
    """Write ``levels`` (``pyramid``'s) as an OME-Zarr image at ``url`` (a path or an fsspec
    URL, which must not exist yet): datasets "0", "1", ... with the ``multiscales`` metadata
    (NGFF ``ngff`` "0.5", zarr v3, or "0.4", zarr v2), all levels computed in one pass, on
    this process's threads or the dask.distributed ``scheduler``; the group's metadata is
    written last, and a failure leaves nothing behind. ``units`` names an axis's unit
    (``{"x": "micrometer"}``), ``scale`` and ``translation`` place level 0 (one number per
    axis; the next levels' follow from the factor); ``dmlops pyramid`` takes all three from a
    source that is a level of an OME-Zarr image.

    >>> import tempfile, numpy as np, zarr, dmlops
    >>> folder = tempfile.mkdtemp()
    >>> levels = dmlops.pyramid(np.zeros((8, 8), np.float32), levels=2)
    >>> dmlops.write_pyramid(levels, f"{folder}/img.zarr", units={"y": "micrometer",
    ...                      "x": "micrometer"}, scale=[0.5, 0.25])
    >>> image = zarr.open_group(f"{folder}/img.zarr").attrs["ome"]["multiscales"][0]
    >>> [d["coordinateTransformations"][0]["scale"] for d in image["datasets"]]
    [[0.5, 0.25], [1.0, 0.5]]
    >>> image["axes"][1]
    {'name': 'x', 'type': 'space', 'unit': 'micrometer'}
    """
    from pathlib import Path

    from . import _zarrio

    if ngff not in ("0.4", "0.5"):
        raise _WRITE.invalid(lambda n: f"{n('ngff')} = {ngff!r} must be '0.4' or '0.5'")
    if not levels:
        raise _WRITE.invalid(lambda n: f"{n('levels')} is empty")
    names = _axes(axes, levels[0].ndim)
    if units is not None and (not isinstance(units, dict) or
                              any(a not in names or not isinstance(u, str) or not u
                                  for a, u in units.items())):
        raise _WRITE.invalid(lambda n: f"{n('units')} = {units!r} must map axes of "
                                       f"{names!r} to unit names")
    scale = _numbers(scale, len(names), "scale", positive=True)
    translation = _numbers(translation, len(names), "translation", positive=False)
    split = _zarrio.split(str(url)) if str(url).rstrip("/").lower().endswith(".zarr") else None
    if split is None or split[1]:
        raise _WRITE.invalid(f"{str(url)!r} must name a store ending in .zarr", field="url")
    store = split[0] if _zarrio.is_url(split[0]) else Path(split[0]).absolute()
    if not _zarrio.is_url(store) and Path(store).exists():
        raise _WRITE.invalid(f"{str(store)!r} exists; remove it first", field="url")
    if name is None:        # (the store's name: "scan" for s3://bucket/scan.zarr)
        name = str(url).rstrip("/").rsplit("/", 1)[-1][:-len(".zarr")]
    staged = _zarrio.Staged(storage_options, zarr_format=2 if ngff == "0.4" else 3,
                            root_attributes=multiscales(
                                levels, names, method, factor, ngff, name=name, units=units,
                                scale=scale, translation=translation))
    if not _zarrio.is_url(store):
        Path(store).parent.mkdir(parents=True, exist_ok=True)
    for i, level in enumerate(levels):
        staged.add(store, str(i), level)
    session = _zarrio.Session(scheduler, progress)
    done = False
    try:
        staged.write(session)
        staged.commit()
        done = True
    finally:
        session.close()
        if not done:
            staged.discard()
