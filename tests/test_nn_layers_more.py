# vkt.nn's instance/batch-3d/local-response normalisation, pixel and channel shuffles, Softmax2d, Upsample,
# adaptive and fractional max pooling, Fold/Unfold and alpha dropout against torch.nn (2.13) on the cpu and
# vulkan devices: outputs and the gradients of inputs and parameters, running statistics after training steps,
# reprs, state-dict keys and torch's errors; alpha dropout's training path by its invariants and statistics.
import warnings

import numpy as np
import pytest

import vkt
from conftest import FLOAT_DTYPES, assert_close, raised, to_numpy
from test_nn_spatial_modules import _run, _vkt_module  # noqa: E402

torch = pytest.importorskip("torch")

TOL = 1e-5


def _eval(m, T, x):
    return m.eval()(x)


def _samples(lib, shape, dtype="float32", seed=0):
    """Fixed _random_samples for a fractional max pool, the same values in torch and vkt (nn or its library)."""
    values = np.random.default_rng(seed).random(shape).astype(dtype)
    return torch.tensor(values) if lib in (torch, torch.nn) else vkt.tensor(values)


# (id, make(nn), input shapes, call(module, T, *inputs) or None): nn is torch.nn or vkt.nn. Modules run in
# training mode unless the call says otherwise, so running statistics move and are compared afterwards.
CASES = [
    ("instance_norm1d", lambda nn: nn.InstanceNorm1d(3), [(2, 3, 5)], None),
    ("instance_norm1d_unbatched_tracked", lambda nn: nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
     [(3, 6)], None),
    ("instance_norm2d_affine", lambda nn: nn.InstanceNorm2d(3, eps=1e-3, affine=True), [(2, 3, 4, 5)], None),
    ("instance_norm2d_tracked", lambda nn: nn.InstanceNorm2d(3, momentum=0.3, track_running_stats=True),
     [(2, 3, 4, 5)], None),
    ("instance_norm2d_tracked_eval", lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
     [(2, 3, 4, 5)], _eval),
    ("instance_norm2d_untracked_eval", lambda nn: nn.InstanceNorm2d(3, affine=True), [(3, 4, 5)], _eval),
    ("instance_norm3d_no_bias", lambda nn: nn.InstanceNorm3d(2, affine=True, track_running_stats=True, bias=False),
     [(2, 2, 3, 2, 3)], None),
    ("instance_norm3d_unbatched", lambda nn: nn.InstanceNorm3d(2, affine=True), [(2, 3, 2, 3)], None),
    ("batch_norm3d", lambda nn: nn.BatchNorm3d(3, momentum=0.2), [(2, 3, 2, 3, 2)], None),
    ("batch_norm3d_cumulative_no_affine", lambda nn: nn.BatchNorm3d(3, momentum=None, affine=False),
     [(2, 3, 2, 3, 2)], None),
    ("batch_norm3d_eval", lambda nn: nn.BatchNorm3d(3), [(2, 3, 2, 3, 2)], _eval),
    ("local_response_norm_3d", lambda nn: nn.LocalResponseNorm(3, alpha=0.5), [(2, 5, 4)], None),
    ("local_response_norm_4d", lambda nn: nn.LocalResponseNorm(2, alpha=0.3, beta=0.6, k=2.0), [(2, 6, 3, 4)],
     None),
    ("local_response_norm_5d_wide", lambda nn: nn.LocalResponseNorm(6, alpha=1.0), [(2, 4, 2, 3, 2)], None),
    ("pixel_shuffle", lambda nn: nn.PixelShuffle(2), [(2, 8, 3, 2)], None),
    ("pixel_shuffle_unbatched", lambda nn: nn.PixelShuffle(3), [(9, 2, 3)], None),
    ("pixel_unshuffle", lambda nn: nn.PixelUnshuffle(2), [(2, 2, 4, 6)], None),
    ("channel_shuffle", lambda nn: nn.ChannelShuffle(3), [(2, 6, 3)], None),
    ("channel_shuffle_4d", lambda nn: nn.ChannelShuffle(2), [(2, 6, 2, 3)], None),
    ("softmax2d", lambda nn: nn.Softmax2d(), [(2, 3, 4, 5)], None),
    ("softmax2d_unbatched", lambda nn: nn.Softmax2d(), [(3, 4, 5)], None),
    ("upsample_nearest", lambda nn: nn.Upsample(scale_factor=2), [(2, 3, 4, 5)], None),
    ("upsample_bilinear_size", lambda nn: nn.Upsample(size=(5, 7), mode="bilinear"), [(2, 3, 4, 5)], None),
    ("upsample_bilinear_corners", lambda nn: nn.Upsample(scale_factor=(1.5, 2), mode="bilinear", align_corners=True),
     [(1, 2, 4, 5)], None),
    ("upsample_bicubic_recompute", lambda nn: nn.Upsample(scale_factor=1.7, mode="bicubic",
                                                          recompute_scale_factor=True), [(1, 2, 4, 5)], None),
    ("upsample_linear", lambda nn: nn.Upsample(scale_factor=2.5, mode="linear"), [(2, 3, 5)], None),
    ("upsample_trilinear", lambda nn: nn.Upsample(size=(3, 4, 3), mode="trilinear"), [(1, 2, 2, 3, 2)], None),
    ("upsample_nearest_exact", lambda nn: nn.Upsample(size=7, mode="nearest-exact"), [(2, 3, 4)], None),
    ("upsample_area", lambda nn: nn.Upsample(size=(3, 2), mode="area"), [(1, 2, 7, 5)], None),
    ("upsampling_nearest2d", lambda nn: nn.UpsamplingNearest2d(size=(5, 7)), [(2, 3, 4, 5)], None),
    ("upsampling_bilinear2d", lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), [(2, 3, 4, 5)], None),
    ("adaptive_max_pool1d", lambda nn: nn.AdaptiveMaxPool1d(4), [(2, 3, 10)], None),
    ("adaptive_max_pool1d_unbatched_grow", lambda nn: nn.AdaptiveMaxPool1d(9), [(3, 7)], None),
    ("adaptive_max_pool2d", lambda nn: nn.AdaptiveMaxPool2d((3, 4)), [(2, 3, 7, 9)], None),
    ("adaptive_max_pool2d_none_indices", lambda nn: nn.AdaptiveMaxPool2d((None, 4), return_indices=True),
     [(3, 5, 9)], None),
    ("adaptive_max_pool3d", lambda nn: nn.AdaptiveMaxPool3d((2, None, 3)), [(2, 3, 4, 5, 7)], None),
    ("adaptive_max_pool3d_unbatched_indices", lambda nn: nn.AdaptiveMaxPool3d(3, return_indices=True),
     [(2, 5, 4, 6)], None),
    ("fractional_max_pool2d", lambda nn: nn.FractionalMaxPool2d(2, (4, 5), _random_samples=_samples(nn, (2, 3, 2))),
     [(2, 3, 7, 9)], None),
    ("fractional_max_pool2d_ratio_unbatched", lambda nn: nn.FractionalMaxPool2d(
        (3, 2), output_ratio=0.6, return_indices=True, _random_samples=_samples(nn, (1, 3, 2))), [(3, 8, 9)], None),
    ("fractional_max_pool3d", lambda nn: nn.FractionalMaxPool3d(
        (2, 3, 2), (3, 2, 4), _random_samples=_samples(nn, (2, 2, 3))), [(2, 2, 5, 6, 7)], None),
    ("unfold", lambda nn: nn.Unfold((2, 3), padding=1, stride=(2, 1)), [(2, 3, 5, 6)], None),
    ("fold", lambda nn: nn.Fold((4, 5), 2), [(2, 8, 12)], None),
    ("fold_dilated_unbatched", lambda nn: nn.Fold((5, 6), (2, 2), dilation=(2, 1), padding=1, stride=2),
     [(8, 12)], None),
    ("alpha_dropout_eval", lambda nn: nn.AlphaDropout(0.3), [(2, 3, 4)], _eval),
    ("alpha_dropout_p0", lambda nn: nn.AlphaDropout(0.0), [(2, 3, 4)], None),
    ("feature_alpha_dropout_eval", lambda nn: nn.FeatureAlphaDropout(0.3), [(2, 3, 4)], _eval),
]




