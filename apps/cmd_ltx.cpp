// `warpstream ltx`: the whole LTX-Video transformer on the GPU (src/flow/models/ltx_model.h) from a diffusers
// checkpoint folder, resident or streamed under a VRAM budget; times CUDA-graph replays of the whole forward
// (CUDA events, after warm-up) and reports memory and streaming figures. Inputs are random (seeded, bf16-exact).
//   warpstream ltx --checkpoint DIR --grid 16x16x24 --text-tokens 128 --batch 1 --vram-budget 1GiB --compare-resident
//   ... --stream-weights fp8: the ring carries fp8 e4m3 block linear weights + per-channel scales (half the bytes),
//   dequantised into a bf16 staging image before each block (or, when the budget cannot hold that image, each linear
//   right before its GEMM: LtxStaging); --compare-resident then compares with a resident model
//   holding the same dequantised weights (bit-identical expected). The checkpoint's bf16 block linears are
//   quantised once, at load, into the WeightStore (per-output-channel scales, weight_store.h); both models take
//   those codes.
//   --report DIR: one warpstream-bench/1 report per timed model (ltx_ours_<mode>_<weights>_b<batch>.json; primary
//   metric gpu_time_us = CUDA events around each back-to-back graph replay), for `warpstream compare` beside
//   bench/peers/ltx_peer.py's diffusers reports.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/env_record.h"
#include "bench/report.h"
#include "bench/stats.h"
#include "command.h"
#include "core/escape.h"
#include "core/file_io.h"
#include "flow/host/ltx_config.h"
#include "warpstream/safetensors.h"
#ifdef WS_HAVE_CUDA
#include "bench/env_cuda.h"
#include "cuda/cuda_util.h"
#include "cuda/device.h"
#include "flow/host/weight_store.h"
#include "flow/models/ltx_block_source.h"
#include "flow/models/ltx_model.h"
#include "flow/host/stream_plan.h"
#endif

namespace {

struct LtxArgs {
  std::string checkpoint, budget, json, report_dir, stream_weights;  // stream_weights "" = bf16, or as stored
  std::vector<std::string> grid = {"16x16x24"};
  int text_tokens = 128, batch = 1, iterations = 50, warmup = 5, max_slots = 3;
  std::optional<int64_t> tokens;  // --tokens N: a 1 x 1 x N latent grid (not given: --grid)
  bool compare_resident = false, per_token = false, no_mask = false, timeline = false, resident = false;
  uint32_t seed = 1234;
};

int usage(const std::string& msg) {
  std::fprintf(stderr, "error: ltx: %s\n", msg.c_str());
  return 2;
}

int fail(const std::string& what, const ws::Status& st, int code = 2) {
  std::fprintf(stderr, "error: ltx: %s: %s\n", what.c_str(), st.to_string().c_str());
  return code;
}

bool parse_grid(const std::vector<std::string>& parts, int& f, int& h, int& w) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "x" : "") + parts[i];
  int n = std::sscanf(s.c_str(), "%dx%dx%d", &f, &h, &w);
  char tail = 0;
  if (n != 3 || std::sscanf(s.c_str(), "%*dx%*dx%*d%c", &tail) == 1) return false;
  return f > 0 && h > 0 && w > 0 && static_cast<int64_t>(f) * h * w <= (1 << 22);
}

constexpr size_t kMaxConfigBytes = size_t{1} << 20;  // config.json: a few hundred bytes in practice

// "1GiB", "512MiB", "1.5GB", "1073741824" -> bytes; false on anything else.
bool parse_bytes(const std::string& s, uint64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v > 0) || !std::isfinite(v)) return false;
  std::string unit(end);
  double mul = 1;
  if (unit.empty() || unit == "B") mul = 1;
  else if (unit == "KiB") mul = 1024.0;
  else if (unit == "MiB") mul = 1024.0 * 1024;
  else if (unit == "GiB") mul = 1024.0 * 1024 * 1024;
  else if (unit == "KB") mul = 1e3;
  else if (unit == "MB") mul = 1e6;
  else if (unit == "GB") mul = 1e9;
  else return false;
  const double b = v * mul;
  if (b > 1.8e19) return false;
  out = static_cast<uint64_t>(b);
  return out > 0;
}

