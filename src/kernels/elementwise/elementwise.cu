// Elementwise kernels of the CUDA executor: per-channel bias + activation epilogue (after cuDNN
// convolutions; with bias = nullptr it is the plain unary op: Relu, Clip, Sigmoid, HardSigmoid,
// HardSwish), numpy-broadcast Add/Sub/Mul/Div, float32 <-> float16 casts, N-d transpose, NCHW -> NHWC with
// zero-padded channels (kHWC8) and zero padding of NCHW planes (asymmetric conv pads, which the legacy cuDNN API lacks).
// Element type float32 or float16; arithmetic always in float32 (the formulas of ws::ref::unary).
// Thread mapping: one thread per output element (the kHWC8 reformat: per pixel), grid-stride loop, 256-thread blocks.
// Test: tests/gpu/cuda_engine_ops_test.cpp (ws_gpu_tests --gtest_filter='CudaEngineOps*'): every op
// through the CUDA executor vs the CPU executor on random inputs.
#include <cuda_fp16.h>

#include <string>

#include "cuda/cuda_util.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/elementwise/device_math.cuh"

namespace ws::kernels {
namespace {

using device::grid_for;
using device::kThreads;

using device::activate;
using device::clamp01;
using device::load;
using device::store;

template <typename T>
__global__ void bias_activation_kernel(const T* x, T* y, const float* __restrict__ bias, const T* residual, int64_t count,
                                       int64_t channels, int64_t inner, Activation act, ActivationParams p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    float v = load(x, i);
    if (bias) v += bias[(i / inner) % channels];
    if (residual) v += load(residual, i);
    store(y, i, activate(v, act, p));
  }
}

__device__ __forceinline__ float apply(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
  }
  return 0.0f;
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* y, BroadcastDims d, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, ia = 0, ib = 0;
#pragma unroll
    for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
      if (k >= d.rank) continue;
      const int64_t idx = rem % d.y_dims[k];
      rem /= d.y_dims[k];
      ia += idx * d.a_strides[k];
      ib += idx * d.b_strides[k];
    }
    store(y, i, apply(op, load(a, ia), load(b, ib)));
  }
}

__global__ void cast_f32_f16_kernel(const float* x, __half* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2half_rn(x[i]);
}
__global__ void cast_f16_f32_kernel(const __half* x, float* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __half2float(x[i]);
}

template <typename T>
__global__ void transpose_kernel(const T* x, T* y, TransposeDims d, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, ix = 0;
#pragma unroll
    for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
      if (k >= d.rank) continue;
      ix += (rem % d.y_dims[k]) * d.x_strides[k];
      rem /= d.y_dims[k];
    }
    y[i] = x[ix];
  }
}

template <typename T>
__global__ void pad_2d_kernel(const T* x, T* y, int64_t planes, int64_t in_h, int64_t in_w, int64_t top, int64_t left,
                              int64_t out_h, int64_t out_w) {
  const int64_t count = planes * out_h * out_w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % out_w - left, h = (i / out_w) % out_h - top, pl = i / (out_w * out_h);
    y[i] = (h >= 0 && h < in_h && w >= 0 && w < in_w) ? x[(pl * in_h + h) * in_w + w] : T(0.0f);
  }
}

// The element types these kernels have an instantiation for; anything else is refused, not misread.
Status check_elem_type(ElemType t, const char* what) {
  if (t == ElemType::kFloat32 || t == ElemType::kFloat16) return Status::ok();
  return unsupported(std::string(what) + ": element type " + dtype_name(t) + " (float32 or float16 only)");
}

// y [n][hw][c_pad] from x [n][c][hw]: one thread per pixel writes its c_pad contiguous channels (channels >= c as zero);
// one index division per pixel, and the c loads of a warp are coalesced along hw.
template <typename T>
__global__ void nchw_to_nhwc_pad_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t c, int64_t hw, int64_t c_pad,
                                        int64_t pixels) {
  for (int64_t pix = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; pix < pixels; pix += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = pix / hw, p = pix - i * hw;
    const T* xp = x + i * c * hw + p;
    T* yp = y + pix * c_pad;
    for (int64_t k = 0; k < c_pad; ++k) yp[k] = k < c ? xp[k * hw] : T(0.0f);
  }
}

}  // namespace

