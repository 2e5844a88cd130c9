#pragma once
// The kernel of conv_nhwc.cu (see its file comment and conv_nhwc.h), in a header so that the lab
// (experiments/conv_igemm_01_decompose.cu) can instantiate it with switches that remove one part at a time
// (kLab* below; the product always uses 0).
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "kernels/conv/conv.h"
#include "kernels/conv/conv_nhwc.h"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/pdl.cuh"

namespace ws::kernels::nhwc_igemm_detail {

/// Lab switches (bit set; 0 = the product kernel): results are wrong with any of them, only times mean something.
inline constexpr int kLabNoL2Prefetch = 1;  ///< skip the L2 prefetch of the weight slice
inline constexpr int kLabNoMma = 2;         ///< skip the tensor-core math (loads and barriers only)
inline constexpr int kLabNoLoopLoads = 4;   ///< load only the first kStages - 1 tiles (math and barriers only after)
inline constexpr int kLabNoReduce = 8;      ///< skip the cluster reduction (each CTA stores its own partial)

using device::activate;
using device::pdl_allow_dependents;
using device::pdl_wait;

constexpr int BM = kNhwcTileM, BK = kNhwcTileK;
constexpr int kThreads = 256;  // 8 warps
constexpr int kStages = 4;
constexpr int LDS = BK + 8;  // halves per shared row of the A and B tiles (144 bytes: ldmatrix rows on distinct banks)

// Shared-memory geometry of a tile_n = BN kernel: halves per ring stage (A tile then B tile), the ring's bytes, floats per
// row of the fp32 partial tile that aliases the ring after the mainloop.
template <int BN>
inline constexpr int kStageHalves = (BM + BN) * LDS;
template <int BN>
inline constexpr int kSmemBytes = kStages * kStageHalves<BN> * 2;
template <int BN>
inline constexpr int kLdc = BN + 4;
static_assert(BM * kLdc<64> * 4 <= kSmemBytes<64> && BM * kLdc<32> * 4 <= kSmemBytes<32>, "the C tile aliases the ring");

struct IgemmArgs {
  int n, c_in, in_h, in_w, c_out, out_h, out_w, kh, kw, sh, sw, dh, dw, pt, pl;
  int P, R, k_tiles;
  const float* bias;
  const __half* res;
  Activation act;
  ActivationParams ap;
};

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // the device helpers of the sm_90 kernel body below
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool pred) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int n = pred ? 16 : 0;  // 0: no global read, 16 zero bytes written
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const __half* smem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
// D = A·B + D, m16n8k16, fp16 inputs, fp32 accumulators (PTX ISA: mma.sync, the row.col fragment layouts).
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// bias + residual, activation, 4 fp16 channels k..k+3 of pixel p (one 8-byte store).
__device__ __forceinline__ void epilogue4(const IgemmArgs& a, float4 v, int p, int k, __half* __restrict__ y) {
  float o[4] = {v.x, v.y, v.z, v.w};
  if (a.bias) {
#pragma unroll
    for (int j = 0; j < 4; ++j) o[j] += a.bias[k + j];
  }
  if (a.res) {
    const uint2 r = *reinterpret_cast<const uint2*>(a.res + static_cast<size_t>(p) * a.c_out + k);
    const __half* rh = reinterpret_cast<const __half*>(&r);
#pragma unroll
    for (int j = 0; j < 4; ++j) o[j] += __half2float(rh[j]);
  }
  uint2 out;
  __half* oh = reinterpret_cast<__half*>(&out);
#pragma unroll
  for (int j = 0; j < 4; ++j) oh[j] = __float2half_rn(activate(o[j], a.act, a.ap));
  *reinterpret_cast<uint2*>(y + static_cast<size_t>(p) * a.c_out + k) = out;
}

#endif

