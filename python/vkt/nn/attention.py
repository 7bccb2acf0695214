"""vkt.nn.attention: torch.nn.attention's SDPBackend enum and sdpa_kernel context manager. vkt has one implementation
of scaled_dot_product_attention, so choosing a backend is checked and otherwise changes nothing."""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The backends torch can run scaled_dot_product_attention with, by torch's names and numbers (int() gives the
    number). vkt runs every one of them the same way: its own kernels (matmuls with softmax between them)."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self):
        return self.value


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """torch.nn.attention.sdpa_kernel(backends, set_priority=False): backends is an SDPBackend or a list of them
    (AssertionError otherwise, as torch). vkt.nn.functional.scaled_dot_product_attention has a single
    implementation, which runs whatever the backends and their priority are; the context manager changes nothing
    and yields {}, as torch's does."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    yield {}
