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
#include "support/cuda_check.h"  // cuda_device_present, WS_SKIP_WITHOUT_GPU
#include "support/seed.h"  // base_seed(), seed_for(label), test_seed(what): $WS_SEED replays

/// Skip without a device; else run ws::cuda::init_device(0) (map-host + spin) and require success.
#define WS_REQUIRE_LANES_GPU()                                              \
  do {                                                                      \
    WS_SKIP_WITHOUT_GPU();                                                  \
    ::ws::Status ws_init_ = ::ws::cuda::init_device(0);                     \
    ASSERT_TRUE(ws_init_.is_ok()) << ws_init_.to_string();                  \
  } while (0)