template <int BN, int SPLITS, int LAB = 0>
__global__ void __launch_bounds__(kThreads) nhwc_igemm_cluster_kernel(const __half* __restrict__ x, const __half* __restrict__ w,
                                                                      __half* __restrict__ y, IgemmArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // clusters and distributed shared memory: sm_90+ (the launcher refuses older PTX)
  constexpr int kWarpN = BN / 2;               // each warp: 16 pixels (warp % 4) × BN / 2 channels (warp / 4)
  constexpr int NT = kWarpN / 8;               // m16n8 accumulator tiles per warp (4 or 2)
  constexpr int kAVecs = BM * (BK / 8) / kThreads;  // 16-byte A vectors per thread per stage (2)
  constexpr int kBVecs = BN * (BK / 8) / kThreads;  // 16-byte B vectors per thread per stage (2 or 1)
  constexpr int LDC = kLdc<BN>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* ring = reinterpret_cast<__half*>(smem_raw);
  float* Cs = reinterpret_cast<float*>(smem_raw);  // after the mainloop

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp % 4, wn = warp / 4;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN, rank = blockIdx.z;  // cluster (1, 1, SPLITS): rank == blockIdx.z
  const int chunk = (a.k_tiles + SPLITS - 1) / SPLITS;
  const int t_begin = min(a.k_tiles, rank * chunk), t_end = min(a.k_tiles, t_begin + chunk);
  const int n_tiles = t_end - t_begin;

  // This thread's A rows (pixels): vector v = tid + 256·i, row v / 8, 8-half column (v % 8)·8.
  int a_row[kAVecs], a_col[kAVecs], a_iy0[kAVecs], a_ix0[kAVecs];
  const __half* a_img[kAVecs];
  bool a_ok[kAVecs];
#pragma unroll
  for (int i = 0; i < kAVecs; ++i) {
    const int v = tid + kThreads * i;
    a_row[i] = v / 8;
    a_col[i] = (v % 8) * 8;
    const int p = m0 + a_row[i];
    a_ok[i] = p < a.P;
    const int pp = a_ok[i] ? p : 0;
    const int ox = pp % a.out_w, oy = (pp / a.out_w) % a.out_h, img = pp / (a.out_w * a.out_h);
    a_iy0[i] = oy * a.sh - a.pt;
    a_ix0[i] = ox * a.sw - a.pl;
    a_img[i] = x + static_cast<size_t>(img) * a.in_h * a.in_w * a.c_in + a_col[i];
  }
  // This thread's B rows (output channels) and their weight rows.
  int b_row[kBVecs], b_col[kBVecs];
  const __half* b_src[kBVecs];
  bool b_ok[kBVecs];
#pragma unroll
  for (int i = 0; i < kBVecs; ++i) {
    const int v = tid + kThreads * i;
    b_row[i] = v / 8;
    b_col[i] = (v % 8) * 8;
    const int k = n0 + b_row[i];
    b_ok[i] = k < a.c_out;
    b_src[i] = w + static_cast<size_t>(b_ok[i] ? k : 0) * a.R + b_col[i];
  }
  auto load_b = [&](int t, int stage) {
    __half* Bs = ring + stage * kStageHalves<BN> + BM * LDS;
#pragma unroll
    for (int i = 0; i < kBVecs; ++i) cp_async16(Bs + b_row[i] * LDS + b_col[i], b_src[i] + t * BK, b_ok[i]);
  };
  // The A tiles are loaded in K order, so the tap (r, s) and channel c0 of the next one are a cursor advanced per tile
  // (c_in % 64 == 0: a tile never straddles two taps); one division set at the start only.
  int cur_c0, cur_s, cur_r;
  {
    const int kk = t_begin * BK, tap = kk / a.c_in;
    cur_c0 = kk - tap * a.c_in;
    cur_r = tap / a.kw;
    cur_s = tap - cur_r * a.kw;
  }
  auto load_a = [&](int stage) {
    __half* As = ring + stage * kStageHalves<BN>;
    const int dy = cur_r * a.dh, dx = cur_s * a.dw;
#pragma unroll
    for (int i = 0; i < kAVecs; ++i) {
      const int iy = a_iy0[i] + dy, ix = a_ix0[i] + dx;
      const bool in = a_ok[i] && iy >= 0 && iy < a.in_h && ix >= 0 && ix < a.in_w;
      const __half* src = in ? a_img[i] + (static_cast<size_t>(iy) * a.in_w + ix) * a.c_in + cur_c0 : x;
      cp_async16(As + a_row[i] * LDS + a_col[i], src, in);
    }
    cur_c0 += BK;
    if (cur_c0 == a.c_in) {
      cur_c0 = 0;
      if (++cur_s == a.kw) {
        cur_s = 0;
        ++cur_r;
      }
    }
  };

  // Weights first (constants: safe before the PDL wait): the first kStages - 1 tiles into the ring as one group, the
  // rest of this CTA's slice into L2 (each row's slice is contiguous: 128 bytes per K tile).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < n_tiles) load_b(t_begin + s, s);
  cp_async_commit();
  if (!(LAB & kLabNoL2Prefetch) && n_tiles > kStages - 1) {
    const int first = (t_begin + kStages - 1) * BK * 2, last = t_end * BK * 2;  // byte range of each row's slice
    const int lines = (last - first + 127) / 128;
    for (int e = tid; e < BN * lines; e += kThreads) {
      const int k = n0 + e / lines;
      if (k < a.c_out)
        prefetch_l2(reinterpret_cast<const unsigned char*>(w + static_cast<size_t>(k) * a.R) + first + (e % lines) * 128);
    }
  }
  pdl_wait();  // activations and the output: only after the predecessor is done
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_tiles) load_a(s);
    cp_async_commit();
  }

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[j][q] = 0.0f;
  // ldmatrix lane addresses: A rows wm·16 + lane % 16 at k + (lane / 16)·8; B rows (channels) (lane & 7) + (lane / 16)·8
  // of each 16-channel pair at k + ((lane / 8) & 1)·8 (matrices: n 0-7 k 0-7, n 0-7 k 8-15, n 8-15 k 0-7, n 8-15 k 8-15).
  const int a_lrow = wm * 16 + lane % 16, a_lk = (lane / 16) * 8;
  const int b_lrow = wn * kWarpN + (lane & 7) + (lane / 16) * 8, b_lk = ((lane / 8) & 1) * 8;

  // Groups committed before iteration i: 1 (weights) + (kStages - 1) + i; waiting for all but kStages - 2 leaves the
  // weight group and A groups 0..i (with B tiles 0..i) complete.
  for (int i = 0; i < n_tiles; ++i) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile i visible to every warp; every warp is done with tile i - 1, whose stage is refilled below
    const int nxt = i + kStages - 1;
    if (!(LAB & kLabNoLoopLoads) && nxt < n_tiles) {
      load_b(t_begin + nxt, nxt % kStages);
      load_a(nxt % kStages);
    }
    cp_async_commit();
    const __half* As = ring + (i % kStages) * kStageHalves<BN>;
    const __half* Bs = As + BM * LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[4];
      ldmatrix_x4(af, As + a_lrow * LDS + kk + a_lk);
