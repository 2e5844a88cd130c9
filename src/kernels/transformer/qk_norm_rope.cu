// q/k RMSNorm across heads + LTX's interleaved RoPE in one pass (transformer.h qk_rmsnorm_rope), and the
// standalone bias + GELU-tanh.
// qk_rmsnorm_rope: n = x·rsqrt(mean(x²)+eps)·w over the full inner dim (torch.nn.RMSNorm(heads·head_dim,
// eps=1e-5, affine), diffusers LTXAttention norm_q / norm_k), then pairs (n[2i], n[2i+1]) rotate with the
// float32 cos/sin tables of LTXVideoRotaryPosEmbed ([S, D] or [B, S, D]; D % 6 leading pad entries hold
// cos = 1, sin = 0, so they pass through): out = n·cos + (−n[2i+1], n[2i])·sin (diffusers apply_rotary_emb).
// Float32 throughout, one bf16 rounding at the store (diffusers rounds n to bf16 before the rotation; the
// difference is below one bf16 ulp of the result).
// Thread mapping: one block per row, grid.y = tensor (q, k). Vector path (dim % 8 == 0, 16-byte aligned
// pointers, dim ≤ 8192): each thread holds VPT chunks of 8 channels (4 rotation pairs) in registers; the sum
// of squares is a block reduction; cos/sin are read as two float4 per chunk. Generic path (any even dim):
// threads stride over the rotation pairs, re-reading x for the second pass.
// bias_gelu_tanh: one thread per 8 elements (16-byte access) when dim % 8 == 0 and aligned, else one per
// element; grid-stride loop.
// Test: tests/gpu/transformer_kernels_test.cpp (--gtest_filter='TransformerKernels.QkNormRope*:
// TransformerKernels.Gelu*'). Time: memory-bound, rows·dim·(2+2) bytes + the tables (cos/sin fp32 [S,D]
// each read once per batch sample from L2 when broadcast).
#include <cuda_bf16.h>

#include <climits>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/transformer/bf16_math.cuh"
#include "kernels/transformer/transformer.h"

namespace ws::kernels {
namespace {

using device::block_sum;
using device::load8;
using device::store8;

struct RopeTensor {
  const __nv_bfloat16* x;
  __nv_bfloat16* y;
  const __nv_bfloat16* w;
};
struct RopeArgs {
  RopeTensor t[2];
  const float* cos;
  const float* sin;
  int64_t seq, dim, batch_stride;
  float eps;
};

template <int VPT>
__global__ void __launch_bounds__(256) qk_rope_vec_kernel(RopeArgs a) {
  const RopeTensor tt = a.t[blockIdx.y];
  const int64_t row = blockIdx.x;
  const int64_t dim = a.dim, nvec = dim / 8;
  float v[VPT][8];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t c = threadIdx.x + int64_t(k) * blockDim.x;
    if (c < nvec) {
      load8(tt.x + row * dim + c * 8, v[k]);
#pragma unroll
      for (int i = 0; i < 8; ++i) sum += v[k][i] * v[k][i];
    }
  }
  const float rstd = rsqrtf(block_sum(sum) / float(dim) + a.eps);
  const int64_t tab = (row / a.seq) * a.batch_stride + (row % a.seq) * dim;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t c = threadIdx.x + int64_t(k) * blockDim.x;
    if (c >= nvec) continue;
    const int64_t d = c * 8;
    float n[8], o[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) n[i] = v[k][i] * rstd;
    if (tt.w) {
      float w[8];
      load8(tt.w + d, w);
#pragma unroll
      for (int i = 0; i < 8; ++i) n[i] *= w[i];
    }
    if (a.cos) {
      float cs[8], sn[8];
      load8(a.cos + tab + d, cs);
      load8(a.sin + tab + d, sn);
#pragma unroll
      for (int i = 0; i < 8; i += 2) {
        o[i] = n[i] * cs[i] - n[i + 1] * sn[i];
        o[i + 1] = n[i + 1] * cs[i + 1] + n[i] * sn[i + 1];
      }
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] = n[i];
    }
    store8(tt.y + row * dim + d, o);
  }
}

__global__ void __launch_bounds__(256) qk_rope_generic_kernel(RopeArgs a) {
  const RopeTensor tt = a.t[blockIdx.y];
  const int64_t row = blockIdx.x;
  const int64_t dim = a.dim;
  const __nv_bfloat16* xr = tt.x + row * dim;
  float sum = 0.0f;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    const float v = __bfloat162float(xr[d]);
    sum += v * v;
  }
  const float rstd = rsqrtf(block_sum(sum) / float(dim) + a.eps);  // every x read is done (barrier) before writes
  const int64_t tab = (row / a.seq) * a.batch_stride + (row % a.seq) * dim;
  for (int64_t p = threadIdx.x; p < dim / 2; p += blockDim.x) {
    const int64_t d = 2 * p;
    float n0 = __bfloat162float(xr[d]) * rstd, n1 = __bfloat162float(xr[d + 1]) * rstd;
    if (tt.w) {
      n0 *= __bfloat162float(tt.w[d]);
      n1 *= __bfloat162float(tt.w[d + 1]);
    }
    float o0 = n0, o1 = n1;
    if (a.cos) {
      o0 = n0 * a.cos[tab + d] - n1 * a.sin[tab + d];
      o1 = n1 * a.cos[tab + d + 1] + n0 * a.sin[tab + d + 1];
    }
    tt.y[row * dim + d] = __float2bfloat16_rn(o0);
    tt.y[row * dim + d + 1] = __float2bfloat16_rn(o1);
  }
}

