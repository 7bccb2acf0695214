"""vkt.nn.functional's spatial and attention functions: convolution, pooling, padding, interpolation,
attention and batch/group normalisation, composed from vkt's differentiable operators (gathers with
host-built indices, matmul, reductions), so forward and backward both run on the tensor's device."""
import functools
import math

import numpy as np

from .. import _C
from ..functional import _type_name
from .functional import _no_kernel
from .._surface import iinfo
from ..autograd import no_grad

__all__ = [
    "conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "pad",
    "interpolate", "scaled_dot_product_attention", "batch_norm", "group_norm", "unfold", "fold", "pixel_shuffle",
    "pixel_unshuffle", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "conv3d", "conv_transpose1d",
    "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "max_unpool1d", "max_unpool2d",
    "lp_pool1d", "lp_pool2d", "lp_pool3d",
]


def _size_list(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _as_tuple(value, n):
    """An int or a sequence as an n-tuple, as PyTorch's argument parser turns an int into an IntArrayRef[n]."""
    if isinstance(value, int):
        return (value,) * n
    return tuple(value)


def _np_dtype(t):
    return np.dtype(str(t.dtype).split(".")[-1])


def _host_tensor(array, like):
    """A constant built on the host (indices, interpolation weights) on `like`'s device."""
    return _C.tensor(array, device=like.device)


# --- padding ------------------------------------------------------------------------------------

def _check_pad_length(input, pad):
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {input.dim()}"
        )


def _pad_constant(input, pad, value):
    """One filled tensor of the padded shape and one write of the (cropped) input into its interior."""
    shape = list(input.shape)
    src, dst = [slice(None)] * input.dim(), [slice(None)] * input.dim()
    for i in range(len(pad) // 2):
        dim, left, right = input.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]
        size = shape[dim] + left + right
        if size < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        src[dim] = slice(max(-left, 0), shape[dim] - max(-right, 0))
        dst[dim] = slice(max(left, 0), size - max(right, 0))
        shape[dim] = size
    if all(p <= 0 for p in pad):
        return input[tuple(src)].clone()
    out = input.new_full(shape, 0.0 if value is None else float(value))  # a float, as PyTorch: -1 fails for uint8
    out[tuple(dst)] = input[tuple(src)]
    return out


def _pad_source_index(n, left, right, mode):
    """For each output position along a padded dim, the input position it copies. Circular padding
    wraps around what is left after a negative pad's crop, as PyTorch's."""
    if mode == "circular":
        start, kept = max(-left, 0), n - max(-left, 0) - max(-right, 0)
        return start + np.arange(-max(left, 0), kept + max(right, 0)) % kept
    i = np.arange(-left, n + right)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i >= n, 2 * (n - 1) - i, i)
    return np.clip(i, 0, n - 1)


def _check_pad_mode(input, pad, mode):
    nd = len(pad) // 2
    if input.dim() not in (nd + 1, nd + 2) or nd > 3:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    padded = input.shape[input.dim() - nd:]
    if any(s == 0 for s in input.shape[1:]):
        raise RuntimeError(
            f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {_size_list(input)}"
        )
    for i in range(nd):
        left, right, n = pad[2 * i], pad[2 * i + 1], padded[nd - 1 - i]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, but got: "
                f"padding ({left}, {right}) at dimension {input.dim() - 1 - i} of input {_size_list(input)}"
            )
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")


def _pad_ints(pad):
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
    return tuple(int(p) for p in pad)


def _check_pad_output(input, pad, mode):
    """PyTorch's reflect and replicate kernels refuse negative pads that leave no element: of the one padded dim,
    or, padding two, of both (the kernels test `H >= 1 || W >= 1`)."""
    nd = len(pad) // 2
    if mode == "circular" or nd > 2:
        return
    names = "HW"[2 - nd:]
    sizes = [input.shape[input.dim() - nd + k] for k in range(nd)]
    outs = [n + pad[2 * (nd - 1 - k)] + pad[2 * (nd - 1 - k) + 1] for k, n in enumerate(sizes)]
    if all(o < 1 for o in outs):
        given = ", ".join(f"{c}: {n}" for c, n in zip(names, sizes))
        got = " ".join(f"{c}: {o}" for c, o in zip(names, outs))
        raise RuntimeError(f"input ({given}) is too small. Calculated output {got}")


def pad(input, pad, mode="constant", value=None):
    pad = _pad_ints(pad)
    _check_pad_length(input, pad)
    if mode == "constant":
        return _pad_constant(input, pad, value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_pad_mode(input, pad, mode)
    _check_pad_output(input, pad, mode)
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        index = _pad_source_index(input.shape[dim], pad[2 * i], pad[2 * i + 1], mode)
        out = out.index_select(dim, _host_tensor(index, input))
    return out


# --- convolution --------------------------------------------------------------------------------

def _conv_param(name, value, nd):
    """PyTorch's expand_param_if_needed: an int or a one-element list repeats to nd entries."""
    value = _as_tuple(value, nd)
    if len(value) == 1:
        value = value * nd
    if len(value) != nd:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {nd} values to match the convolution "
            f"dimensions, but got {name}=[{', '.join(str(v) for v in value)}]"
        )
    return value


def _check_conv_input(input, weight, bias, nd, name):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of size: "
            f"{_size_list(input)}"
        )
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        raise RuntimeError(
            f"Input type ({input.dtype}) and weight type ({weight.dtype}) should be the same"
            + ("" if bias is None else f" and bias type ({bias.dtype})")
        )


def _same_padding(kernel, dilation, stride):
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return pads


