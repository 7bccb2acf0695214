"""vkt.linalg.ldl_factor_ex, ldl_factor and ldl_solve: LDL^T with Bunch-Kaufman pivoting as LAPACK's sytrf and
sytrs (lower, as torch calls them), written as a loop over the columns of vkt ops on the whole batch, each matrix
taking its own pivots through masks. Owns the packed LD layout and the 1-based pivots (negative for 2x2 blocks)."""
import math

from . import _C
from .autograd import _no_derivative, no_grad
from .linalg import _return_type, _square, _torch_name

_ldl_factor_ex_result = _return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
_ldl_factor_result = _return_type("linalg_ldl_factor", ["LD", "pivots"])

_ALPHA = (1 + math.sqrt(17.0)) / 8  # Bunch and Kaufman's threshold: it bounds the growth of the entries


def _check_tensor(x, fn, arg, position):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be Tensor, not {type(x).__name__}")


def _check_float(A, name):
    if not A.is_floating_point():
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {_torch_name(A.dtype)}")


def _check_kernel(A, kernel):
    """torch's LAPACK kernels take float32 and float64 (and complex), not float16: its dispatch error."""
    if A.dtype == _C.float16:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Half\'')


def _infer_size(a, b):
    """The broadcast of shapes a and b, with the error of torch's infer_size (a's and b's sizes, the output's dim)."""
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + tuple(a), (1,) * (ndim - len(b)) + tuple(b)
    for i in reversed(range(ndim)):
        if a[i] != b[i] and 1 not in (a[i], b[i]):
            raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at "
                               f"non-singleton dimension {i}")
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _sym(T):
    """The lower triangle mirrored: sytf2 computes only the lower entries, whose rounding the mirror keeps."""
    return T.tril() + T.tril(-1).mT


def _swap(X, i, j):
    """X (b, n, ...) with rows i and j (per matrix, (b,) int64) exchanged along dim 1."""
    ar = _C.arange(X.shape[1], device=X.device)
    i, j = i.unsqueeze(-1), j.unsqueeze(-1)
    perm = _C.where(ar == i, j, _C.where(ar == j, i, ar))
    return X.gather(1, perm.reshape(perm.shape + (1,) * (X.ndim - 2)).expand(X.shape))


def _sytrf(A):
    """LD, pivots (int64, 1-based) and info of each matrix of A (b, n, n), b, n > 0, from its lower triangle:
    LAPACK's sytf2 step for step. Column k chooses a 1x1 block (pivot A[k, k], or A[imax, imax] swapped in) or a
    2x2 block (rows k and imax) by the Bunch-Kaufman test; a matrix whose column k closes a 2x2 block skips it."""
    b, n = A.shape[0], A.shape[-1]
    W = _sym(A)  # the trailing block W[k:, k:] is kept whole; the finished columns left of it are L's and D's
    info = _C.zeros(b, dtype=_C.int64, device=A.device)
    skip = _C.zeros(b, dtype=_C.bool, device=A.device)
    pending = _C.zeros(b, dtype=_C.int64, device=A.device)  # a 2x2 block's pivot, for its second column
    pivots = []
    for k in range(n):
        m = n - k
        T = W[:, k:, k:]
        absakk = T[:, 0, 0].abs()
        if m > 1:
            colmax, imax = T[:, 1:, 0].abs().max(-1)
            imax = imax + 1
        else:
            colmax, imax = _C.zeros_like(absakk), _C.zeros(b, dtype=_C.int64, device=A.device)
        # max(absakk, colmax) == 0 as MKL's LAPACK computes it (maxsd: a NaN absakk gives colmax), so NaNs go as torch's
        zero = _C.where(absakk > colmax, absakk, colmax) == 0
        ar = _C.arange(m, device=A.device)
        rowmax = _C.where(ar == imax.unsqueeze(-1), 0, T.gather(1, imax.view(b, 1, 1).expand(b, 1, m)).squeeze(1).abs())
        rowmax = rowmax.amax(-1)
        diag = T.diagonal(0, -2, -1).gather(1, imax.unsqueeze(-1)).squeeze(-1).abs()
        keep = (absakk >= _ALPHA * colmax) | (absakk >= _ALPHA * colmax * (colmax / rowmax))
        act = ~skip & ~zero
        two = act & ~keep & ~(diag >= _ALPHA * rowmax)
        one = act & ~two
        last = two.long()  # the block's last column, swapped with the pivot's
        kp = _C.where(act & ~keep, imax, last)
        T2 = _swap(_swap(T, last, kp).mT, last, kp).mT  # P T P
        new = T2
        if m > 1:  # 1x1: L's column x / d, and A22 - x x^T / d
            d11 = 1 / T2[:, 0, 0]
            x = T2[:, 1:, 0]
            S = _sym(T2[:, 1:, 1:] + x.unsqueeze(-1) * (-d11.unsqueeze(-1) * x).unsqueeze(-2))
            below = _C.cat([(x * d11.unsqueeze(-1)).unsqueeze(-1), S], -1)
            new = _C.where(one.view(b, 1, 1), _C.cat([T2[:, :1], below], 1), T2)
        if m > 2:  # 2x2: L's columns [a0 a1] D^-1, and A22 - [a0 a1] D^-1 [a0 a1]^T, in sytf2's order of operations
            d21 = T2[:, 1, 0]
            d11 = (T2[:, 1, 1] / d21).unsqueeze(-1)
            d22 = (T2[:, 0, 0] / d21).unsqueeze(-1)
            d21 = ((1 / (d11 * d22 - 1)) / d21.unsqueeze(-1))
            a0, a1 = T2[:, 2:, 0], T2[:, 2:, 1]
            wk = d21 * (d11 * a0 - a1)
            wkp1 = d21 * (d22 * a1 - a0)
            S = _sym(T2[:, 2:, 2:] - a0.unsqueeze(-1) * wk.unsqueeze(-2) - a1.unsqueeze(-1) * wkp1.unsqueeze(-2))
            below = _C.cat([wk.unsqueeze(-1), wkp1.unsqueeze(-1), S], -1)
            new = _C.where(two.view(b, 1, 1), _C.cat([T2[:, :2], below], 1), new)
        W[:, k:, k:] = _C.where(skip.view(b, 1, 1), T, new)
        pivot = kp + (k + 1)
        pivots.append(_C.where(skip, pending, _C.where(two, -pivot, pivot)))
        info = _C.where((info == 0) & zero & ~skip, k + 1, info)
        pending, skip = -pivot, two
    return W.tril(), _C.stack(pivots, -1), info


