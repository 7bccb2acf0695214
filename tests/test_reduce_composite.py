# The composite reductions (logsumexp, nansum, nanmean, count_nonzero, aminmax, var_mean, std_mean, norm,
# linalg.vector_norm, linalg.matrix_norm) against torch on the CPU in float64, over shapes, layouts, dims
# (None, one, several, negative), keepdim, dtypes and NaN/inf; errors as PyTorch's.
import math

import numpy as np
import pytest

import vkt
from conftest import DTYPES, FLOAT_DTYPES, assert_close, to_numpy

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")

TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3)}
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 17), (64, 129), (2, 0, 3)]


def dims_of(shape):
    n = len(shape)
    out = [None]
    if n:
        out += [0, -1]
    if n >= 2:
        out += [(0, -1), (-1, 0)]
    return out


def layouts(a):
    yield a, lambda dev: vkt.tensor(a, device=dev)
    if a.ndim >= 2:
        yield a, lambda dev: vkt.tensor(np.ascontiguousarray(a.swapaxes(0, -1)), device=dev).transpose(0, -1)
    if a.ndim >= 1 and a.shape[-1] > 1:
        wide = np.concatenate([a, a], axis=-1)
        yield wide[..., ::2], lambda dev: vkt.tensor(wide, device=dev)[..., ::2]


def ref(fn, arr, *args, **kw):
    """torch's answer on float64 (for float inputs), cast back to the input's dtype"""
    t = torch.tensor(arr)
    if not t.dtype.is_floating_point:
        return fn(t, *args, **kw)
    r = fn(t.double(), *args, **kw)
    back = lambda v: v.to(t.dtype) if v.dtype.is_floating_point else v  # noqa: E731
    return back(r) if isinstance(r, torch.Tensor) else tuple(back(v) for v in r)


def close(got, want, dtype, n=1):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            close(g, w, dtype, n)
        return
    w = want.numpy()
    g = to_numpy(got)
    assert g.dtype == w.dtype, f"dtype {g.dtype} != {w.dtype}"
    rtol, atol = TOL.get(str(w.dtype), (0, 0))
    assert_close(g, w, rtol=rtol * max(1, math.log2(max(n, 1))), atol=atol)


# (name, vkt call(x, dim, keepdim), torch call, takes empty rows, dtypes)
OPS = [
    ("nansum", lambda x, d, k: x.nansum(d, k), lambda t, d, k: torch.nansum(t, dim=d, keepdim=k),
     True, DTYPES),
    ("nanmean", lambda x, d, k: vkt.nanmean(x, d, keepdim=k), lambda t, d, k: t.nanmean(d, k), True, FLOAT_DTYPES),
    ("logsumexp", lambda x, d, k: x.logsumexp(d if d is not None else tuple(range(x.ndim)), k),
     lambda t, d, k: torch.logsumexp(t, d if d is not None else tuple(range(t.ndim)), k), True, DTYPES),
    ("count_nonzero", lambda x, d, k: x.count_nonzero(d), lambda t, d, k: t.count_nonzero(d), True, DTYPES),
    ("var_mean", lambda x, d, k: vkt.var_mean(x, d, keepdim=k), lambda t, d, k: torch.var_mean(t, d, keepdim=k),
     True, FLOAT_DTYPES),
    ("std_mean", lambda x, d, k: vkt.std_mean(x, d, correction=0, keepdim=k),
     lambda t, d, k: torch.std_mean(t, d, correction=0, keepdim=k), True, FLOAT_DTYPES),
    ("aminmax", lambda x, d, k: x.aminmax(dim=d, keepdim=k) if d is None or isinstance(d, int) else None,
     lambda t, d, k: tuple(t.aminmax(dim=d, keepdim=k)), False, DTYPES),
    ("norm", lambda x, d, k: x.norm(dim=d, keepdim=k), lambda t, d, k: t.norm(dim=d, keepdim=k), True, FLOAT_DTYPES),
    ("vector_norm 1", lambda x, d, k: vkt.linalg.vector_norm(x, 1, d, k),
     lambda t, d, k: torch.linalg.vector_norm(t, 1, d, k), True, FLOAT_DTYPES),
    ("vector_norm 0", lambda x, d, k: vkt.linalg.vector_norm(x, 0, d, k),
     lambda t, d, k: torch.linalg.vector_norm(t, 0, d, k), True, FLOAT_DTYPES),
    ("vector_norm 3.5", lambda x, d, k: vkt.linalg.vector_norm(x, ord=3.5, dim=d, keepdim=k),
     lambda t, d, k: torch.linalg.vector_norm(t, 3.5, d, k), True, FLOAT_DTYPES),
    ("vector_norm inf", lambda x, d, k: vkt.linalg.vector_norm(x, math.inf, d, k),
     lambda t, d, k: torch.linalg.vector_norm(t, math.inf, d, k), False, FLOAT_DTYPES),
    ("vector_norm -inf", lambda x, d, k: vkt.linalg.vector_norm(x, -math.inf, d, k),
     lambda t, d, k: torch.linalg.vector_norm(t, -math.inf, d, k), False, FLOAT_DTYPES),
]
OP = {op[0]: op for op in OPS}


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype in ("uint8", "int32", "int64"):
        return rng.integers(0 if dtype == "uint8" else -5, 5, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


def run_case(op, arr, make, device):
    _, call, tcall, empty_ok, _ = OP[op]
    x = make(device)
    for d in dims_of(arr.shape):
        nred = arr.size if d is None else int(np.prod([arr.shape[i] for i in ((d,) if isinstance(d, int) else d)]))
        if not empty_ok and nred == 0:
            continue
        for k in (False, True):
            got = call(x, d, k)
            if got is None:
                continue
            close(got, ref(tcall, arr, d, k), str(arr.dtype), nred)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", list(OP))
def test_float32(op, shape, device):
    vkt.vulkan.reset_fallback_stats()
    for arr, make in layouts(data(shape, "float32")):
        run_case(op, arr, make, device)
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("op,dtype", [(op[0], dtype) for op in OPS for dtype in op[4]])
def test_dtypes(op, dtype, device):
    a = data((3, 40), dtype, seed=1)
    run_case(op, a, lambda dev: vkt.tensor(a, device=dev), device)


@pytest.mark.parametrize("op", ["nansum", "nanmean", "logsumexp", "count_nonzero", "norm", "vector_norm inf"])
def test_special_values(op, device):
    a = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [-np.inf, -np.inf, -np.inf], [np.inf, -np.inf, 1.0]])
    for dtype in FLOAT_DTYPES:
        arr = a.astype(dtype)
        close(OP[op][1](vkt.tensor(arr, device=device), 1, False), ref(OP[op][2], arr, 1, False), dtype)


