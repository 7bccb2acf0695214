"""A module's full backward hooks: identity autograd Functions around its inputs and outputs catch the
gradients leaving the module's outputs (grad_output) and arriving at its inputs (grad_input), as torch's
torch.utils.hooks.BackwardHook does, and hand them to the hooks."""
import warnings

from ... import _C
from ...autograd import Function


def _is_float_tensor(x):
    return isinstance(x, _C.Tensor) and x.dtype.is_floating_point


class _Call:
    """One call's state: its module, the grad_output seen so far, how many inputs the hooks report and
    whether any of them needs a gradient."""

    def __init__(self, module, n_inputs, any_input_grad):
        self.module, self.n_inputs, self.any_input_grad = module, n_inputs, any_input_grad
        self.grad_output = None

    def run_pre_hooks(self, grads):
        for hook in list(self.module._backward_pre_hooks.values()):
            result = hook(self.module, grads)
            if result is not None:
                grads = _checked(result, len(grads), "grad_output")
        self.grad_output = grads
        return grads

    def run_hooks(self, grad_input):
        for hook in list(self.module._backward_hooks.values()):
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = _checked(result, len(grad_input), "grad_input")
        return grad_input


def _checked(result, expected, what):
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != expected:
        raise RuntimeError(f"Backward hook returned an invalid number of {what}, got {len(result)}, but expected "
                           f"{expected}")
    return result


class _HookOutputs(Function):
    @staticmethod
    def forward(ctx, call, *outputs):
        ctx.call = call
        return tuple(o.view_as(o) for o in outputs)

    @staticmethod
    def backward(ctx, *grads):
        grads = ctx.call.run_pre_hooks(grads)
        if not ctx.call.any_input_grad:  # torch warns here even with only pre-hooks
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                          "since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/"
                          "torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=2)
            ctx.call.run_hooks((None,) * ctx.call.n_inputs)  # no input's backward will run to call them
        return (None,) + tuple(grads)


class _HookInputs(Function):
    @staticmethod
    def forward(ctx, call, *inputs):
        ctx.call = call
        return tuple(x.view_as(x) for x in inputs)

    @staticmethod
    def backward(ctx, *grads):
        grads = tuple(g if needed else None for g, needed in zip(grads, ctx.needs_input_grad[1:]))
        return (None,) + tuple(ctx.call.run_hooks(grads))


def _wrap(function, call, items):
    """items with every float tensor replaced by its identity through function (one node for all of them)."""
    at = [i for i, x in enumerate(items) if _is_float_tensor(x)]
    out = list(items)
    for i, y in zip(at, function.apply(call, *(items[i] for i in at))):
        out[i] = y
    return out


def call_with_backward_hooks(module, forward, args, kwargs):
    """forward(*args, **kwargs) with the module's backward hooks attached to its float tensor inputs (the
    positional ones, as torch) and outputs."""
    inputs = [a for a in args if _is_float_tensor(a)]
    call = _Call(module, len(inputs), any(a.requires_grad for a in inputs))
    if call.any_input_grad:
        args = _wrap(_HookInputs, call, args)
    result = forward(*args, **kwargs)
    single = isinstance(result, _C.Tensor)
    outputs = (result,) if single else result
    if not (_C.is_grad_enabled() and isinstance(outputs, tuple) and any(_is_float_tensor(o) for o in outputs)):
        return result
    outputs = _wrap(_HookOutputs, call, outputs)
    return outputs[0] if single else tuple(outputs)
