# vkt.utils.checkpoint against torch.utils.checkpoint: gradients of both variants (use_reentrant True and False)
# against torch's and against the same model without checkpointing, dropout replayed with the random stream of
# the forward, autograd.grad and backward(inputs=), keyword arguments, the warnings and errors, and the memory a
# checkpointed segment leaves behind on a Vulkan device.
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import vkt
import vkt.utils.checkpoint
from conftest import assert_close, to_numpy

VARIANTS = [True, False]


def inputs(L, device, requires=(True, True, True, False)):
    rng = np.random.default_rng(0)
    shapes = [(4, 6), (6, 5), (5, 3), (1,)]
    kw = {} if L is torch else {"device": device}
    return [L.tensor(rng.standard_normal(s), requires_grad=r, **kw) for s, r in zip(shapes, requires)]


def numpy_of(t):
    return None if t is None else (to_numpy(t) if isinstance(t, vkt.Tensor) else t.detach().numpy())


def segment(L, w1, w2):
    return lambda a, b: L.nn.functional.gelu(a @ w1) @ w2 + b.sum()


def checkpoint_of(L):
    return torch.utils.checkpoint.checkpoint if L is torch else vkt.utils.checkpoint.checkpoint


@pytest.mark.parametrize("reentrant", VARIANTS)
@pytest.mark.parametrize("requires", [(True, True, True, False), (True, True, True, True), (False, True, True, False)],
                         ids=["x_and_weights", "bias_too", "weights_only"])
