# Autograd of the writes along a dim or through a mask (scatter, scatter_add, scatter_reduce, index_copy,
# index_add, index_fill, masked_scatter), out of place and in place on a non-leaf, and of take,
# masked_select and trace, against torch.autograd in float64: the same lambda runs on vkt and torch inputs,
# the same random weights are backpropagated, and both inputs' gradients and the node names are compared;
# a few cases also run vkt's gradcheck and gradgradcheck. scatter_reduce's prod, amax and amin are also
# compared at their ties and zeros, in float32 and float64.
import numpy as np
import pytest
import torch

import vkt


def I(L, d, v):
    """An int64 index on d, in library L."""
    return torch.tensor(v) if L is torch else vkt.tensor(v, device=d)


def M(L, d, v):
    """A bool mask on d, in library L."""
    return torch.tensor(v, dtype=torch.bool) if L is torch else vkt.tensor(v, dtype=vkt.bool, device=d)


IDX2 = [[0, 2, 1], [2, 0, 0]]  # scatter along 0 of a (3, 3): repeats in column 0 and 2... (scatter: unique per col)
UNIQ = [[0, 2, 1], [2, 0, 0]]
MASK = [[True, False, True], [False, True, True]]

# name, op(L, x, s, d) -> tensor, x shape, s shape (None: no second input), grad_fn name
CASES = [
    ("scatter", lambda L, x, s, d: x.scatter(0, I(L, d, UNIQ), s), (3, 3), (2, 3), "ScatterBackward0"),
    ("scatter_value", lambda L, x, s, d: x.scatter(1, I(L, d, [[2], [0], [1]]), 0.5), (3, 3), None, "ScatterBackward1"),
    ("scatter_fn", lambda L, x, s, d: L.scatter(x, -1, I(L, d, [[1, 0]]), s), (2, 3), (1, 2), "ScatterBackward0"),
    ("scatter_add", lambda L, x, s, d: x.scatter_add(0, I(L, d, [[0, 0, 1], [0, 2, 1]]), s), (3, 3), (2, 3),
     "ScatterAddBackward0"),
    ("reduce_sum", lambda L, x, s, d: x.scatter_reduce(0, I(L, d, [[0, 0, 1], [0, 2, 1]]), s, "sum"), (3, 3), (2, 3),
     "ScatterReduceBackward0"),
    ("reduce_sum_noself", lambda L, x, s, d: x.scatter_reduce(0, I(L, d, [[0, 0, 1], [0, 2, 1]]), s, "sum",
                                                              include_self=False), (3, 3), (2, 3),
     "ScatterReduceBackward0"),
    ("reduce_mean", lambda L, x, s, d: x.scatter_reduce(0, I(L, d, [[0, 0, 1], [0, 2, 1]]), s, "mean"), (3, 3), (2, 3),
     "ScatterReduceBackward0"),
    ("reduce_mean_noself", lambda L, x, s, d: L.scatter_reduce(x, 0, I(L, d, [[0, 0, 1], [0, 2, 1]]), s, "mean",
                                                               include_self=False), (3, 3), (2, 3),
     "ScatterReduceBackward0"),
    ("reduce_prod", lambda L, x, s, d: x.scatter_reduce(0, I(L, d, [[0, 0, 1], [0, 2, 1]]), s, "prod"), (3, 3), (2, 3),
     "ScatterReduceBackward0"),
    ("reduce_prod_noself", lambda L, x, s, d: L.scatter_reduce(x, 1, I(L, d, [[2, 2], [0, 2], [1, 1]]), s, "prod",
                                                               include_self=False), (3, 4), (3, 2),
     "ScatterReduceBackward0"),
    ("reduce_prod_3d", lambda L, x, s, d: x.scatter_reduce(-1, I(L, d, [[[0, 2, 0]], [[1, 1, 2]]]), s, "prod"),
     (2, 2, 3), (2, 1, 3), "ScatterReduceBackward0"),
    ("reduce_amax", lambda L, x, s, d: x.scatter_reduce(0, I(L, d, [[0, 0, 1], [0, 2, 1]]), s, "amax"), (3, 3), (2, 3),
     "ScatterReduceBackward0"),
    ("reduce_amax_noself", lambda L, x, s, d: x.scatter_reduce(-1, I(L, d, [[1, 1, 0], [2, 2, 2]]), s, "amax",
                                                               include_self=False), (2, 3), (2, 3),
     "ScatterReduceBackward0"),
    ("reduce_amin", lambda L, x, s, d: L.scatter_reduce(x, 1, I(L, d, [[0, 0], [2, 1]]), s, "amin"), (2, 3), (2, 2),
     "ScatterReduceBackward0"),
    ("reduce_amin_noself_1d", lambda L, x, s, d: x.scatter_reduce(0, I(L, d, [3, 0, 3, 3]), s, "amin",
                                                                  include_self=False), (4,), (4,),
     "ScatterReduceBackward0"),
    ("index_copy", lambda L, x, s, d: x.index_copy(1, I(L, d, [2, 0]), s), (3, 4), (3, 2), "IndexCopyBackward0"),
    ("index_add", lambda L, x, s, d: x.index_add(0, I(L, d, [2, 0, 2]), s), (3, 4), (3, 4), "IndexAddBackward0"),
    ("index_add_alpha", lambda L, x, s, d: L.index_add(x, 1, I(L, d, [1, 1]), s, alpha=-2.5), (3, 4), (3, 2),
     "IndexAddBackward0"),
    ("index_fill", lambda L, x, s, d: x.index_fill(1, I(L, d, [3, 0, 3]), -1.0), (3, 4), None, "IndexFillBackward0"),
    ("index_fill_tensor", lambda L, x, s, d: x.index_fill(0, I(L, d, [2, 2, 0]), s), (3, 4), (),
     "IndexFillBackward1"),
    ("masked_scatter", lambda L, x, s, d: x.masked_scatter(M(L, d, MASK), s), (2, 3), (2, 3),
     "MaskedScatterBackward0"),
    ("masked_scatter_bcast", lambda L, x, s, d: x.masked_scatter(M(L, d, [True, False, True]), s), (2, 3), (5,),
     "MaskedScatterBackward0"),
    ("take", lambda L, x, s, d: L.take(x, I(L, d, [[5, 0], [-1, 5]])), (3, 4), None, "TakeBackward0"),
    ("masked_select", lambda L, x, s, d: x.masked_select(M(L, d, MASK)), (2, 3), None, "MaskedSelectBackward0"),
    ("masked_select_bcast", lambda L, x, s, d: L.masked_select(x, M(L, d, [True, False, True])), (2, 3), None,
     "MaskedSelectBackward0"),
    ("trace", lambda L, x, s, d: x.trace(), (3, 4), None, "TraceBackward0"),
    ("rot90", lambda L, x, s, d: x.rot90(), (3, 4), None, "Rot90Backward0"),
    ("rot90_2", lambda L, x, s, d: L.rot90(x, 2, [1, 0]), (3, 4), None, "Rot90Backward0"),
    ("rot90_3", lambda L, x, s, d: x.rot90(-1, [0, 2]), (2, 3, 4), None, "Rot90Backward0"),
    ("hstack", lambda L, x, s, d: L.hstack([x, s]), (3, 2), (3, 4), "CatBackward0"),
    ("hstack1", lambda L, x, s, d: L.hstack([x, s]), (3,), (2,), "CatBackward0"),
    ("vstack", lambda L, x, s, d: L.vstack([x, s]), (3,), (2, 3), "CatBackward0"),
    ("dstack", lambda L, x, s, d: L.dstack((x, s)), (3,), (1, 3, 2), "CatBackward0"),
    ("column_stack", lambda L, x, s, d: L.column_stack([x, s]), (3,), (3, 2), "CatBackward0"),
    ("atleast_2d", lambda L, x, s, d: L.atleast_2d(x) * 2, (3,), None, "MulBackward0"),
    ("atleast_3d", lambda L, x, s, d: (lambda a, b: a * b.sum())(*L.atleast_3d(x, s)), (3,), (2, 3),
     "MulBackward0"),
    ("atleast_1d", lambda L, x, s, d: L.atleast_1d(x) * 2, (), None, "MulBackward0"),
    ("broadcast_tensors", lambda L, x, s, d: (lambda a, b: a * b)(*L.broadcast_tensors(x, s)), (3, 1), (4,),
     "MulBackward0"),
    ("diag", lambda L, x, s, d: x.diag(1), (3, 4), None, "DiagonalBackward0_copy"),
    ("diag_neg", lambda L, x, s, d: L.diag(x, -1), (3, 3), None, "DiagonalBackward0_copy"),
    ("diag1d", lambda L, x, s, d: x.diag(-1), (3,), None, "DiagEmbedBackward0"),
    ("diag_embed", lambda L, x, s, d: x.diag_embed(1, 0, 2), (2, 3), None, "DiagEmbedBackward0"),
    ("repeat_interleave", lambda L, x, s, d: x.repeat_interleave(2, 1), (3, 2), None, "ViewBackward0"),
    ("repeat_interleave_flat", lambda L, x, s, d: L.repeat_interleave(x, 3), (2, 2), None, "ViewBackward0"),
    ("repeat_interleave_t", lambda L, x, s, d: x.repeat_interleave(I(L, d, [2, 0, 1]), 0), (3, 2), None,
     "IndexSelectBackward0"),
    ("repeat_interleave_t1", lambda L, x, s, d: x.repeat_interleave(I(L, d, [2]), 0), (3, 2), None,
     "IndexSelectBackward0"),
]


