# vkt's 3-D convolutions and pools, the 1-D and 3-D transposed convolutions, max_unpool and lp_pool against
# torch 2.13 on the cpu and vulkan devices in float32: functional calls and modules (torch's state dict
# loaded into vkt's), forward values and the gradients of input, weight and bias; then indices, reprs,
# state-dict keys, initialisation bounds and error parity (type and message).
import math

import numpy as np
import pytest

import vkt
import vkt.nn.functional as F
from conftest import assert_close, normalized, to_numpy

torch = pytest.importorskip("torch")
from test_nn_spatial import _raises  # noqa: E402  (the same comparison as the 1-D and 2-D tests)

TF = torch.nn.functional
RTOL, ATOL = 1e-4, 1e-5
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")


def _pool_unpool(F, x, kernel, stride=None, padding=0, output_size=None, dims=2):
    """max_pool then max_unpool with its indices: the gradient reaches x through both."""
    pool, unpool = getattr(F, f"max_pool{dims}d"), getattr(F, f"max_unpool{dims}d")
    values, indices = pool(x, kernel, stride, padding, return_indices=True)
    return unpool(values, indices, kernel, stride, padding, output_size)


# (id, call(F, *inputs), input shapes): F is torch.nn.functional or vkt.nn.functional.
CASES = [
    ("conv3d", lambda F, x, w, b: F.conv3d(x, w, b), [(1, 2, 4, 5, 6), (3, 2, 3, 3, 3), (3,)]),
    ("conv3d_stride_pad", lambda F, x, w, b: F.conv3d(x, w, b, stride=(1, 2, 2), padding=(1, 0, 2)),
     [(2, 2, 4, 5, 6), (3, 2, 3, 3, 3), (3,)]),
    ("conv3d_dilation_groups", lambda F, x, w: F.conv3d(x, w, padding=1, dilation=(1, 2, 2), groups=2),
     [(1, 4, 4, 5, 6), (4, 2, 2, 3, 2)]),
    ("conv3d_same", lambda F, x, w, b: F.conv3d(x, w, b, padding="same", dilation=(2, 1, 1)),
     [(1, 2, 4, 5, 6), (3, 2, 2, 3, 4), (3,)]),
    ("conv3d_valid_unbatched", lambda F, x, w, b: F.conv3d(x, w, b, stride=2, padding="valid"),
     [(2, 4, 5, 6), (3, 2, 3, 3, 3), (3,)]),
    ("conv3d_1x1x1", lambda F, x, w: F.conv3d(x, w), [(1, 3, 2, 3, 4), (2, 3, 1, 1, 1)]),
    ("conv_transpose1d", lambda F, x, w, b: F.conv_transpose1d(x, w, b), [(2, 3, 6), (3, 2, 3), (2,)]),
    ("conv_transpose1d_stride_outpad", lambda F, x, w, b: F.conv_transpose1d(
        x, w, b, stride=3, padding=1, output_padding=2, dilation=2), [(2, 3, 6), (3, 2, 3), (2,)]),
    ("conv_transpose1d_groups_unbatched", lambda F, x, w: F.conv_transpose1d(x, w, stride=2, groups=2),
     [(4, 5), (4, 3, 3)]),
    ("conv_transpose3d", lambda F, x, w, b: F.conv_transpose3d(x, w, b), [(1, 2, 3, 4, 3), (2, 3, 3, 3, 3), (3,)]),
    ("conv_transpose3d_stride_pad_outpad", lambda F, x, w, b: F.conv_transpose3d(
        x, w, b, stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0)),
     [(2, 2, 3, 4, 3), (2, 3, 3, 3, 2), (3,)]),
    ("conv_transpose3d_groups_dilation_unbatched", lambda F, x, w: F.conv_transpose3d(
        x, w, stride=2, output_padding=(0, 1, 1), groups=2, dilation=(1, 2, 2)), [(4, 2, 3, 3), (4, 1, 2, 2, 2)]),
    ("max_pool3d", lambda F, x: F.max_pool3d(x, 2), [(1, 2, 4, 5, 6)]),
    ("max_pool3d_stride_pad_ceil", lambda F, x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True), [(2, 2, 4, 5, 6)]),
    ("max_pool3d_dilation_unbatched", lambda F, x: F.max_pool3d(x, (2, 2, 3), (1, 2, 1), (1, 0, 1), dilation=2),
     [(2, 4, 5, 6)]),
    ("avg_pool3d", lambda F, x: F.avg_pool3d(x, 2), [(1, 2, 4, 5, 6)]),
    ("avg_pool3d_pad_ceil", lambda F, x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True), [(2, 2, 4, 5, 6)]),
    ("avg_pool3d_exclude_pad", lambda F, x: F.avg_pool3d(x, (2, 3, 3), (1, 2, 2), (1, 1, 0), ceil_mode=True,
                                                         count_include_pad=False), [(1, 2, 4, 5, 6)]),
    ("avg_pool3d_divisor_unbatched", lambda F, x: F.avg_pool3d(x, 2, 1, divisor_override=5), [(2, 4, 5, 6)]),
    ("adaptive_avg_pool3d", lambda F, x: F.adaptive_avg_pool3d(x, (2, 3, 4)), [(1, 2, 4, 5, 6)]),
    ("adaptive_avg_pool3d_int_unbatched", lambda F, x: F.adaptive_avg_pool3d(x, 3), [(2, 4, 5, 6)]),
    ("adaptive_avg_pool3d_none_up", lambda F, x: F.adaptive_avg_pool3d(x, (None, 7, 2)), [(1, 2, 4, 5, 6)]),
    ("max_unpool1d", lambda F, x: _pool_unpool(F, x, 2, dims=1), [(2, 3, 8)]),
    ("max_unpool1d_output_size", lambda F, x: _pool_unpool(F, x, 3, 2, 1, output_size=(9,), dims=1), [(2, 3, 9)]),
    ("max_unpool2d", lambda F, x: _pool_unpool(F, x, 2), [(2, 3, 4, 6)]),
    ("max_unpool2d_stride_pad_unbatched", lambda F, x: _pool_unpool(F, x, 3, 2, 1, output_size=[5, 7]),
     [(3, 5, 7)]),
    ("lp_pool1d", lambda F, x: F.lp_pool1d(x, 2, 3, 2, ceil_mode=True), [(2, 3, 8)]),
    ("lp_pool2d", lambda F, x: F.lp_pool2d(x.abs() + 0.5, 3, (2, 3)), [(2, 3, 4, 6)]),
    ("lp_pool2d_inf", lambda F, x: F.lp_pool2d(x, float("inf"), 2, 1), [(3, 4, 5)]),
    ("lp_pool3d", lambda F, x: F.lp_pool3d(x, 2, 2, ceil_mode=True), [(1, 2, 3, 5, 5)]),
]


