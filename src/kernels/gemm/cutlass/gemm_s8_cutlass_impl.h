#pragma once
/// \file gemm_s8_cutlass_impl.h
/// Plain-C++ interface between the CUTLASS instantiation files (compiled for sm_90a with the CUTLASS headers)
/// and the dispatcher gemm_s8_cutlass.cpp. No CUTLASS types here.
/// Each instantiation function plans one GEMM in two calls (the caller owns every resource):
///   1. plan == nullptr: CUTLASS can_implement() + the workspace size into *workspace_bytes (no allocation);
///   2. plan != nullptr: initialises the kernel parameters (TMA descriptors) with the caller's `workspace`
///      (at least *workspace_bytes bytes) into a new PlanState; PlanState::run() then only launches.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ws::kernels::cutlass_sm90 {

enum class RunResult { kOk, kUnsupported, kError };

struct RunArgs {
  const int8_t* a;
  const int8_t* bt;
  void* out;
  int m, n, k;
  const float* row_scale;
  const float* col_scale;
  const float* bias;
  cudaStream_t stream;  ///< where initialisation work (workspace set-up) is enqueued
  int sm_count;         ///< multiprocessors of the device the plan runs on
};

/// One initialised CUTLASS GEMM (its GemmUniversalAdapter); run() launches it, nothing else.
class PlanState {
 public:
  virtual ~PlanState() = default;
  virtual RunResult run(cudaStream_t stream) = 0;
};

using PlanFn = RunResult (*)(const RunArgs& r, void* workspace, size_t* workspace_bytes,
                             std::unique_ptr<PlanState>* plan);

RunResult s32_pingpong_128x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes,
                                   std::unique_ptr<PlanState>* plan);
RunResult s32_coop_256x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes,
                               std::unique_ptr<PlanState>* plan);
RunResult f16_pingpong_128x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes,
                                   std::unique_ptr<PlanState>* plan);
RunResult f16_coop_256x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes,
                               std::unique_ptr<PlanState>* plan);
RunResult bf16_pingpong_128x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes,
                                    std::unique_ptr<PlanState>* plan);
RunResult bf16_coop_256x128x128(const RunArgs& r, void* workspace, size_t* workspace_bytes,
                                std::unique_ptr<PlanState>* plan);

}  // namespace ws::kernels::cutlass_sm90
