"""vkt.nn.Parameter: the Tensor subclass a Module registers as a learnable parameter when assigned to it; and the
uninitialized parameters and buffers of lazy modules (UninitializedParameter, UninitializedBuffer), shaped at their
first forward."""
from .. import _C

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Parameter(_C.Tensor):
    """Parameter(data=None, requires_grad=True): a leaf sharing data's storage. Assigned as a Module
    attribute it joins the module's parameters(); a plain Tensor assigned so does not."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        return _C._make_subclass(cls, data, requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return _rebuild_parameter, (self.data, self.requires_grad)


# Tensor methods an uninitialized parameter or buffer keeps (torch's _allowed_methods that vkt has): each that makes a
# new tensor (another device or dtype) gives back an uninitialized one of the same kind, so Module.to() and friends
# move and cast lazy modules before their first forward as they do any other.
_KEPT_WHEN_MOVED = ("to", "cpu", "half", "float", "double", "int", "long", "byte", "bool")


def _keeping_uninitialized(name):
    method = getattr(_C.Tensor, name)

    def moved(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        return self if out is self else self._like(out)
    moved.__name__ = moved.__qualname__ = name
    return moved


class UninitializedTensorMixin:
    """What UninitializedParameter and UninitializedBuffer share: an empty tensor that carries only a device, a dtype
    and requires_grad until materialize() gives it a shape. Its shape cannot be read."""

    def materialize(self, shape, device=None, dtype=None):
        """Becomes a tensor of shape (left uninitialized, as torch.empty) on device and of dtype (by default its
        own), and a Parameter (an UninitializedParameter) or a plain Tensor (an UninitializedBuffer)."""
        device = self.data.device if device is None else device
        dtype = self.data.dtype if dtype is None else dtype
        self.data = _C.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call `forward` "
            "to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return self.__class__, (self.requires_grad,)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = self._like(self)
        return memo[id(self)]


for _name in _KEPT_WHEN_MOVED:
    setattr(UninitializedTensorMixin, _name, _keeping_uninitialized(_name))


def is_lazy(param):
    """Whether param is an UninitializedParameter or an UninitializedBuffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """UninitializedParameter(requires_grad=True, device=None, dtype=None): a lazy module's parameter before its first
    forward; materialize() makes it a Parameter in place (the module and any optimizer keep the same object)."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _C._make_subclass(cls, _C.empty(0, device=device, dtype=dtype), requires_grad)

    def _like(self, other):
        return type(self)(self.requires_grad, other.device, other.dtype)


class _MaterializedBuffer(_C.Tensor):
    """What an UninitializedBuffer becomes in place. torch's becomes a plain Tensor, but a vkt.Tensor's class is
    immutable, so an object of a subclass cannot take it; the lazy module that holds it replaces it with a plain
    Tensor sharing its storage (LazyModuleMixin._replace_materialized_buffers)."""


class UninitializedBuffer(UninitializedTensorMixin, _C.Tensor):
    """UninitializedBuffer(requires_grad=False, device=None, dtype=None, persistent=True): a lazy module's buffer
    before its first forward (LazyBatchNorm's running_mean); materialize() gives it its shape."""
    cls_to_become = _MaterializedBuffer

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        buffer = _C._make_subclass(cls, _C.empty(0, device=device, dtype=dtype), requires_grad)
        buffer.persistent = persistent
        return buffer

    def _like(self, other):
        return type(self)(self.requires_grad, other.device, other.dtype, self.persistent)
