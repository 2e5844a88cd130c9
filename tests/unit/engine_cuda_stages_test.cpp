// The device-free stages of CudaEngine::build (src/engine/cuda/build_stages.h), on the CPU: which
// activations fold into a Conv (and which must stay), the port checks, the ONNX view of a Conv carrying a
// fused residual, the arena plan in fp32 / fp16 / keep-all-tensors form, and the graph hash.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/limits.h"
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

// x -> Conv -> Sigmoid -> s [1,4,6,6] -> Reshape [1,144] -> r -> Flatten -> f -> Relu -> y (graph output), and s also
// read by a Sigmoid after the Relu (so s must stay live past the copies' readers). `copy_is_output`: the Flatten's
// output f is a graph output too. `reshape_reads_input`: the Reshape reads x itself.
ir::Graph copies_chain(bool copy_is_output, bool reshape_reads_input) {
  ir::ModelBuilder b(13, "copies_chain");
  b.input("x", ir::DType::kFloat32, {1, 4, 6, 6});
  b.initializer("w", {4, 4, 3, 3}, std::vector<float>(144, 0.01f));
  b.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"c"}, {"s"}, "sig");
  b.initializer_i64("shape", {2}, {1, 144});
  b.node("Reshape", {reshape_reads_input ? "x" : "s", "shape"}, {"r"}, "reshape");
  b.node("Flatten", {"r"}, {"f"}, "flatten").i("axis", 1);
  b.node("Relu", {"f"}, {"y"}, "relu");
  b.node("Sigmoid", {"s"}, {"z"}, "late");
  b.output("y");
  b.output("z");
  if (copy_is_output) b.output("f");
  return import(b);
}

// The arena folds byte copies (Reshape, Flatten, ...) into their input's range (copy_aliases), resolving chains, so
// their steps do nothing and bind_steps drops them; never for a graph input's or a graph output's slot, never in the
// keep-all-tensors debug plan; the shared range stays live until the last reader of either tensor.
TEST(EngineCudaStages, ArenaFoldsByteCopiesIntoTheirInputsRange) {
  auto id_of = [](const ir::Graph& g, const std::string& name) {
    for (size_t i = 0; i < g.tensors.size(); ++i)
      if (g.tensors[i].name == name) return static_cast<ir::TensorId>(i);
    ADD_FAILURE() << "no tensor " << name;
    return ir::kNoTensor;
  };
  {
    auto og = optimize_for_cuda(copies_chain(false, false), {});
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    const ir::Graph& g = og->graph;
    const auto s = id_of(g, "s"), r = id_of(g, "r"), f = id_of(g, "f"), y = id_of(g, "y"), z = id_of(g, "z");
    const std::vector<ir::TensorId> alias = copy_aliases(g);
    EXPECT_EQ(alias[static_cast<size_t>(r)], s);
    EXPECT_EQ(alias[static_cast<size_t>(f)], s) << "a chain of copies resolves to its first tensor";
    EXPECT_EQ(alias[static_cast<size_t>(s)], ir::kNoTensor);
    for (bool half : {false, true}) {
      const ArenaPlan plan = plan_cuda_arena(g, half, false);
      ASSERT_NE(plan.offsets[static_cast<size_t>(s)], ArenaPlan::kNotInArena);
      EXPECT_EQ(plan.offsets[static_cast<size_t>(r)], plan.offsets[static_cast<size_t>(s)]) << half;
      EXPECT_EQ(plan.offsets[static_cast<size_t>(f)], plan.offsets[static_cast<size_t>(s)]) << half;
      // y is written while f (= s's range) is read, z while s is read: neither may overlap the shared range.
      const size_t bytes = 144 * (half ? 2 : 4);
      for (ir::TensorId other : {y, z}) {
        const size_t o = plan.offsets[static_cast<size_t>(other)], sh = plan.offsets[static_cast<size_t>(s)];
        EXPECT_TRUE(o + bytes <= sh || sh + bytes <= o) << g.tensors[static_cast<size_t>(other)].name << " overlaps the folded copies' range";
      }
    }
    const ArenaPlan all = plan_cuda_arena(g, false, true);
    EXPECT_NE(all.offsets[static_cast<size_t>(f)], all.offsets[static_cast<size_t>(s)]) << "keep-all-tensors gives every tensor its own range";
  }
  {  // the copy is the root's last direct reader; the alias is read two nodes later, after a tensor of the same size
     // was written: that tensor must not take the root's range (alias reads count as reads of the root)
    ir::ModelBuilder b(13, "alias_read_late");
    b.input("x", ir::DType::kFloat32, {1, 144});
    b.node("Sigmoid", {"x"}, {"s"}, "sig");
    b.initializer_i64("shape", {2}, {1, 144});
    b.node("Reshape", {"s", "shape"}, {"r"}, "reshape");
    b.node("Relu", {"x"}, {"t"}, "other");
    b.node("Add", {"r", "t"}, {"y"}, "add");
    b.output("y");
    auto og = optimize_for_cuda(import(b), {});
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    const ir::Graph& g = og->graph;
    const auto s = id_of(g, "s"), r = id_of(g, "r"), t = id_of(g, "t");
    const ArenaPlan plan = plan_cuda_arena(g, true, false);
    EXPECT_EQ(plan.offsets[static_cast<size_t>(r)], plan.offsets[static_cast<size_t>(s)]);
    const size_t so = plan.offsets[static_cast<size_t>(s)], to = plan.offsets[static_cast<size_t>(t)];
    EXPECT_TRUE(so + 288 <= to || to + 288 <= so) << "t, written while r (s's range) is still to be read, overlaps it";
  }
  {
    auto og = optimize_for_cuda(copies_chain(true, false), {});
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    const ir::Graph& g = og->graph;
    const std::vector<ir::TensorId> alias = copy_aliases(g);
    EXPECT_EQ(alias[static_cast<size_t>(id_of(g, "r"))], id_of(g, "s"));
    EXPECT_EQ(alias[static_cast<size_t>(id_of(g, "f"))], ir::kNoTensor) << "a graph output keeps its own slot";
    const ArenaPlan plan = plan_cuda_arena(g, true, false);
    EXPECT_NE(plan.offsets[static_cast<size_t>(id_of(g, "f"))], plan.offsets[static_cast<size_t>(id_of(g, "s"))]);
  }
  {
    auto og = optimize_for_cuda(copies_chain(false, true), {});
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    const ir::Graph& g = og->graph;
    const std::vector<ir::TensorId> alias = copy_aliases(g);
    EXPECT_EQ(alias[static_cast<size_t>(id_of(g, "r"))], ir::kNoTensor) << "a graph input's slot is the caller's";
    EXPECT_EQ(alias[static_cast<size_t>(id_of(g, "f"))], id_of(g, "r")) << "the next copy still folds into r";
  }
}

