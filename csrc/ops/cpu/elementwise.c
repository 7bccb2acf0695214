/* cpu/elementwise.c: the unary, binary and where families on strided host views, the cpu device's kernel and
 * the shaders' fallback. The operands' dims are merged, then ranges of elements go to the pool's threads, each
 * walking its range row by row: a typed loop (loops.h) per row where the op has one for these dtypes, else the
 * generic path through vkt_scalar and the op's float64/int64 math. */
#include <stdatomic.h>

#include "loops.h"
#include "math.h"
#include "threads.h"

#define MAX_OPS 4

typedef struct {
  const vkt_op *op;
  const vkt_op_args *a;
  vkt_math_loop *loop; /* NULL: the generic path */
  int nops, rank;
  const vkt_tensor *t[MAX_OPS]; /* out, then the tensor inputs */
  char *base[MAX_OPS];
  int64_t shape[VKT_MAX_DIMS];
  int64_t strides[MAX_OPS][VKT_MAX_DIMS]; /* bytes */
  union {
    double f;
    int64_t i;
  } scalar; /* param[0] in the compute type, the scalar operand of a typed loop */
  atomic_bool zero_division;
} ew_job;

/* v in the compute type, as the GPU reads scalars and inputs: float16 computes in float32 there. */
static vkt_scalar as_compute(vkt_scalar v, vkt_dtype compute) {
  if (!vkt_dtypes[compute].is_float)
    return v.is_float ? (vkt_scalar){false, 0, (int64_t)v.f} : v;
  double f = v.is_float ? v.f : (double)v.i;
  if (compute != VKT_FLOAT64)
    f = (double)(float)f;
  return (vkt_scalar){true, f, 0};
}

/* Operand k of the op (binary: x, y; where: condition, a, b) at p[], in the compute type as the GPU reads it:
 * its Python number, or its tensor's element. */
static vkt_scalar operand(const ew_job *j, char *const *p, int k) {
  const vkt_op_args *a = j->a;
  int before = vkt_scalars_before(a->scalar, k);
  if (a->scalar >> k & 1u)
    return as_compute(a->param[before], a->compute);
  int t = 1 + k - before; /* p[0] is the output */
  return as_compute(vkt_scalar_load(j->t[t]->dtype, p[t]), a->compute);
}

/* One element through vkt_scalar: mixed dtypes and where, which have no typed loop. */
static void generic_one(const ew_job *j, char *const *p) {
  const vkt_op_args *a = j->a;
  const vkt_op *op = j->op;
  bool fl = vkt_dtypes[a->compute].is_float;
  vkt_scalar r;
  if (!op->f) { /* where */
    bool c = *(const uint8_t *)p[1] != 0;
    r = operand(j, p, c ? 1 : 2);
  } else {
    bool binary = vkt_operand_count(a->nin, a->scalar) == 2;
    vkt_scalar x = operand(j, p, 0), y = binary ? operand(j, p, 1) : as_compute(a->param[0], a->compute);
    r = fl ? (vkt_scalar){true, op->f(x.f, y.f, a), 0} : (vkt_scalar){false, 0, op->i(x.i, y.i, a)};
    if (op->flags & VKT_BOOL_OUT)
      r = (vkt_scalar){false, 0, fl ? r.f != 0 : r.i != 0};
    else if (fl && a->compute != VKT_FLOAT64) /* round in the compute type, as the GPU does */
      r.f = a->compute == VKT_FLOAT16 ? (double)(_Float16)r.f : (double)(float)r.f;
  }
  vkt_scalar_store(j->a->out->dtype, r, p[0]);
}

/* n elements of one row from p[] on. */
static void row(const ew_job *j, char **p, int64_t n) {
  int last = j->rank - 1;
  if (j->loop) {
    const char *scalar = (const char *)&j->scalar;
    bool lhs = j->a->scalar == VKT_SCALAR_LHS, two = j->nops == 3;
    int64_t s[3] = {j->strides[0][last], lhs ? 0 : j->strides[1][last], two ? j->strides[2][last] : 0};
    if (lhs)
      s[2] = j->strides[1][last];
    j->loop(p[0], lhs ? scalar : p[1], lhs ? p[1] : two ? p[2] : scalar, n, s, j->a);
    return;
  }
  char *q[MAX_OPS];
  for (int k = 0; k < j->nops; k++)
    q[k] = p[k];
  for (int64_t e = 0; e < n; e++) {
    generic_one(j, q);
    for (int k = 0; k < j->nops; k++)
      q[k] += j->strides[k][last];
  }
}

/* Elements [begin, end) in row-major order of the merged shape. */
static void part(void *ctx, int64_t begin, int64_t end) {
  ew_job *j = ctx;
  int64_t index[VKT_MAX_DIMS], rest = begin;
  char *p[MAX_OPS];
  for (int k = 0; k < j->nops; k++)
    p[k] = j->base[k];
  for (int d = j->rank - 1; d >= 0; d--) {
    index[d] = rest % j->shape[d];
    rest /= j->shape[d];
    for (int k = 0; k < j->nops; k++)
      p[k] += index[d] * j->strides[k][d];
  }
  vkt_cpu_zero_division = false;
  int last = j->rank - 1;
  for (int64_t at = begin; at < end;) {
    int64_t n = j->shape[last] - index[last];
    n = n < end - at ? n : end - at;
    row(j, p, n);
    at += n;
    for (int k = 0; k < j->nops; k++)
      p[k] += n * j->strides[k][last];
    index[last] += n;
    for (int d = last; d > 0 && index[d] == j->shape[d]; d--) { /* carry into the dims above */
      for (int k = 0; k < j->nops; k++)
        p[k] += j->strides[k][d - 1] - j->shape[d] * j->strides[k][d];
      index[d] = 0;
      index[d - 1]++;
    }
  }
  if (vkt_cpu_zero_division)
    atomic_store(&j->zero_division, true);
}

vkt_status vkt_cpu_elementwise(const vkt_op *op, const vkt_op_args *a) {
  ew_job j = {.op = op, .a = a, .nops = a->nin + 1};
  int64_t count = vkt_tensor_numel(a->out), strides[MAX_OPS * VKT_MAX_DIMS];
  if (count == 0)
    return VKT_OK;
  j.t[0] = a->out;
  for (int k = 0; k < a->nin; k++)
    j.t[k + 1] = a->in[k];
  j.rank = vkt_merge_dims(j.nops, j.t, j.shape, strides);
  if (j.rank == 0) { /* one element */
    j.rank = 1, j.shape[0] = 1;
    for (int k = 0; k < j.nops; k++)
      strides[k * VKT_MAX_DIMS] = 0;
  }
  for (int k = 0; k < j.nops; k++) {
    int size = vkt_dtype_size(j.t[k]->dtype);
    j.base[k] = vkt_tensor_host(j.t[k]);
    for (int d = 0; d < j.rank; d++)
      j.strides[k][d] = strides[k * VKT_MAX_DIMS + d] * size;
  }
  if ((j.loop = vkt_math_loop_for(op, a))) {
    vkt_scalar s = as_compute(a->param[0], a->compute);
    if (s.is_float)
      j.scalar.f = s.f;
    else
      j.scalar.i = s.i;
  }
  vkt_parallel_for(count, VKT_GRAIN, part, &j);
  if (atomic_load(&j.zero_division))
    return vkt_fail(VKT_ERR_RUNTIME, "ZeroDivisionError");
  return VKT_OK;
}
