# Dtype parity with PyTorch (its CPU kernels, torch 2.13): for each op, every dtype vkt has, run by torch and by vkt
# on the cpu and vulkan devices on the same values. Where torch refuses a dtype, vkt must raise the same exception type
# with the same message (torch names its CPU kernel: "silu_cpu", "GeluKernelImpl"); where it accepts one, vkt must
# give the same dtype and values. A case is (name, call taking the library and an input tensor, dtypes tried).
import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")

ALL = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]
INTEGRAL = ["bool", "uint8", "int32", "int64"]


def values(dtype, shape, seed=0):
    """Small values with both signs, no zeros among the integers (divisions), a fraction among the floats."""
    a = np.random.default_rng(seed).integers(-3, 4, size=shape)
    if dtype == "bool":
        return np.asarray(a > 0)
    if dtype == "uint8":
        return np.asarray(np.abs(a) + 1, np.uint8)
    if dtype.startswith("float"):
        return np.asarray(a + 0.25, dtype)
    return np.asarray(np.where(a == 0, 1, a), dtype)


def tensor(L, a, device):
    return torch.from_numpy(a.copy()) if L is torch else vkt.tensor(a, device=device)


def outcome(L, device, call, dtype, shape):
    """("raises", type, message) or ("gives", [(dtype, values) of each tensor result])."""
    try:
        r = call(L, tensor(L, values(dtype, shape), device))
    except Exception as e:  # noqa: BLE001 -- the exception is the result compared
        return "raises", type(e).__name__, str(e)
    results = list(r) if isinstance(r, tuple) else [r]
    return "gives", [(str(t.dtype).split(".")[-1], t.detach().cpu().numpy()) for t in results]


def check(name, call, dtypes, device, shape=(3, 4)):
    for dtype in dtypes:
        want, got = outcome(torch, "cpu", call, dtype, shape), outcome(vkt, device, call, dtype, shape)
        where = f"{name} of {dtype}"
        assert want[0] == got[0], f"{where}: torch {want}, vkt {got}"
        if want[0] == "raises":
            assert got[1:] == want[1:], where
            continue
        assert [d for d, _ in got[1]] == [d for d, _ in want[1]], where
        for (d, g), (_, w) in zip(got[1], want[1]):
            tol = 1e-2 if d == "float16" else 1e-5 if d.startswith("float") else 0
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol,
                                       err_msg=where)


def F(L):
    return L.nn.functional


