# torch's aliases and top-level forms against torch 2.13 on the CPU, on vkt's cpu and vulkan devices: dtype aliases
# and constants, alias ops (divide, greater, ...), module-level in-place and NN functions with torch's top-level
# signatures, the Tensor methods composed in Python, window functions and vkt.linalg's additions.
import math
import warnings

import numpy as np
import pytest

import vkt

torch = pytest.importorskip("torch")

A = [[0.5, -1.5, 2.0], [3.0, -0.25, 0.0]]
POS = [[0.5, 1.5, 2.0], [3.0, 0.25, 0.75]]
UNIT = [[0.1, 0.9, 0.5], [0.3, 0.25, 0.75]]
INTS = [[12, -18, 7], [0, 27, 5]]


def T(m, d, data=A, dtype=None):
    """data as a tensor of module m (torch or vkt) on device d; the default float32, or the dtype named."""
    dtype = getattr(m, dtype) if dtype else (m.int64 if isinstance(np.asarray(data).flat[0], np.integer) else
                                             m.float32)
    return m.tensor(data, dtype=dtype, device=d)


def inplace(call, t):
    """What an in-place call gives: whether it returned its tensor, and the tensor afterwards."""
    return call(t) is t, t


def plain(r):
    """r with tensors as (dtype name, NumPy values) and torch's names read as vkt's, for comparison."""
    if isinstance(r, (torch.Tensor, vkt.Tensor)):
        return str(r.dtype).replace("torch.", "vkt."), r.detach().cpu().numpy()
    if isinstance(r, (tuple, list)):
        return type(r).__name__ if type(r) in (tuple, list) else "named", [plain(x) for x in r]
    if isinstance(r, (torch.dtype, vkt.dtype)):
        return str(r).replace("torch.", "vkt.")
    return r


def outcome(call):
    try:
        return "value", plain(call())
    except Exception as e:  # noqa: BLE001  the exception itself is what is compared
        return type(e).__name__, str(e).replace("torch.", "vkt.")


def assert_same(got, want, rtol=1e-5, atol=1e-6):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.shape == want.shape, (got, want)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
    else:
        assert got == want


def check(call, device, rtol=1e-5, atol=1e-6):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's beta and deprecation warnings; vkt's chain_matmul one
        assert_same(outcome(lambda: call(vkt, device)), outcome(lambda: call(torch, "cpu")), rtol, atol)


# ---- 1, 8: dtype aliases and constants


def test_dtype_aliases_and_constants():
    for alias, dtype in (("float", "float32"), ("double", "float64"), ("half", "float16"), ("long", "int64"),
                         ("int", "int32")):
        assert getattr(vkt, alias) is getattr(vkt, dtype)
    assert (vkt.e, vkt.pi, vkt.inf, vkt.newaxis) == (torch.e, torch.pi, torch.inf, torch.newaxis)
    assert math.isnan(vkt.nan)
    assert vkt.zeros(2, dtype=vkt.double).dtype == vkt.float64


@pytest.mark.parametrize("name,dtype", [("char", "int8"), ("short", "int16"), ("bfloat16", "bfloat16"),
                                        ("cfloat", "complex64"), ("cdouble", "complex128"), ("chalf", "complex32")])
def test_missing_dtype_casts_raise(name, dtype):
    assert hasattr(torch.Tensor, name)
    with pytest.raises(TypeError, match=f"^{name}\\(\\): vkt has no {dtype} dtype$"):
        getattr(vkt.zeros(2), name)()


# ---- 2, 3, 5, 7: values, dtypes, in-place behaviour and errors against torch on the same inputs

