"""A validated and planned call of one of the functions: what running it needs besides the
arrays. The functions (``functional``), ``CompiledOperator.execute`` with Dask inputs
(``descs``) and the Dask graphs (``_dask``) share it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import NDArray

    from .errors import Names

__all__ = ["Call", "Operands", "Plan"]

# a plan's inputs besides x, by their role (``Plan``)
Operands = Mapping[str, Any]


class Plan(Protocol):
    """What every plan (pooling's ``PoolPlan``, ``UnpoolPlan``, ``RoiPlan``; padding's
    ``PadPlan``, ``PadGradPlan``) does: adding an operator means a plan with these, its
    kernel and its tests, and no caller changes. ``operands``: the inputs besides ``x`` by
    their role ("dy", "indices", "rois"; quantized pooling's "scale_in", "zp_in",
    "scale_out", "zp_out")."""

    # the backend's function that prepares a runner of the plan (``prepare_pooling``), or
    # None where the plan runs itself
    prepared_by: str | None

    def run(self, kernels: ModuleType, x: Any, outputs: Sequence[NDArray[Any]],
            operands: Operands | None = None, names: Names | None = None) -> None:
        """In memory: native-order arrays, ``outputs`` the views the kernel fills."""

    def lazy(self, x: Any, operands: Operands, call: Any, kernels: ModuleType,
             chunks: Any, names: Names) -> list[Any]:
        """On Dask arrays: the lazy outputs."""


@dataclass(frozen=True)
class Call:
    """A validated and planned call: everything running it needs besides the arrays."""

    names: Names
    plan: Any               # a Plan
    inputs: tuple[str, ...]     # the array operands' labels, for overlap messages
    # (label, shape, NumPy dtype) of each output
    outputs: Sequence[tuple[str, tuple[int, ...], np.dtype[Any]]]
    extra: dict[str, NDArray[Any]] | None = None   # quantization parameters (read-only arrays)
    # backend module -> its runner of this call, prepared at the first run of a call planned
    # for one layout of the arrays (``_calling.execute``)
    runners: dict[Any, Any] = field(default_factory=dict, init=False, compare=False,
                                    repr=False)
