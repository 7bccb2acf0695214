# vkt.nn.utils.parametrize and parametrizations, the hook-based weight_norm / spectral_norm, vkt.func.functional_call
# and the BatchNorm fusions against torch 2.13: each case builds one module in both libraries from the same weights,
# applies the same parametrization, and compares state_dict keys and values, reprs, the output, one SGD step's
# gradients and updated weights, and the errors.
import copy
import io
import pickle
import warnings

import numpy as np
import pytest
import torch
from safetensors.torch import load as safetensors_load

import vkt
import vkt.safetensors
from vkt import nn
from conftest import assert_close, raised

LIBS = {"torch": torch, "vkt": vkt}
RTOL, ATOL = 1e-4, 1e-5


def custom(L):
    """The same user-written parametrizations in library L (class names matter: they show in reprs)."""
    class Symmetric(L.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

    class Scale(L.nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):
            return X / 2

    class SumOf(L.nn.Module):
        def forward(self, A, B):
            return A + B

        def right_inverse(self, X):
            return X * 0.25, X * 0.75

    class Row(L.nn.Module):
        def forward(self, X):
            return X[:1]

    class ToDouble(L.nn.Module):
        def forward(self, X):
            return X.double()

    class Three(L.nn.Module):
        def forward(self, X):
            return 3

    class Inverse(L.nn.Module):
        def __init__(self, result):
            super().__init__()
            self.result = result

        def forward(self, X):
            return X

        def right_inverse(self, X):
            return self.result(X)

    class Gain(L.nn.Module):  # a parametrizable buffer, used in forward
        def __init__(self):
            super().__init__()
            self.weight = L.nn.Parameter(L.ones(4, 3))
            self.register_buffer("gain", L.ones(4))

        def forward(self, x):
            return x @ self.weight.mT * self.gain
    return {c.__name__: c for c in (Symmetric, Scale, SumOf, Row, ToDouble, Three, Inverse, Gain)}


def P(L):
    return L.nn.utils.parametrize


def PZ(L):
    return L.nn.utils.parametrizations


def U(L):
    return L.nn.utils


def register(name, *args, **kwargs):
    """apply(L, module): registers custom(L)[name](*args) on module.weight."""
    return lambda L, m: P(L).register_parametrization(m, "weight", custom(L)[name](*args), **kwargs)


def chained(L, m):
    P(L).register_parametrization(m, "weight", custom(L)["Symmetric"]())
    P(L).register_parametrization(m, "weight", custom(L)["Scale"]())


def linear(i, o):
    return lambda L: L.nn.Linear(i, o)


# name: (factory, apply, input shape, state_dict keys drawn at random when registering)
CASES = {
    "symmetric": (linear(3, 3), register("Symmetric"), (2, 3), ()),
    "right_inverse": (linear(3, 4), register("Scale"), (2, 3), ()),
    "two_tensors": (linear(3, 4), register("SumOf"), (2, 3), ()),
    "chained": (linear(3, 3), chained, (2, 3), ()),
    "buffer": (lambda L: custom(L)["Gain"](),
               lambda L, m: P(L).register_parametrization(m, "gain", custom(L)["Scale"]()), (2, 3), ()),
    "orthogonal": (linear(4, 4), lambda L, m: PZ(L).orthogonal(m), (2, 4), ()),
    "orthogonal_cayley_tall": (linear(3, 5), lambda L, m: PZ(L).orthogonal(m, orthogonal_map="cayley"), (2, 3),
                               ("parametrizations.weight.0.base",)),
    "orthogonal_householder_wide": (linear(5, 3), lambda L, m: PZ(L).orthogonal(m), (2, 5),
                                    ("parametrizations.weight.0.base",)),
    "orthogonal_householder_square": (linear(4, 4), lambda L, m: PZ(L).orthogonal(m, orthogonal_map="householder"),
                                      (2, 4), ()),
    "orthogonal_householder_untrivialized": (
        linear(3, 5), lambda L, m: PZ(L).orthogonal(m, "weight", "householder", use_trivialization=False), (2, 3), ()),
    "orthogonal_matrix_exp_untrivialized": (
        linear(4, 4), lambda L, m: PZ(L).orthogonal(m, use_trivialization=False), (2, 4), ()),
    "orthogonal_batched_conv": (lambda L: L.nn.Conv1d(2, 3, 2), lambda L, m: PZ(L).orthogonal(m), (2, 2, 5), ()),
    "spectral_norm": (linear(3, 5), lambda L, m: PZ(L).spectral_norm(m), (2, 3),
                      ("parametrizations.weight.0._u", "parametrizations.weight.0._v")),
    "spectral_norm_conv_transpose": (lambda L: L.nn.ConvTranspose1d(2, 3, 2), lambda L, m: PZ(L).spectral_norm(m),
                                     (2, 2, 4), ("parametrizations.weight.0._u", "parametrizations.weight.0._v")),
    "spectral_norm_vector": (linear(3, 4), lambda L, m: PZ(L).spectral_norm(m, "bias"), (2, 3), ()),
    "weight_norm": (linear(3, 5), lambda L, m: PZ(L).weight_norm(m), (2, 3), ()),
    "weight_norm_dim_none": (linear(3, 5), lambda L, m: PZ(L).weight_norm(m, dim=None), (2, 3), ()),
    "weight_norm_conv_dim1": (lambda L: L.nn.Conv1d(2, 3, 2), lambda L, m: PZ(L).weight_norm(m, dim=1), (2, 2, 5),
                              ()),
    "hook_weight_norm": (linear(3, 5), lambda L, m: U(L).weight_norm(m), (2, 3), ()),
    "hook_weight_norm_last_dim": (linear(3, 5), lambda L, m: U(L).weight_norm(m, dim=1), (2, 3), ()),
    "hook_spectral_norm": (linear(3, 5), lambda L, m: U(L).spectral_norm(m), (2, 3), ("weight_u", "weight_v")),
}


def quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args)


