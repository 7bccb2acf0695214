# linalg.ldl_factor_ex, ldl_factor, ldl_solve, tensorinv and tensorsolve against torch 2.13 on the CPU: LD and
# pivots equal to torch's (LAPACK's Bunch-Kaufman pivots and packing), solutions, shapes, dtypes and errors, and the
# gradients of tensorinv and tensorsolve against torch's and by gradcheck in float64.
import numpy as np
import pytest

import vkt

from conftest import assert_close, raised

torch = pytest.importorskip("torch")

TOL = {"float32": 3e-5, "float64": 1e-11}


def as_vkt(a, dtype, device, grad=False):
    return vkt.tensor(np.asarray(a).astype(dtype), device=device, requires_grad=grad)


def np_of(x):
    return np.asarray(x.detach().cpu()).astype(np.float64)


def well_conditioned(rng, shape):
    a = rng.standard_normal(shape)
    if a.size == 0:
        return a
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return (u * rng.uniform(1, 3, u.shape[:-2] + (u.shape[-1],))[..., None, :]) @ vh


def symmetric(rng, shape, kind):
    """A matrix whose lower triangle is symmetric positive definite, indefinite, or indefinite with a small diagonal
    (Bunch-Kaufman then takes 2x2 blocks); its upper triangle is noise, which the factorization must not read."""
    a = rng.standard_normal(shape)
    n = shape[-1]
    s = a + np.swapaxes(a, -1, -2)
    if kind == "spd":
        s = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    elif kind == "small diagonal":
        s = s - 0.95 * s * np.eye(n)
    return np.tril(s) + np.triu(rng.standard_normal(shape), 1)


FACTOR_SHAPES = [(1, 1), (2, 2), (5, 5), (9, 9), (3, 4, 4), (2, 2, 6, 6), (0, 3, 3), (2, 0, 0), (0, 0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["spd", "indefinite", "small diagonal"])
def test_ldl_factor(device, dtype, kind):
    rng = np.random.default_rng(1)
    for shape in FACTOR_SHAPES:
        a = symmetric(rng, shape, kind).astype(dtype)
        got = vkt.linalg.ldl_factor_ex(as_vkt(a, dtype, device))
        want = torch.linalg.ldl_factor_ex(torch.tensor(a))
        assert type(got).__name__ == "linalg_ldl_factor_ex"
        assert (got.LD.dtype, got.pivots.dtype, got.info.dtype) == (getattr(vkt, dtype), vkt.int32, vkt.int32)
        assert_close(got.pivots, want.pivots.numpy(), atol=0)
        assert_close(got.info, want.info.numpy(), atol=0)
        assert_close(got.LD, want.LD.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
        LD, pivots = vkt.linalg.ldl_factor(as_vkt(a, dtype, device), hermitian=True)
        assert_close(LD, want.LD.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
        assert_close(pivots, want.pivots.numpy(), atol=0)


def test_ldl_factor_special(device):
    # a zero pivot column is reported in info (the factorization goes on), as LAPACK's and torch's
    for a in [np.zeros((2, 3, 3)), np.diag([1.0, 0.0, 2.0]), np.array([[0.0, 1.0], [1.0, 0.0]]),
              np.array([[np.nan, 1.0], [1.0, 2.0]]), np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 0.0]])]:
        got = vkt.linalg.ldl_factor_ex(vkt.tensor(a, device=device))
        want = torch.linalg.ldl_factor_ex(torch.tensor(a))
        for g, w in zip(got, want):
            assert_close(g, w.numpy(), atol=1e-15)


