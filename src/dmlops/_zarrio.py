"""zarr stores in ``dmlops run`` (SPEC 6): a resource read from a zarr array, a ``writeFile``
target written as one, both through Dask so that a model on data larger than memory runs
block by block.

A path names a zarr array by its first component ending in ``.zarr`` (the store) and what
follows it (the array's path inside the store's group): ``volume.zarr``,
``group.zarr/raw/volume``. Targets are written under temporary names beside them and moved
into place once every target is written (``Staged``); an existing array at a target is kept
aside until then, so a failing model leaves the stores as they were. Dask chunks are cut to
the zarr chunks before writing (each task writes whole zarr chunks of its own: misaligned
writes would corrupt them, dask/dask#12583).

zarr, Dask and ``distributed`` are imported only here, only for models that name zarr
stores (the ``dask`` extra).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

EXTRA = 'the dask extra (pip install "dmlops[dask]")'
CONNECT_TIMEOUT = "10s"     # to reach a --scheduler


class ZarrError(Exception):
    """What went wrong with a store, for the model's error at the command's location."""


def split(text: str) -> Any:
    """``(store, component)`` of a path naming a zarr array (``component`` "" for the store
    itself), or None where no component ends in ``.zarr``. A URL that fsspec reads
    (``s3://bucket/volume.zarr/raw``) keeps its store as a string (a ``file://`` URL is the
    local path it names), a path gives a Path."""
    scheme, sep, rest = text.partition("://")
    if sep and scheme.lower() == "file":
        text, sep = rest, ""
    parts: Sequence[str] = rest.split("/") if sep else Path(text).parts
    for i, part in enumerate(parts):
        if part.lower().endswith(".zarr"):
            store = f"{scheme}://{'/'.join(parts[:i + 1])}" if sep else Path(*parts[:i + 1])
            return store, "/".join(parts[i + 1:])
    return None


def is_url(store: Any) -> bool:
    """Whether a store (``split``'s first value) is a URL: an object store, which has no
    rename."""
    return isinstance(store, str)


def _imports() -> None:
    try:
        import dask.array  # noqa: F401
        import zarr  # noqa: F401
    except ImportError as e:
        raise ZarrError(f"zarr stores need {EXTRA}: {e}") from None


def open_source(store: Path | str, component: str, options: dict[str, Any] | None = None
                ) -> Any:
    """The zarr array ``component`` of ``store`` (an absolute path, or a URL read with the
    fsspec ``options``) as a Dask array of the zarr's chunks, each block read by
    :class:`_Source` where its task runs."""
    _imports()
    import dask.array as da
    import zarr

    name = _name(store, component)
    try:
        node = zarr.open(store=str(store), path=component or None, mode="r",
                         **_options(store, options))
    except Exception as e:      # (zarr's own errors differ between versions and formats)
        raise ZarrError(f"cannot open {name!r} as a zarr array: "
                        f"{type(e).__name__}: {e}") from None
    if not isinstance(node, zarr.Array):
        raise ZarrError(f"{name!r} is a zarr group; name an array inside it ({name}/ARRAY)")
    source = _Source(str(store), component, node.shape, node.dtype, node.chunks,
                     _options(store, options))
    return da.from_array(source, chunks=node.chunks, asarray=False, lock=False, fancy=False,
                         meta=np.empty((0,) * node.ndim, node.dtype))


def source_axes(store: Path | str, component: str, options: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """What the source says of its axes: from the OME-Zarr image it is a level of (its
    group's ``multiscales``: the axes' names, types and units, the level's ``scale`` and
    ``translation``), else from the array's own dimension names (zarr v3
    ``dimension_names``, xarray's ``_ARRAY_DIMENSIONS``); ``{}`` where it says nothing."""
    import zarr

    parent, _, level = component.rpartition("/")
    try:
        attrs = dict(zarr.open_group(store=str(store), path=parent or None, mode="r",
                                     **_options(store, options)).attrs)
    except Exception:       # (no group above the array: a bare array store)
        attrs = {}
    for image in (attrs.get("ome") or attrs).get("multiscales") or []:
        found = [d for d in image.get("datasets") or [] if d.get("path") == level]
        if found and image.get("axes"):
            out: dict[str, Any] = {"axes": [dict(a) if isinstance(a, dict) else {"name": a}
                                            for a in image["axes"]]}
            for t in found[0].get("coordinateTransformations") or []:
                if t.get("type") in ("scale", "translation") and t.get(t["type"]):
                    out[t["type"]] = [float(v) for v in t[t["type"]]]
            return out
    try:
        node = zarr.open(store=str(store), path=component or None, mode="r",
                         **_options(store, options))
        names = getattr(node.metadata, "dimension_names", None) or \
            node.attrs.get("_ARRAY_DIMENSIONS")
    except Exception:       # (open_source names what is wrong with the array itself)
        names = None
    return {"axes": [{"name": str(n)} for n in names]} if names and all(names) else {}


class _Source:
    """A zarr array that each task opens anew by its absolute path: a worker that cannot
    reach the store (another machine, another file system) fails its task instead of reading
    the fill value for every chunk it does not find, which is what an array opened on the
    client and pickled to the worker does. The worker's array must also have the client's
    shape, data type and chunks."""

    def __init__(self, store: str, component: str, shape: tuple[int, ...], dtype: Any,
                 chunks: tuple[int, ...], zarr_options: dict[str, Any]) -> None:
        # zarr_options: zarr's keywords for the store (``_options``)
        self.store, self.component, self.zarr_options = store, component, zarr_options
        self.shape, self.dtype, self.chunks = tuple(shape), np.dtype(dtype), tuple(chunks)
        self.ndim = len(self.shape)
        self._array: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_array": None}

    def __dask_tokenize__(self) -> Any:
        return ("dmlops-zarr-source", self.store, self.component, self.shape, self.dtype.str,
                self.chunks)

    def _open(self) -> Any:
        if self._array is None:
            import zarr
            name = _name(self.store, self.component)
            try:
                array = zarr.open_array(store=self.store, path=self.component or None, mode="r",
                                        **self.zarr_options)
            except Exception as e:
                raise ZarrError(f"cannot read the zarr array {name!r} where the task runs "
                                f"({_where()}): {type(e).__name__}: {e}") from None
            seen = (tuple(array.shape), np.dtype(array.dtype), tuple(array.chunks))
            if seen != (self.shape, self.dtype, self.chunks):
                raise ZarrError(f"the zarr array {name!r} where the task runs ({_where()}) has "
                                f"shape, dtype and chunks {seen}, not the {self.shape}, "
                                f"{self.dtype} and {self.chunks} the model was checked with")
            self._array = array
        return self._array

    def __getitem__(self, key: Any) -> Any:
        return self._open()[key]


def _where() -> str:
    import socket
    return f"host {socket.gethostname()}, process {os.getpid()}, folder {os.getcwd()}"


def _name(store: Path | str, component: str) -> str:
    return str(store) + ("/" + component if component else "")


def _options(store: Path | str, options: dict[str, Any] | None) -> dict[str, Any]:
    """zarr's keyword for a store's fsspec options (a URL's only: zarr refuses them for a
    local path)."""
    return {"storage_options": dict(options)} if is_url(store) and options else {}


class Staged:
    """zarr targets written under temporary names, then moved into place together
    (``commit``), or removed (``discard``). ``add`` records a target's array (Dask or NumPy);
    ``write`` computes and stores all of them in one pass (shared work done once). On an
    object store (a URL), which has no rename, a target is written at its place without its
    metadata, which ``commit`` writes once every chunk of every target is there: until then
    no reader can open it, and ``discard`` removes what was written."""

    def __init__(self, options: dict[str, Any] | None = None, zarr_format: int = 3,
                 root_attributes: dict[str, Any] | None = None) -> None:
        self.options = dict(options or {})      # fsspec's, for URLs
        # the format of the arrays and groups made, and the attributes of a new store's root
        # group (an OME-Zarr pyramid's multiscales), written with its metadata
        self.zarr_format = zarr_format
        self.root_attributes = dict(root_attributes or {})
        self.items: list[tuple[Path | str, str, Any]] = []     # (store, component, array)
        # object-store targets (URL, component, array without metadata) and the prefixes
        # (filesystem, path) to remove on failure
        self.remote: list[tuple[str, str, Any, Any, str]] = []
        self.written: list[tuple[Any, str]] = []
        # folders to remove on failure (whole stores or arrays)
        self.temps: list[Path] = []
        self.places: list[tuple[Path, Path]] = []       # (temporary folder, final folder)
        self.kept: list[tuple[Path, Path]] = []         # (folder set aside, where it was)
        self.made: list[Path] = []      # folders made for groups that were missing
        # store -> its temporary folder, for stores made anew
        self.new: dict[Path, Path] = {}

    def add(self, store: Path | str, component: str, array: Any) -> None:
        self.items.append((store, component, array))

    def names(self) -> list[str]:
        """The targets, as their paths or URLs."""
        return [_name(store, component) for store, component, _ in self.items]

    def write(self, session: Session) -> None:
        if not self.items:
            return
        _imports()
        import dask.array as da
        import zarr

        sources, targets = [], []
        for store, component, array in self.items:
            lazy = array if hasattr(array, "dask") else da.from_array(array, chunks="auto")
            # regular chunks (the largest per dimension): the zarr chunks, each written whole
            # by one task
            lazy = lazy.rechunk(tuple(max(c) if c else 1 for c in lazy.chunks))
            # every chunk written, those of fill values too: the check after the writes
            # counts them
            spec = dict(shape=lazy.shape, chunks=lazy.chunksize, dtype=lazy.dtype,
                        fill_value=None, config={"write_empty_chunks": True})
            if is_url(store):
                target = self._on_object_store(str(store), component, spec)
            elif not component:
                target = zarr.create_array(store=str(self._new_store(Path(store))), **spec,
                                           zarr_format=self.zarr_format)
            else:
                target = self._in_group(Path(store), component, spec)
            sources.append(lazy)
            targets.append(target)
        session.store(sources, targets)
        for _, _, target, fs, _ in self.remote:
            # (listings fsspec kept from before the writes would count no chunk)
            fs.invalidate_cache()
            getattr(target.store, "fs", fs).invalidate_cache()
        for name, target in zip(self.names(), targets):
            _check_complete(target, name)

    def _on_object_store(self, store: str, component: str, spec: dict[str, Any]) -> Any:
        """An array at ``component`` of the store at URL ``store`` whose metadata is not
        written (the metadata made in memory); nothing may be there yet: without rename an
        array in place could not be kept until the new one is complete."""
        import fsspec
        import zarr
        from zarr.core.array import Array, AsyncArray
        from zarr.storage import FsspecStore, MemoryStore, StorePath

        name = _name(store, component)
        try:
            fs, root = fsspec.core.url_to_fs(store, **self.options)
            place = root + ("/" + component if component else "")
            there = fs.exists(place)
        except Exception as e:      # (fsspec's and the store's own errors)
            raise ZarrError(f"cannot reach {name!r}: {type(e).__name__}: {e}") from None
        if there:
            raise ZarrError(f"{name!r} exists; dmlops does not replace an array on an object "
                            f"store (it has no rename, so a failing model would lose it): "
                            f"remove it first, or name another target")
        memory = MemoryStore()
        if component:
            node = zarr.open_group(store=memory, mode="a", zarr_format=self.zarr_format
                                   ).create_array(component, **spec)
        else:
            node = zarr.create_array(store=memory, **spec, zarr_format=self.zarr_format)
        remote = FsspecStore.from_url(store, storage_options=self.options or None)
        target = Array(AsyncArray(metadata=node.metadata, store_path=StorePath(remote, component),
                                  config=spec["config"]))
        self.written.append((fs, place))
        self.remote.append((store, component, target, fs, root))
        return target

    def _commit_remote(self) -> None:
        """The object-store targets' metadata: every array's, then the groups on the way
        that are missing, deepest first (a new store's root, with its attributes, last)."""
        if not self.remote:
            return
        import zarr
        from zarr.storage import FsspecStore

        groups: dict[tuple[str, str], Any] = {}
        for store, component, target, fs, root in self.remote:
            target.update_attributes({})       # (writes the array's whole metadata)
            if not component:
                continue        # (the array is the store)
            parts = component.split("/")[:-1]
            for i in range(len(parts) + 1):
                groups.setdefault((store, "/".join(parts[:i])), (fs, root))
        for (store, group), (fs, root) in sorted(groups.items(),
                                                 key=lambda g: (g[0][1] == "",
                                                                -g[0][1].count("/"))):
            place = root + ("/" + group if group else "")
            meta = "/zarr.json" if self.zarr_format == 3 else "/.zgroup"
            if fs.exists(place + meta):
                continue
            self.written.append((fs, place))    # (made here: removed on failure)
            remote = FsspecStore.from_url(store, storage_options=self.options or None)
            made = zarr.open_group(store=remote, path=group, mode="a",
                                   zarr_format=self.zarr_format)
            if not group and self.root_attributes:
                made.attrs.update(self.root_attributes)

    def _new_store(self, store: Path) -> Path:
        """The temporary folder of a store made anew (one for all its targets)."""
        if store not in self.new:
            tmp = Path(tempfile.mkdtemp(prefix=f".{store.name}.", suffix=".tmp",
                                        dir=store.parent))
            self.temps.append(tmp)
            self.places.append((tmp, store))
            self.new[store] = tmp
        return self.new[store]

    def _in_group(self, store: Path, component: str, spec: dict[str, Any]) -> Any:
        """An array at ``component`` of ``store``: in a store made anew, or, in an existing
        group, under a temporary name beside its place (the groups on the way made where
        missing)."""
        import zarr

        *groups, leaf = component.split("/")
        if store in self.new or not store.exists():
            root = zarr.open_group(store=str(self._new_store(store)), mode="a",
                                   zarr_format=self.zarr_format)
            if self.root_attributes and not root.attrs:
                root.attrs.update(self.root_attributes)
            return root.create_array(component, **spec)
        try:
            group = zarr.open_group(store=str(store), mode="r+")
        except Exception as e:
            raise ZarrError(f"{str(store)!r} exists and is not a zarr group: "
                            f"{type(e).__name__}: {e}") from None
        folder = store
        for name in groups:
            folder = folder / name
            if not folder.exists():
                self.made.append(folder)
            group = group.require_group(name)
        tmp_name = f".{leaf}.{os.getpid()}.{len(self.temps)}.tmp"
        self.temps.append(folder / tmp_name)
        self.places.append((folder / tmp_name, folder / leaf))
        return group.create_array(tmp_name, **spec)

    def commit(self) -> None:
        """The object-store targets' metadata, then every staged folder into its place (an
        existing one set aside, then removed)."""
        self._commit_remote()
        for tmp, final in self.places:
            if final.exists():
                aside = final.with_name(f".{final.name}.{os.getpid()}.old")
                os.replace(final, aside)
                self.kept.append((aside, final))
            os.replace(tmp, final)
            self.temps.remove(tmp)
            self.temps.append(final)        # (undone by discard until the end)
        for aside, _ in self.kept:
            _remove(aside)
        self.kept, self.temps, self.written, self.remote = [], [], [], []

    def discard(self) -> None:
        """Remove what was staged or moved, put back what was set aside."""
        for folder in self.temps:
            _remove(folder)
        for aside, final in self.kept:
            _remove(final)
            os.replace(aside, final)
        for folder in sorted(self.made, key=lambda f: len(f.parts), reverse=True):
            shutil.rmtree(folder, ignore_errors=True)
        for fs, place in self.written:
            try:
                if fs.exists(place):
                    fs.rm(place, recursive=True)
            except Exception:       # (a store gone: nothing more can be removed there)
                pass
        self.temps, self.kept, self.made, self.new = [], [], [], {}
        self.written, self.remote = [], []


def _check_complete(target: Any, name: str) -> None:
    """Every chunk of a written target present, as this process sees the store: a worker
    that wrote where the client cannot see (its own disk, another working directory) would
    otherwise leave a target of fill values behind a run that reports success."""
    have, need = target.nchunks_initialized, target.nchunks     # (listed anew)
    if have != need:
        raise ZarrError(f"the zarr target {name!r} is incomplete after the writes: {have} of "
                        f"its {need} chunks are in the store (a worker that cannot reach it "
                        f"wrote elsewhere, or a write was lost)")


def _remove(path: Path) -> None:
    """A folder with what it holds, or a file (a target's old occupant may be either)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


class Session:
    """Where a model's Dask work runs: this process's threads, or the dask.distributed
    scheduler at ``scheduler`` (connected on first use); ``progress``: a bar on stderr."""

    def __init__(self, scheduler: Any = None, progress: Any = False) -> None:
        self.scheduler = scheduler
        self.progress = progress
        self._client: Any = None      # (a distributed.Client)

    def _run(self, collections: list[Any]) -> list[Any]:
        """``collections`` computed (arrays' values, or a store's writes). A failure returns
        only once no task of theirs runs any more: Dask reports the first failure while other
        tasks still write, and a write after the caller's cleanup would leave chunks behind.
        The graphs are not optimised: Dask's blockwise fusion would fold a source's chunks
        into one consumer (a pyramid's level 0, stored) while dmlops's blocks (level 1, by
        the source's own keys) ask for them again, reading or making every source chunk
        twice."""
        if self.scheduler is None:
            return self._run_here(collections)
        if self._client is None:
            self._client = connect(self.scheduler)
        futures = self._client.compute(collections, optimize_graph=False)
        try:
            if self.progress:
                from distributed import progress
                with contextlib.redirect_stdout(sys.stderr):   # (its bar prints to stdout)
                    progress(futures)
            results: list[Any] = self._client.gather(futures)
        except BaseException:
            self._client.cancel(futures)
            _drain(self._client, _tokens(collections))
            raise
        return results

    def _run_here(self, collections: list[Any]) -> list[Any]:
        import dask
        from concurrent.futures import ThreadPoolExecutor
        from dask.system import CPU_COUNT
        pool = ThreadPoolExecutor(dask.config.get("num_workers", None) or CPU_COUNT)
        try:
            with contextlib.ExitStack() as stack:
                if self.progress:
                    from dask.diagnostics import ProgressBar
                    stack.enter_context(ProgressBar(out=sys.stderr))
                return list(dask.compute(*collections, scheduler="threads", pool=pool,
                                         optimize_graph=False))
        finally:
            # (the tasks queued are dropped; those running end first)
            pool.shutdown(wait=True, cancel_futures=True)

    def compute(self, array: Any) -> np.ndarray:
        """An array's values in memory (NumPy arrays pass through)."""
        return np.asarray(self._run([array])[0] if hasattr(array, "dask") else array)

    def store(self, sources: Any, targets: Any) -> None:
        import dask.array as da
        writes = da.store(sources, targets, lock=False, compute=False)
        self._run(list(writes) if isinstance(writes, (tuple, list)) else [writes])

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


DRAIN_TIMEOUT = 120.0      # seconds a failed run waits for its running tasks on a cluster


def _tokens(collections: list[Any]) -> set[str]:
    """The tokens that end the task names of ``collections`` (a fused task's name ends with
    its last layer's)."""
    names: set[str] = set()
    for c in collections:
        graph = c.__dask_graph__()
        names.update(_key_name(k) for k in getattr(graph, "layers", graph))
    return {n.rsplit("-", 1)[-1] for n in names}


def _key_name(key: Any) -> str:
    return str(key[0] if isinstance(key, tuple) else key)


def _running(tokens: set[str], dask_worker: Any = None) -> int:
    """How many tasks named by ``tokens`` run on this worker; a cancelled task runs to its
    end (a thread cannot be stopped)."""
    busy = ("executing", "long-running")
    n = 0
    for key, ts in dask_worker.state.tasks.items():
        if _key_name(key).rsplit("-", 1)[-1] in tokens and (
                ts.state in busy or ts.state in ("cancelled", "resumed") and ts.previous in busy):
            n += 1
    return n


def _drain(client: Any, tokens: set[str]) -> None:
    """Back once no worker runs a task named by ``tokens`` (or after ``DRAIN_TIMEOUT``, with
    a warning)."""
    import time
    deadline = time.monotonic() + DRAIN_TIMEOUT
    while True:
        try:
            counts = client.run(_running, tokens, on_error="ignore")
        except Exception:       # (a scheduler gone: nothing more to wait for)
            return
        left = sum(n for n in counts.values() if isinstance(n, int))
        if not left:
            return
        if time.monotonic() > deadline:
            print(f"dmlops: {left} task(s) still run on the workers {DRAIN_TIMEOUT:.0f} s "
                  "after the failure; what they write after the cleanup stays", file=sys.stderr)
            return
        time.sleep(0.05)


def connect(address: str) -> Any:
    """A ``distributed`` client of the scheduler at ``address``."""
    try:
        import distributed
    except ImportError as e:
        raise ZarrError(f"--scheduler needs {EXTRA}: {e}") from None
    try:
        return distributed.Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise ZarrError(f"cannot reach the dask.distributed scheduler at {address!r}: "
                        f"{e}") from None
