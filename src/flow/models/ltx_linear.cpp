// cuBLASLt linear layers of the GPU LTX block (see ltx_linear.h for the layout mapping and formats).
// Test: tests/gpu/ltx_block_test.cpp (every linear of the block vs the CPU reference through the block's
// intermediates; fp8 vs bf16 cosine). Time: `warpstream ltx-block --profile` (one row per linear).
#include "flow/models/ltx_linear.h"

#include <cublasLt.h>
#include <cuda_bf16.h>

#include <climits>
#include <cstdint>
#include <string>
#include <utility>

#include "flow/models/ltx_block_kernels.h"
#include "kernels/gemm/gemm_s8.h"
#include "kernels/transformer/transformer.h"

namespace ws::flow {
namespace {

Status lt_status(cublasStatus_t s, const std::string& name, const char* call) {
  return Status(StatusCode::kCuda, "cuBLASLt linear '" + name + "': " + call + " failed: " +
                                       cublasLtGetStatusName(s) + " (" + cublasLtGetStatusString(s) + ")");
}

#define WS_LT_CHECK(call, name)                                   \
  do {                                                            \
    cublasStatus_t ws_lt_s_ = (call);                             \
    if (ws_lt_s_ != CUBLAS_STATUS_SUCCESS) return lt_status(ws_lt_s_, name, #call); \
  } while (0)

}  // namespace

struct LtLinear::Impl {
  std::string name;
  LinearShape shape;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;
  bool outer_vec = false;  // kFP8: scales applied by cuBLASLt (else by scale_bias_act)
  LinearBinding bound;
  void* workspace = nullptr;
  bool is_bound = false;
  ~Impl() { release(); }
  void release() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
    a = b = d = nullptr;
    desc = nullptr;
  }
  // Creates descriptors for `fp8_outer_vec` (kFP8 only) and asks for the heuristic's first algorithm.
  // Returns kUnsupported when the heuristic has none.
  Status plan(bool fp8_outer_vec) {
    release();
    const bool fp8 = shape.format == LinearFormat::kFP8;
    const int64_t ldx = shape.ldx ? shape.ldx : shape.k, ldy = shape.ldy ? shape.ldy : shape.n;
    WS_LT_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), name);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    WS_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), name);
    WS_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), name);
    const bool fused_epilogue = !fp8 || fp8_outer_vec;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (fused_epilogue && shape.epilogue == LinearEpilogue::kBias) epi = CUBLASLT_EPILOGUE_BIAS;
    // CUBLASLT_EPILOGUE_GELU_BIAS: bias, then GELU in its tanh approximation (the form PyTorch's
    // _addmm_activation(use_gelu=True) and XLA's "approximate GELU" cublasLt fusion rely on).
    if (fused_epilogue && shape.epilogue == LinearEpilogue::kBiasGeluTanh) epi = CUBLASLT_EPILOGUE_GELU_BIAS;
    WS_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), name);
    if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
      const cudaDataType_t bias_type = CUDA_R_16BF;
      WS_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                 sizeof(bias_type)), name);
    }
    if (fp8) {
      const int8_t fast = 1;
      WS_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)), name);
      if (fp8_outer_vec) {
        const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        WS_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)), name);
        WS_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)), name);
      }
    }
    const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    // A = W: col-major K x N (ld K); B = X: col-major K x M (ld ldx; fp8 X is the dense quantized copy);
    // D = Y^T: col-major N x M (ld ldy).
    WS_LT_CHECK(cublasLtMatrixLayoutCreate(&a, in_type, shape.k, shape.n, shape.k), name);
    WS_LT_CHECK(cublasLtMatrixLayoutCreate(&b, in_type, shape.k, shape.m, fp8 ? shape.k : ldx), name);
    WS_LT_CHECK(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, shape.n, shape.m, ldy), name);
    cublasLtMatmulPreference_t pref = nullptr;
    WS_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref), name);
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &workspace_bytes, sizeof(workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, d, d, pref, 1, &result, &count);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && count == 0))
      return unsupported("cuBLASLt linear '" + name + "': no algorithm for M " + std::to_string(shape.m) + ", N " +
                         std::to_string(shape.n) + ", K " + std::to_string(shape.k) +
                         (fp8 ? (fp8_outer_vec ? " (fp8 e4m3, outer-vector scales)" : " (fp8 e4m3)") : " (bf16)"));
    if (s != CUBLAS_STATUS_SUCCESS) return lt_status(s, name, "cublasLtMatmulAlgoGetHeuristic");
    algo = result.algo;
    outer_vec = fp8 && fp8_outer_vec;
    return Status::ok();
  }
};

