"""vkt.linalg: the linear-algebra namespace, as torch.linalg (vector_norm, matrix_norm, svd, svdvals, lu_factor,
solve, inv, det, slogdet, cholesky and solve_triangular are C, in vkt._C; norm chooses between the norms as
torch.linalg.norm does; matrix_power is matmuls of those)."""
from ._C import _LinAlgError as LinAlgError  # noqa: F401
from ._C import _linalg_cholesky as cholesky  # noqa: F401
from ._C import _linalg_det as det  # noqa: F401
from ._C import _linalg_inv as inv  # noqa: F401
from ._C import _linalg_lu_factor as lu_factor  # noqa: F401
from ._C import _linalg_matrix_norm as matrix_norm  # noqa: F401
from ._C import _linalg_slogdet as slogdet  # noqa: F401
from ._C import _linalg_solve as solve  # noqa: F401
from ._C import _linalg_solve_triangular as solve_triangular  # noqa: F401
from ._C import _linalg_svd as svd  # noqa: F401
from ._C import _linalg_svdvals as svdvals  # noqa: F401
from ._C import _linalg_vector_norm as vector_norm  # noqa: F401
from .functional import linalg_cross as cross  # noqa: F401,E402


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
