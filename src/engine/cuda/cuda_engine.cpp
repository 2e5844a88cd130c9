// CUDA executor: CudaEngine::build (passes, Conv+activation fusion, per-node tactics through the CUDA
// op table in cuda_ops.cpp, timing cache, weights upload, one arena plan) and the ExecutionContext
// (one arena = activations + shared workspace, handles per context, addresses bound once; enqueue
// launches the bound steps only). See include/warpstream/cuda_engine.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "engine/cuda/cuda_ops.h"
#include "engine/ir/fusion.h"
#include "warpstream/arena.h"

namespace ws {

const char* precision_name(Precision p) { return p == Precision::kFloat16 ? "fp16" : "fp32"; }

namespace cudaexec {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

uint64_t fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}
uint64_t fnv(uint64_t h, const std::string& s) { return fnv(h, s.data(), s.size() + 1); }

/// Hash of the optimised graph: structure, attributes, shapes and constant data.
std::string graph_hash(const ir::Graph& g) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, &g.opset, sizeof(g.opset));
  for (const ir::Node& n : g.nodes) {
    h = fnv(h, n.name);
    h = fnv(h, n.op_type);
    for (ir::TensorId id : n.inputs) h = fnv(h, &id, sizeof(id));
    for (ir::TensorId id : n.outputs) h = fnv(h, &id, sizeof(id));
    for (const auto& [k, a] : n.attributes) {
      h = fnv(h, k);
      h = fnv(h, &a.i, sizeof(a.i));
      h = fnv(h, &a.f, sizeof(a.f));
      h = fnv(h, a.s);
      h = fnv(h, a.ints.data(), a.ints.size() * 8);
      h = fnv(h, a.floats.data(), a.floats.size() * 4);
    }
  }
  for (const ir::Tensor& t : g.tensors) {
    h = fnv(h, &t.dtype, sizeof(t.dtype));
    h = fnv(h, t.shape.data(), t.shape.size() * 8);
    if (t.is_constant()) h = fnv(h, t.data->data(), t.data->size());
  }
  for (ir::TensorId id : g.inputs) h = fnv(h, &id, sizeof(id));
  for (ir::TensorId id : g.outputs) h = fnv(h, &id, sizeof(id));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// Folds Relu / Clip after a Conv (single consumer, not a graph output) into the Conv's epilogue:
/// the Conv writes the activation's output; the activation node disappears.
std::map<std::string, std::pair<kernels::Activation, kernels::ActivationParams>> fuse_conv_activations(ir::Graph& g) {
  std::map<std::string, std::pair<kernels::Activation, kernels::ActivationParams>> fused;
  std::map<ir::TensorId, int> uses;
  std::map<ir::TensorId, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ir::TensorId in : g.nodes[i].inputs) if (in != ir::kNoTensor) uses[in]++;
    for (ir::TensorId o : g.nodes[i].outputs) if (o != ir::kNoTensor) producer[o] = i;
  }
  for (ir::TensorId o : g.outputs) uses[o] += 100;
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& act = g.nodes[i];
    if (act.op_type != "Relu" && act.op_type != "Clip") continue;
    auto p = producer.find(act.inputs[0]);
    if (p == producer.end() || uses[act.inputs[0]] != 1) continue;
    ir::Node& conv = g.nodes[p->second];
    if (conv.op_type != "Conv" || fused.count(conv.name) || g.tensor(act.inputs[0]).shape.size() != 4) continue;
    kernels::Activation a;
    kernels::ActivationParams prm;
    if (!activation_of(g, act, a, prm)) continue;
    fused[conv.name] = {a, prm};
    conv.outputs[0] = act.outputs[0];
    drop[i] = true;
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  return fused;
}

size_t tensor_bytes(const ir::Tensor& t, size_t elem) { return static_cast<size_t>(std::max<int64_t>(t.elements(), 0)) * elem; }

class ContextImpl;

