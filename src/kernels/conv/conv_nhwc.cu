// Channels-last fp16 implicit-GEMM convolution for batch-1 latency on Hopper: split-K across the CTAs of a thread-block
// cluster, reduced through distributed shared memory (see conv_nhwc.h for the math, layouts and errors).
// GEMM view: C[P × c_out] = A[P × R] · B[R × c_out], P = n·out_h·out_w pixels, R = kh·kw·c_in; A is gathered from x
// (row p, columns (tap, channel): one tap's 64 consecutive channels are 128 contiguous bytes of x), B is w read as
// [c_out][R] rows (KRSC: k·R + tap·c_in + c), so both operand tiles load as 16-byte cp.async vectors.
// Thread mapping: grid (ceil(P / 64), ceil(c_out / BN), SPLITS), cluster (1, 1, SPLITS): the SPLITS CTAs of a cluster
// share one 64-pixel × BN-channel output tile and each sums a contiguous range of 64-deep K tiles. 256 threads = 8 warps
// in a 4 × 2 grid, each warp 16 pixels × BN/2 channels (BN/16 mma.sync m16n8k16 fp32 accumulator tiles, operands by
// ldmatrix.x4 from shared rows padded to 144 bytes). The A gather's tap and channel are a cursor advanced per tile.
// Mainloop: a kStages-deep (4) cp.async ring (zero-fill for padding and tile edges). The CTA's weight tiles of the first
// kStages − 1 stages are issued, and the rest of its weight slice prefetched into L2, *before* the PDL wait: weights are
// build-time constants, so their latency overlaps the predecessor kernel's tail; activations are read only after it.
// Epilogue: each CTA stores its fp32 partial tile to its own shared memory (aliasing the ring); after a cluster barrier,
// CTA `rank` reduces every SPLITS-th float4 of the tile over the cluster's partials in rank order 0, 1, ... (the same
// bits whatever the scheduling), adds bias and residual, applies the activation and stores 4 fp16 channels; a second
// cluster barrier keeps every CTA's shared memory alive until the others have read it. No workspace, no counters.
// Test: tests/gpu/conv_nhwc_test.cpp (ws_gpu_tests --gtest_filter='ConvNhwc*': against the CPU reference, every form).
// The kernel itself is in conv_nhwc_kernel.cuh (shared with the lab, experiments/conv_igemm_01_decompose.cu).
// Time: the disabled timing test in the same file (--gtest_also_run_disabled_tests --gtest_filter='ConvNhwc.DISABLED_*'),
// each form beside cuDNN's fused call on ResNet-50's convs; in the engine, the conv tactic timing (bench --nhwc-igemm).
#include <cuda_fp16.h>

#include <mutex>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/conv/conv_nhwc.h"
#include "kernels/conv/conv_nhwc_kernel.cuh"
#include "kernels/conv/device_once.h"
#include "kernels/pdl.cuh"

