// The demo CNN (make_demo_model / `warpstream make-demo-model`) on the CPU executor against an
// independent layer-by-layer evaluation (support/demo_reference.cpp) that runs the model exactly
// as written — BatchNormalization and Pad as separate steps, Identity/Dropout/dead branch absent
// from the math — so the engine's BN→Conv fold, Pad→Conv fold and dead-node removal are all
// checked against unoptimised arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <sys/wait.h>

#include "engine/ir/model_builder.h"
#include "support/demo_reference.h"
#include "support/test_util.h"
#include "warpstream/engine.h"

namespace ws {
namespace {

using test::TempDir;

// Tolerance for engine (folded) vs reference (unfolded): |got − want| <= 1e-6 + 1e-5·|want|.
// Folding BN into the conv weights re-rounds W·s/√(v+ε) once per weight; nothing else differs.
constexpr double kRtol = 1e-5, kAtol = 1e-6;

::testing::AssertionResult all_close(const float* got, const std::vector<float>& want, const std::string& what) {
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(d <= kAtol + kRtol * std::fabs(want[i]))) {
      if (bad++ == 0) first = i;
      worst = std::max(worst, d);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << want.size() << " elements differ; first at "
                                       << first << " got " << got[first] << " want " << want[first]
                                       << ", worst |diff| " << worst;
}

std::vector<float> demo_input(uint32_t seed) { return test::random_floats(3 * 32 * 32, seed, -2.0f, 2.0f); }

TEST(EngineDemoModel, ImportShapesAndOpsAsWritten) {
  TempDir dir;
  const std::string path = dir.file("demo.onnx");
  test::write_demo_model(path);
  auto g = ir::import_onnx(path);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->opset, 13);
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->tensor(g->inputs[0]).name, "input");
  EXPECT_EQ(g->tensor(g->inputs[0]).shape, (ir::Shape{1, 3, 32, 32}));
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->tensor(g->outputs[0]).name, "logits");
  // Constant nodes become tensors at import; every other node is kept as written.
  const std::map<std::string, int> want = {{"AveragePool", 1}, {"BatchNormalization", 1}, {"Clip", 1}, {"Conv", 3},
                                           {"Dropout", 1}, {"Flatten", 1}, {"Gemm", 1}, {"GlobalAveragePool", 1},
                                           {"HardSwish", 1}, {"Identity", 1}, {"MaxPool", 1}, {"Mul", 1},
                                           {"Pad", 1}, {"Relu", 1}, {"Sigmoid", 1}};
  EXPECT_EQ(g->op_histogram(), want);
  // Shape inference alone (no folding) gives the hand-worked shapes of every layer.
  ASSERT_TRUE(ir::infer_shapes(*g).is_ok());
  const std::map<std::string, ir::Shape> shapes = {
      {"conv1", {1, 8, 32, 32}}, {"bn1", {1, 8, 32, 32}},   {"pad2", {1, 8, 34, 34}}, {"conv2", {1, 8, 16, 16}},
      {"clip2", {1, 8, 16, 16}}, {"conv3", {1, 16, 16, 16}}, {"pool4", {1, 16, 8, 8}}, {"avg5", {1, 16, 8, 8}},
      {"gap6", {1, 16, 1, 1}},   {"flat6", {1, 16}},         {"drop6", {1, 16}},      {"logits", {1, 10}}};
  for (const auto& [name, shape] : shapes) {
    const ir::TensorId id = g->find_tensor(name);
    ASSERT_NE(id, ir::kNoTensor) << name;
    EXPECT_EQ(g->tensor(id).shape, shape) << name;
  }
}

