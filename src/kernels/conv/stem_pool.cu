// The ResNet stem in one kernel (stem_pool.h): Conv 7×7 / 2 / pad 3, 3 → 64 channels, + bias + activation, then
// MaxPool 3×3 / 2 / pad 1; x fp16 NCHW [1, 3, H, W] → y fp16 NHWC [1, 56, 56, 64] for 224 × 224. Replaces, in the
// NHWC plan, the input reformat (2.9 µs), cuDNN's 7×7 conv (12.4 µs) and cuDNN's NHWC max pool (3.1 µs) of ResNet-50's
// frame (run 110's per-layer profile, H100), three graph nodes, with one. FLOPs: 118 M multiply-adds (+29 % recomputed
// at tile edges, and K padded from 147 to 208 on the tensor cores); bytes: x once (301 KB) plus its halo, y once (401 KB) — both under a microsecond, so the kernel is
// latency-bound by design: one wave, short serial chains.
// Thread mapping: one block per 4 × 7 tile of pooled outputs, all 64 channels (224²: 14 × 8 = 112 blocks, one wave on
// 132 SMs). The tile needs conv rows 2·py0 − 1 … 2·py0 + 7 (9) and conv columns 2·px0 − 1 … 2·px0 + 14 (16; the 16th is
// computed and unused). 9 warps, one per conv row: the warp's 16 conv pixels are the M = 16 rows of mma.sync m16n8k16
// (fp16 in, fp32 accumulate), the 64 output channels 8 n-tiles of 8, K = 49 taps × 4 channels (the 4th zero) in 13
// k-steps of 16 (taps 49–51 zero). Phases:
//   1. the packed weights (stem_pool_pack_weights: already in B-fragment order, 26.6 KB) → shared memory with 16-byte
//      loads, before pdl_wait (constant data);
//   2. pdl_wait; the input tile (23 rows × 37 columns × 3 channels, zero outside the image) → shared memory as two
//      32-bit words per pixel, (c0, c1) and (c2, 0): an A fragment's register is one word (lanes: 8 pixels 2 columns
//      apart × 4 words → 32 distinct banks, 2-way where a lane pair's two taps straddle a kernel row);
//   3. 13 × 8 mma.sync per warp, A words read from shared memory per k-step, B fragments one 8-byte load per lane;
//      pdl_allow_dependents;
//   4. epilogue: bias + activation in fp32, rounded to fp16, into a conv tile in shared memory (over the weights; row
//      stride 72 halves, conflict-free), then the 3 × 3 max (NaN-propagating, window clipped to the conv's extent)
//      with one half2 per thread and step: consecutive threads write consecutive channel pairs of a pixel (128-byte
//      rows of y).
// Test: tests/gpu/stem_pool_test.cpp (ws_gpu_tests --gtest_filter='StemPool*': against a double-precision host reference
// of conv → round to fp16 → max pool, poisoned outputs, odd extents, Relu / Clip / none; the engine's fused stem against
// the CPU executor). Time: the lanes' per-layer profile (`warpstream bench --profile-layers`).
#include <cuda_fp16.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "kernels/conv/device_once.h"
#include "kernels/conv/stem_pool.h"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/pdl.cuh"

namespace ws::kernels {
namespace {

constexpr int kPH = 4, kPW = 7;       // pooled outputs per block (rows, columns)
constexpr int kCR = 2 * kPH + 1;      // conv rows per block (= warps)
constexpr int kCC = 16;               // conv columns per block (M of one mma)
constexpr int kIR = 2 * (kCR - 1) + 7;  // input rows per block
constexpr int kIC = 2 * (kCC - 1) + 7;  // input columns per block
constexpr int kThreads = kCR * 32;
constexpr int kKSteps = 13, kNTiles = 8, kTaps = 49;
constexpr int kWVec = static_cast<int>(kStemPoolPackedWeights) / 8;  // 16-byte vectors of packed weights
constexpr int kCStride = 72;          // halves per conv pixel in the shared conv tile (64 + 8: conflict-free half2 stores)
static_assert(kCR * kCC * kCStride * 2 <= kKSteps * kNTiles * 32 * 8, "the conv tile reuses the weights' shared memory");

__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap();  // code for an architecture without mma.sync f16: stem_pool_runnable refuses it before any launch
#endif
}

// Word offset in the input tile of tap (ky, kx) = (tap / 7, tap % 7) relative to the output pixel's window origin.
__device__ __forceinline__ int tap_offset(int tap) {
  const int ky = tap / 7, kx = tap - ky * 7;
  return (ky * kIC + kx) * 2;
}

__global__ void __launch_bounds__(kThreads)
    stem_pool_kernel(const __half* __restrict__ x, const uint4* __restrict__ wpk, const float* __restrict__ bias, Activation act,
                     ActivationParams ap, __half* __restrict__ y, int in_h, int in_w, int conv_h, int conv_w, int pool_h, int pool_w) {
  __shared__ __align__(16) uint32_t s_in[kIR * kIC * 2];
  __shared__ __align__(16) uint4 s_w[kWVec];  // the packed weights; then the conv tile (phase 4)
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int px0 = blockIdx.x * kPW, py0 = blockIdx.y * kPH;
  const int cx0 = 2 * px0 - 1, cy0 = 2 * py0 - 1;  // the tile's first conv column / row (may be -1)
  const int ix0 = 2 * cx0 - 3, iy0 = 2 * cy0 - 3;  // its first input column / row

  // 1. Weights: constant, so staged before the wait (overlapping the predecessor's tail).
  for (int i = tid; i < kWVec; i += kThreads) s_w[i] = __ldg(wpk + i);
  device::pdl_wait();

  // 2. Input tile, NCHW planes → per pixel (c0, c1), (c2, 0); zero outside the image (the conv's padding).
  {
    const unsigned short* xs = reinterpret_cast<const unsigned short*>(x);
    const size_t plane = size_t(in_h) * size_t(in_w);
    for (int p = tid; p < kIR * kIC; p += kThreads) {
      const int r = p / kIC, col = p - r * kIC;
      const int iy = iy0 + r, ix = ix0 + col;
      uint32_t w0 = 0, w1 = 0;
      if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
        const size_t o = size_t(iy) * size_t(in_w) + size_t(ix);
        w0 = uint32_t(xs[o]) | (uint32_t(xs[o + plane]) << 16);
        w1 = uint32_t(xs[o + 2 * plane]);
      }
      reinterpret_cast<uint2*>(s_in)[p] = make_uint2(w0, w1);
    }
  }
  __syncthreads();