def _check_no_fallback(device):
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, "an op fell back to the CPU"


@pytest.mark.parametrize("name,make,shapes,call", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, make, shapes, call, device):
    torch.manual_seed(0)
    tm = make(torch.nn)
    vm = _vkt_module(make, tm, device)
    with torch.no_grad():  # running stats away from their initial values, so evaluation uses them
        for key, buf in tm.named_buffers():
            if key.endswith(("running_mean", "running_var")):
                buf.uniform_(0.5, 1.5)
                getattr(vm, key).copy_(vkt.tensor(buf.numpy(), device=device))
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ref, ref_in, ref_params = _run(tm, call, arrays, torch.tensor, lambda a: torch.tensor(a, requires_grad=True))
    got, got_in, got_params = _run(vm, call, arrays, lambda a: vkt.tensor(a, device=device),
                                   lambda a: vkt.tensor(a, device=device, requires_grad=True))
    _check_no_fallback(device)
    assert_close(got.detach(), ref.detach().numpy(), rtol=TOL, atol=TOL)
    for g, r in zip(got_in, ref_in):
        assert_close(g, r.numpy(), rtol=TOL, atol=TOL)
    assert got_params.keys() == ref_params.keys()
    for key, r in ref_params.items():
        assert_close(got_params[key], r.numpy(), rtol=TOL, atol=TOL)
    assert list(vm.state_dict().keys()) == list(tm.state_dict().keys())
    for key, r in tm.state_dict().items():  # running statistics and num_batches_tracked after the step
        assert_close(vm.state_dict()[key], r.numpy(), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("make,shape", [
    (lambda nn, m: nn.InstanceNorm1d(3, momentum=m, affine=True, track_running_stats=True), (2, 3, 5)),
    (lambda nn, m: nn.InstanceNorm2d(3, momentum=m, track_running_stats=True), (2, 3, 4, 5)),
    (lambda nn, m: nn.BatchNorm3d(3, momentum=m), (2, 3, 2, 3, 2)),
], ids=["in1d", "in2d", "bn3d"])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_running_stats_over_steps(device, make, shape, momentum):
    """Three training steps, then evaluation on the running stats; momentum=None: BatchNorm's cumulative
    average, InstanceNorm's frozen stats (torch passes it a momentum of 0)."""
    tm, vm = make(torch.nn, momentum), make(vkt.nn, momentum).to(device)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        tm(torch.tensor(x))
        vm(vkt.tensor(x, device=device))
    for key, r in tm.state_dict().items():
        assert_close(vm.state_dict()[key], r.numpy(), rtol=TOL, atol=TOL)
    tm.eval()
    vm.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    assert_close(vm(vkt.tensor(x, device=device)).detach(), tm(torch.tensor(x)).detach().numpy(), rtol=TOL,
                 atol=TOL)


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_functional_instance_norm_with_stats(device, use_input_stats):
    """F.instance_norm given running stats, weight and bias: output, gradients of input and affine, and the
    running stats moved in place (with use_input_stats) or read."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (3,), (3,))]
    stats = [rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32)]
    results = []
    for lib, dev in ((torch, "cpu"), (vkt, device)):
        x, w, b = (lib.tensor(a, device=dev, requires_grad=True) for a in arrays)
        mean, var = (lib.tensor(s, device=dev) for s in stats)
        out = lib.nn.functional.instance_norm(x, mean, var, w, b, use_input_stats, 0.25, 1e-3)
        (out * lib.tensor(arrays[0], device=dev)).sum().backward()
        results.append([to_numpy(t.detach()) for t in (out, x.grad, w.grad, b.grad, mean, var)])
    for got, ref in zip(*reversed(results)):
        assert_close(got, ref, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("nd,shape,out", [(1, (2, 3, 10), 4), (1, (3, 7), 3), (2, (2, 3, 7, 9), (3, 4)),
                                          (2, (3, 5, 6), (4, None)), (3, (2, 2, 4, 5, 6), (3, 2, 4))])
def test_adaptive_max_pool_indices_and_ties(device, nd, shape, out):
    """Values, indices and gradients as torch's on an input full of ties: the index and the gradient go to
    each window's first maximum in row-major order."""
    x = np.random.default_rng(4).integers(0, 3, shape).astype(np.float32)
    results = []
    for lib, dev in ((torch, "cpu"), (vkt, device)):
        t = lib.tensor(x, device=dev, requires_grad=True)
        values, indices = getattr(lib.nn.functional, f"adaptive_max_pool{nd}d")(t, out, return_indices=True)
        values.sum().backward()
        results.append([to_numpy(v.detach()) for v in (values, indices, t.grad)])
    (ref_v, ref_i, ref_g), (got_v, got_i, got_g) = results
    assert_close(got_v, ref_v, rtol=0, atol=0)
    assert got_i.dtype == np.int64 and np.array_equal(got_i, ref_i)
    assert_close(got_g, ref_g, rtol=0, atol=0)


# (id, call(F, x, samples), input shape, samples shape or None): every call returns (values, indices).
MAX_POOLS = [
    ("adaptive3d", lambda F, x, u: F.adaptive_max_pool3d(x, (2, 3, 4), True), (2, 3, 5, 7, 6), None),
    ("adaptive3d_grow_unbatched", lambda F, x, u: F.adaptive_max_pool3d_with_indices(x, (7, None, 2)), (3, 4, 5, 9),
     None),
    ("adaptive3d_one", lambda F, x, u: F.adaptive_max_pool3d(x, 1, return_indices=True), (1, 2, 3, 3, 3), None),
    ("adaptive3d_empty_output", lambda F, x, u: F.adaptive_max_pool3d(x, (2, 0, 3), True), (2, 2, 3, 4, 5), None),
    ("adaptive3d_empty_batch", lambda F, x, u: F.adaptive_max_pool3d(x, 2, True), (0, 2, 3, 4, 5), None),
    ("fractional2d", lambda F, x, u: F.fractional_max_pool2d(x, 2, (4, 5), return_indices=True, _random_samples=u),
     (2, 3, 7, 9), (2, 3, 2)),
    ("fractional2d_ratio_unbatched", lambda F, x, u: F.fractional_max_pool2d(
        x, (3, 1), output_ratio=(0.5, 0.7), return_indices=True, _random_samples=u), (3, 11, 10), (1, 3, 2)),
    ("fractional2d_exact_one_extra_samples", lambda F, x, u: F.fractional_max_pool2d_with_indices(
        x, (3, 2), (5, 1), _random_samples=u), (2, 2, 7, 5), (3, 2, 2)),
    ("fractional2d_empty_output", lambda F, x, u: F.fractional_max_pool2d(
        x, 2, output_ratio=(0.1, 0.5), return_indices=True, _random_samples=u), (2, 3, 7, 9), (2, 3, 2)),
    ("fractional2d_empty_batch", lambda F, x, u: F.fractional_max_pool2d(
        x, 2, 3, return_indices=True, _random_samples=u), (0, 3, 7, 9), (0, 3, 2)),
    ("fractional3d", lambda F, x, u: F.fractional_max_pool3d(x, 2, (3, 4, 2), return_indices=True, _random_samples=u),
     (2, 2, 5, 7, 6), (2, 2, 3)),
    ("fractional3d_ratio_unbatched", lambda F, x, u: F.fractional_max_pool3d_with_indices(
        x, (1, 2, 3), output_ratio=0.5, _random_samples=u), (3, 6, 7, 9), (1, 3, 3)),
]
GRAD_TOL = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-12}


