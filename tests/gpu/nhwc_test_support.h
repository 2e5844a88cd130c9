#pragma once
// Helpers of the channels-last GPU tests (cudnn_fe_conv_test.cpp, conv_nhwc_test.cpp, conv_cutlass_test.cpp): fp16-rounded
// random operands (seed printed), NHWC → NCHW for the CPU reference, a device fp16 buffer filled from / read back to
// floats, and one conv case's operands with its CPU reference.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda_engine_test_support.h"  // random_values, add_random_conv, import_builder
#include "engine/ir/model_builder.h"
#include "kernels/conv/conv.h"
#include "reference/reference.h"
#include "support/cuda_check.h"        // upload_sync
#include "support/seed.h"
#include "warpstream/cuda_engine.h"

namespace ws::test {

inline std::vector<float> random_half(size_t n, const std::string& label, float lo, float hi) {
  std::vector<float> v = test::random_values(n, test::test_seed(label), lo, hi);
  for (float& f : v) f = __half2float(__float2half_rn(f));  // what the device holds
  return v;
}

// NHWC [n][h][w][c] -> NCHW, for the reference.
inline std::vector<float> to_nchw(const std::vector<float>& v, int64_t n, int64_t h, int64_t w, int64_t c) {
  std::vector<float> o(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch) o[size_t(((i * c + ch) * h + y) * w + x)] = v[size_t(((i * h + y) * w + x) * c + ch)];
  return o;
}

/// One channels-last conv case: x [n][h][w][c] → y [n][oh][ow][k], kernel kh × kw, stride, dilation, pads top / left /
/// bottom / right, an optional residual z (y's shape), activation; optionally a different stride / dilation along the
/// width (stride_w, dil_w; 0: the same as stride, dil) and no bias.
struct NhwcCase {
  const char* name;
  int64_t n, c, h, w, k, kh, kw, stride, dil, pt, pl, pb, pr;
  bool residual;
  kernels::Activation act;
  int64_t stride_w = 0, dil_w = 0;
  bool no_bias = false;
  int64_t sw() const { return stride_w ? stride_w : stride; }
  int64_t dw() const { return dil_w ? dil_w : dil; }
};

/// ResNet-50's 3×3 convs at batch 1 with ReLU: layer1 (56×56, 64), layer2's first (128 channels, 56×56 → 28×28 at stride
/// 2), layer3 (14×14, 256), layer4 (7×7, 512).
inline std::vector<NhwcCase> resnet50_3x3_cases() {
  using kernels::Activation;
  return {{"3x3 64 56x56 relu", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
          {"3x3 128 56->28 s2 relu", 1, 128, 56, 56, 128, 3, 3, 2, 1, 1, 1, 1, 1, false, Activation::kRelu},
          {"3x3 256 14x14 relu", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
          {"3x3 512 7x7 relu", 1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu}};
}

/// The four 3×3 convs of ResNet-50's steady blocks (stride 1 on their own maps), for the timing benchmarks.
inline std::vector<NhwcCase> resnet50_3x3_timing_cases() {
  using kernels::Activation;
  return {{"layer1 3x3 64 56x56", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
          {"layer2 3x3 128 28x28", 1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
          {"layer3 3x3 256 14x14", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu},
          {"layer4 3x3 512 7x7", 1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, Activation::kRelu}};
}

inline kernels::Conv2dGeometry nhwc_geometry(const NhwcCase& k) {
  kernels::Conv2dGeometry g;
  g.n = k.n; g.c_in = k.c; g.in_h = k.h; g.in_w = k.w; g.c_out = k.k; g.group = 1;
  g.kernel_h = k.kh; g.kernel_w = k.kw; g.stride_h = k.stride; g.stride_w = k.sw(); g.dilation_h = k.dil; g.dilation_w = k.dw();
  g.pad_top = k.pt; g.pad_left = k.pl; g.pad_bottom = k.pb; g.pad_right = k.pr;
  g.out_h = (k.h + k.pt + k.pb - k.dil * (k.kh - 1) - 1) / k.stride + 1;
  g.out_w = (k.w + k.pl + k.pr - k.dw() * (k.kw - 1) - 1) / k.sw() + 1;
  return g;
}

/// The CPU reference of case `k` on given operands: y = act(conv(x, w) + bias + z) in NHWC (ref::conv_nd per image, in
/// float); x NHWC, w KRSC, bias [c_out], z y's shape or empty. `max_ref` (optional) receives max |y|.
inline std::vector<float> nhwc_reference(const NhwcCase& k, const std::vector<float>& x, const std::vector<float>& w,
                                         const std::vector<float>& bias, const std::vector<float>& z, double* max_ref = nullptr) {
  const kernels::Conv2dGeometry g = nhwc_geometry(k);
  const size_t yn = size_t(g.n * g.out_h * g.out_w * g.c_out);
  ref::ConvParams cp;
  cp.rank = 2; cp.n = 1; cp.c_in = g.c_in; cp.c_out = g.c_out; cp.groups = 1;
  cp.in[0] = g.in_h; cp.in[1] = g.in_w; cp.kernel[0] = g.kernel_h; cp.kernel[1] = g.kernel_w;
  cp.stride[0] = k.stride; cp.stride[1] = k.sw(); cp.dilation[0] = k.dil; cp.dilation[1] = k.dw();
  cp.pad_begin[0] = k.pt; cp.pad_begin[1] = k.pl; cp.pad_end[0] = k.pb; cp.pad_end[1] = k.pr;
  cp.out[0] = g.out_h; cp.out[1] = g.out_w;
  const std::vector<float> w_nchw = to_nchw(w, g.c_out, g.kernel_h, g.kernel_w, g.c_in);
  const int64_t plane_in = g.in_h * g.in_w * g.c_in, plane_out = g.out_h * g.out_w;
  std::vector<float> y(yn);
  double mx = 0;
  for (int64_t img = 0; img < g.n; ++img) {
    const std::vector<float> xi(x.begin() + img * plane_in, x.begin() + (img + 1) * plane_in);
    std::vector<float> out(size_t(plane_out * g.c_out));
    ref::conv_nd(to_nchw(xi, 1, g.in_h, g.in_w, g.c_in).data(), w_nchw.data(), nullptr, out.data(), cp);
    for (int64_t p = 0; p < plane_out; ++p)
      for (int64_t ch = 0; ch < g.c_out; ++ch) {
        const size_t i = size_t((img * plane_out + p) * g.c_out + ch);
        float v = out[size_t(ch * plane_out + p)] + bias[size_t(ch)] + (z.empty() ? 0.f : z[i]);
        if (k.act == kernels::Activation::kRelu) v = std::max(v, 0.f);
        y[i] = v;
        mx = std::max(mx, std::fabs(double(v)));
      }
  }
  if (max_ref) *max_ref = mx;
  return y;
}

/// A case's random operands (fp16-rounded x in [-1, 1], KRSC w in ±1/sqrt(fan-in), bias in [-0.5, 0.5] — fp16-rounded
/// too when `half_bias`, all zero when the case has no bias, z in [-1, 1] when the case has a residual; seeds from the
/// case name, printed) and the CPU reference y = act(conv(x, w) + bias + z) in NHWC (ref::conv_nd per image on the same
/// values, in float).
struct NhwcOperands {
  std::vector<float> x, w, bias, z, ref;
  double max_ref = 0;
};
inline NhwcOperands nhwc_operands(const NhwcCase& k, bool half_bias = false) {
  const kernels::Conv2dGeometry g = nhwc_geometry(k);
  const std::string tag = k.name;
  const size_t xn = size_t(g.n * g.in_h * g.in_w * g.c_in), wn = size_t(g.c_out * g.kernel_h * g.kernel_w * g.c_in);
  const size_t yn = size_t(g.n * g.out_h * g.out_w * g.c_out);
  NhwcOperands o;
  o.x = random_half(xn, tag + " x", -1.f, 1.f);
  const float wb = 1.0f / std::sqrt(float(g.c_in * g.kernel_h * g.kernel_w));
  o.w = random_half(wn, tag + " w", -wb, wb);
  o.bias = k.no_bias   ? std::vector<float>(size_t(g.c_out), 0.0f)
           : half_bias ? random_half(size_t(g.c_out), tag + " bias", -0.5f, 0.5f)
                       : random_values(size_t(g.c_out), test_seed(tag + " bias"), -0.5f, 0.5f);
  o.z = random_half(k.residual ? yn : 0, tag + " z", -1.f, 1.f);
  o.ref = nhwc_reference(k, o.x, o.w, o.bias, o.z, &o.max_ref);
  return o;
}

struct DevHalf {
  __half* p = nullptr;
  explicit DevHalf(const std::vector<float>& v) {
    std::vector<__half> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(h.size(), 1) * sizeof(__half)), cudaSuccess);
    EXPECT_EQ(upload_sync(p, h.data(), h.size() * sizeof(__half)), cudaSuccess);
  }
  ~DevHalf() { cudaFree(p); }
  std::vector<float> read(size_t n) const {
    std::vector<__half> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(__half), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<float> o(n);
    for (size_t i = 0; i < n; ++i) o[i] = __half2float(h[i]);
    return o;
  }
};

/// A ResNet bottleneck with identity shortcut as one graph: x [1, c, hw, hw] → 1x1 c→mid + ReLU → 3x3 mid + ReLU →
/// 1x1 mid→c, + x, ReLU, repeated `blocks` times (node names "b<i>_c1" ...; one block: "c1", "c2", "c3"). Random weights.
inline ir::Graph bottleneck_graph(int64_t c, int64_t mid, int64_t hw, int blocks, const std::string& name) {
  ir::ModelBuilder b{13, name};
  b.input("x", ir::DType::kFloat32, {1, c, hw, hw});
  std::string t = "x";
  for (int i = 0; i < blocks; ++i) {
    const std::string p = blocks == 1 ? "" : "b" + std::to_string(i) + "_";
    add_random_conv(b, p + "c1", t, p + "a", {mid, c, 1, 1}, {1, 1}, {0, 0, 0, 0}, 1);
    b.node("Relu", {p + "a"}, {p + "ar"}, p + "r1");
    add_random_conv(b, p + "c2", p + "ar", p + "bb", {mid, mid, 3, 3}, {1, 1}, {1, 1, 1, 1}, 1);
    b.node("Relu", {p + "bb"}, {p + "br"}, p + "r2");
    add_random_conv(b, p + "c3", p + "br", p + "c", {c, mid, 1, 1}, {1, 1}, {0, 0, 0, 0}, 1);
    b.node("Add", {p + "c", t}, {p + "s"}, p + "add");
    b.node("Relu", {p + "s"}, {p + "y"}, p + "r3");
    t = p + "y";
  }
  b.output(t);
  return import_builder(b);
}

/// An opt-in conv tactic forced onto a ResNet-50 layer3 bottleneck (1x1 1024->256, 3x3 256, 1x1 256->1024 + residual,
/// ReLUs) at 14x14, NHWC fp16, checked against the CPU executor (2e-2 abs + rel). `enable` turns the tactic on in the
/// options. So that it surely runs (timing alone may keep cuDNN), a first build writes its timing cache, every Conv entry
/// is rewritten to `{"impl": forced_impl}`, and the compared engine is built from that cache (the cache-hit path); at
/// least `min_bound` convs' tactic strings must start with `choice_prefix` (a conv the tactic does not cover re-times its
/// entry). Then the same graph built with the tactic off: no conv names it.
inline void expect_forced_conv_tactic_matches_cpu(const std::string& label, const std::function<void(CudaBuildOptions&)>& enable,
                                                  const std::string& forced_impl, const std::string& choice_prefix, size_t min_bound) {
  const ir::Graph g = bottleneck_graph(1024, 256, 14, 1, "layer3_bottleneck");
  const std::string cache = (std::filesystem::temp_directory_path() / ("ws_forced_conv_" + std::to_string(::getpid()) + ".json")).string();
  for (bool on : {true, false}) {
    const std::string what = "layer3 bottleneck fp16 nhwc, " + label + (on ? " on (forced through the cache)" : " off");
    SCOPED_TRACE(what);
    CudaBuildOptions o;
    o.layout = Layout::kNhwc;
    o.precision = Precision::kFloat16;
    if (on) {
      enable(o);
      o.timing_cache_path = cache;
      auto first = CudaEngine::build(g, o);  // writes the cache
      ASSERT_TRUE(first.is_ok()) << first.status().to_string();
      std::ifstream in(cache);
      ASSERT_TRUE(in.good()) << cache;
      nlohmann::json j = nlohmann::json::parse(in);
      size_t forced = 0;
      for (auto& [key, entry] : j.at("entries").items())
        if (key.find("|Conv|") != std::string::npos) {
          entry = nlohmann::json{{"impl", forced_impl}, {"time_us", 1.0}};
          ++forced;
        }
      ASSERT_GT(forced, 0u) << "no Conv entry in " << cache;
      std::ofstream(cache) << j.dump(1) << "\n";
    }
    auto e = CudaEngine::build(g, o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    size_t bound = 0;
    for (const TacticRecord& t : (*e)->tactics())
      if (t.op_type == "Conv") {
        std::printf("[ forced   ]   %-4s %7.2f us%s  %s\n", t.node.c_str(), t.time_us, t.from_cache ? " (cache)" : "", t.choice.c_str());
        bound += t.choice.rfind(choice_prefix, 0) == 0;
      }
    if (on) EXPECT_GE(bound, min_bound) << "the forced cache entries did not bind " << forced_impl;
    else EXPECT_EQ(bound, 0u);
    std::string err;
    auto cmp = run_both(g, Precision::kFloat16, 2e-2, 2e-2, test_seed(what), &err, o);  // same options and cache
    ASSERT_TRUE(err.empty()) << err;
    EXPECT_TRUE(near_dump_inputs(what, cmp, {.abs = 2e-2, .rel = 2e-2}));
    EXPECT_GT(cmp.max_ref, 0.0);
    std::printf("[ forced   ] %-60s max|diff| %.3g (max|ref| %.3g); %zu of 3 convs on %s\n", what.c_str(), cmp.max_abs, cmp.max_ref, bound,
                forced_impl.c_str());
  }
  std::filesystem::remove(cache);
  std::filesystem::remove(cache + ".lock");
}

/// Benchmark helper (not a test): `launch` enqueued 50 times on `st` (once first, outside capture), captured as one CUDA
/// graph and replayed 21 times; the median per-launch µs of the last 20 replays (CUDA events). <= 0 on a failure
/// (reported through gtest).
inline float median_replay_us(cudaStream_t st, const std::function<Status(cudaStream_t)>& launch) {
  const Status warm = launch(st);
  EXPECT_TRUE(warm.is_ok()) << warm.to_string();
  if (!warm.is_ok() || cudaStreamSynchronize(st) != cudaSuccess) return -1.f;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return -1.f;
  Status captured = Status::ok();
  for (int i = 0; i < 50 && captured.is_ok(); ++i) captured = launch(st);
  const bool ended = cudaStreamEndCapture(st, &graph) == cudaSuccess;
  EXPECT_TRUE(ended && captured.is_ok()) << captured.to_string();
  if (!ended || !captured.is_ok() || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    return -1.f;
  }
  cudaEvent_t a = nullptr, b = nullptr;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> per;
  for (int rep = 0; rep < 21; ++rep) {
    cudaEventRecord(a, st);
    cudaGraphLaunch(exec, st);
    cudaEventRecord(b, st);
    float ms = 0;
    if (cudaEventSynchronize(b) != cudaSuccess || cudaEventElapsedTime(&ms, a, b) != cudaSuccess) break;
    if (rep > 0) per.push_back(ms * 1000.f / 50.f);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_EQ(per.size(), 20u);
  if (per.empty()) return -1.f;
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

/// True when the current device's compute capability major is at least `major` (a failed CUDA query fails the test).
inline bool compute_capability_at_least(int major) {
  int dev = 0, m = 0;
  const bool ok = cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess;
  EXPECT_TRUE(ok) << "cudaGetDevice / cudaDeviceGetAttribute failed";
  return ok && m >= major;
}

}  // namespace ws::test
