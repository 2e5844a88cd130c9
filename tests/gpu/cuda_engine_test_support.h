#pragma once
// Helpers of the CUDA executor GPU tests (tests/gpu/cuda_engine_*_test.cpp): build a graph both ways
// (CPU executor = oracle, CUDA executor), feed the same random inputs, poison the CUDA outputs, run,
// and compare with abs + rel tolerances (|gpu − cpu| <= abs + rel·|cpu|, stated at each call site).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/compare_dump.h"
#include "support/cuda_check.h"
#include "support/seed.h"
#include "cuda/cuda_util.h"
#include "engine/ir/model_builder.h"
#include "lanes_gpu_support.h"
#include "warpstream/cuda_engine.h"
#include "warpstream/engine.h"

namespace ws::test {

/// $WS_ASSETS_DIR/models/efficientnet_lite0.onnx (default .assets/; scripts/fetch-assets.sh puts it there).
inline std::string efficientnet_lite0_path() {
  const char* assets = std::getenv("WS_ASSETS_DIR");
  return std::string(assets ? assets : ".assets") + "/models/efficientnet_lite0.onnx";
}
/// Skips the calling test when efficientnet_lite0_path() is absent; else declares `path` holding it.
#define WS_REQUIRE_EFFICIENTNET_LITE0(path)                                                   \
  const std::string path = ::ws::test::efficientnet_lite0_path();                             \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found (set WS_ASSETS_DIR)"

/// torchvision's ResNet-50 as tools/export_resnet50.py writes it, from $WS_RESNET50_ONNX, into `graph_var` (a new
/// Result<ir::Graph>); skips the test when the variable is unset, fails it when the file does not import.
#define WS_RESNET50_GRAPH_OR_SKIP(graph_var)                                                              \
  const char* ws_r50_path_ = std::getenv("WS_RESNET50_ONNX");                                            \
  if (!ws_r50_path_ || !*ws_r50_path_) GTEST_SKIP() << "set WS_RESNET50_ONNX to tools/export_resnet50.py's resnet50.onnx"; \
  auto graph_var = ir::import_onnx(ws_r50_path_);                                                        \
  ASSERT_TRUE(graph_var.is_ok()) << graph_var.status().to_string()

inline ir::Graph import_builder(const ir::ModelBuilder& b) {
  auto bytes = b.bytes();
  auto g = ir::import_onnx_bytes(bytes, "test-model");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : ir::Graph{};
}

/// The demo CNN (ir::make_demo_model) imported as a graph.
inline ir::Graph demo_graph(const ir::DemoModelOptions& o = {}) {
  const std::string s = ir::make_demo_model(o).SerializeAsString();
  auto g = ir::import_onnx_bytes(std::span(reinterpret_cast<const std::byte*>(s.data()), s.size()), "demo");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : ir::Graph{};
}

inline std::vector<float> random_values(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// Adds Conv `name` (in -> out) to `b`: random weights [w] scaled by 1.5 / sqrt(fan-in) and a random bias in
/// [-0.3, 0.3), both seeded from the name (seed_for) — the conv of the engine tests' small graphs.
inline void add_random_conv(ir::ModelBuilder& b, const std::string& name, const std::string& in, const std::string& out,
                            const std::vector<int64_t>& w, const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                            int64_t group = 1) {
  auto wv = random_values(size_t(w[0] * w[1] * w[2] * w[3]), seed_for(name + "_w"));
  const float scale = 1.5f / std::sqrt(float(w[1] * w[2] * w[3]));
  for (auto& v : wv) v *= scale;
  b.initializer(name + "_w", w, wv);
  b.initializer(name + "_b", {w[0]}, random_values(size_t(w[0]), seed_for(name + "_b"), -0.3f, 0.3f));
  b.node("Conv", {in, name + "_w", name + "_b"}, {out}, name).i("group", group).ints("strides", strides).ints("pads", pads);
}

/// NCHW `v` of logical shape [N, C, H, W] (C <= 8) in TensorFormat::kHWC8: [N, H, W, 8], channels C..7 zero.
inline std::vector<float> to_hwc8(const std::vector<float>& v, const ir::Shape& nchw) {
  const int64_t n = nchw[0], c = nchw[1], hw = nchw[2] * nchw[3];
  std::vector<float> r(size_t(n * hw * kHwc8Channels), 0.0f);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) r[size_t((b * hw + p) * kHwc8Channels + ch)] = v[size_t((b * c + ch) * hw + p)];
  return r;
}

/// The per-step profile of `e` (ExecutionContext::profile_layers, `reps` replays) in a fresh context and stream, its
/// input zeroed first (defined bytes): which steps the plan has, and their kernels.
inline Result<std::vector<ExecutionContext::LayerTiming>> profile_steps(CudaEngine& e, int reps) {
  WS_ASSIGN_OR_RETURN(auto ctx, e.create_context());
  WS_ASSIGN_OR_RETURN(auto stream, cuda::Stream::create());
  if (memset_sync(ctx->input(0), 0, e.input_desc(0).bytes) != cudaSuccess) return internal_error("profile_steps: zeroing the input failed");
  return ctx->profile_layers(stream.get(), reps);
}

/// Uploads float inputs (NCHW, the model's logical layout) into a context: converted to fp16 when the engine's input is
/// fp16, and formatted [N, H, W, 8] with zero padding channels when it is taken in kHWC8 (hwc8_input_port).
inline Status write_input(const CudaEngine& e, ExecutionContext& ctx, size_t i, const std::vector<float>& nchw) {
  const TensorDesc& d = e.input_desc(i);
  const std::vector<float> v = d.format == TensorFormat::kHWC8 ? to_hwc8(nchw, d.shape) : nchw;
  const size_t elem = d.dtype == ir::DType::kFloat16 ? 2 : 4;
  if (v.size() * elem != d.bytes)
    return invalid_argument("write_input: " + std::to_string(v.size()) + " values for input '" + d.name + "' of " + std::to_string(d.bytes) +
                            " bytes (" + tensor_format_name(d.format) + ")");
  if (d.dtype == ir::DType::kFloat16) {
    std::vector<__half> h(v.size());
    for (size_t k = 0; k < v.size(); ++k) h[k] = __float2half_rn(v[k]);
    WS_CUDA_RETURN_IF_ERROR(::ws::test::upload_sync(ctx.input(i), h.data(), h.size() * 2));
  } else {
    WS_CUDA_RETURN_IF_ERROR(::ws::test::upload_sync(ctx.input(i), v.data(), v.size() * 4));
  }
  return Status::ok();
}

/// fp16 rounding of the CPU inputs, so both executors see the same input values in fp16 mode.
inline std::vector<float> round_to_half(const std::vector<float>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = __half2float(__float2half_rn(v[i]));
  return r;
}

struct Comparison {
  double max_abs = 0, max_rel = 0, max_ref = 0;
  size_t bad = 0, count = 0;
  std::string first_bad;
  /// Filled by run_both: output 0 of each executor and the graph inputs both saw (for near_dump).
  std::vector<float> got, ref;
  std::vector<std::string> input_names;
  std::vector<std::vector<float>> inputs;
};

inline Comparison compare(const std::vector<float>& got, const std::vector<float>& ref, double abs_tol, double rel_tol) {
  Comparison c;
  c.count = ref.size();
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    c.max_ref = std::max(c.max_ref, std::fabs(double(ref[i])));
    const bool ok = d <= abs_tol + rel_tol * std::fabs(double(ref[i])) && !std::isnan(got[i]) == !std::isnan(ref[i]);
    if (!std::isnan(d)) {
      c.max_abs = std::max(c.max_abs, d);
      if (std::fabs(ref[i]) > 1e-6) c.max_rel = std::max(c.max_rel, d / std::fabs(double(ref[i])));
    }
    if (!ok && c.bad++ == 0) c.first_bad = "index " + std::to_string(i) + ": gpu " + std::to_string(got[i]) + " cpu " + std::to_string(ref[i]);
  }
  return c;
}

