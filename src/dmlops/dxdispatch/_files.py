"""Writing a model's results all or nothing (files beside their targets, then moved into
place), text in any output's encoding, and a lazy computation's failure as a ModelError."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DmlError
from ._json import ModelError, json_key


@contextlib.contextmanager
def computing(name: str, path: str) -> Iterator[Any]:
    """A lazy computation's failure (a bad index met by a block, a store that cannot be
    read, the scheduler gone) as a ModelError at the command that asked for it."""
    from .._zarrio import ZarrError
    try:
        yield
    except ModelError:
        raise
    except DmlError as e:
        raise ModelError(path, f"computing {name!r}: {e}") from None
    except ZarrError as e:
        raise ModelError(path, str(e)) from None
    except Exception as e:      # (zarr's, Dask's and distributed's own errors among them:
        # `dmlops run` exits with 0 or 2, never a traceback)
        raise ModelError(path, f"computing {name!r}: {type(e).__name__}: {e}") from None


def write_text(out: Any, text: str) -> None:
    """``text`` to ``out``, characters its encoding lacks (a resource named with a lone
    surrogate, say) written as escapes rather than failing the model."""
    try:
        out.write(text)
    except UnicodeEncodeError:
        enc = getattr(out, "encoding", None) or "utf-8"
        out.write(text.encode(enc, "backslashreplace").decode(enc))


def write_files(pending: dict[Any, Any], session: Any, options: dict[str, Any]) -> list[Any]:
    """Write every file to a temporary name beside it (zarr arrays too, in one pass over
    their Dask graphs), then move them all into place: a failure leaves no new file, store
    or folder behind (the files already moved into place and the folders made are removed
    again, a store set aside is put back, and the message says so)."""
    writes = _Writes(options)
    failure, done = None, False
    try:
        failure = (writes.stage(pending, session) or writes.write_stores(session)
                   or writes.place_files() or writes.commit_stores())
        done = failure is None
    finally:
        if not done:
            undone = writes.abandon()
            if failure is not None:
                raise ModelError(json_key(failure[0], "targetPath"), failure[1] + undone)
    return list(pending)


# (the command's path, what failed), or None
_Failure = tuple[Any, str] | None


class _Writes:
    """One model's writes, made beside their targets, moved into place together and undone
    together: the files staged under temporary names, the zarr targets (``Staged``), the
    targets already moved into place and the folders made."""

    def __init__(self, options: dict[str, Any]) -> None:
        from .._zarrio import Staged
        self.stores = Staged(options)
        self.staged: list[str] = []
        self.files: list[tuple[Any, Any]] = []
        self.moved: list[Any] = []
        self.made: list[Any] = []
        self.first_zarr: Any = None   # (a failure of the zarr targets together is reported
        #                               at the first of them)

    def stage(self, pending: dict[Any, Any], session: Any) -> _Failure:
        """Each file computed and written under a temporary name beside its target; each
        zarr target added to the stores (written together by ``write_stores``)."""
        for target, (values, path, zarr) in pending.items():
            if zarr is not None:
                self.first_zarr = self.first_zarr or path
                try:
                    if isinstance(zarr[0], Path):
                        self.made += _make_folders(zarr[0].parent)
                except OSError as e:
                    return (path, f"cannot make the folder of {str(target)!r}: "
                                  f"{e.strerror or e}")
                self.stores.add(zarr[0], zarr[1], values)
                continue
            self.files.append((target, path))
            try:
                with computing(str(target), json_key(path, "targetPath")):
                    values = session.compute(values)
                self.made += _make_folders(target.parent)
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                           dir=target.parent)
                with os.fdopen(fd, "wb") as f:
                    self.staged.append(tmp)
                    if target.suffix.lower() == ".npy":
                        np.save(f, values, allow_pickle=False)
                    else:
                        f.write(values.tobytes())
            except OSError as e:
                return (path, f"cannot write {str(target)!r}: {e.strerror or e}")
        return None

    def write_stores(self, session: Any) -> _Failure:
        from .._zarrio import ZarrError
        try:
            # (a failure names every target written with it: a lost worker or task stops
            # them all)
            with computing(", ".join(self.stores.names()), ""):
                self.stores.write(session)
        except (ModelError, ZarrError) as e:
            return (self.first_zarr, e.message if isinstance(e, ModelError) else str(e))
        except OSError as e:
            return (self.first_zarr, f"cannot write the zarr targets: {e.strerror or e}")
        return None

    def place_files(self) -> _Failure:
        """The staged files moved onto their targets (mkstemp makes its file private; a
        written result gets the usual mode)."""
        umask = os.umask(0)
        os.umask(umask)
        for tmp, (target, path) in zip(self.staged, self.files):
            try:
                os.chmod(tmp, 0o666 & ~umask)
                os.replace(tmp, target)
            except OSError as e:
                return (path, f"cannot move {str(target)!r} into place: {e.strerror or e}")
            self.moved.append(target)
        return None

    def commit_stores(self) -> _Failure:
        try:
            self.stores.commit()
        except OSError as e:
            return (self.first_zarr, f"cannot move a zarr target into place: "
                                     f"{e.strerror or e}")
        return None

    def abandon(self) -> str:
        """Removes what was written; returns what the message says of it."""
        for tmp in self.staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.stores.discard()
        return _undo(self.moved, self.made)


def _make_folders(folder: Path) -> list[Any]:
    """Make ``folder`` and any missing parents; returns those it made, deepest last."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for f in reversed(missing):
        f.mkdir()
    return list(reversed(missing))


def _undo(moved: list[Any], made: list[Any]) -> str:
    """Removes the files already moved into place and the folders made (deepest first);
    returns what the message says of it."""
    for target in moved:
        try:
            os.unlink(target)
        except OSError:
            pass
    for folder in sorted(made, key=lambda f: len(f.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass
    if not moved and not made:
        return ""
    return (f"; the {len(moved)} file(s) already written and {len(made)} folder(s) made "
            f"were removed again")
