# Layout composites and index-driven ops against torch on cpu and vulkan: narrow, movedim, swapaxes,
# unflatten, unbind, diagonal, diag, diag_embed, trace, repeat, tile, repeat_interleave, rot90, fliplr,
# flipud, broadcast_to, broadcast_tensors, atleast_Nd, h/v/d/column_stack, take, take_along_dim,
# masked_select, masked_scatter, index_fill, and the module-level view functions; every dtype, 0-d,
# empty, odd and non-contiguous inputs, with zero CPU fallbacks on vulkan.
import numpy as np
import pytest

import vkt
from conftest import DTYPES, assert_bits_equal

torch = pytest.importorskip("torch")

# (name, call on a module m (vkt or torch) and a tensor x of shape (3, 4, 5) (non-contiguous) )
CASES = [
    ("narrow", lambda m, x: m.narrow(x, 1, 1, 2)),
    ("narrow_negative", lambda m, x: x.narrow(-1, -3, 3)),
    ("movedim", lambda m, x: m.movedim(x, 0, -1)),
    ("movedim_many", lambda m, x: x.movedim((0, 1), (2, 0))),
    ("moveaxis", lambda m, x: m.moveaxis(x, 2, 0)),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 2)),
    ("swapdims", lambda m, x: x.swapdims(1, 2)),
    ("unflatten", lambda m, x: m.unflatten(x, 2, (5, 1))),
    ("unflatten_infer", lambda m, x: x.unflatten(1, (2, -1))),
    ("unbind", lambda m, x: m.stack(m.unbind(x, 1), 0)),
    ("diagonal", lambda m, x: m.diagonal(x, 1, 1, 2)),
    ("diagonal_negative", lambda m, x: x.diagonal(-1, 0, 1)),
    ("diagonal_past_end", lambda m, x: x.diagonal(9)),
    ("diag_2d", lambda m, x: m.diag(x[0], 1)),
    ("diag_1d", lambda m, x: m.diag(x[0, 1], -2)),
    ("diag_embed", lambda m, x: m.diag_embed(x, 1)),
    ("diag_embed_dims", lambda m, x: x.diag_embed(0, 0, 2)),
    ("repeat", lambda m, x: x.repeat(2, 1, 1, 3)),
    ("repeat_tuple", lambda m, x: x[0].repeat((1, 2))),
    ("repeat_zero", lambda m, x: x.repeat(1, 0, 2)),
    ("tile", lambda m, x: m.tile(x, (2,))),
    ("tile_more", lambda m, x: x.tile((2, 1, 1, 1))),
    ("repeat_interleave", lambda m, x: m.repeat_interleave(x, 2)),
    ("repeat_interleave_dim", lambda m, x: x.repeat_interleave(3, dim=1)),
    ("repeat_interleave_tensor", lambda m, x: x.repeat_interleave(m.tensor([2, 0, 1, 3], device=x.device), dim=1)),
    ("repeat_interleave_one", lambda m, x: m.repeat_interleave(x, m.tensor([2], device=x.device))),
    ("repeat_interleave_alone", lambda m, x: m.repeat_interleave(m.tensor([1, 0, 3], device=x.device))),
    ("repeat_interleave_output_size", lambda m, x: x.repeat_interleave(2, dim=-1, output_size=10)),
    ("repeat_interleave_tensor_output_size",
     lambda m, x: m.repeat_interleave(x, m.tensor([2], device=x.device), output_size=120)),
    ("rot90", lambda m, x: m.rot90(x)),
    ("rot90_k", lambda m, x: x.rot90(3, (1, 2))),
    ("rot90_2", lambda m, x: x.rot90(-2, (0, 2))),
    ("fliplr", lambda m, x: m.fliplr(x)),
    ("flipud", lambda m, x: x.flipud()),
    ("broadcast_to", lambda m, x: m.broadcast_to(x[:, :1], (2, 3, 4, 5))),
    ("broadcast_tensors", lambda m, x: m.broadcast_tensors(x[:, :1], x[0, :, :1])[1]),
    ("atleast_3d", lambda m, x: m.atleast_3d(x[0, 0])),
    ("atleast_2d_0d", lambda m, x: m.atleast_2d(x[0, 0, 0])),
    ("hstack", lambda m, x: m.hstack((x, x[:, :1]))),
    ("hstack_1d", lambda m, x: m.hstack([x[0, 0], x[1, 1]])),
    ("vstack", lambda m, x: m.vstack([x[0, 0], x[1, :2]])),
    ("dstack", lambda m, x: m.dstack([x[0], x[1]])),
    ("column_stack", lambda m, x: m.column_stack([x[0, 0], x[1].T[:, :2]])),
    ("take", lambda m, x: m.take(x, m.tensor([[0, -1], [7, 59]], device=x.device))),
    ("take_along_dim", lambda m, x: m.take_along_dim(x, m.tensor([[[0], [2]]], device=x.device), 1)),
    ("take_along_dim_flat", lambda m, x: x.contiguous().take_along_dim(m.tensor([3, 0, 3], device=x.device))),
    ("masked_select", lambda m, x: m.masked_select(x, x[0] > 2)),
    ("masked_scatter", lambda m, x: x.masked_scatter(x > 2, x.flip(0))),
    ("masked_scatter_", lambda m, x: x.clone().masked_scatter_((x > 1)[0], x.flip(1))),
    ("index_fill", lambda m, x: x.index_fill(1, m.tensor([0, -1], device=x.device), 7)),
    ("index_fill_", lambda m, x: x.clone().index_fill_(2, m.tensor([4], device=x.device),
                                                        m.tensor(5, dtype=x.dtype, device=x.device))),
    ("reshape", lambda m, x: m.reshape(x, (5, -1))),
    ("transpose", lambda m, x: m.transpose(x, 0, 1)),
    ("squeeze", lambda m, x: m.squeeze(x[:1], 0)),
    ("unsqueeze", lambda m, x: m.unsqueeze(x, -1)),
    ("permute", lambda m, x: m.permute(x, (2, 0, 1))),
    ("flatten", lambda m, x: m.flatten(x, 1)),
    ("t", lambda m, x: m.t(x[0])),
]


