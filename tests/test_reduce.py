# The reduce family (sum, mean, prod, max/min, argmax/argmin, amax/amin, var/std, all/any, softmax,
# log_softmax) against NumPy float64 references, driven by one table of ops; tolerances scale with the
# reduction length. Also: result dtypes, empty inputs, NaN, the 2^20-element sum, the fallback count, errors.
import math
import warnings

import numpy as np
import pytest

import vkt
from conftest import assert_close, to_numpy

FLOATS = ["float32", "float64", "float16"]
INTS = ["int32", "int64", "uint8"]
EPS = {"float32": 2.0**-24, "float64": 2.0**-53, "float16": 2.0**-11}


def _softmax(a, dim):
    if a.size == 0:
        return a
    e = np.exp(a - np.max(a, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def _log_softmax(a, dim):
    if a.size == 0:
        return a
    s = a - np.max(a, axis=dim, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))


def _values(t):
    return t.values if isinstance(t, tuple) else t


# (name, vkt call(x, dim, keepdim), NumPy reference(a, dim, keepdim) on float64 or int64, dtypes,
#  single dim only, has a value for empty rows, error growth: "sum" (log n), "prod" (n) or "exact")
OPS = [
    ("sum", lambda x, d, k: x.sum(d, k), lambda a, d, k: np.sum(a, d, keepdims=k), FLOATS + INTS + ["bool"],
     False, True, "sum"),
    ("mean", lambda x, d, k: x.mean(d, k), lambda a, d, k: np.mean(a, d, keepdims=k), FLOATS, False, True, "sum"),
    ("prod", lambda x, d, k: x.prod(d, k), lambda a, d, k: np.prod(a, d, keepdims=k), FLOATS + INTS + ["bool"],
     True, True, "prod"),
    ("amax", lambda x, d, k: x.amax(d, k), lambda a, d, k: np.max(a, d, keepdims=k), FLOATS + INTS + ["bool"],
     False, False, "exact"),
    ("amin", lambda x, d, k: x.amin(d, k), lambda a, d, k: np.min(a, d, keepdims=k), FLOATS + INTS + ["bool"],
     False, False, "exact"),
    ("max", lambda x, d, k: _values(x.max(d, k) if d is not None else x.max()),
     lambda a, d, k: np.max(a, d, keepdims=k and d is not None), FLOATS + INTS, True, False, "exact"),
    ("min_indices", lambda x, d, k: x.min(d, k).indices if d is not None else x.argmin(),
     lambda a, d, k: np.argmin(a, d, keepdims=k and d is not None), FLOATS + INTS, True, False, "exact"),
    ("argmax", lambda x, d, k: x.argmax(d, k), lambda a, d, k: np.argmax(a, d, keepdims=k), FLOATS + INTS,
     True, False, "exact"),
    ("argmin", lambda x, d, k: vkt.argmin(x, dim=d, keepdim=k), lambda a, d, k: np.argmin(a, d, keepdims=k),
     FLOATS + INTS, True, False, "exact"),
    ("var", lambda x, d, k: x.var(d, keepdim=k), lambda a, d, k: np.var(a, d, ddof=1, keepdims=k), FLOATS,
     False, True, "var"),
    ("std", lambda x, d, k: vkt.std(x, d, correction=0, keepdim=k), lambda a, d, k: np.std(a, d, keepdims=k),
     FLOATS, False, True, "var"),
    ("all", lambda x, d, k: x.all(d, k), lambda a, d, k: np.all(a, d, keepdims=k), FLOATS + INTS + ["bool"],
     False, True, "exact"),
    ("any", lambda x, d, k: vkt.any(x, d, k), lambda a, d, k: np.any(a, d, keepdims=k), FLOATS + INTS + ["bool"],
     False, True, "exact"),
    ("softmax", lambda x, d, k: x.softmax(d), lambda a, d, k: _softmax(a, d), FLOATS, True, True, "softmax"),
    ("log_softmax", lambda x, d, k: vkt.nn.functional.log_softmax(x, d), lambda a, d, k: _log_softmax(a, d),
     FLOATS, True, True, "softmax"),
]
OP_IDS = [op[0] for op in OPS]
OP = {op[0]: op for op in OPS}

# (shape, layout): layouts make the same logical shape from a transposed or a sliced base.
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 17), (64, 129)]
LAYOUTS = [(s, "contiguous") for s in SHAPES] + [
    ((3, 5), "transposed"), ((2, 3, 17), "transposed"), ((64, 129), "transposed"),
    ((7,), "sliced"), ((3, 5), "sliced"), ((2, 3, 17), "sliced"), ((64, 129), "sliced")]


