# The in-place view ops (t_ transpose_ swapdims_ swapaxes_ squeeze_ unsqueeze_ as_strided_) and resize_, against torch
# 2.13 on the same inputs, on the cpu and vulkan devices: values, shapes, strides, identity, versions, grad_fn names,
# gradients (through views and bases, of second order), PyTorch's refusals on leaves and views, and its errors.
import numpy as np
import pytest

import vkt
from conftest import raised, to_numpy

torch = pytest.importorskip("torch")


def tensor(L, a, device, requires_grad=False):
    if L is torch:
        return torch.tensor(a, requires_grad=requires_grad)
    return vkt.tensor(a, device=device, requires_grad=requires_grad)


def numbered(shape, start=1):
    """Distinct small integers, exact in float32 through the products below."""
    return np.arange(start, start + int(np.prod(shape)), dtype=np.float32).reshape(shape)


def state(t):
    """What an in-place view op changes: shape, strides, offset and values. The strides of dims of size 1 are left
    out: no index reaches them, and vkt's elementwise results (y = x * 2) lay those out otherwise than PyTorch's."""
    strides = tuple(s if n != 1 else None for n, s in zip(t.shape, t.stride()))
    return tuple(t.shape), strides, t.storage_offset(), to_numpy(t.detach()).tolist()


