"""vkt.distributions.NegativeBinomial: the number of successes before total_count failures of Bernoulli(probs)
trials; sample draws Poisson(Gamma(total_count, exp(-logits))) as torch does."""
from .. import _C
from ..autograd import no_grad
from ..nn.functional import logsigmoid
from ..random import poisson
from . import constraints
from .binomial import _CountAndProbs
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_CountAndProbs):
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _CountAndProbs.__init__(self, total_count, probs, logits, validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_as(NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape=()):
        with no_grad():
            return poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -_C.lgamma(self.total_count + value) + _C.lgamma(1.0 + value) + _C.lgamma(self.total_count)
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)  # lgamma(0) is inf
        return log_unnormalized_prob - log_normalization
