"""vkt.utils: utilities as torch.utils names them (vkt.utils.data: datasets, samplers, DataLoader;
vkt.utils.checkpoint: activation checkpointing)."""
from . import checkpoint, data  # noqa: F401
