# The autograd API of issue 16: requires_grad and leaves, .grad .grad_fn .is_leaf, hooks, retain_grad,
# detach, Tensor.backward / autograd.backward / autograd.grad, grad modes, version-counter errors,
# create_graph, custom Functions, gradcheck, memory after backward, and threads. torch 2.13 (CPU) is the
# oracle for behaviour and messages, NumPy float64 for values.
import gc
import re
import threading
import warnings

import numpy as np
import pytest

import vkt
from conftest import assert_close, raised, to_numpy

torch = pytest.importorskip("torch")

RNG_VALUES = np.random.default_rng(16).standard_normal((4, 3))  # float64; rows are test inputs


def leaf(a, device, dtype="float64"):
    return vkt.tensor(np.asarray(a, dtype=np.float64), dtype=getattr(vkt, dtype), device=device, requires_grad=True)


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def values(t):
    """A NumPy copy of any tensor, one that requires grad included."""
    return to_numpy(t.detach())


# ---- requires_grad, leaves, .grad, .grad_fn ----

CREATION = [
    ("tensor", lambda d, **k: vkt.tensor([[1.0, 2.0], [3.0, 4.0]], device=d, **k)),
    ("zeros", lambda d, **k: vkt.zeros(2, 3, device=d, **k)),
    ("ones", lambda d, **k: vkt.ones((2, 3), device=d, **k)),
    ("randn", lambda d, **k: vkt.randn(2, 3, device=d, **k)),
    ("rand", lambda d, **k: vkt.rand(4, device=d, **k)),
    ("full", lambda d, **k: vkt.full((2, 3), 1.5, device=d, **k)),
    ("empty", lambda d, **k: vkt.empty(3, 2, device=d, **k)),
    ("arange", lambda d, **k: vkt.arange(0.0, 3.0, 0.5, device=d, **k)),
    ("linspace", lambda d, **k: vkt.linspace(0, 1, 5, device=d, **k)),
    ("logspace", lambda d, **k: vkt.logspace(0, 1, 5, device=d, **k)),
    ("eye", lambda d, **k: vkt.eye(3, device=d, **k)),
    ("zeros_like", lambda d, **k: vkt.zeros_like(vkt.ones(2, 3, device=d), **k)),
    ("ones_like", lambda d, **k: vkt.ones_like(vkt.ones(2, 3, device=d), **k)),
    ("full_like", lambda d, **k: vkt.full_like(vkt.ones(2, 3, device=d), 2.5, **k)),
    ("empty_like", lambda d, **k: vkt.empty_like(vkt.ones(2, 3, device=d), **k)),
    ("randn_like", lambda d, **k: vkt.randn_like(vkt.ones(2, 3, device=d), **k)),
    ("rand_like", lambda d, **k: vkt.rand_like(vkt.ones(2, 3, device=d), **k)),
    ("float64", lambda d, **k: vkt.zeros(2, dtype=vkt.float64, device=d, **k)),
    ("float16", lambda d, **k: vkt.ones(2, dtype=vkt.float16, device=d, **k)),
]


@pytest.mark.parametrize("name,make", CREATION, ids=[c[0] for c in CREATION])
def test_creation_requires_grad(device, name, make):
    t = make(device, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad is None and t.grad_fn is None
    assert not make(device).requires_grad
    assert not make(device, requires_grad=False).requires_grad


INT_CREATION = [
    ("tensor", lambda d: vkt.tensor([1, 2], device=d, requires_grad=True)),
    ("zeros_int64", lambda d: vkt.zeros(2, dtype=vkt.int64, device=d, requires_grad=True)),
    ("ones_int32", lambda d: vkt.ones(2, dtype=vkt.int32, device=d, requires_grad=True)),
    ("arange_int", lambda d: vkt.arange(3, device=d, requires_grad=True)),
    ("full_bool", lambda d: vkt.full((2,), True, dtype=vkt.bool, device=d, requires_grad=True)),
    ("requires_grad_", lambda d: vkt.ones(2, dtype=vkt.int64, device=d).requires_grad_()),
    ("setter", lambda d: setattr(vkt.ones(2, dtype=vkt.uint8, device=d), "requires_grad", True)),
]


@pytest.mark.parametrize("name,make", INT_CREATION, ids=[c[0] for c in INT_CREATION])
def test_requires_grad_on_integer_dtype_raises(device, name, make):
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        make(device)


def test_requires_grad_false_on_integer_dtype_is_allowed(device):
    i = vkt.ones(2, dtype=vkt.int32, device=device)
    assert i.requires_grad_(False) is i and not i.requires_grad
    i.requires_grad = False


def test_requires_grad_setter_and_requires_grad_(device):
    x = vkt.ones(2, 3, device=device)
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    assert x.requires_grad_(False) is x and not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad


def test_requires_grad_of_non_leaf_cannot_change(device):
    x = leaf(RNG_VALUES, device)
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables."):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables."):
        y.requires_grad_(False)
    assert y.requires_grad


def test_requires_grad_propagates(device):
    x = leaf(RNG_VALUES, device)
    c = vkt.ones(4, 3, dtype=vkt.float64, device=device)
    assert (x + c).requires_grad and not (x + c).is_leaf
    assert not (c * c).requires_grad and (c * c).grad_fn is None and (c * c).is_leaf
    assert (c.sum() * x).requires_grad


def test_is_leaf(device):
    x = leaf(RNG_VALUES, device)
    assert x.is_leaf and vkt.ones(2, device=device).is_leaf
    assert not (x * 2).is_leaf and not x[0].is_leaf and not x.view(12).is_leaf
    assert x.detach().is_leaf and (x * 2).detach().is_leaf
    with vkt.no_grad():
        assert (x * 2).is_leaf


def test_grad_read_write_none(device):
    a = data(4, 3)
    x = leaf(a, device)
    assert x.grad is None
    (x * x).sum().backward()
    assert_close(x.grad, 2 * a, rtol=1e-12, atol=0)
    x.grad = vkt.ones(4, 3, dtype=vkt.float64, device=device)
    (x * 3).sum().backward()
    assert_close(x.grad, np.full((4, 3), 4.0), rtol=0, atol=0)
    x.grad = None
    assert x.grad is None
    x.sum().backward()
    assert_close(x.grad, np.ones((4, 3)), rtol=0, atol=0)


def test_grad_of_wrong_size_cannot_be_assigned(device):
    x = leaf(RNG_VALUES, device)
    with pytest.raises(RuntimeError, match="size"):
        x.grad = vkt.ones(3, dtype=vkt.float64, device=device)


def test_grad_of_a_non_contiguous_leaf(device):
    a, g = data(3, 4), data(4, 3, seed=1)
    x = vkt.tensor(a, device=device).T.detach().requires_grad_()
    assert x.is_leaf and not x.is_contiguous()
    (x * vkt.tensor(g, device=device)).sum().backward()
    assert tuple(x.grad.shape) == (4, 3)
    assert_close(x.grad, g, rtol=0, atol=0)


def test_grad_lives_on_the_leaf_device_and_dtype(device):
    for dtype in ["float32", "float64"]:
        x = leaf(RNG_VALUES, device, dtype)
        (x.exp() * 2).sum().backward()
        assert x.grad.dtype == getattr(vkt, dtype) and x.grad.device == x.device
        assert tuple(x.grad.shape) == (4, 3) and not x.grad.requires_grad


