// WarpStream's own 2-D convolution kernels (see conv.h): depthwise, pointwise (1×1 as a tiled GEMM; fp32
// FMA or fp16 tensor cores through nvcuda::wmma; FP8 E4M3 tensor cores through mma.sync, the activation quantised
// in the kernel) and a generic direct convolution (with a 3×3 RGB stem form:
// one thread per pixel × 8 output channels), and the fused depthwise → pointwise pair of an MBConv (fp16: the
// pointwise wmma GEMM whose B tile is the depthwise output computed into shared memory). Each fuses zero padding
// (bounds checks: no padded copy, asymmetric pads free), bias, an optional residual and the activation into
// its one launch — the cuDNN path needs up to three kernels (pad, convolution, bias+activation epilogue).
// NCHW, OIHW weights, float32 or float16 storage, float32 arithmetic. 32-bit indices (validate_conv2d
// refuses tensors of more than 2^30 elements, so a grid-stride index never overflows).
// Split-K over a thread-block cluster (fp16, sm_90+; conv2d_pointwise_cluster): the pointwise wmma kernel's blocks of one
// output tile form a cluster (1, 1, splits), blockIdx.z = image × splits + split, and reduce through distributed shared
// memory (wmma_cluster_finish) — 'ConvKernels.SplitKCluster*', the *_cluster kernels of 'ConvKernels.PointwiseMatchesReference'.
// Test: tests/gpu/conv_kernels_test.cpp (ws_gpu_tests --gtest_filter='ConvKernels*:CudaEngineConvTactics*'); FP8:
// tests/gpu/conv_fp8_test.cpp ('ConvFp8*'); fused depthwise → pointwise: 'ConvKernels.DepthwisePointwise*'. Time: the per-node tactic timings of a build (warpstream bench prints
// tactics with µs), or `warpstream bench --precision fp8 --calibration DIR` end to end.
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <mma.h>

#include <cmath>
#include <mutex>
#include <string>
#include <type_traits>

#include "cuda/cuda_util.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/device_once.h"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/pdl.cuh"
#include "kernels/row_signal.cuh"

namespace ws::kernels {
namespace {

using device::grid_for;
using device::kThreads;

using device::activate;
using device::clamp01;
using device::load;
using device::store;
using device::pdl_allow_dependents;
using device::pdl_wait;

// Epilogue of one output element: + bias[co] + residual[idx], activation, store.
template <typename T>
__device__ __forceinline__ void finish(T* y, int idx, int co, float acc, const float* __restrict__ bias,
                                       const T* __restrict__ res, Activation act, const ActivationParams& p) {
  if (bias) acc += bias[co];
  if (res) acc += load(res, idx);
  store(y, idx, activate(acc, act, p));
}

struct SpatialArgs {
  int c_in, in_h, in_w, c_out, out_h, out_w;
  int cin_g, cout_g;  // channels per group
  int kh, kw, sh, sw, dh, dw, pt, pl;
  int total;          // n · c_out · out_h · out_w
};

SpatialArgs spatial_args(const Conv2dGeometry& g) {
  SpatialArgs a{};
  a.c_in = int(g.c_in); a.in_h = int(g.in_h); a.in_w = int(g.in_w);
  a.c_out = int(g.c_out); a.out_h = int(g.out_h); a.out_w = int(g.out_w);
  a.cin_g = int(g.c_in / g.group); a.cout_g = int(g.c_out / g.group);
  a.kh = int(g.kernel_h); a.kw = int(g.kernel_w); a.sh = int(g.stride_h); a.sw = int(g.stride_w);
  a.dh = int(g.dilation_h); a.dw = int(g.dilation_w); a.pt = int(g.pad_top); a.pl = int(g.pad_left);
  a.total = int(g.n * g.c_out * g.out_h * g.out_w);
  return a;
}

// ---- depthwise: OPT consecutive output pixels along W per thread (1 or 4); KH = KW = 0: runtime kernel size.
// The channel's weights live in registers (specialised sizes); thread i covers outputs ox0 .. ox0 + OPT − 1.
template <typename T, int KH, int KW, int OPT>
__global__ void __launch_bounds__(kThreads) depthwise_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                                             const float* __restrict__ bias, const T* __restrict__ res,
                                                             SpatialArgs a, int wgroups, int threads_total, Activation act,
                                                             ActivationParams p) {
  pdl_wait();  // pdl.cuh: before any global access; the dependents are triggered after the loop
  const int kh = KH > 0 ? KH : a.kh, kw = KW > 0 ? KW : a.kw;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < threads_total; i += gridDim.x * blockDim.x) {
    const int ox0 = (i % wgroups) * OPT;
    const int t = i / wgroups;
    const int oy = t % a.out_h;
    const int plane = t / a.out_h;  // n · C + c
    const int c = plane % a.c_out;
    const T* xp = x + plane * a.in_h * a.in_w;
    const T* wp = w + c * kh * kw;
    const int iy0 = oy * a.sh - a.pt, ix0 = ox0 * a.sw - a.pl;
    float acc[OPT];
#pragma unroll
    for (int o = 0; o < OPT; ++o) acc[o] = 0.0f;
    if constexpr (KH > 0) {
      float wr[KH * KW];
#pragma unroll
      for (int k = 0; k < KH * KW; ++k) wr[k] = load(wp, k);
#pragma unroll
      for (int ky = 0; ky < KH; ++ky) {
        const int iy = iy0 + ky * a.dh;
        if (static_cast<unsigned>(iy) >= static_cast<unsigned>(a.in_h)) continue;
        const T* row = xp + iy * a.in_w;
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) {
#pragma unroll
          for (int o = 0; o < OPT; ++o) {
            const int ix = ix0 + o * a.sw + kx * a.dw;
            if (static_cast<unsigned>(ix) < static_cast<unsigned>(a.in_w)) acc[o] = fmaf(load(row, ix), wr[ky * KW + kx], acc[o]);
          }
        }
      }
    } else {
      for (int ky = 0; ky < kh; ++ky) {
        const int iy = iy0 + ky * a.dh;
        if (static_cast<unsigned>(iy) >= static_cast<unsigned>(a.in_h)) continue;
        const T* row = xp + iy * a.in_w;
        for (int kx = 0; kx < kw; ++kx) {
          const float wv = load(wp, ky * kw + kx);
#pragma unroll
          for (int o = 0; o < OPT; ++o) {
            const int ix = ix0 + o * a.sw + kx * a.dw;
            if (static_cast<unsigned>(ix) < static_cast<unsigned>(a.in_w)) acc[o] = fmaf(load(row, ix), wv, acc[o]);
          }
        }
      }
    }
    const int ybase = (plane * a.out_h + oy) * a.out_w;
#pragma unroll
    for (int o = 0; o < OPT; ++o)
      if (ox0 + o < a.out_w) finish(y, ybase + ox0 + o, c, acc[o], bias, res, act, p);
  }
  pdl_allow_dependents();
}

// ---- direct: one thread per output element ---------------------------------------------------------
template <typename T>
__global__ void __launch_bounds__(kThreads) direct_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                                          const float* __restrict__ bias, const T* __restrict__ res,
                                                          SpatialArgs a, Activation act, ActivationParams p) {
  pdl_wait();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.total; i += gridDim.x * blockDim.x) {
    const int ox = i % a.out_w;
    int t = i / a.out_w;
    const int oy = t % a.out_h;
    t /= a.out_h;
    const int co = t % a.c_out;
    const int n = t / a.c_out;
    const int grp = co / a.cout_g;
    const int plane_sz = a.in_h * a.in_w;
    const T* xp = x + (n * a.c_in + grp * a.cin_g) * plane_sz;
    const T* wp = w + co * a.cin_g * a.kh * a.kw;
    const int iy0 = oy * a.sh - a.pt, ix0 = ox * a.sw - a.pl;
    float acc = 0.0f;
    for (int ci = 0; ci < a.cin_g; ++ci, xp += plane_sz) {
      for (int ky = 0; ky < a.kh; ++ky) {
        const int iy = iy0 + ky * a.dh;
        if (static_cast<unsigned>(iy) >= static_cast<unsigned>(a.in_h)) { wp += a.kw; continue; }
        for (int kx = 0; kx < a.kw; ++kx) {
          const int ix = ix0 + kx * a.dw;
          if (static_cast<unsigned>(ix) < static_cast<unsigned>(a.in_w)) acc = fmaf(load(xp, iy * a.in_w + ix), load(wp, kx), acc);
        }
        wp += a.kw;
      }
    }
    finish(y, i, co, acc, bias, res, act, p);
  }
  pdl_allow_dependents();
}

