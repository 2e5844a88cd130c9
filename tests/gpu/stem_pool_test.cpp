// The fused ResNet stem (src/kernels/conv/stem_pool.cu, kernels::stem7x7_maxpool) against a double-precision host
// reference of the unfused path on the same fp16 operands — conv 7×7 / 2 / pad 3 in double, + bias, activation, rounded
// to fp16, then max pool 3×3 / 2 / pad 1 — at ResNet's 224 × 224 and at odd extents whose tiles are ragged; and the
// engine's fused stem (CudaBuildOptions::fuse_stem_pool) against the CPU executor, on a small graph and on ResNet-50
// ($WS_RESNET50_ONNX). Outputs are poisoned (0xFF: NaN) before each launch; random operands print their seed
// (WS_SEED=<n> replays); a mismatch dumps the operands (test::near_dump).
//   ws_gpu_tests --gtest_filter='StemPool*'
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "cuda_engine_test_support.h"
#include "engine/ir/model_builder.h"
#include "kernels/conv/stem_pool.h"
#include "lanes_gpu_support.h"
#include "support/compare_dump.h"
#include "support/cuda_check.h"
#include "support/seed.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

float half_round(float v) { return __half2float(__float2half_rn(v)); }

std::vector<float> halves(std::vector<float> v) {
  for (float& f : v) f = half_round(f);
  return v;
}

// The unfused path on the host: y [PH, PW, 64] (NHWC) from x [3, H, W] (NCHW), w [64, 3, 7, 7], bias [64].
std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& bias, int64_t h, int64_t wd,
                             kernels::Activation act, float lo, float hi) {
  const int64_t ch = kernels::stem_pool_conv_extent(h), cw = kernels::stem_pool_conv_extent(wd);
  const int64_t ph = kernels::stem_pool_out_extent(h), pw = kernels::stem_pool_out_extent(wd);
  std::vector<float> conv(size_t(64 * ch * cw));
  for (int64_t co = 0; co < 64; ++co)
    for (int64_t cy = 0; cy < ch; ++cy)
      for (int64_t cx = 0; cx < cw; ++cx) {
        double s = bias.empty() ? 0.0 : double(bias[size_t(co)]);
        for (int64_t ci = 0; ci < 3; ++ci)
          for (int64_t ky = 0; ky < 7; ++ky)
            for (int64_t kx = 0; kx < 7; ++kx) {
              const int64_t iy = 2 * cy - 3 + ky, ix = 2 * cx - 3 + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              s += double(w[size_t(((co * 3 + ci) * 7 + ky) * 7 + kx)]) * double(x[size_t((ci * h + iy) * wd + ix)]);
            }
        float v = float(s);
        if (act == kernels::Activation::kRelu) v = v < 0.0f ? 0.0f : v;
        if (act == kernels::Activation::kClip) v = v < lo ? lo : (v > hi ? hi : v);
        conv[size_t((co * ch + cy) * cw + cx)] = half_round(v);
      }
  std::vector<float> y(size_t(ph * pw * 64));
  for (int64_t py = 0; py < ph; ++py)
    for (int64_t px = 0; px < pw; ++px)
      for (int64_t co = 0; co < 64; ++co) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t cy = 2 * py - 1; cy <= 2 * py + 1; ++cy)
          for (int64_t cx = 2 * px - 1; cx <= 2 * px + 1; ++cx)
            if (cy >= 0 && cy < ch && cx >= 0 && cx < cw) m = std::max(m, conv[size_t((co * ch + cy) * cw + cx)]);
        y[size_t((py * pw + px) * 64 + co)] = m;
      }
  return y;
}

