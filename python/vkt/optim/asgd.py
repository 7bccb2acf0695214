"""ASGD (averaged SGD), as torch.optim.ASGD: lambd, alpha, t0, weight decay, maximize; each step is vkt ops in
the order of torch's _single_tensor_asgd. The running average is state['ax']; the 0-d state tensors 'step',
'eta' and 'mu' are float32 (float64 under a float64 default dtype) on the cpu (torch puts them on the
parameter's device) since the step reads them as numbers every time."""
from .. import _C
from ..autograd import no_grad
from ._stepwise import _check_differentiable, _grad, _host_scalar, _scalar_state
from .optimizer import Optimizer, _check_lr, _scalar, _step_tensor

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                for key in ("eta", "mu"):
                    if key in p_state:
                        p_state[key] = _scalar_state(p_state[key])

    @staticmethod
    def _cast_state(param, value, key):
        if key in ("eta", "mu"):
            return _host_scalar(param, value)
        return Optimizer._cast_state(param, value, key)

    def _state_of(self, p, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0)
            state["eta"] = _step_tensor(_scalar(group["lr"]))
            state["mu"] = _step_tensor(1)
            state["ax"] = self._new_state(p)
        return state

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = _scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p, group)
                step = self._next_step(state)
                grad = _grad(p, group["maximize"], group["weight_decay"])
                eta, mu, ax = state["eta"], state["mu"], state["ax"]
                eta_value = eta.item()
                p.mul_(1 - lambd * eta_value)  # decay term
                p.add_(grad, alpha=-eta_value)
                mu_value = mu.item()
                if mu_value != 1:
                    ax.add_(p.sub(ax).mul_(mu_value))
                else:
                    ax.copy_(p)
                # torch makes each new value a tensor of the default dtype before copying it in: rounded to it first
                eta.copy_(_C.tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                mu.copy_(_C.tensor(1 / max(1, step - t0)))
        return loss
