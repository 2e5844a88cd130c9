// Tensor-core INT8 GEMM (sm_80+): acc[M,N] = A[M,K] x Bt[N,K]^T with mma.sync.m16n8k32.row.col.s32.s8.s8.s32,
// then either int32 out or the fused epilogue acc * row_scale[m] * col_scale[n] (+ bias[n]) -> fp16 / bf16.
// Thread mapping: block tile BM x BN (128x128 or 128x256), 8 warps as 2 (M) x 4 (N), warp tile 64 x (BN/4);
// K in 64-byte stages through a STAGES-deep cp.async ring; shared rows of 64 bytes with the 16-byte chunk
// index XOR-swizzled by (row >> 1) & 3 so ldmatrix.x4 and cp.async are bank-conflict free.
// Blocks are rasterised in groups of 8 M-tiles for L2 reuse. K % 16 != 0 uses guarded byte loads.
// Test: tests/gpu/gemm_s8_test.cpp, `warpstream gemm --check`; time: `warpstream gemm --bench`.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemm_s8.h"

namespace ws::kernels {
namespace {

constexpr int kBK = 64;  // bytes (int8 values) of K per stage
constexpr int kThreads = 256;

__device__ __forceinline__ int swz(int row, int chunk) { return row * kBK + ((chunk ^ ((row >> 1) & 3)) << 4); }

template <int BM, int BN, int STAGES, bool kAligned, DType OUT>
__global__ void __launch_bounds__(kThreads) gemm_s8_mma_kernel(const int8_t* __restrict__ a,
                                                               const int8_t* __restrict__ bt, void* __restrict__ out,
                                                               int m, int n, int k, GemmEpilogue ep) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int WM = 64, WN = BN / 4;
  constexpr int MT = WM / 16, NT = WN / 8;
  extern __shared__ __align__(128) int8_t smem[];
  int8_t* sa = smem;                        // STAGES x BM x 64
  int8_t* sb = smem + STAGES * BM * kBK;    // STAGES x BN x 64

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm0 = (warp / 4) * WM, wn0 = (warp % 4) * WN;

  // Grouped rasterisation.
  const int num_m = (m + BM - 1) / BM, num_n = (n + BN - 1) / BN;
  constexpr int kGroup = 8;
  const int bid = blockIdx.x;
  const int per_group = kGroup * num_n;
  const int group = bid / per_group;
  const int first_m = group * kGroup;
  const int gsz = min(num_m - first_m, kGroup);
  const int pid_m = first_m + (bid % per_group) % gsz;
  const int pid_n = (bid % per_group) / gsz;
  const int m0 = pid_m * BM, n0 = pid_n * BN;
  const int ktiles = (k + kBK - 1) / kBK;

  auto load_stage = [&](int stage, int kt) {
    const int k0 = kt * kBK;
    int8_t* dsa = sa + stage * BM * kBK;
    int8_t* dsb = sb + stage * BN * kBK;
#pragma unroll
    for (int i = 0; i < (BM * 4) / kThreads; ++i) {
      const int idx = tid + i * kThreads, r = idx >> 2, ch = idx & 3;
      const int gm = m0 + r, gk = k0 + ch * 16;
      int8_t* dst = dsa + swz(r, ch);
      if constexpr (kAligned) {
        const bool ok = gm < m && gk < k;
        const int8_t* src = ok ? a + size_t(gm) * k + gk : a;
        const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0));
      } else {
        alignas(16) int8_t v[16];
#pragma unroll
        for (int q = 0; q < 16; ++q) v[q] = (gm < m && gk + q < k) ? a[size_t(gm) * k + gk + q] : int8_t(0);
        *reinterpret_cast<int4*>(dst) = *reinterpret_cast<int4*>(v);
      }
    }
#pragma unroll
    for (int i = 0; i < (BN * 4) / kThreads; ++i) {
      const int idx = tid + i * kThreads, r = idx >> 2, ch = idx & 3;
      const int gn = n0 + r, gk = k0 + ch * 16;
      int8_t* dst = dsb + swz(r, ch);
      if constexpr (kAligned) {
        const bool ok = gn < n && gk < k;
        const int8_t* src = ok ? bt + size_t(gn) * k + gk : bt;
        const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0));
      } else {
        alignas(16) int8_t v[16];
#pragma unroll
        for (int q = 0; q < 16; ++q) v[q] = (gn < n && gk + q < k) ? bt[size_t(gn) * k + gk + q] : int8_t(0);
        *reinterpret_cast<int4*>(dst) = *reinterpret_cast<int4*>(v);
      }
    }
  };

  int acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }

  for (int kt = 0; kt < ktiles; ++kt) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
    __syncthreads();
    {
      const int next = kt + STAGES - 1;
      if (next < ktiles) load_stage(next % STAGES, next);
      asm volatile("cp.async.commit_group;\n" ::);
    }
    const int stage = kt % STAGES;
    const int8_t* csa = sa + stage * BM * kBK;
    const int8_t* csb = sb + stage * BN * kBK;
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      unsigned af[MT][4], bf[NT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int j = lane >> 3;
        const int r = wm0 + mt * 16 + (j & 1) * 8 + (lane & 7);
        const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(csa + swz(r, kk * 2 + (j >> 1))));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(af[mt][0]), "=r"(af[mt][1]), "=r"(af[mt][2]), "=r"(af[mt][3])
                     : "r"(addr));
      }
