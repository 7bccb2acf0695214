# Autograd of the shape and indexing family against torch.autograd: each case runs the same lambda on a vkt
# and a torch float64 input (contiguous, transposed and empty where the op allows), backpropagates the same
# random weights, and compares the gradients and the node names; a few cases also run vkt's gradcheck.
import numpy as np
import pytest
import torch

import vkt


def I(dev, v):
    """An int64 index on dev, in whichever library t belongs to."""
    return (lambda lib: lib.tensor(v) if lib is torch else lib.tensor(v, device=dev))


# name, op(lib, x, dev), shapes, grad_fn name
CASES = [
    ("cat", lambda L, x, d: L.cat([x, x * 2, x[:0]], 0), [(3, 4), (0, 4)], "CatBackward0"),
    ("cat_dim1", lambda L, x, d: L.cat([x, x.flip(1)], -1), [(3, 4)], "CatBackward0"),
    ("stack", lambda L, x, d: L.stack([x, x * 3], 1), [(3, 4), (0, 2)], "StackBackward0"),
    ("split", lambda L, x, d: x.split(2, 1)[1], [(3, 5)], "SplitBackward0"),
    ("split_sizes", lambda L, x, d: x.split([1, 0, 2], 0)[2] * 1, [(3, 4)], "MulBackward0"),
    ("split_all", lambda L, x, d: L.cat([p * (k + 1) for k, p in enumerate(x.split(2))]), [(5, 2)], "CatBackward0"),
    ("chunk", lambda L, x, d: x.chunk(2, 1)[0], [(3, 4)], "SplitBackward0"),
    ("unbind", lambda L, x, d: x.unbind(1)[2], [(3, 4)], "UnbindBackward0"),
    ("narrow", lambda L, x, d: x.narrow(1, 1, 2), [(3, 4)], "SliceBackward0"),
    ("select", lambda L, x, d: x.select(1, -2), [(3, 4), (0, 4)], "SelectBackward0"),
    ("select_function", lambda L, x, d: L.select(x, 0, 1), [(3, 4)], "SelectBackward0"),
    ("unfold_overlapping", lambda L, x, d: x.unfold(1, 3, 1), [(3, 5), (0, 5)], "UnfoldBackward0"),
    ("unfold_strided", lambda L, x, d: x.unfold(0, 2, 2) * x.unfold(0, 2, 2), [(5, 3)], "MulBackward0"),
    ("unfold_empty_windows", lambda L, x, d: x.unfold(-1, 0, 2), [(3, 4)], "UnfoldBackward0"),
    ("unfold_of_a_view", lambda L, x, d: x.t()[1:].unfold(0, 2, 1), [(3, 4)], "UnfoldBackward0"),
    ("movedim", lambda L, x, d: x.movedim(0, 2), [(2, 3, 4)], "PermuteBackward0"),
    ("moveaxis", lambda L, x, d: L.moveaxis(x, [0, 1], [2, 0]), [(2, 3, 4)], "PermuteBackward0"),
    ("swapaxes", lambda L, x, d: x.swapaxes(0, -1), [(2, 3, 4)], "TransposeBackward0"),
    ("unflatten", lambda L, x, d: x.unflatten(1, (2, 2)), [(3, 4)], "ViewBackward0"),
    # reshape's node, PyTorch's: a view of a contiguous tensor, an alias of one a view can take, else a view of a copy
    ("reshape_view", lambda L, x, d: x.reshape(6, 4), [(2, 3, 4)], "ViewBackward0"),
    ("reshape_alias", lambda L, x, d: x.transpose(0, 1).reshape(3, 2, 4), [(2, 3, 4)], "ReshapeAliasBackward0"),
    ("reshape_alias_step", lambda L, x, d: x[:, :, ::2].reshape(2, 3, 2), [(2, 3, 4)], "ReshapeAliasBackward0"),
    ("reshape_copy", lambda L, x, d: x.transpose(1, 2).reshape(-1), [(2, 3, 4)], "UnsafeViewBackward0"),
    ("flatten_copy", lambda L, x, d: x.transpose(1, 2).flatten(1), [(2, 3, 4)], "UnsafeViewBackward0"),
    ("ravel_copy", lambda L, x, d: x.transpose(1, 2).ravel(), [(2, 3, 4)], "ViewBackward0"),
    ("diagonal", lambda L, x, d: x.diagonal(1), [(3, 4)], "DiagonalBackward0"),
    ("diagonal3", lambda L, x, d: x.diagonal(0, 0, 2), [(3, 2, 4)], "DiagonalBackward0"),
    ("flip", lambda L, x, d: x.flip(0, -1), [(3, 4), (0, 4)], "FlipBackward0"),
    ("fliplr", lambda L, x, d: L.fliplr(x), [(3, 4)], "FlipBackward0"),
    ("roll", lambda L, x, d: x.roll((1, -2), (0, 1)), [(3, 4)], "RollBackward0"),
    ("roll_flat", lambda L, x, d: x.roll(5), [(3, 4)], "RollBackward0"),
    ("tril", lambda L, x, d: x.tril(-1), [(3, 4), (2, 3, 3)], "TrilBackward0"),
    ("triu", lambda L, x, d: L.triu(x, 1), [(3, 4)], "TriuBackward0"),
    ("repeat", lambda L, x, d: x.repeat(2, 1, 3), [(3, 4), (0, 4)], "RepeatBackward0"),
    ("tile", lambda L, x, d: x.tile((2,)), [(3, 4)], "RepeatBackward0"),
    ("gather", lambda L, x, d: x.gather(1, I(d, [[0, 0], [3, 1], [2, 2]])(L)), [(3, 4)], "GatherBackward0"),
    ("index_select", lambda L, x, d: x.index_select(1, I(d, [3, 0, 3])(L)), [(3, 4)], "IndexSelectBackward0"),
    ("index_select0", lambda L, x, d: L.index_select(x, 0, I(d, [2, 2])(L)), [(3, 4)], "IndexSelectBackward0"),
    ("take_along_dim", lambda L, x, d: L.take_along_dim(x, I(d, [[1], [0], [1]])(L), 0), [(3, 4)], "GatherBackward0"),
    # torch's dim=None path views a non-contiguous input (an error there): it gets the input flattened
    ("take_along_flat", lambda L, x, d: (x.reshape(-1) if L is torch else x).take_along_dim(I(d, [5, 0, 5])(L)),
     [(3, 4)], "GatherBackward0"),
    ("masked_fill", lambda L, x, d: x.masked_fill(x > 0, 0.5), [(3, 4), (0, 4)], "MaskedFillBackward0"),
    ("masked_fill_bcast", lambda L, x, d: x.masked_fill(x[:1] > 0, -1.0), [(3, 4)], "MaskedFillBackward0"),
    ("index", lambda L, x, d: x[I(d, [2, 0, 2])(L)], [(3, 4)], "IndexBackward0"),
    ("index_mask", lambda L, x, d: x[x > 0], [(3, 4), (0, 4)], "IndexBackward0"),
    ("index_row_mask", lambda L, x, d: x[x[:, 0] > 0], [(3, 4)], "IndexBackward0"),
    ("index_pair", lambda L, x, d: x[I(d, [0, 2, 2])(L), I(d, [1, 1, 3])(L)], [(3, 4)], "IndexBackward0"),
    ("index_mixed", lambda L, x, d: x[1:, [0, 3, 0]], [(3, 4)], "IndexBackward0"),
    ("index_list", lambda L, x, d: x[:, [[0, 1], [1, 1]]], [(3, 4)], "IndexBackward0"),
    # windows that share elements (im2col's view): each element's gradient sums over its windows
    ("as_strided_overlap", lambda L, x, d: x.as_strided((3, 3), (1, 1)), [(3, 4)], "AsStridedBackward0"),
    # views of an expanded tensor, whose elements share storage: the gradient goes back through the expand
    ("expand_slice", lambda L, x, d: x.expand(3, 4)[1:], [(1, 4)], "SliceBackward0"),
    ("expand_slice_step", lambda L, x, d: x.expand(2, 3, 4)[:, ::2, 1:], [(3, 1), (1, 4)], "SliceBackward0"),
    ("expand_select", lambda L, x, d: x.expand(3, 4)[:, -2], [(1, 4), (3, 1)], "SelectBackward0"),
    ("expand_select_method", lambda L, x, d: x.expand(3, 4).select(0, 1), [(1, 4)], "SelectBackward0"),
    ("expand_narrow", lambda L, x, d: L.narrow(x.expand(3, 4), 1, 1, 2), [(3, 1)], "SliceBackward0"),
    ("expand_diagonal", lambda L, x, d: x.expand(4, 4).diagonal(), [(1, 4), (4, 1)], "DiagonalBackward0"),
    ("expand_diagonal_offset", lambda L, x, d: x.expand(3, 4).diagonal(-1), [(1, 4)], "DiagonalBackward0"),
    ("expand_diagonal_sum", lambda L, x, d: x.expand(4, 4).diagonal().sum(), [(1, 4)], "SumBackward0"),
    ("expand_unfold", lambda L, x, d: x.expand(3, 4).unfold(1, 2, 1), [(1, 4)], "UnfoldBackward0"),
    ("expand_view_of_view", lambda L, x, d: x.expand(3, 4)[1:][0], [(1, 4)], "SelectBackward0"),
    ("expand_as_strided", lambda L, x, d: x.expand(3, 4).as_strided((2, 2), (0, 1)), [(3, 1)], "AsStridedBackward0"),
    ("expand_index_mixed", lambda L, x, d: x.expand(3, 4)[1:, [0, 2]], [(1, 4)], "IndexBackward0"),
    ("broadcast_to_slice", lambda L, x, d: L.broadcast_to(x, (3, 4))[:2], [(4,)], "SliceBackward0"),
]


