"""vkt.nn.functional: PyTorch's torch.nn.functional names over vkt's operators."""
from .. import _C


def relu(input, inplace=False):
    return input.relu_() if inplace else _C.relu(input)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if not input.dtype.is_floating_point:  # PyTorch keeps an integer input's dtype, bounds truncated
        min_val, max_val = int(min_val), int(max_val)
    return input.clamp_(min_val, max_val) if inplace else _C.clamp(input, min_val, max_val)


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return input.silu_() if inplace else _C.silu(input)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def hardsigmoid(input, inplace=False):
    return _C.hardsigmoid_(input) if inplace else _C.hardsigmoid(input)


def hardswish(input, inplace=False):
    return _C.hardswish_(input) if inplace else _C.hardswish(input)


def mish(input, inplace=False):
    return _C.mish_(input) if inplace else _C.mish(input)


def logsigmoid(input):
    return _C.logsigmoid(input)


def selu(input, inplace=False):
    return _C.selu_(input) if inplace else _C.selu(input)


def celu(input, alpha=1.0, inplace=False):
    return input.celu_(alpha) if inplace else _C.celu(input, alpha)


def softsign(input):
    return _C.softsign(input)


def tanhshrink(input):
    return _C.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):
    return input.threshold_(threshold, value) if inplace else _C.threshold(input, threshold, value)


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
from ._spatial import *  # noqa: F401,F403
