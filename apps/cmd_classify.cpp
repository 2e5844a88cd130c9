// `warpstream classify --model M.onnx --labels L.txt IMAGE... [--topk K] [--device cpu|cuda|auto] [--json]
//   [--precision fp32|fp16|fp8 [--calibration DIR]] [--no-cuda-graph] [--input mapped|copy|device] [--tactic-sources cudnn,warpstream]
//   [--layout auto|nchw|nhwc]`
// Decodes each image, runs preprocess → network → Top-K, prints labels and scores per image and
// which backend ran. On cuda the frame goes through one lane (warpstream/lanes.h: LaneClassifier);
// auto picks cuda when a GPU is present and the engine builds, else cpu with the reason printed.
// Exit code 0 ok, 2 on any bad input (model, labels, image, K).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "command.h"
#include "core/escape.h"
#include "warpstream/classifier.h"
#include "warpstream/cuda_engine.h"
#ifdef WS_HAVE_CUDA
#include "warpstream/lanes.h"
#endif

namespace ws::app {
namespace {

struct Options {
  std::string model, labels, config, device = "auto";
  std::vector<std::string> images;
  int topk = 5;
  int repeat = 1;
  std::string input_shape;
  bool json = false;
  std::string precision = "fp32", input = "mapped", timing_cache;
  std::string tactic_sources = "all";
  std::string layout = "auto";
  std::string calibration;  // --calibration DIR (precision fp8)
  bool fp8_obey = false;    // --fp8-obey
  bool no_cuda_graph = false;
};

int fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 2;
}

int run(const Options& opt) {
  if (opt.topk < 1 || opt.topk > kMaxTopK) {
    return fail(invalid_argument("--topk " + std::to_string(opt.topk) + " is out of range 1.." + std::to_string(kMaxTopK)));
  }
  auto sources = parse_tactic_sources(opt.tactic_sources);  // checked whatever the backend, so typos never pass silently
  if (!sources) return fail(sources.status());
  auto layout = parse_layout(opt.layout);
  if (!layout) return fail(layout.status());
  auto precision = parse_precision(opt.precision);
  if (!precision) return fail(precision.status());
  if (*precision == Precision::kFloat8 && opt.calibration.empty())
    return fail(invalid_argument("--precision fp8 needs --calibration DIR: a directory of a few representative images (PNG/JPEG) whose "
                                 "activation ranges set the FP8 scales"));
  if (*precision != Precision::kFloat8 && !opt.calibration.empty())
    return fail(invalid_argument("--calibration is for --precision fp8 only (it sets the FP8 scales)"));
  if (*precision != Precision::kFloat8 && opt.fp8_obey) return fail(invalid_argument("--fp8-obey is for --precision fp8 only"));
  // --device cpu with fp8: refused before the calibration folder is read (a fixed folder would still not run)
  if (*precision == Precision::kFloat8 && opt.device == "cpu")
    return fail(unsupported("--precision fp8 runs on the CUDA executor only (--device cpu); use --precision fp32 on the CPU"));
  size_t calibration_files = 0;
  if (*precision == Precision::kFloat8) {  // the directory is checked before any device or model work
    auto files = list_calibration_files(opt.calibration, kMaxCalibrationFrames, &calibration_files);
    if (!files) return fail(files.status());
  }
  std::string backend = "cpu";
  std::string backend_note;
  if (opt.device == "cuda" || opt.device == "auto") {
#ifndef WS_HAVE_CUDA
    if (opt.device == "cuda") return fail(unsupported("--device cuda: this build has no CUDA support; use --device cpu or auto"));
    backend_note = " (auto: this build has no CUDA support)";
#else
    Status avail = cuda_device_available();
    if (avail.is_ok()) {
      backend = "cuda";
      if (opt.device == "auto") backend_note = " (auto: a CUDA device is present)";
    } else if (opt.device == "cuda") {
      return fail(avail);
    } else {
      backend_note = " (auto: " + avail.to_string() + ")";
    }
#endif
  }
  if (backend == "cpu" && *precision == Precision::kFloat8)  // the CPU executor is float32 only: never fall back silently
    return fail(unsupported("--precision fp8 runs on the CUDA executor only (" +
                            (opt.device == "cpu" ? std::string("--device cpu") : "--device auto found no usable CUDA device" + backend_note) +
                            "); use --precision fp32 on the CPU"));
  // Tactic timing (and its cache) is a CUDA-executor build step: say so rather than ignore the option silently.
  if (backend == "cpu" && !opt.timing_cache.empty())
    std::fprintf(stderr, "warpstream: warning: --timing-cache %s is not used: the CPU executor has no tactics to time%s\n",
                 ws::quoted(opt.timing_cache).c_str(), backend_note.c_str());
  if (backend == "cpu" && opt.layout == "nhwc")
    std::fprintf(stderr, "warpstream: warning: --layout %s is not used: the CPU executor runs the model's NCHW layout%s\n",
                 opt.layout.c_str(), backend_note.c_str());
  auto labels = load_labels(opt.labels);
  if (!labels) return fail(labels.status());
  auto config = opt.config.empty() ? model_config_for(opt.model) : load_model_config(opt.config);
  if (!config) return fail(config.status());
  const auto t0 = std::chrono::steady_clock::now();
  ir::Shape shape;
  if (!opt.input_shape.empty()) {
    // "1x3x224x224"
    std::string s = opt.input_shape;
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t x = s.find('x', pos);
      std::string tok = s.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
      char* end = nullptr;
      long long v = std::strtoll(tok.c_str(), &end, 10);
      if (tok.empty() || *end || v < 1 || v > (1 << 20)) {
        return fail(invalid_argument("--input-shape '" + opt.input_shape + "' must look like 1x3x224x224 (positive dims)"));
      }
      shape.push_back(v);
      if (x == std::string::npos) break;
      pos = x + 1;
    }
  }
  // One classify function per backend; the loop below is shared.
  std::function<Result<std::vector<TopKEntry>>(const ImageRgb8&, double* gpu_ms)> classify;
  std::unique_ptr<CpuClassifier> cpu;
  int64_t in_h = 0, in_w = 0, classes = 0;
  std::string source = config->source, details;
#ifdef WS_HAVE_CUDA
  std::unique_ptr<LaneClassifier> lane;
  std::string fp8_note;
  if (backend == "cuda") {
    auto input_mode = parse_lane_input(opt.input);
    if (!input_mode) return fail(input_mode.status());
    LaneClassifierOptions lo;
    lo.build.precision = *precision;
    lo.build.fp8_obey_precision = opt.fp8_obey;
    if (*precision == Precision::kFloat8) {  // calibrated on the CPU executor (fp32), before the engine build
      size_t frames = 0;
      auto amax = calibrate_classifier(opt.model, *config, opt.calibration, shape, &frames);
      if (!amax) return fail(amax.status());
      lo.build.fp8_activation_amax = std::move(amax).value();
      fp8_note = ", calibrated on " + std::to_string(frames) + " frame(s)" +
                 (calibration_files > frames ? " (the first " + std::to_string(frames) + " of " + std::to_string(calibration_files) + " by name)" : "");
    }
    lo.build.timing_cache_path = opt.timing_cache;
    lo.build.tactic_sources = *sources;
    lo.build.layout = *layout;
    lo.input = *input_mode;
    lo.use_cuda_graph = !opt.no_cuda_graph;
    lo.k = opt.topk;
    lo.normalize = config->normalize;
    lo.input_shape = shape;
    auto built = LaneClassifier::build(opt.model, lo);
    if (built.is_ok()) {
      lane = std::move(built).value();
      in_h = lane->input_height();
      in_w = lane->input_width();
      classes = lane->classes();
      details = " | " + opt.precision + ", input " + opt.input + ", " + (opt.no_cuda_graph ? "direct enqueue" : "CUDA graph") +
                " | " + lane->device_description();
      if (*precision == Precision::kFloat8) {
        size_t convs = 0, fp8_convs = 0;
        for (const TacticRecord& t : lane->engine().tactics())
          if (t.op_type == "Conv") { ++convs; fp8_convs += t.choice.rfind("ws pointwise FP8", 0) == 0; }
        details += " | fp8: " + std::to_string(fp8_convs) + " of " + std::to_string(convs) + " convs run FP8" + fp8_note;
      }
      classify = [&](const ImageRgb8& im, double* gpu_ms) -> Result<std::vector<TopKEntry>> {
        WS_ASSIGN_OR_RETURN(LaneClassification r, lane->classify(im));
        *gpu_ms = r.gpu_ms;
        return std::move(r.top);
      };
    } else if (opt.device == "cuda" || built.status().code() == StatusCode::kInvalidArgument || *precision == Precision::kFloat8) {
      return fail(built.status());
    } else {
      backend = "cpu";
      backend_note = " (auto: CUDA build failed: " + built.status().to_string() + ")";
    }
  }
#endif
  if (backend == "cpu") {
    auto built = CpuClassifier::build(opt.model, *config, shape);
    if (!built) return fail(built.status());
    cpu = std::move(built).value();
    in_h = cpu->input_height();
    in_w = cpu->input_width();
    classes = cpu->classes();
    classify = [&](const ImageRgb8& im, double*) { return cpu->classify(im, opt.topk); };
  }
  const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (static_cast<int64_t>(labels->size()) != classes) {
    return fail(invalid_argument(opt.labels + ": " + std::to_string(labels->size()) + " labels for a model with " +
                                 std::to_string(classes) + " classes"));
  }
  if (opt.topk > classes) return fail(invalid_argument("--topk " + std::to_string(opt.topk) + " exceeds the model's " + std::to_string(classes) + " classes"));
  nlohmann::json out = nlohmann::json::array();
  if (!opt.json) {
    std::printf("backend: %s%s | model %s [1, 3, %lld, %lld] → %lld classes | normalisation: %s | build %.0f ms%s\n",
                backend.c_str(), backend_note.c_str(), opt.model.c_str(), static_cast<long long>(in_h),
                static_cast<long long>(in_w), static_cast<long long>(classes), source.c_str(), build_ms, details.c_str());
  }
  int status = 0;
  for (const auto& path : opt.images) {
    auto image = decode_image_file(path);
    if (!image) { fail(image.status()); status = 2; continue; }
    // Wall time of preprocess + network + Top-K, median over --repeat runs.
    std::vector<double> times, gpu_times;
    Result<std::vector<TopKEntry>> top = invalid_argument("not run");
    for (int r = 0; r < opt.repeat; ++r) {
      const auto t1 = std::chrono::steady_clock::now();
      double gpu_ms = -1;
      top = classify(*image, &gpu_ms);
      if (gpu_ms >= 0) gpu_times.push_back(gpu_ms);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
      if (!top) break;
    }
    if (!top) { fail(top.status()); status = 2; continue; }
    std::sort(times.begin(), times.end());
    std::sort(gpu_times.begin(), gpu_times.end());
    const double ms = times[times.size() / 2];
    const double gpu_ms = gpu_times.empty() ? -1 : gpu_times[gpu_times.size() / 2];
    if (opt.json) {
      nlohmann::json r = {{"image", path}, {"width", image->width}, {"height", image->height}, {"backend", backend}, {"ms", ms}};
      if (gpu_ms >= 0) r["gpu_ms"] = gpu_ms;
      for (const auto& e : *top) r["top"].push_back({{"index", e.index}, {"label", (*labels)[static_cast<size_t>(e.index)]}, {"score", e.score}});
      out.push_back(r);
    } else {
      // Labels (from the labels file) and image paths are escaped for the terminal (core/escape.h); --json
      // carries them unchanged (JSON escapes control characters itself).
      std::printf("%s (%lldx%lld, %.1f ms", escape_name(path).c_str(), static_cast<long long>(image->width),
                  static_cast<long long>(image->height), ms);
      if (opt.repeat > 1) {
        std::printf(" median of %d, min %.1f, max %.1f; median %.3f ms, p99 %.3f ms", opt.repeat, times.front(),
                    times.back(), ms, times[std::min(times.size() - 1, times.size() * 99 / 100)]);
      }
      if (gpu_ms >= 0) std::printf("; gpu %.3f ms", gpu_ms);
      std::printf("):\n");
      for (const auto& e : *top) {
        std::printf("  %4d  %8.4f  %s\n", e.index, e.score,
                    escape_name((*labels)[static_cast<size_t>(e.index)]).c_str());
      }
    }
  }
  if (opt.json) std::printf("%s\n", out.dump(2).c_str());
  return status;
}

