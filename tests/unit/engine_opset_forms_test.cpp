// Op forms that differ between opsets or attributes, each on hand-worked values: Clip bounds as
// attributes (opset 6) vs inputs (11, 13; omitted, empty-named, scalar initializer, Constant
// node), Reshape's 0 and −1, Gemm's transB/alpha/beta/C broadcasting, Softmax opset 11 (flatten at
// axis) vs 13 (single axis), and Conv output-shape inference with explicit and SAME_UPPER pads.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>

#include "reference/reference.h"
#include "support/engine_util.h"
#include "support/test_util.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

std::vector<float> run1(const ModelBuilder& m, const std::vector<float>& x, ir::Shape* out_shape = nullptr) {
  auto e = test::build_engine(m);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  if (!e.is_ok()) return {};
  if (out_shape) *out_shape = (*e)->output_desc(0).shape;
  return test::run_engine(**e, {x});
}

const std::vector<float> kClipX = {-1.0f, 0.5f, 7.0f};

TEST(EngineOpsetForms, Clip6BoundsAsAttributes) {
  ModelBuilder m(6);
  m.input("x", DType::kFloat32, {3});
  m.node("Clip", {"x"}, {"y"}).f("min", 0.0f).f("max", 6.0f);
  m.output("y");
  EXPECT_EQ(run1(m, kClipX), (std::vector<float>{0.0f, 0.5f, 6.0f}));
}

TEST(EngineOpsetForms, Clip11MinOnlyMaxOmittedByEmptyName) {
  ModelBuilder m(11);
  m.input("x", DType::kFloat32, {3});
  m.initializer("lo", {}, {0.0f});
  m.node("Clip", {"x", "lo", ""}, {"y"});
  m.output("y");
  EXPECT_EQ(run1(m, kClipX), (std::vector<float>{0.0f, 0.5f, 7.0f}));
}

TEST(EngineOpsetForms, Clip11MaxOnlyMinOmittedByEmptyName) {
  ModelBuilder m(11);
  m.input("x", DType::kFloat32, {3});
  m.initializer("hi", {}, {1.0f});
  m.node("Clip", {"x", "", "hi"}, {"y"});
  m.output("y");
  EXPECT_EQ(run1(m, kClipX), (std::vector<float>{-1.0f, 0.5f, 1.0f}));
}

TEST(EngineOpsetForms, Clip11NoBoundsIsIdentity) {
  ModelBuilder m(11);
  m.input("x", DType::kFloat32, {3});
  m.node("Clip", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(run1(m, kClipX), kClipX);
}

TEST(EngineOpsetForms, Clip13ScalarInitializerAndConstantNode) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {3});
  m.initializer("lo", {}, {0.0f});  // shape [] scalar initializer
  m.constant("hi", {}, {6.0f});     // Constant node
  m.node("Clip", {"x", "lo", "hi"}, {"y"});
  m.output("y");
  EXPECT_EQ(run1(m, kClipX), (std::vector<float>{0.0f, 0.5f, 6.0f}));
}

TEST(EngineOpsetForms, Clip13MinFromConstantNodeMaxFromScalarInitializer) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {3});
  m.constant("lo", {}, {0.25f});
  m.initializer("hi", {}, {5.0f});
  m.node("Clip", {"x", "lo", "hi"}, {"y"});
  m.output("y");
  EXPECT_EQ(run1(m, kClipX), (std::vector<float>{0.25f, 0.5f, 5.0f}));
}

TEST(EngineOpsetForms, Clip11AttributeFormRefusedNamingTheAttribute) {
  ModelBuilder m(11);
  m.input("x", DType::kFloat32, {3});
  m.node("Clip", {"x"}, {"y"}, "clip_attr").f("min", 0.0f);
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("'min'"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("clip_attr"), std::string::npos) << e.status().message();
}

