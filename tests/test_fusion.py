# Automatic fusion (issue 19): pending elementwise chains become one kernel on a Vulkan device.
# Checks what fuses (kernel_stats), that results are bit-identical to the unfused path and close to
# NumPy's float64, that intermediates are written only when referenced, and that in-place writes,
# views, reads and threads in the middle of a chain see the right values.
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkt
from conftest import assert_close
from test_ops import BINARY as OP_BINARY
from test_ops import UNARY as OP_UNARY
from test_ops import make


def run(fn, *arrays, fused=True):
    """fn over vulkan copies of arrays, with fusion on or off, as NumPy arrays."""
    vkt.vulkan.set_fusion(fused)
    try:
        out = fn(*[vkt.tensor(a, device="vulkan") for a in arrays])
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(o.cpu().numpy() for o in outs)
    finally:
        vkt.vulkan.set_fusion(True)


def assert_same_bits(fn, *arrays):
    fused, unfused = run(fn, *arrays, fused=True), run(fn, *arrays, fused=False)
    for a, b in zip(fused, unfused):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)), (a, b)
    return fused


def stats():
    vkt.vulkan.synchronize()
    return vkt.vulkan.kernel_stats()


def test_chain_is_one_kernel(fusion):
    x = vkt.tensor(np.linspace(-3, 3, 1000, dtype=np.float32), device="vulkan")
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    y = ((x * 1.5 + 0.5).relu() * x).sigmoid()
    assert vkt.vulkan.kernel_stats()["dispatches"] == 0  # nothing ran yet: the chain is pending
    s = stats()  # synchronize() computes it, before a read that may dispatch a copy (a GPU's device memory)
    got = y.cpu().numpy()
    assert s["dispatches"] == 1 and s["fused_kernels"] == [("mul add relu mul sigmoid", 1)]
    xn = np.linspace(-3, 3, 1000).astype(np.float32).astype(np.float64)
    assert_close(got, 1 / (1 + np.exp(-(np.maximum(xn * 1.5 + 0.5, 0) * xn))), rtol=1e-6, atol=1e-6)


def test_matches_unfused_bitwise():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((37, 29)).astype(np.float32), rng.standard_normal((29,)).astype(np.float32)
    assert_same_bits(lambda a, b: vkt.nn.functional.gelu(a * b + 0.25) - vkt.tanh(a) / (b.abs() + 1), x, y)
    assert_same_bits(lambda a, b: (a.exp() * 0.5 + b).log1p().clamp(-1, 2) ** 2, x, y)


UNARY_CASES = [(r, d) for r in OP_UNARY for d in ("float32", "float16", "int32", "int64", "uint8", "bool") if d in r[4]]
BINARY_CASES = [(r, d) for r in OP_BINARY for d in ("float32", "float16", "int32", "int64") if d in r[3]]


@pytest.mark.parametrize("row, dtype", UNARY_CASES, ids=[f"{r[0]}-{d}" for r, d in UNARY_CASES])
def test_every_unary_op_fuses_bitwise(row, dtype):
    """Each op of the op tests' table between two others, transposed: the same bits as unfused."""
    name, fn, _, domain, dtypes = row
    x = make((5, 7), "t", dtype, domain)
    if dtype == "bool":  # nothing arithmetic keeps bool: the op alone
        assert_same_bits(fn, x)
    else:
        assert_same_bits(lambda a: fn(a * 1) * 1, x)


@pytest.mark.parametrize("row, dtype", BINARY_CASES, ids=[f"{r[0]}-{d}" for r, d in BINARY_CASES])
def test_every_binary_op_fuses_bitwise(row, dtype):
    name, fn, _, dtypes, domain = row
    a, b = make((6, 4), "s", dtype, "any", 1), make((1, 4), "c", dtype, domain, 2)
    assert_same_bits(lambda x, y: fn(x * 1, y + 0) * 1, a, b)


