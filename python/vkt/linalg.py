"""vkt.linalg: the linear-algebra namespace, as torch.linalg (vector_norm, matrix_norm, svd, svdvals, qr, eigh,
eigvalsh, lu, lu_factor, solve, inv, det, slogdet, cholesky, solve_triangular and the _ex functions are C, in vkt._C;
norm chooses between the norms as torch.linalg.norm does; matrix_power, lu_solve, lstsq, pinv, matrix_rank, cond,
multi_dot, matrix_exp, householder_product, tensorinv, tensorsolve, vecdot, diagonal, matmul and vander are
compositions of vkt's ops, so their gradients are the compositions'; ldl_factor_ex, ldl_factor and ldl_solve (not
differentiable, as torch's) are in _linalg_ldl.py)."""
import math

from ._C import _LinAlgError as LinAlgError  # noqa: F401
from ._C import _linalg_cholesky as cholesky  # noqa: F401
from ._C import _linalg_cholesky_ex as cholesky_ex  # noqa: F401
from ._C import _linalg_det as det  # noqa: F401
from ._C import _linalg_eigh as eigh  # noqa: F401
from ._C import _linalg_eigvalsh as eigvalsh  # noqa: F401
from ._C import _linalg_inv as inv  # noqa: F401
from ._C import _linalg_inv_ex as inv_ex  # noqa: F401
from ._C import _linalg_lu as lu  # noqa: F401
from ._C import _linalg_lu_factor as lu_factor  # noqa: F401
from ._C import _linalg_lu_factor_ex as lu_factor_ex  # noqa: F401
from ._C import _linalg_qr as qr  # noqa: F401
from ._C import _linalg_solve_ex as solve_ex  # noqa: F401
from ._C import _linalg_matrix_norm as matrix_norm  # noqa: F401
from ._C import _linalg_slogdet as slogdet  # noqa: F401
from ._C import _linalg_solve as solve  # noqa: F401
from ._C import _linalg_solve_triangular as solve_triangular  # noqa: F401
from ._C import _linalg_svd as svd  # noqa: F401
from ._C import _linalg_svdvals as svdvals  # noqa: F401
from ._C import _linalg_vector_norm as vector_norm  # noqa: F401
from ._C import matmul as _matmul


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """A vector norm over one dim (or all of A), or a matrix norm over two: ord and dim decide, as in
    torch.linalg.norm. A string ord ('fro', 'nuc') is a matrix norm."""
    if out is not None:
        raise TypeError("linalg.norm(): out= is not supported by vkt")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    elif ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if isinstance(ord, str) or (dim is not None and len(dim) == 2):
        if A.ndim < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        if dim is not None and len(dim) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {', '.join(map(str, dim))}")
        return matrix_norm(A, "fro" if ord is None else ord, dim if dim is not None else (-2, -1), keepdim,
                           dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def matrix_power(A, n):
    """A^n by repeated squaring (n < 0: of inv(A)), batched, as torch.linalg.matrix_power; n = 0 gives the identity."""
    from ._C import Tensor, eye
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_matrix_power(): argument 'input' (position 1) must be Tensor, not {type(A).__name__}")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if n == 0:
        return eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    result, square = None, A
    while True:  # the binary digits of n, lowest first
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
        if not n:
            return result if result is not A else A.clone()
        square = square @ square


def _return_type(name, fields):
    """A named tuple type printed as vkt.return_types.<name>, as the C functions' results are."""
    import collections
    t = collections.namedtuple(name, fields)
    t.__module__ = "vkt.return_types"
    t.__repr__ = lambda self: f"vkt.return_types.{name}(" + ", ".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"
    return t


_lstsq_result = _return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _square(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices")


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (left) or X A = B, A^T in place of A when adjoint, A = P L U as linalg.lu_factor gives it:
    two triangular solves and the permutation, so gradients reach LU and B as torch.linalg.lu_solve's."""
    from ._C import _lu_permutation, int32
    _square(LU, "torch.linalg.lu_solve")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if pivots.dtype != int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    n = LU.shape[-1]
    if pivots.ndim < 1 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if not left:  # X A = B is A^T X^T = B^T
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    P = _lu_permutation(pivots, n, LU.dtype)
    if not adjoint:  # A^-1 = U^-1 L^-1 P^T; the unit diagonal of L is implied, so LU serves as both factors
        y = solve_triangular(LU, P.mT @ B, upper=False, unitriangular=True)
        return solve_triangular(LU, y, upper=True)
    y = solve_triangular(LU.mT, B, upper=False)  # A^-T = P L^-T U^-T
    return P @ solve_triangular(LU.mT, y, upper=True, unitriangular=True)


def _eps(dtype):
    from ._C import float32
    return 2.0 ** -23 if dtype == float32 else 2.0 ** -52


def _torch_name(dtype):
    """A dtype as torch's error messages name it."""
    from . import _C
    names = {"float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long", "int32": "Int",
             "uint8": "Byte", "bool": "Bool"}
    return next(v for k, v in names.items() if getattr(_C, k) == dtype)


def _tolerance(S, atol, rtol, size):
    """max(atol, rtol * S_max) per matrix ([..., 1]), torch.linalg.pinv's and matrix_rank's rule: rtol defaults to
    eps * max(m, n) when atol is not given too, else to 0."""
    if rtol is None:
        rtol = _eps(S.dtype) * max(size) if atol is None or (not _is_tensor(atol) and atol <= 0) else 0.0
    top = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    tol = top * (rtol.unsqueeze(-1) if _is_tensor(rtol) else rtol)
    if atol is not None:
        tol = tol.clamp(min=atol) if not _is_tensor(atol) else tol.maximum(atol.unsqueeze(-1))
    return tol


def _is_tensor(x):
    from ._C import Tensor
    return isinstance(x, Tensor)


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudoinverse from the SVD (eigh when hermitian): singular values at or below
    max(atol, rtol * the largest) count as zero, as torch.linalg.pinv."""
    from ._C import where
    if A.ndim < 2:
        raise RuntimeError(f"linalg.pinv({_torch_name(A.dtype)}{{{list(A.shape)}}}): expected a tensor with 2 or more "
                           f"dimensions of float, double, cfloat or cdouble types")
    if hermitian:
        w, V = eigh(A)
        S = w.abs()
    else:
        U, S, Vh = svd(A, full_matrices=False)
    keep = S > _tolerance(S, atol, rtol, A.shape[-2:])
    inv_s = where(keep, 1 / where(keep, S if not hermitian else w, 1), 0)  # no 1/0, whose gradient would be NaN
    if hermitian:
        return (V * inv_s.unsqueeze(-2)) @ V.mT
    return (Vh.mT * inv_s.unsqueeze(-2)) @ U.mT


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values (eigenvalue magnitudes when hermitian) above max(atol, rtol * the largest),
    int64, as torch.linalg.matrix_rank."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    return (S > _tolerance(S, atol, rtol, A.shape[-2:])).sum(-1)


def cond(A, p=None):
    """The condition number of A in norm p (None and 2: the ratio of the extreme singular values; -2 its inverse;
    'fro', 'nuc', 1, -1, inf, -inf: norm(A) norm(A^-1), inf for a singular A), as torch.linalg.cond."""
    from ._C import where
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p is None or p in (2, -2):
        S = svdvals(A)
        big, small = S[..., 0], S[..., -1]
        return big / small if p != -2 else small / big
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _square(A, f"linalg.cond(ord={p})")
    inverse, info = inv_ex(A)
    value = matrix_norm(A, p) * matrix_norm(inverse, p)
    return where(info > 0, math.inf, value)


def lstsq(A, B, rcond=None, *, driver=None):
    """A least-squares solution of A X = B (the minimum-norm one for a wide A): through the QR of A (of A^T when
    wide) for drivers 'gels' and 'gelsy' (the default; A full-rank), through the SVD for 'gelsd' and 'gelss'. The
    fields follow torch.linalg.lstsq: residuals (the squared column norms of A X - B) only where m > n and, for the
    SVD drivers, every A is full-rank; rank for all but 'gels'; singular_values for the SVD drivers."""
    from ._C import empty, int64
    if driver is None:
        driver = "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {_torch_name(A.dtype)} and other's dtype {_torch_name(B.dtype)}")
    vector = B.ndim == A.ndim - 1
    if vector:
        B = B.unsqueeze(-1)
    if B.ndim < 2 or A.shape[-2] != B.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    if rcond is None:
        rcond = _eps(A.dtype) * max(m, n)
    svd_driver = driver in ("gelsd", "gelss")
    if svd_driver:
        X = pinv(A, rtol=rcond) @ B
    elif m >= n:
        Q, R = qr(A)
        X = solve_triangular(R, Q.mT @ B, upper=True)
    else:  # A = R^T Q^T: the minimum-norm solution Q R^-T B
        Q, R = qr(A.mT)
        X = Q @ solve_triangular(R.mT, B, upper=False)
    rank = empty(0, dtype=int64, device=A.device) if driver == "gels" else matrix_rank(A, rtol=rcond)
    sv = svdvals(A) if svd_driver else empty(0, dtype=A.dtype, device=A.device)
    residuals = empty(0, dtype=A.dtype, device=A.device)
    if m > n and driver != "gelsy" and (not svd_driver or bool((rank == n).all())):
        residuals = ((A @ X - B) ** 2).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    return _lstsq_result(X.squeeze(-1) if vector else X, residuals, rank, sv)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first and last may be vectors) in the cheapest order, found by the
    textbook dynamic programme over the chain's sizes, as torch.linalg.multi_dot."""
    if out is not None:
        raise TypeError("linalg.multi_dot(): out= is not supported by vkt")
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0].ndim, tensors[-1].ndim
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    mats = list(tensors)
    if first == 1:
        mats[0] = mats[0].unsqueeze(0)
    if last == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {tuple(tensors[i].shape)} and "
                               f"{tuple(tensors[i + 1].shape)} cannot be multiplied")
    dims = [mats[0].shape[0]] + [t.shape[1] for t in mats]
    k = len(mats)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def chain(i, j):
        return mats[i] if i == j else chain(i, split[i][j]) @ chain(split[i][j] + 1, j)

    result = chain(0, k - 1)
    if first == 1:
        result = result.squeeze(0)
    if last == 1:
        result = result.squeeze(-1)
    return result


