/* ops.h: operators on tensors of any device. Each picks the shader path when the device can take it
 * and the host path otherwise; the host path is also the `cpu` device's implementation. */
#ifndef VKT_OPS_H
#define VKT_OPS_H

#include "../tensor.h"

/* A Python number on its way into a tensor: floats keep a double, ints and bools an int64. */
typedef struct {
  bool is_float;
  double f;
  int64_t i;
} vkt_scalar;

void vkt_scalar_store(vkt_dtype dtype, vkt_scalar v, void *out);
vkt_scalar vkt_scalar_load(vkt_dtype dtype, const void *in);

/* dst[...] = src[...] for same-shaped views on any devices, casting between dtypes. */
vkt_status vkt_copy_(const vkt_tensor *dst, const vkt_tensor *src);
/* out is src itself (another reference) when it is contiguous, else a contiguous copy. */
vkt_status vkt_contiguous(vkt_tensor *out, const vkt_tensor *src);
vkt_status vkt_clone(vkt_tensor *out, const vkt_tensor *src); /* row-major */
/* A copy of src on device in dtype, laid out by fmt. */
vkt_status vkt_copy_as(vkt_tensor *out, const vkt_tensor *src, int device, vkt_dtype dtype, vkt_memory_format fmt);
/* out is src itself when device and dtype already match, else a copy that preserves src's layout. */
vkt_status vkt_to(vkt_tensor *out, const vkt_tensor *src, int device, vkt_dtype dtype);
/* Reads a whole view into contiguous host bytes of its own dtype. */
vkt_status vkt_read(const vkt_tensor *src, void *host);
/* Writes contiguous host bytes of t's dtype into a contiguous tensor t. */
vkt_status vkt_write(const vkt_tensor *t, const void *host);
/* Writes v into every element, converted as a cast would (no range check: internal fills and the ops that
 * PyTorch lets wrap; the ops that check call vkt_fill_check or vkt_scalar_check first). */
vkt_status vkt_fill_(const vkt_tensor *t, vkt_scalar v);
/* PyTorch's check on a number an op writes into a tensor of dtype (full, fill_, masked_fill, index_fill,
 * scatter's value, t[key] = v): "value cannot be converted to type uint8_t without overflow" where v is out
 * of the dtype's range (c10's checked_convert). Ops call it before writing, so a failed call changes nothing. */
vkt_status vkt_scalar_check(vkt_dtype dtype, vkt_scalar v);
/* The check vkt.tensor(data, dtype=) makes on each number of data: vkt_scalar_check's into an integer dtype,
 * none into a float or bool one (1e40 is float32's inf), and torch's short type name ("uint8"). */
vkt_status vkt_data_check(vkt_dtype dtype, vkt_scalar v);
/* The check fill_ and full make on a tensor of numel elements: vkt_scalar_check, but a float16 fill of one
 * element takes any number (inf past its range), as PyTorch's CPU fill of one element does; t[key] = v
 * writes v through such a 0-d tensor, so it passes 1. */
vkt_status vkt_fill_check(vkt_dtype dtype, int64_t numel, vkt_scalar v);
/* vkt_scalar_check on the value of a 0-d tensor (masked_fill's and index_fill's value, which PyTorch takes
 * as a number); it is read to the host only where its dtype holds values that dtype cannot. */
vkt_status vkt_value_check(vkt_dtype dtype, const vkt_tensor *value);

/* The random streams, xoshiro256** on the host: one per device (VKT_CPU's and each adapter's), as PyTorch has a
 * default generator per device. vkt_manual_seed seeds them all (torch.manual_seed), vkt_rng_seed one device's
 * (torch.cuda.manual_seed); vkt_rng_initial_seed is the seed it was last given. */
void vkt_manual_seed(uint64_t seed);
void vkt_rng_seed(int device, uint64_t seed);
uint64_t vkt_rng_initial_seed(int device);
/* The state of a device's stream, its seed then xoshiro256**'s four words, to save and put back
 * (vkt.get_rng_state, vkt.vulkan.get_rng_state, checkpoint's recomputation). */
#define VKT_RNG_STATE_WORDS 5
void vkt_rng_get(int device, uint64_t state[VKT_RNG_STATE_WORDS]);
void vkt_rng_set(int device, const uint64_t state[VKT_RNG_STATE_WORDS]);
/* While forbid holds, this thread's draws fail with PyTorch's vmap(randomness='error') error. */
void vkt_rng_forbid(bool forbid);
/* Uniform [0, 1) (normal: false) or standard normal values from the stream of t's device. */
vkt_status vkt_random_(const vkt_tensor *t, bool normal);
/* PyTorch's arange: its length and values for dtype (ops/copy.c says how), or its errors. */
vkt_status vkt_arange(vkt_tensor *out, int device, vkt_dtype dtype, vkt_scalar start, vkt_scalar end, vkt_scalar step);

