"""vkt.random: Generator, a random-number generator object with torch.Generator's API.

It serves the host-side randomness of vkt.utils.data (shuffling, random_split, samplers) and the
generator= argument of rand, randn, randint and randperm: a NumPy PCG64 stream seeded by manual_seed,
whose state travels as a uint8 tensor like torch's. Values drawn from a Generator are made on the host
and copied to the tensor's device; without one, those functions draw on the device from vkt.manual_seed's
stream.
"""
import contextlib
import functools
import os
import threading

import numpy as np

from . import _C
from . import autograd as _autograd

__all__ = ["Generator", "get_rng_state", "set_rng_state"]


# ---- vkt.func.vmap's randomness flag: each vmap running on this thread pushes its randomness; while any level is
# 'error', the device's draws (C) raise torch's error, and so do the draws made here (a Generator's, poisson).

class _VmapRandomness(threading.local):
    modes = ()  # the randomness of each vmap running on this thread, outermost first


_vmap_randomness = _VmapRandomness()
_VMAP_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                      "'different' randomness flags on vmap or perform the randomness operation out of vmap")


@contextlib.contextmanager
def _vmap_randomness_mode(mode):
    outer = _vmap_randomness.modes
    _vmap_randomness.modes = outer + (mode,)
    _C._rng_forbid("error" in _vmap_randomness.modes)
    try:
        yield
    finally:
        _vmap_randomness.modes = outer
        _C._rng_forbid("error" in outer)


def _check_random():
    """Raises torch's error where a vmap with randomness='error' runs on this thread (any level of a nested one)."""
    if "error" in _vmap_randomness.modes:
        raise RuntimeError(_VMAP_RANDOM_ERROR)


# ---- the devices' streams: rand, randn, dropout, ... without a generator draw from the stream of the device they
# make the tensor on, one per device as torch's default generators (vkt.vulkan.get_rng_state has the adapters').

def _state_tensor(raw):
    return _C.tensor(np.frombuffer(raw, dtype=np.uint8).copy(), device="cpu")


def _state_bytes(new_state):
    if not isinstance(new_state, _C.Tensor) or new_state.dtype != _C.uint8:
        raise TypeError("RNG state must be a vkt.uint8 Tensor")
    return np.asarray(new_state.cpu()).tobytes()


def get_rng_state():
    """The state of the cpu device's stream, as a uint8 tensor (on the cpu device)."""
    return _state_tensor(_C._rng_state())


def set_rng_state(new_state):
    """Puts back a state get_rng_state returned: the draws after it repeat."""
    _C._set_rng_state(_state_bytes(new_state))


def _stream_devices():
    """The devices with a stream: cpu (None) and each Vulkan adapter."""
    return [None, *range(_C._device_count())]


def _all_states():
    """Every device's stream state, for code that replays draws (checkpoint's recomputation, vmap's 'same')."""
    return [(d, _C._rng_state(d)) for d in _stream_devices()]


def _set_all_states(states):
    for device, raw in states:
        _C._set_rng_state(raw, device)

_DEFAULT_SEED = 67280421310721  # torch.Generator's initial seed
_STATE_BYTES = 48  # seed (8), PCG64 state (16) and increment (16), has_uint32 (4), uinteger (4)


def _seed_u64(seed):
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    if not -(1 << 63) <= seed < 1 << 64:
        raise ValueError("Overflow when unpacking long long")
    return seed % (1 << 64)


