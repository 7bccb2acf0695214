"""vkt.nn.functional's sampling grids (affine_grid, grid_sample), gumbel_softmax, embedding_bag, ctc_loss and
multilabel_margin_loss: Python composites of vkt's differentiable device ops (gathers, index_add, scatter_reduce,
where), so values, gradients and errors follow torch's ATen kernels while every float op runs on the device."""
import warnings

import numpy as np

from .. import _C
from ..autograd import no_grad
from ._distance_losses import _enum_reduction
from .functional import _embedding_renorm_, _reduce, _type_name

__all__ = [
    "affine_grid", "grid_sample", "gumbel_softmax", "embedding_bag", "ctc_loss", "multilabel_margin_loss",
]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")
_CUBIC_A = -0.75  # torch's bicubic kernel constant, shared with interpolate


def _tensor_type(dtype):
    return f"torch.{_type_name(dtype)}Tensor"


def _const(array, like):
    """A constant built on the host (a base grid, a mask) on `like`'s device."""
    return _C.tensor(array, device=like.device)


# ---- affine_grid -----------------------------------------------------------------------------------

def _linspace_from_neg_one(steps, align_corners):
    """torch's base-grid coordinates: pixel centres in [-1, 1] (the extremes' centres with align_corners)."""
    if steps <= 1:
        return np.zeros(max(steps, 0))
    values = np.linspace(-1.0, 1.0, steps)
    return values if align_corners else values * (steps - 1) / steps


def affine_grid(theta, size, align_corners=None):
    """theta (N, 2, 3) or (N, 3, 4) applied to the base grid of [x, y, (z,) 1] over size's spatial dims: one
    matmul of a host-built base grid with theta^T, so the gradient to theta is a matmul too."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got torch.{str(theta.dtype).split('.')[-1]}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = list(size[-2:])
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = list(size[-3:])
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    width = len(spatial) + 1
    if theta.shape[0] != size[0]:  # torch's bmm of the (N, ...) base grid with theta^T says so
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, {width}] "
                           f"but got: [{theta.shape[0]}, {width}].")
    # axes in grid order (x over the last dim first), then the homogeneous 1
    axes = [_linspace_from_neg_one(n, align_corners) for n in reversed(spatial)] + [np.ones(1)]
    mesh = np.meshgrid(*reversed(axes[:-1]), indexing="ij")[::-1]
    base = np.stack([m.reshape(-1) for m in mesh] + [np.ones(mesh[0].size)], axis=1)
    base = _const(base.astype(str(theta.dtype).split(".")[-1]), theta)
    return (base @ theta.transpose(1, 2)).reshape(size[0], *spatial, width - 1)


# ---- grid_sample -----------------------------------------------------------------------------------

def _check_grid_sample(input, grid, mode):
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but "
                           f"got grid with sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    nd = 4 if input.dim() == 4 else 5
    if input.dim() != nd or grid.dim() != nd:
        raise RuntimeError(f"grid_sampler(): expected {nd}D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if nd == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found {_type_name(grid.dtype)}")
    if not input.dtype.is_floating_point:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if nd == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_type_name(input.dtype)}\'')


def _unnormalize(coord, size, align_corners):
    """[-1, 1] to pixel coordinates: -1 and 1 are the extreme pixels' centres with align_corners, else their
    outer edges."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(coord, size):
    """coord clamped to [0, size - 1]; as torch, the gradient is 0 on and beyond the borders, 1 strictly inside."""
    with no_grad():
        inside = (coord > 0) & (coord < size - 1)
        clipped = coord.clamp(0, size - 1)
    return _C.where(inside, coord, clipped)


