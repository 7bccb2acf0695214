# Reductions of pending expressions (issue 19): `(x * y).sum()` computes x * y in the reduction's load,
# one dispatch that never writes nor allocates the product. Checks the dispatch counts (kernel_stats), that
# results are bit-identical to the unfused path and close to NumPy's float64, what happens to intermediates
# that are referenced elsewhere, autograd through them, and the layouts, dtypes and sizes a load must index.
import numpy as np
import pytest

import vkt
from conftest import assert_close


def stats():
    """Dispatches so far, counted before any read: on a GPU's device memory a read dispatches a copy."""
    vkt.vulkan.synchronize()
    return vkt.vulkan.kernel_stats()


def fresh():
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()


def run(fn, arrays, fused, read=lambda out: out.cpu().numpy()):
    """fn over vulkan copies of arrays with fusion on or off: its result read by read (as a NumPy array) and
    the dispatches it took."""
    vkt.vulkan.set_fusion(fused)
    try:
        ts = [vkt.tensor(a, device="vulkan") for a in arrays]
        fresh()
        out = fn(*ts)
        n = stats()["dispatches"]
        return read(out), n
    finally:
        vkt.vulkan.set_fusion(True)


def fused_and_unfused(fn, arrays):
    """fn over vulkan copies of arrays, with fusion on (True) and off (False): the dispatches it took, the fused
    kernels, and its results as NumPy arrays, counted before they are read."""
    results = {}
    for fused in (True, False):
        vkt.vulkan.set_fusion(fused)
        try:
            ts = [vkt.tensor(a, device="vulkan") for a in arrays]
            fresh()
            out = fn(*ts)
            st = stats()
            results[fused] = st["dispatches"], st["fused_kernels"], [t.cpu().numpy() for t in out]
        finally:
            vkt.vulkan.set_fusion(True)
    return results


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


rng = np.random.default_rng(0)


def arr(*shape, dtype="float32"):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


