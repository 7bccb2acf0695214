# vkt.nn's transformer stacks (TransformerDecoderLayer, TransformerEncoder/Decoder, Transformer) and padding
# modules against torch.nn on the cpu and vulkan devices: torch's state dict loaded into vkt's module, both in
# eval mode, then outputs and the gradients of inputs and parameters; reprs, state-dict keys, initialisation,
# the causal-mask helper, and torch's errors and warnings for bad arguments and inputs.
import math
import warnings

import numpy as np
import pytest

import vkt
from conftest import assert_close, raised, to_numpy

torch = pytest.importorskip("torch")
# torch's own warnings (no nested-tensor path, mixed bool/float masks in its MultiheadAttention) are not at issue
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True", "ignore:Support for mismatched",
                                      "ignore:The PyTorch API of nested tensors")

RTOL, ATOL = 1e-4, 1e-5
# Masks for a source of 5 positions, a target of 4, a batch of 2: True (or -inf) is a position not attended.
SRC_KPM = np.array([[False, False, False, True, True], [False, False, False, False, False]])
TGT_KPM = np.array([[False, False, False, True], [False, False, False, False]])
TGT_CAUSAL = ~np.tril(np.ones((4, 4), dtype=bool))
TGT_CAUSAL_FLOAT = np.where(TGT_CAUSAL, -np.inf, 0.0).astype(np.float32)
SRC_CAUSAL_FLOAT = np.where(~np.tril(np.ones((5, 5), dtype=bool)), -np.inf, 0.0).astype(np.float32)
MEMORY_MASK = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)


def _enc_layer(nn, **kw):
    return nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)


def _dec_layer(nn, **kw):
    return nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw)


def _transformer(nn, **kw):
    return nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, **kw)


# (id, make(nn), input shapes, call(module, T, *inputs) or None for module(*inputs)): nn is torch.nn or vkt.nn;
# T turns a NumPy mask into that library's tensor on the case's device.
CASES = [
    ("dec_layer", _dec_layer, [(4, 2, 8), (5, 2, 8)], None),
    ("dec_layer_causal_kpm", _dec_layer, [(4, 2, 8), (5, 2, 8)],
     lambda m, T, t, mem: m(t, mem, tgt_mask=T(TGT_CAUSAL), tgt_is_causal=True, tgt_key_padding_mask=T(TGT_KPM),
                            memory_key_padding_mask=T(SRC_KPM))),
    ("dec_layer_norm_first_gelu_batch_first", lambda nn: _dec_layer(
        nn, activation="gelu", norm_first=True, batch_first=True, layer_norm_eps=1e-4), [(2, 4, 8), (2, 5, 8)],
     lambda m, T, t, mem: m(t, mem, tgt_mask=T(TGT_CAUSAL_FLOAT), memory_mask=T(MEMORY_MASK))),
    ("dec_layer_callable_no_bias", lambda nn: _dec_layer(nn, activation=lambda x: x.tanh(), bias=False),
     [(4, 2, 8), (5, 2, 8)], None),
    ("dec_layer_module_activation_unbatched", lambda nn: _dec_layer(nn, activation=nn.GELU()), [(4, 8), (5, 8)],
     lambda m, T, t, mem: m(t, mem, tgt_mask=T(TGT_CAUSAL))),
    ("encoder_norm_kpm", lambda nn: nn.TransformerEncoder(_enc_layer(nn), 2, nn.LayerNorm(8)), [(5, 2, 8)],
     lambda m, T, x: m(x, src_key_padding_mask=T(SRC_KPM))),
    ("encoder_detected_causal", lambda nn: nn.TransformerEncoder(_enc_layer(nn, batch_first=True), 2),
     [(2, 5, 8)], lambda m, T, x: m(x, mask=T(SRC_CAUSAL_FLOAT))),
    ("encoder_norm_first_no_bias_bool_masks", lambda nn: nn.TransformerEncoder(
        _enc_layer(nn, norm_first=True, bias=False, batch_first=True), 2, enable_nested_tensor=False),
     [(2, 5, 8)], lambda m, T, x: m(x, mask=T(~np.tril(np.ones((5, 5), dtype=bool))), is_causal=True,
                                    src_key_padding_mask=T(SRC_KPM))),
    ("decoder_norm_masks", lambda nn: nn.TransformerDecoder(_dec_layer(nn), 2, nn.LayerNorm(8)),
     [(4, 2, 8), (5, 2, 8)],
     lambda m, T, t, mem: m(t, mem, tgt_mask=T(TGT_CAUSAL), memory_mask=T(MEMORY_MASK),
                            tgt_key_padding_mask=T(TGT_KPM), memory_key_padding_mask=T(SRC_KPM))),
    ("decoder_batch_first_unbatched", lambda nn: nn.TransformerDecoder(_dec_layer(nn, batch_first=True), 2),
     [(4, 8), (5, 8)], lambda m, T, t, mem: m(t, mem, tgt_mask=T(TGT_CAUSAL_FLOAT))),
    ("transformer", _transformer, [(5, 2, 8), (4, 2, 8)],
     lambda m, T, s, t: m(s, t, tgt_mask=T(TGT_CAUSAL_FLOAT), src_key_padding_mask=T(SRC_KPM),
                          tgt_key_padding_mask=T(TGT_KPM), memory_key_padding_mask=T(SRC_KPM))),
    ("transformer_batch_first_norm_first_gelu", lambda nn: _transformer(
        nn, batch_first=True, norm_first=True, activation="gelu"), [(2, 5, 8), (2, 4, 8)],
     lambda m, T, s, t: m(s, t, src_mask=T(SRC_CAUSAL_FLOAT), tgt_mask=T(TGT_CAUSAL), memory_mask=T(MEMORY_MASK),
                          tgt_is_causal=True)),
    ("transformer_unbatched_no_bias", lambda nn: _transformer(nn, bias=False, layer_norm_eps=1e-3),
     [(5, 8), (4, 8)], lambda m, T, s, t: m(s, t, tgt_mask=T(TGT_CAUSAL_FLOAT))),
]

