# vkt.nn.functional's affine_grid, grid_sample, gumbel_softmax, embedding_bag, ctc_loss and multilabel_margin_loss
# (and nn.EmbeddingBag, nn.CTCLoss, nn.MultiLabelMarginLoss) against torch's on both devices: values and the
# gradients of every differentiable argument (float32, and float64 on cpu), each mode and reduction, torch's errors,
# and no CPU fallback for float32 on vulkan.
import warnings

import numpy as np
import pytest

import vkt
from vkt import nn
from vkt.nn import functional as F

from conftest import assert_close, raised

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(7)
TOL = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-10)}


@pytest.fixture(params=[("cpu", "float32"), ("cpu", "float64"), ("vulkan", "float32")], ids="-".join)
def device_dtype(request):
    """float32 on both devices, float64 on the cpu device."""
    if request.param[0] == "vulkan":
        request.getfixturevalue("dev")
    return request.param


def lib_tensor(lib, value, device, grad=False):
    """value (a NumPy array) as torch's or vkt's tensor; floating arrays may be differentiated."""
    if lib is torch:
        return torch.tensor(value, requires_grad=grad)
    return vkt.tensor(value, device=device, requires_grad=grad)


def compare(device, dtype, call, grad_tol=None):
    """call(lib, functional, make) -> (output, leaves) for torch and vkt, make(array, grad) building the library's
    tensor; compares the outputs and, after the same random seed's backward, each leaf's gradient."""
    def run(lib, functional):
        def make(array, grad=False):
            array = np.asarray(array)
            return lib_tensor(lib, array.astype(dtype) if array.dtype.kind == "f" else array, device, grad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(lib, functional, make)

    ty, tleaves = run(torch, TF)
    if device == "vulkan":
        vkt.vulkan.reset_fallback_stats()
    vy, vleaves = run(vkt, F)
    rtol, atol = TOL[dtype]
    assert vy.device.type == device and str(vy.dtype) == f"vkt.{dtype}"
    assert_close(vy.detach(), ty.detach().numpy(), rtol, atol)
    seed = RNG.standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(seed))
    vy.backward(vkt.tensor(seed, device=device))
    if device == "vulkan":
        assert vkt.vulkan.fallback_stats() == {}, vkt.vulkan.fallback_stats()
    for t, v in zip(tleaves, vleaves):
        assert (v.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert_close(v.grad, t.grad.numpy(), *(grad_tol or (rtol * 10, atol * 10)))


def uniform(low, high, *shape):
    return RNG.uniform(low, high, shape)


def randn(*shape):
    return RNG.standard_normal(shape)


# ---- affine_grid -----------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 1, 3, 2, 5), (1, 2, 1, 1, 2)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(device_dtype, size, align_corners):
    device, dtype = device_dtype
    theta = randn(size[0], len(size) - 2, len(size) - 1)

    def call(lib, functional, make):
        t = make(theta, True)
        return functional.affine_grid(t, size, align_corners=align_corners), [t]
    compare(device, dtype, call)


AFFINE_ERRORS = [
    ((2, 2, 3), (2, 3, 4)),
    ((2, 2, 3), [2, 3, 4, 0]),
    ((2, 3, 3), (2, 3, 4, 5)),
    ((2, 2, 3), (2, 3, 4, 5, 6)),
    ((3, 2, 3), (2, 3, 4, 5)),
    ((2, 3, 4), (2, 3, 4, 5)),
]


@pytest.mark.parametrize("theta_shape, size", AFFINE_ERRORS)
def test_affine_grid_errors(device, theta_shape, size):
    theta = randn(*theta_shape).astype(np.float32)
    want = raised(lambda: TF.affine_grid(torch.tensor(theta), size, align_corners=False))
    assert want[0] is not None
    assert raised(lambda: F.affine_grid(vkt.tensor(theta, device=device), size, align_corners=False)) == want
    ints = np.zeros((2, 2, 3), dtype=np.int64)
    want = raised(lambda: TF.affine_grid(torch.tensor(ints), (2, 1, 2, 2), align_corners=False))
    assert raised(lambda: F.affine_grid(vkt.tensor(ints, device=device), (2, 1, 2, 2), align_corners=False)) == want


def test_affine_grid_warns_without_align_corners(device):
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(vkt.zeros(1, 2, 3, device=device), (1, 1, 2, 2))


# ---- grid_sample -----------------------------------------------------------------------------------

GRID_CASES = [(mode, padding, align, nd) for nd in (4, 5)
              for mode in (("bilinear", "nearest", "bicubic") if nd == 4 else ("bilinear", "nearest"))
              for padding in ("zeros", "border", "reflection") for align in (False, True)]


@pytest.mark.parametrize("mode, padding_mode, align_corners, nd", GRID_CASES)
def test_grid_sample(device_dtype, mode, padding_mode, align_corners, nd):
    device, dtype = device_dtype
    # odd sizes, and a grid reaching past [-1, 1] so the padding rule matters
    shape, grid_shape = ((2, 3, 4, 5), (2, 3, 5, 2)) if nd == 4 else ((2, 2, 3, 4, 2), (2, 2, 3, 2, 3))
    x, grid = randn(*shape), uniform(-1.4, 1.4, *grid_shape)

    def call(lib, functional, make):
        xi, g = make(x, True), make(grid, True)
        return functional.grid_sample(xi, g, mode, padding_mode, align_corners), [xi, g]
    compare(device, dtype, call, grad_tol=(1e-3, 1e-3) if dtype == "float32" else None)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_unit_sizes(device, padding_mode):
    # a size-1 dim with align_corners: reflection's span is 0
    x, grid = randn(1, 2, 1, 3), uniform(-1.5, 1.5, 1, 2, 4, 2)
    for mode in ("bilinear", "bicubic"):
        def call(lib, functional, make):
            xi, g = make(x, True), make(grid, True)
            return functional.grid_sample(xi, g, mode, padding_mode, True), [xi, g]
        compare(device, "float32", call, grad_tol=(1e-3, 1e-3))


def test_grid_sample_affine_round_trip(device):
    # the identity theta samples every pixel centre: the input comes back
    x = vkt.tensor(randn(2, 3, 4, 5).astype(np.float32), device=device)
    theta = vkt.tensor(np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1)), device=device)
    for align in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align)
        assert_close(F.grid_sample(x, grid, align_corners=align), x.cpu().numpy(), 1e-5, 1e-5)


