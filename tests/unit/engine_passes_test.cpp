// Graph passes (include/warpstream/graph.h): each checked for what it removes or rewrites and,
// through the CPU executor, for leaving the numbers unchanged against an unoptimised ws::ref
// evaluation. Tolerance where folding re-rounds weights: |got − want| <= 1e-6 + 1e-5·|want|.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/pad.h"
#include "reference/reference.h"
#include "support/engine_util.h"
#include "support/test_util.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

constexpr double kRtol = 1e-5, kAtol = 1e-6;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], kAtol + kRtol * std::fabs(want[i])) << what << " at " << i;
}

int count_ops(const ir::Graph& g, const std::string& op) {
  auto h = g.op_histogram();
  return h.count(op) ? h[op] : 0;
}

const ir::Node* find_node(const ir::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

// Conv [1,2,5,5] ⊛ W[3,2,3,3] (pads 1) → BN(eps 1e-3) → y
struct ConvBn {
  std::vector<float> x = test::random_floats(50, 1), w = test::random_floats(54, 2), b = test::random_floats(3, 3);
  std::vector<float> scale = {0.5f, 1.5f, -2.0f}, beta = {0.1f, -0.2f, 0.3f}, mean = {0.05f, -0.5f, 1.0f},
                     var = {0.25f, 2.0f, 0.01f};
  ModelBuilder model(bool with_bias, bool conv_out_also_output) const {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 2, 5, 5});
    m.initializer("w", {3, 2, 3, 3}, w);
    if (with_bias) m.initializer("b", {3}, b);
    m.initializer("scale", {3}, scale);
    m.initializer("beta", {3}, beta, ModelBuilder::Form::kTyped);
    m.initializer("mean", {3}, mean);
    m.initializer("var", {3}, var, ModelBuilder::Form::kTyped);
    m.node("Conv", with_bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, {"c"},
           "conv").ints("pads", {1, 1, 1, 1});
    m.node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"y"}, "bn").f("epsilon", 1e-3f);
    m.output("y");
    if (conv_out_also_output) m.output("c");
    return m;
  }
  std::vector<float> conv(bool with_bias) const {
    ref::ConvParams p;
    p.c_in = 2; p.c_out = 3; p.in[0] = p.in[1] = 5; p.kernel[0] = p.kernel[1] = 3;
    p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 1; p.out[0] = p.out[1] = 5;
    std::vector<float> y(75);
    ref::conv_nd(x.data(), w.data(), with_bias ? b.data() : nullptr, y.data(), p);
    return y;
  }
  std::vector<float> reference(bool with_bias) const {
    std::vector<float> c = conv(with_bias), y(75);
    ref::batch_norm_inference(c.data(), scale.data(), beta.data(), mean.data(), var.data(), 1e-3f, y.data(), 1, 3, 25);
    return y;
  }
};

TEST(EnginePasses, BatchNormFoldsIntoConvWithBias) {
  ConvBn cb;
  auto g = test::import_builder(cb.model(true, false));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(ir::infer_shapes(*g).is_ok());
  ASSERT_EQ(count_ops(*g, "BatchNormalization"), 1);
  ASSERT_TRUE(ir::fold_batch_norm_into_conv(*g).is_ok());
  EXPECT_EQ(count_ops(*g, "BatchNormalization"), 0);
  ASSERT_EQ(g->nodes.size(), 1u);
  const ir::Node& conv = g->nodes[0];
  EXPECT_EQ(g->tensor(conv.outputs[0]).name, "y");  // the conv now writes BN's output
  ASSERT_EQ(conv.inputs.size(), 3u);
  // W' = W·s/√(v+ε), b' = (b − m)·s/√(v+ε) + β, worked out here in double.
  const float* wf = g->tensor(conv.inputs[1]).data_as<float>();
  const float* bf = g->tensor(conv.inputs[2]).data_as<float>();
  for (int o = 0; o < 3; ++o) {
    const double s = cb.scale[o] / std::sqrt(static_cast<double>(cb.var[o]) + 1e-3f);
    for (int j = 0; j < 18; ++j) EXPECT_NEAR(wf[o * 18 + j], cb.w[o * 18 + j] * s, 1e-6 * std::fabs(cb.w[o * 18 + j] * s) + 1e-9);
    EXPECT_NEAR(bf[o], (cb.b[o] - cb.mean[o]) * s + cb.beta[o], 1e-6);
  }
  // The folded engine against conv-then-BN.
  auto e = test::build_engine(cb.model(true, false));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(count_ops((*e)->graph(), "BatchNormalization"), 0);
  expect_close(test::run_engine(**e, {cb.x}), cb.reference(true), "folded conv+bn");
}

