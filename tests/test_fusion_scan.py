# Scans of pending expressions (issue 19): `(x * y).cumsum(1)` computes x * y in the scan's load, so the product
# is never written nor allocated: one dispatch where the scan takes one (rows up to a block), three where a long
# row takes three (its blocks' totals, their scan, the blocks' scans), against one more unfused. Checks the
# dispatch counts (kernel_stats), that results are bit-identical to the unfused path and close to NumPy's
# float64, what happens to intermediates that are referenced elsewhere, cummax's and cummin's indices (held,
# dropped, NaN and ties as in torch), autograd through them, and the layouts and dtypes a load must index.
import numpy as np
import pytest

import vkt
from conftest import assert_close
from test_fusion_reduce import arr, fresh, fused_and_unfused, rng, same_bits, stats
from test_fusion_reduce import run as run_reduction


def numpy_of(out):
    """A result, or cummax's (values, indices), as a list of NumPy arrays."""
    return [t.cpu().numpy() for t in (out if isinstance(out, tuple) else (out,))]


def run(fn, arrays, fused):
    return run_reduction(fn, arrays, fused, read=numpy_of)


def running(a, axis, better):
    """The running best of a along axis (better(new, best): the new one wins, so of equal values the later one as
    in torch) and its positions, for data without NaN: the reference of cummax and cummin."""
    a = np.moveaxis(a, axis, -1)
    v, i = a.copy(), np.zeros(a.shape, np.int64)
    for k in range(1, a.shape[-1]):
        win = better(a[..., k], v[..., k - 1])
        v[..., k] = np.where(win, a[..., k], v[..., k - 1])
        i[..., k] = np.where(win, k, i[..., k - 1])
    return [np.moveaxis(v, -1, axis), np.moveaxis(i, -1, axis)]


def cummax(a, axis):
    return running(a, axis, np.greater_equal)


def cummin(a, axis):
    return running(a, axis, np.less_equal)


