# vkt.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) against torch.autograd.functional on the same
# float64 inputs: values and structure (tensor or tuple, per input and output), strict mode and create_graph.
import numpy as np
import pytest
import torch

import vkt

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((3, 4)), RNG.standard_normal(4)


def T(L, a, device):
    return torch.tensor(a) if L is torch else vkt.tensor(a, device=device)


def as_numpy(o):
    if isinstance(o, (tuple, list)):
        return [as_numpy(i) for i in o]
    return o.detach().cpu().numpy() if isinstance(o, vkt.Tensor) else o.detach().numpy()


def assert_same(a, b):
    if isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


CASES = [  # name, call(F, L, device) -> result
    ("vjp_scalar", lambda F, L, d: F.vjp(lambda x: (x.exp() * x).sum(), T(L, A, d))),
    ("vjp_matrix", lambda F, L, d: F.vjp(lambda x: x.sin() @ x.t(), T(L, A, d), T(L, np.ones((3, 3)), d))),
    ("jvp", lambda F, L, d: F.jvp(lambda x: x.sin() @ x.t(), T(L, A, d), T(L, np.ones((3, 4)), d))),
    ("jvp_two_inputs", lambda F, L, d: F.jvp(lambda x, y: (x * y).tanh(), (T(L, A, d), T(L, B, d)),
                                             (T(L, A * 0 + 1, d), T(L, B * 0 + 2, d)))),
    ("jacobian", lambda F, L, d: F.jacobian(lambda x: x.sin() @ x.t(), T(L, A, d))),
    ("jacobian_tuples", lambda F, L, d: F.jacobian(lambda x, y: ((x * y).tanh(), (x @ y).sum()),
                                                   (T(L, A, d), T(L, B, d)))),
    ("jacobian_unused_input", lambda F, L, d: F.jacobian(lambda x, y: x * 2, (T(L, A, d), T(L, B, d)))),
    ("hessian", lambda F, L, d: F.hessian(lambda x, y: (x.pow(2) * y).sum(), (T(L, A, d), T(L, B, d)))),
    ("hessian_one_input", lambda F, L, d: F.hessian(lambda x: x.exp().sum() * x.sum(), T(L, B, d))),
    ("hvp", lambda F, L, d: F.hvp(lambda x, y: (x.pow(2) * y).sum(), (T(L, A, d), T(L, B, d)),
                                  (T(L, np.ones((3, 4)), d), T(L, np.ones(4), d)))),
    ("vhp", lambda F, L, d: F.vhp(lambda x: (x.sin() * x).sum(), T(L, B, d), T(L, B, d))),
]


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(device, name, call):
    assert_same(as_numpy(call(vkt.autograd.functional, vkt, device)),
                as_numpy(call(torch.autograd.functional, torch, device)))


def test_strict_mode_names_the_independent_input(device):
    for L in (vkt, torch):
        with pytest.raises(RuntimeError, match="independent of input 1"):
            L.autograd.functional.jacobian(lambda x, y: x * 2, (T(L, A, device), T(L, B, device)), strict=True)


def test_create_graph_keeps_the_result_differentiable(device):
    grads = []
    for L in (vkt, torch):
        x = T(L, A, device).requires_grad_()
        j = L.autograd.functional.jacobian(lambda t: (t.exp() * t).sum(), x, create_graph=True)
        j.sum().backward()
        grads.append(as_numpy(x.grad))
    assert_same(grads[0], grads[1])


def test_results_are_detached_without_create_graph(device):
    x = T(vkt, A, device).requires_grad_()
    out, g = vkt.autograd.functional.vjp(lambda t: (t * t).sum(), x)
    assert not out.requires_grad and not g.requires_grad
    with pytest.raises(NotImplementedError, match="reverse mode"):
        vkt.autograd.functional.jacobian(lambda t: t * 2, x, strategy="forward-mode")


def test_a_vector_of_the_wrong_shape_is_named(device):
    x = T(vkt, A, device)
    with pytest.raises(RuntimeError, match=r"v\[0\] has a shape of \(2,\) and the function's output 0"):
        vkt.autograd.functional.vjp(lambda t: t.sum(0), x, T(vkt, np.ones(2), device))
    with pytest.raises(RuntimeError, match=r"v\[0\] has a shape of \(4,\) and the function's input 0"):
        vkt.autograd.functional.jvp(lambda t: t * 2, x, T(vkt, np.ones(4), device))
    with pytest.raises(RuntimeError, match="single Tensor with a single element"):
        vkt.autograd.functional.vjp(lambda t: t * 2, x)
