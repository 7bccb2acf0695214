/* iter.h: walks the elements of up to four same-shaped host views in row-major order, keeping a
 * byte pointer into each. The CPU kernels are loops over it. */
#ifndef VKT_ITER_H
#define VKT_ITER_H

#include "../../tensor.h"

typedef struct {
  int ndim, nops;
  int64_t shape[VKT_MAX_DIMS];
  int64_t strides[4][VKT_MAX_DIMS]; /* bytes */
  int64_t index[VKT_MAX_DIMS];
  char *ptr[4];
} vkt_iter;

static inline void vkt_iter_init(vkt_iter *it, int nops, const vkt_tensor *const *ops) {
  const vkt_tensor *t0 = ops[0];
  it->ndim = t0->ndim;
  it->nops = nops;
  for (int d = 0; d < t0->ndim; d++) {
    it->shape[d] = t0->shape[d];
    it->index[d] = 0;
  }
  for (int k = 0; k < nops; k++) {
    int size = vkt_dtype_size(ops[k]->dtype);
    it->ptr[k] = vkt_tensor_host(ops[k]);
    for (int d = 0; d < t0->ndim; d++)
      it->strides[k][d] = ops[k]->strides[d] * size;
  }
}

static inline void vkt_iter_next(vkt_iter *it) {
  for (int d = it->ndim - 1; d >= 0; d--) {
    for (int k = 0; k < it->nops; k++)
      it->ptr[k] += it->strides[k][d];
    if (++it->index[d] < it->shape[d])
      return;
    for (int k = 0; k < it->nops; k++)
      it->ptr[k] -= it->strides[k][d] * it->shape[d];
    it->index[d] = 0;
  }
}

#endif
