# vkt.nn's layers against torch.nn's on both devices: the same weights (a torch state_dict loaded into the
# vkt module), then forward values and the gradients of inputs and parameters; reprs, init shapes, the
# functional pieces that have no layer (one_hot, normalize), dropout's statistics, and no CPU fallback for
# float32 on vulkan.
import numpy as np
import pytest
import torch

import vkt
from vkt import nn
from vkt.nn import functional as F

from conftest import assert_close

RNG = np.random.default_rng(1234)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(high, *shape):
    return RNG.integers(0, high, shape).astype(np.int64)


def load_from_torch(vm, tm, device):
    """Perturbs tm's parameters (so ones/zeros inits are not trivially matched) and loads them into vm."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in tm.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.5)
    vm.load_state_dict({k: vkt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return vm.to(device)


def check_fallbacks(device, dtype=np.float32):
    if device == "vulkan" and dtype == np.float32:
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()


def run_both(make, arrays, device, train=False, rtol=1e-4, atol=1e-5):
    """make(nn) builds the layer in either library; arrays are its inputs (float ones get gradients)."""
    tm, vm = make(torch.nn), make(nn)
    vm = load_from_torch(vm, tm, device)
    tm.train(train)
    vm.train(train)
    tx = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    vx = [vkt.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in arrays]
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    ty, vy = tm(*tx), vm(*vx)
    seed = RNG.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(seed))
    vy.backward(vkt.tensor(seed, device=device))
    check_fallbacks(device)
    assert vy.device.type == device
    assert_close(vy.detach(), ty.detach().numpy(), rtol, atol)
    for v, t in zip(vx, tx):
        if t.requires_grad:
            assert_close(v.grad, t.grad.numpy(), rtol, atol)
    tgrads = dict(tm.named_parameters())
    for name, p in vm.named_parameters():
        ref = tgrads[name].grad
        assert (p.grad is None) == (ref is None), name
        if ref is not None:
            assert_close(p.grad, ref.numpy(), rtol, atol)


LAYERS = [
    ("identity", lambda m: m.Identity(3, k=1), [randn(4, 3)]),
    ("linear", lambda m: m.Linear(5, 3), [randn(4, 5)]),
    ("linear-3d", lambda m: m.Linear(5, 3), [randn(2, 4, 5)]),
    ("linear-1d", lambda m: m.Linear(5, 3), [randn(5)]),
    ("linear-nobias", lambda m: m.Linear(5, 3, bias=False), [randn(4, 5)]),
    ("bilinear", lambda m: m.Bilinear(3, 4, 2), [randn(5, 3), randn(5, 4)]),
    ("bilinear-3d-nobias", lambda m: m.Bilinear(3, 4, 2, bias=False), [randn(2, 5, 3), randn(2, 5, 4)]),
    ("embedding", lambda m: m.Embedding(10, 4), [ints(10, 3, 5)]),
    ("embedding-pad", lambda m: m.Embedding(10, 4, padding_idx=2), [np.array([[2, 1, 2], [0, 9, 2]])]),
    ("embedding-negpad", lambda m: m.Embedding(10, 4, padding_idx=-1), [np.array([9, 1, 9, 3])]),
    ("embedding-freq", lambda m: m.Embedding(6, 3, scale_grad_by_freq=True), [np.array([[1, 1, 4], [1, 0, 4]])]),
    ("embedding-freq-pad", lambda m: m.Embedding(6, 3, padding_idx=1, scale_grad_by_freq=True),
     [np.array([1, 1, 4, 5, 5, 5])]),
    ("embedding-maxnorm", lambda m: m.Embedding(6, 3, max_norm=1.0), [np.array([[1, 2], [2, 5]])]),
    ("layernorm", lambda m: m.LayerNorm(6), [randn(4, 6)]),
    ("layernorm-2d", lambda m: m.LayerNorm([3, 4]), [randn(2, 3, 4)]),
    ("layernorm-noaffine", lambda m: m.LayerNorm(6, elementwise_affine=False), [randn(4, 6)]),
    ("layernorm-nobias", lambda m: m.LayerNorm(6, bias=False, eps=1e-3), [randn(2, 2, 6)]),
    ("rmsnorm", lambda m: m.RMSNorm(6), [randn(4, 6)]),
    ("rmsnorm-2d-eps", lambda m: m.RMSNorm([3, 4], eps=1e-5), [randn(2, 3, 4)]),
    ("rmsnorm-noaffine", lambda m: m.RMSNorm(6, elementwise_affine=False), [randn(4, 6)]),
    ("flatten", lambda m: m.Flatten(), [randn(2, 3, 4)]),
    ("flatten-0-1", lambda m: m.Flatten(0, 1), [randn(2, 3, 4)]),
    ("unflatten", lambda m: m.Unflatten(1, (2, 3)), [randn(4, 6)]),
    ("dropout-eval", lambda m: m.Dropout(0.3), [randn(4, 6)]),
    ("prelu", lambda m: m.PReLU(), [randn(3, 7)]),
    ("prelu-channels", lambda m: m.PReLU(4), [randn(2, 4, 3)]),
    ("softmax", lambda m: m.Softmax(dim=1), [randn(3, 7)]),
    ("softmin", lambda m: m.Softmin(dim=0), [randn(3, 7)]),
    ("logsoftmax", lambda m: m.LogSoftmax(dim=-1), [randn(2, 3, 7)]),
    ("glu", lambda m: m.GLU(), [randn(3, 8)]),
    ("glu-dim0", lambda m: m.GLU(0), [randn(4, 3)]),
    ("mlp", lambda m: m.Sequential(m.Linear(6, 8), m.ReLU(), m.LayerNorm(8), m.Linear(8, 3), m.LogSoftmax(1)),
     [randn(5, 6)]),
]
ACTIVATIONS = [
    ("ReLU", ()), ("ReLU6", ()), ("Hardtanh", (-0.5, 0.7)), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()),
    ("Tanh", ()), ("Sigmoid", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("CELU", (1.3,)), ("SELU", ()),
    ("Softplus", (2.0, 5.0)), ("Mish", ()), ("Hardswish", ()), ("Hardsigmoid", ()), ("Softsign", ()),
    ("Tanhshrink", ()), ("Hardshrink", ()), ("Hardshrink", (1.2,)), ("Softshrink", ()), ("Softshrink", (0.8,)),
    ("Threshold", (0.1, -2.0)), ("LogSigmoid", ()), ("RReLU", ()), ("RReLU", (0.1, 0.6)),
]
LAYERS += [(f"act-{name}{args}", lambda m, name=name, args=args: getattr(m, name)(*args), [randn(3, 7) * 3])
           for name, args in ACTIVATIONS]


@pytest.mark.parametrize("name,make,arrays", LAYERS, ids=[case[0] for case in LAYERS])
def test_layer_matches_torch(name, make, arrays, device):
    run_both(make, arrays, device)


@pytest.mark.parametrize("name,make,arrays", LAYERS, ids=[case[0] for case in LAYERS])
def test_repr_and_parameters_match_torch(name, make, arrays):
    tm, vm = make(torch.nn), make(nn)
    assert repr(vm) == repr(tm)
    assert [(n, tuple(p.shape), p.requires_grad) for n, p in vm.named_parameters()] == \
        [(n, tuple(p.shape), p.requires_grad) for n, p in tm.named_parameters()]
    assert list(vm.state_dict()) == list(tm.state_dict())


@pytest.mark.parametrize("name,args", [("ReLU", ()), ("ReLU6", ()), ("Hardtanh", ()), ("SiLU", ()), ("ELU", ()),
                                       ("LeakyReLU", (0.1,)), ("Mish", ()), ("Threshold", (0.0, 1.0)),
                                       ("RReLU", (0.2, 0.4))])
def test_inplace_activations(name, args, device):
    x = randn(3, 5)
    vm, tm = getattr(nn, name)(*args, inplace=True), getattr(torch.nn, name)(*args, inplace=True)
    vm.eval(), tm.eval()  # RReLU's slope is random in training
    assert repr(vm) == repr(tm)
    v = vkt.tensor(x, device=device)
    out = vm(v)
    assert_close(v, tm(torch.tensor(x)).numpy(), 1e-5, 1e-6)
    assert_close(out, v.numpy() if device == "cpu" else v.cpu().numpy())


@pytest.mark.parametrize("name,args", [("relu_", ()), ("hardtanh_", (-0.5, 0.5)), ("elu_", (0.7,)),
                                       ("leaky_relu_", (0.2,)), ("selu_", ()), ("celu_", (1.5,)),
                                       ("threshold_", (0.1, -2.0)), ("rrelu_", (0.1, 0.3))])
def test_inplace_functional_activations(name, args, device):
    x = randn(3, 5)
    v = vkt.tensor(x, device=device)
    out = getattr(vkt.nn.functional, name)(v, *args)
    assert out is v
    assert_close(v, getattr(torch.nn.functional, name)(torch.tensor(x), *args).numpy(), 1e-5, 1e-6)


def test_inits_match_torch_distributions():
    vkt.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / np.sqrt(400)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.02 * bound
    emb = nn.Embedding(300, 200, padding_idx=3).weight.detach().numpy()
    assert np.all(emb[3] == 0) and abs(emb.std() - 1) < 0.02 and abs(emb.mean()) < 0.02
    bil = nn.Bilinear(50, 20, 30).weight.detach().numpy()
    assert np.abs(bil).max() <= 1 / np.sqrt(50)
    assert np.all(nn.PReLU(3).weight.numpy() == 0.25)
    ln = nn.LayerNorm(5)
    assert np.all(ln.weight.numpy() == 1) and np.all(ln.bias.numpy() == 0)


def test_layers_take_device_and_dtype(device):
    lin = nn.Linear(3, 2, device=device, dtype=vkt.float64)
    assert lin.weight.device.type == device and lin.bias.dtype == vkt.float64
    emb = nn.Embedding(4, 2, device=device)
    assert emb.weight.device.type == device
    ln = nn.LayerNorm(3, device=device, dtype=vkt.float16)
    assert ln.weight.dtype == vkt.float16


def test_embedding_from_pretrained_and_errors(device):
    table = vkt.tensor(randn(5, 3), device=device)
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb.num_embeddings == 5
    out = emb(vkt.tensor([4, 0], device=device))
    assert_close(out, table.cpu().numpy()[[4, 0]])
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(vkt.tensor([0]), vkt.zeros(3, 2), padding_idx=-4)


@pytest.mark.parametrize("call,exc", [
    (lambda F, lib: F.layer_norm(lib.zeros(2, 3), [4]), RuntimeError),
    (lambda F, lib: F.layer_norm(lib.zeros(2, 3), [3], weight=lib.zeros(2)), RuntimeError),
    (lambda F, lib: F.rms_norm(lib.zeros(2, 3), [2, 4]), RuntimeError),
    (lambda F, lib: F.rms_norm(lib.zeros(2, 3), [2, 3, 4]), ValueError),
    (lambda F, lib: F.layer_norm(lib.zeros(2, 3), [2, 3, 4]), RuntimeError),
    (lambda F, lib: F.dropout(lib.zeros(2), p=1.5), ValueError),
    (lambda F, lib: F.one_hot(lib.tensor([1, 2], dtype=lib.int32)), RuntimeError),
    (lambda F, lib: F.one_hot(lib.tensor([1, 5]), 3), RuntimeError),
    (lambda F, lib: F.one_hot(lib.tensor([-1, 1])), RuntimeError),
    (lambda F, lib: F.prelu(lib.zeros(2, 3), lib.zeros(2)), RuntimeError),
    (lambda F, lib: F.rrelu(lib.zeros(2), 0.5, 0.1), RuntimeError),
    (lambda F, lib: F.rrelu(lib.zeros(2), 0.5, 0.1, training=True), RuntimeError),
    (lambda F, lib: F.rrelu_(lib.zeros(2), 0.5, 0.1), RuntimeError),
    (lambda F, lib: F.rrelu(lib.zeros(2, dtype=lib.int64)), NotImplementedError),
    (lambda F, lib: F.rrelu(lib.zeros(2, dtype=lib.int32), training=True), NotImplementedError),
    (lambda F, lib: F.rrelu(lib.zeros(2, dtype=lib.bool), training=True), NotImplementedError),
    (lambda F, lib: F.rrelu([1.0, -1.0]), TypeError),
    (lambda F, lib: F.rrelu(lib.zeros(2, requires_grad=True), inplace=True), RuntimeError),
    (lambda F, lib: lib.nn.RReLU(inplace=True)(lib.zeros(2, requires_grad=True)), RuntimeError),
])
def test_functional_errors_match_torch(call, exc):
    with pytest.raises(exc) as ref:
        call(torch.nn.functional, torch)
    with pytest.raises(exc) as got:
        call(F, vkt)
    assert str(got.value) == str(ref.value).replace("torch.Size(", "vkt.Size(")


@pytest.mark.parametrize("values,num_classes", [([3, 0, 1], -1), ([[1, 2], [0, 0]], 4), ([], 3), (5, 7)])
def test_one_hot(values, num_classes, device):
    ref = torch.nn.functional.one_hot(torch.tensor(values, dtype=torch.int64), num_classes)
    got = F.one_hot(vkt.tensor(np.array(values, dtype=np.int64), device=device), num_classes)
    assert got.dtype == vkt.int64 and got.device.type == device
    np.testing.assert_array_equal(got.cpu().numpy(), ref.numpy())


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize(p, dim, device):
    x = randn(4, 5)
    x[1] = 0  # the eps floor
    tx = torch.tensor(x, requires_grad=True)
    vx = vkt.tensor(x, device=device, requires_grad=True)
    ty, vy = torch.nn.functional.normalize(tx, p, dim), F.normalize(vx, p, dim)
    assert_close(vy.detach(), ty.detach().numpy(), 1e-5, 1e-6)
    ty.sum().backward()
    vy.sum().backward()
    assert_close(vx.grad, tx.grad.numpy(), 1e-4, 1e-5)


def test_softmax_implicit_dim_warns_like_torch():
    x = randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        got = F.softmax(vkt.tensor(x))
    with pytest.warns(UserWarning):
        ref = torch.nn.functional.softmax(torch.tensor(x))
    assert_close(got, ref.numpy())
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        got = nn.LogSoftmax()(vkt.tensor(randn(3)))
    assert got.shape == (3,)


@pytest.mark.parametrize("fn,shape", [(F.dropout, (200, 300)), (F.dropout1d, (40, 50, 30)),
                                      (F.dropout2d, (40, 50, 3, 2)), (F.dropout3d, (40, 50, 2, 2, 2))])
def test_dropout_statistics_and_seed(fn, shape, device):
    x = vkt.ones(*shape, device=device, requires_grad=True)
    vkt.manual_seed(3)
    vkt.vulkan.reset_fallback_stats()
    y = fn(x, 0.25)
    check_fallbacks(device)
    vals = y.detach().cpu().numpy()
    assert set(np.unique(vals)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((vals == 0).mean() - 0.25) < 0.03
    if fn is not F.dropout:  # whole channels drop together
        per_channel = vals.reshape(shape[0], shape[1], -1)
        assert np.all(per_channel.min(-1) == per_channel.max(-1))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), vals)
    vkt.manual_seed(3)
    np.testing.assert_array_equal(fn(x, 0.25).detach().cpu().numpy(), vals)
    assert fn(x, 0.25, training=False) is x
    assert np.all(fn(x, 1.0).detach().cpu().numpy() == 0)


@pytest.mark.parametrize("lower,upper", [(1 / 8, 1 / 3), (0.3, 0.3), (-0.5, 2.0)])
def test_rrelu_training_draws_a_slope_per_element_and_its_gradient_takes_it(lower, upper, device):
    a = np.linspace(-4, 4, 4001).astype(np.float32)
    x = vkt.tensor(a, device=device, requires_grad=True)
    vkt.manual_seed(5)
    vkt.vulkan.reset_fallback_stats()
    y = F.rrelu(x, lower, upper, training=True)
    check_fallbacks(device)
    y.backward(vkt.ones_like(y))
    vals, grad = y.detach().cpu().numpy(), x.grad.cpu().numpy()
    neg, pos = a < 0, a > 0
    slopes = vals[neg] / a[neg]
    eps = 1e-6 * max(1.0, abs(lower), abs(upper))
    assert slopes.min() >= lower - eps and slopes.max() <= upper + eps
    if upper > lower:  # drawn, not one slope: spread over [lower, upper]
        assert len(np.unique(np.round(slopes, 5))) > 1000
        assert abs(slopes.mean() - (lower + upper) / 2) < 0.05 * (upper - lower)
    np.testing.assert_allclose(grad[neg], slopes, rtol=1e-5, atol=1e-6)  # the same slopes
    assert lower - eps <= grad[a == 0][0] <= upper + eps  # at 0 too, as PyTorch (x <= 0 takes a slope)
    np.testing.assert_array_equal(vals[pos], a[pos])
    np.testing.assert_array_equal(grad[pos], 1)
    vkt.manual_seed(5)
    np.testing.assert_array_equal(F.rrelu(x, lower, upper, training=True).detach().cpu().numpy(), vals)
    x.grad = None
    y = x * 1
    F.rrelu_(y, lower, upper, training=True)  # in place, through the autograd graph
    y.backward(vkt.ones_like(y))
    got = y.detach().cpu().numpy()
    np.testing.assert_allclose(x.grad.cpu().numpy()[neg], got[neg] / a[neg], rtol=1e-5, atol=1e-6)


def test_rrelu_nodes_module_and_evaluation_as_torch(device):
    a = np.linspace(-3, 3, 13)
    names = []
    for L, d in ((vkt, device), (torch, "cpu")):
        Fn = F if L is vkt else torch.nn.functional
        x = L.tensor(a, requires_grad=True) if L is torch else L.tensor(a, device=d, requires_grad=True)
        row = []
        for training in (False, True):
            for y in (Fn.rrelu(x, training=training), Fn.rrelu(x * 1, training=training, inplace=True),
                      Fn.rrelu_(x * 1, 0.1, 0.2, training)):
                row.append((y.grad_fn.name(), len(y.grad_fn.next_functions)))
        m = L.nn.RReLU(0.1, 0.5)
        row.append((repr(m), m.training, m(x).grad_fn.name()))
        m.eval()
        y = m(x)
        y.backward(L.ones_like(y))
        row.append(np.round(y.detach().cpu().numpy() if L is vkt else y.detach().numpy(), 12).tolist())
        row.append((x.grad.cpu().numpy() if L is vkt else x.grad.numpy()).tolist())
        names.append(row)
    assert names[0] == names[1]


def test_dropout_module_train_eval_and_inplace(device):
    d = nn.Dropout(0.5)
    x = vkt.ones(100, 100, device=device)
    assert not np.all(d(x).cpu().numpy() == 1)
    d.eval()
    assert d(x) is x
    d = nn.Dropout(0.5, inplace=True)
    y = vkt.ones(10, 10, device=device)
    assert d(y) is y and np.any(y.cpu().numpy() == 0)
    assert repr(d) == repr(torch.nn.Dropout(0.5, inplace=True))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        nn.Dropout(-0.1)


def test_unflatten_errors_match_torch():
    for args in [(1, 6), (1, (2, "3"))]:
        with pytest.raises(TypeError) as ref:
            torch.nn.Unflatten(*args)
        with pytest.raises(TypeError) as got:
            nn.Unflatten(*args)
        assert str(got.value) == str(ref.value)


def test_training_step_matches_torch(device):
    """An MLP, cross_entropy and a hand-written SGD step: the updated weights match torch's."""
    def make(m):
        return m.Sequential(m.Linear(4, 8), m.GELU(), m.Dropout(0.0), m.Linear(8, 3))
    tm, vm = make(torch.nn), make(nn)
    vm = load_from_torch(vm, tm, device)
    x, y = randn(6, 4), ints(3, 6)
    for _ in range(2):
        torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y)).backward()
        F.cross_entropy(vm(vkt.tensor(x, device=device)), vkt.tensor(y, device=device)).backward()
        with torch.no_grad():
            for p in tm.parameters():
                p.sub_(0.1 * p.grad)
        with vkt.no_grad():
            for p in vm.parameters():
                p.sub_(0.1 * p.grad)
        tm.zero_grad()
        vm.zero_grad()
    for (name, v), t in zip(vm.state_dict().items(), tm.state_dict().values()):
        assert_close(v, t.numpy(), 1e-4, 1e-5)