// ---- direct, stem form: group 1, Cin = 3, 3×3 (the RGB stem of most CNNs, EfficientNet's 3×3 s2 → 32).
// One thread per output pixel (n, oy, ox) × kStemCo output channels (blockIdx.y picks the channel group): the
// 27 input taps are loaded once into registers and reused by kStemCo independent accumulators, instead of once
// per output element as in direct_kernel; the group's weights are read as warp-uniform (broadcast) loads.
// Consecutive threads take consecutive ox, so loads and stores are coalesced along W. The grid walks tiles of
// blockDim.x consecutive pixels (uniform per block).
// kWait (the input wavefront, ws::RowSignal; batch 1): instead of griddepcontrol.wait, each tile waits for the input
// rows it reads (row_signal.cuh), and reads them through L2 (__ldcg: the producer is still running, so never the
// read-only path).
constexpr int kStemCo = 8;
template <typename T>
__device__ __forceinline__ float load_l2(const T* p, int i) {
  if constexpr (std::is_same_v<T, float>) return __ldcg(p + i);
  else return __half2float(__ldcg(p + i));
}
template <typename T, bool kWait, bool kPublish>
__global__ void __launch_bounds__(128) direct_stem3x3_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                                            const float* __restrict__ bias, const T* __restrict__ res,
                                                            SpatialArgs a, int pixels, Activation act, ActivationParams p,
                                                            RowSignal rows, RowSignal out_rows) {
  static_assert(kWait || !kPublish, "the stem publishes its output rows only as a waiting consumer (a chained wavefront)");
  uint32_t target = 0;
  if constexpr (kWait) target = device::row_target(rows);
  else pdl_wait();
  // kPublish: the next step (waiting on this grid's output rows) may be scheduled now; it reads only published rows
  // and ends with griddepcontrol.wait, so this grid's completion still precedes its completion.
  if constexpr (kPublish) pdl_allow_dependents();
  constexpr int R = 27;  // Cin · kh · kw
  const int co0 = blockIdx.y * kStemCo;
  const int plane = a.out_h * a.out_w;
  for (int base = blockIdx.x * blockDim.x; base < pixels; base += gridDim.x * blockDim.x) {
    if constexpr (kWait) {  // batch 1: the tile's output rows oy_lo..oy_hi read input rows oy·sh − pt + [0, 2·dh]
      const int last = min(base + int(blockDim.x) - 1, pixels - 1);
      device::wait_rows(rows, (base / a.out_w) * a.sh - a.pt, (last / a.out_w) * a.sh - a.pt + 2 * a.dh, target);
    }
    const int i = base + int(threadIdx.x);
    if (i < pixels) {
      const int ox = i % a.out_w;
      const int t = i / a.out_w;
      const int oy = t % a.out_h;
      const int n = t / a.out_h;
      const int iy0 = oy * a.sh - a.pt, ix0 = ox * a.sw - a.pl;
      const T* xn = x + size_t(n) * 3 * a.in_h * a.in_w;
      float xv[R];
#pragma unroll
      for (int c = 0; c < 3; ++c)
#pragma unroll
        for (int ky = 0; ky < 3; ++ky)
#pragma unroll
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = iy0 + ky * a.dh, ix = ix0 + kx * a.dw;
            const bool in = static_cast<unsigned>(iy) < static_cast<unsigned>(a.in_h) && static_cast<unsigned>(ix) < static_cast<unsigned>(a.in_w);
            const int at = (c * a.in_h + iy) * a.in_w + ix;
            if constexpr (kWait) xv[(c * 3 + ky) * 3 + kx] = in ? load_l2(xn, at) : 0.0f;
            else xv[(c * 3 + ky) * 3 + kx] = in ? load(xn, at) : 0.0f;
          }
#pragma unroll
      for (int q = 0; q < kStemCo; ++q) {
        const int co = co0 + q;
        if (co >= a.c_out) break;
        const T* wc = w + co * R;
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < R; ++j) acc = fmaf(xv[j], load(wc, j), acc);
        finish(y, (n * a.c_out + co) * plane + oy * a.out_w + ox, co, acc, bias, res, act, p);
      }
    }
    if constexpr (kPublish) {  // batch 1: row r is written by the blocks of every channel group (gridDim.y) whose tile holds part of it
      const int last = min(base + int(blockDim.x) - 1, pixels - 1);
      const int tw = int(blockDim.x), ow = a.out_w, groups = int(gridDim.y);
      device::publish_rows_counted(out_rows, base / ow, last / ow, target,
                                   [=](int r) { return groups * ((r * ow + ow - 1) / tw - (r * ow) / tw + 1); });
    }
  }
  // kWait: the rows this block read do not cover every producer block (a stem that skips rows, a wait that gave up), so
  // this grid's completion must still imply the producer's: the frame's later kernels rely on it (the Top-K bumps the
  // epoch the producer read). By now the producer is finishing its last rows; the wait costs about nothing.
  if constexpr (kWait) pdl_wait();
  if constexpr (!kPublish) pdl_allow_dependents();
}

// ---- pointwise fp32 (SIMT): Y[n] (M×N) = W (M×K) · X[n] (K×N); block tile BM×BN, k-step BK; each thread a
// TM×TN register block at rows ty + i·(BM/TM), cols tx + j·(BN/TN) (conflict-free shared reads, coalesced
// global stores).
// Pointwise GEMM blocks: blockIdx.z = image × split. Split-K: the block reduces k in [begin, end) (chunks of
// whole BK tiles) and, when `part` is given, writes raw fp32 partials instead of running the epilogue.
struct SplitK {
  int img, split, splits, begin, end;
};
template <int BK>
__device__ __forceinline__ SplitK split_k(int K, int splits) {
  SplitK s;
  s.img = blockIdx.z / splits;
  s.split = blockIdx.z % splits;
  s.splits = splits;
  const int chunk = ((K + splits - 1) / splits + BK - 1) / BK * BK;
  s.begin = s.split * chunk;
  s.end = min(K, s.begin + chunk);
  return s;
}
// Moves the operands to the block's image (x [K][N], y and residual [M][N]) and its split's partials ([M][N] of
// image × split).
template <typename PX, typename PY, typename PR, typename PP>  // pointer types, __restrict__ kept
__device__ __forceinline__ void to_block_image(const SplitK& sk, int M, int N, int K, PX& x, PY& y, PR& res, PP& part) {
  x += sk.img * K * N;
  y += sk.img * M * N;
  if (res) res += sk.img * M * N;
  if (part) part += (sk.img * sk.splits + sk.split) * M * N;
}
// Split-K reduced inside the pointwise kernel (CUTLASS's "serial" split-K; conv.h tile_counters): every block has
// stored its fp32 partial tile; this counts its arrival on the tile's counter and, in the block that arrives last,
// sums the tile's `splits` partials in split order 0, 1, ... (the order of splitk_reduce_kernel: the same bits) and
// runs the epilogue. The last block resets the counter to 0 for the next launch (no other block of this launch
// touches it again), so the counters stay zero between launches. Memory order: each block's partial stores are
// made device-visible (__threadfence) before its arrival is counted; the last block fences again and reads the
// partials from L2 (__ldcg, never a stale L1 line). Call with every thread of the block; `part` is this split's
// slice (to_block_image), y and res the image's.
template <typename T, int BM, int BN>
__device__ __forceinline__ void splitk_serial_finish(const SplitK& sk, const float* part, unsigned* counters, T* y, const float* bias,
                                                     const T* res, int M, int N, int m0, int n0, Activation act, const ActivationParams& p) {
  __shared__ unsigned last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* counter = counters + (sk.img * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    last = atomicAdd(counter, 1u) + 1u == static_cast<unsigned>(sk.splits);
    if (last) atomicExch(counter, 0u);
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int mn = M * N;
  const float* base = part - sk.split * mn;  // the image's partials [splits][M][N]
  for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
    const int gm = m0 + e / BN, gn = n0 + e % BN;
    if (gm >= M || gn >= N) continue;
    const float* src = base + gm * N + gn;
    float acc = 0.0f;
    int s = 0;
    for (; s + 8 <= sk.splits; s += 8) {  // eight loads in flight, added in split order
      float v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = __ldcg(src + (s + u) * mn);
#pragma unroll
      for (int u = 0; u < 8; ++u) acc += v[u];
    }
    for (; s < sk.splits; ++s) acc += __ldcg(src + s * mn);
    finish(y, gm * N + gn, gm, acc, bias, res, act, p);
  }
}
template <typename T, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN)) pointwise_simt_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                                               T* __restrict__ y, const float* __restrict__ bias,
                                                                               const T* __restrict__ res, int M, int N, int K,
                                                                               Activation act, ActivationParams p, int splits,
                                                                               float* __restrict__ part, unsigned* __restrict__ counters) {
  pdl_wait();
  constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
  __shared__ float As[BK][BM + 1];  // As[k][m] = W[m0 + m][k0 + k]
  __shared__ float Bs[BK][BN];      // Bs[k][n] = X[k0 + k][n0 + n]
  const SplitK sk = split_k<BK>(K, splits);
  const int k_begin = sk.begin, k_end = sk.end;
  to_block_image(sk, M, N, K, x, y, res, part);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NT) {
      const int m = e / BK, k = e % BK, gm = m0 + m, gk = k0 + k;
      As[k][m] = (gm < M && gk < k_end) ? load(w, gm * K + gk) : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NT) {
      const int k = e / BN, n = e % BN, gk = k0 + k, gn = n0 + n;
      Bs[k][n] = (gk < k_end && gn < N) ? load(x, gk * N + gn) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = As[k][ty + i * TY];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = Bs[k][tx + j * TX];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
  pdl_allow_dependents();  // main loop done: the next kernel may be scheduled (it waits for this grid in pdl_wait)
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gm = m0 + ty + i * TY;
    if (gm >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gn = n0 + tx + j * TX;
      if (gn >= N) continue;
      if (part) part[gm * N + gn] = acc[i][j];
      else finish(y, gm * N + gn, gm, acc[i][j], bias, res, act, p);
    }
  }
  if (part && counters) splitk_serial_finish<T, BM, BN>(sk, part, counters, y, bias, res, M, N, m0, n0, act, p);
}

// ---- pointwise fp16 (tensor cores, wmma m16n16k16, fp32 accumulate): block tile BM×BN, k-step 32; warp
// grid (BM/WM)×(BN/WN), each warp WM×WN (multiples of 16). Edges are zero-filled in shared memory, so any
// M, N, K works; the accumulators go through shared memory for the bounds-checked fused epilogue.
// Main loop: a register-staged pipeline of kStages k-tiles. Each thread holds the global loads of the next
// kStages tiles in registers (issued kStages tiles ahead), so the memory latency of one tile is hidden behind
// the other tiles' tensor-core work instead of being paid once per tile — the kernel is latency-bound on the
// small GEMMs of a batch-1 CNN (EfficientNet-Lite0: M·N as small as 192·49). Loads are 16-byte vectors when
// rows allow (K % 8 == 0 for W, H·W % 8 == 0 for X, 16-byte aligned bases), else 2-byte scalars; the epilogue
// writes 8 outputs per thread (16-byte stores of y, two 16-byte stores of partials) when H·W % 8 == 0.
template <int BM, int BN, int WM, int WN>
struct WmmaTile {
  static constexpr int BK = 32;
  static constexpr int LDA = BK + 8, LDB = BN + 8, LDC = BN + 4;  // halves, halves, floats (wmma ldm rules)
  static constexpr int kWarps = (BM / WM) * (BN / WN), kThreads = kWarps * 32;
  static constexpr int kAbBytes = (BM * LDA + BK * LDB) * 2, kCBytes = BM * LDC * 4;
  static constexpr int kSmemBytes = kAbBytes > kCBytes ? kAbBytes : kCBytes;
  static constexpr int kStages = 4;                    // k-tiles in flight per thread (registers)
  static constexpr int kA = BM * BK / kThreads;        // halves of one A tile per thread
  static constexpr int kB = BK * BN / kThreads;        // halves of one B tile per thread
  static_assert(kA % 8 == 0 && kB % 8 == 0, "a thread's share of a tile must be whole 16-byte vectors");
  static_assert(LDA % 8 == 0 && LDB % 8 == 0 && (BM * LDA) % 8 == 0, "16-byte aligned shared-memory rows");
};

// One k-tile's global loads for one thread: A = W[m0 .. m0+BM)[k0 .. k0+BK), B = X[k0 .. k0+BK)[n0 .. n0+BN),
// zero outside [0, M) × [k0, k_end) and [k0, k_end) × [0, N). vec_a / vec_b: 16-byte vectors (8 halves, the
// thread's e-th vector at linear index tid + e·NT of the tile in vectors) else scalars (the thread's r-th half
// at linear index tid + r·NT). The shared-memory store below uses the same mapping.
template <typename Tile>
struct WmmaStageA {
  uint4 a[Tile::kA / 8];
};
template <typename Tile>
struct WmmaStage : WmmaStageA<Tile> {
  uint4 b[Tile::kB / 8];
};