def as_vkt(state, device):
    return {k: vkt.tensor(v.detach().numpy(), device=device) for k, v in state.items()}


def as_torch(state):
    return {k: torch.from_numpy(v.detach().cpu().numpy().copy()) for k, v in state.items()}


def pair(factory, device):
    """(torch module, vkt module on device) with the same weights, before any parametrization."""
    torch.manual_seed(0)
    tm = factory(torch)
    vm = factory(vkt).to(device)
    vm.load_state_dict(as_vkt(tm.state_dict(), device))
    return tm, vm


def assert_state_close(vm, tm, skip=()):
    vsd, tsd = vm.state_dict(), tm.state_dict()
    assert list(vsd) == list(tsd)
    for k, v in tsd.items():
        if k not in skip:
            assert_close(vsd[k], v.numpy(), RTOL, ATOL)


@pytest.mark.parametrize("case", list(CASES))
def test_parametrization_matches_torch(case, device):
    factory, apply, shape, random_keys = CASES[case]
    tm, vm = pair(factory, device)
    quietly(apply, torch, tm)
    quietly(apply, vkt, vm)
    assert type(vm).__name__ == type(tm).__name__ and repr(vm) == repr(tm)
    assert_state_close(vm, tm, skip=random_keys)  # what registering computed from the weights
    vm.load_state_dict(as_vkt(tm.state_dict(), device))  # the random power-iteration vectors, bases
    x = torch.randn(*shape)
    vx = vkt.tensor(x.numpy(), device=device)
    topt, vopt = torch.optim.SGD(tm.parameters(), lr=0.1), vkt.optim.SGD(vm.parameters(), lr=0.1)
    tout, vout = tm(x), vm(vx)
    assert_close(vout.detach(), tout.detach().numpy(), RTOL, ATOL)
    (tout ** 2).mean().backward()
    (vout ** 2).mean().backward()
    tgrads = {k: p.grad for k, p in tm.named_parameters()}
    vgrads = {k: p.grad for k, p in vm.named_parameters()}
    assert list(vgrads) == list(tgrads)
    for k, g in tgrads.items():
        assert_close(vgrads[k], g.numpy(), RTOL, ATOL)
    topt.step()
    vopt.step()
    assert_state_close(vm, tm)
    assert_close(vm(vx).detach(), tm(x).detach().numpy(), RTOL, ATOL)
    tm2 = factory(torch)
    quietly(apply, torch, tm2)
    tm2.load_state_dict(as_torch(vm.state_dict()))  # and back into torch
    assert_close(vm.eval()(vx).detach(), tm2.eval()(x).detach().numpy(), RTOL, ATOL)