// x -> Conv -> GlobalAveragePool -> g -> [Flatten] -> Gemm (transB) -> y. `variant`: "plain"; "two_readers" (a Sigmoid
// also reads g); "relu_between" (a Relu between the Flatten and the Gemm); "trans_a" (Gemm transA = 1 on the
// [1, C] input: not a head); "pool_reads_input" (the pool reads the graph input x).
ir::Graph head_graph(const std::string& variant) {
  ir::ModelBuilder b(13, "head");
  b.input("x", ir::DType::kFloat32, {1, 8, 5, 5});
  b.initializer("cw", {8, 8, 1, 1}, std::vector<float>(64, 0.02f));
  b.node("Conv", {"x", "cw"}, {"c"}, "conv");
  b.node("GlobalAveragePool", {variant == "pool_reads_input" ? "x" : "c"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flatten");
  std::string a = "f";
  if (variant == "relu_between") {
    b.node("Relu", {"f"}, {"fr"}, "relu");
    a = "fr";
  }
  if (variant == "trans_a") {
    b.initializer("w", {1, 3}, std::vector<float>(3, 0.1f));
    b.node("Gemm", {a, "w"}, {"y"}, "fc").i("transA", 1);
  } else {
    b.initializer("w", {3, 8}, std::vector<float>(24, 0.1f));
    b.node("Gemm", {a, "w"}, {"y"}, "fc").i("transB", 1);
  }
  b.output("y");
  if (variant == "two_readers") {
    b.node("Sigmoid", {"g"}, {"z"}, "side");
    b.output("z");
  }
  if (variant == "pool_reads_input") b.output("c");
  return import(b);
}

// Stage 1g: which Gemms may absorb their GlobalAveragePool (pooled_heads), and the arena keeps the pool's input live
// until the head reads it.
TEST(EngineCudaStages, PooledHeadsAreFoundOnlyForAPoolReadByTheHeadAlone) {
  {
    CudaBuildOptions on;
    on.fuse_pooled_head = true;
    auto og = optimize_for_cuda(head_graph("plain"), on);
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    const ir::Graph& g = og->graph;
    ASSERT_EQ(og->pooled_heads.size(), 1u);
    const size_t fc = og->pooled_heads.begin()->first;
    EXPECT_EQ(g.nodes[fc].name, "fc");
    const PooledHead& h = og->pooled_heads.at(fc);
    EXPECT_EQ(g.nodes[h.pool_node].name, "gap");
    EXPECT_EQ(g.tensor(h.input).name, "c");
    EXPECT_FALSE(h.nhwc);
    // c (the pool's input) must not share a range with y, which the head writes while reading c.
    const ArenaPlan plan = plan_cuda_arena(g, true, false, {}, {}, {}, og->pooled_heads);
    size_t c = 0, y = 0;
    for (size_t i = 0; i < g.tensors.size(); ++i) {
      if (g.tensors[i].name == "c") c = plan.offsets[i];
      if (g.tensors[i].name == "y") y = plan.offsets[i];
    }
    EXPECT_TRUE(c + 8 * 25 * 2 <= y || y + 3 * 2 <= c) << "the head's output overlaps the pool input it reads";
    auto og_off = optimize_for_cuda(head_graph("plain"), {});
    ASSERT_TRUE(og_off.is_ok());
    EXPECT_TRUE(og_off->pooled_heads.empty()) << "fuse_pooled_head is off by default";
    CudaBuildOptions keep = on;
    keep.debug_keep_all_tensors = true;
    auto og_keep = optimize_for_cuda(head_graph("plain"), keep);
    ASSERT_TRUE(og_keep.is_ok());
    EXPECT_TRUE(og_keep->pooled_heads.empty()) << "debug_keep_all_tensors writes every tensor";
  }
  {  // two heads with one name (names need not be unique): each keyed by its own index, each with its own pool input
    ir::ModelBuilder b(13, "two_heads");
    b.input("x", ir::DType::kFloat32, {1, 8, 5, 5});
    b.initializer("cw", {8, 8, 1, 1}, std::vector<float>(64, 0.02f));
    b.initializer("w", {3, 8}, std::vector<float>(24, 0.1f));
    for (const char* k : {"a", "b"}) {
      const std::string t(k);
      b.node("Conv", {"x", "cw"}, {"c" + t}, "conv_" + t);
      b.node("GlobalAveragePool", {"c" + t}, {"g" + t}, "gap");
      b.node("Flatten", {"g" + t}, {"f" + t}, "flatten");
      b.node("Gemm", {"f" + t, "w"}, {"y" + t}, "fc").i("transB", 1);
      b.output("y" + t);
    }
    CudaBuildOptions on;
    on.fuse_pooled_head = true;
    auto og = optimize_for_cuda(import(b), on);
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    ASSERT_EQ(og->pooled_heads.size(), 2u);
    std::set<std::string> inputs;
    for (const auto& [i, h] : og->pooled_heads) {
      EXPECT_EQ(og->graph.nodes[i].name, "fc");
      EXPECT_LT(h.pool_node, i);
      inputs.insert(og->graph.tensor(h.input).name);
    }
    EXPECT_EQ(inputs, (std::set<std::string>{"ca", "cb"}));
  }
  for (const char* v : {"two_readers", "relu_between", "trans_a", "pool_reads_input"}) {
    CudaBuildOptions on;
    on.fuse_pooled_head = true;
    auto og = optimize_for_cuda(head_graph(v), on);
    ASSERT_TRUE(og.is_ok()) << v << ": " << og.status().to_string();
    EXPECT_TRUE(og->pooled_heads.empty()) << v;
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

// A ResNet-shaped graph: x [1,8,16,16] -> Conv 3x3 s2 (group `group`) -> Relu -> MaxPool 3x3 s2 p1 -> [Softmax
// axis 1 when `softmax`, an NCHW-only op] -> Conv 3x3 -> Add (residual) -> Relu -> GlobalAveragePool -> Flatten ->
// Gemm -> y [1,10].
ir::Graph resnet_like(int64_t group, bool softmax) {
  ir::ModelBuilder b(13, "resnet_like");
  b.input("x", ir::DType::kFloat32, {1, 8, 16, 16});
  b.initializer("w1", {16, 8 / group, 3, 3}, std::vector<float>(static_cast<size_t>(16 * 8 / group * 9), 0.01f));
  b.initializer("b1", {16}, std::vector<float>(16, 0.1f));
  b.initializer("w2", {16, 16, 3, 3}, std::vector<float>(16 * 16 * 9, 0.02f));
  b.initializer("wf", {10, 16}, std::vector<float>(160, 0.03f));
  b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "stem").ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2}).i("group", group);
  b.node("Relu", {"c1"}, {"r1"}, "stem_relu");
  b.node("MaxPool", {"r1"}, {"p1"}, "pool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  std::string mid = "p1";
  if (softmax) {
    b.node("Softmax", {"p1"}, {"sm"}, "softmax").i("axis", 1);
    mid = "sm";
  }
  b.node("Conv", {mid, "w2"}, {"c2"}, "conv2").ints("pads", {1, 1, 1, 1});
  b.node("Add", {"c2", mid}, {"s"}, "add");
  b.node("Relu", {"s"}, {"y2"}, "relu2");
  b.node("GlobalAveragePool", {"y2"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "wf"}, {"y"}, "fc").i("transB", 1);
  b.output("y");
  return import(b);
}

std::set<std::string> names(const ir::Graph& g, const std::set<ir::TensorId>& ids) {
  std::set<std::string> r;
  for (ir::TensorId id : ids) r.insert(g.tensor(id).name);
  return r;
}

// The fp16, layout-auto plan of `b`'s model (empty when optimize_for_cuda fails, which is a test failure).
OptimizedGraph fp16_auto_plan(const ir::ModelBuilder& b) {
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  auto og = optimize_for_cuda(import(b), o);
  EXPECT_TRUE(og.is_ok()) << og.status().to_string();
  return og.is_ok() ? std::move(og).value() : OptimizedGraph{};
}

TEST(EngineCudaStages, Fp16AutoRunsTheConvSegmentChannelsLastWithOneReformat) {
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  auto og = optimize_for_cuda(resnet_like(1, false), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->layout, Layout::kNhwc);
  EXPECT_EQ(og->reformats, 1) << "only the graph input is reformatted (NCHW -> NHWC)";
  const ir::Graph& g = og->graph;
  ASSERT_FALSE(g.nodes.empty());
  const ir::Node& r = g.nodes[0];
  ASSERT_NE(r.find(kReformatAttr), nullptr) << r.name;
  EXPECT_EQ(r.find(kReformatAttr)->s, "nhwc");
  EXPECT_EQ(g.tensor(r.inputs[0]).name, "x");
  // The stem writes its fused Relu's output; conv2 carries the residual (p1) and writes relu2's output.
  EXPECT_EQ(names(g, og->nhwc_tensors), (std::set<std::string>{"x/nhwc", "r1", "p1", "y2"}));
  for (const ir::Node& n : g.nodes) {
    if (n.name == "stem") EXPECT_EQ(g.tensor(n.inputs[0]).name, "x/nhwc");
    if (n.name == "gap") EXPECT_EQ(g.tensor(n.inputs[0]).name, "y2") << "GlobalAveragePool reads NHWC directly";
    if (n.name == "conv2") { ASSERT_EQ(n.inputs.size(), 4u); EXPECT_EQ(g.tensor(n.inputs[3]).name, "p1"); }
  }
  for (ir::TensorId id : g.outputs) EXPECT_EQ(og->nhwc_tensors.count(id), 0u) << "ports stay NCHW";
  // The ONNX view analyses the reformat as the plain Identity it is.
  const std::vector<ir::Node> view = onnx_view(g, og->residual_convs);
  EXPECT_EQ(view[0].op_type, "Identity");
  EXPECT_EQ(view[0].find(kReformatAttr), nullptr);
}

TEST(EngineCudaStages, NchwOnlyOpInsideTheSegmentGetsAReformatEachWay) {
  CudaBuildOptions o;
  o.precision = Precision::kFloat32;
  o.layout = Layout::kNhwc;  // explicit: fp32 too
  auto og = optimize_for_cuda(resnet_like(1, true), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->layout, Layout::kNhwc);
  EXPECT_EQ(og->reformats, 3) << "x -> NHWC, p1 -> NCHW for Softmax, sm -> NHWC for conv2 (shared by its residual)";
  const ir::Graph& g = og->graph;
  for (const ir::Node& n : g.nodes) {
    if (n.name == "softmax") EXPECT_EQ(g.tensor(n.inputs[0]).name, "p1/nchw");
    if (n.name == "conv2") {
      EXPECT_EQ(g.tensor(n.inputs[0]).name, "sm/nhwc");
      ASSERT_EQ(n.inputs.size(), 4u);
      EXPECT_EQ(n.inputs[3], n.inputs[0]) << "one reformatted copy serves both uses";
    }
  }
  // Every reformat precedes its consumers (the node list stays topological).
  std::set<ir::TensorId> ready(g.inputs.begin(), g.inputs.end());
  for (const ir::Node& n : g.nodes) {
    for (ir::TensorId id : n.inputs)
      if (id != ir::kNoTensor && !g.tensor(id).is_constant()) EXPECT_TRUE(ready.count(id)) << n.name << " reads " << g.tensor(id).name << " early";
    for (ir::TensorId id : n.outputs) ready.insert(id);
  }
}

TEST(EngineCudaStages, AutoStaysNchwForFp32GroupedConvsAndWithoutCudnn) {
  CudaBuildOptions fp16;
  fp16.precision = Precision::kFloat16;
  auto fp32 = optimize_for_cuda(resnet_like(1, false), {});
  auto grouped = optimize_for_cuda(resnet_like(2, false), fp16);
  CudaBuildOptions no_cudnn = fp16;
  no_cudnn.tactic_sources = kTacticWarpStream | kTacticCublasLt;
  auto own = optimize_for_cuda(resnet_like(1, false), no_cudnn);
  ASSERT_TRUE(fp32.is_ok() && grouped.is_ok() && own.is_ok());
  for (const auto* og : {&*fp32, &*grouped, &*own}) {
    EXPECT_EQ(og->layout, Layout::kNchw);
    EXPECT_EQ(og->reformats, 0);
    EXPECT_TRUE(og->nhwc_tensors.empty());
  }
  // A Conv writing a graph output stays NCHW (ports are NCHW): nothing to reformat.
  auto single = optimize_for_cuda(conv_then("Relu"), fp16);
  ASSERT_TRUE(single.is_ok());
  EXPECT_EQ(single->reformats, 0);
  EXPECT_TRUE(single->nhwc_tensors.empty());
}

// fp8 chooses the layout as fp16 does: channels-last for a graph without grouped convs (no FP8 conv there: ours are
// NCHW), NCHW with grouped convs (where the pointwise convs may run FP8).
TEST(EngineCudaStages, AutoLayoutOfFp8FollowsFp16) {
  CudaBuildOptions fp8;
  fp8.precision = Precision::kFloat8;
  fp8.fp8_activation_amax["x"] = 1.0f;
  auto dense = optimize_for_cuda(resnet_like(1, false), fp8);
  auto grouped = optimize_for_cuda(resnet_like(2, false), fp8);
  ASSERT_TRUE(dense.is_ok() && grouped.is_ok());
  EXPECT_EQ(dense->layout, Layout::kNhwc);
  EXPECT_EQ(grouped->layout, Layout::kNchw);
}

// precision fp8 without calibrated ranges is refused by the first, device-free stage (so by build() and
// check_support() alike), naming the CLI option.
TEST(EngineCudaStages, Fp8WithoutCalibrationIsRefused) {
  CudaBuildOptions fp8;
  fp8.precision = Precision::kFloat8;
  auto og = optimize_for_cuda(resnet_like(1, false), fp8);
  ASSERT_FALSE(og.is_ok());
  EXPECT_EQ(og.status().code(), StatusCode::kInvalidArgument) << og.status().to_string();
  EXPECT_NE(og.status().message().find("--calibration"), std::string::npos) << og.status().message();
  fp8.fp8_activation_amax["anything"] = 2.0f;
  EXPECT_TRUE(optimize_for_cuda(resnet_like(1, false), fp8).is_ok());
  EXPECT_EQ(*parse_precision("fp8"), Precision::kFloat8);
  EXPECT_FALSE(parse_precision("FP8").is_ok());
  EXPECT_EQ(precision_dtype(Precision::kFloat8), DType::kFloat16);
}

TEST(EngineCudaStages, ExplicitNhwcWithoutCudnnIsRefused) {
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  o.layout = Layout::kNhwc;
  o.tactic_sources = kTacticWarpStream | kTacticCublasLt;
  auto og = optimize_for_cuda(resnet_like(1, false), o);
  ASSERT_FALSE(og.is_ok());
  EXPECT_EQ(og.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(og.status().message().find("needs tactic source cudnn"), std::string::npos) << og.status().message();
}

// An RGB stem (TensorRT's kHWC8; CudaBuildOptions::hwc8_input): x [1,3,8,8] -> Conv 3x3 (weights 0.001·index) and, with
// `pool_too`, MaxPool of x as well -> Add -> GlobalAveragePool -> Flatten -> y.
ir::Graph rgb_stem(bool pool_too) {
  ir::ModelBuilder b(13, "rgb_stem");
  b.input("x", ir::DType::kFloat32, {1, 3, 8, 8});
  std::vector<float> w(4 * 3 * 9);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.001f * static_cast<float>(i + 1);
  b.initializer("w", {4, 3, 3, 3}, w);
  b.initializer("wp", {3, 3, 1, 1}, std::vector<float>(9, 0.5f));
  b.node("Conv", {"x", "w"}, {"c"}, "stem").ints("pads", {1, 1, 1, 1});
  std::string last = "c";
  if (pool_too) {
    b.node("MaxPool", {"x"}, {"p"}, "pool").ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1});
    b.initializer("wq", {4, 3, 1, 1}, std::vector<float>(12, 0.25f));
    b.node("Conv", {"p", "wq"}, {"q"}, "pool_proj");
    b.node("Add", {"c", "q"}, {"s"}, "join");
    last = "s";
  }
  b.node("GlobalAveragePool", {last}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"y"}, "flatten");
  b.output("y");
  return import(b);
}

