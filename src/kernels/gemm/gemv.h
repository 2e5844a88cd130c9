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

/// Pooled classifier head (pooled_gemv.cu): GlobalAveragePool fused into the batch-1 GEMV, the pooled vector kept on chip:
///
///   y[j] = alpha · Σ_k w[j, k] · (1 / hw) Σ_p x(k, p) + beta · c[j]      j < n, k < channels, p < hw
///
/// x is the pool's input [1, channels, H, W] (hw = H · W) stored NCHW (x[k · hw + p]) or, with `x_nhwc`, channels-last
/// (x[p · channels + k]); w [n, channels] one row per output; c [n] or nullptr (beta ignored); y [n] in the storage type
/// `t`, or float32 with `y_float32`. The same math as GlobalAveragePool → Flatten → Gemm (transB = 1, M = 1) with the
/// pooled values kept in fp32 (the unfused path rounds them to the storage type), fp32 sums, and a split-K over
/// channel slices reduced in the same kernel by the last block of each output slice, in a fixed order (deterministic).
/// Scratch: `partials` pooled_gemv_partials_bytes(channels, n) bytes (float32, any content) and `counters`
/// pooled_gemv_slices_n(n) unsigned words that are zero before the launch and are left zero after it (as the split-K
/// tile counters of the conv kernels, so the engine shares its per-context counters). One launch at a time per
/// scratch. Enqueues on `stream`; no allocation, no synchronisation, capturable. `pdl`: programmatic dependent launch
/// (kernels/pdl.cuh); the weight tile is prefetched into L2 before pdl_wait (constant data, so no hazard).
/// Errors (nothing enqueued): kInvalidArgument for channels, hw or n < 1 or above kPooledGemvMax, channels · hw above
/// it, more than kPooledGemvMaxSlices channel or output slices, a null x / w / y / partials / counters; kUnsupported for another element type; kCuda when the launch fails.
inline constexpr int64_t kPooledGemvSliceK = 128;  ///< channels per block (the split-K slice)
inline constexpr int64_t kPooledGemvSliceN = 128;  ///< outputs per block
inline constexpr int64_t kPooledGemvMax = (int64_t{1} << 31) - 1;
inline constexpr int64_t kPooledGemvMaxSlices = 65535;  ///< channel slices and output slices each (grid y limit)
inline constexpr int64_t pooled_gemv_slices_k(int64_t channels) { return (channels + kPooledGemvSliceK - 1) / kPooledGemvSliceK; }
inline constexpr int64_t pooled_gemv_slices_n(int64_t n) { return (n + kPooledGemvSliceN - 1) / kPooledGemvSliceN; }
inline constexpr int64_t pooled_gemv_partials_bytes(int64_t channels, int64_t n) { return pooled_gemv_slices_k(channels) * n * 4; }

Status pooled_gemv(DType t, const void* x, bool x_nhwc, int64_t channels, int64_t hw, const void* w, const void* c, void* y, int64_t n,
                   float alpha, float beta, void* partials, unsigned* counters, bool pdl, cudaStream_t stream, bool y_float32 = false);

}  // namespace ws::kernels