Status pad_2d_zero(ElemType t, const void* x, void* y, int64_t planes, int64_t in_h, int64_t in_w, int64_t top,
                   int64_t left, int64_t out_h, int64_t out_w, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_elem_type(t, "pad_2d_zero"));
  const int64_t count = planes * out_h * out_w;
  if (count <= 0) return Status::ok();
  if (t == ElemType::kFloat32)
    pad_2d_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y),
                                                                   planes, in_h, in_w, top, left, out_h, out_w);
  else
    pad_2d_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y),
                                                                    planes, in_h, in_w, top, left, out_h, out_w);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kClip: return "clip";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kHardSigmoid: return "hard_sigmoid";
    case Activation::kHardSwish: return "hard_swish";
  }
  return "?";
}

Status bias_residual_activation(ElemType t, const void* x, void* y, const float* bias, const void* residual,
                                int64_t count, int64_t channels, int64_t inner, Activation act,
                                const ActivationParams& p, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_elem_type(t, "bias_activation"));
  if (count < 0 || channels < 1 || inner < 1) return invalid_argument("bias_activation: bad dims");
  if (count == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    bias_activation_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), bias, static_cast<const float*>(residual), count, channels,
        inner, act, p);
  else
    bias_activation_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(
        static_cast<const __half*>(x), static_cast<__half*>(y), bias, static_cast<const __half*>(residual), count,
        channels, inner, act, p);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status bias_activation(ElemType t, const void* x, void* y, const float* bias, int64_t count, int64_t channels,
                       int64_t inner, Activation act, const ActivationParams& p, cudaStream_t stream) {
  return bias_residual_activation(t, x, y, bias, nullptr, count, channels, inner, act, p, stream);
}

Status binary_broadcast(ElemType t, BinaryOp op, const void* a, const void* b, void* y, const BroadcastDims& d,
                        cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_elem_type(t, "binary_broadcast"));
  if (d.rank < 0 || d.rank > kMaxBroadcastRank) return invalid_argument("binary_broadcast: rank " + std::to_string(d.rank));
  int64_t count = 1;
  for (int k = 0; k < d.rank; ++k) count *= d.y_dims[k];
  if (count == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    binary_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(op, static_cast<const float*>(a),
        static_cast<const float*>(b), static_cast<float*>(y), d, count);
  else
    binary_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(op, static_cast<const __half*>(a),
        static_cast<const __half*>(b), static_cast<__half*>(y), d, count);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status cast_f32_to_f16(const float* x, void* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return Status::ok();
  cast_f32_f16_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, static_cast<__half*>(y), count);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}
Status cast_f16_to_f32(const void* x, float* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return Status::ok();
  cast_f16_f32_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<const __half*>(x), y, count);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status transpose(int elem_bytes, const void* x, void* y, const TransposeDims& d, cudaStream_t stream) {
  if (d.rank < 1 || d.rank > kMaxBroadcastRank) return invalid_argument("transpose: rank " + std::to_string(d.rank));
  int64_t count = 1;
  for (int k = 0; k < d.rank; ++k) count *= d.y_dims[k];
  if (count == 0) return Status::ok();
  if (elem_bytes == 4)
    transpose_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), d, count);
  else if (elem_bytes == 2)
    transpose_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), d, count);
  else
    return invalid_argument("transpose: element size " + std::to_string(elem_bytes));
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status nchw_to_nhwc_pad_channels(int elem_bytes, const void* x, void* y, int64_t n, int64_t c, int64_t hw, int64_t c_pad,
                                 cudaStream_t stream) {
  if (n < 1 || hw < 1 || c < 1 || c_pad < c || c_pad > 64 || !x || !y)
    return invalid_argument("nchw_to_nhwc_pad_channels: n " + std::to_string(n) + ", c " + std::to_string(c) + ", hw " +
                            std::to_string(hw) + ", c_pad " + std::to_string(c_pad) + " (need n, hw >= 1, 1 <= c <= c_pad <= 64, "
                            "non-null pointers)");
  const int64_t pixels = n * hw;
  if (elem_bytes == 4)
    nchw_to_nhwc_pad_kernel<float><<<grid_for(pixels), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), c,
                                                                              hw, c_pad, pixels);
  else if (elem_bytes == 2)
    nchw_to_nhwc_pad_kernel<__half><<<grid_for(pixels), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y),
                                                                               c, hw, c_pad, pixels);
  else
    return invalid_argument("nchw_to_nhwc_pad_channels: element size " + std::to_string(elem_bytes));
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
