# vkt.nn's convolution, pooling, normalisation, attention and transformer modules against torch.nn:
# each case builds the same module in both libraries (one constructor call, written once), loads torch's
# state dict into vkt's, and compares outputs and the gradients of inputs and parameters on the cpu and
# vulkan devices; then buffers, initialisation bounds, reprs, state-dict keys and constructor errors.
import math

import numpy as np
import pytest
import torch

import vkt
from conftest import assert_close, raised, to_numpy

TOL = 2e-4
KPM = np.array([[False, False, True, False, True], [False, True, False, False, False]])
CAUSAL = ~np.tril(np.ones((4, 4), dtype=bool))
FLOAT_MASK = np.random.default_rng(9).standard_normal((4, 5)).astype(np.float32)
BOOL_MASK = np.random.default_rng(9).random((4, 5)) > 0.7
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")

# (id, make(nn), input shapes, call(module, T, *inputs)): nn is torch.nn or vkt.nn; T turns a NumPy
# constant (a mask) into that library's tensor on the case's device.
CASES = [
    ("conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), [(2, 3, 11)], None),
    ("conv1d_same_reflect", lambda nn: nn.Conv1d(3, 4, 4, padding="same", padding_mode="reflect", dilation=2),
     [(2, 3, 11)], None),
    ("conv1d_unbatched_nobias", lambda nn: nn.Conv1d(3, 2, 5, bias=False), [(3, 9)], None),
    ("conv2d", lambda nn: nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), [(2, 4, 7, 9)], None),
    ("conv2d_k5_dilation", lambda nn: nn.Conv2d(3, 4, (5, 3), padding=(2, 1), dilation=(1, 2)),
     [(2, 3, 7, 9)], None),
    ("conv2d_reflect", lambda nn: nn.Conv2d(3, 4, 3, padding=(1, 2), padding_mode="reflect"), [(2, 3, 7, 9)], None),
    ("conv2d_replicate", lambda nn: nn.Conv2d(3, 4, 3, stride=2, padding=2, padding_mode="replicate"),
     [(2, 3, 7, 9)], None),
    ("conv2d_circular_unbatched", lambda nn: nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"),
     [(3, 7, 9)], None),
    ("conv2d_same_zeros", lambda nn: nn.Conv2d(3, 4, 4, padding="same"), [(2, 3, 7, 9)], None),
    ("conv_transpose2d", lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
     [(2, 4, 5, 6)], None),
    ("conv_transpose2d_output_size", lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2, dilation=2),
     [(2, 3, 4, 5)], lambda m, T, x: m(x, output_size=(12, 14))),
    ("conv_transpose2d_unbatched", lambda nn: nn.ConvTranspose2d(3, 2, (2, 3), stride=(1, 2), bias=False),
     [(3, 4, 5)], None),
    ("max_pool2d", lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True), [(2, 3, 7, 9)], None),
    ("max_pool2d_indices", lambda nn: nn.MaxPool2d(2, return_indices=True), [(3, 7, 9)],
     lambda m, T, x: m(x)[0]),
    ("max_pool1d", lambda nn: nn.MaxPool1d(3, 2, 1, ceil_mode=True), [(2, 3, 10)], None),
    ("avg_pool1d", lambda nn: nn.AvgPool1d(3, 2, 1, count_include_pad=False), [(2, 3, 10)], None),
    ("adaptive_avg_pool1d", lambda nn: nn.AdaptiveAvgPool1d(4), [(3, 10)], None),
    ("avg_pool2d", lambda nn: nn.AvgPool2d((3, 2), 2, 1, count_include_pad=False), [(2, 3, 7, 9)], None),
    ("adaptive_avg_pool2d", lambda nn: nn.AdaptiveAvgPool2d((3, None)), [(2, 3, 7, 9)], None),
    ("batch_norm1d", lambda nn: nn.BatchNorm1d(3), [(4, 3, 5)], None),
    ("batch_norm1d_2d_input", lambda nn: nn.BatchNorm1d(3, momentum=None), [(5, 3)], None),
    ("batch_norm2d", lambda nn: nn.BatchNorm2d(3, eps=1e-3, momentum=0.3), [(2, 3, 4, 5)], None),
    ("batch_norm2d_no_affine", lambda nn: nn.BatchNorm2d(3, affine=False), [(2, 3, 4, 5)], None),
    ("batch_norm2d_untracked", lambda nn: nn.BatchNorm2d(3, track_running_stats=False), [(2, 3, 4, 5)], None),
    ("group_norm", lambda nn: nn.GroupNorm(2, 4), [(2, 4, 3, 5)], None),
    ("group_norm_no_affine", lambda nn: nn.GroupNorm(3, 6, affine=False, eps=1e-3), [(2, 6, 5)], None),
    ("mha_self", lambda nn: nn.MultiheadAttention(8, 2), [(4, 2, 8)], lambda m, T, x: m(x, x, x)[0]),
    ("mha_weights", lambda nn: nn.MultiheadAttention(8, 2, batch_first=True), [(2, 4, 8), (2, 5, 8), (2, 5, 8)],
     lambda m, T, q, k, v: m(q, k, v, average_attn_weights=False)[1]),
    ("mha_kdim_vdim_kpm", lambda nn: nn.MultiheadAttention(8, 4, kdim=3, vdim=6, batch_first=True),
     [(2, 4, 8), (2, 5, 3), (2, 5, 6)], lambda m, T, q, k, v: m(q, k, v, key_padding_mask=T(KPM))[0]),
    ("mha_float_mask_no_weights", lambda nn: nn.MultiheadAttention(8, 2, bias=False),
     [(4, 2, 8), (5, 2, 8), (5, 2, 8)],
     lambda m, T, q, k, v: m(q, k, v, attn_mask=T(FLOAT_MASK), need_weights=False)[0]),
    ("mha_causal", lambda nn: nn.MultiheadAttention(8, 2, batch_first=True), [(2, 4, 8)],
     lambda m, T, x: m(x, x, x, attn_mask=T(CAUSAL), is_causal=True, need_weights=False)[0]),
    ("mha_bias_kv_zero_attn", lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True),
     [(4, 2, 8), (5, 2, 8), (5, 2, 8)],
     lambda m, T, q, k, v: _times_mean(*m(q, k, v, key_padding_mask=T(KPM), attn_mask=T(BOOL_MASK)))),
    ("mha_unbatched", lambda nn: nn.MultiheadAttention(6, 3), [(4, 6), (5, 6), (5, 6)],
     lambda m, T, q, k, v: m(q, k, v)[0]),
    ("encoder_layer", lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), [(4, 2, 8)], None),
    ("encoder_layer_norm_first_gelu", lambda nn: nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, activation="gelu", norm_first=True, batch_first=True, layer_norm_eps=1e-4),
     [(2, 4, 8)], lambda m, T, x: m(x, src_mask=T(CAUSAL), is_causal=True)),
    ("encoder_layer_kpm_no_bias", lambda nn: nn.TransformerEncoderLayer(
        8, 4, 12, dropout=0.0, batch_first=True, bias=False), [(2, 5, 8)],
     lambda m, T, x: m(x, src_key_padding_mask=T(KPM))),
]


