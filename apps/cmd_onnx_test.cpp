// `warpstream onnx-test DIR... [--device cpu|cuda] [--precision fp32|fp16] [--tactic-sources LIST] [--print-tactics]`: runs ONNX backend test
// cases (model.onnx + test_data_set_*/input_N.pb, output_N.pb) on the CPU executor or the CUDA
// executor and compares every output with the stored one. A DIR is a case folder or a folder of case
// folders. Cases using unsupported ops, attributes or element types are skipped and their reasons
// grouped; any failure makes the exit code 1. A case whose test data cannot be used (an input_N.pb /
// output_N.pb that is empty, truncated, not a regular file, promises too many bytes, or an input whose
// dtype/shape is not the model's) is not a mismatch: it is reported "BAD <case>: <why>", counted as
// "bad input", and makes the exit code 2 — bad input wins over a mismatch, since the run could not check
// everything (README exit-code contract: 1 = a check failed, 2 = bad input). A model.onnx that is not an
// ONNX model at all (empty, unreadable, not a protobuf ModelProto with a graph) is bad input too; a model.onnx
// that parses but the importer refuses stays a FAIL of that case (the backend suites hold cases the spec rules
// out on purpose).
// Exit 2 also for bad arguments; exit 3: --device cuda and no usable CUDA device (ctest registers the
// GPU runs with SKIP_RETURN_CODE 3). --check-support (with --device cuda) runs only the device-free support
// checks, on any machine, and reports the cases the CUDA executor would run as "supported". Case names are escaped (core/escape.h) in every line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "command.h"
#include "core/escape.h"
#include "engine/ir/op_table.h"
#include "warpstream/engine.h"
#ifdef WS_HAVE_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/cuda_util.h"
#include "warpstream/cuda_engine.h"
#include "warpstream/lanes.h"
#endif

namespace fs = std::filesystem;

namespace ws::app {
namespace {

/// Exit status of `--device cuda` when no CUDA device can be used (or the build has none).
constexpr int kExitNoCudaDevice = 3;

struct Options {
  std::vector<std::string> dirs;
  std::string filter;
  std::string device = "cpu", precision = "fp32";
  double rtol = 1e-4, atol = 1e-5;
  bool tolerance_given = false;  ///< --rtol/--atol given: used as is, for every output
  bool verbose = false;
  bool check_support = false;  ///< --check-support: CUDA support checks only (CudaEngine::check_support), no device
  std::string tactic_sources = "all";  ///< --tactic-sources (ws::parse_tactic_sources): CUDA kernel families
  std::string layout = "auto";         ///< --layout (ws::parse_layout): the CUDA engine's activation layout
  bool print_tactics = false;          ///< --print-tactics: each CUDA build's per-node choices, to stdout
};

// The tolerance of one output: --rtol/--atol when given; else fp32 rtol 1e-4, atol 1e-5 (both
// executors); fp16 (CUDA, activations and weights stored as float16, float32 arithmetic):
// rtol 2e-2, atol 2e-2 · max(1, max|want| over that output) — a float16 value carries ~5e-4
// relative error per rounding and a node chain rounds several times, so an error of that size
// relative to the output's scale is what fp16 storage is expected to show, not a kernel bug.
struct Tolerance { double rtol, atol; };
template <typename T>
Tolerance tolerance_for(const Options& opt, const T* want, int64_t n) {
  if (opt.tolerance_given || opt.precision != "fp16") return {opt.rtol, opt.atol};
  double scale = 1.0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(want[i])) scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  return {2e-2, 2e-2 * scale};
}

enum class Outcome { kPassed, kFailed, kSkipped, kBadInput };

// Groups skip messages: "op type 'X' is not supported" → "unsupported op X", etc.
std::string skip_key(const std::string& msg) {
  auto quoted_after = [&](const std::string& marker) -> std::string {
    size_t p = msg.find(marker);
    if (p == std::string::npos) return {};
    p += marker.size();
    size_t e = msg.find('\'', p);
    return msg.substr(p, e == std::string::npos ? std::string::npos : e - p);
  };
  if (auto op = quoted_after("op type '"); !op.empty()) return "unsupported op: " + op;
  if (msg.find("must be float32, float16, float64, int64, int32, int8, uint8 or bool") != std::string::npos)
    return "CUDA executor: a graph output of another element type";
  if (msg.find("only float32 inputs are supported") != std::string::npos) return "CUDA executor: a graph input is not float32";
  // CUDA entry refusals: "node 'n' (Op, opset k): not supported by the CUDA executor: <why>".
  if (size_t p = msg.find(": not supported by the CUDA executor: "); p != std::string::npos) {
    const size_t open = msg.rfind(" (", p), comma = msg.find(',', open == std::string::npos ? 0 : open);
    const std::string op = open == std::string::npos || comma == std::string::npos ? "?" : msg.substr(open + 2, comma - open - 2);
    return "unsupported on CUDA: " + op + ": " + msg.substr(p + 38, 80);
  }
  if (size_t p = msg.find("has element type "); p != std::string::npos) {
    std::string t = msg.substr(p + 17);
    return "element type other than float32: " + t.substr(0, t.find(';'));
  }
  if (auto attr = quoted_after("attribute '"); !attr.empty()) {
    size_t p = msg.find("attribute '");
    return "attribute " + msg.substr(p + 10, 80);
  }
  if (msg.find("training mode") != std::string::npos) return "training mode";
  if (msg.find("not a tensor") != std::string::npos || msg.find("not a plain tensor") != std::string::npos)
    return "non-tensor value (sequence/optional/map)";
  if (msg.find("must be known at build") != std::string::npos) return "input needed at build is not constant";
  size_t p = msg.rfind("): ");
  return (p == std::string::npos ? msg : msg.substr(p + 3)).substr(0, 100);
}

template <typename T>
bool close_enough(T got, T want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= atol + rtol * std::fabs(static_cast<double>(want));
}

std::vector<fs::path> sorted_glob(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    // input_10 after input_9: compare by the trailing number when both have one.
    auto num = [](const fs::path& p) {
      std::string s = p.stem().string();
      size_t u = s.find_last_of('_');
      return u == std::string::npos ? 0L : std::strtol(s.c_str() + u + 1, nullptr, 10);
    };
    return num(a) < num(b);
  });
  return out;
}

