/* py.h: what the files of csrc/python/ share: the module state, the Tensor object, and conversions
 * between Python objects and vkt's C types. The only place that includes Python.h. */
#ifndef VKT_PY_H
#define VKT_PY_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../autograd/autograd.h"
#include "../ops/table.h"

typedef struct {
  PyObject *tensor_type, *dtype_type, *device_type, *format_type, *size_type;
  PyObject *dtypes[VKT_DTYPE_COUNT]; /* vkt.float32, ... */
  PyObject *oom_error;               /* vkt.OutOfMemoryError */
  PyObject *linalg_error;            /* vkt.linalg.LinAlgError (torch's _LinAlgError) */
  PyObject *format;                  /* vkt._formatting.tensor_repr, imported on first repr */
} vkt_py_state;

/* The process has one Vulkan runtime, so one module state: set when the module executes. */
extern vkt_py_state *vkt_state;

typedef struct {
  PyObject_HEAD vkt_var v; /* the tensor and its autograd state */
  int exports;             /* live buffer-protocol exports */
  PyObject *weakrefs;      /* weakref.ref(tensor) works, as torch's */
} vkt_py_tensor;

typedef struct {
  PyObject_HEAD vkt_dtype dtype;
} vkt_py_dtype;

typedef struct {
  PyObject_HEAD int index; /* VKT_CPU, or a Vulkan adapter index; -2 for "vulkan" with no index */
} vkt_py_device;

#define VKT_NO_INDEX (-2)

typedef struct {
  PyObject_HEAD vkt_memory_format format;
} vkt_py_format;

/* Raises the Python exception for a status and its message; returns NULL for `return vkt_raise(st);`. */
PyObject *vkt_raise(vkt_status st);

int vkt_types_add(PyObject *module, vkt_py_state *state);
int vkt_tensor_type_add(PyObject *module, vkt_py_state *state);
int vkt_size_type_add(PyObject *module, vkt_py_state *state);
/* A new vkt.Size of the ndim sizes. */
PyObject *vkt_size_new(int ndim, const int64_t *shape);

static inline bool vkt_is_tensor(PyObject *o) { return PyObject_TypeCheck(o, (PyTypeObject *)vkt_state->tensor_type); }
/* Wraps t (its reference is stolen) in a new Python Tensor. */
PyObject *vkt_wrap(vkt_tensor *t);
/* Wraps a var (both references stolen) in a new Python Tensor. */
PyObject *vkt_wrap_var(vkt_var *v);
/* -1 with the exception set where a saved-tensor pack hook raised on this thread since the last call (the op
 * that saved raises it, as in PyTorch), else 0. */
int vkt_py_pack_failed(void);
/* A (values, indices) named tuple of the struct-sequence type desc describes (made on first use into
 * *type, kept for the process); both references are stolen. */
PyObject *vkt_py_pair(PyStructSequence_Desc *desc, PyTypeObject **type, vkt_var *values, vkt_tensor *indices);
PyObject *vkt_device_new(int index);

/* PyArg_ParseTupleAndKeywords, taking NumPy's axis and keepdims for dim and keepdim as PyTorch does:
 * every binding parses through it, but the optimizer step's keywords (vkt_parse_keywords). */
int vkt_parse_args(PyObject *args, PyObject *kwargs, const char *format, char **kwlist, ...);
/* Keyword-only arguments matched by name, for a binding called per parameter per step with many of them (the
 * optimizer's): PyArg's parser makes a string of every name it looks up, about 12,000 instructions for an AdamW
 * step's. values[k] := the argument named kwlist[k] (borrowed), untouched where absent; an unknown name is
 * PyArg's TypeError. Returns 0, or -1 with the exception set. */
int vkt_parse_keywords(PyObject *kwargs, const char *function, const char *const *kwlist, PyObject **values);

/* PyTorch's TypeError for arguments that fit none of fn's forms (its lines " * (...)\n", listed after the types of
 * the arguments given); returns NULL. */
