# The Tensor idioms PyTorch users reach for without thinking: iteration, len, pickling and copies,
# memory formats, new_* constructors, view_as/type_as, the small attribute methods, device strings.
# Each is compared with torch 2.13 (CPU) on the same inputs, on the cpu and vulkan devices.
import copy
import pickle

import numpy as np
import pytest

import vkt
from conftest import DTYPES, assert_bits_equal, raised, to_numpy

torch = pytest.importorskip("torch")


def both(values, dtype="float32", device="cpu"):
    """The same values as a vkt tensor on device and a torch CPU tensor."""
    a = np.asarray(values).astype(dtype)
    return vkt.tensor(a, device=device), torch.from_numpy(a.copy())


LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.transpose(0, 1),
    "sliced": lambda t: t[:, ::2],
    "transposed slice": lambda t: t.transpose(0, 1)[::2],
    "permuted": lambda t: t.reshape(2, 3, 4).permute(2, 0, 1),
    "expanded": lambda t: t[:1].expand(3, 8),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_copies_keep_layout_as_torch(device, layout):
    v, t = both(np.arange(24.0).reshape(3, 8), device=device)
    v, t = LAYOUTS[layout](v), LAYOUTS[layout](t)
    cases = [
        (lambda x: x.clone(), lambda x: x.clone()),
        (lambda x: x.clone(memory_format=vkt.contiguous_format), lambda x: x.clone(memory_format=torch.contiguous_format)),
        (lambda x: x.contiguous(), lambda x: x.contiguous()),
        (lambda x: x.double(), lambda x: x.double()),
        (lambda x: x.to(vkt.int32), lambda x: x.to(torch.int32)),
        (lambda x: x.to(memory_format=vkt.contiguous_format), lambda x: x.to(memory_format=torch.contiguous_format)),
        (lambda x: x.float(memory_format=vkt.preserve_format), lambda x: x.float(memory_format=torch.preserve_format)),
        (lambda x: copy.deepcopy(x), lambda x: copy.deepcopy(x)),
        (lambda x: x.type_as(vkt.zeros(1, dtype=vkt.float16)), lambda x: x.type_as(torch.zeros(1, dtype=torch.float16))),
    ]
    for f, g in cases:
        got, ref = f(v), g(t)
        assert got.stride() == ref.stride()
        assert got.device == v.device
        assert np.array_equal(to_numpy(got), ref.numpy())


