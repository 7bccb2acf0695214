"""vkt.testing: torch.testing's assert_close and make_tensor for vkt tensors. assert_close pairs its inputs as torch
does (None, booleans, Python and NumPy numbers, tensor-likes, nested sequences and mappings), with torch's default
tolerances per dtype, exception types and messages; make_tensor draws torch's default ranges per dtype."""
import cmath
import collections.abc
import math
import warnings

import numpy as np

from . import _C

__all__ = ["assert_close", "make_tensor"]

# {dtype: (rtol, atol)}: torch's defaults for the dtypes vkt has; any other dtype compares exactly.
_DTYPE_PRECISIONS = {_C.float16: (1e-3, 1e-5), _C.float32: (1.3e-6, 1e-5), _C.float64: (1e-7, 1e-7)}
# A Python number compares as a tensor of torch's dtype for its type: int64, float64, complex128.
_NUMBER_PRECISIONS = {int: (0.0, 0.0), float: (1e-7, 1e-7), complex: (1e-7, 1e-7)}
# Lowest to highest: the promoted dtype of two is the later one (torch.promote_types over vkt's dtypes).
_PROMOTION_ORDER = [_C.bool, _C.uint8, _C.int32, _C.int64, _C.float16, _C.float32, _C.float64]
_INTEGRAL = (_C.bool, _C.uint8, _C.int32, _C.int64)
_FLOATING = (_C.float16, _C.float32, _C.float64)


class _Mismatch(Exception):
    """A failed check: the exception type assert_close raises for it, its message, and the path to the failing item
    in nested inputs (torch's ErrorMeta)."""

    def __init__(self, type, msg, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """A pair type cannot take these inputs; the next one is tried."""


def _tolerances(defaults, rtol, atol, id):
    """(rtol, atol): both given, or the loosest of the inputs' defaults; one alone is an error."""
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", id)
    if rtol is not None:
        return rtol, atol
    return max(r for r, _ in defaults), max(a for _, a in defaults)


def _diff_line(kind, diff, idx, tol, equality):
    line = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
    return line + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += _diff_line("absolute", abs_diff, abs_idx, atol, equality)
    msg += _diff_line("relative", rel_diff, rel_idx, rtol, equality)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _tensor_mismatch_msg(actual, expected, matches, rtol, atol):
    """Counts the mismatches and finds the greatest absolute and relative differences among them (int64 for
    integral inputs), with their indices."""
    def unravel(flat_index):
        index = []
        for size in reversed(matches.shape):
            flat_index, mod = divmod(flat_index, size)
            index.append(mod)
        return tuple(reversed(index))

    numel = matches.numel()
    total = numel - int(matches.sum())
    extra = f"Mismatched elements: {total} / {numel} ({total / numel:.1%})"
    actual_flat, expected_flat, matches_flat = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point:
        actual_flat, expected_flat = actual_flat.to(_C.int64), expected_flat.to(_C.int64)
    abs_diff = (actual_flat - expected_flat).abs()
    abs_diff[matches_flat] = 0
    max_abs, max_abs_idx = _C.max(abs_diff, 0)
    rel_diff = abs_diff / expected_flat.abs()
    rel_diff[matches_flat] = 0
    max_rel, max_rel_idx = _C.max(rel_diff, 0)
    return _mismatch_msg("Tensor-likes", extra, max_abs.item(), unravel(int(max_abs_idx)), atol, max_rel.item(),
                         unravel(int(max_rel_idx)), rtol)


def _none_pair(actual, expected, id, **options):
    if not (actual is None or expected is None):
        raise _Unsupported

    def compare():
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id)
    return compare


def _boolean_pair(actual, expected, id, **options):
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)

    def compare():
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", id)
    return compare


def _number_pair(actual, expected, id, *, rtol, atol, equal_nan, check_dtype, **options):
    if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_PRECISIONS[type(x)] for x in (actual, expected)], rtol, atol, id)

    def compare():
        if check_dtype and type(actual) is not type(expected):
            raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", id)
        if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
            return
        raise _Mismatch(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), id)
    return compare


def _to_tensor(tensor_like):
    if isinstance(tensor_like, _C.Tensor):
        return tensor_like
    try:
        return _C.tensor(tensor_like)
    except Exception:  # noqa: BLE001  what vkt.tensor cannot take, this pair type does not handle
        raise _Unsupported from None


def _tensor_pair(actual, expected, id, *, allow_subclasses, rtol, atol, equal_nan, check_device, check_dtype,
                 check_stride, **options):
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Unsupported
    actual, expected = _to_tensor(actual), _to_tensor(expected)
    rtol, atol = _tolerances([_DTYPE_PRECISIONS.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)], rtol, atol,
                             id)

    def fail_attribute(name, got, want):
        raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {got} != {want}.", id)

    def compare():
        a, e = actual, expected
        if a.shape != e.shape:
            fail_attribute("shape", a.shape, e.shape)
        if check_stride and a.stride() != e.stride():
            fail_attribute("stride()", a.stride(), e.stride())
        if check_device and a.device != e.device:
            fail_attribute("device", a.device, e.device)
        if check_dtype and a.dtype != e.dtype:
            fail_attribute("dtype", a.dtype, e.dtype)
        if a.device != e.device:
            a, e = a.cpu(), e.cpu()
        if a.dtype != e.dtype:
            dtype = max(a.dtype, e.dtype, key=_PROMOTION_ORDER.index)
            a, e = a.to(dtype), e.to(dtype)
        matches = _C.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if bool(matches.all()):
            return
        if a.dim() == 0:
            msg = _scalar_mismatch_msg(a.item(), e.item(), rtol, atol)
        else:
            msg = _tensor_mismatch_msg(a, e, matches, rtol, atol)
        raise _Mismatch(AssertionError, msg, id)
    return compare


