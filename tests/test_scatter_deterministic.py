# The sorted scatter (csrc/ops/shape.c, shaders/scatter.comp's KEYS and SEGMENTS): with
# vkt.use_deterministic_algorithms(True), the combining scatters sort their destinations and combine each one's
# values in index order, the cpu device's order, so results repeat bit for bit and equal a sequential NumPy
# reference (np.ufunc.at, which applies its updates one by one in order) in the tensor's own dtype; they are checked
# against torch and a float64 reference too. The same path serves 8-byte elements where the adapter has no 64-bit
# atomics (VKT_NO_INT64_ATOMICS=1 here, in a subprocess), without a CPU fallback.
import zlib

import numpy as np
import pytest

import vkt
from conftest import assert_bits_equal, assert_close, run_python

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "int32", "int64", "float16"]
HOWS = ["sum", "prod", "amax", "amin", "mean"]
# op: (form, how, include_self); form says how index addresses x: "scatter" (index shaped like src, along dim),
# "index" (index_add_: a 1-D index along dim), "put" (index_put_ accumulate: a 1-D index along dim 0)
OPS = {"scatter_add": ("scatter", "sum", True), "index_add": ("index", "sum", True),
       "index_put": ("put", "sum", True)}
OPS.update({f"reduce_{how}_{'self' if s else 'noself'}": ("scatter", how, s) for how in HOWS for s in (True, False)})
GEOMETRIES = ["dup7", "strided", "empty", "0d"]
FLOAT_TOL = {"float32": 2e-3, "float64": 1e-9, "float16": 0.25}


@pytest.fixture
def deterministic():
    vkt.use_deterministic_algorithms(True)
    yield
    vkt.use_deterministic_algorithms(False)


def values(rng, shape, dtype, how):
    """Values that keep a long product finite and exact where it must be: near 1 (floats) or +-1 (integers)."""
    if how == "prod":
        v = 1 + 1e-3 * rng.standard_normal(shape) if "float" in dtype else rng.choice([-1, 1], shape)
    else:
        v = 3 * rng.standard_normal(shape) if "float" in dtype else rng.integers(-3, 4, shape)
    return np.asarray(v).astype(dtype)


def geometry(name, form, dtype, how, rng):
    """(x, dim, index, src, view): contiguous NumPy bases and the view (per library) that each operand is taken as."""
    if name == "dup7":  # 100,000 values into 7 slots (fewer for float16, whose sums would lose all precision)
        n = 2000 if dtype == "float16" else 100_000
        return values(rng, 7, dtype, how), 0, rng.integers(0, 7, n), values(rng, n, dtype, how), {}
    if name == "empty":
        return values(rng, 7, dtype, how), 0, np.zeros(0, np.int64), values(rng, 0, dtype, how), {}
    if name == "0d":
        return values(rng, (), dtype, how), 0, np.array(0), values(rng, (), dtype, how), {}
    # strided: x a transpose, src a slice with a step, index (int32) transposed or stepped
    if form == "put":
        return (values(rng, (5, 6), dtype, how), 0, rng.integers(0, 6, 18).astype(np.int32),
                values(rng, (5, 18), dtype, how), {"x": "T", "index": "step", "src": "stepT"})
    idx = rng.integers(0, 5, (9, 6) if form == "scatter" else 18).astype(np.int32)
    return (values(rng, (5, 6), dtype, how), 1, idx, values(rng, (6, 18), dtype, how),
            {"x": "T", "index": "T" if form == "scatter" else "step", "src": "step"})


VIEWS = {"T": lambda t: t.transpose(0, 1), "step": lambda t: t[..., ::2], "stepT": lambda t: t[:, ::2].transpose(0, 1)}


def operands(lib, device, g):
    x, dim, idx, src, view = g
    make = (lambda a: torch.tensor(a)) if lib is torch else (lambda a: vkt.tensor(a, device=device))
    if lib is torch:
        idx = idx.astype(np.int64)
    ts = {"x": make(x), "index": make(idx), "src": make(src)}
    return [VIEWS[view[k]](ts[k]) if k in view else ts[k] for k in ("x", "index", "src")]


