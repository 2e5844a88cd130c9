#pragma once
/// \file compare.h
/// `warpstream compare A.json B.json …`: one table of ratios first / each other report for p50, p99 and
/// p99.9 of each report's primary metric, and loud warnings where the reports were not taken under the
/// same conditions. Host-only; tests/unit/bench_compare_test.cpp runs it on tests/data/bench/*.json.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ws::bench {

struct CompareRow {
  std::string label;
  std::string metric;               ///< the primary metric's name
  double p50 = 0, p99 = 0, p99_9 = 0;  ///< microseconds
  double r50 = 0, r99 = 0, r99_9 = 0;  ///< first / this (ours / peer): < 1 means the first is faster
};

struct CompareResult {
  std::vector<CompareRow> rows;       ///< rows[0] is the reference (ratios 1)
  std::vector<std::string> warnings;  ///< one line each; empty when the reports are comparable
  std::string table;                  ///< printable table (markdown pipe table; '|' in a cell written "\\|")
};

/// Compares reports (already parsed; labels default to `names`). Warnings: SM or memory clocks differing
/// by more than `clock_tolerance` (fraction, default 5%) between reports or between start and end of one
/// report; different GPU name, driver, CUDA runtime, cuDNN or cuBLAS versions; different model hashes
/// for the same model name; fields unavailable where comparison needs them; samples dropped. A ratio whose
/// denominator is not > 0 is NaN (the CLI refuses such reports before comparing: percentiles must be > 0).
CompareResult compare_reports(const std::vector<nlohmann::json>& reports, const std::vector<std::string>& names,
                              double clock_tolerance = 0.05);

}  // namespace ws::bench
