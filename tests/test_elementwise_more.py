# The elementwise family against torch CPU where NumPy's semantics differ from PyTorch's: special
# values (NaN, inf, signed zeros) of pow, remainder, tanh and sign, integer powers, result dtypes,
# NumPy arrays and Python numbers as operands. Every case runs on the cpu device and on vulkan.
import math

import numpy as np
import pytest

import vkt
from conftest import assert_close, to_numpy

INF, NAN = float("inf"), float("nan")


def both(device, torch, data, dtype="float32"):
    """The same values as a vkt tensor on device and a torch CPU tensor."""
    a = np.array(data, dtype=dtype)
    return vkt.tensor(a, device=device), torch.tensor(a)


def same(got, want, rtol=1e-5):
    """Values, shape and dtype of a vkt result equal a torch result (NaN equal to NaN)."""
    want = want.numpy()
    assert to_numpy(got).dtype == want.dtype, f"{to_numpy(got).dtype} != {want.dtype}"
    if want.dtype.kind == "f":
        # atol: shaders may flush float32 subnormals to zero
        assert_close(got, want, rtol=rtol if want.dtype != np.float16 else 1e-3, atol=2e-38)
    else:
        assert np.array_equal(to_numpy(got), want), f"{to_numpy(got)} != {want}"


SPECIAL = [-INF, -3.5, -2.0, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 2.0, 3.0, INF, NAN]


def test_pow_special_values(device):
    torch = pytest.importorskip("torch")
    x = np.repeat(np.array(SPECIAL, np.float32), len(SPECIAL))
    y = np.tile(np.array(SPECIAL + [-0.25, 65.0, -65.0, 1e10], np.float32)[: len(SPECIAL)], len(SPECIAL))
    for a, b in [(x, y), (x, np.tile(np.array([-0.25, 65.0, -65.0, 1e10, 0.5, -3.0, 7.0], np.float32), 25)[:x.size])]:
        got = vkt.pow(vkt.tensor(a, device=device), vkt.tensor(b, device=device))
        same(got, torch.pow(torch.tensor(a), torch.tensor(b)))


def test_pow_number_exponents(device):
    torch = pytest.importorskip("torch")
    x, tx = both(device, torch, SPECIAL)
    for e in [0.5, -0.5, -0.25, 2, -1, 3.0, INF, -INF, NAN, 0, 1e10, -3]:
        same(x ** e, tx ** e)
        same(e ** x, e ** tx)
    assert np.signbit(to_numpy(vkt.tensor([-0.0], device=device) ** 0.5))[0]  # sqrt(-0.0), as PyTorch's


def test_bool_pow_bool_stays_bool(device):
    torch = pytest.importorskip("torch")
    for e in (True, False, 2, 0.5):
        got, want = vkt.tensor([True, False], device=device) ** e, torch.tensor([True, False]) ** e
        assert got.tolist() == want.tolist() and str(got.dtype)[4:] == str(want.dtype)[6:]
    x = vkt.tensor([True, False], device=device)
    x **= False
    assert x.tolist() == [True, True]
    with pytest.raises(NotImplementedError, match="pow"):
        vkt.tensor([True], device=device) ** vkt.tensor([True], device=device)


def test_pow_tensor_exponent_issue_cases(device):
    torch = pytest.importorskip("torch")
    x, tx = both(device, torch, [0.0, NAN, NAN])
    y, ty = both(device, torch, [-0.25, INF, -INF])
    same(vkt.pow(x, y), torch.pow(tx, ty))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_pow_negative_exponents(device, dtype):
    torch = pytest.importorskip("torch")
    base = [2, -1, -1, 3, 1, 0, -2, 1] if dtype != "uint8" else [2, 1, 0, 3, 1, 0, 5, 1]
    expo = [-1, -1, -2, -8, -3, 0, 3, 5] if dtype != "uint8" else [1, 1, 2, 8, 3, 0, 3, 5]
    x, tx = both(device, torch, base, dtype)
    y, ty = both(device, torch, expo, dtype)
    same(vkt.pow(x, y), torch.pow(tx, ty))
    same(2 ** y, 2 ** ty)
    if dtype != "uint8":
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
            x ** -1


def test_remainder_is_exact(device):
    torch = pytest.importorskip("torch")
    a = [4988429.0, 1e10, -1e10, 7.5, -7.5, 1e-3, 3e38, -5.0, 5.0, 0.0, -0.0, INF, NAN, 1.0, 6.0]
    b = [1001.2, 3.0, 3.0, -2.0, 2.0, 1e-4, 7e-3, 3.0, -3.0, 2.0, 2.0, 2.0, 2.0, INF, 0.0]
    for dtype in ["float32", "float64"]:
        x, tx = both(device, torch, a, dtype)
        y, ty = both(device, torch, b, dtype)
        same(x % y, tx % ty)
        same(vkt.remainder(x, 1001.2), torch.remainder(tx, 1001.2))
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(2000) * 10.0 ** rng.integers(-3, 9, 2000)).astype(np.float32)
    b = (rng.standard_normal(2000) * 10.0 ** rng.integers(-3, 4, 2000)).astype(np.float32)
    same(vkt.tensor(a, device=device) % vkt.tensor(b, device=device), torch.tensor(a) % torch.tensor(b))