def _conv_padding(padding, kernel, stride, dilation):
    """Padding as (left, right) per spatial dim; "same" puts an odd total's extra element on the right."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * len(kernel)
        if padding == "same":
            return _same_padding(kernel, dilation, stride)
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    padding = _conv_param("padding", padding, len(kernel))
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    return [(p, p) for p in padding]


def _check_conv_shapes(input, weight, bias, groups, transposed):
    """The checks and messages of PyTorch's check_shape_forward; input is batched here."""
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight "
            f"of size [{_size_list(weight)}] instead"
        )
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    if input.shape[1] != expected:
        prefix = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(
            f"Given {prefix}, weight of size {_size_list(weight)}, expected input{_size_list(input)} to have "
            f"{expected} channels, but got {input.shape[1]} channels instead"
        )
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(
            f"Given {'transposed=1, ' if transposed else ''}weight of size {_size_list(weight)}, expected bias to be "
            f"1-dimensional with {out_channels} elements, but got bias of size {_size_list(bias)} instead"
        )


def _check_conv_args(stride, dilation, groups):
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _conv_output_size(x, kernel, stride, padding, dilation):
    """Output extents of the convolution of x with `padding` zeros around it; errors as PyTorch's."""
    spatial = [s + 2 * p for s, p in zip(x.shape[2:], padding)]
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(e > s for e, s in zip(extent, spatial)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, spatial))}). Kernel size: "
            f"({' x '.join(map(str, extent))}). Kernel size can't be greater than actual input size"
        )
    return [(s - e) // st + 1 for s, e, st in zip(spatial, extent, stride)]


def _row_major_strides(extent):
    """Element strides of a contiguous array of shape `extent`."""
    return [math.prod(extent[d + 1:]) for d in range(len(extent))]


def _window_index(out, kernel, stride, dilation, extent):
    """Flat positions in a (padded) volume of shape `extent` of every window element, ordered (o..., k...): the
    pools gather their windows with these (index_select, whose backward sums overlapping windows)."""
    nd = len(out)
    grids = np.meshgrid(*(np.arange(n) for n in (*out, *kernel)), indexing="ij")
    return sum((grids[d] * stride[d] + grids[nd + d] * dilation[d]) * step
               for d, step in enumerate(_row_major_strides(extent))).reshape(-1)


@functools.lru_cache(maxsize=256)
def _window_index_on(device, out, kernel, stride, dilation, extent):
    """_window_index as an int64 tensor on device, made once per geometry: the pools of a training loop reuse it
    instead of building and uploading it every step (it is only ever read)."""
    return _C.tensor(_window_index(out, kernel, stride, dilation, extent), device=device)


def _window_index_like(like, out, kernel, stride, dilation, extent):
    return _window_index_on(str(like.device), *(tuple(v) for v in (out, kernel, stride, dilation, extent)))


def _three(values, fill):
    """A geometry of up to three spatial dims as three, leading dims filled: im2col's form."""
    return (fill,) * (3 - len(values)) + tuple(values)


def _im2col(x, kernel, stride, padding, dilation):
    """(N, C*prod(kernel), prod(windows)) columns of x (N, C, *spatial), zeros where a window reaches into the
    padding: one kernel (im2col.comp), no padded copy."""
    return _C._im2col(x, _three(kernel, 1), _three(stride, 1), _three(padding, 0), _three(dilation, 1))


def _col2im(cols, size, kernel, stride, padding, dilation):
    """The adjoint of _im2col: columns (N, C*prod(kernel), prod(windows)) summed into an (N, C, *size) image
    whose windows start `padding` before it, each element adding its entries in one invocation (no atomics)."""
    return _C._col2im(cols, tuple(size), _three(kernel, 1), _three(stride, 1), _three(padding, 0),
                      _three(dilation, 1))


def _conv_padded(x, weight, bias, stride, padding, dilation, groups):
    """im2col of the input (N, C, *spatial) with `padding` zeros around it, then one batched matmul per call:
    (G, O/G, C/G*prod(kernel)) @ (N, G, C/G*prod(kernel), prod(out)), the bias added to the product before it
    takes the output's shape, so that the add goes into the product's kernel (fuse.c's epilogues)."""
    n = x.shape[0]
    o, cg, *kernel = weight.shape
    out = _conv_output_size(x, kernel, stride, padding, dilation)
    rows = cg * math.prod(kernel)
    pointwise = all(k == 1 for k in kernel) and all(s == 1 for s in stride) and not any(padding)
    cols = x if pointwise else _im2col(x, kernel, stride, padding, dilation)  # a 1x..x1 kernel's columns are x
    cols = cols.reshape(n, groups, rows, math.prod(out))
    product = weight.reshape(groups, o // groups, rows) @ cols
    if bias is not None:
        product = product + bias.reshape(groups, o // groups, 1)
    return product.reshape(n, o, *out)


def _conv_result(out, bias, nd, batched):
    """The bias added (unless None: the product took it), then the unit height of a 1-D convolution done as a 2-D
    one and an unbatched input's batch dim dropped."""
    if bias is not None:
        out = out + bias.reshape(-1, *(1,) * (out.dim() - 2))
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    """conv1d, conv2d and conv3d: a 1-D convolution is a 2-D one over a height of 1."""
    _check_conv_input(input, weight, bias, nd, name)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    stride = _conv_param("stride", _as_tuple(stride, nd), weight.dim() - 2)
    dilation = _conv_param("dilation", _as_tuple(dilation, nd), weight.dim() - 2)
    _check_conv_args(stride, dilation, groups)
    pads = _conv_padding(padding, weight.shape[2:], stride, dilation)
    _check_conv_shapes(x, weight, bias, groups, transposed=False)
    if nd == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, dilation, pads = (1,) + stride, (1,) + dilation, [(0, 0)] + pads
    if any(left != right for left, right in pads):  # "same" with an even extent: the extra zero on the right
        x = pad(x, tuple(p for pair in reversed(pads) for p in pair))
        pads = [(0, 0)] * len(pads)
    padding = [left for left, _ in pads]
    return _conv_result(_conv_padded(x, weight, bias, stride, padding, dilation, groups), None, nd, batched)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


_DIM_NAMES = ("depth", "height", "width")


def _check_output_padding(output_padding, stride, dilation):
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        names = _DIM_NAMES[-len(stride):]
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got " + " ".join(
                f"{what}_{dim}: {v}" for what, values in (("output_padding", output_padding), ("stride", stride),
                                                          ("dilation", dilation))
                for dim, v in zip(names, values)))


def _transposed_params(weight, stride, padding, output_padding, dilation, nd, name):
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    stride, padding, output_padding, dilation = (
        _conv_param(what, _as_tuple(v, nd), weight.dim() - 2)
        for what, v in (("stride", stride), ("padding", padding), ("output_padding", output_padding),
                        ("dilation", dilation)))
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    return stride, padding, output_padding, dilation


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    """The adjoint of the convolution: one matmul to columns (W^T x), then col2im as one index_add that sums
    the overlapping windows into the uncropped output, cropped by `padding`. 1-D is 2-D over a height of 1,
    as PyTorch's (whose errors then name a height)."""
    _check_conv_input(input, weight, bias, nd, name)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    stride, padding, output_padding, dilation = _transposed_params(
        weight, stride, padding, output_padding, dilation, nd, name)
    _check_conv_args(stride, dilation, groups)
    _check_conv_shapes(x, weight, bias, groups, transposed=True)
    if nd == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, padding, output_padding, dilation = ((fill,) + v for fill, v in (
            (1, stride), (0, padding), (0, output_padding), (1, dilation)))
    _check_output_padding(output_padding, stride, dilation)
    n, c, *size = x.shape
    _, og, *kernel = weight.shape
    full = [(s - 1) * st + d * (k - 1) + 1 + op
            for s, st, d, k, op in zip(size, stride, dilation, kernel, output_padding)]
    out_size = [f - 2 * p for f, p in zip(full, padding)]
    if any(s <= 0 for s in out_size):
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, size))}). Calculated output size per channel: "
            f"({' x '.join(map(str, out_size))}). Output size is too small")
    rows, length = og * math.prod(kernel), math.prod(size)
    cols = weight.reshape(groups, c // groups, rows).mT @ x.reshape(n, groups, c // groups, length)
    out = _col2im(cols.reshape(n, og * groups * math.prod(kernel), length), out_size, kernel, stride, padding,
                  dilation)
    return _conv_result(out, bias, nd, batched)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                           "conv_transpose3d")


