# vkt.nn's recurrent layers and cells against torch.nn's on both devices: torch's parameters loaded into the vkt
# module, then outputs, final states and the gradients of every parameter, the input and a given hx; torch's
# errors (type and message) for wrong sizes; reprs, parameter names and shapes, initialisation range.
import math
import re

import numpy as np
import pytest

import vkt
from vkt import nn

from conftest import assert_close

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(4321)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def flat(y):
    """A layer's outputs as a flat list: (output, h_n), (output, (h_n, c_n)), h' or (h', c')."""
    return [t for x in y for t in flat(x)] if isinstance(y, tuple) else [y]


def as_hx(tensors):
    """hx as the layer takes it: None, one tensor, or LSTM's (h, c)."""
    if not tensors:
        return None
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


# (id, make(nn namespace), input shape, hx shapes, train)
CASES = [
    ("rnn-tanh", lambda m: m.RNN(4, 6), (5, 3, 4), [], False),
    ("rnn-relu-2layer", lambda m: m.RNN(4, 6, 2, nonlinearity="relu"), (5, 3, 4), [], False),
    ("rnn-bidir-hx", lambda m: m.RNN(4, 6, bidirectional=True), (5, 3, 4), [(2, 3, 6)], False),
    ("rnn-batch-first-unbatched", lambda m: m.RNN(4, 6, batch_first=True), (5, 4), [], False),
    ("rnn-seq1-2layer", lambda m: m.RNN(4, 6, 2), (1, 3, 4), [], False),
    ("rnn-dropout-eval", lambda m: m.RNN(4, 6, 2, dropout=0.5), (5, 3, 4), [], False),
    ("lstm", lambda m: m.LSTM(4, 6), (5, 3, 4), [], False),
    ("lstm-2layer-bidir", lambda m: m.LSTM(4, 6, 2, bidirectional=True), (5, 3, 4), [], False),
    ("lstm-batch-first-hx", lambda m: m.LSTM(4, 6, batch_first=True), (3, 5, 4), [(1, 3, 6), (1, 3, 6)], False),
    ("lstm-proj", lambda m: m.LSTM(4, 6, proj_size=3), (5, 3, 4), [], False),
    ("lstm-proj-2layer-bidir-hx", lambda m: m.LSTM(4, 6, 2, bidirectional=True, proj_size=3), (5, 3, 4),
     [(4, 3, 3), (4, 3, 6)], False),
    ("lstm-unbatched", lambda m: m.LSTM(4, 6), (5, 4), [], False),
    ("lstm-unbatched-hx", lambda m: m.LSTM(4, 6, 2), (5, 4), [(2, 6), (2, 6)], False),
    ("lstm-nobias", lambda m: m.LSTM(4, 6, bias=False), (5, 3, 4), [], False),
    ("lstm-seq1-bidir", lambda m: m.LSTM(4, 6, bidirectional=True), (1, 3, 4), [], False),
    ("lstm-dropout1-train", lambda m: m.LSTM(4, 6, 2, dropout=1.0), (5, 3, 4), [], True),
    ("gru", lambda m: m.GRU(4, 6), (5, 3, 4), [], False),
    ("gru-2layer-bidir-batch-first", lambda m: m.GRU(4, 6, 2, batch_first=True, bidirectional=True), (3, 5, 4),
     [], False),
    ("gru-hx", lambda m: m.GRU(4, 6), (5, 3, 4), [(1, 3, 6)], False),
    ("gru-unbatched-bidir-hx", lambda m: m.GRU(4, 6, bidirectional=True), (5, 4), [(2, 6)], False),
    ("gru-nobias", lambda m: m.GRU(4, 6, bias=False), (5, 3, 4), [], False),
    ("gru-seq1-unbatched", lambda m: m.GRU(4, 6), (1, 4), [], False),
    ("rnncell", lambda m: m.RNNCell(4, 6), (3, 4), [], False),
    ("rnncell-relu-hx", lambda m: m.RNNCell(4, 6, nonlinearity="relu"), (3, 4), [(3, 6)], False),
    ("rnncell-unbatched-nobias", lambda m: m.RNNCell(4, 6, bias=False), (4,), [], False),
    ("lstmcell", lambda m: m.LSTMCell(4, 6), (3, 4), [], False),
    ("lstmcell-hx", lambda m: m.LSTMCell(4, 6), (3, 4), [(3, 6), (3, 6)], False),
    ("lstmcell-unbatched-hx-nobias", lambda m: m.LSTMCell(4, 6, bias=False), (4,), [(6,), (6,)], False),
    ("grucell", lambda m: m.GRUCell(4, 6), (3, 4), [], False),
    ("grucell-hx", lambda m: m.GRUCell(4, 6), (3, 4), [(3, 6)], False),
    ("grucell-unbatched-hx", lambda m: m.GRUCell(4, 6), (4,), [(6,)], False),
]


