// Benchmark report JSON / CSV (schema "warpstream-bench/1", docs/benchmarking.md).
#include "bench/report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "core/escape.h"
#include "core/file_io.h"
#include "core/json_parse.h"

namespace ws::bench {

nlohmann::json stats_to_json(const Stats& s) {
  return {{"unit", "us"}, {"count", s.count}, {"warmup_count", s.warmup_count}, {"mean", s.mean},
          {"stdev", s.stdev}, {"min", s.min}, {"p50", s.p50}, {"p90", s.p90}, {"p95", s.p95},
          {"p99", s.p99}, {"p99_9", s.p99_9}, {"max", s.max}, {"cov", s.cov}};
}

Stats stats_from_json(const nlohmann::json& j) {
  Stats s;
  auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; };
  s.count = static_cast<size_t>(num("count"));
  s.warmup_count = static_cast<size_t>(num("warmup_count"));
  s.mean = num("mean");
  s.stdev = num("stdev");
  s.min = num("min");
  s.p50 = num("p50");
  s.p90 = num("p90");
  s.p95 = num("p95");
  s.p99 = num("p99");
  s.p99_9 = num("p99_9");
  s.max = num("max");
  s.cov = num("cov");
  return s;
}

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json j;
  j["schema"] = kReportSchema;
  j["label"] = r.label;
  j["tool"] = r.tool;
  j["date_utc"] = r.date_utc;
  const RunConfig& c = r.config;
  j["config"] = {{"runtime", c.runtime},
                 {"scope", c.scope},
                 {"model", c.model},
                 {"model_sha256", c.model_sha256},
                 {"precision", c.precision},
                 {"source_shape", c.source_shape},
                 {"network_input_shape", c.network_input_shape},
                 {"graph_mode", c.graph_mode},
                 {"lanes", c.lanes},
                 {"input_mode", c.input_mode},
                 {"transfers_included", c.transfers_included},
                 {"topk", c.topk},
                 {"notes", c.notes}};
  j["env"] = r.env.fields;
  auto& m = j["metrics"] = nlohmann::json::object();
  for (const Metric& metric : r.metrics) {
    auto s = stats_to_json(metric.stats);
    s["interval"] = metric.interval;
    m[metric.name] = std::move(s);
  }
  j["primary"] = r.primary;
  j["throughput_fps"] = r.throughput_fps;
  j["wall_s"] = r.wall_s;
  j["dropped_samples"] = r.dropped_samples;
  j["warnings"] = r.warnings;
  j["samples_csv"] = r.samples_csv.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.samples_csv);
  return j;
}

Status write_report_json(const Report& r, const std::string& path) {
  const std::string text = report_to_json(r).dump(1) + "\n";
  return write_file(path, text.data(), text.size(), "report JSON");
}

Status write_samples_csv(std::span<const Metric> metrics, const std::string& path) {
  std::ostringstream os;
  os << "index";
  size_t rows = 0;
  for (const Metric& m : metrics) {
    os << ',' << m.name;
    rows = std::max(rows, m.samples.size());
  }
  os << '\n';
  char buf[64];
  for (size_t i = 0; i < rows; ++i) {
    os << i;
    for (const Metric& m : metrics) {
      os << ',';
      if (i < m.samples.size()) {
        std::snprintf(buf, sizeof buf, "%.3f", m.samples[i]);
        os << buf;
      }
    }
    os << '\n';
  }
  const std::string text = os.str();
  return write_file(path, text.data(), text.size(), "samples CSV");
}

Result<nlohmann::json> read_report_json(const std::string& path) {
  auto bytes = read_regular_file(path, "report JSON", size_t{64} << 20);
  if (!bytes) return bytes.status();
  auto parsed = parse_json_bounded(std::string_view(bytes->data(), bytes->size()), "report " + ws::quoted(path));
  if (!parsed.is_ok()) return parsed.status();
  nlohmann::json& j = parsed.value();
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kReportSchema)
    return invalid_argument("report " + path + " is not a " + std::string(kReportSchema) + " report (\"schema\" field)");
  // The fields `compare` reads must have the types it reads them as: a wrong type is a bad report
  // (exit 2 naming the field), not an exception ending in "internal error" (found by bench_report_fuzz).
  auto wrong = [&](const std::string& field, const char* want) {
    return invalid_argument("report " + path + ": field \"" + field + "\" must be " + want);
  };
  for (const char* key : {"label", "primary"})
    if (j.contains(key) && !j[key].is_string()) return wrong(key, "a string");
  if (j.contains("dropped_samples") && !j["dropped_samples"].is_number_integer()) return wrong("dropped_samples", "an integer");
  if (j.contains("metrics")) {
    if (!j["metrics"].is_object()) return wrong("metrics", "an object");
    for (const auto& [name, m] : j["metrics"].items()) {
      if (!m.is_object()) return wrong("metrics." + name, "an object");
      for (const char* q : {"p50", "p99", "p99_9"})
        if (m.contains(q) && !m[q].is_number()) return wrong("metrics." + name + "." + q, "a number");
    }
  }
  return j;
}

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace ws::bench