class Generator:
    """Generator(device="cpu"): a seeded stream of random numbers for the data utilities (host side on
    every device, as torch's CPU generator)."""

    def __init__(self, device="cpu"):
        self.device = _C.device(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        self._seed = _seed_u64(seed)
        self._bits = np.random.PCG64(self._seed)
        return self

    def seed(self):
        """Seeds the generator from the operating system's entropy and returns that seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        s = self._bits.state
        words = [self._seed, s["state"]["state"], s["state"]["inc"]]
        raw = b"".join(w.to_bytes(n, "little") for w, n in zip(words, (8, 16, 16)))
        raw += s["has_uint32"].to_bytes(4, "little") + s["uinteger"].to_bytes(4, "little")
        return _C.tensor(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state):
        if not isinstance(new_state, _C.Tensor):
            raise TypeError(f"expected a vkt.uint8 tensor, but got {type(new_state).__name__}")
        if new_state.dtype != _C.uint8:
            raise TypeError("RNG state must be a vkt.uint8 tensor")
        if new_state.numel() != _STATE_BYTES:
            raise RuntimeError(f"Expected a Generator state of size {_STATE_BYTES} but found the input RNG state "
                               f"size to be {new_state.numel()}")
        raw = new_state.cpu().numpy().tobytes()
        self._seed = int.from_bytes(raw[:8], "little")
        self._bits = np.random.PCG64()
        self._bits.state = {"bit_generator": "PCG64",
                            "state": {"state": int.from_bytes(raw[8:24], "little"),
                                      "inc": int.from_bytes(raw[24:40], "little")},
                            "has_uint32": int.from_bytes(raw[40:44], "little"),
                            "uinteger": int.from_bytes(raw[44:48], "little")}
        return self

    def _randperm(self, n):
        """A random permutation of range(n), as a list."""
        return np.random.Generator(self._bits).permutation(n).tolist()

    def _randint(self, high, size):
        """size draws from range(high), as a list."""
        return np.random.Generator(self._bits).integers(0, high, size).tolist()

    def _choice(self, weights, size, replacement):
        """size draws of indices with probabilities proportional to weights."""
        p = np.asarray(weights, dtype=np.float64)
        return np.random.Generator(self._bits).choice(len(p), size, replace=replacement, p=p / p.sum()).tolist()

    def __repr__(self):
        return f"<vkt.Generator object at {id(self):#x}>"


def _global_generator():
    """A fresh Generator seeded from vkt's global random stream, so vkt.manual_seed makes it reproducible."""
    return Generator().manual_seed(int(_C.randint(0, (1 << 63) - 1, ()).item()))


def _draw_rand(rng, args, kwargs):
    return _C.empty(*args, **kwargs), lambda shape: rng.random(shape)


def _draw_randn(rng, args, kwargs):
    return _C.empty(*args, **kwargs), lambda shape: rng.standard_normal(shape)


def _draw_rand_like(rng, args, kwargs):
    """rand_like's tensor (its checks, dtype and layout), whose values the generator's then replace."""
    return _C.rand_like(*args, **kwargs), lambda shape: rng.random(shape)


def _draw_randn_like(rng, args, kwargs):
    return _C.randn_like(*args, **kwargs), lambda shape: rng.standard_normal(shape)


def _draw_randint(rng, args, kwargs):
    """randint(high, size) or randint(low, high, size), as keywords too; int64 unless dtype= says."""
    pos = list(args)
    size = kwargs.pop("size") if "size" in kwargs else pos.pop()
    high = kwargs.pop("high") if "high" in kwargs else pos.pop()
    low = kwargs.pop("low") if "low" in kwargs else (pos.pop() if pos else 0)
    kwargs.setdefault("dtype", _C.int64)
    return _C.empty(size, **kwargs), lambda shape: rng.integers(low, high, shape)


def _draw_randperm(rng, args, kwargs):
    kwargs.setdefault("dtype", _C.int64)
    return _C.empty(*args, **kwargs), lambda shape: rng.permutation(shape[0])


def _with_generator(create, draw):
    """create(..., generator=g): without g, create itself (the device's stream); with g, the values drawn
    from g on the host by draw's sampler and copied into a tensor shaped, typed and placed as create's."""

    @functools.wraps(create)
    def wrapped(*args, generator=None, **kwargs):
        _check_random()
        if generator is None:
            return create(*args, **kwargs)
        if not isinstance(generator, Generator):
            raise TypeError(f"{create.__name__}(): argument 'generator' must be vkt.Generator, not "
                            f"{type(generator).__name__}")
        out, sample = draw(np.random.Generator(generator._bits), args, dict(kwargs))
        values = np.asarray(sample(tuple(out.shape)))
        return out.copy_(_C.tensor(values.astype(np.float64 if out.dtype.is_floating_point else np.int64)))
    return wrapped


DRAWS = {"rand": _draw_rand, "randn": _draw_randn, "randint": _draw_randint, "randperm": _draw_randperm,
         "rand_like": _draw_rand_like, "randn_like": _draw_randn_like}


# ---- sampling from distributions: vkt.bernoulli, normal, multinomial, poisson, randint_like, and the in-place fills
# Tensor.uniform_, normal_, bernoulli_, exponential_, log_normal_, cauchy_, geometric_, random_. Each draws uniform
# or normal values on the tensor's device (from a Generator on the host where one is given) and shapes them there
# with vkt's ops. PyTorch gives none of them a gradient: an in-place fill is recorded, where its tensor is in a
# graph, as a node of PyTorch's name whose gradient to the earlier history is zero.

_rand = _with_generator(_C.rand, _draw_rand)
_randn = _with_generator(_C.randn, _draw_randn)
_randint = _with_generator(_C.randint, _draw_randint)

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int", "int64": "Long",
               "uint8": "Byte", "bool": "Bool"}


