# vkt.optim.swa_utils (AveragedModel and its averaging functions, SWALR, update_bn), vkt.optim.Adafactor and the lazy
# modules (LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*, UninitializedParameter and
# UninitializedBuffer) against torch's, on both devices, from the same starting weights: averaged weights and buffers
# over several updates, lr schedules, optimizer trajectories and state dicts, the shapes, classes and state dicts of
# lazy modules before and after their first forward, their outputs with torch's weights loaded, and errors.
import copy

import numpy as np
import pytest

import vkt
from conftest import assert_close
from test_optim_more import Run as OptimRun

torch = pytest.importorskip("torch")


def as_vkt(message):
    return message.replace("torch.", "vkt.")


def raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e).__name__, str(e)
    return None, None


def same_error(vkt_call, torch_call):
    got, want = raised(vkt_call), raised(torch_call)
    assert got == (want[0], want[1] if want[1] is None else as_vkt(want[1]))
    return got


def to_vkt_state(state_dict, device):
    return {k: vkt.tensor(v.detach().numpy(), device=device) for k, v in state_dict.items()}


def state_matches(got, ref, rtol=1e-5, atol=1e-6):
    """The same keys in the same order, and the same values (dtype kind and shape too)."""
    assert list(got) == list(ref)
    for k, v in ref.items():
        g = got[k]
        assert tuple(g.shape) == tuple(v.shape) and g.is_floating_point() == v.is_floating_point(), k
        assert_close(g, v.detach().numpy(), rtol=rtol, atol=atol)


# ---- swa_utils.AveragedModel

def small_model(lib):
    return lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3), lib.nn.ReLU(), lib.nn.Linear(3, 2))


AVG_CASES = [  # (id, AveragedModel's keyword arguments, from a library's swa_utils)
    ("default", lambda su: {}),
    ("use_buffers", lambda su: dict(use_buffers=True)),
    ("ema-multi", lambda su: dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.9))),
    ("ema-multi-buffers", lambda su: dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.75), use_buffers=True)),
    ("swa-multi", lambda su: dict(multi_avg_fn=su.get_swa_multi_avg_fn())),
    ("ema", lambda su: dict(avg_fn=su.get_ema_avg_fn(0.8))),
    ("ema-buffers", lambda su: dict(avg_fn=su.get_ema_avg_fn(0.5), use_buffers=True)),
    ("swa", lambda su: dict(avg_fn=su.get_swa_avg_fn())),
]


