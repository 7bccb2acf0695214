# linalg.svd, linalg.svdvals and the matrix norms of singular values (matrix_norm / norm with 'nuc', 2, -2):
# singular values against NumPy's float64 SVD, the vectors by what defines them (U diag(S) Vh == A, orthonormal
# columns; their signs are free), shapes, dtypes and errors against torch on the CPU, gradients with gradcheck
# in float64 and against torch's, and no CPU fallback for float32 on vulkan.
import numpy as np
import pytest

import vkt

from conftest import assert_close

torch = pytest.importorskip("torch")

# (2, 24, 17) and (20, 20) pass lavapipe's loop limit, so they take the CPU there (the shader on a GPU)
SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 3), (2, 3, 4), (1, 1), (1, 4), (4, 1), (2, 2, 6, 6), (0, 3, 3), (2, 8, 8),
          (2, 24, 17), (20, 20)]
TOL = {"float32": 2e-5, "float64": 1e-12}


def check_svd(a, u, s, vh, full, tol):
    """a = U diag(S) Vh, S descending and equal to NumPy's, U and Vh orthonormal."""
    u, s, vh = (np.asarray(t.cpu()) for t in (u, s, vh))
    m, n = a.shape[-2:]
    k = min(m, n)
    assert u.shape == a.shape[:-2] + ((m, m) if full else (m, k))
    assert vh.shape == a.shape[:-2] + ((n, n) if full else (k, n))
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    scale = max(1.0, float(np.abs(ref).max(initial=0)))
    assert_close(s, ref, rtol=tol, atol=tol * scale)
    assert_close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, rtol=tol, atol=10 * tol * scale)
    assert_close(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2),
                 atol=10 * tol)
    assert_close(vh @ np.swapaxes(vh, -1, -2), np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2),
                 atol=10 * tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("full", [False, True])
def test_svd(device, full, dtype):
    rng = np.random.default_rng(1)
    for shape in SHAPES:
        a = rng.standard_normal(shape).astype(dtype)
        u, s, vh = vkt.linalg.svd(vkt.tensor(a, device=device), full_matrices=full)
        assert (u.dtype, s.dtype, vh.dtype) == (getattr(vkt, dtype),) * 3
        assert (u.device, s.device) == (vkt.device(device),) * 2 or device == "vulkan"
        check_svd(a, u, s, vh, full, TOL[dtype])


@pytest.mark.parametrize("case", ["zeros", "ones", "rank1", "repeated", "scaled", "tiny"])
def test_svd_special_matrices(device, case):
    # rank-deficient matrices need completed singular vectors; equal singular values; wide value ranges
    rng = np.random.default_rng(2)
    a = {"zeros": np.zeros((4, 3)), "ones": np.ones((3, 5)), "rank1": np.outer(rng.standard_normal(5), [1, 2, 3.]),
         "repeated": np.eye(4) * 3, "scaled": np.diag([1e8, 1, 1e-8]) @ rng.standard_normal((3, 3)),
         "tiny": rng.standard_normal((3, 4)) * 1e-30}[case]
    for full in (False, True):
        u, s, vh = vkt.linalg.svd(vkt.tensor(a, device=device), full_matrices=full)
        check_svd(a, u, s, vh, full, 1e-12)