  // 3. The warp's conv row: M rows = conv columns g and g + 8 of the tile; K = tap · 4 + channel.
  float acc[kNTiles][4];
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  const uint32_t* a_row0 = s_in + ((2 * warp) * kIC + 2 * g) * 2 + (t & 1);  // conv column g's window origin, word t & 1
  const uint32_t* a_row1 = a_row0 + 16 * 2;                                 // conv column g + 8: 16 input columns on
  const uint2* s_b = reinterpret_cast<const uint2*>(s_w);
#pragma unroll
  for (int s = 0; s < kKSteps; ++s) {
    const int tap_lo = 4 * s + (t >> 1), tap_hi = tap_lo + 2;  // k = 16s + 2t (+1) and 16s + 2t + 8 (+1)
    const bool lo_ok = tap_lo < kTaps, hi_ok = tap_hi < kTaps;
    const int o_lo = lo_ok ? tap_offset(tap_lo) : 0, o_hi = hi_ok ? tap_offset(tap_hi) : 0;
    const uint32_t a0 = lo_ok ? a_row0[o_lo] : 0u, a1 = lo_ok ? a_row1[o_lo] : 0u;
    const uint32_t a2 = hi_ok ? a_row0[o_hi] : 0u, a3 = hi_ok ? a_row1[o_hi] : 0u;
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
      const uint2 b = s_b[(s * kNTiles + n) * 32 + lane];
      mma_16816(acc[n], a0, a1, a2, a3, b.x, b.y);
    }
  }
  device::pdl_allow_dependents();

  // 4. Epilogue into the conv tile (over the weights), then the 3 × 3 max.
  __syncthreads();
  __half* s_c = reinterpret_cast<__half*>(s_w);
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {
    const int co = n * 8 + 2 * t;
    const float b0 = bias ? __ldg(bias + co) : 0.0f, b1 = bias ? __ldg(bias + co + 1) : 0.0f;
    const __half2 lo = __floats2half2_rn(device::activate(acc[n][0] + b0, act, ap), device::activate(acc[n][1] + b1, act, ap));
    const __half2 hi = __floats2half2_rn(device::activate(acc[n][2] + b0, act, ap), device::activate(acc[n][3] + b1, act, ap));
    *reinterpret_cast<__half2*>(s_c + (warp * kCC + g) * kCStride + co) = lo;
    *reinterpret_cast<__half2*>(s_c + (warp * kCC + g + 8) * kCStride + co) = hi;
  }
  __syncthreads();
  constexpr int kPairs = int(kStemPoolCout) / 2;
  for (int o = tid; o < kPH * kPW * kPairs; o += kThreads) {
    const int cp = o % kPairs, pix = o / kPairs;
    const int pyl = pix / kPW, pxl = pix - pyl * kPW;
    const int py = py0 + pyl, px = px0 + pxl;
    if (py >= pool_h || px >= pool_w) continue;
    __half2 m = __half2half2(__ushort_as_half(0xFC00u));  // -inf
#pragma unroll
    for (int dy = 0; dy < 3; ++dy) {
      const int cy = 2 * py - 1 + dy;
      if (cy < 0 || cy >= conv_h) continue;
#pragma unroll
      for (int dx = 0; dx < 3; ++dx) {
        const int cx = 2 * px - 1 + dx;
        if (cx < 0 || cx >= conv_w) continue;
        const int r = cy - cy0, j = cx - cx0;
        m = __hmax2_nan(m, *reinterpret_cast<const __half2*>(s_c + (r * kCC + j) * kCStride + 2 * cp));
      }
    }
    reinterpret_cast<__half2*>(y)[(size_t(py) * size_t(pool_w) + size_t(px)) * kPairs + cp] = m;
  }
}

}  // namespace