class EngineImpl final : public CudaEngine {
 public:
  size_t num_inputs() const override { return inputs_.size(); }
  size_t num_outputs() const override { return outputs_.size(); }
  const TensorDesc& input_desc(size_t i) const override { return inputs_[i]; }
  const TensorDesc& output_desc(size_t i) const override { return outputs_[i]; }
  size_t arena_bytes() const override { return arena_bytes_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  Precision precision() const override { return precision_; }
  const std::vector<TacticRecord>& tactics() const override { return tactics_; }
  size_t kernel_count() const override { return kernel_count_; }
  const ir::Graph& graph() const override { return graph_; }
  Result<std::unique_ptr<ExecutionContext>> create_context() override;

  ir::Graph graph_;
  Precision precision_ = Precision::kFloat32;
  int device_ = 0;
  std::vector<TensorDesc> inputs_, outputs_;
  std::vector<size_t> input_offsets_, output_offsets_;
  std::vector<size_t> tensor_offsets_;  // per TensorId (ArenaPlan::kNotInArena if none)
  std::vector<Step> steps_;
  std::vector<cuda::DeviceBuffer> weights_;
  size_t weight_bytes_ = 0, arena_bytes_ = 0, workspace_offset_ = 0, workspace_bytes_ = 0, kernel_count_ = 0;
  std::vector<TacticRecord> tactics_;
};

class ContextImpl final : public ExecutionContext {
 public:
  ~ContextImpl() override {
    if (libs_.cudnn) cudnnDestroy(libs_.cudnn);
    if (libs_.lt) cublasLtDestroy(libs_.lt);
  }
  void* input(size_t i) override { return base() + engine_->input_offsets_[i]; }
  const void* output(size_t i) const override { return base() + engine_->output_offsets_[i]; }
  Status enqueue(cudaStream_t stream) override {
    for (size_t i = 0; i < engine_->steps_.size(); ++i) {
      Status s = engine_->steps_[i].run(io_[i], libs_, stream);
      if (!s.is_ok()) return Status(s.code(), "step " + std::to_string(i) + " (node '" + engine_->steps_[i].node + "', " + engine_->steps_[i].op_type + "): " + s.message());
    }
    return Status::ok();
  }
  const void* tensor(ir::TensorId id) const override {
    if (id < 0 || static_cast<size_t>(id) >= engine_->tensor_offsets_.size()) return nullptr;
    const size_t off = engine_->tensor_offsets_[static_cast<size_t>(id)];
    return off == ArenaPlan::kNotInArena ? nullptr : base() + off;
  }

  Result<std::vector<LayerTiming>> profile_layers(cudaStream_t stream, int reps) override;

