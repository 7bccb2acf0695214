/* table.c: the op table, the dispatcher between shader and CPU fallback, the fallback counters, the
 * determinism flag, and the helpers every family's launch shares (dtype defines, binding checks, dimension
 * merging). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/math.h"
#include "fuse.h"
#include "table.h"

#define EW vkt_elementwise_supports, vkt_elementwise_launch, vkt_cpu_elementwise
/* The _K rows name PyTorch's kernel, as its dtype errors do, where it is not "<name>_cpu" (table.h) */
#define UNARY_K(ID, NAME, GLSL, FN, FLAGS, KERNEL)                                                                     \
  [ID] = {NAME, "unary.comp", "#define OP(x) (" GLSL ")\n", EW, vkt_f_##FN, vkt_i_##FN, FLAGS, KERNEL}
#define UNARY(ID, NAME, GLSL, FN, FLAGS) UNARY_K(ID, NAME, GLSL, FN, FLAGS, NULL)
#define BINARY_K(ID, NAME, GLSL, FN, FLAGS, KERNEL)                                                                    \
  [ID] = {NAME, "binary.comp", "#define OP(x, y) (" GLSL ")\n", EW, vkt_f_##FN, vkt_i_##FN, FLAGS, KERNEL}
#define BINARY(ID, NAME, GLSL, FN, FLAGS) BINARY_K(ID, NAME, GLSL, FN, FLAGS, NULL)
#define FLOATS VKT_FLOAT_ONLY /* float math (exp, sin, erf, ...): integers compute in the default float dtype */
#define REDUCE_K(ID, NAME, GLSL, FLAGS, KERNEL)                                                                        \
  [ID] = {NAME, "reduce.comp", GLSL, vkt_reduce_supports, vkt_reduce_launch, vkt_cpu_reduce, NULL, NULL, FLAGS, KERNEL}
#define REDUCE(ID, NAME, GLSL, FLAGS) REDUCE_K(ID, NAME, GLSL, FLAGS, NULL)
#define SCAN_K(ID, NAME, GLSL, FLAGS, KERNEL)                                                                          \
  [ID] = {NAME, "scan.comp", GLSL, vkt_scan_supports, vkt_scan_launch, vkt_cpu_scan, NULL, NULL, FLAGS, KERNEL}
#define SCAN(ID, NAME, GLSL) SCAN_K(ID, NAME, GLSL, 0, NULL)
#define NORM(ID, NAME, GLSL)                                                                                           \
  [ID] = {NAME, "norm.comp", GLSL, vkt_norm_supports, vkt_norm_launch, vkt_cpu_norm, NULL, NULL, 0}
#define LOSS(ID, NAME, GLSL, CPU)                                                                                      \
  [ID] = {NAME, "loss.comp", GLSL, vkt_loss_supports, vkt_loss_launch, CPU, NULL, NULL, 0}
#define SHAPE(ID, NAME, SHADER, GLSL)                                                                                  \
  [ID] = {NAME, SHADER, GLSL, vkt_shape_supports, vkt_shape_launch, vkt_cpu_shape, NULL, NULL, 0}

const vkt_op vkt_ops[VKT_OP_COUNT] = {
    UNARY(VKT_OP_RELU, "relu", "x != x ? x : vkt_max(x, C(0))", relu, VKT_NO_BOOL),
    UNARY_K(VKT_OP_GELU, "gelu", "C(0.5) * x * vkt_erfc(x * C(-0.7071067811865476))", gelu, FLOATS | VKT_FLOAT_IN,
            "GeluKernelImpl"),
    UNARY_K(VKT_OP_GELU_TANH, "gelu_tanh",
            "C(0.5) * x * (C(1) + vkt_tanh(C(0.7978845608028654) * (x + C(0.044715) * x * x * x)))", gelu_tanh,
            FLOATS | VKT_FLOAT_IN, "GeluKernelImpl"),
    UNARY(VKT_OP_SILU, "silu", "x * vkt_sigmoid(x)", silu, FLOATS | VKT_FLOAT_IN),
    UNARY(VKT_OP_SIGMOID, "sigmoid", "vkt_sigmoid(x)", sigmoid, FLOATS),
    UNARY(VKT_OP_TANH, "tanh", "vkt_tanh(x)", tanh, FLOATS),
    UNARY(VKT_OP_LEAKY_RELU, "leaky_relu", "x >= C(0) ? x : x * P0", leaky_relu, VKT_FLOAT_ONLY | VKT_FLOAT_IN),
    UNARY(VKT_OP_ELU, "elu", "x > C(0) ? x : P0 * vkt_expm1(x)", elu, FLOATS | VKT_FLOAT_IN),
    UNARY(VKT_OP_SOFTPLUS, "softplus", "x * P0 > P1 ? x : vkt_log1p(exp(x * P0)) / P0", softplus,
          FLOATS | VKT_FLOAT_IN),
    UNARY(VKT_OP_NEG, "neg", "-x", neg, VKT_NO_BOOL),
    UNARY(VKT_OP_ABS, "abs", "abs(x)", abs, VKT_NOT_BOOL),
    UNARY(VKT_OP_EXP, "exp", "exp(x)", exp, FLOATS),
    UNARY(VKT_OP_LOG, "log", "vkt_log(x)", log, FLOATS),
    UNARY(VKT_OP_SQRT, "sqrt", "sqrt(x)", sqrt, VKT_FLOAT_ONLY),
    UNARY(VKT_OP_RSQRT, "rsqrt", "inversesqrt(x)", rsqrt, VKT_FLOAT_ONLY),
    UNARY(VKT_OP_SIN, "sin", "sin(x)", sin, FLOATS),
    UNARY(VKT_OP_COS, "cos", "cos(x)", cos, FLOATS),
    UNARY(VKT_OP_SQUARE, "square", "x * x", square, 0),
    UNARY(VKT_OP_RECIPROCAL, "reciprocal", "C(1) / x", reciprocal, VKT_FLOAT_ONLY),
    UNARY(VKT_OP_CLAMP, "clamp", "x != x ? x : P0 != P0 || P1 != P1 ? P0 + P1 : vkt_min(vkt_max(x, P0), P1)", clamp, 0),
    UNARY(VKT_OP_SIGN, "sign", "vkt_sign(x)", sign, 0),
    UNARY_K(VKT_OP_FLOOR, "floor", "floor(x)", floor, VKT_NOT_BOOL, "floor_vml_cpu"),
    UNARY_K(VKT_OP_CEIL, "ceil", "ceil(x)", ceil, VKT_NOT_BOOL, "ceil_vml_cpu"),
    UNARY_K(VKT_OP_ROUND, "round", "roundEven(x)", round, VKT_NOT_BOOL, "round_vml_cpu"),
    UNARY(VKT_OP_LOGICAL_NOT, "logical_not", "x == C(0)", logical_not, VKT_BOOL_OUT),
    UNARY(VKT_OP_CAST, "cast", "x", identity, 0),
    /* unary math, activations and tests (issue 15) */
    UNARY(VKT_OP_LOG1P, "log1p", "vkt_log1p(x)", log1p, FLOATS),
    UNARY(VKT_OP_EXPM1, "expm1", "vkt_expm1(x)", expm1, FLOATS),
    UNARY(VKT_OP_LOG2, "log2", "vkt_log2(x)", log2, FLOATS),
    UNARY(VKT_OP_LOG10, "log10", "vkt_log10(x)", log10, FLOATS),
    UNARY(VKT_OP_EXP2, "exp2", "exp2(x)", exp2, FLOATS),
    UNARY(VKT_OP_ERF, "erf", "vkt_erf(x)", erf, FLOATS),
    UNARY(VKT_OP_ERFC, "erfc", "vkt_erfc(x)", erfc, FLOATS),
    UNARY(VKT_OP_ERFINV, "erfinv", "vkt_erfinv(x)", erfinv, FLOATS),
    UNARY(VKT_OP_TAN, "tan", "vkt_tan(x)", tan, FLOATS),
    UNARY(VKT_OP_ASIN, "asin", "vkt_asin(x)", asin, FLOATS),
    UNARY(VKT_OP_ACOS, "acos", "vkt_acos(x)", acos, FLOATS),
    UNARY(VKT_OP_ATAN, "atan", "vkt_atan(x)", atan, FLOATS),
    UNARY(VKT_OP_SINH, "sinh", "vkt_sinh(x)", sinh, FLOATS),
    UNARY(VKT_OP_COSH, "cosh", "vkt_cosh(x)", cosh, FLOATS),
    UNARY(VKT_OP_ASINH, "asinh", "vkt_asinh(x)", asinh, FLOATS),
    UNARY(VKT_OP_ACOSH, "acosh", "vkt_acosh(x)", acosh, FLOATS),
    UNARY(VKT_OP_ATANH, "atanh", "vkt_atanh(x)", atanh, FLOATS),
    UNARY_K(VKT_OP_TRUNC, "trunc", "trunc(x)", trunc, VKT_NOT_BOOL, "trunc_vml_cpu"),
    UNARY(VKT_OP_FRAC, "frac", "x - trunc(x)", frac, VKT_FLOAT_IN),
    UNARY(VKT_OP_DEG2RAD, "deg2rad", "x * C(VKT_DEG2RAD)", deg2rad, VKT_FLOAT_ONLY),
    UNARY(VKT_OP_RAD2DEG, "rad2deg", "x * C(VKT_RAD2DEG)", rad2deg, VKT_FLOAT_ONLY),
    UNARY(VKT_OP_ISNAN, "isnan", "vkt_isnan(x)", isnan, VKT_BOOL_OUT),
    UNARY(VKT_OP_ISINF, "isinf", "vkt_isinf(x)", isinf, VKT_BOOL_OUT),
    UNARY(VKT_OP_ISFINITE, "isfinite", "!vkt_isnan(x) && !vkt_isinf(x)", isfinite, VKT_BOOL_OUT),
    UNARY(VKT_OP_ISNEGINF, "isneginf", "vkt_isinf(x) && x < C(0)", isneginf, VKT_BOOL_OUT),
    UNARY(VKT_OP_ISPOSINF, "isposinf", "vkt_isinf(x) && x > C(0)", isposinf, VKT_BOOL_OUT),
    /* nan_to_num is two passes: NaN and +inf (P0, P1), then -inf (P0) */
    UNARY(VKT_OP_NAN_TO_NUM, "nan_to_num", "vkt_isnan(x) ? P0 : vkt_isinf(x) && x > C(0) ? P1 : x", nan_to_num, 0),
    UNARY(VKT_OP_NEGINF_TO_NUM, "nan_to_num", "vkt_isinf(x) && x < C(0) ? P0 : x", neginf_to_num, 0),
    /* P0 is 10 ** |decimals|, P1 is 1 where decimals < 0 */
    UNARY(VKT_OP_ROUND_DECIMALS, "round", "P1 != C(0) ? roundEven(x / P0) * P0 : roundEven(x * P0) / P0",
          round_decimals, VKT_FLOAT_IN),
    UNARY(VKT_OP_BITWISE_NOT, "bitwise_not", "~x", bitwise_not, VKT_INTEGRAL_IN),
    UNARY(VKT_OP_HARDSIGMOID, "hardsigmoid", "x != x ? x : min(max(x + C(3), C(0)), C(6)) / C(6)", hardsigmoid,
          VKT_FLOAT_IN),
    UNARY(VKT_OP_HARDSWISH, "hardswish", "x != x ? x : x * min(max(x + C(3), C(0)), C(6)) / C(6)", hardswish,
          VKT_FLOAT_IN),
    UNARY(VKT_OP_MISH, "mish", "x * vkt_tanh(x > C(20) ? x : vkt_log1p(exp(x)))", mish, FLOATS | VKT_FLOAT_IN),
    UNARY(VKT_OP_LOGSIGMOID, "log_sigmoid", "x != x ? x : min(x, C(0)) - vkt_log1p(exp(-abs(x)))", logsigmoid,
          FLOATS | VKT_FLOAT_IN),
    /* PyTorch's selu and celu are its elu kernel, softsign its abs and a division, tanhshrink a subtraction */
    UNARY_K(VKT_OP_SELU, "selu", "C(1.0507009873554805) * (x > C(0) ? x : C(1.6732632423543772) * vkt_expm1(x))",
            selu, FLOATS | VKT_FLOAT_IN, "elu_cpu"),
    UNARY_K(VKT_OP_CELU, "celu", "x > C(0) ? x : P0 * vkt_expm1(x / P0)", celu, FLOATS | VKT_FLOAT_IN, "elu_cpu"),
    UNARY_K(VKT_OP_SOFTSIGN, "softsign", "x / (C(1) + abs(x))", softsign, VKT_FLOAT_ONLY | VKT_NOT_BOOL, "abs_cpu"),
    UNARY(VKT_OP_TANHSHRINK, "tanhshrink", "x - vkt_tanh(x)", tanhshrink, FLOATS | VKT_NO_BOOL),
    UNARY(VKT_OP_THRESHOLD, "threshold", "x <= P0 ? P1 : x", threshold, VKT_NOT_BOOL),
    UNARY(VKT_OP_LGAMMA, "lgamma", "vkt_lgamma(x)", lgamma, FLOATS),
    UNARY(VKT_OP_DIGAMMA, "digamma", "vkt_digamma(x)", digamma, FLOATS),
    UNARY(VKT_OP_POLYGAMMA, "polygamma", "vkt_polygamma(int(P0), x)", polygamma, FLOATS),
    UNARY(VKT_OP_LOGIT, "logit", "vkt_logit(x, P0)", logit, FLOATS),
    UNARY(VKT_OP_SINC, "sinc", "vkt_sinc(x)", sinc, FLOATS),
    UNARY(VKT_OP_ENTR, "special_entr", "vkt_entr(x)", entr, FLOATS),
    UNARY(VKT_OP_NDTR, "special_ndtr", "vkt_ndtr(x)", ndtr, FLOATS),
    UNARY_K(VKT_OP_NDTRI, "special_ndtri", "vkt_ndtri(x)", ndtri, FLOATS | VKT_NOT_HALF, "ndtri_cpu"),
    UNARY_K(VKT_OP_LOG_NDTR, "special_log_ndtr", "vkt_log_ndtr(x)", log_ndtr, FLOATS | VKT_NOT_HALF, "log_ndtr_cpu"),
    UNARY(VKT_OP_I0, "i0", "vkt_bessel_i(x, false, false)", i0, FLOATS),
    UNARY(VKT_OP_I0E, "special_i0e", "vkt_bessel_i(x, false, true)", i0e, FLOATS),
    UNARY(VKT_OP_I1, "special_i1", "vkt_bessel_i(x, true, false)", i1, FLOATS),
    UNARY(VKT_OP_I1E, "special_i1e", "vkt_bessel_i(x, true, true)", i1e, FLOATS),
    UNARY_K(VKT_OP_ERFCX, "special_erfcx", "vkt_erfcx(x)", erfcx, FLOATS | VKT_NOT_HALF, "erfcx_cpu"),
    UNARY(VKT_OP_ANGLE, "angle", "vkt_isnan(x) ? x : x < C(0) ? C(VKT_PI) : C(0)", angle, FLOATS),
    BINARY(VKT_OP_ADD, "add", "x + y * P1", add, 0),
    BINARY(VKT_OP_SUB, "sub", "x - y * P1", sub, VKT_NO_BOOL),
    BINARY(VKT_OP_MUL, "mul", "x * y", mul, 0),
    BINARY(VKT_OP_DIV, "div", "x / y", div, VKT_FLOAT_ONLY),
    BINARY(VKT_OP_DIV_TRUNC, "div_trunc", "vkt_div_trunc(x, y)", div_trunc, VKT_NOT_BOOL),
    BINARY(VKT_OP_DIV_FLOOR, "div_floor", "vkt_div_floor(x, y)", div_floor, VKT_NOT_BOOL),
    BINARY_K(VKT_OP_POW, "pow", "vkt_pow(x, y)", pow, VKT_NOT_BOOL, "pow"),
    BINARY(VKT_OP_MAXIMUM, "maximum", "x != x || y != y ? x + y : vkt_max(x, y)", maximum, VKT_TENSOR_OTHER),
    BINARY(VKT_OP_MINIMUM, "minimum", "x != x || y != y ? x + y : vkt_min(x, y)", minimum, VKT_TENSOR_OTHER),
    BINARY(VKT_OP_REMAINDER, "remainder", "vkt_remainder(x, y)", remainder, VKT_NOT_BOOL),
    BINARY(VKT_OP_EQ, "eq", "x == y", eq, VKT_BOOL_OUT),
    BINARY(VKT_OP_NE, "ne", "x != y", ne, VKT_BOOL_OUT),
    BINARY(VKT_OP_LT, "lt", "x < y", lt, VKT_BOOL_OUT),
    BINARY(VKT_OP_LE, "le", "x <= y", le, VKT_BOOL_OUT),
    BINARY(VKT_OP_GT, "gt", "x > y", gt, VKT_BOOL_OUT),
    BINARY(VKT_OP_GE, "ge", "x >= y", ge, VKT_BOOL_OUT),
    BINARY(VKT_OP_LOGICAL_AND, "logical_and", "x != C(0) && y != C(0)", logical_and, VKT_BOOL_OUT | VKT_TENSOR_OTHER),
    BINARY(VKT_OP_LOGICAL_OR, "logical_or", "x != C(0) || y != C(0)", logical_or, VKT_BOOL_OUT | VKT_TENSOR_OTHER),
    /* binary math, bitwise ops and tests (issue 15) */
    BINARY(VKT_OP_ATAN2, "atan2", "vkt_atan2(x, y)", atan2, FLOATS | VKT_TENSOR_OTHER),
    BINARY(VKT_OP_FMOD, "fmod", "vkt_fmod(x, y)", fmod, VKT_NOT_BOOL),
    BINARY(VKT_OP_HYPOT, "hypot", "vkt_hypot(x, y)", hypot, VKT_FLOAT_IN | VKT_TENSOR_OTHER),
    BINARY(VKT_OP_COPYSIGN, "copysign", "vkt_copysign(x, y)", copysign, VKT_FLOAT_ONLY),
    BINARY(VKT_OP_LOGADDEXP, "logaddexp", "vkt_logaddexp(x, y)", logaddexp, FLOATS | VKT_FLOAT_IN | VKT_TENSOR_OTHER),
    BINARY(VKT_OP_BITWISE_AND, "bitwise_and", "x & y", bitwise_and, VKT_INTEGRAL_IN),
    BINARY(VKT_OP_BITWISE_OR, "bitwise_or", "x | y", bitwise_or, VKT_INTEGRAL_IN),
    BINARY(VKT_OP_BITWISE_XOR, "bitwise_xor", "x ^ y", bitwise_xor, VKT_INTEGRAL_IN),
    BINARY(VKT_OP_LSHIFT, "lshift", "vkt_lshift(x, y)", lshift, VKT_INTEGRAL_IN | VKT_NOT_BOOL),
    BINARY(VKT_OP_RSHIFT, "rshift", "vkt_rshift(x, y)", rshift, VKT_INTEGRAL_IN | VKT_NOT_BOOL),
    BINARY(VKT_OP_LOGICAL_XOR, "logical_xor", "(x != C(0)) != (y != C(0))", logical_xor,
           VKT_BOOL_OUT | VKT_TENSOR_OTHER),
    /* P0 is rtol, P1 atol; the second also takes NaN as close to NaN */
    BINARY(VKT_OP_ISCLOSE, "isclose", "vkt_isclose(x, y, P0, P1, false)", isclose, VKT_BOOL_OUT | VKT_FLOAT_ONLY),
    BINARY(VKT_OP_ISCLOSE_NAN, "isclose", "vkt_isclose(x, y, P0, P1, true)", isclose_nan,
           VKT_BOOL_OUT | VKT_FLOAT_ONLY),
    /* x log(y) and x log1p(y), 0 where x is 0 unless y is NaN */
    BINARY(VKT_OP_XLOGY, "xlogy", "vkt_xlogy(x, y, false)", xlogy, FLOATS),
    BINARY(VKT_OP_XLOG1PY, "special_xlog1py", "vkt_xlogy(x, y, true)", xlog1py, FLOATS),
    BINARY(VKT_OP_NEXTAFTER, "nextafter", "vkt_nextafter(x, y, P1 != C(0))", nextafter,
           VKT_FLOAT_IN | VKT_TENSOR_OTHER),
    BINARY_K(VKT_OP_ZETA, "special_zeta", "vkt_zeta(x, y)", zeta, FLOATS | VKT_NOT_HALF, "zeta_cpu"),
    /* the regularized incomplete gamma functions P(x, y) and Q(x, y) = 1 - P(x, y) (special.gammainc, gammaincc) */
    BINARY_K(VKT_OP_IGAMMA, "igamma", "vkt_igamma(x, y, false)", igamma, VKT_FLOAT_IN | VKT_TENSOR_OTHER, "igamma_cpu"),
    BINARY_K(VKT_OP_IGAMMAC, "igammac", "vkt_igamma(x, y, true)", igammac, VKT_FLOAT_IN | VKT_TENSOR_OTHER,
             "igammac_cpu"),
    BINARY(VKT_OP_THRESHOLD_BACKWARD, "threshold_backward", "y > C(0) ? x : C(0)", threshold_backward, VKT_NOT_BOOL),
    [VKT_OP_WHERE] = {"where", "where.comp", "", EW, NULL, NULL, 0},
    REDUCE(VKT_OP_SUM, "sum", "#define OP_SUM\n", 0),
    REDUCE(VKT_OP_MEAN, "mean", "#define OP_MEAN\n", 0),
    REDUCE(VKT_OP_PROD, "prod", "#define OP_PROD\n", 0),
    REDUCE(VKT_OP_AMAX, "amax", "#define OP_AMAX\n", 0),
    REDUCE(VKT_OP_AMIN, "amin", "#define OP_AMIN\n", 0),
    REDUCE_K(VKT_OP_ARGMAX, "argmax", "#define OP_ARGMAX\n", VKT_NOT_BOOL | VKT_REFUSED_RUNTIME,
             "argmax(): does not support bool input"),
    REDUCE_K(VKT_OP_ARGMIN, "argmin", "#define OP_ARGMIN\n", VKT_NOT_BOOL | VKT_REFUSED_RUNTIME,
             "argmin(): does not support bool input"),
    REDUCE(VKT_OP_VAR, "var", "#define OP_VAR\n", 0),
    REDUCE(VKT_OP_ALL, "all", "#define OP_ALL\n", 0),
    REDUCE(VKT_OP_ANY, "any", "#define OP_ANY\n", 0),
    REDUCE(VKT_OP_SOFTMAX, "softmax", "#define OP_SOFTMAX\n", 0),
    REDUCE(VKT_OP_LOG_SOFTMAX, "log_softmax", "#define OP_LOG_SOFTMAX\n", 0),
    [VKT_OP_LOGSUMEXP] = {"logsumexp", "reduce.comp", "#define OP_LOGSUMEXP\n", vkt_reduce_supports, vkt_reduce_launch,
                          vkt_cpu_logsumexp, NULL, NULL, 0},
    SCAN_K(VKT_OP_CUMSUM, "cumsum", "#define OP_SUM\n", VKT_NOT_BOOL, "cumsum_out_cpu"), /* of the result dtype */
    SCAN_K(VKT_OP_CUMPROD, "cumprod", "#define OP_PROD\n", VKT_NOT_BOOL, "cumprod_out_cpu"),
    SCAN(VKT_OP_CUMMAX, "cummax", "#define OP_MAX\n"),
    SCAN(VKT_OP_CUMMIN, "cummin", "#define OP_MIN\n"),
    [VKT_OP_SORT] = {"sort", "sort.comp", "", vkt_sort_supports, vkt_sort_launch, vkt_cpu_sort, NULL, NULL, 0},
    [VKT_OP_COMPACT] = {"compact", "compact.comp", "", vkt_compact_supports, vkt_compact_launch, vkt_cpu_compact, NULL,
                        NULL, 0},
    [VKT_OP_SEARCHSORTED] = {"searchsorted", "search.comp", "", vkt_search_supports, vkt_search_launch, vkt_cpu_search,
                             NULL, NULL, 0},
    [VKT_OP_MATMUL] = {"matmul", "matmul.comp", "", vkt_matmul_supports, vkt_matmul_launch, vkt_cpu_matmul, NULL, NULL,
                       0},
    SHAPE(VKT_OP_GATHER, "gather", "gather.comp", ""), /* index_select's index is a view of gather's form */
    SHAPE(VKT_OP_INDEX_SELECT, "index_select", "gather.comp", ""),
    SHAPE(VKT_OP_TRIL, "tril", "tri.comp", "#define OP_TRIL\n"),
    SHAPE(VKT_OP_TRIU, "triu", "tri.comp", "#define OP_TRIU\n"),
    SHAPE(VKT_OP_FLIP, "flip", "copy.comp", ""), /* vkt_copy_ from a view with negative strides */
    SHAPE(VKT_OP_INDEX_WRAP, "index_wrap", "index.comp", ""),
    SHAPE(VKT_OP_SCATTER, "scatter", "scatter.comp", "#define OP_SET\n"),
    SHAPE(VKT_OP_SCATTER_ADD, "scatter_add", "scatter.comp", "#define OP_ADD\n"),
    SHAPE(VKT_OP_SCATTER_PROD, "scatter_prod", "scatter.comp", "#define OP_PROD\n"),
    SHAPE(VKT_OP_SCATTER_AMAX, "scatter_amax", "scatter.comp", "#define OP_AMAX\n"),
    SHAPE(VKT_OP_SCATTER_AMIN, "scatter_amin", "scatter.comp", "#define OP_AMIN\n"),
    [VKT_OP_IM2COL] = {"im2col", "im2col.comp", "#define OP_IM2COL\n", vkt_im2col_supports, vkt_im2col_launch,
                       vkt_cpu_im2col, NULL, NULL, 0},
    [VKT_OP_COL2IM] = {"col2im", "im2col.comp", "#define OP_COL2IM\n", vkt_im2col_supports, vkt_im2col_launch,
                       vkt_cpu_im2col, NULL, NULL, 0},
    NORM(VKT_OP_LAYER_NORM, "layer_norm", "#define OP_FORWARD\n"),
    NORM(VKT_OP_RMS_NORM, "rms_norm", "#define OP_FORWARD\n#define RMS\n"),
    NORM(VKT_OP_LAYER_NORM_BACKWARD, "layer_norm_backward", "#define OP_BACKWARD\n"),
    NORM(VKT_OP_RMS_NORM_BACKWARD, "rms_norm_backward", "#define OP_BACKWARD\n#define RMS\n"),
    NORM(VKT_OP_LAYER_NORM_COLUMNS, "layer_norm_backward_weight", "#define OP_COLUMNS\n"),
    NORM(VKT_OP_RMS_NORM_COLUMNS, "rms_norm_backward_weight", "#define OP_COLUMNS\n#define RMS\n"),
    LOSS(VKT_OP_CROSS_ENTROPY, "cross_entropy_loss", "#define OP_CE\n", vkt_cpu_loss),
    LOSS(VKT_OP_NLL_LOSS, "nll_loss", "#define OP_NLL\n", vkt_cpu_loss),
    LOSS(VKT_OP_CROSS_ENTROPY_BACKWARD, "cross_entropy_loss_backward", "#define OP_CE\n", vkt_cpu_loss_backward),
    LOSS(VKT_OP_NLL_LOSS_BACKWARD, "nll_loss_backward", "#define OP_NLL\n", vkt_cpu_loss_backward),
    [VKT_OP_OPTIMIZER_STEP] = {"optimizer_step", "optim.comp", "", vkt_optim_supports, vkt_optim_launch, vkt_cpu_optim,
                               NULL, NULL, 0},
    /* linear algebra */
    [VKT_OP_SVD] = {"svd", "svd.comp", "", vkt_svd_supports, vkt_svd_launch, vkt_cpu_svd, NULL, NULL, 0},
    [VKT_OP_LU] = {"lu_factor", "lu.comp", "", vkt_solve_supports, vkt_solve_launch, vkt_cpu_solve, NULL, NULL, 0},
    [VKT_OP_CHOLESKY] = {"cholesky", "cholesky.comp", "", vkt_solve_supports, vkt_solve_launch, vkt_cpu_solve, NULL,
                         NULL, 0},
    [VKT_OP_TRSM] = {"solve_triangular", "trsm.comp", "", vkt_solve_supports, vkt_solve_launch, vkt_cpu_solve, NULL,
                     NULL, 0},
    [VKT_OP_QR] = {"qr", "qr.comp", "", vkt_decompose_supports, vkt_decompose_launch, vkt_cpu_decompose, NULL, NULL, 0},
    [VKT_OP_EIGH] = {"eigh", "eigh.comp", "", vkt_decompose_supports, vkt_decompose_launch, vkt_cpu_decompose, NULL,
                     NULL, 0},
};
static_assert(VKT_OP_COUNT == 170, "a new op needs its row in vkt_ops");

/* ---- the dtypes PyTorch's kernels refuse ---- */

static vkt_status refusal(unsigned flags, const char *kernel, const char *suffix, vkt_dtype d) {
  bool fl = vkt_dtypes[d].is_float;
  if (!((flags & VKT_INTEGRAL_IN) && fl) && !((flags & VKT_FLOAT_IN) && !fl) &&
      !((flags & VKT_NOT_BOOL) && d == VKT_BOOL) && !((flags & VKT_NOT_HALF) && d == VKT_FLOAT16))
    return VKT_OK;
  if (flags & VKT_REFUSED_RUNTIME)
    return vkt_fail(VKT_ERR_RUNTIME, "%s", kernel);
  return vkt_fail(VKT_ERR_NOTIMPL, "\"%s%s\" not implemented for '%s'", kernel, suffix, vkt_dtypes[d].torch_name);
}

vkt_status vkt_dtype_refusal(unsigned flags, const char *kernel, vkt_dtype d) { return refusal(flags, kernel, "", d); }

vkt_status vkt_op_check_dtype(const vkt_op *op, vkt_dtype d) {
  return op->kernel ? refusal(op->flags, op->kernel, "", d) : refusal(op->flags, op->name, "_cpu", d);
}

/* ---- fallback counters ---- */

#define VKT_MAX_FALLBACKS 128
typedef struct {
  const char *op, *reason; /* static strings: the table's name, the supports() reason */
  uint64_t count;
} fallback_row;
static fallback_row fallbacks[VKT_MAX_FALLBACKS];
static int nfallbacks;
static void (*fallback_hook)(const char *op, const char *reason);

void vkt_fallback_note(const char *op, const char *reason) {
  for (int i = 0; i < nfallbacks; i++)
    if (strcmp(fallbacks[i].op, op) == 0 && strcmp(fallbacks[i].reason, reason) == 0) {
      fallbacks[i].count++;
      return;
    }
  if (nfallbacks < VKT_MAX_FALLBACKS)
    fallbacks[nfallbacks++] = (fallback_row){op, reason, 1};
  if (fallback_hook)
    fallback_hook(op, reason);
}

void vkt_fallback_set_hook(void (*hook)(const char *op, const char *reason)) { fallback_hook = hook; }
int vkt_fallback_count(void) { return nfallbacks; }

void vkt_fallback_get(int i, const char **op, const char **reason, uint64_t *count) {
  *op = fallbacks[i].op, *reason = fallbacks[i].reason, *count = fallbacks[i].count;
}

void vkt_fallback_reset(void) { nfallbacks = 0; }

static bool deterministic; /* read and written atomically: any thread may set it */

void vkt_set_deterministic(bool on) { __atomic_store_n(&deterministic, on, __ATOMIC_RELAXED); }
bool vkt_deterministic(void) { return __atomic_load_n(&deterministic, __ATOMIC_RELAXED); }

/* ---- the dispatcher ---- */

/* Runs the CPU kernel on host copies of a's tensors and writes the results back to the device. */
static vkt_status fallback(const vkt_op *op, const vkt_op_args *a) {
  vkt_op_args h = *a;
  vkt_tensor in[4] = {0}, out = {0}, out2 = {0};
  vkt_status st = VKT_OK;
  for (int k = 0; k < a->nin && !st; k++)
    if (a->in[k]) {
      st = vkt_host_view(a->in[k], &in[k]);
      h.in[k] = &in[k];
    }
  if (!st)
    st = vkt_tensor_empty(&out, VKT_CPU, a->out->dtype, a->out->ndim, a->out->shape);
  h.out = &out;
  if (!st && a->out2) {
    st = vkt_tensor_empty(&out2, VKT_CPU, a->out2->dtype, a->out2->ndim, a->out2->shape);
    h.out2 = &out2;
  }
  if (!st && !(st = op->cpu(op, &h)) && !(st = vkt_copy_(a->out, &out)) && a->out2)
    st = vkt_copy_(a->out2, &out2);
  for (int k = 0; k < 4; k++)
    vkt_tensor_release(&in[k]);
  vkt_tensor_release(&out);
  vkt_tensor_release(&out2);
  return st;
}

/* Pending values the op reads are computed, and pending expressions that read what it writes. */
static vkt_status ready(vkt_op_id id, const vkt_op_args *a) {
  vkt_status st = VKT_OK;
  for (int k = 0; k < a->nin && !st; k++)
    if (a->in[k])
      st = vkt_fuse_ready(a->in[k]->storage, false);
  if (!st)
    st = vkt_fuse_ready(a->out->storage, true);
  if (!st && a->out2)
    st = vkt_fuse_ready(a->out2->storage, true);
  if (id == VKT_OP_OPTIMIZER_STEP) {
    const vkt_optim_args *o = (const vkt_optim_args *)a;
    for (int k = 0; k < o->nstate && !st; k++)
      st = vkt_fuse_ready(o->state[k]->storage, true);
  }
  return st;
}

vkt_status vkt_op_run(vkt_op_id id, const vkt_op_args *a) {
  const vkt_op *op = &vkt_ops[id];
  if (vkt_tensor_device(a->out) == VKT_CPU) {
    a->out->storage->version++;
    return op->cpu(op, a);
  }
  vkt_status st = ready(id, a);
  if (st)
    return st;
  a->out->storage->version++;
  const char *why = "no shader";
  if (op->supports && op->supports(op, a, &why))
    return op->launch(op, a);
  vkt_fallback_note(op->name, why);
  return fallback(op, a);
}

/* ---- shared by the launches ---- */

bool vkt_dtype_storable(const vkt_adapter_props *p, vkt_dtype d, const char **why) {
  switch (d) {
  case VKT_FLOAT64: *why = "the adapter has no shaderFloat64"; return p->float64;
  case VKT_INT64: *why = "the adapter has no shaderInt64"; return p->int64;
  case VKT_FLOAT16: *why = "the adapter has no 16-bit storage"; return p->int16_storage;
  case VKT_UINT8:
  case VKT_BOOL: *why = "the adapter has no 8-bit storage"; return p->int8_storage;
  default: return true;
  }
}

bool vkt_bindable(const vkt_tensor *t, const char **why) {
  const vkt_storage *s = t->storage;
  *why = "a tensor is larger than maxStorageBufferRange";
  return (s->nbytes + 3) / 4 * 4 <= vkt_device_props(s->dev)->max_storage_buffer_range;
}

bool vkt_operands_fit(const vkt_adapter_props *p, vkt_dtype compute, int n, const vkt_tensor *const *t,
                      const char **why) {
  if (!vkt_dtype_storable(p, compute, why))
    return false;
  for (int k = 0; k < n; k++)
    if (!vkt_dtype_storable(p, t[k]->dtype, why) || !vkt_bindable(t[k], why))
      return false;
  return true;
}

const char *vkt_storage_type(vkt_dtype d) {
  static const char *const storage[VKT_DTYPE_COUNT] = {
      [VKT_FLOAT32] = "float", [VKT_FLOAT64] = "double", [VKT_FLOAT16] = "float16_t", [VKT_INT32] = "int",
      [VKT_INT64] = "int64_t", [VKT_UINT8] = "uint8_t",  [VKT_BOOL] = "uint8_t"};
  return storage[d];
}

int vkt_defines_cat(char *buf, size_t n, ...) {
  va_list ap;
  size_t len = 0;
  va_start(ap, n);
  for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *)) {
    size_t l = strlen(s);
    if (len + 1 < n)
      memcpy(buf + len, s, len + l < n ? l : n - 1 - len);
    len += l;
  }
  va_end(ap);
  if (n)
    buf[len < n ? len : n - 1] = '\0';
  return (int)len;
}

