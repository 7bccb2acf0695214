# Tests of the vkt.distributions families beyond the first twelve (Gamma, Chi2, Beta, Dirichlet, StudentT,
# MultivariateNormal, Binomial, Geometric, NegativeBinomial, HalfNormal, HalfCauchy, Weibull, Pareto, Kumaraswamy,
# MixtureSameFamily, TransformedDistribution and transforms) against torch.distributions (torch 2.13) on the cpu and
# vulkan devices: values and parameter gradients, KL pairs, torch's validation errors, shapes, sample statistics,
# and vkt._standard_gamma's pathwise gradient against torch._standard_gamma_grad.
import numpy as np
import pytest

import vkt
from conftest import assert_close, assert_same_outcome, raised

torch = pytest.importorskip("torch")
D = vkt.distributions
TD = torch.distributions

_A = np.array([[2.0, 0.3, -0.4], [0.3, 1.0, 0.2], [-0.4, 0.2, 1.5]])
COV = np.stack([_A, _A + np.eye(3)])  # a batch of two positive-definite matrices
_MIX = {"probs": [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], "loc": [[0.0, 1.0, -1.0], [2.0, 0.0, 0.5]],
        "scale": [[1.0, 0.5, 2.0], [0.3, 1.0, 0.7]]}

# Parameters of each case, by family; a batch of 3 (2 for the vector families). "Family/variant" cases build the same
# family another way.
PARAMS = {
    "Gamma": {"concentration": [0.5, 2.0, 7.0], "rate": [1.0, 0.5, 3.0]},
    "Chi2": {"df": [1.0, 3.0, 10.0]},
    "Beta": {"concentration1": [0.5, 2.0, 7.0], "concentration0": [1.5, 0.5, 3.0]},
    "Dirichlet": {"concentration": [[0.5, 2.0, 7.0], [1.0, 0.5, 3.0]]},
    "StudentT": {"df": [0.8, 1.5, 7.0], "loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
    "MultivariateNormal": {"loc": [[0.3, -1.0, 2.0], [0.0, 1.0, -2.0]], "covariance_matrix": COV},
    "MultivariateNormal/precision": {"loc": [[0.3, -1.0, 2.0], [0.0, 1.0, -2.0]],
                                     "precision_matrix": np.linalg.inv(COV)},
    "MultivariateNormal/scale_tril": {"loc": [[0.3, -1.0, 2.0], [0.0, 1.0, -2.0]],
                                      "scale_tril": np.linalg.cholesky(COV)},
    "Binomial": {"total_count": [6.0, 6.0, 6.0], "probs": [0.2, 0.5, 0.9]},
    "Binomial/logits": {"total_count": [4.0, 10.0, 6.0], "logits": [-1.0, 0.0, 2.0]},
    "Geometric": {"probs": [0.2, 0.5, 0.9]},
    "Geometric/logits": {"logits": [-1.0, 0.0, 2.0]},
    "NegativeBinomial": {"total_count": [2.0, 5.0, 0.5], "probs": [0.2, 0.5, 0.7]},
    "NegativeBinomial/logits": {"total_count": [2.0, 5.0, 0.5], "logits": [-1.0, 0.0, 1.0]},
    "HalfNormal": {"scale": [1.0, 0.5, 2.0]},
    "HalfCauchy": {"scale": [1.0, 0.5, 2.0]},
    "Weibull": {"scale": [1.0, 0.5, 2.0], "concentration": [0.5, 2.0, 3.5]},
    "Pareto": {"scale": [1.0, 0.5, 2.0], "alpha": [0.5, 2.5, 3.5]},
    "Kumaraswamy": {"concentration1": [0.5, 2.0, 7.0], "concentration0": [1.5, 0.5, 3.0]},
    "MixtureSameFamily": _MIX,
    "TransformedDistribution": {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
}
# A second set for q in KL(p || q), for the families that need one.
PARAMS_Q = {
    "Gamma": {"concentration": [1.5, 0.7, 4.0], "rate": [2.0, 1.0, 0.5]},
    "Beta": {"concentration1": [1.0, 3.0, 2.0], "concentration0": [2.0, 1.0, 0.5]},
    "Dirichlet": {"concentration": [[1.0, 1.0, 2.0], [3.0, 0.7, 1.0]]},
    "MultivariateNormal": {"loc": [[0.0, 0.5, 1.0], [1.0, 1.0, -1.0]], "scale_tril": np.linalg.cholesky(COV[::-1])},
    "Binomial": {"total_count": [6.0, 6.0, 6.0], "probs": [0.4, 0.1, 0.7]},
    "Geometric": {"probs": [0.4, 0.1, 0.7]},
    "HalfNormal": {"scale": [2.0, 0.7, 1.0]},
    "Pareto": {"scale": [0.5, 1.0, 1.0], "alpha": [1.5, 0.7, 2.0]},
    "TransformedDistribution": {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]},
    "Exponential": {"rate": [1.5, 0.3, 2.0]},
    "Normal": {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]},
    "Uniform": {"low": [0.1, 0.0, -1.0], "high": [0.5, 1.0, 3.0]},
    "Gumbel": {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]},
    "Poisson": {"rate": [1.5, 0.3, 4.0]},
}
# Points inside each support, for log_prob and cdf.
VALUES = {
    "Gamma": [0.3, 2.0, 5.0], "Chi2": [0.3, 2.0, 12.0], "Beta": [0.3, 0.9, 0.5],
    "Dirichlet": [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], "StudentT": [0.1, -0.7, 3.0],
    "MultivariateNormal": [[0.1, -0.7, 3.0], [0.5, 0.5, -2.5]], "Binomial": [0.0, 3.0, 4.0],
    "Geometric": [0.0, 3.0, 1.0], "NegativeBinomial": [0.0, 3.0, 7.0], "HalfNormal": [0.1, 0.7, 3.0],
    "HalfCauchy": [0.1, 0.7, 3.0], "Weibull": [0.1, 0.7, 3.0], "Pareto": [1.5, 0.7, 3.0],
    "Kumaraswamy": [0.3, 0.9, 0.5], "MixtureSameFamily": [0.1, -0.7], "TransformedDistribution": [1.5, -0.7, 2.9],
}
PROBS = [0.1, 0.5, 0.95]  # for icdf
# Parameters torch cannot differentiate a quantity in (torch's igamma has no derivative in its first argument).
NO_GRAD = {("Gamma", "cdf"): {"concentration"}, ("Chi2", "cdf"): {"df"}}
CASES = list(PARAMS)
TOL = {"float32": dict(rtol=5e-5, atol=5e-5), "float64": dict(rtol=1e-8, atol=1e-9)}


