# vkt.Size, the vulkan device's random streams (torch.cuda's seeding functions), the default device
# (set_default_device, `with vkt.device(...)`) and vkt.vmap, against torch 2.13 on the CPU: values, types, reprs and
# errors (type and message, 'torch' read as 'vkt'). torch has no vulkan device here, so the default-device tests take
# torch's 'meta' device as the stand-in for vkt's 'vulkan'.
import copy
import pickle
import threading

import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")


def outcome(call):
    """(type, repr) of what call returns, or (exception type name, message) of what it raises, torch read as vkt."""
    try:
        r = call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e).__name__, str(e).replace("torch.", "vkt.")
    return type(r).__name__, repr(r).replace("torch.", "vkt.")


# ---- vkt.Size

SIZE_CASES = [
    ("shape", lambda m: m.zeros(2, 3).shape),
    ("shape_0d", lambda m: m.zeros(()).shape),
    ("shape_empty_dim", lambda m: m.zeros(4, 0).shape),
    ("size", lambda m: m.zeros(2, 3).size()),
    ("size_dim", lambda m: m.zeros(2, 3).size(1)),
    ("size_dim_kw", lambda m: m.zeros(2, 3).size(dim=-2)),
    ("stride", lambda m: m.zeros(2, 3).stride()),
    ("str", lambda m: str(m.zeros(2, 3).shape)),
    ("format", lambda m: f"{m.zeros(5).shape}"),
    ("numel", lambda m: m.zeros(2, 3, 4).shape.numel()),
    ("numel_0d", lambda m: m.Size().numel()),
    ("index", lambda m: m.zeros(2, 3).shape[-1]),
    ("index_error", lambda m: m.zeros(2, 3).shape[2]),
    ("slice", lambda m: m.zeros(2, 3, 4).shape[1:]),
    ("slice_step", lambda m: m.zeros(2, 3, 4).shape[::-1]),
    ("add_tuple", lambda m: m.zeros(2, 3).shape + (4,)),
    ("radd_tuple", lambda m: (4,) + m.zeros(2, 3).shape),
    ("add_size", lambda m: m.zeros(2).shape + m.zeros(3).shape),
    ("add_list", lambda m: m.zeros(2, 3).shape + [4]),
    ("radd_list", lambda m: [4] + m.zeros(2, 3).shape),
    ("mul", lambda m: m.zeros(2, 3).shape * 2),
    ("rmul", lambda m: 2 * m.zeros(2, 3).shape),
    ("mul_str", lambda m: m.zeros(2, 3).shape * "a"),
    ("eq_tuple", lambda m: m.zeros(2, 3).shape == (2, 3)),
    ("eq_list", lambda m: m.zeros(2, 3).shape == [2, 3]),
    ("lt_tuple", lambda m: m.zeros(2, 3).shape < (2, 4)),
    ("hash", lambda m: hash(m.zeros(2, 3).shape) == hash((2, 3))),
    ("dict_key", lambda m: {(2, 3): "found"}[m.zeros(2, 3).shape]),
    ("count", lambda m: m.zeros(2, 3, 2).shape.count(2)),
    ("tuple_index", lambda m: m.zeros(2, 3).shape.index(3)),
    ("unpack", lambda m: [a * 10 for a in m.zeros(2, 3).shape]),
    ("isinstance", lambda m: isinstance(m.zeros(1).shape, tuple)),
    ("is_size", lambda m: isinstance(m.zeros(1).shape, m.Size)),
    ("pickle", lambda m: pickle.loads(pickle.dumps(m.zeros(2, 3).shape))),
    ("deepcopy", lambda m: copy.deepcopy(m.zeros(2, 3).shape)),
    ("reduce", lambda m: m.Size([2, 3]).__reduce__()),
    ("new_empty", lambda m: m.Size()),
    ("new_list", lambda m: m.Size([2, 3])),
    ("new_generator", lambda m: m.Size(i for i in (4, 5))),
    ("new_size", lambda m: m.Size(m.Size([1, 2]))),
    ("new_negative", lambda m: m.Size([-1, 0])),
    ("new_bool", lambda m: m.Size([True, False])),
    ("new_numpy_int", lambda m: m.Size([np.int64(3), np.int32(2)])),
    ("new_int_tensor", lambda m: m.Size([m.tensor(3)])),
    ("new_float", lambda m: m.Size([2.0, 3])),
    ("new_str", lambda m: m.Size("ab")),
    ("new_none", lambda m: m.Size([1, None])),
    ("new_nested", lambda m: m.Size([[1]])),
    ("new_int", lambda m: m.Size(3)),
    ("new_two_args", lambda m: m.Size([1], [2])),
    ("new_keyword", lambda m: m.Size(sizes=[1])),
    ("view_error", lambda m: m.zeros(2, 3).view(4)),
    ("expand_error", lambda m: m.zeros(2, 3).expand(4, 4)),
    ("bce_error", lambda m: m.nn.functional.binary_cross_entropy_with_logits(m.zeros(3), m.zeros(2))),
    ("batch_norm_error", lambda m: m.nn.functional.batch_norm(m.zeros(1, 3), None, None, training=True)),
    ("new_zeros_of_shape", lambda m: m.zeros(2, 3).new_zeros(m.zeros(4, 1).shape).shape),
    ("reshape_by_shape", lambda m: m.zeros(6).reshape(m.zeros(3, 2).shape).shape),
    ("zeros_of_shape", lambda m: m.zeros(m.zeros(1, 2).shape).shape),
]


