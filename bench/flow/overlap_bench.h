#pragma once
/// \file overlap_bench.h
/// Copy/compute overlap benchmark (VRAMFlow stage 04; `warpstream overlap`). A chain of L square INT8
/// layers (flow/int8_chain.h: tensor-core GEMM tokens x D times weight D x D, then requantize) run in five
/// modes: compute alone (weights resident), transfer alone (L pinned H2D copies), and streamed through the
/// Streamer with S = 1 (sequential), 2 (double) and 3 (triple buffering). Host-only header.
/// efficiency = max(compute alone, transfer alone) / streamed time (1.0 = perfect overlap).

#include <cstdint>
#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws::flow {

struct OverlapOptions {
  int layers = 16;
  int dim = 8192;        ///< D: each layer's weight is D x D int8 (64 MiB at 8192)
  int tokens = 0;        ///< M for the balanced point; 0 = calibrate so compute ~= transfer per layer
  double heavy_factor = 4.0;  ///< compute-heavy: tokens x factor; transfer-heavy: tokens / factor
  int iters = 10;
  int warmup = 2;
};

struct OverlapRow {
  std::string config;  ///< "balanced", "compute_heavy", "transfer_heavy"
  std::string mode;    ///< "compute", "transfer", "sequential", "double", "triple"
  int tokens = 0, dim = 0, layers = 0, slots = 0;
  uint64_t layer_bytes = 0, peak_device_bytes = 0;
  double ms_median = 0, ms_min = 0, ms_max = 0;  ///< eager enqueue (events around the pass)
  double graph_ms_median = 0;                    ///< same pass replayed as one CUDA Graph (streamed modes)
  double efficiency = 0;   ///< max(compute, transfer) / min(ms_median, graph_ms_median) for streamed modes
  double copy_gbps = 0;    ///< transfer: L x bytes / time; streamed: L x bytes / sum of copy durations (timeline)
  std::string verdict;     ///< streamed modes: "ok exact" when the final activations equal the resident run's
};

struct OverlapEvent {
  int layer = 0;
  float copy_start = 0, copy_end = 0, compute_start = 0, compute_end = 0;  ///< ms from the pass's start
};

struct OverlapTimeline {
  std::string config, mode;
  int slots = 0;
  std::vector<OverlapEvent> layers;
};

struct OverlapReport {
  std::vector<OverlapRow> rows;
  std::vector<OverlapTimeline> timelines;
  std::vector<std::string> notes;  ///< calibration steps, plans
  int balanced_tokens = 0;
  int failures = 0;  ///< streamed outputs that differ from the resident output
};

Status run_overlap(const OverlapOptions& options, OverlapReport* report);

}  // namespace ws::flow