def family(case):
    return case.split("/")[0]


def make(lib, case, params, validate_args=None):
    """The distribution of case from lib (vkt or torch) with the given parameter tensors."""
    dists = lib.distributions
    if case == "MixtureSameFamily":
        mix = dists.Categorical(probs=params["probs"])
        return dists.MixtureSameFamily(mix, dists.Normal(params["loc"], params["scale"]), validate_args=validate_args)
    if case == "TransformedDistribution":
        transforms = [dists.transforms.TanhTransform(), dists.transforms.AffineTransform(1.0, 2.0)]
        return dists.TransformedDistribution(dists.Normal(params["loc"], params["scale"]), transforms,
                                             validate_args=validate_args)
    return getattr(dists, family(case))(**params, validate_args=validate_args)


def leaves(lib, spec, device, dtype, frozen=()):
    """Parameter tensors that require grad (but those named in frozen), as vkt or torch tensors."""
    if lib is vkt:
        return {k: vkt.tensor(np.array(v, dtype=dtype), device=device, requires_grad=k not in frozen)
                for k, v in spec.items()}
    return {k: torch.tensor(np.array(v, dtype=dtype), requires_grad=k not in frozen) for k, v in spec.items()}


def tensor(lib, values, device, dtype):
    if lib is vkt:
        return vkt.tensor(np.array(values, dtype=dtype), device=device)
    return torch.tensor(np.array(values, dtype=dtype))


def outcome(lib, case, device, dtype, what):
    """What `what` gives for case (its value and the parameters' gradients of its sum), or the exception's type."""
    params = leaves(lib, PARAMS[case], device, dtype, NO_GRAD.get((family(case), what), ()))
    d = make(lib, case, params)
    value = tensor(lib, VALUES[family(case)], device, dtype)
    calls = {"log_prob": lambda: d.log_prob(value), "cdf": lambda: d.cdf(value),
             "icdf": lambda: d.icdf(tensor(lib, PROBS, device, dtype)), "entropy": d.entropy,
             "mean": lambda: d.mean, "mode": lambda: d.mode, "variance": lambda: d.variance, "stddev": lambda: d.stddev}
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
@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients(case, device_dtype, request):
    device, dtype = device_dtype
    if device == "vulkan":
        request.getfixturevalue("dev")
        vkt.vulkan.reset_fallback_stats()
    for what in ["log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev"]:
        tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" and what == "cdf" else TOL[dtype]
        assert_same_outcome(outcome(vkt, case, device, dtype, what), outcome(torch, case, "cpu", dtype, what), tol,
                            what)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