PyObject *vkt_py_signature_error(const char *fn, PyObject *args, PyObject *kwargs, const char *forms);
/* Whether o fits PyTorch's int parameter: anything with __index__ but a bool, or a 0-d tensor of an integer dtype. */
bool vkt_py_int_arg(PyObject *o);
/* Argument parsing. Each returns 0, or -1 with an exception set. */
int vkt_parse_dtype(PyObject *o, vkt_dtype *out, bool *given);
int vkt_parse_device(PyObject *o, int *out); /* None means cpu, "vulkan" the current adapter */
int vkt_resolve_device(int index, int *out); /* "vulkan" without index -> the current adapter */
/* A creation function's device= argument: vkt_parse_device, but None means this thread's default device
 * (vkt.set_default_device, `with vkt.device(...)`). */
int vkt_creation_device(PyObject *o, int *out);
PyObject *vkt_py_set_default_device(PyObject *self, PyObject *device);
PyObject *vkt_py_default_device(PyObject *self, PyObject *unused);
int vkt_parse_shape(PyObject *args, int *ndim, int64_t *shape);
int vkt_parse_memory_format(PyObject *o, vkt_memory_format *out); /* None means preserve_format */

/* vkt.tensor(data): a new tensor on device (an index) from a NumPy array, buffer, scalar or nested sequence. */
int vkt_from_data(PyObject *data, PyObject *dtype, int device, vkt_tensor *out);
PyObject *vkt_py_from_numpy(PyObject *self, PyObject *arr);
PyObject *vkt_py_from_dlpack(PyObject *self, PyObject *obj);

