# The caching allocator seen from Python: stats, 4-byte rounding, reuse, empty_cache, the memory
# limit and OutOfMemoryError, and reuse of freed ranges in stream order: at once, with the GPU's work
# on them ordered and the host's waiting for it.
import gc
import re

import numpy as np
import pytest

import vkt
from conftest import assert_bits_equal

vk = vkt.vulkan
MiB = 1 << 20


@pytest.fixture(autouse=True)
def memory_returns_to_start():
    """Every test here must give back all it allocated once its tensors are gone. Fusion is off: these
    tests record ops and free their inputs while the GPU may still use them (a pending op records
    nothing, and holds its inputs)."""
    if not vk.is_available():
        yield
        return
    vk.set_fusion(False)
    gc.collect()
    vk.synchronize()
    start = vk.memory_allocated()
    yield
    gc.collect()
    vk.synchronize()
    vk.set_fusion(True)
    assert vk.memory_allocated() == start


@pytest.fixture
def memory_limit(dev):
    """Sets a cap on reserved memory for one test and always removes it afterwards."""
    try:
        yield vk.set_memory_limit
    finally:
        vk.set_memory_limit(None)


STAT_KEYS = [
    "allocated_bytes.all.current",
    "reserved_bytes.all.current",
    "allocated_bytes.all.peak",
    "num_alloc_retries",
    "num_ooms",
]


def test_stats_functions(dev):
    stats = vk.memory_stats()
    assert isinstance(stats, dict)
    for key in STAT_KEYS:
        assert isinstance(stats[key], int), key
    assert stats["allocated_bytes.all.current"] == vk.memory_allocated()
    assert stats["reserved_bytes.all.current"] == vk.memory_reserved()
    assert stats["allocated_bytes.all.peak"] == vk.max_memory_allocated()
    assert vk.memory_reserved() >= vk.memory_allocated() >= 0
    assert vk.max_memory_allocated() >= vk.memory_allocated()


# (numel, dtype, bytes counted: the size rounded up to 4)
SIZES = [
    (3, vkt.uint8, 4),
    (1, vkt.uint8, 4),
    (4, vkt.uint8, 4),
    (5, vkt.bool, 8),
    (3, vkt.float16, 8),
    (1000, vkt.float32, 4000),
    (1001, vkt.float16, 2004),
    (7, vkt.float64, 56),
    (5, vkt.int64, 40),
    (1 << 20, vkt.int32, 4 << 20),
]


@pytest.mark.parametrize("numel,dtype,nbytes", SIZES, ids=[f"{n}x{d}" for n, d, _ in SIZES])
def test_allocation_rounded_to_4_bytes(dev, numel, dtype, nbytes):
    before = vk.memory_allocated()
    t = vkt.empty(numel, dtype=dtype, device=dev)
    assert vk.memory_allocated() - before == nbytes
    assert vk.max_memory_allocated() >= before + nbytes
    del t
    assert vk.memory_allocated() == before


def test_views_allocate_nothing(dev):
    t = vkt.zeros(64, 32, device=dev)
    before = vk.memory_allocated()
    views = [t.T, t[::2], t.view(-1), t[None].expand(3, 64, 32), t[5]]
    assert vk.memory_allocated() == before
    del t
    # The views keep the storage alive.
    assert vk.memory_allocated() == before
    assert np.asarray(views[1]).shape == (32, 32)
    del views


def test_reuse_after_free(dev):
    t = vkt.zeros(1 << 20, device=dev)
    vk.synchronize()
    reserved = vk.memory_reserved()
    del t
    vk.synchronize()
    for _ in range(5):
        t = vkt.zeros(1 << 20, device=dev)
        vk.synchronize()
        assert vk.memory_reserved() == reserved
        del t


def test_peak_and_reset(dev):
    vk.reset_peak_memory_stats()
    base = vk.memory_allocated()
    assert vk.max_memory_allocated() == base
    t = vkt.empty(2 * MiB, dtype=vkt.uint8, device=dev)
    del t
    assert vk.max_memory_allocated() == base + 2 * MiB
    vk.reset_peak_memory_stats()
    assert vk.max_memory_allocated() == base


def test_empty_cache(dev):
    vk.synchronize()
    vk.empty_cache()
    r0 = vk.memory_reserved()
    tensors = [vkt.ones(16 * MiB, dtype=vkt.uint8, device=dev) for _ in range(4)]
    vk.synchronize()
    r1 = vk.memory_reserved()
    assert r1 >= vk.memory_allocated()
    del tensors
    vk.synchronize()
    assert vk.memory_reserved() == r1, "freeing a tensor keeps its memory cached"
    vk.empty_cache()
    r2 = vk.memory_reserved()
    assert r2 <= r0
    assert r2 < r1 or r1 == r0
    assert r2 >= vk.memory_allocated()
    # The allocator still works after giving its blocks back.
    t = vkt.full((1000,), 3.0, device=dev)
    assert np.asarray(t).sum() == 3000.0


