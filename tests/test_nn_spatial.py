# vkt.nn.functional's spatial and attention functions against torch.nn.functional on the CPU: one table
# of calls written once for both libraries (same names and signatures), run on the cpu device in float64
# (tight) and float32 and on the vulkan device in float32 (with no CPU fallback): forward values and the
# gradients of every floating input under a random upstream gradient. Then error parity and state.
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import vkt
import vkt.nn.functional as F
from conftest import assert_close, to_numpy

CONFIGS = [("cpu", "float64"), ("cpu", "float32"), ("vulkan", "float32")]
TOL = {"float64": 1e-9, "float32": 2e-4}

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
BOOL_MASK = np.random.default_rng(7).random((4, 5)) > 0.3
BOOL_MASK[2] = False  # a fully masked row: PyTorch's attention gives it zeros, not NaN

# (id, call(F, T, *inputs), input shapes): F is torch.nn.functional or vkt.nn.functional, T turns a
# NumPy constant (a mask) into that library's tensor on the case's device.
CASES = [
    ("conv2d", lambda F, T, x, w: F.conv2d(x, w), [(2, 3, 7, 9), (4, 3, 3, 3)]),
    ("conv2d_bias_stride_pad", lambda F, T, x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
     [(2, 3, 7, 9), (4, 3, 3, 3), (4,)]),
    ("conv2d_k5_dilation", lambda F, T, x, w: F.conv2d(x, w, stride=(2, 1), padding=(2, 3), dilation=(1, 2)),
     [(2, 2, 7, 9), (3, 2, 5, 5)]),
    ("conv2d_groups", lambda F, T, x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
     [(2, 4, 7, 9), (6, 2, 3, 3), (6,)]),
    ("conv2d_depthwise", lambda F, T, x, w: F.conv2d(x, w, stride=2, groups=3), [(1, 3, 7, 9), (3, 1, 3, 3)]),
    ("conv2d_same", lambda F, T, x, w, b: F.conv2d(x, w, b, padding="same", dilation=2),
     [(2, 3, 7, 9), (4, 3, 4, 3), (4,)]),
    ("conv2d_valid", lambda F, T, x, w: F.conv2d(x, w, padding="valid"), [(2, 3, 7, 9), (4, 3, 3, 5)]),
    ("conv2d_unbatched", lambda F, T, x, w, b: F.conv2d(x, w, b, stride=2, padding=2),
     [(3, 7, 9), (4, 3, 5, 5), (4,)]),
    ("conv2d_1x1", lambda F, T, x, w: F.conv2d(x, w), [(2, 5, 3, 4), (3, 5, 1, 1)]),
    ("conv2d_1x1_pad_groups", lambda F, T, x, w: F.conv2d(x, w, padding=1, groups=2), [(2, 4, 3, 4), (6, 2, 1, 1)]),
    ("conv2d_1x1_strided", lambda F, T, x, w: F.conv2d(x, w, stride=2), [(2, 4, 5, 4), (3, 4, 1, 1)]),
    ("conv1d", lambda F, T, x, w, b: F.conv1d(x, w, b, stride=2, padding=2), [(2, 3, 11), (5, 3, 5), (5,)]),
    ("conv1d_groups_dilation", lambda F, T, x, w: F.conv1d(x, w, padding="same", dilation=3, groups=2),
     [(2, 4, 11), (4, 2, 3)]),
    ("conv1d_unbatched", lambda F, T, x, w: F.conv1d(x, w, stride=3), [(3, 11), (2, 3, 3)]),
    ("conv_transpose2d", lambda F, T, x, w: F.conv_transpose2d(x, w), [(2, 3, 5, 6), (3, 4, 3, 3)]),
    ("conv_transpose2d_stride", lambda F, T, x, w, b: F.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1), [(2, 3, 5, 6), (3, 4, 3, 3), (4,)]),
    ("conv_transpose2d_groups_dilation", lambda F, T, x, w, b: F.conv_transpose2d(
        x, w, b, stride=(2, 3), padding=(2, 1), output_padding=(1, 0), groups=2, dilation=(2, 1)),
     [(2, 4, 5, 4), (4, 3, 3, 5), (6,)]),
    ("conv_transpose2d_unbatched", lambda F, T, x, w: F.conv_transpose2d(x, w, stride=2),
     [(3, 4, 5), (3, 2, 2, 2)]),
    ("unfold", lambda F, T, x: F.unfold(x, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)), [(2, 3, 7, 9)]),
    ("unfold_unbatched", lambda F, T, x: F.unfold(x, 2, stride=2), [(3, 5, 6)]),
    ("fold", lambda F, T, x: F.fold(x, (7, 9), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)), [(2, 18, 36)]),
    ("fold_unbatched_overlap", lambda F, T, x: F.fold(x, (5, 6), 3), [(18, 12)]),
    ("pixel_shuffle", lambda F, T, x: F.pixel_shuffle(x, 2), [(2, 8, 3, 5)]),
    ("pixel_shuffle_batch_dims", lambda F, T, x: F.pixel_shuffle(x, 3), [(2, 2, 9, 2, 3)]),
    ("pixel_unshuffle", lambda F, T, x: F.pixel_unshuffle(x, 2), [(2, 3, 4, 6)]),
    ("max_pool1d", lambda F, T, x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), [(2, 3, 10)]),
    ("max_pool1d_unbatched_dilation", lambda F, T, x: F.max_pool1d(x, 2, dilation=3), [(3, 10)]),
    ("avg_pool1d", lambda F, T, x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     [(2, 3, 10)]),
    ("adaptive_avg_pool1d", lambda F, T, x: F.adaptive_avg_pool1d(x, 4), [(2, 3, 10)]),
    ("max_pool2d", lambda F, T, x: F.max_pool2d(x, 3), [(2, 3, 7, 9)]),
    ("max_pool2d_stride_pad_ceil", lambda F, T, x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [(2, 3, 7, 9)]),
    ("max_pool2d_dilation", lambda F, T, x: F.max_pool2d(x, (2, 3), (1, 2), (1, 0), dilation=(2, 1)),
     [(2, 3, 7, 9)]),
    ("max_pool2d_unbatched_ceil", lambda F, T, x: F.max_pool2d(x, 2, ceil_mode=True), [(3, 7, 9)]),
    ("avg_pool2d", lambda F, T, x: F.avg_pool2d(x, 3), [(2, 3, 7, 9)]),
    ("avg_pool2d_pad", lambda F, T, x: F.avg_pool2d(x, 3, 2, 1), [(2, 3, 7, 9)]),
    ("avg_pool2d_exclude_pad_ceil", lambda F, T, x: F.avg_pool2d(
        x, (3, 2), 2, 1, ceil_mode=True, count_include_pad=False), [(2, 3, 7, 9)]),
    ("avg_pool2d_ceil", lambda F, T, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [(3, 7, 9)]),
    ("avg_pool2d_divisor", lambda F, T, x: F.avg_pool2d(x, 2, divisor_override=3), [(2, 3, 7, 9)]),
    ("adaptive_avg_pool2d", lambda F, T, x: F.adaptive_avg_pool2d(x, (3, 4)), [(2, 3, 7, 9)]),
    ("adaptive_avg_pool2d_int", lambda F, T, x: F.adaptive_avg_pool2d(x, 1), [(3, 7, 9)]),
    ("adaptive_avg_pool2d_none_up", lambda F, T, x: F.adaptive_avg_pool2d(x, (None, 11)), [(2, 3, 7, 9)]),
    ("pad_constant", lambda F, T, x: F.pad(x, (1, 2, 0, 3)), [(2, 3, 4, 5)]),
    ("pad_constant_value_crop", lambda F, T, x: F.pad(x, (-1, 2, 2, -2, 1, 0), value=1.5), [(2, 3, 4, 5)]),
    ("pad_constant_all_dims", lambda F, T, x: F.pad(x, (1, 1, 2, 0, 0, 1)), [(3, 4, 5)]),
    ("pad_reflect_1d", lambda F, T, x: F.pad(x, (2, 3), mode="reflect"), [(2, 3, 5)]),
    ("pad_reflect_2d", lambda F, T, x: F.pad(x, (1, 2, 3, 1), mode="reflect"), [(2, 3, 4, 5)]),
    ("pad_reflect_3d_crop", lambda F, T, x: F.pad(x, (1, -1, 2, 0, 1, 1), mode="reflect"), [(1, 2, 3, 4, 5)]),
    ("pad_replicate", lambda F, T, x: F.pad(x, (3, 1, 0, 4), mode="replicate"), [(3, 4, 5)]),
    ("pad_replicate_crop", lambda F, T, x: F.pad(x, (-1, 3), mode="replicate"), [(3, 5)]),
    ("pad_circular", lambda F, T, x: F.pad(x, (2, 3, 1, 4), mode="circular"), [(2, 3, 4, 5)]),
    ("pad_circular_crop", lambda F, T, x: F.pad(x, (-1, 2, 2, -1), mode="circular"), [(2, 3, 4, 5)]),
    ("interpolate_nearest_size", lambda F, T, x: F.interpolate(x, size=(7, 3)), [(2, 3, 4, 5)]),
    ("interpolate_nearest_scale", lambda F, T, x: F.interpolate(x, scale_factor=1.7), [(2, 3, 4, 5)]),
    ("interpolate_nearest_recompute", lambda F, T, x: F.interpolate(
        x, scale_factor=(1.7, 0.6), recompute_scale_factor=True), [(2, 3, 4, 5)]),
    ("interpolate_nearest_1d", lambda F, T, x: F.interpolate(x, scale_factor=2), [(2, 3, 5)]),
    ("interpolate_nearest_exact", lambda F, T, x: F.interpolate(x, size=(6, 4), mode="nearest-exact"),
     [(2, 3, 4, 5)]),
    ("interpolate_bilinear_size", lambda F, T, x: F.interpolate(x, size=(7, 3), mode="bilinear"),
     [(2, 3, 4, 5)]),
    ("interpolate_bilinear_scale", lambda F, T, x: F.interpolate(x, scale_factor=(2.5, 1.3), mode="bilinear"),
     [(2, 3, 4, 5)]),
    ("interpolate_bilinear_align", lambda F, T, x: F.interpolate(
        x, scale_factor=2.3, mode="bilinear", align_corners=True), [(2, 3, 4, 5)]),
    ("interpolate_bilinear_down", lambda F, T, x: F.interpolate(x, size=(3, 2), mode="bilinear"),
     [(2, 3, 7, 9)]),
    ("interpolate_bicubic", lambda F, T, x: F.interpolate(x, scale_factor=1.5, mode="bicubic"),
     [(2, 3, 4, 5)]),
    ("interpolate_bicubic_align", lambda F, T, x: F.interpolate(
        x, size=(5, 9), mode="bicubic", align_corners=True), [(1, 2, 4, 5)]),
    ("interpolate_bilinear_antialias_down", lambda F, T, x: F.interpolate(
        x, size=(3, 2), mode="bilinear", antialias=True), [(2, 3, 7, 9)]),
    ("interpolate_bicubic_antialias", lambda F, T, x: F.interpolate(
        x, scale_factor=(0.4, 1.5), mode="bicubic", antialias=True), [(2, 3, 8, 5)]),
    ("interpolate_bilinear_antialias_align", lambda F, T, x: F.interpolate(
        x, size=(4, 3), mode="bilinear", antialias=True, align_corners=True), [(1, 2, 9, 7)]),
    ("interpolate_linear", lambda F, T, x: F.interpolate(x, size=8, mode="linear"), [(2, 3, 5)]),
    ("interpolate_trilinear", lambda F, T, x: F.interpolate(x, scale_factor=1.5, mode="trilinear"),
     [(1, 2, 3, 4, 5)]),
    ("interpolate_area", lambda F, T, x: F.interpolate(x, size=(3, 4), mode="area"), [(2, 3, 7, 9)]),
    ("sdpa", lambda F, T, q, k, v: F.scaled_dot_product_attention(q, k, v),
     [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)]),
    ("sdpa_causal_scale", lambda F, T, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
     [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)]),
    ("sdpa_bool_mask", lambda F, T, q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=T(BOOL_MASK)),
     [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)]),
    ("sdpa_float_mask", lambda F, T, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
     [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), (2, 1, 4, 5)]),
    ("sdpa_3d", lambda F, T, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [(3, 5, 8), (3, 5, 8), (3, 5, 4)]),
    ("sdpa_gqa", lambda F, T, q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
     [(2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 6)]),
    ("batch_norm_train", lambda F, T, x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-3),
     [(4, 3, 5, 2), (3,), (3,)]),
    ("batch_norm_train_2d", lambda F, T, x: F.batch_norm(x, None, None, training=True), [(5, 3)]),
    ("batch_norm_eval", lambda F, T, x, w, b: F.batch_norm(
        x, T(np.array([0.1, -0.2, 0.3])), T(np.array([1.5, 0.5, 2.0])), w, b), [(4, 3, 5), (3,), (3,)]),
    ("group_norm", lambda F, T, x, w, b: F.group_norm(x, 2, w, b), [(4, 6, 5), (6,), (6,)]),
    ("group_norm_4d", lambda F, T, x, w, b: F.group_norm(x, 3, w, b, eps=1e-3), [(2, 6, 3, 4), (6,), (6,)]),
    ("group_norm_plain", lambda F, T, x: F.group_norm(x, 1), [(3, 4, 5)]),
]


