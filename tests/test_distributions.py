# Tests of vkt.distributions against torch.distributions (torch 2.13) on the cpu and vulkan devices: values and
# parameter gradients of log_prob, cdf, icdf, entropy, moments and KL; shapes, expand and broadcasting; torch's
# validation errors; and samples by their statistics over many draws.
import math

import numpy as np
import pytest

import vkt
from conftest import assert_close, raised

torch = pytest.importorskip("torch")
D = vkt.distributions
TD = torch.distributions

# Parameters of each case, by family; a batch of 3 (2 for the categorical families, over 3 events).
PARAMS = {
    "Normal": {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
    "Uniform": {"low": [0.0, -1.0, 2.0], "high": [1.0, 0.5, 4.0]},
    "Bernoulli": {"probs": [0.2, 0.5, 0.9]},
    "Bernoulli/logits": {"logits": [-1.0, 0.0, 2.0]},
    "Categorical": {"probs": [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]},
    "Categorical/logits": {"logits": [[0.5, -1.0, 2.0], [0.0, 0.0, 1.0]]},
    "OneHotCategorical": {"probs": [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]},
    "Exponential": {"rate": [0.5, 1.0, 3.0]},
    "Laplace": {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
    "LogNormal": {"loc": [0.0, 0.5, -0.3], "scale": [0.3, 0.5, 0.2]},
    "Gumbel": {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
    "Cauchy": {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
    "Poisson": {"rate": [0.5, 2.0, 7.0]},
    "Independent": {"loc": [[0.3, -1.0, 2.0], [0.0, 1.0, -2.0]], "scale": [[1.0, 0.5, 2.0], [0.7, 1.5, 0.3]]},
}
# A second set for q in KL(p || q).
PARAMS_Q = {
    "Normal": {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]},
    "Uniform": {"low": [-1.0, -2.0, 2.0], "high": [1.5, 0.5, 5.0]},
    "Bernoulli": {"probs": [0.4, 0.1, 0.7]},
    "Categorical": {"probs": [[0.3, 0.3, 0.4], [0.5, 0.2, 0.3]]},
    "OneHotCategorical": {"probs": [[0.3, 0.3, 0.4], [0.5, 0.2, 0.3]]},
    "Exponential": {"rate": [1.5, 0.3, 2.0]},
    "Laplace": {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]},
    "LogNormal": {"loc": [0.2, 0.0, 0.3], "scale": [0.5, 0.4, 0.6]},
    "Gumbel": {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]},
    "Cauchy": {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]},
    "Poisson": {"rate": [1.5, 0.3, 4.0]},
    "Independent": {"loc": [[0.0, 1.0, 2.5], [1.0, 0.0, -1.0]], "scale": [[2.0, 0.7, 1.0], [1.0, 1.0, 0.5]]},
}
# Points inside each support, for log_prob and cdf.
VALUES = {
    "Normal": [0.1, -0.7, 3.0], "Uniform": [0.5, 0.0, 3.9], "Bernoulli": [0.0, 1.0, 1.0], "Categorical": [2.0, 0.0],
    "OneHotCategorical": [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], "Exponential": [0.3, 2.0, 0.01],
    "Laplace": [0.1, -0.7, 3.0], "LogNormal": [0.5, 2.0, 1.1], "Gumbel": [0.1, -0.7, 3.0], "Cauchy": [0.1, -0.7, 3.0],
    "Poisson": [0.0, 3.0, 9.0], "Independent": [[0.1, -0.7, 3.0], [0.5, 0.5, -2.5]],
}
PROBS = [0.1, 0.5, 0.95]  # for icdf
FAMILIES = list(PARAMS)
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def family(case):
    return case.split("/")[0]


def make(lib, case, params, validate_args=None):
    """The distribution of case from lib (vkt or torch) with the given parameter tensors."""
    dists = lib.distributions
    if case == "Independent":
        return dists.Independent(dists.Normal(params["loc"], params["scale"]), 1, validate_args=validate_args)
    return getattr(dists, family(case))(**params, validate_args=validate_args)


def leaves(lib, spec, device, dtype):
    """Parameter tensors that require grad, as vkt or torch tensors."""
    if lib is vkt:
        return {k: vkt.tensor(np.array(v, dtype=dtype), device=device, requires_grad=True) for k, v in spec.items()}
    return {k: torch.tensor(np.array(v, dtype=dtype), requires_grad=True) for k, v in spec.items()}


