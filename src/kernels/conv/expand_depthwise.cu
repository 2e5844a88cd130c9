// Fused expand 1×1 → depthwise pair of an MBConv block (kernels/conv/expand_depthwise.h): e only in shared memory.
// Thread mapping (256 threads = 8 warps; block (s, b, img) owns expanded channels [c0, c0 + 16), c0 = 16·s, and
// output rows [oy0, oy0 + rows) of image img):
//   prologue  (before pdl_wait: build-time constants and geometry only) every thread stages strided 16-byte rows of
//             W_e[c0..] and W_d[c0..] and the biases into shared memory, zeroes the padded e tile, and builds three
//             offset tables (staged pixel → e tile offset; depthwise unit → e tile offset of its tap (0, 0), and →
//             its first output's offset in the band and valid outputs) so that no loop below divides per element.
//   stage x   after pdl_wait: the band's input rows [r_lo, r_hi) of every input channel (contiguous in a channel
//             plane) into xs [C_in][P] (half2 loads when W is even), 16 loads in flight per thread, each thread on one
//             column of the band (pointer increments, no index arithmetic per element).
//   expand    warp w computes the 16×16 tiles w, w + 8, ... of E = W_e[c0..] · xs (wmma, fp32), then bias, act,
//             round to fp16 into the zero-padded e tile (the band's input rows, pads included).
//   depthwise thread t computes units i = t, t + 256, ... of the block's [16][rows·ceil(Wo / G)], a unit being G
//             consecutive outputs of one row (G = 1 or 4, a tactic: with 4 the taps' weight is loaded once per G
//             outputs and, at stride 1, neighbouring outputs share their input loads); consecutive threads on
//             consecutive units of one channel; taps over the padded tile without bounds checks (the tile is wide
//             enough for whole units). Each output sums its taps in the same fmaf order for every G: bit for bit.
// Test: ws_gpu_tests --gtest_filter='ConvKernels.ExpandDepthwise*'. Time: the engine's build timing (warpstream bench
// --verbose: the depthwise conv's tactic string "ws expand->depthwise fused").
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/conv/expand_depthwise.h"
#include "kernels/conv/device_once.h"
#include "kernels/conv/smem_tile.cuh"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/pdl.cuh"

