"""The peer-equivalence registry of the benchmarks: each workload, and how dmlops and each peer
library compute it.

A :class:`Workload` is data: the operator, shape, dtype, window and padding of one row group
of the issue's list. An :class:`Impl` names one implementation (``dmlops cpu``,
``torch channels_last``, ``onnxruntime NCHW``, ...), the workload operators it can run, and a
*prepare* function ``prepare(workload, data) -> Bench``. Preparing does everything that must
not be timed (imports, layout conversions, building ONNX models, jit compilation is left to
the warm-up, preallocating outputs); the :class:`Bench` it returns holds

- ``run``: the zero-argument callable to time; it returns the implementation's own result;
- ``fetch``: turns that result into NumPy arrays in dmlops's form (NCHW-indexed values, flat
  indices), outside the timing, for the agreement check;
- ``note``: how the peer was called and where its semantics differ from dmlops's;
- ``check``: an optional comparison rule replacing the workload's (see :func:`compare`).

A peer that cannot run a workload raises :class:`Skip` (library missing, mode unsupported) or
lets the library's own error propagate; the runner reports either in the table.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import math
import os
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

import dmlops

# ------------------------------------------------------------------------------------------
# Workloads (the list, as data)

POOL_OPS = ("max", "max_indices", "avg", "max_grad", "qavg")


@dataclass(frozen=True)
class Workload:
    """One benchmark row group. Pooling windows are the same in every spatial dimension,
    padded by ``pad`` at both ends; padding workloads pad H and W by ``pads`` at both ends."""

    id: str
    title: str
    op: str                       # max | max_indices | avg | max_grad | qavg | pad
    shape: tuple
    dtype: str = "float32"
    window: int = 3
    strides: int = 2
    pad: int = 0
    include_padding: bool = False
    mode: str = ""                # padding mode (dmlops's name)
    pads: int = 0
    channels_last: bool = False   # dmlops reads and writes channels-last memory
    target: str = "peer"          # "peer": 0.8x the fastest peer; "bandwidth": 50 % of copy

    @property
    def group(self) -> int:
        return int("".join(c for c in self.id if c.isdigit()))

    @property
    def k(self) -> int:
        return len(self.shape) - 2

    @property
    def out_shape(self) -> tuple:
        if self.op == "pad":
            n, c, h, w = self.shape
            return (n, c, h + 2 * self.pads, w + 2 * self.pads)
        return tuple(dmlops.pooling_output_sizes(self.shape, self.window, strides=self.strides,
                                                 start_padding=self.pad, end_padding=self.pad))

    @property
    def nbytes(self) -> int:
        """Bytes read once + written once (indices counted as DirectML's UINT32)."""
        item = np.dtype(self.dtype).itemsize
        n_in, n_out = math.prod(self.shape), math.prod(self.out_shape)
        if self.op == "max_indices":
            return n_in * item + n_out * (item + 4)
        if self.op == "max_grad":      # x and dy read, dx written
            return 2 * n_in * item + n_out * item
        return (n_in + n_out) * item

    @property
    def default_check(self) -> dict:
        if self.op == "avg":
            return {"kind": "close"}
        if self.op == "max_grad":
            return {"kind": "close"}
        return {"kind": "exact"}


_R = (32, 64, 112, 112)            # the ResNet stem
_W1 = dict(window=3, strides=2, pad=1)

WORKLOADS = (
    Workload("1", "max pool 3x3 s2 p1", "max", _R, **_W1),
    Workload("1i", "max pool 3x3 s2 p1 + indices", "max_indices", _R, **_W1,
             target="bandwidth"),
    Workload("2a", "avg pool 3x3 s2 p1, IncludePadding false", "avg", _R, **_W1),
    Workload("2b", "avg pool 3x3 s2 p1, IncludePadding true", "avg", _R, **_W1,
             include_padding=True),
    Workload("3", "avg pool 3-D 2x2x2 s2", "avg", (4, 32, 32, 64, 64), window=2, strides=2),
    Workload("3m", "max pool 3-D 3x3x3 s2 p1", "max", (8, 32, 32, 56, 56), window=3, strides=2,
             pad=1),
    Workload("4", "max pool gradient 3x3 s2 p1", "max_grad", _R, **_W1, target="bandwidth"),
    *(Workload(f"5{m[0]}", f"pad 32 on H,W, {m}", "pad", (16, 3, 512, 512), mode=m, pads=32)
      for m in ("constant", "edge", "reflection", "symmetric", "wrap")),
    *(Workload(f"6{m[0]}", f"pad 40 on H,W (> size 16), {m}", "pad", (64, 64, 16, 16), mode=m,
               pads=40, target="bandwidth") for m in ("reflection", "symmetric")),
    Workload("7", "quantized avg pool u8 3x3 s1 p1", "qavg", (32, 64, 56, 56), "uint8",
             window=3, strides=1, pad=1),
    Workload("8a", "max pool int8 3x3 s2 p1", "max", _R, "int8", **_W1),
    Workload("8b", "max pool int32 3x3 s2 p1", "max", _R, "int32", **_W1),
    Workload("9a", "max pool float16 3x3 s2 p1", "max", _R, "float16", **_W1),
    Workload("9b", "avg pool float16 3x3 s2 p1, IncludePadding false", "avg", _R, "float16",
             **_W1),
    Workload("10", "channels-last max pool 3x3 s2 p1", "max", _R, **_W1, channels_last=True),
    Workload("10i", "channels-last max pool + indices", "max_indices", _R, **_W1,
             channels_last=True, target="bandwidth"),
    Workload("10a", "channels-last avg pool, IncludePadding false", "avg", _R, **_W1,
             channels_last=True),
    Workload("10b", "channels-last avg pool, IncludePadding true", "avg", _R, **_W1,
             include_padding=True, channels_last=True),
)

# workload 7's quantization parameters
Q_IN = (0.02, 128)
Q_OUT = (0.015, 120)


# ------------------------------------------------------------------------------------------
# Inputs

class Data:
    """Inputs, generated once per (kind, shape, dtype, layout) and shared across workloads.

    Floats are standard normal (negative values exercise "padding never wins"; ties in a
    3x3 window are rare enough that the lowest-index tie rule does not show); integers cover
    their type's whole range.
    """

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._cache: dict = {}

    def get(self, kind: str, shape: tuple, dtype: str, channels_last: bool = False):
        key = (kind, tuple(shape), dtype, channels_last)
        if key not in self._cache:
            if channels_last:
                a = self.get(kind, shape, dtype)
                self._cache[key] = to_channels_last(a)
            else:
                rng = np.random.default_rng([self.seed, zlib.crc32(kind.encode()), *shape])
                dt = np.dtype(dtype)
                if dt.kind == "f":
                    a = rng.standard_normal(shape, dtype=np.float32).astype(dt, copy=False)
                else:
                    info = np.iinfo(dt)
                    a = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
                self._cache[key] = a
        return self._cache[key]

    def keep_only(self, keys) -> None:
        for k in list(self._cache):
            if k not in keys:
                del self._cache[k]


def to_channels_last(a: np.ndarray) -> np.ndarray:
    """An NCHW-indexed view of channels-last (N, spatial..., C) memory."""
    k = a.ndim - 2
    perm = (0, *range(2, 2 + k), 1)
    inv = (0, k + 1, *range(1, k + 1))
    return np.ascontiguousarray(a.transpose(perm)).transpose(inv)


def empty_like_layout(shape, dtype, channels_last: bool) -> np.ndarray:
    if not channels_last:
        return np.empty(shape, dtype)
    k = len(shape) - 2
    return np.empty((shape[0], *shape[2:], shape[1]), dtype).transpose(0, k + 1,
                                                                        *range(1, k + 1))


def inputs_of(w: Workload, data: Data, channels_last: bool | None = None) -> dict:
    """The workload's input arrays (``x``; ``dy`` for the gradient)."""
    cl = w.channels_last if channels_last is None else channels_last
    d = {"x": data.get("x", w.shape, w.dtype, cl)}
    if w.op == "max_grad":
        d["dy"] = data.get("dy", w.out_shape, w.dtype, cl)
    return d


def data_keys(w: Workload) -> set:
    keys = {("x", w.shape, w.dtype, False), ("x", w.shape, w.dtype, w.channels_last)}
    if w.op == "max_grad":
        keys |= {("dy", w.out_shape, w.dtype, False), ("dy", w.out_shape, w.dtype,
                                                        w.channels_last)}
    return keys


# ------------------------------------------------------------------------------------------
# The registry

class Skip(Exception):
    """This implementation does not run this workload (the message says why)."""


@dataclass
class Bench:
    run: Callable[[], object]
    fetch: Callable[[object], tuple] = lambda r: (r,)
    note: str = ""
    check: dict | None = None


@dataclass(frozen=True)
class Impl:
    name: str
    library: str                  # key of LIBRARIES
    ops: frozenset
    prepare: Callable[[Workload, Data], Bench]
    is_dmlops: bool = False
    quick: bool = True            # False: skipped with --quick (slow baselines, and layouts
                                  # of a library that never were its fastest in a full run)
    compiles: bool = False        # its first call may compile (XLA): always warmed up
    dtypes: frozenset | None = None   # None: every dtype of the workloads
    modes: frozenset | None = None    # padding modes it offers (None: all)
    layouts: tuple = ("nchw", "nhwc")  # which workloads' dmlops layouts it is listed for

    def supports(self, w: Workload) -> bool:
        if w.op not in self.ops:
            return False
        if self.dtypes is not None and w.dtype not in self.dtypes:
            return False
        if w.op == "pad" and self.modes is not None and w.mode not in self.modes:
            return False
        return ("nhwc" if w.channels_last else "nchw") in self.layouts


# import names and the distributions whose versions the header prints
LIBRARIES = {
    "dmlops": ("dmlops", ["dmlops"]),
    "numpy": ("numpy", ["numpy"]),
    "torch": ("torch", ["torch"]),
    "onnxruntime": ("onnxruntime", ["onnxruntime", "onnx"]),
    "jax": ("jax", ["jax", "jaxlib"]),
    "tensorflow": ("tensorflow", ["tensorflow-cpu", "tensorflow"]),
}

THREADS = 2


def library_available(lib: str) -> bool:
    try:
        return importlib.util.find_spec(LIBRARIES[lib][0]) is not None
    except (ImportError, ValueError):
        return False


def _require(module: str):
    """Import ``module`` or skip the implementation that needs it."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise Skip(f"{module} not installed")
    return importlib.import_module(module)


# ------------------------------------------------------------------------------------------
# dmlops

def _dmlops(backend: str, level: str | None = None):
    """The dmlops call of a workload on ``backend``; for the cpu backend with ``level``
    (``baseline``, ``avx2``), that CPU level's module, chosen again at every call (the
    implementations take turns, and the others run at the best level)."""
    if backend != "cpu":
        return _dmlops_call(backend)
    call = _dmlops_call(backend)

    def prepare(w: Workload, data: Data) -> Bench:
        cpu = importlib.import_module("dmlops.backends.cpu")
        if level is not None and level not in cpu.supported():
            raise Skip(f"CPU level {level} not supported here ({', '.join(cpu.supported())})")
        bench = call(w, data)
        inner = bench.run

        def run():
            cpu.set_level(level)
            return inner()
        return dataclasses.replace(bench, run=run)
    return prepare


def _dmlops_call(backend: str):
    def prepare(w: Workload, data: Data) -> Bench:
        if backend not in dmlops.backends():
            raise Skip(f"dmlops backend {backend!r} not available")
        d = inputs_of(w, data)
        x, cl = d["x"], w.channels_last
        geo = dict(strides=w.strides, start_padding=w.pad, end_padding=w.pad, backend=backend)
        y = empty_like_layout(w.out_shape, w.dtype, cl)
        if w.op == "max":
            return Bench(lambda: dmlops.max_pooling(x, w.window, out=y, **geo))
        if w.op == "max_indices":
            i = empty_like_layout(w.out_shape, np.uint32, cl)
            return Bench(lambda: dmlops.max_pooling(x, w.window, output_indices=True,
                                                    out=(y, i), **geo), fetch=lambda r: r)
        if w.op == "avg":
            return Bench(lambda: dmlops.average_pooling(
                x, w.window, include_padding=w.include_padding, out=y, **geo))
        if w.op == "max_grad":
            dy = d["dy"]
            dx = empty_like_layout(w.shape, w.dtype, cl)
            return Bench(lambda: dmlops.max_pooling_grad(x, dy, w.window, out=dx, **geo))
        if w.op == "qavg":
            return Bench(lambda: dmlops.quantized_linear_average_pooling(
                x, *Q_IN, *Q_OUT, w.window, include_padding=w.include_padding, out=y, **geo))
        if w.op == "pad":
            p = (0, 0, w.pads, w.pads)
            return Bench(lambda: dmlops.padding(x, p, p, mode=w.mode, out=y, backend=backend))
        raise Skip(f"no dmlops call for {w.op}")
    return prepare


# ------------------------------------------------------------------------------------------
# PyTorch

@functools.lru_cache(maxsize=None)
def _torch():
    torch = _require("torch")
    torch.set_num_threads(THREADS)
    return torch


def _torch_pool_call(w: Workload, torch, out=None):
    """A callable t -> result for pooling workload w (``out`` = preallocated outputs, NCHW
    only: PyTorch's ``out=`` on a channels-last tensor computes into a temporary)."""
    import torch.nn.functional as F
    k, s, p = w.window, w.strides, w.pad
    if w.op == "max":
        pool = F.max_pool2d if w.k == 2 else F.max_pool3d
        return lambda t: pool(t, k, s, p)
    if w.op == "max_indices":
        if out is not None:
            return lambda t: torch._C._nn.max_pool2d_with_indices(t, k, s, p, out=out)
        return lambda t: F.max_pool2d(t, k, s, p, return_indices=True)
    if w.op == "avg":
        if w.k == 3:
            if out is not None:
                return lambda t: torch._C._nn.avg_pool3d(
                    t, k, s, p, count_include_pad=w.include_padding, out=out)
            return lambda t: F.avg_pool3d(t, k, s, p, count_include_pad=w.include_padding)
        if out is not None:
            return lambda t: torch._C._nn.avg_pool2d(
                t, k, s, p, count_include_pad=w.include_padding, out=out)
        return lambda t: F.avg_pool2d(t, k, s, p, count_include_pad=w.include_padding)
    raise Skip(f"no torch call for {w.op}")


def _torch_pool(layout: str):
    def prepare(w: Workload, data: Data) -> Bench:
        torch = _torch()
        d = inputs_of(w, data, channels_last=False)
        x = torch.from_numpy(d["x"])
        cl = layout == "channels_last"
        fmt = torch.channels_last if w.k == 2 else torch.channels_last_3d
        if cl:
            x = x.contiguous(memory_format=fmt)
        plane = _plane_offsets(w)
        to_flat = lambda i: i.numpy() + plane          # per-plane -> flat, untimed
        notes = []
        if w.op == "max_grad":
            import torch.nn.functional as F
            k, s, p = w.window, w.strides, w.pad
            dy = torch.from_numpy(d["dy"])
            if cl:
                dy = dy.contiguous(memory_format=fmt)
            _, idx = F.max_pool2d(x, k, s, p, return_indices=True)
            bw = torch.ops.aten.max_pool2d_with_indices_backward
            note = "argmax indices from a forward pass (untimed); dmlops recomputes them"
            if cl:
                return Bench(lambda: bw(dy, x, [k, k], [s, s], [p, p], [1, 1], False, idx),
                             fetch=lambda r: (r.numpy(),), note=note + "; no out=")
            dx = torch.empty(w.shape, dtype=x.dtype)
            return Bench(lambda: bw.grad_input(dy, x, [k, k], [s, s], [p, p], [1, 1], False,
                                               idx, grad_input=dx),
                         fetch=lambda r: (r.numpy(),), note=note)
        out = None
        if not cl and w.op != "max":
            if w.op == "max_indices":
                out = (torch.empty(w.out_shape, dtype=x.dtype),
                       torch.empty(w.out_shape, dtype=torch.int64))
            else:
                out = torch.empty(w.out_shape, dtype=x.dtype)
        if out is None:
            notes.append("no out=" if w.op == "max" and not cl else
                         "no out= (channels-last out= goes through a temporary)")
        f = _torch_pool_call(w, torch, out)
        if w.op == "max_indices":
            notes.append("int64 per-plane indices, made flat (untimed)")
            return Bench(lambda: f(x), fetch=lambda r: (r[0].numpy(), to_flat(r[1])),
                         note="; ".join(notes))
        return Bench(lambda: f(x), fetch=lambda r: (r.numpy(),), note="; ".join(notes))
    return prepare


def _plane_offsets(w: Workload) -> np.ndarray:
    """(n*C + c) * prod(spatial) broadcast over the output, turning per-plane indices flat."""
    n, c = w.shape[:2]
    plane = math.prod(w.shape[2:])
    return (np.arange(n * c, dtype=np.int64) * plane).reshape(n, c, *(1,) * w.k)


def _torch_onednn(w: Workload, data: Data) -> Bench:
    torch = _torch()
    x = torch.from_numpy(inputs_of(w, data, channels_last=False)["x"]).to_mkldnn()
    f = _torch_pool_call(w, torch)
    return Bench(lambda: f(x), fetch=lambda r: (r.to_dense().numpy(),),
                 note="x.to_mkldnn() and .to_dense() untimed; no out=")


def _torch_quantized(w: Workload, data: Data) -> Bench:
    """PyTorch's quantized kernels (channels-last, their fast path)."""
    torch = _torch()
    import torch.nn.functional as F
    x = torch.from_numpy(inputs_of(w, data, channels_last=False)["x"])
    if w.op == "qavg":
        import torch.ao.nn.quantized.functional as qF
        q = _quantized(torch, x, *Q_IN).contiguous(memory_format=torch.channels_last)
        return Bench(lambda: qF.avg_pool2d(q, w.window, w.strides, w.pad,
                                           count_include_pad=w.include_padding),
                     fetch=lambda r: (r.dequantize().numpy(),),
                     note=f"quint8; the output keeps the input's scale/zero point {Q_IN} "
                          f"(PyTorch cannot requantize to {Q_OUT}): compared dequantized and "
                          f"clipped to dmlops's output range, within half a step of each",
                     check={"kind": "dequant"})
    if w.op == "max" and w.dtype == "int8":
        q = _quantized(torch, x, 1.0, 0).contiguous(memory_format=torch.channels_last)
        return Bench(lambda: F.max_pool2d(q, w.window, w.strides, w.pad),
                     fetch=lambda r: (r.int_repr().numpy(),), note="qint8 (scale 1, zp 0)")
    raise Skip("no quantized PyTorch kernel for this workload")


def _quantized(torch, x, scale, zero_point):
    """A quantized tensor holding exactly the integers of ``x`` (creating one is deprecated
    in PyTorch 2.13 and warns)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch._make_per_tensor_quantized_tensor(x, scale, zero_point)


_TORCH_PAD = {"constant": "constant", "edge": "replicate", "reflection": "reflect",
              "wrap": "circular"}


def _torch_pad(w: Workload, data: Data) -> Bench:
    torch = _torch()
    import torch.nn.functional as F
    x = torch.from_numpy(inputs_of(w, data, channels_last=False)["x"])
    p, mode = w.pads, _TORCH_PAD[w.mode]
    y = torch.empty(w.out_shape, dtype=x.dtype)
    ops = {"constant": lambda: torch.ops.aten.constant_pad_nd.out(x, [p] * 4, 0.0, out=y),
           "replicate": lambda: torch._C._nn.replication_pad2d(x, [p] * 4, out=y),
           "reflect": lambda: torch._C._nn.reflection_pad2d(x, [p] * 4, out=y)}
    note = f"mode {mode!r}"
    run = ops.get(mode)
    if run is None:
        run = lambda: F.pad(x, [p] * 4, mode=mode)
        note += "; no out="
    return Bench(run, fetch=lambda r: (r.numpy(),), note=note)


# ------------------------------------------------------------------------------------------
# ONNX Runtime

def _ort_session(node, inputs, outputs, initializers=(), opset=21):
    ort = _require("onnxruntime")
    onnx = _require("onnx")
    h = onnx.helper
    graph = h.make_graph([node], "g", inputs, outputs, initializer=list(initializers))
    opsets = [h.make_opsetid("", opset)]
    if node.domain:
        opsets.append(h.make_opsetid(node.domain, 1))
    model = h.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    # ONNX Runtime's idle threads spin after a run; on 2 cores they took a core from whatever
    # ran next (measured: a C++ max pooling right after ONNX Runtime's took 48 ms, 29 alone)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.inter_op_num_threads = 1
    so.log_severity_level = 4     # refusals are reported by the runner
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def _ort_bench(sess, feeds: dict, outputs: dict, note="") -> Bench:
    """Run through IOBinding: inputs bound in place, outputs written into preallocated
    NumPy arrays."""
    io = sess.io_binding()
    for name, a in feeds.items():
        io.bind_cpu_input(name, a)
    for name, a in outputs.items():
        io.bind_output(name, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)
    outs = tuple(outputs.values())
    return Bench(lambda: sess.run_with_iobinding(io), fetch=lambda r: outs,
                 note=("IOBinding, preallocated outputs" + ("; " + note if note else "")))


def _ort_type(dtype):
    onnx = _require("onnx")
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _ort_pool(layout: str):
    def prepare(w: Workload, data: Data) -> Bench:
        onnx = _require("onnx")
        h = onnx.helper
        x = inputs_of(w, data, channels_last=False)["x"]
        geo = dict(kernel_shape=[w.window] * w.k, strides=[w.strides] * w.k,
                   pads=[w.pad] * (2 * w.k))
        t = _ort_type(w.dtype)
        vi = lambda name, tt: h.make_tensor_value_info(name, tt, None)
        y = np.empty(w.out_shape, w.dtype)
        if w.op in ("max", "max_indices"):
            outs = {"y": y}
            if w.op == "max_indices":
                outs["i"] = np.empty(w.out_shape, np.int64)
            node = h.make_node("MaxPool", ["x"], list(outs), storage_order=0, **geo)
            sess = _ort_session(node, [vi("x", t)], [vi(n, _ort_type(a.dtype))
                                                     for n, a in outs.items()])
            note = "flat int64 indices (storage_order 0)" if w.op == "max_indices" else ""
            return _ort_bench(sess, {"x": x}, outs, note)
        if w.op == "avg":
            node = h.make_node("AveragePool", ["x"], ["y"],
                               count_include_pad=int(w.include_padding), **geo)
            sess = _ort_session(node, [vi("x", t)], [vi("y", t)])
            return _ort_bench(sess, {"x": x}, {"y": y})
        if w.op == "qavg":
            nh = onnx.numpy_helper
            dt = np.dtype(w.dtype)
            inits = [nh.from_array(np.array(Q_IN[0], np.float32), "xs"),
                     nh.from_array(np.array(Q_IN[1], dt), "xz"),
                     nh.from_array(np.array(Q_OUT[0], np.float32), "ys"),
                     nh.from_array(np.array(Q_OUT[1], dt), "yz")]
            nhwc = layout == "NHWC"
            node = h.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                               domain="com.microsoft", count_include_pad=int(w.include_padding),
                               channels_last=int(nhwc), **geo)
            sess = _ort_session(node, [vi("x", t)], [vi("y", t)], inits)
            if nhwc:
                xin = np.ascontiguousarray(np.moveaxis(x, 1, -1))
                yout = np.empty((w.out_shape[0], *w.out_shape[2:], w.out_shape[1]), dt)
                b = _ort_bench(sess, {"x": xin}, {"y": yout}, "NHWC conversion untimed")
                b.fetch = lambda r: (np.moveaxis(yout, -1, 1),)
            else:
                b = _ort_bench(sess, {"x": x}, {"y": y})
            b.note += "; com.microsoft QLinearAveragePool, float rounding may differ by 1"
            b.check = {"kind": "quant", "max_steps": 1}
            return b
        raise Skip(f"no ONNX Runtime node for {w.op}")
    return prepare


_ORT_PAD = {"constant": "constant", "edge": "edge", "reflection": "reflect", "wrap": "wrap"}


def _ort_pad(w: Workload, data: Data) -> Bench:
    onnx = _require("onnx")
    h, nh = onnx.helper, onnx.numpy_helper
    x = inputs_of(w, data, channels_last=False)["x"]
    p = w.pads
    pads = nh.from_array(np.array([0, 0, p, p, 0, 0, p, p], np.int64), "p")
    t = _ort_type(w.dtype)
    node = h.make_node("Pad", ["x", "p"], ["y"], mode=_ORT_PAD[w.mode])
    sess = _ort_session(node, [h.make_tensor_value_info("x", t, None)],
                        [h.make_tensor_value_info("y", t, None)], [pads])
    return _ort_bench(sess, {"x": x}, {"y": np.empty(w.out_shape, w.dtype)},
                      f"mode {_ORT_PAD[w.mode]!r}")


# ------------------------------------------------------------------------------------------
# JAX

@functools.lru_cache(maxsize=None)
def _jax():
    jax = _require("jax")
    jax.config.update("jax_platforms", "cpu")
    return jax


def _divisor_map(w: Workload) -> np.ndarray:
    """The average's divisor per output position (float32, spatial shape), from SPEC 3.1."""
    counts = []
    for S, O in zip(w.shape[2:], w.out_shape[2:]):
        start = np.arange(O) * w.strides - w.pad
        lo, hi = np.maximum(start, 0), np.minimum(start + w.window, S)
        real = hi - lo
        total = np.minimum(start + w.window, S + w.pad) - start
        counts.append(total if w.include_padding else real)
    out = np.ones((), np.float32)
    for c in counts:
        out = np.multiply.outer(out, c.astype(np.float32))
    return out


def _jax_pool(layout: str):
    def prepare(w: Workload, data: Data) -> Bench:
        jax = _jax()
        import jax.numpy as jnp
        from jax import lax
        d = inputs_of(w, data, channels_last=False)
        nhwc = layout == "NHWC"
        sp = list(range(1, 1 + w.k)) if nhwc else list(range(2, 2 + w.k))
        move = (lambda a: jnp.asarray(np.moveaxis(a, 1, -1))) if nhwc else jnp.asarray
        back = (lambda r: np.moveaxis(np.asarray(r), -1, 1)) if nhwc else np.asarray
        rank = w.k + 2
        dims, strides, pads = [1] * rank, [1] * rank, [(0, 0)] * rank
        for a in sp:
            dims[a], strides[a], pads[a] = w.window, w.strides, (w.pad, w.pad)
        dt = np.dtype(w.dtype)
        lowest = -np.inf if dt.kind == "f" else np.iinfo(dt).min
        init = np.array(lowest, dt)

        def pool_max(a):
            return lax.reduce_window(a, init, lax.max, dims, strides, pads)

        note = "no out="
        if w.op == "max":
            f = jax.jit(pool_max)
            args = (move(d["x"]),)
        elif w.op == "avg":
            div = _divisor_map(w)
            div = div.reshape(div.shape + (1,)) if nhwc else div
            acc = np.float32 if dt == np.float16 else dt

            def pool_avg(a, divisor):
                s = lax.reduce_window(a.astype(acc), np.array(0, acc), lax.add, dims,
                                      strides, pads)
                return (s / divisor).astype(dt)
            f = jax.jit(pool_avg)
            args = (move(d["x"]), jnp.asarray(div))
            note += "; divisor map precomputed (untimed)"
            if dt == np.float16:
                note += "; sums in float32 (cast inside jit), as dmlops does"
        elif w.op == "max_grad":
            def grad(a, g):
                return jax.vjp(pool_max, a)[1](g)[0]
            f = jax.jit(grad)
            args = (move(d["x"]), move(d["dy"]))
            note += "; vjp of reduce_window max (select_and_scatter_add)"
        else:
            raise Skip(f"no JAX call for {w.op}")
        return Bench(lambda: f(*args).block_until_ready(), fetch=lambda r: (back(r),),
                     note=note)
    return prepare


_JAX_PAD = {"constant": "constant", "edge": "edge", "reflection": "reflect",
            "symmetric": "symmetric", "wrap": "wrap"}


def _jax_pad(w: Workload, data: Data) -> Bench:
    jax = _jax()
    import jax.numpy as jnp
    x = jnp.asarray(inputs_of(w, data, channels_last=False)["x"])
    p = w.pads
    f = jax.jit(lambda a: jnp.pad(a, ((0, 0), (0, 0), (p, p), (p, p)), mode=_JAX_PAD[w.mode]))
    return Bench(lambda: f(x).block_until_ready(), fetch=lambda r: (np.asarray(r),),
                 note=f"jnp.pad mode {_JAX_PAD[w.mode]!r}; no out=")


# ------------------------------------------------------------------------------------------
# TensorFlow

@functools.lru_cache(maxsize=None)
def _tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf = _require("tensorflow")
    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return tf


def _tf_pool(w: Workload, data: Data) -> Bench:
    """TensorFlow's CPU pooling is NHWC (NDHWC); the conversion is untimed."""
    tf = _tf()
    d = inputs_of(w, data, channels_last=False)
    to = lambda a: tf.constant(np.ascontiguousarray(np.moveaxis(a, 1, -1)))
    back = lambda r: np.moveaxis(np.asarray(r), -1, 1)
    x = to(d["x"])
    k, s, p = w.window, w.strides, w.pad
    explicit = [[0, 0]] + [[p, p]] * w.k + [[0, 0]]
    dt = np.dtype(w.dtype)
    if w.op == "max":
        return Bench(lambda: tf.nn.max_pool2d(x, k, s, explicit), fetch=lambda r: (back(r),),
                     note="explicit padding; no out=")
    if w.op == "max_indices":
        # max_pool_with_argmax has only SAME/VALID padding: pad with -inf, then VALID
        lowest = -np.inf if dt.kind == "f" else np.iinfo(dt).min

        def run():
            xp = tf.pad(x, explicit, constant_values=lowest)
            return tf.nn.max_pool_with_argmax(xp, k, s, "VALID", include_batch_in_index=True)

        n, c = w.shape[:2]
        hp, wp = w.shape[2] + 2 * p, w.shape[3] + 2 * p

        def fetch(r):   # NHWC flat index over the padded input -> dmlops's flat index
            i = np.asarray(r[1])
            ch = i % c
            rest = i // c
            col = rest % wp - p
            rest //= wp
            row = rest % hp - p
            b = rest // hp
            flat = ((b * c + ch) * w.shape[2] + row) * w.shape[3] + col
            return back(r[0]), np.moveaxis(flat, -1, 1)
        return Bench(run, fetch=fetch,
                     note="composite: tf.pad(-inf) + VALID max_pool_with_argmax (no explicit "
                          "padding); NHWC indices over the padded input, converted untimed")
    if w.op == "avg":
        pool = tf.nn.avg_pool2d if w.k == 2 else tf.nn.avg_pool3d
        if p == 0:
            return Bench(lambda: pool(x, k, s, "VALID"), fetch=lambda r: (back(r),),
                         note="VALID; no out=")
        # avg_pool has only SAME/VALID padding: zero-pad then VALID gives IncludePadding true
        note = "composite: tf.pad + VALID avg_pool (no explicit padding)"
        if w.include_padding:
            return Bench(lambda: pool(tf.pad(x, explicit), k, s, "VALID"),
                         fetch=lambda r: (back(r),), note=note)
        scale = tf.constant((k ** w.k / _divisor_map(w))[..., None].astype(dt))
        return Bench(lambda: pool(tf.pad(x, explicit), k, s, "VALID") * scale,
                     fetch=lambda r: (back(r),),
                     note=note + " x window/divisor map (precomputed, untimed)")
    if w.op == "max_grad":
        y = tf.nn.max_pool2d(x, k, s, explicit)
        dy = to(d["dy"])
        flat_pads = [v for pair in explicit for v in pair]

        def run():
            return tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=dy,
                                          ksize=[1, k, k, 1], strides=[1, s, s, 1],
                                          padding="EXPLICIT", explicit_paddings=flat_pads)
        return Bench(run, fetch=lambda r: (back(r),),
                     note="raw_ops.MaxPoolGrad, orig_output precomputed (untimed)")
    raise Skip(f"no TensorFlow call for {w.op}")