KL_PAIRS = [
    ("Gamma", "Gamma"), ("Beta", "Beta"), ("Dirichlet", "Dirichlet"), ("MultivariateNormal", "MultivariateNormal"),
    ("Binomial", "Binomial"), ("Geometric", "Geometric"), ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"),
    ("TransformedDistribution", "TransformedDistribution"), ("Beta", "Exponential"), ("Beta", "Gamma"),
    ("Beta", "Normal"), ("Beta", "Uniform"), ("Exponential", "Gamma"), ("Gamma", "Exponential"),
    ("Gamma", "Gumbel"), ("Gamma", "Normal"), ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"),
    ("Uniform", "Beta"), ("Uniform", "Gamma"), ("Uniform", "Pareto"), ("Gamma", "Beta"), ("Normal", "Gamma"),
    ("Poisson", "Binomial"), ("Pareto", "Uniform"),
]
OTHER = {"Exponential": {"rate": [0.5, 1.0, 3.0]}, "Normal": {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
         "Uniform": {"low": [0.2, 0.5, 1.0], "high": [0.4, 0.9, 2.0]}, "Poisson": {"rate": [0.5, 2.0, 7.0]}}


def kl_outcome(lib, p_case, q_case, device, dtype):
    p_params = leaves(lib, PARAMS.get(p_case) or OTHER[p_case], device, dtype)
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
        vkt.vulkan.reset_fallback_stats()
    ref, ref_grads = kl_outcome(torch, *pair, "cpu", dtype)
    got, got_grads = kl_outcome(vkt, *pair, device, dtype)
    assert_close(got, ref, **TOL[dtype])
    assert got_grads.keys() == ref_grads.keys()
    for k, g in ref_grads.items():
        if g is None:
            assert got_grads[k] is None or not np.any(got_grads[k]), k
        else:
            assert_close(got_grads[k], g, **TOL[dtype])
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


def test_kl_not_implemented():
    """Transformed pairs with different transforms, and Binomials where q has more trials, raise as torch's."""
    for lib in (torch, vkt):
        t = lib.tensor
        W = lib.distributions.Weibull
        with pytest.raises(NotImplementedError):
            lib.distributions.kl_divergence(W(t([1.0]), t([2.0])), W(t([1.0]), t([3.0])))
    B, TB = D.Binomial, TD.Binomial
    want = raised(lambda: TD.kl_divergence(TB(2, torch.tensor([0.5])), TB(3, torch.tensor([0.5]))))
    assert raised(lambda: D.kl_divergence(B(2, vkt.tensor([0.5])), B(3, vkt.tensor([0.5])))) == want


def torch_message(message):
    """torch's message as vkt writes it: shapes as tuples, torch's module names as vkt's."""
    import re
    message = re.sub(r"torch\.Size\(\[([^\]]*)\]\)",
                     lambda m: str(tuple(int(s) for s in m.group(1).split(", ") if s)), message)
    return message.replace("torch.distributions", "vkt.distributions")


def error(call):
    """(type name, message) of what call raises."""
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e).__name__, str(e)
    return None, ""


INVALID = [
    lambda L, t: L.distributions.Gamma(0.0, 1.0),
    lambda L, t: L.distributions.Gamma(t([1.0, 2.0]), t([1.0, -1.0])),
    lambda L, t: L.distributions.Gamma(1.0, 1.0).log_prob(t(-1.0)),
    lambda L, t: L.distributions.Chi2(-1.0),
    lambda L, t: L.distributions.Beta(-1.0, 1.0),
    lambda L, t: L.distributions.Beta(2.0, 2.0).log_prob(t(1.5)),
    lambda L, t: L.distributions.Dirichlet(t(0.5)),
    lambda L, t: L.distributions.Dirichlet(t([-1.0, 1.0])),
    lambda L, t: L.distributions.Dirichlet(t([1.0, 1.0])).log_prob(t([0.5, 0.6])),
    lambda L, t: L.distributions.StudentT(-1.0),
    lambda L, t: L.distributions.MultivariateNormal(t(0.0), t([[1.0]])),
    lambda L, t: L.distributions.MultivariateNormal(t([0.0]), t([[1.0]]), scale_tril=t([[1.0]])),
    lambda L, t: L.distributions.MultivariateNormal(t([0.0]), t([1.0])),
    lambda L, t: L.distributions.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([1.0, 1.0])),
    lambda L, t: L.distributions.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])),
    lambda L, t: L.distributions.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.5], [0.0, 1.0]])),
    lambda L, t: L.distributions.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 0.0], [1.0, -1.0]])),
    lambda L, t: L.distributions.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.0], [0.0, 1.0]])).log_prob(t([1.0])),
    lambda L, t: L.distributions.Binomial(5, None),
    lambda L, t: L.distributions.Binomial(t(2.5), t(0.5)),
    lambda L, t: L.distributions.Binomial(t(5.0), t(1.5)),
    lambda L, t: L.distributions.Binomial(t(5.0), t(0.5)).log_prob(t(7.0)),
    lambda L, t: L.distributions.Binomial(t([2.0, 5.0]), t(0.5)).enumerate_support(),
    lambda L, t: L.distributions.Geometric(0.0),
    lambda L, t: L.distributions.Geometric(t([0.5, 0.0])),
    lambda L, t: L.distributions.Geometric(1.5),
    lambda L, t: L.distributions.Geometric(0.5).log_prob(t(1.5)),
    lambda L, t: L.distributions.NegativeBinomial(t(-1.0), t(0.5)),
    lambda L, t: L.distributions.NegativeBinomial(t(1.0), t(1.0)),
    lambda L, t: L.distributions.NegativeBinomial(t(1.0)),
    lambda L, t: L.distributions.HalfNormal(-1.0),
    lambda L, t: L.distributions.HalfNormal(1.0).log_prob(t(-1.0)),
    lambda L, t: L.distributions.HalfCauchy(t([0.0])),
    lambda L, t: L.distributions.Weibull(0.0, 1.0),
    lambda L, t: L.distributions.Pareto(t(1.0), t(2.0)).log_prob(t(0.5)),
    lambda L, t: L.distributions.Kumaraswamy(1.0, -1.0),
    lambda L, t: L.distributions.Kumaraswamy(1.0, 2.0).log_prob(t(1.5)),
    lambda L, t: L.distributions.MixtureSameFamily(L.distributions.Normal(0.0, 1.0), L.distributions.Normal(0.0, 1.0)),
    lambda L, t: L.distributions.MixtureSameFamily(L.distributions.Categorical(t([0.5, 0.5])),
                                                   L.distributions.Normal(t([0.0, 1.0, 2.0]), 1.0)),
    lambda L, t: L.distributions.TransformedDistribution(L.distributions.Normal(0.0, 1.0), "exp"),
    lambda L, t: L.distributions.TransformedDistribution(L.distributions.Normal(0.0, 1.0), [1]),
    lambda L, t: L.distributions.TransformedDistribution(
        L.distributions.Normal(0.0, 1.0), L.distributions.transforms.ExpTransform()).log_prob(t(-1.0)),
    lambda L, t: L.distributions.transforms.ExpTransform(cache_size=2),
]


