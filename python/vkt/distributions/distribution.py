"""vkt.distributions.Distribution: the base class, owning shapes, argument and sample validation (with torch's
ValueError messages), and the defaults that families override."""
import numbers
import warnings

from .. import _C
from ..autograd import no_grad
from . import constraints
from .utils import broadcast_all, lazy_property

__all__ = ["Distribution"]


def _shape(sizes):
    """A shape as a tuple of ints (vkt's shapes are tuples where torch's are torch.Size)."""
    if isinstance(sizes, int):
        return (sizes,)
    return tuple(int(s) for s in sizes)


def _format(t):
    """A tensor as torch's f-string shows it: a 0-d tensor as its number, others as their repr."""
    return format(t.item()) if t.dim() == 0 else str(t)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class Distribution:
    """Distribution(batch_shape=(), event_shape=(), validate_args=None): the abstract base of every family."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turns argument validation on or off for distributions made without validate_args."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _shape(batch_shape)
        self._event_shape = _shape(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with `validate_args=False` "
                              "to turn off validation.",
                              stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # the parameter was given the other way (logits for probs); no need to compute it
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):  # one read from the device, as torch's check
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{_format(value)}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution whose parameters are expanded (views, not copies) to batch_shape."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        """The shape of a sample: sample_shape + batch_shape + event_shape."""
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value):
        """Raises torch's ValueError unless value is a tensor whose shape broadcasts with batch_shape + event_shape
        and whose elements lie in the support."""
        if not isinstance(value, _C.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        actual_shape = tuple(value.shape)
        event_dim_start = len(actual_shape) - len(self._event_shape)
        if actual_shape[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {actual_shape} vs "
                             f"{self._event_shape}.")
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please initialize "
                          "the distribution with `validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {actual_shape}) to be within "
                             f"the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{_format(value)}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        def show(t):
            if t.numel() != 1:
                return str(tuple(t.shape))
            return _format(t)
        names = [k for k in self.arg_constraints if k in self.__dict__]
        return self.__class__.__name__ + "(" + ", ".join(f"{p}: {show(self.__dict__[p])}" for p in names) + ")"


class _Broadcast(Distribution):
    """A family whose parameters, named in _params, are broadcast together into its batch shape (Normal's loc and
    scale, Exponential's rate, ...): their __init__ and expand, as torch writes them out in each such family. The
    batch shape is () where every parameter is a number."""
    _params = ()

    def _init_params(self, values, validate_args):
        for name, value in zip(self._params, broadcast_all(*values)):
            setattr(self, name, value)
        numbers_only = all(isinstance(v, numbers.Number) for v in values)
        shape = () if numbers_only else getattr(self, self._params[0]).shape
        super(_Broadcast, self).__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        # the family is the class that derives from _Broadcast: a subclass of it expands as torch's do, through it
        family = next(c for c in type(self).__mro__ if _Broadcast in c.__bases__)
        new = self._get_checked_instance(family, _instance)
        batch_shape = tuple(batch_shape)
        for name in self._params:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        super(_Broadcast, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new
