#pragma once
// Shared helpers of the lane-kernel GPU tests (device, preprocess, top-k): skip without a device,
// one-time device set-up, per-run seeds (fresh each run, printed; WS_TEST_SEED=<n> replays a run).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <random>
#include <string>

#include "cuda/device.h"

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

/// Base seed of this process: $WS_TEST_SEED if set, else fresh from std::random_device; printed once.
inline uint64_t base_seed() {
  static const uint64_t seed = [] {
    uint64_t s;
    if (const char* env = std::getenv("WS_TEST_SEED")) {
      s = std::strtoull(env, nullptr, 0);
    } else {
      std::random_device rd;
      s = (uint64_t(rd()) << 32) ^ rd();
    }
    std::printf("[ seed     ] WS_TEST_SEED=%llu (set it to replay this run)\n", (unsigned long long)s);
    return s;
  }();
  return seed;
}

/// Seed for one operand: base seed mixed with a label (stable within a run).
inline uint64_t seed_for(const std::string& label) {
  uint64_t h = base_seed() ^ 0x9E3779B97F4A7C15ull;
  for (char c : label) h = (h ^ uint8_t(c)) * 0x100000001B3ull;
  return h;
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
