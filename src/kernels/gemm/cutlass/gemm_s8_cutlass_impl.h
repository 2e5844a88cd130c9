#pragma once
/// \file gemm_s8_cutlass_impl.h
/// Plain-C++ interface between the CUTLASS instantiation files (compiled for sm_90a with the CUTLASS headers)
/// and the dispatcher gemm_s8_cutlass.cu. No CUTLASS types here.

#include <cuda_runtime.h>

#include <cstdint>

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
  cudaStream_t stream;
};

RunResult s32_pingpong_128x128x128(const RunArgs& r);
RunResult s32_coop_256x128x128(const RunArgs& r);
RunResult f16_pingpong_128x128x128(const RunArgs& r);
RunResult f16_coop_256x128x128(const RunArgs& r);
RunResult bf16_pingpong_128x128x128(const RunArgs& r);
RunResult bf16_coop_256x128x128(const RunArgs& r);

}  // namespace ws::kernels::cutlass_sm90
