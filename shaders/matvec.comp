#version 450
// matvec.comp: products with one row (M = 1) or one column (N = 1): out = alpha * (matrix @ vector) +
// beta * bias, then relu, where the matrix is b seen as [n, k] (M1) or a as [m, k] (N1), read through its
// strides. A workgroup computes ROWS outputs with KS invocations each, which sum every KS-th k; the KS
// partial sums then meet in shared memory. The host picks ROWS = 8, KS = 32 when the matrix is dense
// along k (a subgroup reads one row's consecutive elements), else ROWS = 32, KS = 8 (it reads one k of
// consecutive rows). The push constants, batch walk and epilogue are matmul.glsl's.
#include "matmul.glsl"

#if ROWS * KS != LOCAL_SIZE
#error "a workgroup is ROWS x KS invocations"
#endif

shared ACC partial[LOCAL_SIZE];

void main() {
  Batch bt = batch_of_workgroup();
#if ROWS == 8
  uint r = gl_LocalInvocationID.x / KS, kl = gl_LocalInvocationID.x % KS;
#else
  uint r = gl_LocalInvocationID.x % ROWS, kl = gl_LocalInvocationID.x / ROWS;
#endif
#ifdef MV_M1
  uint i = gl_WorkGroupID.x * ROWS + r, rows = p.N;
  uint mat = bt.b0 + i * p.stride[3], mat_k = p.stride[2], vec = bt.a0, vec_k = p.stride[1];
#else
  uint i = gl_WorkGroupID.y * ROWS + r, rows = p.M;
  uint mat = bt.a0 + i * p.stride[0], mat_k = p.stride[1], vec = bt.b0, vec_k = p.stride[2];
#endif
  ACC sum = ACC(0);
  if (i < rows)
    for (uint k = kl; k < p.K; k += KS) {
#ifdef MV_M1
      sum = fma(ACC(b_[mat + k * mat_k]), ACC(a_[vec + k * vec_k]), sum);
#else
      sum = fma(ACC(a_[mat + k * mat_k]), ACC(b_[vec + k * vec_k]), sum);
#endif
    }
  partial[gl_LocalInvocationID.x] = sum;
  barrier();
  if (kl == 0 && i < rows) {
    ACC total = ACC(0);
    for (uint j = 0; j < KS; j++)
#if ROWS == 8
      total += partial[r * KS + j];
#else
      total += partial[j * ROWS + r];
#endif
#ifdef MV_M1
    store(bt, 0, i, total);
#else
    store(bt, i, 0, total);
#endif
  }
}
