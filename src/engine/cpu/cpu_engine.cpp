// CPU executor: one bound kernel per node over a lifetime-planned arena. See warpstream/engine.h.
#include <algorithm>
#include <cstring>

#include "engine/ir/op_table.h"
#include "warpstream/engine.h"
#include "core/escape.h"
#include "core/limits.h"

namespace ws {
namespace {
constexpr size_t kAlign = 64;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
size_t tensor_bytes(const ir::Tensor& t) {
  return static_cast<size_t>(std::max<int64_t>(t.elements(), 0)) * ir::dtype_size(t.dtype);
}
}  // namespace

ArenaPlan plan_arena(const ir::Graph& g) {
  const size_t n = g.tensors.size();
  const int end = static_cast<int>(g.nodes.size());
  std::vector<int> first(n, -2), last(n, -2);
  auto touch = [&](ir::TensorId id, int step) {
    if (id == ir::kNoTensor || g.tensor(id).is_constant()) return;
    auto& f = first[static_cast<size_t>(id)];
    auto& l = last[static_cast<size_t>(id)];
    if (f == -2) f = step;
    f = std::min(f, step);
    l = std::max(l, step);
  };
  for (ir::TensorId id : g.inputs) touch(id, -1);
  for (int s = 0; s < end; ++s) {
    for (ir::TensorId id : g.nodes[static_cast<size_t>(s)].inputs) touch(id, s);
    for (ir::TensorId id : g.nodes[static_cast<size_t>(s)].outputs) touch(id, s);
  }
  for (ir::TensorId id : g.outputs) touch(id, end);
  // Inputs stay live to the end too: the caller's input data must survive run(), so that running
  // again without rewriting it gives the same result.
  for (ir::TensorId id : g.inputs) touch(id, end);

  ArenaPlan plan;
  plan.offsets.assign(n, ArenaPlan::kNotInArena);
  struct Placed { size_t off, size; int first, last; };
  std::vector<Placed> placed;
  // Place larger tensors first (better packing); each goes at the lowest offset that does not
  // overlap a placed tensor whose lifetime intersects its own.
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i)
    if (first[i] != -2) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tensor_bytes(g.tensors[a]) > tensor_bytes(g.tensors[b]); });
  for (size_t id : order) {
    const size_t size = align_up(std::max<size_t>(tensor_bytes(g.tensors[id]), 1));
    plan.naive_bytes += size;
    std::vector<std::pair<size_t, size_t>> busy;
    for (const Placed& p : placed)
      if (!(p.last < first[id] || last[id] < p.first)) busy.emplace_back(p.off, p.off + p.size);
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (const auto& [b, e] : busy) {
      if (off + size <= b) break;
      off = std::max(off, e);
    }
    plan.offsets[id] = off;
    plan.bytes = std::max(plan.bytes, off + size);
    placed.push_back({off, size, first[id], last[id]});
  }
  return plan;
}

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