# (name, fn on tensors, fn on float64 arrays, arrays, dispatches fused, rtol)
CASES = [
    ("sum", lambda x, y: (x * y).sum(), lambda x, y: (x * y).sum(), [arr(37, 29), arr(37, 29)], 1, 1e-5),
    ("sum dim 1", lambda x, y: (x * y).sum(dim=1), lambda x, y: (x * y).sum(1), [arr(37, 290), arr(37, 290)], 1, 1e-5),
    ("sum dim 0 (columns)", lambda x, y: (x * y).sum(0), lambda x, y: (x * y).sum(0), [arr(300, 70), arr(300, 70)], 1,
     1e-5),
    ("short rows", lambda x, y: (x - y).sum(-1), lambda x, y: (x - y).sum(-1), [arr(50, 7), arr(50, 7)], 1, 1e-5),
    ("keepdim", lambda x, y: (x * y).sum(1, keepdim=True), lambda x, y: (x * y).sum(1, keepdims=True),
     [arr(9, 40), arr(9, 40)], 1, 1e-5),
    ("dims 0 and 2", lambda x, y: (x + y).sum((0, 2)), lambda x, y: (x + y).sum((0, 2)), [arr(5, 6, 7), arr(5, 6, 7)], 1,
     1e-5),
    ("broadcast row", lambda x, b: (x * b).sum(1), lambda x, b: (x * b).sum(1), [arr(37, 29), arr(29)], 1, 1e-5),
    ("broadcast outer", lambda a, b: (a - b).abs().sum(0), lambda a, b: np.abs(a - b).sum(0), [arr(40, 1), arr(1, 33)],
     1, 1e-5),
    ("transposed", lambda x, y: (x.t() * y).sum(1), lambda x, y: (x.T * y).sum(1), [arr(29, 37), arr(37, 29)], 1, 1e-5),
    ("sliced", lambda x, y: (x[:, ::2] * y[1:]).sum(), lambda x, y: (x[:, ::2] * y[1:]).sum(),
     [arr(20, 30), arr(21, 15)], 1, 1e-5),
    ("scalars", lambda x: ((x * 1.5 + 0.5).relu() * x).sum(1), lambda x: (np.maximum(x * 1.5 + 0.5, 0) * x).sum(1),
     [arr(16, 100)], 1, 1e-5),
    ("mean", lambda x, y: (x * y).mean(1), lambda x, y: (x * y).mean(1), [arr(8, 300), arr(8, 300)], 1, 1e-5),
    ("amax", lambda x, y: (x - y).amax(1), lambda x, y: (x - y).max(1), [arr(8, 300), arr(8, 300)], 1, 1e-6),
    ("amin all", lambda x, y: (x * y).amin(), lambda x, y: (x * y).min(), [arr(8, 30), arr(8, 30)], 1, 1e-6),
    ("var", lambda x, y: (x + y).var(1), lambda x, y: (x + y).var(1, ddof=1), [arr(8, 300), arr(8, 300)], 1, 1e-4),
    ("std", lambda x, y: (x + y).std(0, unbiased=False), lambda x, y: (x + y).std(0), [arr(300, 8), arr(300, 8)], 1,
     1e-4),
    ("centred squares", lambda x, m: ((x - m) ** 2).mean(-1, keepdim=True),
     lambda x, m: ((x - m) ** 2).mean(-1, keepdims=True), [arr(64, 128), arr(64, 1)], 1, 1e-5),
    ("float16", lambda x, y: (x * y).sum(1), lambda x, y: (x * y).sum(1), [arr(8, 64, dtype="float16"),
                                                                         arr(8, 64, dtype="float16")], 1, 2e-3),
    ("int64", lambda x, y: (x * y).sum(1), lambda x, y: (x * y).sum(1), [arr(8, 64, dtype="int64"),
                                                                       arr(8, 64, dtype="int64")], 1, 0),
    ("int32 amax", lambda x, y: (x + y).amax(0), lambda x, y: (x + y).max(0), [arr(64, 8, dtype="int32"),
                                                                               arr(64, 8, dtype="int32")], 1, 0),
    ("prod", lambda x, y: (x * 0.1 + y * 0.1 + 1).prod(1), lambda x, y: (x * 0.1 + y * 0.1 + 1).prod(1),
     [arr(8, 40), arr(8, 40)], 1, 1e-5),
    ("logsumexp", lambda x, y: (x * 2 + y).logsumexp(1), lambda x, y: np.log(np.exp(x * 2 + y).sum(1)),
     [arr(8, 300), arr(8, 300)], 1, 1e-5),
    # softmax and log_softmax write every element: the output has strides along the reduced dim too
    ("softmax, a mask added", lambda x, m: (x * 0.5 + m).softmax(-1), lambda x, m: softmax(x * 0.5 + m, -1),
     [arr(37, 53), arr(53)], 1, 1e-5),
    ("softmax dim 0, transposed", lambda x, y: (x.t() - y).softmax(0), lambda x, y: softmax(x.T - y, 0),
     [arr(29, 37), arr(37, 29)], 1, 1e-5),
    ("log_softmax dim 1 of 3", lambda x: (x / 3).log_softmax(1), lambda x: np.log(softmax(x / 3, 1)),
     [arr(4, 50, 6)], 1, 1e-5),
    ("softmax of a column", lambda x, y: (x + y).softmax(1), lambda x, y: softmax(x + y, 1), [arr(9, 1), arr(1, 30)],
     1, 1e-5),
    ("reshaped", lambda x, y: (x * y).reshape(10, -1).sum(1), lambda x, y: (x * y).reshape(10, -1).sum(1),
     [arr(20, 30), arr(20, 30)], 1, 1e-5),
    ("reshaped softmax", lambda x, y: (x + y).view(4, 5, 30).softmax(1),
     lambda x, y: softmax((x + y).reshape(4, 5, 30), 1), [arr(20, 30), arr(20, 30)], 1, 1e-5),
    # long columns are cut into pieces of rows (a view of the expression), reduced, then the pieces' results
    ("column pieces", lambda x, y: (x * y).sum(0), lambda x, y: (x * y).sum(0), [arr(4096, 80), arr(4096, 80)], 2,
     1e-5),
    ("column pieces, 3-d mean", lambda x, b: (x - b).mean((0, 1)), lambda x, b: (x - b).mean((0, 1)),
     [arr(8, 512, 80), arr(80)], 2, 1e-5),
    # reduced dims on both sides of a kept one, 2^20 elements or more: the trailing ones first, then the rest
    ("dims 0 and 2, large", lambda x, y: (x + y).sum((0, 2)), lambda x, y: (x + y).sum((0, 2)),
     [arr(16, 8, 8192), arr(16, 8, 8192)], 2, 1e-5),
    # all and any test each value of the expression against zero in its own compute type; argmax and argmin
    ("all of a comparison", lambda x, y: (x > y).all(1), lambda x, y: (x > y).all(1), [arr(37, 3), arr(37, 3)], 1, 0),
    ("any over dim 0", lambda x, y: (x * y > 1).any(0), lambda x, y: (x * y > 1).any(0), [arr(40, 29), arr(40, 29)], 1,
     0),
    ("all of floats", lambda x, y: (x * (y > 0)).all(1), lambda x, y: (x * (y > 0)).all(1), [arr(9, 4), arr(9, 4)], 1,
     0),
    ("any of int64", lambda x, y: (x - y).any(), lambda x, y: (x - y).any(), [arr(8, 6, dtype="int64")] * 2, 1, 0),
    ("all of uint8", lambda x, y: (x & y).all(-1), lambda x, y: (x & y).all(-1),
     [arr(30, 3, dtype="uint8"), arr(30, 3, dtype="uint8")], 1, 0),
    ("argmax", lambda x, y: (x * y).argmax(1), lambda x, y: (x * y).argmax(1), [arr(37, 290), arr(37, 290)], 1, 0),
    ("argmin of all, transposed", lambda x, y: (x.t() - y).argmin(), lambda x, y: (x.T - y).argmin(),
     [arr(29, 37), arr(37, 29)], 1, 0),
    ("argmax keepdim, broadcast", lambda x, b: (x + b).argmax(0, keepdim=True),
     lambda x, b: (x + b).argmax(0)[None], [arr(300, 7), arr(7)], 1, 0),
    # A reduction computing in another type than its expression loads the expression's values where they are exact
    # in the expression's type (reduce.glsl's A and C): int32 sums to int64, a comparison counted by sum
    ("int32 sum", lambda x, y: (x * y).sum(), lambda x, y: (x * y).sum(), [arr(8, 64, dtype="int32"),
                                                                         arr(8, 64, dtype="int32")], 1, 0),
    ("comparison counted", lambda x, y: (x > y).sum(1), lambda x, y: (x > y).sum(1), [arr(37, 290), arr(37, 290)], 1,
     0),
    ("comparison counted over dim 0", lambda x, y: (x * y > 0.5).sum(0), lambda x, y: (x * y > 0.5).sum(0),
     [arr(300, 7), arr(300, 7)], 1, 0),
    ("count_nonzero", lambda x, y: (x - y).count_nonzero(1), lambda x, y: np.count_nonzero(x - y, 1),
     [arr(40, 9, dtype="int32"), arr(40, 9, dtype="int32")], 1, 0),
    ("uint8 prod", lambda x, y: ((x & y) % 3 + 1).prod(0), lambda x, y: ((x.astype(np.uint8) & y.astype(np.uint8))
                                                                         % 3 + 1).astype(np.int64).prod(0),
     [arr(20, 9, dtype="uint8"), arr(20, 9, dtype="uint8")], 1, 0),
    ("softmax in float64", lambda x, y: (x * y).softmax(1, dtype=vkt.float64),
     lambda x, y: softmax((x.astype(np.float32) * y.astype(np.float32)).astype(np.float64), 1),
     [arr(5, 300), arr(5, 300)], 1, 1e-12),
    ("float32 summed in float64", lambda x, y: (x * y).sum(1, dtype=vkt.float64),
     lambda x, y: (x.astype(np.float32) * y.astype(np.float32)).astype(np.float64).sum(1),
     [arr(5, 300), arr(5, 300)], 1, 1e-12),
    # a cast to int64 of floats is not exact in float: computed first
    ("float cast to int64", lambda x, y: (x * y * 1e3).long().sum(1), lambda x, y: np.trunc(
        (x.astype(np.float32) * y.astype(np.float32) * np.float32(1e3)).astype(np.float32)).astype(np.int64).sum(1),
     [arr(6, 50), arr(6, 50)], 2, 0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_reductions_match_unfused_and_numpy(fusion, case):
    _, fn, ref, arrays, dispatches, rtol = case
    fused, n_fused = run(fn, arrays, True)
    unfused, n_unfused = run(fn, arrays, False)
    assert n_fused == dispatches and n_unfused >= 2
    assert same_bits(fused, unfused), (fused, unfused)
    want = ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64) for a in arrays])
    assert_close(fused, want, rtol=rtol, atol=rtol * 10)