ELEMENTWISE = [
    ("gelu", lambda L, x: F(L).gelu(x), ALL),
    ("gelu_tanh", lambda L, x: F(L).gelu(x, approximate="tanh"), ALL),
    ("silu", lambda L, x: F(L).silu(x), ALL),
    ("silu_", lambda L, x: F(L).silu(x, inplace=True), ALL),
    ("elu", lambda L, x: F(L).elu(x, 2.0), ALL),
    ("elu_", lambda L, x: F(L).elu(x, inplace=True), ALL),
    ("selu", lambda L, x: F(L).selu(x), ALL),
    ("celu", lambda L, x: F(L).celu(x), ALL),
    ("softplus", lambda L, x: F(L).softplus(x, 2.0, 1.0), ALL),
    ("glu", lambda L, x: F(L).glu(x), ALL),
    ("softsign", lambda L, x: F(L).softsign(x), ALL),
    ("tanhshrink", lambda L, x: F(L).tanhshrink(x), ALL),
    ("hardshrink", lambda L, x: F(L).hardshrink(x, 0.3), ALL),
    ("softshrink", lambda L, x: F(L).softshrink(x, 0.3), ALL),
    ("hardtanh", lambda L, x: F(L).hardtanh(x), ALL),
    ("hardtanh_positive", lambda L, x: F(L).hardtanh(x, -0.5, 2.0), ALL),
    ("relu6", lambda L, x: F(L).relu6(x), ALL),
    ("relu6_", lambda L, x: F(L).relu6(x, inplace=True), ALL),
    ("floor", lambda L, x: L.floor(x), ALL),
    ("ceil_", lambda L, x: x.ceil_(), ["bool", "int64"]),
    ("round", lambda L, x: L.round(x), ALL),
    ("round_decimals", lambda L, x: L.round(x, decimals=1), ALL),
    ("trunc", lambda L, x: L.trunc(x), ["bool", "int32"]),
    ("fix", lambda L, x: L.fix(x), ["bool"]),
    ("special_round", lambda L, x: L.special.round(x), ALL),
    ("special_ndtri", lambda L, x: L.special.ndtri(x.sigmoid()), ["float16", "float32"]),
    ("special_log_ndtr", lambda L, x: L.special.log_ndtr(x), ["float16", "int32", "float64"]),
    ("pow_tensors", lambda L, x: L.pow(x, x), ALL),
    ("clamp_float", lambda L, x: L.clamp(x, 0.5), ALL),
    ("rsub_true", lambda L, x: L.rsub(x, True), ALL),
    ("rsub_int", lambda L, x: L.rsub(x, 2), ALL),
    ("ldexp_int64", lambda L, x: L.ldexp(x, L.tensor([1, 2, -1, 3], device=x.device)), ALL),
    ("ldexp_bool", lambda L, x: L.ldexp(x, L.tensor([True, False, True, True], device=x.device)), ALL),
    ("logaddexp2_float", lambda L, x: L.logaddexp2(x, L.tensor([0.5, 1.0, 2.0, -1.0], device=x.device)), ALL),
    ("logaddexp2_int", lambda L, x: L.logaddexp2(x, L.tensor([1, 2, 3, 4], device=x.device)), ALL),
    ("gcd_bool", lambda L, x: L.gcd(x, L.tensor([True, False, True, True], device=x.device)), ALL),
    ("lcm_int64", lambda L, x: L.lcm(x, L.tensor([2, 3, 4, 6], device=x.device)), ALL),
    ("isclose_dtypes", lambda L, x: L.isclose(x, L.zeros(4, dtype=L.int64, device=x.device)), ALL),
    ("angle", lambda L, x: L.angle(x), ALL),
    ("special_erfcx", lambda L, x: L.special.erfcx(x), ALL),
    ("special_zeta", lambda L, x: L.special.zeta(x, x), ALL),
    ("special_zeta_number", lambda L, x: L.special.zeta(3, x), ALL),
    ("nextafter", lambda L, x: L.nextafter(x, L.zeros_like(x)), ALL),
    ("nextafter_float64_other", lambda L, x: L.nextafter(x, L.ones(4, dtype=L.float64, device=x.device)), ALL),
    ("nextafter_", lambda L, x: x.nextafter_(L.ones(4, dtype=L.float64, device=x.device)), ALL),
    ("conj_physical", lambda L, x: L.conj_physical(x), ALL),
    ("conj_physical_", lambda L, x: x.conj_physical_(), ALL),
    ("sgn_", lambda L, x: x.sgn_(), ALL),
    ("true_divide_", lambda L, x: x.true_divide_(2), ALL),
    ("true_divide_float64_", lambda L, x: x.true_divide_(L.ones(4, dtype=L.float64, device=x.device)), ALL),
    ("heaviside_", lambda L, x: x.heaviside_(x.flip(0)), ALL),
    ("float_power_", lambda L, x: x.float_power_(2), ALL),
    ("float_power_tensor_", lambda L, x: x.float_power_(x), ALL),
    # a 0-d cpu int64 operand is cast to x's integer type first, as a number is: 2^40 + 2 is 2 in uint8 and int32
    ("maximum_wide_0d", lambda L, x: L.maximum(x, L.tensor(2**40 + 2)), ALL),
    ("minimum_wide_0d_left", lambda L, x: L.minimum(L.tensor(2**33 - 1), x), ALL),
    ("lt_wide_0d", lambda L, x: x < L.tensor(-1), ALL),
]