def _reflect(coord, size, align_corners):
    """coord reflected off the borders (the extreme centres with align_corners, else the edges) until inside; the
    gradient is +1 or -1 by the parity of the reflections, as torch's reflect_coordinates_set_grad."""
    low, span = (0.0, size - 1.0) if align_corners else (-0.5, float(size))
    if span == 0:
        return _C.zeros_like(coord)
    shifted = coord - low
    with no_grad():
        sign = _C.where(shifted < 0, -1.0, 1.0)
        flips = (shifted * sign / span).floor()
        even = flips.remainder(2) == 0
    extra = shifted * sign - flips * span
    return _C.where(even, extra, span - extra) + low


def _source_coord(coord, size, padding_mode, align_corners):
    """torch's compute_coordinates: border clips, reflection reflects then clips, zeros leaves coord alone."""
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        return _clip(_reflect(coord, size, align_corners), size)
    return coord


def _cubic_weights(t):
    """The four weights of taps at offsets -1, 0, 1, 2 for a fraction t (Keys' kernel with a = -0.75)."""
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _sample_taps(input, taps):
    """Sum over taps of weight * input at the tap's integer position (zero where outside). taps: lists of
    (index, weight) per grid component (x first), each index a float tensor (N, *out) of integral values made
    without autograd and each weight a tensor (N, *out); all taps are gathered with one index_select."""
    n, channels = input.shape[0], input.shape[1]
    spatial = list(input.shape[2:])
    out_shape = list(taps[0][0][0].shape[1:])
    sizes = spatial[::-1]  # grid component k indexes input dim -1 - k
    strides = [int(np.prod(sizes[:k])) for k in range(len(sizes))]
    volume = int(np.prod(spatial))
    with no_grad():
        batch = (_C.arange(n, device=input.device) * volume).reshape(n, *[1] * len(out_shape))
    rows, weights = [], []
    for combo in np.ndindex(*[len(t) for t in taps]):
        weight, offset, valid = None, batch, None
        for k, i in enumerate(combo):
            index, w = taps[k][i]
            weight = w if weight is None else weight * w
            with no_grad():
                inside = (index >= 0) & (index < sizes[k])
                valid = inside if valid is None else valid & inside
                offset = offset + _C.where(inside, index, 0.0).long() * strides[k]
        rows.append(_C.where(valid, offset, 0))
        weights.append(_C.where(valid, weight, 0.0))
    source = input.reshape(n, channels, volume).transpose(1, 2).reshape(n * volume, channels)
    points = n * int(np.prod(out_shape))
    values = source.index_select(0, _C.stack(rows).reshape(-1)).reshape(len(rows), points, channels)
    out = (values * _C.stack(weights).reshape(len(rows), points, 1)).sum(0)
    return out.reshape(n, points // max(n, 1), channels).transpose(1, 2).reshape(n, channels, *out_shape)


def _zero_grad_link(out, grid):
    """out plus a 0 that depends on grid: torch's nearest mode gives grid a zero gradient, not none."""
    if not grid.requires_grad or grid.numel() == 0:
        return out
    never = _C.zeros(1, dtype=_C.bool, device=grid.device)
    return out + _C.where(never, grid.reshape(-1)[:1], 0.0).reshape(())


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input sampled at grid's [-1, 1] coordinates (x, y(, z) in the last dim): the taps of each output point are
    gathered from the flattened input with one index_select and weighted by differentiable functions of grid, so
    autograd gives input the scatter of the weights and grid the weights' derivatives, as torch's kernels."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    _check_grid_sample(input, grid, mode)
    sizes = list(input.shape[2:])[::-1]
    coords = [_unnormalize(grid[..., k], size, align_corners) for k, size in enumerate(sizes)]
    taps = []
    if mode == "bicubic":  # the padding rule applies to each tap's position, not to the sampling point
        for coord, size in zip(coords, sizes):
            with no_grad():
                first = coord.floor()
            fraction = coord - first
            axis = []
            for i, w in enumerate(_cubic_weights(fraction)):
                with no_grad():
                    index = _source_coord(first + (i - 1), size, padding_mode, align_corners).trunc()
                axis.append((index, w))
            taps.append(axis)
        return _sample_taps(input, taps)
    coords = [_source_coord(c, size, padding_mode, align_corners) for c, size in zip(coords, sizes)]
    if mode == "nearest":
        with no_grad():
            ones = _C.ones_like(coords[0])
            taps = [[(c.round(), ones)] for c in coords]
        return _zero_grad_link(_sample_taps(input, taps), grid)
    for coord in coords:
        with no_grad():
            low = coord.floor()
        taps.append([(low, (low + 1) - coord), (low + 1, coord - low)])
    return _sample_taps(input, taps)


# ---- gumbel_softmax --------------------------------------------------------------------------------

def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1) drawn from vkt's stream as -log(Exponential(1));
    hard returns the one-hot argmax whose gradient is the soft sample's (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_C.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _C.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- embedding_bag ---------------------------------------------------------------------------------

