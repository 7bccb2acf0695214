/* optim.c: the fused optimizer step (SGD, Adam/AdamW, RMSprop, Adagrad): checks, the per-step constants
 * from PyTorch's hyperparameters, and the launch of shaders/optim.comp, one dispatch per parameter that
 * reads and writes every operand once. Its CPU kernel is cpu/optim.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "table.h"

#define OPTIM_MAX_OPS 5 /* param, grad, three state tensors */

/* The state tensors each algorithm keeps with these flags. */
static int state_count(const vkt_optim_hyper *h) {
  bool mom = (h->flags & VKT_OPTIM_MOMENTUM) != 0;
  switch (h->algo) {
  case VKT_OPTIM_SGD: return mom;
  case VKT_OPTIM_ADAM: return 2 + ((h->flags & VKT_OPTIM_AMSGRAD) != 0);
  case VKT_OPTIM_RMSPROP: return 1 + mom + ((h->flags & VKT_OPTIM_CENTERED) != 0);
  default: return 1;
  }
}

void vkt_optim_constants(const vkt_optim_hyper *h, double c[8]) {
  memset(c, 0, 8 * sizeof *c);
  c[1] = h->weight_decay;
  switch (h->algo) {
  case VKT_OPTIM_SGD: c[0] = h->lr, c[2] = h->momentum, c[3] = 1 - h->dampening; break;
  case VKT_OPTIM_ADAM: /* as PyTorch's single-tensor Adam computes them on the host, in double */
    c[0] = h->lr / (1 - pow(h->beta1, h->step)), c[2] = 1 - h->lr * h->weight_decay;
    c[3] = 1 - h->beta1, c[4] = h->beta2, c[5] = 1 - h->beta2;
    c[6] = sqrt(1 - pow(h->beta2, h->step)), c[7] = h->eps;
    break;
  case VKT_OPTIM_RMSPROP: c[0] = h->lr, c[2] = h->alpha, c[3] = 1 - h->alpha, c[4] = h->eps, c[5] = h->momentum; break;
  case VKT_OPTIM_ADAGRAD: c[0] = h->lr / (1 + (h->step - 1) * h->lr_decay), c[2] = h->eps; break;
  }
}

/* ---- the shader path ---- */

typedef struct {
  uint32_t n, flags, offset[6]; /* elements; offsets in vectors of the launch's width */
  uint32_t h[8][2];             /* bits of the compute type */
} optim_push;
static_assert(sizeof(optim_push) == 96, "optim_push must match shaders/optim.comp");

static int operands(const vkt_optim_args *o, const vkt_tensor **t) {
  t[0] = o->base.out, t[1] = o->base.in[0];
  for (int k = 0; k < o->nstate; k++)
    t[k + 2] = o->state[k];
  return o->nstate + 2;
}

bool vkt_optim_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op;
  const vkt_optim_args *o = (const vkt_optim_args *)a;
  const vkt_tensor *t[OPTIM_MAX_OPS];
  int n = operands(o, t);
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  if (!vkt_operands_fit(p, a->compute, n, t, why))
    return false;
  *why = "more than 2^32 elements";
  return vkt_tensor_numel(a->out) <= UINT32_MAX;
}

/* Vectors of 4 where every operand starts on one (allocations are 256-byte aligned, so a parameter of its
 * own storage does). */
static int vector_width(int n, const vkt_tensor **t) {
  for (int k = 0; k < n; k++)
    if (t[k]->offset % 4 != 0)
      return 1;
  return 4;
}

static void defines(const vkt_optim_args *o, int width, char *buf, size_t size) {
  static const char *const algo[] = {"SGD", "ADAM", "RMSPROP", "ADAGRAD"};
  static const char *const scalar[VKT_DTYPE_COUNT] = {
      [VKT_FLOAT32] = "float", [VKT_FLOAT64] = "double", [VKT_FLOAT16] = "float16_t"};
  static const char *const vector[VKT_DTYPE_COUNT] = {
      [VKT_FLOAT32] = "vec4", [VKT_FLOAT64] = "dvec4", [VKT_FLOAT16] = "f16vec4"};
  const vkt_optim_hyper *h = o->hyper;
  vkt_dtype d = o->base.out->dtype;
  bool f64 = d == VKT_FLOAT64;
  static const char *const digit[] = {"0", "1", "2", "3", "4"}; /* VW and NSTATE */
  vkt_defines_cat(buf, size, "#define T ", width == 4 ? vector[d] : scalar[d], "\n#define TS ", scalar[d],
                  "\n#define CV ", width == 4 ? (f64 ? "dvec4" : "vec4") : (f64 ? "double" : "float"), "\n#define CS ",
                  f64 ? "double" : "float", "\n", f64 ? "#define C_FLOAT64\n" : "", "#define VW ", digit[width],
                  "\n#define NSTATE ", digit[o->nstate], "\n#define ", algo[h->algo], "\n",
                  h->flags & VKT_OPTIM_MOMENTUM ? "#define MOMENTUM\n" : "",
                  h->flags & VKT_OPTIM_AMSGRAD ? "#define AMSGRAD\n" : "",
                  h->flags & VKT_OPTIM_CENTERED ? "#define CENTERED\n" : "", NULL);
}

static void push_constants(const vkt_optim_args *o, int n, const vkt_tensor **t, int width, optim_push *push) {
  double c[8];
  *push = (optim_push){.n = (uint32_t)vkt_tensor_numel(o->base.out), .flags = o->hyper->flags};
  for (int k = 0; k < n; k++)
    push->offset[k] = (uint32_t)(t[k]->offset / width);
  vkt_optim_constants(o->hyper, c);
  for (int k = 0; k < 8; k++) {
    if (o->base.out->dtype == VKT_FLOAT64) {
      memcpy(push->h[k], &c[k], 8);
    } else {
      float f = (float)c[k];
      memcpy(push->h[k], &f, 4);
    }
  }
}

