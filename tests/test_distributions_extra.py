# Tests of LowRankMultivariateNormal, Multinomial, VonMises and ContinuousBernoulli against torch.distributions
# (torch 2.13) on the cpu and vulkan devices: values and parameter gradients of log_prob, cdf, icdf, entropy and the
# moments over plain, broadcast and 0-d batches; the KL pairs torch registers for them; torch's validation errors;
# shapes, expand and repr; sample statistics and gradients of rsample-based expectations.
import re

import numpy as np
import pytest

import vkt
from conftest import assert_close, assert_same_outcome

torch = pytest.importorskip("torch")
D = vkt.distributions
TD = torch.distributions

_W = np.array([[[0.5, -0.2], [0.1, 0.8], [-0.6, 0.3]], [[1.0, 0.0], [0.2, -0.4], [0.3, 0.9]]])
_COV = np.array([[2.0, 0.3, -0.4], [0.3, 1.0, 0.2], [-0.4, 0.2, 1.5]])

# Each case: the family ("Family/variant" builds it another way), its parameters (lists become tensors that require
# grad; numbers stay numbers) and a value broadcastable with batch_shape + event_shape, inside the support (also
# the icdf's argument where the family has one).
CASES = {
    "LowRankMultivariateNormal": {
        "params": {"loc": [[0.3, -1.0, 2.0], [0.0, 1.0, -2.0]], "cov_factor": _W,
                   "cov_diag": [[1.0, 0.5, 2.0], [0.3, 1.0, 0.7]]},
        "value": [[0.1, -0.7, 3.0], [0.5, 0.5, -2.5]]},
    "LowRankMultivariateNormal/broadcast": {  # batch (2,) from cov_factor; loc and cov_diag broadcast
        "params": {"loc": [0.3, -1.0, 2.0], "cov_factor": _W[:, :, :1], "cov_diag": [[1.0, 0.5, 2.0]]},
        "value": [[[0.1, -0.7, 3.0]], [[0.5, 0.5, -2.5]], [[0.0, 0.0, 0.0]]]},
    "LowRankMultivariateNormal/unbatched": {
        "params": {"loc": [0.3, -1.0, 2.0], "cov_factor": _W[0], "cov_diag": [1.0, 0.5, 2.0]},
        "value": [0.1, -0.7, 3.0]},
    "Multinomial": {
        "params": {"total_count": 5, "probs": [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]},
        "value": [[1.0, 2.0, 2.0], [0.0, 0.0, 5.0]]},
    "Multinomial/logits": {  # batch (); values batched against it
        "params": {"total_count": 4, "logits": [0.5, -1.0, 2.0]},
        "value": [[1.0, 3.0, 0.0], [2.0, 1.0, 1.0]]},
    "VonMises": {
        "params": {"loc": [0.3, -1.0, 2.5], "concentration": [0.5, 2.0, 7.0]},
        "value": [0.1, -2.7, 4.0]},
    "VonMises/broadcast": {
        "params": {"loc": [[0.3], [-1.0]], "concentration": [0.5, 2.0, 7.0]},
        "value": [0.1, -2.7, 4.0]},
    "VonMises/scalar": {
        "params": {"loc": np.array(0.5), "concentration": np.array(3.0)},
        "value": [0.1, -2.7]},
    # 0.4995 and 0.5 are inside lims, where the Taylor series stand in
    "ContinuousBernoulli": {"params": {"probs": [0.2, 0.4995, 0.5, 0.9]}, "value": [0.3, 0.7, 0.5, 0.99]},
    "ContinuousBernoulli/logits": {"params": {"logits": [[-1.0, 0.0], [0.003, 2.5]]}, "value": [0.25, 0.8]},
    "ContinuousBernoulli/scalar": {"params": {"probs": np.array(0.3)}, "value": [0.0, 0.6]},
}
QUANTITIES = ["log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev"]
MATRICES = ["covariance_matrix", "precision_matrix", "scale_tril"]  # LowRankMultivariateNormal's own
TOL = {"float32": dict(rtol=5e-5, atol=5e-5), "float64": dict(rtol=1e-8, atol=1e-9)}
# torch's Multinomial.entropy takes lgamma of an int64 tensor, so its log n! is float32 even for float64 probs
LOOSER = {("Multinomial", "entropy", "float64"): dict(rtol=1e-7, atol=1e-7)}


def family(case):
    return case.split("/")[0]


