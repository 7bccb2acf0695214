# linalg.qr, eigh, eigvalsh, lu, lu_solve, the _ex functions, lstsq, pinv, matrix_rank, cond, multi_dot, matrix_exp
# and householder_product: values against torch's and NumPy's float64 results, the factors by what defines them
# (Q R = A with Q orthonormal, A V = V diag(w); eigenvector signs are free), shapes and errors against torch on the
# CPU, gradients with gradcheck in float64 and against torch's, and no CPU fallback for float32 on vulkan.
import numpy as np
import pytest

import vkt

from conftest import assert_close, raised

torch = pytest.importorskip("torch")

SHAPES = [(1, 1), (3, 3), (5, 7), (7, 5), (2, 4, 3), (2, 3, 4), (0, 3, 3), (3, 0), (2, 2, 5, 5)]
SQUARE = [(1, 1), (3, 3), (5, 5), (2, 4, 4), (0, 3, 3), (0, 0), (2, 1, 6, 6)]
TOL = {"float32": 3e-5, "float64": 1e-11}


def as_vkt(a, dtype, device, grad=False):
    return vkt.tensor(np.asarray(a).astype(dtype), device=device, requires_grad=grad)


def np_of(x):
    return np.asarray(x.detach().cpu()).astype(np.float64)


def eye_like(a):
    return np.broadcast_to(np.eye(a.shape[-1]), a.shape[:-2] + (a.shape[-1],) * 2)


def well_conditioned(rng, shape):
    a = rng.standard_normal(shape)
    if a.size == 0:
        return a
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return (u * rng.uniform(1, 3, u.shape[:-2] + (u.shape[-1],))[..., None, :]) @ vh


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(device, dtype, mode):
    rng = np.random.default_rng(1)
    tol = TOL[dtype]
    for shape in SHAPES:
        a = rng.standard_normal(shape).astype(dtype)
        q, r = vkt.linalg.qr(as_vkt(a, dtype, device), mode=mode)
        tq, tr = torch.linalg.qr(torch.tensor(a, dtype=torch.float64), mode=mode)
        assert (q.shape, r.shape) == (tuple(tq.shape), tuple(tr.shape)) and r.dtype == getattr(vkt, dtype)
        # LAPACK's Householder signs, so Q and R equal torch's, not just up to signs
        assert_close(r, tr.numpy(), rtol=tol, atol=tol)
        if mode != "r":
            assert_close(q, tq.numpy(), rtol=tol, atol=tol)
            qn, rn = np_of(q), np_of(r)
            assert_close(qn @ rn, a, atol=10 * tol)
            assert_close(np.swapaxes(qn, -1, -2) @ qn, eye_like(qn), atol=10 * tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eigh(device, dtype):
    rng = np.random.default_rng(2)
    tol = TOL[dtype]
    for shape in SQUARE + [(9, 9)]:
        a = rng.standard_normal(shape)
        for uplo in ("L", "U"):
            # only the UPLO triangle is read: the other holds garbage
            sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2) if uplo == "L" else \
                np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
            w, v = vkt.linalg.eigh(as_vkt(a, dtype, device), UPLO=uplo)
            assert w.dtype == getattr(vkt, dtype) and v.shape == a.shape
            ref = np.linalg.eigvalsh(sym) if a.size else np.zeros(shape[:-1])
            assert_close(w, ref, rtol=tol, atol=tol * 10)
            assert_close(vkt.linalg.eigvalsh(as_vkt(a, dtype, device), UPLO=uplo), ref, rtol=tol, atol=tol * 10)
            vn, wn = np_of(v), np_of(w)
            assert_close(sym @ vn, vn * wn[..., None, :], atol=30 * tol)
            assert_close(np.swapaxes(vn, -1, -2) @ vn, eye_like(vn), atol=30 * tol)
            if a.size:  # the documented sign: each column's entry of largest magnitude is positive
                top = np.take_along_axis(vn, np.abs(vn).argmax(-2)[..., None, :], -2)
                assert (top > 0).all()


