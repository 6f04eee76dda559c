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

How they are optimised, too. Numba optimises each compiled function's module once, then
links it into each caller's module (as a weak definition) and optimises that again. A
kernel loaded from the cache runs those twice-optimised copies; but in the process that
compiles it, the JIT resolves the weak copies to the callees compiled first, optimised once.
Some loops vectorise only on the second pass, so a kernel compiled in-process ran up to 3x
slower than the same kernel loaded from the cache, for the whole life of the process (max
pooling [32, 64, 112, 112] on one thread: 36 ms against 11). So while one of this package's
functions compiles, Numba's first ("cheap") pass runs at -O3 with loop vectorisation, as
``NUMBA_OPT=max`` would make it for every function: optimised twice from the start, callees
run as fast in-process as from the cache (11.5 ms). It costs about 12 % more compile time.
This too sets private attributes of Numba's code generator (``_loopvect``, ``_opt_level``),
only for the time one of this package's functions compiles (Numba's compile event, under its
compiler lock); ``OPTIMISED`` says whether this Numba has them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from numba.core import caching, event
from numba.core.registry import cpu_target

PACKAGE_DIR = str(Path(__file__).resolve().parent)


def _in_package(py_file) -> bool:
    """Whether a function defined in ``py_file`` is one of this package's."""
    return os.path.abspath(py_file).startswith(PACKAGE_DIR)


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
        if not _in_package(py_file):
            return None
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None          # no writable cache: Numba's other locators decide
        return locator


if DmlopsCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, DmlopsCacheLocator)


class _OptimiseTwice(event.Listener):
    """Numba's first module pass at -O3 with loop vectorisation while one of this package's
    functions compiles (see the module's docstring); the settings before it are restored
    when it ends. Compile events nest (a kernel compiles its callees), always under Numba's
    compiler lock, so one stack of saved settings serves."""

    def __init__(self, codegen):
        self._codegen = codegen
        self._saved = []

    def on_start(self, ev):
        cg = self._codegen
        self._saved.append((cg._loopvect, cg._opt_level))
        code = getattr(getattr(ev.data.get("dispatcher"), "py_func", None), "__code__", None)
        if code is not None and _in_package(code.co_filename):
            cg._loopvect, cg._opt_level = True, 3

    def on_end(self, ev):
        if self._saved:
            self._codegen._loopvect, self._codegen._opt_level = self._saved.pop()


_codegen = cpu_target.target_context.codegen()
OPTIMISED = hasattr(_codegen, "_loopvect") and hasattr(_codegen, "_opt_level")
if OPTIMISED and not any(isinstance(x, _OptimiseTwice)
                         for x in event._registered["numba:compile"]):
    event.register("numba:compile", _OptimiseTwice(_codegen))
