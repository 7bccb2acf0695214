# vkt.nn.Module, Parameter and the containers against torch.nn's behaviour: names and order of the
# walks, state_dict keys and loading, buffers, hooks, modes, to(), reprs and errors, built the same way
# in both libraries by one factory.
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import vkt
from vkt import nn

LIBS = {"torch": (torch, torch.nn), "vkt": (vkt, nn)}


def make_block(lib, nnmod):
    class Block(nnmod.Module):
        def __init__(self, n=3):
            super().__init__()
            self.n = n
            self.weight = nnmod.Parameter(lib.ones(n, 2))
            self.bias = None
            self.register_parameter("scale", nnmod.Parameter(lib.ones(n)))
            self.register_buffer("running", lib.zeros(n))
            self.register_buffer("scratch", lib.zeros(n), persistent=False)

        def forward(self, x):
            return x @ self.weight.t() * self.scale

        def extra_repr(self):
            return f"n={self.n}"
    return Block


def make_model(name):
    lib, nnmod = LIBS[name]
    Block = make_block(lib, nnmod)
    shared = Block(2)
    model = nnmod.Sequential(OrderedDict([
        ("first", Block()),
        ("blocks", nnmod.ModuleList([Block(), Block(), Block(4), shared])),
        ("table", nnmod.ModuleDict({"b": Block(), "a": shared})),
        ("empty", nnmod.ModuleList()),
        ("plist", nnmod.ParameterList([nnmod.Parameter(lib.ones(2))])),
    ]))
    return model


def names(pairs):
    return [n for n, _ in pairs]


@pytest.mark.parametrize("walk", [
    lambda m: names(m.named_parameters()),
    lambda m: names(m.named_parameters(remove_duplicate=False)),
    lambda m: names(m.named_parameters(prefix="p", recurse=False)),
    lambda m: names(m.named_buffers()),
    lambda m: names(m.named_buffers(remove_duplicate=False)),
    lambda m: names(m.named_modules()),
    lambda m: names(m.named_modules(prefix="root", remove_duplicate=False)),
    lambda m: names(m.named_children()),
    lambda m: names(m.blocks.named_children()),
    lambda m: list(m.state_dict()),
    lambda m: list(m.state_dict(prefix="x.")),
    lambda m: [tuple(p.shape) for p in m.parameters()],
    lambda m: [type(c).__name__ for c in m.children()],
    lambda m: [type(c).__name__ for c in m.modules()],
    lambda m: len(list(m.buffers())),
    lambda m: repr(m),
    lambda m: repr(m.blocks[1:3]),
    lambda m: repr(m[1:]),
    lambda m: sorted(set(dir(m.first)) & {"weight", "scale", "running", "scratch", "n", "forward", "bias"}),
    lambda m: [k for k in dir(m.blocks) if k.isdigit()],
])
def test_walks_and_repr_match_torch(walk):
    got, ref = walk(make_model("vkt")), walk(make_model("torch"))
    assert got == (ref.replace("torch.float32", "vkt.float32") if isinstance(ref, str) else ref)


def test_repr_of_layers_with_extra_lines():
    for name in LIBS:
        _, nnmod = LIBS[name]

        class Two(nnmod.Module):
            def extra_repr(self):
                return "a=1\nb=2"

        class Wrap(nnmod.Module):
            def __init__(self):
                super().__init__()
                self.inner = Two()

            def extra_repr(self):
                return "k=3"
        if name == "torch":
            ref = repr(Wrap()), repr(Two()), repr(nnmod.Module())
        else:
            got = repr(Wrap()), repr(Two()), repr(nnmod.Module())
    assert got == ref


