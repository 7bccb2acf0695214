"""Shared by the optimizers whose step is written as several vkt ops per parameter (Adamax, NAdam, RAdam,
Adadelta, Rprop, ASGD), following torch's _single_tensor_* functions op for op, rather than as one fused kernel."""
from .. import _C

__all__ = []


def _check_differentiable(defaults):
    """differentiable=True asks for a step autograd can see through; these steps run under no_grad."""
    if defaults.get("differentiable"):
        raise RuntimeError("vkt.optim: differentiable=True is not supported (the step runs under no_grad)")


def _grad(p, maximize, weight_decay):
    """p's gradient as torch's single-tensor steps take it: negated for maximize, then plus weight_decay * p
    (a new tensor then; p.grad itself is never changed)."""
    grad = -p.grad if maximize else p.grad
    if weight_decay != 0:
        grad = grad.add(p, alpha=weight_decay)
    return grad


def _host_scalar(param, value):
    """A loaded 0-d state tensor that the step reads as a number every time (NAdam's mu_product, ASGD's eta and
    mu): kept on the cpu, as torch creates it, so reading it never waits for the device; param's dtype, as
    torch's load casts it."""
    dtype = param.dtype if param.is_floating_point() else value.dtype
    return value.to(dtype=dtype, device="cpu").clone()


def _scalar_state(value):
    """A host 0-d float32 state tensor from a number (the form of a state dict saved before torch 1.12)."""
    return value if isinstance(value, _C.Tensor) else _C.tensor(float(value))
