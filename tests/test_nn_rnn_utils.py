# vkt.nn.utils.rnn against torch.nn.utils.rnn on both devices: each utility's values, batch_sizes and indices, and
# the gradients through packing and padding; RNN, LSTM and GRU on PackedSequence input (unsorted lengths, torch's
# parameters loaded) with their outputs, final states and every gradient; torch's errors, type and message.
import re

import numpy as np
import pytest

import vkt
from vkt import nn
from vkt.nn.utils import rnn as R

from conftest import assert_close

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn

RNG = np.random.default_rng(2468)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def leaves(y):
    """Every tensor (or None) in a result: nested tuples and lists, PackedSequence's four fields."""
    if isinstance(y, (tuple, list)):
        return [t for x in y for t in leaves(x)]
    return [y]


def run_both(fn, arrays, device):
    """fn(lib, inputs) with lib torch and vkt; every result compared (values, dtype), then the gradient of a
    weighted sum of the float results with respect to every input."""
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    vx = [vkt.tensor(a, device=device, requires_grad=True) for a in arrays]
    ty, vy = leaves(fn(torch, tx)), leaves(fn(vkt, vx))
    assert len(vy) == len(ty)
    loss_t, loss_v = [], []
    for t, v in zip(ty, vy):
        if t is None:
            assert v is None
            continue
        assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        if t.is_floating_point():
            assert_close(v.detach(), t.detach().numpy(), 1e-6, 1e-6)
        else:
            np.testing.assert_array_equal(v.cpu().numpy(), t.numpy())
        if t.requires_grad:
            seed = randn(*t.shape)
            loss_t.append((t * torch.tensor(seed)).sum())
            loss_v.append((v * vkt.tensor(seed, device=device)).sum())
    if loss_t:
        sum(loss_t).backward()
        sum(loss_v).backward()
    for v, t in zip(vx, tx):
        assert (v.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert_close(v.grad, t.grad.numpy(), 1e-6, 1e-6)


def _rnn(lib):
    return lib.nn.utils.rnn


# (id, fn(lib, inputs), input shapes)
UTILITY_CASES = [
    ("pack-sorted", lambda m, x: _rnn(m).pack_padded_sequence(x[0], [5, 3, 3, 1]), [(5, 4, 2)]),
    ("pack-unsorted-ties-batch-first-tensor-lengths",
     lambda m, x: _rnn(m).pack_padded_sequence(x[0], m.tensor([2, 5, 1, 5]), batch_first=True,
                                              enforce_sorted=False), [(4, 5, 2)]),
    ("pack-no-trailing-dims", lambda m, x: _rnn(m).pack_padded_sequence(x[0], [6, 2, 4], enforce_sorted=False),
     [(6, 3)]),
    ("pack-equal-lengths", lambda m, x: _rnn(m).pack_padded_sequence(x[0], [3, 3], enforce_sorted=False),
     [(3, 2, 2)]),
    ("pack-pad", lambda m, x: _rnn(m).pad_packed_sequence(
        _rnn(m).pack_padded_sequence(x[0], [2, 6, 1, 4], enforce_sorted=False)), [(6, 4, 3)]),
    ("pack-pad-batch-first-total-length-padding-value", lambda m, x: _rnn(m).pad_packed_sequence(
        _rnn(m).pack_padded_sequence(x[0], [3, 1, 4], batch_first=True, enforce_sorted=False), batch_first=True,
        padding_value=-1.5, total_length=6), [(3, 5, 2)]),
    ("pack-pad-sorted", lambda m, x: _rnn(m).pad_packed_sequence(_rnn(m).pack_padded_sequence(x[0], [4, 4, 2]),
                                                                  padding_value=3.0), [(4, 3, 2, 2)]),
    ("pad-sequence", lambda m, x: _rnn(m).pad_sequence(x), [(3, 2), (5, 2), (1, 2)]),
    ("pad-sequence-batch-first-left", lambda m, x: _rnn(m).pad_sequence(x, True, 2.0, "left"),
     [(3, 2, 2), (1, 2, 2), (4, 2, 2)]),
    ("pad-sequence-1d", lambda m, x: _rnn(m).pad_sequence(x, padding_value=-1.0), [(3,), (1,), (4,)]),
    ("pad-sequence-broadcast", lambda m, x: _rnn(m).pad_sequence(x), [(3, 2), (2, 1)]),
    ("pad-sequence-int", lambda m, x: _rnn(m).pad_sequence([t.long() for t in x], padding_value=7.5),
     [(3, 2), (1, 2)]),
    ("pack-sequence", lambda m, x: _rnn(m).pack_sequence(x), [(4, 3), (2, 3), (2, 3)]),
    ("pack-sequence-unsorted", lambda m, x: _rnn(m).pack_sequence(x, enforce_sorted=False),
     [(2, 3), (5, 3), (1, 3)]),
    ("unpack-sequence", lambda m, x: _rnn(m).unpack_sequence(_rnn(m).pack_sequence(x, enforce_sorted=False)),
     [(2, 3), (5, 3), (1, 3), (5, 3)]),
    ("unpad-sequence", lambda m, x: _rnn(m).unpad_sequence(_rnn(m).pad_sequence(x), m.tensor([2, 4, 1])),
     [(2, 2), (4, 2), (1, 2)]),
    ("unpad-sequence-batch-first", lambda m, x: _rnn(m).unpad_sequence(x[0], m.tensor([3, 1, 2]), batch_first=True),
     [(3, 4, 2)]),
    ("invert-permutation", lambda m, x: _rnn(m).invert_permutation(m.tensor([2, 0, 3, 1])), []),
    ("invert-permutation-none", lambda m, x: _rnn(m).invert_permutation(None), []),
]


@pytest.mark.parametrize("name,fn,shapes", UTILITY_CASES, ids=[case[0] for case in UTILITY_CASES])
def test_utility_matches_torch(name, fn, shapes, device):
    run_both(fn, [randn(*s) for s in shapes], device)


def test_packed_sequence_devices(device):
    """batch_sizes is an int64 cpu tensor whatever the data's device; the indices follow the data."""
    x = vkt.tensor(randn(5, 3, 2), device=device)
    for packed in [R.pack_padded_sequence(x, [2, 5, 3], enforce_sorted=False),
                   R.pack_padded_sequence(x.cpu(), vkt.tensor([2, 5, 3]), enforce_sorted=False).to(device)]:
        assert packed.batch_sizes.device.type == "cpu" and packed.batch_sizes.dtype == vkt.int64
        for t in (packed.data, packed.sorted_indices, packed.unsorted_indices):
            assert t.device.type == device
        assert packed.is_vulkan == (device == "vulkan") and not packed.is_cuda
        padded, lengths = R.pad_packed_sequence(packed)
        assert padded.device.type == device and lengths.device.type == "cpu" and lengths.dtype == vkt.int64
        back = packed.cpu()
        assert back.batch_sizes is packed.batch_sizes
        assert all(t.device.type == "cpu" for t in (back.data, back.sorted_indices, back.unsorted_indices))


def test_packed_sequence_tuple_and_conversions():
    packed = R.pack_sequence([vkt.tensor([1.0, 2.0]), vkt.tensor([3.0, 4.0, 5.0])], enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert packed[0] is data and packed.batch_sizes is batch_sizes and len(packed) == 4
    assert repr(packed).startswith("PackedSequence(data=tensor([3., 1., 4., 2., 5.]), batch_sizes=tensor([2, 2, 1])")
    assert packed.to(vkt.float32) is packed and packed.to("cpu") is packed
    for method, dtype in [("double", vkt.float64), ("float", vkt.float32), ("half", vkt.float16),
                          ("long", vkt.int64), ("int", vkt.int32), ("byte", vkt.uint8)]:
        converted = getattr(packed.double(), method)()
        assert converted.data.dtype == dtype and converted.sorted_indices.dtype == vkt.int64
        assert converted.batch_sizes is batch_sizes
    rebuilt = R.PackedSequence((data, batch_sizes), sorted_indices=sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == unsorted_indices.tolist() == [1, 0]
    assert R.PackedSequence(data, batch_sizes).sorted_indices is None


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


def _assert_same_error(torch_fn, vkt_fn, torch_to_vkt=()):
    """vkt_fn raises torch_fn's exception type and message (after the given (torch, vkt) substitutions)."""
    t_type, t_msg = _raised(torch_fn)
    for a, b in torch_to_vkt:
        t_msg = t_msg.replace(a, b)
    with pytest.raises(t_type, match="^" + re.escape(t_msg) + "$"):
        vkt_fn()


# fn(lib): each raises in torch, and vkt must raise the same
UTILITY_ERRORS = [
    lambda m: _rnn(m).pack_padded_sequence(m.zeros(4, 3, 2), [2, 3, 1]),
    lambda m: _rnn(m).pack_padded_sequence(m.zeros(4, 3, 2), [3, 2, 0]),
    lambda m: _rnn(m).pack_padded_sequence(m.zeros(4, 3, 2), [3, 0, 2], enforce_sorted=False),
    lambda m: _rnn(m).pack_padded_sequence(m.zeros(4, 3, 2), [3, 2]),
    lambda m: _rnn(m).pack_padded_sequence(m.zeros(4, 3, 2), [[3, 2, 1]]),
    lambda m: _rnn(m).pack_padded_sequence(m.zeros(0, 3, 2), []),
    lambda m: _rnn(m).pack_padded_sequence(m.zeros(3), [3]),
    lambda m: _rnn(m).pack_sequence([m.zeros(2), m.zeros(3)]),
    lambda m: _rnn(m).pack_sequence([]),
    lambda m: _rnn(m).pad_packed_sequence(_rnn(m).pack_padded_sequence(m.zeros(4, 3, 2), [3, 2, 1]),
                                         total_length=2),
    lambda m: _rnn(m).pad_sequence([]),
    lambda m: _rnn(m).pad_sequence(3),
    lambda m: _rnn(m).pad_sequence([m.zeros(2, 3), m.zeros(2, 4)]),
    lambda m: _rnn(m).pad_sequence([m.zeros(2, 3), m.zeros(2, 3, 1)]),
    lambda m: _rnn(m).pad_sequence([m.zeros(2, 3), m.zeros(2, 3)], padding_side="up"),
    lambda m: _rnn(m).unpad_sequence(m.zeros(4, 3, 2), m.tensor([3, 2])),
    lambda m: _rnn(m).PackedSequence(m.zeros(3)),
]


@pytest.mark.parametrize("fn", UTILITY_ERRORS)
def test_utility_errors_match_torch(fn):
    _assert_same_error(lambda: fn(torch), lambda: fn(vkt))


def test_errors_for_tensors_on_the_wrong_device(dev):
    """lengths and batch_sizes must be on the cpu: torch's messages, with its meta device standing for vulkan."""
    where = [("meta", str(vkt.tensor([1], device=dev).device))]
    _assert_same_error(lambda: TR.pack_padded_sequence(torch.zeros(4, 3, 2), torch.tensor([3, 2, 1], device="meta")),
                       lambda: R.pack_padded_sequence(vkt.zeros(4, 3, 2), vkt.tensor([3, 2, 1], device=dev)), where)
    _assert_same_error(lambda: TR.PackedSequence(torch.zeros(3), torch.tensor([1, 1, 1], device="meta")),
                       lambda: R.PackedSequence(vkt.zeros(3), vkt.tensor([1, 1, 1], device=dev)))


def as_hx(tensors):
    if not tensors:
        return None
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


# (id, make(nn namespace), lengths, enforce_sorted, hx shapes); the input is (T, B, 3) or (B, T, 3), T = 6
LAYER_CASES = [
    ("rnn-tanh", lambda m: m.RNN(3, 5), [3, 6, 1, 4], False, []),
    ("rnn-relu-2layer-bidir-batch-first-hx", lambda m: m.RNN(3, 5, 2, "relu", bidirectional=True, batch_first=True),
     [2, 5, 6, 1], False, [(4, 4, 5)]),
    ("lstm-hx-ties", lambda m: m.LSTM(3, 5), [2, 5, 5, 1], False, [(1, 4, 5), (1, 4, 5)]),
    ("lstm-2layer-bidir", lambda m: m.LSTM(3, 5, 2, bidirectional=True), [4, 1, 6], False, []),
    ("lstm-proj-bidir-hx-batch-first", lambda m: m.LSTM(3, 5, bidirectional=True, proj_size=2, batch_first=True),
     [3, 6, 2, 5], False, [(2, 4, 2), (2, 4, 5)]),
    ("gru-2layer-bidir-batch-first-hx", lambda m: m.GRU(3, 4, 2, batch_first=True, bidirectional=True),
     [1, 3, 6], False, [(4, 3, 4)]),
    ("gru-sorted", lambda m: m.GRU(3, 5), [6, 4, 4, 2], True, []),
    ("gru-equal-lengths-bidir", lambda m: m.GRU(3, 5, bidirectional=True), [5, 5, 5], False, []),
    ("lstm-one-sequence", lambda m: m.LSTM(3, 5, bidirectional=True), [4], False, []),
]


@pytest.mark.parametrize("name,make,lengths,enforce_sorted,hx_shapes", LAYER_CASES,
                         ids=[case[0] for case in LAYER_CASES])
def test_layer_on_packed_input_matches_torch(name, make, lengths, enforce_sorted, hx_shapes, device):
    tm, vm = make(torch.nn), make(nn)
    vm.load_state_dict({k: vkt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    vm.to(device)
    shape = (len(lengths), 6, 3) if tm.batch_first else (6, len(lengths), 3)

    def fn(m, x):
        packed = _rnn(m).pack_padded_sequence(x[0], lengths, tm.batch_first, enforce_sorted)
        out, h = (tm if m is torch else vm)(packed, as_hx(x[1:]))
        assert isinstance(out, _rnn(m).PackedSequence) and out.batch_sizes is packed.batch_sizes
        assert out.sorted_indices is packed.sorted_indices and out.unsorted_indices is packed.unsorted_indices
        return _rnn(m).pad_packed_sequence(out, tm.batch_first), h

    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    run_both(fn, [randn(*shape)] + [randn(*s) for s in hx_shapes], device)
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()
    tgrads = dict(tm.named_parameters())
    for pname, p in vm.named_parameters():
        assert_close(p.grad, tgrads[pname].grad.numpy(), 1e-5, 1e-5)


# (make(nn namespace), packed data shape, hx shapes): each raises in torch, and vkt must raise the same
LAYER_ERRORS = [
    (lambda m: m.GRU(3, 6), (6, 3), [(1, 3, 5)]),
    (lambda m: m.RNN(3, 6), (6, 3), [(2, 3, 6)]),
    (lambda m: m.RNN(3, 6), (6, 3), [(1, 3, 6, 1)]),
    (lambda m: m.GRU(5, 6), (6, 3), []),
    (lambda m: m.GRU(3, 6), (6, 3, 1), []),
]


@pytest.mark.parametrize("make,shape,hx_shapes", LAYER_ERRORS)
def test_layer_errors_on_packed_input_match_torch(make, shape, hx_shapes):
    arrays = [randn(*shape)] + [randn(*s) for s in hx_shapes]

    def call(m):
        packed = _rnn(m).PackedSequence(m.tensor(arrays[0]), m.tensor([3, 2, 1]), m.tensor([2, 0, 1]))
        return make(m.nn)(packed, as_hx([m.tensor(a) for a in arrays[1:]]))
    _assert_same_error(lambda: call(torch), lambda: call(vkt))


def test_layer_dtype_error_on_packed_input_matches_torch():
    def call(m):
        return m.nn.GRU(3, 6)(_rnn(m).pack_sequence([m.zeros(2, 3), m.zeros(1, 3)]).double())
    _assert_same_error(lambda: call(torch), lambda: call(vkt), [("torch.", "vkt.")])


def test_lstm_checks_packed_hx_sizes():
    """torch's packed LSTM leaves a wrong hx to its kernel ("got an incorrect number of RNN parameters"); vkt
    checks it as for a padded input."""
    packed = R.pack_sequence([vkt.zeros(3, 4), vkt.zeros(2, 4)])
    with pytest.raises(RuntimeError, match=re.escape("Expected hidden[0] size (1, 2, 6), got [1, 2, 5]")):
        nn.LSTM(4, 6)(packed, (vkt.zeros(1, 2, 5), vkt.zeros(1, 2, 6)))
