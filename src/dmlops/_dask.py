"""Dask arrays through the functions (SPEC 6): the call is validated at once, exactly as in
memory (on a stand-in of the array's shape and type that holds no data), and returns a lazy
Dask array whose computed result is the in-memory result bit for bit, whatever the chunking.

Padding is planned per dimension from the output side: the start and end pads are gathers
(``take``) of the few input slices their sources lie in, or blocks of the value (constant
mode), set beside the input itself, so an output block reads only the input it copies; pads
wider than the input (several periods of reflection, symmetry or wrap) included. Pooling of
Dask arrays arrives with a later version.

Dask is imported only here, only when a Dask array is passed (the ``dask`` extra).
"""

from __future__ import annotations

import math

import numpy as np

from .backends.reference.padding import index_map
from .errors import Names
from .padding import PaddingMode


def is_dask(x) -> bool:
    """Whether ``x`` is a Dask array (without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask" and hasattr(x, "chunks")


def stand_in(x, names: Names, field: str = "x") -> np.ndarray:
    """A NumPy array of ``x``'s shape and type holding no data (every element the same one),
    for the in-memory validation and planning."""
    if any(isinstance(n, float) and math.isnan(n) for n in x.shape):
        raise names.invalid(f"{names(field)} has chunks of unknown size (shape {x.shape}); "
                            f"call {field}.compute_chunk_sizes() first")
    try:
        one = np.zeros(1, x.dtype)
    except TypeError:
        one = np.zeros(1, object)
    return np.lib.stride_tricks.as_strided(one, tuple(int(n) for n in x.shape),
                                           (0,) * x.ndim, writeable=False)


def output_chunks(chunks, out_shape, dtype, names: Names, default):
    """The output's chunking: ``chunks=`` (anything ``dask.array`` accepts), else
    ``default``; normalised against the output's shape."""
    from dask.array.core import normalize_chunks

    try:
        return normalize_chunks(default if chunks is None else chunks, tuple(out_shape),
                                dtype=np.dtype(dtype))
    except (ValueError, TypeError) as e:
        raise names.invalid(f"chunks = {chunks!r} cannot chunk an output of shape "
                            f"{tuple(out_shape)}: {e}") from None


def _pieces(n: int, step: int) -> tuple:
    """``n`` as pieces of ``step`` (the last shorter)."""
    return (step,) * (n // step) + ((n % step,) if n % step else ())


def padding(x, plan, chunks, names: Names):
    """The lazy padding of Dask array ``x`` by ``plan`` (a PadPlan), chunked by ``chunks``
    (None: the input's chunks, and the pads in pieces of its largest chunk along their
    dimension)."""
    import dask.array as da

    default = []
    for d, cs in enumerate(x.chunks):
        step = max(cs) if cs else 1
        default.append(_pieces(plan.start[d], step) + tuple(cs) + _pieces(plan.end[d], step))
    out_chunks = output_chunks(chunks, plan.out_sizes, x.dtype, names, tuple(default))
    y = x
    for d in range(x.ndim):
        a, b = plan.start[d], plan.end[d]
        if a == 0 and b == 0:
            continue
        n = x.shape[d]
        parts = []
        for count, first in ((a, 0), (b, a + n)):
            if count == 0:
                parts.append(None)
            elif plan.mode == PaddingMode.CONSTANT:
                shape = list(y.shape)
                shape[d] = count
                parts.append(da.full(tuple(shape), plan.value, dtype=x.dtype,
                                     chunks=_block_chunks(y.chunks, d, count)))
            else:
                # the sources of output coordinates [first, first + count) (index_map counts
                # output coordinates from the pad's start)
                idx, _ = index_map(int(plan.mode), n, a, first + count)
                parts.append(da.take(y, idx[first:], axis=d))
        y = da.concatenate([p for p in (parts[0], y, parts[1]) if p is not None], axis=d)
    return y.rechunk(out_chunks)


def _block_chunks(chunks, d, count):
    """The chunks of a block of ``count`` along ``d`` beside an array of ``chunks``."""
    out = list(chunks)
    out[d] = _pieces(count, max(chunks[d]) if chunks[d] else 1)
    return tuple(out)