@pytest.mark.parametrize("index", range(len(INVALID)))
def test_validation_errors(index, device):
    call = INVALID[index]
    want_type, want = error(lambda: call(torch, lambda v: torch.tensor(v)))
    got_type, got = error(lambda: call(vkt, lambda v: vkt.tensor(v, device=device)))
    assert want_type is not None
    assert (got_type, got.replace(", device='vulkan:0'", "")) == (want_type, torch_message(want))


def test_constraints_shapes_and_repr():
    for case in CASES:
        params = {k: np.array(v, dtype=np.float32) for k, v in PARAMS[case].items()}
        d = make(vkt, case, {k: vkt.tensor(v) for k, v in params.items()})
        r = make(torch, case, {k: torch.tensor(v) for k, v in params.items()})
        assert repr(d.support) == repr(r.support), case
        assert {k: repr(c) for k, c in d.arg_constraints.items()} == {k: repr(c) for k, c in r.arg_constraints.items()}
        assert d.has_rsample == r.has_rsample, case
        assert d.has_enumerate_support == r.has_enumerate_support, case
        assert d.batch_shape == tuple(r.batch_shape) and d.event_shape == tuple(r.event_shape), case
        assert torch_message(repr(r)) == repr(d), case
        assert isinstance(d, D.TransformedDistribution) == isinstance(r, TD.TransformedDistribution), case
        assert isinstance(d, D.ExponentialFamily) == isinstance(r, TD.ExponentialFamily), case
    C, TC = D.constraints, TD.constraints
    for name in ["positive_definite", "lower_cholesky", "symmetric", "square"]:
        assert repr(getattr(C, name)) == repr(getattr(TC, name)) and getattr(C, name).event_dim == 2
    m = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.0], [0.3, 1.0]]], dtype=np.float32)
    for name in ["positive_definite", "lower_cholesky", "symmetric", "square"]:
        want = getattr(TC, name).check(torch.tensor(m)).numpy()
        assert (getattr(C, name).check(vkt.tensor(m)).numpy() == want).all(), name


def test_shapes_expand_and_broadcasting(device):
    t = lambda v: vkt.tensor(np.array(v, dtype=np.float32), device=device)  # noqa: E731
    tt = lambda v: torch.tensor(np.array(v, dtype=np.float32))  # noqa: E731
    vkt.manual_seed(5)
    for case in CASES:
        d = make(vkt, case, {k: t(v) for k, v in PARAMS[case].items()})
        r = make(torch, case, {k: tt(v) for k, v in PARAMS[case].items()})
        for shape in [(), (2, 3)]:
            assert d.sample(shape).shape == tuple(r.sample(shape).shape), (case, shape)
            if r.has_rsample:
                assert d.rsample(shape).shape == tuple(r.rsample(shape).shape), (case, shape)
        big = (4,) + tuple(r.batch_shape)
        de, re_ = d.expand(big), r.expand(big)
        assert de.batch_shape == big and de.event_shape == tuple(re_.event_shape), case
        assert type(de) is type(d) and de._validate_args == d._validate_args
        v = np.array(VALUES[family(case)], dtype=np.float32)
        assert_close(de.log_prob(t(v)), re_.log_prob(tt(v)).numpy(), rtol=5e-5, atol=5e-5)
        assert de.sample((2,)).shape == tuple(re_.sample((2,)).shape), case
    # a value batch broadcast against the parameters' batch, and numbers for parameters
    v = np.linspace(0.1, 3.0, 4).reshape(4, 1)
    assert_close(D.Gamma(t([1.0, 2.0]), 1.5).log_prob(t(v)), TD.Gamma(tt([1.0, 2.0]), 1.5).log_prob(tt(v)).numpy(),
                 rtol=1e-5, atol=1e-5)
    assert D.Gamma(2.0, 1.0).batch_shape == () and D.Beta(2.0, 1.0).sample((3,)).shape == (3,)
    loc = np.zeros((4, 1, 3), dtype=np.float32)  # loc's batch broadcast against the covariance's
    d = D.MultivariateNormal(t(loc), t(COV))
    r = TD.MultivariateNormal(tt(loc), tt(COV))
    x = np.linspace(-1, 1, 5 * 4 * 2 * 3).reshape(5, 4, 2, 3)
    assert d.batch_shape == (4, 2) and d.sample((5,)).shape == (5, 4, 2, 3)
    assert_close(d.log_prob(t(x)), r.log_prob(tt(x)).numpy(), rtol=2e-5, atol=2e-5)