int vkt_type_defines(char *buf, size_t n, const char *name, vkt_dtype d) {
  if (strcmp(name, "C") != 0 && strcmp(name, "A") != 0)
    return vkt_defines_cat(buf, n, "#define ", name, " ", vkt_storage_type(d), "\n", NULL);
  const char *type = "int", *flag = "_INT";
  if (d == VKT_FLOAT32 || d == VKT_FLOAT16)
    type = "float", flag = "_FLOAT";
  else if (d == VKT_FLOAT64)
    type = "double", flag = "_FLOAT64";
  else if (d == VKT_INT64)
    type = "int64_t", flag = "_INT64";
  return vkt_defines_cat(buf, n, "#define ", name, " ", type, "\n#define ", name, flag, "\n", NULL);
}

void vkt_scalar_bits(vkt_dtype compute, vkt_scalar v, uint32_t out[2]) {
  double f = v.is_float ? v.f : (double)v.i;
  int64_t i = v.is_float ? (int64_t)v.f : v.i;
  out[0] = out[1] = 0;
  if (compute == VKT_FLOAT64) {
    memcpy(out, &f, 8);
  } else if (vkt_dtypes[compute].is_float) {
    float g = (float)f;
    memcpy(out, &g, 4);
  } else if (compute == VKT_INT64) {
    memcpy(out, &i, 8);
  } else {
    int32_t j = (int32_t)i;
    memcpy(out, &j, 4);
  }
}