def _run(call, arrays, lib, device, dtype):
    """(output, gradients of the inputs) of one call under the upstream gradient sum(out * g)."""
    if lib == "torch":
        tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = call(TF, lambda a: torch.tensor(a.astype(dtype) if a.dtype.kind == "f" else a), *tensors)
        up = torch.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(dtype))
        (out * up).sum().backward()
        return out.detach().numpy(), [t.grad.numpy() for t in tensors]
    tensors = [vkt.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = call(F, lambda a: vkt.tensor(a.astype(dtype) if a.dtype.kind == "f" else a, device=device), *tensors)
    up = vkt.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(dtype), device=device)
    (out * up).sum().backward()
    return to_numpy(out), [to_numpy(t.grad) for t in tensors]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(c))
@pytest.mark.parametrize("name,call,shapes", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, call, shapes, config, request):
    device, dtype = config
    if device == "vulkan":
        request.getfixturevalue("dev")
        vkt.vulkan.reset_fallback_stats()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ref, ref_grads = _run(call, arrays, "torch", device, dtype)
    got, grads = _run(call, arrays, "vkt", device, dtype)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, "an op fell back to the CPU"
    tol = TOL[dtype]
    assert_close(got, ref, rtol=tol, atol=tol)
    for g, r in zip(grads, ref_grads):
        assert_close(g, r, rtol=tol, atol=tol)


