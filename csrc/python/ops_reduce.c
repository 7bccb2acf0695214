/* ops_reduce.c: Python bindings of the reduce family (placeholder until it lands). */
#include "py.h"

PyMethodDef vkt_reduce_methods[] = {{NULL, NULL, 0, NULL}};
PyMethodDef vkt_reduce_functions[] = {{NULL, NULL, 0, NULL}};
