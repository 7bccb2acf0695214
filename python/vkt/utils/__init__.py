"""vkt.utils: utilities as torch.utils names them (vkt.utils.data: datasets, samplers, DataLoader)."""
from . import data  # noqa: F401