_PAIR_TYPES = (_none_pair, _boolean_pair, _number_pair, _tensor_pair)


def _originate(actual, expected, id, **options):
    """The comparisons of actual and expected, recursing through sequences (not strings) and mappings; a structure
    that differs, or inputs no pair type takes, fail here, before any value is compared."""
    def is_sequence(x):
        return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)

    if is_sequence(actual) and is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                            id)
        return [c for i in range(len(actual)) for c in _originate(actual[i], expected[i], (*id, i), **options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing, additional = sorted(expected_keys - actual_keys), sorted(actual_keys - expected_keys)
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {missing}\n"
                                            f"Additional keys in the actual mapping: {additional}", id)
        keys = actual_keys
        try:
            keys = sorted(keys)
        except TypeError:  # keys of unorderable types: any order, as torch
            pass
        return [c for key in keys for c in _originate(actual[key], expected[key], (*id, key), **options)]
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id, **options)]
        except _Unsupported:
            continue
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                               f"{type(expected)}.", id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False, check_device=True,
                 check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Asserts |actual - expected| <= atol + rtol * |expected| elementwise (inf only equal to itself, NaN to NaN only
    with equal_nan), with the same shape, device (check_device), dtype (check_dtype) and stride (check_stride), as
    torch.testing.assert_close. Inputs may be tensors, anything vkt.tensor takes (NumPy arrays), Python or NumPy
    numbers and bools, None, and sequences or mappings of them. Default tolerances, per dtype (the loosest of
    the two inputs): float16 rtol 1e-3, atol 1e-5; float32 1.3e-6, 1e-5; float64 1e-7, 1e-7; integral and bool 0.
    Raises AssertionError on a mismatch, ValueError when only one of rtol and atol is given, TypeError for
    inputs it cannot compare. msg replaces the message, or (a callable) maps it. check_layout is accepted: vkt
    tensors are all strided."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_stride=check_stride)
    try:
        comparisons = _originate(actual, expected, (), **options)
    except _Mismatch as mismatch:
        raise mismatch.to_error() from None
    for compare in comparisons:
        try:
            compare()
        except _Mismatch as mismatch:
            raise mismatch.to_error(msg) from None


def _dtype_range(dtype):
    """[lowest, highest) of dtype's finite values, as make_tensor clamps to them."""
    if dtype is _C.bool:
        return 0, 2
    if dtype in _INTEGRAL:
        info = np.iinfo(dtype.numpy_name)
        # highest is max + 1 (exclusive), except for int64, where randint's bound itself would overflow
        return int(info.min), int(info.max) + (1 if dtype is not _C.int64 else 0)
    info = np.finfo(dtype.numpy_name)
    return float(info.min), float(info.max)


def _low_high(dtype, low, high):
    """make_tensor's range: the defaults for dtype, checked, clamped to the dtype, integral bounds ceiled."""
    lowest, highest = _dtype_range(dtype)
    default_low, default_high = (0, 2) if dtype is _C.bool else (-9, 10) if dtype in _INTEGRAL else (-9, 9)
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and dtype not in _INTEGRAL:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                      "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                      FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype in _INTEGRAL:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of shape (ints, or one sequence) drawn uniformly from [low, high), as torch.testing.make_tensor.
    Defaults: bool [0, 2), uint8 [0, 10), signed integers [-9, 10), floating point [-9, 9); bounds outside the
    dtype's finite range are clamped to it. noncontiguous: every other element of a tensor twice as long in its last
    dim (when it has more than one element); exclude_zero: zeros become 1 (bool, integers) or the dtype's
    smallest normal number. Raises ValueError for requires_grad with an integral dtype, for low >= high or NaN bounds
    and for noncontiguous with memory_format; TypeError for a dtype it cannot draw."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"{noncontiguous=} and {memory_format=}")
    if requires_grad and dtype in _INTEGRAL:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype in _INTEGRAL:
        low, high = _low_high(dtype, low, high)
        result = _C.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        low, high = _low_high(dtype, low, high)
        result = _C.empty(shape, device=device, dtype=dtype)
        if high - low >= _dtype_range(dtype)[1]:  # uniform_ takes a range up to the dtype's max: draw half of it
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). To request "
                        "support, file an issue at: https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]  # offset by one, to catch offset bugs too
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _INTEGRAL else float(np.finfo(dtype.numpy_name).tiny)
    if dtype not in _INTEGRAL:
        result.requires_grad_(requires_grad)
    return result