def tensor(lib, values, device, dtype):
    if lib is vkt:
        return vkt.tensor(np.array(values, dtype=dtype), device=device)
    return torch.tensor(np.array(values, dtype=dtype))


def outcome(lib, case, device, dtype, what):
    """What `what` gives for case (its value and the parameters' gradients of its sum), or the exception's type."""
    params = leaves(lib, PARAMS[case], device, dtype)
    d = make(lib, case, params)
    value = tensor(lib, VALUES[family(case)], device, dtype)
    probs = tensor(lib, PROBS[:1] if family(case) in ("Categorical", "OneHotCategorical") else PROBS, device, dtype)
    calls = {"log_prob": lambda: d.log_prob(value), "cdf": lambda: d.cdf(value), "icdf": lambda: d.icdf(probs),
             "entropy": d.entropy, "perplexity": d.perplexity, "mean": lambda: d.mean, "mode": lambda: d.mode,
             "variance": lambda: d.variance, "stddev": lambda: d.stddev}
    try:
        out = calls[what]()
    except NotImplementedError:
        return "NotImplementedError", None, None
    grads = None
    if out.requires_grad:
        out.sum().backward()
        grads = {k: None if p.grad is None else p.grad.cpu().numpy() for k, p in params.items()}
    return out.detach().cpu().numpy(), grads, tuple(out.shape)


def devices_dtypes():
    return [("cpu", "float32"), ("cpu", "float64"), ("vulkan", "float32")]


@pytest.mark.parametrize("device_dtype", devices_dtypes(), ids=lambda x: "-".join(x))
@pytest.mark.parametrize("case", FAMILIES)
def test_values_and_gradients(case, device_dtype, request):
    device, dtype = device_dtype
    if device == "vulkan":
        request.getfixturevalue("dev")
        vkt.vulkan.reset_fallback_stats()  # the count is the process's: only this test's ops may add to it
    for what in ["log_prob", "cdf", "icdf", "entropy", "perplexity", "mean", "mode", "variance", "stddev"]:
        ref, ref_grads, ref_shape = outcome(torch, case, "cpu", dtype, what)
        got, got_grads, got_shape = outcome(vkt, case, device, dtype, what)
        if isinstance(ref, str):
            assert got == ref, what
            continue
        assert got_shape == ref_shape, what
        assert_close(got, ref, **TOL[dtype])
        assert (got_grads is None) == (ref_grads is None), what
        for k in ref_grads or {}:
            assert (got_grads[k] is None) == (ref_grads[k] is None), (what, k)
            if ref_grads[k] is not None:
                assert_close(got_grads[k], ref_grads[k], **TOL[dtype])
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


def test_lgamma_composed():
    """The lgamma Poisson and Gumbel's KL use, composed of vkt ops, against math.lgamma over a wide range."""
    from vkt.distributions.utils import _lgamma
    x = np.array([1e-3, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 7.99, 8.0, 10.0, 55.5, 1e4])
    ref = np.array([math.lgamma(v) for v in x])
    assert_close(_lgamma(vkt.tensor(x)), ref, rtol=1e-10, atol=1e-10)
    assert_close(_lgamma(vkt.tensor(x.astype(np.float32))), ref, rtol=3e-6, atol=3e-6)


KL_PAIRS = [
    ("Normal", "Normal"), ("Bernoulli", "Bernoulli"), ("Categorical", "Categorical"),
    ("OneHotCategorical", "OneHotCategorical"), ("Exponential", "Exponential"), ("Laplace", "Laplace"),
    ("Uniform", "Uniform"), ("Poisson", "Poisson"), ("Gumbel", "Gumbel"), ("Cauchy", "Cauchy"),
    ("LogNormal", "LogNormal"), ("Independent", "Independent"), ("Bernoulli", "Poisson"), ("Exponential", "Gumbel"),
    ("Exponential", "Normal"), ("Gumbel", "Normal"), ("Laplace", "Normal"), ("Normal", "Gumbel"),
    ("Normal", "Laplace"), ("Uniform", "Exponential"), ("Uniform", "Gumbel"), ("Uniform", "Normal"),
    ("Normal", "Uniform"), ("Normal", "Exponential"), ("Exponential", "Uniform"), ("Poisson", "Bernoulli"),
    ("Gumbel", "Exponential"), ("Gumbel", "Uniform"), ("Laplace", "Exponential"), ("Laplace", "Uniform"),
]


