"""vkt.amp: automatic mixed precision, as torch.amp: autocast regions and the GradScaler."""
from .autocast_mode import (  # noqa: F401
    autocast, clear_autocast_cache, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled,
    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled,
)
from .grad_scaler import GradScaler, OptState  # noqa: F401


def _install():
    """Gives the listed ops autocast's policy; vkt's __init__ calls it once vkt.nn and vkt.linalg exist."""
    import sys

    from . import _policy

    _policy.install(sys.modules[__name__.rpartition(".")[0]])