def test_floor_divide_matches_remainder(device):
    torch = pytest.importorskip("torch")
    a = [INF, -INF, NAN, 1e10, 4988429.0, -7.5, 5.0, 0.3, -1e-3, 0.0, -0.0, 7.0]
    b = [0.7, 0.7, 2.0, 3.0, 1001.2, 2.0, -0.1, 0.1, 0.7, -2.0, 3.0, 0.0]
    for dtype in ["float32", "float64"]:
        x, tx = both(device, torch, a, dtype)
        y, ty = both(device, torch, b, dtype)
        same(x // y, tx // ty)
        same(vkt.floor_divide(x, 0.7), torch.floor_divide(tx, 0.7))
        w = (tx // ty).numpy()
        assert np.array_equal(np.signbit(to_numpy(x // y))[~np.isnan(w)], np.signbit(w)[~np.isnan(w)])  # -0.0


def test_gelu_far_left_tail(device):
    x = vkt.tensor([-6.0, -8.0, -10.0], device=device)
    exact = np.array([-6.0, -8.0, -10.0]) * 0.5 * np.array([math.erfc(v / math.sqrt(2)) for v in (6.0, 8.0, 10.0)])
    assert_close(x.gelu(), exact, rtol=1e-5, atol=0)


@pytest.mark.parametrize("name", ["hardshrink", "softshrink"])
def test_shrinks_as_torch(device, name):
    """Values at the edges, NaN passing with a gradient of 1 as torch's backward formulas give, and softshrink's
    range error in each float dtype. (torch's float32 softshrink gives -0.0 in the middle for negatives, its float64
    +0.0: zeros are compared as values.)"""
    torch = pytest.importorskip("torch")
    data = [-2.0, -0.5, -0.3, -0.0, 0.0, 0.2, 0.5, 0.51, NAN, INF, -INF]
    x, t = both(device, torch, data, "float64")
    x.requires_grad_()
    t.requires_grad_()
    got, want = getattr(vkt.nn.functional, name)(x, 0.5), getattr(torch.nn.functional, name)(t, 0.5)
    same(got.detach(), want.detach())
    got.sum().backward()
    want.sum().backward()
    same(x.grad, t.grad)
    for dtype in ("float16", "float32", "float64"):
        with pytest.raises(RuntimeError) as expected:
            torch.nn.functional.softshrink(torch.ones(2, dtype=getattr(torch, dtype)), -1.5)
        with pytest.raises(RuntimeError) as got:
            vkt.nn.functional.softshrink(vkt.ones(2, dtype=getattr(vkt, dtype), device=device), -1.5)
        assert str(got.value) == str(expected.value)


def test_tanh_and_sign_of_special_values(device):
    torch = pytest.importorskip("torch")
    for dtype in ["float32", "float16", "float64"]:
        x, tx = both(device, torch, [NAN, INF, -INF, -0.0, 0.0, 50.0, -50.0, 0.3], dtype)
        same(x.tanh(), tx.tanh())
        same(x.sign(), tx.sign())
        assert not np.signbit(to_numpy(x.sign())[3:5]).any()  # sign(-0.0) is +0, as in PyTorch


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float16"])
def test_square_dtype(device, dtype):
    torch = pytest.importorskip("torch")
    x, tx = both(device, torch, [1, 0, 1, 3], dtype)
    same(x.square(), tx.square())
    same(vkt.square(x), torch.square(tx))


BINARY_OPS = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
              lambda a, b: a // b, lambda a, b: a % b, lambda a, b: a ** b, lambda a, b: a < b,
              lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a == b,
              lambda a, b: a != b]


@pytest.mark.parametrize("k", range(len(BINARY_OPS)))
def test_numpy_array_operand_stays_on_device(device, k):
    torch = pytest.importorskip("torch")
    op = BINARY_OPS[k]
    t, tt = both(device, torch, [[1.5, 2.0, 3.0], [4.0, 0.5, 6.0]])
    for arr in [np.array([1.0, 2.0, 4.0], np.float32), np.array([1.0, 2.0, 4.0]), np.array(2, np.int64)]:
        got = op(t, arr)
        assert isinstance(got, vkt.Tensor) and got.device == t.device
        same(got, op(tt, torch.from_numpy(arr)))
        # NumPy defers to the tensor: the reflected operator runs and the result is a tensor on device
        got = op(arr, t)
        assert isinstance(got, vkt.Tensor) and got.device == t.device
        same(got, op(torch.from_numpy(arr), tt))


def test_numpy_array_inplace_operand(device):
    t = vkt.ones(2, 3, device=device)
    t += np.arange(3, dtype=np.float32)
    t *= np.full((2, 1), 2.0)
    assert to_numpy(t).tolist() == [[2, 4, 6], [2, 4, 6]]


def test_two_numbers():
    torch = pytest.importorskip("torch")
    for name in ["add", "sub", "mul", "div", "floor_divide", "true_divide"]:
        for a, b in [(2, 3), (2.5, 3), (True, 2), (7, -2.0)]:
            try:
                want = getattr(torch, name)(a, b)
            except RuntimeError:  # sub of a bool
                with pytest.raises(RuntimeError):
                    getattr(vkt, name)(a, b)
                continue
            same(getattr(vkt, name)(a, b), want)
    same(vkt.add(2, 3, alpha=2), torch.add(2, 3, alpha=2))
    for name in ["maximum", "minimum", "pow", "remainder", "eq", "lt", "logical_and"]:
        with pytest.raises(TypeError):
            getattr(torch, name)(2, 3)
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) must be Tensor, not int"):
            getattr(vkt, name)(2, 3)


@pytest.mark.parametrize("name", ["maximum", "minimum", "logical_and", "logical_or", "logical_xor", "atan2", "hypot",
                                  "logaddexp"])
def test_tensor_only_operands(device, name):
    torch = pytest.importorskip("torch")
    t, tt = both(device, torch, [1.5, -2.0])
    with pytest.raises(TypeError):
        getattr(torch, name)(tt, 2)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        getattr(vkt, name)(t, 2)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        getattr(t, name)(2.5)


def test_bool_refusals(device):
    b = vkt.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        b.relu()
    for f in [lambda: b ** b, lambda: b % b, lambda: b // True, lambda: b.div(b, rounding_mode="trunc")]:
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            f()


def test_fixes_take_no_fallback(dev):
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor([0.0, NAN, 3.0, -2.5], device=dev)
    vkt.pow(x, x), x % x, x.tanh(), x.sign(), x + np.ones(4, np.float32)
    assert vkt.vulkan.fallback_stats() == {}


# ---- the ops of issue 15, table-driven against torch CPU ----
# (name, vkt call, torch call, domain, dtypes). The reference is torch on the same dtype: values within
# rtol 1e-5 (float32) and an atol below float32's smallest normal, and torch's result dtype.
FLOATS = ["float32", "float16", "float64"]
INTS = ["int32", "int64", "uint8"]
ALL = FLOATS + INTS + ["bool"]
try:
    import torch.nn.functional as TF
except ImportError:  # the tests below skip (importorskip); the table only names TF inside lambdas
    TF = None


def fn(name):
    return lambda x: getattr(vkt, name)(x)


def tfn(name):
    return lambda x: getattr(__import__("torch"), name)(x)


UNARY_MORE = [
    ("log1p", lambda x: x.log1p(), tfn("log1p"), "gt-1", FLOATS + INTS),
    ("expm1", fn("expm1"), tfn("expm1"), "any", FLOATS + INTS),
    ("log2", lambda x: x.log2(), tfn("log2"), "positive", FLOATS + INTS),
    ("log10", fn("log10"), tfn("log10"), "positive", FLOATS),
    ("exp2", fn("exp2"), tfn("exp2"), "any", FLOATS + INTS),
    ("erf", lambda x: x.erf(), tfn("erf"), "any", FLOATS + ["int32"]),
    ("erfc", fn("erfc"), tfn("erfc"), "any", FLOATS),
    ("erfinv", lambda x: x.erfinv(), tfn("erfinv"), "unit", FLOATS),
    ("tan", fn("tan"), tfn("tan"), "trig", FLOATS),
    ("asin", fn("asin"), tfn("asin"), "unit", FLOATS),
    ("arccos", fn("arccos"), tfn("arccos"), "unit", FLOATS),
    ("atan", lambda x: x.atan(), tfn("atan"), "any", FLOATS + ["int64"]),
    ("sinh", fn("sinh"), tfn("sinh"), "any", FLOATS),
    ("cosh", lambda x: x.cosh(), tfn("cosh"), "any", FLOATS),
    ("asinh", fn("asinh"), tfn("asinh"), "any", FLOATS),
    ("acosh", fn("acosh"), tfn("acosh"), "ge1", FLOATS),
    ("atanh", lambda x: x.arctanh(), tfn("atanh"), "unit", FLOATS),
    ("trunc", lambda x: x.trunc(), tfn("trunc"), "any", FLOATS + INTS),
    ("fix", fn("fix"), tfn("fix"), "any", ["float32"]),
    ("frac", lambda x: x.frac(), tfn("frac"), "any", FLOATS),
    ("deg2rad", fn("deg2rad"), tfn("deg2rad"), "any", FLOATS + INTS),
    ("rad2deg", lambda x: x.rad2deg(), tfn("rad2deg"), "any", FLOATS + ["int32"]),
    ("isnan", lambda x: x.isnan(), tfn("isnan"), "special", ALL),
    ("isinf", fn("isinf"), tfn("isinf"), "special", ALL),
    ("isfinite", fn("isfinite"), tfn("isfinite"), "special", ALL),
    ("isneginf", fn("isneginf"), tfn("isneginf"), "special", FLOATS + ["int32"]),
    ("isposinf", lambda x: x.isposinf(), tfn("isposinf"), "special", FLOATS + ["int32"]),
    ("nan_to_num", fn("nan_to_num"), tfn("nan_to_num"), "special", ALL),
    ("nan_to_num_args", lambda x: x.nan_to_num(2.0, posinf=3.0, neginf=-4.0),
     lambda x: x.nan_to_num(2.0, posinf=3.0, neginf=-4.0), "special", FLOATS),
    ("round_2", lambda x: x.round(decimals=2), lambda x: x.round(decimals=2), "any", FLOATS),
    ("round_-1", lambda x: vkt.round(x * 30, decimals=-1), lambda x: (x * 30).round(decimals=-1), "any", FLOATS),
    ("bitwise_not", lambda x: ~x, lambda x: ~x, "any", INTS + ["bool"]),
    ("bitwise_not_fn", fn("bitwise_not"), tfn("bitwise_not"), "any", INTS + ["bool"]),
    ("sigmoid", lambda x: x.sigmoid(), tfn("sigmoid"), "any", FLOATS),
    ("tanh", fn("tanh"), tfn("tanh"), "any", FLOATS),
    ("log", fn("log"), tfn("log"), "positive", FLOATS),
    ("sign", lambda x: x.sign(), tfn("sign"), "special", FLOATS + INTS + ["bool"]),
    ("square", lambda x: x.square(), tfn("square"), "any", ALL),
    ("hardtanh", lambda x: vkt.nn.functional.hardtanh(x, -0.5, 2.0), lambda x: TF.hardtanh(x, -0.5, 2.0), "any",
     FLOATS + ["int32", "int64"]),
    ("relu6", lambda x: vkt.nn.functional.relu6(x), lambda x: TF.relu6(x), "any", FLOATS + ["int64"]),
    ("hardsigmoid", lambda x: vkt.nn.functional.hardsigmoid(x), lambda x: TF.hardsigmoid(x), "any", FLOATS),
    ("hardswish", lambda x: vkt.nn.functional.hardswish(x), lambda x: TF.hardswish(x), "any", FLOATS),
    ("mish", lambda x: vkt.nn.functional.mish(x), lambda x: TF.mish(x), "wide", FLOATS),
    ("logsigmoid", lambda x: vkt.nn.functional.logsigmoid(x), lambda x: TF.logsigmoid(x), "wide", FLOATS),
    ("selu", lambda x: vkt.nn.functional.selu(x), lambda x: TF.selu(x), "any", FLOATS),
    ("celu", lambda x: vkt.nn.functional.celu(x, alpha=1.5), lambda x: TF.celu(x, alpha=1.5), "any", FLOATS),
    ("softsign", lambda x: vkt.nn.functional.softsign(x), lambda x: TF.softsign(x), "any", FLOATS + ["int32"]),
    ("tanhshrink", lambda x: vkt.nn.functional.tanhshrink(x), lambda x: TF.tanhshrink(x), "any", FLOATS),
    ("hardshrink", lambda x: vkt.nn.functional.hardshrink(x, 0.7), lambda x: TF.hardshrink(x, 0.7), "special",
     FLOATS),
    ("softshrink", lambda x: vkt.nn.functional.softshrink(x), lambda x: TF.softshrink(x), "special", FLOATS),
    ("threshold", lambda x: vkt.nn.functional.threshold(x, 0.5, -2.0), lambda x: TF.threshold(x, 0.5, -2.0), "any",
     FLOATS + ["int32"]),
    ("elu", lambda x: vkt.nn.functional.elu(x, alpha=1.5), lambda x: TF.elu(x, alpha=1.5), "any", FLOATS),
    ("softplus", lambda x: vkt.nn.functional.softplus(x, beta=2.0), lambda x: TF.softplus(x, beta=2.0), "any", FLOATS),
    ("gelu_tanh", lambda x: vkt.nn.functional.gelu(x, approximate="tanh"),
     lambda x: TF.gelu(x.double(), approximate="tanh").to(x.dtype), "finite", FLOATS),
    # PyTorch's float32 gelu cancels in 1 + erf(x / sqrt(2)) for x < -2; vkt's is held to float64's
    ("gelu_method", lambda x: x.gelu(), lambda x: TF.gelu(x.double()).to(x.dtype), "finite", FLOATS),
]

# Shapes and layouts: 0-d, empty, odd, 2-d, transposed ("t") and sliced with steps ("s").
LAYOUTS = [((), "c"), ((0,), "c"), ((7,), "c"), ((3, 5), "c"), ((5, 3), "t"), ((4, 6), "s")]
SPECIALS = np.array([NAN, INF, -INF, -0.0, 0.0, 1e-7, -3e-5, 1e-3, -0.4, 0.75, 2.5, -7.0, 60.0, -95.0, 1e30])


def values(n, domain, dtype, seed=0):
    """n input values of the domain: random, then the domain's edge cases (small magnitudes among them)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, n)
    small = 10.0 ** rng.uniform(-7, -1, n) * rng.choice([-1, 1], n)
    x = np.where(np.arange(n) % 3 == 0, small, x)
    if domain == "gt-1":
        x = np.where(x < -0.999, -0.5, x)
    elif domain == "positive":
        x = np.abs(x) + 1e-3
    elif domain == "ge1":
        x = 1 + np.abs(x)
    elif domain == "unit":
        x = np.tanh(x)
    elif domain == "wide":
        x = x * 10
    elif domain == "special":
        x = np.resize(SPECIALS, n)
    if dtype == "bool":
        return x > 0
    if dtype == "float16":
        x = np.clip(x, -65504, 65504)  # 1e30 is inf in float16, as PyTorch would hold it
    if dtype in INTS:
        x = np.nan_to_num(x * (3 if domain in ("any", "special") else 1) + (1 if domain == "gt-1" else 0))
        return np.clip(np.abs(x) if dtype == "uint8" else x, -100, 100).astype(dtype)
    return x.astype(dtype)


def layout(x, shape, how, device):
    """x reshaped to shape as a vkt tensor on device in the given layout, and the same values for torch."""
    torch = pytest.importorskip("torch")
    n = int(np.prod(shape))
    v = x[:n].reshape(shape)
    if how == "t":
        t = vkt.tensor(np.ascontiguousarray(v.T), device=device).T
    elif how == "s":
        big = np.zeros((shape[0] * 2, shape[1] * 3), v.dtype)
        big[::2, 1::3] = v
        t = vkt.tensor(big, device=device)[::2, 1::3]
    else:
        t = vkt.tensor(v, device=device)
    return t, torch.from_numpy(np.array(v))


def reference(tfn_, tx):
    """torch's result on tx and its dtype: float32 results within 1e-5 of torch's own float32."""
    want = tfn_(tx)
    return want, want.dtype


def agree(got, want, want_dtype, dtype, name):
    torch = pytest.importorskip("torch")
    g = to_numpy(got)
    assert str(g.dtype) == str(want_dtype).replace("torch.", ""), f"{name}: dtype {g.dtype} != {want_dtype}"
    w = want.numpy()
    if w.dtype.kind in "biu":
        assert np.array_equal(g, w), f"{name}: {g} != {w}"
        return
    rtol, atol = {"float16": (2e-3, 1e-3), "float64": (1e-10, 1e-300)}.get(dtype, (1e-5, 2e-38))
    if name == "tanhshrink":  # x - tanh(x) cancels near 0 in PyTorch's float32 as in vkt's
        atol = max(atol, 1e-6)
    w = w.astype(np.float64)
    assert_close(g, np.where(np.abs(w) < 6e-8, 0, w) if dtype == "float16" else w, rtol=rtol, atol=atol)


unary_more_cases = [(c, dt) for c in UNARY_MORE for dt in c[4]]


@pytest.mark.parametrize("case,dtype", unary_more_cases, ids=[f"{c[0]}-{dt}" for c, dt in unary_more_cases])
def test_unary_more(device, case, dtype):
    torch = pytest.importorskip("torch")
    name, f, tf, domain, _ = case
    x = values(48, domain, dtype)
    for shape, how in LAYOUTS if dtype == "float32" else [((7,), "c"), ((5, 3), "t")]:
        t, tx = layout(x, shape, how, device)
        got = f(t)
        want, want_dtype = reference(tf, tx)
        assert got.shape == tuple(want.shape)
        agree(got, want, want_dtype, dtype, name)
        if dtype == "float16" and domain != "special":
            continue
        with np.errstate(all="ignore"):  # the special values, at full length, on this dtype
            xs = torch.from_numpy(values(60, "special", "float64").astype(dtype) if dtype in FLOATS else x)
        if domain in ("any", "special", "trig") and dtype == "float32":
            if domain == "trig":  # GLSL's range reduction of sin, cos and tan is not exact: no 1e30
                xs = xs[xs.abs() < 1e3]
            want, want_dtype = reference(tf, xs)
            agree(f(vkt.tensor(xs.numpy(), device=device)), want, want_dtype, dtype, name)


NOT_IMPLEMENTED = [  # PyTorch has no kernel for these dtypes: NotImplementedError with its wording
    (lambda x: x.frac(), "int64", '"frac_cpu" not implemented for \'Long\''),
    (lambda x: vkt.nn.functional.hardsigmoid(x), "int32", "not implemented for 'Int'"),
    (lambda x: x.trunc(), "bool", "not implemented for 'Bool'"),
    (lambda x: x & x, "float32", '"bitwise_and_cpu" not implemented for \'Float\''),
    (lambda x: x.bitwise_or(1), "float64", "not implemented for 'Double'"),
    (lambda x: x << x, "bool", "not implemented for 'Bool'"),
    (lambda x: x ^ 1.5, "int32", "not implemented for 'Float'"),
    (lambda x: vkt.hypot(x, x), "int64", "not implemented for 'Long'"),
    (lambda x: vkt.round(x, decimals=1), "int32", "\"round_cpu\" not implemented for 'Int'"),
    (lambda x: vkt.fmod(x, x), "bool", "not implemented for 'Bool'"),
    (lambda x: abs(x), "bool", '"abs_cpu" not implemented for \'Bool\''),
    (lambda x: x.floor(), "bool", "not implemented for 'Bool'"),
    (lambda x: vkt.round(x), "bool", "not implemented for 'Bool'"),
]


@pytest.mark.parametrize("k", range(len(NOT_IMPLEMENTED)))
def test_not_implemented_dtypes(device, k):
    f, dtype, message = NOT_IMPLEMENTED[k]
    with pytest.raises(NotImplementedError, match=message.replace("(", r"\(")):
        f(vkt.ones(3, dtype=getattr(vkt, dtype), device=device))


def test_invert_of_float_is_a_type_error(device):
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~vkt.ones(2, device=device)


# (name, vkt call, torch call, dtypes, domain of the second operand)
BINARY_MORE = [
    ("atan2", lambda a, b: vkt.atan2(a, b), lambda a, b: __import__("torch").atan2(a, b), FLOATS + ["int32"], "any"),
    ("arctan2", lambda a, b: a.arctan2(b), lambda a, b: a.arctan2(b), ["float32"], "any"),
    ("fmod", lambda a, b: vkt.fmod(a, b), lambda a, b: __import__("torch").fmod(a, b), FLOATS + INTS, "nonzero"),
    ("hypot", lambda a, b: a.hypot(b), lambda a, b: a.hypot(b), FLOATS, "any"),
    ("copysign", lambda a, b: vkt.copysign(a, b), lambda a, b: __import__("torch").copysign(a, b),
     FLOATS + ["int32"], "any"),
    ("logaddexp", lambda a, b: vkt.logaddexp(a, b), lambda a, b: __import__("torch").logaddexp(a, b), FLOATS, "any"),
    ("bitwise_and", lambda a, b: a & b, lambda a, b: a & b, INTS + ["bool"], "any"),
    ("bitwise_or", lambda a, b: vkt.bitwise_or(a, b), lambda a, b: a | b, INTS + ["bool"], "any"),
    ("bitwise_xor", lambda a, b: a.bitwise_xor(b), lambda a, b: a ^ b, INTS + ["bool"], "any"),
    ("lshift", lambda a, b: a << b, lambda a, b: a << b, INTS, "shift"),
    ("rshift", lambda a, b: vkt.bitwise_right_shift(a, b), lambda a, b: a >> b, INTS, "shift"),
    ("logical_xor", lambda a, b: a.logical_xor(b), lambda a, b: a.logical_xor(b), ALL, "any"),
    ("isclose", lambda a, b: vkt.isclose(a, b, rtol=0.3, atol=0.2), lambda a, b: a.isclose(b, rtol=0.3, atol=0.2),
     FLOATS, "any"),
    # torch's side expands a first: torch 2.11 (on the GPU machine) refuses to broadcast isclose's operands
    ("isclose_nan", lambda a, b: a.isclose(a * b, equal_nan=True),
     lambda a, b: a.expand_as(a * b).isclose(a * b, equal_nan=True),
     FLOATS, "any"),
    ("clamp_min", lambda a, b: a.clamp_min(b), lambda a, b: a.clamp_min(b), FLOATS + ["int32"], "any"),
    ("clamp_max", lambda a, b: vkt.clamp_max(a, b), lambda a, b: a.clamp_max(b), ["float32", "int64"], "any"),
    ("clamp_tensors", lambda a, b: vkt.clamp(a, b, b + 1), lambda a, b: a.clamp(b, b + 1), ["float32", "int32"],
     "any"),
    ("clip_min_tensor", lambda a, b: a.clip(min=b), lambda a, b: a.clip(min=b), ["float32"], "any"),
    ("lerp", lambda a, b: vkt.lerp(a, b, 0.3), lambda a, b: a.lerp(b, 0.3), FLOATS, "any"),
    ("lerp_high", lambda a, b: a.lerp(b, 0.8), lambda a, b: a.lerp(b, 0.8), ["float32"], "any"),
    ("lerp_tensor", lambda a, b: a.lerp(b, b.abs() / 3), lambda a, b: a.lerp(b, b.abs() / 3), ["float32", "float64"],
     "any"),
    ("addcmul", lambda a, b: vkt.addcmul(a, b, b, value=0.5), lambda a, b: a.addcmul(b, b, value=0.5), FLOATS,
     "any"),
    ("addcmul_int", lambda a, b: a.addcmul(b, a), lambda a, b: a.addcmul(b, a), ["int32"], "any"),
    ("addcdiv", lambda a, b: a.addcdiv(a, b, value=2), lambda a, b: a.addcdiv(a, b, value=2), FLOATS, "nonzero"),
]
PAIRS_MORE = [((3, 5), (3, 5)), ((3, 5), (5,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((7,), ()), ((0, 3), (1, 3))]


def operands(shape, dtype, domain, seed):
    with np.errstate(all="ignore"):
        x = values(max(int(np.prod(shape)), 1) + 12, "any", dtype, seed)
    if domain == "nonzero" and dtype not in FLOATS:
        x = np.where(x == 0, 3, x).astype(dtype)
    elif domain == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x).astype(dtype)
    elif domain == "shift":
        x = (np.arange(x.size) * 5 % 70).astype(dtype)
    return x[: int(np.prod(shape))].reshape(shape)


binary_more_cases = [(c, dt) for c in BINARY_MORE for dt in c[3]]


@pytest.mark.parametrize("case,dtype", binary_more_cases, ids=[f"{c[0]}-{dt}" for c, dt in binary_more_cases])
def test_binary_more(device, case, dtype):
    torch = pytest.importorskip("torch")
    name, f, tf, _, domain = case
    for sa, sb in PAIRS_MORE if dtype == "float32" else PAIRS_MORE[:3]:
        a, b = operands(sa, dtype, "any", 1), operands(sb, dtype, domain, 2)
        if domain == "shift" and dtype != "uint8":
            a = a * np.where(np.arange(a.size).reshape(a.shape) % 2, -1, 1).astype(dtype)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        got = f(vkt.tensor(a, device=device), vkt.tensor(b, device=device))
        want = tf(ta, tb)
        agree(got, want, want.dtype, dtype, name)
    if dtype == "float32":  # special values against each other
        s = np.array(SPECIALS[:-1], np.float32)  # not 1e30: whether 1e30 * 1e30 overflows is PyTorch's kernel's
        a, b = np.repeat(s, s.size), np.tile(s, s.size)
        if domain == "nonzero":
            b = np.where(b == 0, 1.5, b).astype(np.float32)
        got = f(vkt.tensor(a, device=device), vkt.tensor(b, device=device))
        want = tf(torch.from_numpy(a), torch.from_numpy(b))
        agree(got, want, want.dtype, dtype, name)


def test_binary_transposed_and_sliced(device):
    torch = pytest.importorskip("torch")
    a = values(96, "any", "float32").reshape(8, 12)
    b = values(96, "any", "float32", 1).reshape(12, 8)
    va, vb = vkt.tensor(a, device=device)[::2, 1::3], vkt.tensor(b, device=device).T[::2, 1::3]
    ta, tb = torch.from_numpy(a)[::2, 1::3], torch.from_numpy(b).T[::2, 1::3]
    for name in ["atan2", "hypot", "logaddexp", "copysign", "fmod"]:
        agree(getattr(vkt, name)(va, vb), getattr(torch, name)(ta, tb), torch.float32, "float32", name)
    agree(va.lerp(vb, 0.25), ta.lerp(tb, 0.25), torch.float32, "float32", "lerp")
    agree(vkt.clamp(va, vb, vb + 0.5), torch.clamp(ta, tb, tb + 0.5), torch.float32, "float32", "clamp")


INPLACE_MORE = [  # in-place forms write through views and keep the tensor's dtype
    ("log1p_", lambda x: x.log1p_(), "float32"), ("erfinv_", lambda x: x.mul_(0.1).erfinv_(), "float32"),
    ("trunc_", lambda x: x.trunc_(), "float64"), ("atan2_", lambda x: x.atan2_(x + 1), "float32"),
    ("clamp_", lambda x: x.clamp_(x * 0 - 1, x * 0 + 1), "float32"), ("clip_", lambda x: x.clip_(-1, 1), "int32"),
    ("lerp_", lambda x: x.lerp_(x * 2, 0.5), "float32"), ("addcmul_", lambda x: x.addcmul_(x, x), "float32"),
    ("addcdiv_", lambda x: x.addcdiv_(x, x + 10, value=3), "float32"),
    ("nan_to_num_", lambda x: x.nan_to_num_(), "float16"),
    ("round_", lambda x: x.round_(decimals=1), "float32"), ("and_", lambda x: x.__iand__(6), "int32"),
    ("or_", lambda x: x.__ior__(x), "uint8"), ("xor_", lambda x: x.bitwise_xor_(3), "int64"),
    ("lshift_", lambda x: x.__ilshift__(2), "int32"), ("rshift_", lambda x: x.bitwise_right_shift_(1), "int64"),
    ("not_", lambda x: x.bitwise_not_(), "int32"), ("fmod_", lambda x: x.fmod_(2.5), "float32"),
    ("copysign_", lambda x: x.copysign_(-1.0), "float32"), ("hypot_", lambda x: x.hypot_(x), "float32"),
    ("clamp_min_", lambda x: x.clamp_min_(0), "int32"), ("clamp_max_", lambda x: x.clamp_max_(x * 0), "float32"),
    ("selu_", lambda x: vkt.nn.functional.selu(x, inplace=True), "float32"),
    ("hardswish_", lambda x: vkt.nn.functional.hardswish(x, inplace=True), "float32"),
    ("mish_", lambda x: vkt.nn.functional.mish(x, inplace=True), "float32"),
    ("hardsigmoid_", lambda x: vkt.nn.functional.hardsigmoid(x, inplace=True), "float32"),
    ("celu_", lambda x: vkt.nn.functional.celu(x, 2.0, inplace=True), "float32"),
    ("threshold_", lambda x: vkt.nn.functional.threshold(x, 0.1, 9.0, inplace=True), "float32"),
    ("relu6_", lambda x: vkt.nn.functional.relu6(x, inplace=True), "float32"),
]


@pytest.mark.parametrize("name,f,dtype", INPLACE_MORE, ids=[c[0] for c in INPLACE_MORE])
def test_inplace_more(device, name, f, dtype):
    torch = pytest.importorskip("torch")
    x = values(24, "any", dtype).reshape(4, 6)
    t, tt = vkt.tensor(x, device=device), torch.from_numpy(x.copy())
    tf = {"selu_": lambda v: TF.selu(v, inplace=True), "hardswish_": lambda v: TF.hardswish(v, inplace=True),
          "mish_": lambda v: TF.mish(v, inplace=True), "hardsigmoid_": lambda v: TF.hardsigmoid(v, inplace=True),
          "celu_": lambda v: TF.celu(v, 2.0, inplace=True), "threshold_": lambda v: TF.threshold(v, 0.1, 9.0, True),
          "relu6_": lambda v: TF.relu6(v, inplace=True)}.get(name, f)
    view, tview = t[1:, ::2], tt[1:, ::2]
    assert f(view) is view
    tf(tview)
    agree(t, tt, tt.dtype, dtype, name)


def test_inplace_into_integer_is_refused(device):
    i = vkt.ones(3, dtype=vkt.int32, device=device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        i.log1p_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.clamp_(vkt.zeros(3, device=device), vkt.ones(3, device=device))


def test_allclose_and_equal(device):
    torch = pytest.importorskip("torch")
    a = values(40, "any", "float32").reshape(5, 8)
    for b, kw in [(a + 1e-7, {}), (a * 1.1, {}), (a * 1.1, {"rtol": 0.2}), (a, {"atol": 0.0, "rtol": 0.0})]:
        got = vkt.allclose(vkt.tensor(a, device=device), vkt.tensor(b, device=device), **kw)
        assert got is torch.allclose(torch.from_numpy(a), torch.from_numpy(b), **kw)
    n = np.array([NAN, 1.0], np.float32)
    assert vkt.tensor(n, device=device).allclose(vkt.tensor(n, device=device)) is False
    assert vkt.tensor(n, device=device).allclose(vkt.tensor(n, device=device), equal_nan=True) is True
    t = vkt.tensor(a, device=device)
    assert vkt.equal(t, t.clone()) is True and t.equal(t + 1) is False and vkt.equal(t, t[:2]) is False
    assert vkt.equal(vkt.zeros(0, device=device), vkt.zeros(0, device=device)) is True
    with pytest.raises(RuntimeError, match="^Float did not match Double$"):  # torch 2.13's words
        vkt.isclose(t, t.to(vkt.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        vkt.isclose(t, t, rtol=-1.0)


def test_clamp_bound_errors(device):
    t = vkt.ones(3, device=device)
    with pytest.raises(TypeError, match="both tensors or both numbers"):
        vkt.clamp(t, min=vkt.zeros(3, device=device), max=2)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        t.clamp()
    nan = vkt.tensor(NAN, device=device)
    assert np.isnan(to_numpy(t.clamp(nan))).all()  # a NaN bound gives NaN, as in PyTorch
    assert np.isnan(to_numpy(t.clamp(NAN))).all() and np.isnan(to_numpy(t.clamp(max=NAN))).all()
    i = vkt.tensor([1, 5, 3], device=device).clamp(2.5)  # an integer tensor clamped to a float is float
    assert i.dtype == vkt.float32 and to_numpy(i).tolist() == [2.5, 5.0, 3.0]


SIGNED_ZEROS = [
    ("clamp(0, -0)", lambda m, x: x.clamp(0.0, -0.0)),
    ("clamp(-0, 0)", lambda m, x: x.clamp(-0.0, 0.0)),
    ("clamp_min(0)", lambda m, x: x.clamp_min(0.0)),
    ("clamp_max(-0)", lambda m, x: x.clamp_max(-0.0)),
    ("clamp tensors", lambda m, x: x.clamp(m.zeros_like(x), -m.zeros_like(x))),
    ("maximum", lambda m, x: m.maximum(x, x.roll(1))),
    ("minimum", lambda m, x: m.minimum(x, x.roll(1))),
    ("maximum scalar", lambda m, x: m.maximum(x, m.tensor(0.0, dtype=x.dtype))),
    ("clamp(x, x)", lambda m, x: x.clamp(x.roll(1), x.roll(2))),
    ("relu", lambda m, x: m.relu(x)),
    ("relu6", lambda m, x: m.nn.functional.relu6(x)),
    ("hardtanh(0, -0)", lambda m, x: m.nn.functional.hardtanh(x, 0.0, -0.0)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name,fn", SIGNED_ZEROS, ids=[c[0] for c in SIGNED_ZEROS])
def test_signed_zeros_as_torch(device, dtype, name, fn):
    """Where a max or min compares 0.0 and -0.0 equal, PyTorch keeps the first operand (C++'s std::max): relu(-0.0)
    is -0.0, maximum(0.0, -0.0) 0.0 and maximum(-0.0, 0.0) -0.0. Signs compared bit for bit."""
    torch = pytest.importorskip("torch")
    got, want = (fn(m, t) for m, t in zip((vkt, torch), both(device, torch, [0.0, -0.0, 1.0, -1.0, -0.0, 0.0], dtype)))
    assert np.array_equal(np.signbit(to_numpy(got)), np.signbit(want.numpy())), f"{to_numpy(got)} != {want}"
    same(got, want)


def test_lerp_and_addcdiv_errors(device):
    f = vkt.ones(3, device=device)
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end` but got dtype float64"):
        f.lerp(f.to(vkt.float64), 0.5)
    i = vkt.ones(3, dtype=vkt.int32, device=device)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        f.addcdiv(i, i)


def test_new_ops_take_no_float32_fallback(dev):
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor(values(99, "any", "float32").reshape(9, 11), device=dev)
    u = vkt.tensor(values(99, "unit", "float32").reshape(9, 11), device=dev)
    for name, f, _, domain, dtypes in UNARY_MORE:
        if "float32" in dtypes:
            f(u if domain == "unit" else x.abs() + 1 if domain in ("positive", "ge1") else x)
    for name, f, _, dtypes, domain in BINARY_MORE:
        if "float32" in dtypes:
            f(x, x.T.T + 0.5)
    i = x.to(vkt.int32)
    i & i, i | 3, i ^ i, i << 2, i >> 1, ~i, vkt.fmod(i, 3)
    assert vkt.vulkan.fallback_stats() == {}


# ---- where with Python numbers: a, b or both are the op's scalars (push constants), never tensors ----
# (a, b): "T" is the tensor of the case's dtype; numbers of each kind, so that the result dtype takes every
# promotion path (where(c, 1, 0) is int64, a float16 tensor with a float stays float16, ...).
WHERE_OPERANDS = [("T", 2), (3, "T"), ("T", 2.5), (-1.5, "T"), (True, "T"), ("T", False), ("T", NAN), (-INF, "T"),
                  (1, 0), (0.5, -2), (True, False), (3, 1.5), (False, 7)]
# The condition's base shape, the view of it the op sees, and the tensor operand's shape: the same shape,
# broadcast either way, transposed, strided, 0-d, empty.
WHERE_LAYOUTS = {
    "same": ((3, 4), lambda c: c, (3, 4)),
    "condition_broadcast": ((4,), lambda c: c, (3, 4)),
    "tensor_broadcast": ((2, 1, 4), lambda c: c, (3, 4)),
    "transposed": ((4, 3), lambda c: c.T, (3, 4)),
    "strided": ((3, 8), lambda c: c[:, ::2], (1, 4)),
    "0-d": ((), lambda c: c, ()),
    "0-d_condition": ((), lambda c: c, (2, 3)),
    "empty": ((0, 4), lambda c: c, (4,)),
    "five_dims": ((2, 3, 2, 3, 2), lambda c: c.permute(4, 2, 0, 3, 1), (2, 2, 2, 3, 3)),  # vulkan: the CPU kernel
}


def where_tensor(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "uint8":
        return rng.integers(0, 200, shape).astype(dtype)
    if dtype in INTS:
        return rng.integers(-50, 50, shape).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


@pytest.mark.parametrize("layout", WHERE_LAYOUTS)
@pytest.mark.parametrize("dtype", ALL)
def test_where_with_numbers(device, dtype, layout):
    torch = pytest.importorskip("torch")
    base, view, shape = WHERE_LAYOUTS[layout]
    rng = np.random.default_rng(len(layout) * 7 + ALL.index(dtype))
    c, t = rng.random(base) > 0.5, where_tensor(rng, shape, dtype)
    vc, tc = view(vkt.tensor(c, device=device)), view(torch.tensor(c))
    vt, tt = vkt.tensor(t, device=device), torch.tensor(t)
    vkt.vulkan.reset_fallback_stats()
    for a, b in WHERE_OPERANDS:
        got = vkt.where(vc, vt if a == "T" else a, vt if b == "T" else b)
        want = torch.where(tc, tt if a == "T" else a, tt if b == "T" else b)
        assert tuple(got.shape) == tuple(want.shape), (a, b)
        same(got, want)
    # the shader takes every case but those of adapters without 16-bit storage or float64, and 5 dims
    if device == "vulkan" and dtype not in ("float16", "float64") and layout != "five_dims":
        assert vkt.vulkan.fallback_stats() == {}


def test_where_number_methods_and_errors(device):
    torch = pytest.importorskip("torch")
    x, tx = both(device, torch, [[-1.0, 2.0, -3.0]])
    same(x.where(x > 0, 0.5), tx.where(tx > 0, 0.5))
    same(x.where(x < 0, True), tx.where(tx < 0, True))
    with pytest.raises(RuntimeError, match="boolean"):
        vkt.where(x, 1.0, 0.0)
    with pytest.raises(TypeError, match="condition"):
        vkt.where(True, x, 0.0)