TEST(StemPool, MatchesADoubleReference) {
  WS_SKIP_WITHOUT_GPU();
  struct Case {
    const char* name;
    int64_t h, w;
    kernels::Activation act;
    bool bias;
  };
  const Case cases[] = {
      {"resnet_224_relu", 224, 224, kernels::Activation::kRelu, true},
      {"ragged_97x131_none", 97, 131, kernels::Activation::kNone, true},
      {"min_7x7_clip", 7, 7, kernels::Activation::kClip, false},
      {"wide_30x250_relu_nobias", 30, 250, kernels::Activation::kRelu, false},
  };
  for (const Case& k : cases) {
    const std::string tag = std::string("stem_pool ") + k.name;
    SCOPED_TRACE(tag);
    const auto x = halves(test::random_values(size_t(3 * k.h * k.w), test::test_seed((tag + " x").c_str()), -2.5f, 2.5f));
    const auto w = halves(test::random_values(size_t(64 * 147), test::test_seed((tag + " w").c_str()), -0.2f, 0.2f));
    const auto b = k.bias ? test::random_values(64, test::test_seed((tag + " b").c_str()), -0.5f, 0.5f) : std::vector<float>{};
    kernels::ActivationParams ap;
    ap.min = -0.25f;
    ap.max = 1.5f;
    const auto ref = reference(x, w, b, k.h, k.w, k.act, ap.min, ap.max);
    const auto packed = kernels::stem_pool_pack_weights(w.data());
    ASSERT_EQ(packed.size(), size_t(kernels::kStemPoolPackedWeights));
    std::vector<__half> xh(x.size()), wh(packed.size());
    for (size_t i = 0; i < x.size(); ++i) xh[i] = __float2half_rn(x[i]);
    for (size_t i = 0; i < packed.size(); ++i) wh[i] = __float2half_rn(packed[i]);
    auto dx = cuda::DeviceBuffer::allocate(xh.size() * 2);
    auto dw = cuda::DeviceBuffer::allocate(wh.size() * 2);
    auto db = cuda::DeviceBuffer::allocate(64 * 4);
    auto dy = cuda::DeviceBuffer::allocate(ref.size() * 2);
    auto dsrc = cuda::DeviceBuffer::allocate(xh.size() * 2);  // x's source for the PDL launch's predecessor kernel
    ASSERT_TRUE(dx.is_ok() && dw.is_ok() && db.is_ok() && dy.is_ok() && dsrc.is_ok());
    ASSERT_EQ(test::upload_sync(dx->get(), xh.data(), xh.size() * 2), cudaSuccess);
    ASSERT_EQ(test::upload_sync(dsrc->get(), xh.data(), xh.size() * 2), cudaSuccess);
    ASSERT_EQ(test::upload_sync(dw->get(), wh.data(), wh.size() * 2), cudaSuccess);
    if (k.bias) ASSERT_EQ(test::upload_sync(db->get(), b.data(), 64 * 4), cudaSuccess);
    auto stream = cuda::Stream::create();
    ASSERT_TRUE(stream.is_ok());
    for (int launch = 0; launch < 2; ++launch) {  // plain, then with the PDL attribute behind a kernel that writes x
      ASSERT_EQ(test::memset_sync(dy->get(), 0xFF, ref.size() * 2), cudaSuccess);
      if (launch == 1) {  // x poisoned, then rewritten by the kernel just before the stem (an exact fp16 copy: + 0, no activation)
        ASSERT_EQ(test::memset_sync(dx->get(), 0xFF, xh.size() * 2), cudaSuccess);
        const int64_t n = int64_t(xh.size());
        ASSERT_TRUE(kernels::bias_activation(kernels::ElemType::kFloat16, dsrc->get(), dx->get(), nullptr, n, 1, n, kernels::Activation::kNone,
                                             {}, stream->get())
                        .is_ok());
      }
      const Status s = kernels::stem7x7_maxpool(dx->get(), dw->get(), k.bias ? static_cast<const float*>(db->get()) : nullptr, k.act, ap, dy->get(),
                                                k.h, k.w, launch == 1, stream->get());
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
      std::vector<__half> yh(ref.size());
      ASSERT_EQ(cudaMemcpy(yh.data(), dy->get(), yh.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      std::vector<float> got(ref.size());
      for (size_t i = 0; i < got.size(); ++i) got[i] = __half2float(yh[i]);
      // The reference rounds a double sum to fp16, the kernel an fp32 sum: at most one fp16 step apart (2^-10 relative),
      // plus a little absolute room for values near zero. An indexing error is off by O(1).
      double max_ref = 0;
      for (float v : ref) max_ref = std::max(max_ref, double(std::fabs(v)));
      const test::Tolerance tol{1e-3 * max_ref, 1.0 / 1024};
      EXPECT_TRUE(test::near_dump(tag + " launch " + std::to_string(launch), got, ref, tol, {{"x", x}, {"w", w}, {"bias", b}}));
      EXPECT_GT(max_ref, 0.1) << "a reference this small would not test anything";
    }
  }
}

TEST(StemPool, RejectsBadArguments) {
  WS_SKIP_WITHOUT_GPU();
  auto buf = cuda::DeviceBuffer::allocate(1 << 20);
  ASSERT_TRUE(buf.is_ok());
  void* p = buf->get();
  const kernels::ActivationParams ap;
  using kernels::Activation;
  auto code = [&](const void* x, const void* w, void* y, int64_t h, int64_t wd, Activation act) {
    return kernels::stem7x7_maxpool(x, w, nullptr, act, ap, y, h, wd, false, nullptr).code();
  };
  EXPECT_EQ(code(p, p, p, 6, 224, Activation::kRelu), StatusCode::kInvalidArgument) << "below the 7x7 kernel";
  EXPECT_EQ(code(p, p, p, 224, 16385, Activation::kRelu), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(nullptr, p, p, 224, 224, Activation::kRelu), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, nullptr, p, 224, 224, Activation::kRelu), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, p, nullptr, 224, 224, Activation::kRelu), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(p, static_cast<char*>(p) + 2, p, 224, 224, Activation::kRelu), StatusCode::kInvalidArgument) << "misaligned weights";
  EXPECT_EQ(code(p, p, p, 224, 224, Activation::kSigmoid), StatusCode::kInvalidArgument) << "an activation it does not fuse";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "a refused call must enqueue nothing";
}