def test_parameter_list_and_dict():
    pl = nn.ParameterList([vkt.zeros(2, 3), nn.Parameter(vkt.ones(1)), "x"])
    tl = torch.nn.ParameterList([torch.zeros(2, 3), torch.nn.Parameter(torch.ones(1)), "x"])
    assert repr(pl) == repr(tl).replace("torch.", "vkt.")
    assert isinstance(pl[0], nn.Parameter) and len(pl) == 3 and names(pl.named_parameters()) == ["0", "1"]
    assert len(pl[0:2]) == 2 and pl[-1] == "x"
    pd = nn.ParameterDict({"b": vkt.zeros(2), "a": nn.Parameter(vkt.ones(3))})
    td = torch.nn.ParameterDict({"b": torch.zeros(2), "a": torch.nn.Parameter(torch.ones(3))})
    assert list(pd) == list(td) == ["a", "b"]
    assert names(pd.named_parameters()) == names(td.named_parameters())
    pd["c"] = vkt.zeros(1)
    assert "c" in pd and isinstance(pd["c"], nn.Parameter) and pd.get("z") is None
    assert pd.pop("c").shape == (1,) and "c" not in pd
    assert "vkt.float32 of size 3" in repr(pd)
    with pytest.raises(TypeError, match="not a string"):
        pd[1] = vkt.zeros(1)
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)


def test_sequential_indexing_and_editing():
    Block = make_block(vkt, nn)
    a, b, c = Block(1), Block(2), Block(3)
    s = nn.Sequential(a, b, c)
    assert s[0] is a and s[-1] is c and list(s[1:]) == [b, c] and isinstance(s[1:], nn.Sequential)
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0] is b
    s.insert(0, a).append(Block(4))
    assert [m.n for m in s] == [1, 2, 3, 4] and len(s) == 4
    assert s.pop(1) is b and [m.n for m in s] == [1, 3, 4]
    s[0] = b
    assert s[0] is b
    assert [m.n for m in (s + nn.Sequential(a))] == [2, 3, 4, 1]
    assert [m.n for m in s * 2] == [2, 3, 4] * 2
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        s + 1
    x = vkt.ones(5, 2)
    y = nn.Sequential(Block(2), Block(2))(x)
    assert y.shape == (5, 2)


def test_module_list_and_dict():
    Block = make_block(vkt, nn)
    ml = nn.ModuleList([Block(1)])
    ml += [Block(2)]
    ml.append(Block(3)).extend([Block(4)])
    ml.insert(1, Block(5))
    assert [m.n for m in ml] == [1, 5, 2, 3, 4]
    del ml[::2]
    assert [m.n for m in ml] == [5, 3] and list(ml._modules) == ["0", "1"]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)
    with pytest.raises(NotImplementedError, match=r'Module \[ModuleList\] is missing the required "forward" function'):
        ml(1)
    md = nn.ModuleDict([("x", Block(1)), ("y", Block(2))])
    assert list(md.keys()) == ["x", "y"] and "x" in md and len(md) == 2
    md.update({"z": Block(3)})
    assert md.pop("x").n == 1 and list(md) == ["y", "z"]
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 3; 2 is required"):
        md.update([("a", Block(1), 3)])