# (name, fn on tensors, reference on float64 (int64) arrays giving a list of arrays, arrays, dispatches fused, rtol)
CASES = [
    ("cumsum", lambda x, y: (x * y).cumsum(1), lambda x, y: [np.cumsum(x * y, 1)], [arr(37, 53), arr(37, 53)], 1,
     1e-5),
    ("cumsum dim 0 (columns)", lambda x, y: (x - y).cumsum(0), lambda x, y: [np.cumsum(x - y, 0)],
     [arr(300, 70), arr(300, 70)], 1, 1e-5),
    ("cumsum of one block", lambda x, y: (x + y).cumsum(-1), lambda x, y: [np.cumsum(x + y, -1)],
     [arr(5, 1500), arr(5, 1500)], 1, 1e-5),
    # rows longer than a block: totals, their scan, then the blocks, the first and last computing x * y
    ("cumsum of long rows", lambda x, y: (x * y).cumsum(1), lambda x, y: [np.cumsum(x * y, 1)],
     [arr(5, 5001), arr(5, 5001)], 3, 1e-4),
    ("cumsum of a long column", lambda x, y: (x * y).cumsum(0), lambda x, y: [np.cumsum(x * y, 0)],
     [arr(4999, 3), arr(4999, 3)], 3, 1e-4),
    ("cumsum of a long 1-d", lambda x, y: (x - y).cumsum(0), lambda x, y: [np.cumsum(x - y, 0)],
     [arr(70001), arr(70001)], 3, 1e-4),
    ("cumsum, middle dim of 3", lambda x, y: (x * y).cumsum(1), lambda x, y: [np.cumsum(x * y, 1)],
     [arr(4, 301, 6), arr(4, 301, 6)], 1, 1e-5),
    ("broadcast row", lambda x, b: (x * b).cumsum(1), lambda x, b: [np.cumsum(x * b, 1)], [arr(37, 299), arr(299)],
     1, 1e-5),
    ("broadcast column", lambda x, b: (x - b).cumsum(1), lambda x, b: [np.cumsum(x - b, 1)],
     [arr(37, 299), arr(37, 1)], 1, 1e-5),
    ("broadcast outer", lambda a, b: (a * b).cumsum(0), lambda a, b: [np.cumsum(a * b, 0)], [arr(40, 1), arr(1, 33)],
     1, 1e-5),
    ("transposed", lambda x, y: (x.t() * y).cumsum(1), lambda x, y: [np.cumsum(x.T * y, 1)],
     [arr(29, 37), arr(37, 29)], 1, 1e-5),
    ("sliced", lambda x, y: (x[:, ::2] * y[1:]).cumsum(0), lambda x, y: [np.cumsum(x[:, ::2] * y[1:], 0)],
     [arr(20, 30), arr(21, 15)], 1, 1e-5),
    ("scalars", lambda x: ((x * 1.5 + 0.5).relu() * x).cumsum(1),
     lambda x: [np.cumsum(np.maximum(x * 1.5 + 0.5, 0) * x, 1)], [arr(16, 100)], 1, 1e-5),
    ("reshaped", lambda x, y: (x * y).view(-1).cumsum(0), lambda x, y: [np.cumsum((x * y).reshape(-1), 0)],
     [arr(20, 30), arr(20, 30)], 1, 1e-5),
    ("reshaped, long", lambda x, y: (x * y).view(-1).cumsum(0), lambda x, y: [np.cumsum((x * y).reshape(-1), 0)],
     [arr(40, 300), arr(40, 300)], 3, 1e-4),
    ("0-d", lambda x, y: (x * y).cumsum(0), lambda x, y: [x * y], [arr(), arr()], 1, 1e-6),
    ("cumprod", lambda x, y: (x * 0.1 + y * 0.1 + 1).cumprod(1), lambda x, y: [np.cumprod(x * 0.1 + y * 0.1 + 1, 1)],
     [arr(8, 40), arr(8, 40)], 1, 1e-5),
    ("cumprod of long rows", lambda x, y: (x * 0.01 + y * 0.01 + 1).cumprod(1),
     lambda x, y: [np.cumprod(x * 0.01 + y * 0.01 + 1, 1)], [arr(3, 6007), arr(3, 6007)], 3, 1e-3),
    ("cummax", lambda x, y: (x - y).cummax(1), lambda x, y: cummax(x - y, 1), [arr(37, 53), arr(37, 53)], 1, 1e-6),
    ("cummin dim 0", lambda x, y: (x * y).cummin(0), lambda x, y: cummin(x * y, 0), [arr(300, 7), arr(300, 7)], 1,
     1e-6),
    ("cummax of long rows", lambda x, y: (x + y).cummax(1), lambda x, y: cummax(x + y, 1),
     [arr(3, 7001), arr(3, 7001)], 3, 1e-6),
    ("cummin transposed, broadcast", lambda x, b: (x.t() - b).cummin(1), lambda x, b: cummin(x.T - b, 1),
     [arr(29, 37), arr(29)], 1, 1e-6),
    ("float16", lambda x, y: (x * y).cumsum(1), lambda x, y: [np.cumsum(x * y, 1)],
     [arr(8, 64, dtype="float16"), arr(8, 64, dtype="float16")], 1, 2e-2),
    ("float64", lambda x, y: (x * y).cumsum(1), lambda x, y: [np.cumsum(x * y, 1)],
     [arr(8, 64, dtype="float64"), arr(8, 64, dtype="float64")], 1, 1e-12),
    ("int64", lambda x, y: (x * y).cumsum(1), lambda x, y: [np.cumsum(x * y, 1)],
     [arr(8, 3000, dtype="int64"), arr(8, 3000, dtype="int64")], 3, 0),
    ("int64 cumprod", lambda x, y: ((x - y) % 3).cumprod(1), lambda x, y: [np.cumprod((x - y) % 3, 1)],
     [arr(8, 30, dtype="int64"), arr(8, 30, dtype="int64")], 1, 0),
    ("int32 cummax, ties", lambda x, y: (x + y).cummax(0), lambda x, y: cummax(x + y, 0),
     [arr(64, 8, dtype="int32"), arr(64, 8, dtype="int32")], 1, 0),
    # a scan in another type than its expression loads the expression's values where they are exact in its type:
    # an int32 cumsum sums in int64, a comparison's running count
    ("int32 cumsum", lambda x, y: (x * y).cumsum(1), lambda x, y: [np.cumsum(x * y, 1)],
     [arr(8, 64, dtype="int32"), arr(8, 64, dtype="int32")], 1, 0),
    ("running count", lambda x, y: (x > y).cumsum(1), lambda x, y: [np.cumsum(x > y, 1)], [arr(37, 53), arr(37, 53)],
     1, 0),
    ("running count of long rows", lambda x, y: (x * y > 0).cumsum(0), lambda x, y: [np.cumsum(x * y > 0, 0)],
     [arr(5001, 3), arr(5001, 3)], 3, 0),
    ("bool cumprod", lambda x, y: (x + y > -1).cumprod(1), lambda x, y: [np.cumprod(x + y > -1, 1)],
     [arr(9, 40), arr(9, 40)], 1, 0),
    ("float32 summed in float64", lambda x, y: (x * y).cumsum(1, dtype=vkt.float64),
     lambda x, y: [np.cumsum((x.astype(np.float32) * y.astype(np.float32)).astype(np.float64), 1)],
     [arr(6, 70), arr(6, 70)], 1, 1e-12),
    # floats cast to int64 are not exact in float: computed first
    ("float cast to int64", lambda x, y: (x * y * 100).long().cumsum(1), lambda x, y: [np.cumsum(np.trunc(
        (x.astype(np.float32) * y.astype(np.float32) * np.float32(100)).astype(np.float32)).astype(np.int64), 1)],
     [arr(6, 70), arr(6, 70)], 2, 0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_scans_match_unfused_and_numpy(fusion, case):
    _, fn, ref, arrays, dispatches, rtol = case
    fused, n_fused = run(fn, arrays, True)
    unfused, n_unfused = run(fn, arrays, False)
    assert n_fused == dispatches and n_unfused >= 2
    for f, u in zip(fused, unfused):
        assert same_bits(f, u), (f, u)
    want = ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64) for a in arrays])
    assert len(fused) == len(want)
    for f, w in zip(fused, want):
        assert_close(f, w, rtol=rtol, atol=rtol * 10)


