# Threads: 8 Python threads issuing ops on shared and private tensors give bit-for-bit the results of
# one thread doing the same work; a thread waiting on the GPU releases the GIL, and waits from several
# threads at once (reads, synchronize, empty_cache) are safe.
import threading
import time

import numpy as np
import pytest

import vkt
from conftest import assert_bits_equal

THREADS = 8
ROUNDS = 40  # per thread: 8 threads hold about 1 s on lavapipe with 2 cores (the same again for one thread)


def shared_inputs(device):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((48, 48)).astype(np.float32)
    idx = rng.integers(0, 48, size=(48, 4)).astype(np.int64)
    return vkt.tensor(a, device=device), vkt.tensor(idx, device=device)


def work(k, device, a, idx, rounds, sync_hook=None):
    """One thread's job: a chain through every op family on private tensors that read the shared
    ones, with reads (waits) in the middle. Returns NumPy arrays of its results."""
    p = vkt.tensor(np.full((48, 48), 0.01 * (k + 1), dtype=np.float32), device=device)
    out = []
    for r in range(rounds):
        y = vkt.matmul_add_relu(a, p, a[r % 48])              # shared @ private + shared row
        s = y.softmax(dim=1) * 48.0 - 1.0
        g = vkt.gather(s, 1, idx)                              # shared index
        c = vkt.cat([g, s[:, :4].T.contiguous().T], dim=1)
        c[:, 0] = float(k)                                      # setitem on a private result
        m = c.masked_fill(c > 0.5, 0.5).tril()
        p = (p * 0.5 + vkt.tanh(m.sum(dim=1, keepdim=True)) * 0.01).contiguous()
        out.append(m.mean(dim=0).cpu().numpy())                # a read: this thread waits
        if sync_hook:
            sync_hook(r)
    out.append(p.cpu().numpy())
    return out


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_threads_match_one_thread(device, request):
    if device == "vulkan":
        request.getfixturevalue("dev")
    a, idx = shared_inputs(device)
    expected = [work(k, device, a, idx, ROUNDS) for k in range(THREADS)]

    def hook(r):  # waits of every kind from several threads at once
        if device != "vulkan":
            return
        if r % 3 == 0:
            vkt.vulkan.synchronize()
        elif r % 5 == 0:
            vkt.vulkan.empty_cache()

    got = [None] * THREADS
    errors = []
    barrier = threading.Barrier(THREADS)

    def run(k):
        try:
            barrier.wait()
            got[k] = work(k, device, a, idx, ROUNDS, hook)
        except BaseException as e:  # reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    held = time.perf_counter() - start
    assert not errors, errors
    for k in range(THREADS):
        assert len(got[k]) == len(expected[k])
        for g, e in zip(got[k], expected[k]):
            assert_bits_equal(g, e)
    print(f"{THREADS} threads x {held:.2f} s on {device}")


def test_wait_releases_gil(dev):
    """A thread blocked on the GPU lets a pure-Python thread run meanwhile."""
    a = vkt.randn(384, 384, device=dev)
    vkt.vulkan.synchronize()
    count = 0
    stop = threading.Event()

    def counter():
        nonlocal count
        while not stop.is_set():
            count += 1

    t = threading.Thread(target=counter)
    t.start()
    try:
        x = a
        for _ in range(8):
            x = (x @ a).relu() * 1e-3
        before = count
        t0 = time.perf_counter()
        x.sum().item()  # waits for the chain: well over 100 ms on lavapipe
        waited = time.perf_counter() - t0
        during = count - before
    finally:
        stop.set()
        t.join()
    # With the GIL held through the wait the counter could not move at all.
    assert during > 1000, f"counter advanced {during} times during a {waited * 1e3:.0f} ms wait"


def test_concurrent_reads_of_one_tensor(dev):
    """Several threads waiting on the same batch and reading the same tensor."""
    a = vkt.randn(256, 256, device=dev)
    x = (a @ a).relu()
    want = None
    results = [None] * THREADS
    barrier = threading.Barrier(THREADS)

    def read(k):
        barrier.wait()
        results[k] = x.cpu().numpy()

    threads = [threading.Thread(target=read, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    want = x.cpu().numpy()
    for r in results:
        assert_bits_equal(r, want)
