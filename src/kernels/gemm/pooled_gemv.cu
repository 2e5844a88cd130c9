// Pooled classifier head at batch 1, GlobalAveragePool fused into the few-row GEMM (gemv.h pooled_gemv):
//   y[j] = alpha · Σ_k w[j, k] · (1 / HW) Σ_p x(k, p) + beta · c[j]          j < n, k < C, p < HW
// x is the GlobalAveragePool's input [1, C, H, W], stored NCHW (x[k·HW + p]) or NHWC (x[p·C + k]); w [n, C] one row per
// output; c [n] or null. The pooled vector never reaches memory, and one kernel replaces two (ResNet-50: cuDNN's
// NHWC pooling 3.1 µs + the GEMV 2.5 µs, each behind a ~1 µs graph-node launch).
// Thread mapping: a 2-D grid of (K slices of kSliceK = 128 channels) × (N slices of kSliceN = 128 outputs), 256
// threads (8 warps) per block — ResNet-50's head (C 2048, n 1000): 16 × 8 = 128 blocks, one wave on 132 SMs.
//   1. The block prefetches its 128 × 128 weight tile into L2 (constant data: before pdl_wait, overlapping the
//      previous kernel's tail), waits, then pools its 128 channels into shared memory in fp32: NCHW 16 channels per
//      warp at once (lanes over HW, one batched shuffle sum), NHWC one thread per channel and HW residue class
//      (256 threads = 128 channels × 2 classes, coalesced along C, 8 loads in flight).
//   2. Each warp takes 16 of the block's outputs, 8 rows per pass with every load issued first; lane l multiplies
//      channels l, l + 32, l + 64, l + 96 of a row (coalesced loads of the row's slice) with the pooled values,
//      batched butterfly shuffles sum the lanes, and lane 0 writes the fp32 partials of (K slice, output) to
//      `partials` [K slices, n] (the engine's workspace).
//   3. Split-K reduction in the same kernel: after a __threadfence, the block counts itself in its N slice's counter
//      (`counters` [N slices], zero before the launch and left zero after it); the last of the slice's K-slice blocks
//      sums the partials in slice order (deterministic), applies alpha and beta · c, and writes y (storage type, or
//      float32 with y_float32: an engine's float32 output port), then zeroes the counter.
// Bytes floor: n·C·elem of weights (ResNet-50 fp16 4.1 MB, ~1.2 µs at H100 DRAM bandwidth) + x once per N slice from L2.
// Test: tests/gpu/gemv_test.cpp (ws_gpu_tests --gtest_filter='PooledGemv*': against a double-precision host reference
// with poisoned outputs, both layouts, fp32 and fp16; PooledGemv.EngineHeadsMatchTheCpuExecutor: the engine's fused
// head against the CPU executor). Time: the lanes' per-layer profile (`warpstream bench --profile-layers`).
#include <cuda_fp16.h>

#include <string>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemv.h"
#include "kernels/pdl.cuh"

namespace ws::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSliceK = static_cast<int>(kPooledGemvSliceK);
constexpr int kSliceN = static_cast<int>(kPooledGemvSliceN);
constexpr int kPerLane = kSliceK / 32;  // channels of the slice each lane multiplies

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

// Butterfly sums of N per-lane values at once (the N shuffles of a step are independent, so they overlap).
template <int N>
__device__ __forceinline__ void warp_sums(float (&v)[N]) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
#pragma unroll
    for (int q = 0; q < N; ++q) v[q] += __shfl_xor_sync(0xffffffffu, v[q], o);
}

