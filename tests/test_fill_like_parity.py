# PyTorch parity of corners of tensor creation and filling, on both devices, against torch on the CPU:
# a fill value that does not fit the dtype (full, fill_, masked_fill, index_fill, scatter, t[key] = v, pad, ...)
# raises PyTorch's "value cannot be converted to type uint8_t without overflow" and changes nothing, as do the other
# ops' numbers that torch checks (where, clamp, alpha, pow's exponent, ...); Python ints past int64; the legacy
# constructor vkt.Tensor(...); and the *_like functions keep a dense input's strides as PyTorch's do.
import numpy as np
import pytest

import vkt
from conftest import DTYPES, FLOAT_DTYPES

torch = pytest.importorskip("torch")

# Numbers at and past each dtype's edges: ints, floats, inf, NaN, bools.
VALUES = [300, 255, -1, -255, -256, 2**31 - 1, 2**31, -2**31 - 1, 2**63 - 1, -2**63, 70000, 1.5, -0.5, -0.0,
          255.9, 2147483647.5, -2147483648.9, 2.0**63, 9.3e18, 65504.0, 65519.0, 65520.0, 3.4028235e38, 1e40,
          -1e40, float("inf"), float("-inf"), float("nan"), True, False]


def _setitem(t, key, v):
    t[key] = v
    return t


def _mask(lib, d):
    return lib.tensor([True, False], device=d)


# (name, fn(lib, value, dtype, device)): every op that writes a number given as its fill value.
FILLS = [
    ("full", lambda L, v, dt, d: L.full((2,), v, dtype=dt, device=d)),
    ("full_one", lambda L, v, dt, d: L.full((1,), v, dtype=dt, device=d)),  # float16 is unchecked here
    ("full_empty", lambda L, v, dt, d: L.full((0, 3), v, dtype=dt, device=d)),
    ("full_like", lambda L, v, dt, d: L.full_like(L.zeros(2, 3, dtype=dt, device=d).t(), v)),
    ("new_full", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).new_full((3,), v)),
    ("fill_", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).fill_(v)),
    ("fill_0d", lambda L, v, dt, d: L.zeros((), dtype=dt, device=d).fill_(v)),
    ("fill_strided", lambda L, v, dt, d: L.zeros(3, 4, dtype=dt, device=d)[:, ::2].fill_(v)),
    ("masked_fill", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).masked_fill(_mask(L, d), v)),
    ("masked_fill_", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).masked_fill_(_mask(L, d), v)),
    ("masked_fill_0d", lambda L, v, dt, d: L.zeros((), dtype=dt, device=d).masked_fill(L.tensor(True, device=d), v)),
    ("index_fill", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).index_fill(0, L.tensor([1], device=d), v)),
    ("index_fill_", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).index_fill_(0, L.tensor([0], device=d), v)),
    ("scatter", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).scatter(0, L.tensor([1], device=d), v)),
    ("scatter_", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).scatter_(0, L.tensor([0], device=d), v)),
    ("setitem_int", lambda L, v, dt, d: _setitem(L.zeros(2, dtype=dt, device=d), 0, v)),
    ("setitem_slice", lambda L, v, dt, d: _setitem(L.zeros(3, dtype=dt, device=d), slice(None), v)),
    ("setitem_mask", lambda L, v, dt, d: _setitem(L.zeros(2, dtype=dt, device=d), _mask(L, d), v)),
    ("setitem_index", lambda L, v, dt, d: _setitem(L.zeros(2, dtype=dt, device=d), L.tensor([1], device=d), v)),
    ("fill_diagonal_", lambda L, v, dt, d: L.zeros(2, 2, dtype=dt, device=d).fill_diagonal_(v)),
    ("scalar_tensor", lambda L, v, dt, d: L.scalar_tensor(v, dtype=dt, device=d)),
    ("module_masked_fill", lambda L, v, dt, d: L.masked_fill(L.zeros(2, dtype=dt, device=d), _mask(L, d), v)),
    ("module_index_fill",
     lambda L, v, dt, d: L.index_fill(L.zeros(2, dtype=dt, device=d), 0, L.tensor([1], device=d), v)),
]
NOT_BOOL = [  # ops PyTorch has no bool kernel for
    ("pad", lambda L, v, dt, d: L.nn.functional.pad(L.zeros(2, dtype=dt, device=d), (1, 0), value=v)),
]