def _times_mean(out, weights):
    """The output times the mean attention weight: one tensor whose gradient reaches both results."""
    return out * weights.mean()


def _vkt_module(make, torch_module, device):
    module = make(vkt.nn)
    module.load_state_dict({k: vkt.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})
    return module.to(device)


def _run(module, call, arrays, T, tensor):
    inputs = [tensor(a) for a in arrays]
    out = module(*inputs) if call is None else call(module, T, *inputs)
    if isinstance(out, tuple):
        out = out[0]
    up = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * tensor(up).detach()).sum().backward()
    grads = {name: p.grad for name, p in module.named_parameters()}
    return out, [x.grad for x in inputs], grads


@pytest.mark.parametrize("name,make,shapes,call", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, make, shapes, call, device):
    torch.manual_seed(0)
    tm = make(torch.nn)
    vm = _vkt_module(make, tm, device)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ref, ref_in, ref_params = _run(tm, call, arrays, torch.tensor, lambda a: torch.tensor(a, requires_grad=True))
    got, got_in, got_params = _run(vm, call, arrays, lambda a: vkt.tensor(a, device=device),
                                   lambda a: vkt.tensor(a, device=device, requires_grad=True))
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, "an op fell back to the CPU"
    assert_close(got.detach(), ref.detach().numpy(), rtol=TOL, atol=TOL)
    for g, r in zip(got_in, ref_in):  # None: the output does not depend on that input (attention weights on v)
        assert (g is None) == (r is None)
        if r is not None:
            assert_close(g, r.numpy(), rtol=TOL, atol=TOL)
    assert got_params.keys() == ref_params.keys()
    for key, r in ref_params.items():
        assert (got_params[key] is None) == (r is None), key
        if r is not None:
            assert_close(got_params[key], r.numpy(), rtol=TOL, atol=TOL)
    for key, r in tm.state_dict().items():  # running statistics and num_batches_tracked after the step
        assert_close(vm.state_dict()[key], r.numpy(), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_over_steps(device, momentum):
    """Three training steps, then evaluation: running stats (momentum=None: cumulative average) and
    num_batches_tracked as torch's."""
    tm, vm = torch.nn.BatchNorm2d(3, momentum=momentum), vkt.nn.BatchNorm2d(3, momentum=momentum).to(device)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = (rng.standard_normal((2, 3, 4, 5)) * 2 + 1).astype(np.float32)
        tm(torch.tensor(x))
        vm(vkt.tensor(x, device=device))
    for key, r in tm.state_dict().items():
        assert_close(vm.state_dict()[key], r.numpy(), rtol=1e-5, atol=1e-5)
    tm.eval()
    vm.eval()
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    assert_close(vm(vkt.tensor(x, device=device)).detach(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                 atol=1e-5)
    assert int(vm.num_batches_tracked.item()) == 3


@pytest.mark.parametrize("make", [
    lambda nn: nn.Conv1d(3, 4, 5),
    lambda nn: nn.Conv2d(6, 4, (3, 2), groups=2),
    lambda nn: nn.ConvTranspose2d(4, 6, 3, groups=2),
])
def test_conv_init_bounds(make):
    """kaiming_uniform(a=sqrt(5)) gives weights in +-1/sqrt(fan_in); the bias shares the bound."""
    m = make(vkt.nn)
    bound = 1 / math.sqrt(m.weight.shape[1] * int(np.prod(m.weight.shape[2:])))
    w, b = to_numpy(m.weight.detach()), to_numpy(m.bias.detach())
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.5 * bound and w.std() > 0.3 * bound


def test_mha_init():
    m = vkt.nn.MultiheadAttention(8, 2)
    bound = math.sqrt(6 / (8 + 24))  # xavier_uniform over the packed (3E, E) weight
    assert np.abs(to_numpy(m.in_proj_weight.detach())).max() <= bound
    assert not to_numpy(m.in_proj_bias.detach()).any() and not to_numpy(m.out_proj.bias.detach()).any()


REPRS = [
    lambda nn: nn.Conv1d(3, 4, 3, padding="same", padding_mode="reflect"),
    lambda nn: nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=2, groups=1, bias=False),
    lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2),
    lambda nn: nn.MaxPool1d(3, 2, 1, ceil_mode=True),
    lambda nn: nn.AvgPool1d(3),
    lambda nn: nn.AdaptiveAvgPool1d(4),
    lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True),
    lambda nn: nn.AvgPool2d((3, 2), 2, 1),
    lambda nn: nn.AdaptiveAvgPool2d((3, None)),
    lambda nn: nn.BatchNorm1d(3, momentum=None, affine=False),
    lambda nn: nn.BatchNorm2d(4),
    lambda nn: nn.GroupNorm(2, 4),
    lambda nn: nn.MultiheadAttention(8, 2),
    lambda nn: nn.TransformerEncoderLayer(8, 2, 16),
]


