# Sampling: the in-place fills (Tensor.uniform_, normal_, log_normal_, exponential_, cauchy_, geometric_, random_,
# bernoulli_) and vkt.bernoulli, normal, multinomial, poisson, randint_like. Values are checked by their
# distribution over many draws (moments against the distribution's, at a few standard errors), and everything
# else (dtypes, shapes, errors, grad_fn names, zero gradients, reproducibility) against torch 2.13.
import math

import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")

N = 200_000  # draws for a moment check: its standard error is sd / sqrt(N), 0.0022 sd


def values(t):
    return np.asarray(t.cpu().numpy(), dtype=np.float64)


def assert_moments(x, mean, var, k=6.0):
    """x's sample mean and variance within k standard errors of the distribution's (the variance's standard
    error taken as var * sqrt(2 / N), the normal case, with room for heavier tails)."""
    n = x.size
    assert abs(x.mean() - mean) <= k * math.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var() - var) <= 3 * k * var * math.sqrt(2 / n), (x.var(), var)


# (method, args, support check, mean, variance)
FILLS = [
    ("uniform_", (), lambda x: (x >= 0).all() and (x < 1).all(), 0.5, 1 / 12),
    ("uniform_", (-2.0, 3.0), lambda x: (x >= -2).all() and (x < 3).all(), 0.5, 25 / 12),
    ("normal_", (), None, 0.0, 1.0),
    ("normal_", (1.5, 0.5), None, 1.5, 0.25),
    ("log_normal_", (0.0, 0.25), lambda x: (x > 0).all(), math.exp(0.25**2 / 2),
     (math.exp(0.25**2) - 1) * math.exp(0.25**2)),
    ("exponential_", (), lambda x: (x >= 0).all() and np.isfinite(x).all(), 1.0, 1.0),
    ("exponential_", (4.0,), lambda x: (x >= 0).all(), 0.25, 1 / 16),
    ("geometric_", (0.3,), lambda x: (x >= 1).all() and (x == np.round(x)).all(), 1 / 0.3, 0.7 / 0.09),
    ("random_", (0, 10), lambda x: (x >= 0).all() and (x <= 9).all() and (x == np.round(x)).all(), 4.5, 99 / 12),
    ("random_", (7,), lambda x: (x >= 0).all() and (x <= 6).all(), 3.0, 4.0),
    ("bernoulli_", (), lambda x: np.isin(x, [0, 1]).all(), 0.5, 0.25),
    ("bernoulli_", (0.2,), lambda x: np.isin(x, [0, 1]).all(), 0.2, 0.16),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method,args,support,mean,var", FILLS, ids=[f"{f[0]}{f[1]}" for f in FILLS])
def test_fill_distribution(device, dtype, method, args, support, mean, var):
    t = vkt.zeros(N, dtype=getattr(vkt, dtype), device=device)
    assert getattr(t, method)(*args) is t
    assert t.dtype == getattr(vkt, dtype) and t.shape == (N,)
    x = values(t)
    assert support is None or support(x)
    assert_moments(x, mean, var)


def test_cauchy_quartiles(device):
    """Cauchy has no moments: its median and quartiles are median -+ sigma."""
    x = values(vkt.zeros(N, device=device).cauchy_(2.0, 0.5))
    q = np.quantile(x, [0.25, 0.5, 0.75])
    np.testing.assert_allclose(q, [1.5, 2.0, 2.5], atol=0.02)


def test_fill_shapes_and_views(device):
    """A fill of a view writes through it, leaving the rest of the base; 0-d and empty tensors take fills."""
    base = vkt.zeros(4, 6, device=device)
    base[:, 1:3].uniform_(5, 6)
    x = values(base)
    assert (x[:, 1:3] >= 5).all() and (x[:, [0, 3, 4, 5]] == 0).all()
    assert 1 <= float(vkt.zeros((), device=device).geometric_(0.5))
    assert vkt.zeros(0, device=device).normal_().numel() == 0
    t = vkt.zeros(3, 5, device=device).t()  # non-contiguous
    assert (values(t.exponential_()) >= 0).all()


def test_float16(device):
    t = vkt.zeros(N, dtype=vkt.float16, device=device)
    assert_moments(values(t.normal_(1.0, 2.0)), 1.0, 4.0)
    assert_moments(values(t.uniform_()), 0.5, 1 / 12)
    assert t.dtype == vkt.float16


@pytest.mark.parametrize("dtype,args,lo,hi", [
    ("int32", (), 0, 2**31 - 1), ("int64", (-5, 5), -5, 4), ("uint8", (), 0, 255), ("bool", (), 0, 1),
    ("float32", (), 0, 2**24), ("int32", (100,), 0, 99), ("uint8", (3, 256), 3, 255)])
def test_random_integers(device, dtype, args, lo, hi):
    x = values(vkt.zeros(20_000, dtype=getattr(vkt, dtype), device=device).random_(*args))
    assert x.min() >= lo and x.max() <= hi
    assert x.max() - x.min() > (hi - lo) * 0.9  # spread over the range


def test_random_int64_top(device):
    """random_'s int64 bounds reach 2^63 (exclusive), past randint's int64 arguments."""
    x = vkt.zeros(2000, dtype=vkt.int64, device=device).random_(2**63 - 2, 2**63).tolist()
    assert set(x) == {2**63 - 2, 2**63 - 1}
    assert min(vkt.zeros(2000, dtype=vkt.int64, device=device).random_().tolist()) >= 0


def test_integer_dtypes_of_discrete_fills(device):
    assert set(values(vkt.zeros(1000, dtype=vkt.int64, device=device).bernoulli_(0.5))) == {0, 1}
    assert values(vkt.zeros(1000, dtype=vkt.bool, device=device).bernoulli_(0.5)).any()
    assert (values(vkt.zeros(1000, dtype=vkt.int32, device=device).geometric_(0.5)) >= 1).all()


def test_bernoulli_tensor_p(device):
    p = vkt.tensor([0.0, 1.0, 0.25], device=device)
    x = values(vkt.zeros(N, 3, device=device).bernoulli_(p))
    assert (x[:, 0] == 0).all() and (x[:, 1] == 1).all()
    assert abs(x[:, 2].mean() - 0.25) < 6 * math.sqrt(0.25 * 0.75 / N)
    y = vkt.bernoulli(vkt.full((N,), 0.7, dtype=vkt.float64, device=device))
    assert y.dtype == vkt.float64 and abs(values(y).mean() - 0.7) < 6 * math.sqrt(0.21 / N)
    z = vkt.bernoulli(vkt.zeros(N, device=device), 0.3)
    assert abs(values(z).mean() - 0.3) < 6 * math.sqrt(0.21 / N)
    assert values(vkt.zeros(5, device=device).bernoulli()).sum() == 0  # Tensor.bernoulli: p = self


def test_normal_overloads(device):
    m = vkt.tensor([0.0, 10.0, -10.0], device=device)
    s = vkt.tensor([1.0, 0.0, 2.0], device=device)
    x = values(vkt.normal(m.expand(N, 3).contiguous(), s))
    assert x.shape == (N, 3) and (x[:, 1] == 10).all()
    assert_moments(x[:, 2], -10.0, 4.0)
    assert vkt.normal(m, 1.0).shape == (3,) and vkt.normal(0.0, s).shape == (3,)
    y = vkt.normal(2.0, 3.0, size=(N,), device=device, dtype=vkt.float64)
    assert y.dtype == vkt.float64 and y.device.type == device
    assert_moments(values(y), 2.0, 9.0)
    assert vkt.normal(m.unsqueeze(1), s).shape == (3, 3)  # broadcast


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_frequencies(device, replacement):
    w = vkt.tensor([[1.0, 0.0, 3.0, 4.0], [0.0, 0.0, 0.0, 2.0]], device=device)
    if replacement:
        picks = vkt.multinomial(w, 50_000, replacement=True)
        assert picks.dtype == vkt.int64 and picks.shape == (2, 50_000)
        x = picks.cpu().numpy()
        freq = np.bincount(x[0], minlength=4) / x.shape[1]
        np.testing.assert_allclose(freq, [1 / 8, 0, 3 / 8, 4 / 8], atol=0.01)
        assert (x[1] == 3).all()
    else:
        # the first of 2 draws without replacement has the weights' probabilities; the second is the other
        draws = np.stack([vkt.multinomial(w[0], 2).cpu().numpy() for _ in range(400)])
        assert (draws[:, 0] != draws[:, 1]).all() and (draws != 1).all()
        freq = np.bincount(draws[:, 0], minlength=4) / len(draws)
        np.testing.assert_allclose(freq, [1 / 8, 0, 3 / 8, 4 / 8], atol=0.1)
        every = vkt.multinomial(vkt.rand(5, 30, device=device) + 0.01, 30).cpu().numpy()
        assert all(sorted(row) == list(range(30)) for row in every)


def test_multinomial_zero_weights_last():
    """Without replacement, categories of weight 0 come only once the others are drawn, as in torch."""
    assert vkt.multinomial(vkt.tensor([0.0, 1.0]), 2).tolist() == [1, 0]


def test_poisson_and_randint_like(device):
    rates = vkt.tensor([0.0, 1.0, 4.0, 100.0], device=device)
    x = values(vkt.poisson(rates.expand(N // 4, 4).contiguous()))
    assert (x[:, 0] == 0).all() and (x == np.round(x)).all()
    for j, r in enumerate([1.0, 4.0, 100.0], 1):
        assert_moments(x[:, j], r, r)
    t = vkt.randint_like(vkt.zeros(1000, dtype=vkt.int32, device=device), 3, 8)
    assert t.dtype == vkt.int32 and t.device.type == device
    assert set(values(t)) == {3, 4, 5, 6, 7}
    assert vkt.randint_like(vkt.zeros(4, device=device), 5).dtype == vkt.float32


def test_like_draws_from_a_generator(device):
    """rand_like and randn_like take generator= as torch 2.13's do: the draws repeat with its seed, in the input's
    layout (a transpose keeps its strides) and the dtype asked for."""
    x = vkt.zeros(3, 4, device=device).T
    g = vkt.Generator(device=device).manual_seed(7)
    for fn in (vkt.rand_like, vkt.randn_like):
        g.manual_seed(7)
        a = fn(x, generator=g)
        g.manual_seed(7)
        b = fn(x, dtype=vkt.float64, generator=g, requires_grad=True)
        assert a.stride() == b.stride() == (1, 4) and b.dtype == vkt.float64 and b.requires_grad
        np.testing.assert_allclose(values(a), values(b.detach()), rtol=1e-6)
    assert 0 <= values(vkt.rand_like(x, generator=g)).min() and values(vkt.rand_like(x, generator=g)).max() < 1


def test_reproducible(device):
    """vkt.manual_seed makes the fills repeat; so does a Generator's seed, and a Generator leaves vkt's own
    stream where it was."""
    def draw(**kw):
        t = vkt.zeros(64, device=device)
        return [values(t.uniform_(**kw)), values(t.normal_(**kw)), values(t.exponential_(**kw)),
                values(t.bernoulli_(0.5, **kw)), values(t.random_(0, 100, **kw)),
                vkt.multinomial(vkt.ones(10, device=device), 5, **kw).tolist(),
                values(vkt.poisson(vkt.ones(8, device=device), **kw))]
    vkt.manual_seed(3)
    a = draw()
    vkt.manual_seed(3)
    b = draw()
    g1, g2 = vkt.Generator().manual_seed(9), vkt.Generator().manual_seed(9)
    vkt.manual_seed(3)
    c = draw(generator=g1)
    d = vkt.zeros(64, device=device).uniform_()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(c, draw(generator=g2)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(values(d), a[0])  # the generator draws did not advance vkt's stream


# Each fill on a tensor in a graph: torch's node name, and a zero gradient to what came before.
GRAPH_FILLS = [("uniform_", ()), ("normal_", ()), ("log_normal_", ()), ("exponential_", ()), ("cauchy_", ()),
               ("geometric_", (0.5,)), ("random_", ()), ("random_", (5,)), ("random_", (1, 5)), ("bernoulli_", ()),
               ("bernoulli_", (0.3,)), ("bernoulli_", ("tensor",))]


@pytest.mark.parametrize("method,args", GRAPH_FILLS, ids=[f"{m}{a}" for m, a in GRAPH_FILLS])
def test_fill_in_graph_as_torch(device, method, args):
    results = []
    for lib, kw in ((vkt, {"device": device}), (torch, {})):
        w = lib.ones(4, requires_grad=True, **kw)
        y = w * 2
        a = tuple(lib.full((4,), 0.5, **kw) if x == "tensor" else x for x in args)
        getattr(y, method)(*a)
        name = type(y.grad_fn).__name__ if lib is torch else y.grad_fn.name()
        (y * w).sum().backward()
        results.append((name, y.requires_grad, values(w.grad) - values(y.detach()) if lib is vkt else
                        w.grad.numpy() - y.detach().numpy()))
    assert results[0][:2] == results[1][:2]
    np.testing.assert_array_equal(results[0][2], 0.0)  # d(y * w)/dw = y: nothing flows through the fill


def test_fill_of_leaf_raises_as_torch(device):
    w = vkt.zeros(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.normal_()
    with vkt.no_grad():
        w.normal_()  # as nn.init does
    assert w.is_leaf and w.requires_grad


@pytest.mark.parametrize("fn,inputs", [
    ("bernoulli", ["p"]), ("normal_tt", ["mean", "std"]), ("normal_tf", ["mean"]), ("normal_ft", ["std"]),
    ("poisson", ["rate"])])
def test_sampler_nodes_as_torch(device, fn, inputs):
    """Samplers of tensors that require grad: torch's node name, and zero gradients."""
    out = {}
    for lib, kw in ((vkt, {"device": device}), (torch, {})):
        t = {k: lib.full((3,), 0.5, requires_grad=True, **kw) for k in inputs}
        y = {"bernoulli": lambda: lib.bernoulli(t["p"]), "normal_tt": lambda: lib.normal(t["mean"], t["std"]),
             "normal_tf": lambda: lib.normal(t["mean"], 2.0), "normal_ft": lambda: lib.normal(1.0, t["std"]),
             "poisson": lambda: lib.poisson(t["rate"])}[fn]()
        name = type(y.grad_fn).__name__ if lib is torch else y.grad_fn.name()
        y.sum().backward()
        out[lib] = (name, y.requires_grad, y.dtype.is_floating_point, [values(v.grad) if lib is vkt else
                                                                        v.grad.numpy() for v in t.values()])
    assert out[vkt][:3] == out[torch][:3]
    for g in out[vkt][3]:
        np.testing.assert_array_equal(g, 0.0)


def assert_same_message(got, expected, device):
    """got's message is torch's (on its cpu device), with vkt's device in kernel names; vkt's broadcast errors add
    the two shapes after torch's words."""
    want = str(expected).split("(Could")[0].strip().replace("_cpu", f"_{device}")
    assert str(got).split("(Could")[0].strip().startswith(want), (str(got), want)


def torch_like(x):
    if isinstance(x, tuple):
        return tuple(torch_like(v) for v in x)
    return torch.from_numpy(np.asarray(x)) if isinstance(x, np.ndarray) else x


F32 = np.zeros(3, np.float32)
ERRORS = [
    ("uniform_", F32, (2.0, 1.0)), ("uniform_", np.zeros(3, np.int32), ()), ("normal_", F32, (0.0, -1.0)),
    ("normal_", np.zeros(3, np.int64), ()), ("log_normal_", F32, (0.0, -1.0)), ("log_normal_", F32, (0.0, 0.0)),
    ("exponential_", F32, (-1.0,)), ("exponential_", np.zeros(3, np.int32), ()), ("cauchy_", F32, (0.0, -1.0)),
    ("geometric_", F32, (0.0,)), ("geometric_", F32, (1.0,)), ("random_", F32, (5, 2)),
    ("random_", np.zeros(3, np.uint8), (0, 300)), ("random_", np.zeros(3, np.uint8), (-1, 3)),
    ("bernoulli_", F32, (1.5,)), ("bernoulli_", F32, (-0.1,)),
    ("bernoulli_", F32, (np.array([0.5, 2.0, 0.1], np.float32),)),
    ("bernoulli_", F32, (np.array([0.5, 0.5], np.float32),)),
]


@pytest.mark.parametrize("method,data,args", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_fill_errors_as_torch(device, method, data, args):
    with pytest.raises(Exception) as expected:
        getattr(torch.from_numpy(data.copy()), method)(*torch_like(args))
    vargs = tuple(vkt.tensor(a, device=device) if isinstance(a, np.ndarray) else a for a in args)
    t = vkt.tensor(data.copy(), device=device)
    with pytest.raises(type(expected.value)) as got:
        getattr(t, method)(*vargs)
    assert_same_message(got.value, expected.value, device)
    np.testing.assert_array_equal(values(t), data)  # left as it was


SAMPLER_ERRORS = [
    ("multinomial", (np.zeros((2, 2, 2), np.float32), 1)), ("multinomial", (np.array([1, 2]), 1)),
    ("multinomial", (np.array([0.2, 0.8], np.float32), 4)), ("multinomial", (np.array([-0.2, 0.8], np.float32), 1)),
    ("multinomial", (np.array([np.nan, 0.8], np.float32), 1)), ("multinomial", (np.zeros(2, np.float32), 1)),
    ("multinomial", (np.ones(2, np.float32), 0)), ("bernoulli", (np.array([1.5], np.float32),)),
    ("bernoulli", (np.array([1, 0]),)), ("poisson", (np.array([-1.0], np.float32),)),
    ("normal", (np.zeros(2, np.float32), np.ones(3, np.float32))),
    ("normal", (np.zeros(2, np.float32), np.array([-1.0, 1.0], np.float32))),
    ("normal", (0.0, -1.0, (2,))),
]


@pytest.mark.parametrize("fn,args", SAMPLER_ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(SAMPLER_ERRORS)])
def test_sampler_errors_as_torch(device, fn, args):
    with pytest.raises(Exception) as expected:
        getattr(torch, fn)(*torch_like(args))
    vargs = tuple(vkt.tensor(a, device=device) if isinstance(a, np.ndarray) else a for a in args)
    with pytest.raises(type(expected.value)) as got:
        getattr(vkt, fn)(*vargs)
    assert_same_message(got.value, expected.value, device)


def test_tensor_methods_exist_as_torch():
    for name in ("uniform_", "normal_", "log_normal_", "exponential_", "cauchy_", "geometric_", "random_",
                 "bernoulli_", "bernoulli", "multinomial"):
        assert hasattr(vkt.zeros(1), name) and hasattr(torch.zeros(1), name)
    for name in ("bernoulli", "normal", "multinomial", "poisson", "randint_like"):
        assert hasattr(vkt, name) and hasattr(torch, name)
