// Pooling and reductions of the CUDA executor: 2-D MaxPool (optionally with its Indices output: the flat index of
// each maximum, storage_order 0 / 1, as ws::ref::max_pool_nd) / AveragePool (NCHW; dilations, asymmetric
// pads, ceil_mode windows via the output size, count_include_pad counting the padded range only, as
// ws::ref::average_pool_nd), GlobalAveragePool and Softmax (max-subtracted, float32 accumulation).
// Thread mapping: pools — one thread per output element (grid-stride); GlobalAveragePool and Softmax —
// one warp per output plane / softmax row, warp-shuffle reductions, 8 warps per block.
// Test: tests/gpu/cuda_engine_ops_test.cpp (ws_gpu_tests --gtest_filter='CudaEngineOps*') vs the CPU executor.
#include <cuda_fp16.h>

#include <cmath>

#include "cuda/cuda_util.h"
#include "kernels/pool/pool.h"

namespace ws::kernels {
namespace {

constexpr int kThreads = 256;
unsigned grid_for(int64_t count, int per_block = kThreads) {
  const int64_t blocks = (count + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}
__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }

// Taps k in [k0, k1) of a window starting at `start` (stride-free) with dilation d that land in [lo, hi).
__device__ __forceinline__ void tap_range(int64_t start, int64_t d, int64_t k, int64_t lo, int64_t hi, int64_t& k0, int64_t& k1) {
  k0 = 0;
  while (k0 < k && start + k0 * d < lo) ++k0;
  k1 = k;
  while (k1 > k0 && start + (k1 - 1) * d >= hi) --k1;
}

// `indices` (MaxPool only, may be null): the flat N·C·H·W index of each maximum (storage_order 0: row-major in the
// plane; 1: column-major), -1 for a window entirely in padding — ref::max_pool_nd's rule.
template <typename T, bool kMax>
__global__ void pool2d_kernel(const T* x, T* y, Pool2dParams p, int64_t* indices, int storage_order) {
  const int64_t count = p.planes * p.out_h * p.out_w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % p.out_w, oh = (i / p.out_w) % p.out_h, pl = i / (p.out_w * p.out_h);
    const T* xp = x + pl * p.in_h * p.in_w;
    const int64_t sh = oh * p.s_h - p.pad_top, sw = ow * p.s_w - p.pad_left;
    int64_t kh0, kh1, kw0, kw1;
    tap_range(sh, p.d_h, p.k_h, 0, p.in_h, kh0, kh1);
    tap_range(sw, p.d_w, p.k_w, 0, p.in_w, kw0, kw1);
    if (kMax) {
      float best = -INFINITY;
      bool any = false;
      int64_t bh = 0, bw = 0;
      for (int64_t kh = kh0; kh < kh1; ++kh)
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const float v = load(xp, (sh + kh * p.d_h) * p.in_w + sw + kw * p.d_w);
          if (v > best || !any) { best = v; any = true; bh = sh + kh * p.d_h; bw = sw + kw * p.d_w; }
        }
      store(y, i, best);
      if (indices != nullptr)
        indices[i] = !any ? -1 : pl * p.in_h * p.in_w + (storage_order == 0 ? bh * p.in_w + bw : bh + bw * p.in_h);
    } else {
      float sum = 0.0f;
      for (int64_t kh = kh0; kh < kh1; ++kh)
        for (int64_t kw = kw0; kw < kw1; ++kw) sum += load(xp, (sh + kh * p.d_h) * p.in_w + sw + kw * p.d_w);
      int64_t cnt;
      if (p.count_include_pad) {
        int64_t ph0, ph1, pw0, pw1;
        tap_range(sh, p.d_h, p.k_h, -p.pad_top, p.in_h + p.pad_bottom, ph0, ph1);
        tap_range(sw, p.d_w, p.k_w, -p.pad_left, p.in_w + p.pad_right, pw0, pw1);
        cnt = (ph1 - ph0) * (pw1 - pw0);
      } else {
        cnt = (kh1 - kh0) * (kw1 - kw0);
      }
      store(y, i, sum / static_cast<float>(cnt));
    }
  }
}

template <typename T>
__global__ void global_average_pool_kernel(const T* x, T* y, int64_t planes, int64_t spatial) {
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= planes) return;
  const T* xp = x + warp * spatial;
  float sum = 0.0f;
  for (int64_t j = lane; j < spatial; j += 32) sum += load(xp, j);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) store(y, warp, sum / static_cast<float>(spatial));
}

template <typename T>
__global__ void softmax_kernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= outer * inner) return;
  const int64_t o = warp / inner, in = warp % inner;
  const int64_t base = o * len * inner + in;
  float mx = -INFINITY;
  for (int64_t a = lane; a < len; a += 32) mx = fmaxf(mx, load(x, base + a * inner));
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, s));
  float sum = 0.0f;
  for (int64_t a = lane; a < len; a += 32) sum += expf(load(x, base + a * inner) - mx);
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
  const float inv = 1.0f / sum;
  for (int64_t a = lane; a < len; a += 32) store(y, base + a * inner, expf(load(x, base + a * inner) - mx) * inv);
}

template <bool kMax>
Status launch_pool(ElemType t, const void* x, void* y, const Pool2dParams& p, cudaStream_t stream, int64_t* indices = nullptr,
                   int storage_order = 0) {
  const int64_t count = p.planes * p.out_h * p.out_w;
  if (count <= 0) return Status::ok();
  if (t == ElemType::kFloat32)
    pool2d_kernel<float, kMax><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), p,
                                                                        indices, storage_order);
  else
    pool2d_kernel<__half, kMax><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), p,
                                                                         indices, storage_order);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace

Status max_pool_2d(ElemType t, const void* x, void* y, const Pool2dParams& p, cudaStream_t stream) {
  return launch_pool<true>(t, x, y, p, stream);
}
Status max_pool_2d_indices(ElemType t, const void* x, void* y, int64_t* indices, int storage_order, const Pool2dParams& p,
                           cudaStream_t stream) {
  if (indices == nullptr) return invalid_argument("max_pool_2d_indices: null indices");
  if (storage_order != 0 && storage_order != 1) return invalid_argument("max_pool_2d_indices: storage_order 0 or 1");
  return launch_pool<true>(t, x, y, p, stream, indices, storage_order);
}
Status average_pool_2d(ElemType t, const void* x, void* y, const Pool2dParams& p, cudaStream_t stream) {
  return launch_pool<false>(t, x, y, p, stream);
}

Status global_average_pool(ElemType t, const void* x, void* y, int64_t planes, int64_t spatial, cudaStream_t stream) {
  if (planes <= 0) return Status::ok();
  if (spatial < 1) return invalid_argument("global_average_pool: empty plane");
  const unsigned grid = grid_for(planes, kThreads / 32);
  if (t == ElemType::kFloat32)
    global_average_pool_kernel<float><<<grid, kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), planes, spatial);
  else
    global_average_pool_kernel<__half><<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), planes, spatial);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status softmax(ElemType t, const void* x, void* y, int64_t outer, int64_t axis_len, int64_t inner, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows <= 0 || axis_len <= 0) return Status::ok();
  const unsigned grid = grid_for(rows, kThreads / 32);
  if (t == ElemType::kFloat32)
    softmax_kernel<float><<<grid, kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), outer, axis_len, inner);
  else
    softmax_kernel<__half><<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), outer, axis_len, inner);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
