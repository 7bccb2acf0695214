# The scan family (cumsum, cumprod, cummax, cummin) against torch on the CPU, driven by one table of ops
# over shapes, layouts, dims and dtypes. The data are small integers (as floats for the float dtypes), so
# every sum and product is exact in any order and the results must equal torch's bit for bit; the long rows
# take the shader's block scans (two and three levels). Also: result dtypes, dtype=, in-place forms, errors.
import numpy as np
import pytest

import vkt
from conftest import DTYPES, to_numpy

torch = pytest.importorskip("torch")

# (name, vkt call(x, dim), torch call(t, dim), gives (values, indices))
OPS = [
    ("cumsum", lambda x, d: x.cumsum(d), lambda t, d: torch.cumsum(t, d), False),
    ("cumprod", lambda x, d: vkt.cumprod(x, dim=d), lambda t, d: torch.cumprod(t, d), False),
    ("cummax", lambda x, d: x.cummax(d), lambda t, d: torch.cummax(t, d), True),
    ("cummin", lambda x, d: vkt.cummin(x, d), lambda t, d: torch.cummin(t, d), True),
]
OP = {op[0]: op for op in OPS}

SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 17), (64, 129), (5000,), (3, 4100), (0, 3)]


def data(shape, dtype, op, seed=0):
    """Small integers with many ties; for cumprod mostly ones, so products stay in range."""
    rng = np.random.default_rng(seed)
    if op == "cumprod":
        a = rng.choice([1, 1, 1, 1, -1, 2] if dtype not in ("uint8", "bool") else [1, 1, 1, 2, 0], size=shape)
    else:
        a = rng.integers(-3, 4, size=shape) if dtype not in ("uint8", "bool") else rng.integers(0, 5, size=shape)
    if dtype == "bool":
        return (a > 1).astype(np.bool_)
    return a.astype(dtype)


def layouts(a):
    """(name, NumPy array, the same values as a vkt view of that layout on a device)."""
    yield "contiguous", a, lambda dev: vkt.tensor(a, device=dev)
    if a.ndim >= 2:
        yield "transposed", a, lambda dev: vkt.tensor(np.ascontiguousarray(a.swapaxes(0, -1)), device=dev).transpose(0, -1)
    if a.ndim >= 1 and a.shape[-1] > 1:
        wide = np.concatenate([a, a], axis=-1)
        yield "sliced", wide[..., ::2], lambda dev: vkt.tensor(wide, device=dev)[..., ::2]


def check(op, got, ref):
    if OP[op][3]:
        check_values(op + " values", got.values, ref.values)
        check_values(op + " indices", got.indices, ref.indices)
    else:
        check_values(op, got, ref)


def check_values(op, got, ref):
    r = ref.numpy()
    g = to_numpy(got)
    assert g.dtype == r.dtype, f"{op}: dtype {g.dtype} != {r.dtype}"
    assert g.shape == r.shape, f"{op}: shape {g.shape} != {r.shape}"
    assert np.array_equal(g, r, equal_nan=g.dtype.kind == "f"), f"{op}: values differ"


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", list(OP))
def test_float32(op, shape, device):
    vkt.vulkan.reset_fallback_stats()
    a = data(shape, "float32", op)
    for _, arr, make in layouts(a):
        x = make(device)
        for d in range(-max(a.ndim, 1), max(a.ndim, 1)):
            check(op, OP[op][1](x, d), OP[op][2](torch.tensor(arr), d))
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(OP))
def test_dtypes(op, dtype, device):
    vkt.vulkan.reset_fallback_stats()
    for shape in [(2, 3, 17), (3, 2100), (40,)]:
        a = data(shape, dtype, op, seed=1)
        for _, arr, make in layouts(a):
            check(op, OP[op][1](make(device), -1), OP[op][2](torch.tensor(arr), -1))
            check(op, OP[op][1](make(device), 0), OP[op][2](torch.tensor(arr), 0))
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("op", list(OP))
def test_three_levels(op, device):
    # more than 2048 blocks of 2048 elements: the blocks' totals are scanned in blocks themselves
    a = data((2048 * 2049 + 3,), "float32" if op != "cumprod" else "int64", op, seed=2)
    check(op, OP[op][1](vkt.tensor(a, device=device), 0), OP[op][2](torch.tensor(a), 0))