# --- sliding blocks -----------------------------------------------------------------------------

def _block_params(kernel_size, dilation, padding, stride):
    """unfold/fold's four pairs, with im2col's checks and messages."""
    params = []
    for name, value in (("kernel_size", kernel_size), ("dilation", dilation), ("padding", padding),
                        ("stride", stride)):
        value = _as_tuple(value, 2)
        if len(value) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(value)}")
        params.append(value)
    kernel, dilation, padding, stride = params
    for name, value, low in (("kernel size", kernel, 1), ("stride", stride, 1), ("dilation", dilation, 1)):
        if min(value) < low:
            raise RuntimeError(f"{name} should be greater than zero, but got {name.split()[0]}_height: "
                               f"{value[0]} {name.split()[0]}_width: {value[1]}")
    if min(padding) < 0:
        raise RuntimeError(
            f"padding should be non-negative, but got pad_height: {padding[0]} pad_width: {padding[1]}")
    return kernel, dilation, padding, stride


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, d, p, st in zip(size, kernel, dilation, padding, stride))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), zeros where a block reaches into the padding."""
    kernel, dilation, padding, stride = _block_params(kernel_size, dilation, padding, stride)
    if input.dim() not in (3, 4) or 0 in input.shape[-3:]:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            f"input, but got: {_size_list(input)}")
    x = input if input.dim() == 4 else input.unsqueeze(0)
    blocks = _blocks(x.shape[2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, calculated shape of the array of sliding blocks as {blocks}, but its components "
            "must be at least one.")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"im2col_out_cpu" not implemented for \'{_type_name(x.dtype)}\'')
    cols = _im2col(x, kernel, stride, padding, dilation)
    return cols if input.dim() == 4 else cols.squeeze(0)


def _check_fold_input(input, output_size, kernel, dilation, padding, stride):
    if input.dim() not in (2, 3) or 0 in input.shape[-2:]:
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
            f"for input, but got: {_size_list(input)}")
    channels, length = input.shape[-2:]
    if channels % (kernel[0] * kernel[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={channels} and kernel_size={kernel}.")
    blocks = _blocks(output_size, kernel, dilation, padding, stride)
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
            f"stride={stride}, expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={length}.")


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, unfold's adjoint: (N, C*kh*kw, L) -> (N, C, H, W), overlapping values summed."""
    output_size = _as_tuple(output_size, 2)
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(output_size)}")
    kernel, dilation, padding, stride = _block_params(kernel_size, dilation, padding, stride)
    _check_fold_input(input, output_size, kernel, dilation, padding, stride)
    cols = input if input.dim() == 3 else input.unsqueeze(0)
    if not cols.dtype.is_floating_point:
        raise NotImplementedError(f'"col2im_out_cpu" not implemented for \'{_type_name(cols.dtype)}\'')
    out = _col2im(cols, output_size, kernel, stride, padding, dilation)
    return out if input.dim() == 3 else out.squeeze(0)


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): a reshape, a permute and a copy."""
    if input.dim() < 3:
        raise RuntimeError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {input.dim()} "
            "dimension(s)")
    *lead, c, h, w = input.shape
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
            f"but input.size(-3)={c} is not divisible by {r * r}")
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): pixel_shuffle's inverse."""
    if input.dim() < 3:
        raise RuntimeError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with {input.dim()} "
            "dimension(s)")
    *lead, c, h, w = input.shape
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but input.size({dim})={size} "
                f"is not divisible by {r}")
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    k = len(lead)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