def _sytrs(LD, pivots, B):
    """X with A X = B for A = L D L^T as _sytrf packs it (LD (b, n, n), pivots (b, n) int64, B (b, n, r)): LAPACK's
    sytrs, the swaps and L^-1 forwards with D^-1 per block, then L^-T and the swaps backwards."""
    b, n = LD.shape[0], LD.shape[-1]
    X = B.clone()
    kp = pivots.abs() - 1
    zero = _C.zeros(b, dtype=_C.bool, device=LD.device)
    starts, second = [], zero  # starts[k]: a 2x2 block begins at row k
    for k in range(n):
        two = (pivots[:, k] < 0) & ~second
        one = ~two & ~second
        X = _swap(X, _C.where(two, k + 1, k), _C.where(second, k, kp[:, k]))
        top = X[:, k:k + 1]
        if k + 1 < n:
            lk = LD[:, k + 1:, k].clone()
            lk[:, 0] = _C.where(two, 0, lk[:, 0])  # a 2x2 block's D entry, not L's
            below = X[:, k + 1:] - lk.unsqueeze(-1) * top
            if k + 2 < n:
                lk1 = _C.cat([_C.zeros_like(lk[:, :1]), LD[:, k + 2:, k + 1]], 1)
                below = _C.where(two.view(b, 1, 1), below - lk1.unsqueeze(-1) * X[:, k + 1:k + 2], below)
            X[:, k + 1:] = _C.where(second.view(b, 1, 1), X[:, k + 1:], below)
        row = _C.where(one.unsqueeze(-1), top.squeeze(1) * (1 / LD[:, k, k]).unsqueeze(-1), top.squeeze(1))
        if k + 1 < n:
            akm1k = LD[:, k + 1, k].unsqueeze(-1)
            akm1, ak = LD[:, k, k].unsqueeze(-1) / akm1k, LD[:, k + 1, k + 1].unsqueeze(-1) / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = X[:, k] / akm1k, X[:, k + 1] / akm1k
            row = _C.where(two.unsqueeze(-1), (ak * bkm1 - bk) / denom, row)
            X[:, k + 1] = _C.where(two.unsqueeze(-1), (akm1 * bk - bkm1) / denom, X[:, k + 1])
        X[:, k] = row
        starts.append(two)
        second = two
    for k in reversed(range(n)):
        closes = starts[k - 1] if k else zero  # row k closes a 2x2 block (k-1, k): both rows are done here
        opens = starts[k]
        if k + 1 < n:
            rest = X[:, k + 1:]
            X[:, k] = _C.where(opens.unsqueeze(-1), X[:, k], X[:, k] - (LD[:, k + 1:, k].unsqueeze(-1) * rest).sum(1))
            if k:
                X[:, k - 1] = _C.where(closes.unsqueeze(-1),
                                       X[:, k - 1] - (LD[:, k + 1:, k - 1].unsqueeze(-1) * rest).sum(1), X[:, k - 1])
        X = _swap(X, _C.full((b,), k, dtype=_C.int64, device=LD.device), _C.where(opens, k, kp[:, k]))
    return X


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """LD, pivots (int32) and info of A = L D L^T (Bunch-Kaufman), batched, from A's lower triangle, packed as LAPACK's
    sytrf packs it and torch.linalg.ldl_factor_ex returns it: L's unit columns below the diagonal, D's 1x1 and 2x2
    blocks on and beside it, pivots 1-based and negative on both columns of a 2x2 block, info > 0 where a pivot
    column is zero. hermitian is the same factorization for real A. Not differentiable, as torch's."""
    return _factor(A, check_errors, out, "linalg_ldl_factor_ex", "torch.linalg.ldl_factor_ex")