REDUCTIONS = [
    ("argmax", lambda L, x: x.argmax(), ALL),
    ("argmin_dim", lambda L, x: L.argmin(x, 1), ALL),
    ("argmax_empty", lambda L, x: x[:0].argmax(), ALL),
    ("var", lambda L, x: x.var(), ALL),
    ("std_dim", lambda L, x: x.std(0), ALL),
    ("var_mean", lambda L, x: L.var_mean(x), ALL),
    ("std_mean_dim", lambda L, x: L.std_mean(x, 1), ALL),
    ("softmax_last", lambda L, x: L.softmax(x, 1), ALL),
    ("softmax_first", lambda L, x: L.softmax(x, 0), ALL),
    ("log_softmax_0d", lambda L, x: L.log_softmax(x[0, 0], 0), ALL),
    ("softmax_dtype", lambda L, x: L.softmax(x, 0, dtype=L.int32), ALL),
    ("softmax_to_float", lambda L, x: L.log_softmax(x, 1, dtype=L.float64), ALL),
    ("softmax_empty", lambda L, x: L.softmax(x[:0], 1), ALL),
    ("softmin", lambda L, x: F(L).softmin(x, 0), ALL),
    ("cumsum_to_bool", lambda L, x: L.cumsum(x, 0, dtype=L.bool), ALL),
    ("cumprod_to_bool_empty", lambda L, x: L.cumprod(x[:0], 0, dtype=L.bool), ALL),
    ("cumsum", lambda L, x: L.cumsum(x, 1), ALL),
    ("vector_norm_dtype", lambda L, x: L.linalg.vector_norm(x, dtype=L.float32), ALL),
    ("vector_norm_int_dtype", lambda L, x: L.linalg.vector_norm(x, dtype=L.int64), ALL),
    ("matrix_norm_dtype", lambda L, x: L.linalg.matrix_norm(x, dtype=L.float32), ALL),
    ("nanquantile", lambda L, x: L.nanquantile(x, 0.5, 1), ALL),
]

SELECTION = [
    ("topk", lambda L, x: x.topk(2).values, ALL),  # the indices of ties are torch's choice
    ("topk_empty", lambda L, x: L.topk(x[:0], 0, 0), ALL),
    ("kthvalue", lambda L, x: x.kthvalue(2, 0), ALL),
    ("kthvalue_0d", lambda L, x: x[0, 0].kthvalue(1), ALL),
    ("median", lambda L, x: x.median(), ALL),
    ("median_dim", lambda L, x: L.median(x, 1), ALL),
    ("median_0d_dim", lambda L, x: x[0, 0].median(0), ALL),
    ("median_empty", lambda L, x: x[:0].median(), ALL),
    ("nanmedian", lambda L, x: x.nanmedian(), ALL),
    ("nanmedian_empty", lambda L, x: L.nanmedian(x[:0]), ALL),
    ("mode", lambda L, x: x.mode(), ALL),
    ("mode_0d", lambda L, x: x[0, 0].mode(), ALL),
    ("sort", lambda L, x: x.sort(1), ALL),
]


def pool(shape):
    return lambda call: (lambda L, x: call(L, x.reshape(shape)))


P1, P2, P3 = pool((1, 2, 6)), pool((1, 2, 2, 3)), pool((1, 2, 1, 2, 3))
POOLS = [
    ("max_pool1d", P1(lambda L, x: F(L).max_pool1d(x, 2)), ALL),
    ("max_pool1d_indices", P1(lambda L, x: F(L).max_pool1d(x, 3, 2, 1, return_indices=True)), ALL),
    ("max_pool2d", P2(lambda L, x: F(L).max_pool2d(x, 2, 1, 1, return_indices=True)), ALL),
    ("max_pool3d", P3(lambda L, x: F(L).max_pool3d(x, (1, 2, 2), 1, (0, 1, 1))), ALL),
    ("avg_pool1d", P1(lambda L, x: F(L).avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)), ALL),
    ("avg_pool2d", P2(lambda L, x: F(L).avg_pool2d(x, 2, 1, 1)), ALL),
    ("avg_pool2d_divisor", P2(lambda L, x: F(L).avg_pool2d(x, 2, divisor_override=-3)), ALL),
    ("avg_pool3d", P3(lambda L, x: F(L).avg_pool3d(x, (1, 2, 2), 1, (0, 1, 1), count_include_pad=False)), ALL),
    ("adaptive_avg_pool1d", P1(lambda L, x: F(L).adaptive_avg_pool1d(x, 4)), ALL),
    ("adaptive_avg_pool1d_one", P1(lambda L, x: F(L).adaptive_avg_pool1d(x, 1)), ALL),
    ("adaptive_avg_pool2d", P2(lambda L, x: F(L).adaptive_avg_pool2d(x, (1, 2))), ALL),
    ("adaptive_avg_pool2d_one", P2(lambda L, x: F(L).adaptive_avg_pool2d(x, 1)), ALL),
    ("adaptive_avg_pool2d_empty", lambda L, x: F(L).adaptive_avg_pool2d(x.reshape(1, 2, 2, 3)[:0], 2), ALL),
    ("adaptive_avg_pool3d", P3(lambda L, x: F(L).adaptive_avg_pool3d(x, (1, 2, 2))), ALL),
    ("lp_pool2d", P2(lambda L, x: F(L).lp_pool2d(x, 2.0, 2)), ALL),
    ("lp_pool3d", P3(lambda L, x: F(L).lp_pool3d(x, 2.0, (1, 2, 2))), ALL),
]