@pytest.mark.parametrize("n", [2047, 2048, 2049, 3 * 2048 + 1])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_block_edges(n, dtype, device):
    # float32 sums and products take 2048-element blocks through shared memory and subgroup scans: rows
    # around a block's length, strided and transposed rows
    vkt.vulkan.reset_fallback_stats()
    for op in ("cumsum", "cumprod"):
        a = data((2, n), dtype, op, seed=n)
        for _, arr, make in layouts(a):
            check(op, OP[op][1](make(device), 1), OP[op][2](torch.tensor(arr), 1))
    assert vkt.vulkan.fallback_stats() == {}


def test_float_rounding(device):
    # random floats: not exact, within the rounding of a float32 sum
    a = np.random.default_rng(3).random((3, 10000)).astype(np.float32)
    ref = np.cumsum(a.astype(np.float64), 1)
    got = to_numpy(vkt.tensor(a, device=device).cumsum(1))
    assert np.abs(got - ref).max() <= ref.max() * 2.0**-24 * 16


@pytest.mark.parametrize("n", [5, 100, 5000])
def test_nan_and_inf(n, device):
    a = np.zeros((4, n), np.float32)
    a[0, n // 2] = np.nan
    a[1, 1] = np.inf
    a[2, [0, n - 1]] = np.nan
    a[3, [1, n // 2]] = [-np.inf, np.inf]
    x, t = vkt.tensor(a, device=device), torch.tensor(a)
    for op in OP:
        check(op, OP[op][1](x, 1), OP[op][2](t, 1))


def test_dtype_argument_and_in_place(device):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = vkt.tensor(a, device=device)
    t = torch.tensor(a)
    check("cumsum", x.cumsum(1, dtype=vkt.float64), t.cumsum(1, dtype=torch.float64))
    check("cumprod", vkt.cumprod(x, 0, dtype=vkt.float16), torch.cumprod(t, 0, dtype=torch.float16))
    check("cumsum", vkt.tensor(a / 3, device=device).cumsum(1, dtype=vkt.int32), torch.tensor(a / 3).cumsum(1, dtype=torch.int32))
    y = x.t()
    assert y.cumsum_(1) is y
    check("cumsum", x, t.t().cumsum_(1).t())
    z = vkt.tensor(a, device=device)
    z[1:].cumprod_(dim=1, dtype=vkt.int32)
    tz = torch.tensor(a)
    tz[1:].cumprod_(dim=1, dtype=torch.int32)
    check("cumprod", z, tz)


@pytest.mark.parametrize("call,error,match", [
    (lambda x: x.cumsum(2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda x: vkt.cummax(x, -3), IndexError, "Dimension out of range"),
    (lambda x: x.cumsum(), TypeError, 'cumsum\\(\\) missing 1 required positional arguments: "dim"'),
    (lambda x: vkt.cummin(x, 0.5), TypeError, r"cummin\(\): argument 'dim' \(position 2\) must be int, not float"),
    (lambda x: x.cumsum_(0, dtype=vkt.float64), RuntimeError,
     "Bad in-place call: input tensor dtype float and output tensor dtype double should match"),
    (lambda x: vkt.cumsum([1, 2], 0), TypeError, "must be Tensor"),
    (lambda x: x.cummax(0, dtype=vkt.float32), TypeError, "argument"),
])
def test_bad_arguments(call, error, match, device):
    with pytest.raises(error, match=match):
        call(vkt.ones(2, 3, device=device))
