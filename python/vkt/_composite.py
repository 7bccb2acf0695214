"""torch functions composed of vkt's operators (splits, scatters into views, fmax, quantile, gcd, ...) and the
Tensor methods and properties that are Python (type(), mH, layout, ...); vkt.functional re-exports them, so
the Tensor methods of the same names reach them through csrc/python/tensor.c's PYTHON_METHOD."""
import math
import warnings

from . import _C
from ._legacy_linalg import renorm
from ._surface import can_cast, strided
from .autograd import _no_derivative, is_grad_enabled
from .functional import _check_int, _check_tensor, _result_type, _type_name, _wrap_dim, broadcast_shapes
from .linalg import _return_type, matrix_norm, multi_dot, vector_norm
from .nn.functional import _c10_name


def _dim_error(name, need, t):
    return RuntimeError(f"vkt.{name} requires a tensor with at least {need} dimension, but got a tensor with "
                        f"{t.ndim} dimensions!")


def _int_dtype(dtype):
    return not dtype.is_floating_point and dtype != _C.bool


# ---- shape


def ravel(input):
    return input.contiguous().view(-1)  # as PyTorch: over a copy its node is ViewBackward0, not UnsafeViewBackward0


def reshape_as(input, other):
    return input.reshape(*other.shape)


def tensor_split(input, indices_or_sections, dim=0):
    """Views of input along dim: n near-equal parts (the first size % n one longer), or cut at indices."""
    _check_tensor("tensor_split", "input", input)
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    if isinstance(indices_or_sections, _C.Tensor):
        s = indices_or_sections
        if not _int_dtype(s.dtype) or s.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have integer dtype and be 0-D "
                               f"or 1-D, but got {_type_name(s.dtype)} with {s.ndim} dims")
        indices_or_sections = s.item() if s.ndim == 0 else s.tolist()
    dim = _wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        lengths = [size // n + (i < size % n) for i in range(n)]
        cuts = [sum(lengths[:i]) for i in range(1, n)]
    else:
        cuts = list(indices_or_sections)
    bounds = [0] + cuts + [size]
    index = [slice(None)] * input.ndim
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        index[dim] = slice(start, max(start, stop) if stop >= 0 else stop)
        parts.append(input[tuple(index)])
    return tuple(parts)


def _split_along(name, input, sections, dim, need):
    if input.ndim < need:
        raise _dim_error(name, need, input)
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"vkt.{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input, split_sizes, dim=0):
    _check_tensor("split_with_sizes", "input", input)
    return tuple(input.split(list(split_sizes), dim))


def unsafe_chunk(input, chunks, dim=0):
    """chunk: torch's unsafe_ forms skip the view checks of later in-place writes, which vkt's views do not need."""
    _check_tensor("unsafe_chunk", "input", input)
    return tuple(input.chunk(chunks, dim))


def unsafe_split(input, split_size, dim=0):
    _check_tensor("unsafe_split", "input", input)
    _check_int("unsafe_split", "split_size", split_size)
    return tuple(input.split(split_size, dim))


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return split_with_sizes(input, split_sizes, dim)


def narrow_copy(input, dim, start, length):
    _check_tensor("narrow_copy", "input", input)
    return input.narrow(dim, start, length).clone(memory_format=_C.contiguous_format)


def is_same_size(input, other):
    _check_tensor("is_same_size", "other", other, 1)
    return tuple(input.shape) == tuple(other.shape)


def _dim_before(strides, shape, a, b):
    """torch's should_swap for one tensor: -1 when dim a lies outside dim b in memory, 1 inside, 0 undecided."""
    sa, sb = strides[a], strides[b]
    if sa == 0 or sb == 0:
        return 0

    def ge(x, y):
        return y == 0 or (x != 0 and (x >= y or x % y == 0))

    if sa == sb:
        return 0 if ge(shape[b], shape[a]) else 1
    return -1 if ge(sb, sa) else 1 if ge(sa, sb) else 0


def dim_order(input, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory, as torch's (an insertion sort by stride); with
    ambiguity_check, a RuntimeError where size-1 dims or equal strides leave the order open."""
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if not isinstance(ambiguity_check, bool) and not (isinstance(ambiguity_check, list) and all(
            isinstance(f, _C.memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, strides = tuple(input.shape), input.stride()
    ambiguous = 1 in shape or any(a == b for a, b in zip(strides, strides[1:]))
    if (ambiguity_check if isinstance(ambiguity_check, bool) else True) and ambiguous and sum(
            input.is_contiguous(memory_format=f) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given memory "
                           "formats.")
    n = input.ndim
    if n < 2:
        return tuple(range(n))
    contiguous = input.is_contiguous()
    channels_last = n == 4 and input.is_contiguous(memory_format=_C.channels_last)
    if contiguous and not channels_last:
        return tuple(range(n))
    if channels_last and not contiguous:
        return (0, 2, 3, 1)
    perm = list(reversed(range(n)))
    for i in range(1, n):
        j = i
        for k in reversed(range(i)):
            order = _dim_before(strides, shape, perm[k], perm[j])
            if order > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif order < 0:
                break
    if ambiguity_check and any(_dim_before(strides, shape, a, b) != -1 for a, b in zip(perm, perm[1:])):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


def sum_to_size(input, *size):
    """Sums input down to size, which must broadcast to input's shape (the reverse of expand)."""
    size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
    lead = input.ndim - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, input.shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(input.shape)}}}.")
    dims = [d for d, s in enumerate(size) if s == 1 and input.shape[lead + d] != 1]
    out = input.sum(dim=tuple(d + lead for d in dims), keepdim=True) if dims else input
    return out.sum(dim=tuple(range(lead))) if lead else out