def dims_for(shape, single):
    """None, every dim (one negative), and for 2+ dims some tuples, also negative and unordered."""
    n = len(shape)
    dims = [None, 0, -1] if n == 0 else [None] + list(range(n)) + [-1]
    if n >= 2 and not single:
        dims += [(0, n - 1), (-1, 0)] + ([(1, 2), (0, 1, 2)] if n == 3 else [])
    return dims


def make_input(shape, dtype, op, rng):
    """Values of shape and dtype that keep op's result meaningful (products near 1, some zeros or not)."""
    if dtype == "bool":
        return rng.random(shape) < (0.9 if op == "all" else 0.1)
    if dtype in INTS:
        lo, hi = (0, 3) if op == "prod" or dtype == "uint8" else (-6, 7)
        a = rng.integers(lo, hi, shape).astype(dtype)
        if op == "all":
            a[a == 0] = 1
        return a
    if op == "prod":
        return rng.uniform(0.995, 1.005, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def to_vkt(a, layout, device):
    """A vkt tensor with a's values: contiguous, a transposed view, or a view of every other element."""
    if layout == "transposed":
        return vkt.tensor(np.ascontiguousarray(a.T), device=device).permute(*reversed(range(a.ndim)))
    if layout == "sliced":
        every_other = tuple(slice(1, None, 2) for _ in a.shape)
        base = np.zeros(tuple(2 * s + 1 for s in a.shape), a.dtype)
        base[every_other] = a
        return vkt.tensor(base, device=device)[every_other]
    return vkt.tensor(a, device=device)


def reference(op, a, dim, keepdim):
    wide = a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy warns where PyTorch quietly gives NaN (var of one element)
        return np.asarray(OP[op][2](wide, dim, keepdim))


def tolerance(op, dtype, a, dim):
    """(rtol, atol): rounding of the result plus accumulation error scaled by the reduction length n."""
    growth = OP[op][6]
    if growth == "exact" or dtype not in FLOATS:
        return 0, 0
    n = a.size if dim is None else int(np.prod([a.shape[d] for d in np.atleast_1d(dim)])) if a.ndim else 1
    n = max(n, 1)
    out_eps = EPS[dtype]
    acc_eps = EPS["float64" if dtype == "float64" else "float32"]
    wide = np.abs(a.astype(np.float64))
    scale = float(np.max(wide, initial=0))
    if growth == "sum":  # pairwise summation's bound: eps * log2(n) * sum(|x|) over the row
        row_abs = float(np.max(np.sum(wide, axis=dim), initial=0)) if a.ndim else scale
        return 2 * out_eps, 2 * acc_eps * (2 + math.log2(n)) * row_abs
    if growth == "prod":
        return 2 * out_eps + 4 * acc_eps * n, 0
    if growth == "var":
        return 2 * out_eps + 16 * acc_eps * (2 + math.log2(n)), 4 * acc_eps * scale * scale
    return 4 * out_eps + 64 * acc_eps, 16 * acc_eps * (1 + scale)  # softmax: exp's error on |x - max|


def check(op, dtype, layout, shape, device, rng, dims=None, keepdims=(False, True)):
    _, call, _, _, single, has_identity, _ = OP[op]
    a = make_input(shape, dtype, op, rng)
    x = to_vkt(a, layout, device)
    if layout != "contiguous":
        assert not x.is_contiguous(), layout
    softmax = op in ("softmax", "log_softmax")
    for dim in dims if dims is not None else dims_for(shape, single):
        if softmax and dim is None:
            continue
        wrapped = None if dim is None else tuple(np.atleast_1d(dim) % max(a.ndim, 1)) if a.ndim else None
        n_reduced = a.size if wrapped is None else int(np.prod([a.shape[d] for d in wrapped]))
        if n_reduced == 0 and not has_identity:
            continue
        for keepdim in (False,) if softmax else keepdims:
            where = f"{op} {dtype} {layout} {shape} dim={dim} keepdim={keepdim}"
            ref_dim = wrapped if wrapped is None or len(wrapped) > 1 else wrapped[0]
            if softmax and a.ndim == 0:
                ref = reference(op, a.reshape(1), 0, keepdim).reshape(())
            else:
                ref = reference(op, a, ref_dim, keepdim)
            got = call(x, dim, keepdim)
            assert got.device.type == device, where
            rtol, atol = tolerance(op, dtype, a, wrapped)
            try:
                assert_close(got, ref, rtol=rtol, atol=atol)
            except AssertionError as e:
                raise AssertionError(f"{where}: {e}") from None


@pytest.mark.parametrize("shape,layout", LAYOUTS, ids=[f"{s}-{l}" for s, l in LAYOUTS])
@pytest.mark.parametrize("op", OP_IDS)
def test_float32(op, shape, layout, device):
    check(op, "float32", layout, shape, device, np.random.default_rng(0))


DTYPE_CASES = [(op[0], d) for op in OPS for d in op[3] if d != "float32"]


@pytest.mark.parametrize("op,dtype", DTYPE_CASES, ids=[f"{o}-{d}" for o, d in DTYPE_CASES])
def test_dtypes(op, dtype, device):
    rng = np.random.default_rng(1)
    for shape, layout in [((), "contiguous"), ((7,), "contiguous"), ((2, 3, 17), "transposed"),
                          ((64, 129), "sliced")]:
        single = OP[op][4]
        dims = [None, -1] + ([] if single or len(shape) < 2 else [(0, 1)])
        check(op, dtype, layout, shape, device, rng, dims=dims, keepdims=(False,))


RESULT_DTYPES = [
    ("sum", "bool", "int64"), ("sum", "uint8", "int64"), ("sum", "int32", "int64"), ("sum", "float16", "float16"),
    ("prod", "int32", "int64"), ("mean", "float16", "float16"), ("amax", "uint8", "uint8"),
    ("argmax", "float32", "int64"), ("all", "uint8", "uint8"), ("all", "float32", "bool"),
    ("any", "int32", "bool"), ("var", "float64", "float64"), ("softmax", "float16", "float16"),
]


@pytest.mark.parametrize("op,dtype,result", RESULT_DTYPES)
def test_result_dtype(op, dtype, result, device):
    x = vkt.ones(2, 3, dtype=getattr(vkt, dtype), device=device)
    got = x.softmax(0) if op == "softmax" else getattr(x, op)()
    assert got.dtype == getattr(vkt, result)


def test_dtype_argument(device):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = vkt.tensor(a, device=device)
    assert x.sum(dtype=vkt.float64).dtype == vkt.float64
    assert_close(x.sum(1, dtype=vkt.float32), a.sum(1))
    assert_close(x.mean(0, dtype=vkt.float32), a.mean(0))
    assert x.prod(dtype=vkt.int32).dtype == vkt.int32
    y = vkt.softmax(x, 1, dtype=vkt.float32)
    assert y.dtype == vkt.float32
    assert_close(y, _softmax(a.astype(np.float64), 1), rtol=1e-5, atol=1e-7)
    assert_close(vkt.nn.functional.softmax(x.float(), -1), _softmax(a.astype(np.float64), -1), rtol=1e-5, atol=1e-7)


def test_empty(device):
    e = vkt.zeros(0, 3, device=device)
    assert e.sum().item() == 0 and e.prod().item() == 1
    assert math.isnan(e.mean().item()) and math.isnan(e.var().item())
    assert e.all().item() is True and e.any().item() is False
    assert e.sum(0).shape == (3,) and to_numpy(e.sum(0)).tolist() == [0, 0, 0]
    assert e.amax(1).shape == (0,) and e.argmax(1).shape == (0,) and e.max(1).values.shape == (0,)
    assert e.softmax(0).shape == (0, 3)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        e.max()
    with pytest.raises(IndexError, match="Expected reduction dim to be specified"):  # as PyTorch's argmin
        e.argmin()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        e.amax(0)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        e.max(0)


def test_nan_and_ties(device):
    a = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, -1.0], [np.inf, 0, -np.inf, 1]], np.float32)
    x = vkt.tensor(a, device=device)
    assert_close(x.amax(1), [np.nan, 5, np.inf])
    assert_close(x.amin(1), [np.nan, -1, -np.inf])
    assert to_numpy(x.argmax(1)).tolist() == [1, 1, 0]  # the first NaN, the first of equal maxima
    assert to_numpy(x.argmin(1)).tolist() == [1, 3, 2]
    v, i = x.max(1)
    assert_close(v, [np.nan, 5, np.inf]) and to_numpy(i).tolist() == [1, 1, 0]
    assert math.isnan(x.sum().item()) and math.isnan(x.max().item())
    assert np.isnan(to_numpy(x.softmax(1))[0]).all()
    assert to_numpy(x.any(1)).tolist() == [True, True, True]  # NaN is true
    big = vkt.tensor(np.full(1000, 7, np.int32), device=device)
    assert big.argmax().item() == 0 and big.argmin().item() == 0


