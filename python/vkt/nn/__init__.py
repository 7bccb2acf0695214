"""vkt.nn: neural-network functions (vkt.nn.functional)."""
from . import functional  # noqa: F401
