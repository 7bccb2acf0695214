/* vkt.h: what every layer shares: status codes, dtypes, limits.
 * Library code returns a vkt_status and leaves a message with vkt_fail; csrc/python/ turns the pair
 * into a Python exception in one place. */
#ifndef VKT_H
#define VKT_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VKT_MAX_DIMS 16

typedef enum {
  VKT_OK = 0,
  VKT_ERR_RUNTIME, /* RuntimeError */
  VKT_ERR_VALUE,   /* ValueError */
  VKT_ERR_TYPE,    /* TypeError */
  VKT_ERR_INDEX,   /* IndexError */
  VKT_ERR_OOM,     /* vkt.OutOfMemoryError: device memory */
  VKT_ERR_NOMEM,   /* MemoryError: host memory */
  VKT_ERR_NOTIMPL, /* NotImplementedError: PyTorch has no kernel for that dtype */
  VKT_ERR_PYTHON,  /* a Python callback (a hook, autograd.Function.backward) raised: its exception is set */
  VKT_ERR_LINALG,  /* vkt.linalg.LinAlgError (a RuntimeError): a singular or not positive-definite matrix */
} vkt_status;

/* FNV-1a over n bytes, continuing from h (VKT_FNV_SEED to start): the keys of vkt's caches. */
#define VKT_FNV_SEED 0xcbf29ce484222325ull
static inline uint64_t vkt_fnv1a(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* Records a printf-style message for the calling thread and returns code. */
vkt_status vkt_fail(vkt_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *vkt_last_error(void);

typedef enum {
  VKT_FLOAT32,
  VKT_FLOAT64,
  VKT_FLOAT16,
  VKT_INT32,
  VKT_INT64,
  VKT_UINT8,
  VKT_BOOL,
  VKT_DTYPE_COUNT
} vkt_dtype;

typedef struct {
  const char *name;    /* "float32" */
  const char *np_name; /* NumPy's name: "float32", "bool" */
  const char *torch_name; /* PyTorch's ScalarType name, for its messages: "Float" */
  const char *c10_name;   /* its C++ type's, which other messages quote: "float", "long int", "c10::Half" */
  int itemsize;        /* bytes */
  bool is_float;
} vkt_dtype_info;

extern const vkt_dtype_info vkt_dtypes[VKT_DTYPE_COUNT];

static inline int vkt_dtype_size(vkt_dtype d) { return vkt_dtypes[d].itemsize; }

/* PyTorch's default dtype: what Python floats, factories without dtype= and integer -> float promotions
 * (sqrt of an int, int / int) make. One per process, as PyTorch's; float32 until set. Never a compute type:
 * float16 math still runs in float32 whatever the default. */
vkt_dtype vkt_default_float(void);
void vkt_set_default_float(vkt_dtype d); /* d is a float dtype: the caller checks */

/* Overflow-checked size arithmetic for shapes and byte counts. */
static inline bool vkt_mul_overflows(int64_t a, int64_t b, int64_t *out) { return __builtin_mul_overflow(a, b, out); }

#endif
