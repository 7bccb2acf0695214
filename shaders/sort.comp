#version 450
// sort.comp: bitonic sort of rows by (value, position), which makes the order total and so stable:
// ascending with NaN last, or (DESCENDING) descending with NaN first, equal values by position, as
// PyTorch's stable sort. Rows are padded to a power of two with entries that sort after everything. Modes,
// picked by sort.c:
//   LOCAL: a workgroup loads a block of BLOCK entries of a row, sorts it in shared memory and writes its
//     first p.keep entries: the whole block (to a temp row, for the global merges; the blocks alternate in
//     direction, GLOBAL_DIR, as the bitonic network has them), or the best p.keep (top-k: blocks' winners
//     are sorted again until one block holds them all);
//   MERGE_GLOBAL: one compare-exchange a pair of a temp row, at distance p.j of stage p.k;
//   MERGE_GLOBAL2: steps p.j and p.j / 2 at once, an invocation taking the four entries they join (half
//     the passes over memory);
//   MERGE_LOCAL: a workgroup finishes stage p.k in shared memory once p.j fits a block.
// Entries come from the user's tensor (strided, LOAD) or a temp row (IN_TEMP: C values, uint positions),
// and go to a temp row or (FINAL) the user's values and int64 indices, the first p.m of a row only.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define MAX_RANK 4
#define NONE 0xffffffffu // the position of a padding entry

layout(push_constant) uniform Push {
  uint nout, n;                 // rows; entries of an input row
  uint in_row, out_row;         // elements between temp rows
  uint keep, m;                 // entries a block writes (LOCAL); entries of an output row (FINAL)
  uint nblocks;                 // blocks of a row (LOCAL, MERGE_LOCAL)
  uint k, j;                    // the stage and step of the bitonic network (MERGE_*)
  uint krank;
  uint rstride_in, rstride_out; // elements between neighbours of a user row
  uint in_offset, out_offset, idx_offset;
  uint kshape[MAX_RANK];
  uint kstride[2 * MAX_RANK];   // elements: input, then output
} p;

#ifdef FINAL
layout(std430, binding = 0) writeonly buffer OutV { TO ov[]; };
layout(std430, binding = 1) writeonly buffer OutI { int64_t oi[]; };
#else
layout(std430, binding = 0) buffer OutV { C ov[]; };
layout(std430, binding = 1) buffer OutI { uint oi[]; };
#endif
#ifdef HAS_IN
#ifdef IN_TEMP
layout(std430, binding = 2) readonly buffer InV { C iv[]; };
layout(std430, binding = 3) readonly buffer InI { uint ii[]; };
#else
layout(std430, binding = 2) readonly buffer InV { TI iv[]; };
#endif
#endif

#if defined(C_FLOAT) || defined(C_FLOAT64)
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) false
#endif

// Whether entry (a, ia) sorts before entry (b, ib).
bool before(C a, uint ia, C b, uint ib) {
  if (ia == NONE || ib == NONE)
    return ib == NONE && ia != NONE;
  bool na = IS_NAN(a), nb = IS_NAN(b);
  if (na != nb)
#ifdef DESCENDING
    return na;
#else
    return nb;
#endif
  if (!na && a != b)
#ifdef DESCENDING
    return a > b;
#else
    return a < b;
#endif
  return ia < ib;
}

uvec2 kept_at(uint o) {
  uvec2 at = uvec2(p.in_offset, p.out_offset);
  for (int d = int(p.krank) - 1; d >= 0; d--) {
    uint c = o % p.kshape[d];
    o /= p.kshape[d];
    at += c * uvec2(p.kstride[d], p.kstride[MAX_RANK + d]);
  }
  return at;
}

// Writes entry e of row `row` (value v, position i).
void put(uint row, uint e, C v, uint i) {
#ifdef FINAL
  if (e >= p.m)
    return;
  uint at = kept_at(row).y + e * p.rstride_out;
  ov[at] = STORE(v);
  oi[at - p.out_offset + p.idx_offset] = int64_t(i);
#else
  ov[row * p.out_row + e] = v;
  oi[row * p.out_row + e] = i;
#endif
}

#if defined(MERGE_GLOBAL) || defined(MERGE_GLOBAL2)
// Puts entries a and b in the order of the network's direction (asc: a before b).
void order(inout C va, inout uint ia, inout C vb, inout uint ib, bool asc) {
  if (asc ? before(vb, ib, va, ia) : before(va, ia, vb, ib)) {
    C v = va;
    va = vb, vb = v;
    uint i = ia;
    ia = ib, ib = i;
  }
}
#endif

