"""vkt.nn.functional: PyTorch's torch.nn.functional names over vkt's operators."""
import warnings

from .. import _C
from .._surface import finfo
from ..autograd import no_grad


def relu(input, inplace=False):
    return input.relu_() if inplace else _C.relu(input)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if input.dtype == _C.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not input.dtype.is_floating_point:  # PyTorch keeps an integer input's dtype, bounds truncated
        min_val, max_val = int(min_val), int(max_val)
        if input.dtype == _C.uint8 and min(min_val, max_val) < 0:
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return _C._hardtanh(input, min_val, max_val, inplace)


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return input.silu_() if inplace else _C.silu(input)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def hardsigmoid(input, inplace=False):
    return _C.hardsigmoid_(input) if inplace else _C.hardsigmoid(input)


def hardswish(input, inplace=False):
    return _C.hardswish_(input) if inplace else _C.hardswish(input)


def mish(input, inplace=False):
    return _C.mish_(input) if inplace else _C.mish(input)


def logsigmoid(input):
    return _C.logsigmoid(input)


def selu(input, inplace=False):
    return _C.selu_(input) if inplace else _C.selu(input)


def celu(input, alpha=1.0, inplace=False):
    return input.celu_(alpha) if inplace else _C.celu(input, alpha)


def softsign(input):
    return _C.softsign(input)


def tanhshrink(input):
    return _C.tanhshrink(input)


def _middle(input, lambd):
    """Where input lies in [-lambd, lambd] (not where it is NaN): what hardshrink and softshrink zero, and where
    their gradient is 0."""
    return (input >= -lambd) & (input <= lambd)


def hardshrink(input, lambd=0.5):
    """input, but 0 in [-lambd, lambd]; the gradient 1 outside, as PyTorch's HardshrinkBackward0."""
    if not input.dtype.is_floating_point:
        raise _no_kernel("hardshrink_cpu", input.dtype)
    return _C.where(_middle(input, lambd), 0.0, input)


def softshrink(input, lambd=0.5):
    """input moved lambd towards 0, and 0 in [-lambd, lambd] (x * 0 there: -0.0 for negatives, as PyTorch's)."""
    if not input.dtype.is_floating_point:
        raise _no_kernel("softshrink_check", input.dtype)
    largest = finfo(input.dtype).max
    if not 0 <= lambd <= largest:
        raise RuntimeError(f"lambda must be in range [0, {largest:g}] for input dtype {_type_name(input.dtype)}, "
                           f"but found {lambd:g}")
    return _C.where(_middle(input, lambd), input * 0, input - input.clamp(-lambd, lambd))


