# The matmul family against NumPy in float64: one table of cases (shapes, stride variants, dtypes),
# each run on the cpu and vulkan devices, then linear/addmm, the fused matmul_add_relu against its
# composed reference, the no-copy property of strided operands, and bad input.
import numpy as np
import pytest

import vkt
from conftest import run_python, to_numpy

EPS = {"float32": 2.0**-23, "float64": 2.0**-52, "float16": 2.0**-10}


# ---- operands: a NumPy base array and the view of it the case multiplies ----

def plain(shape):
    return shape, lambda t: t


def transposed(shape):
    """A transposed view: the base holds the last two dims swapped."""
    return shape[:-2] + (shape[-1], shape[-2]), lambda t: t.transpose(-1, -2)


def sliced(shape):
    """A slice with an offset and a step of 2 along the last dim."""
    base = shape[:-2] + (shape[-2] + 2, 2 * shape[-1] + 1) if len(shape) > 1 else (2 * shape[0] + 3,)
    if len(shape) == 1:
        return base, lambda t: t[3::2]
    return base, lambda t: t[..., 1:-1, 1::2]


def expanded(shape):
    """Batch dims broadcast from size 1 (stride 0)."""
    base = (1,) * (len(shape) - 2) + shape[-2:]
    return base, lambda t: t.expand(*shape)


def np_view(view, a):
    """The NumPy counterpart of a view function written against the Tensor API."""
    class Shim:
        def __init__(self, x):
            self.x = x

        def transpose(self, d0, d1):
            return np.swapaxes(self.x, d0, d1)

        def expand(self, *shape):
            return np.broadcast_to(self.x, shape)

        def __getitem__(self, key):
            return self.x[key]

    out = view(Shim(a))
    return out.x if isinstance(out, Shim) else out


# ---- the table: (name, a operand, b operand) ----

SIZES = [  # (M, K, N): 1..257, primes, powers of two and their neighbours
    (1, 1, 1), (2, 3, 5), (7, 11, 13), (17, 1, 19), (31, 37, 1), (1, 257, 1), (64, 64, 64),
    (65, 63, 67), (127, 129, 131), (256, 1, 256), (100, 257, 3), (257, 251, 241),
] + [tuple(int(v) for v in s) for s in np.random.default_rng(42).integers(1, 258, size=(12, 3))]
LONG_K = [(33, 4096, 17), (64, 4096, 65), (3, 2053, 130)]

CASES = [(f"{m}x{k}x{n}", plain((m, k)), plain((k, n))) for m, k, n in SIZES]
CASES += [(f"long_k_{m}x{k}x{n}", plain((m, k)), plain((k, n))) for m, k, n in LONG_K]
CASES += [
    ("a_T", transposed((45, 70)), plain((70, 33))),
    ("b_T", plain((45, 70)), transposed((70, 33))),
    ("both_T", transposed((45, 70)), transposed((70, 33))),
    ("both_T_long_k", transposed((20, 1500)), transposed((1500, 9))),
    ("sliced", sliced((37, 29)), sliced((29, 41))),
    ("sliced_T", sliced((37, 29)), transposed((29, 41))),
    ("batched", plain((3, 21, 34)), plain((3, 34, 19))),
    ("batched_T", transposed((3, 21, 34)), transposed((3, 34, 19))),
    ("expanded_a", expanded((4, 21, 34)), plain((4, 34, 19))),
    ("expanded_b", plain((4, 21, 34)), expanded((4, 34, 19))),
    ("broadcast_2d_3d", plain((21, 34)), plain((5, 34, 19))),
    ("broadcast_3d_2d", plain((5, 21, 34)), plain((34, 19))),
    ("broadcast_both", plain((2, 1, 9, 13)), plain((3, 13, 70))),
    ("broadcast_5d", plain((2, 1, 3, 1, 9, 13)), plain((1, 4, 1, 5, 13, 6))),
    ("vec_vec", plain((300,)), plain((300,))),
    ("vec_mat", plain((70,)), plain((70, 33))),
    ("mat_vec", plain((45, 70)), plain((70,))),
    ("vec_batched", plain((13,)), plain((3, 13, 7))),
    ("batched_vec", plain((3, 7, 13)), plain((13,))),
    ("sliced_vec", sliced((40,)), sliced((40, 9))),
    ("empty_m", plain((0, 5)), plain((5, 4))),
    ("empty_k", plain((3, 0)), plain((0, 4))),
    ("empty_batch", plain((0, 3, 5)), plain((5, 4))),
]
IDS = [c[0] for c in CASES]


def check(got, a, b, dtype, bias=None, relu=False):
    """|got - ref| <= tol * (|a| @ |b| + |bias|), ref in float64: one rounding of the output dtype plus
    accumulator roundings that grow with sqrt(K) (the kernel sums each BK-deep slice apart, then the
    slices; measured errors stay under one accumulator ulp of the scale)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64 + (0 if bias is None else bias.astype(np.float64))
    scale = np.abs(a64) @ np.abs(b64) + (0 if bias is None else np.abs(bias.astype(np.float64)))
    if relu:
        ref = np.maximum(ref, 0)
    k = a.shape[-1]
    acc = EPS["float32"] if dtype == "float16" else EPS[dtype]
    tol = EPS[dtype] + acc * (4 + 2 * np.sqrt(k))
    got = to_numpy(got)
    assert got.dtype == np.dtype(dtype) and got.shape == np.shape(ref), (got.dtype, got.shape, np.shape(ref))
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= tol * scale + 1e-30), f"worst error {np.max(err, initial=0):.3g}, tolerance {tol:.3g}"


def make(rng, shape, dtype):
    return np.asarray(rng.uniform(-1, 1, size=shape)).astype(dtype)


def operands(rng, case, dtype, device):
    """The NumPy views and the vkt views (on device) of a case's two operands."""
    out = []
    for base_shape, view in case[1:]:
        base = make(rng, base_shape, dtype)
        out.append((np_view(view, base), view(vkt.tensor(base, device=device))))
    return out


def supported(device, dtype):
    """Whether the vulkan adapter runs this float dtype in the shader (else it falls back)."""
    if device == "cpu":
        return True
    props = vkt.vulkan.get_device_properties()
    return {"float32": True, "float64": props.shader_float64, "float16": props.shader_float16}[dtype]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matmul_float32(device, case):
    rng = np.random.default_rng(0)
    (a, ta), (b, tb) = operands(rng, case, "float32", device)
    vkt.vulkan.reset_fallback_stats()
    check(ta @ tb, a, b, "float32")
    assert vkt.vulkan.fallback_stats() == {}


HALF_AND_DOUBLE = ["64x64x64", "65x63x67", "long_k_33x4096x17", "both_T", "broadcast_both", "vec_mat", "empty_k"]


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("case", [c for c in CASES if c[0] in HALF_AND_DOUBLE], ids=HALF_AND_DOUBLE)
def test_matmul_half_double(device, case, dtype):
    rng = np.random.default_rng(1)
    (a, ta), (b, tb) = operands(rng, case, dtype, device)
    vkt.vulkan.reset_fallback_stats()
    check(vkt.matmul(ta, tb), a, b, dtype)
    assert supported(device, dtype) is False or vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("shape", [((2, 9, 14), (14, 5)), ((70, 130), (130, 66)), ((1, 9), (9, 4)), ((6,), (6, 3)),
                                   ((3, 1, 4, 5), (2, 5, 1))])
def test_matmul_integer(device, dtype, shape):
    """Integer matmul is exact and wraps as PyTorch's CPU one does; on vulkan it is a shader, no fallback."""
    rng = np.random.default_rng(2)
    lo = 0 if dtype == "uint8" else -50
    a, b = rng.integers(lo, 50, size=shape[0]).astype(dtype), rng.integers(lo, 50, size=shape[1]).astype(dtype)
    vkt.vulkan.reset_fallback_stats()
    got = vkt.tensor(a, device=device) @ vkt.tensor(b, device=device).mT.contiguous().mT
    want = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(to_numpy(got), want.astype(dtype))  # the cast wraps as PyTorch's sums do
    assert to_numpy(got).dtype == np.dtype(dtype)
    assert vkt.vulkan.fallback_stats() == {}
    big = np.full((3, 3), 200 if dtype == "uint8" else 2**30 + 7, dtype=dtype)
    np.testing.assert_array_equal(to_numpy(vkt.tensor(big, device=device) @ vkt.tensor(big, device=device)),
                                  (big.astype(np.int64) @ big.astype(np.int64)).astype(dtype))


def test_batch_past_dispatch_limit(dev):
    """More matrices than maxComputeWorkGroupCount[2] (65535 on most adapters) split into dispatches."""
    rng = np.random.default_rng(3)
    a, b = make(rng, (70000, 1, 3), "float32"), make(rng, (70000, 3, 2), "float32")
    check(vkt.tensor(a, device=dev) @ vkt.tensor(b, device=dev), a, b, "float32")


def test_unmergeable_batch_dims(dev):
    """Batch dims that no stride merges (a permuted batch) take one dispatch per outer index."""
    rng = np.random.default_rng(4)
    base = make(rng, (4, 3, 2, 5, 6), "float32")
    a = base.transpose(2, 1, 0, 3, 4)
    b = make(rng, (2, 3, 4, 6, 7), "float32")
    ta = vkt.tensor(base, device=dev).permute(2, 1, 0, 3, 4)
    vkt.vulkan.reset_fallback_stats()
    check(ta @ vkt.tensor(b, device=dev), a, b, "float32")
    assert vkt.vulkan.fallback_stats() == {}


