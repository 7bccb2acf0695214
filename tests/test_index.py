# Advanced indexing against torch on cpu and vulkan: NumPy arrays, lists, bool masks, several index tensors
# broadcast together, mixed with slices, ints, None and Ellipsis (with PyTorch's rule for where the
# indexed dims go), reads and writes (t[key] = v, index_put_ with accumulate), every dtype, int32 and
# int64 indices. Elements move without arithmetic (except accumulate), so results must match exactly.
import numpy as np
import pytest

import vkt
from conftest import DTYPES, assert_bits_equal, raised, run_python, vkt_dtype

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
XN = RNG.standard_normal((4, 5, 6)).astype(np.float32)

class T:
    """An int64 tensor index, built on the test's device (or in torch)."""

    def __init__(self, value):
        self.value = value


KEYS = [
    ("ndarray", np.array([0, 2])),
    ("list_negative", [0, -1]),
    ("rows_cols", ([0, 1], [1, 2])),
    ("slice_then_two", (slice(None), [0, 1], [1, 2])),
    ("separated_by_slice", ([0, 1], slice(None), [1, 2])),
    ("ellipsis", (Ellipsis, [0, 3])),
    ("none_and_slice", (None, [1, 1], None, slice(1, 3))),
    ("int_and_broadcast", (1, [0, 2], [[1], [2]])),
    ("mask_full", XN > 0),
    ("mask_2d", (XN[:, :, 0] > 0,)),
    ("mask_after_slice", (slice(None), XN[0] > 0)),
    ("true", (True,)),
    ("false", (False,)),
    ("index_2d", ([[0, 1], [2, 3]],)),
    ("empty_list", ([],)),
    ("ndarray_mask_and_int", (np.array([True, False, True, True]), 1)),
    ("int_between", ([0, 1], 1, [1, 2])),
    ("step_slice", (slice(None, None, 2), [3, -5])),
    ("tensor_0d", T(2)),
    ("tensors_and_int", (0, T([1, 2]), T(1))),
    ("numpy_int_scalars", (np.int64(1), [0, 2], np.int32(-1))),
]


def make_key(key, device, torch_side):
    def one(k):
        if isinstance(k, T):
            return torch.tensor(k.value) if torch_side else vkt.tensor(k.value, device=device)
        return k
    return tuple(one(k) for k in key) if isinstance(key, tuple) else one(key)


@pytest.mark.parametrize("name,key", KEYS, ids=[k[0] for k in KEYS])
def test_getitem_setitem(device, name, key):
    vkt.vulkan.reset_fallback_stats()
    ref = torch.tensor(XN)[make_key(key, device, True)]
    x = vkt.tensor(XN, device=device)
    got = x[make_key(key, device, False)]
    assert_bits_equal(np.asarray(got), ref.numpy())
    values = np.arange(ref.numel(), dtype=np.float32).reshape(tuple(ref.shape))
    if name == "none_and_slice":  # a repeated index: which write lands is undefined (PyTorch's docs), so one value
        values[:] = 7.0
    t = torch.tensor(XN)
    t[make_key(key, device, True)] = torch.tensor(values)
    x[make_key(key, device, False)] = vkt.tensor(values, device=device)
    assert_bits_equal(np.asarray(x), t.numpy())
    x[make_key(key, device, False)] = 2.5  # a number broadcasts
    t[make_key(key, device, True)] = 2.5
    assert_bits_equal(np.asarray(x), t.numpy())
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", ["int32", "int64"])
def test_dtypes_noncontiguous(device, dtype, itype):
    base = (np.arange(7 * 9 * 2) % 5).reshape(7, 9, 2).astype(dtype)
    x = vkt.tensor(base, device=device).transpose(0, 1)[::2]  # non-contiguous: shape (5, 7, 2)
    ref = torch.tensor(base).transpose(0, 1)[::2]
    rows, cols = [[4, -1], [0, 2]], [6, -7]
    i = vkt.tensor(rows, dtype=vkt_dtype(itype), device=device)
    j = vkt.tensor(cols, dtype=vkt_dtype(itype), device=device)
    ti, tj = torch.tensor(rows), torch.tensor(cols)
    assert_bits_equal(np.asarray(x[i, j]), ref[ti, tj].numpy())
    assert_bits_equal(np.asarray(x[:, j]), ref[:, tj].numpy())
    assert_bits_equal(np.asarray(x[i, :, 1]), ref[ti, :, 1].numpy())
    v = np.ones((2, 2, 2), dtype)
    x[i, j] = vkt.tensor(v, device=device)  # writes through the view into base's storage
    ref[ti, tj] = torch.tensor(v)
    assert_bits_equal(np.asarray(x), ref.numpy())


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int64", "float16", "uint8", "bool"])
def test_index_put_accumulate(device, dtype):
    vkt.vulkan.reset_fallback_stats()
    idx = [0, 1, 1, 4, 4, 4, -1, 2]
    x = vkt.zeros(5, 3, dtype=vkt_dtype(dtype), device=device)
    t = torch.zeros(5, 3, dtype=getattr(torch, dtype))
    vals = np.arange(24).reshape(8, 3).astype(dtype)
    assert x.index_put_((vkt.tensor(idx, device=device),), vkt.tensor(vals, device=device), accumulate=True) is x
    t.index_put_((torch.tensor(idx),), torch.tensor(vals), accumulate=True)
    assert_bits_equal(np.asarray(x), t.numpy())
    y = vkt.index_put(x, (None, vkt.tensor([2], device=device)), vkt.tensor(7, dtype=vkt_dtype(dtype), device=device))
    ref = t.index_put((torch.arange(5), torch.tensor([2])), torch.tensor(7, dtype=t.dtype))
    assert_bits_equal(np.asarray(y), ref.numpy())
    assert vkt.vulkan.fallback_stats() == {}  # 64-bit elements without 64-bit atomics: the sorted scatter


