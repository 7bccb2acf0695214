"""vkt.functional: products composed of vkt's operators, as torch.functional composes torch's: einsum,
tensordot, inner, outer, kron and cross. Each is views (permute, reshape, as_strided) around one matmul or
elementwise op per step, so it runs on the device of its operands; `vkt.einsum` and the others are these,
and the Tensor methods of the same names call them."""
import builtins
import math
from collections.abc import Sequence

from . import _C


def _check_tensor(name, arg, value, position=None):
    if not isinstance(value, _C.Tensor):
        where = "" if position is None else f" (position {position})"
        raise TypeError(f"{name}(): argument '{arg}'{where} must be Tensor, not {type(value).__name__}")


def outer(input, vec2):
    """input[i] * vec2[j], with type promotion."""
    _check_tensor("outer", "input", input)
    _check_tensor("outer", "vec2", vec2)
    for arg, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {arg}, but got {t.ndim}-D")
    return input.reshape(-1, 1) * vec2


ger = outer


def _product(a, b, a_free, contracted, b_free):
    """Sum over `contracted` (pairs of dims of a and b) of a * b, as one matmul: a's other dims `a_free`
    then b's `b_free` form the result, in that order."""
    a_dims, b_dims = [d for d, _ in contracted], [d for _, d in contracted]
    k, m = (math.prod(a.shape[d] for d in dims) for dims in (a_dims, a_free))
    n = math.prod(b.shape[d] for d in b_free)
    x = a.permute(*a_free, *a_dims).reshape(m, k)
    y = b.permute(*b_dims, *b_free).reshape(k, n)
    return (x @ y).reshape(*[a.shape[d] for d in a_free], *[b.shape[d] for d in b_free])


def tensordot(a, b, dims=2, out=None):
    """Sums a * b over the last `dims` dims of a and the first of b, or over the dims listed in
    dims = (dims_a, dims_b)."""
    if out is not None:
        raise TypeError("tensordot(): out= is not supported by vkt")
    _check_tensor("tensordot", "a", a)
    _check_tensor("tensordot", "b", b)
    if isinstance(dims, _C.Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    dims_a = [d % a.ndim if a.ndim else d for d in dims_a]
    dims_b = [d % b.ndim if b.ndim else d for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    a_free = [d for d in range(a.ndim) if d not in dims_a]
    b_free = [d for d in range(b.ndim) if d not in dims_b]
    return _product(a, b, a_free, list(zip(dims_a, dims_b)), b_free)


def inner(input, other):
    """Sums input * other over the last dim of each; a 0-d operand multiplies."""
    _check_tensor("inner", "input", input)
    _check_tensor("inner", "other", other)
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def kron(input, other):
    """The Kronecker product: each element of input times the whole of other, laid out in blocks."""
    _check_tensor("kron", "input", input)
    _check_tensor("kron", "other", other)
    nd = max(input.ndim, other.ndim)
    a = input.reshape(*[1] * (nd - input.ndim), *input.shape)
    b = other.reshape(*[1] * (nd - other.ndim), *other.shape)
    spread_a = [s for n in a.shape for s in (n, 1)]
    spread_b = [s for n in b.shape for s in (1, n)]
    return (a.reshape(*spread_a) * b.reshape(*spread_b)).reshape(*[x * y for x, y in zip(a.shape, b.shape)])


def _broadcast(x, y):
    shape = [max(a, b) if 1 in (a, b) else a for a, b in zip(x.shape, y.shape)]
    return x.expand(*shape), y.expand(*shape)


def _cross(input, other, dim, name):
    x, y = _broadcast(input, other)
    if x.shape[dim] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and "
                           f"{other.shape[dim]}")

    def part(t, i):
        index = [slice(None)] * t.ndim
        index[dim] = slice(i, i + 1)
        return t[tuple(index)]

    parts = [part(x, j) * part(y, k) - part(x, k) * part(y, j) for j, k in ((1, 2), (2, 0), (0, 1))]
    return _C.cat(parts, dim)


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim: by default, as torch.cross, the first dim of size 3."""
    _check_tensor("cross", "input", input)
    _check_tensor("cross", "other", other)
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. Got {input.ndim} and "
                           f"{other.ndim}")
    if dim is None:
        dim = next((d for d, n in enumerate(input.shape) if n == 3), -1)
    return _cross(input, other, dim, "linalg.cross")


def linalg_cross(input, other, *, dim=-1):
    """vkt.linalg.cross: the cross product along dim (the last by default), broadcasting the others."""
    _check_tensor("cross", "input", input)
    _check_tensor("cross", "other", other)
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. Got {input.ndim} and "
                           f"{other.ndim}")
    return _cross(input, other, dim, "linalg.cross")


# ---- einsum ----

def _parse(equation, operands):
    """The labels of each operand and of the output, as lists; '...' becomes one label per dim it covers
    (negative numbers, aligned to the right as broadcasting aligns them)."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the equation"
                         if len(operands) > len(terms) else
                         f"einsum(): fewer operands were provided than specified in the equation")
    ell = 0
    labels = []
    for term, t in zip(terms, operands):
        if term.count("...") > 1 or term.replace("...", "").count("."):
            raise RuntimeError(f"einsum(): found '.' for operand that is not part of any ellipsis")
        letters = term.replace("...", "")
        for c in letters:
            if not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {equation.index(c)} in the equation "
                                 f"string, subscripts must be in [a-zA-Z]")
        covered = t.ndim - len(letters)
        if "..." in term:
            if covered < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(letters)}) is more "
                                   f"than the number of dimensions ({t.ndim}) for operand {len(labels)}")
            ell = max(ell, covered)
            head, tail = term.split("...")
            labels.append(list(head) + list(range(-covered, 0)) + list(tail))
        else:
            if covered != 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(letters)}) does not "
                                   f"match the number of dimensions ({t.ndim}) for operand {len(labels)} and no "
                                   f"ellipsis was given")
            labels.append(list(term))
    if arrow:
        if rhs.count("...") > 1:
            raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis")
        head, _, tail = rhs.partition("...")
        out = list(head) + (list(range(-ell, 0)) if "..." in rhs else []) + list(tail)
        seen = set()
        for c in out:
            if isinstance(c, str) and (c in seen or not any(c in ls for ls in labels)):
                raise RuntimeError(f"einsum(): output subscript {c} "
                                 f"{'appears more than once' if c in seen else 'does not appear'} in the "
                                 f"{'output' if c in seen else 'equation for any input operand'}")
            seen.add(c)
    else:
        counts = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = list(range(-ell, 0)) + sorted(c for c, n in counts.items() if isinstance(c, str) and n == 1)
    return labels, out