def _max_pool_run(lib, dev, call, x, samples, up, transposed):
    """(values, indices, input gradient) of call under the upstream gradient up, the input made contiguous or as a
    transposed view of its last two dims; the fallbacks counted in the forward pass (vkt on vulkan) go to
    fallbacks. An empty output has no backward: torch's adaptive pools refuse an empty gradient."""
    T = torch.tensor if lib is torch else lambda a: vkt.tensor(a, device=dev)
    leaf = T(np.ascontiguousarray(np.swapaxes(x, -1, -2)) if transposed else x).requires_grad_(True)
    values, indices = call(lib.nn.functional, leaf.transpose(-1, -2) if transposed else leaf,
                           None if samples is None else T(samples))
    if dev == "vulkan":
        _check_no_fallback(dev)
    if values.numel() == 0:
        return [to_numpy(t.detach()) for t in (values, indices)] + [np.zeros(x.shape, x.dtype)]
    (values * T(up)).sum().backward()
    grad = leaf.grad.transpose(-1, -2) if transposed else leaf.grad
    return [to_numpy(t.detach()) for t in (values, indices, grad)]


@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,call,shape,samples", MAX_POOLS, ids=[c[0] for c in MAX_POOLS])
def test_max_pools_match_torch(device, name, call, shape, samples, dtype, transposed):
    """adaptive_max_pool3d and fractional_max_pool2d/3d: values and indices equal torch's exactly (the fractional
    windows from the same samples), the input's gradient within summation order, no CPU fallback."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dtype)
    u = None if samples is None else rng.random(samples).astype(dtype)
    values = call(torch.nn.functional, torch.tensor(x), None if u is None else torch.tensor(u))[0]
    up = rng.standard_normal(tuple(values.shape)).astype(dtype)
    ref = _max_pool_run(torch, "cpu", call, x, u, up, transposed)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    got = _max_pool_run(vkt, device, call, x, u, up, transposed)
    if device == "vulkan":  # the backward's float64 scatter-add: atomic, or sorted without 64-bit atomics
        assert vkt.vulkan.fallback_stats() == {}
    assert got[0].dtype == ref[0].dtype and np.array_equal(got[0], ref[0])
    assert got[1].dtype == np.int64 and np.array_equal(got[1], ref[1])
    assert_close(got[2], ref[2], rtol=GRAD_TOL[dtype], atol=GRAD_TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("nd,shape,kernel,out", [(2, (4, 64, 37, 50), (2, 3), (20, 23)),
                                                 (3, (2, 40, 13, 11, 17), (2, 1, 3), (6, 10, 7))])
def test_fractional_windows_bit_for_bit(device, dtype, nd, shape, kernel, out):
    """Many planes' samples, each rounding step of torch's interval sequence in the input's dtype: every window,
    so every index, is torch's."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(dtype)
    u = rng.random((shape[0], shape[1], nd)).astype(dtype)
    pool = f"fractional_max_pool{nd}d"
    ref = getattr(torch.nn.functional, pool)(torch.tensor(x), kernel, out, return_indices=True,
                                             _random_samples=torch.tensor(u))
    got = getattr(vkt.nn.functional, pool)(vkt.tensor(x, device=device), kernel, out, return_indices=True,
                                           _random_samples=vkt.tensor(u, device=device))
    assert np.array_equal(to_numpy(got[1]), ref[1].numpy())
    assert np.array_equal(to_numpy(got[0]), ref[0].numpy())


