// Row-wise norm kernels of the LTX block (transformer.h): RMSNorm / LayerNorm (no affine) with the AdaLN
// modulation x·(1+scale)+shift fused in, the shift/scale read on the fly as scale_shift_table[c] + temb[row, c]
// (no separate modulation pass), and the gated residual add x += (y + bias)·gate, optionally followed in the
// same pass by norm2 + modulation of the new x (one read of x and y, one write of x and of the norm output,
// instead of two kernels and a second read of x).
// bf16 storage, float32 arithmetic; each output rounded to bf16 once. The norm after a residual add reads the
// bf16-rounded new x (what a separate pass would read).
// Thread mapping: one block per row (grid.x = rows). Vector path (dim % 8 == 0, all pointers and strides
// 16-byte aligned, dim ≤ 8192): each thread owns VPT ∈ {1,2,4} chunks of 8 channels (one 16-byte load each;
// chunk v = threadIdx.x + k·blockDim.x), the row lives in registers between the reductions (block_sum:
// warp shuffles + one shared word per warp). Generic path (any dim): ≤ 256 threads stride over the row and
// re-read it from global (L1/L2) for each pass. LayerNorm: two-pass mean then variance (no cancellation).
// Test: tests/gpu/transformer_kernels_test.cpp (ws_gpu_tests --gtest_filter='TransformerKernels.Norm*:
// TransformerKernels.GatedResidual*') vs the CPU reference, NaN-poisoned outputs.
// Time: memory-bound; bytes = rows·dim·2 per bf16 tensor read or written (e.g. norm_modulate at B·S = 6144,
// D = 2048: 50 MB, ~11 us at 4.8 TB/s). Benchmark with nsys / the ltx-block command's per-kernel breakdown.
#include <cuda_bf16.h>

#include <climits>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/transformer/bf16_math.cuh"
#include "kernels/transformer/transformer.h"

namespace ws::kernels {
namespace {

using device::bf16_round;
using device::block_sum;
using device::load8;
using device::store8;

// Device copy of AdaLnTable (kernel parameter).
struct AdaArgs {
  const void* table = nullptr;
  const __nv_bfloat16* temb = nullptr;
  int64_t row_stride = 0, chunk_stride = 0, tokens_per_row = 1;
  int table_fp32 = 0;
};

AdaArgs ada_args(const AdaLnTable* m) {
  AdaArgs a;
  if (!m) return a;
  a.table = m->table;
  a.table_fp32 = m->table_fp32 ? 1 : 0;
  a.temb = m->temb;
  a.row_stride = m->temb_row_stride;
  a.chunk_stride = m->temb_chunk_stride;
  a.tokens_per_row = m->tokens_per_temb_row;
  return a;
}

__device__ __forceinline__ float ada1(const AdaArgs& a, int64_t t, int c, int64_t d, int64_t dim) {
  float v = 0.0f;
  if (a.table)
    v = a.table_fp32 ? static_cast<const float*>(a.table)[c * dim + d]
                     : __bfloat162float(static_cast<const __nv_bfloat16*>(a.table)[c * dim + d]);
  if (a.temb) v += __bfloat162float(a.temb[(t / a.tokens_per_row) * a.row_stride + c * a.chunk_stride + d]);
  return v;
}

__device__ __forceinline__ void ada8(const AdaArgs& a, int64_t t, int c, int64_t d, int64_t dim, float out[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = 0.0f;
  if (a.table) {
    if (a.table_fp32) load8(static_cast<const float*>(a.table) + c * dim + d, out);
    else load8(static_cast<const __nv_bfloat16*>(a.table) + c * dim + d, out);
  }
  if (a.temb) {
    float e[8];
    load8(a.temb + (t / a.tokens_per_row) * a.row_stride + c * a.chunk_stride + d, e);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] += e[i];
  }
}

struct RowArgs {
  // Norm input (norm-only mode) or the residual stream (residual mode, updated in place).
  __nv_bfloat16* x = nullptr;
  // Norm output (nullptr in residual mode without the fused norm).
  __nv_bfloat16* y = nullptr;
  // Residual mode: x += (r + r_bias)·gate.
  const __nv_bfloat16* r = nullptr;
  const __nv_bfloat16* r_bias = nullptr;
  AdaArgs gate;
  int has_gate = 0, gate_chunk = 0;
  // Norm + modulation.
  const __nv_bfloat16* weight = nullptr;
  AdaArgs mod;
  int has_mod = 0, shift_chunk = 0, scale_chunk = 0;
  int layer_norm = 0;
  float eps = 0.0f;
  int64_t dim = 0;
};

// One row; VPT chunks of 8 channels per thread.
template <int VPT>
__global__ void __launch_bounds__(256) row_vec_kernel(RowArgs a) {
  const int64_t t = blockIdx.x;
  const int64_t dim = a.dim;
  const int64_t nvec = dim / 8;
  __nv_bfloat16* xr = a.x + t * dim;
  float v[VPT][8];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t c = threadIdx.x + int64_t(k) * blockDim.x;
    if (c >= nvec) {
#pragma unroll
      for (int i = 0; i < 8; ++i) v[k][i] = 0.0f;
      continue;
    }
    const int64_t d = c * 8;
    load8(xr + d, v[k]);
    if (a.r) {
      float r[8], g[8];
      load8(a.r + t * dim + d, r);
      if (a.r_bias) {
        float b[8];
        load8(a.r_bias + d, b);
#pragma unroll
        for (int i = 0; i < 8; ++i) r[i] += b[i];
      }
      if (a.has_gate) ada8(a.gate, t, a.gate_chunk, d, dim, g);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[k][i] = bf16_round(v[k][i] + (a.has_gate ? r[i] * g[i] : r[i]));
      store8(xr + d, v[k]);
    }
  }
  if (!a.y) return;  // residual add only (uniform over the block: no barrier skipped by part of it)

  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < VPT; ++k)
#pragma unroll
    for (int i = 0; i < 8; ++i) sum += a.layer_norm ? v[k][i] : v[k][i] * v[k][i];
  float mean = 0.0f, rstd;
  if (a.layer_norm) {
    mean = block_sum(sum) / float(dim);
    float sq = 0.0f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      if (threadIdx.x + int64_t(k) * blockDim.x >= nvec) continue;  // padding chunks hold 0, not mean
#pragma unroll
      for (int i = 0; i < 8; ++i) sq += (v[k][i] - mean) * (v[k][i] - mean);
    }
    rstd = rsqrtf(block_sum(sq) / float(dim) + a.eps);
  } else {
    rstd = rsqrtf(block_sum(sum) / float(dim) + a.eps);
  }

