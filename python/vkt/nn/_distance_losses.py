"""vkt.nn.functional's distances (cosine_similarity, pairwise_distance, pdist) and the losses made of distances,
margins and likelihoods: Python composites of vkt ops written as torch's ATen code computes them, so that
values, gradients and errors match torch's at the edges too (zero vectors, ties, clamps)."""
import math
import warnings

from .. import _C
from ..autograd import is_grad_enabled, no_grad
from ..functional import _broadcast_shape, _kernel_dist, _norm
from .functional import _REDUCTIONS, _reduce, _reduction, _type_name, logsigmoid

__all__ = [
    "cosine_similarity", "pairwise_distance", "pdist", "triplet_margin_loss", "cosine_embedding_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
    "multi_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
]


def _enum_reduction(reduction, size_average, reduce):
    """The reduction of the losses torch passes to ATen as an enum (_Reduction.get_enum): as _reduction, and the
    old 'elementwise_mean' still means 'mean', with torch's warning."""
    if size_average is None and reduce is None and reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.", stacklevel=3)
        return "mean"
    return _reduction(reduction, size_average, reduce)


def _check_no_grad(t, arg, name):
    """torch's ATen kernels for these losses have no derivative for some arguments, and refuse them with grad."""
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{name}' is not differentiable with respect to argument '{arg}'. This "
                           "input cannot have requires_grad True.")


def _sizes(t):
    return list(t.shape)


def _result_type(a, b):
    """torch.result_type(a, b), read off a product of empty slices (a 0-d operand stays 0-d: its rank matters)."""
    def probe(t):
        return t.detach().reshape(-1)[:0] if t.dim() else t.detach()
    return (probe(a) * probe(b)).dtype


