#pragma once
/// \file gemm_s8.h
/// Host-only launchers of the INT8 GEMM kernels (VRAMFlow stages 00-02 and the tensor-core path).
/// All pointers are device pointers; all matrices dense row-major; every launcher only enqueues on
/// `stream` and returns the launch status (no synchronisation, no allocation).

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/dtype.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Stage 00: out[i] = __dp4a(a[i], b[i], c[i]) (signed x signed, 4 int8 lanes per int32), i < n.
Status dp4a_probe(const int32_t* a, const int32_t* b, const int32_t* c, int32_t* out, int n, cudaStream_t stream);

/// Stage 01: C[M,N] (int32) = A[M,K] x B[K,N], int8 row-major, one thread per output, __dp4a over
/// groups of four along K (bytes gathered from the un-packed rows) plus a scalar tail.
Status gemm_s8s8s32_naive(const int8_t* a, const int8_t* b, int32_t* c, int m, int n, int k, cudaStream_t stream);

/// Stage 02: 64x64 tile per block, 256 threads, 4x4 int32 accumulators per thread.
/// a_packed: [M, ceil(K/4)] words, bt_packed: [N, ceil(K/4)] words (ws::ref::pack_a_k4 / pack_bt_k4).
/// k_depth in {32, 64, 128} (int8 values per shared-memory stage), smem_stride in {65, 68} words.
Status gemm_s8s8s32_dp4a_tiled(int k_depth, int smem_stride, const int32_t* a_packed, const int32_t* bt_packed,
                               int32_t* c, int m, int n, int k, cudaStream_t stream);

/// Tensor-core tile configurations (mma.sync.m16n8k32.s8, sm_80+).
enum class MmaTile { k128x128, k128x256 };
const char* mma_tile_name(MmaTile t);

/// Output element type of the tensor-core GEMMs (gemm_s8_mma, the CUTLASS backend): DType::kInt32 (the int32
/// accumulators, epilogue ignored), DType::kFloat16 or DType::kBFloat16 (the scaled epilogue below). Any other
/// DType is kInvalidArgument naming it (every launcher checks through this).
inline Status check_gemm_out(DType t) {
  if (t == DType::kInt32 || t == DType::kFloat16 || t == DType::kBFloat16) return Status::ok();
  return invalid_argument("INT8 GEMM output: element type " + dtype_name(t) + " (int32, float16 or bfloat16 only)");
}

/// Fused epilogue: out[m,n] = acc[m,n] * row_scale[m] * col_scale[n] (+ bias[n]) rounded to fp16/bf16.
/// row_scale: [M] per-token activation scale; col_scale: [N] per-output-channel weight scale; bias: [N] or null.
struct GemmEpilogue {
  const float* row_scale = nullptr;
  const float* col_scale = nullptr;
  const float* bias = nullptr;
};

/// Tensor-core INT8 GEMM: acc[M,N] = A[M,K] x Bt[N,K]^T, A and Bt both K-contiguous (Bt is a weight
/// stored [out, in]). out: int32 [M,N] for DType::kInt32 (epilogue ignored), else fp16/bf16 [M,N] with the
/// epilogue (out_kind: see check_gemm_out).
/// Any M, N, K >= 1; K % 16 == 0 takes the cp.async path, other K a guarded byte-load path.
/// Requires compute capability >= 8.0 (kUnsupported otherwise); on toolkits built without an sm_80+
/// target the launcher returns kUnsupported.
Status gemm_s8_mma(MmaTile tile, DType out_kind, const int8_t* a, const int8_t* bt, void* out, int m, int n, int k,
                   const GemmEpilogue& epilogue, cudaStream_t stream);

/// Counts i < count with x[i] != y[i]; *first_index = smallest such i (or -1). Both outputs in device memory
/// (mismatches: unsigned long long, first_index: long long). Zero them before the call.
Status count_mismatches_s32(const int32_t* x, const int32_t* y, int64_t count, unsigned long long* mismatches,
                            long long* first_index, cudaStream_t stream);

}  // namespace ws::kernels