template <int BM, typename Tile>
__device__ __forceinline__ void wmma_load_a(WmmaStageA<Tile>& st, const __half* __restrict__ w, int M, int K, int m0, int k0, int k_end,
                                            bool vec_a, int tid) {
  constexpr int BK = Tile::BK, NT = Tile::kThreads;
  const uint4 z = make_uint4(0, 0, 0, 0);
  if (vec_a) {
#pragma unroll
    for (int v = 0; v < Tile::kA / 8; ++v) {
      const int e = tid + v * NT, m = e / (BK / 8), k = (e % (BK / 8)) * 8, gm = m0 + m, gk = k0 + k;
      st.a[v] = (gm < M && gk < k_end) ? __ldg(reinterpret_cast<const uint4*>(w + gm * K + gk)) : z;
    }
  } else {
    __half* h = reinterpret_cast<__half*>(st.a);
#pragma unroll
    for (int r = 0; r < Tile::kA; ++r) {
      const int e = tid + r * NT, m = e / BK, k = e % BK, gm = m0 + m, gk = k0 + k;
      h[r] = (gm < M && gk < k_end) ? w[gm * K + gk] : __float2half_rn(0.0f);
    }
  }
}

template <int BM, int BN, typename Tile>
__device__ __forceinline__ void wmma_load_tile(WmmaStage<Tile>& st, const __half* __restrict__ w, const __half* __restrict__ x,
                                               int M, int N, int K, int m0, int n0, int k0, int k_end, bool vec_a, bool vec_b,
                                               int tid) {
  constexpr int NT = Tile::kThreads;
  const uint4 z = make_uint4(0, 0, 0, 0);
  wmma_load_a<BM, Tile>(st, w, M, K, m0, k0, k_end, vec_a, tid);
  if (vec_b) {
#pragma unroll
    for (int v = 0; v < Tile::kB / 8; ++v) {
      const int e = tid + v * NT, k = e / (BN / 8), n = (e % (BN / 8)) * 8, gk = k0 + k, gn = n0 + n;
      st.b[v] = (gk < k_end && gn < N) ? __ldg(reinterpret_cast<const uint4*>(x + gk * N + gn)) : z;
    }
  } else {
    __half* h = reinterpret_cast<__half*>(st.b);
#pragma unroll
    for (int r = 0; r < Tile::kB; ++r) {
      const int e = tid + r * NT, k = e / BN, n = e % BN, gk = k0 + k, gn = n0 + n;
      h[r] = (gk < k_end && gn < N) ? x[gk * N + gn] : __float2half_rn(0.0f);
    }
  }
}

template <typename Tile>
__device__ __forceinline__ void wmma_store_a(const WmmaStageA<Tile>& st, __half* As, bool vec_a, int tid) {
  constexpr int BK = Tile::BK, NT = Tile::kThreads, LDA = Tile::LDA;
  if (vec_a) {
#pragma unroll
    for (int v = 0; v < Tile::kA / 8; ++v) {
      const int e = tid + v * NT, m = e / (BK / 8), k = (e % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(As + m * LDA + k) = st.a[v];
    }
  } else {
    const __half* h = reinterpret_cast<const __half*>(st.a);
#pragma unroll
    for (int r = 0; r < Tile::kA; ++r) {
      const int e = tid + r * NT;
      As[(e / BK) * LDA + e % BK] = h[r];
    }
  }
}

template <int BM, int BN, typename Tile>
__device__ __forceinline__ void wmma_store_tile(const WmmaStage<Tile>& st, __half* As, __half* Bs, bool vec_a, bool vec_b, int tid) {
  constexpr int NT = Tile::kThreads, LDB = Tile::LDB;
  wmma_store_a<Tile>(st, As, vec_a, tid);
  if (vec_b) {
#pragma unroll
    for (int v = 0; v < Tile::kB / 8; ++v) {
      const int e = tid + v * NT, k = e / (BN / 8), n = (e % (BN / 8)) * 8;
      *reinterpret_cast<uint4*>(Bs + k * LDB + n) = st.b[v];
    }
  } else {
    const __half* h = reinterpret_cast<const __half*>(st.b);
#pragma unroll
    for (int r = 0; r < Tile::kB; ++r) {
      const int e = tid + r * NT;
      Bs[(e / BN) * LDB + e % BN] = h[r];
    }
  }
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700  // wmma helpers: sm_70+ (the kernels trap below)
// One k-tile of tensor-core work: the warp's (WM/16)×(WN/16) accumulators += As[warp rows][0, BK) · Bs[0, BK)[warp cols].
template <typename Tile, int WM, int WN, typename Frag>
__device__ __forceinline__ void wmma_tile_mma(Frag (&acc)[WM / 16][WN / 16], const __half* As, const __half* Bs, int wm, int wn) {
  using namespace nvcuda;
  constexpr int BK = Tile::BK, LDA = Tile::LDA, LDB = Tile::LDB, FM = WM / 16, FN = WN / 16;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af[FM];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf[FN];
#pragma unroll
    for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(af[i], As + (wm * WM + i * 16) * LDA + kk, LDA);
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(bf[j], Bs + kk * LDB + wn * WN + j * 16, LDB);
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
  }
}

// Split-K over a thread-block cluster (conv.h conv2d_pointwise_cluster): the `splits` blocks of one output tile form a
// cluster (1, 1, splits) — blockIdx.z = image × splits + split, so a block's cluster rank is its split — and each holds its
// fp32 partial tile in its own shared memory (Cs, [BM][LDC]). After a cluster barrier (release / acquire across the
// cluster), block `split` takes the split-th contiguous chunk of the tile's BM·BN elements and sums each over the
// cluster's partials through distributed shared memory in split order 0, 1, ... starting from 0.0f — the order, so the
// bits, of splitk_reduce_kernel — then runs the epilogue (finish). A second barrier keeps every block's shared memory
// alive until the others have read it. No workspace, no counters, one kernel. Call with every thread of the block.
template <int BM, int BN, int LDC, int NT>
__device__ __forceinline__ void wmma_cluster_finish(const float* Cs, const SplitK& sk, __half* __restrict__ y, const float* __restrict__ bias,
                                                    const __half* __restrict__ res, int M, int N, int m0, int n0, Activation act,
                                                    const ActivationParams& p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every block's partial tile is in its shared memory
  const int S = sk.splits, chunk = (BM * BN + S - 1) / S;
  const int e_end = min(BM * BN, (sk.split + 1) * chunk);
  for (int e = sk.split * chunk + static_cast<int>(threadIdx.x); e < e_end; e += NT) {
    const int m = e / BN, n = e % BN, gm = m0 + m, gn = n0 + n;
    if (gm >= M || gn >= N) continue;
    const int off = m * LDC + n;
    float acc = 0.0f;
    int s = 0;
    for (; s + 4 <= S; s += 4) {  // four remote loads in flight, added in split order
      float v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = cluster.map_shared_rank(Cs, static_cast<unsigned>(s + u))[off];
#pragma unroll
      for (int u = 0; u < 4; ++u) acc += v[u];
    }
    for (; s < S; ++s) acc += cluster.map_shared_rank(Cs, static_cast<unsigned>(s))[off];
    finish(y, gm * N + gn, gm, acc, bias, res, act, p);
  }
  cluster.sync();  // no block leaves (freeing its shared memory) while another still reads it
#else
  __trap();  // clusters need sm_90+; the launcher refuses older PTX
#endif
}

// The shared tail of the fp16 wmma kernels: accumulators → shared memory (reusing the A/B tiles' bytes) → the
// bounds-checked fused epilogue (bias, residual, activation; 16-byte stores when H·W % 8 == 0) or fp32 split-K
// partials, then the in-kernel split-K reduction when `counters` is given. Call with every thread of the block.
template <int BM, int BN, int WM, int WN, int NT = WmmaTile<BM, BN, WM, WN>::kThreads, bool CLUSTER = false, typename Frag>
__device__ __forceinline__ void wmma_epilogue(Frag (&acc)[WM / 16][WN / 16], unsigned char* smem, __half* __restrict__ y,
                                              const float* __restrict__ bias, const __half* __restrict__ res, float* __restrict__ part,
                                              unsigned* __restrict__ counters, const SplitK& sk, int M, int N, int m0, int n0,
                                              Activation act, const ActivationParams& p) {
  using namespace nvcuda;
  using Tile = WmmaTile<BM, BN, WM, WN>;
  constexpr int LDC = Tile::LDC, FM = WM / 16, FN = WN / 16;
  float* Cs = reinterpret_cast<float*>(smem);  // [BM][LDC]
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);
  __syncthreads();  // As/Bs are reused as Cs
  if (warp < Tile::kWarps)  // the warps that own accumulators (a block may have more: NT > Tile::kThreads)
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j)
        wmma::store_matrix_sync(Cs + (wm * WM + i * 16) * LDC + wn * WN + j * 16, acc[i][j], LDC, wmma::mem_row_major);
  __syncthreads();
  if constexpr (CLUSTER) {
    wmma_cluster_finish<BM, BN, LDC, NT>(Cs, sk, y, bias, res, M, N, m0, n0, act, p);
    return;
  }
  const bool vec_y = N % 8 == 0 && (reinterpret_cast<uintptr_t>(y) & 15) == 0 && (!res || (reinterpret_cast<uintptr_t>(res) & 15) == 0) &&
                     (!part || (reinterpret_cast<uintptr_t>(part) & 15) == 0);
  if (vec_y) {  // 8 consecutive outputs of one row per thread (gn % 8 == 0 and N % 8 == 0: all 8 in range or none)
    for (int e = tid; e < BM * BN / 8; e += NT) {
      const int m = e / (BN / 8), n = (e % (BN / 8)) * 8, gm = m0 + m, gn = n0 + n;
      if (gm >= M || gn >= N) continue;
      const float* c = Cs + m * LDC + n;
      float v[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) v[q] = c[q];
      if (part) {
        float4* dst = reinterpret_cast<float4*>(part + gm * N + gn);
        dst[0] = make_float4(v[0], v[1], v[2], v[3]);
        dst[1] = make_float4(v[4], v[5], v[6], v[7]);
        continue;
      }
      const float b = bias ? bias[gm] : 0.0f;
      __align__(16) __half r8[8];
      if (res) *reinterpret_cast<uint4*>(r8) = __ldg(reinterpret_cast<const uint4*>(res + gm * N + gn));
      __align__(16) __half o8[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        float a = v[q] + b;
        if (res) a += __half2float(r8[q]);
        o8[q] = __float2half_rn(activate(a, act, p));
      }
      *reinterpret_cast<uint4*>(y + gm * N + gn) = *reinterpret_cast<const uint4*>(o8);
    }
  } else {
    for (int e = tid; e < BM * BN; e += NT) {
      const int m = e / BN, n = e % BN, gm = m0 + m, gn = n0 + n;
      if (gm >= M || gn >= N) continue;
      if (part) part[gm * N + gn] = Cs[m * LDC + n];
      else finish(y, gm * N + gn, gm, Cs[m * LDC + n], bias, res, act, p);
    }
  }
  if (part && counters) splitk_serial_finish<__half, BM, BN>(sk, part, counters, y, bias, res, M, N, m0, n0, act, p);
}

