# Views: one table of cases, each applied to a NumPy array and to a vkt tensor on cpu and vulkan;
# values, shape, strides (in elements), storage offset, contiguity and storage sharing must agree.
import numpy as np
import pytest

import vkt
from conftest import assert_bits_equal, assert_close

# (name, input shape, vkt function, NumPy function, is a view of the input)
CASES = [
    ("view_2d", (4, 6), lambda t: t.view(6, 4), lambda a: a.reshape(6, 4), True),
    ("view_flat", (4, 6), lambda t: t.view(-1), lambda a: a.reshape(-1), True),
    ("view_tuple", (4, 6), lambda t: t.view((2, 3, 4)), lambda a: a.reshape(2, 3, 4), True),
    ("view_infer", (2, 3, 4), lambda t: t.view(2, -1), lambda a: a.reshape(2, -1), True),
    ("reshape", (4, 6), lambda t: t.reshape(3, -1), lambda a: a.reshape(3, -1), True),
    ("reshape_of_transpose", (4, 6), lambda t: t.T.reshape(-1), lambda a: a.T.reshape(-1), False),
    ("reshape_of_slice_view", (4, 6), lambda t: t[1:3].reshape(12), lambda a: a[1:3].reshape(12), True),
    ("transpose", (2, 3, 4), lambda t: t.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2), True),
    ("transpose_neg", (2, 3, 4), lambda t: t.transpose(-1, -2), lambda a: np.swapaxes(a, -1, -2), True),
    ("permute", (2, 3, 4), lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), True),
    ("permute_tuple", (2, 3, 4), lambda t: t.permute((1, 2, 0)), lambda a: a.transpose(1, 2, 0), True),
    ("T", (4, 6), lambda t: t.T, lambda a: a.T, True),
    ("mT", (2, 3, 4), lambda t: t.mT, lambda a: np.swapaxes(a, -1, -2), True),
    ("slice", (7, 9), lambda t: t[1:6], lambda a: a[1:6], True),
    ("slice_steps", (7, 9), lambda t: t[1:6:2, ::3], lambda a: a[1:6:2, ::3], True),
    ("slice_negative_bounds", (7, 9), lambda t: t[-5:-1, -7::2], lambda a: a[-5:-1, -7::2], True),
    ("slice_past_end", (7, 9), lambda t: t[5:100, 8:], lambda a: a[5:100, 8:], True),
    ("slice_empty", (7, 9), lambda t: t[4:2], lambda a: a[4:2], True),
    ("int_index", (3, 4, 5), lambda t: t[1], lambda a: a[1], True),
    ("select", (3, 4, 5), lambda t: t.select(1, -1), lambda a: a[:, -1], True),
    ("select_function", (4, 5), lambda t: vkt.select(t.t(), 0, 2), lambda a: a.T[2], True),
    ("unfold", (3, 7), lambda t: t.unfold(1, 3, 2), lambda a: np.lib.stride_tricks.sliding_window_view(a, 3, 1)[:, ::2],
     True),
    ("unfold_overlapping", (6,), lambda t: t.unfold(0, 4, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 4),
     True),
    ("unfold_0d", (), lambda t: t.unfold(0, 1, 1), lambda a: a.reshape(1), True),
    ("int_index_neg", (3, 4, 5), lambda t: t[-1, 2], lambda a: a[-1, 2], True),
    ("int_index_0d", (3, 4), lambda t: t[1, 2], lambda a: a[1, 2, ...], True),
    ("int_and_slice", (3, 4, 5), lambda t: t[:, 1, ::2], lambda a: a[:, 1, ::2], True),
    ("none_front", (3, 4), lambda t: t[None], lambda a: a[None], True),
    ("none_middle", (3, 4), lambda t: t[:, None], lambda a: a[:, None], True),
    ("none_both", (3, 4), lambda t: t[None, ..., None], lambda a: a[None, ..., None], True),
    ("ellipsis_last", (2, 3, 4), lambda t: t[..., 1], lambda a: a[..., 1], True),
    ("ellipsis_mixed", (2, 3, 4), lambda t: t[1, ..., ::2], lambda a: a[1, ..., ::2], True),
    ("ellipsis_only", (2, 3), lambda t: t[...], lambda a: a[...], True),
    ("expand", (1, 3), lambda t: t.expand(4, 3), lambda a: np.broadcast_to(a, (4, 3)), True),
    ("expand_minus1", (3, 1), lambda t: t.expand(-1, 5), lambda a: np.broadcast_to(a, (3, 5)), True),
    ("expand_new_dims", (3,), lambda t: t.expand(2, 4, 3), lambda a: np.broadcast_to(a, (2, 4, 3)), True),
    ("expand_tuple", (1, 3), lambda t: t.expand((2, 3)), lambda a: np.broadcast_to(a, (2, 3)), True),
    ("squeeze_all", (1, 3, 1, 4), lambda t: t.squeeze(), lambda a: np.squeeze(a), True),
    ("squeeze_dim", (1, 3, 1, 4), lambda t: t.squeeze(2), lambda a: np.squeeze(a, 2), True),
    ("squeeze_neg_dim", (1, 3, 1, 4), lambda t: t.squeeze(-4), lambda a: np.squeeze(a, 0), True),
    ("squeeze_not_one", (1, 3, 1, 4), lambda t: t.squeeze(1), lambda a: a, True),
    ("unsqueeze_0", (3, 4), lambda t: t.unsqueeze(0), lambda a: np.expand_dims(a, 0), True),
    ("unsqueeze_1", (3, 4), lambda t: t.unsqueeze(1), lambda a: np.expand_dims(a, 1), True),
    ("unsqueeze_last", (3, 4), lambda t: t.unsqueeze(-1), lambda a: np.expand_dims(a, -1), True),
    ("unsqueeze_end", (3, 4), lambda t: t.unsqueeze(2), lambda a: np.expand_dims(a, 2), True),
    ("flatten", (2, 3, 4, 5), lambda t: t.flatten(), lambda a: a.reshape(-1), True),
    ("flatten_start", (2, 3, 4, 5), lambda t: t.flatten(1), lambda a: a.reshape(2, -1), True),
    ("flatten_mid", (2, 3, 4, 5), lambda t: t.flatten(1, 2), lambda a: a.reshape(2, 12, 5), True),
    ("flatten_neg", (2, 3, 4, 5), lambda t: t.flatten(0, -2), lambda a: a.reshape(24, 5), True),
    ("flatten_of_transpose", (2, 3, 4), lambda t: t.mT.flatten(), lambda a: np.swapaxes(a, -1, -2).reshape(-1), False),
    ("view_of_view", (4, 6), lambda t: t.T[1:, ::2].unsqueeze(0), lambda a: a.T[1:, ::2][None], True),
    ("slice_of_expand", (1, 5), lambda t: t.expand(3, 5)[1:, 1:4], lambda a: np.broadcast_to(a, (3, 5))[1:, 1:4], True),
    ("transpose_of_slice", (5, 6), lambda t: t[1:4, 2:].transpose(0, 1), lambda a: a[1:4, 2:].T, True),
]
IDS = [c[0] for c in CASES]