def _diagonal(t, labels):
    """t with each label once: the dims a label repeats become one, their diagonal (a view)."""
    unique, sizes, strides = [], [], []
    for label, n, s in zip(labels, t.shape, t.stride()):
        if label in unique:
            i = unique.index(label)
            if sizes[i] != n:
                raise RuntimeError(f"einsum(): subscript {label} is repeated for operand but the sizes don't match, "
                                   f"{sizes[i]} != {n}")
            strides[i] += s
        else:
            unique.append(label)
            sizes.append(n)
            strides.append(s)
    if len(unique) == len(labels):
        return t, labels
    return t.as_strided(sizes, strides, t.storage_offset()), unique


def einsum(equation, *operands):
    """Einstein summation: the equation names each operand's dims; dims named in the output stay, the
    others are summed. Operands are contracted left to right, each pair as one batched matmul over views
    (torch.einsum's plan, without its path optimisation)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for t in operands:
        _check_tensor("einsum", "operands", t)
    labels, out = _parse(equation, operands)
    terms = []
    for t, ls in zip(operands, labels):
        t, ls = _diagonal(t, ls)
        terms.append((t, ls))
    result, have = terms[0]
    for i in range(len(terms)):
        if i > 0:
            result, have = _contract(result, have, *terms[i], _needed(terms[i + 1:], out))
        else:
            result, have = _sum_unneeded(result, have, _needed(terms[1:], out))
    missing = [c for c in out if c not in have]
    if missing:  # an ellipsis dim no operand had: size 1
        result, have = result.reshape(*result.shape, *[1] * len(missing)), have + missing
    return result.permute(*[have.index(c) for c in out]) if have != out else result


def _needed(rest, out):
    need = set(out)
    for _, ls in rest:
        need.update(ls)
    return need


def _sum_unneeded(t, labels, need):
    drop = [i for i, c in enumerate(labels) if c not in need]
    if not drop:
        return t, labels
    return t.sum(dim=tuple(drop)), [c for c in labels if c in need]


def _contract(a, la, b, lb, need):
    """a * b summed over the labels neither the output nor a later operand needs, as one matmul."""
    a, la = _sum_unneeded(a, la, need | set(lb))
    b, lb = _sum_unneeded(b, lb, need | set(la))
    size = {}
    for t, ls in ((a, la), (b, lb)):
        for c, n in zip(ls, t.shape):
            if size.get(c, n) != n and 1 not in (size[c], n):
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {c} has sizes {size[c]} and {n}")
            size[c] = n if size.get(c, 1) == 1 else size[c]
    batch = [c for c in la if c in lb and c in need]
    summed = [c for c in la if c in lb and c not in need]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    x = a.permute(*[la.index(c) for c in batch + a_only + summed])
    y = b.permute(*[lb.index(c) for c in batch + summed + b_only])
    x = x.expand(*[size[c] for c in batch], *x.shape[len(batch):len(batch) + len(a_only)], *[size[c] for c in summed])
    y = y.expand(*[size[c] for c in batch + summed], *y.shape[len(batch) + len(summed):])
    prod, m, k, n = (math.prod(size[c] for c in labels) for labels in (batch, a_only, summed, b_only))
    r = x.reshape(prod, m, k) @ y.reshape(prod, k, n)
    return r.reshape(*[size[c] for c in batch + a_only + b_only]), batch + a_only + b_only


# ---- distances: cdist, dist, and the p-norms vkt.nn.functional's distances share ----

def _broadcast_shape(a, b):
    """The broadcast of shapes a and b, or torch's infer_size error (checked from the last dim, as torch does)."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in reversed(range(n)):
        if a[i] != b[i] and 1 not in (a[i], b[i]):
            raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at "
                               f"non-singleton dimension {i}")
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _norm(x, p, dim=None, keepdim=False):
    """torch.norm(x, p, dim, keepdim), over all of x without dim."""
    return x.norm(p) if dim is None else x.norm(p, dim, keepdim)


def _kernel_dist(diff, p):
    """The p-norm over diff's last dim as torch's pdist and cdist kernels compute it: torch.norm's values and
    gradients, except that with p = inf each entry tied for the max gets the whole gradient (norm splits it)."""
    if diff.shape[-1] == 0:
        return diff.sum(-1)  # zeros, as the kernels' empty sum, still connected to the inputs
    if p != math.inf:
        return _norm(diff, p, -1)
    a = diff.abs()
    top = a.amax(-1, keepdim=True).detach()
    # a - a.detach() is 0 in value and the identity in gradient: the max's value, every tie's full gradient
    return (top + ((a - a.detach()) * (a == top)).sum(-1, keepdim=True)).squeeze(-1)