def leaves(lib, spec, device, dtype, requires_grad=True):
    """Parameters as lib's tensors (that require grad); numbers (Multinomial's total_count) as they are."""
    out = {}
    for k, v in spec.items():
        if isinstance(v, (int, float)):
            out[k] = v
        elif lib is vkt:
            out[k] = vkt.tensor(np.array(v, dtype=dtype), device=device, requires_grad=requires_grad)
        else:
            out[k] = torch.tensor(np.array(v, dtype=dtype), requires_grad=requires_grad)
    return out


def make(lib, case, device, dtype):
    """case's distribution from lib (vkt or torch), with parameters that do not require grad."""
    return getattr(lib.distributions, family(case))(**leaves(lib, CASES[case]["params"], device, dtype, False))


def tensor(lib, values, device, dtype):
    if lib is vkt:
        return vkt.tensor(np.array(values, dtype=dtype), device=device)
    return torch.tensor(np.array(values, dtype=dtype))


def outcome(lib, case, device, dtype, what):
    """What `what` gives for case (its value, the parameters' gradients of its sum, its shape), or the exception's
    type name."""
    params = leaves(lib, CASES[case]["params"], device, dtype)
    d = getattr(lib.distributions, family(case))(**params)
    value = tensor(lib, CASES[case]["value"], device, dtype)
    calls = {"log_prob": lambda: d.log_prob(value), "cdf": lambda: d.cdf(value), "icdf": lambda: d.icdf(value),
             "entropy": d.entropy}
    try:
        out = calls[what]() if what in calls else getattr(d, what)
    except NotImplementedError:
        return "NotImplementedError", None, None
    grads = None
    if out.requires_grad:
        out.sum().backward()
        grads = {k: None if p.grad is None else p.grad.cpu().numpy()
                 for k, p in params.items() if not isinstance(p, (int, float))}
    return out.detach().cpu().numpy(), grads, tuple(out.shape)


def devices_dtypes():
    return [("cpu", "float32"), ("cpu", "float64"), ("vulkan", "float32")]


def on_device(device, request):
    if device == "vulkan":
        request.getfixturevalue("dev")
        vkt.vulkan.reset_fallback_stats()


@pytest.mark.parametrize("device_dtype", devices_dtypes(), ids=lambda x: "-".join(x))
@pytest.mark.parametrize("case", list(CASES))
def test_values_and_gradients(case, device_dtype, request):
    device, dtype = device_dtype
    on_device(device, request)
    extra = MATRICES if family(case) == "LowRankMultivariateNormal" else []
    for what in QUANTITIES + extra:
        tol = LOOSER.get((family(case), what, dtype), TOL[dtype])
        assert_same_outcome(outcome(vkt, case, device, dtype, what), outcome(torch, case, "cpu", dtype, what), tol,
                            what)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


# Distributions for KL(p || q), by name: the family and its parameters (a batch of 2 for the Gaussians, 3 else).
KL_DISTS = {
    "LowRank": ("LowRankMultivariateNormal", CASES["LowRankMultivariateNormal"]["params"]),
    "LowRank/q": ("LowRankMultivariateNormal", {"loc": [0.0, 0.5, 1.0], "cov_factor": [[0.3], [-0.5], [1.0]],
                                                "cov_diag": [[0.5, 1.0, 1.5], [2.0, 0.4, 1.0]]}),
    "MVN": ("MultivariateNormal", {"loc": [[0.0, 0.5, 1.0], [1.0, 1.0, -1.0]],
                                   "scale_tril": np.linalg.cholesky(np.stack([_COV, _COV + np.eye(3)]))}),
    "CB": ("ContinuousBernoulli", {"probs": [0.2, 0.4995, 0.9]}),
    "CB/q": ("ContinuousBernoulli", {"logits": [0.5, -2.0, 0.001]}),
    "Beta": ("Beta", {"concentration1": [0.5, 2.0, 7.0], "concentration0": [1.5, 0.5, 3.0]}),
    "Exponential": ("Exponential", {"rate": [1.5, 0.3, 2.0]}),
    "Normal": ("Normal", {"loc": [0.0, 1.0, 2.5], "scale": [2.0, 0.7, 1.0]}),
    "Uniform/wide": ("Uniform", {"low": [-0.5, -1.0, 0.2], "high": [1.5, 1.2, 2.0]}),  # the third misses [0, 0.2)
    "Uniform/inside": ("Uniform", {"low": [0.1, 0.2, 0.0], "high": [0.5, 0.9, 0.5]}),  # the third touches 0
    "Pareto": ("Pareto", {"scale": [1.0, 0.5, 2.0], "alpha": [0.5, 2.5, 3.5]}),
    "Gamma": ("Gamma", {"concentration": [0.5, 2.0, 7.0], "rate": [1.0, 0.5, 3.0]}),
    "Gumbel": ("Gumbel", {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]}),
    "Laplace": ("Laplace", {"loc": [0.3, -1.0, 2.0], "scale": [1.0, 0.5, 2.0]}),
}
KL_PAIRS = [
    ("LowRank", "LowRank/q"), ("LowRank", "MVN"), ("MVN", "LowRank/q"), ("LowRank/q", "LowRank"),
    ("CB", "CB/q"), ("CB/q", "CB"), ("Beta", "CB"), ("CB", "Exponential"), ("CB", "Normal"), ("CB", "Uniform/wide"),
    ("Uniform/inside", "CB"), ("CB", "Pareto"), ("Exponential", "CB"), ("Gamma", "CB"), ("Gumbel", "CB"),
    ("Laplace", "CB"), ("Normal", "CB"), ("Pareto", "CB"),
]


