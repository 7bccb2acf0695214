# Sorting and selection (sort, argsort, msort, topk, kthvalue) against torch on the CPU, over shapes,
# layouts, dims and dtypes. The data hold many ties and, for floats, NaN and ±inf: sort is compared with
# torch's stable sort bit for bit, indices included; topk and kthvalue, whose tie order PyTorch leaves
# open, by values and by the indices pointing at those values. Rows longer than a block (2048) take the
# global merge passes; topk with small k the block selection passes.
import numpy as np
import pytest

import vkt
from conftest import DTYPES, to_numpy

torch = pytest.importorskip("torch")

SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 17), (64, 129), (2, 2100), (2, 0, 3)]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype == "uint8":
        return rng.integers(0, 256, size=shape).astype(np.uint8)
    a = rng.integers(-50, 50, size=shape).astype(dtype)
    if a.dtype.kind == "f" and a.size > 3:
        flat = a.reshape(-1)
        flat[rng.integers(0, a.size, size=max(1, a.size // 20))] = np.nan
        flat[:3] = [np.inf, -np.inf, -0.0]
    return a


def layouts(a):
    yield a, lambda dev: vkt.tensor(a, device=dev)
    if a.ndim >= 2:
        yield a, lambda dev: vkt.tensor(np.ascontiguousarray(a.swapaxes(0, -1)), device=dev).transpose(0, -1)
    if a.ndim >= 1 and a.shape[-1] > 1:
        wide = np.concatenate([a, a], axis=-1)
        yield wide[..., ::2], lambda dev: vkt.tensor(wide, device=dev)[..., ::2]


def same(got, ref, what):
    g, r = to_numpy(got), ref.numpy()
    assert g.dtype == r.dtype, f"{what}: dtype {g.dtype} != {r.dtype}"
    assert g.shape == r.shape, f"{what}: shape {g.shape} != {r.shape}"
    assert np.array_equal(g, r, equal_nan=g.dtype.kind == "f"), f"{what}: values differ"


def consistent(x, d, got, ref, what):
    """values equal torch's, and the indices point at them"""
    same(got.values, ref.values, what + " values")
    i = to_numpy(got.indices)
    assert i.dtype == np.int64 and i.shape == ref.indices.shape
    a = to_numpy(x)
    if a.ndim:
        picked = np.take_along_axis(a, i if i.ndim == a.ndim else np.expand_dims(i, d), d)
        v = ref.values.numpy()
        assert np.array_equal(picked.reshape(v.shape), v, equal_nan=v.dtype.kind == "f"), what + " indices"


def dims_of(a):
    return range(-max(a.ndim, 1), max(a.ndim, 1))


def check_all(a, device, dtype):
    for arr, mk in layouts(a):
        x, t = mk(device), torch.tensor(arr)
        for d in dims_of(arr):
            for desc in (False, True):
                same(x.sort(d, desc).values, t.sort(dim=d, descending=desc, stable=True).values, f"sort {d} {desc}")
                same(vkt.sort(x, dim=d, descending=desc, stable=True).indices, t.sort(dim=d, descending=desc, stable=True).indices,
                     f"sort indices {d} {desc}")
                same(x.argsort(d, descending=desc), t.argsort(dim=d, descending=desc, stable=True), "argsort")
            n = arr.shape[d] if arr.ndim else 1
            for k in sorted({0, 1, min(3, n), n} & set(range(n + 1))):
                for largest in (True, False) if dtype != "bool" else ():
                    consistent(x, d, x.topk(k, d, largest), t.topk(k, d, largest), f"topk {k} {d} {largest}")
                if k >= 1 and dtype != "bool":
                    for keep in (False, True):
                        consistent(x, d, vkt.kthvalue(x, k, d, keep), torch.kthvalue(t, k, d, keep), f"kth {k} {d}")
        if arr.ndim:
            same(vkt.msort(x), torch.msort(t), "msort")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_float32(shape, device):
    vkt.vulkan.reset_fallback_stats()
    a = data(shape, "float32")
    check_all(a, device, "float32")
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes(dtype, device):
    vkt.vulkan.reset_fallback_stats()
    check_all(data((3, 40), dtype, seed=1), device, dtype)
    a = data((2, 2500), dtype, seed=1)  # past a block: the global merges
    x, t = vkt.tensor(a, device=device), torch.tensor(a)
    for desc in (False, True):
        same(x.sort(descending=desc).indices, t.sort(descending=desc, stable=True).indices, f"sort {desc}")
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("n,k", [(9000, 8), (9000, 600), (20000, 1500)])
def test_long_rows(n, k, device):
    # block selection (k <= 1024) over two and three passes; global merge passes (P = 32768)
    a = np.random.default_rng(2).standard_normal((2, n)).astype(np.float32)
    a[0, ::7] = a[0, 0]  # ties
    a[1, 5] = np.nan
    x, t = vkt.tensor(a, device=device), torch.tensor(a)
    same(x.sort(1).indices, t.sort(dim=1, stable=True).indices, "sort")
    same(x.sort(1, descending=True).values, t.sort(1, descending=True).values, "sort descending")
    consistent(x, 1, x.topk(k), t.topk(k), "topk")
    consistent(x, 1, x.topk(k, largest=False), t.topk(k, largest=False), "topk smallest")
    consistent(x, 1, x.kthvalue(k), t.kthvalue(k), "kthvalue")



@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("shape,dim", [((5000,), 0), ((8192,), 0), ((3, 20001), 1), ((2, 2, 4099), -1)])
def test_radix_rows(dtype, shape, dim, device):
    """Long dense rows of float32 and int32 take the radix sort on vulkan: stable, NaN largest, -0.0 as
    +0.0 (so ties with 0.0 keep their order), both directions, rows at offsets of a bigger tensor."""
    rng = np.random.default_rng(5)
    if dtype == "float32":
        a = rng.standard_normal(shape).astype(dtype)
        for v, count in ((np.nan, 40), (-0.0, 40), (0.0, 40), (np.inf, 10), (-np.inf, 10), (1.5, 400)):
            a.flat[rng.integers(0, a.size, count)] = v
    else:
        a = rng.integers(-6, 6, shape).astype(dtype)
    vkt.vulkan.reset_fallback_stats()
    for desc in (False, True):
        v, i = vkt.tensor(a, device=device).sort(dim=dim, descending=desc, stable=True)
        rv, ri = torch.from_numpy(a).sort(dim=dim, descending=desc, stable=True)
        assert np.array_equal(to_numpy(i), ri.numpy())
        assert np.array_equal(to_numpy(v).view(np.int32), rv.numpy().view(np.int32))  # -0.0 and NaN bits too
    assert vkt.vulkan.fallback_stats() == {}

def test_topk_bench_shape(device):
    # the benchmark's case, smaller: k = 8 of rows of 32768
    a = np.random.default_rng(4).random((3, 32768)).astype(np.float32)
    x, t = vkt.tensor(a, device=device), torch.tensor(a)
    vkt.vulkan.reset_fallback_stats()
    r = x.topk(8)
    same(r.values, t.topk(8).values, "values")
    same(r.indices, t.topk(8).indices, "indices")
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
def test_topk_small_k(dtype, device):
    # k <= 32 of rows longer than a block: a workgroup a row keeps each invocation's best k, then merges them;
    # ties, NaN and inf, both directions, strided rows, a sorted row (every value is kept for a while), a row
    # length short of the loads' unrolling, rows along dim 0; k = 33 takes the block selection
    vkt.vulkan.reset_fallback_stats()
    a = data((3, 5000), dtype, seed=3)
    a[2] = np.arange(5000) % 200
    for arr, mk in layouts(a):
        x, t = mk(device), torch.tensor(arr)
        for k in (1, 8, 32, 33):
            for largest in (True, False):
                consistent(x, 1, x.topk(k, 1, largest), t.topk(k, 1, largest), f"topk {k} {largest}")
        consistent(x, 1, x.kthvalue(5, 1), torch.kthvalue(t, 5, 1), "kthvalue")
    b = data((2049, 2), dtype, seed=4)
    x, t = vkt.tensor(b, device=device), torch.tensor(b)
    for largest in (True, False):
        consistent(x, 0, x.topk(32, 0, largest), t.topk(32, 0, largest), f"topk dim 0 {largest}")
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("call,error,match", [
    (lambda x: x.sort(2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda x: x.topk(4), RuntimeError, "selected index k out of range"),
    (lambda x: x.topk(-1), RuntimeError, "selected index k out of range"),
    (lambda x: x.topk(), TypeError, 'topk\\(\\) missing 1 required positional arguments: "k"'),
    (lambda x: x.kthvalue(0), RuntimeError, r"kthvalue\(\): selected number k out of range for dimension 1"),
    (lambda x: vkt.kthvalue(x, 3, 0), RuntimeError, r"kthvalue\(\): selected number k out of range for dimension 0"),
    (lambda x: vkt.argsort(x, 0.5), TypeError, r"argsort\(\): argument 'dim' \(position 2\) must be int, not float"),
    (lambda x: vkt.sort([1, 2]), TypeError, "must be Tensor"),
])
def test_bad_arguments(call, error, match, device):
    with pytest.raises(error, match=match):
        call(vkt.ones(2, 3, device=device))


@pytest.mark.parametrize("dtype", DTYPES)
def test_median(dtype, device):
    # the lower median; a row with NaN gives its first NaN, nanmedian the median of the rest (the middle NaN
    # of an all-NaN row); ties are checked through the values the indices point at
    vkt.vulkan.reset_fallback_stats()
    for shape in [(), (1,), (6,), (3, 7), (4, 2, 5), (2, 2100)]:
        a = data(shape, dtype, seed=5)
        if dtype.startswith("float") and a.ndim == 2:
            a[0] = np.nan
        for arr, make in layouts(a):
            x, t = make(device), torch.tensor(arr)
            names = ["median", "nanmedian"] if dtype.startswith("float") else ["median"]
            for name in names if dtype != "bool" else []:
                same(getattr(x, name)(), getattr(torch, name)(t), name)
                for d in dims_of(arr):
                    for keep in (False, True):
                        consistent(x, d, getattr(vkt, name)(x, d, keepdim=keep), getattr(torch, name)(t, d, keep),
                                   f"{name} {d} {keep}")
    if dtype == "float32":
        assert vkt.vulkan.fallback_stats() == {}


def test_median_empty(device):
    assert np.isnan(to_numpy(vkt.median(vkt.ones(0, device=device))))
    assert to_numpy(vkt.ones(0, 3, device=device).median(1).values).shape == (0,)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size."):
        vkt.ones(3, 0, device=device).median(1)


# ---- compaction: nonzero, argwhere, unique, unique_consecutive ----

COMPACT_SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 17), (64, 129), (2, 0, 3), (3, 3000)]


def sparse(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, size=shape) * (rng.random(shape) < 0.5)
    return a.astype(dtype)


@pytest.mark.parametrize("shape", COMPACT_SHAPES, ids=str)
def test_nonzero(shape, device):
    vkt.vulkan.reset_fallback_stats()
    for dtype in DTYPES if shape == (3, 5) else ["float32"]:
        a = sparse(shape, dtype)
        if dtype == "float32" and a.size:
            a.reshape(-1)[0] = np.nan  # NaN is nonzero
        for arr, make in layouts(a):
            x, t = make(device), torch.tensor(arr)
            same(x.nonzero(), t.nonzero(), "nonzero")
            same(vkt.argwhere(x), torch.argwhere(t), "argwhere")
            got, ref = vkt.nonzero(x, as_tuple=True), torch.nonzero(t, as_tuple=True)
            assert isinstance(got, tuple) and len(got) == len(ref)
            for g, r in zip(got, ref):
                same(g, r, "as_tuple")
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("shape", COMPACT_SHAPES, ids=str)
def test_unique(shape, device):
    vkt.vulkan.reset_fallback_stats()
    for dtype in DTYPES if shape == (3, 5) else ["float32", "int64"]:
        a = data(shape, dtype, seed=6)
        if dtype == "int64":
            a = a // 10  # long runs for unique_consecutive
        for arr, make in layouts(a):
            x, t = make(device), torch.tensor(arr)
            same(x.unique(), torch.unique(t), "unique")
            for inv, cnt in [(True, False), (False, True), (True, True)]:
                got = vkt.unique(x, sorted=True, return_inverse=inv, return_counts=cnt)
                ref = torch.unique(t, return_inverse=inv, return_counts=cnt)
                for g, r, what in zip(got, ref, ["values", "inverse" if inv else "counts", "counts"]):
                    if what == "inverse" and arr.dtype.kind == "f" and np.isnan(arr).any():
                        # NaNs are distinct: which NaN takes which group is PyTorch's sort's choice
                        same(got[0][g], t, "values[inverse]")
                    else:
                        same(g, r, f"unique {what}")
                got = x.unique_consecutive(return_inverse=inv, return_counts=cnt)
                ref = torch.unique_consecutive(t, return_inverse=inv, return_counts=cnt)
                for g, r in zip(got, ref):
                    same(g, r, f"unique_consecutive {inv} {cnt}")
    assert vkt.vulkan.fallback_stats() == {}


# ---- searchsorted and bucketize ----


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])  # PyTorch has no bool kernel
def test_searchsorted(dtype, device):
    vkt.vulkan.reset_fallback_stats()
    rng = np.random.default_rng(7)
    seq1 = np.sort(data((50,), dtype, seed=8))
    seq2 = np.sort(data((3, 4, 20), dtype, seed=9), axis=-1)
    vals = [data((), dtype), data((0,), dtype), data((13,), dtype), data((3, 4, 7), dtype, seed=10)]
    for seq in (seq1, seq2):
        for v in vals:
            if seq.ndim > 1 and v.shape[:-1] != seq.shape[:-1]:
                continue
            for right in (False, True):
                for int32 in (False, True):
                    for sarr, smake in layouts(seq):
                        s, ts = smake(device), torch.tensor(sarr)
                        x, tv = vkt.tensor(v, device=device), torch.tensor(v)
                        same(vkt.searchsorted(s, x, right=right, out_int32=int32),
                             torch.searchsorted(ts, tv, right=right, out_int32=int32), "searchsorted")
                        if seq.ndim == 1:
                            same(vkt.bucketize(x, s, right=right), torch.bucketize(tv, ts, right=right), "bucketize")
    perm = rng.permutation(seq1.size)
    s, sorter = vkt.tensor(seq1[perm], device=device), vkt.tensor(np.argsort(perm), device=device)
    for side in ("left", "right"):
        same(vkt.searchsorted(s, vkt.tensor(vals[2], device=device), side=side, sorter=sorter),
             torch.searchsorted(torch.tensor(seq1[perm]), torch.tensor(vals[2]), side=side,
                                sorter=torch.tensor(np.argsort(perm))), "sorter")
    same(vkt.searchsorted(vkt.tensor(seq1, device=device), 3), torch.searchsorted(torch.tensor(seq1), 3), "number")
    same(vkt.searchsorted(vkt.tensor(seq1, device=device), 2.5), torch.searchsorted(torch.tensor(seq1), 2.5),
         "float number")
    assert vkt.vulkan.fallback_stats() == {}


