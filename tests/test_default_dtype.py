# vkt.set_default_dtype against torch.set_default_dtype: with float64 or float16 as the default, what torch makes
# in the default dtype (Python floats, float factories without dtype=, integer -> float promotions, nn parameters,
# optimizer step tensors) has torch's dtype and values on both devices; compute types and explicit dtypes do not move.
# The `default` fixture restores float32 for vkt and torch whatever a test does, so no other file sees a change.
import numpy as np
import pytest

import vkt
from conftest import assert_close

torch = pytest.importorskip("torch")


@pytest.fixture(params=["float64", "float16"])
def default(request):
    """The default dtype set to float64 or float16 in vkt and torch for one test, float32 again afterwards."""
    try:
        vkt.set_default_dtype(getattr(vkt, request.param))
        torch.set_default_dtype(getattr(torch, request.param))
        yield request.param
    finally:
        vkt.set_default_dtype(vkt.float32)
        torch.set_default_dtype(torch.float32)


def ints(L, d):
    return L.tensor([1, 2, 7], device=d)


# (name, call(L, device) with L either vkt or torch): results compared by dtype and value
VALUES = [
    ("tensor_float", lambda L, d: L.tensor(1.5, device=d)),
    ("tensor_mixed_list", lambda L, d: L.tensor([1, 2.5], device=d)),
    ("tensor_nested_floats", lambda L, d: L.tensor([[0.1, 0.2], [0.3, 0.4]], device=d)),
    ("tensor_empty_list", lambda L, d: L.tensor([], device=d)),
    ("tensor_ints_stay_int64", lambda L, d: L.tensor([1, 2], device=d)),
    ("tensor_bools_stay_bool", lambda L, d: L.tensor([True, False], device=d)),
    ("tensor_np_float32_scalar", lambda L, d: L.tensor([np.float32(1.5)], device=d)),
    ("tensor_np_float32_and_float", lambda L, d: L.tensor([np.float32(1.5), 2.5], device=d)),
    ("tensor_np_float32_array", lambda L, d: L.tensor(np.array([1.5, 2.5], np.float32), device=d)),
    ("tensor_explicit_float32", lambda L, d: L.tensor([0.1, 2], dtype=L.float32, device=d)),
    ("as_tensor_list", lambda L, d: L.as_tensor([0.1, 2], device=d)),
    ("asarray_list", lambda L, d: L.asarray([0.1, 2], device=d)),
    ("zeros", lambda L, d: L.zeros(2, 3, device=d)),
    ("ones", lambda L, d: L.ones(4, device=d)),
    ("ones_explicit_float32", lambda L, d: L.ones(4, dtype=L.float32, device=d)),
    ("full_float", lambda L, d: L.full((3,), 0.1, device=d)),
    ("full_int_stays_int64", lambda L, d: L.full((3,), 7, device=d)),
    ("full_bool_stays_bool", lambda L, d: L.full((2,), True, device=d)),
    ("zeros_like_int", lambda L, d: L.zeros_like(ints(L, d))),
    ("full_like_int_float", lambda L, d: L.full_like(ints(L, d), 2.5)),
    ("arange_int", lambda L, d: L.arange(5, device=d)),
    ("arange_float_end", lambda L, d: L.arange(3.5, device=d)),
    ("arange_float_step", lambda L, d: L.arange(0, 1, 0.25, device=d)),
    ("linspace", lambda L, d: L.linspace(0, 1, 5, device=d)),
    ("logspace", lambda L, d: L.logspace(0, 2, 3, device=d)),
    ("eye", lambda L, d: L.eye(3, device=d)),
    ("scalar_tensor", lambda L, d: L.scalar_tensor(2, device=d)),
    ("int_times_float", lambda L, d: ints(L, d) * 1.5),
    ("float_times_int", lambda L, d: 0.1 * ints(L, d)),
    ("int_cast_float32_plus_float_stays", lambda L, d: ints(L, d).to(L.float32) + 0.1),
    ("bool_times_float", lambda L, d: (ints(L, d) > 1) * 1.5),
    ("int_div_int", lambda L, d: ints(L, d) / L.tensor([2, 4, 3], device=d)),
    ("int_true_divide_int", lambda L, d: ints(L, d).true_divide(2)),
    ("int_floordiv_float", lambda L, d: ints(L, d) // 2.0),
    ("int_0d_div_float", lambda L, d: L.tensor(3, device=d) / 2.5),
    ("int_plus_0d_float", lambda L, d: ints(L, d) + L.tensor(0.5, device=d)),
    ("int_pow_half", lambda L, d: ints(L, d) ** 0.5),
    ("float_pow_int", lambda L, d: 2.0 ** ints(L, d)),
    ("sqrt_int", lambda L, d: L.sqrt(ints(L, d))),
    ("exp_int", lambda L, d: L.exp(ints(L, d))),
    ("sigmoid_int", lambda L, d: L.sigmoid(ints(L, d))),
    ("atan2_int", lambda L, d: L.atan2(ints(L, d), L.tensor([2, 1, 7], device=d))),
    ("clamp_int_float_bound", lambda L, d: L.clamp(ints(L, d), 1.5)),
    ("where_floats", lambda L, d: L.where(ints(L, d) > 1, 1.5, 2)),
    ("logsumexp_int", lambda L, d: L.logsumexp(ints(L, d), 0)),
    ("mean_of_floats", lambda L, d: L.tensor([1.0, 2.0, 4.0], device=d).mean()),
    ("sum_int_stays_int64", lambda L, d: ints(L, d).sum()),
    ("float32_times_float_stays", lambda L, d: L.ones(2, dtype=L.float32, device=d) * 1.5),
    ("float16_times_float_stays", lambda L, d: L.ones(2, dtype=L.float16, device=d) * 1.5),
    ("float32_sqrt_stays", lambda L, d: L.sqrt(L.tensor([2.0], dtype=L.float32, device=d))),
    ("int_div_int_floor_stays_int", lambda L, d: ints(L, d).div(2, rounding_mode="floor")),
    ("float_method_is_float32", lambda L, d: ints(L, d).float()),
]

# (name, call(L, device)): random or uninitialised results, compared by dtype only
DTYPE_ONLY = [
    ("empty", lambda L, d: L.empty(2, device=d)),
    ("rand", lambda L, d: L.rand(3, device=d)),
    ("randn", lambda L, d: L.randn(3, device=d)),
    ("rand_like_float32_stays", lambda L, d: L.rand_like(L.ones(2, dtype=L.float32, device=d))),
    ("normal_floats", lambda L, d: L.normal(0.0, 1.0, (2,), device=d)),
    ("bernoulli", lambda L, d: L.bernoulli(L.full((4,), 0.5, device=d))),
]


def tolerance(dtype):
    return {"float16": 1e-3, "float32": 1e-6}.get(str(dtype).split(".")[-1], 1e-12)


@pytest.mark.parametrize("name,call", VALUES, ids=[c[0] for c in VALUES])
def test_values_follow_default(default, name, call, device):
    want, got = call(torch, "cpu"), call(vkt, device)
    assert str(got.dtype) == str(want.dtype).replace("torch", "vkt"), name
    tol = tolerance(want.dtype)
    assert_close(got, want.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,call", DTYPE_ONLY, ids=[c[0] for c in DTYPE_ONLY])
def test_dtypes_follow_default(default, name, call, device):
    assert str(call(vkt, device).dtype) == str(call(torch, "cpu").dtype).replace("torch", "vkt"), name


def test_get_and_result_type(default):
    assert vkt.get_default_dtype() == getattr(vkt, default)
    assert str(vkt.result_type(vkt.tensor([1, 2]), 1.5)) == str(torch.result_type(torch.tensor([1, 2]), 1.5)).replace(
        "torch", "vkt")
    assert vkt.promote_types(vkt.int64, vkt.float32) == vkt.float32  # explicit dtypes promote as always
    assert vkt.finfo().dtype == default


def test_float32_is_the_default():
    assert vkt.get_default_dtype() == vkt.float32
    assert vkt.tensor([1, 2.5]).dtype == vkt.float32
    assert (vkt.tensor([1, 2]) / 2).dtype == vkt.float32


def test_process_wide(default):
    """As torch's, the default is one per process: another thread sees it."""
    import threading

    seen = []
    thread = threading.Thread(target=lambda: seen.append(vkt.tensor(0.5).dtype))
    thread.start()
    thread.join()
    assert seen == [getattr(vkt, default)]


def test_nn_parameters_follow_default(default, device):
    for make in (lambda L: L.nn.Linear(3, 2), lambda L: L.nn.Conv2d(1, 2, 3), lambda L: L.nn.BatchNorm1d(4),
                 lambda L: L.nn.Embedding(5, 2), lambda L: L.nn.LayerNorm(3)):
        want = {k: str(v.dtype).replace("torch", "vkt") for k, v in make(torch).state_dict().items()}
        got = {k: str(v.dtype) for k, v in make(vkt).to(device).state_dict().items()}
        assert got == want
    assert vkt.nn.Parameter().dtype == getattr(vkt, default)
    layer = vkt.nn.Linear(3, 2).to(device)
    vkt.nn.init.xavier_uniform_(layer.weight)
    assert layer(vkt.tensor([[0.5, 1.0, 2.0]], device=device)).dtype == getattr(vkt, default)


@pytest.mark.parametrize("name", ["Adam", "NAdam", "ASGD", "Rprop", "RMSprop", "Adagrad", "Adafactor", "Adamax"])
def test_optimizer_state_scalars(default, name):
    """torch's _get_scalar_dtype: step (and ASGD's eta and mu, NAdam's mu_product) is float64 under a float64
    default, float32 under any other."""
    def scalar_dtypes(L):
        p = L.nn.Parameter(L.ones(2))
        opt = getattr(L.optim, name)([p], lr=0.1)
        p.grad = L.ones(2)
        opt.step()
        return {k: str(v.dtype).split(".")[-1] for k, v in opt.state[p].items() if v.dim() == 0}

    assert scalar_dtypes(vkt) == scalar_dtypes(torch)


def test_repr_names_the_non_default_dtype(default):
    other = vkt.float32
    assert "dtype" not in repr(vkt.tensor([1.5]))
    assert repr(vkt.tensor([1.5], dtype=other)) == "tensor([1.5000], dtype=vkt.float32)"
    assert repr(vkt.tensor([])) == "tensor([])"
    assert repr(vkt.tensor([], dtype=other)) == "tensor([], dtype=vkt.float32)"


def test_distributions_numbers_follow_default(default):
    d = vkt.distributions.Normal(0.0, 1.0)
    assert d.loc.dtype == getattr(vkt, default)


@pytest.mark.parametrize("bad,message", [
    (vkt.int64, "only floating-point types are supported as the default type"),
    (vkt.bool, "only floating-point types are supported as the default type"),
    ("float64", "invalid dtype object: only floating-point types are supported as the default type"),
    (None, "invalid dtype object: only floating-point types are supported as the default type"),
    (np.float64, "invalid dtype object: only floating-point types are supported as the default type"),
])
def test_errors(bad, message):
    with pytest.raises(TypeError, match=message):
        vkt.set_default_dtype(bad)
    assert vkt.get_default_dtype() == vkt.float32


def test_argument_errors():
    with pytest.raises(TypeError):
        vkt.set_default_dtype()
    with pytest.raises(TypeError):
        vkt.set_default_dtype(vkt.float64, vkt.float32)
    with pytest.raises(TypeError):
        vkt.set_default_dtype(d=vkt.float64)
    assert vkt.get_default_dtype() == vkt.float32

