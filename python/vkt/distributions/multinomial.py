"""vkt.distributions.Multinomial: counts of total_count categorical trials over the last dim, with probs (normalised)
or logits; sample counts the Categorical's draws with a scatter_add on their device."""
import math

from .. import _C
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution, _shape
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        # torch leaves _binomial out (its expanded entropy fails); it is expanded here so entropy works
        new._binomial = self._binomial.expand(batch_shape + self.event_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = _shape(sample_shape)
        samples = self._categorical.sample((self.total_count,) + sample_shape)
        samples = samples.permute(*range(1, samples.dim()), 0)  # the trials last, to be counted per category
        # counted in int32: a Vulkan device scatters 64-bit elements on the CPU
        counts = _C.zeros(self._extended_shape(sample_shape), dtype=_C.int32, device=samples.device)
        counts.scatter_add_(-1, samples, _C.ones_like(samples, dtype=_C.int32))
        return counts.to(self.probs.dtype)

    def entropy(self):
        # H = n H(categorical) - log n! + sum over categories of E[log x_i!], x_i ~ Binomial(n, p_i), the
        # expectation enumerated over x_i = 1..n; torch's log n! is float32 (lgamma of an int64 tensor), this one
        # is exact
        term1 = self.total_count * self._categorical.entropy() - math.lgamma(self.total_count + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = _C.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum((0, -1))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = _C.lgamma(value.sum(-1) + 1)
        log_factorial_xs = _C.lgamma(value + 1).sum(-1)
        logits = _C.where((value == 0) & (logits == -math.inf), 0.0, logits)  # 0 log 0 is 0
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