TEST(EngineDemoModel, MatchesUnfoldedReferenceLayerByLayer) {
  TempDir dir;
  const std::string path = dir.file("demo.onnx");
  const ir::DemoModelOptions opt{.seed = 1234, .extras = true};
  test::write_demo_model(path, opt);
  const onnx::ModelProto model = ir::make_demo_model(opt);
  auto g = ir::import_onnx(path);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto built = CpuEngine::build(std::move(*g));
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  CpuEngine& e = **built;

  // After the passes: BN folded into conv1, Pad folded into conv2, Identity/Dropout and the dead
  // Sigmoid → Mul branch gone.
  const std::map<std::string, int> want_ops = {{"AveragePool", 1}, {"Clip", 1},    {"Conv", 3},
                                               {"Flatten", 1},     {"Gemm", 1},    {"GlobalAveragePool", 1},
                                               {"HardSwish", 1},   {"MaxPool", 1}, {"Relu", 1}};
  EXPECT_EQ(e.graph().op_histogram(), want_ops);
  EXPECT_EQ(e.step_count(), 11u);
  ASSERT_EQ(e.num_inputs(), 1u);
  ASSERT_EQ(e.num_outputs(), 1u);
  EXPECT_EQ(e.input_desc(0).shape, (ir::Shape{1, 3, 32, 32}));
  EXPECT_EQ(e.input_desc(0).bytes, 3u * 32 * 32 * 4);
  EXPECT_EQ(e.output_desc(0).name, "logits");
  EXPECT_EQ(e.output_desc(0).shape, (ir::Shape{1, 10}));
  for (const ir::Node& n : e.graph().nodes) {
    if (n.name == "conv2") {  // Pad's 1 px per side is now the conv's own padding
      const ir::Attribute* pads = n.find("pads");
      ASSERT_NE(pads, nullptr);
      EXPECT_EQ(pads->ints, (std::vector<int64_t>{1, 1, 1, 1}));
      EXPECT_EQ(e.graph().tensor(n.inputs[0]).name, "relu1");  // read past the removed Identity
    }
  }

  const std::vector<float> input = demo_input(99);
  const auto want = test::evaluate_demo_reference(model, input);
  std::memcpy(e.input(0), input.data(), input.size() * 4);
  std::set<std::string> compared;
  ASSERT_TRUE(e.run_with_hook([&](size_t, const ir::Node& node) {
                 for (ir::TensorId id : node.outputs) {
                   const ir::Tensor& t = e.graph().tensor(id);
                   auto it = want.find(t.name);
                   if (it == want.end()) continue;
                   EXPECT_EQ(t.shape, it->second.shape) << t.name;
                   EXPECT_TRUE(all_close(static_cast<const float*>(e.tensor_data(id)), it->second.values, t.name));
                   compared.insert(t.name);
                 }
               }).is_ok());
  // Every surviving layer output was checked (conv1 now writes "bn1"; "pad2" no longer exists).
  EXPECT_EQ(compared, (std::set<std::string>{"bn1", "relu1", "conv2", "clip2", "conv3", "hsw3", "pool4", "avg5",
                                             "gap6", "flat6", "logits"}));
  EXPECT_TRUE(all_close(static_cast<const float*>(e.output(0)), want.at("logits").values, "logits"));
  // Sanity on the reference itself: the logits are not degenerate (some spread, nothing NaN).
  const auto& lg = want.at("logits").values;
  EXPECT_GT(*std::max_element(lg.begin(), lg.end()) - *std::min_element(lg.begin(), lg.end()), 0.05f);
}

TEST(EngineDemoModel, RepeatedRunsAndNewInputs) {
  const onnx::ModelProto model = ir::make_demo_model({.seed = 5, .extras = true});
  std::string bytes;
  ASSERT_TRUE(model.SerializeToString(&bytes));
  auto g = ir::import_onnx_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "demo");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto e = CpuEngine::build(std::move(*g));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<float> input = demo_input(seed);
    std::memcpy((*e)->input(0), input.data(), input.size() * 4);
    ASSERT_TRUE((*e)->run().is_ok());
    const auto want = test::evaluate_demo_reference(model, input);
    EXPECT_TRUE(all_close(static_cast<const float*>((*e)->output(0)), want.at("logits").values,
                          "logits for input seed " + std::to_string(seed)));
  }
}