_TF_PAD = {"constant": "CONSTANT", "reflection": "REFLECT", "symmetric": "SYMMETRIC"}


def _tf_pad(w: Workload, data: Data) -> Bench:
    tf = _tf()
    x = tf.constant(inputs_of(w, data, channels_last=False)["x"])
    p = w.pads
    pads = [[0, 0], [0, 0], [p, p], [p, p]]
    mode = _TF_PAD[w.mode]
    return Bench(lambda: tf.pad(x, pads, mode), fetch=lambda r: (np.asarray(r),),
                 note=f"tf.pad {mode}; no out=")


# ------------------------------------------------------------------------------------------
# NumPy (slow baselines)

def _window_slices(w: Workload, offsets):
    return (slice(None), slice(None), *(slice(o, o + (n - 1) * w.strides + 1, w.strides)
                                        for o, n in zip(offsets, w.out_shape[2:])))


def _np_pool(w: Workload, data: Data) -> Bench:
    """Strided slices of a padded copy, reduced window offset by window offset."""
    x = inputs_of(w, data, channels_last=False)["x"]
    dt = np.dtype(w.dtype)
    p = w.pad
    inner = (slice(None), slice(None), *(slice(p, p + S) for S in w.shape[2:]))
    padded = (*w.shape[:2], *(S + 2 * p for S in w.shape[2:]))
    offsets = list(np.ndindex(*(w.window,) * w.k))
    if w.op == "max":
        lowest = -np.inf if dt.kind == "f" else np.iinfo(dt).min
        xp = np.full(padded, lowest, dt)
        y = np.empty(w.out_shape, dt)

        def run():
            xp[inner] = x
            np.copyto(y, xp[_window_slices(w, offsets[0])])
            for o in offsets[1:]:
                np.maximum(y, xp[_window_slices(w, o)], out=y)
            return y
        return Bench(run, note="pads with the type's lowest value (a sentinel)")
    if w.op == "avg" and w.k >= 2 and p == 0 and w.window == w.strides and all(
            S % w.window == 0 for S in w.shape[2:]):
        # non-overlapping windows: a reshape and one mean
        shp = list(w.shape[:2])
        for S in w.shape[2:]:
            shp += [S // w.window, w.window]
        axes = tuple(range(3, 3 + 2 * w.k, 2))
        y = np.empty(w.out_shape, dt)
        return Bench(lambda: np.mean(x.reshape(shp), axis=axes, dtype=np.float32, out=y),
                     note="reshape + mean (non-overlapping windows)")
    if w.op in ("avg", "qavg"):
        acc = np.int32 if w.op == "qavg" else np.float32
        xp = np.zeros(padded, acc)
        s = np.empty(w.out_shape, acc)
        div = _divisor_map(w)
        y = np.empty(w.out_shape, dt)

        def window_sum():
            if w.op == "qavg":
                np.subtract(x, np.int32(Q_IN[1]), out=xp[inner], dtype=np.int32)
            else:
                xp[inner] = x
            np.copyto(s, xp[_window_slices(w, offsets[0])])
            for o in offsets[1:]:
                np.add(s, xp[_window_slices(w, o)], out=s)
            return s

        if w.op == "avg":
            def run():
                np.divide(window_sum(), div, out=y, casting="unsafe")
                return y
            return Bench(run, note="float32 sums; divisor map precomputed (untimed)")

        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max

        def run():   # SPEC 3.3, step by step
            t = window_sum().astype(np.float32) * np.float32(Q_IN[0])
            t /= div
            t /= np.float32(Q_OUT[0])
            np.clip(np.rint(t) + Q_OUT[1], lo, hi, out=t)
            np.copyto(y, t, casting="unsafe")
            return y
        return Bench(run, note="composite of SPEC 3.3's arithmetic; divisor map untimed")
    raise Skip(f"no NumPy baseline for {w.op}")


_NP_PAD = {"constant": "constant", "edge": "edge", "reflection": "reflect",
           "symmetric": "symmetric", "wrap": "wrap"}


def _np_pad(w: Workload, data: Data) -> Bench:
    x = inputs_of(w, data, channels_last=False)["x"]
    p = w.pads
    mode = _NP_PAD[w.mode]
    return Bench(lambda: np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), mode=mode),
                 note=f"np.pad {mode!r}; no out=")


