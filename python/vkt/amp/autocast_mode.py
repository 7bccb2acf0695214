"""vkt.autocast, as torch.autocast: per-thread, nestable autocast state for the cpu and vulkan device types, and
the cast cache. The switch the ops test lives in C (csrc/python/amp.c); this file keeps it in step."""
import functools
import threading
import warnings

from .. import _C

_BITS = {"cpu": 1, "vulkan": 2}
_SUPPORTED = (_C.float16,)  # vkt has no bfloat16, so cpu's default is float16 where torch's is bfloat16


class _State(threading.local):
    def __init__(self):
        self.enabled = {"cpu": False, "vulkan": False}
        self.dtype = {"cpu": _C.float16, "vulkan": _C.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}  # id(fp32 leaf) -> (leaf, its cast): the leaf is held so its id is not reused


_tls = _State()


def _state():
    return _tls


def _check_device(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _BITS:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")


def _sync_mask():
    _C._amp_set_mask(sum(bit for dev, bit in _BITS.items() if _tls.enabled[dev]))


def _cast(t, dtype, st):
    """t.to(dtype), differentiable; fp32 leaves that require grad are cast once per autocast region, as in torch."""
    cacheable = (st.cache_enabled and dtype == st.dtype[t.device.type] and t.dtype == _C.float32
                 and t.requires_grad and t.is_leaf)
    if not cacheable:
        return t.to(dtype)
    hit = st.cache.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    cast = t.to(dtype)
    st.cache[id(t)] = (t, cast)
    return cast


def is_autocast_enabled(device_type="vulkan"):
    _check_device(device_type)
    return _tls.enabled[device_type]


def set_autocast_enabled(device_type, enabled):
    _check_device(device_type)
    _tls.enabled[device_type] = bool(enabled)
    _sync_mask()


def get_autocast_dtype(device_type):
    _check_device(device_type)
    return _tls.dtype[device_type]


def set_autocast_dtype(device_type, dtype):
    _check_device(device_type)
    _tls.dtype[device_type] = dtype


def is_autocast_cache_enabled():
    return _tls.cache_enabled


def set_autocast_cache_enabled(enabled):
    _tls.cache_enabled = bool(enabled)


def clear_autocast_cache():
    _tls.cache.clear()


def autocast_increment_nesting():
    _tls.nesting += 1
    return _tls.nesting


def autocast_decrement_nesting():
    _tls.nesting -= 1
    return _tls.nesting


class autocast:
    """Ops in the region run in `dtype` (float16) or float32 as torch's autocast lists say; a context manager
    or a decorator, per thread, nestable."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled and self.fast_dtype not in _SUPPORTED:
            warnings.warn(f"In {device_type} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{device_type} Autocast only supports dtype of vkt.float16 currently.")
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_dtype(self.device, self.fast_dtype)
        set_autocast_enabled(self.device, self._enabled)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            # a fresh instance per call, so recursive and concurrent calls each restore their own state
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorate_autocast
