"""vkt.save and vkt.load: objects holding tensors (state dicts, optimizer states, checkpoints) to a file.

The file is a zip archive (stored, not compressed, so every entry has its CRC-32 checked on reading):
vkt/version, vkt/data.pkl (the object, pickled with each tensor, dtype and device as a persistent id)
and vkt/data/<key>, each tensor's elements, C-contiguous and little-endian. A view is saved as its own
elements only; a tensor that appears twice in the object is saved once and loads as one tensor; a
Tensor subclass (vkt.nn.Parameter) loads as that subclass. With weights_only=True the unpickler builds
nothing but tensors (of vkt.nn.Parameter too), dtypes, devices and plain containers.
vkt.load also reads what torch.save writes (PyTorch's zip format), rebuilding each tensor from its storage.
"""
import contextlib
import functools
import io
import math
import os
import pickle
import zipfile

import numpy as np

from . import _C

__all__ = ["save", "load"]

_VERSION = b"1"
_ROOT = "vkt/"
_DTYPES = ("float32", "float64", "float16", "int32", "int64", "uint8", "bool")
# The globals weights_only=True lets a pickle name: plain containers and values, never code.
_SAFE_GLOBALS = {("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
                 ("builtins", "complex"), ("builtins", "slice"), ("builtins", "range"), ("builtins", "bytearray")}


@contextlib.contextmanager
def _opened(f, mode):
    """A binary file for f: a path is opened (and closed after), a file object is used as it is."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, mode) as fh:
            yield fh
    else:
        yield f


# ---- saving ----


class _Saver(pickle.Pickler):
    def __init__(self, file, archive):
        super().__init__(file, protocol=4)
        self._archive = archive
        self._keys = {}  # id(tensor) -> key; the tensors themselves stay in _held while saving
        self._held = []

    def persistent_id(self, obj):
        if isinstance(obj, _C.dtype):
            return ("dtype", str(obj).removeprefix("vkt."))
        if isinstance(obj, _C.device):
            return ("device", str(obj))
        if isinstance(obj, _C.Tensor):
            return self._tensor_id(obj)
        return None

    def _tensor_id(self, t):
        key = self._keys.get(id(t))
        if key is None:
            key = self._keys[id(t)] = str(len(self._keys))
            self._held.append(t)
            data = np.asarray(t.detach().cpu().numpy(), order="C")
            with self._archive.open(_ROOT + "data/" + key, "w", force_zip64=True) as out:
                out.write(data.astype(data.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8))
        subclass = None if type(t) is _C.Tensor else type(t)  # pickled by name, so find_class vets it at load
        return ("tensor", key, str(t.dtype).removeprefix("vkt."), tuple(t.shape), str(t.device), t.requires_grad,
                subclass)


def save(obj, f):
    """Saves obj (tensors, nested dicts/lists/tuples of them, numbers, strings; with weights_only=False
    at load, any picklable object) to f, a path or a binary file object opened for writing."""
    parent = os.path.dirname(os.path.abspath(f)) if isinstance(f, (str, os.PathLike)) else None
    if parent is not None and not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist.")
    with _opened(f, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(_ROOT + "version", _VERSION)
        pickled = io.BytesIO()
        _Saver(pickled, archive).dump(obj)
        archive.writestr(_ROOT + "data.pkl", pickled.getvalue())


# ---- loading ----


class _WeightsOnlyError(pickle.UnpicklingError):
    pass


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, loader):
        super().__init__(file)
        self._loader = loader
        self.persistent_load = loader.persistent_load

    def find_class(self, module, name):
        known = self._loader.known_global(module, name)
        if known is not None:
            return known
        if self._loader.weights_only and (module, name) not in _SAFE_GLOBALS and (module, name) != _parameter():
            raise _WeightsOnlyError(
                f"Weights only load failed: the file names GLOBAL {module}.{name}, which vkt.load with "
                "weights_only=True does not load. Re-running vkt.load with weights_only=False will likely "
                "succeed, but it can result in arbitrary code execution; do it only if you trust the file's source.")
        return super().find_class(module, name)


def _parameter():
    """(module, name) of vkt.nn.Parameter, the one class weights_only=True loads, where vkt.nn defines it."""
    from . import nn

    cls = getattr(nn, "Parameter", None)
    return None if cls is None else (cls.__module__, cls.__qualname__)


def _restore_location(map_location):
    """A function from a CPU tensor and the device it was saved from to the tensor where it belongs."""
    if map_location is None:
        return lambda t, location: t.to(_saved_device(location))
    if isinstance(map_location, (str, _C.device)):
        target = _C.device(map_location)
        return lambda t, location: t.to(target)
    if isinstance(map_location, dict):
        return lambda t, location: t.to(_saved_device(str(map_location.get(location, location))))
    if callable(map_location):
        def restore(t, location):
            result = map_location(t, location)
            return t.to(_saved_device(location)) if result is None else result
        return restore
    raise TypeError(f"map_location should be None, a string, a vkt.device, a dict or a callable, "
                    f"but got {type(map_location).__name__}")


def _saved_device(location):
    try:
        device = _C.device(location)
    except RuntimeError:
        raise RuntimeError(f"vkt.load: the file's tensors were saved on {location!r:.40}, a device vkt does not "
                           f"have; pass map_location, e.g. 'cpu', 'vulkan' or {{{location!r:.40}: 'vulkan'}}") from None
    if device.type != "vulkan":
        return device
    from . import vulkan

    if not vulkan.is_available():
        raise RuntimeError("Attempting to deserialize object on a Vulkan device but vkt.vulkan.is_available() is "
                           "False. If you are running on a machine without Vulkan, please use vkt.load with "
                           "map_location='cpu' to map your tensors to the CPU.")
    if (device.index or 0) >= vulkan.device_count():
        raise RuntimeError(f"Attempting to deserialize object on Vulkan device {device.index} but "
                           f"vkt.vulkan.device_count() is {vulkan.device_count()}. Please use vkt.load with "
                           "map_location to map your tensors to an existing device.")
    return device


class _Loader:
    """Reads a vkt.save archive whose entries are under root."""

    def __init__(self, archive, root, restore, weights_only):
        self._archive = archive
        self._root = root
        self._restore = restore
        self.weights_only = weights_only
        self._tensors = {}  # key -> the loaded tensor, so a tensor saved once loads once
        self._raised = None  # what _own's call raised, to pass it on as it is

    def _read(self, name):
        try:
            return self._archive.read(self._root + name)
        except KeyError:
            raise RuntimeError(f"vkt.load: the archive has no entry {self._root + name}; the file is incomplete "
                               "or was not written by vkt.save") from None
        except Exception as e:
            raise RuntimeError(f"vkt.load: cannot read {self._root + name}: the file is corrupt ({e})") from e

    def check_version(self):
        version = self._read("version")
        if version != _VERSION:
            raise RuntimeError(f"vkt.load: unsupported file version {version[:16]!r} (this vkt reads {_VERSION!r})")

    def known_global(self, module, name):
        """What a global the pickle names stands for in this format (None: the unpickler decides)."""
        return None

    def run(self):
        self.check_version()
        unpickler = _Unpickler(io.BytesIO(self._read("data.pkl")), self)
        try:
            return unpickler.load()
        except _WeightsOnlyError:
            raise
        except Exception as e:
            if e is self._raised:
                raise
            raise RuntimeError(f"vkt.load: the pickled object in the file is corrupt ({type(e).__name__}: {e})") from e

    def persistent_load(self, pid):
        return self._own(self._object, pid)

    def _own(self, fn, *args):
        """fn(*args), remembering what it raises: run passes that on as it is, not as a corrupt pickle."""
        try:
            return fn(*args)
        except Exception as e:
            self._raised = e
            raise

    def _object(self, pid):
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "dtype" and pid[1] in _DTYPES:
            return getattr(_C, pid[1])
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "device" and isinstance(pid[1], str):
            return _C.device(pid[1])
        if _is_tensor_id(pid):
            return self._tensor(*pid[1:])
        raise RuntimeError(f"vkt.load: the file refers to an unknown or malformed object {pid!r:.80}")

    def _tensor(self, key, dtype, shape, location, requires_grad, subclass):
        if key in self._tensors:
            return self._tensors[key]
        data = self._read("data/" + key)
        np_dtype = np.dtype(dtype).newbyteorder("<")
        count = math.prod(shape)
        if len(data) != count * np_dtype.itemsize:
            raise RuntimeError(f"vkt.load: tensor {key} of shape {list(shape)} and dtype {dtype} needs "
                               f"{count * np_dtype.itemsize} bytes but the file holds {len(data)}")
        host = _C.tensor(np.frombuffer(data, np_dtype).astype(np_dtype.newbyteorder("="), copy=False).reshape(shape))
        t = self._restore(host, location).detach().requires_grad_(requires_grad)
        if subclass is not None:
            t = _C._make_subclass(subclass, t, requires_grad)
        self._tensors[key] = t
        return t


def _is_tensor_id(pid):
    """Whether pid is ("tensor", key, dtype, shape, saved location, requires_grad, Tensor subclass or None)
    with fields of those kinds."""
    return (isinstance(pid, tuple) and len(pid) == 7 and pid[0] == "tensor" and isinstance(pid[1], str) and
            pid[2] in _DTYPES and isinstance(pid[3], tuple) and all(type(n) is int and n >= 0 for n in pid[3]) and
            isinstance(pid[4], str) and isinstance(pid[5], bool) and
            (pid[6] is None or isinstance(pid[6], type) and issubclass(pid[6], _C.Tensor)))


# ---- PyTorch's format ----

_TORCH_STORAGES = {"FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
                   "IntStorage": "int32", "LongStorage": "int64", "ByteStorage": "uint8", "BoolStorage": "bool"}


class _StorageType:
    """A torch.<name> storage class named in a torch.save pickle; only its name is used."""

    def __init__(self, name):
        self.name = name


def _latin1(text, encoding):
    """_codecs.encode as protocol-2 pickles use it for bytes objects, and nothing else."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise RuntimeError(f"vkt.load: unexpected _codecs.encode({type(text).__name__}, {encoding!r:.20})")
    return text.encode("latin1")


def _rebuild_parameter(data, requires_grad, backward_hooks):
    """torch.nn.Parameter's record: a vkt.nn.Parameter (a tensor requiring grad as saved, where vkt.nn has none)."""
    from . import nn

    if not isinstance(data, _C.Tensor):
        raise RuntimeError("vkt.load: a torch Parameter record without a tensor")
    cls = getattr(nn, "Parameter", None)
    if cls is None:
        return data.requires_grad_(bool(requires_grad))
    return _C._make_subclass(cls, data, bool(requires_grad))


class _TorchLoader(_Loader):
    """Reads what torch.save writes: tensors are views (offset, size, stride) of typed storages."""

    def check_version(self):
        order = self._archive.NameToInfo.get(self._root + "byteorder")
        if order is not None and self._read("byteorder") != b"little":
            raise RuntimeError("vkt.load: the torch.save file is big-endian; vkt reads little-endian files only")

    def known_global(self, module, name):
        if module == "torch" and name.endswith("Storage"):
            return _StorageType(name)
        return {("torch._utils", "_rebuild_tensor_v2"): functools.partial(self._own, self._rebuild_tensor),
                ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
                ("torch", "Size"): tuple, ("_codecs", "encode"): _latin1}.get((module, name))

    def _object(self, pid):
        if (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)
                and isinstance(pid[2], str) and isinstance(pid[3], str) and type(pid[4]) is int and pid[4] >= 0):
            return self._storage(*pid[1:])
        raise RuntimeError(f"vkt.load: the torch.save file refers to an unknown or malformed object {pid!r:.80}")

    def _storage(self, kind, key, location, numel):
        """(elements as a NumPy array, saved location) of storage key, read once."""
        if key not in self._tensors:
            if kind.name not in _TORCH_STORAGES:
                raise RuntimeError(f"vkt.load: the file holds a torch.{kind.name:.40}, whose dtype vkt does not have "
                                   f"(vkt reads {', '.join(_TORCH_STORAGES)})")
            dtype = np.dtype(_TORCH_STORAGES[kind.name]).newbyteorder("<")
            data = self._read("data/" + key)
            if len(data) != numel * dtype.itemsize:
                raise RuntimeError(f"vkt.load: storage {key} of {numel} {kind.name} elements needs "
                                   f"{numel * dtype.itemsize} bytes but the file holds {len(data)}")
            self._tensors[key] = (np.frombuffer(data, dtype), location)
        return self._tensors[key]

    def _rebuild_tensor(self, storage, offset, size, stride, requires_grad, backward_hooks, metadata=None):
        elements, location = storage
        if not _fits(len(elements), offset, size, stride):
            raise RuntimeError(f"vkt.load: a tensor of size {size!r:.60}, stride {stride!r:.60} and offset "
                               f"{offset!r:.20} reaches past its storage of {len(elements)} elements")
        view = np.lib.stride_tricks.as_strided(elements[offset:], size, [n * elements.itemsize for n in stride])
        host = _C.tensor(np.array(view, dtype=elements.dtype.newbyteorder("=")))
        return self._restore(host, location).detach().requires_grad_(bool(requires_grad))


