#pragma once
/// \file gemm_s8_suite.h
/// The INT8 GEMM validation and benchmark driver behind `warpstream gemm` (host-only header).
/// check: stage 00 probe, stage 01 naive suite (timed squares), stage 02 small suite with exhaustive INT64
///        comparison of every backend (tiled x6, tensor-core int32 and fp16/bf16 epilogue, cuBLAS, cuBLASLt),
///        sentinels after every output. bench: the large suite, every backend compared exhaustively on the GPU
///        with cublasGemmEx and at 64 positions with the CPU INT64 reference, then `campaigns` complete
///        campaigns with the backend order rotated between campaigns.

#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws::kernels {

struct GemmRunOptions {
  std::string variant;       ///< backend filter (substring of an operation name), empty = all
  double large_scale = 1.0;  ///< bench: scales every large-suite dimension (quick runs)
  int campaigns = 3;
  int warmup = 5;
  int iters = 20;
  int cpu_positions = 64;
  bool flush_l2 = true;      ///< flush the L2 before every timed run (bench/event_timer.h)
};

struct GemmRow {
  std::string suite;    ///< "naive", "small", "large"
  int campaign = 0;     ///< 1-based in bench, 0 in check
  int order = 0;        ///< position of the backend in its campaign's order
  std::string shape;    ///< "MxNxK"
  std::string backend;
  double ms_median = 0, ms_min = 0, ms_max = 0, tops = 0;
  double speedup_k32 = 0;  ///< tiled: over the K=32 variant at the same stride, same campaign (0 = n/a)
  double pct_cublas = 0, pct_cublaslt = 0;
  std::string verdict;  ///< "ok", "MISMATCH ...", "n/a: ..."
};

struct GemmReport {
  std::vector<GemmRow> rows;
  std::vector<std::string> notes;  ///< environment, packing times, cuBLASLt choices, peaks
  int failures = 0;
};

/// Runs the check suites; mismatches are counted in report->failures. Status errors are CUDA failures.
Status run_gemm_check(const GemmRunOptions& options, GemmReport* report);
/// Runs the large-suite validation and the campaigns.
Status run_gemm_bench(const GemmRunOptions& options, GemmReport* report);

}  // namespace ws::kernels
