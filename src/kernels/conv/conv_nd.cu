// Direct N-d window kernels of the CUDA executor (issue 14): convolution, transposed convolution (ConvTranspose)
// and Max / Average pooling over 1..3 spatial dims (3-D Conv / pooling, ConvTranspose, Conv with a runtime
// weight). Gather form throughout: each output element reads the inputs that reach it, so no atomics and a
// fixed summation order; a transposed convolution's output o takes input i = (o + pad − k·dilation) / stride
// where that division is exact and in range. float32 accumulation; epilogue bias + residual + activation
// (device::activate, the conv epilogue's formulas).
// Thread mapping: one thread per output element (n, c, o0, o1, o2 decoded from the flat index, o2 fastest),
// grid-stride loop, 256-thread blocks. Not tuned (no shared-memory tiling): these serve conformance cases and
// rare layers; the 2-D hot paths are cuDNN and conv.cu.
// Test: tests/gpu/cuda_engine_ops_test.cpp (ws_gpu_tests --gtest_filter='CudaEngineOps*': the Conv3d,
// ConvTranspose, runtime-weight Conv and 3-D pool forms vs the CPU executor, fp32 and fp16); under
// compute-sanitizer with `scripts/device.sh sanitize`. Time: `warpstream bench --profile-layers` on a model
// using them.
#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/conv/conv_nd.h"
#include "kernels/elementwise/device_math.cuh"

namespace ws::kernels {
namespace {

using device::activate;
using device::grid_for;
using device::kThreads;
using device::load;
using device::store;

template <typename T, bool kTranspose>
__global__ void conv_nd_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* bias, const T* residual, T* y,
                               ConvNdGeometry g, Activation act, ActivationParams ap, int64_t total) {
  const int64_t cig = g.c_in / g.group, cog = g.c_out / g.group;
  const int64_t x_sp = g.in[0] * g.in[1] * g.in[2], k_sp = g.kernel[0] * g.kernel[1] * g.kernel[2];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i;
    const int64_t o2 = r % g.out[2]; r /= g.out[2];
    const int64_t o1 = r % g.out[1]; r /= g.out[1];
    const int64_t o0 = r % g.out[0]; r /= g.out[0];
    const int64_t co = r % g.c_out;
    const int64_t n = r / g.c_out;
    const int64_t grp = co / cog;
    float acc = 0.0f;
    for (int64_t cl = 0; cl < cig; ++cl) {
      const int64_t ci = grp * cig + cl;
      const T* xc = x + (n * g.c_in + ci) * x_sp;
      const T* wc = kTranspose ? w + (ci * cog + co % cog) * k_sp : w + (co * cig + cl) * k_sp;
      for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
        int64_t i0;
        if (kTranspose) {
          const int64_t t = o0 + g.pad_begin[0] - k0 * g.dilation[0];
          if (t < 0 || t % g.stride[0] != 0) continue;
          i0 = t / g.stride[0];
        } else {
          i0 = o0 * g.stride[0] - g.pad_begin[0] + k0 * g.dilation[0];
          if (i0 < 0) continue;
        }
        if (i0 >= g.in[0]) continue;
        for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
          int64_t i1;
          if (kTranspose) {
            const int64_t t = o1 + g.pad_begin[1] - k1 * g.dilation[1];
            if (t < 0 || t % g.stride[1] != 0) continue;
            i1 = t / g.stride[1];
          } else {
            i1 = o1 * g.stride[1] - g.pad_begin[1] + k1 * g.dilation[1];
            if (i1 < 0) continue;
          }
          if (i1 >= g.in[1]) continue;
          for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
            int64_t i2;
            if (kTranspose) {
              const int64_t t = o2 + g.pad_begin[2] - k2 * g.dilation[2];
              if (t < 0 || t % g.stride[2] != 0) continue;
              i2 = t / g.stride[2];
            } else {
              i2 = o2 * g.stride[2] - g.pad_begin[2] + k2 * g.dilation[2];
              if (i2 < 0) continue;
            }
            if (i2 >= g.in[2]) continue;
            acc = fmaf(load(xc, (i0 * g.in[1] + i1) * g.in[2] + i2), load(wc, (k0 * g.kernel[1] + k1) * g.kernel[2] + k2), acc);
          }
        }
      }
    }
    if (bias) acc += load(bias, co);
    if (residual) acc += load(residual, i);
    store(y, i, activate(acc, act, ap));
  }
}

// Kernel taps k in [lo, hi) with lo_bound <= start + k·dil < hi_bound (ref::tap_range).
__device__ __forceinline__ void tap_range(int64_t start, int64_t dil, int64_t kernel, int64_t lo_bound, int64_t hi_bound,
                                          int64_t& lo, int64_t& hi) {
  const int64_t a = lo_bound - start;
  lo = a <= 0 ? 0 : (a + dil - 1) / dil;
  const int64_t b = hi_bound - 1 - start;
  hi = b < 0 ? 0 : b / dil + 1;
  if (hi > kernel) hi = kernel;
  if (lo > hi) lo = hi;
}