def test_cumsum_of_a_product_is_one_kernel_never_allocated(fusion):
    x, y = vkt.randn(64, 1024, device="vulkan"), vkt.randn(64, 1024, device="vulkan")
    vkt.vulkan.synchronize()
    base = vkt.vulkan.memory_allocated()
    vkt.vulkan.reset_peak_memory_stats()
    fresh()
    s = (x * y).cumsum(1)
    assert vkt.vulkan.kernel_stats()["dispatches"] == 0  # pending until needed
    st = stats()
    assert st["dispatches"] == 1 and st["fused_kernels"] == [("mul cumsum", 1)]
    assert vkt.vulkan.max_memory_allocated() - base == 4 * 64 * 1024  # the output only
    xn, yn = x.cpu().numpy().astype(np.float64), y.cpu().numpy().astype(np.float64)
    assert_close(s.cpu().numpy(), np.cumsum(xn * yn, 1), rtol=1e-5, atol=1e-4)


# Intermediates referenced elsewhere (held here by the case's return value) are written by the scan's own kernel:
# (name, fn returning the held tensors and then the results, arrays, dispatches fused). Short rows (one an
# invocation), rows of one block, long rows (written by the blocks' scans, the second read of the row).
HELD_CASES = [
    ("the value itself held", lambda x, y: (t := x * y, t.cumsum(1)), [arr(16, 50), arr(16, 50)], 1),
    ("an intermediate held", lambda x, y: (t := x - y, (t * t).cumsum(0)), [arr(300, 9), arr(300, 9)], 1),
    ("rows of a block", lambda x, y: (t := x + y, (t * 2).cumprod(1)), [arr(4, 1000), arr(4, 1000)], 1),
    ("long rows", lambda x, y: (t := x * y, t.cumsum(1)), [arr(4, 5000), arr(4, 5000)], 3),
    ("long rows, cummax", lambda x, y: (t := x * y, *(t + 1).cummax(1)), [arr(4, 5000), arr(4, 5000)], 3),
    ("two held", lambda x, y: (a := x * 2, b := a + y, (b * b).cummin(1)[1]), [arr(64, 300), arr(64, 300)], 1),
    ("broadcast and transposed", lambda x, y: (t := x.t() * y, t.cumsum(1)), [arr(29, 37), arr(37, 1)], 1),
    ("float16", lambda x, y: (t := x * y, t.cumsum(1)), [arr(8, 64, dtype="float16"), arr(8, 64, dtype="float16")],
     1),
    ("int64", lambda x, y: (t := x - y, *t.cummax(0)), [arr(64, 8, dtype="int64"), arr(64, 8, dtype="int64")], 1),
]


