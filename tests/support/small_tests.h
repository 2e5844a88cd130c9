#pragma once
// WS_GPU_TEST_SMALL=1: the GPU tests that loop or build several model geometries run their small form: fewer
// iterations / cases / layers, the SAME kernels and code paths (every branch a full run takes, a small run takes).
// scripts/lib/sanitize.sh sets it: compute-sanitizer slows every launch 10-100x, and the whole suite has to fit
// one device call. What each test shrinks is written at its use (grep small_gpu_tests). The sanitizer runs are
// parallel processes on one GPU, so a device-wide reading (cudaMemGetInfo) is printed, not asserted, in the small
// form; per-process counters (cuda_allocation_count, host allocations) stay asserted. Header-only, plain C++.
#include <cstdlib>
#include <string>

namespace ws::test {

inline bool small_gpu_tests() {
  const char* e = std::getenv("WS_GPU_TEST_SMALL");
  return e != nullptr && *e != '\0' && *e != '0';
}

/// WS_GPU_TEST_TIMING_CACHE_DIR=DIR: the whole-model GPU tests (EfficientNet-Lite0) build with the timing cache
/// DIR/<name>.json (CudaBuildOptions::timing_cache_path), "" when unset. scripts/lib/sanitize.sh fills DIR with one
/// plain run of those tests before racecheck, then gives it to the racecheck shards only: each node's chosen tactic
/// comes from the cache, so racecheck runs the model's kernels once per forward instead of every candidate of
/// tactic timing (each of the three tests ran past a 540 s call under racecheck with timing, device runs 23/26).
/// The candidates themselves are racechecked by the kernel tests (ConvKernels.*) and the small-graph tests.
inline std::string gpu_test_timing_cache(const std::string& name) {
  const char* d = std::getenv("WS_GPU_TEST_TIMING_CACHE_DIR");
  if (d == nullptr || *d == '\0') return {};
  return std::string(d) + "/" + name + ".json";
}

/// WS_GPU_TEST_FP32_ONLY=1: the whole-model GPU tests that loop over {fp32, fp16} run fp32 only. racecheck's form
/// (scripts/lib/sanitize.sh sets it for the racecheck shards only): racecheck dies ("Internal Sanitizer Error: The
/// Sanitizer failed to handle a hardware exception") in the vendor tensor-core kernels that fp16 builds run (cuDNN
/// / cuBLASLt wgmma), device runs 14, 18, 23 and 31 of 2026-12-01/02; our fp16 kernels are racechecked by their own
/// unit tests. The other tools run both precisions.
inline bool gpu_test_fp32_only() {
  const char* e = std::getenv("WS_GPU_TEST_FP32_ONLY");
  return e != nullptr && *e != '\0' && *e != '0';
}

}  // namespace ws::test
