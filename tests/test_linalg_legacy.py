# The legacy torch.* linear algebra (svd, qr, cholesky*, lu*, triangular_solve, pinverse, matrix_power, geqrf,
# orgqr, ormqr, addr, renorm): values, result tuple types and the gradients of a weighted sum against torch 2.13's
# float64 results on the CPU, on both devices in float32 and float64; errors against torch's; the Tensor methods
# against the functions.
import warnings
import zlib

import numpy as np
import pytest

import vkt

from conftest import assert_close, raised

torch = pytest.importorskip("torch")

TOL = {"float32": 2e-4, "float64": 1e-9}


def general(*shape):
    return lambda rng: rng.standard_normal(shape)


def spd(*shape):
    def make(rng):
        a = rng.standard_normal(shape)
        return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    return make


def triangular(*shape, upper=False):
    def make(rng):
        a = 0.5 * rng.standard_normal(shape) + 2 * np.eye(shape[-1])
        return np.triu(a) if upper else np.tril(a)
    return make


def with_nan(*shape):
    return lambda rng: np.full(shape, np.nan)


def svd_product(lib, A, **kw):
    """U diag(S) V^T and S: free of the singular vectors' signs."""
    U, S, V = lib.svd(A, **kw)
    k = S.shape[-1]
    return (U[..., :, :k] * S.unsqueeze(-2)) @ V[..., :, :k].mT, S


# name, the call given the library (vkt or torch) and the inputs, input makers, differentiable, tolerance factor
CASES = [
    ("svd", svd_product, [general(2, 4, 3)], True, 1),
    ("svd_wide_full", lambda L, A: svd_product(L, A, some=False), [general(3, 5)], True, 1),
    ("svd_no_uv", lambda L, A: L.svd(A, compute_uv=False), [general(2, 3, 4)], True, 1),
    ("qr", lambda L, A: L.qr(A), [general(2, 4, 3)], True, 1),
    ("qr_complete", lambda L, A: L.qr(A, some=False), [general(4, 3)], False, 1),
    ("cholesky", lambda L, A: L.cholesky(A), [spd(2, 3, 3)], True, 1),
    ("cholesky_upper", lambda L, A: L.cholesky(A, upper=True), [spd(3, 3)], True, 1),
    ("cholesky_solve", lambda L, B, F: L.cholesky_solve(B, F), [general(2, 3, 2), triangular(3, 3)], True, 1),
    ("cholesky_solve_upper", lambda L, B, F: L.cholesky_solve(B, F, upper=True),
     [general(3, 2), triangular(2, 3, 3, upper=True)], True, 1),
    ("cholesky_inverse", lambda L, F: L.cholesky_inverse(F), [triangular(2, 3, 3)], True, 1),
    ("cholesky_inverse_upper", lambda L, F: L.cholesky_inverse(F, upper=True), [triangular(3, 3, upper=True)], True, 1),
    ("lu", lambda L, A: L.lu(A), [general(2, 3, 3)], True, 1),
    ("lu_infos", lambda L, A: L.lu(A, get_infos=True), [general(4, 3)], True, 1),
    ("lu_singular", lambda L, A: L.lu(A, get_infos=True), [lambda rng: np.zeros((2, 2))], False, 1),
    ("lu_solve", lambda L, B, A: L.lu_solve(B, *L.lu(A)), [general(2, 3, 2), general(2, 3, 3)], True, 1),
    ("lu_unpack", lambda L, A: L.lu_unpack(*L.lu(A)), [general(2, 3, 3)], True, 1),
    ("lu_unpack_tall", lambda L, A: L.lu_unpack(*L.lu(A)), [general(4, 3)], True, 1),
    ("lu_unpack_wide", lambda L, A: L.lu_unpack(*L.lu(A), unpack_pivots=False), [general(3, 4)], True, 1),
    ("lu_unpack_pivots", lambda L, A: L.lu_unpack(*L.lu(A), unpack_data=False), [general(3, 3)], False, 1),
    ("triangular_solve", lambda L, B, A: L.triangular_solve(B, A), [general(2, 3, 2), triangular(3, 3, upper=True)],
     True, 1),
    ("triangular_solve_lower_t", lambda L, B, A: L.triangular_solve(B, A, upper=False, transpose=True),
     [general(3, 4), triangular(2, 3, 3)], True, 1),
    ("triangular_solve_unit", lambda L, B, A: L.triangular_solve(B, A, unitriangular=True),
     [general(2, 3, 1), triangular(2, 3, 3, upper=True)], True, 1),
    ("pinverse", lambda L, A: L.pinverse(A), [general(2, 4, 3)], True, 10),
    ("pinverse_rcond", lambda L, A: L.pinverse(A, rcond=0.5), [general(3, 5)], False, 10),
    ("matrix_power", lambda L, A: L.matrix_power(A, 3), [general(2, 3, 3)], True, 1),
    ("matrix_power_neg", lambda L, A: L.matrix_power(A, -2), [spd(3, 3)], True, 1),
    ("matrix_power_0", lambda L, A: L.matrix_power(A, 0), [general(2, 2, 2)], False, 1),
    ("matrix_exp", lambda L, A: L.matrix_exp(A), [general(2, 3, 3)], True, 10),
    ("geqrf", lambda L, A: L.geqrf(A), [general(2, 4, 3)], False, 1),
    ("geqrf_wide", lambda L, A: L.geqrf(A), [general(3, 4)], False, 1),
    ("orgqr", lambda L, A, tau: L.orgqr(A, tau), [general(2, 4, 3), general(2, 3)], True, 1),
    ("ormqr", lambda L, A, tau, C: L.ormqr(A, tau, C), [general(4, 3), general(3), general(4, 2)], True, 1),
    ("ormqr_right_t", lambda L, A, tau, C: L.ormqr(A, tau, C, left=False, transpose=True),
     [general(2, 4, 2), general(2, 2), general(2, 3, 4)], True, 1),
    ("ormqr_left_t", lambda L, A, tau, C: L.ormqr(A, tau, C, transpose=True),
     [general(3, 3), general(3), general(3, 2)], True, 1),
    ("addr", lambda L, M, u, v: L.addr(M, u, v), [general(3, 4), general(3), general(4)], True, 1),
    ("addr_scaled", lambda L, M, u, v: L.addr(M, u, v, beta=0.5, alpha=-2),
     [general(1, 4), general(3), general(4)], True, 1),
    ("addr_beta0", lambda L, M, u, v: L.addr(M, u, v, beta=0), [with_nan(3, 2), general(3), general(2)], False, 1),
    ("renorm", lambda L, A: L.renorm(A, 2, 0, 1.0), [general(3, 4)], True, 1),
    ("renorm_p1", lambda L, A: L.renorm(A, 1, -1, 2.0), [general(2, 3, 4)], True, 1),
    ("renorm_p3", lambda L, A: L.renorm(A, 3, 1, 1.5), [general(2, 3, 4)], True, 1),
]