#endif

// CLUSTER: split-K over a thread-block cluster (wmma_cluster_finish; part and counters null, splits = the cluster size).
template <int BM, int BN, int WM, int WN, bool CLUSTER = false>
__global__ void __launch_bounds__(WmmaTile<BM, BN, WM, WN>::kThreads) pointwise_wmma_kernel(
    const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y, const float* __restrict__ bias,
    const __half* __restrict__ res, int M, int N, int K, Activation act, ActivationParams p, int splits,
    float* __restrict__ part, unsigned* __restrict__ counters) {
  pdl_wait();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
  using namespace nvcuda;
  using Tile = WmmaTile<BM, BN, WM, WN>;
  constexpr int BK = Tile::BK, LDA = Tile::LDA, S = Tile::kStages;
  constexpr int FM = WM / 16, FN = WN / 16;
  __shared__ __align__(128) unsigned char smem[Tile::kSmemBytes];
  __half* As = reinterpret_cast<__half*>(smem);  // [BM][LDA]: As[m][k] = W[m0 + m][k0 + k]
  __half* Bs = As + BM * LDA;                    // [BK][LDB]: Bs[k][n] = X[k0 + k][n0 + n]; [BM][LDC] floats after the loop
  const SplitK sk = split_k<BK>(K, splits);
  const int k_begin = sk.begin, k_end = sk.end;
  to_block_image(sk, M, N, K, x, y, res, part);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);
  const bool vec_a = K % 8 == 0 && (reinterpret_cast<uintptr_t>(w) & 15) == 0;
  const bool vec_b = N % 8 == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  const int ntiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  WmmaStage<Tile> st[S];
#pragma unroll
  for (int s = 0; s < S; ++s)
    if (s < ntiles) wmma_load_tile<BM, BN, Tile>(st[s], w, x, M, N, K, m0, n0, k_begin + s * BK, k_end, vec_a, vec_b, tid);
  for (int t0 = 0; t0 < ntiles; t0 += S) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const int t = t0 + s;
      if (t >= ntiles) break;
      __syncthreads();  // every warp is done reading tile t − 1 from shared memory
      wmma_store_tile<BM, BN, Tile>(st[s], As, Bs, vec_a, vec_b, tid);
      if (t + S < ntiles)  // refill this stage kStages tiles ahead: in flight during the next S − 1 tiles
        wmma_load_tile<BM, BN, Tile>(st[s], w, x, M, N, K, m0, n0, k_begin + (t + S) * BK, k_end, vec_a, vec_b, tid);
      __syncthreads();
      wmma_tile_mma<Tile, WM, WN>(acc, As, Bs, wm, wn);
    }
  }
  pdl_allow_dependents();  // main loop done: the next kernel may be scheduled (it waits for this grid in pdl_wait)
  wmma_epilogue<BM, BN, WM, WN, Tile::kThreads, CLUSTER>(acc, smem, y, bias, res, part, counters, sk, M, N, m0, n0, act, p);
#else
  __trap();  // tensor-core path needs sm_70+; the CUDA executor never offers it below
#endif
}


// ---- depthwise → pointwise fused (fp16; conv.h conv2d_depthwise_pointwise): the pointwise wmma GEMM above whose
// B operand is not loaded but computed. Thread mapping: the block has kDwThreads = 2 × the tile's threads; the first
// Tile::kThreads load the A tiles (projection weights, one k-tile ahead in registers) and their warps run the mma;
// all of them compute the depthwise slice. Thread t always owns pixel n = t % BN of the block's tile (so its output
// coordinates, tap offsets and border mask are computed once, before the k-loop) and channels
// k = t / BN + r · (kDwThreads / BN) of each BK = 32-channel k-tile; a warp covers 32 consecutive pixels of one
// channel (coalesced tap reads, one broadcast weight). Bs[k][n] = half(act_dw(sum_{ky,kx} x·w_dw + b_dw)), with the
// depthwise kernel's arithmetic (fmaf over ky, then kx, skipping taps outside x; then bias, activation, round to
// half), so Bs holds exactly the values depthwise_kernel would have stored.
constexpr int kDwPwThreadFactor = 2;

// Per-thread pixel of the fused kernel's depthwise phase: the offset of tap (0, 0) in a channel plane of x and which
// taps fall inside x (bit ky·kw + kx; kernels up to 32 taps take the mask, larger ones test bounds per tap).
struct DwPixel {
  bool valid = false;
  int base = 0, iy0 = 0, ix0 = 0;
  unsigned mask = 0;
};

template <int KH, int KW>
__device__ __forceinline__ DwPixel dw_pixel(const SpatialArgs& a, int gn, int N) {
  DwPixel px;
  if (gn >= N) return px;
  px.valid = true;
  const int oy = gn / a.out_w, ox = gn % a.out_w;
  px.iy0 = oy * a.sh - a.pt;
  px.ix0 = ox * a.sw - a.pl;
  px.base = px.iy0 * a.in_w + px.ix0;
  if constexpr (KH > 0 && KH * KW <= 32) {
#pragma unroll
    for (int ky = 0; ky < KH; ++ky)
#pragma unroll
      for (int kx = 0; kx < KW; ++kx) {
        const int iy = px.iy0 + ky * a.dh, ix = px.ix0 + kx * a.dw;
        if (static_cast<unsigned>(iy) < static_cast<unsigned>(a.in_h) && static_cast<unsigned>(ix) < static_cast<unsigned>(a.in_w))
          px.mask |= 1u << (ky * KW + kx);
      }
  }
  return px;
}

template <int NT, int BN, int LDB, int KH, int KW, bool kL2 = false>
__device__ __forceinline__ void depthwise_tile_to_shared(__half* Bs, const __half* __restrict__ x, const __half* __restrict__ wd,
                                                         const float* __restrict__ bd, const SpatialArgs& a, Activation act,
                                                         const ActivationParams& p, const DwPixel& px, int k0, int k_end, int tid) {
  constexpr int BK = 32, R = BK * BN / NT, KSTEP = NT / BN;
  static_assert(NT % BN == 0 && (BK * BN) % NT == 0, "each thread keeps one pixel");
  const int n = tid % BN, kt = tid / BN;
  const int plane = a.in_h * a.in_w;
  float v[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int gk = k0 + kt + r * KSTEP;
    v[r] = 0.0f;
    if (!px.valid || gk >= k_end) continue;
    const __half* xp = x + gk * plane + px.base;
    float acc = 0.0f;
    if constexpr (KH > 0 && KH * KW <= 32) {
      const __half* wp = wd + gk * (KH * KW);
#pragma unroll
      for (int ky = 0; ky < KH; ++ky)
#pragma unroll
        for (int kx = 0; kx < KW; ++kx)
          if (px.mask & (1u << (ky * KW + kx))) {
            const int at = ky * a.dh * a.in_w + kx * a.dw;
            float xv;
            if constexpr (kL2) xv = load_l2(xp, at);  // the producer is still running: through L2, never the read-only path
            else xv = load(xp, at);
            acc = fmaf(xv, load(wp, ky * KW + kx), acc);
          }
    } else {
      static_assert(!kL2, "the wavefront form is unrolled (3x3) only");
      const int kh = a.kh, kw = a.kw;
      const __half* wp = wd + gk * kh * kw;
      for (int ky = 0; ky < kh; ++ky) {
        const int iy = px.iy0 + ky * a.dh;
        if (static_cast<unsigned>(iy) >= static_cast<unsigned>(a.in_h)) continue;
        for (int kx = 0; kx < kw; ++kx) {
          const int ix = px.ix0 + kx * a.dw;
          if (static_cast<unsigned>(ix) < static_cast<unsigned>(a.in_w)) acc = fmaf(load(xp, ky * a.dh * a.in_w + kx * a.dw), load(wp, ky * kw + kx), acc);
        }
      }
    }
    if (bd) acc += bd[gk];
    v[r] = activate(acc, act, p);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) Bs[(kt + r * KSTEP) * LDB + n] = __float2half_rn(v[r]);
}

// kWait (a chained input wavefront, batch 1; ConvEpilogue::input_rows on the depthwise epilogue): instead of
// griddepcontrol.wait at start, the block waits for the x rows its pixel tile reads (after staging its first weight
// tile), reads x through L2, and waits for the predecessor grid after its main loop (so its completion implies it).
template <int BM, int BN, int WM, int WN, int KH, int KW, bool kWait = false>
__global__ void __launch_bounds__(WmmaTile<BM, BN, WM, WN>::kThreads * kDwPwThreadFactor) depthwise_pointwise_wmma_kernel(
    const __half* __restrict__ x, const __half* __restrict__ wd, const float* __restrict__ bd, SpatialArgs a, Activation act_dw,
    ActivationParams p_dw, const __half* __restrict__ w, __half* __restrict__ y, const float* __restrict__ bias,
    const __half* __restrict__ res, int M, int N, int K, Activation act, ActivationParams p, int splits, float* __restrict__ part,
    RowSignal rows) {
  uint32_t target = 0;
  if constexpr (kWait) target = device::row_target(rows);
  else pdl_wait();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
  using namespace nvcuda;
  using Tile = WmmaTile<BM, BN, WM, WN>;
  constexpr int BK = Tile::BK, LDA = Tile::LDA, LDB = Tile::LDB, NT = Tile::kThreads * kDwPwThreadFactor;
  constexpr int FM = WM / 16, FN = WN / 16;
  __shared__ __align__(128) unsigned char smem[Tile::kSmemBytes];
  __half* As = reinterpret_cast<__half*>(smem);  // [BM][LDA]: As[m][k] = W[m0 + m][k0 + k]
  __half* Bs = As + BM * LDA;                    // [BK][LDB]: Bs[k][n] = depthwise output [k0 + k][n0 + n]
  const SplitK sk = split_k<BK>(K, splits);
  const int k_begin = sk.begin, k_end = sk.end;
  x += sk.img * K * a.in_h * a.in_w;  // the image's depthwise input [K][in_h][in_w]
  y += sk.img * M * N;
  if (res) res += sk.img * M * N;
  if (part) part += (sk.img * sk.splits + sk.split) * M * N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32;
  const bool mma_thread = tid < Tile::kThreads;  // loads A, and its warp runs the mma
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);
  const bool vec_a = K % 8 == 0 && (reinterpret_cast<uintptr_t>(w) & 15) == 0;
  const int ntiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  const DwPixel px = dw_pixel<KH, KW>(a, n0 + tid % BN, N);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  WmmaStageA<Tile> st;
  if (ntiles > 0 && mma_thread) wmma_load_a<BM, Tile>(st, w, M, K, m0, k_begin, k_end, vec_a, tid);
  if constexpr (kWait) {  // output rows of pixels n0 .. n0 + BN − 1 read x rows oy·sh − pt + [0, (KH − 1)·dh]
    const int last = min(n0 + BN - 1, N - 1);
    device::wait_rows(rows, (n0 / a.out_w) * a.sh - a.pt, (last / a.out_w) * a.sh - a.pt + (KH - 1) * a.dh, target);
  }
  for (int t = 0; t < ntiles; ++t) {
    const int k0 = k_begin + t * BK;
    __syncthreads();  // every warp is done reading tile t − 1 from shared memory
    if (mma_thread) {
      wmma_store_a<Tile>(st, As, vec_a, tid);
      if (t + 1 < ntiles) wmma_load_a<BM, Tile>(st, w, M, K, m0, k0 + BK, k_end, vec_a, tid);  // in flight during the depthwise slice
    }
    depthwise_tile_to_shared<NT, BN, LDB, KH, KW, kWait>(Bs, x, wd, bd, a, act_dw, p_dw, px, k0, k_end, tid);
    __syncthreads();
    if (mma_thread) wmma_tile_mma<Tile, WM, WN>(acc, As, Bs, wm, wn);
  }
  if constexpr (kWait) pdl_wait();  // this grid's completion implies the producer's (the frame's later kernels rely on it)
  pdl_allow_dependents();  // main loop done: the next kernel may be scheduled (it waits for this grid in pdl_wait)
  wmma_epilogue<BM, BN, WM, WN, NT>(acc, smem, y, bias, res, part, nullptr, sk, M, N, m0, n0, act, p);
