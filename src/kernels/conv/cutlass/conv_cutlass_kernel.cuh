#pragma once
// CUTLASS 2.x implicit-GEMM conv2d fprop (cutlass/conv/kernel/default_conv2d_fprop.h: Ampere multistage cp.async
// mainloop, mma.sync m16n8k16 fp16 -> fp32; runs on sm_90) for dense NHWC fp16 convs, with serial split-K
// (SplitKMode::kSerial) and the bias + activation in the epilogue. Shared by the instantiation files of this folder;
// the interface is conv_cutlass_impl.h, the contract conv_cutlass.h.
//
// What it computes (CUTLASS docs/implicit_gemm_convolution.md): GEMM M = n·p·q output pixels, N = k output channels,
// K = r·s·c taps; y = act(conv(x, w) + bias). The bias is CUTLASS's source operand C read with stride 0 (every pixel
// the same [k] row) under ScaleType::NoBetaScaling (D = alpha·acc + C, alpha = 1).
// Serial split-K: slice j of `splits` sums the channel chunks j, j + splits, ... of every tap (CUTLASS interleaves the
// slices by threadblock K chunks: filter_c_delta = kK · splits). The slices of one output tile finish in order 0, 1, ...
// on the tile's semaphore: slice 0 writes alpha·acc + bias to y, slice j > 0 reads y back as its source and adds its
// partial; only the last applies the activation (set_k_partition), and it resets the semaphore to 0 for the next launch.
// The ReLU form is LinearCombinationGeneric<ReLu> (skips the activation on all but the last slice), NOT
// LinearCombinationRelu: that one "disables" ReLU on earlier slices with a NaN threshold, and CUTLASS 4.2's ReLu is a
// NaN-propagating max (max.NaN.f32), so every slice but the last would store NaN (found in review, 2026-12-05).
// The running sum is stored as fp16 between slices (one rounding per slice).
// Fixed channels (IteratorAlgorithm::kFixedChannels, conv_f16_64x64x32_s4_c8.cu): for c == 8 exactly (an RGB input
// padded to 8, CudaBuildOptions::hwc8_input) the K dimension packs 32 / 8 = 4 filter taps per mainloop step instead of
// one tap's 32-channel chunk with 24 of them masked off (kOptimized): ResNet-50's 7×7 stem takes 13 steps instead of 49.
// CUTLASS's iteration count for it ignores split-K slices, so that form runs at split 1 only (conv_cutlass.cpp).
// Thread mapping: grid (ceil(M / TB::kM), ceil(N / TB::kN), splits); 32 · (TB / Warp) threads; each warp a Warp tile of
// mma.sync fragments; Stages-deep cp.async pipeline in dynamic shared memory.
// Launch: through pdl_conv_kernel below — cutlass::Kernel's body (the operator on dynamic shared memory) preceded, when
// launched with programmatic dependent launch, by griddepcontrol.wait (the predecessor has completed and its memory is
// visible before any global access) and griddepcontrol.launch_dependents. CUTLASS's mainloop cannot be entered to
// trigger after it (kernels/pdl.cuh's rule for our kernels), so the trigger is at the start. The dependent grid is
// scheduled once every block of this one has triggered (its last wave resident), so it never takes slots this grid
// still needs; its blocks then wait in their own griddepcontrol.wait holding registers and shared memory while this
// kernel runs — what kernels/pdl.cuh measured as 16–20 µs slower on EfficientNet-Lite0 with our kernels triggering at
// their start (device runs 40, 44). Whether it pays here is unmeasured: the disabled timing test prints each form with
// and without PDL, and bench-latency's row `cutlassconv` runs beside `cutlassnopdl` (`--no-pdl`). Without the launch
// attribute both instructions are no-ops.
// Test: tests/gpu/conv_cutlass_test.cpp (ws_gpu_tests --gtest_filter='ConvCutlass*': against the CPU reference at every
// split count; timing: --gtest_also_run_disabled_tests --gtest_filter='ConvCutlass.DISABLED_*').
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

#include "cutlass/conv/conv2d_problem_size.h"
#include "cutlass/conv/device/implicit_gemm_convolution.h"
#include "cutlass/conv/kernel/default_conv2d_fprop.h"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/epilogue/thread/linear_combination_generic.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"
#include "kernels/conv/cutlass/conv_cutlass_impl.h"