def test_constants_do_not_recompile(fusion):
    x = vkt.ones(64, device="vulkan")
    for c in (0.5, 1.5, 2.5):
        (x * c + c).cpu()
    assert stats()["fused_kernels"] == [("mul add", 3)]


def test_where_numbers_are_constants(fusion):
    """where's Python numbers (a, b or both) are push constants of the fused kernel: one kernel per chain's
    structure whatever their values, no memory for them, the same bits as the unfused shader."""
    a = np.linspace(-2, 2, 64, dtype=np.float32)
    x = vkt.tensor(a, device="vulkan")
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    for v in (0.5, -1.5, float("nan")):
        (vkt.where(x > 0, x * 2, v) + 1).cpu()
        (vkt.where(x > 0, v, x * 2) + 1).cpu()
        (vkt.where(x > 0, v, 3.0) * x).cpu()
    kernels = stats()["fused_kernels"]
    assert len(kernels) == 3 and all(n == 3 and "where" in ops for ops, n in kernels), kernels
    base = vkt.vulkan.memory_allocated()
    vkt.vulkan.reset_peak_memory_stats()
    y = vkt.where(x > 0, 1.5, -0.5) * x
    vkt.vulkan.synchronize()
    assert vkt.vulkan.max_memory_allocated() - base == 4 * 64  # the output only
    np.testing.assert_array_equal(y.cpu().numpy(), np.where(a > 0, 1.5, -0.5).astype(np.float32) * a)
    rng = np.random.default_rng(3)
    h, i = rng.standard_normal((5, 7)).astype(np.float16), rng.integers(-9, 9, (5, 7)).astype(np.int32)
    assert_same_bits(lambda t: vkt.where(t.T > 0, 0.1, t.T * 3) * t.T, h)  # 0.1 rounded to float16 as stored
    assert_same_bits(lambda t: vkt.where(t[:, None, 1:] > 0, t[:, None, 1:] * 2, -7) - 1, i)
    assert_same_bits(lambda t: vkt.where(t * 1 > 0, True, t > 3) | (t < -3), i)
    assert_same_bits(lambda t: vkt.where(t.double() > 0, 1, 0) + t.long(), i)  # int64 from two ints

    def epilogue_and_reduction(p, q):  # a product's epilogue and a reduction's load take them too
        y = p @ q
        return vkt.where(y > 0, 0.5, y * 2) + 1, vkt.where(p > 0, 2.0, -1.0).sum(dim=1)

    vkt.vulkan.reset_kernel_stats()
    assert_same_bits(epilogue_and_reduction, rng.standard_normal((16, 8)).astype(np.float32),
                     rng.standard_normal((8, 12)).astype(np.float32))
    kernels = [ops for ops, _ in stats()["fused_kernels"]]
    assert "matmul gt mul where add" in kernels and "gt where sum" in kernels, kernels


def test_intermediates_kept_are_written_once(fusion):
    x = vkt.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device="vulkan")
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    y = x * 2
    z = y + 1
    w = (z * y).neg()
    s = stats()  # counted before the reads: on a GPU's device memory a read dispatches a copy
    assert s["dispatches"] == 1 and s["fused_launches"] == 1  # y and z are written by the kernel computing w
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(w.cpu().numpy(), -((a * 2 + 1) * a * 2))
    np.testing.assert_array_equal(y.cpu().numpy(), a * 2)
    np.testing.assert_array_equal(z.cpu().numpy(), a * 2 + 1)
    assert stats()["fused_launches"] == 1  # reading y and z computed nothing again


def test_dropped_intermediates_allocate_nothing(fusion):
    x = vkt.ones(1 << 16, device="vulkan")
    vkt.vulkan.synchronize()
    base = vkt.vulkan.memory_allocated()
    vkt.vulkan.reset_peak_memory_stats()
    y = ((x * 1.5 + 0.5).relu() * x).sigmoid()
    vkt.vulkan.synchronize()
    assert vkt.vulkan.max_memory_allocated() - base == 4 << 16  # the output only
    del y