def source(dtype):
    base = (np.arange(5 * 4 * 3) % 7).reshape(5, 4, 3).astype(dtype)
    return base, np.ascontiguousarray(base.transpose(2, 1, 0))  # as given, and x's values contiguous


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", DTYPES)
def test_layout(device, name, call, dtype):
    base, _ = source(dtype)
    ref = call(torch, torch.tensor(base).permute(2, 1, 0))
    vkt.vulkan.reset_fallback_stats()
    got = call(vkt, vkt.tensor(base, device=device).permute(2, 1, 0))
    assert_bits_equal(np.asarray(got), ref.numpy())
    assert vkt.vulkan.fallback_stats() == {}


def test_trace(device):
    for dtype in ["float32", "int32", "float64"]:
        m = np.arange(12).reshape(3, 4).astype(dtype)
        ref = torch.tensor(m).trace()
        got = vkt.tensor(m, device=device).trace()
        assert got.dtype == getattr(vkt, str(ref.dtype).split(".")[1]) and got.item() == ref.item()


@pytest.mark.parametrize("call", [
    lambda m, x: x.narrow(0, 4, 1), lambda m, x: x.narrow(0, 1, 5), lambda m, x: m.movedim(x, 0, 3),
    lambda m, x: x.diag(), lambda m, x: x.repeat(2), lambda m, x: x.rot90(1, (0, 0)), lambda m, x: x[0, 0].fliplr(),
    lambda m, x: m.take(x, m.tensor([60], device=x.device)), lambda m, x: m.take(x, m.tensor([-61], device=x.device)),
    lambda m, x: x.index_fill(0, m.tensor([3], device=x.device), 1.0),
    lambda m, x: x.masked_scatter(x > 0, x[0].long()),
    lambda m, x: x.repeat_interleave(2, dim=1, output_size=7),
    lambda m, x: x.repeat_interleave(m.tensor([1, 2, 0, 1], device=x.device), dim=1, output_size=5),
])
def test_layout_errors(device, call):
    with pytest.raises(Exception) as ref:
        call(torch, torch.zeros(3, 4, 5))
    with pytest.raises(type(ref.value)):
        call(vkt, vkt.zeros(3, 4, 5, device=device))


