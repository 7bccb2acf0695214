# vkt.nn.functional's losses and vkt.nn's loss modules against torch's on both devices: every reduction,
# weights, ignore_index, label smoothing, probability targets, values and input gradients, the errors,
# and no CPU fallback for float32 on vulkan.
import warnings

import numpy as np
import pytest
import torch

import vkt
from vkt import nn
from vkt.nn import functional as F

from conftest import assert_close

RNG = np.random.default_rng(99)
REDUCTIONS = ["none", "mean", "sum"]


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def probs(*shape):
    return (1 / (1 + np.exp(-randn(*shape)))).astype(np.float32)


def labels(high, *shape, ignore=None):
    t = RNG.integers(0, high, shape).astype(np.int64)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore
    return t


def to_lib(value, lib, device, grad):
    if isinstance(value, np.ndarray):
        if lib is torch:
            return torch.tensor(value, requires_grad=grad)
        return vkt.tensor(value, device=device, requires_grad=grad)
    return value


def compare(fn_name, args, kwargs, device, rtol=1e-4, atol=1e-5, module=None):
    """Calls torch's and vkt's F.fn_name (or the loss module named by module) on the same NumPy arguments;
    the first argument (the input) is differentiated."""
    def call(lib, nnmod, functional):
        xs = [to_lib(a, lib, device, i == 0) for i, a in enumerate(args)]
        kw = {k: to_lib(v, lib, device, False) for k, v in kwargs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = getattr(nnmod, module)(**kw)(*xs) if module else getattr(functional, fn_name)(*xs, **kw)
        return out, xs[0]

    ty, tx = call(torch, torch.nn, torch.nn.functional)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    vy, vx = call(vkt, nn, F)
    seed = RNG.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(seed))
    vy.backward(vkt.tensor(seed, device=device))
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()
    assert vy.device.type == device and vy.dtype == vkt.float32
    assert_close(vy.detach(), ty.detach().numpy(), rtol, atol)
    assert_close(vx.grad, tx.grad.numpy(), rtol, atol)


POINTWISE = [
    ("mse_loss", lambda: [randn(4, 5), randn(4, 5)], {}),
    ("mse_loss", lambda: [randn(4, 5), randn(4, 5)], {"weight": probs(4, 5)}),
    ("l1_loss", lambda: [randn(3, 2, 4), randn(3, 2, 4)], {}),
    ("l1_loss", lambda: [randn(4, 5), randn(4, 5)], {"weight": probs(4, 5)}),
    ("smooth_l1_loss", lambda: [randn(4, 5) * 2, randn(4, 5)], {}),
    ("smooth_l1_loss", lambda: [randn(4, 5) * 2, randn(4, 5)], {"beta": 0.5}),
    ("smooth_l1_loss", lambda: [randn(4, 5) * 2, randn(4, 5)], {"beta": 0.0}),
    ("huber_loss", lambda: [randn(4, 5) * 2, randn(4, 5)], {}),
    ("huber_loss", lambda: [randn(4, 5) * 2, randn(4, 5)], {"delta": 2.5}),
    ("huber_loss", lambda: [randn(4, 5) * 2, randn(4, 5)], {"delta": 0.5, "weight": probs(4, 5)}),
    ("binary_cross_entropy", lambda: [probs(4, 5), probs(4, 5)], {}),
    ("binary_cross_entropy", lambda: [probs(6), (randn(6) > 0).astype(np.float32)], {"weight": probs(6)}),
    ("binary_cross_entropy_with_logits", lambda: [randn(4, 5) * 3, probs(4, 5)], {}),
    ("binary_cross_entropy_with_logits", lambda: [randn(4, 5) * 3, probs(4, 5)], {"weight": probs(5)}),
    ("binary_cross_entropy_with_logits", lambda: [randn(4, 5) * 3, probs(4, 5)], {"pos_weight": probs(5) * 3}),
    ("binary_cross_entropy_with_logits", lambda: [randn(2, 3) * 30, probs(2, 3)],
     {"pos_weight": probs(3) * 3, "weight": probs(2, 3)}),
    ("kl_div", lambda: [np.log(probs(4, 5)), probs(4, 5)], {}),
    ("kl_div", lambda: [np.log(probs(4, 5)), np.log(probs(4, 5))], {"log_target": True}),
    ("kl_div", lambda: [np.log(probs(3, 4)), np.where(randn(3, 4) > 0, probs(3, 4), 0).astype(np.float32)], {}),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,make,kwargs", POINTWISE, ids=[f"{c[0]}-{sorted(c[2])}" for c in POINTWISE])
def test_pointwise_losses(name, make, kwargs, reduction, device):
    compare(name, make(), dict(kwargs, reduction=reduction), device)


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_batchmean(log_target, device):
    target = np.log(probs(4, 5)) if log_target else probs(4, 5)
    compare("kl_div", [np.log(probs(4, 5)), target], {"reduction": "batchmean", "log_target": log_target}, device)


CLASS_CASES = [
    ("2d", lambda: randn(6, 5), lambda ig: labels(5, 6, ignore=ig)),
    ("1d", lambda: randn(5), lambda ig: np.array(3, dtype=np.int64)),
    ("4d", lambda: randn(2, 4, 3, 2), lambda ig: labels(4, 2, 3, 2, ignore=ig)),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CLASS_CASES, ids=[c[0] for c in CLASS_CASES])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, 1])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_targets(case, weighted, ignore, smoothing, reduction, device):
    _, make_input, make_target = case
    x = make_input()
    classes = x.shape[1] if x.ndim > 1 else x.shape[0]
    kwargs = {"reduction": reduction, "label_smoothing": smoothing}
    if weighted:
        kwargs["weight"] = probs(classes) + 0.1
    if ignore is not None:
        kwargs["ignore_index"] = ignore
    compare("cross_entropy", [x, make_target(ignore)], kwargs, device)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CLASS_CASES, ids=[c[0] for c in CLASS_CASES])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, 2])
