"""Per-call latency of small dmlops calls (a script, not a test): what a caller pays besides
the kernel's work, e.g. checking a model's numbers layer by layer.

For each operator, a small input (one [1, 1, 112, 112] plane for pooling), warmed up, then
timed in batches of calls; prints the median and the lowest batch's time per call, in µs.
With ``--flush``, every call follows a 64 MiB write, as a call does after a large kernel has
left nothing of dmlops in the caches. The last row times NumPy's own ``np.add`` on the same
input: this shared host runs everything up to 1.6x slower in some spells, so a row reads
against it (2.3-5.4 µs on one afternoon).

First, what a new process pays (issue 27's limits: 0.15 s, 50 ms): ``import dmlops`` in new
processes (NumPy's own import included, and given alone beside it), and each call's first
time in a new process less its later time.

With ``--torch``, the same max pooling from a PyTorch tensor three ways (no gradient): the
NumPy call with a new output (the base), ``dmlops.max_pooling(tensor)`` (the tensor read in
place, the result a tensor on the same memory), and the ``torch.ops.dmlops.max_pooling`` op
(issue 44: at most 10 µs over the base); then the floor of such an op, the same op computing
nothing (its schema, its autograd kernel, TorchDynamo off, the input returned): what PyTorch's
dispatcher costs a Python op with these arguments, whatever the op does; and below it the
dispatcher alone, a Python kernel that returns its input registered for every key
(CompositeExplicitAutograd, no autograd kernel, no TorchDynamo guard) with that schema and with
a tensor as its only argument: how much of the floor is the schema's argument lists.

    python benchmarks/latency.py [--flush] [--backend cpu] [--processes 7] [--torch]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import dmlops


def cases(backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, 112, 112), dtype=np.float32)
    y = np.empty((1, 1, 56, 56), np.float32)
    xp = rng.standard_normal((1, 3, 64, 64), dtype=np.float32)
    yp = np.empty((1, 3, 96, 96), np.float32)
    q = rng.integers(0, 256, (1, 1, 56, 56), dtype=np.uint8)
    qy = np.empty_like(q)
    g = dict(strides=2, start_padding=1, end_padding=1, backend=backend)
    return {
        "max_pooling [1,1,112,112] 3x3 s2": lambda: dmlops.max_pooling(x, 3, out=y, **g),
        "  with indices": lambda: dmlops.max_pooling(x, 3, output_indices=True, **g),
        "average_pooling [1,1,112,112] 3x3 s2": lambda: dmlops.average_pooling(x, 3, out=y,
                                                                               **g),
        "max_pooling_grad [1,1,112,112] 3x3 s2": lambda: dmlops.max_pooling_grad(x, y, 3, **g),
        "quantized avg uint8 [1,1,56,56] 3x3": lambda: dmlops.quantized_linear_average_pooling(
            q, 0.02, 128, 0.015, 120, 3, start_padding=1, end_padding=1, out=qy,
            backend=backend),
        "padding [1,3,64,64] by 16, reflection": lambda: dmlops.padding(
            xp, (0, 0, 16, 16), (0, 0, 16, 16), mode="reflection", out=yp, backend=backend),
    }


_IMPORT = """
import time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import dmlops
t2 = time.perf_counter()
print(t2 - t0, t1 - t0)
"""

_FIRST = """
import sys, time
sys.path.insert(0, {here!r})
import latency
call = latency.cases({backend!r})[{name!r}]
t0 = time.perf_counter(); call(); first = time.perf_counter() - t0
later = []
for _ in range(21):
    t0 = time.perf_counter(); call(); later.append(time.perf_counter() - t0)
