// Few-row GEMM for classifier heads at batch 1: y[i, j] = alpha · Σ_k a[i, k] · w[j, k] + beta · c[i, j],
// i < m ≤ kGemvMaxRows, w stored one row per output column ([n, k], row-major), float32 or fp16 storage, fp32 sums;
// y in the storage type, or float32 (y_float32: an engine output's fp16 → fp32 cast folded in).
// Thread mapping: one warp per output column j (8 warps, 256 threads per block, grid ceil(n / 8)); lane l reads the
// 16-byte vectors l, l + 32, ... of w's row j (each weight byte once, coalesced 512-byte warp loads, four vectors in
// flight per lane) and the same vectors of every row of a (4–8 KB, L1/L2 resident); a butterfly shuffle sums the 32
// partials and lane 0 writes the m outputs. Rows whose length or base is not 16-byte aligned take the scalar loop.
// Bytes floor: n·k·elem (ResNet-50's fc, fp16: 4.1 MB, ~1.2 µs at H100 DRAM bandwidth) — no reuse to exploit.
// Test: tests/gpu/gemv_test.cpp (ws_gpu_tests --gtest_filter='Gemv*': against a double-precision host reference
// with poisoned outputs, and the engine's Gemm/MatMul against the CPU executor). Time: the engine times it against
// cuBLASLt's heuristic candidates at build (tactic "ws gemv"), the lanes' per-layer profile (`bench --profile-layers`).
#include <cuda_fp16.h>

#include <string>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemv.h"
#include "kernels/pdl.cuh"

namespace ws::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kMaxRows = static_cast<int>(kGemvMaxRows);

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

// Dot product of two 16-byte vectors, accumulated in fp32.
__device__ __forceinline__ float dot16(const uint4& a, const uint4& b, float) {
  return __uint_as_float(a.x) * __uint_as_float(b.x) + __uint_as_float(a.y) * __uint_as_float(b.y) +
         __uint_as_float(a.z) * __uint_as_float(b.z) + __uint_as_float(a.w) * __uint_as_float(b.w);
}
__device__ __forceinline__ float dot16(const uint4& a, const uint4& b, __half) {
  const __half2* ha = reinterpret_cast<const __half2*>(&a);
  const __half2* hb = reinterpret_cast<const __half2*>(&b);
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float2 fa = __half22float2(ha[q]), fb = __half22float2(hb[q]);
    s = fmaf(fa.x, fb.x, s);
    s = fmaf(fa.y, fb.y, s);
  }
  return s;
}

template <typename T, typename OutT, bool kVector>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_rows_kernel(const T* __restrict__ a, const T* __restrict__ w, const T* __restrict__ c, OutT* __restrict__ y, int m, int n,
                     int k, float alpha, float beta) {
  const int lane = threadIdx.x & 31;
  const int j = blockIdx.x * kWarps + (threadIdx.x >> 5);
  device::pdl_wait();
  float acc[kMaxRows];
#pragma unroll
  for (int i = 0; i < kMaxRows; ++i) acc[i] = 0.0f;
  if (j < n) {
    const T* wr = w + static_cast<int64_t>(j) * k;
    if constexpr (kVector) {
      constexpr int kVec = 16 / sizeof(T);
      const int nv = k / kVec;
      const uint4* wv = reinterpret_cast<const uint4*>(wr);
      int v = lane;
      // Four weight vectors in flight per lane before any arithmetic (memory-level parallelism on DRAM).
      for (; v + 3 * 32 < nv; v += 4 * 32) {
        uint4 wq[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) wq[u] = __ldg(wv + v + u * 32);
#pragma unroll
        for (int i = 0; i < kMaxRows; ++i) {
          if (i >= m) break;
          const uint4* av = reinterpret_cast<const uint4*>(a + static_cast<int64_t>(i) * k);
#pragma unroll
          for (int u = 0; u < 4; ++u) acc[i] += dot16(__ldg(av + v + u * 32), wq[u], T{});
        }
      }
      for (; v < nv; v += 32) {
        const uint4 wq = __ldg(wv + v);
#pragma unroll
        for (int i = 0; i < kMaxRows; ++i) {
          if (i >= m) break;
          const uint4* av = reinterpret_cast<const uint4*>(a + static_cast<int64_t>(i) * k);
          acc[i] += dot16(__ldg(av + v), wq, T{});
        }
      }
    } else {
      for (int kk = lane; kk < k; kk += 32) {
        const float wk = to_f(wr[kk]);
#pragma unroll
        for (int i = 0; i < kMaxRows; ++i) {
          if (i >= m) break;
          acc[i] = fmaf(to_f(a[static_cast<int64_t>(i) * k + kk]), wk, acc[i]);
        }
      }
    }
  }
  device::pdl_allow_dependents();
  if (j >= n) return;
#pragma unroll
  for (int i = 0; i < kMaxRows; ++i) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
  }
  if (lane != 0) return;
#pragma unroll
  for (int i = 0; i < kMaxRows; ++i) {
    if (i >= m) break;
    const int64_t o = static_cast<int64_t>(i) * n + j;
    float r = alpha * acc[i];
    if (c) r += beta * to_f(c[o]);
    store(y + o, r);
  }
}

template <typename T, typename OutT>
Status launch(const void* a, const void* w, const void* c, void* y, int m, int n, int k, float alpha, float beta, bool pdl,
              cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const bool vec = k % kVec == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  const dim3 grid(static_cast<unsigned>((int64_t{n} + kWarps - 1) / kWarps)), block(kWarps * 32);  // 64-bit: n up to 2^31 - 1
  const T* ta = static_cast<const T*>(a);
  const T* tw = static_cast<const T*>(w);
  const T* tc = static_cast<const T*>(c);
  OutT* ty = static_cast<OutT*>(y);
  const cudaError_t e = vec ? launch_kernel(pdl, gemv_rows_kernel<T, OutT, true>, grid, block, 0, stream, ta, tw, tc, ty, m, n, k, alpha, beta)
                            : launch_kernel(pdl, gemv_rows_kernel<T, OutT, false>, grid, block, 0, stream, ta, tw, tc, ty, m, n, k, alpha, beta);
  WS_CUDA_RETURN_IF_ERROR(e);
  return Status::ok();
}

}  // namespace

Status gemv_rows(DType t, const void* a, const void* w, const void* c, void* y, int64_t m, int64_t n, int64_t k, float alpha,
                 float beta, bool pdl, cudaStream_t stream, bool y_float32) {
  if (m < 1 || m > kGemvMaxRows || n < 1 || k < 1 || n > kGemvMaxN || k > kGemvMaxK)
    return invalid_argument("gemv: m = " + std::to_string(m) + " (1.." + std::to_string(kGemvMaxRows) + "), n = " + std::to_string(n) +
                            ", k = " + std::to_string(k) + " (1..2^31 - 1)");
  if (!a || !w || !y) return invalid_argument("gemv: null a, w or y");
  if (t == DType::kFloat16 && y_float32) return launch<__half, float>(a, w, c, y, int(m), int(n), int(k), alpha, beta, pdl, stream);
  if (t == DType::kFloat16) return launch<__half, __half>(a, w, c, y, int(m), int(n), int(k), alpha, beta, pdl, stream);
  if (t == DType::kFloat32) return launch<float, float>(a, w, c, y, int(m), int(n), int(k), alpha, beta, pdl, stream);
  return unsupported("gemv: element type " + dtype_name(t) + " (float32 or float16 only)");
}

}  // namespace ws::kernels
