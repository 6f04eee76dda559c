"""The ``dmlops`` command: ``dmlops run MODEL.json``, ``dmlops explain MODEL.json``,
``dmlops info``, ``dmlops --version``.

Exit codes: 0 success; 2 a caller error (bad arguments, a model that fails validation or a
command that fails), reported as one short message naming the JSON location, never a
traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["main"]


def _version() -> str:
    try:
        from . import __version__
        return str(__version__)
    except ImportError:
        pass
    try:
        from importlib.metadata import version
        return version("dmlops")
    except Exception:       # not installed (running from a source tree)
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dmlops",
        description="DirectML's pooling and padding operators with their exact semantics.")
    parser.add_argument("--version", action="version", version=f"dmlops {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser(
        "run", help="run a DxDispatch JSON model",
        description="Run a DxDispatch JSON model (resources, dispatchables naming "
                    "DML_OPERATOR_* with their desc fields, commands dispatch / print / "
                    "writeFile). The whole model is validated before anything runs, and "
                    "files are written only after every command succeeded.")
    run.add_argument("model", metavar="MODEL.json", help="the model file")
    run.add_argument("--feature-level", metavar="LEVEL", default=None, type=_level_text,
                     help="target DirectML feature level (1.0 ... 6.4, 6_4, "
                          "DML_FEATURE_LEVEL_6_4 or 0x6400); default: extended mode")
    run.add_argument("--backend", metavar="NAME", default=None,
                     help="backend to run on (see 'dmlops info'); default: the library's "
                          "choice")
    run.add_argument("--scheduler", metavar="ADDRESS", default=None,
                     help="run a zarr model's Dask work on the dask.distributed scheduler at "
                          "ADDRESS (tcp://host:8786); default: this process's threads")
    run.add_argument("--quiet", action="store_true",
                     help="no progress bar (one goes to stderr on a terminal, for zarr "
                          "models)")
    run.add_argument("--storage-option", metavar="KEY=VALUE", action="append", default=[],
                     type=_storage_option, dest="storage_options",
                     help="an fsspec option for the URLs the model names (s3://..., "
                          "gs://...), repeatable: endpoint_url=http://host:9000, anon=true; "
                          "a VALUE that reads as JSON (true, 3, {...}) is that value. "
                          "Credentials also come as fsspec and s3fs read them "
                          "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, ...)")

    explain = sub.add_parser(
        "explain", help="draw the geometry of a DxDispatch model's pooling and padding",
        description="Draw each pooling or padding dispatchable of a DxDispatch model (its "
                    "fields and sizes as the model gives them): input, padding and phantom "
                    "cells, the windows of the first, a middle and the last output with "
                    "their divisors, the input element each padded cell copies. -o needs "
                    "Matplotlib (pip install \"dmlops[plot]\"); --text does not.")
    explain.add_argument("model", metavar="MODEL.json", help="the model file")
    explain.add_argument("--dispatch", metavar="NAME", default=None,
                         help="draw this dispatchable only; default: every one that is a "
                              "pooling or a padding, a panel each")
    explain.add_argument("-o", "--output", metavar="PICTURE.png", default=None,
                         help="write the picture here (.png, .svg, .pdf)")
    explain.add_argument("--text", action="store_true",
                         help="print the same as a character diagram")

    pyr = sub.add_parser(
        "pyramid", help="write an OME-Zarr multiscale pyramid of a zarr array or .npy file",
        description="Write an OME-Zarr multiscale image (NGFF 0.5 in zarr v3, or 0.4 in zarr "
                    "v2) of SOURCE (a zarr array, local or a URL fsspec reads, or a .npy "
                    "file) at TARGET (a new .zarr store, local or a URL): level 0 the "
                    "source's values, each next level the previous one pooled by dmlops "
                    "with window = stride = the factor along the spatial axes, the last "
                    "partial block pooled over its real elements only; bit for bit the "
                    "chained in-memory calls. A source that is a level of an OME-Zarr "
                    "image passes on its axes' units and its voxel size.")
    pyr.add_argument("source", metavar="SOURCE", help="a zarr array (volume.zarr, "
                     "group.zarr/raw, s3://bucket/volume.zarr) or a .npy file")
    pyr.add_argument("target", metavar="TARGET", help="the new store (pyramid.zarr, "
                     "s3://bucket/pyramid.zarr)")
    pyr.add_argument("--levels", metavar="N", type=int, default=None,
                     help="datasets to write, level 0 included; default: until the largest "
                          "spatial size fits one chunk")
    pyr.add_argument("--method", choices=("average", "max"), default="average",
                     help="average (IncludePadding false) or max pooling; default average")
    pyr.add_argument("--factor", metavar="F", type=int, default=2,
                     help="window and stride along each spatial axis; default 2")
    pyr.add_argument("--axes", metavar="AXES", default=None,
                     help="the axes' letters, tczyx style (the spatial ones last); default "
                          "the source's (a level of an OME-Zarr image, or an array with "
                          "dimension names), else from the rank")
    pyr.add_argument("--chunks", metavar="C", default=None, type=_chunks_text,
                     help="every level's chunk shape, N or N,N,...; default the source's")
    pyr.add_argument("--ngff", choices=("0.4", "0.5"), default="0.5",
                     help="NGFF version: 0.5 (zarr v3, the default) or 0.4 (zarr v2)")
    pyr.add_argument("--scheduler", metavar="ADDRESS", default=None,
                     help="run on the dask.distributed scheduler at ADDRESS")
    pyr.add_argument("--storage-option", metavar="KEY=VALUE", action="append", default=[],
                     type=_storage_option, dest="storage_options",
                     help="an fsspec option for URLs, repeatable (as for run)")
    pyr.add_argument("--quiet", action="store_true", help="no progress bar")

    sub.add_parser("info", help="show backends, feature levels, data types and operators",
                   description="Show the available backends, the feature levels, the data "
                               "types and the operators.")
    return parser


def _storage_option(text: str) -> tuple[str, Any]:
    """KEY=VALUE as the pair fsspec takes: VALUE as JSON where it reads as JSON (true, 3,
    {"a": 1}), else the text."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    try:
        return key.strip(), json.loads(value)
    except ValueError:
        return key.strip(), value


