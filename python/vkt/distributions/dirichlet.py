"""vkt.distributions.Dirichlet: a point on the simplex with concentration over the last dim; rsample normalises
Gamma draws, so its gradient is the Gamma pathwise gradient carried through the normalisation."""
from .. import _C
from ..nn.functional import one_hot
from ..random import _standard_gamma
from . import constraints
from .exp_family import ExponentialFamily
from .utils import finfo

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        gammas = _standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        # kept inside (0, 1) as torch's sampler keeps it: a GPU's division may round x / x above 1
        info = finfo(gammas.dtype)
        return (gammas / gammas.sum(-1, keepdim=True)).clamp(float(info.tiny), 1 - float(info.eps))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (_C.xlogy(self.concentration - 1.0, value).sum(-1) + _C.lgamma(self.concentration.sum(-1))
                - _C.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, keepdim=True)
        # where every concentration is below 1 the density peaks at a vertex: torch picks the argmax's one-hot
        vertex = one_hot(mode.argmax(dim=-1), num_classes=concentrationm1.shape[-1]).to(mode.dtype)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        return _C.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (_C.lgamma(self.concentration).sum(-1) - _C.lgamma(a0) - (k - a0) * _C.digamma(a0)
                - ((self.concentration - 1.0) * _C.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return _C.lgamma(x).sum(-1) - _C.lgamma(x.sum(-1))