def _euclidean_dist(x1, x2):
    """cdist's p = 2 as one matmul, torch's _euclidean_dist: -2 a.b + |a|^2 + |b|^2, clamped at 0 before the
    square root, whose gradient is 0 where the distance is (torch's subgradient there)."""
    n1 = (x1 * x1).sum(-1, keepdim=True)
    n2 = (x2 * x2).sum(-1, keepdim=True)
    a = _C.cat([x1 * -2, n1, _C.ones_like(n1)], -1)
    b = _C.cat([x2, _C.ones_like(n2), n2], -1)
    squared = a @ b.transpose(-2, -1)
    positive = squared > 0
    return _C.where(positive, _C.where(positive, squared, 1.0).sqrt(), 0.0)


_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M), batch dims
    broadcast. As torch, p = 2 goes through one matmul when either side has more than 25 rows (or
    compute_mode asks for it), otherwise every difference is formed, as torch's kernel does."""
    from .nn.functional import _type_name

    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    _check_tensor("cdist", "x1", x1)
    _check_tensor("cdist", "x2", x2)
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_type_name(t.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    mode = _CDIST_MODES[compute_mode]
    (r1, cols), r2 = x1.shape[-2:], x2.shape[-2]
    batch = _broadcast_shape(x1.shape[:-2], x2.shape[:-2])
    use_mm = p == 2 and x1.numel() > 0 and x2.numel() > 0 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))
    if x1.dtype != x2.dtype and r1 and r2 and cols and math.prod(batch):  # torch's kernels only check when they run
        if use_mm:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_type_name(x1.dtype).lower()} "
                               f"!= {_type_name(x2.dtype).lower()}")
        raise RuntimeError(f"expected scalar type {_type_name(x1.dtype)} but found {_type_name(x2.dtype)}")
    # one flat batch dim, as torch's cdist_impl: the differences stay 4-D, which the vulkan shaders take
    flat = math.prod(batch)
    x1, x2 = x1.expand(*batch, r1, cols).reshape(flat, r1, cols), x2.expand(*batch, r2, cols).reshape(flat, r2, cols)
    if use_mm:
        return _euclidean_dist(x1, x2).reshape(*batch, r1, r2)
    return _kernel_dist(x1.unsqueeze(-2) - x2.unsqueeze(-3), p).reshape(*batch, r1, r2)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), with torch.norm's gradient."""
    from .nn.functional import _type_name

    _check_tensor("dist", "input", input)
    _check_tensor("dist", "other", other)
    _broadcast_shape(input.shape, other.shape)
    diff = input - other
    if not diff.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_type_name(diff.dtype)} instead.")
    return _norm(diff, p)


# ---- NumPy-style utilities: broadcast_shapes, diff, bincount, histc, isin, cartesian_prod, combinations, cov,
# corrcoef, logcumsumexp, trapezoid, cumulative_trapezoid, block_diag, vander. Each is composed of device ops as
# torch composes them; a few scalars (a max, a weight check) are read back where torch reads them too. ----

# vkt's dtypes in promotion order: the larger of two is their promotion (vkt has no int8, int16 or bfloat16)
_RANK = [_C.bool, _C.uint8, _C.int32, _C.int64, _C.float16, _C.float32, _C.float64]


def _type_name(dtype):
    from .nn.functional import _type_name as name

    return name(dtype)


def _check_int(name, arg, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name}(): argument '{arg}' must be int, not {type(value).__name__}")


def _wrap_dim(dim, ndim):
    """dim in [0, ndim), a 0-d tensor counting as 1-d, as torch's maybe_wrap_dim."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _size(t, dim):
    """t.size(dim) with torch's errors: a 0-d tensor has no dims to ask about."""
    if t.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return t.shape[_wrap_dim(dim, t.ndim)]


def _slice(t, dim, start, stop=None):
    """t.slice(dim, start, stop) (a view): the index range clips to the dim's size, as Python's does."""
    if t.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    index = [slice(None)] * t.ndim
    index[_wrap_dim(dim, t.ndim)] = slice(start, stop)
    return t[tuple(index)]


def _select(t, dim, i):
    index = [slice(None)] * t.ndim
    index[dim] = i
    return t[tuple(index)]


def _promote(a, b):
    return max(a, b, key=_RANK.index)


def _combine(higher, lower):
    """torch's combine_categories: a lower tier's dtype counts only where its category is higher."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.is_floating_point:
        return higher
    return _promote(higher, lower) if higher == _C.bool or lower.is_floating_point else higher


def _result_type(*operands):
    """torch.result_type over tensors and Python numbers: dimensioned tensors, then 0-d tensors, then numbers
    (int64 or the default float dtype) each decide the dtype only where their category is higher."""
    tiers = [None, None, None]
    for x in operands:
        if isinstance(x, _C.Tensor):
            tier, dtype = (0 if x.ndim else 1), x.dtype
        else:
            tier, dtype = 2, (_C.bool if isinstance(x, bool) else _C.int64 if isinstance(x, int)
                              else _C._get_default_dtype())
        tiers[tier] = dtype if tiers[tier] is None else _promote(tiers[tier], dtype)
    return _combine(tiers[0], _combine(tiers[1], tiers[2]))


def broadcast_shapes(*shapes):
    """The shape that tensors of each of these shapes (ints count as 1-d shapes) broadcast to, as a tuple. As
    torch's, any Sequence passes as a shape, and the sizes are checked from the last dim."""
    shapes = [(s,) if isinstance(s, int) else s for s in shapes if s is not None]
    for shape in shapes:
        if not isinstance(shape, Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
    common = [1] * max((len(s) for s in shapes), default=0)
    for arg, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i]:
                continue
            if common[i] == 1:
                if shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
            if shape[i] != 1 and common[i] != shape[i]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} at {i}! Mismatching "
                                   f"argument at index {arg} had {shape}; but expected shape should be broadcastable "
                                   f"to {common}")
    return tuple(common)