// Unsupported → skip; a model the spec rules out (kInvalidModel: negative pads, a group that does
// not divide the channels, …) is a failure of the model, named as such; anything else fails.
Outcome outcome_of(const Status& s, std::string& why) {
  if (s.code() == StatusCode::kUnsupported) return Outcome::kSkipped;
  if (s.code() == StatusCode::kInvalidModel) why = "invalid model: " + why;
  return Outcome::kFailed;
}

// Cases whose stored outputs disagree with their own graph: checked against ONNX Runtime 1.23,
// which computes the same values as WarpStream on these graphs. Skipped with this reason.
const char* known_bad_test_data(const std::string& name) {
  static const char* const kWindows[] = {
      "test_blackmanwindow_expanded", "test_blackmanwindow_symmetric_expanded", "test_hammingwindow_expanded",
      "test_hammingwindow_symmetric_expanded", "test_hannwindow_expanded", "test_hannwindow_symmetric_expanded"};
  for (const char* w : kWindows)
    if (name == w) {
      return "ONNX 1.12 test data: output_0.pb holds the exact window formula, not what this float32 function body computes "
             "(ONNX Runtime 1.23 differs from it by the same ~2e-4)";
    }
  return nullptr;
}

// Host copies of an executor's outputs after one run.
struct Outputs {
  std::vector<TensorDesc> descs;
  std::vector<std::vector<unsigned char>> data;
};

Status check_input(const TensorDesc& d, const ir::Tensor& t) {
  if (d.format != TensorFormat::kLinear)  // onnx-test writes the test's dense tensors as they are (never a kHWC8 port)
    return unsupported("input " + ws::quoted(d.name) + " is taken in format " + tensor_format_name(d.format) +
                       " by the engine; onnx-test writes linear (row-major) inputs only");
  if (t.shape != d.shape || t.dtype != ir::DType::kFloat32)
    return invalid_argument("input " + ws::quoted(d.name) + " data is " + ir::dtype_name(t.dtype) + " " +
                            ir::shape_string(t.shape) + " but the model declares " +
                            ir::dtype_name(ir::DType::kFloat32) + " " + ir::shape_string(d.shape));
  return Status::ok();
}