#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t c = threadIdx.x + int64_t(k) * blockDim.x;
    if (c >= nvec) continue;
    const int64_t d = c * 8;
    float o[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) o[i] = (v[k][i] - mean) * rstd;
    if (a.weight) {
      float w[8];
      load8(a.weight + d, w);
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] *= w[i];
    }
    if (a.has_mod) {
      float sh[8], sc[8];
      ada8(a.mod, t, a.shift_chunk, d, dim, sh);
      ada8(a.mod, t, a.scale_chunk, d, dim, sc);
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] = o[i] * (1.0f + sc[i]) + sh[i];
    }
    store8(a.y + t * dim + d, o);
  }
}

// Any dim: threads stride over the row; each thread re-reads only elements it wrote itself.
__global__ void __launch_bounds__(256) row_generic_kernel(RowArgs a) {
  const int64_t t = blockIdx.x;
  const int64_t dim = a.dim;
  __nv_bfloat16* xr = a.x + t * dim;
  float sum = 0.0f;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float v = __bfloat162float(xr[d]);
    if (a.r) {
      float r = __bfloat162float(a.r[t * dim + d]);
      if (a.r_bias) r += __bfloat162float(a.r_bias[d]);
      if (a.has_gate) r *= ada1(a.gate, t, a.gate_chunk, d, dim);
      v = bf16_round(v + r);
      xr[d] = __float2bfloat16_rn(v);
    }
    sum += a.layer_norm ? v : v * v;
  }
  if (!a.y) return;
  float mean = 0.0f, rstd;
  if (a.layer_norm) {
    mean = block_sum(sum) / float(dim);
    float sq = 0.0f;
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
      const float v = __bfloat162float(xr[d]) - mean;
      sq += v * v;
    }
    rstd = rsqrtf(block_sum(sq) / float(dim) + a.eps);
  } else {
    rstd = rsqrtf(block_sum(sum) / float(dim) + a.eps);
  }
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float o = (__bfloat162float(xr[d]) - mean) * rstd;
    if (a.weight) o *= __bfloat162float(a.weight[d]);
    if (a.has_mod) o = o * (1.0f + ada1(a.mod, t, a.scale_chunk, d, dim)) + ada1(a.mod, t, a.shift_chunk, d, dim);
    a.y[t * dim + d] = __float2bfloat16_rn(o);
  }
}

Status launched(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return cuda::cuda_status(err, what, __FILE__, __LINE__);
  return Status::ok();
}

int round_up32(int64_t n) { return int((n + 31) / 32 * 32); }

Status check_ada(const char* fn, const char* which, const AdaLnTable* m, int chunk_a, int chunk_b) {
  auto bad = [&](const std::string& why) { return invalid_argument(std::string(fn) + ": " + which + ": " + why); };
  if (!m) return Status::ok();
  for (int c : {chunk_a, chunk_b})
    if (c < 0 || c > kMaxAdaChunk) return bad("chunk " + std::to_string(c) + " outside 0.." + std::to_string(kMaxAdaChunk));
  if (m->temb) {
    if (m->tokens_per_temb_row < 1) return bad("tokens_per_temb_row " + std::to_string(m->tokens_per_temb_row) + " < 1");
    if (m->temb_row_stride < 0 || m->temb_chunk_stride < 0)
      return bad("negative temb stride (" + std::to_string(m->temb_row_stride) + ", " +
                 std::to_string(m->temb_chunk_stride) + ")");
  }
  return Status::ok();
}

