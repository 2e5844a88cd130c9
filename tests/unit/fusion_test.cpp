// ir::fuse_conv_residual_adds (src/engine/ir/fusion.h): which Add(conv, r) patterns fold into the Conv and
// which must stay (broadcasting, a residual produced after the Conv, a Conv output used twice or as a graph
// output, constants). Structural checks on imported graphs; the numerics of the fused epilogue are checked
// on the GPU (tests/gpu/cuda_engine_residual_test.cpp, CudaEngineResidual*).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/ir/fusion.h"
#include "engine/ir/model_builder.h"
#include "warpstream/graph.h"

namespace ws {
namespace {

struct Net {
  ir::ModelBuilder b{13, "fusion"};
  void conv(const std::string& name, const std::string& in, const std::string& out, int64_t cin, int64_t cout, int64_t k,
            int64_t stride, bool bias = true) {
    b.initializer(name + "_w", {cout, cin, k, k}, std::vector<float>(size_t(cout * cin * k * k), 0.01f));
    std::vector<std::string> ins = {in, name + "_w"};
    if (bias) {
      b.initializer(name + "_b", {cout}, std::vector<float>(size_t(cout), 0.1f));
      ins.push_back(name + "_b");
    }
    const int64_t p = k / 2;
    b.node("Conv", ins, {out}, name).ints("strides", {stride, stride}).ints("pads", {p, p, p, p});
  }
  ir::Graph graph() {
    auto bytes = b.bytes();
    auto g = ir::import_onnx_bytes(bytes, "fusion-test");
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    if (!g.is_ok()) return ir::Graph{};
    const Status s = ir::optimize(*g);  // shapes inferred, as the engine does before fusing
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return std::move(g).value();
  }
};

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

const ir::Node* find(const ir::Graph& g, const std::string& name) {
  for (const auto& node : g.nodes)
    if (node.name == name) return &node;
  return nullptr;
}

TEST(FuseConvResidual, BasicBlockFoldsIntoTheSecondConv) {
  Net n;
  n.b.input("x", ir::DType::kFloat32, {1, 8, 6, 6});
  n.conv("c1", "x", "a", 8, 8, 3, 1);
  n.b.node("Relu", {"a"}, {"ar"}, "relu1");
  n.conv("c2", "ar", "b", 8, 8, 3, 1, /*bias=*/false);
  n.b.node("Add", {"b", "x"}, {"s"}, "add");
  n.b.node("Relu", {"s"}, {"y"}, "relu2");
  n.b.output("y");
  ir::Graph g = n.graph();
  const auto fused = ir::fuse_conv_residual_adds(g);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(*fused.begin(), "c2");
  EXPECT_EQ(count(g, "Add"), 0);
  const ir::Node* c2 = find(g, "c2");
  ASSERT_NE(c2, nullptr);
  ASSERT_EQ(c2->inputs.size(), 4u);
  EXPECT_EQ(c2->inputs[2], ir::kNoTensor) << "a missing bias stays an omitted input";
  EXPECT_EQ(g.tensor(c2->inputs[3]).name, "x");
  EXPECT_EQ(g.tensor(c2->outputs[0]).name, "s");
  EXPECT_EQ(count(g, "Relu"), 2) << "activations are another pass's business";
}

TEST(FuseConvResidual, LaterConvTakesTheAddAndEitherOperandOrderWorks) {
  Net n;
  n.b.input("x", ir::DType::kFloat32, {1, 4, 8, 8});
  n.conv("main", "x", "m", 4, 16, 3, 2);
  n.conv("down", "x", "d", 4, 16, 1, 2);
  n.b.node("Add", {"d", "m"}, {"y"}, "add");
  n.b.output("y");
  ir::Graph g = n.graph();
  const auto fused = ir::fuse_conv_residual_adds(g);
  ASSERT_EQ(fused.count("down"), 1u);
  const ir::Node* down = find(g, "down");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(g.tensor(down->inputs[3]).name, "m");
  EXPECT_EQ(g.tensor(down->outputs[0]).name, "y") << "the fused conv may write a graph output";
}

TEST(FuseConvResidual, LeavesEverythingElseAlone) {
  // (1) broadcasting Add, (2) residual produced after the only conv operand, (3) conv output used twice,
  // (4) conv output is a graph output, (5) constant operand.
  Net n;
  n.b.input("x", ir::DType::kFloat32, {1, 4, 6, 6});
  n.b.input("bias_like", ir::DType::kFloat32, {1, 4, 1, 1});
  n.conv("c1", "x", "a", 4, 4, 3, 1);
  n.b.node("Add", {"a", "bias_like"}, {"s1"}, "add_broadcast");     // (1)
  n.conv("c2", "s1", "b", 4, 4, 3, 1);
  n.b.node("Relu", {"s1"}, {"late"}, "late_relu");                   // produced after c2
  n.b.node("Add", {"b", "late"}, {"s2"}, "add_late");                // (2)
  n.conv("c3", "s2", "c", 4, 4, 3, 1);
  n.b.node("Add", {"c", "s2"}, {"s3"}, "add_twice");                 // (3): c also feeds the Mul
  n.b.node("Mul", {"c", "s3"}, {"s4"}, "mul");
  n.conv("c4", "s4", "d", 4, 4, 3, 1);
  n.b.node("Add", {"d", "s4"}, {"s5"}, "add_output");                // (4): d is a graph output
  n.b.initializer("k", {1, 4, 6, 6}, std::vector<float>(144, 1.0f));
  n.conv("c5", "s5", "e", 4, 4, 3, 1);
  n.b.node("Add", {"e", "k"}, {"y"}, "add_const");                   // (5)
  n.b.output("d");
  n.b.output("y");
  ir::Graph g = n.graph();
  const size_t nodes = g.nodes.size();
  EXPECT_TRUE(ir::fuse_conv_residual_adds(g).empty());
  EXPECT_EQ(g.nodes.size(), nodes);
  EXPECT_EQ(count(g, "Add"), 5);
  for (const auto& node : g.nodes)
    if (node.op_type == "Conv") EXPECT_LE(node.inputs.size(), 3u) << node.name;
}

}  // namespace
}  // namespace ws
