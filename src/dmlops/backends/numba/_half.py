"""FLOAT16 in registers: Numba has no float16 arithmetic on the CPU, so float16 tensors are
read as their 16-bit patterns (uint16) and converted one value at a time.

``half_to_float`` is exact. ``float_to_half`` rounds to nearest, ties to even, and keeps a
NaN's top payload bits as NumPy does (a NaN never becomes infinity), so results match NumPy's
``astype(float16)`` bit for bit; the tests check every one of the 65,536 patterns.
``double_to_half`` rounds float64 once, as NumPy does (Lp pooling computes in float64).

Where a value goes into arithmetic and only arithmetic results are stored (the window sums),
``widen`` and ``narrow`` use the CPU's own conversions when it has them (x86's F16C
``vcvtph2ps``/``vcvtps2ph``, ARMv8's ``fcvt``): 8 values an instruction, against about 1.4
cycles a value in software. They are exact and round to nearest even like the software
ones; the one difference, a signalling NaN coming back quiet, cannot reach an output there,
since every sum starts from +0.0 and an addition quiets a NaN anyway.
"""

from __future__ import annotations

import platform

import llvmlite.binding as ll
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import config
from numba.extending import intrinsic, overload


@njit(cache=True)
def half_to_float(h):
    # without branches (selects only), so that loops converting rows vectorise; every
    # step is cut back to 32 bits (Numba widens integer arithmetic to 64 bits, which would
    # halve the lanes)
    h = np.uint32(h)
    sign = np.uint32(np.uint32(h & np.uint32(0x8000)) << np.uint32(16))
    em = np.int32(h & np.uint32(0x7FFF))
    # zero / subnormal: mant * 2^-24, exact
    tiny = np.float32(np.float32(em) * np.float32(5.960464477539063e-08)).view(np.uint32)
    # normal: rebias the exponent by 127 - 15; inf / NaN: by 255 - 31, keeping the payload
    rebias = np.uint32(0x70000000) if em >= np.int32(0x7C00) else np.uint32(0x38000000)
    bits = np.uint32(np.uint32(np.uint32(em) << np.uint32(13)) + rebias)
    bits = tiny if em < np.int32(0x400) else bits
    return np.uint32(bits | sign).view(np.float32)


@njit(cache=True)
def float_to_half(f):
    # every case computed and one selected (no branches), so that loops storing rows
    # vectorise
    bits = np.float32(f).view(np.uint32)
    sign = np.uint32((bits >> np.uint32(16)) & np.uint32(0x8000))
    a = np.uint32(bits & np.uint32(0x7FFFFFFF))
    # normal: rebias the exponent (-112 << 23) and round to nearest even
    odd = (a >> np.uint32(13)) & np.uint32(1)
    normal = np.uint32(a + np.uint32(0xC8000FFF) + odd) >> np.uint32(13)
    # below 2^-14, a subnormal half: adding 0.5 aligns the mantissa so the FPU rounds
    tiny = np.uint32(np.float32(a.view(np.float32) + np.float32(0.5)).view(np.uint32)
                     - np.uint32(0x3F000000))
    # NaN: the top payload bits, kept nonzero (a NaN never becomes infinity)
    nan = np.uint32(np.uint32(0x7C00) | ((a & np.uint32(0x7FFFFF)) >> np.uint32(13)))
    nan = np.uint32(0x7C01) if nan == np.uint32(0x7C00) else nan
    h = tiny if a < np.uint32(0x38800000) else normal
    h = np.uint32(0x7C00) if a >= np.uint32(0x477FF000) else h      # rounds to >= 65520
    h = nan if a > np.uint32(0x7F800000) else h
    return np.uint16(sign | h)


@njit(cache=True)
def double_to_half(d):
    """float64 -> float16 bits, rounded once (as NumPy's ``astype``): round to odd into
    float32 (which keeps the sticky bit), then to nearest even into float16."""
    f = np.float32(d)
    if np.isfinite(f) and np.float64(f) != d:
        bits = f.view(np.uint32)
        if abs(np.float64(f)) > abs(d):            # truncate toward zero
            bits = np.uint32(bits - np.uint32(1))
        f = np.uint32(bits | np.uint32(1)).view(np.float32)
    elif not np.isfinite(f) and np.isfinite(d):    # beyond float32: inf in float16 as well
        f = np.float32(np.inf) if d > 0 else np.float32(-np.inf)
    return float_to_half(f)


