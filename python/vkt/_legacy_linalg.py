"""The legacy torch.* linear algebra that torch 2.13 still has (svd, qr, cholesky, lu, triangular_solve, geqrf,
ormqr, ...), as compositions of vkt.linalg with torch's signatures, result tuples and errors; vkt.functional
re-exports them, which gives the Tensor methods. Owns geqrf (Householder QR made of vkt ops). eig, symeig, lstsq
and solve only raise torch's removal errors."""
from . import _C
from . import functional as _functional
from . import linalg as _linalg
from .autograd import is_grad_enabled, no_grad

_svd_result = _linalg._return_type("svd", ["U", "S", "V"])
_qr_result = _linalg._return_type("qr", ["Q", "R"])
_lu_with_info_result = _linalg._return_type("_lu_with_info", ["LU", "pivots", "info"])
_lu_unpack_result = _linalg._return_type("lu_unpack", ["P", "L", "U"])
_triangular_solve_result = _linalg._return_type("triangular_solve", ["solution", "cloned_coefficient"])
_geqrf_result = _linalg._return_type("geqrf", ["a", "tau"])

matrix_exp = _linalg.matrix_exp


def _eye(n, k, like):
    return _C.eye(n, k, dtype=like.dtype, device=like.device)


def _batch(*tensors):
    """The broadcast batch shape (all but the last two dims) of tensors."""
    return tuple(_functional.broadcast_shapes(*[t.shape[:-2] for t in tensors]))


def _torch_dtype(dtype):
    return _linalg._torch_name(dtype)


def svd(input, some=True, compute_uv=True):
    """U, S, V with input = U diag(S) V^T (V, not linalg.svd's Vh); compute_uv=False: S, and U, V zero-filled
    (m, m) and (n, n), as torch.svd."""
    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.ndim} dimensions "
                           f"instead")
    if not compute_uv:
        m, n = input.shape[-2:]
        S = _linalg.svdvals(input)
        zeros = _C.zeros(input.shape[:-2] + (m, m), dtype=input.dtype, device=input.device)
        return _svd_result(zeros, S, _C.zeros(input.shape[:-2] + (n, n), dtype=input.dtype, device=input.device))
    U, S, Vh = _linalg.svd(input, full_matrices=not some)
    return _svd_result(U, S, Vh.mT)


def qr(input, some=True):
    """linalg.qr, mode 'reduced' when some, else 'complete'."""
    return _qr_result(*_linalg.qr(input, "reduced" if some else "complete"))


def cholesky(input, upper=False):
    """linalg.cholesky, with torch.cholesky's error prefix."""
    if input.ndim < 2:
        raise RuntimeError("cholesky: The input tensor A must have at least 2 dimensions.")
    try:
        return _linalg.cholesky(input, upper=upper)
    except _linalg.LinAlgError as e:
        raise _linalg.LinAlgError(str(e).replace("linalg.cholesky: ", "cholesky: ", 1)) from None


def _check_solve(b, A, name):
    """torch's checks for cholesky_solve and triangular_solve (b, A): ranks, squareness, sizes, dtypes."""
    if b.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions instead"
                           if name == "cholesky_solve" else
                           f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {b.ndim} "
                           f"dimensions instead")
    if A.ndim < 2:
        raise RuntimeError(f"A should have at least 2 dimensions, but has {A.ndim} dimensions instead"
                           if name == "cholesky_solve" else
                           f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has {A.ndim} "
                           f"dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {A.shape[-1]} by {A.shape[-1]} "
                           f"but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    if A.dtype != b.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_torch_dtype(b.dtype)} "
                           f"and A of type {_torch_dtype(A.dtype)} instead.")


def cholesky_solve(input, input2, upper=False):
    """X with A X = input, A = L L^T (input2 = L) or U^T U (upper, input2 = U), as torch.cholesky_solve."""
    _check_solve(input, input2, "cholesky_solve")
    # the triangle's values, but every entry's gradient: torch's is that of (L L^T)^-1 B for the whole L
    F = input2 - (input2 - (input2.triu() if upper else input2.tril())).detach()
    return _linalg.solve(F.mT @ F if upper else F @ F.mT, input)


def cholesky_inverse(input, upper=False):
    """A^-1 for A = L L^T (or U^T U when upper) from its factor: cholesky_solve of the identity."""
    if input.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are {input.shape[-2]} "
                           f"by {input.shape[-1]} matrices")
    return cholesky_solve(_eye(input.shape[-1], input.shape[-1], input).expand(input.shape), input, upper)


def lu(A, pivot=True, get_infos=False):
    """(LU, pivots) of linalg.lu_factor, or vkt.return_types._lu_with_info (LU, pivots, info) with get_infos, where
    a singular A is reported in info instead of raised, as torch.lu."""
    if A.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
                           f"instead")
    LU, pivots, info = _linalg.lu_factor_ex(A, pivot=pivot)
    return _lu_with_info_result(LU, pivots, info) if get_infos else (LU, pivots)


