"""torch's top-level forms of vkt's Tensor methods and nn.functional: the in-place functions (vkt.abs_(t) is
t.abs_()), fill and detach, the dropout family's (input, p, train), and the NN functions with torch's top-level
signatures, which differ from torch.nn.functional's (batch_norm's argument order, reductions as ints, no inplace=)."""
from . import _C
from .functional import _check_tensor
from .nn import functional as F

# ---- in-place functions: each calls the Tensor method of its name

_INPLACE = (
    "abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_ ceil_ clamp_ "
    "clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ i0_ log10_ log1p_ "
    "log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ "
    "sqrt_ square_ tan_ tanh_ trunc_ xlogy_ gcd_ lcm_ ldexp_ zero_ fill_ threshold_ celu_ detach_"
).split()


def _inplace_function(name):
    def function(input, *args, **kwargs):
        _check_tensor(name, "input", input, 1)
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{name}(input, ...): input.{name}(...), in place."
    return function


INPLACE = {name: _inplace_function(name) for name in _INPLACE}


def fill(input, value):
    """A tensor like input filled with value (a number or a 0-d tensor); its gradient reaches value only."""
    _check_tensor("fill", "input", input, 1)
    return input.clone().fill_(value)


def detach(input):
    _check_tensor("detach", "input", input, 1)
    return input.detach()


def is_same_size(input, other):
    _check_tensor("is_same_size", "input", input, 1)
    _check_tensor("is_same_size", "other", other, 2)
    return input.is_same_size(other)


def get_device(input):
    _check_tensor("get_device", "input", input, 1)
    return input.get_device()


# ---- dropout, as torch's _dropout_impl: p is checked first, and an evaluation call returns input itself


def _check_p(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p, train):
    _check_p(p)
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    _check_p(p)
    return F.dropout(input, p, train, inplace=True)


def _feature_dropout(input, p, train, inplace):
    """dropout of whole channels: one draw per (dim 0, dim 1) pair, shared over the other dims."""
    _check_p(p)
    if p == 0 or not train or input.numel() == 0:
        return input
    if p < 1 and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return F._apply_dropout(input, p, train, inplace, tuple(input.shape[:2]) + (1,) * (input.ndim - 2))


def feature_dropout(input, p, train):
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    return _feature_dropout(input, p, train, True)


def alpha_dropout(input, p, train):
    _check_p(p)
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    _check_p(p)
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    _check_p(p)
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    _check_p(p)
    return F.feature_alpha_dropout(input, p, train, inplace=True)


# ---- NN functions with torch's top-level signatures

# The same signature at the top level as in torch.nn.functional.
SAME = ("conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d avg_pool1d adaptive_avg_pool1d "
        "bilinear cosine_similarity pairwise_distance pdist pixel_shuffle pixel_unshuffle channel_shuffle").split()


def _reduction(name, reduction, position):
    """torch's reduction enum as nn.functional's name: 1 mean, 2 sum, any other int none (as ATen reads it). The
    losses' reduction defaults to 0, none: torch's schemas say Mean, but its Python bindings pass 0 when it is left
    out, so torch.kl_div(input, target) is unreduced."""
    if not isinstance(reduction, int) or isinstance(reduction, bool):
        raise TypeError(f"{name}(): argument 'reduction' (position {position}) must be int, not "
                        f"{type(reduction).__name__}")
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def native_channel_shuffle(input, groups):
    return F.channel_shuffle(input, groups)


def _stride(stride):
    """torch's empty stride, the kernel size, as nn.functional's None."""
    return None if isinstance(stride, (tuple, list)) and not stride else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return tuple(F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices=True))


def adaptive_max_pool1d(input, output_size):
    return tuple(F.adaptive_max_pool1d(input, output_size, return_indices=True))


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """vkt's C layer_norm, which checks its arguments as torch's top-level one, taking cudnn_enable too."""
    return _C.layer_norm(input, normalized_shape, weight, bias, eps)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return F._rrelu(input, lower, upper, training, False, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return F._rrelu(input, lower, upper, training, True, generator)


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, list(pad), "constant", value)


def kl_div(input, target, reduction=0, *, log_target=False):
    """Unreduced by nn.functional's kl_div, then reduced here: torch's top-level mean has no 'batchmean' warning."""
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return F._reduce(loss, _reduction("kl_div", reduction, 3))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction, 4))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction, 5))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction, 5))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction, 8))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction, 6))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                              reduction=_reduction("binary_cross_entropy_with_logits", reduction, 5))


# Everything vkt/__init__.py puts at the top level from here, by name.
FUNCTIONS = {name: getattr(F, name) for name in SAME}
FUNCTIONS.update({f.__name__: f for f in (
    fill, detach, is_same_size, get_device, dropout, dropout_, feature_dropout, feature_dropout_, alpha_dropout,
    alpha_dropout_, feature_alpha_dropout, feature_alpha_dropout_, native_channel_shuffle, max_pool1d, max_pool2d,
    max_pool3d, max_pool1d_with_indices, adaptive_max_pool1d, batch_norm, instance_norm, group_norm, layer_norm, rrelu,
    rrelu_, constant_pad_nd, kl_div, hinge_embedding_loss, margin_ranking_loss, cosine_embedding_loss,
    triplet_margin_loss, poisson_nll_loss, binary_cross_entropy_with_logits)})
FUNCTIONS.update(INPLACE)
