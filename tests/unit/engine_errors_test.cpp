// Malformed and unsupported models: every refusal is a Status with the right code and a message
// naming what a user can act on (node, op type, opset, attribute, input, dim, initializer, file);
// nothing crashes and nothing allocates what a file merely promises.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "support/alloc_counter.h"
#include "support/demo_reference.h"
#include "support/engine_util.h"
#include "support/refusal_util.h"
#include "support/test_util.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

ModelBuilder relu_model() {
  ModelBuilder m(13);
  test::one_node_model(m, "Relu", {"x"}, "relu");
  return m;
}

TEST(EngineErrors, UnsupportedOpNamesNodeOpTypeAndOpset) {
  ModelBuilder m(13);
  test::one_node_model(m, "LpNormalization", {"x"}, "my_norm");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kUnsupported);
  EXPECT_MESSAGE_HAS(e, "'my_norm'");
  EXPECT_MESSAGE_HAS(e, "LpNormalization");
  EXPECT_MESSAGE_HAS(e, "opset 13");
}

// A value the ONNX spec forbids is an invalid model (onnx-test: a failure of the model), naming node and attribute.
TEST(EngineErrors, ForbiddenAttributeValueIsAnInvalidModelNamingTheAttribute) {
  ModelBuilder m(13);
  m.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  test::one_node_model(m, "Conv", {"x", "w"}, "conv_foo", {1, 1, 5, 5}).s("auto_pad", "FOO");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(e, "'auto_pad'");
  EXPECT_MESSAGE_HAS(e, "FOO");
  EXPECT_MESSAGE_HAS(e, "'conv_foo'");
  // More forbidden values: a perm that is not a permutation, a strides list of the wrong length.
  ModelBuilder t(13);
  test::one_node_model(t, "Transpose", {"x"}, "tr", {2, 3, 4}).ints("perm", {0, 0, 1});
  const Status te = test::build_status(t);
  EXPECT_EQ(te.code(), StatusCode::kInvalidModel) << te.to_string();
  EXPECT_MESSAGE_HAS(te, "'perm'");
  ModelBuilder c(13);
  c.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  test::one_node_model(c, "Conv", {"x", "w"}, "conv_s", {1, 1, 5, 5}).ints("strides", {1, 1, 1});
  const Status ce = test::build_status(c);
  EXPECT_EQ(ce.code(), StatusCode::kInvalidModel) << ce.to_string();
  EXPECT_MESSAGE_HAS(ce, "'strides'");
}