def test_in_place_write_to_an_input_computes_readers_first(fusion):
    x = vkt.tensor([1.0, 2.0, 3.0], device="vulkan")
    y = x * 2
    x.add_(10)
    np.testing.assert_array_equal(y.cpu().numpy(), [2, 4, 6])
    x[0] = 100
    z = x + 1
    x.fill_(0)
    np.testing.assert_array_equal(z.cpu().numpy(), [101, 13, 14])


def test_in_place_on_a_pending_result(fusion):
    x = vkt.tensor([1.0, -2.0, 3.0], device="vulkan")
    y = x * 2
    y.add_(1)
    y.relu_()
    y[1] = 7
    np.testing.assert_array_equal((y + 0).cpu().numpy(), [3, 7, 7])


def test_in_place_chains_stay_one_kernel(fusion):
    a = np.linspace(-2, 2, 64, dtype=np.float32)
    x = vkt.tensor(a, device="vulkan")
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    y = x * 2
    y.add_(1).relu_()
    y.mul_(x)
    assert stats()["dispatches"] == 1
    np.testing.assert_array_equal(y.cpu().numpy(), np.maximum(a * 2 + 1, 0) * a)
    y = x * 2
    z = y + 1  # reads the old y: computed before y changes
    y.sub_(5)
    np.testing.assert_array_equal(z.cpu().numpy(), a * 2 + 1)
    np.testing.assert_array_equal(y.cpu().numpy(), a * 2 - 5)
    sq = vkt.tensor(a.reshape(8, 8), device="vulkan") * 3
    sq.add_(sq.t())
    np.testing.assert_array_equal(sq.cpu().numpy(), a.reshape(8, 8) * 3 + (a.reshape(8, 8) * 3).T)


def test_in_place_on_a_saved_pending_result_is_caught(fusion):
    x = vkt.tensor([0.5, 1.5], device="vulkan", requires_grad=True)
    y = x.exp()  # exp saves its result for backward
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_views_of_pending_results(fusion):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = vkt.tensor(a, device="vulkan")
    y = x * 2 - 1
    np.testing.assert_array_equal((y[1:, ::2] + 1).cpu().numpy(), (a * 2 - 1)[1:, ::2] + 1)
    y = x * 3
    np.testing.assert_array_equal((y.t() * y.t()).cpu().numpy(), ((a * 3) ** 2).T)
    y = x + 1
    np.testing.assert_array_equal((y.reshape(6, 4) - 1).cpu().numpy(), a.reshape(6, 4))
    y = x - 1
    np.testing.assert_array_equal((y[0] * y).cpu().numpy(), (a - 1)[0] * (a - 1))  # broadcast of a pending row


def test_read_in_the_middle(fusion):
    x = vkt.tensor([1.0, 2.0], device="vulkan")
    y = x * 3
    assert y.tolist() == [3.0, 6.0]
    assert (y + 1).tolist() == [4.0, 7.0]
    assert float((x * 2).sum()) == 6.0  # a reduction computes what it reads


