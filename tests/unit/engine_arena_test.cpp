// Arena planning (plan_arena): memory is reused, and no two tensors whose lifetimes overlap share a
// byte. Lifetimes are recomputed here from the node list ([first write, last read]; graph inputs
// [−1, end] so the caller's input survives run(); outputs to the end), independently of the planner.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "support/demo_reference.h"
#include "support/engine_util.h"
#include "support/test_util.h"

namespace ws {
namespace {

struct Life { int first = -2, last = -2; size_t bytes = 0; };

std::vector<Life> lifetimes(const ir::Graph& g) {
  std::vector<Life> life(g.tensors.size());
  auto touch = [&](ir::TensorId id, int step) {
    if (id == ir::kNoTensor || g.tensor(id).is_constant()) return;
    Life& l = life[static_cast<size_t>(id)];
    l.first = l.first == -2 ? step : std::min(l.first, step);
    l.last = std::max(l.last, step);
    l.bytes = static_cast<size_t>(g.tensor(id).elements()) * ir::dtype_size(g.tensor(id).dtype);
  };
  for (ir::TensorId id : g.inputs) touch(id, -1);
  for (size_t s = 0; s < g.nodes.size(); ++s) {
    for (ir::TensorId id : g.nodes[s].inputs) touch(id, static_cast<int>(s));
    for (ir::TensorId id : g.nodes[s].outputs) touch(id, static_cast<int>(s));
  }
  for (ir::TensorId id : g.outputs) touch(id, static_cast<int>(g.nodes.size()));
  for (ir::TensorId id : g.inputs) touch(id, static_cast<int>(g.nodes.size()));  // input survives run()
  return life;
}

// Returns the number of live-overlapping pairs checked; fails on any memory overlap.
int check_no_overlap(const ir::Graph& g, const ArenaPlan& plan) {
  const auto life = lifetimes(g);
  int pairs = 0;
  size_t sum = 0;
  for (size_t a = 0; a < life.size(); ++a) {
    if (life[a].first == -2) continue;
    EXPECT_NE(plan.offsets[a], ArenaPlan::kNotInArena) << g.tensors[a].name;
    EXPECT_EQ(plan.offsets[a] % 64, 0u) << g.tensors[a].name;
    EXPECT_LE(plan.offsets[a] + life[a].bytes, plan.bytes) << g.tensors[a].name;
    sum += life[a].bytes;
    for (size_t b = a + 1; b < life.size(); ++b) {
      if (life[b].first == -2) continue;
      const bool live_together = !(life[a].last < life[b].first || life[b].last < life[a].first);
      if (!live_together) continue;
      ++pairs;
      const size_t a0 = plan.offsets[a], a1 = a0 + life[a].bytes, b0 = plan.offsets[b], b1 = b0 + life[b].bytes;
      EXPECT_TRUE(a1 <= b0 || b1 <= a0) << g.tensors[a].name << " [" << a0 << ", " << a1 << ") and " << g.tensors[b].name
                                        << " [" << b0 << ", " << b1 << ") are live together but overlap";
    }
  }
  EXPECT_GE(plan.naive_bytes, sum);
  // Constants are never placed in the arena.
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].is_constant()) EXPECT_EQ(plan.offsets[i], ArenaPlan::kNotInArena) << g.tensors[i].name;
  return pairs;
}

TEST(EngineArena, DemoModelReusesMemoryWithoutOverlap) {
  std::string bytes;
  ir::make_demo_model({.seed = 11}).SerializeToString(&bytes);
  auto g = ir::import_onnx_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "demo");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto e = CpuEngine::build(std::move(*g));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const ArenaPlan& plan = (*e)->arena_plan();
  // Largest pair live together: input 12 KiB + bn1/relu1 32 KiB each; 12 runtime tensors sum ~120 KiB.
  EXPECT_LT(plan.bytes, plan.naive_bytes);
  EXPECT_LT(plan.bytes * 3 / 2, plan.naive_bytes) << "expected at least a third saved";
  EXPECT_GE(plan.bytes, 2u * 32768) << "relu1 is read while bn1 is live: both must fit";
  EXPECT_GT(check_no_overlap((*e)->graph(), plan), 10);
}

