# Automatic mixed precision (vkt.autocast, vkt.amp.GradScaler) against torch 2.13: the dtype each listed op
# gives inside autocast (torch's cpu autocast with float16 where its cpu list agrees with the CUDA list vkt
# follows, else the CUDA list itself), gradients, nesting, threads, the cast cache, and GradScaler's scale.
import threading
import warnings

import numpy as np
import pytest
import torch

import vkt

R = np.random.default_rng(0)
A, B, C = R.standard_normal((4, 6)), R.standard_normal((6, 5)), R.standard_normal((4, 5))
BA, BB, BC = R.standard_normal((2, 4, 6)), R.standard_normal((2, 6, 5)), R.standard_normal((2, 4, 5))
V, V5 = R.standard_normal(6), R.standard_normal(5)
IMG1, W1 = R.standard_normal((1, 2, 7)), R.standard_normal((3, 2, 3))
IMG2, W2 = R.standard_normal((1, 2, 6, 6)), R.standard_normal((3, 2, 3, 3))
IMG3, W3 = R.standard_normal((1, 2, 4, 4, 4)), R.standard_normal((3, 2, 2, 2, 2))
Q = R.standard_normal((1, 2, 3, 4))
POS = R.random((4, 5)) + 0.5
LABELS = np.array([0, 2, 1, 4])


def lib_tensor(lib, dev):
    def make(arr, dtype="float32"):
        if lib is torch:
            return torch.tensor(arr, dtype=getattr(torch, dtype))
        return vkt.tensor(np.asarray(arr), device=dev).to(getattr(vkt, dtype))
    return make


def labels(lib, dev):
    return torch.tensor(LABELS) if lib is torch else vkt.tensor(LABELS, device=dev)


# (name, op(lib, make, dev), dtype under the CUDA list, whether torch's cpu autocast agrees)
LOWER = [
    ("@", lambda L, t, d: t(A) @ t(B), True),
    ("matmul", lambda L, t, d: L.matmul(t(BA), t(B)), True),
    ("mm", lambda L, t, d: L.mm(t(A), t(B)), True),
    ("Tensor.mm", lambda L, t, d: t(A).mm(t(B)), True),
    ("bmm", lambda L, t, d: L.bmm(t(BA), t(BB)), True),
    ("addmm", lambda L, t, d: L.addmm(t(C), t(A), t(B)), True),
    ("addbmm", lambda L, t, d: L.addbmm(t(C), t(BA), t(BB)), True),
    ("baddbmm", lambda L, t, d: L.baddbmm(t(BC), t(BA), t(BB)), True),
    ("addmv", lambda L, t, d: L.addmv(t(V5[:4]), t(A), t(V)), False),
    ("mv", lambda L, t, d: L.mv(t(A), t(V)), False),
    ("linear", lambda L, t, d: L.nn.functional.linear(t(A), t(B.T), t(V5)), True),
    ("conv1d", lambda L, t, d: L.nn.functional.conv1d(t(IMG1), t(W1)), True),
    ("conv2d", lambda L, t, d: L.nn.functional.conv2d(t(IMG2), t(W2), t(V[:3])), True),
    ("conv3d", lambda L, t, d: L.nn.functional.conv3d(t(IMG3), t(W3)), True),
    ("conv_transpose1d", lambda L, t, d: L.nn.functional.conv_transpose1d(t(IMG1), t(W1.transpose(1, 0, 2))), True),
    ("conv_transpose2d", lambda L, t, d: L.nn.functional.conv_transpose2d(t(IMG2), t(W2.transpose(1, 0, 2, 3))),
     True),
    ("prelu", lambda L, t, d: L.nn.functional.prelu(t(A), t([0.25])), True),
    ("scaled_dot_product_attention", lambda L, t, d: L.nn.functional.scaled_dot_product_attention(t(Q), t(Q), t(Q)),
     True),
    ("einsum", lambda L, t, d: L.einsum("ij,jk->ik", t(A), t(B)), False),
]

