"""The MLP training step's products timed alone, fused and not (a diagnostic for issue 19, not a benchmark
table): a linear layer's forward with relu, and its backward products of relu's gradient, at bench.py's MLP
shapes. Run on the GPU machine, once as is and once with VKT_FUSION=0:
    python3 benchmarks/mlp_pieces.py && VKT_FUSION=0 python3 benchmarks/mlp_pieces.py"""
import os
import sys

import numpy as np

import vkt

sys.path.insert(0, os.path.dirname(__file__))
from bench import timed  # noqa: E402

mode = "unfused" if os.environ.get("VKT_FUSION") == "0" else "fused"
rng = np.random.default_rng(0)
for m, k, n in [(256, 784, 1024), (256, 1024, 1024), (256, 1024, 10)]:
    x, w, b, g = (vkt.tensor(rng.standard_normal(s).astype(np.float32), device="vulkan")
                  for s in ((m, k), (n, k), (n,), (m, n)))
    y = (x @ w.T + b).relu()
    times = [timed(f, vkt.vulkan.synchronize, 200) * 1e3 for f in (
        lambda: (x @ w.T + b).relu(), lambda: vkt.where(y > 0, g, 0) @ w, lambda: vkt.where(y > 0, g, 0).T @ x)]
    print(f"{mode:8s} {m}x{k}x{n}: relu(x @ w.T + b) {times[0]:.4f} ms, where(y > 0, g, 0) @ w {times[1]:.4f}, "
          f"where(y > 0, g, 0).T @ x {times[2]:.4f}", flush=True)
