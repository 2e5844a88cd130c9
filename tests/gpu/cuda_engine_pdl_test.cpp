// Programmatic dependent launch (CudaBuildOptions::programmatic_dependent_launch, kernels/pdl.cuh): our conv
// kernels launched with the PDL attribute (programmatic edges in the captured graph) against the CPU executor
// (the oracle), and against the same build without PDL. EfficientNet-Lite0 is the graph where it matters
// (72 kernels, ~70 of them ours: depthwise, pointwise, split-K reduction, direct stem). Both builds share one
// timing cache (always a file: WS_GPU_TEST_TIMING_CACHE_DIR's, else one of this process), so they run the same
// tactics and must agree bit for bit: PDL changes only when a kernel is scheduled, never what it computes — a
// missing griddepcontrol.wait shows as a difference (a kernel reading its input before the producer finished).
// CudaEngineSplitK: split-K's in-GEMM reduction against its two-kernel form, engine level (see the test).
// CudaEngineDwPw: depthwise → pointwise fusion on EfficientNet-Lite0 against the CPU executor (see the test).
// Random input; its seed is printed (WS_SEED reproduces).
//   build/tests/ws_gpu_tests --gtest_filter='CudaEnginePdl.*:CudaEngineSplitK.*:CudaEngineDwPw.*'
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cuda_engine_test_support.h"
#include "lanes_gpu_support.h"
#include "support/small_tests.h"
#include "kernels/conv/conv.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

// The current device's compute capability major.
int cc_major() {
  int dev = 0, major = 0;
  EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  return major;
}

// A timing-cache file for test `name`: WS_GPU_TEST_TIMING_CACHE_DIR's when set, else a fresh one of this process.
std::string effnet_cache(const std::string& name) {
  std::string cache = test::gpu_test_timing_cache(name);
  if (cache.empty()) {
    cache = (std::filesystem::temp_directory_path() / ("ws_" + name + "_" + std::to_string(::getpid()) + ".json")).string();
    std::filesystem::remove(cache);
  }
  return cache;
}

// Build options of the EfficientNet-Lite0 engine tests: NCHW (our own kernels), one timing iteration in the small GPU
// test mode, the timing cache at `cache` (later builds read the earlier ones' tactics).
CudaBuildOptions effnet_options(const std::string& cache, Precision precision = Precision::kFloat32) {
  CudaBuildOptions o;
  o.layout = Layout::kNchw;
  o.precision = precision;
  if (test::small_gpu_tests()) o.tactic_timing_iterations = 1;
  o.timing_cache_path = cache;
  return o;
}