def test_broadcast_strided_and_dtypes():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 1, 7)).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    got = assert_same_bits(lambda x, y: (x * y + x.permute(0, 2, 1)[:, :1, :] * 2).sigmoid(), a, b)
    ref = 1 / (1 + np.exp(-(a * b + a.transpose(0, 2, 1)[:, :1, :] * 2)))
    assert_close(got[0], ref, rtol=1e-5, atol=1e-6)
    h = rng.standard_normal(100).astype(np.float16)
    assert_same_bits(lambda x: (x * 3 + 1).relu() * x, h)  # float16 values rounded between ops, as stored
    special = np.array([0, -0.0, 6e-8, -3e-5, 1e-4, 0.1, 65504, -np.inf, np.inf, np.nan, 1e-7, -2.5], np.float16)
    got = assert_same_bits(lambda x: (x * 0.5 + x) * 3 - x, special)  # subnormals, overflow, inf, NaN
    with np.errstate(all="ignore"):
        half = np.float16
        np.testing.assert_array_equal(got[0], (special * half(0.5) + special) * half(3) - special)
    i = rng.integers(-50, 50, 100).astype(np.int32)
    assert_same_bits(lambda x: ((x * 3 + 7) // 4) % 5 - (x > 0).int(), i)
    assert_same_bits(lambda x: vkt.where(x > 0, x * 2, -x), a)  # a comparison feeds where
    assert_same_bits(lambda x: ((x > 0) & (x < 1)).logical_not(), a)


# A long innermost dim (512 elements or more after merging) runs along x and the rows along y and z
# (elementwise.glsl's ROWS), in fused kernels and, unfused, in each op's own: ragged ends of rows, rows of
# several dims, broadcasts along either, transposes.
ROWS_CASES = [
    ("row sums", [(7, 1030), (7, 1), (1030,)], lambda x, m, g: (x - m) * g + 1),
    ("three dims", [(3, 5, 700), (3, 1, 1), (1, 5, 700)], lambda x, a, b: abs(x * a - b)),
    ("a transposed operand", [(600, 700), (700, 600)], lambda a, b: a * 2 - b.T),
    ("a column of a wider tensor", [(4, 1100), (4, 1)], lambda x, m: x[:, 50:1080] * m + x[:, :1030]),
    ("more rows than a dispatch's y", [(65537, 512), (65537, 1)], lambda x, m: (x - m) * 2),
    ("where", [(5, 700), (5, 1)], lambda x, m: _where(x > m, x, m * 2)),
]


def _where(c, a, b):
    return vkt.where(c, a, b) if isinstance(c, vkt.Tensor) else np.where(c, a, b)


@pytest.mark.parametrize("case", ROWS_CASES, ids=[c[0] for c in ROWS_CASES])
def test_long_rows(fusion, case):
    _, shapes, fn = case
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = assert_same_bits(fn, *arrays)
    with np.errstate(all="ignore"):
        want = fn(*[a.astype(np.float64) for a in arrays])
    assert_close(got[0], want, rtol=1e-5, atol=1e-5)


def test_strided_kernels_keep_within_the_push_constant_limit():
    """Six strided operands and scalars need more push constants than lavapipe's 128 bytes: the
    expression splits (Khronos validation, on in make test, reports any overflow) and stays exact."""
    rng = np.random.default_rng(2)
    shapes = [(4, 6, 5), (6, 5, 4), (5, 4, 6), (4, 5, 6), (6, 4, 5)]
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    orders = [(0, 1, 2), (2, 0, 1), (1, 2, 0), (0, 2, 1), (1, 0, 2)]  # each (4, 6, 5), laid out apart

    def fn(*vs):
        t = [v.permute(*o) for v, o in zip(vs, orders)]
        return ((t[0] * t[1] + 0.5) * (t[2] - t[3] * 2.0) + t[4] * 3.0).tanh()

    got = assert_same_bits(fn, *xs)
    a, b, c, d, e = (x.astype(np.float64).transpose(o) for x, o in zip(xs, orders))
    assert_close(got[0], np.tanh((a * b + 0.5) * (c - d * 2) + e * 3), rtol=1e-5, atol=1e-6)


def test_mixed_compute_types_cut_the_chain(fusion):
    i = vkt.tensor(np.arange(10, dtype=np.int32), device="vulkan")
    f = vkt.tensor(np.linspace(0, 1, 10, dtype=np.float32), device="vulkan")
    out = ((i * 2) + f * 0.5).exp()
    ref = np.exp((np.arange(10) * 2 + np.linspace(0, 1, 10).astype(np.float32) * 0.5).astype(np.float32))
    assert_close(out.cpu().numpy(), ref, rtol=1e-6, atol=0)


CASTS = [  # fn, its inputs' dtypes, the fused kernels it makes (an op alone runs its own shader)
    (lambda x, y: (x > 0).float() * y, ("float32", "float32"), [("gt cast mul", 1)]),  # a mask as floats
    (lambda i, y: i.float() * y + 1, ("int32", "float32"), [("cast mul add", 1)]),
    (lambda i, y: i.half() * y.half() - 1, ("int64", "float32"), [("cast mul sub", 1)]),  # y.half() computed first
    (lambda b, y: b.float() + y, ("bool", "float32"), [("cast add", 1)]),
    # between float types a cast computes in its source's type: the ops after it in another are a kernel of their own
    (lambda h, y: (h * 2).float() * y, ("float16", "float32"), [("mul cast", 1)]),
    (lambda x, h: (x * 3).half() * h, ("float32", "float16"), [("mul cast", 1)]),
    (lambda d, y: (d * 2).float() * y, ("float64", "float32"), [("mul cast", 1)]),
    (lambda x, y: ((x > 0).float() * y).sum(1), ("float32", "float32"), [("gt cast mul sum", 1)]),
    (lambda x, y: (x > 0).float().mean(), ("float32", "float32"), [("gt cast mean", 1)]),
    (lambda x, y: (x * y).int() * 3, ("float32", "float32"), [("mul cast", 1)]),  # then int32 math: a cut
    (lambda x, y: ((x * y).long() != 0).sum(), ("float32", "float32"), [("mul cast", 1), ("ne sum", 1)]),
]


@pytest.mark.parametrize("fn, dtypes, kernels", CASTS)
def test_casts_fuse(fn, dtypes, kernels):
    rng = np.random.default_rng(7)
    arrays = [(rng.standard_normal((33, 17)) * 40).astype(d) for d in dtypes]
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    fused = run(fn, *arrays)
    assert stats()["fused_kernels"] == kernels
    assert_same_bits(fn, *arrays)
    torch = pytest.importorskip("torch")
    want = fn(*[torch.tensor(a) for a in arrays])
    assert str(want.dtype).split(".")[1] == str(fused[0].dtype)
    assert_close(fused[0], want.double().numpy(), rtol=1e-3 if "float16" in dtypes else 1e-5, atol=1e-3)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -3e9, 255.5, 256, -1, -1.5, 0.0, -0.0, 1.7, 2.0**31,
                    2.0**63, -2.0**63, 300, -129])
DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]


def same_but_nan_payloads(got, want):
    """Equal bits, but a NaN may be any NaN: a GPU's conversions and arithmetic set their own payloads, and its compiler
    may fold x * 1 into x (NVIDIA: a float16 NaN converted to float is 0x7fffffff from memory, 0x7fffe000 from a
    register)."""
    nan = np.isnan(got) if got.dtype.kind == "f" else np.zeros(got.shape, bool)
    assert got.dtype == want.dtype and np.array_equal(nan, np.isnan(want) if want.dtype.kind == "f" else nan)
    return np.array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


@pytest.mark.parametrize("source", DTYPES)
def test_casts_keep_the_unfused_and_cpu_values(source):
    """Every cast, alone and inside a chain, of values out of every target's range (NaN, infinities, past 2^63),
    as without fusion and as on the cpu, bit for bit but for a NaN's payload."""
    with np.errstate(invalid="ignore", over="ignore"):
        x = SPECIAL != 0 if source == "bool" else SPECIAL.astype(source)
    for target in DTYPES:
        if target != source:
            def fn(t, target=target):
                into = getattr(vkt, target)
                return t.to(into), (t * 1).to(into) if source != "bool" else t.to(into), t.to(into).to(t.dtype) * 1

            fused, unfused = run(fn, x), run(fn, x, fused=False)
            for f, u, c in zip(fused, unfused, fn(vkt.tensor(x))):
                assert same_but_nan_payloads(f, u) and same_but_nan_payloads(f, c.numpy()), (source, target, f, u, c)


