#pragma once
/// \file nvtx.h
/// NVTX ranges for Nsight Systems timelines (NVTX3, header-only, from the CUDA toolkit; the
/// warpstream_cuda target defines WS_HAVE_NVTX). Without the header every range is a no-op costing
/// nothing. A push/pop pair costs ~tens of ns with no tool attached and allocates nothing.
/// Names used by the runtime: "preprocess", "network", "topk" (lanes, direct enqueue: in graph mode
/// the three stages are one graph launch, so only "submit"/"wait" from the caller exist).
///
///   { ws::cuda::NvtxRange r("network"); context->enqueue(stream); }

#if defined(WS_HAVE_NVTX) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define WS_CUDA_NVTX 1
#endif

namespace ws::cuda {

/// Scoped NVTX push/pop range (host-side: marks the CPU time of the enqueue calls in its scope).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept {
#ifdef WS_CUDA_NVTX
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#ifdef WS_CUDA_NVTX
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

/// True when the ranges are real (built against NVTX3).
constexpr bool nvtx_enabled() {
#ifdef WS_CUDA_NVTX
  return true;
#else
  return false;
#endif
}

}  // namespace ws::cuda
