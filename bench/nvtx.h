#pragma once
/// \file nvtx.h
/// NVTX ranges for Nsight timelines (NVTX3, header-only, from the CUDA toolkit). Without the header
/// (the CPU-only build) every range is a no-op. Names used by `warpstream bench`: "submit", "wait",
/// "preprocess", "network", "topk" (the last three only where the bench enqueues stages itself).
///
///   { ws::bench::NvtxRange r("submit"); pipeline.submit(lane, w, h); }

#if defined(WS_HAVE_NVTX) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define WS_BENCH_NVTX 1
#endif

namespace ws::bench {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept {
#ifdef WS_BENCH_NVTX
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#ifdef WS_BENCH_NVTX
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

/// True when the ranges are real (built against NVTX3).
constexpr bool nvtx_enabled() {
#ifdef WS_BENCH_NVTX
  return true;
#else
  return false;
#endif
}

}  // namespace ws::bench