def _chunks_text(text: str) -> Any:
    """N (every axis) or N,N,... as a chunk shape."""
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not N or N,N,...") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: chunk sizes are positive")
    return values[0] if len(values) == 1 else values


def _pyramid(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from . import _zarrio
    from ._pyramid import from_source, pyramid, write_pyramid
    from .dxdispatch import write_text
    from .errors import DmlError
    options = dict(args.storage_options)
    found: dict[str, Any] = {"axes": args.axes}
    try:
        source = args.source
        if source.lower().endswith(".npy") and "://" not in source:
            import numpy as np
            array: Any = np.load(source, mmap_mode="r", allow_pickle=False)
            if args.chunks is None:
                import dask.array as da
                array = da.from_array(array, chunks="auto")
        else:
            split = _zarrio.split(source)
            if split is None:
                raise _zarrio.ZarrError(f"{source!r} names neither a zarr array (a path "
                                        f"ending in .zarr, or inside one) nor a .npy file")
            store, component = split
            where = store if _zarrio.is_url(store) else store.absolute()
            array = _zarrio.open_source(where, component, options)
            # (a level of an OME-Zarr image: its axes, units and voxel size carry over)
            found = from_source(_zarrio.source_axes(where, component, options), args.axes)
        levels = pyramid(array, args.levels, method=args.method, factor=args.factor,
                         axes=found["axes"], chunks=args.chunks)
        write_pyramid(levels, args.target, method=args.method, factor=args.factor,
                      ngff=args.ngff, storage_options=options, scheduler=args.scheduler,
                      progress=not args.quiet and _is_terminal(err), **found)
    except (DmlError, _zarrio.ZarrError, OSError, ValueError) as e:
        write_text(err, f"dmlops pyramid: error: {e}\n")
        return 2
    if not args.quiet:
        write_text(out, f"{args.target}: {len(levels)} levels, "
                        f"{' '.join('x'.join(map(str, lv.shape)) for lv in levels)}\n")
    return 0


def _level_text(text: str) -> int | str:
    """A level as typed on the command line: a hexadecimal value (0x6400) is the number, as
    the library's spellings have it; the rest goes to the library as text."""
    t = text.strip()
    if t.lower().startswith("0x"):
        try:
            return int(t, 16)
        except ValueError:
            pass
    return text


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .dxdispatch import ModelError, load_model, write_text
    try:
        model = load_model(args.model, feature_level=args.feature_level,
                           backend=args.backend, storage_options=dict(args.storage_options))
        model.run(out, scheduler=args.scheduler,
                  progress=not args.quiet and _is_terminal(err))
    except ModelError as e:
        out.flush()
        write_text(err, f"dmlops run: error: {e}\n")
        return 2
    except (OSError, UnicodeError, MemoryError) as e:
        # (what the checks before running cannot foresee: the system's own refusals)
        out.flush()
        write_text(err, f"dmlops run: error: {args.model}: {type(e).__name__}: {e}\n")
        return 2
    return 0


def _explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ._explain import model_geometries, render_text, save
    from .dxdispatch import ModelError, load_model, write_text
    from .errors import DmlError
    if args.output is None and not args.text:
        write_text(err, "dmlops explain: error: give -o PICTURE.png, --text or both\n")
        return 2
    try:
        geometries, skipped = model_geometries(load_model(args.model), args.dispatch)
        if args.output is not None:
            save(geometries, args.output)
    except (ModelError, DmlError) as e:
        write_text(err, f"dmlops explain: error: {e}\n")
        return 2
    except OSError as e:
        write_text(err, f"dmlops explain: error: {args.output}: {type(e).__name__}: {e}\n")
        return 2
    for note in skipped:
        write_text(err, f"dmlops explain: left out {note}\n")
    if args.text:
        write_text(out, render_text(geometries) + "\n")
    return 0


def _is_terminal(stream: Any) -> bool:
    try:
        tty: bool = stream.isatty()
        return tty
    except (AttributeError, ValueError):
        return False


def _cpu_level() -> str:
    """The cpu backend's level in use and the levels this CPU runs, or why there is none."""
    try:
        from .backends.cpu import _levels
        return (f"level {_levels.level()}, {_levels.instructions()} "
                f"(this CPU runs: {', '.join(_levels.supported())}; "
                f"DMLOPS_CPU_LEVEL chooses)")
    except Exception as e:
        return f"unavailable ({e})"


def _info(out: TextIO) -> int:
    import dmlops
    from .dtypes import DataType, FeatureLevel
    from .support import OPERATORS
    out.write(f"dmlops {_version()}\n")
    try:
        available = tuple(dmlops.backends())
    except Exception as e:          # a broken optional backend must not hide the rest
        available = (f"(unavailable: {e})",)
    out.write(f"backends: {', '.join(available)}\n")
    try:
        out.write(f"default backend: {dmlops.get_backend()}\n")
    except Exception as e:          # e.g. DMLOPS_BACKEND names an unavailable backend
        out.write(f"default backend: (none: {e})\n")
    out.write(f"cpu kernels: {_cpu_level()}, {dmlops.get_num_threads()} threads\n")
    levels = ", ".join(str(level) for level in FeatureLevel)
    out.write(f"feature levels: {levels} (default: extended mode)\n")
    out.write("data types: " + ", ".join(f"{t.name} ({t.dtype})" for t in DataType) + "\n")
    out.write("operators:\n")
    try:
        from .descs import DESC_CLASSES
    except ImportError:
        DESC_CLASSES = {}
    for name, info in sorted(OPERATORS.items(), key=lambda kv: kv[1].value):
        if DESC_CLASSES and name not in DESC_CLASSES:
            continue
        out.write(f"  {info.operator_type} ({info.value}), feature level {info.since}\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dmlops`` console script and of ``python -m dmlops``."""
    out, err = sys.stdout, sys.stderr
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:       # --help, --version, or a usage error (code 2)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        if args.command == "run":
            return _run(args, out, err)
        if args.command == "explain":
            return _explain(args, out, err)
        if args.command == "pyramid":
            return _pyramid(args, out, err)
        return _info(out)
    except BrokenPipeError:         # e.g. `dmlops info | head -1`: stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1


if __name__ == "__main__":      # pragma: no cover
    sys.exit(main())