#else
  __trap();  // tensor-core path needs sm_70+; the CUDA executor never offers it below
#endif
}

// split-K second pass: y[img][m][n] = epilogue(sum over s of part[img][s][m][n]), one thread per output.
template <typename T>
__global__ void __launch_bounds__(kThreads) splitk_reduce_kernel(const float* __restrict__ part, T* __restrict__ y,
                                                                 const float* __restrict__ bias, const T* __restrict__ res,
                                                                 int M, int N, int splits, int total, Activation act,
                                                                 ActivationParams p) {
  pdl_wait();
  const int idx = blockIdx.x * kThreads + threadIdx.x;
  if (idx >= total) return;  // exited: counts as triggered
  const int mn = M * N, img = idx / mn, r = idx % mn;
  const float* src = part + img * splits * mn + r;
  float acc = 0.0f;
  for (int s = 0; s < splits; ++s) acc += src[s * mn];  // fixed order: deterministic
  finish(y, idx, r / N, acc, bias, res, act, p);
  pdl_allow_dependents();
}


// ---- pointwise FP8 (E4M3) on tensor cores (sm_89+: mma.sync.m16n8k32.row.col.f32.e4m3.e4m3.f32) ----
// Y[n] (M×N) = out_scale[m] · (Wq (M×K) · Xq[n] (K×N)), Wq the build-time E4M3 codes (per-output-channel scale,
// rows zero-padded to k_stride = round_up(K, 32)), Xq = e4m3(x · inv_x_scale) quantised while the fp16 tile is
// staged into shared memory (fused: no quantised copy of X in global memory), fp32 accumulation, then the fp16
// epilogue (bias, residual, activation) or dequantised fp32 partials for split-K.
// Thread mapping: 128 threads = 4 warps in a 2×2 grid over the BM×BN block tile; each warp owns a (BM/2)×(BN/2)
// tile of m16n8 accumulators (MT × NT). One k-tile is BK = 32 (one mma k-step). Loads per k-tile: A = BM rows ×
// 32 bytes as 16-byte vectors (one per thread for BM = 64); B: thread (kg = tid / 16, ng = tid % 16) reads 4
// k-rows × VN = BN/16 consecutive pixels of X (8- or 4-byte vectors when H·W allows, else scalars), converts
// them, and writes one 32-bit word (4 consecutive k) per pixel into Bs[n][k] — the K-major layout the mma's B
// operand ("col") wants, which ldmatrix cannot produce for 8-bit types on sm_90. Shared rows are 48 bytes
// (32 + 16 pad): the fragment reads (8 rows × 4 words per warp) hit 32 distinct banks. Pipeline: 4 k-tiles in
// flight per thread in registers (raw fp16, quantised when stored), two shared-memory buffers, one __syncthreads
// per k-tile (device run 45 had one tile in flight: 8.6 µs per EfficientNet 7×7 projection against 6.1 µs fp16).
constexpr int kFp8Threads = 128;

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
__device__ __forceinline__ uint32_t fp8x4_e4m3(float a, float b, float c, float d) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);  // byte j = element j (the lowest k in the lowest byte, as the mma fragments read it)
}
#endif

template <int BM, int BN>
__global__ void __launch_bounds__(kFp8Threads) pointwise_fp8_kernel(
    const __half* __restrict__ x, const uint8_t* __restrict__ wq, int k_stride, const float* __restrict__ out_scale,
    float inv_x_scale, __half* __restrict__ y, const float* __restrict__ bias, const __half* __restrict__ res, int M, int N,
    int K, Activation act, ActivationParams p, int splits, float* __restrict__ part, unsigned* __restrict__ counters) {
  pdl_wait();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
  constexpr int BK = 32, LD = 48, WM = BM / 2, WN = BN / 2, MT = WM / 16, NT = WN / 8, VN = BN / 16;
  static_assert(MT >= 1 && NT >= 1 && (VN == 2 || VN == 4), "tile shapes: 32x32 or 64x64");
  __shared__ __align__(16) uint8_t As[2][BM * LD];  // As[m][k] = Wq[m0 + m][k0 + k]
  __shared__ __align__(16) uint8_t Bs[2][BN * LD];  // Bs[n][k] = Xq[k0 + k][n0 + n]
  const SplitK sk = split_k<BK>(K, splits);
  const int k_begin = sk.begin, k_end = sk.end;
  to_block_image(sk, M, N, K, x, y, res, part);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wm = warp / 2, wn = warp % 2;
  const int gq = lane / 4, tq = lane % 4;  // mma fragment coordinates: groupID, thread in group
  const int kg = tid / 16, ng = tid % 16;  // B staging: 4 k-rows × VN pixels
  const bool vec_b = N % VN == 0 && (reinterpret_cast<uintptr_t>(x) & (VN * 2 - 1)) == 0;
  const int ntiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;

  // S k-tiles in flight per thread (registers, raw fp16 for B; converted when stored to shared memory): tile t
  // lives in stage t % S, so a deep reduction split into a few tiles has all its global loads issued up front.
  constexpr int S = 4;
  struct Stage {
    uint4 a;                 // A: row tid / 2, 16 bytes at (tid % 2) · 16
    __half2 b[4][VN / 2];    // B: 4 k-rows × VN pixels
  };
  Stage st[S];
  auto load = [&](Stage& sg, int k0) {
    if (tid < BM * 2) {
      const int m = tid / 2, gm = m0 + m;
      sg.a = gm < M ? __ldg(reinterpret_cast<const uint4*>(wq + static_cast<size_t>(gm) * k_stride + k0 + (tid % 2) * 16))
                    : make_uint4(0, 0, 0, 0);
    }
    const int gn = n0 + ng * VN;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int gk = k0 + kg * 4 + i;
      const __half* row = x + gk * N + gn;
      if (gk < k_end && vec_b && gn < N) {
        if constexpr (VN == 4) {
          const uint2 v = __ldg(reinterpret_cast<const uint2*>(row));
          sg.b[i][0] = *reinterpret_cast<const __half2*>(&v.x);
          sg.b[i][1] = *reinterpret_cast<const __half2*>(&v.y);
        } else {
          const unsigned v = __ldg(reinterpret_cast<const unsigned*>(row));
          sg.b[i][0] = *reinterpret_cast<const __half2*>(&v);
        }
      } else {
        const __half z = __float2half_rn(0.0f);
#pragma unroll
        for (int j = 0; j < VN / 2; ++j)
          sg.b[i][j] = __halves2half2(gk < k_end && gn + 2 * j < N ? row[2 * j] : z, gk < k_end && gn + 2 * j + 1 < N ? row[2 * j + 1] : z);
      }
    }
  };
  auto store_smem = [&](const Stage& sg, int buf) {
    if (tid < BM * 2) *reinterpret_cast<uint4*>(&As[buf][(tid / 2) * LD + (tid % 2) * 16]) = sg.a;
#pragma unroll
    for (int j = 0; j < VN / 2; ++j) {
      float2 f[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) f[i] = __half22float2(sg.b[i][j]);
      *reinterpret_cast<uint32_t*>(&Bs[buf][(ng * VN + 2 * j) * LD + kg * 4]) =
          fp8x4_e4m3(f[0].x * inv_x_scale, f[1].x * inv_x_scale, f[2].x * inv_x_scale, f[3].x * inv_x_scale);
      *reinterpret_cast<uint32_t*>(&Bs[buf][(ng * VN + 2 * j + 1) * LD + kg * 4]) =
          fp8x4_e4m3(f[0].y * inv_x_scale, f[1].y * inv_x_scale, f[2].y * inv_x_scale, f[3].y * inv_x_scale);
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

#pragma unroll
  for (int s = 0; s < S; ++s)
    if (s < ntiles) load(st[s], k_begin + s * BK);
  if (ntiles > 0) {
    store_smem(st[0], 0);
    if (S < ntiles) load(st[0], k_begin + S * BK);
    __syncthreads();
  }
  for (int t0 = 0; t0 < ntiles; t0 += S)
#pragma unroll
  for (int s = 0; s < S; ++s) {
    const int t = t0 + s;
    if (t >= ntiles) break;
    const int buf = t & 1;
    uint32_t af[MT][4], bf[NT][2];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      const uint8_t* a = &As[buf][(wm * WM + i * 16 + gq) * LD + tq * 4];
      af[i][0] = *reinterpret_cast<const uint32_t*>(a);
      af[i][1] = *reinterpret_cast<const uint32_t*>(a + 8 * LD);
      af[i][2] = *reinterpret_cast<const uint32_t*>(a + 16);
      af[i][3] = *reinterpret_cast<const uint32_t*>(a + 8 * LD + 16);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint8_t* b = &Bs[buf][(wn * WN + j * 8 + gq) * LD + tq * 4];
      bf[j][0] = *reinterpret_cast<const uint32_t*>(b);
      bf[j][1] = *reinterpret_cast<const uint32_t*>(b + 16);
    }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
            : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]), "r"(bf[j][0]), "r"(bf[j][1]));
    if (t + 1 < ntiles) {  // tile t + 1 (stage (s + 1) % S) into the other buffer, which every warp finished before the last barrier
      store_smem(st[(s + 1) % S], buf ^ 1);
      if (t + 1 + S < ntiles) load(st[(s + 1) % S], k_begin + (t + 1 + S) * BK);  // refill: S tiles ahead
    }
    __syncthreads();
  }

  pdl_allow_dependents();  // main loop done: the next kernel may be scheduled (it waits for this grid in pdl_wait)
  // Epilogue from registers: accumulator q of tile (i, j) is row g (+8 for q >= 2), column 2·tq + (q & 1). The two
  // columns of a pair are stored together (half2 / float2) when H·W is even and the bases allow.
  const bool pair = N % 2 == 0 && (reinterpret_cast<uintptr_t>(y) & 3) == 0 && (!res || (reinterpret_cast<uintptr_t>(res) & 3) == 0) &&
                    (!part || (reinterpret_cast<uintptr_t>(part) & 7) == 0);
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int gm = m0 + wm * WM + i * 16 + gq + h * 8;
      if (gm >= M) continue;
      const float s = out_scale[gm];
      if (pair) {
        const float b = bias ? bias[gm] : 0.0f;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int gn = n0 + wn * WN + j * 8 + tq * 2, idx = gm * N + gn;  // gn even, N even: gn + 1 < N too
          if (gn >= N) continue;
          float v0 = acc[i][j][h * 2] * s, v1 = acc[i][j][h * 2 + 1] * s;
          if (part) {
            *reinterpret_cast<float2*>(part + idx) = make_float2(v0, v1);
            continue;
          }
          v0 += b;
          v1 += b;
          if (res) {
            const float2 r = __half22float2(*reinterpret_cast<const __half2*>(res + idx));
            v0 += r.x;
            v1 += r.y;
          }
          *reinterpret_cast<__half2*>(y + idx) = __floats2half2_rn(activate(v0, act, p), activate(v1, act, p));
        }
        continue;
      }
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int gn = n0 + wn * WN + j * 8 + tq * 2 + q;
          if (gn >= N) continue;
          const float v = acc[i][j][h * 2 + q] * s;
          if (part) part[gm * N + gn] = v;
          else finish(y, gm * N + gn, gm, v, bias, res, act, p);
        }
    }
  if (part && counters) splitk_serial_finish<__half, BM, BN>(sk, part, counters, y, bias, res, M, N, m0, n0, act, p);