def test_empty_cache_keeps_live_tensors(dev):
    a = np.arange(100_000, dtype=np.float32)
    t = vkt.tensor(a, device=dev)
    junk = vkt.zeros(8 * MiB, dtype=vkt.uint8, device=dev)
    del junk
    vk.synchronize()
    vk.empty_cache()
    assert_bits_equal(np.asarray(t), a)


def test_out_of_memory(memory_limit, dev):
    keep_ref = np.arange(1000, dtype=np.float32) * 0.5
    keep = vkt.tensor(keep_ref, device=dev)
    vk.synchronize()
    vk.empty_cache()
    ooms = vk.memory_stats()["num_ooms"]
    memory_limit(64 * MiB)
    tensors = []
    with pytest.raises(vkt.OutOfMemoryError) as info:
        for _ in range(64):
            tensors.append(vkt.empty(4 * MiB, dtype=vkt.float32, device=dev))
    assert isinstance(info.value, RuntimeError)
    assert len(tensors) <= 4
    assert vk.memory_reserved() <= 64 * MiB
    message = str(info.value)
    assert re.search(r"16777216|16(\.0+)? ?Mi?B", message), message
    assert vk.memory_stats()["num_ooms"] > ooms
    n_fit = len(tensors)
    del tensors
    vk.synchronize()
    # The failed allocation left the allocator usable: new tensors fit again, old ones kept their values.
    again = [vkt.full((4 * MiB,), 2.0, device=dev) for _ in range(n_fit)]
    again.append(vkt.full((1000,), 2.0, device=dev))
    assert np.asarray(again[-1])[-1] == 2.0
    assert_bits_equal(np.asarray(keep), keep_ref)
    del again


def test_out_of_memory_single_request(memory_limit, dev):
    memory_limit(16 * MiB)
    with pytest.raises(vkt.OutOfMemoryError):
        vkt.empty(32 * MiB, dtype=vkt.uint8, device=dev)
    t = vkt.ones(1024, device=dev)
    assert np.asarray(t).sum() == 1024


def test_cached_memory_is_released_before_oom(memory_limit, dev):
    # Free but cached blocks must not cause an OOM: the allocator empties its cache and retries.
    vk.synchronize()
    vk.empty_cache()
    ooms = vk.memory_stats()["num_ooms"]
    memory_limit(64 * MiB)
    a = vkt.empty(40 * MiB, dtype=vkt.uint8, device=dev)
    del a
    vk.synchronize()
    b = vkt.full((12 * MiB,), 1.0, device=dev)
    assert vk.memory_reserved() <= 64 * MiB
    assert vk.memory_stats()["num_ooms"] == ooms
    assert np.asarray(b)[-1] == 1.0
    del b


def test_out_of_memory_is_runtime_error():
    assert issubclass(vkt.OutOfMemoryError, RuntimeError)


def test_memory_limit_removed(memory_limit, dev):
    memory_limit(8 * MiB)
    memory_limit(None)
    t = vkt.empty(16 * MiB, dtype=vkt.uint8, device=dev)
    del t


def test_reuse_ordered_after_gpu_reads(dev):
    # The source of a device copy is freed right after the copy is recorded; a new tensor of the
    # same size may get its memory, but must not overwrite it before the GPU has read it.
    rng = np.random.default_rng(0)
    for i in range(50):
        a_ref = rng.standard_normal((64, 48)).astype(np.float32)
        a = vkt.tensor(a_ref, device=dev)
        b = a.T.contiguous()
        del a
        c = vkt.full((64, 48), float(i), device=dev)
        assert_bits_equal(np.asarray(b), np.ascontiguousarray(a_ref.T))
        assert np.all(np.asarray(c) == float(i))
        del b, c


def test_reuse_ordered_after_gpu_reads_batched(dev):
    # The same with many copies in flight before any read.
    rng = np.random.default_rng(1)
    refs, outs = [], []
    for i in range(50):
        a_ref = rng.standard_normal((32, 40)).astype(np.float32)
        a = vkt.tensor(a_ref, device=dev)
        outs.append(a[:, ::2].T.contiguous())
        refs.append(np.ascontiguousarray(a_ref[:, ::2].T))
        del a
        outs.append(vkt.full((32, 40), float(i), device=dev))
        refs.append(np.full((32, 40), float(i), dtype=np.float32))
    for o, r in zip(outs, refs):
        assert_bits_equal(np.asarray(o), r)


def test_freed_memory_reused_while_gpu_runs(memory_limit, dev):
    # Results dropped while their batch is still being recorded give their memory to the next ones at
    # once, as PyTorch's allocator does in stream order, when new memory would pass the limit (or a soft
    # cap), without the synchronize (a retry) that reusing it only after the GPU is done would take.
    n = 1 << 20  # 4 MiB of float32: 20 of them are more than a 64 MiB block holds
    x = vkt.tensor(np.arange(n, dtype=np.float32), device=dev)
    vk.synchronize()
    vk.empty_cache()
    reserved, retries = vk.memory_reserved(), vk.memory_stats()["num_alloc_retries"]
    memory_limit(reserved)
    kept = []
    for i in range(20):
        y = x * float(i)
        if i % 5 == 0:
            kept.append((i, y))
        del y
    assert vk.memory_reserved() == reserved and vk.memory_stats()["num_alloc_retries"] == retries
    for i, y in kept:
        assert_bits_equal(np.asarray(y), np.arange(n, dtype=np.float32) * np.float32(i))


