"""Adamax (Adam with an infinity norm), as torch.optim.Adamax: weight decay, maximize; each step is vkt ops
in the order of torch's _single_tensor_adamax."""
from .. import _C
from ..autograd import no_grad
from ._stepwise import _check_differentiable, _grad
from .optimizer import Optimizer, _check_lr, _scalar

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _state_of(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["exp_avg"] = self._new_state(p)
            state["exp_inf"] = self._new_state(p)
        return state

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