template <typename T, typename OutT, bool kNhwc>
__global__ void __launch_bounds__(kThreads)
    pooled_gemv_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ c, OutT* __restrict__ y,
                       float* __restrict__ partials, unsigned* __restrict__ counters, int channels, int hw, int n, float alpha,
                       float beta) {
  __shared__ float pooled[kSliceK];
  __shared__ float halves[2][kSliceK];
  __shared__ bool last;
  const int k0 = blockIdx.x * kSliceK, j0 = blockIdx.y * kSliceN;
  const int kc = min(kSliceK, channels - k0), nc = min(kSliceN, n - j0);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // 1. The weight tile into L2 (constant: no hazard with the previous kernel), one 128-byte line per thread at most.
  {
    constexpr int kLinesPerRow = (kSliceK * static_cast<int>(sizeof(T)) + 127) / 128 + 1;  // +1: a row slice may straddle
    for (int i = tid; i < nc * kLinesPerRow; i += kThreads) {
      const int r = i / kLinesPerRow, line = i % kLinesPerRow;
      const char* base = reinterpret_cast<const char*>(w + static_cast<int64_t>(j0 + r) * channels + k0);
      const char* p = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(base) & ~uintptr_t{127}) + line * 128;
      const char* end = reinterpret_cast<const char*>(w + static_cast<int64_t>(j0 + r) * channels + k0 + kc);
      if (p < end) asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(p)));
    }
  }
  device::pdl_wait();
  const float inv_hw = 1.0f / static_cast<float>(hw);
  if constexpr (kNhwc) {
    const int ch = tid % kSliceK, cls = tid / kSliceK;  // 2 residue classes of p; loads independent of the sum (8 in flight)
    float s = 0.0f;
    if (ch < kc) {
      const T* xp = x + k0 + ch;
#pragma unroll 8
      for (int p = cls; p < hw; p += 2) s += to_f(xp[static_cast<int64_t>(p) * channels]);
    }
    halves[cls][ch] = s;
    __syncthreads();
    if (tid < kSliceK) pooled[tid] = (halves[0][tid] + halves[1][tid]) * inv_hw;
  } else {
    // Warp `warp` pools channels warp, warp + 8, ... (16 of them) at once: lane l loads position p0 + l of each, so 16
    // loads are in flight per lane, then one batched butterfly per 16 sums.
    constexpr int kChPerWarp = kSliceK / kWarps;
    float s[kChPerWarp];
#pragma unroll
    for (int q = 0; q < kChPerWarp; ++q) s[q] = 0.0f;
    for (int p0 = 0; p0 < hw; p0 += 32) {
      const int p = p0 + lane;
#pragma unroll
      for (int q = 0; q < kChPerWarp; ++q) {
        const int ch = warp + q * kWarps;
        if (ch < kc && p < hw) s[q] += to_f(x[static_cast<int64_t>(k0 + ch) * hw + p]);
      }
    }
    warp_sums(s);
    if (lane == 0)
#pragma unroll
      for (int q = 0; q < kChPerWarp; ++q) pooled[warp + q * kWarps] = s[q] * inv_hw;
  }
  __syncthreads();

  // 2. Partial dot products of this K slice: warp `warp` takes outputs j0 + warp, j0 + warp + 8, ..., kRowsPerPass rows
  // per pass with all their loads issued before any sum (L2 latency once per pass, not once per row).
  constexpr int kRowsPerPass = 8;
  float xv[kPerLane];
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) xv[u] = pooled[lane + 32 * u];
  for (int r0 = warp; r0 < nc; r0 += kWarps * kRowsPerPass) {
    float wv[kRowsPerPass][kPerLane];
#pragma unroll
    for (int q = 0; q < kRowsPerPass; ++q) {
      const int r = r0 + q * kWarps;
      const T* wr = w + static_cast<int64_t>(j0 + min(r, nc - 1)) * channels + k0;
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) wv[q][u] = r < nc && lane + 32 * u < kc ? to_f(__ldg(wr + lane + 32 * u)) : 0.0f;
    }
    float sums[kRowsPerPass];
#pragma unroll
    for (int q = 0; q < kRowsPerPass; ++q) {
      sums[q] = 0.0f;
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) sums[q] = fmaf(wv[q][u], xv[u], sums[q]);
    }
    warp_sums(sums);
    if (lane == 0)
