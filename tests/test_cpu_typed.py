# The cpu device's typed loops (issue 20) against PyTorch: prod, amax/amin, argmax/argmin, max/min with
# indices and var/std over dense rows of float32, float64, int32 and int64; softmax and log_softmax over dense
# rows; elementwise ops of float16, uint8 and bool. Each case also runs on a transposed view, which takes the
# generic loops, so both paths are held to the same answers (NaN first, first of ties, -0.0 against 0.0).
import numpy as np
import pytest
import torch

import vkt
from conftest import assert_close

pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom")  # var of one element, as PyTorch warns
RNG = np.random.default_rng(2020)
LENGTHS = [1, 7, 8, 9, 300]  # a row: shorter than a lane block, one block, a remainder, several pairwise leaves


def rows(n, dtype, special):
    """(3, n) of dtype: random values, then a row's specials placed at its front, middle and end."""
    if dtype.startswith("int"):
        a = RNG.integers(-3, 4, (3, n)).astype(dtype)  # few values: ties
    else:
        a = RNG.standard_normal((3, n)).astype(dtype)
        a[1, :: max(n // 3, 1)] = 0.0
        a[1, 1 % n] = -0.0
    for r, at in enumerate((0, n // 2, n - 1)):
        if special == "nan" and not dtype.startswith("int"):
            a[r, at] = np.nan
        elif special == "inf" and not dtype.startswith("int"):
            a[r, at] = np.inf if r % 2 else -np.inf
    return a


def both_layouts(a):
    """The array as dense rows, and as the transpose of a contiguous copy of its transpose (strided rows)."""
    return [vkt.tensor(a), vkt.tensor(np.ascontiguousarray(a.T)).t()]


REDUCTIONS = [
    ("prod", lambda t: t.prod(dim=1), 1e-5),
    ("amax", lambda t: t.amax(dim=1), 0),
    ("amin", lambda t: t.amin(dim=1), 0),
    ("argmax", lambda t: t.argmax(dim=1), 0),
    ("argmin", lambda t: t.argmin(dim=1), 0),
    ("max values", lambda t: t.max(dim=1)[0], 0),
    ("max indices", lambda t: t.max(dim=1)[1], 0),
    ("min indices", lambda t: t.min(dim=1)[1], 0),
]


@pytest.mark.parametrize("special", ["none", "nan", "inf"])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("name,fn,rtol", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_rows(name, fn, rtol, dtype, n, special):
    a = rows(n, dtype, special)
    if name == "prod" and dtype.startswith("float"):  # factors near 1: no float32 underflow in PyTorch's product
        a = np.where(np.isfinite(a) & (a != 0), np.sign(a) * (1 + np.abs(a) / 10), a).astype(dtype)
    ref = fn(torch.from_numpy(a)).numpy()
    for t in both_layouts(a):
        got = fn(t).numpy()
        assert got.dtype == ref.dtype
        if rtol:
            assert_close(got, ref, rtol=rtol, atol=0)
        else:  # positions and extremes exactly, the sign of a zero included
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


def placed(n, dtype):
    """Rows of length n, for each position p and kind of special: a NaN at p (then another later), the row's
    extreme at p and again later (a tie), and zeros of both signs (-0.0 at p, 0.0 later) in a row of negatives,
    so that each lands in every lane of the typed loops and in their remainder; in long rows, positions about
    the edges of reduce.c's blocks of 64 elements."""
    positions = range(n) if n < 100 else sorted({p % n for c in (0, 64, 1024, 2048, n) for p in range(c - 17, c + 17)})
    out = []
    for p in positions:
        later = (p + 1 + (n - p - 1) // 2) if p + 1 < n else p
        a = RNG.integers(-50, 50, n).astype(dtype)
        a[p] = a[later] = 100
        b = a.copy()
        b[p] = b[later] = -100
        out += [a, b]
        if not dtype.startswith("int"):
            c = RNG.standard_normal(n).astype(dtype)
            c[p] = np.nan
            c[later] = np.nan
            z = -1 - np.abs(RNG.standard_normal(n)).astype(dtype)
            z[p], z[later] = -0.0, 0.0
            out += [c, z, -z]
    return np.stack(out)


@pytest.mark.parametrize("n", [15, 16, 17, 31, 32, 33, 48, 64, 65, 97, 1024, 1041, 2500])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_extremes_in_every_position(dtype, n):
    a = placed(n, dtype)
    first = {"amax": a.argmax(1), "max values": a.argmax(1), "amin": a.argmin(1)}  # NumPy: first NaN, else extreme
    for name, fn, _ in REDUCTIONS[1:]:
        ref = fn(torch.from_numpy(a)).numpy()
        for t in both_layouts(a):
            got = fn(t).numpy()
            np.testing.assert_array_equal(got, ref, err_msg=name)
            if name in first:  # of -0.0 and 0.0 the first (PyTorch's pick depends on its vector width)
                np.testing.assert_array_equal(np.signbit(got), np.signbit(a[np.arange(len(a)), first[name]]))


@pytest.mark.parametrize("n", [1, 63, 64, 200])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_extremes_of_constant_rows(dtype, n):
    """Rows of one value throughout (infinities, zeros with -0.0 first): position 0, and its bits."""
    a = np.stack([np.full(n, v, dtype) for v in (-np.inf, np.inf, 0.0, -0.0, 2.5)])
    a[3, 1:] = 0.0
    for name, fn, _ in REDUCTIONS[1:]:
        ref = fn(torch.from_numpy(a)).numpy()
        for t in both_layouts(a):
            got = fn(t).numpy()
            np.testing.assert_array_equal(got, ref, err_msg=name)
            if got.dtype != np.int64:  # of -0.0 and 0.0 the first, as in test_extremes_in_every_position
                np.testing.assert_array_equal(np.signbit(got), np.signbit(a[:, 0]), err_msg=name)


@pytest.mark.parametrize("special", ["none", "nan", "inf"])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_rows(op, correction, dtype, n, special):
    a = rows(n, dtype, special)
    ref = getattr(torch.from_numpy(a), op)(dim=1, correction=correction).numpy()
    for t in both_layouts(a):
        assert_close(getattr(t, op)(dim=1, correction=correction), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_integer_prod_wraps_and_small_cases(dtype):
    a = np.full((2, 40), 7, dtype=dtype)
    ref = torch.from_numpy(a).prod(dim=1).numpy()
    assert_close(vkt.tensor(a).prod(dim=1), ref, rtol=1e-6, atol=0)
    zero_d = np.array(3, dtype=dtype)
    for fn in (lambda t: t.prod(), lambda t: t.amax(), lambda t: t.argmax()):
        np.testing.assert_array_equal(fn(vkt.tensor(zero_d)).numpy(), fn(torch.from_numpy(zero_d)).numpy())
    empty = np.zeros((0, 5), dtype=dtype)
    for fn in (lambda t: t.prod(dim=1), lambda t: t.amax(dim=1), lambda t: t.argmax(dim=1)):
        assert fn(vkt.tensor(empty)).shape == tuple(fn(torch.from_numpy(empty)).shape)


@pytest.mark.parametrize("special", ["none", "nan", "inf"])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_rows(op, dtype, n, special):
    a = rows(n, dtype, special)
    if special == "inf":
        a[a == np.inf] = -np.inf  # a row of +inf makes NaN in both; -inf is the masked case
    ref = getattr(torch.from_numpy(a), op)(dim=1).numpy()
    tol = 2e-6 if dtype == "float32" else 1e-12
    for t in both_layouts(a):
        assert_close(getattr(t, op)(dim=1), ref, rtol=tol, atol=tol)


BINARY = [
    ("add", lambda x, y: x + y),
    ("sub", lambda x, y: x - y),
    ("mul", lambda x, y: x * y),
    ("maximum", lambda x, y: x.maximum(y)),
    ("eq", lambda x, y: x == y),
    ("lt", lambda x, y: x < y),
    ("scalar rhs", lambda x, y: x * 3),
    ("scalar lhs", lambda x, y: 2 - x),
]
SMALL = {"float16": lambda s: np.asarray(RNG.standard_normal(s) * 8, dtype=np.float16),
         "uint8": lambda s: RNG.integers(0, 256, s).astype(np.uint8),
         "bool": lambda s: RNG.integers(0, 2, s).astype(bool)}


# PyTorch refuses bool subtraction and promotes bool * 3 to int64: those are not bool loops.
SMALL_CASES = [(name, fn, dtype) for name, fn in BINARY for dtype in SMALL
               if not (dtype == "bool" and name in ("sub", "scalar rhs", "scalar lhs"))]


@pytest.mark.parametrize("shape", [(), (0,), (5,), (33, 17)], ids=str)
@pytest.mark.parametrize("name,fn,dtype", SMALL_CASES, ids=[f"{c[0]}-{c[2]}" for c in SMALL_CASES])
def test_small_dtype_elementwise(name, fn, dtype, shape):
    a, b = SMALL[dtype](shape), SMALL[dtype](shape)
    ref = fn(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    views = [(vkt.tensor(a), vkt.tensor(b))]
    if len(shape) == 2:  # strided operands: the generic loops
        views.append((vkt.tensor(np.ascontiguousarray(a.T)).t(), vkt.tensor(b)))
    for x, y in views:
        got = fn(x, y).numpy()
        assert got.dtype == ref.dtype
        if dtype == "float16":
            assert_close(got, ref, rtol=1e-3, atol=1e-3)
        else:
            np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("fn", [lambda x, y: x & y, lambda x, y: x.logical_and(y), lambda x, y: ~x,
                                lambda x, y: x.logical_not()], ids=["and", "logical_and", "invert", "logical_not"])
@pytest.mark.parametrize("dtype", ["uint8", "bool"])
def test_small_dtype_logic(fn, dtype):
    a, b = SMALL[dtype]((9, 11)), SMALL[dtype]((9, 11))
    np.testing.assert_array_equal(fn(vkt.tensor(a), vkt.tensor(b)).numpy(),
                                  fn(torch.from_numpy(a), torch.from_numpy(b)).numpy())


HALF_OPS = [("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y),
            ("div", lambda x, y: x / y), ("add alpha 1", lambda x, y: x.add(y, alpha=1)),
            ("scalar rhs", lambda x, y: x * 0.375), ("scalar lhs", lambda x, y: 3 - x)]


@pytest.mark.parametrize("layout", ["dense", "strided"])
@pytest.mark.parametrize("name,fn", HALF_OPS, ids=[o[0] for o in HALF_OPS])
def test_float16_bit_exact(name, fn, layout):
    """float16 arithmetic on every kind of value (random bit patterns: subnormals, infinities, NaN, both zeros,
    results that overflow or round to subnormals) bit for bit as PyTorch's CPU computes it."""
    bits = RNG.integers(0, 1 << 16, (2, 257, 129), dtype=np.uint16)
    bits[1, :8] = RNG.integers(0x3800, 0x4400, (8, 129), dtype=np.uint16)  # close values: cancellation
    a, b = bits.view(np.float16)
    ref = fn(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    x, y = vkt.tensor(a), vkt.tensor(b)
    if layout == "strided":
        x, y = vkt.tensor(np.ascontiguousarray(a.T)).t(), vkt.tensor(np.ascontiguousarray(b.T)).t()
    got = fn(x, y).numpy()
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], ref.view(np.uint16)[~nan])