@pytest.mark.parametrize("call", [
    lambda F, x, u: F.adaptive_max_pool3d(x, (1, 2, 1), True),
    lambda F, x, u: F.adaptive_max_pool2d(x[0], 2, True),
    lambda F, x, u: F.fractional_max_pool2d(x[0], (2, 3), (2, 2), return_indices=True, _random_samples=u[:, :, :2]),
    lambda F, x, u: F.fractional_max_pool3d(x, (1, 2, 2), (1, 2, 2), return_indices=True, _random_samples=u),
], ids=["adaptive3d", "adaptive2d", "fractional2d", "fractional3d"])
def test_max_pools_nan_and_ties(device, call):
    """torch's scans keep the first maximum but take every NaN they meet: the index (and the gradient) go to a
    window's last NaN, or else its first maximum."""
    rng = np.random.default_rng(9)
    x = rng.integers(0, 3, (1, 2, 2, 4, 5)).astype(np.float32)
    x[rng.random(x.shape) < 0.15] = np.nan
    u = rng.random((2, 2, 3)).astype(np.float32)
    results = []
    for lib, dev in ((torch, "cpu"), (vkt, device)):
        t = lib.tensor(x, device=dev, requires_grad=True)
        values, indices = call(lib.nn.functional, t, lib.tensor(u, device=dev))
        values.sum().backward()
        results.append([to_numpy(v.detach()) for v in (values, indices, t.grad)])
    for got, ref in zip(results[1], results[0]):
        assert_close(got, ref, rtol=0, atol=0)


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_kernel_zero_as_torch(device, nd):
    """torch takes a kernel of 0: every window is empty, -inf at the window's start."""
    shape = (1, 2) + (3, 4, 5)[3 - nd:]
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    u = np.full((1, 2, nd), 0.5, np.float32)
    pool = f"fractional_max_pool{nd}d"
    ref = getattr(torch.nn.functional, pool)(torch.tensor(x), 0, 2, return_indices=True,
                                             _random_samples=torch.tensor(u))
    got = getattr(vkt.nn.functional, pool)(vkt.tensor(x, device=device), 0, 2, return_indices=True,
                                           _random_samples=vkt.tensor(u, device=device))
    for g, r in zip(got, ref):
        assert_close(g, r.numpy(), rtol=0, atol=0)