@pytest.mark.parametrize("shape, grid_shape", [((0, 3, 4, 5), (0, 2, 2, 2)), ((2, 3, 4, 5), (2, 0, 2, 2))])
def test_grid_sample_empty(device, shape, grid_shape):
    for mode in ("bilinear", "bicubic"):
        def call(lib, functional, make):
            x = make(randn(*shape), True)
            return functional.grid_sample(x, make(uniform(-1, 1, *grid_shape)), mode, align_corners=False), [x]
        compare(device, "float32", call)


GRID_ERRORS = [
    ((2, 3, 4, 5), (3, 3, 3, 2), {}),
    ((2, 3, 4, 5), (2, 3, 3, 3), {}),
    ((2, 3, 4, 5), (2, 3, 3), {}),
    ((1, 2, 3), (1, 3, 1), {}),
    ((1, 2, 3, 4, 5), (1, 3, 3, 3, 3), {"mode": "bicubic"}),
    ((2, 3, 0, 5), (2, 3, 3, 2), {}),
    ((2, 3, 4, 5), (2, 3, 3, 2), {"mode": "linear"}),
    ((2, 3, 4, 5), (2, 3, 3, 2), {"padding_mode": "circular"}),
]


@pytest.mark.parametrize("shape, grid_shape, kwargs", GRID_ERRORS)
def test_grid_sample_errors(device, shape, grid_shape, kwargs):
    x, grid = randn(*shape).astype(np.float32), uniform(-1, 1, *grid_shape).astype(np.float32)
    kwargs = dict(kwargs, align_corners=False)
    want = raised(lambda: TF.grid_sample(torch.tensor(x), torch.tensor(grid), **kwargs))
    assert want[0] is not None
    assert raised(lambda: F.grid_sample(vkt.tensor(x, device=device), vkt.tensor(grid, device=device),
                                        **kwargs)) == want