def kl_outcome(lib, pair, device, dtype):
    (p_family, p_spec), (q_family, q_spec) = KL_DISTS[pair[0]], KL_DISTS[pair[1]]
    p_params, q_params = leaves(lib, p_spec, device, dtype), leaves(lib, q_spec, device, dtype)
    dists = lib.distributions
    kl = dists.kl_divergence(getattr(dists, p_family)(**p_params), getattr(dists, q_family)(**q_params))
    grads = {}
    if kl.requires_grad:
        kl.sum().backward()
        grads = {f"{side}.{k}": None if t.grad is None else t.grad.cpu().numpy()
                 for side, params in (("p", p_params), ("q", q_params)) for k, t in params.items()}
    return kl.detach().cpu().numpy(), grads


@pytest.mark.parametrize("device_dtype", devices_dtypes(), ids=lambda x: "-".join(x))
def test_kl_divergence(device_dtype, request):
    device, dtype = device_dtype
    on_device(device, request)
    for pair in KL_PAIRS:
        ref, ref_grads = kl_outcome(torch, pair, "cpu", dtype)
        got, got_grads = kl_outcome(vkt, pair, device, dtype)
        assert_close(got, ref, **TOL[dtype])
        assert got_grads.keys() == ref_grads.keys(), pair
        for k, g in ref_grads.items():
            if g is None:  # torch leaves an unused grad None; vkt may give zeros through where()
                assert got_grads[k] is None or not np.any(got_grads[k]), (pair, k)
            else:
                assert_close(got_grads[k], g, **TOL[dtype])
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


def as_vkt(message):
    """torch's message as vkt writes it: shapes as tuples."""
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)", lambda m: str(tuple(int(s) for s in m.group(1).split(", ") if s)),
                  message)


def error(lib, call):
    """(type name, message) of what call raises, torch's message written as vkt writes it."""
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        if lib is torch:
            return type(e).__name__, as_vkt(str(e))
        # vkt's broadcast error names the shapes after torch's message
        message = re.sub(r": shapes \[[^\]]*\] and \[[^\]]*\] cannot be broadcast$", "", str(e))
        return type(e).__name__, message.replace(", device='vulkan:0'", "")
    return None, ""


