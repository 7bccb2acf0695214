# Backward of the fused vkt.matmul_add_relu(lhs, rhs, bias) = relu(lhs @ rhs + bias) (issue 16): its
# gradients equal those of vkt.matmul_add_relu_reference and of torch's relu(x @ w + b), with batch
# broadcasting on each operand, 1-D operands, strided operands, and relu' = 0 where the sum is exactly 0.
import numpy as np
import pytest

import vkt
from conftest import assert_close, to_numpy

torch = pytest.importorskip("torch")

SHAPES = [  # (lhs, rhs, bias)
    ((3, 4), (4, 5), (5,)),
    ((1, 3, 4), (2, 4, 5), (2, 3, 5)),
    ((2, 3, 4), (4, 5), (2, 3, 5)),
    ((2, 3, 4), (2, 4, 5), (5,)),
    ((2, 3, 4), (2, 4, 5), (1, 1, 5)),
    ((3, 4), (2, 4, 5), (3, 1)),
    ((2, 1, 3, 4), (3, 4, 5), (1, 5)),
    ((4,), (4, 5), (5,)),
    ((3, 4), (4,), (3,)),
    ((2, 3, 4), (4,), ()),
]
IDS = ["x".join(map(str, l)) + "@" + "x".join(map(str, r)) + "+" + ("x".join(map(str, b)) or "0d")
       for l, r, b in SHAPES]
OPS = {
    "fused": lambda x, w, b: vkt.matmul_add_relu(x, w, b),
    "reference": lambda x, w, b: vkt.matmul_add_relu_reference(x, w, b),
}