PAD_SHAPES = {1: [(2, 3, 5), (3, 5)], 2: [(2, 3, 4, 5), (3, 4, 5)], 3: [(2, 2, 3, 4, 5), (2, 3, 4, 5)]}
# Per mode: the paddings tried for 1, 2, 3 spatial dims (an int, and a tuple with uneven, zero and cropping
# entries where the mode allows them).
PADDINGS = {
    "Zero": {1: [2, (-1, 3)], 2: [1, (2, 0, -1, 3)], 3: [1, (1, 2, 0, -1, 2, 1)]},
    "Constant": {1: [2, (-1, 3)], 2: [1, (2, 0, -1, 3)], 3: [1, (1, 2, 0, -1, 2, 1)]},
    "Reflection": {1: [2, (4, -1)], 2: [1, (2, 0, -1, 3)], 3: [1, (2, 1, 0, 3, -1, 2)]},
    "Replication": {1: [3, (6, -2)], 2: [2, (2, 0, -1, 5)], 3: [1, (2, 1, 0, 3, -1, 4)]},
    # torch itself fails (an overlapping copy) where a pad wraps past what a negative pad leaves
    "Circular": {1: [3, (3, -2)], 2: [2, (2, 0, -1, 3)], 3: [1, (2, 1, 0, 3, -1, 2)]},
}
PAD_CASES = [(mode, nd, padding, shape) for mode, by_nd in PADDINGS.items() for nd, paddings in by_nd.items()
             for padding in paddings for shape in PAD_SHAPES[nd]]


def _pad_module(nn, mode, nd, padding):
    cls = getattr(nn, f"{mode}Pad{nd}d")
    return cls(padding, 1.5) if mode == "Constant" else cls(padding)


def _run(module, call, arrays, T, tensor):
    inputs = [tensor(a) for a in arrays]
    out = module(*inputs) if call is None else call(module, T, *inputs)
    up = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * tensor(up).detach()).sum().backward()
    return out, [x.grad for x in inputs], {name: p.grad for name, p in module.named_parameters()}