# ---- strided operands cost no copy ----

@pytest.mark.parametrize("view", ["a_T", "b_T", "both_T", "sliced", "expanded_a", "broadcast_2d_3d"])
def test_strided_operands_are_not_copied(dev, view):
    """The only memory a strided matmul allocates is its output: no contiguous copy of an operand."""
    case = dict((c[0], c) for c in CASES)[view]
    rng = np.random.default_rng(5)
    (a, ta), (b, tb) = operands(rng, case, "float32", dev)
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_fallback_stats()
    vkt.vulkan.reset_peak_memory_stats()
    before = vkt.vulkan.memory_allocated()
    out = ta @ tb
    vkt.vulkan.synchronize()  # fusion holds a product pending until it is needed
    assert vkt.vulkan.max_memory_allocated() - before == out.numel() * 4
    assert vkt.vulkan.fallback_stats() == {}
    check(out, a, b, "float32")


# ---- methods, linear, addmm ----

def test_methods_and_functions(device):
    rng = np.random.default_rng(6)
    a, b = make(rng, (3, 5, 7), "float32"), make(rng, (3, 7, 4), "float32")
    ta, tb = vkt.tensor(a, device=device), vkt.tensor(b, device=device)
    check(ta.bmm(tb), a, b, "float32")
    check(vkt.bmm(ta, tb), a, b, "float32")
    check(ta.matmul(tb), a, b, "float32")
    check(vkt.matmul(input=ta, other=tb), a, b, "float32")
    check(ta[0].mm(tb[1]), a[0], b[1], "float32")
    check(vkt.mm(ta[0], tb[1]), a[0], b[1], "float32")


@pytest.mark.parametrize("x_shape, bias", [((9, 20), True), ((4, 9, 20), True), ((9, 20), False), ((20,), True)])
def test_linear(device, x_shape, bias):
    rng = np.random.default_rng(7)
    x, w, b = make(rng, x_shape, "float32"), make(rng, (13, 20), "float32"), make(rng, (13,), "float32")
    tx, tw = vkt.tensor(x, device=device), vkt.tensor(w, device=device)
    tb = vkt.tensor(b, device=device) if bias else None
    vkt.vulkan.reset_fallback_stats()
    check(vkt.nn.functional.linear(tx, tw, tb), x, w.T, "float32", bias=b if bias else None)
    check(vkt.linear(tx, tw), x, w.T, "float32")
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("input_shape", [(11, 6), (6,), (11, 1), ()])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2.0)])
def test_addmm(device, input_shape, beta, alpha):
    rng = np.random.default_rng(8)
    c, m1, m2 = make(rng, input_shape, "float32"), make(rng, (11, 19), "float32"), make(rng, (19, 6), "float32")
    tc, t1, t2 = (vkt.tensor(x, device=device) for x in (c, m1, m2))
    got = vkt.addmm(tc, t1, t2, beta=beta, alpha=alpha)
    check(got, alpha * m1, m2, "float32", bias=beta * c)
    check(tc.addmm(t1, t2, beta=beta, alpha=alpha), alpha * m1, m2, "float32", bias=beta * c)


def test_addmm_beta_zero_ignores_input(device):
    """PyTorch: with beta=0 the input is not read, so its NaNs do not reach the result."""
    m1, m2 = np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)
    nan = vkt.tensor(np.full((3, 2), np.nan, np.float32), device=device)
    got = vkt.addmm(nan, vkt.tensor(m1, device=device), vkt.tensor(m2, device=device), beta=0)
    np.testing.assert_array_equal(to_numpy(got), np.full((3, 2), 4, np.float32))


def test_addmm_empty_k(device):
    c = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = vkt.addmm(vkt.tensor(c, device=device), vkt.zeros(2, 0, device=device), vkt.zeros(0, 3, device=device),
                    beta=2)
    np.testing.assert_array_equal(to_numpy(got), 2 * c)


# ---- the fused matmul + bias + relu ----

FUSED = [  # (lhs, rhs, bias): the seed's [1,M,K] @ [B,K,N] + [B,M,N], DESIGN's example, bias from [N]
    ((1, 32, 16), (2, 16, 24), (2, 32, 24)),
    ((8, 64, 32), (32, 16), (8, 64, 16)),
    ((1, 100, 77), (3, 77, 130), (3, 100, 130)),
    ((1, 129, 300), (4, 300, 65), (4, 129, 65)),
    ((2, 64, 33), (2, 33, 257), (257,)),
    ((50, 70), (70, 90), (90,)),
]


@pytest.mark.parametrize("lhs, rhs, bias", FUSED, ids=[f"{l}@{r}+{b}" for l, r, b in FUSED])
def test_matmul_add_relu(device, lhs, rhs, bias):
    rng = np.random.default_rng(9)
    x, w, c = make(rng, lhs, "float32"), make(rng, rhs, "float32"), make(rng, bias, "float32")
    tx, tw, tc = (vkt.tensor(v, device=device) for v in (x, w, c))
    vkt.vulkan.reset_fallback_stats()
    fused = vkt.matmul_add_relu(tx, tw, tc)
    reference = vkt.matmul_add_relu_reference(tx, tw, tc)
    assert fused.shape == reference.shape
    check(fused, x, w, "float32", bias=c, relu=True)
    check(reference, x, w, "float32", bias=c, relu=True)
    np.testing.assert_allclose(to_numpy(fused), to_numpy(reference), rtol=1e-5, atol=1e-5 * lhs[-1])
    assert vkt.vulkan.fallback_stats() == {}


def test_matmul_add_relu_is_one_kernel(dev):
    """The fused op allocates its output and nothing else: no intermediate product or sum."""
    x, w = vkt.randn(1, 64, 32, device=dev), vkt.randn(4, 32, 48, device=dev)
    c = vkt.randn(4, 64, 48, device=dev)
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_peak_memory_stats()
    before = vkt.vulkan.memory_allocated()
    out = vkt.matmul_add_relu(x, w, c)
    assert vkt.vulkan.max_memory_allocated() - before == out.numel() * 4
    assert to_numpy(out).min() >= 0


def test_matmul_add_relu_strided(device):
    rng = np.random.default_rng(10)
    x, w, c = make(rng, (40, 30), "float32"), make(rng, (3, 50, 40), "float32"), make(rng, (50, 30), "float32")
    tx, tw, tc = (vkt.tensor(v, device=device) for v in (x, w, c))
    got = vkt.matmul_add_relu(tx.T, tw.transpose(1, 2), tc.T)
    check(got, x.T, np.swapaxes(w, 1, 2), "float32", bias=c.T, relu=True)


# ---- bad input ----

def test_mixed_dtypes(device):
    a = vkt.ones(2, 3, device=device)
    b = vkt.ones(3, 2, dtype=vkt.float64, device=device)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        a @ b
    with pytest.raises(RuntimeError, match="same dtype"):
        vkt.matmul_add_relu(a, a.T, vkt.ones(2, 2, dtype=vkt.float64, device=device))


