#pragma once
/// \file device_math.cuh
/// Device helpers shared by the elementwise and conv kernels: element loads/stores of the activation type
/// (float32 or float16 storage, float32 arithmetic; stores round to nearest even) and the activation
/// formulas of the fused epilogues — the same as ws::ref::unary (the CPU reference) for Relu, Clip,
/// Sigmoid (split at 0 for range), HardSigmoid (alpha, beta) and HardSwish (x · HardSigmoid(1/6, 1/2)).
/// Include from .cu files only.

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/elementwise/elementwise.h"

namespace ws::kernels::device {

/// Threads per block of the one-thread-per-element kernels, and their grid: enough blocks for `count`
/// elements, capped (the kernels stride over the rest).
inline constexpr int kThreads = 256;
inline unsigned grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

template <typename I>
__device__ __forceinline__ float load(const float* p, I i) { return p[i]; }
template <typename I>
__device__ __forceinline__ float load(const __half* p, I i) { return __half2float(p[i]); }
template <typename I>
__device__ __forceinline__ void store(float* p, I i, float v) { p[i] = v; }
template <typename I>
__device__ __forceinline__ void store(__half* p, I i, float v) { p[i] = __float2half_rn(v); }

__device__ __forceinline__ float clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

__device__ __forceinline__ float activate(float v, Activation act, const ActivationParams& p) {
  switch (act) {
    case Activation::kNone: return v;
    case Activation::kRelu: return v < 0.0f ? 0.0f : v;
    case Activation::kClip: return v < p.min ? p.min : (v > p.max ? p.max : v);
    case Activation::kSigmoid:
      if (v >= 0.0f) return 1.0f / (1.0f + expf(-v));
      else { const float e = expf(v); return e / (1.0f + e); }
    case Activation::kHardSigmoid: return clamp01(p.alpha * v + p.beta);
    case Activation::kHardSwish: return v * clamp01(v / 6.0f + 0.5f);
  }
  return v;
}

}  // namespace ws::kernels::device
