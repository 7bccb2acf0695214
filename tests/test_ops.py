# The elementwise op table, driven against NumPy float64 references on the cpu and vulkan devices:
# activations, unary math, binary arithmetic and comparisons, where, type promotion and in-place ops.
# A case is (name, vkt call, NumPy reference, input domain, dtypes); shapes and layouts come from SHAPES.
import math

import numpy as np
import pytest

import vkt
from conftest import assert_close, run_python, to_numpy

erf = np.vectorize(math.erf, otypes=[np.float64])
lgamma = np.vectorize(lambda v: math.inf if v <= 0 and v == math.floor(v) else math.lgamma(v), otypes=[np.float64])


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(np.minimum(x * beta, threshold))) / beta)


# (name, vkt function, reference, domain, dtypes the op takes)
FLOATS = ["float32", "float16", "float64"]
NUMERIC = FLOATS + ["int32", "int64", "uint8"]
UNARY = [
    ("relu", lambda x: x.relu(), lambda x: np.maximum(x, 0), "any", NUMERIC),
    ("gelu", lambda x: vkt.nn.functional.gelu(x), lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), "any", FLOATS),
    ("gelu_tanh", lambda x: vkt.gelu(x, approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), "any", FLOATS),
    ("silu", lambda x: vkt.nn.functional.silu(x), lambda x: x * sigmoid(x), "any", FLOATS),
    ("sigmoid", lambda x: x.sigmoid(), sigmoid, "any", FLOATS),
    ("tanh", lambda x: vkt.tanh(x), np.tanh, "any", FLOATS),
    ("leaky_relu", lambda x: vkt.nn.functional.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x), "any", FLOATS),
    ("elu", lambda x: x.elu(alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)), "any", FLOATS),
    ("softplus", lambda x: vkt.nn.functional.softplus(x, beta=2.0, threshold=5.0),
     lambda x: softplus(x, 2.0, 5.0), "any", FLOATS),
    ("neg", lambda x: -x, np.negative, "any", ["float32", "float16", "float64", "int32", "int64"]),
    ("abs", lambda x: abs(x), np.abs, "any", ["float32", "float16", "float64", "int32", "int64"]),
    ("exp", lambda x: x.exp(), np.exp, "any", FLOATS),
    ("log", lambda x: vkt.log(x), np.log, "positive", FLOATS),
    ("sqrt", lambda x: x.sqrt(), np.sqrt, "positive", FLOATS),
    ("rsqrt", lambda x: x.rsqrt(), lambda x: 1 / np.sqrt(x), "positive", FLOATS),
    ("sin", lambda x: x.sin(), np.sin, "any", FLOATS),
    ("cos", lambda x: vkt.cos(x), np.cos, "any", FLOATS),
    ("square", lambda x: x.square(), np.square, "any", ["float32", "float16", "float64", "int32", "int64"]),
    ("reciprocal", lambda x: x.reciprocal(), lambda x: 1 / x, "nonzero", FLOATS),
    ("clamp", lambda x: x.clamp(-1, 2), lambda x: np.clip(x, -1, 2), "any", ["float32", "float16", "float64", "int32", "int64"]),
    ("clamp_min", lambda x: x.clamp(min=0.5), lambda x: np.maximum(x, 0.5), "any", FLOATS),
    ("clamp_max", lambda x: vkt.clamp(x, max=1), lambda x: np.minimum(x, 1), "any", ["float32", "int32", "int64"]),
    ("sign", lambda x: x.sign(), np.sign, "any", ["float32", "float16", "float64", "int32", "int64"]),
    ("floor", lambda x: x.floor(), np.floor, "any", NUMERIC),
    ("ceil", lambda x: x.ceil(), np.ceil, "any", NUMERIC),
    ("round", lambda x: x.round(), np.round, "halves", NUMERIC),
    ("logical_not", lambda x: x.logical_not(), np.logical_not, "any", NUMERIC + ["bool"]),
    ("lgamma", lambda x: x.lgamma(), lgamma, "any", FLOATS),
    ("sinc", lambda x: vkt.sinc(x), np.sinc, "any", FLOATS),
    ("i0", lambda x: x.i0(), np.i0, "any", FLOATS),
]

