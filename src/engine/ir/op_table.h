#pragma once
/// \file op_table.h
/// The one table of supported ONNX ops. Each entry's `analyze` validates a node's attributes and
/// inputs, infers its outputs' dtypes and static shapes, and returns the CPU kernel bound to the
/// resolved parameters. Shape inference, constant folding and the CPU executor all call the same
/// entry, so there is one place per op and no parallel switches.

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "warpstream/graph.h"

namespace ws::engine {

/// A CPU kernel bound at build: reads inputs, writes outputs (pointers to dense row-major data,
/// nullptr for omitted optional inputs/outputs). Must not allocate.
using CpuKernel = std::function<void(std::span<const void* const> inputs, std::span<void* const> outputs)>;

/// What analyze() sees of a node and what it produces.
struct NodeContext {
  const ir::Graph& graph;
  const ir::Node& node;
  // outputs (filled by analyze)
  std::vector<ir::DType> output_dtypes;
  std::vector<ir::Shape> output_shapes;
  CpuKernel kernel;
  /// Inputs the kernel reads in place of ONNX aliasing (Reshape/Flatten/Identity copy-free views
  /// are not used: every op writes its own output; this keeps the arena plan simple).

  size_t input_count() const { return node.inputs.size(); }
  bool has_input(size_t i) const { return i < node.inputs.size() && node.inputs[i] != ir::kNoTensor; }
  /// The one way an analyzer reads an input. Positions below the op's min_inputs are checked
  /// present by analyze_node before analyze() runs. For an optional position, test has_input(i)
  /// first or call require_input(i, role). input(i) never reads out of bounds: for an absent
  /// input it returns an empty placeholder (dtype undefined, shape [0], empty data) and records
  /// an error that analyze_node returns instead of whatever the analyzer produced.
  const ir::Tensor& input(size_t i) const;
  /// Ok when input i is present; else an error "required input i (<role>) is missing".
  Status require_input(size_t i, const char* role) const;
  /// Error prefixed with the node description: "node 'x' (Conv, opset 13): <message>". The node
  /// name and op type are escaped (core/escape.h); put other model strings in through quoted().
  Status error(StatusCode code, const std::string& message) const;
  /// "node ...: attribute 'name' <message>" (the attribute name escaped), kUnsupported: a value the ONNX spec
  /// allows that this runtime does not implement (ceil_mode, training mode, a newer opset's mode, our size bounds).
  Status bad_attribute(const std::string& attr, const std::string& message) const;
  /// The same message, kInvalidModel: a value the ONNX spec forbids (an axis out of range, a perm that is not a
  /// permutation, a pads list of the wrong length, a required attribute missing). onnx-test reports such a case
  /// as a failure of the model, not as "unsupported — skip".
  Status invalid_attribute(const std::string& attr, const std::string& message) const;
  /// Set by input() when an analyzer asked for an input the node does not have.
  mutable Status missing_input_error = Status::ok();
};

struct OpDef {
  const char* op_type;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
  /// Input positions whose value must be known at build (Reshape's shape, Clip's bounds …).
  std::vector<int> constant_inputs;
  /// Attribute names this implementation understands; any other attribute is refused.
  std::vector<std::string> attributes;
  Status (*analyze)(NodeContext& ctx);
};

/// The entry for `op_type`, or nullptr when unsupported.
const OpDef* find_op(const std::string& op_type);
/// All supported op types, sorted (for messages and docs).
std::vector<std::string> supported_ops();
/// Runs validation + inference for one node (checks input/output counts, constant inputs,
/// unknown attributes first). On success ctx holds dtypes, shapes and the kernel.
Status analyze_node(NodeContext& ctx);

/// PRelu's slope as it broadcasts to X: PRelu-7+ is numpy (unidirectional) broadcasting, but older exporters
/// (PRelu-6, PyTorch) write a [C] slope for N x C x ... data, meaning the channel slope [C, 1, ...] — read so
/// when the last axis would not match. Shared by the CPU analyzer and the CUDA op entry.
inline ir::Shape prelu_slope_shape(const ir::Shape& x, ir::Shape slope) {
  if (slope.size() == 1 && x.size() > 2 && slope[0] == x[1] && slope[0] != x.back()) slope.resize(x.size() - 1, 1);
  return slope;
}

}  // namespace ws::engine