def adjoint(input):
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return input.transpose(-2, -1)


def diagflat(input, offset=0):
    return _C.diag(input.reshape(-1), offset)


def unravel_index(indices, shape):
    """The coordinates in `shape` of each flat index, one tensor per dim (indices wrap modulo the size)."""
    if not isinstance(indices, _C.Tensor):
        indices = _C.tensor(indices)
    if not _int_dtype(indices.dtype):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if (indices < 0).any().item():
        raise ValueError("'indices' must be non-negative (vkt does not wrap negative flat indices)")
    coords, rest = [], indices.to(_C.int64)
    for s in reversed(shape):
        coords.append(rest % s if s else rest * 0)
        rest = rest // s if s else rest
    return tuple(reversed(coords))


# ---- scatters into a view of a copy


def _scatter(input, src, view):
    """A copy of input with view(copy) replaced by src; the gradient reaches both through copy_."""
    out = input.clone()
    target = view(out)
    if tuple(src.shape) != tuple(target.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(target.shape)}")
    target.copy_(src)
    return out


def select_scatter(input, src, dim, index):
    return _scatter(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    def view(t):
        index = [slice(None)] * t.ndim
        index[_wrap_dim(dim, t.ndim)] = slice(start, end, step)
        return t[tuple(index)]

    return _scatter(input, src, view)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return _scatter(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def tril_(input, diagonal=0):
    return input.copy_(input.tril(diagonal))


def triu_(input, diagonal=0):
    return input.copy_(input.triu(diagonal))


def fill_diagonal_(input, fill_value, wrap=False):
    """Fills the main diagonal (every dim equal past 2-D); a tall matrix's diagonal restarts after a gap row
    when wrap, as NumPy's fill_diagonal."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    # Built on input's device from broadcast index ranges: element (i, j, ...) is on it when all its indices are
    # equal, with a tall matrix's row index taken modulo columns + 1 when wrap.
    n = input.ndim
    index = [_C.arange(size, device=input.device).reshape([-1 if d == k else 1 for d in range(n)])
             for k, size in enumerate(input.shape)]
    if wrap and n == 2:
        index[0] = index[0] % (input.shape[1] + 1)
    mask = index[0] == index[1]
    for k in range(2, n):
        mask = mask & (index[k - 1] == index[k])
    return input.masked_fill_(mask, fill_value)


# ---- elementwise


def positive(input):
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def signbit(input):
    """Whether the sign bit is set: true for -0.0 and negative NaNs too, read from the float's bits."""
    dtype = input.dtype
    if not dtype.is_floating_point:
        return input < 0 if dtype in (_C.int32, _C.int64) else _C.zeros(input.shape, dtype=_C.bool,
                                                                          device=input.device)
    x = input.detach()
    if dtype == _C.float16:
        x = x.to(_C.float32)
    return x.contiguous().view(_C.int64 if x.dtype == _C.float64 else _C.int32) < 0


def _tensor_pair(name, input, other):
    _check_tensor(name, "input", input)
    _check_tensor(name, "other", other)
    return input, other


def fmax(input, other):
    """The larger of each pair, a NaN losing to a number; the gradient goes to input where it is chosen."""
    a, b = _tensor_pair("fmax", input, other)
    return _C.where((a >= b) | _C.isnan(b), a, b).to(_result_type(a, b))


def fmin(input, other):
    a, b = _tensor_pair("fmin", input, other)
    return _C.where((a <= b) | _C.isnan(b), a, b).to(_result_type(a, b))


def heaviside(input, values):
    """0 below zero, 1 above, values at zero; as torch, only for one dtype, and recorded with no derivative (a
    backward through it raises torch's error)."""
    _check_tensor("heaviside", "input", input)
    _check_tensor("heaviside", "values", values)
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    x, v = input.detach(), values.detach()
    return _no_derivative("heaviside", (_C.where(x == 0, v, (x > 0).to(x.dtype)),), input, values)[0]


def heaviside_(input, values):
    """heaviside in place, recorded with no derivative as torch's (a backward through it raises)."""
    _check_tensor("heaviside", "values", values)
    shape = list(broadcast_shapes(input.shape, values.shape))
    if shape != list(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape {shape}")
    result = heaviside(input.detach(), values.detach())
    return input.copy_(_no_derivative("heaviside_", (result,), input, values)[0])


def float_power(input, exponent):
    """input ** exponent computed in float64."""
    if not isinstance(input, _C.Tensor):
        input = _C.tensor(float(input), dtype=_C.float64,
                          device=exponent.device if isinstance(exponent, _C.Tensor) else None)
    if isinstance(exponent, _C.Tensor):
        exponent = exponent.to(_C.float64)
    elif isinstance(exponent, complex):
        raise TypeError("float_power(): vkt has no complex128 dtype for a complex exponent")
    return input.to(_C.float64) ** exponent


def float_power_(input, exponent):
    """float_power in place, which torch computes in float64 only into a float64 input."""
    if input.dtype != _C.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_type_name(input.dtype)} but the operation's "
                           "result requires dtype Double")
    if isinstance(exponent, complex):
        raise TypeError("float_power_(): vkt has no complex128 dtype for a complex exponent")
    return input.pow_(exponent.to(_C.float64) if isinstance(exponent, _C.Tensor) else exponent)


def ldexp(input, other):
    """input * 2 ** other, in the operands' promoted dtype (float32 where it is an integer one); torch's kernel has
    no bool exponent of a floating input."""
    _tensor_pair("ldexp", input, other)
    if input.dtype.is_floating_point and other.dtype == _C.bool:
        raise NotImplementedError('"ldexp_cpu_exp" not implemented for \'Bool\'')
    dtype = _result_type(input, other)
    dtype = dtype if dtype.is_floating_point else _C.float32
    return input.to(dtype) * _C.pow(2.0, other.to(dtype))


def _kernel_dtype(name, input, other, takes):
    """The dtype torch's binary kernel runs in, the operands' promoted one, where takes(it); else its refusal."""
    _tensor_pair(name, input, other)
    dtype = _result_type(input, other)
    if not takes(dtype):
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_type_name(dtype)}\'')
    return dtype