void vkt_storage_touched(vkt_storage *s, uint64_t batch) {
  if (batch > s->last_use)
    s->last_use = batch;
}

vkt_status vkt_launch_flat(const char *shader, const char *defines, int n, const vkt_tensor *const *t, unsigned writes,
                           const void *push, uint32_t push_size, uint64_t invocations) {
  vkt_device *dev = t[0]->storage->dev;
  vkt_pipeline *pipe;
  vkt_binding b[8];
  uint32_t groups[3];
  uint64_t batch = 0;
  vkt_status st = vkt_pipeline_get(dev, shader, defines, n, push_size, &pipe);
  if (st)
    return st;
  for (int k = 0; k < n; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, (writes >> k & 1u) != 0};
  vkt_groups_for(dev, (invocations + 255) / 256, groups);
  if ((st = vkt_stream_dispatch(dev, pipe, b, n, push, push_size, groups, &batch)))
    return st;
  for (int k = 0; k < n; k++)
    vkt_storage_touched(t[k]->storage, batch);
  return VKT_OK;
}

void vkt_device_name(int d, char *buf, size_t n) {
  if (d == VKT_CPU)
    snprintf(buf, n, "cpu");
  else
    snprintf(buf, n, "vulkan:%d", d);
}

/* PyTorch's error for tensors on devices d0 and d1. */
static vkt_status two_devices(int d0, int d1) {
  char a[32], b[32];
  vkt_device_name(d0, a, sizeof a);
  vkt_device_name(d1, b, sizeof b);
  return vkt_fail(VKT_ERR_RUNTIME,
                  "Expected all tensors to be on the same device, but found at least two devices, %s and %s!", a, b);
}

