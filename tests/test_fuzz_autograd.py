# Differential fuzzing of autograd against torch with Hypothesis: random small programs over leaves that require
# grad (float32, float64; contiguous or strided; 0-d and empty shapes too) built from a table of ops (elementwise,
# reductions, matmul, views, shape ops, indexing, in-place ops on non-leaves and their views, retain_grad, detach).
# Each program runs in vkt and in torch from the same float64 data: forward values, every leaf's and retained
# .grad, dtypes and shapes must agree, and where torch raises, vkt must raise the same exception type. A subset
# also takes a create_graph double backward. CI runs the "ci" profile (derandomized); VKT_FUZZ=long hunts longer.
import os
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import vkt
from conftest import assert_close

settings.register_profile("ci", max_examples=300, derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=5_000, deadline=None, print_blob=True, report_multiple_bugs=False,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = os.environ.get("VKT_FUZZ", "ci")
DEVICES = ["cpu", "vulkan"] if vkt.vulkan.is_available() else ["cpu"]
TOL = {"float32": 2e-4, "float64": 1e-9}
STEPS = 10 if PROFILE == "long" else 6  # ops per program


def fuzz(test):
    return settings(settings.get_profile(PROFILE))(test)


class Lib:
    """torch or vkt behind one face, so each op of the table is written once: lib.m is the module,
    lib.tensor makes a tensor (on the device under test for vkt) from a NumPy array."""

    def __init__(self, m, device):
        self.m, self.device = m, device

    def tensor(self, a, dtype=None, requires_grad=False):
        a = np.asarray(a)
        dt = getattr(self.m, dtype or a.dtype.name)
        if self.m is torch:
            return torch.tensor(a, dtype=dt, requires_grad=requires_grad)
        return vkt.tensor(a, dtype=dt, device=self.device, requires_grad=requires_grad)

    def __getattr__(self, name):
        return getattr(self.m, name)


class Pool:
    """The values of a program, each as a (torch, vkt) pair; ops read and append them by index."""

    def __init__(self, draw, libs, ties):
        self.draw, self.libs, self.ties = draw, libs, ties
        self.vals = {"torch": [], "vkt": []}
        self.leaves = []  # indices of the values that are leaves requiring grad
        self.frozen = []  # torch values whose memory no in-place op may write (see gather)
        self.freeze_outputs = False  # set by an op's builder: its outputs join frozen

    def t(self, i):
        return self.vals["torch"][i]

    def tol(self):
        """float32's tolerance wherever a float32 value took part: a float64 result of float32 operands differs
        by where each library rounds (torch's pow backward takes log of a float32 base in float32, vkt in float64)."""
        return max(TOL[dtname(x)] for x in self.vals["torch"] if x.dtype.is_floating_point)

    def floats(self, pred=lambda x: True):
        return [i for i, x in enumerate(self.vals["torch"]) if x.dtype.is_floating_point and pred(x)]

    def pick(self, pred=lambda x: True):
        cands = self.floats(pred)
        return self.draw(st.sampled_from(cands)) if cands else None

    def data(self, shape):
        rng = np.random.default_rng(self.draw(st.integers(0, 2**32 - 1)))
        if self.ties:  # quarter-integers: exact in both dtypes, so ties and zeros at kinks are common
            return rng.integers(-6, 7, shape) / 4.0
        return rng.standard_normal(shape)

    def leaf(self, shape, dtype=None, grad=True):
        """A new leaf of this shape, maybe a strided view of a larger base (a transposed or stepped slice)."""
        dtype = dtype or self.draw(st.sampled_from(["float32", "float64"]))
        layout = self.draw(st.sampled_from(["contiguous", "transposed", "stepped"])) if shape else "contiguous"
        if layout == "transposed" and len(shape) >= 2:
            base = self.data(shape[:-2] + [shape[-1], shape[-2]])
            make = lambda lib: lib.tensor(base, dtype).transpose(-1, -2)
        elif layout == "stepped":
            base = self.data(shape[:-1] + [2 * shape[-1] + 1])
            make = lambda lib: lib.tensor(base, dtype)[..., 1::2]
        else:
            base = self.data(shape)
            make = lambda lib: lib.tensor(base, dtype)
        for name, lib in self.libs.items():
            x = make(lib)
            self.vals[name].append(x.requires_grad_() if grad else x)
        if grad:
            self.leaves.append(len(self.vals["torch"]) - 1)
        return len(self.vals["torch"]) - 1


def dtname(x):
    """A tensor's dtype by name, the same for torch and vkt: "float32"."""
    return str(x.dtype).split(".")[-1]


def shares(a, b):
    """Whether torch tensors a and b view the same (non-empty) memory."""
    return a.numel() > 0 and b.numel() > 0 and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def bshape(draw, shape):
    """A shape that broadcasts with shape: trailing dims kept or set to 1, leading ones maybe dropped."""
    drop = draw(st.integers(0, len(shape)))
    return [1 if draw(st.integers(0, 3)) == 0 else s for s in shape[drop:]]


def dim_of(draw, x, extra=0):
    n = max(x.dim(), 1) + extra
    return draw(st.integers(-n, n - 1))


# ---- the op table: each builder draws its operands (pool indices) and parameters from the torch-side values and
# returns (indices, fn) with fn(lib, *tensors) -> tensor or tuple of tensors, or None where it does not apply.

def unary(draw, p):
    name = draw(st.sampled_from(sorted(UNARY)))
    i = p.pick()
    if name in ("pow_zero", "rpow"):
        # PyTorch saves x for x ** 0 and 2 ** x, and refuses a later write to it; vkt's backward needs no x there
        p.frozen.append(p.t(i))
    return [i], UNARY[name]


def partner(draw, p, x):
    """An operand that broadcasts with x: a value of the pool when one fits, else a new leaf or constant."""
    shape = list(x.shape)
    fits = p.floats(lambda y: _broadcasts(list(y.shape), shape))
    if fits and draw(st.booleans()):
        return draw(st.sampled_from(fits))
    return p.leaf(bshape(draw, shape), grad=draw(st.integers(0, 3)) > 0)


def _broadcasts(a, b):
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


def binary(draw, p):
    name = draw(st.sampled_from(sorted(BINARY)))
    i = p.pick()
    j = partner(draw, p, p.t(i))
    idx = [j, i] if draw(st.booleans()) else [i, j]
    if name == "pow" and not p.t(idx[1]).requires_grad:
        # PyTorch saves x ** y's result even where y needs no gradient, and refuses a later write to it; vkt
        # saves only what the gradients it computes read
        p.freeze_outputs = True
    return idx, BINARY[name]


def positive(x):
    return x * x + 0.5


UNARY = {
    "neg": lambda L, x: -x,
    "exp": lambda L, x: (x * 0.5).exp(),
    "tanh": lambda L, x: x.tanh(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "sin": lambda L, x: x.sin(),
    "square": lambda L, x: x.square(),
    "sqrt": lambda L, x: positive(x).sqrt(),
    "log": lambda L, x: positive(x).log(),
    "rsqrt": lambda L, x: positive(x).rsqrt(),
    "reciprocal": lambda L, x: positive(x).reciprocal(),
    "relu": lambda L, x: x.relu(),
    "abs": lambda L, x: x.abs(),
    "sign": lambda L, x: x.sign(),
    "floor": lambda L, x: x.floor(),
    "gelu": lambda L, x: L.nn.functional.gelu(x),
    "softplus": lambda L, x: L.nn.functional.softplus(x),
    "silu": lambda L, x: L.nn.functional.silu(x),
    "leaky_relu": lambda L, x: L.nn.functional.leaky_relu(x, 0.1),
    "elu": lambda L, x: L.nn.functional.elu(x),
    "scalar_ops": lambda L, x: 1.5 - x * 2.0 / 3.0,
    "rpow": lambda L, x: (2.0 ** x).contiguous(),  # PyTorch's 2 ** x alone is row-major whatever x's layout
    "pow_scalar": lambda L, x: x ** 2,
    "pow_frac": lambda L, x: positive(x) ** 1.5,
    "pow_zero": lambda L, x: x ** 0,
    "clone": lambda L, x: x.clone(),
    "contiguous": lambda L, x: x.contiguous(),
    "to_other_dtype": lambda L, x: x.to(L.float64 if x.dtype == L.float32 else L.float32),
    "detach": lambda L, x: x.detach(),
    "detach_leaf": lambda L, x: x.detach().requires_grad_(),
}

BINARY = {
    "add": lambda L, x, y: x + y,
    "sub": lambda L, x, y: x - y,
    "mul": lambda L, x, y: x * y,
    "div": lambda L, x, y: x / positive(y),
    "maximum": lambda L, x, y: L.maximum(x, y),
    "minimum": lambda L, x, y: L.minimum(x, y),
    "pow": lambda L, x, y: positive(x) ** y,
    "atan2": lambda L, x, y: L.atan2(x, positive(y)),
    "where": lambda L, x, y: L.where(x > y, x, y),
    "where_self": lambda L, x, y: L.where(y > 0, x, 0.5),
    "clamp_tensor": lambda L, x, y: x.clamp(min=y),
    "add_alpha": lambda L, x, y: L.add(x, y, alpha=-2.0),
    "lerp": lambda L, x, y: L.lerp(x, y, 0.25),
}


def clamp(draw, p):
    lo = draw(st.sampled_from([None, -1.0, -0.5, 0.0]))
    hi = draw(st.sampled_from([None, 0.5, 1.0] if lo is not None else [0.5, 1.0]))
    return [p.pick()], lambda L, x: x.clamp(lo, hi)


def self_binary(draw, p):
    """Both operands the same value: maximum(x, x) and friends, whose gradients split at the tie."""
    f = draw(st.sampled_from(["maximum", "minimum", "mul", "sub", "where"]))
    i = p.pick()
    return [i, i], BINARY[f]


def reduction(draw, p):
    name = draw(st.sampled_from(["sum", "mean", "prod", "amax", "amin", "max_dim", "min_dim", "max_all", "var",
                                 "std", "softmax", "log_softmax", "logsumexp", "cumsum", "cumprod", "norm",
                                 "sum_dims", "mean_all", "sum_all", "prod_all"]))
    i = p.pick()
    x = p.t(i)
    keep = draw(st.booleans())
    d = dim_of(draw, x)
    if name in ("mean", "var", "std", "logsumexp", "norm", "mean_all") and (x.dim() and x.shape[d] == 0 or
                                                                           x.numel() == 0):
        return None  # NaN (or -inf) over nothing: NaN gradients, whose spread the libraries need not share
    if name in ("sum", "mean", "prod"):
        return [i], lambda L, x: getattr(x, name)(d, keepdim=keep)
    if name in ("amax", "amin"):
        return [i], lambda L, x: getattr(x, name)(d, keepdim=keep)
    if name in ("max_dim", "min_dim"):
        f = name[:3]
        return [i], lambda L, x: tuple(getattr(x, f)(d, keepdim=keep))
    if name == "max_all":
        return [i], lambda L, x: x.max()
    if name in ("var", "std"):
        # correction 1 only where more than one element is reduced: a NaN gradient into amax(dim) gives NaN to
        # every element in PyTorch (mask * grad), to the maxima only in vkt, as PyTorch's max() does
        corr = draw(st.sampled_from([0, 1])) if x.dim() and x.shape[d] > 1 else 0
        return [i], lambda L, x: getattr(x, name)(d, correction=corr, keepdim=keep)
    if name in ("softmax", "log_softmax", "cumsum", "cumprod"):
        return [i], lambda L, x: getattr(x, name)(d)
    if name == "logsumexp":
        return [i], lambda L, x: x.logsumexp(d, keepdim=keep)
    if name == "norm":
        return [i], lambda L, x: x.norm(dim=d, keepdim=keep)
    if name == "sum_dims":
        if x.dim() < 2:
            return None
        dims = draw(st.lists(st.integers(0, x.dim() - 1), min_size=1, max_size=x.dim(), unique=True))
        return [i], lambda L, x: x.sum(dims, keepdim=keep)
    f = name.split("_")[0]
    return [i], lambda L, x: getattr(x, f)()


def matmul(draw, p):
    i = p.pick(lambda x: x.dim() >= 1)
    if i is None:
        return None
    x = p.t(i)
    left = draw(st.booleans())
    k = x.shape[-1] if left else x.shape[0] if x.dim() == 1 else x.shape[-2]
    rank = draw(st.integers(1, 3))
    if rank == 1:
        shape = [k]
    else:
        m = draw(st.integers(0, 3))
        batch = bshape(draw, list(x.shape[:-2]))[:rank - 2] if rank > 2 else []
        shape = batch + ([k, m] if left else [m, k])
    j = p.leaf(shape, dtype=dtname(x), grad=draw(st.integers(0, 3)) > 0)
    if x.dim() != 2 or rank != 2:
        # PyTorch's matmul folds batches and vectors through reshapes, which may copy: its node then saves the
        # copy and a later write to x goes unseen, where vkt (saving x itself) refuses it
        p.frozen.append(x)
    return ([i, j] if left else [j, i]), lambda L, a, b: a @ b


def broadcast(x):
    return x.numel() > 0 and any(s == 0 and n > 1 for s, n in zip(x.stride(), x.shape))


def views(draw, p):
    i = p.pick()
    x = p.t(i)
    nd, shape = x.dim(), list(x.shape)
    name = draw(st.sampled_from(["view_flat", "reshape", "transpose", "permute", "expand", "squeeze", "unsqueeze",
                                 "slice", "select", "narrow", "unbind", "split", "chunk", "diagonal", "mT",
                                 "flatten", "movedim", "as_strided", "view_split"]))
    d = dim_of(draw, x)
    if broadcast(x) and name not in ("view_flat", "reshape", "view_split", "flatten", "unsqueeze", "squeeze",
                                     "transpose", "movedim", "permute", "mT", "expand", "as_strided"):
        return None  # vkt refuses the gradient of a slicing view of a broadcast tensor (its documented error)
    if name == "view_flat":
        return [i], lambda L, x: x.view(-1)
    if name == "reshape":
        return [i], lambda L, x: x.reshape(list(reversed(shape)) if nd > 1 else [-1])
    if name == "view_split":
        if nd == 0 or shape[d] % 2:
            return None
        new = shape[:d % nd] + [2, shape[d] // 2] + shape[d % nd + 1:]
        return [i], lambda L, x: x.view(new)
    if name == "flatten":
        return [i], lambda L, x: x.flatten()
    if name == "unsqueeze":
        e = dim_of(draw, x, extra=1) if nd else draw(st.integers(-1, 0))
        return [i], lambda L, x: x.unsqueeze(e)
    if name == "squeeze":
        return [i], (lambda L, x: x.squeeze(d)) if draw(st.booleans()) else (lambda L, x: x.squeeze())
    if nd == 0:
        return None
    if name in ("transpose", "movedim"):
        e = dim_of(draw, x)
        return [i], lambda L, x: getattr(x, name)(d, e)
    if name == "permute":
        perm = draw(st.permutations(range(nd)))
        return [i], lambda L, x: x.permute(*perm)
    if name == "mT":
        return ([i], lambda L, x: x.mT) if nd >= 2 else None
    if name == "expand":
        new = [draw(st.integers(0, 3)) if s == 1 else s for s in shape]
        lead = [draw(st.integers(1, 2))] if draw(st.booleans()) else []
        return [i], lambda L, x: x.expand(*(lead + new))
    if name == "slice":
        n = shape[d]
        a, b, s = draw(st.integers(0, n)), draw(st.integers(0, n + 1)), draw(st.integers(1, 3))
        idx = (slice(None),) * (d % nd) + (slice(a, b, s),)
        return [i], lambda L, x: x[idx]
    if name in ("select", "narrow"):
        n = shape[d]
        if n == 0:
            return None
        a = draw(st.integers(0, n - 1))
        if name == "select":
            a -= n * draw(st.booleans())
            return [i], lambda L, x: x.select(d, a)
        ln = draw(st.integers(0, n - a))
        return [i], lambda L, x: x.narrow(d, a, ln)
    if name == "unbind":
        return ([i], lambda L, x: tuple(x.unbind(d))) if shape[d] <= 4 else None
    if name in ("split", "chunk"):
        s = draw(st.integers(1, 3))
        return [i], lambda L, x: tuple(getattr(x, name)(s, d))
    if name == "diagonal":
        if nd < 2:
            return None
        off, e = draw(st.integers(-2, 2)), dim_of(draw, x)
        return [i], lambda L, x: x.diagonal(off, d, e)
    # as_strided over a contiguous copy: where windows overlap, the gradient sums
    n = x.numel()
    if n == 0:
        return None
    size = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 2)))]
    stride = [draw(st.integers(1, 2)) for _ in size]  # stride 0: vkt refuses that gradient (its documented error)
    off = draw(st.integers(0, n - 1))
    if off + sum((a - 1) * b for a, b in zip(size, stride)) >= n:
        return None
    return [i], lambda L, x: x.contiguous().as_strided(size, stride, off)


