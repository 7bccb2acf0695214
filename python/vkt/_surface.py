"""torch's top-level utilities that are not operators: tensor conversion (as_tensor, asarray), dtype queries and
promotion (promote_types, result_type, can_cast, finfo, iinfo), seeds, the determinism flag and print options.
Everything here is host-side Python over vkt's Tensor and dtypes."""
import os

import numpy as np

from . import _C

# ---- conversion


class layout:
    """A tensor's memory layout; vkt has one, vkt.strided (dense with strides), as torch's default."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"vkt.{self.name}"


strided = layout("strided")


def _device_of(device):
    return None if device is None else _C.device(device) if isinstance(device, str) else device


def set_default_device(device):
    """Makes device where creation functions (tensor, zeros, rand, arange, ...; not the *_like ones) make tensors
    without device=, on this thread, as torch's; None puts back cpu. `with vkt.device(d):` does it for a block."""
    if isinstance(device, int) and not isinstance(device, bool):
        device = _C.device("vulkan", device)
    _C._set_default_device(None if device is None else _C.device(device))


def get_default_device():
    """The device creation functions use without device= on this thread: cpu unless set_default_device or a
    `with vkt.device(...)` block says otherwise ("vulkan" as the current adapter, with its index)."""
    return _C._default_device()


def _factory_device(device):
    """device, or where none is given, a default device other than cpu (set_default_device, `with vkt.device`):
    torch's factories that take a tensor (as_tensor, asarray) move it there."""
    if device is None and _C._default_device().type != "cpu":
        return _C._default_device()
    return device


def _same(t, dtype, device):
    return (dtype is None or t.dtype == dtype) and (device is None or t.device == _device_of(device))


def _alias_error(source, dtype):
    from .functional import _type_name

    return ValueError(f"can't alias tensor with dtype '{_type_name(source)}' into dtype '{_type_name(dtype)}'.")


def as_tensor(data, dtype=None, device=None):
    """data as a tensor, sharing memory where it can: a tensor of that dtype and device is returned itself, a
    NumPy array on the host is wrapped, anything else is copied."""
    device = _factory_device(device)
    if isinstance(data, _C.Tensor):
        return data if _same(data, dtype, device) else data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and (device is None or _device_of(device).type == "cpu"):
        t = _C.from_numpy(data)
        return t if dtype is None or dtype == t.dtype else t.to(dtype=dtype)
    return _C.tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """torch.asarray: copy=None shares memory where it can, copy=True always copies, copy=False must share
    (a ValueError where it cannot); requires_grad defaults to the source tensor's, as torch 2.13."""
    device = _factory_device(device)
    if copy is False:
        if isinstance(obj, _C.Tensor):
            source = obj
        elif isinstance(obj, np.ndarray):
            source = _C.from_numpy(obj)
        else:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        if dtype is not None and dtype != source.dtype:
            raise _alias_error(source.dtype, dtype)
        if not _same(source, None, device):
            raise ValueError(f"can't alias tensor from device '{source.device}' to '{_device_of(device)}'.")
        t = source
    elif copy:
        if isinstance(obj, _C.Tensor):
            t = obj.detach().to(device=device or obj.device, dtype=dtype or obj.dtype, copy=True)
        else:
            t = _C.tensor(obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad is None:
        requires_grad = isinstance(obj, _C.Tensor) and obj.requires_grad
    if requires_grad and not t.requires_grad:
        t.requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D cpu tensor over a buffer's memory (not copied), as torch.frombuffer: count elements of dtype (where
    count is negative, all that follow offset bytes), with torch's checks and ValueErrors."""
    try:
        length = memoryview(buffer).nbytes
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    size = dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} "
                         f"bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({length} bytes)")
    t = _C.from_numpy(np.frombuffer(buffer, dtype=str(dtype).split(".")[-1], count=count, offset=offset))
    return t.requires_grad_(True) if requires_grad else t


def typename(obj):
    """torch.typename: a tensor's type() ("vkt.FloatTensor"), else where the object or its class is defined, as
    module.qualified_name (the name alone for builtins)."""
    if isinstance(obj, _C.Tensor):
        return obj.type()
    named = obj if hasattr(obj, "__qualname__") or hasattr(obj, "__name__") else type(obj)
    module = getattr(named, "__module__", "") or ""
    name = getattr(named, "__qualname__", None) or named.__name__
    return name if module in ("", "builtins") else f"{module}.{name}"


