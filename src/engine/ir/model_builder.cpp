// ONNX model writing for tests and the demo model; see engine/ir/model_builder.h.
#include "engine/ir/model_builder.h"

#include "core/file_io.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

namespace ws::ir {

// ------------------------------------------------------------------------------------------------
// NodeRef

namespace {
onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name, onnx::AttributeProto::AttributeType t) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}
}  // namespace

NodeRef& NodeRef::i(const std::string& name, int64_t v) {
  add_attr(n_, name, onnx::AttributeProto::INT)->set_i(v);
  return *this;
}
NodeRef& NodeRef::f(const std::string& name, float v) {
  add_attr(n_, name, onnx::AttributeProto::FLOAT)->set_f(v);
  return *this;
}
NodeRef& NodeRef::s(const std::string& name, const std::string& v) {
  add_attr(n_, name, onnx::AttributeProto::STRING)->set_s(v);
  return *this;
}
NodeRef& NodeRef::ints(const std::string& name, const std::vector<int64_t>& v) {
  auto* a = add_attr(n_, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
  return *this;
}
NodeRef& NodeRef::floats(const std::string& name, const std::vector<float>& v) {
  auto* a = add_attr(n_, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
  return *this;
}
NodeRef& NodeRef::tensor(const std::string& name, const onnx::TensorProto& t) {
  *add_attr(n_, name, onnx::AttributeProto::TENSOR)->mutable_t() = t;
  return *this;
}
NodeRef& NodeRef::domain(const std::string& d) {
  n_->set_domain(d);
  return *this;
}

// ------------------------------------------------------------------------------------------------
// ModelBuilder

ModelBuilder::ModelBuilder(int64_t opset, std::string graph_name) {
  model_.set_ir_version(opset >= 13 ? 7 : 6);
  model_.set_producer_name("warpstream-model-builder");
  auto* os = model_.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  graph_ = model_.mutable_graph();
  graph_->set_name(std::move(graph_name));
}

namespace {
void set_type(onnx::ValueInfoProto* vi, DType dtype, const std::vector<Dim>& dims, bool has_shape) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(dtype));
  if (!has_shape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dp = shape->add_dim();
    if (d.param.empty() && d.value >= 0) dp->set_dim_value(d.value);
    else if (!d.param.empty()) dp->set_dim_param(d.param);
    // value < 0 and no param: an unknown dim with neither field set
  }
}
}  // namespace

ModelBuilder& ModelBuilder::input(const std::string& name, DType dtype, const std::vector<Dim>& dims) {
  auto* vi = graph_->add_input();
  vi->set_name(name);
  set_type(vi, dtype, dims, true);
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name, DType dtype, const std::vector<Dim>& dims, bool has_shape) {
  auto* vi = graph_->add_output();
  vi->set_name(name);
  set_type(vi, dtype, dims, has_shape || !dims.empty());
  return *this;
}

onnx::TensorProto ModelBuilder::float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                             const std::vector<float>& values, Form form) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  if (form == Form::kRaw) {
    std::string raw(values.size() * sizeof(float), '\0');
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    t.set_raw_data(raw);
  } else {
    for (float v : values) t.add_float_data(v);
  }
  return t;
}

onnx::TensorProto ModelBuilder::int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                             const std::vector<int64_t>& values, Form form) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  if (form == Form::kRaw) {
    std::string raw(values.size() * sizeof(int64_t), '\0');
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    t.set_raw_data(raw);
  } else {
    for (int64_t v : values) t.add_int64_data(v);
  }
  return t;
}

ModelBuilder& ModelBuilder::initializer(const std::string& name, const std::vector<int64_t>& dims,
                                        const std::vector<float>& values, Form form) {
  *graph_->add_initializer() = float_tensor(name, dims, values, form);
  return *this;
}

ModelBuilder& ModelBuilder::initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& values, Form form) {
  *graph_->add_initializer() = int64_tensor(name, dims, values, form);
  return *this;
}

onnx::TensorProto& ModelBuilder::raw_initializer(const std::string& name, DType dtype, const std::vector<int64_t>& dims) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(static_cast<int32_t>(dtype));
  for (int64_t d : dims) t->add_dims(d);
  return *t;
}

NodeRef ModelBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  n->set_name(name.empty() ? op_type + "_" + std::to_string(graph_->node_size() - 1) : name);
  for (const auto& in : inputs) n->add_input(in);
  for (const auto& out : outputs) n->add_output(out);
  return NodeRef(n);
}

NodeRef ModelBuilder::constant(const std::string& output, const std::vector<int64_t>& dims,
                               const std::vector<float>& values) {
  return node("Constant", {}, {output}, output + "_const").tensor("value", float_tensor(output, dims, values));
}

NodeRef ModelBuilder::constant_i64(const std::string& output, const std::vector<int64_t>& dims,
                                   const std::vector<int64_t>& values) {
  return node("Constant", {}, {output}, output + "_const").tensor("value", int64_tensor(output, dims, values));
}

std::string ModelBuilder::serialize() const {
  std::string out;
  model_.SerializeToString(&out);
  return out;
}