def shape_ops(draw, p):
    name = draw(st.sampled_from(["cat", "stack", "flip", "roll", "tril", "triu", "gather", "index_select",
                                 "masked_fill", "index_read", "bool_index", "setitem", "setitem_scalar",
                                 "repeat", "scatter_add", "index_put_acc"]))
    i = p.pick()
    x = p.t(i)
    nd, shape = x.dim(), list(x.shape)
    d = dim_of(draw, x)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if name == "masked_fill":
        mask = rng.random(bshape(draw, shape)) < 0.5
        return [i], lambda L, x: x.masked_fill(L.tensor(mask), -0.75)
    if name == "bool_index":
        mask = rng.random(shape) < 0.5
        return [i], lambda L, x: x[L.tensor(mask)]
    if name == "repeat":
        reps = [draw(st.integers(1, 2)) for _ in range(max(nd + draw(st.integers(0, 1)), 1))]
        return [i], lambda L, x: x.repeat(*reps)
    if name == "setitem_scalar":
        if nd == 0:
            return None
        return [i], lambda L, x: _set(x * 1, (slice(None, None, 2),), 0.5)
    if nd == 0:
        return None
    n = shape[d]
    if name in ("cat", "stack"):
        other = list(shape)
        if name == "cat":
            other[d] = draw(st.integers(0, 3))
        fits = p.floats(lambda y: list(y.shape) == other)
        j = draw(st.sampled_from(fits)) if fits and draw(st.booleans()) else p.leaf(other)
        if name == "cat":
            return [i, j], lambda L, x, y: L.cat([x, y, x], d)
        e = dim_of(draw, x, extra=1)
        return [i, j], lambda L, x, y: L.stack([x, y], e)
    if name == "flip":
        return [i], lambda L, x: x.flip(d)
    if name == "roll":
        s = draw(st.integers(-5, 5))
        return [i], lambda L, x: x.roll(s, d)
    if name in ("tril", "triu"):
        k = draw(st.integers(-2, 2))
        return ([i], lambda L, x: getattr(x, name)(k)) if nd >= 2 else None
    if n == 0:
        return None
    if name == "gather":
        ishape = [draw(st.integers(0, s)) for s in shape]
        ishape[d] = draw(st.integers(0, 4))
        idx = rng.integers(0, n, ishape)
        p.frozen.append(x)  # PyTorch's gather saves all of self (for its shape), so refuses a later write to it
        return [i], lambda L, x: x.gather(d, L.tensor(idx))
    if name == "index_select":
        idx = rng.integers(0, n, draw(st.integers(0, 5)))
        return [i], lambda L, x: x.index_select(d, L.tensor(idx))
    if name == "index_read":
        idx = rng.integers(-n, n, draw(st.lists(st.integers(0, 3), max_size=2)))
        return [i], lambda L, x: x[(slice(None),) * (d % nd) + (L.tensor(idx),)]
    if name == "scatter_add":
        idx = rng.integers(0, n, shape)
        j = partner_same(draw, p, shape)
        return [i, j], lambda L, x, y: x.scatter_add(d, L.tensor(idx), y)
    if name == "index_put_acc":
        idx = rng.integers(0, n, draw(st.integers(0, 4)))
        vshape = shape[:d % nd] + [len(idx)] + shape[d % nd + 1:]
        j = p.leaf(vshape, dtype=dtname(x))
        return [i, j], lambda L, x, y: x.index_add(d, L.tensor(idx), y)
    # setitem on a non-leaf copy: y = x * 1; y[rows] = v
    a, s = draw(st.integers(0, n - 1)), draw(st.integers(1, 3))
    idx = (slice(None),) * (d % nd) + (slice(a, None, s),)
    vshape = bshape(draw, list(x[idx].shape))
    j = p.leaf(vshape, dtype=dtname(x), grad=draw(st.booleans()))
    return [i, j], lambda L, x, y: _set(x * 1, idx, y)


