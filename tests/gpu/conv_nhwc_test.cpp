// WarpStream's NHWC fp16 implicit-GEMM conv with cluster split-K (src/kernels/conv/conv_nhwc.h) against the CPU reference
// (ref::conv_nd on the same fp16-rounded operands, + bias + residual, activation, in float): |got − ref| <=
// 2e-2·max|ref| (fp16 storage of y; fp32 accumulation in another order). Every form (tile_n 32 / 64 × splits 1..16)
// of each case, uneven and empty splits included; y poisoned (NaN) before each launch; two launches must give the same
// bits (the DSMEM reduction is in rank order); a mismatch dumps the operands; random operands print their seed
// (WS_SEED replays).
// Cases: ResNet-50's 3×3 convs (56×56, 28×28 stride 2, 14×14, 7×7), three 1×1 convs (a residual, a stride-2
// downsample, 2048 → 512 on 7×7), batch 2 with asymmetric pads, a 5×5 dilated kernel, 96 output channels (a partial
// 64-channel tile), a 3×2 kernel with stride (2, 1), dilation (1, 2) and no bias.
// Also: what the launcher refuses (no GPU needed); two convs chained with programmatic dependent launch (the second
// must not read the first's output before it is complete); the engine with the tactic forced through its timing cache
// against the CPU executor.
//   build/tests/ws_gpu_tests --gtest_filter='ConvNhwc*'
// Timing (a benchmark, not a test; DISABLED_): each form on ResNet-50's 3×3 and deep 1×1 convs, CUDA-graph replay, median,
// with and without PDL:
//   build/tests/ws_gpu_tests --gtest_also_run_disabled_tests --gtest_filter='ConvNhwc.DISABLED_*'
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
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

// A float device buffer holding `v` (freed on scope exit, early test returns included).
struct DevFloat {
  float* p = nullptr;
  explicit DevFloat(const std::vector<float>& v) {
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(v.size(), 1) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(test::upload_sync(p, v.data(), v.size() * sizeof(float)), cudaSuccess);
  }
  ~DevFloat() { cudaFree(p); }
  DevFloat(const DevFloat&) = delete;
  DevFloat& operator=(const DevFloat&) = delete;
};

// Every form the kernel is built for (tile_n × splits).
std::vector<kernels::NhwcIgemmForm> all_forms() {
  std::vector<kernels::NhwcIgemmForm> out;
  for (int tn : {32, 64})
    for (int sp : {1, 2, 4, 8, 16}) out.push_back({tn, sp});
  return out;
}

Conv2dGeometry geometry(const Case& k) { return test::nhwc_geometry(k); }

