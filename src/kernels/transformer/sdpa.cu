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
constexpr int kSimtSub = 16;       // keys per online-softmax rescale (8 for DH = 128: registers)

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
  constexpr int kSub = DH >= 128 ? kSimtSub / 2 : kSimtSub;
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
    for (int j0 = 0; j0 < kSimtKeys; j0 += kSub) {
      float sc[kSub];
      float mt = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < kSub; ++jj) {
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
      for (int jj = 0; jj < kSub; ++jj) {
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


// ---- kMma: tensor cores (mma.sync m16n8k16, bf16 operands, fp32 accumulate), FlashAttention-2 style.
// Block = 4 warps = 64 query rows of one (head, batch); warp w owns rows 16w..16w+15 and keeps its Q
// fragments (A operands, loaded once from global), its score tile S (16 × 64 keys, fp32) and its output
// accumulator O (16 × DH, fp32) in registers. Per 64-key tile: K and V staged in shared memory (rows padded
// by 8 bf16: conflict-free 32-bit fragment loads and ldmatrix), S = Q·Kᵀ by mma (B fragments = 32-bit loads of
// K rows), online softmax on the fragments (row max/sum across the 4 threads of a quad by shuffles),
// P rounded to bf16 and reused in registers as the A operand of O += P·V (B fragments of V by
// ldmatrix.x4.trans). The row sum l adds the bf16-rounded P, so O / l is an exact convex combination of the
// P actually multiplied. Fragment layouts (PTX ISA, mma.m16n8k16 .bf16): lane = 4g + t; A a0 (g, 2t..2t+1),
// a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); B b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g);
// C c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..2t+1).
constexpr int kMmaQueries = 64;  // 4 warps × 16 rows
constexpr int kMmaKeys = 64;

__device__ __forceinline__ void mma_bf16_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // the launcher refuses devices below compute capability 8.0
#endif
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const __nv_bfloat16* smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low 16 bits) = lo
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ float2 unpack_bf16x2(uint32_t u) {
  return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&u));
}