def errors(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  the type and message are what is compared
        return type(e), str(e)
    return None


def generic(message):
    return message.replace("torch.nn.", "vkt.nn.").replace("torch.Tensor", "vkt.Tensor")


@pytest.mark.parametrize("action", [
    lambda lib, m: m.register_buffer(1, None),
    lambda lib, m: m.register_buffer("a.b", None),
    lambda lib, m: m.register_buffer("", None),
    lambda lib, m: m.register_buffer("weight", None),
    lambda lib, m: m.register_parameter(2, None),
    lambda lib, m: m.register_parameter("a.b", None),
    lambda lib, m: m.register_parameter("", None),
    lambda lib, m: m.register_parameter("running", None),
    lambda lib, m: m.add_module("x.y", None),
    lambda lib, m: m.add_module("", None),
    lambda lib, m: m.add_module("weight", lib.nn.Module() if lib is torch else nn.Module()),
    lambda lib, m: m.add_module("x", 3),
    lambda lib, m: setattr(m, "weight", 3),
    lambda lib, m: m.get_submodule("nope"),
    lambda lib, m: m.get_submodule("weight"),
    lambda lib, m: m.get_parameter("running"),
    lambda lib, m: m.get_parameter("missing"),
    lambda lib, m: m.get_buffer("weight"),
    lambda lib, m: m.missing_attribute,
    lambda lib, m: m.train("yes"),
    lambda lib, m: m.forward_missing(),
    lambda lib, m: m.load_state_dict([1]),
    lambda lib, m: m.to(lib.int32),
])
def test_errors_match_torch(action):
    got = errors(lambda: action(vkt, make_block(vkt, nn)()))
    ref = errors(lambda: action(torch, make_block(torch, torch.nn)()))
    assert got is not None and ref is not None
    assert got[0] is ref[0]
    assert got[1].replace("vkt.", "torch.") == ref[1] or generic(ref[1]) == got[1]


def test_parameter_assignment_errors():
    m = make_block(vkt, nn)()
    expected = r"cannot assign 'vkt.Tensor' as parameter 'weight' \(vkt.nn.Parameter or None expected\)"
    with pytest.raises(TypeError, match=expected):
        m.weight = vkt.zeros(1)
    expected = r"cannot assign 'vkt.Tensor' object to parameter 'p' \(vkt.nn.Parameter or None required\)"
    with pytest.raises(TypeError, match=expected):
        m.register_parameter("p", vkt.zeros(1))
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        nn.Module.__new__(nn.Module).weight = nn.Parameter(vkt.ones(1))
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


def test_attribute_bookkeeping():
    m = make_block(vkt, nn)()
    m.weight = None
    assert "weight" in m._parameters and m.weight is None
    m.weight = nn.Parameter(vkt.ones(1))
    m.running = vkt.ones(3)
    assert m._buffers["running"].shape == (3,)
    m.running = nn.Parameter(vkt.ones(3))  # a Parameter moves the name from the buffers to the parameters
    assert "running" not in m._buffers and "running" in m._parameters
    m.sub = nn.Module()
    assert names(m.named_children()) == ["sub"]
    m.sub = None
    assert names(m.named_children()) == []
    m.plain = vkt.ones(1)
    assert "plain" in m.__dict__ and "plain" not in m._buffers
    del m.scale, m.scratch, m.sub, m.plain
    assert "scale" not in m._parameters and "scratch" not in m._non_persistent_buffers_set
    assert "weight" in dir(m) and "running" in dir(m)
    m.register_buffer("gone", None)
    assert "gone" not in m.state_dict()


def test_train_eval_requires_grad_zero_grad_apply():
    m = make_model("vkt")
    assert m.training and m.first.training
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    m.first(vkt.ones(1, 2)).sum().backward()
    assert m.first.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert np.all(m.first.weight.grad.numpy() == 0)
    m.zero_grad()
    assert m.first.weight.grad is None
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen[-1] == "Sequential" and seen[0] == "Block"


def test_forward_hooks():
    for name in LIBS:
        lib, nnmod = LIBS[name]
        m = make_block(lib, nnmod)(2)
        log = []
        h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
        m.register_forward_pre_hook(lambda mod, args: log.append("pre-first"), prepend=True)
        m.register_forward_hook(lambda mod, args, kwargs, out: log.append(sorted(kwargs)), with_kwargs=True)
        m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0],), {}), with_kwargs=True)
        y1 = m(lib.ones(1, 2))
        h1.remove()
        with h2:
            pass
        y2 = m(lib.ones(1, 2))
        result = (np.asarray(y1.detach().cpu().numpy()), np.asarray(y2.detach().cpu().numpy()), log)
        if name == "torch":
            ref = result
        else:
            got = result
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    assert got[2] == ref[2]