TEST(EngineOpsetForms, ReshapeZeroCopiesAndMinusOneInfers) {
  const std::vector<float> x = test::random_floats(24, 3);
  struct Case { std::vector<int64_t> target; ir::Shape want; };
  for (const Case& c : {Case{{0, -1}, {2, 12}}, Case{{0, -1, 2}, {2, 6, 2}}, Case{{-1, 0, 0}, {2, 3, 4}},
                        Case{{4, 0, -1}, {4, 3, 2}}}) {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {2, 3, 4});
    m.initializer_i64("shape", {static_cast<int64_t>(c.target.size())}, c.target, ModelBuilder::Form::kTyped);
    m.node("Reshape", {"x", "shape"}, {"y"});
    m.output("y");
    ir::Shape got_shape;
    EXPECT_EQ(run1(m, x, &got_shape), x) << ir::shape_string(c.target);  // row-major data unchanged
    EXPECT_EQ(got_shape, c.want) << ir::shape_string(c.target);
  }
}

TEST(EngineOpsetForms, ReshapeTwoMinusOnesRefused) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3, 4});
  m.initializer_i64("shape", {2}, {-1, -1});
  m.node("Reshape", {"x", "shape"}, {"y"}, "bad_reshape");
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(e.status().message().find("bad_reshape"), std::string::npos);
}

// A [1,2] = [1,2]; B stored [3,2] with transB = 1 (rows [1,0], [0,1], [1,1]) so A·Bᵀ = [1,2,3];
// alpha 0.5, beta 2, C = 1 → 0.5·[1,2,3] + 2 = [2.5, 3, 3.5].
ModelBuilder gemm_model(const std::vector<int64_t>& c_dims, const std::vector<float>& c) {
  ModelBuilder m(13);
  m.input("a", DType::kFloat32, {1, 2});
  m.initializer("b", {3, 2}, {1, 0, 0, 1, 1, 1});
  m.initializer("c", c_dims, c);
  m.node("Gemm", {"a", "b", "c"}, {"y"}).i("transB", 1).f("alpha", 0.5f).f("beta", 2.0f);
  m.output("y");
  return m;
}

TEST(EngineOpsetForms, GemmTransBAlphaBetaWithCShapes) {
  const std::vector<float> want = {2.5f, 3.0f, 3.5f};
  ir::Shape shape;
  EXPECT_EQ(run1(gemm_model({3}, {1, 1, 1}), {1, 2}, &shape), want) << "C [3]";
  EXPECT_EQ(shape, (ir::Shape{1, 3}));
  EXPECT_EQ(run1(gemm_model({1}, {1}), {1, 2}), want) << "C [1]";
  EXPECT_EQ(run1(gemm_model({}, {1}), {1, 2}), want) << "C scalar []";
  EXPECT_EQ(run1(gemm_model({1, 3}, {1, 1, 1}), {1, 2}), want) << "C [1, 3]";
  // A C that differs per column is not folded into a scalar: 0.5·[1,2,3] + 2·[1,2,3] = [2.5,5,7.5].
  EXPECT_EQ(run1(gemm_model({3}, {1, 2, 3}), {1, 2}), (std::vector<float>{2.5f, 5.0f, 7.5f})) << "C [1,2,3]";
}

TEST(EngineOpsetForms, GemmTransAAndNoC) {
  // A stored [2,1] with transA = 1 → A = [[1, 2]]; B [2,3] = [[1,2,3],[4,5,6]] → [9, 12, 15].
  ModelBuilder m(13);
  m.input("a", DType::kFloat32, {2, 1});
  m.initializer("b", {2, 3}, {1, 2, 3, 4, 5, 6});
  m.node("Gemm", {"a", "b"}, {"y"}).i("transA", 1);
  m.output("y");
  EXPECT_EQ(run1(m, {1, 2}), (std::vector<float>{9, 12, 15}));
}