@pytest.mark.parametrize("n", [1, 3, 5, 32, 33, 255, 257, 1023, 1024, 1025, 1029, 4099])
def test_rows_around_runs(n, device):
    # A row is read ROW_RUN elements an invocation at a time, the last run cut at the row's end: lengths on
    # either side of multiples of 4 and of 4 x 256. The maximum sits last, to be found past a run's start, and
    # again a third of the way (argmax takes the first). Rows of up to 32 take an invocation each, up to 1024
    # a team of 32 (8 rows a workgroup: 300 rows leave the last workgroup half used, 2 rows most of it),
    # longer ones a workgroup.
    rng = np.random.default_rng(n)
    for rows in (2, 300):
        a = rng.standard_normal((rows, n)).astype(np.float32)
        a[:, -1] = a[:, n // 3] = 9.0
        x = vkt.tensor(a, device=device)
        wide = a.astype(np.float64)
        assert_close(x.sum(1), wide.sum(1), rtol=1e-5, atol=1e-5)
        assert_close(x.amax(1), a.max(1))
        assert to_numpy(x.argmax(1)).tolist() == a.argmax(1).tolist()
        assert_close(x.var(1), wide.var(1, ddof=1) if n > 1 else np.full(rows, np.nan), rtol=1e-4, atol=1e-6)
        assert to_numpy((x > 8.5).any(1)).tolist() == [True] * rows
        assert to_numpy((x < 8.5).all(1)).tolist() == [False] * rows
        assert_close(x.softmax(1), _softmax(wide, 1), rtol=1e-5, atol=1e-7)
        assert_close(x.log_softmax(1), _log_softmax(wide, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,dims", [((1029, 97), 0), ((33, 64), 0), ((40, 3, 70), (0, 1)), ((300, 2, 65), 0)])
def test_column_reductions(shape, dims, device):
    # Rows whose elements lie apart while neighbouring rows start next to each other (reducing a matrix's
    # leading dim) are read 32 rows a workgroup: row counts that do not fill the last workgroup, rows
    # across the runs' edges, ties and a NaN for argmax, softmax down the columns.
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape).astype(np.float32)
    a[1, ..., 5] = a[0, ..., 5]  # a tie for the maximum, which argmax breaks toward the first
    a[0, ..., 5] = a[1, ..., 5] = 9.0
    a[-1, ..., 7] = np.nan
    x, wide = vkt.tensor(a, device=device), a.astype(np.float64)
    assert_close(x.sum(dims), wide.sum(dims), rtol=1e-5, atol=1e-5)
    assert_close(x.mean(dims), wide.mean(dims), rtol=1e-5, atol=1e-6)
    assert_close(x.var(dims), wide.var(dims, ddof=1), rtol=1e-4, atol=1e-6)
    assert_close(x.amax(dims), a.max(dims))
    assert_close(x.amin(dims), a.min(dims))
    assert to_numpy((x > 8.5).any(dims)).tolist() == (a > 8.5).any(dims).tolist()
    if dims == 0:
        assert to_numpy(x.argmax(0)).tolist() == np.nanargmax(np.where(np.isnan(a), np.inf, a), 0).tolist()
        assert_close(x.softmax(0), _softmax(wide, 0), rtol=1e-5, atol=1e-7)
    ints = np.nan_to_num(a * 100).astype(np.int32)
    assert to_numpy(vkt.tensor(ints, device=device).sum(dims)).tolist() == ints.astype(np.int64).sum(dims).tolist()


def test_softmax_extreme(device):
    a = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -1e30], [0.0, -np.inf, 1.0]], np.float32)
    x = vkt.tensor(a, device=device)
    ref = _softmax(a.astype(np.float64), 1)
    assert_close(x.softmax(1), ref, rtol=1e-5, atol=1e-7)
    assert_close(x.log_softmax(1)[:2], _log_softmax(a[:2].astype(np.float64), 1), rtol=1e-5, atol=1e-5)


