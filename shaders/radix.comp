#version 450
// radix.comp: one pass of a least-significant-digit radix sort of 32-bit keys, 8 bits a pass, in four
// kernels the host selects: COUNT (each tile's digit histogram), SCAN_CHUNKS and SCAN_SUMS (the
// histograms' exclusive scan, digit-major, so each tile learns where its run of each digit starts), and
// SCATTER (a tile sorted by the digit in shared memory, stably, then written to its runs). The sort keeps
// each key's position, so equal keys keep their order: the sort is stable. The first pass reads the user's
// values and makes keys of them (FIRST); the last writes the sorted values and int64 positions (LAST).
// The host defines TX (the values' storage type), KEY_FLOAT or KEY_INT, ITEMS (elements an invocation), and
// SUBGROUP_SCAN where the adapter has subgroup arithmetic.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable

#define TILE (LOCAL_SIZE * ITEMS) // elements a workgroup sorts, and entries of a scan chunk
#define RADIX 256

layout(push_constant) uniform Push {
  uint n;         // elements
  uint tiles;     // workgroups of COUNT and SCATTER
  uint shift;     // the digit's lowest bit
  uint flip;      // ~0u for a descending sort, else 0
  uint x_offset;  // elements: the values' first, in x_
  uint out_offset[2]; // elements: the first sorted value and position, in values_ and indices_
} p;

layout(std430, binding = 0) readonly buffer X { TX x_[]; };              // the values to sort
layout(std430, binding = 1) readonly buffer KeysIn { uint keys_in[]; };  // a pass's input, but the first's
layout(std430, binding = 2) readonly buffer IdxIn { uint idx_in[]; };
layout(std430, binding = 3) buffer KeysOut { uint keys_out[]; };         // a pass's output, but the last's
layout(std430, binding = 4) buffer IdxOut { uint idx_out[]; };
// The histograms, [digit][tile] (then scanned), followed by each scan chunk's total (then scanned).
layout(std430, binding = 5) buffer Scan { uint scan_[]; };
layout(std430, binding = 6) writeonly buffer Values { TX values_[]; };         // LAST: the sorted values
layout(std430, binding = 7) writeonly buffer Indices { int64_t indices_[]; };  // LAST: their positions

#define COUNTS(i) scan_[i]
#define SUMS(i) scan_[RADIX * p.tiles + (i)]

#ifdef SUBGROUP_SCAN
#extension GL_KHR_shader_subgroup_arithmetic : require
shared uint scratch[LOCAL_SIZE]; // each subgroup's total, by subgroup

// The exclusive prefix sum of v over the workgroup's invocations, and the total: each subgroup scans
// its own, then adds the totals of the subgroups before it (two barriers in all).
uint workgroup_exclusive(uint v, out uint total) {
  uint inclusive = subgroupInclusiveAdd(v);
  if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u)
    scratch[gl_SubgroupID] = inclusive;
  barrier();
  uint before = 0u;
  total = 0u;
  for (uint s = 0; s < gl_NumSubgroups; s++) {
    before += s < gl_SubgroupID ? scratch[s] : 0u;
    total += scratch[s];
  }
  barrier(); // scratch is reused by the next call
  return before + inclusive - v;
}
#else
shared uint scratch[LOCAL_SIZE];

// The exclusive prefix sum of v over the workgroup's invocations, and the total (Hillis and Steele).
uint workgroup_exclusive(uint v, out uint total) {
  uint lid = gl_LocalInvocationID.x;
  scratch[lid] = v;
  barrier();
  for (uint step = 1; step < LOCAL_SIZE; step *= 2) {
    uint add = lid >= step ? scratch[lid - step] : 0u;
    barrier();
    scratch[lid] += add;
    barrier();
  }
  total = scratch[LOCAL_SIZE - 1];
  uint inclusive = scratch[lid];
  barrier(); // scratch is reused by the next call
  return inclusive - v;
}
#endif