def numpy_of(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else to_numpy(t.detach())


# name, the in-place op on y, the shape of the leaf y is made from
OPS = [
    ("t_", lambda y: y.t_(), (2, 3)),
    ("t_vector", lambda y: y.t_(), (3,)),
    ("t_scalar", lambda y: y.t_(), ()),
    ("transpose_", lambda y: y.transpose_(0, 2), (2, 3, 4)),
    ("transpose_negative", lambda y: y.transpose_(-1, 0), (2, 3)),
    ("transpose_same_dim", lambda y: y.transpose_(1, 1), (2, 3)),
    ("transpose_keywords", lambda y: y.transpose_(dim1=0, dim0=1), (2, 3)),
    ("swapdims_", lambda y: y.swapdims_(0, 1), (2, 3, 4)),
    ("swapaxes_", lambda y: y.swapaxes_(axis0=2, axis1=1), (2, 3, 4)),
    ("squeeze_", lambda y: y.squeeze_(), (1, 3, 1, 2)),
    ("squeeze_dim", lambda y: y.squeeze_(2), (1, 3, 1, 2)),
    ("squeeze_dim_not_one", lambda y: y.squeeze_(1), (1, 3, 1, 2)),
    ("squeeze_dims", lambda y: y.squeeze_((0, -2)), (1, 3, 1, 2)),
    ("squeeze_dims_list", lambda y: y.squeeze_([0]), (1, 3, 1, 2)),
    ("squeeze_varargs", lambda y: y.squeeze_(0, 2), (1, 3, 1, 2)),
    ("squeeze_keyword", lambda y: y.squeeze_(dim=0), (1, 3)),
    ("unsqueeze_", lambda y: y.unsqueeze_(1), (2, 3)),
    ("unsqueeze_last", lambda y: y.unsqueeze_(-1), (2, 3)),
    ("unsqueeze_scalar", lambda y: y.unsqueeze_(0), ()),
    ("as_strided_", lambda y: y.as_strided_((2, 2), (1, 2)), (2, 3)),
    ("as_strided_offset", lambda y: y.as_strided_((2,), (3,), 1), (2, 3)),
    ("as_strided_overlapping", lambda y: y.as_strided_((3, 2), (1, 1)), (2, 3)),
    ("as_strided_keywords", lambda y: y.as_strided_(size=(3,), stride=(2,), storage_offset=0), (2, 3)),
]

# how y comes from the leaf x: a non-leaf, a view of one, a strided view of one (x twice as long in its last dim)
SOURCES = {
    "nonleaf": (lambda shape: shape, lambda x: x * 2),
    "view": (lambda shape: shape, lambda x: (x * 2).view(tuple(x.shape))),
    "strided": (lambda shape: shape[:-1] + (2 * shape[-1],), lambda x: (x * 2)[..., ::2]),
}


def run_op(L, device, op, shape, source):
    leaf_shape, make_y = SOURCES[source]
    x = tensor(L, numbered(leaf_shape(shape)), device, requires_grad=True)
    y = make_y(x)
    version = y._version
    r = op(y)
    return x, y, r, y._version - version


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("name,op,shape", OPS, ids=[c[0] for c in OPS])
def test_inplace_view_as_torch(device, name, op, shape, source):
    if source == "strided" and not shape:
        pytest.skip("a 0-d tensor has no dim to stride")
    tx, ty, tr, tbump = run_op(torch, device, op, shape, source)
    vx, vy, vr, vbump = run_op(vkt, device, op, shape, source)
    assert tr is ty and vr is vy
    assert state(vy) == state(ty)
    assert vbump == tbump == 1
    assert vy.grad_fn.name() == ty.grad_fn.name()
    assert vy._is_view() == ty._is_view() and not vy.is_leaf
    w = numbered(tuple(ty.shape), start=3)
    (ty * torch.tensor(w)).sum().backward()
    (vy * vkt.tensor(w, device=device)).sum().backward()
    np.testing.assert_array_equal(to_numpy(vx.grad), tx.grad.numpy())


# tensors an in-place op that records must not change (PyTorch's refusals), each made by (L, device)
def _leaf(L, d):
    return tensor(L, numbered((2, 3)), d, requires_grad=True)


def _no_grad_view(L, d):
    y = _leaf(L, d) * 2
    with L.no_grad():
        return y[:, 1:]


REFUSED = [
    ("leaf", _leaf),
    ("view_of_leaf", lambda L, d: _leaf(L, d)[:, 1:]),
    ("split_output", lambda L, d: (_leaf(L, d) * 2).split(1)[0]),
    ("no_grad_view", _no_grad_view),
]
REFUSED_OPS = [
    ("t_", lambda y: y.t_()),
    ("transpose_", lambda y: y.transpose_(0, 1)),
    ("squeeze_", lambda y: y.squeeze_(0)),
    ("unsqueeze_", lambda y: y.unsqueeze_(0)),
    ("as_strided_", lambda y: y.as_strided_((2,), (1,))),
]


@pytest.mark.parametrize("op_name,op", REFUSED_OPS, ids=[c[0] for c in REFUSED_OPS])
@pytest.mark.parametrize("name,make", REFUSED, ids=[c[0] for c in REFUSED])
def test_refusals_as_torch(device, name, make, op_name, op):
    ty, vy = make(torch, device), make(vkt, device)
    before = state(vy), vy._version
    got, want = raised(lambda: op(vy)), raised(lambda: op(ty))
    assert got == want and want[0] == "RuntimeError"
    assert (state(vy), vy._version) == before == (state(ty), ty._version)


def test_inference_tensor_refused_outside_inference_mode(device):
    """PyTorch changes the shape before it raises; vkt raises first and leaves the tensor as it was."""
    with torch.inference_mode():
        t = torch.zeros(2, 3)
    with vkt.inference_mode():
        v = vkt.zeros(2, 3, device=device)
    assert raised(lambda: v.t_()) == raised(lambda: t.t_())
    assert tuple(v.shape) == (2, 3)
    with vkt.inference_mode():
        assert v.t_() is v and tuple(v.shape) == (3, 2)


@pytest.mark.parametrize("name,op,shape", OPS[::3], ids=[c[0] for c in OPS[::3]])
def test_leaf_under_no_grad(device, name, op, shape):
    """Allowed, as any in-place op there: the leaf keeps requires_grad and takes its gradient in its new shape."""
    res = []
    for L in (torch, vkt):
        x = tensor(L, numbered(shape), device, requires_grad=True)
        with L.no_grad():
            assert op(x) is x
        assert x.is_leaf and x.requires_grad and x.grad_fn is None and x._version == 1
        w = numbered(tuple(x.shape), start=2)
        (x * tensor(L, w, device)).sum().backward()
        res.append((state(x), tuple(x.grad.shape), numpy_of(x.grad).tolist()))
    assert res[0] == res[1]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_plain_tensors(device, dtype):
    res = []
    for L in (torch, vkt):
        y = tensor(L, numbered((1, 2, 3)).astype(dtype), device)
        views = [y.squeeze_(0), y.t_(), y.unsqueeze_(0), y.transpose_(0, 2), y.as_strided_((4,), (1,), 1)]
        assert all(v is y for v in views)
        res.append((state(y), y._version, y.grad_fn, y.requires_grad))
    assert res[0] == res[1]


# ---- through views and bases: which node a tensor's history comes from after the op, and its gradients ----

def _view_then_base_write(L, x):
    y = x * 2
    z = y[:, :2]
    z.t_()
    y.mul_(3)
    return y, z


def _view_then_view_write(L, x):
    y = x * 2
    z = y[:, :2]
    z.t_()
    z.mul_(3)
    return y, z


def _base_then_view_read(L, x):
    y = x * 2
    z = y[:1]
    y.t_()
    return y, z


def _view_of_plain_base(L, x):
    buf = L.zeros(2, 3, device=x.device) if L is vkt else torch.zeros(2, 3)
    z = buf[:, :2]
    buf.t_()
    z.copy_(x[:, :2] * 2)
    return buf, z


def _squeezed_view(L, x):
    y = (x * 2).unsqueeze(0)
    z = y[0, 1:]
    z.unsqueeze_(-1)
    return y, z


CHAINS = [
    ("view_then_base_write", _view_then_base_write),
    ("view_then_view_write", _view_then_view_write),
    ("base_then_view_read", _base_then_view_read),
    ("view_of_plain_base", _view_of_plain_base),
    ("squeezed_view", _squeezed_view),
]


@pytest.mark.parametrize("name,chain", CHAINS, ids=[c[0] for c in CHAINS])
def test_views_and_bases_as_torch(device, name, chain):
    res = []
    for L in (torch, vkt):
        x = tensor(L, numbered((2, 3)), device, requires_grad=True)
        y, z = chain(L, x)
        names = [type(t.grad_fn).__name__ if L is torch else t.grad_fn.name() for t in (y, z)]
        out = (y * tensor(L, numbered(tuple(y.shape), 5), device)).sum()
        out = out + (z * tensor(L, numbered(tuple(z.shape), 7), device)).sum()
        out.backward()
        res.append((names, state(y), state(z), z._base is y, z._version, numpy_of(x.grad).tolist()))
    assert res[1] == res[0]


@pytest.mark.parametrize("op", [lambda y: y.t_(), lambda y: y.unsqueeze_(0), lambda y: y.squeeze_()],
                         ids=["t_", "unsqueeze_", "squeeze_"])
def test_saved_tensor_changed_as_torch(device, op):
    """A tensor a node saved, reshaped in place since: PyTorch's error, naming the new shape and node."""
    errors = []
    for L in (torch, vkt):
        y = tensor(L, numbered((2, 3)), device, requires_grad=True) * 2
        s = y.sin()
        op(y)
        errors.append(raised(lambda: s.sum().backward()))
    assert errors[1] == errors[0] and errors[0][0] == "RuntimeError"


@pytest.mark.parametrize("op", [lambda y: y.squeeze_(1).t_(), lambda y: y.squeeze_(1).unsqueeze_(0)],
                         ids=["t_", "unsqueeze_"])
def test_second_order_as_torch(device, op):
    res = []
    for L in (torch, vkt):
        x = tensor(L, numbered((2, 1, 3)) / 4, device, requires_grad=True)
        y = op(x * x)
        w = tensor(L, numbered(tuple(y.shape), 2), device)
        (g,) = L.autograd.grad((y ** 3 * w).sum(), x, create_graph=True)
        (g * tensor(L, numbered((2, 1, 3)), device)).sum().backward()
        res.append((g.grad_fn is not None, numpy_of(g), numpy_of(x.grad)))
    assert res[0][0] and res[1][0]
    for a, b in zip(res[1][1:], res[0][1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5)


# bad arguments: the error (type, and message but for argument parsing), the tensor as it was (where PyTorch's is:
# its as_strided_ of a negative size raises after giving the tensor that size; vkt's leaves it whole)
ERRORS = [
    ("t_3d", (2, 3, 4), lambda y: y.t_()),
    ("transpose_dim", (2, 3), lambda y: y.transpose_(0, 2)),
    ("transpose_negative_dim", (2, 3), lambda y: y.transpose_(-3, 0)),
    ("transpose_scalar", (), lambda y: y.transpose_(0, 1)),
    ("swapdims_dim", (2, 3), lambda y: y.swapdims_(2, 0)),
    ("swapaxes_dim", (2, 3), lambda y: y.swapaxes_(0, -3)),
    ("squeeze_dim", (2, 3), lambda y: y.squeeze_(2)),
    ("squeeze_dims", (1, 3), lambda y: y.squeeze_((0, 5))),
    ("squeeze_repeated", (1, 1), lambda y: y.squeeze_((0, -2))),
    ("unsqueeze_dim", (2, 3), lambda y: y.unsqueeze_(3)),
    ("unsqueeze_negative_dim", (2, 3), lambda y: y.unsqueeze_(-4)),
    ("as_strided_lengths", (2, 3), lambda y: y.as_strided_((2, 2), (1,))),
    ("as_strided_out_of_bounds", (2, 3), lambda y: y.as_strided_((2, 4), (1, 2))),
    ("as_strided_negative_stride", (2, 3), lambda y: y.as_strided_((2, 2), (1, -2))),
    ("as_strided_negative_size", (2, 3), lambda y: y.as_strided_((2, -2), (1, 2))),
    ("as_strided_negative_offset", (2, 3), lambda y: y.as_strided_((2, 2), (1, 2), -1)),
    ("as_strided_offset_out_of_bounds", (2, 3), lambda y: y.as_strided_((2, 2), (1, 2), 3)),
    ("as_strided_out_of_place_negative_size", (2, 3), lambda y: y.as_strided((2, -2), (1, 2))),
    ("as_strided_out_of_place_negative_offset", (2, 3), lambda y: y.as_strided((2, 2), (1, 2), -1)),
    ("t_argument", (2, 3), lambda y: y.t_(0)),
    ("transpose_missing_dim", (2, 3), lambda y: y.transpose_(0)),
    ("squeeze_float", (2, 3), lambda y: y.squeeze_(1.5)),
    ("unsqueeze_missing_dim", (2, 3), lambda y: y.unsqueeze_()),
]


@pytest.mark.parametrize("name,shape,op", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(device, name, shape, op):
    ty = tensor(torch, numbered(shape), device, requires_grad=True) * 1
    vy = tensor(vkt, numbered(shape), device, requires_grad=True) * 1
    want, got = raised(lambda: op(ty)), raised(lambda: op(vy))
    assert got[0] == want[0] and want[0] is not None
    if want[0] != "TypeError":  # the argument parsers word theirs otherwise
        assert got == want
    if name != "as_strided_negative_size":
        assert (state(vy), vy._version, vy.grad_fn.name()) == (state(ty), ty._version, ty.grad_fn.name())
    assert tuple(vy.shape) == shape and vy._version == 0


def test_out_of_place_names_as_torch():
    res = []
    for L in (torch, vkt):
        y = tensor(L, numbered((1, 3, 1)), "cpu", requires_grad=True) * 2
        views = [y.squeeze(), y.squeeze(0), y.squeeze((0, 2)), y.squeeze(0, 2), y.unsqueeze(1), y[0].t()]
        res.append([v.grad_fn.name() for v in views])
    assert res[1] == res[0]


# ---- resize_ and resize_as_: a new shape over the same storage, grown where too small ----

# name, the resize on y (with L its library), y's shape: y a plain tensor of distinct values
RESIZES = [
    ("same_numel", lambda L, y: y.resize_(3, 2), (2, 3)),
    ("shrink", lambda L, y: y.resize_(4), (2, 3)),
    ("sequence", lambda L, y: y.resize_((1, 5)), (2, 3)),
    ("same_shape", lambda L, y: y.resize_(2, 3), (2, 3)),
    ("empty", lambda L, y: y.resize_(0), (2, 3)),
    ("scalar", lambda L, y: y.resize_(()), (2, 3)),
    ("transposed_same_shape", lambda L, y: y.t().resize_(3, 2), (2, 3)),
    ("transposed_restrided", lambda L, y: y.t().resize_(3, 2, memory_format=L.contiguous_format), (2, 3)),
    ("channels_last", lambda L, y: y.resize_(1, 2, 3, 1, memory_format=L.channels_last), (2, 3)),
    ("offset", lambda L, y: y[1].resize_(2), (2, 3)),
    ("as_template", lambda L, y: y.resize_as_(L.zeros(3, 1)), (2, 3)),
    ("as_transposed_template", lambda L, y: y.resize_as_(L.zeros(3, 2).t()), (2, 3)),
    ("grow", lambda L, y: y.resize_(3, 4), (2, 3)),
    ("grow_from_offset", lambda L, y: y.clone()[2:].resize_(2, 4), (6,)),  # the slice alone holds the clone
]


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("name,op,shape", RESIZES, ids=[c[0] for c in RESIZES])
def test_resize_as_torch(device, name, op, shape, dtype):
    res = []
    for L in (torch, vkt):
        y = tensor(L, numbered(shape).astype(dtype), device)
        r = op(L, y)
        kept = min(6 - r.storage_offset(), r.numel())  # the elements past the old storage are not initialised
        values = r.detach().reshape(-1)[:kept] if r.is_contiguous() else r.detach()
        res.append((tuple(r.shape), r.stride(), r.storage_offset(), r._version,
                    r.dtype is L.int64, numpy_of(values).tolist(), r.requires_grad))
    assert res[1] == res[0]


RESIZE_ERRORS = [
    ("requires_grad", lambda L, d: tensor(L, numbered((2, 3)), d, requires_grad=True).resize_(3)),
    ("non_leaf", lambda L, d: (tensor(L, numbered((2, 3)), d, requires_grad=True) * 2).resize_(6)),
    ("view_of_requires_grad", lambda L, d: (tensor(L, numbered((2, 3)), d, requires_grad=True) * 2)[0].resize_(2)),
    ("as_requires_grad", lambda L, d: tensor(L, numbered(3), d, requires_grad=True).resize_as_(tensor(L, [1.0], d))),
    ("negative", lambda L, d: tensor(L, numbered(3), d).resize_(2, -1)),
    ("preserve_format", lambda L, d: tensor(L, numbered(3), d).resize_(3, memory_format=L.preserve_format)),
    ("channels_last_rank", lambda L, d: tensor(L, numbered(3), d).resize_(3, memory_format=L.channels_last)),
]


@pytest.mark.parametrize("name,call", RESIZE_ERRORS, ids=[c[0] for c in RESIZE_ERRORS])
def test_resize_errors_as_torch(device, name, call):
    want = raised(lambda: call(torch, device))
    assert raised(lambda: call(vkt, device)) == want and want[0] == "RuntimeError"


def test_resize_under_no_grad_refused(device):
    """PyTorch refuses a tensor that requires grad in any grad mode."""
    for L in (torch, vkt):
        x = tensor(L, numbered(3), device, requires_grad=True)
        with L.no_grad():
            assert raised(lambda: x.resize_(4))[1] == "cannot resize variables that require grad"
        assert tuple(x.shape) == (3,) and x._version == 0


def test_resize_cannot_grow_shared_or_borrowed_storage(device):
    """PyTorch grows a storage under every tensor over it; vkt's storages have one size, so it grows only one that the
    tensor resized holds alone, and refuses the others (a view, a saved tensor, a NumPy array's memory)."""
    a = vkt.tensor(numbered((2, 3)), device=device)
    b = a[0]
    with pytest.raises(RuntimeError, match="resize_ cannot grow a storage that other tensors share"):
        a.resize_(4, 4)
    assert a.resize_(5) is a and tuple(a.shape) == (5,) and b.tolist() == [1.0, 2.0, 3.0]  # shrinking shares on
    n = np.zeros(3, dtype=np.float32)
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        vkt.from_numpy(n).resize_(4)
    del b
    assert a.resize_(4, 4) is a and a.reshape(-1)[:5].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0] and a._version == 2