# --- pooling ------------------------------------------------------------------------------------

_INTEGRAL = (_C.bool, _C.uint8, _C.int32, _C.int64)
# PyTorch's CPU pooling kernels (named as their dtype errors name them) and the dtypes they have no loop for; the
# 1-d ops are the 2-d ones', but for max_pool1d without indices
_POOL_KERNELS = {
    "max_pool1d": ("max_pool1d_impl", _INTEGRAL),
    "max_pool2d": ("max_pool2d", (_C.bool,)),
    "max_pool3d": ("max_pool3d", (_C.bool,)),
    "avg_pool2d": ("avg_pool2d", (_C.bool, _C.uint8, _C.int32)),
    "avg_pool3d": ("avg_pool3d_out_frame", (_C.bool, _C.uint8, _C.int32, _C.float16)),
    "adaptive_avg_pool2d": ("adaptive_avg_pool2d", _INTEGRAL),
    "adaptive_avg_pool3d": ("adaptive_avg_pool3d_cpu", _INTEGRAL),
}


def _check_pool_dtype(name, input):
    kernel, refused = _POOL_KERNELS[name]
    if input.dtype in refused:
        raise _no_kernel(kernel, input.dtype)


def _pool_param(name, what, value, nd):
    """An int or a one-element sequence repeated to nd entries, with PyTorch's messages (avg_pool3d words
    them differently)."""
    value = _as_tuple(value, nd)
    if len(value) == 1:
        value = value * nd
    if len(value) != nd:
        lead = "be either " if what == "dilation" else "be " if name == "avg_pool3d" else "either be "
        omitted = "omitted, " if what == "stride" else ""
        raise RuntimeError(f"{name}: {what} must {lead}{omitted}a single int, or a tuple of "
                           f"{('two', 'three')[nd - 2]} ints")
    return value


def _pool_output_size(size, kernel, pad, stride, dilation, ceil_mode):
    """PyTorch's pooling_output_shape: a ceil_mode window must start inside the input or left padding."""
    out = (size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _check_pool_input(input, nd):
    if input.dim() not in (nd + 1, nd + 2) or (nd == 2 and 0 in input.shape[-3:]):  # an empty batch is allowed
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")


def _labelled(prefix, values, names):
    return " ".join(f"{prefix}{c}: {v}" for c, v in zip(names, values))


def _check_pool_shape(name, input, kernel, stride, padding, dilation, out):
    """PyTorch's pool2d_shape_check and pool3d_shape_check, in their order."""
    nd = len(kernel)
    names = "THW"[3 - nd:]
    for what, prefix, values in (("kernel size", "k", kernel), ("stride", "d", stride),
                                 ("dilation", "dilation", dilation)):
        if min(values) <= 0:
            raise RuntimeError(f"{what} should be greater than zero, but got {_labelled(prefix, values, names)}")
    empty = [s for s in input.shape[input.dim() - nd - 1:] if s == 0]
    if empty:  # sic: PyTorch names the dimension by its length
        fn = "avg_pool3d()" if name == "avg_pool3d" else "max_pool3d_with_indices_out_cpu_template()"
        raise RuntimeError(
            f"{fn}: Expected input's non-batch dimensions to have positive length, but input has a shape of "
            f"{_size_list(input)} and non-batch dimension {empty[0]} has length zero!")
    spatial = input.shape[-nd:]
    if name == "avg_pool3d" and any(s < k for s, k in zip(spatial, kernel)):
        raise RuntimeError(f"input image ({_labelled('', spatial, names)}) smaller than kernel size "
                           f"({_labelled('k', kernel, names)})")
    if any(k // 2 < p for k, p in zip(kernel, padding)):
        got = (f"padW = {padding[1]}, padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}" if nd == 2 else
               f"kT: {kernel[0]} kW: {kernel[2]} kH: {kernel[1]} padT: {padding[0]} padW: {padding[2]} "
               f"padH: {padding[1]}")
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got {got}")
    if any(o < 1 for o in out):
        c = input.shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c, *spatial)))}). Calculated output size: "
                           f"({'x'.join(map(str, (c, *out)))}). Output size is too small")


def _pool_geometry(name, input, kernel_size, stride, padding, dilation, ceil_mode, nd):
    kernel = _pool_param(name, "kernel_size", kernel_size, nd)
    stride = kernel if stride is None or stride == [] or stride == () else _pool_param(
        name, "stride", stride, nd)
    padding = _pool_param(name, "padding", padding, nd)
    dilation = _pool_param(name, "dilation", dilation, nd)
    _check_pool_input(input, nd)
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    for k, p, d in zip(kernel, padding, dilation):
        if p > int((d * (k - 1) + 1) / 2):  # C++'s division, truncating towards zero
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and "
                f"dilation={d}")
    out = [_pool_output_size(s, k, p, st, d, ceil_mode)
           for s, k, p, st, d in zip(input.shape[-nd:], kernel, padding, stride, dilation)]
    _check_pool_shape(name, input, kernel, stride, padding, dilation, out)
    return kernel, stride, padding, dilation, out


