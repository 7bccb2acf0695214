"""vkt.func: torch.func's module tooling: functional_call (a module run with given parameters and buffers) and
stack_module_state. grad, vmap and the other transforms are not here."""
from collections.abc import Sequence

from . import _C
from .nn.utils.stateless import _functional_call

__all__ = ["functional_call", "stack_module_state"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with its parameters and buffers replaced, for this call, by those of
    parameter_and_buffer_dicts (a dict by dotted name, or a sequence of dicts with no key in two of them)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated_keys = [key for key, n in counts.items() if n > 1]
        if repeated_keys:
            raise ValueError(f"{repeated_keys} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """(params, buffers): each name's tensors from every model stacked along a new dim 0; stacked parameters
    are new leaves that require grad."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    model0_typ = type(models[0])
    if not all(type(m) is model0_typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(model.named_parameters()) for model in models]
    params = {k: _construct_stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(model.named_buffers()) for model in models]
    buffers = {k: _construct_stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


def _construct_stacked_leaf(tensors, name):
    all_requires_grad = all(t.requires_grad for t in tensors)
    none_requires_grad = all(not t.requires_grad for t in tensors)
    if not all_requires_grad and not none_requires_grad:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _C.stack(tensors)
    if all_requires_grad:
        result = result.detach().requires_grad_()
    return result