Outcome execute_cpu(ir::Graph graph, const std::vector<ir::Tensor>& inputs, Outputs& out, std::string& why) {
  auto engine = CpuEngine::build(std::move(graph));
  if (!engine) { why = engine.status().message(); return outcome_of(engine.status(), why); }
  CpuEngine& e = **engine;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& d = e.input_desc(k);
    if (Status s = check_input(d, inputs[k]); !s.is_ok()) { why = s.message(); return Outcome::kBadInput; }
    if (d.bytes) std::memcpy(e.input(k), inputs[k].data->data(), d.bytes);
  }
  if (Status s = e.run(); !s.is_ok()) { why = s.message(); return Outcome::kFailed; }
  for (size_t k = 0; k < e.num_outputs(); ++k) {
    const auto& d = e.output_desc(k);
    const auto* p = static_cast<const unsigned char*>(e.output(k));
    out.descs.push_back(d);
    out.data.emplace_back(p, p + d.bytes);
  }
  return Outcome::kPassed;
}

#ifdef WS_HAVE_CUDA
// The CUDA executor: inputs converted to the engine's input type (float16 in fp16 mode, round to
// nearest even), one enqueue on a fresh stream, outputs (always float32) copied back.
Status run_cuda(ir::Graph graph, const std::vector<ir::Tensor>& inputs, const Options& opt, Outputs& out) {
  CudaBuildOptions bo;
  bo.precision = opt.precision == "fp16" ? Precision::kFloat16 : Precision::kFloat32;
  WS_ASSIGN_OR_RETURN(bo.tactic_sources, parse_tactic_sources(opt.tactic_sources));
  WS_ASSIGN_OR_RETURN(bo.layout, parse_layout(opt.layout));
  WS_ASSIGN_OR_RETURN(auto engine, CudaEngine::build(std::move(graph), bo));
  if (opt.print_tactics)
    for (const TacticRecord& t : engine->tactics())
      std::printf("  tactic %s (%s): %s, %.2f us%s\n", ws::quoted(t.node).c_str(), t.op_type.c_str(), t.choice.c_str(), t.time_us,
                  t.from_cache ? " (timing cache)" : t.same_problem ? " (same problem as an earlier node)" : "");
  WS_ASSIGN_OR_RETURN(auto ctx, engine->create_context());
  WS_ASSIGN_OR_RETURN(cuda::Stream stream, cuda::Stream::create());
  if (inputs.size() != engine->num_inputs())
    return invalid_argument(std::to_string(inputs.size()) + " runtime inputs for " + std::to_string(engine->num_inputs()) + " engine inputs");
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorDesc& d = engine->input_desc(k);
    TensorDesc declared = d;
    declared.dtype = ir::DType::kFloat32;
    WS_RETURN_IF_ERROR(check_input(declared, inputs[k]));
    const float* src = inputs[k].data_as<float>();
    const int64_t n = inputs[k].elements();
    if (d.dtype == ir::DType::kFloat16) {
      std::vector<__half> h(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) h[static_cast<size_t>(i)] = __float2half_rn(src[i]);
      if (n) WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(ctx->input(k), h.data(), static_cast<size_t>(n) * 2));
    } else if (n) {
      WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(ctx->input(k), src, static_cast<size_t>(n) * 4));
    }
  }
  // Poison the outputs (NaN bytes) so an output no kernel wrote cannot pass — except an output whose range
  // overlaps an input's (a Reshape-like copy of a graph input may share its arena range).
  for (size_t k = 0; k < engine->num_outputs(); ++k) {
    const auto* o = static_cast<const char*>(ctx->output(k));
    const size_t ob = engine->output_desc(k).bytes;
    bool overlaps = false;
    for (size_t j = 0; j < engine->num_inputs(); ++j) {
      const auto* i = static_cast<const char*>(ctx->input(j));
      overlaps = overlaps || (o < i + engine->input_desc(j).bytes && i < o + ob);
    }
    if (ob && !overlaps) WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(const_cast<char*>(o), 0xFF, ob, stream.get()));
  }
  WS_RETURN_IF_ERROR(ctx->enqueue(stream.get()));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  for (size_t k = 0; k < engine->num_outputs(); ++k) {
    const TensorDesc& d = engine->output_desc(k);
    out.descs.push_back(d);
    out.data.emplace_back(d.bytes);
    if (d.bytes) WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(out.data.back().data(), ctx->output(k), d.bytes, cudaMemcpyDeviceToHost));
  }
  return Status::ok();
}
#endif

