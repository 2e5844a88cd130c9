// bench/stats: percentiles by linear interpolation between closest ranks (numpy.percentile's default),
// population stdev (numpy.std's default). Expected values are computed by hand below each case; they
// agree with numpy 1.24 (np.percentile(x, q), np.std(x)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "bench/stats.h"

namespace {

using ws::bench::compute_stats;
using ws::bench::percentile_sorted;
using ws::bench::SampleRecorder;

TEST(BenchStats, TenSamplesUnsorted) {
  // Sorted: 1..10, n = 10, h = 9·q/100.
  const std::vector<double> x = {7, 1, 3, 9, 5, 2, 8, 4, 6, 10};
  auto s = compute_stats(x, 3);
  EXPECT_EQ(s.count, 10u);
  EXPECT_EQ(s.warmup_count, 3u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_NEAR(s.p50, 5.5, 1e-12);     // h = 4.5: x[4] = 5, x[5] = 6 → 5.5
  EXPECT_NEAR(s.p90, 9.1, 1e-12);     // h = 8.1: 9 + 0.1
  EXPECT_NEAR(s.p95, 9.55, 1e-12);    // h = 8.55: 9 + 0.55
  EXPECT_NEAR(s.p99, 9.91, 1e-12);    // h = 8.91
  EXPECT_NEAR(s.p99_9, 9.991, 1e-12); // h = 8.991
  // Σ(x - 5.5)² = 82.5; population variance 8.25.
  EXPECT_NEAR(s.stdev, std::sqrt(8.25), 1e-12);
  EXPECT_NEAR(s.cov, std::sqrt(8.25) / 5.5, 1e-12);
}

TEST(BenchStats, UnevenGaps) {
  // {1, 2, 4, 8}: n = 4, h = 3·q/100. mean 3.75, Σ(x - mean)² = 28.75 → variance 7.1875.
  const std::vector<double> x = {8, 4, 2, 1};
  auto s = compute_stats(x);
  EXPECT_NEAR(s.p50, 3.0, 1e-12);     // h = 1.5: 2 + 0.5·2
  EXPECT_NEAR(s.p90, 6.8, 1e-12);     // h = 2.7: 4 + 0.7·4
  EXPECT_NEAR(s.p95, 7.4, 1e-12);     // h = 2.85: 4 + 0.85·4
  EXPECT_NEAR(s.p99, 7.88, 1e-12);    // h = 2.97: 4 + 0.97·4
  EXPECT_NEAR(s.p99_9, 7.988, 1e-12); // h = 2.997
  EXPECT_NEAR(s.stdev, std::sqrt(7.1875), 1e-12);
}

TEST(BenchStats, ThousandSamples) {
  // 1..1000: h = 999·q/100. p50 = 500.5, p90: h = 899.1 → 900.1, p99: h = 989.01 → 990.01,
  // p99.9: h = 998.001 → 999.001 (not the nearest-rank 999).
  std::vector<double> x(1000);
  std::iota(x.begin(), x.end(), 1.0);
  std::mt19937 rng(7);
  std::shuffle(x.begin(), x.end(), rng);
  auto s = compute_stats(x);
  EXPECT_NEAR(s.p50, 500.5, 1e-9);
  EXPECT_NEAR(s.p90, 900.1, 1e-9);
  EXPECT_NEAR(s.p95, 950.05, 1e-9);
  EXPECT_NEAR(s.p99, 990.01, 1e-9);
  EXPECT_NEAR(s.p99_9, 999.001, 1e-9);
}

TEST(BenchStats, EdgeCases) {
  auto empty = compute_stats({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.p99, 0);
  const std::vector<double> one = {5};
  auto s = compute_stats(one);
  EXPECT_EQ(s.p50, 5);
  EXPECT_EQ(s.p99_9, 5);
  EXPECT_EQ(s.stdev, 0);
  const std::vector<double> sorted = {1, 2};
  EXPECT_EQ(percentile_sorted(sorted, 0), 1);
  EXPECT_EQ(percentile_sorted(sorted, 100), 2);
  EXPECT_NEAR(percentile_sorted(sorted, 25), 1.25, 1e-15);
}

TEST(BenchStats, RecorderNeverGrows) {
  SampleRecorder r(3);
  const double* before = r.samples().data();
  for (int i = 0; i < 5; ++i) r.record(i);
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(r.dropped(), 2u);
  EXPECT_EQ(r.samples().data(), before);
  EXPECT_EQ(r.samples()[2], 2);
  r.clear();
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.capacity(), 3u);
}

}  // namespace
