"""vkt.distributions.NegativeBinomial: the number of successes before total_count failures of Bernoulli(probs)
trials; sample draws Poisson(Gamma(total_count, exp(-logits))) as torch does, both on the distribution's device
(the Poisson step by torch's sampler, each algorithm a loop of rounds over the whole batch)."""
import math

from .. import _C
from ..autograd import no_grad
from ..nn.functional import logsigmoid
from ..random import _uniform
from . import constraints
from .binomial import _CountAndProbs, _stirling_tail, _until_accepted
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


def _poisson_product(lam, waiting, generator):
    """For the waiting elements (0 < lam < 10): how many uniforms multiply to more than e^-lam. About lam + 1
    rounds."""
    limit = (-lam).exp()
    prod = _C.ones_like(lam)
    out = _C.zeros_like(lam)

    def step(waiting):
        nonlocal prod, out
        prod = prod * _uniform(lam, generator)
        more = prod > limit
        out = out + (waiting & more).to(lam.dtype)
        return ~more
    _until_accepted(step, waiting)
    return out


def _ptrs(lam, waiting, generator):
    """Poisson(lam) draws for the waiting elements (lam >= 10) by Hormann's transformed rejection (PTRS, 1993) as
    torch writes it. Its log pmf -lam + k log(lam) - lgamma(k + 1) is taken through Stirling's formula in
    delta = k + 1 - lam, so large terms cancel exactly rather than in float32 rounding."""
    slam = lam.sqrt()
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = (1.1239 + 1.1328 / (b - 3.4)).log()
    v_r = 0.9277 - 3.6224 / (b - 2)
    out = _C.zeros_like(lam)

    def step(waiting):
        nonlocal out
        u = _uniform(lam, generator) - 0.5
        v = _uniform(lam, generator)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + lam + 0.43).floor()
        quick = (us >= 0.07) & (v <= v_r)
        valid = (k >= 0) & ((us >= 0.013) | (v <= us))
        k_in = _C.where(k >= 0, k, lam.floor())  # keeps the log pmf finite where k is rejected anyway
        delta = k_in + 1 - lam
        log_pmf = (delta - k_in * (delta / lam).log1p() - 0.5 * (k_in + 1).log() - 0.5 * math.log(2 * math.pi)
                   - _stirling_tail(k_in))
        accepted = quick | (valid & (v.log() + log_inv_alpha - (a / (us * us) + b).log() <= log_pmf))
        out = _C.where(waiting & accepted, k, out)
        return accepted
    _until_accepted(step, waiting)
    return out


def _poisson(rate, generator=None):
    """Poisson(rate) draws on rate's device, as torch.poisson: the product of uniforms for 0 < rate < 10 and PTRS
    for finite rates from 10 up, each with a safe stand-in rate where the other draws; rate itself elsewhere (0, and
    inf or nan, which no round would accept). vkt.poisson draws with it."""
    small = (rate > 0) & (rate < 10)
    big = (rate >= 10) & (rate < math.inf)
    by_product = _poisson_product(_C.where(small, rate, 1.0), small, generator)
    by_ptrs = _ptrs(_C.where(big, rate, 10.0), big, generator)
    return _C.where(small, by_product, _C.where(big, by_ptrs, rate))


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
            return _poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -_C.lgamma(self.total_count + value) + _C.lgamma(1.0 + value) + _C.lgamma(self.total_count)
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)  # lgamma(0) is inf
        return log_unnormalized_prob - log_normalization
