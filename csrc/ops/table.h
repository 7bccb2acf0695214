/* table.h: the op table. One row per op: its name, its shader (a file of shaders/ and the #define that
 * selects the op in it), supports() (dtypes, adapter features, binding limits), launch, and a CPU kernel
 * on strided host tensors. vkt_op_run picks the shader or the CPU fallback and counts the fallbacks. */
#ifndef VKT_TABLE_H
#define VKT_TABLE_H

#include "ops.h"

typedef enum {
  /* unary elementwise */
  VKT_OP_RELU,
  VKT_OP_GELU,
  VKT_OP_GELU_TANH,
  VKT_OP_SILU,
  VKT_OP_SIGMOID,
  VKT_OP_TANH,
  VKT_OP_LEAKY_RELU,
  VKT_OP_ELU,
  VKT_OP_SOFTPLUS,
  VKT_OP_NEG,
  VKT_OP_ABS,
  VKT_OP_EXP,
  VKT_OP_LOG,
  VKT_OP_SQRT,
  VKT_OP_RSQRT,
  VKT_OP_SIN,
  VKT_OP_COS,
  VKT_OP_SQUARE,
  VKT_OP_RECIPROCAL,
  VKT_OP_CLAMP,
  VKT_OP_SIGN,
  VKT_OP_FLOOR,
  VKT_OP_CEIL,
  VKT_OP_ROUND,
  VKT_OP_LOGICAL_NOT,
  VKT_OP_CAST,
  /* unary math, activations and tests (issue 15) */
  VKT_OP_LOG1P,
  VKT_OP_EXPM1,
  VKT_OP_LOG2,
  VKT_OP_LOG10,
  VKT_OP_EXP2,
  VKT_OP_ERF,
  VKT_OP_ERFC,
  VKT_OP_ERFINV,
  VKT_OP_TAN,
  VKT_OP_ASIN,
  VKT_OP_ACOS,
  VKT_OP_ATAN,
  VKT_OP_SINH,
  VKT_OP_COSH,
  VKT_OP_ASINH,
  VKT_OP_ACOSH,
  VKT_OP_ATANH,
  VKT_OP_TRUNC,
  VKT_OP_FRAC,
  VKT_OP_DEG2RAD,
  VKT_OP_RAD2DEG,
  VKT_OP_ISNAN,
  VKT_OP_ISINF,
  VKT_OP_ISFINITE,
  VKT_OP_ISNEGINF,
  VKT_OP_ISPOSINF,
  VKT_OP_NAN_TO_NUM,
  VKT_OP_NEGINF_TO_NUM,
  VKT_OP_ROUND_DECIMALS,
  VKT_OP_BITWISE_NOT,
  VKT_OP_HARDSIGMOID,
  VKT_OP_HARDSWISH,
  VKT_OP_MISH,
  VKT_OP_LOGSIGMOID,
  VKT_OP_SELU,
  VKT_OP_CELU,
  VKT_OP_SOFTSIGN,
  VKT_OP_TANHSHRINK,
  VKT_OP_THRESHOLD,
  /* special functions (torch.special): P0 is polygamma's n, logit's eps (-1: none) */
  VKT_OP_LGAMMA,
  VKT_OP_DIGAMMA,
  VKT_OP_POLYGAMMA,
  VKT_OP_LOGIT,
  VKT_OP_SINC,
  VKT_OP_ENTR,
  VKT_OP_NDTR,
  VKT_OP_NDTRI,
  VKT_OP_LOG_NDTR,
  VKT_OP_I0,
  VKT_OP_I0E,
  VKT_OP_I1,
  VKT_OP_I1E,
  VKT_OP_ERFCX,
  /* the argument of a real number: 0, or pi below 0 (angle) */
  VKT_OP_ANGLE,
  /* binary elementwise */
  VKT_OP_ADD,
  VKT_OP_SUB,
  VKT_OP_MUL,
  VKT_OP_DIV,
  VKT_OP_DIV_TRUNC,
  VKT_OP_DIV_FLOOR,
  VKT_OP_POW,
  VKT_OP_MAXIMUM,
  VKT_OP_MINIMUM,
  VKT_OP_REMAINDER,
  VKT_OP_EQ,
  VKT_OP_NE,
  VKT_OP_LT,
  VKT_OP_LE,
  VKT_OP_GT,
  VKT_OP_GE,
  VKT_OP_LOGICAL_AND,
  VKT_OP_LOGICAL_OR,
  /* binary math, bitwise ops and tests (issue 15) */
  VKT_OP_ATAN2,
  VKT_OP_FMOD,
  VKT_OP_HYPOT,
  VKT_OP_COPYSIGN,
  VKT_OP_LOGADDEXP,
  VKT_OP_BITWISE_AND,
  VKT_OP_BITWISE_OR,
  VKT_OP_BITWISE_XOR,
  VKT_OP_LSHIFT,
  VKT_OP_RSHIFT,
  VKT_OP_LOGICAL_XOR,
  VKT_OP_ISCLOSE,
  VKT_OP_ISCLOSE_NAN,
  VKT_OP_XLOGY,
  VKT_OP_XLOG1PY,
  /* the next float after x toward y (P1: in float16's steps); Hurwitz zeta(x, q) */
  VKT_OP_NEXTAFTER,
  VKT_OP_ZETA,
  VKT_OP_IGAMMA,
  VKT_OP_IGAMMAC,
  /* autograd's relu backward: the gradient x where the output y is positive, else 0 (one kernel) */
  VKT_OP_THRESHOLD_BACKWARD,
  /* ternary */
  VKT_OP_WHERE,
  /* reductions (reduce.c) */
  VKT_OP_SUM,
  VKT_OP_MEAN,
  VKT_OP_PROD,
  VKT_OP_AMAX,
  VKT_OP_AMIN,
  VKT_OP_ARGMAX,
  VKT_OP_ARGMIN,
  VKT_OP_VAR,
  VKT_OP_ALL,
  VKT_OP_ANY,
  VKT_OP_SOFTMAX,
  VKT_OP_LOG_SOFTMAX,
  /* logsumexp (reduce.c; its CPU kernel is cpu/logsumexp.c) */
  VKT_OP_LOGSUMEXP,
  /* scans (scan.c) */
  VKT_OP_CUMSUM,
  VKT_OP_CUMPROD,
  VKT_OP_CUMMAX,
  VKT_OP_CUMMIN,
  /* sorting and selection (sort.c): sort, topk, kthvalue, median */
  VKT_OP_SORT,
  VKT_OP_COMPACT, /* nonzero, unique: compact.c */
  VKT_OP_SEARCHSORTED,
  /* matrix products (matmul.c) */
  VKT_OP_MATMUL,
  /* indexing and layout (shape.c) */
  VKT_OP_GATHER,
  VKT_OP_INDEX_SELECT,
  VKT_OP_TRIL,
  VKT_OP_TRIU,
  VKT_OP_FLIP,
  /* advanced indexing and scatters (index.c): an index checked and wrapped, writes through an index */
  VKT_OP_INDEX_WRAP,
  VKT_OP_SCATTER,
  VKT_OP_SCATTER_ADD,
  VKT_OP_SCATTER_PROD,
  VKT_OP_SCATTER_AMAX,
  VKT_OP_SCATTER_AMIN,
  VKT_OP_IM2COL,
  VKT_OP_COL2IM,
  /* normalisation over each row's trailing elements (norm.c): forward, grad_input, grad_weight/bias partials */
  VKT_OP_LAYER_NORM,
  VKT_OP_RMS_NORM,
  VKT_OP_LAYER_NORM_BACKWARD,
  VKT_OP_RMS_NORM_BACKWARD,
  VKT_OP_LAYER_NORM_COLUMNS,
  VKT_OP_RMS_NORM_COLUMNS,
  /* classification losses (loss.c): forward over rows, backward over elements */
  VKT_OP_CROSS_ENTROPY,
  VKT_OP_NLL_LOSS,
  VKT_OP_CROSS_ENTROPY_BACKWARD,
  VKT_OP_NLL_LOSS_BACKWARD,
  /* one optimizer step over one parameter, its state updated in the same pass (optim.c) */
  VKT_OP_OPTIMIZER_STEP,
  /* linear algebra (linalg.c): the batched Jacobi SVD */
  VKT_OP_SVD,
  /* (solve.c): LU and Cholesky factorisations, triangular and LU solves */
  VKT_OP_LU,
  VKT_OP_CHOLESKY,
  VKT_OP_TRSM,
  /* (decompose.c): Householder QR, cyclic Jacobi symmetric eigendecomposition */
  VKT_OP_QR,
  VKT_OP_EIGH,
  VKT_OP_COUNT
} vkt_op_id;