# Higham's (2005) Pade [13/13] coefficients and the 1-norm up to which it is exact to double rounding
_PADE13 = [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0]
_THETA13 = 5.371920351148152


def matrix_exp(A):
    """e^A by scaling and squaring with the [13/13] Pade approximant (Higham 2005), batched (one scaling for the
    batch, from its largest 1-norm), made of matmuls and a solve so that its gradient is theirs."""
    from ._C import eye
    _square(A, "linalg.matrix_exp")
    if A.numel() == 0:
        return A.clone()
    norm = float(A.abs().sum(-2).amax())
    s = max(0, math.ceil(math.log2(norm / _THETA13))) if norm > _THETA13 else 0
    A = A / 2 ** s if s else A
    b = _PADE13
    ident = eye(A.shape[-1], dtype=A.dtype, device=A.device)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * ident
    X = solve(V - U, V + U)
    for _ in range(s):
        X = X @ X
    return X


def householder_product(A, tau, *, out=None):
    """The first n columns of H_0 ... H_{k-1}, H_i = I - tau_i v_i v_i^T with v_i column i of A below the
    diagonal and 1 on it (LAPACK's orgqr, torch.linalg.householder_product), applied right to left to the identity's
    columns with matmuls, so that its gradient is theirs."""
    from ._C import eye
    if out is not None:
        raise TypeError("linalg.householder_product(): out= is not supported by vkt")
    name = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau.ndim < 1:
        raise RuntimeError(f"{name}: tau must have at least 1 dimension.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    V = A.tril(-1) + eye(m, n, dtype=A.dtype, device=A.device)
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(A.shape)
    for i in reversed(range(tau.shape[-1])):
        v = V[..., :, i:i + 1]
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mT @ Q)
    return Q


