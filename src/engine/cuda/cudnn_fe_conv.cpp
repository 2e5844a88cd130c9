// One NHWC fp16 conv + bias (+ residual) (+ ReLU) as a cuDNN graph with every engine configuration built as a
// tactic (see cudnn_fe_conv.h). The only translation unit of ws_engine_cuda that includes the cudnn-frontend
// headers (cmake/cudnn_frontend.cmake gives it the include path and WS_HAVE_CUDNN_FRONTEND); without them it
// compiles to "not built" stubs.
// Test: tests/gpu/cuda_engine_test.cpp (CudaEngineFeConv*). Time: `warpstream bench` (each conv's tactic line names
// the chosen engine and, for a graph engine, the legacy algorithm's time it beat).
#include "engine/cuda/cudnn_fe_conv.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#ifdef WS_HAVE_CUDNN_FRONTEND
#include <cudnn_frontend.h>

#include "cuda/cudnn_fe_status.h"
#endif

namespace ws::cudaexec {

#ifdef WS_HAVE_CUDNN_FRONTEND
namespace fe = cudnn_frontend;

namespace {
// Variant-pack uids, in the order run() passes pointers (execute_plan_at_index's sorted form wants them ascending).
enum Uid : int64_t { kX = 1, kW = 2, kBias = 3, kZ = 4, kY = 5 };

Status fe_status(fe::error_t e, const std::string& name, const char* step, bool refusal) {
  return cuda::cudnn_fe_status(e, "cuDNN graph conv '" + name + "'", step, refusal);
}

std::shared_ptr<fe::graph::Graph> make_graph(const FeConvShape& s) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  using TA = fe::graph::Tensor_attributes;
  // NHWC / KRSC expressed as cuDNN's logical NCHW / KCRS dims with channels-last strides.
  auto x = g->tensor(TA().set_name("x").set_uid(kX).set_dim({s.n, s.c, s.h, s.w}).set_stride({s.h * s.w * s.c, 1, s.w * s.c, s.c}));
  auto w = g->tensor(TA().set_name("w").set_uid(kW).set_dim({s.k, s.c, s.r, s.s}).set_stride({s.r * s.s * s.c, 1, s.s * s.c, s.c}));
  auto conv = g->conv_fprop(x, w, fe::graph::Conv_fprop_attributes()
                                      .set_name("conv")
                                      .set_padding({s.pad_h, s.pad_w})
                                      .set_stride({s.stride_h, s.stride_w})
                                      .set_dilation({s.dil_h, s.dil_w}));
  auto bias = g->tensor(TA().set_name("bias").set_uid(kBias).set_dim({1, s.k, 1, 1}).set_stride({s.k, 1, s.k, s.k}));
  auto y = g->pointwise(conv, bias, fe::graph::Pointwise_attributes().set_name("bias").set_mode(fe::PointwiseMode_t::ADD));
  const std::vector<int64_t> ydim = {s.n, s.k, s.out_h, s.out_w};
  const std::vector<int64_t> ystride = {s.out_h * s.out_w * s.k, 1, s.out_w * s.k, s.k};
  if (s.residual) {
    auto z = g->tensor(TA().set_name("z").set_uid(kZ).set_dim(ydim).set_stride(ystride));
    y = g->pointwise(y, z, fe::graph::Pointwise_attributes().set_name("residual").set_mode(fe::PointwiseMode_t::ADD));
  }
  if (s.relu) y = g->pointwise(y, fe::graph::Pointwise_attributes().set_name("relu").set_mode(fe::PointwiseMode_t::RELU_FWD));
  y->set_output(true).set_uid(kY).set_dim(ydim).set_stride(ystride).set_data_type(fe::DataType_t::HALF);
  return g;
}

// The graph with cuDNN's heuristic list of engine configurations, filtered as build() and prepare() both need it.
Result<std::shared_ptr<fe::graph::Graph>> heuristics_graph(cudnnHandle_t handle, const FeConvShape& s, const std::string& name,
                                                           int64_t max_workspace) {
  auto g = make_graph(s);
  if (auto e = g->validate(); !e.is_good()) return fe_status(e, name, "validate", true);
  if (auto e = g->build_operation_graph(handle); !e.is_good()) return fe_status(e, name, "build_operation_graph", true);
  if (auto e = g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}); !e.is_good())
    return fe_status(e, name, "create_execution_plans", true);
  // Bitwise-reproducible replay and fp32 reductions, as the legacy path's pass 0 demands.
  g->deselect_numeric_notes({fe::NumericalNote_t::NONDETERMINISTIC, fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION});
  g->deselect_workspace_greater_than(max_workspace);
  return g;
}
}  // namespace

