"""vkt.distributions.HalfCauchy: |X| for X ~ Cauchy(0, scale)."""
import math

from .. import _C
from .cauchy import Cauchy
from .half_normal import _Folded

__all__ = ["HalfCauchy"]


class HalfCauchy(_Folded):
    _base = Cauchy

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _C.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance
