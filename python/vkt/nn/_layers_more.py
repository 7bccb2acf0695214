"""vkt.nn.functional's instance and local response normalisation, channel shuffle, adaptive max pooling and
alpha dropout, as PyTorch 2.13's (arguments, results, errors): composed from vkt's differentiable operators, so
forward and backward both run on the tensor's device."""
import functools
import math

import numpy as np

from .. import _C
from ..autograd import no_grad

__all__ = [
    "instance_norm", "local_response_norm", "channel_shuffle", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "alpha_dropout",
    "feature_alpha_dropout",
]


def _channel_shape(input):
    """The shape that broadcasts a per-channel (dim 1) vector over the input."""
    return (-1,) + (1,) * (input.dim() - 2)


# --- normalisation ------------------------------------------------------------------------------

def _check_instance_norm(input, running_mean, running_var, weight, bias, use_input_stats):
    """torch's checks, in its order: it runs batch_norm over the input viewed as (1, N*C, ...) with every
    per-channel tensor repeated N times, so its counts are N times the channels'."""
    if use_input_stats:
        size = list(input.shape)
        if math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"torch.Size({size})")
    elif running_mean is None or running_var is None:
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    n, c = input.size(0), input.size(1)
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {n * c} elements not {n * t.numel()}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Each (sample, channel) normalised over its own spatial extent: one row of layer_norm's fused kernel
    each, then the per-channel affine. With use_input_stats the running stats, where given, move towards the
    per-(sample, channel) means and unbiased variances averaged over the batch (torch updates one copy per
    sample and keeps their mean); without, the running stats normalise instead."""
    _check_instance_norm(input, running_mean, running_var, weight, bias, use_input_stats)
    shape = _channel_shape(input)
    if use_input_stats:
        rows = input.reshape(*input.shape[:2], math.prod(input.shape[2:]))
        out = _C.layer_norm(rows, (rows.shape[-1],), eps=eps).reshape(input.shape)
        if running_mean is not None:
            with no_grad():
                var, mean = _C.var_mean(rows.detach(), dim=-1, correction=1)
                running_mean.mul_(1.0 - momentum).add_(mean.mean(0) * momentum)
                running_var.mul_(1.0 - momentum).add_(var.mean(0) * momentum)
    else:
        out = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _channel_window(channels, size):
    """(C, C) averaging weights of torch's cross-channel window: channel i averages channels
    [i - size // 2, i + (size - 1) // 2], the zero padding counted in the divisor (size)."""
    m = np.zeros((channels, channels))
    for i in range(channels):
        m[i, max(i - size // 2, 0):i + (size - 1) // 2 + 1] = 1.0 / size
    return m


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over a window of `size` channels)^beta; the window's average is
    one matmul with a host-built (C, C) band matrix, where torch pads and average-pools."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} "
                         "dimensions)")  # sic, torch's spaces
    if input.numel() == 0:
        return input
    if size <= 0:
        which = "kH: {} kW: 1" if dim == 3 else "kT: {} kH: 1 kW: 1"
        raise RuntimeError("kernel size should be greater than zero, but got " + which.format(size))
    window = _C.tensor(_channel_window(input.shape[1], size).astype(str(input.dtype).split(".")[-1]),
                       device=input.device)
    squares = (input * input).movedim(1, -1)
    div = (squares @ window.mT).movedim(-1, 1)
    return input / (div * alpha + k).pow(beta)


# --- channel shuffle ----------------------------------------------------------------------------

def channel_shuffle(input, groups):
    """(N, g*k, *) -> (N, k*g, *): channel j*g + i takes channel i*k + j, a reshape, a transpose and a copy."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
                           "groups.")
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)


# --- adaptive max pooling -----------------------------------------------------------------------

def _adaptive_windows(size, out):
    """(start, (out, K) positions) of the adaptive windows [floor(i*size/out), ceil((i+1)*size/out)) along
    one dim, K the longest; a shorter window repeats its last position, which changes neither its max nor
    the first position holding it (torch's index and the one its gradient reaches)."""
    i = np.arange(out)
    start, end = (i * size) // out, -((-(i + 1) * size) // out)
    longest = int((end - start).max()) if out else 1
    return start, np.minimum(start[:, None] + np.arange(longest), end[:, None] - 1)


@functools.lru_cache(maxsize=64)
def _adaptive_index_on(device, sizes, outs):
    """For (H, W) -> (Ho, Wo) windows (a 1-D pool is a height of 1): the flat gather index of every window's
    positions over the H*W plane, (Ho*Wo, Kh*Kw) in row-major order, each window's flat origin and the row
    length Kw, as tensors on device made once per geometry (a training loop reuses them)."""
    (r0, rows), (c0, cols) = (_adaptive_windows(n, o) for n, o in zip(sizes, outs))
    index = rows[:, None, :, None] * sizes[1] + cols[None, :, None, :]
    origin = r0[:, None] * sizes[1] + c0[None, :]
    return (_C.tensor(index.reshape(-1), device=device), _C.tensor(origin.reshape(-1), device=device),
            cols.shape[1], rows.shape[1] * cols.shape[1])


def _adaptive_max(input, outs):
    """Max over each adaptive window of the trailing len(outs) dims and the flat index of its first maximum
    (row-major, as torch's CPU kernel scans)."""
    nd = len(outs)
    sizes = tuple(input.shape[input.dim() - nd:])
    lead = tuple(input.shape[:input.dim() - nd])
    if any(o < 0 for o in outs):
        shape = list(lead) + [1] * (2 - nd) + list(outs)  # torch pools one dim as two
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(outs)}: {shape}")
    index, origin, row, window = _adaptive_index_on(str(input.device), (1,) * (2 - nd) + sizes,
                                                    (1,) * (2 - nd) + tuple(outs))
    plane = input.reshape(*lead, math.prod(sizes))
    windows = plane.index_select(-1, index).reshape(*lead, math.prod(outs), window)
    values, arg = windows.max(dim=-1)
    indices = origin + (arg // row) * sizes[-1] + arg % row
    return values.reshape(*lead, *outs), indices.reshape(*lead, *outs)


def _check_adaptive_input(input, name, nd):
    if input.dim() not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                               f"#1 'self' (while checking arguments for {name})")
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    for d in range(1, input.dim()):  # torch allows an empty dim 0, batched or not
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"input has sizes {list(input.shape)} with dimension {d} being empty")
    if not input.dtype.is_floating_point:  # both pools are torch's 2-D kernel, which names itself
        from .functional import _type_name  # here, not at the top: functional imports this module
        raise NotImplementedError(f'"adaptive_max_pool2d" not implemented for \'{_type_name(input.dtype)}\'')


