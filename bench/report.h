#pragma once
/// \file report.h
/// The benchmark report: one JSON schema ("warpstream-bench/1") written by `warpstream bench` and by
/// bench/peers/pytorch_peer.py, read by `warpstream compare` and tools/plot_latency_cdf.py.
/// The schema is documented field by field in docs/benchmarking.md. Host-only (nlohmann::json).
///
/// A field that could not be read is the string "unavailable: <reason>" — never a made-up number.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/stats.h"
#include "warpstream/status.h"

namespace ws::bench {

inline constexpr const char* kReportSchema = "warpstream-bench/1";

/// Environment of a run (docs/benchmarking.md "env"). Values are JSON so that any field can be
/// "unavailable: <why>" instead of a number.
struct EnvRecord {
  nlohmann::json fields = nlohmann::json::object();
  void set(const std::string& key, nlohmann::json value) { fields[key] = std::move(value); }
  void unavailable(const std::string& key, const std::string& why) { fields[key] = "unavailable: " + why; }
};

/// What was measured (docs/benchmarking.md "config").
struct RunConfig {
  std::string runtime = "warpstream";   ///< "warpstream", "pytorch-eager", "pytorch-cuda-graph", "pytorch-compile"
  std::string scope = "end_to_end";     ///< "end_to_end" (RGB8 frame → Top-K on the host) or "network"
  std::string model;                    ///< model file name / identifier
  std::string model_sha256;             ///< of the ONNX file, or "unavailable: …"
  std::string precision;                ///< "fp32" / "fp16"
  std::vector<int64_t> source_shape;    ///< [H, W, 3] RGB8 frame; empty for network-only
  std::vector<int64_t> network_input_shape;  ///< [N, C, H, W]
  std::string graph_mode;               ///< "graph" / "direct" / "eager" / "cuda_graph" / "compile:<mode>"
  int lanes = 1;
  std::string input_mode;               ///< "mapped" / "copy" / "device" / "pinned_copy" / "device_resident"
  bool transfers_included = true;       ///< the frame's host→device movement is inside the interval
  int topk = 5;
  std::vector<std::string> notes;       ///< fallbacks, caveats ("torch.compile max-autotune timed out: reduce-overhead")
};

/// One metric: statistics in microseconds plus a description of its interval.
struct Metric {
  std::string name;         ///< "host_latency_us", "gpu_time_us", "enqueue_us"
  std::string interval;     ///< one line: what the interval includes
  Stats stats;
  std::span<const double> samples;  ///< for the CSV (not copied into the JSON)
};

struct Report {
  std::string label;        ///< short row name for compare tables and plot legends
  std::string tool;         ///< "warpstream bench" / "bench/peers/pytorch_peer.py"
  std::string date_utc;     ///< ISO-8601
  RunConfig config;
  EnvRecord env;
  std::vector<Metric> metrics;
  std::string primary = "host_latency_us";  ///< metric compare and plot use
  double throughput_fps = 0;                ///< frames per second over all lanes, host wall clock
  double wall_s = 0;                         ///< timed phase, seconds
  size_t dropped_samples = 0;               ///< samples past the recorder's capacity (0 in a sound run)
  std::vector<std::string> warnings;        ///< e.g. "enqueue p50 is 60% of host latency p50"
  std::string samples_csv;                  ///< path of the per-sample CSV, if written
};

nlohmann::json stats_to_json(const Stats& s);
Stats stats_from_json(const nlohmann::json& j);
nlohmann::json report_to_json(const Report& r);

/// Writes the report as pretty JSON. Errors: the file cannot be written (kIo-like, with the OS reason).
Status write_report_json(const Report& r, const std::string& path);
/// Per-sample CSV: header "index,<metric>,<metric>…", one row per timed sample (index from 0);
/// metrics with fewer samples leave the cell empty.
Status write_samples_csv(std::span<const Metric> metrics, const std::string& path);

/// Reads a report file and checks its schema tag. Errors: unreadable file, not JSON, wrong schema.
Result<nlohmann::json> read_report_json(const std::string& path);

/// ISO-8601 UTC timestamp of now ("2026-11-29T19:46:15Z").
std::string utc_now_iso8601();

}  // namespace ws::bench
