"""vkt.distributions.VonMises: the circular distribution with density exp(concentration cos(x - loc)) / (2 pi I0),
angles taken modulo 2 pi; sample is Best and Fisher's rejection sampler, in float64 as torch's, on the device."""
import math

from .. import _C
from ..autograd import no_grad
from . import constraints
from .distribution import _Broadcast
from .utils import lazy_property

__all__ = ["VonMises"]


def _eval_poly(y, coef):
    """coef[0] + y coef[1] + y^2 coef[2] + ..., by Horner's rule."""
    coef = list(coef)
    result = coef.pop()
    while coef:
        result = coef.pop() + y * result
    return result


# Abramowitz and Stegun 9.8.1-9.8.4: I0 and I1 below 3.75, and exp(-x) sqrt(x) I0, I1 from 3.75 up
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
                  -0.1647633e-1, 0.392377e-2]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_COEF_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
                  -0.2895312e-1, 0.1787654e-1, -0.420059e-2]
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _log_modified_bessel_fn(x, order=0):
    """log I_order(x) for x > 0 and order 0 or 1."""
    if order != 0 and order != 1:
        raise AssertionError(f"order must be 0 or 1, got {order}")
    y = x / 3.75
    y = y * y
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    y = 3.75 / x
    large = x - 0.5 * x.log() + _eval_poly(y, _COEF_LARGE[order]).log()
    return _C.where(x < 3.75, small, large)


def _rejection_sample(loc, concentration, proposal_r, x):
    """Rounds of proposals for every element, each accepted one written into x, until all have been accepted: one
    read from the device a round."""
    done = _C.zeros(tuple(x.shape), dtype=_C.bool, device=loc.device)
    while not bool(done.all()):
        u1, u2, u3 = _C.rand((3,) + tuple(x.shape), dtype=loc.dtype, device=loc.device).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        x = _C.where(accept, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(_Broadcast):
    _params = ("loc", "concentration")
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self._init_params((loc, concentration), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _loc(self):
        return self.loc.to(_C.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(_C.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration  # squares as products: a Vulkan device takes float64 pow on the CPU
        tau = 1 + (1 + 4 * kappa * kappa).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho * rho) / (2 * rho)
        proposal_r_taylor = 1 / kappa + kappa
        return _C.where(kappa < 1e-5, proposal_r_taylor, proposal_r)

    def sample(self, sample_shape=()):
        """Best and Fisher, "Efficient simulation of the von Mises distribution", Applied Statistics (1979),
        152-157. In float64 whatever the parameters' dtype: in float32 the proposal's radius rounds to infinity
        for concentrations near 1e-4 and the loop never ends (torch's issue 88443)."""
        with no_grad():
            x = _C.empty(self._extended_shape(sample_shape), dtype=_C.float64, device=self.loc.device)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r, x).to(self.loc.dtype)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance, 1 - I1(concentration) / I0(concentration)."""
        log_ratio = (_log_modified_bessel_fn(self.concentration, order=1)
                     - _log_modified_bessel_fn(self.concentration, order=0))
        return 1 - log_ratio.exp()