def test_grid_sample_dtype_errors(device):
    x, grid = randn(1, 1, 2, 2), uniform(-1, 1, 1, 2, 2, 2)
    for xd, gd in (("float32", "float64"), ("int64", "int64")):
        want = raised(lambda: TF.grid_sample(torch.tensor(x.astype(xd)), torch.tensor(grid.astype(gd)),
                                             align_corners=True))
        got = raised(lambda: F.grid_sample(vkt.tensor(x.astype(xd), device=device),
                                           vkt.tensor(grid.astype(gd), device=device), align_corners=True))
        assert got == want


def test_grid_sample_nearest_gives_grid_a_zero_gradient(device):
    grid = vkt.tensor(uniform(-1, 1, 1, 2, 2, 2).astype(np.float32), device=device, requires_grad=True)
    F.grid_sample(vkt.randn(1, 2, 3, 3, device=device), grid, "nearest", align_corners=False).sum().backward()
    assert_close(grid.grad, np.zeros((1, 2, 2, 2), np.float32))


# ---- gumbel_softmax --------------------------------------------------------------------------------

@pytest.mark.parametrize("dim, tau", [(-1, 1.0), (0, 0.5), (1, 2.0)])
def test_gumbel_softmax_soft_and_hard(device, dim, tau):
    logits = vkt.tensor(randn(3, 4, 5).astype(np.float32), device=device, requires_grad=True)
    vkt.manual_seed(11)
    soft = F.gumbel_softmax(logits, tau=tau, dim=dim)
    vkt.manual_seed(11)
    hard = F.gumbel_softmax(logits, tau=tau, hard=True, dim=dim)
    assert_close(soft.sum(dim), np.ones(soft.sum(dim).shape, np.float32), 1e-5, 1e-5)
    assert (soft.detach() > 0).all().item()
    expected = TF.one_hot(torch.tensor(soft.detach().cpu().numpy()).argmax(dim), 5 if dim == -1 else
                          logits.shape[dim]).movedim(-1, dim).float().numpy()
    assert_close(hard.detach(), expected, 0, 1e-6)  # the one-hot of the same draw's argmax
    weights = vkt.tensor(randn(3, 4, 5).astype(np.float32), device=device)
    (soft * weights).sum().backward()
    soft_grad = logits.grad.cpu().numpy()
    logits.grad = None
    (hard * weights).sum().backward()  # straight through: the soft sample's gradient
    assert_close(logits.grad, soft_grad, 1e-5, 1e-6)
    assert np.abs(soft_grad).sum() > 0


def test_gumbel_softmax_follows_the_seed_and_warns(device):
    logits = vkt.zeros(2, 6, device=device)
    vkt.manual_seed(3)
    a = F.gumbel_softmax(logits).cpu().numpy()
    vkt.manual_seed(3)
    assert np.array_equal(F.gumbel_softmax(logits).cpu().numpy(), a)
    assert not np.array_equal(F.gumbel_softmax(logits).cpu().numpy(), a)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-5)
    ints = np.zeros((2, 3), np.int64)
    assert raised(lambda: F.gumbel_softmax(vkt.tensor(ints, device=device))) == raised(
        lambda: TF.gumbel_softmax(torch.tensor(ints)))


# ---- embedding_bag ---------------------------------------------------------------------------------

INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0, 7])
OFFSETS = np.array([0, 4, 4, 7])  # bag 1 is empty
BAG_CASES = [
    ("sum", {}), ("mean", {}), ("max", {}),
    ("sum", {"padding_idx": 4}), ("mean", {"padding_idx": -10}), ("max", {"padding_idx": 2}),
    ("sum", {"include_last_offset": True}), ("mean", {"include_last_offset": True}),
    ("max", {"include_last_offset": True}),
    ("sum", {"per_sample_weights": True}), ("sum", {"per_sample_weights": True, "padding_idx": 0}),
    ("mean", {"max_norm": 1.0}), ("max", {"max_norm": 1.5, "norm_type": 1.0}),
    ("sum", {"two_d": True}), ("mean", {"two_d": True, "padding_idx": 0}), ("max", {"two_d": True}),
    ("sum", {"two_d": True, "per_sample_weights": True}),
]


