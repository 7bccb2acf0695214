# Autograd of in-place ops on tensors in the graph, and of the ops that had no backward: cumprod, median() and
# nanmedian() of a whole tensor, linalg.matrix_norm with ord 'fro', ±1 and ±inf. Against torch.autograd in
# float64 on the same inputs (values, gradients of every input, node names), with gradcheck and gradgradcheck,
# and float32 on vulkan without CPU fallbacks.
import warnings

import numpy as np
import pytest
import torch

import vkt
from conftest import raised, to_numpy

F = vkt.nn.functional


def lib_F(L):
    return torch.nn.functional if L is torch else F


def leaf(L, a, device):
    return torch.tensor(a, requires_grad=True) if L is torch else vkt.tensor(a, device=device, requires_grad=True)


def assert_grads_match(device, fn, *arrays, node=True, seed=0):
    """fn(L, *leaves) on vkt and torch: the values, the node names and every leaf's gradient agree."""
    vx, tx = [leaf(vkt, a, device) for a in arrays], [leaf(torch, a, device) for a in arrays]
    vy, ty = fn(vkt, *vx), fn(torch, *tx)
    np.testing.assert_allclose(vy.detach().cpu().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    if node:
        assert vy.grad_fn.name() == ty.grad_fn.name()
    w = np.random.default_rng(seed).standard_normal(tuple(ty.shape))
    vy.backward(vkt.tensor(w, device=device))
    ty.backward(torch.tensor(w))
    for v, t in zip(vx, tx):
        if t.grad is None:
            assert v.grad is None or not v.grad.cpu().numpy().any()
        else:
            np.testing.assert_allclose(v.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def inplace(op):
    """op applied in place to a non-leaf copy of x (y = x * 1), as a layer with inplace=True does."""
    def run(L, x, *rest):
        y = x * 1
        op(L, y, *rest)
        return y
    return run


# ---- in-place ops whose backward needs the input they overwrite: the node keeps a copy (PyTorch's original self)

def positive(shape, seed=1):
    return np.random.default_rng(seed).random(shape) * 0.8 + 0.1


SAVING = [
    ("sin_", lambda L, y: y.sin_()),
    ("cos_", lambda L, y: y.cos_()),
    ("log_", lambda L, y: y.log_()),
    ("abs_", lambda L, y: y.abs_()),
    ("square_", lambda L, y: y.square_()),
    ("erf_", lambda L, y: y.erf_()),
    ("clamp_", lambda L, y: y.clamp_(0.3, 0.6)),
    ("clamp_min_", lambda L, y: y.clamp_min_(0.5)),
    ("pow_", lambda L, y: y.pow_(2.5)),
    ("leaky_relu_inplace", lambda L, y: lib_F(L).leaky_relu(y, 0.1, inplace=True)),
    ("elu_inplace", lambda L, y: lib_F(L).elu(y, inplace=True)),
    ("LeakyReLU_module", lambda L, y: L.nn.LeakyReLU(0.2, inplace=True)(y)),
]


NAMED_OTHERWISE = set()  # nodes vkt names otherwise than PyTorch: none left


@pytest.mark.parametrize("name,op", SAVING, ids=[c[0] for c in SAVING])
def test_inplace_op_keeps_the_input_it_overwrote(device, name, op):
    a = positive((3, 4)) - (0.5 if name in ("abs_", "leaky_relu_inplace", "elu_inplace", "LeakyReLU_module") else 0)
    assert_grads_match(device, inplace(op), a, node=name not in NAMED_OTHERWISE)


NEGATIVE_SLOPE = [  # in place with a negative slope: torch's node keeps the result and its backward refuses
    ("leaky_relu_", lambda L, y, s: lib_F(L).leaky_relu_(y, s)),
    ("leaky_relu_inplace", lambda L, y, s: lib_F(L).leaky_relu(y, s, inplace=True)),
    ("LeakyReLU_module", lambda L, y, s: L.nn.LeakyReLU(s, inplace=True)(y)),
    ("rrelu_eval", lambda L, y, s: lib_F(L).rrelu_(y, s - 0.1, s + 0.1, training=False)),
    # training with lower == upper: torch 2.13 keeps the training node (the slope is its noise), which differentiates
    # a negative slope in place, unlike the evaluation path
    ("rrelu_train_equal_bounds", lambda L, y, s: lib_F(L).rrelu_(y, s, s, training=True)),
    ("rrelu_train_equal_bounds_inplace", lambda L, y, s: lib_F(L).rrelu(y, s, s, training=True, inplace=True)),
    ("leaky_relu_out_of_place", lambda L, y, s: lib_F(L).leaky_relu(y, s)),
]


@pytest.mark.parametrize("slope", [-0.5, -1, 0.0, 0.2])
@pytest.mark.parametrize("name,op", NEGATIVE_SLOPE, ids=[c[0] for c in NEGATIVE_SLOPE])
def test_inplace_leaky_relu_with_a_negative_slope_refuses_backward_as_torch(device, name, op, slope):
    found = []
    for L in (vkt, torch):
        x = leaf(L, positive((3, 4)) - 0.5, device)
        y = x * 1
        op(L, y, slope)
        found.append((y.grad_fn.name(), raised(lambda: y.sum().backward()), x.grad is None))
        if x.grad is not None:
            found[-1] += (np.round(to_numpy(x.grad).astype(np.float64), 6).tolist(),)
    assert found[0] == found[1]


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("call", [lambda F, x: F.leaky_relu(x), lambda F, x: F.leaky_relu_(x),
                                  lambda F, x: F.leaky_relu(x, 0.2, inplace=True)], ids=["out", "inplace", "kwarg"])
def test_integer_leaky_relu_raises_as_torch(device, dtype, call):
    def run(L, d):
        return lambda: call(lib_F(L), L.tensor([1, 0, 1], dtype=getattr(L, dtype), device=d))
    assert raised(run(vkt, device)) == raised(run(torch, "cpu"))


TWO = [
    ("mul_", lambda L, y, o: y.mul_(o)),
    ("div_", lambda L, y, o: y.div_(o)),
    ("pow_tensor", lambda L, y, o: y.pow_(o)),
    ("atan2_", lambda L, y, o: y.atan2_(o)),
    ("hypot_", lambda L, y, o: y.hypot_(o)),
    ("copysign_", lambda L, y, o: y.copysign_(o - 0.5)),
    ("addcmul_", lambda L, y, o: y.addcmul_(o, o, value=0.5)),
    ("lerp_", lambda L, y, o: y.lerp_(o, 0.3)),
]


@pytest.mark.parametrize("name,op", TWO, ids=[c[0] for c in TWO])
def test_inplace_binary_op_keeps_the_input_it_overwrote(device, name, op):
    assert_grads_match(device, inplace(op), positive((3, 4), 1), positive((3, 4), 2), node=name not in NAMED_OTHERWISE)


def test_inplace_op_keeps_its_input_through_a_second_derivative(device):
    """y = x * 2; y.sin_(): the first gradient 2 cos(2x) is differentiable again (-4 sin(2x)), through the copy."""
    a = positive((5,))
    grads = []
    for L, x in ((vkt, leaf(vkt, a, device)), (torch, leaf(torch, a, device))):
        y = x * 2
        y.sin_()
        (g,) = L.autograd.grad(y.sum(), x, create_graph=True)
        (g * g).sum().backward()
        grads.append(x.grad.cpu().numpy() if L is vkt else x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_a_saved_tensor_modified_later_still_raises(device):
    x = vkt.tensor(positive((4,)), device=device, requires_grad=True)
    y = x * 1
    z = y.sin()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_op_on_a_tensor_without_grad_with_an_operand_that_has_one(device):
    """y.mul_(w) where only w requires grad: w's gradient is y's old value."""
    def op(L, w):
        y = (torch.tensor(positive((3,), 4)) if L is torch else vkt.tensor(positive((3,), 4), device=device))
        return y.mul_(w)
    assert_grads_match(device, op, positive((3,), 5))


# ---- scans in place: recorded as PyTorch records them (they kept the old history, a wrong gradient, before)

@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scan_in_place_is_recorded(device, name, dim):
    assert_grads_match(device, inplace(lambda L, y: getattr(y, name)(dim)), positive((3, 4)))


# ---- comparisons in place: 0 and 1 with no gradient (they kept the old history before)

@pytest.mark.parametrize("op", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_"])
@pytest.mark.parametrize("other", ["number", "tensor"])
def test_comparison_in_place_gives_zero_gradients(device, op, other):
    a = np.array([[0.2, 0.5, 0.7], [0.5, 0.1, 0.9]])
    if other == "number":
        assert_grads_match(device, inplace(lambda L, y: getattr(y, op)(0.5)), a)
    else:
        assert_grads_match(device, inplace(lambda L, y, o: getattr(y, op)(o)), a, np.full((2, 3), 0.5))


# ---- cumprod

CUMPROD = [  # shape, dim, positions set to 0
    ((6,), 0, []),
    ((3, 6), 1, [(0, 2), (1, 0), (1, 4), (2, 5)]),
    ((3, 6), -1, [(0, 1), (0, 3), (2, 2)]),
    ((4, 3, 2), 0, [(1, 1, 0), (3, 1, 0), (0, 2, 1)]),
    ((2, 5, 3), 1, [(0, 4, 0), (1, 0, 2), (1, 1, 2)]),
    ((), 0, []),
    ((0, 3), 1, []),
    ((3, 1), 1, [(1, 0)]),
]


def cumprod_input(shape, zeros, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    for z in zeros:
        a[z] = 0
    return a


@pytest.mark.parametrize("shape,dim,zeros", CUMPROD, ids=[f"{c[0]}-{c[1]}-{len(c[2])}zeros" for c in CUMPROD])
def test_cumprod_grads_match_torch(device, shape, dim, zeros):
    assert_grads_match(device, lambda L, x: L.cumprod(x, dim), cumprod_input(shape, zeros))


# PyTorch's gradient of a line of one element is the incoming one, outside its graph: no second derivative there
SECOND = [c for c in CUMPROD if c[0] and 0 not in c[0] and c[0][c[1]] > 1]


@pytest.mark.parametrize("shape,dim,zeros", SECOND, ids=[f"{c[0]}-{c[1]}-{len(c[2])}zeros" for c in SECOND])
def test_cumprod_second_derivative_matches_torch(device, shape, dim, zeros):
    """create_graph takes the exact O(n^2) form, whose second derivative sees the zeros."""
    a, w = cumprod_input(shape, zeros), np.random.default_rng(3).standard_normal(shape)
    grads = []
    for L in (vkt, torch):
        x = leaf(L, a, device)
        W = torch.tensor(w) if L is torch else vkt.tensor(w, device=device)
        (g,) = L.autograd.grad((L.cumprod(x, dim) * W).sum(), x, create_graph=True)
        (g * g).sum().backward()
        grads.append(x.grad.cpu().numpy() if L is vkt else x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("zeros", [[], [(1, 2)], [(0, 0), (0, 3)]], ids=["none", "one", "two"])
def test_cumprod_gradcheck(device, zeros):
    x = vkt.tensor(cumprod_input((2, 5), zeros, 4), device=device, requires_grad=True)
    assert vkt.autograd.gradcheck(lambda t: vkt.cumprod(t, 1), (x,))
    assert vkt.autograd.gradgradcheck(lambda t: vkt.cumprod(t, 1), (x,))


def test_cumprod_dtype_argument_gives_the_input_dtype_gradient(device):
    x = vkt.tensor(cumprod_input((3, 4), [(1, 1)]), dtype=vkt.float32, device=device, requires_grad=True)
    # the reference in float64 throughout: torch 2.11's cumprod(dtype=) backward fails on a line with a zero
    tx = torch.tensor(x.detach().cpu().numpy().astype(np.float64), requires_grad=True)
    x.cumprod(1, dtype=vkt.float64).sum().backward()
    tx.cumprod(1).sum().backward()
    assert x.grad.dtype == vkt.float32
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-6)


# ---- median() and nanmedian(): the gradient shared evenly among the elements equal to the result

MEDIANS = [
    ("plain", np.random.default_rng(5).standard_normal((3, 4))),
    ("ties", np.array([[1.0, 2.0, 2.0], [2.0, 0.0, 5.0]])),
    ("nan", np.array([[1.0, np.nan, 2.0], [np.nan, 0.0, 5.0]])),
    ("0-d", np.array(3.0)),
]


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
@pytest.mark.parametrize("name,a", MEDIANS, ids=[m[0] for m in MEDIANS])
def test_median_of_all_grads_match_torch(device, fn, name, a):
    assert_grads_match(device, lambda L, x: getattr(x, fn)(), a)


# ---- linalg.matrix_norm

ORDS = [None, "fro", 1, -1, float("inf"), -float("inf")]


@pytest.mark.parametrize("ord", ORDS, ids=[str(o) for o in ORDS])
@pytest.mark.parametrize("case", ["batched", "ties", "dims_keepdim", "dims_reversed"])
def test_matrix_norm_grads_match_torch(device, ord, case):
    kw = {} if ord is None else {"ord": ord}
    a = np.array([[1.0, -2.0], [-1.0, 2.0]]) if case == "ties" else np.random.default_rng(6).standard_normal((2, 3, 4))
    if case == "dims_keepdim":
        kw.update(dim=(0, 2), keepdim=True)
    if case == "dims_reversed":
        kw.update(dim=(-1, 0))
    assert_grads_match(device, lambda L, x: L.linalg.matrix_norm(x, **kw), a)


@pytest.mark.parametrize("ord", ORDS[1:], ids=[str(o) for o in ORDS[1:]])
def test_matrix_norm_gradcheck(device, ord):
    x = vkt.tensor(np.random.default_rng(7).standard_normal((3, 4)), device=device, requires_grad=True)
    assert vkt.autograd.gradcheck(lambda t: vkt.linalg.matrix_norm(t, ord), (x,))
    assert vkt.autograd.gradgradcheck(lambda t: vkt.linalg.matrix_norm(t, ord), (x,))


def test_matrix_norm_dtype_and_errors(device):
    x = vkt.tensor(np.random.default_rng(8).standard_normal((3, 4)), dtype=vkt.float32, device=device,
                   requires_grad=True)
    y = vkt.linalg.matrix_norm(x, 1, dtype=vkt.float64)
    assert y.dtype == vkt.float64 and y.grad_fn.name() == "AmaxBackward0"
    y.backward()
    assert x.grad.dtype == vkt.float32
    with pytest.raises(RuntimeError, match="dims must be different"):
        vkt.linalg.matrix_norm(x, 1, dim=(1, 1))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        vkt.linalg.matrix_norm(x[0], "fro")
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        vkt.linalg.matrix_norm(x, 3)


# ---- float32 on vulkan: every backward above runs in shaders

def test_vulkan_float32_backwards_take_no_fallback():
    if not vkt.vulkan.is_available():
        pytest.skip("no Vulkan adapter")
    rng = np.random.default_rng(9)
    x = vkt.tensor(rng.standard_normal((4, 6)).astype(np.float32), device="vulkan", requires_grad=True)
    vkt.vulkan.reset_fallback_stats()
    for f in (lambda t: t.cumprod(1), lambda t: t.median(), lambda t: t.nanmedian(),
              lambda t: vkt.linalg.matrix_norm(t, 1), lambda t: vkt.linalg.matrix_norm(t, -float("inf")),
              lambda t: inplace(lambda L, y: y.sin_())(vkt, t), lambda t: inplace(lambda L, y: y.cumprod_(0))(vkt, t),
              lambda t: inplace(lambda L, y: y.gt_(0.0))(vkt, t)):
        x.grad = None
        f(x).sum().backward()
        assert x.grad is not None
    assert vkt.vulkan.fallback_stats() == {}


# ---- in-place ops whose backward needs their output: the output saved is the tensor written to

def test_inplace_op_saves_the_tensor_it_wrote_not_a_copy(device):
    """relu_ (nn.ReLU(inplace=True)) holds no second buffer for its backward, and a later write to the tensor
    is caught at backward, as in PyTorch."""
    n = 1 << 18
    x = vkt.randn(n, device=device, requires_grad=True)
    y = x * 2
    y.sum().item()  # y computed (fusion would otherwise compute it with relu_)
    before = vkt.vulkan.memory_allocated() if device == "vulkan" else None
    y.relu_()
    if device == "vulkan":
        assert vkt.vulkan.memory_allocated() - before < n * 4
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 8 * np.maximum(x.detach().cpu().numpy(), 0), rtol=1e-6)
    z = x * 1
    z.relu_()
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# ---- views and in-place writes: a view after a write to its base (or through it) is the base's current value
# seen through its geometry, and a write through a view goes into its base's history (PyTorch's CopySlices)

def w_of(L, device, shape, seed=11):
    a = np.random.default_rng(seed).standard_normal(shape)
    return torch.tensor(a, requires_grad=True) if L is torch else vkt.tensor(a, device=device, requires_grad=True)


VIEW_WRITES = [
    ("slice_add", lambda L, y, w: y[:, :3].add_(1)),
    ("augmented_slice", lambda L, y, w: y.__setitem__((slice(None), slice(0, 3)), y[:, :3] + w[:, :3])),
    ("select_mul", lambda L, y, w: y[0].mul_(3)),
    ("select_mul_tensor", lambda L, y, w: y[1].mul_(w[0])),
    ("transpose_row", lambda L, y, w: y.t()[2].sub_(w[:, 2])),
    ("flat_view_slice", lambda L, y, w: y.view(-1)[2:7].mul_(2)),
    ("view_of_view", lambda L, y, w: y[1:][:, 1:3].exp_()),
    ("diagonal_zero", lambda L, y, w: y.diagonal().zero_()),
    ("narrow_fill", lambda L, y, w: y.narrow(1, 1, 2).fill_(0.5)),
    ("narrow_copy", lambda L, y, w: y.narrow(1, 2, 2).copy_(w[:, :2] * 3)),
    ("row_clamp", lambda L, y, w: y[1].clamp_(-0.5, 0.5)),
    ("two_views", lambda L, y, w: (y[0].mul_(2), y[:, 1].add_(w[:, 1]))),
]


@pytest.mark.parametrize("name,write", VIEW_WRITES, ids=[c[0] for c in VIEW_WRITES])
def test_write_through_a_view_goes_into_the_base(device, name, write):
    """The base's values, node and gradients (of x and of the written operand w) match PyTorch's."""
    def fn(L, x, w):
        y = x * 2
        write(L, y, w)
        return y * y
    a = np.random.default_rng(10).standard_normal((2, 4))
    assert_grads_match(device, fn, a, np.random.default_rng(11).standard_normal((2, 4)), node=False)


STALE = [  # a view made before a write to its base, used after it
    ("select_then_setitem", lambda L, y, w: y.__setitem__(0, 5.0), lambda y: y[:, 0]),
    ("slice_then_mul_", lambda L, y, w: y.mul_(3), lambda y: y[1:, 1:3]),
    ("transpose_then_add_tensor", lambda L, y, w: y.add_(w), lambda y: y.t()),
    ("reshape_then_zero_row", lambda L, y, w: y[1].zero_(), lambda y: y.view(8)),
    ("sibling_view_write", lambda L, y, w: y[:, 2].mul_(w[0, 0]), lambda y: y[1]),
]


@pytest.mark.parametrize("name,write,view", STALE, ids=[c[0] for c in STALE])
def test_a_view_made_before_a_write_follows_the_base(device, name, write, view):
    """vkt kept such a view's old history, a silently wrong gradient; PyTorch regenerates it (AsStridedBackward0)."""
    def fn(L, x, w):
        y = x * 2
        v = view(y)
        write(L, y, w)
        return v * v
    a = np.random.default_rng(12).standard_normal((2, 4))
    assert_grads_match(device, fn, a, np.random.default_rng(13).standard_normal((2, 4)), node=False)


def test_a_view_made_before_a_no_grad_write_sees_the_new_values(device):
    x = vkt.tensor(np.ones((2, 3)), device=device, requires_grad=True)
    y = x * 2
    v = y[0]
    with vkt.no_grad():
        y.mul_(5)
    (v * v).sum().backward()
    assert_close_rows = x.grad.cpu().numpy()
    np.testing.assert_allclose(assert_close_rows, [[40, 40, 40], [0, 0, 0]])


def test_second_derivative_through_a_view_write(device):
    a = positive((2, 3))
    grads = []
    for L in (vkt, torch):
        x = leaf(L, a, device)
        y = x * 1
        y[0].sin_()
        (g,) = L.autograd.grad((y * y).sum(), x, create_graph=True)
        g.sum().backward()
        grads.append(x.grad.cpu().numpy() if L is vkt else x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_a_view_of_a_leaf_still_refuses_writes(device):
    x = vkt.tensor(np.ones((2, 3)), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[1][1:].add_(1)  # through a chain of views
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.t()[0].zero_()
    assert x.is_leaf and x.grad_fn is None
    with vkt.no_grad():
        x[0].mul_(2)
    np.testing.assert_allclose(x.detach().cpu().numpy(), [[2, 2, 2], [1, 1, 1]])


def test_view_writes_keep_memory_flat():
    if not vkt.vulkan.is_available():
        pytest.skip("no Vulkan adapter")
    x = vkt.randn(64, 64, device="vulkan", requires_grad=True)
    def step():
        y = x * 2
        v = y[:, :8]
        y[:, :32] += 1
        y[3].mul_(2)
        (v.sum() + (y * y).sum()).backward()
        x.grad = None
    step()
    vkt.vulkan.synchronize()
    before = vkt.vulkan.memory_allocated()
    for _ in range(200):
        step()
    vkt.vulkan.synchronize()
    assert vkt.vulkan.memory_allocated() == before


@pytest.mark.parametrize("make", [lambda y: y.unbind(0)[1], lambda y: y.chunk(2, 1)[1],
                                  lambda y: y.split([1, 3], 1)[0]], ids=["unbind", "chunk", "split_with_sizes"])
def test_writes_to_views_of_a_multi_view_op_raise_as_in_pytorch(device, make):
    for L in (vkt, torch):  # torch 2.13's wording (2.11 names the node otherwise)
        y = leaf(L, np.ones((2, 4)), device) * 2
        with pytest.raises(RuntimeError, match=r"Output \d of \w+ is a view and is being modified inplace. This "
                                               "view is the output of a function that returns multiple views"):
            make(y).mul_(2)
        with L.no_grad():
            make(y).mul_(2)


def test_a_write_through_a_view_saves_the_view_it_wrote(device):
    """y[0].exp_() saves y[0] itself for its backward: a later write to y is caught, as in PyTorch."""
    for L in (vkt, torch):
        x = leaf(L, np.ones((2, 3)), device)
        y = x * 2
        y[0].exp_()
        y[:, 1].add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (y * y).sum().backward()


def test_a_view_made_in_no_grad_mode_refuses_writes_in_grad_mode(device):
    for L in (vkt, torch):
        y = leaf(L, np.ones(3), device) * 2
        with L.no_grad():
            v = y[0:2]
        assert v.requires_grad and v.is_leaf and v.grad_fn is None  # its base requires grad
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with "
                                               "grad mode enabled"):
            v.mul_(5)
        with L.no_grad():
            v.mul_(5)  # both inside no_grad: allowed, untracked
        d = y.detach()[0:2]
        d.mul_(2)  # a view of a detached tensor is not one of y
        np.testing.assert_allclose(y.detach().cpu().numpy() if L is vkt else y.detach().numpy(), [20, 20, 2])


@pytest.mark.parametrize("make", [lambda b: b[:2], lambda b: b[0, :1].view(()), lambda b: b.t()[0]],
                         ids=["slice", "view_of_slice", "select_of_transpose"])
@pytest.mark.parametrize("non_leaf", [False, True])
def test_backward_from_a_view_made_in_no_grad_mode_raises_as_torch(device, make, non_leaf):
    # The view requires grad (its base does) but has no grad_fn, so it has no edge a gradient could take.
    found = []
    for L in (vkt, torch):
        b = leaf(L, np.ones((3, 3)), device)
        b = b * 2 if non_leaf else b
        with L.no_grad():
            v = make(b)
        g = L.ones(v.shape, dtype=v.dtype, device=v.device)
        found.append((v.requires_grad, raised(lambda: v.backward(g)), raised(lambda: L.autograd.grad(v, b, g))))
    assert found[0] == found[1]


# ---- views of tensors without grad: they know their base too, so a write through one goes into the base's
# history, and one made before the base took a history takes it (vkt kept both without one, a silent wrong gradient)

PLAIN_BASE = [  # buf = zeros(2, 5), v = view(buf), then write(buf, v, w); the result is read from buf and v
    ("slice_copy", lambda b: b[:, 1:5], lambda L, b, v, w: v.copy_(w * 2)),
    ("select_add_through_view", lambda b: b[1, 1:], lambda L, b, v, w: v.add_(w[0])),
    ("setitem_on_base_then_stale_view", lambda b: b[:, 1:5], lambda L, b, v, w: b.__setitem__(0, w.sum())),
    ("plain_write_then_tensor_write", lambda b: b.t(), lambda L, b, v, w: (v.mul_(2), v[1:].add_(w.t()))),
    ("view_of_view", lambda b: b[:, 1:][:, ::2], lambda L, b, v, w: v.copy_(w[:, :2].exp())),
    ("base_written_whole", lambda b: b.view(10)[3:7], lambda L, b, v, w: b.copy_(L.cat([w, w[:, :1]], 1) * 3)),
    ("view_written_through_setitem", lambda b: b[0], lambda L, b, v, w: v.__setitem__(slice(1, 3), w[1, :2])),
    ("reshape_then_sibling", lambda b: b.reshape(5, 2), lambda L, b, v, w: b[:, 2:].mul_(w[:, :3])),
]


@pytest.mark.parametrize("name,view,write", PLAIN_BASE, ids=[c[0] for c in PLAIN_BASE])
def test_a_view_of_a_tensor_without_grad_shares_the_history_written_into_it(device, name, view, write):
    def fn(L, w):
        buf = L.zeros(2, 5, dtype=L.float64) if L is torch else L.zeros(2, 5, dtype=L.float64, device=device)
        v = view(buf)
        write(L, buf, v, w)
        return L.cat([(buf * buf).reshape(-1), (v * 3).reshape(-1)])
    assert_grads_match(device, fn, np.random.default_rng(14).standard_normal((2, 4)))
    nodes = []
    for L in (vkt, torch):  # the nodes the base and the view get
        buf = L.zeros(2, 5) if L is torch else L.zeros(2, 5, device=device)
        v = view(buf)
        write(L, buf, v, leaf(L, np.ones((2, 4), np.float32), device))
        nodes.append((buf.grad_fn.name().split("::")[-1], v.grad_fn.name(), v.requires_grad, v.is_leaf))
    assert nodes[0] == nodes[1]


COMPOSITES = [  # lerp, addcmul, addcdiv, clamp with tensor bounds, out of place and in place, broadcast; one node
    # each, as PyTorch's
    ("addcmul", lambda L, x, y, z: L.addcmul(x, y, z, value=0.7)),
    ("addcdiv", lambda L, x, y, z: L.addcdiv(x, y, z.abs() + 1, value=-1.3)),
    ("addcmul_", lambda L, x, y, z: (x * 1).addcmul_(y, z)),
    ("addcdiv_", lambda L, x, y, z: (x * 1).addcdiv_(y, z.abs() + 1, value=2)),
    ("lerp_number", lambda L, x, y, z: L.lerp(x, y, 0.3)),
    ("lerp_tensor", lambda L, x, y, z: L.lerp(x, y, z.sigmoid())),
    ("lerp_", lambda L, x, y, z: (x * 1).lerp_(y, z.sigmoid())),
    ("lerp_number_", lambda L, x, y, z: (x * 1).lerp_(y, 0.25)),
    ("addcmul_broadcast", lambda L, x, y, z: L.addcmul(x, y[0], z[:, :1])),
    ("lerp_broadcast", lambda L, x, y, z: L.lerp(x[:1], y, z[:, :1].sigmoid())),
    ("clamp_tensors", lambda L, x, y, z: L.clamp(x, y, z + 1)),
    ("clamp_tensor_min", lambda L, x, y, z: L.clamp(x, min=y)),
    ("clamp_tensor_max", lambda L, x, y, z: x.clamp(max=z)),
    ("clamp_min_tensor", lambda L, x, y, z: L.clamp_min(x, y)),
    ("clamp_max_tensor", lambda L, x, y, z: x.clamp_max(z)),
    ("clip_crossed_bounds", lambda L, x, y, z: L.clip(x, y, z)),  # lo > hi in places: the result is hi there
    ("clamp_broadcast", lambda L, x, y, z: x.clamp(y[:, :1] - 1, z[0] + 1)),
    ("clamp_", lambda L, x, y, z: (x * 1).clamp_(y, z + 1)),
    ("clamp_min_", lambda L, x, y, z: (x * 1).clamp_min_(y)),
    ("clamp_max_", lambda L, x, y, z: (x * 1).clamp_max_(z)),
]


@pytest.mark.parametrize("requires", [(1, 1, 1), (0, 1, 0), (0, 0, 1), (1, 0, 0)], ids=["all", "t1", "t2", "self"])
@pytest.mark.parametrize("name,fn", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_lerp_addcmul_addcdiv_nodes_as_torch(device, name, fn, requires):
    """Values, node names and gradients of whichever inputs require grad; in place, an operand alone requiring
    grad records the write too (x.addcmul_(t1, t2) with only t1 requiring grad had given t1 no gradient)."""
    rng = np.random.default_rng(15)
    arrays = [rng.standard_normal((3, 4)) for _ in range(3)]
    w = rng.standard_normal((3, 4))
    found = []
    for L in (vkt, torch):
        ts = [torch.tensor(a, requires_grad=bool(r)) if L is torch else
              vkt.tensor(a, device=device, requires_grad=bool(r)) for a, r in zip(arrays, requires)]
        y = fn(L, *ts)
        if y.requires_grad:  # not where only an unused operand requires grad (lerp's with a number weight)
            y.backward(torch.tensor(w) if L is torch else vkt.tensor(w, device=device))
        found.append((y.grad_fn.name().split("::")[-1] if y.grad_fn else None,
                      np.asarray(y.detach().cpu() if L is vkt else y.detach()),
                      [None if t.grad is None else np.asarray(t.grad.cpu() if L is vkt else t.grad) for t in ts]))
    assert found[0][0] == found[1][0]
    np.testing.assert_allclose(found[0][1], found[1][1], rtol=1e-12, atol=1e-12)
    for v, t in zip(found[0][2], found[1][2]):
        assert (v is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(v, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,fn", [c for c in COMPOSITES if not c[0].endswith("_")],
                         ids=[c[0] for c in COMPOSITES if not c[0].endswith("_")])
def test_lerp_addcmul_addcdiv_second_derivatives(device, name, fn):
    rng = np.random.default_rng(16)
    inputs = [vkt.tensor(rng.standard_normal((3, 4)), device=device, requires_grad=True) for _ in range(3)]
    f = lambda x, y, z: fn(vkt, x, y, z)  # noqa: E731
    assert vkt.autograd.gradcheck(f, tuple(inputs))
    assert vkt.autograd.gradgradcheck(f, tuple(inputs))


CLAMP_TIES = [  # x at a bound, bounds equal, and lo > hi: each gradient goes where PyTorch's formulas send it
    ("clamp", lambda L, x, lo, hi: L.clamp(x, lo, hi)),
    ("clamp_min_kw", lambda L, x, lo, hi: L.clamp(x, min=lo)),
    ("clamp_max_kw", lambda L, x, lo, hi: x.clamp(max=hi)),
    ("clamp_min", lambda L, x, lo, hi: x.clamp_min(lo)),
    ("clamp_max", lambda L, x, lo, hi: L.clamp_max(x, hi)),
    ("clamp_", lambda L, x, lo, hi: (x * 1).clamp_(lo, hi)),
]


@pytest.mark.parametrize("name,fn", CLAMP_TIES, ids=[c[0] for c in CLAMP_TIES])
def test_clamp_with_tensor_bounds_at_ties_as_torch(device, name, fn):
    x = [-1.0, 0.5, 2.0, 0.0, 1.0, 0.3, 0.7, 0.7]
    lo = [0.0, 0.5, 0.0, 0.0, 0.0, 0.6, 0.7, 0.9]
    hi = [1.0, 1.0, 1.0, 0.0, 1.0, 0.4, 0.7, 0.7]
    found = []
    for L in (vkt, torch):
        ts = [leaf(L, np.array(a), device) for a in (x, lo, hi)]
        y = fn(L, *ts)
        y.backward(leaf(L, np.arange(1.0, 9.0), device).detach())
        found.append((y.grad_fn.name(), len(y.grad_fn.next_functions), y.detach().cpu().numpy().tolist() if L is vkt
                      else y.detach().numpy().tolist(), [None if t.grad is None else t.grad.cpu().numpy().tolist()
                                                         if L is vkt else t.grad.numpy().tolist() for t in ts]))
    assert found[0] == found[1]


def test_a_view_of_a_tensor_without_grad_stays_plain_without_one(device):
    buf = vkt.zeros(2, 5, device=device)
    v = buf[:, 1:]
    v.mul_(2)
    buf.add_(1)
    assert not v.requires_grad and v.grad_fn is None and buf.grad_fn is None
    i = vkt.arange(6, device=device)
    j = i[2:]
    j.add_(1)
    assert not j.requires_grad
    np.testing.assert_array_equal(i.cpu().numpy(), [0, 1, 3, 4, 5, 6])


def test_views_without_grad_that_pytorch_refuses_to_write(device):
    for L in (vkt, torch):
        w = leaf(L, np.ones(2, np.float32), device)
        new = (lambda: L.zeros(6)) if L is torch else (lambda: L.zeros(6, device=device))
        with L.no_grad():
            v = new()[1:3]
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with "
                                               "grad mode enabled. Given that this use case is ambiguous"):
            v.copy_(w)
        v.mul_(2)  # a write that records nothing is allowed
        with L.no_grad():
            pieces = new().split(2)
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode .* Given that this use case"):
            pieces[1].copy_(w)
        pieces = new().split(2)  # several views at once of a tensor without grad, in grad mode
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with "
                                               "grad mode enabled. This view is the output of a function that "
                                               "returns multiple views"):
            pieces[1].copy_(w)
        pieces[1].add_(1)


# ---- a view made in no_grad mode or by split/chunk/unbind (or a view of one) whose base is written since: where
# the base has a history, PyTorch refuses to read the view's from then on; vkt had given it the base's, silently

def _base_and_view(L, device, w, made):
    """(base, view, w): base = [5, 6, 7, 8] (times w where made says "times_w"), the view made as `made` says."""
    b = (L.tensor([5.0, 6, 7, 8]) if L is torch else L.tensor([5.0, 6, 7, 8], device=device))
    if made.startswith("times_w"):
        b = b * w
    if made.endswith("no_grad"):
        with L.no_grad():
            v = b[:2]
    elif made.endswith("view_of_no_grad"):
        with L.no_grad():
            v0 = b[:3]
        v = v0[:2]
    elif made.endswith("split"):
        v = b.split(2)[0]
    elif made.endswith("split_no_grad"):
        with L.no_grad():
            v = b.split(2)[0]
    else:  # "..._slice_of_unbind"
        v = b.view(2, 2).unbind(0)[0][:1]
    return b, v


def _in_no_grad(L, fn):
    with L.no_grad():
        return fn()


REBASED = [  # (name, how the view is made, the write that follows)
    ("copy_into_plain_base", "no_grad", lambda L, b, w: b.copy_(w * 2)),
    ("mul_into_plain_base", "no_grad", lambda L, b, w: b.mul_(w)),
    ("through_a_sibling_view", "no_grad", lambda L, b, w: b[2:].mul_(w[2:])),
    ("no_grad_write_to_a_base_with_history", "times_w_no_grad", lambda L, b, w: _in_no_grad(L, lambda: b.add_(1))),
    ("write_to_a_base_with_history", "times_w_no_grad", lambda L, b, w: b.add_(1)),
    ("view_of_a_no_grad_view", "times_w_view_of_no_grad", lambda L, b, w: b.add_(1)),
    ("split_output", "times_w_split", lambda L, b, w: b.add_(1)),
    ("split_in_no_grad", "split_no_grad", lambda L, b, w: b.mul_(w)),
    ("split_of_a_plain_base", "split", lambda L, b, w: b.mul_(w)),
    ("slice_of_an_unbind_output", "times_w_slice_of_unbind", lambda L, b, w: b.add_(1)),
]


REBASED_USES = [  # what reads the view's history raises; what does not (requires_grad, detach, no_grad) works
    ("grad_fn", lambda L, v, w: v.grad_fn),
    ("is_leaf", lambda L, v, w: v.is_leaf),
    ("requires_grad", lambda L, v, w: v.requires_grad),
    ("mul", lambda L, v, w: v * 2),
    ("mul_tensor", lambda L, v, w: v * w[:2]),
    ("clone", lambda L, v, w: v.clone()),
    ("slice", lambda L, v, w: v[:1]),
    ("cat", lambda L, v, w: L.cat([v, w])),
    ("detach", lambda L, v, w: v.detach() * 2),
    ("in_place", lambda L, v, w: v.add_(1)),
    ("backward_through_sum", lambda L, v, w: v.sum().backward()),
    ("backward_from_it", lambda L, v, w: v.backward(L.ones_like(v))),
    ("autograd_grad_to_it", lambda L, v, w: L.autograd.grad(w.sum(), v)),
    ("register_hook", lambda L, v, w: v.register_hook(lambda g: g) and None),
    ("retain_grad", lambda L, v, w: v.retain_grad()),
    ("mul_in_no_grad", lambda L, v, w: _in_no_grad(L, lambda: v * 2)),
    ("grad_fn_in_no_grad", lambda L, v, w: _in_no_grad(L, lambda: v.grad_fn)),
    ("repr", lambda L, v, w: repr(v).split("grad_fn=")[-1].split(")")[0]),
]


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001: the type and words are what is compared
        return type(e).__name__, str(e)
    if hasattr(r, "next_functions"):
        return "node", r.name()
    return "value", r if isinstance(r, (bool, str)) or r is None else type(r).__name__.replace("vkt.", "")


@pytest.mark.parametrize("use,fn", REBASED_USES, ids=[u[0] for u in REBASED_USES])
@pytest.mark.parametrize("name,made,write", REBASED, ids=[c[0] for c in REBASED])
def test_a_special_view_whose_base_took_a_history_raises_as_in_pytorch(device, name, made, write, use, fn):
    found = []
    for L in (vkt, torch):
        w = leaf(L, np.array([1.0, 2, 3, 4]), device)
        b, v = _base_and_view(L, device, w, made)
        write(L, b, w)
        found.append(_outcome(lambda: fn(L, v, w)))
    assert found[0] == found[1]


def test_an_op_refused_for_a_special_view_leaves_its_output_unwritten(device):
    """x.add_(v) with v refused raises before the write, as PyTorch's records (and refuses) before it runs."""
    for L in (vkt, torch):
        w = leaf(L, np.array([1.0, 2, 3, 4]), device)
        b, v = _base_and_view(L, device, w, "no_grad")
        b.mul_(w)
        y = w[:2] * 1
        for write in (lambda: y.add_(v), lambda: y.copy_(v), lambda: y.__setitem__(0, v[1])):
            with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base or another view "
                                                   "of its base has been modified inplace with grad mode enabled"):
                write()
        np.testing.assert_array_equal(y.detach().cpu().numpy() if L is vkt else y.detach().numpy(), [1, 2])


def test_detach_in_place_keeps_the_views_of_the_tensor(device):
    for L in (vkt, torch):
        w = leaf(L, np.ones(4, np.float32), device)
        y = w * 2
        v = y[1:3]
        y.detach_()
        assert y.is_leaf and not y.requires_grad and y.grad_fn is None
        y.copy_(w * 3)  # the base takes a new history, which its view follows
        v.sum().backward()
        np.testing.assert_allclose(w.grad.cpu().numpy() if L is vkt else w.grad.numpy(), [0, 3, 3, 0])


def test_repr_shows_requires_grad_and_grad_fn(device):
    x = vkt.ones(2, requires_grad=True, device=device)
    suffix = "" if device == "cpu" else f", device='{x.device}'"
    assert repr(x) == f"tensor([1., 1.]{suffix}, requires_grad=True)"
    assert repr(x * 2) == f"tensor([2., 2.]{suffix}, grad_fn=<MulBackward0>)"
    assert repr(x.sum()) == f"tensor(2.{suffix}, grad_fn=<SumBackward0>)"
    assert repr(x.detach()) == f"tensor([1., 1.]{suffix})"
    assert repr(vkt.nn.Parameter(vkt.zeros(1))) == repr(torch.nn.Parameter(torch.zeros(1)))


def _written(L, device, dtype="float32"):
    a = L.ones(4, dtype=getattr(L, dtype), device=device, requires_grad=True)
    return a, a * 1


# A saved tensor written since its save: torch names the tensor's creator (the node itself for its own output, else
# the tensor's grad_fn now, none for a leaf) without "Backward0", and ends with its anomaly-detection hint.
MODIFIED_CASES = [
    ("exp_output", lambda L, d: (lambda x: (x.exp(),))(_written(L, d)[1])),
    ("mul_input", lambda L, d: (lambda x: (x * x, x.add_(1)))(_written(L, d)[1])),
    ("plain_operand", lambda L, d: (lambda b: (_written(L, d)[1] * b, b.add_(1)))(L.ones(4, device=d))),
    ("view_base_written", lambda L, d: (lambda x: (lambda v: (v * v, x.add_(1)))(x[:2]))(_written(L, d)[1])),
    ("view_written", lambda L, d: (lambda v: (v * v, v.add_(1)))(_written(L, d)[1][:2])),
    ("float64_twice", lambda L, d: (lambda y: (y, y.add_(1), y.add_(1)))(_written(L, d, "float64")[1].exp())),
    ("float16_sigmoid", lambda L, d: (lambda y: (y, y.mul_(2)))(_written(L, d, "float16")[1].sigmoid())),
    ("matmul", lambda L, d: (lambda x: (x @ x, x.add_(1)))(L.ones(3, 3, device=d, requires_grad=True) * 1)),
]


@pytest.mark.parametrize("anomaly", [False, True])
@pytest.mark.parametrize("name,make", MODIFIED_CASES, ids=[c[0] for c in MODIFIED_CASES])
def test_saved_tensor_modified_message_as_torch(device, name, make, anomaly):
    found = []
    for L, d in ((vkt, device), (torch, "cpu")):
        with L.autograd.set_detect_anomaly(anomaly), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # anomaly mode's warnings with the forward trace
            y = make(L, d)[0]
            if name == "exp_output":
                y.add_(1)
            found.append(raised(lambda: y.sum().backward()))
    assert found[0] == found[1]


BROADCAST_INTO = [  # in-place ops whose result would broadcast past the tensor written to
    ("mul_", lambda L, y, o: y.mul_(o)),
    ("add_", lambda L, y, o: y.add_(o, alpha=2)),
    ("clamp_", lambda L, y, o: y.clamp_(min=o)),
    ("lerp_", lambda L, y, o: y.lerp_(o, 0.5)),
    ("masked_fill_", lambda L, y, o: y.masked_fill_(o > 0, 1.0)),
    ("copysign_", lambda L, y, o: y.copysign_(o)),
]


@pytest.mark.parametrize("name,op", BROADCAST_INTO, ids=[c[0] for c in BROADCAST_INTO])
def test_recorded_inplace_refuses_a_broadcast_result(device, name, op):
    """A recorded in-place op checks its result's shape as an unrecorded one does: PyTorch's error, and the tensor
    keeps its value and history."""
    for L in (vkt, torch):
        x = leaf(L, np.arange(6.0), device if L is vkt else "cpu")
        y = x * 1
        other = L.ones(2, 6, dtype=L.float64) if L is torch else vkt.ones(2, 6, dtype=vkt.float64, device=device)
        got = raised(lambda: op(L, y, other))
        if L is vkt:
            mine = got
            assert y.grad_fn.name() == "MulBackward0"
            np.testing.assert_array_equal(y.detach().cpu().numpy(), np.arange(6.0))
    assert mine == got, (mine, got)