CASES = [
    # aliases
    ("divide", lambda m, d: m.divide(T(m, d), 2)),
    ("divide_mode", lambda m, d: m.divide(T(m, d), 0.75, rounding_mode="floor")),
    ("divide_method_trunc", lambda m, d: T(m, d).divide(T(m, d, POS), rounding_mode="trunc")),
    ("divide_", lambda m, d: inplace(lambda t: t.divide_(4), T(m, d))),
    ("divide_bad_mode", lambda m, d: T(m, d).divide(2, rounding_mode="up")),
    ("divide_numbers", lambda m, d: m.divide(2, 4)),
    ("multiply", lambda m, d: m.multiply(T(m, d), T(m, d, POS))),
    ("multiply_", lambda m, d: inplace(lambda t: t.multiply_(3), T(m, d, INTS))),
    ("multiply_numbers", lambda m, d: m.multiply(2, 3)),
    ("subtract_alpha", lambda m, d: m.subtract(T(m, d), T(m, d, POS), alpha=2)),
    ("subtract_", lambda m, d: inplace(lambda t: t.subtract_(T(m, d, POS), alpha=0.5), T(m, d))),
    ("subtract_bool", lambda m, d: m.subtract(T(m, d, [True], "bool"), T(m, d, [1.0]))),
    ("greater", lambda m, d: m.greater(T(m, d), 0)),
    ("greater_equal", lambda m, d: T(m, d).greater_equal(T(m, d, POS))),
    ("less", lambda m, d: m.less(T(m, d), T(m, d, POS))),
    ("less_equal", lambda m, d: T(m, d, INTS).less_equal(7)),
    ("not_equal", lambda m, d: m.not_equal(T(m, d), 0.5)),
    ("greater_", lambda m, d: inplace(lambda t: t.greater_(0), T(m, d))),
    ("less_equal_", lambda m, d: inplace(lambda t: t.less_equal_(T(m, d, POS)), T(m, d))),
    ("not_equal_", lambda m, d: inplace(lambda t: t.not_equal_(5), T(m, d, INTS))),
    # module-level in-place functions
    ("abs_", lambda m, d: inplace(m.abs_, T(m, d))),
    ("sqrt_", lambda m, d: inplace(m.sqrt_, T(m, d, POS))),
    ("arctanh_", lambda m, d: inplace(m.arctanh_, T(m, d, UNIT))),
    ("exp2_", lambda m, d: inplace(m.exp2_, T(m, d))),
    ("frac_", lambda m, d: inplace(m.frac_, T(m, d))),
    ("fix_", lambda m, d: inplace(m.fix_, T(m, d))),
    ("i0_", lambda m, d: inplace(m.i0_, T(m, d))),
    ("sinc_", lambda m, d: inplace(m.sinc_, T(m, d))),
    ("round_", lambda m, d: inplace(lambda t: m.round_(t, decimals=1), T(m, d, UNIT))),
    ("clamp_", lambda m, d: inplace(lambda t: m.clamp_(t, min=-1, max=1), T(m, d))),
    ("clamp_max_", lambda m, d: inplace(lambda t: m.clamp_max_(t, 0.5), T(m, d))),
    ("clip_", lambda m, d: inplace(lambda t: m.clip_(t, 0, 1), T(m, d))),
    ("logit_", lambda m, d: inplace(lambda t: m.logit_(t, eps=0.2), T(m, d, UNIT))),
    ("nan_to_num_", lambda m, d: inplace(lambda t: m.nan_to_num_(t, nan=7.0), T(m, d, [math.nan, math.inf]))),
    ("xlogy_", lambda m, d: inplace(lambda t: m.xlogy_(t, T(m, d, POS)), T(m, d))),
    ("relu_", lambda m, d: inplace(m.relu_, T(m, d))),
    ("threshold_", lambda m, d: inplace(lambda t: m.threshold_(t, 0.5, -9.0), T(m, d))),
    ("celu_", lambda m, d: inplace(lambda t: m.celu_(t, 2.0), T(m, d))),
    ("zero_", lambda m, d: inplace(m.zero_, T(m, d))),
    ("fill_", lambda m, d: inplace(lambda t: m.fill_(t, 2.5), T(m, d))),
    ("abs_not_tensor", lambda m, d: m.abs_(3)),
    ("neg_int", lambda m, d: inplace(m.neg_, T(m, d, INTS))),
    ("sqrt_int_refused", lambda m, d: m.sqrt_(T(m, d, INTS))),
    ("gcd_", lambda m, d: inplace(lambda t: t.gcd_(T(m, d, [[8, 12, 21], [5, 9, 0]])), T(m, d, INTS))),
    ("gcd_narrowing", lambda m, d: inplace(lambda t: m.gcd_(t, T(m, d, [4, 6, 14])), T(m, d, INTS, "int32"))),
    ("gcd_broadcast", lambda m, d: T(m, d, [4, 6]).gcd_(T(m, d, [[4], [6]]))),
    ("gcd_float", lambda m, d: T(m, d).gcd_(T(m, d))),
    ("lcm_", lambda m, d: inplace(lambda t: m.lcm_(t, T(m, d, [3, 4, 5])), T(m, d, INTS))),
    ("ldexp_", lambda m, d: inplace(lambda t: t.ldexp_(T(m, d, [1, -2, 3])), T(m, d))),
    ("ldexp_int", lambda m, d: T(m, d, INTS).ldexp_(T(m, d, INTS))),
    ("fill", lambda m, d: m.fill(T(m, d), 4)),
    ("fill_tensor", lambda m, d: m.fill(T(m, d), T(m, d, 2.0))),
    ("fill_tensor_1d", lambda m, d: m.fill(T(m, d), T(m, d, [2.0]))),
    ("detach", lambda m, d: m.detach(T(m, d))),
    ("detach_", lambda m, d: inplace(m.detach_, T(m, d))),
    ("dropout_eval", lambda m, d: (lambda t: m.dropout(t, 0.5, False) is t)(T(m, d))),
    ("dropout_p1", lambda m, d: m.dropout(T(m, d), 1.0, True)),
    ("dropout_bad_p", lambda m, d: m.dropout(T(m, d), 1.5, False)),
    ("dropout_", lambda m, d: inplace(lambda t: m.dropout_(t, 1.0, True), T(m, d))),
    ("feature_dropout_1d", lambda m, d: m.feature_dropout(T(m, d, [1.0]), 0.5, True)),
    ("feature_dropout_1d_p1", lambda m, d: m.feature_dropout(T(m, d, [1.0]), 1.0, True)),
    ("feature_dropout_eval", lambda m, d: m.feature_dropout(T(m, d), 0.5, False)),
    ("alpha_dropout_eval", lambda m, d: m.alpha_dropout(T(m, d), 0.5, False)),
    ("feature_alpha_dropout_1d", lambda m, d: m.feature_alpha_dropout(T(m, d, [1.0]), 0.5, True)),
    ("feature_alpha_dropout_", lambda m, d: inplace(lambda t: m.feature_alpha_dropout_(t, 0.5, False), T(m, d))),
    # Tensor methods composed in Python, and their module-level forms
    ("is_nonzero", lambda m, d: (T(m, d, [1.5]).is_nonzero(), m.is_nonzero(T(m, d, [[0]])))),
    ("is_nonzero_many", lambda m, d: T(m, d).is_nonzero()),
    ("is_nonzero_empty", lambda m, d: m.is_nonzero(m.ones(0, device=d))),
    ("is_same_size", lambda m, d: (T(m, d).is_same_size(T(m, d, POS)), m.is_same_size(T(m, d), T(m, d, [1.0])))),
    ("is_same_size_number", lambda m, d: (outcome(lambda: T(m, d).is_same_size(3)),
                                          outcome(lambda: m.is_same_size(T(m, d), 3)))),
    ("split_with_sizes", lambda m, d: T(m, d).split_with_sizes([1, 2], 1)),
    ("split_with_sizes_fn", lambda m, d: m.split_with_sizes(T(m, d), split_sizes=[1, 1], dim=0)),
    ("split_with_sizes_sum", lambda m, d: T(m, d).split_with_sizes([1, 1], 1)),
    ("split_with_sizes_negative", lambda m, d: T(m, d).split_with_sizes([-1, 4], 1)),
    ("unsafe_chunk", lambda m, d: (T(m, d).unsafe_chunk(2, 1), m.unsafe_chunk(T(m, d), 2))),
    ("unsafe_split", lambda m, d: (T(m, d).unsafe_split(2, 1), m.unsafe_split(T(m, d), 1))),
    ("unsafe_split_with_sizes", lambda m, d: m.unsafe_split_with_sizes(T(m, d), [2, 1], 1)),
    ("narrow_copy", lambda m, d: T(m, d).narrow_copy(1, -2, 2)),
    ("narrow_copy_fn", lambda m, d: m.narrow_copy(T(m, d), 0, 1, 1)),
    ("narrow_copy_is_copy", lambda m, d: (lambda t: (m.narrow_copy(t, 0, 0, 1).add_(1), t))(T(m, d))),
    ("narrow_copy_bad", lambda m, d: T(m, d).narrow_copy(1, 2, 2)),
    ("new_empty_strided", lambda m, d: (lambda t: (t.shape, t.stride(), t.dtype, t.requires_grad))(
        T(m, d).new_empty_strided((2, 2), (1, 2), dtype=m.int64, requires_grad=False))),
    ("dim_order", lambda m, d: (T(m, d).dim_order(), T(m, d).t().dim_order(), m.ones(()).dim_order(),
                                m.ones(2, 3, 4, 5).permute(0, 2, 3, 1).dim_order(),
                                m.ones(2, 3, 4).transpose(0, 2).dim_order())),
    ("dim_order_channels_last", lambda m, d: m.ones(2, 3, 4, 5).contiguous(
        memory_format=m.channels_last).dim_order()),
    ("dim_order_ambiguous", lambda m, d: m.ones(1, 3).dim_order(ambiguity_check=True)),
    ("dim_order_formats", lambda m, d: m.ones(1, 3, 4, 5).dim_order(
        ambiguity_check=[m.contiguous_format, m.channels_last])),
    ("dim_order_bad_check", lambda m, d: T(m, d).dim_order(ambiguity_check="no")),
    ("hardshrink", lambda m, d: (T(m, d).hardshrink(), m.hardshrink(T(m, d), 1.0))),
    ("hardshrink_int", lambda m, d: T(m, d, INTS).hardshrink()),
    ("prelu", lambda m, d: (T(m, d).prelu(T(m, d, [0.1, 0.2, 0.3])), m.prelu(T(m, d), T(m, d, [0.5])))),
    ("prelu_mismatch", lambda m, d: T(m, d).prelu(T(m, d, [0.1, 0.2]))),
    ("renorm_", lambda m, d: inplace(lambda t: t.renorm_(2, 0, 1.5), T(m, d))),
    ("addmm_", lambda m, d: inplace(lambda t: t.addmm_(T(m, d), T(m, d, POS).t(), beta=2, alpha=0.5),
                                    T(m, d, [[1.0, 2.0], [3.0, 4.0]]))),
    ("addmm_broadcast", lambda m, d: T(m, d, [1.0, 2.0]).addmm_(T(m, d), T(m, d).t())),
    ("addmm_shapes", lambda m, d: T(m, d, [[1.0, 2.0], [3.0, 4.0]]).addmm_(T(m, d), T(m, d))),
    ("addmv_", lambda m, d: inplace(lambda t: t.addmv_(T(m, d), T(m, d, [1.0, 2.0, 3.0]), beta=0.5, alpha=2),
                                    T(m, d, [1.0, -1.0]))),
    ("addmv_size", lambda m, d: T(m, d, [1.0, 2.0, 3.0]).addmv_(T(m, d), T(m, d, [1.0, 2.0, 3.0]))),
    ("addr_", lambda m, d: inplace(lambda t: t.addr_(T(m, d, [1.0, 2.0]), T(m, d, [1.0, 0.0, -1.0]), beta=2),
                                   T(m, d))),
    ("addr_size", lambda m, d: T(m, d, [[1.0, 2.0]]).addr_(T(m, d, [1.0, 2.0]), T(m, d, [1.0, 0.0]))),
    ("baddbmm_", lambda m, d: inplace(lambda t: t.baddbmm_(m.stack([T(m, d)] * 2), m.stack([T(m, d).t()] * 2),
                                                           alpha=2), m.ones(2, 2, 2, device=d))),
    ("baddbmm_broadcast", lambda m, d: m.ones(2, 2, device=d).baddbmm_(m.ones(2, 2, 3, device=d),
                                                                       m.ones(2, 3, 2, device=d))),
    ("addbmm_", lambda m, d: inplace(lambda t: t.addbmm_(m.stack([T(m, d)] * 2), m.stack([T(m, d, POS).t()] * 2),
                                                         beta=0.5), m.ones(2, 2, device=d))),
    ("mvlgamma", lambda m, d: (T(m, d, POS).add(1).mvlgamma(2), m.mvlgamma(T(m, d, POS), p=1))),
    ("mvlgamma_int", lambda m, d: T(m, d, [[3, 4]]).mvlgamma(3)),
    ("mvlgamma_p0", lambda m, d: T(m, d, POS).mvlgamma(0)),
    ("mvlgamma_", lambda m, d: inplace(lambda t: t.mvlgamma_(2), T(m, d, POS).add(1))),
    ("mvlgamma_int_", lambda m, d: T(m, d, INTS).mvlgamma_(1)),
    ("frexp", lambda m, d: T(m, d, [0.0, 1.0, -3.5, 1.5e-38, 3e38, -0.0, math.inf, math.nan]).frexp()),
    ("frexp_double", lambda m, d: m.frexp(T(m, d, [0.1, -1e300, 5e-324, 1024.0], "float64"))),
    ("frexp_half", lambda m, d: T(m, d, [0.1, -6e-8, 65504.0, 2.0], "float16").frexp()),
    ("frexp_fields", lambda m, d: (lambda r: (r.mantissa, r.exponent))(m.frexp(T(m, d)))),
    ("frexp_int", lambda m, d: T(m, d, INTS).frexp()),
    ("put_", lambda m, d: inplace(lambda t: t.put_(T(m, d, [0, -1]), T(m, d, [9.0, 8.0])), T(m, d))),
    ("put_accumulate", lambda m, d: inplace(lambda t: t.put_(T(m, d, [[0], [0]]), T(m, d, [[9.0], [8.0]]), True),
                                            T(m, d))),
    ("put_noncontiguous", lambda m, d: inplace(lambda t: t.put_(T(m, d, [1, 4]), T(m, d, [9.0, 8.0])), T(m, d).t())),
    ("put", lambda m, d: (lambda t: (m.put(t, T(m, d, [1]), T(m, d, [7.0])), t))(T(m, d))),
    ("put_out_of_range", lambda m, d: T(m, d).put_(T(m, d, [2, 6]), T(m, d, [9.0, 8.0]))),
    ("put_negative_out_of_range", lambda m, d: T(m, d).put_(T(m, d, [-7]), T(m, d, [9.0]))),
    ("put_sizes", lambda m, d: T(m, d).put_(T(m, d, [1, 2]), T(m, d, [9.0]))),
    ("put_index_dtype", lambda m, d: T(m, d).put_(T(m, d, [1], "int32"), T(m, d, [9.0]))),
    ("put_source_dtype", lambda m, d: T(m, d).put_(T(m, d, [1]), T(m, d, [9]))),
    ("nonzero_static", lambda m, d: (T(m, d).nonzero_static(size=7), m.nonzero_static(T(m, d), size=2,
                                                                                      fill_value=5))),
    ("nonzero_static_bool", lambda m, d: T(m, d, [True, False, True], "bool").nonzero_static(size=3)),
    ("nonzero_static_zero", lambda m, d: T(m, d).nonzero_static(size=0)),
    ("nonzero_static_negative", lambda m, d: T(m, d).nonzero_static(size=-1)),
    ("chain_matmul", lambda m, d: m.chain_matmul(T(m, d), T(m, d, POS).t(), T(m, d))),
    ("chain_matmul_one", lambda m, d: m.chain_matmul(T(m, d))),
    ("chain_matmul_none", lambda m, d: m.chain_matmul()),
    ("chain_matmul_1d", lambda m, d: m.chain_matmul(T(m, d), T(m, d, [1.0, 2.0, 3.0]))),
    ("frobenius_norm", lambda m, d: (m.frobenius_norm(T(m, d), 1), m.frobenius_norm(T(m, d), (0, 1), True))),
    ("frobenius_norm_3", lambda m, d: m.frobenius_norm(m.ones(2, 2, 2, device=d), (0, 1, 2))),
    ("frobenius_norm_int", lambda m, d: m.frobenius_norm(T(m, d, INTS), (0, 1))),
    ("nuclear_norm", lambda m, d: (m.nuclear_norm(T(m, d)), m.nuclear_norm(T(m, d), True),
                                   m.nuclear_norm(m.stack([T(m, d), T(m, d, POS)]), (1, 2)))),
    ("nuclear_norm_1d", lambda m, d: m.nuclear_norm(T(m, d, [1.0, 2.0]))),
    ("is_signed", lambda m, d: (m.is_signed(T(m, d)), m.is_signed(T(m, d, [1], "uint8")))),
    ("is_inference", lambda m, d: m.is_inference(T(m, d))),
    ("is_inference_number", lambda m, d: m.is_inference(1)),
    # linalg
    ("vecdot", lambda m, d: (m.linalg.vecdot(T(m, d), T(m, d, [1.0, 2.0, 3.0])),
                             m.linalg.vecdot(T(m, d), T(m, d, POS), dim=0))),
    ("vecdot_dtypes", lambda m, d: m.linalg.vecdot(T(m, d), T(m, d, A, "float64"))),
    ("vecdot_int", lambda m, d: m.linalg.vecdot(T(m, d, INTS), T(m, d, INTS))),
    ("diagonal", lambda m, d: (m.linalg.diagonal(T(m, d)), m.linalg.diagonal(m.stack([T(m, d)] * 2), offset=1,
                                                                            dim1=-1, dim2=-2))),
    ("matmul", lambda m, d: m.linalg.matmul(T(m, d), T(m, d, [1.0, 2.0, 3.0]))),
    ("vander", lambda m, d: (m.linalg.vander(T(m, d, [1, 2, 3], "int32")), m.linalg.vander(T(m, d), N=4))),
    ("vander_n1", lambda m, d: m.linalg.vander(T(m, d), N=1)),
    ("vander_bool", lambda m, d: m.linalg.vander(T(m, d, [True], "bool"))),
    # index_reduce
    *[(f"index_reduce_{r}_{s}", lambda m, d, r=r, s=s: T(m, d).index_reduce(
        0, T(m, d, [0, 1, 0]), T(m, d, [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0], [1.0, -1.0, 9.0]]), r, include_self=s))
      for r in ("prod", "mean", "amax", "amin") for s in (True, False)],
    ("index_reduce_dim1", lambda m, d: m.index_reduce(T(m, d), 1, T(m, d, [2, 0], "int32"), m.full(
        (2, 2), 3.0, device=d), "mean")),
    ("index_reduce_", lambda m, d: inplace(lambda t: t.index_reduce_(0, T(m, d, [1]), T(m, d, [[9.0, 9.0, -9.0]]),
                                                                     "amax"), T(m, d))),
    ("index_reduce_int_mean", lambda m, d: T(m, d, INTS).index_reduce(0, T(m, d, [0, 0]), T(m, d, INTS), "mean")),
    ("index_reduce_sum", lambda m, d: T(m, d).index_reduce(0, T(m, d, [0]), T(m, d, [[1.0, 1.0, 1.0]]), "sum")),
    ("index_reduce_index_dtype", lambda m, d: T(m, d).index_reduce(0, T(m, d, [0.0]), T(m, d, [A[0]]), "prod")),
    ("index_reduce_index_2d", lambda m, d: T(m, d).index_reduce(0, T(m, d, [[0]]), T(m, d, [A[0]]), "prod")),
    ("index_reduce_dtypes", lambda m, d: T(m, d).index_reduce(0, T(m, d, [0]), T(m, d, [A[0]], "float64"), "prod")),
    ("index_reduce_count", lambda m, d: T(m, d).index_reduce(0, T(m, d, [0, 1]), T(m, d, [A[0]]), "prod")),
    ("index_reduce_shape", lambda m, d: T(m, d).index_reduce(0, T(m, d, [0]), T(m, d, [[1.0, 2.0]]), "prod")),
    ("index_reduce_out_of_range", lambda m, d: T(m, d).index_reduce(0, T(m, d, [2]), T(m, d, [A[0]]), "prod")),
    ("index_reduce_negative", lambda m, d: T(m, d).index_reduce(0, T(m, d, [-1]), T(m, d, [A[0]]), "prod")),
]


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, call, device):
    check(call, device)