@pytest.mark.parametrize("call", [
    lambda F, x: F.conv2d(x, x.new_zeros((4, 3, 3, 3)), padding=1),
    lambda F, x: F.conv_transpose2d(x, x.new_zeros((3, 2, 3, 3)), stride=2),
    lambda F, x: F.max_pool2d(x, 2),
    lambda F, x: F.avg_pool2d(x, 3, padding=1),
    lambda F, x: F.adaptive_avg_pool2d(x, 2),
    lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    lambda F, x: F.group_norm(x, 3),
])
def test_empty_batch(device, call):
    got = call(F, vkt.zeros(0, 3, 5, 5, device=device))
    assert got.shape == tuple(call(TF, torch.zeros(0, 3, 5, 5)).shape)


def test_dtype_follows_input(device):
    x = vkt.zeros(1, 2, 5, 5, device=device)
    w = vkt.zeros(3, 2, 3, 3, device=device)
    assert F.conv2d(x, w).dtype == vkt.float32
    assert F.max_pool2d(x, 2, return_indices=True)[1].dtype == vkt.int64
    assert F.interpolate(x, scale_factor=2, mode="bilinear").dtype == vkt.float32


@pytest.mark.parametrize("args", [
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), dilation=(2, 1)),
    dict(kernel_size=2),
])
def test_max_pool2d_indices_and_ties(device, args):
    """Integer-valued inputs tie inside windows: values, indices and the gradient all go to the first
    maximum, as PyTorch's."""
    x = np.random.default_rng(3).integers(0, 3, (2, 3, 7, 9)).astype(np.float32)
    xv = vkt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    got, got_idx = F.max_pool2d(xv, return_indices=True, **args)
    ref, ref_idx = TF.max_pool2d(xt, return_indices=True, **args)
    got.sum().backward()
    ref.sum().backward()
    assert_close(got, ref.detach().numpy())
    assert np.array_equal(to_numpy(got_idx), ref_idx.numpy())
    assert_close(xv.grad, xt.grad.numpy())