def test_eigh_special(device):
    for a in [np.zeros((3, 3)), np.eye(4) * 2, np.ones((4, 4)), np.diag([1e8, 1.0, -1e-8]),
              np.array([[0.0, 1], [1, 0]])]:
        w, v = vkt.linalg.eigh(vkt.tensor(a, device=device))
        assert_close(w, np.linalg.eigvalsh(a), atol=1e-12 * max(1, np.abs(a).max()))
        assert_close(a @ np_of(v), np_of(v) * np_of(w)[None, :], atol=1e-12 * max(1, np.abs(a).max()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lu(device, dtype):
    rng = np.random.default_rng(3)
    tol = TOL[dtype]
    for shape in SHAPES:
        a = rng.standard_normal(shape).astype(dtype)
        P, L, U = vkt.linalg.lu(as_vkt(a, dtype, device))
        tP, tL, tU = torch.linalg.lu(torch.tensor(a))
        for got, want in [(P, tP), (L, tL), (U, tU)]:
            assert got.shape == tuple(want.shape) and got.dtype == getattr(vkt, dtype)
            assert_close(got, want.numpy(), rtol=tol, atol=tol)
        lu, piv, info = vkt.linalg.lu_factor_ex(as_vkt(a, dtype, device))
        tlu, tpiv, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a))
        assert_close(lu, tlu.numpy(), rtol=tol, atol=tol)
        assert_close(piv, tpiv.numpy(), atol=0)
        assert info.dtype == vkt.int32 and info.shape == tuple(tinfo.shape)