# (shape, layout): layout "t" transposes the last two dims of a bigger array, "s" slices with steps.
SHAPES = [((), "c"), ((0,), "c"), ((1,), "c"), ((7,), "c"), ((3, 5), "c"), ((2, 3, 17), "c"), ((64, 129), "c"),
          ((5, 3), "t"), ((4, 6), "s")]
TOL = {"float32": (1e-5, 1e-6), "float16": (2e-3, 2e-3), "float64": (1e-10, 1e-12)}


def make(shape, layout, dtype, domain, seed=0):
    """A NumPy input of the given layout; vkt gets the same view of the same values."""
    rng = np.random.default_rng(seed)
    full = shape[::-1] if layout == "t" else (shape[0] * 2, shape[1] * 3) if layout == "s" else shape
    x = rng.uniform(-3, 3, size=full)
    if domain == "positive":
        x = np.abs(x) + 0.1
    elif domain == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    elif domain == "halves":
        x = np.round(x * 2) / 2
    if dtype == "bool":
        x = x > 0
    elif dtype == "uint8":
        x = np.abs(x * 10)
    elif np.dtype(dtype).kind in "iu":
        x = x * 10
    x = x.astype(dtype)
    if layout == "t":
        return x.T
    return x[::2, 1::3] if layout == "s" else x


def to_vkt(x, device, layout):
    """The same view in vkt: transposes and slices stay views of a larger device tensor."""
    if layout == "t":
        return vkt.tensor(np.ascontiguousarray(x.T), device=device).T
    if layout == "s":
        base = np.ascontiguousarray(x.base if x.base is not None else x)
        return vkt.tensor(base, device=device)[::2, 1::3]
    return vkt.tensor(x, device=device)


def check(got, ref, dtype):
    if np.dtype(ref.dtype).kind == "b" or dtype not in TOL:
        assert np.array_equal(to_numpy(got), ref), f"{to_numpy(got)} != {ref}"
    else:
        rtol, atol = TOL[dtype]
        assert_close(got, ref, rtol=rtol, atol=atol)


unary_cases = [(name, fn, ref, dom, dt, shape, layout)
               for name, fn, ref, dom, dtypes in UNARY for dt in dtypes for shape, layout in SHAPES
               if dt == "float32" or shape in [(7,), (3, 5), (5, 3)]]


@pytest.mark.parametrize("name,fn,ref,domain,dtype,shape,layout", unary_cases,
                         ids=[f"{c[0]}-{c[4]}-{c[5]}{c[6]}" for c in unary_cases])
def test_unary(device, name, fn, ref, domain, dtype, shape, layout):
    x = make(shape, layout, dtype, domain)
    got = fn(to_vkt(x, device, layout))
    want = ref(x.astype(np.float64) if x.dtype != np.bool_ else x)
    if want.dtype.kind != "b":
        want = want.astype(np.float64 if dtype in TOL else dtype)
    assert got.shape == want.shape
    check(got, want, dtype)


