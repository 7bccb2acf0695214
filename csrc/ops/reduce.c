/* reduce.c: placeholder until the reduce family lands; every op of it takes the CPU path and reports so. */
#include "table.h"

bool vkt_reduce_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op, (void)a;
  *why = "not written yet";
  return false;
}

vkt_status vkt_reduce_launch(const vkt_op *op, const vkt_op_args *a) {
  (void)a;
  return vkt_fail(VKT_ERR_RUNTIME, "%s has no shader yet", op->name);
}

vkt_status vkt_cpu_reduce(const vkt_op *op, const vkt_op_args *a) {
  (void)a;
  return vkt_fail(VKT_ERR_RUNTIME, "%s is not implemented yet", op->name);
}