def test_searchsorted_nan(device):
    seq = np.array([-np.inf, 1, 2, 2, np.inf, np.nan], np.float32)
    v = np.array([np.nan, np.inf, -np.inf, 2, 1.5], np.float32)
    for right in (False, True):
        same(vkt.searchsorted(vkt.tensor(seq, device=device), vkt.tensor(v, device=device), right=right),
             torch.searchsorted(torch.tensor(seq), torch.tensor(v), right=right), "nan")


@pytest.mark.parametrize("call,match", [
    (lambda s, v: vkt.searchsorted(s[0, 0], v), "boundaries tensor should have positive dimension"),
    (lambda s, v: vkt.searchsorted(s, v[:1]), "first N-1 dimensions of boundaries tensor and input value tensor"),
    (lambda s, v: vkt.searchsorted(s[0], v, side="left", right=True), "side and right can't be set to opposites"),
    (lambda s, v: vkt.searchsorted(s[0], v, side="x"), "side can only be 'left' or 'right' but got x"),
    (lambda s, v: vkt.searchsorted(s[0], v, sorter=s[0]), "sorter must be a tensor of long dtype but got dtype Float"),
    (lambda s, v: vkt.searchsorted(s[0], v, sorter=s[0, :2].long()), "boundary and sorter must have the same size"),
    (lambda s, v: vkt.bucketize(v, s), r"boundaries tensor must be 1 dimension, but got dim\(2\)"),
    (lambda s, v: vkt.searchsorted(s[0].bool(), v.bool()), "not implemented for 'Bool'"),
])
def test_searchsorted_errors(call, match, device):
    with pytest.raises(RuntimeError, match=match):
        call(vkt.ones(2, 3, device=device), vkt.ones(2, 4, device=device))


@pytest.mark.parametrize("dtype", DTYPES)
def test_mode(dtype, device):
    # the most frequent value (the smallest of ties) and its last position, as PyTorch's; ±inf included
    vkt.vulkan.reset_fallback_stats()
    for shape in [(), (1,), (9,), (4, 11), (2, 3, 17)] + ([(3, 2100)] if dtype == "float32" else []):
        a = data(shape, dtype, seed=11)
        if dtype not in ("bool", "uint8"):  # long runs; no NaN, whose place among ties PyTorch leaves to its sort
            a = a // 20 if a.dtype.kind != "f" else np.nan_to_num(np.floor(a / 20))
        for arr, make in layouts(a):
            x, t = make(device), torch.tensor(arr)
            for d in dims_of(arr):
                for keep in (False, True):
                    # which occurrence PyTorch's index names depends on its sort (the last one for short
                    # rows); vkt's is always the last
                    consistent(x, d, vkt.mode(x, d, keep), torch.mode(t, d, keep), f"mode {d} {keep}")
    if dtype == "float32":
        assert vkt.vulkan.fallback_stats() == {}
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size."):
        vkt.ones(3, 0, device=device).mode(1)