#ifdef MERGE_GLOBAL
void main() {
  uint q = linear_id(), half_row = p.out_row / 2u;
  if (q >= p.nout * half_row)
    return;
  uint row = q / half_row, qq = q % half_row;
  uint i = (qq / p.j) * 2u * p.j + qq % p.j;
  uint a = row * p.out_row + i, b = a + p.j;
  C va = ov[a], vb = ov[b];
  uint ia = oi[a], ib = oi[b];
  order(va, ia, vb, ib, (i & p.k) == 0u);
  ov[a] = va, oi[a] = ia;
  ov[b] = vb, oi[b] = ib;
}

#elif defined(MERGE_GLOBAL2)
void main() {
  uint q = linear_id(), quarter = p.out_row / 4u, h = p.j / 2u;
  if (q >= p.nout * quarter)
    return;
  uint row = q / quarter, qq = q % quarter;
  uint i = (qq / h) * 4u * h + qq % h; // bits j and h clear: the four entries are i + {0, h, j, j + h}
  uint at[4] = uint[4](i, i + h, i + p.j, i + p.j + h);
  C v[4];
  uint ix[4];
  [[unroll]] for (uint e = 0; e < 4u; e++)
    v[e] = ov[row * p.out_row + at[e]], ix[e] = oi[row * p.out_row + at[e]];
  bool asc = (i & p.k) == 0u; // the same for all four: they differ below bit k
  order(v[0], ix[0], v[2], ix[2], asc); // step j
  order(v[1], ix[1], v[3], ix[3], asc);
  order(v[0], ix[0], v[1], ix[1], asc); // step h
  order(v[2], ix[2], v[3], ix[3], asc);
  [[unroll]] for (uint e = 0; e < 4u; e++)
    ov[row * p.out_row + at[e]] = v[e], oi[row * p.out_row + at[e]] = ix[e];
}

#else
shared C sv[BLOCK];
shared uint si[BLOCK];

// One step of the network over the block: pairs at distance jj, directions from stage kk of the entries'
// positions dir_base + i.
void step(uint kk, uint jj, uint dir_base) {
  for (uint q = gl_LocalInvocationID.x; q < BLOCK / 2u; q += uint(LOCAL_SIZE)) {
    uint i = (q / jj) * 2u * jj + q % jj, l = i + jj;
    bool asc = ((dir_base + i) & kk) == 0u;
    C va = sv[i], vb = sv[l];
    uint ia = si[i], ib = si[l];
    if (asc ? before(vb, ib, va, ia) : before(va, ia, vb, ib)) {
      sv[i] = vb, si[i] = ib;
      sv[l] = va, si[l] = ia;
    }
  }
  barrier();
}

void main() {
  uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (g >= p.nout * p.nblocks) // a whole workgroup leaves, so the barriers stay uniform
    return;
  uint row = g / p.nblocks, blk = g % p.nblocks, first = blk * BLOCK;
  for (uint e = gl_LocalInvocationID.x; e < BLOCK; e += uint(LOCAL_SIZE)) {
    C v = C(0);
    uint i = NONE;
#if defined(MERGE_LOCAL) && !defined(HAS_IN)
    v = ov[row * p.out_row + first + e], i = oi[row * p.out_row + first + e];
#elif defined(MERGE_LOCAL) || defined(IN_TEMP)
    if (first + e < p.n)
      v = iv[row * p.in_row + first + e], i = ii[row * p.in_row + first + e];
#else
    if (first + e < p.n)
      v = LOAD(iv[kept_at(row).x + (first + e) * p.rstride_in]), i = first + e;
#endif
    sv[e] = v, si[e] = i;
  }
  barrier();
#ifdef MERGE_LOCAL
  for (uint jj = BLOCK / 2u; jj > 0u; jj >>= 1)
    step(p.k, jj, first);
#else
#ifdef GLOBAL_DIR
  uint dir_base = first;
#else
  uint dir_base = 0u;
#endif
  for (uint kk = 2u; kk <= BLOCK; kk <<= 1)
    for (uint jj = kk >> 1; jj > 0u; jj >>= 1)
      step(kk, jj, dir_base);
#endif
  for (uint e = gl_LocalInvocationID.x; e < p.keep; e += uint(LOCAL_SIZE))
    put(row, blk * p.keep + e, sv[e], si[e]);
}
#endif
