// CUTLASS's implicit-GEMM conv2d fprop tactic (src/kernels/conv/conv_cutlass.h) against the CPU reference (ref::conv_nd on
// the same fp16-rounded operands, bias fp16-rounded as the kernel reads it, activation, in float): |got − ref| <=
// 2e-2·max|ref| (fp16 storage of y and of the serial split-K running sums; fp32 accumulation). Every tile at every split
// count CUTLASS accepts; y poisoned (NaN) before each launch; two launches each — the second with programmatic dependent
// launch right behind a kernel that writes x (x poisoned with NaN, then copied in by test::copy_bytes, one thread per
// byte): a launch that did not wait for its predecessor would read NaN — and the semaphores must be zero again after; a mismatch dumps the operands; random operands print their seed (WS_SEED replays).
// Cases: ResNet-50's 3×3 convs (56×56, 28×28 stride 2, 14×14, 7×7), its 1×1 1024→256 reduce and 512→1024 stride-2
// downsample, batch 2 with asymmetric pads, a 5×5 dilated kernel, 96 output channels (a partial 64-channel tile).
// Also: what the launcher refuses (no GPU needed; without the CUTLASS headers: "not built"), and the engine with the
// tactic forced through its timing cache against the CPU executor.
//   build/tests/ws_gpu_tests --gtest_filter='ConvCutlass*'
// Timing (a benchmark, not a test; DISABLED_): each tile and split count on ResNet-50's 3×3 convs, CUDA-graph replay, median.
//   build/tests/ws_gpu_tests --gtest_also_run_disabled_tests --gtest_filter='ConvCutlass.DISABLED_*'
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "device_test_kernels.h"
#include "kernels/conv/conv_cutlass.h"
#include "lanes_gpu_support.h"
#include "nhwc_test_support.h"
#include "support/compare_dump.h"

