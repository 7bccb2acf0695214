"""vkt.random: Generator, a random-number generator object with torch.Generator's API.

It serves the host-side randomness of vkt.utils.data (shuffling, random_split, samplers): a NumPy PCG64
stream seeded by manual_seed, whose state travels as a uint8 tensor like torch's.
"""
import os

import numpy as np

from . import _C

__all__ = ["Generator"]

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