namespace ws::kernels {
namespace {

using device::activate;
using device::pdl_allow_dependents;
using device::pdl_wait;

constexpr int kExThreads = 256, kExWarps = kExThreads / 32, kExChannels = 16;

int round16(int v) { return (v + 15) / 16 * 16; }
size_t align128(size_t v) { return (v + 127) / 128 * 128; }

// Extents and the shared-memory layout (byte offsets), computed once on the host.
struct ExDwArgs {
  int cin, h, w, ce, ho, wo, kh, kw, sh, sw, pt, pl;
  int rows;            // output rows per band
  int tile_h, tile_w;  // the padded e tile of one band: rows (rows − 1)·sh + kh, columns max((wg·g − 1)·sw + kw, pl + w)
  int cin_p, np;       // padded expand K; staged pixels of a band, padded to 16 (the expand GEMM's N)
  int g, wg;           // outputs per depthwise unit (1 or 4); units per output row: ceil(wo / g)
  int nu;              // depthwise units per channel of a full band: rows · wg
  int vec2;            // x staged as half2 (w even)
  // wes [16][cin_p] half, wds [16][kh·kw] float, be [16] float, bd [16] float, xs [cin_p][np] half,
  // es [16][tile_h·tile_w] half, stage [8][256] float, pix [np] int, qoff [nu] int (a unit's tap (0, 0) in the
  // e tile), qout [nu] int (its first output's offset in the band · 8 + its valid outputs)
  unsigned off_wes, off_wds, off_be, off_bd, off_xs, off_es, off_stage, off_pix, off_qoff, off_qout, total;
};

bool exdw_layout(const Conv2dGeometry& ex, const Conv2dGeometry& dw, int rows, int outputs, ExDwArgs& a) {
  a.cin = int(ex.c_in); a.h = int(ex.in_h); a.w = int(ex.in_w); a.ce = int(ex.c_out);
  a.ho = int(dw.out_h); a.wo = int(dw.out_w);
  a.kh = int(dw.kernel_h); a.kw = int(dw.kernel_w); a.sh = int(dw.stride_h); a.sw = int(dw.stride_w);
  a.pt = int(dw.pad_top); a.pl = int(dw.pad_left);
  a.rows = rows <= 0 || rows > a.ho ? a.ho : rows;
  a.g = outputs;
  a.wg = (a.wo + a.g - 1) / a.g;
  const int64_t tile_h = int64_t(a.rows - 1) * a.sh + a.kh;
  const int64_t tile_w = std::max<int64_t>((int64_t(a.wg) * a.g - 1) * a.sw + a.kw, int64_t(a.pl) + a.w);
  const int64_t staged = std::min<int64_t>(tile_h, a.h) * a.w;
  if (tile_h * tile_w >= (int64_t(1) << 24) || staged >= (int64_t(1) << 24)) return false;
  a.tile_h = int(tile_h); a.tile_w = int(tile_w);
  a.cin_p = round16(a.cin); a.np = round16(int(staged));
  a.nu = a.rows * a.wg;
  a.vec2 = a.w % 2 == 0;
  const int kk = a.kh * a.kw;
  size_t o = 0;
  a.off_wes = unsigned(o); o = align128(o + size_t(kExChannels) * a.cin_p * 2);
  a.off_wds = unsigned(o); o = align128(o + size_t(kExChannels) * kk * 4);
  a.off_be = unsigned(o); o = align128(o + kExChannels * 4);
  a.off_bd = unsigned(o); o = align128(o + kExChannels * 4);
  a.off_xs = unsigned(o); o = align128(o + size_t(a.cin_p) * a.np * 2);
  a.off_es = unsigned(o); o = align128(o + size_t(kExChannels) * a.tile_h * a.tile_w * 2);
  a.off_stage = unsigned(o); o = align128(o + size_t(kExWarps) * 256 * 4);
  a.off_pix = unsigned(o); o = align128(o + size_t(a.np) * 4);
  a.off_qoff = unsigned(o); o = align128(o + size_t(a.nu) * 4);
  a.off_qout = unsigned(o); o = align128(o + size_t(a.nu) * 4);
  a.total = unsigned(std::min<size_t>(o, size_t(1) << 31));
  return o < (size_t(1) << 31);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700  // wmma; the kernel body is compiled for sm_70+ only
// (k, j) += (dk, dj) over a [*][width] grid without a division per step (dj < width).
__device__ __forceinline__ void advance(int& k, int& j, int dk, int dj, int width) {
  j += dj;
  k += dk;
  if (j >= width) { j -= width; ++k; }
}

// xs[k][j·V ..] = x rows of the band, k < cin_p, j < width = np / V; zero past cin or past the band's `valid` units.
// U: one load of V halves (V = 2: unsigned, V = 1: unsigned short). Thread t < per·width (per = threads / width) owns
// column j = t % width of rows k = t / width, k + per, ...: pointer increments only, 16 loads in flight per thread.
// Wider bands (width > threads) walk the flattened [cin_p][width] grid instead.
template <typename U>
__device__ __forceinline__ void stage_band(U* __restrict__ xs, const U* __restrict__ src, int plane, int cin, int cin_p, int width, int valid,
                                           int tid) {
  constexpr int B = 16;
  const int per = kExThreads / width;
  if (per > 0) {
    if (tid >= per * width) return;
    const int j = tid % width;
    int k = tid / width;
    const bool in = j < valid;
    const size_t sstep = size_t(per) * plane;
    const int dstep = per * width;
    const U* s = src + size_t(k) * plane + j;
    U* d = xs + k * width + j;
    for (; k < cin_p; k += B * per, s += B * sstep, d += B * dstep) {
      U v[B];
#pragma unroll
      for (int b = 0; b < B; ++b) v[b] = in && k + b * per < cin ? s[b * sstep] : U(0);
#pragma unroll
      for (int b = 0; b < B; ++b)
        if (k + b * per < cin_p) d[b * dstep] = v[b];
    }
    return;
  }
  const int total = cin_p * width, dk = kExThreads / width, dj = kExThreads % width;
  int k = tid / width, j = tid % width;
  for (int base = 0; base < total; base += B * kExThreads) {
    U v[B];
    int at[B];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      at[b] = k < cin_p ? k * width + j : -1;
      v[b] = k < cin && j < valid ? src[size_t(k) * plane + j] : U(0);
      advance(k, j, dk, dj, width);
    }
#pragma unroll
    for (int b = 0; b < B; ++b)
      if (at[b] >= 0) xs[at[b]] = v[b];
  }
}
#endif

// The depthwise taps of one unit: acc[g] = sum over (ky, kx) of e[ky][g·sw + kx] · w[ky][kx], fmaf in ky-then-kx order
// from 0 for every g (the order of the 1-output form: the same bits). e points at the unit's tap (0, 0) in the padded
// tile. SW > 0: the stride at compile time, so that with unrolled extents the compiler loads each e value once for all
// the unit's outputs that read it (at stride 1, G + kw − 1 loads per row instead of G · kw).
template <int G, int SW>
__device__ __forceinline__ void depthwise_unit(const __half* e, const float* wk, int kh, int kw, int tile_w, int sw_rt, float (&acc)[G]) {
  const int sw = SW > 0 ? SW : sw_rt;
#pragma unroll
  for (int g = 0; g < G; ++g) acc[g] = 0.0f;
#pragma unroll
  for (int ky = 0; ky < kh; ++ky)
#pragma unroll
    for (int kx = 0; kx < kw; ++kx) {
      const float wv = wk[ky * kw + kx];
#pragma unroll
      for (int g = 0; g < G; ++g) acc[g] = fmaf(__half2float(e[ky * tile_w + g * sw + kx]), wv, acc[g]);
    }
}

template <int KH, int KW, int G>  // depthwise extents at compile time (3x3, 5x5; 0: runtime); G outputs per depthwise unit
__global__ void __launch_bounds__(kExThreads) expand_depthwise_kernel(const __half* __restrict__ x, const __half* __restrict__ w_e,
                                                                      const float* __restrict__ b_e, Activation act_e, ActivationParams p_e,
                                                                      const __half* __restrict__ w_d, const float* __restrict__ b_d,
                                                                      Activation act_d, ActivationParams p_d, __half* __restrict__ y, ExDwArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int c0 = blockIdx.x * kExChannels, img = blockIdx.z;
  const int oy0 = blockIdx.y * a.rows, out_rows = min(a.rows, a.ho - oy0), nu = out_rows * a.wg;
  const int iy_base = oy0 * a.sh - a.pt;                                        // input row of tile row 0
  const int r_lo = max(0, iy_base), r_hi = min(a.h, iy_base + a.tile_h);         // staged (in-image) rows
  const int n_px = max(0, r_hi - r_lo) * a.w;                                   // staged pixels
  const int kk = a.kh * a.kw, tile = a.tile_h * a.tile_w;
  __half* wes = reinterpret_cast<__half*>(smem + a.off_wes);
  float* wds = reinterpret_cast<float*>(smem + a.off_wds);
  float* be = reinterpret_cast<float*>(smem + a.off_be);
  float* bd = reinterpret_cast<float*>(smem + a.off_bd);
  __half* xs = reinterpret_cast<__half*>(smem + a.off_xs);
  __half* es = reinterpret_cast<__half*>(smem + a.off_es);
  float* stage = reinterpret_cast<float*>(smem + a.off_stage) + warp * 256;
  int* pix = reinterpret_cast<int*>(smem + a.off_pix);
  int* qoff = reinterpret_cast<int*>(smem + a.off_qoff);
  int* qout = reinterpret_cast<int*>(smem + a.off_qout);

  // ---- prologue: constants and geometry only (the previous kernel may still be running)
  {
    const int row8 = a.cin_p / 8;
    const bool vec = a.cin % 8 == 0 && (reinterpret_cast<uintptr_t>(w_e) & 15) == 0;
    for (int i = tid; i < kExChannels * row8; i += kExThreads) {
      const int c = i / row8, k = (i % row8) * 8, gc = c0 + c;
      *reinterpret_cast<uint4*>(wes + c * a.cin_p + k) =
          gc < a.ce ? device::load8_or_zero(w_e + size_t(gc) * a.cin, k, a.cin, vec) : make_uint4(0, 0, 0, 0);
    }
    for (int i = tid; i < kExChannels * kk; i += kExThreads) {
      const int gc = c0 + i / kk;
      wds[i] = gc < a.ce ? __half2float(w_d[size_t(gc) * kk + i % kk]) : 0.0f;
    }
    if (tid < kExChannels) {
      const int gc = c0 + tid;
      be[tid] = gc < a.ce && b_e ? b_e[gc] : 0.0f;
      bd[tid] = gc < a.ce && b_d ? b_d[gc] : 0.0f;
    }
    unsigned* ew = reinterpret_cast<unsigned*>(es);  // tile·16 halves: an even count
    for (int i = tid; i < kExChannels * tile / 2; i += kExThreads) ew[i] = 0u;
    const int row0 = (r_lo - iy_base) * a.tile_w + a.pl;  // e tile offset of staged pixel 0
    for (int p = tid; p < a.np; p += kExThreads) pix[p] = row0 + (p / a.w) * a.tile_w + p % a.w;
    for (int u = tid; u < nu; u += kExThreads) {
      const int oy = u / a.wg, ox0 = (u % a.wg) * G;
      qoff[u] = oy * a.sh * a.tile_w + ox0 * a.sw;
      qout[u] = (oy * a.wo + ox0) * 8 + min(G, a.wo - ox0);
    }
  }
  pdl_wait();  // x is the previous kernel's output

  // ---- stage the band's input rows
  const size_t plane = size_t(a.h) * a.w;
  const __half* xb = x + size_t(img) * a.cin * plane + size_t(r_lo) * a.w;
  if (a.vec2)
    stage_band(reinterpret_cast<unsigned*>(xs), reinterpret_cast<const unsigned*>(xb), int(plane / 2), a.cin, a.cin_p, a.np / 2, n_px / 2, tid);
  else
    stage_band(reinterpret_cast<unsigned short*>(xs), reinterpret_cast<const unsigned short*>(xb), int(plane), a.cin, a.cin_p, a.np, n_px, tid);
  __syncthreads();

  // ---- expand into the padded e tile
  for (int tn = warp; tn * 16 < n_px; tn += kExWarps) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    device::smem_tile_mma(acc, wes, a.cin_p, xs + tn * 16, a.np, a.cin_p);
    wmma::store_matrix_sync(stage, acc, 16, wmma::mem_row_major);
    __syncwarp();
    const int col = lane % 16, p = tn * 16 + col;
    if (p < n_px) {
      const int at = pix[p];
#pragma unroll
      for (int r = lane / 16; r < kExChannels; r += 2) {
        const float v = c0 + r < a.ce ? activate(stage[r * 16 + col] + be[r], act_e, p_e) : 0.0f;
        es[r * tile + at] = __float2half_rn(v);
      }
    }
    __syncwarp();
  }
  __syncthreads();