LU_SOLVES = [((3, 3), (3, 2)), ((1, 1), (1, 1)), ((2, 5, 5), (2, 5, 3)), ((4, 4), (2, 4, 1)), ((2, 4, 4), (4, 2)),
             ((0, 3, 3), (0, 3, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lu_solve(device, dtype):
    rng = np.random.default_rng(4)
    for ashape, bshape in LU_SOLVES:
        a, b = well_conditioned(rng, ashape), rng.standard_normal(bshape)
        tlu, tpiv = torch.linalg.lu_factor(torch.tensor(a))
        lu, piv = as_vkt(tlu.numpy(), dtype, device), vkt.tensor(tpiv.numpy(), device=device)
        for left, adjoint in [(True, False), (True, True), (False, False), (False, True)]:
            bb = b if left else np.swapaxes(b, -1, -2)
            got = vkt.linalg.lu_solve(lu, piv, as_vkt(bb, dtype, device), left=left, adjoint=adjoint)
            want = torch.linalg.lu_solve(tlu, tpiv, torch.tensor(bb), left=left, adjoint=adjoint)
            assert_close(got, want.numpy(), rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ex_functions(device, dtype):
    rng = np.random.default_rng(5)
    # a batch with singular members: a zero column makes the first zero pivot unambiguous
    a = well_conditioned(rng, (3, 4, 4))
    a[1, :, 2] = 0
    a[2] = 0
    b = rng.standard_normal((3, 4, 2))
    x, t = as_vkt(a, dtype, device), torch.tensor(a.astype(dtype))
    inv, info = vkt.linalg.inv_ex(x)
    tinv, tinfo = torch.linalg.inv_ex(t)
    assert_close(info, tinfo.numpy(), atol=0)
    assert_close(inv[0], tinv[0].numpy(), rtol=1e-4, atol=1e-4)
    res, info = vkt.linalg.solve_ex(x, as_vkt(b, dtype, device))
    assert_close(info, torch.linalg.solve_ex(t, torch.tensor(b.astype(dtype)))[1].numpy(), atol=0)
    assert_close(res[0], np.linalg.solve(a[0], b[0]), rtol=1e-4, atol=1e-4)
    _, _, info = vkt.linalg.lu_factor_ex(x)
    assert_close(info, torch.linalg.lu_factor_ex(t)[2].numpy(), atol=0)
    spd = np.stack([a[0] @ a[0].T + np.eye(4), -np.eye(4), np.diag([1.0, 2, -1, 3])])
    for upper in (False, True):
        L, info = vkt.linalg.cholesky_ex(as_vkt(spd, dtype, device), upper=upper)
        tL, tinfo = torch.linalg.cholesky_ex(torch.tensor(spd), upper=upper)
        assert_close(info, tinfo.numpy(), atol=0)
        assert_close(L[0], tL[0].numpy(), rtol=1e-4, atol=1e-4)
    assert type(vkt.linalg.inv_ex(x)).__name__ == "linalg_inv_ex" and vkt.linalg.solve_ex(x, x).info.shape == (3,)
    assert vkt.linalg.cholesky_ex(vkt.eye(3, device=device)).info.shape == ()


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstsq(device, dtype, driver):
    rng = np.random.default_rng(6)
    for ashape, bshape in [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((4, 4), (4,)), ((2, 7, 5), (2, 7, 1)),
                           ((1, 1), (1, 3))]:
        a, b = well_conditioned(rng, ashape), rng.standard_normal(bshape)
        got = vkt.linalg.lstsq(as_vkt(a, dtype, device), as_vkt(b, dtype, device), driver=driver)
        want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        assert type(got).__name__ == "linalg_lstsq"
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape), (g, w)
            assert_close(g, w.numpy(), rtol=20 * TOL[dtype], atol=20 * TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pinv_rank_cond(device, dtype):
    rng = np.random.default_rng(7)
    tol = 20 * TOL[dtype]
    rank2 = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4))
    for a in [rng.standard_normal((3, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((3, 6)), rank2,
              np.zeros((0, 2, 2))]:
        x, t = as_vkt(a, dtype, device), torch.tensor(a)
        assert_close(vkt.linalg.pinv(x), torch.linalg.pinv(t).numpy(), rtol=tol, atol=tol)
        assert_close(vkt.linalg.matrix_rank(x), torch.linalg.matrix_rank(t).numpy(), atol=0)
        assert_close(vkt.linalg.matrix_rank(x, atol=1.0, rtol=0.0), torch.linalg.matrix_rank(t, atol=1.0, rtol=0.0),
                     atol=0)
        if a.shape[-1] == a.shape[-2]:
            s = a + a.swapaxes(-1, -2)
            assert_close(vkt.linalg.pinv(as_vkt(s, dtype, device), hermitian=True),
                         torch.linalg.pinv(torch.tensor(s), hermitian=True).numpy(), rtol=tol, atol=tol)
            assert_close(vkt.linalg.matrix_rank(as_vkt(s, dtype, device), hermitian=True),
                         torch.linalg.matrix_rank(torch.tensor(s), hermitian=True).numpy(), atol=0)
        for p in [None, 2, -2] + (["fro", "nuc", 1, -1, np.inf, -np.inf] if a.shape[-1] == a.shape[-2] else []):
            if a.size and a is not rank2:  # a rank-deficient A's condition number is rounding error's
                assert_close(vkt.linalg.cond(x, p), torch.linalg.cond(t, p).numpy(), rtol=100 * TOL[dtype])
    singular = vkt.tensor([[1.0, 2.0], [2.0, 4.0]], device=device)
    assert vkt.linalg.cond(singular, 1).item() == np.inf


def test_large_matrices(device):
    # past lavapipe's loop limit (20 x 20 eigh, 40 x 30 qr): the counted CPU fallback there, the shaders on a GPU
    rng = np.random.default_rng(15)
    a = rng.standard_normal((40, 30))
    q, r = vkt.linalg.qr(vkt.tensor(a, device=device))
    assert_close(np_of(q) @ np_of(r), a, atol=1e-11)
    s = a[:20, :20] + a[:20, :20].T
    w, v = vkt.linalg.eigh(vkt.tensor(s, device=device))
    assert_close(w, np.linalg.eigvalsh(s), atol=1e-11)
    assert_close(s @ np_of(v), np_of(v) * np_of(w), atol=1e-11)


def test_multi_dot(device):
    rng = np.random.default_rng(8)
    for shapes in [[(3,), (3, 4)], [(2, 3), (3,)], [(10, 2), (2, 30), (30, 3), (3,)], [(4,), (4, 5), (5, 1), (1, 7)],
                   [(3, 3)] * 4]:
        arrs = [rng.standard_normal(s) for s in shapes]
        got = vkt.linalg.multi_dot([vkt.tensor(x, device=device) for x in arrs])
        assert_close(got, np.linalg.multi_dot(arrs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_exp(device, dtype):
    rng = np.random.default_rng(9)
    for shape, scale in [((1, 1), 1), ((3, 3), 0.1), ((4, 4), 1), ((2, 5, 5), 3), ((0, 2, 2), 1), ((3, 3), 20)]:
        a = rng.standard_normal(shape) * scale
        want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
        got = vkt.linalg.matrix_exp(as_vkt(a, dtype, device))
        assert_close(got, want, rtol=50 * TOL[dtype], atol=50 * TOL[dtype] * max(1, np.abs(want).max(initial=0)))
    assert_close(vkt.matrix_exp(vkt.zeros(2, 2, device=device)), np.eye(2))


def test_householder_product(device):
    rng = np.random.default_rng(10)
    for shape, k in [((5, 3), 3), ((4, 4), 2), ((2, 6, 3), 3), ((1, 1), 1)]:
        g, tau = torch.geqrf(torch.tensor(rng.standard_normal(shape)))
        tau = tau[..., :k]
        got = vkt.linalg.householder_product(vkt.tensor(g.numpy(), device=device),
                                             vkt.tensor(tau.numpy(), device=device))
        assert_close(got, torch.linalg.householder_product(g, tau).numpy(), rtol=1e-12, atol=1e-12)


def sym(L, a):
    return a + a.mT


def spd(L, a):
    return a @ a.mT + L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


GRAD_FNS = [  # (function of (library, A, B), shape of A); vector signs are fixed by functions that square them
    (lambda L, a, b: tuple(L.linalg.qr(a)), (4, 3)),
    (lambda L, a, b: tuple(L.linalg.qr(a)), (3, 5)),
    (lambda L, a, b: tuple(L.linalg.qr(a, mode="complete")), (2, 3, 3)),
    (lambda L, a, b: L.linalg.eigvalsh(sym(L, a)), (2, 3, 3)),
    (lambda L, a, b: (lambda w, v: (w, v * v, v @ v.mT))(*L.linalg.eigh(sym(L, a), UPLO="U")), (3, 3)),
    (lambda L, a, b: tuple(L.linalg.lu(a))[1:], (3, 3)),
    (lambda L, a, b: tuple(L.linalg.lu(a))[1:], (2, 3, 4)),
    (lambda L, a, b: tuple(L.linalg.lu(a))[1:], (4, 2)),
    (lambda L, a, b: L.linalg.lu_factor_ex(a)[0], (4, 3)),
    (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b), (3, 3)),
    (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b.mT, left=False, adjoint=True), (3, 3)),
    (lambda L, a, b: L.linalg.solve_ex(a, b)[0], (3, 3)),
    (lambda L, a, b: L.linalg.inv_ex(a)[0], (2, 3, 3)),
    (lambda L, a, b: L.linalg.cholesky_ex(spd(L, a))[0], (3, 3)),
    (lambda L, a, b: L.linalg.lstsq(a, b).solution, (3, 3)),
    (lambda L, a, b: L.linalg.lstsq(a, b[..., :1, :]).solution, (1, 3)),
    (lambda L, a, b: L.linalg.pinv(a), (3, 2)),
    (lambda L, a, b: L.linalg.pinv(sym(L, a), hermitian=True), (3, 3)),
    (lambda L, a, b: L.linalg.cond(a), (3, 3)),
    (lambda L, a, b: L.linalg.cond(a, "fro"), (3, 3)),
    (lambda L, a, b: L.linalg.matrix_exp(a), (2, 3, 3)),
    (lambda L, a, b: L.linalg.multi_dot([a, a.mT, b]), (3, 2)),
    (lambda L, a, b: L.linalg.householder_product(a, b[:2, 0]), (3, 2)),
]


def make_args(rng, shape, device, dtype="float64"):
    a = well_conditioned(rng, shape) + (2 * np.eye(shape[-1]) if shape[-1] == shape[-2] else 0)
    b = rng.standard_normal(shape[:-2] + (shape[-2], 2))
    return as_vkt(a, dtype, device, True), as_vkt(b, dtype, device, True)


@pytest.mark.parametrize("f", range(len(GRAD_FNS)))
def test_gradcheck(device, f):
    fn, shape = GRAD_FNS[f]
    a, b = make_args(np.random.default_rng(11), shape, device)
    assert vkt.autograd.gradcheck(lambda x, y: fn(vkt, x, y), (a, b))


@pytest.mark.parametrize("f", [0, 3, 5, 20])
def test_gradgradcheck(device, f):
    fn, shape = GRAD_FNS[f]
    a, b = make_args(np.random.default_rng(12), shape, device)
    assert vkt.autograd.gradgradcheck(lambda x, y: fn(vkt, x, y), (a, b))


TORCH_FAILS = {19}  # torch 2.13's cond(p='fro') backward trips its own in-place check (on inv_ex's output)


def test_gradients_match_torch(device):
    rng = np.random.default_rng(13)
    for fn, shape in (f for i, f in enumerate(GRAD_FNS) if i not in TORCH_FAILS):
        a, b = make_args(rng, shape, device)
        s, t = (torch.tensor(np_of(v), requires_grad=True) for v in (a, b))

        def loss(L, x, y):
            out = fn(L, x, y)
            return sum((o.sin() ** 2).sum() for o in (out if isinstance(out, tuple) else (out,)))
        loss(vkt, a, b).backward()
        loss(torch, s, t).backward()
        assert_close(a.grad, s.grad.numpy(), rtol=1e-8, atol=1e-8)
        if t.grad is not None:
            assert_close(b.grad, t.grad.numpy(), rtol=1e-8, atol=1e-8)
    x = vkt.tensor(well_conditioned(rng, (3, 3)), device=device, requires_grad=True)
    assert [vkt.linalg.qr(x).Q.grad_fn.name(), vkt.linalg.eigh(x).eigenvalues.grad_fn.name(),
            vkt.linalg.eigvalsh(x).grad_fn.name(), vkt.linalg.lu(x).L.grad_fn.name()] == [
        "LinalgQrBackward0", "LinalgEighBackward0", "LinalgEighBackward0", "LinalgLuBackward0"]
    assert not vkt.linalg.lu(x).P.requires_grad


def test_backward_errors(device):
    x = vkt.ones(3, 2, device=device, requires_grad=True)
    for mode in ["r", "complete"]:
        with pytest.raises(RuntimeError) as got:
            vkt.linalg.qr(x, mode=mode).R.sum().backward()
        with pytest.raises(RuntimeError) as want:
            torch.linalg.qr(torch.ones(3, 2, requires_grad=True), mode=mode).R.sum().backward()
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.qr(L.ones(3)),
    lambda L: L.linalg.qr(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.qr(L.ones(3, 3, dtype=L.float16)),
    lambda L: L.linalg.qr(L.ones(3, 3), mode="x"),
    lambda L: L.linalg.eigh(L.ones(2, 3)),
    lambda L: L.linalg.eigh(L.ones(3)),
    lambda L: L.linalg.eigh(L.ones(3, 3), UPLO="X"),
    lambda L: L.linalg.eigh(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.eigvalsh(L.ones(2, 3)),
    lambda L: L.linalg.lu(L.ones(3)),
    lambda L: L.linalg.lu(L.ones(3, 3), pivot=False),
    lambda L: L.linalg.lu_solve(L.eye(3), L.ones(3, dtype=L.int32), L.ones(3)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.ones(3, dtype=L.int64), L.ones(3, 1)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.ones(2, dtype=L.int32), L.ones(3, 1)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.ones(3, dtype=L.int32), L.ones(2, 1)),
    lambda L: L.linalg.lu_solve(L.ones(2, 3), L.ones(2, dtype=L.int32), L.ones(2, 1)),
    lambda L: L.linalg.inv_ex(L.zeros(2, 2), check_errors=True),
    lambda L: L.linalg.inv_ex(L.zeros(2, 2, 2), check_errors=True),
    lambda L: L.linalg.cholesky_ex(-L.eye(2), check_errors=True),
    lambda L: L.linalg.solve_ex(L.zeros(2, 2), L.ones(2), check_errors=True),
    lambda L: L.linalg.lu_factor_ex(L.zeros(2, 2), check_errors=True),
    lambda L: L.linalg.lstsq(L.ones(5, 3), L.ones(5, 2), driver="foo"),
    lambda L: L.linalg.lstsq(L.ones(5, 3), L.ones(4, 2)),
    lambda L: L.linalg.lstsq(L.ones(5, 3, dtype=L.float64), L.ones(5, 2)),
    lambda L: L.linalg.lstsq(L.ones(3), L.ones(5, 2)),
    lambda L: L.linalg.matrix_rank(L.ones(3)),
    lambda L: L.linalg.cond(L.ones(3)),
    lambda L: L.linalg.cond(L.ones(2, 3), 1),
    lambda L: L.linalg.multi_dot([L.ones(3)]),
    lambda L: L.linalg.multi_dot([L.ones(2, 2, 2), L.ones(2, 2)]),
    lambda L: L.linalg.multi_dot([L.ones(2, 2), L.ones(2), L.ones(2, 2)]),
    lambda L: L.linalg.matrix_exp(L.ones(2, 3)),
    lambda L: L.linalg.matrix_exp(L.ones(3)),
    lambda L: L.linalg.householder_product(L.ones(2, 3), L.ones(2)),
    lambda L: L.linalg.householder_product(L.ones(3, 2), L.ones(3)),
])
def test_errors(call):
    assert raised(lambda: call(vkt)) == raised(lambda: call(torch))


def test_float32_takes_no_fallback(dev):
    rng = np.random.default_rng(14)
    a = rng.standard_normal((4, 6, 5)).astype(np.float32)
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor(a, device=dev, requires_grad=True)
    q, r = vkt.linalg.qr(x)
    w, v = vkt.linalg.eigh(x[..., :5, :] @ x[..., :5, :].mT)
    p, l, u = vkt.linalg.lu(x)
    (q.sum() + r.sum() + w.sum() + (v * v).sum() + l.sum() + u.sum()).backward()
    sq = x[..., :5, :] + 3 * vkt.eye(5, device=dev)
    vkt.linalg.lu_solve(*vkt.linalg.lu_factor(sq), x[..., :5, :2]).sum().backward()
    vkt.linalg.matrix_exp(sq * 0.1).sum().backward()
    vkt.linalg.lstsq(x, x[..., :2]).solution.sum().backward()
    x.grad.cpu()
    assert vkt.vulkan.fallback_stats() == {}