@pytest.mark.parametrize("case", AVG_CASES, ids=lambda c: c[0])
def test_averaged_model(case, device):
    _, kwargs = case
    torch.manual_seed(0)
    ref_model = small_model(torch)
    model = small_model(vkt).to(device)
    model.load_state_dict(to_vkt_state(ref_model.state_dict(), device))
    ref_avg = torch.optim.swa_utils.AveragedModel(ref_model, **kwargs(torch.optim.swa_utils))
    avg = vkt.optim.swa_utils.AveragedModel(model, **kwargs(vkt.optim.swa_utils))
    assert list(avg.state_dict()) == list(ref_avg.state_dict())
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for step in range(4):
        for lib, m, inp in ((torch, ref_model, torch.tensor(x)), (vkt, model, vkt.tensor(x, device=device))):
            with lib.no_grad():
                for p in m.parameters():
                    p.mul_(0.75).add_(0.125 * (step + 1))
            m(inp * (step + 1))  # train mode: moves the batch norm's running stats
        ref_avg.update_parameters(ref_model)
        avg.update_parameters(model)
        state_matches(avg.state_dict(), ref_avg.state_dict())
    assert avg.n_averaged.device.type == "cpu" and int(avg.n_averaged) == 4  # on AveragedModel's device=None
    ref_avg.eval()
    avg.eval()
    assert_close(avg(vkt.tensor(x, device=device)), ref_avg(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_averaged_model_device(dev):
    model = small_model(vkt)
    avg = vkt.optim.swa_utils.AveragedModel(model, device=dev)
    assert all(t.device.type == "vulkan" for t in avg.state_dict().values())
    assert all(t.device.type == "cpu" for t in model.state_dict().values())
    avg.update_parameters(model)
    avg.update_parameters(model)
    state = model.state_dict()
    for k, v in avg.module.state_dict().items():
        assert_close(v, state[k].numpy(), rtol=1e-6, atol=1e-7)


SWA_ERRORS = [
    lambda lib, m: lib.optim.swa_utils.AveragedModel(m, avg_fn=lib.optim.swa_utils.get_swa_avg_fn(),
                                                     multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn()),
    lambda lib, m: lib.optim.swa_utils.get_ema_avg_fn(1.5),
    lambda lib, m: lib.optim.swa_utils.get_ema_multi_avg_fn(-0.1),
]


@pytest.mark.parametrize("call", SWA_ERRORS)
def test_averaged_model_errors(call):
    same_error(lambda: call(vkt, small_model(vkt)), lambda: call(torch, small_model(torch)))


# ---- swa_utils.SWALR

SWALR_CASES = [  # (SWALR's keyword arguments, the groups' lrs)
    (dict(swa_lr=0.05), [0.5]),
    (dict(swa_lr=0.05, anneal_epochs=4, anneal_strategy="linear"), [0.5]),
    (dict(swa_lr=[0.05, 0.2], anneal_epochs=3), [0.5, 0.1]),
    (dict(swa_lr=0.3, anneal_epochs=0), [0.5, 0.1]),
    (dict(swa_lr=0.01, anneal_epochs=1, anneal_strategy="linear"), [0.5]),
]


def sgd(lib, lrs):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return lib.optim.SGD(groups, lr=lrs[0])


@pytest.mark.parametrize("case", SWALR_CASES, ids=str)
def test_swalr(case):
    kwargs, lrs = case
    ref_opt, opt = sgd(torch, lrs), sgd(vkt, lrs)
    ref = torch.optim.swa_utils.SWALR(ref_opt, **kwargs)
    sched = vkt.optim.swa_utils.SWALR(opt, **kwargs)
    for _ in range(12):
        assert sched.get_last_lr() == pytest.approx(ref.get_last_lr(), rel=1e-12)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx([g["lr"] for g in ref_opt.param_groups])
        ref_opt.step()
        opt.step()
        ref.step()
        sched.step()
    state = sched.state_dict()
    assert sorted(state) == sorted(ref.state_dict()) and "anneal_func" not in state
    again = vkt.optim.swa_utils.SWALR(sgd(vkt, lrs), swa_lr=1.0, anneal_strategy="cos" if
                                      kwargs.get("anneal_strategy") == "linear" else "linear")
    again.load_state_dict(state)
    assert again._anneal_strategy == sched._anneal_strategy and again.anneal_func(0.25) == sched.anneal_func(0.25)


SWALR_ERRORS = [
    dict(swa_lr=0.1, anneal_strategy="exp"),
    dict(swa_lr=0.1, anneal_epochs=-1),
    dict(swa_lr=0.1, anneal_epochs=2.5),
    dict(swa_lr=[0.1, 0.2]),
]


@pytest.mark.parametrize("kwargs", SWALR_ERRORS, ids=str)
def test_swalr_errors(kwargs):
    same_error(lambda: vkt.optim.swa_utils.SWALR(sgd(vkt, [0.5]), **kwargs),
               lambda: torch.optim.swa_utils.SWALR(sgd(torch, [0.5]), **kwargs))


# ---- swa_utils.update_bn

def bn_model(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3, momentum=0.3), lib.nn.ReLU(),
                             lib.nn.InstanceNorm2d(3, track_running_stats=True), lib.nn.Flatten(), lib.nn.Linear(12, 4),
                             lib.nn.BatchNorm1d(4))


@pytest.mark.parametrize("batches", ["tensors", "tuples"])
def test_update_bn(batches, device):
    torch.manual_seed(0)
    ref_model = bn_model(torch)
    model = bn_model(vkt).to(device)
    model.load_state_dict(to_vkt_state(ref_model.state_dict(), device))
    ref_model.eval()
    model.eval()
    data = [np.random.default_rng(i).standard_normal((3, 2, 4, 4)).astype(np.float32) for i in range(3)]
    if batches == "tensors":
        ref_loader, loader = [torch.tensor(a) for a in data], [vkt.tensor(a) for a in data]
    else:
        ref_loader = [(torch.tensor(a), torch.zeros(3)) for a in data]
        loader = [(vkt.tensor(a), vkt.zeros(3)) for a in data]
    torch.optim.swa_utils.update_bn(ref_loader, ref_model)
    vkt.optim.swa_utils.update_bn(loader, model, device=device)
    state_matches(model.state_dict(), ref_model.state_dict())
    assert not model.training and model[1].momentum == 0.3 and model[6].momentum == 0.1
    assert int(model[3].num_batches_tracked) == 0  # an instance norm is no batch norm: left alone


# ---- Adafactor

SHAPES = [(3, 5), (7,), (2, 3, 4), (1,), ()]
STEPS = 8

ADAFACTOR_CASES = [
    dict(),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.5, maximize=True),
    dict(eps=(1e-4, 1e-2), d=1.5),
    dict(beta2_decay=-0.5, eps=(1e-30, 1e-3)),
    dict(lr=0.02, weight_decay=0.5, maximize=True, d=3.0),
]


