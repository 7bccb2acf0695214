# vkt.autograd.graph against torch.autograd.graph: saved_tensors_hooks (what is packed, gradients through
# unpacked values, create_graph, errors, nesting, threads), save_on_cpu (device memory between forward and
# backward), disable_saved_tensors_hooks, and Node.
import threading

import numpy as np
import pytest
import torch

import vkt
from conftest import assert_close, to_numpy


def leaf(L, a, device):
    return torch.tensor(a, requires_grad=True) if L is torch else vkt.tensor(a, device=device, requires_grad=True)


def numpy_of(t):
    return to_numpy(t.detach()) if isinstance(t, vkt.Tensor) else t.detach().numpy()


A = np.random.default_rng(3).standard_normal((3, 4))
B = np.random.default_rng(4).standard_normal((4, 2))

CASES = [
    ("sin_mul", lambda L, x, w: (x * x).sin().sum()),
    ("matmul_tanh", lambda L, x, w: (x @ w).tanh().pow(3).sum()),
    ("softmax", lambda L, x, w: L.softmax(x @ w, dim=1)[:, 0].sum()),
    ("exp_output", lambda L, x, w: (x.exp() * x).sum() + w.sigmoid().sum()),
    ("relu_inplace", lambda L, x, w: L.nn.functional.relu(x * 2, inplace=True).sum()),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_hooks_see_what_torch_saves_and_gradients_match(device, name, fn):
    found = []
    for L in (vkt, torch):
        x, w = leaf(L, A, device), leaf(L, B, device)
        shapes = []

        def pack(t):
            shapes.append(tuple(t.shape))
            return t * 1  # a copy the graph keeps instead

        with L.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            y = fn(L, x, w)
        y.backward()
        found.append((sorted(shapes), numpy_of(x.grad), numpy_of(w.grad) if w.grad is not None else None))
    assert found[0][0] == found[1][0]  # the same tensors are saved, and each packed once
    assert_close(found[0][1], found[1][1], rtol=1e-10, atol=1e-12)
    assert (found[0][2] is None) == (found[1][2] is None)


def test_second_derivative_through_unpacked_values(device):
    found = []
    for L in (vkt, torch):
        x = leaf(L, A, device)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda p: p):
            y = (x.exp() * x.sin()).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
        found.append((numpy_of(g), numpy_of(x.grad)))
    for v, t in zip(*found):
        assert_close(v, t, rtol=1e-10, atol=1e-12)


def test_hook_errors_as_torch(device):
    for L in (vkt, torch):
        x = leaf(L, A, device)
        graph = L.autograd.graph
        with graph.saved_tensors_hooks(lambda t: 1 / 0, lambda p: p):
            with pytest.raises(ZeroDivisionError):
                x * x  # the op that saved raises
            with pytest.raises(ZeroDivisionError):
                y = x * 1
                y.mul_(x)
        with graph.saved_tensors_hooks(lambda t: t, lambda p: 5):
            y = (x * x).sum()
        with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor but got "
                                            "result of type int"):
            y.backward()
        with graph.disable_saved_tensors_hooks("hooks are off here"):
            with pytest.raises(RuntimeError, match="hooks are off here"):
                with graph.saved_tensors_hooks(lambda t: t, lambda p: p):
                    pass
        with graph.saved_tensors_hooks(lambda t: t, lambda p: p):
            with pytest.raises(RuntimeError, match="no hooks"):
                with graph.disable_saved_tensors_hooks("no hooks"):
                    pass
        (x * x).sum().backward()  # and the thread's state is clean again


def test_hooks_nest_are_per_thread_and_skip_what_hooks_save(device):
    x = leaf(vkt, A, device)
    outer, inner, other = [], [], []
    graph = vkt.autograd.graph

    def worker():
        y = x.exp()  # another thread: no hooks
        other.append(y.grad_fn.name())

    with graph.saved_tensors_hooks(lambda t: (outer.append(1), t.exp().log())[1], lambda p: p):
        x.sin()
        with graph.saved_tensors_hooks(lambda t: (inner.append(1), t)[1], lambda p: p):
            x.cos()
            thread = threading.Thread(target=worker)
            thread.start()
            thread.join()
        x.tanh()
    assert len(outer) == 2 and len(inner) == 1 and other == ["ExpBackward0"]  # the hook's own exp/log: not packed