FP32 = [  # float16 inputs
    ("softmax", lambda L, t, d: L.softmax(t(A, "float16"), -1), False),
    ("Tensor.softmax", lambda L, t, d: t(A, "float16").softmax(-1), False),
    ("F.log_softmax", lambda L, t, d: L.nn.functional.log_softmax(t(A, "float16"), -1), False),
    ("exp", lambda L, t, d: L.exp(t(A, "float16")), False),
    ("Tensor.log", lambda L, t, d: t(POS, "float16").log(), False),
    ("pow", lambda L, t, d: L.pow(t(A, "float16"), 2), False),
    ("rsqrt", lambda L, t, d: L.rsqrt(t(POS, "float16")), False),
    ("sum", lambda L, t, d: L.sum(t(A, "float16")), False),
    ("cumsum", lambda L, t, d: L.cumsum(t(A, "float16"), 0), False),
    ("logsumexp", lambda L, t, d: L.logsumexp(t(A, "float16"), 1), False),
    ("layer_norm", lambda L, t, d: L.nn.functional.layer_norm(t(A, "float16"), (6,)), False),
    ("group_norm", lambda L, t, d: L.nn.functional.group_norm(t(IMG2, "float16"), 2), False),
    ("softplus", lambda L, t, d: L.nn.functional.softplus(t(A, "float16")), False),
    ("cosine_similarity", lambda L, t, d: L.nn.functional.cosine_similarity(t(A, "float16"), t(A, "float16")), False),
    ("mse_loss", lambda L, t, d: L.nn.functional.mse_loss(t(C, "float16"), t(C, "float16")), True),
    ("l1_loss", lambda L, t, d: L.nn.functional.l1_loss(t(C, "float16"), t(POS, "float16")), True),
    ("smooth_l1_loss", lambda L, t, d: L.nn.functional.smooth_l1_loss(t(C, "float16"), t(POS, "float16")), True),
    ("huber_loss", lambda L, t, d: L.nn.functional.huber_loss(t(C, "float16"), t(POS, "float16")), True),
    ("kl_div", lambda L, t, d: L.nn.functional.kl_div(t(C, "float16"), t(POS, "float16"), reduction="batchmean"),
     True),
    ("binary_cross_entropy_with_logits",
     lambda L, t, d: L.nn.functional.binary_cross_entropy_with_logits(t(C, "float16"), t(POS / 2, "float16")), True),
    ("cross_entropy", lambda L, t, d: L.nn.functional.cross_entropy(t(C, "float16"), labels(L, d)), True),
    ("nll_loss", lambda L, t, d: L.nn.functional.nll_loss(t(C, "float16"), labels(L, d)), True),
    ("soft_margin_loss", lambda L, t, d: L.nn.functional.soft_margin_loss(t(C, "float16"), t(POS, "float16")), True),
]

UNCHANGED = [  # (name, op, dtype): outside the lists, or told the dtype
    ("relu", lambda L, t, d: L.relu(t(A, "float16")), "float16"),
    ("add", lambda L, t, d: t(A) + 1, "float32"),
    ("sum dtype=", lambda L, t, d: L.sum(t(A, "float16"), dtype=L.float16), "float16"),
    ("softmax dtype=", lambda L, t, d: L.softmax(t(A, "float16"), -1, dtype=L.float16), "float16"),
    ("cat", lambda L, t, d: L.cat([t(A, "float16"), t(A)]), "float32"),
    ("stack", lambda L, t, d: L.stack([t(A, "float16"), t(A, "float16")]), "float16"),
    ("addcmul", lambda L, t, d: L.addcmul(t(A), t(A, "float16"), t(A, "float16")), "float32"),
    ("float64 mm", lambda L, t, d: L.mm(t(A, "float64"), t(B, "float64")), "float64"),
]


def dtype_name(x):
    return str(x.dtype).split(".")[-1]


@pytest.mark.parametrize("name,op,torch_agrees", LOWER, ids=[c[0] for c in LOWER])
def test_lower_precision_ops(device, name, op, torch_agrees):
    t = lib_tensor(vkt, device)
    with vkt.autocast(device):
        got = op(vkt, t, device)
    assert dtype_name(got) == "float16"
    ref = op(torch, lib_tensor(torch, None), None)
    np.testing.assert_allclose(got.float().cpu().numpy(), ref.numpy(), rtol=2e-2, atol=2e-2)
    if torch_agrees:
        with torch.autocast("cpu", dtype=torch.float16):
            assert dtype_name(op(torch, lib_tensor(torch, None), None)) == "float16"


@pytest.mark.parametrize("name,op,torch_agrees", FP32, ids=[c[0] for c in FP32])
def test_float32_ops(device, name, op, torch_agrees):
    with vkt.autocast(device):
        got = op(vkt, lib_tensor(vkt, device), device)
    assert dtype_name(got) == "float32"
    if torch_agrees:
        with torch.autocast("cpu", dtype=torch.float16):
            assert dtype_name(op(torch, lib_tensor(torch, None), None)) == "float32"


