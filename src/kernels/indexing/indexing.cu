// Indexing kernels of the CUDA executor (issue 14): ScatterND's slice scatter, Gather along one axis with build-time indices
// (ShuffleNet / ViT class-token style selections that did not fold at build), GatherElements, Tile and Pad
// (constant / reflect / edge) — copies of
// 2- or 4-byte elements (float16 / float32 storage) — and Resize (nearest / bilinear / bicubic) of the last two
// axes with taps precomputed at build (float32 blend; cubic: 4 x 4 taps).
// Thread mapping: one thread per output element, grid-stride loop over an int64 index, 256-thread blocks.
// Gather: y index → (o, j, i) → x[(o·axis_len + indices[j])·inner + i]. Tile: per y dim, i_k % x_dims[k].
// Resize: y index → (plane, oh, ow) → taps of row oh and column ow. Pad: per y dim, i_k − begin_k inside x, else
// the constant, the clamped index (edge) or the mirrored one (reflect).
// Test: tests/gpu/cuda_engine_ops_test.cpp — ws_gpu_tests --gtest_filter='CudaEngineOps.*' (the Gather and
// Tile forms of ops/indexing.cpp vs the CPU executor, fp32 and fp16). Time: warpstream bench
// --profile-layers on a model using them (memory bound).
#include <cuda_fp16.h>

#include <string>

#include "cuda/cuda_util.h"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/indexing/indexing.h"

namespace ws::kernels {
namespace {

using device::grid_for;
using device::kThreads;

template <typename T>
__global__ void gather_kernel(const T* x, T* y, const int32_t* __restrict__ indices, int64_t outer, int64_t axis_len,
                              int64_t count, int64_t inner) {
  const int64_t total = outer * count * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t in = i % inner;
    const int64_t j = (i / inner) % count;
    const int64_t o = i / (inner * count);
    y[i] = x[(o * axis_len + static_cast<int64_t>(indices[j])) * inner + in];
  }
}

template <typename T>
__global__ void tile_kernel(const T* x, T* y, TileDims d, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, ix = 0, stride = 1;
#pragma unroll
    for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
      if (k >= d.rank) continue;
      const int64_t idx = rem % d.y_dims[k];
      rem /= d.y_dims[k];
      ix += (idx % d.x_dims[k]) * stride;
      stride *= d.x_dims[k];
    }
    y[i] = x[ix];
  }
}

template <typename T>
__global__ void resize_2d_kernel(bool linear, const T* x, T* y, const float* __restrict__ taps, int64_t planes, int64_t in_h,
                                 int64_t in_w, int64_t out_h, int64_t out_w, float extrapolation) {
  const int32_t* h0 = reinterpret_cast<const int32_t*>(taps);
  const int32_t* h1 = h0 + out_h;
  const float* wh = taps + 2 * out_h;
  const int32_t* w0 = reinterpret_cast<const int32_t*>(taps + 3 * out_h);
  const int32_t* w1 = w0 + out_w;
  const float* ww = taps + 3 * out_h + 2 * out_w;
  const int64_t total = planes * out_h * out_w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % out_w, oh = (i / out_w) % out_h, pl = i / (out_w * out_h);
    const T* xp = x + pl * in_h * in_w;
    if (h0[oh] < 0 || w0[ow] < 0) {  // outside the input (tf_crop_and_resize)
      device::store(y, i, extrapolation);
      continue;
    }
    const int64_t r0 = int64_t(h0[oh]) * in_w, c0 = w0[ow];
    if (!linear) {
      y[i] = xp[r0 + c0];
      continue;
    }
    const int64_t r1 = int64_t(h1[oh]) * in_w, c1 = w1[ow];
    const float a = wh[oh], b = ww[ow];
    const float top = (1.0f - b) * device::load(xp, r0 + c0) + b * device::load(xp, r0 + c1);
    const float bot = (1.0f - b) * device::load(xp, r1 + c0) + b * device::load(xp, r1 + c1);
    device::store(y, i, (1.0f - a) * top + a * bot);
  }
}

template <typename T>
__global__ void resize_2d_cubic_kernel(const T* x, T* y, const float* __restrict__ taps, int64_t planes, int64_t in_h,
                                       int64_t in_w, int64_t out_h, int64_t out_w, float extrapolation) {
  const int32_t* hi = reinterpret_cast<const int32_t*>(taps);
  const float* hw = taps + 4 * out_h;
  const int32_t* wi = reinterpret_cast<const int32_t*>(taps + 8 * out_h);
  const float* ww = taps + 8 * out_h + 4 * out_w;
  const int64_t total = planes * out_h * out_w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % out_w, oh = (i / out_w) % out_h, pl = i / (out_w * out_h);
    const T* xp = x + pl * in_h * in_w;
    if (hi[4 * oh] < 0 || wi[4 * ow] < 0) {  // outside the input (tf_crop_and_resize)
      device::store(y, i, extrapolation);
      continue;
    }
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t row = int64_t(hi[4 * oh + j]) * in_w;
      float r = 0.0f;
#pragma unroll
      for (int k = 0; k < 4; ++k) r += ww[4 * ow + k] * device::load(xp, row + wi[4 * ow + k]);
      acc += hw[4 * oh + j] * r;
    }
    device::store(y, i, acc);
  }
}

