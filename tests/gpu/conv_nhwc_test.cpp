// WarpStream's NHWC fp16 implicit-GEMM conv with split-K (src/kernels/conv/conv_nhwc.h) against the CPU reference
// (ref::conv_nd on the same fp16-rounded operands, + bias + residual, activation, in float): |got − ref| <=
// 2e-2·max|ref| (fp16 storage of y; fp32 accumulation in another order). Every split count of each case, uneven
// splits included; y poisoned (NaN) before each launch; the split-K tile counters must be zero again after it; a
// mismatch dumps the operands; random operands print their seed (WS_SEED replays).
// Cases: ResNet-50's 3×3 convs (56×56, 28×28 stride 2, 14×14, 7×7), a 1×1 and a 1×1 stride-2 downsample, batch 2 with
// asymmetric pads, a 5×5 dilated kernel, a residual with ReLU, 96 output channels (a partial 64-channel tile).
// Also: what the launcher refuses (no GPU needed), and the engine with the tactic forced through its timing cache
// against the CPU executor.
//   build/tests/ws_gpu_tests --gtest_filter='ConvNhwc*'
// Timing (a benchmark, not a test; DISABLED_): each split count on ResNet-50's 3×3 convs, CUDA-graph replay, median.
//   build/tests/ws_gpu_tests --gtest_also_run_disabled_tests --gtest_filter='ConvNhwc.DISABLED_*'
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda_engine_test_support.h"
#include "engine/ir/model_builder.h"
#include "kernels/conv/conv_nhwc.h"
#include "lanes_gpu_support.h"
#include "nhwc_test_support.h"
#include "reference/reference.h"
#include "support/compare_dump.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

using kernels::Conv2dGeometry;
using test::DevHalf;

using Case = test::NhwcCase;

// Split-K's fp32 workspace and zeroed tile counters for one launch configuration (none for splits = 1).
struct SplitKBuffers {
  float* ws = nullptr;
  unsigned* counters = nullptr;
  size_t count = 0;
  SplitKBuffers(const Conv2dGeometry& g, int splits) : count(kernels::conv2d_nhwc_igemm_tile_counters(g, splits)) {
    if (const size_t b = kernels::conv2d_nhwc_igemm_workspace_bytes(g, splits)) EXPECT_EQ(cudaMalloc(&ws, b), cudaSuccess);
    if (count) {
      EXPECT_EQ(cudaMalloc(&counters, count * sizeof(unsigned)), cudaSuccess);
      EXPECT_EQ(test::memset_sync(counters, 0, count * sizeof(unsigned)), cudaSuccess);
    }
  }
  ~SplitKBuffers() {
    cudaFree(ws);
    cudaFree(counters);
  }
};

Conv2dGeometry geometry(const Case& k) { return test::nhwc_geometry(k); }