/* Creation on the host, uploaded once (copy.c), as PyTorch's: linspace (log: logspace, base ** each),
 * eye, randint in [low, high), randperm, and tril_indices / triu_indices (upper) as a 2 x N tensor. */
vkt_status vkt_linspace(vkt_tensor *out, int device, vkt_dtype dtype, double start, double end, int64_t steps, bool log,
                        double base);
vkt_status vkt_eye(vkt_tensor *out, int device, vkt_dtype dtype, int64_t n, int64_t m);
vkt_status vkt_randint(vkt_tensor *out, int device, vkt_dtype dtype, int64_t low, int64_t high, int ndim,
                       const int64_t *shape);
vkt_status vkt_randperm(vkt_tensor *out, int device, vkt_dtype dtype, int64_t n);
vkt_status vkt_tri_indices(vkt_tensor *out, int device, vkt_dtype dtype, int64_t row, int64_t col, int64_t offset,
                           bool upper);

/* ---- elementwise ops (elementwise.c) ---- */

/* An operand: a tensor, or a Python number when t is NULL. */
typedef struct {
  const vkt_tensor *t;
  vkt_scalar s;
  bool is_bool; /* the number was True or False */
} vkt_operand;

/* PyTorch's result type: dimensioned tensors outrank 0-d tensors, which outrank Python numbers,
 * unless a lower rank brings a higher category (bool < integer < float). */
vkt_dtype vkt_result_type(int n, const vkt_operand *ops);
/* PyTorch's promote_types(a, b) between two tensors' dtypes; a negative dtype stands for none yet. */
vkt_dtype vkt_promote_types(vkt_dtype a, vkt_dtype b);
/* PyTorch's checks on the alpha (a number) of add or sub (id): it must fit the result type of a and b
 * (vkt_scalar_check; sub's negated), and be a bool only where that is bool. */
vkt_status vkt_alpha_check(int id, vkt_operand a, vkt_operand b, vkt_operand alpha);
vkt_status vkt_broadcast_shape(int n, const vkt_tensor *const *t, int *ndim, int64_t *shape);

/* x as a new tensor of a float dtype on its device, x being float and dense: the elementwise cast, so that
 * fusion holds it pending (vkt_to takes it so where fusion is on). */
vkt_status vkt_cast(const vkt_tensor *x, vkt_dtype dtype, vkt_tensor *result);
/* PyTorch's error where an in-place op's result (of ndim dims, shape) does not have the shape of into, which it
 * is written to. */
vkt_status vkt_into_shape_check(const vkt_tensor *into, int ndim, const int64_t *shape);

/* Each writes into `into` when it is given (in-place ops: it must have the broadcast shape and a
 * dtype the result can be cast to), else into a new tensor *result. id is a row of the op table. */
vkt_status vkt_unary(int id, const vkt_tensor *x, vkt_scalar p0, vkt_scalar p1, const vkt_tensor *into,
                     vkt_tensor *result);
vkt_status vkt_binary(int id, vkt_operand a, vkt_operand b, vkt_scalar alpha, const vkt_tensor *into,
                      vkt_tensor *result);
vkt_status vkt_where(const vkt_tensor *cond, vkt_operand a, vkt_operand b, vkt_tensor *result);
/* vkt_binary with the op's two scalars given (isclose's rtol and atol); a scalar operand takes p0's place. */
vkt_status vkt_binary_params(int id, vkt_operand a, vkt_operand b, vkt_scalar p0, vkt_scalar p1, const vkt_tensor *into,
                             vkt_tensor *result);

/* Composites of the elementwise ops (elementwise_more.c). Each writes into `into` when given, else a new
 * *result, as vkt_unary does. */
/* PyTorch's dtype rules for clamp with number bounds (lo or hi NULL where not given): *dtype, the result type of x
 * and the bounds (an integer x clamped to 2.5 is float, a bool x clamped to 1 int64); each bound checked in it
 * (vkt_scalar_check); NotImplementedError where it is bool; in place, an error where it is not x's dtype. */
vkt_status vkt_clamp_scalar_type(const vkt_tensor *x, const vkt_operand *lo, const vkt_operand *hi, bool inplace,
                                 vkt_dtype *dtype);
/* clamp with tensor bounds (either may be NULL, not both): minimum(maximum(x, lo), hi). */
vkt_status vkt_clamp_tensors(const vkt_tensor *x, const vkt_tensor *lo, const vkt_tensor *hi, const vkt_tensor *into,
                             vkt_tensor *result);
