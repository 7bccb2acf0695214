# linalg.lu_factor, solve, inv, det, slogdet, logdet, cholesky, solve_triangular and matrix_power: values against
# NumPy's float64 results and torch's, batches, odd sizes, broadcasting, errors against torch on the CPU,
# gradients with gradcheck in float64 and against torch's in float32, and no CPU fallback for float32 on vulkan.
import numpy as np
import pytest

import vkt

from conftest import assert_close, raised

torch = pytest.importorskip("torch")

SHAPES = [(1, 1), (3, 3), (5, 5), (7, 7), (2, 4, 4), (2, 3, 5, 5), (0, 3, 3), (0, 0)]
TOL = {"float32": 2e-4, "float64": 1e-10}


def well_conditioned(rng, shape):
    """Random matrices with singular values in [1, 3], so float32 results keep about six digits."""
    a = rng.standard_normal(shape)
    if a.size == 0:
        return a
    u, _, vh = np.linalg.svd(a)
    s = rng.uniform(1, 3, shape[:-1])
    return (u * s[..., None, :]) @ vh


def spd(rng, shape):
    a = well_conditioned(rng, shape)
    return np.swapaxes(a, -1, -2) @ a + np.eye(shape[-1])


def as_vkt(a, dtype, device, grad=False):
    return vkt.tensor(a.astype(dtype), device=device, requires_grad=grad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_factor_inv_det(device, dtype):
    rng = np.random.default_rng(1)
    tol = TOL[dtype]
    for shape in SHAPES:
        a = well_conditioned(rng, shape)
        x, t = as_vkt(a, dtype, device), torch.tensor(a.astype(dtype))
        lu, piv = vkt.linalg.lu_factor(x)
        tlu, tpiv = torch.linalg.lu_factor(t)
        assert piv.dtype == vkt.int32 and lu.dtype == getattr(vkt, dtype)
        assert_close(lu, tlu.numpy(), rtol=tol, atol=tol)
        assert_close(piv, tpiv.numpy(), rtol=0, atol=0)
        assert_close(vkt.linalg.inv(x), np.linalg.inv(a), rtol=tol, atol=tol)
        assert_close(x.inverse(), np.linalg.inv(a), rtol=tol, atol=tol)
        assert_close(vkt.linalg.det(x), np.linalg.det(a), rtol=tol, atol=tol)
        assert_close(vkt.det(x), np.linalg.det(a), rtol=tol, atol=tol)
        sign, logabs = vkt.linalg.slogdet(x)
        assert_close(sign, np.linalg.slogdet(a)[0], rtol=0, atol=0)
        assert_close(logabs, np.linalg.slogdet(a)[1], rtol=tol, atol=tol)
        assert_close(x.logdet(), torch.logdet(t).numpy(), rtol=tol, atol=tol)
        if a.size:
            assert vkt.linalg.det(x).shape == shape[:-2]


def test_rectangular_lu_factor(device):
    rng = np.random.default_rng(2)
    for shape in [(3, 5), (5, 3), (2, 4, 2)]:
        a = rng.standard_normal(shape)
        lu, piv = vkt.linalg.lu_factor(vkt.tensor(a, device=device))
        tlu, tpiv = torch.linalg.lu_factor(torch.tensor(a))
        assert_close(lu, tlu.numpy(), rtol=1e-12, atol=1e-12)
        assert_close(piv, tpiv.numpy(), rtol=0, atol=0)


def test_singular_det(device):
    # exact values, not torch's: whether LAPACK's pivot of an exactly singular matrix comes out 0 or 1e-16 varies
    a = np.array([[[1.0, 2, 3], [2, 4, 6], [1, 1, 1]], [[-1.0, 0, 0], [0, 1, 0], [0, 0, 1]]])
    x = vkt.tensor(a, device=device)
    assert_close(vkt.linalg.det(x), [0.0, -1.0], atol=1e-12)
    sign, logabs = vkt.linalg.slogdet(x)
    assert_close(sign, [0.0, -1.0], atol=0)
    assert_close(logabs, [-np.inf, 0.0], atol=1e-12)
    assert_close(vkt.logdet(x), [-np.inf, np.nan], atol=1e-12)


SOLVES = [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 4, 4), (4,)), ((2, 4, 4), (2, 4)), ((2, 4, 4), (4, 3)),
          ((5, 5), (2, 5, 1)), ((2, 1, 5, 5), (3, 5, 2)), ((1, 1), (1,)), ((7, 7), (7, 7)), ((0, 2, 2), (2, 1)),
          ((45, 45), (45, 2))]  # 45 x 45 passes lavapipe's loop limit: the CPU there, the shader on a GPU


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("left", [True, False])
def test_solve(device, dtype, left):
    rng = np.random.default_rng(3)
    for ashape, bshape in SOLVES:
        if not left and len(bshape) == 1:
            continue
        if not left:
            bshape = bshape[:-2] + bshape[:-3:-1]
        a, b = well_conditioned(rng, ashape), rng.standard_normal(bshape)
        call = (lambda L, x, y: L.linalg.solve(x, y, left=left))
        if raised(lambda: call(torch, torch.tensor(a), torch.tensor(b)))[0]:  # XA = B with B's columns not A's
            assert raised(lambda: call(torch, torch.tensor(a), torch.tensor(b))) == raised(
                lambda: call(vkt, as_vkt(a, dtype, device), as_vkt(b, dtype, device)))
            continue
        got = call(vkt, as_vkt(a, dtype, device), as_vkt(b, dtype, device))
        want = call(torch, torch.tensor(a), torch.tensor(b)).numpy()
        assert got.dtype == getattr(vkt, dtype)
        assert_close(got, want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_solve_triangular(device, dtype):
    rng = np.random.default_rng(4)
    for ashape, bshape in [((3, 3), (3, 2)), ((2, 5, 5), (5, 1)), ((1, 1), (1, 3)), ((7, 7), (2, 7, 7))]:
        a = np.tril(rng.standard_normal(ashape)) + 3 * np.eye(ashape[-1])
        b = rng.standard_normal(bshape)
        for upper, left, unit in [(False, True, False), (True, True, False), (False, False, True), (True, False, True)]:
            aa = np.swapaxes(a, -1, -2) if upper else a
            bb = b if left else np.swapaxes(b, -1, -2)
            kw = dict(upper=upper, left=left, unitriangular=unit)
            got = vkt.linalg.solve_triangular(as_vkt(aa, dtype, device), as_vkt(bb, dtype, device), **kw)
            want = torch.linalg.solve_triangular(torch.tensor(aa), torch.tensor(bb), **kw).numpy()
            assert_close(got, want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky(device, dtype):
    rng = np.random.default_rng(5)
    for shape in SHAPES:
        a = spd(rng, shape)
        for upper in (False, True):
            got = vkt.linalg.cholesky(as_vkt(a, dtype, device), upper=upper)
            want = torch.linalg.cholesky(torch.tensor(a), upper=upper).numpy()
            assert_close(got, want, rtol=TOL[dtype], atol=TOL[dtype])


def test_matrix_power(device):
    rng = np.random.default_rng(6)
    a = well_conditioned(rng, (2, 4, 4))
    x = vkt.tensor(a, device=device)
    for n in [0, 1, 2, 3, 6, -1, -3]:
        assert_close(vkt.linalg.matrix_power(x, n), np.linalg.matrix_power(a, n), rtol=1e-10, atol=1e-10)


E = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.inv(L.tensor(E)),
    lambda L: L.linalg.inv(L.stack([L.eye(3, dtype=L.float64), L.tensor(E)])),
    lambda L: L.linalg.inv(L.ones(2, 3)),
    lambda L: L.linalg.inv(L.ones(3)),
    lambda L: L.linalg.inv(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.det(L.ones(2, 3)),
    lambda L: L.linalg.slogdet(L.ones(2, 3)),
    lambda L: L.linalg.lu_factor(L.tensor(E)),
    lambda L: L.linalg.lu_factor(L.stack([L.eye(3, dtype=L.float64), L.tensor(E)])),
    lambda L: L.linalg.solve(L.tensor(E), L.ones(3, dtype=L.float64)),
    lambda L: L.linalg.solve(L.stack([L.eye(3, dtype=L.float64), L.tensor(E)]), L.ones(3, dtype=L.float64)),
    lambda L: L.linalg.solve(L.ones(2, 3), L.ones(2)),
    lambda L: L.linalg.solve(L.eye(3), L.ones(2)),
    lambda L: L.linalg.solve(L.eye(3), L.ones(3), left=False),
    lambda L: L.linalg.solve(L.eye(3), L.ones(3, dtype=L.float64)),
    lambda L: L.linalg.solve(L.ones(2, 3, 3), L.ones(4, 3, 3)),
    lambda L: L.linalg.cholesky(-L.eye(3)),
    lambda L: L.linalg.cholesky(L.stack([L.eye(3), -L.eye(3)])),
    lambda L: L.linalg.cholesky(L.ones(2, 3)),
    lambda L: L.linalg.cholesky(L.ones(3)),
    lambda L: L.linalg.solve_triangular(L.ones(2, 3), L.ones(2, 1), upper=True),
    lambda L: L.linalg.solve_triangular(L.eye(3), L.ones(2, 1), upper=True),
    lambda L: L.linalg.matrix_power(L.ones(2, 3), 2),
    lambda L: L.linalg.matrix_power(L.ones(3), 2),
    lambda L: L.linalg.matrix_power(L.tensor(E), -1),
    lambda L: L.linalg.matrix_power(L.eye(3), 1.5),
])
def test_errors(call):
    assert raised(lambda: call(vkt)) == raised(lambda: call(torch))


def test_linalg_error_is_runtime_error():
    with pytest.raises(RuntimeError):
        vkt.linalg.inv(vkt.zeros(2, 2))
    assert issubclass(vkt.linalg.LinAlgError, RuntimeError)


def eye_like(L, a):
    return L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


GRAD_FNS = [
    lambda L, a, b: L.linalg.inv(a),
    lambda L, a, b: L.linalg.det(a),
    lambda L, a, b: L.linalg.slogdet(a)[1],
    lambda L, a, b: L.logdet(a @ a.mT),
    lambda L, a, b: L.linalg.solve(a, b),
    lambda L, a, b: L.linalg.solve(a, b[..., 0]),
    lambda L, a, b: L.linalg.solve(a, b.mT, left=False),
    lambda L, a, b: L.linalg.cholesky(a @ a.mT + eye_like(L, a)),
    lambda L, a, b: L.linalg.cholesky(a @ a.mT + eye_like(L, a), upper=True),
    lambda L, a, b: L.linalg.solve_triangular(a.tril() + 3 * eye_like(L, a), b, upper=False),
    lambda L, a, b: L.linalg.solve_triangular(a.triu() + 3 * eye_like(L, a), b.mT, upper=True, left=False,
                                              unitriangular=True),
    lambda L, a, b: L.linalg.matrix_power(a, -2),
    lambda L, a, b: L.linalg.lu_factor(a)[0],
]


@pytest.mark.parametrize("f", range(len(GRAD_FNS)))
def test_gradcheck(device, f):
    rng = np.random.default_rng(7)
    a = vkt.tensor(well_conditioned(rng, (2, 3, 3)), device=device, requires_grad=True)
    b = vkt.tensor(rng.standard_normal((2, 3, 2)), device=device, requires_grad=True)
    assert vkt.autograd.gradcheck(lambda x, y: GRAD_FNS[f](vkt, x, y), (a, b))


@pytest.mark.parametrize("f", [0, 1, 4, 7, 9, 12])
def test_gradgradcheck(device, f):
    rng = np.random.default_rng(8)
    a = vkt.tensor(well_conditioned(rng, (3, 3)), device=device, requires_grad=True)
    b = vkt.tensor(rng.standard_normal((3, 2)), device=device, requires_grad=True)
    assert vkt.autograd.gradgradcheck(lambda x, y: GRAD_FNS[f](vkt, x, y), (a, b))


def test_gradients_match_torch(device):
    rng = np.random.default_rng(9)
    a, b = well_conditioned(rng, (2, 5, 5)).astype(np.float32), rng.standard_normal((2, 5, 2)).astype(np.float32)
    for f in GRAD_FNS:
        x, y = vkt.tensor(a, device=device, requires_grad=True), vkt.tensor(b, device=device, requires_grad=True)
        s, t = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        (f(vkt, x, y) ** 2).sum().backward()
        (f(torch, s, t) ** 2).sum().backward()
        assert_close(x.grad, s.grad.numpy(), rtol=1e-3, atol=1e-3)
        if t.grad is not None:
            assert_close(y.grad, t.grad.numpy(), rtol=1e-3, atol=1e-3)
    x = vkt.tensor(a, device=device, requires_grad=True)
    assert [vkt.linalg.inv(x).grad_fn.name(), vkt.linalg.det(x).grad_fn.name(),
            vkt.linalg.cholesky(x @ x.mT).grad_fn.name(), vkt.linalg.lu_factor(x)[0].grad_fn.name()] == [
        "LinalgInvExBackward0", "LinalgDetBackward0", "LinalgCholeskyExBackward0", "LinalgLuFactorExBackward0"]


def test_float32_takes_no_fallback(dev):
    rng = np.random.default_rng(10)
    a = well_conditioned(rng, (4, 6, 6)).astype(np.float32)
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor(a, device=dev, requires_grad=True)
    b = vkt.tensor(rng.standard_normal((4, 6, 3)).astype(np.float32), device=dev)
    vkt.linalg.lu_factor(x)[0].sum().backward()
    (vkt.linalg.solve(x, b).sum() + vkt.linalg.det(x).sum() + vkt.linalg.slogdet(x)[1].sum()).backward()
    (vkt.linalg.cholesky(x @ x.mT).sum() + vkt.linalg.solve_triangular(x, b, upper=True).sum()).backward()
    x.grad.cpu()
    assert vkt.vulkan.fallback_stats() == {}