# clamp's result type is that of x and its bounds (a bool x clamped to an int is int64, an int x clamped to a float
# float32), with torch's errors: no bool kernel, and in place a result type that x cannot take.
CLAMPS = [
    ("clamp_int", lambda L, x: L.clamp(x, 1), ALL),
    ("clamp_max_int", lambda L, x: x.clamp(max=2), ALL),
    ("clamp_true", lambda L, x: x.clamp(True), ALL),
    ("clamp_max_true", lambda L, x: L.clamp_max(x, True), ALL),
    ("clamp_both_true", lambda L, x: x.clip(False, True), ALL),
    ("clamp_bool_int", lambda L, x: x.clamp(True, 2), ALL),
    ("clamp_min_fn", lambda L, x: L.clamp_min(x, 1), ALL),
    ("clip_mixed", lambda L, x: L.clip(x, -1, 2.5), ALL),
    ("clamp_inf", lambda L, x: x.clamp(float("-inf"), float("inf")), ALL),
    ("clamp_nan", lambda L, x: x.clamp(max=float("nan")), ALL),
    ("clamp_", lambda L, x: x.clamp_(1), ALL),
    ("clamp_float_", lambda L, x: x.clamp_(0.5), ALL),
    ("clamp_min_", lambda L, x: x.clamp_min_(1), ALL),
    ("clamp_max_true_", lambda L, x: x.clamp_max_(True), ALL),
    ("clip_", lambda L, x: x.clip_(0, 2), ALL),
    ("clamp_tensors", lambda L, x: L.clamp(x, x > 0, x > 1), ALL),
    ("clamp_tensor_min", lambda L, x: x.clamp(x > 1), ALL),
    ("clamp_tensors_", lambda L, x: x.clamp_(L.zeros_like(x), L.ones((), dtype=L.int64, device=x.device)), ALL),
]


def _setitem(x, key, v):
    x[key] = v
    return x


def _rows(L, x):
    return L.tensor([0, 2], device=x.device)


