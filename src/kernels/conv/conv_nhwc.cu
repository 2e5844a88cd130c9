// Channels-last fp16 implicit-GEMM convolution with in-kernel (serial) split-K (see conv_nhwc.h for the math,
// layouts and errors).
// GEMM view: C[P × c_out] = A[P × R] · B[R × c_out], P = n·out_h·out_w pixels, R = kh·kw·c_in; A is gathered from x
// (row p, columns (tap, channel): one tap's 32 consecutive channels are 64 contiguous bytes of x), B is w read as
// [c_out][R] rows (KRSC: k·R + tap·c_in + c), so both operand tiles load as 16-byte vectors.
// Thread mapping: block (bx, by, split) computes pixels [64·bx, +64) × channels [64·by, +64) over the K tiles of its
// split; 128 threads = 4 warps in a 2 × 2 grid, each warp 32 pixels × 32 channels = 2 × 2 wmma m16n16k16 fp32
// accumulators. Per 32-deep K tile each thread loads 2 A vectors and 2 B vectors (16 bytes each) into registers for the
// next tile while the warps run this tile's mma from shared memory (register-staged double buffering).
// Epilogue: accumulators → shared fp32 tile → (splits = 1) + bias + residual, activation, 8 channels per 16-byte store;
// (splits > 1) fp32 partial tile to the workspace, then the last-arriving block sums the partials in split order and
// runs the same epilogue.
// Test: tests/gpu/conv_nhwc_test.cpp (ws_gpu_tests --gtest_filter='ConvNhwc*'). Time: the disabled timing test in the
// same file (--gtest_also_run_disabled_tests --gtest_filter='ConvNhwc.DISABLED_*'), beside cuDNN's fused call.
#include <cuda_fp16.h>
#include <mma.h>

#include <mutex>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/conv/conv_nhwc.h"
#include "kernels/conv/device_once.h"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/pdl.cuh"

