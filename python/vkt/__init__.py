"""vkt: a PyTorch-style `vulkan` device for Python, on any GPU with a Vulkan driver."""
import atexit

from . import _C
from ._C import (OutOfMemoryError, Tensor, arange, bool, device, dtype, empty, empty_like, float16, float32,
                 float64, from_dlpack, from_numpy, full, full_like, int32, int64, manual_seed, ones, ones_like,
                 rand, rand_like, randn, randn_like, tensor, uint8, zeros, zeros_like)
from . import vulkan

atexit.register(_C._shutdown)

__all__ = ["OutOfMemoryError", "Tensor", "arange", "bool", "device", "dtype", "empty", "empty_like", "float16",
           "float32", "float64", "from_dlpack", "from_numpy", "full", "full_like", "int32", "int64",
           "manual_seed", "ones", "ones_like", "rand", "rand_like", "randn", "randn_like", "tensor", "uint8",
           "vulkan", "zeros", "zeros_like"]
