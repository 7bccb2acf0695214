"""vkt.nn.functional's instance and local response normalisation, channel shuffle, adaptive and fractional max
pooling and alpha dropout, as PyTorch 2.13's (arguments, results, errors): composed from vkt's differentiable
operators, so forward and backward both run on the tensor's device."""
import functools
import math
from collections.abc import Iterable

import numpy as np

from .. import _C
from ..autograd import no_grad

__all__ = [
    "instance_norm", "local_response_norm", "channel_shuffle", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "fractional_max_pool2d", "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "alpha_dropout",
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
        if math.prod(input.shape[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
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


# --- adaptive and fractional max pooling -------------------------------------------------------

def _adaptive_windows(size, out):
    """(out, K) positions of the adaptive windows [floor(i*size/out), ceil((i+1)*size/out)) along one dim, K the
    longest; a shorter window repeats its last position, which changes neither its max nor the first position
    holding it (torch's index and the one its gradient reaches)."""
    i = np.arange(out)
    start, end = (i * size) // out, -((-(i + 1) * size) // out)
    longest = int((end - start).max()) if out else 1
    return np.minimum(start[:, None] + np.arange(longest), end[:, None] - 1)


def _flat_window_index(positions, sizes):
    """The flat position in a row-major volume of `sizes` of every tap of every window, from each dim's window
    positions positions[d] (O_d, K_d): shaped (O_1, ..., O_n, K_1, ..., K_n). On the host: its broadcasts have
    twice as many dims as the volume, past what an elementwise shader takes."""
    nd = len(sizes)
    index = 0
    for d, p in enumerate(positions):
        before, after = (1,) * d, (1,) * (nd - 1 - d)
        index = index + p.reshape(*before, p.shape[0], *after, *before, p.shape[1], *after) * math.prod(sizes[d + 1:])
    return index


@functools.lru_cache(maxsize=64)
def _adaptive_index_on(device, sizes, outs):
    """The flat gather index of every adaptive window's positions over the trailing dims `sizes`,
    (prod(outs), K) in row-major order, as a tensor on device made once per geometry (a training loop reuses it)."""
    index = _flat_window_index([_adaptive_windows(n, o) for n, o in zip(sizes, outs)], sizes)
    return _C.tensor(index.reshape(math.prod(outs), math.prod(index.shape[len(outs):])), device=device)


def _window_max(input, index, outs):
    """Max over windows of the trailing len(outs) dims whose flat positions are the rows of index: (P, K), one
    geometry for every plane, or (*planes, P, K), one per plane; with the position of the maximum that torch's
    kernels pick: the first, but the last NaN in a window holding any (their scans take every NaN they meet).
    The values are a gather at that position, so the gradient reaches it through gather's scatter-add."""
    nd = len(outs)
    lead = tuple(input.shape[:input.dim() - nd])
    plane = input.reshape(*lead, math.prod(input.shape[input.dim() - nd:]))
    count, taps = index.shape[-2:]
    if index.dim() == 2:
        windows = plane.index_select(-1, index.reshape(-1))
        index = index.expand(*lead, count, taps)
    else:
        windows = plane.gather(-1, index.reshape(*lead, count * taps))
    windows = windows.reshape(*lead, count, taps)
    with no_grad():
        first, arg = windows.max(dim=-1)
        last_nan = (windows.isnan() * _C.arange(taps, device=input.device)).amax(dim=-1)
        arg = _C.where(first.isnan(), last_nan, arg).unsqueeze(-1)
    values, positions = windows.gather(-1, arg), index.gather(-1, arg)
    return values.reshape(*lead, *outs), positions.reshape(*lead, *outs)


def _check_output_sizes(input, outs, nd):
    """torch's check as it makes the output (of (N, C, *outs), a 1-D pool's as a 2-D one's)."""
    negative = [o for o in outs if o < 0]
    if negative:
        shape = list(input.shape[:input.dim() - nd]) + [1] * (2 - nd) + list(outs)
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {shape}")


def _check_pool_floating(input, kernel):
    if not input.dtype.is_floating_point:
        from .functional import _no_kernel  # here, not at the top: functional imports this module
        raise _no_kernel(kernel, input.dtype)


def _adaptive_max(input, outs, kernel):
    """Max over each adaptive window of the trailing len(outs) dims and the flat index of the maximum in its
    plane (row-major, as torch's CPU kernel scans); kernel names torch's kernel in its dtype error."""
    nd = len(outs)
    _check_output_sizes(input, outs, nd)
    _check_pool_floating(input, kernel)
    index = _adaptive_index_on(str(input.device), tuple(input.shape[input.dim() - nd:]), tuple(outs))
    return _window_max(input, index, outs)


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


def _int_list(name, value, what="output_size", position=2, nd=1):
    """An argument through torch's argument parser: an int (repeated nd times) or a sequence of ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * nd
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    raise TypeError(f"{name}(): argument '{what}' (position {position}) must be tuple of ints, not "
                    f"{type(value).__name__}")


def _with_defaults(input, output_size):
    """torch.nn.functional's _list_with_default: None keeps that dim's input size."""
    if isinstance(output_size, int):
        return output_size
    if input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    sizes = input.shape[input.dim() - len(output_size):]
    return tuple(d if v is None else v for v, d in zip(output_size, sizes))


def _adaptive_max_nd(input, output_size, nd):
    """adaptive_max_pool2d and 3d: an int output_size repeats to every pooled dim."""
    name = f"adaptive_max_pool{nd}d"
    output_size = _int_list(name, _with_defaults(input, output_size), nd=nd)
    _check_adaptive_input(input, name, nd)
    if len(output_size) != nd:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
    # both 1-D and 2-D pools run torch's 2-D kernel, which names itself; the 3-D one has its own
    return _adaptive_max(input, output_size, "adaptive_max_pool2d" if nd == 2 else "adaptive_max_pool3d_cpu")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    output_size = _int_list("adaptive_max_pool1d", output_size)
    _check_adaptive_input(input, "adaptive_max_pool1d", 1)
    if len(output_size) != 1:
        raise RuntimeError(f"adaptive_max_pool1d() argument 'output_size' should contain one int (got "
                           f"{len(output_size)})")
    return _adaptive_max(input, output_size, "adaptive_max_pool2d")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_nd(input, output_size, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_nd(input, output_size, 3)


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


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over adaptive windows of the last three dims (None in output_size keeps that size); with
    return_indices, also each maximum's flat position in its D*H*W volume."""
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


_SPATIAL_NAMES = ("time", "height", "width")
# which of a plane's random samples places the windows along each pooled dim: torch's 2-D kernel takes the
# width's from sample 0, its 3-D kernel the time's
_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}


def _fractional_output_size(input, output_size, output_ratio, nd):
    """torch.nn.functional's: output_ratio, where output_size is None, scales the pooled dims (truncated)."""
    if output_size is None and output_ratio is None:
        raise ValueError(f"fractional_max_pool{nd}d requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        return output_size
    if nd == 2 and len(output_ratio) > 2:  # sic: only the 2-D pool checks, and len() refuses a lone float
        raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple of Ints.")
    ratio = tuple(output_ratio) if isinstance(output_ratio, Iterable) else (output_ratio,) * nd
    return [int(input.size(d - nd) * ratio[d]) for d in range(nd)]


def _check_fractional(input, kernel, outs, samples, nd):
    """torch's checks of fractional_max_pool2d/3d, in their order (its 3-D messages name the out variant)."""
    name = f"fractional_max_pool{nd}d"
    if not isinstance(samples, _C.Tensor):
        raise TypeError(f"{name}(): argument 'random_samples' (position 4) must be Tensor, not "
                        f"{type(samples).__name__}")
    for what, value in (("kernel_size", kernel), ("output_size", outs)):
        if len(value) != nd:
            raise RuntimeError(f"{name}: {what} must either be a single Int or tuple of{'' if nd == 2 else ' three'}"
                               " Ints")
    fn = f"{name}()" if nd == 2 else "fractional_max_pool3d_out()"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}: Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    for d in range(1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"{fn}: Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(input.shape)} with dimension {d} being empty.")
    for what, size, k, o in zip(_SPATIAL_NAMES[3 - nd:], input.shape[input.dim() - nd:], kernel, outs):
        if o + k - 1 > size:
            raise RuntimeError(f"{fn}: pool {what} {k} too large relative to input {what} {size}")
    _check_output_sizes(input, outs, nd)
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batch, channels = (1, input.shape[0]) if input.dim() == nd + 1 else input.shape[:2]
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")  # sic
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    _check_pool_floating(input, f"{name}_out_frame")


def _fractional_starts(sample, size, out, kernel):
    """torch's generate_intervals for every plane at once, sample (*planes,): window i starts at
    trunc((i + sample) * alpha) - trunc(sample * alpha), alpha = (size - kernel) / (out - 1), each step rounded
    to the samples' dtype as torch's kernel rounds it (so the windows are torch's bit for bit); the last window
    ends at the input's end."""
    last = _C.full((*sample.shape, min(out, 1)), size - kernel, dtype=_C.int64, device=sample.device)
    if out <= 1:
        return last
    real = np.dtype(str(sample.dtype).split(".")[-1]).type
    alpha = float(real(size - kernel) / real(out - 1))
    steps = _C.arange(out - 1, dtype=sample.dtype, device=sample.device)
    sample = sample.unsqueeze(-1)
    starts = ((steps + sample) * alpha).to(_C.int64) - (sample * alpha).to(_C.int64)
    return _C.cat([starts, last], -1)


@functools.lru_cache(maxsize=64)
def _window_offsets_on(device, kernel, sizes):
    """Each tap's flat offset from its window's first position in a row-major volume of `sizes`, (prod(kernel),),
    as a tensor on device made once per geometry."""
    offsets = _flat_window_index([np.arange(k).reshape(1, k) for k in kernel], sizes)
    return _C.tensor(offsets.reshape(-1), device=device)


def _fractional_max(input, kernel_size, output_size, output_ratio, samples, nd):
    """Max over one window per output position, (kernel) in size, whose starts torch's interval sequence
    spreads over each plane from that plane's random samples; and the flat index of each maximum."""
    name = f"fractional_max_pool{nd}d"
    outs = _int_list(name, _fractional_output_size(input, output_size, output_ratio, nd), position=3, nd=nd)
    kernel = _int_list(name, kernel_size, "kernel_size", nd=nd)
    if samples is None:
        batch = 1 if input.dim() == nd + 1 else input.size(0)
        samples = _C.rand(batch, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
    _check_fractional(input, kernel, outs, samples, nd)
    lead = tuple(input.shape[:input.dim() - nd])
    samples = samples[:1 if input.dim() == nd + 1 else input.shape[0]].reshape(*lead, nd)
    sizes = tuple(input.shape[input.dim() - nd:])
    starts = [_fractional_starts(samples.select(-1, s), n, o, k) * math.prod(sizes[d + 1:])
              for d, (s, n, o, k) in enumerate(zip(_SAMPLE_OF_DIM[nd], sizes, outs, kernel))]
    # each window's first flat position, (*lead, prod(outs)), one pooled dim at a time so that no broadcast
    # has more dims than an elementwise shader takes
    origin = functools.reduce(lambda a, b: (a.unsqueeze(-1) + b.unsqueeze(-2)).flatten(-2), starts)
    if min(kernel) <= 0:  # torch's scan of an empty window keeps -inf at its start (and no gradient reaches it here)
        return input.new_full((*lead, *outs), float("-inf")), origin.reshape(*lead, *outs)
    index = origin.unsqueeze(-1) + _window_offsets_on(str(input.device), tuple(kernel), sizes)
    return _window_max(input, index, outs)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max over (kH, kW) windows at pseudo-random, overlapping starts (Graham's fractional max pooling), drawn
    from _random_samples (N, C, 2) in the input's dtype, or from vkt's generator on the input's device."""
    out = _fractional_max(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return out if return_indices else out[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """fractional_max_pool2d over the last three dims, samples (N, C, 3)."""
    out = _fractional_max(input, kernel_size, output_size, output_ratio, _random_samples, 3)
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