def partner_same(draw, p, shape):
    fits = p.floats(lambda y: list(y.shape) == shape)
    return draw(st.sampled_from(fits)) if fits and draw(st.booleans()) else p.leaf(shape)


def _set(x, idx, v):
    x[idx] = v
    return x


def inplace(draw, p):
    """An in-place op on a value of the pool (a non-leaf, a leaf or a view of one: torch decides whether that is
    allowed) or on a view of it; the op's result is the value itself, written through."""
    name = draw(st.sampled_from(["add_", "mul_", "sub_", "div_", "clamp_", "relu_", "copy_", "zero_", "fill_",
                                 "index_add_", "exp_", "sigmoid_", "tanh_", "masked_fill_", "neg_", "pow_",
                                 "addcmul_"]))
    i = p.pick()
    x = p.t(i)
    if any(shares(x, f) for f in p.frozen):
        return None
    view = draw(st.sampled_from(["self", "self", "slice", "transpose", "diagonal", "select"]))
    nd, shape = x.dim(), list(x.shape)
    if view == "slice" and nd and shape[0]:
        a = draw(st.integers(0, shape[0] - 1))
        get = lambda x: x[a::2]
    elif view == "transpose" and nd >= 2:
        get = lambda x: x.transpose(0, -1)
    elif view == "diagonal" and nd >= 2:
        get = lambda x: x.diagonal()
    elif view == "select" and nd and shape[0]:
        get = lambda x: x[0]
    else:
        get = lambda x: x
    v = get(x)
    vshape = list(v.shape)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if name in ("add_", "mul_", "sub_", "div_", "copy_", "addcmul_"):
        j = partner(draw, p, v) if draw(st.booleans()) else None
        if j is not None and shares(p.t(j), x):
            # an operand sharing the written tensor's memory, where vkt deliberately differs from PyTorch: x.mul_(x)
            # keeps a copy of each saved operand the write overwrites (as PyTorch keeps the original self), so
            # its backward gives the true gradient where PyTorch's refuses; and x.t().add_(x) or x.copy_(x.t())
            # read the operand before writing (as t[...] = s does; test_inplace_overlap_reads_first), where
            # PyTorch refuses a partial overlap
            return None

        def run(L, x, *y):
            w = get(x)
            o = y[0] if y else 0.5
            if name == "div_":
                o = positive(o) if y else 2.0
            if name == "copy_" and not y:
                o = L.tensor(np.full(vshape, 0.25), dtype=dtname(x))
            if name == "addcmul_":
                w.addcmul_(o if y else L.tensor(np.array(0.5), dtname(x)), L.tensor(np.full(vshape, -1.5), dtname(x)),
                           value=0.5)
            else:
                getattr(w, name)(o)
            return x
        return ([i, j] if j is not None else [i]), run
    if name == "index_add_":
        if not vshape:
            return None
        idx = rng.integers(0, vshape[0], draw(st.integers(0, 3))) if vshape[0] else np.zeros(0, np.int64)
        j = p.leaf([len(idx)] + vshape[1:], dtype=dtname(x))
        return [i, j], lambda L, x, y: (get(x).index_add_(0, L.tensor(idx), y), x)[1]
    if name == "masked_fill_":
        mask = rng.random(vshape) < 0.5
        return [i], lambda L, x: (get(x).masked_fill_(L.tensor(mask), 1.25), x)[1]
    args = {"clamp_": (-0.5, 0.75), "fill_": (0.5,), "pow_": (2,)}.get(name, ())
    return [i], lambda L, x: (getattr(get(x), name)(*args), x)[1]