#define VKT_FIRST_UNARY VKT_OP_RELU
#define VKT_FIRST_BINARY VKT_OP_ADD

/* Which of an op's operands are Python numbers instead of tensors: bit k is set when operand k is one,
 * operands counted in the op's own order (binary: x, y; where: condition, a, b, so where's a is bit 1 and
 * its b bit 2, either or both). The numbers are the op's scalars, param[0] then param[1] in operand order,
 * and in[] holds only the tensor operands. A number so becomes a push constant of the op's shader and of a
 * fused kernel (whose cache key holds these bits, never the values), where a 0-d tensor would cost an
 * allocation and a fill at every call. */
typedef unsigned vkt_scalar_operands;
enum {
  VKT_SCALAR_LHS = 1u << 0, /* binary: x */
  VKT_SCALAR_RHS = 1u << 1  /* binary: y */
};
/* The numbers among operands 0 to k - 1: operand k's index in param[] where it is a number; else k less this
 * is its index in in[]. */
static inline int vkt_scalars_before(vkt_scalar_operands scalar, int k) {
  return __builtin_popcount(scalar & ((1u << k) - 1u));
}
/* The op's operands, numbers included: 1 for a unary op, 2 for a binary one, 3 for where. */
static inline int vkt_operand_count(int nin, vkt_scalar_operands scalar) { return nin + __builtin_popcount(scalar); }

