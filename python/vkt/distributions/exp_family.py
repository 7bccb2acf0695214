"""vkt.distributions.ExponentialFamily: the base of the exponential-family distributions (for isinstance checks
and subclassing; each family here computes its entropy directly, so no Bregman-divergence entropy is needed)."""
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError
