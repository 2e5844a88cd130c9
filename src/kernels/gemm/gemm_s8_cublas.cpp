// cuBLAS / cuBLASLt INT8 baselines; see gemm_s8_cublas.h.
#include "kernels/gemm/gemm_s8_cublas.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <vector>

#include "cuda/cuda_util.h"

namespace ws::kernels {
namespace {
Status blas_status(cublasStatus_t s, const char* what) {
  return Status(StatusCode::kCuda, std::string(what) + " failed: cuBLAS status " + std::to_string(int(s)) + " (" +
                                       cublasGetStatusString(s) + ")");
}
}  // namespace

#define WS_CUBLAS_RETURN_IF_ERROR(call)                                \
  do {                                                                 \
    cublasStatus_t ws_blas_st_ = (call);                               \
    if (ws_blas_st_ != CUBLAS_STATUS_SUCCESS) return blas_status(ws_blas_st_, #call); \
  } while (0)

struct CublasS8::Impl {
  cublasHandle_t handle = nullptr;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool planned = false;
  cuda::DeviceBuffer workspace;
  size_t workspace_bytes = 32u << 20;
  void release_plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    desc = nullptr;
    la = lb = lc = nullptr;
    planned = false;
  }
  ~Impl() {
    release_plan();
    if (lt) cublasLtDestroy(lt);
    if (handle) cublasDestroy(handle);
  }
};

Result<std::unique_ptr<CublasS8>> CublasS8::create() {
  std::unique_ptr<CublasS8> p(new CublasS8());
  p->impl_ = std::make_unique<Impl>();
  WS_CUBLAS_RETURN_IF_ERROR(cublasCreate(&p->impl_->handle));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&p->impl_->lt));
  WS_ASSIGN_OR_RETURN(p->impl_->workspace, cuda::DeviceBuffer::allocate(p->impl_->workspace_bytes));
  return p;
}

CublasS8::~CublasS8() = default;

Status CublasS8::gemm_ex(const int8_t* a, const int8_t* b, int32_t* c, int m, int n, int k, cudaStream_t stream) {
  const int32_t alpha = 1, beta = 0;
  WS_CUBLAS_RETURN_IF_ERROR(cublasSetStream(impl_->handle, stream));
  // Column-major view: C^T[N,M] = B^T[N,K] * A^T[K,M]; lda(B^T) = N, ldb(A^T) = K, ldc = N.
  WS_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(impl_->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_8I, n, a,
                                         CUDA_R_8I, k, &beta, c, CUDA_R_32I, n, CUBLAS_COMPUTE_32I,
                                         CUBLAS_GEMM_DEFAULT));
  return Status::ok();
}

Status CublasS8::lt_plan(const int8_t* a, const int8_t* bt, int32_t* c, int m, int n, int k, cudaStream_t stream,
                         std::string* description) {
  Impl& d = *impl_;
  d.release_plan();
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&d.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
  // Column-major: A' = Bt buffer as [K,N] ld K (op T -> [N,K]); B' = A buffer as [K,M] ld K; C' = [N,M] ld N.
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&d.la, CUDA_R_8I, k, n, k));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&d.lb, CUDA_R_8I, k, m, k));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&d.lc, CUDA_R_32I, n, m, n));
  cublasLtMatmulPreference_t pref = nullptr;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &d.workspace_bytes,
                                       sizeof(d.workspace_bytes));
  std::vector<cublasLtMatmulHeuristicResult_t> res(16);
  int found = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(d.lt, d.desc, d.la, d.lb, d.lc, d.lc, pref, int(res.size()),
                                                     res.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS) return blas_status(hs, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) return unsupported("cuBLASLt: no INT8 algorithm for this shape");
  WS_ASSIGN_OR_RETURN(auto e0, cuda::Event::create());
  WS_ASSIGN_OR_RETURN(auto e1, cuda::Event::create());
  const int32_t alpha = 1, beta = 0;
  float best = 1e30f;
  int best_i = -1;
  for (int i = 0; i < found; ++i) {
    if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
    std::vector<float> t;
    bool ok = true;
    for (int r = 0; r < 7 && ok; ++r) {
      cudaEventRecord(e0.get(), stream);
      ok = cublasLtMatmul(d.lt, d.desc, &alpha, bt, d.la, a, d.lb, &beta, c, d.lc, c, d.lc, &res[i].algo,
                          d.workspace.get(), d.workspace_bytes, stream) == CUBLAS_STATUS_SUCCESS;
      cudaEventRecord(e1.get(), stream);
      WS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(e1.get()));
      float ms = 0;
      cudaEventElapsedTime(&ms, e0.get(), e1.get());
      if (r >= 2) t.push_back(ms);
    }
    if (!ok) continue;
    std::sort(t.begin(), t.end());
    if (t[t.size() / 2] < best) {
      best = t[t.size() / 2];
      best_i = i;
    }
  }
  if (best_i < 0) return unsupported("cuBLASLt: every heuristic INT8 algorithm failed to run");
  d.algo = res[best_i].algo;
  d.planned = true;
  if (description) {
    int algo_id = -1, tile = -1, stages = -1;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&d.algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof(algo_id), &w);
    cublasLtMatmulAlgoConfigGetAttribute(&d.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
    cublasLtMatmulAlgoConfigGetAttribute(&d.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &w);
    *description = "TN (A K-major, Bt K-major), int32 out; algo id " + std::to_string(algo_id) + " tile id " +
                   std::to_string(tile) + " stages id " + std::to_string(stages) + ", heuristic rank " +
                   std::to_string(best_i) + " of " + std::to_string(found);
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status CublasS8::lt_run(const int8_t* a, const int8_t* bt, int32_t* c, cudaStream_t stream) {
  Impl& d = *impl_;
  if (!d.planned) return failed_precondition("cuBLASLt: lt_run before lt_plan");
  const int32_t alpha = 1, beta = 0;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(d.lt, d.desc, &alpha, bt, d.la, a, d.lb, &beta, c, d.lc, c, d.lc, &d.algo,
                                           d.workspace.get(), d.workspace_bytes, stream));
  return Status::ok();
}

}  // namespace ws::kernels
