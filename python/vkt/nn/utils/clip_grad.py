"""Gradient clipping, on the gradients' device: the total norm stays a tensor and scales the gradients
through a clamped factor, so clipping never waits for the device (unless error_if_nonfinite asks)."""
from ... import _C
from ...autograd import no_grad
from ...linalg import vector_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients of parameters so the norm_type-norm of all of them together is at most
    max_norm; returns that total norm (before clipping) as a 0-d tensor."""
    del foreach  # vkt records one small kernel per gradient either way
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return _C.tensor(0.0)
    device = grads[0].device
    norms = [vector_norm(g, norm_type).to(device) for g in grads]
    total = vector_norm(_C.stack(norms), norm_type)
    if error_if_nonfinite and not bool(_C.isfinite(total).item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    factor = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(factor.to(g.device, g.dtype))
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient of parameters to [-clip_value, clip_value] in place."""
    del foreach
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)
