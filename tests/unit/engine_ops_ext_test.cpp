// engine_ops_ext_test.cpp — the issue-14 ops through import → optimize → CPU executor, on
// hand-worked values: an int64 shape subgraph (Shape → Gather → Unsqueeze → Concat → Reshape)
// folded away at build, Split/Slice/Where/Equal/Cast/ReduceMean forms per opset, the legacy
// (opset < 7) `broadcast`/`axis` of Add, and models the spec rules out reported as invalid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/ir/model_builder.h"
#include "support/alloc_counter.h"
#include "support/engine_util.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;
using V = std::vector<float>;

V iota(size_t n) {
  V v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(EngineOpsExt, ShapeSubgraphFoldsToOneReshape) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3, 4});
  m.node("Shape", {"x"}, {"s"});
  m.constant_i64("i0", {}, {0});
  m.node("Gather", {"s", "i0"}, {"n"}).i("axis", 0);
  m.constant_i64("ax", {1}, {0});
  m.node("Unsqueeze", {"n", "ax"}, {"n1"});
  m.constant_i64("m1", {1}, {-1});
  m.node("Concat", {"n1", "m1"}, {"shape"}).i("axis", 0);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  auto g = test::import_builder(m);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(ir::optimize(*g).is_ok());
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op_type, "Reshape");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->output_desc(0).shape, (ir::Shape{2, 12}));
  EXPECT_EQ(test::run_engine(**e, {iota(24)}), iota(24));
}

// Size of a tensor whose shape is known folds at build (its kernel reads no data), and an inference Dropout's
// mask output becomes an all-true constant that leaves the node: both then reach the CUDA executor as constant
// graph outputs (issue 14: test_size, test_dropout_default_mask of the node suite).
TEST(EngineOpsExt, SizeAndDropoutMaskFoldToConstants) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3, 4});
  m.node("Size", {"x"}, {"n"});
  m.constant("ratio", {}, {0.25f});
  m.node("Dropout", {"x", "ratio"}, {"y", "mask"});
  m.output("n", DType::kInt64, {});
  m.output("y");
  m.output("mask", DType::kBool, {2, 3, 4});
  auto g = test::import_builder(m);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(ir::optimize(*g).is_ok());
  const ir::Tensor& n = g->tensor(g->find_tensor("n"));
  ASSERT_TRUE(n.is_constant());
  int64_t count = 0;
  std::memcpy(&count, n.data->data(), 8);
  EXPECT_EQ(count, 24);
  const ir::Tensor& mask = g->tensor(g->find_tensor("mask"));
  ASSERT_TRUE(mask.is_constant());
  EXPECT_EQ(mask.dtype, DType::kBool);
  EXPECT_EQ(mask.shape, (ir::Shape{2, 3, 4}));
  for (std::byte b : *mask.data) ASSERT_EQ(b, std::byte{1});
  for (const ir::Node& node : g->nodes) {
    EXPECT_NE(node.op_type, "Size");
    if (node.op_type == "Dropout") EXPECT_EQ(node.outputs.size(), 1u) << "the mask left the node";
  }
  // The CPU executor returns the same values.
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
}

TEST(EngineOpsExt, SplitInputSlicesAndWhere) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3});
  m.initializer_i64("split", {2}, {1, 2});
  m.node("Split", {"x", "split"}, {"a", "b"}).i("axis", 1);  // a [2,1], b [2,2]
  m.initializer_i64("st", {1}, {-1});
  m.initializer_i64("en", {1}, {-3});
  m.initializer_i64("ax", {1}, {1});
  m.initializer_i64("sp", {1}, {-1});
  m.node("Slice", {"b", "st", "en", "ax", "sp"}, {"br"});  // columns reversed
  m.node("Less", {"a", "br"}, {"lt"});                     // [2,1] vs [2,2]
  m.node("Where", {"lt", "br", "a"}, {"y"});
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  // x = [[0,1,2],[3,4,5]] → a = [[0],[3]], br = [[2,1],[5,4]]; a < br everywhere → br.
  EXPECT_EQ(test::run_engine(**e, {{0, 1, 2, 3, 4, 5}}), (V{2, 1, 5, 4}));
  // x = [[9,1,2],[3,4,5]] → row 0: 9 < 2? no → 9, 9 < 1? no → 9.
  EXPECT_EQ(test::run_engine(**e, {{9, 1, 2, 3, 4, 5}}), (V{9, 9, 5, 4}));
}

