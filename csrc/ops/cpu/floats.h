/* floats.h: element i of a float16, float32 or float64 tensor in host memory, read and written as a double: the
 * cpu kernels that compute in double whatever the dtype (norms, the SVD, LU and Cholesky). */
#ifndef VKT_CPU_FLOATS_H
#define VKT_CPU_FLOATS_H

#include "../../tensor.h"

static inline double vkt_float_load(const vkt_tensor *t, int64_t i) {
  const char *p = vkt_tensor_host(t);
  switch (t->dtype) {
  case VKT_FLOAT32: return ((const float *)p)[i];
  case VKT_FLOAT16: return (double)((const _Float16 *)p)[i];
  default: return ((const double *)p)[i];
  }
}

static inline void vkt_float_store(const vkt_tensor *t, int64_t i, double v) {
  char *p = vkt_tensor_host(t);
  switch (t->dtype) {
  case VKT_FLOAT32: ((float *)p)[i] = (float)v; break;
  case VKT_FLOAT16: ((_Float16 *)p)[i] = (_Float16)v; break;
  default: ((double *)p)[i] = v;
  }
}

#endif
