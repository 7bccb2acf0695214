"""vkt.vulkan: the Vulkan device functions, named and behaving like torch.cuda's."""
from dataclasses import dataclass

from . import _C
from . import random as _random
from ._surface import _random_seed


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    type: str  # 'discrete', 'integrated', 'virtual', 'cpu' or 'other'
    api_version: str
    driver: str
    vendor_id: int
    device_id: int
    total_memory: int  # bytes in the largest device-local heap
    subgroup_size: int
    max_storage_buffer_range: int  # bytes one shader binding can see
    max_shared_memory: int  # bytes per workgroup
    cooperative_matrix: bool
    cooperative_matrix_float16: bool  # vkt's float16 matmul runs on tensor cores
    cooperative_matrix_extension: "str | None"  # the extension it goes through, or None
    cooperative_matrix2: bool  # ... and large float16 products on workgroup-scope matrices (VK_NV_cooperative_matrix2)
    shader_float64: bool
    shader_int64: bool
    shader_float16: bool
    storage_8bit: bool
    push_descriptor: bool
    float32_atomic_add: bool  # VK_EXT_shader_atomic_float: scatter adds float32 natively, else compare-and-swap
    int64_atomics: bool  # shaderBufferInt64Atomics: scatter combines float64 and int64 atomically, else by sorting
    float_controls: bool  # float32 shaders keep IEEE 754's signed zeros, infinities and NaNs (SignedZeroInfNanPreserve)


def is_available():
    """Whether a Vulkan loader and at least one adapter exist."""
    return _C._is_available()


def unavailable_reason():
    """Why Vulkan is not available ('' when it is)."""
    return _C._unavailable_reason()


def device_count():
    """The number of Vulkan adapters; vulkan:N counts them best first."""
    return _C._device_count()


def get_device_properties(device=None):
    return DeviceProperties(**_C._device_properties(device))


def get_device_name(device=None):
    return _C._device_properties(device)["name"]


def current_device():
    """The adapter index that "vulkan" means: VKT_DEVICE's choice, the best adapter, or set_device's."""
    return _C._current_device()


def set_device(device):
    _C._set_device(device)


def synchronize(device=None):
    """Waits until every operation recorded on the device has finished."""
    _C._synchronize(device)


def memory_stats(device=None):
    return _C._memory_stats(device)


def memory_allocated(device=None):
    """Bytes held by live tensors (each rounded up to 4 bytes)."""
    return _C._memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return _C._memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the driver."""
    return _C._memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return _C._memory_stats(device)["reserved_bytes.all.peak"]


def empty_cache(device=None):
    """Gives cached blocks that no tensor uses back to the driver."""
    _C._empty_cache(device)


def reset_peak_memory_stats(device=None):
    _C._reset_peak_memory_stats(device)


def set_memory_limit(nbytes, device=None):
    """Caps the bytes the allocator may reserve (None: no cap); past it, OutOfMemoryError."""
    _C._set_memory_limit(nbytes, device)


def validation_messages():
    """Returns and clears the Khronos validation layer's messages (collected when VKT_VALIDATION=1)."""
    return _C._validation_messages()


def validation_enabled():
    return _C._validation_enabled()


def fallback_stats(by_reason=False):
    """How often each op took the CPU fallback instead of a shader: {op_name: count}, or with
    by_reason {(op_name, reason): count}."""
    return _C._fallback_stats(by_reason)


def reset_fallback_stats():
    _C._reset_fallback_stats()


def set_fusion(enabled):
    """Turns automatic fusion on or off (VKT_FUSION=0 starts with it off). On, an elementwise op on a
    Vulkan tensor records nothing at once: its result is pending, and the chain of pending ops under a
    value becomes one kernel when the value is needed. Turning it off computes what is pending."""
    _C._set_fusion(bool(enabled))


def fusion_enabled():
    return _C._fusion_enabled()


_dispatch_base = {}


def kernel_stats(device=None):
    """What the device has run since reset_kernel_stats(): {"dispatches": kernels recorded (fused ones
    included), "fused_launches": launches of fused kernels, "fused_kernels": [(op list, launches), ...]
    one row per fused kernel, e.g. ("mul add relu mul sigmoid", 1)}. Pending ops are not counted until
    they run: synchronize() first to see everything."""
    index, dispatches, launches, kernels = _C._kernel_stats(device)
    return {"dispatches": dispatches - _dispatch_base.get(index, 0), "fused_launches": launches,
            "fused_kernels": kernels}


def reset_kernel_stats(device=None):
    index, dispatches, _, _ = _C._kernel_stats(device)
    _dispatch_base[index] = dispatches
    _C._reset_kernel_stats()


def cache_dir():
    """Where compiled SPIR-V and the pipeline cache are kept."""
    return _C._cache_dir()


def choice_reason():
    """Why the current adapter was chosen."""
    return _C._choice_reason()


# ---- the adapters' random streams, as torch.cuda's default generators: vkt.manual_seed seeds every device's; these
# seed or read an adapter's only (the current one's unless device= says), so the cpu device's draws are unaffected.

def _adapter(device):
    """torch.cuda's device argument: an int, or a device or string whose index (the current adapter's without
    one) is taken."""
    if isinstance(device, int):
        return device
    index = _C.device(device).index
    return current_device() if index is None else index


def manual_seed(seed):
    """Seeds the current adapter's stream; nothing where Vulkan is not available, as torch.cuda's."""
    seed = int(seed)
    if device_count():
        _C._rng_seed(seed, current_device())


def manual_seed_all(seed):
    seed = int(seed)
    for i in range(device_count()):
        _C._rng_seed(seed, i)


def seed():
    """Seeds the current adapter's stream from the OS's randomness."""
    if device_count():
        _C._rng_seed(_random_seed(), current_device())


def seed_all():
    """Seeds every adapter's stream with one seed from the OS's randomness."""
    manual_seed_all(_random_seed())


def initial_seed():
    """The seed the current adapter's stream was last given."""
    return _C._rng_initial_seed(current_device())


def get_rng_state(device="vulkan"):
    """An adapter's stream state, as a uint8 tensor on the cpu device."""
    return _random._state_tensor(_C._rng_state(_adapter(device)))


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state, device="vulkan"):
    _C._set_rng_state(_random._state_bytes(new_state), _adapter(device))


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
