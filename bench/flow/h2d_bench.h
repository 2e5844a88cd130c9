#pragma once
/// \file h2d_bench.h
/// Host <-> device bandwidth sweep (VRAMFlow stage 03; `warpstream h2d`). Host-only header.
/// Every figure is the median (and min/max) of `iters` CUDA-event timings after `warmup` untimed runs;
/// GB/s = bytes / time with GB = 1e9 bytes.

#include <cstdint>
#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws::flow {

struct H2dOptions {
  std::vector<uint64_t> sizes;          ///< transfer sizes in bytes (default 64 MiB .. 1 GiB, powers of two)
  std::vector<int> streams = {1, 2, 4}; ///< stream counts for the chunked pinned sweep
  std::vector<uint64_t> chunks;         ///< chunk sizes for the chunked sweep (default 1, 4, 16, 64 MiB)
  bool pageable = true;                 ///< also time pageable (malloc'd) host memory
  bool mapped = true;                   ///< also time a kernel reading mapped pinned host memory
  int iters = 10;
  int warmup = 2;
};

struct H2dRow {
  std::string memory;     ///< "pinned", "pageable", "mapped"
  std::string direction;  ///< "h2d", "d2h", "kernel_read" (device kernel reading mapped host memory)
  int streams = 1;
  uint64_t chunk_bytes = 0;  ///< 0: one cudaMemcpyAsync for the whole buffer
  uint64_t bytes = 0;
  double ms_median = 0, ms_min = 0, ms_max = 0;
  double gbps_median = 0;  ///< bytes / ms_median
  double gbps_best = 0;    ///< bytes / ms_min
};

struct H2dReport {
  std::vector<H2dRow> rows;
  std::string device;          ///< name, PCIe generation/width where the runtime reports it
  double pinned_h2d_ceiling = 0;  ///< best median GB/s over pinned H2D rows
  double pinned_d2h_ceiling = 0;
};

/// Runs the sweep. Allocates the largest size once per memory kind (pinned+mapped, pageable, device).
Status run_h2d_sweep(const H2dOptions& options, H2dReport* report);

}  // namespace ws::flow