MIXED = [  # products of mismatched dtypes: PyTorch's (CPU kernels') words, each op its own
    ("mm", lambda m, o, f, d: m.mm(o((2, 3), f), o((3, 2), d))),
    ("addmm_mat2", lambda m, o, f, d: m.addmm(o((2, 2), f), o((2, 3), f), o((3, 2), d))),
    ("addmm_input", lambda m, o, f, d: m.addmm(o((2, 2), d), o((2, 3), f), o((3, 2), f))),
    ("addmm_mat1", lambda m, o, f, d: m.addmm(o((2, 2), f), o((2, 3), d), o((3, 2), f))),
    ("linear", lambda m, o, f, d: m.nn.functional.linear(o((4, 3), d), o((2, 3), f), o((2,), f))),
    ("linear_3d", lambda m, o, f, d: m.nn.functional.linear(o((2, 4, 3), d), o((2, 3), f), o((2,), f))),
    ("linear_no_bias", lambda m, o, f, d: m.nn.functional.linear(o((4, 3), d), o((2, 3), f))),
    ("bmm", lambda m, o, f, d: m.bmm(o((1, 2, 3), f), o((1, 3, 2), d))),
    # baddbmm: input against batch1 (its meta function's words), then batch2 against batch1 (its kernel's)
    ("baddbmm_input", lambda m, o, f, d: m.baddbmm(o((3, 5, 7), d), o((3, 5, 4), f), o((3, 4, 7), f))),
    ("baddbmm_batch1", lambda m, o, f, d: m.baddbmm(o((3, 5, 7), f), o((3, 5, 4), d), o((3, 4, 7), f))),
    ("baddbmm_batch2", lambda m, o, f, d: m.baddbmm(o((3, 5, 7), f), o((3, 5, 4), f), o((3, 4, 7), d))),
    ("baddbmm_broadcast", lambda m, o, f, d: m.baddbmm(o((7,), d), o((3, 5, 4), f), o((3, 4, 7), f), beta=0)),
    ("baddbmm_method", lambda m, o, f, d: o((3, 5, 7), f).baddbmm(o((3, 5, 4), f), o((3, 4, 7), d), alpha=2)),
    ("baddbmm_empty_k", lambda m, o, f, d: m.baddbmm(o((3, 5, 7), d), o((3, 5, 0), f), o((3, 0, 7), f))),
    ("baddbmm_bad_shape", lambda m, o, f, d: m.baddbmm(o((3, 5, 7), d), o((3, 5, 4), f), o((3, 6, 7), f))),
    ("baddbmm_bad_input", lambda m, o, f, d: m.baddbmm(o((2, 5, 7), f), o((3, 5, 4), f), o((3, 4, 7), d))),
    # mv is addmv into a result of vec's dtype: its words name that dtype first
    ("mv_mat", lambda m, o, f, d: m.mv(o((5, 3), d), o((3,), f))),
    ("mv_vec", lambda m, o, f, d: m.mv(o((5, 3), f), o((3,), d))),
    ("mv_method", lambda m, o, f, d: o((5, 3), d).mv(o((3,), f))),
    ("mv_empty", lambda m, o, f, d: m.mv(o((0, 3), f), o((3,), d))),
    ("mv_bad_size", lambda m, o, f, d: m.mv(o((5, 3), f), o((4,), d))),
    ("addmv_input", lambda m, o, f, d: m.addmv(o((5,), d), o((5, 3), f), o((3,), f))),
    ("addmv_mat", lambda m, o, f, d: m.addmv(o((5,), f), o((5, 3), d), o((3,), f))),
    ("addmv_vec", lambda m, o, f, d: m.addmv(o((5,), f), o((5, 3), f), o((3,), d))),
    ("addmv_0d_input", lambda m, o, f, d: m.addmv(o((), d), o((5, 3), f), o((3,), f), beta=0)),
    ("addmv_method", lambda m, o, f, d: o((1,), f).addmv(o((5, 3), d), o((3,), d))),
    ("addmv_bad_size", lambda m, o, f, d: m.addmv(o((4,), d), o((5, 3), f), o((3,), f))),
    # matmul words it as the op the ranks take it to: dot, addmv (vec's dtype first), mm, or bmm (after the sizes)
    ("matmul_1d_1d", lambda m, o, f, d: m.matmul(o((3,), f), o((3,), d))),
    ("matmul_2d_1d", lambda m, o, f, d: m.matmul(o((2, 3), f), o((3,), d))),
    ("matmul_3d_1d", lambda m, o, f, d: o((4, 2, 3), d) @ o((3,), f)),
    ("matmul_1d_2d", lambda m, o, f, d: m.matmul(o((3,), f), o((3, 2), d))),
    ("matmul_3d_2d", lambda m, o, f, d: m.matmul(o((4, 2, 3), f), o((3, 2), d))),
    ("matmul_1d_3d", lambda m, o, f, d: m.matmul(o((3,), f), o((4, 3, 2), d))),
    ("matmul_2d_3d", lambda m, o, f, d: m.matmul(o((2, 3), d), o((4, 3, 2), f))),
    ("matmul_4d_3d", lambda m, o, f, d: m.matmul(o((5, 4, 2, 3), f), o((4, 3, 2), d))),
    ("matmul_1d_1d_bad_size", lambda m, o, f, d: m.matmul(o((3,), f), o((4,), d))),
]

# Pairs of dtypes: PyTorch names them in two ways (ScalarType "Long", c10 "long int"), each op its own.
MIXED_DTYPES = [("float32", "float64"), ("float64", "float32"), ("int64", "float32"), ("float16", "int32"),
                ("uint8", "float64")]


@pytest.mark.parametrize("pair", MIXED_DTYPES, ids="-".join)
@pytest.mark.parametrize("name, call", MIXED, ids=[c[0] for c in MIXED])
def test_mixed_dtypes_as_torch(device, name, call, pair):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as want:
        call(torch, lambda shape, dtype: torch.ones(shape, dtype=dtype), *(getattr(torch, p) for p in pair))
    with pytest.raises(RuntimeError) as got:
        call(vkt, lambda shape, dtype: vkt.ones(shape, dtype=dtype, device=device), *(getattr(vkt, p) for p in pair))
    assert str(got.value) == str(want.value).split("\n")[0]


NOTHING_TO_MULTIPLY = [  # batched products with an empty result or k = 0: PyTorch's kernels return before their
    # dtype checks, with batch2's dtype (bmm, baddbmm; beta * input cast to it)
    ("bmm_no_batch", lambda m, o, f, d: m.bmm(o((0, 2, 3), f), o((0, 3, 4), d))),
    ("bmm_k0", lambda m, o, f, d: m.bmm(o((2, 2, 0), d), o((2, 0, 4), f))),
    ("bmm_no_rows", lambda m, o, f, d: m.bmm(o((2, 0, 3), f), o((2, 3, 4), d))),
    ("bmm_no_cols", lambda m, o, f, d: m.bmm(o((2, 2, 3), f), o((2, 3, 0), d))),
    ("bmm_bool_k0", lambda m, o, f, d: m.bmm(o((2, 2, 0), m.bool), o((2, 0, 4), m.bool))),
    ("bmm_batches_differ", lambda m, o, f, d: m.bmm(o((2, 2, 3), f), o((3, 3, 4), d))),
    ("bmm_k_differs", lambda m, o, f, d: m.bmm(o((2, 2, 0), f), o((2, 1, 4), d))),
    ("baddbmm_k0", lambda m, o, f, d: m.baddbmm(o((2, 2, 4), f), o((2, 2, 0), f), o((2, 0, 4), d), beta=3)),
    ("baddbmm_k0_broadcast", lambda m, o, f, d: m.baddbmm(o((4,), f), o((2, 2, 0), f), o((2, 0, 4), d))),
    ("baddbmm_k0_beta0", lambda m, o, f, d: m.baddbmm(o((2, 2, 4), f), o((2, 2, 0), f), o((2, 0, 4), d), beta=0)),
    ("baddbmm_no_batch", lambda m, o, f, d: m.baddbmm(o((0, 2, 4), f), o((0, 2, 3), f), o((0, 3, 4), d))),
    ("baddbmm_input_dtype", lambda m, o, f, d: m.baddbmm(o((2, 2, 4), d), o((2, 2, 0), f), o((2, 0, 4), f))),
    ("baddbmm_method", lambda m, o, f, d: o((2, 2, 4), f).baddbmm(o((2, 2, 0), f), o((2, 0, 4), d), alpha=2)),
    # baddbmm with k = 0 scales its result in place (mul_ of beta) in batch2's dtype: mul_'s cast check refuses a
    # float beta on an integer or Bool result, an int one on a Bool result
    ("baddbmm_k0_float_beta", lambda m, o, f, d: m.baddbmm(o((2, 2, 4), f), o((2, 2, 0), f), o((2, 0, 4), d),
                                                           beta=0.5)),
    ("baddbmm_k0_int_batch2", lambda m, o, f, d: m.baddbmm(o((4,), f), o((2, 2, 0), f), o((2, 0, 4), m.int64),
                                                           beta=2.0)),
    ("baddbmm_k0_float_beta0", lambda m, o, f, d: m.baddbmm(o((2, 2, 4), f), o((2, 2, 0), f), o((2, 0, 4), d),
                                                            beta=0.0)),
    ("baddbmm_k0_bool", lambda m, o, f, d: m.baddbmm(o((2, 2, 4), m.bool), o((2, 2, 0), m.bool),
                                                     o((2, 0, 4), m.bool))),
    ("baddbmm_k0_bool_beta0", lambda m, o, f, d: m.baddbmm(o((2, 2, 4), m.bool), o((2, 2, 0), m.bool),
                                                           o((2, 0, 4), m.bool), beta=0)),
    ("baddbmm__k0_float_beta", lambda m, o, f, d: o((2, 2, 4), d).baddbmm_(o((2, 2, 0), d), o((2, 0, 4), d),
                                                                           beta=0.5)),
    ("baddbmm__k0_broadcast", lambda m, o, f, d: o((4,), d).baddbmm_(o((2, 2, 0), d), o((2, 0, 4), d), beta=0.5)),
    ("baddbmm__k0_dtypes", lambda m, o, f, d: o((4,), f).baddbmm_(o((2, 2, 0), f), o((2, 0, 4), d), beta=0.5)),
    # so do addmm's and addbmm's (k = 0 or no batch, after input's expand), in the result's dtype; a Bool addmm with
    # k = 0 is zeros (beta 0) or that error; addmv's returns beta * input where mat is empty, before its dtype checks
    ("addmm_k0_float_beta", lambda m, o, f, d: m.addmm(o((2, 3), d), o((2, 0), d), o((0, 3), d), beta=0.5)),
    ("addmm_k0_int_beta", lambda m, o, f, d: m.addmm(o((3,), d), o((2, 0), d), o((0, 3), d), beta=2)),
    ("addmm_k0_beta0", lambda m, o, f, d: m.addmm(o((2, 3), d), o((2, 0), d), o((0, 3), d), beta=0.0)),
    ("addmm_k0_bad_input", lambda m, o, f, d: m.addmm(o((5, 3), d), o((2, 0), d), o((0, 3), d), beta=0.5)),
    ("addmm_k0_empty", lambda m, o, f, d: m.addmm(o((0, 3), d), o((0, 0), d), o((0, 3), d), beta=0.5)),
    ("addmm_k0_bool", lambda m, o, f, d: m.addmm(o((2, 3), m.bool), o((2, 0), m.bool), o((0, 3), m.bool))),
    ("addmm_k0_bool_beta0", lambda m, o, f, d: m.addmm(o((2, 3), m.bool), o((2, 0), m.bool), o((0, 3), m.bool),
                                                       beta=0)),
    ("addmm__k0_float_beta", lambda m, o, f, d: o((2, 3), d).addmm_(o((2, 0), d), o((0, 3), d), beta=2.5)),
    ("addbmm_k0_float_beta", lambda m, o, f, d: m.addbmm(o((2, 3), d), o((4, 2, 0), d), o((4, 0, 3), d), beta=0.5)),
    ("addbmm_no_batch_float_beta", lambda m, o, f, d: m.addbmm(o((2, 3), d), o((0, 2, 4), d), o((0, 4, 3), d),
                                                               beta=0.5)),
    ("addbmm_no_batch_dtypes", lambda m, o, f, d: m.addbmm(o((2, 3), d), o((0, 2, 4), f), o((0, 4, 3), d),
                                                           beta=0.5)),
    ("addmv_k0_float_beta", lambda m, o, f, d: m.addmv(o((2,), d), o((2, 0), d), o((0,), d), beta=0.5)),
    # ... before it refuses Bool: input where beta is not 0 (beta cast to Bool is True), else zeros
    ("addmv_k0_bool", lambda m, o, f, d: m.addmv(o((2,), m.bool), o((2, 0), m.bool), o((0,), m.bool))),
    ("addmv_k0_bool_beta0", lambda m, o, f, d: m.addmv(o((2,), m.bool), o((2, 0), m.bool), o((0,), m.bool), beta=0)),
    ("addmv_k0_bool_float_beta", lambda m, o, f, d: m.addmv(o((2,), m.bool), o((2, 0), m.bool), o((0,), m.bool),
                                                            beta=0.5)),
    ("addmv_no_rows_bool", lambda m, o, f, d: m.addmv(o((0,), m.bool), o((0, 3), m.bool), o((3,), m.bool))),
    ("addmv__k0_bool", lambda m, o, f, d: o((2,), m.bool).addmv_(o((2, 0), m.bool), o((0,), m.bool), beta=2)),
    ("addmv_bool", lambda m, o, f, d: m.addmv(o((2,), m.bool), o((2, 3), m.bool), o((3,), m.bool))),
    # matmul past rank 2 goes where PyTorch's _matmul_impl goes: one bmm of the broadcast batches returns batch2's
    # dtype with nothing to multiply; a folded mm or mv checks dtypes whatever the sizes
    ("matmul_no_batch", lambda m, o, f, d: m.matmul(o((0, 2, 3), f), o((0, 3, 4), d))),
    ("matmul_k0", lambda m, o, f, d: o((2, 2, 0), f) @ o((1, 0, 4), d)),
    ("matmul_broadcast_empty", lambda m, o, f, d: m.matmul(o((2, 1, 2, 3), f), o((0, 3, 4), d))),
    ("matmul_matrix_batch_empty", lambda m, o, f, d: m.matmul(o((2, 3), f), o((0, 3, 4), d))),
    ("matmul_vector_batch_k0", lambda m, o, f, d: m.matmul(o((0,), f), o((2, 0, 4), d))),
    ("matmul_folded_empty", lambda m, o, f, d: m.matmul(o((0, 2, 3), f), o((3, 4), d))),
    ("matmul_folded_mv_empty", lambda m, o, f, d: m.matmul(o((0, 2, 3), f), o((3,), d))),
]


