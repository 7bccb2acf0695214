# vkt.nn.utils.prune against torch 2.13: each case prunes the same module (same weights) in both libraries and
# compares the state_dict (<name>_orig, <name>_mask), the hooks, the output, one SGD step through the mask, and
# prune.remove; random pruning is checked by what it must leave (how many entries or channels); errors as torch's.
import re

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  torch.nn.utils does not import it

import vkt
from conftest import assert_close, raised

RTOL, ATOL = 1e-5, 1e-6


def prune(L):
    return L.nn.utils.prune


def T(L, values, device):
    """values as a tensor of library L (on device for vkt)."""
    return vkt.tensor(values, device=device) if L is vkt else torch.tensor(values)


SCORES = np.arange(12, dtype=np.float32).reshape(4, 3)[::-1].copy()
MASK = (np.arange(12).reshape(4, 3) % 3 != 1).astype(np.float32)


def linear(L):
    return L.nn.Linear(3, 4)


def conv(L):
    return L.nn.Conv1d(2, 4, 3)


def two_layers(L):
    return L.nn.Sequential(L.nn.Linear(3, 4), L.nn.Tanh(), L.nn.Linear(4, 2))


def iterative(L, m, d):
    prune(L).l1_unstructured(m, "weight", amount=0.3)
    prune(L).ln_structured(m, "weight", amount=1, n=1, dim=0)
    prune(L).l1_unstructured(m, "weight", amount=2)


def global_l1(L, m, d, scores=False):
    parameters = [(m[0], "weight"), (m[2], "weight"), (m[2], "bias")]
    importance = {(m[0], "weight"): T(L, SCORES, d)} if scores else None
    prune(L).global_unstructured(parameters, prune(L).L1Unstructured, importance_scores=importance, amount=0.4)


# name: (factory, prune(L, module, device), input shape)
CASES = {
    "identity": (linear, lambda L, m, d: prune(L).identity(m, "weight"), (2, 3)),
    "l1_fraction": (linear, lambda L, m, d: prune(L).l1_unstructured(m, "weight", amount=0.3), (2, 3)),
    "l1_count_bias": (linear, lambda L, m, d: prune(L).l1_unstructured(m, "bias", amount=2), (2, 3)),
    "l1_importance": (linear, lambda L, m, d: prune(L).l1_unstructured(m, "weight", 0.5, T(L, SCORES, d)), (2, 3)),
    "l2_rows": (linear, lambda L, m, d: prune(L).ln_structured(m, "weight", amount=0.5, n=2, dim=0), (2, 3)),
    "l1_columns": (linear, lambda L, m, d: prune(L).ln_structured(m, "weight", amount=1, n=1, dim=-1), (2, 3)),
    "linf_conv_inputs": (conv, lambda L, m, d: prune(L).ln_structured(m, "weight", 1, float("inf"), dim=1), (2, 2, 5)),
    "fro_conv_taps": (conv, lambda L, m, d: prune(L).ln_structured(m, "weight", 0.34, "fro", dim=2), (2, 2, 5)),
    "ln_importance": (linear, lambda L, m, d: prune(L).ln_structured(m, "weight", 2, 2, 0, T(L, SCORES, d)), (2, 3)),
    "custom_mask": (linear, lambda L, m, d: prune(L).custom_from_mask(m, "weight", T(L, MASK, d)), (2, 3)),
    "iterative": (linear, iterative, (2, 3)),
    "mask_then_l1": (linear, lambda L, m, d: (prune(L).custom_from_mask(m, "weight", T(L, MASK, d)),
                                              prune(L).l1_unstructured(m, "weight", amount=0.5)), (2, 3)),
    "weight_and_bias": (linear, lambda L, m, d: (prune(L).l1_unstructured(m, "weight", amount=4),
                                                 prune(L).l1_unstructured(m, "bias", amount=0.5)), (2, 3)),
    "global": (two_layers, global_l1, (2, 3)),
    "global_importance": (two_layers, lambda L, m, d: global_l1(L, m, d, scores=True), (2, 3)),
}


def pair(factory, device):
    torch.manual_seed(0)
    tm = factory(torch)
    vm = factory(vkt).to(device)
    vm.load_state_dict({k: vkt.tensor(v.numpy(), device=device) for k, v in tm.state_dict().items()})
    return tm, vm


def assert_state_close(vm, tm):
    vsd, tsd = vm.state_dict(), tm.state_dict()
    assert list(vsd) == list(tsd)
    for k, v in tsd.items():
        assert_close(vsd[k], v.numpy(), RTOL, ATOL)


def hooks(m):
    """Each submodule's pruning hooks: (module name, hook class, tensor name, methods of a container)."""
    return [(name, type(h).__name__, h._tensor_name, [type(x).__name__ for x in getattr(h, "_pruning_methods", ())])
            for name, sub in m.named_modules() for h in sub._forward_pre_hooks.values()]


