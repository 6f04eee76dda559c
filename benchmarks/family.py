"""Side-by-side timings of the later pooling operators (SPEC 3.2, 3.6, 3.7): dmlops's cpu and
reference backends against PyTorch on the ResNet-stem shape [32, 64, 112, 112].

    python benchmarks/family.py [--repeats 7]

Medians of the repeats after a warm-up call, 2 threads everywhere, with the ratio dmlops cpu /
peer (below 1: dmlops is faster). PyTorch has no average-pooling gradient on its own, so its
row is the forward and backward of ``avg_pool2d``; its ``lp_pool2d`` runs on non-negative
input without padding (it has none), and ``max_unpool2d`` takes per-plane indices. Results are
checked to agree before timing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dmlops as dml


def median_ms(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    import torch
    torch.set_num_threads(2)
    F = torch.nn.functional
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 64, 112, 112)).astype(np.float32)
    pool = dict(strides=2, start_padding=1, end_padding=1)
    dy = rng.standard_normal(dml.pooling_output_sizes(x.shape, 3, **pool)).astype(np.float32)
    xa = np.abs(x)
    v, i = dml.max_pooling(x, 2, strides=2, output_indices=True)
    plane = (np.arange(32)[:, None] * 64 + np.arange(64)[None, :]) * (112 * 112)
    it = torch.from_numpy(i.astype(np.int64) - plane[:, :, None, None])
    xt = torch.from_numpy(x).requires_grad_(True)

    def torch_avg_grad():
        F.avg_pool2d(xt, 3, 2, 1, count_include_pad=False).backward(torch.from_numpy(dy))
        xt.grad = None

    rows = [
        ("average_pooling_grad 3x3 s2 p1",
         lambda b: dml.average_pooling_grad(dy, 3, input_sizes=x.shape, backend=b, **pool),
         torch_avg_grad, "torch avg_pool2d forward + backward"),
        ("lp_pooling p=2 3x3 s2",
         lambda b: dml.lp_pooling(xa, 3, p=2, strides=2, backend=b),
         lambda: F.lp_pool2d(torch.from_numpy(xa), 2, 3, 2), "torch lp_pool2d"),
        ("max_unpooling 2x2 s2",
         lambda b: dml.max_unpooling(v, i, x.shape, backend=b),
         lambda: F.max_unpool2d(torch.from_numpy(v), it, 2, 2), "torch max_unpool2d"),
    ]
    # agreement first
    xt64 = torch.from_numpy(x.astype(np.float64)).requires_grad_(True)
    F.avg_pool2d(xt64, 3, 2, 1, count_include_pad=False).backward(
        torch.from_numpy(dy.astype(np.float64)))
    assert np.allclose(rows[0][1]("cpu"), xt64.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert np.allclose(rows[1][1]("cpu"), rows[1][2]().numpy(), rtol=1e-5)
    assert np.array_equal(rows[2][1]("cpu"), rows[2][2]().numpy())
    print(f"{'workload':34} {'cpu ms':>8} {'reference ms':>13} {'peer ms':>8} {'cpu/peer':>9}"
          "  peer")
    for title, ours, peer, peer_name in rows:
        cpu = median_ms(lambda: ours("cpu"), args.repeats)
        ref = median_ms(lambda: ours("reference"), max(3, args.repeats // 2))
        other = median_ms(peer, args.repeats)
        print(f"{title:34} {cpu:8.1f} {ref:13.1f} {other:8.1f} {cpu / other:9.2f}  {peer_name}")


if __name__ == "__main__":
    main()
