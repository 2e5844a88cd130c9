#pragma once
/// \file nvtx.h
/// NVTX ranges for the bench harness: the runtime's scoped range (src/cuda/nvtx.h) under the bench's
/// namespace. Names used by `warpstream bench`: "submit", "wait"; the lanes runtime itself adds
/// "preprocess", "network", "topk" inside submit in direct-enqueue mode.
///
///   { ws::bench::NvtxRange r("submit"); pipeline.submit(lane, w, h); }

#include "cuda/nvtx.h"

namespace ws::bench {
using cuda::NvtxRange;
using cuda::nvtx_enabled;
}  // namespace ws::bench