/* What a launch or CPU kernel works on. The front-end of each family allocates out and broadcasts
 * the inputs to out's shape (stride-0 views), so kernels only index. */
typedef struct {
  const vkt_tensor *out;
  const vkt_tensor *out2; /* a second output: the indices of max/min along a dim; the error word of
                             gather, scatter and index_wrap (an int32 the shader sets to 1 on a bad index) */
  const vkt_tensor *in[4];
  int nin;
  vkt_scalar_operands scalar; /* the operands that are param[] instead of tensors */
  vkt_dtype compute;          /* the dtype the math runs in */
  vkt_scalar param[2];        /* scalar's numbers first, then alpha, clamp bounds, negative_slope, ... */
  uint32_t dims;              /* reductions: bit d set when input dim d is reduced */
  int64_t iparam[2];          /* correction of var, dim of softmax, diagonal of tril, ... */
  unsigned flags;             /* family-specific: a matmul's relu epilogue, ... */
  const void *ctx;            /* family-specific parameters: im2col's vkt_window */
} vkt_op_args;

typedef struct vkt_op vkt_op;
struct vkt_op {
  const char *name;
  const char *shader; /* a file of shaders/ */
  const char *define; /* the GLSL that selects this op in it */
  bool (*supports)(const vkt_op *op, const vkt_op_args *a, const char **why);
  vkt_status (*launch)(const vkt_op *op, const vkt_op_args *a);
  vkt_status (*cpu)(const vkt_op *op, const vkt_op_args *a);
  /* The scalar math a family's CPU kernel applies per element; NULL where the op has no such form. */
  double (*f)(double x, double y, const vkt_op_args *a);
  int64_t (*i)(int64_t x, int64_t y, const vkt_op_args *a);
  unsigned flags;
  /* PyTorch's CPU kernel, as its dtype errors name it, where not "<name>_cpu" ("GeluKernelImpl"); with
   * VKT_REFUSED_RUNTIME, the whole message of the RuntimeError that refuses the dtypes instead. */
  const char *kernel;
};