TEST(ConvNhwc, ImplicitGemmMatchesTheReferenceInEveryForm) {
  WS_REQUIRE_LANES_GPU();
  if (!test::compute_capability_at_least(9)) GTEST_SKIP() << "the cluster kernel needs compute capability 9.0";
  using kernels::Activation;
  std::vector<Case> cases = test::resnet50_3x3_cases();
  cases.insert(cases.end(), {
      {"1x1 64->256 14x14 residual relu", 1, 64, 14, 14, 256, 1, 1, 1, 1, 0, 0, 0, 0, true, Activation::kRelu},
      {"1x1 s2 512->1024 downsample", 1, 512, 28, 28, 1024, 1, 1, 2, 1, 0, 0, 0, 0, false, Activation::kNone},
      {"1x1 2048->512 7x7 relu", 1, 2048, 7, 7, 512, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kRelu},
      {"3x3 64->24 batch 2 9x11 asym pads residual", 2, 64, 9, 11, 24, 3, 3, 1, 1, 0, 1, 2, 1, true, Activation::kNone},
      {"5x5 dil 2 64->40 relu", 1, 64, 12, 10, 40, 5, 5, 1, 2, 4, 4, 4, 4, false, Activation::kRelu},
      {"3x3 64->96 10x10 residual relu (partial channel tile)", 1, 64, 10, 10, 96, 3, 3, 1, 1, 1, 1, 1, 1, true, Activation::kRelu},
      // kh != kw, stride and dilation differing between height and width (a swap of the two would show), no bias
      {"3x2 s(2,1) dil(1,2) 128->40 no bias", 1, 128, 11, 13, 40, 3, 2, 2, 1, 1, 1, 1, 0, false, Activation::kNone, 1, 2, true},
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
    const DevFloat dbias(bias);
    kernels::ConvEpilogue epi;
    epi.bias = k.no_bias ? nullptr : dbias.p;
    epi.residual = k.residual ? dz.p : nullptr;
    epi.act = k.act;
    for (const kernels::NhwcIgemmForm& f : all_forms()) {
      const std::string form = kernels::nhwc_igemm_form_name(f);
      SCOPED_TRACE("form " + form);
      const double tol = 2e-2 * std::max(max_ref, 1e-3);
      std::vector<float> got, first;
      double max_diff = 0;
      for (int launch = 0; launch < 2; ++launch) {  // twice: each launch checked, and the two must be the same bits
        SCOPED_TRACE("launch " + std::to_string(launch));
        ASSERT_EQ(test::memset_sync(dy.p, 0xFF, yn * sizeof(__half)), cudaSuccess);  // NaN poison
        const Status st = kernels::conv2d_nhwc_igemm(g, f, dx.p, dw.p, dy.p, epi, nullptr);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        got = dy.read(yn);
        for (size_t j = 0; j < yn; ++j) max_diff = std::max(max_diff, std::fabs(double(got[j]) - double(ref[j])));
        EXPECT_TRUE(test::near_dump(tag + " form " + form + " launch " + std::to_string(launch), got, ref, {.abs = tol, .rel = 0},
                                    {{"x (NHWC)", x}, {"w (KRSC)", w}, {"bias", bias}, {"z", z}}));
        if (launch == 0) first = got;
      }
      EXPECT_EQ(std::memcmp(first.data(), got.data(), yn * sizeof(float)), 0) << "two launches of form " << form << " differ";
      std::printf("[ nhwc     ] %-52s form %-7s max|diff| %.3g (max|ref| %.3g, %zu values, 2 launches)\n", k.name, form.c_str(), max_diff,
                  max_ref, yn);
      ++runs;
    }
  }
  EXPECT_GT(runs, 0u);
}

// What the kernel does not cover, or bad arguments, is refused with a message before any device work (no GPU needed).
TEST(ConvNhwc, ImplicitGemmRefusesWhatItDoesNotCover) {
  Conv2dGeometry g = geometry({"ok", 1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, kernels::Activation::kNone});
  alignas(16) static unsigned char buf[64];
  void* p = buf;
  kernels::ConvEpilogue epi;
  const kernels::NhwcIgemmForm ok{64, 1};
  auto expect_invalid = [&](const Conv2dGeometry& gg, kernels::NhwcIgemmForm f, const void* x, const char* needle) {
    const Status s = kernels::conv2d_nhwc_igemm(gg, f, x, p, p, epi, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
  };
  Conv2dGeometry c3 = g;
  c3.c_in = 3;
  expect_invalid(c3, ok, p, "c_in is not a multiple of 64");
  Conv2dGeometry grp = g;
  grp.group = 2;
  expect_invalid(grp, ok, p, "grouped");
  Conv2dGeometry odd = g;
  odd.c_out = 60;
  expect_invalid(odd, ok, p, "c_out is not a multiple of 8");
  Conv2dGeometry bad = g;
  bad.out_h = 9;
  expect_invalid(bad, ok, p, "conv2d_nhwc_igemm: ");
  expect_invalid(g, {64, 0}, p, "form n64_s0 does not exist");
  expect_invalid(g, {64, 3}, p, "does not exist");
  expect_invalid(g, {64, 32}, p, "does not exist");
  expect_invalid(g, {48, 1}, p, "does not exist");
  expect_invalid(g, ok, nullptr, "null x, w or y");
  expect_invalid(g, ok, buf + 2, "not 16-byte aligned");
  epi.residual = buf + 8;  // a misaligned residual
  expect_invalid(g, ok, p, "not 16-byte aligned");
  epi.residual = nullptr;
  // huge dimensions, refused by the geometry check every launcher shares (validate_conv2d: tensors up to 2^30
  // elements): a 40000 x 40000 map (1.6e9 output pixels), a 2^20-channel 1x1 conv (2^32 weights)
  Conv2dGeometry big = geometry({"big", 1, 32, 40000, 40000, 32, 1, 1, 1, 1, 0, 0, 0, 0, false, kernels::Activation::kNone});
  expect_invalid(big, ok, p, "2^30");
  Conv2dGeometry deep = geometry({"deep", 1, int64_t{1} << 20, 1, 1, 4096, 1, 1, 1, 1, 0, 0, 0, 0, false, kernels::Activation::kNone});
  expect_invalid(deep, ok, p, "2^30");
  EXPECT_TRUE(kernels::nhwc_igemm_form_valid({32, 16}));
  EXPECT_FALSE(kernels::nhwc_igemm_form_valid({64, 5}));
  EXPECT_EQ(kernels::nhwc_igemm_form_name({32, 8}), "n32_s8");
}

// Programmatic dependent launch: conv1 (1×1 1024 → 64 on 56×56, 49 CTAs over 16 K tiles: long enough) writes t, and
// conv2 (3×3 64 → 64 on t), launched with epi.pdl, starts while conv1 drains (conv1 triggers after its mainloop) and
// loads its weights early, but must read t only after its PDL wait. t and y are poisoned (NaN) before each chain, on
// the same non-blocking stream; 20 chains in each of conv2's forms (splits 1 and 8), each checked against the CPU
// reference of conv2 on conv1's output, and t against conv1's output bit for bit.
TEST(ConvNhwc, ChainedWithPdlReadsOnlyAfterTheWait) {
  WS_REQUIRE_LANES_GPU();
  if (!test::compute_capability_at_least(9)) GTEST_SKIP() << "the cluster kernel and PDL need compute capability 9.0";
  using kernels::Activation;
  const Case c1{"pdl chain conv1 1x1 1024->64 56x56", 1, 1024, 56, 56, 64, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kRelu};
  const Case c2{"pdl chain conv2 3x3 64 56x56", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu};
  const Conv2dGeometry g1 = geometry(c1), g2 = geometry(c2);
  const test::NhwcOperands o1 = test::nhwc_operands(c1);
  const test::NhwcOperands o2 = test::nhwc_operands(c2);  // its x is unused: conv2 reads conv1's output
  const size_t tn = size_t(g1.out_h * g1.out_w * g1.c_out), yn = size_t(g2.out_h * g2.out_w * g2.c_out);
  DevHalf dx(o1.x), dw1(o1.w), dw2(o2.w), dt(std::vector<float>(tn, 0.f)), dy(std::vector<float>(yn, 0.f));
  const DevFloat db1(o1.bias), db2(o2.bias);
  kernels::ConvEpilogue e1, e2;
  e1.bias = db1.p;
  e1.act = c1.act;
  e2.bias = db2.p;
  e2.act = c2.act;
  e1.pdl = e2.pdl = true;
  cudaStream_t st = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  // conv1 alone first: its output is conv2's reference input
  ASSERT_TRUE(kernels::conv2d_nhwc_igemm(g1, {64, 1}, dx.p, dw1.p, dt.p, e1, st).is_ok());
  ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
  const std::vector<float> t = dt.read(tn);
  double max_ref = 0;
  const std::vector<float> ref = test::nhwc_reference(c2, t, o2.w, o2.bias, {}, &max_ref);
  const double tol = 2e-2 * std::max(max_ref, 1e-3);
  for (const kernels::NhwcIgemmForm f2 : {kernels::NhwcIgemmForm{64, 1}, kernels::NhwcIgemmForm{64, 8}}) {
    SCOPED_TRACE("conv2 form " + kernels::nhwc_igemm_form_name(f2));
    for (int chain = 0; chain < 20; ++chain) {
      ASSERT_EQ(cudaMemsetAsync(dt.p, 0xFF, tn * sizeof(__half), st), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(dy.p, 0xFF, yn * sizeof(__half), st), cudaSuccess);
      ASSERT_TRUE(kernels::conv2d_nhwc_igemm(g1, {64, 1}, dx.p, dw1.p, dt.p, e1, st).is_ok());
      ASSERT_TRUE(kernels::conv2d_nhwc_igemm(g2, f2, dt.p, dw2.p, dy.p, e2, st).is_ok());
      ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
      const std::vector<float> t_again = dt.read(tn), got = dy.read(yn);
      ASSERT_EQ(std::memcmp(t_again.data(), t.data(), tn * sizeof(float)), 0) << "conv1's output changed in chain " << chain;
      ASSERT_TRUE(test::near_dump("pdl chain " + std::to_string(chain) + " form " + kernels::nhwc_igemm_form_name(f2), got, ref,
                                  {.abs = tol, .rel = 0}, {{"t (conv1 output, NHWC)", t}, {"w2 (KRSC)", o2.w}, {"bias2", o2.bias}}));
    }
  }
  std::printf("[ nhwc     ] pdl chain: 2 forms x 20 chains of conv1 -> conv2 (PDL) match the reference\n");
  cudaStreamDestroy(st);
}

// The engine with the tactic on (CudaBuildOptions::nhwc_igemm), forced through its timing cache onto a ResNet-50 layer3
// bottleneck, against the CPU executor (nhwc_test_support.h). c1 and c2 run channels-last; c3, whose residual Add ends the
// graph, may run NCHW (then it has no NHWC tactic).
TEST(ConvNhwc, EngineWithTheTacticMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  if (!test::compute_capability_at_least(9)) GTEST_SKIP() << "the cluster kernel needs compute capability 9.0 (no conv would bind it)";
  test::expect_forced_conv_tactic_matches_cpu("nhwc_igemm", [](CudaBuildOptions& o) { o.nhwc_igemm = true; }, "ws_nhwc_igemm_n64_s2",
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
                                  nlohmann::json{{"impl", "ws_nhwc_igemm_n64_s7"}, {"time_us", 0.5}},
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

// Benchmark (not a test): CUDA-graph replay of 50 launches, median of 20 graphs, per form, with and without PDL,
// ResNet-50's 3×3 convs and its deep 1×1 convs.
TEST(ConvNhwc, DISABLED_TimesResNet50Convs) {
  WS_REQUIRE_LANES_GPU();
  if (!test::compute_capability_at_least(9)) GTEST_SKIP() << "the cluster kernel needs compute capability 9.0";
  using kernels::Activation;
  std::vector<Case> cases = test::resnet50_3x3_timing_cases();
  cases.insert(cases.end(), {{"layer3 1x1 1024->256 14x14", 1, 1024, 14, 14, 256, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kRelu},
                             {"layer3 1x1 256->1024 14x14", 1, 256, 14, 14, 1024, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kRelu},
                             {"layer4 1x1 2048->512 7x7", 1, 2048, 7, 7, 512, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kRelu},
                             {"layer4 1x1 512->2048 7x7", 1, 512, 7, 7, 2048, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kRelu}});
  cudaStream_t st = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  for (const Case& k : cases) {
    const Conv2dGeometry g = geometry(k);
    const size_t xn = size_t(g.in_h * g.in_w * g.c_in), wn = size_t(g.c_out * g.kernel_h * g.kernel_w * g.c_in),
                 yn = size_t(g.out_h * g.out_w * g.c_out);
    DevHalf dx(std::vector<float>(xn, 0.1f)), dw(std::vector<float>(wn, 0.01f)), dy(std::vector<float>(yn, 0.f));
    for (const kernels::NhwcIgemmForm& f : all_forms()) {
      float us[2] = {0, 0};
      for (int pdl = 0; pdl < 2; ++pdl) {
        kernels::ConvEpilogue epi;
        epi.act = k.act;
        epi.pdl = pdl == 1;
        us[pdl] = test::median_replay_us(st, [&](cudaStream_t s) { return kernels::conv2d_nhwc_igemm(g, f, dx.p, dw.p, dy.p, epi, s); });
      }
      std::printf("[ nhwc t   ] %-28s form %-7s %7.2f us per conv, %7.2f with PDL (median of 20 graphs of 50; grid %lld x %lld x %d)\n",
                  k.name, kernels::nhwc_igemm_form_name(f).c_str(), us[0], us[1],
                  static_cast<long long>((g.out_h * g.out_w + 63) / 64), static_cast<long long>((g.c_out + f.tile_n - 1) / f.tile_n),
                  f.splits);
    }
  }
  cudaStreamDestroy(st);
}

}  // namespace
}  // namespace ws