@pytest.mark.parametrize("case", HELD_CASES, ids=[c[0] for c in HELD_CASES])
def test_a_referenced_intermediate_is_written_by_the_scan(fusion, case):
    _, fn, arrays, dispatches = case
    results = fused_and_unfused(fn, arrays)
    (n_fused, _, fused), (n_unfused, _, unfused) = results[True], results[False]
    assert n_fused == dispatches and n_unfused > dispatches
    for f, u in zip(fused, unfused):
        assert same_bits(f, u), (f, u)


# (row length, dispatches of the scan, of them fused)
@pytest.mark.parametrize("cols, dispatches, fused", [(300, 1, 1), (5000, 3, 2)], ids=["one pass", "long rows"])
def test_a_value_needed_while_a_scan_reads_it(fusion, cols, dispatches, fused):
    a, b = arr(8, cols), arr(8, cols)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    fresh()
    t = x * y
    s = t.cumsum(1)  # pending when t is needed: computed then, it writes t from its load
    c = t.clone()  # needs t (a copy: counted before any read, which on a GPU's memory dispatches one)
    st = stats()
    assert st["dispatches"] == dispatches + 1 and st["fused_kernels"] == [("mul cumsum", fused)]
    np.testing.assert_array_equal(c.cpu().numpy(), a * b)
    assert_close(s.cpu().numpy(), np.cumsum(a.astype(np.float64) * b, 1), rtol=1e-4, atol=1e-3)


def test_cummax_values_and_indices_each_held_or_dropped(fusion):
    a, b = arr(37, 300), arr(37, 300)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    want_v, want_i = cummax(a - b, 1)  # in float32, as the device subtracts
    fresh()
    v, i = (x - y).cummax(1)
    got_i = i.cpu().numpy()  # read first: computes both
    assert stats()["fused_kernels"] == [("sub cummax", 1)]
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(v.cpu().numpy(), want_v)
    fresh()
    i = (x - y).cummax(1).indices  # the values are dropped while pending: the indices still come
    vkt.vulkan.synchronize()
    np.testing.assert_array_equal(i.cpu().numpy(), want_i)
    v = (x - y).cummax(1).values  # the indices are dropped: the kernel writes the values only
    np.testing.assert_array_equal(v.cpu().numpy(), want_v)
    fresh()
    (x - y).cummin(1)  # both dropped while pending: never computed
    assert stats()["dispatches"] == 0
    v, i = (x - y).cummax(1)
    i.add_(1)  # in place on the pending indices: computed first
    np.testing.assert_array_equal(i.cpu().numpy(), want_i + 1)