// Values that depend on the opset (found by the hostile-input check of 2026-12-02): Pad 'wrap' is opset 19
// (unsupported there, invalid before); a Pad mode no opset has is invalid; Resize's opset-18 attributes in an
// opset-13 model and a coordinate mode the spec does not name are invalid; Split's num_outputs together with the
// split input is invalid.
TEST(EngineErrors, OpsetDependentAttributeValues) {
  auto pad = [](int64_t opset, const std::string& mode) {
    ModelBuilder m(opset);
    m.initializer_i64("pads", {4}, {0, 1, 0, 1});
    test::one_node_model(m, "Pad", {"x", "pads"}, "pd", {2, 3}).s("mode", mode);
    return test::build_status(m);
  };
  EXPECT_EQ(pad(19, "wrap").code(), StatusCode::kUnsupported) << pad(19, "wrap").to_string();
  EXPECT_EQ(pad(13, "wrap").code(), StatusCode::kInvalidModel) << pad(13, "wrap").to_string();
  EXPECT_EQ(pad(19, "bogus").code(), StatusCode::kInvalidModel) << pad(19, "bogus").to_string();
  EXPECT_TRUE(pad(13, "reflect").is_ok()) << pad(13, "reflect").to_string();
  auto resize = [](int64_t opset, const std::string& attr, const std::string& value, int64_t ivalue) {
    ModelBuilder m(opset);
    m.initializer("scales", {4}, {1, 1, 2, 2});
    ir::NodeRef n = test::one_node_model(m, "Resize", {"x", "", "scales"}, "rs", {1, 1, 2, 2});
    if (value.empty()) n.i(attr, ivalue); else n.s(attr, value);
    return test::build_status(m);
  };
  EXPECT_EQ(resize(13, "antialias", "", 1).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(resize(18, "antialias", "", 1).code(), StatusCode::kUnsupported);
  EXPECT_EQ(resize(13, "coordinate_transformation_mode", "bogus", 0).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(resize(11, "coordinate_transformation_mode", "tf_half_pixel_for_nearest", 0).code(), StatusCode::kUnsupported);
  EXPECT_TRUE(resize(13, "coordinate_transformation_mode", "asymmetric", 0).is_ok());
  ModelBuilder sp(18);
  sp.input("x", DType::kFloat32, {4, 2});
  sp.initializer_i64("split", {2}, {1, 3});
  sp.node("Split", {"x", "split"}, {"a", "b"}, "sp").i("num_outputs", 2);
  sp.output("a");
  sp.output("b");
  const Status se = test::build_status(sp);
  EXPECT_EQ(se.code(), StatusCode::kInvalidModel) << se.to_string();
  EXPECT_MESSAGE_HAS(se, "'num_outputs'");
}

// A value the spec allows that this runtime does not implement stays kUnsupported (onnx-test: skip).
TEST(EngineErrors, AllowedButUnimplementedAttributeValueIsUnsupported) {
  ModelBuilder m(13);
  m.initializer("s", {1}, {1.0f});
  m.initializer("b", {1}, {0.0f});
  m.initializer("mean", {1}, {0.0f});
  m.initializer("var", {1}, {1.0f});
  test::one_node_model(m, "BatchNormalization", {"x", "s", "b", "mean", "var"}, "bn_train", {1, 1, 2, 2}).i("training_mode", 1);
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.to_string();
  EXPECT_MESSAGE_HAS(e, "'bn_train'");
}

TEST(EngineErrors, UnknownAttributeNamed) {
  ModelBuilder m(13);
  test::one_node_model(m, "Relu", {"x"}, "relu").i("frobnicate", 1);
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_MESSAGE_HAS(e, "'frobnicate'");
}

TEST(EngineErrors, NonDefaultDomainNamesNode) {
  ModelBuilder m(13);
  test::one_node_model(m, "Relu", {"x"}, "ms_relu").domain("com.microsoft");
  const Status g = test::import_status(m);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.code(), StatusCode::kUnsupported);
  EXPECT_MESSAGE_HAS(g, "'ms_relu'");
  EXPECT_MESSAGE_HAS(g, "com.microsoft");
}

ModelBuilder symbolic_model() {
  ModelBuilder m(13);
  m.input("images", DType::kFloat32, {"batch", 3, 4, 4});
  m.node("Relu", {"images"}, {"y"}, "relu");
  m.output("y");
  return m;
}

TEST(EngineErrors, SymbolicInputDimRefusedNamingInputAndDim) {
  auto g = test::import_builder(symbolic_model());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(g.status(), "'images'");
  EXPECT_MESSAGE_HAS(g.status(), "dim 0");
  EXPECT_MESSAGE_HAS(g.status(), "'batch'");
}

TEST(EngineErrors, SymbolicInputDimAcceptedWhenFixed) {
  ir::ImportOptions opt;
  opt.input_shapes["images"] = {1, 3, 4, 4};
  auto e = test::build_engine(symbolic_model(), opt);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->input_desc(0).shape, (ir::Shape{1, 3, 4, 4}));
  std::vector<float> x = test::random_floats(48, 8), want(48);
  for (int i = 0; i < 48; ++i) want[i] = std::max(0.0f, x[i]);
  EXPECT_EQ(test::run_engine(**e, {x}), want);
  // A fixed shape that contradicts a static dim is refused, naming the input.
  ir::ImportOptions bad;
  bad.input_shapes["images"] = {1, 1, 4, 4};
  auto g = test::import_builder(symbolic_model(), bad);
  ASSERT_FALSE(g.is_ok());
  EXPECT_MESSAGE_HAS(g.status(), "'images'");
}