# index_put_ takes only values of x's dtype (torch's "Index put requires the source and destination dtypes match"),
# but for the fill of a mask by one value; x[key] = v casts v where the key is basic, else it is index_put_.
INDEX_PUTS = [
    ("index_put_", lambda L, x: x.index_put_((_rows(L, x),), L.ones(2, 4, dtype=L.float64, device=x.device)), ALL),
    ("index_put_accumulate", lambda L, x: x.index_put_((_rows(L, x),), L.ones(4, dtype=L.int64, device=x.device),
                                                       accumulate=True), ALL),
    ("index_put", lambda L, x: L.index_put(x, (_rows(L, x),), L.ones((), dtype=L.float32, device=x.device)), ALL),
    ("index_put_mask_one", lambda L, x: x.index_put_((x > 0,), L.tensor([2.5], dtype=L.float64, device=x.device)),
     ALL),
    ("index_put_mask_many", lambda L, x: x.index_put_((x[:, 0] > 0,), L.ones(1, 4, dtype=L.float64, device=x.device)),
     ALL),
    ("index_put_shape_first", lambda L, x: x.index_put_((_rows(L, x),), L.ones(3, dtype=L.float64, device=x.device)),
     ALL),
    ("masked_scatter", lambda L, x: x.masked_scatter(x > 0, L.ones(3, 4, dtype=L.float64, device=x.device)), ALL),
    ("setitem_index", lambda L, x: _setitem(x, _rows(L, x), L.ones(4, dtype=L.float64, device=x.device)), ALL),
    ("setitem_index_0d", lambda L, x: _setitem(x, _rows(L, x), L.tensor(3, device=x.device)), ALL),
    ("setitem_int_index", lambda L, x: _setitem(x, (1, _rows(L, x)), L.ones(2, dtype=L.uint8, device=x.device)), ALL),
    ("setitem_mask_0d", lambda L, x: _setitem(x, x > 0, L.tensor(2.5, dtype=L.float64, device=x.device)), ALL),
    ("setitem_mask_many", lambda L, x: _setitem(x, x[:, 0] > 0, L.ones(1, 4, dtype=L.float64, device=x.device)), ALL),
    ("setitem_slice", lambda L, x: _setitem(x, slice(1, None), L.ones(4, dtype=L.float64, device=x.device)), ALL),
    ("setitem_int", lambda L, x: _setitem(x, 0, L.tensor(2.5, dtype=L.float64, device=x.device)), ALL),
]

CASES = ELEMENTWISE + REDUCTIONS + SELECTION + POOLS + CLAMPS + INDEX_PUTS


@pytest.mark.parametrize("name,call,dtypes", CASES, ids=[c[0] for c in CASES])
def test_dtypes_match_torch(name, call, dtypes, device):
    check(name, call, dtypes, device)


# An int64 average is torch's integer division of the window's int64 sum, truncating toward zero (the sum wraps).
AVG_INT64 = [
    ("avg_pool1d", lambda L, x: F(L).avg_pool1d(x.reshape(2, 3, 8), 3, 2, 1), (2, 3, 8)),
    ("avg_pool1d_big", lambda L, x: F(L).avg_pool1d(x.reshape(1, 1, 6) * 2 ** 61, 3), (6,)),
    ("avg_pool2d_ceil", lambda L, x: F(L).avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     (2, 3, 7, 6)),
    ("avg_pool2d_divisor", lambda L, x: F(L).avg_pool2d(x, (2, 3), 1, (1, 0), divisor_override=-4), (2, 3, 7, 6)),
    ("avg_pool3d", lambda L, x: F(L).avg_pool3d(x, 2, 1, 1), (1, 2, 5, 4, 6)),
    ("avg_pool3d_exclude", lambda L, x: F(L).avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     (1, 2, 5, 4, 6)),
]


@pytest.mark.parametrize("name,call,shape", AVG_INT64, ids=[c[0] for c in AVG_INT64])
def test_avg_pool_int64_matches_torch(name, call, shape, device):
    big = lambda L, x: call(L, x * 7)  # noqa: E731 -- sums with remainders of both signs
    check(name, big, ["int64"], device, shape)


def test_heaviside_in_place_has_no_derivative(device):
    x = vkt.tensor([-1.0, 0.0, 2.0], device=device, requires_grad=True)
    tx = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    y, ty = x * 1, tx * 1
    version, tversion = y._version, ty._version
    y.heaviside_(vkt.tensor([0.5], device=device))
    ty.heaviside_(torch.tensor([0.5]))
    assert y.tolist() == ty.tolist() and y._version - version == ty._version - tversion == 1
    with pytest.raises(RuntimeError) as want:
        ty.sum().backward()
    with pytest.raises(RuntimeError) as got:
        y.sum().backward()
    assert str(got.value) == str(want.value) == "derivative for aten::heaviside_ is not implemented"


