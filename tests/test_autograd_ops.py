# Backward of vkt's differentiable ops (issue 16), driven by one table: a row is an op written once over a
# namespace `m` (vkt, or torch with torch.nn.functional's names), its input shapes and its kwargs. Each row
# is gradchecked in float64, its float32 gradients are held to its float64 ones, and its float64 gradients
# to torch.autograd's on the same NumPy inputs and upstream gradient, on the cpu and vulkan devices.
import zlib
from collections import namedtuple

import numpy as np
import pytest

import vkt
from conftest import assert_close, to_numpy

torch = pytest.importorskip("torch")


class TorchNamespace:
    """torch, falling back to torch.nn.functional for the names vkt keeps at top level (gelu, linear...)."""

    def __getattr__(self, name):
        return getattr(torch, name) if hasattr(torch, name) else getattr(torch.nn.functional, name)


TORCH = TorchNamespace()


class T(tuple):
    """An input the op sees transposed: the leaf has the last two dims swapped and is passed as .transpose(-1, -2)."""


class S(tuple):
    """An input the op sees strided: the leaf is twice as long in the last dim and is passed as [..., ::2]."""


def leaf_shape(spec):
    if isinstance(spec, T):
        return spec[:-2] + (spec[-1], spec[-2])
    if isinstance(spec, S):
        return spec[:-1] + (2 * spec[-1],)
    return tuple(spec)


def seen_by_op(x, spec):
    if isinstance(spec, T):
        return x.transpose(-1, -2)
    if isinstance(spec, S):
        return x[..., ::2]
    return x


Row = namedtuple("Row", "name fn shapes kwargs domain")


def row(name, fn, shapes, kwargs=None, domain="any"):
    """fn(m, *inputs, **kwargs) -> a tensor or a tuple of tensors; domain: any, positive, unit, ge1, with_zero."""
    return Row(name, fn, [s if isinstance(s, tuple) else tuple(s) for s in shapes], kwargs or {}, domain)


def unary(name, domain="any", **kwargs):
    return row(name, lambda m, x, **k: getattr(m, name)(x, **k), [(2, 3)], kwargs, domain)


def idx(m, x, values):
    """An int64 index tensor on x's device."""
    return m.tensor(values, device=x.device)


def setitem_row(m, x, v):
    y = x.clone()
    y[1] = v
    return y * 2


def setitem_slice_scalar(m, x):
    y = x * 3
    y[:, ::2] = 0.5
    return y


def setitem_index_tensor(m, x, v):
    y = x.sin()
    y[idx(m, x, [2, 0])] = v
    return y


def setitem_inplace_op(m, x):
    y = x * 1.5
    y[0].mul_(2)
    y[1].add_(y[0])
    return y


BROADCAST_PAIRS = [
    ("same", [(2, 3), (2, 3)]),
    ("outer", [(3, 1), (1, 4)]),
    ("trailing", [(2, 3, 4), (4,)]),
    ("0d", [(), (2, 3)]),
    ("0d_both", [(), ()]),
    ("noncontig", [T((3, 4)), S((3, 4))]),
    ("empty", [(0, 3), (3,)]),
]

