# torch.special's functions (vkt.special, and the lgamma, digamma, polygamma, xlogy, logit, sinc and i0 methods) and
# nextafter against torch 2.13 on the cpu and vulkan devices: values over dense grids with poles and large arguments in
# float32, float64 and integers (erfcx and zeta also against mpmath, where torch's float64 is less accurate); gradients;
# fusion; in-place forms on non-leaves; and no CPU fallback for float32 on vulkan.
import math

import numpy as np
import pytest

import vkt
from conftest import assert_bits_equal, assert_close, raised

torch = pytest.importorskip("torch")

F32 = np.float32
INF = math.inf
# Poles and their neighbours, +-0, large arguments, infinities and NaN, then a dense grid.
EDGES = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -3.0, -7.0, -1e-30, 1e-30, 1e-7, -0.5, -2.5, 1.4616321, 88.0, 91.0, 100.0,
         -100.0, 1e3, -1e3 - 0.5, 1e6, 1e12, 1e30, 1e36, 3e38, -3e38, INF, -INF, math.nan]
NEAR = [v for k in range(-6, 7) for v in np.nextafter(F32(k), [F32(-INF), F32(INF)])]
GRID = np.concatenate([np.array(EDGES + NEAR, F32), np.linspace(-12, 12, 2401, dtype=F32)])
PROB = np.concatenate([np.array([0.0, 1.0, -0.5, 1.5, 1e-38, 1e-30, 1e-10, 1e-6, 1 - 2**-24, math.nan], F32),
                       np.linspace(0, 1, 1001, dtype=F32)])
TAILS = np.concatenate([GRID, np.array([-1e4, -200.0, -40.0, -38.0, -30.0, 38.0], F32)])


def tx(m, name):
    """The function `name` of vkt or torch: its top level, else its special module."""
    return getattr(m, name) if hasattr(m, name) else getattr(m.special, name)


# (name, f over namespace m, inputs, float32 rtol, atol)
UNARY = [
    ("lgamma", lambda m, x: x.lgamma(), GRID, 4e-6, 2e-6),
    ("gammaln", lambda m, x: m.special.gammaln(x), GRID, 4e-6, 2e-6),
    ("digamma", lambda m, x: m.digamma(x), GRID, 4e-6, 2e-6),
    ("psi", lambda m, x: m.special.psi(x), GRID, 4e-6, 2e-6),
    ("polygamma0", lambda m, x: m.polygamma(0, x), GRID, 4e-6, 2e-6),
    ("polygamma1", lambda m, x: m.polygamma(1, x), GRID, 4e-6, 2e-6),
    ("polygamma2", lambda m, x: x.polygamma(2), GRID, 4e-6, 2e-6),
    ("polygamma3", lambda m, x: m.special.polygamma(3, x), GRID, 4e-6, 2e-6),
    ("sinc", lambda m, x: x.sinc(), GRID, 2e-6, 2e-7),
    ("i0", lambda m, x: m.i0(x), GRID, 2e-6, 0),
    ("special_i0", lambda m, x: m.special.i0(x), GRID, 2e-6, 0),
    ("i0e", lambda m, x: m.special.i0e(x), GRID, 2e-6, 0),
    ("i1", lambda m, x: m.special.i1(x), GRID, 4e-6, 2e-45),
    ("i1e", lambda m, x: m.special.i1e(x), GRID, 4e-6, 2e-45),
    ("entr", lambda m, x: m.special.entr(x), GRID, 2e-6, 1e-44),
    ("ndtr", lambda m, x: m.special.ndtr(x), TAILS, 4e-6, 1e-37),
    ("log_ndtr", lambda m, x: m.special.log_ndtr(x), TAILS, 4e-6, 2e-7),
    ("ndtri", lambda m, x: m.special.ndtri(x), PROB, 4e-6, 2e-7),
    ("logit", lambda m, x: x.logit(), PROB, 4e-6, 2e-7),
    ("logit_eps", lambda m, x: m.logit(x, eps=1e-3), PROB, 4e-6, 2e-7),
    ("special_logit", lambda m, x: m.special.logit(x, 0.25), PROB, 4e-6, 2e-7),
    ("expit", lambda m, x: m.special.expit(x), GRID[np.abs(GRID) < 80], 2e-6, 0),
    ("erfcx", lambda m, x: m.special.erfcx(x), GRID, 5e-7, 0),
]


erfc = np.vectorize(math.erfc, otypes=[np.float64])


