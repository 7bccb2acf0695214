"""Padding modules (Zero/Constant/Reflection/Replication/CircularPad1d/2d/3d): PyTorch's arguments, reprs and
errors over vkt.nn.functional.pad, which owns the padding itself and the checks on the input's shape."""
from collections.abc import Iterable

from .. import functional as F
from .module import Module

__all__ = [
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]


def _ntuple(padding, n):
    """torch's _ntuple: a number repeats n times; any iterable is taken as it is, its length unchecked (F.pad
    then pads as many dims as it names)."""
    return tuple(padding) if isinstance(padding, Iterable) else (padding,) * n


class _PadNd(Module):
    """A padding of 2 * nd numbers for F.pad, last dim first; mode is F.pad's."""
    mode = None
    nd = None

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self.nd)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input):
        # torch checks the rank here, before F.pad, and with its own message
        if input.dim() not in (self.nd + 1, self.nd + 2):
            raise ValueError(f"expected {self.nd + 1}D or {self.nd + 2}D input (got {input.dim()}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    nd = 1


class CircularPad2d(_CircularPadNd):
    nd = 2


class CircularPad3d(_CircularPadNd):
    nd = 3


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    nd = 1


class ReflectionPad2d(_ReflectionPadNd):
    nd = 2


class ReflectionPad3d(_ReflectionPadNd):
    nd = 3


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    nd = 1


class ReplicationPad2d(_ReplicationPadNd):
    nd = 2


class ReplicationPad3d(_ReplicationPadNd):
    nd = 3


class _ConstantPadNd(_PadNd):
    mode = "constant"

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    nd = 1


class ConstantPad2d(_ConstantPadNd):
    nd = 2


class ConstantPad3d(_ConstantPadNd):
    nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    pass


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    pass


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    pass