// fp16, layout auto, with hwc8_input as given.
CudaBuildOptions fp16_hwc8(bool on = true) {
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  o.hwc8_input = on;
  return o;
}

TEST(EngineCudaStages, Hwc8PadsAnRgbStemInputAndItsWeights) {
  auto og = optimize_for_cuda(rgb_stem(false), fp16_hwc8());
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  const ir::Graph& g = og->graph;
  ASSERT_EQ(og->layout, Layout::kNhwc);
  EXPECT_EQ(og->reformats, 1);
  EXPECT_EQ(og->hwc8_pads, 1);
  const ir::Node& r = g.nodes[0];
  ASSERT_NE(r.find(kReformatAttr), nullptr) << r.name;
  EXPECT_EQ(g.tensor(r.inputs[0]).shape, (ir::Shape{1, 3, 8, 8})) << "the graph input keeps its shape";
  EXPECT_EQ(g.tensor(r.outputs[0]).shape, (ir::Shape{1, 8, 8, 8})) << "the reformatted copy has 8 channels";
  const ir::Node* stem = nullptr;
  for (const ir::Node& n : g.nodes)
    if (n.name == "stem") stem = &n;
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->inputs[0], r.outputs[0]);
  const ir::Tensor& w = g.tensor(stem->inputs[1]);
  ASSERT_EQ(w.shape, (ir::Shape{4, 8, 3, 3}));
  ASSERT_TRUE(w.is_constant());
  const float* v = w.data_as<float>();
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t c = 0; c < 8; ++c)
      for (int64_t e = 0; e < 9; ++e) {
        const float want = c < 3 ? 0.001f * static_cast<float>((k * 3 + c) * 9 + e + 1) : 0.0f;
        ASSERT_EQ(v[(k * 8 + c) * 9 + e], want) << "k " << k << " c " << c << " tap " << e;
      }
  // Off by default: the same graph keeps 3 channels.
  auto plain = optimize_for_cuda(rgb_stem(false), fp16_hwc8(false));
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ(plain->hwc8_pads, 0);
  EXPECT_EQ(plain->graph.tensor(plain->graph.nodes[0].outputs[0]).shape, (ir::Shape{1, 3, 8, 8}));
}

TEST(EngineCudaStages, Hwc8LeavesAnInputThatANonConvAlsoReads) {
  auto og = optimize_for_cuda(rgb_stem(true), fp16_hwc8());
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  ASSERT_EQ(og->layout, Layout::kNhwc);
  EXPECT_EQ(og->hwc8_pads, 0) << "the MaxPool reads the reformatted copy too: padding it would change the pool's channels";
  for (const ir::Node& n : og->graph.nodes)
    if (n.find(kReformatAttr)) EXPECT_EQ(og->graph.tensor(n.outputs[0]).shape[1], 3) << n.name;
}

// Huge-dimension guard: padding multiplies the copy by 8/3. With max_tensor_elements set between the 3-channel input
// (192 elements) and its 8-channel copy (512), the model still builds and is left unpadded; with room for the copy but
// max_node_macs between the stem's work (4·64·27 = 6,912 MACs) and the padded one (18,432), also unpadded.
TEST(EngineCudaStages, Hwc8NeverPushesAModelOverTheBuildLimits) {
  const BuildLimits saved = build_limits();
  BuildLimits l = saved;
  l.max_tensor_elements = 300;
  set_build_limits(l);
  auto small = optimize_for_cuda(rgb_stem(false), fp16_hwc8());
  l.max_tensor_elements = saved.max_tensor_elements;
  l.max_node_macs = 10000;
  set_build_limits(l);
  auto lean = optimize_for_cuda(rgb_stem(false), fp16_hwc8());
  set_build_limits(saved);
  ASSERT_TRUE(small.is_ok()) << small.status().to_string();
  EXPECT_EQ(small->hwc8_pads, 0) << "the 8-channel copy would exceed max_tensor_elements";
  ASSERT_TRUE(lean.is_ok()) << lean.status().to_string();
  EXPECT_EQ(lean->hwc8_pads, 0) << "the padded stem would exceed max_node_macs";
  auto roomy = optimize_for_cuda(rgb_stem(false), fp16_hwc8());
  ASSERT_TRUE(roomy.is_ok());
  EXPECT_EQ(roomy->hwc8_pads, 1) << "the default limits leave room";
}

// fp16, layout auto, hwc8_input and the kHWC8 input port (hwc8_input_port).
CudaBuildOptions fp16_hwc8_port() {
  CudaBuildOptions o = fp16_hwc8();
  o.hwc8_input_port = true;
  return o;
}

// TensorRT's setAllowedFormats(kHWC8) on the RGB input: the padded copy becomes the graph input and the reformat that
// wrote it is gone (one step less); the model's input keeps its name and logical shape for the port's TensorDesc, and
// is read by nothing (no arena range); the plan differs, so the graph hash does.
TEST(EngineCudaStages, Hwc8PortTakesThePaddedCopyAtTheInput) {
  auto og = optimize_for_cuda(rgb_stem(false), fp16_hwc8_port());
  auto padded = optimize_for_cuda(rgb_stem(false), fp16_hwc8());
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  ASSERT_TRUE(padded.is_ok()) << padded.status().to_string();
  const ir::Graph& g = og->graph;
  ASSERT_EQ(og->layout, Layout::kNhwc);
  EXPECT_EQ(og->hwc8_pads, 1) << "the copy is still padded (by the producer now)";
  EXPECT_EQ(og->reformats, 0) << "the input's reformat is removed";
  for (const ir::Node& n : g.nodes) EXPECT_EQ(n.find(kReformatAttr), nullptr) << n.name << " is a reformat left in the plan";
  EXPECT_EQ(g.nodes.size() + 1, padded->graph.nodes.size()) << "one node (the reformat) less than hwc8 without the port";
  EXPECT_EQ(og->nhwc_nodes.size(), g.nodes.size()) << "the per-node layout flags follow the removal";

  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(og->hwc8_ports.size(), 1u);
  ASSERT_EQ(og->hwc8_ports.count(0), 1u);
  const ir::TensorId port = g.inputs[0], model = og->hwc8_ports.at(0);
  EXPECT_EQ(g.tensor(port).shape, (ir::Shape{1, 8, 8, 8})) << "the engine input is the padded copy";
  EXPECT_EQ(og->nhwc_tensors.count(port), 1u) << "stored channels-last";
  EXPECT_EQ(og->hwc8_copies.count(port), 1u);
  EXPECT_EQ(g.tensor(model).name, "x");
  EXPECT_EQ(g.tensor(model).shape, (ir::Shape{1, 3, 8, 8})) << "the model's input keeps its logical shape";
  const ir::Node* stem = nullptr;
  for (const ir::Node& n : g.nodes) {
    for (ir::TensorId id : n.inputs) EXPECT_NE(id, model) << n.name << " still reads the model's (linear) input";
    if (n.name == "stem") stem = &n;
  }
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->inputs[0], port) << "the stem conv reads the port directly";
  EXPECT_EQ(g.tensor(stem->inputs[1]).shape, (ir::Shape{4, 8, 3, 3})) << "with the padded weights";

  const ArenaPlan plan = plan_cuda_arena(g, true, false);
  EXPECT_NE(plan.offsets[static_cast<size_t>(port)], ArenaPlan::kNotInArena) << "the port's slot";
  EXPECT_EQ(plan.offsets[static_cast<size_t>(model)], ArenaPlan::kNotInArena) << "the unread model input takes no arena";
  EXPECT_NE(graph_hash(g), graph_hash(padded->graph)) << "the timing cache must not take one plan for the other";
  EXPECT_EQ(graph_hash(g), graph_hash(optimize_for_cuda(rgb_stem(false), fp16_hwc8_port())->graph)) << "deterministic";
}

