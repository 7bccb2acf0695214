/* cpu/norm.c: the host kernels of layer_norm and rms_norm (norm.comp's three ops) on the dense tensors the
 * front-end makes, computed in double whatever the storage dtype: a row is copied out once, normalized in
 * two passes over the copy (the mean, then the squared deviations), and rows are spread over the pool. */
#include <math.h>
#include <stdlib.h>

#include "../table.h"
#include "floats.h"
#include "threads.h"

typedef struct {
  const vkt_op_args *a;
  bool rms;
  int64_t n; /* elements a row */
  bool failed;
} norm_job;

/* Row r of x into buf: mean and rstd as the forward computes them. */
static void row_stats(const norm_job *j, const vkt_tensor *x, int64_t r, double *buf, double *mean, double *rstd) {
  double s = 0, q = 0;
  for (int64_t c = 0; c < j->n; c++)
    s += buf[c] = vkt_float_load(x, r * j->n + c);
  *mean = j->rms ? 0 : s / (double)j->n;
  for (int64_t c = 0; c < j->n; c++)
    q += (buf[c] - *mean) * (buf[c] - *mean);
  *rstd = 1 / sqrt(q / (double)j->n + j->a->param[0].f);
}

static void forward_rows(void *ctx, int64_t begin, int64_t end) {
  norm_job *j = ctx;
  const vkt_op_args *a = j->a;
  double *buf = malloc(sizeof *buf * (size_t)j->n), mean, rstd;
  if (!buf) {
    j->failed = true;
    return;
  }
  for (int64_t r = begin; r < end; r++) {
    row_stats(j, a->in[0], r, buf, &mean, &rstd);
    for (int64_t c = 0; c < j->n; c++) {
      double v = (buf[c] - mean) * rstd * (a->in[1] ? vkt_float_load(a->in[1], c) : 1);
      vkt_float_store(a->out, r * j->n + c, a->in[2] ? v + vkt_float_load(a->in[2], c) : v);
    }
    vkt_float_store(a->out2, 2 * r, mean);
    vkt_float_store(a->out2, 2 * r + 1, rstd);
  }
  free(buf);
}

/* grad_x = rstd (gw - mean(gw) - xhat mean(gw xhat)), with xhat = (x - mean) rstd and gw = g w. */
static void backward_rows(void *ctx, int64_t begin, int64_t end) {
  norm_job *j = ctx;
  const vkt_op_args *a = j->a;
  for (int64_t r = begin; r < end; r++) {
    double mean = vkt_float_load(a->in[2], 2 * r), rstd = vkt_float_load(a->in[2], 2 * r + 1), s = 0, sx = 0;
    for (int64_t c = 0; c < j->n; c++) {
      double gw = vkt_float_load(a->in[0], r * j->n + c) * (a->in[3] ? vkt_float_load(a->in[3], c) : 1);
      s += gw;
      sx += gw * (vkt_float_load(a->in[1], r * j->n + c) - mean) * rstd;
    }
    s = j->rms ? 0 : s / (double)j->n, sx /= (double)j->n;
    for (int64_t c = 0; c < j->n; c++) {
      double gw = vkt_float_load(a->in[0], r * j->n + c) * (a->in[3] ? vkt_float_load(a->in[3], c) : 1);
      double xh = (vkt_float_load(a->in[1], r * j->n + c) - mean) * rstd;
      vkt_float_store(a->out, r * j->n + c, rstd * (gw - s - xh * sx));
    }
  }
}

/* Columns [begin, end) of out [k, blocks, n]: each block's sums of g xhat and (k == 2) of g, row by row so
 * that the reads run along memory. */
static void column_sums(void *ctx, int64_t begin, int64_t end) {
  norm_job *j = ctx;
  const vkt_op_args *a = j->a;
  int64_t blocks = a->out->shape[1], block_rows = a->iparam[1], rows = vkt_tensor_numel(a->in[0]) / j->n;
  double *dw = calloc(2 * (size_t)(end - begin), sizeof *dw), *db = dw + (end - begin);
  if (!dw) {
    j->failed = true;
    return;
  }
  for (int64_t b = 0; b < blocks; b++) {
    for (int64_t r = b * block_rows; r < rows && r < (b + 1) * block_rows; r++) {
      double mean = vkt_float_load(a->in[2], 2 * r), rstd = vkt_float_load(a->in[2], 2 * r + 1);
      for (int64_t c = begin; c < end; c++) {
        double g = vkt_float_load(a->in[0], r * j->n + c);
        dw[c - begin] += g * (vkt_float_load(a->in[1], r * j->n + c) - mean) * rstd;
        db[c - begin] += g;
      }
    }
    for (int64_t c = begin; c < end; c++) {
      vkt_float_store(a->out, b * j->n + c, dw[c - begin]);
      if (!j->rms)
        vkt_float_store(a->out, (blocks + b) * j->n + c, db[c - begin]);
      dw[c - begin] = db[c - begin] = 0;
    }
  }
  free(dw);
}

vkt_status vkt_cpu_norm(const vkt_op *op, const vkt_op_args *a) {
  int id = (int)(op - vkt_ops);
  norm_job j = {a, id == VKT_OP_RMS_NORM || id == VKT_OP_RMS_NORM_BACKWARD || id == VKT_OP_RMS_NORM_COLUMNS,
                a->iparam[0], false};
  int64_t rows = vkt_tensor_numel(a->in[0]) / j.n, grain = VKT_GRAIN / j.n + 1;
  if (id == VKT_OP_LAYER_NORM || id == VKT_OP_RMS_NORM)
    vkt_parallel_for(rows, grain, forward_rows, &j);
  else if (id == VKT_OP_LAYER_NORM_BACKWARD || id == VKT_OP_RMS_NORM_BACKWARD)
    vkt_parallel_for(rows, grain, backward_rows, &j);
  else
    vkt_parallel_for(j.n, VKT_GRAIN / (rows + 1) + 1, column_sums, &j);
  return j.failed ? vkt_fail(VKT_ERR_NOMEM, "%s: out of host memory for a row", op->name) : VKT_OK;
}