#pragma unroll
      for (int pr = 0; pr < NT / 2; ++pr) {
        unsigned bf[4];
        ldmatrix_x4(bf, Bs + (b_lrow + pr * 16) * LDS + kk + b_lk);
        if constexpr (!(LAB & kLabNoMma)) {
          mma_16816(acc[2 * pr], af, bf[0], bf[1]);
          mma_16816(acc[2 * pr + 1], af, bf[2], bf[3]);
        }
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: the C tile aliases it
  pdl_allow_dependents();
  // m16n8 accumulator layout: rows lane / 4 and lane / 4 + 8, columns (lane % 4)·2 and + 1 of each 8-channel tile.
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int row = wm * 16 + lane / 4, col = wn * kWarpN + j * 8 + (lane % 4) * 2;
    *reinterpret_cast<float2*>(Cs + row * LDC + col) = make_float2(acc[j][0], acc[j][1]);
    *reinterpret_cast<float2*>(Cs + (row + 8) * LDC + col) = make_float2(acc[j][2], acc[j][3]);
  }

  constexpr int kVec = BM * BN / 4;  // float4s of the tile: row e / (BN / 4), channels 4·(e % (BN / 4)) .. +4
  if constexpr (SPLITS == 1 || (LAB & kLabNoReduce) != 0) {
    __syncthreads();
    for (int e = tid; e < kVec; e += kThreads) {
      const int row = e / (BN / 4), c4 = (e % (BN / 4)) * 4, p = m0 + row, k = n0 + c4;
      if (p < a.P && k < a.c_out) epilogue4(a, *reinterpret_cast<const float4*>(Cs + row * LDC + c4), p, k, y);
    }
  } else {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every CTA's partial tile is in its shared memory (release / acquire across the cluster)
    const float* parts[SPLITS];
#pragma unroll
    for (int s = 0; s < SPLITS; ++s) parts[s] = cluster.map_shared_rank(Cs, s);
    for (int e = rank + SPLITS * tid; e < kVec; e += SPLITS * kThreads) {
      const int row = e / (BN / 4), c4 = (e % (BN / 4)) * 4, p = m0 + row, k = n0 + c4;
      if (p >= a.P || k >= a.c_out) continue;
      float4 v[SPLITS];
#pragma unroll
      for (int s = 0; s < SPLITS; ++s) v[s] = *reinterpret_cast<const float4*>(parts[s] + row * LDC + c4);
      float4 sum = v[0];
#pragma unroll
      for (int s = 1; s < SPLITS; ++s) {  // rank order: deterministic
        sum.x += v[s].x;
        sum.y += v[s].y;
        sum.z += v[s].z;
        sum.w += v[s].w;
      }
      epilogue4(a, sum, p, k, y);
    }
    cluster.sync();  // no CTA leaves (freeing its shared memory) while another still reads it
  }
#else
  __trap();
#endif
}

}  // namespace ws::kernels::nhwc_igemm_detail
