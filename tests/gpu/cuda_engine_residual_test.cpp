// Residual-Add fusion of the CUDA executor (CudaBuildOptions::fuse_residual, engine pass
// fuse_conv_residual_adds): Add(conv, r) [→ Relu/Clip] folds into the Conv's epilogue as
// y = act(conv(x) + bias + r). Each graph below runs on the CPU executor (the oracle, unfused) and on the
// CUDA executor with every tactic source set (cuDNN fused z-input / cuDNN + our epilogue kernel / our own
// conv kernels), fp32 and fp16, on fresh random inputs; the fused graph must have no Add left.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <unistd.h>
#include <functional>
#include <string>
#include <vector>

#include "cuda_engine_test_support.h"
#include "engine/ir/model_builder.h"
#include "lanes_gpu_support.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

struct Builder {
  ir::ModelBuilder b{13, "residual"};
  void conv(const std::string& name, const std::string& in, const std::string& out, std::vector<int64_t> w,
            std::vector<int64_t> strides, std::vector<int64_t> pads, int64_t group = 1) {
    test::add_random_conv(b, name, in, out, w, strides, pads, group);
  }
};

// ResNet basic block: conv-relu-conv, + x (a graph input), relu.
ir::Graph basic_block() {
  Builder m;
  m.b.input("x", ir::DType::kFloat32, {1, 16, 14, 14});
  m.conv("c1", "x", "t1", {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1});
  m.b.node("Relu", {"t1"}, {"t1r"}, "c1_relu");
  m.conv("c2", "t1r", "t2", {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1});
  m.b.node("Add", {"t2", "x"}, {"s"}, "add");
  m.b.node("Relu", {"s"}, {"y"}, "add_relu");
  m.b.output("y");
  return test::import_builder(m.b);
}

// ResNet downsample block as torchvision exports it: the 1x1 stride-2 downsample conv comes AFTER the
// main branch, so the Add folds into the downsample conv with the main branch as the residual.
ir::Graph downsample_block() {
  Builder m;
  m.b.input("x", ir::DType::kFloat32, {1, 8, 15, 15});
  m.conv("m1", "x", "a", {24, 8, 3, 3}, {2, 2}, {1, 1, 1, 1});
  m.b.node("Relu", {"a"}, {"ar"}, "m1_relu");
  m.conv("m2", "ar", "b", {24, 24, 1, 1}, {1, 1}, {0, 0, 0, 0});
  m.conv("ds", "x", "d", {24, 8, 1, 1}, {2, 2}, {0, 0, 0, 0});
  m.b.node("Add", {"b", "d"}, {"s"}, "add");
  m.b.node("Relu", {"s"}, {"y"}, "add_relu");
  m.b.output("y");
  return test::import_builder(m.b);
}

// EfficientNet MBConv tail: depthwise + ReLU6, pointwise projection (no activation), + the block input.
ir::Graph mbconv_block() {
  Builder m;
  m.b.input("x", ir::DType::kFloat32, {1, 24, 13, 11});
  m.b.initializer("lo", {}, {0.0f});
  m.b.initializer("hi", {}, {6.0f});
  m.conv("exp", "x", "e", {48, 24, 1, 1}, {1, 1}, {0, 0, 0, 0});
  m.b.node("Clip", {"e", "lo", "hi"}, {"er"}, "exp_clip");
  m.conv("dw", "er", "d", {48, 1, 5, 5}, {1, 1}, {2, 2, 2, 2}, 48);
  m.b.node("Clip", {"d", "lo", "hi"}, {"dr"}, "dw_clip");
  m.conv("proj", "dr", "p", {24, 48, 1, 1}, {1, 1}, {0, 0, 0, 0});
  m.b.node("Add", {"x", "p"}, {"y"}, "add");  // residual first: operand order must not matter
  m.b.output("y");
  return test::import_builder(m.b);
}

void check(const std::string& label, const std::function<ir::Graph()>& make, const std::string& fused_conv) {
  const uint32_t source_sets[] = {kAllTacticSources, uint32_t{kTacticCudnn | kTacticCublasLt}, uint32_t{kTacticWarpStream}};
  for (uint32_t sources : source_sets) {
    for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
      const std::string what = label + " " + precision_name(p) + " sources=" + tactic_sources_string(sources);
      SCOPED_TRACE(what);
      CudaBuildOptions opt;
      opt.tactic_sources = sources;
      const double tol = p == Precision::kFloat32 ? 1e-4 : 2e-2;  // abs + rel each, as CudaEngineModel
      std::string err;
      const auto cmp = test::run_both(make(), p, tol, tol, test::seed_for(what), &err, opt);
      ASSERT_TRUE(err.empty()) << err;
      EXPECT_EQ(cmp.bad, 0u) << cmp.first_bad;
      opt.precision = p;
      auto e = CudaEngine::build(make(), opt);
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      for (const ir::Node& n : (*e)->graph().nodes) EXPECT_NE(n.op_type, "Add") << "node " << n.name << " was not fused";
      std::string choice;
      for (const TacticRecord& t : (*e)->tactics())
        if (t.node == fused_conv) choice = t.choice;
      EXPECT_NE(choice.find("residual"), std::string::npos) << fused_conv << ": " << choice;
      std::printf("[ residual ] %-44s max|diff| %.3g (max|ref| %.3g) %s: %s\n", what.c_str(), cmp.max_abs, cmp.max_ref,
                  fused_conv.c_str(), choice.c_str());
    }
  }
}