@pytest.mark.parametrize("dtype,n", [("float32", 100_000), ("float16", 2100), ("uint8", 1750), ("int32", 100_000),
                                     ("float64", 100_000), ("int64", 100_000)])
def test_big_accumulate_repeats(device, dtype, n):
    """Many invocations add into a few neighbouring elements at once (for 8- and 16-bit dtypes, lanes of the
    same words): the compare-and-swap loops must lose none."""
    idx = np.arange(n) % 7
    x = vkt.zeros(7, dtype=vkt_dtype(dtype), device=device)
    x.index_put_((vkt.tensor(idx, device=device),), vkt.ones(n, dtype=vkt_dtype(dtype), device=device), accumulate=True)
    assert x.tolist() == np.bincount(idx).astype(dtype).tolist()


def test_error_leaves_device_usable(device):
    x = vkt.tensor([1.0, 2.0, 3.0], device=device)
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        x[vkt.tensor([0, 7], device=device)]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        x[[1, -4]] = 0.0
    assert x.tolist() == [1.0, 2.0, 3.0]
    assert (x[[2, -3]] * 2).tolist() == [6.0, 2.0]


# (name, call on a module (vkt or torch) with x, index and src); index values repeat and include 0.
SCATTERS = [
    ("scatter", lambda m, x, i, s: x.scatter(0, i, s)),
    ("scatter_value", lambda m, x, i, s: x.scatter(1, i, 2.0)),
    ("scatter_", lambda m, x, i, s: x.clone().scatter_(1, i, s)),
    ("scatter_add", lambda m, x, i, s: m.scatter_add(x, 0, i, s)),
    ("scatter_add_", lambda m, x, i, s: x.clone().scatter_add_(1, i, s)),
    ("index_copy", lambda m, x, i, s: x.index_copy(0, i[0], s[:3].contiguous())),
    ("index_add", lambda m, x, i, s: m.index_add(x, 1, i[0], s[:, :3].contiguous())),
    ("index_add_", lambda m, x, i, s: x.clone().index_add_(0, i[0], s[:3])),
    ("index_add_alpha", lambda m, x, i, s: m.index_add(x, 0, i[0], s[:3], alpha=3)),
]


