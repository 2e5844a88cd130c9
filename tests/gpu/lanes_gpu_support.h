#pragma once
// Shared helpers of the lane-kernel GPU tests (device, preprocess, top-k): skip without a device,
// one-time device set-up, per-run seeds from support/seed.h (fresh each run, printed; WS_SEED=<n> replays a run).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <random>
#include <string>

#include "cuda/device.h"
#include "support/seed.h"  // base_seed(), seed_for(label), test_seed(what): $WS_SEED replays

namespace ws::test {

/// True when a CUDA device can be used; otherwise `why` says what cudaGetDeviceCount reported.
inline bool cuda_device_present(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *why = std::string("no CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + ": " +
           cudaGetErrorString(e);
    return false;
  }
  if (n == 0) {
    *why = "no CUDA device: cudaGetDeviceCount reported 0";
    return false;
  }
  return true;
}

}  // namespace ws::test

/// Skip the test (with the reason) when no CUDA device is usable.
#define WS_SKIP_WITHOUT_GPU()                                          \
  do {                                                                 \
    std::string ws_why_;                                               \
    if (!::ws::test::cuda_device_present(&ws_why_)) GTEST_SKIP() << ws_why_; \
  } while (0)

/// Skip without a device; else run ws::cuda::init_device(0) (map-host + spin) and require success.
#define WS_REQUIRE_LANES_GPU()                                              \
  do {                                                                      \
    WS_SKIP_WITHOUT_GPU();                                                  \
    ::ws::Status ws_init_ = ::ws::cuda::init_device(0);                     \
    ASSERT_TRUE(ws_init_.is_ok()) << ws_init_.to_string();                  \
  } while (0)