# Whole-tensor reductions of 2^20 elements or more run in two stages (rows of the tensor's span, then their
# results): the first stage computes the expression in its load where the rows' cut falls on its tensors' dims.
SPLIT_CASES = [
    ("sum", lambda x, y: (x * y).sum(), lambda x, y: (x * y).sum(), (1024, 1024), 2),
    ("mean", lambda x, y: (x - y).mean(), lambda x, y: (x - y).mean(), (2048, 520), 2),
    ("amax transposed", lambda x, y: (x.t() * y.t()).amax(), lambda x, y: (x.T * y.T).max(), (1024, 1024), 2),
    ("broadcast row", lambda x, y: (x + y[0]).sum(), lambda x, y: (x + y[0]).sum(), (1024, 1025), 2),
    ("cut inside a broadcast", lambda x, y: (x - y[0]).sum(), lambda x, y: (x - y[0]).sum(), (3, 1000, 350), 3),
    ("all", lambda x, y: (x + y > -6).all(), lambda x, y: (x + y > -6).all(), (1024, 1024), 2),
    ("any", lambda x, y: (x * y > 30).any(), lambda x, y: (x * y > 30).any(), (1024, 1024), 2),
    ("comparison counted", lambda x, y: (x > y).sum(), lambda x, y: (x > y).sum(), (1024, 1025), 2),
]


