// Kernels of the GPU LTX-Video block (src/flow/models/ltx_block.h) on row-strided slices of the fused QKV/KV GEMM
// outputs: q/k RMSNorm (affine, across heads) + interleaved RoPE and the fallback SDPA (bf16 key bias); plus the
// per-token fp8/int8 activation quantization and the fp8 follow-up scaling. Declared in ltx_block_kernels.h
// (formulas and layouts there). All arithmetic in fp32, one bf16 rounding per output.
// Thread mapping: row kernels = one 256-thread block per row (block-wide sum/max via warp shuffles + shared
// memory); elementwise kernels = one thread per element, grid-stride; SDPA = one warp per (query, head, batch).
// Test: tests/gpu/ltx_block_test.cpp (ws_gpu_tests --gtest_filter='LtxBlockGpu*') checks the whole block, and so every
// kernel here, against the CPU reference block (src/reference/ltx.h) and diffusers goldens per intermediate
// (the fallback SDPA with cuDNN skipped; fp8/int8 quantization through the 8-bit vs bf16 block tests).
// Time: `warpstream ltx-block --profile` prints the per-stage breakdown (event pairs per stage).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cfloat>
#include <string>

#include "cuda/cuda_util.h"
#include "flow/models/ltx_block_kernels.h"

namespace ws::flow::ltx {
namespace {

constexpr int kThreads = 256;
using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ld_bf16(const bf16* p) { return __bfloat162float(*p); }

// Block-wide sum (every thread gets the result). `red` holds kThreads/32 floats.
__device__ __forceinline__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float s = 0.f;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += red[w];
  return s;
}

__device__ __forceinline__ float block_max(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float s = 0.f;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s = fmaxf(s, red[w]);
  return s;
}

__global__ void qk_norm_rope_kernel(bf16* __restrict__ x, int64_t ld, const bf16* __restrict__ w,
                                    const float* __restrict__ cs, const float* __restrict__ sn, int tokens, int dim,
                                    float eps) {
  __shared__ float red[kThreads / 32];
  const int64_t row = blockIdx.x;
  bf16* xr = x + row * ld;
  float ss = 0.f;
  for (int j = threadIdx.x; j < dim; j += blockDim.x) { float v = ld_bf16(xr + j); ss += v * v; }
  const float inv = rsqrtf(block_sum(ss, red) / dim + eps);
  const int64_t trow = (int64_t)(row % tokens) * dim;
  // Each thread owns whole pairs (2i, 2i+1), so the in-place update reads only its own elements.
  for (int i = threadIdx.x; i < dim / 2; i += blockDim.x) {
    const int j0 = 2 * i, j1 = 2 * i + 1;
    float a = ld_bf16(xr + j0) * inv * __bfloat162float(w[j0]);
    float c = ld_bf16(xr + j1) * inv * __bfloat162float(w[j1]);
    if (cs != nullptr) {
      const float a2 = a * cs[trow + j0] - c * sn[trow + j0];
      const float c2 = c * cs[trow + j1] + a * sn[trow + j1];
      a = a2;
      c = c2;
    }
    xr[j0] = __float2bfloat16_rn(a);
    xr[j1] = __float2bfloat16_rn(c);
  }
}

constexpr int kSdpaMaxDh = 128;
constexpr int kSdpaWarps = 4;

__global__ void sdpa_fallback_kernel(const bf16* __restrict__ q, int64_t ld_q, const bf16* __restrict__ k, int64_t ld_k,
                                     const bf16* __restrict__ v, int64_t ld_v, bf16* __restrict__ o, int64_t ld_o,
                                     const bf16* __restrict__ bias, int heads, int dh, int sq, int skv, float scale) {
  __shared__ float qs[kSdpaWarps][kSdpaMaxDh];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int qi = blockIdx.x * kSdpaWarps + warp;
  const int h = blockIdx.y, b = blockIdx.z;
  const bool active = qi < sq;
  const bf16* qr = q + ((int64_t)b * sq + (active ? qi : 0)) * ld_q + (int64_t)h * dh;
  for (int d = lane; d < dh; d += 32) qs[warp][d] = ld_bf16(qr + d) * scale;
  __syncwarp();
  float acc[kSdpaMaxDh / 32];
#pragma unroll
  for (int t = 0; t < kSdpaMaxDh / 32; ++t) acc[t] = 0.f;
  float m = -FLT_MAX, l = 0.f;
  const bf16* kb = k + (int64_t)b * skv * ld_k + (int64_t)h * dh;
  const bf16* vb = v + (int64_t)b * skv * ld_v + (int64_t)h * dh;
  for (int k0 = 0; k0 < skv; k0 += 32) {
    const int kj = k0 + lane;
    float sc = -FLT_MAX;
    if (kj < skv) {
      const bf16* kr = kb + (int64_t)kj * ld_k;
      float dot = 0.f;
      for (int d = 0; d < dh; ++d) dot += qs[warp][d] * ld_bf16(kr + d);
      if (bias != nullptr) dot += ld_bf16(bias + (int64_t)b * skv + kj);
      sc = dot;
    }
    float tmax = sc;
    for (int off = 16; off > 0; off >>= 1) tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, off));
    const float mnew = fmaxf(m, tmax);
    const float corr = __expf(m - mnew);
    const float p = kj < skv ? __expf(sc - mnew) : 0.f;
    float psum = p;
    for (int off = 16; off > 0; off >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, off);
    l = l * corr + psum;
#pragma unroll
    for (int t = 0; t < kSdpaMaxDh / 32; ++t) acc[t] *= corr;
    const int n = min(32, skv - k0);
    for (int j = 0; j < n; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      const bf16* vr = vb + (int64_t)(k0 + j) * ld_v;
#pragma unroll
      for (int t = 0; t < kSdpaMaxDh / 32; ++t) {
        const int d = lane + 32 * t;
        if (d < dh) acc[t] += pj * ld_bf16(vr + d);
      }
    }
    m = mnew;
  }
  if (!active) return;
  bf16* orow = o + ((int64_t)b * sq + qi) * ld_o + (int64_t)h * dh;
  const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
  for (int t = 0; t < kSdpaMaxDh / 32; ++t) {
    const int d = lane + 32 * t;
    if (d < dh) orow[d] = __float2bfloat16_rn(acc[t] * inv);
  }
}

