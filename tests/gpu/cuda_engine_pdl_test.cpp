// Programmatic dependent launch (CudaBuildOptions::programmatic_dependent_launch, kernels/pdl.cuh): our conv
// kernels launched with the PDL attribute (programmatic edges in the captured graph) against the CPU executor
// (the oracle), and against the same build without PDL. EfficientNet-Lite0 is the graph where it matters
// (72 kernels, ~70 of them ours: depthwise, pointwise, split-K reduction, direct stem). Both builds share one
// timing cache (always a file: WS_GPU_TEST_TIMING_CACHE_DIR's, else one of this process), so they run the same
// tactics and must agree bit for bit: PDL changes only when a kernel is scheduled, never what it computes — a
// missing griddepcontrol.wait shows as a difference (a kernel reading its input before the producer finished).
// Random input; its seed is printed (WS_SEED reproduces).
//   build/tests/ws_gpu_tests --gtest_filter='CudaEnginePdl.*'
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "cuda_engine_test_support.h"
#include "lanes_gpu_support.h"
#include "support/small_tests.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

TEST(CudaEnginePdl, EfficientNetLite0WithAndWithoutPdlMatchCpuAndEachOther) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    if (p == Precision::kFloat16 && test::gpu_test_fp32_only()) continue;  // racecheck's form (small_tests.h)
    SCOPED_TRACE(precision_name(p));
    const double rel = p == Precision::kFloat32 ? 1e-3 : 2e-2;
    // The second build must read the first one's tactics. WS_GPU_TEST_TIMING_CACHE_DIR names the file under the
    // sanitizers' racecheck shards; otherwise a file of this process. Without a shared file each build times its
    // own tactics, and under memcheck / synccheck / initcheck (timings distorted tenfold) the two picked different
    // fp16 kernels: max|diff| 0.0386 vs 0.0308 in device run 42, a tactic difference, not a PDL race.
    std::string cache = test::gpu_test_timing_cache(std::string("effnet-pdl-") + precision_name(p));
    const bool own_cache = cache.empty();
    if (own_cache) {
      cache = (std::filesystem::temp_directory_path() /
               ("ws_effnet_pdl_" + std::to_string(::getpid()) + "_" + precision_name(p) + ".json"))
                  .string();
      std::filesystem::remove(cache);
    }
    double max_abs[2] = {0, 0};
    for (int pdl = 1; pdl >= 0; --pdl) {
      auto g = ir::import_onnx(path);
      ASSERT_TRUE(g.is_ok()) << g.status().to_string();
      CudaBuildOptions o;
      o.layout = Layout::kNchw;  // our own kernels (auto picks NCHW for this model too)
      o.programmatic_dependent_launch = pdl == 1;
      if (test::small_gpu_tests()) o.tactic_timing_iterations = 1;
      o.timing_cache_path = cache;  // the second build reads the first one's tactics
      std::string err;
      auto cmp = test::run_both(*g, p, 1e30, 0, test::seed_for("effnet-pdl"), &err, o);
      ASSERT_TRUE(err.empty()) << err;
      std::printf("[ pdl      ] efficientnet_lite0 %s pdl %s max|diff| %.6g (max|ref| %.3g)\n", precision_name(p), pdl ? "on " : "off",
                  cmp.max_abs, cmp.max_ref);
      EXPECT_LE(cmp.max_abs, rel * cmp.max_ref);
      EXPECT_EQ(cmp.bad, 0u) << "NaN where the CPU has a number: " << cmp.first_bad;
      EXPECT_GT(cmp.max_ref, 0.0);
      max_abs[pdl] = cmp.max_abs;
    }
    if (own_cache) std::filesystem::remove(cache);
    // Same tactics, same input, same CPU reference: identical outputs give identical max|diff|.
    EXPECT_EQ(max_abs[1], max_abs[0]) << "PDL changed the result (a kernel read before its producer finished?)";
  }
}

}  // namespace
}  // namespace ws
