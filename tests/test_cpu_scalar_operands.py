# A 0-d cpu tensor as an operand of an elementwise op on another device, as PyTorch's TensorIterator allows it
# (allow_cpu_scalars: `torch.tensor(2.0) * x_cuda` runs on the GPU and the scalar's gradient comes back to the cpu),
# and the cases PyTorch refuses. torch here is the CPU build: results, dtypes and gradients are held to the same
# computation all on the cpu in torch, and the device rule and its messages to torch's own TensorIterator
# (torch._tensor_iterator, with the meta device standing in for an accelerator: its "meta" is vkt's "vulkan:0").
import numpy as np
import pytest

import vkt
from conftest import assert_close, to_numpy

torch = pytest.importorskip("torch")
ti = pytest.importorskip("torch._tensor_iterator")

X = np.array([[0.5, -1.25, 2.0], [3.0, 0.75, -0.5]])
Y = np.array([[1.5, 0.25, -2.0], [0.5, 2.5, 1.0]])


def dims(m, device, dtype="float32", values=X):
    return m.tensor(values.astype(dtype), device=device)


def scalar(m, value=2.0, dtype="float32"):
    return m.tensor(value, dtype=getattr(m, dtype))


# (name, f(m, c, x, y)): c is the 0-d cpu tensor, x and y tensors on the device; every row is allowed by PyTorch.
ALLOWED = [
    ("mul", lambda m, c, x, y: c * x),
    ("mul_right", lambda m, c, x, y: x * c),
    ("add_alpha", lambda m, c, x, y: m.add(x, c, alpha=2.5)),
    ("rsub", lambda m, c, x, y: c - x),
    ("sub", lambda m, c, x, y: x - c),
    ("div", lambda m, c, x, y: x / c),
    ("rdiv", lambda m, c, x, y: c / x),
    ("floor_divide", lambda m, c, x, y: x // c),
    ("pow", lambda m, c, x, y: x.abs() ** c),
    ("rpow", lambda m, c, x, y: c ** x),
    ("maximum", lambda m, c, x, y: m.maximum(x, c)),
    ("minimum", lambda m, c, x, y: m.minimum(c, x)),
    ("remainder", lambda m, c, x, y: m.remainder(x, c)),
    ("fmod", lambda m, c, x, y: m.fmod(c, x)),
    ("atan2", lambda m, c, x, y: m.atan2(x, c)),
    ("copysign", lambda m, c, x, y: m.copysign(c, x)),
    ("logaddexp", lambda m, c, x, y: m.logaddexp(x, c)),
    ("xlogy", lambda m, c, x, y: m.xlogy(c, x.abs())),
    ("xlogy_y", lambda m, c, x, y: m.xlogy(x, c)),
    ("xlog1py", lambda m, c, x, y: m.special.xlog1py(x, c)),
    ("eq", lambda m, c, x, y: m.eq(x * 0 + 2, c)),
    ("lt", lambda m, c, x, y: c < x),
    ("ge", lambda m, c, x, y: x >= c),
    ("logical_and", lambda m, c, x, y: m.logical_and(c, x)),
    ("where_a", lambda m, c, x, y: m.where(x > 0, c, y)),
    ("where_b", lambda m, c, x, y: m.where(x > 0, y, c)),
    ("where_both", lambda m, c, x, y: m.where(x > 0, c, c * 3)),
    ("where_condition", lambda m, c, x, y: m.where(c > 1, x, y)),
    ("clamp_min", lambda m, c, x, y: m.clamp_min(x, c)),
    ("clamp_max", lambda m, c, x, y: x.clamp_max(c)),
    ("lerp_weight", lambda m, c, x, y: m.lerp(x, y, c * 0.125)),
    ("lerp_start", lambda m, c, x, y: m.lerp(c, x, 0.25)),
    ("addcmul", lambda m, c, x, y: m.addcmul(x, c, y, value=0.5)),
    ("addcmul_input", lambda m, c, x, y: m.addcmul(c, x, y)),
    ("isclose", lambda m, c, x, y: m.isclose(x * 0 + 2, c)),
    ("add_", lambda m, c, x, y: x.add_(c)),
    ("mul_", lambda m, c, x, y: x.mul_(c)),
    ("pow_", lambda m, c, x, y: x.abs_().pow_(c)),
    ("clamp_min_", lambda m, c, x, y: x.clamp_min_(c)),
    ("lerp_", lambda m, c, x, y: x.lerp_(y, c * 0.125)),
    ("addcmul_", lambda m, c, x, y: x.addcmul_(c, y)),
    ("gt_", lambda m, c, x, y: x.gt_(c)),
    ("chain", lambda m, c, x, y: ((x - c) * c).relu() + c),
]


@pytest.fixture(params=["fused", "unfused"])
def fusion_mode(request):
    vkt.vulkan.set_fusion(request.param == "fused")
    yield request.param
    vkt.vulkan.set_fusion(True)


@pytest.mark.parametrize("name, f", ALLOWED, ids=[r[0] for r in ALLOWED])
def test_allowed_ops_run_on_the_tensors_device(device, fusion_mode, name, f):
    got = f(vkt, scalar(vkt), dims(vkt, device), dims(vkt, device, values=Y))
    want = f(torch, scalar(torch), dims(torch, "cpu"), dims(torch, "cpu", values=Y))
    assert got.device.type == vkt.device(device).type
    assert str(got.dtype)[4:] == str(want.dtype)[6:]
    assert_close(got, want.numpy(), rtol=1e-6, atol=1e-6)


# (c's dtype, x's dtype): a 0-d tensor takes part in promotion as a scalar of its category, so a float64 0-d tensor
# leaves a float32 tensor float32, and a float 0-d tensor makes an integer tensor float of its own dtype.
PROMOTIONS = [("int64", "float32"), ("float64", "float32"), ("float32", "int32"), ("float64", "int64"),
              ("int64", "int32"), ("int32", "uint8"), ("bool", "int32"), ("float32", "bool"), ("float64", "float16"),
              ("int64", "bool")]
PROMOTION_OPS = [("mul", lambda m, c, x: c * x), ("add_right", lambda m, c, x: x + c),
                 ("maximum", lambda m, c, x: m.maximum(x, c)), ("where", lambda m, c, x: m.where(x > 0, c, x)),
                 ("div", lambda m, c, x: x / c), ("lt", lambda m, c, x: c < x)]


@pytest.mark.parametrize("op, f", PROMOTION_OPS, ids=[r[0] for r in PROMOTION_OPS])
@pytest.mark.parametrize("cdt, xdt", PROMOTIONS, ids=[f"{a}-{b}" for a, b in PROMOTIONS])
def test_promotion_takes_the_0d_tensor_as_a_scalar(device, op, f, cdt, xdt):
    values = np.array([[1, 0, 3], [2, 5, 1]])
    got = f(vkt, scalar(vkt, 1, cdt), dims(vkt, device, xdt, values))
    want = f(torch, scalar(torch, 1, cdt), dims(torch, "cpu", xdt, values))
    assert str(got.dtype)[4:] == str(want.dtype)[6:]
    assert got.device.type == vkt.device(device).type
    assert_close(got, want.numpy(), rtol=1e-3, atol=0)


def torch_iterator_error(build):
    """The message torch's TensorIterator raises for build() over meta tensors, in vkt's device names."""
    with pytest.raises(RuntimeError) as e:
        build()
    return str(e.value).replace("meta", "vulkan:0")


M3, M0, C3, C0 = (torch.ones(3, device="meta"), torch.ones((), device="meta"), torch.ones(3), torch.ones(()))
BINARY = dict(allow_cpu_scalars=True, promote_inputs_to_common_dtype=True)
# (name, f over vkt with v(shape) a vulkan tensor and c(shape) a cpu one, torch's TensorIterator of the same
# operands, or the message itself where PyTorch's check is not its TensorIterator's)
REFUSED = [
    ("vulkan_0d_times_cpu", lambda v, c: v(()) * c((3,)), lambda: ti.binary_op(None, M0, C3)),
    ("cpu_times_vulkan_0d", lambda v, c: c((3,)) * v(()), lambda: ti.binary_op(None, C3, M0)),
    ("cpu_plus_vulkan", lambda v, c: c((3,)) + v((3,)), lambda: ti.binary_op(None, C3, M3)),
    ("vulkan_0d_eq_cpu", lambda v, c: v(()) == c((3,)), lambda: ti.comparison_op(None, M0, C3)),
    ("cpu_0d_add_vulkan_0d_", lambda v, c: c(()).add_(v(())), lambda: ti.binary_op(C0, C0, M0)),
    ("cpu_add_vulkan_0d_", lambda v, c: c((3,)).add_(v(())), lambda: ti.binary_op(C3, C3, M0)),
    ("cpu_mul_vulkan_", lambda v, c: c((3,)).mul_(v((3,))), lambda: ti.binary_op(C3, C3, M3)),
    ("cpu_0d_add_vulkan_0d_recorded_", lambda v, c: (c(()).requires_grad_() * 1).add_(v(())),
     lambda: ti.binary_op(C0, C0, M0)),
    ("addcmul_two_cpu_scalars", lambda v, c: vkt.addcmul(v((3,)), c(()), c(())),
     lambda: ti.TensorIterator(outputs=[None], const_inputs=[M3, C0, C0], **BINARY)),
    ("lerp_two_cpu_scalars", lambda v, c: vkt.lerp(v((3,)), c(()), c(())),
     lambda: ti.TensorIterator(outputs=[None], const_inputs=[M3, C0, C0], **BINARY)),
    ("addcdiv", lambda v, c: vkt.addcdiv(v((3,)), c(()), v((3,))),
     lambda: ti.TensorIterator(outputs=[None], const_inputs=[M3, C0, M3], promote_inputs_to_common_dtype=True)),
    ("where_cpu_condition", lambda v, c: vkt.where(c((3,)) > 0, v(()), c((3,))),
     lambda: ti.TensorIterator(outputs=[M3], const_inputs=[C3 > 0, M0, C3], check_all_same_dtype=False)),
    # clamp.Tensor is checked by torch's dispatcher (libtorch's words; its method name is the backend's wrapper)
    ("clamp_min_tensor", lambda v, c: vkt.clamp(v((3,)), min=c(())),
     "Expected all tensors to be on the same device, but got min is on cpu, different from other tensors on vulkan:0 "
     "(when checking argument in method wrapper_Vulkan_clamp_Tensor)"),
    ("clamp_both_", lambda v, c: v((3,)).clamp_(v(()), c(())),
     "Expected all tensors to be on the same device, but got max is on cpu, different from other tensors on vulkan:0 "
     "(when checking argument in method wrapper_Vulkan_clamp_Tensor)"),
]


@pytest.mark.parametrize("name, f, want", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_as_torch_refuses(dev, name, f, want):
    message = want if isinstance(want, str) else torch_iterator_error(want)

    def v(shape):
        return vkt.ones(shape, device=dev)

    def c(shape):
        return vkt.ones(shape)

    with pytest.raises(RuntimeError) as e:
        f(v, c)
    assert str(e.value) == message


NOT_ELEMENTWISE = [
    ("matmul", lambda v, c: v((3,)) @ c((3,))),
    ("stack", lambda v, c: vkt.stack([v(()), c(())])),
    ("index_select", lambda v, c: v((3,)).index_select(0, c((1,)).long())),
]


@pytest.mark.parametrize("name, f", NOT_ELEMENTWISE, ids=[r[0] for r in NOT_ELEMENTWISE])
def test_other_ops_still_want_one_device(dev, name, f):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        f(lambda shape: vkt.ones(shape, device=dev), lambda shape: vkt.ones(shape))


# (name, f(m, c, x, y)) whose gradients reach the 0-d cpu tensor c and the device tensor x
GRADS = [
    ("mul", lambda m, c, x, y: c * x * y),
    ("add_alpha", lambda m, c, x, y: m.add(x, c, alpha=-1.5) * y),
    ("rsub", lambda m, c, x, y: (c - x) * y),
    ("div", lambda m, c, x, y: x / c + c / (x * x + 1)),
    ("pow", lambda m, c, x, y: (x * x + 0.5) ** c + c ** x),
    ("maximum", lambda m, c, x, y: m.maximum(x, c) + m.minimum(c, y)),
    ("atan2", lambda m, c, x, y: m.atan2(c, x)),
    ("xlogy", lambda m, c, x, y: m.xlogy(c, x * x + 0.5) + m.xlogy(x, c)),
    ("where", lambda m, c, x, y: m.where(x > 0, c * y, x * c)),
    ("clamp_min", lambda m, c, x, y: m.clamp_min(x, c * 0.25) * y),
    ("lerp", lambda m, c, x, y: m.lerp(x, y, c * 0.2)),
    ("addcmul", lambda m, c, x, y: m.addcmul(x, c, y, value=0.5) + m.addcmul(c, x, y)),
    ("inplace", lambda m, c, x, y: (x * 1).mul_(c).add_(c * y)),
    ("c_only_needed", lambda m, c, x, y: (c * x.detach()).exp()),
]


@pytest.mark.parametrize("name, f", GRADS, ids=[r[0] for r in GRADS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_reach_the_cpu_scalar_on_the_cpu(device, name, f, dtype):
    def run(m, dev):
        c = m.tensor(1.25, dtype=getattr(m, dtype), requires_grad=True)
        x = m.tensor(X.astype(dtype), device=dev, requires_grad=True)
        y = m.tensor(Y.astype(dtype), device=dev)
        out = f(m, c, x, y)
        out.backward(m.tensor(Y.astype(dtype) * 0.5 + 1, device=dev))
        return c, x, out

    c, x, out = run(vkt, device)
    tc, tx, tout = run(torch, "cpu")
    rtol = 1e-5 if dtype == "float32" else 1e-12
    assert out.device.type == vkt.device(device).type and out.grad_fn.name() == tout.grad_fn.name()
    assert c.grad.device.type == "cpu" and c.grad.shape == () and str(c.grad.dtype)[4:] == str(tc.grad.dtype)[6:]
    assert_close(c.grad, tc.grad.numpy(), rtol=rtol, atol=1e-6)
    if tx.grad is None:
        assert x.grad is None
    else:
        assert x.grad.device.type == vkt.device(device).type
        assert_close(x.grad, tx.grad.numpy(), rtol=rtol, atol=1e-6)


def test_cpu_scalars_are_numbers_in_one_fused_kernel(fusion):
    """Their values go into the op as numbers, as Python numbers do: no upload, no fill, one kernel for the chain."""
    x = vkt.ones(1000, device=fusion)
    vkt.vulkan.synchronize()
    vkt.vulkan.reset_kernel_stats()
    y = vkt.where(x * vkt.tensor(3.0) + vkt.tensor(1) > 0, x, vkt.tensor(0.5))
    vkt.vulkan.synchronize()
    s = vkt.vulkan.kernel_stats()
    assert s["dispatches"] == 1 and s["fused_kernels"] == [("mul add gt where", 1)]
    assert_close(y, np.ones(1000), 0, 0)


def test_second_derivative_through_a_cpu_scalar(dev):
    c = vkt.tensor(1.5, dtype=vkt.float64, requires_grad=True)
    x = vkt.tensor(X, device=dev, requires_grad=True)
    (g,) = vkt.autograd.grad((c * x * x * c).sum(), c, create_graph=True)
    (h,) = vkt.autograd.grad(g, c)
    assert g.device.type == "cpu" and h.device.type == "cpu"
    assert_close(h, np.array(2 * (X * X).sum()), rtol=1e-12, atol=0)
    assert to_numpy(g) == pytest.approx(2 * 1.5 * (X * X).sum())
