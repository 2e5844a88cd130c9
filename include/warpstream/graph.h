#pragma once
/// \file graph.h
/// The engine's fixed-shape intermediate representation. A Graph is what import_onnx produces
/// and what build_plan consumes: typed tensors with fully static shapes, nodes in topological
/// order, and constant data (initializers and folded constants) owned by the graph.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "warpstream/dtype.h"
#include "warpstream/shape.h"
#include "warpstream/status.h"

namespace ws::ir {

/// Element types: the one vocabulary of include/warpstream/dtype.h (ONNX TensorProto numbering).
using DType = ws::DType;
using ws::dtype_name;
using ws::dtype_size;

/// Shapes: include/warpstream/shape.h (core).
using Shape = ws::Shape;
using ws::shape_elements;
using ws::shape_string;

using TensorId = int32_t;
inline constexpr TensorId kNoTensor = -1;  ///< an omitted optional input (ONNX empty name)

struct Tensor {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
  bool shape_known = false;  ///< set by import (graph inputs, initializers) or shape inference
  /// Constant data (little-endian, dense, row-major), present for initializers and folded constants.
  std::optional<std::vector<std::byte>> data;

  bool is_constant() const { return data.has_value(); }
  int64_t elements() const { return shape_elements(shape); }
  template <typename T> const T* data_as() const { return reinterpret_cast<const T*>(data->data()); }
  template <typename T> T* mutable_data_as() { return reinterpret_cast<T*>(data->data()); }
};

/// One attribute value; exactly one field is meaningful, selected by `kind`.
struct Attribute {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kOther };
  Kind kind = Kind::kOther;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::optional<Tensor> tensor;  ///< for kTensor (Constant's value)
};

struct Node {
  std::string name;      ///< ONNX node name, or "<op_type>_<index>" when the model has none
  std::string op_type;   ///< ONNX op type ("Conv"); domain must be the default ONNX domain
  std::vector<TensorId> inputs;   ///< kNoTensor for omitted optional inputs
  std::vector<TensorId> outputs;  ///< kNoTensor for omitted optional outputs
  std::map<std::string, Attribute> attributes;

  const Attribute* find(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? nullptr : &it->second;
  }
  /// "node 'conv1' (Conv, opset 13)"; used as the prefix of every node-level error.
  std::string describe(int64_t opset) const;
};

struct Graph {
  std::string name;
  int64_t opset = 0;  ///< default-domain opset the model was exported with
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;           ///< topological order
  std::vector<TensorId> inputs;      ///< runtime inputs (initializers excluded)
  std::vector<TensorId> outputs;
  std::string source;                ///< file path it was imported from, for messages

  TensorId find_tensor(const std::string& name) const;
  /// Adds a tensor and returns its id.
  TensorId add_tensor(Tensor t);
  Tensor& tensor(TensorId id) { return tensors[static_cast<size_t>(id)]; }
  const Tensor& tensor(TensorId id) const { return tensors[static_cast<size_t>(id)]; }
  /// Node count per op type, for reports.
  std::map<std::string, int> op_histogram() const;
};

// ------------------------------------------------------------------------------------------------
// Import

struct ImportOptions {
  /// Fixed batch-1 shapes for inputs whose dims are symbolic or unknown ("input" → {1,3,224,224}).
  /// A graph input with an unresolved dim and no entry here is refused.
  /// The key "*" means "the model's only runtime input" (refused when there are several).
  std::map<std::string, Shape> input_shapes;
  /// Graph inputs to freeze into constants at build (e.g. a Reshape shape or Clip bound fed as an
  /// input): the engine is fixed-shape, so such values are part of the build, not of a run.
  std::map<std::string, Tensor> frozen_inputs;
  /// Largest constant tensor accepted, bytes; protects against files that promise gigabytes.
  size_t max_tensor_bytes = size_t{1} << 31;
};

/// Reads an ONNX ModelProto with the ONNX protobuf library and converts it to the IR.
/// Errors: missing/unreadable file (kNotFound), not a protobuf ModelProto or truncated
/// (kInvalidModel with the file size), external data (kUnsupported, names the initializer),
/// a tensor whose dims disagree with its data or exceed max_tensor_bytes (kInvalidModel /
/// kResourceExhausted, names the tensor), non-default op domains (kUnsupported, names the node),
/// a graph input with an unresolved dimension (kInvalidModel, names the input and the dim).
Result<Graph> import_onnx(const std::string& path, const ImportOptions& options = {});
/// Same from bytes already in memory (`source` only labels messages).
Result<Graph> import_onnx_bytes(std::span<const std::byte> bytes, const std::string& source,
                                const ImportOptions& options = {});
/// Whether `path` is an ONNX model at all: reads it (same bounds as import_onnx) and parses it as a protobuf
/// ModelProto with at least one graph node, converting nothing. Ok when it parses; else import_onnx's error for
/// an unreadable, empty, truncated or non-ModelProto file (kNotFound / kInvalidModel / kUnsupported). Tells a
/// file that is not a model (bad input) from a model the importer refuses for its content (import_onnx's
/// kInvalidModel for both).
Status check_onnx_model_file(const std::string& path);

/// Reads an ONNX TensorProto file (the conformance suite's input_N.pb / output_N.pb).
Result<Tensor> read_tensor_proto(const std::string& path, size_t max_tensor_bytes = size_t{1} << 31);

// ------------------------------------------------------------------------------------------------
// Passes (run by build_plan in this order; each may be called alone in tests)

/// Checks every node against the op table (op type, attributes, attribute values, input count,
/// dtypes) and infers every output's dtype and static shape. Errors name the node, op type,
/// attribute and opset.
Status infer_shapes(Graph& graph);
/// Evaluates nodes whose inputs are all constant (e.g. Shape→Gather→Concat→Reshape chains), and Shape / Size of
/// a tensor whose shape is known; an inference Dropout's mask output becomes a constant (all true).
Status fold_constants(Graph& graph);
/// Folds BatchNormalization into a preceding Conv whose output has no other consumer
/// (W' = W·s/√(v+ε), b' = (b − m)·s/√(v+ε) + β).
Status fold_batch_norm_into_conv(Graph& graph);
/// Folds a zero-valued constant-mode Pad of spatial dims only into the explicit pads of the Conv
/// that is its only consumer (TF-style "SAME" padding exported as Pad → Conv).
Status fold_pad_into_conv(Graph& graph);
/// Removes Identity / inference-mode Dropout (rewiring consumers) and nodes whose outputs
/// reach no graph output; drops unused constants.
Status eliminate_dead_nodes(Graph& graph);
/// infer_shapes, fold_constants, fold_batch_norm_into_conv, fold_pad_into_conv,
/// eliminate_dead_nodes, infer_shapes.
Status optimize(Graph& graph);

}  // namespace ws::ir