def _run(call, arrays, lib, device):
    """(output, gradients of the inputs) of one call under the upstream gradient sum(out * g)."""
    make = (lambda a: torch.tensor(a, requires_grad=True)) if lib is TF else (
        lambda a: vkt.tensor(a, device=device, requires_grad=True))
    tensors = [make(a) for a in arrays]
    out = call(lib, *tensors)
    up = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * (torch.tensor(up) if lib is TF else vkt.tensor(up, device=device))).sum().backward()
    if lib is TF:
        return out.detach().numpy(), [t.grad.numpy() for t in tensors]
    return to_numpy(out.detach()), [to_numpy(t.grad) for t in tensors]


def _no_fallback(device):
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, "an op fell back to the CPU"


@pytest.mark.parametrize("name,call,shapes", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, call, shapes, device):
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ref, ref_grads = _run(call, arrays, TF, device)
    got, grads = _run(call, arrays, F, device)
    _no_fallback(device)
    assert_close(got, ref, rtol=RTOL, atol=ATOL)
    for g, r in zip(grads, ref_grads):
        assert_close(g, r, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("args", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                  dict(kernel_size=(2, 2, 3), stride=(1, 2, 1), padding=(1, 0, 1), dilation=2)])
def test_max_pool3d_ties(device, args):
    """Integer-valued inputs tie inside windows: values, indices and the gradient all go to the window's
    first maximum, as PyTorch's."""
    x = np.random.default_rng(3).integers(0, 3, (2, 2, 4, 5, 6)).astype(np.float32)
    results = []
    for lib, xs in ((F, vkt.tensor(x, device=device, requires_grad=True)), (TF, torch.tensor(x, requires_grad=True))):
        values, indices = lib.max_pool3d(xs, return_indices=True, **args)
        values.sum().backward()
        results.append([to_numpy(v.detach()) if lib is F else v.detach().numpy() for v in (values, indices, xs.grad)])
    for got, ref in zip(*results):
        assert np.array_equal(got, ref)