def orthogonality(w):
    w = w.detach().cpu().numpy()
    if w.shape[-2] < w.shape[-1]:
        w = np.swapaxes(w, -1, -2)
    return w.swapaxes(-1, -2) @ w


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("orthogonal")])
def test_orthogonal_weights_are_orthogonal(case, device):
    factory, apply, _, _ = CASES[case]
    _, vm = pair(factory, device)
    apply(vkt, vm)
    gram = orthogonality(vm.weight)
    assert_close(gram, np.broadcast_to(np.eye(gram.shape[-1]), gram.shape), 1e-5, 1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_assignment_matches_torch(orthogonal_map, dtype, device):
    """module.weight = Q goes through right_inverse (a QR in vkt's Python Householder code) as in torch."""
    q = torch.linalg.qr(torch.randn(4, 4, generator=torch.Generator().manual_seed(3), dtype=getattr(torch, dtype)))[0]
    a = torch.randn(4, 4, generator=torch.Generator().manual_seed(4), dtype=getattr(torch, dtype))
    found = []
    for L, dev in ((torch, "cpu"), (vkt, device)):
        m = L.nn.Linear(4, 4).to(dtype=getattr(L, dtype))
        m = m.to(dev) if L is vkt else m
        PZ(L).orthogonal(m, orthogonal_map=orthogonal_map)
        results = []
        for value in (q, a):  # already orthogonal: kept; not: orthogonalised
            m.weight = L.tensor(value.numpy(), device=dev) if L is vkt else value
            results += [m.weight.detach().cpu().numpy(), m.parametrizations.weight[0].base.cpu().numpy()]
        found.append(results)
    for got, ref in zip(*reversed(found)):
        assert_close(got, ref, 1e-5, 1e-5)


def test_parametrized_class_state_and_identity():
    tm, vm = pair(linear(3, 3), "cpu")
    weight = vm.weight
    for L, m in ((torch, tm), (vkt, vm)):
        assert not P(L).is_parametrized(m)
        P(L).register_parametrization(m, "weight", custom(L)["Scale"]())
    assert vm.parametrizations.weight.original is weight  # the optimizer's Parameter stays the trained one
    assert type(vm).__name__ == "ParametrizedLinear" and type(nn.Linear(1, 1)) is nn.Linear
    assert P(vkt).type_before_parametrizations(vm) is nn.Linear and isinstance(vm, nn.Linear)
    assert P(vkt).is_parametrized(vm) and P(vkt).is_parametrized(vm, "weight")
    assert not P(vkt).is_parametrized(vm, "bias")
    assert "weight" not in vm._parameters and vm.parametrizations.weight.is_tensor
    assert [n for n, _ in vm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    value = np.arange(9, dtype=np.float32).reshape(3, 3)
    tm.weight, vm.weight = torch.tensor(value), vkt.tensor(value)  # through right_inverse
    assert vm.parametrizations.weight.original is weight
    assert_close(weight, tm.parametrizations.weight.original.detach().numpy())
    assert_close(vm.weight.detach(), value)
    vm.eval()
    assert not vm.parametrizations.weight[0].training
    mode = nn.Linear(2, 2).eval()
    P(vkt).register_parametrization(mode, "weight", custom(vkt)["Scale"]())
    assert not mode.parametrizations.weight[0].training  # registering takes the module's mode


def test_cached_computes_once():
    for L in LIBS.values():
        calls = []

        class Counted(L.nn.Module):
            def forward(self, X):
                calls.append(1)
                return X * 2
        m = L.nn.Linear(2, 2)
        P(L).register_parametrization(m, "weight", Counted())
        calls.clear()
        with P(L).cached():
            assert m.weight is m.weight
            with P(L).cached():
                m.weight
        assert len(calls) == 1 and m.weight is not m.weight and len(calls) == 3


@pytest.mark.parametrize("leave_parametrized", [True, False])
@pytest.mark.parametrize("case", ["right_inverse", "orthogonal", "two_tensors", "buffer"])
def test_remove_parametrizations_matches_torch(case, leave_parametrized, device):
    factory, apply, _, _ = CASES[case]
    tm, vm = pair(factory, device)
    apply(torch, tm)
    apply(vkt, vm)
    vm.load_state_dict(as_vkt(tm.state_dict(), device))
    name = "gain" if case == "buffer" else "weight"
    original = getattr(vm.parametrizations, name).original if case != "two_tensors" else None
    results = [raised(lambda: P(L).remove_parametrizations(m, name, leave_parametrized))
               for L, m in ((vkt, vm), (torch, tm))]
    assert results[0] == results[1]
    if results[0][0] is not None:
        return
    assert type(vm).__name__ == type(tm).__name__ and not P(vkt).is_parametrized(vm)
    assert not hasattr(vm, "parametrizations") and repr(vm) == repr(tm)
    assert_state_close(vm, tm)
    assert type(getattr(vm, name)).__name__ == type(getattr(tm, name)).__name__
    if original is not None:
        assert getattr(vm, name) is original


def test_transfer_parametrizations_and_params():
    tm, vm = pair(linear(3, 3), "cpu")
    for L, m in ((torch, tm), (vkt, vm)):
        chained(L, m)
    targets = [P(L).transfer_parametrizations_and_params(m, L.nn.Linear(3, 3)) for L, m in ((vkt, vm), (torch, tm))]
    assert repr(targets[0]) == repr(targets[1])
    assert targets[0].parametrizations.weight.original is vm.parametrizations.weight.original
    assert_close(targets[0].weight.detach(), targets[1].weight.detach().numpy())


def test_deepcopy_move_and_pickle(device):
    tm, vm = pair(linear(4, 4), "cpu")
    PZ(vkt).orthogonal(vm)
    vc = copy.deepcopy(vm)
    assert type(vc) is type(vm) and vc.parametrizations.weight.original is not vm.parametrizations.weight.original
    assert_close(vc.weight.detach(), vm.weight.detach().numpy())
    vc.to(device)
    assert vc.parametrizations.weight[0].base.device.type == device and vc.weight.device.type == device
    assert_close(vc.weight.detach(), vm.weight.detach().numpy(), 1e-5, 1e-5)
    PZ(torch).orthogonal(tm)
    assert raised(lambda: pickle.dumps(vm)) == raised(lambda: pickle.dumps(tm))


def test_torch_checkpoint_loads_and_goes_back(device):
    """A parametrized state dict written by torch.save loads into vkt; vkt's goes back to torch (safetensors)."""
    torch.manual_seed(1)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4))
    PZ(torch).orthogonal(tm[2])
    PZ(torch).weight_norm(tm[0])
    vm = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4))
    PZ(vkt).orthogonal(vm[2])
    PZ(vkt).weight_norm(vm[0])
    buf = io.BytesIO()
    torch.save(tm.state_dict(), buf)
    vm.load_state_dict(vkt.load(io.BytesIO(buf.getvalue()), map_location=device))
    vm.to(device)
    x = torch.randn(2, 3)
    assert_close(vm(vkt.tensor(x.numpy(), device=device)).detach(), tm(x).detach().numpy(), RTOL, ATOL)
    tm2 = copy.deepcopy(tm)
    tm2.load_state_dict(safetensors_load(vkt.safetensors.save({k: v.contiguous() for k, v in vm.state_dict().items()})))
    assert_close(tm2(x).detach().numpy(), tm(x).detach().numpy(), 0, 0)


