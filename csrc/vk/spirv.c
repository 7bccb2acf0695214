/* spirv.c: turns the SPIR-V glslang 12 writes for GL_NV_cooperative_matrix into its
 * SPV_KHR_cooperative_matrix form. glslang 12 (Debian 12's) cannot compile GL_KHR_cooperative_matrix, and
 * drivers may run the KHR form on faster paths. The two forms differ in three ways:
 * - a KHR matrix type names its use (A, B or accumulator): found here from the multiply-adds' operands,
 *   so a shader must give its A, B and accumulator fragments distinct types (shapes or component types);
 * - loads and stores take a layout (an integer constant) before the stride, where NV took a bool after;
 * - the opcodes, the capability and the extension's name. */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

enum {
  OP_EXTENSION = 10,
  OP_CAPABILITY = 17,
  OP_TYPE_INT = 21,
  OP_CONSTANT_TRUE = 41,
  OP_CONSTANT_FALSE = 42,
  OP_CONSTANT = 43,
  OP_CONSTANT_COMPOSITE = 44,
  OP_FUNCTION_PARAMETER = 55,
  OP_LOAD = 61,
  OP_COMPOSITE_CONSTRUCT = 80,
  OP_COPY_OBJECT = 83,
  OP_PHI = 245,
  CAP_COOP_NV = 5357,
  CAP_COOP_KHR = 6022,
  OP_TYPE_COOP_NV = 5358,
  OP_LOAD_COOP_NV = 5359,
  OP_STORE_COOP_NV = 5360,
  OP_MULADD_COOP_NV = 5361,
  OP_LENGTH_COOP_NV = 5362,
  OP_TYPE_COOP_KHR = 4456,
  OP_LOAD_COOP_KHR = 4457,
  OP_STORE_COOP_KHR = 4458,
  OP_MULADD_COOP_KHR = 4459,
  OP_LENGTH_COOP_KHR = 4460,
};

enum { USE_A = 1, USE_B = 2, USE_ACC = 4 }; /* bits; the KHR Use operand is 0, 1, 2 */

#define HEADER 5
#define OPCODE(w) ((w)&0xffffu)
#define COUNT(w) ((w) >> 16)

static const char nv_name[] = "SPV_NV_cooperative_matrix", khr_name[] = "SPV_KHR_cooperative_matrix";

static bool is_string(const uint32_t *ins, const char *s) {
  size_t n = strlen(s);
  return (COUNT(ins[0]) - 1) * 4 > n && memcmp(ins + 1, s, n + 1) == 0;
}

/* Whether the instruction defines a value whose type is its first operand. */
static bool typed_value(uint32_t op) {
  switch (op) {
  case OP_LOAD:
  case OP_LOAD_COOP_NV:
  case OP_MULADD_COOP_NV:
  case OP_COMPOSITE_CONSTRUCT:
  case OP_CONSTANT_COMPOSITE:
  case OP_COPY_OBJECT:
  case OP_PHI:
  case OP_FUNCTION_PARAMETER: return true;
  default: return false;
  }
}

static vkt_status unsupported(const char *what) {
  return vkt_fail(VKT_ERR_RUNTIME, "cannot turn NV cooperative-matrix SPIR-V into the KHR form: %s", what);
}

/* The facts the rewrite needs, from one pass over the module. */
typedef struct {
  uint32_t bound, int32_type, true_id, false_id;
  uint32_t *type_of; /* value id -> type id, for values of matrix types */
  uint8_t *use;      /* type id -> USE_ bits; matrix types have at least USE_ACC | 8 marked as seen */
} survey;

#define IS_MATRIX 8

static vkt_status take_survey(const uint32_t *w, size_t n, survey *s) {
  s->bound = w[3];
  s->type_of = calloc(s->bound, sizeof *s->type_of);
  s->use = calloc(s->bound, 1);
  if (!s->type_of || !s->use)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory rewriting SPIR-V");
  for (size_t i = HEADER; i < n; i += COUNT(w[i])) {
    const uint32_t *ins = w + i, op = OPCODE(ins[0]), count = COUNT(ins[0]);
    if (count == 0 || i + count > n)
      return unsupported("malformed module");
    if (op == OP_TYPE_INT && ins[2] == 32 && !s->int32_type)
      s->int32_type = ins[1];
    else if (op == OP_CONSTANT_TRUE)
      s->true_id = ins[2];
    else if (op == OP_CONSTANT_FALSE)
      s->false_id = ins[2];
    else if (op == OP_TYPE_COOP_NV && ins[1] < s->bound)
      s->use[ins[1]] = IS_MATRIX;
    if (typed_value(op) && count >= 3 && ins[1] < s->bound && ins[2] < s->bound && s->use[ins[1]])
      s->type_of[ins[2]] = ins[1];
  }
  for (size_t i = HEADER; i < n; i += COUNT(w[i])) {
    const uint32_t *ins = w + i;
    if (OPCODE(ins[0]) != OP_MULADD_COOP_NV)
      continue;
    uint32_t ta = ins[3] < s->bound ? s->type_of[ins[3]] : 0, tb = ins[4] < s->bound ? s->type_of[ins[4]] : 0;
    if (!ta || !tb)
      return unsupported("a multiply-add operand of unknown type");
    s->use[ta] |= USE_A, s->use[tb] |= USE_B, s->use[ins[1]] |= USE_ACC;
  }
  for (uint32_t id = 0; id < s->bound; id++) {
    int bits = s->use[id] & 7;
    if (bits && (bits & (bits - 1)))
      return unsupported("one matrix type serves two uses (give A, B and the sums distinct shapes)");
  }
  return s->int32_type ? VKT_OK : unsupported("no 32-bit integer type");
}