def _check_diff_operand(input, other, arg, dim):
    if other is None:
        return
    _check_tensor("diff", arg, other)
    dim = _wrap_dim(dim, input.ndim)
    if other.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(other.ndim):
        if i != dim and other.shape[i] != input.shape[i]:
            raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match that of input except "
                               f"along the differencing dimension; input.size({i}) = {input.shape[i]}, but got "
                               f"tensor.size({i}) = {other.shape[i]}")


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (logical_xor for bool), after prepend and append are joined on."""
    _check_tensor("diff", "input", input)
    _check_int("diff", "n", n)
    _check_int("diff", "dim", dim)
    if input.ndim < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    _check_diff_operand(input, prepend, "prepend", dim)
    _check_diff_operand(input, append, "append", dim)
    if n == 0:
        return input.clone()
    dim = _wrap_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    result = _C.cat(parts, dim) if len(parts) > 1 else input
    for _ in range(min(n, result.shape[dim])):
        right, left = _slice(result, dim, 1), _slice(result, dim, 0, -1)
        result = right.logical_xor(left) if result.dtype == _C.bool else right - left
    return result


_INT_DTYPES = (_C.uint8, _C.int32, _C.int64)


def _extrema(t):
    """(min, max) of t as Python numbers, read back together."""
    low, high = _C.aminmax(t)
    return tuple(_C.stack([low, high]).tolist())


def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-d non-negative integer tensor (int64), or the sums of weights per value (float32
    for float32 weights, else float64); at least minlength bins. Counts are int32 atomics, exact below 2^31."""
    _check_tensor("bincount", "input", input)
    _check_int("bincount", "minlength", minlength)
    if input.dtype not in _INT_DTYPES:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_type_name(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim == 1 and input.numel() == 0:
        return _C.zeros(minlength, dtype=_C.int64, device=input.device)
    low, high = _extrema(input) if input.ndim == 1 else (-1, -1)
    if low < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    index, nbins = input.long(), max(high + 1, minlength)
    if weights is None:
        ones = _C.ones(input.shape[0], dtype=_C.int32, device=input.device)
        return _C.zeros(nbins, dtype=_C.int32, device=input.device).scatter_add(0, index, ones).long()
    _check_tensor("bincount", "weights", weights)
    if weights.ndim != 1 or weights.numel() != input.numel():
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dtype = _C.float32 if weights.dtype == _C.float32 else _C.float64
    # torch's bincount has no derivative: the sums are cut from the graph, not differentiated
    return _C.zeros(nbins, dtype=dtype, device=input.device).scatter_add(0, index, weights.detach().to(dtype))


def _c_double(v, from_data=False):
    """A double as C++'s ostream prints it (%g); a NaN that a reduction produced prints as x86's default NaN."""
    if math.isnan(v):
        return "-nan" if from_data or math.copysign(1, v) < 0 else "nan"
    return f"{v:g}"


_STRUCT_CODE = {_C.float16: "e", _C.float32: "f", _C.float64: "d"}


def _histc_range(input, min, max):
    """torch's histc_select_outer_bin_edges: min == max takes the data's range, an empty range widens by 1."""
    low, high, from_data = float(min), float(max), False
    if low == high and input.numel() > 0:
        (low, high), from_data = _extrema(input), True
    if low == high:
        low, high = low - 1, high + 1
    if any(math.isinf(v) or math.isnan(v) for v in (low, high)):
        raise RuntimeError(f"torch.histc: range of [{_c_double(low, from_data)}, {_c_double(high, from_data)}] is "
                           f"not finite")
    if not low < high:
        raise RuntimeError("torch.histc: max must be larger than min")
    return low, high


def histc(input, bins=100, min=0, max=0):
    """A histogram of input's values in `bins` equal bins over [min, max] (the data's range where min == max), of
    input's dtype; values outside it and NaNs are not counted, the last bin includes its right edge."""
    import struct

    _check_tensor("histc", "input", input)
    _check_int("histc", "bins", bins)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    low, high = _histc_range(input, min, max)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_type_name(input.dtype)}'")
    # torch's kernel works in input's dtype: the edges rounded to it, bin = (x - low) * bins / (high - low)
    code = _STRUCT_CODE[input.dtype]
    low, high = (struct.unpack(code, struct.pack(code, v))[0] for v in (low, high))
    width = struct.unpack(code, struct.pack(code, high - low))[0]
    x = input.detach().reshape(-1)
    inside = (x >= low) & (x <= high)
    position = _C.where(inside, (x - low) * bins / width, 0.0).long().clamp(max=bins - 1)
    counts = _C.zeros(bins, dtype=_C.int32, device=input.device).scatter_add(0, position, inside.int())
    return counts.to(input.dtype)


_HISTOGRAM_SIGNATURES = (
    " * (Tensor input, Tensor bins, *, Tensor weight = None, bool density = False, tuple of Tensors out = None)\n"
    " * (Tensor input, int bins = 100, *, tuple of floats range = None, Tensor weight = None, bool density = False, "
    "tuple of Tensors out = None)\n")