def threshold(input, threshold, value, inplace=False):
    return input.threshold_(threshold, value) if inplace else _C.threshold(input, threshold, value)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return input.leaky_relu_(negative_slope) if inplace else _C.leaky_relu(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return input.elu_(alpha) if inplace else _C.elu(input, alpha)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a random slope: in training each element at or below 0 takes a slope drawn uniformly from
    [lower, upper] (vkt's random stream, so vkt.manual_seed repeats it), which its gradient takes too; in
    evaluation every such element takes (lower + upper) / 2."""
    return _rrelu(input, lower, upper, training, inplace, None)


def _rrelu(input, lower, upper, training, inplace, generator):
    """rrelu, its slopes drawn from generator where one is given (torch.rrelu's argument)."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"rrelu(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not input.dtype.is_floating_point:  # PyTorch's kernels' words
        kernel = "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_type_name(input.dtype)}\'')
    noise = None
    if training:
        with no_grad():
            draws = (_C.rand(*input.shape, dtype=input.dtype, device=input.device) if generator is None
                     else input.new_empty(input.shape).uniform_(generator=generator))
            noise = _C.where(input.detach() <= 0, draws * (upper - lower) + lower, 1.0)
    return _C._rrelu_with_noise(input, noise, (lower + upper) / 2, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def relu_(input):
    return relu(input, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):
    return input.threshold_(threshold, value)


def softplus(input, beta=1.0, threshold=20.0):
    return _C.softplus(input, beta, threshold)


def linear(input, weight, bias=None):
    return _C.linear(input, weight, bias)


# ---- softmax family, with torch's implicit dim ----

def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return _C.softmax(-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _C.log_softmax(input, dim, dtype=dtype)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight one value or one per channel (dim 1)."""
    if weight.numel() != 1 and (input.dim() < 2 or weight.numel() != input.shape[1]):
        channels = input.shape[1] if input.dim() >= 2 else 1
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.numel()} and channel size = {channels}.")
    if weight.numel() != 1:
        weight = weight.reshape((-1,) + (1,) * (input.dim() - 2))
    return _C.where(input > 0, input, weight * input)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if not input.dtype.is_floating_point:
        raise _no_kernel("glu_cpu", input.dtype)
    a, b = input.chunk(2, dim)
    return a * _C.sigmoid(b)


# ---- linear layers, dropout ----

def _bilinear_check(input1, input2, weight, bias):
    """PyTorch's checks of bilinear's arguments, in its order and words: the inputs' batch dims must be equal, not
    merely broadcast."""
    named = [("input1", input1), ("input2", input2), ("weight", weight)] + ([] if bias is None else [("bias", bias)])
    if any(t.dtype != input1.dtype for _, t in named):
        raise RuntimeError("All tensors must have the same dtype, got " +
                           ", ".join(f"{name}: {_c10_name(t.dtype)}" for name, t in named))
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got {input1.shape[i]} "
                               f"and {input2.shape[i]}")
    from ..functional import _size

    # one at a time: a weight of fewer than 3 dims fails on the first size it lacks, as PyTorch's does
    for name, t, dim, wdim in [("input1", input1, -1, 1), ("input2", input2, -1, 2), ("bias", bias, 0, 0)]:
        if t is not None and _size(t, dim) != weight.size(wdim):
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {_size(t, dim)} but "
                               f"expected {weight.size(wdim)}")
    if weight.dim() != 3:  # PyTorch's _trilinear's words
        raise RuntimeError("number of dimensions must match")


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o], as one matmul and a sum."""
    _bilinear_check(input1, input2, weight, bias)
    out_features, in1, in2 = weight.shape
    flat = input1 @ weight.permute(1, 0, 2).reshape(in1, out_features * in2)
    y = (flat.reshape(*flat.shape[:-1], out_features, in2) * input2.unsqueeze(-2)).sum(-1)
    return y if bias is None else y + bias


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(input, p, shape):
    """1/(1-p) where an element is kept, 0 where dropped, broadcast from shape; the draws come from
    vkt.rand, so vkt.manual_seed makes a run repeatable."""
    draws = _C.rand(*shape, dtype=input.dtype, device=input.device)
    return (draws >= p).to(input.dtype) * (1.0 / (1.0 - p))


def _apply_dropout(input, p, training, inplace, shape):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    mask = _dropout_mask(input, p, shape)
    return input.mul_(mask) if inplace else input * mask


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1/(1-p), in training only."""
    return _apply_dropout(input, p, training, inplace, tuple(input.shape))


def _channel_dropout(name, input, p, training, inplace, spatial, batched):
    """Dropout of whole channels: the mask is one draw per (sample, channel), or per channel unbatched."""
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{name}: Expected {spatial + 1}D or {spatial + 2}D input, but received a "
                           f"{input.dim()}D input.")
    lead = 2 if batched or input.dim() == spatial + 2 else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.dim() - lead)
    return _apply_dropout(input, p, training, inplace, shape)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of an (N, C, L) or (C, L) input with probability p."""
    return _channel_dropout("dropout1d", input, p, training, inplace, 1, False)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of an (N, C, H, W) input with probability p; a 3-D input is read as (N, C, L),
    with torch's warning."""
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    return _channel_dropout("dropout2d", input, p, training, inplace, 2, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    return _channel_dropout("dropout3d", input, p, training, inplace, 3, False)


# ---- embedding, normalisation ----
# layer_norm, rms_norm and embedding check their arguments with torch's messages, then call their
# single-kernel C op (vkt.layer_norm, vkt.rms_norm, vkt.embedding: one shader forward and backward).

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """weight's rows at the indices in input; the padding_idx row gets no gradient; with max_norm, the
    rows looked up are first renormalised in place to norm at most max_norm."""
    num = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx >= 0:
        if padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < -num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    else:
        padding_idx += num
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _C.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Scales the rows input names so their norm_type-norm is at most max_norm (torch.embedding_renorm_)."""
    with no_grad():
        rows = _C.unique(input.reshape(-1))
        selected = weight.index_select(0, rows)
        norms = selected.norm(norm_type, 1, True)
        scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), _C.ones_like(norms))
        weight.index_copy_(0, rows, selected * scale)


def _normalized_dims(input, normalized_shape, weight, bias, rms=False):
    """normalized_shape as a tuple, checked against input's trailing sizes and the affine tensors (with
    layer_norm's or rms_norm's wording, which differ in torch)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                           "one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(shape)}")
    if rms and input.dim() < len(shape):
        raise ValueError(f"Input tensor must have at least {len(shape)} dimensions, but got {input.dim()}")
    if input.dim() < len(shape) or tuple(input.shape[input.dim() - len(shape):]) != shape:
        expected = ("[*" if rms else "[*, ") + ", ".join(str(s) for s in shape) + "]"
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape {expected}, but got "
                           f"input of size{list(input.shape)}")
    return shape


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing normalized_shape dims."""
    shape = _normalized_dims(input, normalized_shape, weight, bias)
    return _C.layer_norm(input, shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims; eps=None is the
    machine epsilon of input's dtype."""
    shape = _normalized_dims(input, normalized_shape, weight, None, rms=True)
    return _C.rms_norm(input, shape, weight, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps)."""
    y = input / input.norm(p, dim, True).clamp_min(eps)
    return y if out is None else out.copy_(y)


def one_hot(tensor, num_classes=-1):
    """An int64 tensor with a trailing dim of num_classes (max + 1 for -1), 1 at each value's position."""
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0 and num_classes <= 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if tensor.numel() and tensor.min().item() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    elif tensor.numel() and tensor.max().item() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _C.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(_C.int64)


# ---- losses ----

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction, size_average=None, reduce=None):
    """The reduction string, from the legacy size_average/reduce flags where given (as torch, with its warning)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      "instead.", stacklevel=3)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def _warn_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _pointwise_loss(loss, input, weight, reduction, weighted_mean):
    """Reduces an elementwise loss; with weight, multiplies first and (for weighted_mean) divides the sum
    by the weights' sum, as torch's weighted mse_loss and l1_loss do."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and weighted_mean:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    diff = input - target
    return _pointwise_loss(diff * diff, input, weight, reduction, True)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    return _pointwise_loss((input - target).abs(), input, weight, reduction, True)


def _huber(diff, delta):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    a = diff.abs()
    return _C.where(a < delta, 0.5 * diff * diff, delta * (a - 0.5 * delta))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """huber_loss / beta: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; L1 for beta=0."""
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = input - target
    loss = diff.abs() if beta == 0 else _huber(diff, beta) * (1.0 / beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _warn_size(input, target)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _pointwise_loss(_huber(input - target, delta), input, weight, reduction, False)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)) * weight, each log clamped at -100 as torch does."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    loss = -(target * input.log().clamp_min(-100.0) + (1 - target) * (1 - input).log().clamp_min(-100.0))
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(x), t) computed stably: (1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x)."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    log_weight = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    loss = (1 - target) * input - log_weight * _C.logsigmoid(input)
    return _reduce(loss if weight is None else loss * weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input) pointwise (input holds log-probabilities); "batchmean" divides the sum
    by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        positive = target > 0  # 0 log 0 is 0, and the log of the other branch must not make NaN gradients
        loss = _C.where(positive, target * _C.where(positive, target, 1.0).log(), 0.0) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