@pytest.mark.parametrize("mode, kwargs", BAG_CASES)
def test_embedding_bag(device_dtype, mode, kwargs):
    device, dtype = device_dtype
    kwargs = dict(kwargs)
    two_d, with_weights = kwargs.pop("two_d", False), kwargs.pop("per_sample_weights", False)
    weight, sample_weights = randn(10, 3), RNG.random(INDICES.size)
    offsets = np.append(OFFSETS, INDICES.size) if kwargs.get("include_last_offset") else OFFSETS
    indices = INDICES[:10].reshape(2, 5) if two_d else INDICES
    if two_d:
        sample_weights = sample_weights[:10].reshape(2, 5)

    def call(lib, functional, make):
        w = make(weight, True)  # a fresh copy each time: max_norm renormalises it in place
        psw = make(sample_weights, True) if with_weights else None
        args = (make(indices), w) if two_d else (make(indices), w, make(offsets))
        out = functional.embedding_bag(*args, mode=mode, per_sample_weights=psw, **kwargs)
        return out, [w] + ([psw] if with_weights else [])
    compare(device, dtype, call)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq(device, mode):
    # torch 2.13's CPU kernel divides some rows by another index's count (pytorch#190063, fixed upstream): the
    # reference is F.embedding's frequency scaling, pooled by hand
    weight, seed = randn(10, 3).astype(np.float32), randn(4, 3).astype(np.float32)
    w = vkt.tensor(weight, device=device, requires_grad=True)
    out = F.embedding_bag(vkt.tensor(INDICES, device=device), w, vkt.tensor(OFFSETS, device=device), mode=mode,
                          scale_grad_by_freq=True)
    out.backward(vkt.tensor(seed, device=device))
    tw = torch.tensor(weight, requires_grad=True)
    rows = TF.embedding(torch.tensor(INDICES), tw, scale_grad_by_freq=True)
    ends = list(OFFSETS[1:]) + [INDICES.size]
    pool = [rows[s:e].sum(0) if mode == "sum" else rows[s:e].mean(0) if e > s else rows[:0].sum(0)
            for s, e in zip(OFFSETS, ends)]
    ref = torch.stack(pool)
    ref.backward(torch.tensor(seed))
    assert_close(out.detach(), ref.detach().numpy(), 1e-5, 1e-6)
    assert_close(w.grad, tw.grad.numpy(), 1e-5, 1e-6)


def test_embedding_bag_max_ties_go_to_the_first(device):
    weight = np.array([[1.0, 2.0], [1.0, 0.5], [0.0, 2.0]], np.float32)
    for lib in (torch, vkt):
        w = lib_tensor(lib, weight, device, True)
        functional = TF if lib is torch else F
        functional.embedding_bag(lib_tensor(lib, np.array([[1, 0, 2]]), device), w, mode="max").sum().backward()
        assert_close(w.grad, np.array([[0, 1], [1, 0], [0, 0]], np.float32))


def test_embedding_bag_empty(device):
    w = randn(10, 3).astype(np.float32)
    for indices, offsets, kwargs in ((np.array([], np.int64), np.array([0, 0]), {}),
                                     (INDICES, np.array([], np.int64), {}),
                                     (INDICES, np.array([0]), {"include_last_offset": True})):
        ref = TF.embedding_bag(torch.tensor(indices), torch.tensor(w), torch.tensor(offsets), **kwargs)
        got = F.embedding_bag(vkt.tensor(indices, device=device), vkt.tensor(w, device=device),
                              vkt.tensor(offsets, device=device), **kwargs)
        assert_close(got, ref.numpy())