def logaddexp2(input, other):
    """log2(2**input + 2**other), as logaddexp in base e scaled by ln 2."""
    dtype = _kernel_dtype("logaddexp2", input, other, lambda d: d.is_floating_point)
    return _C.logaddexp(input.to(dtype) * math.log(2), other.to(dtype) * math.log(2)) / math.log(2)


# ---- torch's complex views, of real tensors: vkt has no complex dtype, so no conjugate or negative bit is ever set


def _real_view(name):
    def view(input):
        _check_tensor(name, "input", input)
        return input

    view.__name__ = view.__qualname__ = name
    view.__doc__ = f"{name} of a real tensor: the tensor itself, as torch's."
    return view


conj, conj_physical, resolve_conj, resolve_neg = map(_real_view, ("conj", "conj_physical", "resolve_conj",
                                                                  "resolve_neg"))


def is_conj(input):
    _check_tensor("is_conj", "input", input)
    return False


def is_neg(input):
    _check_tensor("is_neg", "input", input)
    return False


def conj_physical_(input):
    """The values stay; as torch's, the version counter moves, a leaf that requires grad refuses, and the gradient
    passes through a node."""
    _check_tensor("conj_physical_", "input", input)
    return input.copy_(input)


def isreal(input):
    return _C.ones(input.shape, dtype=_C.bool, device=input.device)