def _check_embedding_bag_types(input, offsets, weight, per_sample_weights):
    for arg, t in (("indices", input), ("offsets", offsets)):
        if t.dtype not in (_C.int64, _C.int32):
            raise RuntimeError(f"Expected tensor for argument #1 '{arg}' to have one of the following scalar types: "
                               f"Long, Int; but got {_tensor_type(t.dtype)} instead (while checking arguments for "
                               "embedding_bag)")
    if not weight.dtype.is_floating_point:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the following scalar types: "
                           f"Half, BFloat16, Float, Double; but got {_tensor_type(weight.dtype)} instead (while "
                           "checking arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
                           f"#1 'per_sample_weights'; but type {_tensor_type(weight.dtype)} does not equal "
                           f"{_tensor_type(per_sample_weights.dtype)} (while checking arguments for embedding_bag)")


def _check_embedding_bag_values(input, offsets, num_weights, padding_idx):
    """torch's checks of the index values, read back to the host as its CPU kernel reads them."""
    if padding_idx is not None and not -num_weights <= padding_idx < num_weights:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num_weights} through "
                           f"{num_weights - 1}, but got {padding_idx}")
    ends = _C.tensor([0, offsets.numel() - 1], device=offsets.device)
    bounds = offsets.index_select(0, ends).tolist() if offsets.numel() else []
    long_type = _C.int64 in (input.dtype, offsets.dtype)
    if bounds and bounds[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {bounds[0]}\n[ torch.{'Long' if long_type else 'Int'}"
                           "Tensor{} ]")
    if bounds and bounds[1] > input.numel():
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {input.numel()} but got "
                           f"offsets[-1] of {bounds[1]}")
    if input.numel():
        low, high = (v.item() for v in input.aminmax())
        if low < 0 or high >= num_weights:
            values = input.tolist()
            first = next(i for i, v in enumerate(values) if not 0 <= v < num_weights)
            raise RuntimeError(f"Index {first} of input takes value {values[first]} which is not in the valid range "
                               f"[0, {num_weights})")