def retain(draw, p):
    i = p.pick(lambda x: x.requires_grad and not x.is_leaf)
    return None if i is None else ([i], lambda L, x: (x.retain_grad(), x)[1])


OPS = {
    "unary": unary,
    "binary": binary,
    "self_binary": self_binary,
    "clamp": clamp,
    "reduction": reduction,
    "matmul": matmul,
    "view": views,
    "shape": shape_ops,
    "inplace": inplace,
    "retain": retain,
}
# ops whose vkt backward is itself differentiable, for the create_graph variant
SMOOTH = ["unary", "binary", "reduction", "matmul", "view", "shape", "clamp"]


def shapes(max_dims=3, max_side=4):
    """Up to max_dims sides; a side is 0 about one time in 17, so empty tensors come but do not dominate."""
    return st.lists(st.sampled_from(list(range(1, max_side + 1)) * 4 + [0]), max_size=max_dims)


def outcome(fn, *args):
    """fn(*args) as a tuple of results, or the exception it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(*args)
        return tuple(r) if isinstance(r, (tuple, list)) else (r,)
    except Exception as e:  # noqa: BLE001  the exception is compared
        return e


def run_both(fn, args):
    """fn on the torch values, then on the vkt ones: (torch result, vkt result) or the exceptions they raised."""
    return outcome(fn, "torch", args["torch"]), outcome(fn, "vkt", args["vkt"])


def same_outcome(t, v, what):
    if isinstance(t, Exception):
        assert isinstance(v, Exception), f"{what}: torch raised {type(t).__name__}: {t}; vkt did not"
        assert type(v).__name__ == type(t).__name__, f"{what}: torch raised {t!r}, vkt raised {v!r}"
        return False
    if isinstance(v, Exception):
        raise AssertionError(f"{what}: vkt raised {v!r}, torch did not") from v
    return True


def compare(v, t, what, tol=None):
    """v (vkt) against t (torch): None where torch's is None, the same shape and dtype, values within tol (the
    dtype's own by default) relative to the larger of 1 and t's largest magnitude."""
    if t is None:
        assert v is None, f"{what}: torch gives None, vkt a tensor"
        return
    assert v is not None, f"{what}: vkt gives None, torch a tensor"
    assert tuple(v.shape) == tuple(t.shape), f"{what}: shape {tuple(v.shape)} != {tuple(t.shape)}"
    assert dtname(v) == dtname(t), f"{what}: dtype {v.dtype} != {t.dtype}"
    # a double backward's ZeroTensor as plain zeros (torch's own numpy(force=True) of one can crash)
    ref = np.zeros(tuple(t.shape)) if t._is_zerotensor() else t.detach().numpy().astype(np.float64)
    tol = TOL.get(dtname(t), 0) if tol is None else tol
    scale = max(1.0, float(np.abs(ref[np.isfinite(ref)]).max())) if ref.size and np.isfinite(ref).any() else 1.0
    try:
        assert_close(v.detach().cpu().numpy(), ref, rtol=tol, atol=tol * scale)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def program(data, device, n_steps, ops, ties):
    libs = {"torch": Lib(torch, "cpu"), "vkt": Lib(vkt, device)}
    p = Pool(data.draw, libs, ties)
    for _ in range(data.draw(st.integers(1, 2))):
        p.leaf(data.draw(shapes()))
    log = []
    for _ in range(n_steps):
        kind = data.draw(st.sampled_from(ops))
        spec = OPS[kind](data.draw, p)
        if spec is None:
            continue
        idx, fn = spec
        log.append((kind, idx))
        t, v = run_both(lambda name, xs: fn(libs[name], *xs), {n: [p.vals[n][i] for i in idx] for n in libs})
        if not same_outcome(t, v, f"step {len(log)} {kind}{idx}"):
            event(f"both raised {type(t).__name__} at {kind}")
            return None
        assert len(t) == len(v), f"{kind}: {len(v)} outputs, torch {len(t)}"
        for a, b in zip(t, v):
            p.vals["torch"].append(a)
            p.vals["vkt"].append(b)
            if p.freeze_outputs:
                p.frozen.append(a)
        p.freeze_outputs = False
    for k, (a, b) in enumerate(zip(p.vals["torch"], p.vals["vkt"])):
        compare(b, a, f"value {k}", p.tol())
        assert b.requires_grad == a.requires_grad, f"value {k}: requires_grad {b.requires_grad} != {a.requires_grad}"
    return p


def loss_of(p, name, lib, rng_seed):
    """The sum of every value that requires grad, each weighted by fixed random data."""
    rng = np.random.default_rng(rng_seed)
    total = None
    for x, ref in zip(p.vals[name], p.vals["torch"]):
        w = rng.standard_normal(tuple(ref.shape))
        if ref.requires_grad and ref.dtype.is_floating_point:
            term = (x * lib.tensor(w, dtname(ref))).sum()
            total = term if total is None else total + term
    return total


@fuzz
@given(data=st.data(), device=st.sampled_from(DEVICES), n_steps=st.integers(1, STEPS), ties=st.booleans())
def test_program_backward(data, device, n_steps, ties):
    p = program(data, device, n_steps, sorted(OPS), ties)
    if p is None or not any(x.requires_grad for x in p.vals["torch"]):
        return
    seed = data.draw(st.integers(0, 2**32 - 1))
    t, v = run_both(lambda name, _: loss_of(p, name, p.libs[name], seed).backward(), {"torch": 0, "vkt": 0})
    if not same_outcome(t, v, "backward"):
        event(f"backward: both raised {type(t).__name__}")
        return
    for k, (a, b) in enumerate(zip(p.vals["torch"], p.vals["vkt"])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if a.is_leaf or a.retains_grad:
                compare(b.grad, a.grad, f"grad of value {k}", p.tol())


@fuzz
@given(data=st.data(), device=st.sampled_from(DEVICES), n_steps=st.integers(1, STEPS - 2))
def test_program_double_backward(data, device, n_steps):
    p = program(data, device, n_steps, SMOOTH, False)
    if p is None:
        return
    leaves = [i for i in p.leaves if p.t(i).requires_grad]
    if not leaves or loss_of(p, "torch", p.libs["torch"], 0) is None:
        return
    seed = data.draw(st.integers(0, 2**32 - 1))

    def second(name, _):
        lib = p.libs[name]
        xs = [p.vals[name][i] for i in leaves]
        gs = lib.autograd.grad(loss_of(p, name, lib, 0), xs, create_graph=True, allow_unused=True)
        rng = np.random.default_rng(seed)
        total = None
        for g, i in zip(gs, leaves):
            w = lib.tensor(rng.standard_normal(tuple(p.t(i).shape)), dtname(p.t(i)))
            if g is not None and g.requires_grad:
                total = (g * w).sum() if total is None else total + (g * w).sum()
        ggs = lib.autograd.grad(total, xs, allow_unused=True) if total is not None else [None] * len(xs)
        return list(gs) + [gg if gg is not None else lib.tensor(np.zeros(tuple(x.shape)), dtname(x))
                           for gg, x in zip(ggs, xs)]

    t, v = run_both(second, {"torch": 0, "vkt": 0})
    if not same_outcome(t, v, "double backward"):
        return
    assert len(t) == len(v), f"torch gives {len(t)} gradients, vkt {len(v)}"
    for k, (a, b) in enumerate(zip(t, v)):
        # second-order gradients: None as zeros, as a first-order one that does not require grad (vkt's of a
        # piecewise-linear op, leaky_relu's: its formula's mask is no function of x) has a zero gradient in torch
        compare(b, a, f"gradient {k}", p.tol())


# ---- the bugs this fuzzer found, each a fixed case: fn(lib, *leaves) on leaves made from `shapes`, whose sum is
# differentiated; the values and gradients must match torch's on both devices.

REGRESSIONS = {
    # matmul backward folded the batch into rows as reshape(-1, N), ambiguous when N is 0
    "matmul_batched_lhs_empty_n": ([[2, 3, 4], [4, 0]], lambda L, a, b: a @ b),
    # std's gradient g (x - mean) / (n std) is 0/0 where std is 0; PyTorch makes it 0 there
    "std_of_constant": ([[2, 3]], lambda L, x: (x * 0 + 1).std(0, correction=0)),
    # an in-place write through a view of a leaf that is itself a view (base[:, 1::2].requires_grad_()) went
    # through, making the leaf a non-leaf; PyTorch refuses it as a view of a leaf
    "inplace_view_of_view_leaf": ([("stepped", [3, 3])], lambda L, x: x.diagonal().add_(1)),
    # flatten() of a 1-D leaf made a view, a non-leaf without .grad; PyTorch returns the leaf itself
    "flatten_1d_is_self": ([[3]], lambda L, x: (x.flatten(), x.flatten())),
    # copy_ took src with more dims than self (t[...] = src's rule, which drops leading 1s); PyTorch refuses it
    "copy_more_dims": ([[1]], lambda L, x: L.tensor(np.zeros(())).copy_(x)),
    "copy_more_dims_view": ([[1, 3]], lambda L, x: (x * 1)[0].copy_(x)),
    # as_strided reaching storage outside its input's elements (x = base[1::2]): the backward's span covered only
    # x's, and failed with a negative offset
    "as_strided_outside_input": ([("stepped", [3])], lambda L, x: x.as_strided([2, 2], [1, 1], 0)),
    "as_strided_past_input": ([("stepped", [3])], lambda L, x: x.as_strided([2], [1], 5)),
    # x[:, idx] came out with the index's dim first in memory (a permuted result), so .view(-1) failed where
    # PyTorch's result is contiguous
    "index_after_slice_then_view": ([[2, 3, 4]], lambda L, x: x[:, L.tensor(np.array([2, 0, 2]))].view(-1)),
    "index_2d_after_slices_then_view": ([[2, 3, 4]], lambda L, x: x[:, :, L.tensor(np.array([[0, 3], [1, 1]]))]
                                                                  .view(-1)),
    # x[t] with t a 0-d integer tensor was advanced indexing (a copy, IndexBackward0); PyTorch reads t and selects
    # (a view), so an in-place write to it is a view's: refused on a leaf, written through to x otherwise
    "index_0d_tensor_is_select": ([[2, 3]], lambda L, x: x[L.tensor(np.array(1))].add_(1)),
    "index_0d_tensor_writes_through": ([[2, 3]], lambda L, x: (lambda y: (y[:, L.tensor(np.array(-1))].mul_(2), y)[1])(
        x * 1)),
    # a slicing view of an empty broadcast tensor was refused as "of a broadcast tensor": an empty one has no
    # element twice
    "diagonal_of_empty_expand": ([[1]], lambda L, x: x.expand(2, 0).diagonal()),
    # retain_grad() then an in-place op: the .grad stayed with the old history (0 here); PyTorch's moves with it
    "retain_grad_then_zero_": ([[3]], lambda L, x: retained_then(x * 2, lambda y: y.zero_())),
    "retain_grad_then_view_mul_": ([[3]], lambda L, x: retained_then(x * 2, lambda y: y[:2].mul_(5))),
    # an in-place op on an empty tensor skipped the version bump, so a saved empty operand's change went unseen
    "inplace_on_saved_empty": ([[1]], lambda L, x: modified_after(L.tensor(np.ones((0, 1))), lambda c: c @ x,
                                                                  lambda c: c.clamp_(max=0.5))),
    "index_add_empty_index_on_saved": ([[2]], lambda L, x: modified_after(
        L.tensor(np.ones(2)), lambda c: c * x, lambda c: c.index_add_(0, L.tensor(np.zeros(0, np.int64)), c[:0]))),
    # index_add_ with a source of the wrong size raised IndexError; PyTorch raises RuntimeError
    "index_add_source_count": ([[2, 2]], lambda L, x: (x * 1).index_add_(0, L.tensor(np.zeros(1, np.int64)), x)),
    "index_add_source_shape": ([[2, 2], [1, 3]], lambda L, x, y: (x * 1).index_add_(0, L.tensor(np.zeros(1, np.int64)),
                                                                                      y)),
}


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_overlap_reads_first(device):
    """An in-place op whose operand partly overlaps what it writes reads the operand before writing, with grad or
    not (found here: the cpu kernel and the shader each gave a different wrong answer; PyTorch refuses these)."""
    a = np.arange(16.0).reshape(4, 4)
    cases = [(lambda y: y.t().add_(y), (a.T + a).T), (lambda y: y[1:].mul_(y[:-1]), np.vstack([a[:1], a[1:] * a[:-1]])),
             (lambda y: y.add_(y[0]), a + a[0]), (lambda y: y.t().sub_(y.flip(0)), (a.T - a[::-1]).T)]
    for write, want in cases:
        for grad in (False, True):
            y = vkt.tensor(a, device=device, requires_grad=grad) * 1
            write(y)
            assert_close(y.detach(), want, rtol=0, atol=0)


def retained_then(y, write):
    """y.retain_grad(), then write(y) in place: (y, y) so that y's .grad is compared."""
    y.retain_grad()
    write(y)
    return y, y