#pragma unroll
      for (int q = 0; q < kRowsPerPass; ++q)
        if (r0 + q * kWarps < nc) partials[static_cast<int64_t>(blockIdx.x) * n + j0 + r0 + q * kWarps] = sums[q];
  }
  device::pdl_allow_dependents();

  // 3. The last K-slice block of this N slice reduces the partials (in K-slice order) and writes y.
  __threadfence();
  __syncthreads();
  if (tid == 0) last = atomicAdd(counters + blockIdx.y, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int r = tid; r < nc; r += kThreads) {
    float s = 0.0f;
#pragma unroll 8
    for (unsigned ks = 0; ks < gridDim.x; ++ks) s += __ldcg(partials + static_cast<int64_t>(ks) * n + j0 + r);
    float v = alpha * s;
    if (c) v += beta * to_f(c[j0 + r]);
    store(y + j0 + r, v);
  }
  if (tid == 0) counters[blockIdx.y] = 0u;  // left zero for the next launch (stream order)
}

template <typename T, typename OutT>
Status launch(const void* x, bool nhwc, int channels, int hw, const void* w, const void* c, void* y, int n, float alpha, float beta,
              void* partials, unsigned* counters, bool pdl, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(pooled_gemv_slices_k(channels)), static_cast<unsigned>(pooled_gemv_slices_n(n))), block(kThreads);
  const T* tx = static_cast<const T*>(x);
  const T* tw = static_cast<const T*>(w);
  const T* tc = static_cast<const T*>(c);
  OutT* ty = static_cast<OutT*>(y);
  float* tp = static_cast<float*>(partials);
  const cudaError_t e =
      nhwc ? launch_kernel(pdl, pooled_gemv_kernel<T, OutT, true>, grid, block, 0, stream, tx, tw, tc, ty, tp, counters, channels, hw, n, alpha, beta)
           : launch_kernel(pdl, pooled_gemv_kernel<T, OutT, false>, grid, block, 0, stream, tx, tw, tc, ty, tp, counters, channels, hw, n, alpha, beta);
  WS_CUDA_RETURN_IF_ERROR(e);
  return Status::ok();
}

}  // namespace

Status pooled_gemv(DType t, const void* x, bool x_nhwc, int64_t channels, int64_t hw, const void* w, const void* c, void* y, int64_t n,
                   float alpha, float beta, void* partials, unsigned* counters, bool pdl, cudaStream_t stream, bool y_float32) {
  if (channels < 1 || hw < 1 || n < 1 || channels > kPooledGemvMax || hw > kPooledGemvMax || n > kPooledGemvMax ||
      channels * hw > kPooledGemvMax || pooled_gemv_slices_k(channels) > kPooledGemvMaxSlices || pooled_gemv_slices_n(n) > kPooledGemvMaxSlices)
    return invalid_argument("pooled_gemv: channels = " + std::to_string(channels) + ", hw = " + std::to_string(hw) + ", n = " + std::to_string(n) +
                            " (each >= 1; channels, hw, n and channels · hw at most 2^31 - 1; at most 65535 slices of 128 channels or outputs)");
  if (!x || !w || !y || !partials || !counters) return invalid_argument("pooled_gemv: null x, w, y, partials or counters");
  const int ci = static_cast<int>(channels), hi = static_cast<int>(hw), ni = static_cast<int>(n);
  if (t == DType::kFloat16 && y_float32) return launch<__half, float>(x, x_nhwc, ci, hi, w, c, y, ni, alpha, beta, partials, counters, pdl, stream);
  if (t == DType::kFloat16) return launch<__half, __half>(x, x_nhwc, ci, hi, w, c, y, ni, alpha, beta, partials, counters, pdl, stream);
  if (t == DType::kFloat32) return launch<float, float>(x, x_nhwc, ci, hi, w, c, y, ni, alpha, beta, partials, counters, pdl, stream);
  return unsupported("pooled_gemv: element type " + dtype_name(t) + " (float32 or float16 only)");
}

}  // namespace ws::kernels