  char* base() const { return arena_.as<char>(); }
  const EngineImpl* engine_ = nullptr;
  cuda::DeviceBuffer arena_;
  ContextLibs libs_;
  std::vector<StepIo> io_;
};

Result<std::vector<ExecutionContext::LayerTiming>> ContextImpl::profile_layers(cudaStream_t stream, int reps) {
  if (reps < 1 || reps > 100000) return invalid_argument("profile_layers: reps = " + std::to_string(reps) + " is out of range 1..100000");
  const auto& steps = engine_->steps_;
  std::vector<cuda::Event> ev;
  for (size_t i = 0; i < 2; ++i) {
    WS_ASSIGN_OR_RETURN(cuda::Event e, cuda::Event::create());
    ev.push_back(std::move(e));
  }
  std::vector<std::vector<float>> us(steps.size());
  WS_RETURN_IF_ERROR(enqueue(stream));  // warm: lazy module loading, library first-call work
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  // Each step alone: kInner back-to-back copies captured into one CUDA graph (so the GPU sees them as the
  // lanes' graph replay does, ~0.5 µs per node and no host launch gap), timed by one event pair per replay;
  // a reading is the replay time / kInner. Steps are idempotent (inputs and outputs never alias).
  constexpr int kInner = 20;
  for (size_t i = 0; i < steps.size(); ++i) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    WS_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    Status s = Status::ok();
    for (int k = 0; k < kInner && s.is_ok(); ++k) s = steps[i].run(io_[i], libs_, stream);
    const cudaError_t ec = cudaStreamEndCapture(stream, &graph);
    if (!s.is_ok()) {
      if (graph) cudaGraphDestroy(graph);
      return Status(s.code(), "step " + std::to_string(i) + " (node '" + steps[i].node + "'): " + s.message());
    }
    if (ec != cudaSuccess || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      return Status(StatusCode::kCuda, "profile_layers: capturing step " + std::to_string(i) + " (node '" + steps[i].node + "') failed");
    }
    cudaError_t e = cudaGraphLaunch(exec, stream);  // upload + warm
    for (int r = 0; r < reps && e == cudaSuccess; ++r) {
      e = cudaEventRecord(ev[0].get(), stream);
      if (e == cudaSuccess) e = cudaGraphLaunch(exec, stream);
      if (e == cudaSuccess) e = cudaEventRecord(ev[1].get(), stream);
      if (e == cudaSuccess) e = cudaEventSynchronize(ev[1].get());
      float ms = 0;
      if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, ev[0].get(), ev[1].get());
      us[i].push_back(ms * 1000.0f / kInner);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    WS_CUDA_RETURN_IF_ERROR(e);
  }
  std::map<std::string, std::string> tactic;
  for (const auto& t : engine_->tactics_) tactic[t.node] = t.choice;
  std::vector<LayerTiming> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    auto& v = us[i];
    std::sort(v.begin(), v.end());
    LayerTiming lt;
    lt.node = steps[i].node;
    lt.op_type = steps[i].op_type;
    auto it = tactic.find(lt.node);
    if (it != tactic.end()) lt.tactic = it->second;
    lt.kernels = steps[i].kernels;
    lt.median_us = v[v.size() / 2];
    lt.p99_us = v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size()))) - 1)];
    out.push_back(std::move(lt));
  }
  return out;
}

Result<std::unique_ptr<ExecutionContext>> EngineImpl::create_context() {
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  auto ctx = std::make_unique<ContextImpl>();
  ctx->engine_ = this;
  WS_ASSIGN_OR_RETURN(ctx->arena_, cuda::DeviceBuffer::allocate(std::max<size_t>(arena_bytes_, 256)));
  WS_CUDA_RETURN_IF_ERROR(cudaMemset(ctx->arena_.get(), 0, ctx->arena_.bytes()));
  WS_CUDNN_RETURN_IF_ERROR(cudnnCreate(&ctx->libs_.cudnn));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&ctx->libs_.lt));
  ctx->libs_.workspace_bytes = workspace_bytes_;
  char* base = ctx->base();
  for (const Step& s : steps_) {
    StepIo io;
    auto resolve = [base](const Operand& o) -> void* {
      switch (o.kind) {
        case Operand::Kind::kArena: return base + o.offset;
        case Operand::Kind::kConst: return const_cast<void*>(o.ptr);
        default: return nullptr;
      }
    };
    for (const Operand& o : s.inputs) io.in.push_back(resolve(o));
    for (const Operand& o : s.outputs) io.out.push_back(resolve(o));
    io.workspace = workspace_bytes_ ? base + workspace_offset_ : nullptr;
    ctx->io_.push_back(std::move(io));
  }
  return std::unique_ptr<ExecutionContext>(std::move(ctx));
}

Result<nlohmann::json> cache_identity(int device, const std::string& hash, const CudaBuildOptions& o) {
  cudaDeviceProp prop{};
  WS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  char uuid[33];
  for (int i = 0; i < 16; ++i) std::snprintf(uuid + 2 * i, 3, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
  int driver = 0, runtime = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDriverGetVersion(&driver));
  WS_CUDA_RETURN_IF_ERROR(cudaRuntimeGetVersion(&runtime));
  return nlohmann::json{{"gpu", prop.name}, {"uuid", uuid}, {"driver", driver}, {"cuda_runtime", runtime},
                        {"cudnn", static_cast<uint64_t>(cudnnGetVersion())}, {"cublas", static_cast<uint64_t>(cublasLtGetVersion())},
                        {"graph_hash", hash}, {"max_workspace_bytes", static_cast<uint64_t>(o.max_workspace_bytes)},
                        {"tactic_sources", tactic_sources_string(o.tactic_sources)}};
}

}  // namespace
}  // namespace cudaexec

