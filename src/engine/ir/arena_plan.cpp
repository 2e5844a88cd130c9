// Arena planning shared by both executors (CPU and CUDA): first-fit over tensor lifetimes.
// See warpstream/arena.h.
#include <algorithm>
#include <utility>
#include <vector>

#include "warpstream/arena.h"

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

}  // namespace ws
