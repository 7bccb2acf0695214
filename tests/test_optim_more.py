# vkt.optim's Adamax, NAdam, RAdam, Adadelta, Rprop, ASGD and LBFGS against torch.optim's single-tensor path
# (foreach=False) on both devices: trajectories from the same start with the gradient of a fixed quadratic
# (g = c * p + d, computed by each library), per option; several param groups; torch's state dict loaded
# mid-run; LBFGS on a least-squares problem; constructor errors. float32: rtol 1e-5, atol 1e-6.
import numpy as np
import pytest

import vkt
from conftest import assert_close, raised

torch = pytest.importorskip("torch")

SHAPES = [(3, 5), (7,), (2, 3), (1,)]
STEPS = 10  # RAdam leaves its SGD phase (rho_t > 5) at step 7 with beta2 = 0.9

CASES = [  # (optimizer name, kwargs)
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, eps=1e-6)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9))),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4)),
    ("Adadelta", dict(weight_decay=0.1, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08))),
    ("Rprop", dict(lr=0.05, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3)),
    ("ASGD", dict(lr=0.05, t0=2, weight_decay=0.1, maximize=True)),
]


def case_id(case):
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def start(seed=0):
    """Parameters and the loss's fixed coefficients c (positive) and d, per shape."""
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    cs = [rng.uniform(0.5, 1.5, s).astype(np.float32) for s in SHAPES]
    ds = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    return params, cs, ds


class Run:
    """One library's copy of a problem: params, coefficients and an optimizer over them (param is the
    optimizer's first argument: the parameter list, or groups built from it)."""

    def __init__(self, lib, device, arrays, cs, ds, name, kw, skip=(), groups=None):
        self.lib = lib
        dev = {} if lib is torch else {"device": device}
        self.params = [lib.tensor(a, **dev).requires_grad_() for a in arrays]
        self.cs = [lib.tensor(a, **dev) for a in cs]
        self.ds = [lib.tensor(a, **dev) for a in ds]
        self.skip = set(skip)  # indices of params that never get a gradient
        kw = dict(kw, foreach=False)  # torch's single-tensor path; vkt takes the flag and changes nothing
        params = self.params if groups is None else groups(self.params)
        self.opt = getattr(lib.optim, name)(params, **kw)

    def run(self, steps):
        for _ in range(steps):
            with self.lib.no_grad():
                for i, (p, c, d) in enumerate(zip(self.params, self.cs, self.ds)):
                    if i not in self.skip:
                        p.grad = p.detach() * c + d
            self.opt.step()

    def values(self):
        return [p.detach().cpu().numpy() for p in self.params]


def compare(got, ref, rtol=1e-5, atol=1e-6):
    for g, r in zip(got.values(), ref.values()):
        assert_close(g, r, rtol=rtol, atol=atol)