def _cpu_converts_halves() -> bool:
    """Whether the CPU Numba compiles for converts float16 itself (``NUMBA_CPU_FEATURES``,
    when set, decides, as it does for Numba's code generation and cache)."""
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return True
    if machine not in ("x86_64", "amd64"):
        return False
    features = config.CPU_FEATURES
    if features is None:
        features = ll.get_host_cpu_features().flatten()
    return "+f16c" in features.split(",")


HARDWARE_HALF = _cpu_converts_halves()


@intrinsic
def hardware_half_to_float(typingctx, h):
    """float16 bits (uint16) -> float32 by the CPU's instruction (only where
    ``HARDWARE_HALF``; elsewhere LLVM would call a runtime function Numba does not link)."""
    if h != types.uint16:
        return None

    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.uint16), codegen


@intrinsic
def hardware_float_to_half(typingctx, f):
    """float32 -> float16 bits (uint16) by the CPU's instruction, rounded to nearest even."""
    if f != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


# --- element access, specialised per data type at compile time -------------------------
# A kernel receives its float16 data as uint16 and a ``tag`` array telling the two apart:
# an empty bool array means "these uint16 are float16 bit patterns".


def half_tag(tag) -> bool:
    """Whether the Numba type ``tag`` marks float16 data (decided while typing)."""
    return isinstance(tag, types.Array) and tag.dtype == types.boolean


HALF = np.empty(0, np.bool_)
PLAIN = np.empty(0, np.int8)


def tag_for(dtype) -> np.ndarray:
    return HALF if np.dtype(dtype) == np.float16 else PLAIN


def buffer_view(a: np.ndarray) -> np.ndarray:
    """float16 arrays as their uint16 bit patterns; every other type unchanged."""
    return a.view(np.uint16) if a.dtype == np.float16 else a


def load(v, tag):  # pragma: no cover - replaced by the overload inside kernels
    raise NotImplementedError


@overload(load)
def _load(v, tag):
    if half_tag(tag):
        return lambda v, tag: half_to_float(v)
    return lambda v, tag: v


def store(v, tag, out_dtype):  # pragma: no cover
    raise NotImplementedError


@overload(store)
def _store(v, tag, out_dtype):
    if half_tag(tag):
        return lambda v, tag, out_dtype: float_to_half(v)
    return lambda v, tag, out_dtype: out_dtype(v)


def widen(v, tag):  # pragma: no cover - replaced by the overload inside kernels
    raise NotImplementedError


@overload(widen)
def _widen(v, tag):
    """``load`` for a value that only arithmetic uses (see the module docstring)."""
    if half_tag(tag):
        if HARDWARE_HALF:
            return lambda v, tag: hardware_half_to_float(v)
        return lambda v, tag: half_to_float(v)
    return lambda v, tag: v


def narrow(v, tag, out_dtype):  # pragma: no cover - replaced by the overload inside kernels
    raise NotImplementedError


@overload(narrow)
def _narrow(v, tag, out_dtype):
    """``store`` for an arithmetic result (see the module docstring)."""
    if half_tag(tag):
        if HARDWARE_HALF:
            return lambda v, tag, out_dtype: hardware_float_to_half(np.float32(v))
        return lambda v, tag, out_dtype: float_to_half(v)
    return lambda v, tag, out_dtype: out_dtype(v)


def store_double(v, tag, out_dtype):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(store_double)
def _store_double(v, tag, out_dtype):
    if half_tag(tag):
        return lambda v, tag, out_dtype: double_to_half(v)
    return lambda v, tag, out_dtype: out_dtype(v)


def value_array(n, buf, tag):  # pragma: no cover
    raise NotImplementedError


@overload(value_array)
def _value_array(n, buf, tag):
    """Scratch for values as kernels compare them: float32 for float16 data, else the
    buffer's own type (so 64-bit integers compare exactly)."""
    if half_tag(tag):
        return lambda n, buf, tag: np.empty(n, np.float32)
    return lambda n, buf, tag: np.empty(n, buf.dtype)


def is_half(tag):  # pragma: no cover
    raise NotImplementedError


@overload(is_half)
def _is_half(tag):
    """Whether ``tag`` marks float16 data, as a compile-time constant."""
    half = half_tag(tag)
    return lambda tag: half