def test_long_chains_and_many_inputs(fusion):
    x = vkt.ones(10, device="vulkan")
    y = x
    for _ in range(200):
        y = y * 1.01 + 0.01
    ref = np.float32(1)
    for _ in range(200):
        ref = np.float32(ref * np.float32(1.01)) + np.float32(0.01)
    assert_close(y.cpu().numpy(), np.full(10, ref), rtol=1e-6, atol=0)
    ts = [vkt.full((10,), float(k), device="vulkan") for k in range(20)]
    total = ts[0]
    for t in ts[1:]:
        total = total + t
    np.testing.assert_array_equal(total.cpu().numpy(), np.full(10, 190.0))
    assert max(len(ops.split()) for ops, _ in stats()["fused_kernels"]) <= 24


def test_threads_see_their_own_values(fusion):
    errors = []

    def work(k):
        try:
            x = vkt.full((257,), float(k), device="vulkan")
            for _ in range(20):
                y = (x * 2 + k).relu() - x
                if not np.array_equal(y.cpu().numpy(), np.full(257, k + k, np.float32)):
                    errors.append(k)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_errors_are_raised_at_the_op(fusion):
    x = vkt.ones(3, device="vulkan")
    with pytest.raises(RuntimeError, match="must match the size"):
        x * 2 + vkt.ones(4, device="vulkan")
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        (x > 0).relu()
    assert (x * 2).tolist() == [2.0, 2.0, 2.0]


def test_autograd_through_fused_chains(fusion):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 5)).astype(np.float32)

    def grads(fused):
        vkt.vulkan.set_fusion(fused)
        x = vkt.tensor(a, device="vulkan", requires_grad=True)
        y = (vkt.nn.functional.silu(x * 1.5 + 0.5) * x).tanh().sum()
        y.backward()
        vkt.vulkan.set_fusion(True)
        return y.item(), x.grad.cpu().numpy()

    (vf, gf), (vu, gu) = grads(True), grads(False)
    assert vf == vu and np.array_equal(gf, gu)


def test_turning_fusion_off(dev):
    x = vkt.ones(4, device="vulkan")
    y = x * 2 + 1
    vkt.vulkan.set_fusion(False)
    assert not vkt.vulkan.fusion_enabled()
    vkt.vulkan.reset_kernel_stats()
    z = x * 2 + 1
    assert vkt.vulkan.kernel_stats()["dispatches"] == 2  # recorded at once
    vkt.vulkan.set_fusion(True)
    assert y.tolist() == z.tolist() == [3.0] * 4
    code = "import vkt; print(vkt.vulkan.fusion_enabled())"
    out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "VKT_FUSION": "0"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# The ops of the random chains, with their float64 NumPy forms (well conditioned: no division, no floor).
ERF = np.vectorize(__import__("math").erf)
UNARY = {"relu": lambda u: np.maximum(u, 0), "sigmoid": lambda u: 1 / (1 + np.exp(-u)), "tanh": np.tanh,
         "neg": np.negative, "abs": np.abs, "exp": np.exp, "sin": np.sin, "square": np.square,
         "silu": lambda u: u / (1 + np.exp(-u)), "gelu": lambda u: 0.5 * u * (1 + ERF(u / np.sqrt(2))),
         "softplus": lambda u: np.log1p(np.exp(u))}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
          "atan2": np.arctan2, "hypot": np.hypot}
NN = ("silu", "gelu", "softplus")


def random_chain(steps, x, y, numpy):
    """The ops of steps, (op, i, j, keep), over x, y and the values so far (i and j pick operands), on vkt
    tensors or NumPy arrays: the last value and the values kept."""
    vals, kept = [x, y], []
    for op, i, j, keep in steps:
        u, v = vals[i % len(vals)], vals[j % len(vals)]
        if numpy:
            r = (UNARY[op](u) if op in UNARY else BINARY[op](u, v)).clip(-3, 3)
        else:
            f = getattr(vkt.nn.functional if op in NN else vkt, op)
            r = (f(u) if op in UNARY else f(u, v)).clamp(-3, 3)  # bounded, so exp stays tame
        vals.append(r)
        if keep:
            kept.append(r)
    return vals[-1], kept


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(sorted(UNARY) + sorted(BINARY)), st.integers(0, 99), st.integers(0, 99),
                          st.booleans()), min_size=1, max_size=12))
