"""Adafactor, as torch.optim.Adafactor (torch 2.5+): a second moment factored into row and column means over the last
two dims of each matrix (a full one for vectors), relative step sizes, update clipping, decoupled weight decay and
maximize; each step is vkt ops in the order of torch's _single_tensor_adafactor."""
import numpy as np

from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer, _scalar, _step_tensor

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor(params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *, foreach=None,
    maximize=False). eps[0] None is the first parameter's dtype's machine epsilon; foreach changes nothing."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *, foreach=None,
                 maximize=False):
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], _C.Tensor):
                    p_state["step"] = _step_tensor(p_state["step"])

    def _state_of(self, p):
        """p's state, made at its first step: step, and row_var and col_var (the grad's shape with the last or the
        second-to-last dim 1) for a matrix or more, variance (the grad's shape) for a vector or scalar."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0)
            grad = p.grad
            if grad.dim() > 1:
                row_shape, col_shape = list(grad.shape), list(grad.shape)
                row_shape[-1], col_shape[-2] = 1, 1
                state["row_var"] = grad.new_zeros(row_shape)
                state["col_var"] = grad.new_zeros(col_shape)
            else:
                state["variance"] = _C.zeros_like(grad)
        return state

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            lr, d = _scalar(group["lr"]), group["d"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p)
                grad = -p.grad if group["maximize"] else p.grad
                if eps1 is None:  # as torch: set by the group's first parameter, then kept for the rest
                    eps1 = float(np.finfo(p.dtype.numpy_name).eps)
                step = self._next_step(state)
                one_minus_beta2_t = step ** group["beta2_decay"]
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if group["weight_decay"] != 0:
                    p.mul_(1 - lr * group["weight_decay"])
                update = _variance_estimate(state, grad, one_minus_beta2_t, eps1)
                update = update.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)  # eps1 squared: a sqrt follows
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss


def _variance_estimate(state, grad, one_minus_beta2_t, eps1):
    """The running second moment, updated with this grad, as a new tensor of the grad's shape: the outer product
    of the row and column means over the mean of the rows (clamped to eps1) for a matrix, the variance itself
    for a vector."""
    if grad.dim() > 1:
        row_var, col_var = state["row_var"], state["col_var"]
        row_var.lerp_(grad.norm(2, dim=-1, keepdim=True).square_().div_(grad.shape[-1]), one_minus_beta2_t)
        col_var.lerp_(grad.norm(2, dim=-2, keepdim=True).square_().div_(grad.shape[-2]), one_minus_beta2_t)
        return (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    variance = state["variance"]
    variance.lerp_(grad * grad, one_minus_beta2_t)
    return variance.clone()