// One context's own copy of a chosen plan (FeConv::prepare).
struct PerHandlePlan {
  cudnnHandle_t handle = nullptr;
  int plan = -1;
  std::shared_ptr<fe::graph::Graph> graph;
};

struct FeConv::Impl {
  std::string name;
  FeConvShape shape;
  std::shared_ptr<fe::graph::Graph> graph;
  cudnnHandle_t builder = nullptr;  // the handle build() built `graph`'s plans with
  int64_t max_workspace = 0;
  std::vector<std::string> tags;    // cuDNN's engine name per built plan (names without the runtime-compiled mark)
  mutable std::mutex mu;  // guards per_handle (run() may be called from several host threads, one per context)
  mutable std::vector<std::weak_ptr<const PerHandlePlan>> per_handle;
  std::vector<int64_t> index;      // built plan i -> the graph's plan index
  std::vector<int64_t> workspace;  // bytes per built plan
  std::vector<std::string> names;
};

bool cudnn_fe_conv_built() { return true; }
int cudnn_fe_version() { return CUDNN_FRONTEND_VERSION; }

Result<std::unique_ptr<FeConv>> FeConv::build(cudnnHandle_t handle, const FeConvShape& s, const std::string& name, int max_plans,
                                              int max_rtc_plans, int64_t max_workspace, int64_t only_graph_index) {
  if (s.n < 1 || s.c < 1 || s.h < 1 || s.w < 1 || s.k < 1 || s.r < 1 || s.s < 1 || s.stride_h < 1 || s.stride_w < 1 || s.dil_h < 1 ||
      s.dil_w < 1 || s.pad_h < 0 || s.pad_w < 0 || s.out_h < 1 || s.out_w < 1 || max_plans < 0 || max_rtc_plans < 0 ||
      max_plans + max_rtc_plans < 1)
    return invalid_argument("cuDNN graph conv '" + name + "': non-positive extent, stride, dilation or plan limit, or a negative pad");
  if (handle == nullptr) return invalid_argument("cuDNN graph conv '" + name + "': null cuDNN handle");
  if (cudnnGetVersion() < 90000)
    return unsupported("cuDNN graph conv '" + name + "': cuDNN " + std::to_string(cudnnGetVersion()) + " < 9.0");
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->shape = s;
  impl->max_workspace = max_workspace;
  impl->builder = handle;
  WS_ASSIGN_OR_RETURN(auto g, heuristics_graph(handle, s, name, max_workspace));
  // In heuristic order: up to max_plans precompiled engines and up to max_rtc_plans runtime-compiled ones (NVRTC at
  // build: ~0.1-0.5 s each, so they are capped separately). On ResNet-50's residual 1x1 convs a runtime-compiled engine
  // won (2.9 against 4.1 us for the legacy fused call; device run 69).
  std::string why;
  int precompiled = 0, rtc_built = 0;
  const int64_t count = g->get_execution_plan_count();
  for (int64_t i = 0; i < count; ++i) {
    if (only_graph_index >= 0 && i != only_graph_index) continue;
    std::vector<fe::BehaviorNote_t> notes;
    const bool rtc = g->get_behavior_notes_for_plan_at_index(i, notes).is_good() &&
                     std::find(notes.begin(), notes.end(), fe::BehaviorNote_t::RUNTIME_COMPILATION) != notes.end();
    if (only_graph_index < 0 && (rtc ? rtc_built >= max_rtc_plans : precompiled >= max_plans)) continue;
    std::string tag;  // named before building: modes A and FALLBACK overlap, and a duplicate costs a runtime compile
    if (!g->get_plan_name_at_index(i, tag).is_good()) tag = "plan" + std::to_string(i);
    if (std::find(impl->tags.begin(), impl->tags.end(), tag) != impl->tags.end()) continue;
    if (auto e = g->build_plan_at_index(i); !e.is_good()) {
      if (why.empty()) why = e.get_message();
      continue;
    }
    int64_t ws = 0;
    if (!g->get_workspace_size_plan_at_index(i, ws).is_good() || ws > max_workspace) continue;
    (rtc ? rtc_built : precompiled) += 1;
    impl->index.push_back(i);
    impl->workspace.push_back(ws);
    impl->tags.push_back(tag);
    impl->names.push_back(tag + (rtc ? " (runtime-compiled)" : ""));
  }
  if (impl->index.empty())
    return unsupported("cuDNN graph conv '" + name + "': no deterministic engine configuration within " + std::to_string(max_workspace) +
                       " workspace bytes built" + (only_graph_index >= 0 ? " at heuristic index " + std::to_string(only_graph_index) : "") +
                       (why.empty() ? std::string() : " (first refusal: " + why + ")"));
  impl->graph = std::move(g);
  return std::unique_ptr<FeConv>(new FeConv(std::move(impl)));
}

