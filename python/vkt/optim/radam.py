"""RAdam (Adam with a rectified adaptive learning rate), as torch.optim.RAdam: weight decay (L2 or decoupled),
maximize; each step is vkt ops in the order of torch's _single_tensor_radam. While the approximated SMA length
rho_t is at most 5 the step is momentum SGD, decided on the host from the step count."""
from ..autograd import no_grad
from ._stepwise import _StepwiseOptimizer, _check_adam_args, _check_differentiable, _grad
from .optimizer import _scalar

__all__ = ["RAdam"]


class RAdam(_StepwiseOptimizer):
    _flags = {**_StepwiseOptimizer._flags, "decoupled_weight_decay": False}
    _buffers = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = _scalar(group["lr"]), group["eps"], group["weight_decay"]
            decoupled = group["decoupled_weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1  # the maximum length of the approximated SMA
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p)
                step = self._next_step(state)
                grad = _grad(p, group["maximize"], 0 if decoupled else weight_decay)
                if decoupled and weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                update = exp_avg / bias_correction1 * lr
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    update = update * adaptive_lr * rect
                p.add_(update, alpha=-1.0)
        return loss