__device__ __forceinline__ float gelu_tanh(float v) {
  const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * v * (1.0f + tanhf(k0 * (v + 0.044715f * v * v * v)));
}

__global__ void gelu_vec_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, const __nv_bfloat16* bias, int64_t chunks,
                                int64_t dim) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks; c += int64_t(gridDim.x) * blockDim.x) {
    float v[8];
    load8(x + c * 8, v);
    if (bias) {
      float b[8];
      load8(bias + (c * 8) % dim, b);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] += b[i];
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = gelu_tanh(v[i]);
    store8(y + c * 8, v);
  }
}

__global__ void gelu_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, const __nv_bfloat16* bias, int64_t count,
                            int64_t dim) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    float v = __bfloat162float(x[i]);
    if (bias) v += __bfloat162float(bias[i % dim]);
    y[i] = __float2bfloat16_rn(gelu_tanh(v));
  }
}

Status launched(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return cuda::cuda_status(err, what, __FILE__, __LINE__);
  return Status::ok();
}

int round_up32(int64_t n) { return int((n + 31) / 32 * 32); }

}  // namespace

Status qk_rmsnorm_rope(const __nv_bfloat16* x0, __nv_bfloat16* y0, const __nv_bfloat16* w0, const __nv_bfloat16* x1,
                       __nv_bfloat16* y1, const __nv_bfloat16* w1, int64_t rows, int64_t seq, int64_t dim, float eps,
                       const float* cos, const float* sin, int64_t rope_batch_stride, cudaStream_t stream) {
  auto bad = [](const std::string& why) { return invalid_argument("qk_rmsnorm_rope: " + why); };
  if (rows < 1 || seq < 1 || dim < 1)
    return bad("rows " + std::to_string(rows) + ", seq " + std::to_string(seq) + ", dim " + std::to_string(dim) +
               " must be >= 1");
  if (rows % seq != 0) return bad("rows " + std::to_string(rows) + " is not a multiple of seq " + std::to_string(seq));
  if (rows > INT_MAX) return bad("rows " + std::to_string(rows) + " > 2^31-1 (one block per row)");
  if (dim % 2 != 0) return bad("dim " + std::to_string(dim) + " must be even (interleaved rotation pairs)");
  if (!(eps >= 0.0f)) return bad("eps must be >= 0");
  if (!x0 || !y0) return bad("x0 and y0 must not be null");
  if (x1 && !y1) return bad("y1 must not be null when x1 is given");
  if ((cos == nullptr) != (sin == nullptr)) return bad("cos and sin must be both given or both null");
  if (rope_batch_stride < 0) return bad("rope_batch_stride " + std::to_string(rope_batch_stride) + " < 0");
  RopeArgs a;
  a.t[0] = {x0, y0, w0};
  a.t[1] = x1 ? RopeTensor{x1, y1, w1} : a.t[0];
  a.cos = cos;
  a.sin = sin;
  a.seq = seq;
  a.dim = dim;
  a.batch_stride = rope_batch_stride;
  a.eps = eps;
  const dim3 grid(static_cast<unsigned>(rows), x1 ? 2u : 1u);
  const int64_t nvec = dim / 8;
  const bool vec = dim % 8 == 0 && nvec <= 4 * 256 && aligned16(x0) && aligned16(y0) && aligned16(w0) &&
                   aligned16(x1) && aligned16(y1) && aligned16(w1) && aligned16(cos) && aligned16(sin) &&
                   rope_batch_stride % 4 == 0;
  if (vec) {
    const int vpt = nvec <= 256 ? 1 : (nvec <= 512 ? 2 : 4);
    const int threads = round_up32((nvec + vpt - 1) / vpt);
    if (vpt == 1) qk_rope_vec_kernel<1><<<grid, threads, 0, stream>>>(a);
    else if (vpt == 2) qk_rope_vec_kernel<2><<<grid, threads, 0, stream>>>(a);
    else qk_rope_vec_kernel<4><<<grid, threads, 0, stream>>>(a);
  } else {
    const int threads = dim >= 512 ? 256 : round_up32(dim / 2);
    qk_rope_generic_kernel<<<grid, threads, 0, stream>>>(a);
  }
  return launched("qk_rmsnorm_rope launch");
}

Status bias_gelu_tanh(const __nv_bfloat16* x, __nv_bfloat16* y, const __nv_bfloat16* bias, int64_t rows, int64_t dim,
                      cudaStream_t stream) {
  if (rows < 1 || dim < 1)
    return invalid_argument("bias_gelu_tanh: rows " + std::to_string(rows) + " and dim " + std::to_string(dim) +
                            " must be >= 1");
  if (!x || !y) return invalid_argument("bias_gelu_tanh: x and y must not be null");
  if (rows > INT64_MAX / dim) return invalid_argument("bias_gelu_tanh: rows·dim overflows");
  const int64_t count = rows * dim;
  constexpr int kThreads = 256;
  auto blocks = [](int64_t work) {
    const int64_t b = (work + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
  };
  if (dim % 8 == 0 && aligned16(x) && aligned16(y) && aligned16(bias))
    gelu_vec_kernel<<<blocks(count / 8), kThreads, 0, stream>>>(x, y, bias, count / 8, dim);
  else
    gelu_kernel<<<blocks(count), kThreads, 0, stream>>>(x, y, bias, count, dim);
  return launched("bias_gelu_tanh launch");
}

}  // namespace ws::kernels