@pytest.mark.parametrize("name,make,shape,hx_shapes,train", CASES, ids=[case[0] for case in CASES])
def test_matches_torch(name, make, shape, hx_shapes, train, device):
    tm, vm = make(torch.nn), make(nn)
    vm.load_state_dict({k: vkt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    vm.to(device)
    tm.train(train)
    vm.train(train)
    arrays = [randn(*shape)] + [randn(*s) for s in hx_shapes]
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    vx = [vkt.tensor(a, device=device, requires_grad=True) for a in arrays]
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    ty, vy = flat(tm(tx[0], as_hx(tx[1:]))), flat(vm(vx[0], as_hx(vx[1:])))
    assert len(vy) == len(ty)
    # a weighted sum of every output, so each one's gradient path counts and none cancels out
    seeds = [randn(*t.shape) for t in ty]
    sum(((t * torch.tensor(s)).sum() for t, s in zip(ty, seeds))).backward()
    sum(((v * vkt.tensor(s, device=device)).sum() for v, s in zip(vy, seeds))).backward()
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()
    for v, t in zip(vy, ty):
        assert v.device.type == device
        assert_close(v.detach(), t.detach().numpy(), 1e-5, 1e-5)
    for v, t in zip(vx, tx):
        assert_close(v.grad, t.grad.numpy(), 1e-5, 1e-4)
    tgrads = dict(tm.named_parameters())
    for pname, p in vm.named_parameters():
        assert_close(p.grad, tgrads[pname].grad.numpy(), 1e-5, 1e-4)


def test_dropout_between_layers_in_training(device):
    """Dropout hits the first layer's output only: layer 0's final state is as in eval, layer 1's differs, and
    the output (the last layer's) has no dropped zeros."""
    vkt.manual_seed(0)
    m = nn.GRU(4, 8, 2, dropout=0.5).to(device)
    x = vkt.tensor(randn(5, 3, 4), device=device)
    out_eval, h_eval = (t.cpu().numpy() for t in m.eval()(x))
    out_train, h_train = (t.detach().cpu().numpy() for t in m.train()(x))
    assert_close(h_train[0], h_eval[0], 1e-6, 1e-6)
    assert not np.allclose(h_train[1], h_eval[1])
    assert np.all(out_train != 0)


LAYER_KINDS = [
    lambda m: m.RNN(3, 5, 2, "relu", bidirectional=True, batch_first=True),
    lambda m: m.LSTM(3, 5, 2, bias=False, dropout=0.25, proj_size=2),
    lambda m: m.GRU(3, 5, bidirectional=True),
    lambda m: m.RNNCell(3, 5, nonlinearity="relu"),
    lambda m: m.LSTMCell(3, 5, bias=False),
    lambda m: m.GRUCell(3, 5),
]


@pytest.mark.parametrize("make", LAYER_KINDS)
def test_repr_parameters_and_init_match_torch(make):
    tm, vm = make(torch.nn), make(nn)
    assert repr(vm) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in vm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    bound = 1 / math.sqrt(tm.hidden_size)
    # uniform in [-bound, bound]: their spread judged over all of them (a bias of 5 values alone may bunch up)
    values = np.concatenate([p.detach().numpy().ravel() for p in vm.parameters()])
    assert np.all(np.abs(values) <= bound) and values.std() > bound / 4
    if hasattr(tm, "all_weights"):
        assert [[tuple(w.shape) for w in ws] for ws in vm.all_weights] == \
            [[tuple(w.shape) for w in ws] for ws in tm.all_weights]
        assert vm.all_weights[0][0] is vm.weight_ih_l0
        vm.flatten_parameters()


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


# (make(nn namespace), input shape, hx shapes): each raises in torch, and vkt must raise the same
ERRORS = [
    (lambda m: m.LSTM(4, 6), (5, 3, 5), []),
    (lambda m: m.GRU(4, 6, batch_first=True), (3, 5, 7), []),
    (lambda m: m.GRU(4, 6), (5, 3, 4), [(1, 2, 6)]),
    (lambda m: m.RNN(4, 6, bidirectional=True), (5, 3, 4), [(1, 3, 6)]),
    (lambda m: m.RNN(4, 6), (5, 3, 4), [(3, 6)]),
    (lambda m: m.RNN(4, 6), (5, 4), [(1, 1, 6)]),
    (lambda m: m.LSTM(4, 6), (5, 3, 4), [(1, 3, 6), (1, 3, 5)]),
    (lambda m: m.LSTM(4, 6, proj_size=3), (5, 3, 4), [(1, 3, 6), (1, 3, 6)]),
    (lambda m: m.LSTM(4, 6), (5, 3, 4), [(3, 6), (1, 3, 6)]),
    (lambda m: m.LSTM(4, 6), (5, 4), [(1, 1, 6), (1, 1, 6)]),
    (lambda m: m.GRU(4, 6), (5, 3, 4, 1), []),
    (lambda m: m.LSTM(4, 6), (4,), []),
    (lambda m: m.RNN(4, 6), (0, 3, 4), []),
    (lambda m: m.RNNCell(4, 6), (3, 5), []),
    (lambda m: m.RNNCell(4, 6), (3, 4), [(3, 7)]),
    (lambda m: m.LSTMCell(4, 6), (3, 4), [(2, 6), (3, 6)]),
    (lambda m: m.LSTMCell(4, 6), (3, 4), [(3, 6), (3, 5)]),
    (lambda m: m.LSTMCell(4, 6), (3, 4), [(3, 6, 1), (3, 6)]),
    (lambda m: m.GRUCell(4, 6), (3, 4, 1), []),
    (lambda m: m.GRUCell(4, 6), (3, 4), [(3, 6, 1)]),
]


@pytest.mark.parametrize("make,shape,hx_shapes", ERRORS)
def test_errors_match_torch(make, shape, hx_shapes):
    arrays = [randn(*shape)] + [randn(*s) for s in hx_shapes]
    tm, vm = make(torch.nn), make(nn)
    t_type, t_msg = _raised(lambda: tm(*[torch.tensor(a) for a in arrays[:1]], as_hx([torch.tensor(a)
                                                                                       for a in arrays[1:]])))
    with pytest.raises(t_type, match=re.escape(t_msg) + "$"):
        vm(vkt.tensor(arrays[0]), as_hx([vkt.tensor(a) for a in arrays[1:]]))


@pytest.mark.parametrize("make", [
    lambda m: m.RNN(4, 6, nonlinearity="sigmoid"),
    lambda m: m.GRU(4, 6, proj_size=2),
    lambda m: m.RNN(4, 6, proj_size=2),
    lambda m: m.LSTM(4, 6, proj_size=6),
    lambda m: m.LSTM(4, 6, dropout=1.5),
    lambda m: m.LSTM(4, 0),
    lambda m: m.GRU(4, 6, num_layers=0),
    lambda m: m.RNN(4.0, 6),
])
def test_constructor_errors_match_torch(make):
    t_type, t_msg = _raised(lambda: make(torch.nn))
    with pytest.raises(t_type, match=re.escape(t_msg) + "$"):
        make(nn)