BAG_ERRORS = [
    (INDICES.astype(np.float32), OFFSETS, {}),
    (INDICES, np.array([1, 4]), {}),
    (INDICES, np.array([1, 4], np.int32), {}),
    (INDICES, np.array([0, 12]), {}),
    (INDICES, OFFSETS, {"padding_idx": 10}),
    (INDICES, OFFSETS, {"padding_idx": -11}),
    (np.array([1, 12]), np.array([0]), {}),
    (np.array([1, -1]), np.array([0]), {}),
    (INDICES, OFFSETS, {"mode": "max", "per_sample_weights": np.ones(11, np.float32)}),
    (INDICES, OFFSETS, {"mode": "sum", "per_sample_weights": np.ones(11, np.float64)}),
    (INDICES, OFFSETS, {"mode": "sum", "per_sample_weights": np.ones(7, np.float32)}),
    (INDICES, OFFSETS, {"mode": "median"}),
    (INDICES, OFFSETS, {"mode": "max", "scale_grad_by_freq": True}),
    (INDICES, OFFSETS, {"mode": "max", "sparse": True}),
    (INDICES, None, {}),
    (INDICES, OFFSETS.reshape(2, 2), {}),
    (INDICES[:8].reshape(2, 2, 2), None, {}),
]


@pytest.mark.parametrize("indices, offsets, kwargs", BAG_ERRORS)
def test_embedding_bag_errors(device, indices, offsets, kwargs):
    weight = randn(10, 3).astype(np.float32)

    def call(lib, functional):
        kw = {k: lib_tensor(lib, v, device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        off = None if offsets is None else lib_tensor(lib, offsets, device)
        return lambda: functional.embedding_bag(lib_tensor(lib, indices, device), lib_tensor(lib, weight, device),
                                                off, **kw)
    want = raised(call(torch, TF))
    assert want[0] is not None
    assert raised(call(vkt, F)) == want


def test_embedding_bag_other_errors(device):
    w = vkt.randn(10, 3, device=device)
    i = vkt.tensor(INDICES[:10].reshape(2, 5), device=device)
    err = raised(lambda: F.embedding_bag(i, w, vkt.tensor(OFFSETS, device=device)))
    assert err[0] == "ValueError" and err[1].startswith("if input is 2D, then offsets has to be None")
    want = raised(lambda: TF.embedding_bag(torch.tensor(INDICES), torch.zeros(10), torch.tensor(OFFSETS)))
    assert raised(lambda: F.embedding_bag(vkt.tensor(INDICES, device=device), w[0], vkt.tensor(OFFSETS))) == want
    with pytest.raises(NotImplementedError, match="sparse=True"):
        F.embedding_bag(i, w, sparse=True)


def test_embedding_bag_module(device):
    weight = randn(10, 3).astype(np.float32)
    tm = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(weight), freeze=False, mode="max", padding_idx=-1)
    vm = nn.EmbeddingBag.from_pretrained(vkt.tensor(weight, device=device), freeze=False, mode="max",
                                         padding_idx=-1)
    assert repr(vm) == repr(tm) and vm.weight.requires_grad
    args = (INDICES, OFFSETS)
    tout = tm(*(torch.tensor(a) for a in args))
    vout = vm(*(vkt.tensor(a, device=device) for a in args))
    assert_close(vout.detach(), tout.detach().numpy())
    frozen = nn.EmbeddingBag.from_pretrained(vkt.tensor(weight, device=device))
    assert not frozen.weight.requires_grad and frozen.mode == "mean"
    fresh = nn.EmbeddingBag(6, 4, mode="sum", padding_idx=2, device=device)
    assert tuple(fresh.weight.shape) == (6, 4) and fresh.weight.device.type == device
    assert_close(fresh.weight[2].detach(), np.zeros(4, np.float32))
    assert repr(fresh) == repr(torch.nn.EmbeddingBag(6, 4, mode="sum", padding_idx=2))
    psw = RNG.random((2, 5)).astype(np.float32)
    out = fresh(vkt.tensor(INDICES[:10].reshape(2, 5) % 6, device=device),
                per_sample_weights=vkt.tensor(psw, device=device))
    assert tuple(out.shape) == (2, 4)
    for bad in ({"padding_idx": 6}, {"padding_idx": -7}, {"_weight": vkt.zeros(5, 4)}):
        want = raised(lambda: torch.nn.EmbeddingBag(6, 4, **{k: (torch.zeros(5, 4) if k == "_weight" else v)
                                                            for k, v in bad.items()}))
        assert raised(lambda: nn.EmbeddingBag(6, 4, **bad)) == want


# ---- ctc_loss --------------------------------------------------------------------------------------

CTC_TARGETS = np.array([[1, 2, 2, 3], [3, 1, 0, 0], [4, 4, 4, 1]])  # padding values past each length
CTC_CASES = [
    ("mean", "padded", False, (7, 5, 6), (4, 2, 1)),
    ("sum", "padded", False, (7, 5, 6), (4, 2, 1)),
    ("none", "padded", False, (7, 5, 6), (4, 2, 1)),
    ("mean", "concatenated", False, (7, 7, 7), (4, 2, 3)),
    ("none", "concatenated", False, (6, 3, 7), (3, 0, 2)),
    ("sum", "tensors", False, (7, 2, 5), (2, 1, 3)),
    ("none", "tensors", True, (7, 2, 4), (4, 2, 3)),  # sample 1 is impossible: zero_infinity zeroes it
    ("mean", "padded", True, (3, 7, 0), (4, 4, 0)),  # impossible, possible, empty input and target
    ("none", "padded", False, (7, 2, 0), (4, 2, 0)),  # an impossible sample: inf, NaN gradients as torch's
]


@pytest.mark.parametrize("reduction, form, zero_infinity, input_lengths, target_lengths", CTC_CASES)
@pytest.mark.parametrize("blank", [0, 4])
def test_ctc_loss(device_dtype, reduction, form, zero_infinity, input_lengths, target_lengths, blank):
    device, dtype = device_dtype
    x = randn(7, 3, 5)
    targets = CTC_TARGETS % 4 + (blank == 0)  # never the blank
    if form == "concatenated":
        targets = np.concatenate([targets[b, :n] for b, n in enumerate(target_lengths)])

    def call(lib, functional, make):
        logits = make(x, True)
        log_probs = logits.log_softmax(2) if form == "tensors" else logits  # raw log_probs: torch's own gradient
        lengths = ((make(np.array(input_lengths)), make(np.array(target_lengths))) if form == "tensors"
                   else (list(input_lengths), target_lengths))
        out = functional.ctc_loss(log_probs, make(targets), *lengths, blank=blank, reduction=reduction,
                                  zero_infinity=zero_infinity)
        return out, [logits]
    compare(device, dtype, call)


def test_ctc_loss_unbatched_and_module(device):
    x = randn(6, 4).astype(np.float32)
    for reduction in ("none", "mean"):
        def call(lib, functional, make):
            lp = make(x, True)
            loss = (torch.nn if lib is torch else nn).CTCLoss(blank=3, reduction=reduction)
            lengths = (make(np.array(6)), make(np.array(3)))
            return loss(lp.log_softmax(1), make(np.array([0, 1, 1])), *lengths), [lp]
        compare(device, "float32", call)


CTC_ERRORS = [
    ({}, {"input_lengths": (6, 5, 4)}),
    ({}, {"target_lengths": (3, 2, 1)}),
    ({}, {"input_lengths": (7, 5)}),
    ({}, {"input_lengths": (-1, 5)}),
    ({}, {"target_lengths": (4, 2)}),
    ({}, {"target_lengths": (-1, 2)}),
    ({"targets": "first_row"}, {}),
    ({"targets": "flat"}, {}),
    ({"targets": "3d"}, {}),
    ({"log_probs": "4d"}, {}),
    ({"log_probs": "empty"}, {"input_lengths": (0, 0)}),
    ({"log_probs": "long"}, {}),
    ({}, {"blank": 5}),
    ({}, {"blank": -1}),
    ({}, {"reduction": "foo"}),
    ({}, {"input_lengths": "float_tensor"}),
    ({}, {"target_lengths": "float_tensor"}),
]


@pytest.mark.parametrize("change, kwargs", CTC_ERRORS)
def test_ctc_loss_errors(device, change, kwargs):
    lp = np.log(np.full((6, 2, 5), 0.2, np.float32))
    targets = np.array([[1, 2, 2], [3, 1, 0]])
    lp = {"4d": lp[None], "empty": lp[:0], "long": lp.astype(np.int64)}.get(change.get("log_probs"), lp)
    targets = {"first_row": targets[:1], "flat": targets.reshape(-1), "3d": targets[None]}.get(
        change.get("targets"), targets)

    def call(lib, functional):
        kw = dict({"input_lengths": (6, 5), "target_lengths": (3, 2)}, **kwargs)
        for name in ("input_lengths", "target_lengths"):
            if kw[name] == "float_tensor":
                kw = dict(kw, input_lengths=lib_tensor(lib, np.array([6, 5]), device),
                          target_lengths=lib_tensor(lib, np.array([3, 2]), device))
                kw[name] = lib_tensor(lib, np.array([3.0, 2.0]), device)
        return lambda: functional.ctc_loss(lib_tensor(lib, lp, device), lib_tensor(lib, targets, device), **kw)
    want = raised(call(torch, TF))
    assert want[0] is not None
    assert raised(call(vkt, F)) == want


def test_ctc_loss_length_kinds_must_agree(device):
    lp = vkt.zeros(6, 2, 5, device=device).log_softmax(2)
    targets = vkt.tensor([[1, 2], [3, 1]], device=device)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        F.ctc_loss(lp, targets, vkt.tensor([6, 5]), (2, 2))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        F.ctc_loss(lp, targets, 6, 2)


# ---- multilabel_margin_loss ------------------------------------------------------------------------

MLM_TARGET = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [0, 0, -1, 2], [-1, 1, 2, 3], [2, 1, 0, 3]])
MLM_CASES = [((5, 4), MLM_TARGET), ((4,), MLM_TARGET[1]), ((), np.array(0)), ((0, 4), MLM_TARGET[:0]),
             ((1, 1), np.array([[0]]))]


