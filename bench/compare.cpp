// `warpstream compare`: ratio table + environment mismatch warnings (see compare.h).
#include "bench/compare.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <map>
#include <set>

#include "core/escape.h"

namespace ws::bench {
namespace {

std::string str_field(const nlohmann::json& j, const char* section, const char* key) {
  if (!j.contains(section) || !j[section].is_object() || !j[section].contains(key)) return "(missing)";
  const auto& v = j[section][key];
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// A number, or NaN when absent / "unavailable: …".
double num_field(const nlohmann::json& j, const char* section, const std::string& key) {
  if (!j.contains(section) || !j[section].is_object() || !j[section].contains(key)) return std::nan("");
  const auto& v = j[section][key];
  return v.is_number() ? v.get<double>() : std::nan("");
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

bool unavailable(const std::string& s) { return s.rfind("unavailable", 0) == 0 || s == "(missing)"; }

// A markdown table cell: a '|' in an (already escaped) label or metric name would end the cell and shift every
// column after it, so it is written as "\|" (GitHub-flavoured markdown's escape).
std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

CompareResult compare_reports(const std::vector<nlohmann::json>& reports, const std::vector<std::string>& names,
                              double tol) {
  CompareResult out;
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    CompareRow row;
    // Labels, file names and metric names come from the report files: escaped (control bytes as \xNN, long
    // names truncated) once here, so the table, the warnings and every detail line are safe to print.
    row.label = r.value("label", std::string());
    if (row.label.empty()) row.label = i < names.size() ? names[i] : "report " + std::to_string(i);
    row.label = escape_name(row.label);
    const std::string metric = r.value("primary", std::string("host_latency_us"));
    row.metric = escape_name(metric);
    if (!r.contains("metrics") || !r["metrics"].contains(metric)) {
      out.warnings.push_back("WARNING: " + row.label + " has no metric '" + row.metric + "'");
    } else {
      const auto& m = r["metrics"][metric];
      row.p50 = m.value("p50", 0.0);
      row.p99 = m.value("p99", 0.0);
      row.p99_9 = m.value("p99_9", 0.0);
    }
    if (r.value("dropped_samples", 0) > 0)
      out.warnings.push_back("WARNING: " + row.label + " dropped " + std::to_string(r.value("dropped_samples", 0)) +
                             " samples (recorder capacity)");
    out.rows.push_back(row);
  }
  if (out.rows.empty()) return out;
  const CompareRow& first = out.rows[0];
  for (auto& row : out.rows) {
    row.r50 = row.p50 > 0 ? first.p50 / row.p50 : std::nan("");
    row.r99 = row.p99 > 0 ? first.p99 / row.p99 : std::nan("");
    row.r99_9 = row.p99_9 > 0 ? first.p99_9 / row.p99_9 : std::nan("");
  }

  // ---- environment checks --------------------------------------------------------------------------
  // Version strings are compared as their leading major.minor.patch: "13.1.0 (same release as cuBLASLt)"
  // (ours) and "13.1.0.3" (the PyPI wheel's build number) are the same release; anything else as written.
  auto canonical = [](const std::string& v) {
    size_t i = 0;
    int parts = 0;
    std::string out;
    while (i < v.size() && parts < 3 && std::isdigit(static_cast<unsigned char>(v[i]))) {
      size_t j = i;
      while (j < v.size() && std::isdigit(static_cast<unsigned char>(v[j]))) ++j;
      out += (parts ? "." : "") + v.substr(i, j - i);
      ++parts;
      if (j < v.size() && v[j] == '.' && j + 1 < v.size() && std::isdigit(static_cast<unsigned char>(v[j + 1]))) i = j + 1;
      else break;
    }
    return parts >= 2 ? out : v;
  };
  auto same_string = [&](const char* section, const char* key, const char* what) {
    std::set<std::string> seen;
    std::string detail;
    bool missing = false;
    const bool version = std::string(key) != "gpu_name";
    for (size_t i = 0; i < reports.size(); ++i) {
      std::string v = str_field(reports[i], section, key);
      if (unavailable(v)) missing = true;
      seen.insert(version && !unavailable(v) ? canonical(v) : v);
      detail += (detail.empty() ? "" : "; ") + out.rows[i].label + ": " + escape_name(v);
    }
    if (seen.size() > 1)
      out.warnings.push_back(std::string("WARNING: ") + what + " differ between reports (" + detail + ")");
    else if (missing)
      out.warnings.push_back(std::string("WARNING: ") + what + " unavailable in the reports (" + detail + ")");
  };
  same_string("env", "gpu_name", "GPU names");
  same_string("env", "driver_version", "driver versions");
  same_string("env", "cuda_runtime", "CUDA runtime versions");
  same_string("env", "cudnn", "cuDNN versions");
  same_string("env", "cublas", "cuBLAS versions");

  // Clocks: every reading (start and end of every report) within tol of the first report's start.
  for (const char* clock : {"sm_clock_mhz", "mem_clock_mhz"}) {
    double ref = num_field(reports[0], "env", std::string(clock) + "_start");
    std::string detail;
    bool differ = false, missing = std::isnan(ref);
    double lo = ref, hi = ref;
    for (size_t i = 0; i < reports.size(); ++i) {
      for (const char* when : {"_start", "_end"}) {
        double v = num_field(reports[i], "env", std::string(clock) + when);
        if (std::isnan(v)) {
          missing = true;
          continue;
        }
        if (!std::isnan(ref) && std::fabs(v - ref) > tol * ref) differ = true;
        lo = std::isnan(lo) ? v : std::min(lo, v);
        hi = std::isnan(hi) ? v : std::max(hi, v);
        detail += (detail.empty() ? "" : "; ") + out.rows[i].label + when + " " + fmt("%.0f", v);
      }
    }
    if (differ)
      out.warnings.push_back(std::string("WARNING: ") + clock + " differs by more than " + fmt("%.0f", tol * 100) +
                             "% (" + fmt("%.0f", lo) + ".." + fmt("%.0f", hi) + " MHz: " + detail + ")");
    else if (missing)
      out.warnings.push_back(std::string("WARNING: ") + clock + " unavailable in some report (clocks not comparable)");
  }

  // Model hash: reports of the same model name must carry the same hash.
  {
    std::map<std::string, std::set<std::string>> by_model;
    for (const auto& r : reports) by_model[str_field(r, "config", "model")].insert(str_field(r, "config", "model_sha256"));
    for (const auto& [model, hashes] : by_model) {
      bool missing = false;
      for (const auto& h : hashes) missing |= unavailable(h);
      if (hashes.size() > 1) {
        std::string list;
        for (const auto& h : hashes) list += (list.empty() ? "" : ", ") + h.substr(0, 64);
        out.warnings.push_back("WARNING: model '" + model + "' has different SHA-256 between reports (" + list + ")");
      } else if (missing) {
        out.warnings.push_back("WARNING: model '" + model + "' hash unavailable in some report");
      }
    }
    if (by_model.size() > 1) {
      std::string list;
      for (const auto& [model, h] : by_model) list += (list.empty() ? "" : ", ") + model;
      out.warnings.push_back("WARNING: reports are of different models (" + list + ")");
    }
  }
  // Precision.
  same_string("config", "precision", "precisions");

  // ---- table ---------------------------------------------------------------------------------------
  std::string t;
  t += "| report | metric | p50 us | p99 us | p99.9 us | first/this p50 | first/this p99 | first/this p99.9 |\n";
  t += "|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& row : out.rows) {
    t += "| " + md_cell(row.label) + " | " + md_cell(row.metric) + " | " + fmt("%.1f", row.p50) + " | " + fmt("%.1f", row.p99) + " | " +
         fmt("%.1f", row.p99_9) + " | " + fmt("%.3f", row.r50) + " | " + fmt("%.3f", row.r99) + " | " +
         fmt("%.3f", row.r99_9) + " |\n";
  }
  out.table = t;
  return out;
}

}  // namespace ws::bench