TEST(CudaEngineResidual, BasicBlockMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  check("basic_block", basic_block, "c2");
}

TEST(CudaEngineResidual, DownsampleBlockFoldsIntoTheLaterConv) {
  WS_REQUIRE_LANES_GPU();
  check("downsample_block", downsample_block, "ds");
}

TEST(CudaEngineResidual, MBConvBlockMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  check("mbconv_block", mbconv_block, "proj");
}

TEST(CudaEngineResidual, DisabledKeepsTheAdd) {
  WS_REQUIRE_LANES_GPU();
  CudaBuildOptions opt;
  opt.fuse_residual = false;
  std::string err;
  const auto cmp = test::run_both(basic_block(), Precision::kFloat32, 1e-4, 1e-4, test::seed_for("unfused"), &err, opt);
  ASSERT_TRUE(err.empty()) << err;
  EXPECT_EQ(cmp.bad, 0u) << cmp.first_bad;
  auto e = CudaEngine::build(basic_block(), opt);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  int adds = 0;
  for (const ir::Node& n : (*e)->graph().nodes) adds += n.op_type == "Add";
  EXPECT_EQ(adds, 1);
}

// Three convolutions of one problem (same shapes, attributes and fused ReLU; different weights) and a fourth
// that differs only in its pads: the first is timed, the next two reuse its choice (TacticRecord::same_problem),
// the fourth is timed on its own; the outputs still match the CPU executor, and the cache file names every node.
ir::Graph repeated_convs() {
  Builder m;
  m.b.input("x", ir::DType::kFloat32, {1, 16, 14, 14});
  const char* names[] = {"r1", "r2", "r3"};
  std::string in = "x";
  for (const char* n : names) {
    m.conv(n, in, std::string(n) + "_c", {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1});
    m.b.node("Relu", {std::string(n) + "_c"}, {std::string(n) + "_y"}, std::string(n) + "_relu");
    in = std::string(n) + "_y";
  }
  m.conv("r4", in, "r4_c", {16, 16, 3, 3}, {1, 1}, {1, 0, 1, 2});
  m.b.node("Relu", {"r4_c"}, {"y"}, "r4_relu");
  m.b.output("y");
  return test::import_builder(m.b);
}

TEST(CudaEngineTiming, RepeatedProblemIsTimedOnce) {
  WS_REQUIRE_LANES_GPU();
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    SCOPED_TRACE(precision_name(p));
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("ws_same_problem_" + std::to_string(::getpid()) + precision_name(p) + ".json")).string();
    std::filesystem::remove(path);
    CudaBuildOptions opt;
    opt.precision = p;
    opt.timing_cache_path = path;
    auto e = CudaEngine::build(repeated_convs(), opt);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    std::map<std::string, TacticRecord> by_node;
    // Conv records only: an fp16 build also lists its layout reformats (r1-r3 run NHWC; r4's asymmetric pads keep it NCHW).
    for (const TacticRecord& t : (*e)->tactics())
      if (t.op_type == "Conv") by_node[t.node] = t;
    ASSERT_EQ(by_node.size(), 4u);
    EXPECT_FALSE(by_node["r1"].same_problem);
    EXPECT_FALSE(by_node["r4"].same_problem) << "other pads: another problem";
    for (const char* n : {"r2", "r3"}) {
      EXPECT_TRUE(by_node[n].same_problem) << n << " was timed again: " << by_node[n].choice;
      EXPECT_FALSE(by_node[n].from_cache) << n;
      EXPECT_EQ(by_node[n].choice, by_node["r1"].choice) << n;
      EXPECT_EQ(by_node[n].time_us, by_node["r1"].time_us) << n;
    }
    for (const auto& [n, t] : by_node)
      std::printf("[ problem  ] %s %s: %s, %.1f us%s\n", precision_name(p), n.c_str(), t.choice.c_str(), t.time_us,
                  t.same_problem ? " (same problem as r1)" : "");
    // The file holds an entry for every node: a second build reads all four from it.
    auto again = CudaEngine::build(repeated_convs(), opt);
    ASSERT_TRUE(again.is_ok()) << again.status().to_string();
    for (const TacticRecord& t : (*again)->tactics())
      if (t.op_type == "Conv") EXPECT_TRUE(t.from_cache) << t.node << " is missing from the file";
    const double tol = p == Precision::kFloat32 ? 1e-4 : 2e-2;
    std::string err;
    const auto cmp = test::run_both(repeated_convs(), p, tol, tol, test::seed_for("repeated_convs"), &err, opt);
    ASSERT_TRUE(err.empty()) << err;
    EXPECT_EQ(cmp.bad, 0u) << cmp.first_bad;
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".lock");
  }
}

}  // namespace
}  // namespace ws
