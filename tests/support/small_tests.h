#pragma once
// WS_GPU_TEST_SMALL=1: the GPU tests that loop or build several model geometries run their small form: fewer
// iterations / cases / layers, the SAME kernels and code paths (every branch a full run takes, a small run takes).
// scripts/lib/sanitize.sh sets it: compute-sanitizer slows every launch 10-100x, and the whole suite has to fit
// one device call. What each test shrinks is written at its use (grep small_gpu_tests). The sanitizer runs are
// parallel processes on one GPU, so a device-wide reading (cudaMemGetInfo) is printed, not asserted, in the small
// form; per-process counters (cuda_allocation_count, host allocations) stay asserted. Header-only, plain C++.
#include <cstdlib>

namespace ws::test {

inline bool small_gpu_tests() {
  const char* e = std::getenv("WS_GPU_TEST_SMALL");
  return e != nullptr && *e != '\0' && *e != '0';
}

}  // namespace ws::test