# ------------------------------------------------------------------------------------------
# The table: which implementation runs which workloads

_F = frozenset
_FLOATS = _F({"float32", "float16"})
_POOL = _F({"max", "max_indices", "avg", "max_grad"})

IMPLS = (
    Impl("dmlops cpu", "dmlops", _F(POOL_OPS + ("pad",)), _dmlops("cpu"), is_dmlops=True),
    Impl("dmlops reference", "dmlops", _F(POOL_OPS + ("pad",)), _dmlops("reference"),
         is_dmlops=True),
    Impl("dmlops cpu-avx2", "dmlops", _F(POOL_OPS + ("pad",)), _dmlops("cpu", "avx2")),
    Impl("dmlops cpu-baseline", "dmlops", _F(POOL_OPS + ("pad",)), _dmlops("cpu", "baseline")),
    Impl("torch NCHW", "torch", _POOL, _torch_pool("NCHW"),
         dtypes=_F({"float32", "float16", "int8", "int32"})),
    Impl("torch channels_last", "torch", _POOL, _torch_pool("channels_last"),
         dtypes=_F({"float32", "float16", "int8", "int32"})),
    Impl("torch oneDNN", "torch", _F({"max", "avg"}), _torch_onednn, dtypes=_F({"float32"}),
         quick=False),
    Impl("torch quantized NHWC", "torch", _F({"qavg", "max"}), _torch_quantized,
         dtypes=_F({"uint8", "int8"})),
    Impl("torch NCHW", "torch", _F({"pad"}), _torch_pad, modes=_F(_TORCH_PAD)),
    Impl("onnxruntime NCHW", "onnxruntime", _F({"max", "max_indices", "avg", "qavg"}),
         _ort_pool("NCHW"), dtypes=_F({"float32", "float16", "int8", "uint8"})),
    Impl("onnxruntime NHWC", "onnxruntime", _F({"qavg"}), _ort_pool("NHWC")),
    Impl("onnxruntime", "onnxruntime", _F({"pad"}), _ort_pad, modes=_F(_ORT_PAD)),
    Impl("jax NCHW", "jax", _F({"max", "avg", "max_grad"}), _jax_pool("NCHW"),
         dtypes=_F({"float32", "float16", "int8", "int32"}), compiles=True, quick=False),
    Impl("jax NHWC", "jax", _F({"max", "avg", "max_grad"}), _jax_pool("NHWC"),
         dtypes=_F({"float32", "float16", "int8", "int32"}), compiles=True),
    Impl("jax", "jax", _F({"pad"}), _jax_pad, compiles=True),
    Impl("tensorflow NHWC", "tensorflow", _POOL, _tf_pool,
         dtypes=_F({"float32", "float16", "int8", "int32"})),
    Impl("tensorflow", "tensorflow", _F({"pad"}), _tf_pad, modes=_F(_TF_PAD)),
    Impl("numpy", "numpy", _F({"max", "avg", "qavg"}), _np_pool, quick=False),
    Impl("numpy", "numpy", _F({"pad"}), _np_pad),
)