def torch_float64(name, f, x):
    """torch in float64, where it is right. Where it is not, the value vkt gives: at a negative integer torch's
    polygamma(n >= 1) is 1e30 or so (sin(pi x) is not 0 there), the pole is +-inf; at +inf its polygamma(n >= 2) is NaN,
    the limit 0; its i0(+-inf) and i1(+-inf) are NaN (inf / inf), the limits +-inf; its ndtr, (1 + erf(x / sqrt 2))
    / 2, is 0 below -8.3, where 0.5 erfc(-x / sqrt 2) keeps the tail; and its digamma's reflection, psi(1 - x) -
    pi / tan(pi r), takes r = x - trunc(x), near -1 next to a negative integer, whose pi r rounds off 1e-10 of the pole
    (r = x - round(x) keeps it)."""
    x = x.astype(np.float64)
    out = f(torch, torch.tensor(x)).numpy()
    if name in ("digamma", "psi", "polygamma0"):
        with np.errstate(all="ignore"):
            reflected = torch.digamma(torch.tensor(1 - x)).numpy() - math.pi / np.tan(math.pi * (x - np.round(x)))
        out = np.where((x < 0) & (x != np.floor(x)), reflected, out)
    if name.startswith("polygamma") and name != "polygamma0":
        n = int(name[-1])
        out = np.where((x <= 0) & (x == np.floor(x)), INF if n % 2 else -INF, out)
        out = np.where(x == INF, 0.0, out)
    if name in ("i0", "special_i0", "i1"):
        out = np.where(np.isinf(x), INF if name != "i1" else x, out)
    if name == "ndtr":
        out = 0.5 * erfc(-x / math.sqrt(2))
    return out


def reference(name, f, x):
    """torch_float64 on the float32 values, rounded to float32."""
    with np.errstate(over="ignore"):
        return torch_float64(name, f, x).astype(F32)


@pytest.mark.parametrize("name, f, x, rtol, atol", UNARY, ids=[c[0] for c in UNARY])
def test_float32_values_match_torch(device, name, f, x, rtol, atol):
    got = f(vkt, vkt.tensor(x, device=device))
    assert got.dtype == vkt.float32
    want = reference(name, f, x)
    if flushes_subnormals(device):
        # A subnormal input may be 0 to the GPU (NVIDIA's float32 arithmetic flushes them, where an op's code reads
        # it through arithmetic): its value is the function's at the input or at a zero of the same sign.
        tiny = (x != 0) & (np.abs(x) < np.finfo(F32).tiny)
        flushed = reference(name, f, np.where(tiny, np.copysign(F32(0), x), x))
        value = got.cpu().numpy().astype(np.float64)
        as_zero = tiny & np.isclose(value, flushed, rtol=rtol, atol=atol, equal_nan=True)
        want = np.where(as_zero, flushed, want)
        # and a subnormal result may be 0 (erfcx(-9.4e18) is 1.9e-39)
        want = np.where((np.abs(want) < np.finfo(F32).tiny) & (value == 0), value, want)
    assert_close(got, want, rtol=rtol, atol=atol)


def flushes_subnormals(device):
    """Whether the device's float32 arithmetic flushes subnormal operands to zero."""
    smallest = vkt.tensor(np.array([2.0**-149], F32), device=device)
    return (smallest * 1.0).item() == 0.0


def test_float32_accurate_where_direct_forms_cancel(device):
    """ndtr's lower tail and log_ndtr's upper one (x^2 / 2 rounded once loses 1e-5 of e^(-x^2 / 2)), and digamma at its
    zero 1.4616 (the recurrence's terms cancel): within a few float32 ulp, relative, of float64."""
    x = np.concatenate([np.linspace(-12.5, -2, 97), np.linspace(2, 12.5, 97)]).astype(F32)
    r = np.linspace(1.27, 1.65, 401, dtype=F32)
    for name, v in [("ndtr", x), ("log_ndtr", -x), ("digamma", r)]:
        f = next(c[1] for c in UNARY if c[0] == name)
        assert_close(f(vkt, vkt.tensor(v, device=device)), torch_float64(name, f, v), rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("name, f, x, rtol, atol", UNARY, ids=[c[0] for c in UNARY])
def test_float64_values_match_torch(device, name, f, x, rtol, atol):
    x64 = x.astype(np.float64)
    got = f(vkt, vkt.tensor(x64, device=device))
    assert got.dtype == vkt.float64
    # torch's polygamma(1, x) near a pole is 1e-9 off: sin(pi x) of a rounded pi x
    assert_close(got, torch_float64(name, f, x64), rtol=1e-8 if name.startswith("polygamma") else 1e-10, atol=1e-13)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0", "sinc", "polygamma2", "entr", "ndtr", "i1e", "logit",
                                  "erfcx"])
