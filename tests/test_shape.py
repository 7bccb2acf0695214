# Shape and indexing ops: cat, stack, split, chunk, flip, roll, tril/triu, masked_fill, gather,
# index_select, copy_/fill_/zero_ and __setitem__, each from a table of cases against NumPy on cpu
# and vulkan. They move elements without arithmetic, so results must match bit for bit.
import re

import numpy as np
import pytest

import vkt
from conftest import DTYPES, assert_bits_equal, run_python, vkt_dtype

SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 17), (64, 129)]


def sample(shape, dtype, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(dtype)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def make(a, device, layout):
    """A vkt tensor with a's values, laid out contiguous, transposed (strides reversed) or sliced
    (every other element of a wider tensor)."""
    if layout == "transposed" and a.ndim >= 2:
        return vkt.tensor(np.ascontiguousarray(a.T), device=device).T
    if layout == "sliced" and a.ndim >= 1:
        wide = np.repeat(a, 2, axis=-1)
        return vkt.tensor(wide, device=device)[..., ::2]
    return vkt.tensor(a, device=device)


def combos(min_ndim=0):
    """(shape, dtype, layout): every shape in float32, every dtype on one shape, strided layouts."""
    out = [(s, "float32", "contiguous") for s in SHAPES]
    out += [((2, 3, 17), d, "contiguous") for d in DTYPES if d != "float32"]
    out += [(s, d, l) for s in [(3, 5), (2, 3, 17)] for d in ["float32", "float16", "bool"]
            for l in ["transposed", "sliced"]]
    return [c for c in out if len(c[0]) >= min_ndim]


def checked(device, dtype, fn):
    """Runs fn; float32 on vulkan must not leave the shader path."""
    vkt.vulkan.reset_fallback_stats()
    out = fn()
    if device != "cpu" and dtype == "float32":
        assert vkt.vulkan.fallback_stats() == {}
    return out


def np_of(x):
    return x.cpu().numpy()


# (name, vkt function, NumPy function, minimum ndim)
CASES = [
    ("flip_0", lambda t: t.flip(0), lambda a: np.flip(a, 0), 1),
    ("flip_neg_pair", lambda t: vkt.flip(t, (-1, 0)), lambda a: np.flip(a, (-1, 0)), 2),
    ("flip_list", lambda t: t.flip([-1]), lambda a: np.flip(a, -1), 1),
    ("roll_flat", lambda t: t.roll(3), lambda a: np.roll(a, 3), 0),
    ("roll_dim", lambda t: t.roll(-2, -1), lambda a: np.roll(a, -2, -1), 1),
    ("roll_pair", lambda t: vkt.roll(t, (1, 40), (0, -1)), lambda a: np.roll(a, (1, 40), (0, -1)), 2),
    ("tril", lambda t: t.tril(), lambda a: np.tril(a), 2),
    ("tril_1", lambda t: vkt.tril(t, 1), lambda a: np.tril(a, 1), 2),
    ("triu", lambda t: t.triu(), lambda a: np.triu(a), 2),
    ("triu_neg", lambda t: vkt.triu(t, diagonal=-2), lambda a: np.triu(a, -2), 2),
    ("triu_far", lambda t: t.triu(200), lambda a: np.triu(a, 200), 2),
    ("cat_0", lambda t: vkt.cat([t, t], 0), lambda a: np.concatenate([a, a], 0), 1),
    ("cat_last", lambda t: vkt.cat((t, t[..., :1], t), dim=-1), lambda a: np.concatenate([a, a[..., :1], a], -1), 1),
    ("cat_legacy_empty", lambda t: vkt.cat([vkt.empty(0, dtype=t.dtype, device=t.device), t], -1),
     lambda a: a, 1),
    ("stack_0", lambda t: vkt.stack([t, t, t]), lambda a: np.stack([a, a, a]), 0),
    ("stack_last", lambda t: vkt.stack([t, t], dim=-1), lambda a: np.stack([a, a], -1), 0),
    ("masked_fill", lambda t: t.masked_fill(t.flip(0) == t, 5),
     lambda a: np.where(np.flip(a, 0) == a, np.array(5).astype(a.dtype), a), 1),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_table(case, device):
    name, fn, ref, min_ndim = case
    rng = np.random.default_rng(len(name))
    for shape, dtype, layout in combos(min_ndim):
        a = sample(shape, dtype, rng)
        got = checked(device, dtype, lambda: np_of(fn(make(a, device, layout))))
        assert_bits_equal(got, ref(a))


@pytest.mark.parametrize("shape,dtype,layout", combos(1))
@pytest.mark.parametrize("dim", [0, -1])
def test_gather(device, shape, dtype, layout, dim):
    rng = np.random.default_rng(1)
    a = sample(shape, dtype, rng)
    d = dim % a.ndim
    ishape = [max(n - 1, 1) if i != d else 4 for i, n in enumerate(shape)]
    if 0 in shape:
        ishape = [0 if n == 0 else 1 for n in shape]
    idx = rng.integers(0, max(shape[d], 1), ishape)
    sub = a[tuple(slice(0, n) if i != d else slice(None) for i, n in enumerate(ishape))]
    t = make(a, device, layout)
    i = make(idx, device, layout)
    got = checked(device, dtype, lambda: np_of(t.gather(dim, i)))
    assert_bits_equal(got, np.take_along_axis(sub, idx, d))


@pytest.mark.parametrize("shape,dtype,layout", combos(1))
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_index_select(device, shape, dtype, layout, index_dtype):
    rng = np.random.default_rng(2)
    a = sample(shape, dtype, rng)
    for dim in range(-a.ndim, a.ndim):
        n = shape[dim]
        idx = rng.integers(0, max(n, 1), 9 if n else 0).astype(index_dtype)
        i = vkt.tensor(idx, device=device)[::2] if n else vkt.tensor(idx, device=device)
        t = make(a, device, layout)
        got = checked(device, dtype, lambda: np_of(vkt.index_select(t, dim, i)))
        assert_bits_equal(got, np.take(a, idx[::2] if n else idx, axis=dim))


def test_zero_dim_indexing(device):
    x = vkt.tensor(3.5, device=device)
    assert x.gather(0, vkt.tensor(0, device=device)).item() == 3.5
    r = x.index_select(0, vkt.tensor([0], device=device))
    assert r.shape == () and r.item() == 3.5
    v = vkt.tensor([1.0, 2.0, 3.0], device=device)
    assert v.gather(0, vkt.tensor(2, device=device)).shape == ()
    assert v.index_select(0, vkt.tensor(1, device=device)).tolist() == [2.0]


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 17), (0, 4)])
def test_split_chunk(device, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = vkt.tensor(a, device=device)
    for dim in range(-a.ndim, a.ndim):
        n = shape[dim]
        for size in [1, 2, 3, max(n, 1)]:
            pieces = t.split(size, dim)
            bounds = list(range(size, n, size))
            ref = np.split(a, bounds, axis=dim) if n else [a]
            assert [p.shape for p in pieces] == [r.shape for r in ref]
            for p, r in zip(pieces, ref):
                assert_bits_equal(np_of(p), r)
        for chunks in [1, 2, 3, 5]:
            pieces = vkt.chunk(t, chunks, dim)
            step = -(-n // chunks)
            ref = np.split(a, list(range(step, n, step)), axis=dim) if n else [a] * chunks
            assert [p.shape for p in pieces] == [r.shape for r in ref]
        sizes = [n // 3, n - n // 3] if n else [0, 0]
        pieces = vkt.split(t, sizes, dim=dim)
        assert [p.shape[dim] for p in pieces] == sizes
        assert all(p.storage_offset() >= 0 for p in pieces)


def test_split_views_share_storage(device):
    t = vkt.zeros(4, 6, device=device)
    a, b = t.split(3, dim=1)
    b.fill_(2)
    c = t.chunk(2)[1]
    c[:, 0] = 7
    ref = np.zeros((4, 6), np.float32)
    ref[:, 3:] = 2
    ref[2:, 0] = 7
    assert_bits_equal(np_of(t), ref)


# (name, input dtypes, shapes, result dtype)
CAT_PROMOTION = [
    ("int_float", ["int32", "float32"], [(2, 3), (1, 3)], "float32"),
    ("uint8_bool", ["uint8", "bool"], [(2, 3), (2, 3)], "uint8"),
    ("int64_half", ["int64", "float16"], [(1, 3), (2, 3)], "float16"),
    ("int32_int64", ["int32", "int64"], [(2, 3), (2, 3)], "int64"),
    ("legacy_empty_double", ["float64", "int32"], [(0,), (2, 3)], "float64"),
    ("all_empty", ["float32", "float32"], [(0,), (0,)], "float32"),
]


@pytest.mark.parametrize("case", CAT_PROMOTION, ids=[c[0] for c in CAT_PROMOTION])
def test_cat_promotion(device, case):
    name, dtypes, shapes, result = case
    rng = np.random.default_rng(3)
    arrays = [sample(s, d, rng) for s, d in zip(shapes, dtypes)]
    got = vkt.cat([vkt.tensor(a, device=device) for a in arrays])
    ref = np.concatenate([a.astype(result) for a in arrays if a.shape != (0,)] or [arrays[0]]).astype(result)
    assert_bits_equal(np_of(got), ref)
    st = vkt.stack([vkt.tensor(a, device=device) for a in arrays]) if shapes[0] == shapes[1] else None
    if st is not None:
        assert_bits_equal(np_of(st), np.stack([a.astype(result) for a in arrays]))


# __setitem__: (name, key, value builder from (NumPy array of the destination's values, device))
SETITEM = [
    ("slice_step_scalar", np.s_[1:, ::2], lambda a, d: 7),
    ("slice_step_tensor", np.s_[1:, ::2], lambda a, d: vkt.tensor(np.arange(9, dtype=np.float32).reshape(3, 3), device=d)),
    ("row_broadcast", np.s_[1:3], lambda a, d: vkt.tensor(np.arange(6, dtype=np.float32), device=d)),
    ("leading_ones", np.s_[2], lambda a, d: vkt.tensor(np.ones((1, 1, 6), np.float32), device=d)),
    ("ellipsis_column", np.s_[..., 2], lambda a, d: vkt.tensor(np.arange(4, dtype=np.float32), device=d)),
    ("none_int", np.s_[None, -1, -1], lambda a, d: -3.5),
    ("cast_int_to_float", np.s_[:, 1:5:3], lambda a, d: vkt.tensor(np.array([[1, 2]] * 4, np.int32), device=d)),
    ("bool_value", np.s_[0], lambda a, d: True),
    ("numpy_value", np.s_[3], lambda a, d: np.linspace(0, 1, 6).astype(np.float32)),
    ("list_value", np.s_[0, :3], lambda a, d: [1, 2, 3]),
    ("from_cpu", np.s_[1:], lambda a, d: vkt.tensor(np.full((3, 6), 9, np.float32))),
    ("zero_d_tensor", np.s_[2, 2], lambda a, d: vkt.tensor(4.0, device=d)),
    ("overlapping", np.s_[1:], lambda a, d: None),  # x[1:] = x[:-1]
    ("everything", np.s_[...], lambda a, d: 1),
]


@pytest.mark.parametrize("case", SETITEM, ids=[c[0] for c in SETITEM])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8", "bool"])
def test_setitem(device, case, dtype):
    name, key, value = case
    a = sample((4, 6), dtype, np.random.default_rng(4))
    x = vkt.tensor(a, device=device)
    v = value(a, device)
    if dtype == "uint8" and name == "none_int":  # -3.5 does not fit uint8: PyTorch raises
        with pytest.raises(RuntimeError, match="^value cannot be converted to type uint8_t without overflow$"):
            x[key] = v
        assert_bits_equal(np_of(x), a)
        return

    def run():
        x[key] = x[:-1] if v is None else v
        return np_of(x)

    got = checked(device, dtype, run)
    ref = a.copy()
    ref[key] = a[:-1] if v is None else (np_of(v) if isinstance(v, vkt.Tensor) else np.asarray(v))
    assert_bits_equal(got, ref)


def test_setitem_through_views(device):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = vkt.tensor(a, device=device)
    view = x.T[1:]  # a transposed, sliced view of x's storage
    vkt.vulkan.reset_fallback_stats()
    view[::2, 1] = 0
    view[0] = vkt.tensor([-1.0, -2.0, -3.0, -4.0], device=device)
    ref = a.copy()
    ref.T[1:][::2, 1] = 0
    ref.T[1:][0] = [-1, -2, -3, -4]
    if device != "cpu":
        assert vkt.vulkan.fallback_stats() == {}
    assert_bits_equal(np_of(x), ref)


def test_inplace_on_views(device):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = vkt.tensor(a, device=device)
    ref = a.copy()
    vkt.vulkan.reset_fallback_stats()
    v = x[1:, ::2]
    v += vkt.ones(3, 3, device=device)
    ref[1:, ::2] += 1
    x.T[::3].masked_fill_(x.T[::3] > 10, -1)
    ref.T[::3][ref.T[::3] > 10] = -1
    x[0].copy_(vkt.arange(6, device=device))
    ref[0] = np.arange(6)
    x[:, 5].fill_(vkt.tensor(2.5, device=device))
    ref[:, 5] = 2.5
    x.T[2].zero_()
    ref.T[2] = 0
    x[3].masked_fill_(vkt.tensor([True, False, True, False, False, False], device=device), vkt.tensor(8.0))
    ref[3, [0, 2]] = 8
    if device != "cpu":
        assert vkt.vulkan.fallback_stats() == {}
    assert_bits_equal(np_of(x), ref)


def test_copy_fill_zero(device):
    x = vkt.empty(3, 4, dtype=vkt.int32, device=device)
    assert x.copy_(vkt.tensor(np.array([1.9, -2.7, 3.0, 4.5], np.float32))) is x
    assert_bits_equal(np_of(x), np.tile(np.array([1, -2, 3, 4], np.int32), (3, 1)))
    assert x.fill_(7) is x and (np_of(x) == 7).all()
    assert x.zero_() is x and (np_of(x) == 0).all()
    h = vkt.empty(2, 2, dtype=vkt.float16, device=device).fill_(0.1)
    assert_bits_equal(np_of(h), np.full((2, 2), 0.1, np.float16))



@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_and_dense_copy_of_every_slice(device, dtype):
    # A dense fill or copy on a Vulkan device is a dispatch (fill.comp, copy.comp) bound to the range from its start
    # rounded down to the adapter's binding alignment, or a small fill of an idle tensor is written from the host:
    # every start and length of a slice of 70 elements, the elements around it untouched; a length reaching the
    # storage's end fills its last word whole.
    rng = np.random.default_rng(3)
    base = sample((70,), dtype, rng)
    src = vkt.tensor(sample((70,), dtype, rng), device=device)
    value = {"bool": True, "uint8": 200, "int32": -7, "int64": 2**40 + 3, "float16": 0.1}.get(dtype, -2.5)
    x = vkt.tensor(base, device=device)
    ref = base.copy()
    for start in range(0, 20):
        for length in (0, 1, 2, 3, 5, 8, 17, 70 - start):
            x[start:start + length].fill_(value)
            ref[start:start + length] = value
            x[start + 1:start + 1 + length].copy_(src[: min(length, 69 - start)])
            ref[start + 1:start + 1 + length] = np_of(src)[: min(length, 69 - start)]
    assert_bits_equal(np_of(x), ref)
    assert_bits_equal(np_of(x.clone()), ref)
    if device != "cpu":
        vkt.vulkan.synchronize()  # small fills of a tensor the GPU is done with are written from the host
    for start, length in ((0, 1), (3, 9), (8, 62), (61, 9)):
        x[start:start + length].fill_(value)
        ref[start:start + length] = value
    assert_bits_equal(np_of(x), ref)
    big = vkt.zeros(5000, dtype=vkt_dtype(dtype), device=device)  # more than the host fills
    big[7:4001].fill_(value)
    ref = np.zeros(5000, dtype)
    ref[7:4001] = value
    assert_bits_equal(np_of(big.clone()), ref)
    if device != "cpu":
        assert vkt.vulkan.fallback_stats() == {}


def test_fills_and_copies_as_dispatches_on_any_adapter():
    # On a GPU fills and dense copies are dispatches; VKT_SHADER_FILLS takes that path on a CPU adapter too.
    if not vkt.vulkan.is_available():
        pytest.skip("no Vulkan adapter")
    r = run_python(None, args=["-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "vulkan",
                               f"{__file__}::test_fill_and_dense_copy_of_every_slice"],
                   env={"VKT_SHADER_FILLS": "1", "VKT_VALIDATION": "1"}, timeout=300)
    assert r.returncode == 0 and " passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


# A bad index raises PyTorch's error on both devices (on vulkan the shader sets an error word that the op
# reads back), and the device and other tensors stay usable afterwards.
BAD_INDEX = [
    ("gather", lambda m, x, i: m.gather(x, 0, i), [0, 5]),
    ("gather_negative", lambda m, x, i: m.gather(x, 0, i), [-1]),
    ("index_select", lambda m, x, i: m.index_select(x, 0, i), [2, 7]),
    ("index_select_negative", lambda m, x, i: m.index_select(x, 0, i), [-1]),
    ("getitem", lambda m, x, i: x[i], [0, 7]),
    ("getitem_negative", lambda m, x, i: x[i], [-4, 1]),
]


@pytest.mark.parametrize("name,call,index", BAD_INDEX, ids=[c[0] for c in BAD_INDEX])
@pytest.mark.parametrize("itype", ["int64", "int32"])
def test_index_out_of_range(device, name, call, index, itype):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as ref:
        call(torch, torch.tensor([1.0, 2.0, 3.0]), torch.tensor(index, dtype=getattr(torch, itype)))
    x = vkt.tensor([1.0, 2.0, 3.0], device=device)
    with pytest.raises(type(ref.value), match=re.escape(str(ref.value))):
        call(vkt, x, vkt.tensor(index, dtype=vkt_dtype(itype), device=device))
    assert (x * 2).tolist() == [2.0, 4.0, 6.0]
    assert x[vkt.tensor([2, 0], device=device)].tolist() == [3.0, 1.0]


def other_device(device):
    return "cpu" if device != "cpu" else "vulkan"


# (name, callable raising, exception, message pattern)
ERRORS = [
    ("cat_shapes", lambda d: vkt.cat([vkt.zeros(2, 3, device=d), vkt.zeros(2, 4, device=d)]), RuntimeError,
     r"\[2, 3\].*\[2, 4\]"),
    ("cat_ndim", lambda d: vkt.cat([vkt.zeros(2, 3, device=d), vkt.zeros(2, 3, 1, device=d)]), RuntimeError,
     "same number of dimensions"),
    ("cat_zero_dim", lambda d: vkt.cat([vkt.tensor(1.0, device=d)]), RuntimeError, "zero-dimensional"),
    ("cat_empty_list", lambda d: vkt.cat([]), ValueError, "non-empty"),
    ("cat_not_tensor", lambda d: vkt.cat([vkt.zeros(2, device=d), 3]), TypeError, "element 1"),
    ("stack_shapes", lambda d: vkt.stack([vkt.zeros(2, 3, device=d), vkt.zeros(3, 2, device=d)]), RuntimeError,
     r"\[2, 3\] at entry 0 and \[3, 2\] at entry 1"),
    ("cat_dim", lambda d: vkt.cat([vkt.zeros(2, 3, device=d)], dim=2), IndexError, "Dimension out of range"),
    ("stack_dim", lambda d: vkt.stack([vkt.zeros(2, 3, device=d)], dim=-4), IndexError, "Dimension out of range"),
    ("flip_dim", lambda d: vkt.zeros(2, 3, device=d).flip(2), IndexError, "Dimension out of range"),
    ("flip_no_dims", lambda d: vkt.zeros(2, 3, device=d).flip(), TypeError, "dims"),
    ("flip_repeat", lambda d: vkt.zeros(2, 3, device=d).flip(0, -2), RuntimeError, "multiple times"),
    ("roll_dim", lambda d: vkt.zeros(2, 3, device=d).roll(1, 5), IndexError, "Dimension out of range"),
    ("roll_align", lambda d: vkt.zeros(2, 3, device=d).roll((1, 2), 0), RuntimeError, "must align"),
    ("split_dim", lambda d: vkt.zeros(2, 3, device=d).split(1, -3), IndexError, "Dimension out of range"),
    ("split_sum", lambda d: vkt.zeros(2, 3, device=d).split([1, 1], 1), RuntimeError, "sum exactly to 3"),
    ("split_zero", lambda d: vkt.zeros(2, 3, device=d).split(0), RuntimeError, "split_size can only be 0"),
    ("chunk_zero", lambda d: vkt.zeros(2, 3, device=d).chunk(0), RuntimeError, "greater than 0"),
    ("chunk_dim", lambda d: vkt.zeros(2, 3, device=d).chunk(2, 2), IndexError, "Dimension out of range"),
    ("tril_1d", lambda d: vkt.zeros(3, device=d).tril(), RuntimeError, "at least 2 dimensions"),
    ("gather_dim", lambda d: vkt.zeros(2, 3, device=d).gather(2, vkt.zeros(2, 3, dtype=vkt.int64, device=d)),
     IndexError, "Dimension out of range"),
    ("gather_float", lambda d: vkt.zeros(2, 3, device=d).gather(0, vkt.zeros(2, 3, device=d)),
     RuntimeError, "Expected dtype int32/int64 for index"),
    ("gather_ndim", lambda d: vkt.zeros(2, 3, device=d).gather(0, vkt.zeros(3, dtype=vkt.int64, device=d)),
     RuntimeError, "same number of dimensions"),
    ("gather_size", lambda d: vkt.zeros(2, 3, device=d).gather(0, vkt.zeros(2, 4, dtype=vkt.int64, device=d)),
     RuntimeError, r"index \[2, 4\] to be smaller than self \[2, 3\]"),
    ("index_select_float", lambda d: vkt.zeros(2, 3, device=d).index_select(0, vkt.zeros(2, device=d)),
     RuntimeError, "int32 or int64"),
    ("index_select_2d", lambda d: vkt.zeros(2, 3, device=d).index_select(0, vkt.zeros(1, 1, dtype=vkt.int64, device=d)),
     IndexError, "vector"),
    ("index_select_dim", lambda d: vkt.zeros(2, 3, device=d).index_select(-3, vkt.zeros(1, dtype=vkt.int64, device=d)),
     IndexError, "Dimension out of range"),
    ("masked_fill_int_mask", lambda d: vkt.zeros(2, 3, device=d).masked_fill(vkt.zeros(2, 3, dtype=vkt.int32, device=d), 1),
     RuntimeError, "boolean masks"),
    ("masked_fill_value_1d", lambda d: vkt.zeros(2, device=d).masked_fill(vkt.zeros(2, dtype=vkt.bool, device=d), vkt.zeros(1)),
     RuntimeError, "0-dimensional value"),
    ("masked_fill_inplace_broadcast", lambda d: vkt.zeros(3, device=d).masked_fill_(vkt.zeros(2, 3, dtype=vkt.bool, device=d), 1),
     RuntimeError, "doesn't match the broadcast shape"),
    ("setitem_shape", lambda d: vkt.zeros(4, 6, device=d).__setitem__(np.s_[1:], vkt.zeros(2, 6, device=d)),
     RuntimeError, r"shape \[2, 6\] cannot be broadcast to indexing result of shape \[3, 6\]"),
    ("setitem_expanded", lambda d: vkt.zeros(1, 3, device=d).expand(2, 3).__setitem__(np.s_[:, 0], vkt.ones(2, device=d)),
     RuntimeError, "single memory location"),
    ("copy_expanded_dst", lambda d: vkt.zeros(1, 3, device=d).expand(2, 3).copy_(vkt.ones(2, 3, device=d)),
     RuntimeError, "single memory location"),
    ("setitem_index", lambda d: vkt.zeros(2, 3, device=d).__setitem__(np.s_[2], 1), IndexError, "out of bounds"),
    ("delitem", lambda d: vkt.zeros(2, 3, device=d).__delitem__(0), TypeError, "deletion"),
    ("fill_1d_value", lambda d: vkt.zeros(2, device=d).fill_(vkt.zeros(2, device=d)), RuntimeError, "0-dimension"),
    ("copy_not_tensor", lambda d: vkt.zeros(2, device=d).copy_(3), TypeError, "must be Tensor"),
    ("cat_devices", lambda d: vkt.cat([vkt.zeros(2, device=d), vkt.zeros(2, device=other_device(d))]), RuntimeError,
     "same device"),
    ("stack_devices", lambda d: vkt.stack([vkt.zeros(2, device=d), vkt.zeros(2, device=other_device(d))]), RuntimeError,
     "same device"),
    ("gather_devices", lambda d: vkt.zeros(2, device=d).gather(0, vkt.zeros(2, dtype=vkt.int64, device=other_device(d))),
     RuntimeError, "same device"),
    ("index_select_devices",
     lambda d: vkt.zeros(2, device=d).index_select(0, vkt.zeros(2, dtype=vkt.int64, device=other_device(d))),
     RuntimeError, "same device"),
    ("masked_fill_devices",
     lambda d: vkt.zeros(2, device=d).masked_fill(vkt.zeros(2, dtype=vkt.bool, device=other_device(d)), 1),
     RuntimeError, "same device"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(device, case):
    name, fn, exc, pattern = case
    if "devices" in name and not vkt.vulkan.is_available():
        pytest.skip("needs a Vulkan device")
    with pytest.raises(exc, match=pattern):
        fn(device)


def advanced_getitem_wired():
    try:
        return vkt.zeros(2)[vkt.tensor([True, False])].shape == (1,)
    except (IndexError, TypeError, RuntimeError):
        return False


# Advanced keys: (name, key builder from (NumPy array, device) -> (vkt key, NumPy key))
ADVANCED = [
    ("mask_full", lambda a, d: (vkt.tensor(a > 0, device=d), a > 0)),
    ("mask_rows", lambda a, d: (vkt.tensor(a[:, 0] > 0, device=d), a[:, 0] > 0)),
    ("mask_none", lambda a, d: (vkt.tensor(np.zeros(a.shape, bool), device=d), np.zeros(a.shape, bool))),
    ("mask_list", lambda a, d: ([True, False, True, True], [True, False, True, True])),
    ("mask_cpu", lambda a, d: (vkt.tensor(a > 0), a > 0)),
    ("index_1d", lambda a, d: (vkt.tensor([3, 0, 0, -1], device=d), [3, 0, 0, -1])),
    ("index_2d_int32", lambda a, d: (vkt.tensor(np.array([[1, 2], [-4, 0]], np.int32), device=d),
                                     np.array([[1, 2], [-4, 0]]))),
    ("index_list", lambda a, d: ([2, 1], [2, 1])),
    ("index_cpu", lambda a, d: (vkt.tensor([1, 1]), [1, 1])),
]


@pytest.mark.parametrize("case", ADVANCED, ids=[c[0] for c in ADVANCED])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_getitem_advanced(device, case, dtype):
    if not advanced_getitem_wired():
        pytest.skip("vkt_py_getitem_advanced is not wired into Tensor.__getitem__ yet")
    name, key = case
    a = sample((4, 6), dtype, np.random.default_rng(5))
    k, nk = key(a.astype(np.float32) - 0.3 if dtype != "bool" else a.astype(np.float32) - 0.5, device)
    for layout in ["contiguous", "transposed"]:
        x = make(a, device, layout)
        got = checked(device, dtype, lambda: np_of(x[k]))
        assert_bits_equal(got, a[nk])


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool"])
def test_setitem_mask(device, dtype):
    a = sample((4, 6), dtype, np.random.default_rng(6))
    m = np.random.default_rng(7).random((4, 6)) < 0.5
    x = vkt.tensor(a, device=device)
    ref = a.copy()

    def run():
        x[vkt.tensor(m, device=device)] = 3
        x[vkt.tensor(m[:, 1], device=device)] = vkt.tensor(1, device=device)
        x.T[vkt.tensor(m.T)] = 0  # a cpu mask on a transposed view
        x[[False, True, False, False]] = True
        return np_of(x)

    got = checked(device, dtype, run)
    ref[m] = 3
    ref[m[:, 1]] = 1
    ref.T[m.T] = 0
    ref[[False, True, False, False]] = True
    assert_bits_equal(got, ref)


ADVANCED_ERRORS = [
    ("float_index", lambda x: x[vkt.tensor([1.0])], IndexError, "must be long, int, byte or bool tensors"),
    ("mask_shape", lambda x: x[vkt.tensor([True, False])], IndexError, r"mask \[2\] at index 0"),
    ("broadcast", lambda x: x[[0, 1], [0, 1, 2]], IndexError, r"could not be broadcast together with shapes \[2\], \[3\]"),
    ("set_value_shape", lambda x: x.__setitem__(vkt.tensor(np.ones((4, 6), bool)), vkt.zeros(2)),
     RuntimeError, "shape mismatch: value tensor of shape \\[2\\]"),
    ("set_out_of_range", lambda x: x.__setitem__(([0, 1], [0, 6]), 1.0), IndexError,
     "index 6 is out of bounds for dimension 1 with size 6"),
]


@pytest.mark.parametrize("case", ADVANCED_ERRORS, ids=[c[0] for c in ADVANCED_ERRORS])
def test_advanced_errors(device, case):
    name, fn, exc, pattern = case
    x = vkt.zeros(4, 6, device=device)
    with pytest.raises(exc, match=pattern):
        fn(x)


