#pragma once
/// \file stats.h
/// Latency statistics for benchmark reports (host-only, std only).
///
/// Percentiles: linear interpolation between closest ranks, exactly numpy.percentile's default
/// (method="linear"): sort the n samples x[0..n-1]; for q in [0, 100], h = (n - 1) · q / 100,
/// p = x[floor(h)] + (h - floor(h)) · (x[floor(h) + 1] - x[floor(h)]). p0 = min, p100 = max.
/// stdev is the population standard deviation (numpy.std's default, ddof = 0); CoV = stdev / mean.
/// tests/unit/bench_stats_test.cpp checks these against hand-computed values.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ws::bench {

struct Stats {
  size_t count = 0;         ///< timed samples the statistics are computed over
  size_t warmup_count = 0;  ///< samples run before timing and discarded (reported, never included)
  double mean = 0, stdev = 0, min = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p99_9 = 0, max = 0;
  double cov = 0;           ///< stdev / mean (0 when mean is 0)
};

/// numpy.percentile(x, q) with the default linear method over already sorted samples.
/// Requires !sorted.empty() and 0 <= q <= 100.
double percentile_sorted(std::span<const double> sorted, double q);

/// Statistics of `samples` (any order; copied and sorted internally — call outside timed loops).
/// An empty span gives count 0 and zeros.
Stats compute_stats(std::span<const double> samples, size_t warmup_count = 0);

/// Preallocated sample storage: reserve at set-up, record() in the timed loop never allocates.
/// Samples past the capacity are counted in dropped() rather than stored (a report says so).
class SampleRecorder {
 public:
  explicit SampleRecorder(size_t capacity = 0) { reserve(capacity); }
  void reserve(size_t capacity) {
    data_.assign(capacity, 0.0);
    size_ = 0;
    dropped_ = 0;
  }
  void record(double value) noexcept {
    if (size_ < data_.size()) {
      data_[size_++] = value;
    } else {
      ++dropped_;
    }
  }
  void clear() noexcept { size_ = 0; dropped_ = 0; }
  std::span<const double> samples() const { return {data_.data(), size_}; }
  size_t size() const { return size_; }
  size_t capacity() const { return data_.size(); }
  size_t dropped() const { return dropped_; }

 private:
  std::vector<double> data_;
  size_t size_ = 0;
  size_t dropped_ = 0;
};

}  // namespace ws::bench
