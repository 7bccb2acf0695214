#version 450
// matmul_coop2.comp: float16 products on tensor cores through VK_NV_cooperative_matrix2, accumulating in
// float32. The whole workgroup owns one BM x BN matrix of sums (workgroup scope), and each BK-deep slice of
// a and b is loaded straight from its buffer through a tensor layout: the driver stages it through shared
// memory itself, with the asynchronous copies that Vulkan gives a shader no other way to use. Past the
// edges the layouts clamp to zero, so any M, N and K work.
//
// Each operand is read through its strides, one of which must be 1: A_K_FAST says a is dense along k
// (else along m, read through a transposing view), B_N_FAST that b is dense along n (else along k).
// The epilogue (alpha, bias, relu) runs per element of the sums, and the tile leaves through a layout of
// out, which is dense: clamped, or where ALIGNED_OUT allows and the tile lies inside out, unclamped. A fused
// EPILOGUE (matmul.glsl) of one op is made so too: its one result (FUSED_RESULT, a RESULT0_TYPE tile) per
// element of the sums, and the product before it where it is kept (MM_KEPT).
#include "matmul.glsl"
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require

#define SUMS coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define OUT_TILE coopmat<TO, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

#define CLAMPED tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define UNCLAMPED tensorLayoutNV<2>

// The layouts la of a ([M, K]) and lb of b ([K, N]) run along their dense direction. With ALIGNED the host
// promises rows of a multiple of 8 halves (16 bytes), which the mask tells the compiler.
#ifdef ALIGNED
#define HINT(s) ((s) & ~7u)
#else
#define HINT(s) (s)
#endif
#ifdef A_K_FAST
#define SET_A la = setTensorLayoutDimensionNV(la, p.M, p.K), la = setTensorLayoutStrideNV(la, HINT(p.stride[0]), 1)
#define LOAD_A(m, k0) coopMatLoadTensorNV(m, a_, bt.a0, sliceTensorLayoutNV(la, m0, BM, k0, BK))
#else
#define SET_A la = setTensorLayoutDimensionNV(la, p.K, p.M), la = setTensorLayoutStrideNV(la, HINT(p.stride[1]), 1)
#define LOAD_A(m, k0) coopMatLoadTensorNV(m, a_, bt.a0, sliceTensorLayoutNV(la, k0, BK, m0, BM), transpose)
#endif
#ifdef B_N_FAST
#define SET_B lb = setTensorLayoutDimensionNV(lb, p.K, p.N), lb = setTensorLayoutStrideNV(lb, HINT(p.stride[2]), 1)
#define LOAD_B(m, k0) coopMatLoadTensorNV(m, b_, bt.b0, sliceTensorLayoutNV(lb, k0, BK, n0, BN))
#else
#define SET_B lb = setTensorLayoutDimensionNV(lb, p.N, p.K), lb = setTensorLayoutStrideNV(lb, HINT(p.stride[3]), 1)
#define LOAD_B(m, k0) coopMatLoadTensorNV(m, b_, bt.b0, sliceTensorLayoutNV(lb, n0, BN, k0, BK), transpose)
#endif

// sums += the slices of a and b from k = FROM to TO, through the layouts la and lb, STEP slices a step.
#define MULTIPLY(FROM, TO, STEP) \
  for (uint k0 = FROM; k0 < TO; k0 += STEP * BK) \
    [[unroll]] for (uint u = 0; u < STEP; u++) { \
      coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> a; \
      coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> b; \
      LOAD_A(a, k0 + u * BK); \
      LOAD_B(b, k0 + u * BK); \
      sums = coopMatMulAdd(a, b, sums); \
    }