def outputs(r):
    return list(r) if isinstance(r, tuple) else [r]


def weighted_sum(outs):
    """A sum of every float output, each weighted by a fixed ramp so that a transposed gradient shows."""
    total = 0
    for o in outs:
        if o.dtype in (vkt.float32, vkt.float64, torch.float64) and o.numel():
            w = np.linspace(0.5, 1.5, o.numel()).reshape(tuple(o.shape))
            total = total + (o * (torch.tensor(w) if isinstance(o, torch.Tensor) else
                                  vkt.tensor(w.astype(np.float32 if o.dtype == vkt.float32 else np.float64),
                                             device=o.device))).sum()
    return total


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legacy_linalg(device, dtype, case):
    name, call, makers, differentiable, factor = case
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [m(rng).astype(dtype) for m in makers]
    xs = [vkt.tensor(a, device=device, requires_grad=differentiable) for a in arrays]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=differentiable) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, ref = call(vkt, *xs), call(torch, *ts)
    if isinstance(ref, tuple) and type(ref) is not tuple:
        assert type(got).__name__ == type(ref).__name__ and all(getattr(ref, f) is r for f, r in zip(got._fields, ref))
        assert repr(got).startswith(f"vkt.return_types.{type(ref).__name__}(")
    tol = factor * TOL[dtype]
    for g, r in zip(outputs(got), outputs(ref), strict=True):
        assert tuple(g.shape) == tuple(r.shape)
        if r.dtype == torch.float64:
            assert g.dtype == getattr(vkt, dtype) and g.device.type == device
        else:
            assert str(g.dtype).split(".")[-1] == str(r.dtype).split(".")[-1]
        assert_close(g, r.detach().numpy(), rtol=tol, atol=tol)
    if differentiable:
        weighted_sum(outputs(got)).backward()
        weighted_sum(outputs(ref)).backward()
        for x, t in zip(xs, ts):
            assert_close(x.grad, t.grad.numpy(), rtol=10 * tol, atol=10 * tol)


