#pragma once
/// \file gemm_s8_cutlass.h
/// CUTLASS 3.x (headers of CUTLASS 4.2) INT8 GEMM backend for sm_90a: TMA + wgmma, warp-specialised persistent
/// kernels. Same contract as gemm_s8_mma (gemm_s8.h): acc[M,N] = A[M,K] x Bt[N,K]^T, A and Bt K-contiguous,
/// out int32 [M,N] (kS32) or fp16/bf16 [M,N] = acc * row_scale[m] * col_scale[n] (+ bias[n]) fused in the
/// CUTLASS epilogue (an epilogue visitor tree). Host-only header.
/// Built only when CMake found the CUTLASS headers (WS_CUTLASS_DIR) and nvcc accepts sm_90a; otherwise every
/// call returns kUnsupported. Runs only on compute capability 9.0 (sm_90a code is not forward compatible).
/// Shape rules (TMA: 16-byte aligned row strides): K % 16 == 0, N % 4 == 0 (int32) / N % 8 == 0 (fp16/bf16),
/// 16-byte aligned bases; other shapes return kUnsupported (callers fall back to gemm_s8_mma).
/// Build / run split: CutlassGemmPlan::create does every check, query, host set-up and allocation for one
/// call (operand pointers and shape fixed); CutlassGemmPlan::run only launches. The caller owns the plan and its
/// workspace; nothing is cached statically; the SM count is the current device's.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/gemm/gemm_s8.h"
#include "warpstream/status.h"

namespace ws::kernels {

enum class CutlassSchedule {
  kPingpong128x128,  ///< KernelTmaWarpSpecializedPingpong, tile 128x128x128, cluster 2x1x1
  kCoop256x128,      ///< KernelTmaWarpSpecializedCooperative, tile 256x128x128, cluster 2x1x1
};
const char* cutlass_schedule_name(CutlassSchedule s);

/// True when this build contains the CUTLASS kernels.
bool gemm_s8_cutlass_built();

/// Build-time state of one CUTLASS GEMM: the initialised kernel parameters (TMA descriptors of these operand
/// pointers and this shape) and the device workspace they point at, on the device current at create().
/// Move-only; run() from one thread at a time (or externally synchronised), on the device it was made on.
class CutlassGemmPlan {
 public:
  CutlassGemmPlan();
  ~CutlassGemmPlan();
  CutlassGemmPlan(CutlassGemmPlan&&) noexcept;
  CutlassGemmPlan& operator=(CutlassGemmPlan&&) noexcept;

  /// Plans acc = A x Bt^T as gemm_s8_cutlass below (same operands and shape rules). May allocate the workspace
  /// (DeviceBuffer, counted by cuda_allocation_count()); any workspace initialisation is enqueued on `stream`.
  /// Errors: kUnsupported (not built, not cc 9.0, shape / alignment rules, CUTLASS can_implement refused);
  /// kInvalidArgument (M, N or K < 1, scaled output without scales); kCuda / kInternal (initialisation).
  static Result<CutlassGemmPlan> create(CutlassSchedule schedule, DType out_kind, const int8_t* a,
                                        const int8_t* bt, void* out, int m, int n, int k,
                                        const GemmEpilogue& epilogue, cudaStream_t stream);
  /// Launches the planned GEMM on `stream`: no allocation, no host set-up. kFailedPrecondition on an empty
  /// (moved-from or default) plan.
  Status run(cudaStream_t stream) const;
  size_t workspace_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// One-shot form for tests and one-off calls: CutlassGemmPlan::create then run (so it may allocate — and then
/// free, which synchronises — a workspace). Never on a steady-state path: keep a plan there.
Status gemm_s8_cutlass(CutlassSchedule schedule, DType out_kind, const int8_t* a, const int8_t* bt, void* out,
                       int m, int n, int k, const GemmEpilogue& epilogue, cudaStream_t stream);

/// The tensor-core path to use (winner of the H200 campaigns, docs/results/H200.md): CUTLASS pingpong
/// 128x128x128 when built, on cc 9.0 and the shape meets its TMA rules; otherwise gemm_s8_mma 128x128x64 (any
/// shape, sm_80+). Same contract as gemm_s8_mma. One-shot like gemm_s8_cutlass (plans on every call).
Status gemm_s8_tensor_core(DType out_kind, const int8_t* a, const int8_t* bt, void* out, int m, int n, int k,
                           const GemmEpilogue& epilogue, cudaStream_t stream);

}  // namespace ws::kernels
