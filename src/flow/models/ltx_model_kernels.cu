// Model-level kernels of the GPU LTX-Video transformer: timestep sinusoid, SiLU, mask -> additive bias.
// Thread mapping: one thread per output element (grid-stride loop, 256 threads per block).
// Tested through tests/gpu/ltx_model_test.cpp (whole model vs the CPU reference and diffusers' goldens, stage by stage:
// timestep_proj, embedded_timestep, temb, mask_bias). Not timed on their own: each is < 1 µs at LTX sizes.
#include "flow/models/ltx_model_kernels.h"

#include <cuda_bf16.h>

#include <string>

#include "cuda/cuda_util.h"

namespace ws::flow::ltx {
namespace {

constexpr int kThreads = 256;

int grid_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b < 1 ? 1 : b) : 65535);
}

__global__ void timestep_sinusoid_kernel(const float* __restrict__ t, __nv_bfloat16* __restrict__ out, int64_t rows,
                                         int channels) {
  const int half = channels / 2;
  const int64_t n = rows * channels;
  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < n; idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = idx / channels;
    const int c = static_cast<int>(idx % channels);
    const int i = c < half ? c : c - half;
    // torch: exponent = -ln(10000) * arange(half) / half (fp32); emb = t * exp(exponent)
    const float exponent = -9.210340371976184f * static_cast<float>(i) / static_cast<float>(half);
    const float arg = t[r] * expf(exponent);
    const float v = c < half ? cosf(arg) : sinf(arg);
    out[idx] = __float2bfloat16_rn(v);
  }
}

__global__ void silu_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = __bfloat162float(x[i]);
    y[i] = __float2bfloat16_rn(v / (1.f + expf(-v)));
  }
}

__global__ void mask_bias_kernel(const float* __restrict__ mask, __nv_bfloat16* __restrict__ bias, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float m = __bfloat162float(__float2bfloat16_rn(mask[i]));
    const float one_minus = __bfloat162float(__float2bfloat16_rn(1.f - m));
    bias[i] = __float2bfloat16_rn(one_minus * -10000.f);
  }
}

Status launched(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return cuda::cuda_status(e, what, __FILE__, __LINE__);
  return Status::ok();
}

}  // namespace

Status timestep_sinusoid(const float* t, void* out, int64_t rows, int channels, cudaStream_t stream) {
  if (t == nullptr || out == nullptr || rows < 1 || channels < 2 || channels % 2 != 0)
    return invalid_argument("timestep_sinusoid: rows " + std::to_string(rows) + ", channels " +
                            std::to_string(channels) + " (even, >= 2), non-null pointers");
  timestep_sinusoid_kernel<<<grid_for(rows * channels), kThreads, 0, stream>>>(
      t, static_cast<__nv_bfloat16*>(out), rows, channels);
  return launched("timestep_sinusoid_kernel");
}

Status silu_bf16(const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (x == nullptr || y == nullptr || n < 1) return invalid_argument("silu_bf16: n " + std::to_string(n));
  silu_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x),
                                                     static_cast<__nv_bfloat16*>(y), n);
  return launched("silu_kernel");
}

Status mask_to_bias_bf16(const float* mask, void* bias, int64_t n, cudaStream_t stream) {
  if (mask == nullptr || bias == nullptr || n < 1) return invalid_argument("mask_to_bias_bf16: n " + std::to_string(n));
  mask_bias_kernel<<<grid_for(n), kThreads, 0, stream>>>(mask, static_cast<__nv_bfloat16*>(bias), n);
  return launched("mask_bias_kernel");
}

}  // namespace ws::flow::ltx