/* flags */
#define VKT_FLOAT_ONLY 1u /* integer inputs compute in the default float dtype (exp, sqrt, true division, ...) */
#define VKT_BOOL_OUT 2u   /* comparisons and logical ops */
#define VKT_NO_BOOL 8u    /* PyTorch refuses bool inputs with a RuntimeError (neg, sub, relu, tanhshrink) */
/* PyTorch has no kernel for these inputs: NotImplementedError "<name>_cpu" not implemented for '<dtype>' (or the
 * row's kernel named) */
#define VKT_INTEGRAL_IN 16u /* floats refused (bitwise ops) */
#define VKT_FLOAT_IN 32u    /* integers and bool refused (frac, hypot, hardsigmoid, gelu, ...) */
#define VKT_NOT_BOOL 64u    /* bool refused (trunc, fmod, shifts, threshold) */
/* The Python bindings take a tensor only as the second operand (maximum, atan2, logical_and, ...) */
#define VKT_TENSOR_OTHER 128u
#define VKT_NOT_HALF 256u        /* float16 refused (special.ndtri, special.log_ndtr) */
#define VKT_REFUSED_RUNTIME 512u /* the refusal is a RuntimeError whose message is the row's kernel (argmax of bool) */

extern const vkt_op vkt_ops[VKT_OP_COUNT];

/* PyTorch's refusal of dtype d by op, where op's flags (VKT_INTEGRAL_IN, VKT_FLOAT_IN, VKT_NOT_BOOL, VKT_NOT_HALF) say
 * its kernel has no loop for d: NotImplementedError "<kernel>" not implemented for '<dtype>', or op->kernel's
 * RuntimeError (VKT_REFUSED_RUNTIME). VKT_OK where d is taken. */
vkt_status vkt_op_check_dtype(const vkt_op *op, vkt_dtype d);
/* The same refusal for the ops of a row that has several (sort's topk, kthvalue, median): flags and kernel as an
 * op's, kernel the full name ("kthvalue_cpu"). */
vkt_status vkt_dtype_refusal(unsigned flags, const char *kernel, vkt_dtype d);

/* Runs op on a's tensors, all on one device: the shader when supports() agrees, else the CPU kernel
 * on host copies (a counted fallback). */
vkt_status vkt_op_run(vkt_op_id id, const vkt_op_args *a);

/* Shared by the shader launches: whether a tensor's storage fits one binding and its dtype can be
 * stored by the adapter, and the #define lines naming a dtype's storage and compute types. */
bool vkt_dtype_storable(const vkt_adapter_props *p, vkt_dtype d, const char **why);
bool vkt_bindable(const vkt_tensor *t, const char **why);
/* Both for each of n operands, and whether the adapter computes in `compute`. */
bool vkt_operands_fit(const vkt_adapter_props *p, vkt_dtype compute, int n, const vkt_tensor *const *t,
                      const char **why);
/* "#define name <d's storage type>", or for name "C" (an op's compute type) or "A" (a reduction's, reduce.glsl)
 * the GLSL type d computes in and the flag name_FLOAT, name_FLOAT64, name_INT or name_INT64. */
int vkt_type_defines(char *buf, size_t n, const char *name, vkt_dtype d);
/* The strings up to a NULL, one after another, into buf (n bytes, NUL-terminated, cut where full); returns
 * their whole length, as snprintf does. For the #defines made at every launch, without printf: glibc's takes
 * its slow positional path in a process where a library has registered a conversion (one that NumPy loads
 * has), about 1,400 instructions for "#define %s %s\n". */