def test_enumerate_support(device):
    for expand in (True, False):
        got = D.Binomial(vkt.tensor([4.0, 4.0], device=device), vkt.tensor([0.2, 0.7], device=device))
        want = TD.Binomial(torch.tensor([4.0, 4.0]), torch.tensor([0.2, 0.7]))
        assert_close(got.enumerate_support(expand), want.enumerate_support(expand).numpy())


N = 10000  # draws per statistic


def check_moments(x, mean, var, k=5.0, rel=0.15):
    """The sample mean within k standard errors of mean, and the sample variance within rel of var."""
    x = x.cpu().numpy().astype(np.float64)
    mean, var = np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
    assert np.all(np.abs(x.mean(0) - mean) <= k * np.sqrt(var / x.shape[0])), (x.mean(0), mean)
    assert np.all(np.abs(x.var(0) - var) <= rel * var), (x.var(0), var)


# Parameters with finite fourth moments, so the variance of N draws is itself known to a few percent.
MOMENT_PARAMS = dict(PARAMS, StudentT={"df": [6.0, 8.0, 12.0], "loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]},
                     Pareto={"scale": [1.0, 0.5, 2.0], "alpha": [6.0, 7.0, 9.0]},
                     Weibull={"scale": [1.0, 0.5, 2.0], "concentration": [1.0, 2.0, 3.5]})
# HalfCauchy has no moments (its quantiles are tested instead); torch's TransformedDistribution has no mean.
MOMENT_CASES = [c for c in CASES if "/" not in c and c not in ("HalfCauchy", "TransformedDistribution")]


@pytest.mark.parametrize("case", MOMENT_CASES)
def test_sample_moments(case, device):
    vkt.manual_seed(1234)
    vkt.vulkan.reset_fallback_stats()
    spec = MOMENT_PARAMS[case]
    d = make(vkt, case, {k: vkt.tensor(np.array(v, dtype=np.float32), device=device) for k, v in spec.items()})
    r = make(torch, case, {k: torch.tensor(np.array(v, dtype=np.float32)) for k, v in spec.items()})
    x = d.sample((N,))
    assert x.device == vkt.device(device) if device == "cpu" else str(x.device).startswith("vulkan")
    check_moments(x, r.mean.numpy(), r.variance.numpy())
    assert bool(d.support.check(x).all())
    if r.has_rsample:
        check_moments(d.rsample((N,)).detach(), r.mean.numpy(), r.variance.numpy())
    if case == "MultivariateNormal":  # the sample covariance of the second batch member
        y = x.cpu().numpy()[:, 1].astype(np.float64)
        assert np.all(np.abs(np.cov(y.T) - COV[1]) < 0.1)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


# Binomial and NegativeBinomial over both of each sampler's algorithms (inversion or the product of uniforms for a
# mean below 10, BTRS or PTRS above), counted from either end, and their edges: no trials, p 0 and 1, large n.
COUNT_SAMPLES = [
    ("Binomial", {"total_count": [0.0, 5.0, 5.0, 8.0, 40.0, 25.0], "probs": [0.3, 0.0, 1.0, 0.3, 0.6, 0.95]}),
    ("Binomial", {"total_count": [60.0, 1000.0, 1e6, 1e6, 3.0, 200.0], "probs": [0.2, 0.5, 0.3, 2e-6, 0.5, 0.99]}),
    ("Binomial/logits", {"total_count": [12.0, 500.0, 7.0], "logits": [-3.0, 0.5, 4.0]}),
    ("NegativeBinomial", {"total_count": [0.0, 2.0, 5.0, 0.5, 30.0, 100.0], "probs": [0.5, 0.2, 0.5, 0.7, 0.9, 0.0]}),
    ("NegativeBinomial/logits", {"total_count": [3.0, 1000.0, 40.0], "logits": [-1.0, 2.0, 0.3]}),
]


@pytest.mark.parametrize("case,spec", COUNT_SAMPLES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(COUNT_SAMPLES)])
def test_count_sample_moments(case, spec, device):
    """Draws made on the distribution's device (no fallback), in its dtype and shape, with torch's mean and
    variance; constant where the distribution is (a variance of 0, or one of float32's clamped probs' rounding)."""
    vkt.manual_seed(4321)
    vkt.vulkan.reset_fallback_stats()
    d = make(vkt, case, {k: vkt.tensor(np.array(v, dtype=np.float32), device=device) for k, v in spec.items()})
    r = make(torch, case, {k: torch.tensor(np.array(v, dtype=np.float32)) for k, v in spec.items()})
    x = d.sample((N,))
    assert x.dtype == vkt.float32 and tuple(x.shape) == (N, len(spec["total_count"]))
    assert str(x.device).startswith(device)
    mean, var = r.mean.double().numpy(), r.variance.double().numpy()
    constant = var < 1e-4
    y = x.cpu().numpy().astype(np.float64)
    assert np.all(y[:, constant] == mean[constant].round())
    check_moments(x[:, vkt.tensor(np.flatnonzero(~constant), device=device)], mean[~constant], var[~constant])
    assert bool(d.support.check(x).all())
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