NAMED = [  # expressions over namespace m whose grad_fn names torch fixes
    ("mul", lambda m, x, y: x * y), ("add", lambda m, x, y: x + y), ("sub", lambda m, x, y: x - y),
    ("div", lambda m, x, y: x / y), ("neg", lambda m, x, y: -x), ("exp", lambda m, x, y: x.exp()),
    ("sum", lambda m, x, y: x.sum()), ("mean", lambda m, x, y: x.mean()), ("relu", lambda m, x, y: x.relu()),
    ("mm", lambda m, x, y: x.mm(y.T)), ("view", lambda m, x, y: x.view(12)), ("pow", lambda m, x, y: x ** 2),
    ("select", lambda m, x, y: x[0]), ("permute", lambda m, x, y: x.permute(1, 0)),
    ("clamp_min", lambda m, x, y: x.clamp_min(0.1)), ("clamp_max_", lambda m, x, y: (x * 1).clamp_max_(0.1)),
    ("clamp_kw_min", lambda m, x, y: x.clamp(min=0.1)), ("celu", lambda m, x, y: m.nn.functional.celu(x)),
    ("leaky_relu_", lambda m, x, y: m.nn.functional.leaky_relu_(x * 1)),
    ("elu_inplace", lambda m, x, y: m.nn.functional.elu(x * 1, inplace=True)),
    ("selu_inplace", lambda m, x, y: m.nn.functional.selu(x * 1, inplace=True)),
    ("celu_inplace", lambda m, x, y: m.nn.functional.celu(x * 1, inplace=True)),
    ("threshold_", lambda m, x, y: m.nn.functional.threshold_(x * 1, 0.1, 0.0)),
    ("hardtanh", lambda m, x, y: m.nn.functional.hardtanh(x)), ("relu6", lambda m, x, y: m.nn.functional.relu6(x)),
    ("hardtanh_", lambda m, x, y: m.nn.functional.hardtanh_(x * 1, -0.5, 0.5)),
    ("fill_", lambda m, x, y: (x * 1).fill_(2.0)), ("zero_", lambda m, x, y: (x * 1).zero_()),
    ("fill_tensor", lambda m, x, y: (x * 1).fill_(x.sum())), ("fill_view", lambda m, x, y: _fill_row(x * 1)),
    ("copy_", lambda m, x, y: m.zeros_like(y).copy_(x)), ("setitem_whole", lambda m, x, y: _set(m.zeros_like(y), x)),
]


def _fill_row(t):
    t[1:].fill_(3.0)
    return t


def _set(t, v):
    t[:] = v
    return t


@pytest.mark.parametrize("name,f", NAMED, ids=[n[0] for n in NAMED])
def test_grad_fn_name_as_torch(device, name, f):
    x, y = leaf(RNG_VALUES, device), leaf(RNG_VALUES + 3, device)
    want = f(torch, torch.tensor(RNG_VALUES, requires_grad=True), torch.tensor(RNG_VALUES + 3)).grad_fn.name()
    assert f(vkt, x, y).grad_fn.name() == want.split("::")[-1]  # vkt's CopyBackwards is torch::autograd::


def test_next_functions(device):
    x = leaf(RNG_VALUES, device)
    c = vkt.ones(4, 3, dtype=vkt.float64, device=device)
    z = (x * c).exp()
    assert z.grad_fn.name() == "ExpBackward0"
    (mul, index), = z.grad_fn.next_functions
    assert index == 0 and mul.name() == "MulBackward0"
    (acc, i0), (none, i1) = mul.next_functions
    assert none is None and (i0, i1) == (0, 0)
    assert acc.name().endswith("AccumulateGrad")
    assert x.grad_fn is None


def test_accumulate_grad_node_holds_its_leaf(device):
    x = leaf(RNG_VALUES, device)
    (acc, _), = (x * 2).grad_fn.next_functions[:1]
    assert acc.variable is x


# ---- backward ----

def test_backward_of_scalar(device):
    a = data(4, 3)
    x = leaf(a, device)
    loss = (x * x).sum()
    assert loss.requires_grad and tuple(loss.shape) == ()
    assert loss.backward() is None
    assert_close(x.grad, 2 * a, rtol=1e-12, atol=0)


def test_backward_with_gradient(device):
    a, g = data(4, 3), data(4, 3, seed=1)
    x = leaf(a, device)
    (x.sin() * 3).backward(gradient=vkt.tensor(g, device=device))
    assert_close(x.grad, 3 * np.cos(a) * g, rtol=1e-12, atol=1e-15)


def test_backward_on_a_leaf(device):
    g = data(4, 3, seed=1)
    x = leaf(RNG_VALUES, device)
    x.backward(vkt.tensor(g, device=device))
    assert_close(x.grad, g, rtol=0, atol=0)


def test_backward_non_scalar_without_gradient_raises(device):
    x = leaf(RNG_VALUES, device)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_backward_gradient_of_wrong_shape_raises(device):
    x = leaf(RNG_VALUES, device)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(vkt.ones(3, dtype=vkt.float64, device=device))


def test_backward_without_grad_raises(device):
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        vkt.ones(2, device=device).sum().backward()


def test_backward_inputs(device):
    a, b = data(4, 3), data(4, 3, seed=1)
    x, y = leaf(a, device), leaf(b, device)
    (x * y).sum().backward(inputs=[x])
    assert_close(x.grad, b, rtol=0, atol=0)
    assert y.grad is None
    (x * y).sum().backward(inputs=y)
    assert_close(y.grad, a, rtol=0, atol=0)
    assert_close(x.grad, b, rtol=0, atol=0)


def test_grad_accumulates_across_backward_calls(device):
    a = data(4, 3)
    x = leaf(a, device)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    assert_close(x.grad, 2 * a + 3, rtol=1e-12, atol=0)
    x.grad.zero_()
    x.exp().sum().backward()
    assert_close(x.grad, np.exp(a), rtol=1e-12, atol=0)


def test_grad_accumulates_over_paths_of_one_graph(device):
    a = data(4, 3)
    x = leaf(a, device)
    y = x * 2
    (y * y + y.exp() + x).sum().backward()
    assert_close(x.grad, 8 * a + 2 * np.exp(2 * a) + 1, rtol=1e-12, atol=1e-12)


def test_second_backward_without_retain_graph_raises(device):
    x = leaf(RNG_VALUES, device)
    loss = (x * 2).sin().sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_retain_graph(device):
    a = data(4, 3)
    x = leaf(a, device)
    loss = (x * 2).sin().sum()
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)
    loss.backward()
    assert_close(x.grad, 3 * 2 * np.cos(2 * a), rtol=1e-12, atol=1e-15)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_autograd_backward(device):
    a, g1, g2 = data(4, 3), data(4, 3, seed=1), data(3, seed=2)
    x = leaf(a, device)
    y1, y2 = x * 2, x.sum(0)
    vkt.autograd.backward([y1, y2], [vkt.tensor(g1, device=device), vkt.tensor(g2, device=device)])
    assert_close(x.grad, 2 * g1 + g2, rtol=1e-12, atol=0)
    x.grad = None
    vkt.autograd.backward((x * x).sum())
    assert_close(x.grad, 2 * a, rtol=1e-12, atol=0)
    y = leaf(a, device)
    vkt.autograd.backward((x * y).sum(), inputs=[y])
    assert_close(y.grad, a, rtol=0, atol=0)
    assert_close(x.grad, 2 * a, rtol=1e-12, atol=0)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_autograd_backward_create_graph(device):
    a = data(4, 3)
    x = leaf(a, device)
    vkt.autograd.backward((x ** 3).sum(), create_graph=True)
    g = x.grad
    assert g.requires_grad
    assert_close(values(g), 3 * a ** 2, rtol=1e-12, atol=0)
    g2, = vkt.autograd.grad(g.sum(), x)
    assert_close(g2, 6 * a, rtol=1e-12, atol=0)


def test_autograd_grad(device):
    a, b, g = data(4, 3), data(4, 3, seed=1), data(4, 3, seed=2)
    x, y = leaf(a, device), leaf(b, device)
    gx, gy = vkt.autograd.grad((x * y).sum(), [x, y])
    assert_close(gx, b, rtol=0, atol=0)
    assert_close(gy, a, rtol=0, atol=0)
    assert x.grad is None and y.grad is None and not gx.requires_grad
    result = vkt.autograd.grad((x * 3).sum(), x)
    assert isinstance(result, tuple) and len(result) == 1
    gx, = vkt.autograd.grad(x.exp(), x, grad_outputs=vkt.tensor(g, device=device))
    assert_close(gx, np.exp(a) * g, rtol=1e-12, atol=0)


