// cuDNN fused SDPA via cudnn-frontend for the GPU LTX block (see ltx_sdpa_cudnn.h). This is the only translation unit
// that includes the cudnn-frontend headers (cmake/cudnn_frontend.cmake gives it the include path and
// WS_HAVE_CUDNN_FRONTEND); without them it compiles to "not built" stubs.
// Test: tests/gpu/ltx_block_test.cpp (LtxBlock*: the block's attention vs the CPU reference; the test prints which
// SDPA ran at each call site). Time: `warpstream ltx-block --profile` (attn1/attn2 sdpa rows).
#include "flow/models/ltx_sdpa_cudnn.h"

#include <cmath>
#include <unordered_map>
#include <utility>

#ifdef WS_HAVE_CUDNN_FRONTEND
#include <cudnn.h>
#include <cudnn_frontend.h>

#include "cuda/cudnn_fe_status.h"
#endif

namespace ws::flow {

#ifdef WS_HAVE_CUDNN_FRONTEND
namespace fe = cudnn_frontend;

namespace {
enum Uid : int64_t { kQ = 1, kK = 2, kV = 3, kO = 4, kBias = 5 };

Status fe_status(fe::error_t e, const std::string& name, const char* step, bool refusal) {
  return cuda::cudnn_fe_status(e, "cuDNN SDPA '" + name + "'", step, refusal);
}
}  // namespace

struct CudnnSdpa::Impl {
  std::string name;
  SdpaShape shape;
  cudnnHandle_t handle = nullptr;
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
  std::unordered_map<int64_t, void*> pack;
  void* workspace_ptr = nullptr;
  ~Impl() {
    graph.reset();
    if (handle != nullptr) cudnnDestroy(handle);
  }
};

bool cudnn_sdpa_built() { return true; }

Result<std::unique_ptr<CudnnSdpa>> CudnnSdpa::build(const SdpaShape& s, const std::string& name) {
  if (cudnnGetVersion() < 90000)
    return unsupported("cuDNN SDPA '" + name + "': cuDNN " + std::to_string(cudnnGetVersion()) + " < 9.0");
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->shape = s;
  cudnnStatus_t cs = cudnnCreate(&impl->handle);
  if (cs != CUDNN_STATUS_SUCCESS)
    return Status(StatusCode::kCuda, "cuDNN SDPA '" + name + "': cudnnCreate failed: " + cudnnGetErrorString(cs));
  const int64_t b = s.batch, h = s.heads, d = s.head_dim, sq = s.sq, skv = s.skv;
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto q = g->tensor(fe::graph::Tensor_attributes().set_name("Q").set_uid(kQ).set_dim({b, h, sq, d}).set_stride(
      {sq * s.ld_q, d, s.ld_q, 1}));
  auto k = g->tensor(fe::graph::Tensor_attributes().set_name("K").set_uid(kK).set_dim({b, h, skv, d}).set_stride(
      {skv * s.ld_k, d, s.ld_k, 1}));
  auto v = g->tensor(fe::graph::Tensor_attributes().set_name("V").set_uid(kV).set_dim({b, h, skv, d}).set_stride(
      {skv * s.ld_v, d, s.ld_v, 1}));
  const float scale = s.scale > 0.f ? s.scale : 1.f / std::sqrt(static_cast<float>(d));
  auto opts = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(false).set_attn_scale(scale);
  if (s.bias) {
    auto bias = g->tensor(fe::graph::Tensor_attributes()
                              .set_name("bias")
                              .set_uid(kBias)
                              .set_dim({b, 1, 1, skv})
                              .set_stride({skv, skv, skv, 1})
                              .set_data_type(fe::DataType_t::BFLOAT16));
    opts.set_bias(bias);
  }
  auto [o, stats] = g->sdpa(q, k, v, opts);
  (void)stats;
  o->set_output(true).set_uid(kO).set_dim({b, h, sq, d}).set_stride({sq * s.ld_o, d, s.ld_o, 1});
  if (auto e = g->validate(); !e.is_good()) return fe_status(e, name, "validate", true);
  if (auto e = g->build_operation_graph(impl->handle); !e.is_good())
    return fe_status(e, name, "build_operation_graph", true);
  if (auto e = g->create_execution_plans({fe::HeurMode_t::A}); !e.is_good())
    return fe_status(e, name, "create_execution_plans", true);
  if (auto e = g->check_support(impl->handle); !e.is_good()) return fe_status(e, name, "check_support", true);
  if (auto e = g->build_plans(impl->handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE); !e.is_good())
    return fe_status(e, name, "build_plans", true);
  if (auto e = g->get_workspace_size(impl->workspace); !e.is_good())
    return fe_status(e, name, "get_workspace_size", false);
  impl->graph = std::move(g);
  return std::unique_ptr<CudnnSdpa>(new CudnnSdpa(std::move(impl)));
}

Status CudnnSdpa::bind(const void* q, const void* k, const void* v, void* o, const void* bias, void* workspace) {
  if (q == nullptr || k == nullptr || v == nullptr || o == nullptr || (impl_->shape.bias && bias == nullptr) ||
      (impl_->workspace > 0 && workspace == nullptr))
    return invalid_argument("cuDNN SDPA '" + impl_->name + "': bind got a null pointer (q/k/v/o" +
                            std::string(impl_->shape.bias ? "/bias" : "") + "/workspace)");
  impl_->pack = {{kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)}, {kO, o}};
  if (impl_->shape.bias) impl_->pack[kBias] = const_cast<void*>(bias);
  impl_->workspace_ptr = workspace;
  return Status::ok();
}

Status CudnnSdpa::enqueue(cudaStream_t stream) {
  if (impl_->pack.empty()) return failed_precondition("cuDNN SDPA '" + impl_->name + "': enqueue before bind");
  cudnnStatus_t cs = cudnnSetStream(impl_->handle, stream);
  if (cs != CUDNN_STATUS_SUCCESS)
    return Status(StatusCode::kCuda, "cuDNN SDPA '" + impl_->name + "': cudnnSetStream failed: " +
                                         cudnnGetErrorString(cs));
  if (auto e = impl_->graph->execute(impl_->handle, impl_->pack, impl_->workspace_ptr); !e.is_good())
    return fe_status(e, impl_->name, "execute", false);
  return Status::ok();
}

int64_t CudnnSdpa::workspace_bytes() const { return impl_->workspace; }

#else  // !WS_HAVE_CUDNN_FRONTEND

struct CudnnSdpa::Impl {};

bool cudnn_sdpa_built() { return false; }

Result<std::unique_ptr<CudnnSdpa>> CudnnSdpa::build(const SdpaShape&, const std::string& name) {
  return unsupported("cuDNN SDPA '" + name + "': not built (no cudnn-frontend headers; run "
                     "scripts/fetch-cudnn-frontend.sh and reconfigure)");
}
Status CudnnSdpa::bind(const void*, const void*, const void*, void*, const void*, void*) {
  return unsupported("cuDNN SDPA: not built");
}
Status CudnnSdpa::enqueue(cudaStream_t) { return unsupported("cuDNN SDPA: not built"); }
int64_t CudnnSdpa::workspace_bytes() const { return 0; }

#endif

CudnnSdpa::CudnnSdpa(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudnnSdpa::~CudnnSdpa() = default;

}  // namespace ws::flow
