"""Activation layers: each holds its settings and calls the vkt.nn.functional function of its name."""
from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "Hardtanh", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "Softmin", "LogSoftmax",
           "LeakyReLU", "RReLU", "ELU", "CELU", "SELU", "Softplus", "Mish", "Hardswish", "Hardsigmoid", "Softsign",
           "Tanhshrink", "Hardshrink", "Softshrink", "Threshold", "LogSigmoid", "PReLU", "GLU"]


class _Inplace(Module):
    """An activation whose only setting is inplace; fn is its vkt.nn.functional function."""

    fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self).fn(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Plain(Module):
    """An activation without settings."""

    fn = None

    def forward(self, input):
        return type(self).fn(input)


class ReLU(_Inplace):
    fn = F.relu


class SiLU(_Inplace):
    fn = F.silu


class Mish(_Inplace):
    fn = F.mish


class Hardswish(_Inplace):
    fn = F.hardswish


class Hardsigmoid(_Inplace):
    fn = F.hardsigmoid


class SELU(_Inplace):
    fn = F.selu


class Tanh(_Plain):
    fn = F.tanh


class Sigmoid(_Plain):
    fn = F.sigmoid


class Softsign(_Plain):
    fn = F.softsign


class Tanhshrink(_Plain):
    fn = F.tanhshrink


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class LogSigmoid(_Plain):
    fn = F.logsigmoid


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class _Dim(Module):
    """Softmax and its kin: one setting, dim (None picks torch's implicit dim, with its warning)."""

    fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self).fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_Dim):
    fn = F.softmax


class Softmin(_Dim):
    fn = F.softmin


class LogSoftmax(_Dim):
    fn = F.log_softmax


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class RReLU(Module):
    """rrelu: a random slope per element in training (self.training), the mean slope in evaluation."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    fn = F.elu

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self).fn(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    fn = F.celu


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """max(0, x) + a * min(0, x) with a learnt a, one or one per channel, initialised to init."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(_C.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"
