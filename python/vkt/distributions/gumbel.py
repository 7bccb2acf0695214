"""vkt.distributions.Gumbel: the type-I extreme value distribution. torch builds it as a TransformedDistribution
of Uniform(tiny, 1 - eps) through x = loc - scale * log(-log(u)); the transform is written out here, with the same
clipping of u, so samples, cdf and icdf agree with torch's."""
import math

from .. import _C
from ..autograd import no_grad
from . import constraints
from .distribution import _Broadcast
from .utils import euler_constant, finfo

__all__ = ["Gumbel"]


class Gumbel(_Broadcast):
    _params = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self._init_params((loc, scale), validate_args)

    def _base_bounds(self):
        """The interval [tiny, 1 - eps] of the base uniform draws, which keeps both logs finite."""
        f = finfo(self.loc.dtype)
        return float(f.tiny), 1 - float(f.eps)

    def _transform(self, u):
        return self.loc - self.scale * (-u.log()).log()

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        low, high = self._base_bounds()
        u = _C.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_() * (high - low) + low
        return self._transform(u)

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value):
        low, high = self._base_bounds()
        u = (-((value - self.loc) / -self.scale).exp()).exp()
        return ((u - low) / (high - low)).clamp(min=0, max=1)

    def icdf(self, value):
        low, high = self._base_bounds()
        return self._transform(value * (high - low) + low)

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