#pragma unroll
      for (int nt = 0; nt < NT; nt += 2) {
        const int j = lane >> 3;
        const int r = wn0 + nt * 8 + (j >> 1) * 8 + (lane & 7);
        const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(csb + swz(r, kk * 2 + (j & 1))));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(bf[nt][0]), "=r"(bf[nt][1]), "=r"(bf[nt + 1][0]), "=r"(bf[nt + 1][1])
                     : "r"(addr));
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          asm volatile(
              "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
              "{%0,%1,%2,%3};\n"
              : "+r"(acc[mt][nt][0]), "+r"(acc[mt][nt][1]), "+r"(acc[mt][nt][2]), "+r"(acc[mt][nt][3])
              : "r"(af[mt][0]), "r"(af[mt][1]), "r"(af[mt][2]), "r"(af[mt][3]), "r"(bf[nt][0]), "r"(bf[nt][1]));
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);

  // Epilogue straight from the accumulator fragments: c0,c1 at (g, 2t..2t+1), c2,c3 at (g+8, 2t..2t+1).
  const int g = lane >> 2, t4 = lane & 3;
  const bool pair_ok = (n % 2) == 0;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m0 + wm0 + mt * 16 + g + half * 8;
      if (row >= m) continue;
      float rs = 1.f;
      if constexpr (OUT != DType::kInt32) rs = ep.row_scale[row];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int col = n0 + wn0 + nt * 8 + t4 * 2;
        if (col >= n) continue;
        const int v0 = acc[mt][nt][half * 2], v1 = acc[mt][nt][half * 2 + 1];
        const size_t o = size_t(row) * n + col;
        if constexpr (OUT == DType::kInt32) {
          int* c = static_cast<int*>(out);
          if (pair_ok && col + 1 < n) {
            *reinterpret_cast<int2*>(c + o) = make_int2(v0, v1);
          } else {
            c[o] = v0;
            if (col + 1 < n) c[o + 1] = v1;
          }
        } else {
          float f0 = float(v0) * rs * ep.col_scale[col];
          float f1 = (col + 1 < n) ? float(v1) * rs * ep.col_scale[col + 1] : 0.f;
          if (ep.bias) {
            f0 += ep.bias[col];
            if (col + 1 < n) f1 += ep.bias[col + 1];
          }
          if constexpr (OUT == DType::kFloat16) {
            __half* c = static_cast<__half*>(out);
            if (pair_ok && col + 1 < n) {
              *reinterpret_cast<__half2*>(c + o) = __floats2half2_rn(f0, f1);
            } else {
              c[o] = __float2half_rn(f0);
              if (col + 1 < n) c[o + 1] = __float2half_rn(f1);
            }
          } else {
            __nv_bfloat16* c = static_cast<__nv_bfloat16*>(out);
            if (pair_ok && col + 1 < n) {
              *reinterpret_cast<__nv_bfloat162*>(c + o) = __floats2bfloat162_rn(f0, f1);
            } else {
              c[o] = __float2bfloat16_rn(f0);
              if (col + 1 < n) c[o + 1] = __float2bfloat16_rn(f1);
            }
          }
        }
      }
    }
  }
#else
  // Built for an architecture without int8 mma.sync (sm_75 and older): the launcher refuses such devices.
#endif
}

template <int BM, int BN, int STAGES, bool kAligned, DType OUT>
Status launch(const int8_t* a, const int8_t* bt, void* out, int m, int n, int k, const GemmEpilogue& ep,
              cudaStream_t stream) {
  constexpr int smem = STAGES * (BM + BN) * kBK;
  auto kernel = gemm_s8_mma_kernel<BM, BN, STAGES, kAligned, OUT>;
  static bool attr_set = false;  // per instantiation; set once per process (single device assumed per process)
  if (!attr_set) {
    WS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    attr_set = true;
  }
  const int blocks = ((m + BM - 1) / BM) * ((n + BN - 1) / BN);
  kernel<<<blocks, kThreads, smem, stream>>>(a, bt, out, m, n, k, ep);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

template <int BM, int BN, int STAGES>
Status dispatch(DType out_kind, bool aligned, const int8_t* a, const int8_t* bt, void* out, int m, int n, int k,
                const GemmEpilogue& ep, cudaStream_t s) {
  switch (out_kind) {
    case DType::kInt32:
      return aligned ? launch<BM, BN, STAGES, true, DType::kInt32>(a, bt, out, m, n, k, ep, s)
                     : launch<BM, BN, STAGES, false, DType::kInt32>(a, bt, out, m, n, k, ep, s);
    case DType::kFloat16:
      return aligned ? launch<BM, BN, STAGES, true, DType::kFloat16>(a, bt, out, m, n, k, ep, s)
                     : launch<BM, BN, STAGES, false, DType::kFloat16>(a, bt, out, m, n, k, ep, s);
    case DType::kBFloat16:
      return aligned ? launch<BM, BN, STAGES, true, DType::kBFloat16>(a, bt, out, m, n, k, ep, s)
                     : launch<BM, BN, STAGES, false, DType::kBFloat16>(a, bt, out, m, n, k, ep, s);
    default: break;
  }
  return check_gemm_out(out_kind);
}

}  // namespace

const char* mma_tile_name(MmaTile t) {
  switch (t) {
    case MmaTile::k128x128: return "128x128x64_s4";
    case MmaTile::k128x256: return "128x256x64_s3";
  }
  return "?";
}

Status gemm_s8_mma(MmaTile tile, DType out_kind, const int8_t* a, const int8_t* bt, void* out, int m, int n, int k,
                   const GemmEpilogue& ep, cudaStream_t stream) {
  if (m < 1 || n < 1 || k < 1) return invalid_argument("gemm_s8_mma: M, N, K must be >= 1");
  WS_RETURN_IF_ERROR(check_gemm_out(out_kind));
  if (out_kind != DType::kInt32 && (!ep.row_scale || !ep.col_scale))
    return invalid_argument("gemm_s8_mma: fp16/bf16 output needs row_scale and col_scale");
  static int cc_major = -1;
  if (cc_major < 0) {
    int dev = 0;
    WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev));
  }
  if (cc_major < 8) return unsupported("gemm_s8_mma: needs compute capability >= 8.0 (int8 mma.sync m16n8k32)");
  // 16-byte cp.async needs every row start 16-byte aligned: K % 16 == 0 and 16-byte aligned bases.
  const bool aligned = (k % 16) == 0 && (reinterpret_cast<uintptr_t>(a) % 16) == 0 &&
                       (reinterpret_cast<uintptr_t>(bt) % 16) == 0;
  switch (tile) {
    case MmaTile::k128x128: return dispatch<128, 128, 4>(out_kind, aligned, a, bt, out, m, n, k, ep, stream);
    case MmaTile::k128x256: return dispatch<128, 256, 3>(out_kind, aligned, a, bt, out, m, n, k, ep, stream);
  }
  return invalid_argument("gemm_s8_mma: unknown tile");
}

}  // namespace ws::kernels
