# vkt.optim against torch.optim (CPU, single-tensor path): every optimizer and option combination's
# trajectory over 100 steps from the same start, on both devices, with the gradient of a fixed quadratic
# loss (g = c * p + d, computed by each library in float32, so both see the same gradients while their
# parameters agree). float32 must match to float32 rounding: rtol 1e-5, atol 1e-6 after 100 steps.
import numpy as np
import pytest
import torch

import vkt
from conftest import assert_close

SHAPES = [(3, 5), (7,), (2, 3, 4), (1,)]
STEPS = 100

CASES = [  # (optimizer name, kwargs)
    ("SGD", dict(lr=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.9)),
    ("SGD", dict(lr=0.01, momentum=0.9, dampening=0.2)),
    ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.01, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.5, weight_decay=0.1, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, maximize=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.5, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
]


def case_id(case):
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def start(seed=0, dtype=np.float32):
    """Parameters and the loss's fixed coefficients c (positive) and d, per shape."""
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    cs = [rng.uniform(0.5, 1.5, s).astype(dtype) for s in SHAPES]
    ds = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    return params, cs, ds


class Run:
    """One library's copy of a problem: params, coefficients and an optimizer over them."""

    def __init__(self, lib, device, arrays, cs, ds, name, kw, skip=()):
        self.lib = lib
        dev = {} if lib is torch else {"device": device}
        self.params = [lib.tensor(a, **dev).requires_grad_() for a in arrays]
        self.cs = [lib.tensor(a, **dev) for a in cs]
        self.ds = [lib.tensor(a, **dev) for a in ds]
        self.skip = set(skip)  # indices of params that never get a gradient
        self.opt = getattr(lib.optim, name)(self.params, **kw)

    def set_grads(self):
        with self.lib.no_grad():
            for i, (p, c, d) in enumerate(zip(self.params, self.cs, self.ds)):
                if i not in self.skip:
                    p.grad = p.detach() * c + d

    def run(self, steps):
        for _ in range(steps):
            self.set_grads()
            self.opt.step()

    def values(self):
        return [p.detach().cpu().numpy() for p in self.params]