def _pool_windows(input, kernel, stride, padding, dilation, out, value):
    """The pooling windows (B, *out, prod(kernel)), gathered from the input padded with `value`, its right
    padding extended (or cropped) to exactly the extent the windows reach."""
    nd = len(kernel)
    spatial = input.shape[-nd:]
    extent = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out, stride, dilation, kernel)]
    pads = tuple(p for d in reversed(range(nd)) for p in (padding[d], extent[d] - spatial[d] - padding[d]))
    x = pad(input.reshape(math.prod(input.shape[:-nd]), *spatial), pads, value=value)
    index = _window_index_like(input, out, kernel, stride, dilation, extent)
    windows = x.reshape(x.shape[0], math.prod(extent)).index_select(-1, index)
    return windows.reshape(x.shape[0], *out, math.prod(kernel))


def _max_pool_indices(input, argmax, kernel, stride, padding, dilation, out):
    """Flat input positions of the maxima: each window's origin plus its argmax's offset, both host-built
    tables (the offsets looked up by a gather)."""
    steps = _row_major_strides(input.shape[-len(kernel):])
    origins = np.meshgrid(*(np.arange(o) * s - p for o, s, p in zip(out, stride, padding)), indexing="ij")
    base = sum(g * step for g, step in zip(origins, steps))
    taps = np.meshgrid(*(np.arange(k) * d for k, d in zip(kernel, dilation)), indexing="ij")
    offsets = _host_tensor(sum(t * step for t, step in zip(taps, steps)).reshape(-1).astype(np.int64), input)
    offset = offsets.index_select(0, argmax.reshape(-1)).reshape(argmax.shape)
    return _host_tensor(base.astype(np.int64), input) + offset.reshape(-1, *out)


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd):
    """Max over each window's values padded with -inf (an integer type's lowest value); the gradient (and the index) go to the window's
    first maximum, as PyTorch's."""
    kernel, stride, padding, dilation, out = _pool_geometry(
        f"max_pool{nd}d", input, kernel_size, stride, padding, dilation, ceil_mode, nd)
    _check_pool_dtype(f"max_pool{nd}d", input)
    lowest = float("-inf") if input.dtype.is_floating_point else iinfo(input.dtype).min  # what padding reads
    windows = _pool_windows(input, kernel, stride, padding, dilation, out, lowest)
    values, argmax = windows.max(dim=-1)
    shape = (*input.shape[:-nd], *out)
    if not return_indices:
        return values.reshape(shape)
    return values.reshape(shape), _max_pool_indices(input, argmax, kernel, stride, padding, dilation,
                                                    out).reshape(shape)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def _avg_divisor(size, kernel, stride, pad, out):
    """Per output position along one dim: (window extent clipped to input+padding, clipped to input)."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    with_pad = end - start
    return with_pad, np.minimum(end, size) - np.maximum(start, 0)


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd):
    """Window sums over the zero-padded input divided by a host-built table: the divisor is separable, an
    outer product of per-dim window sizes. An int64 input's sums (int64, wrapping as PyTorch's) are divided as
    PyTorch's kernel divides them, truncating toward zero."""
    name = f"avg_pool{nd}d"
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    kernel, stride, padding, _, out = _pool_geometry(name, input, kernel_size, stride, padding, 1, ceil_mode, nd)
    _check_pool_dtype(name, input)
    windows = _pool_windows(input, kernel, stride, padding, (1,) * nd, out, 0.0)
    total = windows.sum(dim=-1).reshape(*input.shape[:-nd], *out)
    mode = None if input.dtype.is_floating_point else "trunc"
    if divisor_override is not None:
        return _C.div(total, divisor_override, rounding_mode=mode)
    sizes = [_avg_divisor(n, k, s, p, o)[0 if count_include_pad else 1]
             for n, k, s, p, o in zip(input.shape[-nd:], kernel, stride, padding, out)]
    divisor = functools.reduce(np.multiply.outer, sizes)
    return _C.div(total, _host_tensor(divisor.astype(_np_dtype(input)), input), rounding_mode=mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if input.dim() < 3:  # PyTorch 2.13's avg_pool2d fails this way on a 1-D or 2-D input
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(input.dim(), 1)}, "
            f"{max(input.dim(), 1) - 1}], but got -3)")
    _check_pool_input(input, 2)
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


def _adaptive_matrix(size, out):
    """(out, size) averaging weights: row i averages [floor(i*size/out), ceil((i+1)*size/out))."""
    m = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def _apply_along(x, dim, matrix):
    """matrix (out, size) applied along `dim` of x: one matmul over a transposed view."""
    m = _host_tensor(matrix.astype(_np_dtype(x)), x)
    return (x.transpose(dim, -1) @ m.mT).transpose(dim, -1)


def _adaptive_output_size(input, output_size, nd):
    """torch.nn.functional's _list_with_default (None keeps the input's size), then the kernel's checks."""
    name = f"adaptive_avg_pool{nd}d"
    if not isinstance(output_size, int):
        if input.dim() <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        output_size = [d if v is None else v for v, d in zip(output_size, input.shape[-len(output_size):])]
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {_size_list(input)}")
    sizes = _as_tuple(output_size, nd)
    if len(sizes) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    if min(sizes) < 0:
        received = ", ".join(map(str, sizes)) if nd == 2 else f"{sizes[0]}, {sizes[1]},{sizes[2]}"  # sic
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{received}}}")
    for dim in range(1, input.dim()):
        if input.shape[dim] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
                f"{_size_list(input)} with dimension {dim} being empty")
    return sizes


