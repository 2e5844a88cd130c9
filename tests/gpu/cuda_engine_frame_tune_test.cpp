// The frame-level tactic check (CudaEngine::tune_frame, src/engine/cuda/frame_tune.cpp) and the runners-up it flips
// (TimingEntry::alternatives, recorded by the Conv binds of src/engine/cuda/ops/conv.cpp).
//   - FlipsStayCorrectAndTheCacheKeepsThePlan: two MBConv blocks in fp16 (our NCHW kernels, the fused candidates);
//     the check with every runner-up contested (max_gap 10) and no gain needed (min_gain 0, 1 round) so flips are
//     kept; the cache read back names the kept flips (or the build's own choices when reverted), every tried flip names
//     its two tactics, and an engine built from the edited cache matches the CPU executor (2e-2 · max|ref|) — the
//     flipped tactics compute the same network.
//   - RefusesBadOptions: no timing cache, options out of range: kInvalidArgument naming the option, before any device
//     work (runs without a GPU).
// Run: ws_gpu_tests --gtest_filter='CudaEngineFrameTune.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <string>

#include <unistd.h>

#include "cuda_engine_test_support.h"
#include "engine/ir/model_builder.h"
#include "engine/ir/timing_cache.h"
#include "lanes_gpu_support.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

// x [1,16,28,28] -> block 1 (1x1 16->64 Relu, 3x3 depthwise 64 Relu, 1x1 64->24) -> block 2 (1x1 24->96 Relu, 3x3 depthwise
// 96 Relu, 1x1 96->24, + block 1's output) -> GlobalAveragePool -> Flatten -> Gemm -> y [1, 10].
ir::Graph mbconv_blocks() {
  ir::ModelBuilder b{13, "frame_tune"};
  b.input("x", ir::DType::kFloat32, {1, 16, 28, 28});
  auto block = [&](const std::string& n, const std::string& in, const std::string& out, int64_t cin, int64_t mid, int64_t cout) {
    test::add_random_conv(b, n + "_ex", in, n + "_a", {mid, cin, 1, 1}, {1, 1}, {0, 0, 0, 0});
    b.node("Relu", {n + "_a"}, {n + "_ar"}, n + "_r1");
    test::add_random_conv(b, n + "_dw", n + "_ar", n + "_b", {mid, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, mid);
    b.node("Relu", {n + "_b"}, {n + "_br"}, n + "_r2");
    test::add_random_conv(b, n + "_pw", n + "_br", out, {cout, mid, 1, 1}, {1, 1}, {0, 0, 0, 0});
  };
  block("b1", "x", "y1", 16, 64, 24);
  block("b2", "y1", "y2p", 24, 96, 24);
  b.node("Add", {"y2p", "y1"}, {"y2"}, "b2_add");
  b.node("GlobalAveragePool", {"y2"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flatten");
  b.initializer("fc_w", {10, 24}, test::random_values(240, test::seed_for("ft_fc_w"), -0.2f, 0.2f));
  b.node("Gemm", {"f", "fc_w"}, {"y"}, "fc").i("transB", 1);
  b.output("y");
  return test::import_builder(b);
}

TEST(CudaEngineFrameTune, FlipsStayCorrectAndTheCacheKeepsThePlan) {
  WS_REQUIRE_LANES_GPU();
  const std::string cache_path =
      (std::filesystem::temp_directory_path() / ("ws_frame_tune_" + std::to_string(::getpid()) + ".json")).string();
  struct Remove {
    std::string p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
      std::filesystem::remove(p + ".lock", ec);
    }
  } remove{cache_path};
  std::filesystem::remove(cache_path);
  CudaBuildOptions opt;
  opt.precision = Precision::kFloat16;
  opt.timing_cache_path = cache_path;
  FrameTuneOptions fo;
  fo.max_flips = 6;
  fo.max_gap = 10.0f;  // every runner-up is contested
  fo.replays = 20;
  fo.rounds = 1;
  fo.min_gain_us = 0.0f;  // any faster frame keeps its flip: the kept path runs
  int caller_device = -1;
  ASSERT_EQ(cudaGetDevice(&caller_device), cudaSuccess);
  auto rep = CudaEngine::tune_frame(mbconv_blocks(), opt, fo);
  ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
  int device_after = -1;
  ASSERT_EQ(cudaGetDevice(&device_after), cudaSuccess);
  EXPECT_EQ(device_after, caller_device) << "tune_frame must put the caller's current device back";
  // The trial caches ("<cache>.tune.<pid>.json" and its lock) are removed at the end.
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(cache_path).parent_path())) {
    const std::string name = entry.path().filename().string();
    const std::string stem = std::filesystem::path(cache_path).filename().string() + ".tune.";
    EXPECT_NE(name.rfind(stem, 0), 0u) << "left behind: " << entry.path();
  }
  std::printf("[ tune     ] %zu entries, %zu contested, %zu flips, frame %.2f -> %.2f us%s, %d builds, %.1f s\n", rep->entries, rep->contested,
              rep->flips.size(), rep->frame_before_us, rep->frame_after_us, rep->reverted ? " (reverted)" : "", rep->builds, rep->seconds);
  EXPECT_GT(rep->entries, 0u);
  EXPECT_GT(rep->contested, 0u) << "no Conv recorded a runner-up";
  EXPECT_FALSE(rep->flips.empty());
  EXPECT_GT(rep->frame_before_us, 0.0f);
  EXPECT_GT(rep->frame_after_us, 0.0f);
  size_t timed = 0;
  for (const FrameTuneFlip& f : rep->flips) {
    std::printf("[ tune     ] %s %s: %s (%.2f us) -> %s (%.2f us); frame %.2f -> %.2f%s%s\n", f.kept ? "KEPT" : "    ", f.cache_key.c_str(),
                f.from.c_str(), f.from_us, f.to.c_str(), f.to_us, f.frame_us, f.flipped_frame_us, f.note.empty() ? "" : "; ", f.note.c_str());
    EXPECT_FALSE(f.from.empty());
    EXPECT_FALSE(f.to.empty());
    if (f.note != "already the choice") EXPECT_NE(f.from, f.to);
    if (f.frame_us > 0) {
      ++timed;
      EXPECT_GT(f.flipped_frame_us, 0.0f);
    }
    if (f.kept) EXPECT_TRUE(f.note.empty()) << f.note;
  }
  EXPECT_GT(timed, 0u) << "no flip changed the plan";
  EXPECT_GE(rep->builds, 1 + static_cast<int>(timed));  // the first build, and one per timed flip
  // The cache: the kept flips (last one per key wins), or the build's choices when reverted; runners-up still recorded.
  const ir::TimingCache cache = ir::TimingCache::load_as_is(opt.timing_cache_path);
  ASSERT_EQ(cache.origin(), ir::TimingCache::Origin::kMatched) << cache.warning();
  size_t with_alternatives = 0;
  for (const auto& [k, e] : cache.entries()) with_alternatives += !e.alternatives.empty();
  EXPECT_GT(with_alternatives, 0u);
  auto tactic_key = [](const ir::TimingEntry& e) {  // FrameTuneFlip's spelling: impl, ":algo N", ":fused"
    std::string k = e.impl.value_or("cudnn");
    if (e.algo) k += ":algo " + std::to_string(*e.algo);
    if (e.fused && *e.fused) k += ":fused";
    if (e.heuristic_index) k += ":heuristic " + std::to_string(*e.heuristic_index);
    return k;
  };
  std::map<std::string, std::string> last_kept;  // per entry, the last flip kept (a later one replaces an earlier one)
  for (const FrameTuneFlip& f : rep->flips)
    if (f.kept) last_kept[f.cache_key] = f.to;
  for (const auto& [key, to] : last_kept) {
    const ir::TimingEntry* e = cache.find(key);
    ASSERT_NE(e, nullptr) << key;
    if (rep->reverted) EXPECT_NE(tactic_key(*e), to) << key << ": reverted, yet the cache keeps the flip";
    else EXPECT_EQ(tactic_key(*e), to) << key;
  }
  // Every Conv of a build from the edited cache is read from it (nothing timed again).
  auto again = CudaEngine::build(mbconv_blocks(), opt);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  for (const TacticRecord& t : (*again)->tactics())
    if (t.op_type == "Conv") EXPECT_TRUE(t.from_cache || t.same_problem) << t.node << " was timed again: " << t.choice;
  // An engine from the edited cache computes the network.
  const double tol = 2e-2;
  std::string err;
  const auto cmp = test::run_both(mbconv_blocks(), Precision::kFloat16, tol, tol, test::seed_for("frame_tune_cpu"), &err, opt);
  ASSERT_TRUE(err.empty()) << err;
  EXPECT_TRUE(test::near_dump_inputs("frame-tuned fp16", cmp, {tol * std::max(1.0, cmp.max_ref), tol}));
  std::printf("[ tune     ] tuned engine against the CPU: max|diff| %.3g (max|ref| %.3g)\n", cmp.max_abs, cmp.max_ref);
}

TEST(CudaEngineFrameTune, RefusesBadOptions) {
  CudaBuildOptions opt;
  opt.precision = Precision::kFloat16;
  auto expect_refused = [&](const CudaBuildOptions& o, const FrameTuneOptions& f, const std::string& names) {
    auto r = CudaEngine::tune_frame(mbconv_blocks(), o, f);
    ASSERT_FALSE(r.is_ok()) << names;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    EXPECT_NE(r.status().message().find(names), std::string::npos) << r.status().to_string();
  };
  expect_refused(opt, {}, "timing_cache_path");
  opt.timing_cache_path = "/nonexistent-dir-for-the-check/tc.json";
  FrameTuneOptions f;
  f.max_flips = -1;
  expect_refused(opt, f, "max_flips");
  f = {};
  f.rounds = 4;
  expect_refused(opt, f, "rounds");
  f = {};
  f.replays = 5;
  expect_refused(opt, f, "replays");
  f = {};
  f.max_gap = -0.5f;
  expect_refused(opt, f, "max_gap");
  f = {};
  f.min_gain_us = std::numeric_limits<float>::quiet_NaN();
  expect_refused(opt, f, "min_gain_us");
}

}  // namespace
}  // namespace ws