@pytest.mark.parametrize("make", REPRS)
def test_repr_and_state_dict_keys(make):
    tm, vm = make(torch.nn), make(vkt.nn)
    assert repr(vm) == repr(tm)
    assert list(vm.state_dict().keys()) == list(tm.state_dict().keys())


# (make(nn, lib)): lib is torch or vkt; both libraries must raise the same exception type and message.
ERRORS = [
    lambda nn, lib: nn.Conv2d(3, 4, 3, groups=0),
    lambda nn, lib: nn.Conv2d(3, 4, 3, groups=2),
    lambda nn, lib: nn.Conv2d(4, 3, 3, groups=2),
    lambda nn, lib: nn.Conv2d(3, 4, 3, padding="full"),
    lambda nn, lib: nn.Conv2d(3, 4, 3, stride=2, padding="same"),
    lambda nn, lib: nn.Conv1d(3, 4, 3, padding_mode="mirror"),
    lambda nn, lib: nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect"),
    lambda nn, lib: nn.GroupNorm(3, 4),
    lambda nn, lib: nn.MultiheadAttention(8, 3),
    lambda nn, lib: nn.MultiheadAttention(0, 2),
    lambda nn, lib: nn.TransformerEncoderLayer(8, 2, activation="tanh"),
    lambda nn, lib: nn.BatchNorm2d(3)(lib.zeros(2, 3, 4)),
    lambda nn, lib: nn.BatchNorm1d(3)(lib.zeros(2, 3, 4, 5)),
    lambda nn, lib: nn.MultiheadAttention(4, 2)(*[lib.zeros(3, 1, 4)] * 3, is_causal=True),
    lambda nn, lib: nn.MultiheadAttention(4, 2)(*[lib.zeros(3, 1, 4)] * 3, attn_mask=lib.zeros(3, 2)),
]




@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    ref = raised(lambda: ERRORS[index](torch.nn, torch))
    assert ref[0] is not None, "torch accepted the call"
    assert raised(lambda: ERRORS[index](vkt.nn, vkt)) == ref


def test_conv_transpose2d_output_size_errors():
    for nn in (torch.nn, vkt.nn):
        m = nn.ConvTranspose2d(3, 2, 3, stride=2)
        x = (torch if nn is torch.nn else vkt).zeros(1, 3, 4, 5)
        with pytest.raises(ValueError, match="requested an output size of"):
            m(x, output_size=(20, 11))
        with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
            m(x, output_size=(9,))


def test_small_cnn_and_encoder_train_on_device(device):
    """The layers together, dropout active: forward, backward into every parameter, no CPU fallback."""
    nn = vkt.nn
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(4, 8, 3, stride=2, padding=1, padding_mode="reflect"), nn.GroupNorm(2, 8),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3)).to(device)
    encoder = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5, batch_first=True).to(device)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    loss = cnn(vkt.randn(2, 3, 9, 11, device=device)).sum()
    attended, weights = encoder.self_attn(*[vkt.randn(2, 5, 8, device=device)] * 3)
    loss = loss + encoder(vkt.randn(2, 5, 8, device=device)).sum() + attended.sum() + weights.sum()
    loss.backward()
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, "an op fell back to the CPU"
    for module in (cnn, encoder):
        assert all(p.grad is not None for p in module.parameters())
    assert np.isfinite(float(loss.item()))