namespace ws::kernels {
namespace {

using device::activate;
using device::pdl_allow_dependents;
using device::pdl_wait;

constexpr int BM = kNhwcTileM, BN = kNhwcTileN, BK = kNhwcTileK;
constexpr int kThreads = 128;
constexpr int LDS = BK + 8;   // halves per shared row of the A and B tiles (80 bytes: 16-byte aligned rows)
constexpr int LDC = BN + 4;   // floats per shared row of the C tile

struct IgemmArgs {
  int n, c_in, in_h, in_w, c_out, out_h, out_w, kh, kw, sh, sw, dh, dw, pt, pl;
  int P, R, k_tiles, splits;
  const float* bias;
  const __half* res;
  Activation act;
  ActivationParams ap;
};

__device__ __forceinline__ void epilogue8(const IgemmArgs& a, const float* v, int p, int k, __half* __restrict__ y) {
  float o[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) o[j] = v[j] + (a.bias ? a.bias[k + j] : 0.0f);
  if (a.res) {
    const uint4 r = *reinterpret_cast<const uint4*>(a.res + static_cast<size_t>(p) * a.c_out + k);
    const __half* rh = reinterpret_cast<const __half*>(&r);
#pragma unroll
    for (int j = 0; j < 8; ++j) o[j] += __half2float(rh[j]);
  }
  uint4 out;
  __half* oh = reinterpret_cast<__half*>(&out);
#pragma unroll
  for (int j = 0; j < 8; ++j) oh[j] = __float2half_rn(activate(o[j], a.act, a.ap));
  *reinterpret_cast<uint4*>(y + static_cast<size_t>(p) * a.c_out + k) = out;
}

__global__ void __launch_bounds__(kThreads) nhwc_igemm_kernel(const __half* __restrict__ x, const __half* __restrict__ w,
                                                              __half* __restrict__ y, float* __restrict__ part,
                                                              unsigned* __restrict__ counters, IgemmArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700  // wmma: the body is compiled for sm_70+ only (the launcher refuses older PTX)
  using namespace nvcuda;
  __shared__ __align__(32) __half As[BM * LDS];
  __shared__ __align__(32) __half Bs[BN * LDS];
  __shared__ __align__(32) float Cs[BM * LDC];
  __shared__ unsigned last_block;

  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;  // the warp's 32 × 32 quarter
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN, split = blockIdx.z;
  const int chunk = (a.k_tiles + a.splits - 1) / a.splits;
  const int t_begin = min(a.k_tiles, split * chunk), t_end = min(a.k_tiles, t_begin + chunk);

  // This thread's two A rows (pixels) and two B rows (channels): vector v = tid + 128·i, row v / 4, 8-half column v % 4.
  int a_row[2], a_col[2], a_iy0[2], a_ix0[2];
  const __half* a_img[2];
  bool a_ok[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int v = tid + kThreads * i;
    a_row[i] = v / 4;
    a_col[i] = (v % 4) * 8;
    const int p = m0 + a_row[i];
    a_ok[i] = p < a.P;
    const int pp = a_ok[i] ? p : 0;
    const int ox = pp % a.out_w, oy = (pp / a.out_w) % a.out_h, img = pp / (a.out_w * a.out_h);
    a_iy0[i] = oy * a.sh - a.pt;
    a_ix0[i] = ox * a.sw - a.pl;
    a_img[i] = x + static_cast<size_t>(img) * a.in_h * a.in_w * a.c_in;
  }
  uint4 ra[2], rb[2];
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  auto load_tile = [&](int t) {
    const int kk = t * BK;                 // first reduction index of the tile
    const int tap = kk / a.c_in, c0 = kk % a.c_in;
    const int r = tap / a.kw, s = tap % a.kw;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int iy = a_iy0[i] + r * a.dh, ix = a_ix0[i] + s * a.dw;
      const bool in = a_ok[i] && iy >= 0 && iy < a.in_h && ix >= 0 && ix < a.in_w;
      ra[i] = in ? __ldg(reinterpret_cast<const uint4*>(a_img[i] + (static_cast<size_t>(iy) * a.in_w + ix) * a.c_in + c0 + a_col[i])) : zero;
      const int k = n0 + a_row[i];  // B rows use the same (row, column) split of the thread's two vectors
      rb[i] = k < a.c_out ? __ldg(reinterpret_cast<const uint4*>(w + static_cast<size_t>(k) * a.R + kk + a_col[i])) : zero;
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  pdl_wait();  // nothing global is touched before the predecessor is done
  if (t_begin < t_end) load_tile(t_begin);
  for (int t = t_begin; t < t_end; ++t) {
    __syncthreads();  // the previous tile's mma has read As / Bs
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      *reinterpret_cast<uint4*>(As + a_row[i] * LDS + a_col[i]) = ra[i];
      *reinterpret_cast<uint4*>(Bs + a_row[i] * LDS + a_col[i]) = rb[i];
    }
    __syncthreads();
    if (t + 1 < t_end) load_tile(t + 1);  // in flight during this tile's mma
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], As + (wm * 32 + i * 16) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], Bs + (wn * 32 + j * 16) * LDS + kk, LDS);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  }
  pdl_allow_dependents();
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(Cs + (wm * 32 + i * 16) * LDC + wn * 32 + j * 16, acc[i][j], LDC, wmma::mem_row_major);
  __syncthreads();

  // 64 × 64 outputs as 512 vectors of 8 channels: row e / 8, channels 8·(e % 8) .. +8.
  if (a.splits == 1) {
    for (int e = tid; e < BM * BN / 8; e += kThreads) {
      const int row = e / 8, c8 = (e % 8) * 8, p = m0 + row, k = n0 + c8;
      if (p < a.P && k < a.c_out) epilogue8(a, Cs + row * LDC + c8, p, k, y);
    }
    return;
  }
  const size_t plane = static_cast<size_t>(a.P) * a.c_out;
  float* mine = part + split * plane;
  for (int e = tid; e < BM * BN / 8; e += kThreads) {
    const int row = e / 8, c8 = (e % 8) * 8, p = m0 + row, k = n0 + c8;
    if (p >= a.P || k >= a.c_out) continue;
    float4* dst = reinterpret_cast<float4*>(mine + static_cast<size_t>(p) * a.c_out + k);
    const float* src = Cs + row * LDC + c8;
    dst[0] = make_float4(src[0], src[1], src[2], src[3]);
    dst[1] = make_float4(src[4], src[5], src[6], src[7]);
  }
  // Serial split-K: the partial tile is made device-visible, then the block counts its arrival; the last one reduces.
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    unsigned* counter = counters + blockIdx.y * gridDim.x + blockIdx.x;
    last_block = atomicAdd(counter, 1u) + 1u == static_cast<unsigned>(a.splits);
    if (last_block) atomicExch(counter, 0u);  // zero again for the next launch
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int e = tid; e < BM * BN / 8; e += kThreads) {
    const int row = e / 8, c8 = (e % 8) * 8, p = m0 + row, k = n0 + c8;
    if (p >= a.P || k >= a.c_out) continue;
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int s = 0; s < a.splits; ++s) {  // split order: the same bits whichever block arrived last
      const float4* src = reinterpret_cast<const float4*>(part + s * plane + static_cast<size_t>(p) * a.c_out + k);
      const float4 lo = __ldcg(src), hi = __ldcg(src + 1);
      v[0] += lo.x; v[1] += lo.y; v[2] += lo.z; v[3] += lo.w;
      v[4] += hi.x; v[5] += hi.y; v[6] += hi.z; v[7] += hi.w;
    }
    epilogue8(a, v, p, k, y);
  }
#else
  __trap();
#endif
}

}  // namespace

bool conv2d_nhwc_igemm_applicable(const Conv2dGeometry& g, const char** why) {
  const char* w = !validate_conv2d(g).is_ok() ? "inconsistent geometry"
                  : g.group != 1             ? "grouped conv"
                  : g.c_in % 32 != 0         ? "c_in is not a multiple of 32"
                  : g.c_out % 8 != 0         ? "c_out is not a multiple of 8"
                  : g.n * g.out_h * g.out_w > (int64_t{1} << 30) ? "more than 2^30 output pixels"
                                                                  : nullptr;
  if (why) *why = w;
  return w == nullptr;
}