_HISTOGRAMDD_SIGNATURES = "".join(
    f" * (Tensor input, {bins} bins, tuple of floats range = None, Tensor weight = None, bool density = False)\n"
    for bins in ("int", "tuple of ints", "tuple of Tensors"))


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _histogram_args(name, input, bins, range, weight, density):
    """torch's argument parser: one of histogram's (histogramdd's) signatures, else its TypeError naming what was
    given."""
    floats = range is None or (isinstance(range, (tuple, list)) and all(isinstance(v, (int, float)) for v in range))
    if name == "histogram":
        fits = isinstance(bins, _C.Tensor) and range is None or _is_int(bins)
    else:
        fits = _is_int(bins)
        if isinstance(bins, (tuple, list)):  # the parser's unpacking, by the first element's type
            tensors = bool(bins) and isinstance(bins[0], _C.Tensor)
            for k, b in enumerate(bins):
                if tensors and not isinstance(b, _C.Tensor):
                    raise TypeError(f"expected Tensor as element {k} in argument 1, but got {type(b).__name__}")
                if not tensors and not isinstance(b, int):
                    raise TypeError(f"histogramdd(): argument 'bins' failed to unpack the object at pos 2 with error "
                                    f"\"type must be tuple of ints,but got {type(b).__name__}\"")
            fits = True
    if (fits and isinstance(input, _C.Tensor) and floats and (weight is None or isinstance(weight, _C.Tensor)) and
            isinstance(density, bool)):
        return
    got = [type(v).__name__ if not isinstance(v, _C.Tensor) else "Tensor" for v in (input, bins) if v is not None]
    got += [f"{k}={'Tensor' if isinstance(v, _C.Tensor) else type(v).__name__}"
            for k, v, default in (("range", range, None), ("weight", weight, None), ("density", density, False))
            if v is not default]
    signatures = _HISTOGRAM_SIGNATURES if name == "histogram" else _HISTOGRAMDD_SIGNATURES
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), but expected "
                    f"one of:\n{signatures}")


def _histogram_ranges(points, range):
    """torch's select_outer_bin_edges for points [M, D]: (low, high) of each dimension from range, else from the data
    (its kernel's dtypes only), else [0, 1]; finite, ordered, and an empty one widened by 1/2 each way."""
    d = points.shape[1]
    if range is not None:
        if len(range) != 2 * d:
            raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should have {2 * d} "
                               f"elements, but got {len(range)}")
        bounds = [(float(range[2 * k]), float(range[2 * k + 1])) for k in builtins.range(d)]
    elif points.numel():
        if points.dtype not in (_C.float32, _C.float64):
            raise NotImplementedError(f"\"histogramdd\" not implemented for '{_type_name(points.dtype)}'")
        low, high = _C.aminmax(points, dim=0)
        bounds = list(zip(*_C.stack([low, high]).tolist()))
    else:
        bounds = [(0.0, 1.0)] * d
    for k, (low, high) in enumerate(bounds):
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RuntimeError(f"torch.histogramdd: dimension {k}'s range [{_c_double(low)}, {_c_double(high)}] is "
                               f"not finite")
        if low > high:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_c_double(low)} max "
                               f"{_c_double(high)} for dimension {k}")
    return [(low - 0.5, high + 0.5) if low == high else (low, high) for low, high in bounds]


def _edges_checks(dtype, edges):
    """torch's histogramdd_check_inputs of the edges of each dimension against input's dtype."""
    from .nn.functional import _c10_name

    for k, e in enumerate(edges):
        if e.dtype != dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {_c10_name(dtype)} and bins for dimension {k} with dtype "
                               f"{_c10_name(e.dtype)}")
        if e.dim() != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {e.dim()} "
                               f"dimensions in the bins tensor for dimension {k}")
        if e.numel() == 0:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements in "
                               f"the bins tensor for dimension {k}")


def _weight_dtype_check(dtype, weight):
    from .nn.functional import _c10_name

    if weight is not None and weight.dtype != dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({_c10_name(dtype)}), and "
                           f"weight({_c10_name(weight.dtype)})")


def _weight_shape_error(input_shape, weight_shape):
    return RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the input "
                        f"tensor excluding its innermost dimension, but got input with shape {list(input_shape)} and "
                        f"weight with shape {list(weight_shape)}")


def _counted_checks(dtype, edges):
    """torch's checks after the inputs': at least one bin in each dimension, and its kernel's dtypes."""
    for k, e in enumerate(edges):
        if e.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {e.numel() - 1} for dimension {k}")
    if dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_type_name(dtype)}'")


def _bins_of(x, edges, equal):
    """Each value's bin among edges (int64) and whether it falls between the outer ones (NaN does not). Equal bins,
    as torch's kernel: interpolated in x's dtype, then checked against the edges around it; else searched for."""
    n = edges.numel() - 1
    left, right = edges[0], edges[n]
    inside = (x >= left) & (x <= right)
    if equal:
        guess = _C.where(inside, (x - left) * n / (right - left), 0.0).long().clamp(0, n)
        first, end = (guess - 1).clamp(min=0), (guess + 2).clamp(max=n)
        pos = first - 1
        for step in (0, 1, 2):
            at = first + step
            pos = pos + ((at < end) & (edges[at.clamp(max=n)] <= x)).long()
    else:
        pos = _C.searchsorted(edges, x, right=True) - 1
    return pos.clamp(0, n - 1), inside


