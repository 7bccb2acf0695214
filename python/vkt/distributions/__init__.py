"""vkt.distributions: probability distributions with torch.distributions' API (constructor arguments and checks,
shapes, sample/rsample, log_prob, cdf/icdf, entropy, KL), all computed with vkt ops on the parameters' device, so
gradients flow through rsample, log_prob, entropy and kl_divergence."""
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .cauchy import Cauchy
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gumbel import Gumbel
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Categorical", "Cauchy", "Distribution", "Exponential", "ExponentialFamily", "Gumbel", "Independent",
    "Laplace", "LogNormal", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "Uniform",
    "constraints", "kl_divergence", "register_kl",
]