template <int DH>
__global__ void __launch_bounds__(128) sdpa_mma_kernel(SdpaArgs a) {
  constexpr int kStride = DH + 8;  // padded smem row (bf16)
  constexpr int kC8 = DH / 8, kK16 = DH / 16, kN8 = DH / 8, kKeyN8 = kMmaKeys / 8;
  __shared__ __align__(16) __nv_bfloat16 ks[kMmaKeys * kStride];
  __shared__ __align__(16) __nv_bfloat16 vs[kMmaKeys * kStride];
  __shared__ float bs[kMmaKeys];
  constexpr float kLog2e = 1.4426950408889634f;

  const int h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t row_stride = int64_t(a.heads) * a.hd;
  const int64_t q0 = int64_t(blockIdx.x) * kMmaQueries + warp * 16;

  // Q fragments (zero past seq_q and past head_dim).
  uint32_t qf[kK16][4];
  {
    const int64_t r0 = q0 + g, r1 = q0 + g + 8;
    const __nv_bfloat16* base = a.q + int64_t(b) * a.sq * row_stride + int64_t(h) * a.hd;
    auto ld = [&](int64_t r, int col) -> uint32_t {
      if (r >= a.sq || col >= a.hd) return 0u;
      return *reinterpret_cast<const uint32_t*>(base + r * row_stride + col);
    };
#pragma unroll
    for (int kc = 0; kc < kK16; ++kc) {
      qf[kc][0] = ld(r0, kc * 16 + 2 * t);
      qf[kc][1] = ld(r1, kc * 16 + 2 * t);
      qf[kc][2] = ld(r0, kc * 16 + 2 * t + 8);
      qf[kc][3] = ld(r1, kc * 16 + 2 * t + 8);
    }
  }
  float o[kN8][4];
#pragma unroll
  for (int n = 0; n < kN8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;  // rows g and g + 8 (l: this thread's partial)
  const int hd8 = a.hd / 8;

  for (int64_t k0 = 0; k0 < a.skv; k0 += kMmaKeys) {
    __syncthreads();  // the previous tile is consumed
    for (int i = threadIdx.x; i < kMmaKeys * kC8; i += 128) {
      const int r = i / kC8, c = i % kC8;
      const int64_t j = k0 + r;
      uint4 ku = make_uint4(0, 0, 0, 0), vu = make_uint4(0, 0, 0, 0);
      if (j < a.skv && c < hd8) {
        const int64_t off = (int64_t(b) * a.skv + j) * row_stride + int64_t(h) * a.hd + c * 8;
        ku = *reinterpret_cast<const uint4*>(a.k + off);
        vu = *reinterpret_cast<const uint4*>(a.v + off);
      }
      *reinterpret_cast<uint4*>(&ks[r * kStride + c * 8]) = ku;
      *reinterpret_cast<uint4*>(&vs[r * kStride + c * 8]) = vu;
    }
    for (int r = threadIdx.x; r < kMmaKeys; r += 128) {
      const int64_t j = k0 + r;
      bs[r] = j < a.skv ? (a.bias ? a.bias[int64_t(b) * a.skv + j] * kLog2e : 0.0f) : -INFINITY;
    }
    __syncthreads();

    // S = Q·Kᵀ (16 × 64 per warp).
    float s[kKeyN8][4];
#pragma unroll
    for (int n = 0; n < kKeyN8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kc = 0; kc < kK16; ++kc)
#pragma unroll
      for (int n = 0; n < kKeyN8; ++n) {
        const __nv_bfloat16* kr = &ks[(n * 8 + g) * kStride + kc * 16 + 2 * t];
        mma_bf16_16816(s[n], qf[kc], *reinterpret_cast<const uint32_t*>(kr),
                       *reinterpret_cast<const uint32_t*>(kr + 8));
      }
    // Online softmax (log2 domain).
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < kKeyN8; ++n) {
      const float b0 = bs[n * 8 + 2 * t], b1 = bs[n * 8 + 2 * t + 1];
      s[n][0] = s[n][0] * a.scale_log2 + b0;
      s[n][1] = s[n][1] * a.scale_log2 + b1;
      s[n][2] = s[n][2] * a.scale_log2 + b0;
      s[n][3] = s[n][3] * a.scale_log2 + b1;
      mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
      mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
    const float mu0 = mn0 == -INFINITY ? 0.0f : mn0, mu1 = mn1 == -INFINITY ? 0.0f : mn1;
    const float c0 = exp2f(m0 - mu0), c1 = exp2f(m1 - mu1);
    m0 = mn0;
    m1 = mn1;
    l0 *= c0;
    l1 *= c1;
#pragma unroll
    for (int n = 0; n < kN8; ++n) {
      o[n][0] *= c0;
      o[n][1] *= c0;
      o[n][2] *= c1;
      o[n][3] *= c1;
    }
    // P (bf16) as A fragments, O += P·V.
#pragma unroll
    for (int kk = 0; kk < kMmaKeys / 16; ++kk) {
      uint32_t pa[4];
      pa[0] = pack_bf16x2(exp2f(s[2 * kk][0] - mu0), exp2f(s[2 * kk][1] - mu0));
      pa[1] = pack_bf16x2(exp2f(s[2 * kk][2] - mu1), exp2f(s[2 * kk][3] - mu1));
      pa[2] = pack_bf16x2(exp2f(s[2 * kk + 1][0] - mu0), exp2f(s[2 * kk + 1][1] - mu0));
      pa[3] = pack_bf16x2(exp2f(s[2 * kk + 1][2] - mu1), exp2f(s[2 * kk + 1][3] - mu1));
      {
        const float2 p0 = unpack_bf16x2(pa[0]), p1 = unpack_bf16x2(pa[1]), p2 = unpack_bf16x2(pa[2]),
                     p3 = unpack_bf16x2(pa[3]);
        l0 += p0.x + p0.y + p2.x + p2.y;
        l1 += p1.x + p1.y + p3.x + p3.y;
      }
      const int j = lane >> 3, r = lane & 7;
#pragma unroll
      for (int dn = 0; dn < DH / 16; ++dn) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, &vs[(kk * 16 + r + (j & 1) * 8) * kStride + dn * 16 + (j >> 1) * 8]);
        mma_bf16_16816(o[2 * dn], pa, vb[0], vb[1]);
        mma_bf16_16816(o[2 * dn + 1], pa, vb[2], vb[3]);
      }
    }
  }