def run_adafactor(lib, device, seed, kw, dtype="float32", skip=(), groups=None):
    """One library's copy of a problem (test_optim_more.Run: params, the quadratic's coefficients, g = c * p + d) and
    an Adafactor over them (groups: a function of the parameter list giving the optimizer's first argument)."""
    rng = np.random.default_rng(seed)
    arrays = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(3)]
    return OptimRun(lib, device, arrays[0], [np.abs(a) + 0.5 for a in arrays[1]], arrays[2], "Adafactor", kw, skip,
                    groups)


def optimizer_state_matches(sd, ref):
    assert sd["param_groups"] == ref["param_groups"]
    assert list(sd["state"]) == list(ref["state"])
    for k, state in ref["state"].items():
        assert list(sd["state"][k]) == list(state)
        for name, t in state.items():
            v = sd["state"][k][name]
            assert tuple(v.shape) == tuple(t.shape) and str(v.dtype)[4:] == str(t.dtype)[6:], name
            assert_close(v, t.numpy(), rtol=1e-5, atol=1e-6)


def trajectories_match(got, ref, rtol=1e-5, atol=1e-6):
    for g, r in zip(got.values(), ref.values()):
        assert_close(g, r, rtol=rtol, atol=atol)


@pytest.mark.parametrize("kw", ADAFACTOR_CASES, ids=str)
def test_adafactor_trajectory(kw, device):
    ref, got = run_adafactor(torch, "cpu", 0, kw, skip=[3]), run_adafactor(vkt, device, 0, kw, skip=[3])
    ref.run(STEPS)
    got.run(STEPS)
    trajectories_match(got, ref)
    assert 3 not in got.opt.state_dict()["state"]
    optimizer_state_matches(got.opt.state_dict(), ref.opt.state_dict())


def test_adafactor_float64(device):
    """eps1 defaults to the parameters' dtype's machine epsilon."""
    ref, got = run_adafactor(torch, "cpu", 1, {}, dtype="float64"), run_adafactor(vkt, device, 1, {}, dtype="float64")
    ref.run(STEPS)
    got.run(STEPS)
    trajectories_match(got, ref, rtol=1e-12, atol=1e-12)


