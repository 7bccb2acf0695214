/* amp.h: autocast's hooks into op dispatch (amp.c): the per-thread switch that guarded ops and `@` test, and
 * the call that has vkt.amp's policy cast an op's arguments before the op runs. */
#ifndef VKT_PY_AMP_H
#define VKT_PY_AMP_H

#include "py.h"

/* Bit 1: autocast is on for cpu tensors on this thread, bit 2: for vulkan ones. 0 costs each op one test. */
extern _Thread_local int vkt_amp_mask;

#define VKT_AMP_LOWER 1 /* policies as vkt.amp's _policy.py numbers them; `@` needs only this one */

typedef PyObject *(*vkt_amp_body)(int i, PyObject *self, PyObject *args, PyObject *kwargs);

/* body(i, self, args, kwargs) on the arguments as vkt.amp casts them for `policy`, with autocast off inside. */
PyObject *vkt_py_amp_call(int policy, const char *name, PyObject *self, PyObject *args, PyObject *kwargs,
                          vkt_amp_body body, int i);
PyObject *vkt_py_amp_matmul(PyObject *a, PyObject *b); /* `a @ b` under autocast */
/* guard.c: gives every guarded function and method called `name` the policy; the number of them. */
int vkt_guard_set_policy(const char *name, int policy);
extern PyMethodDef vkt_amp_functions[];

#endif