size_t conv2d_nhwc_igemm_workspace_bytes(const Conv2dGeometry& g, int splits) {
  return splits <= 1 ? 0 : static_cast<size_t>(splits) * static_cast<size_t>(g.n * g.out_h * g.out_w) * static_cast<size_t>(g.c_out) * sizeof(float);
}

size_t conv2d_nhwc_igemm_tile_counters(const Conv2dGeometry& g, int splits) {
  if (splits <= 1) return 0;
  const int64_t P = g.n * g.out_h * g.out_w;
  return static_cast<size_t>((P + kNhwcTileM - 1) / kNhwcTileM) * static_cast<size_t>((g.c_out + kNhwcTileN - 1) / kNhwcTileN);
}

Status conv2d_nhwc_igemm(const Conv2dGeometry& g, int splits, const void* x, const void* w, void* y, const ConvEpilogue& epi,
                         float* workspace, unsigned* counters, cudaStream_t stream) {
  const char* why = nullptr;
  if (!conv2d_nhwc_igemm_applicable(g, &why)) {
    const Status v = validate_conv2d(g);
    return invalid_argument(std::string("conv2d_nhwc_igemm: ") + (v.is_ok() ? std::string(why) : v.message()));
  }
  if (splits < 1 || splits > kNhwcMaxSplits)
    return invalid_argument("conv2d_nhwc_igemm: splits " + std::to_string(splits) + " outside 1.." + std::to_string(kNhwcMaxSplits));
  if (!x || !w || !y) return invalid_argument("conv2d_nhwc_igemm: null x, w or y");
  if (splits > 1 && (!workspace || !counters))
    return invalid_argument("conv2d_nhwc_igemm: split-K " + std::to_string(splits) + " needs a workspace of " +
                            std::to_string(conv2d_nhwc_igemm_workspace_bytes(g, splits)) + " bytes and " +
                            std::to_string(conv2d_nhwc_igemm_tile_counters(g, splits)) + " zeroed tile counters");
  for (const void* p : {x, w, static_cast<const void*>(y), epi.residual, static_cast<const void*>(workspace)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return invalid_argument("conv2d_nhwc_igemm: an operand (x, w, y, residual or workspace) is not 16-byte aligned");
  const int64_t P = g.n * g.out_h * g.out_w, R = g.kernel_h * g.kernel_w * g.c_in;
  if (static_cast<int64_t>(splits) * P * g.c_out > (int64_t{1} << 31) / 4 || R > (int64_t{1} << 30) ||
      g.n * g.in_h * g.in_w * g.c_in > (int64_t{1} << 31) || g.c_out * R > (int64_t{1} << 31))
    return invalid_argument("conv2d_nhwc_igemm: tensors too large for 32-bit tile indexing");
  const int64_t gx = (P + BM - 1) / BM, gy = (g.c_out + BN - 1) / BN;
  if (gx > 0x7fffffff || gy > 65535) return invalid_argument("conv2d_nhwc_igemm: grid too large");
  // Once per device: the PTX version the kernel runs from (pre-7.0 PTX has no wmma: the kernel would trap).
  static DeviceFacts facts[64];
  static std::mutex facts_mu;
  WS_ASSIGN_OR_RETURN(const DeviceFacts* f, device_facts(facts, facts_mu, "conv2d_nhwc_igemm", [](int, DeviceFacts& ds) -> Status {
    cudaFuncAttributes fa{};
    WS_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&fa, nhwc_igemm_kernel));
    ds.ptx = fa.ptxVersion;
    return Status::ok();
  }));
  WS_RETURN_IF_ERROR(require_wmma_ptx("conv2d_nhwc_igemm", f->ptx));
  IgemmArgs a{};
  a.n = int(g.n); a.c_in = int(g.c_in); a.in_h = int(g.in_h); a.in_w = int(g.in_w); a.c_out = int(g.c_out);
  a.out_h = int(g.out_h); a.out_w = int(g.out_w); a.kh = int(g.kernel_h); a.kw = int(g.kernel_w);
  a.sh = int(g.stride_h); a.sw = int(g.stride_w); a.dh = int(g.dilation_h); a.dw = int(g.dilation_w);
  a.pt = int(g.pad_top); a.pl = int(g.pad_left);
  a.P = int(P); a.R = int(R); a.k_tiles = int(R / BK); a.splits = splits;
  a.bias = epi.bias;
  a.res = static_cast<const __half*>(epi.residual);
  a.act = epi.act;
  a.ap = epi.params;
  const dim3 grid{static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(splits)};
  WS_CUDA_RETURN_IF_ERROR(launch_kernel(epi.pdl, nhwc_igemm_kernel, grid, dim3(kThreads), 0, stream, static_cast<const __half*>(x),
                                        static_cast<const __half*>(w), static_cast<__half*>(y), workspace, counters, a));
  return Status::ok();
}

}  // namespace ws::kernels