def test_half_cauchy_quantiles(device):
    vkt.manual_seed(7)
    d = D.HalfCauchy(vkt.tensor([0.5, 3.0], device=device))
    x = d.sample((N,)).cpu().numpy()
    for p in [0.25, 0.5, 0.75]:
        q = d.icdf(vkt.tensor(p, device=device)).cpu().numpy()
        assert np.all(np.abs((x <= q).mean(0) - p) <= 5 * np.sqrt(p * (1 - p) / N))


def test_standard_gamma_grad_formula(device):
    """vkt's pathwise derivative d x / d alpha against torch._standard_gamma_grad over all three of its regimes
    (x < 0.8, alpha > 8 near and far from the mode, and the rational fit between)."""
    from vkt.random import _standard_gamma_grad
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 2.5, 7.9, 12.0, 12.0, 12.0, 50.0, 50.0, 3.0, 0.7])
    x = np.array([1e-4, 0.5, 0.79, 0.81, 3.0, 20.0, 11.5, 5.0, 20.0, 52.0, 30.0, 0.0, 4.0])
    for dtype, tol in (("float32", 2e-5), ("float64", 1e-10)):
        if device == "vulkan" and dtype == "float64":
            continue
        want = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
        got = _standard_gamma_grad(vkt.tensor(alpha.astype(dtype), device=device),
                                   vkt.tensor(x.astype(dtype), device=device))
        assert_close(got, want, rtol=tol * 10, atol=tol)


def test_rsample_gradients(device):
    """Gamma's rsample gradient is torch's formula at vkt's own draws; Beta's, Dirichlet's and the others' match
    the derivatives of their means over many draws."""
    vkt.manual_seed(99)
    vkt.vulkan.reset_fallback_stats()
    t = lambda v: vkt.tensor(np.array(v, dtype=np.float32), device=device, requires_grad=True)  # noqa: E731
    conc, rate = t([0.4, 2.5, 12.0]), t([1.0, 2.0, 0.5])
    x = D.Gamma(conc, rate).rsample((200,))
    x.sum().backward()
    xs = torch.tensor(x.detach().cpu().numpy().astype(np.float64))
    c, r = torch.tensor([0.4, 2.5, 12.0], dtype=torch.float64), torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    want = (torch._standard_gamma_grad(c.expand(200, 3), xs * r) / r).sum(0).numpy()
    assert_close(conc.grad, want, rtol=2e-4, atol=2e-4)
    assert_close(rate.grad, (-xs / r).sum(0).numpy(), rtol=2e-4, atol=2e-4)
    # d E[x] / d parameters, over N draws: Beta's E = a / (a + b), Dirichlet's a_i / sum(a), StudentT's loc
    a, b = t([0.5, 2.0]), t([1.5, 3.0])
    D.Beta(a, b).rsample((N,)).mean(0).sum().backward()
    a_, b_ = np.array([0.5, 2.0]), np.array([1.5, 3.0])
    assert np.all(np.abs(a.grad.cpu().numpy() - b_ / (a_ + b_) ** 2) < 0.03)
    assert np.all(np.abs(b.grad.cpu().numpy() + a_ / (a_ + b_) ** 2) < 0.03)
    alpha = t([1.0, 2.0, 3.0])
    D.Dirichlet(alpha).rsample((N,))[:, 0].mean().backward()  # d (a_0 / sum) / d a = (sum - a_0, -a_0, -a_0) / sum^2
    assert np.all(np.abs(alpha.grad.cpu().numpy() - np.array([5.0, -1.0, -1.0]) / 36) < 0.01)
    df, loc, scale = t([5.0]), t([1.0]), t([2.0])
    D.StudentT(df, loc, scale).rsample((N,)).mean().backward()
    assert abs(loc.grad.item() - 1) < 1e-5 and abs(scale.grad.item()) < 0.05 and df.grad is not None
    loc, tril = t([0.5, -1.0]), t([[1.0, 0.0], [0.5, 2.0]])
    D.MultivariateNormal(loc, scale_tril=tril).rsample((N,)).mean(0).sum().backward()
    assert_close(loc.grad, np.ones(2), rtol=0, atol=1e-5)
    c1, c0 = t([2.0]), t([3.0])
    D.Kumaraswamy(c1, c0).rsample((N,)).mean().backward()
    g = TD.Kumaraswamy(torch.tensor([2.0], requires_grad=True), torch.tensor([3.0]))
    g.mean.backward()
    assert c1.grad is not None and abs(c1.grad.item() - g.concentration1.grad.item()) < 0.01
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