/// near_dump of a run_both comparison: output 0 of the CUDA executor against the CPU executor's, the graph inputs both
/// saw as the operands a mismatch dumps.
inline ::testing::AssertionResult near_dump_inputs(std::string_view what, const Comparison& c, Tolerance t) {
  std::vector<Operand> operands;
  for (size_t i = 0; i < c.inputs.size(); ++i) operands.emplace_back(c.input_names[i], c.inputs[i]);
  return near_dump(what, c.got, c.ref, t, operands);
}

/// Runs `graph` on the CPU executor and the CUDA executor (precision p) on the same random inputs (input i
/// from random_values(seed + i)); returns the comparison of output 0, with both outputs and the inputs for an
/// operand dump (test::near_dump). Outputs are poisoned (0xFF = NaN) before the enqueue; every CUDA call is
/// checked (a failure sets *error).
inline Comparison run_both(const ir::Graph& graph, Precision p, double abs_tol, double rel_tol, uint64_t seed,
                           std::string* error = nullptr, CudaBuildOptions opt = {}) {
  Comparison none;
  auto cpu = CpuEngine::build(graph);
  if (!cpu) { if (error) *error = "cpu build: " + cpu.status().to_string(); return none; }
  opt.precision = p;
  auto gpu = CudaEngine::build(graph, opt);
  if (!gpu) { if (error) *error = "cuda build: " + gpu.status().to_string(); return none; }
  auto ctx = (*gpu)->create_context();
  if (!ctx) { if (error) *error = "context: " + ctx.status().to_string(); return none; }
  for (size_t i = 0; i < (*cpu)->num_inputs(); ++i) {
    const size_t n = (*cpu)->input_desc(i).bytes / 4;
    auto v = random_values(n, seed + i);
    if (p == Precision::kFloat16) v = round_to_half(v);
    std::copy(v.begin(), v.end(), static_cast<float*>((*cpu)->input(i)));
    Status s = write_input(**gpu, **ctx, i, v);
    if (!s.is_ok()) { if (error) *error = s.to_string(); return none; }
    none.input_names.push_back((*cpu)->input_desc(i).name);
    none.inputs.push_back(std::move(v));
  }
  Status rs = (*cpu)->run();
  if (!rs.is_ok()) { if (error) *error = "cpu run: " + rs.to_string(); return none; }
  const size_t n = (*cpu)->output_desc(0).bytes / 4;
  std::vector<float> ref(static_cast<const float*>((*cpu)->output(0)), static_cast<const float*>((*cpu)->output(0)) + n);
  cuda::Stream stream = std::move(cuda::Stream::create()).value();
  if (cudaError_t me = ::ws::test::memset_sync(const_cast<void*>((*ctx)->output(0)), 0xFF, n * 4); me != cudaSuccess) {
    if (error) *error = std::string("poison cudaMemset: ") + cudaGetErrorString(me);
    return none;
  }
  Status es = (*ctx)->enqueue(stream.get());
  if (!es.is_ok()) { if (error) *error = "enqueue: " + es.to_string(); return none; }
  cudaError_t ce = cudaStreamSynchronize(stream.get());
  if (ce != cudaSuccess) { if (error) *error = std::string("sync: ") + cudaGetErrorString(ce); return none; }
  std::vector<float> got(n);
  if (cudaError_t me = cudaMemcpy(got.data(), (*ctx)->output(0), n * 4, cudaMemcpyDeviceToHost); me != cudaSuccess) {
    if (error) *error = std::string("output cudaMemcpy: ") + cudaGetErrorString(me);
    return none;
  }
  Comparison c = compare(got, ref, abs_tol, rel_tol);
  c.got = std::move(got);
  c.ref = std::move(ref);
  c.input_names = std::move(none.input_names);
  c.inputs = std::move(none.inputs);
  return c;
}

}  // namespace ws::test