@pytest.mark.parametrize("name,op,want", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_unlisted_and_promoted_ops(device, name, op, want):
    with vkt.autocast(device):
        assert dtype_name(op(vkt, lib_tensor(vkt, device), device)) == want
    with torch.autocast("cpu", dtype=torch.float16):
        assert dtype_name(op(torch, lib_tensor(torch, None), None)) == want


def test_binary_cross_entropy_refused(device):
    p = vkt.tensor(POS / 2, device=device)
    with vkt.autocast(device), pytest.raises(RuntimeError, match="unsafe to autocast"):
        vkt.nn.functional.binary_cross_entropy(p, p)


def test_gradients_reach_float32_parameters(device):
    torch.manual_seed(0)
    tl = torch.nn.Linear(6, 5)
    x = vkt.tensor(A.astype(np.float32), device=device)
    w = vkt.tensor(tl.weight.detach().numpy(), device=device, requires_grad=True)
    b = vkt.tensor(tl.bias.detach().numpy(), device=device, requires_grad=True)
    with vkt.autocast(device):
        y = vkt.nn.functional.linear(x, w, b)
        loss = vkt.nn.functional.mse_loss(y, vkt.zeros(4, 5, device=device))
    assert (y.dtype, loss.dtype) == (vkt.float16, vkt.float32)
    loss.backward()
    assert (w.grad.dtype, b.grad.dtype) == (vkt.float32, vkt.float32)
    with torch.autocast("cpu", dtype=torch.float16):
        tloss = torch.nn.functional.mse_loss(tl(torch.tensor(A, dtype=torch.float32)), torch.zeros(4, 5))
    tloss.backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), tl.weight.grad.numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(b.grad.cpu().numpy(), tl.bias.grad.numpy(), rtol=1e-2, atol=1e-2)


def test_state_nesting_and_decorator(device):
    a, b = vkt.tensor(A, device=device).float(), vkt.tensor(B, device=device).float()
    assert not vkt.is_autocast_enabled(device)
    assert vkt.get_autocast_dtype(device) == vkt.float16 == vkt.get_autocast_dtype("cpu")
    with vkt.amp.autocast(device_type=device) as ac:
        assert ac.fast_dtype == vkt.float16 and vkt.is_autocast_enabled(device)
        with vkt.autocast(device, enabled=False):
            assert not vkt.is_autocast_enabled(device)
            assert (a @ b).dtype == vkt.float32
            with vkt.autocast(device):
                assert (a @ b).dtype == vkt.float16
            assert (a @ b).dtype == vkt.float32
        assert (a @ b).dtype == vkt.float16
    assert not vkt.is_autocast_enabled(device) and (a @ b).dtype == vkt.float32

    @vkt.autocast(device)
    def product(x, y):
        return x @ y

    assert product(a, b).dtype == vkt.float16 and (a @ b).dtype == vkt.float32
    other = "cpu" if device == "vulkan" else "vulkan"
    if other == "cpu" or vkt.vulkan.is_available():
        with vkt.autocast(other):  # only the tensors of the device type named are cast
            assert (a @ b).dtype == vkt.float32


