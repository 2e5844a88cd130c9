// Fused MBConv block (kernels/conv/mbconv.h): expand 1×1 → depthwise → project 1×1 in one kernel, one thread-block
// cluster of G blocks per image, e and d only in shared memory, the projection's partial sums reduced through
// distributed shared memory.
// Thread mapping (256 threads = 8 warps per block; block r of the cluster owns expanded channels [c0, c0 + Cm)):
//   stage    every thread loads strided elements of x (all C_in channels), W_e rows c0.., W_p columns c0.., W_d rows
//            c0.. into shared memory (16-byte loads where rows allow), zero-padded to 16-multiples.
//   expand   warp w computes 16×16 output tiles w, w + 8, ... of E = W_e[c0..] · X (wmma, fp32 accumulate), its
//            epilogue (bias, act, round to fp16) through a per-warp 16×16 fp32 staging tile into e.
//   dw       thread t computes outputs i = t, t + 256, ... of d (channel-major: a warp covers consecutive pixels of one
//            channel), taps as the depthwise kernel sums them (fmaf over ky, then kx), then bias, act, fp16.
//   project  warp w computes 16×16 tiles of P_r = W_p[:, c0..] · d (wmma), stored fp32 in this block's shared memory.
//   reduce   after cluster.sync(): block r thread t sums outputs i = r·256 + t, stepping G·256, over the G blocks'
//            P (rank order), + bias + residual, act, fp16 store; a second cluster.sync() keeps every P alive until
//            all remote reads are done.
// Test: ws_gpu_tests --gtest_filter='ConvKernels.MbConv*'. Time: the engine's build timing (warpstream bench
// --verbose tactic strings, "ws MBConv fused").
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <atomic>
#include <type_traits>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/conv/mbconv.h"
#include "kernels/conv/smem_tile.cuh"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/pdl.cuh"

namespace ws::kernels {
namespace {

namespace cg = cooperative_groups;
using device::activate;
using device::pdl_allow_dependents;
using device::pdl_wait;

constexpr int kMbThreads = 256, kMbWarps = kMbThreads / 32;

int round16(int v) { return (v + 15) / 16 * 16; }
size_t align128(size_t v) { return (v + 127) / 128 * 128; }

// Extents and the shared-memory layout (byte offsets), computed once on the host.
struct MbArgs {
  int cin, h, w, n_px;         // x: [cin][h][w], n_px = h·w
  int ce, cout, ho, wo, no_px;  // e: [ce][h][w]; y: [cout][ho][wo]
  int kh, kw, sh, sw, pt, pl;
  int cm, cin_p, np, nop, cout_p;  // padded extents (16-multiples); cm: channels per block
  // region A: xs [cin_p][np] half, wes [cm][cin_p] half, es [cm][n_px] half, stage [8][16·16] float
  // region B: ds [cm][nop] half, wps [cout_p][cm] half, wds [cm][kh·kw] float
  // ps [cout_p][nop] float: over region A when it fits there, else after region B
  unsigned off_xs, off_wes, off_es, off_stage, off_ds, off_wps, off_wds, off_ps, total;
};

bool mb_layout(const Conv2dGeometry& ex, const Conv2dGeometry& dw, const Conv2dGeometry& pj, int cluster, MbArgs& a) {
  a.cin = int(ex.c_in); a.h = int(ex.in_h); a.w = int(ex.in_w); a.n_px = a.h * a.w;
  a.ce = int(ex.c_out); a.cout = int(pj.c_out); a.ho = int(dw.out_h); a.wo = int(dw.out_w); a.no_px = a.ho * a.wo;
  a.kh = int(dw.kernel_h); a.kw = int(dw.kernel_w); a.sh = int(dw.stride_h); a.sw = int(dw.stride_w);
  a.pt = int(dw.pad_top); a.pl = int(dw.pad_left);
  const int tiles = (a.ce + 15) / 16;
  a.cm = 16 * ((tiles + cluster - 1) / cluster);
  a.cin_p = round16(a.cin); a.np = round16(a.n_px); a.nop = round16(a.no_px); a.cout_p = round16(a.cout);
  size_t o = 0;
  a.off_xs = unsigned(o); o = align128(o + size_t(a.cin_p) * a.np * 2);
  a.off_wes = unsigned(o); o = align128(o + size_t(a.cm) * a.cin_p * 2);
  a.off_es = unsigned(o); o = align128(o + size_t(a.cm) * a.n_px * 2);
  a.off_stage = unsigned(o); o = align128(o + size_t(kMbWarps) * 256 * 4);
  const size_t region_a = o;
  a.off_ds = unsigned(o); o = align128(o + size_t(a.cm) * a.nop * 2);
  a.off_wps = unsigned(o); o = align128(o + size_t(a.cout_p) * a.cm * 2);
  a.off_wds = unsigned(o); o = align128(o + size_t(a.cm) * a.kh * a.kw * 4);
  const size_t ps = size_t(a.cout_p) * a.nop * 4;
  if (ps <= region_a) {
    a.off_ps = 0;
  } else {
    a.off_ps = unsigned(o);
    o = align128(o + ps);
  }
  a.total = unsigned(o);
  return o < (size_t(1) << 31);
}

// for i in [0, count) owned by thread `tid` (i = tid, tid + 256, ...): B values loaded (load(i), independent of each
// other) before any is stored (store(i, v)), so each thread has B loads in flight at once.
template <int B, typename Load, typename Store>
__device__ __forceinline__ void staged_copy(int count, int tid, Load load, Store store) {
  using V = decltype(load(0));
  for (int base = 0; base < count; base += B * kMbThreads) {
    V v[B];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int i = base + b * kMbThreads + tid;
      if (i < count) v[b] = load(i);
    }
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int i = base + b * kMbThreads + tid;
      if (i < count) store(i, v[b]);
    }
  }
}