@pytest.mark.parametrize("case", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_split_whole_tensor_reductions(fusion, case):
    _, fn, ref, shape, dispatches = case
    arrays = [arr(*shape), arr(*shape)]
    fused, n_fused = run(fn, arrays, True)
    unfused, n_unfused = run(fn, arrays, False)
    assert n_fused == dispatches and n_unfused >= 3
    assert same_bits(fused, unfused), (fused, unfused)
    assert_close(fused, ref(*[a.astype(np.float64) for a in arrays]), rtol=1e-5, atol=1e-3)


# max and min along a dim give values and indices, both written by the one kernel that computes the expression in
# its load: (name, fn, reference of (values, indices) on float64 (int64) arrays, arrays)
INDICES_CASES = [
    ("max dim 1", lambda x, y: (x - y).max(dim=1), lambda x, y: ((x - y).max(1), (x - y).argmax(1)),
     [arr(37, 290), arr(37, 290)]),
    ("min dim 0 (columns), keepdim", lambda x, y: (x * y).min(0, keepdim=True),
     lambda x, y: ((x * y).min(0, keepdims=True), (x * y).argmin(0)[None]), [arr(300, 70), arr(300, 70)]),
    ("short rows", lambda x, y: (x + y).max(-1), lambda x, y: ((x + y).max(-1), (x + y).argmax(-1)),
     [arr(500, 5), arr(500, 5)]),
    ("long rows", lambda x, y: (x * y).min(1), lambda x, y: ((x * y).min(1), (x * y).argmin(1)),
     [arr(3, 50001), arr(3, 50001)]),
    ("middle dim of 3", lambda x, y: (x - y).max(1), lambda x, y: ((x - y).max(1), (x - y).argmax(1)),
     [arr(4, 301, 6), arr(4, 301, 6)]),
    ("broadcast, transposed", lambda x, b: (x.t() - b).max(0), lambda x, b: ((x.T - b).max(0), (x.T - b).argmax(0)),
     [arr(29, 37), arr(29)]),
    ("a softmax's max", lambda x, m: (x * 0.5 + m).max(-1, keepdim=True),
     lambda x, m: ((x * 0.5 + m).max(-1, keepdims=True), (x * 0.5 + m).argmax(-1)[:, None]), [arr(37, 53), arr(53)]),
    ("reshaped", lambda x, y: (x * y).view(10, -1).max(1),
     lambda x, y: ((x * y).reshape(10, -1).max(1), (x * y).reshape(10, -1).argmax(1)), [arr(20, 30), arr(20, 30)]),
    ("0-d", lambda x, y: (x * y).max(0), lambda x, y: (x * y, np.int64(0)), [arr(), arr()]),
    ("float16", lambda x, y: (x * y).max(1), lambda x, y: ((x * y).max(1), (x * y).argmax(1)),
     [arr(8, 64, dtype="float16"), arr(8, 64, dtype="float16")]),
    ("int32, ties", lambda x, y: (x + y).min(1), lambda x, y: ((x + y).min(1), (x + y).argmin(1)),
     [arr(30, 50, dtype="int32"), arr(30, 50, dtype="int32")]),
    ("int64", lambda x, y: (x - y).max(0), lambda x, y: ((x - y).max(0), (x - y).argmax(0)),
     [arr(64, 8, dtype="int64"), arr(64, 8, dtype="int64")]),
]


@pytest.mark.parametrize("case", INDICES_CASES, ids=[c[0] for c in INDICES_CASES])
def test_max_and_min_along_a_dim_take_the_expression_in_their_load(fusion, case):
    _, fn, ref, arrays = case
    results = fused_and_unfused(fn, arrays)
    n_fused, kernels, (values, indices) = results[True]
    assert n_fused == 1 and len(kernels) == 1 and results[False][0] >= 2
    assert same_bits(values, results[False][2][0]) and same_bits(indices, results[False][2][1])
    kind = "f" if arrays[0].dtype.kind == "f" else "i"
    want_v, want_i = ref(*[a.astype(np.float64 if kind == "f" else np.int64) for a in arrays])
    assert_close(values, want_v, rtol=2e-3 if arrays[0].dtype == np.float16 else 1e-6, atol=1e-5)
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices, want_i)  # of ties (integers) the first position, as NumPy's


def test_max_along_a_dim_values_and_indices_each_held_or_dropped(fusion):
    a, b = arr(37, 300), arr(37, 300)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    d = a - b  # in float32, as the device subtracts
    fresh()
    v, i = (x - y).max(1)
    got_i = i.cpu().numpy()  # read first: computes both
    assert stats()["fused_kernels"] == [("sub amax", 1)]
    np.testing.assert_array_equal(got_i, d.argmax(1))
    np.testing.assert_array_equal(v.cpu().numpy(), d.max(1))
    fresh()
    i = (x - y).min(1).indices  # the values are dropped while pending: the indices still come
    vkt.vulkan.synchronize()
    np.testing.assert_array_equal(i.cpu().numpy(), d.argmin(1))
    v = (x - y).max(1).values  # the indices are dropped: the kernel writes the values only
    np.testing.assert_array_equal(v.cpu().numpy(), d.max(1))
    fresh()
    (x - y).max(1)  # both dropped while pending: never computed
    assert stats()["dispatches"] == 0
    v, i = (x - y).max(1)
    w = i * 2 + v.to(vkt.int64)  # read by another expression: computed first
    i.add_(1)  # in place on the pending indices
    np.testing.assert_array_equal(w.cpu().numpy(), d.argmax(1) * 2 + d.max(1).astype(np.int64))
    np.testing.assert_array_equal(i.cpu().numpy(), d.argmax(1) + 1)
    fresh()
    n = (x - y).max(1).indices.sum()  # a reduction of the pending indices
    assert stats()["dispatches"] == 2  # counted before the read, which copies on a GPU
    assert n.item() == d.argmax(1).sum()


