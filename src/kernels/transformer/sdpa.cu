// Scaled dot-product attention fallback (transformer.h sdpa): o = softmax(scale·q·kᵀ + key_bias)·v per
// (batch, head), non-causal, in the projections' [B, S, H·Dh] layout (no permute), bf16 in/out, float32
// scores, softmax and accumulation. Flash-style: keys are consumed in tiles with an online softmax (running
// max m, running sum l, accumulator rescaled by exp(m_old − m_new) once per 16 keys), so nothing of size
// Sq × Skv is ever stored. Scores use exp2 with log2(e) folded into the scale.
// kSimt thread mapping: block = 128 threads = 128 consecutive query rows of one (head, batch)
// (grid = ceil(Sq/128) × H × B); each thread keeps its q row (bf16 pairs) and its accumulator (float32, DH
// values) in registers. Per key tile (64 keys) the block stages K and V (bf16, zero-filled past Skv and past
// head_dim) and the key bias (−inf past Skv) in shared memory with 16-byte loads; all threads then read the
// same key row (shared-memory broadcast). DH ∈ {8, 16, 32, 64, 128} is the compile-time width; head_dim may be
// any multiple of 8 up to 128 (the padded columns are zero in q, K and V and are not stored).
// Cost: 4·Sq·Skv·Dh FLOP on CUDA cores (fp32 FMA) — a fallback, far below a tensor-core flash kernel.
// Test: tests/gpu/transformer_kernels_test.cpp (--gtest_filter='TransformerKernels.Sdpa*') vs the CPU
// reference in float64 on the same bf16 inputs, NaN-poisoned outputs, Sq not a multiple of 128, masked keys.
// Time: the ltx-block command's per-kernel breakdown (cuDNN SDPA is the primary path).
#include <cuda_bf16.h>

#include <cmath>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/transformer/bf16_math.cuh"
#include "kernels/transformer/transformer.h"

namespace ws::kernels {
namespace {

constexpr int kSimtQueries = 128;  // threads per block = query rows per block
constexpr int kSimtKeys = 64;      // keys per shared-memory tile
constexpr int kSimtSub = 16;       // keys per online-softmax rescale

struct SdpaArgs {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  const float* bias;
  __nv_bfloat16* o;
  int64_t sq, skv;
  int heads, hd;  // hd = runtime head_dim (multiple of 8, ≤ DH)
  float scale_log2;  // scale · log2(e)
};

template <int DH>
__global__ void __launch_bounds__(kSimtQueries) sdpa_simt_kernel(SdpaArgs a) {
  constexpr int kC8 = DH / 8;  // 16-byte chunks per row
  __shared__ __align__(16) __nv_bfloat16 ks[kSimtKeys][DH];
  __shared__ __align__(16) __nv_bfloat16 vs[kSimtKeys][DH];
  __shared__ float bs[kSimtKeys];
  constexpr float kLog2e = 1.4426950408889634f;

  const int h = blockIdx.y, b = blockIdx.z;
  const int64_t s = int64_t(blockIdx.x) * kSimtQueries + threadIdx.x;
  const bool valid = s < a.sq;
  const int64_t row_stride = int64_t(a.heads) * a.hd;
  const int hd8 = a.hd / 8;

  // q row (bf16 pairs), zero past head_dim.
  __nv_bfloat162 q2[DH / 2];
#pragma unroll
  for (int c = 0; c < kC8; ++c) {
    uint4 u = make_uint4(0, 0, 0, 0);
    if (valid && c < hd8) u = *reinterpret_cast<const uint4*>(a.q + (int64_t(b) * a.sq + s) * row_stride + int64_t(h) * a.hd + c * 8);
    const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) q2[c * 4 + i] = p[i];
  }
  float acc[DH];
#pragma unroll
  for (int d = 0; d < DH; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;

  for (int64_t k0 = 0; k0 < a.skv; k0 += kSimtKeys) {
    __syncthreads();  // the previous tile is consumed
    for (int i = threadIdx.x; i < kSimtKeys * kC8; i += kSimtQueries) {
      const int r = i / kC8, c = i % kC8;
      const int64_t j = k0 + r;
      uint4 ku = make_uint4(0, 0, 0, 0), vu = make_uint4(0, 0, 0, 0);
      if (j < a.skv && c < hd8) {
        const int64_t off = (int64_t(b) * a.skv + j) * row_stride + int64_t(h) * a.hd + c * 8;
        ku = *reinterpret_cast<const uint4*>(a.k + off);
        vu = *reinterpret_cast<const uint4*>(a.v + off);
      }
      *reinterpret_cast<uint4*>(&ks[r][c * 8]) = ku;
      *reinterpret_cast<uint4*>(&vs[r][c * 8]) = vu;
    }
    for (int r = threadIdx.x; r < kSimtKeys; r += kSimtQueries) {
      const int64_t j = k0 + r;
      bs[r] = j < a.skv ? (a.bias ? a.bias[int64_t(b) * a.skv + j] * kLog2e : 0.0f) : -INFINITY;
    }
    __syncthreads();
    if (!valid) continue;

#pragma unroll 1
    for (int j0 = 0; j0 < kSimtKeys; j0 += kSimtSub) {
      float sc[kSimtSub];
      float mt = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < kSimtSub; ++jj) {
        const int j = j0 + jj;
        float dot = 0.0f;
#pragma unroll
        for (int c = 0; c < kC8; ++c) {
          const uint4 u = *reinterpret_cast<const uint4*>(&ks[j][c * 8]);
          const __nv_bfloat162* kp = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float2 kf = __bfloat1622float2(kp[i]);
            const float2 qf = __bfloat1622float2(q2[c * 4 + i]);
            dot = fmaf(qf.x, kf.x, dot);
            dot = fmaf(qf.y, kf.y, dot);
          }
        }
        sc[jj] = dot * a.scale_log2 + bs[j];
        mt = fmaxf(mt, sc[jj]);
      }
      const float m_new = fmaxf(m, mt);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // all keys so far −inf: p = 0, no NaN
      const float corr = exp2f(m - m_use);
      l *= corr;
#pragma unroll
      for (int d = 0; d < DH; ++d) acc[d] *= corr;
#pragma unroll
      for (int jj = 0; jj < kSimtSub; ++jj) {
        const int j = j0 + jj;
        const float p = exp2f(sc[jj] - m_use);
        l += p;
#pragma unroll
        for (int c = 0; c < kC8; ++c) {
          const uint4 u = *reinterpret_cast<const uint4*>(&vs[j][c * 8]);
          const __nv_bfloat162* vp = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float2 vf = __bfloat1622float2(vp[i]);
            acc[c * 8 + 2 * i] = fmaf(p, vf.x, acc[c * 8 + 2 * i]);
            acc[c * 8 + 2 * i + 1] = fmaf(p, vf.y, acc[c * 8 + 2 * i + 1]);
          }
        }
      }
      m = m_new;
    }
  }
  if (!valid) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  __nv_bfloat16* orow = a.o + (int64_t(b) * a.sq + s) * row_stride + int64_t(h) * a.hd;