def test_nll_loss(case, weighted, ignore, reduction, device):
    _, make_input, make_target = case
    x = make_input()
    classes = x.shape[1] if x.ndim > 1 else x.shape[0]
    logp = np.log(np.exp(x) / np.exp(x).sum(1 if x.ndim > 1 else 0, keepdims=True)).astype(np.float32)
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = probs(classes) + 0.1
    if ignore is not None:
        kwargs["ignore_index"] = ignore
    compare("nll_loss", [logp, make_target(ignore)], kwargs, device)


def test_nll_all_ignored(device):
    x = vkt.tensor(randn(3, 4), device=device)
    t = vkt.tensor(np.full(3, -100, dtype=np.int64), device=device)
    ref = torch.nn.functional.nll_loss(torch.tensor(x.cpu().numpy()), torch.tensor(t.cpu().numpy()))
    assert np.isnan(F.nll_loss(x, t).item()) and np.isnan(ref.item())
    assert F.nll_loss(x, t, reduction="sum").item() == 0


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("shape", [(4, 5), (5,), (2, 3, 4)])
def test_cross_entropy_probability_targets(shape, weighted, smoothing, reduction, device):
    x = randn(*shape)
    dim = 1 if len(shape) > 1 else 0
    target = np.exp(randn(*shape))
    target = (target / target.sum(dim, keepdims=True)).astype(np.float32)
    kwargs = {"reduction": reduction, "label_smoothing": smoothing}
    if weighted:
        kwargs["weight"] = probs(shape[dim]) + 0.1
    compare("cross_entropy", [x, target], kwargs, device)


MODULES = [
    ("MSELoss", lambda: [randn(3, 4), randn(3, 4)], {"reduction": "sum"}),
    ("L1Loss", lambda: [randn(3, 4), randn(3, 4)], {}),
    ("SmoothL1Loss", lambda: [randn(3, 4), randn(3, 4)], {"beta": 0.3}),
    ("HuberLoss", lambda: [randn(3, 4), randn(3, 4)], {"delta": 0.4, "reduction": "none"}),
    ("CrossEntropyLoss", lambda: [randn(6, 3), labels(3, 6, ignore=0)],
     {"weight": probs(3), "ignore_index": 0, "label_smoothing": 0.1}),
    ("NLLLoss", lambda: [randn(6, 3), labels(3, 6)], {"weight": probs(3), "reduction": "sum"}),
    ("BCELoss", lambda: [probs(3, 4), probs(3, 4)], {"weight": probs(4)}),
    ("BCEWithLogitsLoss", lambda: [randn(3, 4), probs(3, 4)], {"pos_weight": probs(4)}),
    ("KLDivLoss", lambda: [randn(3, 4), randn(3, 4)], {"reduction": "batchmean", "log_target": True}),
]