TEST(EngineOpsetForms, GemmCThatDoesNotBroadcastRefused) {
  auto e = test::build_engine(gemm_model({2}, {1, 1}));
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(e.status().message().find("C [2]"), std::string::npos) << e.status().message();
}

// Softmax of x [2,3,4], computed here in double: over `len` consecutive groups at stride `inner`.
std::vector<float> softmax_ref(const std::vector<float>& x, int outer, int len, int inner) {
  std::vector<float> y(x.size());
  for (int o = 0; o < outer; ++o)
    for (int i = 0; i < inner; ++i) {
      double mx = -1e300, sum = 0;
      for (int k = 0; k < len; ++k) mx = std::max(mx, double(x[(o * len + k) * inner + i]));
      for (int k = 0; k < len; ++k) sum += std::exp(double(x[(o * len + k) * inner + i]) - mx);
      for (int k = 0; k < len; ++k)
        y[(o * len + k) * inner + i] = static_cast<float>(std::exp(double(x[(o * len + k) * inner + i]) - mx) / sum);
    }
  return y;
}

std::vector<float> run_softmax(int opset, const std::vector<float>& x, std::optional<int64_t> axis) {
  ModelBuilder m(opset);
  m.input("x", DType::kFloat32, {2, 3, 4});
  auto n = m.node("Softmax", {"x"}, {"y"});
  if (axis) n.i("axis", *axis);
  m.output("y");
  return run1(m, x);
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::fabs(want[i])) << what << " at " << i;
}

TEST(EngineOpsetForms, SoftmaxOpset11FlattensOpset13UsesOneAxis) {
  const std::vector<float> x = test::random_floats(24, 17, -3.0f, 3.0f);
  // Opset 11, default axis 1: [2, 12] rows. Opset 13, default axis −1: groups of 4.
  const auto s11 = run_softmax(11, x, std::nullopt), s13 = run_softmax(13, x, std::nullopt);
  expect_near_all(s11, softmax_ref(x, 2, 12, 1), "opset 11 default");
  expect_near_all(s13, softmax_ref(x, 6, 4, 1), "opset 13 default");
  // axis = 1 explicitly: opset 11 still flattens [2, 12]; opset 13 normalises the 3 along axis 1.
  const auto a11 = run_softmax(11, x, 1), a13 = run_softmax(13, x, 1);
  expect_near_all(a11, softmax_ref(x, 2, 12, 1), "opset 11 axis 1");
  expect_near_all(a13, softmax_ref(x, 2, 3, 4), "opset 13 axis 1");
  // The two semantics really differ on this input.
  EXPECT_GT(std::fabs(a11[0] - a13[0]), 0.01f);
  // Row sums: 12 elements per row (opset 11), 3 along axis 1 (opset 13).
  double r11 = 0, r13 = 0;
  for (int k = 0; k < 12; ++k) r11 += a11[k];
  for (int k = 0; k < 3; ++k) r13 += a13[k * 4];
  EXPECT_NEAR(r11, 1.0, 1e-5);
  EXPECT_NEAR(r13, 1.0, 1e-5);
}

// ------------------------------------------------------------------------------------------------
// Conv output shapes

ir::Shape conv_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                     const std::function<void(ir::NodeRef&)>& attrs) {
  ModelBuilder m(13);
  std::vector<ir::Dim> xd(x.begin(), x.end());
  m.input("x", DType::kFloat32, xd);
  int64_t n = 1;
  for (int64_t d : w) n *= d;
  m.initializer("w", w, std::vector<float>(static_cast<size_t>(n), 1.0f));
  auto node = m.node("Conv", {"x", "w"}, {"y"});
  attrs(node);
  m.output("y");
  auto g = test::import_builder(m);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  if (!g.is_ok()) return {};
  Status s = ir::infer_shapes(*g);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return g->tensor(g->find_tensor("y")).shape;
}

