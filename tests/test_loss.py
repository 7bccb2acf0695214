# The classification losses vkt._C.cross_entropy_loss and vkt._C.nll_loss against torch CPU (float64 on the
# same rounded inputs): values and gradients for every reduction, class weights, ignore_index, label smoothing,
# probability targets, (C), (N, C) and (N, C, d...) inputs, empty batches, odd class counts, every float dtype;
# PyTorch's errors; out-of-range targets on the device; double backward's refusal; no fallback for float32.
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import vkt
from conftest import assert_close, to_numpy

torch.set_num_threads(1)  # torch's pool costs about 1 ms a call on a busy 2-core machine, 3 us without it

REDUCTIONS = ["none", "mean", "sum"]
TOL = {"float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10), "float16": (1e-2, 1e-2)}
# (input shape): (C), (N, C), (N, C, d1, d2), odd class counts, an empty batch, one class
SHAPES = [(7,), (3, 7), (4, 1), (0, 7), (2, 33, 3, 2), (3, 1000), (2, 1025), (2, 5, 4), (2, 3, 2, 1, 2)]
# (name, class weights, ignore_index or None, label_smoothing, probability targets)
CASES = [
    ("plain", False, None, 0.0, False),
    ("weight", True, None, 0.0, False),
    ("ignore", False, 1, 0.0, False),
    ("weight_ignore_smooth", True, 0, 0.1, False),
    ("smooth", False, None, 0.1, False),
    ("prob", False, None, 0.0, True),
    ("prob_weight_smooth", True, None, 0.1, True),
]


def make(shape, weight, ignore, prob, dtype, seed=0):
    """Logits, a target (some rows at ignore_index), class weights: float64 arrays rounded through dtype."""
    rng = np.random.default_rng(seed)
    c = shape[1] if len(shape) > 1 else shape[0]
    x = (rng.standard_normal(shape) * 3).astype(dtype).astype(np.float64)
    if prob:
        t = rng.random(shape)
        t = (t / t.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)).astype(dtype).astype(np.float64)
    else:
        t = rng.integers(0, c, (shape[0],) + shape[2:] if len(shape) > 1 else ())
        if ignore is not None and t.size:
            t.reshape(-1)[:: max(1, t.size // 2)] = ignore
    w = rng.random(c).astype(dtype).astype(np.float64) + 0.5 if weight else None
    return x, t, w


def torch_ref(nll, x, t, w, grad, prob, **kw):
    """torch's loss and its gradients (input, and a probability target) in float64."""
    tx = torch.tensor(x, requires_grad=True)
    tt = torch.tensor(t, requires_grad=prob)
    fn = F.nll_loss if nll else F.cross_entropy
    y = fn(tx, tt, weight=None if w is None else torch.tensor(w), **kw)
    if grad is None:
        return y.detach().numpy(), None, None
    y.backward(torch.tensor(grad))
    return y.detach().numpy(), tx.grad.numpy(), tt.grad.numpy() if prob else None


def vkt_run(nll, x, t, w, grad, prob, dtype, device, **kw):
    vx = vkt.tensor(x.astype(dtype), device=device, requires_grad=True)
    vt = vkt.tensor(t.astype(dtype) if prob else t, device=device, requires_grad=prob)
    vw = None if w is None else vkt.tensor(w.astype(dtype), device=device)
    fn = vkt._C.nll_loss if nll else vkt._C.cross_entropy_loss
    y = fn(vx, vt, vw, **kw)
    assert y.dtype == getattr(vkt, dtype) and y.device.type == vx.device.type
    y.backward(vkt.tensor(grad.astype(dtype), device=device))
    return y, vx.grad, vt.grad if prob else None


def check(nll, shape, case, dtype, device, reduction):
    _, weight, ignore, smoothing, prob = case
    x, t, w = make(shape, weight, ignore, prob, dtype)
    kw = {"reduction": reduction, "ignore_index": -100 if ignore is None else ignore}
    if not nll:
        kw["label_smoothing"] = smoothing
    ref = torch_ref(nll, x, t, w, None, prob, **kw)
    grad = np.random.default_rng(1).random(ref[0].shape).astype(dtype).astype(np.float64) + 0.5
    ref = torch_ref(nll, x, t, w, grad, prob, **kw)
    got = vkt_run(nll, x, t, w, grad, prob, dtype, device, **kw)
    rtol, atol = TOL[dtype]
    for g, r in zip(got, ref):
        if r is not None:
            assert_close(g, r, rtol=rtol, atol=atol * max(1.0, float(np.max(np.abs(r[np.isfinite(r)]), initial=0))))


# every shape in float32; float64 and float16 (computed in float32 on the device) on a few
DTYPED = [(s, "float32") for s in SHAPES] + [(s, d) for s in [(3, 7), (2, 33, 3, 2), (2, 1025)]
                                            for d in ["float64", "float16"]]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("shape,dtype", DTYPED, ids=str)
def test_cross_entropy(device, shape, case, dtype):
    for reduction in REDUCTIONS:
        check(False, shape, case, dtype, device, reduction)


NLL_CASES = [c for c in CASES if not c[3] and not c[4]]


@pytest.mark.parametrize("case", NLL_CASES, ids=[c[0] for c in NLL_CASES])
@pytest.mark.parametrize("shape,dtype", DTYPED, ids=str)
def test_nll_loss(device, shape, case, dtype):
    for reduction in REDUCTIONS:
        check(True, shape, case, dtype, device, reduction)


@pytest.mark.parametrize("target_dtype", ["int32", "uint8"])
def test_other_index_dtypes(device, target_dtype):
    """int32 (vkt's, beside PyTorch's int64) and uint8 targets give the int64 target's loss."""
    x, t, w = make((4, 6), True, None, False, "float32")
    ref = F.cross_entropy(torch.tensor(x), torch.tensor(t), torch.tensor(w), label_smoothing=0.2)
    got = vkt._C.cross_entropy_loss(vkt.tensor(x.astype(np.float32), device=device),
                                    vkt.tensor(t.astype(target_dtype), device=device),
                                    vkt.tensor(w.astype(np.float32), device=device), label_smoothing=0.2)
    assert_close(got, ref.numpy(), rtol=1e-5, atol=1e-5)


def test_probabilities_promote(device):
    """float32 logits with float64 probabilities: the loss and both gradients in the dtypes torch gives."""
    x, t, w = make((3, 5), False, None, True, "float32")
    tx, tt = torch.tensor(x, dtype=torch.float32, requires_grad=True), torch.tensor(t, requires_grad=True)
    ref = F.cross_entropy(tx, tt, label_smoothing=0.1)
    ref.backward()
    vx = vkt.tensor(x.astype(np.float32), device=device, requires_grad=True)
    vt = vkt.tensor(t, device=device, requires_grad=True)
    got = vkt._C.cross_entropy_loss(vx, vt, label_smoothing=0.1)
    got.backward()
    assert got.dtype == vkt.float64 and vx.grad.dtype == vkt.float32 and vt.grad.dtype == vkt.float64
    assert_close(got, ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert_close(vx.grad, tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(vt.grad, tt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_strided_operands(device):
    """A transposed input and a sliced target read as their values, not their storage."""
    x = np.random.default_rng(2).standard_normal((9, 4))
    t = np.array([0, 3, 1, 2, 2, 1, 0, 3])
    ref = F.cross_entropy(torch.tensor(x.T[:, :4].copy()), torch.tensor(t[::2].copy()), reduction="none")
    vx = vkt.tensor(x, device=device).transpose(0, 1)[:, :4]
    got = vkt._C.cross_entropy_loss(vx, vkt.tensor(t, device=device)[::2], reduction="none")
    assert_close(got, ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("prob", [False, True])
def test_offset_operands(device, prob):
    """Contiguous rows that start off a multiple of 4 elements (a slice) read and write the same values."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    t = rng.random((5, 7)).astype(np.float32) if prob else rng.integers(0, 7, 5)
    tx = torch.tensor(x[1:], requires_grad=True)
    F.cross_entropy(tx, torch.tensor(t[1:]), reduction="sum").backward()
    vx = vkt.tensor(x, device=device, requires_grad=True)
    y = vkt._C.cross_entropy_loss(vx[1:], vkt.tensor(t, device=device)[1:], reduction="sum")
    y.backward()
    assert_close(vx.grad[1:], tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(vx.grad[0], np.zeros(7))


@pytest.mark.parametrize("nll", [False, True])
def test_1d_input_with_1d_target(device, nll):
    """A (C) input takes a 0-d target or a (1) one; the unreduced loss is 0-d either way, as in torch."""
    x = np.random.default_rng(5).standard_normal(6)
    fn, tfn = (vkt._C.nll_loss, F.nll_loss) if nll else (vkt._C.cross_entropy_loss, F.cross_entropy)
    for t in [np.array(4), np.array([4])]:
        ref = tfn(torch.tensor(x), torch.tensor(t), reduction="none").numpy()
        got = fn(vkt.tensor(x, device=device), vkt.tensor(t, device=device), reduction="none")
        assert got.shape == ()
        assert_close(got, ref, rtol=1e-12, atol=1e-12)


def test_all_ignored_and_empty(device):
    """mean over no counted target is NaN (0 / 0), sum is 0, and the gradients are zeros, as in torch."""
    x = vkt.tensor(np.ones((3, 4)), device=device, requires_grad=True)
    t = vkt.tensor(np.full(3, -100), device=device)
    y = vkt._C.cross_entropy_loss(x, t)
    assert np.isnan(to_numpy(y))
    assert to_numpy(vkt._C.nll_loss(x, t, reduction="sum")) == 0
    vkt._C.cross_entropy_loss(x, t, reduction="sum", label_smoothing=0.3).backward()
    assert_close(x.grad, np.zeros((3, 4)))
    e = vkt.tensor(np.zeros((0, 4)), device=device, requires_grad=True)
    y = vkt._C.cross_entropy_loss(e, vkt.tensor(np.zeros(0, np.int64), device=device), reduction="none")
    assert y.shape == (0,)


def test_extreme_logits(device):
    """Large logits do not overflow (the max is subtracted); -inf logits of other classes are fine; a NaN makes
    its row's loss NaN."""
    x = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 2.0, 1.0], [1.0, np.nan, 0.0]])
    t = np.array([1, 2, 0])
    ref = F.cross_entropy(torch.tensor(x), torch.tensor(t), reduction="none").numpy()
    got = vkt._C.cross_entropy_loss(vkt.tensor(x.astype(np.float32), device=device), vkt.tensor(t, device=device),
                                    reduction="none")
    assert_close(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nll", [False, True])
def test_target_out_of_bounds(device, nll):
    """torch's IndexError on the cpu; on the device the kernel sets an error word that the op reads back, as
    gather and index_select do, so the same error is raised at the op."""
    fn = vkt._C.nll_loss if nll else vkt._C.cross_entropy_loss
    x = vkt.tensor(np.zeros((3, 5), np.float32), device=device)
    for t, bad in [([1, 5, 2], 5), ([1, -1, 7], -1), ([0, -100, 9], 9)]:
        with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
            fn(x, vkt.tensor(np.array(t), device=device))
    x4 = vkt.tensor(np.zeros((2, 3, 2, 2), np.float32), device=device)
    t4 = np.zeros((2, 2, 2), np.int64)
    t4[1, 1, 0] = 3
    with pytest.raises(IndexError, match="Target 3 is out of bounds."):
        fn(x4, vkt.tensor(t4, device=device), reduction="none")
    assert to_numpy(fn(x, vkt.tensor(np.array([1, 7, 2]), device=device), ignore_index=7)).shape == ()


def test_targets_checked_without_a_wait_only_while_known(dev):
    """Targets written whole from host memory keep their range on the host, so the op need not read the
    device's error word back (a wait for all queued work); a write on the device (or a view of other values)
    makes the op read it again."""
    x = vkt.tensor(np.zeros((3, 5), np.float32), device=dev)
    t = vkt.tensor(np.array([1, 4, 2]), device=dev)
    vkt._C.cross_entropy_loss(x, t)
    t[1] = 5  # in place on the device: the range the upload found no longer holds
    with pytest.raises(IndexError, match="^Target 5 is out of bounds.$"):
        vkt._C.cross_entropy_loss(x, t)
    computed = vkt.tensor(np.array([0, 1, 2]), device=dev) * 3  # on the device: never known
    with pytest.raises(IndexError, match="^Target 6 is out of bounds.$"):
        vkt._C.cross_entropy_loss(x, computed)
    wide = vkt.tensor(np.array([1, 2, 3, 7]), device=dev)[:3]  # a view: the storage's range covers it
    assert to_numpy(vkt._C.cross_entropy_loss(x, wide, reduction="none")).shape == (3,)
    with pytest.raises(IndexError, match="^Target 7 is out of bounds.$"):
        vkt._C.cross_entropy_loss(x, vkt.tensor(np.array([1, 2, 3, 7]), device=dev)[1:])
    index = vkt.tensor(np.array([0, 2]), device=dev)
    assert to_numpy(vkt.index_select(x, 0, index)).shape == (2, 5)
    index[0] = 3
    with pytest.raises(IndexError, match="index out of range in self"):
        vkt.index_select(x, 0, index)


def test_targets_gathered_from_known_ones_are_checked_without_a_wait(dev):
    """A batch of targets drawn from targets uploaded whole (index_select, as the DataLoader does for a
    TensorDataset on the device; indexing; cat and stack) knows their range too, so cross_entropy records
    without reading the error word back: the batch stays recorded, not submitted."""
    x = vkt.tensor(np.zeros((4, 5), np.float32), device=dev)
    targets = vkt.tensor(np.array([1, 4, 2, 0, 3, 1]), device=dev)
    rows = vkt.tensor(np.array([5, 0, 2, 1]), device=dev)
    for batch in (targets.index_select(0, rows), targets[rows], vkt.cat([targets[:2], targets[4:]]),
                  vkt.stack([targets[0], targets[3], targets[1], targets[2]])):
        vkt.vulkan.synchronize()
        loss = vkt._C.cross_entropy_loss(x, batch)
        assert vkt._C._stream_state(dev)[0]  # recorded; a read-back would have submitted and waited
        assert np.isfinite(loss.item())
    wide = vkt.tensor(np.array([1, 7, 2, 0]), device=dev)  # known to reach 7: these read the error word back
    assert np.isfinite(vkt._C.cross_entropy_loss(x, wide[vkt.tensor(np.array([0, 2, 3, 0]), device=dev)]).item())
    with pytest.raises(IndexError, match="^Target 7 is out of bounds.$"):
        vkt._C.cross_entropy_loss(x, wide.index_select(0, vkt.tensor(np.array([0, 1, 2, 3]), device=dev)))
    with pytest.raises(IndexError, match="^Target 7 is out of bounds.$"):
        vkt._C.cross_entropy_loss(x, vkt.cat([targets[:3], wide[1:2]]))


def _t(a, dtype=None):
    return np.asarray(a, dtype=dtype)


# (name, fn, input, target, kwargs, exception, message): each on both devices, and torch raises the same
ERRORS = [
    ("batch", "ce", (3, 5), _t([1, 2]), {}, ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)."),
    ("batch_0d", "ce", (3, 5), _t(1), {}, ValueError, r"target batch_size \(0\)"),
    ("multi", "ce", (3, 5), _t([[1, 2, 3]]).T, {}, RuntimeError, "0D or 1D target tensor expected"),
    ("1d_target", "ce", (5,), _t([2, 3]), {}, ValueError, "For 1D input, 1D target must have size 1"),
    ("spatial", "ce", (2, 3, 4), _t([[1, 2, 0], [0, 1, 1]]), {}, RuntimeError,
     r"Expected target size \[2, 4\], got \[2, 3\]"),
    ("2d_rank", "nll", (2, 3, 4, 5), np.zeros((2, 4), np.int64), {}, RuntimeError,
     "only batches of spatial targets supported"),
    ("2d_size", "nll", (2, 3, 4, 5), np.zeros((2, 4, 6), np.int64), {}, RuntimeError,
     r"size mismatch \(got input: \[2, 3, 4, 5\] , target: \[2, 4, 6\]"),
    ("float_target", "ce", (3, 5), _t([1, 2, 3], np.float32), {}, RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    ("long_probs", "ce", (3, 5), np.zeros((3, 5), np.int64), {}, RuntimeError,
     "Expected floating point type for target with class probabilities, got Long"),
    ("prob_ignore", "ce", (3, 5), np.zeros((3, 5), np.float32), {"ignore_index": 1}, RuntimeError,
     "ignore_index is not supported for floating point target"),
    ("weight_size", "ce", (3, 5), _t([1, 2, 3]), {"weight": np.ones(4, np.float32)}, RuntimeError,
     r"weight tensor should be defined either for all 5 classes or no classes but got weight tensor of shape: \[4\]"),
    ("weight_2d", "nll", (2, 3, 2, 2), np.zeros((2, 2, 2), np.int64), {"weight": np.ones(4, np.float32)},
     RuntimeError, "weight tensor should be defined either for all or no classes"),
    ("weight_dtype", "ce", (3, 5), _t([1, 2, 3]), {"weight": np.ones(5)}, RuntimeError,
     "expected scalar type Float but found Double"),
    ("smoothing", "ce", (3, 5), _t([1, 2, 3]), {"label_smoothing": 1.5}, RuntimeError,
     r"label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    ("reduction", "ce", (3, 5), _t([1, 2, 3]), {"reduction": "foo"}, ValueError,
     "foo is not a valid value for reduction"),
    ("int_input", "nll", None, _t([1, 2, 3]), {}, NotImplementedError, "not implemented for 'Int'"),
]


@pytest.mark.parametrize("row", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(device, row):
    _, kind, shape, t, kw, exc, msg = row
    x = np.zeros((3, 5), np.int32) if shape is None else np.zeros(shape, np.float32)
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with pytest.raises(exc, match=msg):
        (F.nll_loss if kind == "nll" else F.cross_entropy)(torch.tensor(x), torch.tensor(t), **tkw)
    vkw = {k: vkt.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with pytest.raises(exc, match=msg):
        (vkt._C.nll_loss if kind == "nll" else vkt._C.cross_entropy_loss)(
            vkt.tensor(x, device=device), vkt.tensor(t, device=device), **vkw)


def test_weight_requires_grad_refused(device):
    x = vkt.tensor(np.zeros((3, 5), np.float32), device=device, requires_grad=True)
    w = vkt.tensor(np.ones(5, np.float32), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        vkt._C.nll_loss(x, vkt.tensor(np.array([1, 2, 3]), device=device), w)


def test_grad_fn_and_create_graph(device):
    """The node's names; under create_graph the gradient is recorded (ops instead of the kernel), equal to the
    kernel's, and has a backward of its own."""
    x = vkt.tensor(np.random.default_rng(3).standard_normal((3, 5)), device=device, requires_grad=True)
    t = vkt.tensor(np.array([1, 2, 3]), device=device)
    w = vkt.tensor(np.arange(1.0, 6.0), device=device)
    assert vkt._C.nll_loss(x, t).grad_fn.name() == "NllLossBackward0"
    assert vkt._C.nll_loss(x.reshape(3, 5, 1), t.reshape(3, 1)).grad_fn.name() == "NllLoss2DBackward0"
    y = vkt._C.cross_entropy_loss(x, t, w, label_smoothing=0.2)
    assert y.grad_fn.name() == "CrossEntropyLossBackward0"
    (g,) = vkt.autograd.grad(y, x, create_graph=True)
    (plain,) = vkt.autograd.grad(vkt._C.cross_entropy_loss(x, t, w, label_smoothing=0.2), x)
    assert g.requires_grad and not plain.requires_grad
    assert_close(g, to_numpy(plain), rtol=1e-12, atol=1e-12)
    (g2,) = vkt.autograd.grad((g * g).sum(), x)
    tx = torch.tensor(to_numpy(x), requires_grad=True)
    (tg,) = torch.autograd.grad(F.cross_entropy(tx, torch.tensor(to_numpy(t)), torch.tensor(to_numpy(w)),
                                                label_smoothing=0.2), tx, create_graph=True)
    (tg2,) = torch.autograd.grad((tg * tg).sum(), tx)
    assert_close(g2, tg2.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradcheck(case):
    """Gradients and gradients of gradients (create_graph) against finite differences, float64 on the cpu."""
    _, weight, ignore, smoothing, prob = case
    x, t, w = make((3, 4, 2), weight, ignore, prob, "float64")
    vx = vkt.tensor(x, requires_grad=True)
    vt = vkt.tensor(t, requires_grad=prob)
    vw = None if w is None else vkt.tensor(w)
    kw = {"ignore_index": -100 if ignore is None else ignore, "label_smoothing": smoothing}
    for reduction in REDUCTIONS:
        def ce(a, b):
            return vkt._C.cross_entropy_loss(a, b, vw, reduction=reduction, **kw)

        def nll(a):
            return vkt._C.nll_loss(a, vt, vw, reduction=reduction, ignore_index=kw["ignore_index"])
        assert vkt.autograd.gradcheck(ce, (vx, vt)) and vkt.autograd.gradgradcheck(ce, (vx, vt))
        if not prob:
            assert vkt.autograd.gradcheck(nll, (vx,)) and vkt.autograd.gradgradcheck(nll, (vx,))


def test_float32_takes_no_fallback(dev):
    """Every float32 form runs in shaders on the device, forward and backward."""
    vkt.vulkan.reset_fallback_stats()
    for shape in [(7,), (3, 8), (2, 33, 3), (2, 1025)]:
        for case in CASES:
            for reduction in REDUCTIONS:
                check(False, shape, case, "float32", dev, reduction)
                if not case[3] and not case[4]:
                    check(True, shape, case, "float32", dev, reduction)
    assert vkt.vulkan.fallback_stats() == {}
