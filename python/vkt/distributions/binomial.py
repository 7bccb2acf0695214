"""vkt.distributions.Binomial: successes in total_count trials of probability probs (or sigmoid(logits)); sample
draws on the distribution's device as torch's sampler does (inversion for a small mean, Hormann's BTRS otherwise),
each algorithm a loop of rounds over the whole batch."""
import math

from .. import _C
from ..autograd import no_grad
from ..random import _draw_dtype, _uniform
from . import constraints
from .distribution import Distribution
from .utils import BinaryProbs, broadcast_all

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    """max(x, 0) with gradient 1/2 at 0 (torch's form)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _stirling_tail(k):
    """log(k!) - log(sqrt(2 pi) (k + 1)^(k + 1/2) e^-(k + 1)), the error of Stirling's formula at k + 1: exactly from
    lgamma up to k = 9, from its series above (where lgamma's rounding would swamp it)."""
    exact = _C.lgamma(k + 1) - (k + 0.5) * (k + 1).log() + (k + 1) - 0.5 * math.log(2 * math.pi)
    kp1sq = (k + 1) * (k + 1)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return _C.where(k <= 9, exact, series)


def _until_accepted(step, waiting):
    """Runs step(waiting) -> accepted, the rounds of a rejection sampler over a batch, until no element waits: one
    read from the device per round."""
    while bool(waiting.any()):
        waiting = waiting & ~step(waiting)


def _binomial_inversion(count, p, waiting):
    """For the waiting elements (p <= 1/2, count * p < 10): the number of geometric waiting times, each a draw
    ceil(log(u) / log(1 - p)), that fit in count trials. About count * p + 1 rounds."""
    log_q = (-p).log1p()
    trials = _C.zeros_like(p)
    out = _C.zeros_like(p)

    def step(waiting):
        nonlocal trials, out
        trials = trials + (_uniform(p, None).log() / log_q).ceil()
        fits = trials <= count
        out = out + (waiting & fits).to(p.dtype)
        return ~fits
    _until_accepted(step, waiting)
    return out


def _btrs(n, p, waiting):
    """Binomial(n, p) draws for the waiting elements (p <= 1/2, n * p >= 10) by Hormann's transformed rejection with
    squeeze (BTRS, 1993) as torch writes it; a round accepts 24% to 79% of proposals. The acceptance bound is
    written in d = k - m, so its large terms cancel exactly rather than in float32 rounding."""
    spq = (n * p * (1 - p)).sqrt()
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    m = ((n + 1) * p).floor()
    log_mode_ratio = ((m + 1) * (1 - p) / (p * (n - m + 1))).log()
    m_tails = _stirling_tail(m) + _stirling_tail(n - m)
    out = _C.zeros_like(p)

    def step(waiting):
        nonlocal out
        u = _uniform(p, None) - 0.5
        v = _uniform(p, None)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + c).floor()
        inside = (k >= 0) & (k <= n)
        k_in = _C.where(inside, k, m)  # keeps the bound finite where k is rejected anyway
        d = k_in - m
        bound = (-d * log_mode_ratio + (k_in + 0.5) * ((-d / (n - m + 1)).log1p() - (d / (m + 1)).log1p())
                 + (n + 1) * (d / (n - k_in + 1)).log1p() + m_tails - _stirling_tail(k_in) - _stirling_tail(n - k_in))
        quick = (us >= 0.07) & (v <= v_r)
        accepted = inside & (quick | ((v * alpha / (a / (us * us) + b)).log() <= bound))
        out = _C.where(waiting & accepted, k, out)
        return accepted
    _until_accepted(step, waiting)
    return out


def _binomial(count, prob):
    """Binomial(count, prob) draws on their device, as torch.binomial: 0 where count or prob is 0, count where prob
    is 1; otherwise for p = min(prob, 1 - prob) inversion where count * p < 10 and BTRS elsewhere, counted from
    the other end where prob > 1/2. Each algorithm sees safe stand-in parameters where the other one draws."""
    flip = prob > 0.5
    p = _C.where(flip, 1 - prob, prob)
    drawn = (count > 0) & (p > 0)
    small = count * p < 10
    by_inversion = _binomial_inversion(count, _C.where(drawn & small, p, 0.5), drawn & small)
    big = drawn & ~small & (count < math.inf)  # no round would accept an infinite count
    by_btrs = _btrs(_C.where(big, count, 100.0), _C.where(big, p, 0.5), big)
    x = _C.where(small, by_inversion, by_btrs)
    x = _C.where(drawn, x, 0.0)
    return _C.where(flip, count - x, x)


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
            work = _draw_dtype(self._param)
            count = self.total_count.expand(shape).to(work).contiguous()
            return _binomial(count, self.probs.expand(shape).to(work).contiguous()).to(self._param.dtype)

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
