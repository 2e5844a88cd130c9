// `warpstream bench`: the latency benchmark of the lanes rail (issue 4). Per frame: host latency (submit
// called → Top-K visible in mapped memory, returned by wait), GPU time (the lane's start event before the
// graph launch → end event after Top-K) and enqueue (host wall time inside submit). N producer threads
// keep N lanes busy. Statistics, report JSON and per-sample CSV: bench/ (docs/benchmarking.md).
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "bench/env_record.h"
#include "bench/nvtx.h"
#include "bench/report.h"
#include "bench/stats.h"
#include "command.h"
#include "core/file_io.h"
#include "warpstream/cuda_engine.h"
#include "warpstream/image.h"
#ifdef WS_HAVE_CUDA
#include "bench/env_cuda.h"
#include "bench/launch_probe.h"
#include "cuda/cuda_util.h"
#include "cuda/device.h"
#include "warpstream/classifier.h"
#include "warpstream/graph.h"
#include "warpstream/lanes.h"
#endif

namespace {

struct BenchArgs {
  std::string model;
  int lanes = 1;
  int warmup = 200;
  int iterations = 2000;
  double duration_s = 0;
  bool no_cuda_graph = false;
  std::string input = "mapped";
  std::string precision = "fp32";
  std::string source = "1920x1080";
  int topk = 5;
  std::string json, samples, label, image, frame, timing_cache;
  int device = 0;
  std::string tactic_sources = "all";  // --tactic-sources (ws::parse_tactic_sources)
  std::string layout = "auto";          // --layout (ws::parse_layout)
  bool pdl = true;                      // --pdl / --no-pdl (CudaBuildOptions::programmatic_dependent_launch)
  bool split_k_reduce_kernel = false;   // --split-k-reduce-kernel (CudaBuildOptions::split_k_in_kernel = false)
  bool split_k_cluster = false;         // --split-k-cluster (CudaBuildOptions::split_k_cluster)
  bool no_dwpw_fusion = false;          // --no-dwpw-fusion (CudaBuildOptions::fuse_depthwise_pointwise = false)
  bool no_exdw_fusion = false;          // --no-exdw-fusion (CudaBuildOptions::fuse_expand_depthwise = false)
  bool pooled_head = false;             // --pooled-head (CudaBuildOptions::fuse_pooled_head)
  bool no_stem_pool = false;            // --no-stem-pool (CudaBuildOptions::fuse_stem_pool = false)
  bool cudnn_graph = false;             // --cudnn-graph (CudaBuildOptions::cudnn_graph_convs = true)
  bool nhwc_igemm = false;              // --nhwc-igemm (CudaBuildOptions::nhwc_igemm = true)
  bool cutlass_conv = false;            // --cutlass-conv (CudaBuildOptions::cutlass_convs = true)
  bool hwc8 = false;                    // --hwc8 (CudaBuildOptions::hwc8_input = true)
  bool hwc8_port = false;               // --hwc8-port (CudaBuildOptions::hwc8_input and hwc8_input_port = true)
  int aux_streams = 0;                  // --aux-streams N (CudaBuildOptions::max_aux_streams)
  int frame_tune = 0;                   // --frame-tune N: CudaEngine::tune_frame with max_flips N before the build (0: off)
  bool input_wavefront = false;         // --input-wavefront (PipelineOptions::input_wavefront)
  int input_wavefront_steps = 2;        // --input-wavefront-steps (PipelineOptions::input_wavefront_steps)
  bool armed_launch = false;            // --armed-launch (PipelineOptions::armed_launch)
  std::string calibration;              // --calibration DIR (precision fp8)
  bool fp8_obey = false;                // --fp8-obey (CudaBuildOptions::fp8_obey_precision)
  bool no_progress = false;
  int profile_layers = 0;
  bool profile_first = false;           // --profile-first: the per-step profile before the timed loop (the order before run 95)
  bool duration_given = false;
};

#ifdef WS_HAVE_CUDA
bool parse_wxh(const std::string& s, int64_t& w, int64_t& h) {
  long long a = 0, b = 0;
  char x = 0, extra = 0;
  if (std::sscanf(s.c_str(), "%lld%c%lld%c", &a, &x, &b, &extra) != 3 || (x != 'x' && x != 'X') || a < 1 || b < 1)
    return false;
  w = a;
  h = b;
  return true;
}

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// The frame every lane serves: a photo (--image, its own size), raw RGB8 (--frame, --source size), or a
// seeded pseudo-random frame of --source size (never zeros: METHOD.md).
ws::Result<std::vector<uint8_t>> make_frame(const BenchArgs& a, int64_t& w, int64_t& h, std::string& what) {
  if (!a.image.empty()) {
    auto img = ws::decode_image_file(a.image);
    if (!img) return img.status();
    w = img->width;
    h = img->height;
    what = "image " + std::filesystem::path(a.image).filename().string();
    return std::move(img->pixels);
  }
  if (!a.frame.empty()) {
    auto bytes = ws::read_regular_file(a.frame, "frame file", size_t{1} << 31);
    if (!bytes) return bytes.status();
    if (bytes->size() != static_cast<size_t>(w * h * 3))
      return ws::invalid_argument("frame file " + a.frame + " has " + std::to_string(bytes->size()) +
                                  " bytes; --source " + std::to_string(w) + "x" + std::to_string(h) + " needs " +
                                  std::to_string(w * h * 3) + " (raw RGB8, rows packed)");
    what = "raw frame " + std::filesystem::path(a.frame).filename().string();
    return std::vector<uint8_t>(bytes->begin(), bytes->end());
  }
  std::vector<uint8_t> px(static_cast<size_t>(w * h * 3));
  uint32_t s = 0x9e3779b9u;
  for (auto& p : px) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    p = static_cast<uint8_t>(s >> 24);
  }
  what = "pseudo-random frame (xorshift32, seed 0x9e3779b9)";
  return px;
}

struct LaneRecorders {
  ws::bench::SampleRecorder host, gpu, enqueue, acquire;
  size_t mismatches = 0;  // frames whose top-1 differs from the warm-up's
  std::string error;
};