// x [1, 3, 64, 80] -> Conv 7x7/2 pad 3 (64, bias) -> Relu -> MaxPool 3x3/2 pad 1 -> Conv 3x3 pad 1 (64 -> 32) -> Relu ->
// Conv 1x1 (32 -> 16) -> y: the stem as ResNet has it, then two channels-last convs; built unfused and fused on one
// timing cache, each against the CPU executor.
TEST(StemPool, EngineMatchesTheCpuExecutor) {
  WS_SKIP_WITHOUT_GPU();
  ir::ModelBuilder b{13, "stem_pool"};
  b.input("x", ir::DType::kFloat32, {1, 3, 64, 80});
  test::add_random_conv(b, "conv1", "x", "c1", {64, 3, 7, 7}, {2, 2}, {3, 3, 3, 3});
  b.node("Relu", {"c1"}, {"r1"}, "relu");
  b.node("MaxPool", {"r1"}, {"p"}, "maxpool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  test::add_random_conv(b, "conv2", "p", "c2", {32, 64, 3, 3}, {1, 1}, {1, 1, 1, 1});
  b.node("Relu", {"c2"}, {"r2"}, "relu2");
  test::add_random_conv(b, "conv3", "r2", "y", {16, 32, 1, 1}, {1, 1}, {0, 0, 0, 0});
  b.output("y");
  const ir::Graph g = test::import_builder(b);
  const std::string cache = (std::filesystem::temp_directory_path() / ("ws_stem_pool_" + std::to_string(::getpid()) + ".json")).string();
  struct Cleanup { std::string path; ~Cleanup() { std::filesystem::remove(path); } } cleanup{cache};
  CudaBuildOptions o;
  o.layout = Layout::kNhwc;
  o.precision = Precision::kFloat16;
  o.timing_cache_path = cache;
  o.fuse_stem_pool = false;
  auto plain = CudaEngine::build(g, o);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  o.fuse_stem_pool = true;
  auto fused = CudaEngine::build(g, o);
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  auto count = [](const CudaEngine& e, auto pred) {
    size_t n = 0;
    for (const TacticRecord& r : e.tactics()) n += pred(r);
    return n;
  };
  auto reformats = [](const TacticRecord& r) { return r.op_type == "Reformat"; };
  std::string pool_choice, conv_choice;
  for (const TacticRecord& r : (*fused)->tactics()) {
    if (r.node == "maxpool") pool_choice = r.choice;
    if (r.node == "conv1") conv_choice = r.choice;
  }
  std::printf("[ stem     ] kernels %zu -> %zu, reformats %zu -> %zu; maxpool: %s (%.2f us alone)\n", (*plain)->kernel_count(),
              (*fused)->kernel_count(), count(**plain, reformats), count(**fused, reformats), pool_choice.c_str(),
              [&] { for (const TacticRecord& r : (*fused)->tactics()) if (r.node == "maxpool") return double(r.time_us); return 0.0; }());
  EXPECT_EQ(pool_choice.rfind("ws stem:", 0), 0u) << pool_choice;
  EXPECT_NE(conv_choice.find("fused into"), std::string::npos) << conv_choice;
  EXPECT_EQ((*fused)->kernel_count() + 2, (*plain)->kernel_count()) << "reformat + conv + pool -> one kernel";
  EXPECT_EQ(count(**fused, reformats) + 1, count(**plain, reformats)) << "the input's reformat is gone";
  auto layers = test::profile_steps(**fused, 2);
  ASSERT_TRUE(layers.is_ok()) << layers.status().to_string();
  for (const auto& step : *layers) EXPECT_NE(step.node, "conv1") << "the conv was absorbed but still has a step";
  for (bool fuse : {false, true}) {
    o.fuse_stem_pool = fuse;
    const std::string what = std::string("stem graph fp16 nhwc ") + (fuse ? "fused" : "unfused");
    const uint64_t seed = test::test_seed(what.c_str());
    std::string err;
    auto cmp = test::run_both(g, Precision::kFloat16, 1e30, 0, seed, &err, o);
    ASSERT_TRUE(err.empty()) << err;
    const double tol = 2e-2 * cmp.max_ref;
    EXPECT_TRUE(test::near_dump_inputs(what, cmp, {tol, 0}));
    EXPECT_GT(cmp.max_ref, 0.0);
  }
}

// ResNet-50 with the fused stem, fp16, against the CPU executor (tolerance 2e-2 · max|ref|, as the other ResNet-50 tests).
TEST(StemPool, ResNet50MatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_RESNET50_GRAPH_OR_SKIP(g);
  CudaBuildOptions opt;
  opt.fuse_stem_pool = true;
  const uint64_t seed = test::seed_for("stem_pool_resnet50");
  std::string err;
  auto cmp = test::run_both(*g, Precision::kFloat16, 1e30, 0, seed, &err, opt);
  ASSERT_TRUE(err.empty()) << err;
  const double tol = 2e-2 * cmp.max_ref;
  EXPECT_TRUE(test::near_dump_inputs("resnet50 fp16 fused stem", cmp, {tol, 0}));
  opt.precision = Precision::kFloat16;
  auto e = CudaEngine::build(*g, opt);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  size_t stems = 0, reformats = 0;
  for (const TacticRecord& t : (*e)->tactics()) {
    stems += t.op_type == "MaxPool" && t.choice.rfind("ws stem:", 0) == 0;
    reformats += t.op_type == "Reformat";
  }
  EXPECT_EQ(stems, 1u) << "ResNet-50's conv1 -> relu -> maxpool";
  EXPECT_EQ(reformats, 0u) << "the input's reformat was the plan's only one";
  std::printf("[ stem     ] resnet50 fp16 seed %llu: max|diff| %.3g (max|ref| %.3g, tolerance %.3g), %zu kernels, %zu reformats\n",
              static_cast<unsigned long long>(seed), cmp.max_abs, cmp.max_ref, tol, (*e)->kernel_count(), reformats);
}

}  // namespace
}  // namespace ws