def _compare(make, call, shapes, device):
    torch.manual_seed(0)
    tm = make(torch.nn).eval()
    vm = make(vkt.nn)
    vm.load_state_dict({k: vkt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    vm = vm.to(device).eval()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    ref, ref_in, ref_params = _run(tm, call, arrays, torch.tensor, lambda a: torch.tensor(a, requires_grad=True))
    got, got_in, got_params = _run(vm, call, arrays, lambda a: vkt.tensor(a, device=device),
                                   lambda a: vkt.tensor(a, device=device, requires_grad=True))
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, "an op fell back to the CPU"
    assert got.device.type == device
    assert_close(got.detach(), ref.detach().numpy(), rtol=RTOL, atol=ATOL)
    for g, r in zip(got_in, ref_in):
        assert_close(g, r.numpy(), rtol=RTOL, atol=ATOL)
    assert got_params.keys() == ref_params.keys()
    for key, r in ref_params.items():
        assert_close(got_params[key], r.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name,make,shapes,call", CASES, ids=[c[0] for c in CASES])
def test_transformer_matches_torch(name, make, shapes, call, device):
    _compare(make, call, shapes, device)


@pytest.mark.parametrize("mode,nd,padding,shape", PAD_CASES,
                         ids=[f"{m}{nd}d-{p}-{len(s)}D" for m, nd, p, s in PAD_CASES])
def test_padding_matches_torch(mode, nd, padding, shape, device):
    _compare(lambda nn: _pad_module(nn, mode, nd, padding), None, [shape], device)


def test_zero_pad_short_tuple_pads_fewer_dims(device):
    """torch takes a padding tuple as it is, whatever its length: ZeroPad2d((1, 2)) pads the last dim only."""
    _compare(lambda nn: nn.ZeroPad2d((1, 2)), None, [(2, 3, 4)], device)


def test_encoder_fast_path_agrees_on_kept_positions():
    """torch's nested-tensor path (eval, no grad, batch_first, padding mask) zeroes padded positions; the
    positions that are kept agree with vkt's plain path."""
    torch.manual_seed(0)
    tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2).eval()
    vm = vkt.nn.TransformerEncoder(vkt.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2).eval()
    vm.load_state_dict({k: vkt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    with torch.no_grad():
        ref = tm(torch.tensor(x), src_key_padding_mask=torch.tensor(SRC_KPM)).numpy()
    with vkt.no_grad():
        got = to_numpy(vm(vkt.tensor(x), src_key_padding_mask=vkt.tensor(SRC_KPM)))
    assert_close(got[~SRC_KPM], ref[~SRC_KPM], rtol=RTOL, atol=ATOL)


def test_encoder_layers_are_independent_copies():
    layer = vkt.nn.TransformerEncoderLayer(8, 2, 16)
    enc = vkt.nn.TransformerEncoder(layer, 3, mask_check=False)
    assert (enc.num_layers, enc.enable_nested_tensor, enc.mask_check, enc.norm) == (3, True, False, None)
    first, second = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert first is not second and first is not layer.linear1.weight
    assert_close(first.detach(), to_numpy(second.detach()), rtol=0, atol=0)


def test_transformer_init_and_attributes():
    """xavier_uniform_ on every weight of dim > 1, drawn afresh for each layer; biases and norms as built."""
    m = vkt.nn.Transformer(8, 2, 2, 1, 16, batch_first=True)
    assert (m.d_model, m.nhead, m.batch_first) == (8, 2, True)
    for name, p in m.named_parameters():
        w = to_numpy(p.detach())
        if p.dim() > 1:
            bound = math.sqrt(6 / (p.shape[0] + p.shape[1]))
            assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound, name
    a, b = (to_numpy(m.encoder.layers[i].linear1.weight.detach()) for i in range(2))
    assert not np.array_equal(a, b)
    assert not to_numpy(m.encoder.layers[0].self_attn.in_proj_bias.detach()).any()
    assert (to_numpy(m.decoder.norm.weight.detach()) == 1).all()


def test_transformer_custom_encoder_decoder():
    enc = vkt.nn.TransformerEncoder(vkt.nn.TransformerEncoderLayer(8, 2, 16), 1)
    dec = vkt.nn.TransformerDecoder(vkt.nn.TransformerDecoderLayer(8, 2, 16), 1)
    m = vkt.nn.Transformer(8, 2, custom_encoder=enc, custom_decoder=dec)
    assert m.encoder is enc and m.decoder is dec
    assert list(m.state_dict())[0] == "encoder.layers.0.self_attn.in_proj_weight"


@pytest.mark.parametrize("dtype", [None, "float64", "bool"])
def test_generate_square_subsequent_mask(dtype, device):
    got = vkt.nn.Transformer.generate_square_subsequent_mask(
        4, device=device, dtype=None if dtype is None else getattr(vkt, dtype))
    ref = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=None if dtype is None else getattr(torch,
                                                                                                           dtype))
    assert got.device.type == device and str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    assert np.array_equal(to_numpy(got), ref.numpy())


REPRS = [
    lambda nn: _transformer(nn),
    lambda nn: nn.TransformerEncoder(_enc_layer(nn), 2, nn.LayerNorm(8)),
    lambda nn: nn.TransformerDecoder(_dec_layer(nn, activation=nn.GELU(), bias=False), 2),
    lambda nn: nn.TransformerDecoderLayer(8, 2),
    lambda nn: nn.ZeroPad1d(2),
    lambda nn: nn.ZeroPad2d((1, 2, 3, 4)),
    lambda nn: nn.ZeroPad3d(1),
    lambda nn: nn.ConstantPad1d((1, 2), 3),
    lambda nn: nn.ConstantPad2d(1, -0.5),
    lambda nn: nn.ConstantPad3d((1, 2, 3, 4, 5, 6), 2.5),
    lambda nn: nn.ReflectionPad1d(1),
    lambda nn: nn.ReflectionPad2d([1, 2, 3, 4]),
    lambda nn: nn.ReflectionPad3d(2),
    lambda nn: nn.ReplicationPad1d((0, 3)),
    lambda nn: nn.ReplicationPad2d(1),
    lambda nn: nn.ReplicationPad3d((1, 2, 3, 4, 5, 6)),
    lambda nn: nn.CircularPad1d(1),
    lambda nn: nn.CircularPad2d((1, 2, 3, 4)),
    lambda nn: nn.CircularPad3d(2),
]


@pytest.mark.parametrize("index", range(len(REPRS)))
def test_repr_and_state_dict_keys(index):
    tm, vm = REPRS[index](torch.nn), REPRS[index](vkt.nn)
    assert repr(vm) == repr(tm)
    assert list(vm.state_dict()) == list(tm.state_dict())
    if hasattr(tm, "padding"):
        assert vm.padding == tm.padding


def test_zero_pad_is_a_constant_pad():
    for nd in (1, 2, 3):
        m = getattr(vkt.nn, f"ZeroPad{nd}d")(1)
        assert isinstance(m, getattr(vkt.nn, f"ConstantPad{nd}d")) and m.value == 0.0


# (make(nn, lib)): lib is torch or vkt; both must raise the same exception type and message.
ERRORS = [
    lambda nn, lib: nn.TransformerDecoderLayer(8, 2, activation="tanh"),
    lambda nn, lib: nn.TransformerDecoderLayer(8, 3),
    lambda nn, lib: nn.Transformer(8, 3),
    lambda nn, lib: _transformer(nn)(lib.zeros(5, 2, 8), lib.zeros(4, 3, 8)),
    lambda nn, lib: _transformer(nn, batch_first=True)(lib.zeros(2, 5, 8), lib.zeros(3, 4, 8)),
    lambda nn, lib: _transformer(nn)(lib.zeros(5, 2, 8), lib.zeros(4, 2, 6)),
    lambda nn, lib: _transformer(nn)(lib.zeros(5, 6), lib.zeros(4, 8)),
    lambda nn, lib: _dec_layer(nn)(lib.zeros(4, 2, 8), lib.zeros(5, 2, 8), tgt_is_causal=True),
    lambda nn, lib: nn.TransformerEncoder(_enc_layer(nn), 1, enable_nested_tensor=False)(
        lib.zeros(5, 2, 8), mask=lib.zeros(5, 5, dtype=lib.int64)),
    lambda nn, lib: nn.TransformerEncoder(_enc_layer(nn), 1, enable_nested_tensor=False)(
        lib.zeros(5, 2, 8), src_key_padding_mask=lib.zeros(2, 5, dtype=lib.int32)),
    lambda nn, lib: nn.TransformerDecoder(_dec_layer(nn), 1)(lib.zeros(4, 2, 8), lib.zeros(5, 2, 8),
                                                             tgt_mask=lib.zeros(3, 3)),
    lambda nn, lib: nn.ReflectionPad1d(3)(lib.zeros(2, 3, 3)),
    lambda nn, lib: nn.ReflectionPad2d(1)(lib.zeros(3, 4)),
    lambda nn, lib: nn.ReplicationPad3d(1)(lib.zeros(3, 4, 5)),
    lambda nn, lib: nn.ReplicationPad1d(1)(lib.zeros(5)),
    lambda nn, lib: nn.ReplicationPad2d(1)(lib.zeros(2, 0, 4, 5)),
    lambda nn, lib: nn.ReflectionPad1d((1, 2, 3))(lib.zeros(2, 3, 5)),
    lambda nn, lib: nn.CircularPad1d(1)(lib.zeros(5)),
    lambda nn, lib: nn.CircularPad2d(1)(lib.zeros(3, 4)),
    lambda nn, lib: nn.CircularPad3d(1)(lib.zeros(2, 3, 4, 5, 6, 7)),
    lambda nn, lib: nn.CircularPad1d(6)(lib.zeros(2, 3, 5)),
    lambda nn, lib: nn.ConstantPad2d(1, 0)(lib.zeros(3)),
    lambda nn, lib: nn.ConstantPad1d(-4, 0)(lib.zeros(2, 3, 3)),
]



@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor warning, which vkt does not give
        ref = raised(lambda: ERRORS[index](torch.nn, torch))
        assert ref[0] is not None, "torch accepted the call"
        assert raised(lambda: ERRORS[index](vkt.nn, vkt)) == ref


def test_mismatched_mask_types_warn_as_torch():
    x = np.zeros((5, 2, 8), dtype=np.float32)
    for nn, lib in ((torch.nn, torch), (vkt.nn, vkt)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = nn.TransformerEncoder(_enc_layer(nn), 1, enable_nested_tensor=False)
        with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and mask is deprecated"):
            enc(lib.tensor(x), mask=lib.zeros(5, 5), src_key_padding_mask=lib.tensor(SRC_KPM))