def _histogram_of(points, edges, equal, weight, density):
    """The histogram of points [M, D] in the bins between each dimension's edges: counts, or the sums of weight [M],
    in points' dtype, scattered on their device; with density, divided by their total and each bin's volume."""
    if not edges:  # no dimensions: torch's is a 0-d zero
        hist = _C.zeros((), dtype=points.dtype, device=points.device)
        return hist / hist.sum() if density else hist
    shape = [e.numel() - 1 for e in edges]
    flat = _C.zeros(points.shape[0], dtype=_C.int64, device=points.device)
    inside = _C.ones(points.shape[0], dtype=_C.bool, device=points.device)
    for k, e in enumerate(edges):
        pos, within = _bins_of(points[:, k], e, equal)
        flat, inside = flat * shape[k] + pos, inside & within
    flat = _C.where(inside, flat, 0)
    if weight is None:
        hist = _C.zeros(math.prod(shape), dtype=_C.int32, device=points.device).scatter_add(0, flat, inside.int())
        hist = hist.to(points.dtype)
    else:
        hist = _C.zeros(math.prod(shape), dtype=points.dtype, device=points.device).scatter_add(
            0, flat, _C.where(inside, weight.detach().reshape(-1), 0.0))
    hist = hist.reshape(shape)
    if density:
        hist = hist / hist.sum()
        for k, e in enumerate(edges):
            hist = hist / e.diff().reshape([-1 if j == k else 1 for j in builtins.range(len(edges))])
    return hist


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges): input's values counted (or their weights summed) in `bins` equal bins over range (the
    data's where not given) or between the given increasing edges, as torch.histogram: each bin holds its left
    edge, the last its right one too; values outside and NaNs are not counted. float32 and float64, on the device."""
    _histogram_args("histogram", input, bins, range, weight, density)
    points = input.detach().reshape(-1, 1)
    if isinstance(bins, _C.Tensor):
        edges, equal = bins.detach(), False
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        (low, high), = _histogram_ranges(points, range)
        edges, equal = _C.linspace(low, high, bins + 1, dtype=input.dtype, device=input.device), True
    _edges_checks(input.dtype, [edges])
    _weight_dtype_check(input.dtype, weight)
    if weight is not None and weight.numel() != points.shape[0]:  # torch's histogram flattens weight
        raise _weight_shape_error(points.shape, [weight.numel()])
    _counted_checks(input.dtype, [edges])
    hist = _histogram_of(points, [edges], equal, weight, density)
    from .autograd import _no_derivative

    edges = edges if equal else edges.clone()  # the caller's bins are copied, as torch's; linspace's are new
    return _histogram_result(*_no_derivative("histogram", (hist, edges), input, weight))


def histogramdd(input, bins=None, *, range=None, weight=None, density=False):
    """(hist, bin_edges): the D-dimensional histogram of input's points (its last dim, of size D, the coordinates),
    as torch.histogramdd: bins an int or one int per dimension (equal bins over range, [min, max] per dimension,
    the data's where not given) or one tensor of increasing edges per dimension; weight of input's shape without its
    last dim. float32 and float64, on the device."""
    _histogram_args("histogramdd", input, bins, range, weight, density)
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    d = input.shape[-1]
    bins = [bins] * d if _is_int(bins) else list(bins)
    equal = all(isinstance(b, int) for b in bins)
    if equal and len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if not equal and len(bins) != d:
        raise RuntimeError(f"torch.histogramdd: expected {d} sequences of bin edges for a {d}-dimensional histogram "
                           f"but got {len(bins)}")
    points = input.detach().reshape(math.prod(input.shape[:-1]), d)
    if equal:
        edges = [_C.linspace(low, high, int(b) + 1, dtype=input.dtype, device=input.device)
                 for (low, high), b in zip(_histogram_ranges(points, range), bins)]
    else:
        edges = [b.detach() for b in bins]
    _edges_checks(input.dtype, edges)
    _weight_dtype_check(input.dtype, weight)
    if weight is not None and list(weight.shape or [1]) != list(input.shape[:-1]):
        raise _weight_shape_error(input.shape, weight.shape)
    _counted_checks(input.dtype, edges)
    hist = _histogram_of(points, edges, equal, weight, density)
    from .autograd import _no_derivative

    edges = edges if equal else [e.clone() for e in edges]  # the caller's bins are copied, as torch's
    hist, *edges = _no_derivative("histogramdd", (hist, *edges), input, weight)
    return _histogramdd_result(hist, tuple(edges))


def _isin_args(elements, test_elements, assume_unique, invert):
    tensors = [isinstance(x, _C.Tensor) for x in (elements, test_elements)]
    numbers = [isinstance(x, (bool, int, float)) for x in (elements, test_elements)]
    flags = {"assume_unique": assume_unique, "invert": invert}
    if not (any(tensors) and all(t or n for t, n in zip(tensors, numbers)) and
            all(isinstance(f, bool) for f in flags.values())):
        # torch's argument parser's message; a flag is listed where it is not a bool (passed, then)
        got = ["Tensor" if t else type(x).__name__ for t, x in zip(tensors, (elements, test_elements))]
        got += [f"{k}={type(v).__name__}" for k, v in flags.items() if not isinstance(v, bool)]
        rest = "*, bool assume_unique = False, bool invert = False, Tensor out = None"
        overloads = "".join(f" * ({args}, {rest})\n" for args in ("Tensor elements, Tensor test_elements",
                                                                    "Number element, Tensor test_elements",
                                                                    "Tensor elements, Number test_element"))
        raise TypeError(f"isin() received an invalid combination of arguments - got ({', '.join(got)}), but expected "
                        f"one of:\n{overloads}")
    for x in (elements, test_elements):
        if isinstance(x, _C.Tensor) and x.dtype == _C.bool or isinstance(x, bool):
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is in test_elements (bool, elements' shape), compared in their promoted dtype: the
    test elements sorted, each element searched for and compared with what it lands on."""
    _isin_args(elements, test_elements, assume_unique, invert)
    if not isinstance(test_elements, _C.Tensor):
        return elements != test_elements if invert else elements == test_elements
    dtype = _result_type(elements, test_elements)
    if isinstance(elements, _C.Tensor):
        e = elements.to(dtype)
    else:
        e = _C.full((), elements, dtype=dtype, device=test_elements.device)
    t = test_elements.to(dtype).reshape(-1)
    if t.numel() == 0:
        found = _C.zeros(e.shape, dtype=_C.bool, device=e.device)
    else:
        ordered = t.sort().values
        where = _C.searchsorted(ordered, e.reshape(-1)).clamp(max=t.numel() - 1)
        found = (ordered.take(where) == e.reshape(-1)).reshape(e.shape)
    return found.logical_not() if invert else found


def _check_vectors(tensors, name):
    for t in tensors:
        _check_tensor(name, "tensors", t)
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def _meshgrid(tensors):
    """meshgrid(..., indexing="ij") with the errors torch's cartesian_prod and combinations raise."""
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if any(t.dtype != tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    return _C.meshgrid(*tensors, indexing="ij")


def cartesian_prod(*tensors):
    """Every tuple of one element of each 1-d tensor, in row-major order, one tuple a row."""
    _check_vectors(tensors, "cartesian_prod")
    if len(tensors) == 1:
        return tensors[0]
    return _C.stack([g.reshape(-1) for g in _meshgrid(tensors)], 1)


def combinations(input, r=2, with_replacement=False):
    """The r-length combinations of a 1-d tensor's elements (one a row), as torch builds them: the r-fold
    meshgrid, keeping the index tuples that increase (or never decrease, with replacement)."""
    _check_vectors([input], "combinations")
    _check_int("combinations", "r", r)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty(0, dtype=input.dtype, device=input.device)
    grids = _meshgrid([input] * r)
    index = _meshgrid([_C.arange(input.shape[0], device=input.device)] * r)
    keep = _C.ones(grids[0].shape, dtype=_C.bool, device=input.device)
    for a, b in zip(index, index[1:]):
        keep = keep & ((a <= b) if with_replacement else (a < b))
    return _C.stack([g.masked_select(keep) for g in grids], 1)


def _cov_weights(name, w, n, integral):
    kind = "integral" if integral else "floating point"
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} "
                           f"dimensions")
    if w.dtype.is_floating_point == integral or w.dtype == _C.bool:
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{_type_name(w.dtype)} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    if n and not bool(w.min() >= 0):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of input's rows (variables) over its columns (observations), each observation
    weighted by fweights * aweights, normalised by the weight sum less `correction` (torch's formula)."""
    import warnings

    _check_tensor("cov", "input", input)
    _check_int("cov", "correction", correction)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype == _C.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_tensor("cov", "fweights", fweights)
        _cov_weights("fweights", fweights, n, True)
        w = fweights
    if aweights is not None:
        _check_tensor("cov", "aweights", aweights)
        _cov_weights("aweights", aweights, n, False)
        w = aweights if w is None else w * aweights
    w_sum = n if w is None else w.sum()
    if w is not None and not bool(w_sum != 0):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if bool(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0  # as torch: the result divides by zero (inf or NaN)
    x = x - avg.unsqueeze(1)
    return ((x @ (x if w is None else x * w).t()) / norm).squeeze()


def corrcoef(input):
    """Pearson's correlation coefficients of input's rows: cov scaled by the standard deviations, clipped to
    [-1, 1]; one variable gives c / c (1, or NaN where its variance is 0, inf or NaN)."""
    _check_tensor("corrcoef", "input", input)
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    return (c / std.reshape(-1, 1) / std.reshape(1, -1)).clip(-1, 1)


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim without overflow: a Hillis-Steele scan of logaddexp, log2(n) steps each
    joining every element with the one 2^k before it, so the gradient is logaddexp's, composed."""
    _check_tensor("logcumsumexp", "input", input)
    _check_int("logcumsumexp", "dim", dim)
    dim = _wrap_dim(dim, input.ndim)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_type_name(input.dtype)}'")
    n = input.shape[dim] if input.ndim else 1
    if n <= 1:
        return input.clone()
    y, step = input, 1
    while step < n:
        joined = _C.logaddexp(y.narrow(dim, step, n - step), y.narrow(dim, 0, n - step))
        y, step = _C.cat([y.narrow(dim, 0, step), joined], dim), step * 2
    return y


def _sample_spacing(name, y, x, dx, dim):
    """The spacing of y's samples along dim: x's differences (x 1-d along dim, or broadcast against y), or dx.
    Returns (dim, dx) with dim wrapped, or raises torch's errors for the pair."""
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got x and dx, but expected one of "
                        f"(Tensor y, Tensor x, *, int dim = -1) or (Tensor y, *, Number dx = 1, int dim = -1)")
    _check_tensor(name, "y", y)
    _check_int(name, "dim", dim)
    if x is None:
        if y.dtype == _C.bool:
            raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
        dx = 1 if dx is None else dx
        if not isinstance(dx, (int, float)) or isinstance(dx, bool):
            raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
        return dim, float(dx)
    _check_tensor(name, "x", x)
    return _wrap_dim(dim, y.ndim), x