TEST(ConvNhwc, ImplicitGemmMatchesTheReferenceAtEverySplit) {
  WS_REQUIRE_LANES_GPU();
  using kernels::Activation;
  std::vector<Case> cases = test::resnet50_3x3_cases();
  cases.insert(cases.end(), {
      {"1x1 64->256 14x14 residual relu", 1, 64, 14, 14, 256, 1, 1, 1, 1, 0, 0, 0, 0, true, Activation::kRelu},
      {"1x1 s2 512->1024 downsample", 1, 512, 28, 28, 1024, 1, 1, 2, 1, 0, 0, 0, 0, false, Activation::kNone},
      {"3x3 32->24 batch 2 9x11 asym pads residual", 2, 32, 9, 11, 24, 3, 3, 1, 1, 0, 1, 2, 1, true, Activation::kNone},
      {"5x5 dil 2 64->40 relu", 1, 64, 12, 10, 40, 5, 5, 1, 2, 4, 4, 4, 4, false, Activation::kRelu},
      {"3x3 64->96 10x10 residual relu (partial channel tile)", 1, 64, 10, 10, 96, 3, 3, 1, 1, 1, 1, 1, 1, true, Activation::kRelu},
  });
  size_t runs = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const Conv2dGeometry g = geometry(k);
    ASSERT_TRUE(kernels::conv2d_nhwc_igemm_applicable(g));
    const std::string tag = k.name;
    const size_t yn = size_t(g.n * g.out_h * g.out_w * g.c_out);
    const test::NhwcOperands ops = test::nhwc_operands(k);
    const std::vector<float>&x = ops.x, &w = ops.w, &bias = ops.bias, &z = ops.z, &ref = ops.ref;
    const double max_ref = ops.max_ref;
    DevHalf dx(x), dw(w), dz(z), dy(std::vector<float>(yn, 0.f));
    float* dbias = nullptr;
    ASSERT_EQ(cudaMalloc(&dbias, bias.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(test::upload_sync(dbias, bias.data(), bias.size() * sizeof(float)), cudaSuccess);
    kernels::ConvEpilogue epi;
    epi.bias = dbias;
    epi.residual = k.residual ? dz.p : nullptr;
    epi.act = k.act;
    for (int splits : {1, 2, 3, 4, 8, 16, 32}) {
      SCOPED_TRACE("splits " + std::to_string(splits));
      SplitKBuffers sk(g, splits);
      float* ws = sk.ws;
      unsigned* counters = sk.counters;
      const size_t nc = sk.count;
      const double tol = 2e-2 * std::max(max_ref, 1e-3);
      std::vector<float> got;
      double max_diff = 0;
      for (int launch = 0; launch < 2; ++launch) {  // twice: the counters must be reusable; each launch checked
        SCOPED_TRACE("launch " + std::to_string(launch));
        ASSERT_EQ(test::memset_sync(dy.p, 0xFF, yn * sizeof(__half)), cudaSuccess);  // NaN poison
        if (ws) ASSERT_EQ(test::memset_sync(ws, 0xFF, kernels::conv2d_nhwc_igemm_workspace_bytes(g, splits)), cudaSuccess);  // stale partials: NaN
        const Status st = kernels::conv2d_nhwc_igemm(g, splits, dx.p, dw.p, dy.p, epi, ws, counters, nullptr);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        got = dy.read(yn);
        for (size_t j = 0; j < yn; ++j) max_diff = std::max(max_diff, std::fabs(double(got[j]) - double(ref[j])));
        EXPECT_TRUE(test::near_dump(tag + " splits " + std::to_string(splits) + " launch " + std::to_string(launch), got, ref,
                                    {.abs = tol, .rel = 0}, {{"x (NHWC)", x}, {"w (KRSC)", w}, {"bias", bias}, {"z", z}}));
      }
      if (nc) {
        std::vector<unsigned> left(nc);
        ASSERT_EQ(cudaMemcpy(left.data(), counters, nc * sizeof(unsigned), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(std::count(left.begin(), left.end(), 0u), std::ptrdiff_t(nc)) << "tile counters not zero after the launch";
      }
      std::printf("[ nhwc     ] %-52s splits %2d max|diff| %.3g (max|ref| %.3g, %zu values, 2 launches)\n", k.name, splits, max_diff,
                  max_ref, yn);
      ++runs;
    }
    cudaFree(dbias);
  }
  EXPECT_GT(runs, 0u);
}

// What the kernel does not cover, or bad arguments, is refused with a message before any device work (no GPU needed).
TEST(ConvNhwc, ImplicitGemmRefusesWhatItDoesNotCover) {
  Conv2dGeometry g = geometry({"ok", 1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, kernels::Activation::kNone});
  alignas(16) static unsigned char buf[64];
  void* p = buf;
  kernels::ConvEpilogue epi;
  auto expect_invalid = [&](const Conv2dGeometry& gg, int splits, const void* x, float* ws, unsigned* cnt, const char* needle) {
    const Status s = kernels::conv2d_nhwc_igemm(gg, splits, x, p, p, epi, ws, cnt, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
  };
  Conv2dGeometry c3 = g;
  c3.c_in = 3;
  expect_invalid(c3, 1, p, nullptr, nullptr, "c_in is not a multiple of 32");
  Conv2dGeometry grp = g;
  grp.group = 2;
  expect_invalid(grp, 1, p, nullptr, nullptr, "grouped");
  Conv2dGeometry odd = g;
  odd.c_out = 60;
  expect_invalid(odd, 1, p, nullptr, nullptr, "c_out is not a multiple of 8");
  Conv2dGeometry bad = g;
  bad.out_h = 9;
  expect_invalid(bad, 1, p, nullptr, nullptr, "conv2d_nhwc_igemm: ");
  expect_invalid(g, 0, p, nullptr, nullptr, "splits 0 outside");
  expect_invalid(g, kernels::kNhwcMaxSplits + 1, p, nullptr, nullptr, "outside 1..");
  expect_invalid(g, 1, nullptr, nullptr, nullptr, "null x, w or y");
  expect_invalid(g, 4, p, nullptr, nullptr, "needs a workspace");
  expect_invalid(g, 1, buf + 2, nullptr, nullptr, "not 16-byte aligned");
  epi.residual = buf + 8;  // a misaligned residual
  expect_invalid(g, 1, p, nullptr, nullptr, "not 16-byte aligned");
  epi.residual = nullptr;
  // huge dimensions: a 40000 x 40000 map (1.6e9 output pixels), a 2^20-channel 1x1 conv (2^32 weights)
  Conv2dGeometry big = geometry({"big", 1, 32, 40000, 40000, 32, 1, 1, 1, 1, 0, 0, 0, 0, false, kernels::Activation::kNone});
  expect_invalid(big, 1, p, nullptr, nullptr, "2^30");
  Conv2dGeometry deep = geometry({"deep", 1, int64_t{1} << 20, 1, 1, 4096, 1, 1, 1, 1, 0, 0, 0, 0, false, kernels::Activation::kNone});
  expect_invalid(deep, 1, p, nullptr, nullptr, "2^30");
  EXPECT_EQ(kernels::conv2d_nhwc_igemm_workspace_bytes(g, 1), 0u);
  EXPECT_EQ(kernels::conv2d_nhwc_igemm_workspace_bytes(g, 4), size_t(4 * 64 * 64 * 4));
  EXPECT_EQ(kernels::conv2d_nhwc_igemm_tile_counters(g, 4), 1u);
}

// The engine with the tactic on (CudaBuildOptions::nhwc_igemm), forced through its timing cache onto a ResNet-50 layer3
// bottleneck, against the CPU executor (nhwc_test_support.h). c1 and c2 run channels-last; c3, whose residual Add ends the
// graph, may run NCHW (then it has no NHWC tactic).
TEST(ConvNhwc, EngineWithTheTacticMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  test::expect_forced_conv_tactic_matches_cpu("nhwc_igemm", [](CudaBuildOptions& o) { o.nhwc_igemm = true; }, "ws_nhwc_igemm_s2",
                                              "ws nhwc implicit GEMM", 2);
}

// A timing cache whose Conv entries name tactics this build cannot rebuild (a cuDNN graph engine at heuristic index
// 123456, an NHWC split count the kernel is never timed at, a negative index, a CUTLASS split or tile that does not
// exist) is not trusted: the build succeeds, re-times those convs and binds none of the bogus choices.
TEST(ConvNhwc, BogusTimingCacheEntriesAreRetimed) {
  WS_REQUIRE_LANES_GPU();
  const ir::Graph g = test::bottleneck_graph(256, 64, 14, 1, "bogus_cache");
  const std::string cache = (std::filesystem::temp_directory_path() / ("ws_conv_nhwc_bogus_" + std::to_string(::getpid()) + ".json")).string();
  CudaBuildOptions o;
  o.layout = Layout::kNhwc;
  o.precision = Precision::kFloat16;
  o.nhwc_igemm = true;
  o.cudnn_graph_convs = true;
  o.cutlass_convs = true;
  o.timing_cache_path = cache;
  {
    auto first = CudaEngine::build(g, o);
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  }
  nlohmann::json j;
  {
    std::ifstream in(cache);
    ASSERT_TRUE(in.good()) << cache;
    j = nlohmann::json::parse(in);
  }
  const nlohmann::json bogus[] = {nlohmann::json{{"impl", "cudnn_fe"}, {"algo", 123456}, {"time_us", 0.5}},
                                  nlohmann::json{{"impl", "ws_nhwc_igemm_s7"}, {"time_us", 0.5}},
                                  nlohmann::json{{"impl", "cudnn_fe"}, {"algo", -3}, {"time_us", 0.5}},
                                  nlohmann::json{{"impl", "cutlass_conv_64x64x32_s4_split7"}, {"time_us", 0.5}},
                                  nlohmann::json{{"impl", "cutlass_conv_999x1x1_s9_split2"}, {"time_us", 0.5}}};
  size_t n = 0;
  for (auto& [key, entry] : j.at("entries").items())
    if (key.find("|Conv|") != std::string::npos) entry = bogus[n++ % std::size(bogus)];
  ASSERT_GT(n, 0u);
  std::ofstream(cache) << j.dump(1) << "\n";
  auto e = CudaEngine::build(g, o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  for (const TacticRecord& t : (*e)->tactics())
    if (t.op_type == "Conv") {
      std::printf("[ nhwc     ]   %-4s %7.2f us%s  %s\n", t.node.c_str(), t.time_us, t.from_cache ? " (cache)" : "", t.choice.c_str());
      EXPECT_FALSE(t.from_cache) << t.node << " kept a bogus cache entry: " << t.choice;
      EXPECT_EQ(t.choice.find("split-K 7"), std::string::npos) << t.choice;
      EXPECT_EQ(t.choice.find("999x1x1"), std::string::npos) << t.choice;
    }
  std::filesystem::remove(cache);
  std::filesystem::remove(cache + ".lock");
}

// Benchmark (not a test): CUDA-graph replay of 50 launches, median of 20 graphs, per split, ResNet-50's 3×3 convs.
TEST(ConvNhwc, DISABLED_TimesResNet50ThreeByThree) {
  WS_REQUIRE_LANES_GPU();
  const std::vector<Case> cases = test::resnet50_3x3_timing_cases();
  cudaStream_t st = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  for (const Case& k : cases) {
    const Conv2dGeometry g = geometry(k);
    const size_t xn = size_t(g.in_h * g.in_w * g.c_in), wn = size_t(g.c_out * 9 * g.c_in), yn = size_t(g.out_h * g.out_w * g.c_out);
    DevHalf dx(std::vector<float>(xn, 0.1f)), dw(std::vector<float>(wn, 0.01f)), dy(std::vector<float>(yn, 0.f));
    kernels::ConvEpilogue epi;
    epi.act = k.act;
    for (int splits : {1, 2, 4, 8, 16, 32}) {
      SplitKBuffers sk(g, splits);
      const float us = test::median_replay_us(
          st, [&](cudaStream_t s) { return kernels::conv2d_nhwc_igemm(g, splits, dx.p, dw.p, dy.p, epi, sk.ws, sk.counters, s); });
      std::printf("[ nhwc t   ] %-24s splits %2d  %7.2f us per conv (median of 20 graphs of 50; grid %lld x %lld x %d)\n", k.name, splits, us,
                  static_cast<long long>((g.out_h * g.out_w + 63) / 64), static_cast<long long>((g.c_out + 63) / 64), splits);
    }
  }
  cudaStreamDestroy(st);
}

}  // namespace
}  // namespace ws
