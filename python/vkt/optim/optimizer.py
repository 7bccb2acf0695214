"""The Optimizer base class, as torch.optim.Optimizer: param_groups, defaults, per-parameter state,
zero_grad, add_param_group, state_dict / load_state_dict (torch's structure) and step hooks. Subclasses
run one fused device kernel per parameter (vkt._C._optimizer_step_); nothing here touches elements."""
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from .. import _C
from ..autograd import enable_grad

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _check_lr(lr):
    if isinstance(lr, _C.Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        lr = lr.item()
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_fused_foreach(defaults):
    """torch's refusals of option pairs; otherwise foreach and fused change nothing here (every step is
    already one fused kernel per parameter)."""
    if defaults.get("fused") and defaults.get("differentiable"):
        raise RuntimeError("`fused` does not support `differentiable`")
    if defaults.get("fused") and defaults.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if defaults.get("differentiable"):
        raise RuntimeError("vkt.optim: differentiable=True is not supported (the step is a fused kernel)")


def _typename(obj):
    """torch.typename's form: a class's qualified name, builtins unqualified."""
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _scalar(x):
    return x.item() if isinstance(x, _C.Tensor) else x


def _step_tensor(value):
    """A 0-d host state tensor (step, ASGD's eta and mu, NAdam's mu_product) of torch's _get_scalar_dtype: float64
    where the default dtype is float64, else float32 (a float16 default would stop counting steps at 2048)."""
    return _C.tensor(float(value), dtype=_C.float64 if _C._get_default_dtype() == _C.float64 else _C.float32)


def _step_hooked(step):
    """Runs the step between the optimizer's pre- and post-hooks."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in list(self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        out = step(self, *args, **kwargs)
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


class _Handle:
    """A registered hook's handle: remove() unregisters it."""

    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = _Handle._next_id
        _Handle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)


class Optimizer:
    """Base class for all optimizers. params: an iterable of Tensors, of (name, Tensor) pairs, or of
    dicts (parameter groups with their own hyperparameters); defaults: each group's defaults."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and not getattr(cls.__dict__["step"], "_hooked", False):
            cls.step = _step_hooked(cls.__dict__["step"])

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        return format_string + ")"

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before each step."""
        handle = _Handle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, after each step."""
        handle = _Handle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}: parameters are
        numbered in the order of the groups, as torch numbers them."""
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, _C.Tensor) else k): v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _cast_state(param, value, key):
        """A copy of a loaded state tensor: 'step' on the cpu, as torch keeps it; the rest on param's device,
        floating-point state in param's dtype, contiguous (the fused kernel's layout)."""
        if key == "step":
            return value.to("cpu").clone()
        dtype = param.dtype if param.is_floating_point() else value.dtype
        return value.to(dtype=dtype, device=param.device).clone().contiguous()

    def load_state_dict(self, state_dict):
        """Loads what state_dict() returned (deep-copied): groups must match in number and size."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, _C.Tensor):
                return self._cast_state(param, value, key)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return deepcopy(value)

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

    def zero_grad(self, set_to_none=True):
        """Sets every parameter's grad to None (set_to_none), or zeroes it in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad = p.grad.detach()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    def add_param_group(self, param_group):
        """Adds a group of parameters (a dict with 'params' and any hyperparameters; the others default)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, _C.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- shared by the subclasses ----

    @staticmethod
    def _next_step(state):
        """Counts one more step in state['step'] (torch's 0-d cpu tensor, see _step_tensor) and returns it."""
        step_t = state["step"]
        if not isinstance(step_t, _C.Tensor):  # a state dict of torch before 1.12 kept a number
            step_t = state["step"] = _step_tensor(step_t)
        step = step_t.item() + 1
        step_t.fill_(step)
        return step

    @staticmethod
    def _closure(closure):
        """The loss of closure(), which reevaluates the model with autograd on; None without one."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    @staticmethod
    def _new_state(p, fill=0.0):
        """A state tensor for p: contiguous, its shape, dtype and device, filled (None: left empty)."""
        if fill is None:
            return _C.empty(p.shape, dtype=p.dtype, device=p.device)
        return _C.full(p.shape, fill, dtype=p.dtype, device=p.device)