Outcome execute_cuda(ir::Graph graph, const std::vector<ir::Tensor>& inputs, const Options& opt, Outputs& out, std::string& why) {
  // The CUDA executor's outputs are float32 (cast back from float16 in fp16 mode), float16 / float64 (a Cast's result or a constant) or the
  // int / bool tensors it computes; other output types (float64, strings ...) are skipped.
  for (ir::TensorId id : graph.outputs) {
    const ir::Tensor& t = graph.tensor(id);
    const ir::DType d = t.dtype;
    if (d != ir::DType::kFloat32 && d != ir::DType::kFloat16 && d != ir::DType::kFloat64 && d != ir::DType::kInt64 && d != ir::DType::kInt32 &&
        d != ir::DType::kInt8 && d != ir::DType::kUInt8 && d != ir::DType::kBool) {
      why = "CUDA executor: graph output '" + t.name + "' has element type " + ir::dtype_name(d) +
            " (float32, float16, float64, int64, int32, int8, uint8 and bool outputs only)";
      return Outcome::kSkipped;
    }
  }
#ifdef WS_HAVE_CUDA
  if (opt.check_support) {
    CudaBuildOptions bo;
    bo.precision = opt.precision == "fp16" ? Precision::kFloat16 : Precision::kFloat32;
    if (auto src = parse_tactic_sources(opt.tactic_sources)) bo.tactic_sources = *src;
    if (auto l = parse_layout(opt.layout)) bo.layout = *l;
    LayoutPlan plan;
    if (Status s = CudaEngine::check_support(std::move(graph), bo, &plan); !s.is_ok()) { why = s.message(); return outcome_of(s, why); }
    why = std::string("layout ") + layout_name(plan.layout) + ": " + std::to_string(plan.nhwc_convs) + " of " + std::to_string(plan.convs) +
          " convs and " + std::to_string(plan.nhwc_nodes) + " nodes channels-last, " + std::to_string(plan.reformats) + " reformats";
    return Outcome::kPassed;
  }
  if (Status s = run_cuda(std::move(graph), inputs, opt, out); !s.is_ok()) { why = s.message(); return outcome_of(s, why); }
  return Outcome::kPassed;
#else
  (void)inputs, (void)opt, (void)out;
  why = "this build has no CUDA support";
  return Outcome::kFailed;
#endif
}