TEST(EngineOpsExt, ReduceMeanAxesAttributeAndInput) {
  for (int opset : {13, 18}) {
    ModelBuilder m(opset);
    m.input("x", DType::kFloat32, {2, 3});
    if (opset < 18) {
      m.node("ReduceMean", {"x"}, {"y"}).ints("axes", {-1}).i("keepdims", 0);
    } else {
      m.initializer_i64("axes", {1}, {-1});
      m.node("ReduceMean", {"x", "axes"}, {"y"}).i("keepdims", 0);
    }
    m.output("y");
    auto e = test::build_engine(m);
    ASSERT_TRUE(e.is_ok()) << "opset " << opset << ": " << e.status().to_string();
    EXPECT_EQ((*e)->output_desc(0).shape, (ir::Shape{2}));
    EXPECT_EQ(test::run_engine(**e, {iota(6)}), (V{1, 4})) << "opset " << opset;
  }
}

TEST(EngineOpsExt, CastRoundTripThroughInt64) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {3});
  m.node("Cast", {"x"}, {"i"}).i("to", 7);
  m.node("Cast", {"i"}, {"y"}).i("to", 1);
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(test::run_engine(**e, {{-1.5f, 2.9f, 7.0f}}), (V{-1, 2, 7}));
}

TEST(EngineOpsExt, LegacyAddBroadcastAxis) {
  ModelBuilder m(6);
  m.input("a", DType::kFloat32, {2, 3});
  m.initializer("b", {2}, {10, 20});
  m.node("Add", {"a", "b"}, {"y"}).i("broadcast", 1).i("axis", 0);
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(test::run_engine(**e, {iota(6)}), (V{10, 11, 12, 23, 24, 25}));
}

TEST(EngineOpsExt, LegacyAttributeOnModernOpsetNamesTheOpset) {
  ModelBuilder m(13);
  m.input("a", DType::kFloat32, {2, 3});
  m.initializer("b", {3}, {1, 2, 3});
  m.node("Mul", {"a", "b"}, {"y"}).i("broadcast", 1);
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("opset 13"), std::string::npos) << e.status().message();
}

TEST(EngineOpsExt, InvalidConvGroupAndPadsAreInvalidModel) {
  for (int variant = 0; variant < 2; ++variant) {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 4, 5, 5});
    m.initializer("w", {3, variant == 0 ? 2 : 4, 1, 1}, V(variant == 0 ? 6 : 12, 1.0f));
    auto n = m.node("Conv", {"x", "w"}, {"y"});
    if (variant == 0) n.i("group", 3);                   // 3 does not divide 4 input channels
    else n.ints("pads", {-1, 0, 0, 0});                  // negative pads
    m.output("y");
    auto e = test::build_engine(m);
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidModel) << e.status().to_string();
  }
}

TEST(EngineOpsExt, GatherOutOfRangeIndexIsInvalidModel) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {3});
  m.initializer_i64("i", {1}, {3});
  m.node("Gather", {"x", "i"}, {"y"});
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(e.status().message().find("out of range"), std::string::npos) << e.status().message();
}