template <typename T>
__global__ void gather_elements_kernel(const T* x, T* y, const int32_t* __restrict__ indices, GatherElementsDims d, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, ix = 0;
#pragma unroll
    for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
      if (k >= d.rank) continue;
      const int64_t idx = rem % d.y_dims[k];
      rem /= d.y_dims[k];
      ix += (k == d.axis ? static_cast<int64_t>(indices[i]) : idx) * d.x_strides[k];
    }
    y[i] = x[ix];
  }
}

template <typename T>
__global__ void scatter_slices_kernel(const T* updates, T* y, const int32_t* __restrict__ offsets, int64_t slice, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[int64_t(offsets[i / slice]) + i % slice] = updates[i];
}

template <typename T>
__global__ void pad_kernel(PadMode mode, const T* x, T* y, PadDims d, float value, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, ix = 0, stride = 1;
    bool inside = true;
#pragma unroll
    for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
      if (k >= d.rank) continue;
      int64_t xi = rem % d.y_dims[k] - d.begin[k];
      rem /= d.y_dims[k];
      const int64_t n = d.x_dims[k];
      if ((xi < 0 || xi >= n) && mode != PadMode::kConstant && n > 0) {
        if (mode == PadMode::kEdge) {
          xi = xi < 0 ? 0 : n - 1;
        } else {  // reflect without repeating the edge (ref::pad)
          const int64_t period = 2 * (n - 1);
          if (period == 0) {
            xi = 0;
          } else {
            xi %= period;
            if (xi < 0) xi += period;
            if (xi >= n) xi = period - xi;
          }
        }
      }
      inside = inside && xi >= 0 && xi < n;
      ix += xi * stride;
      stride *= n;
    }
    device::store(y, i, inside ? device::load(x, ix) : value);
  }
}

}  // namespace