def state_dict_matches(sd, tsd):
    """The same groups, state keys and state values (tensors compared as arrays, host numbers exactly)."""
    assert sd["param_groups"] == tsd["param_groups"]
    assert sd["state"].keys() == tsd["state"].keys()
    for k in tsd["state"]:
        assert list(sd["state"][k]) == list(tsd["state"][k])
        for name, t in tsd["state"][k].items():
            v = sd["state"][k][name]
            assert tuple(v.shape) == tuple(t.shape) and str(v.dtype)[4:] == str(t.dtype)[6:]
            assert_close(v, t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trajectory(case, device):
    name, kw = case
    arrays, cs, ds = start()
    ref = Run(torch, "cpu", arrays, cs, ds, name, kw, skip=[3])
    got = Run(vkt, device, arrays, cs, ds, name, kw, skip=[3])
    ref.run(STEPS)
    got.run(STEPS)
    compare(got, ref)
    assert_close(got.values()[3], arrays[3], rtol=0, atol=0)  # grad None: skipped, and no state
    state_dict_matches(got.opt.state_dict(), ref.opt.state_dict())


GROUP_CASES = [("Adamax", dict(lr=0.01)), ("NAdam", dict(lr=0.01)), ("RAdam", dict(lr=0.01, betas=(0.9, 0.9))),
               ("Adadelta", dict()), ("Rprop", dict(lr=0.05)), ("ASGD", dict(lr=0.05, t0=3))]


@pytest.mark.parametrize("case", GROUP_CASES, ids=case_id)
def test_param_groups(case, device):
    """Two groups with their own lr (and maximize, weight decay where the optimizer takes it)."""
    name, kw = case
    second = {"lr": kw.get("lr", 1.0) * 3, "maximize": True}
    if name != "Rprop":
        second["weight_decay"] = 0.2
    arrays, cs, ds = start(1)
    groups = lambda ps: [{"params": ps[:2]}, {"params": ps[2:], **second}]  # noqa: E731
    runs = [Run(lib, dev, arrays, cs, ds, name, kw, groups=groups) for lib, dev in ((torch, "cpu"), (vkt, device))]
    for r in runs:
        r.run(STEPS)
    compare(runs[1], runs[0])
    assert runs[1].opt.param_groups[1]["lr"] == second["lr"] and runs[1].opt.param_groups[1]["maximize"]


@pytest.mark.parametrize("case", [CASES[i] for i in (2, 6, 10, 13, 15, 18)], ids=case_id)
def test_load_torch_state_dict(case, device):
    """torch's state dict after 5 steps, its tensors made vkt's, loaded into a new vkt optimizer over torch's
    parameters at that point: 5 more steps follow torch's; vkt's own state dict round-trips the same way."""
    name, kw = case
    arrays, cs, ds = start(2)
    ref = Run(torch, "cpu", arrays, cs, ds, name, kw)
    ref.run(5)
    tsd = ref.opt.state_dict()
    state = {k: {n: vkt.tensor(t.numpy()) for n, t in s.items()} for k, s in tsd["state"].items()}
    got = Run(vkt, device, [p.detach().numpy() for p in ref.params], cs, ds, name, kw)
    got.opt.load_state_dict({"state": state, "param_groups": tsd["param_groups"]})
    for s, p in zip(got.opt.state.values(), got.params):  # 0-d state (step, mu_product, eta, mu) on the host
        assert all(t.device == (p.device if t.dim() > 0 else vkt.device("cpu")) for t in s.values())
    ref.run(5)
    got.run(5)
    compare(got, ref)
    sd = got.opt.state_dict()
    again = Run(vkt, device, got.values(), cs, ds, name, kw)
    again.opt.load_state_dict(sd)
    key = list(sd["state"][0])[-1]  # the loaded state was copied, not shared
    assert sd["state"][0][key] is not again.opt.state[again.params[0]][key]
    ref.run(5)
    again.run(5)
    compare(again, ref)


def least_squares(lib, device, seed=3):
    """A 40 x 16 least-squares problem with weights w (16 x 1) and bias b: the parameters and the loss."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((40, 16)) * np.linspace(0.5, 1.5, 16)).astype(np.float32)  # condition number ~ 10
    y = rng.standard_normal((40, 1)).astype(np.float32)
    dev = {} if lib is torch else {"device": device}
    A, Y = lib.tensor(a, **dev), lib.tensor(y, **dev)
    w = lib.tensor(rng.standard_normal((16, 1)).astype(np.float32), **dev).requires_grad_()
    b = lib.zeros(1, **dev).requires_grad_()
    return [w, b], lambda: ((A @ w + b - Y) ** 2).mean()


def lbfgs_run(lib, device, steps, **kw):
    """steps of LBFGS from least_squares' start: (losses step() returned, parameters, optimizer)."""
    params, loss_fn = least_squares(lib, device)
    opt = lib.optim.LBFGS(params, **kw)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return losses, [p.detach().cpu().numpy() for p in params], opt


@pytest.mark.parametrize("kw", [dict(max_iter=3), dict(lr=0.5, max_iter=4, history_size=2),
                                dict(line_search_fn="strong_wolfe", max_iter=3),
                                dict(line_search_fn="strong_wolfe", max_iter=4, max_eval=6, history_size=2)],
                         ids=["plain", "short-history", "strong_wolfe", "strong_wolfe-short"])
def test_lbfgs(kw, device):
    """5 steps of a few iterations each, short of convergence (where the stopping tests compare rounding
    noise): the losses step() returns, the parameters, and the state's evaluation and iteration counts."""
    (tl, tp, topt), (vl, vp, vopt) = (lbfgs_run(lib, dev, 5, **kw) for lib, dev in ((torch, "cpu"), (vkt, device)))
    np.testing.assert_allclose(vl, tl, rtol=1e-5)
    assert tl[-1] < 0.5 * tl[0]
    for v, t in zip(vp, tp):
        assert_close(v, t, rtol=1e-5, atol=1e-5)
    tstate, vstate = topt.state[topt.param_groups[0]["params"][0]], vopt.state[vopt.param_groups[0]["params"][0]]
    assert (vstate["func_evals"], vstate["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert list(vopt.state_dict()["state"][0]) == list(topt.state_dict()["state"][0])


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_converges(line_search_fn, device):
    """Run to convergence with the defaults: torch's final loss, and its minimiser to 1e-4 (at the minimum a
    float32 loss is flat to rounding, so which point the stopping tests settle on is noise of that size)."""
    (tl, tp, _), (vl, vp, _) = (lbfgs_run(lib, dev, 3, line_search_fn=line_search_fn)
                                for lib, dev in ((torch, "cpu"), (vkt, device)))
    np.testing.assert_allclose(vl, tl, rtol=1e-5)
    for v, t in zip(vp, tp):
        assert_close(v, t, rtol=1e-4, atol=1e-4)


def test_lbfgs_state_dict(device):
    """torch's LBFGS state after 2 steps (curvature pairs, direction, H_diag) loaded into vkt's: the next 2
    steps are torch's."""
    tparams, tloss = least_squares(torch, "cpu")
    topt = torch.optim.LBFGS(tparams, max_iter=3, history_size=4)

    def tclosure():
        topt.zero_grad()
        loss = tloss()
        loss.backward()
        return loss

    for _ in range(2):
        topt.step(tclosure)
    tsd = topt.state_dict()

    def convert(v):
        if isinstance(v, torch.Tensor):
            return vkt.tensor(v.numpy())
        return [convert(x) for x in v] if isinstance(v, list) else v

    vparams, vloss = least_squares(vkt, device)
    with vkt.no_grad():
        for v, t in zip(vparams, tparams):
            v.copy_(vkt.tensor(t.detach().numpy(), device=device))
    vopt = vkt.optim.LBFGS(vparams, max_iter=3, history_size=4)
    vopt.load_state_dict({"state": {k: {n: convert(x) for n, x in s.items()} for k, s in tsd["state"].items()},
                          "param_groups": tsd["param_groups"]})
    state = vopt.state[vparams[0]]
    assert state["d"].device == vparams[0].device and len(state["old_dirs"]) == len(tsd["state"][0]["old_dirs"])

    def vclosure():
        vopt.zero_grad()
        loss = vloss()
        loss.backward()
        return loss

    for _ in range(2):
        np.testing.assert_allclose(vopt.step(vclosure).item(), topt.step(tclosure).item(), rtol=1e-5)
    for v, t in zip(vparams, tparams):
        assert_close(v.detach(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert list(vopt.state_dict()["state"][0]) == list(topt.state_dict()["state"][0])


def lbfgs_step(opt, p):
    def closure():
        loss = (p[0] ** 2).sum()
        loss.backward()
        return loss

    return opt.step(closure)


ERRORS = [  # (lib, params) -> a constructor call; both libraries must raise the same
    lambda lib, p: lib.optim.Adamax(p, lr=-1.0),
    lambda lib, p: lib.optim.Adamax(p, eps=-1.0),
    lambda lib, p: lib.optim.Adamax(p, betas=(1.0, 0.999)),
    lambda lib, p: lib.optim.Adamax(p, betas=(0.9, -0.1)),
    lambda lib, p: lib.optim.Adamax(p, weight_decay=-0.1),
    lambda lib, p: lib.optim.NAdam(p, lr=-0.1),
    lambda lib, p: lib.optim.NAdam(p, eps=-1e-8),
    lambda lib, p: lib.optim.NAdam(p, betas=(-0.1, 0.9)),
    lambda lib, p: lib.optim.NAdam(p, betas=(0.9, 1.0)),
    lambda lib, p: lib.optim.NAdam(p, weight_decay=-1),
    lambda lib, p: lib.optim.NAdam(p, momentum_decay=-0.5),
    lambda lib, p: lib.optim.RAdam(p, lr=-1e-3),
    lambda lib, p: lib.optim.RAdam(p, eps=-1.0),
    lambda lib, p: lib.optim.RAdam(p, betas=(1.5, 0.9)),
    lambda lib, p: lib.optim.RAdam(p, betas=(0.9, 1.0)),
    lambda lib, p: lib.optim.RAdam(p, weight_decay=-0.5),
    lambda lib, p: lib.optim.Adadelta(p, lr=-1.0),
    lambda lib, p: lib.optim.Adadelta(p, rho=1.5),
    lambda lib, p: lib.optim.Adadelta(p, rho=-0.1),
    lambda lib, p: lib.optim.Adadelta(p, eps=-1.0),
    lambda lib, p: lib.optim.Adadelta(p, weight_decay=-1.0),
    lambda lib, p: lib.optim.Rprop(p, lr=-1.0),
    lambda lib, p: lib.optim.Rprop(p, etas=(1.5, 1.2)),
    lambda lib, p: lib.optim.Rprop(p, etas=(0.5, 0.9)),
    lambda lib, p: lib.optim.Rprop(p, etas=(0.0, 1.2)),
    lambda lib, p: lib.optim.ASGD(p, lr=-1.0),
    lambda lib, p: lib.optim.ASGD(p, weight_decay=-1.0),
    lambda lib, p: lib.optim.LBFGS(p, lr=-1),
    lambda lib, p: lib.optim.LBFGS([{"params": p[:1]}, {"params": p[1:]}]),
    lambda lib, p: lbfgs_step(lib.optim.LBFGS(p, line_search_fn="backtracking"), p),
    lambda lib, p: lib.optim.NAdam([], lr=0.1),
    lambda lib, p: lib.optim.Rprop([{"params": p}, {"params": p[:1]}]),
    lambda lib, p: lib.optim.Adamax(p, lr=lib.ones(2)),
]


@pytest.mark.parametrize("make", ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))])
def test_errors(make):
    outcomes = []
    for lib in (torch, vkt):
        p = [lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)]
        outcomes.append(raised(lambda: make(lib, p)))
    assert outcomes[0][0] is not None
    assert outcomes[1] == outcomes[0]


def test_defaults_match_torch():
    """Every constructor's defaults (group keys and values) are torch's."""
    for name in ("Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "ASGD", "LBFGS"):
        t = getattr(torch.optim, name)([torch.ones(2, requires_grad=True)])
        v = getattr(vkt.optim, name)([vkt.ones(2, requires_grad=True)])
        assert v.defaults == t.defaults, name
        assert repr(v) == repr(t)


def test_state_on_devices(device):
    """Element state on the parameter's device, contiguous; the scalar state on the cpu, float32."""
    p = vkt.ones(3, device=device, requires_grad=True)
    for name, elementwise in (("NAdam", ["exp_avg", "exp_avg_sq"]), ("ASGD", ["ax"]),
                              ("Rprop", ["prev", "step_size"]), ("Adamax", ["exp_avg", "exp_inf"])):
        opt = getattr(vkt.optim, name)([p])
        p.grad = vkt.ones(3, device=device)
        opt.step()
        state = opt.state[p]
        assert all(state[k].device == p.device and state[k].is_contiguous() for k in elementwise)
        scalars = [k for k in state if k not in elementwise]
        assert all(state[k].device.type == "cpu" and state[k].dtype == vkt.float32 and state[k].dim() == 0
                   for k in scalars)


def test_closure_and_differentiable(device):
    p = vkt.ones(3, device=device, requires_grad=True)
    opt = vkt.optim.RAdam([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 3.0
    assert p.grad_fn is None and p.is_leaf
    with pytest.raises(RuntimeError, match="differentiable=True is not supported"):
        vkt.optim.Adadelta([p], differentiable=True)