# nll_loss and cross_entropy check their arguments with torch's messages, then call their single-kernel
# C op (vkt._C.nll_loss, vkt._C.cross_entropy_loss).

def _check_class_target(input, target, weight, name):
    """The shape and dtype rules nll_loss and cross_entropy share for class-index targets."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if target.dtype not in (_C.int64, _C.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_type_name(target.dtype)}")
    batch = tuple(input.shape[:1] + input.shape[2:]) if input.dim() > 1 else ()
    if input.dim() > 1 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if tuple(target.shape) != batch:
        raise RuntimeError(f"{name}: expected target of shape {list(batch)}, got {list(target.shape)}")
    classes = input.shape[1] if input.dim() > 1 else input.shape[0]
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")


def _type_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int", "int64": "Long",
            "uint8": "Byte", "bool": "Bool"}[str(dtype).split(".")[-1]]


def _c10_name(dtype):
    """c10's name of dtype, the one some of PyTorch's messages use ("long int" where others say "Long")."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int32": "int", "int64": "long int",
            "uint8": "unsigned char", "bool": "bool"}[str(dtype).split(".")[-1]]


def _no_kernel(kernel, dtype):
    """PyTorch's error where its CPU kernel `kernel` has no loop for dtype."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_type_name(dtype)}\'')


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-weight[t] * input[t] per sample, input holding log-probabilities over dim 1 (dim 0 when 1-d);
    "mean" divides by the sum of the weights of the targets not ignored."""
    reduction = _reduction(reduction, size_average, reduce)
    _check_class_target(input, target, weight, "nll_loss")
    return _C.nll_loss(input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """nll_loss(log_softmax(input, class dim), target) for class indices, or -sum(target * log_softmax)
    for class probabilities (a floating target of input's shape); label_smoothing mixes in the uniform
    distribution."""
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("Expected target size {}, got {}".format(list(input.shape), list(target.shape)))
    else:
        _check_class_target(input, target, weight, "cross_entropy")
    return _C.cross_entropy_loss(input, target, weight, reduction, ignore_index, label_smoothing)


from ._spatial import *  # noqa: E402,F401,F403
from ._distance_losses import *  # noqa: E402,F401,F403
from ._layers_more import *  # noqa: E402,F401,F403
from ._functional_more import *  # noqa: E402,F401,F403
