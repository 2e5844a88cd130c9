#pragma once
/// \file smem_tile.cuh
/// Device helpers shared by the fused MBConv kernels (mbconv.cu: expand → depthwise → project per cluster;
/// expand_depthwise.cu: expand → depthwise per row band): a 16×16 wmma tile of a product of two fp16 row-major
/// matrices in shared memory, and a 16-byte load of eight fp16 weights with a zero tail. Defined for device code of
/// compute capability 7.0+ only (wmma); call them from kernel bodies under the same guard.
/// Test: through their kernels, ws_gpu_tests --gtest_filter='ConvKernels.MbConv*:ConvKernels.ExpandDepthwise*'.
#include <cuda_fp16.h>
#include <mma.h>

#include <cstring>

namespace ws::kernels::device {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
/// One 16×16 fp32 tile of A · B, both fp16 row-major in shared memory: A rows [16][lda] from `a`, B [k][ldb] from `b`
/// (column offset already applied), over k in [0, k_len) in 16-deep wmma steps, in k order (the order our pointwise
/// kernel sums them). lda, ldb: multiples of 8; a, b: 32-byte aligned; k_len: a multiple of 16.
__device__ __forceinline__ void smem_tile_mma(nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>& acc, const __half* a,
                                              int lda, const __half* b, int ldb, int k_len) {
  using namespace nvcuda;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < k_len; k += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf;
    wmma::load_matrix_sync(af, a + k, lda);
    wmma::load_matrix_sync(bf, b + size_t(k) * ldb, ldb);
    wmma::mma_sync(acc, af, bf, acc);
  }
}

/// Eight fp16 values row[col .. col + 8) as one 16-byte vector, zero past `len` (one 16-byte load when `vec` and the
/// whole run is in range; `vec`: the row pointer and col are 16-byte aligned). For build-time constants (read through
/// the non-coherent cache).
__device__ __forceinline__ uint4 load8_or_zero(const __half* __restrict__ row, int col, int len, bool vec) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (vec && col + 8 <= len) return __ldg(reinterpret_cast<const uint4*>(row + col));
  __half t[8];
  for (int j = 0; j < 8; ++j) t[j] = col + j < len ? row[col + j] : __float2half_rn(0.0f);
  memcpy(&v, t, 16);
  return v;
}
#endif

}  // namespace ws::kernels::device