def run(lib, fn, a, dev, transpose):
    if lib is torch:
        x = torch.tensor(a, requires_grad=True)
    else:
        x = vkt.tensor(a, device=dev, requires_grad=True)
    y = fn(lib, x.mT if transpose else x, dev)
    return x, y


@pytest.mark.parametrize("transpose", [False, True], ids=["contig", "transposed"])
@pytest.mark.parametrize("name,fn,shapes,node", CASES, ids=[c[0] for c in CASES])
def test_grad_matches_torch(device, name, fn, shapes, node, transpose):
    rng = np.random.default_rng(0)
    for shape in shapes:
        if transpose and (len(shape) != 2 or 0 in shape):
            continue
        a = rng.standard_normal(shape[::-1] if transpose else shape)
        tx, ty = run(torch, fn, a, device, transpose)
        vx, vy = run(vkt, fn, a, device, transpose)
        assert tuple(vy.shape) == tuple(ty.shape)
        np.testing.assert_allclose(vy.detach().cpu().numpy(), ty.detach().numpy())
        assert vy.grad_fn.name() == node
        w = rng.standard_normal(tuple(ty.shape))
        (ty * torch.tensor(w)).sum().backward()
        (vy * vkt.tensor(w, device=device)).sum().backward()
        np.testing.assert_allclose(vx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


# The gradient an expanded tensor itself takes (retain_grad) from a view of it: PyTorch's, at the positions the view
# took; as_strided's (storage-based, as PyTorch's) shares each storage element's among the positions that share it.
EXPANDED = [
    ("slice", lambda L, e: e[1:, ::2]),
    ("select", lambda L, e: e[:, 2]),
    ("narrow", lambda L, e: e.narrow(0, 1, 2)),
    ("diagonal", lambda L, e: e.diagonal(1)),
    ("trace", lambda L, e: L.trace(e).reshape(1)),
    ("unfold", lambda L, e: e.unfold(1, 2, 1)),
    ("as_strided", lambda L, e: e.as_strided((2, 2), (0, 1), 1)),
    ("second_view", lambda L, e: e[1:][:, 1:3]),
]


@pytest.mark.parametrize("name,view", EXPANDED, ids=[c[0] for c in EXPANDED])
def test_expanded_tensor_gradient(device, name, view):
    a = np.arange(1.0, 5.0).reshape(1, 4)
    res = []
    for L in (torch, vkt):
        x = torch.tensor(a, requires_grad=True) if L is torch else vkt.tensor(a, device=device, requires_grad=True)
        e = (x * 1).expand(3, 4)
        e.retain_grad()
        y = view(L, e)
        w = np.arange(2.0, 2.0 + y.numel()).reshape(tuple(y.shape))
        (g,) = L.autograd.grad((y * y * (torch.tensor(w) if L is torch else vkt.tensor(w, device=device))).sum(), x,
                               create_graph=True)
        g.sum().backward()
        res.append((to_np(e.grad), to_np(g), to_np(x.grad)))
    for got, want in zip(res[1], res[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# gradcheck on tiny inputs: the vkt functions only (finite differences through the forward).
GRADCHECK = [
    ("cat", lambda x: vkt.cat([x, x.sin()], 1)),
    ("split", lambda x: x.split([1, 2], 1)[1] * x.split([1, 2], 1)[0]),
    ("repeat", lambda x: x.repeat(2, 2)),
    ("roll_tril", lambda x: x.roll(1, 0).tril()),
    ("index", lambda x: x[[1, 1, 0]] * 2),
    ("masked_fill", lambda x: x.masked_fill(vkt.tensor([[True, False, True]], device=x.device), 3.0)),
]


@pytest.mark.parametrize("name,fn", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_gradcheck(device, name, fn):
    x = vkt.tensor(np.random.default_rng(1).standard_normal((2, 3)), device=device, requires_grad=True)
    assert vkt.autograd.gradcheck(fn, (x,))


def test_double_backward_through_index(device):
    a = np.random.default_rng(2).standard_normal((3, 4))
    res = []
    for lib, kw in ((torch, {}), (vkt, {"device": device})):
        x = lib.tensor(a, requires_grad=True, **kw)
        y = (x[[0, 2, 2]] ** 3).sum() + (lib.cat([x, x]) ** 2).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (g.sin().sum()).backward()
        res.append(to_np(x.grad))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-10)


def to_np(t):
    return t.detach().cpu().numpy() if isinstance(t, vkt.Tensor) else t.detach().numpy()


# ---- writes: x[key] = value, index_put, masked_fill_, copy_ on non-leaves ----

def _write(lib, a, v, dev, key, op):
    kw = {} if lib is torch else {"device": dev}
    x = lib.tensor(a, requires_grad=True, **kw)
    val = lib.tensor(v, requires_grad=True, **kw)
    y = x * 1
    op(lib, y, val, key)
    return x, val, y


WRITES = [
    ("setitem_index", lambda L, d: I(d, [2, 0])(L), (2, 4), "IndexPutBackward0"),
    ("setitem_mask", lambda L, d: None, (), "IndexPutBackward0"),
    ("setitem_slice", lambda L, d: (slice(1, 3), slice(None, None, 2)), (2, 2), "CopySlices"),
    ("setitem_row", lambda L, d: 1, (4,), "CopySlices"),
    ("setitem_bcast", lambda L, d: (slice(None), 0), (1,), "CopySlices"),
    ("setitem_mixed", lambda L, d: (0, [1, 3]), (2,), "CopySlices"),
    ("setitem_lead1", lambda L, d: (slice(0, 2),), (1, 2, 4), "CopySlices"),
]


@pytest.mark.parametrize("name,key,vshape,node", WRITES, ids=[w[0] for w in WRITES])
def test_setitem(device, name, key, vshape, node):
    rng = np.random.default_rng(3)
    a, v, w = rng.standard_normal((3, 4)), rng.standard_normal(vshape), rng.standard_normal((3, 4))
    grads = []
    for lib in (torch, vkt):
        k = key(lib, device)

        def op(L, y, val, k=k):
            y[y > 0.3 if k is None else k] = val

        x, val, y = _write(lib, a, v, device, k, op)
        if lib is vkt:
            assert y.grad_fn.name() == node
        kw = {} if lib is torch else {"device": device}
        (y * lib.tensor(w, **kw)).sum().backward()
        grads.append((to_np(y), to_np(x.grad), to_np(val.grad)))
    for t, g in zip(*grads):
        np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(device, accumulate):
    rng = np.random.default_rng(4)
    a, v, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    out = []
    for lib, kw in ((torch, {}), (vkt, {"device": device})):
        x, val = lib.tensor(a, requires_grad=True, **kw), lib.tensor(v, requires_grad=True, **kw)
        idx = (lib.tensor([0, 2, 0], **kw),)
        y = x.index_put(idx, val[:1], accumulate=accumulate)
        z = (x * 1).index_put_(idx, val[1], accumulate=accumulate)
        ((y + z) * lib.tensor(w, **kw)).sum().backward()
        out.append((to_np(y), to_np(z), to_np(x.grad), to_np(val.grad)))
    for t, g in zip(*out):
        np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)


def test_inplace_writes_on_non_leaves(device):
    rng = np.random.default_rng(5)
    a, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    out = []
    for lib, kw in ((torch, {}), (vkt, {"device": device})):
        x = lib.tensor(a, requires_grad=True, **kw)
        s = lib.tensor(2.0, requires_grad=True, **kw)
        y = x * 1
        y.masked_fill_(y > 0, s)
        z = x * 1
        z.copy_(x.flip(0) * 3)
        u = x * 1
        u.fill_(s)
        u2 = x * 1
        u2.zero_()
        ((y + z + u + u2) * lib.tensor(w, **kw)).sum().backward()
        out.append((to_np(x.grad), to_np(s.grad), y.grad_fn.name()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-12)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12)
    assert out[1][2] == "MaskedFillBackward1"


def test_masked_fill_tensor_value(device):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 4))
    out = []
    for lib, kw in ((torch, {}), (vkt, {"device": device})):
        x = lib.tensor(a, requires_grad=True, **kw)
        s = lib.tensor(0.5, requires_grad=True, **kw)
        y = x.masked_fill(x < 0, s)
        assert y.grad_fn.name() == "MaskedFillBackward1"
        (y * y).sum().backward()
        out.append((to_np(x.grad), to_np(s.grad)))
    for t, g in zip(*out):
        np.testing.assert_allclose(g, t, rtol=1e-12)


LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
INPLACE = [
    ("masked_fill_", lambda x, d: x.masked_fill_(x > 0, 1.0)),
    ("index_fill_", lambda x, d: x.index_fill_(0, vkt.tensor([0], device=d), 1.0)),
    ("scatter_", lambda x, d: x.scatter_(0, vkt.tensor([[0]], device=d), 1.0)),
    ("scatter_add_", lambda x, d: x.scatter_add_(0, vkt.tensor([[0]], device=d), x.detach())),
    ("index_add_", lambda x, d: x.index_add_(0, vkt.tensor([0], device=d), x.detach()[:1])),
    ("index_copy_", lambda x, d: x.index_copy_(0, vkt.tensor([0], device=d), x.detach()[:1])),
    ("index_put_", lambda x, d: x.index_put_((vkt.tensor([0], device=d),), vkt.tensor(1.0, dtype=x.dtype, device=d))),
    ("masked_scatter_", lambda x, d: x.masked_scatter_(x > 0, x.detach())),
    ("setitem", lambda x, d: x.__setitem__(0, 1.0)),
    ("copy_", lambda x, d: x.copy_(x.detach())),
    ("fill_", lambda x, d: x.fill_(1.0)),
    ("zero_", lambda x, d: x.zero_()),
]


@pytest.mark.parametrize("name,op", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_on_leaf_raises(device, name, op):
    x = vkt.tensor(np.ones((2, 3)), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        op(x, device)
    with vkt.no_grad():
        op(x, device)  # allowed without grad mode


@pytest.mark.parametrize("name,op", INPLACE[1:6] + INPLACE[7:8], ids=[c[0] for c in INPLACE[1:6] + INPLACE[7:8]])
def test_inplace_write_on_non_leaf_records(device, name, op):
    # these had no backward formula (and refused); they now have one (tests/test_autograd_more.py)
    x = vkt.tensor(np.ones((2, 3)), device=device, requires_grad=True)
    y = x * 1
    op(y, device)
    assert y.grad_fn is not None
    y.sum().backward()
    assert x.grad.shape == x.shape


def test_index_backward_stays_on_device(device):
    x = vkt.tensor(np.arange(12.0).reshape(3, 4), device=device, requires_grad=True)
    y = x[x > 4]
    y.sum().backward()
    assert x.grad.device == x.device
    np.testing.assert_array_equal(x.grad.cpu().numpy(), (np.arange(12.0).reshape(3, 4) > 4).astype(float))