def test_save_on_cpu_frees_device_memory_until_backward():
    if not vkt.vulkan.is_available():
        pytest.skip("no Vulkan adapter")
    vkt.manual_seed(0)
    layers = vkt.nn.Sequential(*[m for _ in range(4) for m in (vkt.nn.Linear(256, 256), vkt.nn.Tanh())]).to("vulkan")
    x = vkt.randn(512, 256, device="vulkan", requires_grad=True)
    held, grads = [], []
    for offload in (False, True):
        vkt.vulkan.synchronize()
        vkt.vulkan.empty_cache()
        before = vkt.vulkan.memory_allocated()
        if offload:
            with vkt.autograd.graph.save_on_cpu():
                y = layers(x).square().sum()
        else:
            y = layers(x).square().sum()
        vkt.vulkan.synchronize()
        held.append(vkt.vulkan.memory_allocated() - before)
        y.backward()
        grads.append([to_numpy(t) for t in (x.grad, layers[0].weight.grad)])
        x.grad = None
        layers.zero_grad()
    activation = 512 * 256 * 4
    assert held[0] >= 4 * activation and held[1] < activation / 2  # the four tanh outputs the graph keeps: on the host
    for a, b in zip(*grads):
        assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_function_save_for_backward_goes_through_the_hooks(device):
    packed = []

    class Cube(vkt.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * g * a * a

    x = leaf(vkt, A, device)
    with vkt.autograd.graph.saved_tensors_hooks(lambda t: (packed.append(t.shape), t * 1)[1], lambda p: p * 1):
        y = Cube.apply(x).sum()
    y.backward()
    assert_close(numpy_of(x.grad), 3 * A * A, rtol=1e-12)
    assert packed


def test_node_type(device):
    x = leaf(vkt, A, device)
    assert isinstance((x * 2).grad_fn, vkt.autograd.graph.Node)
    assert not isinstance(x, vkt.autograd.graph.Node)


SAVES = [  # binary ops with a number or a tensor on either side; which operands require grad
    ("mul_number", lambda L, a, b: a * 2.5),
    ("number_mul", lambda L, a, b: 3 * a),
    ("mul", lambda L, a, b: a * b),
    ("div_number", lambda L, a, b: a / 4),
    ("number_div", lambda L, a, b: 2 / a),
    ("div", lambda L, a, b: a / b),
    ("pow_number", lambda L, a, b: a ** 3),
    ("number_pow", lambda L, a, b: 2 ** a),
    ("pow", lambda L, a, b: a.abs() ** b),
    ("maximum", lambda L, a, b: L.maximum(a, b)),
    ("remainder", lambda L, a, b: L.remainder(a, b)),
    ("atan2", lambda L, a, b: L.atan2(a, b)),
    ("hypot", lambda L, a, b: L.hypot(a, b)),
    ("copysign", lambda L, a, b: L.copysign(a, b)),
    ("add_sub", lambda L, a, b: a + b - a * 0.5),
]


@pytest.mark.parametrize("grads", [(True, True), (True, False), (False, True)], ids=["both", "a", "b"])
@pytest.mark.parametrize("name,fn", SAVES, ids=[c[0] for c in SAVES])
def test_binary_ops_save_what_torch_saves(device, name, fn, grads):
    """What a node keeps for its backward is memory held until backward: as PyTorch, only what the needed
    gradients read (x * 2 keeps nothing; x * w keeps w where only x requires grad)."""
    rng = np.random.default_rng(7)
    a, b = rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, (3, 4))
    found = []
    for L in (vkt, torch):
        kw = {} if L is torch else {"device": device}
        ta, tb = (L.tensor(v, requires_grad=r, **kw) for v, r in zip((a, b), grads))
        count = [0]
        with L.autograd.graph.saved_tensors_hooks(lambda t: (count.__setitem__(0, count[0] + 1), t)[1],
                                                  lambda p: p):
            y = fn(L, ta, tb)
        if not y.requires_grad:
            found.append(None)
            continue
        y.sum().backward()
        found.append((count[0], [numpy_of(t.grad) if t.grad is not None else None for t in (ta, tb)]))
    if found[1] is None:
        assert found[0] is None
        return
    assert found[0][0] <= found[1][0]  # never more than PyTorch keeps (less for pow and copysign)
    for v, t in zip(found[0][1], found[1][1]):
        assert (v is None) == (t is None)
        if t is not None:
            assert_close(v, t, rtol=1e-10, atol=1e-12)


def test_zero_dim_and_empty_tensors_through_views_hooks_and_checkpoints(device):
    import torch.utils.checkpoint  # noqa: F401
    import vkt.utils.checkpoint  # noqa: F401
    found = []
    for L in (vkt, torch):
        kw = {} if L is torch else {"device": device}
        ck = torch.utils.checkpoint.checkpoint if L is torch else vkt.utils.checkpoint.checkpoint
        got = []
        w = L.tensor(2.0, dtype=L.float64, requires_grad=True, **kw)
        buf = L.zeros(3, dtype=L.float64, **kw)
        buf[1].copy_(w * 3)  # a 0-d view of a tensor without grad, written
        (buf * buf).sum().backward()
        got.append(numpy_of(w.grad))
        e = L.zeros(0, 3, dtype=L.float64, **kw)
        we = L.ones(0, 2, dtype=L.float64, requires_grad=True, **kw)
        e[:, 1:].copy_(we * 2)
        e.sum().backward()
        got.append(numpy_of(we.grad))
        x = L.tensor(0.7, dtype=L.float64, requires_grad=True, **kw)
        with L.autograd.graph.save_on_cpu():
            y = (x.exp() * x).sin()
        y.backward()
        got.append(numpy_of(x.grad))
        for reentrant in (True, False):
            x.grad = None
            ck(lambda a: a.exp() * a, x, use_reentrant=reentrant).backward()
            got.append(numpy_of(x.grad))
            z = L.ones(0, 4, dtype=L.float64, requires_grad=True, **kw)
            ck(lambda a: a * 2, z, use_reentrant=reentrant).sum().backward()
            got.append(numpy_of(z.grad))
        found.append(got)
    for v, t in zip(*found):
        assert v.shape == t.shape
        assert_close(v, t, rtol=1e-10, atol=1e-12)