def apply(op, x, dim, idx, src):
    form, how, include_self = OPS[op]
    if form == "index":
        return x.index_add_(dim, idx, src)
    if form == "put":
        return x.index_put_((idx,), src, accumulate=True)
    if op == "scatter_add":
        return x.scatter_add_(dim, idx, src)
    return x.scatter_reduce_(dim, idx, src, how, include_self=include_self)


IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}
UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def sequential(op, x, dim, idx, src, dtype):
    """The op in dtype's arithmetic on logical (contiguous) arrays, each destination's values in index order."""
    form, how, include_self = OPS[op]
    shape = x.shape
    x, idx, src = (np.atleast_1d(a) for a in (x, idx, src))
    coords = list(np.indices(idx.shape if form == "scatter" else src.shape))
    if form == "scatter":
        coords[dim] = idx
    else:
        coords[dim] = idx.reshape(-1)[coords[dim]]
    dest = np.ravel_multi_index(coords, x.shape).reshape(-1) if src.size else np.zeros(0, np.int64)
    vals = src[tuple(slice(0, s) for s in idx.shape)] if form == "scatter" else src
    out = x.astype(dtype).reshape(-1)
    if not include_self:
        ident = IDENTITY[how]
        if np.dtype(dtype).kind == "i" and np.isinf(ident):
            ident = np.iinfo(dtype).min if ident < 0 else np.iinfo(dtype).max
        out[dest] = ident
    UFUNC[how].at(out, dest, vals.reshape(-1).astype(dtype))
    if how == "mean":
        count = np.bincount(dest, minlength=out.size) + include_self
        count = np.where(count == 0, 1, count).astype(dtype)
        out = out / count if np.dtype(dtype).kind == "f" else np.floor_divide(out, count)
    return out.astype(dtype).reshape(shape)


def logical(g):
    """The operands' values as the op sees them: contiguous NumPy copies of the views."""
    return [np.asarray(t.cpu().numpy()) for t in operands(vkt, "cpu", g)]