def _fits(numel, offset, size, stride):
    """Whether the view (offset, size, stride) of a storage of numel elements stays inside it."""
    ints = (isinstance(v, tuple) and all(type(n) is int and n >= 0 for n in v) for v in (size, stride))
    if type(offset) is not int or offset < 0 or not all(ints) or len(size) != len(stride):
        return False
    return 0 in size or offset + sum((n - 1) * s for n, s in zip(size, stride)) < numel


def _loader(archive, restore, weights_only):
    """The reader for archive: vkt's format, or PyTorch's (one folder holding data.pkl)."""
    names = archive.namelist()
    if _ROOT + "version" in names:
        return _Loader(archive, _ROOT, restore, weights_only)
    torch_roots = [n[:-len("data.pkl")] for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if torch_roots:
        return _TorchLoader(archive, torch_roots[0], restore, weights_only)
    raise RuntimeError(f"vkt.load: the archive has no entry {_ROOT}version; the file is incomplete or was not "
                       "written by vkt.save or torch.save")


def _open_archive(fh):
    if not (hasattr(fh, "seekable") and fh.seekable()):
        fh = io.BytesIO(fh.read())
    try:
        return zipfile.ZipFile(fh, "r")
    except Exception as e:
        raise RuntimeError(f"vkt.load: the file is not a vkt.save archive, or it is truncated or corrupt ({e})") from e


def load(f, map_location=None, *, weights_only=True):
    """Loads what vkt.save (or torch.save) wrote to f, a path or a binary file object. map_location puts
    the tensors on a device: None (where they were saved), "cpu", "vulkan", a vkt.device, a dict from saved
    location to device, or a callable (tensor on the CPU, saved location) -> tensor or None (None: where
    saved). weights_only=True refuses any pickled class beyond plain containers (pickle.UnpicklingError)."""
    restore = _restore_location(map_location)
    with _opened(f, "rb") as fh, _open_archive(fh) as archive:
        return _loader(archive, restore, weights_only).run()