@pytest.mark.parametrize("momentum", [0.1, 0.5])
def test_batch_norm_running_stats(device, momentum):
    x = np.random.default_rng(4).standard_normal((6, 3, 4)).astype(np.float32)
    rm, rv = np.array([0.5, -1.0, 0.0], np.float32), np.array([1.0, 2.0, 0.5], np.float32)
    vm, vv = vkt.tensor(rm, device=device), vkt.tensor(rv, device=device)
    tm, tv = torch.tensor(rm), torch.tensor(rv)
    xv = vkt.tensor(x, device=device, requires_grad=True)
    out = F.batch_norm(xv, vm, vv, training=True, momentum=momentum)
    ref = TF.batch_norm(torch.tensor(x), tm, tv, training=True, momentum=momentum)
    assert_close(out.detach(), ref.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(vm, tm.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(vv, tv.numpy(), rtol=1e-5, atol=1e-6)
    assert not vm.requires_grad and not vv.requires_grad
    evaluated = F.batch_norm(xv, vm, vv, training=False)
    assert_close(evaluated.detach(), TF.batch_norm(torch.tensor(x), tm, tv).numpy(), rtol=1e-5, atol=1e-5)


def test_sdpa_broadcast_mask_and_dropout(device):
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)))
    mask = rng.random((2, 1, 4, 6)) > 0.5
    got = F.scaled_dot_product_attention(*(vkt.tensor(a, device=device) for a in (q, k, v)),
                                         attn_mask=vkt.tensor(mask, device=device))
    ref = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(mask))
    assert_close(got, ref.numpy(), rtol=1e-5, atol=1e-5)
    ones = vkt.ones(1, 1, 64, 64, device=device)
    # each output is the kept attention weights' sum, scaled by 1/(1-p): 1 on average
    dropped = F.scaled_dot_product_attention(ones, ones, ones, dropout_p=0.5)
    assert abs(float(dropped.mean().item()) - 1.0) < 0.1
    assert float(F.scaled_dot_product_attention(ones, ones, ones, dropout_p=1.0).abs().sum().item()) == 0.0