/* The layout constant for NV's column-major bool. */
static bool layout_of(const survey *s, uint32_t column_major, uint32_t first_const, uint32_t *out) {
  if (column_major == s->false_id)
    *out = first_const; /* RowMajorKHR = 0 */
  else if (column_major == s->true_id)
    *out = first_const + 1; /* ColumnMajorKHR = 1 */
  else
    return false;
  return true;
}

vkt_status vkt_spirv_coop_khr(uint32_t **words, size_t *nwords) {
  const uint32_t *w = *words;
  size_t n = *nwords, at = HEADER;
  bool nv = false;
  for (size_t i = HEADER; i + 1 < n && COUNT(w[i]); i += COUNT(w[i]))
    nv |= OPCODE(w[i]) == OP_CAPABILITY && w[i + 1] == CAP_COOP_NV;
  if (!nv)
    return VKT_OK;
  survey s = {0};
  vkt_status st = take_survey(w, n, &s);
  /* Room for: three constants (0, 1, 2), a Use per type, a longer extension name. */
  uint32_t *out = st ? NULL : malloc((n + 12 + s.bound + 2) * sizeof *out);
  uint32_t c0 = s.bound; /* ids of the constants 0, 1, 2 */
  if (!st && !out)
    st = vkt_fail(VKT_ERR_NOMEM, "out of host memory rewriting SPIR-V");
  if (st)
    goto finish;
  memcpy(out, w, HEADER * sizeof *out);
  out[3] = s.bound + 3;
  for (size_t i = HEADER; i < n && !st; i += COUNT(w[i])) {
    const uint32_t *ins = w + i, op = OPCODE(ins[0]), count = COUNT(ins[0]);
    uint32_t *o = out + at;
    if (op == OP_CAPABILITY && ins[1] == CAP_COOP_NV) {
      o[0] = ins[0], o[1] = CAP_COOP_KHR, at += 2;
    } else if (op == OP_EXTENSION && is_string(ins, nv_name)) {
      uint32_t len = (uint32_t)(sizeof khr_name + 3) / 4;
      memset(o + 1, 0, len * 4);
      memcpy(o + 1, khr_name, sizeof khr_name);
      o[0] = (len + 1) << 16 | OP_EXTENSION, at += len + 1;
    } else if (op == OP_TYPE_COOP_NV) {
      int bits = s.use[ins[1]] & 7;
      memcpy(o, ins, count * sizeof *o);
      o[0] = (count + 1) << 16 | OP_TYPE_COOP_KHR;
      o[count] = c0 + (bits == USE_A ? 0 : bits == USE_B ? 1 : 2), at += count + 1;
    } else if (op == OP_LOAD_COOP_NV || op == OP_STORE_COOP_NV) {
      size_t p = op == OP_LOAD_COOP_NV ? 4 : 3; /* the stride's word; the bool follows it */
      if (count < p + 2 || !layout_of(&s, ins[p + 1], c0, &o[p])) {
        st = unsupported("a load or store whose layout is not a constant");
        break;
      }
      memcpy(o, ins, p * sizeof *o);
      o[p + 1] = ins[p];
      memcpy(o + p + 2, ins + p + 2, (count - p - 2) * sizeof *o);
      o[0] = count << 16 | (op == OP_LOAD_COOP_NV ? OP_LOAD_COOP_KHR : OP_STORE_COOP_KHR), at += count;
    } else {
      memcpy(o, ins, count * sizeof *o);
      if (op == OP_MULADD_COOP_NV)
        o[0] = count << 16 | OP_MULADD_COOP_KHR;
      else if (op == OP_LENGTH_COOP_NV)
        o[0] = count << 16 | OP_LENGTH_COOP_KHR;
      at += count;
      if (op == OP_TYPE_INT && ins[1] == s.int32_type)
        for (uint32_t v = 0; v < 3; v++, at += 4)
          out[at] = 4u << 16 | OP_CONSTANT, out[at + 1] = s.int32_type, out[at + 2] = c0 + v, out[at + 3] = v;
    }
  }
  if (!st) {
    free(*words);
    *words = out, *nwords = at, out = NULL;
  }
finish:
  free(out);
  free(s.type_of);
  free(s.use);
  return st;
}
