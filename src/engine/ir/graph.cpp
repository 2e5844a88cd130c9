// IR basics: shapes, tensor lookup (dtype names and sizes: src/core/dtype.cpp); see include/warpstream/graph.h.
#include "warpstream/graph.h"

#include <limits>

#include "core/escape.h"

namespace ws::ir {

int64_t shape_elements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

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