def test_deprecated_forms_warn():
    for L in LIBS.values():
        with pytest.warns(FutureWarning, match="nn.utils.weight_norm` is deprecated"):
            U(L).weight_norm(L.nn.Linear(2, 2))
        with pytest.warns(FutureWarning, match="nn.utils.stateless.functional_call` is deprecated"):
            U(L).stateless.functional_call(L.nn.Linear(2, 2), {}, (L.ones(1, 2),))


def test_hook_forms_remove_like_torch(device):
    for apply, remove in ((lambda L, m: U(L).weight_norm(m), lambda L, m: U(L).remove_weight_norm(m)),
                          (lambda L, m: U(L).spectral_norm(m), lambda L, m: U(L).remove_spectral_norm(m))):
        tm, vm = pair(linear(3, 5), device)
        quietly(apply, torch, tm)
        quietly(apply, vkt, vm)
        vm.load_state_dict(as_vkt(tm.state_dict(), device))
        x = torch.randn(2, 3)
        vm(vkt.tensor(x.numpy(), device=device)), tm(x)
        remove(torch, tm)
        remove(vkt, vm)
        assert isinstance(vm.weight, nn.Parameter) and not vm._forward_pre_hooks
        assert_state_close(vm, tm)


def two(L, apply):
    m = L.nn.Linear(3, 4)
    quietly(apply, L, m)
    quietly(apply, L, m)