// A key whose unsigned order is the values' order: floats by their sign-magnitude bits (-0 as +0, every
// NaN above +inf, as PyTorch sorts them), ints with the sign bit flipped; a descending sort flips all.
uint key_of(TX v) {
#ifdef KEY_FLOAT
  float f = float(v);
  uint u = floatBitsToUint(f);
  uint k = isnan(f) ? 0xffffffffu : f == 0.0 ? 0x80000000u : (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
#else
  uint k = uint(int(v)) ^ 0x80000000u;
#endif
  return k ^ p.flip;
}

uint digit_of(uint key) { return (key >> p.shift) & (RADIX - 1u); }

// Element i of the pass's input: its key and position.
void load(uint i, out uint key, out uint idx) {
#ifdef FIRST
  key = key_of(x_[p.x_offset + i]);
  idx = i;
#else
  key = keys_in[i];
  idx = idx_in[i];
#endif
}

#if defined(COUNT)
shared uint hist[RADIX];

void main() {
  uint lid = gl_LocalInvocationID.x, tile = gl_WorkGroupID.x;
  for (uint d = lid; d < RADIX; d += LOCAL_SIZE)
    hist[d] = 0u;
  barrier();
  for (uint e = 0; e < ITEMS; e++) {
    uint i = tile * TILE + e * LOCAL_SIZE + lid, key, idx;
    if (i < p.n) {
      load(i, key, idx);
      atomicAdd(hist[digit_of(key)], 1u);
    }
  }
  barrier();
  for (uint d = lid; d < RADIX; d += LOCAL_SIZE)
    COUNTS(d * p.tiles + tile) = hist[d];
}

#elif defined(SCAN_CHUNKS) || defined(SCAN_SUMS)
// Exclusive scan of a chunk of TILE entries of the histograms in place, its total to the chunk totals
// (SCAN_CHUNKS); or of the chunk totals themselves, one chunk (SCAN_SUMS). An invocation takes ITEMS neighbouring entries.
void main() {
  uint lid = gl_LocalInvocationID.x, chunk = gl_WorkGroupID.x, base = chunk * TILE + lid * ITEMS;
#ifdef SCAN_CHUNKS
  uint len = RADIX * p.tiles;
#else
  uint len = (RADIX * p.tiles + TILE - 1) / TILE;
#endif
  uint v[ITEMS], own = 0u, total;
  for (uint e = 0; e < ITEMS; e++) {
#ifdef SCAN_CHUNKS
    v[e] = base + e < len ? COUNTS(base + e) : 0u;
#else
    v[e] = base + e < len ? SUMS(base + e) : 0u;
#endif
    own += v[e];
  }
  uint run = workgroup_exclusive(own, total);
  for (uint e = 0; e < ITEMS; e++) {
    if (base + e < len) {
#ifdef SCAN_CHUNKS
      COUNTS(base + e) = run;
#else
      SUMS(base + e) = run;
#endif
    }
    run += v[e];
  }
#ifdef SCAN_CHUNKS
  if (lid == 0)
    SUMS(chunk) = total;
#endif
}

#elif defined(SCATTER)
shared uint skeys[TILE];
shared uint sidx[TILE];
shared uint start[RADIX]; // where each digit's run starts in the sorted tile
shared uint dest[RADIX];  // ... and in the pass's output

void main() {
  uint lid = gl_LocalInvocationID.x, tile = gl_WorkGroupID.x, first = tile * TILE;
  uint valid = min(p.n - first, uint(TILE));
  for (uint d = lid; d < RADIX; d += LOCAL_SIZE)
    start[d] = 0u;
  barrier();
  // The tile in its order, past the end as keys above any digit (they stay last: the splits are stable).
  for (uint e = 0; e < ITEMS; e++) {
    uint j = e * LOCAL_SIZE + lid, key = 0xffffffffu, idx = 0u;
    if (j < valid) {
      load(first + j, key, idx);
      atomicAdd(start[digit_of(key)], 1u);
    }
    skeys[j] = key;
    sidx[j] = idx;
  }
  barrier();
  // Sorted by the digit, one bit at a time: each split keeps the order within its zeros and its ones.
  for (uint bit = 0; bit < 8; bit++) {
    uint k[ITEMS], ix[ITEMS], zeros = 0u, all_zeros;
    for (uint e = 0; e < ITEMS; e++) {
      k[e] = skeys[lid * ITEMS + e];
      ix[e] = sidx[lid * ITEMS + e];
      zeros += ((k[e] >> (p.shift + bit)) & 1u) == 0u ? 1u : 0u;
    }
    uint z = workgroup_exclusive(zeros, all_zeros), o = all_zeros + lid * ITEMS - z;
    for (uint e = 0; e < ITEMS; e++) {
      uint at = ((k[e] >> (p.shift + bit)) & 1u) == 0u ? z++ : o++;
      skeys[at] = k[e];
      sidx[at] = ix[e];
    }
    barrier();
  }
  // Each digit's run: its start in the tile (the histogram's exclusive scan) and in the output.
  uint count = lid < RADIX ? start[lid] : 0u, unused;
  uint at = workgroup_exclusive(count, unused);
  if (lid < RADIX) {
    uint slot = lid * p.tiles + tile;
    start[lid] = at;
    dest[lid] = COUNTS(slot) + SUMS(slot / TILE);
  }
  barrier();
  for (uint e = 0; e < ITEMS; e++) {
    uint j = e * LOCAL_SIZE + lid;
    if (j < valid) {
      uint key = skeys[j], d = digit_of(key), out_at = dest[d] + j - start[d];
#ifdef LAST
      values_[p.out_offset[0] + out_at] = x_[p.x_offset + sidx[j]];
      indices_[p.out_offset[1] + out_at] = int64_t(sidx[j]);
#else
      keys_out[out_at] = key;
      idx_out[out_at] = sidx[j];
#endif
    }
  }
}
#endif
