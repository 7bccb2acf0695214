/* search.c: searchsorted and bucketize: PyTorch's checks, the common dtype of sequence and values, and
 * search.comp's launch (an invocation a value, over contiguous operands). The CPU kernel is cpu/search.c. */
#include <stdio.h>
#include <string.h>

#include "reduce.h"
#include "scan.h"

static vkt_status check(const vkt_tensor *seq, const vkt_tensor *values, const vkt_tensor *sorter) {
  char a[256], b[256];
  if (seq->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "torch.searchsorted(): boundaries tensor should have positive dimension, but got "
                                     "0 dimension");
  if (seq->ndim > 1 && (values->ndim != seq->ndim ||
                        memcmp(seq->shape, values->shape, sizeof *seq->shape * (size_t)(seq->ndim - 1)) != 0)) {
    vkt_shape_str(seq->ndim, seq->shape, a, sizeof a);
    vkt_shape_str(values->ndim, values->shape, b, sizeof b);
    return vkt_fail(VKT_ERR_RUNTIME,
                    "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                    "boundaries tensor and input value tensor must match, but we got boundaries tensor %s and input "
                    "value tensor %s",
                    a, b);
  }
  if (!sorter)
    return VKT_OK;
  if (sorter->dtype != VKT_INT64)
    return vkt_fail(VKT_ERR_RUNTIME, "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype %s",
                    vkt_dtypes[sorter->dtype].torch_name);
  if (sorter->ndim != seq->ndim || memcmp(sorter->shape, seq->shape, sizeof *seq->shape * (size_t)seq->ndim) != 0) {
    vkt_shape_str(seq->ndim, seq->shape, a, sizeof a);
    vkt_shape_str(sorter->ndim, sorter->shape, b, sizeof b);
    return vkt_fail(VKT_ERR_RUNTIME,
                    "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor %sand "
                    "got sorter tensor %s",
                    a, b);
  }
  return VKT_OK;
}

/* x in dtype d, contiguous (x itself where it already is). */
static vkt_status dense_as(const vkt_tensor *x, int device, vkt_dtype d, vkt_tensor *out) {
  vkt_tensor cast = {0};
  vkt_status st = vkt_to(&cast, x, device, d);
  if (!st)
    st = vkt_contiguous(out, &cast);
  vkt_tensor_release(&cast);
  return st;
}

vkt_status vkt_searchsorted(const vkt_tensor *seq, const vkt_tensor *values, bool right, const vkt_tensor *sorter,
                            bool out_int32, vkt_tensor *out) {
  vkt_tensor s = {0}, v = {0}, o = {0};
  int device;
  vkt_status st;
  if ((st = check(seq, values, sorter)) ||
      (st = vkt_same_device(3, (const vkt_tensor *[]){seq, values, sorter}, &device)))
    return st;
  vkt_operand ops[2] = {{.t = seq}, {.t = values}};
  vkt_dtype common = vkt_result_type(2, ops);
  if (common == VKT_BOOL) /* PyTorch has no kernel for it */
    return vkt_fail(VKT_ERR_RUNTIME, "\"searchsorted\" not implemented for 'Bool'");
  *out = (vkt_tensor){0};
  /* both in the common dtype, contiguous; the sorter too */
  if ((st = dense_as(seq, device, common, &s)) || (st = dense_as(values, device, common, &v)) ||
      (sorter && (st = vkt_contiguous(&o, sorter))))
    goto finish;
  if ((st = vkt_tensor_empty(out, device, out_int32 ? VKT_INT32 : VKT_INT64, values->ndim, values->shape)))
    goto finish;
  vkt_op_args args = {.out = out,
                      .in = {&s, &v, sorter ? &o : NULL},
                      .nin = sorter ? 3 : 2,
                      .compute = vkt_natural_compute(common),
                      .flags = right ? VKT_SEARCH_RIGHT : 0};
  if (vkt_tensor_numel(out) > 0 && (st = vkt_op_run(VKT_OP_SEARCHSORTED, &args)))
    vkt_tensor_release(out);
finish:
  vkt_tensor_release(&s);
  vkt_tensor_release(&v);
  vkt_tensor_release(&o);
  return st;
}

/* ---- the shader path ---- */

typedef struct {
  uint32_t n, slen, vlast, rows, out_offset, seq_offset, val_offset, sorter_offset; /* elements */
} search_push;

/* The layout both paths share: entries a row of the sequence, its rows, values a row. */
void vkt_search_layout(const vkt_op_args *a, int64_t *slen, int64_t *rows, int64_t *vlast) {
  const vkt_tensor *seq = a->in[0], *val = a->in[1];
  *slen = seq->shape[seq->ndim - 1];
  *rows = vkt_tensor_numel(seq) / (*slen ? *slen : 1);
  *vlast = val->ndim ? val->shape[val->ndim - 1] : 1;
}

bool vkt_search_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op;
  const vkt_tensor *t[4] = {a->out, a->in[0], a->in[1], a->in[2]};
  if (!vkt_operands_fit(vkt_device_props(a->out->storage->dev), a->compute, a->nin + 1, t, why))
    return false;
  *why = "more than 2^32 elements";
  return vkt_tensor_numel(a->in[0]) <= UINT32_MAX && vkt_tensor_numel(a->out) <= UINT32_MAX - 256;
}

vkt_status vkt_search_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[4] = {a->out, a->in[0], a->in[1], a->in[2]};
  int n = a->nin + 1;
  int64_t slen, rows, vlast;
  vkt_search_layout(a, &slen, &rows, &vlast);
  search_push push = {(uint32_t)vkt_tensor_numel(a->out),
                      (uint32_t)slen,
                      (uint32_t)vlast,
                      (uint32_t)rows,
                      (uint32_t)a->out->offset,
                      (uint32_t)a->in[0]->offset,
                      (uint32_t)a->in[1]->offset,
                      a->in[2] ? (uint32_t)a->in[2]->offset : 0};
  char defines[1024];
  int len = vkt_type_defines(defines, sizeof defines, "TI", a->in[0]->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "C", a->compute);
  len += vkt_conversion_defines(defines + len, sizeof defines - (size_t)len, "C", a->in[0]->dtype, a->compute,
                                a->compute);
  snprintf(defines + len, sizeof defines - (size_t)len, "#define OT %s\n%s%s",
           a->out->dtype == VKT_INT32 ? "int" : "int64_t", a->flags & VKT_SEARCH_RIGHT ? "#define RIGHT\n" : "",
           a->in[2] ? "#define SORTER\n" : "");
  return vkt_launch_flat(op->shader, defines, n, t, 1u, &push, sizeof push, push.n);
}
