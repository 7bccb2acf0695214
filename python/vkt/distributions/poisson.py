"""vkt.distributions.Poisson: counts with mean `rate`; sample draws with vkt.poisson."""

from ..autograd import no_grad
from ..random import poisson
from . import constraints
from .distribution import _Broadcast
from .exp_family import ExponentialFamily
from .utils import _lgamma, _xlogy, broadcast_all

__all__ = ["Poisson"]


class Poisson(_Broadcast, ExponentialFamily):
    _params = ("rate",)
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self._init_params((rate,), validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        value = value.to(rate.dtype)
        return _xlogy(value, rate) - rate - _lgamma(value + 1)

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()