@pytest.mark.parametrize("name,call", SIZE_CASES, ids=[c[0] for c in SIZE_CASES])
def test_size_matches_torch(name, call):
    assert outcome(lambda: call(vkt)) == outcome(lambda: call(torch))


def test_size_overflow():
    """torch makes Size([2 ** 70]) and raises this when it prints it; vkt raises it at once."""
    with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
        vkt.Size([2 ** 70])


def test_size_type():
    assert vkt.Size.__mro__ == (vkt.Size, tuple, object)
    assert (vkt.Size.__module__, vkt.Size.__name__) == ("vkt", "Size")
    assert type(vkt.zeros(2, device="cpu").shape) is vkt.Size and type(vkt.zeros(2).stride()) is tuple


def test_size_on_vulkan(dev):
    x = vkt.zeros(2, 3, device=dev)
    assert type(x.shape) is vkt.Size and repr(x.size()) == "vkt.Size([2, 3])" and x.shape[1:] == (3,)


# ---- the vulkan device's random streams, as torch.cuda's default generators

DRAWS = [
    ("rand", lambda d: vkt.rand(3, 4, device=d)),
    ("randn", lambda d: vkt.randn(7, device=d)),
    ("randint", lambda d: vkt.randint(0, 1000, (6,), device=d)),
    ("randperm", lambda d: vkt.randperm(9, device=d)),
    ("rand_like", lambda d: vkt.rand_like(vkt.zeros(5, device=d))),
    ("dropout", lambda d: vkt.nn.functional.dropout(vkt.ones(16, device=d), 0.5)),
    ("multinomial", lambda d: vkt.multinomial(vkt.tensor([0.1, 0.2, 0.3, 0.4], device=d), 8, replacement=True)),
    ("bernoulli", lambda d: vkt.bernoulli(vkt.full((8,), 0.5, device=d))),
    ("normal", lambda d: vkt.normal(vkt.zeros(4, device=d), 1.0)),
    ("uniform_", lambda d: vkt.empty(5, device=d).uniform_(-1, 1)),
    ("dropout_module", lambda d: vkt.nn.Dropout(0.3)(vkt.ones(12, device=d))),
]


def values(t):
    return t.cpu().numpy()


@pytest.mark.parametrize("name,draw", DRAWS, ids=[c[0] for c in DRAWS])
def test_vulkan_seed_repeats_vulkan_draws_only(dev, name, draw):
    """torch.cuda.manual_seed seeds the current GPU's generator only: its draws repeat, the CPU's go on."""
    vkt.vulkan.manual_seed(1234)
    first, host = values(draw(dev)), values(draw("cpu"))
    vkt.vulkan.manual_seed(1234)
    np.testing.assert_array_equal(values(draw(dev)), first)
    assert not np.array_equal(values(draw("cpu")), host) or name in ("randperm", "multinomial", "bernoulli")
    assert vkt.vulkan.initial_seed() == 1234


@pytest.mark.parametrize("name,draw", DRAWS, ids=[c[0] for c in DRAWS])
def test_global_seed_seeds_every_device(dev, name, draw):
    """torch.manual_seed seeds the CPU's and every GPU's generator: both devices' draws repeat."""
    vkt.manual_seed(7)
    first, host = values(draw(dev)), values(draw("cpu"))
    vkt.manual_seed(7)
    np.testing.assert_array_equal(values(draw(dev)), first)
    np.testing.assert_array_equal(values(draw("cpu")), host)
    assert vkt.initial_seed() == 7 and vkt.vulkan.initial_seed() == 7


def test_cpu_seed_leaves_vulkan_stream(dev):
    """The cpu device's state functions are the CPU generator's: restoring it repeats cpu draws, not vulkan's."""
    state = vkt.get_rng_state()
    a, b = values(vkt.rand(4)), values(vkt.rand(4, device=dev))
    vkt.set_rng_state(state)
    np.testing.assert_array_equal(values(vkt.rand(4)), a)
    assert not np.array_equal(values(vkt.rand(4, device=dev)), b)


def test_vulkan_rng_state_round_trip(dev):
    vkt.vulkan.manual_seed(99)
    state = vkt.vulkan.get_rng_state()
    assert (state.dtype, state.device, state.dim()) == (vkt.uint8, vkt.device("cpu"), 1)
    first = [values(draw(dev)) for _, draw in DRAWS]
    vkt.vulkan.manual_seed(5)
    vkt.vulkan.set_rng_state(state)
    assert vkt.vulkan.initial_seed() == 99  # the state carries the seed, as torch's
    for got, want in zip([values(draw(dev)) for _, draw in DRAWS], first):
        np.testing.assert_array_equal(got, want)
    for device in (0, "vulkan:0", vkt.device("vulkan"), "vulkan"):
        np.testing.assert_array_equal(values(vkt.vulkan.get_rng_state(device)), values(vkt.vulkan.get_rng_state()))
    states = vkt.vulkan.get_rng_state_all()
    assert len(states) == vkt.vulkan.device_count()
    x = values(vkt.randn(6, device=dev))
    vkt.vulkan.set_rng_state_all(states)
    np.testing.assert_array_equal(values(vkt.randn(6, device=dev)), x)


def test_vulkan_seed_all_and_seed(dev):
    vkt.vulkan.manual_seed_all(3)
    assert vkt.vulkan.initial_seed() == 3
    x = values(vkt.rand(5, device=dev))
    vkt.vulkan.manual_seed_all(3.0)  # torch.cuda's take int(seed)
    np.testing.assert_array_equal(values(vkt.rand(5, device=dev)), x)
    vkt.vulkan.seed_all()
    seeded = vkt.vulkan.initial_seed()
    assert vkt.vulkan.seed() is None and vkt.vulkan.initial_seed() != seeded
    assert [f() for f in (lambda: vkt.vulkan.manual_seed(1), lambda: vkt.vulkan.manual_seed_all(1))] == [None, None]


@pytest.mark.parametrize("state", [[1, 2], np.zeros(40, np.uint8), "state"])
def test_vulkan_set_rng_state_errors(dev, state):
    with pytest.raises(TypeError, match="RNG state must be a vkt.uint8 Tensor"):
        vkt.vulkan.set_rng_state(state)


def test_vulkan_set_rng_state_size_error(dev):
    with pytest.raises(RuntimeError) as info:
        vkt.vulkan.set_rng_state(vkt.zeros(3, dtype=vkt.uint8))
    assert str(info.value) == "Expected an RNG state of size 40 but found the input RNG state size to be 3"


def test_seed_errors_match_torch():
    assert outcome(lambda: vkt.vulkan.manual_seed("a")) == outcome(lambda: torch.cuda.manual_seed("a"))
    assert outcome(lambda: vkt.vulkan.manual_seed_all("a")) == outcome(lambda: torch.cuda.manual_seed_all("a"))


def test_checkpoint_replays_vulkan_dropout(dev):
    x = vkt.ones(64, device=dev, requires_grad=True)

    def drop(t):
        return vkt.nn.functional.dropout(t, 0.5) * 2

    y = vkt.utils.checkpoint.checkpoint(drop, x, use_reentrant=False)
    y.sum().backward()
    np.testing.assert_array_equal(values(x.grad), values(y.detach()))


def test_vmap_same_randomness_on_vulkan(dev):
    out = vkt.vmap(lambda t: t + vkt.rand(3, device=dev), randomness="same")(vkt.zeros(4, 3, device=dev))
    rows = values(out)
    assert all(np.array_equal(r, rows[0]) for r in rows)


# ---- the default device

@pytest.fixture
def restore_default():
    yield
    vkt.set_default_device(None)
    torch.set_default_device(None)


FACTORIES = [
    ("tensor", lambda m: m.tensor([1.0, 2.0])),
    ("zeros", lambda m: m.zeros(2)),
    ("ones", lambda m: m.ones(2, 2)),
    ("empty", lambda m: m.empty(3)),
    ("full", lambda m: m.full((2,), 7)),
    ("rand", lambda m: m.rand(2)),
    ("randn", lambda m: m.randn(2)),
    ("randint", lambda m: m.randint(0, 5, (2,))),
    ("randperm", lambda m: m.randperm(4)),
    ("arange", lambda m: m.arange(3)),
    ("linspace", lambda m: m.linspace(0, 1, 4)),
    ("logspace", lambda m: m.logspace(0, 1, 4)),
    ("eye", lambda m: m.eye(2)),
    ("tril_indices", lambda m: m.tril_indices(3, 3)),
    ("as_tensor_list", lambda m: m.as_tensor([1, 2])),
    ("as_tensor_numpy", lambda m: m.as_tensor(np.zeros(2, np.float32))),
    ("as_tensor_tensor", lambda m: m.as_tensor(m.zeros(2, device="cpu"))),
    ("asarray_tensor", lambda m: m.asarray(m.zeros(2, device="cpu"))),
    ("asarray_list", lambda m: m.asarray([1.0])),
    ("tensor_of_tensor", lambda m: m.tensor(m.zeros(2, device="cpu"))),
    ("scalar_tensor", lambda m: m.scalar_tensor(1.0)),
    ("empty_strided", lambda m: m.empty_strided((2,), (1,))),
    ("linear_weight", lambda m: m.nn.Linear(2, 3).weight),
    ("conv_bias", lambda m: m.nn.Conv2d(1, 2, 3).bias),
    ("zeros_like_cpu", lambda m: m.zeros_like(m.zeros(2, device="cpu"))),
    ("ones_like_cpu", lambda m: m.ones_like(m.zeros(2, device="cpu"))),
    ("rand_like_cpu", lambda m: m.rand_like(m.zeros(2, device="cpu"))),
    ("full_like_cpu", lambda m: m.full_like(m.zeros(2, device="cpu"), 3)),
    ("new_zeros_cpu", lambda m: m.zeros(2, device="cpu").new_zeros(3)),
    ("explicit_cpu", lambda m: m.zeros(2, device="cpu")),
    ("from_numpy", lambda m: m.from_numpy(np.zeros(2))),
    ("legacy_Tensor", lambda m: m.Tensor([1.0])),
]


def device_type(m, t):
    """'default' for the stand-in device (vkt's vulkan, torch's meta), else the device's type."""
    return "default" if t.device.type == ("vulkan" if m is vkt else "meta") else t.device.type


