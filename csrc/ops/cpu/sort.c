/* cpu/sort.c: sort (and topk, kthvalue: the first entries of a sorted row) on strided host views, a
 * row at a time with qsort on (value, position): the order sort.comp's network makes, stable. The cpu
 * device's kernel and the shader's reference. */
#include <math.h>
#include <stdlib.h>

#include "../reduce.h"
#include "../scan.h"

typedef struct {
  vkt_scalar v; /* the compute type: a double for floats, an int64 otherwise */
  int64_t at;   /* position in the row */
} entry;

static int ascending(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  if (a->v.is_float) {
    bool na = isnan(a->v.f), nb = isnan(b->v.f);
    if (na != nb)
      return na ? 1 : -1; /* NaN last */
    if (!na && a->v.f != b->v.f)
      return a->v.f < b->v.f ? -1 : 1;
  } else if (a->v.i != b->v.i) {
    return a->v.i < b->v.i ? -1 : 1;
  }
  return a->at < b->at ? -1 : 1;
}

static int descending(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  if (a->v.is_float) {
    bool na = isnan(a->v.f), nb = isnan(b->v.f);
    if (na != nb)
      return na ? -1 : 1; /* NaN first */
    if (!na && a->v.f != b->v.f)
      return a->v.f > b->v.f ? -1 : 1;
  } else if (a->v.i != b->v.i) {
    return a->v.i > b->v.i ? -1 : 1;
  }
  return a->at < b->at ? -1 : 1;
}

/* Offsets (elements) of kept element o in the input (at[0]) and the output (at[1]). */
static void locate(const vkt_reduce_layout *l, int64_t o, int64_t at[2]) {
  at[0] = at[1] = 0;
  for (int d = l->krank - 1; d >= 0; d--) {
    int64_t c = o % l->kshape[d];
    o /= l->kshape[d];
    at[0] += c * l->kstride[d];
    at[1] += c * l->kstride[VKT_MAX_DIMS + d];
  }
}

vkt_status vkt_cpu_sort(const vkt_op *op, const vkt_op_args *a) {
  (void)op;
  const vkt_tensor *in = a->in[0], *out = a->out;
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  int d = 0;
  while (d < in->ndim && !(a->dims >> d & 1))
    d++;
  int64_t n = l.nred, m = in->ndim ? out->shape[d] : 1;
  int64_t sin = in->ndim ? in->strides[d] : 0, sout = in->ndim ? out->strides[d] : 0;
  bool fl = vkt_dtypes[a->compute].is_float;
  int isize = vkt_dtype_size(in->dtype), osize = vkt_dtype_size(out->dtype);
  entry *row = malloc(sizeof *row * (size_t)(n ? n : 1));
  if (!row)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  for (int64_t o = 0; o < l.nout; o++) {
    int64_t at[2];
    locate(&l, o, at);
    for (int64_t r = 0; r < n; r++) {
      vkt_scalar x = vkt_scalar_load(in->dtype, vkt_tensor_host(in) + (at[0] + r * sin) * isize);
      if (fl && !x.is_float)
        x = (vkt_scalar){true, (double)x.i, 0};
      row[r] = (entry){x, r};
    }
    qsort(row, (size_t)n, sizeof *row, a->flags & VKT_SORT_DESCENDING ? descending : ascending);
    for (int64_t r = 0; r < m; r++) {
      int64_t to = at[1] + r * sout; /* the indices have the values' shape and strides */
      vkt_scalar_store(out->dtype, row[r].v, vkt_tensor_host(out) + to * osize);
      vkt_scalar_store(VKT_INT64, (vkt_scalar){false, 0, row[r].at}, vkt_tensor_host(a->out2) + to * 8);
    }
  }
  free(row);
  return VKT_OK;
}