/* lerp(start, end, weight): weight a tensor (w.t) or a number. */
vkt_status vkt_lerp(const vkt_tensor *start, const vkt_tensor *end, vkt_operand w, const vkt_tensor *into,
                    vkt_tensor *result);
/* x + value * t1 * t2 (div: x + value * t1 / t2); value checked and converted as PyTorch's (float for float16). */
vkt_status vkt_addcmul(const vkt_tensor *x, const vkt_tensor *t1, const vkt_tensor *t2, vkt_scalar value, bool div,
                       const vkt_tensor *into, vkt_tensor *result);
vkt_status vkt_nan_to_num(const vkt_tensor *x, vkt_scalar nan, const vkt_scalar *posinf, const vkt_scalar *neginf,
                          const vkt_tensor *into, vkt_tensor *result);
vkt_status vkt_round_decimals(const vkt_tensor *x, int64_t decimals, const vkt_tensor *into, vkt_tensor *result);
/* isclose, and allclose (every element close) and equal (same shape, every element equal) into *out. */
vkt_status vkt_isclose(const vkt_tensor *a, const vkt_tensor *b, double rtol, double atol, bool equal_nan,
                       vkt_tensor *result);
vkt_status vkt_allclose(const vkt_tensor *a, const vkt_tensor *b, double rtol, double atol, bool equal_nan, bool *out);
vkt_status vkt_equal(const vkt_tensor *a, const vkt_tensor *b, bool *out);

/* Host kernels on host views. */
void vkt_cpu_copy(const vkt_tensor *dst, const vkt_tensor *src);
void vkt_cpu_fill(const vkt_tensor *t, vkt_scalar v);

/* A host view of src: src itself on the host, else the span it covers, downloaded (same strides). */
vkt_status vkt_host_view(const vkt_tensor *src, vkt_tensor *out);

/* Every time an op leaves the shader path it is counted here, by op name and reason (static strings).
 * The hook, if set, hears of each new (op, reason) pair. */
void vkt_fallback_note(const char *op, const char *reason);
void vkt_fallback_set_hook(void (*hook)(const char *op, const char *reason));
int vkt_fallback_count(void);
void vkt_fallback_get(int i, const char **op, const char **reason, uint64_t *count);
void vkt_fallback_reset(void);

/* use_deterministic_algorithms, process-wide as PyTorch's: on, the combining scatters take the sorted path
 * (shape.c), which combines in index order without atomics, so every op repeats its results bit for bit. */
void vkt_set_deterministic(bool on);
bool vkt_deterministic(void);

/* ---- optimizer steps (optim.c) ---- */

typedef enum { VKT_OPTIM_SGD, VKT_OPTIM_ADAM, VKT_OPTIM_RMSPROP, VKT_OPTIM_ADAGRAD } vkt_optim_algo;

/* flags: as shaders/optim.comp's */
#define VKT_OPTIM_MAXIMIZE 1u
#define VKT_OPTIM_NESTEROV 2u
#define VKT_OPTIM_FIRST 4u     /* SGD's first step with momentum: the buffer is set to the gradient */
#define VKT_OPTIM_DECOUPLED 8u /* AdamW's weight decay */
#define VKT_OPTIM_MOMENTUM 16u /* SGD and RMSprop keep a momentum buffer */
#define VKT_OPTIM_AMSGRAD 32u
#define VKT_OPTIM_CENTERED 64u

/* PyTorch's hyperparameters, as its optimizers name them; those an algorithm does not use are ignored. */
typedef struct {
  vkt_optim_algo algo;
  unsigned flags;
  double lr, weight_decay, momentum, dampening, beta1, beta2, eps, alpha, lr_decay;
  double step; /* the parameter's step count, this step included (Adam's bias corrections, Adagrad's decay) */
} vkt_optim_hyper;

/* One step of h's algorithm on param (any view) with grad (its shape and dtype) and the algorithm's
 * state in PyTorch's order: SGD [momentum_buffer], Adam [exp_avg, exp_avg_sq, max_exp_avg_sq],
 * RMSprop [square_avg, momentum_buffer, grad_avg], Adagrad [sum], the optional ones present only as the
 * flags say. State tensors are contiguous, of param's shape, dtype and device; all of them and param are
 * written in place (their versions bumped) by one kernel. */
vkt_status vkt_optim_step(const vkt_optim_hyper *h, const vkt_tensor *param, const vkt_tensor *grad, int nstate,
                          const vkt_tensor *const *state);

#endif
