"""Pooling modules (MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, MaxUnpool1d/2d, LPPool1d/2d/3d)
over vkt.nn.functional's pools; each stores its arguments as PyTorch's does, so reprs match."""
from .. import functional as F
from .conv import _ntuple
from .module import Module


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return getattr(F, f"max_pool{self._nd}d")(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                                  ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    _nd = 1


class MaxPool2d(_MaxPoolNd):
    _nd = 2


class MaxPool3d(_MaxPoolNd):
    _nd = 3


class _AvgPoolNd(Module):
    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPoolDivisor(_AvgPoolNd):
    """AvgPool2d and AvgPool3d, which store their arguments as given and take a divisor_override."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return getattr(F, f"avg_pool{self._nd}d")(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                                  self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPoolDivisor):
    _nd = 2


class AvgPool3d(_AvgPoolDivisor):
    _nd = 3


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return getattr(F, f"adaptive_avg_pool{self._nd}d")(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _nd = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _nd = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _nd = 3


class _MaxUnpoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._nd)
        self.padding = _ntuple(padding, self._nd)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input, indices, output_size=None):
        return getattr(F, f"max_unpool{self._nd}d")(input, indices, self.kernel_size, self.stride, self.padding,
                                                    output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    _nd = 2


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return getattr(F, f"lp_pool{self._nd}d")(input, float(self.norm_type), self.kernel_size, self.stride,
                                                 self.ceil_mode)


class LPPool1d(_LPPoolNd):
    _nd = 1


class LPPool2d(_LPPoolNd):
    _nd = 2


class LPPool3d(_LPPoolNd):
    _nd = 3