int vkt_defines_cat(char *buf, size_t n, ...);
const char *vkt_storage_type(vkt_dtype d); /* GLSL's name of a dtype's storage type */
/* A scalar as the bits of the compute type, as the shaders' decode() reads them. */
void vkt_scalar_bits(vkt_dtype compute, vkt_scalar v, uint32_t out[2]);
/* The #define of `name(v)`, which converts an op's value (of the compute type, or bool when bool_value) to
 * the GLSL storage type `type` of dtype out as the CPU does. */
int vkt_store_define(char *buf, size_t n, const char *name, const char *type, bool bool_value, vkt_dtype compute,
                     vkt_dtype out);
void vkt_storage_touched(vkt_storage *s, uint64_t batch);
/* Records shaders/<shader> (with its #define lines) over n tensors bound whole in order, t[k] written where
 * bit k of writes is set, as one invocation per element in workgroups of 256 spread over x and y. */
vkt_status vkt_launch_flat(const char *shader, const char *defines, int n, const vkt_tensor *const *t, unsigned writes,
                           const void *push, uint32_t push_size, uint64_t invocations);

/* A device's name as PyTorch's messages print it: "cpu", "vulkan:0". */
void vkt_device_name(int device, char *buf, size_t n);
/* The device every non-NULL tensor of t is on (in *device, if given), or PyTorch's error naming two. */
vkt_status vkt_same_device(int n, const vkt_tensor *const *t, int *device);
/* PyTorch's TensorIterator rule, the elementwise ops': their device is the first that is not the cpu among into (an
 * in-place op's output, or NULL) and the inputs (NULL: numbers), and each tensor must be on it, except that a 0-d cpu
 * input may join a Vulkan device's op: cpu_scalars of them at most (0: none, as clamp's three inputs; -1: any
 * number, as where moves them). */
vkt_status vkt_elementwise_device(int n, const vkt_tensor *const *in, const vkt_tensor *into, int cpu_scalars,
                                  int *device);

/* A layout whose merged innermost dim has VKT_ROWS_MIN elements or more runs that dim along x, VKT_ROWS_RUN
 * elements a workgroup (4 an invocation), and its rows along y and z: elementwise.glsl's and copy.comp's ROWS. */
#define VKT_ROWS_MIN 512
#define VKT_ROWS_RUN 1024

/* Merges dimensions that are contiguous in every one of nops views and drops size-1 ones; returns the
 * rank, with shape and strides[k * VKT_MAX_DIMS + d] (elements) filled. */
int vkt_merge_dims(int nops, const vkt_tensor *const *t, int64_t *shape, int64_t *strides);
/* The same over the dims taken in the order of t[0]'s strides, so that a shader's invocations walk t[0]
 * in memory order, and a transposed output with transposed operands merges as dense ones do (H100, relu
 * of a transpose: 1.70 ms walking it row by row, against 0.18 dense). At most VKT_MAX_BOUND operands. */
#define VKT_MAX_BOUND 8
int vkt_merge_in_out_order(int n, const vkt_tensor *const *t, int64_t *shape, int64_t *strides);