bool ada_vec_ok(const AdaLnTable* m) {
  if (!m) return true;
  return aligned16(m->table) && aligned16(m->temb) && m->temb_row_stride % 8 == 0 && m->temb_chunk_stride % 8 == 0;
}

Status launch_rows(const char* fn, const RowArgs& a, int64_t rows, bool vec_ok, cudaStream_t stream) {
  const int64_t dim = a.dim;
  const int64_t nvec = dim / 8;
  if (vec_ok && dim % 8 == 0 && nvec <= 4 * 256) {
    const int vpt = nvec <= 256 ? 1 : (nvec <= 512 ? 2 : 4);
    const int threads = round_up32((nvec + vpt - 1) / vpt);
    const dim3 grid(static_cast<unsigned>(rows));
    if (vpt == 1) row_vec_kernel<1><<<grid, threads, 0, stream>>>(a);
    else if (vpt == 2) row_vec_kernel<2><<<grid, threads, 0, stream>>>(a);
    else row_vec_kernel<4><<<grid, threads, 0, stream>>>(a);
  } else {
    const int threads = dim >= 256 ? 256 : round_up32(dim);
    row_generic_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(a);
  }
  return launched(fn);
}

Status check_rows(const char* fn, int64_t rows, int64_t dim, float eps) {
  if (rows < 1 || dim < 1)
    return invalid_argument(std::string(fn) + ": rows " + std::to_string(rows) + " and dim " + std::to_string(dim) +
                            " must be >= 1");
  if (rows > INT_MAX) return invalid_argument(std::string(fn) + ": rows " + std::to_string(rows) + " > 2^31-1 (one block per row)");
  if (!(eps >= 0.0f)) return invalid_argument(std::string(fn) + ": eps " + std::to_string(eps) + " must be >= 0");
  return Status::ok();
}

}  // namespace

Status norm_modulate(NormKind kind, const __nv_bfloat16* x, __nv_bfloat16* y, int64_t rows, int64_t dim, float eps,
                     const __nv_bfloat16* weight, const AdaLnTable* mod, int shift_chunk, int scale_chunk,
                     cudaStream_t stream) {
  constexpr const char* kFn = "norm_modulate";
  if (Status s = check_rows(kFn, rows, dim, eps); !s) return s;
  if (!x || !y) return invalid_argument("norm_modulate: x and y must not be null");
  if (Status s = check_ada(kFn, "mod", mod, shift_chunk, scale_chunk); !s) return s;
  RowArgs a;
  a.x = const_cast<__nv_bfloat16*>(x);  // read only: no residual in this mode
  a.y = y;
  a.weight = weight;
  a.mod = ada_args(mod);
  a.has_mod = mod ? 1 : 0;
  a.shift_chunk = shift_chunk;
  a.scale_chunk = scale_chunk;
  a.layer_norm = kind == NormKind::kLayerNorm ? 1 : 0;
  a.eps = eps;
  a.dim = dim;
  const bool vec = aligned16(x) && aligned16(y) && aligned16(weight) && ada_vec_ok(mod);
  return launch_rows("norm_modulate launch", a, rows, vec, stream);
}

Status gated_residual_add(__nv_bfloat16* x, const __nv_bfloat16* y, const __nv_bfloat16* y_bias, int64_t rows,
                          int64_t dim, const AdaLnTable* gate, int gate_chunk, cudaStream_t stream,
                          __nv_bfloat16* norm_out, float eps, const AdaLnTable* mod, int shift_chunk,
                          int scale_chunk) {
  constexpr const char* kFn = "gated_residual_add";
  if (Status s = check_rows(kFn, rows, dim, eps); !s) return s;
  if (!x || !y) return invalid_argument("gated_residual_add: x and y must not be null");
  if (norm_out && (norm_out == x || norm_out == y))
    return invalid_argument("gated_residual_add: norm_out must not alias x or y");
  if (Status s = check_ada(kFn, "gate", gate, gate_chunk, gate_chunk); !s) return s;
  if (norm_out)
    if (Status s = check_ada(kFn, "mod", mod, shift_chunk, scale_chunk); !s) return s;
  RowArgs a;
  a.x = x;
  a.y = norm_out;
  a.r = y;
  a.r_bias = y_bias;
  a.gate = ada_args(gate);
  a.has_gate = gate ? 1 : 0;
  a.gate_chunk = gate_chunk;
  a.mod = ada_args(norm_out ? mod : nullptr);
  a.has_mod = (norm_out && mod) ? 1 : 0;
  a.shift_chunk = shift_chunk;
  a.scale_chunk = scale_chunk;
  a.eps = eps;
  a.dim = dim;
  const bool vec = aligned16(x) && aligned16(y) && aligned16(y_bias) && aligned16(norm_out) && ada_vec_ok(gate) &&
                   ada_vec_ok(norm_out ? mod : nullptr);
  return launch_rows("gated_residual_add launch", a, rows, vec, stream);
}

}  // namespace ws::kernels