def test_autograd_grad_is_grads_batched_as_torch(device):
    """A batch of grad_outputs along a first dim (PyTorch vmaps the backward; vkt runs it once a row)."""
    found = []
    for L in (vkt, torch):
        kw = {} if L is torch else {"device": device}
        x = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True, **kw)
        w = L.tensor(1.0, dtype=L.float64, requires_grad=True, **kw)
        eye = L.eye(3, dtype=L.float64, **kw)
        got = [L.autograd.grad(x ** 2, x, eye, is_grads_batched=True)[0]]
        gx, gw = L.autograd.grad(x ** 2, (x, w), eye, is_grads_batched=True, allow_unused=True)
        assert gw is None
        got.append(gx)
        got.append(L.autograd.grad(x ** 2, (x, w), eye, is_grads_batched=True, materialize_grads=True)[1])
        y = x * w
        got.append(L.autograd.grad(y, x, eye * 2, is_grads_batched=True, retain_graph=True)[0])
        got.append(L.autograd.grad(y.sum(), w)[0])  # the graph was kept
        (g,) = L.autograd.grad(x ** 3, x, eye * 2, is_grads_batched=True, create_graph=True)
        g.sum().backward()
        got += [g, x.grad]
        with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first dimension"):
            L.autograd.grad(x ** 2, x, L.ones(2, 4, dtype=L.float64, **kw), is_grads_batched=True)
        with pytest.raises(IndexError):
            L.autograd.grad(x ** 2, x, L.ones(0, 3, dtype=L.float64, **kw), is_grads_batched=True)
        found.append([t.detach().cpu().numpy() if L is vkt else t.detach().numpy() for t in got])
    for v, t in zip(*found):
        assert v.shape == t.shape
        assert_close(v, t, rtol=1e-12, atol=0)


def test_autograd_grad_of_an_intermediate(device):
    a = data(4, 3)
    x = leaf(a, device)
    h = x.exp()
    gh, = vkt.autograd.grad((h * h).sum(), h)
    assert_close(gh, 2 * np.exp(a), rtol=1e-12, atol=0)


