# The products built on matmul: dot vdot mv addmv baddbmm addbmm outer inner tensordot kron cross einsum,
# against torch 2.13 (CPU) on the same float64-exact inputs, on the cpu and vulkan devices, with their
# errors, and with no CPU fallback for float32 on vulkan.
import numpy as np
import pytest

import vkt
from conftest import assert_close, to_numpy

torch = pytest.importorskip("torch")


def arrays(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype in ("int32", "int64"):
        return [rng.integers(-4, 5, s).astype(dtype) for s in shapes]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def layout(a, how):
    """a itself, or the same values behind a transposed copy (a non-contiguous view)."""
    if how == "c" or a.ndim < 2:
        return a
    return np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)


# (name, vkt call, torch call, shapes)
CASES = [
    ("dot", lambda a, b: a.dot(b), lambda a, b: a.dot(b), [(7,), (7,)]),
    ("dot_empty", lambda a, b: vkt.dot(a, b), lambda a, b: torch.dot(a, b), [(0,), (0,)]),
    ("vdot", lambda a, b: vkt.vdot(a, b), lambda a, b: torch.vdot(a, b), [(33,), (33,)]),
    ("mv", lambda a, b: vkt.mv(a, b), lambda a, b: torch.mv(a, b), [(5, 7), (7,)]),
    ("mv_method", lambda a, b: a.mv(b), lambda a, b: a.mv(b), [(1, 9), (9,)]),
    ("addmv", lambda i, a, b: vkt.addmv(i, a, b, beta=0.5, alpha=2), lambda i, a, b: torch.addmv(i, a, b, beta=0.5, alpha=2),
     [(5,), (5, 7), (7,)]),
    ("addmv_bcast", lambda i, a, b: i.addmv(a, b), lambda i, a, b: i.addmv(a, b), [(1,), (6, 3), (3,)]),
    ("baddbmm", lambda i, a, b: vkt.baddbmm(i, a, b, beta=0.5, alpha=2),
     lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=2), [(5, 1), (3, 5, 7), (3, 7, 2)]),
    ("baddbmm_method", lambda i, a, b: i.baddbmm(a, b), lambda i, a, b: i.baddbmm(a, b), [(2, 4, 3), (2, 4, 5), (2, 5, 3)]),
    ("addbmm", lambda i, a, b: vkt.addbmm(i, a, b, beta=0.5, alpha=2),
     lambda i, a, b: torch.addbmm(i, a, b, beta=0.5, alpha=2), [(5, 2), (3, 5, 7), (3, 7, 2)]),
    ("addbmm_method", lambda i, a, b: i.addbmm(a, b), lambda i, a, b: i.addbmm(a, b), [(1,), (4, 2, 3), (4, 3, 5)]),
    ("outer", lambda a, b: vkt.outer(a, b), lambda a, b: torch.outer(a, b), [(4,), (6,)]),
    ("ger", lambda a, b: a.ger(b), lambda a, b: a.ger(b), [(1,), (3,)]),
    ("inner_1d", lambda a, b: vkt.inner(a, b), lambda a, b: torch.inner(a, b), [(5,), (5,)]),
    ("inner_nd", lambda a, b: a.inner(b), lambda a, b: a.inner(b), [(2, 3, 4), (5, 4)]),
    ("inner_0d", lambda a, b: vkt.inner(a, b), lambda a, b: torch.inner(a, b), [(), (3, 2)]),
    ("tensordot_2", lambda a, b: vkt.tensordot(a, b), lambda a, b: torch.tensordot(a, b), [(3, 4, 5), (4, 5, 2)]),
    ("tensordot_0", lambda a, b: vkt.tensordot(a, b, 0), lambda a, b: torch.tensordot(a, b, 0), [(3,), (2, 2)]),
    ("tensordot_lists", lambda a, b: vkt.tensordot(a, b, dims=([0, 2], [1, 0])),
     lambda a, b: torch.tensordot(a, b, dims=([0, 2], [1, 0])), [(3, 4, 5), (5, 3, 2)]),
    ("kron", lambda a, b: vkt.kron(a, b), lambda a, b: torch.kron(a, b), [(2, 3), (4, 5)]),
    ("kron_ranks", lambda a, b: a.kron(b), lambda a, b: a.kron(b), [(3,), (2, 2)]),
    ("cross", lambda a, b: vkt.cross(a, b), lambda a, b: torch.cross(a, b), [(4, 3), (4, 3)]),
    ("cross_dim", lambda a, b: a.cross(b, dim=0), lambda a, b: a.cross(b, dim=0), [(3, 5), (3, 5)]),
    ("linalg_cross", lambda a, b: vkt.linalg.cross(a, b), lambda a, b: torch.linalg.cross(a, b), [(2, 1, 3), (1, 4, 3)]),
]


@pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim")
@pytest.mark.parametrize("name,f,g,shapes", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("how", ["c", "t"])
def test_products_as_torch(device, name, f, g, shapes, dtype, how):
    arrs = [layout(a, how) for a in arrays(shapes, dtype)]
    vkt.vulkan.reset_fallback_stats()
    got = f(*[vkt.tensor(a, device=device) for a in arrs])
    ref = g(*[torch.from_numpy(np.array(a, order="C")) for a in arrs])
    assert got.shape == tuple(ref.shape) and str(got.dtype)[4:] == str(ref.dtype)[6:]
    assert_close(got, ref.numpy(), rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-4 if dtype == "float32" else 1e-10)
    if dtype == "float32":
        assert vkt.vulkan.fallback_stats() == {}


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("ijk,ikl->", [(2, 3, 4), (2, 4, 5)]),
    (" i j , j k -> i k ", [(3, 4), (4, 5)]),
    ("ab,b->ab", [(3, 1), (5,)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),
    ("ij,ij->ij", [(0, 3), (0, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_as_torch(device, eq, shapes):
    arrs = arrays(shapes, "float64", seed=1)
    got = vkt.einsum(eq, *[vkt.tensor(a, device=device) for a in arrs])
    ref = torch.einsum(eq, *[torch.from_numpy(a) for a in arrs])
    assert got.shape == tuple(ref.shape)
    assert_close(got, ref.numpy(), rtol=1e-10, atol=1e-10)


def test_einsum_float32_on_device_no_fallback(dev):
    a, b = arrays([(4, 8, 16), (4, 16, 8)], "float32")
    vkt.vulkan.reset_fallback_stats()
    got = vkt.einsum("bij,bjk->bik", [vkt.tensor(a, device=dev), vkt.tensor(b, device=dev)])
    assert_close(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert vkt.vulkan.fallback_stats() == {}


ERRORS = [
    (lambda m, v: vkt.dot(m, v), lambda m, v: torch.dot(m, v)),
    (lambda m, v: vkt.dot(v, v[:2]), lambda m, v: torch.dot(v, v[:2])),
    (lambda m, v: vkt.dot(v, v.double()), lambda m, v: torch.dot(v, v.double())),
    (lambda m, v: vkt.mv(v, v), lambda m, v: torch.mv(v, v)),
    (lambda m, v: vkt.outer(m, v), lambda m, v: torch.outer(m, v)),
    (lambda m, v: vkt.inner(m, v[:2]), lambda m, v: torch.inner(m, v[:2])),
    (lambda m, v: vkt.baddbmm(m, m.reshape(1, 2, 3), m.reshape(1, 2, 3)),
     lambda m, v: torch.baddbmm(m, m.reshape(1, 2, 3), m.reshape(1, 2, 3))),
    (lambda m, v: vkt.tensordot(m, m, 3), lambda m, v: torch.tensordot(m, m, 3)),
    (lambda m, v: vkt.einsum("ij,jk", m), lambda m, v: torch.einsum("ij,jk", m)),
    (lambda m, v: vkt.einsum("ijk", m), lambda m, v: torch.einsum("ijk", m)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_as_torch(device, i):
    f, g = ERRORS[i]
    m, v = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    with pytest.raises(Exception) as ref:
        g(torch.from_numpy(m), torch.from_numpy(v))
    with pytest.raises(type(ref.value)):
        f(vkt.tensor(m, device=device), vkt.tensor(v, device=device))
