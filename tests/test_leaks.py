# Leaks: 10,000 iterations of a small chain of ops keep memory_allocated() flat and the process RSS
# within a few MiB, on the cpu and the vulkan device; at interpreter exit every Vulkan object is
# destroyed (the validation layer, which reports any left at vkDestroyDevice/vkDestroyInstance, says
# nothing; python/vkt/__init__.py prints what it says at exit to stderr).
import gc
import os

import numpy as np
import pytest

import vkt
from conftest import run_python

ITERATIONS = 10_000
WARMUP = ITERATIONS  # one identical round: late in a full test session the first round still grows RSS
# once on lavapipe (by about 7 MiB), and the rounds after it stay flat
RSS_SLACK = 4 << 20  # bytes


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def allocated(device):
    if device == "cpu":
        return 0
    vkt.vulkan.synchronize()
    return vkt.vulkan.memory_allocated()


def chain(x, w, i):
    y = (x * 0.5 + float(i % 7)).relu()          # elementwise
    z = (y.view(8, 8) @ w).sum(dim=0)             # matmul, reduction
    return vkt.cat([z, y[:8]]).softmax(dim=0)     # shape op, softmax


def test_loop_keeps_memory_flat(device):
    x = vkt.tensor(np.linspace(-1, 1, 64, dtype=np.float32), device=device)
    w = vkt.ones(8, 8, device=device)
    for i in range(WARMUP):
        r = chain(x, w, i)
        if i % 500 == 0:
            r.cpu()
    r.cpu()
    del r
    gc.collect()
    mem0, rss0 = allocated(device), rss()
    for i in range(ITERATIONS):
        r = chain(x, w, i)
        if i % 500 == 0:
            r.cpu()  # a read now and then: batches finish and freed ranges are reused
    want = chain(x.cpu(), w.cpu(), ITERATIONS - 1).numpy()
    assert np.allclose(r.cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    del r
    gc.collect()
    mem1, rss1 = allocated(device), rss()
    print(f"{device}: memory_allocated {mem0} -> {mem1} bytes, RSS {rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MiB")
    assert mem1 == mem0
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return  # AddressSanitizer's quarantine holds freed memory back by design
    assert rss1 - rss0 < RSS_SLACK, f"RSS grew by {(rss1 - rss0) / 2**20:.1f} MiB over {ITERATIONS} iterations"


EXIT_SCRIPT = r"""
import numpy as np, vkt
F = vkt.nn.functional
print(vkt.vulkan.validation_enabled())
a = vkt.tensor(np.random.rand(33, 17).astype(np.float32), device="vulkan")
b = F.gelu(a.T @ a).softmax(dim=1)
c = vkt.cat([b, b[:3]]).sum(dim=0)
c[2] = 5.0
big = vkt.empty(20 << 20, dtype=vkt.uint8, device="vulkan")   # a dedicated block
print(float(c.sum().item()) > 0)
d = vkt.gather(b, 1, vkt.zeros(17, 2, dtype=vkt.int64, device="vulkan")) * 3  # still recorded at exit
live = [b.to(vkt.float16), b.to(vkt.int32), a.mean()]          # tensors alive at exit
"""


def test_no_vulkan_objects_left_at_exit(dev):
    r = run_python(EXIT_SCRIPT, env={"VKT_VALIDATION": "1"})
    assert r.returncode == 0, r.stderr
    enabled, ran = r.stdout.split()
    if enabled != "True":
        pytest.skip("the Khronos validation layer is not installed")
    assert ran == "True"
    assert "alidation" not in r.stderr and "VUID" not in r.stderr, r.stderr
