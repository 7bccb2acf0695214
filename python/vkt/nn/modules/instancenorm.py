"""InstanceNorm1d/2d/3d and LocalResponseNorm: per-sample normalisations, PyTorch's parameters, running-stat
buffers and update rules over vkt.nn.functional's instance_norm and local_response_norm."""
import warnings

from .. import functional as F
from .batchnorm import _BatchNorm
from .module import Module

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm"]


class _InstanceNorm(_BatchNorm):
    """torch's _InstanceNorm: _NormBase's parameters, buffers and repr (which vkt's _BatchNorm holds), no
    affine and no running stats by default, and a forward of its own. num_batches_tracked is kept but, as in
    torch, never counts."""
    no_batch_dim = None  # the input's dim without a batch: 2, 3 or 4

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        if input.dim() not in (self.no_batch_dim, self.no_batch_dim + 1):
            raise ValueError(f"expected {self.no_batch_dim}D or {self.no_batch_dim + 1}D input (got {input.dim()}D "
                             "input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self.no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self.no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    no_batch_dim = 4


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