def compare(got, ref, rtol=1e-5, atol=1e-6):
    for g, r in zip(got.values(), ref.values()):
        assert_close(g, r, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trajectory(case, device):
    name, kw = case
    arrays, cs, ds = start()
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    ref = Run(torch, "cpu", arrays, cs, ds, name, kw, skip=[3])
    got = Run(vkt, device, arrays, cs, ds, name, kw, skip=[3])
    ref.run(STEPS)
    got.run(STEPS)
    compare(got, ref)
    assert_close(got.values()[3], arrays[3], rtol=0, atol=0)  # grad None: skipped
    assert len(got.opt.state[got.params[3]]) == len(ref.opt.state[ref.params[3]])
    sd, tsd = got.opt.state_dict(), ref.opt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert {k: list(v) for k, v in sd["state"].items()} == {k: list(v) for k, v in tsd["state"].items()}
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_other_dtypes(name, dtype, device):
    kw = {"lr": 0.01, "momentum": 0.9} if name in ("SGD", "RMSprop") else {"lr": 0.01}
    arrays, cs, ds = start(dtype=np.float64)
    steps, tol = (STEPS, 1e-9) if dtype == "float64" else (20, 2e-2)
    ref = Run(torch, "cpu", arrays, cs, ds, name, kw)  # float64: torch's float64; float16: its float64 as truth
    cast = [a.astype(dtype) for a in arrays]
    got = Run(vkt, device, cast, [a.astype(dtype) for a in cs], [a.astype(dtype) for a in ds], name, kw)
    ref.run(steps)
    got.run(steps)
    assert all(p.dtype == getattr(vkt, dtype) for p in got.params)
    assert all(t.dtype == getattr(vkt, dtype) for s in got.opt.state.values() for k, t in s.items() if k != "step")
    compare(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_non_contiguous_params(name, device):
    """A transposed leaf and a strided slice: stepped through a contiguous copy, written back in place; a
    slice at an odd offset (contiguous): stepped in place, one element per invocation."""
    kw = {"lr": 0.01, "momentum": 0.9} if name == "SGD" else {"lr": 0.01}
    rng = np.random.default_rng(1)
    base = [rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (3, 8), (11,))]
    dev = {"device": device}
    tp = [torch.tensor(base[0]).t(), torch.tensor(base[1])[:, ::2], torch.tensor(base[2])[1:]]
    vp = [vkt.tensor(base[0], **dev).t(), vkt.tensor(base[1], **dev)[:, ::2], vkt.tensor(base[2], **dev)[1:]]
    tp, vp = [p.requires_grad_() for p in tp], [p.requires_grad_() for p in vp]
    assert not vp[0].is_contiguous() and not vp[1].is_contiguous() and vp[2].is_contiguous()
    topt, vopt = getattr(torch.optim, name)(tp, **kw), getattr(vkt.optim, name)(vp, **kw)
    for _ in range(20):
        for lib, ps in ((torch, tp), (vkt, vp)):
            with lib.no_grad():
                for p in ps:
                    p.grad = p.detach() * 0.5 + 1.0
        topt.step()
        vopt.step()
    for t, v in zip(tp, vp):
        assert_close(v.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [CASES[1], CASES[7], CASES[13], CASES[19], CASES[23]], ids=case_id)
def test_state_dict_round_trip(case, device):
    """50 steps, state_dict into a new optimizer over the same params, 50 more: still torch's trajectory."""
    name, kw = case
    arrays, cs, ds = start()
    ref = Run(torch, "cpu", arrays, cs, ds, name, kw)
    got = Run(vkt, device, arrays, cs, ds, name, kw)
    ref.run(50)
    got.run(50)
    sd = got.opt.state_dict()
    tsd = ref.opt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert sd["state"].keys() == tsd["state"].keys()
    for k in sd["state"]:
        assert list(sd["state"][k]) == list(tsd["state"][k])
        if "step" in sd["state"][k]:  # SGD keeps none
            step = sd["state"][k]["step"]
            assert step.dtype == vkt.float32 and step.shape == () and step.item() == 50.0
    got.opt = getattr(vkt.optim, name)(got.params, **kw)
    got.opt.load_state_dict(sd)
    ref.run(50)
    got.run(50)
    compare(got, ref)
    name0 = list(sd["state"][0])[-1]  # the loaded state was copied, not shared
    assert sd["state"][0][name0] is not got.opt.state[got.params[0]][name0]


@pytest.mark.parametrize("case", [CASES[2], CASES[10], CASES[19], CASES[22]], ids=case_id)
def test_load_torch_state_dict(case, device):
    """A torch optimizer's state_dict, its tensors converted to vkt's, continues torch's trajectory."""
    name, kw = case
    arrays, cs, ds = start()
    ref = Run(torch, "cpu", arrays, cs, ds, name, kw)
    ref.run(30)
    tsd = ref.opt.state_dict()
    state = {k: {n: vkt.tensor(t.numpy()) for n, t in s.items()} for k, s in tsd["state"].items()}
    now = [p.detach().numpy() for p in ref.params]
    got = Run(vkt, device, now, cs, ds, name, kw)
    got.opt.load_state_dict({"state": state, "param_groups": tsd["param_groups"]})
    for s, p in zip(got.opt.state.values(), got.params):
        assert "step" not in s or s["step"].device.type == "cpu"
        assert all(t.device == p.device for n, t in s.items() if n != "step")
    ref.run(30)
    got.run(30)
    compare(got, ref)


def test_add_param_group(device):
    arrays, cs, ds = start()
    runs = []
    for lib, dev in ((torch, "cpu"), (vkt, device)):
        r = Run(lib, dev, arrays, cs, ds, "Adam", dict(lr=0.01))
        r.opt = lib.optim.Adam(r.params[:2], lr=0.01)
        r.run(10)
        r.opt.add_param_group({"params": r.params[2:], "lr": 0.05, "amsgrad": True})
        r.run(10)
        runs.append(r)
    compare(runs[1], runs[0])
    groups = runs[1].opt.param_groups
    assert groups[1]["lr"] == 0.05 and groups[1]["amsgrad"] and groups[1]["betas"] == (0.9, 0.999)
    assert "max_exp_avg_sq" in runs[1].opt.state[runs[1].params[2]]
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        runs[1].opt.add_param_group({"params": [runs[1].params[0]]})


def test_per_group_options(device):
    arrays, cs, ds = start()
    runs = []
    for lib, dev in ((torch, "cpu"), (vkt, device)):
        r = Run(lib, dev, arrays, cs, ds, "SGD", dict(lr=0.01))
        r.opt = lib.optim.SGD([{"params": r.params[:2]}, {"params": r.params[2:], "lr": 0.1, "momentum": 0.9}],
                              lr=0.01)
        r.run(30)
        runs.append(r)
    compare(runs[1], runs[0])


def test_autograd_loss_and_closure(device):
    """Gradients from backward(), the step given as a closure that returns the loss."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    target = rng.standard_normal((4,)).astype(np.float32)
    w0 = rng.standard_normal((3,)).astype(np.float32)
    losses = []
    finals = []
    for lib, dev in ((torch, {}), (vkt, {"device": device})):
        A, y = lib.tensor(a, **dev), lib.tensor(target, **dev)
        w = lib.tensor(w0, **dev).requires_grad_()
        opt = lib.optim.RMSprop([w], lr=0.01, momentum=0.5)

        def closure():
            opt.zero_grad()
            loss = ((A @ w - y) ** 2).sum()
            loss.backward()
            return loss

        losses.append([float(opt.step(closure).detach()) for _ in range(30)])
        finals.append(w.detach().cpu().numpy())
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    assert_close(finals[1], finals[0], rtol=1e-4, atol=1e-5)


def test_step_bumps_versions_and_records_nothing(device):
    p = vkt.ones(5, device=device, requires_grad=True)
    opt = vkt.optim.Adam([p], lr=0.1)
    p.grad = vkt.ones(5, device=device)
    v0 = p._version
    opt.step()
    assert p._version > v0
    assert p.grad_fn is None and p.is_leaf and p.requires_grad
    exp_avg = opt.state[p]["exp_avg"]
    v1 = exp_avg._version
    opt.step()
    assert exp_avg._version > v1


def test_zero_grad(device):
    p = vkt.ones(3, device=device, requires_grad=True)
    opt = vkt.optim.SGD([p], lr=0.1)
    p.grad = vkt.ones(3, device=device)
    opt.zero_grad(set_to_none=False)
    assert_close(p.grad, np.zeros(3, np.float32), rtol=0, atol=0)
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no gradient: nothing happens
    assert_close(p.detach(), np.ones(3, np.float32), rtol=0, atol=0)


def test_extra_keywords_accepted():
    p = [vkt.ones(2, requires_grad=True)]
    vkt.optim.SGD(p, lr=0.1, foreach=True)
    vkt.optim.SGD(p, lr=0.1, fused=True)
    vkt.optim.Adam(p, foreach=False, capturable=True)
    vkt.optim.AdamW(p, fused=True)
    vkt.optim.RMSprop(p, capturable=True, foreach=True)
    vkt.optim.Adagrad(p, fused=True)


ERRORS = [  # (constructor taking (lib, params)), the same error from both libraries
    lambda lib, p: lib.optim.SGD(p, lr=-1.0),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=-0.5),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, weight_decay=-1),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, nesterov=True),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, fused=True, foreach=True),
    lambda lib, p: lib.optim.Adam(p, lr=-1.0),
    lambda lib, p: lib.optim.Adam(p, eps=-1.0),
    lambda lib, p: lib.optim.Adam(p, betas=(1.0, 0.999)),
    lambda lib, p: lib.optim.Adam(p, betas=(0.9, -0.1)),
    lambda lib, p: lib.optim.Adam(p, betas=(0, 0.999)),
    lambda lib, p: lib.optim.Adam(p, weight_decay=-0.1),
    lambda lib, p: lib.optim.AdamW(p, lr=-0.5),
    lambda lib, p: lib.optim.Adam(p, fused=True, differentiable=True),
    lambda lib, p: lib.optim.RMSprop(p, lr=-1.0),
    lambda lib, p: lib.optim.RMSprop(p, alpha=-1.0),
    lambda lib, p: lib.optim.RMSprop(p, momentum=-1.0),
    lambda lib, p: lib.optim.RMSprop(p, eps=-1.0),
    lambda lib, p: lib.optim.Adagrad(p, lr=-1.0),
    lambda lib, p: lib.optim.Adagrad(p, lr_decay=-1.0),
    lambda lib, p: lib.optim.Adagrad(p, initial_accumulator_value=-1.0),
    lambda lib, p: lib.optim.Adagrad(p, eps=-1.0),
    lambda lib, p: lib.optim.SGD([], lr=0.1),
    lambda lib, p: lib.optim.SGD(p[0], lr=0.1),
    lambda lib, p: lib.optim.SGD([{"params": {p[0]}}], lr=0.1),
    lambda lib, p: lib.optim.SGD([p[0] * 2], lr=0.1),
    lambda lib, p: lib.optim.SGD([1.0], lr=0.1),
    lambda lib, p: lib.optim.SGD([{"params": p}, {"params": p}], lr=0.1),
]


@pytest.mark.parametrize("make", ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))])
def test_errors(make):
    outcome = []
    for lib in (torch, vkt):
        p = [lib.ones(2, requires_grad=True)]
        with pytest.raises(Exception) as info:
            make(lib, p)
        outcome.append((type(info.value), str(info.value).replace("torch.", "vkt.").replace("Tensor", "Tensor")))
    assert outcome[1][0] is outcome[0][0]
    if outcome[0][0] is not TypeError:  # TypeErrors name the library's own types
        assert outcome[1][1] == outcome[0][1]


def test_negative_lr_message():
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1.0$"):
        vkt.optim.SGD([vkt.ones(1, requires_grad=True)], lr=-1.0)


def test_load_state_dict_mismatch():
    ps = [vkt.ones(2, requires_grad=True) for _ in range(3)]
    opt = vkt.optim.SGD([{"params": ps[:1]}, {"params": ps[1:]}], lr=0.1)
    with pytest.raises(ValueError, match="^loaded state dict has a different number of parameter groups$"):
        opt.load_state_dict(vkt.optim.SGD(ps, lr=0.1).state_dict())
    other = vkt.optim.SGD([{"params": ps[:2]}, {"params": ps[2:]}], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(other.state_dict())


def test_fused_step_checks(device):
    p = vkt.ones(4, device=device)
    with pytest.raises(RuntimeError, match="expected 2 state tensors"):
        vkt._C._optimizer_step_("adam", p, vkt.ones(4, device=device), (), lr=0.1)
    with pytest.raises(RuntimeError, match="a gradient of shape"):
        vkt._C._optimizer_step_("sgd", p, vkt.ones(3, device=device), (), lr=0.1)
    with pytest.raises(ValueError, match="unknown algorithm"):
        vkt._C._optimizer_step_("lion", p, p, (), lr=0.1)


def test_state_on_param_device(device):
    p = vkt.ones(3, device=device, requires_grad=True)
    opt = vkt.optim.RMSprop([p], momentum=0.9, centered=True)
    p.grad = vkt.ones(3, device=device)
    opt.step()
    state = opt.state[p]
    assert list(state) == ["step", "square_avg", "momentum_buffer", "grad_avg"]
    assert state["step"].device.type == "cpu" and state["step"].dtype == vkt.float32
    assert all(state[k].device == p.device and state[k].is_contiguous() for k in list(state)[1:])


def test_repr():
    opt = vkt.optim.SGD([vkt.ones(1, requires_grad=True)], lr=0.5)
    topt = torch.optim.SGD([torch.ones(1, requires_grad=True)], lr=0.5)
    assert repr(opt) == repr(topt)


def test_step_hooks_and_user_subclass():
    calls = []
    p = vkt.ones(2, requires_grad=True)
    opt = vkt.optim.SGD([p], lr=0.5)
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", vkt.is_grad_enabled())))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", vkt.is_grad_enabled())))
    p.grad = vkt.ones(2)
    opt.step()
    pre.remove()
    opt.step()
    assert calls == [("pre", True), ("post", True), ("post", True)]
    assert_close(p.detach(), np.zeros(2, np.float32), rtol=0, atol=0)

    class Halve(vkt.optim.Optimizer):  # a user's optimizer: its step runs as written (grad mode kept), hooked
        def __init__(self, params):
            super().__init__(params, {"lr": 0.5})

        def step(self, closure=None):
            calls.append(("user", vkt.is_grad_enabled()))

    h = Halve([p])
    h.register_step_post_hook(lambda o, args, kwargs: calls.append(("user-post", None)))
    h.step()
    assert calls[-2:] == [("user", True), ("user-post", None)]


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)])
def test_zero_d_and_empty_params(shape, device):
    tp = torch.full(shape, 0.5, requires_grad=True)
    vp = vkt.full(shape, 0.5, device=device, requires_grad=True)
    for lib, p in ((torch, tp), (vkt, vp)):
        opt = lib.optim.Adam([p], lr=0.1, amsgrad=True)
        for _ in range(3):
            p.grad = lib.full(shape, 2.0, **({} if lib is torch else {"device": device}))
            opt.step()
        assert tuple(opt.state[p]["exp_avg"].shape) == shape
    assert_close(vp.detach(), tp.detach().numpy())


def test_named_params_and_tensor_lr(device):
    """(name, param) pairs give the groups param_names; a 1-element Tensor lr works as its number."""
    arrays, cs, ds = start()
    runs = []
    for lib, dev in ((torch, "cpu"), (vkt, device)):
        r = Run(lib, dev, arrays, cs, ds, "SGD", dict(lr=0.01))
        r.opt = lib.optim.Adam([(f"p{i}", p) for i, p in enumerate(r.params)], lr=lib.tensor(0.01))
        r.run(20)
        runs.append(r)
    compare(runs[1], runs[0])
    sd = runs[1].opt.state_dict()
    assert sd["param_groups"][0]["param_names"] == ["p0", "p1", "p2", "p3"]
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        vkt.optim.SGD(runs[1].params, lr=vkt.ones(2))


def test_training_a_model(device):
    """vkt.nn's Linear layers trained by AdamW under a cosine schedule, from torch's weights: torch's
    trajectory (loss and parameters) with grads from autograd, and no fallback on vulkan."""
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    vmodel = vkt.nn.Sequential(vkt.nn.Linear(5, 8), vkt.nn.Tanh(), vkt.nn.Linear(8, 2)).to(device)
    vmodel.load_state_dict({k: vkt.tensor(v.detach().numpy(), device=device) for k, v in tmodel.state_dict().items()})
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((16, 5)).astype(np.float32), rng.standard_normal((16, 2)).astype(np.float32)
    losses = []
    vkt.vulkan.reset_fallback_stats()
    for lib, model, dev in ((torch, tmodel, {}), (vkt, vmodel, {"device": device})):
        opt = lib.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)
        X, Y = lib.tensor(x, **dev), lib.tensor(y, **dev)
        out = []
        for _ in range(20):
            opt.zero_grad()
            loss = ((model(X) - Y) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
            out.append(loss.item())
        losses.append(out)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    for (name, t), v in zip(tmodel.named_parameters(), vmodel.parameters()):
        assert_close(v.detach(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}