// Runs one case; fills `why` for skips and failures.
Outcome run_case(const fs::path& dir, const Options& opt, std::string& why) {
  if (const char* bad = known_bad_test_data(dir.filename().string())) { why = bad; return Outcome::kSkipped; }
  const std::string model = (dir / "model.onnx").string();
  auto sets = sorted_glob(dir, "test_data_set_");
  if (sets.empty()) { why = "no test_data_set_* folder"; return Outcome::kFailed; }
  // A model with symbolic input dims ("N", "batch") takes them from its first test set; the
  // probe only needs the graph's inputs and nodes, every set is imported again with its own shapes.
  auto probe = ir::import_onnx(model);
  bool dims_from_data = false;
  if (!probe && probe.status().code() == StatusCode::kInvalidModel) {
    ir::ImportOptions shapes_from_data;
    auto first = sorted_glob(sets.front(), "input_");
    for (size_t k = 0; k < first.size(); ++k) {
      auto t = ir::read_tensor_proto(first[k].string());
      if (!t) break;
      if (!t->name.empty()) shapes_from_data.input_shapes[t->name] = t->shape;
      else if (first.size() == 1) shapes_from_data.input_shapes["*"] = t->shape;
    }
    if (!shapes_from_data.input_shapes.empty()) {
      auto retry = ir::import_onnx(model, shapes_from_data);
      if (retry) probe = std::move(retry), dims_from_data = true;
    }
  }
  if (!probe) {
    why = probe.status().message();
    // Not an ONNX model at all (unreadable, empty, not a ModelProto): unusable test data, like a corrupt .pb.
    // A model that parses but is refused for its content (the suites' spec-invalid cases) stays a FAIL.
    if (probe.status().code() != StatusCode::kUnsupported) {
      if (Status parsed = ir::check_onnx_model_file(model); !parsed.is_ok()) {
        why = parsed.message();
        return Outcome::kBadInput;
      }
    }
    return outcome_of(probe.status(), why);
  }
  // Runtime inputs in test-data order, and which of them must be frozen at build.
  std::vector<std::string> input_names;
  for (ir::TensorId id : probe->inputs) input_names.push_back(probe->tensor(id).name);
  std::vector<bool> freeze(input_names.size(), false);
  for (const ir::Node& n : probe->nodes) {
    const engine::OpDef* def = engine::find_op(n.op_type);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == ir::kNoTensor) continue;
      const bool at_const = def && std::find(def->constant_inputs.begin(), def->constant_inputs.end(),
                                             static_cast<int>(i)) != def->constant_inputs.end();
      for (size_t k = 0; k < input_names.size(); ++k)
        if (probe->inputs[k] == n.inputs[i] && (at_const || probe->tensor(n.inputs[i]).dtype != ir::DType::kFloat32))
          freeze[k] = true;
    }
  }
  std::string measured;  // on a pass: each float output's measured error in the first data set
  for (const fs::path& set : sets) {
    auto inputs = sorted_glob(set, "input_");
    auto outputs = sorted_glob(set, "output_");
    if (inputs.size() != input_names.size()) {
      why = set.filename().string() + ": " + std::to_string(inputs.size()) + " input files for " +
            std::to_string(input_names.size()) + " model inputs";
      return Outcome::kSkipped;
    }
    ir::ImportOptions io;
    std::vector<ir::Tensor> runtime_inputs;
    for (size_t k = 0; k < inputs.size(); ++k) {
      auto t = ir::read_tensor_proto(inputs[k].string());
      // A sequence/optional value is out of scope (skip); a corrupt file is a failure.
      if (!t) { why = t.status().message(); return t.status().code() == StatusCode::kUnsupported ? Outcome::kSkipped : Outcome::kBadInput; }
      if (freeze[k]) {
        io.frozen_inputs[input_names[k]] = std::move(*t);
      } else {
        if (dims_from_data) io.input_shapes[input_names[k]] = t->shape;  // this set's symbolic dims
        runtime_inputs.push_back(std::move(*t));
      }
    }
    auto graph = ir::import_onnx(model, io);
    if (!graph) { why = graph.status().message(); return outcome_of(graph.status(), why); }
    Outputs got;
    const Outcome ran = opt.device == "cuda" ? execute_cuda(std::move(*graph), runtime_inputs, opt, got, why)
                                             : execute_cpu(std::move(*graph), runtime_inputs, got, why);
    if (ran != Outcome::kPassed) return ran;
    if (opt.check_support) return Outcome::kPassed;  // nothing ran: the first set's shapes decide
    if (outputs.size() != got.descs.size()) {
      why = std::to_string(outputs.size()) + " expected outputs but the model has " + std::to_string(got.descs.size());
      return Outcome::kFailed;
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      auto want = ir::read_tensor_proto(outputs[k].string());
      if (!want) { why = want.status().message(); return want.status().code() == StatusCode::kUnsupported ? Outcome::kSkipped : Outcome::kBadInput; }
      const auto& d = got.descs[k];
      if (want->shape != d.shape || want->dtype != d.dtype) {
        why = "output '" + d.name + "': got " + ir::dtype_name(d.dtype) + " " + ir::shape_string(d.shape) +
              ", expected " + ir::dtype_name(want->dtype) + " " + ir::shape_string(want->shape);
        return Outcome::kFailed;
      }
      // Floating outputs within the tolerance (ONNX's backend tests compare float64 the same way: a value computed
      // in another summation order is not a failure); other types bit for bit.
      struct { double max_diff = 0, max_want = 0; } err;  // measured error of this output (reported on a pass)
      auto compare = [&](auto tag) {
        using T = decltype(tag);
        const T* out = reinterpret_cast<const T*>(got.data[k].data());
        const T* exp = want->data_as<T>();
        const Tolerance tol = tolerance_for(opt, exp, want->elements());
        for (int64_t i = 0; i < want->elements(); ++i) {
          if (std::isfinite(static_cast<double>(exp[i]))) {
            err.max_want = std::max(err.max_want, std::fabs(static_cast<double>(exp[i])));
            const double diff = std::fabs(static_cast<double>(out[i]) - static_cast<double>(exp[i]));
            if (!std::isnan(diff)) err.max_diff = std::max(err.max_diff, diff);
          }
          if (!close_enough(out[i], exp[i], tol.rtol, tol.atol)) {
            char buf[256];
            std::snprintf(buf, sizeof buf, "%s output '%s'[%lld] = %.9g, expected %.9g (rtol %g, atol %g)",
                          set.filename().c_str(), d.name.c_str(), static_cast<long long>(i), static_cast<double>(out[i]),
                          static_cast<double>(exp[i]), tol.rtol, tol.atol);
            why = buf;
            return false;
          }
        }
        return true;
      };
      if (d.dtype == ir::DType::kFloat32 || d.dtype == ir::DType::kFloat64) {
        if (!(d.dtype == ir::DType::kFloat32 ? compare(float{}) : compare(double{}))) return Outcome::kFailed;
        char buf[160];
        std::snprintf(buf, sizeof buf, "%soutput '%s' max|diff| %.3g = %.3g of max|expected| %.3g", measured.empty() ? "" : "; ",
                      d.name.c_str(), err.max_diff, err.max_want > 0 ? err.max_diff / err.max_want : 0.0, err.max_want);
        if (set == sets.front()) measured += buf;  // the first test data set's errors
      } else if (d.bytes && std::memcmp(got.data[k].data(), want->data->data(), d.bytes) != 0) {
        why = set.filename().string() + " output '" + d.name + "' (" + ir::dtype_name(d.dtype) + ") differs";
        return Outcome::kFailed;
      }
    }
  }
  why = measured;
  return Outcome::kPassed;
}

