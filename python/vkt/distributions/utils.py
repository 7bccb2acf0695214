"""Helpers the distributions share: broadcasting parameters, probs <-> logits, dtype limits, lazy properties, and
lgamma composed of vkt ops (vkt has no lgamma kernel; Poisson's log_prob and Gumbel's KL need it)."""
import functools
import math
import numbers

import numpy as np

from .. import _C
from .._surface import finfo  # noqa: F401  the distributions take it from here
from ..autograd import enable_grad

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """values as tensors broadcast to one shape; numbers become tensors of the first tensor's dtype and device
    (the default float dtype, on the cpu, where all are numbers)."""
    if not all(isinstance(v, _C.Tensor) or isinstance(v, numbers.Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, _C.Tensor) for v in values):
        options = dict(dtype=_C._get_default_dtype())
        for v in values:
            if isinstance(v, _C.Tensor):
                options = dict(dtype=v.dtype, device=v.device)
                break
        values = [v if isinstance(v, _C.Tensor) else _C.tensor(v, **options) for v in values]
    return _broadcast_tensors(*values)


def _broadcast_tensors(*values):
    """broadcast_tensors through expand, whose backward sums the gradient back over the broadcast dims."""
    try:
        shape = tuple(np.broadcast_shapes(*(tuple(v.shape) for v in values)))
    except ValueError:
        _C.broadcast_tensors(*(v.detach() for v in values))  # raises vkt's message for shapes that do not broadcast
        raise
    return tuple(v if tuple(v.shape) == shape else v.expand(shape) for v in values)


def _standard_normal(shape, dtype, device):
    return _C.empty(tuple(shape), dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """value summed over its rightmost dim dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def clamp_probs(probs):
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ps_clamped.log() - (-ps_clamped).log1p()
    return ps_clamped.log()


def _xlogy(x, y):
    """x * log(y), 0 where x is 0 (as torch.xlogy)."""
    return _C.where(x == 0, 0.0, x * y.log())


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lgamma(x):
    """log Gamma(x) for x > 0: below 8, shifted up by 8 through Gamma(x + 1) = x Gamma(x); then Stirling's series
    to the 1/y^7 term, whose truncation error at y >= 8 is below 1e-11."""
    small = x < 8
    xs = _C.where(small, x, 1.0)  # a harmless stand-in where no shift is taken, so its log stays finite
    prod = xs
    for k in range(1, 8):
        prod = prod * (xs + k)
    y = _C.where(small, x + 8, x)
    r = y.reciprocal()
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 / 1680)))
    return (y - 0.5) * y.log() - y + _HALF_LOG_2PI + series - _C.where(small, prod.log(), 0.0)


class lazy_property:
    """A property computed once per instance on first read (with grad enabled) and then stored on it, so a
    parameter given one way (probs) yields the other (logits) on demand."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class BinaryProbs:
    """probs and logits of a two-outcome parameter, each computed from the other when only one was given (Bernoulli,
    Geometric, Binomial, NegativeBinomial, ContinuousBernoulli), and expand() of such a distribution."""

    def _expand_probs(self, cls, batch_shape, _instance, expanded=(), kept=()):
        """A new cls whose probs or logits (whichever this one holds, and the tensors named in expanded) are views of
        this one's broadcast to batch_shape; the attributes named in kept are shared."""
        from .distribution import Distribution  # a module that imports this one
        new = self._get_checked_instance(cls, _instance)
        batch_shape = tuple(batch_shape)
        for name in expanded:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        for name in kept:
            setattr(new, name, getattr(self, name))
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(batch_shape))
                new._param = getattr(new, name)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new_empty(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)
