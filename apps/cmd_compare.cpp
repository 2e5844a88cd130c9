// `warpstream compare A.json B.json …`: ratios first / each other report (p50, p99, p99.9 of each
// report's primary metric) and loud warnings when the environments differ. Work lives in bench/compare.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/compare.h"
#include "bench/report.h"
#include "command.h"
#include "core/escape.h"

namespace {

int run_compare(const std::vector<std::string>& files, double tolerance_pct) {
  if (files.size() < 2) {
    std::fprintf(stderr, "error: usage: compare needs at least two report files (the first is ours)\n");
    return 2;
  }
  if (!std::isfinite(tolerance_pct) || tolerance_pct < 0 || tolerance_pct > 100) {
    std::fprintf(stderr, "error: usage: --clock-tolerance must be a percentage in 0..100, got %g\n", tolerance_pct);
    return 2;
  }
  std::vector<nlohmann::json> reports;
  for (const auto& f : files) {
    auto r = ws::bench::read_report_json(f);
    if (!r) {
      std::fprintf(stderr, "error: %s\n", r.status().to_string().c_str());
      return 2;
    }
    // A report without the percentiles it is compared on cannot give a ratio: refuse it, naming the file.
    const std::string metric = r->value("primary", std::string("host_latency_us"));
    const nlohmann::json* m = nullptr;
    if (r->contains("metrics") && (*r)["metrics"].is_object() && (*r)["metrics"].contains(metric)) m = &(*r)["metrics"][metric];
    auto number = [m](const char* k) { return m->contains(k) && (*m)[k].is_number(); };
    const bool ok = m && m->is_object() && number("p50") && number("p99") && number("p99_9");
    const std::string shown = ws::escape_name(metric);
    if (!ok) {
      std::fprintf(stderr, "error: %s: no numeric p50/p99/p99_9 for its primary metric '%s' (metrics.%s)\n",
                   ws::escape_name(f).c_str(), shown.c_str(), shown.c_str());
      return 2;
    }
    // A latency percentile of 0 or below (or not finite) is no measurement: every ratio with it would be
    // NaN, 0 or negative. Refused, naming the file and the field.
    for (const char* k : {"p50", "p99", "p99_9"}) {
      const double v = (*m)[k].get<double>();
      if (!(std::isfinite(v) && v > 0)) {
        std::fprintf(stderr, "error: %s: metrics.%s.%s is %g; percentiles must be > 0 to compare\n",
                     ws::escape_name(f).c_str(), shown.c_str(), k, v);
        return 2;
      }
    }
    reports.push_back(std::move(r).value());
  }
  auto result = ws::bench::compare_reports(reports, files, tolerance_pct / 100.0);
  std::printf("%s", result.table.c_str());
  std::printf("ratios: first / this (ours / peer); below 1 means the first report is faster\n");
  if (!result.warnings.empty()) {
    std::fprintf(stderr, "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
    std::fprintf(stderr, "!!! %zu warning(s): these reports were NOT taken under the same conditions\n",
                 result.warnings.size());
    for (const auto& w : result.warnings) std::fprintf(stderr, "!!! %s\n", w.c_str());
    std::fprintf(stderr, "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
  }
  return 0;
}

}  // namespace

WS_REGISTER_COMMAND(compare, "compare",
                    "Compare benchmark reports: ratios first/each (p50, p99, p99.9), warnings on differing environments",
                    ([](CLI::App& sub) -> std::function<int()> {
                      auto files = std::make_shared<std::vector<std::string>>();
                      auto tol = std::make_shared<double>(5.0);
                      sub.add_option("reports", *files, "report JSON files (warpstream-bench/1); the first is the reference")
                          ->required();
                      sub.add_option("--clock-tolerance", *tol, "clock difference that warns, percent (default 5)");
                      return [files, tol] { return run_compare(*files, *tol); };
                    }));
