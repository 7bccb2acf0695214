"""AdaptiveMaxPool1d, AdaptiveMaxPool2d and AdaptiveMaxPool3d over vkt.nn.functional's adaptive max pools."""
from .. import functional as F
from .module import Module

__all__ = ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"]


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return getattr(F, f"adaptive_max_pool{self._nd}d")(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _nd = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _nd = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _nd = 3
