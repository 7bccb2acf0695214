"""vkt.nn: Module and its layers, Parameter, and the functions they are made of (vkt.nn.functional)."""
import importlib

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules.lazy import (  # noqa: F401
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear)
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401

# vkt.nn.attention is torch.nn.attention's module (sdpa_kernel). The star import bound the name to modules.attention
# (MultiheadAttention's file), a binding `from . import attention` would keep.
attention = importlib.import_module(".attention", __name__)