def modified_after(c, use, write):
    """use(c), after which write(c) changes c in place: backward must then refuse c, saved by use."""
    y = use(c)
    write(c)
    return y


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression(name, device):
    """A shape given as ("stepped", shape) makes a leaf that is a strided view: base[..., 1::2].requires_grad_()."""
    shapes_, fn = REGRESSIONS[name]
    rng = np.random.default_rng(0)
    out = {}
    for lib in (Lib(torch, "cpu"), Lib(vkt, device)):
        xs = []
        for s in shapes_:
            stepped = isinstance(s, tuple)
            a = rng.integers(-6, 7, s[1][:-1] + [2 * s[1][-1]] if stepped else s) / 4.0
            xs.append((lib.tensor(a)[..., 1::2] if stepped else lib.tensor(a)).requires_grad_())

        def run():
            y = fn(lib, *xs)
            y = y if isinstance(y, tuple) else (y,)
            w = np.arange(y[0].numel()).reshape(tuple(y[0].shape)) + 1.0
            (y[0] * lib.tensor(w, dtname(y[0]))).sum().backward()
            return y
        out[lib.m.__name__] = outcome(run), xs
        rng = np.random.default_rng(0)
    (ty, tx), (vy, vx) = out["torch"], out["vkt"]
    if same_outcome(ty, vy, name):
        compare(vy[0], ty[0], "value")
        for k, (a, b) in enumerate(zip(tx + list(ty[1:]), vx + list(vy[1:]))):
            compare(b.grad, a.grad, f"grad {k}")