@pytest.mark.parametrize("shape, target", MLM_CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(device_dtype, shape, target, reduction):
    device, dtype = device_dtype
    if shape == (0, 4) and reduction != "none":
        # torch 2.13 reduces an empty batch to uninitialised memory; vkt's mean of nothing is NaN, its sum 0
        x = vkt.zeros(0, 4, dtype=getattr(vkt, dtype), device=device)
        got = F.multilabel_margin_loss(x, vkt.tensor(target, device=device), reduction=reduction).item()
        assert np.isnan(got) if reduction == "mean" else got == 0
        return
    x = randn(*shape) * 0.6  # margins both below and above 0

    def call(lib, functional, make):
        xi = make(x, True)
        if shape == (5, 4) and reduction == "mean":  # the module once
            return (torch.nn if lib is torch else nn).MultiLabelMarginLoss()(xi, make(target)), [xi]
        return functional.multilabel_margin_loss(xi, make(target), reduction=reduction), [xi]
    compare(device, dtype, call)


MLM_ERRORS = [
    ((3, 4), MLM_TARGET[:3].astype(np.int32)),
    ((3, 4), MLM_TARGET[:3].astype(np.float32)),
    ((3, 4), MLM_TARGET[:2]),
    ((4,), MLM_TARGET[0, :3]),
    ((2, 4), np.array([[0, -1, 7, 1], [1, -1, -1, -1]])),
    ((2, 4), np.array([[0, -1, -2, 1], [1, -1, -1, -1]])),
    ((3, 0), np.zeros((3, 0), np.int64)),
    ((1, 3, 4), MLM_TARGET[None, :3]),
]


@pytest.mark.parametrize("shape, target", MLM_ERRORS)
def test_multilabel_margin_loss_errors(device, shape, target):
    x = randn(*shape).astype(np.float32)
    want = raised(lambda: TF.multilabel_margin_loss(torch.tensor(x), torch.tensor(target)))
    assert want[0] is not None
    assert raised(lambda: F.multilabel_margin_loss(vkt.tensor(x, device=device),
                                                   vkt.tensor(target, device=device))) == want
    want = raised(lambda: TF.multilabel_margin_loss(torch.tensor(x), torch.tensor(target), reduction="avg"))
    assert raised(lambda: F.multilabel_margin_loss(vkt.tensor(x, device=device), vkt.tensor(target, device=device),
                                                   reduction="avg")) == want
