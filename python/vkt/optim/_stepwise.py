"""Shared by the optimizers whose step is written as several vkt ops per parameter (Adamax, NAdam, RAdam,
Adadelta, Rprop, ASGD), following torch's _single_tensor_* functions op for op, rather than as one fused kernel."""
from .. import _C
from .optimizer import Optimizer, _check_lr, _step_tensor

__all__ = []


def _check_differentiable(defaults):
    """differentiable=True asks for a step autograd can see through; these steps run under no_grad."""
    if defaults.get("differentiable"):
        raise RuntimeError("vkt.optim: differentiable=True is not supported (the step runs under no_grad)")


def _check_adam_args(lr, betas, eps, weight_decay):
    """The checks torch's Adam family (Adamax, NAdam, RAdam) makes of its common arguments, with its messages."""
    _check_lr(lr)
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _grad(p, maximize, weight_decay):
    """p's gradient as torch's single-tensor steps take it: negated for maximize, then plus weight_decay * p
    (a new tensor then; p.grad itself is never changed)."""
    grad = -p.grad if maximize else p.grad
    if weight_decay != 0:
        grad = grad.add(p, alpha=weight_decay)
    return grad


def _host_scalar(param, value):
    """A loaded 0-d state tensor that the step reads as a number every time (NAdam's mu_product, ASGD's eta and
    mu): kept on the cpu, as torch creates it, so reading it never waits for the device; param's dtype, as
    torch's load casts it."""
    dtype = param.dtype if param.is_floating_point() else value.dtype
    return value.to(dtype=dtype, device="cpu").clone()


def _scalar_state(value):
    """A host 0-d state tensor from a number (the form of a state dict saved before torch 1.12)."""
    return value if isinstance(value, _C.Tensor) else _step_tensor(value)


class _StepwiseOptimizer(Optimizer):
    """Their common ground: a group loaded from an older state dict gets the flags torch's __setstate__ gives it
    (_flags), and a parameter's state starts as step 0 and the zero buffers named in _buffers."""
    _flags = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _buffers = ()

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in self._flags.items():
                group.setdefault(key, value)

    def _state_of(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor(0)
            for name in self._buffers:
                state[name] = self._new_state(p)
        return state
