"""Where compiled kernels are cached on disk.

Numba caches next to the source by default, which fails in a read-only site-packages and
mixes with other users' caches. dmlops's kernels go to a user cache directory instead:
``$DMLOPS_CACHE_DIR``, else ``$XDG_CACHE_HOME/dmlops/numba``, else ``~/.cache/dmlops/numba``.
Numba writes each cache file to a temporary name and renames it into place, so several
processes may compile and load concurrently.

Numba checks a cached kernel against its own source file only, not against the helpers it
inlined from other files; so the cache path includes a digest of every source file of this
package, and a changed helper (a new dmlops release) never meets kernels compiled with the
old one.

This uses Numba's cache-locator hook (``numba.core.caching.CacheImpl._locator_classes``):
a deliberate reach into Numba's internals, limited to functions defined in this package, so
no other Numba user is affected.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from numba.core import caching

PACKAGE_DIR = str(Path(__file__).resolve().parent)


def sources_digest(folder=PACKAGE_DIR) -> str:
    """A digest of the Python sources in ``folder`` (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


SOURCES = sources_digest()


def cache_dir() -> str:
    explicit = os.environ.get("DMLOPS_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dmlops", "numba")


class DmlopsCacheLocator(caching.UserProvidedCacheLocator):
    """Caches the kernels of this package (and nothing else) in :func:`cache_dir`."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(cache_dir(), SOURCES,
                                        self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        if not os.path.abspath(py_file).startswith(PACKAGE_DIR):
            return None
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None          # no writable cache: Numba's other locators decide
        return locator


if DmlopsCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, DmlopsCacheLocator)
