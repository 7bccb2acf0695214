"""FractionalMaxPool2d and FractionalMaxPool3d over vkt.nn.functional's fractional max pools: torch's arguments,
checks and stored attributes; _random_samples, where given, is a buffer (fixed windows, as torch's)."""
from .. import functional as F
from .module import Module
from .padding import _ntuple

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPoolNd(Module):
    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        nd = self._nd
        if nd == 3 and any(k <= 0 for k in _ntuple(kernel_size, nd)):  # only torch's 3-D module checks
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _ntuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, nd) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"FractionalMaxPool{nd}d requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < self.output_ratio[d] < 1 for d in range(nd)):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return getattr(F, f"fractional_max_pool{self._nd}d")(input, self.kernel_size, self.output_size,
                                                             self.output_ratio, self.return_indices,
                                                             _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _nd = 3