std::function<int()> setup(CLI::App& sub) {
  auto opt = std::make_shared<Options>();
  sub.add_option("--model", opt->model, "ONNX model (float32 input [1,3,H,W], output [1,classes])")->required();
  sub.add_option("--labels", opt->labels, "class names, one per line, in index order")->required();
  sub.add_option("images", opt->images, "PNG or JPEG files")->required();
  sub.add_option("--topk", opt->topk, "classes to print per image (1..32)")->capture_default_str();
  sub.add_option("--device", opt->device, "cpu, cuda or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}))->capture_default_str();
  sub.add_option("--config", opt->config, "JSON with mean/std (default: <model>.json beside the model, else ImageNet)");
  sub.add_flag("--json", opt->json, "print results as JSON");
  sub.add_option("--input-shape", opt->input_shape, "fix the input's shape at build, e.g. 1x3x224x224 (for symbolic dims)");
  sub.add_option("--repeat", opt->repeat, "classify each image N times and report the median time")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  sub.add_option("--precision", opt->precision,
                 "cuda: fp32, fp16 or fp8 (chosen at engine build; fp8: E4M3 tensor-core pointwise convs on sm_89+, needs --calibration)")
      ->check(CLI::IsMember({"fp32", "fp16", "fp8"}))->capture_default_str();
  sub.add_option("--calibration", opt->calibration, "cuda, fp8: directory of PNG/JPEG frames whose activation ranges set the FP8 scales");
  sub.add_flag("--fp8-obey", opt->fp8_obey, "cuda, fp8: run every calibrated pointwise conv in FP8 (default: FP8 timed beside fp16, fastest wins)");
  sub.add_flag("--no-cuda-graph", opt->no_cuda_graph, "cuda: enqueue each stage directly instead of replaying the lane's graph");
  sub.add_option("--input", opt->input, "cuda: where the lane reads the frame: mapped (zero-copy), copy (pinned + memcpy), device")
      ->check(CLI::IsMember({"mapped", "copy", "device"}))->capture_default_str();
  sub.add_option("--timing-cache", opt->timing_cache, "cuda: tactic timing cache file (JSON); empty = none");
  sub.add_option("--tactic-sources", opt->tactic_sources,
                 "cuda: kernel families the engine build may choose from: comma-separated cudnn, cublaslt, warpstream or all")
      ->capture_default_str();
  sub.add_option("--layout", opt->layout, "cuda: activation layout inside the engine: auto (nhwc for fp16 models without grouped convs, tactic source cudnn), nchw, nhwc (needs cudnn)")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}))->capture_default_str();
  return [opt] { return run(*opt); };
}

}  // namespace

WS_REGISTER_COMMAND(classify, "classify", "classify images with an ONNX model and print the top-K classes", setup);

}  // namespace ws::app