def test_standard_gamma(device):
    """vkt._standard_gamma: on its input's device, repeatable from a seed or a Generator, 0 at alpha = 0, and
    torch's errors."""
    alpha = vkt.tensor([0.0, 0.5, 3.0], device=device)
    vkt.manual_seed(3)
    x = vkt._standard_gamma(alpha)
    vkt.manual_seed(3)
    assert (vkt._standard_gamma(alpha).cpu().numpy() == x.cpu().numpy()).all()
    assert x[0].item() == 0.0 and bool((x[1:] > 0).all()) and str(x.device) == str(alpha.device)
    g = vkt.Generator().manual_seed(1)
    y = vkt._standard_gamma(alpha, generator=g)
    assert (vkt._standard_gamma(alpha, generator=vkt.Generator().manual_seed(1)).cpu().numpy() == y.cpu().numpy()).all()
    want = raised(lambda: torch._standard_gamma(torch.tensor([1, 2])))
    assert raised(lambda: vkt._standard_gamma(vkt.tensor([1, 2], device="cpu"))) == want
    assert vkt._standard_gamma(vkt.tensor([2.0], dtype=vkt.float64)).dtype == vkt.float64


TRANSFORMS = [
    ("ExpTransform", (), [0.5, -1.0, 2.0]),
    ("SigmoidTransform", (), [0.5, -1.0, 2.0]),
    ("SoftplusTransform", (), [0.5, -1.0, 2.0]),
    ("TanhTransform", (), [0.5, -1.0, 2.0]),
    ("PowerTransform", ([0.5, 2.0, 3.0],), [0.5, 1.5, 2.0]),
    ("AffineTransform", (1.0, -2.0), [0.5, -1.0, 2.0]),
    ("AffineTransform", ([1.0, 0.0, 2.0], [0.5, 2.0, -1.0]), [0.5, -1.0, 2.0]),
    ("SoftmaxTransform", (), [0.5, -1.0, 2.0]),
    ("AbsTransform", (), [0.5, -1.0, 2.0]),
    ("LowerCholeskyTransform", (), [[0.5, 3.0], [-1.0, 2.0]]),
]


def make_transform(lib, name, args, dtype="float64"):
    args = [lib.tensor(np.array(a, dtype=dtype)) if isinstance(a, list) else a for a in args]
    return getattr(lib.distributions.transforms, name)(*args)