TEST(EnginePasses, BatchNormFoldsIntoConvWithoutBias) {
  ConvBn cb;
  auto e = test::build_engine(cb.model(false, false));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->graph().op_histogram(), (std::map<std::string, int>{{"Conv", 1}}));
  expect_close(test::run_engine(**e, {cb.x}), cb.reference(false), "folded conv(no bias)+bn");
}

TEST(EnginePasses, BatchNormNotFoldedWhenConvOutputIsAlsoUsed) {
  ConvBn cb;
  auto e = test::build_engine(cb.model(true, true));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(count_ops((*e)->graph(), "BatchNormalization"), 1);
  expect_close(test::run_engine(**e, {cb.x}, 0), cb.reference(true), "y");
  expect_close(test::run_engine(**e, {cb.x}, 1), cb.conv(true), "c");
}

// Pad [1,2,6,6] → Conv k3 with its own pads; the folded conv pads are the sum.
ModelBuilder pad_conv_model(const std::vector<float>& w, float pad_value, const std::string& mode) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 6, 6});
  m.initializer_i64("pads", {8}, {0, 0, 1, 2, 0, 0, 0, 1});
  m.initializer("pv", {}, {pad_value});
  m.initializer("w", {2, 2, 3, 3}, w);
  m.node("Pad", {"x", "pads", "pv"}, {"p"}, "pad").s("mode", mode);
  m.node("Conv", {"p", "w"}, {"y"}, "conv").ints("pads", {0, 1, 1, 0});
  m.output("y");
  return m;
}

std::vector<float> pad_conv_reference(const std::vector<float>& x, const std::vector<float>& w, float value,
                                      ref::PadMode mode) {
  // Pad: H 6 → 1+6+0 = 7, W 6 → 2+6+1 = 9; conv pads (0,1 | 1,0): H 7+0+1 = 8 → 6, W 9+1+0 = 10 → 8.
  std::vector<float> p(2 * 7 * 9), y(2 * 6 * 8);
  const std::vector<int64_t> xd{1, 2, 6, 6}, pads{0, 0, 1, 2, 0, 0, 0, 1};
  ref::pad(x.data(), xd, pads, mode, value, p.data());
  ref::ConvParams c;
  c.c_in = 2; c.c_out = 2; c.in[0] = 7; c.in[1] = 9; c.kernel[0] = c.kernel[1] = 3;
  c.pad_begin[0] = 0; c.pad_begin[1] = 1; c.pad_end[0] = 1; c.pad_end[1] = 0;
  c.out[0] = 6; c.out[1] = 8;
  ref::conv_nd(p.data(), w.data(), nullptr, y.data(), c);
  return y;
}

TEST(EnginePasses, ZeroConstantPadFoldsIntoConvPads) {
  const auto x = test::random_floats(72, 10), w = test::random_floats(36, 11);
  auto g = test::import_builder(pad_conv_model(w, 0.0f, "constant"));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(ir::infer_shapes(*g).is_ok());
  ASSERT_TRUE(ir::fold_pad_into_conv(*g).is_ok());
  EXPECT_EQ(count_ops(*g, "Pad"), 0);
  const ir::Node* conv = find_node(*g, "conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(g->tensor(conv->inputs[0]).name, "x");
  ASSERT_NE(conv->find("pads"), nullptr);
  EXPECT_EQ(conv->find("pads")->ints, (std::vector<int64_t>{1, 3, 1, 1}));  // [h_b, w_b, h_e, w_e]
  auto e = test::build_engine(pad_conv_model(w, 0.0f, "constant"));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->output_desc(0).shape, (ir::Shape{1, 2, 6, 8}));
  expect_close(test::run_engine(**e, {x}), pad_conv_reference(x, w, 0.0f, ref::PadMode::kConstant), "pad folded");
}

TEST(EnginePasses, NonZeroOrReflectPadIsNotFolded) {
  const auto x = test::random_floats(72, 12), w = test::random_floats(36, 13);
  struct Case { float value; const char* mode; ref::PadMode m; };
  for (const Case& c : {Case{0.5f, "constant", ref::PadMode::kConstant}, Case{0.0f, "reflect", ref::PadMode::kReflect},
                        Case{0.0f, "edge", ref::PadMode::kEdge}}) {
    auto e = test::build_engine(pad_conv_model(w, c.value, c.mode));
    ASSERT_TRUE(e.is_ok()) << c.mode << ": " << e.status().to_string();
    EXPECT_EQ(count_ops((*e)->graph(), "Pad"), 1) << c.mode;
    expect_close(test::run_engine(**e, {x}), pad_conv_reference(x, w, c.value, c.m), c.mode);
  }
}