namespace ws::kernels::cutlass_conv {

template <int TbM, int TbN, int TbK, int WarpM, int WarpN, int Stages, bool Relu,
          cutlass::conv::IteratorAlgorithm Algo = cutlass::conv::IteratorAlgorithm::kOptimized>
struct ConvConfig {
  using Element = cutlass::half_t;
  using Layout = cutlass::layout::TensorNHWC;
  static constexpr int kVector = 8;  // 16-byte accesses of fp16
  using Scale = cutlass::epilogue::thread::ScaleType;
  using Epilogue = std::conditional_t<
      Relu,
      cutlass::epilogue::thread::LinearCombinationGeneric<cutlass::epilogue::thread::ReLu, Element, kVector, float, float, Scale::NoBetaScaling>,
      cutlass::epilogue::thread::LinearCombination<Element, kVector, float, float, Scale::NoBetaScaling>>;
  using Kernel = typename cutlass::conv::kernel::DefaultConv2dFprop<
      Element, Layout, Element, Layout, Element, Layout, float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
      cutlass::gemm::GemmShape<TbM, TbN, TbK>, cutlass::gemm::GemmShape<WarpM, WarpN, TbK>, cutlass::gemm::GemmShape<16, 8, 16>, Epilogue,
      cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>, Stages, cutlass::arch::OpMultiplyAdd,
      Algo, cutlass::conv::StrideSupport::kStrided, kVector, kVector>::Kernel;
  using Op = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;
};

// The configured epilogue functor run on the host for one element (kVector lanes of the same value): slice k of
// `count` with accumulator `acc` and source `src` (the bias for slice 0, y's running sum after). What the kernel's
// epilogue computes for that element, without a GPU (ConvCutlass.EpilogueSkipsTheActivationUntilTheLastSlice).
template <class Cfg>
float epilogue_on_host(float acc, float src, int k, int count) {
  using Op = typename Cfg::Epilogue;
  Op op(typename Op::Params(1.0f));
  op.set_k_partition(k, count);
  typename Op::FragmentAccumulator a;
  typename Op::FragmentSource c;
  a.fill(acc);
  c.fill(typename Cfg::Element(src));
  const typename Op::FragmentOutput d = op(a, c);
  return float(d[0]);
}

// cutlass::Kernel<Kernel> with the PDL wait and trigger in front (see the file comment).
template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreadCount) pdl_conv_kernel(typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  extern __shared__ int shared_base[];
  Kernel op;
  op(params, *reinterpret_cast<typename Kernel::SharedStorage*>(shared_base));
}

template <class Cfg>
RunResult run_config(const ConvArgs& a, bool launch, size_t* semaphore_ints) {
  using Op = typename Cfg::Op;
  using Kernel = typename Cfg::Kernel;
  using Element = typename Cfg::Element;
  using Layout = typename Cfg::Layout;
  if (a.splits < 1) return RunResult::kUnsupported;
  const cutlass::conv::Conv2dProblemSize problem(a.n, a.h, a.w, a.c, a.k, a.r, a.s, a.p, a.q, a.pad_h, a.pad_w, a.stride_h, a.stride_w,
                                                 a.dilation_h, a.dilation_w, cutlass::conv::Mode::kCrossCorrelation, a.splits, 1);
  // Packed NHWC / KRSC strides; the bias as a [k] row repeated over every pixel (stride 0).
  const Layout lx = Layout::packed({a.n, a.h, a.w, a.c});
  const Layout lw = Layout::packed({a.k, a.r, a.s, a.c});
  const Layout ly = Layout::packed({a.n, a.p, a.q, a.k});
  const Layout lbias(typename Layout::Stride(0));
  typename Kernel::EpilogueOutputOp::Params epi(1.0f);
  typename Op::Arguments args(problem, {static_cast<Element*>(const_cast<void*>(a.x)), lx},
                              {static_cast<Element*>(const_cast<void*>(a.weight)), lw},
                              {static_cast<Element*>(const_cast<void*>(a.bias)), lbias}, {static_cast<Element*>(a.y), ly}, epi,
                              cutlass::conv::SplitKMode::kSerial);
  if (Op::can_implement(args) != cutlass::Status::kSuccess) return RunResult::kUnsupported;
  const size_t sem = a.splits > 1 ? Op::get_workspace_size(args) / sizeof(int) : 0;
  if (semaphore_ints) *semaphore_ints = sem;
  if (!launch) return RunResult::kOk;
  if (!a.x || !a.weight || !a.bias || !a.y || (sem > 0 && !a.semaphore)) return RunResult::kUnsupported;

  constexpr int kSmem = int(sizeof(typename Kernel::SharedStorage));
  if constexpr (kSmem >= (48 << 10)) {  // above the default dynamic limit: opt in once per device (not under capture later)
    static std::atomic<bool> done[64];
    static std::mutex mu;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return RunResult::kError;
    if (!done[dev].load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mu);
      if (!done[dev].load(std::memory_order_relaxed)) {
        if (cudaFuncSetAttribute(pdl_conv_kernel<Kernel>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) != cudaSuccess)
          return RunResult::kError;
        done[dev].store(true, std::memory_order_release);
      }
    }
  }
  // The kernel's parameters built on the host for this launch (no state kept: contexts and threads share nothing).
  const typename Kernel::Params params(args, a.semaphore);
  typename Kernel::ThreadblockSwizzle swizzle;
  const dim3 grid = swizzle.get_grid_shape(params.grid_tiled_shape);
  const dim3 block(Kernel::kThreadCount, 1, 1);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = kSmem;
  cfg.stream = a.stream;
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = a.pdl ? attr : nullptr;
  cfg.numAttrs = a.pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, pdl_conv_kernel<Kernel>, params) == cudaSuccess ? RunResult::kOk : RunResult::kError;
}

}  // namespace ws::kernels::cutlass_conv