#else
  __trap();  // FP8 tensor cores need sm_89+; the CUDA executor refuses precision fp8 below it
#endif
}

}  // namespace

size_t conv2d_pointwise_workspace_bytes(const Conv2dGeometry& g, int splits) {
  if (splits <= 1) return 0;
  return static_cast<size_t>(g.n) * static_cast<size_t>(splits) * static_cast<size_t>(g.c_out) *
         static_cast<size_t>(g.out_h * g.out_w) * sizeof(float);
}

size_t conv2d_pointwise_tile_counters(const Conv2dGeometry& g, PointwiseTile tile, int splits) {
  if (splits <= 1) return 0;
  const int64_t b = tile == PointwiseTile::k64x64 ? 64 : 32;
  return static_cast<size_t>(g.n) * static_cast<size_t>((g.c_out + b - 1) / b) * static_cast<size_t>((g.out_h * g.out_w + b - 1) / b);
}

namespace {

// Why dw → pw cannot run as conv2d_depthwise_pointwise ("" when it can).
std::string depthwise_pointwise_mismatch(const Conv2dGeometry& dw, const Conv2dGeometry& pw) {
  if (!conv2d_depthwise_applicable(dw)) return "the first conv is not depthwise (group == c_in == c_out)";
  if (!conv2d_pointwise_applicable(pw)) return "the second conv is not pointwise (1x1, stride 1, dilation 1, no pads, group 1)";
  if (pw.n != dw.n || pw.c_in != dw.c_out || pw.in_h != dw.out_h || pw.in_w != dw.out_w)
    return "the pointwise conv's input [" + std::to_string(pw.n) + ", " + std::to_string(pw.c_in) + ", " + std::to_string(pw.in_h) + ", " +
           std::to_string(pw.in_w) + "] is not the depthwise output [" + std::to_string(dw.n) + ", " + std::to_string(dw.c_out) + ", " +
           std::to_string(dw.out_h) + ", " + std::to_string(dw.out_w) + "]";
  return {};
}

Status launched(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return cuda::cuda_status(err, what, __FILE__, __LINE__);
  return Status::ok();
}

}  // namespace

Status validate_conv2d(const Conv2dGeometry& g) {
  auto bad = [](const std::string& why) { return invalid_argument("conv2d: " + why); };
  if (g.n < 1 || g.c_in < 1 || g.in_h < 1 || g.in_w < 1 || g.c_out < 1 || g.out_h < 1 || g.out_w < 1)
    return bad("extents must be positive");
  if (g.group < 1 || g.c_in % g.group != 0 || g.c_out % g.group != 0)
    return bad("group " + std::to_string(g.group) + " does not divide c_in " + std::to_string(g.c_in) + " and c_out " + std::to_string(g.c_out));
  if (g.kernel_h < 1 || g.kernel_w < 1 || g.stride_h < 1 || g.stride_w < 1 || g.dilation_h < 1 || g.dilation_w < 1)
    return bad("kernel, stride and dilation must be positive");
  if (g.pad_top < 0 || g.pad_left < 0 || g.pad_bottom < 0 || g.pad_right < 0) return bad("pads must be >= 0");
  const int64_t eh = (g.kernel_h - 1) * g.dilation_h + 1, ew = (g.kernel_w - 1) * g.dilation_w + 1;
  const int64_t oh = (g.in_h + g.pad_top + g.pad_bottom - eh) / g.stride_h + 1;
  const int64_t ow = (g.in_w + g.pad_left + g.pad_right - ew) / g.stride_w + 1;
  if (g.in_h + g.pad_top + g.pad_bottom < eh || g.in_w + g.pad_left + g.pad_right < ew || oh != g.out_h || ow != g.out_w)
    return bad("output " + std::to_string(g.out_h) + "x" + std::to_string(g.out_w) + " does not follow from the input, kernel, stride, dilation and pads (" +
               std::to_string(oh) + "x" + std::to_string(ow) + ")");
  constexpr int64_t kMax = int64_t{1} << 30;  // 32-bit indices, with room for the grid-stride step
  if (g.n * g.c_in * g.in_h * g.in_w > kMax || g.n * g.c_out * g.out_h * g.out_w > kMax ||
      g.c_out * (g.c_in / g.group) * g.kernel_h * g.kernel_w > kMax)
    return bad("a tensor has more than 2^30 elements (32-bit indexing)");
  return Status::ok();
}

bool conv2d_depthwise_applicable(const Conv2dGeometry& g) { return g.group == g.c_in && g.c_out == g.c_in; }

bool conv2d_pointwise_applicable(const Conv2dGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0 && g.group == 1;
}

bool conv2d_depthwise_pointwise_applicable(const Conv2dGeometry& dw, const Conv2dGeometry& pw) {
  return validate_conv2d(dw).is_ok() && validate_conv2d(pw).is_ok() && depthwise_pointwise_mismatch(dw, pw).empty();
}

const char* pointwise_tile_name(PointwiseTile t) { return t == PointwiseTile::k64x64 ? "64x64" : "32x32"; }

Status conv2d_depthwise(ElemType t, const Conv2dGeometry& g, const void* x, const void* w, void* y, const ConvEpilogue& e,
                        cudaStream_t stream, int outputs_per_thread) {
  WS_RETURN_IF_ERROR(refuse_input_rows(e, "conv2d_depthwise"));
  WS_RETURN_IF_ERROR(validate_conv2d(g));
  if (!conv2d_depthwise_applicable(g)) return invalid_argument("conv2d_depthwise: needs group == c_in == c_out");
  if (outputs_per_thread != 1 && outputs_per_thread != 4)
    return invalid_argument("conv2d_depthwise: outputs_per_thread must be 1 or 4, not " + std::to_string(outputs_per_thread));
  const SpatialArgs a = spatial_args(g);
  const int wgroups = (a.out_w + outputs_per_thread - 1) / outputs_per_thread;
  const int threads_total = int(g.n * g.c_out * g.out_h) * wgroups;
  const unsigned grid = grid_for(threads_total);
  auto go = [&](auto tag, auto opt) {
    using T = decltype(tag);
    constexpr int OPT = decltype(opt)::value;
    const T* xs = static_cast<const T*>(x);
    const T* ws = static_cast<const T*>(w);
    T* ys = static_cast<T*>(y);
    const T* rs = static_cast<const T*>(e.residual);
    if (a.kh == 3 && a.kw == 3)
      launch_kernel(e.pdl, depthwise_kernel<T, 3, 3, OPT>, grid, kThreads, 0, stream, xs, ws, ys, e.bias, rs, a, wgroups, threads_total, e.act, e.params);
    else if (a.kh == 5 && a.kw == 5)
      launch_kernel(e.pdl, depthwise_kernel<T, 5, 5, OPT>, grid, kThreads, 0, stream, xs, ws, ys, e.bias, rs, a, wgroups, threads_total, e.act, e.params);
    else
      launch_kernel(e.pdl, depthwise_kernel<T, 0, 0, OPT>, grid, kThreads, 0, stream, xs, ws, ys, e.bias, rs, a, wgroups, threads_total, e.act, e.params);
  };
  using One = std::integral_constant<int, 1>;
  using Four = std::integral_constant<int, 4>;
  if (t == ElemType::kFloat32) {
    if (outputs_per_thread == 4) go(float{}, Four{}); else go(float{}, One{});
  } else {
    if (outputs_per_thread == 4) go(__half{}, Four{}); else go(__half{}, One{});
  }
  return launched("conv2d_depthwise launch");
}

bool conv2d_stem3x3_applicable(const Conv2dGeometry& g) {
  return g.group == 1 && g.c_in == 3 && g.kernel_h == 3 && g.kernel_w == 3 && g.c_out <= 4096;
}