# ---- distances ----

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum over dim of (x1 / |x1|) * (x2 / |x2|), each norm clamped below at eps. As torch 2.x: dividing first
    keeps the result in [-1, 1], and the clamp is made without autograd, so the gradient at a clamped norm is
    the formula's with the norm replaced by eps (a zero vector's gradient is the other's unit vector / eps)."""
    dtype = _result_type(x1, x2)
    if not dtype.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_type_name(dtype)}")
    x1, x2 = (x if x.dtype.is_floating_point else x.to(dtype) for x in (x1, x2))
    shape = _broadcast_shape(x1.shape, x2.shape)
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    n1, n2 = x1.norm(2, dim, True).clone(), x2.norm(2, dim, True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim (torch adds eps to each difference, not to the norm)."""
    _broadcast_shape(x1.shape, x2.shape)
    return _norm(x1 - x2 + eps, p, max(x1.dim(), x2.dim()) - 1, keepdim)


def pdist(input, p=2):
    """The p-norm distance between each pair of rows i < j of a 2-D input, in row-major order of (i, j)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows = input.shape[0]
    first, second = _C.triu_indices(rows, rows, 1, device=input.device)
    return _kernel_dist(input.index_select(0, first) - input.index_select(0, second), p)


# ---- losses on distances and margins ----

def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d pairwise_distance; swap takes d(a, n) as min(d(a, n), d(p, n))."""
    reduction = _enum_reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = _C.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1, 0 elsewhere; cos as
    torch's kernel: x1.x2 / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12))."""
    reduction = _enum_reduction(reduction, size_average, reduce)
    dim = target.dim()
    if dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != dim + 1 or input2.dim() != dim + 1:
        raise RuntimeError(f"{dim}D target tensor expects {dim + 1}D input tensors, but found inputs with sizes "
                           f"{_sizes(input1)} and {_sizes(input2)}.")
    _broadcast_shape(input1.shape, input2.shape)
    squared1 = (input1 * input1).sum(dim) + 1e-12
    squared2 = (input2 * input2).sum(dim) + 1e-12
    cos = (input1 * input2).sum(dim) / (squared1 * squared2).sqrt()
    _broadcast_shape(target.shape, cos.shape)
    loss = _C.where(target == 1, 1 - cos, 0.0) + _C.where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _enum_reduction(reduction, size_average, reduce)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    _broadcast_shape(target.shape, _broadcast_shape(input1.shape, input2.shape))
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1; both terms for any other target value,
    as torch's kernel adds them."""
    reduction = _enum_reduction(reduction, size_average, reduce)
    _broadcast_shape(target.shape, input.shape)
    loss = _C.where(target != 1, (margin - input).clamp_min(0), 0.0) + _C.where(target != -1, input, 0.0)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), in input's dtype and shape: torch writes it into a tensor like input,
    so target must broadcast to input's shape."""
    reduction = _enum_reduction(reduction, size_average, reduce)
    _check_no_grad(target, "target", "soft_margin_loss")
    shape = _broadcast_shape(input.shape, target.shape)
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {_sizes(input)} doesn't match the broadcast shape {list(shape)}")
    return _reduce((-input * target).to(input.dtype).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The binary cross entropy of sigmoid(input) per class (the last dim), times weight, averaged over the classes."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    if input.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.shape[class_dim]
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _check_multi_margin(input, target, weight):
    """multi_margin_loss's shape and dtype checks, in torch's order; returns (samples, classes)."""
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{_sizes(input)}")
    samples, classes = (input.shape[0], input.shape[1]) if nd == 2 else (1, input.shape[0] if nd else 1)
    if target.dim() > 1 or target.numel() != samples:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{samples}], but got {_sizes(target)}. "
                           f"Input has shape {_sizes(input)}.")
    if weight is not None and (weight.dim() > 1 or weight.numel() != classes):
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got {_sizes(weight)}")
    if input.numel() == 0:
        return samples, classes
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"multi_margin_loss_cpu_kernel\" not implemented for '{_type_name(input.dtype)}'")
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {_type_name(target.dtype)}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found {_type_name(weight.dtype)}")
    if target.min().item() < 0 or target.max().item() >= classes:  # torch's kernel checks each index
        raise RuntimeError("target out of range")
    return samples, classes


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Per sample, the sum over classes j other than the target y of max(0, margin - x[y] + x[j])^p (times
    weight[y]), divided by the number of classes."""
    reduction = _enum_reduction(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_no_grad(weight, "weight", "multi_margin_loss")
    samples, classes = _check_multi_margin(input, target, weight)
    x = input.reshape(samples, classes)
    y = target.reshape(samples, 1)
    z = margin - x.gather(1, y) + x
    # where() rather than clamp_min: torch's kernel gives no gradient at z == 0, and none to the target class
    counted = (z > 0) & (_C.arange(classes, device=input.device) != y)
    loss = _C.where(counted, z, 0.0)
    if p == 2:
        loss = loss * loss
    if weight is not None:
        loss = loss * weight.gather(0, y.reshape(-1)).reshape(samples, 1)
    loss = loss.sum(1) / classes
    return loss.reshape(target.shape) if reduction == "none" else _reduce(loss, reduction)


# ---- likelihoods ----

def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); full adds Stirling's
    approximation of log(target!) where target > 1."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not a valid value for reduction")
    _broadcast_shape(target.shape, input.shape)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def _gaussian_var(input, var):
    """var as torch's gaussian_nll_loss takes it: a float, input's shape, input's shape less the last dim, or
    input's shape with one dim of size 1."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        return var * _C.ones_like(input)
    if (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) == tuple(input.shape):
        return var
    if tuple(input.shape[:-1]) == tuple(var.shape):
        return var.unsqueeze(-1)
    if input.dim() == var.dim() and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
        return var
    raise ValueError("var is of incorrect size")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(var) + (input - target)^2 / var), var clamped below at eps without autograd (so its gradient is
    the formula's at the clamped value, as torch's); full adds 0.5 log(2 pi)."""
    var = _gaussian_var(input, var)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_min_(eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