// Options, config.json and the checkpoint's header: everything `ltx` can refuse without the GPU and without reading
// tensor data. Fills `cfg` and `ckpt`; 0 = fine, else the exit code (2: bad input).
int validate_host(const LtxArgs& a, int& F, int& H, int& W, ws::flow::LtxConfig& cfg,
                  std::optional<ws::io::SafetensorsCheckpoint>& ckpt, std::string* config_path = nullptr) {
  if (a.tokens) {
    if (*a.tokens < 1 || *a.tokens > (int64_t{1} << 22)) return usage("--tokens must be in 1..2^22, got " + std::to_string(*a.tokens));
    F = 1, H = 1, W = static_cast<int>(*a.tokens);  // RoPE positions along one axis; the cost depends on S only
  } else if (!parse_grid(a.grid, F, H, W)) {
    return usage("--grid must be FxHxW or F H W with positive integers and nothing after (S <= 2^22)");
  }
  if (a.resident && !a.budget.empty()) return usage("--resident and --vram-budget exclude each other");
  // Checked here so that the CPU-only build refuses the same options as the CUDA build.
  uint64_t budget_bytes = 0;
  if (!a.budget.empty() && !parse_bytes(a.budget, budget_bytes))
    return usage("--vram-budget " + ws::quoted(a.budget) + " is not a positive size (e.g. 1GiB, 512MiB, 2GB, 1073741824)");
  if (!a.stream_weights.empty() && a.stream_weights != "bf16" && a.stream_weights != "fp8" && a.stream_weights != "int8")
    return usage("--stream-weights (--weights) " + ws::quoted(a.stream_weights) + ": bf16, fp8 or int8");
  if (a.batch < 1 || a.batch > 2) return usage("--batch must be 1 or 2, got " + std::to_string(a.batch));
  if (a.text_tokens < 1 || a.text_tokens > 4096) return usage("--text-tokens must be in 1..4096");
  if (a.iterations < 1 || a.iterations > 1000000 || a.warmup < 0 || a.warmup > 1000000)
    return usage("--iterations in 1..10^6, --warmup in 0..10^6");
  if (a.max_slots < 2 || a.max_slots > 64) return usage("--max-slots must be in 2..64, got " + std::to_string(a.max_slots));
  // config.json in the folder, or beside a file; a regular file of at most 1 MiB (a FIFO or a device is refused
  // before it is opened, so it cannot block the reader).
  std::string cfg_path = a.checkpoint + "/config.json";
  struct stat st {};
  if (::stat(a.checkpoint.c_str(), &st) != 0)
    return usage("--checkpoint (--model) " + ws::quoted(a.checkpoint) + " does not exist (" + std::strerror(errno) +
                 "): give a diffusers transformer folder or its safetensors file");
  if (::stat(cfg_path.c_str(), &st) != 0) {
    const size_t slash = a.checkpoint.rfind('/');
    cfg_path = (slash == std::string::npos ? std::string(".") : a.checkpoint.substr(0, slash)) + "/config.json";
    if (::stat(cfg_path.c_str(), &st) != 0)
      return usage("no config.json in or beside " + ws::quoted(a.checkpoint) + " (looked for " + ws::quoted(cfg_path) + ")");
  }
  auto text = ws::read_regular_file(cfg_path, "config file", kMaxConfigBytes);
  if (!text.is_ok()) return fail("config", text.status());
  auto c = ws::flow::parse_ltx_config(std::string_view(text->data(), text->size()), cfg_path);
  if (!c.is_ok()) return fail("config", c.status());
  cfg = c.value();
  if (config_path != nullptr) *config_path = cfg_path;
  auto opened = ws::io::open_checkpoint(a.checkpoint);
  if (!opened.is_ok()) return fail("checkpoint", opened.status());
  ckpt.emplace(std::move(opened.value()));
  // num_layers against the checkpoint before any per-layer work (name lists, shape checks): its last block must
  // exist, and the checkpoint must hold at least one tensor per block.
  const std::string last = "transformer_blocks." + std::to_string(cfg.num_layers - 1) + ".scale_shift_table";
  if (static_cast<int64_t>(ckpt->tensors().size()) < cfg.num_layers || ckpt->find(last).tensor == nullptr)
    return fail("config", ws::invalid_model("LTX config " + ws::quoted(cfg_path) + ": num_layers is " +
                                            std::to_string(cfg.num_layers) + " but checkpoint " +
                                            ws::quoted(a.checkpoint) + " has no tensor " + ws::quoted(last) + " (" +
                                            std::to_string(ckpt->tensors().size()) + " tensors)"));
  return 0;
}

#ifdef WS_HAVE_CUDA
using ws::Status;
namespace flow = ws::flow;


double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::max(1.0, std::ceil(p * v.size())) - 1));
  return v[i];
}

