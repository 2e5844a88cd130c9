// `warpstream overlap`: copy/compute overlap of a streamed INT8 layer chain (VRAMFlow stage 04);
// work lives in bench/flow/overlap_bench (over src/flow/streamer).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#ifdef WS_HAVE_CUDA
#include "cuda/device.h"
#include "bench/flow/overlap_bench.h"
#endif

namespace {

struct OverlapArgs {
  std::string json;
  int layers = 16, dim = 8192, tokens = 0, iters = 10, warmup = 2;
  double factor = 4.0;
};

int run_overlap_cmd(const OverlapArgs& a) {
  if (a.layers < 1 || a.dim < 16 || a.dim % 16 || a.tokens < 0 || a.iters < 1 || a.factor < 1) {
    std::fprintf(stderr, "error: overlap: need --layers >= 1, --dim a multiple of 16, --tokens >= 0, --iters >= 1, --factor >= 1\n");
    return 2;
  }
#ifndef WS_HAVE_CUDA
  std::fprintf(stderr, "error: overlap: this warpstream was built without CUDA\n");
  return 2;
#else
  // Fail early, in one line, on a machine without a usable GPU.
  if (ws::Status st = ws::cuda::init_device(0); !st.is_ok()) {
    std::fprintf(stderr, "error: %s: %s\n", "overlap", st.to_string().c_str());
    return 2;
  }
  ws::flow::OverlapOptions o;
  o.layers = a.layers;
  o.dim = a.dim;
  o.tokens = a.tokens;
  o.iters = a.iters;
  o.warmup = a.warmup;
  o.heavy_factor = a.factor;
  ws::flow::OverlapReport rep;
  ws::Status st = ws::flow::run_overlap(o, &rep);
  for (const auto& n : rep.notes) std::printf("note: %s\n", n.c_str());
  std::printf("%-15s %-10s %6s %2s %9s %9s %9s %6s %8s %s\n", "config", "mode", "tokens", "S", "ms_med", "graph_ms",
              "peakMiB", "eff", "copyGB/s", "verdict");
  for (const auto& r : rep.rows)
    std::printf("%-15s %-10s %6d %2d %9.3f %9.3f %9.0f %6.3f %8.2f %s\n", r.config.c_str(), r.mode.c_str(), r.tokens,
                r.slots, r.ms_median, r.graph_ms_median, double(r.peak_device_bytes) / (1 << 20), r.efficiency,
                r.copy_gbps, r.verdict.c_str());
  if (!a.json.empty()) {
    nlohmann::json j;
    j["status"] = st.is_ok() ? "ok" : st.to_string();
    j["notes"] = rep.notes;
    j["balanced_tokens"] = rep.balanced_tokens;
    j["failures"] = rep.failures;
    auto& rows = j["rows"] = nlohmann::json::array();
    for (const auto& r : rep.rows)
      rows.push_back({{"config", r.config}, {"mode", r.mode}, {"tokens", r.tokens}, {"dim", r.dim},
                      {"layers", r.layers}, {"slots", r.slots}, {"layer_bytes", r.layer_bytes},
                      {"peak_device_bytes", r.peak_device_bytes}, {"ms_median", r.ms_median}, {"ms_min", r.ms_min},
                      {"ms_max", r.ms_max}, {"graph_ms_median", r.graph_ms_median}, {"efficiency", r.efficiency},
                      {"copy_gbps", r.copy_gbps}, {"verdict", r.verdict}});
    auto& tls = j["timelines"] = nlohmann::json::array();
    for (const auto& t : rep.timelines) {
      nlohmann::json ev = nlohmann::json::array();
      for (const auto& e : t.layers)
        ev.push_back({{"layer", e.layer}, {"copy_start_ms", e.copy_start}, {"copy_end_ms", e.copy_end},
                      {"compute_start_ms", e.compute_start}, {"compute_end_ms", e.compute_end}});
      tls.push_back({{"config", t.config}, {"mode", t.mode}, {"slots", t.slots}, {"layers", ev}});
    }
    std::ofstream(a.json) << j.dump(1) << "\n";
  }
  if (!st.is_ok()) {
    std::fprintf(stderr, "error: overlap: %s\n", st.to_string().c_str());
    return 1;
  }
  std::printf("overlap: %d mismatch(es) vs resident\n", rep.failures);
  return rep.failures ? 1 : 0;
#endif
}

}  // namespace

WS_REGISTER_COMMAND(overlap, "overlap",
                    "weight streaming: compute alone, transfer alone, sequential, double and triple buffering",
                    [](CLI::App& sub) -> std::function<int()> {
                      auto args = std::make_shared<OverlapArgs>();
                      sub.add_option("--json", args->json, "rows and per-layer timelines (events) as JSON");
                      sub.add_option("--layers", args->layers, "chain length L (default 16)");
                      sub.add_option("--dim", args->dim, "D: weights are D x D int8 (default 8192 = 64 MiB)");
                      sub.add_option("--tokens", args->tokens, "balanced token count (default 0 = calibrate)");
                      sub.add_option("--factor", args->factor, "compute-/transfer-heavy factor (default 4)");
                      sub.add_option("--iters", args->iters, "timed passes per mode (median; default 10)");
                      sub.add_option("--warmup", args->warmup, "untimed passes (default 2)");
                      return [args] { return run_overlap_cmd(*args); };
                    });