REPEAT_INTERLEAVE_ERRORS = [  # (name, call(L, x)), x of shape (3,): torch's exception type and message
    ("bool", lambda L, x: x.repeat_interleave(True)),
    ("float", lambda L, x: x.repeat_interleave(2.0)),
    ("float_dim", lambda L, x: x.repeat_interleave(2, 0.0)),
    ("bool_kw_dim", lambda L, x: x.repeat_interleave(True, dim=0)),
    ("float_kws", lambda L, x: x.repeat_interleave(2.0, dim=0, output_size=6)),
    ("kws_only", lambda L, x: x.repeat_interleave(repeats=2.0, dim=0)),
    ("list", lambda L, x: x.repeat_interleave([1, 2, 1])),
    ("none", lambda L, x: x.repeat_interleave(None)),
    ("function_bool", lambda L, x: L.repeat_interleave(x, True)),
    ("function_float", lambda L, x: L.repeat_interleave(x, 2.0)),
    ("float_tensor", lambda L, x: x.repeat_interleave(L.tensor(2.0))),
    ("float_tensor_1d", lambda L, x: x.repeat_interleave(L.tensor([1.0, 2.0, 1.0]))),
    ("byte_tensor_alone", lambda L, x: L.repeat_interleave(L.tensor([1, 2], dtype=L.uint8))),
    # with an input, the repeats' rank and size are checked before their dtype (the kernel's), method or function
    ("tensor_2d", lambda L, x: x.repeat_interleave(L.tensor([[1, 2, 1]]))),
    ("tensor_2d_function", lambda L, x: L.repeat_interleave(x, L.tensor([[1, 2, 1]]), dim=0)),
    ("float_tensor_2d", lambda L, x: x.repeat_interleave(L.tensor([[1.0, 2.0, 1.0]]), dim=0)),
    ("float_tensor_bad_size", lambda L, x: x.repeat_interleave(L.tensor([1.0, 2.0]), dim=0)),
    ("float_tensor_bad_size_function", lambda L, x: L.repeat_interleave(x, L.tensor([1.0, 2.0]))),
    ("bool_tensor_bad_size", lambda L, x: x.repeat_interleave(L.tensor([True, False]), dim=0)),
    # a 0-D input refuses any dim, after the repeats' rank and before their size and dtype; without a dim it repeats
    ("0d_dim", lambda L, x: x[0].repeat_interleave(L.tensor(2), dim=0)),
    ("0d_dim_minus1", lambda L, x: x[0].repeat_interleave(L.tensor([2]), dim=-1)),
    ("0d_dim_5", lambda L, x: x[0].repeat_interleave(L.tensor(2), dim=5)),
    ("0d_dim_function_size", lambda L, x: L.repeat_interleave(x[0], L.tensor([2, 3]), dim=0)),
    ("0d_dim_float_repeats", lambda L, x: x[0].repeat_interleave(L.tensor([2.0]), dim=0)),
    ("0d_dim_2d_repeats", lambda L, x: x[0].repeat_interleave(L.tensor([[2]]), dim=0)),
    ("0d_no_dim", lambda L, x: x[0].repeat_interleave(L.tensor(2))),
    # repeats alone: the kernel's own checks, dtype first, then a 1-D tensor; a number is not a Tensor
    ("tensor_2d_alone", lambda L, x: L.repeat_interleave(L.tensor([[1, 2]]))),
    ("tensor_0d_alone", lambda L, x: L.repeat_interleave(L.tensor(2))),
    ("float_tensor_2d_alone", lambda L, x: L.repeat_interleave(L.tensor([[1.0, 2.0]]))),
    ("bool_alone", lambda L, x: L.repeat_interleave(True)),
    ("int_alone", lambda L, x: L.repeat_interleave(3)),
    ("list_alone", lambda L, x: L.repeat_interleave([1, 2])),
]


@pytest.mark.parametrize("name,call", REPEAT_INTERLEAVE_ERRORS, ids=[c[0] for c in REPEAT_INTERLEAVE_ERRORS])
def test_repeat_interleave_errors_as_torch(device, name, call):
    def raised(L, x):
        try:
            call(L, x)
        except Exception as e:  # noqa: BLE001 -- the exception is the result compared
            return type(e).__name__, str(e).replace("torch.", "").replace("vkt.", "")
        return None
    assert raised(vkt, vkt.arange(3, device=device)) == raised(torch, torch.arange(3))
