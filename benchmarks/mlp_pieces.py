"""Pieces of the MLP training step timed alone, fused and not (a diagnostic for issue 19, not a benchmark
table), at bench.py's MLP shapes: a linear layer with relu forward, forward + backward through autograd, and
products of an elementwise result. Run on the GPU machine, once as is and once with VKT_FUSION=0:
    python3 benchmarks/mlp_pieces.py && VKT_FUSION=0 python3 benchmarks/mlp_pieces.py"""
import os
import sys

import numpy as np

import vkt

sys.path.insert(0, os.path.dirname(__file__))
from bench import timed  # noqa: E402

mode = "unfused" if os.environ.get("VKT_FUSION") == "0" else "fused"
rng = np.random.default_rng(0)
for m, k, n in [(256, 784, 1024), (256, 1024, 1024)]:
    x, w, b, g = (vkt.tensor(rng.standard_normal(s).astype(np.float32), device="vulkan")
                  for s in ((m, k), (n, k), (n,), (m, n)))
    wg, bg = w.clone().requires_grad_(), b.clone().requires_grad_()
    y, zero = (x @ w.T + b).relu(), vkt.zeros((), device="vulkan")

    def step():
        wg.grad = bg.grad = None
        (x @ wg.T + bg).relu().backward(g)
        return wg.grad, bg.grad

    cases = {"relu(x @ w.T + b)": lambda: (x @ w.T + b).relu(), "the same, forward + backward": step,
             "g @ w": lambda: g @ w, "(g * 2) @ w": lambda: (g * 2) @ w,
             "where(y > 0, g, 0) @ w": lambda: vkt.where(y > 0, g, 0) @ w,
             "where(y > 0, g, zero) @ w": lambda: vkt.where(y > 0, g, zero) @ w}
    for name, f in cases.items():
        vkt.vulkan.synchronize()
        vkt.vulkan.reset_kernel_stats()
        kept = f()
        vkt.vulkan.synchronize()
        n_dispatches = vkt.vulkan.kernel_stats()["dispatches"]
        del kept
        print(f"{mode:8s} {m}x{k}x{n} {name:29s} {timed(f, vkt.vulkan.synchronize, 200) * 1e3:.4f} ms, "
              f"{n_dispatches} dispatches", flush=True)
