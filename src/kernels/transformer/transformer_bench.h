#pragma once
/// \file transformer_bench.h
/// Benchmark (not a test) of the transformer kernels (transformer.h) at one LTX block shape: each kernel timed
/// alone with CUDA events (warm-up, then the median and p99 of `iters` launches), with the bytes it must move
/// (memory-bound kernels: achieved GB/s) or the FLOPs it must do (attention: 4·B·H·Sq·Skv·Dh, achieved
/// TFLOP/s). Inputs are pseudo-random (never zeros). Allocates its buffers once at the start (not a
/// steady-state path). Host-only header; run through `warpstream transformer-kernels` (apps/cmd_transformer_kernels.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws::kernels {

struct TransformerBenchShape {
  int64_t batch = 1, seq = 6144, text = 128;  ///< video tokens S, text tokens T
  int64_t dim = 2048, heads = 32, ff = 8192;  ///< inner dim D = heads · head_dim; FF inner dim
  int iters = 20;
  bool simt_self_attention = true;  ///< the SIMT kernel on S×S (slow: ~0.3 TFLOP per 2B block)
};

struct KernelTiming {
  std::string name;
  double median_us = 0, p99_us = 0;
  double bytes = 0;  ///< minimum device-memory traffic (0 = not memory-bound)
  double flops = 0;  ///< arithmetic (0 = not counted)
};

/// Times every kernel at `shape` on the current device. Errors: a failed allocation or launch (kCuda), a shape
/// a kernel refuses (its Status).
Result<std::vector<KernelTiming>> bench_transformer_kernels(const TransformerBenchShape& shape);

}  // namespace ws::kernels