V3 = np.arange(3.0)
A33 = np.eye(3) + 0.1
ERRORS = [
    ("svd_1d", lambda L, T: L.svd(T(V3))),
    ("qr_1d", lambda L, T: L.qr(T(V3))),
    ("cholesky_1d", lambda L, T: L.cholesky(T(V3))),
    ("cholesky_not_pd", lambda L, T: L.cholesky(T(-np.eye(3)))),
    ("cholesky_solve_1d", lambda L, T: L.cholesky_solve(T(V3), T(A33))),
    ("cholesky_solve_not_square", lambda L, T: L.cholesky_solve(T(A33), T(np.ones((3, 2))))),
    ("cholesky_solve_sizes", lambda L, T: L.cholesky_solve(T(np.ones((4, 2))), T(A33))),
    ("cholesky_solve_dtype", lambda L, T: L.cholesky_solve(T(A33), T(A33.astype(np.float32)))),
    ("cholesky_inverse_1d", lambda L, T: L.cholesky_inverse(T(V3))),
    ("cholesky_inverse_not_square", lambda L, T: L.cholesky_inverse(T(np.ones((3, 2))))),
    ("lu_1d", lambda L, T: L.lu(T(V3))),
    ("lu_solve_sizes", lambda L, T: L.lu_solve(T(np.ones((4, 2))), *L.lu(T(A33)))),
    ("lu_solve_1d", lambda L, T: L.lu_solve(T(V3), *L.lu(T(A33)))),
    ("lu_unpack_1d", lambda L, T: L.lu_unpack(T(V3), L.lu(T(A33))[1])),
    ("lu_unpack_int64", lambda L, T: L.lu_unpack(T(A33), L.lu(T(A33))[1].long())),
    ("triangular_solve_1d", lambda L, T: L.triangular_solve(T(V3), T(A33))),
    ("triangular_solve_not_square", lambda L, T: L.triangular_solve(T(A33), T(np.ones((3, 2))))),
    ("triangular_solve_sizes", lambda L, T: L.triangular_solve(T(np.ones((4, 2))), T(A33))),
    ("pinverse_1d", lambda L, T: L.pinverse(T(V3))),
    ("matrix_power_not_square", lambda L, T: L.matrix_power(T(np.ones((3, 2))), 2)),
    ("geqrf_1d", lambda L, T: L.geqrf(T(V3))),
    ("geqrf_grad", lambda L, T: L.geqrf(T(A33).requires_grad_())[0].sum().backward()),
    ("orgqr_wide", lambda L, T: L.orgqr(T(np.ones((2, 3))), T(np.ones(2)))),
    ("ormqr_1d", lambda L, T: L.ormqr(T(V3), T(V3), T(A33))),
    ("ormqr_sizes", lambda L, T: L.ormqr(T(np.ones((3, 2))), T(np.ones(2)), T(np.ones((4, 2))))),
    ("addr_vec1", lambda L, T: L.addr(T(A33), T(A33), T(V3))),
    ("addr_vec2", lambda L, T: L.addr(T(A33), T(V3), T(A33))),
    ("renorm_p", lambda L, T: L.renorm(T(A33), -1, 0, 1.0)),
    ("renorm_maxnorm", lambda L, T: L.renorm(T(A33), 2, 0, -1.0)),
    ("renorm_dim", lambda L, T: L.renorm(T(A33), 2, 3, 1.0)),
    ("renorm_0d", lambda L, T: L.renorm(T(np.array(1.0)), 2, 0, 1.0)),
    ("eig", lambda L, T: L.eig(T(A33))),
    ("symeig", lambda L, T: L.symeig(T(A33), eigenvectors=True)),
    ("lstsq", lambda L, T: L.lstsq(T(A33), T(A33))),
    ("solve", lambda L, T: L.solve(T(A33), T(A33))),
    ("eig_method", lambda L, T: T(A33).eig()),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_legacy_linalg_errors(device, case):
    name, call = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = raised(lambda: call(torch, torch.tensor))
    got = raised(lambda: call(vkt, lambda a: vkt.tensor(a, device=device)))
    assert ref[0] is not None and got == ref


A = np.random.default_rng(0).standard_normal((3, 3)) + 3 * np.eye(3)
METHODS = [  # name, the arguments after self
    ("svd", ()), ("qr", (False,)), ("cholesky", ()), ("cholesky_solve", (A,)), ("cholesky_inverse", (True,)),
    ("lu", ()), ("triangular_solve", (np.triu(A),)), ("pinverse", ()), ("matrix_power", (2,)), ("matrix_exp", ()),
    ("geqrf", ()), ("orgqr", (np.ones(2),)), ("ormqr", (np.ones(2), A)), ("renorm", (2, 1, 1.0)), ("dist", (A,)),
]


@pytest.mark.parametrize("case", METHODS, ids=[c[0] for c in METHODS])
def test_legacy_linalg_methods(device, case):
    name, args = case
    assert hasattr(torch.Tensor, name)
    x = vkt.tensor(A @ A.T, device=device)
    args = [vkt.tensor(a, device=device) if isinstance(a, np.ndarray) else a for a in args]
    got, ref = getattr(x, name)(*args), getattr(vkt, name)(x, *args)
    for g, r in zip(outputs(got), outputs(ref), strict=True):
        assert_close(g, r.cpu().numpy(), rtol=0, atol=0)


def test_legacy_linalg_more_methods(device):
    """addr and lu_solve, whose self is not a square matrix."""
    M, u = vkt.tensor(A, device=device), vkt.tensor(A[0], device=device)
    assert_close(M.addr(u, u, beta=2), vkt.addr(M, u, u, beta=2).cpu().numpy(), rtol=0, atol=0)
    LU, piv = vkt.lu(M)
    assert_close(M.lu_solve(LU, piv), vkt.lu_solve(M, LU, piv).cpu().numpy(), rtol=0, atol=0)
