"""Autocast's op lists, as torch's CUDA lists (aten/src/ATen/autocast_mode.cpp) for the ops vkt has, and the
caster that csrc/python/amp.c calls for a listed op while autocast is on: it casts the op's tensor arguments."""
import functools

from .. import _C
from .autocast_mode import _cast, _state

LOWER, FP32, FP32_SET_OPT_DTYPE, PROMOTE, BANNED = 1, 2, 3, 4, 5

# ops of vkt._C (functions and Tensor methods of these names); in-place variants are not listed, as in torch
C_OPS = {
    LOWER: "matmul mm bmm addmm addbmm baddbmm addmv mv linear matmul_add_relu",
    FP32: "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus layer_norm "
          "logsumexp nll_loss cross_entropy_loss norm binary_cross_entropy_with_logits",
    FP32_SET_OPT_DTYPE: "softmax log_softmax sum prod cumsum cumprod",
    PROMOTE: "addcdiv addcmul atan2 dot vdot index_put scatter_add cat stack index_copy",
    BANNED: "binary_cross_entropy",
}

# Python functions: (module path, names); each is wrapped where it is defined and where vkt re-exports it
PY_OPS = {
    LOWER: [("nn.functional", "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d prelu "
                              "scaled_dot_product_attention"), ("", "einsum")],
    FP32: [("nn.functional", "layer_norm group_norm cosine_similarity poisson_nll_loss cosine_embedding_loss "
                             "nll_loss hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss "
                             "margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss "
                             "multi_margin_loss binary_cross_entropy_with_logits pdist softplus cross_entropy "
                             "interpolate"),
           ("", "cdist dist")],
    FP32_SET_OPT_DTYPE: [("linalg", "vector_norm matrix_norm")],
    PROMOTE: [("", "cross tensordot"), ("nn.functional", "bilinear")],
    BANNED: [("nn.functional", "binary_cross_entropy")],
}

_BANNED_MESSAGE = (
    "vkt.nn.functional.binary_cross_entropy and vkt.nn.BCELoss are unsafe to autocast.\nMany models use a sigmoid "
    "layer right before the binary cross entropy layer.\nIn this case, combine the two layers using "
    "vkt.nn.functional.binary_cross_entropy_with_logits\nor vkt.nn.BCEWithLogitsLoss.  "
    "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")


def _tensors(args, kwargs):
    for a in args:
        if isinstance(a, _C.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, _C.Tensor))
    if kwargs:
        yield from _tensors(kwargs.values(), None)


def _eligible(t, st):
    """A floating tensor other than float64 on a device type autocast is on for (torch's is_eligible)."""
    return t.is_floating_point() and t.dtype != _C.float64 and st.enabled.get(t.device.type, False)


def _target(policy, name, st, self, args, kwargs):
    """The dtype a policy casts to for these arguments, or None where it casts nothing."""
    if policy == BANNED:
        raise RuntimeError(_BANNED_MESSAGE)
    if policy == FP32_SET_OPT_DTYPE and kwargs and kwargs.get("dtype") is not None:
        return None  # torch runs an op given an explicit dtype as it is
    all_args = (self,) + tuple(args) if isinstance(self, _C.Tensor) else tuple(args)
    ts = [t for t in _tensors(all_args, kwargs) if _eligible(t, st)]
    if not ts:
        return None
    if policy == LOWER:
        return st.dtype[ts[0].device.type]
    if policy == PROMOTE:
        return _C.float32 if any(t.dtype == _C.float32 for t in ts) else None
    return _C.float32


def _cast_all(x, dtype, st):
    if isinstance(x, _C.Tensor):
        return _cast(x, dtype, st) if _eligible(x, st) and x.dtype != dtype else x
    if isinstance(x, (list, tuple)) and any(isinstance(t, _C.Tensor) for t in x):
        return type(x)(_cast_all(t, dtype, st) for t in x)
    return x


def cast_arguments(policy, name, self, args, kwargs):
    """(self, args, kwargs) as an op of this policy takes them under autocast, or None for no change."""
    st = _state()
    dtype = _target(policy, name, st, self, args or (), kwargs)
    if dtype is None:
        return None
    args = tuple(_cast_all(a, dtype, st) for a in args) if args else args
    kwargs = {k: _cast_all(v, dtype, st) for k, v in kwargs.items()} if kwargs else kwargs
    return _cast_all(self, dtype, st), args, kwargs


def _wrap(fn, policy, name):
    """fn with autocast's policy: one C call to test the switch when autocast is off."""
    if getattr(fn, "_autocast_policy", None) is not None:
        return fn

    @functools.wraps(fn)
    def autocast_op(*args, **kwargs):
        if not _C._amp_get_mask():
            return fn(*args, **kwargs)
        cast = cast_arguments(policy, name, None, args, kwargs)
        if cast is not None:
            _, args, kwargs = cast
        mask = _C._amp_set_mask(0)  # the op runs on what it was given, as in torch
        try:
            return fn(*args, **kwargs)
        finally:
            _C._amp_set_mask(mask)

    autocast_op._autocast_policy = policy
    return autocast_op


def install(vkt):
    _C._amp_set_hook(cast_arguments)
    for policy, names in C_OPS.items():
        for name in names.split():
            _C._amp_set_policy(name, policy)
    for policy, groups in PY_OPS.items():
        for path, names in groups:
            module = functools.reduce(getattr, path.split("."), vkt) if path else vkt
            for name in names.split():
                fn = getattr(module, name, None)
                if fn is None or isinstance(fn, type(_C.mm)):
                    continue  # absent, or a C function the guard already covers
                wrapped = _wrap(fn, policy, name)
                setattr(module, name, wrapped)
                home = __import__(fn.__module__, fromlist=["_"])
                if getattr(home, name, None) is fn:
                    setattr(home, name, wrapped)  # calls inside its own module see the policy too