def kl_outcome(lib, p_case, q_case, device, dtype):
    p_params = leaves(lib, PARAMS[p_case], device, dtype)
    q_params = leaves(lib, PARAMS_Q[q_case], device, dtype)
    kl = lib.distributions.kl_divergence(make(lib, p_case, p_params), make(lib, q_case, q_params))
    grads = {}
    if kl.requires_grad:
        kl.sum().backward()
        grads = {f"{side}.{k}": None if t.grad is None else t.grad.cpu().numpy()
                 for side, params in (("p", p_params), ("q", q_params)) for k, t in params.items()}
    return kl.detach().cpu().numpy(), grads


@pytest.mark.parametrize("device_dtype", devices_dtypes(), ids=lambda x: "-".join(x))
@pytest.mark.parametrize("pair", KL_PAIRS, ids=lambda p: "-".join(p))
def test_kl_divergence(pair, device_dtype, request):
    device, dtype = device_dtype
    if device == "vulkan":
        request.getfixturevalue("dev")
    ref, ref_grads = kl_outcome(torch, *pair, "cpu", dtype)
    got, got_grads = kl_outcome(vkt, *pair, device, dtype)
    assert_close(got, ref, **TOL[dtype])
    assert got_grads.keys() == ref_grads.keys()
    for k, g in ref_grads.items():
        if g is None:  # torch leaves an unused parameter's grad None; vkt may give zeros where it went through where()
            assert got_grads[k] is None or not np.any(got_grads[k]), k
        else:
            assert_close(got_grads[k], g, **TOL[dtype])


def test_kl_uniform_infinite_where_not_covered(device):
    p = D.Uniform(vkt.tensor([0.0, 0.0], device=device), vkt.tensor([1.0, 1.0], device=device))
    q = D.Uniform(vkt.tensor([-1.0, 0.5], device=device), vkt.tensor([2.0, 2.0], device=device))
    assert_close(D.kl_divergence(p, q), TD.kl_divergence(TD.Uniform(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0])),
                 TD.Uniform(torch.tensor([-1.0, 0.5]), torch.tensor([2.0, 2.0]))).numpy())


def test_kl_unregistered_and_register_kl(device):
    n, c = D.Normal(0.0, 1.0), D.Categorical(probs=vkt.tensor([0.5, 0.5]))
    ref = raised(lambda: TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Categorical(probs=torch.tensor([0.5, 0.5]))))
    assert raised(lambda: D.kl_divergence(n, c)) == ref

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return vkt.tensor(42.0)
    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
    assert_close(D.kl_divergence(D.Normal(0.0, 1.0), MyNormal(1.0, 1.0)), np.float32(0.5))  # Normal-Normal still


def torch_message(message):
    """torch's message as vkt writes it: shapes as tuples."""
    import re
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)", lambda m: str(tuple(int(s) for s in m.group(1).split(", ") if s)),
                  message)


def error(call):
    """(type name, message) of what call raises, unnormalised (its tensors print as they are)."""
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e).__name__, str(e)
    return None, ""


def vkt_message(message):
    return message.replace(", device='vulkan:0'", "")