int run_bench(const BenchArgs& a) {
  auto fail = [](const ws::Status& st, int code = 1) {
    std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
    return code;
  };
  if (a.model.empty()) return fail(ws::invalid_argument("--model is required"), 2);
  if (a.lanes < 1 || a.lanes > 64) return fail(ws::invalid_argument("--lanes must be 1..64"), 2);
  if (a.warmup < 0 || a.iterations < 1) return fail(ws::invalid_argument("--warmup >= 0 and --iterations >= 1"), 2);
  int64_t src_w = 0, src_h = 0;
  if (!parse_wxh(a.source, src_w, src_h)) return fail(ws::invalid_argument("--source must be WxH, e.g. 1920x1080"), 2);
  auto input_mode = ws::parse_lane_input(a.input);
  if (!input_mode) return fail(input_mode.status(), 2);
  auto parsed_precision = ws::parse_precision(a.precision);
  if (!parsed_precision) return fail(parsed_precision.status(), 2);
  const ws::Precision precision = *parsed_precision;
  if (precision == ws::Precision::kFloat8 && a.calibration.empty())
    return fail(ws::invalid_argument("--precision fp8 needs --calibration DIR: a directory of a few representative images (PNG/JPEG)"), 2);
  if (precision != ws::Precision::kFloat8 && !a.calibration.empty())
    return fail(ws::invalid_argument("--calibration is for --precision fp8 only"), 2);
  if (precision != ws::Precision::kFloat8 && a.fp8_obey) return fail(ws::invalid_argument("--fp8-obey is for --precision fp8 only"), 2);
  auto sources = ws::parse_tactic_sources(a.tactic_sources);
  if (!sources) return fail(sources.status(), 2);
  auto layout = ws::parse_layout(a.layout);
  if (!layout) return fail(layout.status(), 2);
  // The opt-in NHWC tactic families act only on channels-last fp16 convs: a request that rules them out is refused.
  for (const auto& [on, flag] :
       {std::pair{a.cudnn_graph, "--cudnn-graph"}, std::pair{a.nhwc_igemm, "--nhwc-igemm"}, std::pair{a.cutlass_conv, "--cutlass-conv"},
        std::pair{a.hwc8, "--hwc8"}, std::pair{a.hwc8_port, "--hwc8-port"}}) {
    if (on && precision == ws::Precision::kFloat32)
      return fail(ws::invalid_argument(std::string(flag) + " applies to fp16 channels-last convs: not with --precision fp32 (bench's default; "
                                       "add --precision fp16)"), 2);
    if (on && *layout == ws::Layout::kNchw)
      return fail(ws::invalid_argument(std::string(flag) + " applies to channels-last convs: not with --layout nchw"), 2);
  }
  if (a.nhwc_igemm && !(*sources & ws::kTacticWarpStream))
    return fail(ws::invalid_argument("--nhwc-igemm is a warpstream tactic: --tactic-sources must include warpstream"), 2);
  // Channels-last segments run only with tactic source cudnn (assign_layouts): without it these families never act.
  for (const auto& [on, flag] :
       {std::pair{a.nhwc_igemm, "--nhwc-igemm"}, std::pair{a.cutlass_conv, "--cutlass-conv"}, std::pair{a.hwc8, "--hwc8"},
        std::pair{a.hwc8_port, "--hwc8-port"}})
    if (on && !(*sources & ws::kTacticCudnn))
      return fail(ws::invalid_argument(std::string(flag) + " acts on channels-last convs, which need tactic source cudnn: "
                                       "--tactic-sources must include cudnn"), 2);
  // The cluster split-K form is one of our fp16 pointwise tactics (channels-first convs): refused where it could never run.
  if (a.split_k_cluster && precision == ws::Precision::kFloat32)
    return fail(ws::invalid_argument("--split-k-cluster applies to fp16 pointwise convs: not with --precision fp32 (bench's default; add "
                                     "--precision fp16)"), 2);
  if (a.pooled_head && !(*sources & ws::kTacticWarpStream))
    return fail(ws::invalid_argument("--pooled-head fuses the pool into our GEMV tactic: --tactic-sources must include warpstream"), 2);
  if (a.split_k_cluster && !(*sources & ws::kTacticWarpStream))
    return fail(ws::invalid_argument("--split-k-cluster is a warpstream tactic: --tactic-sources must include warpstream"), 2);
  if (a.cutlass_conv && !(*sources & ws::kTacticWarpStream))
    return fail(ws::invalid_argument("--cutlass-conv is a warpstream tactic: --tactic-sources must include warpstream"), 2);
  if (a.cudnn_graph && !(*sources & ws::kTacticCudnn))
    return fail(ws::invalid_argument("--cudnn-graph is a cudnn tactic: --tactic-sources must include cudnn"), 2);
  // Every host-side check before the device starts: a typo must not cost a GPU start-up or a finished run.
  // the recorders reserve 20,000 samples per second up front (no allocation while timing): bound it
  if (a.duration_given && !(std::isfinite(a.duration_s) && a.duration_s > 0 && a.duration_s <= 600))
    return fail(ws::invalid_argument("--duration must be seconds in (0, 600], got " + std::to_string(a.duration_s)), 2);
  if (a.topk < 1 || a.topk > 32) return fail(ws::invalid_argument("--topk must be 1..32, got " + std::to_string(a.topk)), 2);
  if (a.armed_launch && a.no_cuda_graph)
    return fail(ws::invalid_argument("--armed-launch enqueues the lane's CUDA graph at acquire: it cannot be combined with --no-cuda-graph"), 2);
  if (a.armed_launch && a.lanes > 4)
    return fail(ws::invalid_argument("--armed-launch takes at most 4 lanes (each armed lane's stream holds a hardware queue while it "
                                     "waits for submit), got --lanes " + std::to_string(a.lanes)), 2);
  if (a.device < 0) return fail(ws::invalid_argument("--device must be >= 0"), 2);
  if (src_w > 65536 || src_h > 65536 || src_w * src_h * 3 > (int64_t(1) << 30))
    return fail(ws::invalid_argument("--source " + a.source + " is too large (each side <= 65536, at most 1 GiB of RGB8)"), 2);
  {
    std::error_code ec;
    // read_regular_file's checks without the read: missing, a directory or FIFO, a name too long, no permission
    if (ws::Status st = ws::check_regular_file(a.model, "--model file"); !st.is_ok()) return fail(st, 2);
    if (!a.frame.empty())
      if (ws::Status st = ws::check_regular_file(a.frame, "--frame file"); !st.is_ok()) return fail(st, 2);
    if (!a.image.empty())
      if (ws::Status st = ws::check_regular_file(a.image, "--image file"); !st.is_ok()) return fail(st, 2);
    for (const std::string* out : {&a.json, &a.samples}) {
      if (out->empty()) continue;
      const auto dir = std::filesystem::absolute(*out, ec).parent_path();
      if (!std::filesystem::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
        return fail(ws::invalid_argument("cannot write " + *out + ": directory " + dir.string() + " does not exist or is not writable"), 2);
      if (std::filesystem::is_directory(*out, ec)) return fail(ws::invalid_argument("cannot write " + *out + ": it is a directory"), 2);
    }
  }

  // The model is host work too: a truncated, corrupt or wrongly shaped file is reported before the device.
  auto graph = ws::ir::import_onnx(a.model);
  if (!graph) return fail(graph.status(), 2);
  if (graph->inputs.size() != 1)
    return fail(ws::unsupported(a.model + ": a lane needs exactly one graph input, found " + std::to_string(graph->inputs.size())), 2);
  {
    const ws::ir::Tensor& in = graph->tensor(graph->inputs[0]);
    if (in.dtype != ws::ir::DType::kFloat32 || in.shape.size() != 4 || in.shape[0] != 1 || in.shape[1] != 3)
      return fail(ws::unsupported(a.model + ": input '" + in.name + "' is " + ws::ir::dtype_name(in.dtype) + " " +
                                  ws::ir::shape_string(in.shape) + "; a lane needs float32 [1, 3, H, W]"), 2);
  }

  // FP8 calibration is host work as well (the CPU executor, fp32, over the directory's frames): before the device.
  std::map<std::string, float> fp8_amax;
  size_t fp8_frames = 0;
  if (precision == ws::Precision::kFloat8) {
    auto mc8 = ws::model_config_for(a.model);
    auto amax = ws::calibrate_classifier(a.model, mc8.is_ok() ? *mc8 : ws::ModelConfig{}, a.calibration, {}, &fp8_frames);
    if (!amax) return fail(amax.status(), 2);
    fp8_amax = std::move(amax).value();
  }

  // Device first: the map-host flag must precede every other CUDA use (cuda/device.h).
  // No driver or no GPU: exit 3 as onnx-test does, with the runtime's words ("no usable CUDA device: ...").
  if (ws::Status st = ws::cuda_device_available(); !st.is_ok()) return fail(st, 3);
  if (auto st = ws::cuda::init_device(a.device, ws::cuda::HostWait::kSpin); !st) return fail(st, 2);
  ws::bench::Report rep;
  rep.tool = "warpstream bench";
  rep.date_utc = ws::bench::utc_now_iso8601();
  std::string bus;
  if (auto dr = ws::cuda::device_report(a.device); dr.is_ok()) {
    bus = dr->pci_bus_id;
    rep.env.set("device", dr->to_string());
    rep.env.set("sm_count", dr->sm_count);
    rep.env.set("host_wait", "spin (cudaDeviceScheduleSpin)");
  }
  ws::bench::record_env_start(rep.env, bus);
  ws::bench::record_cuda_versions(rep.env);

  auto& c = rep.config;
  c.runtime = "warpstream";
  c.scope = "end_to_end";
  c.model = std::filesystem::path(a.model).filename().string();
  c.model_sha256 = ws::bench::sha256_file_hex(a.model);
  c.precision = a.precision;
  c.graph_mode = a.no_cuda_graph ? "direct" : "graph";
  c.lanes = a.lanes;
  c.input_mode = a.input;
  c.transfers_included = *input_mode != ws::LaneInput::kDevice;
  c.topk = a.topk;

  std::string frame_what;
  auto frame = make_frame(a, src_w, src_h, frame_what);
  if (!frame) return fail(frame.status(), 2);
  c.source_shape = {src_h, src_w, 3};
  c.notes.push_back("source: " + frame_what);

  ws::ModelConfig mc;
  if (auto m = ws::model_config_for(a.model); m.is_ok()) {
    mc = *m;
    c.notes.push_back("normalisation from the model's JSON sidecar");
  } else {
    c.notes.push_back("no model sidecar: ImageNet mean/std (timing is unaffected)");
  }

  std::fprintf(stderr, "bench: building %s (%s) ...\n", c.model.c_str(), a.precision.c_str());
  const auto tb0 = Clock::now();
  ws::CudaBuildOptions bo;
  bo.precision = precision;
  bo.device = a.device;
  bo.timing_cache_path = a.timing_cache;
  bo.tactic_sources = *sources;
  bo.layout = *layout;
  bo.programmatic_dependent_launch = a.pdl;
  bo.split_k_in_kernel = !a.split_k_reduce_kernel;
  bo.split_k_cluster = a.split_k_cluster;  // CLI11 refuses it with --split-k-reduce-kernel
  bo.fuse_depthwise_pointwise = !a.no_dwpw_fusion;
  bo.fuse_expand_depthwise = !a.no_exdw_fusion;
  bo.fuse_pooled_head = a.pooled_head;
  bo.fuse_stem_pool = !a.no_stem_pool;
  bo.cudnn_graph_convs = a.cudnn_graph;
  bo.nhwc_igemm = a.nhwc_igemm;
  bo.cutlass_convs = a.cutlass_conv;
  bo.hwc8_input = a.hwc8 || a.hwc8_port;
  bo.hwc8_input_port = a.hwc8_port;
  bo.max_aux_streams = a.aux_streams;
  if (precision == ws::Precision::kFloat8) {
    bo.fp8_activation_amax = std::move(fp8_amax);
    bo.fp8_obey_precision = a.fp8_obey;
    rep.env.set("engine_fp8_obey_precision", a.fp8_obey ? "on" : "off");
    rep.env.set("engine_fp8_calibration_frames", fp8_frames);
    rep.env.set("engine_fp8_calibration_dir", a.calibration);
  }
  if (a.frame_tune > 0) {  // the frame-level tactic check edits the timing cache the build below reads
    ws::FrameTuneOptions fo;
    fo.max_flips = a.frame_tune;
    std::fprintf(stderr, "bench: frame-level tactic check (up to %d flips) ...\n", a.frame_tune);
    auto tuned = ws::CudaEngine::tune_frame(graph.value(), bo, fo);
    if (!tuned) return fail(tuned.status());
    nlohmann::json flips = nlohmann::json::array();
    size_t kept = 0;
    for (const ws::FrameTuneFlip& f : tuned->flips) {
      kept += f.kept;
      std::fprintf(stderr, "  %s %s: %s (%.2f us alone) -> %s (%.2f us); frame %.2f -> %.2f us, %d rounds won%s%s%s\n", f.kept ? "KEPT" : "    ",
                   f.cache_key.c_str(), f.from.c_str(), f.from_us, f.to.c_str(), f.to_us, f.frame_us, f.flipped_frame_us, f.rounds_won,
                   f.retimed_entries > 0 ? ("; " + std::to_string(f.retimed_entries) + " entries timed alone").c_str() : "",
                   f.note.empty() ? "" : "; ", f.note.c_str());
      flips.push_back({{"cache_key", f.cache_key}, {"from", f.from}, {"to", f.to}, {"from_us", f.from_us}, {"to_us", f.to_us},
                       {"frame_us", f.frame_us}, {"flipped_frame_us", f.flipped_frame_us}, {"rounds_won", f.rounds_won},
                       {"retimed_entries", f.retimed_entries}, {"kept", f.kept}, {"note", f.note}});
    }
    std::fprintf(stderr, "bench: frame check: %zu entries, %zu contested, %zu flips tried, %zu kept; frame %.2f -> %.2f us (%d of %d rounds)%s; "
                 "%d builds, %.1f s\n", tuned->entries, tuned->contested, tuned->flips.size(), kept, tuned->frame_before_us,
                 tuned->frame_after_us, tuned->final_rounds_won, fo.rounds, tuned->reverted ? ", reverted to the build's choices" : "",
                 tuned->builds, tuned->seconds);
    rep.env.set("frame_tune", {{"max_flips", fo.max_flips}, {"max_gap", fo.max_gap}, {"replays", fo.replays}, {"rounds", fo.rounds},
                               {"min_gain_us", fo.min_gain_us}, {"entries", tuned->entries}, {"contested", tuned->contested},
                               {"kept", kept}, {"frame_before_us", tuned->frame_before_us}, {"frame_after_us", tuned->frame_after_us},
                               {"final_rounds_won", tuned->final_rounds_won}, {"reverted", tuned->reverted}, {"builds", tuned->builds},
                               {"seconds", tuned->seconds}, {"flips", std::move(flips)}});
  }
  auto built = ws::CudaEngine::build(std::move(graph).value(), bo);
  if (!built) return fail(built.status());
  std::shared_ptr<ws::CudaEngine> engine = std::move(built).value();
  const auto& ind = engine->input_desc(0).shape;
  c.network_input_shape.assign(ind.begin(), ind.end());
  rep.env.set("engine_build_s", std::chrono::duration<double>(Clock::now() - tb0).count());
  rep.env.set("engine_kernels_per_enqueue", engine->kernel_count());
  if (precision == ws::Precision::kFloat8) {
    size_t fp8_convs = 0;
    for (const ws::TacticRecord& t : engine->tactics()) fp8_convs += t.choice.rfind("ws pointwise FP8", 0) == 0;
    rep.env.set("engine_fp8_convs", fp8_convs);
  }
  {  // tactics timed in this process: its later frames may be slower than a process reading the cache (device runs 100-101)
    size_t timed = 0;
    for (const ws::TacticRecord& t : engine->tactics()) timed += !t.from_cache && !t.same_problem && t.time_us > 0;
    rep.env.set("engine_tactics_timed_in_process", timed);
    if (timed > 0) {
      const std::string note = std::to_string(timed) + " tactics were timed in this process: its frames can be slower than a process that "
                               "reads the timing cache (ResNet-50 fp16: +21 us GPU p50 on the same choices, device runs 100-101); "
                               "for deployment numbers run again with the same --timing-cache";
      c.notes.push_back(note);
      std::fprintf(stderr, "bench: note: %s\n", note.c_str());
    }
  }
  rep.env.set("engine_weight_bytes", engine->weight_bytes());
  rep.env.set("engine_arena_bytes", engine->arena_bytes());
  rep.env.set("engine_tactic_sources", ws::tactic_sources_string(*sources));
  // as asked; the build applies it on compute capability >= 9.0 only (the device string names the sm)
  rep.env.set("engine_pdl", a.pdl ? "on" : "off");
  rep.env.set("engine_split_k_reduction", a.split_k_reduce_kernel ? "second kernel"
                                          : a.split_k_cluster      ? "timed: second kernel, in-kernel or over a cluster (fp16 NCHW convs, sm_90+)"
                                                                   : "timed: second kernel or in-kernel");
  {  // depthwise -> pointwise pairs run as one fused kernel (chosen by timing against the pair)
    size_t fused = 0;
    for (const ws::TacticRecord& t : engine->tactics()) fused += t.choice.rfind("ws depthwise->pointwise fused", 0) == 0;
    rep.env.set("engine_dwpw_fusion", a.no_dwpw_fusion ? "off" : "timed");
    rep.env.set("engine_dwpw_fused", fused);
    size_t exdw = 0;  // expand -> depthwise pairs run as one fused kernel
    for (const ws::TacticRecord& t : engine->tactics()) exdw += t.choice.rfind("ws expand->depthwise fused", 0) == 0;
    rep.env.set("engine_exdw_fusion", a.no_dwpw_fusion || a.no_exdw_fusion ? "off" : "timed");
    rep.env.set("engine_exdw_fused", exdw);
    size_t pooled = 0;  // GlobalAveragePool -> GEMV heads run as one kernel
    for (const ws::TacticRecord& t : engine->tactics()) pooled += t.choice.rfind("ws pooled gemv", 0) == 0;
    rep.env.set("engine_pooled_head", a.pooled_head ? "on where the head's GEMV tactic won" : "off");
    rep.env.set("engine_pooled_heads_fused", pooled);
    size_t stems = 0;  // Conv 7x7 + MaxPool stems run as one kernel
    for (const ws::TacticRecord& t : engine->tactics()) stems += t.op_type == "MaxPool" && t.choice.rfind("ws stem:", 0) == 0;
    rep.env.set("engine_stem_pool", a.no_stem_pool ? "off" : "on where the stem form applies");
    rep.env.set("engine_stem_pools_fused", stems);
    rep.env.set("engine_copies_folded", engine->folded_copies());
    // The opt-in NHWC tactic families: how many convs each bound. One that bound nothing is said so (fp32, an NCHW build,
    // no cudnn-frontend headers, or simply slower): a flag that did nothing must not read as "timed".
    auto opt_in = [&](bool on, const char* prefix, const char* key, const char* flag, const char* applies) {
      size_t n = 0;
      for (const ws::TacticRecord& t : engine->tactics()) n += t.choice.rfind(prefix, 0) == 0;
      rep.env.set(key, !on ? "off" : n ? "timed" : "timed: no conv chose it or none applies");
      rep.env.set(std::string(key) + "_convs", n);
      if (on && n == 0) std::fprintf(stderr, "bench: warning: %s: no conv runs on it (it applies to %s)\n", flag, applies);
    };
    opt_in(a.cudnn_graph, "cudnn graph", "engine_cudnn_graph", "--cudnn-graph",
           "NHWC fp16 dense convs in a build with the cudnn-frontend headers, scripts/fetch-cudnn-frontend.sh; or the legacy algorithms were faster");
    opt_in(a.nhwc_igemm, "ws nhwc implicit GEMM", "engine_nhwc_igemm", "--nhwc-igemm",
           "NHWC fp16 dense convs with c_in % 64 == 0 and c_out % 8 == 0, tactic sources warpstream and cudnn, compute capability "
           ">= 9.0 in a build with sm_90 code; or cuDNN was faster");
    opt_in(a.cutlass_conv, "cutlass implicit GEMM", "engine_cutlass_conv", "--cutlass-conv",
           "NHWC fp16 dense convs without a fused residual, c_in and c_out multiples of 8, tactic sources warpstream and cudnn, "
           "compute capability 9.0, in a build with the CUTLASS headers (scripts/fetch-cutlass-headers.sh); or cuDNN was faster");
  }
  {  // the layout asked for, and the one the build ran (nhwc when any step runs channels-last)
    size_t reformats = 0, nhwc_steps = 0, hwc8 = 0, hwc8_ports = 0;
    for (const auto& r : engine->tactics()) {
      reformats += r.op_type == "Reformat";
      hwc8 += r.op_type == "Reformat" && r.choice.find("(kHWC8)") != std::string::npos;
      hwc8_ports += r.op_type == "Port" && r.choice.find("kHWC8") != std::string::npos;
      nhwc_steps += r.op_type != "Reformat" && r.choice.find("NHWC") != std::string::npos;
    }
    hwc8 += hwc8_ports;  // a padded copy the lanes' preprocess writes at the kHWC8 port (its reformat removed)
    rep.env.set("engine_layout_requested", ws::layout_name(*layout));
    rep.env.set("engine_layout", nhwc_steps > 0 ? "nhwc" : "nchw");
    rep.env.set("engine_reformats", reformats);
    rep.env.set("engine_nhwc_steps", nhwc_steps);
    const bool hwc8_on = a.hwc8 || a.hwc8_port;
    rep.env.set("engine_hwc8", !hwc8_on ? "off" : hwc8 ? "on" : "on: no reformat padded (no channels-last input with under 8 channels read by convs only)");
    rep.env.set("engine_hwc8_pads", hwc8);
    // the kHWC8 input port: the padded copy written by the lanes' NHWC8 preprocess, its reformat kernel gone
    rep.env.set("engine_hwc8_port", !a.hwc8_port ? "off" : hwc8_ports ? "on"
                                   : "on: no input taken in kHWC8 (its reformat was not padded, or the input has other readers)");
    rep.env.set("engine_hwc8_ports", hwc8_ports);
    if (a.hwc8_port && hwc8_ports == 0)
      std::fprintf(stderr, "bench: warning: --hwc8-port: the input stays NCHW (no padded reformat of it to remove; "
                           "engine_hwc8_pads %zu)\n", hwc8);
  }
  {  // parallel branches on the auxiliary stream (CudaBuildOptions::max_aux_streams): how many steps run there
    size_t branched = 0;
    for (const auto& r : engine->tactics()) branched += r.choice.find("on the auxiliary stream") != std::string::npos;
    rep.env.set("engine_aux_streams", a.aux_streams);
    rep.env.set("engine_aux_branches", branched);
  }
  {
    nlohmann::json t = nlohmann::json::array();  // per node: the tactic chosen at build and its timed µs
    for (const auto& r : engine->tactics()) t.push_back({{"node", r.node}, {"op", r.op_type}, {"choice", r.choice}, {"us", r.time_us}});
    rep.env.set("engine_tactics", std::move(t));
  }

  ws::PipelineOptions po;
  po.lanes = a.lanes;
  po.src_width = src_w;
  po.src_height = src_h;
  po.k = a.topk;
  po.input = *input_mode;
  po.use_cuda_graph = !a.no_cuda_graph;
  po.normalize = mc.normalize;
  po.input_wavefront = a.input_wavefront;
  po.input_wavefront_steps = a.input_wavefront_steps;
  po.armed_launch = a.armed_launch;
  std::vector<ws::cuda::DeviceBuffer> device_frames;
  if (*input_mode == ws::LaneInput::kDevice) {
    for (int i = 0; i < a.lanes; ++i) {
      auto buf = ws::cuda::DeviceBuffer::allocate(frame->size());
      if (!buf) return fail(buf.status());
      if (ws::Status up = ws::cuda::copy_to_device(buf->get(), frame->data(), frame->size()); !up.is_ok()) return fail(up);
      po.device_inputs.push_back(buf->get());
      device_frames.push_back(std::move(buf).value());
    }
  }
  // Per-step GPU time of the network alone (its own context and stream). After the timed loop by default, so it cannot
  // disturb the frames timed. The order turned out not to matter (device run 100: 309.0 µs with the profile first, 309.6
  // after); what made a ResNet-50 row ~20 µs slower was timing its tactics in the same process (runs 100-101,
  // engine_tactics_timed_in_process; docs/lanes-plan.md).
  auto run_profile = [&]() -> ws::Status {
    auto ctx = engine->create_context();
    if (!ctx) return ctx.status();
    auto stream = ws::cuda::Stream::create();
    if (!stream) return stream.status();
    auto prof = (*ctx)->profile_layers(stream->get(), a.profile_layers);
    if (!prof) return prof.status();
    nlohmann::json rows = nlohmann::json::array();
    double total = 0;
    for (const auto& l : *prof) {
      rows.push_back({{"node", l.node}, {"op", l.op_type}, {"tactic", l.tactic}, {"kernels", l.kernels},
                      {"median_us", l.median_us}, {"p99_us", l.p99_us}});
      total += l.median_us;
    }
    rep.env.set("layer_profile", std::move(rows));
    rep.env.set("layer_profile_reps", a.profile_layers);
    rep.env.set("layer_profile_order", a.profile_first ? "before the timed loop" : "after the timed loop");
    std::vector<ws::ExecutionContext::LayerTiming> top(prof->begin(), prof->end());
    std::sort(top.begin(), top.end(), [](const auto& x, const auto& y) { return x.median_us > y.median_us; });
    std::fprintf(stderr, "bench: layer profile (%d reps, %zu steps, sum of medians %.1f us); slowest:\n", a.profile_layers,
                 prof->size(), total);
    for (size_t i = 0; i < top.size() && i < 12; ++i)
      std::fprintf(stderr, "  %8.2f us  %-10s %-28s %s\n", top[i].median_us, top[i].op_type.c_str(), top[i].node.c_str(),
                   top[i].tactic.c_str());
    return ws::Status::ok();
  };
  if (a.profile_layers > 0 && a.profile_first)
    if (ws::Status st = run_profile(); !st.is_ok()) return fail(st);
  // The launch path's state before the lanes exist (bench/launch_probe.h; before the pipeline: an armed lane's stream
  // could share a hardware queue with the probe's) and again after the timed loop.
  auto probe_launch = [&](const char* when) {
    auto us = ws::bench::launch_probe_us_per_node();
    if (us) rep.env.set(std::string("launch_probe_us_per_node_") + when, std::round(*us * 1000.0) / 1000.0);
    else rep.env.unavailable(std::string("launch_probe_us_per_node_") + when, us.status().to_string());
  };
  probe_launch("start");
  auto built_pipe = ws::Pipeline::build(engine, po);
  if (!built_pipe) return fail(built_pipe.status());
  ws::Pipeline& pipe = **built_pipe;
  rep.env.set("lanes_input_wavefront", a.input_wavefront ? pipe.wavefront_state() : std::string("off"));
  rep.env.set("lanes_armed_launch", a.armed_launch ? std::string("on: the graph launch is enqueued at acquire behind a doorbell; submit rings it")
                                                   : std::string("off"));
  if (a.input_wavefront && pipe.wavefront_state().rfind("on", 0) != 0)
    std::fprintf(stderr, "bench: warning: --input-wavefront: %s\n", pipe.wavefront_state().c_str());
  // The producer's write of the frame into the slot is outside every interval: each lane's slot is filled
  // once here and keeps the frame (slots are per lane and never reused by another lane).
  if (*input_mode != ws::LaneInput::kDevice) {
    for (int i = 0; i < a.lanes; ++i) {
      auto lane = pipe.acquire(static_cast<size_t>(i));
      if (!lane) return fail(lane.status());
      auto slot = pipe.input(*lane);
      std::memcpy(slot.data(), frame->data(), frame->size());
      if (auto st = pipe.release(*lane); !st) return fail(st);
    }
  }

  // ---- measured loop: lane i is driven by producer thread i ---------------------------------------------
  const int per_lane_iters = (a.iterations + a.lanes - 1) / a.lanes;
  const size_t capacity = a.duration_s > 0 ? static_cast<size_t>(a.duration_s * 20000) + 16
                                           : static_cast<size_t>(per_lane_iters);
  std::vector<LaneRecorders> rec(static_cast<size_t>(a.lanes));
  for (auto& r : rec) {
    r.host.reserve(capacity);
    r.gpu.reserve(capacity);
    r.enqueue.reserve(capacity);
    r.acquire.reserve(capacity);
  }
  std::atomic<size_t> done{0};
  std::atomic<bool> stop{false};
  Clock::time_point t_start, t_end;
  std::barrier sync(a.lanes, [&]() noexcept { t_start = Clock::now(); });
  const int expected_top1_unset = -1;
  std::vector<int32_t> top1(static_cast<size_t>(a.lanes), expected_top1_unset);

  auto producer = [&](int li) {
    LaneRecorders& r = rec[static_cast<size_t>(li)];
    auto one = [&](bool timed) -> bool {
      const auto ta = Clock::now();
      auto lane = pipe.acquire(static_cast<size_t>(li));
      if (!lane) { r.error = lane.status().to_string(); return false; }
      const auto t0 = Clock::now();
      ws::Status st;
      {
        ws::bench::NvtxRange nr("submit");
        st = pipe.submit(*lane, src_w, src_h);
      }
      const auto t1 = Clock::now();
      if (!st) { r.error = st.to_string(); return false; }
      ws::Result<std::span<const ws::TopKEntry>> top = ws::internal_error("unset");
      {
        ws::bench::NvtxRange nr("wait");
        top = pipe.wait(*lane);
      }
      const auto t2 = Clock::now();
      if (!top) { r.error = top.status().to_string(); return false; }
      const int32_t idx = (*top)[0].index;
      if (top1[static_cast<size_t>(li)] == expected_top1_unset) top1[static_cast<size_t>(li)] = idx;
      else if (idx != top1[static_cast<size_t>(li)]) ++r.mismatches;
      if (timed) {
        r.enqueue.record(us_since(t0, t1));
        r.acquire.record(us_since(ta, t0));
        r.host.record(us_since(t0, t2));
        if (auto ms = pipe.gpu_time_ms(*lane); ms.is_ok()) r.gpu.record(*ms * 1000.0);
        done.fetch_add(1, std::memory_order_relaxed);
      }
      if (auto rs = pipe.release(*lane); !rs) { r.error = rs.to_string(); return false; }
      return true;
    };
    bool ok = true;
    for (int i = 0; i < a.warmup && ok; ++i) ok = one(false);
    sync.arrive_and_wait();  // timed phase starts together (t_start set by the completion step)
    if (!ok) return;
    if (a.duration_s > 0) {
      const auto deadline = t_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.duration_s));
      while (ok && Clock::now() < deadline) ok = one(true);
    } else {
      for (int i = 0; i < per_lane_iters && ok; ++i) ok = one(true);
    }
  };

  std::fprintf(stderr, "bench: %d lane(s), %s, input %s, %d warm-up + %s per lane\n", a.lanes, c.graph_mode.c_str(),
               a.input.c_str(), a.warmup,
               a.duration_s > 0 ? (std::to_string(a.duration_s) + " s").c_str() : std::to_string(per_lane_iters).c_str());
  std::vector<std::thread> threads;
  for (int i = 0; i < a.lanes; ++i) threads.emplace_back(producer, i);
  // Progress bar (stderr, only on a terminal, from the third second on).
  std::thread progress;
  if (!a.no_progress && isatty(STDERR_FILENO)) {
    progress = std::thread([&] {
      const auto p0 = Clock::now();
      const double total = a.duration_s > 0 ? a.duration_s : double(per_lane_iters) * a.lanes;
      bool shown = false;
      while (!stop.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        const double el = std::chrono::duration<double>(Clock::now() - p0).count();
        if (el < 3 && !shown) continue;
        shown = true;
        const double frac = a.duration_s > 0 ? std::min(1.0, el / total) : std::min(1.0, double(done.load()) / total);
        const int bars = static_cast<int>(frac * 40);
        std::fprintf(stderr, "\r[%-40s] %3.0f%% %zu frames", std::string(static_cast<size_t>(bars), '#').c_str(),
                     frac * 100, done.load());
      }
      if (shown) std::fprintf(stderr, "\n");
    });
  }
  for (auto& t : threads) t.join();
  t_end = Clock::now();
  stop.store(true);
  if (progress.joinable()) progress.join();
  ws::bench::record_env_point(rep.env, bus, "end");
  probe_launch("end");
  for (const auto& r : rec)
    if (!r.error.empty()) return fail(ws::Status(ws::StatusCode::kCuda, "bench: " + r.error));
  if (a.profile_layers > 0 && !a.profile_first)  // a failure here (e.g. no memory for one more context) keeps the timed run
    if (ws::Status st = run_profile(); !st.is_ok()) {
      rep.warnings.push_back("--profile-layers after the timed loop failed: " + st.to_string());
      rep.env.set("layer_profile_error", st.to_string());
    }

  // ---- statistics ---------------------------------------------------------------------------------------
  std::vector<double> host, gpu, enq, acq;
  size_t mismatches = 0;
  for (const auto& r : rec) {
    host.insert(host.end(), r.host.samples().begin(), r.host.samples().end());
    gpu.insert(gpu.end(), r.gpu.samples().begin(), r.gpu.samples().end());
    enq.insert(enq.end(), r.enqueue.samples().begin(), r.enqueue.samples().end());
    acq.insert(acq.end(), r.acquire.samples().begin(), r.acquire.samples().end());
    rep.dropped_samples += r.host.dropped();
    mismatches += r.mismatches;
  }
  const size_t warm = static_cast<size_t>(a.warmup) * static_cast<size_t>(a.lanes);
  rep.wall_s = std::chrono::duration<double>(t_end - t_start).count();
  rep.throughput_fps = rep.wall_s > 0 ? double(done.load()) / rep.wall_s : 0;
  rep.metrics.push_back({"host_latency_us",
                         a.armed_launch ? "host wall clock: submit() called (rings the doorbell of the frame enqueued at acquire) -> "
                                          "wait() returned with Top-K read from mapped memory"
                                        : "host wall clock: submit() called -> wait() returned with Top-K read from mapped memory",
                         ws::bench::compute_stats(host, warm), host});
  rep.metrics.push_back({"gpu_time_us",
                         a.armed_launch ? "CUDA events: lane start event (after the doorbell wait, before the graph) -> end event (after Top-K)"
                                        : "CUDA events: lane start event (before the graph launch) -> end event (after Top-K)",
                         ws::bench::compute_stats(gpu, warm), gpu});
  rep.metrics.push_back({"enqueue_us", a.armed_launch ? "host wall clock inside submit() (the doorbell store)"
                                                      : "host wall clock inside submit() (event records + graph launch / enqueue)",
                         ws::bench::compute_stats(enq, warm), enq});
  rep.metrics.push_back({"acquire_us", a.armed_launch ? "host wall clock inside acquire() (with --armed-launch: the event records and "
                                                        "graph launch behind the doorbell; outside host_latency_us, as in use the "
                                                        "producer writes the frame after it)"
                                                      : "host wall clock inside acquire() (outside host_latency_us)",
                         ws::bench::compute_stats(acq, warm), acq});
  rep.primary = "host_latency_us";
  const auto& hs = rep.metrics[0].stats;
  const auto& es = rep.metrics[2].stats;
  if (hs.p50 > 0 && es.p50 > 0.5 * hs.p50)
    rep.warnings.push_back("enqueue p50 is " + std::to_string(int(100 * es.p50 / hs.p50)) +
                           "% of host latency p50: the host launch dominates (trtexec's enqueue-bound warning)");
  if (a.armed_launch) {
    rep.env.set("lanes_armed_failures", pipe.armed_failures());
    if (pipe.armed_failures() > 0)
      rep.warnings.push_back(std::to_string(pipe.armed_failures()) + " acquires could not arm their lane (a CUDA error): those frames "
                             "were launched by submit as without --armed-launch");
  }
  if (rep.dropped_samples) rep.warnings.push_back(std::to_string(rep.dropped_samples) + " samples past the recorder capacity were not kept");
  rep.env.set("result_check", mismatches == 0 ? "ok: every frame's top-1 equals the lane's first frame's"
                                              : "MISMATCH: " + std::to_string(mismatches) + " frames with another top-1");
  rep.env.set("top1_index", top1[0]);
  rep.label = a.label.empty() ? (std::filesystem::path(a.model).stem().string() + " " + a.precision + " " +
                                 c.graph_mode + " " + a.input + " " + std::to_string(a.lanes) + "L")
                              : a.label;

  // ---- print (trtexec's shape: one line per interval) ---------------------------------------------------
  std::printf("%s  (%s, %zu timed frames after %zu warm-up, %.0f frames/s over %d lane(s))\n", rep.label.c_str(),
              rep.env.fields.value("gpu_name", std::string("?")).c_str(), hs.count, warm, rep.throughput_fps, a.lanes);
  std::printf("%-16s %9s %9s %9s %9s %9s %9s %9s %9s %7s\n", "interval (us)", "min", "mean", "p50", "p90", "p95", "p99",
              "p99.9", "max", "CoV");
  for (const auto& m : rep.metrics) {
    const auto& s = m.stats;
    std::printf("%-16s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7.3f\n", m.name.c_str(), s.min, s.mean, s.p50,
                s.p90, s.p95, s.p99, s.p99_9, s.max, s.cov);
  }
  std::printf("check: %s\n", rep.env.fields["result_check"].get<std::string>().c_str());
  if (rep.env.fields.value("launch_probe_us_per_node_start", nlohmann::json()).is_number() &&
      rep.env.fields.value("launch_probe_us_per_node_end", nlohmann::json()).is_number())
    std::printf("launch path: %.3f us per graph node before the lanes, %.3f after the timed loop (58 empty kernels; "
                "bench/launch_probe.h)\n", rep.env.fields["launch_probe_us_per_node_start"].get<double>(),
                rep.env.fields["launch_probe_us_per_node_end"].get<double>());
  for (const auto& w : rep.warnings) std::printf("WARNING: %s\n", w.c_str());

  if (!a.samples.empty()) {
    if (auto st = ws::bench::write_samples_csv(rep.metrics, a.samples); !st) return fail(st);
    rep.samples_csv = a.samples;
  }
  if (!a.json.empty())
    if (auto st = ws::bench::write_report_json(rep, a.json); !st) return fail(st);
  return mismatches == 0 ? 0 : 1;
}
#endif

