"""vkt.utils.checkpoint: activation checkpointing, as torch.utils.checkpoint names it.

checkpoint(fn, *args) keeps none of what fn's backward needs: backward runs fn again (with the random stream as
the forward had it, so dropout draws the same mask) and backpropagates through that. A model then holds the
activations of one segment at a time instead of all of them, for one more forward pass.

Both of PyTorch's variants are here. use_reentrant=True runs fn under no_grad and, in backward, runs backward()
on the recomputed outputs, which adds into the .grad of the parameters fn reads directly (so it refuses
autograd.grad and backward(inputs=...), as PyTorch's does). use_reentrant=False records fn's graph once to learn
which leaves (parameters) it reaches, drops it, and makes those leaves inputs of the checkpoint's node, so its
backward is an autograd.grad over the recomputed graph: it works with autograd.grad, backward(inputs=...) and
keyword arguments, and its output requires grad where only a parameter does.
"""
import warnings

from .. import _C
from ..autograd import Function, enable_grad, grad
from ..random import _all_states, _set_all_states

__all__ = ["checkpoint", "checkpoint_sequential"]


def _detached(args):
    return tuple(a.detach().requires_grad_(a.requires_grad) if isinstance(a, _C.Tensor) else a for a in args)


def _tuple(outputs):
    return outputs if isinstance(outputs, tuple) else (outputs,)


def _leaves_reached(outputs):
    """The leaves requiring grad that the graph of outputs reaches (their AccumulateGrad nodes' tensors)."""
    stack = [o.grad_fn for o in outputs if isinstance(o, _C.Tensor) and o.grad_fn is not None]
    seen, leaves = set(stack), []
    while stack:
        for node, _ in stack.pop().next_functions:
            if node is None or node in seen:
                continue
            seen.add(node)
            if node.name() == "AccumulateGrad":
                if node.variable is not None:
                    leaves.append(node.variable)
            else:
                stack.append(node)
    return leaves


class _Recompute:
    """fn and its arguments, and the random streams' states when the forward ran."""

    def __init__(self, fn, args, kwargs, preserve_rng_state):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rng = _all_states() if preserve_rng_state else None

    def run(self, args):
        """fn on args, recorded: the forward's own run."""
        with enable_grad():
            return self.fn(*args, **self.kwargs)

    def replay(self, args):
        """fn again, with the random stream as the forward had it (and as it was put back after)."""
        outer = _all_states() if self.rng is not None else None
        try:
            if self.rng is not None:
                _set_all_states(self.rng)
            return self.run(args)
        finally:
            if outer is not None:
                _set_all_states(outer)


class CheckpointFunction(Function):
    """use_reentrant=True: PyTorch's CheckpointFunction."""

    @staticmethod
    def forward(ctx, recompute, *args):
        ctx.recompute = recompute
        return recompute.fn(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _C._backward_plain():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = _detached(ctx.recompute.args)
        outputs = _tuple(ctx.recompute.replay(inputs))
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, _C.Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _C._run_backward(tuple(o for o, _ in pairs), tuple(g for _, g in pairs), False, False, None, False, True)
        return (None,) + tuple(a.grad if isinstance(a, _C.Tensor) else None for a in inputs)


class Checkpoint(Function):
    """use_reentrant=False: fn's outputs (computed before, without their graph), made outputs of one node whose
    inputs are fn's tensor arguments and the leaves fn reaches; its backward differentiates fn's recomputed graph."""

    @staticmethod
    def forward(ctx, recompute, outputs, nargs, *tensors):
        ctx.recompute, ctx.leaves = recompute, tensors[nargs:]
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        inputs = _detached(ctx.recompute.args)
        outputs = _tuple(ctx.recompute.replay(inputs))
        wanted = [a for a in inputs if isinstance(a, _C.Tensor)] + list(ctx.leaves)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, _C.Tensor) and o.requires_grad]
        with_grad = [w for w in wanted if w.requires_grad]
        found = iter(grad([o for o, _ in pairs], with_grad, [g for _, g in pairs], allow_unused=True,
                          create_graph=_C.is_grad_enabled()) if pairs and with_grad else ())
        return (None, None, None) + tuple(next(found, None) if w.requires_grad else None for w in wanted)


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               early_stop=True, **kwargs):
    """function(*args, **kwargs), keeping none of its activations for backward, which runs it again."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant and (context_fn is not None or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if context_fn is not None or debug:
        raise NotImplementedError("vkt.utils.checkpoint: context_fn and debug are not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    recompute = _Recompute(function, args, kwargs, preserve)
    if use_reentrant:
        if _C.is_grad_enabled() and not any(isinstance(a, _C.Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")
        return CheckpointFunction.apply(recompute, *args)
    if not _C.is_grad_enabled():
        return function(*args, **kwargs)
    result = recompute.run(_detached(args))  # recorded once, to learn which leaves it reaches; then dropped
    single = not isinstance(result, tuple)
    result = _tuple(result)
    leaves = _leaves_reached(result)
    outputs = tuple(o.detach() if isinstance(o, _C.Tensor) else o for o in result)
    del result
    tensors = tuple(a for a in args if isinstance(a, _C.Tensor))
    made = Checkpoint.apply(recompute, outputs, len(tensors), *tensors, *leaves)
    return made[0] if single else made


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs functions (a list, or a Sequential's children) one after another in `segments` checkpointed groups;
    the last group runs as it is."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for f in functions[start:end + 1]:
                x = f(x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