INVALID = [
    lambda L, t: L.distributions.LowRankMultivariateNormal(t(0.0), t([[1.0]]), t([1.0])),
    lambda L, t: L.distributions.LowRankMultivariateNormal(t([0.0, 0.0]), t([1.0, 1.0]), t([1.0, 1.0])),
    lambda L, t: L.distributions.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0], [1.0], [1.0]]), t([1.0, 1.0])),
    lambda L, t: L.distributions.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0], [1.0]]), t([1.0, 1.0, 1.0])),
    lambda L, t: L.distributions.LowRankMultivariateNormal(t([[0.0, 0.0]] * 2), t([[[1.0], [1.0]]] * 3),
                                                           t([1.0, 1.0])),
    lambda L, t: L.distributions.LowRankMultivariateNormal(t([0.0, 0.0]), t([[0.1], [0.1]]), t([1.0, -1.0])),
    lambda L, t: L.distributions.LowRankMultivariateNormal(t([0.0, 0.0]), t([[0.1], [0.1]]),
                                                           t([1.0, 1.0])).log_prob(t([1.0, 1.0, 1.0])),
    lambda L, t: L.distributions.Multinomial(2.5, t([0.5, 0.5])),
    lambda L, t: L.distributions.Multinomial(3),
    lambda L, t: L.distributions.Multinomial(3, t(0.5)),
    lambda L, t: L.distributions.Multinomial(3, t([-0.5, 1.0])),
    lambda L, t: L.distributions.Multinomial(3, t([0.5, 0.5])).log_prob(t([1.0, 3.0])),
    lambda L, t: L.distributions.Multinomial(3, t([0.5, 0.5])).log_prob(t([1.0, 1.0, 1.0])),
    lambda L, t: L.distributions.VonMises(0.0, -1.0),
    lambda L, t: L.distributions.VonMises(t([0.0, 1.0]), t([1.0, 0.0])),
    lambda L, t: L.distributions.VonMises(t([0.0, 1.0]), t([1.0, 1.0, 1.0])),
    lambda L, t: L.distributions.VonMises(t(0.0), t(1.0)).log_prob(t(float("nan"))),
    lambda L, t: L.distributions.ContinuousBernoulli(),
    lambda L, t: L.distributions.ContinuousBernoulli(t(0.5), t(0.0)),
    lambda L, t: L.distributions.ContinuousBernoulli(t(1.5), validate_args=True),
    lambda L, t: L.distributions.ContinuousBernoulli(t([0.3, -0.1]), validate_args=False),
    lambda L, t: L.distributions.ContinuousBernoulli(t(0.3)).log_prob(t(1.5)),
    lambda L, t: L.distributions.ContinuousBernoulli(t([0.3])).cdf(t([-0.5])),
    lambda L, t: L.distributions.kl_divergence(
        L.distributions.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0], [1.0]]), t([1.0, 1.0])),
        L.distributions.MultivariateNormal(t([0.0]), t([[1.0]]))),
]


def test_validation_errors(device):
    for index, call in enumerate(INVALID):
        want = error(torch, lambda: call(torch, lambda v: torch.tensor(v)))
        got = error(vkt, lambda: call(vkt, lambda v: vkt.tensor(v, device=device)))
        assert want[0] is not None, index
        assert got == want, index


def test_constraints_shapes_and_repr(device):
    """support, arg_constraints, has_rsample, shapes and repr as torch's; sample and rsample shapes, dtypes and
    devices; expand; numbers as parameters."""
    vkt.manual_seed(3)
    for case, spec in CASES.items():
        for dtype in ("float32", "float64"):
            d, r = make(vkt, case, device, dtype), make(torch, case, "cpu", dtype)
            assert repr(d.support) == repr(r.support), case
            shown = [{k: repr(c) for k, c in x.arg_constraints.items()} for x in (d, r)]
            assert shown[0] == shown[1], case
            assert (d.has_rsample, d.has_enumerate_support) == (r.has_rsample, r.has_enumerate_support), case
            assert d.batch_shape == tuple(r.batch_shape) and d.event_shape == tuple(r.event_shape), case
            assert repr(d) == as_vkt(repr(r)), case
            assert isinstance(d, D.ExponentialFamily) == isinstance(r, TD.ExponentialFamily), case
            for shape in [(), (2, 3)]:
                x = d.sample(shape)
                assert x.shape == tuple(r.sample(shape).shape) and x.dtype == getattr(vkt, dtype), (case, shape)
                assert x.device.type == device and bool(d.support.check(x).all()), (case, shape)
                if r.has_rsample:
                    assert d.rsample(shape).shape == x.shape, (case, shape)
            big = (4, 1) + tuple(r.batch_shape)
            de, re_ = d.expand(big), r.expand(big)
            assert de.batch_shape == big and de.event_shape == tuple(re_.event_shape) and type(de) is type(d)
            v = spec["value"]
            want = re_.log_prob(tensor(torch, v, "cpu", dtype)).numpy()
            assert_close(de.log_prob(tensor(vkt, v, device, dtype)), want, **TOL[dtype])
            assert de.sample((2,)).shape == (2,) + big + de.event_shape, case
    assert D.VonMises(0.5, 2.0).batch_shape == () and D.VonMises(0.5, 2.0).sample((3,)).dtype == vkt.float32
    assert D.ContinuousBernoulli(0.3).batch_shape == () and D.ContinuousBernoulli(logits=1.0).rsample().shape == ()
    assert_close(D.ContinuousBernoulli(0.3).log_prob(vkt.tensor(0.2)),
                 TD.ContinuousBernoulli(0.3).log_prob(torch.tensor(0.2)).numpy(), rtol=1e-6)
    m = D.Multinomial(6, vkt.tensor([0.2, 0.8], device=device)).expand((3,))
    assert m.entropy().shape == (3,) and m.param_shape == (3, 2)


