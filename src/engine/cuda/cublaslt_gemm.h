#pragma once
/// \file cublaslt_gemm.h
/// One Gemm / MatMul through cuBLASLt: the matmul descriptor, the three layouts (row-major Y = op(A)·op(B)
/// expressed column-major with the operands swapped), the chosen heuristic algorithm and its workspace,
/// alpha/beta, and the constant operands uploaded at build. Built and timed by ops/gemm.cpp; run() only
/// enqueues (the workspace is the context's shared one).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "engine/cuda/cuda_ops.h"

namespace ws::cudaexec {

struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, cd = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t ws = 0;
  float alpha = 1, beta = 0;
  const void* weight = nullptr;  // constant B (nullptr: runtime input 1)
  const void* cmat = nullptr;    // constant C broadcast to [M, N] (nullptr: none or runtime input 2)
  bool c_runtime = false;
  ~GemmPlan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (cd) cublasLtMatrixLayoutDestroy(cd);
  }
  // Row-major Y[M,N] = op(A)·op(B) is column-major Yᵀ[N,M] = op(B)ᵀ·op(A)ᵀ: cuBLASLt's A is our B.
  Status run(cublasLtHandle_t h, const void* x, const void* w, const void* c, void* y, void* wsp, cudaStream_t st) const {
    const void* cptr = c ? c : y;
    WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(h, op, &alpha, w, a, x, b, c ? &beta : &kZero, cptr, cd, y, cd, &algo, wsp, ws, st));
    return Status::ok();
  }
  static constexpr float kZero = 0.0f;
};

}  // namespace ws::cudaexec
