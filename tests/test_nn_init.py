# vkt.nn.init against torch.nn.init: gains and fans exactly, distributions by their statistics over a
# large tensor, in place on both devices and repeatable under vkt.manual_seed; and vkt.nn.utils
# (clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters) against torch's.
import math

import numpy as np
import pytest
import torch

import vkt
from vkt import nn
from vkt.nn import init

from conftest import assert_close

N = (256, 300)  # 76,800 draws: a mean or std off by more than ~2% is a bug, not chance


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("selu",),
                                  ("leaky_relu",), ("leaky_relu", 0.2), ("leaky_relu", 3), ("conv_transpose3d",)])
def test_calculate_gain(args):
    assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("args,exc", [(("softmax",), ValueError), (("leaky_relu", True), ValueError),
                                      (("leaky_relu", "x"), ValueError)])
def test_calculate_gain_errors(args, exc):
    with pytest.raises(exc) as ref:
        torch.nn.init.calculate_gain(*args)
    with pytest.raises(exc) as got:
        init.calculate_gain(*args)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3), (8, 3, 3, 3), (2, 4, 1, 2, 5), (4,)])
def test_fans(shape):
    t = torch.empty(shape)
    if len(shape) < 2:
        with pytest.raises(ValueError) as ref:
            torch.nn.init._calculate_fan_in_and_fan_out(t)
        with pytest.raises(ValueError) as got:
            init._calculate_fan_in_and_fan_out(vkt.empty(*shape))
        assert str(got.value) == str(ref.value)
        return
    assert init._calculate_fan_in_and_fan_out(vkt.empty(*shape)) == torch.nn.init._calculate_fan_in_and_fan_out(t)


def sample(device, fn, *args, shape=N, dtype=vkt.float32, **kwargs):
    t = vkt.empty(*shape, device=device, dtype=dtype, requires_grad=True)
    vkt.vulkan.reset_fallback_stats()
    out = fn(t, *args, **kwargs)
    if device == "vulkan" and dtype == vkt.float32:
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()
    assert out is t and t.device.type == device and t.requires_grad and t.is_leaf and t.grad_fn is None
    return t.detach().cpu().numpy().astype(np.float64)


def check_uniform(v, lo, hi):
    slack = 1e-6 * max(abs(lo), abs(hi))  # the bounds rounded to float32
    assert v.min() >= lo - slack and v.max() <= hi + slack
    width = hi - lo
    assert abs(v.mean() - (lo + hi) / 2) < 0.01 * width
    assert abs(v.std() - width / math.sqrt(12)) < 0.01 * width


def check_normal(v, mean, std):
    """Sample mean and standard deviation within 5 standard errors of N(mean, std^2)'s (std / sqrt(n) and
    std / sqrt(2n)): a fixed fraction of std failed now and then with the stream's state left by other tests."""
    n = v.size
    assert abs(v.mean() - mean) < 5 * std / math.sqrt(n)
    assert abs(v.std() - std) < 5 * std / math.sqrt(2 * n)


def test_uniform_normal_constant(device):
    check_uniform(sample(device, init.uniform_), 0, 1)
    check_uniform(sample(device, init.uniform_, -3.0, 5.0), -3, 5)
    check_normal(sample(device, init.normal_), 0, 1)
    check_normal(sample(device, init.normal_, 2.0, 0.5), 2, 0.5)
    assert np.all(sample(device, init.constant_, 0.75, shape=(3, 4)) == 0.75)
    assert np.all(sample(device, init.ones_, shape=(5,)) == 1)
    assert np.all(sample(device, init.zeros_, shape=(2, 2, 2)) == 0)
    np.testing.assert_array_equal(sample(device, init.eye_, shape=(3, 5)), np.eye(3, 5))
    check_uniform(sample(device, init.uniform_, -1.0, 1.0, dtype=vkt.float16), -1, 1)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, 0.0, 3.0), (0.0, 0.02, -0.04, 0.04)])
def test_trunc_normal(mean, std, a, b, device):
    v = sample(device, init.trunc_normal_, mean, std, a, b)
    assert v.min() >= a and v.max() <= b
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = [math.exp(-z * z / 2) / math.sqrt(2 * math.pi) for z in (alpha, beta)]
    z = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
    exp_mean = mean + (pdf[0] - pdf[1]) / z * std
    exp_var = std**2 * (1 + (alpha * pdf[0] - beta * pdf[1]) / z - ((pdf[0] - pdf[1]) / z) ** 2)
    check_normal(v, exp_mean, math.sqrt(exp_var))


@pytest.mark.parametrize("shape", [(256, 300), (64, 32, 3, 3)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier(shape, gain, device):
    t = torch.empty(shape)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(t)
    std = gain * math.sqrt(2 / (fan_in + fan_out))
    bound = math.sqrt(3) * std
    check_uniform(sample(device, init.xavier_uniform_, gain, shape=shape), -bound, bound)
    check_normal(sample(device, init.xavier_normal_, gain, shape=shape), 0, std)


@pytest.mark.parametrize("a,mode,nonlinearity", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                                 (0, "fan_out", "relu"), (0.1, "FAN_OUT", "tanh")])
@pytest.mark.parametrize("shape", [(256, 300), (64, 32, 3, 3)])
def test_kaiming(a, mode, nonlinearity, shape, device):
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    fan = fan_in if mode.lower() == "fan_in" else fan_out
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3) * std
    check_uniform(sample(device, init.kaiming_uniform_, a, mode, nonlinearity, shape=shape), -bound, bound)
    check_normal(sample(device, init.kaiming_normal_, a, mode, nonlinearity, shape=shape), 0, std)