Status conv2d_direct(ElemType t, const Conv2dGeometry& g, const void* x, const void* w, void* y, const ConvEpilogue& e,
                     cudaStream_t stream) {
  WS_RETURN_IF_ERROR(validate_conv2d(g));
  const SpatialArgs a = spatial_args(g);
  if (conv2d_stem3x3_applicable(g)) {  // the RGB stem: direct_stem3x3_kernel
    const int pixels = int(g.n * g.out_h * g.out_w);
    const dim3 grid(unsigned((pixels + 127) / 128), unsigned((g.c_out + kStemCo - 1) / kStemCo));
    const RowSignal& rows = e.input_rows;
    const RowSignal& out_rows = e.output_rows;
    if (rows && (g.n != 1 || rows.rows != g.in_h || !rows.epoch || !rows.error || e.residual))
      return invalid_argument("conv2d_direct (stem 3x3): waiting on input rows (RowSignal) needs batch 1, no residual and a signal of the "
                              "input's " + std::to_string(g.in_h) + " rows with epoch and error words; got batch " + std::to_string(g.n) +
                              (e.residual ? ", a residual" : "") + ", " + std::to_string(rows.rows) + " rows" +
                              (!rows.epoch ? ", no epoch word" : "") + (!rows.error ? ", no error word" : ""));
    if (out_rows && (!rows || out_rows.rows != g.out_h || out_rows.epoch != rows.epoch || out_rows.error != rows.error || !out_rows.counters))
      return invalid_argument("conv2d_direct (stem 3x3): publishing output rows (RowSignal) needs an input RowSignal to wait on and a signal of "
                              "the output's " + std::to_string(g.out_h) + " rows sharing its epoch and error words, with counters; got " +
                              (!rows ? std::string("no input signal, ") : std::string()) + std::to_string(out_rows.rows) + " rows" +
                              (rows && (out_rows.epoch != rows.epoch || out_rows.error != rows.error) ? ", other epoch/error words" : "") +
                              (!out_rows.counters ? ", no counters" : ""));
    auto go = [&](auto tag) {
      using T = decltype(tag);
      auto* kernel = out_rows ? direct_stem3x3_kernel<T, true, true> : rows ? direct_stem3x3_kernel<T, true, false> : direct_stem3x3_kernel<T, false, false>;
      launch_kernel(e.pdl, kernel, grid, 128, 0, stream, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), e.bias,
                    static_cast<const T*>(e.residual), a, pixels, e.act, e.params, rows, out_rows);
    };
    if (t == ElemType::kFloat32) go(float{});
    else go(__half{});
    return launched("conv2d_direct (stem 3x3) launch");
  }
  WS_RETURN_IF_ERROR(refuse_input_rows(e, "conv2d_direct (not the RGB stem form: group 1, Cin 3, 3x3)"));
  const unsigned grid = grid_for(a.total);
  if (t == ElemType::kFloat32)
    launch_kernel(e.pdl, direct_kernel<float>, grid, kThreads, 0, stream, static_cast<const float*>(x), static_cast<const float*>(w), static_cast<float*>(y),
                                                        e.bias, static_cast<const float*>(e.residual), a, e.act, e.params);
  else
    launch_kernel(e.pdl, direct_kernel<__half>, grid, kThreads, 0, stream, static_cast<const __half*>(x), static_cast<const __half*>(w), static_cast<__half*>(y),
                                                         e.bias, static_cast<const __half*>(e.residual), a, e.act, e.params);
  return launched("conv2d_direct launch");
}

Status conv2d_pointwise(ElemType t, PointwiseTile tile, const Conv2dGeometry& g, const void* x, const void* w, void* y,
                        const ConvEpilogue& e, cudaStream_t stream, int splits, void* workspace, unsigned* tile_counters) {
  WS_RETURN_IF_ERROR(refuse_input_rows(e, "conv2d_pointwise"));
  WS_RETURN_IF_ERROR(validate_conv2d(g));
  if (!conv2d_pointwise_applicable(g)) return invalid_argument("conv2d_pointwise: needs a 1x1 kernel, stride 1, dilation 1, no pads, group 1");
  const int M = int(g.c_out), N = int(g.out_h * g.out_w), K = int(g.c_in);
  if (splits < 1 || splits > kPointwiseMaxSplits)
    return invalid_argument("conv2d_pointwise: split-K " + std::to_string(splits) + " outside 1.." + std::to_string(kPointwiseMaxSplits));
  if (splits > 1 && !workspace) return invalid_argument("conv2d_pointwise: split-K needs a workspace (conv2d_pointwise_workspace_bytes)");
  if (g.n * splits > 65535) return invalid_argument("conv2d_pointwise: batch x split-K above 65535");
  const unsigned nb = static_cast<unsigned>(g.n * splits);
  float* part = splits > 1 ? static_cast<float*>(workspace) : nullptr;
  unsigned* counters = part ? tile_counters : nullptr;  // in-kernel reduction: no second kernel
  if (t == ElemType::kFloat32) {
    const float* xs = static_cast<const float*>(x);
    const float* ws = static_cast<const float*>(w);
    float* ys = static_cast<float*>(y);
    const float* rs = static_cast<const float*>(e.residual);
    if (tile == PointwiseTile::k64x64) {
      const dim3 grid((N + 63) / 64, (M + 63) / 64, nb);
      launch_kernel(e.pdl, pointwise_simt_kernel<float, 64, 64, 16, 4, 4>, grid, 256, 0, stream, xs, ws, ys, e.bias, rs, M, N, K, e.act, e.params, splits, part, counters);
    } else {
      const dim3 grid((N + 31) / 32, (M + 31) / 32, nb);
      launch_kernel(e.pdl, pointwise_simt_kernel<float, 32, 32, 16, 2, 2>, grid, 256, 0, stream, xs, ws, ys, e.bias, rs, M, N, K, e.act, e.params, splits, part, counters);
    }
    if (part && !counters) {
      const int total = int(g.n) * M * N;
      launch_kernel(e.pdl, splitk_reduce_kernel<float>, (total + kThreads - 1) / kThreads, kThreads, 0, stream, part, ys, e.bias, rs, M, N, splits, total,
                                                                                            e.act, e.params);
    }
  } else {
    const __half* xs = static_cast<const __half*>(x);
    const __half* ws = static_cast<const __half*>(w);
    __half* ys = static_cast<__half*>(y);
    const __half* rs = static_cast<const __half*>(e.residual);
    if (tile == PointwiseTile::k64x64) {
      using Tile = WmmaTile<64, 64, 32, 32>;
      const dim3 grid((N + 63) / 64, (M + 63) / 64, nb);
      launch_kernel(e.pdl, pointwise_wmma_kernel<64, 64, 32, 32>, grid, Tile::kThreads, 0, stream, xs, ws, ys, e.bias, rs, M, N, K, e.act, e.params, splits, part, counters);
    } else {
      using Tile = WmmaTile<32, 32, 16, 16>;
      const dim3 grid((N + 31) / 32, (M + 31) / 32, nb);
      launch_kernel(e.pdl, pointwise_wmma_kernel<32, 32, 16, 16>, grid, Tile::kThreads, 0, stream, xs, ws, ys, e.bias, rs, M, N, K, e.act, e.params, splits, part, counters);
    }
    if (part && !counters) {
      const int total = int(g.n) * M * N;
      launch_kernel(e.pdl, splitk_reduce_kernel<__half>, (total + kThreads - 1) / kThreads, kThreads, 0, stream, part, ys, e.bias, rs, M, N, splits, total,
                                                                                             e.act, e.params);
    }
  }
  return launched("conv2d_pointwise launch");
}

Status conv2d_pointwise_cluster(PointwiseTile tile, const Conv2dGeometry& g, const void* x, const void* w, void* y, const ConvEpilogue& e,
                                cudaStream_t stream, int splits) {
  WS_RETURN_IF_ERROR(refuse_input_rows(e, "conv2d_pointwise_cluster"));
  WS_RETURN_IF_ERROR(validate_conv2d(g));
  if (!conv2d_pointwise_applicable(g))
    return invalid_argument("conv2d_pointwise_cluster: needs a 1x1 kernel, stride 1, dilation 1, no pads, group 1");
  if (splits < 2 || splits > kPointwiseMaxClusterSplits)
    return invalid_argument("conv2d_pointwise_cluster: split-K " + std::to_string(splits) + " outside 2.." + std::to_string(kPointwiseMaxClusterSplits) +
                            " (the cluster size)");
  if (tile != PointwiseTile::k32x32 && tile != PointwiseTile::k64x64) return invalid_argument("conv2d_pointwise_cluster: unknown tile");
  if (!x || !w || !y) return invalid_argument("conv2d_pointwise_cluster: null x, w or y");
  if ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(e.residual)) % 2 != 0 ||
      reinterpret_cast<uintptr_t>(e.bias) % 4 != 0)
    return invalid_argument("conv2d_pointwise_cluster: x, w, y and residual must be 2-byte aligned (fp16), bias 4-byte aligned (fp32)");
  if (g.n * splits > 65535) return invalid_argument("conv2d_pointwise_cluster: batch x split-K above 65535");
  const int b = tile == PointwiseTile::k64x64 ? 64 : 32;
  if ((g.c_out + b - 1) / b > 65535) return invalid_argument("conv2d_pointwise_cluster: more than 65535 output-channel tiles (c_out too large)");
  using K32 = void (*)(const __half*, const __half*, __half*, const float*, const __half*, int, int, int, Activation, ActivationParams, int,
                       float*, unsigned*);
  const K32 kernel = tile == PointwiseTile::k64x64 ? pointwise_wmma_kernel<64, 64, 32, 32, true> : pointwise_wmma_kernel<32, 32, 16, 16, true>;
  // Once per device: the PTX version the kernels run from (clusters need 9.0) and the non-portable cluster size
  // (above 8) attribute, so that later launches (captured or not) make no attribute calls.
  static DeviceFacts facts[64];
  static std::mutex facts_mu;
  WS_ASSIGN_OR_RETURN(const DeviceFacts* f, device_facts(facts, facts_mu, "conv2d_pointwise_cluster", [](int, DeviceFacts& ds) -> Status {
    cudaFuncAttributes fa{};
    WS_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&fa, pointwise_wmma_kernel<32, 32, 16, 16, true>));
    ds.ptx = fa.ptxVersion;
    if (ds.ptx < 90) return Status::ok();  // refused below, before any launch
    ds.wide_clusters = true;  // a device that refuses non-portable clusters loses the splits above 8 only
    for (K32 k : {pointwise_wmma_kernel<64, 64, 32, 32, true>, pointwise_wmma_kernel<32, 32, 16, 16, true>})
      if (cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
        (void)cudaGetLastError();
        ds.wide_clusters = false;
      }
    return Status::ok();
  }));
  WS_RETURN_IF_ERROR(require_cluster_device("conv2d_pointwise_cluster", *f));
  if (f->ptx < 90)
    return invalid_argument("conv2d_pointwise_cluster: this build runs the kernel from PTX for compute capability " + std::to_string(f->ptx / 10) +
                            "." + std::to_string(f->ptx % 10) +
                            "; it needs 9.0 or newer (thread-block clusters): build with CMAKE_CUDA_ARCHITECTURES including 90");
  if (splits > 8 && !f->wide_clusters)
    return invalid_argument("conv2d_pointwise_cluster: split-K " + std::to_string(splits) +
                            " needs a non-portable cluster (more than 8 blocks), which this device refused; use splits <= 8");
  const int M = int(g.c_out), N = int(g.out_h * g.out_w), K = int(g.c_in);
  const dim3 grid(static_cast<unsigned>((N + b - 1) / b), static_cast<unsigned>((M + b - 1) / b), static_cast<unsigned>(g.n * splits));
  const dim3 block(tile == PointwiseTile::k64x64 ? WmmaTile<64, 64, 32, 32>::kThreads : WmmaTile<32, 32, 16, 16>::kThreads);
  const cudaError_t err = launch_kernel_cluster(e.pdl, static_cast<unsigned>(splits), kernel, grid, block, 0, stream, static_cast<const __half*>(x),
                                                static_cast<const __half*>(w), static_cast<__half*>(y), e.bias, static_cast<const __half*>(e.residual), M,
                                                N, K, e.act, e.params, splits, static_cast<float*>(nullptr), static_cast<unsigned*>(nullptr));
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not left for the next launcher's launched() to report as its own
    return cuda::cuda_status(err, "conv2d_pointwise_cluster launch", __FILE__, __LINE__);
  }
  return Status::ok();
}