  // ---- depthwise over the padded tile; block output [16][out_rows·wo] is contiguous per channel in d
  {
    constexpr bool fixed = KH > 0 && KW > 0;
    const int kh = fixed ? KH : a.kh, kw = fixed ? KW : a.kw;
    const int total = kExChannels * nu, dc = kExThreads / max(nu, 1), du = kExThreads % max(nu, 1);
    int c = nu > 0 ? tid / nu : kExChannels, u = nu > 0 ? tid % nu : 0;
    __half* yb = y + (size_t(img) * a.ce + c0) * size_t(a.ho) * a.wo + size_t(oy0) * a.wo;
    for (int i = tid; i < total; i += kExThreads) {
      if (c0 + c < a.ce) {
        const __half* e = es + c * tile + qoff[u];
        const float* wk = wds + c * kk;
        float acc[G];
        if (G > 1 && a.sw == 1) depthwise_unit<G, 1>(e, wk, kh, kw, a.tile_w, 1, acc);  // stride 1: shared input loads
        else depthwise_unit<G, 0>(e, wk, kh, kw, a.tile_w, a.sw, acc);
        const int qo = qout[u], q0 = qo >> 3, valid = qo & 7;
        const float bias = bd[c];
        __half* yc = yb + size_t(c) * a.ho * a.wo + q0;
#pragma unroll
        for (int g = 0; g < G; ++g)
          if (g < valid) yc[g] = __float2half_rn(activate(acc[g] + bias, act_d, p_d));
      }
      advance(c, u, dc, du, nu);
    }
  }
  pdl_allow_dependents();
#else
  __trap();  // wmma needs sm_70; the engine offers this kernel only there
#endif
}

}  // namespace