def test_autograd_grad_frees_the_graph_unless_retained(device):
    x = leaf(RNG_VALUES, device)
    loss = x.sin().sum()
    vkt.autograd.grad(loss, x, retain_graph=True)
    vkt.autograd.grad(loss, x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        vkt.autograd.grad(loss, x)


def test_autograd_grad_unused_input(device):
    x, unused = leaf(RNG_VALUES, device), leaf(RNG_VALUES, device)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        vkt.autograd.grad((x * 2).sum(), [x, unused])
    gx, gu = vkt.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None
    assert_close(gx, np.full((4, 3), 2.0), rtol=0, atol=0)


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_autograd_grad_unused_input_names_its_index_as_torch(device, order):
    def call(m, dev):
        x, unused = (m.tensor(RNG_VALUES, device=dev, requires_grad=True) for _ in range(2))
        inputs = [x, unused]
        return lambda: m.autograd.grad((x * 2).sum(), [inputs[k] for k in order])
    assert raised(call(vkt, device)) == raised(call(torch, "cpu"))


def test_autograd_grad_of_input_without_grad_raises(device):
    x = leaf(RNG_VALUES, device)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        vkt.autograd.grad((x * 2).sum(), [x, vkt.ones(2, device=device)])


# ---- create_graph ----

def test_double_backward_of_cube(device):
    a = data(4, 3)
    x = leaf(a, device)
    g, = vkt.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    assert_close(values(g), 3 * a ** 2, rtol=1e-12, atol=0)
    g2, = vkt.autograd.grad(g.sum(), x, create_graph=True)
    assert_close(values(g2), 6 * a, rtol=1e-12, atol=0)
    g3, = vkt.autograd.grad(g2.sum(), x)
    assert_close(g3, np.full((4, 3), 6.0), rtol=1e-12, atol=0)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_with_create_graph(device):
    a = data(4, 3)
    x = leaf(a, device)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.grad_fn is not None
    x.grad = None
    g.sum().backward()
    assert_close(x.grad, 6 * a, rtol=1e-12, atol=0)


def test_gradient_penalty(device):
    """WGAN-GP's penalty: the norm of d(critic)/d(input) pushed to 1; its gradient in the weights as torch's."""
    xa, wa, va = data(5, 3), data(3, 4, seed=1), data(4, seed=2)

    def penalty(m, x, w, v):
        out = ((x @ w).tanh() @ v).sum()
        g, = m.autograd.grad(out, x, create_graph=True)
        return (((g * g).sum(1) + 1e-12).sqrt() - 1).square().mean()

    x, w, v = leaf(xa, device), leaf(wa, device), leaf(va, device)
    penalty(vkt, x, w, v).backward()
    tx, tw, tv = (torch.tensor(a, requires_grad=True) for a in (xa, wa, va))
    penalty(torch, tx, tw, tv).backward()
    for got, want in [(x, tx), (w, tw), (v, tv)]:
        assert_close(got.grad, want.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_hessian_vector_product(device):
    """f = x.A.x / 2 + sum(x^3): H = (A + A^T) / 2 + diag(6x)."""
    xa, aa, va = data(4), data(4, 4, seed=1), data(4, seed=2)
    x, a, v = leaf(xa, device), vkt.tensor(aa, device=device), vkt.tensor(va, device=device)
    hessian = (aa + aa.T) / 2 + np.diag(6 * xa)

    def f():
        return (x @ a @ x) / 2 + (x ** 3).sum()

    g, = vkt.autograd.grad(f(), x, create_graph=True)
    hv, = vkt.autograd.grad(g, x, grad_outputs=v)
    assert_close(hv, hessian @ va, rtol=1e-10, atol=1e-12)
    g, = vkt.autograd.grad(f(), x, create_graph=True)
    hv, = vkt.autograd.grad((g * v).sum(), x)
    assert_close(hv, hessian @ va, rtol=1e-10, atol=1e-12)


# ---- grad modes ----

def test_no_grad_context(device):
    x = leaf(RNG_VALUES, device)
    assert vkt.is_grad_enabled()
    with vkt.no_grad():
        assert not vkt.is_grad_enabled()
        y = x * 2
    assert vkt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert (x * 2).requires_grad


def test_no_grad_decorator(device):
    x = leaf(RNG_VALUES, device)

    @vkt.no_grad()
    def double(t):
        assert not vkt.is_grad_enabled()
        return t * 2

    assert not double(x).requires_grad and vkt.is_grad_enabled()


def test_enable_grad_inside_no_grad(device):
    x = leaf(RNG_VALUES, device)

    @vkt.enable_grad()
    def double(t):
        return t * 2

    with vkt.no_grad():
        with vkt.enable_grad():
            assert vkt.is_grad_enabled()
            assert (x * 2).requires_grad
        assert not vkt.is_grad_enabled()
        assert double(x).requires_grad and not (x * 2).requires_grad


def test_set_grad_enabled(device):
    x = leaf(RNG_VALUES, device)
    with vkt.set_grad_enabled(False):
        assert not vkt.is_grad_enabled() and not (x * 2).requires_grad
        with vkt.set_grad_enabled(True):
            assert (x * 2).requires_grad
    assert vkt.is_grad_enabled()

    @vkt.set_grad_enabled(False)
    def double(t):
        return t * 2

    assert not double(x).requires_grad and vkt.is_grad_enabled()
    try:
        vkt.set_grad_enabled(False)
        assert not vkt.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        vkt.set_grad_enabled(True)
    assert vkt.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with vkt.no_grad():
            raise ValueError
    assert vkt.is_grad_enabled()
    with pytest.raises(ValueError):
        with vkt.inference_mode():
            raise ValueError
    assert vkt.is_grad_enabled()


def test_no_grad_update_of_a_leaf(device):
    """The optimizer step: in place on a leaf that requires grad, allowed under no_grad."""
    a = data(4, 3)
    x = leaf(a, device)
    (x * x).sum().backward()
    with vkt.no_grad():
        x.sub_(0.1 * x.grad)
        x -= 0.1
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert_close(values(x), a - 0.2 * a - 0.1, rtol=1e-12, atol=1e-15)
    x.grad = None
    (x * 2).sum().backward()
    assert_close(x.grad, np.full((4, 3), 2.0), rtol=0, atol=0)


def test_inference_mode(device):
    x = leaf(RNG_VALUES, device)
    with vkt.inference_mode():
        assert not vkt.is_grad_enabled()
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert_close(values(y), 2 * RNG_VALUES, rtol=0, atol=0)

    @vkt.inference_mode()
    def double(t):
        return t * 2

    assert not double(x).requires_grad and vkt.is_grad_enabled()
    with vkt.inference_mode(False):
        assert vkt.is_grad_enabled() and (x * 2).requires_grad


# ---- _base, _is_view(), is_inference(): PyTorch's view and inference-tensor semantics ----

VIEWS = [  # (name, make(L, device) -> (tensor, the base it views or None))
    ("plain", lambda L, d: (L.ones(4, 4, device=d), None)),
    ("slice", lambda L, d: (lambda x: (x[1:], x))(L.ones(4, 4, device=d))),
    ("slice_of_slice_points_at_the_root", lambda L, d: (lambda x: (x[1:][:, 1:], x))(L.ones(4, 4, device=d))),
    ("view_of_a_transpose", lambda L, d: (lambda x: (x.t().reshape(16)[2:], None))(L.ones(4, 4, device=d))),
    ("reshape_view", lambda L, d: (lambda x: (x.reshape(16), x))(L.ones(4, 4, device=d))),
    ("flatten", lambda L, d: (lambda x: (x.flatten(), x))(L.ones(4, 4, device=d))),
    ("permute", lambda L, d: (lambda x: (x.permute(1, 0), x))(L.ones(4, 4, device=d))),
    ("expand", lambda L, d: (lambda x: (x.expand(3, 4), x))(L.ones(4, device=d))),
    ("diagonal", lambda L, d: (lambda x: (x.diagonal(), x))(L.ones(4, 4, device=d))),
    ("narrow_function", lambda L, d: (lambda x: (L.narrow(x, 0, 1, 2), x))(L.ones(4, 4, device=d))),
    ("split", lambda L, d: (lambda x: (x.split(2)[1], x))(L.ones(4, 4, device=d))),
    ("unbind_of_a_non_leaf", lambda L, d: (lambda y: (y.unbind(0)[1], y))(
        L.ones(4, 4, device=d, requires_grad=True) * 2)),
    ("view_of_a_leaf", lambda L, d: (lambda w: (w[0], w))(L.ones(4, 4, device=d, requires_grad=True))),
    ("int_view", lambda L, d: (lambda x: (x[1:], x))(L.arange(5, device=d))),
    ("bool_view", lambda L, d: (lambda x: (x[1:], x))(L.ones(3, dtype=L.bool, device=d))),
    ("view_in_no_grad", lambda L, d: (lambda x: (L.no_grad()(lambda: x[1:])(), x))(L.ones(4, device=d))),
    ("view_of_a_parameter", lambda L, d: (lambda p: (p[1:], p))(L.nn.Parameter(L.ones(3, device=d)))),
    ("view_of_a_detached_tensor", lambda L, d: (lambda x: (x[1:], x))(L.ones(3, device=d).detach())),
    ("clone", lambda L, d: (L.ones(4, device=d)[1:].clone(), None)),
    ("detach_of_a_view", lambda L, d: (L.ones(4, device=d)[1:].detach(), None)),
    ("reshape_copy", lambda L, d: (L.ones(4, 4, device=d).t().reshape(16), None)),
    ("contiguous_copy", lambda L, d: (L.ones(4, 4, device=d).t().contiguous(), None)),
    ("non_leaf", lambda L, d: (L.ones(3, device=d, requires_grad=True) * 2, None)),
]


@pytest.mark.parametrize("name,make", VIEWS, ids=[c[0] for c in VIEWS])
def test_base_and_is_view_as_torch(device, name, make):
    found = []
    for L in (vkt, torch):
        t, base = make(L, "cpu" if L is torch else device)
        found.append((t._is_view(), t._base is base, t.is_inference()))
    assert found[0] == found[1]


def test_base_outlives_the_python_object_of_the_base(device):
    v = vkt.arange(5.0, device=device)[1:]
    assert v._is_view() and v._base is v._base  # made once, then held by the view's base's state
    assert v._base.tolist() == [0, 1, 2, 3, 4]
    v[0] = 7
    assert v._base.tolist() == [0, 7, 2, 3, 4]  # the same storage


def test_inference_tensors_as_torch(device):
    found = []
    for L in (vkt, torch):
        d = "cpu" if L is torch else device
        w = L.ones(3, device=d, requires_grad=True)
        with L.inference_mode():
            t, i, y, wv = L.ones(3, device=d), L.arange(3, device=d), w * 2, w[1:]
            inside = (L.is_inference_mode_enabled(), L.is_grad_enabled(), t[1:].is_inference())
            with L.inference_mode(False):
                off = (L.is_inference_mode_enabled(), L.is_grad_enabled(), L.ones(1, device=d).is_inference())
        found.append((inside, off, L.is_inference_mode_enabled(), t.is_inference(), i.is_inference(),
                      y.is_inference(), y.requires_grad, t.detach().is_inference(), t[1:].is_inference(),
                      t[1:]._is_view(), t[1:]._base is None, (t + 1).is_inference(),
                      wv.is_inference(), wv._is_view(), wv._base is w, w.is_inference(),
                      L.inference_mode()(lambda: L.ones(1, device=d))().is_inference()))
        with L.no_grad():
            with L.inference_mode(False):
                found[-1] += (L.is_grad_enabled(),)
    assert found[0] == found[1]


INFERENCE_USES = [  # (name, use(L, t, w, device)): t made in inference mode, w a leaf that requires grad
    ("mul_saves_it", lambda L, t, w, d: w * t),
    ("mul_saves_it_on_the_left", lambda L, t, w, d: t * w),
    ("add_saves_nothing", lambda L, t, w, d: (t + w).grad_fn.name()),
    ("matmul", lambda L, t, w, d: L.matmul(t[0], w[0])),
    ("exp_of_a_clone_is_normal", lambda L, t, w, d: (t.clone() * w).grad_fn.name()),
    ("under_no_grad", lambda L, t, w, d: L.no_grad()(lambda: (t * w).requires_grad)()),
    ("add_", lambda L, t, w, d: t.add_(1)),
    ("add_under_no_grad", lambda L, t, w, d: L.no_grad()(lambda: t.add_(1))()),
    ("mul_tensor_", lambda L, t, w, d: t.mul_(w)),
    ("copy_", lambda L, t, w, d: t.copy_(L.ones(2, 3, device=d))),
    ("zero_", lambda L, t, w, d: t.zero_()),
    ("setitem", lambda L, t, w, d: t.__setitem__(0, 2.0)),
    ("setitem_under_no_grad", lambda L, t, w, d: L.no_grad()(lambda: t.__setitem__((0, 1), 2.0))()),
    ("setitem_advanced", lambda L, t, w, d: t.__setitem__(L.tensor([1], device=d), 2.0)),
    ("setitem_recorded", lambda L, t, w, d: t.__setitem__(0, w[0])),
    ("index_put_", lambda L, t, w, d: t.index_put_((L.tensor([0], device=d),), L.ones(3, device=d))),
    ("masked_fill_", lambda L, t, w, d: t.masked_fill_(t > 0, 0.0)),
    ("view_add_", lambda L, t, w, d: t[1:].add_(1)),
    ("requires_grad_", lambda L, t, w, d: t.requires_grad_()),
    ("inside_inference_mode", lambda L, t, w, d: L.inference_mode()(lambda: (t.add_(1), t[0].fill_(3)))()),
]


@pytest.mark.parametrize("name,use", INFERENCE_USES, ids=[c[0] for c in INFERENCE_USES])
def test_inference_tensors_in_normal_mode_as_torch(device, name, use):
    found = []
    for L in (vkt, torch):
        d = "cpu" if L is torch else device
        with L.inference_mode():
            t = L.ones(2, 3, device=d)
        w = L.ones(2, 3, device=d, requires_grad=True)
        found.append(raised(lambda: use(L, t, w, d)))
    assert found[0] == found[1]


INFERENCE_VIEWS = [  # (name, write(L, b, v)): v = view(b) made in inference mode of a normal tensor b
    ("write_in_normal_mode", lambda L, b, v: v.mul_(2)),
    ("write_under_no_grad", lambda L, b, v: L.no_grad()(lambda: v.mul_(2))()),
    ("view_of_the_view_written", lambda L, b, v: v[:1].mul_(2)),
    ("base_written_then_view_read", lambda L, b, v: (b.mul_(2), v.grad_fn)),
]


@pytest.mark.parametrize("grad", [False, True], ids=["plain_base", "base_in_the_graph"])
@pytest.mark.parametrize("name,write", INFERENCE_VIEWS, ids=[c[0] for c in INFERENCE_VIEWS])
def test_a_view_made_in_inference_mode_written_in_normal_mode_as_torch(device, name, write, grad):
    found = []
    for L in (vkt, torch):
        b = L.ones(3, device="cpu" if L is torch else device, requires_grad=grad)
        b = b * 1 if grad else b
        with L.inference_mode():
            v = b[:2]
        found.append((v.is_inference(), raised(lambda: write(L, b, v))))
    assert found[0] == found[1]


def test_grad_mode_is_per_thread():
    seen = {}

    def worker():
        seen["start"] = vkt.is_grad_enabled()
        vkt.set_grad_enabled(False)
        seen["after_set"] = vkt.is_grad_enabled()

    with vkt.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not vkt.is_grad_enabled()
    assert seen == {"start": True, "after_set": False}
    assert vkt.is_grad_enabled()


def test_detect_anomaly_as_torch(device):
    """NaN from a backward raises with PyTorch's message, naming the node; the warning before it shows the forward
    line that made the node; check_nan=False lets NaN through; the flags come back after each block."""
    for L in (vkt, torch):
        w = L.zeros(2, requires_grad=True) if L is torch else L.zeros(2, device=device, requires_grad=True)
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            mode = L.autograd.detect_anomaly()
        with mode:
            assert L.is_anomaly_enabled() and L.is_anomaly_check_nan_enabled()
            q = (w / w).sum()  # the forward line the warning must show
            with pytest.warns(UserWarning, match=r"Error detected in DivBackward0. Traceback of forward call that "
                                                 r"caused the error:\n(.|\n)*q = \(w / w\).sum\(\)"):
                with pytest.raises(RuntimeError, match=r"^Function 'DivBackward0' returned nan values in its 1th "
                                                       r"output.$"):
                    q.backward()
            assert w.grad is None
        assert not L.is_anomaly_enabled() and L.is_anomaly_check_nan_enabled()
        with pytest.warns(UserWarning):
            with L.autograd.detect_anomaly(check_nan=False):
                assert not L.is_anomaly_check_nan_enabled()
                (w / w).sum().backward()  # no check: NaN reaches .grad
        assert np.isnan(values(w.grad) if L is vkt else w.grad.numpy()).all()
        L.autograd.set_detect_anomaly(True)  # a call sets it
        assert L.is_anomaly_enabled()
        with L.autograd.set_detect_anomaly(False):
            assert not L.is_anomaly_enabled()
        assert L.is_anomaly_enabled()
        L.set_anomaly_enabled(False)
        x = L.tensor([4.0, 9.0], requires_grad=True) if L is torch else L.tensor([4.0, 9.0], device=device,
                                                                                  requires_grad=True)
        with pytest.warns(UserWarning):
            with L.autograd.detect_anomaly():
                x.sqrt().sum().backward()  # a clean backward: nothing raised
        assert_close(values(x.grad) if L is vkt else x.grad.numpy(), [0.25, 1 / 6])


def test_detect_anomaly_names_the_node_whose_hook_failed(device):
    for L in (vkt, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True) if L is torch else leaf([1.0, 2.0], device)
        with pytest.warns(UserWarning):
            with L.autograd.detect_anomaly():
                y = x * 3
                y.register_hook(lambda g: 1 / 0)  # a hook of MulBackward0's output
                with pytest.warns(UserWarning, match="Error detected in MulBackward0"):
                    with pytest.raises(ZeroDivisionError):
                        y.sum().backward()
                handle = x.register_hook(lambda g: 1 / 0)  # the leaf's: its AccumulateGrad
                with pytest.warns(UserWarning, match="Error detected in (torch::autograd::)?AccumulateGrad"):
                    with pytest.raises(ZeroDivisionError):
                        (x * 3).sum().backward()
                handle.remove()
        y = x * 3  # made with anomaly mode off: no warning
        y.register_hook(lambda g: 1 / 0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ZeroDivisionError):
                y.sum().backward()


# ---- hooks, retain_grad, detach ----

def test_node_hooks_as_torch(device):
    """grad_fn.register_prehook / register_hook: what they see, what they replace, their order with the
    AccumulateGrad node's, removal, and PyTorch's errors for a result of the wrong kind or length."""
    logs = []
    for L in (vkt, torch):
        log = []

        def seen(g):  # to 5 digits: vulkan's float32 exp is not the CPU's to the last bit
            return None if g is None else [float(f"{v:.5g}") for v in (values(g) if L is vkt else g.detach().numpy())]
        x = L.tensor([1.0, 2.0], requires_grad=True) if L is torch else leaf([1.0, 2.0], device, "float32")
        y = x * 3
        pre = y.grad_fn.register_prehook(lambda go: (log.append(("pre", [seen(g) for g in go])), (go[0] * 10,))[1])
        post = y.grad_fn.register_hook(lambda gi, go: log.append(("post", [seen(g) for g in gi],
                                                                  [seen(g) for g in go])))
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append(("acc pre", [seen(g) for g in go])))
        acc.register_hook(lambda gi, go: log.append(("acc post", list(gi), [seen(g) for g in go])))
        y.exp().sum().backward()
        log.append(("grad", seen(x.grad)))
        pre.remove()
        post.remove()
        x.grad = None
        z = x * x
        z.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 1, None))  # replaces x's gradient
        z.sum().backward()
        log.append(("replaced", seen(x.grad)))
        for bad, error, match in [(lambda gi, go: (1, 2, 3), RuntimeError, "hook '<lambda>' has returned an "
                                   r"incorrect number of values \(got 3, but expected 2\)"),
                                  (lambda gi, go: 5, TypeError, "expected tuple, but hook returned 'int'")]:
            w = x * 3
            w.grad_fn.register_hook(bad)
            with pytest.raises(error, match=match):
                w.sum().backward()
        w = x * 3
        w.grad_fn.register_prehook(lambda go: 5)
        with pytest.raises(TypeError, match="expected tuple, but hook returned 'int'"):
            w.sum().backward()
        logs.append(log)
    assert logs[0] == logs[1]