def _raises(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e), str(e)
    return None, None


def _t(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


# (id, call(F, T)): T builds the library's tensor from a NumPy array; both libraries must raise the
# same exception type with the same message.
ERRORS = [
    ("conv2d_input_dims", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5, 5)), T(_t(4, 3, 3, 3)))),
    ("conv2d_weight_dims", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3)))),
    ("conv2d_channels", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 2, 3, 3)))),
    ("conv2d_channels_unbatched", lambda F, T: F.conv2d(T(_t(2, 3, 5)), T(_t(4, 3, 3, 3)))),
    ("conv2d_groups_divide", lambda F, T: F.conv2d(T(_t(2, 4, 5, 5)), T(_t(3, 2, 3, 3)), groups=2)),
    ("conv2d_groups_channels", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), groups=2)),
    ("conv2d_kernel_too_big", lambda F, T: F.conv2d(T(_t(2, 3, 2, 2)), T(_t(4, 3, 3, 3)))),
    ("conv2d_same_strided", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), stride=2, padding="same")),
    ("conv2d_bad_padding_string", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), padding="foo")),
    ("conv2d_zero_stride", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), stride=0)),
    ("conv2d_negative_padding", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), padding=-1)),
    ("conv2d_bias_size", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), T(_t(3)))),
    ("conv2d_zero_groups", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), groups=0)),
    ("conv2d_zero_dilation", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), dilation=0)),
    ("conv2d_stride_length", lambda F, T: F.conv2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)), stride=(1, 2, 3))),
    ("conv1d_input_dims", lambda F, T: F.conv1d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3)))),
    ("conv1d_channels", lambda F, T: F.conv1d(T(_t(2, 3, 5)), T(_t(4, 2, 3)))),
    ("conv_transpose2d_channels", lambda F, T: F.conv_transpose2d(T(_t(2, 3, 5, 5)), T(_t(4, 3, 3, 3)))),
    ("conv_transpose2d_output_padding", lambda F, T: F.conv_transpose2d(
        T(_t(2, 3, 5, 5)), T(_t(3, 3, 3, 3)), stride=2, output_padding=2)),
    ("conv_transpose2d_groups", lambda F, T: F.conv_transpose2d(T(_t(2, 4, 5, 5)), T(_t(4, 3, 3, 3)), groups=3)),
    ("unfold_kernel_length", lambda F, T: F.unfold(T(_t(2, 3, 5, 5)), (2, 2, 2))),
    ("unfold_zero_stride", lambda F, T: F.unfold(T(_t(2, 3, 5, 5)), 2, stride=0)),
    ("unfold_negative_padding", lambda F, T: F.unfold(T(_t(2, 3, 5, 5)), 2, padding=-1)),
    ("unfold_zero_dilation", lambda F, T: F.unfold(T(_t(2, 3, 5, 5)), 2, dilation=0)),
    ("unfold_no_blocks", lambda F, T: F.unfold(T(_t(2, 3, 5, 5)), 6)),
    ("fold_output_length", lambda F, T: F.fold(T(_t(2, 12, 16)), (5, 5, 5), 2)),
    ("fold_channels", lambda F, T: F.fold(T(_t(2, 13, 16)), (5, 5), 2)),
    ("fold_blocks", lambda F, T: F.fold(T(_t(2, 12, 15)), (5, 5), 2)),
    ("fold_input_dims", lambda F, T: F.fold(T(_t(2, 2, 12, 16)), (5, 5), 2)),
    ("pixel_shuffle_channels", lambda F, T: F.pixel_shuffle(T(_t(2, 5, 3, 3)), 2)),
    ("pixel_shuffle_dims", lambda F, T: F.pixel_shuffle(T(_t(5, 3)), 2)),
    ("pixel_unshuffle_height", lambda F, T: F.pixel_unshuffle(T(_t(2, 5, 3, 4)), 2)),
    ("pixel_unshuffle_width", lambda F, T: F.pixel_unshuffle(T(_t(2, 5, 4, 3)), 2)),
    ("max_pool1d_dims", lambda F, T: F.max_pool1d(T(_t(5)), 2)),
    ("max_pool1d_kernel_length", lambda F, T: F.max_pool1d(T(_t(2, 3, 5)), (2, 2))),
    ("max_pool1d_big_pad", lambda F, T: F.max_pool1d(T(_t(2, 3, 5)), 2, padding=2)),
    ("max_pool1d_too_small", lambda F, T: F.max_pool1d(T(_t(2, 3, 1)), 2)),
    ("max_pool1d_zero_stride", lambda F, T: F.max_pool1d(T(_t(2, 3, 5)), 2, stride=0)),
    ("max_pool1d_zero_dilation", lambda F, T: F.max_pool1d(T(_t(2, 3, 5)), 2, dilation=0)),
    ("avg_pool1d_dims", lambda F, T: F.avg_pool1d(T(_t(5)), 2)),
    ("avg_pool1d_kernel_length", lambda F, T: F.avg_pool1d(T(_t(2, 3, 5)), (2, 3))),
    ("avg_pool1d_big_pad", lambda F, T: F.avg_pool1d(T(_t(2, 3, 5)), 2, padding=2)),
    ("avg_pool1d_too_small", lambda F, T: F.avg_pool1d(T(_t(2, 3, 1)), 2)),
    ("avg_pool1d_zero_stride", lambda F, T: F.avg_pool1d(T(_t(2, 3, 5)), 2, stride=0)),
    ("adaptive_avg_pool1d_dims", lambda F, T: F.adaptive_avg_pool1d(T(_t(5)), 2)),
    ("adaptive_avg_pool1d_output_length", lambda F, T: F.adaptive_avg_pool1d(T(_t(2, 3, 5)), (2, 2))),
    ("max_pool2d_big_pad", lambda F, T: F.max_pool2d(T(_t(2, 3, 5, 5)), 3, padding=2)),
    ("avg_pool2d_big_pad", lambda F, T: F.avg_pool2d(T(_t(2, 3, 5, 5)), 3, padding=2)),
    ("max_pool2d_too_small", lambda F, T: F.max_pool2d(T(_t(2, 3, 2, 2)), 3)),
    ("avg_pool2d_too_small", lambda F, T: F.avg_pool2d(T(_t(2, 3, 2, 2)), 3)),
    ("max_pool2d_kernel_length", lambda F, T: F.max_pool2d(T(_t(2, 3, 5, 5)), (1, 2, 3))),
    ("avg_pool2d_kernel_length", lambda F, T: F.avg_pool2d(T(_t(2, 3, 5, 5)), (1, 2, 3))),
    ("max_pool2d_2d_input", lambda F, T: F.max_pool2d(T(_t(3, 5)), 2)),
    ("avg_pool2d_2d_input", lambda F, T: F.avg_pool2d(T(_t(3, 5)), 2)),
    ("max_pool2d_zero_stride", lambda F, T: F.max_pool2d(T(_t(2, 3, 5, 5)), 2, stride=0)),
    ("max_pool2d_zero_dilation", lambda F, T: F.max_pool2d(T(_t(2, 3, 5, 5)), 2, dilation=0)),
    ("avg_pool2d_zero_divisor", lambda F, T: F.avg_pool2d(T(_t(2, 3, 5, 5)), 2, divisor_override=0)),
    ("adaptive_output_length", lambda F, T: F.adaptive_avg_pool2d(T(_t(2, 3, 5, 5)), (1, 2, 3))),
    ("adaptive_input_dims", lambda F, T: F.adaptive_avg_pool2d(T(_t(5, 5)), 2)),
    ("pad_odd_length", lambda F, T: F.pad(T(_t(2, 3)), (1, 2, 3))),
    ("pad_too_long", lambda F, T: F.pad(T(_t(2, 3)), (1, 1, 1, 1, 1, 1))),
    ("pad_reflect_1d_input", lambda F, T: F.pad(T(_t(3)), (1, 1), mode="reflect")),
    ("pad_reflect_too_big", lambda F, T: F.pad(T(_t(1, 2, 3)), (3, 3), mode="reflect")),
    ("pad_circular_wraps", lambda F, T: F.pad(T(_t(1, 2, 3)), (4, 3), mode="circular")),
    ("pad_replicate_dims", lambda F, T: F.pad(T(_t(1, 2, 3)), (1, 1, 1, 1, 1, 1), mode="replicate")),
    ("pad_bad_mode", lambda F, T: F.pad(T(_t(1, 2, 3)), (1, 1), mode="foo")),
    ("pad_zeros_mode", lambda F, T: F.pad(T(_t(1, 2, 3)), (1, 1), mode="zeros")),
    ("pad_reflect_value", lambda F, T: F.pad(T(_t(1, 2, 3)), (1, 1), mode="reflect", value=1.0)),
    ("pad_crop_too_much", lambda F, T: F.pad(T(_t(1, 2, 3)), (-2, -2))),
    ("pad_reflect_empty", lambda F, T: F.pad(T(_t(1, 2, 0)), (1, 1), mode="reflect")),
    ("interpolate_no_size", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)))),
    ("interpolate_both", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), size=3, scale_factor=2)),
    ("interpolate_size_length", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), size=(3, 4, 5))),
    ("interpolate_scale_length", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), scale_factor=(3, 4, 5))),
    ("interpolate_nearest_align", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), size=3, align_corners=True)),
    ("interpolate_bilinear_3d", lambda F, T: F.interpolate(T(_t(1, 2, 3)), size=3, mode="bilinear")),
    ("interpolate_linear_4d", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), size=3, mode="linear")),
    ("interpolate_2d_input", lambda F, T: F.interpolate(T(_t(2, 3)), size=3)),
    ("interpolate_bad_mode", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), size=3, mode="foo")),
    ("interpolate_zero_size", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), size=0)),
    ("interpolate_zero_scaled", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), scale_factor=0.1)),
    ("interpolate_antialias_nearest", lambda F, T: F.interpolate(T(_t(1, 2, 3, 4)), size=3, antialias=True)),
    ("interpolate_antialias_3d", lambda F, T: F.interpolate(T(_t(1, 2, 3)), size=3, mode="bilinear",
                                                            antialias=True)),
    ("interpolate_recompute_size", lambda F, T: F.interpolate(
        T(_t(1, 2, 3, 4)), size=3, recompute_scale_factor=True)),
    ("sdpa_mask_and_causal", lambda F, T: F.scaled_dot_product_attention(
        T(_t(1, 4, 8)), T(_t(1, 5, 8)), T(_t(1, 5, 3)), attn_mask=T(_t(4, 5)), is_causal=True)),
    ("sdpa_gqa_heads", lambda F, T: F.scaled_dot_product_attention(
        T(_t(2, 3, 4, 8)), T(_t(2, 2, 5, 8)), T(_t(2, 2, 5, 6)), enable_gqa=True)),
    ("sdpa_1d", lambda F, T: F.scaled_dot_product_attention(T(_t(8)), T(_t(8)), T(_t(8)))),
    ("batch_norm_one_value", lambda F, T: F.batch_norm(T(_t(1, 3)), None, None, training=True)),
    ("batch_norm_eval_no_stats", lambda F, T: F.batch_norm(T(_t(4, 3)), None, None, training=False)),
    ("batch_norm_stats_size", lambda F, T: F.batch_norm(T(_t(4, 3)), T(_t(4)), T(_t(4)), training=False)),
    ("batch_norm_weight_size", lambda F, T: F.batch_norm(T(_t(4, 3)), T(_t(3)), T(_t(3)), weight=T(_t(4)))),
    ("group_norm_groups", lambda F, T: F.group_norm(T(_t(2, 5, 3)), 2)),
    ("group_norm_weight", lambda F, T: F.group_norm(T(_t(2, 4, 3)), 2, weight=T(_t(3)))),
    ("group_norm_1d", lambda F, T: F.group_norm(T(_t(4)), 2)),
    ("pad_float", lambda F, T: F.pad(T(_t(1, 1, 4)), (1.5, 1), "reflect")),
    ("pad_bool", lambda F, T: F.pad(T(_t(1, 1, 4)), (True, 1))),
    ("pad_reflect_nothing_left", lambda F, T: F.pad(T(_t(1, 1, 4)), (-3, -1), "reflect")),
    ("pad_replicate_nothing_left", lambda F, T: F.pad(T(_t(1, 1, 4)), (-2, -2), "replicate")),
    ("pad_reflect_2d_nothing_left", lambda F, T: F.pad(T(_t(1, 4, 4)), (-2, -2, -2, -2), "reflect")),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, call, device):
    ref_type, ref_message = _raises(lambda: call(TF, torch.tensor))
    assert ref_type is not None, "torch accepted the call"
    got_type, got_message = _raises(lambda: call(F, lambda a: vkt.tensor(a, device=device)))
    assert (got_type, got_message) == (ref_type, ref_message.replace("torch.Size(", "vkt.Size("))