std::string conv2d_expand_depthwise_mismatch(const Conv2dGeometry& ex, const Conv2dGeometry& dw) {
  if (!validate_conv2d(ex).is_ok() || !validate_conv2d(dw).is_ok()) return "inconsistent geometry";
  if (ex.kernel_h != 1 || ex.kernel_w != 1 || ex.stride_h != 1 || ex.stride_w != 1 || ex.group != 1 || ex.pad_top != 0 || ex.pad_left != 0 ||
      ex.pad_bottom != 0 || ex.pad_right != 0 || ex.dilation_h != 1 || ex.dilation_w != 1)
    return "expand conv is not 1x1 / stride 1 / no pads / group 1";
  if (dw.group != dw.c_in || dw.c_in != dw.c_out || dw.dilation_h != 1 || dw.dilation_w != 1) return "second conv is not depthwise (dilation 1)";
  if (ex.n != dw.n) return "batch differs";
  if (ex.c_out != dw.c_in) return "channels do not chain";
  if (ex.out_h != dw.in_h || ex.out_w != dw.in_w) return "extents do not chain";
  for (int64_t v : {ex.c_in, ex.c_out, ex.in_h, ex.in_w, dw.out_h, dw.out_w, dw.kernel_h, dw.kernel_w, dw.stride_h, dw.stride_w, dw.pad_top,
                    dw.pad_left})
    if (v >= (int64_t(1) << 15)) return "an extent is 2^15 or more";
  if (ex.n > 65535) return "batch above 65535";
  return {};
}