ROWS = (
    [unary(n) for n in ["neg", "abs", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "exp2", "expm1", "square",
                        "sinh", "cosh", "atan", "asinh", "erf", "erfc", "floor", "sign", "gelu", "silu", "softplus",
                        "elu", "mish", "logsigmoid"]]
    + [unary(n, "positive") for n in ["log", "sqrt", "rsqrt", "log1p", "log2", "log10", "reciprocal"]]
    + [unary(n, "unit") for n in ["tan", "asin", "acos", "atanh", "erfinv"]]
    + [unary("acosh", "ge1"), unary("leaky_relu", negative_slope=0.1), unary("gelu", approximate="tanh")]
    + [unary(n, "positive") for n in ["lgamma", "digamma"]] + [unary(n) for n in ["sinc", "i0"]]
    + [
        row("polygamma_2", lambda m, x: m.polygamma(2, x), [(2, 3)], domain="positive"),
        row("logit", lambda m, x: (x * 0.5 + 0.5).logit(), [(2, 3)], domain="unit"),
        row("logit_eps", lambda m, x: m.logit(x, eps=0.2), [(2, 3)], domain="unit"),
        row("special_ndtri", lambda m, x: m.special.ndtri(x * 0.5 + 0.5), [(2, 3)], domain="unit"),
        row("special_log_ndtr", lambda m, x: m.special.log_ndtr(x), [(2, 3)]),
        row("special_i1e", lambda m, x: m.special.i1e(x), [(2, 3)]),
        row("special_entr", lambda m, x: m.special.entr(x), [(2, 3)], domain="positive"),
        row("xlogy", lambda m, a, b: m.xlogy(a, b), [(2, 3), (3,)], domain="positive"),
        row("special_xlog1py", lambda m, a, b: m.special.xlog1py(a, b), [(2, 1), (1, 3)], domain="positive"),
        # x == 0 (with_zero): the gradient in x is still log(y), log1p(y) there, torch's xlogy(grad, y) masked only
        # where y <= 0 (-1)
        row("xlogy_x_zero", lambda m, a, b: m.xlogy(a, b * b + 0.5), [(2, 3), (2, 3)], domain="with_zero"),
        row("xlogy_x_zero_number_y", lambda m, a: m.xlogy(a, 2.5), [(2, 3)], domain="with_zero"),
        row("xlogy_x_zero_inplace", lambda m, a, b: (a * 1).xlogy_(b * b + 0.5), [(2, 3), (3,)], domain="with_zero"),
        row("xlogy_number_x_zero", lambda m, b: m.xlogy(0.0, b * b + 0.5), [(2, 3)], domain="with_zero"),
        row("special_xlog1py_x_zero", lambda m, a, b: m.special.xlog1py(a, b * b), [(2, 3), (2, 3)],
            domain="with_zero"),
        row("special_xlog1py_x_zero_number_y", lambda m, a: m.special.xlog1py(a, 0.5), [(2, 3)], domain="with_zero"),
    ]
    + [
        row("exp_0d", lambda m, x: x.exp(), [()]),
        row("exp_empty", lambda m, x: x.exp(), [(0, 3)]),
        row("tanh_transposed", lambda m, x: x.tanh(), [T((3, 4))]),
        row("sqrt_strided", lambda m, x: x.sqrt(), [S((2, 3))], domain="positive"),
    ]
    + [row(f"{op}_{tag}", f, shapes) for op, f in [
        ("add", lambda m, a, b: a + b), ("sub", lambda m, a, b: a - b), ("mul", lambda m, a, b: a * b),
        ("div", lambda m, a, b: a / (b * b + 0.5))] for tag, shapes in BROADCAST_PAIRS]
    + [
        row("add_alpha", lambda m, a, b: m.add(a, b, alpha=-2.5), [(2, 3), (3,)]),
        row("sub_alpha", lambda m, a, b: m.sub(a, b, alpha=0.5), [(2, 1), (2, 3)]),
        row("add_scalar", lambda m, x: x + 2, [(2, 3)]),
        row("rsub_scalar", lambda m, x: 2 - x, [(2, 3)]),
        row("mul_scalar", lambda m, x: x * 0.5, [(2, 3)]),
        row("rdiv_scalar", lambda m, x: 3 / x, [(2, 3)], domain="positive"),
        row("div_scalar", lambda m, x: x / 3, [(2, 3)]),
        row("pow_2", lambda m, x: x ** 2, [(2, 3)]),
        row("pow_3_0d", lambda m, x: x ** 3, [()]),
        row("pow_frac", lambda m, x: x ** 2.5, [(2, 3)], domain="positive"),
        row("pow_neg", lambda m, x: x.pow(-1.5), [(2, 3)], domain="positive"),
        row("pow_0", lambda m, x: x ** 0, [(2, 3)]),
        row("rpow", lambda m, x: 2 ** x, [(2, 3)]),
        row("pow_tensor", lambda m, a, b: m.pow(a, b), [(2, 3), (3,)], domain="positive"),
        row("pow_tensor_noncontig", lambda m, a, b: a ** b, [T((3, 3)), S((3, 3))], domain="positive"),
        row("maximum", lambda m, a, b: m.maximum(a, b), [(2, 3), (3,)]),
        row("minimum", lambda m, a, b: m.minimum(a, b), [(3, 1), (1, 4)]),
        row("maximum_noncontig", lambda m, a, b: a.maximum(b), [T((3, 3)), (3, 3)]),
        row("atan2", lambda m, a, b: m.atan2(a, b), [(2, 3), (2, 1)]),
        row("hypot", lambda m, a, b: m.hypot(a, b), [(2, 3), (3,)]),
        row("logaddexp", lambda m, a, b: m.logaddexp(a, b), [(2, 3), (1, 3)]),
        row("lerp", lambda m, a, b: m.lerp(a, b, 0.3), [(2, 3), (3,)]),
        row("where", lambda m, a, b: m.where(a > 0, a, b), [(2, 3), (2, 3)]),
        row("where_broadcast", lambda m, a, b: m.where(b > 0, a, b), [(2, 3), (3,)]),
        row("where_scalar", lambda m, x: m.where(x > 0, x, 0.0), [(2, 3)]),
        row("where_scalar_a", lambda m, x: m.where(x > 0, 2.0, x), [(2, 3)]),
        row("where_scalars", lambda m, x: m.where(x > 0, 1.5, -0.5) * x, [(2, 3)]),
        # the condition's input also scales the result, so that each input alone has a gradient
        row("where_scalar_broadcast_condition", lambda m, c, x: m.where(c > 0, x, 0.0) * c, [(3,), (2, 3)]),
        row("where_scalar_noncontig", lambda m, c, x: m.where(c > 0, 0.0, x) * c, [S((2, 3)), T((2, 3))]),
        row("where_scalar_0d_condition", lambda m, c, x: m.where(c > 0, x, -1) * c, [(), (2, 3)]),
        row("clamp", lambda m, x: x.clamp(-0.5, 0.5), [(3, 4)]),
        row("clamp_tensors", lambda m, x, lo, hi: m.clamp(x, lo, hi - 2), [(3, 4), (4,), (3, 1)]),
        row("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=0.5), [(3, 4), (4,), T((3, 4))]),
        row("addcdiv", lambda m, x, a, b: m.addcdiv(x, a, b, value=0.5), [(3, 4), (4,), (3, 4)], domain="positive"),
        row("lerp_tensor", lambda m, a, b, w: m.lerp(a, b, w), [(2, 3), (3,), (2, 3)]),
        row("nan_to_num", lambda m, x: m.nan_to_num(x), [(3, 4)]),
        row("norm", lambda m, x: x.norm(), [(3, 4)]),
        row("round_times_x", lambda m, x: x.round(decimals=1) * x, [(3, 4)]),
        row("nansum", lambda m, x: m.nansum(m.where(x > 1.5, float("nan"), x), dim=1), [(3, 4)]),
        row("nanmean", lambda m, x: m.where(x > 1.5, float("nan"), x).nanmean(), [(3, 4)]),
        row("var_mean", lambda m, x: m.var_mean(x, dim=1), [(3, 4)]),
        row("std_mean", lambda m, x: m.std_mean(x, dim=0, keepdim=True), [T((3, 4))]),
        # torch before 2.13 has no aminmax backward: its reference is amin and amax
        row("aminmax", lambda m, x: tuple(x.aminmax(dim=1)) if m is vkt else (x.amin(1), x.amax(1)), [(3, 4)]),
        row("norm_dim", lambda m, x: x.norm(dim=1, keepdim=True), [T((4, 3))]),
        row("vector_norm_1", lambda m, x: m.linalg.vector_norm(x, 1, dim=0), [(3, 4)]),
        row("vector_norm_3", lambda m, x: m.linalg.vector_norm(x, 3, dim=(0, 1)), [(3, 4)]),
        row("vector_norm_inf", lambda m, x: m.linalg.vector_norm(x, float("inf"), dim=1), [(3, 4)]),
        row("sort_values", lambda m, x: x.sort(dim=1, descending=True).values, [T((4, 3))]),
        row("topk_values", lambda m, x: x.topk(2, dim=0).values, [(3, 4)]),
        row("kthvalue", lambda m, x: x.kthvalue(2, dim=1).values, [(3, 4)]),
        row("median_dim", lambda m, x: x.median(dim=0, keepdim=True).values, [(3, 4)]),
        row("cummax", lambda m, x: x.cummax(1).values, [(3, 4)]),
        row("msort", lambda m, x: x.msort(), [(3, 4)]),
        row("clamp_min", lambda m, x: x.clamp(min=0.1), [(3, 4)]),
        row("clamp_max", lambda m, x: m.clamp(x, max=0.0), [T((3, 4))]),
        row("clip", lambda m, x: x.clip(-1, 0.2), [(2, 3)]),
        row("compound", lambda m, a, b: (a * b).exp() / (1 + a.abs()) - b.sin() * a, [(2, 3), (3,)]),
        # reductions
        row("sum", lambda m, x: x.sum(), [(2, 3)]),
        row("sum_0d", lambda m, x: x.sum(), [()]),
        row("sum_empty", lambda m, x: x.sum(), [(0, 3)]),
        row("sum_empty_dim", lambda m, x: x.sum(0), [(0, 3)]),
        row("sum_noncontig", lambda m, x: x.sum(), [T((3, 4))]),
        row("sum_dim", lambda m, x, **k: x.sum(**k), [(2, 3)], dict(dim=1)),
        row("sum_dims_keepdim", lambda m, x, **k: x.sum(**k), [(2, 3, 4)], dict(dim=(0, 2), keepdim=True)),
        row("sum_neg_dim_strided", lambda m, x, **k: m.sum(x, **k), [S((3, 4))], dict(dim=-1)),
        row("mean", lambda m, x: x.mean(), [(2, 3)]),
        row("mean_dim_keepdim", lambda m, x, **k: x.mean(**k), [(3, 4)], dict(dim=0, keepdim=True)),
        row("mean_dims", lambda m, x, **k: m.mean(x, **k), [(2, 3, 4)], dict(dim=(1, 2))),
        row("prod", lambda m, x: x.prod(), [(2, 3)]),
        row("prod_dim", lambda m, x, **k: x.prod(**k), [(3, 4)], dict(dim=1)),
        row("prod_with_zero", lambda m, x: x.prod(), [(2, 3)], domain="with_zero"),
        row("prod_dim_with_zero", lambda m, x, **k: x.prod(**k), [(3, 4)], dict(dim=1), domain="with_zero"),
        row("amax", lambda m, x, **k: x.amax(**k), [(3, 4)], dict(dim=1)),
        row("amax_all", lambda m, x: x.amax(), [(3, 4)]),
        row("amin_dims", lambda m, x, **k: m.amin(x, **k), [(2, 3, 4)], dict(dim=(0, 2), keepdim=True)),
        row("max_all", lambda m, x: x.max(), [(3, 4)]),
        row("min_all", lambda m, x: m.min(x), [T((3, 4))]),
        row("max_dim", lambda m, x, **k: x.max(**k).values, [(3, 4)], dict(dim=1)),
        row("max_dim_index0", lambda m, x, **k: m.max(x, **k)[0], [(3, 4)], dict(dim=0, keepdim=True)),
        row("min_dim", lambda m, x, **k: x.min(**k).values, [T((3, 4))], dict(dim=-1)),
        row("var", lambda m, x: x.var(), [(3, 4)]),
        row("var_dim", lambda m, x, **k: x.var(**k), [(3, 4)], dict(dim=1)),
        row("var_correction0", lambda m, x, **k: m.var(x, **k), [(3, 4)], dict(dim=0, correction=0)),
        row("std", lambda m, x: x.std(), [(3, 4)]),
        row("std_dim_keepdim", lambda m, x, **k: x.std(**k), [S((3, 4))], dict(dim=0, keepdim=True)),
        row("softmax", lambda m, x, **k: x.softmax(**k), [(3, 4)], dict(dim=-1)),
        row("softmax_dim0_noncontig", lambda m, x, **k: m.softmax(x, **k), [T((3, 4))], dict(dim=0)),
        row("log_softmax", lambda m, x, **k: x.log_softmax(**k), [(3, 4)], dict(dim=1)),
        row("log_softmax_3d", lambda m, x, **k: m.log_softmax(x, **k), [(2, 3, 4)], dict(dim=1)),
        row("logsumexp", lambda m, x, **k: x.logsumexp(**k), [(3, 4)], dict(dim=1)),
        row("logsumexp_dims", lambda m, x, **k: m.logsumexp(x, **k), [(2, 3, 4)], dict(dim=(0, 2), keepdim=True)),
        row("cumsum", lambda m, x, **k: x.cumsum(**k), [(3, 4)], dict(dim=0)),
        row("cumsum_strided", lambda m, x, **k: m.cumsum(x, **k), [S((3, 4))], dict(dim=1)),
        row("cumsum_0d", lambda m, x, **k: x.cumsum(**k), [()], dict(dim=0)),
        # the matmul family
        row("matmul_1d_1d", lambda m, a, b: a @ b, [(3,), (3,)]),
        row("matmul_1d_2d", lambda m, a, b: a @ b, [(3,), (3, 4)]),
        row("matmul_2d_1d", lambda m, a, b: m.matmul(a, b), [(2, 3), (3,)]),
        row("matmul_2d_2d", lambda m, a, b: a.matmul(b), [(2, 3), (3, 4)]),
        row("matmul_3d_3d", lambda m, a, b: a @ b, [(2, 2, 3), (2, 3, 4)]),
        row("matmul_3d_2d", lambda m, a, b: a @ b, [(2, 2, 3), (3, 4)]),
        row("matmul_2d_3d", lambda m, a, b: a @ b, [(2, 3), (2, 3, 4)]),
        row("matmul_1d_3d", lambda m, a, b: a @ b, [(3,), (2, 3, 4)]),
        row("matmul_3d_1d", lambda m, a, b: a @ b, [(2, 2, 3), (3,)]),
        row("matmul_batch_broadcast", lambda m, a, b: a @ b, [(1, 2, 3), (2, 3, 4)]),
        row("matmul_4d_3d_broadcast", lambda m, a, b: a @ b, [(2, 1, 2, 3), (3, 3, 2)]),
        row("matmul_noncontig", lambda m, a, b: a @ b, [T((2, 3)), S((3, 4))]),
        row("matmul_batched_noncontig", lambda m, a, b: a @ b, [T((2, 2, 3)), T((3, 4))]),
        row("matmul_empty_k", lambda m, a, b: a @ b, [(2, 0), (0, 3)]),
        row("matmul_empty_m", lambda m, a, b: a @ b, [(0, 3), (3, 2)]),
        row("mm", lambda m, a, b: m.mm(a, b), [(2, 3), (3, 4)]),
        row("mm_noncontig", lambda m, a, b: a.mm(b), [T((3, 2)), T((2, 4))]),
        row("bmm", lambda m, a, b: m.bmm(a, b), [(2, 2, 3), (2, 3, 4)]),
        row("addmm", lambda m, c, a, b, **k: m.addmm(c, a, b, **k), [(2, 4), (2, 3), (3, 4)], dict(beta=0.5, alpha=2)),
        row("addmm_bias_row", lambda m, c, a, b: c.addmm(a, b), [(4,), (2, 3), (3, 4)]),
        row("linear", lambda m, x, w, b: m.linear(x, w, b), [(2, 3), (4, 3), (4,)]),
        row("linear_3d_nobias", lambda m, x, w: m.linear(x, w), [(2, 2, 3), (4, 3)]),
        row("linear_1d", lambda m, x, w, b: m.linear(x, w, b), [(3,), (4, 3), (4,)]),
        row("dot", lambda m, a, b: m.dot(a, b), [(3,), (3,)]),
        row("dot_strided", lambda m, a, b: a.dot(b), [S((3,)), (3,)]),
        row("mv", lambda m, a, b: m.mv(a, b), [(2, 3), (3,)]),
        row("mv_transposed", lambda m, a, b: a.mv(b), [T((2, 3)), (3,)]),
        row("einsum_mm", lambda m, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
        row("einsum_bmm", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), [(2, 2, 3), (2, 3, 4)]),
        row("einsum_diag", lambda m, x: m.einsum("ii->i", x), [(3, 3)]),
        row("einsum_trace", lambda m, x: m.einsum("ii", x), [(3, 3)]),
        row("einsum_dot", lambda m, a, b: m.einsum("i,i->", a, b), [(3,), (3,)]),
        row("einsum_transpose", lambda m, x: m.einsum("ij->ji", x), [(2, 3)]),
        row("einsum_mv", lambda m, a, b: m.einsum("ij,j->i", a, b), [(2, 3), (3,)]),
        row("einsum_outer_sum", lambda m, a, b: m.einsum("bi,bj->ij", a, b), [(2, 3), (2, 4)]),
        row("einsum_three", lambda m, a, b, c: m.einsum("ij,jk,k->i", a, b, c), [(2, 3), (3, 4), (4,)]),
        # views
        row("view", lambda m, x: x.view(3, 4), [(2, 6)]),
        row("view_infer", lambda m, x: x.view(-1), [(2, 3, 2)]),
        row("reshape_noncontig", lambda m, x: x.reshape(12), [T((3, 4))]),
        row("reshape_0d", lambda m, x: x.reshape(1, 1), [()]),
        row("transpose", lambda m, x: x.transpose(0, 2), [(2, 3, 4)]),
        row("permute", lambda m, x: x.permute(2, 0, 1), [(2, 3, 4)]),
        row("expand", lambda m, x: x.expand(2, 3, 4), [(3, 1)]),
        row("expand_0d", lambda m, x: x.expand(2, 3), [()]),
        row("expand_as", lambda m, x, y: x.expand_as(y) * y, [(1, 3), (2, 3)]),
        row("squeeze", lambda m, x: x.squeeze(), [(1, 3, 1)]),
        row("squeeze_dim", lambda m, x: x.squeeze(0), [(1, 3)]),
        row("unsqueeze", lambda m, x: x.unsqueeze(1), [(2, 3)]),
        row("flatten", lambda m, x: x.flatten(), [(2, 3, 4)]),
        row("flatten_from1", lambda m, x: m.flatten(x, 1), [T((2, 3, 4))]),
        row("T", lambda m, x: x.T, [(2, 3)]),
        row("t_then_matmul", lambda m, x, w: x @ w.t(), [(2, 3), (4, 3)]),
        row("slice_steps", lambda m, x: x[::2, 1::2], [(4, 5)]),
        row("slice_negative_start", lambda m, x: x[-2:, :-1], [(3, 4)]),
        row("int_index", lambda m, x: x[1], [(3, 4)]),
        row("int_index_col", lambda m, x: x[:, 2], [(3, 4)]),
        row("int_index_negative", lambda m, x: x[-1, 1:3], [(3, 4)]),
        row("int_index_to_0d", lambda m, x: x[1, 2], [(3, 4)]),
        row("none_index", lambda m, x: x[None, 1], [(3, 4)]),
        row("ellipsis_step", lambda m, x: x[..., ::2], [(2, 3, 5)]),
        row("view_chain", lambda m, x: x.T[1:].reshape(-1)[::3], [(3, 4)]),
        # shape ops
        row("cat", lambda m, a, b: m.cat([a, b]), [(2, 3), (1, 3)]),
        row("cat_dim1_noncontig", lambda m, a, b: m.cat([a, b], dim=1), [(2, 3), T((2, 2))]),
        row("cat_empty", lambda m, a, b: m.cat([a, b]), [(0, 3), (2, 3)]),
        row("cat_same_input", lambda m, a: m.cat([a, a * 2, a], dim=0), [(2, 3)]),
        row("stack", lambda m, a, b: m.stack([a, b], dim=1), [(2, 3), (2, 3)]),
        row("stack_0d", lambda m, a, b: m.stack([a, b]), [(), ()]),
        row("split", lambda m, x: x.split(2, dim=1), [(3, 5)]),
        row("split_sizes", lambda m, x: m.split(x, [1, 2], dim=0), [(3, 4)]),
        row("split_one_piece", lambda m, x: x.split(2, dim=1)[1], [(3, 5)]),
        row("chunk", lambda m, x: x.chunk(2, dim=0), [(4, 3)]),
        row("chunk_one_piece", lambda m, x: m.chunk(x, 3, dim=1)[2], [T((3, 5))]),
        row("flip", lambda m, x: x.flip(0), [(3, 4)]),
        row("flip_both", lambda m, x: m.flip(x, (0, 1)), [T((3, 4))]),
        row("roll", lambda m, x: x.roll(1, 1), [(3, 4)]),
        row("roll_two_dims", lambda m, x: m.roll(x, (1, -1), (0, 1)), [(3, 4)]),
        row("roll_flat", lambda m, x: x.roll(2), [(3, 4)]),
        row("tril", lambda m, x: x.tril(), [(3, 4)]),
        row("triu_diagonal", lambda m, x: m.triu(x, diagonal=1), [(2, 3, 3)]),
        row("gather", lambda m, x: x.gather(1, idx(m, x, [[0, 2], [1, 1], [3, 0]])), [(3, 4)]),
        row("gather_dim0", lambda m, x: m.gather(x, 0, idx(m, x, [[2, 0, 0, 1]])), [T((3, 4))]),
        row("index_select", lambda m, x: x.index_select(0, idx(m, x, [2, 0, 2])), [(3, 4)]),
        row("index_select_dim1", lambda m, x: m.index_select(x, 1, idx(m, x, [3, 1])), [S((3, 4))]),
        row("masked_fill", lambda m, x: x.masked_fill(idx(m, x, [[True, False, True, False]]), 0.5), [(3, 4)]),
        row("masked_fill_0d_mask", lambda m, x: m.masked_fill(x, idx(m, x, True), -1.0), [(2, 3)]),
        row("index_tensor", lambda m, x: x[idx(m, x, [2, 0, 2])], [(3, 4)]),
        row("index_tensor_col", lambda m, x: x[:, idx(m, x, [1, 1, 3])], [T((3, 4))]),
        row("index_tensor_2d", lambda m, x: x[idx(m, x, [[0, 1], [1, 0]])], [(2, 3)]),
        row("index_tensor_pair", lambda m, x: x[idx(m, x, [0, 2, 0]), idx(m, x, [1, 3, 1])], [(3, 4)]),
        row("index_bool_mask", lambda m, x: x[idx(m, x, [[True, False, True, False]] * 3)], [(3, 4)]),
        row("setitem_row", setitem_row, [(3, 4), (4,)]),
        row("setitem_slice_scalar", setitem_slice_scalar, [(3, 4)]),
        row("setitem_index_tensor", setitem_index_tensor, [(3, 4), (2, 4)]),
        row("matmul_add_relu", lambda m, a, b, c: (a @ b + c).relu(), [(2, 3), (3, 4), (4,)]),
    ]
)

CAST_ROWS = [  # (name, cast over namespace m, source dtype, destination dtype)
    ("float", lambda m, x: x.float(), "float64", "float32"),
    ("double", lambda m, x: x.double(), "float32", "float64"),
    ("to_float64", lambda m, x: x.to(m.float64), "float32", "float64"),
    ("to_float32_kw", lambda m, x: x.to(dtype=m.float32), "float64", "float32"),
    ("to_same", lambda m, x: x.to(m.float64), "float64", "float64"),
    ("round_trip", lambda m, x: x.float().double(), "float64", "float64"),
]


def values(rng, shape, domain):
    """Float64 values exact in float32, so one input serves the float32 and float64 runs."""
    x = rng.standard_normal(shape)
    if domain == "positive":
        x = np.abs(x) + 0.5
    elif domain == "unit":
        x = rng.uniform(-0.8, 0.8, shape)
    elif domain == "ge1":
        x = np.abs(x) + 1.2
    elif domain == "with_zero" and x.size:
        x.flat[1] = 0.0
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def arrays(r):
    rng = np.random.default_rng(zlib.crc32(r.name.encode()))
    return [values(rng, leaf_shape(s), r.domain) for s in r.shapes]


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def upstream(r, shapes):
    """The gradient flowing into each output: values that are not all ones, so a missed factor shows."""
    rng = np.random.default_rng(zlib.crc32(r.name.encode()) + 1)
    return [values(rng, s, "any") for s in shapes]


def call(m, r, leaves):
    return r.fn(m, *[seen_by_op(x, s) for x, s in zip(leaves, r.shapes)], **r.kwargs)


def vkt_grads(r, arrs, device, dtype="float64", requires=None):
    """The leaves' .grad after backward of r's outputs with the upstream gradients; and the outputs' shapes.
    requires: which inputs require grad (all by default)."""
    dt = getattr(vkt, dtype)
    requires = requires or [True] * len(arrs)
    leaves = [vkt.tensor(a, dtype=dt, device=device, requires_grad=q) for a, q in zip(arrs, requires)]
    outs = as_tuple(call(vkt, r, leaves))
    shapes = [tuple(o.shape) for o in outs]
    gs = [vkt.tensor(g, dtype=dt, device=device) for g in upstream(r, shapes)]
    if len(outs) == 1:
        outs[0].backward(gs[0])
    else:
        vkt.autograd.backward(outs, gs)
    return [x.grad for x in leaves], shapes


def torch_grads(r, arrs, requires=None):
    requires = requires or [True] * len(arrs)
    leaves = [torch.tensor(a, requires_grad=q) for a, q in zip(arrs, requires)]
    outs = as_tuple(call(TORCH, r, leaves))
    shapes = [tuple(o.shape) for o in outs]
    torch.autograd.backward(outs, [torch.from_numpy(g) for g in upstream(r, shapes)])
    return [None if x.grad is None else x.grad.numpy() for x in leaves], shapes


def assert_grads_close(got, want, arrs, dtype, device, rtol, atol):
    assert len(got) == len(want)
    for i, (g, w, a) in enumerate(zip(got, want, arrs)):
        if w is None:
            assert g is None, f"input {i}: torch leaves .grad None, vkt has one"
            continue
        assert g is not None, f"input {i}: .grad is None"
        assert tuple(g.shape) == a.shape, f"input {i}: grad shape {tuple(g.shape)} != input shape {a.shape}"
        assert g.dtype == getattr(vkt, dtype) and g.device.type == vkt.device(device).type
        assert_close(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("r", ROWS, ids=[r.name for r in ROWS])
def test_grads_match_torch(device, r):
    arrs = arrays(r)
    got, shapes = vkt_grads(r, arrs, device)
    want, torch_shapes = torch_grads(r, arrs)
    assert shapes == torch_shapes
    assert_grads_close(got, want, arrs, "float64", device, rtol=1e-9, atol=1e-12)


MULTI_INPUT = [r for r in ROWS if len(r.shapes) > 1]


@pytest.mark.parametrize("r", MULTI_INPUT, ids=[r.name for r in MULTI_INPUT])
def test_grads_of_one_input_match_torch(device, r):
    """Only one input requires grad (x @ w with data x): the others' .grad stays None, that one's is torch's."""
    arrs = arrays(r)
    for i in range(len(arrs)):
        requires = [k == i for k in range(len(arrs))]
        got, _ = vkt_grads(r, arrs, device, requires=requires)
        want, _ = torch_grads(r, arrs, requires=requires)
        assert_grads_close(got, want, arrs, "float64", device, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("r", ROWS, ids=[r.name for r in ROWS])
def test_float32_grads_match_float64(device, r):
    arrs = arrays(r)
    want, _ = vkt_grads(r, arrs, device, "float64")
    got, _ = vkt_grads(r, arrs, device, "float32")
    assert_grads_close(got, [None if w is None else to_numpy(w) for w in want], arrs, "float32", device,
                       rtol=2e-4, atol=2e-5)


def needs_float64(device):
    if device == "vulkan" and not vkt.vulkan.get_device_properties().shader_float64:
        pytest.skip("this Vulkan adapter has no float64 shaders")


@pytest.mark.parametrize("r", ROWS, ids=[r.name for r in ROWS])
def test_gradcheck(device, r):
    needs_float64(device)
    leaves = tuple(vkt.tensor(a, dtype=vkt.float64, device=device, requires_grad=True) for a in arrays(r))
    assert vkt.autograd.gradcheck(lambda *xs: call(vkt, r, xs), leaves)


# Backward formulas that pass where a Python 0 (keep_where, zero_where: leaky_relu, elu, softplus, clamp,
# hardswish, pow) and where with numbers itself: under create_graph those wheres are recorded and
# differentiated again. (name, f over namespace m and its functional namespace F.)
SECOND_ORDER = [
    ("leaky_relu", lambda m, F, x: F.leaky_relu(x, 0.2) * x),
    ("elu", lambda m, F, x: F.elu(x, 1.5)),
    ("softplus", lambda m, F, x: F.softplus(x, beta=2.0, threshold=1.0)),
    ("clamp", lambda m, F, x: x.clamp(-0.5, 0.5) * x),
    ("hardswish", lambda m, F, x: F.hardswish(x * 4)),
    ("pow", lambda m, F, x: x ** 3),
    ("where_numbers", lambda m, F, x: m.where(x > 0, x * x, 0.5) + m.where(x < 0.3, -2.0, 1.0) * x),
]


@pytest.mark.parametrize("name, f", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_derivatives_through_where_numbers(device, name, f):
    needs_float64(device)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    a, w = rng.uniform(-2, 2, (3, 4)), rng.standard_normal((3, 4))

    def grads(m, F, x, upstream):
        (g,) = m.autograd.grad(f(m, F, x), x, upstream, create_graph=True)
        (h,) = m.autograd.grad((g * upstream).sum(), x, allow_unused=True)
        return g, h

    x = vkt.tensor(a, device=device, requires_grad=True)
    got = grads(vkt, vkt.nn.functional, x, vkt.tensor(w, device=device))
    want = grads(torch, torch.nn.functional, torch.tensor(a, requires_grad=True), torch.tensor(w))
    for g, t in zip(got, want):
        assert_close(g, t.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert vkt.autograd.gradgradcheck(lambda t: f(vkt, vkt.nn.functional, t), (x,))


@pytest.mark.parametrize("name,cast,src,dst", CAST_ROWS, ids=[c[0] for c in CAST_ROWS])
def test_cast_backward(device, name, cast, src, dst):
    """A cast's gradient is the upstream gradient cast back to the input's dtype."""
    rng = np.random.default_rng(5)
    a, w = values(rng, (2, 3), "any"), values(rng, (2, 3), "any")
    x = vkt.tensor(a, dtype=getattr(vkt, src), device=device, requires_grad=True)
    tx = torch.tensor(a, dtype=getattr(torch, src), requires_grad=True)
    y, ty = cast(vkt, x), cast(TORCH, tx)
    assert y.dtype == getattr(vkt, dst) and y.requires_grad and y.is_leaf == ty.is_leaf
    (y * vkt.tensor(w, dtype=getattr(vkt, dst), device=device)).sum().backward()
    (ty * torch.tensor(w, dtype=getattr(torch, dst))).sum().backward()
    assert x.grad.dtype == getattr(vkt, src) and tuple(x.grad.shape) == (2, 3)
    assert_close(x.grad, tx.grad.numpy(), rtol=0, atol=0)


@pytest.mark.parametrize("cast", [lambda x: x.long(), lambda x: x.to(vkt.int32), lambda x: x > 0, lambda x: x.argmax()],
                         ids=["long", "to_int32", "compare", "argmax"])
def test_integer_results_do_not_require_grad(device, cast):
    x = vkt.randn(2, 3, device=device, requires_grad=True)
    y = cast(x)
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_max_dim_indices_do_not_require_grad(device):
    x = vkt.randn(3, 4, device=device, requires_grad=True)
    values, indices = x.max(dim=1)
    assert values.requires_grad and values.grad_fn is not None
    assert not indices.requires_grad and indices.grad_fn is None


def test_float32_forward_backward_take_no_fallback(dev):
    """Every row's float32 forward and backward on vulkan runs in shaders."""
    taken = {}
    for r in ROWS:
        vkt.vulkan.reset_fallback_stats()
        vkt_grads(r, arrays(r), dev, "float32")
        if vkt.vulkan.fallback_stats():
            taken[r.name] = vkt.vulkan.fallback_stats()
    assert taken == {}


def test_in_place_ops_on_views_of_non_leaves_rebase_the_base(device):
    """y[0].mul_(2); y[1].add_(y[0]): each write goes into y's history (CopySlices), as in PyTorch."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((2, 3))
    x, tx = vkt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = setitem_inplace_op(vkt, x), setitem_inplace_op(torch, tx)
    assert y.grad_fn.name() == type(ty.grad_fn).__name__ == "CopySlices"
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_close(x.grad, tx.grad.numpy())