def assign(L, m, value):
    m.weight = value


ERRORS = [
    lambda L: P(L).register_parametrization(L.nn.Linear(3, 4), "foo", custom(L)["Scale"]()),
    lambda L: P(L).register_parametrization(L.nn.Linear(3, 4), "weight", custom(L)["Row"]()),
    lambda L: P(L).register_parametrization(L.nn.Linear(3, 4), "weight", custom(L)["ToDouble"]()),
    lambda L: P(L).register_parametrization(L.nn.Linear(3, 4), "weight", custom(L)["Three"]()),
    lambda L: P(L).register_parametrization(L.nn.Linear(3, 4), "weight", custom(L)["Inverse"](lambda X: 3)),
    lambda L: P(L).register_parametrization(L.nn.Linear(3, 4), "weight", custom(L)["Inverse"](lambda X: (X, 3))),
    lambda L: P(L).register_parametrization(L.nn.Linear(3, 4), "weight", custom(L)["Inverse"](lambda X: X.double())),
    lambda L: P(L).register_parametrization(register("Scale")(L, L.nn.Linear(3, 4)), "weight", custom(L)["Row"]()),
    lambda L: P(L).register_parametrization(register("Scale")(L, L.nn.Linear(3, 4)), "weight",
                                            custom(L)["Inverse"](lambda X: X[:1])),
    lambda L: P(L).register_parametrization(register("Scale")(L, L.nn.Linear(3, 4)), "weight",
                                            custom(L)["Inverse"](lambda X: X.double())),
    lambda L: P(L).remove_parametrizations(L.nn.Linear(3, 4), "weight"),
    lambda L: P(L).remove_parametrizations(register("Scale")(L, L.nn.Linear(3, 4)), "bias"),
    lambda L: assign(L, register("Symmetric")(L, L.nn.Linear(3, 3)), L.zeros(3, 3)),
    lambda L: assign(L, register("Scale")(L, L.nn.Linear(3, 3)), L.nn.Parameter(L.zeros(3, 3))),
    lambda L: assign(L, register("SumOf")(L, L.nn.Linear(3, 3)), L.zeros(3, 3).double()),
    lambda L: assign(L, PZ(L).orthogonal(L.nn.Linear(4, 4)), L.ones(3, 3)),
    lambda L: assign(L, PZ(L).orthogonal(L.nn.Linear(4, 4), use_trivialization=False), L.eye(4)),
    lambda L: PZ(L).orthogonal(L.nn.Linear(3, 4), "bias"),
    lambda L: PZ(L).orthogonal(L.nn.Linear(3, 4), "foo"),
    lambda L: PZ(L).orthogonal(L.nn.Linear(3, 4), orthogonal_map="qr"),
    lambda L: PZ(L).spectral_norm(L.nn.Linear(3, 4), n_power_iterations=0),
    lambda L: PZ(L).spectral_norm(L.nn.Linear(3, 4), dim=2),
    lambda L: PZ(L).spectral_norm(L.nn.Linear(3, 4), "foo"),
    lambda L: two(L, lambda L, m: U(L).weight_norm(m)),
    lambda L: two(L, lambda L, m: U(L).spectral_norm(m)),
    lambda L: U(L).remove_weight_norm(L.nn.Linear(3, 4)),
    lambda L: U(L).remove_spectral_norm(L.nn.Linear(3, 4)),
    lambda L: U(L).spectral_norm(L.nn.Linear(3, 4, bias=False), "bias"),
    lambda L: U(L).spectral_norm(L.nn.Linear(3, 4), n_power_iterations=0),
]