def test_softmax_long_rows(device):
    # The max and the sum of exps come from one pass, the sum scaled down whenever the max grows: rows that
    # grow all along, fall all along or jump about, long enough for a workgroup a row; +inf, an all -inf
    # row and a NaN make their whole row NaN, as in PyTorch.
    n = 5000
    up = np.linspace(-30, 30, n)
    a = np.stack([up, up[::-1], np.random.default_rng(3).standard_normal(n) * 20]).astype(np.float32)
    x = vkt.tensor(a, device=device)
    assert_close(x.softmax(1), _softmax(a.astype(np.float64), 1), rtol=1e-5, atol=1e-7)
    assert_close(x.log_softmax(1), _log_softmax(a.astype(np.float64), 1), rtol=1e-5, atol=1e-5)
    special = np.zeros((3, n), np.float32)
    special[0, -1], special[1], special[2, n // 2] = np.inf, -np.inf, np.nan
    assert np.isnan(to_numpy(vkt.tensor(special, device=device).softmax(1))).all()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [2, 7, 33, 1000, 5000])
def test_sum_meets_inf(n, dtype, device):
    # The compensation term of a sum that met an infinity would be inf - inf: the sum is inf, not NaN; +inf
    # and -inf together still make NaN, as in PyTorch. Rows short and long (a thread, a workgroup a row).
    for specials, ref in [([np.inf], np.inf), ([-np.inf], -np.inf), ([np.inf, np.inf], np.inf),
                          ([np.inf, -np.inf], np.nan)]:
        a = np.ones((3, n))
        a[1, : len(specials)] = specials
        a[2, n - len(specials):] = specials
        x = vkt.tensor(a.astype(dtype), device=device)
        refs = np.array([n, ref, ref])
        assert_close(x.sum(1), refs, rtol=EPS[dtype] * n, atol=0)
        assert_close(x.mean(dim=1), refs / n, rtol=EPS[dtype] * n, atol=0)
        assert_close(vkt.sum(x[1]), ref, rtol=0, atol=0)
        assert_close(x.t().sum(0, keepdim=True), refs[None], rtol=EPS[dtype] * n, atol=0)