bool conv2d_expand_depthwise_outputs_ok(int outputs) {
  for (int g : kExpandDepthwiseOutputs)
    if (outputs == g) return true;
  return false;
}

size_t conv2d_expand_depthwise_smem_bytes(const Conv2dGeometry& ex, const Conv2dGeometry& dw, int rows, int outputs) {
  if (rows < 0 || !conv2d_expand_depthwise_outputs_ok(outputs) || !conv2d_expand_depthwise_mismatch(ex, dw).empty()) return 0;
  ExDwArgs a{};
  return exdw_layout(ex, dw, rows, outputs, a) ? a.total : 0;
}

Status conv2d_expand_depthwise(const Conv2dGeometry& ex, const Conv2dGeometry& dw, int rows, int outputs, const void* x, const void* w_e,
                               const ConvEpilogue& e_epi, const void* w_d, void* d, const ConvEpilogue& d_epi, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(refuse_input_rows(e_epi, "conv2d_expand_depthwise"));
  WS_RETURN_IF_ERROR(refuse_input_rows(d_epi, "conv2d_expand_depthwise"));
  if (const std::string why = conv2d_expand_depthwise_mismatch(ex, dw); !why.empty())
    return invalid_argument("conv2d_expand_depthwise: not one expand -> depthwise pair the kernel covers: " + why);
  if (rows < 0) return invalid_argument("conv2d_expand_depthwise: rows per band " + std::to_string(rows) + " (0 = whole map, or positive)");
  if (!conv2d_expand_depthwise_outputs_ok(outputs))
    return invalid_argument("conv2d_expand_depthwise: " + std::to_string(outputs) + " outputs per depthwise unit (1 or 4)");
  if (!x || !w_e || !w_d || !d) return invalid_argument("conv2d_expand_depthwise: null tensor pointer");
  if (e_epi.residual || d_epi.residual) return invalid_argument("conv2d_expand_depthwise: neither conv may carry a residual");
  ExDwArgs a{};
  if (!exdw_layout(ex, dw, rows, outputs, a)) return invalid_argument("conv2d_expand_depthwise: shared memory layout overflows");
  a.vec2 = a.vec2 && (reinterpret_cast<uintptr_t>(x) & 3) == 0;  // half2 loads need a 4-byte aligned x
  // Once per device: the opt-in shared-memory maximum, set on the six kernels, and the PTX version they run from.
  static DeviceFacts facts[64];
  static std::mutex facts_mu;
  WS_ASSIGN_OR_RETURN(const DeviceFacts* f, device_facts(facts, facts_mu, "conv2d_expand_depthwise", [](int dev, DeviceFacts& ds) -> Status {
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&ds.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    cudaFuncAttributes fa{};
    WS_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&fa, expand_depthwise_kernel<3, 3, 1>));
    ds.ptx = fa.ptxVersion;
    for (auto k : {expand_depthwise_kernel<3, 3, 1>, expand_depthwise_kernel<5, 5, 1>, expand_depthwise_kernel<0, 0, 1>, expand_depthwise_kernel<3, 3, 4>,
                   expand_depthwise_kernel<5, 5, 4>, expand_depthwise_kernel<0, 0, 4>})
      WS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, ds.optin));
    return Status::ok();
  }));
  const DeviceFacts& ds = *f;
  WS_RETURN_IF_ERROR(require_wmma_ptx("conv2d_expand_depthwise", ds.ptx));
  if (a.total > unsigned(ds.optin))
    return invalid_argument("conv2d_expand_depthwise: needs " + std::to_string(a.total) + " bytes of shared memory per block, the device allows " +
                            std::to_string(ds.optin) + " (rows per band " + std::to_string(a.rows) + ", outputs per unit " + std::to_string(outputs) + ")");
  const bool k3 = a.kh == 3 && a.kw == 3, k5 = a.kh == 5 && a.kw == 5;
  auto kernel = outputs == 4 ? (k3 ? expand_depthwise_kernel<3, 3, 4> : k5 ? expand_depthwise_kernel<5, 5, 4> : expand_depthwise_kernel<0, 0, 4>)
                             : (k3 ? expand_depthwise_kernel<3, 3, 1> : k5 ? expand_depthwise_kernel<5, 5, 1> : expand_depthwise_kernel<0, 0, 1>);
  const dim3 grid(unsigned((a.ce + kExChannels - 1) / kExChannels), unsigned((a.ho + a.rows - 1) / a.rows), unsigned(ex.n));
  if (grid.y > 65535) return invalid_argument("conv2d_expand_depthwise: more than 65535 row bands");
  WS_CUDA_RETURN_IF_ERROR(launch_kernel(d_epi.pdl, kernel, grid, dim3(kExThreads), a.total, stream, static_cast<const __half*>(x),
                                        static_cast<const __half*>(w_e), e_epi.bias, e_epi.act, e_epi.params, static_cast<const __half*>(w_d),
                                        d_epi.bias, d_epi.act, d_epi.params, static_cast<__half*>(d), a));
  return Status::ok();
}

}  // namespace ws::kernels