def test_forward_hook_always_call():
    m = nn.Module()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(NotImplementedError):
        m(1)
    assert seen == [None]


def test_to_keeps_parameter_identity(device):
    m = make_model("vkt")
    m.first(vkt.ones(1, 2)).sum().backward()
    weight = m.first.weight
    held = list(m.parameters())
    assert m.to(device) is m
    assert m.first.weight is weight and all(a is b for a, b in zip(m.parameters(), held))
    assert weight.device.type == device and weight.grad.device.type == device
    assert m.first.running.device.type == device and m.first.scratch.device.type == device
    assert weight.requires_grad and weight.is_leaf
    m.double()
    assert weight.dtype == vkt.float64 and weight.grad.dtype == vkt.float64
    m.to(vkt.float16)
    assert weight.dtype == vkt.float16
    m.float().cpu()
    assert weight.device.type == "cpu" and weight.dtype == vkt.float32
    m.register_buffer("steps", vkt.zeros(1, dtype=vkt.int64))
    m.to(device, vkt.float64)
    assert m.steps.dtype == vkt.int64 and m.first.weight.dtype == vkt.float64
    m.to(vkt.zeros(1, dtype=vkt.float32))
    assert weight.dtype == vkt.float32 and weight.device.type == "cpu"
    assert m.half().first.weight.dtype == vkt.float16 and m.steps.dtype == vkt.int64
    m.type(vkt.float64)  # every tensor, integer ones too, as torch's Module.type
    assert weight.dtype == vkt.float64 and m.steps.dtype == vkt.float64


def test_vulkan_method(dev):
    m = make_block(vkt, nn)()
    assert m.vulkan().weight.device.type == "vulkan"
    assert m.vulkan(0).weight.device.index == 0


def test_state_dict_shares_storage_and_keep_vars():
    m = make_block(vkt, nn)()
    sd = m.state_dict()
    assert list(sd) == ["weight", "scale", "running"]
    assert isinstance(sd, OrderedDict) and not isinstance(sd["weight"], nn.Parameter)
    assert not sd["weight"].requires_grad
    with vkt.no_grad():
        m.weight.mul_(3)
    assert np.all(sd["weight"].numpy() == 3)
    assert m.state_dict(keep_vars=True)["weight"] is m.weight


def test_load_state_dict_round_trip_from_torch(device):
    tm, vm = make_model("torch"), make_model("vkt").to(device)
    with torch.no_grad():
        for i, p in enumerate(tm.parameters()):
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(i)))
    result = vm.load_state_dict({k: vkt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (k, v), (k2, t) in zip(vm.state_dict().items(), tm.state_dict().items()):
        assert k == k2 and v.device.type == device
        np.testing.assert_array_equal(v.cpu().numpy(), t.numpy())
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_allclose(vm.first(vkt.tensor(x, device=device)).detach().cpu().numpy(),
                               tm.first(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_errors_change_nothing():
    m = make_model("vkt")
    before = {k: v.clone() for k, v in m.state_dict().items()}
    sd = {k: v + 1 for k, v in m.state_dict().items()}
    sd["first.weight"] = vkt.zeros(5, 2)
    sd["blocks.0.scale"] = vkt.zeros(4)
    del sd["blocks.1.running"], sd["table.b.weight"]
    sd["blocks.9.weight"] = vkt.zeros(1)
    sd["first.extra"] = vkt.zeros(1)
    sd["table.b.running"] = "not a tensor"
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Sequential:\n\t"
        'Missing key(s) in state_dict: "blocks.1.running", "table.b.weight". \n\t'
        'Unexpected key(s) in state_dict: "first.extra", "blocks.9.weight". \n\t'
        "size mismatch for first.weight: copying a param with shape vkt.Size([5, 2]) from checkpoint, "
        "the shape in current model is vkt.Size([3, 2]).\n\t"
        "size mismatch for blocks.0.scale: copying a param with shape vkt.Size([4]) from checkpoint, "
        "the shape in current model is vkt.Size([3]).\n\t"
        'While copying the parameter named "table.b.running", expected vkt.Tensor or Tensor-like object from '
        "checkpoint but received <class 'str'>")
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k].numpy())
    # torch reports the same keys for the same state_dict
    tm = make_model("torch")
    tsd = {k: torch.tensor(v.numpy()) if isinstance(v, vkt.Tensor) else v for k, v in sd.items()}
    with pytest.raises(RuntimeError) as tinfo:
        tm.load_state_dict(tsd)
    assert str(tinfo.value).replace("torch.Size(", "vkt.Size(").replace("torch.Tensor", "vkt.Tensor") \
        == str(info.value)


def test_load_state_dict_not_strict_and_assign():
    m = make_block(vkt, nn)()
    result = m.load_state_dict({"weight": vkt.full((3, 2), 2.0), "other": vkt.zeros(1)}, strict=False)
    assert result.missing_keys == ["scale", "running"] and result.unexpected_keys == ["other"]
    assert np.all(m.weight.numpy() == 2)
    weight = m.weight
    new = vkt.full((3, 2), 5.0)
    m.load_state_dict({"weight": new, "scale": vkt.ones(3), "running": vkt.ones(3)}, assign=True)
    assert m.weight is not weight and isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.running is not None and np.all(m.weight.numpy() == 5)


def test_deepcopy_and_pickle_of_parameters_and_modules():
    p = nn.Parameter(vkt.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\n" + vkt.Tensor.__repr__(p)
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q is not p
    r = pickle.loads(pickle.dumps(nn.Parameter(vkt.ones(2), requires_grad=False)))
    assert type(r) is nn.Parameter and not r.requires_grad
    assert type(nn.Parameter()) is nn.Parameter and nn.Parameter().shape == (0,)
    m = make_model("vkt")
    m2 = copy.deepcopy(m)
    assert names(m2.named_parameters()) == names(m.named_parameters())
    assert m2.blocks[3] is m2.table["a"] and m2.first.weight is not m.first.weight
    assert all(type(p) is nn.Parameter for p in m2.parameters())
    lin = pickle.loads(pickle.dumps(nn.Sequential(nn.Linear(3, 2), nn.ReLU())))
    assert repr(lin) == repr(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()))
    assert isinstance(lin[0].weight, nn.Parameter) and lin[0](vkt.ones(1, 3)).shape == (1, 2)


def test_get_submodule_parameter_buffer():
    m = make_model("vkt")
    assert m.get_submodule("") is m and m.get_submodule("blocks.2") is m.blocks[2]
    assert m.get_parameter("table.b.weight") is m.table["b"].weight
    assert m.get_buffer("first.running") is m.first.running


def test_full_backward_hooks_match_torch(device):
    x = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)
    results = {}
    for name in LIBS:
        lib, nnmod = LIBS[name]
        lin = nnmod.Linear(3, 2)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 6))
        seen = []

        def hook(mod, grad_input, grad_output, seen=seen):
            seen.append(("hook", [None if g is None else g.detach().cpu().numpy() for g in grad_input],
                         [g.detach().cpu().numpy() for g in grad_output]))
            return tuple(None if g is None else g * 2 for g in grad_input)

        def pre_hook(mod, grad_output, seen=seen):
            seen.append(("pre", len(grad_output)))
            return (grad_output[0] * 3,)
        if lib is vkt:
            lin.to(device)
        h = lin.register_full_backward_hook(hook)
        lin.register_full_backward_pre_hook(pre_hook)
        xs = lib.tensor(x, requires_grad=True) if lib is torch else vkt.tensor(x, device=device, requires_grad=True)
        lin(xs).sum().backward()
        first_grad = xs.grad.detach().cpu().numpy().copy()
        h.remove()
        frozen = lib.tensor(x) if lib is torch else vkt.tensor(x, device=device)
        with pytest.warns(UserWarning, match="Full backward hook is firing"):  # no input needs a gradient
            lin(frozen).sum().backward()
        results[name] = (seen, first_grad, lin.weight.grad.detach().cpu().numpy())
    (vseen, vgrad, vw), (tseen, tgrad, tw) = results["vkt"], results["torch"]
    assert [s[0] for s in vseen] == [s[0] for s in tseen] == ["pre", "hook", "pre"]
    for a, b in zip(vseen[1][1] + vseen[1][2], tseen[1][1] + tseen[1][2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vgrad, tgrad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vw, tw, rtol=1e-5, atol=1e-6)


def test_full_backward_hook_without_input_grad():
    for name in LIBS:
        lib, nnmod = LIBS[name]
        lin = nnmod.Linear(3, 2)
        seen = []
        lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, len(go))))
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect"):
            lin(lib.ones(2, 3)).sum().backward()
        assert seen == [((None,), 1)], name