def outcome_as_torch(call, device, pair):
    """What call gives in vkt on device and in torch, on tensors of 3s of the pair's dtypes: (dtype, shape,
    values), or (exception type, first line of its message)."""
    torch = pytest.importorskip("torch")

    def outcome(m, ones):
        try:
            r = call(m, ones, *(getattr(m, p) for p in pair))
        except Exception as e:  # noqa: BLE001 -- the exception is the result compared
            return type(e).__name__, str(e).split("\n")[0]
        return str(r.dtype).split(".")[-1], tuple(r.shape), r.cpu().numpy().tolist()
    return (outcome(vkt, lambda s, dt: vkt.full(s, 3, dtype=dt, device=device)),
            outcome(torch, lambda s, dt: torch.full(s, 3, dtype=dt)))


@pytest.mark.parametrize("pair", MIXED_DTYPES, ids="-".join)
@pytest.mark.parametrize("name, call", NOTHING_TO_MULTIPLY, ids=[c[0] for c in NOTHING_TO_MULTIPLY])
def test_nothing_to_multiply_as_torch(device, name, call, pair):
    got, want = outcome_as_torch(call, device, pair)
    assert got == want


ADDBMM = [  # addbmm's order, PyTorch's: input expands to [batch1.size(1), batch2.size(2)] first (a 3-D input fails
    # there, in expand's words), then the batches' ranks, counts and sizes, then (only with a batch) the dtypes
    ("input_3d", lambda m, o, f, d: m.addbmm(o((2, 3, 5), f), o((2, 3, 4), f), o((2, 4, 5), f))),
    ("input_3d_dtype", lambda m, o, f, d: m.addbmm(o((2, 3, 5), d), o((2, 3, 4), f), o((2, 4, 5), f))),
    ("input_3d_bad_k", lambda m, o, f, d: m.addbmm(o((1, 3, 5), f), o((2, 3, 4), d), o((2, 3, 5), f))),
    ("input_3d_bool", lambda m, o, f, d: m.addbmm(o((2, 3, 5), m.bool), o((2, 3, 4), f), o((2, 4, 5), f))),
    ("input_bad", lambda m, o, f, d: m.addbmm(o((3, 4), f), o((2, 3, 4), d), o((2, 4, 5), f))),
    ("input_1d", lambda m, o, f, d: m.addbmm(o((5,), f), o((2, 3, 4), f), o((2, 4, 5), f), beta=2)),
    ("batch1_1d", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((4,), d), o((2, 4, 5), f))),
    ("batch1_2d", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((3, 4), d), o((2, 4, 5), f))),
    ("batch1_4d", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((1, 2, 3, 4), f), o((2, 4, 5), f))),
    ("batch2_2d", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((2, 3, 4), f), o((4, 5), d))),
    ("batches_differ", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((2, 3, 4), f), o((3, 4, 5), d))),
    ("k_differs", lambda m, o, f, d: m.addbmm(o((3, 5), d), o((2, 3, 4), f), o((2, 3, 5), f))),
    ("no_batch", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((0, 3, 4), d), o((0, 4, 5), f), beta=2)),
    ("no_batch_input", lambda m, o, f, d: m.addbmm(o((5,), d), o((0, 3, 4), f), o((0, 4, 5), f))),
    ("no_batch_beta0", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((0, 3, 4), f), o((0, 4, 5), d), beta=0)),
    ("k0_dtypes", lambda m, o, f, d: m.addbmm(o((3, 5), f), o((2, 3, 0), f), o((2, 0, 5), d))),
    ("method", lambda m, o, f, d: o((3, 5), f).addbmm(o((2, 3, 4), d), o((2, 4, 5), f))),
    # addbmm_ is addbmm_out into input: an input that broadcasts to the product is resized to its shape
    ("in_place_1d", lambda m, o, f, d: o((5,), f).addbmm_(o((2, 3, 4), f), o((2, 4, 5), f), beta=2)),
    ("in_place_0d", lambda m, o, f, d: o((), d).addbmm_(o((2, 3, 4), d), o((2, 4, 5), d))),
    ("in_place_row_no_batch", lambda m, o, f, d: o((1, 5), f).addbmm_(o((0, 3, 4), f), o((0, 4, 5), f))),
    ("in_place_column_beta0", lambda m, o, f, d: o((3, 1), f).addbmm_(o((2, 3, 4), f), o((2, 4, 5), f), beta=0)),
    ("in_place_bad", lambda m, o, f, d: o((15,), f).addbmm_(o((2, 3, 4), f), o((2, 4, 5), f))),
    ("in_place_dtypes", lambda m, o, f, d: o((5,), f).addbmm_(o((2, 3, 4), d), o((2, 4, 5), f))),
    ("expand_fewer_dims", lambda m, o, f, d: o((2, 3, 5), d).expand(3, 5)),
    ("expand_bool", lambda m, o, f, d: o((2, 3), m.bool).expand(1)),
]


@pytest.mark.parametrize("pair", MIXED_DTYPES[:3], ids="-".join)
@pytest.mark.parametrize("name, call", ADDBMM, ids=[c[0] for c in ADDBMM])
def test_addbmm_as_torch(device, name, call, pair):
    got, want = outcome_as_torch(call, device, pair)
    assert got == want