// An input is taken in kHWC8 only when its padded reformat is its only reader. The MaxPool of rgb_stem(true) reads the
// reformatted copy, so nothing is padded and nothing is ported; a Sigmoid reading x itself (NCHW) beside the stem
// leaves the stem's copy padded but x linear, with its reformat in place. Silent (no error): the option is a
// permission, as TensorRT's allowed formats.
TEST(EngineCudaStages, Hwc8PortLeavesAnInputThatANonConvAlsoReads) {
  auto pooled = optimize_for_cuda(rgb_stem(true), fp16_hwc8_port());
  ASSERT_TRUE(pooled.is_ok()) << pooled.status().to_string();
  EXPECT_EQ(pooled->hwc8_pads, 0);
  EXPECT_TRUE(pooled->hwc8_ports.empty());
  EXPECT_EQ(pooled->graph.tensor(pooled->graph.inputs[0]).name, "x");

  ir::ModelBuilder b(13, "rgb_stem_and_sigmoid");
  b.input("x", ir::DType::kFloat32, {1, 3, 8, 8});
  b.initializer("w", {4, 3, 3, 3}, std::vector<float>(4 * 3 * 9, 0.01f));
  b.node("Conv", {"x", "w"}, {"c"}, "stem").ints("pads", {1, 1, 1, 1});
  b.node("GlobalAveragePool", {"c"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"y"}, "flatten");
  b.node("Sigmoid", {"x"}, {"s"}, "sig");
  b.node("GlobalAveragePool", {"s"}, {"gs"}, "gap_s");
  b.node("Flatten", {"gs"}, {"z"}, "flatten_s");
  b.output("y");
  b.output("z");
  auto og = optimize_for_cuda(import(b), fp16_hwc8_port());
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  const ir::Graph& g = og->graph;
  ASSERT_EQ(og->layout, Layout::kNhwc);
  EXPECT_EQ(og->hwc8_pads, 1) << "the stem's copy is read by the conv only: padded";
  EXPECT_TRUE(og->hwc8_ports.empty()) << "the Sigmoid reads x itself: x stays linear";
  EXPECT_EQ(og->reformats, 1);
  EXPECT_EQ(g.tensor(g.inputs[0]).name, "x");
  EXPECT_EQ(g.tensor(g.inputs[0]).shape, (ir::Shape{1, 3, 8, 8}));
  size_t reformats = 0;
  for (const ir::Node& n : g.nodes) reformats += n.find(kReformatAttr) != nullptr;
  EXPECT_EQ(reformats, 1u) << "the padded reformat stays in the plan";
}

