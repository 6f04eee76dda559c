"""The CPU level the kernels run at: one compiled module per level (``dmlops._kernels_LEVEL``,
built from the same C++ sources with that level's instructions), the best one this CPU has,
or the one ``DMLOPS_CPU_LEVEL`` (read at the first call) or :func:`set_level` names.

| level | instructions | built for |
| --- | --- | --- |
| ``baseline`` | the architecture's own (SSE2 on x86-64, NEON on aarch64) | every CPU |
| ``avx2`` | AVX2, FMA, F16C, BMI1/2, LZCNT, POPCNT | x86-64 |
| ``avx512`` | the above and AVX-512 F, BW, VL, DQ, CD | x86-64 |
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, cast

from ...errors import UnsupportedError

if TYPE_CHECKING:
    from types import ModuleType

ORDER = ("baseline", "avx2", "avx512")
NEEDS = {
    "baseline": (),
    "avx2": ("avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "popcnt"),
    "avx512": ("avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "popcnt", "avx512f", "avx512bw",
               "avx512vl", "avx512dq", "avx512cd"),
}
_modules: dict[str, ModuleType | None] = {}
_current: ModuleType | None = None


def _module(level: str) -> ModuleType | None:
    if level not in _modules:
        try:
            _modules[level] = importlib.import_module(f"dmlops._kernels_{level}")
        except ImportError:
            _modules[level] = None
    return _modules[level]


def baseline() -> ModuleType:
    """The baseline module (every build has it; it answers which features the CPU has)."""
    module = _module("baseline")
    if module is None:
        raise ImportError("dmlops was installed without its compiled kernels "
                          "(dmlops._kernels_baseline is missing); reinstall it with pip")
    return module


def supported() -> tuple[str, ...]:
    """The levels this CPU and this build both have, lowest first."""
    features = set(baseline().cpu_features())
    return tuple(level for level in ORDER
                 if all(f in features for f in NEEDS[level]) and _module(level) is not None)


def _check(level: object, origin: str) -> str:
    if not isinstance(level, str) or level.lower() not in ORDER:
        raise UnsupportedError(f"{origin} = {level!r} is not a CPU level; known: "
                               f"{', '.join(ORDER)}")
    level = level.lower()
    if level not in supported():
        features = set(baseline().cpu_features())
        lacking = [f for f in NEEDS[level] if f not in features]
        why = (f"this CPU lacks {', '.join(lacking)}" if lacking
               else "this build of dmlops has no kernels for it")
        raise UnsupportedError(f"{origin} = {level!r} cannot run here ({why}); "
                               f"this CPU runs: {', '.join(supported())}")
    return level


def set_level(level: str | None) -> None:
    """Run the kernels at ``level`` (``None``: back to ``DMLOPS_CPU_LEVEL`` or the best)."""
    global _current
    _current = None if level is None else _module(_check(level, "set_level(level)"))


def kernels() -> ModuleType:
    """The compiled module of the level in use."""
    global _current
    if _current is None:
        env = os.environ.get("DMLOPS_CPU_LEVEL")
        level = _check(env, "DMLOPS_CPU_LEVEL") if env else supported()[-1]
        _current = _module(level)
    return cast("ModuleType", _current)      # (_check admits built levels alone)


def level() -> str:
    """The name of the level in use."""
    name: str = kernels().LEVEL
    return name


def instructions() -> str:
    """The vector instructions the level in use was compiled for: ``"SSE2"``, ``"AVX2"`` or
    ``"AVX-512"`` on x86-64, ``"NEON"`` on aarch64."""
    name: str = kernels().INSTRUCTIONS
    return name
