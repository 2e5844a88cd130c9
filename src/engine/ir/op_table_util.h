#pragma once
/// \file op_table_util.h
/// Internal: helpers shared by the op analyzers of op_table.cpp and op_table_ext.cpp — attribute
/// access with kind checks, single-output binding, and the outer/len/inner split of the
/// Softmax family (https://onnx.ai/onnx/operators/onnx__Softmax.html; before opset 13 the input is
/// coerced to 2-D at `axis`, so every dimension from `axis` on falls into the reduced length).
/// Errors are returned as Status naming the node and attribute (NodeContext::bad_attribute).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/op_table.h"

namespace ws::engine::op_util {

/// Integer attribute `name`, or `fallback` when absent; kInvalidModel when it is not an int.
inline Result<int64_t> attr_int(const NodeContext& c, const char* name, int64_t fallback) {
  const ir::Attribute* a = c.node.find(name);
  if (!a) return fallback;
  if (a->kind != ir::Attribute::Kind::kInt) return c.invalid_attribute(name, "must be an int");
  return a->i;
}
/// Float attribute `name`, or `fallback` when absent; kInvalidModel when it is not a float.
inline Result<float> attr_float(const NodeContext& c, const char* name, float fallback) {
  const ir::Attribute* a = c.node.find(name);
  if (!a) return fallback;
  if (a->kind != ir::Attribute::Kind::kFloat) return c.invalid_attribute(name, "must be a float");
  return a->f;
}
/// Int-list attribute `name`, or `fallback` when absent; kInvalidModel when it is not a list of ints.
inline Result<std::vector<int64_t>> attr_ints(const NodeContext& c, const char* name, std::vector<int64_t> fallback) {
  const ir::Attribute* a = c.node.find(name);
  if (!a) return fallback;
  if (a->kind != ir::Attribute::Kind::kInts) return c.invalid_attribute(name, "must be a list of ints");
  return a->ints;
}
/// String attribute `name`, or `fallback` when absent; kInvalidModel when it is not a string.
inline Result<std::string> attr_string(const NodeContext& c, const char* name, std::string fallback) {
  const ir::Attribute* a = c.node.find(name);
  if (!a) return fallback;
  if (a->kind != ir::Attribute::Kind::kString) return c.invalid_attribute(name, "must be a string");
  return a->s;
}

/// Sizes every output slot (dtype kUndefined, empty shape) for the analyzer to fill.
inline void set_outputs(NodeContext& c) {
  c.output_dtypes.assign(c.node.outputs.size(), ir::DType::kUndefined);
  c.output_shapes.assign(c.node.outputs.size(), ir::Shape{});
}
/// Sizes the output slots and sets output 0 to (t, s).
inline void set_single_output(NodeContext& c, ir::DType t, ir::Shape s) {
  set_outputs(c);
  c.output_dtypes[0] = t;
  c.output_shapes[0] = std::move(s);
}

/// Row-major split of shape `x` around a normalised `axis` (0 ≤ axis ≤ rank): outer = product of
/// the dims before it, len = the axis dim (with `legacy`, the product of all dims from it on),
/// inner = the product of the dims after it (1 with `legacy`).
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisSplit softmax_split(const ir::Shape& x, int64_t axis, bool legacy) {
  AxisSplit s;
  const int64_t rank = static_cast<int64_t>(x.size());
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x[static_cast<size_t>(i)];
    if (i < axis) s.outer *= d;
    else if (i == axis || legacy) s.len *= d;
    else s.inner *= d;
  }
  return s;
}

}  // namespace ws::engine::op_util
