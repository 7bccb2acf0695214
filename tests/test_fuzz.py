# Differential fuzzing against NumPy with Hypothesis: random shapes (0 and 1 sizes included), strided
# views (slices with steps, permutations, broadcast expands), dtypes and devices through elementwise
# ops, reductions, matmul, shape ops and short chains of ops. CI runs the "ci" profile (derandomized:
# a fixed seed, so the same examples every run); `make fuzz` sets VKT_FUZZ=long for a longer hunt.
import os

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import vkt
from conftest import assert_close

settings.register_profile("ci", max_examples=600, derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=10_000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = os.environ.get("VKT_FUZZ", "ci")

FLOATS = ["float32", "float64", "float16"]
INTS = ["int32", "int64", "uint8"]
ARITH = FLOATS + INTS
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (2e-3, 2e-3)}


def fuzz(test):
    """The profile's settings, read when the test is defined, so only this file's tests use it."""
    return settings(settings.get_profile(PROFILE))(test)


def devices():
    return st.sampled_from(["cpu", "vulkan"] if vkt.vulkan.is_available() else ["cpu"])


def values(rng, dtype, shape):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if dtype in INTS:
        return rng.integers(-50, 50, shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


@st.composite
def views(draw, dtype, shape, device, expand=True):
    """A (numpy array, vkt tensor) pair with the given logical shape and the same values, the tensor
    a strided view of a larger base: each dim sliced with a start and a step, dims permuted, and
    size-1 dims maybe broadcast (stride 0) to the wanted size."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim))) if ndim else []
    bshape = [shape[p] for p in np.argsort(perm)] if ndim else []  # base dims, before permuting
    broadcast = [expand and s != 1 and draw(st.booleans()) and draw(st.booleans()) for s in bshape]
    starts = [draw(st.integers(0, 2)) for _ in bshape]
    steps = [draw(st.integers(1, 3)) for _ in bshape]
    sizes = [1 if b else s for s, b in zip(bshape, broadcast)]
    full = [st_ + max(n - 1, 0) * sp + 1 + draw(st.integers(0, 1)) for st_, sp, n in zip(starts, steps, sizes)]
    base = values(rng, dtype, full)
    index = tuple(slice(a, a + n * s, s) for a, n, s in zip(starts, sizes, steps))
    a = base[index]
    t = vkt.tensor(base, device=device)[index] if ndim else vkt.tensor(base, device=device)
    if ndim:
        a, t = np.broadcast_to(a, bshape), t.expand(*bshape)
        a, t = a.transpose(perm), t.permute(*perm)
    assert a.shape == tuple(shape) and tuple(t.shape) == tuple(shape)
    return a, t


def shapes(min_dims=0, max_dims=4, max_side=5):
    return st.lists(st.integers(0, max_side), min_size=min_dims, max_size=max_dims)


def broadcast_partner(draw, shape):
    """A shape that broadcasts with shape: trailing dims kept, set to 1, or dropped from the front."""
    drop = draw(st.integers(0, len(shape)))
    return [1 if draw(st.booleans()) and draw(st.booleans()) else s for s in shape[drop:]]


def check(got, ref, dtype, scale=1.0):
    rtol, atol = TOL.get(dtype, (0, 0))
    assert_close(got, ref, rtol=rtol * scale, atol=atol * scale)


UNARY = {
    "neg": (lambda t: -t, lambda a: -a, ARITH[:-1]),
    "abs": (lambda t: t.abs(), np.abs, FLOATS + ["int32", "int64"]),
    "relu": (lambda t: t.relu(), lambda a: np.maximum(a, 0).astype(a.dtype), FLOATS + ["int32", "int64"]),
    "exp": (lambda t: t.exp(), lambda a: np.exp(a.astype(np.float64)), FLOATS),
    "tanh": (lambda t: t.tanh(), lambda a: np.tanh(a.astype(np.float64)), FLOATS),
    "sigmoid": (lambda t: t.sigmoid(), lambda a: 1 / (1 + np.exp(-a.astype(np.float64))), FLOATS),
    "square": (lambda t: t.square(), np.square, FLOATS + ["int32", "int64"]),
    "not": (lambda t: t.logical_not(), np.logical_not, ["bool"]),
}

BINARY = {
    "add": (lambda x, y: x + y, np.add, ARITH),
    "sub": (lambda x, y: x - y, np.subtract, ARITH),
    "mul": (lambda x, y: x * y, np.multiply, ARITH),
    "div": (lambda x, y: x / y, lambda a, b: a.astype(np.float64) / b, FLOATS),
    "maximum": (vkt.maximum, np.maximum, ARITH),
    "lt": (lambda x, y: x < y, np.less, ARITH),
    "eq": (lambda x, y: x == y, np.equal, ARITH + ["bool"]),
    "and": (vkt.logical_and, np.logical_and, ["bool"]),
}


@fuzz
@given(data=st.data(), shape=shapes(), device=devices(), name=st.sampled_from(sorted(UNARY)))
def test_unary(data, shape, device, name):
    op, ref, dtypes = UNARY[name]
    dtype = data.draw(st.sampled_from(dtypes))
    a, t = data.draw(views(dtype, shape, device))
    with np.errstate(all="ignore"):
        want = ref(a)
    check(op(t), want, dtype, 2 if name in ("exp", "tanh", "sigmoid") else 1)


@fuzz
@given(data=st.data(), shape=shapes(), device=devices(), name=st.sampled_from(sorted(BINARY)))
def test_binary_broadcast(data, shape, device, name):
    op, ref, dtypes = BINARY[name]
    dtype = data.draw(st.sampled_from(dtypes))
    other = broadcast_partner(data.draw, shape)
    if data.draw(st.booleans()):
        shape, other = other, shape
    a, t = data.draw(views(dtype, shape, device))
    b, u = data.draw(views(dtype, other, device))
    if name == "div":
        b = np.where(b == 0, 1, b).astype(dtype)
        u = vkt.tensor(b, device=device)
    with np.errstate(all="ignore"):
        want = ref(a, b)
    if dtype in FLOATS and want.dtype.kind == "f":
        want = want.astype(dtype)  # torch computes in the operands' dtype
    check(op(t, u), want, dtype, 2)


def test_inplace_on_strided_views():
    """x[view] += y writes through a strided view and nowhere else."""
    for device in ["cpu", "vulkan"] if vkt.vulkan.is_available() else ["cpu"]:
        base = np.arange(60, dtype=np.float32).reshape(6, 10)
        t = vkt.tensor(base, device=device)
        t[1::2, ::3].add_(vkt.ones(4, device=device))
        base[1::2, ::3] += 1
        check(t, base, "float32")


REDUCE = {
    "sum": (lambda t, d, k: t.sum(dim=d, keepdim=k), lambda a, d, k: np.sum(a, axis=d, keepdims=k), ARITH, True),
    "mean": (lambda t, d, k: t.mean(dim=d, keepdim=k), lambda a, d, k: np.mean(a, axis=d, keepdims=k), FLOATS,
             False),
    "amax": (lambda t, d, k: t.amax(dim=d, keepdim=k), lambda a, d, k: np.amax(a, axis=d, keepdims=k), ARITH,
             False),
    "amin": (lambda t, d, k: t.amin(dim=d, keepdim=k), lambda a, d, k: np.amin(a, axis=d, keepdims=k), ARITH,
             False),
    "argmax": (lambda t, d, k: t.argmax(dim=d, keepdim=k), lambda a, d, k: np.argmax(a, axis=d, keepdims=k),
               ["float32", "float64", "int32", "int64"], False),
    "softmax": (lambda t, d, k: t.softmax(dim=d), lambda a, d, k: softmax(a, d), FLOATS, True),
    "log_softmax": (lambda t, d, k: t.log_softmax(dim=d), lambda a, d, k: np.log(softmax(a, d)),
                    ["float32", "float64"], True),
}


def softmax(a, d):
    a = a.astype(np.float64)
    e = np.exp(a - a.max(axis=d, keepdims=True)) if a.size else a
    return e / e.sum(axis=d, keepdims=True)


@fuzz
@given(data=st.data(), shape=shapes(max_dims=4, max_side=6), device=devices(), name=st.sampled_from(sorted(REDUCE)))
def test_reduction(data, shape, device, name):
    op, ref, dtypes, empty_ok = REDUCE[name]
    dtype = data.draw(st.sampled_from(dtypes))
    a, t = data.draw(views(dtype, shape, device))
    one_dim = name in ("argmax", "softmax", "log_softmax")
    if not shape:
        dim = None if not one_dim else 0
    else:
        dim = data.draw(st.integers(-len(shape), len(shape) - 1) if one_dim else
                        st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    if name == "argmax" and dim is not None and shape and shape[dim] == 0:
        return
    if not empty_ok:
        reduced = a.size if dim is None else (shape[dim] if shape else 1)
        assume(reduced > 0)
    keep = data.draw(st.booleans())
    if name == "argmax" and a.dtype.kind == "f":
        a = np.round(a, 0)  # many ties: both must pick the first
        t = vkt.tensor(np.array(a), device=device)
    with np.errstate(all="ignore"):
        want = ref(a, dim if shape else None, keep)
    got = op(t, dim, keep)
    if name == "mean" and a.size == 0:
        want = np.full(want.shape, np.nan)
    n = a.size if dim is None or not shape else shape[dim]
    if dtype in FLOATS:
        want = np.asarray(want).astype(np.float64)
    check(got, want, dtype, max(4.0, float(n)))


@fuzz
@given(data=st.data(), device=devices(), dtype=st.sampled_from(["float32", "float64"]))
def test_matmul(data, device, dtype):
    n, k, m = (data.draw(st.integers(0, 9)) for _ in range(3))
    batch = data.draw(st.lists(st.integers(0, 3), max_size=2))
    kind = data.draw(st.sampled_from(["@", "mm", "bmm", "linear", "matmul_add_relu", "vec"]))
    if kind in ("mm", "linear", "matmul_add_relu"):
        batch = []
    if kind == "bmm":
        batch = batch[:1] or [2]
    a, x = data.draw(views(dtype, batch + [n, k], device))
    if kind == "vec":
        b, y = data.draw(views(dtype, [k], device))
        if data.draw(st.booleans()):
            got, want = x @ y, a.astype(np.float64) @ b
        else:
            got, want = y @ x.mT, b @ np.swapaxes(a, -1, -2).astype(np.float64)
    elif kind == "linear":
        b, y = data.draw(views(dtype, [m, k], device))
        c, z = data.draw(views(dtype, [m], device))
        got, want = vkt.nn.functional.linear(x, y, z), a.astype(np.float64) @ b.T + c
    else:
        b, y = data.draw(views(dtype, (batch if kind == "bmm" else []) + [k, m], device))
        want = a.astype(np.float64) @ b
        if kind == "matmul_add_relu":
            c, z = data.draw(views(dtype, [m], device))
            got, want = vkt.matmul_add_relu(x, y, z), np.maximum(want + c, 0)
        else:
            got = {"@": lambda: x @ y, "mm": lambda: vkt.mm(x, y), "bmm": lambda: vkt.bmm(x, y)}[kind]()
    check(got, want, dtype, 4 * max(k, 1))


@fuzz
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3), device=devices(),
       dtype=st.sampled_from(ARITH + ["bool"]),
       name=st.sampled_from(["cat", "stack", "gather", "index_select", "tril", "triu", "masked_fill",
                             "setitem", "flip", "roll", "where"]))
def test_shape_op(data, shape, device, dtype, name):
    a, t = data.draw(views(dtype, shape, device))
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    if name in ("cat", "stack"):
        other = list(shape)
        if name == "cat":
            other[dim] = data.draw(st.integers(0, 4))
        b, u = data.draw(views(dtype, other, device))
        if name == "cat":
            got, want = vkt.cat([t, u, t], dim=dim), np.concatenate([a, b, a], axis=dim)
        else:
            sdim = data.draw(st.integers(-nd - 1, nd))
            got, want = vkt.stack([t, u], dim=sdim), np.stack([a, b], axis=sdim)
    elif name == "gather":
        assume(shape[dim] > 0)
        ishape = [data.draw(st.integers(0, s)) for s in shape]
        ishape[dim] = data.draw(st.integers(0, 4))
        idx = rng.integers(0, shape[dim], ishape)
        part = a[tuple(slice(None) if i == dim % nd else slice(0, n) for i, n in enumerate(ishape))]
        got, want = vkt.gather(t, dim, vkt.tensor(idx, device=device)), np.take_along_axis(part, idx, axis=dim)
    elif name == "index_select":
        assume(shape[dim] > 0)
        idx = rng.integers(0, shape[dim], data.draw(st.integers(0, 5)))
        got, want = vkt.index_select(t, dim, vkt.tensor(idx, device=device)), np.take(a, idx, axis=dim)
    elif name in ("tril", "triu"):
        assume(nd >= 2)
        k = data.draw(st.integers(-3, 3))
        got, want = getattr(vkt, name)(t, k), getattr(np, name)(a, k)
    elif name == "masked_fill":
        mask = rng.random(broadcast_partner(data.draw, shape)) < 0.5
        got, want = t.masked_fill(vkt.tensor(mask, device=device), 1), np.where(mask, np.array(1).astype(a.dtype), a)
    elif name == "setitem":
        assume(shape[0] > 0)
        c = t.clone()  # t may be a broadcast view, which PyTorch (and vkt) refuse to write into
        a = a.copy()
        rows = slice(data.draw(st.integers(0, shape[0] - 1)), None, data.draw(st.integers(1, 3)))
        v = values(rng, dtype, a[rows].shape)
        c[rows] = vkt.tensor(v, device=device)
        a[rows] = v
        got, want = c, a
    elif name == "flip":
        got, want = t.flip(dim), np.flip(a, dim)
    elif name == "roll":
        s = data.draw(st.integers(-7, 7))
        got, want = t.roll(s, dim), np.roll(a, s, axis=dim)
    else:
        cond = rng.random(broadcast_partner(data.draw, shape)) < 0.5
        b, u = data.draw(views(dtype, shape, device))
        got, want = vkt.where(vkt.tensor(cond, device=device), t, u), np.where(cond, a, b)
    assert got.dtype == t.dtype
    check(got, want, dtype)


CHAIN = [
    ("add_self", lambda t: t + t, lambda a: a + a),
    ("scale", lambda t: t * 0.5 - 1.0, lambda a: a * 0.5 - 1.0),
    ("tanh", lambda t: t.tanh(), np.tanh),
    ("relu", lambda t: t.relu(), lambda a: np.maximum(a, 0)),
    ("transpose", lambda t: t.mT, lambda a: np.swapaxes(a, -1, -2)),
    ("gram", lambda t: t @ t.mT, lambda a: a @ np.swapaxes(a, -1, -2)),
    ("softmax", lambda t: t.softmax(dim=-1), lambda a: softmax(a, -1)),
    ("row_sum", lambda t: t.sum(dim=-1, keepdim=True) + t, lambda a: a.sum(axis=-1, keepdims=True) + a),
    ("col_slice", lambda t: t[..., ::2], lambda a: a[..., ::2]),
    ("cat", lambda t: vkt.cat([t, t * 2.0], dim=-1), lambda a: np.concatenate([a, a * 2], axis=-1)),
    ("flip", lambda t: t.flip(-1), lambda a: np.flip(a, -1)),
]


@fuzz
@given(data=st.data(), device=devices(), dtype=st.sampled_from(["float32", "float64"]),
       shape=shapes(min_dims=2, max_dims=3, max_side=6),
       steps=st.lists(st.sampled_from(range(len(CHAIN))), min_size=2, max_size=5))
def test_chain(data, device, dtype, shape, steps):
    """A short chain of ops, recorded back to back on the device, read once at the end."""
    a, t = data.draw(views(dtype, shape, device))
    want = a.astype(np.float64)
    for i in steps:
        _, op, ref = CHAIN[i]
        t, want = op(t), ref(want)
    check(t, want.astype(dtype).astype(np.float64), dtype, 64)