def ldl_factor(A, *, hermitian=False, out=None):
    """ldl_factor_ex's LD and pivots; a zero pivot column raises torch's error."""
    LD, pivots, _ = _factor(A, True, out, "linalg_ldl_factor", "torch.linalg.ldl_factor")
    return _ldl_factor_result(LD, pivots)


def _factor(A, check_errors, out, fn, name):
    if out is not None:
        raise TypeError(f"{name[6:]}(): out= is not supported by vkt")
    _check_tensor(A, fn, "input", 1)
    _square(A, "torch.linalg.ldl_factor_ex")
    _check_float(A, "torch.linalg.ldl_factor_ex")
    batch, n = A.shape[:-2], A.shape[-1]
    if A.numel() == 0:
        LD = _C.zeros(A.shape, dtype=A.dtype, device=A.device)
        pivots = _C.zeros(batch + (n,), dtype=_C.int32, device=A.device)
        info = _C.zeros(batch, dtype=_C.int32, device=A.device)
    else:
        _check_kernel(A, "ldl_factor_kernel_cpu")
        with no_grad():
            LD, pivots, info = _sytrf(A.detach().reshape(-1, n, n))
        LD, pivots, info = LD.reshape(A.shape), pivots.int().reshape(batch + (n,)), info.int().reshape(batch)
    if check_errors:
        first = next((i for i in info.flatten().tolist() if i), 0)
        if first:
            # torch 2.13 has no message for sytrf's info > 0 (it fails an internal assert): this one says what it is
            raise RuntimeError(f"{name}: The factorization could not be completed because the input is singular: "
                               f"the block diagonal factor D has a zero pivot at column {first}.")
    return _ldl_factor_ex_result(*_no_derivative("linalg_ldl_factor_ex", (LD, pivots, info), A))


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B for A = L D L^T as ldl_factor gives it (LD, pivots), B broadcast over LD's batch, as
    torch.linalg.ldl_solve (LAPACK's sytrs). Not differentiable, as torch's."""
    name = "torch.linalg.ldl_solve"
    if out is not None:
        raise TypeError("linalg.ldl_solve(): out= is not supported by vkt")
    for x, arg, position in [(LD, "LD", 1), (pivots, "pivots", 2), (B, "B", 3)]:
        _check_tensor(x, "linalg_ldl_solve", arg, position)
    _square(LD, name)
    _check_float(LD, name)
    if B.dtype != LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_torch_name(B.dtype)} and "
                           f"A of type {_torch_name(LD.dtype)} instead.")
    if B.ndim < 2:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions" if B.ndim == 0 else
                         "Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {n} by {n} but each b matrix is "
                           f"{B.shape[-2]} by {B.shape[-1]}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(pivots.shape)} instead")
    if pivots.is_floating_point() or pivots.dtype == _C.bool:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {_torch_name(pivots.dtype)}")
    batch = _infer_size(B.shape[:-2], LD.shape[:-2])
    r = B.shape[-1]
    _check_kernel(LD, "ldl_solve_kernel_cpu")
    if not math.prod(batch) or not n or not r:
        X = _C.zeros(batch + (n, r), dtype=B.dtype, device=B.device)
    else:
        with no_grad():
            X = _sytrs(LD.detach().expand(batch + (n, n)).reshape(-1, n, n),
                       pivots.long().expand(batch + (n,)).reshape(-1, n),
                       B.detach().expand(batch + (n, r)).reshape(-1, n, r)).reshape(batch + (n, r))
    return _no_derivative("linalg_ldl_solve", (X,), LD, B)[0]