# ---- 4: NN functions with torch's top-level signatures (reductions as ints), on deterministic inputs

X3 = np.linspace(-2, 2, 2 * 4 * 6).reshape(2, 4, 6).tolist()  # (N, C, L)
X4 = np.linspace(-1, 1, 2 * 4 * 4 * 4).reshape(2, 4, 4, 4).tolist()  # (N, C, H, W)
W3 = np.linspace(-0.5, 0.5, 3 * 4 * 2).reshape(3, 4, 2).tolist()
TARGET = [[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]]

NN_CASES = [
    ("conv1d", lambda m, d: m.conv1d(T(m, d, X3), T(m, d, W3), T(m, d, [0.1, 0.2, 0.3]), 2, 1)),
    ("conv2d", lambda m, d: m.conv2d(T(m, d, X4), T(m, d, X4)[:, :, :2, :2], None, 1, 1, 1, 2)),
    ("conv_transpose1d", lambda m, d: m.conv_transpose1d(T(m, d, X3), T(m, d, W3).transpose(0, 1), None, 2)),
    ("avg_pool1d", lambda m, d: m.avg_pool1d(T(m, d, X3), 3, 2, 1, True, False)),
    ("max_pool1d", lambda m, d: m.max_pool1d(T(m, d, X3), 2)),
    ("max_pool2d", lambda m, d: m.max_pool2d(T(m, d, X4), 2, 1, 1, 1, True)),
    ("max_pool3d", lambda m, d: m.max_pool3d(T(m, d, X4), 2)),
    ("max_pool2d_indices_refused", lambda m, d: m.max_pool2d(T(m, d, X4), 2, 2, 0, 1, False, True)),
    ("max_pool1d_with_indices", lambda m, d: m.max_pool1d_with_indices(T(m, d, X3), 2, 3)),
    ("adaptive_avg_pool1d", lambda m, d: m.adaptive_avg_pool1d(T(m, d, X3), 4)),
    ("adaptive_max_pool1d", lambda m, d: m.adaptive_max_pool1d(T(m, d, X3), 4)),
    ("batch_norm", lambda m, d: m.batch_norm(T(m, d, X3), T(m, d, [1.0, 2.0, 0.5, 1.0]), None, m.zeros(4, device=d),
                                             m.ones(4, device=d), False, 0.1, 1e-5, False)),
    ("batch_norm_training", lambda m, d: m.batch_norm(T(m, d, X3), None, None, None, None, True, 0.1, 1e-5, True)),
    ("batch_norm_eval_no_stats", lambda m, d: m.batch_norm(T(m, d, X3), None, None, None, None, False, 0.1, 1e-5,
                                                           False)),
    ("layer_norm", lambda m, d: m.layer_norm(T(m, d, X3), [6], T(m, d, X3)[0, 0], None, 1e-3, False)),
    ("layer_norm_shape", lambda m, d: m.layer_norm(T(m, d, X3), [5])),
    ("max_pool1d_stride", lambda m, d: m.max_pool1d(T(m, d, X3), 2, [3])),
    ("group_norm", lambda m, d: m.group_norm(T(m, d, X3), 2, T(m, d, [1.0, 2.0, 0.5, 1.0]), eps=1e-3)),
    ("instance_norm", lambda m, d: m.instance_norm(T(m, d, X3), None, T(m, d, [0.0, 1.0, 0.0, 1.0]), None, None, True,
                                                   0.1, 1e-5, False)),
    ("bilinear", lambda m, d: m.bilinear(T(m, d), T(m, d, POS), T(m, d, W3)[:2, :3, :].expand(2, 3, 3),
                                         T(m, d, [0.5, -0.5]))),
    ("cosine_similarity", lambda m, d: m.cosine_similarity(T(m, d), T(m, d, POS), 0)),
    ("pairwise_distance", lambda m, d: m.pairwise_distance(T(m, d), T(m, d, POS), 1.0, 1e-6, True)),
    ("pdist", lambda m, d: m.pdist(T(m, d), 3.0)),
    ("pixel_shuffle", lambda m, d: m.pixel_shuffle(T(m, d, X4), 2)),
    ("pixel_unshuffle", lambda m, d: m.pixel_unshuffle(T(m, d, X4), 2)),
    ("channel_shuffle", lambda m, d: (m.channel_shuffle(T(m, d, X3), 2), m.native_channel_shuffle(T(m, d, X3), 2))),
    ("rrelu_eval", lambda m, d: m.rrelu(T(m, d), 0.1, 0.3)),
    ("rrelu_", lambda m, d: inplace(lambda t: m.rrelu_(t, 0.2, 0.4, False), T(m, d))),
    ("constant_pad_nd", lambda m, d: (m.constant_pad_nd(T(m, d), [1, 0, 0, 2], 5.0),
                                      m.constant_pad_nd(T(m, d), (-1, 1)))),
    ("kl_div", lambda m, d: [m.kl_div(T(m, d), T(m, d, UNIT), r) for r in (0, 1, 2, 3)]),
    ("losses_default_unreduced", lambda m, d: (m.kl_div(T(m, d), T(m, d, UNIT)),
                                               m.hinge_embedding_loss(T(m, d), T(m, d, TARGET)),
                                               m.binary_cross_entropy_with_logits(T(m, d), T(m, d, UNIT)))),
    ("kl_div_log_target", lambda m, d: m.kl_div(T(m, d), T(m, d), log_target=True)),
    ("kl_div_str", lambda m, d: m.kl_div(T(m, d), T(m, d, UNIT), "mean")),
    ("hinge_embedding_loss", lambda m, d: [m.hinge_embedding_loss(T(m, d), T(m, d, TARGET), 0.5, r)
                                           for r in (0, 1, 2)]),
    ("margin_ranking_loss", lambda m, d: m.margin_ranking_loss(T(m, d), T(m, d, POS), T(m, d, TARGET), 0.1, 2)),
    ("cosine_embedding_loss", lambda m, d: m.cosine_embedding_loss(T(m, d), T(m, d, POS), T(m, d, [1.0, -1.0]),
                                                                   0.2, 0)),
    ("triplet_margin_loss", lambda m, d: m.triplet_margin_loss(T(m, d), T(m, d, POS), T(m, d, UNIT), 1.0, 2, 1e-6,
                                                               True, 1)),
    ("poisson_nll_loss", lambda m, d: m.poisson_nll_loss(T(m, d), T(m, d, POS), True, True, 1e-8, 2)),
    ("binary_cross_entropy_with_logits", lambda m, d: m.binary_cross_entropy_with_logits(
        T(m, d), T(m, d, UNIT), None, T(m, d, [1.0, 2.0, 3.0]), 0)),
]