#define LTX_CUDA_OR_FAIL(call)                                                            \
  do {                                                                                    \
    cudaError_t ltx_err_ = (call);                                                        \
    if (ltx_err_ != cudaSuccess) return fail(#call, ws::cuda::cuda_status(ltx_err_, #call, __FILE__, __LINE__), 1); \
  } while (0)

std::string gib(uint64_t b) { return flow::format_bytes(b); }

struct RunResult {
  double median_ms = 0, p99_ms = 0;
  std::vector<double> samples_us;  // per timed forward (CUDA events), for --report
  uint64_t mem_delta = 0;  // cudaMemGetInfo: free before build - free after warm-up
  std::vector<uint16_t> output;
  nlohmann::json j, timeline;
};

// Builds one model, captures the forward as a CUDA graph, warms up, times `iterations` back-to-back replays.
int run_one(const LtxArgs& a, const flow::LtxConfig& cfg, const flow::WeightStore& store, const std::string& file,
            const flow::LtxModelGeometry& geo, uint64_t budget, flow::LtxStreamWeights sw,
            const std::vector<float>& hidden,
            const std::vector<float>& enc, const std::vector<float>& ts, const std::vector<float>& mask, RunResult& out) {
  size_t free0 = 0, free1 = 0, total = 0;
  LTX_CUDA_OR_FAIL(cudaMemGetInfo(&free0, &total));
  flow::LtxModelOptions o;
  o.vram_budget_bytes = budget;
  o.max_slots = a.max_slots;
  o.record_timeline = a.timeline && budget > 0;
  o.stream_weights = sw;
  const char* phase = budget ? "streamed" : "resident";
  const auto t_build = std::chrono::steady_clock::now();
  // Progress (stderr, one line per phase; stdout keeps the report): a 13B build and its timed loop take minutes.
  std::fprintf(stderr, "ltx: %s: building the device model ...\n", phase);
  std::fflush(stderr);
  auto built = flow::LtxModel::build_from_store(cfg, store, file, geo, o);
  if (!built.is_ok()) return fail(std::string("build (") + (budget ? "streamed" : "resident") + ")", built.status());
  flow::LtxModel& m = *built.value();
  Status st = m.upload_inputs(hidden.data(), enc.data(), ts.data(), geo.mask ? mask.data() : nullptr);
  if (!st.is_ok()) return fail("upload inputs", st, 1);
  auto stream = ws::cuda::Stream::create();
  if (!stream.is_ok()) return fail("stream", stream.status(), 1);
  cudaStream_t s = stream.value().get();
  // CUDA-graph replay of the whole forward; eager enqueue (said so) if capture fails.
  const char* mode = nullptr;
  std::string capture_error;
  st = m.capture_graph(s);
  if (!st.is_ok()) {
    capture_error = st.to_string();
    (void)cudaGetLastError();
    std::printf("%s: CUDA-graph capture failed (%s); timing eager enqueue\n", budget ? "streamed" : "resident",
                capture_error.c_str());
  }
  auto forward = [&]() { return capture_error.empty() ? m.launch_graph(s) : m.enqueue(s); };
  const auto t_warm = std::chrono::steady_clock::now();
  for (int i = 0; i < a.warmup; ++i)
    if (!(st = forward()).is_ok()) return fail("warm-up", st, 1);
  LTX_CUDA_OR_FAIL(cudaStreamSynchronize(s));
  {
    using secs = std::chrono::duration<double>;
    const auto now = std::chrono::steady_clock::now();
    const double per = a.warmup > 0 ? secs(now - t_warm).count() / a.warmup : 0.0;
    std::fprintf(stderr, "ltx: %s: built and captured in %.1f s, %d warm-up forwards done; timing %d forwards%s\n",
                 phase, secs(t_warm - t_build).count(), a.warmup, a.iterations,
                 per > 0 ? (" (about " + std::to_string(static_cast<int>(per * a.iterations + 0.5)) + " s)").c_str() : "");
    std::fflush(stderr);
  }
  LTX_CUDA_OR_FAIL(cudaMemGetInfo(&free1, &total));
  out.mem_delta = free0 > free1 ? free0 - free1 : 0;
  std::vector<ws::cuda::Event> ev;
  for (int i = 0; i <= a.iterations; ++i) {
    auto e = ws::cuda::Event::create();
    if (!e.is_ok()) return fail("event", e.status(), 1);
    ev.push_back(std::move(e.value()));
  }
  for (int i = 0; i < a.iterations; ++i) {
    LTX_CUDA_OR_FAIL(cudaEventRecord(ev[i].get(), s));
    if (!(st = forward()).is_ok()) return fail("timed forward", st, 1);
  }
  LTX_CUDA_OR_FAIL(cudaEventRecord(ev[a.iterations].get(), s));
  LTX_CUDA_OR_FAIL(cudaStreamSynchronize(s));
  std::vector<double> ms;
  for (int i = 0; i < a.iterations; ++i) {
    auto t = ws::cuda::elapsed_ms(ev[i], ev[i + 1]);
    if (!t.is_ok()) return fail("event timing", t.status(), 1);
    ms.push_back(t.value());
  }
  out.samples_us.clear();
  for (double v : ms) out.samples_us.push_back(v * 1e3);
  out.median_ms = percentile(ms, 0.5);
  out.p99_ms = percentile(ms, 0.99);
  const size_t n = static_cast<size_t>(geo.batch) * geo.tokens() * cfg.out_channels;
  out.output.assign(n, 0);
  LTX_CUDA_OR_FAIL(cudaMemcpy(out.output.data(), m.stages().output, n * 2, cudaMemcpyDeviceToHost));
  size_t nan = 0;
  for (uint16_t b : out.output) nan += (b & 0x7f80) == 0x7f80;
  mode = m.streamed() ? "streamed" : "resident";
  const double gbps = m.streamed_bytes_per_forward() / (out.median_ms * 1e-3) / 1e9;
  std::printf("%s: %s\n", mode, m.attention_backends().c_str());
  std::printf("%s: ms/forward median %.3f  p99 %.3f  (%d %s after %d warm-up)\n", mode, out.median_ms, out.p99_ms,
              a.iterations, capture_error.empty() ? "CUDA-graph replays" : "eager forwards", a.warmup);
  const std::string where = m.streamed() ? "ring of " + std::to_string(m.slots()) + " " +
                                               flow::ltx_stream_weights_name(sw) + " slots"
                                         : std::string("all blocks, bf16") +
                                               (sw != flow::LtxStreamWeights::kBF16
                                                    ? std::string(" dequantised from ") + flow::ltx_stream_weights_name(sw)
                                                    : std::string());
  std::printf("%s: device memory: cudaMemGetInfo delta %s; ours %s = resident weights %s + block weights %s (%s) + "
              "bf16 staging %s + activations %s (one block arena shared by every block)\n",
              mode, gib(out.mem_delta).c_str(), gib(m.device_bytes()).c_str(), gib(m.resident_weight_bytes()).c_str(),
              gib(m.block_weight_device_bytes()).c_str(), where.c_str(), gib(m.staging_bytes()).c_str(),
              gib(m.activation_bytes()).c_str());
  if (m.streamed()) std::printf("streamed: host copy: %s\n", m.store_zero_copy_note().c_str());
  if (m.streamed())
    std::printf("streamed: slots %d, budget %s, pinned host %s, streamed %s per forward, H2D %.2f GB/s averaged over "
                "the forward (bytes / median forward time)\n",
                m.slots(), gib(budget).c_str(), gib(m.pinned_host_bytes()).c_str(),
                gib(m.streamed_bytes_per_forward()).c_str(), gbps);
  if (a.timeline && m.streamed()) {
    // One extra eager forward with per-block events: copy/compute spans and how long compute waited for copies.
    if (!(st = m.enqueue_timed(s)).is_ok()) return fail("timed forward (timeline)", st, 1);
    LTX_CUDA_OR_FAIL(cudaStreamSynchronize(s));
    auto tl = m.timeline();
    if (!tl.is_ok()) return fail("timeline", tl.status(), 1);
    double copy_ms = 0, compute_ms = 0, wait_ms = 0;
    nlohmann::json rows = nlohmann::json::array();
    std::printf("streamed: timeline (ms since the blocks' fork; copy of layers < S-1 = tail copy for the next "
                "forward)\n  layer  copy_start  copy_end  compute_start  compute_end\n");
    const auto& t = tl.value();
    for (size_t i = 0; i < t.size(); ++i) {
      copy_ms += t[i].copy_end - t[i].copy_start;
      compute_ms += t[i].compute_end - t[i].compute_start;
      if (i > 0) wait_ms += std::max(0.f, t[i].compute_start - t[i - 1].compute_end);
      std::printf("  %5zu  %10.3f  %8.3f  %13.3f  %11.3f\n", i, t[i].copy_start, t[i].copy_end, t[i].compute_start,
                  t[i].compute_end);
      rows.push_back({t[i].copy_start, t[i].copy_end, t[i].compute_start, t[i].compute_end});
    }
    std::printf("streamed: copies %.3f ms, block compute %.3f ms, compute waiting between blocks %.3f ms\n", copy_ms,
                compute_ms, wait_ms);
    out.timeline = {{"layers", rows}, {"copy_ms", copy_ms}, {"compute_ms", compute_ms}, {"wait_ms", wait_ms}};
  }
  if (nan) std::printf("%s: WARNING: %zu non-finite output values\n", mode, nan);
  out.j = {{"mode", mode},
           {"median_ms", out.median_ms},
           {"p99_ms", out.p99_ms},
           {"mem_get_info_delta_bytes", out.mem_delta},
           {"resident_weight_bytes", m.resident_weight_bytes()},
           {"block_weight_device_bytes", m.block_weight_device_bytes()},
           {"activation_bytes", m.activation_bytes()},
           {"staging_bytes", m.staging_bytes()},
           {"device_bytes", m.device_bytes()},
           {"stream_weights", flow::ltx_stream_weights_name(sw)},
           {"slots", m.slots()},
           {"pinned_host_bytes", m.pinned_host_bytes()},
           {"host_copy", m.store_zero_copy_note()},
           {"streamed_bytes_per_forward", m.streamed_bytes_per_forward()},
           {"h2d_gb_per_s_over_forward", m.streamed() ? gbps : 0.0},
           {"nonfinite_outputs", nan},
           {"attention", m.attention_backends()},
           {"graph_capture_error", capture_error}};
  if (!out.timeline.is_null()) out.j["timeline"] = out.timeline;
  return 0;
}

// What every --report file of this process shares: the environment (start of the run, end when written) and the
// model's identity. The model string names the workload (compare warns when reports differ in it); the hash is the
// config.json's (a 26 GB random-weight checkpoint is not hashed whole; bench/peers/ltx_peer.py does the same).
struct ReportContext {
  ws::bench::EnvRecord env;
  std::string bus, model, model_sha256;
};

// One warpstream-bench/1 report (bench/report.h) for one timed model; the `ltx` object carries the run's JSON.
int write_ltx_report(const LtxArgs& a, ReportContext& ctx, const RunResult& r, bool streamed, flow::LtxStreamWeights sw,
                     const flow::LtxModelGeometry& geo, const flow::LtxConfig& cfg, uint64_t budget) {
  namespace bench = ws::bench;
  bench::Report rep;
  const std::string weights = flow::ltx_stream_weights_name(sw);
  const std::string mode = streamed ? "streamed" : "resident";
  rep.label = "ours " + mode + " " + weights + (streamed ? " " + gib(budget) : std::string()) + " b" +
              std::to_string(geo.batch);
  rep.tool = "warpstream ltx";
  rep.date_utc = bench::utc_now_iso8601();
  bench::record_env_point(ctx.env, ctx.bus, "end");
  rep.env = ctx.env;
  bench::RunConfig& c = rep.config;
  c.runtime = "warpstream";
  c.scope = "network";
  c.model = ctx.model;
  c.model_sha256 = ctx.model_sha256;
  c.precision = sw == flow::LtxStreamWeights::kBF16 ? "bf16" : "bf16 compute, " + weights + " block weights";
  c.network_input_shape = {geo.batch, geo.tokens(), cfg.in_channels};
  const std::string capture = r.j.value("graph_capture_error", std::string());
  c.graph_mode = capture.empty() ? "cuda_graph" : "eager";
  c.lanes = 1;
  c.input_mode = "device_resident";
  c.transfers_included = streamed;  // the block weights' host->device copies are inside the interval
  c.topk = 0;
  c.notes.push_back("grid " + std::to_string(geo.frames) + "x" + std::to_string(geo.height) + "x" +
                    std::to_string(geo.width) + " (S " + std::to_string(geo.tokens()) + "), T " +
                    std::to_string(geo.text_tokens) + ", batch " + std::to_string(geo.batch) +
                    ", timestep 500, mask: last quarter of the text tokens dropped, RoPE scale (8/25, 32, 32)");
  c.notes.push_back(streamed ? "block weights streamed from one pinned host copy through " +
                                   std::to_string(r.j.value("slots", 0)) + " ring slots under a " + gib(budget) +
                                   " VRAM budget (" + r.j.value("host_copy", std::string()) + ")"
                             : std::string("all weights resident on the device") +
                                   (sw != flow::LtxStreamWeights::kBF16 ? " (bf16, dequantised from " + weights + ")"
                                                                        : std::string()));
  if (!capture.empty()) c.notes.push_back("CUDA-graph capture failed: " + capture);
  bench::Metric m;
  m.name = "gpu_time_us";
  m.interval = "CUDA events between back-to-back replays of the whole forward (one CUDA graph); streamed: the next "
               "forward's first blocks are copied during this one's tail";
  m.stats = bench::compute_stats(r.samples_us, static_cast<size_t>(a.warmup));
  rep.metrics.push_back(m);
  rep.primary = "gpu_time_us";
  double sum_us = 0;
  for (double v : r.samples_us) sum_us += v;
  rep.wall_s = sum_us * 1e-6;
  rep.throughput_fps = sum_us > 0 ? r.samples_us.size() / rep.wall_s : 0;
  nlohmann::json j = bench::report_to_json(rep);
  j["ltx"] = r.j;
  const std::string path = a.report_dir + "/ltx_ours_" + mode + "_" + weights + "_b" + std::to_string(geo.batch) + ".json";
  const std::string text = j.dump(1) + "\n";
  if (Status st = ws::write_file(path, text.data(), text.size(), "report JSON"); !st.is_ok()) return fail("--report", st);
  std::printf("report: %s -> %s\n", rep.label.c_str(), path.c_str());
  return 0;
}

int run_ltx(const LtxArgs& a) {
  int F = 0, H = 0, W = 0;
  flow::LtxConfig config;
  std::optional<ws::io::SafetensorsCheckpoint> ckpt;
  std::string config_path;
  if (int rc = validate_host(a, F, H, W, config, ckpt, &config_path)) return rc;
  if (!a.report_dir.empty()) {
    struct stat rs {};
    if (::stat(a.report_dir.c_str(), &rs) != 0 || !S_ISDIR(rs.st_mode))
      return usage("--report " + ws::quoted(a.report_dir) + " is not an existing directory");
  }
  ws::Result<flow::LtxConfig> cfg(config);
  uint64_t budget = 0;
  if (!a.budget.empty() && !parse_bytes(a.budget, budget))
    return usage("--vram-budget " + ws::quoted(a.budget) + " is not a positive size (e.g. 1GiB, 512MiB, 2GB, 1073741824)");
  if (a.compare_resident && budget == 0) return usage("--compare-resident needs --vram-budget");
  const ws::io::SafetensorsCheckpoint& cp = *ckpt;
  // A pre-quantised checkpoint (tools/make_ltx_checkpoint.py --block-weights fp8|int8: codes + .weight_scale) streams
  // its own codes: its format is the default, another one is refused (the codes are not converted twice).
  const auto stored_fmt = flow::stored_ltx_block_format(cp);
  const std::string stored = !stored_fmt ? "" : *stored_fmt == flow::WeightFormat::kInt8 ? "int8" : "fp8";
  std::string sw_name = a.stream_weights.empty() ? (stored.empty() ? "bf16" : stored) : a.stream_weights;
  if (!stored.empty() && sw_name != stored)
    return usage("--stream-weights " + sw_name + ": " + ws::quoted(a.checkpoint) + " stores its block weights "
                 "pre-quantised as " + stored + " (use --stream-weights " + stored + ", the default for it)");
  auto sw = flow::parse_ltx_stream_weights(sw_name);
  if (!sw.is_ok()) return usage("--stream-weights (--weights) " + ws::quoted(sw_name) + ": bf16, fp8 or int8");
  // Every tensor's presence, dtype and shape against the config, on the checkpoint's mapping (headers only; 8-bit
  // codes need their .weight_scale): a file claiming huge tensors is refused here, before the WeightStore copies a byte.
  if (Status st = flow::LtxModel::validate_tensors(cfg.value(), flow::ltx_source_from_checkpoint(cp)); !st.is_ok())
    return fail("weights in " + a.checkpoint, st);
  if (const auto unused = flow::LtxModel::unused_tensors(cfg.value(), cp); !unused.empty()) {
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 3; ++i) list += (i ? ", " : "") + ws::quoted(unused[i]);
    std::fprintf(stderr, "warning: ltx: %zu tensor(s) of %s are not used by the model the config describes (%s%s); "
                 "is config.json the checkpoint's?\n", unused.size(), ws::quoted(a.checkpoint).c_str(), list.c_str(),
                 unused.size() > 3 ? ", ..." : "");
  }
  flow::LtxModelGeometry geo;
  geo.batch = a.batch; geo.frames = F; geo.height = H; geo.width = W; geo.text_tokens = a.text_tokens;
  geo.per_token_timestep = a.per_token;
  geo.mask = !a.no_mask;
  geo.rope_scale = true;
  geo.rope_interpolation_scale = {8.f / 25.f, 32.f, 32.f};  // LTXPipeline (8/fps at 25 fps, 32, 32)
  const flow::LtxConfig& c = cfg.value();
  flow::LtxModelOptions fo;
  fo.stream_weights = sw.value();
  fo.vram_budget_bytes = budget;  // 8-bit: the staging (whole block or per linear) follows the budget (LtxStaging)
  // The footprint plans the attention (cuDNN) graphs: the device comes first, so a machine without one is told so.
  if (Status st = ws::cuda::init_device(0); !st.is_ok()) return fail("device (the model runs on the GPU)", st);
  auto fp = flow::LtxModel::footprint(c, geo, fo);
  if (!fp.is_ok()) return fail("config", fp.status(), 2);
  std::printf("ltx: %s: D %lld (%lld x %lld), %lld blocks, cross %lld, caption %lld; S %d (%dx%dx%d), T %d, B %d, %s "
              "timestep\n",
              a.checkpoint.c_str(), (long long)c.inner_dim(), (long long)c.num_attention_heads,
              (long long)c.attention_head_dim, (long long)c.num_layers, (long long)c.cross_attention_dim,
              (long long)c.caption_channels, geo.tokens(), F, H, W, geo.text_tokens, geo.batch,
              a.per_token ? "per-token" : "per-sample");
  std::printf("ltx: device bytes: non-block weights %s, one bf16 block %s, all blocks %s; model buffers %s, one shared "
              "block arena %s; streamed %s: slot %s, bf16 staging %s%s; smallest streamed budget %s (fixed %s + 2 "
              "slots), resident %s\n",
              gib(fp.value().resident_weight_bytes).c_str(), gib(fp.value().bf16_block_bytes).c_str(),
              gib(fp.value().all_block_bytes()).c_str(), gib(fp.value().model_activation_bytes).c_str(),
              gib(fp.value().block_arena_bytes).c_str(), flow::ltx_stream_weights_name(sw.value()),
              gib(fp.value().block_bytes).c_str(), gib(fp.value().staging_bytes).c_str(),
              fp.value().per_linear_staging ? " (per linear)" : "", gib(fp.value().min_streamed_budget()).c_str(), gib(fp.value().fixed_bytes()).c_str(),
              gib(fp.value().resident_bytes()).c_str());
  // The budget against everything a streamed build allocates, before the weights are read (seconds for a 13B model):
  // refused naming the given and needed bytes and every part (LtxModel::build refuses the same budget the same way).
  if (budget > 0 && budget < fp.value().min_streamed_budget()) {
    const flow::LtxModelFootprint& f = fp.value();
    return fail("--vram-budget",
                ws::resource_exhausted(
                    "VRAM budget " + std::to_string(budget) + " bytes (" + gib(budget) + ") is too small: needed at least " +
                    std::to_string(f.min_streamed_budget()) + " bytes (" + gib(f.min_streamed_budget()) +
                    ") = resident non-block weights " + std::to_string(f.resident_weight_bytes) + " + activations " +
                    std::to_string(f.model_activation_bytes + f.block_arena_bytes) + " (model buffers " +
                    std::to_string(f.model_activation_bytes) + " + one shared block arena " +
                    std::to_string(f.block_arena_bytes) + ", batch " + std::to_string(geo.batch) + ", " +
                    std::to_string(geo.tokens()) + " tokens)" +
                    (f.staging_bytes ? std::string(f.per_linear_staging ? " + per-linear bf16 staging " : " + bf16 staging image ") +
                                              std::to_string(f.staging_bytes)
                                        : std::string()) +
                    " + 2 ring slots x " + std::to_string(f.block_bytes) + " (one " +
                    flow::ltx_stream_weights_name(sw.value()) + " block image)"));
  }
  // ONE host copy of the weights: a WeightStore in the model's order (blocks contiguous in the device layout), which
  // the streamed model registers once and streams from directly. 8-bit: the block linears are quantised here, once,
  // on every core (per-output-channel scales), and both the streamed and the resident model take those codes.
  const auto names = flow::LtxModel::store_tensor_order(cfg.value());
  flow::WeightStoreOptions wo;
  wo.format = sw.value() == flow::LtxStreamWeights::kFP8    ? flow::WeightFormat::kFp8E4M3
              : sw.value() == flow::LtxStreamWeights::kINT8 ? flow::WeightFormat::kInt8
                                                            : flow::WeightFormat::kAsStored;
  const auto load_start = std::chrono::steady_clock::now();
  auto store = flow::WeightStore::load(ckpt.value(), names, wo);
  if (!store.is_ok()) return fail("load weights from " + a.checkpoint, store.status(), 2);
  uint64_t ckpt_bytes = 0;
  for (const auto& n : names) {
    const auto ct = ckpt.value().find(n);
    if (ct.tensor) ckpt_bytes += ct.bytes.size();
  }
  std::printf("ltx: weight store %s in one host allocation (%.3fx the %s of model tensors in the checkpoint%s), "
              "loaded in %.1f s\n",
              flow::format_bytes(store.value().storage().size()).c_str(),
              ckpt_bytes ? static_cast<double>(store.value().storage().size()) / ckpt_bytes : 0.0,
              flow::format_bytes(ckpt_bytes).c_str(),
              wo.format == flow::WeightFormat::kAsStored
                  ? ""
                  : (std::string("; block linears quantised to ") + std::string(flow::weight_format_name(wo.format)) +
                     " at load").c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  // Inputs (bf16-exact, seeded).
  std::mt19937 rng(a.seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const size_t S = geo.tokens();
  std::vector<float> hidden(geo.batch * S * c.in_channels), enc(geo.batch * a.text_tokens * c.caption_channels);
  for (float& v : hidden) v = nd(rng);
  for (float& v : enc) v = nd(rng);
  std::vector<float> ts(a.per_token ? geo.batch * S : geo.batch, 500.f);
  std::vector<float> mask(static_cast<size_t>(geo.batch) * a.text_tokens, 1.f);
  for (int b = 0; b < geo.batch; ++b)
    for (int t = a.text_tokens * 3 / 4; t < a.text_tokens; ++t) mask[b * a.text_tokens + t] = 0.f;
  nlohmann::json report = {{"checkpoint", a.checkpoint}, {"grid", {F, H, W}}, {"tokens", S},
                           {"text_tokens", a.text_tokens}, {"batch", a.batch}, {"per_token_timestep", a.per_token},
                           {"stream_weights", sw_name}};
  ReportContext rctx;
  if (!a.report_dir.empty()) {
    if (auto dr = ws::cuda::device_report(0); dr.is_ok()) {
      rctx.bus = dr->pci_bus_id;
      rctx.env.set("device", dr->to_string());
      rctx.env.set("sm_count", dr->sm_count);
    }
    ws::bench::record_env_start(rctx.env, rctx.bus);
    ws::bench::record_cuda_versions(rctx.env);
    rctx.model = "ltx-video D" + std::to_string(c.inner_dim()) + " L" + std::to_string(c.num_layers) + " grid " +
                 std::to_string(F) + "x" + std::to_string(H) + "x" + std::to_string(W) + " T" +
                 std::to_string(a.text_tokens) + " B" + std::to_string(a.batch);
    rctx.model_sha256 = ws::bench::sha256_file_hex(config_path);
  }
  RunResult resident, streamed;
  if (budget == 0 || a.compare_resident) {
    if (int rc = run_one(a, c, store.value(), a.checkpoint, geo, 0, sw.value(), hidden, enc, ts, mask, resident)) return rc;
    report["resident"] = resident.j;
    if (!a.report_dir.empty())
      if (int rc = write_ltx_report(a, rctx, resident, false, sw.value(), geo, c, 0)) return rc;
  }
  if (budget > 0) {
    if (int rc = run_one(a, c, store.value(), a.checkpoint, geo, budget, sw.value(), hidden, enc, ts, mask, streamed)) return rc;
    report["streamed"] = streamed.j;
    if (!a.report_dir.empty())
      if (int rc = write_ltx_report(a, rctx, streamed, true, sw.value(), geo, c, budget)) return rc;
  }
  int rc = 0;
  if (a.compare_resident) {
    const bool same = streamed.output == resident.output;
    const double ratio = streamed.median_ms / resident.median_ms;
    std::printf("streamed/resident: %.3fx (median %.3f / %.3f ms); outputs %s\n", ratio, streamed.median_ms,
                resident.median_ms, same ? "bit-identical" : "DIFFER");
    report["streamed_over_resident"] = ratio;
    report["bit_identical"] = same;
    if (!same) rc = 1;
  }
  if (!a.json.empty()) {
    std::ofstream jf(a.json);
    if (!jf) return usage("cannot write --json " + a.json);
    jf << report.dump(2) << "\n";
  }
  return rc;
}
#endif  // WS_HAVE_CUDA

int run(const LtxArgs& a) {
#ifndef WS_HAVE_CUDA
  // The same host-side checks as the CUDA build, so bad options and files are reported as such here too.
  int F = 0, H = 0, W = 0;
  ws::flow::LtxConfig cfg;
  std::optional<ws::io::SafetensorsCheckpoint> ckpt;
  if (int rc = validate_host(a, F, H, W, cfg, ckpt)) return rc;
  return usage("this warpstream was built without CUDA (the model runs on the GPU)");
#else
  return run_ltx(a);
#endif
}

}  // namespace

WS_REGISTER_COMMAND(ltx, "ltx",
                    "the whole LTX-Video transformer on the GPU (resident or streamed under a VRAM budget), timed",
                    [](CLI::App& sub) -> std::function<int()> {
                      auto a = std::make_shared<LtxArgs>();
                      sub.add_option("--checkpoint,--model", a->checkpoint,
                                     "diffusers folder (config.json + safetensors, sharded or not)")
                          ->required();
                      auto* grid = sub.add_option("--grid", a->grid, "latent grid FxHxW or F H W (default 16x16x24 = 6144 tokens)")
                          ->expected(1, 3);
                      sub.add_option("--tokens", a->tokens, "S video tokens as a 1x1xS grid (instead of --grid)")
                          ->excludes(grid);
                      sub.add_option("--text-tokens", a->text_tokens, "text tokens T (default 128)");
                      sub.add_option("--batch", a->batch, "1 or 2 (2 = classifier-free guidance)");
                      sub.add_option("--vram-budget", a->budget,
                                     "device bytes for everything (weights + ring + activations), e.g. 1GiB "
                                     "(default: resident, no streaming)")
                          ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("an empty size") : std::string(); },
                                                 "SIZE"));
                      sub.add_flag("--resident", a->resident, "every weight on the device, no streaming (the default "
                                   "without --vram-budget; refused with it)");
                      sub.add_option("--stream-weights,--weights", a->stream_weights,
                                     "block linear weights as bf16 (default; a pre-quantised checkpoint: its own fp8/int8), fp8 or int8 (per-channel scales; "
                                     "dequantised to bf16 on the GPU before each block; resident: the same "
                                     "dequantised values)");
                      sub.add_option("--max-slots", a->max_slots, "ring slots at most when streaming (default 3)");
                      sub.add_option("--iterations,--repeat", a->iterations, "timed forwards (default 50)");
                      sub.add_option("--warmup", a->warmup, "warm-up forwards (default 5)");
                      sub.add_flag("--compare-resident", a->compare_resident,
                                   "also run resident in this process: ratio streamed/resident, bit equality");
                      sub.add_flag("--timeline", a->timeline,
                                   "streamed: one extra forward with per-block copy/compute events, printed");
                      sub.add_flag("--per-token-timestep", a->per_token, "timestep [B, S] instead of [B]");
                      sub.add_flag("--no-mask", a->no_mask, "no encoder attention mask");
                      sub.add_option("--seed", a->seed, "seed of the random inputs (default 1234)");
                      sub.add_option("--json", a->json, "write the report as JSON here");
                      sub.add_option("--report", a->report_dir,
                                     "also write one warpstream-bench/1 report per timed model into this existing "
                                     "directory (for `warpstream compare` beside bench/peers/ltx_peer.py)");
                      return [a] { return run(*a); };
                    });
