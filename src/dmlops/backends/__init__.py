"""Backend registry and selection (SPEC 5).

A backend is a module exposing the kernels of ``KERNELS`` (see the reference backend for
their signatures). Choosing: the call's ``backend=``, then :func:`set_backend`,
then ``DMLOPS_BACKEND`` (read at call time), then the first available of ``PREFERENCE``.
An unknown or unavailable name is an error, never a silent fallback.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import UnsupportedError
from ..threads import environ

if TYPE_CHECKING:
    from types import ModuleType

# name -> module path, in order of preference
PREFERENCE = {
    "cpu": "dmlops.backends.cpu",
    "reference": "dmlops.backends.reference",
}
# named by the SPEC but not built yet: unavailable, not unknown
PLANNED = {"cuda": "the CUDA backend arrives with a later version of dmlops"}
KERNELS = ("average_pooling", "average_pooling_grad", "max_pooling", "max_pooling_grad",
           "quantized_average_pooling", "lp_pooling", "max_unpooling", "roi_pooling", "padding")
_loaded: dict[str, ModuleType] = {}
_failed: dict[str, str] = {}
_chosen: str | None = None


def _load(name: str) -> ModuleType | None:
    if name in _loaded:
        return _loaded[name]
    if name in _failed:
        return None
    try:
        module = importlib.import_module(PREFERENCE[name])
    except ImportError as e:  # a backend whose packages are missing is simply unavailable
        _failed[name] = str(e)
        return None
    missing = [k for k in KERNELS if not callable(getattr(module, k, None))]
    if missing:
        _failed[name] = f"it lacks the kernels {', '.join(missing)}"
        return None
    _loaded[name] = module
    return module


def backends() -> tuple[str, ...]:
    """Names of the available backends, preferred first.

    >>> "reference" in backends()
    True
    """
    return tuple(name for name in PREFERENCE if _load(name) is not None)


def _check(name: object, origin: str) -> str:
    if isinstance(name, str) and name.lower() in PLANNED:
        raise UnsupportedError(f"{origin} = {name!r} is not available here "
                               f"({PLANNED[name.lower()]}); available: {', '.join(backends())}")
    if not isinstance(name, str) or name.lower() not in PREFERENCE:
        raise UnsupportedError(f"{origin} = {name!r} is not a dmlops backend; known: "
                               f"{', '.join(PREFERENCE)}; available here: "
                               f"{', '.join(backends())}")
    name = name.lower()
    if _load(name) is None:
        raise UnsupportedError(f"{origin} = {name!r} is not available here "
                               f"({_failed.get(name, 'not installed')}); available: "
                               f"{', '.join(backends())}")
    return name


def set_backend(name: str | None) -> None:
    """Choose the process-wide backend (``None`` goes back to the environment / default)."""
    global _chosen
    _chosen = None if name is None else _check(name, "set_backend(name)")


def get_backend() -> str:
    """The name :func:`resolve` would pick for a call without ``backend=``."""
    return resolve(None)[0]


def resolve(name: str | None) -> tuple[str, ModuleType]:
    """``(name, module)`` of the backend a call uses."""
    if name is not None:
        # (a loaded backend's own name, the usual case, needs no checking)
        name = name if type(name) is str and name in _loaded else _check(name, "backend")
    elif _chosen is not None:
        name = _chosen
    elif environ("DMLOPS_BACKEND"):
        name = _check(environ("DMLOPS_BACKEND"), "DMLOPS_BACKEND")
    else:
        name = backends()[0]
    module = _loaded[name]
    ready = getattr(module, "ready", None)
    if ready is not None:       # a backend's own run-time settings, checked at every call
        ready()
    return name, module
