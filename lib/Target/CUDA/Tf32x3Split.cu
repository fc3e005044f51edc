//===- Tf32x3Split.cu - operands of an fp32-accurate product on TF32 cores ===//
//
// `--precision tf32x3` runs an fp32 GEMM C = A * B on the TF32 tensor
// cores over split operands
//
//   A' = [lo(A) | hi(A)],  B' = [hi(B); lo(B)]:
//   C  = A' B'  +  hi(A) hi(B)   (= lo hi + hi lo + hi hi),
//
// two cuBLASLt TF32 calls (the second accumulating), where hi(x) is x
// rounded to TF32 (10 stored mantissa bits) and lo(x) is x - hi(x) (exact
// in fp32) rounded to TF32. The dropped lo(A) lo(B) term and the rounding
// of lo are about 2^-22 of each product, a few times fp32's own rounding,
// so the result stays within fp32 tolerances at tensor-core speed
// (docs/design/0012-tf32x3-precision.md).
//
// mcc_tf32x3_split writes the two parts of one operand. The CUDA runtime
// shim embeds this file as a fatbin (built by nvcc) and launches its kernels
// through the driver; mcc_add_bias_rows and mcc_add_bias_gelu_rows, the
// epilogues of a product that plain sgemm runs, live here too, as the
// shim's other hand-written kernels.
//
//===----------------------------------------------------------------------===//

#include <cstdint>

__device__ float roundToTf32(float x) {
  uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
}

/// Splits a (batch x rows x cols) strided fp32 matrix into dst: element
/// (b, r, c) goes to dst[b * dstBatch + r * dstRow + c + hi] as hi(x) and
/// to dst[... + lo] as lo(x). One block per (batch, row); the block's
/// threads stride over the columns.
extern "C" __global__ void
mcc_tf32x3_split(const float *__restrict__ src, int64_t rows, int64_t cols,
                 int64_t srcRow, int64_t srcBatch, float *__restrict__ dst,
                 int64_t dstRow, int64_t dstBatch, int64_t hi, int64_t lo) {
  int64_t b = blockIdx.x / rows, r = blockIdx.x % rows;
  const float *in = src + b * srcBatch + r * srcRow;
  float *out = dst + b * dstBatch + r * dstRow;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float x = in[c];
    float high = roundToTf32(x);
    // Rounded too, rather than left to the tensor cores, which drop the
    // bits TF32 does not keep: half the error on the lo products.
    float low = roundToTf32(x - high);
    // inf - inf: keep infinities (and NaNs) in the high part alone.
    if (!isfinite(low))
      low = 0.0f;
    out[c + hi] = high;
    out[c + lo] = low;
  }
}

/// C[r, c] += bias[c] over an m x n row-major C at leading dimension ldc:
/// a product's bias when plain sgemm (which has no epilogue) runs it. One
/// block per row.
extern "C" __global__ void mcc_add_bias_rows(float *__restrict__ c, int64_t n,
                                             int64_t ldc,
                                             const float *__restrict__ bias) {
  float *row = c + blockIdx.x * ldc;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    row[j] += bias[j];
}

/// C[r, c] = gelu(C[r, c] + bias[c]), GELU's tanh form
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): the epilogue of a
/// product that plain sgemm runs when its output feeds GPT-2's GELU.
extern "C" __global__ void
mcc_add_bias_gelu_rows(float *__restrict__ c, int64_t n, int64_t ldc,
                       const float *__restrict__ bias) {
  float *row = c + blockIdx.x * ldc;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    float x = row[j] + bias[j];
    row[j] = 0.5f * x *
             (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
}