int run_bench_entry(const BenchArgs& a) {
#ifndef WS_HAVE_CUDA
  (void)a;
  std::fprintf(stderr, "error: bench: this warpstream was built without CUDA (the lanes rail needs a GPU)\n");
  return 2;
#else
  return run_bench(a);
#endif
}

}  // namespace

WS_REGISTER_COMMAND(bench, "bench",
                    "Latency benchmark of the lanes rail: host/GPU/enqueue percentiles, environment record, JSON + CSV",
                    [](CLI::App& sub) -> std::function<int()> {
                      auto a = std::make_shared<BenchArgs>();
                      sub.add_option("--model", a->model, "ONNX model (fixed shape, batch 1)")->required();
                      sub.add_option("--lanes", a->lanes, "lanes, each driven by its own producer thread (default 1)");
                      sub.add_option("--warmup", a->warmup, "warm-up frames per lane, not timed (default 200)");
                      auto* it = sub.add_option("--iterations", a->iterations, "timed frames over all lanes (default 2000)");
                      auto* du = sub.add_option("--duration", a->duration_s, "timed seconds instead of --iterations");
                      it->excludes(du);
                      sub.add_flag("--no-cuda-graph", a->no_cuda_graph, "enqueue the stages directly instead of a graph launch");
                      sub.add_option("--input", a->input, "mapped | copy | device (default mapped)");
                      sub.add_option("--precision", a->precision, "fp32 | fp16 | fp8 (default fp32; fp8 needs --calibration)");
                      sub.add_option("--calibration", a->calibration, "fp8: directory of PNG/JPEG frames whose activation ranges set the FP8 scales");
                      sub.add_flag("--fp8-obey", a->fp8_obey, "fp8: run every calibrated pointwise conv in FP8 (default: FP8 timed beside fp16, fastest wins)");
                      sub.add_option("--tactic-sources", a->tactic_sources,
                                     "kernel families the engine build may choose from: comma-separated cudnn, cublaslt, warpstream or all (default all)");
                      auto* pdl_on = sub.add_flag_callback("--pdl", [a] { a->pdl = true; },
                                            "launch our conv kernels with programmatic dependent launch on sm_90+ (the default: measured faster since "
                                            "run 52, docs/cuda-executor.md)");
                      sub.add_flag_callback("--no-pdl", [a] { a->pdl = false; }, "launch our conv kernels without programmatic dependent launch")
                          ->excludes(pdl_on);
                      sub.add_flag("--no-dwpw-fusion", a->no_dwpw_fusion,
                                   "run each conv of an MBConv block as its own kernel: no depthwise->pointwise, expand->depthwise or "
                                   "whole-block fusion (default: fused kernels where timed faster)");
                      sub.add_flag("--no-exdw-fusion", a->no_exdw_fusion,
                                   "do not try the fused expand->depthwise kernel (default: one kernel for a 1x1 expand conv and the "
                                   "depthwise conv after it where timed faster)");
                      sub.add_flag("--pooled-head", a->pooled_head,
                                   "run a classifier head's GlobalAveragePool and its GEMV as one fused kernel where the GEMV tactic "
                                   "won (default off: slower in device run 110)");
                      sub.add_flag("--no-stem-pool", a->no_stem_pool,
                                   "run a ResNet stem (conv 7x7/2 from the 3-channel input + its ReLU + max pool 3x3/2) as cuDNN's conv "
                                   "and pool after an input reformat (default: one kernel of ours reading the input NCHW and writing "
                                   "channels-last, fp16 channels-last plans; faster in device run 111)")
                          ->disable_flag_override();  // no value: --no-stem-pool=false would be a double negative
                      sub.add_flag("--cudnn-graph", a->cudnn_graph,
                                   "also build each NHWC conv + bias (+ residual) (+ ReLU) as one cuDNN graph and time its engine "
                                   "configurations as tactics (default off: with several lanes running concurrently it gave wrong "
                                   "frames in device runs 71 and 73; docs/cuda-executor.md)");
                      sub.add_flag("--nhwc-igemm", a->nhwc_igemm,
                                   "also time our NHWC fp16 implicit-GEMM conv (split-K across a thread-block cluster, sm_90) for "
                                   "channels-last convs (default off until a device run shows it faster; docs/cuda-executor.md)");
                      sub.add_flag("--cutlass-conv", a->cutlass_conv,
                                   "also time CUTLASS's implicit-GEMM conv with serial split-K for channels-last fp16 convs without a "
                                   "residual, compute capability 9.0 only (default off: it won only the --hwc8 stem in device run 72; needs the CUTLASS headers at "
                                   "build, scripts/fetch-cutlass-headers.sh; docs/cuda-executor.md)");
                      sub.add_flag("--hwc8", a->hwc8,
                                   "pad a channels-last first-layer input (fewer than 8 channels, e.g. RGB) to 8 zero channels and its "
                                   "convs' weights to match (TensorRT's kHWC8; default off: with cuDNN alone no faster, the stem gains on --cutlass-conv's "
                                   "c8 tile; docs/cuda-executor.md)");
                      sub.add_flag("--hwc8-port", a->hwc8_port,
                                   "--hwc8, and the engine takes that padded input in kHWC8 at its port: the lanes' preprocess writes "
                                   "NHWC with 8 channels itself and the reformat kernel goes (TensorRT's setAllowedFormats(kHWC8); "
                                   "default off: it changes the engine input's layout; docs/cuda-executor.md)");
                      sub.add_option("--aux-streams", a->aux_streams,
                                     "auxiliary streams for parallel branches (TensorRT's setMaxAuxStreams): 1 runs a residual's "
                                     "shortcut conv (ResNet's downsample) beside the main branch, joined before its reader "
                                     "(default 0: every step in order on one stream; one auxiliary stream is the most used; "
                                     "docs/cuda-executor.md)")
                          ->check(CLI::Range(0, 1));
                      sub.add_flag("--armed-launch", a->armed_launch,
                                   "enqueue each lane's frame when the lane is acquired, behind a doorbell in mapped host memory, so that "
                                   "submit() only rings it: the graph launch's host time leaves the frame's latency (PipelineOptions::"
                                   "armed_launch; graph mode, at most 4 lanes; default off)");
                      sub.add_flag("--input-wavefront", a->input_wavefront,
                                   "the lanes' preprocess publishes the network input row by row and the first conv starts on the rows "
                                   "already written while the frame still crosses PCIe (PipelineOptions::input_wavefront; default off: measured "
                                   "slower, docs/lanes-plan.md)");
                      sub.add_option("--input-wavefront-steps", a->input_wavefront_steps,
                                     "with --input-wavefront: 1 = the stem alone waits on the input's rows, 2 = also the step after it on "
                                     "the stem's output rows, where it is our fused 3x3 depthwise->pointwise kernel (default 2)")
                          ->check(CLI::Range(1, 2))
                          ->needs("--input-wavefront");
                      sub.add_flag("--split-k-reduce-kernel", a->split_k_reduce_kernel,
                                   "reduce split-K convs' partials in a second kernel only (default: the in-GEMM reduction is timed beside it per conv)");
                      sub.add_flag("--split-k-cluster", a->split_k_cluster,
                                   "also time split-K convs reduced across a thread-block cluster (DSMEM; fp16 NCHW convs on sm_90+; default "
                                   "off: it loses inside the frame's graph, docs/cuda-executor.md)")
                          ->excludes("--split-k-reduce-kernel");
                      sub.add_option("--layout", a->layout,
                                     "activation layout inside the engine: auto | nchw | nhwc (default auto: nhwc for fp16 models without grouped convs, "
                                     "tactic source cudnn; nhwc needs cudnn)");
                      auto* src = sub.add_option("--source", a->source, "source frame WxH (default 1920x1080)");
                      auto* img = sub.add_option("--image", a->image, "photo as the frame (PNG/JPEG; its own size)");
                      sub.add_option("--frame", a->frame, "raw RGB8 frame file of --source size (tools/make_frame.py)");
                      img->excludes(src);
                      sub.add_option("--topk", a->topk, "K (default 5)");
                      sub.add_option("--json", a->json, "write the report (schema warpstream-bench/1)");
                      sub.add_option("--samples", a->samples, "write every timed sample (CSV)");
                      sub.add_option("--label", a->label, "row name in compare tables and plots");
                      sub.add_option("--timing-cache", a->timing_cache, "engine timing cache file");
                      sub.add_option("--frame-tune", a->frame_tune,
                                     "before the build, the frame-level tactic check: flip up to N contested tactic choices one at a "
                                     "time (a runner-up within 15% of the winner alone), time the whole captured frame against the "
                                     "current plan and keep the flips that make it faster, in the timing cache (needs --timing-cache; "
                                     "default 0: off; docs/cuda-executor.md)")
                          ->check(CLI::Range(0, 256))
                          ->needs("--timing-cache");
                      sub.add_option("--device", a->device, "CUDA device index (default 0)");
                      sub.add_flag("--no-progress", a->no_progress, "no progress bar");
                      sub.add_option("--profile-layers", a->profile_layers,
                                     "also time each step of the network alone over N replays, after the timed loop (report: layer_profile)")
                          ->check(CLI::Range(0, 100000));
                      sub.add_flag("--profile-first", a->profile_first,
                                   "run --profile-layers before the timed loop instead of after it (the order until device run 97; "
                                   "for comparing the two, docs/lanes-plan.md)")
                          ->needs("--profile-layers");
                      return [=] {
                        a->duration_given = du->count() > 0;
                        return run_bench_entry(*a);
                      };
                    });
