"""One training-style step repeated, for VKT_PROFILE=1 to break down by kernel (a diagnostic, not a benchmark
table): `softmax` is softmax(x @ w).sum() forward + backward at 4096^2, `mar` matmul_add_relu forward + backward
at 8x1024x1024x1024, `layernorm` layer_norm forward + backward at 8192 x 1024, `mlp` bench.py's MLP AdamW step
at batch 256, `conv` conv2d forward + backward at 32x64x56x56 (3x3, padding 1, a random output gradient). Every step's gradients are held until the
device is done, so that all of them are computed (vkt never computes a pending result nobody holds). Run on the GPU machine, one case a process:
    VKT_PROFILE=1 python3 benchmarks/profile_steps.py softmax"""
import sys
import time

import numpy as np

import vkt

rng = np.random.default_rng(0)
case, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20


def leaves(*shapes, scale=1.0):
    return [vkt.tensor((rng.standard_normal(s) * scale).astype(np.float32), device="vulkan", requires_grad=True)
            for s in shapes]


if case == "softmax":
    x, w = leaves((4096, 4096), (4096, 4096), scale=1 / 64)

    def step():
        x.grad = w.grad = None
        (x @ w).softmax(-1).sum().backward()
        return x.grad, w.grad
elif case == "mar":
    x, w, b = leaves((8, 1024, 1024), (1024, 1024), (1024,))

    def step():
        x.grad = w.grad = b.grad = None
        vkt.matmul_add_relu(x, w, b).sum().backward()
        return x.grad, w.grad, b.grad
elif case == "layernorm":
    x, g, b = leaves((8192, 1024), (1024,), (1024,))

    def step():
        x.grad = g.grad = b.grad = None
        vkt.nn.functional.layer_norm(x, (1024,), g, b).sum().backward()
        return x.grad, g.grad, b.grad
elif case == "mlp":
    nn = vkt.nn
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).to("vulkan")
    opt = vkt.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xb = vkt.tensor(rng.standard_normal((256, 784)).astype(np.float32), device="vulkan")
    yb = vkt.tensor(rng.integers(0, 10, 256), device="vulkan")

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(xb), yb).backward()
        opt.step()
elif case == "conv":
    x, w, b = leaves((32, 64, 56, 56), (64, 64, 3, 3), (64,), scale=0.1)
    g = vkt.tensor(rng.standard_normal((32, 64, 56, 56)).astype(np.float32), device="vulkan")

    def step():
        x.grad = w.grad = b.grad = None
        y = vkt.nn.functional.conv2d(x, w, b, padding=1)
        y.backward(g)
        return y, x.grad, w.grad, b.grad
else:
    raise SystemExit(f"unknown case {case!r}: softmax, mar, layernorm, mlp or conv")

kept = step()
vkt.vulkan.synchronize()
vkt.vulkan.reset_kernel_stats()
start = time.perf_counter()
kept = [step() for _ in range(steps)]
vkt.vulkan.synchronize()
wall = (time.perf_counter() - start) / steps
stats = vkt.vulkan.kernel_stats()
print(f"{case}: {wall * 1e3:.3f} ms a step (wall), {stats['dispatches'] / steps:.1f} dispatches a step", flush=True)