def test_conv_dtype_mismatch(device):
    x = vkt.zeros(1, 2, 5, 5, device=device)
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(x, vkt.zeros(3, 2, 3, 3, device=device, dtype=vkt.float64))


# Second derivatives: every function is composed of differentiable ops, so create_graph works through it.
GRADGRAD = [
    ("conv2d", lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=2), [(1, 2, 4, 5), (2, 1, 3, 3)]),
    ("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1), [(1, 2, 3, 3), (2, 1, 2, 3)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2, 1, 1), [(1, 1, 3, 4)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(1, 1, 4, 5)]),
    ("interpolate", lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic"), [(1, 1, 3, 4)]),
    ("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [(1, 3, 4), (1, 3, 4), (1, 3, 2)]),
    ("batch_norm", lambda x: F.batch_norm(x, None, None, training=True), [(3, 2, 2)]),
    ("group_norm", lambda x, w: F.group_norm(x, 2, w), [(2, 4, 3), (4,)]),
]


@pytest.mark.parametrize("name,call,shapes", GRADGRAD, ids=[g[0] for g in GRADGRAD])
def test_gradgradcheck(name, call, shapes):
    rng = np.random.default_rng(6)
    inputs = [vkt.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert vkt.autograd.gradgradcheck(call, inputs)