# (id, make(nn), input shapes, call(module, *inputs) or None)
MODULES = [
    ("conv3d", lambda nn: nn.Conv3d(4, 6, 3, stride=(1, 2, 1), padding=1, groups=2), [(1, 4, 4, 5, 6)], None),
    ("conv3d_same_reflect", lambda nn: nn.Conv3d(2, 3, (2, 3, 3), padding="same", padding_mode="reflect"),
     [(1, 2, 4, 5, 6)], None),
    ("conv3d_replicate_nobias", lambda nn: nn.Conv3d(2, 3, 3, padding=(1, 2, 1), padding_mode="replicate",
                                                     bias=False), [(1, 2, 4, 5, 6)], None),
    ("conv3d_circular_unbatched", lambda nn: nn.Conv3d(2, 3, 3, padding=1, padding_mode="circular",
                                                       dilation=(1, 1, 2)), [(2, 4, 5, 6)], None),
    ("conv_transpose1d", lambda nn: nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
     [(2, 4, 6)], None),
    ("conv_transpose1d_output_size", lambda nn: nn.ConvTranspose1d(3, 2, 3, stride=3, dilation=2),
     [(2, 3, 5)], lambda m, x: m(x, output_size=[2, 2, 19])),
    ("conv_transpose3d", lambda nn: nn.ConvTranspose3d(2, 4, (2, 3, 3), stride=2, padding=1, groups=2),
     [(1, 2, 3, 4, 3)], None),
    ("conv_transpose3d_output_size_unbatched", lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2, bias=False),
     [(2, 3, 4, 3)], lambda m, x: m(x, output_size=(7, 9, 6))),
    ("max_pool3d", lambda nn: nn.MaxPool3d(3, 2, 1, ceil_mode=True), [(1, 2, 4, 5, 6)], None),
    ("max_pool3d_indices", lambda nn: nn.MaxPool3d(2, return_indices=True), [(2, 4, 5, 6)], lambda m, x: m(x)[0]),
    ("avg_pool3d", lambda nn: nn.AvgPool3d((2, 3, 3), 2, 1, count_include_pad=False), [(1, 2, 4, 5, 6)], None),
    ("avg_pool3d_divisor", lambda nn: nn.AvgPool3d(2, divisor_override=3), [(1, 2, 4, 5, 6)], None),
    ("adaptive_avg_pool3d", lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)), [(1, 2, 4, 5, 6)], None),
    ("max_unpool2d", lambda nn: nn.MaxUnpool2d(2), [(2, 3, 4, 6)],
     lambda m, x: m(*_pool_unpool_inputs(m, x, 2), output_size=(4, 7))),
    ("max_unpool1d", lambda nn: nn.MaxUnpool1d(3, 2, 1), [(2, 3, 9)],
     lambda m, x: m(*_pool_unpool_inputs(m, x, 1), output_size=(2, 3, 9))),
    ("lp_pool1d", lambda nn: nn.LPPool1d(2, 3, 2), [(2, 3, 8)], None),
    ("lp_pool2d", lambda nn: nn.LPPool2d(1.5, (2, 3), ceil_mode=True), [(2, 3, 4, 7)],
     lambda m, x: m(x.abs() + 0.5)),
    ("lp_pool3d", lambda nn: nn.LPPool3d(2, 2), [(1, 2, 4, 5, 6)], None),
]


def _pool_unpool_inputs(unpool, x, dims):
    """The (values, indices) of the max_pool the MaxUnpool module inverts."""
    lib = TF if isinstance(unpool, torch.nn.Module) else F
    return getattr(lib, f"max_pool{dims}d")(x, unpool.kernel_size, unpool.stride, unpool.padding,
                                            return_indices=True)


def _run_module(module, call, arrays, tensor):
    inputs = [tensor(a) for a in arrays]
    out = module(*inputs) if call is None else call(module, *inputs)
    up = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * tensor(up).detach()).sum().backward()
    return out, [x.grad for x in inputs], {name: p.grad for name, p in module.named_parameters()}


