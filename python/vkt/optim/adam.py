"""Adam (and, with decoupled_weight_decay, AdamW), as torch.optim.Adam: amsgrad, maximize, weight decay;
the bias corrections are computed on the host from each parameter's step count and passed to one fused
kernel per parameter."""
from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer, _check_fused_foreach, _check_lr, _scalar, _step_tensor

__all__ = ["Adam"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= _scalar(betas[0]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= _scalar(betas[1]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], _C.Tensor) and isinstance(betas[1], _C.Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        betas = tuple(map(_scalar, betas))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        _check_fused_foreach(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)

    def _state_of(self, p, amsgrad):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0)
            state["exp_avg"] = self._new_state(p)
            state["exp_avg_sq"] = self._new_state(p)
            if amsgrad:
                state["max_exp_avg_sq"] = self._new_state(p)
        return state

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            amsgrad = group["amsgrad"]
            hyper = dict(lr=_scalar(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                         weight_decay=_scalar(group["weight_decay"]), amsgrad=amsgrad, maximize=group["maximize"],
                         decoupled=group["decoupled_weight_decay"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p, amsgrad)
                tensors = (state["exp_avg"], state["exp_avg_sq"]) + ((state["max_exp_avg_sq"],) if amsgrad else ())
                _C._optimizer_step_("adam", p, p.grad, tensors, step=self._next_step(state), **hyper)
        return loss