Status conv2d_depthwise_pointwise(PointwiseTile tile, const Conv2dGeometry& dw, const Conv2dGeometry& pw, const void* x, const void* w_dw,
                                  const ConvEpilogue& dw_epi, const void* w_pw, void* y, const ConvEpilogue& e, cudaStream_t stream,
                                  int splits, void* workspace) {
  WS_RETURN_IF_ERROR(refuse_input_rows(e, "conv2d_depthwise_pointwise (the projection's epilogue)"));
  if (dw_epi.output_rows) return invalid_argument("conv2d_depthwise_pointwise: cannot publish output rows (RowSignal); only conv2d_direct's RGB stem form can");
  WS_RETURN_IF_ERROR(validate_conv2d(dw));
  WS_RETURN_IF_ERROR(validate_conv2d(pw));
  const std::string why = depthwise_pointwise_mismatch(dw, pw);
  if (!why.empty()) return invalid_argument("conv2d_depthwise_pointwise: " + why);
  const RowSignal& rows = dw_epi.input_rows;
  if (rows && (dw.n != 1 || dw.kernel_h != 3 || dw.kernel_w != 3 || e.residual || rows.rows != dw.in_h || !rows.epoch || !rows.error))
    return invalid_argument("conv2d_depthwise_pointwise: waiting on input rows (RowSignal) needs batch 1, a 3x3 depthwise kernel, no residual "
                            "and a signal of x's " + std::to_string(dw.in_h) + " rows with epoch and error words; got batch " +
                            std::to_string(dw.n) + ", " + std::to_string(dw.kernel_h) + "x" + std::to_string(dw.kernel_w) +
                            (e.residual ? ", a residual" : "") + ", " + std::to_string(rows.rows) + " rows" +
                            (!rows.epoch ? ", no epoch word" : "") + (!rows.error ? ", no error word" : ""));
  if (dw_epi.residual) return invalid_argument("conv2d_depthwise_pointwise: the depthwise conv cannot carry a residual (its output is never stored)");
  if (!x || !w_dw || !w_pw || !y) return invalid_argument("conv2d_depthwise_pointwise: null x, weight or y");
  if (splits < 1 || splits > kPointwiseMaxSplits)
    return invalid_argument("conv2d_depthwise_pointwise: split-K " + std::to_string(splits) + " outside 1.." + std::to_string(kPointwiseMaxSplits));
  if (splits > 1 && !workspace) return invalid_argument("conv2d_depthwise_pointwise: split-K needs a workspace (conv2d_pointwise_workspace_bytes of pw)");
  if (pw.n * splits > 65535) return invalid_argument("conv2d_depthwise_pointwise: batch x split-K above 65535");
  const int M = int(pw.c_out), N = int(pw.out_h * pw.out_w), K = int(pw.c_in);
  const unsigned nb = static_cast<unsigned>(pw.n * splits);
  float* part = splits > 1 ? static_cast<float*>(workspace) : nullptr;
  const SpatialArgs a = spatial_args(dw);
  const __half* xs = static_cast<const __half*>(x);
  const __half* wds = static_cast<const __half*>(w_dw);
  const __half* ws = static_cast<const __half*>(w_pw);
  __half* ys = static_cast<__half*>(y);
  const __half* rs = static_cast<const __half*>(e.residual);
  auto go = [&](auto kernel, int bm, int bn, int threads) {
    const dim3 grid(unsigned((N + bn - 1) / bn), unsigned((M + bm - 1) / bm), nb);
    launch_kernel(e.pdl, kernel, grid, threads, 0, stream, xs, wds, dw_epi.bias, a, dw_epi.act, dw_epi.params, ws, ys, e.bias, rs, M, N, K,
                  e.act, e.params, splits, part, rows);
  };
  const int kern = a.kh == 3 && a.kw == 3 ? 3 : a.kh == 5 && a.kw == 5 ? 5 : 0;
  if (tile == PointwiseTile::k64x64) {
    constexpr int T = WmmaTile<64, 64, 32, 32>::kThreads * kDwPwThreadFactor;
    if (rows) go(depthwise_pointwise_wmma_kernel<64, 64, 32, 32, 3, 3, true>, 64, 64, T);
    else if (kern == 3) go(depthwise_pointwise_wmma_kernel<64, 64, 32, 32, 3, 3>, 64, 64, T);
    else if (kern == 5) go(depthwise_pointwise_wmma_kernel<64, 64, 32, 32, 5, 5>, 64, 64, T);
    else go(depthwise_pointwise_wmma_kernel<64, 64, 32, 32, 0, 0>, 64, 64, T);
  } else {
    constexpr int T = WmmaTile<32, 32, 16, 16>::kThreads * kDwPwThreadFactor;
    if (rows) go(depthwise_pointwise_wmma_kernel<32, 32, 16, 16, 3, 3, true>, 32, 32, T);
    else if (kern == 3) go(depthwise_pointwise_wmma_kernel<32, 32, 16, 16, 3, 3>, 32, 32, T);
    else if (kern == 5) go(depthwise_pointwise_wmma_kernel<32, 32, 16, 16, 5, 5>, 32, 32, T);
    else go(depthwise_pointwise_wmma_kernel<32, 32, 16, 16, 0, 0>, 32, 32, T);
  }
  if (part) {
    const int total = int(pw.n) * M * N;
    launch_kernel(e.pdl, splitk_reduce_kernel<__half>, (total + kThreads - 1) / kThreads, kThreads, 0, stream, part, ys, e.bias, rs, M, N, splits,
                  total, e.act, e.params);
  }
  return launched("conv2d_depthwise_pointwise launch");
}


Result<int> conv2d_pointwise_fp8_arch() {
  cudaFuncAttributes a{};
  const cudaError_t err = cudaFuncGetAttributes(&a, pointwise_fp8_kernel<32, 32>);
  if (err != cudaSuccess) return cuda::cuda_status(err, "cudaFuncGetAttributes(pointwise_fp8_kernel)", __FILE__, __LINE__);
  return a.ptxVersion;
}

Status conv2d_pointwise_fp8(PointwiseTile tile, const Conv2dGeometry& g, const void* x, const PointwiseFp8Weights& w, void* y,
                            const ConvEpilogue& e, cudaStream_t stream, int splits, void* workspace, unsigned* tile_counters) {
  WS_RETURN_IF_ERROR(refuse_input_rows(e, "conv2d_pointwise_fp8"));
  WS_RETURN_IF_ERROR(validate_conv2d(g));
  if (!conv2d_pointwise_applicable(g)) return invalid_argument("conv2d_pointwise_fp8: needs a 1x1 kernel, stride 1, dilation 1, no pads, group 1");
  if (!x || !y || !w.codes || !w.out_scale) return invalid_argument("conv2d_pointwise_fp8: null x, y, codes or out_scale");
  if (w.k_stride < g.c_in || w.k_stride % kFp8KAlign != 0 || (reinterpret_cast<uintptr_t>(w.codes) & 15) != 0)
    return invalid_argument("conv2d_pointwise_fp8: k_stride " + std::to_string(w.k_stride) + " must be a multiple of " + std::to_string(kFp8KAlign) +
                            " >= c_in " + std::to_string(g.c_in) + " with 16-byte aligned codes");
  if (!(w.inv_x_scale > 0.0f) || !std::isfinite(w.inv_x_scale))
    return invalid_argument("conv2d_pointwise_fp8: inv_x_scale must be finite and > 0");
  if (splits < 1 || splits > kPointwiseMaxSplits)
    return invalid_argument("conv2d_pointwise_fp8: split-K " + std::to_string(splits) + " outside 1.." + std::to_string(kPointwiseMaxSplits));
  if (splits > 1 && !workspace) return invalid_argument("conv2d_pointwise_fp8: split-K needs a workspace (conv2d_pointwise_workspace_bytes)");
  if (g.n * splits > 65535) return invalid_argument("conv2d_pointwise_fp8: batch x split-K above 65535");
  if (w.k_stride * g.c_out > (int64_t{1} << 31)) return invalid_argument("conv2d_pointwise_fp8: weight codes above 2^31 bytes");
  const int M = int(g.c_out), N = int(g.out_h * g.out_w), K = int(g.c_in);
  const unsigned nb = static_cast<unsigned>(g.n * splits);
  float* part = splits > 1 ? static_cast<float*>(workspace) : nullptr;
  unsigned* counters = part ? tile_counters : nullptr;  // in-kernel reduction: no second kernel
  const __half* xs = static_cast<const __half*>(x);
  __half* ys = static_cast<__half*>(y);
  const __half* rs = static_cast<const __half*>(e.residual);
  const int ks = int(w.k_stride);
  if (tile == PointwiseTile::k64x64)
    launch_kernel(e.pdl, pointwise_fp8_kernel<64, 64>, dim3((N + 63) / 64, (M + 63) / 64, nb), kFp8Threads, 0, stream, xs, w.codes, ks,
                  w.out_scale, w.inv_x_scale, ys, e.bias, rs, M, N, K, e.act, e.params, splits, part, counters);
  else
    launch_kernel(e.pdl, pointwise_fp8_kernel<32, 32>, dim3((N + 31) / 32, (M + 31) / 32, nb), kFp8Threads, 0, stream, xs, w.codes, ks,
                  w.out_scale, w.inv_x_scale, ys, e.bias, rs, M, N, K, e.act, e.params, splits, part, counters);
  if (part && !counters) {
    const int total = int(g.n) * M * N;
    launch_kernel(e.pdl, splitk_reduce_kernel<__half>, (total + kThreads - 1) / kThreads, kThreads, 0, stream, part, ys, e.bias, rs, M, N, splits,
                  total, e.act, e.params);
  }
  return launched("conv2d_pointwise_fp8 launch");
}

}  // namespace ws::kernels