# (name, vkt function, reference, dtypes, rhs domain)
BINARY = [
    ("add", lambda a, b: a + b, np.add, NUMERIC, "any"),
    ("add_alpha", lambda a, b: vkt.add(a, b, alpha=2), lambda a, b: a + 2 * b, ["float32", "int32", "int64"], "any"),
    ("sub", lambda a, b: a - b, np.subtract, ["float32", "float16", "float64", "int32", "int64"], "any"),
    ("sub_alpha", lambda a, b: a.sub(b, alpha=0.5), lambda a, b: a - 0.5 * b, FLOATS, "any"),
    ("mul", lambda a, b: a * b, np.multiply, NUMERIC, "any"),
    ("div", lambda a, b: a / b, np.divide, FLOATS, "nonzero"),
    ("div_floor", lambda a, b: a // b, np.floor_divide, ["float32", "float64", "int32", "int64"], "nonzero"),
    ("div_trunc", lambda a, b: a.div(b, rounding_mode="trunc"), lambda a, b: np.trunc(a / b),
     ["float32", "float64"], "nonzero"),
    ("pow", lambda a, b: a ** b, np.power, ["float32", "float16"], "positive"),
    ("maximum", lambda a, b: vkt.maximum(a, b), np.maximum, NUMERIC, "any"),
    ("minimum", lambda a, b: a.minimum(b), np.minimum, NUMERIC, "any"),
    ("remainder", lambda a, b: a % b, np.remainder, ["float32", "float64", "int32", "int64"], "nonzero"),
    ("eq", lambda a, b: a == b, np.equal, NUMERIC + ["bool"], "any"),
    ("ne", lambda a, b: a != b, np.not_equal, NUMERIC + ["bool"], "any"),
    ("lt", lambda a, b: a < b, np.less, NUMERIC, "any"),
    ("le", lambda a, b: a <= b, np.less_equal, NUMERIC, "any"),
    ("gt", lambda a, b: a > b, np.greater, NUMERIC, "any"),
    ("ge", lambda a, b: vkt.ge(a, b), np.greater_equal, NUMERIC, "any"),
    ("logical_and", lambda a, b: a.logical_and(b), np.logical_and, ["float32", "int32", "bool"], "any"),
    ("logical_or", lambda a, b: vkt.logical_or(a, b), np.logical_or, ["float32", "int32", "bool"], "any"),
    ("xlogy", lambda a, b: vkt.xlogy(a, b), lambda a, b: np.where(a == 0, 0, a * np.log(b)), FLOATS, "positive"),
]
PAIRS = [((3, 5), (3, 5)), ((3, 5), (5,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((7,), ()), ((0, 3), (1, 3)),
         ((64, 129), (64, 129))]


def operand(shape, dtype, domain, seed):
    x = make(shape, "c", dtype, domain, seed) if shape else make((1,), "c", dtype, domain, seed).reshape(())
    if domain == "nonzero" and np.dtype(dtype).kind in "iu":
        x = np.where(x == 0, 3, x).astype(dtype)
    return x


binary_cases = [(name, fn, ref, dt, dom, sa, sb) for name, fn, ref, dtypes, dom in BINARY for dt in dtypes
                for sa, sb in PAIRS if dt == "float32" or sa == (3, 5)]


@pytest.mark.parametrize("name,fn,ref,dtype,domain,sa,sb", binary_cases,
                         ids=[f"{c[0]}-{c[3]}-{c[5]}-{c[6]}" for c in binary_cases])
def test_binary(device, name, fn, ref, dtype, domain, sa, sb):
    a = operand(sa, dtype, "positive" if name == "pow" else "any", 1)
    b = operand(sb, dtype, domain, 2)
    if name == "pow":
        b = (b % 3).astype(dtype)
    got = fn(vkt.tensor(a, device=device), vkt.tensor(b, device=device))
    want = ref(a.astype(np.float64), b.astype(np.float64)) if dtype in TOL else ref(a, b)
    if want.dtype.kind != "b" and dtype not in TOL:
        want = want.astype(dtype)
    check(got, want, dtype)


SCALAR_CASES = [
    ("t+s", lambda t: t + 2.5, lambda x: x + 2.5), ("s+t", lambda t: 2.5 + t, lambda x: 2.5 + x),
    ("s-t", lambda t: 1 - t, lambda x: 1 - x), ("s/t", lambda t: 2 / t, lambda x: 2 / x),
    ("t**2", lambda t: t ** 2, lambda x: x ** 2), ("2**t", lambda t: 2 ** t, lambda x: 2.0 ** x),
    ("s%t", lambda t: 5 % t, lambda x: np.remainder(5, x)), ("t<s", lambda t: t < 0.5, lambda x: x < 0.5),
    ("s<t", lambda t: 0.5 < t, lambda x: 0.5 < x), ("t==s", lambda t: t == 1, lambda x: x == 1),
    ("xlogy(s,t)", lambda t: vkt.xlogy(2.5, t.abs()), lambda x: 2.5 * np.log(np.abs(x))),
    ("xlogy(t,s)", lambda t: t.xlogy(3), lambda x: x * np.log(3)),
]


@pytest.mark.parametrize("name,fn,ref", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_scalar_operands(device, name, fn, ref):
    x = operand((4, 5), "float32", "nonzero", 3)
    check(fn(vkt.tensor(x, device=device)), ref(x.astype(np.float64)), "float32")


# (a dtype or a Python number, b dtype or number, result dtype): PyTorch's promotion.
PROMOTION = [
    ("int32", "float32", "float32"), ("uint8", "int32", "int32"), ("bool", "int64", "int64"),
    ("float16", "float32", "float32"), ("int64", "float16", "float16"), ("bool", "uint8", "uint8"),
    ("int32", 2.5, "float32"), ("int32", 5, "int32"), ("float16", 2.0, "float16"), ("bool", 1, "int64"),
    ("uint8", 300, "uint8"), ("float64", 1, "float64"), ("bool", True, "bool"), ("int64", False, "int64"),
]


@pytest.mark.parametrize("a,b,want", PROMOTION, ids=[f"{a}-{b}" for a, b, _ in PROMOTION])
def test_promotion(device, a, b, want):
    x = vkt.ones(3, dtype=getattr(vkt, a), device=device)
    y = vkt.ones(3, dtype=getattr(vkt, b), device=device) if isinstance(b, str) else b
    assert (x + y).dtype == getattr(vkt, want)
    assert (y + x).dtype == getattr(vkt, want)


def test_zero_dim_tensor_promotion(device):
    x = vkt.ones(3, dtype=vkt.float32, device=device)
    assert (x + vkt.tensor(1.0, dtype=vkt.float64, device=device)).dtype == vkt.float32
    i = vkt.ones(3, dtype=vkt.int32, device=device)
    assert (i + vkt.tensor(1.5, dtype=vkt.float64, device=device)).dtype == vkt.float64


def test_true_division_of_integers_is_float(device):
    got = vkt.tensor([1, 2, 3], device=device) / 2
    assert got.dtype == vkt.float32
    check(got, np.array([0.5, 1.0, 1.5]), "float32")


def test_where(device):
    rng = np.random.default_rng(4)
    c, a, b = rng.random((3, 4)) > 0.5, rng.standard_normal((3, 4)), rng.standard_normal((4,))
    got = vkt.where(vkt.tensor(c, device=device), vkt.tensor(a, device=device), vkt.tensor(b, device=device))
    check(got, np.where(c, a, b), "float64")
    got = vkt.where(vkt.tensor(c, device=device), vkt.tensor(a.astype(np.float32), device=device), 0.0)
    assert got.dtype == vkt.float32
    check(got, np.where(c, a, 0.0).astype(np.float32), "float32")


def test_inplace_through_views(device):
    x = np.zeros((4, 6), np.float32)
    t = vkt.tensor(x, device=device)
    v = t[1:, ::2]
    v += 1
    v.mul_(3)
    t[0].relu_()
    x[1:, ::2] += 1
    x[1:, ::2] *= 3
    check(t, x, "float32")
    y = vkt.tensor(np.arange(5, dtype=np.float32), device=device)
    y.clamp_(1, 3)
    check(y, np.clip(np.arange(5), 1, 3), "float32")


def test_inplace_errors(device):
    i = vkt.ones(3, dtype=vkt.int64, device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i += 0.5
    x = vkt.ones(3, device=device)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x += vkt.ones(2, 3, device=device)
    e = vkt.ones(1, device=device).expand(4)
    with pytest.raises(RuntimeError, match="single memory location"):
        e += 1
    assert to_numpy(x).tolist() == [1, 1, 1]


def test_nan_and_inf_propagate(device):
    x = np.array([np.nan, np.inf, -np.inf, 1.0, -1.0], np.float32)
    t = vkt.tensor(x, device=device)
    check(t.relu(), np.array([np.nan, np.inf, 0, 1, 0], np.float32), "float32")
    check(vkt.maximum(t, vkt.zeros(5, device=device)), np.maximum(x, 0), "float32")
    check(t.clamp(-2, 2), np.clip(x, -2, 2), "float32")
    check(t.exp(), np.exp(x.astype(np.float64)), "float32")
    check(t.sigmoid(), sigmoid(x.astype(np.float64)), "float32")


def test_integer_division_by_zero():
    a, b = vkt.tensor([1, 2, 3]), vkt.tensor([1, 0, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // b
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % b


def test_integer_division_by_zero_on_vulkan_gives_zero(dev):
    # A shader cannot raise: integer division and remainder by zero give 0 there (documented).
    got = vkt.tensor([1, 2, 3], device=dev) // vkt.tensor([1, 0, 1], device=dev)
    assert to_numpy(got).tolist() == [1, 0, 3]


def test_bad_inputs(device):
    a, b = vkt.ones(2, 3, device=device), vkt.ones(2, 4, device=device)
    with pytest.raises(RuntimeError, match=r"\[2, 3\] and \[2, 4\]"):
        a + b
    with pytest.raises(RuntimeError, match="Subtraction"):
        vkt.ones(2, dtype=vkt.bool, device=device) - vkt.ones(2, dtype=vkt.bool, device=device)
    with pytest.raises(RuntimeError, match="Negation"):
        -vkt.ones(2, dtype=vkt.bool, device=device)
    with pytest.raises(RuntimeError, match="boolean"):
        vkt.where(a, a, a)
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(ValueError, match="approximate"):
        a.gelu(approximate="fast")
    with pytest.raises(RuntimeError, match="alpha"):
        vkt.ones(2, dtype=vkt.int32, device=device).add(1, alpha=0.5)
    assert to_numpy(a).sum() == 6


def test_mixed_devices(dev):
    with pytest.raises(RuntimeError, match="same device"):
        vkt.ones(3, device=dev) + vkt.ones(3)


def test_scalar_conversions(device):
    t = vkt.tensor([2.5], device=device)
    assert float(t) == 2.5 and int(t) == 2 and bool(t)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(vkt.ones(2, device=device))
    assert [1, 2, 3][vkt.tensor(1, device=device)] == 2


def test_float32_takes_no_fallback(dev):
    vkt.vulkan.reset_fallback_stats()
    x = vkt.randn(33, 17, device=dev)
    for _, fn, _, dom, dtypes in UNARY:
        if "float32" in dtypes:
            fn(x.abs() + 0.1 if dom != "any" else x)
    for _, fn, _, dtypes, _ in BINARY:
        if "float32" in dtypes:
            fn(x, x.abs() + 0.5)
    vkt.where(x > 0, x, x.T.T)
    x.to(vkt.float16).to(vkt.int32).to(vkt.bool)
    assert vkt.vulkan.fallback_stats() == {}


def test_without_push_descriptors(dev):
    # Adapters without VK_KHR_push_descriptor get pooled descriptor sets; force that path here.
    code = ("import numpy as np, vkt; x = vkt.tensor(np.arange(3000, dtype=np.float32), device='vulkan'); "
            "y = x\nfor _ in range(1500): y = (y * 1.0).relu()\n"
            "assert np.array_equal(np.asarray(y), np.arange(3000)); print(vkt.vulkan.validation_messages())")
    r = run_python(code, env={"VKT_NO_PUSH_DESCRIPTORS": "1", "VKT_VALIDATION": "1"})
    assert r.returncode == 0 and r.stdout.strip().endswith("[]"), r.stdout + r.stderr


def test_fallback_is_counted_and_warned(dev, monkeypatch):
    # Ten dims that cannot merge exceed the shader's 4: the op takes the CPU path, counted under its name, warned
    # about once.
    monkeypatch.setenv("VKT_WARN_FALLBACK", "1")
    a = np.linspace(-1, 1, 3**10, dtype=np.float32).reshape((3,) * 10)
    every_other = (slice(None, None, 2),) * 10
    x = vkt.tensor(a, device=dev)[every_other]
    vkt.vulkan.reset_fallback_stats()
    reason = "more than 4 dimensions that cannot be merged"
    with pytest.warns(RuntimeWarning, match="exp ran on the CPU: " + reason):
        got = x.exp()
    check(got, np.exp(a[every_other]), "float32")
    x.exp()
    assert vkt.vulkan.fallback_stats() == {"exp": 2}
    assert list(vkt.vulkan.fallback_stats(by_reason=True)) == [("exp", reason)]