def c_copy(a):
    """A C-contiguous copy that keeps 0-d arrays 0-d (np.ascontiguousarray makes them 1-d)."""
    return np.array(a, order="C")


def make_input(shape):
    # Distinct values so any wrong index shows; float32 so the vulkan tensor takes the common path.
    return (np.arange(int(np.prod(shape)), dtype=np.float32) * 1.5 - 7).reshape(shape)


def np_storage_offset(view, base):
    return (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.itemsize


def check_layout(v, r, base, is_view):
    assert tuple(v.shape) == r.shape
    assert v.dim() == r.ndim
    assert v.numel() == r.size
    # PyTorch leaves the stride of a size-1 dimension unspecified (NumPy often writes 0 there).
    got_strides = [s for s, n in zip(v.stride(), r.shape) if n != 1]
    ref_strides = [s // r.itemsize for s, n in zip(r.strides, r.shape) if n != 1]
    if r.size:
        assert got_strides == ref_strides
        assert v.is_contiguous() == r.flags.c_contiguous
    if is_view and r.size:
        assert v.storage_offset() == np_storage_offset(r, base)


@pytest.mark.parametrize("name,shape,fn,np_fn,is_view", CASES, ids=IDS)
def test_view(device, name, shape, fn, np_fn, is_view):
    a = make_input(shape)
    r = np_fn(a)
    if r.size:
        assert np.shares_memory(r, a) == is_view, "the table's is_view column is wrong"
    t = vkt.tensor(a, device=device)
    v = fn(t)
    assert v.dtype == vkt.float32
    assert v.device == t.device
    check_layout(v, r, a, is_view)
    assert_bits_equal(np.asarray(v), c_copy(r))


@pytest.mark.parametrize("name,shape,fn,np_fn,is_view", [c for c in CASES if c[4]], ids=[c[0] for c in CASES if c[4]])
def test_view_shares_storage(name, shape, fn, np_fn, is_view):
    a = make_input(shape)
    t = vkt.from_numpy(a)
    v = fn(t)
    a += 1000.0
    a.flat[0] = -1.0
    assert_bits_equal(v.numpy(), c_copy(np_fn(a)))


@pytest.mark.parametrize("name,shape,fn,np_fn,is_view", CASES, ids=IDS)
def test_contiguous_and_clone(device, name, shape, fn, np_fn, is_view):
    a = make_input(shape)
    r = c_copy(np_fn(a))
    v = fn(vkt.tensor(a, device=device))
    assert v.contiguous().is_contiguous() and v.clone(memory_format=vkt.contiguous_format).is_contiguous()
    for c in (v.contiguous(), v.clone(memory_format=vkt.contiguous_format), v.clone()):  # clone() keeps a layout
        assert c.device == v.device
        assert c.dtype == v.dtype
        assert tuple(c.shape) == r.shape
        assert_bits_equal(np.asarray(c), r)


def test_contiguous_of_contiguous_is_self(device):
    t = vkt.tensor(make_input((3, 4)), device=device)
    assert t.contiguous() is t


def test_clone_does_not_share_storage():
    a = make_input((3, 4))
    t = vkt.from_numpy(a)
    views = [t.clone(), t.T.clone(), t.T.contiguous()]
    refs = [a.copy(), a.T.copy(), a.T.copy()]
    a += 1.0
    for v, r in zip(views, refs):
        assert_bits_equal(v.numpy(), r)


DEVICE_COPY_CASES = [c for c in CASES if c[0] in ("T", "mT", "permute", "slice_steps", "expand", "view_of_view", "slice_of_expand")]


@pytest.mark.parametrize("name,shape,fn,np_fn,is_view", DEVICE_COPY_CASES, ids=[c[0] for c in DEVICE_COPY_CASES])
def test_vulkan_contiguous_runs_on_device(dev, name, shape, fn, np_fn, is_view):
    a = make_input(shape)
    t = vkt.tensor(a, device=dev)
    before = vkt.vulkan.memory_allocated()
    c = fn(t).contiguous()
    # The copy is a new device tensor: it lives in device memory, not on the host.
    assert c.device.type == "vulkan"
    assert c.is_contiguous()
    assert vkt.vulkan.memory_allocated() >= before + c.numel() * 4
    # A view of the copy copied again stays on the device and reads back right.
    d = c.T.contiguous() if c.dim() == 2 else c.flatten().contiguous()
    assert d.device.type == "vulkan"
    ref = c_copy(np_fn(a))
    assert_bits_equal(np.asarray(c), ref)
    assert_bits_equal(np.asarray(d), c_copy(ref.T) if ref.ndim == 2 else ref.reshape(-1))


def test_vulkan_many_views_then_read(dev):
    # Several device copies recorded before one read: the batch must keep them in order.
    a = make_input((16, 24))
    t = vkt.tensor(a, device=dev)
    outs = [t.T.contiguous(), t[::2, 1::3].contiguous(), t.T.contiguous().T.contiguous(), t[None].expand(3, 16, 24).contiguous()]
    refs = [a.T, a[::2, 1::3], a, np.broadcast_to(a[None], (3, 16, 24))]
    for o, r in zip(outs, refs):
        assert_bits_equal(np.asarray(o), c_copy(r))


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int64", "uint8", "bool"])
def test_view_copy_every_dtype(device, dtype):
    a = (np.arange(5 * 7) % 5).astype(dtype).reshape(5, 7)
    t = vkt.tensor(a, device=device)
    for fn, np_fn in [(lambda x: x.T, lambda x: x.T), (lambda x: x[1::2, ::3], lambda x: x[1::2, ::3])]:
        c = fn(t).contiguous()
        assert c.is_contiguous()
        assert_bits_equal(np.asarray(c), c_copy(np_fn(a)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("shape,perm", [((100, 70), (1, 0)), ((3, 50, 40), (0, 2, 1)), ((33, 34, 35), (2, 1, 0)),
                                        ((64, 96), (1, 0)), ((40, 2, 33), (2, 1, 0)), ((31, 90), (1, 0))])
def test_transposing_copies(dev, dtype, shape, perm):
    # Where the source is dense along one dim and the copy along another, both at least 32 long, the copy
    # moves 32 x 32 tiles through shared memory: partial tiles at the edges, batches of tiles over the
    # other dims, every item size; (31, 90) is short of a tile and copies element by element. NaN
    # payloads and negative zeros come through bit for bit.
    rng = np.random.default_rng(len(shape))
    a = (rng.standard_normal(shape) * 50).astype(dtype)
    if dtype.startswith("float"):
        a.flat[::7] = -0.0
        a.flat[3::11] = np.nan
    t = vkt.tensor(a, device=dev)
    vkt.vulkan.reset_fallback_stats()
    assert_bits_equal(np.asarray(t.permute(*perm).contiguous()), c_copy(a.transpose(perm)))
    assert_bits_equal(np.asarray(t[1:].permute(*perm).contiguous()), c_copy(a[1:].transpose(perm)))  # an offset
    assert vkt.vulkan.fallback_stats() == {}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "uint8"])
def test_strided_copies_by_rows(dev, dtype):
    # One merged dim (a strided slice, an expanded scalar) or a long innermost one (512 or more: its rows
    # along the dispatch's y and z) copy 4 elements an invocation: ragged ends, rows of several dims, every
    # item size, and more rows than one dispatch's y (65535).
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((6, 5, 1100)) * 50).astype(dtype)
    t = vkt.tensor(a, device=dev)
    for fn in (lambda x: x[:, 1:, 3:1030], lambda x: x[::2, :, ::2], lambda x: x[3, 2, 7::3], lambda x: x[:, ::4, 50:]):
        assert_bits_equal(np.asarray(fn(t).contiguous()), c_copy(fn(a)))
    row = vkt.tensor(a[0, 0, :600], device=dev)
    assert_bits_equal(np.asarray(row.expand(65537, 600).contiguous()), c_copy(np.broadcast_to(a[0, 0, :600],
                                                                                               (65537, 600))))
    one = vkt.tensor(a[0, 0, :1], device=dev)
    assert_bits_equal(np.asarray(one.expand(3000, 7).contiguous()), c_copy(np.broadcast_to(a[0, 0, :1], (3000, 7))))


# (name, input shape, vkt op, NumPy op, PyTorch's strides of the result along its dims longer than 1)
LAYOUT_CASES = [
    ("relu_of_transpose", (40, 70), lambda t: t.T.relu(), lambda a: np.maximum(a.T, 0), (1, 70)),
    ("abs_of_permute", (3, 5, 7), lambda t: t.permute(2, 0, 1).abs(), lambda a: np.abs(a.transpose(2, 0, 1)),
     (1, 35, 7)),
    ("add_transposes", (40, 70), lambda t: t.T + t.T, lambda a: a.T + a.T, (1, 70)),
    ("transpose_plus_dense", (40, 40), lambda t: t.T + t.contiguous(), lambda a: a.T + a, (1, 40)),  # NumPy: (40, 1)
    ("scalar_minus_transpose", (40, 70), lambda t: 2 - t.T, lambda a: 2 - a.T, (1, 70)),
    ("where_of_transposes", (40, 70), lambda t: vkt.where(t.T > 0, t.T, 0.0), lambda a: np.where(a.T > 0, a.T, 0),
     (1, 70)),
    ("permute_with_ones", (1, 6, 1, 4), lambda t: t.permute(3, 0, 2, 1) * 3, lambda a: a.transpose(3, 0, 2, 1) * 3,
     (1, 4)),
    ("broadcast_first", (40, 70), lambda t: t[:1].T + t.T, lambda a: a[:1].T + a.T, (1, 70)),
    ("slice_of_transpose", (40, 70), lambda t: t.T[::2].neg(), lambda a: -a.T[::2], (1, 35)),
    ("broadcast_only", (1, 70), lambda t: t.T.expand(70, 3) * 2, lambda a: np.broadcast_to(a.T, (70, 3)) * 2, (3, 1)),
]


@pytest.mark.parametrize("name,shape,fn,np_fn,strides", LAYOUT_CASES, ids=[c[0] for c in LAYOUT_CASES])
def test_results_keep_the_operands_layout(device, name, shape, fn, np_fn, strides):
    # An elementwise result is dense in the order of the strides of its first operand that is not
    # broadcast, as in PyTorch (a transpose's relu is a transpose), so the op reads and writes in memory
    # order; row-major where every operand is broadcast.
    a = make_input(shape)
    got = fn(vkt.tensor(a, device=device))
    assert_close(got, np_fn(a).astype(np.float64), rtol=1e-6, atol=0)
    assert tuple(s for s, n in zip(got.stride(), got.shape) if n > 1) == strides


# Tensor.view(dtype), against torch 2.13: (name, shape, layout applied to both libraries' tensors)
VIEW_DTYPE_CASES = [
    ("contiguous", (3, 8), lambda t: t),
    ("rows_sliced", (4, 8), lambda t: t[1:3]),
    ("columns_sliced", (3, 16), lambda t: t[:, 4:12]),
    ("odd_columns", (3, 8), lambda t: t[:, 1:4]),
    ("transpose", (4, 8), lambda t: t.t()),
    ("stepped", (3, 8), lambda t: t[:, ::2]),
    ("expanded", (1, 8), lambda t: t.expand(3, 8)),
    ("expanded_last", (3, 1), lambda t: t.expand(3, 8)),
    ("zero_d", (), lambda t: t),
    ("empty", (3, 8), lambda t: t[:, :0]),
    ("no_rows", (3, 8), lambda t: t[3:]),
    ("inner_dims", (4, 4, 8), lambda t: t[:, 1:3]),
]


@pytest.mark.parametrize("name,shape,layout", VIEW_DTYPE_CASES, ids=[c[0] for c in VIEW_DTYPE_CASES])
def test_view_dtype_as_torch(device, name, shape, layout):
    # Same element size: the same geometry; another size: the last dim scales, or torch's RuntimeError.
    import torch
    from conftest import DTYPES, raised

    rng = np.random.default_rng(0)
    for src in DTYPES:
        for dst in DTYPES:
            raw = rng.integers(0, 256, size=(*shape, 8), dtype=np.uint8)
            if "bool" in (src, dst):  # bytes other than 0 and 1 are not bools
                raw &= 1
            a = raw[..., 0].astype(bool) if src == "bool" else raw.view(src)[..., 0]
            t, v = layout(torch.from_numpy(a.copy())), layout(vkt.tensor(a, device=device))
            assert raised(lambda: v.view(getattr(vkt, dst))) == raised(lambda: t.view(getattr(torch, dst)))
            if raised(lambda: t.view(getattr(torch, dst)))[0]:
                continue
            got, ref = v.view(getattr(vkt, dst)), t.view(getattr(torch, dst))
            assert (got.shape, got.stride(), got.storage_offset()) == (tuple(ref.shape), ref.stride(),
                                                                       ref.storage_offset())
            assert_bits_equal(got.cpu().numpy(), ref.numpy())


def test_view_dtype_writes_through_without_history(device):
    # torch's view.dtype is not differentiable: no grad_fn, no _base, yet the storage and its version are shared,
    # so writing it changes a leaf that requires grad without an error and fails a saved tensor's check.
    import torch
    from conftest import raised

    for lib, dev in ((torch, "cpu"), (vkt, device)):
        x = lib.ones(4, requires_grad=True, device=dev)
        y = x.view(lib.float32)
        assert (y.requires_grad, y.grad_fn, y._base, y._is_view(), y.is_leaf) == (False, None, None, False, True)
        assert x.view(lib.float16).requires_grad is False
        y.mul_(2)
        assert (x._version, y._version) == (1, 1)
        np.testing.assert_array_equal(x.detach().cpu().numpy(), [2, 2, 2, 2])
        i = x.detach().view(dtype=lib.int32)
        i[0] = 1065353216
        assert x[0].item() == 1.0
        assert raised(lambda: y.sum().backward()) == ("RuntimeError",
                                                      "element 0 of tensors does not require grad and does not have "
                                                      "a grad_fn")
        c = x.clone()
        e = c * c
        c.view(lib.int32).add_(1)
        assert raised(lambda: e.sum().backward())[0] == "RuntimeError"
    assert vkt.ones(2, 3).view(size=(3, 2)).shape == (3, 2)
    assert vkt.ones(2, 3).view((6,))._is_view()