def test_max_and_min_along_a_dim_with_nan_and_ties_match_torch(fusion):
    """NaN is the largest and the smallest value, and of equal values the first position wins, as in torch."""
    torch = pytest.importorskip("torch")
    a = rng.integers(-3, 4, (6, 300)).astype(np.float32)
    a[1, 30] = a[4, 0] = a[4, 200] = np.nan
    b = rng.integers(-3, 4, (6, 300)).astype(np.float32)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    tx, ty = torch.tensor(a), torch.tensor(b)
    for fn in (lambda p, q: (p + q).max(1), lambda p, q: (p * q).min(1), lambda p, q: (p - q).max(0),
               lambda p, q: (p.t() * 2).min(0, keepdim=True)):
        fresh()
        got = fn(x, y)
        assert stats()["dispatches"] == 1
        want = fn(tx, ty)
        for g, w in zip(got, want):
            assert np.array_equal(g.cpu().numpy(), w.numpy(), equal_nan=True)


def test_sum_of_a_product_is_one_kernel(fusion):
    x, y = (vkt.tensor(arr(64, 256), device="vulkan") for _ in range(2))
    fresh()
    s, s1 = (x * y).sum(), (x * y).sum(dim=1)
    assert vkt.vulkan.kernel_stats()["dispatches"] == 0  # pending until needed
    st = stats()
    assert st["dispatches"] == 2 and sorted(k for k, _ in st["fused_kernels"]) == ["mul sum", "mul sum"]
    xn, yn = x.cpu().numpy().astype(np.float64), y.cpu().numpy().astype(np.float64)
    assert_close(s.item(), (xn * yn).sum(), rtol=1e-5, atol=1e-4)
    assert_close(s1.cpu().numpy(), (xn * yn).sum(1), rtol=1e-5, atol=1e-5)


def test_the_intermediate_is_never_allocated(fusion):
    x, y = vkt.randn(256, 1024, device="vulkan"), vkt.randn(256, 1024, device="vulkan")
    vkt.vulkan.synchronize()
    base = vkt.vulkan.memory_allocated()
    vkt.vulkan.reset_peak_memory_stats()
    s = (x * y).sum(dim=1)
    vkt.vulkan.synchronize()
    assert vkt.vulkan.max_memory_allocated() - base == 4 * 256  # the output only
    vkt.vulkan.set_fusion(False)
    vkt.vulkan.reset_peak_memory_stats()
    u = (x * y).sum(dim=1)
    vkt.vulkan.synchronize()
    assert vkt.vulkan.max_memory_allocated() - base >= 4 * 256 * 1024  # unfused: the product is written
    vkt.vulkan.set_fusion(True)
    assert same_bits(s.cpu().numpy(), u.cpu().numpy())


def test_constants_do_not_recompile(fusion):
    x = vkt.tensor(arr(8, 100), device="vulkan")
    fresh()
    sums = [(x * c).sum(1) for c in (1.5, 2.5, -3.0)]  # (a result dropped while pending is never computed)
    assert stats()["fused_kernels"] == [("mul sum", 3)]
    assert same_bits(sums[2].cpu().numpy(), (sums[0] * -2).cpu().numpy())


# Intermediates referenced elsewhere (held here by the case's return value) are written by the reduction's
# own kernel, in its first pass over each row: (name, fn returning the held tensors and then the result,
# reference of the result, arrays, dispatches fused). Rows of every layout the reductions choose: one a
# workgroup, a team of 32 (rows up to 1024), columns, one an invocation (short rows), and a split whole-tensor
# sum (two stages).
HELD_CASES = [
    ("sum of a held product", lambda x, y: (t := x * y, (t + 1).sum(1)), lambda x, y: (x * y + 1).sum(1),
     [arr(16, 50), arr(16, 50)], 1),
    ("the value itself held", lambda x, y: (t := x - y, t.mean()), lambda x, y: (x - y).mean(),
     [arr(16, 50), arr(16, 50)], 1),
    ("long rows", lambda x, y: (t := x * y, t.sum(1)), lambda x, y: (x * y).sum(1), [arr(8, 5000), arr(8, 5000)], 1),
    ("columns", lambda x, y: (t := x * y, (t * 2).sum(0)), lambda x, y: (x * y * 2).sum(0),
     [arr(300, 70), arr(300, 70)], 1),
    ("short rows", lambda x, y: (t := x + y, t.amax(1)), lambda x, y: (x + y).max(1), [arr(500, 5), arr(500, 5)], 1),
    ("two held", lambda x, y: (a := x * 2, b := a + y, (b * b).sum(1)), lambda x, y: ((x * 2 + y) ** 2).sum(1),
     [arr(64, 300), arr(64, 300)], 1),
    ("broadcast and transposed", lambda x, y: (t := x.t() * y, t.sum(1)), lambda x, y: (x.T * y).sum(1),
     [arr(29, 37), arr(37, 1)], 1),
    ("var: two passes", lambda x, y: (t := x + y, t.var(1)), lambda x, y: (x + y).var(1, ddof=1),
     [arr(8, 300), arr(8, 300)], 1),
    ("softmax: two passes", lambda x, m: (t := x * 0.5 + m, t.softmax(-1)), lambda x, m: softmax(x * 0.5 + m, -1),
     [arr(37, 530), arr(530)], 1),
    ("logsumexp", lambda x, y: (t := x - y, t.logsumexp(0)), lambda x, y: np.log(np.exp(x - y).sum(0)),
     [arr(40, 9), arr(40, 9)], 1),
    ("column pieces", lambda x, y: (t := x * y, t.sum(0)), lambda x, y: (x * y).sum(0),
     [arr(4096, 80), arr(4096, 80)], 2),
    ("split whole tensor", lambda x, y: (t := x * y, t.sum()), lambda x, y: (x * y).sum(),
     [arr(1024, 1024), arr(1024, 1024)], 2),
    ("float16", lambda x, y: (t := x * y, t.sum(1)), lambda x, y: (x * y).sum(1),
     [arr(8, 64, dtype="float16"), arr(8, 64, dtype="float16")], 1),
    ("int64", lambda x, y: (t := x * y, t.amin(0)), lambda x, y: (x * y).min(0),
     [arr(64, 8, dtype="int64"), arr(64, 8, dtype="int64")], 1),
    # max and min along a dim: values and indices (the last result, compared with NumPy's argmax)
    ("max along a dim", lambda x, y: (t := x - y, *(t * 2).max(1)), lambda x, y: (2 * (x - y)).argmax(1),
     [arr(16, 500), arr(16, 500)], 1),
    ("min along columns", lambda x, y: (t := x * y, *t.min(0)), lambda x, y: (x * y).argmin(0),
     [arr(300, 70), arr(300, 70)], 1),
]