@pytest.mark.parametrize("name,make", FACTORIES, ids=[c[0] for c in FACTORIES])
def test_default_device_factories(dev, restore_default, name, make):
    vkt.set_default_device(dev)
    torch.set_default_device("meta")
    assert device_type(vkt, make(vkt)) == device_type(torch, make(torch))
    vkt.set_default_device(None)
    torch.set_default_device(None)
    assert device_type(vkt, make(vkt)) == device_type(torch, make(torch)) == "cpu"


@pytest.mark.parametrize("name,make", FACTORIES, ids=[c[0] for c in FACTORIES])
def test_device_context_factories(dev, restore_default, name, make):
    with vkt.device(dev), torch.device("meta"):
        assert device_type(vkt, make(vkt)) == device_type(torch, make(torch))
    assert device_type(vkt, make(vkt)) == device_type(torch, make(torch)) == "cpu"


def script(m, d):
    """A sequence of default-device changes; what get_default_device() says after each."""
    seen = [m.get_default_device()]
    with m.device(d) as entered:
        seen += [entered, m.get_default_device()]
        with m.device("cpu"):
            seen.append(m.get_default_device())
        seen.append(m.get_default_device())
    seen.append(m.get_default_device())
    m.set_default_device(d)
    with m.device("cpu"):
        seen.append(m.get_default_device())
    seen.append(m.get_default_device())
    try:
        with m.device(d):
            raise KeyError
    except KeyError:
        seen.append(m.get_default_device())
    m.set_default_device(None)
    seen.append(m.get_default_device())
    return [x.type.replace("meta", "vulkan") for x in seen]


def test_default_device_nesting_matches_torch(dev, restore_default):
    assert script(vkt, dev) == script(torch, "meta")


def test_set_default_device_inside_block(dev, restore_default):
    """As torch's (not run here: in torch 2.13 it leaves its mode stack inconsistent for later calls): the block's
    end puts back the default from before the block."""
    with vkt.device(dev):
        vkt.set_default_device("cpu")
        assert vkt.get_default_device().type == "cpu"
    assert vkt.get_default_device().type == "cpu"
    with vkt.device("cpu"):
        vkt.set_default_device(dev)
        assert vkt.zeros(1).device.type == "vulkan"
    assert vkt.zeros(1).device.type == "cpu"


def test_default_device_per_thread(dev, restore_default):
    vkt.set_default_device(dev)
    torch.set_default_device("meta")
    seen = []
    thread = threading.Thread(target=lambda: seen.extend([vkt.get_default_device(), vkt.zeros(1).device,
                                                          torch.get_default_device(), torch.zeros(1).device]))
    thread.start()
    thread.join()
    assert [str(d) for d in seen] == ["cpu"] * 4
    assert vkt.zeros(1).device.type == "vulkan"


def test_default_device_index(dev, restore_default):
    vkt.set_default_device("vulkan")
    assert vkt.get_default_device() == vkt.device("vulkan", vkt.vulkan.current_device())
    vkt.set_default_device(0)
    assert repr(vkt.get_default_device()) == "device(type='vulkan', index=0)"
    vkt.set_default_device(vkt.device("cpu"))
    assert repr(vkt.get_default_device()) == repr(torch.get_default_device()) == "device(type='cpu')"


def test_device_context_errors_match_torch(restore_default):
    assert outcome(lambda: vkt.device("cpu").__exit__(None, None, None)) == \
        outcome(lambda: torch.device("cpu").__exit__(None, None, None))
    assert outcome(lambda: vkt.device("cpu").__enter__()) == outcome(lambda: torch.device("cpu").__enter__())
    vkt.device("cpu").__exit__(None, None, None)
    torch.device("cpu").__exit__(None, None, None)


# ---- vkt.vmap

def test_vmap_is_func_vmap():
    assert vkt.vmap is vkt.func.vmap and torch.vmap is torch.func.vmap
    np.testing.assert_array_equal(vkt.vmap(lambda r: r.sum())(vkt.ones(3, 2)).numpy(),
                                  torch.vmap(lambda r: r.sum())(torch.ones(3, 2)).numpy())
