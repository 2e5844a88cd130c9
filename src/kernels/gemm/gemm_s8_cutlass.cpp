// Dispatcher of the CUTLASS sm_90a INT8 GEMM backend (see gemm_s8_cutlass.h). The kernels themselves live in
// cutlass/*.cu (a separate static library compiled for sm_90a with the CUTLASS headers, only when found).
#include "kernels/gemm/gemm_s8_cutlass.h"

#include <string>

#include "cuda/cuda_util.h"
#ifdef WS_HAVE_CUTLASS
#include "kernels/gemm/cutlass/gemm_s8_cutlass_impl.h"
#endif

namespace ws::kernels {

const char* cutlass_schedule_name(CutlassSchedule s) {
  switch (s) {
    case CutlassSchedule::kPingpong128x128: return "pingpong_128x128x128_c2x1";
    case CutlassSchedule::kCoop256x128: return "coop_256x128x128_c2x1";
  }
  return "?";
}

bool gemm_s8_cutlass_built() {
#ifdef WS_HAVE_CUTLASS
  return true;
#else
  return false;
#endif
}

struct CutlassGemmPlan::State {
#ifdef WS_HAVE_CUTLASS
  std::unique_ptr<cutlass_sm90::PlanState> plan;
#endif
  cuda::DeviceBuffer workspace;
};

CutlassGemmPlan::CutlassGemmPlan() = default;
CutlassGemmPlan::~CutlassGemmPlan() = default;
CutlassGemmPlan::CutlassGemmPlan(CutlassGemmPlan&&) noexcept = default;
CutlassGemmPlan& CutlassGemmPlan::operator=(CutlassGemmPlan&&) noexcept = default;

size_t CutlassGemmPlan::workspace_bytes() const { return state_ ? state_->workspace.bytes() : 0; }

Result<CutlassGemmPlan> CutlassGemmPlan::create(CutlassSchedule schedule, DType out_kind, const int8_t* a,
                                                const int8_t* bt, void* out, int m, int n, int k,
                                                const GemmEpilogue& ep, cudaStream_t stream) {
#ifndef WS_HAVE_CUTLASS
  (void)schedule, (void)out_kind, (void)a, (void)bt, (void)out, (void)m, (void)n, (void)k, (void)ep, (void)stream;
  return unsupported("gemm_s8_cutlass: not built (configure with -DWS_CUTLASS_DIR=<cutlass include dir>)");
#else
  if (m < 1 || n < 1 || k < 1) return invalid_argument("gemm_s8_cutlass: M, N, K must be >= 1");
  WS_RETURN_IF_ERROR(check_gemm_out(out_kind));
  if (out_kind != DType::kInt32 && (!ep.row_scale || !ep.col_scale))
    return invalid_argument("gemm_s8_cutlass: fp16/bf16 output needs row_scale and col_scale");
  int dev = 0, major = 0, minor = 0, sm_count = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, dev));
  if (major * 10 + minor != 90) return unsupported("gemm_s8_cutlass: sm_90a kernels need compute capability 9.0");
  const int n_align = out_kind == DType::kInt32 ? 4 : 8;
  auto misaligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) % 16) != 0; };
  if (k % 16 != 0 || n % n_align != 0 || misaligned(a) || misaligned(bt) || misaligned(out))
    return unsupported("gemm_s8_cutlass: TMA needs K % 16 == 0, N % " + std::to_string(n_align) +
                       " == 0 and 16-byte aligned bases");
  using namespace cutlass_sm90;
  const RunArgs r{a, bt, out, m, n, k, ep.row_scale, ep.col_scale, ep.bias, stream, sm_count};
  const bool pp = schedule == CutlassSchedule::kPingpong128x128;
  PlanFn fn = nullptr;
  switch (out_kind) {
    case DType::kInt32: fn = pp ? s32_pingpong_128x128x128 : s32_coop_256x128x128; break;
    case DType::kFloat16: fn = pp ? f16_pingpong_128x128x128 : f16_coop_256x128x128; break;
    case DType::kBFloat16: fn = pp ? bf16_pingpong_128x128x128 : bf16_coop_256x128x128; break;
    default: break;  // refused by check_gemm_out above
  }
  if (!fn) return check_gemm_out(out_kind);
  size_t ws_bytes = 0;
  RunResult res = fn(r, nullptr, &ws_bytes, nullptr);
  if (res == RunResult::kUnsupported) return unsupported("gemm_s8_cutlass: CUTLASS can_implement() refused the shape");
  if (res != RunResult::kOk) return internal_error("gemm_s8_cutlass: CUTLASS planning failed");
  CutlassGemmPlan plan;
  plan.state_ = std::make_unique<State>();
  if (ws_bytes > 0) {
    WS_ASSIGN_OR_RETURN(plan.state_->workspace, cuda::DeviceBuffer::allocate(ws_bytes));
  }
  res = fn(r, plan.state_->workspace.get(), &ws_bytes, &plan.state_->plan);
  if (res != RunResult::kOk || !plan.state_->plan) {
    WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return internal_error("gemm_s8_cutlass: CUTLASS initialize() failed");
  }
  return plan;
#endif
}

Status CutlassGemmPlan::run(cudaStream_t stream) const {
#ifndef WS_HAVE_CUTLASS
  (void)stream;
  return failed_precondition("gemm_s8_cutlass: not built");
#else
  if (!state_ || !state_->plan) return failed_precondition("CutlassGemmPlan::run: empty plan (not created or moved from)");
  if (state_->plan->run(stream) != cutlass_sm90::RunResult::kOk) {
    WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return internal_error("gemm_s8_cutlass: CUTLASS run failed");
  }
  return Status::ok();
#endif
}

Status gemm_s8_cutlass(CutlassSchedule schedule, DType out_kind, const int8_t* a, const int8_t* bt, void* out,
                       int m, int n, int k, const GemmEpilogue& ep, cudaStream_t stream) {
  WS_ASSIGN_OR_RETURN(CutlassGemmPlan plan, CutlassGemmPlan::create(schedule, out_kind, a, bt, out, m, n, k, ep, stream));
  return plan.run(stream);
}

Status gemm_s8_tensor_core(DType out_kind, const int8_t* a, const int8_t* bt, void* out, int m, int n, int k,
                           const GemmEpilogue& ep, cudaStream_t stream) {
  Status st = gemm_s8_cutlass(CutlassSchedule::kPingpong128x128, out_kind, a, bt, out, m, n, k, ep, stream);
  if (st.code() != StatusCode::kUnsupported) return st;
  return gemm_s8_mma(MmaTile::k128x128, out_kind, a, bt, out, m, n, k, ep, stream);
}

}  // namespace ws::kernels