def test_upload_waits_for_previous_owner(memory_limit, dev):
    # A large range freed while a recorded op still reads it goes to the next tensor of its size (past the
    # limit, or a soft cap); the upload into it must wait for that op, not overwrite what it reads.
    n = 10 << 20  # 40 MiB: a block of its own
    vk.synchronize()
    vk.empty_cache()
    a = vkt.tensor(np.full(n, 1.0, dtype=np.float32), device=dev)
    b = a * 2.0  # recorded, not submitted
    reserved = vk.memory_reserved()
    memory_limit(reserved)
    del a
    c = vkt.tensor(np.full(n, 5.0, dtype=np.float32), device=dev)
    assert vk.memory_reserved() == reserved  # c has a's range
    assert np.all(np.asarray(b) == 2.0) and np.all(np.asarray(c) == 5.0)


def test_memory_returns_after_mixed_work(dev):
    start = vk.memory_allocated()
    a = vkt.tensor(np.ones((100, 100), dtype=np.float32), device=dev)
    b = a.T.contiguous()
    c = vkt.zeros_like(b)
    d = b.to("cpu").to(dev)
    assert vk.memory_allocated() >= start + 4 * 40000
    del a, b, c, d
    assert vk.memory_allocated() == start


def fill_until_oom(dev, chunk_bytes):
    """Allocates chunk_bytes tensors until OutOfMemoryError; returns them."""
    filler = []
    with pytest.raises(vkt.OutOfMemoryError):
        for _ in range(10_000):
            filler.append(vkt.empty(chunk_bytes, dtype=vkt.uint8, device=dev))
    return filler


def test_out_of_memory_mid_batch(memory_limit, dev):
    """OOM in the middle of a batch of recorded ops: the results recorded before it are intact, the
    op that failed made no tensor and wrote nothing, and work goes on once memory is freed."""
    n = 1 << 18  # 1 MiB of float32
    ref = np.arange(n, dtype=np.float32) / n
    vk.synchronize()
    vk.empty_cache()
    memory_limit(24 * MiB)
    x = vkt.tensor(ref, device=dev)
    results = []
    with pytest.raises(vkt.OutOfMemoryError):
        for i in range(100):  # nothing reads in between, so everything is recorded in few batches
            results.append((x * float(i) + 1.0).relu())
    assert 10 <= len(results) < 24
    for i, r in enumerate(results):
        assert_bits_equal(np.asarray(r), np.maximum(ref * np.float32(i) + np.float32(1.0), 0))
    del results
    # Nearly full: in-place ops whose temporary cannot be had must leave their target untouched.
    acc = vkt.full((n,), 3.0, device=dev)
    wide = vkt.tensor(ref.astype(np.float64), device=dev)  # 2 MiB
    filler = fill_until_oom(dev, 1 << 19)
    filler.pop()  # half a MiB free: room for small results, none for a float64 temporary of acc's size
    acc.add_(1.0)  # recorded, not yet read
    with pytest.raises(vkt.OutOfMemoryError):
        acc.add_(wide)  # float64 result, cast into acc through a temporary
    with pytest.raises(vkt.OutOfMemoryError):
        vkt.matmul_add_relu(x.view(512, 512), x.view(512, 512), x[:512])
    with pytest.raises(vkt.OutOfMemoryError):
        vkt.cat([x, x])
    small = (x[:1000] * 2).sum()  # still fits
    assert np.asarray(acc).tolist() == [4.0] * n
    assert small.item() == pytest.approx(float((ref[:1000] * 2).sum()), rel=1e-5)
    del filler
    acc.add_(wide)
    assert_bits_equal(np.asarray(acc), (4.0 + ref.astype(np.float64)).astype(np.float32))
    del acc, wide, x, small


def test_vulkan_three_quarters_of_the_memory_hold_tensors():
    # NVIDIA's driver maps only part of a GPU's memory into the host's address space: a process got 39 of an
    # H100's 80 GiB in mapped blocks, then OutOfMemoryError. Blocks past that take memory the host does not see,
    # which uploads and reads reach through staging buffers. Three quarters of the adapter's memory is taken, and
    # tensors made after it still move data both ways and compute.
    vk.synchronize()
    vk.empty_cache()
    piece = vk.get_device_properties().total_memory // 32 // 4  # float32 elements
    held = [vkt.empty(piece, device="vulkan") for _ in range(24)]
    a = np.arange(1 << 20, dtype=np.float32)
    x = vkt.tensor(a, device="vulkan")
    assert_bits_equal(np.asarray(x), a)
    held[-1][-3:] = vkt.tensor(a[:3], device="vulkan")
    assert_bits_equal(np.asarray(held[-1][-3:]), a[:3])
    assert_bits_equal(np.asarray(x * 2 + 1), a * 2 + 1)
    del held, x
    vk.synchronize()
    vk.empty_cache()