def test_random_chains_match_unfused_and_numpy(dev, steps):
    """Random DAGs of unary and binary ops over two broadcast inputs, intermediates kept or dropped at
    random: fused results equal unfused ones bit for bit, and NumPy's float64 ones closely."""
    rng = np.random.default_rng(len(steps))
    a = (rng.standard_normal((4, 6)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((6,)) * 0.5).astype(np.float32)

    def chain(x, y, numpy):
        last, kept = random_chain(steps, x, y, numpy)
        return tuple([last] + kept)

    got = assert_same_bits(lambda x, y: chain(x, y, False), a, b)
    ref = chain(a.astype(np.float64), b.astype(np.float64), True)
    for g, r in zip(got, ref):
        assert_close(g, np.broadcast_to(r, g.shape), rtol=1e-3, atol=1e-3)


# Reductions at the end of a random chain: (vkt's, NumPy's float64) over dim (None: the whole tensor).
REDUCTIONS = {"sum": (lambda t, d: t.sum(d) if d is not None else t.sum(), lambda u, d: u.sum(d)),
              "mean": (lambda t, d: t.mean(d) if d is not None else t.mean(), lambda u, d: u.mean(d)),
              "amax": (lambda t, d: t.amax(d) if d is not None else t.amax(), lambda u, d: u.max(d)),
              "var": (lambda t, d: t.var(d) if d is not None else t.var(), lambda u, d: u.var(d, ddof=1)),
              "softmax": (lambda t, d: t.softmax(0 if d is None else d),
                          lambda u, d: np.exp(u - u.max(d or 0, keepdims=True)) /
                          np.exp(u - u.max(d or 0, keepdims=True)).sum(d or 0, keepdims=True)),
              "logsumexp": (lambda t, d: t.logsumexp(0 if d is None else d),
                            lambda u, d: np.log(np.exp(u).sum(d or 0)))}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(sorted(UNARY) + sorted(BINARY)), st.integers(0, 99), st.integers(0, 99),
                          st.booleans()), min_size=1, max_size=8),
       st.sampled_from(sorted(REDUCTIONS)), st.sampled_from([None, 0, 1]), st.sampled_from([(5, 7), (4096, 256)]))
def test_random_chains_into_a_reduction(dev, steps, reduction, dim, shape):
    """Random chains as above, then a reduction of the last value, intermediates (the last one too) kept or
    dropped at random: the reduction computes the chain in its load and writes what is kept, in one pass, in two
    stages (whole tensors of 2^20 elements) or in pieces of columns (2048 rows and more), bit for bit as unfused,
    and close to NumPy's float64."""
    rng = np.random.default_rng(len(steps))
    a = (rng.standard_normal(shape) * 0.5).astype(np.float32)
    b = (rng.standard_normal(shape[1:]) * 0.5).astype(np.float32)
    reduce, reduce_ref = REDUCTIONS[reduction]

    def chain(x, y, numpy):
        last, kept = random_chain(steps, x, y, numpy)
        if numpy:
            last = np.broadcast_to(last, shape)
        elif tuple(last.shape) != shape:
            last = last.expand(*shape)
        return tuple([reduce_ref(last, dim) if numpy else reduce(last, dim)] + kept)

    got = assert_same_bits(lambda x, y: chain(x, y, False), a, b)
    ref = chain(a.astype(np.float64), b.astype(np.float64), True)
    for g, r in zip(got, ref):
        assert_close(g, np.broadcast_to(r, g.shape), rtol=1e-3, atol=1e-3)
