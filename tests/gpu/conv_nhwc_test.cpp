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

struct Case {
  const char* name;
  int64_t n, c, h, w, k, kh, kw, stride, dil, pt, pl, pb, pr;
  bool residual;
  kernels::Activation act;
};

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

Conv2dGeometry geometry(const Case& k) {
  Conv2dGeometry g;
  g.n = k.n; g.c_in = k.c; g.in_h = k.h; g.in_w = k.w; g.c_out = k.k; g.group = 1;
  g.kernel_h = k.kh; g.kernel_w = k.kw; g.stride_h = g.stride_w = k.stride; g.dilation_h = g.dilation_w = k.dil;
  g.pad_top = k.pt; g.pad_left = k.pl; g.pad_bottom = k.pb; g.pad_right = k.pr;
  g.out_h = (k.h + k.pt + k.pb - k.dil * (k.kh - 1) - 1) / k.stride + 1;
  g.out_w = (k.w + k.pl + k.pr - k.dil * (k.kw - 1) - 1) / k.stride + 1;
  return g;
}

TEST(ConvNhwc, ImplicitGemmMatchesTheReferenceAtEverySplit) {
  WS_REQUIRE_LANES_GPU();
  using kernels::Activation;
  const Case cases[] = {
      {"3x3 64 56x56 relu", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
      {"3x3 128 56->28 s2 relu", 1, 128, 56, 56, 128, 3, 3, 2, 1, 1, 1, 1, 1, false, Activation::kRelu},
      {"3x3 256 14x14 relu", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
      {"3x3 512 7x7 relu", 1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
      {"1x1 64->256 14x14 residual relu", 1, 64, 14, 14, 256, 1, 1, 1, 1, 0, 0, 0, 0, true, Activation::kRelu},
      {"1x1 s2 512->1024 downsample", 1, 512, 28, 28, 1024, 1, 1, 2, 1, 0, 0, 0, 0, false, Activation::kNone},
      {"3x3 32->24 batch 2 9x11 asym pads residual", 2, 32, 9, 11, 24, 3, 3, 1, 1, 0, 1, 2, 1, true, Activation::kNone},
      {"5x5 dil 2 64->40 relu", 1, 64, 12, 10, 40, 5, 5, 1, 2, 4, 4, 4, 4, false, Activation::kRelu},
      {"3x3 64->96 10x10 residual relu (partial channel tile)", 1, 64, 10, 10, 96, 3, 3, 1, 1, 1, 1, 1, 1, true, Activation::kRelu},
  };
  size_t runs = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const Conv2dGeometry g = geometry(k);
    ASSERT_TRUE(kernels::conv2d_nhwc_igemm_applicable(g));
    const std::string tag = k.name;
    const size_t xn = size_t(g.n * g.in_h * g.in_w * g.c_in), wn = size_t(g.c_out * g.kernel_h * g.kernel_w * g.c_in);
    const size_t yn = size_t(g.n * g.out_h * g.out_w * g.c_out);
    const std::vector<float> x = test::random_half(xn, tag + " x", -1.f, 1.f);
    const float wb = 1.0f / std::sqrt(float(g.c_in * g.kernel_h * g.kernel_w));
    const std::vector<float> w = test::random_half(wn, tag + " w", -wb, wb);  // KRSC
    const std::vector<float> bias = test::random_values(size_t(g.c_out), test::test_seed(tag + " bias"), -0.5f, 0.5f);
    const std::vector<float> z = test::random_half(k.residual ? yn : 0, tag + " z", -1.f, 1.f);
    // Reference: per image, NCHW conv of the same values, back to NHWC, + bias + residual, activation.
    ref::ConvParams cp;
    cp.rank = 2; cp.n = 1; cp.c_in = g.c_in; cp.c_out = g.c_out; cp.groups = 1;
    cp.in[0] = g.in_h; cp.in[1] = g.in_w; cp.kernel[0] = g.kernel_h; cp.kernel[1] = g.kernel_w;
    cp.stride[0] = cp.stride[1] = k.stride; cp.dilation[0] = cp.dilation[1] = k.dil;
    cp.pad_begin[0] = k.pt; cp.pad_begin[1] = k.pl; cp.pad_end[0] = k.pb; cp.pad_end[1] = k.pr;
    cp.out[0] = g.out_h; cp.out[1] = g.out_w;
    const std::vector<float> w_nchw = test::to_nchw(w, g.c_out, g.kernel_h, g.kernel_w, g.c_in);
    const int64_t plane_in = g.in_h * g.in_w * g.c_in, plane_out = g.out_h * g.out_w;
    std::vector<float> ref(yn);
    double max_ref = 0;
    for (int64_t img = 0; img < g.n; ++img) {
      const std::vector<float> xi(x.begin() + img * plane_in, x.begin() + (img + 1) * plane_in);
      std::vector<float> out(size_t(plane_out * g.c_out));
      ref::conv_nd(test::to_nchw(xi, 1, g.in_h, g.in_w, g.c_in).data(), w_nchw.data(), nullptr, out.data(), cp);
      for (int64_t p = 0; p < plane_out; ++p)
        for (int64_t ch = 0; ch < g.c_out; ++ch) {
          const size_t o = size_t((img * plane_out + p) * g.c_out + ch);
          float v = out[size_t(ch * plane_out + p)] + bias[size_t(ch)] + (k.residual ? z[o] : 0.f);
          if (k.act == Activation::kRelu) v = std::max(v, 0.f);
          ref[o] = v;
          max_ref = std::max(max_ref, std::fabs(double(v)));
        }
    }
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

// The engine with the tactic on (CudaBuildOptions::nhwc_igemm): a ResNet-50 layer3 bottleneck (1x1 1024->256, 3x3 256,
// 1x1 256->1024 + residual, ReLUs) at 14x14, NHWC fp16, against the CPU executor (2e-2 abs + rel). So that the kernel
// surely runs (timing alone may keep cuDNN), a first build writes its timing cache, every Conv entry is rewritten to
// "ws_nhwc_igemm_s2", and the compared engine is built from that cache (the cache-hit path); its tactics must name our
// kernel for the NHWC convs (c1, c2 at least). Built with the option off (no cache), no conv names it.
TEST(ConvNhwc, EngineWithTheTacticMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  const ir::Graph g = test::bottleneck_graph(1024, 256, 14, 1, "layer3_bottleneck");
  const std::string cache = (std::filesystem::temp_directory_path() / ("ws_conv_nhwc_test_" + std::to_string(::getpid()) + ".json")).string();
  for (bool on : {true, false}) {
    const std::string what = std::string("layer3 bottleneck fp16 nhwc, nhwc_igemm ") + (on ? "on (forced through the cache)" : "off");
    SCOPED_TRACE(what);
    CudaBuildOptions o;
    o.layout = Layout::kNhwc;
    o.precision = Precision::kFloat16;
    o.nhwc_igemm = on;
    if (on) {
      o.timing_cache_path = cache;
      auto first = CudaEngine::build(g, o);  // writes the cache
      ASSERT_TRUE(first.is_ok()) << first.status().to_string();
      std::ifstream in(cache);
      ASSERT_TRUE(in.good()) << cache;
      nlohmann::json j = nlohmann::json::parse(in);
      size_t forced = 0;
      for (auto& [key, entry] : j.at("entries").items())
        if (key.find("|Conv|") != std::string::npos) {
          entry = nlohmann::json{{"impl", "ws_nhwc_igemm_s2"}, {"time_us", 1.0}};
          ++forced;
        }
      ASSERT_GT(forced, 0u) << "no Conv entry in " << cache;
      std::ofstream(cache) << j.dump(1) << "\n";
    }
    auto e = CudaEngine::build(g, o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    size_t ours = 0;
    for (const TacticRecord& t : (*e)->tactics())
      if (t.op_type == "Conv") {
        std::printf("[ nhwc     ]   %-4s %7.2f us%s  %s\n", t.node.c_str(), t.time_us, t.from_cache ? " (cache)" : "", t.choice.c_str());
        ours += t.choice.rfind("ws nhwc implicit GEMM", 0) == 0;
      }
    // c1 and c2 run channels-last; c3, whose residual Add ends the graph, may run NCHW (then it has no NHWC tactic).
    if (on) EXPECT_GE(ours, 2u) << "the forced cache entries did not bind our kernel to c1 and c2";
    else EXPECT_EQ(ours, 0u);
    std::string err;
    auto cmp = test::run_both(g, Precision::kFloat16, 2e-2, 2e-2, test::test_seed(what), &err, o);  // same options and cache
    ASSERT_TRUE(err.empty()) << err;
    EXPECT_TRUE(test::near_dump_inputs(what, cmp, {.abs = 2e-2, .rel = 2e-2}));
    EXPECT_GT(cmp.max_ref, 0.0);
    std::printf("[ nhwc     ] %-52s max|diff| %.3g (max|ref| %.3g); %zu of 3 convs on our implicit GEMM\n", what.c_str(), cmp.max_abs,
                cmp.max_ref, ours);
  }
  std::filesystem::remove(cache);
  std::filesystem::remove(cache + ".lock");
}

// A timing cache whose Conv entries name tactics this build cannot rebuild (a cuDNN graph engine at heuristic index
// 123456, an NHWC split count the kernel is never timed at, a negative index) is not trusted: the build succeeds,
// re-times those convs and binds none of the bogus choices.
TEST(ConvNhwc, BogusTimingCacheEntriesAreRetimed) {
  WS_REQUIRE_LANES_GPU();
  const ir::Graph g = test::bottleneck_graph(256, 64, 14, 1, "bogus_cache");
  const std::string cache = (std::filesystem::temp_directory_path() / ("ws_conv_nhwc_bogus_" + std::to_string(::getpid()) + ".json")).string();
  CudaBuildOptions o;
  o.layout = Layout::kNhwc;
  o.precision = Precision::kFloat16;
  o.nhwc_igemm = true;
  o.cudnn_graph_convs = true;
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
                                  nlohmann::json{{"impl", "cudnn_fe"}, {"algo", -3}, {"time_us", 0.5}}};
  size_t n = 0;
  for (auto& [key, entry] : j.at("entries").items())
    if (key.find("|Conv|") != std::string::npos) entry = bogus[n++ % 3];
  ASSERT_GT(n, 0u);
  std::ofstream(cache) << j.dump(1) << "\n";
  auto e = CudaEngine::build(g, o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  for (const TacticRecord& t : (*e)->tactics())
    if (t.op_type == "Conv") {
      std::printf("[ nhwc     ]   %-4s %7.2f us%s  %s\n", t.node.c_str(), t.time_us, t.from_cache ? " (cache)" : "", t.choice.c_str());
      EXPECT_FALSE(t.from_cache) << t.node << " kept a bogus cache entry: " << t.choice;
      EXPECT_EQ(t.choice.find("split-K 7"), std::string::npos) << t.choice;
    }
  std::filesystem::remove(cache);
  std::filesystem::remove(cache + ".lock");
}

// Benchmark (not a test): CUDA-graph replay of 50 launches, median of 20 graphs, per split, ResNet-50's 3×3 convs.
TEST(ConvNhwc, DISABLED_TimesResNet50ThreeByThree) {
  WS_REQUIRE_LANES_GPU();
  const Case cases[] = {
      {"layer1 3x3 64 56x56", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, kernels::Activation::kRelu},
      {"layer2 3x3 128 28x28", 1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, kernels::Activation::kRelu},
      {"layer3 3x3 256 14x14", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, kernels::Activation::kRelu},
      {"layer4 3x3 512 7x7", 1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, kernels::Activation::kRelu},
  };
  cudaStream_t st = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  for (const Case& k : cases) {
    const Conv2dGeometry g = geometry(k);
    const size_t xn = size_t(g.in_h * g.in_w * g.c_in), wn = size_t(g.c_out * 9 * g.c_in), yn = size_t(g.out_h * g.out_w * g.c_out);
    DevHalf dx(std::vector<float>(xn, 0.1f)), dw(std::vector<float>(wn, 0.01f)), dy(std::vector<float>(yn, 0.f));
    kernels::ConvEpilogue epi;
    epi.act = k.act;
    for (int splits : {1, 2, 4, 8, 16, 32}) {
      SplitKBuffers sk(g, splits);
      const Status warm = kernels::conv2d_nhwc_igemm(g, splits, dx.p, dw.p, dy.p, epi, sk.ws, sk.counters, st);  // outside capture
      ASSERT_TRUE(warm.is_ok()) << warm.to_string();
      ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      Status captured = Status::ok();
      for (int i = 0; i < 50 && captured.is_ok(); ++i) captured = kernels::conv2d_nhwc_igemm(g, splits, dx.p, dw.p, dy.p, epi, sk.ws, sk.counters, st);
      ASSERT_EQ(cudaStreamEndCapture(st, &graph), cudaSuccess);
      ASSERT_TRUE(captured.is_ok()) << captured.to_string();
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      std::vector<float> per;
      for (int rep = 0; rep < 21; ++rep) {
        ASSERT_EQ(cudaEventRecord(a, st), cudaSuccess);
        ASSERT_EQ(cudaGraphLaunch(exec, st), cudaSuccess);
        ASSERT_EQ(cudaEventRecord(b, st), cudaSuccess);
        ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
        float ms = 0;
        ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
        if (rep > 0) per.push_back(ms * 1000.f / 50.f);
      }
      std::sort(per.begin(), per.end());
      std::printf("[ nhwc t   ] %-24s splits %2d  %7.2f us per conv (median of %zu graphs of 50; grid %lld x %lld x %d)\n", k.name, splits,
                  per[per.size() / 2], per.size(), static_cast<long long>((g.out_h * g.out_w + 63) / 64),
                  static_cast<long long>((g.c_out + 63) / 64), splits);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(st);
}

}  // namespace
}  // namespace ws