@pytest.mark.parametrize("name,call,samples", [
    ("adaptive3d", lambda F, x, u: F.adaptive_max_pool3d(x, (2, 3, 2)), (1,)),
    ("fractional2d", lambda F, x, u: F.fractional_max_pool2d(x[0], 2, (3, 2), _random_samples=u), (3, 4, 2)),
    ("fractional3d", lambda F, x, u: F.fractional_max_pool3d(x, (2, 2, 3), output_ratio=0.5, _random_samples=u),
     (2, 3, 3)),
])
def test_max_pools_gradcheck(device, name, call, samples):
    """Numerical against analytical gradients in float64 (distinct values, so no window ties)."""
    rng = np.random.default_rng(10)
    x = vkt.tensor(rng.permutation(2 * 3 * 4 * 5 * 6).reshape(2, 3, 4, 5, 6) / 7.0, device=device,
                   requires_grad=True)
    u = vkt.tensor(rng.random(samples), device=device)
    assert vkt.autograd.gradcheck(lambda t: call(vkt.nn.functional, t, u), (x,))


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fractional_draws_samples_on_device(device, nd, dtype):
    """Without _random_samples vkt's generator draws them on the input's device: each value is the input at its
    index, every window lies inside the input, and the draws repeat under manual_seed."""
    shape = (2, 3, 9, 8, 7)[:nd + 2]
    x = vkt.randn(*shape, device=device, dtype=getattr(vkt, dtype))
    pool = getattr(vkt.nn.functional, f"fractional_max_pool{nd}d")
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    vkt.manual_seed(5)
    values, indices = pool(x, 2, output_ratio=(0.5,) * nd, return_indices=True)
    _check_no_fallback(device)
    assert values.dtype == x.dtype and indices.dtype == vkt.int64
    assert tuple(values.shape) == shape[:2] + tuple(s // 2 for s in shape[2:])
    planes = to_numpy(x).reshape(6, -1)
    flat = to_numpy(indices).reshape(6, -1)
    assert np.array_equal(to_numpy(values).reshape(6, -1), np.take_along_axis(planes, flat, 1))
    vkt.manual_seed(5)
    again = pool(x, 2, output_ratio=(0.5,) * nd, return_indices=True)
    assert np.array_equal(to_numpy(again[1]), to_numpy(indices))


def test_functional_forms(device):
    """The functional spellings torch offers beside the modules, on one input each."""
    x = np.random.default_rng(5).standard_normal((2, 4, 3, 4)).astype(np.float32)
    calls = [
        lambda F, t: F.local_response_norm(t, 3, 0.2, 0.5, 1.5),
        lambda F, t: F.channel_shuffle(t, 2),
        lambda F, t: F.adaptive_max_pool2d(t, 2),
        lambda F, t: F.adaptive_max_pool1d(t.flatten(2), (5,)),
        lambda F, t: F.adaptive_max_pool2d_with_indices(t, (2, 3))[1],
        lambda F, t: F.adaptive_max_pool1d_with_indices(t[0], 2)[1],
        lambda F, t: F.instance_norm(t),
        lambda F, t: F.alpha_dropout(t, 0.5),
        lambda F, t: F.feature_alpha_dropout(t, 0.5, False),
        lambda F, t: F.alpha_dropout(t, 0.0, True),
    ]
    for call in calls:
        ref = call(torch.nn.functional, torch.tensor(x))
        got = call(vkt.nn.functional, vkt.tensor(x, device=device))
        assert_close(got, ref.numpy(), rtol=TOL, atol=TOL)


def test_alpha_dropout_eval_returns_input(device):
    """Out of training (F's default) and at p=0, torch returns the input tensor itself."""
    x = vkt.randn(2, 3, device=device)
    F = vkt.nn.functional
    assert F.alpha_dropout(x) is x and F.feature_alpha_dropout(x, 0.9) is x
    assert F.alpha_dropout(x, 0.0, True) is x and F.alpha_dropout(x, 0.5, False, True) is x
    assert vkt.nn.AlphaDropout(0.4).eval()(x) is x


ALPHA = 1.7580993408473766


def _alpha_parts(p):
    """(a, b): a kept unit is a * x + alpha * a * p, a dropped one alpha * a * (p - 1) (torch's _dropout_impl)."""
    a = 1.0 / np.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    return a, ALPHA * a


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_training_invariants(device, feature):
    """Each unit is either kept (a x + alpha a p, gradient a) or dropped (alpha a (p - 1), gradient 0);
    feature dropout keeps or drops whole (sample, channel) planes; about p of them are dropped; vkt's random
    stream repeats under manual_seed."""
    p = 0.3
    x = vkt.randn(40, 30, 3, 4, device=device, requires_grad=True)
    F = vkt.nn.functional
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    vkt.manual_seed(7)
    out = fn(x, p, True)
    out.sum().backward()
    _check_no_fallback(device)
    a, alpha_a = _alpha_parts(p)
    keep = to_numpy(x.grad) / a
    assert np.all((np.abs(keep) < 1e-6) | (np.abs(keep - 1) < 1e-6))
    keep = np.round(keep)
    expected = to_numpy(x.detach()) * a * keep + alpha_a * (keep - 1 + p)
    assert_close(out.detach(), expected, rtol=1e-5, atol=1e-5)
    if feature:
        assert np.all(keep == keep[:, :, :1, :1])
    units = keep[:, :, 0, 0] if feature else keep
    assert abs(1 - units.mean() - p) < 4 * np.sqrt(p * (1 - p) / units.size)
    vkt.manual_seed(7)
    assert_close(fn(x.detach(), p, True), to_numpy(out.detach()), rtol=0, atol=0)


def test_alpha_dropout_keeps_mean_and_variance(device):
    """On zero-mean, unit-variance inputs the output keeps mean 0 and variance 1, the point of alpha dropout."""
    vkt.manual_seed(11)
    x = vkt.randn(200, 100, device=device)
    for p in (0.2, 0.5):
        out = to_numpy(vkt.nn.AlphaDropout(p).to(device)(x))
        assert abs(out.mean()) < 0.04 and abs(out.std() - 1) < 0.04


def test_alpha_dropout_p1_and_inplace(device):
    x = vkt.randn(4, 5, device=device)
    F = vkt.nn.functional
    assert not to_numpy(F.alpha_dropout(x, 1.0, True)).any()
    y = x.clone()
    vkt.manual_seed(1)
    ref = F.feature_alpha_dropout(y, 0.5, True)
    vkt.manual_seed(1)
    assert F.feature_alpha_dropout(y, 0.5, True, inplace=True) is y
    assert_close(y, to_numpy(ref), rtol=0, atol=0)


def test_instance_norm_num_features_warning():
    """A non-affine InstanceNorm takes another channel count with torch's warning."""
    x = np.random.default_rng(6).standard_normal((2, 4, 5)).astype(np.float32)
    for nn, lib in ((torch.nn, torch), (vkt.nn, vkt)):
        with pytest.warns(UserWarning, match=r"input's size at dim=1 does not match num_features\. You can"):
            out = nn.InstanceNorm1d(3)(lib.tensor(x))
        assert tuple(out.shape) == (2, 4, 5)


def test_softmax2d_and_upsample_attributes():
    for nn in (torch.nn, vkt.nn):
        up = nn.Upsample(scale_factor=(2, 3))
        assert up.scale_factor == (2.0, 3.0) and up.name == "Upsample"
        assert nn.Upsample(size=4, scale_factor=0).scale_factor is None
        assert nn.UpsamplingBilinear2d(4).align_corners is True and nn.UpsamplingBilinear2d(4).name == \
            "UpsamplingBilinear2d"
        assert nn.InstanceNorm2d(3).running_mean is None and nn.InstanceNorm2d(3).weight is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vkt.nn.Softmax2d()(vkt.randn(3, 2, 2))


REPRS = [
    lambda nn: nn.InstanceNorm1d(3),
    lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
    lambda nn: nn.InstanceNorm3d(4, eps=1e-3, momentum=None, affine=True, bias=False),
    lambda nn: nn.BatchNorm3d(3),
    lambda nn: nn.BatchNorm3d(3, affine=False, track_running_stats=False),
    lambda nn: nn.LocalResponseNorm(3),
    lambda nn: nn.LocalResponseNorm(2, 0.1, 0.5, 2),
    lambda nn: nn.PixelShuffle(2),
    lambda nn: nn.PixelUnshuffle(3),
    lambda nn: nn.ChannelShuffle(2),
    lambda nn: nn.Softmax2d(),
    lambda nn: nn.Upsample(scale_factor=2),
    lambda nn: nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True),
    lambda nn: nn.Upsample(scale_factor=(2, 3)),
    lambda nn: nn.Upsample(),
    lambda nn: nn.UpsamplingNearest2d(size=4),
    lambda nn: nn.UpsamplingBilinear2d(scale_factor=1.5),
    lambda nn: nn.AdaptiveMaxPool1d(3),
    lambda nn: nn.AdaptiveMaxPool2d((3, None), return_indices=True),
    lambda nn: nn.AdaptiveMaxPool3d((3, None, 2)),
    lambda nn: nn.FractionalMaxPool2d(2, output_ratio=0.5),
    lambda nn: nn.FractionalMaxPool3d(2, (3, 4, 5), return_indices=True),
    lambda nn: nn.FractionalMaxPool2d(3, 4, _random_samples=_samples(nn, (1, 2, 2))),
    lambda nn: nn.Fold((4, 5), 2),
    lambda nn: nn.Fold(output_size=4, kernel_size=(2, 3), dilation=2, padding=1, stride=(1, 2)),
    lambda nn: nn.Unfold(2, padding=1),
    lambda nn: nn.AlphaDropout(),
    lambda nn: nn.FeatureAlphaDropout(0.2, True),
    lambda nn: nn.Sequential(nn.InstanceNorm2d(2), nn.Upsample(scale_factor=2), nn.PixelShuffle(2)),
]