def test_adafactor_param_groups(device):
    def groups(params):
        return [{"params": params[:2]}, {"params": params[2:], "lr": 0.3, "maximize": True, "weight_decay": 0.2}]
    ref, got = run_adafactor(torch, "cpu", 2, {}, groups=groups), run_adafactor(vkt, device, 2, {}, groups=groups)
    ref.run(STEPS)
    got.run(STEPS)
    trajectories_match(got, ref)
    optimizer_state_matches(got.opt.state_dict(), ref.opt.state_dict())


def test_adafactor_loads_torch_state(device):
    """torch's state dict, taken mid-run, continues in vkt as in torch."""
    kw = dict(lr=0.05, weight_decay=0.1)
    ref, got = run_adafactor(torch, "cpu", 3, kw), run_adafactor(vkt, device, 3, kw)
    ref.run(STEPS // 2)
    with vkt.no_grad():
        for p, r in zip(got.params, ref.params):
            p.copy_(vkt.tensor(r.detach().numpy()))
    state = ref.opt.state_dict()
    got.opt.load_state_dict({"state": {k: {n: vkt.tensor(t.numpy()) for n, t in s.items()}
                                       for k, s in state["state"].items()},
                             "param_groups": state["param_groups"]})
    ref.run(STEPS // 2)
    got.run(STEPS // 2)
    trajectories_match(got, ref)
    optimizer_state_matches(got.opt.state_dict(), ref.opt.state_dict())


ADAFACTOR_ERRORS = [dict(lr=-1.0), dict(beta2_decay=0.5), dict(eps=(-1.0, 1e-3)), dict(eps=(None, -1.0)),
                    dict(d=0.5), dict(weight_decay=-0.1)]


@pytest.mark.parametrize("kw", ADAFACTOR_ERRORS, ids=str)
def test_adafactor_errors(kw):
    same_error(lambda: vkt.optim.Adafactor([vkt.zeros(2, requires_grad=True)], **kw),
               lambda: torch.optim.Adafactor([torch.zeros(2, requires_grad=True)], **kw))


def test_adafactor_lr_tensor_and_closure(device):
    same_error(lambda: vkt.optim.Adafactor([vkt.zeros(2, requires_grad=True)], lr=vkt.tensor([0.1, 0.2])),
               lambda: torch.optim.Adafactor([torch.zeros(2, requires_grad=True)], lr=torch.tensor([0.1, 0.2])))
    p = vkt.ones(3, device=device, requires_grad=True)
    opt = vkt.optim.Adafactor([p], lr=vkt.tensor(0.1))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    assert float(opt.step(closure)) == 3.0
    ref_p = torch.ones(3, requires_grad=True)
    ref_opt = torch.optim.Adafactor([ref_p], lr=torch.tensor(0.1), foreach=False)
    (ref_p * ref_p).sum().backward()
    ref_opt.step()
    assert_close(p, ref_p.detach().numpy(), rtol=1e-6, atol=1e-7)


# ---- lazy modules

LAZY_CASES = [  # (class name, args, kwargs, input shape)
    ("LazyLinear", (3,), {}, (4, 5)),
    ("LazyLinear", (3,), dict(bias=False), (2, 4, 6)),
    ("LazyConv1d", (4, 3), {}, (2, 3, 10)),
    ("LazyConv2d", (4, 3), dict(padding=1, groups=2), (2, 4, 6, 6)),
    ("LazyConv2d", (4, 3), dict(padding_mode="reflect", padding=1), (3, 6, 6)),
    ("LazyConv3d", (2, 2), dict(bias=False), (1, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), dict(stride=2), (2, 3, 5)),
    ("LazyConvTranspose2d", (2, 3), dict(stride=2, output_padding=1), (2, 3, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 2, 3, 3, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm1d", (), dict(momentum=None, bias=False), (4, 3, 5)),
    ("LazyBatchNorm2d", (), dict(affine=False), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), dict(track_running_stats=False), (2, 2, 3, 3, 3)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), dict(affine=False, track_running_stats=False), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {}, (1, 2, 3, 3, 3)),
]


def lazy_id(case):
    return f"{case[0]}-{case[2]}-{case[3]}"


def lazy_state(module):
    """state_dict with each uninitialized value by its repr and each tensor by its shape."""
    return [(k, repr(v) if vkt.nn.parameter.is_lazy(v) or isinstance(v, torch.nn.parameter.UninitializedTensorMixin)
             else tuple(v.shape)) for k, v in module.state_dict().items()]


@pytest.mark.parametrize("case", LAZY_CASES, ids=lazy_id)
# torch's lazy instance norms without affine keep num_features 0 (it is never set from the input) and warn of it
@pytest.mark.filterwarnings("ignore:input's size at dim=1 does not match num_features")
def test_lazy_module(case, device):
    name, args, kwargs, shape = case
    rng = np.random.default_rng(0)
    x1, x2 = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    ref, ref_fresh = (getattr(torch.nn, name)(*args, **kwargs) for _ in range(2))
    m = getattr(vkt.nn, name)(*args, **kwargs).to(device)
    assert repr(m) == repr(ref) and lazy_state(m) == lazy_state(ref)
    assert m.has_uninitialized_params() == ref.has_uninitialized_params()
    assert isinstance(m, vkt.nn.modules.lazy.LazyModuleMixin)
    fresh = copy.deepcopy(m)

    ref(torch.tensor(x1))
    m(vkt.tensor(x1, device=device))
    assert type(m).__name__ == type(ref).__name__ == name[4:] and repr(m) == repr(ref)
    assert lazy_state(m) == lazy_state(ref) and not m._forward_pre_hooks
    assert all(t.device.type == device for t in m.state_dict().values())
    assert type(getattr(m, "running_mean", None)) in (type(None), vkt.Tensor)

    # torch's weights into the initialized module, and into a fresh one (materialized, lazy until its forward)
    state = copy.deepcopy(ref.state_dict())
    m.load_state_dict(to_vkt_state(state, device))
    assert_close(m(vkt.tensor(x2, device=device)), ref(torch.tensor(x2)).detach().numpy(), rtol=1e-5, atol=1e-5)
    state_matches(m.state_dict(), ref.state_dict())
    ref_fresh.load_state_dict(state)
    fresh.load_state_dict(to_vkt_state(state, device))
    assert type(fresh).__name__ == name and lazy_state(fresh) == lazy_state(ref_fresh)
    outs = []
    error = same_error(lambda: outs.append(fresh(vkt.tensor(x2, device=device))),
                       lambda: outs.append(ref_fresh(torch.tensor(x2))))
    if error[0] is None:  # torch's lazy instance norms keep num_features 0 when loaded: both refuse
        assert_close(outs[0], outs[1].detach().numpy(), rtol=1e-5, atol=1e-5)
        assert type(fresh).__name__ == name[4:]
        state_matches(fresh.state_dict(), ref_fresh.state_dict())


def test_lazy_device_and_dtype(device):
    m = vkt.nn.LazyLinear(3, device=device, dtype=vkt.float64)
    assert m.weight.device.type == device and m.weight.dtype == vkt.float64
    m(vkt.randn(2, 4, device=device, dtype=vkt.float64))
    assert m.weight.shape == (3, 4) and m.weight.dtype == vkt.float64 and m.bias.device.type == device
    bn = vkt.nn.LazyBatchNorm1d().double().to(device)  # moved and cast while uninitialized: stays uninitialized
    assert isinstance(bn.running_mean, vkt.nn.UninitializedBuffer) and bn.running_mean.dtype == vkt.float64
    assert isinstance(bn.weight, vkt.nn.UninitializedParameter) and bn.weight.device.type == device
    bn(vkt.randn(4, 2, device=device, dtype=vkt.float64))
    assert bn.running_var.shape == (2,) and bn.running_var.dtype == vkt.float64 and bn.weight.device.type == device


def test_uninitialized_tensors():
    for cls in ("UninitializedParameter", "UninitializedBuffer"):
        p, ref = getattr(vkt.nn, cls)(), getattr(torch.nn, cls)()
        assert repr(p) == repr(ref) == f"<{cls}>"
        same_error(lambda: p.shape, lambda: ref.shape)
        assert vkt.nn.parameter.is_lazy(p) and type(copy.deepcopy(p)) is type(p)
        assert type(p.double()) is type(p) and p.double().dtype == vkt.float64
        assert p.requires_grad == ref.requires_grad
    p = vkt.nn.UninitializedParameter(requires_grad=False)
    p.materialize((2, 3), dtype=vkt.float64)
    assert type(p) is vkt.nn.Parameter and p.shape == (2, 3) and p.dtype == vkt.float64 and not p.requires_grad
    buf = vkt.nn.UninitializedBuffer(persistent=False)
    assert buf.persistent is False and not vkt.nn.parameter.is_lazy(vkt.zeros(1))


def test_lazy_state_dict_in_a_container(device):
    """A Sequential of lazy modules: state_dict keys before and after, and a torch state loaded before any forward
    gives torch's outputs."""
    def net(lib):
        return lib.nn.Sequential(lib.nn.LazyConv2d(4, 3), lib.nn.LazyBatchNorm2d(), lib.nn.ReLU(), lib.nn.Flatten(),
                                 lib.nn.LazyLinear(2))
    ref, m = net(torch), net(vkt).to(device)
    assert lazy_state(m) == lazy_state(ref)
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    ref(torch.tensor(x))
    state = copy.deepcopy(ref.state_dict())
    out = ref(torch.tensor(x)).detach().numpy()
    result = m.load_state_dict(to_vkt_state(state, device))
    assert not result.missing_keys and not result.unexpected_keys
    assert [type(c).__name__ for c in m] == ["LazyConv2d", "LazyBatchNorm2d", "ReLU", "Flatten", "LazyLinear"]
    assert_close(m(vkt.tensor(x, device=device)), out, rtol=1e-5, atol=1e-5)
    assert [type(c).__name__ for c in m] == [type(c).__name__ for c in ref] and lazy_state(m) == lazy_state(ref)


def test_lazy_initialize_parameters(device):
    """initialize_parameters alone materializes; the module becomes a Linear at its forward."""
    m = vkt.nn.LazyLinear(2).to(device)
    x = vkt.randn(3, 4, device=device)
    m.initialize_parameters(x)
    assert not m.has_uninitialized_params() and type(m) is vkt.nn.LazyLinear and m.weight.shape == (2, 4)
    w = m.weight
    m(x)
    assert type(m) is vkt.nn.Linear and m.weight is w


LAZY_ERRORS = [  # (class name, args, kwargs, input shape)
    ("LazyConv2d", (4, 3), {}, (2, 3)),
    ("LazyConv1d", (4, 3), dict(groups=2), (2, 3, 8)),
    ("LazyConvTranspose1d", (4, 3), dict(padding_mode="reflect"), (2, 3, 8)),
    ("LazyBatchNorm2d", (), {}, (2, 3)),
]


@pytest.mark.parametrize("case", LAZY_ERRORS, ids=lazy_id)
def test_lazy_errors(case):
    name, args, kwargs, shape = case
    same_error(lambda: getattr(vkt.nn, name)(*args, **kwargs)(vkt.zeros(*shape)),
               lambda: getattr(torch.nn, name)(*args, **kwargs)(torch.zeros(*shape)))


def test_lazy_linear_loaded_with_other_features():
    def call(lib):
        m = lib.nn.LazyLinear(2)
        m.load_state_dict({"weight": lib.zeros(2, 5), "bias": lib.zeros(2)})
        m(lib.zeros(3, 6))
    same_error(lambda: call(vkt), lambda: call(torch))