def test_gradients_match_torch(device, reentrant, requires):
    grads = []
    for L in (vkt, torch):
        x, w1, w2, b = inputs(L, device, requires)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reentrant with only weights requiring grad: "Gradients will be None"
            y = checkpoint_of(L)(segment(L, w1, w2), x * 2, b, use_reentrant=reentrant)
        if not y.requires_grad:  # reentrant, no input requiring grad: no graph, in both
            grads.append(None)
            continue
        (y * y).sum().backward()
        grads.append([numpy_of(t.grad) for t in (x, w1, w2, b)])
    if grads[1] is None:
        assert grads[0] is None
        return
    for v, t in zip(*grads):
        assert (v is None) == (t is None)
        if t is not None:
            assert_close(v, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_dropout_is_replayed_and_gradients_match_no_checkpoint(device, reentrant):
    """With the random stream as the forward had it, backward's recomputation draws the same dropout mask: the
    gradients are those of the model run without checkpointing from the same seed."""
    results = []
    for use in (True, False):
        vkt.manual_seed(5)
        model = vkt.nn.Sequential(vkt.nn.Linear(8, 16), vkt.nn.ReLU(), vkt.nn.Dropout(0.5), vkt.nn.Linear(16, 4))
        model.to(device)
        x = vkt.randn(6, 8, device=device, requires_grad=True)
        y = vkt.utils.checkpoint.checkpoint(model, x, use_reentrant=reentrant) if use else model(x)
        after = vkt.rand(3, device=device)  # the stream stands where the forward left it, either way
        y.square().sum().backward()
        results.append([to_numpy(t) for t in (y, x.grad, model[0].weight.grad, model[3].bias.grad, after)])
    for a, b in zip(*results):
        assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_preserve_rng_state_false_draws_a_new_mask(device):
    vkt.manual_seed(3)
    x = vkt.ones(64, device=device, requires_grad=True)
    drop = lambda t: vkt.nn.functional.dropout(t, 0.5) * 3  # noqa: E731
    y = vkt.utils.checkpoint.checkpoint(drop, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    assert not np.array_equal(to_numpy(x.grad) != 0, to_numpy(y) != 0)  # the backward's mask is another one


def test_reentrant_refuses_grad_and_inputs_as_torch(device):
    for L in (vkt, torch):
        x, w1, w2, b = inputs(L, device)
        y = checkpoint_of(L)(segment(L, w1, w2), x, b, use_reentrant=True)
        with pytest.raises(RuntimeError, match=r"When use_reentrant=True, torch.utils.checkpoint is incompatible with "
                                               r"\.grad\(\) or passing an `inputs` parameter to \.backward\(\)"):
            L.autograd.grad(y.sum(), x)
        y = checkpoint_of(L)(segment(L, w1, w2), x, b, use_reentrant=True)
        with pytest.raises(RuntimeError, match="incompatible with .grad"):
            y.sum().backward(inputs=[x])


def test_non_reentrant_works_with_grad_inputs_and_keywords(device):
    found = []
    for L in (vkt, torch):
        x, w1, w2, b = inputs(L, device)
        fn = lambda a, scale=1.0: (a @ w1).tanh() * scale  # noqa: E731
        y = checkpoint_of(L)(fn, x, use_reentrant=False, scale=3.0)
        gx, gw = L.autograd.grad(y.square().sum(), (x, w1))
        y = checkpoint_of(L)(fn, x, use_reentrant=False, scale=3.0)
        y.sum().backward(inputs=[w1])
        found.append([numpy_of(gx), numpy_of(gw), numpy_of(w1.grad), x.grad])
    for v, t in zip(found[0][:3], found[1][:3]):
        assert_close(v, t, rtol=1e-10, atol=1e-12)
    assert found[0][3] is None and found[1][3] is None


def test_outputs_tuples_and_non_tensors(device):
    for reentrant in VARIANTS:
        for L in (vkt, torch):
            x, w1, w2, b = inputs(L, device)
            out = checkpoint_of(L)(lambda a: (a @ w1, 7, (a @ w1).sum()), x, use_reentrant=reentrant)
            assert isinstance(out, tuple) and len(out) == 3 and out[1] == 7
            (out[0].sum() + out[2]).backward()
            assert x.grad is not None and w1.grad is not None


def test_warnings_and_errors_as_torch(device):
    for L in (vkt, torch):
        x, w1, w2, b = inputs(L, device)
        fn = segment(L, w1, w2)
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
            checkpoint_of(L)(fn, x, b)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. Gradients will be None"):
            checkpoint_of(L)(fn, x.detach(), b, use_reentrant=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            checkpoint_of(L)(fn, x, b, use_reentrant=True, scale=2)
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            checkpoint_of(L)(fn, x, b, use_reentrant=True, debug=True)
        with L.no_grad():
            y = checkpoint_of(L)(fn, x, b, use_reentrant=False)
        assert not y.requires_grad


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_checkpoint_sequential_matches_the_plain_model(device, reentrant):
    results = []
    for segments in (0, 2, 3):
        vkt.manual_seed(1)
        model = vkt.nn.Sequential(*[m for _ in range(3) for m in (vkt.nn.Linear(8, 8), vkt.nn.Tanh())]).to(device)
        x = vkt.randn(5, 8, device=device, requires_grad=True)
        y = vkt.utils.checkpoint.checkpoint_sequential(model, segments, x, use_reentrant=reentrant) \
            if segments else model(x)
        y.sum().backward()
        results.append([to_numpy(t) for t in (y, x.grad, model[0].weight.grad, model[4].bias.grad)])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert_close(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_vulkan_checkpointed_segment_keeps_no_activations(reentrant):
    if not vkt.vulkan.is_available():
        pytest.skip("no Vulkan adapter")
    vkt.manual_seed(0)
    layers = vkt.nn.Sequential(*[m for _ in range(6) for m in (vkt.nn.Linear(256, 256), vkt.nn.GELU())]).to("vulkan")
    x = vkt.randn(512, 256, device="vulkan", requires_grad=True)
    held = []
    for use in (False, True):
        vkt.vulkan.synchronize()
        vkt.vulkan.empty_cache()
        before = vkt.vulkan.memory_allocated()
        y = vkt.utils.checkpoint.checkpoint(layers, x, use_reentrant=reentrant) if use else layers(x)
        vkt.vulkan.synchronize()
        held.append(vkt.vulkan.memory_allocated() - before)
        y.sum().backward()
        del y
    activation = 512 * 256 * 4
    assert held[0] >= 12 * activation  # each Linear's output, each GELU's input and output
    assert held[1] <= 2 * activation  # the segment's output


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_a_weight_used_inside_and_outside_the_segment(device, reentrant):
    """The reentrant variant runs a backward inside the outer one, and both reach w's AccumulateGrad: the outer
    run's bookkeeping of that node must survive the inner run (it did not: w's gradient was wrong)."""
    grads = []
    for L in (vkt, torch):
        rng = np.random.default_rng(0)
        kw = {} if L is torch else {"device": device}
        w = L.tensor(rng.standard_normal((4, 4)), requires_grad=True, **kw)
        x = L.tensor(rng.standard_normal((3, 4)), requires_grad=True, **kw)
        h = (x @ w).tanh()
        y = checkpoint_of(L)(lambda a: (a @ w).sin(), h, use_reentrant=reentrant)
        ((y @ w).sum() + (h * 2).sum()).backward()
        grads.append([numpy_of(w.grad), numpy_of(x.grad)])
    for v, t in zip(*grads):
        assert_close(v, t, rtol=1e-10, atol=1e-12)
