"""Rprop (resilient backpropagation), as torch.optim.Rprop: etas, step_sizes, maximize; each step is vkt ops in
the order of torch's _single_tensor_rprop. Only the sign of the gradient moves a parameter; state['step_size']
holds each element's own step, started at lr."""
from ..autograd import no_grad
from ._stepwise import _StepwiseOptimizer, _check_differentiable
from .optimizer import _check_lr, _scalar, _step_tensor

__all__ = ["Rprop"]


class Rprop(_StepwiseOptimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def _state_of(self, p, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0)
            state["prev"] = self._new_state(p)
            state["step_size"] = self._new_state(p, float(_scalar(group["lr"])))
        return state

    @no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; returns closure() when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p, group)
                self._next_step(state)
                grad = -p.grad if group["maximize"] else p.grad
                prev, step_size = state["prev"], state["step_size"]
                # torch overwrites sign in place, one mask after another; these masks, all taken from the signs
                # before any is written, pick the same elements
                sign = grad.mul(prev).sign()
                grew, flipped, flat = sign.gt(0), sign.lt(0), sign.eq(0)
                sign.masked_fill_(grew, etaplus).masked_fill_(flipped, etaminus).masked_fill_(flat, 1)
                step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                grad = grad.masked_fill(flipped, 0)  # where the sign flipped, no move and no memory of it
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