def tensorinv(A, ind=2, *, out=None):
    """The tensor X with tensordot(X, A, ind) the identity: inv of A reshaped to a prod(A.shape[:ind]) square
    matrix, shaped A.shape[ind:] + A.shape[:ind], as torch.linalg.tensorinv."""
    if out is not None:
        raise TypeError("linalg.tensorinv(): out= is not supported by vkt")
    if not _is_tensor(A):
        raise TypeError(f"linalg_tensorinv(): argument 'input' (position 1) must be Tensor, not {type(A).__name__}")
    if not isinstance(ind, int) or isinstance(ind, bool):
        raise TypeError(f"linalg_tensorinv(): argument 'ind' must be int, not {type(ind).__name__}")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    if ind > A.ndim:  # torch has no check of its own (it fails slicing the shape)
        raise RuntimeError(f"Expected 'ind' to be at most the number of dims of the input ({A.ndim}), but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    result, info = inv_ex(A.reshape(rows, rows))
    info = info.item()
    if info:
        raise LinAlgError(f"inv: The diagonal element {info} is zero, the inversion could not be completed "
                          f"because the input matrix is singular.")
    return result.reshape(A.shape[ind:] + A.shape[:ind])


def tensorsolve(A, B, dims=None, *, out=None):
    """The tensor X with tensordot(A, X, X.ndim) = B: A (with its dims moved last) reshaped to a B.numel() square
    matrix, solved against B flattened, shaped A.shape[B.ndim:], as torch.linalg.tensorsolve."""
    from ._C import movedim
    if out is not None:
        raise TypeError("linalg.tensorsolve(): out= is not supported by vkt")
    for x, arg, position in [(A, "input", 1), (B, "other", 2)]:
        if not _is_tensor(x):
            raise TypeError(f"linalg_tensorsolve(): argument '{arg}' (position {position}) must be Tensor, not "
                            f"{type(x).__name__}")
    if dims is not None:
        if not isinstance(dims, (tuple, list)) or not all(type(d) is int for d in dims):
            raise TypeError(f"linalg_tensorsolve(): argument 'dims' must be tuple of ints, not {type(dims).__name__}")
        A = movedim(A, tuple(dims), tuple(range(A.ndim - len(dims), A.ndim)))
    if B.ndim > A.ndim:  # torch has no check of its own (its shape slice A.shape[B.ndim:] fails)
        raise RuntimeError(f"Expected other to have at most as many dims as self ({A.ndim}), but got {B.ndim}")
    shape = A.shape[B.ndim:]
    size = math.prod(shape)
    if size != B.numel():
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {size} != {B.numel()}")
    return solve(A.reshape(size, size), B.flatten()).reshape(shape)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of x and y along dim, broadcasting the other dims (real tensors: no conjugate)."""
    if out is not None:
        raise TypeError("linalg.vecdot(): out= is not supported by vkt")
    from .functional import _type_name
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_type_name(x.dtype)} and y of type {_type_name(y.dtype)} instead")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{_type_name(x.dtype)}")
    return (x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def matmul(input, other, *, out=None):
    if out is not None:
        raise TypeError("linalg.matmul(): out= is not supported by vkt")
    return _matmul(input, other)


def vander(x, *, N=None):
    """The Vandermonde matrices of x's last dim: powers x^0 ... x^(N-1) in increasing order, batched over the other
    dims; the powers are a cumprod, as torch computes them, so integers give int64."""
    from ._C import bool as bool_, cat, ones
    from .functional import _type_name
    if x.dtype == bool_:
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{_type_name(x.dtype)}")
    n = N if N is not None else x.shape[-1] if x.ndim else 0
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return cat([ones(*x.shape, 1, dtype=powers.dtype, device=x.device), powers], -1)


from .functional import linalg_cross as cross  # noqa: F401,E402  last: functional imports this module
from ._linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: F401,E402  it imports helpers of this module
