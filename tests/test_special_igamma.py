# The regularized incomplete gamma functions igamma / igammac (special.gammainc / gammaincc, and the methods and
# in-place forms) against torch 2.13 and SciPy on the cpu and vulkan devices: a grid of (a, x) with torch's special
# values (0, infinities, NaN, negatives) and large arguments, float16 to float64; broadcasting; x's gradient and the
# missing one of a; errors; fusion; no CPU fallback for float32 on vulkan.
import math

import numpy as np
import pytest

import vkt
from conftest import assert_bits_equal, assert_close, raised

torch = pytest.importorskip("torch")
special = pytest.importorskip("scipy.special")

INF, NAN = math.inf, math.nan
SPECIAL = [0.0, 1e-30, 1e-5, 0.5, 1.0, 1.5, 2.0, 10.0, 99.5, 1e3, 1e5, INF, NAN, -1.0, -0.0]
RNG = np.random.default_rng(0)
A = RNG.uniform(0.01, 30, 300) ** RNG.uniform(0.5, 2, 300)
# (a, x): every pair of the special values, then x around a (where P crosses 1/2) and far from it
PAIRS = np.array([(a, x) for a in SPECIAL for x in SPECIAL] +
                 [(a, a * f) for a, f in zip(A, RNG.uniform(0, 3, 300))] +
                 [(a, x) for a, x in zip(A, RNG.uniform(0, 60, 300))])
FUNCS = {"igamma": (lambda m: m.igamma, special.gammainc),
         "igammac": (lambda m: m.special.gammaincc, special.gammaincc)}


def both(name, dtype, device):
    """vkt's and torch's values of function `name` over PAIRS in dtype."""
    fn = FUNCS[name][0]
    a, x = PAIRS[:, 0], PAIRS[:, 1]
    got = fn(vkt)(vkt.tensor(a, dtype=getattr(vkt, dtype), device=device),
                  vkt.tensor(x, dtype=getattr(vkt, dtype), device=device))
    want = fn(torch)(torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(x, dtype=getattr(torch, dtype)))
    return got, want


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("dtype, rtol, atol", [("float64", 1e-9, 1e-9), ("float32", 1e-5, 3e-6),
                                               ("float16", 2e-3, 2e-3)])
def test_matches_torch(device, name, dtype, rtol, atol):
    """torch's values, NaNs and infinities included (its float64 itself is 4e-10 off for large a, which SciPy's
    comparison below checks closer)."""
    got, want = both(name, dtype, device)
    assert str(got.dtype) == str(want.dtype).replace("torch", "vkt")
    assert_close(got, want.float().numpy() if dtype == "float16" else want.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", FUNCS)
def test_float64_matches_scipy(device, name):
    finite = np.isfinite(PAIRS).all(1) & (PAIRS >= 0).all(1) & (PAIRS[:, 0] > 0)
    a, x = PAIRS[finite, 0], PAIRS[finite, 1]
    got = FUNCS[name][0](vkt)(vkt.tensor(a, device=device), vkt.tensor(x, device=device))
    assert_close(got, FUNCS[name][1](a, x), rtol=1e-12, atol=1e-14)


def test_broadcast_methods_and_in_place(device):
    a = vkt.tensor([[0.5], [2.0], [9.0]], device=device)
    x = vkt.tensor([0.25, 1.0, 4.0, 16.0], device=device)
    ta, tx = torch.tensor([[0.5], [2.0], [9.0]]), torch.tensor([0.25, 1.0, 4.0, 16.0])
    assert_close(a.igamma(x), ta.igamma(tx).numpy(), rtol=1e-5, atol=1e-6)
    assert_close(vkt.special.gammainc(a, x) + a.igammac(x), np.ones((3, 4)), rtol=1e-6, atol=1e-6)
    y = a.expand(3, 4).clone()
    y.igamma_(x)
    assert_close(y, ta.expand(3, 4).clone().igamma_(tx).numpy(), rtol=1e-5, atol=1e-6)
    z = x.clone()
    z.igammac_(vkt.tensor(3.0, device=device))
    assert_close(z, tx.clone().igammac_(torch.tensor(3.0)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_gradient_of_x_and_none_for_a(device, name):
    """x's gradient is torch's formula (exp((a - 1) log x - x - lgamma(a)), negated for igammac); a's raises."""
    a, x = np.array([0.5, 1.0, 2.5, 7.0, 30.0]), np.array([0.3, 0.0, 2.0, 8.0, 25.0])
    va, vx = vkt.tensor(a, device=device), vkt.tensor(x, device=device, requires_grad=True)
    ta, tx = torch.tensor(a), torch.tensor(x, requires_grad=True)
    y, ty = getattr(vkt, name)(va, vx), getattr(torch, name)(ta, tx)
    assert y.grad_fn.name() == ty.grad_fn.name()
    y.backward(vkt.ones_like(y))
    ty.backward(torch.ones_like(ty))
    assert_close(vx.grad, tx.grad.numpy(), rtol=1e-12, atol=1e-14)
    y = getattr(vkt, name)(vkt.tensor(a, device=device, requires_grad=True), vx)
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}: input' is not implemented"):
        y.sum().backward()


ERRORS = [
    ("long", lambda m: m.igamma(m.tensor([1, 2]), m.tensor([2, 3]))),
    ("bool", lambda m: m.special.gammaincc(m.tensor([True]), m.tensor([False]))),
    ("number_other", lambda m: m.igamma(m.tensor([2.0]), 1.0)),
    ("number_input", lambda m: m.igammac(2.0, m.tensor([1.0]))),
    ("in_place_broadcast", lambda m: m.ones(2).igamma_(m.ones(3, 2))),
]


@pytest.mark.parametrize("name, call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(device, name, call):
    want = raised(lambda: call(torch))
    assert want[0] is not None and raised(lambda: call(vkt)) == want


def test_fuses_with_the_same_bits(dev):
    a = vkt.tensor(PAIRS[:, 0].clip(0, 1e3), dtype=vkt.float32, device=dev)
    x = vkt.tensor(PAIRS[:, 1].clip(0, 1e3), dtype=vkt.float32, device=dev)

    def chain():
        return vkt.special.gammaincc(a * 1.5, x + 0.25) * 2.0

    vkt.vulkan.reset_fallback_stats()
    vkt.vulkan.set_fusion(False)
    try:
        unfused = chain().cpu()
    finally:
        vkt.vulkan.set_fusion(True)
    vkt.vulkan.reset_kernel_stats()
    fused = chain().cpu()
    assert vkt.vulkan.kernel_stats()["fused_kernels"] == [("mul add igammac mul", 1)]
    assert_bits_equal(fused, unfused)
    assert not vkt.vulkan.fallback_stats()
