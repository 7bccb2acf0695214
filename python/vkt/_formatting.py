"""Tensor.__repr__ in PyTorch's style, formatted by NumPy."""
import sys

import numpy as np

from . import _C
from ._surface import PRINT_OPTS


def _float_formatter(values):
    finite = values[np.isfinite(values)]
    p, sci = PRINT_OPTS["precision"], PRINT_OPTS["sci_mode"]
    if not sci and finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        fmt = lambda x: f"{x:.0f}." if np.isfinite(x) else str(x)
    else:
        big = np.abs(finite).max() if finite.size else 0
        small = np.abs(finite[finite != 0]).min() if np.any(finite != 0) else 1
        if sci is None:
            sci = big >= 1e8 or small < 1e-4 or big / small > 1000
        fmt = (lambda x: f"{x:.{p}e}") if sci else (lambda x: f"{x:.{p}f}")
    width = max((len(fmt(x)) for x in values[:2000]), default=0)
    return lambda x: fmt(x).rjust(width)


def tensor_repr(t):
    a = np.asarray(t)
    suffix = []
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    default = _C._get_default_dtype()
    if t.dtype not in (default, _C.int64, _C.bool) or a.size == 0:
        if not (a.size == 0 and t.dtype == default):
            suffix.append(f"dtype={t.dtype}")
    if a.size == 0 and a.ndim > 1:
        suffix.insert(0, f"size={tuple(a.shape)}")
    try:
        grad_fn = t.grad_fn.name() if t.grad_fn is not None else None
    except RuntimeError:  # a view made in no_grad mode whose base took a history since: PyTorch's repr says so
        grad_fn = "Invalid"
    if grad_fn is not None:
        suffix.append(f"grad_fn=<{grad_fn}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    threshold = min(PRINT_OPTS["threshold"], sys.maxsize)
    opts = {"separator": ", ", "prefix": "tensor(", "threshold": threshold,
            "edgeitems": PRINT_OPTS["edgeitems"], "max_line_width": PRINT_OPTS["linewidth"]}
    if a.dtype.kind == "f":
        opts["formatter"] = {"float_kind": _float_formatter(a.astype(np.float64).ravel())}
    body = np.array2string(a, **opts) if a.ndim else np.array2string(a.reshape(1), **opts)[1:-1].strip()
    body = body.replace(", ..., ", ",  ..., ")  # torch's in-row ellipsis is " ...", NumPy's "..."
    return "tensor(" + ", ".join([body] + suffix) + ")"