@pytest.mark.parametrize("name,make,kwargs", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules(name, make, kwargs, device):
    compare(None, make(), kwargs, device, module=name)


@pytest.mark.parametrize("name,kwargs", [(m[0], m[2]) for m in MODULES], ids=[m[0] for m in MODULES])
def test_loss_module_repr_and_buffers(name, kwargs):
    vk = {k: vkt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    vm, tm = getattr(nn, name)(**vk), getattr(torch.nn, name)(**tk)
    assert repr(vm) == repr(tm)
    assert list(vm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in vm.named_buffers()] == [n for n, _ in tm.named_buffers()]


def test_legacy_size_average_and_reduce():
    x, t = randn(3, 4), randn(3, 4)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        got = F.mse_loss(vkt.tensor(x), vkt.tensor(t), size_average=False)
    assert_close(got, ((x - t) ** 2).sum(), 1e-5)
    with pytest.warns(UserWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"


def test_size_mismatch_warns_and_kl_mean_warns():
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(vkt.zeros(3, 1), vkt.zeros(3))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(vkt.zeros(3), vkt.zeros(3))


@pytest.mark.parametrize("call,exc", [
    (lambda F, lib: F.mse_loss(lib.zeros(3), lib.zeros(3), reduction="avg"), ValueError),
    (lambda F, lib: F.cross_entropy(lib.zeros(3, 4), lib.zeros(3, dtype=lib.int64), reduction="bad"), ValueError),
    (lambda F, lib: F.mse_loss(lib.zeros(3), lib.zeros(3), weight=lib.zeros(2)), ValueError),
    (lambda F, lib: F.binary_cross_entropy(lib.zeros(3), lib.zeros(2)), ValueError),
    (lambda F, lib: F.binary_cross_entropy_with_logits(lib.zeros(3), lib.zeros(2)), ValueError),
    (lambda F, lib: F.nll_loss(lib.zeros(3, 4), lib.zeros(2, dtype=lib.int64)), ValueError),
    (lambda F, lib: F.cross_entropy(lib.zeros(3, 4), lib.zeros(3, dtype=lib.int64), label_smoothing=1.5),
     RuntimeError),
    (lambda F, lib: F.smooth_l1_loss(lib.zeros(3), lib.zeros(3), beta=-1.0), RuntimeError),
    (lambda F, lib: F.huber_loss(lib.zeros(3), lib.zeros(3), delta=0.0), RuntimeError),
    (lambda F, lib: F.kl_div(lib.zeros(3), lib.zeros(3), reduction="batchsum"), ValueError),
    (lambda F, lib: F.nll_loss(lib.zeros(3, 4), lib.zeros(3, dtype=lib.int64), weight=lib.ones(3)), RuntimeError),
])
def test_loss_errors_match_torch(call, exc):
    with pytest.raises(exc) as ref:
        call(torch.nn.functional, torch)
    with pytest.raises(exc) as got:
        call(F, vkt)
    assert str(got.value) == str(ref.value).replace("torch.Size(", "vkt.Size(")


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_target_dtypes(fn, device):
    x = randn(3, 4)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        getattr(F, fn)(vkt.tensor(x, device=device), vkt.zeros(3, dtype=vkt.int32, device=device))
    t = np.array([3, 0, 1], dtype=np.uint8)
    ref = getattr(torch.nn.functional, fn)(torch.tensor(x), torch.tensor(t))
    assert_close(getattr(F, fn)(vkt.tensor(x, device=device), vkt.tensor(t, device=device)), ref.numpy(), 1e-5)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_losses_keep_dtype(dtype, device):
    x = vkt.tensor(randn(4, 3), dtype=getattr(vkt, dtype), device=device, requires_grad=True)
    t = vkt.tensor(labels(3, 4), device=device)
    loss = F.cross_entropy(x, t) + F.mse_loss(x, x.detach() * 0)
    loss.backward()
    assert loss.dtype == x.dtype and x.grad.dtype == x.dtype
    ref = torch.nn.functional.cross_entropy(torch.tensor(x.detach().cpu().numpy().astype(np.float64)),
                                            torch.tensor(t.cpu().numpy()))
    ref = ref + (torch.tensor(x.detach().cpu().numpy().astype(np.float64)) ** 2).mean()
    assert_close(loss.detach(), ref.item(), 1e-2 if dtype == "float16" else 1e-10, 1e-3 if dtype == "float16" else 0)
