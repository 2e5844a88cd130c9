// Steady state allocates nothing: CpuEngine::run() over 1000 runs of the demo model, and the
// classifier's preprocess + Top-K stages (ws::ref functions with preallocated outputs). Counted with
// the global operator new replacement in support/alloc_counter.cpp (this thread only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "reference/reference.h"
#include "support/alloc_counter.h"
#include "support/demo_reference.h"
#include "support/engine_util.h"
#include "support/test_util.h"
#include "warpstream/classifier.h"

namespace ws {
namespace {

TEST(EngineZeroAlloc, CounterSeesAllocations) {
  // Positive control: the hook is live, so a zero below means zero.
  test::AllocationScope scope;
  auto* v = new std::vector<int>(1000);
  auto p = std::make_unique<double[]>(10);
  delete v;
  EXPECT_EQ(scope.count(), 3u);
  EXPECT_GE(scope.bytes(), 4000u + 80u);
}

TEST(EngineZeroAlloc, EngineRunAllocatesNothingOver1000Runs) {
  std::string bytes;
  ir::make_demo_model({.seed = 21}).SerializeToString(&bytes);
  auto g = ir::import_onnx_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "demo");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto built = CpuEngine::build(std::move(*g));
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  CpuEngine& e = **built;
  const std::vector<float> input = test::random_floats(3 * 32 * 32, 5, -2, 2);
  std::memcpy(e.input(0), input.data(), input.size() * 4);
  ASSERT_TRUE(e.run().is_ok());  // warm-up
  std::vector<float> first(static_cast<const float*>(e.output(0)), static_cast<const float*>(e.output(0)) + 10);
  uint64_t count = 0;
  bool all_ok = true;
  {
    test::AllocationScope scope;
    for (int i = 0; i < 1000; ++i) all_ok &= e.run().is_ok();
    count = scope.count();
  }
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(count, 0u) << "heap allocations during 1000 CpuEngine::run() calls";
  // Still the right answer after 1000 runs.
  const auto want = test::evaluate_demo_reference(ir::make_demo_model({.seed = 21}), input);
  for (int i = 0; i < 10; ++i) {
    const float got = static_cast<const float*>(e.output(0))[i];
    EXPECT_NEAR(got, want.at("logits").values[i], 1e-6 + 1e-5 * std::fabs(want.at("logits").values[i])) << i;
    EXPECT_EQ(got, first[i]) << "run-to-run determinism at " << i;
  }
}

TEST(EngineZeroAlloc, PreprocessAndTopKAllocateNothing) {
  // A 48×40 RGB image → [1,3,32,32] → (the logits of a fixed vector) → top-5, all into
  // preallocated buffers.
  std::vector<uint8_t> rgb(48 * 40 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i * 37) % 251);
  std::vector<float> nchw(3 * 32 * 32);
  const std::vector<float> logits = test::random_floats(10, 9);
  ref::TopKEntry top[5];
  uint64_t count = 0;
  {
    test::AllocationScope scope;
    for (int i = 0; i < 1000; ++i) {
      Status s = ref::preprocess_rgb8_to_nchw(rgb.data(), 40, 48, 48 * 3, nchw.data(), 32, 32);
      Status t = ref::topk(logits.data(), 10, 5, top);
      if (!s.is_ok() || !t.is_ok()) break;
    }
    count = scope.count();
  }
  EXPECT_EQ(count, 0u);
  // The outputs are real: top-1 is the largest logit, and preprocess wrote normalised values.
  const auto mx = std::max_element(logits.begin(), logits.end());
  EXPECT_EQ(top[0].index, mx - logits.begin());
  EXPECT_EQ(top[0].score, *mx);
  for (int k = 1; k < 5; ++k) EXPECT_GE(top[k - 1].score, top[k].score);
  // First pixel (0,0) red channel: rgb[0] = 0 sampled at src (0.25, 0.125)·scale → within [-2.2, 2.7].
  for (float v : nchw) { EXPECT_GE(v, -2.2f); EXPECT_LE(v, 2.7f); }
}

TEST(EngineZeroAlloc, ClassifyAllocatesOnlyItsResult) {
  test::TempDir dir;
  const std::string path = dir.file("demo.onnx");
  test::write_demo_model(path, {.seed = 8});
  auto c = CpuClassifier::build(path, ModelConfig{});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ImageRgb8 img;
  img.width = 64;
  img.height = 48;
  img.pixels.resize(64 * 48 * 3);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(i % 256);
  ASSERT_TRUE((*c)->classify(img, 3).is_ok());  // warm-up
  uint64_t count = 0;
  {
    test::AllocationScope scope;
    auto top = (*c)->classify(img, 3);
    count = scope.count();
    ASSERT_TRUE(top.is_ok());
    EXPECT_EQ(top->size(), 3u);
  }
  EXPECT_EQ(count, 1u) << "only the returned Top-K vector";
}

}  // namespace
}  // namespace ws