#ifdef EPILOGUE
// The fused expression at (r, c) of the tile at (m0, n0) of matrix z: the tensors it reads are read at a row
// and column clamped inside the matrix (the store drops what lies past the edges).
float result(const in uint32_t r, const in uint32_t c, const in float sum, const in uint m0, const in uint n0,
             const in uint z, const in uint zo, const in uint zi) {
  Batch bt = Batch(z, zo, zi, 0, 0, 0);
  FUSED_DECLARE
  uint idx[MAX_OPS];
  const uint k = 0;
  locate(bt, min(m0 + r, p.M - 1), min(n0 + c, p.N - 1), idx);
  FUSED_LOAD(k)
  FUSED_VALUES(k)
  return float(FUSED_RESULT);
}
#else
// finish() for the element at (r, c) of the tile at (m0, n0).
float epilogue(const in uint32_t r, const in uint32_t c, const in float sum, const in uint m0, const in uint n0,
               const in uint c0) {
  float bias = 0.0;
#ifdef BIAS
  uint gm = min(m0 + r, p.M - 1), gn = min(n0 + c, p.N - 1); // the store drops what lies past the edges
  bias = decode(p.beta) * float(c_[c0 + gm * p.stride[4] + gn * p.stride[5]]);
#endif
  return finish(sum, bias);
}
#endif

void main() {
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  Batch bt = batch_of_workgroup();
  SUMS sums = SUMS(0.0);
  tensorViewNV<2, false, 1, 0> transpose = createTensorViewNV(2, false, 1, 0);
  // A tile inside out reads the slices of its first kin columns through unclamped layouts (without bounds
  // checks the driver copies them faster), UNROLL a step; the rest, and tiles on the edges, clamp.
  uint kin = 0;
#ifdef ALIGNED
  if (m0 + BM <= p.M && n0 + BN <= p.N && p.K >= UNROLL * BK) {
    kin = p.K / (UNROLL * BK) * (UNROLL * BK);
    UNCLAMPED la = createTensorLayoutNV(2), lb = createTensorLayoutNV(2);
    SET_A, SET_B;
    MULTIPLY(0, kin, UNROLL)
  }
#endif
  if (kin < p.K) {
    CLAMPED la = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    CLAMPED lb = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    SET_A, SET_B;
    MULTIPLY(kin, p.K, 1)
  }
  // Every tile leaves through a layout of out's shape: with rows and offset multiples of 8 elements (the
  // host's promise, the masks tell the compiler), a tile inside out through an unclamped one, two columns a
  // store instead of one (H100, 2048^3: 0.070 -> 0.063 ms); else a clamped one.
  uint o0 = p.offset[0] + bt.z * p.M * p.N;
  CLAMPED edge = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  edge = setTensorLayoutDimensionNV(edge, p.M, p.N), edge = setTensorLayoutStrideNV(edge, p.N, 1);
#ifdef ALIGNED_OUT
  bool inside = m0 + BM <= p.M && n0 + BN <= p.N;
  UNCLAMPED whole = createTensorLayoutNV(2);
  whole = setTensorLayoutDimensionNV(whole, p.M, p.N), whole = setTensorLayoutStrideNV(whole, p.N & ~7u, 1);
#define STORE_TILE(tile, buf) \
  if (inside) \
    coopMatStoreTensorNV(tile, buf, o0 & ~7u, sliceTensorLayoutNV(whole, m0, BM, n0, BN)); \
  else \
    coopMatStoreTensorNV(tile, buf, o0, sliceTensorLayoutNV(edge, m0, BM, n0, BN));
#else
#define STORE_TILE(tile, buf) coopMatStoreTensorNV(tile, buf, o0, sliceTensorLayoutNV(edge, m0, BM, n0, BN));
#endif
#ifdef EPILOGUE
#ifdef MM_KEPT
  OUT_TILE product = OUT_TILE(sums * uintBitsToFloat(p.alpha)); // as a stored product: matmul.glsl's product()
  STORE_TILE(product, MM_KEPT)
#endif
  coopMatPerElementNV(sums, sums, result, m0, n0, bt.z, bt.zo, bt.zi);
  coopmat<RESULT0_TYPE, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> o =
      coopmat<RESULT0_TYPE, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(sums);
  STORE_TILE(o, b0_)
#else
  coopMatPerElementNV(sums, sums, epilogue, m0, n0, bt.c0);
  OUT_TILE o = OUT_TILE(sums);
  STORE_TILE(o, out_)
#endif
}