@pytest.mark.parametrize("name,call", NN_CASES, ids=[c[0] for c in NN_CASES])
def test_nn_matches_torch(name, call, device):
    check(call, device, rtol=1e-4, atol=1e-5)


def test_feature_dropout_drops_whole_channels(device):
    vkt.manual_seed(0)
    y = vkt.feature_dropout(vkt.ones(8, 16, 5, device=device), 0.5, True).cpu().numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and (y == y[:, :, :1]).all() and 0 < (y == 0).mean() < 1
    x = vkt.ones(4, 6, device=device)
    assert vkt.dropout_(x, 0.5, True) is x and set(np.unique(x.cpu().numpy())) <= {0.0, 2.0}


def test_rrelu_generator(device):
    """rrelu's slopes drawn from a vkt.Generator repeat with its seed."""
    x = vkt.full((4, 5), -1.0, device=device)
    first = vkt.rrelu(x, 0.1, 0.3, True, vkt.Generator().manual_seed(3)).cpu().numpy()
    again = vkt.rrelu(x, 0.1, 0.3, True, vkt.Generator().manual_seed(3)).cpu().numpy()
    np.testing.assert_array_equal(first, again)
    assert ((first >= -0.3) & (first <= -0.1)).all()


# ---- 6: window functions

WINDOWS = [
    (name, args) for name in ("bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window")
    for args in ((5,), (6, False), (0,), (1,), (2, False))
] + [("hamming_window", (7, True, 0.5, 0.4)), ("kaiser_window", (8, False, 3.0))]