template <int KH, int KW, int G>  // depthwise kernel extents at compile time (3x3, 5x5; 0: from MbArgs), cluster size
__global__ void __launch_bounds__(kMbThreads) mbconv_cluster_kernel(
    const __half* __restrict__ x, const __half* __restrict__ w_e, const float* __restrict__ b_e, Activation act_e,
    ActivationParams p_e, const __half* __restrict__ w_d, const float* __restrict__ b_d, Activation act_d, ActivationParams p_d,
    const __half* __restrict__ w_p, const float* __restrict__ b_p, const __half* __restrict__ res, Activation act_p,
    ActivationParams p_p, __half* __restrict__ y, MbArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = int(cluster.block_rank());
  const int img = blockIdx.y, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int c0 = rank * a.cm;
  __half* xs = reinterpret_cast<__half*>(smem + a.off_xs);
  __half* wes = reinterpret_cast<__half*>(smem + a.off_wes);
  __half* es = reinterpret_cast<__half*>(smem + a.off_es);
  float* stage = reinterpret_cast<float*>(smem + a.off_stage) + warp * 256;
  __half* ds = reinterpret_cast<__half*>(smem + a.off_ds);
  __half* wps = reinterpret_cast<__half*>(smem + a.off_wps);
  float* wds = reinterpret_cast<float*>(smem + a.off_wds);
  float* ps = reinterpret_cast<float*>(smem + a.off_ps);
  const int kk = a.kh * a.kw;
  const __half zero = __float2half_rn(0.0f);
  x += size_t(img) * a.cin * a.n_px;

  // ---- stage: each loop issues B independent loads per thread before its first shared-memory store (one L2 / HBM
  // round trip per B·256 elements instead of one per element)
  {
    const bool vec_e = a.cin % 8 == 0 && (reinterpret_cast<uintptr_t>(w_e) & 15) == 0;
    const int row8 = a.cin_p / 8;
    staged_copy<8>(a.cm * row8, tid, [&](int i) {  // wes[c][k8·8 ..]: W_e[c0 + c][k8·8 ..]
      const int gc = c0 + i / row8;
      return gc < a.ce ? device::load8_or_zero(w_e + size_t(gc) * a.cin, (i % row8) * 8, a.cin, vec_e) : make_uint4(0, 0, 0, 0);
    }, [&](int i, const uint4& v) { *reinterpret_cast<uint4*>(wes + (i / row8) * a.cin_p + (i % row8) * 8) = v; });
    const bool vec_p = a.ce % 8 == 0 && (reinterpret_cast<uintptr_t>(w_p) & 15) == 0;
    const int col8 = a.cm / 8;
    staged_copy<8>(a.cout_p * col8, tid, [&](int i) {  // wps[m][c8·8 ..]: W_p[m][c0 + c8·8 ..]
      const int m = i / col8;
      return m < a.cout ? device::load8_or_zero(w_p + size_t(m) * a.ce, c0 + (i % col8) * 8, a.ce, vec_p) : make_uint4(0, 0, 0, 0);
    }, [&](int i, const uint4& v) { *reinterpret_cast<uint4*>(wps + (i / col8) * a.cm + (i % col8) * 8) = v; });
    staged_copy<16>(a.cm * kk, tid, [&](int i) {
      const int gc = c0 + i / kk;
      return gc < a.ce ? __half2float(w_d[size_t(gc) * kk + i % kk]) : 0.0f;
    }, [&](int i, float v) { wds[i] = v; });
    // The weights above are build-time constants no kernel writes, so they are read before pdl_wait (overlapping the
    // previous kernel's tail); x is the previous kernel's output: after it.
    pdl_wait();
    staged_copy<16>(a.cin_p * a.np, tid, [&](int i) {
      const int k = i / a.np, p = i % a.np;
      return k < a.cin && p < a.n_px ? x[size_t(k) * a.n_px + p] : zero;
    }, [&](int i, __half v) { xs[i] = v; });
  }
  __syncthreads();

  // ---- expand: es[c][p] = half(act_e(sum_k wes[c][k] · xs[k][p] + b_e[c0 + c])), rows past C_e are 0
  {
    const int tm_n = a.cm / 16, tn_n = a.np / 16;
    for (int t = warp; t < tm_n * tn_n; t += kMbWarps) {
      const int tm = t / tn_n, tn = t % tn_n;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      device::smem_tile_mma(acc, wes + tm * 16 * a.cin_p, a.cin_p, xs + tn * 16, a.np, a.cin_p);
      wmma::store_matrix_sync(stage, acc, 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int c = tm * 16 + e / 16, p = tn * 16 + e % 16, gc = c0 + c;
        if (p >= a.n_px) continue;
        float v = 0.0f;
        if (gc < a.ce) v = activate(stage[e] + (b_e ? b_e[gc] : 0.0f), act_e, p_e);
        es[c * a.n_px + p] = __float2half_rn(v);
      }
      __syncwarp();
    }
  }
  __syncthreads();

  // ---- depthwise: ds[c][q] = half(act_d(sum taps + b_d[c0 + c])), 0 for q >= Ho·Wo and rows past C_e
  for (int i = tid; i < a.cm * a.nop; i += kMbThreads) {
    const int c = i / a.nop, q = i % a.nop, gc = c0 + c;
    float v = 0.0f;
    if (q < a.no_px && gc < a.ce) {
      const int oy = q / a.wo, ox = q % a.wo, iy0 = oy * a.sh - a.pt, ix0 = ox * a.sw - a.pl;
      const __half* ep = es + c * a.n_px;
      const float* wp = wds + c * kk;
      constexpr bool fixed = KH > 0 && KW > 0;
      const int kh = fixed ? KH : a.kh, kw = fixed ? KW : a.kw;
      float acc = 0.0f;
#pragma unroll
      for (int ky = 0; ky < kh; ++ky) {  // kh, kw: constants when fixed (unrolled)
        const int iy = iy0 + ky;
        if (static_cast<unsigned>(iy) >= static_cast<unsigned>(a.h)) continue;
#pragma unroll
        for (int kx = 0; kx < kw; ++kx) {
          const int ix = ix0 + kx;
          if (static_cast<unsigned>(ix) < static_cast<unsigned>(a.w)) acc = fmaf(__half2float(ep[iy * a.w + ix]), wp[ky * kw + kx], acc);
        }
      }
      if (b_d) acc += b_d[gc];
      v = activate(acc, act_d, p_d);
    }
    ds[i] = __float2half_rn(v);
  }
  __syncthreads();

  // ---- project: ps[m][q] = sum_{c < cm} wps[m][c] · ds[c][q] (this block's partial; ps may overlay region A)
  {
    const int tm_n = a.cout_p / 16, tn_n = a.nop / 16;
    for (int t = warp; t < tm_n * tn_n; t += kMbWarps) {
      const int tm = t / tn_n, tn = t % tn_n;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      device::smem_tile_mma(acc, wps + tm * 16 * a.cm, a.cm, ds + tn * 16, a.nop, a.cm);
      wmma::store_matrix_sync(ps + tm * 16 * a.nop + tn * 16, acc, a.nop, wmma::mem_row_major);
    }
  }
  pdl_allow_dependents();  // main work done (the next kernel waits for this whole grid in its pdl_wait)
  cluster.sync();          // every block's partial is in its shared memory

  // ---- reduce over the cluster (rank order), epilogue, store
  const int total = a.cout * a.no_px;
  y += size_t(img) * total;
  if (res) res += size_t(img) * total;
  for (int i = rank * kMbThreads + tid; i < total; i += G * kMbThreads) {
    const int m = i / a.no_px, q = i % a.no_px, off = m * a.nop + q;
    float v[G];
#pragma unroll
    for (int r = 0; r < G; ++r) v[r] = cluster.map_shared_rank(ps, r)[off];  // G remote loads in flight
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < G; ++r) s += v[r];  // rank order: deterministic
    if (b_p) s += b_p[m];
    if (res) s += __half2float(res[i]);
    y[i] = __float2half_rn(activate(s, act_p, p_p));
  }
  cluster.sync();  // no block leaves while another may still read its partial