TEST(EngineConvShapes, ExplicitAsymmetricPadsAndStride) {
  // H: (7 + 1 + 1 − 3)/2 + 1 = 4; W: (5 + 0 + 0 − 3)/2 + 1 = 2. pads = [h_b, w_b, h_e, w_e].
  EXPECT_EQ(conv_shape({1, 1, 7, 5}, {1, 1, 3, 3}, [](ir::NodeRef& n) { n.ints("pads", {1, 0, 1, 0}).ints("strides", {2, 2}); }),
            (ir::Shape{1, 1, 4, 2}));
}

TEST(EngineConvShapes, SameUpperK3S2) {
  // ceil(7/2) = 4, ceil(5/2) = 3.
  EXPECT_EQ(conv_shape({1, 1, 7, 5}, {1, 1, 3, 3}, [](ir::NodeRef& n) { n.s("auto_pad", "SAME_UPPER").ints("strides", {2, 2}); }),
            (ir::Shape{1, 1, 4, 3}));
}

TEST(EngineConvShapes, SameUpperValuesMatchExplicitPadding) {
  // SAME_UPPER on 7×5, k3 s2: total pad (4−1)·2+3−7 = 2 → 1/1 on H; (3−1)·2+3−5 = 2 → 1/1 on W.
  const auto x = test::random_floats(35, 5), w = test::random_floats(9, 6);
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 7, 5});
  m.initializer("w", {1, 1, 3, 3}, w);
  m.node("Conv", {"x", "w"}, {"y"}).s("auto_pad", "SAME_UPPER").ints("strides", {2, 2});
  m.output("y");
  ref::ConvParams p;
  p.in[0] = 7; p.in[1] = 5; p.kernel[0] = p.kernel[1] = 3; p.stride[0] = p.stride[1] = 2;
  p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 1; p.out[0] = 4; p.out[1] = 3;
  std::vector<float> want(12);
  ref::conv_nd(x.data(), w.data(), nullptr, want.data(), p);
  expect_near_all(run1(m, x), want, "SAME_UPPER conv");
}

TEST(EngineConvShapes, SameUpperPadClampedToZero) {
  // in 500, k5, s10: out = ceil(500/10) = 50; needed pad (50−1)·10+5−500 = −5 → 0.
  EXPECT_EQ(conv_shape({1, 1, 500}, {1, 1, 5}, [](ir::NodeRef& n) { n.s("auto_pad", "SAME_UPPER").ints("strides", {10}); }),
            (ir::Shape{1, 1, 50}));
  // And the values: y[i] = Σ_k x[10i + k]·w[k] with no padding anywhere.
  const auto x = test::random_floats(500, 7), w = std::vector<float>{1, -2, 3, -4, 5};
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 500});
  m.initializer("w", {1, 1, 5}, w);
  m.node("Conv", {"x", "w"}, {"y"}).s("auto_pad", "SAME_UPPER").ints("strides", {10});
  m.output("y");
  std::vector<float> want(50);
  for (int i = 0; i < 50; ++i) {
    double acc = 0;
    for (int k = 0; k < 5; ++k) acc += double(x[10 * i + k]) * w[k];
    want[i] = static_cast<float>(acc);
  }
  expect_near_all(run1(m, x), want, "strided conv");
}

TEST(EngineConvShapes, SameLowerPutsTheOddPadAtTheStart) {
  // 6 wide, k2 s1: total pad 1 → SAME_LOWER pads begin 1, end 0; out 6. Values with w = [1, 10]:
  // y[0] = 0·1 + x0·10, y[i] = x[i−1] + 10·x[i].
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 6});
  m.initializer("w", {1, 1, 2}, {1, 10});
  m.node("Conv", {"x", "w"}, {"y"}).s("auto_pad", "SAME_LOWER");
  m.output("y");
  EXPECT_EQ(run1(m, {1, 2, 3, 4, 5, 6}), (std::vector<float>{10, 21, 32, 43, 54, 65}));
}

}  // namespace
}  // namespace ws