/* Family kernels, referenced by the table rows. Each family's file defines its own. */
bool vkt_elementwise_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_elementwise_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_elementwise(const vkt_op *op, const vkt_op_args *a);
bool vkt_reduce_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_reduce_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_reduce(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_logsumexp(const vkt_op *op, const vkt_op_args *a);
bool vkt_scan_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_scan_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_scan(const vkt_op *op, const vkt_op_args *a);
bool vkt_sort_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_sort_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_sort(const vkt_op *op, const vkt_op_args *a);
bool vkt_compact_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_compact_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_compact(const vkt_op *op, const vkt_op_args *a);
bool vkt_search_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_search_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_search(const vkt_op *op, const vkt_op_args *a);
bool vkt_im2col_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_im2col_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_im2col(const vkt_op *op, const vkt_op_args *a);
bool vkt_matmul_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
/* A fused epilogue (fuse.c): a pending product mm (VKT_OP_MATMUL's args, no bias, alpha 1) whose kernel
 * stores an elementwise expression over it instead of the product. The kernel binds the nout results
 * (dense, mm->out's shape), the nread tensors read (mm->out's shape, strided), mm->out itself where keep
 * says the product is kept, then a and b. */
typedef struct {
  const vkt_op_args *mm;
  const vkt_tensor *const *out, *const *read;
  int nout, nread, nops; /* nops: the expression's ops */
  bool keep;
  const uint32_t *params; /* the expression's scalars, two words each */
  int nparams;
} vkt_matmul_epilogue;

/* Whether a product with these args can be pending: its tile's shader takes an epilogue. */
bool vkt_matmul_defers(const vkt_op_args *mm);
/* What the shader and #defines of a product's kernel depend on (matmul.c fills it, padding-free, so its
 * bytes can key a cache): equal variants, equal kernels. */
typedef struct {
  const void *tile;                          /* matmul.c's mm_tile */
  uint32_t local_size;                       /* invocations of the cooperative-matrix-2 shader */
  uint16_t flags;                            /* matmul.c's MMV_ bits */
  uint8_t dtype[4];                          /* out, a, b, bias: n of them */
  uint8_t n, acc;                            /* operands bound (without an epilogue), the accumulator's dtype */
  uint8_t nout, nread, a_binding, b_binding; /* an epilogue's */
} vkt_matmul_variant;
static_assert(sizeof(vkt_matmul_variant) == 24, "vkt_matmul_variant has no padding");
/* The shader of e's tile and its variant, cheaply (no #defines are made); false where the kernel would not
 * fit the adapter (push constants, bindings). */
bool vkt_matmul_epilogue_shader(const vkt_matmul_epilogue *e, const char **shader, vkt_matmul_variant *v,
                                uint32_t *push_size);
/* The #defines of variant v (an epilogue's before the expression's, which EPILOGUE asks for) into defines;
 * returns their length. */
int vkt_matmul_defines(const vkt_matmul_variant *v, char *defines, size_t size);
/* The buffers a kernel of variant v binds after its operands (a split product's two), counted among its bindings. */
int vkt_matmul_extra_bindings(const vkt_matmul_variant *v);
/* Records e's kernel, compiled from vkt_matmul_epilogue_shader's shader and vkt_matmul_defines'. */
vkt_status vkt_matmul_epilogue_launch(const vkt_matmul_epilogue *e, vkt_pipeline *pipe);

vkt_status vkt_matmul_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_matmul(const vkt_op *op, const vkt_op_args *a);
bool vkt_shape_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_shape_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_shape(const vkt_op *op, const vkt_op_args *a);
bool vkt_norm_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_norm_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_norm(const vkt_op *op, const vkt_op_args *a);
bool vkt_loss_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_loss_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_loss(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_loss_backward(const vkt_op *op, const vkt_op_args *a);
bool vkt_svd_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_svd_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_svd(const vkt_op *op, const vkt_op_args *a);
bool vkt_solve_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_solve_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_solve(const vkt_op *op, const vkt_op_args *a);
bool vkt_decompose_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_decompose_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_decompose(const vkt_op *op, const vkt_op_args *a);
/* The optimizer step's args: base first, so its launch and CPU kernel take &args.base as a vkt_op_args
 * and cast it back. base.out is the (contiguous) parameter, base.in[0] its gradient. */
typedef struct {
  vkt_op_args base;
  const vkt_optim_hyper *hyper;
  int nstate;
  const vkt_tensor *state[3]; /* contiguous, the parameter's shape and dtype */
} vkt_optim_args;
bool vkt_optim_supports(const vkt_op *op, const vkt_op_args *a, const char **why);
vkt_status vkt_optim_launch(const vkt_op *op, const vkt_op_args *a);
vkt_status vkt_cpu_optim(const vkt_op *op, const vkt_op_args *a);
/* Each algorithm's per-element step constants (the push constants h[] of shaders/optim.comp), in the
 * compute type's precision; from the hyperparameters and the step count. */
void vkt_optim_constants(const vkt_optim_hyper *h, double c[8]);

#endif
