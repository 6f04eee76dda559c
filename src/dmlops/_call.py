"""A validated and planned call of one of the functions: what running it needs besides the
arrays. The functions (``functional``), ``CompiledOperator.execute`` with Dask inputs
(``descs``) and the Dask graphs (``_dask``) share it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .errors import Names

__all__ = ["Call"]


@dataclass(frozen=True)
class Call:
    """A validated and planned call: everything running it needs besides the arrays."""

    names: Names
    plan: Any               # a PoolPlan, UnpoolPlan, RoiPlan or PadPlan
    inputs: tuple[str, ...]     # the array operands' labels, for overlap messages
    # (label, shape, NumPy dtype) of each output
    outputs: Sequence[tuple[str, tuple[int, ...], np.dtype[Any]]]
    extra: dict[str, NDArray[Any]] | None = None   # quantization parameters (read-only arrays)
    # backend module -> its runner of this call, prepared at the first run of a call planned
    # for one layout of the arrays (``functional._execute``)
    runners: dict[Any, Any] = field(default_factory=dict, init=False, compare=False,
                                    repr=False)