def _int_list(name, value):
    """output_size through torch's argument parser: an int or a sequence of ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of ints, not "
                    f"{type(value).__name__}")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    output_size = _int_list("adaptive_max_pool1d", output_size)
    _check_adaptive_input(input, "adaptive_max_pool1d", 1)
    if len(output_size) != 1:
        raise RuntimeError(f"adaptive_max_pool1d() argument 'output_size' should contain one int (got "
                           f"{len(output_size)})")
    return _adaptive_max(input, output_size)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    if not isinstance(output_size, int):  # torch's _list_with_default: None keeps that dim's size
        if input.dim() <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        sizes = input.shape[input.dim() - len(output_size):]
        output_size = tuple(d if v is None else v for v, d in zip(output_size, sizes))
    output_size = _int_list("adaptive_max_pool2d", output_size) * (2 if isinstance(output_size, int) else 1)
    _check_adaptive_input(input, "adaptive_max_pool2d", 2)
    if len(output_size) != 2:
        raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    return _adaptive_max(input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over windows [floor(i*L/out), ceil((i+1)*L/out)) of the last dim; with return_indices, also each
    maximum's position along it."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over adaptive windows of the last two dims (None in output_size keeps that size); with
    return_indices, also each maximum's flat position in its H*W plane."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


# --- alpha dropout ------------------------------------------------------------------------------

_SELU_ALPHA = 1.7580993408473766  # SELU's scale * alpha: -_SELU_ALPHA is its saturation value


def _alpha_dropout(input, p, training, inplace, feature):
    """torch's _dropout_impl for alpha dropout: dropped units take SELU's saturation value, then an affine
    map a * x + b brings the mean and variance back to the input's (for zero-mean, unit-variance inputs)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2) if feature else tuple(input.shape)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    with no_grad():  # one draw per element, or per (sample, channel) for feature dropout
        keep = input.new_empty(shape).bernoulli_(1 - p)
        shift = (keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
        scale = keep * a
    return input.mul_(scale).add_(shift) if inplace else input * scale + shift


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels: one draw per (dim 0, dim 1) pair, shared over the remaining dims."""
    return _alpha_dropout(input, p, training, inplace, True)
