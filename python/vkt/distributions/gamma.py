"""vkt.distributions.Gamma: Gamma(concentration, rate), reparameterised through vkt._standard_gamma's pathwise
gradient; its cdf is the regularised lower incomplete gamma function, composed here of vkt ops."""
from .. import _C
from ..random import _standard_gamma
from . import constraints
from .distribution import _Broadcast
from .exp_family import ExponentialFamily
from .utils import finfo

__all__ = ["Gamma"]

_SERIES_TERMS = 96  # the series for x < a + 1: terms shrink at least as x / (a + n), so this reaches float64 at a < 100
_FRACTION_TERMS = 48  # the continued fraction for x >= a + 1 converges in about sqrt(a) terms


def _gammainc(a, x):
    """P(a, x) = gamma(a, x) / Gamma(a) (torch.special.gammainc) for a > 0, x >= 0: the power series below a + 1,
    1 - Lentz's continued fraction for Q(a, x) above (Numerical Recipes, 6.2), each with a fixed number of terms so
    every element runs the same ops; where() picks one."""
    tiny = float(finfo(x.dtype).tiny)
    use_series = x < a + 1
    # each branch sees only inputs it converges on (a stand-in elsewhere), so the one not taken stays finite and
    # where()'s zero gradient to it stays zero instead of becoming nan
    xs = _C.where(use_series, x.clamp(min=tiny), 0.5 * a)
    term = total = a.reciprocal()
    ap = a
    for _ in range(_SERIES_TERMS):
        ap = ap + 1
        term = term * xs / ap
        total = total + term
    series = total * (a * xs.log() - xs - _C.lgamma(a)).exp()
    xf = _C.where(use_series, a + 2, x)
    b = xf + 1 - a
    c = _C.full_like(b, 1 / tiny)
    d = b.reciprocal()
    h = d
    for i in range(1, _FRACTION_TERMS + 1):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = _C.where(d.abs() < tiny, tiny, d).reciprocal()
        c = b + an / c
        c = _C.where(c.abs() < tiny, tiny, c)
        h = h * d * c
    fraction = 1 - (a * xf.log() - xf - _C.lgamma(a)).exp() * h
    return _C.where(x <= 0, 0.0, _C.where(use_series, series, fraction))


class Gamma(_Broadcast, ExponentialFamily):
    _params = ("concentration", "rate")
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self._init_params((concentration, rate), validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=float(finfo(value.dtype).tiny))  # as torch: not recorded in the graph
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (_C.xlogy(self.concentration, self.rate) + _C.xlogy(self.concentration - 1, value)
                - self.rate * value - _C.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - self.rate.log() + _C.lgamma(self.concentration)
                + (1.0 - self.concentration) * _C.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _C.lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _gammainc(self.concentration, self.rate * value)
