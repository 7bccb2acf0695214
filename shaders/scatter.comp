#version 450
// scatter.comp: out[c with c[dim] = index[c]] = src[c] (OP_SET), or combined with it (OP_ADD, OP_PROD,
// OP_AMAX, OP_AMIN), for every c of index's shape: scatter, scatter_add, scatter_reduce, index_copy,
// index_add and index_put (whose 1-D index the host views with src's shape, stride 0 off dim). Indices may
// repeat, so combining is atomic: int32 adds with atomicAdd, float32 adds with it too where the adapter has
// VK_EXT_shader_atomic_float (FLOAT_ATOMIC), everything else by compare-and-swap on the 32-bit word that
// holds the element (float32 and int32 whole; float16, uint8 and bool as a lane of it); float64 and int64 by
// compare-and-swap of their 64-bit word, where the adapter has shaderBufferInt64Atomics (WIDE).
// The sorted scatter (shape.c) combines without atomics, in index order, so the same on every run: KEYS
// writes each element of index's destination (its offset in out's buffer) as a sort key; the host sorts the
// keys stably; SEGMENTS gives each run of equal keys one invocation, which combines the run's src elements
// in their order into the destination's value and writes it once.
// An index outside [0, size) is skipped and sets the error word, which the host reads after the dispatch.
#include "shape.glsl"

#define NONE 0xffffffffu // KEYS: the key of an index outside [0, size), which SEGMENTS skips

#if !defined(OP_SET) && !defined(KEYS) && ITEMSIZE < 4
#define LANES (4 / ITEMSIZE) // elements of one 32-bit word
#endif

#if defined(OP_ADD) && defined(FLOAT_ATOMIC) // float32 adds where the adapter has VK_EXT_shader_atomic_float
#extension GL_EXT_shader_atomic_float : require
#endif
#if !defined(OP_SET) && !defined(KEYS) && !defined(SEGMENTS) && ITEMSIZE == 8
#define WIDE
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#endif

#if defined(KEYS)
layout(std430, binding = 0) writeonly buffer Keys { uint keys_[]; };
#elif defined(OP_SET)
layout(std430, binding = 0) writeonly buffer Out { WORD out_[]; };
#elif defined(OP_ADD) && defined(FLOAT_ATOMIC)
layout(std430, binding = 0) buffer Out { float out_[]; };
#elif defined(WIDE)
layout(std430, binding = 0) buffer Out { uint64_t out_[]; };
#elif defined(LANES)
layout(std430, binding = 0) buffer Out { uint out_[]; }; // the words the elements are lanes of
#else
layout(std430, binding = 0) buffer Out { WORD out_[]; };
#endif
layout(std430, binding = 1) readonly buffer Src { WORD src_[]; };
#if defined(SEGMENTS)
layout(std430, binding = 2) readonly buffer Keys { uint keys_[]; };     // sorted
layout(std430, binding = 3) readonly buffer Order { uvec2 order_[]; }; // the sort's int64 positions: low words
#else
#ifdef INDEX64
layout(std430, binding = 2) readonly buffer Index { uvec2 index_[]; };
#else
layout(std430, binding = 2) readonly buffer Index { int index_[]; };
#endif
layout(std430, binding = 3) writeonly buffer Err { uint err_[]; };
#endif

