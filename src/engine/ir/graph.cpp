// IR basics: shapes, tensor lookup (dtype names and sizes: src/core/dtype.cpp); see include/warpstream/graph.h.
#include "warpstream/graph.h"

#include <limits>

#include "core/escape.h"

namespace ws::ir {

std::string Node::describe(int64_t opset) const {
  return "node " + quoted(name) + " (" + escape_text(op_type) + ", opset " + std::to_string(opset) + ")";
}

TensorId Graph::find_tensor(const std::string& n) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == n) return static_cast<TensorId>(i);
  return kNoTensor;
}

TensorId Graph::add_tensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<TensorId>(tensors.size() - 1);
}

std::map<std::string, int> Graph::op_histogram() const {
  std::map<std::string, int> h;
  for (const auto& n : nodes) h[n.op_type]++;
  return h;
}

}  // namespace ws::ir