N = 20000  # draws per statistic


def check_moments(x, mean, var, k=5.0, rel=0.1):
    """The sample mean within k standard errors of mean, and the sample variance within rel of var."""
    x = x.cpu().numpy().astype(np.float64)
    mean, var = np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
    assert np.all(np.abs(x.mean(0) - mean) <= k * np.sqrt(var / x.shape[0])), (x.mean(0), mean)
    assert np.all(np.abs(x.var(0) - var) <= rel * var), (x.var(0), var)


@pytest.mark.parametrize("case", ["LowRankMultivariateNormal", "Multinomial", "ContinuousBernoulli"])
def test_sample_moments(case, device):
    vkt.manual_seed(1234)
    vkt.vulkan.reset_fallback_stats()
    d, r = make(vkt, case, device, "float32"), make(torch, case, "cpu", "float32")
    x = d.sample((N,))
    check_moments(x, r.mean.numpy(), r.variance.numpy())
    if r.has_rsample:
        check_moments(d.rsample((N,)).detach(), r.mean.numpy(), r.variance.numpy())
    if case == "Multinomial":
        assert (x.sum(-1).cpu().numpy() == r.total_count).all()
    if case == "LowRankMultivariateNormal":  # the sample covariance of the second batch member
        y = x.cpu().numpy()[:, 1].astype(np.float64)
        assert np.all(np.abs(np.cov(y.T) - r.covariance_matrix[1].numpy()) < 0.1)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


def test_von_mises_samples(device):
    """Circular moments: E[cos(x - loc)] = I1/I0 = 1 - variance and E[sin(x - loc)] = 0, from a concentration of
    1e-4 (where float32 proposals never end) to 50; samples in [-pi, pi), of the parameters' dtype."""
    vkt.manual_seed(7)
    vkt.vulkan.reset_fallback_stats()
    loc, conc = np.array([0.5, -3.0, 2.0, 1.0], dtype=np.float32), np.array([1e-4, 0.7, 4.0, 50.0], dtype=np.float32)
    d = D.VonMises(vkt.tensor(loc, device=device), vkt.tensor(conc, device=device))
    x = d.sample((N,))
    assert x.dtype == vkt.float32 and x.device.type == device and x.shape == (N, 4)
    x = x.cpu().numpy().astype(np.float64)
    assert np.all((x >= -np.pi) & (x < np.pi))
    resultant = 1 - TD.VonMises(torch.tensor(loc), torch.tensor(conc)).variance.numpy()
    cos, sin = np.cos(x - loc), np.sin(x - loc)
    assert np.all(np.abs(cos.mean(0) - resultant) <= 5 * cos.std(0) / np.sqrt(N)), (cos.mean(0), resultant)
    assert np.all(np.abs(sin.mean(0)) <= 5 * sin.std(0) / np.sqrt(N)), sin.mean(0)
    if device == "vulkan":  # its float64 ops take the CPU only on an adapter without shaderFloat64 (README)
        assert set(vkt.vulkan.fallback_stats()) <= {"cos", "acos", "log"}


def test_rsample_gradients(device):
    """Gradients of E[x + x^2] estimated through rsample over N draws against torch's estimates of the same (inside
    ContinuousBernoulli's lims its rsample is the uniform draw itself, so both give 0 there)."""
    vkt.manual_seed(99)
    torch.manual_seed(99)
    vkt.vulkan.reset_fallback_stats()
    for case, spec, tol in [("LowRankMultivariateNormal", CASES["LowRankMultivariateNormal"]["params"], 0.1),
                            ("ContinuousBernoulli", {"probs": [0.1, 0.4995, 0.7]}, 0.02)]:
        got, want = leaves(vkt, spec, device, "float32"), leaves(torch, spec, "cpu", "float32")
        for lib, params in ((vkt, got), (torch, want)):
            x = getattr(lib.distributions, case)(**params).rsample((N,))
            (x + x.pow(2)).mean(0).sum().backward()
        for k, p in got.items():
            ref = want[k].grad.numpy()
            assert np.all(np.abs(p.grad.cpu().numpy() - ref) <= tol * (1 + np.abs(ref))), (case, k)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}