Status gather_elements(int elem_bytes, const void* x, void* y, const int32_t* indices, const GatherElementsDims& d,
                       cudaStream_t stream) {
  if (d.rank < 1 || d.rank > kMaxBroadcastRank || d.axis < 0 || d.axis >= d.rank)
    return invalid_argument("gather_elements: rank " + std::to_string(d.rank) + ", axis " + std::to_string(d.axis));
  int64_t total = 1;
  for (int k = 0; k < d.rank; ++k) {
    if (d.y_dims[k] < 0) return invalid_argument("gather_elements: negative dim");
    total *= d.y_dims[k];
  }
  if (total == 0) return Status::ok();
  if (elem_bytes == 4)
    gather_elements_kernel<float><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), indices, d, total);
  else if (elem_bytes == 2)
    gather_elements_kernel<__half><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), indices, d,
                                                                             total);
  else
    return invalid_argument("gather_elements: element size " + std::to_string(elem_bytes));
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status pad(ElemType t, PadMode mode, const void* x, void* y, const PadDims& d, float value, cudaStream_t stream) {
  if (t != ElemType::kFloat32 && t != ElemType::kFloat16) return unsupported(std::string("pad: element type ") + dtype_name(t));
  if (d.rank < 1 || d.rank > kMaxBroadcastRank) return invalid_argument("pad: rank " + std::to_string(d.rank));
  int64_t total = 1;
  for (int k = 0; k < d.rank; ++k) {
    if (d.y_dims[k] < 0 || d.x_dims[k] < 0) return invalid_argument("pad: negative dim");
    if (mode != PadMode::kConstant && d.x_dims[k] == 0 && d.y_dims[k] > 0) return invalid_argument("pad: reflect / edge of an empty axis");
    total *= d.y_dims[k];
  }
  if (total == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    pad_kernel<float><<<grid_for(total), kThreads, 0, stream>>>(mode, static_cast<const float*>(x), static_cast<float*>(y), d, value, total);
  else
    pad_kernel<__half><<<grid_for(total), kThreads, 0, stream>>>(mode, static_cast<const __half*>(x), static_cast<__half*>(y), d, value, total);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status resize_2d(ElemType t, bool linear, const void* x, void* y, const float* taps, int64_t planes, int64_t in_h,
                 int64_t in_w, int64_t out_h, int64_t out_w, cudaStream_t stream, float extrapolation) {
  if (t != ElemType::kFloat32 && t != ElemType::kFloat16) return unsupported(std::string("resize_2d: element type ") + dtype_name(t));
  if (planes < 0 || in_h < 1 || in_w < 1 || out_h < 0 || out_w < 0) return invalid_argument("resize_2d: bad dims");
  const int64_t total = planes * out_h * out_w;
  if (total == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    resize_2d_kernel<float><<<grid_for(total), kThreads, 0, stream>>>(linear, static_cast<const float*>(x), static_cast<float*>(y), taps,
                                                                      planes, in_h, in_w, out_h, out_w, extrapolation);
  else
    resize_2d_kernel<__half><<<grid_for(total), kThreads, 0, stream>>>(linear, static_cast<const __half*>(x), static_cast<__half*>(y), taps,
                                                                       planes, in_h, in_w, out_h, out_w, extrapolation);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status resize_2d_cubic(ElemType t, const void* x, void* y, const float* taps, int64_t planes, int64_t in_h, int64_t in_w,
                       int64_t out_h, int64_t out_w, cudaStream_t stream, float extrapolation) {
  if (t != ElemType::kFloat32 && t != ElemType::kFloat16) return unsupported(std::string("resize_2d_cubic: element type ") + dtype_name(t));
  if (planes < 0 || in_h < 1 || in_w < 1 || out_h < 0 || out_w < 0) return invalid_argument("resize_2d_cubic: bad dims");
  const int64_t total = planes * out_h * out_w;
  if (total == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    resize_2d_cubic_kernel<float><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), taps,
                                                                            planes, in_h, in_w, out_h, out_w, extrapolation);
  else
    resize_2d_cubic_kernel<__half><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y),
                                                                             taps, planes, in_h, in_w, out_h, out_w, extrapolation);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status scatter_slices(int elem_bytes, const void* updates, void* y, const int32_t* offsets, int64_t n, int64_t slice,
                      cudaStream_t stream) {
  if (n < 0 || slice < 0) return invalid_argument("scatter_slices: negative dims");
  const int64_t total = n * slice;
  if (total == 0) return Status::ok();
  const unsigned g = grid_for(total);
  switch (elem_bytes) {
    case 1: scatter_slices_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint8_t*>(updates), static_cast<uint8_t*>(y), offsets, slice, total); break;
    case 2: scatter_slices_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint16_t*>(updates), static_cast<uint16_t*>(y), offsets, slice, total); break;
    case 4: scatter_slices_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint32_t*>(updates), static_cast<uint32_t*>(y), offsets, slice, total); break;
    case 8: scatter_slices_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint64_t*>(updates), static_cast<uint64_t*>(y), offsets, slice, total); break;
    default: return invalid_argument("scatter_slices: element size " + std::to_string(elem_bytes));
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status gather(int elem_bytes, const void* x, void* y, const int32_t* indices, int64_t outer, int64_t axis_len,
              int64_t count, int64_t inner, cudaStream_t stream) {
  if (outer < 0 || axis_len < 0 || count < 0 || inner < 0) return invalid_argument("gather: negative dims");
  const int64_t total = outer * count * inner;
  if (total == 0) return Status::ok();
  if (axis_len == 0) return invalid_argument("gather: indices into an empty axis");
  if (elem_bytes == 4)
    gather_kernel<float><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), indices, outer,
                                                                   axis_len, count, inner);
  else if (elem_bytes == 2)
    gather_kernel<__half><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), indices,
                                                                    outer, axis_len, count, inner);
  else
    return invalid_argument("gather: element size " + std::to_string(elem_bytes));
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status tile(int elem_bytes, const void* x, void* y, const TileDims& d, cudaStream_t stream) {
  if (d.rank < 1 || d.rank > kMaxBroadcastRank) return invalid_argument("tile: rank " + std::to_string(d.rank));
  int64_t total = 1;
  for (int k = 0; k < d.rank; ++k) {
    if (d.y_dims[k] < 0 || d.x_dims[k] < 0) return invalid_argument("tile: negative dim");
    total *= d.y_dims[k];
  }
  if (total == 0) return Status::ok();
  for (int k = 0; k < d.rank; ++k)
    if (d.x_dims[k] == 0) return invalid_argument("tile: empty input dim with a non-empty output");
  if (elem_bytes == 4)
    tile_kernel<float><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), d, total);
  else if (elem_bytes == 2)
    tile_kernel<__half><<<grid_for(total), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), d, total);
  else
    return invalid_argument("tile: element size " + std::to_string(elem_bytes));
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