def test_matrix_norm(device):
    a = data((2, 5, 4), "float32", seed=3)
    x, t = vkt.tensor(a, device=device), torch.tensor(a).double()
    for ord in ["fro", 1, -1, math.inf, -math.inf]:
        for dim in [(-2, -1), (2, 0), (1, 2)]:
            for k in (False, True):
                close(vkt.linalg.matrix_norm(x, ord, dim, k), torch.linalg.matrix_norm(t, ord, dim, k).float(),
                      "float32")
    close(vkt.linalg.matrix_norm(x.transpose(0, 2)), torch.linalg.matrix_norm(t.transpose(0, 2)).float(), "float32")
    close(vkt.linalg.matrix_norm(x, dtype=vkt.float64), torch.linalg.matrix_norm(t), "float64")


@pytest.mark.parametrize("args,kwargs", [((), {}), ((1,), {}), ((math.inf,), {}), (("fro",), {}), ((), {"dim": 1}),
                                         ((3,), {"dim": (0,)}), ((), {"dim": (0, 1), "keepdim": True}),
                                         ((-1,), {}), ((0,), {"dim": 0}), ((-math.inf,), {"dim": (1, 0)})])
def test_linalg_norm(args, kwargs, device):
    a = data((3, 4), "float32", seed=4)
    close(vkt.linalg.norm(vkt.tensor(a, device=device), *args, **kwargs),
          torch.linalg.norm(torch.tensor(a).double(), *args, **kwargs).float(), "float32")
    v = data((5,), "float32", seed=5)
    close(vkt.linalg.norm(vkt.tensor(v, device=device), 3), torch.linalg.norm(torch.tensor(v).double(), 3).float(),
          "float32")


@pytest.mark.parametrize("call", [lambda L: L.linalg.norm(L.ones(2, 2, 2), 2), lambda L: L.linalg.norm(L.ones(3), "fro"),
                                  lambda L: L.linalg.norm(L.ones(3, 3), dim=(0, 1, 2)),
                                  lambda L: L.linalg.norm(L.ones(3, 3), "fro", dim=0)])
def test_linalg_norm_errors(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(vkt)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call,error,match", [
    (lambda x: vkt.linalg.vector_norm(x.int()), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Int"),
    (lambda x: vkt.nanmean(x.long()), RuntimeError,
     "nanmean\\(\\): expected input to have floating point or complex dtype but got Long"),
    (lambda x: vkt.linalg.vector_norm(x[:0], math.inf), RuntimeError, "cannot compute the inf norm on an empty tensor"),
    (lambda x: vkt.linalg.matrix_norm(x[0]), RuntimeError, "must have at least 2 dimensions"),
    (lambda x: vkt.linalg.matrix_norm(x, "abc"), RuntimeError, "linalg.matrix_norm: Order abc not supported."),
    (lambda x: x[:, :0].aminmax(), RuntimeError, "cannot compute aminmax over an empty dimension"),
    (lambda x: x[:, :0].aminmax(dim=1), IndexError, "aminmax: Expected reduction dim 1 to have non-zero size"),
    (lambda x: x.logsumexp(), TypeError, "missing 1 required positional arguments"),
    (lambda x: x.nansum(3), IndexError, "Dimension out of range"),
])
def test_bad_arguments(call, error, match, device):
    with pytest.raises(error, match=match):
        call(vkt.ones(2, 3, device=device))


@pytest.mark.parametrize("n", [5, 33, 3000])
def test_logsumexp_rows(n, device):
    # one pass of the reduce shader: rows short and long, ±inf (an infinite max is the answer), all -inf,
    # NaN; and a whole tensor past 2^20 elements, which takes the two-stage split
    rows = np.random.default_rng(12).standard_normal((6, n)) * 30
    rows[1, 3] = np.inf
    rows[2] = -np.inf
    rows[3, [0, 2]] = [np.inf, np.inf]
    rows[4, 1] = np.nan
    rows[5, :2] = [-np.inf, np.inf]
    for dtype in FLOAT_DTYPES:
        arr = rows.astype(dtype)
        x = vkt.tensor(arr, device=device)
        close(x.logsumexp(1), ref(torch.logsumexp, arr, 1), dtype, n)
        close(x.t().logsumexp(0, keepdim=True), ref(torch.logsumexp, arr.T, 0, True), dtype, n)


def test_logsumexp_split(device):
    a = np.random.default_rng(13).standard_normal(2**21).astype(np.float32)
    vkt.vulkan.reset_fallback_stats()
    close(vkt.logsumexp(vkt.tensor(a, device=device), 0), ref(torch.logsumexp, a, 0), "float32", a.size)
    assert vkt.vulkan.fallback_stats() == {}
