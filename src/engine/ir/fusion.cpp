// Graph fusions for kernels with richer epilogues (see fusion.h).
#include "engine/ir/fusion.h"

#include <map>
#include <vector>

namespace ws::ir {

std::set<std::string> fuse_conv_residual_adds(Graph& g) {
  std::set<std::string> fused;
  std::map<TensorId, int> uses;
  std::map<TensorId, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (TensorId in : g.nodes[i].inputs) if (in != kNoTensor) uses[in]++;
    for (TensorId o : g.nodes[i].outputs) if (o != kNoTensor) producer[o] = i;
  }
  for (TensorId o : g.outputs) uses[o] += 100;
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& add = g.nodes[i];
    if (add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    const TensorId a = add.inputs[0], b = add.inputs[1];
    if (a == kNoTensor || b == kNoTensor || a == b) continue;
    const Tensor& ta = g.tensor(a);
    const Tensor& tb = g.tensor(b);
    if (ta.is_constant() || tb.is_constant() || ta.shape.size() != 4 || ta.shape != tb.shape ||
        ta.dtype != DType::kFloat32 || tb.dtype != DType::kFloat32 || g.tensor(add.outputs[0]).shape != ta.shape)
      continue;
    auto conv_at = [&](TensorId t) -> long {
      auto p = producer.find(t);
      if (p == producer.end() || uses[t] != 1 || drop[p->second]) return -1;
      const Node& n = g.nodes[p->second];
      if (n.op_type != "Conv" || n.inputs.size() > 3 || fused.count(n.name)) return -1;
      return static_cast<long>(p->second);
    };
    const long ca = conv_at(a), cb = conv_at(b);
    long conv = -1;
    TensorId residual = kNoTensor;
    auto before = [&](TensorId r, long c) {
      auto p = producer.find(r);
      return p == producer.end() || static_cast<long>(p->second) < c;  // graph input, or produced earlier
    };
    if (ca >= 0 && (cb < 0 || ca > cb) && before(b, ca)) { conv = ca; residual = b; }
    else if (cb >= 0 && before(a, cb)) { conv = cb; residual = a; }
    if (conv < 0) continue;
    Node& c = g.nodes[static_cast<size_t>(conv)];
    while (c.inputs.size() < 3) c.inputs.push_back(kNoTensor);
    c.inputs.push_back(residual);
    c.outputs[0] = add.outputs[0];
    producer[add.outputs[0]] = static_cast<size_t>(conv);
    fused.insert(c.name);
    drop[i] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  return fused;
}

}  // namespace ws::ir
