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
/// Enqueue-only except for a one-time grow-only device workspace (0 bytes for these kernels in practice).

#include <cuda_runtime.h>

#include <cstdint>

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

Status gemm_s8_cutlass(CutlassSchedule schedule, GemmOut out_kind, const int8_t* a, const int8_t* bt, void* out,
                       int m, int n, int k, const GemmEpilogue& epilogue, cudaStream_t stream);

/// The tensor-core path to use (winner of the H200 campaigns, docs/results/H200.md): CUTLASS pingpong
/// 128x128x128 when built, on cc 9.0 and the shape meets its TMA rules; otherwise gemm_s8_mma 128x128x64 (any
/// shape, sm_80+). Same contract as gemm_s8_mma.
Status gemm_s8_tensor_core(GemmOut out_kind, const int8_t* a, const int8_t* bt, void* out, int m, int n, int k,
                           const GemmEpilogue& epilogue, cudaStream_t stream);

}  // namespace ws::kernels