def gcd(input, other):
    """Euclid's algorithm on the absolute values, one remainder step per round, until every pair is done."""
    dtype = _kernel_dtype("gcd", input, other, _int_dtype)
    a, b = _C.broadcast_tensors(input.to(dtype).abs(), other.to(dtype).abs())
    while (b != 0).any().item():
        live = b != 0
        a, b = _C.where(live, b, a), _C.where(live, a % _C.where(live, b, 1), 0)
    return a


def lcm(input, other):
    dtype = _kernel_dtype("lcm", input, other, _int_dtype)
    a, b = input.to(dtype), other.to(dtype)
    g = gcd(a, b)
    return _C.where(g == 0, 0, (a // _C.where(g == 0, 1, g) * b).abs()).to(dtype)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    if isinstance(other, _C.Tensor):
        return _C.sub(other, input, alpha=alpha)
    if not input.dtype.is_floating_point and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    dtype = _C.bool if isinstance(other, bool) else _result_type(input, other)  # sub refuses a bool as torch's
    return _C.sub(_C.full(input.shape, other, dtype=dtype, device=input.device), input, alpha=alpha)


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: the sum over i < p of lgamma(input - i / 2), plus
    p (p - 1) / 4 log(pi); integer inputs are computed in the default float dtype."""
    _check_tensor("mvlgamma", "input", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point else input.to(_C._get_default_dtype())
    halves = (_C.arange(p, dtype=x.dtype, device=x.device) - (p - 1)) / 2
    return (x.unsqueeze(-1) + halves).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


_frexp_result = _return_type("frexp", ["mantissa", "exponent"])

# Per float dtype: the integer dtype of its bits, the mantissa's bits, the exponent field's mask and the bias
# that makes a mantissa in [0.5, 1).
_FLOAT_FIELDS = {"float32": (_C.int32, 23, 0xFF, 126), "float64": (_C.int64, 52, 0x7FF, 1022)}


def _binary_exponent(x):
    """e with |x| = m * 2 ** e, m in [0.5, 1), read from x's exponent bits (0 for 0, inf and NaN); a subnormal
    is first scaled by 2 ** 64, exactly, into the normal range."""
    x = x.detach().to(_C.float64 if x.dtype == _C.float64 else _C.float32)
    bits_dtype, mantissa_bits, mask, bias = _FLOAT_FIELDS[x.dtype.numpy_name]
    subnormal = (x.abs() < 2.0 ** -bias) & (x != 0)
    bits = _C.where(subnormal, x * 2.0 ** 64, x).contiguous().view(bits_dtype)
    e = ((bits >> mantissa_bits) & mask) - bias - subnormal.to(bits_dtype) * 64
    return _C.where(_C.isfinite(x) & (x != 0), e, 0).to(_C.int32)


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1); the mantissa is input
    times two exact powers of two (one would overflow for the largest exponents), so its gradient is 2 ** -e."""
    _check_tensor("frexp", "input", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes".replace("torch", "vkt"))
    e = _binary_exponent(input)
    half = e.to(input.dtype).div(2, rounding_mode="floor")
    mantissa = input * _C.exp2(-half) * _C.exp2(half - e.to(input.dtype))
    return _frexp_result(mantissa, e)


def hardshrink(input, lambd=0.5):
    from .nn.functional import hardshrink as f  # here: vkt.nn imports vkt after this module

    _check_tensor("hardshrink", "input", input)
    return f(input, lambd)


def prelu(input, weight):
    from .nn.functional import prelu as f

    _check_tensor("prelu", "input", input)
    _check_tensor("prelu", "weight", weight)
    return f(input, weight)


# ---- in place: the out-of-place op's value copied into input, with torch's refusals of a value input cannot hold


def _into(input, result, cast_error=None):
    """input overwritten by result; as torch's in-place ops, result may not broadcast input to another shape or
    need a cast that can_cast refuses (cast_error, when given, is torch's words for that op)."""
    if tuple(result.shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    if not can_cast(result.dtype, input.dtype):
        raise RuntimeError(cast_error or f"result type {_type_name(result.dtype)} can't be cast to the desired "
                                         f"output type {_type_name(input.dtype)}")
    return input.copy_(result)


def _saved_source(input):
    """input itself, or a copy of it where the op's graph would save input for its backward: the copy into input
    that ends an in-place composition bumps input's version, which would make that saved value stale."""
    return input.clone() if input.requires_grad and is_grad_enabled() else input


def gcd_(input, other):
    return _into(input, gcd(input, other))


def lcm_(input, other):
    return _into(input, lcm(input, other))


def ldexp_(input, other):
    refusal = f"ldexp can't be cast to the desired output type {_type_name(input.dtype)}"
    return _into(input, ldexp(_saved_source(input), other), refusal)


def mvlgamma_(input, p):
    result = mvlgamma(input, p)
    if not input.dtype.is_floating_point:  # sic: torch names the types the other way round
        raise RuntimeError(f"mvlgamma: result type {_type_name(input.dtype)} can't be cast to the desired output "
                           f"type {_type_name(result.dtype)}")
    return input.copy_(result)


def renorm_(input, p, dim, maxnorm):
    return input.copy_(renorm(_saved_source(input), p, dim, maxnorm))


def _in_place_size(input, shape):
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"Bad in-place call: input tensor size {list(input.shape)} and output tensor size "
                           f"{list(shape)} should match")


def _product_into(input, result):
    """The in-place forms of addmm, addmv, addr, baddbmm and addbmm, which do not broadcast input."""
    _in_place_size(input, result.shape)
    return input.copy_(result)


def addmm_(input, mat1, mat2, *, beta=1, alpha=1):
    return _product_into(input, _C.addmm(input, mat1, mat2, beta=beta, alpha=alpha))


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    return _product_into(input, _C.addmv(input, mat, vec, beta=beta, alpha=alpha))


def addr_(input, vec1, vec2, *, beta=1, alpha=1):
    from ._legacy_linalg import addr

    result = addr(input, vec1, vec2, beta=beta, alpha=alpha)
    if tuple(result.shape) != tuple(input.shape):
        raise RuntimeError(f"size mismatch, input: {list(input.shape)}, v1: {list(vec1.shape)}, v2: "
                           f"{list(vec2.shape)}")
    return input.copy_(result)


def _batches_multiply(input, batch1, batch2):
    """Whether baddbmm's shape checks pass: 3-D batches that multiply, an input that broadcasts to their product."""
    if batch1.dim() != 3 or batch2.dim() != 3 or tuple(batch2.shape[:2]) != (batch1.shape[0], batch1.shape[2]):
        return False
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    return input.dim() <= 3 and all(i in (1, s) for i, s in zip(reversed(input.shape), reversed(shape)))


def baddbmm_(input, batch1, batch2, *, beta=1, alpha=1):
    if input.dtype == batch1.dtype and _batches_multiply(input, batch1, batch2):
        # once PyTorch's checks of its arguments pass, it checks input as the result (of batch2's dtype), before its
        # kernel checks anything (beta's cast with nothing to multiply, batch2's dtype)
        if input.dtype != batch2.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {_c10_name(input.dtype)} and output tensor "
                               f"dtype {_c10_name(batch2.dtype)} should match")
        _in_place_size(input, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
    return _product_into(input, _C.baddbmm(input, batch1, batch2, beta=beta, alpha=alpha))


def addbmm_(input, batch1, batch2, *, beta=1, alpha=1):
    """PyTorch's addbmm_ is addbmm_out into input, which resizes input to the product's shape where input only
    broadcasts to it ([5] or [] to [3, 5]); so does vkt's, where input's storage is its own (vkt's resize_ refuses
    to grow a storage that views share, which PyTorch grows under them, or a tensor that requires grad)."""
    result = _C.addbmm(input, batch1, batch2, beta=beta, alpha=alpha)
    if tuple(result.shape) != tuple(input.shape):
        if input.requires_grad and is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation."
                               if input.is_leaf else
                               f"addbmm_(): vkt cannot resize input of shape {list(input.shape)} that requires grad to "
                               f"the product's {list(result.shape)} (PyTorch does); use addbmm() instead")
        input.resize_(result.shape)
    return input.copy_(result)


# ---- indexing: put and index_reduce, as scatters into a flat or dim-wise view


def put_(input, index, source, accumulate=False):
    """source's elements written (or added, with accumulate) at index's flat positions in input, which may be
    negative; as a scatter of input's flat copy, so gradients reach input and source."""
    _check_tensor("put_", "index", index)
    _check_tensor("put_", "source", source)
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_type_name(index.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_type_name(input.dtype)} and source.dtype = {_type_name(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n, flat = input.numel(), index.reshape(-1)
    outside = (flat < -n) | (flat >= n)
    if flat.numel() and outside.any().item():
        bad = flat[outside.nonzero()[0, 0]].item()
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    if not flat.numel():
        return input
    values, positions, src = input.reshape(-1), flat % n, source.reshape(-1)
    put = values.scatter_add(0, positions, src) if accumulate else values.scatter(0, positions, src)
    return input.copy_(put.reshape(input.shape))


def put(input, index, source, accumulate=False):
    _check_tensor("put", "input", input)
    return put_(input.clone(), index, source, accumulate)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce_args(input, dim, index, source, reduce):
    """index_reduce's checks, in torch's order, and index spread over source's shape for scatter_reduce."""
    _check_tensor("index_reduce", "index", index)
    _check_tensor("index_reduce", "source", source)
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    dim = _wrap_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{_type_name(index.dtype)} and size: {list(index.shape)}")
    if index.dtype not in (_C.int32, _C.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {_type_name(index.dtype)}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_type_name(input.dtype)}) and source ({_type_name(source.dtype)}) "
                           "must have the same scalar type")
    count = source.shape[dim] if source.ndim else 1
    if index.numel() != count:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({count}), for dim: {dim}")
    if input.ndim != source.ndim or any(a != b for d, (a, b) in enumerate(zip(input.shape, source.shape)) if d != dim):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. Got "
                           f"self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    size = input.shape[dim] if input.ndim else 1
    if index.numel() and ((index < 0) | (index >= size)).any().item():
        raise IndexError("index out of range in self")
    shape = [1] * source.ndim
    shape[dim] = -1
    return dim, index.to(_C.int64).reshape(shape).expand(source.shape)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with source's slices along dim reduced (prod, mean, amax, amin) into the slices index names: a
    scatter_reduce with index spread over source's shape, whose gradients are scatter_reduce's."""
    _check_tensor("index_reduce", "input", input)
    dim, spread = _index_reduce_args(input, dim, index, source, reduce)
    return input.scatter_reduce(dim, spread, source, reduce, include_self=include_self)


def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    dim, spread = _index_reduce_args(input, dim, index, source, reduce)
    return input.scatter_reduce_(dim, spread, source, reduce, include_self=include_self)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero's rows, cut to size rows or padded to it with rows of fill_value."""
    _check_tensor("nonzero_static", "input", input)
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size].clone()
    pad = _C.full((size - found.shape[0], input.ndim), fill_value, dtype=_C.int64, device=input.device)
    return _C.cat([found, pad])


# ---- torch's older norms and products, over vkt.linalg


def chain_matmul(*matrices):
    """The product of 2-D matrices, in the order linalg.multi_dot chooses; torch deprecates it for multi_dot."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.".replace("torch", "vkt"), stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        if not isinstance(m, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(m).__name__}")
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    return matrices[0].clone() if len(matrices) == 1 else multi_dot(matrices)


def frobenius_norm(input, dim, keepdim=False):
    _check_tensor("frobenius_norm", "input", input)
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_type_name(input.dtype)} instead.")
    return vector_norm(input, 2, dim, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values over dims (-2, -1), or dim; nuclear_norm(input, True) is keepdim, as torch's
    overloads read it."""
    _check_tensor("nuclear_norm", "input", input)
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


# ---- quantile

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_checks(name, input, q, interpolation):
    """quantile's checks, which nanquantile shares: torch words its errors as quantile's in both."""
    _check_tensor(name, "input", input)
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    if isinstance(q, _C.Tensor):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if ((q < 0) | (q > 1)).any().item():
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        return q.detach().reshape(-1).to(input.device), q.ndim == 0
    if not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    return _C.tensor([float(q)], dtype=input.dtype, device=input.device), True


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    q, scalar_q = _quantile_checks(name, input, q, interpolation)
    x = input.reshape(-1) if dim is None else input.movedim(_wrap_dim(dim, input.ndim), -1)
    if x.ndim == 0:
        x = x.reshape(1)
    values = _C.sort(x, dim=-1).values  # NaNs sort last
    last = values.shape[-1] - 1
    if ignore_nan:
        count = (~_C.isnan(values)).sum(dim=-1, keepdim=True).to(input.dtype)
        ranks = (q * (count - 1)).clamp(min=0)
    else:
        ranks = _C.where(_C.isnan(values[..., -1:]), float(last), q * last)
    ranks = ranks.expand(*values.shape[:-1], q.shape[0])
    rounded = {"lower": ranks.floor(), "higher": ranks.ceil(), "nearest": ranks.round()}.get(interpolation)
    if rounded is not None:
        out = values.gather(-1, rounded.to(_C.int64))
    else:
        below = ranks.floor()
        weights = ranks - below if interpolation == "linear" else _C.full_like(ranks, 0.5)
        low = values.gather(-1, below.to(_C.int64))
        high = values.gather(-1, ranks.ceil().to(_C.int64))
        out = _C.lerp(low, high, weights)
    out = out.movedim(-1, 0)  # q's dim first, as torch
    if keepdim:
        shape = [1] * input.ndim if dim is None else list(input.shape)
        if dim is not None and input.ndim:
            shape[_wrap_dim(dim, input.ndim)] = 1
        out = out.reshape(q.shape[0], *shape)
    return out[0] if scalar_q else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles along dim (all values when None), from a sort; a NaN in a row makes its result NaN."""
    if out is not None:
        raise TypeError("quantile(): out= is not supported by vkt")
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaNs: a row of NaNs only gives NaN."""
    if out is not None:
        raise TypeError("nanquantile(): out= is not supported by vkt")
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ---- factories


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    if isinstance(s, complex):
        raise TypeError("scalar_tensor(): vkt has no complex64 dtype for a complex value")
    # a fill: 300 into uint8 fails, as in PyTorch
    t = _C.full((), s, dtype=dtype or _C._get_default_dtype(), device=device)
    return t.requires_grad_(True) if requires_grad else t


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """Uninitialised memory seen with the given strides (in elements)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    t = _C.empty(n, dtype=dtype, device=device).as_strided(size, stride)
    return t.requires_grad_(True) if requires_grad else t


def new_empty_strided(input, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                      requires_grad=False):
    return empty_strided(size, stride, dtype=dtype or input.dtype, device=device or input.device,
                         requires_grad=requires_grad)


# ---- window functions, as torch's kernels compute them, from arange on the requested device


def _window_points(name, window_length, periodic, dtype, device):
    """arange(n) for a window of window_length points (n one more when periodic, the last point then dropped),
    in the dtype the window is computed in (float32 for float16); None for lengths 0 and 1."""
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dtype = dtype or _C._get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 2:
        return None
    n = window_length + 1 if periodic else window_length
    return _C.arange(n, dtype=_C.float32 if dtype == _C.float16 else dtype, device=device)


def _window(values, window_length, dtype, device, requires_grad):
    """The first window_length of values (all of them when not periodic) in dtype; ones for a length of 1 and empty
    for 0, where values is None."""
    dtype = dtype or _C._get_default_dtype()
    w = _C.ones(window_length, dtype=dtype, device=device) if values is None else values[:window_length].to(dtype)
    return w.requires_grad_(True) if requires_grad else w


def _cosine_sum(k, *terms):
    """sum of a * cos(j * 2 pi k / (n - 1)) over the (j, a) terms: the hann, hamming and blackman windows."""
    angle = k * (2 * math.pi / (k.shape[0] - 1))
    return sum(a * (j * angle).cos() if j else a for j, a in terms)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    k = _window_points("hamming_window", window_length, periodic, dtype, device)
    values = None if k is None else _cosine_sum(k, (1, -beta), (0, alpha))
    return _window(values, window_length, dtype, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    k = _window_points("hann_window", window_length, periodic, dtype, device)
    values = None if k is None else _cosine_sum(k, (1, -0.5), (0, 0.5))
    return _window(values, window_length, dtype, device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    k = _window_points("blackman_window", window_length, periodic, dtype, device)
    values = None if k is None else _cosine_sum(k, (2, 0.08), (1, -0.5), (0, 0.42))
    return _window(values, window_length, dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """A triangle: 2k / (n - 1) rising over the first half of the n points, 2 minus that over the rest."""
    k = _window_points("bartlett_window", window_length, periodic, dtype, device)
    values = None
    if k is not None:
        rising = k * (2 / (k.shape[0] - 1))
        values = _C.where(k < (k.shape[0] - 1) // 2 + 1, rising, 2 - rising)
    return _window(values, window_length, dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad=False):
    """i0(beta * sqrt(1 - ((k - m) / m) ** 2)) / i0(beta), m = (n - 1) / 2."""
    k = _window_points("kaiser_window", window_length, periodic, dtype, device)
    values = None
    if k is not None:
        middle = (k.shape[0] - 1) / 2
        x = beta * (1 - ((k - middle) / middle) ** 2).clamp_min(0).sqrt()
        values = x.i0() / _C.full((1,), beta, dtype=k.dtype, device=k.device).i0()
    return _window(values, window_length, dtype, device, requires_grad)


# ---- Tensor methods and properties that are Python

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int", "int64": "Long",
               "uint8": "Byte", "bool": "Bool"}
_MISSING_TYPES = {"Char": "int8", "Short": "int16", "BFloat16": "bfloat16", "ComplexFloat": "complex64",
                  "ComplexDouble": "complex128"}


def tensor_type(input, dtype=None, non_blocking=False, **kwargs):
    """No dtype: the type's name ('vkt.FloatTensor', 'vkt.vulkan.FloatTensor'); else a cast to a dtype or to a
    type name (torch.* names are accepted too)."""
    if dtype is None:
        where = "vkt." if input.device.type == "cpu" else "vkt.vulkan."
        return where + _TYPE_NAMES[input.dtype.numpy_name] + "Tensor"
    if isinstance(dtype, _C.dtype):
        return input.to(dtype=dtype)
    if not isinstance(dtype, str):
        raise TypeError(f"type(): argument 'dtype' must be vkt.dtype or str, not {dtype.__class__.__name__}")
    parts = dtype.split(".")
    kind = parts[-1][:-len("Tensor")] if parts[-1].endswith("Tensor") else None
    device = "vulkan" if len(parts) == 3 and parts[1] in ("vulkan", "cuda") else "cpu"
    if kind in _MISSING_TYPES:
        raise TypeError(f"type(): vkt has no {_MISSING_TYPES[kind]} dtype for {dtype}")
    names = {v: k for k, v in _TYPE_NAMES.items()}
    if parts[0] not in ("vkt", "torch") or kind not in names or len(parts) > 3:
        raise ValueError(f"invalid type: '{dtype}'")
    return input.to(device=device, dtype=getattr(_C, names[kind]))


def _missing_cast(name, dtype_name):
    def cast(input, memory_format=None):
        raise TypeError(f"{name}(): vkt has no {dtype_name} dtype")

    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"torch's cast to {dtype_name}: a TypeError, as vkt has no such dtype."
    return cast


char, short, bfloat16, cfloat, cdouble, chalf = (_missing_cast(n, d) for n, d in (
    ("char", "int8"), ("short", "int16"), ("bfloat16", "bfloat16"), ("cfloat", "complex64"),
    ("cdouble", "complex128"), ("chalf", "complex32")))


def is_nonzero(input):
    """The truth of a one-element tensor, with bool()'s errors for any other."""
    _check_tensor("is_nonzero", "input", input, 1)
    return bool(input)


def is_inference(input):
    _check_tensor("is_inference", "input", input, 1)
    return input.is_inference()


def is_signed(input):
    return input.dtype not in (_C.uint8, _C.bool)


def _matrix_only(name, input, batches=True):
    if input.ndim < 2 or (not batches and input.ndim != 2):
        what = "matrices or batches of matrices" if batches else "matrices (2-D tensors)"
        raise RuntimeError(f"tensor.{name} is only supported on {what}. Got {input.ndim}-D tensor.")


def _tensor_mH(input):
    _matrix_only("mH", input)
    return input.transpose(-2, -1)


def _tensor_H(input):
    if input.ndim == 0:
        return input
    _matrix_only("H", input, batches=False)
    return input.transpose(0, 1)


def _tensor_imag(input):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


_PROPERTIES = {
    "itemsize": lambda t: t.dtype.itemsize,
    "nbytes": lambda t: t.numel() * t.dtype.itemsize,
    "mH": _tensor_mH,
    "H": _tensor_H,
    "real": lambda t: t,
    "imag": _tensor_imag,
    "layout": lambda t: strided,
    "is_sparse": lambda t: False,
    "is_quantized": lambda t: False,
    "is_meta": lambda t: False,
}


def _tensor_property(input, name):
    return _PROPERTIES[name](input)