def test_kaiming_errors_and_empty():
    with pytest.raises(ValueError) as ref:
        torch.nn.init.kaiming_uniform_(torch.empty(3, 4), mode="fan_avg")
    with pytest.raises(ValueError) as got:
        init.kaiming_uniform_(vkt.empty(3, 4), mode="fan_avg")
    assert str(got.value) == str(ref.value)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(vkt.empty(0, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(vkt.empty(3))


@pytest.mark.parametrize("shape,groups", [((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((2, 5, 3, 2, 4), 1), ((6, 4, 1), 3)])
def test_dirac(shape, groups, device):
    ref = torch.nn.init.dirac_(torch.empty(shape), groups)
    np.testing.assert_array_equal(sample(device, init.dirac_, groups, shape=shape), ref.numpy())


@pytest.mark.parametrize("shape,groups", [((3, 3), 1), ((5, 2, 3), 2)])
def test_dirac_errors(shape, groups):
    with pytest.raises(ValueError) as ref:
        torch.nn.init.dirac_(torch.empty(shape), groups)
    with pytest.raises(ValueError) as got:
        init.dirac_(vkt.empty(*shape), groups)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("shape,gain", [((6, 4), 1.0), ((4, 6), 2.0), ((5, 2, 3), 1.0)])
def test_orthogonal(shape, gain, device):
    v = sample(device, init.orthogonal_, gain, shape=shape).reshape(shape[0], -1)
    rows, cols = v.shape
    gram = v.T @ v if rows >= cols else v @ v.T
    np.testing.assert_allclose(gram, gain**2 * np.eye(min(rows, cols)), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(vkt.empty(3))


@pytest.mark.parametrize("fn,args", [(init.uniform_, ()), (init.normal_, ()), (init.trunc_normal_, ()),
                                     (init.xavier_uniform_, ()), (init.kaiming_normal_, ()), (init.orthogonal_, ())])
def test_manual_seed_repeats(fn, args, device):
    vkt.manual_seed(7)
    first = sample(device, fn, *args, shape=(4, 5))
    vkt.manual_seed(7)
    np.testing.assert_array_equal(sample(device, fn, *args, shape=(4, 5)), first)


# ---- nn.utils ----

def grads_pair(device, shapes, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype(np.float32) * scale for s in shapes]
    tps, vps = [], []
    for v in values:
        tp = torch.zeros(v.shape, requires_grad=True)
        tp.grad = torch.tensor(v)
        vp = nn.Parameter(vkt.zeros(*v.shape, device=device))
        vp.grad = vkt.tensor(v, device=device)
        tps.append(tp)
        vps.append(vp)
    return tps, vps


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e4])
def test_clip_grad_norm(norm_type, max_norm, device):
    tps, vps = grads_pair(device, [(3, 4), (5,), (2, 2, 2)])
    ref = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    vkt.vulkan.reset_fallback_stats()
    got = nn.utils.clip_grad_norm_(vps, max_norm, norm_type)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()
    assert isinstance(got, vkt.Tensor) and got.dim() == 0 and got.device.type == device
    assert_close(got, ref.numpy(), 1e-5, 1e-6)
    for t, v in zip(tps, vps):
        assert_close(v.grad, t.grad.numpy(), 1e-5, 1e-6)


def test_clip_grad_norm_edge_cases(device):
    _, vps = grads_pair(device, [(3,)])
    vps.append(nn.Parameter(vkt.zeros(2, device=device)))  # no grad: skipped
    assert nn.utils.clip_grad_norm_(vps[0], 1.0).dim() == 0  # a single tensor is accepted
    assert nn.utils.clip_grad_norm_([nn.Parameter(vkt.zeros(2))], 1.0).item() == 0
    _, bad = grads_pair(device, [(3,)])
    bad[0].grad = vkt.tensor([1.0, float("inf"), 0.0], device=device)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        nn.utils.clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)


def test_clip_grad_value(device):
    tps, vps = grads_pair(device, [(3, 4), (6,)], scale=2.0)
    torch.nn.utils.clip_grad_value_(tps, 0.7)
    assert nn.utils.clip_grad_value_(vps, 0.7) is None
    for t, v in zip(tps, vps):
        assert_close(v.grad, t.grad.numpy())


def test_parameters_to_vector_and_back(device):
    lin = nn.Linear(3, 2).to(device)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == (8,) and vec.device.type == device
    np.testing.assert_array_equal(vec.detach().cpu().numpy(),
                                  np.concatenate([lin.weight.detach().cpu().numpy().ravel(),
                                                  lin.bias.detach().cpu().numpy()]))
    weight = lin.weight
    nn.utils.vector_to_parameters(vkt.arange(8, dtype=vkt.float32, device=device), lin.parameters())
    assert lin.weight is weight and lin.weight.shape == (2, 3)
    np.testing.assert_array_equal(lin.weight.detach().cpu().numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(lin.bias.detach().cpu().numpy(), [6, 7])
    with pytest.raises(TypeError, match="expected vkt.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], lin.parameters())


def test_parameters_on_two_devices_refused(dev):
    params = [nn.Parameter(vkt.zeros(2)), nn.Parameter(vkt.zeros(2, device=dev))]
    with pytest.raises(TypeError, match="Found two parameters on different devices"):
        nn.utils.parameters_to_vector(params)