namespace ws::kernels {
namespace {

using nhwc_igemm_detail::BM;
using nhwc_igemm_detail::IgemmArgs;
using nhwc_igemm_detail::kSmemBytes;
using nhwc_igemm_detail::kThreads;
using nhwc_igemm_detail::nhwc_igemm_cluster_kernel;
using nhwc_igemm_detail::BK;

using KernelFn = void (*)(const __half*, const __half*, __half*, IgemmArgs);

template <int BN>
KernelFn pick_splits(int splits) {
  switch (splits) {
    case 1: return nhwc_igemm_cluster_kernel<BN, 1>;
    case 2: return nhwc_igemm_cluster_kernel<BN, 2>;
    case 4: return nhwc_igemm_cluster_kernel<BN, 4>;
    case 8: return nhwc_igemm_cluster_kernel<BN, 8>;
    case 16: return nhwc_igemm_cluster_kernel<BN, 16>;
    default: return nullptr;
  }
}

KernelFn pick_kernel(const NhwcIgemmForm& f) {
  return f.tile_n == 32 ? pick_splits<32>(f.splits) : f.tile_n == 64 ? pick_splits<64>(f.splits) : nullptr;
}

int form_smem_bytes(const NhwcIgemmForm& f) { return f.tile_n == 32 ? kSmemBytes<32> : kSmemBytes<64>; }

}  // namespace

bool nhwc_igemm_form_valid(const NhwcIgemmForm& f) { return pick_kernel(f) != nullptr; }

std::string nhwc_igemm_form_name(const NhwcIgemmForm& f) {
  return "n" + std::to_string(f.tile_n) + "_s" + std::to_string(f.splits);
}

bool conv2d_nhwc_igemm_applicable(const Conv2dGeometry& g, const char** why) {
  const char* w = !validate_conv2d(g).is_ok() ? "inconsistent geometry"
                  : g.group != 1             ? "grouped conv"
                  : g.c_in % 64 != 0         ? "c_in is not a multiple of 64"
                  : g.c_out % 8 != 0         ? "c_out is not a multiple of 8"
                                             : nullptr;
  if (why) *why = w;
  return w == nullptr;
}

Status conv2d_nhwc_igemm(const Conv2dGeometry& g, const NhwcIgemmForm& form, const void* x, const void* w, void* y,
                         const ConvEpilogue& epi, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(refuse_input_rows(epi, "conv2d_nhwc_igemm"));
  const char* why = nullptr;
  if (!conv2d_nhwc_igemm_applicable(g, &why)) {
    const Status v = validate_conv2d(g);
    return invalid_argument(std::string("conv2d_nhwc_igemm: ") + (v.is_ok() ? std::string(why) : v.message()));
  }
  const KernelFn kernel = pick_kernel(form);
  if (!kernel)
    return invalid_argument("conv2d_nhwc_igemm: form " + nhwc_igemm_form_name(form) +
                            " does not exist (tile_n 32 or 64, splits 1, 2, 4, 8 or 16)");
  if (!x || !w || !y) return invalid_argument("conv2d_nhwc_igemm: null x, w or y");
  for (const void* p : {x, w, static_cast<const void*>(y), epi.residual})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return invalid_argument("conv2d_nhwc_igemm: an operand (x, w, y or residual) is not 16-byte aligned");
  // validate_conv2d bounds every tensor to 2^30 elements, so the kernel's 32-bit pixel, channel and offset arithmetic
  // cannot overflow (P·c_out, R, c_out·R, n·in_h·in_w·c_in are all element counts of x, w or y).
  const int64_t P = g.n * g.out_h * g.out_w, R = g.kernel_h * g.kernel_w * g.c_in;
  const int64_t gx = (P + BM - 1) / BM, gy = (g.c_out + form.tile_n - 1) / form.tile_n;
  if (gx > 0x7fffffff || gy > 65535) return invalid_argument("conv2d_nhwc_igemm: grid too large");
  // Once per device: the PTX version the kernels run from (clusters need 9.0), and each form's shared-memory and
  // non-portable cluster size (16) attributes, so that later launches (captured or not) make no attribute calls.
  static DeviceFacts facts[64];
  static std::mutex facts_mu;
  WS_ASSIGN_OR_RETURN(const DeviceFacts* f, device_facts(facts, facts_mu, "conv2d_nhwc_igemm", [](int, DeviceFacts& ds) -> Status {
    cudaFuncAttributes fa{};
    WS_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&fa, nhwc_igemm_cluster_kernel<64, 1>));
    ds.ptx = fa.ptxVersion;
    if (ds.ptx < 90) return Status::ok();  // refused below, before any launch
    for (int tn : {32, 64})
      for (int sp : {1, 2, 4, 8, 16}) {
        const NhwcIgemmForm fm{tn, sp};
        const KernelFn k = pick_kernel(fm);
        WS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, form_smem_bytes(fm)));
      }
    // 16-CTA clusters are non-portable: a device that refuses them loses the splits-16 forms only
    ds.wide_clusters = true;
    for (int tn : {32, 64})
      if (cudaFuncSetAttribute(pick_kernel({tn, 16}), cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
        (void)cudaGetLastError();
        ds.wide_clusters = false;
      }
    return Status::ok();
  }));
  WS_RETURN_IF_ERROR(require_cluster_device("conv2d_nhwc_igemm", *f));
  if (f->ptx < 90)
    return invalid_argument("conv2d_nhwc_igemm: this build runs the kernel from PTX for compute capability " + std::to_string(f->ptx / 10) +
                            "." + std::to_string(f->ptx % 10) +
                            "; it needs 9.0 or newer (thread-block clusters): build with CMAKE_CUDA_ARCHITECTURES including 90");
  if (form.splits > 8 && !f->wide_clusters)
    return invalid_argument("conv2d_nhwc_igemm: form " + nhwc_igemm_form_name(form) +
                            " needs 16-CTA (non-portable) clusters, which this device refused; use splits <= 8");
  IgemmArgs a{};
  a.n = int(g.n); a.c_in = int(g.c_in); a.in_h = int(g.in_h); a.in_w = int(g.in_w); a.c_out = int(g.c_out);
  a.out_h = int(g.out_h); a.out_w = int(g.out_w); a.kh = int(g.kernel_h); a.kw = int(g.kernel_w);
  a.sh = int(g.stride_h); a.sw = int(g.stride_w); a.dh = int(g.dilation_h); a.dw = int(g.dilation_w);
  a.pt = int(g.pad_top); a.pl = int(g.pad_left);
  a.P = int(P); a.R = int(R); a.k_tiles = int(R / BK);
  a.bias = epi.bias;
  a.res = static_cast<const __half*>(epi.residual);
  a.act = epi.act;
  a.ap = epi.params;
  // splits 1 uses no cluster API: launch_kernel_cluster makes it a plain launch
  const cudaError_t err = launch_kernel_cluster(epi.pdl, static_cast<unsigned>(form.splits), kernel,
                                                dim3{static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(form.splits)},
                                                dim3(kThreads), static_cast<size_t>(form_smem_bytes(form)), stream, static_cast<const __half*>(x),
                                                static_cast<const __half*>(w), static_cast<__half*>(y), a);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not left for the next launcher to report as its own
    return cuda::cuda_status(err, "conv2d_nhwc_igemm launch", __FILE__, __LINE__);
  }
  return Status::ok();
}

}  // namespace ws::kernels
