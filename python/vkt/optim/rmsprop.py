"""RMSprop, as torch.optim.RMSprop: alpha, momentum, centered, weight decay, maximize; one fused kernel per
parameter."""
from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer, _check_fused_foreach, _check_lr, _scalar, _step_tensor

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        _check_fused_foreach(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _state_of(self, p, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0)
            state["square_avg"] = self._new_state(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = self._new_state(p)
            if group["centered"]:
                state["grad_avg"] = self._new_state(p)
        return state

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            momentum, centered = group["momentum"], group["centered"]
            hyper = dict(lr=_scalar(group["lr"]), alpha=group["alpha"], eps=group["eps"], momentum=momentum,
                         weight_decay=_scalar(group["weight_decay"]), centered=centered, maximize=group["maximize"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p, group)
                self._next_step(state)
                tensors = ((state["square_avg"],) + ((state["momentum_buffer"],) if momentum > 0 else ())
                           + ((state["grad_avg"],) if centered else ()))
                _C._optimizer_step_("rmsprop", p, p.grad, tensors, **hyper)
        return loss