def implementations(w: Workload) -> list:
    """Every implementation listed for workload ``w``, dmlops first."""
    return [i for i in IMPLS if i.supports(w)]


# ------------------------------------------------------------------------------------------
# Agreement

@dataclass
class Agreement:
    ok: bool
    text: str


def _fmt_count(n: int, total: int) -> str:
    return f"{n} of {total:,} ({100 * n / total:.3g} %)"


def compare(got: tuple, want: tuple, check: dict, dtype) -> Agreement:
    """Compare an implementation's arrays (``got``) with the oracle's (``want``: dmlops's
    reference backend).

    kinds: ``exact`` (values bit for bit, NaN equal to NaN; indices equal as integers);
    ``close`` (float averages and gradients: |d| <= atol + rtol |want|, defaults from the
    SPEC 5 bound for 9-term float32 sums of unit-scale data, 1 ulp and a bit for float16);
    ``quant`` (integers within ``max_steps``); ``dequant`` (``got`` holds dequantized floats,
    ``want`` quantized with workload 7's output parameters: within half a step of each scale,
    after clipping ``got`` to the range ``want`` can express).
    """
    if len(got) != len(want):
        return Agreement(False, f"FAIL: {len(got)} outputs, expected {len(want)}")
    kind = check["kind"]
    texts, ok = [], True
    for gi, (g, e) in enumerate(zip(got, want)):
        g, e = np.asarray(g), np.asarray(e)
        label = "" if gi == 0 else "indices "
        if g.shape != e.shape:
            return Agreement(False, f"FAIL: {label}shape {g.shape}, expected {e.shape}")
        total = e.size
        if kind == "dequant":     # workload 7 against a peer that keeps the input's scale
            (s_in, _), (s_out, zp_out) = Q_IN, Q_OUT
            info = np.iinfo(e.dtype)
            lo, hi = (info.min - zp_out) * s_out, (info.max - zp_out) * s_out
            ef = (e.astype(np.float64) - zp_out) * np.float32(s_out)
            d = np.abs(np.clip(g.astype(np.float64), lo, hi) - ef)
            atol = (s_in + s_out) / 2 * (1 + 1e-5)     # each side rounded to half a step
            bad = int(np.count_nonzero(d > atol))
            if bad:
                ok = False
                texts.append(f"FAIL: {_fmt_count(bad, total)} off by > {atol:.4g}")
            else:
                texts.append(f"ok (max |d| {d.max():.3g} <= {atol:.4g})")
            continue
        if gi > 0 or e.dtype.kind in "iu" and kind in ("exact", "close"):
            neq = int(np.count_nonzero(g.astype(np.int64) != e.astype(np.int64)))
            if neq:
                ok = False
                texts.append(f"FAIL: {label}{_fmt_count(neq, total)} differ")
            elif gi > 0:
                texts.append("indices equal")
            else:
                texts.append("bitwise")
            continue
        if kind == "quant":
            d = np.abs(g.astype(np.int64) - e.astype(np.int64))
            n1 = int(np.count_nonzero(d))
            if d.max(initial=0) > check.get("max_steps", 0):
                ok = False
                texts.append(f"FAIL: max |d| {d.max()} steps, {_fmt_count(n1, total)} differ")
            else:
                texts.append("bitwise" if n1 == 0 else f"±1 in {_fmt_count(n1, total)}")
            continue
        same = np.array_equal(g.astype(e.dtype, copy=False), e, equal_nan=True) and \
            np.array_equal(np.signbit(g), np.signbit(e))
        if same:
            texts.append("bitwise")
            continue
        if kind == "exact":
            neq = int(np.count_nonzero(~((g == e) | (np.isnan(g) & np.isnan(e)))))
            ok = False
            texts.append(f"FAIL: {_fmt_count(max(neq, 1), total)} differ")
            continue
        f16 = np.dtype(dtype) == np.float16
        rtol = check.get("rtol", 2e-3 if f16 else 1e-6)
        atol = check.get("atol", 2e-3 if f16 else 2e-6)
        bad, dmax = 0, 0.0
        gf, ef = g.reshape(-1), e.reshape(-1)
        for lo in range(0, total, 1 << 23):        # in chunks: float64 copies are large
            g64 = gf[lo:lo + (1 << 23)].astype(np.float64)
            e64 = ef[lo:lo + (1 << 23)].astype(np.float64)
            d = np.abs(g64 - e64)
            bad += int(np.count_nonzero(~(d <= atol + rtol * np.abs(e64))))
            dmax = max(dmax, float(np.nanmax(d, initial=0)))
        if bad:
            ok = False
            texts.append(f"FAIL: {_fmt_count(bad, total)} beyond tolerance, max |d| {dmax:.3g}")
        else:
            texts.append(f"close (max |d| {dmax:.2g})")
    return Agreement(ok, "; ".join(texts))


def check_of(w: Workload, bench: Bench) -> dict:
    return bench.check if bench.check is not None else w.default_check


__all__ = ["Workload", "WORKLOADS", "Data", "Bench", "Impl", "IMPLS", "Skip", "LIBRARIES",
           "implementations", "compare", "check_of", "library_available", "data_keys",
           "to_channels_last", "Agreement"]