def test_channels_last(device):
    v = vkt.arange(120, device=device).reshape(2, 3, 4, 5)
    t = torch.arange(120).reshape(2, 3, 4, 5)
    got, ref = v.contiguous(memory_format=vkt.channels_last), t.contiguous(memory_format=torch.channels_last)
    assert got.stride() == ref.stride()
    assert got.is_contiguous(memory_format=vkt.channels_last) and not got.is_contiguous()
    assert got.contiguous(memory_format=vkt.channels_last) is got
    assert np.array_equal(to_numpy(got), ref.numpy())
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        vkt.zeros(3, 4, device=device).clone(memory_format=vkt.channels_last)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the contiguous operator"):
        v.contiguous(memory_format=vkt.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        v.clone(memory_format="channels_last")


def test_contiguous_returns_self(device):
    v = vkt.zeros(3, 4, device=device)
    assert v.contiguous() is v
    assert v.to(memory_format=vkt.contiguous_format) is v
    assert v.float() is v


@pytest.mark.parametrize("dtype", DTYPES)
def test_pickle_and_copies_keep_device_and_dtype(device, dtype):
    a = (np.arange(12) % 5).reshape(3, 4).astype(dtype)
    v = vkt.tensor(a, device=device)
    for x in (v, v.t(), v[1], v[:0]):
        for got in (pickle.loads(pickle.dumps(x)), copy.copy(x), copy.deepcopy(x)):
            assert got.device == x.device and got.dtype == x.dtype and got.shape == x.shape
            assert_bits_equal(to_numpy(got), to_numpy(x))
    with_objects = pickle.loads(pickle.dumps({"w": v, "dtype": vkt.float16, "dev": v.device, "f": vkt.channels_last}))
    assert with_objects["dtype"] is vkt.float16 and with_objects["dev"] == v.device
    assert with_objects["f"] is vkt.channels_last


def test_deepcopy_is_a_copy(device):
    v = vkt.zeros(3, device=device)
    c = copy.deepcopy(v)
    c[0] = 5
    assert to_numpy(v).tolist() == [0, 0, 0]


@pytest.mark.parametrize("shape", [(3, 2), (1,), (0, 4), (2, 1, 3)])
def test_iteration_and_len(device, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    v = vkt.tensor(a, device=device)
    rows = list(v)
    assert len(v) == shape[0] == len(rows)
    for row, ref in zip(rows, a):
        assert row.shape == ref.shape and np.array_equal(to_numpy(row), ref)
    rows[0].fill_(7) if rows else None  # rows are views, as torch's unbind gives
    if rows:
        assert np.all(to_numpy(v)[0] == 7)


def test_iteration_of_0d_raises_as_torch(device):
    v = vkt.tensor(1.0, device=device)
    for f in (iter, len):
        with pytest.raises(TypeError) as got:
            f(v)
        with pytest.raises(TypeError) as ref:
            f(torch.tensor(1.0))
        assert str(got.value) == str(ref.value)


NEW = [
    ("new_zeros", (2, 3), {}),
    ("new_zeros", ((2, 3),), {"dtype": "int32"}),
    ("new_ones", (4,), {}),
    ("new_ones", ((),), {"dtype": "bool"}),
    ("new_full", ((2,), 5.5), {}),
    ("new_full", ((2, 2), 7), {"dtype": "int64"}),
    ("new_tensor", ([1, 2, 3],), {}),
    ("new_tensor", ([[1.5, 2]],), {"dtype": "float64"}),
]


@pytest.mark.parametrize("name,args,kwargs", NEW)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_new_constructors_as_torch(device, name, args, kwargs, dtype):
    v, t = both([1, 2], dtype=dtype, device=device)
    got = getattr(v, name)(*args, **{k: getattr(vkt, x) for k, x in kwargs.items()})
    ref = getattr(t, name)(*args, **{k: getattr(torch, x) for k, x in kwargs.items()})
    assert got.device == v.device and got.shape == tuple(ref.shape) and str(got.dtype)[4:] == str(ref.dtype)[6:]
    assert np.array_equal(to_numpy(got), ref.numpy())
    assert v.new_empty(2, 3).shape == (2, 3)
    assert v.new_zeros(2, device="cpu").device == vkt.device("cpu")


def test_small_methods_as_torch(device):
    for dtype in ["float32", "float16", "int64", "bool"]:
        v, t = both(np.zeros((2, 3, 4)), dtype=dtype, device=device)
        assert v.is_floating_point() == t.is_floating_point()
        assert v.ndimension() == t.ndimension() and v.nelement() == t.nelement()
        assert v.element_size() == t.element_size()
        assert v.is_cuda is False
    v, t = both(np.arange(12.0), device=device)
    assert v.view_as(vkt.zeros(3, 4)).shape == t.view_as(torch.zeros(3, 4)).shape
    assert v.view_as(vkt.zeros(3, 4)).stride() == (4, 1)
    with pytest.raises(TypeError, match="view_as"):
        v.view_as(np.zeros((3, 4)))
    assert v.expand_as(vkt.zeros(2, 12)).shape == (2, 12)


def test_data_ptr(device):
    v = vkt.zeros(4, 5, device=device)
    assert v[1].data_ptr() - v.data_ptr() == 5 * 4
    assert v.t().data_ptr() == v.data_ptr() and v.clone().data_ptr() != v.data_ptr()
    if device == "cpu":
        assert v.data_ptr() == v.numpy().ctypes.data


def test_device_strings_and_version():
    assert vkt.device("cpu:0") == vkt.device("cpu")
    assert vkt.zeros(2, device="cpu:0").device == vkt.device("cpu")
    assert isinstance(vkt.__version__, str) and vkt.__version__.count(".") == 2


VERSIONS = [  # (name, make(L, w, d) -> tensor): fresh results start at 0, as torch's; each write after counts once
    ("ones", lambda L, w, d: L.ones(3, device=d)),
    ("arange", lambda L, w, d: L.arange(4.0, device=d)),
    ("tensor", lambda L, w, d: L.tensor([1.0, 2.0], device=d)),
    ("randn", lambda L, w, d: L.randn(3, device=d)),
    ("mul_of_a_slice", lambda L, w, d: w[:2] * 1),
    ("exp", lambda L, w, d: w.exp()),
    ("sum", lambda L, w, d: w.sum()),
    ("matmul", lambda L, w, d: w[None] @ w[:, None]),
    ("cat", lambda L, w, d: L.cat([w, w])),
    ("clone", lambda L, w, d: w.clone()),
    ("cumsum", lambda L, w, d: w.cumsum(0)),
    ("sort", lambda L, w, d: w.sort()[0]),
    ("read_back", lambda L, w, d: (lambda y: (y.sum().item(), y)[1])(w * 2)),
    ("add_", lambda L, w, d: (w * 1).add_(1)),
    ("two_writes_through_views", lambda L, w, d: (lambda y: (y[0].mul_(2), y[1:].zero_(), y)[2])(w * 1)),
    ("setitem", lambda L, w, d: (lambda y: (y.__setitem__(0, 3.0), y)[1])(w * 1)),
    ("copy_", lambda L, w, d: (w * 1).copy_(L.zeros(4, device=d))),
    ("view_of_a_written_tensor", lambda L, w, d: (w * 1).add_(1).view(2, 2)),
    ("parameter", lambda L, w, d: L.nn.Parameter(L.ones(2, device=d))),
]


@pytest.mark.parametrize("name,make", VERSIONS, ids=[c[0] for c in VERSIONS])
def test_version_counts_writes_as_torch(device, name, make):
    found = []
    for L in (vkt, torch):
        d = "cpu" if L is torch else device
        w = L.tensor([0.5, 1.5, 2.5, 3.5], device=d, requires_grad=True)
        found.append(make(L, w, d)._version)
    assert found[0] == found[1]


SELECT_UNFOLD_ERRORS = [  # (name, call(L, x)), x of shape (2, 3); each raises torch's error
    ("select_dim", lambda L, x: x.select(5, 0)),
    ("select_index", lambda L, x: x.select(0, 5)),
    ("select_negative_index", lambda L, x: x.select(1, -4)),
    ("select_0d", lambda L, x: x.sum().select(0, 0)),
    ("unfold_dim", lambda L, x: x.unfold(2, 1, 1)),
    ("unfold_size", lambda L, x: x.unfold(1, 4, 1)),
    ("unfold_step", lambda L, x: x.unfold(1, 2, 0)),
    ("unfold_negative_size", lambda L, x: x.unfold(1, -1, 1)),
    ("unfold_0d_size", lambda L, x: x.sum().unfold(0, 2, 1)),
    ("unfold_0d_dim", lambda L, x: x.sum().unfold(1, 1, 1)),
]


@pytest.mark.parametrize("name,call", SELECT_UNFOLD_ERRORS, ids=[c[0] for c in SELECT_UNFOLD_ERRORS])
def test_select_and_unfold_errors_as_torch(device, name, call):
    assert raised(lambda: call(vkt, vkt.zeros(2, 3, device=device))) == raised(lambda: call(torch, torch.zeros(2, 3)))


SIZE_STRIDE = [  # (name, call(L, x)), x of shape (2, 3): the value, or torch's error (a 0-d tensor has no dim 0)
    ("size_0d", lambda L, x: x.sum().size(0)),
    ("size_0d_last", lambda L, x: x.sum().size(-1)),
    ("size_0d_past", lambda L, x: x.sum().size(1)),
    ("stride_0d", lambda L, x: x.sum().stride(0)),
    ("stride_0d_last", lambda L, x: x.sum().stride(-1)),
    ("size_0d_all", lambda L, x: tuple(x.sum().size(dim=None))),
    ("size_last", lambda L, x: (x.size(-1), x.size(dim=-2), x.stride(-2), x.t().stride(0))),
    ("size_past", lambda L, x: x.size(2)),
    ("size_before", lambda L, x: x.size(-3)),
    ("stride_past", lambda L, x: x.stride(5)),
    ("size_float", lambda L, x: x.size(1.0)),
    ("size_bool", lambda L, x: x.size(True)),
    ("stride_str", lambda L, x: x.stride("a")),
    ("size_0d_bool", lambda L, x: x.sum().size(True)),
    ("size_int_tensor", lambda L, x: (x.size(L.tensor(1)), x.size(np.int64(-1)))),
    ("size_float_tensor", lambda L, x: x.size(L.tensor(1.0))),
    ("size_1d_tensor", lambda L, x: x.size(L.tensor([1]))),
]


@pytest.mark.parametrize("name,call", SIZE_STRIDE, ids=[c[0] for c in SIZE_STRIDE])
def test_size_and_stride_of_dim_as_torch(device, name, call):
    def outcome(L, x):
        try:
            return call(L, x)
        except Exception as e:  # noqa: BLE001 -- the exception is the result compared
            return type(e).__name__, str(e)
    assert outcome(vkt, vkt.zeros(2, 3, device=device)) == outcome(torch, torch.zeros(2, 3))


TO_KEYWORDS = [  # (name, call(L, x)): to() with keywords of the wrong type is PyTorch's TypeError listing its forms
    ("memory_format_int", lambda L, x: x.to(memory_format=3)),
    ("dtype_str", lambda L, x: x.to(dtype="float")),
    ("device_float", lambda L, x: x.to(device=3.5)),
    ("copy_str", lambda L, x: x.to(L.float64, copy="yes")),
    ("copy_int", lambda L, x: x.to(L.float64, copy=1)),
    ("non_blocking_none", lambda L, x: x.to(non_blocking=None)),
    ("unknown_keyword", lambda L, x: x.to(L.float64, foo=1)),
    ("nones", lambda L, x: x.to(device=None, dtype=None, memory_format=None).dtype),
    ("device_str", lambda L, x: x.to(device="cpu", copy=True).dtype),
]


@pytest.mark.parametrize("name, call", TO_KEYWORDS, ids=[c[0] for c in TO_KEYWORDS])
def test_to_keywords_as_torch(name, call):
    def outcome(L):
        try:
            return str(call(L, L.ones(2))).replace("torch.", "").replace("vkt.", "")
        except Exception as e:  # noqa: BLE001 -- the exception is the result compared
            return type(e).__name__, str(e).replace("torch.", "").replace("vkt.", "")
    assert outcome(vkt) == outcome(torch)


def test_numpy_names_of_dim_and_keepdim(device):
    """PyTorch takes axis for dim and keepdims for keepdim in every op that has them."""
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    v, t = vkt.tensor(a, device=device), torch.from_numpy(a)
    pairs = [
        (lambda x: x.sum(axis=0), lambda x: x.sum(axis=0)),
        (lambda x: x.mean(axis=1, keepdims=True), lambda x: x.mean(axis=1, keepdims=True)),
        (lambda x: x.amax(axis=-1), lambda x: x.amax(axis=-1)),
        (lambda x: x.softmax(axis=0), lambda x: x.softmax(axis=0)),
        (lambda x: x.argmax(axis=1), lambda x: x.argmax(axis=1)),
    ]
    for f, g in pairs:
        got, ref = f(v), g(t)
        assert got.shape == tuple(ref.shape)
        np.testing.assert_allclose(to_numpy(got), ref.numpy(), rtol=1e-6)
    kwargs = {"axis": 0}
    v.sum(**kwargs)
    assert kwargs == {"axis": 0}
    with pytest.raises(TypeError, match="alias"):
        v.sum(dim=0, axis=1)


def test_where_with_condition_alone_is_nonzero_as_tuple(device):
    a = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    got, ref = vkt.where(vkt.tensor(a, device=device) > 0), torch.where(torch.from_numpy(a) > 0)
    assert isinstance(got, tuple) and len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.device == vkt.device(device) or device == "vulkan"
        assert to_numpy(g).tolist() == r.tolist() and g.dtype == vkt.int64