def test_addbmm__resizes_input_as_torch(device):
    """x.addbmm_ returns x itself, resized to the product's shape, its rows the old x broadcast; vkt refuses to grow
    a storage that a view shares (PyTorch grows it under the view) and a tensor that requires grad."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    b1, b2 = rng.integers(-3, 4, (2, 3, 4)).astype(np.float32), rng.integers(-3, 4, (2, 4, 5)).astype(np.float32)
    want = torch.arange(1.0, 6.0)
    want.addbmm_(torch.tensor(b1), torch.tensor(b2), beta=2)
    x = vkt.arange(1.0, 6.0, device=device)
    assert x.addbmm_(vkt.tensor(b1, device=device), vkt.tensor(b2, device=device), beta=2) is x
    np.testing.assert_array_equal(to_numpy(x), want.numpy())
    x = vkt.arange(1.0, 6.0, device=device)
    view = x.view(5)
    with pytest.raises(RuntimeError, match="resize_ cannot grow a storage that other tensors share"):
        x.addbmm_(vkt.tensor(b1, device=device), vkt.tensor(b2, device=device))
    a = vkt.ones(5, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"addbmm_\(\): vkt cannot resize input of shape \[5\] that requires grad"):
        (a * 2).addbmm_(vkt.tensor(b1, device=device), vkt.tensor(b2, device=device))
    del view


BOOL_PRODUCTS = [  # PyTorch has no bool products: each refusal names the CPU kernel the ranks take the call to
    ("mm", lambda m, o: m.mm(o((2, 3)), o((3, 2)))), ("matmul_2d", lambda m, o: o((2, 3)) @ o((3, 2))),
    ("matmul_1d", lambda m, o: m.matmul(o((3,)), o((3,)))), ("matmul_mv", lambda m, o: m.matmul(o((2, 3)), o((3,)))),
    ("matmul_3d", lambda m, o: m.matmul(o((4, 2, 3)), o((4, 3, 2)))),
    ("bmm", lambda m, o: m.bmm(o((4, 2, 3)), o((4, 3, 2)))),
    ("mv", lambda m, o: m.mv(o((2, 3)), o((3,)))), ("dot", lambda m, o: m.dot(o((3,)), o((3,)))),
    ("vdot", lambda m, o: m.vdot(o((3,)), o((3,)))), ("addmm", lambda m, o: m.addmm(o((2, 2)), o((2, 3)), o((3, 2)))),
    ("addmv", lambda m, o: m.addmv(o((2,)), o((2, 3)), o((3,)))),
    ("baddbmm", lambda m, o: m.baddbmm(o((4, 2, 2)), o((4, 2, 3)), o((4, 3, 2)))),
    ("addbmm", lambda m, o: m.addbmm(o((2, 2)), o((4, 2, 3)), o((4, 3, 2)))),
    ("linear", lambda m, o: m.nn.functional.linear(o((2, 3)), o((4, 3)))),
]


@pytest.mark.parametrize("name, call", BOOL_PRODUCTS, ids=[c[0] for c in BOOL_PRODUCTS])
def test_bool_products_refused_as_torch(device, name, call):
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError) as want:
        call(torch, lambda shape: torch.ones(shape, dtype=torch.bool))
    with pytest.raises(NotImplementedError) as got:
        call(vkt, lambda shape: vkt.ones(shape, dtype=vkt.bool, device=device))
    assert str(got.value) == str(want.value).split("\n")[0]


IN_PLACE = [  # in baddbmm_'s, input broadcasts to the product's shape, and a bad one fails first
    ("addmm_", [(5, 7), (5, 3), (3, 7)]), ("addmv_", [(5,), (5, 3), (3,)]), ("addbmm_", [(5, 7), (3, 5, 4), (3, 4, 7)]),
    ("baddbmm_", [(3, 5, 7), (3, 5, 4), (3, 4, 7)]), ("baddbmm_", [(1, 5, 1), (3, 5, 4), (3, 4, 7)]),
    ("baddbmm_", [(2, 5, 7), (3, 5, 4), (3, 4, 7)]), ("baddbmm_", [(3, 5, 7), (3, 5, 4), (3, 6, 7)]),
]


@pytest.mark.parametrize("op, shapes", IN_PLACE)
@pytest.mark.parametrize("odd", [0, 1, 2])
def test_mixed_dtypes_in_place(device, op, shapes, odd):
    """An in-place product of mismatched dtypes raises PyTorch's words and leaves its input as it was."""
    torch = pytest.importorskip("torch")

    def run(m, ones):
        args = [ones(s, m.float64 if k == odd else m.float32) for k, s in enumerate(shapes)]
        with pytest.raises(RuntimeError) as err:
            getattr(args[0], op)(args[1], args[2], beta=2)
        return str(err.value).split("\n")[0], args[0]

    want, _ = run(torch, lambda s, dt: torch.full(s, 3, dtype=dt))
    got, input = run(vkt, lambda s, dt: vkt.full(s, 3, dtype=dt, device=device))
    assert got == want
    np.testing.assert_array_equal(input.cpu().numpy(), np.full(shapes[0], 3))


BILINEAR_BAD = [  # F.bilinear's own checks, PyTorch's order and words: its batch dims must be equal, not broadcast
    ("input1_size", lambda m, o: m.nn.functional.bilinear(o(7, 2), o(7, 4), o(5, 3, 4), o(5))),
    ("input2_size", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 6), o(5, 3, 4), o(5))),
    ("both_sizes", lambda m, o: m.nn.functional.bilinear(o(7, 2), o(7, 6), o(5, 3, 4), o(6))),
    ("batch", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(6, 4), o(5, 3, 4), o(5))),
    ("batch_of_1", lambda m, o: m.nn.functional.bilinear(o(1, 3), o(6, 4), o(5, 3, 4))),
    ("batch_3d", lambda m, o: m.nn.functional.bilinear(o(2, 7, 3), o(2, 6, 4), o(5, 3, 4), o(5))),
    ("batch_empty", lambda m, o: m.nn.functional.bilinear(o(0, 3), o(1, 4), o(5, 3, 4), o(5))),
    ("dims", lambda m, o: m.nn.functional.bilinear(o(2, 7, 3), o(7, 4), o(5, 3, 4), o(5))),
    ("dims_0d", lambda m, o: m.nn.functional.bilinear(o(), o(7, 4), o(5, 3, 4), o(5))),
    ("bias_size", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 4), o(5, 3, 4), o(6))),
    ("bias_of_1", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 4), o(5, 3, 4), o(1))),
    ("bias_2d", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 4), o(5, 3, 4), o(1, 5))),
    ("bias_0d", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 4), o(5, 3, 4), o())),
    ("inputs_0d", lambda m, o: m.nn.functional.bilinear(o(), o(), o(5, 3, 4), o(5))),
    ("weight_2d", lambda m, o: m.nn.functional.bilinear(o(7, 4), o(7, 4), o(3, 4), o(5))),
    ("weight_4d", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 4), o(5, 3, 4, 1), o(5))),
    ("dtype_input1", lambda m, o: m.nn.functional.bilinear(o(7, 3, dtype=m.float64), o(7, 4), o(5, 3, 4), o(5))),
    ("dtype_input2", lambda m, o: m.nn.functional.bilinear(o(7, 2), o(7, 4, dtype=m.int64), o(5, 3, 4))),
    ("dtype_weight", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 4), o(5, 3, 4, dtype=m.float16), o(5))),
    ("dtype_bias", lambda m, o: m.nn.functional.bilinear(o(7, 3), o(7, 4), o(5, 3, 4), o(5, dtype=m.uint8))),
]