TEST(EngineErrors, ExternalDataInitializerRefusedNamingIt) {
  ModelBuilder m = relu_model();
  onnx::TensorProto& t = m.raw_initializer("big_weight", DType::kFloat32, {1024});
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t.add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  const Status g = test::import_status(m);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.code(), StatusCode::kUnsupported);
  EXPECT_MESSAGE_HAS(g, "'big_weight'");
  EXPECT_MESSAGE_HAS(g, "external");
}

TEST(EngineErrors, GigabyteInitializerIsResourceExhaustedFastWithoutAllocating) {
  ModelBuilder m = relu_model();
  m.raw_initializer("huge", DType::kFloat32, {100000, 100000, 100});  // 4·10¹² bytes promised, none present
  const std::vector<std::byte> bytes = m.bytes();
  ASSERT_LT(bytes.size(), 4096u);
  test::reset_largest_allocation();
  const auto t0 = std::chrono::steady_clock::now();
  auto g = ir::import_onnx_bytes(bytes, "huge.onnx");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted);
  EXPECT_MESSAGE_HAS(g.status(), "'huge'");
  EXPECT_LT(seconds, 1.0);
  EXPECT_LT(test::largest_allocation(), uint64_t{1} << 20) << "no allocation anywhere near the promised size";
}

TEST(EngineErrors, InitializerJustOverTheLimitIsResourceExhausted) {
  // The limit is configurable; [1025] float = 4100 bytes > 4096.
  ModelBuilder m = relu_model();
  m.initializer("w", {1025}, std::vector<float>(1025, 0.5f));
  ir::ImportOptions opt;
  opt.max_tensor_bytes = 4096;
  auto g = test::import_builder(m, opt);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted);
  opt.max_tensor_bytes = 4100;
  EXPECT_TRUE(test::import_builder(m, opt).is_ok());
}

TEST(EngineErrors, RawDataSizeMismatchIsInvalidModel) {
  ModelBuilder m = relu_model();
  onnx::TensorProto& t = m.raw_initializer("short_w", DType::kFloat32, {4, 4});
  t.set_raw_data(std::string(60, '\0'));  // 64 needed
  const Status g = test::import_status(m);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(g, "'short_w'");
  EXPECT_MESSAGE_HAS(g, "64");
  EXPECT_MESSAGE_HAS(g, "60");
}

TEST(EngineErrors, TypedDataCountMismatchIsInvalidModel) {
  ModelBuilder m = relu_model();
  onnx::TensorProto& t = m.raw_initializer("short_i", DType::kInt64, {3});
  t.add_int64_data(1);
  t.add_int64_data(2);
  const Status g = test::import_status(m);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(g, "'short_i'");
}

TEST(EngineErrors, TypedAndRawFormsImportToTheSameValues) {
  ModelBuilder m = relu_model();
  const std::vector<float> f = {1.5f, -2.25f, 3.0f};
  const std::vector<int64_t> i = {7, -8, 1LL << 40};
  m.initializer("f_raw", {3}, f, ModelBuilder::Form::kRaw);
  m.initializer("f_typed", {3}, f, ModelBuilder::Form::kTyped);
  m.initializer_i64("i_raw", {3}, i, ModelBuilder::Form::kRaw);
  m.initializer_i64("i_typed", {3}, i, ModelBuilder::Form::kTyped);
  auto g = test::import_builder(m);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  for (const char* n : {"f_raw", "f_typed"}) {
    const ir::Tensor& t = g->tensor(g->find_tensor(n));
    EXPECT_EQ(std::vector<float>(t.data_as<float>(), t.data_as<float>() + 3), f) << n;
  }
  for (const char* n : {"i_raw", "i_typed"}) {
    const ir::Tensor& t = g->tensor(g->find_tensor(n));
    EXPECT_EQ(std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + 3), i) << n;
  }
}