def test_heaviside_has_no_derivative(device):
    x = vkt.tensor([-1.0, 0.0, 2.0], device=device, requires_grad=True)
    y = vkt.heaviside(x, vkt.tensor([0.5, 0.5, 0.5], device=device))
    tx = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    ty = torch.heaviside(tx, torch.tensor([0.5, 0.5, 0.5]))
    assert y.tolist() == ty.tolist() and y.requires_grad and ty.requires_grad
    assert "grad_fn=<NotImplemented>" in repr(y) and "grad_fn=<NotImplemented>" in repr(ty)
    with pytest.raises(RuntimeError) as want:
        ty.sum().backward()
    with pytest.raises(RuntimeError) as got:
        y.sum().backward()
    assert str(got.value) == str(want.value) == "derivative for aten::heaviside is not implemented"
    assert vkt.heaviside(x.detach(), y.detach()).grad_fn is None
    with vkt.no_grad():
        assert not x.heaviside(y).requires_grad


# Tensor.to's forms: (other), (device, dtype), (dtype, non_blocking, copy) with keywords; the first bool after the
# dtype is non_blocking (no copy), the second copy. A number as the first argument is torch's `other` read as a cpu
# tensor: to(0.5) is float64, to(True) bool.
TO_FORMS = [
    ("other", lambda L, x, d: x.to(L.tensor([1], dtype=L.int32, device=d))),
    ("other_same", lambda L, x, d: x.to(L.tensor([1.0], device=d))),
    ("other_copy", lambda L, x, d: x.to(L.tensor([1.0], device=d), copy=True)),
    ("other_non_blocking_copy", lambda L, x, d: x.to(L.tensor([1], device=d), True, True)),
    ("device_dtype", lambda L, x, d: x.to(d, L.float64)),
    ("device_dtype_keywords", lambda L, x, d: x.to(device=d, dtype=L.int64)),
    ("device_copy", lambda L, x, d: x.to(d, copy=True)),
    ("dtype_copy", lambda L, x, d: x.to(dtype=L.float32, copy=True)),
    ("dtype_non_blocking_copy", lambda L, x, d: x.to(L.float32, False, True)),
    ("dtype_non_blocking", lambda L, x, d: x.to(L.float32, True)),
    ("non_blocking", lambda L, x, d: x.to(non_blocking=True)),
    ("non_blocking_dtype", lambda L, x, d: x.to(L.float64, non_blocking=True)),
    ("nothing", lambda L, x, d: x.to()),
    ("dtype_none", lambda L, x, d: x.to(dtype=None)),
    ("memory_format", lambda L, x, d: x.to(memory_format=L.contiguous_format)),
]


@pytest.mark.parametrize("name,call", TO_FORMS, ids=[c[0] for c in TO_FORMS])
def test_to_forms_against_torch(name, call, device):
    x, t = vkt.tensor([1.5], device=device), torch.tensor([1.5])
    got, want = call(vkt, x, device), call(torch, t, "cpu")
    assert (got is x) == (want is t), name
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] and got.device.type == device, name
    assert got.cpu().tolist() == want.tolist(), name


TO_REFUSED = [
    ("dtype_dtype", lambda L, x, d: x.to(L.float32, L.float64)),
    ("device_device", lambda L, x, d: x.to(d, d)),
    ("dtype_device", lambda L, x, d: x.to(L.float32, d)),
    ("other_dtype", lambda L, x, d: x.to(L.ones(1), L.float64)),
    ("device_bool", lambda L, x, d: x.to(d, True)),
    ("dtype_three_bools", lambda L, x, d: x.to(L.float32, True, True, True)),
    ("device_dtype_number", lambda L, x, d: x.to(d, L.float32, 1)),
]


@pytest.mark.parametrize("name,call", TO_REFUSED, ids=[c[0] for c in TO_REFUSED])
def test_to_refuses_what_torch_refuses(name, call, device):
    with pytest.raises(TypeError) as want:
        call(torch, torch.ones(1), "cpu")
    with pytest.raises(TypeError) as got:
        call(vkt, vkt.ones(1, device=device), device)
    assert str(got.value) == str(want.value).replace("torch.", "vkt."), name


def test_to_number_is_a_cpu_other(device):
    x = vkt.tensor([1.5], device=device)
    assert x.to(0.5).dtype == torch_like(torch.tensor([1.5]).to(0.5).dtype) and x.to(0.5).device.type == "cpu"
    assert x.to(True).dtype == torch_like(torch.tensor([1.5]).to(True).dtype) == vkt.bool


def torch_like(dtype):
    return getattr(vkt, str(dtype).split(".")[-1])