def is_storage(obj):
    """False: vkt has no storage objects (a tensor's memory is reached through the tensor)."""
    return False


def clone(input, *, memory_format=None):
    return input.clone() if memory_format is None else input.clone(memory_format=memory_format)


def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


def _tensor_arg(name, value):
    if not isinstance(value, _C.Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(value).__name__}")
    return value


def is_floating_point(input):
    return _tensor_arg("is_floating_point", input).dtype.is_floating_point


def is_complex(input):
    _tensor_arg("is_complex", input)
    return False  # vkt has no complex dtypes


def numel(input):
    return _tensor_arg("numel", input).numel()


def get_default_dtype():
    """The float dtype that Python floats, factories without dtype= and integer -> float promotions make."""
    return _C._get_default_dtype()


def set_default_dtype(d, /):
    """Makes d (float32, float64 or float16) the default float dtype, for the whole process as torch's."""
    _C._set_default_dtype(d)


# ---- dtype promotion and limits


def _dtype_arg(name, value):
    if not isinstance(value, _C.dtype):
        raise TypeError(f"{name}(): argument must be vkt.dtype, not {type(value).__name__}")
    return value


def promote_types(type1, type2):
    from .functional import _promote

    return _promote(_dtype_arg("promote_types", type1), _dtype_arg("promote_types", type2))


def result_type(tensor, other):
    from .functional import _result_type

    return _result_type(tensor, other)


def can_cast(from_, to):
    """torch's rule: no float to integer, nothing but bool to bool."""
    _dtype_arg("can_cast", from_), _dtype_arg("can_cast", to)
    if from_.is_floating_point and not to.is_floating_point:
        return False
    return not (to == _C.bool and from_ != _C.bool)


class finfo:
    """The limits of a float dtype, with torch.finfo's fields (from NumPy's finfo of the same type)."""

    def __init__(self, type=None):
        type = get_default_dtype() if type is None else type
        if not isinstance(type, _C.dtype) or not type.is_floating_point:
            raise TypeError("vkt.finfo() requires a floating point input type. Use vkt.iinfo to handle 'vkt.finfo'")
        info = np.finfo(type.numpy_name)
        self.bits, self.dtype = info.bits, type.numpy_name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype, with torch.iinfo's fields."""

    def __init__(self, type):
        if not isinstance(type, _C.dtype) or type.is_floating_point or type == _C.bool:
            raise TypeError("vkt.iinfo() requires an integer input type. Use vkt.finfo to handle 'vkt.iinfo'")
        info = np.iinfo(type.numpy_name)
        self.bits, self.min, self.max, self.dtype = info.bits, int(info.min), int(info.max), type.numpy_name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


# ---- seeds and determinism

_deterministic = {"mode": False, "warn_only": False}


def manual_seed(seed):
    """Seeds rand and randn on every device; initial_seed() returns it after."""
    _C.manual_seed(seed)


def _random_seed():
    return int.from_bytes(os.urandom(8), "little") >> 1


def seed():
    """Seeds every device's stream from the OS's randomness and returns the seed."""
    s = _random_seed()
    manual_seed(s)
    return s


def initial_seed():
    """The seed the cpu device's stream was last given (torch's default seed before any)."""
    return _C._rng_initial_seed()


def use_deterministic_algorithms(mode, *, warn_only=False):
    """On, the combining scatters (scatter_add_, index_add_, index_put_(accumulate=True), scatter_reduce, and the
    backward of gather, indexing, index_select and embedding) sort their destinations on the device and combine
    each one's values in index order, the cpu device's order, so they repeat their results bit for bit; off (the
    default, faster), they combine with atomics, whose float sums follow whatever order the GPU ran them in. No
    other vkt shader combines with atomics in an order-dependent way, so no op raises or warns, and warn_only is
    recorded only."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _C._set_deterministic(mode)
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


# ---- printing: _formatting.tensor_repr reads PRINT_OPTS

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, float("inf"), 3, 80)}
PRINT_OPTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: a profile sets all four numbers, then any given one overrides it."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"Invalid profile: {profile}. the profile must be one of {list(_PROFILES)}")
        PRINT_OPTS.update(zip(("precision", "threshold", "edgeitems", "linewidth"), _PROFILES[profile]))
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth}
    PRINT_OPTS.update({k: v for k, v in given.items() if v is not None})
    PRINT_OPTS["sci_mode"] = sci_mode