def _check_adaptive_dtype(input, sizes, nd):
    """PyTorch's refusals of a dtype: an output of one element per plane is the input's mean there (mean's error),
    else its kernel's, which an empty input never runs (True: the result is empty)."""
    if input.dtype.is_floating_point:
        return False
    if all(s == 1 for s in sizes):
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_type_name(input.dtype)}")
    if input.numel():
        _check_pool_dtype(f"adaptive_avg_pool{max(nd, 2)}d", input)
    return True


def _adaptive_avg_pool(input, output_size, nd):
    """Separable: an average over a box is an average, along each dim in turn, of averages over the others, so
    one small matmul per dim with a host-built averaging matrix."""
    sizes = _adaptive_output_size(input, output_size, nd)
    if _check_adaptive_dtype(input, sizes, nd):
        return input.new_zeros((*input.shape[:-nd], *sizes))
    out = input
    for i, size in enumerate(sizes):
        dim = input.dim() - nd + i
        out = _apply_along(out, dim, _adaptive_matrix(input.shape[dim], size))
    return out


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg_pool(input, output_size, 3)


def _pool1d_param(name, what, value):
    value = _as_tuple(value, 1)
    if len(value) != 1:
        raise RuntimeError(f"{name}() argument '{what}' should contain one int (got {len(value)})")
    return value[0]


def _check_pool1d_dims(input, name):
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 'self' (while "
            f"checking arguments for {name})")


def _check_max_pool1d(input, kernel, stride, padding, dilation, ceil_mode):
    if input.dim() not in (2, 3):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but "
            f"got:{_size_list(input)}")
    for what, value in (("kernel_size", kernel), ("stride", stride), ("padding", padding), ("dilation", dilation)):
        if len(value) != 1:
            raise RuntimeError(
                f"max_pool1d() {what} must be an int, list of ints or tuple of ints of size 1 but got size "
                f"{len(value)}")
    if stride[0] <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {stride[0]}")
    if dilation[0] <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {dilation[0]}")
    if padding[0] > kernel[0] // 2:
        raise RuntimeError(
            f"max_pool1d() padding should be at most half of kernel size, but got padding={padding[0]} and "
            f"kernel_size={kernel[0]}")
    out = _pool_output_size(input.shape[-1], kernel[0], padding[0], stride[0], dilation[0], ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """max_pool2d over a height of 1; its indices along the length are the 1-D ones."""
    kernel = _as_tuple(kernel_size, 1)
    stride = kernel if stride is None or stride == [] or stride == () else _as_tuple(stride, 1)
    padding, dilation = _as_tuple(padding, 1), _as_tuple(dilation, 1)
    _check_max_pool1d(input, kernel, stride, padding, dilation, ceil_mode)
    if not return_indices:  # PyTorch's kernel without indices; with them, max_pool2d's
        _check_pool_dtype("max_pool1d", input)
    out = max_pool2d(input.unsqueeze(-2), (1, kernel[0]), (1, stride[0]), (0, padding[0]), (1, dilation[0]),
                     ceil_mode, return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    _check_pool1d_dims(input, "avg_pool1d")
    kernel = _pool1d_param("avg_pool1d", "kernel_size", kernel_size)
    stride = kernel if stride is None or stride == [] or stride == () else _pool1d_param(
        "avg_pool1d", "stride", stride)
    padding = _pool1d_param("avg_pool1d", "padding", padding)
    out = avg_pool2d(input.unsqueeze(-2), (1, kernel), (1, stride), (0, padding), ceil_mode, count_include_pad)
    return out.squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    _check_pool1d_dims(input, "adaptive_avg_pool1d")
    size = _pool1d_param("adaptive_avg_pool1d", "output_size", output_size)
    if _check_adaptive_dtype(input, (1, size), 1):
        return input.new_zeros((*input.shape[:-1], size))
    return _apply_along(input, input.dim() - 1, _adaptive_matrix(input.shape[-1], size))


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """torch.nn.functional's _unpool_output_size: the default size inverts max_pool's, and an explicit one
    (spatial, or with the batch and channel dims) must lie within a stride of it."""
    nd = len(kernel_size)
    default = [(input.shape[input.dim() - nd + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(nd)]
    size = default
    if output_size is not None:
        if len(output_size) == nd + 2:
            output_size = output_size[2:]
        if len(output_size) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(output_size)}'")
        for d in range(nd):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
        size = output_size
    for d in range(nd):
        if size[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={size[d]}")
    return list(size)


_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int", "uint8": "Byte",
                      "bool": "Bool"}


def _check_unpool_indices(input, indices, height, width):
    if indices.dtype != _C.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           + _SCALAR_TYPE_NAMES[str(indices.dtype).split(".")[-1]])
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({_size_list(input)}) "
                           f"but got indices tensor with shape: {_size_list(indices)}")
    for dim in range(1, input.dim()):
        if input.shape[dim] == 0:
            raise RuntimeError("max_unpooling2d_forward_out_cpu(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {_size_list(input)} with dimension {dim} being empty.")
    # PyTorch's CPU kernel checks every index; out of range, the scatter would write outside the plane
    invalid = (indices < 0).logical_or(indices >= height * width)
    if indices.numel() and invalid.any().item():
        flat = indices.reshape(-1).tolist()
        bad = next(i for i in flat if not 0 <= i < height * width)
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size {height}x{width})")


def _max_unpool2d(input, indices, output_size):
    """Each value scattered to its index in a zero (H, W) plane; the gradient gathers back from there."""
    height, width = output_size
    _check_unpool_indices(input, indices, height, width)
    lead = input.shape[:-2]
    rows, length = math.prod(lead), math.prod(input.shape[-2:])
    out = input.new_zeros((rows, height * width))
    out = out.scatter(1, indices.reshape(rows, length), input.reshape(rows, length))
    return out.reshape(*lead, height, width)


