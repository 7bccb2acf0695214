"""vkt.nn.functional: PyTorch's torch.nn.functional names over vkt's operators."""
from .. import _C


def relu(input, inplace=False):
    return input.relu_() if inplace else _C.relu(input)


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return input.silu_() if inplace else _C.silu(input)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return input.leaky_relu_(negative_slope) if inplace else _C.leaky_relu(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return input.elu_(alpha) if inplace else _C.elu(input, alpha)


def softplus(input, beta=1.0, threshold=20.0):
    return _C.softplus(input, beta, threshold)


def softmax(input, dim, dtype=None):
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    return _C.log_softmax(input, dim, dtype=dtype)


def linear(input, weight, bias=None):
    return _C.linear(input, weight, bias)