int FeConv::plan_count() const { return static_cast<int>(impl_->index.size()); }

int64_t FeConv::graph_index(int i) const { return i >= 0 && i < plan_count() ? impl_->index[static_cast<size_t>(i)] : -1; }

int64_t FeConv::workspace_bytes(int i) const {
  return i >= 0 && i < plan_count() ? impl_->workspace[static_cast<size_t>(i)] : 0;
}

std::string FeConv::plan_name(int i) const { return i >= 0 && i < plan_count() ? impl_->names[static_cast<size_t>(i)] : std::string(); }

Result<std::shared_ptr<const void>> FeConv::prepare(cudnnHandle_t handle, int i) const {
  if (i < 0 || i >= plan_count() || handle == nullptr)
    return invalid_argument("cuDNN graph conv '" + impl_->name + "': prepare(plan " + std::to_string(i) + " of " + std::to_string(plan_count()) +
                            (handle == nullptr ? ", null handle)" : ")"));
  const int64_t index = impl_->index[static_cast<size_t>(i)];
  WS_ASSIGN_OR_RETURN(auto g, heuristics_graph(handle, impl_->shape, impl_->name, impl_->max_workspace));
  if (auto e = g->build_plan_at_index(index); !e.is_good()) return fe_status(e, impl_->name, "build_plan_at_index (per context)", true);
  std::string tag;
  if (!g->get_plan_name_at_index(index, tag).is_good() || tag != impl_->tags[static_cast<size_t>(i)])
    return unsupported("cuDNN graph conv '" + impl_->name + "': heuristic index " + std::to_string(index) + " is '" + tag + "' for this handle, not '" +
                       impl_->tags[static_cast<size_t>(i)] + "'");
  auto plan = std::make_shared<const PerHandlePlan>(PerHandlePlan{handle, i, std::move(g)});
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::erase_if(impl_->per_handle, [](const std::weak_ptr<const PerHandlePlan>& w) { return w.expired(); });
  impl_->per_handle.push_back(plan);
  return std::shared_ptr<const void>(plan);
}

