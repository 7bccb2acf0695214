"""Adagrad, as torch.optim.Adagrad: lr_decay, weight decay, initial_accumulator_value, eps, maximize; its
state is made for every parameter at construction, as torch's is."""
from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer, _check_fused_foreach, _check_lr, _scalar, _step_tensor

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        _check_fused_foreach(defaults)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor(0)
                init = group["initial_accumulator_value"]
                state["sum"] = self._new_state(p, float(init))

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            hyper = dict(lr=_scalar(group["lr"]), lr_decay=group["lr_decay"], eps=group["eps"],
                         weight_decay=_scalar(group["weight_decay"]), maximize=group["maximize"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                _C._optimizer_step_("adagrad", p, p.grad, (state["sum"],), step=self._next_step(state), **hyper)
        return loss
