"""NAdam (Adam with Nesterov momentum), as torch.optim.NAdam: momentum_decay, weight decay (L2 or decoupled),
maximize; each step is vkt ops in the order of torch's _single_tensor_nadam. state['mu_product'] is a 0-d
float32 tensor (float64 under a float64 default dtype) on the cpu, beside 'step', as torch keeps it."""
from ..autograd import no_grad
from ._stepwise import _check_adam_args, _check_differentiable, _grad, _host_scalar, _scalar_state
from .optimizer import Optimizer, _scalar, _step_tensor

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                if "mu_product" in p_state:
                    p_state["mu_product"] = _scalar_state(p_state["mu_product"])

    @staticmethod
    def _cast_state(param, value, key):
        if key == "mu_product":
            return _host_scalar(param, value)
        return Optimizer._cast_state(param, value, key)

    def _state_of(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0)
            state["mu_product"] = _step_tensor(1)
            state["exp_avg"] = self._new_state(p)
            state["exp_avg_sq"] = self._new_state(p)
        return state

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = _scalar(group["lr"]), group["eps"], group["weight_decay"]
            decoupled, momentum_decay = group["decoupled_weight_decay"], group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p)
                step = self._next_step(state)
                bias_correction2 = 1 - beta2 ** step
                grad = _grad(p, group["maximize"], 0 if decoupled else weight_decay)
                if decoupled and weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                # the momentum cache mu_t and mu_{t+1}; mu_product is multiplied in its own dtype, as torch's is
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product = state["mu_product"].mul_(mu).item()
                mu_product_next = mu_product * mu_next
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
        return loss
