"""vkt.distributions.Binomial: successes in total_count trials of probability probs (or sigmoid(logits)); sample
draws on the host with NumPy's sampler from a stream seeded by vkt's (as vkt.poisson does)."""
import numpy as np

from .. import _C
from ..autograd import no_grad
from ..random import _global_generator
from . import constraints
from .distribution import Distribution
from .utils import BinaryProbs, broadcast_all

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    """max(x, 0) with gradient 1/2 at 0 (torch's form)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _homogeneous_count(total_count, what):
    count = int(total_count.max())
    if not total_count.min() == count:
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return count


class _CountAndProbs(BinaryProbs, Distribution):
    """What Binomial and NegativeBinomial share: a total count and either probs or logits, broadcast together."""

    def __init__(self, total_count, probs, logits, validate_args):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        Distribution.__init__(self, tuple(self._param.shape), validate_args=validate_args)

    def _expand_as(self, cls, batch_shape, _instance):
        return self._expand_probs(cls, batch_shape, _instance, expanded=("total_count",))


class Binomial(_CountAndProbs):
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _CountAndProbs.__init__(self, total_count, probs, logits, validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_as(Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            counts = self.total_count.expand(shape).cpu().numpy().astype(np.int64)
            probs = self.probs.expand(shape).cpu().numpy().astype(np.float64)
            draws = np.random.Generator(_global_generator()._bits).binomial(counts, probs)
            return _C.tensor(draws.astype(np.float64), dtype=self._param.dtype, device=self._param.device)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = _C.lgamma(self.total_count + 1)
        log_factorial_k = _C.lgamma(value + 1)
        log_factorial_nmk = _C.lgamma(self.total_count - value + 1)
        # n log(1 + e^logits), written to stay finite for large |logits|
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * (-self.logits.abs()).exp().log1p() - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        _homogeneous_count(self.total_count, "entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        count = _homogeneous_count(self.total_count, "enumerate_support")
        values = _C.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