def state_dict_hook_log(L):
    """What a model's state_dict and load_state_dict hooks see and do, in library L (vkt or torch)."""
    log = []
    model = L.nn.Sequential(L.nn.Linear(2, 3), L.nn.Sequential(L.nn.Linear(3, 1)))
    inner = model[1][0]
    model.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append(("pre", type(m).__name__, prefix)))
    inner.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append(("pre", type(m).__name__, prefix)))
    inner.register_state_dict_post_hook(
        lambda m, sd, prefix, meta: log.append(("post", prefix, sorted(sd), meta["version"])))

    def private(m, sd, prefix, meta):  # the older private form may return a new state dict
        log.append(("private", prefix))
        new = OrderedDict((k.upper(), v) for k, v in sd.items())
        new._metadata = sd._metadata
        return new
    handle = model._register_state_dict_hook(private)
    sd = model.state_dict()
    log.append(("keys", list(sd), sorted(sd._metadata)))
    handle.remove()
    sd = model.state_dict()

    def rename(m, state_dict, prefix, meta, strict, missing, unexpected, errors):  # loads "w" as "weight"
        log.append(("load pre", prefix, meta.get("version")))
        if prefix + "w" in state_dict:
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
    renaming = inner.register_load_state_dict_pre_hook(rename)
    renamed = OrderedDict((k[:-len("weight")] + "w" if k == "1.0.weight" else k, v * 0 + 1) for k, v in sd.items())
    renamed._metadata = sd._metadata
    log.append(("loaded", repr(model.load_state_dict(renamed)), float(inner.weight.detach().sum())))

    def forgive(m, keys):  # clears the missing keys: strict=True then raises nothing
        log.append(("load post", type(m).__name__, list(keys.missing_keys), list(keys.unexpected_keys)))
        keys.missing_keys.clear()
    model.register_load_state_dict_post_hook(forgive)
    partial = OrderedDict((k, v * 0 + 2) for k, v in sd.items() if k != "0.bias")
    log.append(("forgiven", repr(model.load_state_dict(partial)), float(model[0].weight.detach().sum())))
    renaming.remove()  # torch calls a module's load pre-hooks as it reaches it, vkt all of them first
    bad = model[0].register_load_state_dict_post_hook(lambda m, keys: keys)
    log.append(("returns", type(raised_by(lambda: model.load_state_dict(sd))).__name__))
    bad.remove()
    model[0].register_state_dict_post_hook(lambda m, sd, prefix, meta: sd)
    log.append(("post returns", str(raised_by(model.state_dict))))
    return log


def raised_by(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception is the result
        return e
    return None


def test_state_dict_hooks_match_torch():
    """state_dict pre/post hooks, the private hook that may replace the dict, _metadata's versions, load pre-hooks
    that rename keys, and load post-hooks that clear missing keys before strict's check, as torch's."""
    assert state_dict_hook_log(vkt) == state_dict_hook_log(torch)
