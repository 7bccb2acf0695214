"""vkt.nn: Module and its layers, Parameter, and the functions they are made of (vkt.nn.functional)."""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Parameter  # noqa: F401
