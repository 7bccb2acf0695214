"""vkt.nn.Parameter: the Tensor subclass a Module registers as a learnable parameter when assigned to it."""
from .. import _C

__all__ = ["Parameter"]


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