#else
  __trap();  // clusters need sm_90; the engine offers this kernel only there
#endif
}

}  // namespace

std::string conv2d_mbconv_mismatch(const Conv2dGeometry& ex, const Conv2dGeometry& dw, const Conv2dGeometry& pj) {
  for (const Conv2dGeometry* g : {&ex, &dw, &pj})
    if (!validate_conv2d(*g).is_ok()) return "inconsistent geometry";
  auto pointwise = [](const Conv2dGeometry& g) {
    return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.group == 1 && g.pad_top == 0 &&
           g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0 && g.dilation_h == 1 && g.dilation_w == 1;
  };
  if (!pointwise(ex)) return "expand conv is not 1x1 / stride 1 / no pads / group 1";
  if (!pointwise(pj)) return "project conv is not 1x1 / stride 1 / no pads / group 1";
  if (dw.group != dw.c_in || dw.c_in != dw.c_out || dw.dilation_h != 1 || dw.dilation_w != 1) return "middle conv is not depthwise (dilation 1)";
  if (ex.n != dw.n || dw.n != pj.n) return "batch differs";
  if (ex.c_out != dw.c_in || dw.c_out != pj.c_in) return "channels do not chain";
  if (ex.out_h != dw.in_h || ex.out_w != dw.in_w || dw.out_h != pj.in_h || dw.out_w != pj.in_w) return "extents do not chain";
  for (int64_t v : {ex.c_in, ex.c_out, pj.c_out, ex.in_h * ex.in_w, dw.out_h * dw.out_w, dw.kernel_h * dw.kernel_w})
    if (v >= (int64_t(1) << 15)) return "an extent is 2^15 or more";
  if (ex.n > 65535) return "batch above 65535";
  return {};
}

