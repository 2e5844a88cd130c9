#pragma once
/// \file ltx_linear.h
/// One planned cuBLASLt linear layer of the GPU LTX block: Y[M, N] = X[M, K] · W[N, K]^T (+ bias[N]) (then GELU-tanh),
/// X/Y row-major bf16 activations, W the PyTorch weight [out, in] as stored (no transpose copy).
/// cuBLAS is column-major, so the call is D(N x M, ld ldy) = op(A) · op(B) with A = W viewed as col-major K x N
/// (transa = T) and B = X viewed as col-major K x M (transb = N): the "TN" form FP8 also requires; the bias vector
/// then runs along cuBLAS rows, i.e. per output channel, as CUBLASLT_EPILOGUE_BIAS defines it.
///
/// Formats: kBF16 (A, B, D bf16, fp32 accumulate); kFP8 (A = W e4m3 with per-output-channel scale [N] float32,
/// B = X quantized per token to e4m3 with scale [M] by quantize_rows_e4m3, D bf16): the two scale vectors go in as
/// cuBLASLt's CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F (A: one float per cuBLAS row = channel, B: one per cuBLAS
/// column = token) when the heuristic finds an algorithm for it; otherwise the GEMM runs unscaled (scalar 1) and
/// scale_bias_act applies both vectors, bias and GELU in a follow-up pass (reported by scaling_mode()).
/// kINT8 (not cuBLASLt): A = X quantized per token to int8 (quantize_rows_s8, scale [M]), W int8 [N, K] with
/// per-channel scale [N]; our tensor-core INT8 GEMM (src/kernels/gemm/gemm_s8.h gemm_s8_mma, mma.sync, 128x128
/// tiles) with its dequant epilogue acc * x_scale[m] * w_scale[n] + bias_f32[n] -> bf16; GELU-tanh, when asked,
/// in a follow-up pass (kernels::bias_gelu_tanh). Y must be dense (ldy = N).
/// The algorithm is cuBLASLt's heuristic first choice at build (workspace owned by the caller, fixed size).
/// Host-only header; no allocation and no host sync in enqueue (graph-capturable).

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "warpstream/status.h"

namespace ws::flow {

enum class LinearFormat { kBF16, kFP8, kINT8 };
enum class LinearEpilogue { kNone, kBias, kBiasGeluTanh };

struct LinearShape {
  int64_t m = 0;        ///< rows of X / Y (tokens)
  int64_t n = 0;        ///< output features
  int64_t k = 0;        ///< input features
  int64_t ldx = 0;      ///< row stride of X in elements (0 = k)
  int64_t ldy = 0;      ///< row stride of Y in elements (0 = n)
  LinearFormat format = LinearFormat::kBF16;
  LinearEpilogue epilogue = LinearEpilogue::kBias;
};

struct LinearBinding {
  const void* x = nullptr;          ///< bf16 [M, ldx] (kBF16) or e4m3 [M, K] dense (kFP8, already quantized)
  const void* w = nullptr;          ///< bf16 or e4m3 [N, K]
  const void* bias = nullptr;       ///< bf16 [N] (epilogues with bias)
  void* y = nullptr;                ///< bf16 [M, ldy]
  const float* w_scale = nullptr;   ///< kFP8/kINT8: float32 [N] per output channel
  const float* x_scale = nullptr;   ///< kFP8/kINT8: float32 [M] per token
  const float* bias_f32 = nullptr;  ///< kINT8: float32 [N] (the INT8 epilogue's bias type)
};

class LtLinear {
 public:
  /// Plans descriptors and picks the heuristic algorithm for `workspace_bytes`. `name` names the layer
  /// ("attn1.to_qkv") in every message. kUnsupported when no algorithm exists; kCuda on a cuBLASLt failure.
  static Result<std::unique_ptr<LtLinear>> build(void* lt_handle, const LinearShape& shape, size_t workspace_bytes,
                                                 const std::string& name);
  ~LtLinear();
  LtLinear(const LtLinear&) = delete;
  LtLinear& operator=(const LtLinear&) = delete;

  /// Binds pointers once (sets the bias / scale pointers in the descriptor).
  Status bind(const LinearBinding& b, void* workspace);
  Status enqueue(cudaStream_t stream);
  /// "cuBLASLt outer-vector scales" or "follow-up scaling kernel" (kFP8), the INT8 GEMM (kINT8), "bf16" otherwise.
  std::string scaling_mode() const;
  const LinearShape& shape() const;

  struct Impl;

 private:
  explicit LtLinear(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// cuBLASLt handle owner (one per block).
class LtHandle {
 public:
  static Result<LtHandle> create();
  LtHandle() = default;
  ~LtHandle();
  LtHandle(LtHandle&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  LtHandle& operator=(LtHandle&& o) noexcept;
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  void* get() const { return h_; }

 private:
  void* h_ = nullptr;
};

}  // namespace ws::flow
