"""parameters_to_vector and vector_to_parameters: all parameters as one flat vector, and back."""
from ... import _C
from ..modules.module import _typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device


def parameters_to_vector(parameters):
    """One 1-d tensor of every parameter's values, in order."""
    device = None
    views = []
    for param in parameters:
        device = _check_same_device(param, device)
        views.append(param.reshape(-1))
    return _C.cat(views)


def vector_to_parameters(vec, parameters):
    """Makes each parameter's data the next slice of vec (viewed in its shape)."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected vkt.Tensor, but got: {_typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
