// CPU executor: one bound kernel per node over a lifetime-planned arena. See warpstream/engine.h.
#include <algorithm>
#include <cstring>

#include "engine/ir/op_table.h"
#include "warpstream/engine.h"
#include "core/escape.h"
#include "core/limits.h"

namespace ws {
namespace {
size_t tensor_bytes(const ir::Tensor& t) {
  return static_cast<size_t>(std::max<int64_t>(t.elements(), 0)) * ir::dtype_size(t.dtype);
}
}  // namespace

Result<std::unique_ptr<CpuEngine>> CpuEngine::build(ir::Graph graph, size_t max_arena_bytes) {
  WS_RETURN_IF_ERROR(ir::optimize(graph));
  std::unique_ptr<CpuEngine> e(new CpuEngine());
  e->graph_ = std::move(graph);
  const ir::Graph& g = e->graph_;
  for (ir::TensorId id : g.inputs) {
    if (g.tensor(id).dtype != ir::DType::kFloat32) {
      return unsupported(g.source + ": graph input " + quoted(g.tensor(id).name) + " has element type " +
                         ir::dtype_name(g.tensor(id).dtype) + "; only float32 inputs are supported");
    }
  }
  e->plan_ = plan_arena(g);
  max_arena_bytes = std::min(max_arena_bytes, build_limits().max_arena_bytes);  // core/limits.h, WS_MAX_ARENA_BYTES
  if (e->plan_.bytes > max_arena_bytes) {
    return resource_exhausted(g.source + ": activations need a " + std::to_string(e->plan_.bytes >> 20) +
                              " MiB arena, over the " + std::to_string(max_arena_bytes >> 20) +
                              " MiB limit (WS_MAX_ARENA_BYTES); use a smaller input shape");
  }
  e->arena_.reset(new std::byte[std::max<size_t>(e->plan_.bytes, 1)]);
  std::memset(e->arena_.get(), 0, std::max<size_t>(e->plan_.bytes, 1));
  auto ptr_of = [&e, &g](ir::TensorId id) -> void* {
    if (id == ir::kNoTensor) return nullptr;
    const ir::Tensor& t = g.tensor(id);
    if (t.is_constant()) return const_cast<std::byte*>(t.data->data());
    return e->arena_.get() + e->plan_.offsets[static_cast<size_t>(id)];
  };
  for (const ir::Node& node : g.nodes) {
    engine::NodeContext ctx{g, node, {}, {}, {}};
    WS_RETURN_IF_ERROR(engine::analyze_node(ctx));
    Step s;
    s.node = &node;
    s.kernel = std::move(ctx.kernel);
    for (ir::TensorId id : node.inputs) s.in.push_back(ptr_of(id));
    for (ir::TensorId id : node.outputs) s.out.push_back(ptr_of(id));
    e->steps_.push_back(std::move(s));
  }
  auto desc = [&g](ir::TensorId id) {
    const ir::Tensor& t = g.tensor(id);
    return TensorDesc{t.name, t.dtype, t.shape, tensor_bytes(t)};
  };
  for (ir::TensorId id : g.inputs) e->inputs_.push_back({desc(id), ptr_of(id)});
  e->outputs_.reserve(g.outputs.size());
  for (ir::TensorId id : g.outputs) e->outputs_.push_back({desc(id), ptr_of(id)});
  return e;
}

Status CpuEngine::run() {
  for (Step& s : steps_) s.kernel(s.in, s.out);
  return Status::ok();
}

Status CpuEngine::run_with_hook(const std::function<void(size_t, const ir::Node&)>& after_step) {
  for (size_t i = 0; i < steps_.size(); ++i) {
    steps_[i].kernel(steps_[i].in, steps_[i].out);
    after_step(i, *steps_[i].node);
  }
  return Status::ok();
}

const void* CpuEngine::tensor_data(ir::TensorId id) const {
  const ir::Tensor& t = graph_.tensor(id);
  if (t.is_constant()) return t.data->data();
  const size_t off = plan_.offsets[static_cast<size_t>(id)];
  return off == ArenaPlan::kNotInArena ? nullptr : arena_.get() + off;
}

}  // namespace ws