@pytest.mark.parametrize("name,args", WINDOWS, ids=[f"{n}{a}" for n, a in WINDOWS])
def test_windows_match_torch(name, args, device):
    check(lambda m, d: getattr(m, name)(*args, device=d), device)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_windows_dtype_and_grad(dtype, device):
    tolerance = 2e-3 if dtype == "float16" else 1e-12
    for name in ("blackman_window", "kaiser_window"):
        check(lambda m, d: getattr(m, name)(9, dtype=getattr(m, dtype), device=d), device, tolerance, tolerance)
    w = vkt.hann_window(4, dtype=getattr(vkt, dtype), device=device, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.device.type == vkt.device(device).type


@pytest.mark.parametrize("call", [lambda m: m.hann_window(-1), lambda m: m.kaiser_window(4, dtype=m.int64),
                                  lambda m: m.bartlett_window(3.0)], ids=["negative", "int_dtype", "float_length"])
def test_window_errors(call):
    got, want = outcome(lambda: call(vkt)), outcome(lambda: call(torch))
    assert got[0] == want[0] and got[1].split(",")[0].split(" got")[0] == want[1].split(",")[0].split(" got")[0]


# ---- gradients

def index(m, x, values):
    return x.new_tensor(values, dtype=m.int64)


GRAD_CASES = [
    ("divide", lambda m, x: m.divide(x, x.detach() + 2)),
    ("subtract", lambda m, x: m.subtract(x, x * x, alpha=3)),
    ("addmm_", lambda m, x: x.new_ones(2, 2).addmm_(x, x.t(), beta=2)),
    ("addmv_", lambda m, x: x.new_zeros(2).addmv_(x, x[0], alpha=2)),
    ("mvlgamma", lambda m, x: (x.abs() + 2).mvlgamma(3)),
    ("frexp", lambda m, x: m.frexp(x * 3).mantissa),
    ("put", lambda m, x: m.put(x, index(m, x, [0, 4, -1]), x[0] * 2)),
    ("put_accumulate", lambda m, x: x.put(index(m, x, [0, 0, 1]), x[1], accumulate=True)),
    ("index_reduce_prod", lambda m, x: x.index_reduce(0, index(m, x, [1, 1]), x * 2, "prod")),
    ("index_reduce_amin", lambda m, x: x.index_reduce(1, index(m, x, [0, 0, 2]), x.flip(1), "amin",
                                                      include_self=False)),
    ("hardshrink", lambda m, x: m.hardshrink(x, 0.6)),
    ("prelu", lambda m, x: x.prelu(x.new_tensor([0.25]))),
    ("narrow_copy", lambda m, x: x.narrow_copy(1, 1, 2)),
    ("fill", lambda m, x: m.fill(x, 3.0) + x),
    ("vecdot", lambda m, x: m.linalg.vecdot(x, x.flip(0))),
    ("vander", lambda m, x: m.linalg.vander(x[0], N=3)),
    ("kl_div", lambda m, x: m.kl_div(x, x.detach().sigmoid(), 2)),
    ("batch_norm", lambda m, x: m.batch_norm(x.unsqueeze(0), None, None, None, None, True, 0.1, 1e-5, False)),
    ("renorm_", lambda m, x: (x * 1).renorm_(2, 0, 1.0)),
    ("ldexp_", lambda m, x: (x * 1).ldexp_(index(m, x, [1, 0, 2]))),  # torch: 0 at negative int exponents
    ("mvlgamma_", lambda m, x: (x.abs() + 2).mvlgamma_(2)),
    ("index_reduce_", lambda m, x: (x * 1).index_reduce_(0, index(m, x, [0]), x[1:] * 3, "prod")),
    ("put_", lambda m, x: (x * 1).put_(index(m, x, [5, 0]), x[0, :2] * 2)),
    ("chain_matmul", lambda m, x: m.chain_matmul(x, x.t(), x)),
]


@pytest.mark.parametrize("name,call", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(name, call, device):
    def grad(m, d):
        x = T(m, d).requires_grad_(True)
        y = call(m, x)
        (y * T(m, d, np.arange(1.0, 1.0 + y.numel()).reshape(tuple(y.shape)).tolist())).sum().backward()
        return x.grad

    check(grad, device, rtol=1e-4, atol=1e-5)


def test_get_device(device):
    x = vkt.zeros(2, device=device)
    want = -1 if device == "cpu" else x.device.index
    assert x.get_device() == vkt.get_device(x) == want and x.is_cpu == (device == "cpu")


def test_chain_matmul_warns():
    with pytest.warns(UserWarning, match="vkt.chain_matmul is deprecated"):
        vkt.chain_matmul(vkt.ones(2, 2), vkt.ones(2, 2))


def test_inplace_leaf_refused():
    x = vkt.ones(2, 2, requires_grad=True)
    for call in (lambda: x.addmm_(x, x), lambda: vkt.abs_(x), lambda: x.put_(vkt.tensor([0]), vkt.tensor([1.0]))):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            call()


def test_frexp_of_subnormals(device):
    """float32 subnormals where the adapter keeps them; NVIDIA's Vulkan compiler flushes them to zero in every float32
    shader (CUDA keeps them), so there frexp, as any op, sees 0."""
    x = vkt.tensor([1e-40, -3e-39], device=device)
    if device != "cpu" and (x * 1).tolist()[0] == 0.0:
        pytest.skip("this adapter flushes float32 subnormals to zero")
    got, want = x.frexp(), torch.tensor([1e-40, -3e-39]).frexp()
    assert got.mantissa.tolist() == want.mantissa.tolist() and got.exponent.tolist() == want.exponent.tolist()


def test_weak_references(device):
    """weakref.ref and WeakKeyDictionary take tensors and parameters, as torch's; the reference dies with them."""
    import gc
    import weakref

    t, p = vkt.zeros(2, device=device), vkt.nn.Parameter(vkt.zeros(2, device=device))
    refs, table = [weakref.ref(t), weakref.ref(p)], weakref.WeakKeyDictionary({t: 1})
    assert refs[0]() is t and refs[1]() is p and len(table) == 1
    del t, p
    gc.collect()
    assert refs[0]() is None and refs[1]() is None and len(table) == 0


def test_reversed_is_flip(device):
    x = vkt.arange(6.0, device=device).reshape(3, 2).requires_grad_(True)
    y = reversed(x)
    assert torch.equal(torch.tensor(y.tolist()), reversed(torch.arange(6.0).reshape(3, 2)))
    assert y.grad_fn.name() == "FlipBackward0" and reversed(vkt.tensor(5, device=device)).item() == 5