@pytest.mark.parametrize("n", [3, 33, 64, 300, 5000])
def test_softmax_masked_rows(n, device):
    # A causal attention mask: rows with -inf at the end, the start or everywhere but one place. Only a row
    # that is -inf everywhere is NaN, as in PyTorch.
    torch = pytest.importorskip("torch")
    a = np.zeros((5, n), np.float32)
    a[0, -1] = a[1, : n // 2] = -np.inf
    a[2, 1:] = -np.inf
    a[3] = -np.inf
    a[4] = np.where(np.arange(n) % 3 == 0, -np.inf, np.linspace(-5, 5, n))
    for dtype in FLOATS:
        x = vkt.tensor(a.astype(dtype), device=device)
        t = torch.tensor(a.astype(np.float64))
        assert_close(x.softmax(-1), torch.softmax(t, -1).numpy(), rtol=1e-2 if dtype == "float16" else 1e-5,
                     atol=1e-7)
        assert_close(x.log_softmax(1), torch.log_softmax(t, -1).numpy(), rtol=1e-2 if dtype == "float16" else 1e-5,
                     atol=1e-5)
        assert_close(x.t().softmax(0), torch.softmax(t, -1).numpy().T, rtol=1e-2 if dtype == "float16" else 1e-5,
                     atol=1e-7)


@pytest.mark.parametrize("data", ["constant", "offset"])
@pytest.mark.parametrize("shape,dim", [((2**20,), None), ((4, 2**18), 1), ((2**18, 4), 0)])
def test_sum_accuracy_2_20(shape, dim, data, device):
    # A constant row makes every rounding of a plain float32 running sum err the same way: it ends
    # ~4e-5 off, 30 times pairwise summation's bound. Random values on an offset test the merge too.
    rng = np.random.default_rng(2)
    a = np.full(shape, 0.1, np.float32) if data == "constant" else (rng.random(shape) + 1000).astype(np.float32)
    x = vkt.tensor(a, device=device)
    ref = np.sum(a.astype(np.float64), axis=dim)
    n = a.size if dim is None else a.shape[dim]
    assert_close(x.sum(dim), ref, rtol=EPS["float32"] * math.log2(n), atol=0)
    assert_close(x.mean(dim), ref / n, rtol=EPS["float32"] * math.log2(n), atol=0)
    ref_var = np.var(a.astype(np.float64), axis=dim, ddof=1)
    assert_close(x.var(dim), ref_var, rtol=1e-4, atol=EPS["float32"] * 1e-2)


def test_api_forms(device):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7
    x = vkt.tensor(a, device=device)
    r = x.max(1, keepdim=True)
    values, indices = r
    assert isinstance(r, tuple) and type(r).__name__ == "max" and r.values.shape == (2, 1, 4)
    assert_close(values, a.max(1, keepdims=True)) and indices.dtype == vkt.int64
    assert_close(vkt.min(x, dim=-1).indices, a.argmin(-1))
    assert_close(vkt.max(x, vkt.tensor(np.full(4, 3, np.float32), device=device)), np.maximum(a, 3))
    assert_close(x.min(vkt.zeros(1, device=device)), np.minimum(a, 0))
    assert_close(vkt.sum(x, (0, 2)), a.sum((0, 2))) and x.sum(()).shape == ()
    assert_close(x.var(1, False), a.var(1))
    assert_close(x.var(unbiased=False), a.var())
    assert_close(x.var(False), a.var())
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = a.std(0, ddof=2)  # n - correction = 0: inf, or NaN where every value is equal
    assert_close(x.std(0, correction=2), ref, rtol=1e-6)
    assert_close(vkt.var(x, [0, 1], keepdim=True), a.var((0, 1), ddof=1, keepdims=True), rtol=1e-6)
    assert x.argmax(keepdim=True).shape == (1, 1, 1)
    s = vkt.tensor(np.float32(3.5), device=device)
    assert s.sum().item() == 3.5 and s.sum(0).item() == 3.5 and s.amax(-1).item() == 3.5
    assert s.argmax(0).item() == 0 and s.softmax(0).item() == 1.0 and s.log_softmax(-1).item() == 0.0


def test_float32_never_falls_back(dev):
    vkt.vulkan.reset_fallback_stats()
    rng = np.random.default_rng(3)
    for op in OP_IDS:
        for shape, layout in [((2, 3, 17), "transposed"), ((64, 129), "sliced"), ((7,), "contiguous")]:
            check(op, "float32", layout, shape, dev, rng, keepdims=(False,))
    assert vkt.vulkan.fallback_stats() == {}


def test_float64_softmax_has_a_shader(dev):
    """float64 softmax, log_softmax and logsumexp run in shaders (math_f64.glsl's exp and log) where the adapter
    has shaderFloat64."""
    if not vkt.vulkan.get_device_properties().shader_float64:
        pytest.skip("the adapter has no shaderFloat64")
    vkt.vulkan.reset_fallback_stats()
    x = vkt.ones(3, 4, dtype=vkt.float64, device=dev)
    assert_close(x.softmax(1), np.full((3, 4), 0.25), rtol=1e-15, atol=0)
    assert_close(x.log_softmax(1), np.full((3, 4), -np.log(4)), rtol=1e-15, atol=0)
    assert_close(x.logsumexp(1), np.full(3, 1 + np.log(4)), rtol=1e-15, atol=0)
    assert vkt.vulkan.fallback_stats() == {}


def test_unmergeable_dims_fall_back(dev):
    """Ten dims that cannot merge exceed the shader's 4 + 4: the CPU kernel runs, and it is counted."""
    a = np.random.default_rng(4).standard_normal((3,) * 10).astype(np.float32)
    every_other = (slice(None, None, 2),) * 10
    x = vkt.tensor(a, device=dev)[every_other]
    vkt.vulkan.reset_fallback_stats()
    dims = (0, 2, 4, 6, 8)
    assert_close(x.sum(dims), a[every_other].astype(np.float64).sum(dims), rtol=1e-6, atol=1e-6)
    reason = "more than 4 kept or 4 reduced dimensions that cannot be merged"
    assert vkt.vulkan.fallback_stats(by_reason=True) == {("sum", reason): 1}


BAD = [
    (lambda x: x.sum(2), IndexError, "Dimension out of range"),
    (lambda x: x.amax((0, -3)), IndexError, "Dimension out of range"),
    (lambda x: x.sum((0, 0)), RuntimeError, "appears multiple times"),
    (lambda x: x.var((1, -1)), RuntimeError, "appears multiple times"),
    (lambda x: x.long().mean(), RuntimeError, "mean\\(\\): could not infer output dtype"),
    (lambda x: x.mean(dtype=vkt.int32), RuntimeError, "could not infer output dtype"),
    (lambda x: x.int().var(), RuntimeError, "only support floating point"),
    (lambda x: x.int().softmax(0), NotImplementedError, "\"softmax_kernel_impl\" not implemented for 'Int'"),
    (lambda x: x.argmax((0, 1)), TypeError, "must be int"),
    (lambda x: x.max((0, 1)), TypeError, "must be int"),
    (lambda x: x.softmax(None), TypeError, "must be int"),
    (lambda x: x.sum(dtype="float32"), TypeError, "dtype must be a vkt.dtype"),
    (lambda x: vkt.sum([1.0, 2.0]), TypeError, "must be Tensor"),
    (lambda x: x.var(0, unbiased=True, correction=0), RuntimeError, "both unbiased and correction"),
    (lambda x: x.std(0, unbiased=1), TypeError, "must be bool"),
    (lambda x: x.sum(0, False, 1), TypeError, "takes at most"),
]


@pytest.mark.parametrize("call,error,match", BAD)
def test_bad_input(call, error, match, device):
    with pytest.raises(error, match=match):
        call(vkt.ones(2, 3, device=device))


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "all", "any"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "permuted_slice"])
def test_whole_tensor_split_in_two_stages(dev, op, keepdim, layout):
    # 2^20 elements or more, dense in some order of the dims, every dim reduced: partial results per row
    # of a grid over the span the tensor fills, then those. A transpose fills it in another order, and a
    # slice of whole leading rows starts past the storage's first element.
    vkt.vulkan.reset_fallback_stats()
    rng = np.random.default_rng(3)
    a = rng.uniform(0.999, 1.001, size=(1024, 1025)).astype(np.float32)
    if op in ("all", "any"):
        a = a > (1.0 if op == "any" else 0.9995)
    x = vkt.tensor(a, device=dev)
    if layout == "transposed":
        x, a = x.T, a.T
    elif layout == "permuted_slice":
        first = np.full((8, 1025), 5, a.dtype) if a.dtype != np.bool_ else ~a[:8]  # 8 rows outside the view
        base = np.concatenate([first, a]).reshape(1032, 25, 41)
        x, a = vkt.tensor(base, device=dev)[8:].permute(2, 0, 1), base[8:].transpose(2, 0, 1)
    dims = tuple(range(a.ndim))
    got = getattr(x, op)(dim=dims, keepdim=keepdim) if op not in ("amax", "amin") else getattr(x, op)(dims, keepdim)
    ref = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min, "all": np.all, "any": np.any}[op](a.astype(np.float64) if a.dtype != np.bool_ else a, keepdims=keepdim)
    assert got.shape == np.shape(ref)
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), np.asarray(ref).astype(np.float64), rtol=1e-5)
    assert vkt.vulkan.fallback_stats().get(op, 0) == 0


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dims", [((4096, 100), 0), ((8, 1024, 96), (0, 1)), ((2048, 64), 0), ((4099, 70), 0)])
def test_long_columns_cut_in_pieces(dev, op, keepdim, shape, dims):
    # Few outputs over long columns (a bias's gradient) are reduced on a device in pieces of rows, then the
    # pieces' results: the rows of 4099 (a prime) cannot be cut and take the one-pass kernel. A NaN in a
    # column reaches its amax and amin; a pending input keeps the one-pass kernel that reads it fused.
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape).astype(np.float32)
    a[(-3,) * (len(shape) - 1) + (5,)] = np.nan
    x, wide = vkt.tensor(a, device=dev), a.astype(np.float64)
    reference = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min}[op]
    for got, want in [(getattr(x, op)(dims, keepdim=keepdim), reference(wide, dims, keepdims=keepdim)),
                      (getattr(x * 2, op)(dims, keepdim=keepdim), reference(wide * 2, dims, keepdims=keepdim))]:
        assert got.shape == want.shape and got.dtype == vkt.float32
        np.testing.assert_allclose(to_numpy(got), want, rtol=1e-5, atol=1e-5)
    if op in ("sum", "mean"):  # the partial results in the dtype asked for
        got = getattr(x, op)(dims, keepdim=keepdim, dtype=vkt.float64)
        assert got.dtype == vkt.float64
        np.testing.assert_allclose(to_numpy(got), reference(wide, dims, keepdims=keepdim), rtol=1e-12)