Result<std::unique_ptr<LtLinear>> LtLinear::build(void* lt_handle, const LinearShape& shape, size_t workspace_bytes,
                                                  const std::string& name) {
  if (lt_handle == nullptr) return invalid_argument("cuBLASLt linear '" + name + "': null cuBLASLt handle");
  if (shape.m < 1 || shape.n < 1 || shape.k < 1 || (shape.ldx && shape.ldx < shape.k) ||
      (shape.ldy && shape.ldy < shape.n))
    return invalid_argument("cuBLASLt linear '" + name + "': M " + std::to_string(shape.m) + ", N " +
                            std::to_string(shape.n) + ", K " + std::to_string(shape.k) + ", ldx " +
                            std::to_string(shape.ldx) + ", ldy " + std::to_string(shape.ldy));
  if (shape.format == LinearFormat::kFP8 && (shape.k % 16 != 0 || shape.n % 16 != 0))
    return unsupported("cuBLASLt linear '" + name + "': fp8 needs K and N multiples of 16 (K " +
                       std::to_string(shape.k) + ", N " + std::to_string(shape.n) + ")");
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->shape = shape;
  impl->handle = static_cast<cublasLtHandle_t>(lt_handle);
  impl->workspace_bytes = workspace_bytes;
  if (shape.format == LinearFormat::kINT8) {
    if ((shape.ldy && shape.ldy != shape.n) || shape.m > INT32_MAX || shape.n > INT32_MAX || shape.k > INT32_MAX)
      return unsupported("INT8 linear '" + name + "': needs a dense output (ldy = N) and M, N, K < 2^31");
    impl->workspace_bytes = 0;
    return std::unique_ptr<LtLinear>(new LtLinear(std::move(impl)));
  }
  if (shape.format == LinearFormat::kFP8) {
    // Outer-vector (per-channel x per-token) scales in cuBLASLt's epilogue where this cuBLASLt/GPU offers them;
    // any refusal (the H200 with CUDA 13.0's cuBLASLt answers the heuristic with CUBLAS_STATUS_INVALID_VALUE)
    // falls back to an unscaled fp8 GEMM + our scale/bias/activation kernel.
    Status st = impl->plan(/*fp8_outer_vec=*/true);
    if (!st.is_ok()) st = impl->plan(false);
    WS_RETURN_IF_ERROR(st);
  } else {
    WS_RETURN_IF_ERROR(impl->plan(false));
  }
  return std::unique_ptr<LtLinear>(new LtLinear(std::move(impl)));
}

Status LtLinear::bind(const LinearBinding& bnd, void* workspace) {
  Impl& I = *impl_;
  const bool needs_bias = I.shape.epilogue != LinearEpilogue::kNone;
  if (I.shape.format == LinearFormat::kINT8) {
    if (bnd.x == nullptr || bnd.w == nullptr || bnd.y == nullptr || bnd.w_scale == nullptr || bnd.x_scale == nullptr ||
        (needs_bias && bnd.bias_f32 == nullptr))
      return invalid_argument("INT8 linear '" + I.name + "': bind got a null pointer (x, w, y, w_scale, x_scale" +
                              std::string(needs_bias ? ", bias_f32)" : ")"));
    I.bound = bnd;
    I.is_bound = true;
    return Status::ok();
  }
  const bool fp8 = I.shape.format == LinearFormat::kFP8;
  if (bnd.x == nullptr || bnd.w == nullptr || bnd.y == nullptr || (needs_bias && bnd.bias == nullptr) ||
      (fp8 && (bnd.w_scale == nullptr || bnd.x_scale == nullptr)) || (I.workspace_bytes > 0 && workspace == nullptr))
    return invalid_argument("cuBLASLt linear '" + I.name + "': bind got a null pointer (x, w, y" +
                            std::string(needs_bias ? ", bias" : "") + (fp8 ? ", w_scale, x_scale" : "") +
                            ", workspace)");
  if (needs_bias && (!fp8 || I.outer_vec))
    WS_LT_CHECK(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bnd.bias, sizeof(bnd.bias)),
                I.name);
  if (I.outer_vec) {
    // cuBLAS A = weights (rows = output channels), cuBLAS B = activations (columns = tokens).
    WS_LT_CHECK(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &bnd.w_scale,
                                               sizeof(bnd.w_scale)), I.name);
    WS_LT_CHECK(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bnd.x_scale,
                                               sizeof(bnd.x_scale)), I.name);
  }
  I.bound = bnd;
  I.workspace = workspace;
  I.is_bound = true;
  return Status::ok();
}

