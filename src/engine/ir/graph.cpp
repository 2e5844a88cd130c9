// IR basics: dtype names and sizes, shapes, tensor lookup; see include/warpstream/graph.h.
#include "warpstream/graph.h"

#include <limits>

#include "core/escape.h"

namespace ws::ir {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kInt32: case DType::kUInt32: return 4;
    case DType::kUInt8: case DType::kInt8: case DType::kBool: return 1;
    case DType::kUInt16: case DType::kInt16: case DType::kFloat16: case DType::kBFloat16: return 2;
    case DType::kInt64: case DType::kFloat64: case DType::kUInt64: return 8;
    default: return 0;
  }
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUInt16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "float64";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBFloat16: return "bfloat16";
    default: return "dtype " + std::to_string(static_cast<int>(t));
  }
}

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