@pytest.mark.parametrize("action", ERRORS)
def test_errors_match_torch(action):
    got, ref = raised(lambda: action(vkt)), raised(lambda: action(torch))
    assert ref[0] is not None and got == (ref[0], ref[1].replace("torch.float", "vkt.float"))


# ---- vkt.func.functional_call ----

def tied(L):
    lin = L.nn.Linear(3, 3)
    return L.nn.Sequential(lin, L.nn.Tanh(), lin)


def functional(L, module, params, *args, **kwargs):
    return L.func.functional_call(module, params, *args, **kwargs)


# (module factory, {name: shape} given, input shape, keyword arguments of functional_call)
CALLS = {
    "weight": (linear(3, 2), {"weight": (2, 3)}, (4, 3), {}),
    "all": (linear(3, 2), {"weight": (2, 3), "bias": (2,)}, (4, 3), {"strict": True}),
    "tied": (tied, {"0.weight": (3, 3)}, (2, 3), {}),
    "untied": (tied, {"0.weight": (3, 3)}, (2, 3), {"tie_weights": False}),
    "buffers": (lambda L: L.nn.BatchNorm1d(3), {"running_mean": (3,), "running_var": (3,), "weight": (3,)}, (4, 3),
                {}),
    "list_of_dicts": (linear(3, 2), [{"weight": (2, 3)}, {"bias": (2,)}], (4, 3), {}),
    "parametrized": (lambda L: PZ(L).orthogonal(L.nn.Linear(3, 3)),
                     {"parametrizations.weight.original": (3, 3)}, (2, 3), {}),
}


@pytest.mark.parametrize("case", list(CALLS))
def test_functional_call_matches_torch(case, device):
    factory, given, shape, kwargs = CALLS[case]
    tm, vm = pair(factory, device)
    gen = torch.Generator().manual_seed(2)
    dicts = given if isinstance(given, list) else [given]
    tgiven = [{k: torch.randn(*s, generator=gen).abs().requires_grad_("running" not in k) for k, s in d.items()}
              for d in dicts]
    vgiven = [{k: vkt.tensor(v.detach().numpy(), device=device, requires_grad=v.requires_grad) for k, v in d.items()}
              for d in tgiven]
    before = {k: v.clone() for k, v in vm.state_dict().items()}
    x = torch.randn(*shape, generator=gen)
    tout = functional(torch, tm, tgiven if isinstance(given, list) else tgiven[0], (x,), **kwargs)
    vout = functional(vkt, vm, vgiven if isinstance(given, list) else vgiven[0],
                      vkt.tensor(x.numpy(), device=device), **kwargs)
    assert_close(vout.detach(), tout.detach().numpy(), RTOL, ATOL)
    tout.sum().backward()
    vout.sum().backward()
    for td, vd in zip(tgiven, vgiven):
        for k, t in td.items():
            assert (vd[k].grad is None) == (t.grad is None), k
            if t.grad is not None:
                assert_close(vd[k].grad, t.grad.numpy(), RTOL, ATOL)
            assert_close(vd[k].detach(), t.detach().numpy(), RTOL, ATOL)  # running stats updated in place
    if case == "tied":  # torch 2.13 leaves the given tensor in the tied module; vkt restores it
        for k, v in vm.state_dict().items():
            assert_close(v, before[k].cpu().numpy(), 0, 0)
        return
    assert_state_close(vm, tm)  # the module's own buffers (num_batches_tracked) changed as torch's
    for (k, v), (_, t) in zip(vm.named_parameters(), tm.named_parameters()):
        assert (v.grad is None) == (t.grad is None), k  # only the module's own tensors that were used
        if t.grad is not None:
            assert_close(v.grad, t.grad.numpy(), RTOL, ATOL)


