#pragma once
/// \file gemm_s8_cutlass_kernel.cuh
/// CUTLASS 3.x (4.x headers) INT8 x INT8 -> INT32 GEMM for sm_90a: TMA loads, wgmma, warp-specialised
/// persistent kernels (pingpong / cooperative), TMA-store epilogue. Included only by the instantiation files of
/// this folder, each of which instantiates ONE configuration (compile time: ~1 min of nvcc each). No static
/// state: the caller owns each plan and its workspace (gemm_s8_cutlass.h, CutlassGemmPlan).
/// Layout ("TN", same as the mma path and cuBLASLt): A[M,K] row-major, Bt[N,K] row-major (= B column-major,
/// K-major), D[M,N] row-major. Epilogues:
///  - s32: D = acc (LinearCombination alpha 1, no C operand: ElementC = void).
///  - scaled: D = fp16/bf16( col_scale[n] * (float(acc) * row_scale[m]) + bias[n] ), an epilogue visitor tree
///    (EVT) with a column broadcast (per-row activation scale), two row broadcasts (per-column weight scale,
///    bias), computed in fp32 and rounded to nearest once.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "kernels/gemm/cutlass/gemm_s8_cutlass_impl.h"

namespace ws::kernels::cutlass_sm90 {

using namespace cute;

template <class ElementD, bool kScaled, class TileShape, class ClusterShape, class KernelSchedule, class EpiSchedule>
struct GemmS8Config {
  using ElementA = int8_t;
  using ElementB = int8_t;
  using ElementAcc = int32_t;
  using ElementCompute = std::conditional_t<kScaled, float, int32_t>;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignAB = 16;
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

  // Per-row (M) activation scale: column broadcast; per-column (N) weight scale and bias: row broadcasts.
  using RowScale = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, float>;
  using ColScale = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float>;
  using Bias = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float>;
  using AccTimesRow = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, float, float, kRound>, RowScale,
      cutlass::epilogue::fusion::Sm90AccFetch>;
  using ScaledFusion = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiply_add, ElementD, float, kRound>, ColScale, AccTimesRow,
      Bias>;
  using PlainFusion = cutlass::epilogue::fusion::LinearCombination<ElementD, ElementCompute, void, ElementCompute>;
  using Fusion = std::conditional_t<kScaled, ScaledFusion, PlainFusion>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementCompute, void, LayoutD, kAlignD, ElementD,
      LayoutD, kAlignD, EpiSchedule, Fusion>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlignAB, ElementB, LayoutB, kAlignAB,
      ElementAcc, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                       CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

// One initialised GEMM of configuration Cfg (see PlanState in gemm_s8_cutlass_impl.h).
template <class Cfg>
class ConfigPlan final : public PlanState {
 public:
  typename Cfg::Gemm gemm;
  RunResult run(cudaStream_t stream) override {
    if (gemm.run(stream) != cutlass::Status::kSuccess) return RunResult::kError;
    return cudaGetLastError() == cudaSuccess ? RunResult::kOk : RunResult::kError;
  }
};

// Plans one GEMM of configuration Cfg (the two-call protocol of gemm_s8_cutlass_impl.h). Every host set-up
// (can_implement, TMA descriptors, workspace initialisation) happens here, so a plan's run() carries none.
template <class Cfg, bool kScaled>
RunResult plan_config(const RunArgs& r, void* workspace, size_t* workspace_bytes, std::unique_ptr<PlanState>* plan) {
  using Gemm = typename Cfg::Gemm;
  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  using StrideC = typename Gemm::GemmKernel::StrideC;
  using ElementD = typename Gemm::GemmKernel::ElementD;
  const int64_t m = r.m, n = r.n, k = r.k;
  StrideA sa = make_stride(k, Int<1>{}, m * k);
  StrideB sb = make_stride(k, Int<1>{}, n * k);
  StrideD sd = make_stride(n, Int<1>{}, m * n);
  StrideC sc = make_stride(n, Int<1>{}, m * n);
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {r.m, r.n, r.k, 1},
                                {r.a, sa, r.bt, sb},
                                {{}, nullptr, sc, static_cast<ElementD*>(r.out), sd}};
  if constexpr (kScaled) {
    auto& f = args.epilogue.thread;
    // Tree arguments: {op_0 = col_scale, op_1 = {op_0 = row_scale, acc, mul}, op_2 = bias, op_3 = multiply_add}.
    f.op_0.ptr_row = r.col_scale;
    f.op_1.op_0.ptr_col = r.row_scale;
    f.op_2.ptr_row = r.bias;  // null -> broadcast of 0
  } else {
    args.epilogue.thread.alpha = 1;
    args.epilogue.thread.beta = 0;
  }
  // The caller's device's SM count (the adapter would otherwise query it on every initialize()).
  args.hw_info.sm_count = r.sm_count;
  if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return RunResult::kUnsupported;
  *workspace_bytes = Gemm::get_workspace_size(args);
  if (!plan) return RunResult::kOk;
  auto p = std::make_unique<ConfigPlan<Cfg>>();
  if (p->gemm.initialize(args, workspace, r.stream) != cutlass::Status::kSuccess) return RunResult::kError;
  *plan = std::move(p);
  return RunResult::kOk;
}

// The two schedules measured (cuBLASLt's fastest INT8 tiles on H200 are 128x128 and 256x128).
using PingpongTile = Shape<_128, _128, _128>;
using CoopTile = Shape<_256, _128, _128>;
using Cluster2x1 = Shape<_2, _1, _1>;
using Pingpong = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using PingpongEpi = cutlass::epilogue::TmaWarpSpecialized;
using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using CoopEpi = cutlass::epilogue::TmaWarpSpecializedCooperative;

}  // namespace ws::kernels::cutlass_sm90
