# The elementwise family against torch CPU where NumPy's semantics differ from PyTorch's: special
# values (NaN, inf, signed zeros) of pow, remainder, tanh and sign, integer powers, result dtypes,
# NumPy arrays and Python numbers as operands. Every case runs on the cpu device and on vulkan.
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
        with pytest.raises(TypeError):
            getattr(vkt, name)(2, 3)


def test_fixes_take_no_fallback(dev):
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor([0.0, NAN, 3.0, -2.5], device=dev)
    vkt.pow(x, x), x % x, x.tanh(), x.sign(), x + np.ones(4, np.float32)
    assert vkt.vulkan.fallback_stats() == {}