#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const float i0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, i1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
  __nv_bfloat16* base = a.o + int64_t(b) * a.sq * row_stride + int64_t(h) * a.hd;
  const int64_t r0 = q0 + g, r1 = q0 + g + 8;
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
    const int col = n * 8 + 2 * t;
    if (col >= a.hd) continue;
    if (r0 < a.sq)
      *reinterpret_cast<__nv_bfloat162*>(base + r0 * row_stride + col) = __floats2bfloat162_rn(o[n][0] * i0, o[n][1] * i0);
    if (r1 < a.sq)
      *reinterpret_cast<__nv_bfloat162*>(base + r1 * row_stride + col) = __floats2bfloat162_rn(o[n][2] * i1, o[n][3] * i1);
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
    case SdpaKernel::kMma:
      if (d.head_dim % 8 != 0 || d.head_dim > 128)
        return unsupported("sdpa (" + std::string(sdpa_kernel_name(k)) + "): head_dim " + std::to_string(d.head_dim) +
                           " is not a multiple of 8 up to 128");
      if ((d.seq_q + kMmaQueries - 1) / kMmaQueries > 0x7fffffff) return bad("seq_q too large for the grid");
      return Status::ok();
  }
  return bad("unknown kernel");
}

}  // namespace

const char* sdpa_kernel_name(SdpaKernel k) {
  switch (k) {
    case SdpaKernel::kSimt: return "simt";
    case SdpaKernel::kMma: return "mma";
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
  const int64_t hd = d.head_dim;
  if (k == SdpaKernel::kMma) {
    int dev = 0, major = 0;
    WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 8) return unsupported("sdpa (mma): needs compute capability >= 8.0 (bf16 mma.sync), device has " +
                                      std::to_string(major) + ".x");
    const dim3 grid(static_cast<unsigned>((d.seq_q + kMmaQueries - 1) / kMmaQueries), static_cast<unsigned>(d.heads),
                    static_cast<unsigned>(d.batch));
    if (hd <= 16) sdpa_mma_kernel<16><<<grid, 128, 0, stream>>>(a);
    else if (hd <= 32) sdpa_mma_kernel<32><<<grid, 128, 0, stream>>>(a);
    else if (hd <= 64) sdpa_mma_kernel<64><<<grid, 128, 0, stream>>>(a);
    else sdpa_mma_kernel<128><<<grid, 128, 0, stream>>>(a);
    return launched("sdpa (mma) launch");
  }
  const dim3 grid(static_cast<unsigned>((d.seq_q + kSimtQueries - 1) / kSimtQueries), static_cast<unsigned>(d.heads),
                  static_cast<unsigned>(d.batch));
  if (hd <= 8) sdpa_simt_kernel<8><<<grid, kSimtQueries, 0, stream>>>(a);
  else if (hd <= 16) sdpa_simt_kernel<16><<<grid, kSimtQueries, 0, stream>>>(a);
  else if (hd <= 32) sdpa_simt_kernel<32><<<grid, kSimtQueries, 0, stream>>>(a);
  else if (hd <= 64) sdpa_simt_kernel<64><<<grid, kSimtQueries, 0, stream>>>(a);
  else sdpa_simt_kernel<128><<<grid, kSimtQueries, 0, stream>>>(a);
  return launched("sdpa (simt) launch");
}

}  // namespace ws::kernels