Status LtLinear::enqueue(cudaStream_t stream) {
  Impl& I = *impl_;
  if (!I.is_bound) return failed_precondition("cuBLASLt linear '" + I.name + "': enqueue before bind");
  if (I.shape.format == LinearFormat::kINT8) {
    kernels::GemmEpilogue epi;
    epi.row_scale = I.bound.x_scale;
    epi.col_scale = I.bound.w_scale;
    epi.bias = I.shape.epilogue == LinearEpilogue::kNone ? nullptr : I.bound.bias_f32;
    Status st = kernels::gemm_s8_mma(kernels::MmaTile::k128x128, DType::kBFloat16,
                                     static_cast<const int8_t*>(I.bound.x), static_cast<const int8_t*>(I.bound.w),
                                     I.bound.y, (int)I.shape.m, (int)I.shape.n, (int)I.shape.k, epi, stream);
    if (!st.is_ok()) return Status(st.code(), "INT8 linear '" + I.name + "': " + st.message());
    if (I.shape.epilogue == LinearEpilogue::kBiasGeluTanh) {
      auto* y = static_cast<__nv_bfloat16*>(I.bound.y);
      WS_RETURN_IF_ERROR(kernels::bias_gelu_tanh(y, y, nullptr, I.shape.m, I.shape.n, stream));
    }
    return Status::ok();
  }
  const float alpha = 1.f, beta = 0.f;
  WS_LT_CHECK(cublasLtMatmul(I.handle, I.desc, &alpha, I.bound.w, I.a, I.bound.x, I.b, &beta, I.bound.y, I.d,
                             I.bound.y, I.d, &I.algo, I.workspace, I.workspace_bytes, stream),
              I.name);
  if (I.shape.format == LinearFormat::kFP8 && !I.outer_vec) {
    const int64_t ldy = I.shape.ldy ? I.shape.ldy : I.shape.n;
    if (ldy != I.shape.n)
      return unsupported("cuBLASLt linear '" + I.name + "': follow-up fp8 scaling needs a dense output");
    WS_RETURN_IF_ERROR(ltx::scale_bias_act(I.bound.y, I.bound.x_scale, I.bound.w_scale,
                                           I.shape.epilogue == LinearEpilogue::kNone ? nullptr : I.bound.bias,
                                           I.shape.epilogue == LinearEpilogue::kBiasGeluTanh, (int)I.shape.m,
                                           (int)I.shape.n, stream));
  }
  return Status::ok();
}

std::string LtLinear::scaling_mode() const {
  if (impl_->shape.format == LinearFormat::kINT8)
    return "int8: gemm_s8_mma (mma.sync 128x128) dequant epilogue (per token x per channel + bias)";
  if (impl_->shape.format != LinearFormat::kFP8) return "bf16";
  return impl_->outer_vec ? "fp8: cuBLASLt outer-vector scales (per channel x per token)"
                          : "fp8: follow-up scaling kernel (per channel x per token)";
}
const LinearShape& LtLinear::shape() const { return impl_->shape; }

LtLinear::LtLinear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LtLinear::~LtLinear() = default;

Result<LtHandle> LtHandle::create() {
  cublasLtHandle_t h = nullptr;
  cublasStatus_t s = cublasLtCreate(&h);
  if (s != CUBLAS_STATUS_SUCCESS) return lt_status(s, "handle", "cublasLtCreate");
  LtHandle out;
  out.h_ = h;
  return out;
}
LtHandle::~LtHandle() {
  if (h_) cublasLtDestroy(static_cast<cublasLtHandle_t>(h_));
}
LtHandle& LtHandle::operator=(LtHandle&& o) noexcept {
  if (this != &o) {
    if (h_) cublasLtDestroy(static_cast<cublasLtHandle_t>(h_));
    h_ = o.h_;
    o.h_ = nullptr;
  }
  return *this;
}

}  // namespace ws::flow