INVALID = [
    lambda L, t: L.distributions.Normal(0.0, -1.0),
    lambda L, t: L.distributions.Normal(t([0.0, 1.0]), t([1.0, -1.0])),
    lambda L, t: L.distributions.Normal(float("nan"), 1.0),
    lambda L, t: L.distributions.Uniform(1.0, 0.0),
    lambda L, t: L.distributions.Uniform(t([0.0, 2.0]), t([1.0, 1.0])),
    lambda L, t: L.distributions.Bernoulli(probs=1.5),
    lambda L, t: L.distributions.Bernoulli(),
    lambda L, t: L.distributions.Bernoulli(probs=t([0.5]), logits=t([0.0])),
    lambda L, t: L.distributions.Categorical(probs=t(0.5)),
    lambda L, t: L.distributions.Categorical(logits=t(0.5)),
    lambda L, t: L.distributions.Categorical(probs=t([-0.5, 1.5])),
    lambda L, t: L.distributions.OneHotCategorical(),
    lambda L, t: L.distributions.Exponential(t([1.0, 0.0])),
    lambda L, t: L.distributions.Laplace(0.0, 0.0),
    lambda L, t: L.distributions.Cauchy(0.0, -2.0),
    lambda L, t: L.distributions.Gumbel(t([0.0]), t([-2.0])),
    lambda L, t: L.distributions.LogNormal(0.0, -2.0),
    lambda L, t: L.distributions.Poisson(t([1.0, -1.0])),
    lambda L, t: L.distributions.Independent(L.distributions.Normal(t([0.0]), t([1.0])), 2),
    lambda L, t: L.distributions.Exponential(1.0).log_prob(t(-1.0)),
    lambda L, t: L.distributions.Bernoulli(0.3).log_prob(t([0.5, 1.0])),
    lambda L, t: L.distributions.Poisson(2.0).log_prob(t(1.5)),
    lambda L, t: L.distributions.Categorical(probs=t([0.5, 0.5])).log_prob(t(2.0)),
    lambda L, t: L.distributions.OneHotCategorical(probs=t([0.5, 0.5])).log_prob(t([1.0, 1.0])),
    lambda L, t: L.distributions.OneHotCategorical(probs=t([0.5, 0.5])).log_prob(t([1.0, 0.0, 0.0])),
    lambda L, t: L.distributions.Uniform(t(0.0), t(1.0)).log_prob(t(2.0)),
    lambda L, t: L.distributions.LogNormal(0.0, 1.0).log_prob(t(-2.0)),
    lambda L, t: L.distributions.Normal(t([0.0, 0.0, 0.0]), 1.0).log_prob(t([0.0, 0.0])),
    lambda L, t: L.distributions.Normal(0.0, 1.0).log_prob(0.5),
    lambda L, t: L.distributions.Independent(L.distributions.Normal(t([0.0, 0.0]), 1.0), 1).log_prob(
        t([0.0, 1.0, 2.0])),
    lambda L, t: L.distributions.Distribution(validate_args=False).mode,
    lambda L, t: L.distributions.Distribution.set_default_validate_args(3),
]


@pytest.mark.parametrize("index", range(len(INVALID)))
def test_validation_errors(index, device):
    call = INVALID[index]
    want_type, want = error(lambda: call(torch, lambda v: torch.tensor(v)))
    got_type, got = error(lambda: call(vkt, lambda v: vkt.tensor(v, device=device)))
    want = torch_message(want).replace("torch.distributions.distribution.Distribution",
                                       "vkt.distributions.distribution.Distribution")
    assert (got_type, vkt_message(got)) == (want_type, want)


def test_validate_args_off(device):
    t = lambda v: vkt.tensor(v, device=device)  # noqa: E731
    d = D.Normal(t([0.0]), t([-1.0]), validate_args=False)
    assert np.isnan(d.log_prob(t([0.0])).cpu().numpy()).all()
    assert D.Exponential(t(1.0), validate_args=False).log_prob(t(-1.0)).item() == pytest.approx(1.0)
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)


def test_constraints_print_and_compare():
    for case in FAMILIES:
        params = {k: np.array(v, dtype=np.float32) for k, v in PARAMS[case].items()}
        d = make(vkt, case, {k: vkt.tensor(v) for k, v in params.items()})
        r = make(torch, case, {k: torch.tensor(v) for k, v in params.items()})
        assert repr(d.support) == repr(r.support), case
        assert {k: repr(c) for k, c in d.arg_constraints.items()} == {k: repr(c) for k, c in r.arg_constraints.items()}
        assert d.has_rsample == r.has_rsample, case
        assert d.has_enumerate_support == r.has_enumerate_support, case
        assert d.batch_shape == tuple(r.batch_shape) and d.event_shape == tuple(r.event_shape), case
        assert torch_message(repr(r)) == repr(d), case
    C = D.constraints
    assert D.Normal(0.0, 1.0).support is C.real and D.Exponential(1.0).support is C.nonnegative
    assert D.Poisson(1.0).support is C.nonnegative_integer and D.Bernoulli(0.5).support is C.boolean
    assert C.is_dependent(D.Uniform.support) and not C.is_dependent(C.real)
    assert repr(C.real_vector) == repr(TD.constraints.real_vector) == "IndependentConstraint(Real(), 1)"
    for name in ["simplex", "one_hot", "unit_interval", "positive", "positive_integer", "nonnegative_integer"]:
        assert repr(getattr(C, name)) == repr(getattr(TD.constraints, name))
        assert getattr(C, name).event_dim == getattr(TD.constraints, name).event_dim
        assert getattr(C, name).is_discrete == getattr(TD.constraints, name).is_discrete
    x = np.array([[0.2, 0.8], [0.5, 0.6]], dtype=np.float32)
    for c in ["simplex", "unit_interval", "positive", "real", "boolean"]:
        want = getattr(TD.constraints, c).check(torch.tensor(x)).numpy()
        assert (getattr(C, c).check(vkt.tensor(x)).numpy() == want).all()