def test_svd_non_contiguous(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 6, 8))
    x = vkt.tensor(a, device=device)
    for view, ref in [(x.transpose(1, 2), a.transpose(0, 2, 1)), (x[:, ::2, 1::2], a[:, ::2, 1::2]),
                      (x.transpose(0, 2)[1:5], a.transpose(2, 1, 0)[1:5])]:
        check_svd(ref, *vkt.linalg.svd(view, full_matrices=False), False, 1e-12)
        assert_close(vkt.linalg.svdvals(view), np.linalg.svd(ref, compute_uv=False), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3), (0, 4, 3), (0, 0)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_empty(device, shape, full):
    # no singular values: the vectors are empty, or the identity with full_matrices (torch's)
    got = vkt.linalg.svd(vkt.zeros(*shape, device=device), full_matrices=full)
    want = torch.linalg.svd(torch.zeros(*shape), full_matrices=full)
    for g, w in zip(got, want):
        assert_close(g, w.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_svdvals(device, dtype):
    rng = np.random.default_rng(4)
    for shape in SHAPES + [(0, 2), (2, 0, 5)]:
        a = rng.standard_normal(shape).astype(dtype)
        s = vkt.linalg.svdvals(vkt.tensor(a, device=device))
        assert s.dtype == getattr(vkt, dtype) and s.shape == tuple(torch.linalg.svdvals(torch.tensor(a)).shape)
        ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
        assert_close(s, ref, rtol=TOL[dtype], atol=TOL[dtype] * max(1, float(np.abs(ref).max(initial=0))))


NORMS = [(ord, dim, keepdim) for ord in ["nuc", 2, -2, 2.0] for dim, keepdim in
         [(None, False), ((-2, -1), True), ((0, 2), False), ((2, 0), True), ((1, 0), False)]]


@pytest.mark.parametrize("ord,dim,keepdim", NORMS)
def test_matrix_norm(device, ord, dim, keepdim):
    a = np.random.default_rng(5).standard_normal((3, 4, 5))
    kw = {} if dim is None else {"dim": dim}
    got = vkt.linalg.matrix_norm(vkt.tensor(a, device=device), ord, keepdim=keepdim, **kw)
    want = torch.linalg.matrix_norm(torch.tensor(a), ord, keepdim=keepdim, **kw)
    assert_close(got, want.numpy(), rtol=1e-12, atol=1e-12)
    got = vkt.linalg.matrix_norm(vkt.tensor(a.astype(np.float32), device=device), ord, keepdim=keepdim, **kw)
    assert got.dtype == vkt.float32
    assert_close(got, want.numpy(), rtol=2e-5, atol=2e-5)


def test_matrix_norm_dtype_and_norm(device):
    a = np.random.default_rng(6).standard_normal((2, 3, 3)).astype(np.float32)
    x, t = vkt.tensor(a, device=device), torch.tensor(a)
    got = vkt.linalg.matrix_norm(x, "nuc", dtype=vkt.float64)
    assert got.dtype == vkt.float64
    assert_close(got, torch.linalg.matrix_norm(t, "nuc", dtype=torch.float64).numpy(), rtol=1e-6)
    for ord in ["nuc", 2, -2]:
        assert_close(vkt.linalg.norm(x[0], ord), torch.linalg.norm(t[0], ord).numpy(), rtol=2e-5)
        assert_close(vkt.linalg.norm(x, ord, dim=(1, 2)), torch.linalg.norm(t, ord, dim=(1, 2)).numpy(), rtol=2e-5)
    for call in [lambda L, y: L.norm(y[0], "nuc"), lambda L, y: y.norm("nuc", dim=(0, 2), keepdim=True),
                 lambda L, y: y.norm("nuc", dim=[2, 1], dtype=L.float64)]:
        assert_close(call(vkt, x), call(torch, t).numpy(), rtol=2e-5)
    for shape in [(0, 3), (2, 0, 0)]:  # no singular values: 'nuc' and 2 are 0
        for ord in ["nuc", 2]:
            assert_close(vkt.linalg.matrix_norm(vkt.zeros(*shape, device=device), ord),
                         torch.linalg.matrix_norm(torch.zeros(*shape), ord).numpy())


@pytest.mark.parametrize("call", [
    lambda L: L.linalg.svd(L.ones(3)),
    lambda L: L.linalg.svdvals(L.ones(3)),
    lambda L: L.linalg.svd(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.svdvals(L.ones(2, 2, dtype=L.bool)),
    lambda L: L.linalg.svd(L.ones(3, 3, dtype=L.float16)),
    lambda L: L.linalg.svd(L.ones(3, 3), driver="gesvd"),
    lambda L: L.linalg.svdvals(L.ones(3, 3), driver="gesvd"),
    lambda L: L.linalg.svd("x"),
    lambda L: L.linalg.svdvals([[1.0]]),
    lambda L: L.linalg.matrix_norm(L.ones(3, 3, dtype=L.int64), "nuc"),
    lambda L: L.linalg.matrix_norm(L.ones(3), "nuc"),
    lambda L: L.linalg.matrix_norm(L.ones(3, 3), 2, dim=(1, 1)),
    lambda L: L.linalg.matrix_norm(L.ones(3, 3), -2, dim=(1, 2)),
    lambda L: L.linalg.matrix_norm(L.ones(3, 3), 3),
    lambda L: L.linalg.matrix_norm(L.ones(0, 3), -2),
    lambda L: L.linalg.norm(L.ones(3), "nuc"),
    lambda L: L.norm(L.ones(3), "nuc"),
    lambda L: L.norm(L.ones(2, 3, 4), "nuc"),
    lambda L: L.ones(2, 3).norm("nuc", dim=1),
])
def test_errors(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(want.type) as got:
        call(vkt)
    assert str(got.value) == str(want.value)


def gauge_free(full):
    """Functions of svd's outputs that do not depend on the singular vectors' signs."""
    def f(x):
        u, s, vh = vkt.linalg.svd(x, full_matrices=full)
        k = s.shape[-1]
        return (u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], u[..., :k] @ vh[..., :k, :], s
    return f


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 3, 2), (1, 1)])
def test_gradcheck(device, shape):
    rng = np.random.default_rng(7)
    x = vkt.tensor(rng.standard_normal(shape), device=device, requires_grad=True)
    gradcheck = vkt.autograd.gradcheck
    assert gradcheck(vkt.linalg.svdvals, (x,))
    for ord in ["nuc", 2, -2]:
        assert gradcheck(lambda a: vkt.linalg.matrix_norm(a, ord), (x,))
    for full in (False, True):
        assert gradcheck(gauge_free(full), (x,))


