#pragma once
/// \file gemv.h
/// Host-only launcher of the few-row GEMM ("GEMV") tactic of the CUDA executor's Gemm / MatMul entry
/// (src/engine/cuda/ops/gemm.cpp): a classifier head at batch 1 — ResNet-50's fc (M = 1, N = 1000, K = 2048),
/// EfficientNet-Lite0's (K = 1280) — is a matrix-vector product that cuBLASLt's tile kernels cover with a handful of
/// blocks (run 71, H100: 7.2 µs for 4 MB of weights, ~1.2 µs of DRAM bytes). Here one warp owns one output column and
/// streams that column's weight row once, for all M rows of A.
///
///   y[i, j] = alpha · Σ_k a[i, k] · w[j, k] + beta · c[i, j]      i < m ≤ kGemvMaxRows, j < n
///
/// Layouts (row-major, dense): a [m, k], w [n, k] (the weight transposed to one row per output: ONNX Gemm's B with
/// transB = 1 as stored; the engine uploads a transposed copy otherwise), c [m, n] or nullptr (beta ignored), y [m, n].
/// `y_float32`: y is float32 whatever `t` (an engine's float32 output port written directly, its fp16 → fp32 cast
/// folded in); otherwise y has the storage type `t`.
/// Element type float32 or float16 storage (`t`), float32 accumulation (products and sums in fp32, one rounding
/// to the storage type at the end) — the summation order differs from cuBLASLt's, so fp16 results agree within
/// rounding, not bit for bit.
/// Enqueues on `stream`; no allocation, no synchronisation, capturable. `pdl`: launched with programmatic dependent
/// launch (kernels/pdl.cuh; the kernel waits before its first global access and lets dependents start after
/// its loop).
/// Errors (nothing enqueued): kInvalidArgument for m < 1 or m > kGemvMaxRows, n < 1, k < 1, n > kGemvMaxN, k > kGemvMaxK,
/// a null a / w / y; kUnsupported for another element type; kCuda when the launch fails.

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/dtype.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Most rows of A one launch handles (each lane keeps m accumulators).
inline constexpr int64_t kGemvMaxRows = 4;
/// Largest n (the grid has ceil(n / 8) blocks, computed in 64 bits) and k (int32 indexing inside the kernel).
inline constexpr int64_t kGemvMaxN = (int64_t{1} << 31) - 1;
inline constexpr int64_t kGemvMaxK = (int64_t{1} << 31) - 1;

Status gemv_rows(DType t, const void* a, const void* w, const void* c, void* y, int64_t m, int64_t n, int64_t k, float alpha,
                 float beta, bool pdl, cudaStream_t stream, bool y_float32 = false);

}  // namespace ws::kernels