def test_shapes_broadcasting_and_expand(device):
    t = lambda v: vkt.tensor(np.array(v, dtype=np.float32), device=device)  # noqa: E731
    tt = lambda v: torch.tensor(np.array(v, dtype=np.float32))  # noqa: E731
    loc, scale = [[0.0], [1.0], [-1.0]], [1.0, 2.0]
    d, r = D.Normal(t(loc), t(scale)), TD.Normal(tt(loc), tt(scale))
    assert d.batch_shape == (3, 2) and d.event_shape == ()
    value = np.linspace(-1, 1, 4).reshape(4, 1, 1)
    assert_close(d.log_prob(t(value)), r.log_prob(tt(value)).numpy(), rtol=1e-5, atol=1e-6)
    assert D.Normal(0.0, t(scale)).batch_shape == (2,) and D.Normal(0.0, 1.0).batch_shape == ()
    e, re_ = d.expand((5, 3, 2)), r.expand((5, 3, 2))
    assert e.batch_shape == (5, 3, 2) and e.loc.shape == (5, 3, 2)
    value = np.linspace(-1, 1, 5).reshape(5, 1, 1)
    assert_close(e.log_prob(t(value)), re_.log_prob(tt(value)).numpy(), rtol=1e-5, atol=1e-6)
    assert e.sample((2,)).shape == (2, 5, 3, 2) and e.rsample().shape == (5, 3, 2)
    for case in FAMILIES:
        params = {k: np.array(v, dtype=np.float32) for k, v in PARAMS[case].items()}
        dd = make(vkt, case, {k: t(v) for k, v in params.items()})
        rr = make(torch, case, {k: tt(v) for k, v in params.items()})
        for shape in [(), (4,), (2, 3)]:
            assert dd.sample(shape).shape == tuple(rr.sample(shape).shape), (case, shape)
            if rr.has_rsample:
                assert dd.rsample(shape).shape == tuple(rr.rsample(shape).shape), (case, shape)
        big = (4,) + tuple(rr.batch_shape)
        de, re_ = dd.expand(big), rr.expand(big)
        assert de.batch_shape == big and de.event_shape == tuple(re_.event_shape), case
        assert type(de) is type(dd) and de._validate_args == dd._validate_args
        v = np.array(VALUES[family(case)], dtype=np.float32)
        assert_close(de.log_prob(t(v)), re_.log_prob(tt(v)).numpy(), rtol=2e-5, atol=2e-5)
        assert de.sample((2,)).shape == tuple(re_.sample((2,)).shape), case
    assert D.Bernoulli(0.3).sample((5,)).shape == (5,) and D.Poisson(t([1.0, 2.0])).sample((3,)).shape == (3, 2)


N = 20000  # draws per statistic: standard errors of about 1% of a standard deviation


def check_moments(x, mean, var, k=5.0):
    """The sample mean within k standard errors of mean, and the sample variance within 10% of var."""
    x = x.cpu().numpy().astype(np.float64)
    mean, var = np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
    assert np.all(np.abs(x.mean(0) - mean) <= k * np.sqrt(var / x.shape[0])), (x.mean(0), mean)
    assert np.all(np.abs(x.var(0) - var) <= 0.1 * var), (x.var(0), var)