// hwc8_input_port takes what hwc8_input pads: alone it is refused (kInvalidArgument naming both options), before any
// other stage runs; with hwc8_input but a layout that pads nothing (NCHW) no input is ported, silently.
TEST(EngineCudaStages, Hwc8PortWithoutHwc8InputIsRefused) {
  CudaBuildOptions o = fp16_hwc8(false);
  o.hwc8_input_port = true;
  auto og = optimize_for_cuda(rgb_stem(false), o);
  ASSERT_FALSE(og.is_ok());
  EXPECT_EQ(og.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(og.status().message().find("hwc8_input_port"), std::string::npos) << og.status().message();
  EXPECT_NE(og.status().message().find("needs hwc8_input"), std::string::npos) << og.status().message();
  EXPECT_NE(og.status().message().find("--hwc8-port"), std::string::npos) << og.status().message();

  CudaBuildOptions nchw = fp16_hwc8_port();
  nchw.layout = Layout::kNchw;
  auto plain = optimize_for_cuda(rgb_stem(false), nchw);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ(plain->hwc8_pads, 0);
  EXPECT_TRUE(plain->hwc8_ports.empty());
  EXPECT_EQ(plain->graph.tensor(plain->graph.inputs[0]).shape, (ir::Shape{1, 3, 8, 8}));
}

#ifdef WS_HAVE_CUDA
// CudaEngine::check_support (device-free) reports the port in its LayoutPlan: hwc8 alone pads one reformat; with the
// port that reformat is gone (reformats 0) and hwc8_ports counts the input; the refusal reaches it too.
TEST(EngineCudaStages, CheckSupportCountsTheHwc8Ports) {
  LayoutPlan padded, ported;
  ASSERT_TRUE(CudaEngine::check_support(rgb_stem(false), fp16_hwc8(), &padded).is_ok());
  const Status s = CudaEngine::check_support(rgb_stem(false), fp16_hwc8_port(), &ported);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(padded.layout, Layout::kNhwc);
  EXPECT_EQ(padded.reformats, 1u);
  EXPECT_EQ(padded.hwc8_pads, 1u);
  EXPECT_EQ(padded.hwc8_ports, 0u);
  EXPECT_EQ(ported.layout, Layout::kNhwc);
  EXPECT_EQ(ported.reformats, 0u);
  EXPECT_EQ(ported.hwc8_pads, 1u);
  EXPECT_EQ(ported.hwc8_ports, 1u);
  EXPECT_EQ(ported.convs, padded.convs);
  LayoutPlan none;
  ASSERT_TRUE(CudaEngine::check_support(rgb_stem(true), fp16_hwc8_port(), &none).is_ok());
  EXPECT_EQ(none.hwc8_ports, 0u);
  CudaBuildOptions alone = fp16_hwc8(false);
  alone.hwc8_input_port = true;
  const Status refused = CudaEngine::check_support(rgb_stem(false), alone);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.to_string();
  EXPECT_NE(refused.message().find("hwc8_input_port"), std::string::npos) << refused.message();
}
#endif

// Two convs of the RGB input sharing one weight initializer: both read the one padded copy of it. A weight whose
// bytes do not match its shape is refused (kInvalidModel naming it) by the graph passes before pad_hwc8 would read it.
TEST(EngineCudaStages, Hwc8SharesOnePaddedCopyOfASharedWeight) {
  ir::ModelBuilder b(13, "shared_weight");
  b.input("x", ir::DType::kFloat32, {1, 3, 8, 8});
  b.initializer("w", {8, 3, 3, 3}, std::vector<float>(8 * 3 * 9, 0.01f));
  b.node("Conv", {"x", "w"}, {"a"}, "conv_a").ints("pads", {1, 1, 1, 1});
  b.node("Conv", {"x", "w"}, {"c"}, "conv_c").ints("pads", {1, 1, 1, 1});
  b.node("Add", {"a", "c"}, {"s"}, "join");
  b.node("GlobalAveragePool", {"s"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"y"}, "flatten");
  b.output("y");
  const CudaBuildOptions o = fp16_hwc8();
  auto og = optimize_for_cuda(import(b), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->hwc8_pads, 1);
  std::set<ir::TensorId> weights;
  for (const ir::Node& n : og->graph.nodes)
    if (n.op_type == "Conv") {
      weights.insert(n.inputs[1]);
      EXPECT_EQ(og->graph.tensor(n.inputs[1]).shape, (ir::Shape{8, 8, 3, 3})) << n.name;
    }
  EXPECT_EQ(weights.size(), 1u) << "one padded copy serves both convs";

  ir::Graph bad = import(b);
  for (ir::Tensor& t : bad.tensors)
    if (t.name == "w") t.data->resize(t.data->size() - 4);  // one float short of its shape
  auto og_bad = optimize_for_cuda(std::move(bad), o);  // refused by the graph passes before pad_hwc8 reads it
  ASSERT_FALSE(og_bad.is_ok());
  EXPECT_EQ(og_bad.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(og_bad.status().message().find("'w'"), std::string::npos) << og_bad.status().message();
}

// x -> Conv -> Mul by a constant scalar -> Add a constant scalar -> GlobalAveragePool -> Conv 1x1 on [1,16,1,1] (an SE
// squeeze) -> Sigmoid -> Flatten -> y: the scalar ops stay in the segment and the [N, C, 1, 1] tensors are never
// reformatted, so the only reformat is the input's.
TEST(EngineCudaStages, ScalarOperandsAndOneByOneTensorsNeedNoReformat) {
  ir::ModelBuilder b(13, "scalar_se");
  b.input("x", ir::DType::kFloat32, {1, 8, 8, 8});
  b.initializer("w1", {16, 8, 3, 3}, std::vector<float>(16 * 8 * 9, 0.01f));
  b.initializer("half", {}, {0.5f});
  b.initializer("three", {}, {3.0f});
  b.initializer("w2", {16, 16, 1, 1}, std::vector<float>(256, 0.02f));
  b.node("Conv", {"x", "w1"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  b.node("Mul", {"c", "half"}, {"m"}, "scale");
  b.node("Add", {"three", "m"}, {"a"}, "shift");  // the constant first: the runtime operand decides
  b.node("GlobalAveragePool", {"a"}, {"g"}, "gap");
  b.node("Conv", {"g", "w2"}, {"s"}, "squeeze");
  b.node("Sigmoid", {"s"}, {"sg"}, "gate");
  b.node("Flatten", {"sg"}, {"y"}, "flatten");
  b.output("y");
  const OptimizedGraph og = fp16_auto_plan(b);
  EXPECT_EQ(og.layout, Layout::kNhwc);
  EXPECT_EQ(og.reformats, 1) << "only x";
  const std::set<std::string> nhwc = names(og.graph, og.nhwc_tensors);
  for (const char* t : {"x/nhwc", "c", "m", "a", "s"}) EXPECT_EQ(nhwc.count(t), 1u) << t;
}

// Two convs of x concatenated on the channel axis (an Inception / DenseNet join) feed a third conv: the Concat runs
// channels-last (a per-pixel concatenation), so the input's is the only reformat; every node's flag says so.
TEST(EngineCudaStages, ChannelConcatStaysInTheSegment) {
  ir::ModelBuilder b(13, "concat");
  b.input("x", ir::DType::kFloat32, {1, 8, 8, 8});
  b.initializer("wa", {8, 8, 1, 1}, std::vector<float>(64, 0.01f));
  b.initializer("wb", {4, 8, 3, 3}, std::vector<float>(4 * 8 * 9, 0.02f));
  b.initializer("wc", {6, 12, 1, 1}, std::vector<float>(72, 0.03f));
  b.initializer("wf", {10, 6}, std::vector<float>(60, 0.03f));
  b.node("Conv", {"x", "wa"}, {"a"}, "branch_a");
  b.node("Conv", {"x", "wb"}, {"bb"}, "branch_b").ints("pads", {1, 1, 1, 1});
  b.node("Concat", {"a", "bb"}, {"cat"}, "join").i("axis", 1);
  b.node("Conv", {"cat", "wc"}, {"c"}, "after");
  b.node("GlobalAveragePool", {"c"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "wf"}, {"y"}, "fc").i("transB", 1);
  b.output("y");
  const OptimizedGraph og = fp16_auto_plan(b);
  EXPECT_EQ(og.layout, Layout::kNhwc);
  EXPECT_EQ(og.reformats, 1);
  const ir::Graph& g = og.graph;
  ASSERT_EQ(og.nhwc_nodes.size(), g.nodes.size());
  std::set<std::string> nhwc_nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (og.nhwc_nodes[i]) nhwc_nodes.insert(g.nodes[i].name);
  EXPECT_EQ(nhwc_nodes, (std::set<std::string>{"branch_a", "branch_b", "join", "after", "gap"}));
  EXPECT_EQ(names(g, og.nhwc_tensors).count("cat"), 1u);
}

// Auto keeps channels-last only when it needs few reformats: three convs separated by NCHW-only Softmaxes (the last
// writes the output, so it runs NCHW) would need 4 for 2 NHWC convs (> 1 + 2 / 8), so the graph is left NCHW
// untouched; forced nhwc keeps the plan with its 4 reformats.
TEST(EngineCudaStages, AutoFallsBackToNchwWhenReformatsDominate) {
  ir::ModelBuilder b(13, "softmaxes");
  b.input("x", ir::DType::kFloat32, {1, 8, 8, 8});
  std::string t = "x";
  for (int i = 0; i < 3; ++i) {
    const std::string w = "w" + std::to_string(i), c = "c" + std::to_string(i);
    b.initializer(w, {8, 8, 3, 3}, std::vector<float>(8 * 8 * 9, 0.01f));
    b.node("Conv", {t, w}, {c}, "conv" + std::to_string(i)).ints("pads", {1, 1, 1, 1});
    t = c;
    if (i < 2) {
      b.node("Softmax", {c}, {"s" + std::to_string(i)}, "softmax" + std::to_string(i)).i("axis", 1);
      t = "s" + std::to_string(i);
    }
  }
  b.node("Relu", {t}, {"y"}, "out");
  b.output("y");
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  const ir::Graph g0 = import(b);
  auto og = optimize_for_cuda(g0, o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->layout, Layout::kNchw);
  EXPECT_EQ(og->reformats, 0);
  EXPECT_TRUE(og->nhwc_tensors.empty());
  EXPECT_TRUE(og->nhwc_nodes.empty());
  for (const ir::Node& n : og->graph.nodes) EXPECT_EQ(n.find(kReformatAttr), nullptr) << n.name;
  o.layout = Layout::kNhwc;
  auto forced = optimize_for_cuda(g0, o);
  ASSERT_TRUE(forced.is_ok()) << forced.status().to_string();
  EXPECT_EQ(forced->layout, Layout::kNhwc);
  EXPECT_EQ(forced->reformats, 4) << "x, c0, s0, c1 / s1: conv2 writes Relu's input, not an output";
}

// A DenseNet transition as torch exports it: Conv -> BatchNormalization (constant statistics, not foldable: it follows
// a Concat in DenseNet, here the Conv's output has a second use) -> Relu -> Pad -> AveragePool -> Conv. The BN and
// the Pad run channels-last (a per-channel affine; pads on the permuted axes): only the input is reformatted.
TEST(EngineCudaStages, BatchNormAndPadStayInTheSegment) {
  ir::ModelBuilder b(13, "transition");
  b.input("x", ir::DType::kFloat32, {1, 8, 8, 8});
  b.initializer("w1", {8, 8, 3, 3}, std::vector<float>(8 * 8 * 9, 0.01f));
  for (const char* k : {"scale", "bias", "mean"}) b.initializer(k, {8}, std::vector<float>(8, 0.5f));
  b.initializer("var", {8}, std::vector<float>(8, 1.0f));
  b.initializer_i64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  b.initializer("w2", {8, 8, 1, 1}, std::vector<float>(64, 0.02f));
  b.initializer("wf", {10, 8}, std::vector<float>(80, 0.03f));
  b.node("Conv", {"x", "w1"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  b.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"bn"}, "bn");
  b.node("Relu", {"bn"}, {"r"}, "relu");
  b.node("Pad", {"r", "pads"}, {"p"}, "pad");
  b.node("AveragePool", {"p"}, {"ap"}, "avg").ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  b.node("Add", {"ap", "ap"}, {"a2"}, "double");
  b.node("Conv", {"a2", "w2"}, {"c2"}, "conv2");
  b.node("Add", {"c", "c"}, {"c_twice"}, "second_use");  // keeps the BN from folding into the conv
  b.node("GlobalAveragePool", {"c2"}, {"g"}, "gap");
  b.node("GlobalAveragePool", {"c_twice"}, {"g2"}, "gap2");
  b.node("Add", {"g", "g2"}, {"gs"}, "join");
  b.node("Flatten", {"gs"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "wf"}, {"y"}, "fc").i("transB", 1);
  b.output("y");
  const OptimizedGraph og = fp16_auto_plan(b);
  EXPECT_EQ(og.layout, Layout::kNhwc);
  EXPECT_EQ(og.reformats, 1) << "only x";
  std::set<std::string> nhwc_nodes;
  for (size_t i = 0; i < og.graph.nodes.size() && i < og.nhwc_nodes.size(); ++i)
    if (og.nhwc_nodes[i]) nhwc_nodes.insert(og.graph.nodes[i].name);
  for (const char* n : {"bn", "pad", "avg", "conv2"}) EXPECT_EQ(nhwc_nodes.count(n), 1u) << n;
}

// Fuzz finding (onnx_structure_fuzz, 2026-12-03, once the CUDA build stages joined the ONNX targets): the
// CUDA executor's messages printed tensor names raw, so a graph input named "\x0e\x1b[31m" reached the terminal.
// Minimal form: an int64 graph input whose name holds control bytes; the refusal must name it escaped.
TEST(EngineCudaStages, TensorNamesInMessagesAreEscaped) {
  const std::string evil = "x\x0e\x1b[31m\nforged";
  ir::ModelBuilder b(13, "evil_names");
  b.input(evil, ir::DType::kInt64, {1, 4});
  b.node("Identity", {evil}, {"y"}, "id");
  b.output("y", ir::DType::kInt64, {1, 4});
  ir::Graph g = import(b);
  CudaBuildOptions o;
  auto og = optimize_for_cuda(std::move(g), o);
  ASSERT_FALSE(og.is_ok());
  const std::string m = og.status().message();
  for (char ch : m) {
    const auto c = static_cast<unsigned char>(ch);
    EXPECT_FALSE(c < 0x20 || c == 0x7F) << "raw control byte 0x" << std::hex << int(c) << " in: " << og.status().to_string();
  }
  EXPECT_NE(m.find("graph input 'x\\x0e\\x1b[31m\\x0aforged'"), std::string::npos) << m;
}

// fp16, channels-first: the builds the depthwise -> pointwise and MBConv finders apply to.
CudaBuildOptions fp16_nchw() {
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  o.layout = Layout::kNchw;
  return o;
}

// The id of the tensor named `name` in `g` (a test failure, and 0, when there is none).
size_t tensor_id(const ir::Graph& g, const char* name) {
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].name == name) return i;
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

// Whether tensors a and b, `bytes` each, share arena bytes in `plan`.
bool arena_overlap(const ArenaPlan& plan, size_t a, size_t b, size_t bytes) {
  return plan.offsets[a] < plan.offsets[b] + bytes && plan.offsets[b] < plan.offsets[a] + bytes;
}

// x [1,8,10,10] -> Conv dw 3x3 (group 8, pad 1) -> Clip(0,6) -> Conv pw 1x1 (8 -> 4) -> y: an MBConv pair. `dw_twice`: a
// second consumer (an Add) also reads the depthwise output, so the pair must stay two steps.
ir::Graph mbconv_pair(bool dw_twice) {
  ir::ModelBuilder b(13, "mbconv_pair");
  b.input("x", ir::DType::kFloat32, {1, 8, 10, 10});
  b.initializer("wd", {8, 1, 3, 3}, std::vector<float>(72, 0.1f));
  b.initializer("bd", {8}, std::vector<float>(8, 0.1f));
  b.initializer("wp", {4, 8, 1, 1}, std::vector<float>(32, 0.2f));
  b.initializer("lo", {}, {0.0f});
  b.initializer("hi", {}, {6.0f});
  b.node("Conv", {"x", "wd", "bd"}, {"d"}, "dw").i("group", 8).ints("pads", {1, 1, 1, 1});
  b.node("Clip", {"d", "lo", "hi"}, {"a"}, "clip");
  b.node("Conv", {"a", "wp"}, {dw_twice ? "p" : "y"}, "pw");
  if (dw_twice) {
    b.initializer("wq", {8, 8, 1, 1}, std::vector<float>(64, 0.2f));
    b.node("Conv", {"a", "wq"}, {"q"}, "pw2");
    b.node("ReduceMean", {"q"}, {"m"}, "mean").ints("axes", {1});
    b.node("Add", {"p", "m"}, {"y"}, "add");
  }
  b.output("y");
  return import(b);
}

TEST(EngineCudaStages, DepthwisePointwisePairsAreFoundOnlyWhereFusable) {
  const CudaBuildOptions o = fp16_nchw();
  auto og = optimize_for_cuda(mbconv_pair(false), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->depthwise_pointwise, std::set<std::string>{"pw"}) << "dw (+ folded Clip) -> pw is a pair";
  // Half storage only (the fused kernel is fp16), the warpstream source, the option, and not with keep-all-tensors.
  for (int variant = 0; variant < 4; ++variant) {
    CudaBuildOptions v = o;
    if (variant == 0) v.precision = Precision::kFloat32;
    if (variant == 1) v.tactic_sources = kTacticCudnn;
    if (variant == 2) v.fuse_depthwise_pointwise = false;
    if (variant == 3) v.debug_keep_all_tensors = true;
    auto other = optimize_for_cuda(mbconv_pair(false), v);
    ASSERT_TRUE(other.is_ok()) << other.status().to_string();
    EXPECT_TRUE(other->depthwise_pointwise.empty()) << "variant " << variant;
  }
  auto shared = optimize_for_cuda(mbconv_pair(true), o);
  ASSERT_TRUE(shared.is_ok()) << shared.status().to_string();
  EXPECT_TRUE(shared->depthwise_pointwise.empty()) << "the depthwise output has a second reader: it must be stored";
}

// A fused pair reads the depthwise input at the pointwise step: the arena must keep that input alive until then, so
// the pointwise output never takes its range (without the pair, plan_arena may reuse it: x is dead after the dw step).
TEST(EngineCudaStages, FusedPairKeepsTheDepthwiseInputAliveUntilThePointwiseStep) {
  const CudaBuildOptions o = fp16_nchw();
  // y [1,8,10,10] as large as x: pw 8 -> 8, preceded by an op producing x (so x is no graph input, which lives forever).
  ir::ModelBuilder b(13, "mbconv_arena");
  b.input("in", ir::DType::kFloat32, {1, 8, 10, 10});
  b.initializer("wd", {8, 1, 3, 3}, std::vector<float>(72, 0.1f));
  b.initializer("wp", {8, 8, 1, 1}, std::vector<float>(64, 0.2f));
  b.node("Relu", {"in"}, {"x"}, "pre");
  b.node("Conv", {"x", "wd"}, {"d"}, "dw").i("group", 8).ints("pads", {1, 1, 1, 1});
  b.node("Conv", {"d", "wp"}, {"y"}, "pw");
  b.output("y");
  auto og = optimize_for_cuda(import(b), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  ASSERT_EQ(og->depthwise_pointwise, std::set<std::string>{"pw"});
  const ir::Graph& g = og->graph;
  auto id = [&](const char* name) { return tensor_id(g, name); };
  auto overlaps = [](const ArenaPlan& plan, size_t a, size_t b) { return arena_overlap(plan, a, b, 8 * 10 * 10 * 2); };
  const ArenaPlan fused = plan_cuda_arena(g, true, false, og->depthwise_pointwise);
  EXPECT_FALSE(overlaps(fused, id("x"), id("y"))) << "the pointwise output would overwrite the depthwise input it reads";
  EXPECT_FALSE(overlaps(fused, id("d"), id("y")));
  const ArenaPlan plain = plan_cuda_arena(g, true, false);
  EXPECT_TRUE(overlaps(plain, id("x"), id("y"))) << "without the pair x's range is free for y (this test would not catch a missing extension)";
}

// in -> Relu -> x -> Conv expand 1x1 (8 -> 8) -> e -> Conv dw 3x3 (group 8) -> d -> Conv project 1x1 (8 -> 8) -> y (every
// tensor the same size, so the arena may hand a dead tensor's range to the next one):
// an MBConv block. `expand_twice`: a second reader of the expand output (so it must be stored and the block is no
// candidate, while its depthwise -> project pair still is).
ir::Graph mbconv_block(bool expand_twice) {
  ir::ModelBuilder b(13, "mbconv_block");
  b.input("in", ir::DType::kFloat32, {1, 8, 10, 10});
  b.initializer("we", {8, 8, 1, 1}, std::vector<float>(64, 0.1f));
  b.initializer("wd", {8, 1, 3, 3}, std::vector<float>(72, 0.1f));
  b.initializer("wp", {8, 8, 1, 1}, std::vector<float>(64, 0.2f));
  b.node("Relu", {"in"}, {"x"}, "pre");
  b.node("Conv", {"x", "we"}, {"e"}, "expand");
  b.node("Conv", {"e", "wd"}, {"d"}, "dw").i("group", 8).ints("pads", {1, 1, 1, 1});
  b.node("Conv", {"d", "wp"}, {expand_twice ? "p" : "y"}, "project");
  if (expand_twice) {
    b.node("ReduceMean", {"e"}, {"m"}, "mean").ints("axes", {1});
    b.node("Add", {"p", "m"}, {"y"}, "add");
  }
  b.output("y");
  return import(b);
}

TEST(EngineCudaStages, MbConvBlocksAreFoundOnlyWhereFusableAndKeepTheBlockInputAlive) {
  const CudaBuildOptions o = fp16_nchw();
  auto og = optimize_for_cuda(mbconv_block(false), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->depthwise_pointwise, std::set<std::string>{"project"});
  EXPECT_EQ(og->mbconv, std::set<std::string>{"project"}) << "expand -> dw -> project is a block";
  CudaBuildOptions off = o;
  off.fuse_depthwise_pointwise = false;
  auto unfused = optimize_for_cuda(mbconv_block(false), off);
  ASSERT_TRUE(unfused.is_ok()) << unfused.status().to_string();
  EXPECT_TRUE(unfused->mbconv.empty()) << "--no-dwpw-fusion turns the block fusion off too";
  auto shared = optimize_for_cuda(mbconv_block(true), o);
  ASSERT_TRUE(shared.is_ok()) << shared.status().to_string();
  EXPECT_EQ(shared->depthwise_pointwise, std::set<std::string>{"project"});
  EXPECT_TRUE(shared->mbconv.empty()) << "the expand output has a second reader: it must be stored";
  // The fused step reads x (the expand input) at the project step: nothing written after the expand step (d, y) may
  // take x's range.
  const ir::Graph& g = og->graph;
  auto id = [&](const char* name) { return tensor_id(g, name); };
  auto overlaps = [](const ArenaPlan& plan, size_t a, size_t b) { return arena_overlap(plan, a, b, 8 * 10 * 10 * 2); };
  const ArenaPlan fused = plan_cuda_arena(g, true, false, og->depthwise_pointwise, og->mbconv);
  EXPECT_FALSE(overlaps(fused, id("x"), id("y"))) << "the project output would overwrite the block input the fused kernel reads";
  EXPECT_FALSE(overlaps(fused, id("x"), id("d")));
  const ArenaPlan pair_only = plan_cuda_arena(g, true, false, og->depthwise_pointwise);
  EXPECT_TRUE(overlaps(pair_only, id("x"), id("d")) || overlaps(pair_only, id("x"), id("y")))
      << "without the block x's range is free after the expand step (this test would not catch a missing extension)";
}

TEST(EngineCudaStages, ExpandDepthwisePairsAreFoundOnlyWhereFusableAndKeepTheExpandInputAlive) {
  const CudaBuildOptions o = fp16_nchw();
  auto og = optimize_for_cuda(mbconv_block(false), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_EQ(og->expand_depthwise, std::set<std::string>{"dw"}) << "expand 1x1 -> dw is a pair";
  for (int variant = 0; variant < 5; ++variant) {  // half storage, warpstream source, both options, no keep-all-tensors
    CudaBuildOptions v = o;
    if (variant == 0) v.precision = Precision::kFloat32;
    if (variant == 1) v.tactic_sources = kTacticCudnn;
    if (variant == 2) v.fuse_depthwise_pointwise = false;
    if (variant == 3) v.fuse_expand_depthwise = false;
    if (variant == 4) v.debug_keep_all_tensors = true;
    auto other = optimize_for_cuda(mbconv_block(false), v);
    ASSERT_TRUE(other.is_ok()) << other.status().to_string();
    EXPECT_TRUE(other->expand_depthwise.empty()) << "variant " << variant;
  }
  auto shared = optimize_for_cuda(mbconv_block(true), o);
  ASSERT_TRUE(shared.is_ok()) << shared.status().to_string();
  EXPECT_TRUE(shared->expand_depthwise.empty()) << "the expand output has a second reader: it must be stored";
  auto pair = optimize_for_cuda(mbconv_pair(false), o);  // dw -> pw without an expand: no expand -> dw pair
  ASSERT_TRUE(pair.is_ok()) << pair.status().to_string();
  EXPECT_TRUE(pair->expand_depthwise.empty());
  // The fused step reads x (the expand input) at the depthwise step: d must not take x's range.
  const ir::Graph& g = og->graph;
  auto id = [&](const char* name) { return tensor_id(g, name); };
  auto overlaps = [](const ArenaPlan& plan, size_t a, size_t b) { return arena_overlap(plan, a, b, 8 * 10 * 10 * 2); };
  const ArenaPlan fused = plan_cuda_arena(g, true, false, og->expand_depthwise);
  EXPECT_FALSE(overlaps(fused, id("x"), id("d"))) << "the depthwise output would overwrite the expand input the fused kernel reads";
  const ArenaPlan plain = plan_cuda_arena(g, true, false);
  EXPECT_TRUE(overlaps(plain, id("x"), id("d")))
      << "without the pair d takes x's range (dead after the expand step): else this test would not catch a missing extension";
}

// Convs that look like an expand -> depthwise pair but are not one: a 3x3 "expand", a grouped (not depthwise) second
// conv, and a runtime (non-constant) expand weight. None is a candidate; the graphs still optimize.
TEST(EngineCudaStages, ExpandDepthwiseLookalikesAreNotPairs) {
  const CudaBuildOptions o = fp16_nchw();
  for (int variant = 0; variant < 3; ++variant) {
    ir::ModelBuilder b(13, "exdw_lookalike");
    b.input("in", ir::DType::kFloat32, {1, 8, 10, 10});
    if (variant == 2) b.input("we", ir::DType::kFloat32, {8, 8, 1, 1});
    else if (variant == 0) b.initializer("we", {8, 8, 3, 3}, std::vector<float>(576, 0.1f));
    else b.initializer("we", {8, 8, 1, 1}, std::vector<float>(64, 0.1f));
    if (variant == 1) b.initializer("wd", {8, 2, 3, 3}, std::vector<float>(144, 0.1f));
    else b.initializer("wd", {8, 1, 3, 3}, std::vector<float>(72, 0.1f));
    b.node("Relu", {"in"}, {"x"}, "pre");
    ir::NodeRef ex = b.node("Conv", {"x", "we"}, {"e"}, "expand");
    if (variant == 0) ex.ints("pads", {1, 1, 1, 1});
    b.node("Conv", {"e", "wd"}, {"y"}, "dw").i("group", variant == 1 ? 4 : 8).ints("pads", {1, 1, 1, 1});
    b.output("y");
    auto og = optimize_for_cuda(import(b), o);
    ASSERT_TRUE(og.is_ok()) << "variant " << variant << ": " << og.status().to_string();
    EXPECT_TRUE(og->expand_depthwise.empty()) << "variant " << variant;
  }
}

// A ResNet downsample block as torchvision exports it, after a Relu and a pool (3x3, stride 1: every activation has
// 16 x 8 x 8 elements, so the arena plan may put a later tensor in the pool output's range once its last reader ran):
// x -> Relu -> MaxPool -> [conv1 1x1 -> Relu -> conv2 3x3 -> Relu -> conv3 1x1] and, after them in node order, ds 1x1 on
// the pool's output; Add(conv3, ds) -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> y. `basic` instead adds the
// pool's output itself (an identity shortcut: no Conv to move).
ir::Graph downsample_net(bool basic = false) {
  ir::ModelBuilder b(13, "downsample_net");
  b.input("x", ir::DType::kFloat32, {1, 16, 8, 8});
  auto conv = [&](const std::string& name, const std::string& in, const std::string& out, int64_t k) {
    b.initializer(name + "_w", {16, 16, k, k}, std::vector<float>(static_cast<size_t>(16 * 16 * k * k), 0.01f));
    b.initializer(name + "_b", {16}, std::vector<float>(16, 0.1f));
    const int64_t p = k / 2;
    b.node("Conv", {in, name + "_w", name + "_b"}, {out}, name).ints("pads", {p, p, p, p});
  };
  b.node("Relu", {"x"}, {"x1"}, "in_relu");
  b.node("MaxPool", {"x1"}, {"p"}, "pool").ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1});
  conv("conv1", "p", "a", 1);
  b.node("Relu", {"a"}, {"ar"}, "relu1");
  conv("conv2", "ar", "c", 3);
  b.node("Relu", {"c"}, {"cr"}, "relu2");
  conv("conv3", "cr", "m", 1);
  if (!basic) conv("ds", "p", "d", 1);
  b.node("Add", {"m", basic ? "p" : "d"}, {"sum"}, "add");
  b.node("Relu", {"sum"}, {"r"}, "add_relu");
  b.node("GlobalAveragePool", {"r"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flatten");
  b.initializer("wf", {10, 16}, std::vector<float>(160, 0.03f));
  b.node("Gemm", {"f", "wf"}, {"y"}, "fc").i("transB", 1);
  b.output("y");
  return import(b);
}

size_t node_index(const ir::Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return i;
  return g.nodes.size();
}

TEST(EngineCudaStages, AuxStreamMovesTheDownsampleShortcutAndFoldsTheAddIntoTheMainBranch) {
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    SCOPED_TRACE(p == Precision::kFloat16 ? "fp16" : "fp32");  // (precision_name lives in the CUDA module)
    CudaBuildOptions o;
    o.precision = p;
    auto plain = optimize_for_cuda(downsample_net(), o);
    ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
    EXPECT_TRUE(plain->hoisted.empty());
    EXPECT_TRUE(plain->aux_branches.empty());
    EXPECT_EQ(plain->residual_convs, std::set<std::string>{"ds"}) << "without the option the Add folds into the later Conv (ds)";

    o.max_aux_streams = 1;
    auto og = optimize_for_cuda(downsample_net(), o);
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    const ir::Graph& g = og->graph;
    EXPECT_EQ(og->hoisted, std::vector<std::string>{"ds"});
    EXPECT_EQ(og->residual_convs, std::set<std::string>{"conv3"}) << "the Add folds into the main branch's last Conv";
    const size_t ds = node_index(g, "ds"), pool = node_index(g, "pool"), c1 = node_index(g, "conv1"), c3 = node_index(g, "conv3");
    ASSERT_LT(c3, g.nodes.size());
    EXPECT_EQ(ds, pool + 1) << "ds runs as soon as its input (the pool's output) exists";
    EXPECT_LT(ds, c1);
    ASSERT_EQ(og->aux_branches.size(), 1u);
    EXPECT_EQ(og->aux_branches[0].node_name, "ds");
    EXPECT_EQ(og->aux_branches[0].join_name, "conv3");
    EXPECT_EQ(og->aux_branches[0].node, ds);
    EXPECT_EQ(og->aux_branches[0].join, c3);
    ASSERT_EQ(g.nodes[c3].inputs.size(), 4u);
    EXPECT_EQ(g.nodes[c3].inputs[3], g.nodes[ds].outputs[0]) << "conv3's residual operand is ds's output";

    // The arena: ds's input and output stay untouched by every step until the join (conv3): no step between ds and conv3
    // writes a range overlapping them. Without the branch's shadow reads, conv2's output could reuse the pool output's range.
    const ArenaPlan plan = plan_cuda_arena(g, half_storage(p), false, {}, {}, og->aux_branches);
    const size_t elem = half_storage(p) ? 2 : 4;
    auto range = [&](ir::TensorId id) {
      return std::pair<size_t, size_t>{plan.offsets[static_cast<size_t>(id)], plan.offsets[static_cast<size_t>(id)] + tensor_bytes(g.tensor(id), elem)};
    };
    std::vector<ir::TensorId> branch = {g.nodes[ds].inputs[0], g.nodes[ds].outputs[0]};
    for (size_t k = ds + 1; k < c3; ++k)
      for (ir::TensorId out : g.nodes[k].outputs)
        for (ir::TensorId t : branch) {
          const auto a = range(out), b = range(t);
          EXPECT_TRUE(a.second <= b.first || b.second <= a.first)
              << g.nodes[k].name << " writes " << g.tensor(out).name << " over " << g.tensor(t).name << " while ds may still run";
        }
  }
}

TEST(EngineCudaStages, AuxStreamLeavesIdentityShortcutsAndChainsAlone) {
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  o.max_aux_streams = 1;
  auto og = optimize_for_cuda(downsample_net(true), o);
  ASSERT_TRUE(og.is_ok()) << og.status().to_string();
  EXPECT_TRUE(og->hoisted.empty());
  EXPECT_TRUE(og->aux_branches.empty()) << "every step's output is first read by the next step";
  EXPECT_EQ(og->residual_convs, std::set<std::string>{"conv3"});
  o.debug_keep_all_tensors = true;  // no fusion, no branch: every tensor is kept for node-by-node comparisons
  auto keep = optimize_for_cuda(downsample_net(), o);
  ASSERT_TRUE(keep.is_ok()) << keep.status().to_string();
  EXPECT_TRUE(keep->hoisted.empty());
  EXPECT_TRUE(keep->aux_branches.empty());
}

TEST(EngineCudaStages, NegativeAuxStreamsIsRefused) {
  CudaBuildOptions o;
  o.max_aux_streams = -1;
  auto og = optimize_for_cuda(downsample_net(), o);
  ASSERT_FALSE(og.is_ok());
  EXPECT_EQ(og.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(og.status().message().find("max_aux_streams = -1"), std::string::npos) << og.status().message();
}

// The ResNet stem and its lookalikes: x [1, cin, 32, 40] -> Conv k×k / stride / pad (cout) -> Relu -> MaxPool
// pool_k / pool_s / pool_pad -> Conv 3×3 (16, channels-last) -> Conv 1×1 (8) -> y.
struct StemSpec {
  int64_t cin = 3, cout = 64, k = 7, stride = 2, pad = 3;
  int64_t pool_k = 3, pool_s = 2, pool_pad = 1, ceil_mode = 0;
  bool conv_read_twice = false;  // an Add also reads the Relu's output
  bool pool_is_output = false;   // the MaxPool writes a graph output too
};
ir::Graph stem_net(const StemSpec& s) {
  ir::ModelBuilder b(13, "stem");
  b.input("x", ir::DType::kFloat32, {1, s.cin, 32, 40});
  b.initializer("w0", {s.cout, s.cin, s.k, s.k}, std::vector<float>(size_t(s.cout * s.cin * s.k * s.k), 0.01f));
  b.initializer("b0", {s.cout}, std::vector<float>(size_t(s.cout), 0.1f));
  b.node("Conv", {"x", "w0", "b0"}, {"c0"}, "conv1").ints("strides", {s.stride, s.stride}).ints("pads", {s.pad, s.pad, s.pad, s.pad});
  b.node("Relu", {"c0"}, {"r0"}, "relu");
  std::string pin = "r0";
  if (s.conv_read_twice) {
    b.node("Add", {"r0", "r0"}, {"a0"}, "twice");
    pin = "a0";
    b.node("Add", {"r0", "a0"}, {"a1"}, "twice2");
    pin = "a1";
  }
  b.node("MaxPool", {pin}, {"p0"}, "maxpool")
      .ints("kernel_shape", {s.pool_k, s.pool_k})
      .ints("strides", {s.pool_s, s.pool_s})
      .ints("pads", {s.pool_pad, s.pool_pad, s.pool_pad, s.pool_pad})
      .i("ceil_mode", s.ceil_mode);
  b.initializer("w1", {16, s.cout, 3, 3}, std::vector<float>(size_t(16 * s.cout * 9), 0.01f));
  b.node("Conv", {"p0", "w1"}, {"c1"}, "conv2").ints("pads", {1, 1, 1, 1});
  b.initializer("w2", {8, 16, 1, 1}, std::vector<float>(128, 0.01f));
  b.node("Conv", {"c1", "w2"}, {"y"}, "conv3");
  b.output("y");
  if (s.pool_is_output) b.output("p0");
  return import(b);
}
CudaBuildOptions stem_options() {
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  o.layout = Layout::kNhwc;
  o.fuse_stem_pool = true;
  return o;
}

TEST(EngineCudaStages, StemPoolReadsTheNchwInputWithNoReformat) {
  for (Layout l : {Layout::kNhwc, Layout::kAuto}) {
    CudaBuildOptions o = stem_options();
    o.layout = l;
    auto og = optimize_for_cuda(stem_net({}), o);
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    ASSERT_EQ(og->stem_pools.size(), 1u) << layout_name(l);
    EXPECT_EQ(og->layout, Layout::kNhwc) << layout_name(l) << ": one reformat (before conv3) for 2 channels-last convs";
    const ir::TensorId x = og->graph.inputs[0];
    size_t conv = og->graph.nodes.size();
    for (size_t i = 0; i < og->graph.nodes.size(); ++i) {
      const ir::Node& n = og->graph.nodes[i];
      if (n.find(kReformatAttr)) EXPECT_NE(n.inputs[0], x) << "the input must not be reformatted: " << n.name;
      if (n.name == "conv1") conv = i;
    }
    ASSERT_LT(conv + 1, og->graph.nodes.size());
    const ir::Node& c = og->graph.nodes[conv];
    EXPECT_EQ(c.inputs[0], x) << "the stem reads the graph input itself";
    EXPECT_EQ(*og->stem_pools.begin(), c.outputs[0]);
    EXPECT_TRUE(og->nhwc_tensors.count(c.outputs[0])) << "its output is stored channels-last";
    EXPECT_FALSE(og->nhwc_nodes[conv]) << "the Conv itself is no cuDNN NHWC conv";
    const ir::Node& pool = og->graph.nodes[conv + 1];
    EXPECT_EQ(pool.op_type, "MaxPool");
    EXPECT_EQ(pool.inputs[0], c.outputs[0]) << "no reformat between the Conv and its pool";
    EXPECT_EQ(og->reformats, 1);
  }
}

TEST(EngineCudaStages, StemPoolLookalikesAndOtherBuildsAreNotFused) {
  struct Case {
    const char* what;
    StemSpec s;
  };
  std::vector<Case> cases = {{"4 input channels", {.cin = 4}},
                             {"32 output channels", {.cout = 32}},
                             {"5x5 kernel", {.k = 5, .pad = 2}},
                             {"stride 1", {.stride = 1}},
                             {"pad 2", {.pad = 2}},
                             {"2x2 pool", {.pool_k = 2, .pool_pad = 0}},
                             {"pool stride 1", {.pool_s = 1}},
                             {"pool pad 0", {.pool_pad = 0}},
                             {"ceil_mode", {.ceil_mode = 1}},
                             {"the conv's output read twice", {.conv_read_twice = true}},
                             {"the pool writes a graph output", {.pool_is_output = true}}};
  for (const Case& c : cases) {
    auto og = optimize_for_cuda(stem_net(c.s), stem_options());
    ASSERT_TRUE(og.is_ok()) << c.what << ": " << og.status().to_string();
    EXPECT_TRUE(og->stem_pools.empty()) << c.what;
  }
  auto with = [](auto edit) {
    CudaBuildOptions o = stem_options();
    edit(o);
    return o;
  };
  const std::vector<std::pair<const char*, CudaBuildOptions>> builds = {
      {"option off", with([](CudaBuildOptions& o) { o.fuse_stem_pool = false; })},
      {"fp32", with([](CudaBuildOptions& o) { o.precision = Precision::kFloat32; })},
      {"layout nchw", with([](CudaBuildOptions& o) { o.layout = Layout::kNchw; })},
      {"hwc8_input", with([](CudaBuildOptions& o) { o.hwc8_input = true; })},
      {"no warpstream tactics", with([](CudaBuildOptions& o) { o.tactic_sources = kTacticCudnn | kTacticCublasLt; })},
      {"keep all tensors", with([](CudaBuildOptions& o) { o.debug_keep_all_tensors = true; })}};
  for (const auto& [what, o] : builds) {
    auto og = optimize_for_cuda(stem_net({}), o);
    ASSERT_TRUE(og.is_ok()) << what << ": " << og.status().to_string();
    EXPECT_TRUE(og->stem_pools.empty()) << what;
    for (const ir::Node& n : og->graph.nodes)
      if (n.name == "conv1" && og->layout == Layout::kNhwc) EXPECT_NE(n.inputs[0], og->graph.inputs[0]) << what << ": the unfused stem is reformatted";
  }
}

// Review of 8f35ca3: the graph input also read by another node (that reader gets the reformat, the stem still reads x
// itself); an input below the 7x7 kernel stays unfused; kAuto's fallback to NCHW empties the set.
TEST(EngineCudaStages, StemPoolEdgeCases) {
  {
    ir::ModelBuilder b(13, "stem_shared_input");
    b.input("x", ir::DType::kFloat32, {1, 3, 32, 40});
    b.initializer("w0", {64, 3, 7, 7}, std::vector<float>(64 * 147, 0.01f));
    b.node("Conv", {"x", "w0"}, {"c0"}, "conv1").ints("strides", {2, 2}).ints("pads", {3, 3, 3, 3});
    b.node("Relu", {"c0"}, {"r0"}, "relu");
    b.node("MaxPool", {"r0"}, {"p0"}, "maxpool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
    b.initializer("wx", {64, 3, 3, 3}, std::vector<float>(64 * 27, 0.01f));
    b.node("Conv", {"x", "wx"}, {"cx"}, "side").ints("strides", {4, 4}).ints("pads", {1, 1, 1, 1});  // [1, 64, 8, 10]
    b.node("Add", {"p0", "cx"}, {"s"}, "add");
    b.initializer("w2", {8, 64, 1, 1}, std::vector<float>(512, 0.01f));
    b.node("Conv", {"s", "w2"}, {"y"}, "head");
    b.output("y");
    auto og = optimize_for_cuda(import(b), stem_options());
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    EXPECT_EQ(og->stem_pools.size(), 1u);
    const ir::TensorId x = og->graph.inputs[0];
    int reformats_of_x = 0;
    for (const ir::Node& n : og->graph.nodes) {
      if (n.find(kReformatAttr) && n.inputs[0] == x) ++reformats_of_x;
      if (n.name == "conv1") EXPECT_EQ(n.inputs[0], x) << "the stem reads the NCHW input itself";
      if (n.name == "side") EXPECT_NE(n.inputs[0], x) << "the other reader takes the reformatted copy";
    }
    EXPECT_EQ(reformats_of_x, 1);
  }
  {
    ir::ModelBuilder b(13, "stem_tiny");
    b.input("x", ir::DType::kFloat32, {1, 3, 6, 9});
    b.initializer("w0", {64, 3, 7, 7}, std::vector<float>(64 * 147, 0.01f));
    b.node("Conv", {"x", "w0"}, {"c0"}, "conv1").ints("strides", {2, 2}).ints("pads", {3, 3, 3, 3});
    b.node("MaxPool", {"c0"}, {"p0"}, "maxpool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
    b.initializer("w2", {8, 64, 1, 1}, std::vector<float>(512, 0.01f));
    b.node("Conv", {"p0", "w2"}, {"y"}, "head");
    b.output("y");
    auto og = optimize_for_cuda(import(b), stem_options());
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    EXPECT_TRUE(og->stem_pools.empty()) << "a 6-row input is below the kernel's 7";
  }
  {
    // A huge extent: above the kernel's 16384 the stem stays unfused (nothing is allocated for a runtime input here).
    ir::ModelBuilder b(13, "stem_huge");
    b.input("x", ir::DType::kFloat32, {1, 3, 16385, 9});
    b.initializer("w0", {64, 3, 7, 7}, std::vector<float>(64 * 147, 0.01f));
    b.node("Conv", {"x", "w0"}, {"c0"}, "conv1").ints("strides", {2, 2}).ints("pads", {3, 3, 3, 3});
    b.node("MaxPool", {"c0"}, {"p0"}, "maxpool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
    b.initializer("w2", {8, 64, 1, 1}, std::vector<float>(512, 0.01f));
    b.node("Conv", {"p0", "w2"}, {"y"}, "head");
    b.output("y");
    auto og = optimize_for_cuda(import(b), stem_options());
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    EXPECT_TRUE(og->stem_pools.empty()) << "16385 rows is above the kernel's 16384";
  }
  {
    // kAuto falls back to NCHW when the reformats dominate: a Softmax after every conv needs its own pair.
    ir::ModelBuilder b(13, "stem_auto_nchw");
    b.input("x", ir::DType::kFloat32, {1, 3, 32, 40});
    b.initializer("w0", {64, 3, 7, 7}, std::vector<float>(64 * 147, 0.01f));
    b.node("Conv", {"x", "w0"}, {"c0"}, "conv1").ints("strides", {2, 2}).ints("pads", {3, 3, 3, 3});
    b.node("MaxPool", {"c0"}, {"p0"}, "maxpool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
    std::string t = "p0";
    for (int i = 0; i < 3; ++i) {
      const std::string w = "w" + std::to_string(i + 1), c = "c" + std::to_string(i + 1), sm = "s" + std::to_string(i + 1);
      b.initializer(w, {64, 64, 3, 3}, std::vector<float>(64 * 64 * 9, 0.01f));
      b.node("Conv", {t, w}, {c}, "conv" + std::to_string(i + 2)).ints("pads", {1, 1, 1, 1});
      b.node("Softmax", {c}, {sm}, "softmax" + std::to_string(i)).i("axis", 1);
      t = sm;
    }
    b.node("Relu", {t}, {"y"}, "out");
    b.output("y");
    CudaBuildOptions o = stem_options();
    o.layout = Layout::kAuto;
    auto og = optimize_for_cuda(import(b), o);
    ASSERT_TRUE(og.is_ok()) << og.status().to_string();
    EXPECT_EQ(og->layout, Layout::kNchw);
    EXPECT_TRUE(og->stem_pools.empty()) << "an NCHW plan has no fused stem (it writes channels-last)";
    EXPECT_EQ(og->reformats, 0);
  }
}

TEST(EngineCudaStages, LayoutNamesParse) {
  EXPECT_EQ(*parse_layout("nhwc"), Layout::kNhwc);
  EXPECT_EQ(*parse_layout("nchw"), Layout::kNchw);
  EXPECT_EQ(*parse_layout("auto"), Layout::kAuto);
  auto bad = parse_layout("NHWC");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'NHWC'"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace ws::cudaexec