def test_post_accumulate_grad_hook_as_torch(device):
    """hook(leaf) after .grad took each gradient (not under autograd.grad); an optimizer step inside it; errors."""
    results = []
    for L in (vkt, torch):
        new = (lambda *a, **k: L.ones(*a, **k)) if L is torch else (lambda *a, **k: L.ones(*a, device=device, **k))
        w = new(3, requires_grad=True)
        seen = []
        handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(values(p.grad).copy() if L is vkt else
                                                                            p.grad.numpy().copy()))
        (w * 2).sum().backward()
        (w * 3).sum().backward()
        L.autograd.grad((w * 2).sum(), w)
        handle.remove()
        (w * 4).sum().backward()
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
            (w * 2).register_post_accumulate_grad_hook(print)
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            new(2).register_post_accumulate_grad_hook(print)
        w.register_post_accumulate_grad_hook(lambda p: 5)
        with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
            (w * 2).sum().backward()
        v = new(3, requires_grad=True)

        def step(p):
            with L.no_grad():
                p.sub_(0.25 * p.grad)
            p.grad = None
        v.register_post_accumulate_grad_hook(step)
        (v * v).sum().backward()
        assert v.grad is None
        results.append((seen, values(v) if L is vkt else v.detach().numpy()))
    assert_close(np.array(results[0][0]), np.array(results[1][0]))
    assert_close(results[0][1], results[1][1])