@pytest.mark.parametrize("name,call", SCATTERS, ids=[c[0] for c in SCATTERS])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int64"])
def test_scatter_family(device, name, call, dtype):
    vkt.vulkan.reset_fallback_stats()
    x = (np.arange(20) % 7).reshape(4, 5).astype(dtype)
    i = np.array([[0, 3, 3], [1, 0, 2], [3, 3, 3]])
    s = np.arange(20, 40).reshape(4, 5).astype(dtype)
    ref = call(torch, torch.tensor(x), torch.tensor(i), torch.tensor(s))
    got = call(vkt, vkt.tensor(x, device=device), vkt.tensor(i, device=device), vkt.tensor(s, device=device))
    if name.startswith("index_copy") or (name.startswith("scatter") and "add" not in name):
        return  # repeated indices: PyTorch leaves which write wins unspecified; the shapes and dtype still match
    assert_bits_equal(np.asarray(got), ref.numpy())
    if dtype in ("float32", "int32"):
        assert vkt.vulkan.fallback_stats() == {}


# index_copy_ and index_add_ refusing bad arguments as torch does, each check in its order: (name, call on a module m
# with x [5, 3] float32, an int64 index maker I(values, dtype=None) and a maker T(*shape, dtype=None) of ones)
INDEX_WRITE_ERRORS = [
    ("copy_dim", lambda m, x, I, T: x.index_copy_(2, I([0, 2]), T(2, 3))),
    ("copy_negative_dim", lambda m, x, I, T: x.index_copy_(-3, I([0, 2]), T(2, 3))),
    ("copy_index_2d", lambda m, x, I, T: x.index_copy_(0, I([[0, 2]]), T(2, 3))),
    ("copy_index_float", lambda m, x, I, T: x.index_copy_(0, I([0, 2], m.float32), T(2, 3))),
    ("copy_index_int32", lambda m, x, I, T: x.index_copy_(0, I([0, 2], m.int32), T(2, 3))),
    ("copy_index_bool", lambda m, x, I, T: x.index_copy_(0, I([True, False], m.bool), T(2, 3))),
    ("copy_index_out_of_range", lambda m, x, I, T: x.index_copy_(0, I([0, 5]), T(2, 3))),
    ("copy_index_negative", lambda m, x, I, T: x.index_copy_(0, I([-1]), T(1, 3))),
    ("copy_source_rank", lambda m, x, I, T: x.index_copy_(0, I([0, 2]), T(6))),
    ("copy_source_slices", lambda m, x, I, T: x.index_copy_(0, I([0, 2]), T(2, 4))),
    ("copy_source_count", lambda m, x, I, T: x.index_copy_(1, I([0, 2]), T(5, 3))),
    ("copy_source_dtype", lambda m, x, I, T: x.index_copy_(0, I([0, 2]), T(2, 3, dtype=m.float64))),
    ("copy_scalar_source", lambda m, x, I, T: x.index_copy_(0, I([0, 1]), T())),
    ("copy_scalar_source_slices", lambda m, x, I, T: x.index_copy_(0, I([1]), T())),
    ("copy_scalar_self_slices", lambda m, x, I, T: T().index_copy_(0, I([0]), T(1, 1))),
    ("copy_scalar_self_index", lambda m, x, I, T: T().index_copy_(0, I([0, 1]), T(2))),
    ("copy_out_of_place", lambda m, x, I, T: m.index_copy(x, 0, I([5]), T(1, 3))),
    ("copy_index_not_tensor", lambda m, x, I, T: x.index_copy(0, [0, 2], T(2, 3))),
    ("copy_source_not_tensor", lambda m, x, I, T: m.index_copy(x, 0, I([0]), 1.0)),
    ("add_index_2d", lambda m, x, I, T: x.index_add_(0, I([[0, 2]]), T(2, 3))),
    ("add_index_float", lambda m, x, I, T: x.index_add_(0, I([0, 2], m.float32), T(2, 3))),
    ("add_source_dtype", lambda m, x, I, T: x.index_add_(0, I([0, 2]), T(2, 3, dtype=m.float64))),
    ("add_source_count", lambda m, x, I, T: x.index_add_(0, I([0, 2]), T(3, 3))),
    ("add_dim_of_source", lambda m, x, I, T: x.index_add_(1, I([0, 1]), T(3))),
    ("add_source_shape", lambda m, x, I, T: x.index_add_(0, I([0, 2]), T(2, 4))),
    ("add_scalar_source", lambda m, x, I, T: T(5).index_add_(0, I([1]), T())),
    ("add_scalar_self", lambda m, x, I, T: T().index_add_(0, I([0]), T(1))),
]