#pragma unroll
  for (int c = 0; c < kC8; ++c) {
    if (c >= hd8) break;
    float f[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = acc[c * 8 + i] * inv;
    device::store8(orow + c * 8, f);
  }
}

Status launched(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return cuda::cuda_status(err, what, __FILE__, __LINE__);
  return Status::ok();
}

Status check_dims(SdpaKernel k, const SdpaDims& d) {
  auto bad = [](const std::string& why) { return invalid_argument("sdpa: " + why); };
  if (d.batch < 1 || d.seq_q < 1 || d.seq_kv < 1 || d.heads < 1 || d.head_dim < 1)
    return bad("batch " + std::to_string(d.batch) + ", seq_q " + std::to_string(d.seq_q) + ", seq_kv " +
               std::to_string(d.seq_kv) + ", heads " + std::to_string(d.heads) + ", head_dim " +
               std::to_string(d.head_dim) + " must all be >= 1");
  if (d.batch > 65535 || d.heads > 65535)
    return bad("batch " + std::to_string(d.batch) + " / heads " + std::to_string(d.heads) + " > 65535 (grid z / y)");
  if ((d.seq_q + kSimtQueries - 1) / kSimtQueries > 0x7fffffff) return bad("seq_q too large for the grid");
  switch (k) {
    case SdpaKernel::kSimt:
      if (d.head_dim % 8 != 0 || d.head_dim > 128)
        return unsupported("sdpa (" + std::string(sdpa_kernel_name(k)) + "): head_dim " + std::to_string(d.head_dim) +
                           " is not a multiple of 8 up to 128");
      return Status::ok();
  }
  return bad("unknown kernel");
}

}  // namespace

const char* sdpa_kernel_name(SdpaKernel k) {
  switch (k) {
    case SdpaKernel::kSimt: return "simt";
  }
  return "?";
}

bool sdpa_supported(SdpaKernel k, const SdpaDims& d) { return check_dims(k, d).is_ok(); }

Status sdpa(SdpaKernel k, const SdpaDims& d, const __nv_bfloat16* q, const __nv_bfloat16* kmat,
            const __nv_bfloat16* v, const float* key_bias, float scale, __nv_bfloat16* o, cudaStream_t stream) {
  if (Status s = check_dims(k, d); !s) return s;
  if (!q || !kmat || !v || !o) return invalid_argument("sdpa: q, k, v and o must not be null");
  if (o == q || o == kmat || o == v) return invalid_argument("sdpa: o must not alias q, k or v");
  if (!std::isfinite(scale)) return invalid_argument("sdpa: scale must be finite");
  if (!aligned16(q) || !aligned16(kmat) || !aligned16(v) || !aligned16(o))
    return unsupported("sdpa: q, k, v and o must be 16-byte aligned");
  SdpaArgs a;
  a.q = q;
  a.k = kmat;
  a.v = v;
  a.bias = key_bias;
  a.o = o;
  a.sq = d.seq_q;
  a.skv = d.seq_kv;
  a.heads = static_cast<int>(d.heads);
  a.hd = static_cast<int>(d.head_dim);
  a.scale_log2 = scale * 1.4426950408889634f;
  const dim3 grid(static_cast<unsigned>((d.seq_q + kSimtQueries - 1) / kSimtQueries), static_cast<unsigned>(d.heads),
                  static_cast<unsigned>(d.batch));
  const int64_t hd = d.head_dim;
  if (hd <= 8) sdpa_simt_kernel<8><<<grid, kSimtQueries, 0, stream>>>(a);
  else if (hd <= 16) sdpa_simt_kernel<16><<<grid, kSimtQueries, 0, stream>>>(a);
  else if (hd <= 32) sdpa_simt_kernel<32><<<grid, kSimtQueries, 0, stream>>>(a);
  else if (hd <= 64) sdpa_simt_kernel<64><<<grid, kSimtQueries, 0, stream>>>(a);
  else sdpa_simt_kernel<128><<<grid, kSimtQueries, 0, stream>>>(a);
  return launched("sdpa (simt) launch");
}

}  // namespace ws::kernels
