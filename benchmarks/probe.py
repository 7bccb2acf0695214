"""Times a few large matmul cases on vkt alone and checks a sample of their rows against NumPy: the tool
for trying shader variants, one case per fresh process (see RESULTS.md).

    VKT_SHADER_DIR=variant/ [VKT_PIPELINE_STATS=1] python benchmarks/probe.py CASE [CASE...]

Cases: f32_2048, f32_4096, fused_8x1024, bmm_8x1024, splitk_64x65536, f16_2048, f16_4096, f32_4096_at,
f16_4096_at and _bt with a or b stored transposed, gwt_8192_bt and xtg_8192_at (the products of
matmul_add_relu's backward at 8x1024^3), and gelu_8x1024 / relu_8x1024: gelu(x @ w + b) and
relu(x @ w + b) through fusion's matmul epilogue. Prints the time (best of 3 rounds), TFLOP/s, the largest error over
eps * sqrt(k), and a second timing of the same tensors.
relu_rounds times relu on 2^26 floats in rounds of 20, 60 and 200 calls and prints the memory reserved.
"""
import math
import os
import sys
import time

import numpy as np

import vkt
import bench

CASES = {  # m, k, n, batch, dtype, what follows the product: "" (nothing), "fused" (matmul_add_relu), gelu, relu
    "f32_2048": (2048, 2048, 2048, 1, "float32", ""),
    "f32_4096": (4096, 4096, 4096, 1, "float32", ""),
    "f32_4096_at": (4096, 4096, 4096, 1, "float32", ""),  # a stored transposed ([k, m], read as a.T)
    "f32_4096_bt": (4096, 4096, 4096, 1, "float32", ""),  # b stored transposed ([n, k])
    "fused_8x1024": (1024, 1024, 1024, 8, "float32", "fused"),
    "gelu_8x1024": (1024, 1024, 1024, 8, "float32", "gelu"),
    "relu_8x1024": (1024, 1024, 1024, 8, "float32", "relu"),
    "bmm_8x1024": (1024, 1024, 1024, 8, "float32", ""),
    "splitk_64x65536": (64, 65536, 64, 1, "float32", ""),
    "gwt_8192_bt": (8192, 1024, 1024, 1, "float32", ""),  # issue 16's backward: g @ w^T, w stored [n, k]
    "xtg_8192_at": (1024, 8192, 1024, 1, "float32", ""),  # ... and x^T @ g, x stored [k, m] (split-K)
    "f32_256x1024": (256, 1024, 1024, 1, "float32", ""),  # an MLP layer's 64 tiles: split-K in 4 slices
    "relu_256x1024": (256, 1024, 1024, 1, "float32", "relu"),  # the same, its epilogue in the slices' adds
    "f16_2048": (2048, 2048, 2048, 1, "float16", ""),
    "f16_4096": (4096, 4096, 4096, 1, "float16", ""),
    "f16_4096_at": (4096, 4096, 4096, 1, "float16", ""),
    "f16_4096_bt": (4096, 4096, 4096, 1, "float16", ""),
}
# Each epilogue as vkt runs it and in float64 NumPy: a bias of shape [n] for gelu and relu, whose sum with
# the product fusion takes into the product's store.
erf = np.vectorize(math.erf)
EPILOGUES = {
    "": (lambda x, y, z: x @ y, lambda r, c: r),
    "fused": (lambda x, y, z: vkt.matmul_add_relu(x, y, z), lambda r, c: np.maximum(r + c, 0)),
    "gelu": (lambda x, y, z: vkt.nn.functional.gelu(x @ y + z), lambda r, c: 0.5 * (r + c) * (1 + erf((r + c) / np.sqrt(2)))),
    "relu": (lambda x, y, z: (x @ y + z).relu(), lambda r, c: np.maximum(r + c, 0)),
}
EPS = {"float32": 1e-6, "float16": 1e-3}


def timed(fn, reps):
    return bench.timed(fn, vkt.vulkan.synchronize, reps)


def relu_rounds():
    """relu on 2^26 floats in rounds of 20, 60 and 200 calls: time per call and the memory the allocator
    holds, which a long round of large results drives up until its freed ranges are reused."""
    x = vkt.tensor(np.random.default_rng(0).standard_normal(1 << 26).astype(np.float32), device="vulkan")
    for reps in (20, 60, 200):
        print(f"relu 2^26, rounds of {reps}: {timed(lambda: x.relu(), reps) * 1e3:.4f} ms, "
              f"reserved {vkt.vulkan.memory_reserved() / 2**30:.2f} GiB", flush=True)


def probe(name, rng):
    m, k, n, batch, dtype, epilogue = CASES[name]
    shape_a, shape_b = ((batch, m, k), (batch, k, n)) if batch > 1 else ((m, k), (k, n))
    a, b = rng.standard_normal(shape_a).astype(dtype), rng.standard_normal(shape_b).astype(dtype)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    if name.endswith("_at"):
        x = vkt.tensor(np.ascontiguousarray(a.swapaxes(-1, -2)), device="vulkan").transpose(-1, -2)
    if name.endswith("_bt"):
        y = vkt.tensor(np.ascontiguousarray(b.swapaxes(-1, -2)), device="vulkan").transpose(-1, -2)
    run, finish = EPILOGUES[epilogue]
    c = rng.standard_normal((batch, m, n) if epilogue == "fused" else n).astype(dtype)
    z = vkt.tensor(c, device="vulkan")
    fn = lambda: run(x, y, z)  # noqa: E731
    out = fn().cpu().numpy().astype(np.float64)
    rows = np.r_[0:40, m - 40:m]
    ref = finish(a.astype(np.float64)[..., rows, :] @ b.astype(np.float64), c[..., rows, :] if c.ndim > 1 else c)
    err = np.abs(out[..., rows, :] - ref).max() / (np.sqrt(k) * EPS[dtype])
    flops = 2 * m * n * k * batch
    reps = max(3, int(4e11 / flops))
    t = timed(fn, reps)
    print(f"{os.environ.get('VKT_SHADER_DIR', 'built-in'):12s} {name:13s} {t * 1e3:8.4f} ms "
          f"{flops / t / 1e12:7.2f} TFLOP/s  err/(eps sqrt k) {err:.3f}  again {timed(fn, reps) * 1e3:.4f} ms",
          flush=True)


if __name__ == "__main__":
    if not sys.argv[1:] or any(c not in CASES and c != "relu_rounds" for c in sys.argv[1:]):
        sys.exit(f"usage: probe.py CASE [CASE...], cases: {', '.join(CASES)}, relu_rounds")
    rng = np.random.default_rng(0)
    for case in sys.argv[1:]:
        relu_rounds() if case == "relu_rounds" else probe(case, rng)
