// The device-free stages of CudaEngine::build (src/engine/cuda/build_stages.h), on the CPU: which
// activations fold into a Conv (and which must stay), the port checks, the ONNX view of a Conv carrying a
// fused residual, the arena plan in fp32 / fp16 / keep-all-tensors form, and the graph hash.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "engine/cuda/build_stages.h"
#include "engine/ir/model_builder.h"
#include "warpstream/graph.h"

namespace ws::cudaexec {
namespace {

ir::Graph import(const ir::ModelBuilder& b) {
  auto bytes = b.bytes();
  auto g = ir::import_onnx_bytes(bytes, "stages-test");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : ir::Graph{};
}

// x [1,4,6,6] -> Conv (3x3 pad 1) -> act -> y; `act` "Relu", "Clip" (constant bounds), "Sigmoid", or
// "ReluTwoUses" (Relu and an Add both read the Conv's output).
ir::Graph conv_then(const std::string& act, float w = 0.01f) {
  ir::ModelBuilder b(13, "conv_then");
  b.input("x", ir::DType::kFloat32, {1, 4, 6, 6});
  b.initializer("w", {4, 4, 3, 3}, std::vector<float>(144, w));
  b.initializer("b", {4}, std::vector<float>(4, 0.1f));
  b.node("Conv", {"x", "w", "b"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  if (act == "Clip") {
    b.initializer("lo", {}, {0.0f});
    b.initializer("hi", {}, {6.0f});
    b.node("Clip", {"c", "lo", "hi"}, {"y"}, "act");
  } else if (act == "ReluTwoUses") {  // the Conv output also feeds a second node: the Relu must stay
    b.node("Relu", {"c"}, {"r"}, "act");
    b.node("Add", {"r", "c"}, {"y"}, "add");
  } else {
    b.node(act, {"c"}, {"y"}, "act");
  }
  b.output("y");
  return import(b);
}

TEST(EngineCudaStages, ReluAndConstantClipFoldIntoTheConv) {
  for (const char* act : {"Relu", "Clip"}) {
    auto og = optimize_for_cuda(conv_then(act), {});
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    ASSERT_EQ(og->graph.nodes.size(), 1u) << act;
    const ir::Node& conv = og->graph.nodes[0];
    EXPECT_EQ(conv.op_type, "Conv");
    EXPECT_EQ(og->graph.tensor(conv.outputs[0]).name, "y") << act << ": the Conv writes the activation's output";
    ASSERT_EQ(og->fused_activation.count("conv"), 1u) << act;
    EXPECT_EQ(og->fused_activation.at("conv").op_type, act);
  }
}

TEST(EngineCudaStages, OtherActivationsAndSharedConvOutputsStay) {
  for (const char* act : {"Sigmoid", "ReluTwoUses"}) {
    auto og = optimize_for_cuda(conv_then(act), {});
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    EXPECT_GE(og->graph.nodes.size(), 2u) << act;
    EXPECT_TRUE(og->fused_activation.empty()) << act;
  }
}

TEST(EngineCudaStages, KeepAllTensorsDisablesFusion) {
  CudaBuildOptions o;
  o.debug_keep_all_tensors = true;
  auto og = optimize_for_cuda(conv_then("Relu"), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->graph.nodes.size(), 2u);
  EXPECT_TRUE(og->fused_activation.empty());
  EXPECT_TRUE(og->residual_convs.empty());
}

TEST(EngineCudaStages, NonFloatPortsAreRefusedNamingTheTensor) {
  ir::ModelBuilder b(13);
  b.input("ids", ir::DType::kInt64, {4});
  b.node("Identity", {"ids"}, {"y"});
  b.output("y", ir::DType::kInt64);
  auto og = optimize_for_cuda(import(b), {});
  ASSERT_FALSE(og.is_ok());
  EXPECT_EQ(og.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(og.status().message().find("'ids'"), std::string::npos) << og.status().to_string();
}

// Graph outputs: every element type the executors compute is accepted — float32, the int / bool tensors, float16 and
// float64 (a Cast's result); a constant output of another type (a uint32 initializer) is refused naming it.
TEST(EngineCudaStages, ComputedOutputTypesAreAcceptedOthersRefused) {
  for (ir::DType d : {ir::DType::kBool, ir::DType::kInt64, ir::DType::kFloat16, ir::DType::kFloat64}) {
    SCOPED_TRACE(ir::dtype_name(d));
    ir::ModelBuilder b(13);
    b.input("x", ir::DType::kFloat32, {4});
    b.input("z", ir::DType::kFloat32, {4});
    if (d == ir::DType::kBool) {
      b.node("Less", {"x", "z"}, {"y"});
    } else {
      b.node("Cast", {"x"}, {"y"}).i("to", static_cast<int64_t>(d));
    }
    b.output("y", d);
    auto og = optimize_for_cuda(import(b), {});
    EXPECT_TRUE(og.is_ok()) << og.status().to_string();
  }
  ir::ModelBuilder b(13);
  b.input("x", ir::DType::kFloat32, {4});
  b.node("Relu", {"x"}, {"r"});
  b.raw_initializer("u", ir::DType::kUInt32, {2}).set_raw_data(std::string(8, '\0'));
  b.output("r");
  b.output("u", ir::DType::kUInt32, {2});
  auto bytes = b.bytes();
  auto g = ir::import_onnx_bytes(bytes, "uint32-output");
  if (!g.is_ok()) GTEST_SKIP() << "the importer refuses uint32 initializers: " << g.status().to_string();
  auto og = optimize_for_cuda(std::move(g).value(), {});
  ASSERT_FALSE(og.is_ok());
  EXPECT_EQ(og.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(og.status().message().find("'u' (uint32)"), std::string::npos) << og.status().to_string();
}

// A graph output folded to a constant at build (here: Relu of an initializer) is accepted (bound as a copy step).
TEST(EngineCudaStages, ConstantOutputIsAccepted) {
  ir::ModelBuilder b(13);
  b.input("x", ir::DType::kFloat32, {2});
  b.initializer("c", {2}, {-1.0f, 2.0f});
  b.node("Relu", {"c"}, {"n"});
  b.node("Relu", {"x"}, {"y"});
  b.output("n");
  b.output("y");
  auto og = optimize_for_cuda(import(b), {});
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  const ir::Graph& g = og->graph;
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_TRUE(g.tensor(g.outputs[0]).is_constant()) << "the Relu of a constant folds at build";
}

TEST(EngineCudaStages, ResidualConvIsAnalysedAsThePlainConv) {
  ir::ModelBuilder b(13, "residual");
  b.input("x", ir::DType::kFloat32, {1, 4, 6, 6});
  b.initializer("w", {4, 4, 3, 3}, std::vector<float>(144, 0.01f));
  b.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  b.node("Add", {"c", "x"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"y"}, "relu");
  b.output("y");
  auto og = optimize_for_cuda(import(b), {});
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  ASSERT_EQ(og->residual_convs.count("conv"), 1u);
  const ir::Node* conv = nullptr;
  for (const auto& n : og->graph.nodes)
    if (n.name == "conv") conv = &n;
  ASSERT_NE(conv, nullptr);
  ASSERT_EQ(conv->inputs.size(), 4u) << "the residual rides as input 3";
  const std::vector<ir::Node> view = onnx_view(og->graph, og->residual_convs);
  ASSERT_EQ(view.size(), og->graph.nodes.size());
  for (size_t i = 0; i < view.size(); ++i) {
    if (view[i].name != "conv") continue;
    EXPECT_EQ(view[i].inputs.size(), 2u) << "x, w (no bias: the omitted input 2 is dropped too)";
  }
}

TEST(EngineCudaStages, ArenaPlanHalvesInFp16AndKeepAllGivesDisjointRanges) {
  auto og = optimize_for_cuda(conv_then("Sigmoid"), {});  // x -> c -> y, three runtime tensors of 144 floats
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  const ir::Graph& g = og->graph;
  const ArenaPlan f32 = plan_cuda_arena(g, false, false);
  const ArenaPlan f16 = plan_cuda_arena(g, true, false);
  EXPECT_GT(f32.bytes, 0u);
  EXPECT_LT(f16.bytes, f32.bytes);
  EXPECT_GE(f16.bytes, 2 * 144 * 2u) << "at least two live fp16 tensors";
  const ArenaPlan all = plan_cuda_arena(g, false, true);
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t id = 0; id < g.tensors.size(); ++id) {
    if (g.tensors[id].is_constant()) {
      EXPECT_EQ(all.offsets[id], ArenaPlan::kNotInArena) << g.tensors[id].name;
      continue;
    }
    if (all.offsets[id] == ArenaPlan::kNotInArena) continue;
    EXPECT_EQ(all.offsets[id] % kArenaAlign, 0u);
    ranges.emplace_back(all.offsets[id], all.offsets[id] + tensor_bytes(g.tensors[id], 4));
  }
  ASSERT_EQ(ranges.size(), 3u);
  for (size_t i = 0; i < ranges.size(); ++i)
    for (size_t j = i + 1; j < ranges.size(); ++j)
      EXPECT_TRUE(ranges[i].second <= ranges[j].first || ranges[j].second <= ranges[i].first) << i << " overlaps " << j;
  EXPECT_EQ(all.bytes, 3 * arena_align_up(144 * 4));
}

TEST(EngineCudaStages, GraphHashChangesWithWeightsOnly) {
  auto a = optimize_for_cuda(conv_then("Sigmoid", 0.01f), {});
  auto b = optimize_for_cuda(conv_then("Sigmoid", 0.01f), {});
  auto c = optimize_for_cuda(conv_then("Sigmoid", 0.02f), {});
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_EQ(graph_hash(a->graph), graph_hash(b->graph));
  EXPECT_NE(graph_hash(a->graph), graph_hash(c->graph));
  EXPECT_EQ(graph_hash(a->graph).size(), 16u);
}

}  // namespace
}  // namespace ws::cudaexec