def test_gradgradcheck(device):
    # create_graph: svdvals' backward goes through svd again, so second derivatives see U and Vh move
    x = vkt.tensor(np.random.default_rng(10).standard_normal((2, 4, 3)), device=device, requires_grad=True)
    assert vkt.autograd.gradgradcheck(vkt.linalg.svdvals, (x,))
    assert vkt.autograd.gradgradcheck(lambda a: vkt.linalg.matrix_norm(a, "nuc"), (x,))


def test_gradients_match_torch(device):
    a = np.random.default_rng(8).standard_normal((2, 5, 3))
    x = vkt.tensor(a, device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    for f in [lambda L, y: L.linalg.svdvals(y).pow(3).sum(),
              lambda L, y: L.linalg.matrix_norm(y, "nuc", dim=(0, 2), keepdim=True).sum(),
              lambda L, y: L.linalg.matrix_norm(y, 2).sum(), lambda L, y: L.linalg.norm(y[1], -2),
              lambda L, y: (lambda u, s, vh: (u @ vh).sin().sum() + s.sum())(*L.linalg.svd(y, full_matrices=False))]:
        x.grad, t.grad = None, None
        f(vkt, x).backward()
        f(torch, t).backward()
        assert_close(x.grad, t.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert vkt.linalg.svdvals(x).grad_fn.name() == "LinalgSvdBackward0"
    assert vkt.linalg.svd(x).U.grad_fn.name() == "LinalgSvdBackward0"


def test_float32_takes_no_fallback(dev):
    a = np.random.default_rng(9).standard_normal((4, 6, 5)).astype(np.float32)
    vkt.vulkan.reset_fallback_stats()
    x = vkt.tensor(a, device=dev, requires_grad=True)
    vkt.linalg.svd(x, full_matrices=True)
    vkt.linalg.matrix_norm(x, "nuc").sum().backward()
    vkt.linalg.matrix_norm(x, -2, dim=(0, 1)).sum().backward()
    x.grad.cpu()
    assert vkt.vulkan.fallback_stats() == {}