__global__ void quantize_rows_e4m3_kernel(const bf16* __restrict__ x, int64_t ld, __nv_fp8_e4m3* __restrict__ q,
                                          float* __restrict__ scale, int cols) {
  __shared__ float red[kThreads / 32];
  const int64_t row = blockIdx.x;
  const bf16* xr = x + row * ld;
  float mx = 0.f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, fabsf(ld_bf16(xr + j)));
  mx = block_max(mx, red);
  const float s = fmaxf(mx / 448.f, 1e-12f);
  const float inv = 1.f / s;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) q[row * cols + j] = __nv_fp8_e4m3(ld_bf16(xr + j) * inv);
  if (threadIdx.x == 0) scale[row] = s;
}

__global__ void quantize_rows_s8_kernel(const bf16* __restrict__ x, int64_t ld, int8_t* __restrict__ q,
                                        float* __restrict__ scale, int cols) {
  __shared__ float red[kThreads / 32];
  const int64_t row = blockIdx.x;
  const bf16* xr = x + row * ld;
  float mx = 0.f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, fabsf(ld_bf16(xr + j)));
  mx = block_max(mx, red);
  const float s = fmaxf(mx / 127.f, 1e-12f);
  const float inv = 1.f / s;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = fminf(fmaxf(rintf(ld_bf16(xr + j) * inv), -127.f), 127.f);
    q[row * cols + j] = static_cast<int8_t>(v);
  }
  if (threadIdx.x == 0) scale[row] = s;
}

__device__ __forceinline__ float gelu_tanh(float v) {
  const float k0 = 0.7978845608028654f, k1 = 0.044715f;
  return 0.5f * v * (1.f + tanhf(k0 * (v + k1 * v * v * v)));
}

__global__ void scale_bias_act_kernel(bf16* __restrict__ y, const float* __restrict__ row_scale,
                                      const float* __restrict__ col_scale, const bf16* __restrict__ bias, bool gelu,
                                      int cols, int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / cols;
    const int c = (int)(i % cols);
    float v = ld_bf16(y + i);
    if (col_scale != nullptr) v *= col_scale[c];
    if (row_scale != nullptr) v *= row_scale[r];
    if (bias != nullptr) v += __bfloat162float(bias[c]);
    if (gelu) v = gelu_tanh(v);
    y[i] = __float2bfloat16_rn(v);
  }
}