def test_nan_and_ties_match_torch(fusion):
    """A NaN is the running max and min from where it stands, a later NaN replaces an earlier one, and of equal
    values the later one's position wins, as in torch's cummax and cummin, computed in the load."""
    torch = pytest.importorskip("torch")
    a = rng.integers(-3, 4, (6, 300)).astype(np.float32)
    a[1, 30] = a[4, 0] = a[4, 200] = np.nan
    b = rng.integers(-3, 4, (6, 300)).astype(np.float32)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    tx, ty = torch.tensor(a), torch.tensor(b)
    for fn in (lambda p, q: (p + q).cummax(1), lambda p, q: (p * q).cummin(1), lambda p, q: (p - q).cummax(0),
               lambda p, q: (p.t() * 2).cummin(0)):
        fresh()
        got = fn(x, y)
        assert stats()["dispatches"] == 1
        want = fn(tx, ty)
        for g, w in zip(got, want):
            assert np.array_equal(g.cpu().numpy(), w.numpy(), equal_nan=True)
    fresh()
    s = (x * 0 + y).cumsum(1)  # 0 * NaN: the NaN runs to the end of its row
    assert np.array_equal(s.cpu().numpy(), torch.cumsum(tx * 0 + ty, 1).numpy(), equal_nan=True)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_autograd_through_a_fused_scan(fusion, op):
    a, b = arr(12, 40), arr(12, 40)

    def grads(fused):
        vkt.vulkan.set_fusion(fused)
        try:
            x = vkt.tensor(a, device="vulkan", requires_grad=True)
            y = vkt.tensor(b, device="vulkan", requires_grad=True)
            getattr((x * y * 0.5 + 1), op)(1).square().sum().backward()
            return x.grad.cpu().numpy(), y.grad.cpu().numpy()
        finally:
            vkt.vulkan.set_fusion(True)

    for g, u in zip(grads(True), grads(False)):
        assert same_bits(g, u)


def test_in_place_cumsum_of_a_pending_value(fusion):
    a = arr(9, 40)
    x = vkt.tensor(a, device="vulkan")
    t = x * 2
    t.cumsum_(1)
    assert_close(t.cpu().numpy(), np.cumsum(a.astype(np.float64) * 2, 1), rtol=1e-5, atol=1e-5)


def test_writes_after_the_scan_do_not_change_it(fusion):
    a, b = arr(6, 20), arr(6, 20)
    x, y = vkt.tensor(a, device="vulkan"), vkt.tensor(b, device="vulkan")
    s = (x * y).cumsum(1)
    x.add_(100)  # x is read by the pending scan's expression: computed before x changes
    assert_close(s.cpu().numpy(), np.cumsum(a.astype(np.float64) * b, 1), rtol=1e-5, atol=1e-5)


def test_a_pending_scan_read_by_an_expression_and_a_reduction(fusion):
    a = arr(10, 30)
    x = vkt.tensor(a, device="vulkan")
    fresh()
    y = (x * 2).cumsum(1) * 3 + 1  # the scan is computed first, then read as a tensor
    assert stats()["dispatches"] == 2
    assert_close(y.cpu().numpy(), np.cumsum(a.astype(np.float64) * 2, 1) * 3 + 1, rtol=1e-5, atol=1e-4)
    fresh()
    m = (x * 2).cumsum(1).amax(1)  # likewise a reduction of it
    assert stats()["dispatches"] == 2
    assert_close(m.cpu().numpy(), np.cumsum(a.astype(np.float64) * 2, 1).max(1), rtol=1e-5, atol=1e-4)


def test_empty_and_errors_at_the_op(fusion):
    e = vkt.tensor(np.zeros((0, 5), np.float32), device="vulkan")
    assert (e * 2).cumsum(0).shape == (0, 5) and (e * 2).cummax(1).indices.shape == (0, 5)
    x = vkt.tensor(arr(4, 5), device="vulkan")
    with pytest.raises(IndexError):
        (x * 2).cumsum(dim=2)
    with pytest.raises(IndexError):
        (x * 2).cummax(-3)


def test_turning_fusion_off_keeps_todays_path(dev):
    x = vkt.tensor(arr(8, 30), device="vulkan")
    vkt.vulkan.set_fusion(False)
    try:
        fresh()
        (x * x).cumsum(1)
        st = stats()
        assert st["dispatches"] == 2 and st["fused_kernels"] == []
    finally:
        vkt.vulkan.set_fusion(True)