def arrays(shapes, seed=0):
    """Float64 values exact in float32."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32).astype(np.float64) for s in shapes]


def out_shape(shapes):
    return tuple(torch.matmul(torch.zeros(shapes[0]), torch.zeros(shapes[1])).add(torch.zeros(shapes[2])).shape)


def vkt_grads(op, arrs, g, device, dtype, requires=(True, True, True)):
    dt = getattr(vkt, dtype)
    leaves = [vkt.tensor(a, dtype=dt, device=device, requires_grad=r) for a, r in zip(arrs, requires)]
    out = op(*leaves)
    assert out.requires_grad == any(requires)
    out.backward(vkt.tensor(g, dtype=dt, device=device))
    return to_numpy(out.detach()), [x.grad for x in leaves]


def torch_grads(arrs, g, requires=(True, True, True)):
    x, w, b = (torch.tensor(a, requires_grad=r) for a, r in zip(arrs, requires))
    out = (x @ w + b).relu()
    out.backward(torch.from_numpy(g))
    return out.detach().numpy(), [None if t.grad is None else t.grad.numpy() for t in (x, w, b)]


def assert_grads(got, want, arrs, rtol, atol):
    for i, (g, w, a) in enumerate(zip(got, want, arrs)):
        if w is None:
            assert g is None, f"input {i} should have no grad"
            continue
        assert g is not None and tuple(g.shape) == a.shape, f"input {i}: grad missing or of the wrong shape"
        assert_close(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", OPS, ids=list(OPS))
@pytest.mark.parametrize("shapes", SHAPES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grads_match_torch(device, op, shapes, dtype):
    arrs = arrays(shapes)
    g = arrays([out_shape(shapes)], seed=1)[0]
    out, got = vkt_grads(OPS[op], arrs, g, device, dtype)
    want_out, want = torch_grads(arrs, g)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_close(out, want_out, rtol=tol, atol=tol)
    assert all(x.dtype == getattr(vkt, dtype) for x in got)
    assert_grads(got, want, arrs, rtol=tol, atol=tol)


@pytest.mark.parametrize("shapes", SHAPES, ids=IDS)
def test_fused_grads_equal_reference_grads(device, shapes):
    arrs = arrays(shapes, seed=2)
    g = arrays([out_shape(shapes)], seed=3)[0]
    _, fused = vkt_grads(OPS["fused"], arrs, g, device, "float32")
    _, reference = vkt_grads(OPS["reference"], arrs, g, device, "float32")
    assert_grads(fused, [to_numpy(r) for r in reference], arrs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", OPS, ids=list(OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_derivative_at_zero_is_zero(device, op, dtype):
    """Integer inputs make lhs @ rhs + bias exactly 0 at chosen places; no gradient flows through them."""
    rng = np.random.default_rng(4)
    x = rng.integers(-2, 3, (2, 3, 4)).astype(np.float64)
    w = rng.integers(-2, 3, (4, 5)).astype(np.float64)
    zero_at = rng.random((2, 3, 5)) < 0.4
    b = np.where(zero_at, -(x @ w), rng.integers(-3, 4, (2, 3, 5)))
    g = rng.integers(1, 4, (2, 3, 5)).astype(np.float64)
    pre = x @ w + b
    assert (pre == 0).sum() >= 5
    mask = g * (pre > 0)
    want = [mask @ w.T, np.einsum("bmk,bmn->kn", x, mask), mask]
    out, got = vkt_grads(OPS[op], [x, w, b], g, device, dtype)
    assert_close(out, np.maximum(pre, 0), rtol=0, atol=0)
    assert_grads(got, want, [x, w, b], rtol=0, atol=0)
    _, torch_want = torch_grads([x, w, b], g)
    assert_grads(got, torch_want, [x, w, b], rtol=0, atol=0)


@pytest.mark.parametrize("requires", [(True, False, False), (False, True, False), (False, False, True),
                                      (True, True, False)], ids=["lhs", "rhs", "bias", "lhs_rhs"])
def test_grads_of_some_operands(device, requires):
    shapes = SHAPES[1]
    arrs = arrays(shapes, seed=5)
    g = arrays([out_shape(shapes)], seed=6)[0]
    _, got = vkt_grads(OPS["fused"], arrs, g, device, "float64", requires)
    _, want = torch_grads(arrs, g, requires)
    assert_grads(got, want, arrs, rtol=1e-12, atol=1e-12)


def test_no_operand_requires_grad_builds_no_graph(device):
    x, w, b = (vkt.tensor(a, device=device) for a in arrays(SHAPES[0]))
    out = vkt.matmul_add_relu(x, w, b)
    assert not out.requires_grad and out.grad_fn is None
    with vkt.no_grad():
        x.requires_grad_()
        assert not vkt.matmul_add_relu(x, w, b).requires_grad


def test_strided_operands(device):
    """Transposed lhs, rhs and bias, and a strided slice of the bias, seen by the fused op."""
    xa, wa, ba = arrays([(4, 3), (2, 5, 4), (5, 6)], seed=7)
    g = arrays([(2, 3, 5)], seed=8)[0]
    x, w, b = (vkt.tensor(a, device=device, requires_grad=True) for a in (xa, wa, ba))
    vkt.matmul_add_relu(x.T, w.transpose(1, 2), b.T[::2]).backward(vkt.tensor(g, device=device))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    (tx.T @ tw.transpose(1, 2) + tb.T[::2]).relu().backward(torch.from_numpy(g))
    for got, want in [(x, tx), (w, tw), (b, tb)]:
        assert_close(got.grad, want.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapes", SHAPES[:4] + SHAPES[7:], ids=IDS[:4] + IDS[7:])
def test_gradcheck(device, shapes):
    if device == "vulkan" and not vkt.vulkan.get_device_properties().shader_float64:
        pytest.skip("this Vulkan adapter has no float64 shaders")
    leaves = tuple(vkt.tensor(a, device=device, requires_grad=True) for a in arrays(shapes, seed=9))
    assert vkt.autograd.gradcheck(vkt.matmul_add_relu, leaves)


def test_in_a_training_step(device):
    """Two stacked fused layers and a loss: every parameter's grad as torch's."""
    xa, w1a, b1a, w2a, b2a = arrays([(2, 3, 4), (4, 6), (6,), (6, 2), (2,)], seed=10)
    leaves = [vkt.tensor(a, device=device, requires_grad=True) for a in (w1a, b1a, w2a, b2a)]
    w1, b1, w2, b2 = leaves
    h = vkt.matmul_add_relu(vkt.tensor(xa, device=device), w1, b1)
    (vkt.matmul_add_relu(h, w2, b2).square().mean()).backward()
    tl = [torch.tensor(a, requires_grad=True) for a in (w1a, b1a, w2a, b2a)]
    th = (torch.from_numpy(xa) @ tl[0] + tl[1]).relu()
    ((th @ tl[2] + tl[3]).relu().square().mean()).backward()
    for got, want in zip(leaves, tl):
        assert_close(got.grad, want.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_float32_forward_backward_take_no_fallback(dev):
    vkt.vulkan.reset_fallback_stats()
    for shapes in SHAPES:
        arrs = arrays(shapes)
        vkt_grads(OPS["fused"], arrs, arrays([out_shape(shapes)], seed=1)[0], dev, "float32")
    assert vkt.vulkan.fallback_stats() == {}