TEST(EngineOpsExt, LayerNormAndConvTranspose) {
  ModelBuilder m(17);
  m.input("x", DType::kFloat32, {1, 1, 3});
  m.initializer("w", {1, 2, 3}, V(6, 1.0f));
  m.node("ConvTranspose", {"x", "w"}, {"ct"});  // [1, 2, 5] = 0 1 3 3 2 per channel
  m.initializer("g", {5}, V(5, 1.0f));
  m.node("LayerNormalization", {"ct", "g"}, {"y"}).f("epsilon", 0.0f);
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const V y = test::run_engine(**e, {{0, 1, 2}});
  // row 0 1 3 3 2: mean 1.8, var (3.24+0.64+1.44+1.44+0.04)/5 = 1.36
  const float inv = 1.0f / std::sqrt(1.36f);
  ASSERT_EQ(y.size(), 10u);
  const V want = {-1.8f * inv, -0.8f * inv, 1.2f * inv, 1.2f * inv, 0.2f * inv};
  for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(y[i], want[i % 5], 1e-5f) << "index " << i;
}

TEST(EngineOpsExt, HostileValuesAreRefusedNotOverflowed) {
  {  // Slice with step INT64_MIN: one element (s > e), no −INT64_MIN.
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {4});
    m.initializer_i64("st", {1}, {3});
    m.initializer_i64("en", {1}, {std::numeric_limits<int64_t>::min()});
    m.initializer_i64("ax", {1}, {0});
    m.initializer_i64("sp", {1}, {std::numeric_limits<int64_t>::min()});
    m.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"});
    m.output("y");
    auto e = test::build_engine(m);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    EXPECT_EQ(test::run_engine(**e, {{1, 2, 3, 4}}), (V{4}));
  }
  {  // Resize to a billion-element output: refused before any tap table is built.
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 1, 2, 2});
    m.initializer_i64("sizes", {4}, {1, 1, 1 << 20, 1 << 20});
    m.node("Resize", {"x", "", "", "sizes"}, {"y"});
    m.output("y");
    auto e = test::build_engine(m);
    ASSERT_FALSE(e.is_ok());
    EXPECT_NE(e.status().code(), StatusCode::kOk);
  }
  {  // ConvTranspose with a stride whose output extent overflows int64.
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 1, 3});
    m.initializer("w", {1, 1, 2}, {1, 1});
    m.node("ConvTranspose", {"x", "w"}, {"y"}).ints("strides", {int64_t{1} << 62});
    m.output("y");
    auto e = test::build_engine(m);
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidModel) << e.status().to_string();
  }
  {  // Tile whose repeats overflow the shape.
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {2, 2});
    m.initializer_i64("r", {2}, {int64_t{1} << 62, 4});
    m.node("Tile", {"x", "r"}, {"y"});
    m.output("y");
    auto e = test::build_engine(m);
    ASSERT_FALSE(e.is_ok());
  }
}

TEST(EngineOpsExt, NewOpKernelsAllocateNothingPerRun) {
  // One model through the broadcasting/indexing kernels (stack index counters), Resize (taps built
  // at build), Split/Slice (bound vectors), reductions and normalisations.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 4, 4});
  m.initializer_i64("gi", {2}, {1, 0});
  m.node("Gather", {"x", "gi"}, {"g"}).i("axis", 1);
  m.initializer("scales", {4}, {1, 1, 2, 2});
  m.node("Resize", {"g", "", "scales"}, {"r"}).s("mode", "linear");
  m.node("Split", {"r"}, {"s0", "s1"}).i("axis", 2);
  m.node("Less", {"s0", "s1"}, {"lt"});
  m.node("Where", {"lt", "s0", "s1"}, {"w"});
  m.node("ReduceMean", {"w"}, {"rm"}).ints("axes", {3}).i("keepdims", 1);
  m.node("Sub", {"w", "rm"}, {"d"});
  m.node("Erf", {"d"}, {"e"});
  m.initializer("ln", {8}, V(8, 1.0f));
  m.node("LayerNormalization", {"e", "ln"}, {"y"});
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const V x = iota(32);
  ASSERT_FALSE(test::run_engine(**e, {x}).empty());  // warm-up
  uint64_t count = 0;
  {
    test::AllocationScope scope;
    for (int i = 0; i < 100; ++i) ASSERT_TRUE((*e)->run().is_ok());
    count = scope.count();
  }
  EXPECT_EQ(count, 0u) << "heap allocations during 100 CpuEngine::run() calls";
}

}  // namespace
}  // namespace ws
