# The cpu device's kernels (issue 20): matrix products through BLAS over every operand layout and the
# blocked C kernel for float16 and integers, the thread pool (set_num_threads / get_num_threads, results
# equal on 1, 2 and 8 threads), and pairwise sums (accuracy against float64, inf stays inf).
import math
import os

import numpy as np
import pytest

import vkt

RNG = np.random.default_rng(20)
BIG = 300_001  # elements: past VKT_GRAIN * 2 (csrc/ops/cpu/threads.h), so kernels split it across threads


def close(got, ref, rtol, atol):
    got = np.asarray(got.cpu().numpy(), dtype=np.float64)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


@pytest.fixture
def threads():
    """Restores the thread count a test changes."""
    before = vkt.get_num_threads()
    yield
    vkt.set_num_threads(before)


# ---- matrix products ----

def m(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


# (name, a, b, how vkt views them): each view is one of the layouts gemm reads in place (transposed, rows
# with a step, a column slice) or must copy (steps in both dims, a broadcast row).
LAYOUTS = [
    ("dense odd sizes", lambda: (m(7, 13), m(13, 5)), lambda a, b: (a, b)),
    ("a transposed", lambda: (m(13, 7), m(13, 5)), lambda a, b: (a.t(), b)),
    ("b transposed", lambda: (m(7, 13), m(5, 13)), lambda a, b: (a, b.t())),
    ("both transposed", lambda: (m(13, 7), m(5, 13)), lambda a, b: (a.t(), b.t())),
    ("row steps", lambda: (m(14, 13), m(13, 10)), lambda a, b: (a[::2], b[:, :5])),
    ("steps in both dims", lambda: (m(14, 26), m(13, 10)), lambda a, b: (a[::2, ::2], b[:, ::2])),
    ("broadcast rows", lambda: (m(1, 13), m(13, 5)), lambda a, b: (a.expand(7, 13), b)),
    ("batched", lambda: (m(3, 7, 13), m(3, 13, 5)), lambda a, b: (a, b)),
    ("batched, transposed", lambda: (m(3, 13, 7), m(3, 5, 13)), lambda a, b: (a.transpose(1, 2), b.transpose(1, 2))),
    ("broadcast batch", lambda: (m(4, 1, 7, 13), m(3, 13, 5)), lambda a, b: (a, b)),
    ("matrix @ vector", lambda: (m(7, 13), m(13)), lambda a, b: (a, b)),
    ("vector @ batch", lambda: (m(13), m(2, 13, 5)), lambda a, b: (a, b)),
    ("1 x 1 x 1", lambda: (m(1, 1), m(1, 1)), lambda a, b: (a, b)),
    ("empty k", lambda: (m(4, 0), m(0, 3)), lambda a, b: (a, b)),
]


def numpy_view(view, a, b):
    """The same view on NumPy arrays, written with the tensor methods NumPy spells differently."""
    class V:
        def __init__(self, x):
            self.x = x

        def t(self):
            return V(self.x.T)

        def transpose(self, i, j):
            return V(np.swapaxes(self.x, i, j))

        def expand(self, *shape):
            return V(np.broadcast_to(self.x, shape))

        def __getitem__(self, k):
            return V(self.x[k])

    x, y = view(V(a), V(b))
    return x.x, y.x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", LAYOUTS, ids=[c[0] for c in LAYOUTS])
def test_matmul_layouts(case, dtype):
    _, make, view = case
    a, b = (x.astype(dtype) for x in make())
    ta, tb = view(vkt.tensor(a), vkt.tensor(b))
    na, nb = numpy_view(view, a.astype(np.float64), b.astype(np.float64))
    tol = 1e-5 if dtype == "float32" else 1e-12
    close(ta @ tb, na @ nb, tol, tol)


def test_matmul_uses_blas():
    pytest.importorskip("scipy_openblas32")
    assert "OpenBLAS" in vkt._C._blas_config()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_addmm_and_fused_relu(dtype):
    a, b, c = m(9, 17, dtype=dtype), m(17, 11, dtype=dtype), m(11, dtype=dtype)
    ta, tb, tc = vkt.tensor(a), vkt.tensor(b), vkt.tensor(c)
    ref = 0.5 * c + 2.0 * (a.astype(np.float64) @ b)
    close(vkt.addmm(tc, ta, tb, beta=0.5, alpha=2.0), ref, 1e-5, 1e-5)
    close(vkt.matmul_add_relu(ta, tb, tc), np.maximum(a.astype(np.float64) @ b + c, 0), 1e-5, 1e-5)
    nan = vkt.full((9, 11), float("nan"), dtype=getattr(vkt, dtype))
    close(vkt.addmm(nan, ta, tb, beta=0), a.astype(np.float64) @ b, 1e-5, 1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_products(dtype):
    a = RNG.integers(0 if dtype == "uint8" else -9, 9, (2, 37, 129)).astype(dtype)
    b = RNG.integers(0 if dtype == "uint8" else -9, 9, (129, 70)).astype(dtype)
    ta, tb = vkt.tensor(a), vkt.tensor(b)
    got = (ta.transpose(1, 2).transpose(1, 2) @ tb[:, ::2]).cpu().numpy()
    ref = (a.astype(np.int64) @ b[:, ::2].astype(np.int64)).astype(dtype)  # wraps as PyTorch's CPU does
    assert got.dtype == np.dtype(dtype) and (got == ref).all()


def test_integer_product_wraps():
    a = np.full((2, 3), 2**40, np.int64)
    got = (vkt.tensor(a) @ vkt.tensor(a.T.copy())).cpu().numpy()
    assert (got == np.int64(3 * (2**80 % 2**64))).all()  # 3 * 2^80 mod 2^64 = 0


def test_float16_product():
    a, b = m(65, 300, dtype="float16"), m(300, 33, dtype="float16")
    got = vkt.tensor(a).t().t() @ vkt.tensor(b)
    assert got.dtype == vkt.float16
    close(got, a.astype(np.float64) @ b.astype(np.float64), 2e-2, 5e-2)


def test_large_product_threads_agree(threads):
    a, b = m(300, 200), m(200, 150)
    ta, tb = vkt.tensor(a), vkt.tensor(b)
    results = []
    for n in (1, 2):
        vkt.set_num_threads(n)
        results.append((ta @ tb).cpu().numpy())
        results.append((ta.to(vkt.int64) @ tb.to(vkt.int64)).cpu().numpy())
    # Integers agree exactly; float32 goes through the BLAS, whose kernels may sum in another order with
    # more threads (OpenBLAS does on AMD's Zen), so it agrees to rounding.
    assert (results[1] == results[3]).all()
    np.testing.assert_allclose(results[0], results[2], rtol=1e-5, atol=1e-5)
    close(vkt.tensor(results[0]), a.astype(np.float64) @ b, 1e-4, 1e-4)


# ---- threads ----

def test_num_threads_default_and_setting(threads):
    assert vkt.get_num_threads() == len(os.sched_getaffinity(0))
    vkt.set_num_threads(3)
    assert vkt.get_num_threads() == 3
    with pytest.raises(RuntimeError, match="positive"):
        vkt.set_num_threads(0)


THREADED = [
    ("relu", lambda x, y: x.relu()),
    ("x * 2 + 1", lambda x, y: x * 2 + 1),
    ("add, transposed operand", lambda x, y: x + y.t()),
    ("lt", lambda x, y: x < y.t()),
    ("exp", lambda x, y: x.exp()),
    ("sum", lambda x, y: x.sum()),
    ("mean", lambda x, y: x.mean()),
    ("sum dim=0", lambda x, y: x.sum(dim=0)),
    ("sum dim=1", lambda x, y: x.sum(dim=1)),
    ("softmax", lambda x, y: x.softmax(dim=1)),
    ("amax", lambda x, y: x.amax(dim=0)),
    ("argmax dim=1", lambda x, y: x.argmax(dim=1)),
    ("copy of a transpose", lambda x, y: y.t().contiguous()),
    ("cast", lambda x, y: x.to(vkt.float64)),
    ("int add", lambda x, y: x.to(vkt.int32) + y.t().to(vkt.int32)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", THREADED, ids=[c[0] for c in THREADED])
def test_threads_agree(threads, case, dtype):
    """Results on 2 threads equal those on 1, to the bit, for tensors large enough to be split."""
    _, fn = case
    a = RNG.standard_normal((BIG // 1000, 1000)).astype(dtype) * 10
    b = RNG.standard_normal((1000, BIG // 1000)).astype(dtype) * 10
    x, y = vkt.tensor(a), vkt.tensor(b)
    vkt.set_num_threads(1)
    one = fn(x, y).cpu().numpy()
    vkt.set_num_threads(2)
    two = fn(x, y).cpu().numpy()
    assert one.dtype == two.dtype and one.tobytes() == two.tobytes()


def test_jobs_back_to_back_on_more_threads_than_cores(threads):
    """Many short jobs on 8 threads: ranges that a late worker finds claimed already, results as on 1 thread."""
    x = vkt.tensor(RNG.standard_normal((BIG // 1000, 1000)).astype(np.float32))
    vkt.set_num_threads(1)
    one = [x.argmax(dim=1).numpy(), x.sum(dim=1).numpy()]
    vkt.set_num_threads(8)
    for _ in range(300):
        assert (x.argmax(dim=1).numpy() == one[0]).all() and x.sum(dim=1).numpy().tobytes() == one[1].tobytes()


def test_zero_division_found_on_any_thread(threads):
    vkt.set_num_threads(2)
    y = np.ones(BIG, np.int64)
    y[-3] = 0  # in the last thread's range
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        vkt.tensor(np.ones(BIG, np.int64)) // vkt.tensor(y)


# ---- pairwise sums ----

@pytest.mark.parametrize("n", [1, 7, 8, 129, 1000, 65537 * 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_accuracy(n, dtype):
    a = (RNG.standard_normal(n) * 1e3 + 1e2).astype(dtype)
    exact = math.fsum(a.astype(np.float64))
    got = float(vkt.tensor(a).sum())
    # float64: pairwise's bound, about log2(n) roundings of the sum of magnitudes; float32: one rounding.
    tol = 1e-15 * math.log2(n + 1) * np.abs(a).sum() + 1e-300 if dtype == "float64" else 2**-24 * abs(exact)
    assert abs(got - exact) <= tol
    assert abs(float(vkt.tensor(a).mean()) - exact / n) <= tol / n * 2


@pytest.mark.parametrize("values, expected", [([1.0, math.inf], math.inf), ([-math.inf, 2.0, 3.0], -math.inf),
                                              ([math.inf, -math.inf], math.nan), ([1.0, math.nan], math.nan)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_of_infinities(values, expected, dtype):
    """The compensated sum gave inf - inf = NaN for [1, inf]; the pairwise sum keeps inf."""
    for n in (1, 300):  # short rows, and rows through the blocked pairwise path
        x = vkt.tensor(np.array(values * n, dtype=dtype))
        for got in (x.sum(), x.mean(), x.reshape(1, -1).sum(dim=1)[0], x.reshape(-1, 1).sum(dim=0)[0],
                    x.to(vkt.float16).sum(dim=0)):
            np.testing.assert_equal(float(got), expected)


# ---- the vectorised exp (cpu/math.h's vkt_exp: exp, sigmoid, silu, elu, softmax) ----

def test_exp_accuracy_and_limits():
    x = np.concatenate([np.linspace(-760, 720, 20001), [np.inf, -np.inf, np.nan, 0.0, 1e-300, -1e-300, 709.78,
                                                         709.79, -745.13, -745.14, -708.4, -708.3]])
    with np.errstate(over="ignore"):
        ref = np.exp(x)
    got = vkt.tensor(x).exp().cpu().numpy()
    normal = np.isfinite(ref) & (ref > np.finfo(np.float64).tiny)
    assert (np.abs(got[normal] - ref[normal]) <= 2 * np.spacing(ref[normal])).all()
    np.testing.assert_array_equal(got[~normal & ~np.isnan(ref)] > 0, ref[~normal & ~np.isnan(ref)] > 0)
    np.testing.assert_equal(got[-12:-6], ref[-12:-6])  # inf, 0, nan and exp(0) = 1 exactly
    a = RNG.standard_normal(4097).astype(np.float32) * 20
    assert (vkt.tensor(a).exp().cpu().numpy() == np.exp(a.astype(np.float64)).astype(np.float32)).all()
    np.testing.assert_allclose(vkt.tensor(a).sigmoid().cpu().numpy(), 1 / (1 + np.exp(-a.astype(np.float64))),
                               rtol=1e-6)
