/* status.c: the thread-local error message behind vkt_fail, the dtype table and the default float dtype. */
#include "vkt.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

vkt_status vkt_fail(vkt_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return code;
}

const char *vkt_last_error(void) { return last_error; }

const vkt_dtype_info vkt_dtypes[VKT_DTYPE_COUNT] = {
    [VKT_FLOAT32] = {"float32", "float32", "Float", "float", 4, true},
    [VKT_FLOAT64] = {"float64", "float64", "Double", "double", 8, true},
    [VKT_FLOAT16] = {"float16", "float16", "Half", "c10::Half", 2, true},
    [VKT_INT32] = {"int32", "int32", "Int", "int", 4, false},
    [VKT_INT64] = {"int64", "int64", "Long", "long int", 8, false},
    [VKT_UINT8] = {"uint8", "uint8", "Byte", "unsigned char", 1, false},
    [VKT_BOOL] = {"bool", "bool", "Bool", "bool", 1, false},
};
static_assert(VKT_DTYPE_COUNT == 7, "add the new dtype to vkt_dtypes");

static vkt_dtype default_float = VKT_FLOAT32; /* read and written atomically: any thread may set it */

vkt_dtype vkt_default_float(void) { return __atomic_load_n(&default_float, __ATOMIC_RELAXED); }

void vkt_set_default_float(vkt_dtype d) { __atomic_store_n(&default_float, d, __ATOMIC_RELAXED); }
