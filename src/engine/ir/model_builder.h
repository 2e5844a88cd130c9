#pragma once
/// \file model_builder.h
/// Writing small ONNX models from C++ through the ONNX protobuf classes: for tests (models that
/// exercise one op, one opset form or one malformed field) and for `warpstream make-demo-model`.
///
///   ir::ModelBuilder b(13);
///   b.input("x", ir::DType::kFloat32, {1, 3, ir::Dim("H"), 5});
///   b.initializer("w", {4, 3, 1, 1}, weights);                       // raw_data
///   b.initializer("b", {4}, bias, ir::ModelBuilder::Form::kTyped);   // float_data
///   b.node("Conv", {"x", "w", "b"}, {"y"}).ints("pads", {0, 0, 0, 0});
///   b.output("y");
///   std::string bytes = b.serialize();
///
/// Nothing here validates: a builder is as happy to write a broken model as a good one (tests need
/// both). Reach the protobuf itself through proto() for fields the helpers do not cover.

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "warpstream/graph.h"
#include "warpstream/status.h"

namespace ws::ir {

/// One dimension of a graph input/output: a number, or a symbolic name (dim_param).
struct Dim {
  Dim(int64_t v) : value(v) {}                       // NOLINT(implicit)
  Dim(int v) : value(v) {}                           // NOLINT(implicit)
  Dim(const char* p) : value(-1), param(p) {}        // NOLINT(implicit)
  Dim(std::string p) : value(-1), param(std::move(p)) {}  // NOLINT(implicit)
  int64_t value;
  std::string param;
};

/// Fluent access to one NodeProto (valid while its ModelBuilder lives).
class NodeRef {
 public:
  explicit NodeRef(onnx::NodeProto* n) : n_(n) {}
  NodeRef& i(const std::string& name, int64_t v);
  NodeRef& f(const std::string& name, float v);
  NodeRef& s(const std::string& name, const std::string& v);
  NodeRef& ints(const std::string& name, const std::vector<int64_t>& v);
  NodeRef& floats(const std::string& name, const std::vector<float>& v);
  NodeRef& tensor(const std::string& name, const onnx::TensorProto& t);
  NodeRef& domain(const std::string& d);
  onnx::NodeProto& proto() { return *n_; }

 private:
  onnx::NodeProto* n_;
};

class ModelBuilder {
 public:
  /// How an initializer's values are stored: raw_data bytes, or the typed repeated field
  /// (float_data for float32, int64_data for int64).
  enum class Form { kRaw, kTyped };

  explicit ModelBuilder(int64_t opset = 13, std::string graph_name = "test_graph");

  /// Graph input with static and/or symbolic dims.
  ModelBuilder& input(const std::string& name, DType dtype, const std::vector<Dim>& dims);
  /// Graph output; dims optional (empty `dims` with `has_shape` false writes no shape).
  ModelBuilder& output(const std::string& name, DType dtype = DType::kFloat32, const std::vector<Dim>& dims = {},
                       bool has_shape = false);

  /// float32 / int64 initializers.
  ModelBuilder& initializer(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values,
                            Form form = Form::kRaw);
  ModelBuilder& initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& values, Form form = Form::kRaw);
  /// Adds an empty initializer (name, dtype, dims only) and returns it for hand-crafting
  /// (external data, mismatched raw_data, …).
  onnx::TensorProto& raw_initializer(const std::string& name, DType dtype, const std::vector<int64_t>& dims);

  /// Appends a node; empty strings in inputs/outputs are ONNX's "omitted optional".
  /// The name defaults to "<op_type>_<index>".
  NodeRef node(const std::string& op_type, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs, const std::string& name = "");
  /// A Constant node (attribute `value`) producing `output`.
  NodeRef constant(const std::string& output, const std::vector<int64_t>& dims, const std::vector<float>& values);
  NodeRef constant_i64(const std::string& output, const std::vector<int64_t>& dims, const std::vector<int64_t>& values);

  onnx::ModelProto& proto() { return model_; }
  const onnx::ModelProto& proto() const { return model_; }
  std::string serialize() const;
  std::vector<std::byte> bytes() const;
  /// Writes the serialized model to `path`.
  Status save(const std::string& path) const;

  /// Tensor helpers (also usable for Constant attributes).
  static onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                        const std::vector<float>& values, Form form = Form::kRaw);
  static onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& values, Form form = Form::kRaw);

 private:
  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
};

// ------------------------------------------------------------------------------------------------
// The demo model (`warpstream make-demo-model`)

/// Options of the deterministic demo CNN.
struct DemoModelOptions {
  uint32_t seed = 1;
  /// Adds the nodes that passes must remove without changing the result: an Identity after the
  /// first Relu, a Dropout (inference) after Flatten, and a dead branch (Sigmoid → Mul) whose
  /// result reaches no graph output.
  bool extras = true;
};

/// A small, deterministic CNN (opset 13), weights from std::mt19937(seed):
///
///   input "input" float32 [1, 3, 32, 32]
///   conv1  Conv 3→8, k3, s1, pads 1 (+bias)          → [1, 8, 32, 32]
///   bn1    BatchNormalization (eps 1e-5)             → [1, 8, 32, 32]
///   relu1  Relu
///   (extras: id1 Identity)
///   pad2   Pad constant 0, pads [0,0,1,1, 0,0,1,1]   → [1, 8, 34, 34]
///   conv2  Conv depthwise 8 (group 8), k3, s2 (+bias) → [1, 8, 16, 16]
///   clip2  Clip(min, max) with min = 0, max = 6 from Constant nodes (opset-13 input form)
///   conv3  Conv 1×1 8→16 (+bias)                      → [1, 16, 16, 16]
///   hsw3   HardSwish
///   pool4  MaxPool k2 s2                               → [1, 16, 8, 8]
///   avg5   AveragePool k3 s1 pads 1, count_include_pad 0 → [1, 16, 8, 8]
///   gap6   GlobalAveragePool                           → [1, 16, 1, 1]
///   flat6  Flatten (axis 1)                            → [1, 16]
///   (extras: drop6 Dropout, no ratio input = inference identity;
///            dead branch: dead_sig Sigmoid(clip2) → dead_mul Mul(dead_sig, dead_sig), unused)
///   fc     Gemm 16→10, transB = 1 (fc.weight stored [10, 16]), + fc.bias [10]
///   output "logits" float32 [1, 10]
///
/// Weights: a value u = gen() / 2^32 in [0, 1) is drawn from std::mt19937(seed) (the raw 32-bit
/// output, so the stream is identical on every standard library), in this order:
///   conv1.weight (216, ±1/√27), conv1.bias (8, ±0.1),
///   bn1.scale (8, 0.5..1.5), bn1.bias (8, ±0.2), bn1.mean (8, ±0.3), bn1.var (8, 0.5..1.5),
///   conv2.weight (72, ±1/√9), conv2.bias (8, ±0.1), conv3.weight (128, ±1/√8), conv3.bias (16, ±0.1),
///   fc.weight (160, ±1/√16), fc.bias (10, ±0.1)
/// where "±s" means (2u − 1)·s and "a..b" means a + u·(b − a). Storage: conv/fc tensors as raw_data;
/// the BatchNormalization parameters as float_data (so both initializer forms are exercised);
/// Pad's pads as int64_data.
onnx::ModelProto make_demo_model(const DemoModelOptions& options = {});

}  // namespace ws::ir