Result<std::unique_ptr<CudaEngine>> CudaEngine::build(ir::Graph graph, const CudaBuildOptions& options) {
  using namespace cudaexec;
  WS_RETURN_IF_ERROR(ir::optimize(graph));
  auto e = std::make_unique<EngineImpl>();
  e->precision_ = options.precision;
  e->device_ = options.device;
  for (ir::TensorId id : graph.inputs)
    if (graph.tensor(id).dtype != ir::DType::kFloat32)
      return unsupported(graph.source + ": graph input '" + graph.tensor(id).name + "' has element type " + ir::dtype_name(graph.tensor(id).dtype) + "; only float32 inputs are supported");
  for (ir::TensorId id : graph.outputs)
    if (graph.tensor(id).dtype != ir::DType::kFloat32 || graph.tensor(id).is_constant())
      return unsupported(graph.source + ": graph output '" + graph.tensor(id).name + "' must be a float32 runtime tensor");
  std::map<std::string, std::pair<kernels::Activation, kernels::ActivationParams>> fused;
  std::set<std::string> residual_convs;
  if (!options.debug_keep_all_tensors && options.fuse_residual) residual_convs = ir::fuse_conv_residual_adds(graph);
  if (!options.debug_keep_all_tensors) fused = fuse_conv_activations(graph);
  e->graph_ = std::move(graph);
  const ir::Graph& g = e->graph_;
  const bool half = options.precision == Precision::kFloat16;
  const size_t eb = half ? 2 : 4;
  const kernels::ElemType et = half ? kernels::ElemType::kFloat16 : kernels::ElemType::kFloat32;

  // 1. Every node: validated by the CPU op table, then checked against the CUDA table (no device work yet).
  BuildDevice dev;  // handles created after the support checks
  std::vector<engine::NodeContext> analyzed;
  analyzed.reserve(g.nodes.size());
  // A Conv carrying a fused residual is analysed as the ONNX Conv it was (first 3 inputs).
  std::vector<ir::Node> onnx_view;
  onnx_view.reserve(g.nodes.size());
  for (const ir::Node& n : g.nodes) {
    onnx_view.push_back(n);
    if (residual_convs.count(n.name)) onnx_view.back().inputs.resize(3);
    while (onnx_view.back().inputs.size() > 2 && onnx_view.back().inputs.back() == ir::kNoTensor && n.op_type == "Conv")
      onnx_view.back().inputs.pop_back();
  }
  for (const ir::Node& node : onnx_view) {
    analyzed.push_back(engine::NodeContext{g, node, {}, {}, {}});
    WS_RETURN_IF_ERROR(engine::analyze_node(analyzed.back()));
    const CudaOpDef* def = find_cuda_op(node.op_type);
    std::vector<TacticRecord> none;
    TacticCache no_cache;
    if (!def) {
      std::string list;
      for (const auto& n : cuda_supported_ops()) list += (list.empty() ? "" : ", ") + n;
      return unsupported(node.describe(g.opset) + ": op type '" + node.op_type + "' has no CUDA kernel (CUDA executor supports: " + list + ")");
    }
    BindContext bc{g, node, analyzed.back(), options, options.precision, et, eb, {}, {}, {}, {}, dev, no_cache, none};
    WS_RETURN_IF_ERROR(def->supports(bc));
  }

  // 2. Arena plan over the optimised graph, runtime tensors in the activation type.
  ArenaPlan plan;
  {
    ir::Graph shadow;
    shadow.nodes = g.nodes;
    shadow.inputs = g.inputs;
    shadow.outputs = g.outputs;
    shadow.tensors.reserve(g.tensors.size());
    for (const ir::Tensor& t : g.tensors) {
      ir::Tensor s;
      s.name = t.name; s.shape = t.shape; s.shape_known = t.shape_known;
      s.dtype = t.dtype == ir::DType::kFloat32 && half ? ir::DType::kFloat16 : t.dtype;
      if (t.is_constant()) s.data = std::vector<std::byte>();  // marks constant (plan_arena skips it)
      shadow.tensors.push_back(std::move(s));
    }
    if (options.debug_keep_all_tensors) {
      plan.offsets.assign(g.tensors.size(), ArenaPlan::kNotInArena);
      std::vector<bool> used(g.tensors.size(), false);
      for (ir::TensorId id : g.inputs) used[static_cast<size_t>(id)] = true;
      for (const ir::Node& n : g.nodes) {
        for (ir::TensorId id : n.inputs) if (id != ir::kNoTensor) used[static_cast<size_t>(id)] = true;
        for (ir::TensorId id : n.outputs) if (id != ir::kNoTensor) used[static_cast<size_t>(id)] = true;
      }
      for (size_t id = 0; id < g.tensors.size(); ++id) {
        if (!used[id] || g.tensors[id].is_constant()) continue;
        plan.offsets[id] = plan.bytes;
        plan.bytes += align_up(std::max<size_t>(tensor_bytes(shadow.tensors[id], ir::dtype_size(shadow.tensors[id].dtype)), 1));
      }
      plan.naive_bytes = plan.bytes;
    } else {
      plan = plan_arena(shadow);
    }
  }
  size_t arena_end = align_up(plan.bytes);
  e->tensor_offsets_ = plan.offsets;

  // 3. Device resources for build-time timing; the timing cache.
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  WS_CUDNN_RETURN_IF_ERROR(cudnnCreate(&dev.cudnn));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&dev.lt));
  WS_ASSIGN_OR_RETURN(dev.stream, cuda::Stream::create());
  WS_ASSIGN_OR_RETURN(dev.start, cuda::Event::create());
  WS_ASSIGN_OR_RETURN(dev.stop, cuda::Event::create());
  WS_ASSIGN_OR_RETURN(nlohmann::json identity, cache_identity(options.device, graph_hash(g), options));
  TacticCache cache;
  bool cache_matched = false;
  if (!options.timing_cache_path.empty()) {
    std::ifstream f(options.timing_cache_path);
    if (f) {
      nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
      if (!j.is_discarded() && j.is_object() && j.value("key", nlohmann::json()) == identity && j.contains("entries") && j["entries"].is_object()) {
        cache.entries = j["entries"];
        cache_matched = true;
      }
    }
  }

  // 4. Constants on the device (deduplicated per tensor and type).
  std::map<std::pair<ir::TensorId, bool>, const void*> uploaded;
  auto upload_values = [&e, half](const std::vector<float>& v, bool as_float32) -> Result<const void*> {
    const bool h = half && !as_float32;
    const size_t bytes = v.size() * (h ? 2 : 4);
    WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::allocate(std::max<size_t>(bytes, 4)));
    if (h) {
      std::vector<__half> hv(v.size());
      for (size_t i = 0; i < v.size(); ++i) hv[i] = __float2half_rn(v[i]);
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(b.get(), hv.data(), bytes, cudaMemcpyHostToDevice));
    } else if (bytes) {
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(b.get(), v.data(), bytes, cudaMemcpyHostToDevice));
    }
    e->weight_bytes_ += bytes;
    const void* p = b.get();
    e->weights_.push_back(std::move(b));
    return p;
  };
  auto upload = [&](ir::TensorId id, bool as_float32) -> Result<const void*> {
    auto it = uploaded.find({id, as_float32});
    if (it != uploaded.end()) return it->second;
    const ir::Tensor& t = g.tensor(id);
    if (t.dtype != ir::DType::kFloat32) return unsupported("constant '" + t.name + "' has element type " + ir::dtype_name(t.dtype) + " (float32 only)");
    std::vector<float> v(t.data_as<float>(), t.data_as<float>() + t.elements());
    WS_ASSIGN_OR_RETURN(const void* p, upload_values(v, as_float32));
    uploaded[{id, as_float32}] = p;
    return p;
  };

  // 5. Bind every node.
  size_t workspace = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = g.nodes[i];
    const CudaOpDef* def = find_cuda_op(node.op_type);
    BindContext bc{g, node, analyzed[i], options, options.precision, et, eb, kernels::Activation::kNone, {}, upload, upload_values, dev, cache, e->tactics_};
    if (auto f = fused.find(node.name); f != fused.end()) { bc.fused_act = f->second.first; bc.fused_params = f->second.second; }
    Step s;
    s.node = node.name;
    s.op_type = node.op_type;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      Operand o;
      const ir::TensorId id = node.inputs[k];
      if (id != ir::kNoTensor) {
        const ir::Tensor& t = g.tensor(id);
        if (!t.is_constant()) {
          o.kind = Operand::Kind::kArena;
          o.offset = plan.offsets[static_cast<size_t>(id)];
        } else if (def->data_inputs < 0 || static_cast<int>(k) < def->data_inputs) {
          o.kind = Operand::Kind::kConst;
          WS_ASSIGN_OR_RETURN(o.ptr, upload(id, false));
        }
      }
      s.inputs.push_back(o);
    }
    for (ir::TensorId id : node.outputs) {
      Operand o;
      if (id != ir::kNoTensor) { o.kind = Operand::Kind::kArena; o.offset = plan.offsets[static_cast<size_t>(id)]; }
      s.outputs.push_back(o);
    }
    WS_RETURN_IF_ERROR(def->bind(bc, s));
    workspace = std::max(workspace, s.workspace_bytes);
    e->kernel_count_ += static_cast<size_t>(s.kernels);
    e->steps_.push_back(std::move(s));
  }

  // 6. Ports. fp16: the input is fp16 in place; each output gets a float32 copy written by a cast step.
  for (ir::TensorId id : g.inputs) {
    const ir::Tensor& t = g.tensor(id);
    e->inputs_.push_back(TensorDesc{t.name, half ? ir::DType::kFloat16 : ir::DType::kFloat32, t.shape, tensor_bytes(t, eb)});
    e->input_offsets_.push_back(plan.offsets[static_cast<size_t>(id)]);
  }
  for (ir::TensorId id : g.outputs) {
    const ir::Tensor& t = g.tensor(id);
    e->outputs_.push_back(TensorDesc{t.name, ir::DType::kFloat32, t.shape, tensor_bytes(t, 4)});
    if (!half) {
      e->output_offsets_.push_back(plan.offsets[static_cast<size_t>(id)]);
      continue;
    }
    Step s;
    s.node = t.name + "_cast_fp32";
    s.op_type = "Cast";
    s.inputs.push_back({Operand::Kind::kArena, plan.offsets[static_cast<size_t>(id)], nullptr});
    s.outputs.push_back({Operand::Kind::kArena, arena_end, nullptr});
    e->output_offsets_.push_back(arena_end);
    const int64_t count = t.elements();
    s.run = [count](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::cast_f16_to_f32(io.in[0], static_cast<float*>(io.out[0]), count, st); };
    arena_end += align_up(tensor_bytes(t, 4));
    e->kernel_count_ += 1;
    e->steps_.push_back(std::move(s));
  }
  e->workspace_offset_ = arena_end;
  e->workspace_bytes_ = workspace;
  e->arena_bytes_ = arena_end + workspace;

  // 7. Persist the timing cache (rewritten when it did not match or gained entries).
  if (!options.timing_cache_path.empty() && (!cache_matched || cache.dirty)) {
    nlohmann::json j{{"format", "warpstream-timing-cache-1"}, {"key", identity}, {"entries", cache.entries}};
    std::ofstream f(options.timing_cache_path, std::ios::trunc);
    if (!f) return not_found("cannot write the timing cache '" + options.timing_cache_path + "'");
    f << j.dump(1) << "\n";
  }
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(dev.stream.get()));
  return std::unique_ptr<CudaEngine>(std::move(e));
}

}  // namespace ws