@pytest.mark.parametrize("case", [c for c in FAMILIES if c not in ("Cauchy",)])
def test_sample_moments(case, device):
    vkt.manual_seed(1234)
    params = {k: vkt.tensor(np.array(v, dtype=np.float32), device=device) for k, v in PARAMS[case].items()}
    d = make(vkt, case, params)
    r = make(torch, case, {k: torch.tensor(np.array(v, dtype=np.float32)) for k, v in PARAMS[case].items()})
    x = d.sample((N,))
    assert str(x.device) == str(params[next(iter(params))].device)
    mean, var = r.mean.numpy(), r.variance.numpy()
    if family(case) == "Categorical":  # moments of the one-hot encoding of the index
        x = vkt.nn.functional.one_hot(x, 3).float()
        mean, var = r.probs.numpy(), (r.probs * (1 - r.probs)).numpy()
    check_moments(x, mean, var)
    if r.has_rsample:
        check_moments(d.rsample((N,)).detach(), mean, var)
    assert bool(d.support.check(x if family(case) != "Categorical" else d.sample((10,))).all())


def test_cauchy_quantiles(device):
    vkt.manual_seed(7)
    d = D.Cauchy(vkt.tensor([1.0, -2.0], device=device), vkt.tensor([0.5, 3.0], device=device))
    x = d.sample((N,)).cpu().numpy()
    for p in [0.25, 0.5, 0.75]:
        q = d.icdf(vkt.tensor(p, device=device)).cpu().numpy()
        assert np.all(np.abs((x <= q).mean(0) - p) <= 5 * math.sqrt(p * (1 - p) / N))


def test_rsample_gradients(device):
    vkt.manual_seed(99)
    vkt.vulkan.reset_fallback_stats()
    t = lambda v: vkt.tensor(np.array(v, dtype=np.float32), device=device, requires_grad=True)  # noqa: E731
    for name in ["Normal", "Laplace", "Gumbel", "Cauchy"]:
        loc, scale = t([0.5, -1.0]), t([1.0, 2.0])
        getattr(D, name)(loc, scale).rsample((N,)).mean(0).sum().backward()
        assert_close(loc.grad, np.ones(2), rtol=0, atol=1e-5)  # d mean(rsample) / d loc = 1
        if name != "Cauchy":  # E[eps] of the standardised variable: 0, 0, Euler's constant
            want = 0.5772156649 if name == "Gumbel" else 0.0
            assert np.all(np.abs(scale.grad.cpu().numpy() - want) < 0.05)
    rate = t([0.5, 2.0])
    D.Exponential(rate).rsample((N,)).mean(0).sum().backward()  # d(E/rate)/d rate = -E/rate^2, E[E] = 1
    assert np.all(np.abs(rate.grad.cpu().numpy() / -np.array([4.0, 0.25]) - 1) < 0.05)
    low, high = t([0.0, 1.0]), t([1.0, 3.0])
    D.Uniform(low, high).rsample((N,)).mean(0).sum().backward()  # each is E[u] or 1 - E[u], about 1/2
    assert np.all(np.abs(low.grad.cpu().numpy() - 0.5) < 0.02) and np.all(np.abs(high.grad.cpu().numpy() - 0.5) < 0.02)
    loc, scale = t([0.0, 0.5]), t([0.3, 0.2])
    x = D.LogNormal(loc, scale).rsample((N,))
    x.mean(0).sum().backward()  # d exp(loc + scale eps) / d loc = the sample itself
    assert_close(loc.grad, x.detach().mean(0).cpu().numpy(), rtol=1e-4, atol=1e-5)
    assert D.Normal(t(0.0), t(1.0)).sample().requires_grad is False
    probs = t([0.2, 0.8])
    s = D.OneHotCategoricalStraightThrough(probs=probs).rsample((5,))
    s.sum().backward()
    assert s.shape == (5, 2) and probs.grad is not None
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


def test_enumerate_support(device):
    t = lambda v: vkt.tensor(np.array(v, dtype=np.float32), device=device)  # noqa: E731
    tt = lambda v: torch.tensor(np.array(v, dtype=np.float32))  # noqa: E731
    p = [[0.2, 0.8], [0.5, 0.5], [0.1, 0.9]]
    for name, arg in [("Bernoulli", [0.2, 0.7, 0.5]), ("Categorical", p), ("OneHotCategorical", p)]:
        for expand in (True, False):
            got = getattr(D, name)(probs=t(arg)).enumerate_support(expand)
            want = getattr(TD, name)(probs=tt(arg)).enumerate_support(expand)
            assert_close(got, want.numpy())
