// INT8 GEMM on the DP4A pipe (VRAMFlow stages 00-02, seed 003): signed __dp4a probe, naive GEMM and the
// 64x64 tiled GEMM in six compile-time variants (K depth 32/64/128 x shared-memory stride 65/68 words).
// Thread mapping: naive: one thread per output C[m,n]; tiled: block = 64x64 outputs, 256 threads as 16x16,
// thread (ty,tx) owns C[m0 + ty + 16i, n0 + tx + 16j], i,j < 4 (16 int32 accumulators).
// Test: tests/gpu/gemm_s8_test.cpp; `warpstream gemm --check`. Time: `warpstream gemm --bench`.
#include <cstdint>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemm_s8.h"

namespace ws::kernels {
namespace {

__global__ void dp4a_probe_kernel(const int32_t* a, const int32_t* b, const int32_t* c, int32_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __dp4a(a[i], b[i], c[i]);
}

__global__ void gemm_s8_naive_kernel(const int8_t* __restrict__ a, const int8_t* __restrict__ b,
                                     int32_t* __restrict__ c, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  const int8_t* arow = a + size_t(row) * k;
  int32_t acc = 0;
  int p = 0;
  for (; p + 4 <= k; p += 4) {
    const uint32_t av = uint32_t(uint8_t(arow[p])) | uint32_t(uint8_t(arow[p + 1])) << 8 |
                        uint32_t(uint8_t(arow[p + 2])) << 16 | uint32_t(uint8_t(arow[p + 3])) << 24;
    const uint32_t bv = uint32_t(uint8_t(b[size_t(p) * n + col])) | uint32_t(uint8_t(b[size_t(p + 1) * n + col])) << 8 |
                        uint32_t(uint8_t(b[size_t(p + 2) * n + col])) << 16 |
                        uint32_t(uint8_t(b[size_t(p + 3) * n + col])) << 24;
    acc = __dp4a(int(av), int(bv), acc);
  }
  for (; p < k; ++p) acc += int32_t(arow[p]) * int32_t(b[size_t(p) * n + col]);
  c[size_t(row) * n + col] = acc;
}

// KD: int8 values of K per shared-memory stage; S: words per K-word row of the transposed tiles.
// Shared layout: As[w][row] = A_packed[m0 + row][k0/4 + w] (likewise Bs for Bt). Loading keeps the seed's
// mapping: each 512-word slab (64 rows x 8 words) is read by 256 threads as row = t/8 (+32), word = t%8.
template <int KD, int S>
__global__ void __launch_bounds__(256) gemm_s8_dp4a_tiled_kernel(const int32_t* __restrict__ a,
                                                                 const int32_t* __restrict__ bt,
                                                                 int32_t* __restrict__ c, int m, int n, int kg) {
  constexpr int KW = KD / 4;
  __shared__ int32_t as[KW * S];
  __shared__ int32_t bs[KW * S];
  const int t = threadIdx.x;
  const int tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  int32_t acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0;

  for (int kw0 = 0; kw0 < kg; kw0 += KW) {
#pragma unroll
    for (int slab = 0; slab < KW / 8; ++slab) {
#pragma unroll
      for (int pass = 0; pass < 2; ++pass) {
        const int row = pass * 32 + t / 8;
        const int w = slab * 8 + t % 8;
        const int gk = kw0 + w;
        const int gm = m0 + row, gn = n0 + row;
        as[w * S + row] = (gm < m && gk < kg) ? a[size_t(gm) * kg + gk] : 0;
        bs[w * S + row] = (gn < n && gk < kg) ? bt[size_t(gn) * kg + gk] : 0;
      }
    }
    __syncthreads();
#pragma unroll
    for (int w = 0; w < KW; ++w) {
      int32_t av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[w * S + ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = bs[w * S + tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __dp4a(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gm = m0 + ty + 16 * i;
    if (gm >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int gn = n0 + tx + 16 * j;
      if (gn < n) c[size_t(gm) * n + gn] = acc[i][j];
    }
  }
}

__global__ void count_mismatches_kernel(const int32_t* x, const int32_t* y, int64_t count,
                                        unsigned long long* mismatches, long long* first) {
  unsigned long long local = 0;
  long long local_first = 0x7fffffffffffffffll;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    if (x[i] != y[i]) {
      ++local;
      if (i < local_first) local_first = i;
    }
  }
  if (local) {
    atomicAdd(mismatches, local);
    atomicMin(first, local_first);
  }
}

template <int KD, int S>
Status launch_tiled(const int32_t* a, const int32_t* bt, int32_t* c, int m, int n, int k, cudaStream_t stream) {
  dim3 grid((n + 63) / 64, (m + 63) / 64);
  gemm_s8_dp4a_tiled_kernel<KD, S><<<grid, 256, 0, stream>>>(a, bt, c, m, n, int((k + 3) / 4));
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace

Status dp4a_probe(const int32_t* a, const int32_t* b, const int32_t* c, int32_t* out, int n, cudaStream_t stream) {
  if (n <= 0) return invalid_argument("dp4a_probe: n = " + std::to_string(n) + " must be >= 1");
  dp4a_probe_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, out, n);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status gemm_s8s8s32_naive(const int8_t* a, const int8_t* b, int32_t* c, int m, int n, int k, cudaStream_t stream) {
  if (m < 1 || n < 1 || k < 1) return invalid_argument("gemm_s8s8s32_naive: M, N, K must be >= 1");
  dim3 block(16, 16);
  dim3 grid((n + 15) / 16, (m + 15) / 16);
  gemm_s8_naive_kernel<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status gemm_s8s8s32_dp4a_tiled(int k_depth, int smem_stride, const int32_t* a_packed, const int32_t* bt_packed,
                               int32_t* c, int m, int n, int k, cudaStream_t stream) {
  if (m < 1 || n < 1 || k < 1) return invalid_argument("gemm_s8s8s32_dp4a_tiled: M, N, K must be >= 1");
#define WS_TILED_CASE(KD, S) \
  if (k_depth == KD && smem_stride == S) return launch_tiled<KD, S>(a_packed, bt_packed, c, m, n, k, stream);
  WS_TILED_CASE(32, 65) WS_TILED_CASE(64, 65) WS_TILED_CASE(128, 65)
  WS_TILED_CASE(32, 68) WS_TILED_CASE(64, 68) WS_TILED_CASE(128, 68)
#undef WS_TILED_CASE
  return invalid_argument("gemm_s8s8s32_dp4a_tiled: no variant with K depth " + std::to_string(k_depth) +
                          " and stride " + std::to_string(smem_stride) + " (depths 32/64/128, strides 65/68)");
}

Status count_mismatches_s32(const int32_t* x, const int32_t* y, int64_t count, unsigned long long* mismatches,
                            long long* first_index, cudaStream_t stream) {
  WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(mismatches, 0, sizeof(unsigned long long), stream));
  WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_index, 0x7f, sizeof(long long), stream));
  if (count <= 0) return Status::ok();
  int blocks = int(std::min<int64_t>((count + 255) / 256, 4096));
  count_mismatches_kernel<<<blocks, 256, 0, stream>>>(x, y, count, mismatches, first_index);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
