#pragma once
// Shared helpers of the lane pipeline GPU tests (lanes_*_test.cpp): the demo model (make_demo_model)
// built by the CUDA executor and by the CPU executor (the oracle), random RGB8 frames, the CPU
// reference frame (ref::preprocess → CpuEngine → ref::topk), and the Top-K / logits comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "engine/ir/model_builder.h"
#include "support/cuda_check.h"
#include "lanes_gpu_support.h"
#include "reference/reference.h"
#include "warpstream/cuda_engine.h"
#include "warpstream/engine.h"
#include "warpstream/lanes.h"

namespace ws::test {

/// The demo model's ONNX bytes (make_demo_model with default options: 10 classes, input [1,3,32,32]).
inline const std::vector<std::byte>& demo_model_bytes() {
  static const std::vector<std::byte> bytes = [] {
    const std::string s = ir::make_demo_model().SerializeAsString();
    std::vector<std::byte> b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
  }();
  return bytes;
}

/// The demo model built by the CUDA executor, once per precision per process (shared by the tests).
/// Null (with the reason in *why) when the build fails.
inline std::shared_ptr<CudaEngine> demo_cuda_engine(Precision p, std::string* why,
                                                     uint32_t sources = kAllTacticSources) {
  using Key = std::pair<Precision, uint32_t>;
  static std::map<Key, std::shared_ptr<CudaEngine>> engines;
  static std::map<Key, std::string> errors;
  const Key key{p, sources};
  if (auto it = engines.find(key); it != engines.end()) return it->second;
  if (auto it = errors.find(key); it != errors.end()) {
    *why = it->second;
    return nullptr;
  }
  auto g = ir::import_onnx_bytes(demo_model_bytes(), "demo.onnx");
  if (!g) {
    *why = errors[key] = g.status().to_string();
    return nullptr;
  }
  CudaBuildOptions o;
  o.precision = p;
  o.tactic_sources = sources;
  auto e = CudaEngine::build(std::move(g).value(), o);
  if (!e) {
    *why = errors[key] = e.status().to_string();
    return nullptr;
  }
  std::shared_ptr<CudaEngine> shared = std::move(e).value();
  engines[key] = shared;
  return shared;
}

/// PipelineOptions of the lane tests: `lanes` lanes, w × h RGB8 sources, Top-`k`, `input` mode, graph or direct. For
/// LaneInput::kDevice one device frame per lane is allocated into `device_frames` (filled with `fill`) and
/// registered; a failed allocation or fill is returned (the caller ASSERTs it). build_test_pipeline below builds it.
inline Status lane_test_options(PipelineOptions* o, std::vector<cuda::DeviceBuffer>* device_frames, int lanes, int64_t w, int64_t h, int k,
                                LaneInput input, bool graph, int fill = 0) {
  o->lanes = lanes;
  o->src_width = w;
  o->src_height = h;
  o->k = k;
  o->input = input;
  o->use_cuda_graph = graph;
  if (input != LaneInput::kDevice) return Status::ok();
  for (int i = 0; i < lanes; ++i) {
    WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::allocate(size_t(w * h * 3)));
    if (cudaError_t e = ::ws::test::memset_sync(b.get(), fill, b.bytes()); e != cudaSuccess)
      return internal_error(std::string("device frame fill: ") + cudaGetErrorString(e));
    o->device_inputs.push_back(b.get());
    device_frames->push_back(std::move(b));
  }
  return Status::ok();
}

/// A Pipeline over `engine` with lane_test_options(...) (the device frames, if any, land in `device_frames`, which must
/// outlive the pipeline).
inline Result<std::unique_ptr<Pipeline>> build_test_pipeline(std::shared_ptr<CudaEngine> engine, std::vector<cuda::DeviceBuffer>* device_frames,
                                                             int lanes, int64_t w, int64_t h, int k, LaneInput input, bool graph, int fill = 0) {
  PipelineOptions o;
  WS_RETURN_IF_ERROR(lane_test_options(&o, device_frames, lanes, w, h, k, input, graph, fill));
  return Pipeline::build(std::move(engine), o);
}

/// A model's bytes imported and built on the CPU executor (the oracle); failures are test failures (nullptr).
template <class Bytes>
inline std::unique_ptr<CpuEngine> build_cpu_oracle(const Bytes& bytes, const char* name) {
  auto g = ir::import_onnx_bytes(bytes, name);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  if (!g) return nullptr;
  auto e = CpuEngine::build(std::move(g).value());
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e ? std::move(e).value() : nullptr;
}

/// The demo model on the CPU executor (the oracle).
inline CpuEngine* demo_cpu_engine() {
  static std::unique_ptr<CpuEngine> engine = build_cpu_oracle(demo_model_bytes(), "demo.onnx");
  return engine.get();
}