@pytest.mark.parametrize("make", REPRS)
def test_repr_and_state_dict_keys(make):
    tm, vm = make(torch.nn), make(vkt.nn)
    assert repr(vm) == repr(tm)
    assert list(vm.state_dict().keys()) == list(tm.state_dict().keys())


# (call(nn, lib)): lib is torch or vkt; both libraries must raise the same exception type and message.
ERRORS = [
    lambda nn, lib: lib.nn.functional.instance_norm(lib.zeros(2, 3, 1)),
    lambda nn, lib: lib.nn.functional.instance_norm(lib.zeros(3)),
    lambda nn, lib: lib.nn.functional.instance_norm(lib.zeros(2, 3, 4), use_input_stats=False),
    lambda nn, lib: lib.nn.functional.instance_norm(lib.zeros(2, 3, 4), weight=lib.zeros(4), bias=lib.zeros(5)),
    lambda nn, lib: lib.nn.functional.instance_norm(lib.zeros(2, 3, 4), running_mean=lib.zeros(3)),
    lambda nn, lib: lib.nn.functional.instance_norm(lib.zeros(2, 3, 4), lib.zeros(3), lib.zeros(5)),
    lambda nn, lib: nn.InstanceNorm1d(3)(lib.zeros(2, 3, 4, 5)),
    lambda nn, lib: nn.InstanceNorm3d(3)(lib.zeros(3, 4)),
    lambda nn, lib: nn.InstanceNorm1d(3, affine=True)(lib.zeros(2, 4, 5)),
    lambda nn, lib: nn.InstanceNorm1d(3, affine=True)(lib.zeros(4, 5)),
    lambda nn, lib: nn.InstanceNorm2d(3)(lib.zeros(3, 1, 1)),
    lambda nn, lib: nn.BatchNorm3d(3)(lib.zeros(2, 3, 4, 4)),
    lambda nn, lib: nn.BatchNorm3d(3)(lib.zeros(1, 3, 1, 1, 1)),
    lambda nn, lib: nn.LocalResponseNorm(2)(lib.zeros(2, 3)),
    lambda nn, lib: nn.LocalResponseNorm(0)(lib.zeros(2, 3, 2)),
    lambda nn, lib: nn.LocalResponseNorm(-1)(lib.zeros(2, 3, 2, 2)),
    lambda nn, lib: nn.ChannelShuffle(2)(lib.zeros(2, 6)),
    lambda nn, lib: nn.ChannelShuffle(4)(lib.zeros(2, 6, 3)),
    lambda nn, lib: nn.ChannelShuffle(0)(lib.zeros(2, 5, 3)),
    lambda nn, lib: nn.PixelShuffle(2)(lib.zeros(2, 3, 4)),
    lambda nn, lib: nn.PixelUnshuffle(2)(lib.zeros(1, 3, 5)),
    lambda nn, lib: nn.Softmax2d()(lib.zeros(2, 3)),
    lambda nn, lib: nn.AdaptiveMaxPool1d(2)(lib.zeros(5)),
    lambda nn, lib: nn.AdaptiveMaxPool1d((2, 2))(lib.zeros(2, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool1d(None)(lib.zeros(2, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool1d(2.0)(lib.zeros(2, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool1d(2)(lib.zeros(2, 0)),
    lambda nn, lib: nn.AdaptiveMaxPool1d(-1)(lib.zeros(2, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool2d(2)(lib.zeros(2, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool2d((2, 2))(lib.zeros(2, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool2d((2,))(lib.zeros(2, 5, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool2d((2, 2, 2))(lib.zeros(1, 2, 3, 3)),
    lambda nn, lib: nn.AdaptiveMaxPool2d(2)(lib.zeros(2, 0, 7)),
    lambda nn, lib: nn.AdaptiveMaxPool2d((-1, 2))(lib.zeros(2, 5, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool1d(2)(lib.ones(2, 5, dtype=lib.int64)),
    lambda nn, lib: nn.AdaptiveMaxPool2d(2)(lib.ones(2, 5, 5, dtype=lib.uint8)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2)(lib.zeros(2, 3, 4)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2)(lib.zeros(1, 2, 3, 4, 5, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d((2, 2))(lib.zeros(2, 3, 4, 5, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d((2,))(lib.zeros(2, 3, 4, 5)),
    lambda nn, lib: nn.AdaptiveMaxPool3d((2, None, None))(lib.zeros(2, 3)),
    lambda nn, lib: nn.AdaptiveMaxPool3d((2, -1, -3))(lib.zeros(2, 3, 4, 5, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(-2)(lib.ones(3, 4, 5, 6, dtype=lib.int32)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2)(lib.zeros(2, 0, 4, 5, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2)(lib.zeros(2, 3, 4, 0, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2.0)(lib.zeros(2, 3, 4, 5, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(None)(lib.zeros(2, 3, 4, 5, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(True)(lib.zeros(2, 3, 4, 5, 6)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2)(lib.ones(0, 3, 4, 5, 6, dtype=lib.int64)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2)(lib.ones(3, 4, 5, 6, dtype=lib.uint8)),
    lambda nn, lib: nn.AdaptiveMaxPool3d(2)(lib.ones(3, 4, 5, 6, dtype=lib.bool)),
    lambda nn, lib: nn.AdaptiveMaxPool2d((-1, -2))(lib.ones(2, 5, 5, dtype=lib.int32)),
    lambda nn, lib: nn.FractionalMaxPool2d(2),
    lambda nn, lib: nn.FractionalMaxPool3d(2),
    lambda nn, lib: nn.FractionalMaxPool2d(2, 3, 0.5),
    lambda nn, lib: nn.FractionalMaxPool3d(2, 3, 0.5),
    lambda nn, lib: nn.FractionalMaxPool2d(2, output_ratio=1.0),
    lambda nn, lib: nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0)),
    lambda nn, lib: nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.2, 1.5)),
    lambda nn, lib: nn.FractionalMaxPool3d(0, output_ratio=0.5),
    lambda nn, lib: nn.FractionalMaxPool3d((2, -1, 2), output_size=3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 9, 9), 2),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, output_ratio=0.5),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, output_ratio=(0.5,)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, output_ratio=(0.5,) * 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, output_ratio=(1.5, 0.5)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 2, output_ratio=(0.5, 0.5)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 3, (6, 5)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 3, (4, 8)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 3, (6, 3, 3)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 3, (3, 7, 3)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 3, (3, 3, 8)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, (-1, 2)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(3, 7, 8, 9), 2, (2, -1, 2)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), (2, 2, 2), 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, (3,)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), (2,), 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 2, (3, 3)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2.0, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, 3.0),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(7, 9), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(7, 8, 9), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(7, 9), 2, 3,
                                                            _random_samples=_samples(lib, (1, 7, 2))),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(1, 2, 3, 7, 9), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(7, 8, 9), 2, 3,
                                                            _random_samples=_samples(lib, (1, 7, 3))),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 0, 7, 9), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 0, 9), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 0, 9), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 9, dtype=lib.int64), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.ones(2, 3, 7, 8, 9, dtype=lib.int32), 2, 3),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(
        lib.ones(2, 3, 7, 9, dtype=lib.int64), 2, 3, _random_samples=lib.zeros(2, 3, 2, dtype=lib.int64)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(
        lib.ones(2, 3, 7, 8, 9, dtype=lib.uint8), 2, 3, _random_samples=lib.zeros(2, 3, 3, dtype=lib.uint8)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(
        lib.ones(2, 3, 7, 9, dtype=lib.bool), 2, 3, _random_samples=lib.zeros(2, 3, 2, dtype=lib.bool)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(
        lib.ones(2, 3, 7, 9, dtype=lib.int64), 2, (-1, 3), _random_samples=lib.zeros(2, 1, 2, dtype=lib.int64)),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(
        lib.zeros(2, 3, 7, 9), 2, 3, _random_samples=_samples(lib, (2, 3, 2), "float64")),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, 3,
                                                            _random_samples=_samples(lib, (6, 2))),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, 3,
                                                            _random_samples=_samples(lib, (1, 3, 2))),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, 3,
                                                            _random_samples=_samples(lib, (2, 4, 2))),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, 3,
                                                            _random_samples=_samples(lib, (2, 3, 3))),
    lambda nn, lib: lib.nn.functional.fractional_max_pool3d(lib.zeros(2, 3, 7, 8, 9), 2, 3,
                                                            _random_samples=_samples(lib, (2, 3, 2))),
    lambda nn, lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(2, 3, 7, 9), 2, 3,
                                                            _random_samples=[[[0.5, 0.5]] * 3] * 2),
    lambda nn, lib: nn.AlphaDropout(2),
    lambda nn, lib: nn.FeatureAlphaDropout(-0.1),
    lambda nn, lib: lib.nn.functional.alpha_dropout(lib.zeros(3), 1.5),
    lambda nn, lib: lib.nn.functional.feature_alpha_dropout(lib.zeros(3), 0.5, True),
    lambda nn, lib: lib.nn.functional.alpha_dropout(lib.zeros(3, requires_grad=True), 0.5, True, True),
    lambda nn, lib: nn.Upsample(size=2, scale_factor=2)(lib.zeros(1, 1, 3)),
    lambda nn, lib: nn.Upsample()(lib.zeros(1, 1, 3)),
    lambda nn, lib: nn.Upsample(scale_factor=2, align_corners=True)(lib.zeros(1, 1, 3)),
    lambda nn, lib: nn.Upsample(scale_factor=2, mode="foo")(lib.zeros(1, 1, 3)),
    lambda nn, lib: nn.UpsamplingBilinear2d(scale_factor=2)(lib.zeros(1, 2, 4)),
    lambda nn, lib: nn.Fold((4, 5), 2)(lib.zeros(1, 3, 12)),
    lambda nn, lib: nn.Unfold(2)(lib.zeros(1, 3, 1, 1)),
]



@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    ref = raised(lambda: ERRORS[index](torch.nn, torch))
    assert ref[0] is not None, "torch accepted the call"
    assert raised(lambda: ERRORS[index](vkt.nn, vkt)) == ref


def test_small_net_trains_on_device(device):
    """The layers together: forward, backward into every parameter, no CPU fallback."""
    nn = vkt.nn
    net = nn.Sequential(nn.InstanceNorm2d(4, affine=True, track_running_stats=True), nn.PixelUnshuffle(2),
                        nn.ChannelShuffle(4), nn.LocalResponseNorm(3), nn.AdaptiveMaxPool2d((3, 2)),
                        nn.Upsample(scale_factor=2, mode="bilinear"), nn.Softmax2d(), nn.AlphaDropout(0.2),
                        nn.Flatten(), nn.Linear(16 * 6 * 4, 3)).to(device)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    loss = net(vkt.randn(2, 4, 6, 8, device=device)).sum()
    loss.backward()
    _check_no_fallback(device)
    assert all(p.grad is not None for p in net.parameters())
    assert np.isfinite(float(loss.item()))
