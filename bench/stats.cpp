// Latency statistics: numpy-compatible linear-interpolation percentiles (see stats.h).
#include "bench/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace ws::bench {

double percentile_sorted(std::span<const double> sorted, double q) {
  assert(!sorted.empty() && q >= 0 && q <= 100);
  const size_t n = sorted.size();
  if (n == 1) return sorted[0];
  const double h = static_cast<double>(n - 1) * q / 100.0;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= n) return sorted[n - 1];
  const double frac = h - static_cast<double>(lo);
  // numpy's _lerp: a + (b - a) * t, with the symmetric form for t >= 0.5 (exact at t = 1).
  const double a = sorted[lo], b = sorted[lo + 1];
  const double diff = b - a;
  return frac >= 0.5 ? b - diff * (1.0 - frac) : a + diff * frac;
}

Stats compute_stats(std::span<const double> samples, size_t warmup_count) {
  Stats s;
  s.warmup_count = warmup_count;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stdev = std::sqrt(ss / static_cast<double>(v.size()));
  s.min = v.front();
  s.max = v.back();
  s.p50 = percentile_sorted(v, 50);
  s.p90 = percentile_sorted(v, 90);
  s.p95 = percentile_sorted(v, 95);
  s.p99 = percentile_sorted(v, 99);
  s.p99_9 = percentile_sorted(v, 99.9);
  s.cov = s.mean != 0 ? s.stdev / s.mean : 0;
  return s;
}

}  // namespace ws::bench