def test_integers_promote_to_float32(device, dtype, name):
    f = next(c[1] for c in UNARY if c[0] == name)
    x = np.array([0, 1, 2, 3, 7, 1], dtype=dtype) if dtype != "int32" else np.array([-3, -1, 0, 1, 5, 40], dtype)
    got = f(vkt, vkt.tensor(x, device=device))
    want = f(torch, torch.tensor(x))
    assert got.dtype == vkt.float32 and want.dtype == torch.float32
    assert_close(got, reference(name, f, x.astype(F32)), rtol=4e-6, atol=2e-6)


XS = np.array([0.0, -0.0, 1.0, -2.5, 3.0, 1e-30, 1e30, INF, math.nan], F32)[:, None]
YS = np.array([0.0, 1e-30, 0.5, 1.0, 2.0, 1e30, INF, -1.0, -0.5, math.nan], F32)[None, :]
BINARY = [  # (name, f over namespace m, the y operand's offset from YS)
    ("xlogy", lambda m, x, y: m.xlogy(x, y)),
    ("xlogy_method", lambda m, x, y: x.xlogy(y)),
    ("special_xlogy", lambda m, x, y: m.special.xlogy(x, y)),
    ("xlog1py", lambda m, x, y: m.special.xlog1py(x, y)),
]


@pytest.mark.parametrize("name, f", BINARY, ids=[c[0] for c in BINARY])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_values_broadcast_and_match_torch(device, name, f, dtype):
    x, y = XS.astype(dtype), YS.astype(dtype)
    got = f(vkt, vkt.tensor(x, device=device), vkt.tensor(y, device=device))
    want = f(torch, torch.tensor(x), torch.tensor(y))
    assert got.shape == (9, 10) and str(got.dtype) == str(want.dtype).replace("torch", "vkt")
    assert_close(got, want.numpy(), rtol=2e-6 if dtype == "float32" else 1e-12, atol=0)


NUMBERS = [  # a number on either side, an integer tensor, a 0-d tensor
    ("number_x", lambda m, t: m.xlogy(2.5, t)),
    ("number_y", lambda m, t: m.xlogy(t, 3)),
    ("method_number", lambda m, t: t.xlogy(0.5)),
    ("number_x_1p", lambda m, t: m.special.xlog1py(-1.5, t)),
    ("number_y_1p", lambda m, t: m.special.xlog1py(t, 2.0)),
    ("int_tensors", lambda m, t: m.xlogy(t.long(), (t * 0 + 3).int())),
    ("zero_dim", lambda m, t: m.xlogy(t, t.sum())),
    ("zeta_number_x", lambda m, t: m.special.zeta(2.5, t + 1)),
    ("zeta_number_q", lambda m, t: m.special.zeta(t + 2, 3)),
    ("zeta_int_tensors", lambda m, t: m.special.zeta((t + 2).long(), (t * 0 + 3).int())),
    ("zeta_zero_dim", lambda m, t: m.special.zeta(t + 1.5, t.sum().double())),
]


@pytest.mark.parametrize("name, f", NUMBERS, ids=[c[0] for c in NUMBERS])
def test_binary_numbers_and_promotion_match_torch(device, name, f):
    x = np.array([0.0, 1.0, 2.0, 3.0, 0.25], F32)
    got, want = f(vkt, vkt.tensor(x, device=device)), f(torch, torch.tensor(x))
    assert str(got.dtype) == str(want.dtype).replace("torch", "vkt")
    assert_close(got, want.numpy(), rtol=2e-6, atol=1e-7)


ERRORS = [
    ("polygamma_negative_n", lambda m: m.polygamma(-1, m.ones(2))),
    ("xlogy_two_numbers", lambda m: m.xlogy(2, 3)),
    ("multigammaln_p0", lambda m: m.special.multigammaln(m.ones(2), 0)),
    ("lgamma_int_inplace", lambda m: m.ones(2, dtype=m.int64).lgamma_()),
    ("zeta_two_numbers", lambda m: m.special.zeta(2.0, 3.0)),
    ("zeta_half", lambda m: m.special.zeta(m.ones(2, dtype=m.float16), m.ones(2, dtype=m.float16))),
    ("erfcx_half", lambda m: m.special.erfcx(m.ones(2, dtype=m.float16))),
    ("nextafter_int", lambda m: m.nextafter(m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64))),
    ("nextafter_number", lambda m: m.nextafter(m.ones(2), 2.0)),
    ("nextafter_int_inplace", lambda m: m.ones(2, dtype=m.int64).nextafter_(m.ones(2))),
]