def _bag_max(rows, bag, keep, num_bags):
    """Each bag's elementwise max over its rows, the gradient going to the first row holding it (torch's strict
    '>' scan keeps the first); empty bags are 0."""
    count, dim = rows.shape
    with no_grad():
        target = bag.reshape(-1, 1).expand(count, dim)
        values = _C.where(keep.reshape(-1, 1), rows, float("-inf"))
        best = _C.full((num_bags, dim), float("-inf"), dtype=rows.dtype, device=rows.device)
        best = best.scatter_reduce(0, target, values, "amax")
        hit = (values == best.gather(0, target)) & keep.reshape(-1, 1)
        # the first hit is the max of -position (positions as floats: scatter's amax runs on the device)
        position = _C.arange(count, dtype=rows.dtype, device=rows.device).reshape(-1, 1)
        last = _C.full((num_bags, dim), -float(count), dtype=rows.dtype, device=rows.device)
        first = -last.scatter_reduce(0, target, _C.where(hit, -position, -float(count)), "amax")
        empty = first == count
        first = _C.where(empty, 0.0, first).long()
    return _C.where(empty, 0.0, rows.gather(0, first))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The sum, mean or max of weight's rows over each bag of indices (bags start at offsets, or are the rows of
    a 2-D input): rows are looked up with one embedding gather and pooled into their bags with index_add (sum,
    mean) or scatter_reduce (max); padding_idx entries are left out of the bag and of its mean's count."""
    if weight.dtype == _C.int64 and input.dtype.is_floating_point:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
                         f"then it must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = _C.arange(0, input.numel(), max(input.shape[1], 1), dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if sparse:
        raise NotImplementedError("embedding_bag: sparse=True is not supported (vkt has no sparse tensors); "
                                  "pass sparse=False for a dense gradient")
    _check_embedding_bag_types(input, offsets, weight, per_sample_weights)
    num_weights, dim = weight.shape
    _check_embedding_bag_values(input, offsets, num_weights, padding_idx)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num_weights
    num_bags = max(offsets.shape[0] - 1 if include_last_offset else offsets.shape[0], 0)
    count = input.numel()
    if count == 0 or num_bags == 0:
        return _C.zeros(num_bags, dim, dtype=weight.dtype, device=weight.device)
    index = input.long()
    with no_grad():
        position = _C.arange(count, device=input.device)
        bag = _C.searchsorted(offsets.long(), position, right=True) - 1
        keep = bag < num_bags  # past the last offset with include_last_offset: in no bag
        if padding_idx is not None:
            keep = keep & (index != padding_idx)
        bag = _C.where(keep, bag, 0)
    rows = _C.embedding(weight, index, -1, scale_grad_by_freq, False)
    if mode == "max":
        return _bag_max(rows, bag, keep, num_bags)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    rows = _C.where(keep.reshape(-1, 1), rows, 0.0)
    out = _C.zeros(num_bags, dim, dtype=weight.dtype, device=weight.device).index_add(0, bag, rows)
    if mode == "sum":
        return out
    with no_grad():
        sizes = _C.zeros(num_bags, dtype=weight.dtype, device=weight.device).index_add(0, bag, keep.to(weight.dtype))
    return out / sizes.clamp_min(1).reshape(-1, 1)


# ---- ctc_loss --------------------------------------------------------------------------------------

def _ctc_lengths(lengths, name):
    """Lengths as a list of host ints: torch reads them on the host (its loop bounds)."""
    if isinstance(lengths, _C.Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype == _C.bool:
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def _check_ctc(log_probs, targets, input_lengths, target_lengths, blank):
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    if log_probs.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional tensor for "
                           f"argument #1 'log_probs'{where}")
    if not 1 <= targets.dim() <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional tensor for argument #2 "
                           f"'targets'{where}")
    steps, batch, labels = log_probs.shape
    if not 0 <= blank < labels:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    for length in target_lengths:
        if length < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {length}{where}")
    expected, dim = (sum(target_lengths), 0) if targets.dim() == 1 else (batch, 0)
    if targets.shape[dim] != expected:
        raise RuntimeError(f"Expected tensor to have size {expected} at dimension {dim}, but got size "
                           f"{targets.shape[dim]} for argument #2 'targets'{where}")
    longest = max(target_lengths, default=0)
    if targets.dim() == 2 and targets.shape[1] < longest:
        raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets'{where}")
    for length in input_lengths:
        if length < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {length}{where}")
        if length > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {length}{where}")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if not log_probs.dtype.is_floating_point:
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for \'{_type_name(log_probs.dtype)}\'')


