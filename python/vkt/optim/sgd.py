"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize, as torch.optim.SGD; each
parameter's step is one fused kernel."""
from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer, _check_fused_foreach, _check_lr, _scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_fused_foreach(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            momentum = group["momentum"]
            hyper = dict(lr=_scalar(group["lr"]), weight_decay=_scalar(group["weight_decay"]), momentum=momentum,
                         dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = None
                if momentum != 0:  # without momentum SGD keeps no state, not even an empty entry
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                first = momentum != 0 and buf is None
                if first:
                    buf = state["momentum_buffer"] = self._new_state(p, None)
                _C._optimizer_step_("sgd", p, p.grad, () if buf is None else (buf,), first=first, **hyper)
        return loss