def lu_solve(b, LU_data, LU_pivots):
    """linalg.lu_solve with torch.lu_solve's argument order."""
    return _linalg.lu_solve(LU_data, LU_pivots, b)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """P, L, U with A = P L U from lu's (LU, pivots); an unpacked part is an empty tensor, as torch.lu_unpack."""
    if LU_data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    if LU_pivots.dtype != _C.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    empty = _C.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + _eye(m, k, LU_data)
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        P = _C._lu_permutation(LU_pivots, m, LU_data.dtype)
    return _lu_unpack_result(P, L, U)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """X with op(A) X = b for triangular A (op: the transpose when transpose), and a copy of A broadcast to the
    batch, as torch.triangular_solve."""
    _check_solve(b, A, "triangular_solve")
    coefficient = A.expand(_batch(A, b) + A.shape[-2:]).clone()
    op = A.mT if transpose else A
    solution = _linalg.solve_triangular(op, b, upper=upper != transpose, unitriangular=unitriangular)
    return _triangular_solve_result(solution, coefficient)


def pinverse(input, rcond=1e-15):
    """linalg.pinv with rtol = rcond."""
    return _linalg.pinv(input, rtol=rcond)


def matrix_power(input, n):
    return _linalg.matrix_power(input, n)


@no_grad()
def _geqrf(A):
    """geqrf without its checks, for vkt.nn.utils.parametrizations too."""
    A = A.clone()
    m, n = A.shape[-2], A.shape[-1]
    taus = []
    for i in range(min(m, n)):
        alpha = A[..., i, i]
        x = A[..., i + 1:, i]
        xnorm = x.norm(2, -1) if i + 1 < m else _C.zeros_like(alpha)
        still = xnorm == 0  # nothing below the diagonal: H = I, as LAPACK's dlarfg
        beta = _C.where(still, alpha, -_C.copysign(_C.hypot(alpha, xnorm), alpha))
        safe = _C.where(still, _C.ones_like(beta), beta)
        tau = _C.where(still, _C.zeros_like(beta), (beta - alpha) / safe)
        scale = _C.where(still, _C.zeros_like(beta), 1.0 / _C.where(still, _C.ones_like(beta), alpha - beta))
        v = x * scale.unsqueeze(-1)
        A[..., i + 1:, i] = v
        A[..., i, i] = beta
        if i + 1 < n:
            w = _C.cat([_C.ones_like(alpha).unsqueeze(-1), v], -1).unsqueeze(-1)
            rest = A[..., i:, i + 1:]
            A[..., i:, i + 1:] = rest - (tau.unsqueeze(-1).unsqueeze(-1) * w) @ (w.mT @ rest)
        taus.append(tau)
    tau = _C.stack(taus, -1) if taus else _C.empty(A.shape[:-2] + (0,), dtype=A.dtype, device=A.device)
    return A, tau


def geqrf(input):
    """Householder QR as LAPACK's geqrf: R on and above the diagonal, the reflectors' vectors below it, and tau.
    Not differentiable, as torch's."""
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if input.requires_grad and is_grad_enabled():
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")
    return _geqrf_result(*_geqrf(input))


def orgqr(input, tau):
    """linalg.householder_product."""
    return _linalg.householder_product(input, tau)


def ormqr(input, tau, other, left=True, transpose=False):
    """Q other (other Q when not left; Q^T when transpose), Q = H_0 ... H_{k-1} the full m x m product of geqrf's
    reflectors: householder_product of the reflectors padded with zero columns to m."""
    name = "torch.ormqr"
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] < tau.shape[-1]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be greater than or equal to tau.shape[-1]")
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    m, k = input.shape[-2:]
    pad = _C.zeros(input.shape[:-1] + (max(m - k, 0),), dtype=input.dtype, device=input.device)
    Q = _linalg.householder_product(_C.cat([input[..., :, :m], pad], -1), tau)
    if transpose:
        Q = Q.mT
    return Q @ other if left else other @ Q


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta input + alpha outer(vec1, vec2); beta = 0 ignores input (NaN included), as torch.addr."""
    if vec1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    outer = vec1.unsqueeze(-1) * vec2
    term = outer if alpha == 1 else alpha * outer
    base = input.expand(outer.shape)
    if beta == 0:
        return term + _C.zeros_like(base)
    return (base if beta == 1 else beta * base) + term


def renorm(input, p, dim, maxnorm):
    """Each slice input.select(dim, i) whose p-norm exceeds maxnorm scaled to norm maxnorm (divided by
    norm + 1e-7, as torch.renorm)."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], "
                         f"but got {dim})")
    dim %= input.ndim
    others = [d for d in range(input.ndim) if d != dim]
    norm = _linalg.vector_norm(input, p, others, keepdim=True)
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor


_REMOVED = {
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
           "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
           "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
           "L_complex, V_complex = torch.linalg.eig(A)",
    "symeig": "The default behavior has changed from using the upper triangular portion of the matrix by default to "
              "using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
              "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
              "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
             "arguments and does not return the QR decomposition in the returned tuple (although it returns other "
             "information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\n"
             "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns "
             "of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
             "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = "
             "torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
             "reversed and does not return the LU factorization.\n\nTo get the LU factorization see `torch.lu`, "
             "which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should "
             "be replaced with:\nX = torch.linalg.solve(A, B)",
}


def _removed(name):
    def f(*args, **kwargs):
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. " + _REMOVED[name])
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Removed from torch in 1.9: raises its RuntimeError. {_REMOVED[name].splitlines()[0]}"
    return f


eig, symeig, lstsq, solve = (_removed(name) for name in ("eig", "symeig", "lstsq", "solve"))