/* Interop slots and methods of Tensor (interop.c). */
int vkt_tensor_getbuffer(PyObject *self, Py_buffer *view, int flags);
void vkt_tensor_releasebuffer(PyObject *self, Py_buffer *view);
PyObject *vkt_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *vkt_tensor_dlpack_device(PyObject *self, PyObject *unused);
PyObject *vkt_tensor_array(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *vkt_tensor_numpy(PyObject *self, PyObject *unused);

/* ---- shared by the operator bindings (ops_*.c) ---- */

#define SELF_T (&((vkt_py_tensor *)self)->v.t)
#define SELF_V (&((vkt_py_tensor *)self)->v)
/* The tensor inside o, or NULL when o is not a vkt.Tensor. */
static inline vkt_tensor *vkt_tensor_of(PyObject *o) { return vkt_is_tensor(o) ? &((vkt_py_tensor *)o)->v.t : NULL; }
/* The var (tensor and autograd state) inside o, or NULL when o is not a vkt.Tensor. */
static inline vkt_var *vkt_var_of(PyObject *o) { return vkt_is_tensor(o) ? &((vkt_py_tensor *)o)->v : NULL; }
/* o (a Tensor) becomes the owner of its autograd state where no Python object owns it: C code made it after o was
 * wrapped (a view's base gets one), and _base and AccumulateGrad.variable return the owner. */
static inline void vkt_py_claim(PyObject *o) {
  vkt_var *v = vkt_var_of(o);
  if (v && v->ag && !v->ag->owner)
    v->ag->owner = o;
}
/* `return vkt_py_var_result(st, &out);`: raises for a failed status, else wraps out. */
PyObject *vkt_py_var_result(vkt_status st, vkt_var *out);
/* A tensor or a Python number (bool, int, float) as an operand; -1 with TypeError otherwise. */
int vkt_py_operand(PyObject *o, vkt_operand *out);
/* vkt_py_scalar for t[key] = number, where PyTorch unpacks an int as a C long long: ValueError past int64. */
int vkt_py_item_number(PyObject *o, vkt_scalar *out);
/* A Python number as a vkt_scalar; -1 with TypeError otherwise. An int past int64 is an error: past uint64 Python's
 * OverflowError (PyTorch's), in [2^63, 2^64) int64's "value cannot be converted" (PyTorch's fills' error). */
int vkt_py_scalar(PyObject *o, vkt_scalar *out);
/* x.op() / x.op_() of a unary row, and a binary row between two operands (tensors, numbers or NumPy
 * arrays; NotImplemented where neither is a tensor or one is something else), ops_elementwise.c. */
PyObject *vkt_py_unary(PyObject *x, int id, vkt_scalar p0, vkt_scalar p1, bool inplace);
PyObject *vkt_py_binary(PyObject *a, PyObject *b, int id, vkt_scalar alpha, bool inplace);
/* In-place ops under autograd (ops_elementwise.c): whether one on dst must be recorded (1), raising
 * PyTorch's refusals (-1); and the end of a recorded one, whose out-of-place result r goes into dst. */
int vkt_py_inplace_records(const vkt_var *dst, const vkt_var *other);
PyObject *vkt_py_inplace_result(PyObject *dst, vkt_status st, vkt_var *r);
/* An op with no backward formula yet (ops_index.c): -1 with PyTorch's refusal of an in-place write to a leaf
 * that requires grad, or a RuntimeError where autograd would have to record it (x, other: its operands;
 * other may be NULL or a number), else 0. */
int vkt_py_no_backward(const char *op, PyObject *x, PyObject *other, bool inplace);
/* `return vkt_py_result(st, &out);`: raises for a failed status, else wraps out. */
PyObject *vkt_py_result(vkt_status st, vkt_tensor *out);
/* Parses a dim argument: an int, or a tuple/list of ints, or None (every dim) into a bit mask over
 * ndim dims; -1 with an exception on a bad or repeated dim. */
int vkt_py_dims(PyObject *o, int ndim, uint32_t *mask);

/* Each family's bindings: Tensor methods and vkt.<name> functions, {NULL}-terminated. */
extern PyMethodDef vkt_elementwise_methods[], vkt_elementwise_functions[];
extern PyMethodDef vkt_elementwise_more_methods[], vkt_elementwise_more_functions[];
extern PyMethodDef vkt_reduce_methods[], vkt_reduce_functions[];
extern PyMethodDef vkt_matmul_methods[], vkt_matmul_functions[];
extern PyMethodDef vkt_shape_methods[], vkt_shape_functions[];
extern PyMethodDef vkt_cpu_functions[];    /* cpu.c */
extern PyMethodDef vkt_kernel_functions[]; /* kernels.c */
/* autograd.c: Tensor's autograd attributes and methods, vkt._C's autograd functions, the Node type. */
extern PyMethodDef vkt_autograd_methods[], vkt_autograd_functions[];
extern PyGetSetDef vkt_autograd_getset[];
int vkt_autograd_add(PyObject *module);
/* Routes each of defs (a {NULL}-terminated table about to be added) through guard.c's check that no op
 * drops a gradient silently. */
int vkt_guard_methods(PyMethodDef *defs);
void vkt_cpu_locate_blas(void);
extern PyMethodDef vkt_sort_methods[], vkt_sort_functions[]; /* scans, sorting and selection */
/* ops_linalg.c: svd, svdvals; matrix_norm's ords of singular values ('nuc', 2, -2: vkt_py_sv_ord is their
 * vkt_sv_norm, else -1), which ops_reduce.c's matrix_norm hands to vkt_py_matrix_norm_sv with its arguments. */
extern PyMethodDef vkt_linalg_functions[];
extern PyMethodDef vkt_linalg_methods[]; /* Tensor.inverse, det, slogdet, logdet */
int vkt_py_sv_ord(PyObject *ord);
PyObject *vkt_py_matrix_norm_sv(PyObject *args, PyObject *kwargs);
/* Tensor slots the families own: a @ b, and t[key] = value. */
PyObject *vkt_py_matmul(PyObject *a, PyObject *b);
int vkt_py_setitem(PyObject *self, PyObject *key, PyObject *value);
/* t[key] for a key holding tensors, lists, NumPy arrays or bools (ops_index.c): NULL with no exception
 * set when key is basic. */
PyObject *vkt_py_getitem_advanced(PyObject *self, PyObject *key);
/* key as PyTorch reads it: a short list holding a sequence, tensor, slice, None or Ellipsis is a tuple; a new
 * reference. */
PyObject *vkt_py_index_key(PyObject *key);
/* Writes a number, a tensor, or anything vkt.tensor() takes into dst (ops_shape.c); -1 on error. */
int vkt_py_write_value(const vkt_tensor *dst, PyObject *value);
extern PyMethodDef vkt_index_methods[], vkt_index_functions[];
extern PyMethodDef vkt_layout_methods[], vkt_layout_functions[], vkt_creation_functions[];
extern PyMethodDef vkt_nn_functions[];   /* layer_norm, rms_norm, embedding (ops_nn.c) */
extern PyMethodDef vkt_loss_functions[]; /* cross_entropy_loss, nll_loss */
/* The number protocol and comparisons of Tensor (ops_elementwise.c). */
extern PyType_Slot vkt_number_slots[];
extern PyMethodDef vkt_optim_functions[]; /* ops_optim.c: the fused optimizer step */

#endif