Status FeConv::run(cudnnHandle_t handle, int i, const void* x, const void* w, const void* bias, const void* z, void* y, void* workspace,
                   cudaStream_t stream) const {
  if (i < 0 || i >= plan_count())
    return invalid_argument("cuDNN graph conv '" + impl_->name + "': plan " + std::to_string(i) + " of " + std::to_string(plan_count()));
  // Which operand is wrong, named; cuDNN's engines assume 16-byte aligned operands and do not check them.
  const char* bad = handle == nullptr ? "handle is null"
                    : x == nullptr    ? "x is null"
                    : w == nullptr    ? "w is null"
                    : bias == nullptr ? "bias is null"
                    : y == nullptr    ? "y is null"
                    : impl_->shape.residual && z == nullptr  ? "the graph has a residual but z is null"
                    : !impl_->shape.residual && z != nullptr ? "z given but the graph has no residual"
                    : impl_->workspace[static_cast<size_t>(i)] > 0 && workspace == nullptr ? "workspace is null"
                                                                                            : nullptr;
  const auto misaligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 != 0; };
  if (bad == nullptr)
    bad = misaligned(x) ? "x is not 16-byte aligned" : misaligned(w) ? "w is not 16-byte aligned" : misaligned(bias) ? "bias is not 16-byte aligned"
          : misaligned(z) ? "z is not 16-byte aligned" : misaligned(y) ? "y is not 16-byte aligned" : misaligned(workspace) ? "workspace is not 16-byte aligned"
                                                                                                                        : nullptr;
  if (bad != nullptr) return invalid_argument("cuDNN graph conv '" + impl_->name + "': " + bad);
  const cudnnStatus_t cs = cudnnSetStream(handle, stream);
  if (cs != CUDNN_STATUS_SUCCESS)
    return Status(StatusCode::kCuda, "cuDNN graph conv '" + impl_->name + "': cudnnSetStream failed: " + cudnnGetErrorString(cs));
  // Ascending uid order (kX, kW, kBias[, kZ], kY): the frontend's allocation-free execute path.
  void* ptrs[5] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(bias), nullptr, nullptr};
  int n = 3;
  if (impl_->shape.residual) ptrs[n++] = const_cast<void*>(z);
  ptrs[n++] = y;
  // This handle's own plan (prepare()) when a context made one, else the plan built at build().
  std::shared_ptr<const PerHandlePlan> own;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const auto& wp : impl_->per_handle)
      if (auto sp = wp.lock(); sp && sp->handle == handle && sp->plan == i) { own = std::move(sp); break; }
  }
  // Another context's handle with no plan of its own would share the builder's plan with every such context: refused.
  if (!own && handle != impl_->builder)
    return failed_precondition("cuDNN graph conv '" + impl_->name + "': no execution plan prepared for this cuDNN handle (FeConv::prepare at "
                               "context creation)");
  const fe::graph::Graph& g = own ? *own->graph : *impl_->graph;
  if (auto e = g.execute_plan_at_index(handle, ptrs, n, workspace, impl_->index[static_cast<size_t>(i)]); !e.is_good())
    return fe_status(e, impl_->name, "execute", false);
  return Status::ok();
}

#else  // !WS_HAVE_CUDNN_FRONTEND

struct FeConv::Impl {};

bool cudnn_fe_conv_built() { return false; }
int cudnn_fe_version() { return 0; }

Result<std::unique_ptr<FeConv>> FeConv::build(cudnnHandle_t, const FeConvShape&, const std::string& name, int, int, int64_t, int64_t) {
  return unsupported("cuDNN graph conv '" + name + "': not built (no cudnn-frontend headers; run scripts/fetch-cudnn-frontend.sh and reconfigure)");
}
int FeConv::plan_count() const { return 0; }
int64_t FeConv::graph_index(int) const { return -1; }
int64_t FeConv::workspace_bytes(int) const { return 0; }
std::string FeConv::plan_name(int) const { return std::string(); }
Status FeConv::run(cudnnHandle_t, int, const void*, const void*, const void*, const void*, void*, void*, cudaStream_t) const {
  return unsupported("cuDNN graph conv: not built");
}
Result<std::shared_ptr<const void>> FeConv::prepare(cudnnHandle_t, int) const { return unsupported("cuDNN graph conv: not built"); }

#endif

FeConv::FeConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FeConv::~FeConv() = default;

}  // namespace ws::cudaexec
