// `warpstream h2d`: RAM <-> VRAM bandwidth sweep (VRAMFlow stage 03); work lives in bench/flow/h2d_bench.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#ifdef WS_HAVE_CUDA
#include "cuda/device.h"
#include "bench/flow/h2d_bench.h"
#endif

namespace {

struct H2dArgs {
  std::string json;
  int iters = 10;
  int warmup = 2;
  int max_mib = 1024;
  bool quick = false;
};

int run_h2d(const H2dArgs& a) {
  if (a.iters < 10 && !a.quick) {
    std::fprintf(stderr, "error: h2d: --iters must be >= 10 (median of at least 10 timings); --quick allows fewer\n");
    return 2;
  }
  if (a.max_mib < 64 || (a.max_mib & (a.max_mib - 1))) {
    std::fprintf(stderr, "error: h2d: --max-mib must be a power of two >= 64\n");
    return 2;
  }
#ifndef WS_HAVE_CUDA
  std::fprintf(stderr, "error: h2d: this warpstream was built without CUDA\n");
  return 2;
#else
  // Fail early, in one line, on a machine without a usable GPU.
  if (ws::Status st = ws::cuda::init_device(0); !st.is_ok()) {
    std::fprintf(stderr, "error: %s: %s\n", "h2d", st.to_string().c_str());
    return 2;
  }
  ws::flow::H2dOptions o;
  for (uint64_t s = 64; s <= uint64_t(a.max_mib); s *= 2) o.sizes.push_back(s << 20);
  o.iters = a.iters;
  o.warmup = a.warmup;
  if (a.quick) {
    o.streams = {1, 4};
    o.chunks = {4ull << 20, 64ull << 20};
  }
  ws::flow::H2dReport rep;
  ws::Status st = ws::flow::run_h2d_sweep(o, &rep);
  std::printf("h2d on %s: median of %d timings after %d warm-ups; GB = 1e9 bytes\n", rep.device.c_str(), o.iters,
              o.warmup);
  std::printf("%-9s %-11s %7s %9s %9s %9s %9s %9s\n", "memory", "direction", "streams", "chunkMiB", "sizeMiB",
              "ms_med", "GB/s_med", "GB/s_best");
  for (const auto& r : rep.rows)
    std::printf("%-9s %-11s %7d %9llu %9llu %9.3f %9.2f %9.2f\n", r.memory.c_str(), r.direction.c_str(), r.streams,
                (unsigned long long)(r.chunk_bytes >> 20), (unsigned long long)(r.bytes >> 20), r.ms_median,
                r.gbps_median, r.gbps_best);
  std::printf("pinned ceiling: h2d %.2f GB/s, d2h %.2f GB/s (best median over sizes/streams/chunks)\n",
              rep.pinned_h2d_ceiling, rep.pinned_d2h_ceiling);
  if (!a.json.empty()) {
    nlohmann::json j;
    j["device"] = rep.device;
    j["iters"] = o.iters;
    j["warmup"] = o.warmup;
    j["status"] = st.is_ok() ? "ok" : st.to_string();
    j["pinned_h2d_ceiling_gbps"] = rep.pinned_h2d_ceiling;
    j["pinned_d2h_ceiling_gbps"] = rep.pinned_d2h_ceiling;
    auto& rows = j["rows"] = nlohmann::json::array();
    for (const auto& r : rep.rows)
      rows.push_back({{"memory", r.memory}, {"direction", r.direction}, {"streams", r.streams},
                      {"chunk_bytes", r.chunk_bytes}, {"bytes", r.bytes}, {"ms_median", r.ms_median},
                      {"ms_min", r.ms_min}, {"ms_max", r.ms_max}, {"gbps_median", r.gbps_median},
                      {"gbps_best", r.gbps_best}});
    std::ofstream(a.json) << j.dump(1) << "\n";
  }
  if (!st.is_ok()) {
    std::fprintf(stderr, "error: h2d: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
#endif
}

}  // namespace

WS_REGISTER_COMMAND(h2d, "h2d", "RAM <-> VRAM bandwidth: pinned/pageable, H2D/D2H, chunked over streams, mapped reads",
                    [](CLI::App& sub) -> std::function<int()> {
                      auto args = std::make_shared<H2dArgs>();
                      sub.add_option("--json", args->json, "write every row as JSON here");
                      sub.add_option("--iters", args->iters, "timed runs per point (median; default 10, >= 10)");
                      sub.add_option("--warmup", args->warmup, "untimed runs before timing (default 2)");
                      sub.add_option("--max-mib", args->max_mib, "largest size in MiB (default 1024)");
                      sub.add_flag("--quick", args->quick, "reduced grid: streams {1,4}, chunks {4,64} MiB");
                      return [args] { return run_h2d(*args); };
                    });