// How many of the engine's tactic strings start with `prefix` (its fused steps of one kind).
size_t steps_starting(const CudaEngine& e, const char* prefix) {
  size_t n = 0;
  for (const TacticRecord& t : e.tactics()) n += t.choice.rfind(prefix, 0) == 0;
  return n;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
      CudaBuildOptions o = effnet_options(cache);  // the second build reads the first one's tactics
      o.programmatic_dependent_launch = pdl == 1;
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

// Split-K's one-kernel forms against the reduce kernel, engine level: build 1 may only reduce by a second kernel
// (CudaBuildOptions::split_k_in_kernel and split_k_cluster off); its timing cache is rewritten so that every split-K
// tactic names the form under test — "..._serial" (the tile's last block reduces; tile counters in the arena) or
// "..._cluster" (the tile's thread-block cluster reduces through distributed shared memory) — and build 2 reads it.
// Every split-K conv then runs that form (its tactic string says so), and the output equals build 1's bit for bit (same
// tactics, same summation order) and the CPU's within fp16 tolerance. Two enqueues in build 2 check that nothing
// carries state between launches (a stale serial counter skips or doubles a tile's reduction).
void check_split_form_from_cache(const std::string& path, const char* tag, const char* suffix, const char* choice) {
  const bool cluster = std::string(suffix) == "_cluster";
  const std::string cache = effnet_cache(tag);
  std::filesystem::remove(cache);
  auto g = ir::import_onnx(path);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  CudaBuildOptions o = effnet_options(cache);
  o.split_k_in_kernel = false;
  o.split_k_cluster = false;
  const uint64_t seed = test::seed_for(tag);
  std::string err;
  auto two = test::run_both(*g, Precision::kFloat16, 1e30, 0, seed, &err, o);
  ASSERT_TRUE(err.empty()) << err;
  // The cache file's identity names the reduction forms allowed; build 2 allows one more, so its identity differs and
  // it would re-time everything: the identity is rewritten too.
  // Edited as JSON: only each entry's own choice ("impl"), not the runners-up it records ("alternatives").
  nlohmann::json doc = nlohmann::json::parse(read_text(cache));
  const std::regex key("ws_pointwise_[0-9x]+_splitk[0-9]+");
  size_t rewritten = 0;
  for (auto& [k, v] : doc.at("entries").items())
    if (v.contains("impl") && v["impl"].is_string() && std::regex_match(v["impl"].get<std::string>(), key)) {
      v["impl"] = v["impl"].get<std::string>() + suffix;
      ++rewritten;
    }
  if (rewritten == 0) GTEST_SKIP() << "build 1 chose no split-K tactic (timing under a sanitizer?): nothing to compare";
  nlohmann::json& id = doc.at("key");
  ASSERT_EQ(id.value("split_k_reduction", std::string()), "second kernel") << "no split_k_reduction in the cache identity of " << cache;
  if (cluster) id["split_k_cluster"] = std::string(kernels::kPointwiseClusterRevision);
  else id["split_k_reduction"] = "timed: second kernel or in-kernel";
  std::ofstream(cache, std::ios::trunc) << doc.dump(1) << "\n";

  o.split_k_in_kernel = !cluster;
  o.split_k_cluster = cluster;
  // The serial form runs without PDL (as it always has here); the cluster form with it, as a build that opts in runs it.
  o.programmatic_dependent_launch = cluster;
  auto one = test::run_both(*g, Precision::kFloat16, 1e30, 0, seed, &err, o);
  ASSERT_TRUE(err.empty()) << err;
  auto e = CudaEngine::build(*g, [&] { CudaBuildOptions b = o; b.precision = Precision::kFloat16; return b; }());
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  size_t in_form = 0, second = 0, timed = 0;
  for (const TacticRecord& t : (*e)->tactics()) {
    in_form += t.choice.find(choice) != std::string::npos;
    second += t.choice.find("+ reduce kernel") != std::string::npos && t.choice.find("fused") == std::string::npos;
    timed += !t.from_cache && !t.same_problem && t.op_type == "Conv";
  }
  std::printf("[ split-K  ] efficientnet_lite0 fp16: %zu cache entries rewritten to %s; build 2: %zu '%s', %zu two-kernel "
              "split-K convs, %zu convs re-timed; max|diff| vs CPU %.6g / %.6g\n", rewritten, suffix, in_form, choice, second, timed, two.max_abs, one.max_abs);
  EXPECT_GT(in_form, 0u);
  EXPECT_EQ(second, 0u) << "a split-K conv kept its second kernel although the cache named the " << suffix << " form";
  EXPECT_EQ(timed, 0u) << "build 2 did not read the rewritten cache (identity mismatch?)";
  ASSERT_EQ(two.got.size(), one.got.size());
  size_t differ = 0;
  for (size_t i = 0; i < two.got.size(); ++i) differ += std::memcmp(&two.got[i], &one.got[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "the " << suffix << " reduction changed " << differ << " of " << two.got.size() << " logits";
  EXPECT_LE(one.max_abs, 2e-2 * one.max_ref);
  EXPECT_GT(one.max_ref, 0.0);
  if (test::gpu_test_timing_cache(tag).empty()) std::filesystem::remove(cache);
}

TEST(CudaEngineSplitK, SerialFormFromTheCacheEqualsTheReduceKernelBitwise) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  check_split_form_from_cache(path, "effnet-splitk", "_serial", "in-kernel reduce");
}

TEST(CudaEngineSplitK, ClusterFormFromTheCacheEqualsTheReduceKernelBitwise) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  if (cc_major() < 9) GTEST_SKIP() << "thread-block clusters need compute capability 9.0";
  check_split_form_from_cache(path, "effnet-splitk-cluster", "_cluster", "over a cluster (DSMEM reduction)");
}

// One fusion inside the engine on EfficientNet-Lite0 fp16 (the model at `path`, options `o` with the cache at
// effnet_cache(tag)): build 1 without the MBConv fusions, build 2 with them timed; the fused steps are those whose
// tactic string starts with "ws <kind> fused" (an unfused candidate's note names "<kind> fused" too), the decisions
// the cache entries "|<suffix>". When timing fuses none, the
// cache's "unfused" decisions of that kind are rewritten to `forced` and a third build reads them, so the fused steps
// always run here. That build must match the CPU executor within the fp16 tolerance (2e-2·max|logit|), with no NaN
// and fewer kernels than build 1. With `every` (a phrase of the forced tactic's string), every "|<suffix>" decision is
// rewritten to `forced`, fused by timing or not, and every fused step's tactic string must contain `every`.
void check_forced_fusion(const std::string& path, CudaBuildOptions o, const char* tag, const char* kind, const char* suffix, const char* forced,
                         const char* every = nullptr) {
  const std::string named = std::string(kind) + " fused", prefix = "ws " + named;
  const std::string cache = effnet_cache(tag);
  std::filesystem::remove(cache);
  o.timing_cache_path = cache;
  auto g = ir::import_onnx(path);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const uint64_t seed = test::seed_for(tag);
  auto fused_steps = [&prefix](const CudaEngine& e) { return steps_starting(e, prefix.c_str()); };
  o.fuse_depthwise_pointwise = false;
  auto plain = CudaEngine::build(*g, o);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ(fused_steps(**plain), 0u);
  o.fuse_depthwise_pointwise = true;
  auto timed = CudaEngine::build(*g, o);
  ASSERT_TRUE(timed.is_ok()) << timed.status().to_string();
  const size_t chosen_by_timing = fused_steps(**timed);
  for (const TacticRecord& t : (*timed)->tactics())  // each candidate's timing: fused (chosen) or unfused (with the best fused µs)
    if (t.choice.find(named) != std::string::npos)
      std::printf("[ %-8s ]   timed: %s %.2f us: %s\n", suffix, t.node.c_str(), t.time_us, t.choice.c_str());
  // Edited as JSON: each "|<suffix>" decision's own choice ("impl"), not the runners-up it records ("alternatives").
  nlohmann::json doc = nlohmann::json::parse(read_text(cache));
  const std::string tail = std::string("|") + suffix;
  auto is_decision = [&tail](const std::string& k) { return k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0; };
  size_t unfused_n = 0;
  for (auto& [k, v] : doc.at("entries").items()) unfused_n += is_decision(k) && v.value("impl", std::string()) == "unfused";
  const size_t timed_n = unfused_n + chosen_by_timing;
  ASSERT_GT(timed_n, 0u) << "no |" << suffix << " decision in " << cache;
  if (every || chosen_by_timing == 0) {
    for (auto& [k, v] : doc.at("entries").items())
      if (is_decision(k) && (every || v.value("impl", std::string()) == "unfused")) v["impl"] = forced;
    std::ofstream(cache, std::ios::trunc) << doc.dump(1) << "\n";
  }
  std::string err;
  auto cmp = test::run_both(*g, Precision::kFloat16, 1e30, 0, seed, &err, o);
  ASSERT_TRUE(err.empty()) << err;
  auto fused = CudaEngine::build(*g, o);
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  const size_t n = fused_steps(**fused);
  std::printf("[ %-8s ] efficientnet_lite0 fp16: %zu of %zu fused by timing%s; %zu fused steps run, kernels %zu -> %zu; "
              "max|diff| vs CPU %.6g (max|ref| %.3g)\n", suffix, chosen_by_timing, timed_n,
              chosen_by_timing == 0 ? (std::string(", cache rewritten to force ") + forced).c_str() : "", n, (*plain)->kernel_count(),
              (*fused)->kernel_count(), cmp.max_abs, cmp.max_ref);
  EXPECT_GT(n, 0u);
  if (every) {
    EXPECT_EQ(n, timed_n) << "every |" << suffix << " decision was forced to " << forced;
    for (const TacticRecord& t : (*fused)->tactics())
      if (t.choice.rfind(prefix, 0) == 0) EXPECT_NE(t.choice.find(every), std::string::npos) << t.node << ": " << t.choice;
  }
  EXPECT_LT((*fused)->kernel_count(), (*plain)->kernel_count());
  EXPECT_LE(cmp.max_abs, 2e-2 * cmp.max_ref);
  EXPECT_EQ(cmp.bad, 0u) << "NaN where the CPU has a number: " << cmp.first_bad;
  EXPECT_GT(cmp.max_ref, 0.0);
  if (test::gpu_test_timing_cache(tag).empty()) std::filesystem::remove(cache);
}

// Depthwise → pointwise fusion (kernels::conv2d_depthwise_pointwise) inside the engine, forced to the 32x32 fused
// tactic where timing fuses no pair (one kernel per fused pair, unless a split-K reduce kernel is added back). The
// expand -> depthwise fusion is off: decided first, it would take the pairs' depthwise convs.
TEST(CudaEngineDwPw, EfficientNetLite0FusedPairsMatchCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  CudaBuildOptions o = effnet_options("", Precision::kFloat16);
  o.fuse_expand_depthwise = false;
  check_forced_fusion(path, o, "effnet-dwpw", "depthwise->pointwise", "dwpw", "ws_dwpw_32x32");
}

// The fused MBConv block (kernels::conv2d_mbconv, one cluster kernel for expand -> depthwise -> project) inside the
// engine, forced to cluster 16 where timing fuses none. The expand -> depthwise fusion is off: decided first, it would
// take the blocks' depthwise convs (its own test below).
TEST(CudaEngineMbConv, EfficientNetLite0FusedBlocksMatchCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  if (cc_major() < 9) GTEST_SKIP() << "thread-block clusters need compute capability 9.0";
  CudaBuildOptions o = effnet_options("", Precision::kFloat16);
  o.fuse_expand_depthwise = false;
  check_forced_fusion(path, o, "effnet-mbconv", "MBConv", "mbconv", "ws_mbconv_c16");
}

// The fused expand -> depthwise pair (kernels::conv2d_expand_depthwise) inside the engine, forced to the 2-row-band
// tactic (a shape every pair of this model takes) where timing fuses none.
TEST(CudaEngineExDw, EfficientNetLite0FusedPairsMatchCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  check_forced_fusion(path, effnet_options("", Precision::kFloat16), "effnet-exdw", "expand->depthwise", "exdw", "ws_exdw_r2");
}

// The same with 4 outputs per depthwise thread (tactic suffix "_o4"), forced on every pair whatever timing chose:
// units that run past a row's end (Wo = 7, 14 are not multiples of 4) and stride-2 pairs.
TEST(CudaEngineExDw, EfficientNetLite0FusedPairsFourOutputsPerThreadMatchCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  check_forced_fusion(path, effnet_options("", Precision::kFloat16), "effnet-exdw-o4", "expand->depthwise", "exdw", "ws_exdw_r2_o4",
                      "4 outputs per depthwise thread");
}
}  // namespace
}  // namespace ws