vkt_status vkt_same_device(int n, const vkt_tensor *const *t, int *device) {
  int first = VKT_CPU - 1;
  for (int k = 0; k < n; k++) {
    if (!t[k])
      continue;
    int d = vkt_tensor_device(t[k]);
    if (first == VKT_CPU - 1) {
      first = d;
    } else if (d != first) {
      return two_devices(first, d);
    }
  }
  if (device)
    *device = first;
  return VKT_OK;
}

vkt_status vkt_elementwise_device(int n, const vkt_tensor *const *in, const vkt_tensor *into, int cpu_scalars,
                                  int *device) {
  int common = into ? vkt_tensor_device(into) : VKT_CPU, left = cpu_scalars;
  for (int k = 0; k < n && common == VKT_CPU; k++)
    if (in[k])
      common = vkt_tensor_device(in[k]);
  for (int k = -1; k < n; k++) { /* into first, as PyTorch's outputs come before its inputs */
    const vkt_tensor *t = k < 0 ? into : in[k];
    int d = t ? vkt_tensor_device(t) : common;
    if (k >= 0 && cpu_scalars != 0 && common != VKT_CPU && d == VKT_CPU && t->ndim == 0) {
      if (left-- == 0)
        return vkt_fail(VKT_ERR_RUNTIME, "Trying to pass too many CPU scalars to non-CPU kernel!");
    } else if (d != common) {
      return two_devices(common, d);
    }
  }
  if (device)
    *device = common;
  return VKT_OK;
}

