"""vkt.nn.Module: the base class of every layer, with torch.nn.Module's bookkeeping.

Owns how parameters, buffers and child modules are registered (through attribute assignment), walked
(named_* in registration order, shared members once), moved or cast in place (_apply, as torch's
`param.data = ...`, so a Parameter keeps its identity), saved and loaded (state_dict), and the hooks
around a call (forward ones here, backward ones in _backward_hooks.py).
"""
import functools
import itertools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C
from ...autograd import no_grad
from ..parameter import Parameter, is_lazy
from ._backward_hooks import call_with_backward_hooks

__all__ = ["Module"]


def _typename(obj):
    """torch.typename, for error messages: "vkt.Tensor" for any tensor, else the qualified name of obj
    (a class or function) or of its type."""
    if isinstance(obj, _C.Tensor):
        return "vkt.Tensor"
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _addindent(s, spaces):
    first, *rest = s.split("\n")
    if not rest:
        return s
    return first + "\n" + "\n".join(" " * spaces + line for line in rest)


class RemovableHandle:
    """What a register_*_hook returns: remove() takes the hook out of its dict (and the extra dicts)."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=()):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules; subclasses assign their layers and parameters as
    attributes in __init__ and define forward()."""

    training: bool
    call_super_init = False
    _version = 1  # state_dict's metadata records it for each module, as torch's

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_modules", {})
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ---- registration ----

    def _check_member_name(self, kind, name, members):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in members:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a tensor that is state but not a parameter (BatchNorm's running_mean); persistent=False
        leaves it out of state_dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_member_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(vkt Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Adds a Parameter (or None, a declared but absent one, like Linear's bias=False)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_member_name("parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(vkt.nn.Parameter or None required)")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a child module, reachable as the attribute `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The module at a dotted path ("encoder.layers.0"); "" is self."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        """The Parameter at a dotted path ("encoder.layers.0.weight")."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at a dotted path ("bn.running_mean")."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ---- attributes ----

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            members = self.__dict__.get(table)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _forget(self, name, *tables):
        for table in tables:
            if isinstance(table, set):
                table.discard(name)
            else:
                table.pop(name, None)

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(vkt.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            self._set_module_or_buffer(name, value)

    def _set_module_or_buffer(self, name, value):
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(vkt.nn.Module or None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(vkt.Tensor or None expected)")
            buffers[name] = value
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(key for key in keys if not key[0].isdigit())

    # ---- walking ----

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def apply(self, fn):
        """Calls fn on every submodule (children first) and then on self, as for custom initialisation."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- modes and gradients ----

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
                continue
            if p.grad.grad_fn is not None:
                p.grad.detach_()
            else:
                p.grad.requires_grad_(False)
            p.grad.zero_()

    # ---- device and dtype ----

    def _apply(self, fn, recurse=True):
        """fn on every parameter, gradient and buffer, in place: a Parameter keeps its identity (its
        .data is replaced), so an optimizer holding it still works."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                param.data = fn(param)
                if param.grad is not None:  # .grad makes a new wrapper each time: set it, not its .data
                    param.grad = fn(param.grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(device=None, dtype=None, non_blocking=False), to(dtype) or to(tensor): moves every parameter
        and buffer to device, and casts the floating-point ones to dtype."""
        device, dtype = _parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            return t.to(device=device if device is not None else t.device,
                        dtype=dtype if dtype is not None and t.is_floating_point() else t.dtype)
        return self._apply(convert)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def vulkan(self, device=None):
        """Moves every parameter and buffer to the vulkan device (vulkan:N for device=N)."""
        target = "vulkan" if device is None else f"vulkan:{device}" if isinstance(device, int) else device
        return self._apply(lambda t: t.to(target))

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def compile(self, *args, **kwargs):
        """As torch's Module.compile: vkt.compile's arguments are checked, and nothing else happens (vkt fuses on its
        own as ops are recorded)."""
        from ...compiler import compile as compile_
        compile_(self, *args, **kwargs)

    # ---- state_dict ----

    def _local_state(self):
        """The entries this module itself saves: parameters and persistent buffers, by local name."""
        buffers = ((k, v) for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set)
        return {k: v for k, v in itertools.chain(self._parameters.items(), buffers) if v is not None}

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer by dotted name (detached unless
        keep_vars), sharing their storage; its _metadata holds each module's version by prefix. Each module's
        state_dict pre-hooks run before it adds its entries, its post-hooks after its children's."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._hooks("_state_dict_pre_hooks"):
            hook(self, prefix, keep_vars)
        for name, value in self._local_state().items():
            destination[prefix + name] = value if keep_vars else value.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._hooks("_state_dict_hooks"):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None and getattr(hook, "_from_public_api", False):
                raise RuntimeError("state_dict post-hook must return None")
            if result is not None:
                destination = result
        return destination

    def _hooks(self, kind):
        """The hooks of one kind, in order (none for a module made before it had them)."""
        return list(self.__dict__.get(kind, {}).values())

    def _named_modules_with_prefix(self, prefix=""):
        """(state_dict prefix, module) for this module and its descendants, parents first."""
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module._named_modules_with_prefix(prefix + name + ".")

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) -> None, before this module's state_dict() adds its entries."""
        return self._add_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, after this module's state_dict() has added its
        entries and its children's; it may change state_dict in place."""
        hook._from_public_api = True
        return self._add_hook(self._state_dict_hooks, hook, False)

    def _register_state_dict_hook(self, hook):
        """As register_state_dict_post_hook, but a hook's non-None result replaces the state dict (torch's older,
        private form)."""
        return self._add_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs) ->
        None, before load_state_dict() checks this module's entries: it may change state_dict (a copy of the one
        given) and add to the three lists."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """As register_load_state_dict_pre_hook, the module left out of the call unless with_module."""
        return self._add_hook(self._load_state_dict_pre_hooks,
                              functools.partial(hook, self) if with_module else hook, False)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None, after load_state_dict() has loaded this module and its children.
        It may change incompatible_keys' missing_keys and unexpected_keys in place; strict=True checks them after
        every hook has run, as torch does (the values are then loaded before the check)."""
        return self._add_hook(self._load_state_dict_post_hooks, hook, False)

    def _walk_state(self, prefix=""):
        """(key, module, local name, current value) for every entry of this tree's state_dict."""
        for name, value in self._local_state().items():
            yield prefix + name, self, name, value
        for name, module in self._modules.items():
            if module is not None:
                yield from module._walk_state(prefix + name + ".")

    def _unexpected_keys(self, state_dict, prefix=""):
        local = self._local_state()
        for key in state_dict:
            if key.startswith(prefix):
                head = key[len(prefix):].split(".", 1)
                if (len(head) > 1 and head[0] not in self._modules) or (len(head) == 1 and head[0] not in local):
                    yield key
        for name, module in self._modules.items():
            if module is not None:
                yield from module._unexpected_keys(state_dict, prefix + name + ".")

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies state_dict's values into this module's parameters and buffers (or, with assign=True,
        puts them in their place). Every key and shape is checked before anything is copied: on any
        error nothing changes and one RuntimeError names every offending key. Load pre-hooks see a copy of
        state_dict first; where a module has load post-hooks, the values are loaded, the hooks run, and then the
        missing and unexpected keys they leave are checked, as torch does."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        missing, unexpected, errors = [], [], []
        for prefix, module in self._named_modules_with_prefix():
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            for hook in module._hooks("_load_state_dict_pre_hooks"):
                hook(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)
        entries = list(self._walk_state())
        missing += [key for key, _, _, _ in entries if key not in state_dict]
        unexpected += list(dict.fromkeys(self._unexpected_keys(state_dict)))
        errors += [e for e in (_check_entry(key, value, state_dict[key]) for key, _, _, value in entries
                               if key in state_dict) if e]
        post_hooks = any(m._hooks("_load_state_dict_post_hooks") for _, m in self._named_modules_with_prefix())
        if not post_hooks:
            self._raise_load_errors(strict, missing, unexpected, errors)
        elif errors:
            self._raise_load_errors(False, missing, unexpected, errors)
        with no_grad():
            for key, module, name, value in entries:
                if key in state_dict and not is_lazy(value):  # one still lazy loaded a lazy one: nothing to copy
                    module._load_entry(name, value, _loadable(state_dict[key], value), assign)
        if post_hooks:
            keys = _IncompatibleKeys(missing, unexpected)
            for _, module in reversed(list(self._named_modules_with_prefix())):  # children before parents
                for hook in module._hooks("_load_state_dict_post_hooks"):
                    if hook(module, keys) is not None:
                        raise AssertionError(
                            "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to return "
                            "new values, if incompatible_keys need to be modified, it should be done inplace.")
            self._raise_load_errors(strict, missing, unexpected, [])
        return _IncompatibleKeys(missing, unexpected)

    def _raise_load_errors(self, strict, missing, unexpected, errors):
        errors = list(errors)
        if strict and unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        if strict and missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))

    def _load_entry(self, name, current, loaded, assign):
        if not assign:
            current.copy_(loaded)
        elif isinstance(current, Parameter):
            setattr(self, name, loaded.requires_grad_(current.requires_grad) if isinstance(loaded, Parameter)
                    else Parameter(loaded, current.requires_grad))
        else:
            setattr(self, name, loaded)

    # ---- calling and hooks ----

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args, before forward; with_kwargs: hook(module, args, kwargs)
        -> None or (args, kwargs)."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output, after forward; with_kwargs: hook(module, args,
        kwargs, output); always_call: called even when forward raises."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input, when the gradients with respect
        to the module's positional tensor inputs are computed (grad_input holds None for inputs that need none)."""
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output, before the module's backward runs."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def _add_hook(self, hooks, hook, prepend):
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def _run_pre_hooks(self, args, kwargs):
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is None:
                    continue
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        return args, kwargs

    def _run_hooks(self, args, kwargs, result, only_always=False):
        for hook_id, hook in list(self._forward_hooks.items()):
            if only_always and hook_id not in self._forward_hooks_always_called:
                continue
            if hook_id in self._forward_hooks_with_kwargs:
                hook_result = hook(self, args, kwargs, result)
            else:
                hook_result = hook(self, args, result)
            if hook_result is not None:
                result = hook_result
        return result

    def __call__(self, *args, **kwargs):
        backward_hooks = self._backward_hooks or self._backward_pre_hooks
        if not (self._forward_pre_hooks or self._forward_hooks or backward_hooks):
            return self.forward(*args, **kwargs)
        args, kwargs = self._run_pre_hooks(args, kwargs)
        try:
            if backward_hooks:
                result = call_with_backward_hooks(self, self.forward, args, kwargs)
            else:
                result = self.forward(*args, **kwargs)
        except Exception:
            if self._forward_hooks_always_called:
                self._run_hooks(args, kwargs, None, only_always=True)
            raise
        return self._run_hooks(args, kwargs, result)

    # ---- repr ----

    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        """The module's own settings for its repr (Linear: "in_features=4, out_features=2, bias=True")."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if len(extra_lines) == 1 and not child_lines:
            main += extra_lines[0]
        elif lines:
            main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _parse_to(device=None, dtype=None, non_blocking=False, *, copy=False, memory_format=None):
    """Module.to's arguments as torch._C._nn._parse_to reads them: (device, dtype)."""
    del non_blocking, copy, memory_format
    if isinstance(device, _C.Tensor):
        return device.device, device.dtype
    if isinstance(device, _C.dtype):
        return None, device
    return (None if device is None else _C.device(device)), dtype


def _check_entry(key, current, loaded):
    """The load error for one entry, or None."""
    if not isinstance(loaded, _C.Tensor):
        return (f'While copying the parameter named "{key}", expected vkt.Tensor or Tensor-like object from '
                f"checkpoint but received {type(loaded)}")
    if is_lazy(current):  # shaped by what it loads (a lazy module's load pre-hook), or left as it is
        return None
    if tuple(_loadable(loaded, current).shape) != tuple(current.shape):
        return (f"size mismatch for {key}: copying a param with shape {loaded.shape} from checkpoint, "
                f"the shape in current model is {current.shape}.")
    return None


def _loadable(loaded, current):
    """A 1-element 1-d checkpoint value loads into a 0-d parameter, as torch allows for old checkpoints."""
    if current.dim() == 0 and loaded.dim() == 1 and loaded.shape[0] == 1:
        return loaded[0]
    return loaded