#if !defined(OP_SET) && !defined(KEYS)
#if ITEMSIZE == 2 // float16, computed in float and rounded once, as PyTorch's CPU kernels do
#define T float
#define LOAD(u) unpackHalf2x16(u).x
#define STORE(v) (packHalf2x16(vec2((v), 0.0)) & 0xFFFFu)
#elif ITEMSIZE == 1 && defined(IS_BOOL) // sums and maxima are or, products and minima and
#define T int
#define LOAD(u) int(u)
#define STORE(v) uint((v) != 0)
#elif ITEMSIZE == 1 // uint8 wraps
#define T int
#define LOAD(u) int(u)
#define STORE(v) (uint((v)) & 0xFFu)
#elif defined(WIDE) && defined(IS_INT64)
#define T int64_t
#define LOAD(u) int64_t(u)
#define STORE(v) uint64_t(v)
#elif defined(WIDE) // float64
#define T double
#define LOAD(u) packDouble2x32(unpackUint2x32(u))
#define STORE(v) packUint2x32(unpackDouble2x32(v))
#elif ITEMSIZE == 8 && defined(IS_INT64) // SEGMENTS: the element as its two 32-bit words, no 64-bit atomics
#define T int64_t
#define LOAD(u) int64_t(pack64(u))
#define STORE(v) unpack32(uint64_t(v))
#elif ITEMSIZE == 8 // SEGMENTS' float64
#define T double
#define LOAD(u) packDouble2x32(u)
#define STORE(v) unpackDouble2x32(v)
#elif defined(ADD_INT) // int32: the word as a signed integer
#define T int
#define LOAD(u) int(u)
#define STORE(v) uint((v))
#else // float32
#define T float
#define LOAD(u) uintBitsToFloat(u)
#define STORE(v) floatBitsToUint((v))
#endif
#ifdef WIDE
#define BITS uint64_t
#elif ITEMSIZE == 8
#define BITS uvec2
#else
#define BITS uint
#endif
// The element's bits a and b (in the low bits) combined.
BITS combine(BITS a_bits, BITS b_bits) {
  T a = LOAD(a_bits), b = LOAD(b_bits);
#if defined(OP_ADD)
  return STORE(a + b);
#elif defined(OP_PROD)
  return STORE(a * b);
#elif defined(OP_AMAX) // NaN wins, as in PyTorch
  return STORE(a != a || a >= b ? a : b);
#else
  return STORE(a != a || a <= b ? a : b);
#endif
}
#endif

#if defined(SEGMENTS)
void main() {
  uint j = linear_id();
  if (j >= p.n)
    return;
  uint at = keys_[j];
  if (at == NONE || (j > 0u && keys_[j - 1u] == at)) // only the first of a run combines it
    return;
#ifdef LANES
  uint word = at / LANES, shift = at % LANES * (ITEMSIZE * 8), mask = (1u << (ITEMSIZE * 8)) - 1u;
  BITS acc = out_[word] >> shift & mask; // no other invocation writes this lane
#else
  BITS acc = out_[at];
#endif
  uint idx[NOPS], coord[MAX_RANK];
  for (uint k = j; k < p.n && keys_[k] == at; k++) { // in index order: the sort is stable
    locate(order_[k].x, idx, coord);
    acc = combine(acc, BITS(src_[idx[1]]));
  }
#ifdef LANES // the other lanes of the word may be other runs', written at the same time
  atomicAnd(out_[word], ~(mask << shift));
  atomicOr(out_[word], acc << shift);
#else
  out_[at] = acc;
#endif
}
#else
void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint idx[NOPS], coord[MAX_RANK];
  locate(i, idx, coord); // over index's shape; operand 0 is out with its own strides
  uint dim = uint(p.param);
#ifdef INDEX64
  uvec2 v = index_[idx[2]];
  bool ok = v.y == 0u && v.x < p.limit;
  uint k = v.x;
#else
  int v = index_[idx[2]];
  bool ok = v >= 0 && uint(v) < p.limit;
  uint k = uint(v);
#endif
  if (!ok) {
    err_[0] = 1u;
#ifdef KEYS
    keys_[i] = NONE;
#endif
    return;
  }
  uint at = idx[0] + (k - coord[dim]) * p.stride[dim];
#if defined(KEYS)
  keys_[i] = at;
#else
  WORD w = src_[idx[1]];
#if defined(OP_SET)
  out_[at] = w;
#elif defined(LANES)
  uint word = at / LANES, shift = at % LANES * (ITEMSIZE * 8), mask = (1u << (ITEMSIZE * 8)) - 1u;
  uint seen = out_[word], want;
  do { // retry until no other invocation changed the word between the read and the swap
    want = seen;
    uint lane = combine(want >> shift & mask, uint(w));
    seen = atomicCompSwap(out_[word], want, (want & ~(mask << shift)) | lane << shift);
  } while (seen != want);
#elif defined(WIDE)
  uint64_t seen = out_[at], want;
  do {
    want = seen;
    seen = atomicCompSwap(out_[at], want, combine(want, packUint2x32(w)));
  } while (seen != want);
#elif defined(OP_ADD) && defined(ADD_INT)
  atomicAdd(out_[at], w);
#elif defined(OP_ADD) && defined(FLOAT_ATOMIC)
  atomicAdd(out_[at], uintBitsToFloat(w));
#else
  uint seen = out_[at], want;
  do {
    want = seen;
    seen = atomicCompSwap(out_[at], want, combine(want, w));
  } while (seen != want);
#endif
#endif
}
#endif