int grid_for(int64_t count) {
  int64_t g = (count + kThreads - 1) / kThreads;
  if (g > 65535 * 8) g = 65535 * 8;
  return (int)(g < 1 ? 1 : g);
}

Status launched(const char* kernel) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return ws::cuda::cuda_status(e, kernel, __FILE__, __LINE__);
  return Status::ok();
}

}  // namespace

Status qk_norm_rope(void* x, int64_t ld, const void* weight, const float* cos, const float* sin, int rows, int tokens,
                    int dim, float eps, cudaStream_t stream) {
  if (rows < 1 || tokens < 1 || dim < 2 || dim % 2 != 0 || ld < dim || (cos == nullptr) != (sin == nullptr))
    return invalid_argument("ltx qk_norm_rope: rows " + std::to_string(rows) + ", dim " + std::to_string(dim) +
                            " (even), ld " + std::to_string(ld) + ", cos and sin both given or both null");
  qk_norm_rope_kernel<<<rows, kThreads, 0, stream>>>(static_cast<bf16*>(x), ld, static_cast<const bf16*>(weight), cos,
                                                     sin, tokens, dim, eps);
  return launched("qk_norm_rope_kernel");
}

Status sdpa_fallback(const void* q, int64_t ld_q, const void* k, int64_t ld_k, const void* v, int64_t ld_v, void* o,
                     int64_t ld_o, const void* bias, int batch, int heads, int head_dim, int sq, int skv, float scale,
                     cudaStream_t stream) {
  if (head_dim < 1 || head_dim > kSdpaMaxDh || batch < 1 || heads < 1 || sq < 1 || skv < 1 || heads > 65535 ||
      batch > 65535)
    return unsupported("ltx sdpa_fallback: head_dim " + std::to_string(head_dim) + " (1.." +
                       std::to_string(kSdpaMaxDh) + "), batch " + std::to_string(batch) + ", heads " +
                       std::to_string(heads) + ", sq " + std::to_string(sq) + ", skv " + std::to_string(skv));
  dim3 grid((sq + kSdpaWarps - 1) / kSdpaWarps, heads, batch);
  sdpa_fallback_kernel<<<grid, kSdpaWarps * 32, 0, stream>>>(
      static_cast<const bf16*>(q), ld_q, static_cast<const bf16*>(k), ld_k, static_cast<const bf16*>(v), ld_v,
      static_cast<bf16*>(o), ld_o, static_cast<const bf16*>(bias), heads, head_dim, sq, skv, scale);
  return launched("sdpa_fallback_kernel");
}

Status quantize_rows_e4m3(const void* x, int64_t ld, void* q, float* scale, int rows, int cols, cudaStream_t stream) {
  if (rows < 1 || cols < 1 || ld < cols) return invalid_argument("ltx quantize_rows_e4m3: bad shape");
  quantize_rows_e4m3_kernel<<<rows, kThreads, 0, stream>>>(static_cast<const bf16*>(x), ld,
                                                           static_cast<__nv_fp8_e4m3*>(q), scale, cols);
  return launched("quantize_rows_e4m3_kernel");
}

Status quantize_rows_s8(const void* x, int64_t ld, void* q, float* scale, int rows, int cols, cudaStream_t stream) {
  if (rows < 1 || cols < 1 || ld < cols) return invalid_argument("ltx quantize_rows_s8: bad shape");
  quantize_rows_s8_kernel<<<rows, kThreads, 0, stream>>>(static_cast<const bf16*>(x), ld, static_cast<int8_t*>(q), scale,
                                                         cols);
  return launched("quantize_rows_s8_kernel");
}

Status scale_bias_act(void* y, const float* row_scale, const float* col_scale, const void* bias, bool gelu, int rows,
                      int cols, cudaStream_t stream) {
  const int64_t count = (int64_t)rows * cols;
  if (count < 1) return invalid_argument("ltx scale_bias_act: empty tensor");
  scale_bias_act_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<bf16*>(y), row_scale, col_scale,
                                                                  static_cast<const bf16*>(bias), gelu, cols, count);
  return launched("scale_bias_act_kernel");
}

}  // namespace ws::flow::ltx