@pytest.mark.parametrize("index", range(len(TRANSFORMS)))
def test_transforms(index, device):
    name, args, x = TRANSFORMS[index]
    tv = make_transform(vkt, name, args, "float32")
    tr = make_transform(torch, name, args, "float32")
    if device == "vulkan":
        args = [vkt.tensor(np.array(a, dtype=np.float32), device=device) if isinstance(a, list) else a for a in args]
        tv = getattr(D.transforms, name)(*args)
    xv = vkt.tensor(np.array(x, dtype=np.float32), device=device)
    xr = torch.tensor(np.array(x, dtype=np.float32))
    yv, yr = tv(xv), tr(xr)
    assert_close(yv, yr.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(tv.inv(yv), tr.inv(yr).numpy(), rtol=1e-4, atol=1e-5)
    if name not in ("SoftmaxTransform", "AbsTransform", "LowerCholeskyTransform"):
        assert_close(tv.log_abs_det_jacobian(xv, yv), tr.log_abs_det_jacobian(xr, yr).numpy(), rtol=1e-5, atol=1e-5)
        assert_close(tv.inv.log_abs_det_jacobian(yv, xv), tr.inv.log_abs_det_jacobian(yr, xr).numpy(),
                     rtol=1e-5, atol=1e-5)
    for attr in ("domain", "codomain"):
        assert repr(getattr(tv, attr)) == repr(getattr(tr, attr))
        assert repr(getattr(tv.inv, attr)) == repr(getattr(tr.inv, attr))
    assert tv.bijective == tr.bijective and repr(tv) == repr(tr) and repr(tv.inv) == repr(tr.inv)
    assert tv.inv.inv is tv and tv == tv and tv.inv == tv.inv
    assert tv.forward_shape((4, 3)) == tuple(tr.forward_shape(torch.Size((4, 3))))
    try:
        want_sign = tr.sign
    except NotImplementedError:
        assert raised(lambda: tv.sign)[0] == "NotImplementedError"
    else:
        got_sign = tv.sign
        assert_close(got_sign, np.asarray(want_sign))


def test_compose_and_cache(device):
    T, TT = D.transforms, TD.transforms
    parts = [T.ExpTransform(), T.AffineTransform(1.0, 2.0), T.PowerTransform(vkt.tensor(0.5, device=device))]
    parts_r = [TT.ExpTransform(), TT.AffineTransform(1.0, 2.0), TT.PowerTransform(torch.tensor(0.5))]
    c, cr = T.ComposeTransform(parts), TT.ComposeTransform(parts_r)
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    xv, xr = vkt.tensor(x, device=device), torch.tensor(x)
    y, yr = c(xv), cr(xr)
    assert_close(y, yr.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(c.inv(y), x, rtol=1e-5, atol=1e-5)
    assert_close(c.log_abs_det_jacobian(xv, y), cr.log_abs_det_jacobian(xr, yr).numpy(), rtol=1e-5, atol=1e-5)
    assert repr(c) == repr(cr) and repr(c.inv) == repr(cr.inv) and c.inv.inv is c
    assert c == T.ComposeTransform(list(parts)) and c.bijective and c.sign.item() == 1
    assert repr(T.identity_transform) == repr(TT.identity_transform)
    cached = T.ExpTransform(cache_size=1)
    z = vkt.tensor([800.0], dtype=vkt.float64, device="cpu")  # exp overflows: only the cache gives z back
    assert cached.inv(cached(z)) is z
    ind = T.IndependentTransform(T.ExpTransform(), 1)
    indr = TT.IndependentTransform(TT.ExpTransform(), 1)
    assert repr(ind.domain) == repr(indr.domain) and ind.log_abs_det_jacobian(xv, ind(xv)).shape == ()
    assert_close(ind.log_abs_det_jacobian(xv, ind(xv)), indr.log_abs_det_jacobian(xr, indr(xr)).numpy(), rtol=1e-6)


def test_transformed_distribution(device):
    """User compositions: a LogNormal built from Normal and ExpTransform, and a Softmax-of-Normal over a vector,
    against torch, with rsample differentiable through the transforms."""
    t = lambda v: vkt.tensor(np.array(v, dtype=np.float32), device=device, requires_grad=True)  # noqa: E731
    tt = lambda v: torch.tensor(np.array(v, dtype=np.float32), requires_grad=True)  # noqa: E731
    loc, scale, tloc, tscale = t([0.0, 0.5]), t([0.3, 0.5]), tt([0.0, 0.5]), tt([0.3, 0.5])
    d = D.TransformedDistribution(D.Normal(loc, scale), [D.transforms.ExpTransform()])
    r = TD.TransformedDistribution(TD.Normal(tloc, tscale), [TD.transforms.ExpTransform()])
    v = np.array([0.5, 2.0], dtype=np.float32)
    lp, rlp = d.log_prob(vkt.tensor(v, device=device)), r.log_prob(torch.tensor(v))
    assert_close(lp.detach(), rlp.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_close(D.LogNormal(loc, scale).log_prob(vkt.tensor(v, device=device)).detach(), rlp.detach().numpy(),
                 rtol=1e-5, atol=1e-6)
    lp.sum().backward()
    rlp.sum().backward()
    assert_close(scale.grad, tscale.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(d.cdf(vkt.tensor(v, device=device)).detach(), r.cdf(torch.tensor(v)).detach().numpy(), rtol=1e-5)
    assert_close(d.icdf(vkt.tensor([0.2, 0.7], device=device)).detach(),
                 r.icdf(torch.tensor([0.2, 0.7])).detach().numpy(), rtol=1e-5)
    neg = D.TransformedDistribution(D.Normal(loc, scale), [D.transforms.AffineTransform(0.0, -1.0)])
    negr = TD.TransformedDistribution(TD.Normal(tloc, tscale), [TD.transforms.AffineTransform(0.0, -1.0)])
    assert_close(neg.cdf(vkt.tensor([0.1, -0.4], device=device)).detach(),  # a decreasing map flips the cdf
                 negr.cdf(torch.tensor([0.1, -0.4])).detach().numpy(), rtol=1e-5)
    vec = D.TransformedDistribution(D.Normal(loc, scale), [D.transforms.AffineTransform(loc, 2.0, event_dim=1)])
    vecr = TD.TransformedDistribution(TD.Normal(tloc, tscale), [TD.transforms.AffineTransform(tloc, 2.0, event_dim=1)])
    assert vec.batch_shape == tuple(vecr.batch_shape) and vec.event_shape == tuple(vecr.event_shape)
    assert_close(vec.log_prob(vkt.tensor(v, device=device)).detach(),
                 vecr.log_prob(torch.tensor(v)).detach().numpy(), rtol=1e-5, atol=1e-6)
    scale.grad = None
    x = d.rsample((5,))
    x.sum().backward()
    assert x.shape == (5, 2) and scale.grad is not None


def test_mixture_same_family_vector_components(device):
    """A mixture of MultivariateNormals: event_shape (3,), log_prob, mean and variance against torch."""
    t = lambda v: vkt.tensor(np.array(v, dtype=np.float32), device=device)  # noqa: E731
    tt = lambda v: torch.tensor(np.array(v, dtype=np.float32))  # noqa: E731
    loc = [[0.3, -1.0, 2.0], [0.0, 1.0, -2.0]]
    d = D.MixtureSameFamily(D.Categorical(t([0.3, 0.7])), D.MultivariateNormal(t(loc), t(COV)))
    r = TD.MixtureSameFamily(TD.Categorical(tt([0.3, 0.7])), TD.MultivariateNormal(tt(loc), tt(COV)))
    assert d.batch_shape == () and d.event_shape == (3,)
    v = np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.0]], dtype=np.float32)
    assert_close(d.log_prob(t(v)), r.log_prob(tt(v)).numpy(), rtol=1e-5, atol=1e-5)
    assert_close(d.mean, r.mean.numpy(), rtol=1e-6, atol=1e-6)
    assert_close(d.variance, r.variance.numpy(), rtol=1e-5, atol=1e-5)
    assert d.sample((4,)).shape == (4, 3) and repr(d.support) == repr(r.support)