FUNCTIONAL_ERRORS = [
    lambda L: functional(L, L.nn.Linear(3, 2), {"weight": L.zeros(2, 3), "extra": L.zeros(1)}, (L.ones(1, 3),),
                         strict=True),
    lambda L: functional(L, L.nn.Linear(3, 2), [{"weight": L.zeros(2, 3)}, {"weight": L.zeros(2, 3)}],
                         (L.ones(1, 3),)),
    lambda L: functional(L, L.nn.Linear(3, 2), [{"weight": L.zeros(2, 3)}, 3], (L.ones(1, 3),)),
    lambda L: functional(L, L.nn.Linear(3, 2), 3, (L.ones(1, 3),)),
    lambda L: functional(L, tied(L), {"0.weight": L.zeros(3, 3), "2.weight": L.ones(3, 3)}, (L.ones(1, 3),)),
    lambda L: functional(L, L.nn.Linear(3, 2), {"weight": L.zeros(3, 3)}, (L.ones(1, 3),)),
]


@pytest.mark.parametrize("action", FUNCTIONAL_ERRORS)
def test_functional_call_errors_match_torch(action):
    got, ref = raised(lambda: action(vkt)), raised(lambda: action(torch))
    assert ref[0] is not None and got[0] == ref[0]
    if ref[0] != "RuntimeError" or "reparametrizing" in ref[1]:  # a shape mismatch is the matmul's own message
        assert got[1] == ref[1]


def test_functional_call_arguments_and_stack_module_state():
    found = []
    for L in LIBS.values():
        class Affine(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = L.nn.Parameter(L.ones(2))

            def forward(self, x, *, shift=0.0):
                return x * self.w + shift
        m = Affine()
        out = L.func.functional_call(m, {"w": L.full((2,), 3.0)}, L.ones(2), {"shift": 1.0})
        params, buffers = L.func.stack_module_state([L.nn.BatchNorm1d(2), L.nn.BatchNorm1d(2)])
        found.append((out.tolist(), {k: (tuple(v.shape), v.requires_grad, v.is_leaf) for k, v in params.items()},
                      {k: tuple(v.shape) for k, v in buffers.items()},
                      raised(lambda: L.func.stack_module_state([])),
                      raised(lambda: L.func.stack_module_state([L.nn.Linear(1, 1), L.nn.Linear(1, 1).eval()]))))
    assert found[0] == found[1]


# ---- fusion ----

@pytest.mark.parametrize("kind", ["conv", "conv_transpose", "linear"])
def test_fuse_bn_eval_matches_torch(kind, device):
    def build(L):
        layer = {"conv": lambda: L.nn.Conv1d(2, 3, 2), "conv_transpose": lambda: L.nn.ConvTranspose1d(2, 3, 2),
                 "linear": lambda: L.nn.Linear(2, 3)}[kind]()
        return L.nn.Sequential(layer, L.nn.BatchNorm1d(3))
    tm, vm = pair(build, device)
    x = torch.randn(4, 2, 5) if kind != "linear" else torch.randn(4, 2)
    tm(x), vm(vkt.tensor(x.numpy(), device=device))  # running statistics away from 0 and 1
    tm.eval(), vm.eval()
    assert_state_close(vm, tm)
    fuse = "fuse_linear_bn_eval" if kind == "linear" else "fuse_conv_bn_eval"
    extra = (True,) if kind == "conv_transpose" else ()
    tf, vf = (getattr(U(L), fuse)(m[0], m[1], *extra) for L, m in ((torch, tm), (vkt, vm)))
    assert type(vf) is type(vm[0]) and vf is not vm[0] and isinstance(vf.weight, nn.Parameter)
    assert_state_close(vf, tf)
    assert_close(vf(vkt.tensor(x.numpy(), device=device)).detach(), tm(x).detach().numpy(), RTOL, ATOL)
    tm.train(), vm.train()
    assert raised(lambda: getattr(U(vkt), fuse)(vm[0], vm[1])) == raised(lambda: getattr(U(torch), fuse)(tm[0], tm[1]))