def test_hook_sees_the_gradient(device):
    a, w = data(4, 3), data(4, 3, seed=1)
    x = leaf(a, device)
    seen = []
    x.register_hook(lambda g: seen.append(values(g)))
    (x * 2 * vkt.tensor(w, device=device)).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], 2 * w, rtol=0, atol=0)
    assert_close(x.grad, 2 * w, rtol=0, atol=0)


def test_hook_of_a_tensor_used_twice_runs_once_on_the_sum(device):
    a = data(4, 3)
    x = leaf(a, device)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(values(g)))
    x.register_hook(lambda g: seen.append(values(g)))
    (y * y + y.sin()).sum().backward()
    assert len(seen) == 2
    assert_close(seen[0], 4 * a + np.cos(2 * a), rtol=1e-12, atol=1e-15)
    assert_close(seen[1], 2 * seen[0], rtol=0, atol=0)


def test_hook_replaces_the_gradient(device):
    x = leaf(RNG_VALUES, device)
    x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    assert_close(x.grad, np.full((4, 3), 30.0), rtol=0, atol=0)


def test_hook_on_a_non_leaf_changes_what_flows_on(device):
    x = leaf(RNG_VALUES, device)
    y = x * 2
    y.register_hook(lambda g: vkt.ones_like(g) * 5)
    (y * y).sum().backward()
    assert_close(x.grad, np.full((4, 3), 10.0), rtol=0, atol=0)


def test_hooks_chain_in_registration_order(device):
    x = leaf(RNG_VALUES, device)
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: None)
    x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    assert_close(x.grad, np.full((4, 3), 8.0), rtol=0, atol=0)


def test_hook_handle_remove(device):
    x = leaf(RNG_VALUES, device)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1) or g * 100)
    handle.remove()
    x.sum().backward()
    assert calls == []
    assert_close(x.grad, np.ones((4, 3)), rtol=0, atol=0)


def test_tensor_hooks_run_on_what_grad_and_inputs_take(device):
    """autograd.grad and backward(inputs=) take a tensor's gradient after its hooks, as PyTorch's; vkt had taken it
    before them (and not run them) where the node itself did not run."""
    found = []
    for L in (vkt, torch):
        log = []
        a = L.tensor([1.0, 2.0], requires_grad=True) if L is torch else L.tensor([1.0, 2.0], device=device,
                                                                                 requires_grad=True)
        y = a * 3
        a.register_hook(lambda g: log.append(("a", g.tolist())) or g * 10)
        y.register_hook(lambda g: log.append(("y", g.tolist())) or g * 2)
        out = (y * y).sum()
        log.append(L.autograd.grad(out, (y,), retain_graph=True)[0].tolist())
        log.append(L.autograd.grad(out, (a,), retain_graph=True)[0].tolist())
        log.append([g.tolist() for g in L.autograd.grad(out, (y, a), retain_graph=True)])
        out.backward(inputs=(y,), retain_graph=True)
        log.append(y.grad.tolist())
        out.backward(inputs=(a,))
        log.append(a.grad.tolist())
        found.append(log)
    assert found[0] == found[1]


def _multi_log(L, device, scenario):
    """Runs scenario(L, new, G, log) and returns its log: new(values) makes a leaf requiring grad."""
    def new(values):
        return torch.tensor(values, requires_grad=True) if L is torch else L.tensor(values, device=device,
                                                                                    requires_grad=True)
    log = []

    def seen(gs):
        return [None if g is None else g.tolist() for g in gs]

    try:
        scenario(L, new, L.autograd.graph, log, seen)
    except Exception as e:  # noqa: BLE001: the type and words are compared
        log.append((type(e).__name__, str(e)))
    return log


def _multi_all(L, new, G, log, seen):
    a, b = new([1.0, 2.0]), new([3.0, 4.0])
    c, d = a * b, a * b
    h = G.register_multi_grad_hook((a, b, c, d), lambda gs: log.append(seen(gs)))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    L.autograd.grad(c.sum(), (c,), retain_graph=True)
    L.autograd.grad(c.sum() + d.sum(), (c, d), retain_graph=True)
    (c.sum() + d.sum()).backward(retain_graph=True)
    h.remove()
    c.sum().backward(retain_graph=True)
    log.append("removed")
    G.register_multi_grad_hook((a, c), lambda gs: log.append(seen(gs)))
    L.autograd.grad(c.sum(), (a,))


def _multi_any(L, new, G, log, seen):
    a, b = new([1.0, 2.0]), new([3.0, 4.0])
    c, d = a * b, a * b
    h = G.register_multi_grad_hook((a, b, c, d), lambda g: log.append(g.tolist()), mode="any")
    c.sum().backward(retain_graph=True)
    L.autograd.grad(c.sum(), (b,), retain_graph=True)
    (c.sum() * 2).backward(inputs=(b,), retain_graph=True)
    h.remove()
    c.sum().backward()
    log.append(type(G.register_multi_grad_hook((a, L.ones(1)), print, mode="any")).__name__)


def _multi_order_and_roots(L, new, G, log, seen):
    a, b = new([1.0, 2.0]), new([3.0, 4.0])
    c = a * b
    a.register_hook(lambda g: log.append("a hook") or g * 2)  # before the multi hook: it sees the doubled one
    G.register_multi_grad_hook([a, c], lambda gs: log.append((type(gs).__name__, seen(gs))))
    c.register_hook(lambda g: log.append("c hook"))
    c.sum().backward()
    a, b = new([1.0, 2.0]), new([3.0, 4.0])
    G.register_multi_grad_hook((a, b), lambda gs: log.append(seen(gs)))
    L.autograd.backward([(a * b).sum(), (a * 2).sum()])
    (a * 3).sum().backward()  # b not reached: not waited for
    with G.register_multi_grad_hook((a, b), lambda gs: log.append("in with")):
        pass
    (a * b).sum().backward()
    c, d = a * b, a * b
    G.register_multi_grad_hook((c, d), lambda gs: log.append([g is None for g in gs]))
    d.sum().backward()


def _multi_errors(L, new, G, log, seen):
    a = new([1.0])
    for mode in ("some", "all"):
        try:
            G.register_multi_grad_hook((a, L.ones(1)), print, mode=mode)
        except (ValueError, AssertionError) as e:
            log.append((type(e).__name__, str(e)))
    L._C._will_engine_execute_node((a * 2).grad_fn)


MULTI_HOOKS = [("all", _multi_all), ("any", _multi_any), ("order_and_roots", _multi_order_and_roots),
               ("errors", _multi_errors)]


@pytest.mark.parametrize("name,scenario", MULTI_HOOKS, ids=[c[0] for c in MULTI_HOOKS])
def test_register_multi_grad_hook_as_torch(device, name, scenario):
    assert _multi_log(vkt, device, scenario) == _multi_log(torch, device, scenario)


def test_register_hook_without_grad_raises(device):
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        vkt.ones(2, device=device).register_hook(lambda g: g)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_retain_grad(device):
    a = data(4, 3)
    x = leaf(a, device)
    y, z = x * 2, x * 3
    y.retain_grad()
    x.retain_grad()
    (y * y + z).sum().backward()
    assert_close(y.grad, 4 * a, rtol=1e-12, atol=0)
    assert z.grad is None
    assert_close(x.grad, 8 * a + 3, rtol=1e-12, atol=0)


def test_detach(device):
    a = data(4, 3)
    x = leaf(a, device)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    (x * d).sum().backward()
    assert_close(x.grad, a, rtol=0, atol=0)
    d.add_(1)
    assert_close(values(x), a + 1, rtol=0, atol=0)


def test_detach_in_place(device):
    x = leaf(RNG_VALUES, device)
    y = x * 2
    assert y.detach_() is y
    assert not y.requires_grad and y.is_leaf and y.grad_fn is None
    assert_close(values(y), 2 * RNG_VALUES, rtol=0, atol=0)


# ---- in-place operations and the version counter ----

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation"