def _type_name(dtype):
    return _TYPE_NAMES[str(dtype).split(".")[-1]]


def _draw_dtype(t):
    """The dtype draws for t are made and shaped in: float64 for float64, float32 for the others (float16's sums
    would round, as PyTorch's computes them in float32)."""
    return _C.float64 if t.dtype == _C.float64 else _C.float32


def _uniform(t, generator):
    """Uniform draws in [0, 1), shaped and placed as t."""
    return _rand(*t.shape, dtype=_draw_dtype(t), device=t.device, generator=generator)


def _gaussian(t, generator):
    return _randn(*t.shape, dtype=_draw_dtype(t), device=t.device, generator=generator)


def _floating_only(t, kernel):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_type_name(t.dtype)}\'')


def _positional(name, args, kwargs, params):
    """The values of params ((name, default), ...) from a method's positional and keyword arguments, as PyTorch's
    parser reads them (`from` is a Python keyword, so it arrives in kwargs)."""
    if len(args) > len(params):
        raise TypeError(f"{name}() takes at most {len(params)} arguments ({len(args)} given)")
    values = list(args) + [kwargs.pop(p, d) for p, d in params[len(args):]]
    for p, _ in params[:len(args)]:
        if p in kwargs:
            raise TypeError(f"{name}() got multiple values for argument '{p}'")
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return values


def uniform_(self, *args, generator=None, **kwargs):
    """Tensor.uniform_(from=0, to=1): values drawn from U(from, to)."""
    lo, hi = _positional("uniform_", args, kwargs, (("from", 0.0), ("to", 1.0)))
    _floating_only(self, "check_uniform_bounds")
    if lo > hi:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={lo:g} > to={hi:g}")
    return _C._overwrite(self, _uniform(self, generator) * (hi - lo) + lo, "UniformBackward0")


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Tensor.normal_(mean=0, std=1): values drawn from N(mean, std^2)."""
    _floating_only(self, f"normal_kernel_{self.device.type}")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return _C._overwrite(self, _gaussian(self, generator) * std + mean, "NormalBackward0")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Tensor.log_normal_(mean=1, std=2): exp of values drawn from N(mean, std^2)."""
    _floating_only(self, f"log_normal_{self.device.type}")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _C._overwrite(self, (_gaussian(self, generator) * std + mean).exp(), "LogNormalBackward0")


def exponential_(self, lambd=1.0, *, generator=None):
    """Tensor.exponential_(lambd=1): values drawn from the exponential distribution of rate lambd, as
    -log(1 - u) / lambd (1 - u lies in (0, 1], so the log is finite)."""
    if not self.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_type_name(self.dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    values = (1.0 - _uniform(self, generator)).log() * (-1.0 / lambd)
    return _C._overwrite(self, values, "ExponentialBackward0")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Tensor.cauchy_(median=0, sigma=1): median + sigma * tan(pi * (u - 1/2))."""
    _floating_only(self, f"cauchy_{self.device.type}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    values = ((_uniform(self, generator) - 0.5) * np.pi).tan() * sigma + median
    return _C._overwrite(self, values, "CauchyBackward0")


def geometric_(self, p, *, generator=None):
    """Tensor.geometric_(p): the number of Bernoulli(p) trials up to the first success, ceil(log(1 - u) /
    log(1 - p)), at least 1."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    trials = ((1.0 - _uniform(self, generator)).log() / float(np.log1p(-p))).ceil().clamp(min=1)
    return _C._overwrite(self, trials, "GeometricBackward0")


# The integers random_ draws from by default: every value of an integer dtype from 0, and for a floating dtype
# those its mantissa holds exactly (PyTorch's bounds).
_RANDOM_TOP = {"float32": 1 << 24, "float64": 1 << 53, "float16": 1 << 11, "int32": (1 << 31) - 1,
               "int64": (1 << 63) - 1, "uint8": 255, "bool": 1}
_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1), "uint8": (0, 255),
              "bool": (0, 1)}