int vkt_merge_in_out_order(int n, const vkt_tensor *const *t, int64_t *shape, int64_t *strides) {
  int order[VKT_MAX_DIMS];
  if (!vkt_tensor_stride_order(t[0], order))
    return vkt_merge_dims(n, t, shape, strides);
  vkt_tensor sorted[VKT_MAX_BOUND]; /* the operands' shapes and strides only, in that order */
  const vkt_tensor *s[VKT_MAX_BOUND];
  for (int k = 0; k < n; k++) {
    sorted[k] = (vkt_tensor){.ndim = t[k]->ndim};
    for (int d = 0; d < t[k]->ndim; d++)
      sorted[k].shape[d] = t[k]->shape[order[d]], sorted[k].strides[d] = t[k]->strides[order[d]];
    s[k] = &sorted[k];
  }
  return vkt_merge_dims(n, s, shape, strides);
}

int vkt_merge_dims(int nops, const vkt_tensor *const *t, int64_t *shape, int64_t *strides) {
  int r = 0;
  for (int i = 0; i < t[0]->ndim; i++) {
    int64_t n = t[0]->shape[i];
    if (n == 1)
      continue;
    bool merge = r > 0;
    for (int k = 0; k < nops && merge; k++)
      merge = strides[k * VKT_MAX_DIMS + r - 1] == t[k]->strides[i] * n;
    if (merge) {
      shape[r - 1] *= n;
      for (int k = 0; k < nops; k++)
        strides[k * VKT_MAX_DIMS + r - 1] = t[k]->strides[i];
      continue;
    }
    shape[r] = n;
    for (int k = 0; k < nops; k++)
      strides[k * VKT_MAX_DIMS + r] = t[k]->strides[i];
    r++;
  }
  return r;
}