size_t conv2d_mbconv_smem_bytes(const Conv2dGeometry& ex, const Conv2dGeometry& dw, const Conv2dGeometry& pj, int cluster) {
  if (!conv2d_mbconv_mismatch(ex, dw, pj).empty() || cluster < 1) return 0;
  MbArgs a{};
  return mb_layout(ex, dw, pj, cluster, a) ? a.total : 0;
}

Status conv2d_mbconv(const Conv2dGeometry& ex, const Conv2dGeometry& dw, const Conv2dGeometry& pj, int cluster, const void* x,
                     const void* w_e, const ConvEpilogue& e_epi, const void* w_d, const ConvEpilogue& d_epi, const void* w_p,
                     void* y, const ConvEpilogue& p_epi, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(refuse_input_rows(e_epi, "conv2d_mbconv"));
  WS_RETURN_IF_ERROR(refuse_input_rows(d_epi, "conv2d_mbconv"));
  WS_RETURN_IF_ERROR(refuse_input_rows(p_epi, "conv2d_mbconv"));
  if (const std::string why = conv2d_mbconv_mismatch(ex, dw, pj); !why.empty())
    return invalid_argument("conv2d_mbconv: not one MBConv block the kernel covers: " + why);
  bool size_ok = false;
  for (int g : kMbConvClusterSizes) size_ok = size_ok || g == cluster;
  if (!size_ok) return invalid_argument("conv2d_mbconv: cluster size " + std::to_string(cluster) + " (8 or 16)");
  if (!x || !w_e || !w_d || !w_p || !y) return invalid_argument("conv2d_mbconv: null tensor pointer");
  if (e_epi.residual || d_epi.residual) return invalid_argument("conv2d_mbconv: only the projection takes a residual");
  MbArgs a{};
  if (!mb_layout(ex, dw, pj, cluster, a)) return invalid_argument("conv2d_mbconv: shared memory layout overflows");
  int dev = 0, optin = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (a.total > unsigned(optin))
    return invalid_argument("conv2d_mbconv: needs " + std::to_string(a.total) + " bytes of shared memory per block, the device allows " +
                            std::to_string(optin) + " (cluster " + std::to_string(cluster) + ")");
  // The kernel's attributes, once per device (the opt-in maximum and non-portable clusters), so that launches under
  // stream capture make no attribute calls.
  static std::atomic<bool> configured[64];
  if (dev < 0 || dev >= 64) return invalid_argument("conv2d_mbconv: device ordinal " + std::to_string(dev) + " above 63");
  auto pick = [&](auto g) {
    constexpr int Gc = decltype(g)::value;
    return a.kh == 3 && a.kw == 3 ? mbconv_cluster_kernel<3, 3, Gc> : a.kh == 5 && a.kw == 5 ? mbconv_cluster_kernel<5, 5, Gc> : mbconv_cluster_kernel<0, 0, Gc>;
  };
  auto kernel = cluster == 8 ? pick(std::integral_constant<int, 8>{}) : pick(std::integral_constant<int, 16>{});
  if (!configured[dev].load(std::memory_order_acquire)) {
    for (auto k : {mbconv_cluster_kernel<3, 3, 8>, mbconv_cluster_kernel<5, 5, 8>, mbconv_cluster_kernel<0, 0, 8>, mbconv_cluster_kernel<3, 3, 16>,
                   mbconv_cluster_kernel<5, 5, 16>, mbconv_cluster_kernel<0, 0, 16>}) {
      WS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
      WS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
    configured[dev].store(true, std::memory_order_release);
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(cluster), unsigned(ex.n), 1);
  cfg.blockDim = dim3(kMbThreads, 1, 1);
  cfg.dynamicSmemBytes = a.total;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2] = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = p_epi.pdl ? 2 : 1;
  WS_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(
      &cfg, kernel, static_cast<const __half*>(x), static_cast<const __half*>(w_e), e_epi.bias, e_epi.act,
      e_epi.params, static_cast<const __half*>(w_d), d_epi.bias, d_epi.act, d_epi.params, static_cast<const __half*>(w_p),
      p_epi.bias, static_cast<const __half*>(p_epi.residual), p_epi.act, p_epi.params, static_cast<__half*>(y), a));
  return Status::ok();
}

}  // namespace ws::kernels
