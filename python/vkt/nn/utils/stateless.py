"""vkt.nn.utils.stateless.functional_call: calls a module with some of its parameters and buffers replaced by
given tensors (swapped in for the call, then back), as torch's; vkt.func.functional_call is the same call."""
import contextlib
import warnings

from ... import _C
from ..modules.module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module, parameters_and_buffers):
    """parameters_and_buffers with every name tied to a given one (the same tensor in two places) given too."""
    all_named_tensors = {}
    all_named_tensors.update(module.named_parameters(remove_duplicate=False))
    all_named_tensors.update(module.named_buffers(remove_duplicate=False))
    tensor_to_tied_names_map = {}
    for name, tensor in all_named_tensors.items():
        tensor_to_tied_names_map.setdefault(id(tensor), set()).add(name)
    tied_names_map = {}
    for tied_names in tensor_to_tied_names_map.values():
        if len(tied_names) > 1:
            for tied_name in tied_names:
                tied_names_map[tied_name] = tied_names
    given_names = set(parameters_and_buffers.keys())
    given_names_for_tied_tensors = {name for name in given_names if name in tied_names_map}
    for given_name in given_names_for_tied_tensors:
        tied_names = tied_names_map[given_name]
        if (len(tied_names.intersection(given_names_for_tied_tensors)) > 1
                and len({id(parameters_and_buffers[n]) for n in tied_names if n in parameters_and_buffers}) != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied_names)}, which are tied. "
                             "Consider using tie_weights=False")
    untied = parameters_and_buffers.copy()
    for given_name in given_names_for_tied_tensors:
        for tied_name in tied_names_map[given_name]:
            untied[tied_name] = parameters_and_buffers[given_name]
    return untied


def _get_submodule(module, name, memo):
    if not name:
        return module
    if name not in memo:
        prefix, dot, attr = name.rpartition(".")
        parent = _get_submodule(module, prefix, memo) if dot else module
        try:
            submodule = getattr(parent, attr)
        except AttributeError as ex:
            raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
        if not isinstance(submodule, Module):
            raise TypeError(f"submodule `{name}`: {submodule} is not an instance of vkt.nn.Module")
        memo[name] = submodule
    return memo[name]


def _swap_tensor(module, name, tensor):
    """Puts tensor (or, for _MISSING, nothing) at module.<name>; returns what was there (_MISSING for nothing)."""
    if tensor is not _MISSING and not isinstance(tensor, _C.Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of vkt.Tensor")
    for table in (module._parameters, module._buffers):
        if name in table:
            orig_tensor = table[name]
            if tensor is _MISSING:
                del table[name]
            else:
                table[name] = tensor
            return orig_tensor
    orig_tensor = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig_tensor is not _MISSING and not isinstance(orig_tensor, _C.Tensor) and orig_tensor is not None:
        raise TypeError(f"attribute `{name}`: {orig_tensor} is not an instance of vkt.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig_tensor


def _swap_tensors_dict(module, named_tensors, memo):
    orig = {}
    try:
        for name, tensor in named_tensors.items():
            prefix, _, attr = name.rpartition(".")
            orig[name] = _swap_tensor(_get_submodule(module, prefix, memo), attr, tensor)
    except Exception:
        _swap_tensors_dict(module, orig, memo)  # undo the swaps made before the error
        raise
    return orig


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        keys = set(untied)
        valid = {name for name, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
        error_msgs = []
        if keys - valid:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, sorted(keys - valid)))}.")
        if valid - keys:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, sorted(valid - keys)))}.")
        if error_msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                   "\n\t".join(error_msgs)))
    memo = {}
    orig = {}
    try:
        orig = _swap_tensors_dict(module, untied, memo)
        yield
    finally:
        # in reverse: a name tied to one swapped before it (the same module twice) got that given tensor as its
        # "original", which must not be what is left (torch 2.13 leaves it there)
        new = _swap_tensors_dict(module, dict(reversed(orig.items())), memo)
        # an in-place buffer update during the call (BatchNorm's running stats) reached the given tensors
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named parameters and buffers replaced by parameters_and_buffers's tensors
    for the call; deprecated in torch for torch.func.functional_call."""
    warnings.warn("`vkt.nn.utils.stateless.functional_call` is deprecated, as torch's is since PyTorch 2.0. Please "
                  "use `vkt.func.functional_call` instead which is a drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
