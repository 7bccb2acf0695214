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


# grad_fn of a product, as PyTorch names it: dot, mv, mm and bmm their own; matmul the last node of its composite
# (a vector times a matrix is an mm squeezed in place; past 2-D a view of a folded product, but a matrix that requires
# grad times a batch, which PyTorch transposes back and copies). (name, product over m, shapes, which require grad)
NAMES = [
    ("vv", lambda m, a, b: a @ b, [(3,), (3,)], (1, 1)),
    ("mv", lambda m, a, b: a @ b, [(2, 3), (3,)], (1, 1)),
    ("vm", lambda m, a, b: m.matmul(a, b), [(3,), (3, 2)], (1, 1)),
    ("mm", lambda m, a, b: a.matmul(b), [(2, 3), (3, 2)], (1, 1)),
    ("bb", lambda m, a, b: a @ b, [(2, 2, 3), (2, 3, 4)], (1, 1)),
    ("bm", lambda m, a, b: a @ b, [(2, 2, 3), (3, 4)], (1, 0)),
    ("bm_rhs", lambda m, a, b: a @ b, [(2, 2, 3), (3, 4)], (0, 1)),
    ("bv", lambda m, a, b: a @ b, [(2, 2, 3), (3,)], (1, 1)),
    ("vb", lambda m, a, b: a @ b, [(3,), (2, 3, 4)], (1, 1)),
    ("vb_rhs", lambda m, a, b: a @ b, [(3,), (2, 3, 4)], (0, 1)),
    ("mb", lambda m, a, b: a @ b, [(2, 3), (2, 3, 4)], (1, 1)),
    ("mb_rhs", lambda m, a, b: a @ b, [(2, 3), (2, 3, 4)], (0, 1)),
    ("mb_one_row", lambda m, a, b: a @ b, [(1, 3), (2, 3, 4)], (1, 0)),
    ("mb_one_column", lambda m, a, b: a @ b, [(2, 3), (2, 3, 1)], (1, 0)),
    ("mb_empty_batch", lambda m, a, b: a @ b, [(2, 3), (0, 3, 4)], (1, 0)),
    ("mb4", lambda m, a, b: a @ b, [(2, 3), (2, 2, 3, 4)], (1, 0)),
    ("one_batch_lhs", lambda m, a, b: a @ b, [(1, 2, 3), (2, 3, 4)], (1, 1)),
    ("one_batch_lhs_data", lambda m, a, b: a @ b, [(1, 2, 3), (2, 3, 4)], (0, 1)),
    ("one_batch_rhs", lambda m, a, b: a @ b, [(2, 2, 3), (1, 3, 4)], (0, 1)),
    ("broadcast4", lambda m, a, b: a @ b, [(2, 1, 2, 3), (1, 2, 3, 4)], (1, 1)),
    ("mm_fn", lambda m, a, b: m.mm(a, b), [(2, 3), (3, 2)], (1, 1)),
    ("mv_fn", lambda m, a, b: m.mv(a, b), [(2, 3), (3,)], (0, 1)),
    ("bmm_fn", lambda m, a, b: a.bmm(b), [(2, 2, 3), (2, 3, 4)], (1, 0)),
    ("dot_fn", lambda m, a, b: m.dot(a, b), [(3,), (3,)], (1, 0)),
    ("vdot_fn", lambda m, a, b: m.vdot(a, b), [(3,), (3,)], (1, 1)),
    ("vdot_method", lambda m, a, b: a.vdot(b), [(3,), (3,)], (0, 1)),
    ("linear_batch", lambda m, a, b: m.nn.functional.linear(a, b), [(2, 2, 3), (4, 3)], (1, 1)),
]


@pytest.mark.parametrize("name,f,shapes,grads", NAMES, ids=[c[0] for c in NAMES])
def test_grad_fn_names_as_torch(device, name, f, shapes, grads):
    arrs = arrays(shapes, "float32")
    names, gradients = [], []
    for m in (torch, vkt):
        where = {} if m is torch else {"device": device}
        xs = [m.tensor(a, requires_grad=bool(g), **where) for a, g in zip(arrs, grads)]
        y = f(m, *xs)
        names.append(y.grad_fn.name())
        y.sum().backward()
        gradients.append([to_numpy(x.grad) for x, g in zip(xs, grads) if g])
    assert names[1] == names[0]
    for got, want in zip(gradients[1], gradients[0]):
        assert_close(got, want, rtol=1e-5, atol=1e-5)
