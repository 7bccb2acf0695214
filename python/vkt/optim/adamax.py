"""Adamax (Adam with an infinity norm), as torch.optim.Adamax: weight decay, maximize; each step is vkt ops
in the order of torch's _single_tensor_adamax."""
from ..autograd import no_grad
from ._stepwise import _StepwiseOptimizer, _check_adam_args, _check_differentiable, _grad
from .optimizer import _scalar

__all__ = ["Adamax"]


class Adamax(_StepwiseOptimizer):
    _buffers = ("exp_avg", "exp_inf")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = _scalar(group["lr"]), group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p)
                step = self._next_step(state)
                grad = _grad(p, group["maximize"], group["weight_decay"])
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_inf.mul_(beta2).maximum_(grad.abs().add_(eps))
                p.addcdiv_(exp_avg, exp_inf, value=-lr / (1 - beta1 ** step))
        return loss
