"""Adadelta, as torch.optim.Adadelta: rho, eps, weight decay, maximize; each step is vkt ops in the order of
torch's _single_tensor_adadelta."""
from ..autograd import no_grad
from ._stepwise import _StepwiseOptimizer, _check_differentiable, _grad
from .optimizer import _check_lr, _scalar

__all__ = ["Adadelta"]


class Adadelta(_StepwiseOptimizer):
    _buffers = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, rho, eps = _scalar(group["lr"]), group["rho"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p)
                self._next_step(state)
                grad = _grad(p, group["maximize"], group["weight_decay"])
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