@pytest.mark.parametrize("name,make,shapes,call", MODULES, ids=[c[0] for c in MODULES])
def test_modules_match_torch(name, make, shapes, call, device):
    torch.manual_seed(0)
    tm = make(torch.nn)
    vm = make(vkt.nn)
    vm.load_state_dict({k: vkt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    vm = vm.to(device)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    arrays = [np.random.default_rng(0).standard_normal(s).astype(np.float32) for s in shapes]
    ref, ref_in, ref_params = _run_module(tm, call, arrays, lambda a: torch.tensor(a, requires_grad=True))
    got, got_in, got_params = _run_module(vm, call, arrays,
                                          lambda a: vkt.tensor(a, device=device, requires_grad=True))
    _no_fallback(device)
    assert_close(got.detach(), ref.detach().numpy(), rtol=RTOL, atol=ATOL)
    for g, r in zip(got_in, ref_in):
        assert_close(g, r.numpy(), rtol=RTOL, atol=ATOL)
    assert got_params.keys() == ref_params.keys()
    for key, r in ref_params.items():
        assert_close(got_params[key], r.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("make", [
    lambda nn: nn.Conv3d(4, 6, (3, 2, 2), groups=2),
    lambda nn: nn.ConvTranspose1d(4, 6, 3, groups=2),
    lambda nn: nn.ConvTranspose3d(3, 2, 2),
])
def test_parameter_shapes_and_init(make):
    """torch's parameter shapes; kaiming_uniform(a=sqrt(5)) keeps weight and bias within 1/sqrt(fan_in)."""
    vm, tm = make(vkt.nn), make(torch.nn)
    shapes = {k: tuple(v.shape) for k, v in vm.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    bound = 1 / math.sqrt(math.prod(shapes["weight"][1:]))
    for p in (vm.weight, vm.bias):
        assert np.abs(to_numpy(p.detach())).max() <= bound
    assert to_numpy(vm.weight.detach()).std() > 0.3 * bound


REPRS = [
    lambda nn: nn.Conv3d(2, 4, 3, padding="same", dilation=2, groups=2, padding_mode="circular"),
    lambda nn: nn.Conv3d(2, 4, (1, 2, 3), stride=(1, 2, 1), bias=False),
    lambda nn: nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1, groups=2, dilation=2),
    lambda nn: nn.ConvTranspose3d(4, 6, 3, padding=(1, 0, 1), bias=False),
    lambda nn: nn.MaxPool3d(3, 2, 1, ceil_mode=True),
    lambda nn: nn.MaxPool3d((2, 3, 3), dilation=2, return_indices=True),
    lambda nn: nn.AvgPool3d(3),
    lambda nn: nn.AvgPool3d((2, 3, 3), (1, 2, 2), 1, True, False, 2),
    lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)),
    lambda nn: nn.MaxUnpool1d(3, 2, 1),
    lambda nn: nn.MaxUnpool2d((2, 3)),
    lambda nn: nn.LPPool1d(2, 3),
    lambda nn: nn.LPPool2d(1.5, (2, 3), 2, ceil_mode=True),
    lambda nn: nn.LPPool3d(3, 2),
]


@pytest.mark.parametrize("make", REPRS)
def test_repr_and_state_dict_keys(make):
    tm, vm = make(torch.nn), make(vkt.nn)
    assert repr(vm) == repr(tm)
    assert list(vm.state_dict().keys()) == list(tm.state_dict().keys())


def _t(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


def _i(*shape, fill=0):
    return np.full(shape, fill, np.int64)


# (id, call(F, T)): T builds the library's tensor from a NumPy array; both libraries must raise the same
# exception type with the same message.
ERRORS = [
    ("conv3d_input_dims", lambda F, T: F.conv3d(T(_t(4, 5, 6)), T(_t(4, 3, 3, 3, 3)))),
    ("conv3d_weight_dims", lambda F, T: F.conv3d(T(_t(2, 3, 4, 5, 6)), T(_t(4, 3, 3, 3)))),
    ("conv3d_channels", lambda F, T: F.conv3d(T(_t(2, 3, 4, 5, 6)), T(_t(4, 2, 3, 3, 3)))),
    ("conv3d_channels_unbatched", lambda F, T: F.conv3d(T(_t(2, 4, 5, 6)), T(_t(4, 3, 3, 3, 3)))),
    ("conv3d_kernel_too_big", lambda F, T: F.conv3d(T(_t(2, 3, 2, 5, 6)), T(_t(4, 3, 3, 3, 3)))),
    ("conv3d_same_strided", lambda F, T: F.conv3d(T(_t(2, 3, 4, 5, 6)), T(_t(4, 3, 3, 3, 3)), stride=2,
                                                  padding="same")),
    ("conv3d_stride_length", lambda F, T: F.conv3d(T(_t(2, 3, 4, 5, 6)), T(_t(4, 3, 3, 3, 3)), stride=(1, 2))),
    ("conv3d_groups", lambda F, T: F.conv3d(T(_t(2, 4, 4, 5, 6)), T(_t(3, 2, 3, 3, 3)), groups=2)),
    ("conv3d_bias", lambda F, T: F.conv3d(T(_t(2, 3, 4, 5, 6)), T(_t(4, 3, 3, 3, 3)), T(_t(3)))),
    ("conv_transpose1d_dims", lambda F, T: F.conv_transpose1d(T(_t(2, 3, 4, 5)), T(_t(3, 2, 3)))),
    ("conv_transpose1d_channels", lambda F, T: F.conv_transpose1d(T(_t(2, 3, 5)), T(_t(4, 2, 3)))),
    ("conv_transpose1d_output_padding", lambda F, T: F.conv_transpose1d(
        T(_t(2, 3, 5)), T(_t(3, 2, 3)), stride=2, output_padding=2)),
    ("conv_transpose1d_output_padding_length", lambda F, T: F.conv_transpose1d(
        T(_t(2, 3, 5)), T(_t(3, 2, 3)), output_padding=(1, 1))),
    ("conv_transpose1d_groups", lambda F, T: F.conv_transpose1d(T(_t(2, 4, 5)), T(_t(4, 2, 3)), groups=3)),
    ("conv_transpose1d_negative_padding", lambda F, T: F.conv_transpose1d(T(_t(2, 3, 5)), T(_t(3, 2, 3)),
                                                                          padding=-1)),
    ("conv_transpose3d_output_padding", lambda F, T: F.conv_transpose3d(
        T(_t(2, 3, 4, 5, 6)), T(_t(3, 2, 3, 3, 3)), stride=2, output_padding=(0, 2, 0))),
    ("conv_transpose3d_negative_output_padding", lambda F, T: F.conv_transpose3d(
        T(_t(2, 3, 4, 5, 6)), T(_t(3, 2, 3, 3, 3)), output_padding=-1)),
    ("conv_transpose3d_channels", lambda F, T: F.conv_transpose3d(T(_t(2, 3, 4, 5, 6)), T(_t(4, 2, 3, 3, 3)))),
    ("conv_transpose3d_same", lambda F, T: F.conv_transpose3d(T(_t(2, 3, 4, 5, 6)), T(_t(3, 2, 3, 3, 3)),
                                                              padding="same")),
    ("conv_transpose3d_zero_stride", lambda F, T: F.conv_transpose3d(T(_t(2, 3, 4, 5, 6)), T(_t(3, 2, 3, 3, 3)),
                                                                     stride=0)),
    ("conv_transpose3d_bias", lambda F, T: F.conv_transpose3d(T(_t(2, 3, 4, 5, 6)), T(_t(3, 2, 3, 3, 3)),
                                                              T(_t(3)))),
    ("max_pool3d_dims", lambda F, T: F.max_pool3d(T(_t(3, 4, 5)), 2)),
    ("max_pool3d_big_pad", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), 2, padding=2)),
    ("max_pool3d_dilated_pad", lambda F, T: F.max_pool3d(T(_t(2, 3, 8, 8, 8)), 2, padding=2, dilation=3)),
    ("max_pool3d_too_small", lambda F, T: F.max_pool3d(T(_t(2, 3, 1, 5, 6)), 2)),
    ("max_pool3d_kernel_length", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), (2, 2))),
    ("max_pool3d_stride_length", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), 2, stride=(1, 2))),
    ("max_pool3d_padding_length", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), 2, padding=(1, 1))),
    ("max_pool3d_dilation_length", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), 2, dilation=(1, 1))),
    ("max_pool3d_zero_stride", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), 2, stride=0)),
    ("max_pool3d_negative_stride", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), 2, stride=-1)),
    ("max_pool3d_zero_dilation", lambda F, T: F.max_pool3d(T(_t(2, 3, 4, 5, 6)), 2, dilation=0)),
    ("max_pool3d_negative_kernel", lambda F, T: F.max_pool3d(T(_t(2, 3, 8, 8, 8)), -1, stride=1)),
    ("max_pool3d_empty", lambda F, T: F.max_pool3d(T(_t(2, 0, 4, 5, 6)), 2)),
    ("max_pool2d_stride_length", lambda F, T: F.max_pool2d(T(_t(2, 3, 4, 5)), 2, stride=(1, 2, 3))),
    ("max_pool2d_dilation_length", lambda F, T: F.max_pool2d(T(_t(2, 3, 4, 5)), 2, dilation=(1, 1, 1))),
    ("max_pool2d_dilated_pad", lambda F, T: F.max_pool2d(T(_t(2, 3, 8, 8)), 2, padding=2, dilation=3)),
    ("avg_pool3d_dims", lambda F, T: F.avg_pool3d(T(_t(3, 4, 5)), 2)),
    ("avg_pool3d_big_pad", lambda F, T: F.avg_pool3d(T(_t(2, 3, 4, 5, 6)), 2, padding=2)),
    ("avg_pool3d_smaller_than_kernel", lambda F, T: F.avg_pool3d(T(_t(2, 3, 1, 5, 6)), 2)),
    ("avg_pool3d_smaller_than_kernel_padded", lambda F, T: F.avg_pool3d(T(_t(1, 1, 2, 2, 2)), 3, padding=1)),
    ("avg_pool3d_kernel_length", lambda F, T: F.avg_pool3d(T(_t(2, 3, 4, 5, 6)), (2, 2))),
    ("avg_pool3d_stride_length", lambda F, T: F.avg_pool3d(T(_t(2, 3, 4, 5, 6)), 2, stride=(1, 2))),
    ("avg_pool3d_padding_length", lambda F, T: F.avg_pool3d(T(_t(2, 3, 4, 5, 6)), 2, padding=(1, 1))),
    ("avg_pool3d_zero_stride", lambda F, T: F.avg_pool3d(T(_t(2, 3, 4, 5, 6)), 2, stride=0)),
    ("avg_pool3d_zero_divisor", lambda F, T: F.avg_pool3d(T(_t(2, 3, 4, 5, 6)), 2, divisor_override=0)),
    ("avg_pool3d_empty", lambda F, T: F.avg_pool3d(T(_t(2, 0, 4, 5, 6)), 2)),
    ("adaptive_avg_pool3d_dims", lambda F, T: F.adaptive_avg_pool3d(T(_t(3, 4, 5)), 2)),
    ("adaptive_avg_pool3d_output_length", lambda F, T: F.adaptive_avg_pool3d(T(_t(2, 3, 4, 5, 6)), (2, 2))),
    ("adaptive_avg_pool3d_none_length", lambda F, T: F.adaptive_avg_pool3d(T(_t(2, 3, 4, 5, 6)), (2, None))),
    ("adaptive_avg_pool3d_negative", lambda F, T: F.adaptive_avg_pool3d(T(_t(2, 3, 4, 5, 6)), -1)),
    ("adaptive_avg_pool2d_negative", lambda F, T: F.adaptive_avg_pool2d(T(_t(2, 3, 4, 5)), -1)),
    ("adaptive_avg_pool3d_empty", lambda F, T: F.adaptive_avg_pool3d(T(_t(2, 0, 4, 5, 6)), 2)),
    ("adaptive_avg_pool3d_short_input", lambda F, T: F.adaptive_avg_pool3d(T(_t(2, 3, 4)), (2, None, None))),
    ("max_unpool1d_output_size", lambda F, T: F.max_unpool1d(T(_t(2, 3, 4)), T(_i(2, 3, 4)), 2, output_size=(3,))),
    ("max_unpool1d_output_length", lambda F, T: F.max_unpool1d(T(_t(2, 3, 4)), T(_i(2, 3, 4)), 2,
                                                               output_size=(3, 3, 3, 3))),
    ("max_unpool1d_dims", lambda F, T: F.max_unpool1d(T(_t(4)), T(_i(4)), 2)),
    ("max_unpool2d_index_too_big", lambda F, T: F.max_unpool2d(T(_t(2, 3, 4, 4)), T(_i(2, 3, 4, 4, fill=100)), 2)),
    ("max_unpool2d_negative_index", lambda F, T: F.max_unpool2d(T(_t(2, 3, 4, 4)), T(_i(2, 3, 4, 4, fill=-1)), 2)),
    ("max_unpool2d_index_shape", lambda F, T: F.max_unpool2d(T(_t(2, 3, 4, 4)), T(_i(2, 3, 4, 3)), 2)),
    ("max_unpool2d_index_dtype", lambda F, T: F.max_unpool2d(T(_t(2, 3, 4, 4)), T(_t(2, 3, 4, 4)), 2)),
    ("max_unpool2d_dims", lambda F, T: F.max_unpool2d(T(_t(4, 4)), T(_i(4, 4)), 2)),
    ("max_unpool2d_negative_size", lambda F, T: F.max_unpool2d(T(_t(2, 3, 1, 1)), T(_i(2, 3, 1, 1)), 1, padding=1)),
    ("max_unpool2d_empty", lambda F, T: F.max_unpool2d(T(_t(2, 0, 4, 4)), T(_i(2, 0, 4, 4)), 2)),
    ("max_unpool2d_kernel_length", lambda F, T: F.max_unpool2d(T(_t(2, 3, 4, 4)), T(_i(2, 3, 4, 4)), (2, 2, 2))),
    ("max_unpool2d_output_length", lambda F, T: F.max_unpool2d(T(_t(3, 4, 4)), T(_i(3, 4, 4)), 2,
                                                               output_size=(3, 8, 8))),
    ("lp_pool1d_kernel_length", lambda F, T: F.lp_pool1d(T(_t(2, 3, 8)), 2, (2, 2))),
    ("lp_pool2d_dims", lambda F, T: F.lp_pool2d(T(_t(3, 8)), 2, 2)),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, call, device):
    ref = _raises(lambda: call(TF, torch.tensor))
    assert ref[0] is not None, "torch accepted the call"
    assert _raises(lambda: call(F, lambda a: vkt.tensor(a, device=device))) == ref