def test_arguments_checked():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        vkt.autocast("cuda")
    with pytest.raises(ValueError):
        vkt.autocast(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ac = vkt.autocast("cpu", dtype=vkt.float64)
    assert caught and "Disabling autocast" in str(caught[0].message)
    with ac:
        assert not vkt.is_autocast_enabled("cpu")


def test_thread_local(device):
    a, b = vkt.tensor(A, device=device).float(), vkt.tensor(B, device=device).float()
    seen = {}

    def worker():
        seen["enabled"] = vkt.is_autocast_enabled(device)
        seen["dtype"] = (a @ b).dtype
        with vkt.autocast(device):
            seen["inner"] = (a @ b).dtype

    with vkt.autocast(device):
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        assert (a @ b).dtype == vkt.float16
    assert seen == {"enabled": False, "dtype": vkt.float32, "inner": vkt.float16}


def test_cast_cache(device):
    from vkt.amp import autocast_mode

    x = vkt.tensor(A, device=device).float()
    w = vkt.tensor(B, device=device).float().requires_grad_()
    with vkt.autocast(device):
        y = x @ w + vkt.mm(x, w)
        assert len(autocast_mode._tls.cache) == 1  # one cast of the leaf, reused
        with vkt.autocast(device):
            x @ w
        assert len(autocast_mode._tls.cache) == 1  # the inner exit is not the outermost: kept
        (x @ w.detach()).sum()
        assert len(autocast_mode._tls.cache) == 1  # only leaves that require grad are cached
    assert len(autocast_mode._tls.cache) == 0
    y.float().sum().backward()
    want = 2 * A.sum(0)[:, None].repeat(5, 1)
    np.testing.assert_allclose(w.grad.cpu().numpy(), want, rtol=1e-2, atol=1e-2)
    with vkt.autocast(device, cache_enabled=False):
        x @ w
        assert len(autocast_mode._tls.cache) == 0


def scaler_run(lib, device, inf_steps, nan_steps, steps=8):
    """Scales and parameters over SGD steps of a GradScaler with growth_interval 2, infs and nans injected."""
    make = lib_tensor(lib, device)
    p = make(A[0]).requires_grad_()
    opt = (torch.optim.SGD if lib is torch else vkt.optim.SGD)([p], lr=0.1)
    scaler = (torch.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=2) if lib is torch else
              vkt.amp.GradScaler(device, init_scale=2.0**4, growth_interval=2))
    scales, params, rets = [], [], []
    for step in range(steps):
        opt.zero_grad()
        loss = (p * make(A[1])).sum()
        scaler.scale(loss).backward()
        if step in inf_steps or step in nan_steps:
            with lib.no_grad():
                p.grad[1] = float("inf") if step in inf_steps else float("nan")
        rets.append(scaler.step(opt))
        scaler.update()
        scales.append(scaler.get_scale())
        params.append(p.detach().cpu().numpy().copy())
    return scales, np.array(params), scaler


def test_grad_scaler_against_torch(device):
    got_scales, got_params, scaler = scaler_run(vkt, device, inf_steps={1, 4}, nan_steps={5})
    want_scales, want_params, tscaler = scaler_run(torch, None, inf_steps={1, 4}, nan_steps={5})
    assert got_scales == want_scales
    np.testing.assert_allclose(got_params, want_params, rtol=1e-6, atol=1e-6)
    assert np.array_equal(got_params[1], got_params[0])  # the step with an inf was skipped
    assert scaler.state_dict() == tscaler.state_dict()
    fresh = vkt.amp.GradScaler(device)
    fresh.load_state_dict(scaler.state_dict())
    assert fresh.state_dict() == scaler.state_dict() and fresh.get_scale() == scaler.get_scale()
    with pytest.raises(RuntimeError, match="empty"):
        fresh.load_state_dict(vkt.amp.GradScaler(device, enabled=False).state_dict())


def test_grad_scaler_errors(device):
    p = vkt.ones(3, device=device, requires_grad=True)
    opt = vkt.optim.SGD([p], lr=0.1)
    scaler = vkt.amp.GradScaler(device)
    assert scaler.get_scale() == 2.0**16
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_array_equal(p.grad.cpu().numpy(), np.ones(3))
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    h = vkt.ones(3, device=device, dtype=vkt.float16, requires_grad=True)
    h.sum().backward()
    with pytest.raises(ValueError, match="FP16 gradients"):
        scaler.unscale_(vkt.optim.SGD([h], lr=0.1))
    off = vkt.amp.GradScaler(device, enabled=False)
    assert off.get_scale() == 1.0 and off.state_dict() == {} and off.scale(p) is p


def test_mlp_trains_under_autocast_and_grad_scaler(device):
    vkt.manual_seed(0)
    model = vkt.nn.Sequential(vkt.nn.Linear(8, 32), vkt.nn.ReLU(), vkt.nn.Linear(32, 4)).to(device)
    opt = vkt.optim.Adam(model.parameters(), lr=1e-2)
    scaler = vkt.amp.GradScaler(device)
    x = vkt.tensor(R.standard_normal((64, 8)).astype(np.float32), device=device)
    y = vkt.tensor(R.integers(0, 4, 64), device=device)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        with vkt.autocast(device):
            out = model(x)
            loss = vkt.nn.functional.cross_entropy(out, y)
        assert (out.dtype, loss.dtype) == (vkt.float16, vkt.float32)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype == vkt.float32 and p.grad.dtype == vkt.float32 for p in model.parameters())
    assert losses[-1] < 0.8 * losses[0]