@pytest.mark.parametrize("name,call", INDEX_WRITE_ERRORS, ids=[c[0] for c in INDEX_WRITE_ERRORS])
def test_index_write_errors_as_torch(device, name, call):
    outcomes = []
    for m, where in ((torch, {}), (vkt, {"device": device})):
        x = m.zeros(5, 3, **where)
        outcomes.append(raised(lambda: call(m, x, lambda v, dtype=m.int64: m.tensor(v, dtype=dtype, **where),
                                            lambda *shape, dtype=m.float32: m.ones(shape, dtype=dtype, **where))))
        outcomes[-1] += (x.tolist(),)  # nothing written
    assert outcomes[1] == outcomes[0] and outcomes[0][0] is not None


def test_scatter_unique(device):
    x = vkt.zeros(3, 4, device=device)
    i = vkt.tensor([[2, 0, 1, 2], [0, 1, 2, 0]], device=device)
    s = vkt.tensor(np.arange(8, dtype=np.float32).reshape(2, 4), device=device)
    ref = torch.zeros(3, 4).scatter(0, torch.tensor([[2, 0, 1, 2], [0, 1, 2, 0]]), torch.arange(8.0).reshape(2, 4))
    assert_bits_equal(np.asarray(x.scatter(0, i, s)), ref.numpy())
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.scatter_(0, vkt.tensor([[5]], device=device), s)
    with pytest.raises(IndexError, match=r"index_copy_\(\): index 3 is out of bounds"):
        x.index_copy_(0, vkt.tensor([3], device=device), vkt.zeros(1, 4, device=device))
    assert x.tolist() == [[0.0] * 4] * 3


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int64", "float16", "uint8", "bool"])
def test_scatter_reduce(device, reduce, include_self, dtype):
    vkt.vulkan.reset_fallback_stats()
    x = (np.arange(15) % 4 + 1).reshape(3, 5).astype(dtype)
    i = np.array([[0, 2, 2, 1], [2, 2, 0, 0]])
    s = (np.arange(8) % 3 + 1).reshape(2, 4).astype(dtype)
    args = (0, vkt.tensor(i, device=device), vkt.tensor(s, device=device), reduce)
    if dtype == "bool" and reduce == "mean":  # torch has no bool mean
        with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
            vkt.tensor(x, device=device).scatter_reduce(*args, include_self=include_self)
        return
    ref = torch.tensor(x).scatter_reduce(0, torch.tensor(i), torch.tensor(s), reduce, include_self=include_self)
    got = vkt.tensor(x, device=device).scatter_reduce(*args, include_self=include_self)
    if dtype == "float16" and reduce == "mean":
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), ref.double().numpy(), rtol=1e-3)
    else:
        assert_bits_equal(np.asarray(got), ref.numpy())
    if dtype in ("float32", "int32"):
        assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_scatter_reduce_nan_and_legacy(device):
    x = vkt.tensor([1.0, 5.0, 2.0], device=device)
    i = vkt.tensor([0, 0, 1, 2], device=device)
    s = vkt.tensor([float("nan"), 3.0, 9.0, -1.0], device=device)
    ref = torch.tensor([1.0, 5.0, 2.0]).scatter_reduce(0, torch.tensor([0, 0, 1, 2]),
                                                       torch.tensor([float("nan"), 3.0, 9.0, -1.0]), "amax")
    assert_bits_equal(np.asarray(x.scatter_reduce(0, i, s, "amax")), ref.numpy())
    t = torch.tensor([1.0, 5.0, 2.0])
    assert_bits_equal(np.asarray(x.scatter(0, i[1:], s[1:], reduce="multiply")),
                      t.scatter(0, torch.tensor([0, 1, 2]), torch.tensor([3.0, 9.0, -1.0]), reduce="multiply").numpy())
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        x.scatter_reduce(0, i, s, "max")


