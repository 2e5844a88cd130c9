#pragma once
/// \file gemm_s8_cublas.h
/// cuBLAS / cuBLASLt INT8 baselines for the GEMM campaigns (host-only header).
///  - gemm_ex: the seed's baseline, cublasGemmEx(INT8 in, INT32 compute and out, alpha 1, beta 0) computing
///    C^T = B^T * A^T over row-major A[M,K], B[K,N], C[M,N] viewed as column-major (OP_N, OP_N).
///  - LtGemmS8: cuBLASLt INT8 in the "TN" layout its tensor-core kernels want: A[M,K] and Bt[N,K] both
///    K-contiguous (row-major C = A * Bt^T, computed as C^T = op_T(Bt) * A^T), INT32 out; the fastest of
///    up to 16 heuristic algorithms, chosen by timing (median of 5 after 2 warm-ups) at plan time.

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "warpstream/status.h"

namespace ws::kernels {

class CublasS8 {
 public:
  static Result<std::unique_ptr<CublasS8>> create();
  ~CublasS8();
  /// C[M,N] = A[M,K] x B[K,N] (row-major int8 -> int32) via cublasGemmEx.
  Status gemm_ex(const int8_t* a, const int8_t* b, int32_t* c, int m, int n, int k, cudaStream_t stream);

  /// Plans and times the cuBLASLt algorithms for one shape; afterwards lt_run() replays the winner.
  /// `description` receives e.g. "algo 21 tile 256x128 stages 3 (of 8 candidates)".
  Status lt_plan(const int8_t* a, const int8_t* bt, int32_t* c, int m, int n, int k, cudaStream_t stream,
                 std::string* description);
  Status lt_run(const int8_t* a, const int8_t* bt, int32_t* c, cudaStream_t stream);

 private:
  CublasS8() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws::kernels