@pytest.mark.parametrize("name, f", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_torch(name, f):
    got, want = raised(lambda: f(vkt)), raised(lambda: f(torch))
    assert got[0] == want[0] is not None
    if want[0] == "NotImplementedError":  # the kernel and dtype torch names
        assert got[1] == want[1]


mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 40


def erfcx_exact(x):
    return np.array([float(mpmath.exp(mpmath.mpf(float(v)) ** 2) * mpmath.erfc(mpmath.mpf(float(v)))) for v in x])


def ulps(got, exact, dtype):
    """|got - exact| in units of dtype's spacing at exact, where exact is finite in dtype."""
    got = got.cpu().numpy().astype(np.float64)
    with np.errstate(over="ignore"):
        finite = np.isfinite(exact.astype(dtype))
    assert np.array_equal(np.isfinite(got), finite)
    return np.abs(got[finite] - exact[finite]) / np.spacing(np.abs(exact[finite]).astype(dtype)).astype(np.float64)


ERFCX_X = np.concatenate([np.linspace(-26.6, 30, 1131), np.random.default_rng(1).uniform(-26.6, 40, 400),
                          np.geomspace(1e-300, 1e100, 101), -np.geomspace(1e-300, 26.6, 101),
                          [0.0, -0.0, 0.5, 0.84375, 1.25, 1.2499999999, 26.0, 28.0, 27.999999]])


def test_erfcx_within_ulps_of_mpmath(device):
    """erfcx to a few ulp wherever it is finite: its large-x tail without erfc's underflow, its negative side's
    e^(x^2) with x^2 exact (torch's float64, and SciPy's, are 450 ulp off near -25, where x * x rounds)."""
    assert ulps(vkt.special.erfcx(vkt.tensor(ERFCX_X, device=device)), erfcx_exact(ERFCX_X), np.float64).max() <= 4
    x = ERFCX_X[np.abs(ERFCX_X) < 20].astype(F32)
    assert ulps(vkt.special.erfcx(vkt.tensor(x, device=device)), erfcx_exact(x), F32).max() <= 8
    big = vkt.tensor([-1e30, -30.0, 1e30, 1e300, INF, -INF, math.nan], dtype=vkt.float64, device=device)
    assert_close(vkt.special.erfcx(big), [INF, INF, 1 / (1e30 * math.sqrt(math.pi)), 1 / (1e300 * math.sqrt(math.pi)),
                                          0.0, INF, math.nan], rtol=1e-15, atol=0)


S = np.array([1.0, 0.5, -1.0, 0.0, 1.0000001, 1.5, 2.0, 2.5, 3.0, 4.0, 7.0, 10.5, 30.0, 64.0, 65.0, 100.0, INF, -INF,
              math.nan])[:, None]
Q = np.array([0.0, -0.0, -1.0, -3.0, 1e-30, 1e-5, 0.1, 0.5, 1.0, 1.5, 2.0, 9.5, 10.0, 100.0, 1e5, 1e10, INF, -INF,
              math.nan])[None, :]


@pytest.mark.parametrize("dtype, rtol", [("float32", 4e-6), ("float64", 1e-12)])
def test_zeta_special_values_and_grid_match_torch(device, dtype, rtol):
    """Hurwitz zeta over s x q, broadcast: poles, s <= 1, infinities and NaN as torch's (Cephes'); a negative q takes
    an integer s only."""
    s, q = S.astype(dtype), Q.astype(dtype)
    got = vkt.special.zeta(vkt.tensor(s, device=device), vkt.tensor(q, device=device))
    assert_close(got, torch.special.zeta(torch.tensor(s), torch.tensor(q)).numpy(), rtol=rtol, atol=1e-30)


def zeta_negative_q_exact(s, q):
    """The terms left of 0 as their mirror's sum, in 100 digits, which the sides' cancellation needs (mpmath's own
    zeta takes another branch there)."""
    with mpmath.workdps(100):
        f, z = mpmath.mpf(math.trunc(q) - q), lambda a: mpmath.zeta(s, a)
        return (-1) ** int(s) * (z(f) - z(1 - mpmath.mpf(q))) + z(1 - f)


def test_zeta_of_negative_q_matches_mpmath(device):
    """q < 0 by the terms left of 0 mirrored: where the two sides cancel (zeta(65, -2.5) is 4e-36 after terms of
    2^65), torch's sum from q keeps its rounding (3.6e-12), the mirrored ones cancel exactly."""
    s = np.array([2.0, 3.0, 4.0, 7.0, 65.0])[:, None]
    q = np.array([-0.5, -2.5, -3.75, -10.25, -300000.5])[None, :]
    exact = np.array([[float(zeta_negative_q_exact(a, b)) for b in q[0]] for a in s[:, 0]])
    got = vkt.special.zeta(vkt.tensor(s, device=device), vkt.tensor(q, device=device))
    assert_close(got, exact, rtol=1e-12, atol=0)
    with np.errstate(over="ignore"):
        exact32 = exact[:, :3].astype(F32)  # 0.25^-65 is past float32's range
    assert_close(vkt.special.zeta(vkt.tensor(s.astype(F32), device=device), vkt.tensor(q[:, :3].astype(F32),
                                                                                         device=device)),
                 exact32, rtol=5e-5, atol=0)


def test_zeta_derivative_in_s_raises_as_torch(device):
    for call in [lambda m, s, q: m.special.zeta(s, q), lambda m, s, q: m.special.zeta(s, 1.5)]:
        v = vkt.tensor([2.5, 3.0], dtype=vkt.float64, device=device, requires_grad=True)
        t = torch.tensor([2.5, 3.0], dtype=torch.float64, requires_grad=True)
        y, z = call(vkt, v, v.detach() + 1), call(torch, t, t.detach() + 1)
        assert y.grad_fn.name() == z.grad_fn.name()
        assert raised(lambda: y.sum().backward()) == raised(lambda: z.sum().backward())
        assert raised(lambda: z.sum().backward())[0] == "NotImplementedError"


EDGE_BITS = {"float16": [0.0, -0.0, 6e-8, -6e-8, 6.1e-5, 6.1035e-5, 1.0, -1.0, 65504.0, -65504.0, 0.1],
             "float32": [0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, 1.0, -1.0, 3.4028235e38, 0.1],
             "float64": [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.0, -1.0, 1.7976931348623157e308, 0.1]}


def assert_computed_bits_equal(got, ref):
    """The same bits, but for a NaN's payload, which a GPU's arithmetic and conversions set (NVIDIA's float16 NaN is
    0x7fff where the CPU's is 0x7e00); data movement keeps payloads, and conftest's assert_bits_equal checks them."""
    got, ref = np.asarray(got), np.asarray(ref)
    nan = np.isnan(got)
    assert np.array_equal(nan, np.isnan(ref)), "NaNs differ"
    assert_bits_equal(got[~nan], ref[~nan])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nextafter_is_bit_exact(device, dtype):
    """Every pair of the edges (zeros, subnormals, the smallest normal, the largest finite, +-inf, NaN) and random
    values, broadcast, as torch's bits; a 0-d cpu other joins a vulkan op as a number, rounded to x's dtype first."""
    edges = np.array(EDGE_BITS[dtype] + [INF, -INF, math.nan], dtype)
    rand = np.random.default_rng(2).standard_normal(61).astype(dtype) * np.asarray(1e3, dtype)
    x = np.concatenate([edges, rand])
    for a, b in [(x[:, None], x[None, :]), (rand, rand[::-1].copy())]:
        got = vkt.nextafter(vkt.tensor(a, device=device), vkt.tensor(b, device=device))
        assert_computed_bits_equal(got.cpu().numpy(), torch.nextafter(torch.tensor(a), torch.tensor(b)).numpy())
    other = torch.tensor(1.0001, dtype=torch.float64)
    got = vkt.nextafter(vkt.tensor(x, device=device), vkt.tensor(other.numpy()))
    assert_computed_bits_equal(got.cpu().numpy(), torch.nextafter(torch.tensor(x), other).numpy())
    y = vkt.tensor(x, device=device)
    y.nextafter_(vkt.zeros(1, dtype=vkt.float64, device=device))  # computed in float64, stored in x's dtype
    want = torch.tensor(x).nextafter_(torch.zeros(1, dtype=torch.float64)).numpy()
    got = y.cpu().numpy()
    if dtype == "float32" and flushes_subnormals(device):  # NVIDIA converts float32 subnormals to and from float64 as 0
        kept = ~(np.abs(want) < np.finfo(F32).tiny)  # NaN kept
        got, want = got[kept], want[kept]
    assert_computed_bits_equal(got, want)


LAYOUTS = [  # non-contiguous, broadcast, 0-d and empty operands of the new ops
    ("transposed", lambda m, x: m.special.erfcx(x.t()) + m.angle(x.t() - 1)),
    ("sliced", lambda m, x: m.special.zeta(x[:, ::2] + 1.5, x[1:2, ::2] + 0.25)),
    ("broadcast", lambda m, x: m.nextafter(x[:, :1], x[:1, :])),
    ("zero_dim", lambda m, x: m.special.zeta(x[0, 0] + 2, x[1, 1].abs() + 1) + m.nextafter(x[0, 0], x[1, 1])),
    ("empty", lambda m, x: m.special.erfcx(x[:0]) + m.special.zeta(x[:0], x[:0]) + m.angle(x[:0])),
    ("empty_broadcast", lambda m, x: m.nextafter(x[:, :0], x[:1, :0])),
]


@pytest.mark.parametrize("name, f", LAYOUTS, ids=[c[0] for c in LAYOUTS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_new_ops_over_layouts_match_torch(device, name, f, dtype):
    x = np.random.default_rng(3).uniform(-3, 3, (5, 7)).astype(dtype)
    got, want = f(vkt, vkt.tensor(x, device=device)), f(torch, torch.tensor(x))
    assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype).replace("torch", "vkt")
    assert_close(got, want.numpy(), rtol=4e-6 if dtype == "float32" else 1e-12, atol=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_multigammaln_matches_torch(device, p):
    x = np.linspace(2.01, 9, 40, dtype=F32)
    got = vkt.special.multigammaln(vkt.tensor(x, device=device), p)
    assert_close(got, torch.special.multigammaln(torch.tensor(x.astype(np.float64)), p).numpy(), rtol=4e-6, atol=1e-5)


def test_special_names():
    names = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e",
             "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma",
             "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]
    assert all(hasattr(torch.special, n) and callable(getattr(vkt.special, n)) for n in names)
    x = vkt.tensor([[0.5, -1.25, 2.0]])
    assert_close(vkt.special.softmax(x, 1), vkt.softmax(x, 1), 0, 0)
    assert_close(vkt.special.logsumexp(x, 1), vkt.logsumexp(x, 1), 0, 0)
    assert_close(vkt.special.round(x), x.round(), 0, 0)


# ---- gradients ----

GRAD = [  # (name, f over namespace m, input values away from poles and the ends of domains)
    ("lgamma", lambda m, x: x.lgamma(), [-2.5, -0.7, 0.3, 1.0, 2.5, 7.0, 30.0]),
    ("digamma", lambda m, x: m.digamma(x), [-2.5, -0.7, 0.3, 1.0, 2.5, 7.0, 30.0]),
    ("polygamma1", lambda m, x: m.polygamma(1, x), [-2.5, -0.7, 0.3, 1.0, 2.5, 7.0, 30.0]),
    ("polygamma3", lambda m, x: x.polygamma(3), [-2.5, -0.7, 0.3, 1.0, 2.5, 7.0, 30.0]),
    ("sinc", lambda m, x: x.sinc(), [-2.5, -0.7, 0.0, 0.3, 1.0, 2.5, 7.25]),
    ("i0", lambda m, x: x.i0(), [-9.0, -0.7, 0.0, 0.3, 1.0, 2.5, 12.0]),
    ("i0e", lambda m, x: m.special.i0e(x), [-9.0, -0.7, 0.3, 1.0, 2.5, 12.0]),
    ("i1", lambda m, x: m.special.i1(x), [-9.0, -0.7, 0.0, 0.3, 1.0, 2.5, 12.0]),
    ("i1e", lambda m, x: m.special.i1e(x), [-9.0, -0.7, 0.0, 0.3, 1.0, 2.5, 12.0]),
    ("entr", lambda m, x: m.special.entr(x), [0.1, 0.3, 1.0, 2.5, 7.0]),
    ("ndtr", lambda m, x: m.special.ndtr(x), [-9.0, -0.7, 0.0, 0.3, 2.5]),
    ("log_ndtr", lambda m, x: m.special.log_ndtr(x), [-30.0, -9.0, -0.7, 0.0, 0.3, 2.5]),
    ("ndtri", lambda m, x: m.special.ndtri(x), [1e-3, 0.1, 0.3, 0.5, 0.9, 0.999]),
    ("logit", lambda m, x: x.logit(), [1e-3, 0.1, 0.3, 0.5, 0.9, 0.999]),
    ("logit_eps", lambda m, x: m.logit(x, 0.2), [1e-3, 0.1, 0.3, 0.5, 0.7, 0.999]),
    ("multigammaln", lambda m, x: m.special.multigammaln(x, 3), [1.3, 2.5, 7.0]),
    ("xlogy", lambda m, x: m.xlogy(x - 1, x), [0.1, 0.3, 1.0, 2.5, 7.0]),
    ("xlogy_number_x", lambda m, x: m.xlogy(2.5, x), [0.1, 0.3, 1.0, 2.5]),
    ("xlogy_number_y", lambda m, x: m.xlogy(x, 3.0), [-0.1, 0.3, 2.5]),
    ("xlog1py", lambda m, x: m.special.xlog1py(x - 1, x), [0.1, 0.3, 1.0, 2.5, 7.0]),
    ("xlog1py_number_y", lambda m, x: m.special.xlog1py(x, 0.5), [-0.1, 0.3, 2.5]),
    ("erfcx", lambda m, x: m.special.erfcx(x), [-3.0, -0.7, 0.0, 0.3, 1.0, 2.5, 12.0]),
    ("zeta_q", lambda m, x: m.special.zeta(m.full_like(x.detach(), 2.5), x), [0.3, 1.0, 2.5, 7.0]),
    ("zeta_number_s", lambda m, x: m.special.zeta(3.0, x), [-0.5, 0.3, 1.0, 2.5, 7.0]),
    ("nextafter", lambda m, x: m.nextafter(x, m.full_like(x.detach(), 0.5)), [-2.5, -0.7, 1.0, 0.3, 2.0]),
    ("angle", lambda m, x: m.angle(x), [-2.5, -0.7, 0.3, 2.0]),
]


# float32 gradients that cancel: polygamma(4, -2.5) is 24 (zeta(5, -2.5) = -32.1 + 32.1...) and log_ndtr's derivative
# at -30 is e^-(log_ndtr(x) + x^2 / 2) = e^-(-454.3 + 450), both in float32 as in torch's float32; so does erfcx's,
# 2 x erfcx(x) - 2 / sqrt(pi), at 12.
GRAD_RTOL = {"polygamma3": 1e-3, "log_ndtr": 1e-4, "erfcx": 1e-4}


@pytest.mark.parametrize("name, f, x", GRAD, ids=[c[0] for c in GRAD])
def test_gradcheck_float64_cpu(name, f, x):
    leaf = vkt.tensor(np.array(x), dtype=vkt.float64, requires_grad=True)
    assert vkt.autograd.gradcheck(lambda t: f(vkt, t), (leaf,))


NEW_GRAD = ["erfcx", "zeta_q", "zeta_number_s", "nextafter", "angle"]


@pytest.mark.parametrize("name", NEW_GRAD)
def test_gradcheck_float64_on_the_device(device, name):
    f, x = next((c[1], c[2]) for c in GRAD if c[0] == name)
    leaf = vkt.tensor(np.array(x), dtype=vkt.float64, device=device, requires_grad=True)
    assert vkt.autograd.gradcheck(lambda t: f(vkt, t), (leaf,))


@pytest.mark.parametrize("name, f, x", GRAD, ids=[c[0] for c in GRAD])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grads_and_nodes_match_torch(device, name, f, x, dtype):
    a = np.array(x, dtype=dtype)
    v, t = vkt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, z = f(vkt, v), f(torch, t)
    if name not in ("ndtr", "multigammaln"):  # torch's are composites of other ops
        assert y.grad_fn.name() == z.grad_fn.name()
    y.backward(vkt.ones_like(y) * 0.75)
    z.backward(torch.ones_like(z) * 0.75)
    assert_close(v.grad, t.grad.numpy(), rtol=GRAD_RTOL.get(name, 2e-5) if dtype == "float32" else 1e-10, atol=1e-7)


def test_grads_at_zero_and_poles_match_torch(device):
    a = np.array([0.0, -0.0, 2.0, -1.0, 1.0], np.float64)
    # logit at -0.0 left out: torch's gradient there is +inf, 1 / (x (1 - x)) is -inf
    for f in [lambda m, x: m.xlogy(x, x), lambda m, x: m.xlogy(x, m.zeros_like(x)), lambda m, x: x.abs().logit(),
              lambda m, x: m.logit(x, 0.25), lambda m, x: m.special.xlog1py(x * 0, x - 3),
              lambda m, x: m.special.xlog1py(x - 2, -1.0), lambda m, x: m.special.xlog1py(x, x - 1),
              # x == 0 with y > 0: log(y), log1p(y); with y <= 0 (-1) or a NaN number y: 0
              lambda m, x: m.xlogy(x * 0, x.abs() + 1), lambda m, x: m.xlogy(x * 0, x - 1),
              lambda m, x: m.xlogy(x, 2.0), lambda m, x: m.xlogy(x, -2.0), lambda m, x: m.xlogy(x, float("nan")),
              lambda m, x: m.special.xlog1py(x * 0, x.abs()), lambda m, x: m.special.xlog1py(x * 0, x - 1.5),
              lambda m, x: m.special.xlog1py(x, float("nan")), lambda m, x: m.xlogy(x * 0, m.zeros_like(x) + 0.5)]:
        v, t = vkt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
        f(vkt, v).sum().backward()
        f(torch, t).sum().backward()
        assert_close(v.grad, t.grad.numpy(), rtol=1e-12, atol=0)


def test_second_derivative_is_the_next_polygamma(device):
    x = vkt.tensor([0.4, 1.5, 6.0], dtype=vkt.float64, device=device, requires_grad=True)
    (g,) = vkt.autograd.grad(x.lgamma().sum(), x, create_graph=True)
    (h,) = vkt.autograd.grad(g.sum(), x)
    assert_close(h, torch.polygamma(1, torch.tensor([0.4, 1.5, 6.0], dtype=torch.float64)).numpy(), 1e-12, 0)


INPLACE = [
    ("lgamma_", lambda m, y: y.lgamma_()),
    ("digamma_", lambda m, y: y.digamma_()),
    ("polygamma_", lambda m, y: y.polygamma_(2)),
    ("xlogy_", lambda m, y: y.xlogy_(y * 2 + 1)),
    ("xlogy_number", lambda m, y: y.xlogy_(3.0)),
    ("logit_", lambda m, y: (y * 0.1).logit_(eps=0.05)),
    ("i0_", lambda m, y: y.i0_()),
    ("sinc_", lambda m, y: y.sinc_()),
    ("nextafter_", lambda m, y: y.nextafter_(y.detach() * 2)),
]


@pytest.mark.parametrize("name, f", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_on_a_non_leaf_matches_torch(device, name, f):
    a = np.array([0.3, 1.7, 2.5, 4.0], np.float32)
    v, t = vkt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, z = v * 1.5, t * 1.5
    ry, rz = f(vkt, y), f(torch, z)
    assert ry.grad_fn.name() == rz.grad_fn.name()
    (ry * ry).sum().backward()
    (rz * rz).sum().backward()
    assert_close(ry.detach(), rz.detach().numpy(), rtol=4e-6, atol=1e-7)
    assert_close(v.grad, t.grad.numpy(), rtol=2e-5, atol=1e-6)


def test_inplace_without_grad_writes_the_tensor(device):
    x = vkt.tensor([0.5, 3.0], device=device)
    assert x.lgamma_() is x
    assert_close(x, torch.tensor([0.5, 3.0]).lgamma().numpy(), rtol=4e-6, atol=1e-7)


# ---- on the vulkan device: fusion, and shaders rather than the CPU fallback ----

FUSED = [
    ("lgamma", lambda x, y: x.lgamma() * 2 + 1, "lgamma mul add"),
    ("xlogy", lambda x, y: vkt.xlogy(x, y + 4).digamma() - 1, "add xlogy digamma sub"),
    ("polygamma", lambda x, y: x.polygamma(3) * y.i0(), "polygamma i0 mul"),
    ("special", lambda x, y: vkt.special.ndtri(y.sigmoid()) + vkt.special.log_ndtr(x).logit(eps=0.1), None),
    ("erfcx_zeta", lambda x, y: vkt.special.erfcx(y) * vkt.special.zeta(x + 1, 2.5 - y.abs()), None),
    ("nextafter_angle", lambda x, y: vkt.nextafter(x, y).angle() + vkt.nextafter(y, x), None),
]


@pytest.mark.parametrize("name, f, ops", FUSED, ids=[c[0] for c in FUSED])
def test_chains_fuse_into_one_kernel(fusion, name, f, ops):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.1, 5, 300).astype(F32), rng.uniform(-3, 3, 300).astype(F32)
    vx, vy = vkt.tensor(x, device="vulkan"), vkt.tensor(y, device="vulkan")
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    out = f(vx, vy)
    vkt.vulkan.synchronize()
    s = vkt.vulkan.kernel_stats()
    assert s["dispatches"] == 1 and (ops is None or s["fused_kernels"] == [(ops, 1)])
    assert_close(out, f(vkt.tensor(x), vkt.tensor(y)), rtol=1e-5, atol=1e-6)


def test_float32_takes_no_fallback(dev):
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor(GRID, device=dev, requires_grad=True)
    p = vkt.tensor(PROB, device=dev)
    outs = [f(vkt, p if c is PROB else x) for _, f, c, _, _ in UNARY] + [vkt.xlogy(x, x), vkt.special.xlog1py(x, 2.0)]
    outs += [vkt.special.zeta(3.0, x.abs() + 0.5), vkt.special.zeta(x.detach(), -x.detach()), vkt.nextafter(x, p[:1]),
             x.angle(), vkt.nextafter(x.half(), x.detach().half())]
    sum(o[:40].sum() for o in outs if o.requires_grad).backward()  # every op's gradient too
    vkt.vulkan.synchronize()
    assert vkt.vulkan.fallback_stats() == {}