def test_modified_saved_input_raises(device):
    x = leaf(RNG_VALUES, device)
    b = x * 2
    c = b.sin()
    b.mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        c.sum().backward()


def test_modified_saved_output_raises(device):
    x = leaf(RNG_VALUES, device)
    e = x.exp()
    e.mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        e.sum().backward()


def test_modified_saved_tensor_reports_torchs_versions(device):
    found = []
    for L in (vkt, torch):
        x = L.tensor(RNG_VALUES, device="cpu" if L is torch else device, requires_grad=True)
        e = (x * 2).exp()
        e.mul_(2)
        e[0] = 1
        found.append(re.search(r"is at version \d+; expected version \d+", raised(lambda: e.sum().backward())[1])[0])
    assert found[0] == found[1]


def test_modified_through_detach_raises(device):
    x = leaf(RNG_VALUES, device)
    s = x.sin()
    x.detach().add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        s.sum().backward()


def test_in_place_through_a_view_of_a_non_leaf_rebases_its_base(device):
    # As PyTorch (CopySlices): the write goes into the base's history; what was saved of the base before it fails
    # its backward with PyTorch's error, and a graph built after it differentiates through the write.
    x = leaf(RNG_VALUES, device)
    y = x * 2
    t = y.exp() * y
    y[0].zero_()
    assert y.grad_fn.name() == "CopySlices"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        t.sum().backward()
    (y * y).sum().backward()
    expected = 8 * RNG_VALUES
    expected[0] = 0
    assert_close(x.grad, expected)


@pytest.mark.parametrize("op", [lambda x: x.add_(1), lambda x: x.mul_(2), lambda x: x.zero_(),
                                lambda x: x.copy_(x.detach() * 2), lambda x: x[0].mul_(2),
                                lambda x: x.__setitem__(0, 1.0), lambda x: x.view(12).fill_(0)],
                         ids=["add_", "mul_", "zero_", "copy_", "view_mul_", "setitem", "view_fill_"])