@pytest.mark.parametrize("case", list(CASES))
def test_pruning_matches_torch(case, device):
    factory, apply, shape = CASES[case]
    tm, vm = pair(factory, device)
    assert not prune(vkt).is_pruned(vm)
    apply(torch, tm, "cpu")
    apply(vkt, vm, device)
    assert prune(vkt).is_pruned(vm) and hooks(vm) == hooks(tm)
    assert_state_close(vm, tm)
    assert [n for n, _ in vm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    vx = vkt.tensor(x.numpy(), device=device)
    topt, vopt = torch.optim.SGD(tm.parameters(), lr=0.1), vkt.optim.SGD(vm.parameters(), lr=0.1)
    tout, vout = tm(x), vm(vx)
    assert_close(vout.detach(), tout.detach().numpy(), RTOL, ATOL)
    (tout ** 2).mean().backward()
    (vout ** 2).mean().backward()
    for (k, v), (_, t) in zip(vm.named_parameters(), tm.named_parameters()):
        assert_close(v.grad, t.grad.numpy(), RTOL, ATOL)  # masked entries get no gradient
    topt.step()
    vopt.step()
    assert_close(vm(vx).detach(), tm(x).detach().numpy(), RTOL, ATOL)
    for L, m in ((torch, tm), (vkt, vm)):
        for module_name, _, name, _ in hooks(m):
            prune(L).remove(m.get_submodule(module_name), name)
    assert not prune(vkt).is_pruned(vm) and not vm._buffers
    assert_state_close(vm, tm)
    assert all(type(p).__name__ == "Parameter" for p in vm.parameters())


@pytest.mark.parametrize("amount", [0.5, 5])
def test_random_unstructured_prunes_that_many(amount, device):
    m = vkt.nn.Linear(3, 4).to(device)
    orig = m.weight
    prune(vkt).random_unstructured(m, "weight", amount=amount)
    mask = m.weight_mask.cpu().numpy()
    assert set(np.unique(mask)) <= {0.0, 1.0} and int((mask == 0).sum()) == round(amount * 12 if amount < 1 else amount)
    assert m.weight_orig is orig
    assert_close(m.weight, orig.detach().cpu().numpy() * mask)
    prune(vkt).random_unstructured(m, "weight", amount=0.5)  # half of what is left
    assert int((m.weight_mask.cpu().numpy() == 0).sum()) == 12 - (12 - int((mask == 0).sum())) // 2


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_random_structured_prunes_whole_channels(dim, device):
    m = vkt.nn.Linear(3, 4).to(device)
    prune(vkt).random_structured(m, "weight", amount=1, dim=dim)
    mask = np.moveaxis(m.weight_mask.cpu().numpy(), dim, 0)
    per_channel = mask.reshape(mask.shape[0], -1)
    assert sorted(per_channel.min(1)) == sorted(per_channel.max(1))  # each channel all kept or all pruned
    assert int((per_channel.max(1) == 0).sum()) == 1
    prune(vkt).random_structured(m, "weight", amount=1, dim=dim)  # one more of the channels still kept
    mask = np.moveaxis(m.weight_mask.cpu().numpy(), dim, 0)
    assert int((mask.reshape(mask.shape[0], -1).max(1) == 0).sum()) == 2


def test_prune_method_and_containers():
    t = np.array([[0.5, -3.0, 1.0], [2.0, -0.1, 4.0]], dtype=np.float32)
    found = []
    for L in (vkt, torch):
        method = prune(L).L1Unstructured(amount=0.5)
        pruned = method.prune(L.tensor(t), importance_scores=L.tensor(t[::-1].copy()))
        box = prune(L).PruningContainer()
        box._tensor_name = "w"
        first = prune(L).Identity()
        first._tensor_name = "w"
        box.add_pruning_method(first)
        found.append((pruned.tolist(), len(box), type(box[0]).__name__, [type(x).__name__ for x in box],
                      prune(L).LnStructured(0.5, 2).compute_mask(L.tensor(t), L.ones(2, 3)).tolist()))
    assert found[0] == found[1]


def test_failed_pruning_puts_the_parameter_back(device):
    tm, vm = pair(linear, device)
    for L, m in ((torch, tm), (vkt, vm)):
        with pytest.raises(ValueError):
            prune(L).l1_unstructured(m, "weight", amount=100)
    assert list(vm.state_dict()) == list(tm.state_dict()) and "weight" in vm._parameters and not hooks(vm)


def container_with(L, method):
    box = prune(L).PruningContainer()
    box._tensor_name = "weight"
    box.add_pruning_method(method)


def renamed(L, method):
    method._tensor_name = "bias"
    return method


ERRORS = [
    lambda L: prune(L).l1_unstructured(linear(L), "weight", amount=-1),
    lambda L: prune(L).l1_unstructured(linear(L), "weight", amount=1.5),
    lambda L: prune(L).l1_unstructured(linear(L), "weight", amount="0.3"),
    lambda L: prune(L).random_unstructured(linear(L), "weight", amount=13),
    lambda L: prune(L).ln_structured(linear(L), "bias", amount=1, n=2, dim=0),
    lambda L: prune(L).ln_structured(linear(L), "weight", amount=1, n=2, dim=3),
    lambda L: prune(L).random_structured(linear(L), "weight", amount=5, dim=0),
    lambda L: prune(L).l1_unstructured(linear(L), "weight", amount=1, importance_scores=L.ones(2)),
    lambda L: prune(L).custom_from_mask(linear(L), "weight", L.ones(3)),
    lambda L: prune(L).remove(linear(L), "weight"),
    lambda L: prune(L).remove(prune(L).identity(linear(L), "bias"), "weight"),
    lambda L: prune(L).global_unstructured(3, prune(L).L1Unstructured, amount=1),
    lambda L: prune(L).global_unstructured([(linear(L), "weight")], prune(L).L1Unstructured, [1], amount=1),
    lambda L: prune(L).global_unstructured([(linear(L), "weight")], prune(L).LnStructured, amount=1, n=2, dim=0),
    lambda L: container_with(L, 3),
    lambda L: container_with(L, renamed(L, prune(L).Identity())),
    lambda L: prune(L).Identity().prune(L.ones(2), importance_scores=L.ones(3)),
]


def comparable(message):
    return re.sub(r" at 0x[0-9a-f]+", "", message).replace("vkt.nn.", "torch.nn.")


@pytest.mark.parametrize("action", ERRORS)
def test_errors_match_torch(action):
    got, ref = raised(lambda: action(vkt)), raised(lambda: action(torch))
    assert ref[0] is not None and got[0] == ref[0] and comparable(got[1]) == comparable(ref[1])