@pytest.mark.parametrize("name, call", BILINEAR_BAD, ids=[c[0] for c in BILINEAR_BAD])
def test_bilinear_bad_as_torch(device, name, call):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as want:
        call(torch, lambda *shape, dtype=torch.float32: torch.ones(shape, dtype=dtype))
    with pytest.raises(want.type) as got:
        call(vkt, lambda *shape, dtype=vkt.float32: vkt.ones(shape, dtype=dtype, device=device))
    assert str(got.value) == str(want.value).split("\n")[0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
@pytest.mark.parametrize("s1, s2, bias", [((7, 3), (7, 4), True), ((3,), (4,), True), ((2, 5, 3), (2, 5, 4), False),
                                          ((0, 3), (0, 4), True)])
def test_bilinear_as_torch(device, dtype, s1, s2, bias):
    """The checks pass what PyTorch's pass, with its values (odd sizes, every dtype, 1-D and batched inputs)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    arrays = [rng.integers(-3, 4, size=s).astype(dtype) for s in (s1, s2, (5, 3, 4)) + (((5,),) if bias else ())]
    want = torch.nn.functional.bilinear(*(torch.tensor(a) for a in arrays))
    got = vkt.nn.functional.bilinear(*(vkt.tensor(a, device=device) for a in arrays))
    assert str(got.dtype) == "vkt." + dtype and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want.numpy().astype(np.float64), rtol=1e-3)


BAD_SIZES = [  # (a's shape, b's shape) past rank 2: matmul's error is the one of the op PyTorch's _matmul_impl
    # takes them to: a batch times a matrix or vector folds into one mm or mv where its batch dims fold as a view
    ((2, 2, 3), (5, 3)), ((2, 2, 3), (4,)), ((3,), (2, 4, 5)), ((2, 3), (2, 4, 5)),
    # else one bmm of the broadcast, flattened batches: broadcasting's words, then bmm's
    ((2, 3, 4), (2, 5, 6)), ((2, 3, 4), (3, 4, 6)), ((1, 2, 3), (2, 4, 5)), ((2, 1, 2, 3), (3, 4, 5)),
    ((3, 2, 2, 3), (2, 4, 5)), ((2, 2, 0), (2, 1, 5)), ((0, 2, 3), (0, 4, 5)), ((0, 2, 3), (2, 3, 5)),
]


@pytest.mark.parametrize("pair", [("float32", "float32"), ("float32", "float64")], ids="-".join)
@pytest.mark.parametrize("sa, sb", BAD_SIZES)
def test_shape_mismatch_as_torch(device, sa, sb, pair):
    got, want = outcome_as_torch(lambda m, o, f, d: m.matmul(o(sa, f), o(sb, d)), device, pair)
    assert got == want


UP_TO_RANK_2 = [  # matmul's rank check first, then the checks of the op the ranks take it to, each in PyTorch's
    # order: dot's dtypes then sizes; mv's (addmv's) sizes then dtypes; mm's (of a.unsqueeze(0) for a vector a) sizes
    # then dtypes. Bool with nothing to multiply gives zeros from mm and mv, dot's refusal from dot
    ("matmul_2d_2d", lambda m, o, f, d: m.matmul(o((2, 3), f), o((4, 5), d))),
    ("matmul_1d_2d", lambda m, o, f, d: m.matmul(o((3,), f), o((4, 5), d))),
    ("matmul_2d_1d", lambda m, o, f, d: o((2, 3), f) @ o((4,), d)),
    ("matmul_1d_1d", lambda m, o, f, d: m.matmul(o((3,), f), o((4,), d))),
    ("matmul_0d", lambda m, o, f, d: m.matmul(o((), f), o((2, 3), d))),
    ("matmul_1d_0d", lambda m, o, f, d: o((3,), f).__matmul__(o((), d))),
    ("matmul_k0", lambda m, o, f, d: m.matmul(o((3, 0), f), o((0, 2), d))),
    ("matmul_1d_k0", lambda m, o, f, d: m.matmul(o((0,), f), o((0, 2), d))),
    ("matmul_mv_k0", lambda m, o, f, d: o((3, 0), f) @ o((0,), d)),
    ("matmul_no_rows", lambda m, o, f, d: m.matmul(o((0, 3), f), o((3, 2), d))),
    ("matmul_dot_empty", lambda m, o, f, d: m.matmul(o((0,), f), o((0,), d))),
    ("mm_bad_size", lambda m, o, f, d: m.mm(o((2, 3), f), o((4, 5), d))),
    ("mm_1d", lambda m, o, f, d: m.mm(o((3,), f), o((3, 5), d))),
    ("mm_1d_mat2", lambda m, o, f, d: o((2, 3), f).mm(o((3,), d))),
    ("mm_0d", lambda m, o, f, d: m.mm(o((), f), o((3, 5), d))),
    ("mm_k0", lambda m, o, f, d: m.mm(o((3, 0), f), o((0, 2), d))),
    ("mv_bad_size", lambda m, o, f, d: m.mv(o((2, 3), f), o((4,), d))),
    ("mv_0d", lambda m, o, f, d: m.mv(o((), f), o((3,), d))),
    ("mv_1d", lambda m, o, f, d: o((3,), f).mv(o((3,), d))),
    ("mv_k0", lambda m, o, f, d: m.mv(o((3, 0), f), o((0,), d))),
    ("mv_no_rows", lambda m, o, f, d: m.mv(o((0, 3), f), o((3,), d))),
    ("dot_bad_size", lambda m, o, f, d: m.dot(o((3,), f), o((4,), d))),
    ("dot_method", lambda m, o, f, d: o((3,), f).dot(o((3,), d))),
    ("dot_2d", lambda m, o, f, d: m.dot(o((2, 3), f), o((3,), d))),
]


@pytest.mark.parametrize("pair", [("float32", "float64"), ("int64", "float32"), ("bool", "bool"),
                                  ("float32", "float32")], ids="-".join)
@pytest.mark.parametrize("name, call", UP_TO_RANK_2, ids=[c[0] for c in UP_TO_RANK_2])
def test_up_to_rank_2_as_torch(device, name, call, pair):
    got, want = outcome_as_torch(call, device, pair)
    assert got == want


def test_folding_follows_strides_as_torch(device):
    """A batch whose dims do not fold as a view (a transpose of them) takes bmm's words, as PyTorch's does."""
    got, want = outcome_as_torch(lambda m, o, f, d: o((2, 2, 3), f).transpose(0, 1) @ o((4,), f), device,
                                 ("float32", "float32"))
    assert got == want and "batch2" in want[1]


def test_mixed_devices(dev):
    with pytest.raises(RuntimeError, match="same device"):
        vkt.ones(2, 2) @ vkt.ones(2, 2, device=dev)
    with pytest.raises(RuntimeError, match="same device"):
        vkt.linear(vkt.ones(2, 2, device=dev), vkt.ones(2, 2, device=dev), vkt.ones(2))


def test_bad_ranks_and_types():
    m = vkt.ones(2, 2)
    with pytest.raises(RuntimeError, match="at least 1D"):
        vkt.matmul(vkt.ones(()), m)
    with pytest.raises(RuntimeError, match="must be a matrix"):
        vkt.mm(vkt.ones(2, 2, 2), m)
    with pytest.raises(RuntimeError, match="3D tensor"):
        vkt.bmm(m, m)
    with pytest.raises(RuntimeError, match=r"first two dimensions of batch2 tensor to be: \[2, 2\] but got: \[3, 2\]"):
        vkt.bmm(vkt.ones(2, 2, 2), vkt.ones(3, 2, 2))
    with pytest.raises(RuntimeError, match="must be a matrix"):
        vkt.addmm(m, vkt.ones(2), m)
    with pytest.raises(RuntimeError, match="Bool"):
        vkt.ones(2, 2, dtype=vkt.bool) @ vkt.ones(2, 2, dtype=vkt.bool)
    with pytest.raises(TypeError):
        m @ 2
    with pytest.raises(TypeError, match="must be Tensor"):
        vkt.matmul(m, [[1.0]])
    with pytest.raises(RuntimeError):
        vkt.matmul_add_relu(m, m, vkt.ones(3))


@pytest.mark.parametrize("mkn", [(1030, 67, 1031), (1028, 68, 1036)])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_wide_tile_path(dev, layout, mkn):
    # Products with at least 64 tiles of 128 x 128 take matmul_wide.comp: every stride direction, a
    # K that is no multiple of its 16-deep slices, edges that cut tiles, and the bias + relu epilogue.
    # Sizes that are multiples of 4 load as vec4s, the others element by element.
    rng = np.random.default_rng(7)
    m, k, n = mkn
    a = make(rng, (k, m) if layout[0] == "t" else (m, k), "float32")
    b = make(rng, (n, k) if layout[1] == "t" else (k, n), "float32")
    bias = make(rng, (n,), "float32")
    x, y = vkt.tensor(a, device=dev), vkt.tensor(b, device=dev)
    x, a = (x.T, a.T) if layout[0] == "t" else (x, a)
    y, b = (y.T, b.T) if layout[1] == "t" else (y, b)
    vkt.vulkan.reset_fallback_stats()
    check(x @ y, a, b, "float32")
    check(vkt.matmul_add_relu(x, y, vkt.tensor(bias, device=dev)), a, b, "float32", bias=bias, relu=True)
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("mkn", [(1030, 67, 1031), (1028, 68, 1036), (1024, 8, 1024), (1024, 16, 1024)])
def test_wide_tile_edges(dev, layout, mkn):
    # The wide tile reads rows of a past M and columns of b past N clamped to the last ones, whose inf and
    # NaN must reach only the last row and column of out; only the first slice tests k, partial where 16
    # does not divide K. K = 8 takes the small tile.
    rng = np.random.default_rng(14)
    m, k, n = mkn
    a, b = make(rng, (m, k), "float32"), make(rng, (k, n), "float32")
    a[-1, 0], b[-1, -1] = np.inf, np.nan
    x = vkt.tensor(np.ascontiguousarray(a.T), device=dev).T if layout[0] == "t" else vkt.tensor(a, device=dev)
    y = vkt.tensor(np.ascontiguousarray(b.T), device=dev).T if layout[1] == "t" else vkt.tensor(b, device=dev)
    got = to_numpy(x @ y)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    check(got[:-1, :-1], a[:-1], b[:, :-1], "float32")


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_big_tile_path(dev, layout):
    # At least 256 tiles of 128 x 128 take the big wide tile (128 invocations of 16 x 8): a batch of four,
    # edges that cut tiles; b stored transposed (read along k) is transposed in registers on its way to
    # shared memory.
    rng = np.random.default_rng(9)
    a = make(rng, (4, 67, 1030) if layout[0] == "t" else (4, 1030, 67), "float32")
    b, bias = make(rng, (1031, 67) if layout[1] == "t" else (67, 1031), "float32"), make(rng, (1031,), "float32")
    x, y = vkt.tensor(a, device=dev), vkt.tensor(b, device=dev)
    x, a = (x.mT, np.swapaxes(a, 1, 2)) if layout[0] == "t" else (x, a)
    y, b = (y.T, b.T) if layout[1] == "t" else (y, b)
    vkt.vulkan.reset_fallback_stats()
    check(vkt.matmul_add_relu(x, y, vkt.tensor(bias, device=dev)), a, b, "float32", bias=bias, relu=True)
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("layout,m", [("nn", 64), ("tn", 100), ("nt", 127), ("tt", 100)])
def test_low_tile_path(dev, layout, m):
    # 64 to 127 rows with at least 64 tiles of 64 x 128 take the 64 x 128 wide tile (128 invocations of 8 x 8), as
    # a convolution's 64 output channels over its windows do: a batch of eight, K no multiple of 16, edges that
    # cut tiles, every stride direction, the bias + relu epilogue, and gradients against float64 products.
    rng = np.random.default_rng(21)
    a = make(rng, (8, 37, m) if layout[0] == "t" else (8, m, 37), "float32")
    b, bias = make(rng, (1030, 37) if layout[1] == "t" else (37, 1030), "float32"), make(rng, (1030,), "float32")
    x, y = vkt.tensor(a, device=dev, requires_grad=True), vkt.tensor(b, device=dev, requires_grad=True)
    xv, a = (x.mT, np.swapaxes(a, 1, 2)) if layout[0] == "t" else (x, a)
    yv, b = (y.T, b.T) if layout[1] == "t" else (y, b)
    vkt.vulkan.reset_fallback_stats()
    check(xv @ yv, a, b, "float32")
    out = vkt.matmul_add_relu(xv, yv, vkt.tensor(bias, device=dev))
    check(out, a, b, "float32", bias=bias, relu=True)
    g = make(rng, (8, m, 1030), "float32")
    out.backward(vkt.tensor(g, device=dev))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    gz = g * (a64 @ b64 + bias > 0)
    ga, gb = gz @ b64.T, (np.swapaxes(a64, 1, 2) @ gz).sum(0)
    ga = np.swapaxes(ga, 1, 2) if layout[0] == "t" else ga
    gb = gb.T if layout[1] == "t" else gb
    np.testing.assert_allclose(to_numpy(x.grad), ga, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(to_numpy(y.grad), gb, rtol=1e-4, atol=1e-2)
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("k", [64, 72])
@pytest.mark.parametrize("n", [2048, 2050])
def test_float16_large_tiles(dev, n, k):
    # On adapters with tensor cores, at least 128 tiles of 128 x 256 take the wider cooperative-matrix
    # tile, 16 deep: K = 64 is four whole slices, 72 leaves a partial fifth (the slice loop goes two at a
    # time); n = 2050 rules out the 16-byte staging.
    rng = np.random.default_rng(10)
    a, b = make(rng, (2, 1030, k), "float16"), make(rng, (k, n), "float16")
    check(vkt.tensor(a, device=dev) @ vkt.tensor(b, device=dev), a, b, "float16")


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("side", ["column", "row", "vector"])
def test_matrix_vector_path(dev, side, transposed, dtype):
    # One column or one row of output take matvec.comp, which reads the matrix along k (8 outputs a
    # workgroup) or across it (32): both directions, batches, rows that cut workgroups, bias + relu.
    rng = np.random.default_rng(12)
    mat = make(rng, (3, 300, 77) if side == "column" else (77, 300), dtype)  # [.., rows, k] or [k, cols]
    vec = make(rng, (77, 1) if side == "column" else (3, 1, 77) if side == "row" else (77,), dtype)
    x = vkt.tensor(np.ascontiguousarray(np.swapaxes(mat, -1, -2)) if transposed else mat, device=dev)
    x = x.mT if transposed else x
    y = vkt.tensor(vec, device=dev)
    a, b, xa, yb = (mat, vec, x, y) if side == "column" else (vec, mat, y, x)
    vkt.vulkan.reset_fallback_stats()
    check(xa @ yb, a, b, dtype)
    bias = make(rng, (1,) if side == "column" else (300,), dtype)
    check(vkt.matmul_add_relu(xa, yb, vkt.tensor(bias, device=dev)), a, b, dtype, bias=bias, relu=True)
    if dtype == "float32":
        assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("bias_kind", ["matrix", "transposed", "column", "row"])
@pytest.mark.parametrize("mkn", [(1028, 40, 1036), (1027, 40, 1035), (2052, 24, 2044)])
def test_wide_tile_epilogue(dev, bias_kind, mkn):
    # The wide tile stores four columns at a time (N a multiple of 4), else one, and reads a float32 bias
    # that is dense along n four at a time too; a transposed or column bias takes four reads. The big tile
    # (2052 x 2044) reads the bias of its 16 rows in two rounds. alpha and beta scale through addmm.
    rng = np.random.default_rng(11)
    m, k, n = mkn
    a, b = make(rng, (m, k), "float32"), make(rng, (k, n), "float32")
    base = make(rng, {"matrix": (m, n), "transposed": (n, m), "column": (m, 1), "row": (n,)}[bias_kind], "float32")
    bias = vkt.tensor(base, device=dev)
    bias, base = (bias.T, base.T) if bias_kind == "transposed" else (bias, base)
    x, y = vkt.tensor(a, device=dev), vkt.tensor(b, device=dev)
    vkt.vulkan.reset_fallback_stats()
    check(vkt.matmul_add_relu(x, y, bias), a, b, "float32", bias=base, relu=True)
    check(vkt.addmm(bias, x, y, beta=0.5, alpha=2.0), 2 * a, b, "float32", bias=0.5 * np.broadcast_to(base, (m, n)))
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("mkn", [(9, 7, 11), (300, 77, 1), (1028, 40, 1036), (2048, 64, 2048)])
def test_fused_relu_keeps_nan(dev, dtype, mkn):
    # relu(NaN) is NaN, as in PyTorch, through every shader's epilogue: small, matrix-vector, wide and big
    # tiles, tensor cores.
    m, k, n = mkn
    rng = np.random.default_rng(13)
    a, b, bias = make(rng, (m, k), dtype), make(rng, (k, n), dtype), make(rng, (n,), dtype)
    a[5, 3] = np.nan
    got = to_numpy(vkt.matmul_add_relu(*(vkt.tensor(v, device=dev) for v in (a, b, bias))))
    assert np.isnan(got[5]).all() and not np.isnan(np.delete(got, 5, axis=0)).any()


def test_wide_tile_vec4_offsets(dev):
    # vec4 loads need 16-byte aligned rows: a view starting 4 elements in qualifies, one starting 2 in
    # does not; batches of 2 with broadcast b.
    rng = np.random.default_rng(8)
    a = make(rng, (2, 1024, 72), "float32")
    b = make(rng, (76, 1028), "float32")
    x, y = vkt.tensor(a, device=dev), vkt.tensor(b, device=dev)
    for start in (4, 2):
        check(x[:, :, start:start + 64] @ y[start:start + 64, start:start + 1024], a[:, :, start:start + 64],
              b[start:start + 64, start:start + 1024], "float32")


@pytest.mark.parametrize("shapes", [((64, 8192), (8192, 64)), ((2, 100, 4096), (4096, 30)), ((16384,), (16384,)),
                                    ((1, 5000 * 2), (5000 * 2, 3)), ((256, 4096), (4096, 384))])
def test_split_k_path(dev, shapes):
    # Few output tiles and a long K: K is cut into slices multiplied as a batch, then summed (on a GPU the
    # last row too: six 128 x 128 tiles, four slices of 1024).
    rng = np.random.default_rng(11)
    a, b = make(rng, shapes[0], "float32"), make(rng, shapes[1], "float32")
    vkt.vulkan.reset_fallback_stats()
    check(vkt.tensor(a, device=dev) @ vkt.tensor(b, device=dev), a, b, "float32")
    at = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if a.ndim > 1 else a
    x = vkt.tensor(at, device=dev)
    check((x.mT if a.ndim > 1 else x) @ vkt.tensor(b, device=dev), a, b, "float32")
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("shapes, dispatches", [(((1, 8192), (8192, 512)), 1), (((512, 8192), (8192,)), 1),
                                                (((2, 1, 4096), (4096, 128)), 1), (((1, 16384), (16384, 64)), 2)])
def test_vulkan_matvec_splits_k_only_for_few_outputs(shapes, dispatches):
    # A product with one row or column reads its matrix once, split or not: K is cut into slices (a product and
    # the sum of its slices) only where it has fewer than 256 outputs (an H100 ran 1x4096x4096 2.4 times slower
    # split in four).
    rng = np.random.default_rng(12)
    a, b = make(rng, shapes[0], "float32"), make(rng, shapes[1], "float32")
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    out = x @ y
    vkt.vulkan.synchronize()
    assert vkt.vulkan.kernel_stats()["dispatches"] == dispatches
    check(out, a, b, "float32")
    # and the gradients, which are matrix-vector products and outer products of these shapes, as torch's
    torch = pytest.importorskip("torch")
    xg, yg = vkt.tensor(a, device="vulkan", requires_grad=True), vkt.tensor(b, device="vulkan", requires_grad=True)
    (xg @ yg).sum().backward()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (tx @ ty).sum().backward()
    np.testing.assert_allclose(to_numpy(xg.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(to_numpy(yg.grad), ty.grad.numpy(), rtol=1e-4, atol=1e-3)


SMALLER_ADAPTER = """
import numpy as np, vkt
rng = np.random.default_rng(3)
for dtype, (m, k, n) in [("float64", (100, 70, 90)), ("float32", (100, 70, 90)), ("float32", (1030, 40, 1030))]:
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    got = (vkt.tensor(a, device="vulkan") @ vkt.tensor(b, device="vulkan")).cpu().numpy()
    assert np.abs(got - a.astype(np.float64) @ b).max() < 1e-3, dtype
print(vkt.vulkan.get_device_properties().max_shared_memory)
print(sorted(vkt.vulkan.fallback_stats(by_reason=True).items()))
"""


@pytest.mark.parametrize("limit", [24576, 16384])
def test_smaller_shared_memory(dev, limit):
    # On an adapter with less shared memory a workgroup (posed by VKT_SHARED_MEMORY_LIMIT), products take
    # the tiles that fit: with 24 KiB float64 takes the 16-deep small tile; with 16 KiB (Vulkan's minimum)
    # float32 takes it too, large products included, and float64, whose tiles fit no more, the CPU.
    if vkt.vulkan.get_device_properties().max_shared_memory <= limit:
        pytest.skip("needs an adapter with more shared memory than the limit")
    r = run_python(SMALLER_ADAPTER, env={"VKT_SHARED_MEMORY_LIMIT": str(limit)})
    assert r.returncode == 0, r.stderr
    shared, fallbacks = r.stdout.strip().splitlines()
    assert int(shared) == limit
    reason = "the tiles need more shared memory than the adapter has"
    assert fallbacks == str([] if limit == 24576 else [(("matmul", reason), 1)])



LAST_WAVE = """
import numpy as np, vkt
from scipy.special import erf
rng = np.random.default_rng(5)
F = vkt.nn.functional
def t(a, **kw):
    return vkt.tensor(a, device="vulkan", **kw)
def check(got, ref, what):
    got = got.cpu().numpy()
    assert got.shape == ref.shape, what
    err = np.abs(got - ref).max() / max(1.0, np.abs(ref).max())
    assert err < 1e-5, (what, err)
def same_bits(x, y):
    return np.array_equal(x.cpu().numpy().view(np.uint32), y.cpu().numpy().view(np.uint32))
# 256 of the big tile's 128 x 128 tiles: 8 x 512 x 1024, K of 40 and 17 (a partial first slice), and 2 x 4 x 512 x
# 1024 (two batch dims, which the shader walks) with K of 600 (38 slices)
for lead, ks in (((8,), (40, 17)), ((2, 4), (600,))):
    for k in ks:
        a, b, bias = rng.standard_normal((*lead, 512, k)), rng.standard_normal((k, 1024)), rng.standard_normal(1024)
        ref = a @ b
        va, vb, vbias = t(a.astype(np.float32)), t(b.astype(np.float32)), t(bias.astype(np.float32))
        check(va @ vb, ref, ("a @ b", k))
        check(va @ t(np.ascontiguousarray(b.T).astype(np.float32)).T, ref, ("a @ b.T.T", k))
        fused = F.gelu(va @ vb + vbias)
        check(fused, 0.5 * (ref + bias) * (1 + erf((ref + bias) / np.sqrt(2))), ("gelu epilogue", k))
        vkt.vulkan.set_fusion(False)
        assert same_bits(fused, F.gelu(va @ vb + vbias)), ("fused and unfused differ", k)
        vkt.vulkan.set_fusion(True)
        check(vkt.baddbmm(vbias, va.reshape(8, 512, k), vb.expand(8, k, 1024)), (ref + bias).reshape(8, 512, 1024),
              ("baddbmm", k))
# matmul_add_relu forward and backward: its forward product is split
x, w, bias = rng.standard_normal((8, 512, 40)), rng.standard_normal((40, 1024)), rng.standard_normal(1024)
g = rng.standard_normal((8, 512, 1024))
vx, vw, vbias = (t(v.astype(np.float32), requires_grad=True) for v in (x, w, bias))
y = vkt.matmul_add_relu(vx, vw, vbias)
pre = x @ w + bias
check(y, np.maximum(pre, 0), "matmul_add_relu")
y.backward(t(g.astype(np.float32)))
gp = g * (pre > 0)
check(vx.grad, gp @ w.T, "grad x")
check(vw.grad, np.einsum("bmk,bmn->kn", x, gp), "grad w")
assert not vkt.vulkan.fallback_stats()
assert vkt.vulkan.validation_messages() == []
print("ok")
"""


@pytest.mark.parametrize("slots", ["120", "255"])
def test_last_wave_split(dev, slots):
    # Where a product's tiles leave the GPU mostly idle in their last wave, its last tiles are summed in pieces
    # (matmul.c's split_of) over the workgroups a GPU runs at once (on an NVIDIA GPU, from
    # VK_NV_shader_sm_builtins); VKT_PRODUCT_SLOTS poses that number on any adapter. 256 tiles over 120 places leave
    # 16 in the last wave, 4 pieces each; over 255, 1 tile, in 16 pieces where K has 32 slices or more, else fewer.
    # VKT_PROFILE lists the kernels run, which shows that the split one did.
    r = run_python(LAST_WAVE, env={"VKT_PRODUCT_SLOTS": slots, "VKT_PROFILE": "1", "VKT_VALIDATION": "1"}, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-3000:]
    assert "PIECES" in r.stderr, r.stderr[-3000:]

WIDE_SPLIT = """
import numpy as np, vkt
from scipy.special import erf
rng = np.random.default_rng(6)
# a weight's gradient, x.T @ g, over a long batch into an output of few 128 x 128 tiles: 200 x 300 is 6 of them,
# and K = 12288 splits into 12 slices of 1024 (to about 256 workgroups), summed by a reduction; and a batch of two
for shape in ((12288, 200, 300), (2, 8192, 130, 260)):
    *batch, k, m, n = shape
    x, g = rng.standard_normal((*batch, k, m)), rng.standard_normal((*batch, k, n))
    got = vkt.tensor(x.astype(np.float32), device="vulkan").mT @ vkt.tensor(g.astype(np.float32), device="vulkan")
    ref = np.swapaxes(x, -1, -2) @ g
    err = np.abs(got.cpu().numpy() - ref).max() / np.abs(ref).max()
    assert err < 1e-5, (shape, err)
# 32 to 127 tiles split in the product's kernel (matmul.c's kernel_split), each tile summed by 4 pieces here: a
# weight's gradient into 512 x 1024 (32 tiles) over 4096 rows and over 4100 (a partial first slice); a bias, relu
# and a fused epilogue (the same bits as unfused) on 2 x 256 x 4096 @ 4096 x 1024; and matmul_add_relu's
# backward, whose weight gradient is such a product
F = vkt.nn.functional
def t(a, **kw):
    return vkt.tensor(a.astype(np.float32), device="vulkan", **kw)
def check(got, ref, what):
    err = np.abs(got.cpu().numpy() - ref).max() / max(1.0, np.abs(ref).max())
    assert got.shape == ref.shape and err < 1e-5, (what, err)
for k in (4096, 4100):
    x, g = rng.standard_normal((k, 512)), rng.standard_normal((k, 1024))
    check(t(x).T @ t(g), x.T @ g, ("x.T @ g", k))
a, b, bias = rng.standard_normal((2, 256, 4096)), rng.standard_normal((4096, 1024)), rng.standard_normal(1024)
va, vb, vbias = t(a), t(b), t(bias)
ref = a @ b
check(va @ vb, ref, "a @ b")
check(vkt.addmm(vbias, va.reshape(512, 4096), vb), ref.reshape(512, 1024) + bias, "addmm")
check(vkt.matmul_add_relu(va, vb, vbias), np.maximum(ref + bias, 0), "matmul_add_relu")
fused = F.gelu(va @ vb + vbias)
check(fused, 0.5 * (ref + bias) * (1 + erf((ref + bias) / np.sqrt(2))), "gelu epilogue")
vkt.vulkan.set_fusion(False)
assert np.array_equal(fused.cpu().numpy().view(np.uint32), F.gelu(va @ vb + vbias).cpu().numpy().view(np.uint32))
vkt.vulkan.set_fusion(True)
x, w, bias, g = (rng.standard_normal(s) for s in ((4096, 512), (512, 1024), (1024,), (4096, 1024)))
vx, vw, vbias = (t(v, requires_grad=True) for v in (x, w, bias))
vkt.matmul_add_relu(vx, vw, vbias).backward(t(g))
gp = g * (x @ w + bias > 0)
check(vw.grad, x.T @ gp, "grad w")
check(vx.grad, gp @ w.T, "grad x")
assert not vkt.vulkan.fallback_stats()
assert vkt.vulkan.validation_messages() == []
print("ok")
"""


def test_split_k_over_few_wide_tiles(dev):
    # A GPU splits K where a long product has few wide tiles (matmul.c's k_slices and kernel_split); a CPU adapter
    # does not, unless VKT_WIDE_SPLIT_K asks it to. VKT_PROFILE lists the reduction that sums the slices of the
    # products of fewer than 32 tiles, and the kernel that sums its own pieces of the others.
    r = run_python(WIDE_SPLIT, env={"VKT_WIDE_SPLIT_K": "1", "VKT_PROFILE": "1", "VKT_VALIDATION": "1"}, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-3000:]
    assert "matmul_wide.comp" in r.stderr and "OP_SUM" in r.stderr and "PIECES 4" in r.stderr, r.stderr[-3000:]