def test_in_place_on_a_leaf_that_requires_grad_raises(device, op):
    x = leaf(RNG_VALUES, device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place operation."):
        op(x)


def test_in_place_on_a_non_leaf_is_differentiated(device):
    a = data(4, 3)
    x = leaf(a, device)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    y.relu_()
    assert y.grad_fn.name() == "ReluBackward0"
    (y * y).sum().backward()
    ref = np.maximum(3 * (2 * a + 1), 0)
    assert_close(x.grad, 2 * ref * 6, rtol=1e-12, atol=0)


def test_in_place_with_a_grad_operand_makes_a_tensor_require_grad(device):
    a = data(4, 3)
    x = leaf(a, device)
    buf = vkt.zeros(4, 3, dtype=vkt.float64, device=device)
    buf.add_(x)
    assert buf.requires_grad and not buf.is_leaf
    rows = vkt.zeros(2, 3, dtype=vkt.float64, device=device)
    rows[1] = x[2]
    assert rows.requires_grad
    ((buf * buf).sum() + (rows * 5).sum()).backward()
    want = 2 * a
    want[2] += 5
    assert_close(x.grad, want, rtol=1e-12, atol=0)


# ---- custom Functions ----

def exp_function():
    class MyExp(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.grad_enabled_in_forward = vkt.is_grad_enabled()
            result = x.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            result, = ctx.saved_tensors
            return grad * result

    return MyExp


def test_function_forward_and_backward(device):
    a, g = data(4, 3), data(4, 3, seed=1)
    x = leaf(a, device)
    y = exp_function().apply(x)
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "MyExpBackward"
    assert_close(values(y), np.exp(a), rtol=1e-12, atol=0)
    (y * 2).backward(vkt.tensor(g, device=device))
    assert_close(x.grad, 2 * g * np.exp(a), rtol=1e-12, atol=0)


def test_function_forward_runs_without_grad(device):
    x = leaf(RNG_VALUES, device)
    f = exp_function()
    y = f.apply(x)
    assert y.grad_fn is not None and vkt.is_grad_enabled()
    assert not f.apply(vkt.ones(2, device=device)).requires_grad
    with vkt.no_grad():
        assert not f.apply(x).requires_grad


def test_function_forward_sees_grad_disabled(device):
    seen = []

    class Probe(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(vkt.is_grad_enabled())
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    Probe.apply(leaf(RNG_VALUES, device)).sum().backward()
    assert seen == [False]


def test_function_needs_input_grad_and_non_tensor_arguments(device):
    a, b = data(4, 3), data(4, 3, seed=1)
    seen = []

    class ScaledMul(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * y * k

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            seen.append(tuple(ctx.needs_input_grad))
            gx = grad * y * ctx.k if ctx.needs_input_grad[0] else None
            gy = grad * x * ctx.k if ctx.needs_input_grad[1] else None
            return gx, gy, None

    x, y = leaf(a, device), vkt.tensor(b, device=device)
    ScaledMul.apply(x, y, 3.0).sum().backward()
    assert seen == [(True, False, False)]
    assert_close(x.grad, 3 * b, rtol=1e-12, atol=0)
    y.requires_grad_()
    ScaledMul.apply(x, y, 0.5).sum().backward()
    assert seen[1] == (True, True, False)
    assert_close(y.grad, 0.5 * a, rtol=1e-12, atol=0)


def test_function_mark_non_differentiable(device):
    class WithSign(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            sign = x.sign()
            ctx.mark_non_differentiable(sign)
            return x * 2, sign

        @staticmethod
        def backward(ctx, grad, grad_sign):
            return grad * 2

    x = leaf(RNG_VALUES, device)
    doubled, sign = WithSign.apply(x)
    assert doubled.requires_grad and not sign.requires_grad
    (doubled * sign).sum().backward()
    assert_close(x.grad, 2 * np.sign(RNG_VALUES), rtol=0, atol=0)


def test_function_with_two_outputs_one_used(device):
    """As torch (materialize_grads), backward gets zeros for an output that took no part in the loss."""
    class Two(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 3

    x = leaf(RNG_VALUES, device)
    first, _ = Two.apply(x)
    first.sum().backward()
    assert_close(x.grad, np.full((4, 3), 2.0), rtol=0, atol=0)


def test_function_returning_wrong_number_of_gradients_raises(device):
    class Bad(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = leaf(RNG_VALUES, device)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(x, x).sum().backward()


def test_function_double_backward(device):
    class Cube(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * 3 * x ** 2

    a = data(4, 3)
    x = leaf(a, device)
    g, = vkt.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    g2, = vkt.autograd.grad(g.sum(), x)
    assert_close(g2, 6 * a, rtol=1e-12, atol=0)
    assert vkt.autograd.gradgradcheck(Cube.apply, (leaf(data(2, 2), device),))


# ---- gradcheck and gradgradcheck ----

CHECKED = [
    ("sin_mul", lambda x, y: (x * y).sin(), [(2, 3), (3,)]),
    ("matmul_tanh", lambda x, y: (x @ y).tanh(), [(2, 3), (3, 2)]),
    ("softmax", lambda x: x.softmax(-1), [(2, 3)]),
    ("two_outputs", lambda x, y: (x * y, (x / (y * y + 1)).sum()), [(2, 3), (2, 3)]),
]


def needs_float64(device):
    if device == "vulkan" and not vkt.vulkan.get_device_properties().shader_float64:
        pytest.skip("this Vulkan adapter has no float64 shaders")


@pytest.mark.parametrize("name,f,shapes", CHECKED, ids=[c[0] for c in CHECKED])
def test_gradcheck_and_gradgradcheck(device, name, f, shapes):
    needs_float64(device)
    inputs = tuple(leaf(data(*s, seed=i), device) for i, s in enumerate(shapes))
    assert vkt.autograd.gradcheck(f, inputs)
    assert vkt.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)
    assert vkt.autograd.gradgradcheck(f, inputs)


def test_gradcheck_finds_a_wrong_backward(device):
    needs_float64(device)

    class Wrong(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    with pytest.raises(RuntimeError):
        vkt.autograd.gradcheck(Wrong.apply, (leaf(data(3), device),))
    assert vkt.autograd.gradcheck(exp_function().apply, (leaf(data(3), device),))


# ---- memory ----

def allocated():
    gc.collect()
    vkt.vulkan.synchronize()
    return vkt.vulkan.memory_allocated()


def mlp_loss(x, w1, b1, w2):
    return ((x @ w1 + b1).relu() @ w2).tanh().square().mean()


def mlp(dev):
    x = vkt.randn(16, 32, device=dev)
    params = [vkt.randn(32, 64, device=dev, requires_grad=True), vkt.randn(64, device=dev, requires_grad=True),
              vkt.randn(64, 8, device=dev, requires_grad=True)]
    return x, params


def test_memory_after_backward_is_parameters_and_grads(dev):
    x, params = mlp(dev)
    param_bytes = sum(p.numel() * 4 for p in params)
    before = allocated()
    loss = mlp_loss(x, *params)
    assert allocated() > before + 4  # the saved activations
    loss.backward()
    assert allocated() == before + param_bytes + 4  # the grads and the 0-d loss
    del loss
    assert allocated() == before + param_bytes


def test_memory_of_a_retained_graph_goes_with_its_output(dev):
    x, params = mlp(dev)
    before = allocated()
    loss = mlp_loss(x, *params)
    loss.backward(retain_graph=True)
    assert allocated() > before + sum(p.numel() * 4 for p in params) + 4
    del loss
    assert allocated() == before + sum(p.numel() * 4 for p in params)


def test_training_loop_keeps_memory_flat(dev):
    x, params = mlp(dev)
    for i in range(200):
        loss = mlp_loss(x, *params)
        loss.backward()
        with vkt.no_grad():
            for p in params:
                p.sub_(0.01 * p.grad)
                p.grad.zero_()
        if i == 9:
            mem = allocated()
    assert allocated() == mem


def test_autograd_grad_loop_keeps_memory_flat(dev):
    x, params = mlp(dev)
    for i in range(200):
        grads = vkt.autograd.grad(mlp_loss(x, *params), params)
        if i == 9:
            mem = allocated()
    assert allocated() == mem
    assert all(p.grad is None for p in params) and len(grads) == 3


# ---- threads ----

def differentiate(device, seed, steps=10):
    """Grads of a small graph, rebuilt each step, through backward and through autograd.grad."""
    rng = np.random.default_rng(seed)
    x = vkt.tensor(rng.standard_normal((4, 3)), device=device)
    w = vkt.tensor(rng.standard_normal((3, 2)), device=device, requires_grad=True)
    out = []
    for i in range(steps):
        loss = ((x @ w).tanh() * (i + 1)).softmax(0).square().sum()
        loss.backward()
        gw, = vkt.autograd.grad((x @ w).exp().sum() * i, w)
        out += [values(w.grad), values(gw)]
    return out


def test_threads_differentiate_separate_graphs(device):
    want = [differentiate(device, seed) for seed in (1, 2)]
    got = [None, None]
    barrier = threading.Barrier(2)

    def worker(k):
        barrier.wait()
        got[k] = differentiate(device, k + 1)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w in zip(got, want):
        assert g is not None and len(g) == len(w)
        for a, b in zip(g, w):
            assert_close(a, b, rtol=0, atol=0)


def test_threads_differentiate_graphs_sharing_a_parameter():
    """Four threads, one weight, a Python backward that lets the others run in the middle of each backward: each
    run keeps its own table of nodes (a run's indices kept in the shared AccumulateGrad node were overwritten by
    another's, and about 1 gradient in 80 came out wrong)."""
    import time
    w = vkt.tensor(data(16, 16, seed=5), requires_grad=True)

    class Yielding(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            time.sleep(0.0002)  # releases the GIL
            return g * 2

    def grad_of_w(x):
        for _ in range(8):
            x = Yielding.apply((x @ w).tanh())
        return vkt.autograd.grad(x.sum(), w)[0].numpy()

    x0 = vkt.tensor(data(4, 16, seed=6))
    want = grad_of_w(x0)
    bad = []

    def worker():
        for _ in range(25):
            if not np.array_equal(grad_of_w(x0), want):
                bad.append(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


LAYOUT_CASES = {  # leaves as (shape, transposed), and the op
    "linear": ([((5, 3), False), ((4, 3), False), ((4,), False)], lambda m, x, w, b: m.nn.functional.linear(x, w, b)),
    "linear_3d": ([((2, 5, 3), False), ((4, 3), False)], lambda m, x, w: m.nn.functional.linear(x, w)),
    "lhs_transposed": ([((3, 5), True), ((3, 4), False)], lambda m, a, b: a @ b),
    "rhs_transposed": ([((5, 3), False), ((4, 3), True)], lambda m, a, b: a @ b),
    "batched_transposed": ([((2, 3, 5), True), ((2, 4, 3), True)], lambda m, a, b: a @ b),
}


@pytest.mark.parametrize("case", LAYOUT_CASES)
def test_product_gradients_take_their_leafs_layout(device, case):
    # A product's operand stored column by column (linear's weight, read as w.T) gets its gradient made in
    # that layout, as PyTorch's mm backward does, so .grad has the leaf's strides and needs no copy.
    leaves, fn = LAYOUT_CASES[case]
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s, _ in leaves]

    def grads(m, **kw):
        ts = [m.tensor(a, **kw) for a in arrays]
        ts = [(t.transpose(-1, -2) if tr else t).detach().requires_grad_() for t, (_, tr) in zip(ts, leaves)]
        fn(m, *ts).square().sum().backward()
        return ts
    got, want = grads(vkt, device=device), grads(torch)
    for g, w in zip(got, want):
        assert g.grad.stride() == w.grad.stride() == g.stride()
        assert_close(to_numpy(g.grad), w.grad.numpy(), rtol=1e-5, atol=1e-5)


# ---- autograd.Function: PyTorch's newer and rarer features, against torch.autograd.Function

def _function_cases(L, device):
    """{feature: x.grad after the same steps} in library L."""
    def leaf_of(v):
        return torch_module.tensor(v, requires_grad=True) if L is not vkt else vkt.tensor(v, device=device,
                                                                                           requires_grad=True)
    out = {}

    class Scale(L.autograd.Function):  # forward without ctx, setup_context apart
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = leaf_of([1.0, 2.0, 3.0])
    Scale.apply(x, 5.0).sum().backward()
    out["setup_context"] = x.grad.tolist()

    class Double_(L.autograd.Function):  # writes its input in place
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf_of([1.0, 2.0, 3.0])
    y = x * 1
    assert Double_.apply(y) is y
    (y * y).sum().backward()
    out["mark_dirty"] = x.grad.tolist()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        Double_.apply(leaf_of([1.0]))

    class Pair(L.autograd.Function):  # no zeros made for the unused output's gradient
        @staticmethod
        def forward(ctx, a, b):
            ctx.set_materialize_grads(False)
            return a * 1, b * 1

        @staticmethod
        def backward(ctx, ga, gb):
            out["gradients received"] = (ga is None, gb is None)
            return ga, gb * 3

    a, b = leaf_of([1.0, 2.0]), leaf_of([3.0, 4.0])
    Pair.apply(a, b)[1].sum().backward()
    out["set_materialize_grads"] = (a.grad is None, b.grad.tolist())

    class Cube(L.autograd.Function):
        forward = staticmethod(lambda ctx, x: (ctx.save_for_backward(x), x ** 3)[1])
        backward = staticmethod(L.autograd.function.once_differentiable(
            lambda ctx, g: g * 3 * ctx.saved_tensors[0] * ctx.saved_tensors[0]))

    x = leaf_of([1.0, 2.0])
    Cube.apply(x).sum().backward()
    out["once_differentiable"] = x.grad.tolist()
    x = leaf_of([1.0, 2.0])
    (g,) = L.autograd.grad((Cube.apply(x) * x).sum(), x, create_graph=True)  # Cube's incoming gradient needs grad
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()
    return out


torch_module = None


def test_function_features_match_torch(device):
    global torch_module
    torch_module = pytest.importorskip("torch")
    assert _function_cases(vkt, device) == _function_cases(torch_module, device)