def _x_spacing(name, y, x, dim):
    """x's differences along dim, shaped to broadcast against y's pairs of neighbours."""
    if y.dtype == _C.bool or x.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    if x.ndim == 1:
        if x.shape[0] != _size(y, dim):
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        x = x.reshape(*[x.shape[0] if d == dim else 1 for d in range(y.ndim)])
    elif x.ndim < y.ndim:
        x = x.reshape(*[1] * (y.ndim - x.ndim), *x.shape)
    return _slice(x, dim, 1) - _slice(x, dim, 0, -1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim: samples y at points x (or spaced dx apart); no samples integrate to 0."""
    dim, spacing = _sample_spacing("trapezoid", y, x, dx, dim)
    if _size(y, dim) == 0:
        return _C.zeros(*[n for d, n in enumerate(y.shape) if d != dim % y.ndim], dtype=y.dtype, device=y.device)
    if x is None:
        return (y.sum(dim) - (_select(y, dim, 0) + _select(y, dim, -1)) * 0.5) * spacing
    spacing = _x_spacing("trapezoid", y, spacing, dim)
    return (spacing * (_slice(y, dim, 0, -1) + _slice(y, dim, 1)) / 2.0).sum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz: trapezoid under its older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along dim: one value fewer than y has samples."""
    dim, spacing = _sample_spacing("cumulative_trapezoid", y, x, dx, dim)
    if x is not None:
        spacing = _x_spacing("cumulative_trapezoid", y, spacing, dim)
    pairs = _slice(y, dim, 0, -1) + _slice(y, dim, 1)
    return (spacing * pairs / 2.0 if x is not None else spacing / 2.0 * pairs).cumsum(dim)


def block_diag(*tensors):
    """The tensors (each at most 2-d; a 1-d one is a row) down the diagonal of a matrix of zeros, in their
    promoted dtype: each block row is the block between zeros, joined with cat so gradients flow to each block."""
    if not tensors:
        return _C.empty(1, 0)
    for i, t in enumerate(tensors):
        _check_tensor("block_diag", "tensors", t)
        if t.device != tensors[0].device:
            raise RuntimeError(f"torch.block_diag: input tensors must all be on the same device. Input 0 is on device "
                               f"{tensors[0].device} and input {i} is on device {t.device}")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
    dtype, device = _result_type(*tensors), tensors[0].device
    blocks = [t.reshape(*([1] * (2 - t.ndim)), *t.shape).to(dtype) for t in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        (m, n), right = b.shape, width - left - b.shape[1]
        zeros = [_C.zeros(m, k, dtype=dtype, device=device) for k in (left, right)]
        rows.append(_C.cat([zeros[0], b, zeros[1]], 1))
        left += n
    return _C.cat(rows, 0)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-d x: columns x^(N-1) ... x^0 (or increasing), int64 for integer x; the powers
    are a cumprod of x repeated, as torch computes them."""
    _check_tensor("vander", "x", x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is not None:
        _check_int("vander", "N", N)
        if N < 0:
            raise RuntimeError("N must be non-negative.")
    n, m = x.shape[0] if N is None else N, x.shape[0]
    dtype = _promote(x.dtype, _C.int64)
    columns = [_C.ones(m, min(n, 1), dtype=dtype, device=x.device)]
    if n > 1:
        columns.append(x.to(dtype).unsqueeze(1).expand(m, n - 1).cumprod(1))
    result = _C.cat(columns, 1) if len(columns) > 1 else columns[0]
    return result if increasing else result.flip(1)


from ._legacy_linalg import (  # noqa: E402,F401  the legacy torch.* linear algebra, for the Tensor methods too
    addr, cholesky, cholesky_inverse, cholesky_solve, eig, geqrf, lstsq, lu, lu_solve, lu_unpack, matrix_exp,
    matrix_power, orgqr, ormqr, pinverse, qr, renorm, solve, svd, symeig, triangular_solve,
)
from ._composite import (  # noqa: E402,F401  torch functions composed here, for the Tensor methods too
    addbmm_, addmm_, addmv_, addr_, adjoint, baddbmm_, bartlett_window, bfloat16, blackman_window, cdouble, cfloat,
    chain_matmul, chalf, char, conj, conj_physical, conj_physical_, diagflat, diagonal_scatter, dim_order, dsplit,
    empty_strided, fill_diagonal_, float_power, float_power_, fmax, fmin, frexp, frobenius_norm, gcd, gcd_,
    hamming_window, hann_window, hardshrink, heaviside, heaviside_, hsplit, index_reduce, index_reduce_, is_conj,
    is_inference, is_neg, is_nonzero, is_same_size, isreal, is_signed, kaiser_window, lcm, lcm_, ldexp, ldexp_,
    logaddexp2, mvlgamma, mvlgamma_, nanquantile, narrow_copy, new_empty_strided, nonzero_static, nuclear_norm,
    positive, prelu, put, put_, quantile, ravel, renorm_, reshape_as, resolve_conj, resolve_neg, rsub, scalar_tensor,
    select_scatter, short, signbit, slice_scatter, split_with_sizes, sum_to_size, tensor_split, tensor_type, tril_,
    triu_, unravel_index, unsafe_chunk, unsafe_split, unsafe_split_with_sizes, vsplit,
)
from .linalg import _return_type  # noqa: E402  after this module's functions: linalg imports linalg_cross at its end

_histogram_result = _return_type("histogram", ["hist", "bin_edges"])
_histogramdd_result = _return_type("histogramdd", ["hist", "bin_edges"])
