#pragma once
/// \file launch_probe.h
/// The GPU's launch path, measured on its own: a CUDA Graph of `nodes` dependent empty kernels (132 blocks x 128
/// threads each, nothing read or written), replayed `reps` times with the host waiting for each; the median GPU time of
/// a replay (CUDA events around cudaGraphLaunch) divided by `nodes`. Why it is in `warpstream bench`'s report: the
/// same frame runs in two states, ~20 µs apart on ResNet-50 fp16 (device runs 100-106, docs/lanes-plan.md), and a graph
/// of 58 empty kernels moves with it (53.3 against 63.4–64.5 µs on an H100, run 107): at least half of the frame's +20 µs
/// is in how the GPU launches kernel nodes, whatever they compute (the other half is not located). The report's
/// `launch_probe_us_per_node_start` (after the engine build, before the lanes) and `_end` (after the timed loop) show
/// the mode around a row; the probe reads the mode the GPU is in when it runs, which in run 107 followed the engine that
/// ran just before it, so it indicates the row's mode rather than proving it (run 108: the timed rows 0.92–0.94 µs, the
/// processes that timed tactics 1.10–1.11). Host-only header; microseconds. Errors: kCuda from any CUDA call (the probe
/// then reports nothing, leaves no CUDA error behind, and the bench carries on).

#include "warpstream/status.h"

namespace ws::bench {

/// Median GPU µs per node over `reps` replays (after 20 untimed) of a graph of `nodes` empty kernels, on a stream of
/// its own (created and destroyed here, as are the graph and the events). nodes 1..1024, reps 1..100000
/// (kInvalidArgument otherwise).
Result<double> launch_probe_us_per_node(int nodes = 58, int reps = 200);

}  // namespace ws::bench