vkt_status vkt_optim_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_optim_args *o = (const vkt_optim_args *)a;
  const vkt_tensor *t[OPTIM_MAX_OPS];
  int n = operands(o, t), width = vector_width(n, t);
  char defs[512];
  optim_push push;
  defines(o, width, defs, sizeof defs);
  push_constants(o, n, t, width, &push);
  unsigned writes = 1u | (((1u << o->nstate) - 1) << 2); /* the parameter and every state tensor */
  return vkt_launch_flat(op->shader, defs, n, t, writes, &push, sizeof push, (push.n + width - 1) / width);
}

/* ---- the front-end ---- */

static vkt_status check(const vkt_optim_hyper *h, const vkt_tensor *param, const vkt_tensor *grad, int nstate,
                        const vkt_tensor *const *state) {
  char a[256], b[256];
  if (!vkt_dtypes[param->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "optimizer step: parameters must be floating point, got %s",
                    vkt_dtypes[param->dtype].name);
  if (nstate != state_count(h))
    return vkt_fail(VKT_ERR_RUNTIME, "optimizer step: expected %d state tensors, got %d", state_count(h), nstate);
  const vkt_tensor *t[OPTIM_MAX_OPS] = {param, grad};
  for (int k = 0; k < nstate; k++)
    t[k + 2] = state[k];
  vkt_status st = vkt_same_device(nstate + 2, t, NULL);
  for (int k = 1; k < nstate + 2 && !st; k++) {
    if (t[k]->dtype != param->dtype || t[k]->ndim != param->ndim ||
        memcmp(t[k]->shape, param->shape, sizeof *param->shape * (size_t)param->ndim) != 0) {
      vkt_shape_str(param->ndim, param->shape, a, sizeof a);
      vkt_shape_str(t[k]->ndim, t[k]->shape, b, sizeof b);
      st = vkt_fail(
          VKT_ERR_RUNTIME, "optimizer step: %s of shape %s and dtype %s for a parameter of shape %s and dtype %s",
          k == 1 ? "a gradient" : "a state tensor", b, vkt_dtypes[t[k]->dtype].name, a, vkt_dtypes[param->dtype].name);
    } else if (k > 1 && !vkt_tensor_is_contiguous(t[k])) {
      st = vkt_fail(VKT_ERR_RUNTIME, "optimizer step: state tensors must be contiguous");
    }
  }
  return st;
}

/* The CPU kernel on host copies of every operand, the written ones copied back: counted, as vkt_op_run's. */
static vkt_status fallback(const vkt_optim_args *o, const char *why) {
  vkt_optim_args h = *o;
  vkt_tensor host[OPTIM_MAX_OPS] = {0};
  const vkt_tensor *t[OPTIM_MAX_OPS];
  int n = operands(o, t);
  vkt_status st = VKT_OK;
  vkt_fallback_note(vkt_ops[VKT_OP_OPTIMIZER_STEP].name, why);
  for (int k = 0; k < n && !st; k++)
    st = vkt_host_view(t[k], &host[k]);
  h.base.out = &host[0], h.base.in[0] = &host[1];
  for (int k = 0; k < o->nstate; k++)
    h.state[k] = &host[k + 2];
  if (!st)
    st = vkt_cpu_optim(&vkt_ops[VKT_OP_OPTIMIZER_STEP], &h.base);
  for (int k = 0; k < n && !st; k++)
    if (k != 1)
      st = vkt_copy_(t[k], &host[k]);
  for (int k = 0; k < n; k++)
    vkt_tensor_release(&host[k]);
  return st;
}

/* One step on a contiguous parameter: the shader, or the counted fallback where the adapter cannot take it. */
static vkt_status run(const vkt_optim_args *o) {
  const vkt_op *op = &vkt_ops[VKT_OP_OPTIMIZER_STEP];
  const char *why = "no shader";
  if (vkt_tensor_device(o->base.out) != VKT_CPU && !op->supports(op, &o->base, &why))
    return fallback(o, why);
  for (int k = 0; k < o->nstate; k++)
    o->state[k]->storage->version++;
  return vkt_op_run(VKT_OP_OPTIMIZER_STEP, &o->base);
}

vkt_status vkt_optim_step(const vkt_optim_hyper *h, const vkt_tensor *param, const vkt_tensor *grad, int nstate,
                          const vkt_tensor *const *state) {
  vkt_tensor g = {0}, p = {0};
  vkt_status st = check(h, param, grad, nstate, state);
  if (st || vkt_tensor_numel(param) == 0)
    return st;
  bool contiguous = vkt_tensor_is_contiguous(param);
  if ((st = vkt_contiguous(&g, grad)) || (st = contiguous ? VKT_OK : vkt_clone(&p, param)))
    goto finish;
  vkt_optim_args o = {.base = {.out = contiguous ? param : &p,
                               .in = {&g},
                               .nin = 1,
                               .compute = param->dtype == VKT_FLOAT64 ? VKT_FLOAT64 : VKT_FLOAT32},
                      .hyper = h,
                      .nstate = nstate};
  memcpy(o.state, state, sizeof *state * (size_t)nstate);
  if (!(st = run(&o)) && !contiguous) /* a strided view steps on a contiguous copy, written back */
    st = vkt_copy_(param, &p);
finish:
  vkt_tensor_release(&g);
  vkt_tensor_release(&p);
  return st;
}