def _padded_targets(targets, target_lengths, blank, like):
    """targets as (N, S) int64 on like's device, S the longest target, blank past each target's length (so padding
    values are never used as labels)."""
    batch, longest = len(target_lengths), max(target_lengths, default=0)
    mask = np.arange(longest)[None, :] < np.array(target_lengths, dtype=np.int64).reshape(batch, 1)
    targets = targets.to(like.device)
    if targets.dim() == 1:  # concatenated: row b starts after the lengths before it
        starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]]).astype(np.int64).reshape(batch, 1)
        index = np.where(mask, starts + np.arange(longest)[None, :], 0)
        padded = targets.index_select(0, _const(index.reshape(-1), like)).reshape(batch, longest)
    else:
        padded = targets[:, :longest]
    return _C.where(_const(mask, like), padded.long(), blank)


def _logsumexp(terms):
    """log(sum(exp(terms))) elementwise whose value is -inf, and whose gradient is 0 rather than NaN, where every
    term is -inf (states no path reaches yet)."""
    with no_grad():
        top = terms[0]
        for t in terms[1:]:
            top = _C.maximum(top, t)
        dead = top == float("-inf")
        top = _C.where(dead, 0.0, top)
    total = (terms[0] - top).exp()
    for t in terms[1:]:
        total = total + (t - top).exp()
    return _C.where(dead, float("-inf"), _C.where(dead, 1.0, total).log() + top)


