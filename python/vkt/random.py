"""vkt.random: Generator, a random-number generator object with torch.Generator's API.

It serves the host-side randomness of vkt.utils.data (shuffling, random_split, samplers) and the
generator= argument of rand, randn, randint and randperm: a NumPy PCG64 stream seeded by manual_seed,
whose state travels as a uint8 tensor like torch's. Values drawn from a Generator are made on the host
and copied to the tensor's device; without one, those functions draw on the device from vkt.manual_seed's
stream.
"""
import functools
import os

import numpy as np

from . import _C

__all__ = ["Generator", "get_rng_state", "set_rng_state"]


def get_rng_state():
    """The state of the stream that rand, randn and dropout draw from without a generator, as a uint8 tensor."""
    return _C.tensor(np.frombuffer(_C._rng_state(), dtype=np.uint8).copy())


def set_rng_state(new_state):
    """Puts back a state get_rng_state returned: the draws after it repeat."""
    if not isinstance(new_state, _C.Tensor) or str(new_state.dtype) != "vkt.uint8":
        raise TypeError("RNG state must be a vkt.uint8 Tensor")
    _C._set_rng_state(np.asarray(new_state.cpu()).tobytes())

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
        if generator is None:
            return create(*args, **kwargs)
        if not isinstance(generator, Generator):
            raise TypeError(f"{create.__name__}(): argument 'generator' must be vkt.Generator, not "
                            f"{type(generator).__name__}")
        out, sample = draw(np.random.Generator(generator._bits), args, dict(kwargs))
        values = np.asarray(sample(tuple(out.shape)))
        return out.copy_(_C.tensor(values.astype(np.float64 if out.dtype.is_floating_point else np.int64)))
    return wrapped


DRAWS = {"rand": _draw_rand, "randn": _draw_randn, "randint": _draw_randint, "randperm": _draw_randperm}