# the same for second derivatives: grad(fn(...).sum(), leaves, create_graph=True), then the gradient of their
# weighted sum
DOUBLE_REGRESSIONS = {
    # prod's gradient y / x with masks for zeros: NaN (0/0) and missing terms in its second derivative at a zero
    "prod_one_zero": ([[3]], lambda L, x: (x * L.tensor(np.array([0.0, 1.0, 1.0]))).prod()),
    "prod_two_zeros_dim": ([[2, 3]], lambda L, x: (x * L.tensor(np.array([0.0, 0.0, 1.0]))).prod(1)),
    "prod_relu_zero": ([[2, 2]], lambda L, x: x.relu().prod(0, keepdim=True)),
    # (the exact form above slices x, which failed on a broadcast x)
    "prod_of_expand": ([[2]], lambda L, x: x.expand(2, 2).prod(0)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(DOUBLE_REGRESSIONS))
def test_regression_double(name, device):
    shapes_, fn = DOUBLE_REGRESSIONS[name]
    rng = np.random.default_rng(1)
    arrays = [rng.integers(-6, 7, s) / 4.0 for s in shapes_]
    out = {}
    for lib in (Lib(torch, "cpu"), Lib(vkt, device)):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        gs = lib.autograd.grad(fn(lib, *xs).sum(), xs, create_graph=True)
        total = sum((gi * lib.tensor(np.arange(gi.numel()).reshape(tuple(gi.shape)) + 1.0)).sum() for gi in gs)
        out[lib.m.__name__] = list(gs) + list(lib.autograd.grad(total, xs))
    for k, (a, b) in enumerate(zip(out["torch"], out["vkt"])):
        compare(b, a, f"gradient {k}")