def inplace(method):
    """The in-place form on a non-leaf: x * 1 written in place, so the node is the write's and x gets through it."""
    return lambda L, x, s, d: method(L, x * 1, s, d)


INPLACE = [
    ("scatter_", lambda L, x, s, d: x.scatter_(0, I(L, d, UNIQ), s), (3, 3), (2, 3), "ScatterBackward0"),
    ("scatter_add_", lambda L, x, s, d: x.scatter_add_(1, I(L, d, [[0, 0], [2, 1], [1, 1]]), s), (3, 3), (3, 2),
     "ScatterAddBackward0"),
    ("scatter_reduce_", lambda L, x, s, d: x.scatter_reduce_(0, I(L, d, [[0, 0, 1]]), s, "mean"), (3, 3), (1, 3),
     "ScatterReduceBackward0"),
    ("scatter_reduce_prod_", lambda L, x, s, d: x.scatter_reduce_(0, I(L, d, [[0, 0, 1]]), s, "prod"), (3, 3), (1, 3),
     "ScatterReduceBackward0"),
    ("scatter_reduce_amax_", lambda L, x, s, d: x.scatter_reduce_(1, I(L, d, [[0, 0], [1, 2]]), s, "amax",
                                                                  include_self=False), (2, 3), (2, 2),
     "ScatterReduceBackward0"),
    ("index_copy_", lambda L, x, s, d: x.index_copy_(0, I(L, d, [1]), s), (3, 4), (1, 4), "IndexCopyBackward0"),
    ("index_add_", lambda L, x, s, d: x.index_add_(0, I(L, d, [1, 1]), s, alpha=2), (3, 4), (2, 4),
     "IndexAddBackward0"),
    ("index_fill_", lambda L, x, s, d: x.index_fill_(1, I(L, d, [0]), s), (3, 4), (), "IndexFillBackward1"),
    ("masked_scatter_", lambda L, x, s, d: x.masked_scatter_(M(L, d, MASK), s), (2, 3), (4,),
     "MaskedScatterBackward0"),
]
ALL = CASES + [(n, inplace(f), xs, ss, node) for n, f, xs, ss, node in INPLACE]