int run(const Options& opt) {
  if (opt.check_support && opt.device != "cuda") {
    std::fprintf(stderr, "error: --check-support needs --device cuda\n");
    return 2;
  }
  if (opt.layout != "auto" && opt.device != "cuda") {
    std::fprintf(stderr, "error: --layout %s needs --device cuda (the CPU executor runs the model's NCHW layout)\n", opt.layout.c_str());
    return 2;
  }
  if (opt.device == "cuda") {
#ifndef WS_HAVE_CUDA
    std::fprintf(stderr, "error: --device cuda: no CUDA device (this build has no CUDA support)\n");
    return kExitNoCudaDevice;
#else
    if (Status avail = cuda_device_available(); !avail.is_ok() && !opt.check_support) {
      std::fprintf(stderr, "error: --device cuda: no CUDA device: %s\n", avail.to_string().c_str());
      return kExitNoCudaDevice;
    }
#endif
  } else if (opt.precision != "fp32") {
    std::fprintf(stderr, "error: --precision %s: the CPU executor runs fp32 only (use --device cuda)\n", opt.precision.c_str());
    return 2;
  }
  std::vector<fs::path> cases;
  for (const auto& d : opt.dirs) {
    fs::path p(d);
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      std::fprintf(stderr, "error: %s: not a directory\n", ws::quoted(d).c_str());
      return 2;
    }
    if (fs::exists(p / "model.onnx")) { cases.push_back(p); continue; }
    for (const auto& e : fs::directory_iterator(p, ec))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  if (cases.empty()) {
    std::fprintf(stderr, "error: no test cases (folders holding model.onnx) under the given directories\n");
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0, bad = 0;
  std::map<std::string, std::vector<std::string>> skips;
  for (const auto& c : cases) {
    const std::string raw_name = c.filename().string();
    if (!opt.filter.empty() && raw_name.find(opt.filter) == std::string::npos) continue;
    const std::string name = escape_text(raw_name);
    std::string why;
    Outcome o = run_case(c, opt, why);
    if (o == Outcome::kPassed) {
      ++passed;
      if (opt.verbose) std::printf("PASS %s%s%s\n", name.c_str(), why.empty() ? "" : ": ", escape_text(why).c_str());
    } else if (o == Outcome::kSkipped) {
      ++skipped;
      skips[skip_key(why)].push_back(name);
      if (opt.verbose) std::printf("SKIP %s: %s\n", name.c_str(), escape_text(why).c_str());
    } else if (o == Outcome::kBadInput) {
      ++bad;
      std::printf("BAD %s: %s\n", name.c_str(), escape_text(why).c_str());
    } else {
      ++failed;
      std::printf("FAIL %s: %s\n", name.c_str(), escape_text(why).c_str());
    }
  }
  if (passed + failed + skipped + bad == 0) {
    std::fprintf(stderr, "error: --filter %s matches none of the %zu cases\n", ws::quoted(opt.filter).c_str(), cases.size());
    return 2;
  }
  if (!skips.empty()) std::printf("skipped, by reason:\n");
  std::vector<std::pair<std::string, std::vector<std::string>>> groups(skips.begin(), skips.end());
  std::stable_sort(groups.begin(), groups.end(), [](auto& a, auto& b) { return a.second.size() > b.second.size(); });
  for (const auto& [reason, names] : groups) {
    std::printf("  %4zu  %s  (e.g. %s)\n", names.size(), escape_text(reason).c_str(), names.front().c_str());
  }
  std::printf("%d %s, %d failed, %d skipped%s (%s executor, %s%s)\n", passed, opt.check_support ? "supported" : "passed", failed, skipped,
              bad ? (", " + std::to_string(bad) + " bad input").c_str() : "", opt.device.c_str(), opt.precision.c_str(),
              opt.check_support ? ", --check-support: support checks only, nothing ran" : "");
  if (bad) {
    std::fprintf(stderr, "error: %d case(s) with unusable test data (BAD lines above)\n", bad);
    return 2;
  }
  return failed ? 1 : 0;
}

std::function<int()> setup(CLI::App& sub) {
  auto opt = std::make_shared<Options>();
  sub.add_option("dirs", opt->dirs, "case folders (model.onnx + test_data_set_*) or folders of them")->required();
  sub.add_option("--filter", opt->filter, "only cases whose folder name contains this");
  sub.add_option("--device", opt->device, "executor: cpu, or cuda (exit 3 when no CUDA device is usable)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  sub.add_option("--precision", opt->precision,
                 "CUDA executor precision: fp32 (tolerance as --rtol/--atol) or fp16 (float16 activations and weights; "
                 "tolerance per output: rtol 2e-2, atol 2e-2 * max(1, max|expected|), unless --rtol/--atol are given)")
      ->check(CLI::IsMember({"fp32", "fp16"}))->capture_default_str();
  auto* rtol = sub.add_option("--rtol", opt->rtol, "relative tolerance (fp32 default)")->check(CLI::NonNegativeNumber)->capture_default_str();
  auto* atol = sub.add_option("--atol", opt->atol, "absolute tolerance (fp32 default)")->check(CLI::NonNegativeNumber)->capture_default_str();
  sub.add_flag("-v,--verbose", opt->verbose, "print every case and skip reason");
  sub.add_flag("--check-support", opt->check_support,
               "with --device cuda: run only the CUDA executor's device-free support checks (CudaEngine::check_support) and "
               "count the cases it would run as 'supported' (no GPU needed; outputs are not compared)");
  sub.add_option("--tactic-sources", opt->tactic_sources,
                 "with --device cuda: kernel families the build may time and choose (cudnn, cublaslt, warpstream, all; "
                 "comma-separated), as TensorRT's tactic sources")
      ->capture_default_str();
  sub.add_option("--layout", opt->layout, "with --device cuda: activation layout inside the engine (auto, nchw, nhwc; a single-node case writes a graph output, "
                 "which stays NCHW: only multi-node models run channels-last)")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}))->capture_default_str();
  sub.add_flag("--print-tactics", opt->print_tactics, "with --device cuda: print every node's chosen tactic after each build");
  return [opt, rtol, atol] {
#ifdef WS_HAVE_CUDA
    if (auto src = parse_tactic_sources(opt->tactic_sources); !src) {
      std::fprintf(stderr, "error: %s\n", src.status().message().c_str());
      return 2;
    }
#endif
    opt->tolerance_given = rtol->count() > 0 || atol->count() > 0;
    return run(*opt);
  };
}

}  // namespace

WS_REGISTER_COMMAND(onnx_test, "onnx-test", "run ONNX backend test cases on the CPU or CUDA executor and compare outputs", setup);

}  // namespace ws::app