def random_(self, *args, generator=None, **kwargs):
    """Tensor.random_(), random_(to), random_(from, to): integers drawn uniformly from [from, to - 1], by default
    [0, the largest value the dtype holds exactly]."""
    name = str(self.dtype).split(".")[-1]
    if not args and not kwargs:
        lo, hi, node = 0, _RANDOM_TOP[name] + 1, "RandomBackward2"
    elif len(args) + len(kwargs) == 1 and (args or "to" in kwargs):
        lo, hi, node = 0, args[0] if args else kwargs["to"], "RandomBackward1"
    else:
        lo, hi = _positional("random_", args, kwargs, (("from", 0), ("to", None)))
        node = "RandomBackward0"
        if hi is None:
            hi = _RANDOM_TOP[name] + 1
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    if name in _INT_RANGE:
        from .nn.functional import _c10_name

        least, most = _INT_RANGE[name]
        if not least <= lo <= most:
            raise RuntimeError(f"from is out of bounds for {_c10_name(self.dtype)}")
        if not least <= hi - 1 <= most:
            raise RuntimeError(f"to - 1 is out of bounds for {_c10_name(self.dtype)}")
    shift = 0  # randint's bounds are int64s: [from, 2^63) is drawn as [from - 1, 2^63 - 1) + 1
    if hi > (1 << 63) - 1:
        shift = 1 if lo > -(1 << 63) else 0  # the whole int64 range draws all values but the largest
        hi -= 1
    values = _randint(lo - shift, hi, tuple(self.shape), dtype=_C.int64, device=self.device, generator=generator)
    return _C._overwrite(self, values + shift if shift else values, node)


def _probabilities_in_range(p, message):
    """Raises RuntimeError(message) unless every element of p lies in [0, 1] (a read from the device, as
    PyTorch's CPU check is)."""
    if p.numel() and not bool(((p >= 0) & (p <= 1)).all()):
        raise RuntimeError(message)