def _ctc_nll(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    """-log p(target | log_probs) per sample by the CTC forward recursion over the extended labels (blank, l1,
    blank, ..., lS, blank): one step per time step, each a few ops over all samples and states at once. The state
    before t = 0 is the single path at state 0, so t = 0 is an ordinary step."""
    steps, batch, _ = log_probs.shape
    padded = _padded_targets(targets, target_lengths, blank, log_probs)
    longest = padded.shape[1]
    blanks = _C.full((batch, longest + 1), blank, dtype=_C.int64, device=log_probs.device)
    extended = _C.cat([_C.stack([blanks[:, 1:], padded], 2).reshape(batch, 2 * longest), blanks[:, :1]], 1)
    states = 2 * longest + 1
    # a label may follow the label two states back, skipping the blank between, unless they are equal
    # (at blank states both are blank, so the comparison also rules those out)
    no = _C.zeros((batch, 2), dtype=_C.bool, device=log_probs.device)
    skip = _C.cat([no, extended[:, 2:] != extended[:, :-2]], 1)
    emit = log_probs.gather(2, extended.unsqueeze(0).expand(steps, batch, states))
    start = np.full((batch, states), -np.inf)
    start[:, 0] = 0
    alpha = _const(start.astype(str(log_probs.dtype).split(".")[-1]), log_probs)
    none = _C.full((batch, 2), float("-inf"), dtype=log_probs.dtype, device=log_probs.device)
    active = _const(np.arange(steps)[:, None, None] < np.array(input_lengths).reshape(1, batch, 1), log_probs)
    for t in range(max(input_lengths, default=0)):
        stay, advance = alpha, _C.cat([none[:, :1], alpha[:, :-1]], 1)
        jump = _C.where(skip, _C.cat([none, alpha[:, :-2]], 1), float("-inf"))
        step = _logsumexp([stay, advance, jump]) + emit[t]
        alpha = step if min(input_lengths) > t else _C.where(active[t], step, alpha)
    lengths = _const(np.array(target_lengths, dtype=np.int64).reshape(batch, 1), log_probs)
    last = alpha.gather(1, 2 * lengths)
    before = _C.where(lengths > 0, alpha.gather(1, (2 * lengths - 1).clamp_min(0)), float("-inf"))
    nll = -_logsumexp([last, before]).reshape(batch)
    # torch's kernel returns exp(log_probs) - posterior for t < input_length (its gradient as if log_probs were
    # followed by log_softmax's normalisation); a term of value 0 adds the exp(log_probs) part
    mass = _C.where(active, log_probs.exp(), 0.0).sum((0, 2))
    extra = mass - mass.detach()
    with no_grad():
        impossible = nll == float("inf")
        root = _C.where(impossible, 0.0, 1.0)
    if zero_infinity:  # torch zeroes both the loss and the gradient of a sample no alignment fits
        return _C.where(impossible, 0.0, nll + extra)
    # without zero_infinity torch's formula takes inf - inf there: NaN gradients, which the backward of 0 * sqrt(0)
    # makes (sqrt(1) elsewhere, whose backward is finite)
    return nll + _C.where(impossible, (extra + root).sqrt() * 0, extra)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss of log_probs (T, N, C) or (T, C) against targets padded (N, S)
    or concatenated (sum of target_lengths); 'mean' divides each loss by its target length first."""
    reduction = _enum_reduction(reduction, None, None)
    tensors = [isinstance(v, _C.Tensor) for v in (input_lengths, target_lengths)]
    if tensors[0] != tensors[1] or any(not t and isinstance(v, (int, float)) for t, v in
                                       zip(tensors, (input_lengths, target_lengths))):
        kinds = ", ".join(type(v).__name__ if not isinstance(v, _C.Tensor) else "Tensor"
                          for v in (input_lengths, target_lengths))
        raise TypeError(f"ctc_loss() received an invalid combination of arguments - got (Tensor, Tensor, {kinds}, "
                        "int, int, bool), but expected one of: (Tensor log_probs, Tensor targets, tuple of ints "
                        "input_lengths, tuple of ints target_lengths, ...) or (Tensor log_probs, Tensor targets, "
                        "Tensor input_lengths, Tensor target_lengths, ...)")
    input_lengths = _ctc_lengths(input_lengths, "input_lengths")
    target_lengths = _ctc_lengths(target_lengths, "target_lengths")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    _check_ctc(lp, targets, input_lengths, target_lengths, blank)
    nll = _ctc_nll(lp, targets, input_lengths, target_lengths, blank, zero_infinity)
    if reduction == "mean":
        lengths = _const(np.maximum(np.array(target_lengths), 1).astype(str(nll.dtype).split(".")[-1]), nll)
        return (nll / lengths).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)


# ---- multilabel_margin_loss ------------------------------------------------------------------------

def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over targets j and non-targets i of max(0, 1 - (x[y_j] - x[i])) / C per sample, the targets being
    target's values up to its first negative one."""
    reduction = _enum_reduction(reduction, size_average, reduce)
    ndims = input.dim()
    if not ((ndims == 2 and input.shape[1] != 0) or (ndims == 1 and input.shape[0] != 0) or ndims == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    frames, dim = (1, input.shape[0] if ndims else 1) if ndims <= 1 else tuple(input.shape)
    consistent = target.dim() <= 1 and target.numel() == dim if ndims <= 1 else tuple(target.shape) == (frames, dim)
    if not consistent:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {_type_name(target.dtype)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"multilabel_margin_loss_forward_out_frame" not implemented for '
                                  f"'{_type_name(input.dtype)}'")
    if target.numel():
        low, high = (v.item() for v in target.aminmax())
        if low < -1 or high >= dim:
            raise RuntimeError("argument #2 'target' is out of range")
    x, y = input.reshape(frames, dim), target.reshape(frames, dim)
    with no_grad():
        listed = (y < 0).long().cumsum(1) == 0  # the targets stop at the first negative entry
        label = _C.where(listed, y, 0)
        marks = _C.zeros((frames, dim), dtype=input.dtype, device=input.device)
        is_target = marks.scatter_add(1, label, listed.to(input.dtype)) > 0
    margin = 1 - x.gather(1, label).unsqueeze(2) + x.unsqueeze(1)
    counted = listed.unsqueeze(2) & is_target.logical_not().unsqueeze(1) & (margin > 0)
    loss = _C.where(counted, margin, 0.0).sum((1, 2)) / dim
    if reduction == "none":
        return loss.reshape(()) if ndims <= 1 else loss
    return _reduce(loss, reduction)