TEST(EnginePasses, IdentityAndDropoutRemoved) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 5});
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("Identity", {"r"}, {"i"}, "identity");
  m.node("Dropout", {"i"}, {"d"}, "dropout");
  m.node("Sigmoid", {"d"}, {"y"}, "sigmoid");
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->graph().op_histogram(), (std::map<std::string, int>{{"Relu", 1}, {"Sigmoid", 1}}));
  const std::vector<float> x = {-2, -0.5f, 0, 0.5f, 2, -1, 1, 3, -3, 0.25f};
  std::vector<float> want(10);
  for (int i = 0; i < 10; ++i) want[i] = static_cast<float>(1.0 / (1.0 + std::exp(-std::max(0.0, double(x[i])))));
  expect_close(test::run_engine(**e, {x}), want, "relu→sigmoid");
}

TEST(EnginePasses, IdentityThatIsAGraphOutputIsKept) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {4});
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("Identity", {"r"}, {"y"}, "identity");
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->output_desc(0).name, "y");
  expect_close(test::run_engine(**e, {{-1, 2, -3, 4}}), {0, 2, 0, 4}, "identity output");
}

TEST(EnginePasses, DeadNodesAndTheirConstantsDropped) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {3});
  m.initializer("k", {3}, {10, 20, 30});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.node("Sigmoid", {"x"}, {"d1"}, "dead1");
  m.node("Mul", {"d1", "k"}, {"d2"}, "dead2");
  m.output("y");
  auto g = test::import_builder(m);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(ir::infer_shapes(*g).is_ok());
  ASSERT_TRUE(ir::eliminate_dead_nodes(*g).is_ok());
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].name, "relu");
  EXPECT_FALSE(g->tensor(g->find_tensor("k")).is_constant()) << "unused initializer data released";
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->step_count(), 1u);
  expect_close(test::run_engine(**e, {{-1, 0.5f, 2}}), {0, 0.5f, 2}, "relu");
}

TEST(EnginePasses, ConstantSubgraphFolded) {
  // (Constant [1,2,3] + initializer [10,20,30]) is folded to [11,22,33] before the run.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3});
  m.constant("c1", {3}, {1, 2, 3});
  m.initializer("c2", {3}, {10, 20, 30});
  m.node("Add", {"c1", "c2"}, {"c3"}, "const_add");
  m.node("Mul", {"x", "c3"}, {"y"}, "mul");
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->graph().op_histogram(), (std::map<std::string, int>{{"Mul", 1}}));
  const ir::Tensor& c3 = (*e)->graph().tensor((*e)->graph().find_tensor("c3"));
  ASSERT_TRUE(c3.is_constant());
  EXPECT_EQ(std::vector<float>(c3.data_as<float>(), c3.data_as<float>() + 3), (std::vector<float>{11, 22, 33}));
  expect_close(test::run_engine(**e, {{1, 1, 1, 2, -1, 0}}), {11, 22, 33, 22, -22, 0}, "x * c3");
}

TEST(EnginePasses, ShapeReshapeChainFolded) {
  // x [2,3,4] → Shape(end=1) = [2] → Concat([2], Constant [-1]) = [2,-1] → Reshape → [2,12] → Relu.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3, 4});
  m.node("Shape", {"x"}, {"s"}, "shape").i("end", 1);
  m.constant_i64("minus1", {1}, {-1});
  m.node("Concat", {"s", "minus1"}, {"target"}, "concat").i("axis", 0);
  m.node("Reshape", {"x", "target"}, {"r"}, "reshape");
  m.node("Relu", {"r"}, {"y"}, "relu");
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->graph().op_histogram(), (std::map<std::string, int>{{"Relu", 1}, {"Reshape", 1}}));
  const ir::Tensor& t = (*e)->graph().tensor((*e)->graph().find_tensor("target"));
  ASSERT_TRUE(t.is_constant());
  EXPECT_EQ(std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + t.elements()), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ((*e)->output_desc(0).shape, (ir::Shape{2, 12}));
  std::vector<float> x = test::random_floats(24, 21), want(24);
  for (int i = 0; i < 24; ++i) want[i] = std::max(0.0f, x[i]);
  expect_close(test::run_engine(**e, {x}), want, "reshape+relu");
}

}  // namespace
}  // namespace ws