std::string demo_bytes() {
  std::string s;
  ir::make_demo_model({.seed = 3}).SerializeToString(&s);
  return s;
}

TEST(EngineErrors, TruncatedModelIsInvalidModel) {
  test::TempDir dir;
  const std::string full = demo_bytes();
  const std::string path = dir.file("half.onnx");
  test::write_file(path, full.substr(0, full.size() / 2));
  auto g = ir::import_onnx(path);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(g.status(), path);
  EXPECT_MESSAGE_HAS(g.status(), std::to_string(full.size() / 2));  // the file size
}

TEST(EngineErrors, EveryTruncationFailsCleanly) {
  // Cut the demo model at many points: import (and build, if the prefix happens to parse) must
  // return a Status, never crash. A prefix that ends inside the graph cannot parse.
  const std::string full = demo_bytes();
  int refused = 0, cuts = 0;
  for (size_t cut = 0; cut < full.size(); cut += 37) {
    ++cuts;
    const std::string part = full.substr(0, cut);
    auto g = ir::import_onnx_bytes(std::as_bytes(std::span(part.data(), part.size())), "cut");
    if (!g.is_ok()) {
      ++refused;
      EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel) << "cut " << cut << ": " << g.status().to_string();
      continue;
    }
    auto e = CpuEngine::build(std::move(*g));  // whatever it says, it says it as a Status
    (void)e;
  }
  EXPECT_GE(refused, cuts - 2);
}

TEST(EngineErrors, RandomBytesAreInvalidModel) {
  std::mt19937 gen(2024);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::byte> bytes(1 + gen() % 4096);
    for (auto& b : bytes) b = static_cast<std::byte>(gen() & 0xFF);
    auto g = ir::import_onnx_bytes(bytes, "random.onnx");
    ASSERT_FALSE(g.is_ok()) << "trial " << trial;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel) << "trial " << trial << ": " << g.status().to_string();
  }
}

TEST(EngineErrors, EmptyFileIsInvalidModel) {
  test::TempDir dir;
  const std::string path = dir.file("empty.onnx");
  test::write_file(path, "");
  auto g = ir::import_onnx(path);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(g.status(), "empty");
}

TEST(EngineErrors, MissingFileIsNotFound) {
  test::TempDir dir;
  const std::string path = dir.file("nope.onnx");
  auto g = ir::import_onnx(path);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
  EXPECT_MESSAGE_HAS(g.status(), path);
  // A directory is not a model either.
  auto d = ir::import_onnx(dir.path().string());
  EXPECT_FALSE(d.is_ok());
}

TEST(EngineErrors, NodeReadingUndefinedTensorIsInvalidModel) {
  ModelBuilder m(13);
  test::one_node_model(m, "Add", {"x", "ghost"}, "adder");
  const Status g = test::import_status(m);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(g, "'adder'");
  EXPECT_MESSAGE_HAS(g, "'ghost'");
}

TEST(EngineErrors, OutputProducedByNoNodeIsInvalidModel) {
  ModelBuilder m = relu_model();
  m.output("phantom");
  const Status g = test::import_status(m);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(g, "'phantom'");
}

TEST(EngineErrors, NonFloatGraphInputRefusedAtBuild) {
  ModelBuilder m(13);
  m.input("ids", DType::kInt64, {1, 4});
  m.node("Identity", {"ids"}, {"y"});
  m.output("y");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kUnsupported);
  EXPECT_MESSAGE_HAS(e, "'ids'");
  EXPECT_MESSAGE_HAS(e, "int64");
}

TEST(EngineErrors, ConvWeightChannelMismatchIsInvalidModel) {
  ModelBuilder m(13);
  m.initializer("w", {4, 2, 3, 3}, std::vector<float>(72, 1.0f));
  test::one_node_model(m, "Conv", {"x", "w"}, "conv_bad", {1, 3, 5, 5});
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(e, "'conv_bad'");
}

}  // namespace
}  // namespace ws