def outcome(lib, fn, *args):
    """What a call gives: ("ok", dtype name, values) or (exception type, message)."""
    try:
        r = fn(lib, *args)
    except (RuntimeError, TypeError, ValueError, OverflowError) as e:
        return type(e).__name__, str(e)
    values = r.detach().cpu().tolist() if lib is vkt else r.detach().tolist()
    return "ok", str(r.dtype).split(".")[-1], repr(values)  # repr: NaN equals NaN


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_values_against_torch(device, dtype):
    fills = FILLS + (NOT_BOOL if dtype != "bool" else [])
    for name, fn in fills:
        for v in VALUES:
            want = outcome(torch, fn, v, getattr(torch, dtype), "cpu")
            got = outcome(vkt, fn, v, getattr(vkt, dtype), device)
            assert got == want, (name, dtype, v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_data_values_against_torch(device, dtype):
    """tensor(data, dtype=) checks each number as torch does: past an integer dtype's range (NaN and inf too) it
    raises with torch's short type name; floats take anything (1e40 is inf) and bool any number."""
    calls = [lambda L, v, dt, d: L.tensor(v, dtype=dt, device=d),
             lambda L, v, dt, d: L.tensor([[1, v]], dtype=dt, device=d),
             lambda L, v, dt, d: L.as_tensor([v], dtype=dt, device=d)]
    for fn in calls:
        for v in VALUES:
            assert outcome(vkt, fn, v, getattr(vkt, dtype), device) == \
                outcome(torch, fn, v, getattr(torch, dtype), "cpu"), (dtype, v)


def test_overflow_messages(device):
    msg = "value cannot be converted to type {} without overflow"
    for dtype, value, ctype in [("uint8", 300, "uint8_t"), ("int32", 2**31, "int"), ("int64", 1e19, "int64_t"),
                                ("float32", 1e40, "float"), ("float16", 70000.0, "c10::Half"),
                                ("uint8", float("nan"), "uint8_t"), ("int32", float("inf"), "int")]:
        x = vkt.zeros(2, dtype=getattr(vkt, dtype), device=device)
        with pytest.raises(RuntimeError, match="^" + msg.format(ctype).replace("(", r"\(") + "$"):
            x.masked_fill(vkt.ones(2, dtype=vkt.bool, device=device), value)
    # PyTorch's own example, the one that wrapped to 44 before
    with pytest.raises(RuntimeError, match="uint8_t without overflow"):
        vkt.full((2,), 300, dtype=vkt.uint8, device=device)


def test_numpy_numbers_against_torch(device):
    """NumPy's integers are integers (-5 wraps into uint8, and full infers int64), its floats floats."""
    np = pytest.importorskip("numpy")
    for v in [np.int8(-5), np.int64(300), np.int64(-255), np.float32(3e38), np.float64(1e40), np.float16(65504)]:
        for dtype in ["uint8", "float16", "float32", None]:
            for name, fn in [f for f in FILLS if f[0] in ("full", "full_one", "fill_")]:
                def call(L, d, fn=fn):
                    return fn(L, v, dtype and getattr(L, dtype), d)
                assert outcome(vkt, call, device) == outcome(torch, call, "cpu"), (name, repr(v), dtype)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float16", "float32", "bool"])
def test_tensor_values_against_torch(device, dtype):
    """masked_fill and index_fill take a 0-d tensor's value as a number (checked; the tensor is read only where
    its dtype can hold values the target's cannot); fill_ with a tensor casts it unchecked."""
    ops = [
        ("masked_fill", lambda L, x, m, i, v: x.masked_fill(m, v)),
        ("setitem_mask", lambda L, x, m, i, v: _setitem(x, m, v)),
        ("index_fill", lambda L, x, m, i, v: x.index_fill(0, i, v)),
        ("fill_", lambda L, x, m, i, v: x.fill_(v)),
    ]
    for vdtype, numbers in [("int64", [300, -1, -300, 70000, 2**40]), ("float64", [1e40, 70000.0, -0.5, 1.5]),
                            ("float32", [float("nan"), float("inf"), 300.0]), ("float16", [65504.0, float("inf")]),
                            ("int32", [-255, 70000]), ("uint8", [255]), ("bool", [True])]:
        for v in numbers:
            for name, op in ops:
                def fn(L, d):
                    x = L.zeros(3, dtype=getattr(L, dtype), device=d)
                    m, i = L.tensor([True, False, True], device=d), L.tensor([1], device=d)
                    return op(L, x, m, i, L.tensor(v, dtype=getattr(L, vdtype), device=d))
                assert outcome(vkt, fn, device) == outcome(torch, fn, "cpu"), (name, dtype, vdtype, v)


def test_more_dims_value_tensor_errors_first(device):
    x = vkt.zeros(3, dtype=vkt.uint8, device=device)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.index_fill(0, vkt.tensor([0], device=device), vkt.tensor([300], device=device))
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.masked_fill(vkt.ones(3, dtype=vkt.bool, device=device), vkt.tensor([300], device=device))


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32"])
def test_threshold_against_torch(device, dtype):
    """threshold's value is checked in the dtype, its threshold in the compute type (float for float16)."""
    for args in [(0, 300), (300, 0), (0, -1), (0, 70000.0), (70000.0, 0), (0, 1e39), (1e39, 0), (0, float("nan")),
                 (0.5, 1.5)]:
        def fn(L, d):
            return L.nn.functional.threshold(L.ones(3, dtype=getattr(L, dtype), device=d), *args)
        assert outcome(vkt, fn, device) == outcome(torch, fn, "cpu"), args


def test_recorded_paths_against_torch(device):
    """The same checks where autograd records the op (the input requires grad)."""
    for dtype in ["float16", "float32"]:
        for v in [5, 70000.0, 1e40]:
            def x(L, d, n=3):
                return (L.zeros(n, device=d, requires_grad=True) * 1).to(getattr(L, dtype))
            ops = [
                lambda L, d: x(L, d).masked_fill(L.tensor([True, False, True], device=d), v),
                lambda L, d: x(L, d).index_fill(0, L.tensor([1], device=d), v),
                lambda L, d: x(L, d).scatter(0, L.tensor([1], device=d), v),
                lambda L, d: x(L, d).fill_(v),
                lambda L, d: x(L, d, 1).fill_(v),
                lambda L, d: _setitem(x(L, d), slice(None), v),
                lambda L, d: _setitem(x(L, d), L.tensor([True, False, True], device=d), v),
            ]
            for k, fn in enumerate(ops):
                assert outcome(vkt, fn, device) == outcome(torch, fn, "cpu"), (dtype, v, k)


def test_failed_fill_changes_nothing(device):
    x = vkt.arange(6, device=device).to(vkt.uint8).reshape(2, 3)
    before = x.cpu().tolist()
    version = x._version
    mask = vkt.tensor([[True, False, True], [False, True, False]], device=device)
    calls = [
        lambda: x.fill_(300),
        lambda: x.masked_fill_(mask, 256),
        lambda: x.index_fill_(1, vkt.tensor([0, 2], device=device), -256),
        lambda: x.scatter_(1, vkt.tensor([[0], [1]], device=device), 1000),
        lambda: x.__setitem__((0, slice(None)), 300),
        lambda: x.__setitem__(mask, 300.0),
        lambda: x.t().fill_(float("nan")),
        lambda: x[:, ::2].fill_(-1.0),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="uint8_t without overflow"):
            call()
        assert x._version == version
        assert x.cpu().tolist() == before
    x.fill_(-255)  # still usable, and -255..-1 wrap as in PyTorch
    assert x.cpu().tolist() == [[1] * 3] * 2
    assert (x + 1).cpu().tolist() == [[2] * 3] * 2


# Ops that take a number besides a fill value, each checked as torch converts it: where's number into the result type
# (as a fill of one element: float16 takes anything), clamp's bounds into the result type, add's and sub's alpha, pow's
# exponent (not for float and double), lerp's weight and addcmul's and addcdiv's value (float for float16). The
# comparisons take any number unchecked.
SCALAR_OPS = [
    ("where", lambda L, v, dt, d: L.where(_mask(L, d), L.zeros(2, dtype=dt, device=d), v)),
    ("where_left", lambda L, v, dt, d: L.where(_mask(L, d), v, L.zeros(2, dtype=dt, device=d))),
    ("clamp", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).clamp(v)),
    ("clamp_max", lambda L, v, dt, d: L.clamp(L.zeros(2, dtype=dt, device=d), max=v)),
    ("clip_", lambda L, v, dt, d: L.zeros(2, dtype=dt, device=d).clip_(0, v)),
    ("add_alpha", lambda L, v, dt, d: L.add(L.ones(2, dtype=dt, device=d), L.ones(2, dtype=dt, device=d), alpha=v)),
    ("sub_alpha_number", lambda L, v, dt, d: L.ones(2, dtype=dt, device=d).sub(1, alpha=v)),
    ("add_alpha_", lambda L, v, dt, d: L.ones(2, dtype=dt, device=d).add_(L.ones(2, dtype=dt, device=d), alpha=v)),
    ("pow", lambda L, v, dt, d: L.ones(2, dtype=dt, device=d) ** v),
    ("pow_", lambda L, v, dt, d: L.ones(2, dtype=dt, device=d).pow_(v)),
    ("rpow", lambda L, v, dt, d: v ** L.ones(2, dtype=dt, device=d)),
    ("eq", lambda L, v, dt, d: L.ones(2, dtype=dt, device=d) == v),
    ("lt", lambda L, v, dt, d: L.ones(2, dtype=dt, device=d) < v),
    ("fmod", lambda L, v, dt, d: L.fmod(L.ones(2, dtype=dt, device=d), v)),
]
FLOAT_SCALAR_OPS = [  # ops of float tensors only
    ("lerp", lambda L, v, dt, d: L.lerp(L.ones(2, dtype=dt, device=d), L.zeros(2, dtype=dt, device=d), v)),
    ("addcdiv", lambda L, v, dt, d: L.ones(2, dtype=dt, device=d).addcdiv(L.ones(2, dtype=dt, device=d),
                                                                          L.ones(2, dtype=dt, device=d), value=v)),
]
NOT_BOOL_SCALAR_OPS = [
    ("addcmul", lambda L, v, dt, d: L.addcmul(L.ones(2, dtype=dt, device=d), L.ones(2, dtype=dt, device=d),
                                              L.ones(2, dtype=dt, device=d), value=v)),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_operands_against_torch(device, dtype):
    ops = SCALAR_OPS + (FLOAT_SCALAR_OPS if dtype.startswith("float") else []) + \
        (NOT_BOOL_SCALAR_OPS if dtype != "bool" else [])
    for name, fn in ops:
        for v in [v for v in VALUES if not (isinstance(v, float) and v == 0)]:  # -0.0: clamp's sign of zero differs
            if (name == "rpow" and isinstance(v, float) and abs(v) > 1e30 or name == "sub_alpha_number" and v == -2**63
                    or name == "fmod" and device == "vulkan" and dtype not in FLOAT_DTYPES):
                continue  # not vkt's: inf ** 1, torch's int64 wrap of -(-2^63), a shader's ZeroDivisionError
            want = outcome(torch, fn, v, getattr(torch, dtype), "cpu")
            got = outcome(vkt, fn, v, getattr(vkt, dtype), device)
            assert got == want, (name, dtype, v)


def test_addcmul_and_bool_refusals_against_torch(device):
    """A float value of an integer addcmul is truncated; a bool addcmul and a bool clamp have no kernel; integer
    division by zero is torch's bare ZeroDivisionError."""
    calls = [
        lambda L, d: L.addcmul(L.ones(2, dtype=L.int32, device=d), L.ones(2, dtype=L.int32, device=d),
                               L.ones(2, dtype=L.int32, device=d), value=1.5),
        lambda L, d: L.ones(2, dtype=L.bool, device=d).addcmul(L.ones(2, dtype=L.bool, device=d),
                                                              L.ones(2, dtype=L.bool, device=d)),
        lambda L, d: L.ones(2, dtype=L.bool, device=d).clamp(True, False),
        lambda L, d: L.ones(2, dtype=L.bool, device=d).clamp_(1),
        lambda L, d: L.ones(2, dtype=L.uint8, device=d).clamp_(1.5),
    ]
    for k, fn in enumerate(calls):
        assert outcome(vkt, fn, device) == outcome(torch, fn, "cpu"), k
    if device == "cpu":  # a shader cannot raise
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            vkt.ones(2, dtype=vkt.uint8, device=device) // 0


# Python ints past int64: torch.tensor refuses them ("Overflow when unpacking long long") but into a float dtype; an
# op's number past uint64 is Python's OverflowError. [2^63, 2^64) is torch's uint64 number, which vkt has not: the
# fills that torch refuses there are matched, the ops that take it (fill_ of a float, +, ==) are not.
BIG = [2**63, 2**64 - 1, 2**64, -2**63 - 1, -2**64, 10**30]
BIG_CALLS = [
    ("tensor", lambda L, v, d: L.tensor(v, device=d)),
    ("tensor_list", lambda L, v, d: L.tensor([1, v], device=d)),
    ("tensor_float32", lambda L, v, d: L.tensor(v, dtype=L.float32, device=d)),
    ("tensor_list_float64", lambda L, v, d: L.tensor([[v]], dtype=L.float64, device=d)),
    ("tensor_uint8", lambda L, v, d: L.tensor([v], dtype=L.uint8, device=d)),
    ("as_tensor", lambda L, v, d: L.as_tensor([v], device=d)),
    ("full", lambda L, v, d: L.full((2,), v, device=d)),
    ("fill_int64", lambda L, v, d: L.zeros(2, dtype=L.int64, device=d).fill_(v)),
    ("masked_fill_int64", lambda L, v, d: L.zeros(2, dtype=L.int64, device=d).masked_fill(_mask(L, d), v)),
    ("arange", lambda L, v, d: L.arange(v, device=d)),
    ("Tensor", lambda L, v, d: L.Tensor([v])),
]
PAST_UINT64 = [  # torch's OverflowError past uint64
    ("fill_", lambda L, v, d: L.zeros(2, device=d).fill_(v)),
    ("add", lambda L, v, d: L.zeros(2, device=d) + v),
    ("eq", lambda L, v, d: L.zeros(2, dtype=L.int64, device=d) == v),
    ("clamp", lambda L, v, d: L.zeros(2, device=d).clamp(v)),
    ("where", lambda L, v, d: L.where(_mask(L, d), L.zeros(2, device=d), v)),
    ("scalar_tensor", lambda L, v, d: L.scalar_tensor(v, device=d)),
]


def test_big_ints_against_torch(device):
    for v in BIG:
        calls = BIG_CALLS + (PAST_UINT64 if not 2**63 <= v < 2**64 else [])
        for name, fn in calls:
            assert outcome(vkt, fn, v, device) == outcome(torch, fn, v, "cpu"), (name, v)


# ---- vkt.Tensor(...): torch.Tensor's legacy constructor ----

CONSTRUCTOR = [
    ("empty", lambda L: L.Tensor()),
    ("sizes", lambda L: L.Tensor(2, 3).zero_()),
    ("size", lambda L: L.Tensor(0)),
    ("size_kw", lambda L: L.Tensor(size=[2, 1]).zero_()),
    ("numpy_size", lambda L: L.Tensor(np.int64(3)).zero_()),
    ("list", lambda L: L.Tensor([1, 2])),
    ("nested", lambda L: L.Tensor([[1, 2], [3, 4]])),
    ("tuple_is_data", lambda L: L.Tensor((2, 3))),
    ("bools", lambda L: L.Tensor([True, False])),
    ("empty_list", lambda L: L.Tensor([[]])),
    ("range", lambda L: L.Tensor(range(3))),
    ("numpy", lambda L: L.Tensor(np.array([1, 2], dtype=np.int64))),
    ("numpy_float64", lambda L: L.Tensor(np.array([1.5]))),
    ("data_kw", lambda L: L.Tensor(data=[1.5])),
    ("device_cpu", lambda L: L.Tensor([1], device="cpu")),
    ("size_device", lambda L: L.Tensor(2, device=None).zero_()),
    ("int_tensor", lambda L: L.Tensor(L.tensor([1, 2]))),
    ("float64_tensor", lambda L: L.Tensor(L.tensor([1.0, 2.0], dtype=L.float64))),
    ("tensor_0d", lambda L: L.Tensor(L.tensor(3))),
    ("float", lambda L: L.Tensor(2.5)),
    ("none", lambda L: L.Tensor(None)),
    ("true", lambda L: L.Tensor(True)),
    ("str", lambda L: L.Tensor("a")),
    ("dict", lambda L: L.Tensor({1: 2})),
    ("negative", lambda L: L.Tensor(2, -3)),
    ("size_list", lambda L: L.Tensor(2, [3])),
    ("size_float", lambda L: L.Tensor(2, 3.0)),
    ("tensor_device", lambda L: L.Tensor(L.tensor([1.0]), device="cpu")),
    ("ragged", lambda L: L.Tensor([[1], [2, 3]])),
]
NO_FORM = [  # torch lists its forms after this line
    ("dtype", lambda L: L.Tensor([1], dtype=L.int64)),
    ("requires_grad", lambda L: L.Tensor([1.0], requires_grad=True)),
    ("two_lists", lambda L: L.Tensor([1, 2], 3)),
    ("floats", lambda L: L.Tensor(1.0, 2.0)),
    ("size_and_data", lambda L: L.Tensor(size=(2,), data=[1])),
    ("size_int", lambda L: L.Tensor(size=2)),
]


def test_constructor_against_torch(device):
    def call(fn):
        return lambda L, d: fn(L)

    for name, fn in CONSTRUCTOR:
        assert outcome(vkt, call(fn), device) == outcome(torch, call(fn), "cpu"), name
    for name, fn in NO_FORM:
        want = "new() received an invalid combination of arguments - got "
        assert outcome(torch, call(fn), "cpu")[1].startswith(want), name
        got = outcome(vkt, call(fn), device)
        assert got[0] == "TypeError" and got[1].startswith(want), (name, got)


def test_constructor_default_dtype_alias_and_subclass(device):
    x = vkt.arange(6.0, device=device).reshape(2, 3).t().requires_grad_()
    a = vkt.Tensor(x)  # an alias: x's storage, dtype, device and strides, recorded as torch's AliasBackward0
    assert a.stride() == x.stride() and a.device == x.device and a.grad_fn.name() == "AliasBackward0"
    a.sum().backward()
    assert x.grad.cpu().tolist() == [[1.0, 1.0]] * 3
    with vkt.no_grad():
        x.add_(1)
    assert a.cpu().tolist() == x.cpu().tolist()
    with pytest.raises(RuntimeError, match="^legacy constructor expects device type: cpu but device type: vulkan"):
        vkt.Tensor([1.0], device="vulkan")
    previous = vkt.get_default_dtype()
    vkt.set_default_dtype(vkt.float64)
    try:
        assert vkt.Tensor([1]).dtype == vkt.float64 and vkt.Tensor(2).dtype == vkt.float64
    finally:
        vkt.set_default_dtype(previous)

    class Sub(vkt.Tensor):
        pass

    for t in (Sub([1, 2]), Sub(2, 3), Sub(), Sub(x)):
        assert type(t) is Sub and isinstance(t, vkt.Tensor)
    assert isinstance(vkt.tensor([1.0]), vkt.Tensor) and type(vkt.tensor([1.0])) is vkt.Tensor
    assert type(vkt.nn.Parameter(vkt.zeros(2))) is vkt.nn.Parameter


# ---- *_like and memory_format ----


def layouts(lib):
    """Inputs of every layout kind: contiguous, permuted (dense), sliced with gaps, expanded, overlapping,
    dims of one element with odd strides, 0-d, empty, channels_last."""
    a = lib.arange(24.0).reshape(2, 3, 4)
    m = lib.arange(12.0).reshape(3, 4)
    return {
        "contiguous": a,
        "transpose": m.t(),
        "permute": a.permute(2, 0, 1),
        "permute2": a.permute(1, 2, 0),
        "step": m[:, ::2],
        "narrow": m[:, 1:3],
        "transpose_step": m[:, ::2].t(),
        "permute_step": a[:, :, ::2].permute(2, 0, 1),
        "expand": lib.arange(3.0).reshape(3, 1).expand(3, 4),
        "expand_t": lib.arange(3.0).reshape(3, 1).expand(3, 4).t(),
        "expand_permute": lib.arange(12.0).reshape(3, 4).t().unsqueeze(0).expand(2, 4, 3),
        "unsqueeze_t": m.t().unsqueeze(1),
        "size1": lib.arange(4.0).reshape(4, 1).t(),
        "size1_rows": m[:1].t(),
        "zero_d": lib.tensor(3.0),
        "empty": lib.zeros(0, 3).t(),
        "empty_permute": lib.zeros(2, 0, 3).permute(2, 0, 1),
        "overlap": m.as_strided((3, 3), (1, 1)),
        "gap_permuted": m.as_strided((2, 2), (1, 4)),
        "dense_permuted": m.as_strided((2, 3), (1, 2)),
        "channels_last": lib.arange(24.0).reshape(1, 2, 3, 4).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
        "diagonal": m[:3, :3].diagonal(),
    }


LIKES = [
    ("empty_like", ()), ("zeros_like", ()), ("ones_like", ()), ("full_like", (7,)), ("rand_like", ()),
    ("randn_like", ()), ("randint_like", (7,)), ("randint_like", (2, 9)),
]


def _like_check(name, args, got, want):
    assert got.shape == tuple(want.shape) and got.stride() == want.stride(), (name, got.stride(), want.stride())
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert not got.requires_grad
    if name in ("zeros_like", "ones_like", "full_like"):
        assert got.cpu().tolist() == want.tolist()
    elif name == "rand_like":
        assert bool(((got >= 0) & (got < 1)).all())
    elif name == "randint_like":
        lo, hi = (0, args[0]) if len(args) == 1 else args
        assert bool(((got >= lo) & (got < hi)).all())


@pytest.mark.parametrize("case", list(layouts(torch)))
def test_like_strides_against_torch(device, case):
    x, t = layouts(vkt)[case].to(device), layouts(torch)[case]
    for name, args in LIKES:
        for kw in [{}, {"dtype": "float64"}, {"memory_format": "preserve_format"},
                   {"memory_format": "contiguous_format"}, {"device": "cpu"}]:
            def of(lib):
                return {k: v if k == "device" else getattr(lib, v) for k, v in kw.items()}
            want = getattr(torch, name)(t, *args, **of(torch))
            got = getattr(vkt, name)(x, *args, **of(vkt))
            _like_check(name, args, got, want)
            assert got.device.type == (kw.get("device") or device)


def test_like_channels_last(device):
    t = torch.zeros(2, 3, 4, 5).permute(0, 2, 3, 1)
    x = vkt.zeros(2, 3, 4, 5, device=device).permute(0, 2, 3, 1)
    for name, args in LIKES:
        got = getattr(vkt, name)(x, *args, memory_format=vkt.channels_last)
        _like_check(name, args, got, getattr(torch, name)(t, *args, memory_format=torch.channels_last))
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        vkt.zeros_like(vkt.zeros(3, 4, device=device), memory_format=vkt.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        vkt.empty_like(vkt.zeros(3, 4, device=device), memory_format=vkt.channels_last_3d)
    with pytest.raises(TypeError, match="memory_format"):
        vkt.ones_like(x, memory_format=1)
    with pytest.raises(TypeError):
        vkt.zeros(2, 3, memory_format=vkt.contiguous_format)  # as PyTorch's zeros, no memory_format


def test_like_requires_grad(device):
    x = vkt.zeros(3, 4, device=device, requires_grad=True).t()
    for name, args in LIKES:
        assert not getattr(vkt, name)(x, *args).requires_grad
        if name not in ("randint_like",):
            y = getattr(vkt, name)(x, *args, requires_grad=True)
            assert y.requires_grad and y.is_leaf and y.stride() == (1, 4)


def test_like_writes_land_in_their_layout(device):
    """A permuted zeros_like is filled in place (the span it covers), and ops on it read it as its strides say."""
    x = vkt.arange(60.0, device=device).reshape(3, 4, 5).permute(2, 0, 1)
    t = torch.arange(60.0).reshape(3, 4, 5).permute(2, 0, 1)
    y = vkt.ones_like(x)
    assert y.stride() == x.stride()
    assert (y + x).cpu().tolist() == (t + 1).tolist()
    z = vkt.full_like(x, 3, dtype=vkt.uint8)
    assert z.stride() == x.stride() and z.sum().item() == 180
    g = vkt.full_like(x[::2], 2.5)  # gaps: dense, in x's order of dims
    assert g.stride() == torch.full_like(t[::2], 2.5).stride() == (1, 12, 3)
    assert (g * x[::2]).cpu().tolist() == (t[::2] * 2.5).tolist()


def test_clone_and_to_preserve_like_torch(device):
    def significant(t):  # a fused cast on the device lays dims of one element out row-major
        return [s for n, s in zip(t.shape, t.stride()) if n > 1]

    for case, t in layouts(torch).items():
        x = layouts(vkt)[case].to(device)
        assert x.clone().stride() == t.clone().stride(), case
        assert significant(x.to(vkt.float64)) == significant(t.to(torch.float64)), case
        assert x.clone().cpu().tolist() == t.clone().tolist(), case