/// A ResNet-like classifier with fixed random weights (mt19937_64 seeded with the FNV-1a hash of each tensor's name): input "image"
/// [1, 3, 32, 32] → stem Conv 7×7 s2 p3 3→16 (+bias) → Relu → MaxPool 3×3 s2 p1 → basic block (Conv 3×3 16→16 + Relu,
/// Conv 3×3 16→16, Add of the block input, Relu) → GlobalAveragePool → Flatten → Gemm 16→10 → "logits". No grouped conv:
/// an fp16 build runs it channels-last (layout auto), so hwc8_input pads its RGB stem and hwc8_input_port takes the
/// padded input at the port — the lane's form of `warpstream bench --hwc8-port` on ResNet-50.
inline const std::vector<std::byte>& resnet_like_model_bytes() {
  static const std::vector<std::byte> bytes = [] {
    ir::ModelBuilder b(13, "resnet_like");
    auto values = [](const std::string& name, size_t n, float scale) {
      uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name: the same weights on every platform
      for (char ch : name) h = (h ^ uint8_t(ch)) * 0x100000001b3ull;
      std::mt19937_64 rng(h);
      std::uniform_real_distribution<float> d(-scale, scale);
      std::vector<float> v(n);
      for (auto& x : v) x = d(rng);
      return v;
    };
    auto conv = [&](const std::string& name, const std::string& in, const std::string& out, std::vector<int64_t> w, int64_t stride,
                    int64_t pad) {
      const size_t fan_in = size_t(w[1] * w[2] * w[3]);
      b.initializer(name + "_w", w, values(name + "_w", size_t(w[0]) * fan_in, 1.5f / std::sqrt(float(fan_in))));
      b.initializer(name + "_b", {w[0]}, values(name + "_b", size_t(w[0]), 0.3f));
      b.node("Conv", {in, name + "_w", name + "_b"}, {out}, name)
          .ints("kernel_shape", {w[2], w[3]})
          .ints("strides", {stride, stride})
          .ints("pads", {pad, pad, pad, pad});
    };
    b.input("image", DType::kFloat32, {1, 3, 32, 32});
    conv("stem", "image", "c0", {16, 3, 7, 7}, 2, 3);
    b.node("Relu", {"c0"}, {"r0"}, "stem_relu");
    b.node("MaxPool", {"r0"}, {"p0"}, "pool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
    conv("b1", "p0", "a1", {16, 16, 3, 3}, 1, 1);
    b.node("Relu", {"a1"}, {"a1r"}, "b1_relu");
    conv("b2", "a1r", "a2", {16, 16, 3, 3}, 1, 1);
    b.node("Add", {"a2", "p0"}, {"s"}, "add");
    b.node("Relu", {"s"}, {"sr"}, "add_relu");
    b.node("GlobalAveragePool", {"sr"}, {"g"}, "gap");
    b.node("Flatten", {"g"}, {"f"}, "flatten");
    b.initializer("fc_w", {10, 16}, values("fc_w", 160, 0.5f));
    b.initializer("fc_b", {10}, values("fc_b", 10, 0.1f));
    b.node("Gemm", {"f", "fc_w", "fc_b"}, {"logits"}, "fc").i("transB", 1);
    b.output("logits");
    return b.bytes();
  }();
  return bytes;
}

/// resnet_like_model_bytes() built fp16 by the CUDA executor with the kHWC8 input port (hwc8_input + hwc8_input_port, as
/// `bench --hwc8-port`), once per process. Null (with the reason in *why) when the build fails.
inline std::shared_ptr<CudaEngine> resnet_like_hwc8_port_engine(std::string* why) {
  static std::shared_ptr<CudaEngine> engine;
  static std::string error;
  if (engine || !error.empty()) {
    *why = error;
    return engine;
  }
  auto g = ir::import_onnx_bytes(resnet_like_model_bytes(), "resnet_like.onnx");
  if (!g) {
    *why = error = g.status().to_string();
    return nullptr;
  }
  CudaBuildOptions o;
  o.precision = Precision::kFloat16;
  o.hwc8_input = o.hwc8_input_port = true;
  auto e = CudaEngine::build(std::move(g).value(), o);
  if (!e) {
    *why = error = e.status().to_string();
    return nullptr;
  }
  engine = std::move(e).value();
  return engine;
}

/// resnet_like_model_bytes() on the CPU executor (the oracle).
inline CpuEngine* resnet_like_cpu_engine() {
  static std::unique_ptr<CpuEngine> engine = build_cpu_oracle(resnet_like_model_bytes(), "resnet_like.onnx");
  return engine.get();
}

/// Skip without a device; set up the device; build the demo engine or fail.
#define WS_DEMO_ENGINE_OR_FAIL(var, precision)                                   \
  WS_REQUIRE_LANES_GPU();                                                        \
  std::string var##_why;                                                         \
  std::shared_ptr<CudaEngine> var = ::ws::test::demo_cuda_engine(precision, &var##_why); \
  ASSERT_TRUE(var) << "CudaEngine::build(demo model, " << precision_name(precision) << "): " << var##_why

/// Random RGB8 frame, tightly packed [h, w, 3].
inline std::vector<uint8_t> random_frame(int64_t w, int64_t h, uint64_t seed) {
  std::vector<uint8_t> f(static_cast<size_t>(w * h * 3));
  std::mt19937_64 rng(seed);
  for (auto& b : f) b = static_cast<uint8_t>(rng() >> 56);
  return f;
}

struct CpuFrame {
  std::vector<float> logits;
  std::vector<ref::TopKEntry> top;
};

/// The CPU reference of one frame through `cpu` (any model with one [1,3,H,W] float input).
inline CpuFrame cpu_reference(CpuEngine& cpu, const std::vector<uint8_t>& frame, int64_t w, int64_t h, int k,
                              const ref::Normalize& norm = {}) {
  CpuFrame r;
  const TensorDesc& in = cpu.input_desc(0);
  Status s = ref::preprocess_rgb8_to_nchw(frame.data(), h, w, 3 * w, static_cast<float*>(cpu.input(0)), in.shape[2],
                                          in.shape[3], norm);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  s = cpu.run();
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  const float* y = static_cast<const float*>(cpu.output(0));
  r.logits.assign(y, y + cpu.output_desc(0).bytes / sizeof(float));
  r.top.resize(static_cast<size_t>(k));
  s = ref::topk(r.logits.data(), static_cast<int64_t>(r.logits.size()), k, r.top.data());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return r;
}

/// Tolerance of one logit: `rel` · max(|cpu|, 1) (logits below 1 in magnitude are held to `rel`
/// absolute: summation order alone moves a near-zero value by more than `rel` of itself).
inline double logit_tol(double rel, float cpu) { return rel * std::max(1.0, std::fabs(double(cpu))); }

/// GPU Top-K vs the CPU one: same index at each rank unless the two candidates are tied within the
/// tolerance in the CPU logits (then either order is right); scores within tolerance. Returns the
/// number of rank mismatches excused as near-ties (printed by callers).
inline int expect_topk_matches(std::span<const ref::TopKEntry> gpu, const CpuFrame& cpu, double rel,
                               const std::string& what) {
  int excused = 0;
  EXPECT_EQ(gpu.size(), cpu.top.size()) << what;
  for (size_t i = 0; i < std::min(gpu.size(), cpu.top.size()); ++i) {
    const int32_t gi = gpu[i].index, ci = cpu.top[i].index;
    EXPECT_TRUE(gi >= 0 && gi < static_cast<int32_t>(cpu.logits.size())) << what << " rank " << i << " index " << gi;
    if (gi < 0 || gi >= static_cast<int32_t>(cpu.logits.size())) continue;
    if (gi != ci) {
      const double gap = std::fabs(double(cpu.logits[size_t(gi)]) - double(cpu.logits[size_t(ci)]));
      EXPECT_LE(gap, 2 * logit_tol(rel, cpu.logits[size_t(ci)]))
          << what << " rank " << i << ": gpu class " << gi << " vs cpu class " << ci << " (cpu logits "
          << cpu.logits[size_t(gi)] << " vs " << cpu.logits[size_t(ci)] << ")";
      ++excused;
    }
    EXPECT_LE(std::fabs(double(gpu[i].score) - double(cpu.top[i].score)), 2 * logit_tol(rel, cpu.top[i].score))
        << what << " rank " << i << ": gpu score " << gpu[i].score << " cpu " << cpu.top[i].score;
  }
  return excused;
}

/// Max over i of |gpu − cpu| / max(|cpu|, 1); EXPECTs it <= rel.
inline double expect_logits_close(std::span<const float> gpu, std::span<const float> cpu, double rel,
                                  const std::string& what) {
  EXPECT_EQ(gpu.size(), cpu.size()) << what;
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < std::min(gpu.size(), cpu.size()); ++i) {
    const double e = std::fabs(double(gpu[i]) - double(cpu[i])) / std::max(1.0, std::fabs(double(cpu[i])));
    if (!(e <= worst)) {
      worst = e;
      worst_i = i;
    }
  }
  EXPECT_LE(worst, rel) << what << ": logit " << worst_i << " gpu " << gpu[worst_i] << " cpu " << cpu[worst_i];
  return worst;
}

}  // namespace ws::test
