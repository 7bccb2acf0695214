#version 450
// radix.comp: one pass of a least-significant-digit radix sort of 32-bit keys, 8 bits a pass, in four
// kernels the host selects: COUNT (each tile's digit histogram), SCAN_CHUNKS and SCAN_SUMS (the
// histograms' exclusive scan, digit-major, so each tile learns where its run of each digit starts), and
// SCATTER (a tile sorted by the digit in shared memory, stably, then written to its runs). The sort keeps
// each key's position, so equal keys keep their order: the sort is stable. The first pass reads the user's
// values and makes keys of them (FIRST); the last writes the sorted values and int64 positions (LAST).
// The host defines TX (the values' storage type), KEY_FLOAT or KEY_INT, ITEMS (elements an invocation),
// SUBGROUP_SCAN where the adapter has subgroup arithmetic, and MULTISPLIT with SUBGROUPS (subgroups a
// workgroup) where it has subgroup ballots.
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

// The value behind a key: key_of inverted, so the last pass reads no values back from x, but for the keys
// of zero and of NaN, which stand for several bit patterns (-0.0 and +0.0; every NaN).
TX value_of(uint key, uint idx) {
  uint k = key ^ p.flip;
#ifdef KEY_FLOAT
  if (k == 0x80000000u || k == 0xffffffffu)
    return x_[p.x_offset + idx];
  return TX(uintBitsToFloat((k & 0x80000000u) != 0u ? k & 0x7fffffffu : ~k));
#else
  return TX(int(k ^ 0x80000000u));
#endif
}

uint digit_of(uint key) { return (key >> p.shift) & (RADIX - 1u); }

// The key of element i of the pass's input.
uint key_at(uint i) {
#ifdef FIRST
  return key_of(x_[p.x_offset + i]);
#else
  return keys_in[i];
#endif
}

// Element i of the pass's input: its key and position.
void load(uint i, out uint key, out uint idx) {
  key = key_at(i);
#ifdef FIRST
  idx = i;
#else
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
  uint keys[ITEMS];
  [[unroll]] for (uint e = 0; e < ITEMS; e++) { // all loads first, then the atomics
    uint i = tile * TILE + e * LOCAL_SIZE + lid;
    keys[e] = i < p.n ? key_at(i) : 0u;
  }
  [[unroll]] for (uint e = 0; e < ITEMS; e++)
    if (tile * TILE + e * LOCAL_SIZE + lid < p.n)
      atomicAdd(hist[digit_of(keys[e])], 1u);
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

#ifdef MULTISPLIT
#extension GL_KHR_shader_subgroup_ballot : require
// Each subgroup's count of each digit, two subgroups a word (16 bits each: a tile holds at most 2^16
// elements), [subgroup / 2][digit]; then each subgroup's first place in its digit's run of the tile.
shared uint sg_count[(SUBGROUPS + 1) / 2 * RADIX];

uint half_of(uint word, uint sg) { return (word >> (16u * (sg & 1u))) & 0xffffu; }

// The tile sorted by the digit in shared memory, stably, in one pass over it (a warp-level multisplit):
// a subgroup takes a run of the tile, gl_SubgroupSize elements at a time; the lanes holding the same digit
// find each other from eight ballots of its bits, so each knows its rank among them and one of them adds
// their count to the subgroup's. The subgroups' counts, scanned per digit, and the digits' starts then
// place every element. start[] ends as each digit's start in the tile.
void sort_tile(uint first, uint valid) {
  uint lid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  for (uint w = lid; w < (SUBGROUPS + 1) / 2 * RADIX; w += LOCAL_SIZE)
    sg_count[w] = 0u;
  barrier();
  uint k[ITEMS], ix[ITEMS], rank[ITEMS];
  uint word_base = (sg >> 1) * RADIX, run = sg * gl_SubgroupSize * ITEMS;
  [[unroll]] for (uint e = 0; e < ITEMS; e++) { // all loads first: the ballots below wait on none of them
    uint j = run + e * gl_SubgroupSize + lane;
    k[e] = 0xffffffffu, ix[e] = 0u;
    if (j < valid)
      load(first + j, k[e], ix[e]);
  }
  [[unroll]] for (uint e = 0; e < ITEMS; e++) {
    bool ok = run + e * gl_SubgroupSize + lane < valid;
    uint d = digit_of(k[e]);
    uvec4 peers = subgroupBallot(ok);
    [[unroll]] for (uint b = 0; b < 8u; b++) {
      bool bit = ((d >> b) & 1u) != 0u;
      uvec4 m = subgroupBallot(bit);
      peers &= bit ? m : ~m;
    }
    uint below = subgroupBallotExclusiveBitCount(peers);
    uint base = ok ? half_of(sg_count[word_base + d], sg) : 0u;
    subgroupBarrier(); // every lane has read the count before one of them adds to it
    if (ok && below == 0u)
      atomicAdd(sg_count[word_base + d], subgroupBallotBitCount(peers) << (16u * (sg & 1u)));
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    rank[e] = ok ? base + below : 0xffffffffu;
  }
  barrier();
  uint total = 0u, unused;
  if (lid < RADIX)
    for (uint w = lid; w < (SUBGROUPS + 1) / 2 * RADIX; w += RADIX) { // a digit's column: exclusive scan
      uint c = sg_count[w], lo = c & 0xffffu;
      sg_count[w] = total | ((total + lo) << 16);
      total += lo + (c >> 16);
    }
  uint at = workgroup_exclusive(total, unused);
  if (lid < RADIX)
    start[lid] = at;
  barrier();
  for (uint e = 0; e < ITEMS; e++) {
    if (rank[e] != 0xffffffffu) {
      uint d = digit_of(k[e]), to = start[d] + half_of(sg_count[word_base + d], sg) + rank[e];
      skeys[to] = k[e];
      sidx[to] = ix[e];
    }
  }
  barrier();
}
#else
// The tile sorted by the digit in shared memory, stably: loaded in its order, then eight 1-bit splits,
// each keeping the order within its zeros and its ones. start[] ends as each digit's start in the tile.
void sort_tile(uint first, uint valid) {
  uint lid = gl_LocalInvocationID.x;
  for (uint d = lid; d < RADIX; d += LOCAL_SIZE)
    start[d] = 0u;
  barrier();
  // past the end: keys above any digit (they stay last: the splits are stable)
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
  uint count = lid < RADIX ? start[lid] : 0u, unused;
  uint at = workgroup_exclusive(count, unused);
  if (lid < RADIX)
    start[lid] = at;
  barrier();
}
#endif

void main() {
  uint lid = gl_LocalInvocationID.x, tile = gl_WorkGroupID.x, first = tile * TILE;
  uint valid = min(p.n - first, uint(TILE));
  sort_tile(first, valid);
  // Each digit's run in the output: where the scanned histograms put it.
  if (lid < RADIX) {
    uint slot = lid * p.tiles + tile;
    dest[lid] = COUNTS(slot) + SUMS(slot / TILE);
  }
  barrier();
  for (uint e = 0; e < ITEMS; e++) {
    uint j = e * LOCAL_SIZE + lid;
    if (j < valid) {
      uint key = skeys[j], d = digit_of(key), out_at = dest[d] + j - start[d];
#ifdef LAST
      values_[p.out_offset[0] + out_at] = value_of(key, sidx[j]);
      indices_[p.out_offset[1] + out_at] = int64_t(sidx[j]);
#else
      keys_out[out_at] = key;
      idx_out[out_at] = sidx[j];
#endif
    }
  }
}
#endif
