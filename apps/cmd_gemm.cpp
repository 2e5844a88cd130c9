// `warpstream gemm`: INT8 GEMM validation (--check) and campaigns (--bench); work lives in src/kernels/gemm.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#include "bench/gemm/gemm_s8_variants.h"
#ifdef WS_HAVE_CUDA
#include "cuda/device.h"
#include "bench/gemm/gemm_s8_suite.h"
#endif

namespace {

struct GemmArgs {
  bool check = false, bench = false, no_l2_flush = false;
  std::string variant, json;
  double scale = 1.0;
  int campaigns = 3;
  int iters = 20;
};

int run_gemm(const GemmArgs& a) {
  if (!a.check && !a.bench) {
    std::fprintf(stderr, "error: gemm: give --check and/or --bench\n");
    return 2;
  }
  if (!ws::kernels::gemm_variant_known(a.variant)) {
    std::string known;
    for (auto& b : ws::kernels::gemm_backends()) known += (known.empty() ? "" : ", ") + b.name;
    std::fprintf(stderr, "error: gemm: --variant '%s' matches no backend; known: %s\n", a.variant.c_str(), known.c_str());
    return 2;
  }
  if (a.scale <= 0 || a.scale > 1 || a.campaigns < 1 || a.iters < 1) {
    std::fprintf(stderr, "error: gemm: --scale must be in (0, 1], --campaigns and --iters >= 1\n");
    return 2;
  }
#ifndef WS_HAVE_CUDA
  std::fprintf(stderr, "error: gemm: this warpstream was built without CUDA\n");
  return 2;
#else
  // Fail early, in one line, on a machine without a usable GPU.
  if (ws::Status st = ws::cuda::init_device(0); !st.is_ok()) {
    std::fprintf(stderr, "error: gemm: %s\n", st.to_string().c_str());
    return 2;
  }
  ws::kernels::GemmRunOptions opt;
  opt.variant = a.variant;
  opt.large_scale = a.scale;
  opt.campaigns = a.campaigns;
  opt.iters = a.iters;
  opt.warmup = a.iters < 5 ? a.iters : 5;
  opt.flush_l2 = !a.no_l2_flush;
  ws::kernels::GemmReport rep;
  ws::Status st;
  if (a.check) st = ws::kernels::run_gemm_check(opt, &rep);
  if (st.is_ok() && a.bench) st = ws::kernels::run_gemm_bench(opt, &rep);
  if (!a.json.empty()) {
    nlohmann::json j;
    j["notes"] = rep.notes;
    j["failures"] = rep.failures;
    j["l2_flush"] = opt.flush_l2;
    j["status"] = st.is_ok() ? "ok" : st.to_string();
    auto& rows = j["rows"] = nlohmann::json::array();
    for (auto& r : rep.rows)
      rows.push_back({{"suite", r.suite}, {"campaign", r.campaign}, {"order", r.order}, {"shape", r.shape},
                      {"backend", r.backend}, {"ms_median", r.ms_median}, {"ms_min", r.ms_min},
                      {"ms_max", r.ms_max}, {"tops", r.tops}, {"speedup_k32", r.speedup_k32},
                      {"pct_cublas", r.pct_cublas}, {"pct_cublaslt", r.pct_cublaslt}, {"verdict", r.verdict}});
    std::ofstream(a.json) << j.dump(1) << "\n";
  }
  if (!st.is_ok()) {
    std::fprintf(stderr, "error: gemm: %s\n", st.to_string().c_str());
    return 1;
  }
  std::printf("gemm: %d failure(s)\n", rep.failures);
  return rep.failures ? 1 : 0;
#endif
}

}  // namespace

WS_REGISTER_COMMAND(gemm, "gemm", "INT8 GEMM: validate (--check) and benchmark (--bench) DP4A, tensor-core, cuBLAS",
                    [](CLI::App& sub) -> std::function<int()> {
                      auto args = std::make_shared<GemmArgs>();
                      sub.add_flag("--check", args->check, "small suites, exhaustive INT64 validation");
                      sub.add_flag("--bench", args->bench, "large suite: validation then campaigns");
                      sub.add_option("--variant", args->variant, "only backends whose name contains this");
                      sub.add_option("--json", args->json, "write every row as JSON here");
                      sub.add_option("--scale", args->scale, "shrink the large suite's dimensions (0, 1]");
                      sub.add_option("--iters", args->iters, "timed runs per backend (median; default 20)");
                      sub.add_option("--campaigns", args->campaigns, "number of campaigns (default 3)");
                      sub.add_flag("--no-l2-flush", args->no_l2_flush,
                                   "time with a warm L2 (default: flush it before every timed run)");
                      return [args] { return run_gemm(*args); };
                    });