std::vector<std::byte> ModelBuilder::bytes() const {
  const std::string s = serialize();
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

Status ModelBuilder::save(const std::string& path) const {
  const std::string s = serialize();
  return write_file(path, s.data(), s.size(), "model file");
}

// ------------------------------------------------------------------------------------------------
// Demo model

namespace {
class WeightStream {
 public:
  explicit WeightStream(uint32_t seed) : gen_(seed) {}
  double u() { return static_cast<double>(gen_()) * (1.0 / 4294967296.0); }
  std::vector<float> sym(size_t n, double s) {  // (2u − 1)·s
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>((2.0 * u() - 1.0) * s);
    return v;
  }
  std::vector<float> range(size_t n, double a, double b) {  // a + u·(b − a)
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(a + u() * (b - a));
    return v;
  }

 private:
  std::mt19937 gen_;
};
}  // namespace

onnx::ModelProto make_demo_model(const DemoModelOptions& opt) {
  using F = ModelBuilder::Form;
  WeightStream ws(opt.seed);
  ModelBuilder b(13, "warpstream_demo");
  b.proto().set_doc_string("WarpStream demo CNN, seed " + std::to_string(opt.seed));
  b.input("input", DType::kFloat32, {1, 3, 32, 32});

  b.initializer("conv1.weight", {8, 3, 3, 3}, ws.sym(216, 1.0 / std::sqrt(27.0)));
  b.initializer("conv1.bias", {8}, ws.sym(8, 0.1));
  b.initializer("bn1.scale", {8}, ws.range(8, 0.5, 1.5), F::kTyped);
  b.initializer("bn1.bias", {8}, ws.sym(8, 0.2), F::kTyped);
  b.initializer("bn1.mean", {8}, ws.sym(8, 0.3), F::kTyped);
  b.initializer("bn1.var", {8}, ws.range(8, 0.5, 1.5), F::kTyped);
  b.initializer("conv2.weight", {8, 1, 3, 3}, ws.sym(72, 1.0 / 3.0));
  b.initializer("conv2.bias", {8}, ws.sym(8, 0.1));
  b.initializer("conv3.weight", {16, 8, 1, 1}, ws.sym(128, 1.0 / std::sqrt(8.0)));
  b.initializer("conv3.bias", {16}, ws.sym(16, 0.1));
  b.initializer("fc.weight", {10, 16}, ws.sym(160, 0.25));
  b.initializer("fc.bias", {10}, ws.sym(10, 0.1));
  b.initializer_i64("pad2.pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1}, F::kTyped);
  b.initializer("pad2.value", {}, {0.0f});

  b.node("Conv", {"input", "conv1.weight", "conv1.bias"}, {"conv1"}, "conv1")
      .ints("kernel_shape", {3, 3}).ints("strides", {1, 1}).ints("pads", {1, 1, 1, 1});
  b.node("BatchNormalization", {"conv1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"}, {"bn1"}, "bn1")
      .f("epsilon", 1e-5f);
  b.node("Relu", {"bn1"}, {"relu1"}, "relu1");
  std::string pad_in = "relu1";
  if (opt.extras) {
    b.node("Identity", {"relu1"}, {"id1"}, "id1");
    pad_in = "id1";
  }
  b.node("Pad", {pad_in, "pad2.pads", "pad2.value"}, {"pad2"}, "pad2").s("mode", "constant");
  b.node("Conv", {"pad2", "conv2.weight", "conv2.bias"}, {"conv2"}, "conv2")
      .ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).i("group", 8);
  b.constant("clip2.min", {}, {0.0f});
  b.constant("clip2.max", {}, {6.0f});
  b.node("Clip", {"conv2", "clip2.min", "clip2.max"}, {"clip2"}, "clip2");
  b.node("Conv", {"clip2", "conv3.weight", "conv3.bias"}, {"conv3"}, "conv3").ints("kernel_shape", {1, 1});
  b.node("HardSwish", {"conv3"}, {"hsw3"}, "hsw3");
  b.node("MaxPool", {"hsw3"}, {"pool4"}, "pool4").ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  b.node("AveragePool", {"pool4"}, {"avg5"}, "avg5")
      .ints("kernel_shape", {3, 3}).ints("strides", {1, 1}).ints("pads", {1, 1, 1, 1}).i("count_include_pad", 0);
  b.node("GlobalAveragePool", {"avg5"}, {"gap6"}, "gap6");
  b.node("Flatten", {"gap6"}, {"flat6"}, "flat6").i("axis", 1);
  std::string fc_in = "flat6";
  if (opt.extras) {
    b.node("Dropout", {"flat6"}, {"drop6"}, "drop6");
    fc_in = "drop6";
    b.node("Sigmoid", {"clip2"}, {"dead_sig"}, "dead_sig");
    b.node("Mul", {"dead_sig", "dead_sig"}, {"dead_mul"}, "dead_mul");
  }
  b.node("Gemm", {fc_in, "fc.weight", "fc.bias"}, {"logits"}, "fc").i("transB", 1).f("alpha", 1.0f).f("beta", 1.0f);
  b.output("logits", DType::kFloat32, {1, 10});
  return b.proto();
}

}  // namespace ws::ir
