"""vkt.distributions.StudentT: Student's t with df degrees of freedom, location loc and scale scale, drawn as
loc + scale * X / sqrt(Z / df) with X ~ Normal(0, 1) and Z ~ Chi2(df) (so rsample is differentiable in df too)."""
import math

from .. import _C
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = tuple(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return _C.where(self.df <= 1, float("nan"), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.df > 2
        df = _C.where(finite, self.df, 3.0)  # a stand-in where the variance is not finite, so no 0/0 reaches grad
        return _C.where(finite, self.scale.pow(2) * df / (df - 2), _C.where(self.df > 1, float("inf"), float("nan")))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + _C.lgamma(0.5 * self.df)
             - _C.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y.pow(2.0) / self.df).log1p() - z

    def entropy(self):
        lbeta = _C.lgamma(0.5 * self.df) + math.lgamma(0.5) - _C.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (_C.digamma(0.5 * (self.df + 1)) - _C.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