# 0-d and empty tensors and indices (shape of x, call on a module m and x); where torch refuses, vkt must
# refuse with the same exception type.
EDGES = [
    ((), lambda m, x: x[m.tensor([0, 0, -1])]),
    ((), lambda m, x: x[None, m.tensor([0])]),
    ((), lambda m, x: x[m.tensor(True)]),
    ((), lambda m, x: x.gather(0, m.tensor(0))),
    ((), lambda m, x: x.index_select(0, m.tensor([0, 0]))),
    ((), lambda m, x: x.take(m.tensor([[0]]))),
    ((), lambda m, x: x.clone().index_put_((m.tensor([0]),), m.tensor(3.0), accumulate=True)),
    ((0, 3), lambda m, x: x[m.tensor([], dtype=m.int64)]),
    ((0, 3), lambda m, x: x[:, m.tensor([2, 0])]),
    ((0, 3), lambda m, x: x[x > 0]),
    ((2, 0), lambda m, x: x.clone().index_put_((m.tensor([1, 1]),), m.ones(2, 0), accumulate=True)),
    ((4,), lambda m, x: x.scatter_add(0, m.zeros(0, dtype=m.int64), x[:0])),
    ((4,), lambda m, x: x.index_add(0, m.tensor([], dtype=m.int64), x[:0])),
    ((3, 1), lambda m, x: x.masked_select(m.tensor([[True, False]]))),
    ((3, 4), lambda m, x: x[m.zeros(3, 4, dtype=m.bool)]),
    ((3, 4), lambda m, x: x.repeat_interleave(0, dim=0)),
    ((3, 4), lambda m, x: x.diag_embed()[..., :0]),
]


@pytest.mark.parametrize("shape,call", EDGES, ids=[f"{i}" for i in range(len(EDGES))])
def test_edges(device, shape, call):
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1
    try:
        ref = call(torch, torch.tensor(data))
    except (IndexError, RuntimeError) as e:
        with pytest.raises(type(e)):
            call(_Dev(device), vkt.tensor(data, device=device))
        return
    got = call(_Dev(device), vkt.tensor(data, device=device))
    assert_bits_equal(np.asarray(got), ref.numpy())


class _Dev:
    """vkt with tensor(), ones() and zeros() placed on one device, so the calls above read as torch's."""

    def __init__(self, device):
        self.device = device

    def __getattr__(self, name):
        return getattr(vkt, name)

    def tensor(self, data, **kw):
        return vkt.tensor(data, device=self.device, **kw)

    def ones(self, *shape, **kw):
        return vkt.ones(*shape, device=self.device, **kw)

    def zeros(self, *shape, **kw):
        return vkt.zeros(*shape, device=self.device, **kw)


def test_strided_and_broadcast_index_tensors(device):
    """Index tensors that are views: transposed, sliced with a step, expanded (stride 0)."""
    idx = np.array([[0, 3, -1], [2, 2, 1]])
    t = torch.tensor(XN)
    x = vkt.tensor(XN, device=device)
    vi = vkt.tensor(idx, device=device)
    ti = torch.tensor(idx)
    for vk, tk in [(vi.T, ti.T), (vi[:, ::2], ti[:, ::2]), (vi[:1].expand(4, 3), ti[:1].expand(4, 3)),
                   ((vi.T, vi[0, :1].expand(3, 2)), (ti.T, ti[0, :1].expand(3, 2)))]:
        assert_bits_equal(np.asarray(x[vk]), t[tk].numpy())


def test_float_add_without_float_atomics(dev):
    """VKT_NO_FLOAT_ATOMICS=1 takes scatter's compare-and-swap path for float32 adds, as on an adapter without
    VK_EXT_shader_atomic_float; both must add up the same."""
    code = ("import numpy as np, vkt; i = np.arange(50_000) % 5; x = vkt.zeros(5, device='vulkan'); "
            "x.index_put_((vkt.tensor(i, device='vulkan'),), vkt.ones(50_000, device='vulkan'), accumulate=True); "
            "assert x.tolist() == [10000.0] * 5, x.tolist(); "
            "assert not vkt.vulkan.get_device_properties().float32_atomic_add; print(vkt.vulkan.validation_messages())")
    r = run_python(code, env={"VKT_NO_FLOAT_ATOMICS": "1", "VKT_VALIDATION": "1"})
    assert r.returncode == 0 and r.stdout.strip().endswith("[]"), r.stdout + r.stderr