TEST(EngineDemoModel, ExtrasDoNotChangeTheResult) {
  // With and without Identity/Dropout/dead branch: the same weights, the same folded graph.
  auto build = [](bool extras) {
    const onnx::ModelProto m = ir::make_demo_model({.seed = 77, .extras = extras});
    std::string b;
    m.SerializeToString(&b);
    auto g = ir::import_onnx_bytes(std::as_bytes(std::span(b.data(), b.size())), "demo");
    EXPECT_TRUE(g.is_ok());
    auto e = CpuEngine::build(std::move(*g));
    EXPECT_TRUE(e.is_ok());
    return std::move(*e);
  };
  auto a = build(true), b = build(false);
  EXPECT_EQ(a->step_count(), b->step_count());
  const std::vector<float> input = demo_input(4);
  std::memcpy(a->input(0), input.data(), input.size() * 4);
  std::memcpy(b->input(0), input.data(), input.size() * 4);
  ASSERT_TRUE(a->run().is_ok());
  ASSERT_TRUE(b->run().is_ok());
  const auto want = test::evaluate_demo_reference(ir::make_demo_model({.seed = 77, .extras = false}), input);
  EXPECT_TRUE(all_close(static_cast<const float*>(a->output(0)), want.at("logits").values, "with extras"));
  EXPECT_TRUE(all_close(static_cast<const float*>(b->output(0)), want.at("logits").values, "without extras"));
}

TEST(EngineDemoModel, GeneratorIsDeterministicAndSeeded) {
  std::string a, b, c;
  ASSERT_TRUE(ir::make_demo_model({.seed = 42}).SerializeToString(&a));
  ASSERT_TRUE(ir::make_demo_model({.seed = 42}).SerializeToString(&b));
  ASSERT_TRUE(ir::make_demo_model({.seed = 43}).SerializeToString(&c));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // The documented stream: conv1.weight[0] is the first draw of std::mt19937(42), (2u − 1)/√27.
  std::mt19937 gen(42);
  const float w0 = static_cast<float>((2.0 * (static_cast<double>(gen()) / 4294967296.0) - 1.0) / std::sqrt(27.0));
  EXPECT_EQ(test::initializer_floats(ir::make_demo_model({.seed = 42}), "conv1.weight")[0], w0);
  // Both initializer forms are used: BN parameters as float_data, conv weights as raw_data.
  const auto model = ir::make_demo_model({.seed = 42});
  for (const auto& t : model.graph().initializer()) {
    if (t.name() == "bn1.var") { EXPECT_FALSE(t.has_raw_data()); EXPECT_EQ(t.float_data_size(), 8); }
    if (t.name() == "conv1.weight") { EXPECT_EQ(t.raw_data().size(), 216u * 4); }
  }
}

TEST(EngineDemoModel, CliWritesTheSameModel) {
  TempDir dir;
  const std::string path = dir.file("cli_demo.onnx");
  const std::string cmd = std::string("'") + WS_CLI_PATH + "' make-demo-model '" + path + "' --seed 9 > '" +
                          dir.file("out.txt") + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << cmd;
  ASSERT_EQ(WEXITSTATUS(rc), 0) << test::read_file(dir.file("out.txt"));
  std::string want;
  ASSERT_TRUE(ir::make_demo_model({.seed = 9}).SerializeToString(&want));
  EXPECT_EQ(test::read_file(path), want);
  EXPECT_NE(test::read_file(dir.file("out.txt")).find("logits"), std::string::npos);
  // Unwritable destination: exit 2, an error line.
  const std::string bad = std::string("'") + WS_CLI_PATH + "' make-demo-model '" + dir.file("no/such/dir/x.onnx") +
                          "' 2> '" + dir.file("err.txt") + "'";
  const int rc2 = std::system(bad.c_str());
  ASSERT_TRUE(WIFEXITED(rc2));
  EXPECT_EQ(WEXITSTATUS(rc2), 2);
  EXPECT_EQ(test::read_file(dir.file("err.txt")).rfind("error: ", 0), 0u);
}

}  // namespace
}  // namespace ws