def _pool_defaults(kernel_size, stride, padding, nd):
    kernel = _as_tuple(kernel_size, nd)
    return kernel, kernel if stride is None else _as_tuple(stride, nd), _as_tuple(padding, nd)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_unpool2d over a width of 1, as PyTorch's."""
    kernel, stride, padding = _pool_defaults(kernel_size, stride, padding, 1)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    return _max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1]).squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel, stride, padding = _pool_defaults(kernel_size, stride, padding, 2)
    return _max_unpool2d(input, indices, _unpool_output_size(input, kernel, stride, padding, output_size))


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    """torch.nn.functional's composition: (average of x^p times the window size)^(1/p); p = +-inf is a max."""
    max_pool, avg_pool = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d), 3: (max_pool3d, avg_pool3d)}[nd]
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(math.prod(_as_tuple(kernel_size, nd))).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


# --- interpolation ------------------------------------------------------------------------------

_INTERP_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _interp_sizes(input, size, scale_factor, recompute_scale_factor):
    """Output sizes and the scales the kernels use (None: in/out), as torch.nn.functional.interpolate."""
    dim = input.dim() - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = _as_tuple(size, dim)
        if len(sizes) != dim:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got input with spatial "
                f"dimensions of {spatial} and output size of {size}. Please provide input tensor in (N, C, d1, "
                "d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        return list(sizes), [None] * dim
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = (scale_factor,) * dim if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
    if len(scales) != dim:
        raise ValueError(
            "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
            f"dimensions of {spatial} and scale_factor of shape {scale_factor}. Please provide input tensor in "
            "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
    sizes = [math.floor(float(n) * float(s)) for n, s in zip(spatial, scales)]
    return sizes, [None] * dim if recompute_scale_factor else [float(s) for s in scales]


def _kernel_scale(n, out, scale, acc=np.float32):
    """PyTorch's compute_scales_value in its accumulation type: 1/scale when given, else in/out."""
    return acc(1.0 / scale) if scale is not None and scale > 0 else acc(n) / acc(out)


def _nearest_index(n, out, scale, exact):
    s = _kernel_scale(n, out, scale)
    dst = np.arange(out, dtype=np.float32)
    src = np.floor((dst + np.float32(0.5)) * s if exact else dst * s).astype(np.int64)
    return np.minimum(src, n - 1)


def _area_scale(n, out, scale, align_corners, acc):
    """PyTorch's area_pixel_compute_scale: input pixels per output pixel."""
    if align_corners:
        return acc(n - 1) / acc(out - 1) if out > 1 else acc(0)
    return _kernel_scale(n, out, scale, acc)


def _linear_source(n, out, scale, align_corners, cubic, acc):
    """PyTorch's area_pixel_compute_source_index over every output position, in the accumulation type
    (float64 for float64 inputs, else float32)."""
    dst = np.arange(out, dtype=acc)
    s = _area_scale(n, out, scale, align_corners, acc)
    if align_corners:
        return dst * s
    src = s * (dst + acc(0.5)) - acc(0.5)
    return src if cubic else np.maximum(src, acc(0))


def _linear_matrix(n, out, scale, align_corners, acc):
    src = _linear_source(n, out, scale, align_corners, False, acc)
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < n - 1)
    lam = (src - i0).astype(np.float64)
    m = np.zeros((out, n))
    np.add.at(m, (np.arange(out), i0), 1.0 - lam)
    np.add.at(m, (np.arange(out), i1), lam)
    return m


def _cubic_weights(t, a=-0.75):
    """Keys' cubic convolution weights for the four taps at offsets -1, 0, 1, 2 (PyTorch's A = -0.75)."""
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_matrix(n, out, scale, align_corners, acc):
    src = _linear_source(n, out, scale, align_corners, True, acc)
    i0 = np.floor(src).astype(np.int64)
    weights = _cubic_weights((src - i0).astype(np.float64))
    m = np.zeros((out, n))
    for tap, w in zip(range(-1, 3), weights):
        np.add.at(m, (np.arange(out), np.clip(i0 + tap, 0, n - 1)), w)
    return m


def _antialias_filter(x, cubic):
    """The antialiasing filters: the triangle, or Keys' cubic with A = -0.5 (not -0.75)."""
    x = np.abs(x)
    if not cubic:
        return np.maximum(0.0, 1.0 - x)
    a = -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _antialias_matrix(n, out, scale, align_corners, cubic, acc):
    """PyTorch's antialiased weights: when shrinking, the filter is stretched by the scale so every input
    pixel contributes; each row is normalised to sum to 1."""
    s = float(_area_scale(n, out, scale, align_corners, acc))
    support = (2.0 if cubic else 1.0) * max(s, 1.0)
    m = np.zeros((out, n))
    for i in range(out):
        center = s * (i + 0.5)
        lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n)
        w = _antialias_filter((np.arange(lo, hi) - center + 0.5) / max(s, 1.0), cubic)
        m[i, lo:hi] = w / w.sum() if w.sum() != 0 else w
    return m


