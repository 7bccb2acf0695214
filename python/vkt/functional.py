"""vkt.functional: products composed of vkt's operators, as torch.functional composes torch's: einsum,
tensordot, inner, outer, kron and cross. Each is views (permute, reshape, as_strided) around one matmul or
elementwise op per step, so it runs on the device of its operands; `vkt.einsum` and the others are these,
and the Tensor methods of the same names call them."""
import math

from . import _C


def _check_tensor(name, arg, value):
    if not isinstance(value, _C.Tensor):
        raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(value).__name__}")


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
