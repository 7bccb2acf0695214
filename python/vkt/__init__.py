"""vkt: a PyTorch-style `vulkan` device for Python, on any GPU with a Vulkan driver."""
import atexit

from . import _C
from ._C import *  # noqa: F401,F403  Tensor, dtypes, creation functions and every operator
from . import nn, vulkan  # noqa: E402

atexit.register(_C._shutdown)