std::vector<float> stem_pool_pack_weights(const float* w) {
  std::vector<float> p(static_cast<size_t>(kStemPoolPackedWeights), 0.0f);
  // K index k = tap · 4 + channel (tap = ky · 7 + kx); zero for channel 3 and taps 49..51.
  auto weight = [&](int k, int co) -> float {
    const int tap = k / 4, ci = k % 4;
    if (tap >= kTaps || ci >= 3) return 0.0f;
    return w[((co * 3 + ci) * 7 + tap / 7) * 7 + tap % 7];
  };
  for (int s = 0; s < kKSteps; ++s)
    for (int n = 0; n < kNTiles; ++n)
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3, co = n * 8 + g;
        float* q = &p[static_cast<size_t>(((s * kNTiles + n) * 32 + lane) * 4)];
        q[0] = weight(16 * s + 2 * t, co);      // b0 (low half of register 0): k = 2t
        q[1] = weight(16 * s + 2 * t + 1, co);  // k = 2t + 1
        q[2] = weight(16 * s + 2 * t + 8, co);  // register 1: k = 2t + 8, 2t + 9
        q[3] = weight(16 * s + 2 * t + 9, co);
      }
  return p;
}

namespace {
// Once per device: the compute capability and the PTX version the kernel runs from (a build without sm_80+ code runs it
// from compute_75 PTX, where mma.sync f16 does not exist).
Result<const DeviceFacts*> stem_pool_facts() {
  static DeviceFacts facts[64];
  static std::mutex m;
  return device_facts(facts, m, "stem7x7_maxpool", [](int, DeviceFacts& f) -> Status {
    cudaFuncAttributes fa{};
    WS_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&fa, stem_pool_kernel));
    f.ptx = fa.ptxVersion;
    return Status::ok();
  });
}
}  // namespace

Result<bool> stem_pool_runnable() {
  WS_ASSIGN_OR_RETURN(const DeviceFacts* f, stem_pool_facts());
  return f->cc_major >= 8 && f->ptx >= 80;
}

Status stem7x7_maxpool(const void* x, const void* w_packed, const float* bias, Activation act, const ActivationParams& params, void* y,
                       int64_t in_h, int64_t in_w, bool pdl, cudaStream_t stream) {
  const char* who = "stem7x7_maxpool";
  if (in_h < kStemPoolMinExtent || in_w < kStemPoolMinExtent || in_h > kStemPoolMaxExtent || in_w > kStemPoolMaxExtent)
    return invalid_argument(std::string(who) + ": input extents " + std::to_string(in_h) + " x " + std::to_string(in_w) + " outside [" +
                            std::to_string(kStemPoolMinExtent) + ", " + std::to_string(kStemPoolMaxExtent) + "]");
  if (!x || !w_packed || !y) return invalid_argument(std::string(who) + ": null x, packed weights or y");
  if (reinterpret_cast<uintptr_t>(w_packed) % 16 != 0) return invalid_argument(std::string(who) + ": packed weights not 16-byte aligned");
  if (!stem_pool_activation_supported(act))
    return invalid_argument(std::string(who) + ": activation " + activation_name(act) + " is not fused here (none, Relu, Clip)");
  WS_ASSIGN_OR_RETURN(const DeviceFacts* f, stem_pool_facts());
  if (f->cc_major < 8) return unsupported(std::string(who) + ": needs compute capability 8.0 or newer (mma.sync f16)");
  if (f->ptx < 80)
    return unsupported(std::string(who) + ": this build runs the kernel from PTX for compute capability " + std::to_string(f->ptx / 10) + "." +
                       std::to_string(f->ptx % 10) + " (no mma.sync f16); rebuild with CMAKE_CUDA_ARCHITECTURES including this GPU's");
  const int conv_h = int(stem_pool_conv_extent(in_h)), conv_w = int(stem_pool_conv_extent(in_w));
  const int pool_h = int(stem_pool_out_extent(in_h)), pool_w = int(stem_pool_out_extent(in_w));
  const dim3 grid(unsigned((pool_w + kPW - 1) / kPW), unsigned((pool_h + kPH - 1) / kPH));
  const cudaError_t e = launch_kernel(pdl, stem_pool_kernel, grid, dim3(kThreads), 0, stream, static_cast<const __half*>(x),
                                      static_cast<const uint4*>(w_packed), bias, act, params, static_cast<__half*>(y), int(in_h), int(in_w),
                                      conv_h, conv_w, pool_h, pool_w);
  WS_CUDA_RETURN_IF_ERROR(e);
  return Status::ok();
}

}  // namespace ws::kernels