def _check_interp_mode(input, mode, align_corners, antialias):
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
            "trilinear")
    if antialias and (mode not in ("bilinear", "bicubic", "lanczos") or input.dim() != 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as "
            "input")
    if mode == "lanczos":
        raise NotImplementedError("vkt: interpolate(mode='lanczos') is not implemented")
    if input.dim() not in (3, 4, 5) or mode not in ("nearest", "nearest-exact", "area", *_LINEAR_DIMS):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the modes: "
            f"{_INTERP_MODES} (got {mode})")
    need = _LINEAR_DIMS.get(mode)
    if need is not None and input.dim() != need + 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need + 2}D input")
    if not input.is_floating_point() and mode not in ("nearest", "nearest-exact") and not (
            input.dtype == _C.uint8 and mode in ("bilinear", "bicubic")):
        kernel = "adaptive_avg_pool" if mode == "area" else "upsample_" + mode
        raise NotImplementedError(f'"{kernel}{input.dim() - 2}d" not implemented for \'{_type_name(input.dtype)}\'')


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Separable resampling: nearest modes gather along each spatial dim (index_select); linear, cubic,
    antialiased and area modes apply a host-built (out, in) weight matrix along each spatial dim (one
    matmul each)."""
    _check_interp_mode(input, mode, align_corners, antialias)
    sizes, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor)
    spatial = list(input.shape[2:])
    if any(o <= 0 for o in sizes) or any(n <= 0 for n in spatial):
        names = "DHW"[3 - len(spatial):]
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{c}: {n}" for c, n in zip(names, spatial)) + ") output ("
            + ", ".join(f"{c}: {o}" for c, o in zip(names, sizes)) + ")")
    acc = np.float64 if input.dtype == _C.float64 else np.float32
    as_bytes = input.dtype == _C.uint8 and mode not in ("nearest", "nearest-exact")
    out = input.float() if as_bytes else input
    passes = list(enumerate(zip(spatial, sizes, scales)))
    for i, (n, o, s) in reversed(passes) if as_bytes else passes:  # uint8: PyTorch's order, the last dim first
        dim = i + 2
        if mode in ("nearest", "nearest-exact"):
            out = out.index_select(dim, _host_tensor(_nearest_index(n, o, s, mode == "nearest-exact"), input))
        elif antialias:
            out = _apply_along(out, dim, _antialias_matrix(n, o, s, bool(align_corners), mode == "bicubic", acc))
        elif mode == "area":
            out = _apply_along(out, dim, _adaptive_matrix(n, o))
        elif mode == "bicubic":
            out = _apply_along(out, dim, _cubic_matrix(n, o, s, bool(align_corners), acc))
        else:
            out = _apply_along(out, dim, _linear_matrix(n, o, s, bool(align_corners), acc))
        if as_bytes:  # each pass's result is stored as uint8 there, rounded and saturated
            out = out.round().clamp(0, 255)
    return out.to(_C.uint8) if as_bytes else out


# --- attention ----------------------------------------------------------------------------------

def _check_attention(query, key, value, attn_mask, is_causal):
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
            f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if attn_mask is not None and attn_mask.dtype not in (_C.bool, query.dtype):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: "
            f"{attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")


def _repeat_kv_heads(query, key, value):
    """Grouped-query attention: each key/value head serves H_q / H_kv query heads."""
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")  # sic, PyTorch's
    return key.repeat_interleave(hq // hk, dim=-3), value.repeat_interleave(hq // hv, dim=-3)


def _safe_softmax(scores):
    """Softmax over the last dim whose fully masked rows (all -inf) are 0 rather than NaN, as PyTorch's
    math attention."""
    masked = (scores == float("-inf")).all(dim=-1, keepdim=True)
    return _C.where(masked, scores.new_zeros(()), scores.softmax(-1))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    _check_attention(query, key, value, attn_mask, is_causal)
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        key, value = _repeat_kv_heads(query, key, value)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.mT) * scale
    if is_causal:
        causal = np.tril(np.ones((query.shape[-2], key.shape[-2]), dtype=bool))
        scores = scores.masked_fill(_host_tensor(~causal, query), float("-inf"))
    elif attn_mask is not None and attn_mask.dtype == _C.bool:
        scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
    elif attn_mask is not None:
        scores = scores + attn_mask
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        keep = _C.rand(*weights.shape, device=weights.device, dtype=weights.dtype) >= dropout_p
        weights = weights * keep * (0.0 if dropout_p >= 1.0 else 1.0 / (1.0 - dropout_p))
    return weights @ value


# --- normalisation ------------------------------------------------------------------------------

def _channel_shape(input):
    """The shape that broadcasts a per-channel (dim 1) vector over the input."""
    return (-1,) + (1,) * (input.dim() - 2)


def _check_batch_norm(input, running_mean, running_var, weight, bias, training):
    c = input.shape[1] if input.dim() > 1 else 0
    if training:
        count = input.numel() // max(c, 1)
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{input.shape}")
    elif running_mean is None or running_var is None:
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in evaluation mode")
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-05):
    """Training normalises by the batch's biased variance and moves the running stats (in place, under
    no_grad) towards the batch mean and the unbiased variance; evaluation uses the running stats."""
    _check_batch_norm(input, running_mean, running_var, weight, bias, training)
    shape = _channel_shape(input)
    dims = (0,) + tuple(range(2, input.dim()))
    if training:
        var, mean = _C.var_mean(input, dim=dims, correction=0)
        if running_mean is not None and running_var is not None:
            count = input.numel() // input.shape[1]
            with no_grad():
                running_mean.mul_(1.0 - momentum).add_(mean.detach() * momentum)
                running_var.mul_(1.0 - momentum).add_(var.detach() * (momentum * count / (count - 1)))
    else:
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{_size_list(input)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
                f"{name} of shape {_size_list(t)} and input of shape {_size_list(input)}")
    group = c // num_groups * math.prod(input.shape[2:])
    # each (sample, group) is one row of layer_norm's fused kernel; the affine is per channel, not per row
    out = _C.layer_norm(input.reshape(n, num_groups, group), (group,), eps=eps).reshape(input.shape)
    shape = _channel_shape(input)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out