@pytest.mark.parametrize("case", HELD_CASES, ids=[c[0] for c in HELD_CASES])
def test_a_referenced_intermediate_is_written_by_the_reduction(fusion, case):
    _, fn, ref, arrays, dispatches = case
    results = fused_and_unfused(fn, arrays)
    (n_fused, _, fused), (n_unfused, _, unfused) = results[True], results[False]
    assert n_fused == dispatches and n_unfused > dispatches
    for f, u in zip(fused, unfused):
        assert same_bits(f, u), (f, u)
    kind = "f" if arrays[0].dtype.kind == "f" else "i"
    want = ref(*[a.astype(np.float64 if kind == "f" else np.int64) for a in arrays])
    assert_close(fused[-1], want, rtol=1e-5 if arrays[0].dtype != np.float16 else 2e-3, atol=1e-3)


def test_held_intermediates_past_the_buffer_limit(fusion):
    a, b = arr(16, 50), arr(16, 50)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    fresh()
    held = [x * y]
    for i in range(7):  # more results than a kernel binds: some are computed first, then read
        held.append(held[-1] + i)
    s = held[-1].sum(1)
    ref = a.astype(np.float64) * b
    assert_close(s.cpu().numpy(), (ref + sum(range(7))).sum(1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(held[0].cpu().numpy(), a * b)
    assert_close(held[4].cpu().numpy(), ref + 6, rtol=1e-6, atol=1e-5)


def test_an_intermediate_read_by_another_expression(fusion):
    a = arr(16, 50)
    x = vkt.tensor(a, device="vulkan")
    fresh()
    t = x * 2
    u, s = t + 1, (t * 3).sum()  # t is read by another pending expression: the sum writes it, u reads it
    c = s.clone()  # needs s (a copy: counted before any read, which on a GPU's memory dispatches one)
    st = stats()
    assert st["dispatches"] == 3 and st["fused_kernels"] == [("mul mul sum", 1)]  # then u's add alone
    assert_close(c.item(), (a.astype(np.float64) * 6).sum(), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(u.cpu().numpy(), a * 2 + 1)


# (shape, reduction, its reference, dispatches, the fused kernel): one pass, a whole-tensor sum in two stages
# (the first writes t), and column means cut into pieces (likewise)
NEEDED_CASES = [((64, 300), lambda t: t.sum(0), lambda t: t.sum(0), 1, "mul sum"),
                ((1024, 1024), lambda t: t.sum(), lambda t: t.sum(), 2, "mul sum"),
                ((4096, 80), lambda t: t.mean(0), lambda t: t.mean(0), 2, "mul mean")]


@pytest.mark.parametrize("case", NEEDED_CASES, ids=["one pass", "two stages", "column pieces"])
def test_a_value_needed_while_a_reduction_reads_it(fusion, case):
    shape, reduce, ref, dispatches, kernel = case
    a, b = arr(*shape), arr(*shape)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    fresh()
    t = x * y
    s = reduce(t)  # pending when t is needed: computed then, it writes t from its load
    c = t.clone()  # needs t (a copy: counted before any read, which on a GPU's memory dispatches one)
    st = stats()
    assert st["dispatches"] == dispatches + 1 and st["fused_kernels"] == [(kernel, 1)]
    np.testing.assert_array_equal(c.cpu().numpy(), a * b)
    np.testing.assert_array_equal(t.cpu().numpy(), a * b)
    assert_close(s.cpu().numpy(), ref(a.astype(np.float64) * b), rtol=1e-5, atol=1e-4)


def test_matmul_add_relu_backward_sums_the_bias_in_one_kernel(fusion):
    rng2 = np.random.default_rng(1)
    arrays = [rng2.standard_normal(s).astype(np.float32) for s in ((8, 512, 96), (96, 80), (80,))]  # column pieces
    grads = {}
    for fused in (True, False):
        vkt.vulkan.set_fusion(fused)
        try:
            x, w, bias = (vkt.tensor(v, device="vulkan", requires_grad=True) for v in arrays)
            fresh()
            vkt.matmul_add_relu(x, w, bias).sum().backward()
            grads[fused] = [t.grad.cpu().numpy() for t in (x, w, bias)]
            if fused:  # relu's backward is written by the bias's sum, which the products then read
                assert ("threshold_backward sum", 1) in stats()["fused_kernels"]
        finally:
            vkt.vulkan.set_fusion(True)
    for f, u in zip(grads[True], grads[False]):
        assert same_bits(f, u)
    xs, ws, bs = (v.astype(np.float64) for v in arrays)
    gz = (xs @ ws + bs > 0).astype(np.float64)
    assert_close(grads[True][2], gz.sum((0, 1)), rtol=1e-5, atol=1e-4)
    assert_close(grads[True][1], xs.reshape(-1, 96).T @ gz.reshape(-1, 80), rtol=1e-4, atol=1e-3)


def test_layer_norm_chain_matches_unfused(fusion):
    def ln(x, g, b):
        d = x - x.mean(-1, keepdim=True)
        v = (d * d).mean(-1, keepdim=True)
        return d * vkt.rsqrt(v + 1e-5) * g + b

    arrays = [arr(64, 256), arr(256), arr(256)]
    fused, n_fused = run(ln, arrays, True)
    unfused, n_unfused = run(ln, arrays, False)
    assert same_bits(fused, unfused) and n_fused < n_unfused
    x = arrays[0].astype(np.float64)
    d = x - x.mean(-1, keepdims=True)
    assert_close(fused, d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * arrays[1] + arrays[2], rtol=1e-4,
                 atol=1e-4)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "var", "prod", "logsumexp", "softmax", "log_softmax", "max",
                                "min"])
def test_autograd_through_a_fused_reduction(fusion, op):
    a, b = arr(12, 40), arr(12, 40)

    def grads(fused):
        vkt.vulkan.set_fusion(fused)
        try:
            x = vkt.tensor(a, device="vulkan", requires_grad=True)
            y = vkt.tensor(b, device="vulkan", requires_grad=True)
            out = getattr((x * y + 0.5), op)(1)
            (out.values if op in ("max", "min") else out).square().sum().backward()
            return x.grad.cpu().numpy(), y.grad.cpu().numpy()
        finally:
            vkt.vulkan.set_fusion(True)

    for g, u in zip(grads(True), grads(False)):
        assert same_bits(g, u)


@pytest.mark.parametrize("op", ["sum", "softmax", "log_softmax", "cumsum"])
def test_autograd_through_a_reduction_in_float64_of_a_float32_expression(fusion, op):
    """A reduction computing in float64 loads the float32 expression (reduce.glsl's A and C): its gradients as
    without fusion, and as torch's."""
    a, b = arr(12, 40), arr(12, 40)

    def grads(lib, fused=True):
        vkt.vulkan.set_fusion(fused)
        try:
            on = {"device": "vulkan"} if lib is vkt else {}
            x, y = (lib.tensor(v, requires_grad=True, **on) for v in (a, b))
            getattr(x * y + 0.5, op)(1, dtype=lib.float64).square().sum().backward()
            return [np.asarray(t.grad.cpu().numpy()) for t in (x, y)]
        finally:
            vkt.vulkan.set_fusion(True)

    torch = pytest.importorskip("torch")
    for g, u, t in zip(grads(vkt), grads(vkt, fused=False), grads(torch)):
        assert g.dtype == np.float32 and same_bits(g, u)
        assert_close(g, t, rtol=1e-5, atol=1e-5)


def test_writes_after_the_reduction_do_not_change_it(fusion):
    a, b = arr(6, 20), arr(6, 20)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    s = (x * y).sum(1)
    x.add_(100)  # x is read by the pending sum's expression: computed before x changes
    assert_close(s.cpu().numpy(), (a.astype(np.float64) * b).sum(1), rtol=1e-5, atol=1e-5)
    s = (x * y).sum(1, keepdim=True)
    s.add_(1)  # in place on the pending reduction's own result
    s.mul_(2)
    want = ((a.astype(np.float64) + 100) * b).sum(1, keepdims=True)
    assert_close(s.cpu().numpy(), (want + 1) * 2, rtol=1e-5, atol=1e-4)


def test_a_pending_reduction_read_by_an_expression(fusion):
    a = arr(10, 30)
    x = vkt.tensor(a, device="vulkan")
    fresh()
    y = (x * 2).sum(1) * 3 + 1  # the sum is computed first, then read as a tensor
    assert stats()["dispatches"] == 2
    assert_close(y.cpu().numpy(), (a.astype(np.float64) * 2).sum(1) * 3 + 1, rtol=1e-5, atol=1e-4)
    z = x * 1
    m = z.amax(1, keepdim=True)
    np.testing.assert_array_equal((z - m).cpu().numpy(), a - a.max(1, keepdims=True))  # softmax's first steps


def test_empty_and_0d(fusion):
    e = vkt.tensor(np.zeros((0, 5), np.float32), device="vulkan")
    assert (e * e).sum().item() == 0 and (e * 2).sum(1).shape == (0,)
    assert (e * 2).sum(0).cpu().numpy().tolist() == [0] * 5
    assert np.isnan((e * 2).mean().item())
    with pytest.raises(IndexError):
        (e * 2).amax(0)
    x, y = vkt.tensor(np.float32(3), device="vulkan"), vkt.tensor(np.float32(-2), device="vulkan")
    assert (x * y).sum().item() == -6 and (x * y).sum().shape == ()
    assert (x * y).amax().item() == -6


def test_errors_are_raised_at_the_op(fusion):
    x = vkt.tensor(arr(4, 5), device="vulkan")
    with pytest.raises(IndexError):
        (x * 2).sum(dim=2)
    with pytest.raises(RuntimeError, match="mean"):
        (x.to(vkt.int32) * 2).mean()


def test_many_strided_operands_keep_within_the_push_constant_limit(fusion):
    """Six tensors with 4-d layouts that do not merge: past lavapipe's 128 bytes the expression is computed
    first, and the result is the same."""
    arrays = [arr(3, 4, 5, 6) for _ in range(6)]

    def fn(a, b, c, d, e, f):
        v = [t.permute(1, 0, 3, 2) for t in (a, b, c, d, e, f)]
        return (v[0] * v[1] + v[2] * v[3] - v[4] * v[5]).sum((1, 3))

    fused, _ = run(fn, arrays, True)
    unfused, _ = run(fn, arrays, False)
    assert same_bits(fused, unfused)
    t = [a.astype(np.float64).transpose(1, 0, 3, 2) for a in arrays]
    assert_close(fused, (t[0] * t[1] + t[2] * t[3] - t[4] * t[5]).sum((1, 3)), rtol=1e-5, atol=1e-5)


def test_turning_fusion_off_keeps_todays_path(dev):
    x = vkt.tensor(arr(8, 30), device="vulkan")
    vkt.vulkan.set_fusion(False)
    try:
        fresh()
        (x * x).sum(1)
        st = stats()
        assert st["dispatches"] == 2 and st["fused_kernels"] == []
    finally:
        vkt.vulkan.set_fusion(True)


def test_reductions_of_pending_products(fusion):
    a, w, b = arr(16, 32), arr(32, 24), arr(24)
    x, wt, bt = (vkt.tensor(v, device="vulkan") for v in (a, w, b))
    ref = a.astype(np.float64) @ w
    assert_close((x @ wt).sum(1).cpu().numpy(), ref.sum(1), rtol=1e-5, atol=1e-4)  # the product alone, then the sum
    fresh()
    s = (x @ wt + bt).sum(1)  # the product is computed first (a reduction takes no epilogue), the add in the load
    st = stats()
    assert ("add sum", 1) in st["fused_kernels"]
    assert_close(s.cpu().numpy(), (ref + b).sum(1), rtol=1e-5, atol=1e-4)
    assert same_bits(run(lambda p, q, r: (p @ q + r).sum(1), [a, w, b], True)[0],
                     run(lambda p, q, r: (p @ q + r).sum(1), [a, w, b], False)[0])


def test_a_batched_product_backward_takes_no_more_dispatches_than_a_flat_one(fusion):
    """matmul_add_relu of x (8, 64, 96): its backward folds the batch into the rows through views of its
    temporaries, which must leave the gradients as free to become .grad as the flat product's are (views that
    held a second reference to their base had made each such gradient a copy)."""
    rng2 = np.random.default_rng(2)
    arrays = [rng2.standard_normal(s).astype(np.float32) for s in ((8, 64, 96), (96, 80), (80,))]
    counts = []
    for shape in ((8, 64, 96), (512, 96)):
        x, w, bias = (vkt.tensor(v.reshape(shape) if k == 0 else v, device="vulkan", requires_grad=True)
                      for k, v in enumerate(arrays))
        fresh()
        vkt.matmul_add_relu(x, w, bias).sum().backward()
        counts.append(stats()["dispatches"])
    assert counts[0] == counts[1]


def test_all_any_and_argmax_of_expressions_with_nan_match_torch(fusion):
    """NaN is nonzero to all/any and the largest value to argmax, as in PyTorch, computed in the load."""
    torch = pytest.importorskip("torch")
    a = arr(6, 9)
    a[1, 3] = a[4, 0] = np.nan
    b = arr(6, 9)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    tx, ty = torch.tensor(a), torch.tensor(b)
    for fn in (lambda p, q: (p * q).all(1), lambda p, q: (p * 0).any(1), lambda p, q: (p + q).argmax(1),
               lambda p, q: (p - q).argmin(0), lambda p, q: (p * q).argmax()):
        fresh()
        got = fn(x, y)
        assert stats()["dispatches"] == 1
        want = fn(tx, ty).numpy()
        assert got.cpu().numpy().dtype == want.dtype and np.array_equal(got.cpu().numpy(), want)