def run(L, fn, a, b, dev):
    mk = (lambda v: torch.tensor(v, requires_grad=True)) if L is torch else (
        lambda v: vkt.tensor(v, device=dev, requires_grad=True))
    x = mk(a)
    s = mk(b) if b is not None else None
    return x, s, fn(L, x, s, dev)


def needs_float64(device):
    if device == "vulkan" and not vkt.vulkan.get_device_properties().shader_float64:
        pytest.skip("this Vulkan adapter has no float64 shaders")


@pytest.mark.parametrize("name,fn,xs,ss,node", ALL, ids=[c[0] for c in ALL])
def test_grad_matches_torch(device, name, fn, xs, ss, node):
    needs_float64(device)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(xs)
    b = rng.standard_normal(ss) if ss is not None else None
    tx, ts, ty = run(torch, fn, a, b, device)
    vx, vs, vy = run(vkt, fn, a, b, device)
    assert tuple(vy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(vy.detach().cpu().numpy(), ty.detach().numpy())
    assert vy.grad_fn.name() == node
    assert ty.grad_fn.name() == node
    w = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(w))
    vy.backward(vkt.tensor(w, device=device))
    np.testing.assert_allclose(vx.grad.cpu().numpy(), tx.grad.numpy(), atol=1e-12)
    if ts is not None:
        np.testing.assert_allclose(vs.grad.cpu().numpy(), ts.grad.numpy(), atol=1e-12)


def chain(y):
    """The names of the nodes from y's back to its input's, following each node's first recorded input."""
    names, fn = [], y.grad_fn
    while fn is not None and "AccumulateGrad" not in fn.name():
        names.append(fn.name())
        fn = next((f for f, _ in fn.next_functions if f is not None), None)
    return names


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape, repeats, dim", [((3, 5), 2, None), ((3, 5), 3, 0), ((2, 3, 5), 4, 1), ((3, 5), 1, -1),
                                                 ((7,), 3, None), ((7,), 2, 0), ((), 3, None), ((3, 5), 0, 1),
                                                 ((0, 5), 2, 0)])