print(first - sorted(later)[10])
"""


_KEPT = []


def torch_cases():
    import torch

    import dmlops.torch as dt
    x = np.random.default_rng(0).standard_normal((1, 1, 112, 112), dtype=np.float32)
    t = torch.from_numpy(x)
    g = dict(strides=2, start_padding=1, end_padding=1)
    op = torch.ops.dmlops.max_pooling
    # the floor: dmlops::max_pooling's schema and autograd kernel, no computation
    lib = torch.library.Library("dmlops_latency", "DEF")
    _KEPT.append(lib)       # (the op lives as long as its library)
    lib.define(str(op.default._schema).split("::", 1)[1])
    lib.impl("max_pooling", lambda x, *rest: x, "CompositeExplicitAutograd")
    empty = torch.ops.dmlops_latency.max_pooling
    lib.impl("max_pooling", torch._disable_dynamo(
        dt._autograd(empty.default, lambda x, *rest: x, None, None)), "Autograd",
        with_keyset=True)
    lib.define(str(op.default._schema).split("::", 1)[1].replace("max_pooling", "bare", 1))
    lib.impl("bare", lambda x, *rest: x, "CompositeExplicitAutograd")
    lib.define("bare_tensor(Tensor x) -> Tensor")
    lib.impl("bare_tensor", lambda x: x, "CompositeExplicitAutograd")
    bare, bare_tensor = torch.ops.dmlops_latency.bare, torch.ops.dmlops_latency.bare_tensor
    return {
        "max_pooling, NumPy, new output (base)": lambda: dmlops.max_pooling(x, 3, **g),
        "  dmlops.max_pooling(tensor)": lambda: dmlops.max_pooling(t, 3, **g),
        "  torch.ops.dmlops.max_pooling(tensor)": lambda: op(t, [3, 3], [2, 2], [1, 1],
                                                             [1, 1], [1, 1], None),
        "  the same op computing nothing (floor)": lambda: empty(t, [3, 3], [2, 2], [1, 1],
                                                                [1, 1], [1, 1], None),
        "    the dispatcher alone, this schema": lambda: bare(t, [3, 3], [2, 2], [1, 1],
                                                            [1, 1], [1, 1], None),
        "    the dispatcher alone, one tensor": lambda: bare_tensor(t),
    }


def _child(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout


def startup(backend: str, processes: int) -> None:
    """``import dmlops`` and each call's first time, in new processes: medians."""
    imports = [tuple(map(float, _child(_IMPORT).split())) for _ in range(processes)]
    print(f"import dmlops, new process: {statistics.median(t for t, _ in imports) * 1e3:.0f} ms"
          f" median of {processes} (NumPy alone "
          f"{statistics.median(n for _, n in imports) * 1e3:.0f} ms)")
    print("each call's first time less its later time, new process per call (ms, median):")
    here = str(Path(__file__).resolve().parent)
    for name in cases(backend):
        code = _FIRST.format(here=here, backend=backend, name=name)
        extra = [float(_child(code)) for _ in range(processes)]
        print(f"  {name:40} {statistics.median(extra) * 1e3:8.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flush", action="store_true", help="a 64 MiB write before every call")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--torch", action="store_true", help="add the PyTorch op's rows")
    ap.add_argument("--processes", type=int, default=7,
                    help="new processes for the import and first-call times (0: none)")
    args = ap.parse_args(argv)
    if args.processes:
        startup(args.backend, args.processes)
    junk = np.empty(1 << 24, np.float32)
    batch = 20 if args.flush else 500
    print(f"dmlops {dmlops.__version__}, backend {args.backend}"
          f"{', 64 MiB written before each call' if args.flush else ''}; µs per call")
    print(f"{'call':42} {'median':>8} {'lowest':>8}")
    calls = cases(args.backend)
    if args.torch:
        calls.update(torch_cases())
    # the machine's speed at the moment, for reading the rest: this shared host runs every
    # call up to 1.6x slower in some spells, NumPy's as much as dmlops's
    x = np.ones((1, 1, 112, 112), np.float32)
    y = np.empty_like(x)
    calls["(NumPy's np.add(x, x, out=y), same x)"] = lambda: np.add(x, x, out=y)
    for name, call in calls.items():
        call()
        times = []
        for b in range(args.batches):
            spent = 0.0
            for i in range(batch):
                if args.flush:
                    junk.fill(i)
                t0 = time.perf_counter()
                call()
                spent += time.perf_counter() - t0
            times.append(spent / batch * 1e6)
        print(f"{name:42} {statistics.median(times):8.1f} {min(times):8.1f}")


if __name__ == "__main__":
    main()
