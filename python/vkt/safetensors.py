"""vkt.safetensors: the safetensors format for vkt tensors, with safetensors.torch's functions.

The format is read and written here (8-byte little-endian header length, JSON header, raw little-endian
data), so vkt needs no safetensors package; every header is checked before any tensor is made, and a
bad file raises SafetensorError (a RuntimeError) saying what is wrong with it.
"""
import json
import math
import struct

import numpy as np

from . import _C

__all__ = ["save", "save_file", "load", "load_file", "SafetensorError"]

_MAX_HEADER_BYTES = 100_000_000  # the safetensors library's limit
_DTYPES = {"F32": "float32", "F64": "float64", "F16": "float16", "I32": "int32", "I64": "int64", "U8": "uint8",
           "BOOL": "bool"}
_CODES = {name: code for code, name in _DTYPES.items()}
_WRITE_ORDER = ("I64", "F64", "F32", "I32", "F16", "U8", "BOOL")  # the safetensors library's, by its dtype enum
# Dtypes the format defines and vkt does not have.
_FOREIGN = {"BF16", "I8", "I16", "U16", "U32", "U64", "C64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
            "F6_E3M2"}


class SafetensorError(RuntimeError):
    """A file or buffer that is not valid safetensors, or holds a dtype vkt does not have."""


# ---- writing ----


def _checked(tensors):
    """tensors' (name, tensor) pairs in the order the safetensors library writes them, so the bytes match."""
    if not isinstance(tensors, dict):
        raise TypeError(f"argument 'tensor_dict': '{type(tensors).__name__}' object is not an instance of 'dict'")
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"argument 'tensor_dict': '{type(name).__name__}' object is not an instance of 'str'")
        if not isinstance(t, _C.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected vkt.Tensor but received {type(t)}")
        if not t.is_contiguous():
            raise ValueError(f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It "
                             "either means you are trying to save tensors which are reference of each other in which "
                             "case it's recommended to save only the full tensors, and reslice at load time, or "
                             "simply call `.contiguous()` on your tensor to pack it before saving.")
    return sorted(tensors.items(), key=lambda item: (_WRITE_ORDER.index(_code(item[1])), item[0]))


def _code(t):
    return _CODES[str(t.dtype).removeprefix("vkt.")]


def _header(items, metadata):
    """The length prefix and JSON header (padded with spaces to 8 bytes) for items, in that order."""
    header = {}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("argument 'metadata': metadata must map str to str")
        header["__metadata__"] = metadata
    offset = 0
    for name, t in items:
        nbytes = t.numel() * t.element_size()
        header[name] = {"dtype": _code(t), "shape": list(t.shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def _payload(t):
    data = np.asarray(t.detach().cpu().numpy(), order="C")
    return data.astype(data.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8)


def save(tensors, metadata=None):
    """The safetensors bytes of tensors (a dict of name to contiguous vkt tensor) with optional str metadata."""
    items = _checked(tensors)
    return b"".join([_header(items, metadata)] + [_payload(t).tobytes() for _, t in items])


def save_file(tensors, filename, metadata=None):
    """Writes tensors (a dict of name to contiguous vkt tensor) to filename in the safetensors format."""
    items = _checked(tensors)
    head = _header(items, metadata)
    with open(filename, "wb") as f:
        f.write(head)
        for _, t in items:
            f.write(_payload(t))


# ---- reading ----


def _bad(problem):
    return SafetensorError(f"Error while deserializing header: {problem}")


def _parse_header(buf):
    """The JSON header of buf, checked for length, encoding and syntax; and where the data starts."""
    if len(buf) < 8:
        raise _bad(f"header too small (the buffer has {len(buf)} bytes, fewer than the 8 of the header's length)")
    n = struct.unpack_from("<Q", buf)[0]
    if n > _MAX_HEADER_BYTES:
        raise _bad(f"header too large ({n} bytes; the limit is {_MAX_HEADER_BYTES})")
    if 8 + n > len(buf):
        raise _bad(f"invalid header length ({n} bytes, past the end of a {len(buf)}-byte buffer)")
    try:
        text = bytes(buf[8:8 + n]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(f"invalid UTF-8 in header: {e}") from None
    if not text.startswith("{"):
        raise _bad("invalid header start (the header is not a JSON object)")
    try:
        header = json.loads(text)
    except json.JSONDecodeError as e:
        raise _bad(f"invalid JSON in header: {e}") from None
    if not isinstance(header, dict):
        raise _bad("invalid JSON in header: not an object")
    return header, 8 + n


def _entry(name, info):
    """(dtype name, shape, begin, end) of one header entry, each field checked."""
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise _bad(f"invalid JSON in header: tensor {name!r} needs exactly dtype, shape and data_offsets")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise _bad(f"invalid JSON in header: tensor {name!r} has shape {shape!r:.80}")
    if (not isinstance(offsets, list) or len(offsets) != 2 or
            not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)):
        raise _bad(f"invalid JSON in header: tensor {name!r} has data_offsets {offsets!r:.80}")
    if code in _FOREIGN:
        raise SafetensorError(f"tensor {name!r} has dtype {code}, which vkt does not have (vkt loads "
                              f"{', '.join(_DTYPES)}); convert it, e.g. to float32, before saving")
    if code not in _DTYPES:
        raise _bad(f"invalid JSON in header: tensor {name!r} has unknown dtype {code!r:.40}")
    return _DTYPES[code], tuple(shape), offsets[0], offsets[1]


def _layout(header, data_bytes):
    """name -> (dtype, shape, begin, end), after checking that the tensors tile the data exactly."""
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise _bad("invalid JSON in header: __metadata__ must map str to str")
    entries = {name: _entry(name, info) for name, info in header.items()}
    end = 0
    for name, (dtype, shape, begin, stop) in sorted(entries.items(), key=lambda e: e[1][2:]):
        if begin != end or stop < begin:
            raise _bad(f"invalid offset for tensor {name!r}: [{begin}, {stop}] does not start where the "
                       f"previous tensor ends ({end})")
        if stop - begin != math.prod(shape) * np.dtype(dtype).itemsize:
            raise _bad(f"tensor invalid info: tensor {name!r} of shape {list(shape)} and dtype {dtype} does not "
                       f"fit its {stop - begin} bytes")
        end = stop
    if end > data_bytes:
        raise _bad(f"tensor data past the end of the buffer (the tensors need {end} bytes of data, the buffer "
                   f"holds {data_bytes})")
    if end < data_bytes:
        raise _bad(f"incomplete metadata, file not fully covered (the tensors use {end} bytes of data, the buffer "
                   f"holds {data_bytes})")
    return entries


def _device(device):
    return _C.device(f"vulkan:{device}" if isinstance(device, int) and not isinstance(device, bool) else device)


def _deserialize(buf, device):
    header, start = _parse_header(buf)
    entries = _layout(header, len(buf) - start)
    out = {}
    for name, (dtype, shape, begin, stop) in entries.items():
        host = np.frombuffer(buf[start + begin:start + stop], np.dtype(dtype).newbyteorder("<"))
        host = host.astype(host.dtype.newbyteorder("="), copy=not host.flags.aligned)
        out[name] = _C.tensor(host.reshape(shape), device=device)
    return out


def load(data):
    """The tensors of safetensors bytes, on the CPU."""
    return _deserialize(memoryview(data), _C.device("cpu"))


def load_file(filename, device="cpu"):
    """The tensors of a safetensors file, on device ("cpu", "vulkan", "vulkan:N", a vkt.device or an index)."""
    target = _device(device)
    with open(filename, "rb") as f:
        return _deserialize(memoryview(f.read()), target)