LDL_SOLVES = [((3, 3), (3, 2)), ((1, 1), (1, 1)), ((2, 5, 5), (2, 5, 3)), ((4, 4), (2, 4, 1)), ((2, 4, 4), (4, 2)),
              ((0, 3, 3), (0, 3, 1)), ((3, 3), (3, 0)), ((2, 0, 0), (0, 2))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ldl_solve(device, dtype):
    rng = np.random.default_rng(2)
    for (ashape, bshape), kind in zip(LDL_SOLVES, ["indefinite", "small diagonal", "spd"] * 3):
        a, b = symmetric(rng, ashape, kind), rng.standard_normal(bshape)
        LD, pivots = torch.linalg.ldl_factor(torch.tensor(a.astype(dtype)))
        want = torch.linalg.ldl_solve(LD, pivots, torch.tensor(b.astype(dtype)))
        got = vkt.linalg.ldl_solve(as_vkt(LD.numpy(), dtype, device), vkt.tensor(pivots.numpy(), device=device),
                                   as_vkt(b, dtype, device), hermitian=kind == "spd")
        assert got.dtype == getattr(vkt, dtype)
        assert_close(got, want.numpy(), rtol=100 * TOL[dtype], atol=100 * TOL[dtype])


def test_ldl_solve_accuracy(device):
    # factor and solve in float64 match NumPy's solve; both batches broadcast (torch 2.13 crashes on this one)
    rng = np.random.default_rng(3)
    for ashape, bshape in [((6, 6), (6, 3)), ((2, 1, 7, 7), (3, 7, 2))]:
        for kind in ["indefinite", "small diagonal"]:
            a = symmetric(rng, ashape, kind)
            a = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
            b = rng.standard_normal(bshape)
            LD, pivots = vkt.linalg.ldl_factor(vkt.tensor(a, device=device))
            x = vkt.linalg.ldl_solve(LD, pivots.long(), vkt.tensor(b, device=device))
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            want = np.linalg.solve(a, np.broadcast_to(b, batch + b.shape[-2:]))
            scale = np.linalg.cond(a).max() * np.abs(want).max()
            assert_close(x, want, rtol=0, atol=1e-14 * scale)


TENSORINV = [((4, 2, 2), 1), ((2, 3, 6), 2), ((6, 2, 3), 1), ((2, 2, 2, 2), 2), ((3, 3), 1), ((5, 5), 1),
             ((0, 0, 0), 1), ((0, 2, 0), 2)]
TENSORSOLVE = [((2, 3, 6), (2, 3), None), ((6, 2, 3), (6,), None), ((6, 2, 3), (2, 3), (0,)), ((3, 2, 6), (6,), [0, 1]),
               ((2, 3, 2, 3), (2, 3), None), ((1, 1), (), None), ((0, 0), (0,), None)]


def tensor_of(rng, shape, n):
    """A well-conditioned n x n matrix reshaped to shape: its entries come back in the same order (here, or
    transposed where dims moves them) when tensorinv and tensorsolve reshape it to a matrix."""
    return well_conditioned(rng, (n, n)).reshape(shape)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensorinv(device, dtype):
    rng = np.random.default_rng(4)
    for shape, ind in TENSORINV:
        a = tensor_of(rng, shape, int(np.prod(shape[:ind]))).astype(dtype)
        got = vkt.linalg.tensorinv(as_vkt(a, dtype, device), ind=ind)
        want = torch.linalg.tensorinv(torch.tensor(a), ind=ind)
        assert got.dtype == getattr(vkt, dtype)
        assert_close(got, want.numpy(), rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensorsolve(device, dtype):
    rng = np.random.default_rng(5)
    for ashape, bshape, dims in TENSORSOLVE:
        a = tensor_of(rng, ashape, int(np.prod(bshape))).astype(dtype)
        b = rng.standard_normal(bshape).astype(dtype)
        got = vkt.linalg.tensorsolve(as_vkt(a, dtype, device), as_vkt(b, dtype, device), dims=dims)
        want = torch.linalg.tensorsolve(torch.tensor(a), torch.tensor(b), dims=dims)
        assert got.dtype == getattr(vkt, dtype)
        assert_close(got, want.numpy(), rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


GRAD_FNS = [  # (function of (library, A, B), shape of A, its size as a matrix, shape of B)
    (lambda L, a, b: L.linalg.tensorinv(a, ind=1), (4, 2, 2), 4, (1,)),
    (lambda L, a, b: L.linalg.tensorinv(a), (2, 3, 6), 6, (1,)),
    (lambda L, a, b: L.linalg.tensorsolve(a, b), (2, 3, 6), 6, (2, 3)),
    (lambda L, a, b: L.linalg.tensorsolve(a, b, dims=(0,)), (6, 2, 3), 6, (2, 3)),
]


def grad_args(rng, fn, device, dtype="float64"):
    _, ashape, n, bshape = fn
    a, b = tensor_of(rng, ashape, n), rng.standard_normal(bshape)
    return as_vkt(a, dtype, device, True), as_vkt(b, dtype, device, True)


@pytest.mark.parametrize("f", range(len(GRAD_FNS)))
def test_gradcheck(f):
    a, b = grad_args(np.random.default_rng(6), GRAD_FNS[f], "cpu")
    assert vkt.autograd.gradcheck(lambda x, y: GRAD_FNS[f][0](vkt, x, y), (a, b))


def test_gradients_match_torch(device):
    rng = np.random.default_rng(7)
    for fn in GRAD_FNS:
        a, b = grad_args(rng, fn, device)
        s, t = (torch.tensor(np_of(v), requires_grad=True) for v in (a, b))
        (fn[0](vkt, a, b).sin() ** 2).sum().backward()
        (fn[0](torch, s, t).sin() ** 2).sum().backward()
        assert_close(a.grad, s.grad.numpy(), rtol=1e-8, atol=1e-8)
        if t.grad is not None:
            assert_close(b.grad, t.grad.numpy(), rtol=1e-8, atol=1e-8)


def pivots3(L):
    return L.arange(1, 4, dtype=L.int32)


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.ldl_factor(L.ones(2, 3)),
    lambda L: L.linalg.ldl_factor_ex(L.ones(3)),
    lambda L: L.linalg.ldl_factor(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.ldl_factor(L.ones(3, 3, dtype=L.float16)),
    lambda L: L.linalg.ldl_factor([[1.0]]),
    lambda L: L.linalg.ldl_factor_ex(L.eye(3, requires_grad=True)).LD.sum().backward(),
    lambda L: L.linalg.ldl_solve(L.ones(2, 3), pivots3(L)[:2], L.ones(2, 1)),
    lambda L: L.linalg.ldl_solve(L.ones(3), pivots3(L), L.ones(3, 1)),
    lambda L: L.linalg.ldl_solve(L.eye(3, dtype=L.int64), pivots3(L), L.ones(3, 1, dtype=L.int64)),
    lambda L: L.linalg.ldl_solve(L.eye(3), pivots3(L), L.ones(3, 1, dtype=L.float64)),
    lambda L: L.linalg.ldl_solve(L.eye(3), pivots3(L), L.ones(3)),
    lambda L: L.linalg.ldl_solve(L.eye(3), pivots3(L), L.tensor(1.0)),
    lambda L: L.linalg.ldl_solve(L.eye(3), pivots3(L), L.ones(2, 1)),
    lambda L: L.linalg.ldl_solve(L.eye(3), pivots3(L)[:2], L.ones(3, 1)),
    lambda L: L.linalg.ldl_solve(L.eye(3).expand(2, 3, 3), pivots3(L), L.ones(3, 1)),
    lambda L: L.linalg.ldl_solve(L.eye(3), L.ones(3), L.ones(3, 1)),
    lambda L: L.linalg.ldl_solve(L.eye(3), L.ones(3, dtype=L.bool), L.ones(3, 1)),
    lambda L: L.linalg.ldl_solve(L.eye(3).expand(2, 3, 3), pivots3(L).expand(2, 3), L.ones(3, 3, 1)),
    lambda L: L.linalg.ldl_solve(L.eye(3, dtype=L.float16), pivots3(L), L.ones(3, 1, dtype=L.float16)),
    lambda L: L.linalg.ldl_solve(L.eye(3), pivots3(L), L.ones(3, 1, requires_grad=True)).sum().backward(),
    lambda L: L.linalg.tensorinv(L.eye(4).reshape(4, 2, 2), ind=0),
    lambda L: L.linalg.tensorinv(L.eye(4).reshape(4, 2, 2), ind=-1),
    lambda L: L.linalg.tensorinv(L.eye(4).reshape(4, 2, 2), ind=3),
    lambda L: L.linalg.tensorinv(L.ones(4, 2, 3)),
    lambda L: L.linalg.tensorinv(L.zeros(4, 2, 2), ind=1),
    lambda L: L.linalg.tensorinv(L.ones(2, 2, dtype=L.int64), ind=1),
    lambda L: L.linalg.tensorinv(L.eye(4), ind=1.0),
    lambda L: L.linalg.tensorinv([[1.0]], ind=1),
    lambda L: L.linalg.tensorsolve(L.eye(6).reshape(2, 3, 6), L.ones(3, 3)),
    lambda L: L.linalg.tensorsolve(L.zeros(2, 3, 6), L.ones(2, 3)),
    lambda L: L.linalg.tensorsolve(L.eye(6).reshape(2, 3, 6), L.ones(2, 3, dtype=L.float64)),
    lambda L: L.linalg.tensorsolve(L.eye(6).reshape(6, 2, 3), L.ones(2, 3), dims=(5,)),
    lambda L: L.linalg.tensorsolve(L.eye(6).reshape(6, 2, 3), L.ones(2, 3), dims=0),
    lambda L: L.linalg.tensorsolve(L.ones(2, 2, dtype=L.int64), L.ones(2, dtype=L.int64)),
    lambda L: L.linalg.tensorsolve(L.ones(4, 6), L.ones(6)),
    lambda L: L.linalg.tensorsolve(L.eye(6), [1.0]),
])
def test_errors(call):
    assert raised(lambda: call(vkt)) == raised(lambda: call(torch))


# Where torch 2.13 has no message of its own (an internal assert, or a failure slicing a shape), vkt raises the same
# exception type with one that names the problem.
@pytest.mark.parametrize("call, words", [
    (lambda L: L.linalg.ldl_factor_ex(L.zeros(2, 3, 3), check_errors=True), "singular"),
    (lambda L: L.linalg.ldl_factor(L.zeros(3, 3)), "zero pivot at column 1"),
    (lambda L: L.linalg.ldl_factor(L.stack([L.eye(3), L.diag(L.tensor([1.0, 0.0, 2.0]))])), "zero pivot at column 2"),
    (lambda L: L.linalg.tensorinv(L.eye(4).reshape(4, 2, 2), ind=5), "'ind' to be at most"),
    (lambda L: L.linalg.tensorsolve(L.eye(6).reshape(2, 3, 6), L.ones(2, 3, 1, 1)), "at most as many dims"),
])
def test_errors_torch_leaves_unexplained(call, words):
    got, want = raised(lambda: call(vkt)), raised(lambda: call(torch))
    assert got[0] == want[0] and words in got[1], (got, want)