namespace ws {
namespace {

using kernels::Activation;
using kernels::Conv2dGeometry;
using kernels::CutlassConvTile;
using test::DevHalf;
using test::NhwcCase;

#define WS_REQUIRE_CUTLASS_CONV()                                                                          \
  do {                                                                                                     \
    if (!kernels::conv2d_cutlass_built()) GTEST_SKIP() << "CUTLASS conv not built (scripts/fetch-cutlass-headers.sh)"; \
  } while (0)

// Zeroed int semaphores for one launch configuration (none for splits 1).
struct Semaphores {
  int* p = nullptr;
  size_t count = 0;
  explicit Semaphores(size_t n) : count(n) {
    if (n) {
      EXPECT_EQ(cudaMalloc(&p, n * sizeof(int)), cudaSuccess);
      EXPECT_EQ(test::memset_sync(p, 0, n * sizeof(int)), cudaSuccess);
    }
  }
  ~Semaphores() { cudaFree(p); }
};

bool compute_capability_90() {
  int dev = 0, major = 0, minor = 0;
  return cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 && minor == 0;
}

TEST(ConvCutlass, MatchesTheReferenceAtEveryTileAndSplit) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_CUTLASS_CONV();
  if (!compute_capability_90()) GTEST_SKIP() << "the CUTLASS conv kernels are sm_90a only";
  std::vector<NhwcCase> cases = test::resnet50_3x3_cases();
  cases.insert(cases.end(), {
      {"1x1 1024->256 14x14 relu", 1, 1024, 14, 14, 256, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kRelu},
      {"1x1 s2 512->1024 downsample", 1, 512, 28, 28, 1024, 1, 1, 2, 1, 0, 0, 0, 0, false, Activation::kNone},
      {"3x3 32->24 batch 2 9x11 asym pads", 2, 32, 9, 11, 24, 3, 3, 1, 1, 0, 1, 2, 1, false, Activation::kNone},
      {"5x5 dil 2 64->40 relu", 1, 64, 12, 10, 40, 5, 5, 1, 2, 4, 4, 4, 4, false, Activation::kRelu},
      {"3x3 64->96 10x10 relu (partial channel tile)", 1, 64, 10, 10, 96, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
      // c_in 8: the fixed-channels tile (an RGB input padded to 8, hwc8_input); ResNet-50's stem and a small odd one
      {"7x7 s2 8->64 224x224 relu (hwc8 stem)", 1, 8, 224, 224, 64, 7, 7, 2, 1, 3, 3, 3, 3, false, Activation::kRelu},
      {"3x3 8->24 batch 2 9x11 asym pads", 2, 8, 9, 11, 24, 3, 3, 1, 1, 0, 1, 2, 1, false, Activation::kNone},
  });
  struct OwnedStream {
    cudaStream_t s = nullptr;
    ~OwnedStream() { cudaStreamDestroy(s); }
  } owned;
  ASSERT_EQ(cudaStreamCreateWithFlags(&owned.s, cudaStreamNonBlocking), cudaSuccess);
  cudaStream_t stream = owned.s;
  size_t runs = 0;
  for (const NhwcCase& k : cases) {
    SCOPED_TRACE(k.name);
    const Conv2dGeometry g = test::nhwc_geometry(k);
    const size_t yn = size_t(g.n * g.out_h * g.out_w * g.c_out);
    const test::NhwcOperands ops = test::nhwc_operands(k, /*half_bias=*/true);
    DevHalf dx(ops.x), dx_stage(ops.x), dw(ops.w), dbias(ops.bias), dy(std::vector<float>(yn, 0.f));
    const size_t xbytes = ops.x.size() * sizeof(__half);
    const double tol = 2e-2 * std::max(ops.max_ref, 1e-3);
    for (CutlassConvTile tile : kernels::kCutlassConvTiles)
      for (int splits : {1, 2, 4, 8, 16}) {
        const std::string form = std::string(kernels::cutlass_conv_tile_name(tile)) + " splits " + std::to_string(splits);
        SCOPED_TRACE(form);
        size_t nsem = 0;
        const Status ok = kernels::conv2d_cutlass_check(g, tile, k.act, splits, &nsem);
        // Split counts that leave a slice without a whole channel chunk are refused by name, and the fixed-channels tile
        // anything but c_in 8 at split 1; every other form must run.
        const bool fixed8 = tile == CutlassConvTile::k64x64x32s4c8;
        if ((fixed8 && (g.c_in != 8 || splits != 1)) || (splits > 1 && g.c_in < int64_t{splits} * kernels::cutlass_conv_tile_k(tile))) {
          EXPECT_EQ(ok.code(), StatusCode::kInvalidArgument) << ok.to_string();
          continue;
        }
        ASSERT_TRUE(ok.is_ok()) << ok.to_string();
        EXPECT_EQ(nsem == 0, splits == 1);
        Semaphores sem(nsem);
        double max_diff = 0;
        for (int launch = 0; launch < 2; ++launch) {
          SCOPED_TRACE("launch " + std::to_string(launch) + (launch == 1 ? " (PDL)" : ""));
          // NaN poison, stream-ordered before the launch
          ASSERT_EQ(cudaMemsetAsync(dy.p, 0xFF, yn * sizeof(__half), stream), cudaSuccess);
          if (launch == 1) {  // x rewritten by a kernel just before the PDL launch, which must wait for it
            ASSERT_EQ(cudaMemsetAsync(dx.p, 0xFF, xbytes, stream), cudaSuccess);
            ASSERT_EQ(test::copy_bytes(reinterpret_cast<const uint8_t*>(dx_stage.p), reinterpret_cast<uint8_t*>(dx.p), xbytes, stream),
                      cudaSuccess);
          }
          const Status st = kernels::conv2d_cutlass(g, tile, splits, dx.p, dw.p, dbias.p, dy.p, k.act, sem.p, stream, launch == 1);
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
          const std::vector<float> got = dy.read(yn);
          for (size_t j = 0; j < yn; ++j) max_diff = std::max(max_diff, std::fabs(double(got[j]) - double(ops.ref[j])));
          EXPECT_TRUE(test::near_dump(std::string(k.name) + " " + form + " launch " + std::to_string(launch), got, ops.ref, {.abs = tol, .rel = 0},
                                      {{"x (NHWC)", ops.x}, {"w (KRSC)", ops.w}, {"bias (fp16)", ops.bias}}));
        }
        if (nsem) {
          std::vector<int> left(nsem);
          ASSERT_EQ(cudaMemcpy(left.data(), sem.p, nsem * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
          EXPECT_EQ(std::count(left.begin(), left.end(), 0), std::ptrdiff_t(nsem)) << "semaphores not zero after the launch";
        }
        std::printf("[ cutlass  ] %-46s %-20s max|diff| %.3g (max|ref| %.3g, %zu values, 2 launches)\n", k.name, form.c_str(), max_diff,
                    ops.max_ref, yn);
        ++runs;
      }
  }
  EXPECT_GT(runs, 0u);
}

// What the form does not cover, or bad arguments, is refused with a message before any device work (no GPU needed).
// Without the CUTLASS headers every call says "not built".
TEST(ConvCutlass, RefusesWhatItDoesNotCover) {
  const Conv2dGeometry g = test::nhwc_geometry({"ok", 1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kNone});
  alignas(16) static unsigned char buf[64];
  void* p = buf;
  if (!kernels::conv2d_cutlass_built()) {
    const Status s = kernels::conv2d_cutlass(g, CutlassConvTile::k64x64x32s4, 1, p, p, p, p, Activation::kNone, nullptr, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported);
    EXPECT_NE(s.message().find("not built"), std::string::npos) << s.to_string();
    EXPECT_EQ(kernels::conv2d_cutlass_check(g, CutlassConvTile::k64x64x32s4, Activation::kNone, 1).code(), StatusCode::kUnsupported);
    return;
  }
  auto expect_invalid = [&](const Conv2dGeometry& gg, CutlassConvTile t, int splits, Activation act, const void* x, int* sem,
                            const char* needle) {
    const Status s = kernels::conv2d_cutlass(gg, t, splits, x, p, p, p, act, sem, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
  };
  const CutlassConvTile t32 = CutlassConvTile::k64x64x32s4, t64 = CutlassConvTile::k64x64x64s3;
  Conv2dGeometry c3 = g;
  c3.c_in = 3;
  expect_invalid(c3, t32, 1, Activation::kNone, p, nullptr, "c_in 3 is not a multiple of 8");
  Conv2dGeometry grp = g;
  grp.group = 2;
  expect_invalid(grp, t32, 1, Activation::kNone, p, nullptr, "grouped");
  Conv2dGeometry odd = g;
  odd.c_out = 60;
  expect_invalid(odd, t32, 1, Activation::kNone, p, nullptr, "c_out 60 is not a multiple of 8");
  Conv2dGeometry bad = g;
  bad.out_h = 9;
  expect_invalid(bad, t32, 1, Activation::kNone, p, nullptr, "conv2d_cutlass: ");
  expect_invalid(g, t32, 1, Activation::kSigmoid, p, nullptr, "not covered (ReLU or none)");
  expect_invalid(g, t32, 0, Activation::kNone, p, nullptr, "splits 0 outside");
  expect_invalid(g, t32, kernels::kCutlassConvMaxSplits + 1, Activation::kNone, p, nullptr, "outside 1..");
  expect_invalid(g, t32, 4, Activation::kNone, p, nullptr, "needs c_in >= 128");  // 64 channels: 2 slices of 32 at most
  expect_invalid(g, t64, 2, Activation::kNone, p, nullptr, "needs c_in >= 128");
  expect_invalid(g, t32, 1, Activation::kNone, nullptr, nullptr, "null x, w, bias or y");
  expect_invalid(g, t32, 1, Activation::kNone, buf + 2, nullptr, "not 16-byte aligned");
  expect_invalid(g, t32, 2, Activation::kNone, p, nullptr, "zeroed int semaphores");
  // huge dimensions: a 40000 x 40000 map (1.6e9 pixels), a 2^20-channel 1x1 conv (2^32 weights)
  const Conv2dGeometry big = test::nhwc_geometry({"big", 1, 32, 40000, 40000, 32, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kNone});
  expect_invalid(big, t32, 1, Activation::kNone, p, nullptr, "2^30");
  const Conv2dGeometry deep = test::nhwc_geometry({"deep", 1, int64_t{1} << 20, 1, 1, 4096, 1, 1, 1, 1, 0, 0, 0, 0, false, Activation::kNone});
  expect_invalid(deep, t32, 1, Activation::kNone, p, nullptr, "2^30");
  // What the check accepts, and the semaphores it asks for: ResNet-50's layer3 3x3 (196 pixels x 256 channels: 4 x 4 tiles).
  const Conv2dGeometry l3 = test::nhwc_geometry({"l3", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu});
  size_t nsem = 99;
  EXPECT_TRUE(kernels::conv2d_cutlass_check(l3, t32, Activation::kRelu, 1, &nsem).is_ok());
  EXPECT_EQ(nsem, 0u);
  EXPECT_TRUE(kernels::conv2d_cutlass_check(l3, t32, Activation::kRelu, 8, &nsem).is_ok());
  EXPECT_EQ(nsem, 16u);
  EXPECT_TRUE(kernels::conv2d_cutlass_check(l3, t64, Activation::kRelu, 4, &nsem).is_ok());
  EXPECT_EQ(nsem, 16u);
  // The fixed-channels tile: c_in 8 at split 1 only (ResNet-50's stem on an RGB input padded to 8).
  const CutlassConvTile t8 = CutlassConvTile::k64x64x32s4c8;
  const Conv2dGeometry stem = test::nhwc_geometry({"stem", 1, 8, 224, 224, 64, 7, 7, 2, 1, 3, 3, 3, 3, false, Activation::kRelu});
  EXPECT_TRUE(kernels::conv2d_cutlass_check(stem, t8, Activation::kRelu, 1, &nsem).is_ok());
  EXPECT_EQ(nsem, 0u);
  EXPECT_TRUE(kernels::conv2d_cutlass_check(stem, t32, Activation::kRelu, 1).is_ok()) << "the general tile also covers c_in 8";
  expect_invalid(stem, t8, 2, Activation::kRelu, p, nullptr, "c_in 8 at split 1 only");
  expect_invalid(l3, t8, 1, Activation::kRelu, p, nullptr, "c_in 8 at split 1 only");
}

// The epilogue the kernels are built with, evaluated on the host (no GPU needed): with split-K, every slice but the last
// stores acc + source unclamped (a negative running sum must survive to the next slice), the last one applies the ReLU;
// the bias (slice 0's source) is added once. A NaN anywhere is a failure: CUTLASS's LinearCombinationRelu, tried first,
// stores NaN from every non-last slice (its "off" threshold is NaN and ReLu is a NaN-propagating max).
TEST(ConvCutlass, EpilogueSkipsTheActivationUntilTheLastSlice) {
  if (!kernels::conv2d_cutlass_built()) {
    EXPECT_EQ(kernels::conv2d_cutlass_epilogue_on_host(Activation::kRelu, 1.f, 0.f, 0, 1).status().code(), StatusCode::kUnsupported);
    return;
  }
  auto run = [](Activation act, float acc, float src, int k, int count) {
    auto r = kernels::conv2d_cutlass_epilogue_on_host(act, acc, src, k, count);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : std::nanf("");
  };
  EXPECT_EQ(run(Activation::kRelu, -3.f, 0.5f, 0, 2), -2.5f);  // slice 0 of 2: acc + bias, not clamped
  EXPECT_EQ(run(Activation::kRelu, 1.f, -2.5f, 1, 2), 0.f);    // last slice: relu(-1.5)
  EXPECT_EQ(run(Activation::kRelu, 4.f, -2.5f, 1, 2), 1.5f);
  EXPECT_EQ(run(Activation::kRelu, -3.f, 0.5f, 0, 1), 0.f);     // no split: relu(acc + bias)
  EXPECT_EQ(run(Activation::kRelu, -1.f, -1.f, 3, 8), -2.f);    // a middle slice: running sum only
  EXPECT_EQ(run(Activation::kNone, -3.f, 0.5f, 1, 2), -2.5f);   // linear: acc + source on every slice
  EXPECT_EQ(run(Activation::kNone, -3.f, 0.5f, 0, 1), -2.5f);
  EXPECT_EQ(kernels::conv2d_cutlass_epilogue_on_host(Activation::kSigmoid, 1.f, 0.f, 0, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_cutlass_epilogue_on_host(Activation::kRelu, 1.f, 0.f, 2, 2).status().code(), StatusCode::kInvalidArgument);
}

// The engine with the tactic on (CudaBuildOptions::cutlass_convs), forced through its timing cache onto a ResNet-50 layer3
// bottleneck, against the CPU executor (nhwc_test_support.h): c1 (1x1 1024->256 + ReLU) and c2 (3x3 + ReLU) take it; c3
// carries the residual Add, which the CUTLASS form does not cover, so its forced entry is re-timed.
TEST(ConvCutlass, EngineWithTheTacticMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_CUTLASS_CONV();
  if (!compute_capability_90()) GTEST_SKIP() << "the CUTLASS conv kernels are sm_90a only";
  test::expect_forced_conv_tactic_matches_cpu("cutlass_convs", [](CudaBuildOptions& o) { o.cutlass_convs = true; },
                                              "cutlass_conv_64x64x32_s4_split2", "cutlass implicit GEMM", 2);
}

// Benchmark (not a test): CUDA-graph replay of 50 launches, median of 20 graphs, per tile and split, ResNet-50's 3×3 convs
// and its stem on an input padded to 8 channels.
TEST(ConvCutlass, DISABLED_TimesResNet50ThreeByThree) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_CUTLASS_CONV();
  if (!compute_capability_90()) GTEST_SKIP() << "the CUTLASS conv kernels are sm_90a only";
  std::vector<NhwcCase> cases = test::resnet50_3x3_timing_cases();
  cases.push_back({"stem 7x7 s2 8->64 (hwc8)", 1, 8, 224, 224, 64, 7, 7, 2, 1, 3, 3, 3, 3, false, Activation::kRelu});
  cudaStream_t st = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  for (const NhwcCase& k : cases) {
    const Conv2dGeometry g = test::nhwc_geometry(k);
    const size_t xn = size_t(g.in_h * g.in_w * g.c_in), wn = size_t(g.c_out * g.kernel_h * g.kernel_w * g.c_in),
                 yn = size_t(g.out_h * g.out_w * g.c_out);
    DevHalf dx(std::vector<float>(xn, 0.1f)), dw(std::vector<float>(wn, 0.01f)), dbias(std::vector<float>(size_t(g.c_out), 0.f)),
        dy(std::vector<float>(yn, 0.f));
    for (CutlassConvTile tile : kernels::kCutlassConvTiles)
      for (int splits : {1, 2, 4, 8, 16}) {
        size_t nsem = 0;
        if (!kernels::conv2d_cutlass_check(g, tile, k.act, splits, &nsem).is_ok()) continue;
        Semaphores sem(nsem);
        float us[2] = {0, 0};
        for (int pdl = 0; pdl < 2; ++pdl)
          us[pdl] = test::median_replay_us(st, [&](cudaStream_t s) {
            return kernels::conv2d_cutlass(g, tile, splits, dx.p, dw.p, dbias.p, dy.p, k.act, sem.p, s, pdl == 1);
          });
        std::printf("[ cutlass t] %-24s %-12s splits %2d  %7.2f us per conv, %7.2f with PDL (median of 20 graphs of 50)\n", k.name,
                    kernels::cutlass_conv_tile_name(tile), splits, us[0], us[1]);
      }
  }
  cudaStreamDestroy(st);
}

}  // namespace
}  // namespace ws