def bernoulli_(self, p=0.5, *, generator=None):
    """Tensor.bernoulli_(p=0.5): each element 1 with probability p (a number, or a tensor broadcast to self's
    shape), else 0."""
    if isinstance(p, _C.Tensor):
        if not p.dtype.is_floating_point:
            raise NotImplementedError(f'"bernoulli_tensor_{self.device.type}_p_" not implemented for '
                                      f"'{_type_name(p.dtype)}'")
        p = p.to(self.device).expand(*self.shape)
        _probabilities_in_range(p, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        node = "BernoulliBackward1"
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        node = "BernoulliBackward2"
    return _C._overwrite(self, _uniform(self, generator) < p, node)


def _recorded(values, sources, node):
    """values as the result of a sampling op of PyTorch's name `node` over sources: where one requires grad, a
    tensor in the graph whose gradient to each source is zero, as PyTorch's samplers have."""
    grads = [s for s in sources if isinstance(s, _C.Tensor) and s.requires_grad and _C.is_grad_enabled()]
    if not grads:
        return values
    zero = grads[0] * 0
    for s in grads[1:]:
        zero = zero + s * 0
    if tuple(zero.shape) != tuple(values.shape):
        zero = zero.expand(*values.shape).contiguous()
    return _C._overwrite(zero, values, node)


def bernoulli(input, p=None, *, generator=None):
    """vkt.bernoulli(input): each element 1 with probability input[i], else 0, in input's dtype; with p, each with
    probability p, shaped as input."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"bernoulli_tensor_{input.device.type}_p_" not implemented for '
                                  f"'{_type_name(input.dtype)}'")
    if p is not None:
        return bernoulli_(_C.empty_like(input), p, generator=generator)
    _probabilities_in_range(input, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    values = (_uniform(input, generator) < input).to(input.dtype)
    return _recorded(values, [input], "BernoulliBackward0")


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """vkt.normal(mean, std): draws from N(mean, std^2), mean and std tensors (broadcast together) or numbers;
    normal(mean, std, size) with two numbers draws size values."""
    mt, st = isinstance(mean, _C.Tensor), isinstance(std, _C.Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() missing required argument 'size' when mean and std are numbers")
        out = _C.empty(size, dtype=dtype, device=device)
        normal_(out, mean, std, generator=generator)
        return out.requires_grad_(requires_grad) if requires_grad else out
    if size is not None:
        raise TypeError("normal(): size is only accepted with a number mean and std")
    if st:
        if std.numel() and not bool((std >= 0).all()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    like = mean if mt else std
    shape = tuple(like.shape)
    if mt and st:
        try:
            shape = np.broadcast_shapes(tuple(mean.shape), tuple(std.shape))
        except ValueError:
            mean.detach() + std.detach()  # raises PyTorch's message for shapes that do not broadcast
    draws = _randn(*shape, dtype=_draw_dtype(like), device=like.device, generator=generator)
    plain = [v.detach() if isinstance(v, _C.Tensor) else v for v in (mean, std)]
    values = (draws * plain[1] + plain[0]).to(like.dtype)
    return _recorded(values, [mean, std], "NormalBackward3" if mt and st else "NormalBackward1" if mt
                     else "NormalBackward2")


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """vkt.multinomial(input, num_samples, replacement=False): for each row of input (1-d or 2-d, non-negative
    weights, not necessarily summing to 1), num_samples indices drawn with probability proportional to the
    weights, as int64. With replacement each draw inverts the row's cumulative sum; without, the indices of
    the num_samples largest keys log(u) / w (Efraimidis and Spirakis), which is drawing one at a time without
    putting back."""
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_type_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    w = (input if input.dim() == 2 else input.unsqueeze(0)).detach().to(_draw_dtype(input))
    total = w.sum(-1, keepdim=True)
    finite = ((w >= 0) & (w < float("inf"))).all()
    if w.numel() and not bool(finite & (total > 0).all()):  # one read from the device; a second only to say why
        if not bool(finite):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = w.shape[0]
    if replacement:
        cdf = w.cumsum(-1)
        u = _rand(rows, num_samples, dtype=w.dtype, device=w.device, generator=generator) * cdf[:, -1:]
        picks = _C.searchsorted(cdf, u, right=True).clamp(max=n - 1)
    else:
        u = _rand(rows, n, dtype=w.dtype, device=w.device, generator=generator)
        picks = (u.log() / w).topk(num_samples, -1).indices
    return picks if input.dim() == 2 else picks.squeeze(0)


def poisson(input, generator=None):
    """vkt.poisson(input): a draw from Poisson(rate) for each rate in input, in input's dtype, on input's device (by
    torch's samplers: a product of uniforms below 10, Hormann's PTRS above), from generator's stream or vkt's own."""
    _check_random()
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"poisson_{input.device.type}" not implemented for \'{_type_name(input.dtype)}\'')
    from .distributions.negative_binomial import _poisson  # the distributions import this module
    rates = input.detach().to(_draw_dtype(input))
    if bool(((rates < 0) | rates.isnan()).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    out = _poisson(rates, generator).to(input.dtype)
    return _recorded(out, [input], "PoissonBackward0")


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, generator=None,
                 memory_format=None):
    """vkt.randint_like(input, high) / (input, low, high): integers from [low, high) shaped as input, in its dtype
    and on its device unless dtype or device say otherwise, laid out as empty_like's memory_format says (by default
    with input's strides where input is dense, as PyTorch's preserve_format)."""
    if high is None:
        low, high = 0, low
    values = _randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                      generator=generator)
    like = _C.empty_like(input, dtype=values.dtype, device=values.device, memory_format=memory_format)
    out = values if like.stride() == values.stride() else like.copy_(values)
    return out.requires_grad_(requires_grad) if requires_grad else out


__all__ += ["bernoulli", "normal", "multinomial", "poisson", "randint_like"]


# ---- vkt._standard_gamma: Gamma(alpha, 1) draws with torch's pathwise gradient in alpha, which Gamma, Beta,
# Dirichlet and StudentT's rsample differentiate through.

def _gamma_rounds(alpha, generator):
    """Gamma(alpha, 1) draws for alpha >= 1 by Marsaglia and Tsang (2000): each round proposes d (1 + c z)^3 for
    every element still waiting and keeps those accepted; a round accepts over 95% of them, so few rounds run (one
    read from the device each, to see whether any still wait)."""
    d = alpha - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    out = _C.zeros_like(alpha)
    waiting = _C.ones_like(alpha, dtype=_C.bool)
    while True:
        z = _gaussian(alpha, generator)
        u = 1.0 - _uniform(alpha, generator)
        y = 1.0 + c * z
        v = y * y * y
        zz = z * z
        accept = (y > 0) & ((u < 1.0 - 0.0331 * zz * zz) | (u.log() < 0.5 * zz + d * (1.0 - v + v.log())))
        taken = accept & waiting
        out = _C.where(taken, d * v, out)
        waiting = waiting & ~accept
        if not bool(waiting.any()):
            return out


def _standard_gamma_grad(alpha, x):
    """d x / d alpha at a draw x of Gamma(alpha, 1), holding its CDF fixed: -(d CDF / d alpha) / pdf, as torch's
    standard_gamma_grad_one approximates it (a Taylor series for x < 0.8, Rice's saddle point expansion for
    alpha > 8, a bivariate rational fit between). Each regime is computed everywhere and where() picks one."""
    alpha, x = alpha.detach(), x.detach()
    # x < 0.8: CDF and d CDF / d alpha from the series of the lower incomplete gamma function, divided by the pdf
    # x^(alpha-1) e^-x in closed form (x^alpha / pdf = x e^x), which keeps small x from underflowing
    numer = _C.ones_like(x)
    denom = alpha
    series1, series2 = 1.0 / denom, 1.0 / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    small = -(x * x.exp()) * ((x.log() - _C.digamma(alpha)) * series1 - series2)
    small = _C.where(small == small, small, 0.0)  # torch's answer where x = 0 makes it nan
    # alpha > 8: Rice's saddle point expansion, with its own form near the mode
    near = (1 + 24 * alpha * (1 + 12 * alpha)) * (1440 * alpha * alpha + 6 * x * (53 - 120 * x)
                                                   - 65 * x * x / alpha + alpha * (107 + 3600 * x))
    near = near / (1244160 * alpha.pow(4))
    root = (8 * alpha).sqrt()
    term2 = root / (alpha - x)
    term3 = (x - alpha - alpha * (x / alpha).log()).pow(-1.5)
    term23 = _C.where(x < alpha, term2 - term3, term2 + term3)
    term1 = (x / alpha).log() * term23 - (2 / alpha).sqrt() * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * x * term1 / root
    large = _C.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near, far)
    # otherwise: exp(p(u, v) / q(u, v)) in u = log(x / alpha), v = log(alpha)
    u, v = (x / alpha).log(), alpha.log()
    coef = [_RATIONAL_COEF[0][i] + u * (_RATIONAL_COEF[1][i] + u * _RATIONAL_COEF[2][i]) for i in range(8)]
    p = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]))
    q = coef[4] + v * (coef[5] + v * (coef[6] + v * coef[7]))
    rational = (p / q).exp()
    return _C.where(x < 0.8, small, _C.where(alpha > 8, large, rational))


_RATIONAL_COEF = [
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07],
]


class _StandardGamma(_autograd.Function):
    @staticmethod
    def forward(ctx, alpha, generator):
        work = alpha.to(_draw_dtype(alpha))
        small = work < 1
        # alpha < 1 draws from Gamma(alpha + 1) times u^(1/alpha), so the rounds' acceptance stays high
        x = _gamma_rounds(_C.where(small, work + 1, work), generator)
        boost = (1.0 - _uniform(work, generator)).pow(work.reciprocal())
        x = _C.where(small, x * boost, x)
        tiny = float(np.finfo(str(work.dtype).split(".")[-1]).tiny)
        x = _C.where(work == 0, 0.0, x.clamp(min=tiny)).to(alpha.dtype)  # never 0 but at alpha = 0, as torch's
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x), None


def _standard_gamma(input, generator=None):
    """vkt._standard_gamma(input): a draw from Gamma(input, 1) for each concentration in input, on input's device,
    differentiable in input through the pathwise derivative torch uses."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"gamma_{input.device.type}" not implemented for \'{_type_name(input.dtype)}\'')
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"_standard_gamma(): argument 'generator' must be vkt.Generator, not "
                        f"{type(generator).__name__}")
    return _StandardGamma.apply(input, generator)


__all__ += ["_standard_gamma"]