template <typename T, bool kMax>
__global__ void pool_nd_kernel(const T* __restrict__ x, T* y, PoolNdGeometry g, int64_t total) {
  const int64_t x_sp = g.in[0] * g.in[1] * g.in[2];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i;
    int64_t o[3];
    o[2] = r % g.out[2]; r /= g.out[2];
    o[1] = r % g.out[1]; r /= g.out[1];
    o[0] = r % g.out[0]; r /= g.out[0];
    const T* xp = x + r * x_sp;
    int64_t st[3], lo[3], hi[3], plo[3], phi[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      st[a] = o[a] * g.stride[a] - g.pad_begin[a];
      tap_range(st[a], g.dilation[a], g.kernel[a], 0, g.in[a], lo[a], hi[a]);
      tap_range(st[a], g.dilation[a], g.kernel[a], -g.pad_begin[a], g.in[a] + g.pad_end[a], plo[a], phi[a]);
    }
    float best = -INFINITY, sum = 0.0f;
    bool any = false;
    for (int64_t k0 = lo[0]; k0 < hi[0]; ++k0) {
      const int64_t i0 = st[0] + k0 * g.dilation[0];
      for (int64_t k1 = lo[1]; k1 < hi[1]; ++k1) {
        const int64_t i1 = st[1] + k1 * g.dilation[1];
        for (int64_t k2 = lo[2]; k2 < hi[2]; ++k2) {
          const float v = load(xp, (i0 * g.in[1] + i1) * g.in[2] + st[2] + k2 * g.dilation[2]);
          if (kMax) {
            if (v > best || !any) best = v;  // first maximum in window order (NaN handling as the reference)
            any = true;
          } else {
            sum += v;
          }
        }
      }
    }
    if (kMax) {
      store(y, i, any ? best : -INFINITY);
    } else {
      const int64_t count = g.count_include_pad ? (phi[0] - plo[0]) * (phi[1] - plo[1]) * (phi[2] - plo[2])
                                                : (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
      store(y, i, count > 0 ? sum / static_cast<float>(count) : NAN);
    }
  }
}

bool positive3(const int64_t* v) { return v[0] > 0 && v[1] > 0 && v[2] > 0; }
bool non_negative3(const int64_t* v) { return v[0] >= 0 && v[1] >= 0 && v[2] >= 0; }

}  // namespace

Status conv_nd_direct(ElemType t, bool transpose, const ConvNdGeometry& g, const void* x, const void* w, const void* bias,
                      const void* residual, void* y, Activation act, const ActivationParams& p, cudaStream_t stream) {
  if (t != ElemType::kFloat32 && t != ElemType::kFloat16) return unsupported(std::string("conv_nd_direct: element type ") + dtype_name(t));
  if (g.n < 0 || g.c_in < 1 || g.c_out < 1 || g.group < 1 || g.c_in % g.group || g.c_out % g.group || !positive3(g.in) ||
      !positive3(g.out) || !positive3(g.kernel) || !positive3(g.stride) || !positive3(g.dilation))
    return invalid_argument("conv_nd_direct: inconsistent geometry");
  const int64_t total = g.n * g.c_out * g.out[0] * g.out[1] * g.out[2];
  if (total == 0) return Status::ok();
  const unsigned grid = grid_for(total);
  if (t == ElemType::kFloat32) {
    using T = float;
    auto* f = transpose ? conv_nd_kernel<T, true> : conv_nd_kernel<T, false>;
    f<<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
                                     static_cast<const T*>(residual), static_cast<T*>(y), g, act, p, total);
  } else {
    using T = __half;
    auto* f = transpose ? conv_nd_kernel<T, true> : conv_nd_kernel<T, false>;
    f<<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
                                     static_cast<const T*>(residual), static_cast<T*>(y), g, act, p, total);
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status pool_nd(ElemType t, bool max, const PoolNdGeometry& g, const void* x, void* y, cudaStream_t stream) {
  if (t != ElemType::kFloat32 && t != ElemType::kFloat16) return unsupported(std::string("pool_nd: element type ") + dtype_name(t));
  if (g.planes < 0 || !positive3(g.in) || !positive3(g.out) || !positive3(g.kernel) || !positive3(g.stride) ||
      !positive3(g.dilation) || !non_negative3(g.pad_begin) || !non_negative3(g.pad_end))
    return invalid_argument("pool_nd: inconsistent geometry");
  const int64_t total = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (total == 0) return Status::ok();
  const unsigned grid = grid_for(total);
  if (t == ElemType::kFloat32) {
    auto* f = max ? pool_nd_kernel<float, true> : pool_nd_kernel<float, false>;
    f<<<grid, kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), g, total);
  } else {
    auto* f = max ? pool_nd_kernel<__half, true> : pool_nd_kernel<__half, false>;
    f<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), g, total);
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