# (make(nn, lib)): module construction and calls; both libraries raise the same exception type and message.
MODULE_ERRORS = [
    lambda nn, lib: nn.Conv3d(3, 4, 3, groups=2),
    lambda nn, lib: nn.Conv3d(3, 4, 3, padding="full"),
    lambda nn, lib: nn.Conv3d(3, 4, 3, stride=2, padding="same"),
    lambda nn, lib: nn.Conv3d(3, 4, 3, padding_mode="mirror"),
    lambda nn, lib: nn.ConvTranspose1d(3, 4, 3, padding_mode="reflect"),
    lambda nn, lib: nn.ConvTranspose3d(4, 3, 3, groups=2),
    lambda nn, lib: nn.ConvTranspose3d(3, 2, 3, stride=2)(lib.zeros(1, 3, 2, 3, 2), output_size=(9, 7, 5)),
    lambda nn, lib: nn.ConvTranspose1d(3, 2, 3, stride=2)(lib.zeros(3, 4), output_size=(3, 2, 9)),
    lambda nn, lib: nn.ConvTranspose1d(3, 2, 3, stride=2)(lib.zeros(3, 4), output_size=(20,)),
    lambda nn, lib: nn.MaxUnpool2d(2)(lib.zeros(1, 2, 2, 2), lib.zeros(1, 2, 2, 2, dtype=lib.int64),
                                      output_size=(9, 4)),
]


@pytest.mark.parametrize("index", range(len(MODULE_ERRORS)))
def test_module_errors_match_torch(index):
    ref_type, ref_message = _raises(lambda: MODULE_ERRORS[index](torch.nn, torch))
    assert ref_type is not None, "torch accepted the call"
    got_type, got_message = _raises(lambda: MODULE_ERRORS[index](vkt.nn, vkt))
    assert (got_type, normalized(got_message)) == (ref_type, normalized(ref_message))


def test_empty_batch(device):
    for call in (lambda F, x: F.conv3d(x, x.new_zeros((4, 3, 3, 3, 3)), padding=1),
                 lambda F, x: F.conv_transpose3d(x, x.new_zeros((3, 2, 2, 2, 2)), stride=2),
                 lambda F, x: F.max_pool3d(x, 2), lambda F, x: F.avg_pool3d(x, 3, padding=1),
                 lambda F, x: F.lp_pool3d(x, 2, 2)):
        got = call(F, vkt.zeros(0, 3, 4, 5, 5, device=device))
        assert got.shape == tuple(call(TF, torch.zeros(0, 3, 4, 5, 5)).shape)