# index_put_ takes no 0-d case (its index tensors index dims)
CASES = [(op, geom) for op in OPS for geom in GEOMETRIES if not (OPS[op][0] == "put" and geom == "0d")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,geom", CASES, ids=[f"{op}-{geom}" for op, geom in CASES])
def test_deterministic_scatters(dev, deterministic, op, dtype, geom):
    """Three runs on the device, each bit for bit the sequential reference and the cpu device's kernel; close to
    float64 and to torch (bit for bit for integers: torch's index_put_ does not add floats in index order)."""
    form, how, include_self = OPS[op]
    g = geometry(geom, form, dtype, how, np.random.default_rng(zlib.crc32(f"{op} {dtype} {geom}".encode())))
    dim = g[1]
    x, idx, src = logical(g)
    ref = sequential(op, x, dim, idx, src, dtype)
    vkt.vulkan.reset_fallback_stats()
    runs = []
    for _ in range(3):
        vx, vi, vs = operands(vkt, dev, g)
        assert apply(op, vx, dim, vi, vs) is vx
        runs.append(np.asarray(vx.cpu()))
    assert vkt.vulkan.fallback_stats() == {}
    for got in runs:
        assert_bits_equal(got, runs[0])  # every run the same bits
    if how == "mean" and "float" in dtype:  # the sums' bits, divided by the device's division (an H100's is 1 ulp off)
        np.testing.assert_array_max_ulp(runs[0], ref, maxulp=1)
    else:
        assert_bits_equal(runs[0], ref)  # the sequential order's bits
    cx, ci, cs = operands(vkt, "cpu", g)
    assert_bits_equal(np.asarray(apply(op, cx, dim, ci, cs)), ref)  # the cpu device's kernel adds in that order too
    tx, ti, ts = operands(torch, None, g)
    want = apply(op, tx, dim, ti, ts).numpy()
    if "float" in dtype:
        wide = sequential(op, x.astype(np.float64), dim, idx, src.astype(np.float64), "float64")
        assert_close(runs[0], wide, rtol=FLOAT_TOL[dtype], atol=FLOAT_TOL[dtype])
        assert_close(runs[0], want, rtol=FLOAT_TOL[dtype], atol=FLOAT_TOL[dtype])
    else:
        assert_bits_equal(runs[0], want)


BACKWARDS = {
    "gather": lambda m, w, i: m.gather(w, 0, i[:, None].expand(-1, w.shape[1])),
    "index": lambda m, w, i: w[i],
    "index_select": lambda m, w, i: m.index_select(w, 0, i),
    "embedding": lambda m, w, i: m.nn.functional.embedding(i, w),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", list(BACKWARDS))
def test_deterministic_backward(dev, deterministic, op, dtype):
    """Gathers whose backward adds the gradient's rows into 7 rows, 20,000 times each: bit for bit the cpu
    device's gradient on every run, and close to torch's."""
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((7, 3)).astype(dtype)
    idx = rng.integers(0, 7, 20_000)
    up = rng.standard_normal((20_000, 3)).astype(dtype)

    def grad(lib, device):
        make = (lambda a, **k: torch.tensor(a, **k)) if lib is torch else (
            lambda a, **k: vkt.tensor(a, device=device, **k))
        w = make(w0, requires_grad=True)
        BACKWARDS[op](lib, w, make(idx)).backward(make(up))
        return np.asarray(w.grad.cpu() if lib is vkt else w.grad)

    vkt.vulkan.reset_fallback_stats()
    runs = [grad(vkt, dev) for _ in range(3)]
    assert vkt.vulkan.fallback_stats() == {}
    ref = grad(vkt, "cpu")
    for got in runs:
        assert_bits_equal(got, ref)
    assert_close(runs[0], grad(torch, None), rtol=FLOAT_TOL[dtype], atol=FLOAT_TOL[dtype])


def test_flag_reaches_the_device(dev):
    """Off, index_add_ adds with one atomic dispatch; on, a key pass, the sort and a segment pass. The flag keeps
    torch's Python surface."""
    n = 5000
    x = vkt.zeros(7, device=dev)
    i = vkt.tensor(np.arange(n) % 7, device=dev)
    s = vkt.ones(n, device=dev)

    def dispatches():
        vkt.vulkan.synchronize()
        vkt.vulkan.reset_kernel_stats()
        x.index_add_(0, i, s)
        vkt.vulkan.synchronize()
        return vkt.vulkan.kernel_stats()["dispatches"]

    atomic = dispatches()
    vkt.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert vkt.are_deterministic_algorithms_enabled() and vkt.is_deterministic_algorithms_warn_only_enabled()
        assert dispatches() >= atomic + 2
    finally:
        vkt.use_deterministic_algorithms(False)
    assert not vkt.are_deterministic_algorithms_enabled() and dispatches() == atomic
    assert x.tolist() == (3 * np.bincount(np.arange(n) % 7)).tolist()
    with pytest.raises(TypeError):
        vkt.use_deterministic_algorithms(1)


def test_wide_scatters_without_int64_atomics(dev):
    """VKT_NO_INT64_ATOMICS=1: as on an adapter without shaderBufferInt64Atomics, float64 and int64 scatters take
    the sorted path on the device instead of the CPU: no fallback, and the cpu device's results."""
    code = """
import numpy as np, vkt
assert not vkt.vulkan.get_device_properties().int64_atomics
rng = np.random.default_rng(5)
idx = rng.integers(0, 7, 30_000)
for dtype in ("float64", "int64"):
    src = (3 * rng.standard_normal(30_000)).astype(dtype)
    got, want = [], []
    for device, out in (("vulkan", got), ("cpu", want)):
        x = vkt.zeros(7, 2, dtype=getattr(vkt, dtype), device=device)
        i, s = vkt.tensor(idx, device=device), vkt.tensor(src, device=device)
        x.index_add_(0, i, s[:, None].expand(-1, 2))
        x.index_put_((i,), s[:, None].expand(-1, 2), accumulate=True)
        x.scatter_reduce_(0, i[:, None].expand(-1, 2), s[:, None].expand(-1, 2), "amin", include_self=False)
        x.scatter_add_(0, i[:, None].expand(-1, 2), s[:, None].expand(-1, 2))
        out.append(np.asarray(x.cpu()))
    assert np.array_equal(got[0], want[0]), (got, want)
print(vkt.vulkan.fallback_stats(), vkt.vulkan.validation_messages())
"""
    r = run_python(code, env={"VKT_NO_INT64_ATOMICS": "1", "VKT_VALIDATION": "1"})
    assert r.returncode == 0 and r.stdout.strip() == "{} []", r.stdout + r.stderr