TEST(EngineArena, RandomDagsNeverOverlapLiveTensors) {
  // Synthetic graphs: plan_arena looks only at tensors, sizes and the node order, so the nodes here
  // need not be real ops. Each node reads 1–3 earlier runtime tensors and writes 1–2 new ones of
  // random size; some tensors are graph outputs; some inputs are constants.
  std::mt19937 gen(31337);
  for (int trial = 0; trial < 40; ++trial) {
    ir::Graph g;
    auto add = [&](bool constant) {
      ir::Tensor t;
      t.name = "t" + std::to_string(g.tensors.size());
      t.dtype = ir::DType::kFloat32;
      t.shape = {static_cast<int64_t>(1 + gen() % 3000)};
      t.shape_known = true;
      if (constant) t.data = std::vector<std::byte>(static_cast<size_t>(t.shape[0]) * 4);
      return g.add_tensor(std::move(t));
    };
    std::vector<ir::TensorId> runtime;
    for (int i = 0; i < 1 + static_cast<int>(gen() % 3); ++i) {
      runtime.push_back(add(false));
      g.inputs.push_back(runtime.back());
    }
    const int nodes = 5 + static_cast<int>(gen() % 40);
    for (int n = 0; n < nodes; ++n) {
      ir::Node node;
      node.name = "n" + std::to_string(n);
      node.op_type = "Synthetic";
      const int nin = 1 + static_cast<int>(gen() % 3);
      for (int k = 0; k < nin; ++k) {
        // Mostly recent tensors (chains), sometimes far back (long skip connections).
        const size_t back = gen() % 4 == 0 ? gen() % runtime.size() : gen() % std::min<size_t>(3, runtime.size());
        node.inputs.push_back(runtime[runtime.size() - 1 - back]);
      }
      if (gen() % 5 == 0) node.inputs.push_back(add(true));
      const int nout = 1 + static_cast<int>(gen() % 2);
      for (int k = 0; k < nout; ++k) node.outputs.push_back(add(false));
      for (ir::TensorId o : node.outputs) runtime.push_back(o);
      g.nodes.push_back(std::move(node));
    }
    g.outputs.push_back(runtime.back());
    if (gen() % 2) g.outputs.push_back(runtime[runtime.size() / 2]);
    const ArenaPlan plan = plan_arena(g);
    SCOPED_TRACE("trial " + std::to_string(trial));
    check_no_overlap(g, plan);
    EXPECT_LE(plan.bytes, plan.naive_bytes);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(EngineArena, LongChainUsesTwoSlots) {
  // x → Relu → Relu → … (20 steps), all [1, 1000]: at any step only input and output are live,
  // so the chain needs 2 slots, plus the graph input, which stays live for the whole run.
  ir::ModelBuilder m(13);
  m.input("x", ir::DType::kFloat32, {1, 1000});
  std::string prev = "x";
  for (int i = 0; i < 20; ++i) {
    const std::string out = i == 19 ? "y" : "r" + std::to_string(i);
    m.node(i % 2 ? "Relu" : "Sigmoid", {prev}, {out});
    prev = out;
  }
  m.output("y");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const size_t slot = 4032;  // 4000 bytes rounded up to 64
  EXPECT_EQ((*e)->arena_plan().naive_bytes, 21 * slot);
  EXPECT_LE((*e)->arena_plan().bytes, 3 * slot);  // input + two alternating chain slots
  EXPECT_GT(check_no_overlap((*e)->graph(), (*e)->arena_plan()), 19);
  // And the chain still computes: Sigmoid then Relu alternately; Relu of a sigmoid is itself.
  std::vector<float> x = test::random_floats(1000, 4, -3, 3);
  std::vector<float> want = x;
  for (int i = 0; i < 20; ++i)
    for (float& v : want) v = i % 2 ? std::max(0.0f, v) : static_cast<float>(1.0 / (1.0 + std::exp(-double(v))));
  const auto got = test::run_engine(**e, {x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(EngineArena, InputSurvivesRunSoRepeatedRunsAgree) {
  // Running twice without rewriting the input gives the reference answer both times: the arena
  // must not reuse the input's bytes for later tensors.
  std::string bytes;
  ir::make_demo_model({.seed = 12}).SerializeToString(&bytes);
  auto g = ir::import_onnx_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "demo");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto e = CpuEngine::build(std::move(*g));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const std::vector<float> input = test::random_floats(3 * 32 * 32, 13, -2, 2);
  std::memcpy((*e)->input(0), input.data(), input.size() * 4);
  const auto want = test::evaluate_demo_reference(ir::make_demo_model({.seed = 12}), input).at("logits").values;
  for (int run = 0; run < 3; ++run) {
    ASSERT_TRUE((*e)->run().is_ok());
    EXPECT_EQ(std::memcmp((*e)->input(0), input.data(), input.size() * 4), 0) << "input clobbered by run " << run;
    const float* y = static_cast<const float*>((*e)->output(0));
    for (int i = 0; i < 10; ++i) EXPECT_NEAR(y[i], want[i], 1e-6 + 1e-5 * std::fabs(want[i])) << "run " << run << " logit " << i;
  }
}

}  // namespace
}  // namespace ws

namespace ws {
namespace {
// A shape whose activations exceed the arena bound is refused at build, stating both sizes,
// before any arena memory is taken.
TEST(EngineArena, ArenaOverTheLimitIsRefusedAtBuild) {
  std::string bytes;
  ir::make_demo_model({.seed = 11}).SerializeToString(&bytes);
  auto g = ir::import_onnx_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "demo");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto e = CpuEngine::build(std::move(*g), /*max_arena_bytes=*/16 * 1024);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(e.status().message().find("arena"), std::string::npos) << e.status().message();
}
}  // namespace
}  // namespace ws