def test_repeat_interleave_int_as_torch(device, dtype, shape, repeats, dim):
    """An int repeat is recorded as PyTorch composes it (a view of a contiguous clone of an expanded unsqueeze): the
    same nodes, the same values and gradients."""
    if dtype == "float64":
        needs_float64(device)
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape).astype(dtype)
    tx, vx = torch.tensor(a, requires_grad=True), vkt.tensor(a, device=device, requires_grad=True)
    ty, vy = tx.repeat_interleave(repeats, dim), vx.repeat_interleave(repeats, dim)
    assert chain(vy) == chain(ty) and tuple(vy.shape) == tuple(ty.shape)
    np.testing.assert_array_equal(vy.detach().cpu().numpy(), ty.detach().numpy())
    w = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(w))
    vy.backward(vkt.tensor(w, device=device))
    np.testing.assert_allclose(vx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("call", [lambda L, x: x.repeat_interleave(-1), lambda L, x: x.repeat_interleave(2, 2),
                                  lambda L, x: x.sum().repeat_interleave(2, 0),
                                  lambda L, x: x.sum().repeat_interleave(2, -1)])
def test_repeat_interleave_int_bad_as_torch(device, call):
    tx, vx = torch.ones(2, 3, requires_grad=True), vkt.ones(2, 3, device=device, requires_grad=True)
    for grad in (True, False):
        with torch.set_grad_enabled(grad), pytest.raises(Exception) as want:
            call(torch, tx)
        with vkt.set_grad_enabled(grad), pytest.raises(want.type) as got:
            call(vkt, vx)
        assert str(got.value) == str(want.value)


CHECKED = ["rot90", "hstack", "diag", "diag_embed", "repeat_interleave", "repeat_interleave_t", "scatter",
           "scatter_value", "reduce_mean_noself", "index_add_alpha", "index_fill_tensor",
           "masked_scatter_bcast", "take", "masked_scatter_", "reduce_prod", "reduce_prod_noself", "reduce_prod_3d",
           "reduce_amax", "reduce_amin_noself_1d", "scatter_reduce_prod_"]


@pytest.mark.parametrize("name", CHECKED)
def test_gradcheck(device, name):
    needs_float64(device)
    _, fn, xs, ss, _ = next(c for c in ALL if c[0] == name)
    rng = np.random.default_rng(1)
    inputs = [vkt.tensor(rng.standard_normal(xs), device=device, requires_grad=True)]
    if ss is not None:
        inputs.append(vkt.tensor(rng.standard_normal(ss), device=device, requires_grad=True))
    f = (lambda x, s: fn(vkt, x, s, device)) if ss is not None else (lambda x: fn(vkt, x, None, device))
    assert vkt.autograd.gradcheck(f, tuple(inputs))
    assert vkt.autograd.gradgradcheck(f, tuple(inputs))


_r = np.random.default_rng(2)
# name, x, dim, index, src: values where scatter_reduce's prod, amax and amin are not smooth
SCATTER_POINTS = [
    ("ties_src", [1., 1., 1., 1.], 0, [0, 0, 0, 2, 2, 2], [3., 3., 2., 5., 5., 5.]),
    ("ties_x_src", [3., 1., 5., 0.], 0, [0, 0, 1, 2, 1], [3., 3., 1., 5., 1.]),
    ("ties_min", [-3., 1., 5., 0.], 0, [0, 0, 1, 2, 3], [-3., -3., 1., 5., 0.]),
    ("ties_2d", [[2., 0., 2.], [1., 1., 4.]], 1, [[0, 0, 2], [1, 1, 1]], [[2., 2., 1.], [1., 1., 1.]]),
    ("zero_x", [0., 2., 3., 0.], 0, [0, 0, 1, 2], [1., 2., 3., 4.]),
    ("zero_src", [2., 2., 3., 1.], 0, [0, 0, 1, 2], [0., 2., 3., 4.]),
    ("zeros_src_two", [2., 2., 3., 1.], 0, [0, 0, 1, 2], [0., 0., 3., 4.]),
    ("zeros_x_src", [[0., 1.], [2., 0.]], 0, [[0, 1], [0, 1], [1, 1]], [[0., 3.], [4., 0.], [0., 0.]]),
    ("small_ints_3d", _r.integers(-2, 3, (2, 3, 4)).astype(float), -1, _r.integers(0, 4, (2, 2, 3)),
     _r.integers(-2, 3, (2, 2, 3)).astype(float)),
    ("empty_index", [[1., 2.], [3., 4.]], 1, np.zeros((2, 0), np.int64), np.zeros((2, 0))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("name,x,dim,index,src", SCATTER_POINTS, ids=[c[0] for c in SCATTER_POINTS])
def test_scatter_reduce_grad_at_ties_and_zeros(device, name, x, dim, index, src, reduce, include_self, dtype):
    if dtype == "float64":
        needs_float64(device)
    w = np.random.default_rng(3).standard_normal(np.shape(x)).astype(dtype)

    def grads(L):
        mk = (lambda v: torch.tensor(np.asarray(v, dtype), requires_grad=True)) if L is torch else (
            lambda v: vkt.tensor(np.asarray(v, dtype), device=device, requires_grad=True))
        tx, ts = mk(x), mk(src)
        y = tx.scatter_reduce(dim, I(L, device, np.asarray(index, np.int64)), ts, reduce, include_self=include_self)
        gx, gs = L.autograd.grad(y, (tx, ts), torch.tensor(w) if L is torch else vkt.tensor(w, device=device))
        return [np.asarray(t.detach().cpu() if L is vkt else t.detach()) for t in (y, gx, gs)]

    tol = 1e-6 if dtype == "float32" else 1e-12
    for got, ref in zip(grads(vkt), grads(torch)):
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,x,dim,index,src", SCATTER_POINTS, ids=[c[0] for c in SCATTER_POINTS])
def test_scatter_reduce_prod_second_derivative_as_torch(device, name, x, dim, index, src):
    """Under create_graph, src's gradient is an Error node where a slot took more than one zero (the formula
    gives no second derivative there; vkt's had been wrong): both raise PyTorch's error at the second backward,
    and elsewhere the second derivatives agree."""
    needs_float64(device)
    found = []
    for L in (vkt, torch):
        mk = (lambda v: torch.tensor(np.asarray(v, np.float64), requires_grad=True)) if L is torch else (
            lambda v: vkt.tensor(np.asarray(v, np.float64), device=device, requires_grad=True))
        tx, ts = mk(x), mk(src)
        y = tx.scatter_reduce(dim, I(L, device, np.asarray(index, np.int64)), ts, "prod")
        gx, gs = L.autograd.grad(y.sum(), (tx, ts), create_graph=True)
        try:
            (gx.sum() + (gs * gs).sum()).backward()
        except RuntimeError as e:
            found.append(str(e))
            continue
        found.append([np.asarray(t.grad.detach().cpu() if L is vkt else t.grad.detach()) for t in (tx, ts)])
    if isinstance(found[1], str):
        assert found[0] == found[1]
    else:
        for got, ref in zip(*found):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_scatter_legacy_reduce_refused(device):
    x = vkt.tensor(np.ones((2, 3)), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="reduce"):
        x.scatter(0, vkt.tensor([[0, 1, 0]], device=device), x[:1] * 2, reduce="add")


def test_inplace_on_leaf_refused(device):
    x = vkt.tensor(np.ones((2, 3)), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.index_fill_(0, vkt.tensor([0], device=device), 1.0)


def test_meshgrid_grads_match_torch(device):
    torch = pytest.importorskip("torch")
    for indexing in ("ij", "xy"):
        a, b = (vkt.tensor(v, dtype=vkt.float64, device=device, requires_grad=True) for v in ([1.0, 2.0, 3.0], [4.0, 5.0]))
        ta, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in ([1.0, 2.0, 3.0], [4.0, 5.0]))
        x, y = vkt.meshgrid(a, b, indexing=indexing)
        tx, ty = torch.meshgrid(ta, tb, indexing=indexing)
        (x * y * y).sum().backward()
        (tx * ty * ty).sum().backward()
        np.testing.assert_allclose(a.grad.cpu().numpy(), ta.grad.numpy())
        np.testing.assert_allclose(b.grad.cpu().numpy(), tb.grad.numpy())


@pytest.mark.parametrize("p", [0.3, 0.5, -0.5, 1.0, 1.5, 3.0, float("inf")])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norm_grad_at_zeros(device, p, dtype):
    """A p-norm's gradient at zero entries: 0 where |x|^(p-1) is infinite (p < 1), as torch masks it, not NaN."""
    x = np.array([[0.0, 1.0, -2.0, 0.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, -1.0, 0.5]])
    v = vkt.tensor(x, dtype=getattr(vkt, dtype), device=device, requires_grad=True)
    t = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    v.norm(p, dim=1).sum().backward()
    t.norm(p, dim=1).sum().backward()
    np.testing.assert_allclose(v.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
