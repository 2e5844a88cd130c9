// The few-row GEMM tactic (src/kernels/gemm/gemv.cu) against a double-precision host reference on the same
// fp16-rounded operands, and the engine's Gemm / MatMul heads (where it competes with cuBLASLt at build) against the
// CPU executor. Outputs are poisoned (0xFF: NaN in both storage types) before each launch; random operands print their
// seed (WS_SEED=<n> replays); a mismatch dumps the operands (test::near_dump).
//   ws_gpu_tests --gtest_filter='Gemv*'
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "cuda_engine_test_support.h"
#include "engine/ir/model_builder.h"
#include "kernels/gemm/gemv.h"
#include "support/cuda_check.h"
#include "support/compare_dump.h"
#include "support/seed.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

struct GemvCase {
  const char* name;
  int64_t m, n, k;
  bool with_c;
  float alpha, beta;
  size_t a_offset_elems;  // A starts this many elements into its buffer (a misaligned base takes the scalar loop)
};

std::vector<float> rounded(std::vector<float> v, DType t) {
  if (t == DType::kFloat16)
    for (float& f : v) f = __half2float(__float2half_rn(f));
  return v;
}

void upload(void* dev, const std::vector<float>& v, DType t) {
  if (t == DType::kFloat32) {
    ASSERT_EQ(test::upload_sync(dev, v.data(), v.size() * 4), cudaSuccess);
    return;
  }
  std::vector<__half> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
  ASSERT_EQ(test::upload_sync(dev, h.data(), h.size() * 2), cudaSuccess);
}

std::vector<float> download(const void* dev, size_t n, DType t) {
  std::vector<float> o(n);
  if (t == DType::kFloat32) {
    EXPECT_EQ(cudaMemcpy(o.data(), dev, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return o;
  }
  std::vector<__half> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), dev, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < n; ++i) o[i] = __half2float(h[i]);
  return o;
}

TEST(Gemv, MatchesADoubleReferenceOnVectorAndScalarPaths) {
  WS_SKIP_WITHOUT_GPU();
  const GemvCase cases[] = {
      {"resnet50_fc", 1, 1000, 2048, true, 1.0f, 1.0f, 0},
      {"efficientnet_fc", 1, 1000, 1280, true, 1.0f, 1.0f, 0},
      {"rows4_alpha_beta", 4, 77, 512, true, 0.5f, 2.0f, 0},
      {"rows3_no_c_tail", 3, 9, 8 * 37, false, 1.0f, 0.0f, 0},  // nv = 37: the 4-deep loop and its remainder
      {"odd_k_scalar", 2, 33, 101, true, 1.0f, 1.0f, 0},
      {"misaligned_a_scalar", 1, 40, 256, true, 1.0f, 1.0f, 1},
      {"single_output", 1, 1, 8, false, 1.0f, 0.0f, 0},
  };
  for (DType t : {DType::kFloat16, DType::kFloat32}) {
    const size_t eb = t == DType::kFloat16 ? 2 : 4;
    for (const GemvCase& k : cases) {
      SCOPED_TRACE(std::string(k.name) + " " + dtype_name(t));
      const std::string tag = std::string("gemv ") + k.name + " " + dtype_name(t);
      const auto a = rounded(test::random_values(size_t(k.m * k.k), test::test_seed(tag + " a")), t);
      const auto w = rounded(test::random_values(size_t(k.n * k.k), test::test_seed(tag + " w"), -0.05f, 0.05f), t);
      const auto cm = rounded(test::random_values(size_t(k.m * k.n), test::test_seed(tag + " c")), t);
      auto da = cuda::DeviceBuffer::allocate((a.size() + k.a_offset_elems) * eb);
      auto dw = cuda::DeviceBuffer::allocate(w.size() * eb);
      auto dc = cuda::DeviceBuffer::allocate(cm.size() * eb);
      auto dy = cuda::DeviceBuffer::allocate(size_t(k.m * k.n) * eb);
      ASSERT_TRUE(da.is_ok() && dw.is_ok() && dc.is_ok() && dy.is_ok());
      void* a_ptr = static_cast<char*>(da->get()) + k.a_offset_elems * eb;
      upload(a_ptr, a, t);
      upload(dw->get(), w, t);
      upload(dc->get(), cm, t);
      ASSERT_EQ(test::memset_sync(dy->get(), 0xFF, size_t(k.m * k.n) * eb), cudaSuccess);
      auto stream = cuda::Stream::create();
      ASSERT_TRUE(stream.is_ok());
      ASSERT_TRUE(kernels::gemv_rows(t, a_ptr, dw->get(), k.with_c ? dc->get() : nullptr, dy->get(), k.m, k.n, k.k, k.alpha, k.beta, false,
                                     stream->get())
                      .is_ok());
      ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
      const auto got = download(dy->get(), size_t(k.m * k.n), t);
      std::vector<float> ref(got.size());
      for (int64_t i = 0; i < k.m; ++i)
        for (int64_t j = 0; j < k.n; ++j) {
          double s = 0;
          for (int64_t r = 0; r < k.k; ++r) s += double(a[size_t(i * k.k + r)]) * double(w[size_t(j * k.k + r)]);
          double v = double(k.alpha) * s + (k.with_c ? double(k.beta) * double(cm[size_t(i * k.n + j)]) : 0.0);
          ref[size_t(i * k.n + j)] = float(v);
        }
      // fp32 sums of fp16 products: the final rounding to fp16 (2^-11 relative) dominates; fp32 storage: summation order.
      const test::Tolerance tol = t == DType::kFloat16 ? test::Tolerance{2e-3, 1e-3} : test::Tolerance{1e-5, 1e-5};
      EXPECT_TRUE(test::near_dump(tag, got, ref, tol, {{"a", a}, {"w", w}, {"c", cm}}));
    }
  }
}

TEST(Gemv, RejectsBadArguments) {
  WS_SKIP_WITHOUT_GPU();
  auto buf = cuda::DeviceBuffer::allocate(4096);
  ASSERT_TRUE(buf.is_ok());
  void* p = buf->get();
  EXPECT_EQ(kernels::gemv_rows(DType::kFloat16, p, p, nullptr, p, 0, 4, 4, 1, 0, false, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::gemv_rows(DType::kFloat16, p, p, nullptr, p, kernels::kGemvMaxRows + 1, 4, 4, 1, 0, false, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::gemv_rows(DType::kFloat16, nullptr, p, nullptr, p, 1, 4, 4, 1, 0, false, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::gemv_rows(DType::kInt8, p, p, nullptr, p, 1, 4, 4, 1, 0, false, nullptr).code(), StatusCode::kUnsupported);
}

// The pooled head (pooled_gemv.cu): GlobalAveragePool fused into the GEMV, against a double-precision host reference
// (the pool in double, no rounding of the pooled values, as the kernel keeps them in fp32), NCHW and NHWC, fp16 and
// fp32, y in the storage type and as float32; partial slices in both grid dimensions (channels and n not multiples
// of 128). The output is poisoned and the counters are checked to be left zero (the next launch relies on it); each
// case launches twice on the same scratch so a counter left behind would show.
TEST(PooledGemv, MatchesADoubleReference) {
  WS_SKIP_WITHOUT_GPU();
  struct Case {
    const char* name;
    int64_t channels, hw, n;
    bool with_c;
    float alpha, beta;
  };
  const Case cases[] = {
      {"resnet50_head", 2048, 49, 1000, true, 1.0f, 1.0f},
      {"efficientnet_head", 1280, 49, 1000, true, 1.0f, 1.0f},
      {"ragged_slices", 200, 9, 130, true, 0.5f, 2.0f},
      {"one_pixel_no_c", 64, 1, 5, false, 1.0f, 0.0f},
      {"wide_map", 33, 100, 257, true, 1.0f, -1.0f},
  };
  for (DType t : {DType::kFloat16, DType::kFloat32})
    for (bool nhwc : {false, true})
      for (bool y32 : {false, true}) {
        if (y32 && t == DType::kFloat32) continue;
        const size_t eb = t == DType::kFloat16 ? 2 : 4;
        for (const Case& k : cases) {
          const std::string tag = std::string("pooled_gemv ") + k.name + " " + dtype_name(t) + (nhwc ? " nhwc" : " nchw") + (y32 ? " y32" : "");
          SCOPED_TRACE(tag);
          // x in its logical order [C, HW], stored NCHW or transposed to NHWC [HW, C].
          const auto x = rounded(test::random_values(size_t(k.channels * k.hw), test::test_seed(tag + " x")), t);
          const auto w = rounded(test::random_values(size_t(k.n * k.channels), test::test_seed(tag + " w"), -0.05f, 0.05f), t);
          const auto cm = rounded(test::random_values(size_t(k.n), test::test_seed(tag + " c")), t);
          std::vector<float> xs(x.size());
          for (int64_t ch = 0; ch < k.channels; ++ch)
            for (int64_t p = 0; p < k.hw; ++p) xs[size_t(nhwc ? p * k.channels + ch : ch * k.hw + p)] = x[size_t(ch * k.hw + p)];
          const size_t ys = size_t(k.n) * (y32 ? 4 : eb);
          const size_t part = size_t(kernels::pooled_gemv_partials_bytes(k.channels, k.n));
          const size_t nctr = size_t(kernels::pooled_gemv_slices_n(k.n));
          auto dx = cuda::DeviceBuffer::allocate(xs.size() * eb);
          auto dw = cuda::DeviceBuffer::allocate(w.size() * eb);
          auto dc = cuda::DeviceBuffer::allocate(cm.size() * eb);
          auto dy = cuda::DeviceBuffer::allocate(ys);
          auto dp = cuda::DeviceBuffer::allocate(part);
          auto dn = cuda::DeviceBuffer::allocate(nctr * sizeof(unsigned));
          ASSERT_TRUE(dx.is_ok() && dw.is_ok() && dc.is_ok() && dy.is_ok() && dp.is_ok() && dn.is_ok());
          upload(dx->get(), xs, t);
          upload(dw->get(), w, t);
          upload(dc->get(), cm, t);
          ASSERT_EQ(test::memset_sync(dp->get(), 0xFF, part), cudaSuccess);
          ASSERT_EQ(test::memset_sync(dn->get(), 0, nctr * sizeof(unsigned)), cudaSuccess);
          auto stream = cuda::Stream::create();
          ASSERT_TRUE(stream.is_ok());
          std::vector<float> ref(size_t(k.n));
          for (int64_t j = 0; j < k.n; ++j) {
            double s = 0;
            for (int64_t ch = 0; ch < k.channels; ++ch) {
              double pool = 0;
              for (int64_t p = 0; p < k.hw; ++p) pool += double(x[size_t(ch * k.hw + p)]);
              s += double(w[size_t(j * k.channels + ch)]) * pool / double(k.hw);
            }
            ref[size_t(j)] = float(double(k.alpha) * s + (k.with_c ? double(k.beta) * double(cm[size_t(j)]) : 0.0));
          }
          for (int launch = 0; launch < 2; ++launch) {
            ASSERT_EQ(test::memset_sync(dy->get(), 0xFF, ys), cudaSuccess);
            ASSERT_TRUE(kernels::pooled_gemv(t, dx->get(), nhwc, k.channels, k.hw, dw->get(), k.with_c ? dc->get() : nullptr, dy->get(), k.n,
                                             k.alpha, k.beta, dp->get(), static_cast<unsigned*>(dn->get()), launch == 1, stream->get(), y32)
                            .is_ok());
            ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
            const auto got = download(dy->get(), size_t(k.n), y32 ? DType::kFloat32 : t);
            const test::Tolerance tol = t == DType::kFloat16 && !y32 ? test::Tolerance{2e-3, 1e-3} : test::Tolerance{1e-5, 1e-4};
            EXPECT_TRUE(test::near_dump(tag + " launch " + std::to_string(launch), got, ref, tol, {{"x", x}, {"w", w}, {"c", cm}}));
            std::vector<unsigned> ctr(nctr, 1u);
            ASSERT_EQ(cudaMemcpy(ctr.data(), dn->get(), nctr * sizeof(unsigned), cudaMemcpyDeviceToHost), cudaSuccess);
            for (size_t i = 0; i < nctr; ++i) EXPECT_EQ(ctr[i], 0u) << "counter " << i << " left non-zero after launch " << launch;
          }
        }
      }
}

TEST(PooledGemv, RejectsBadArguments) {
  WS_SKIP_WITHOUT_GPU();
  auto buf = cuda::DeviceBuffer::allocate(4096);
  ASSERT_TRUE(buf.is_ok());
  void* p = buf->get();
  auto* u = static_cast<unsigned*>(p);
  EXPECT_EQ(kernels::pooled_gemv(DType::kFloat16, p, true, 0, 4, p, nullptr, p, 4, 1, 0, p, u, false, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::pooled_gemv(DType::kFloat16, p, true, 4, 0, p, nullptr, p, 4, 1, 0, p, u, false, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::pooled_gemv(DType::kFloat16, p, true, int64_t{1} << 20, int64_t{1} << 12, p, nullptr, p, 4, 1, 0, p, u, false, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::pooled_gemv(DType::kFloat16, p, true, 4, 4, p, nullptr, p, 4, 1, 0, nullptr, u, false, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::pooled_gemv(DType::kFloat16, p, true, 4, 4, p, nullptr, p, 4, 1, 0, p, nullptr, false, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::pooled_gemv(DType::kFloat16, p, true, 4, 4, p, nullptr, p, int64_t{65536} * 128, 1, 0, p, u, false, nullptr).code(),
            StatusCode::kInvalidArgument)
      << "more output slices than a grid dimension holds";
  EXPECT_EQ(kernels::pooled_gemv(DType::kInt8, p, true, 4, 4, p, nullptr, p, 4, 1, 0, p, u, false, nullptr).code(), StatusCode::kUnsupported);
}

// A classifier head (Flatten → Gemm with transB = 1 and a bias, as ResNet-50's fc) and a MatMul with a constant
// [K, N] weight (the tactic's transposed copy), both executors on the same inputs; the build times the few-row tactic
// against cuBLASLt and the test prints which one it kept (both must match the CPU executor).
TEST(Gemv, EngineHeadsMatchTheCpuExecutor) {
  WS_SKIP_WITHOUT_GPU();
  struct Head {
    const char* name;
    bool matmul;
    int64_t k, n;
  };
  for (const Head& h : {Head{"gemm_transB_bias_2048x1000", false, 2048, 1000}, Head{"matmul_const_kn_300x77", true, 300, 77}}) {
    ir::ModelBuilder b{13, h.name};
    b.input("x", ir::DType::kFloat32, {1, h.k});
    const uint64_t seed = test::test_seed(std::string("gemv head ") + h.name);
    if (h.matmul) {
      b.initializer("w", {h.k, h.n}, test::random_values(size_t(h.k * h.n), seed, -0.05f, 0.05f));
      b.node("MatMul", {"x", "w"}, {"y"}, "head");
    } else {
      b.initializer("w", {h.n, h.k}, test::random_values(size_t(h.k * h.n), seed, -0.05f, 0.05f));
      b.initializer("bias", {h.n}, test::random_values(size_t(h.n), seed + 1, -0.5f, 0.5f));
      b.node("Gemm", {"x", "w", "bias"}, {"y"}, "head").i("transB", 1);
    }
    b.output("y");
    const ir::Graph g = test::import_builder(b);
    for (Precision p : {Precision::kFloat16, Precision::kFloat32}) {
      SCOPED_TRACE(std::string(h.name) + " " + precision_name(p));
      auto e = CudaEngine::build(g, CudaBuildOptions{.precision = p});
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      for (const TacticRecord& r : (*e)->tactics()) {
        if (r.node != "head") continue;
        std::printf("gemv head %s %s: %s (%.2f us), %zu kernel(s)\n", h.name, precision_name(p), r.choice.c_str(), r.time_us,
                    (*e)->kernel_count());
        // Chosen in fp16, the tactic writes the float32 output port itself: one kernel, no cast step.
        if (p == Precision::kFloat16 && r.choice.rfind("ws gemv", 0) == 0) {
          EXPECT_NE(r.choice.find("no cast step"), std::string::npos) << r.choice;
          EXPECT_EQ((*e)->kernel_count(), 1u);
        }
      }
      std::string err;
      const double tol = p == Precision::kFloat16 ? 3e-3 : 1e-5;
      const test::Comparison c = test::run_both(g, p, tol, tol, seed, &err);
      ASSERT_TRUE(err.empty()) << err;
      EXPECT_TRUE(test::near_dump_inputs(std::string("gemv head ") + h.name, c, {tol, tol}));
    }
  }
}

// The pooled head in the engine (CudaBuildOptions::fuse_pooled_head, opt-in): conv → Relu → GlobalAveragePool → Flatten → Gemm
// (transB, bias; ResNet's head) and → Reshape → MatMul ([K, N] weight; the transposed copy), channels-first and
// channels-last, fp16 and fp32, against the CPU executor. The unfused build writes a timing cache that the fused
// build reads, so both see the Gemm's same choice: where that is the GEMV, the fused build has the "ws pooled gemv"
// record, one kernel less, and no step for the pool (profile_layers); where cuBLASLt won, nothing is fused.
TEST(PooledGemv, EngineHeadsMatchTheCpuExecutor) {
  WS_SKIP_WITHOUT_GPU();
  int fused_configs = 0;
  for (bool matmul : {false, true})
    for (Layout l : {Layout::kNchw, Layout::kNhwc})
      for (Precision p : {Precision::kFloat16, Precision::kFloat32}) {
        const std::string what = std::string("pooled head ") + (matmul ? "reshape_matmul " : "flatten_gemm ") + layout_name(l) + " " + precision_name(p);
        SCOPED_TRACE(what);
        const uint64_t seed = test::test_seed(what);
        const int64_t c = matmul ? 512 : 2048, n = matmul ? 100 : 1000;  // the Gemm: ResNet-50's head (the GEMV won it, run 71)
        ir::ModelBuilder b{13, "pooled_head"};
        b.input("x", ir::DType::kFloat32, {1, 16, 7, 7});
        b.initializer("cw", {c, 16, 1, 1}, test::random_values(size_t(c * 16), seed + 1, -0.3f, 0.3f));
        b.node("Conv", {"x", "cw"}, {"f"}, "conv");
        b.node("Relu", {"f"}, {"fr"}, "relu");
        b.node("GlobalAveragePool", {"fr"}, {"g"}, "gap");
        if (matmul) {
          b.initializer_i64("shape", {2}, {1, c});
          b.node("Reshape", {"g", "shape"}, {"v"}, "reshape");
          b.initializer("w", {c, n}, test::random_values(size_t(c * n), seed + 2, -0.05f, 0.05f));
          b.node("MatMul", {"v", "w"}, {"y"}, "head");
        } else {
          b.node("Flatten", {"g"}, {"v"}, "flatten");
          b.initializer("w", {n, c}, test::random_values(size_t(c * n), seed + 2, -0.05f, 0.05f));
          b.initializer("bias", {n}, test::random_values(size_t(n), seed + 3, -0.5f, 0.5f));
          b.node("Gemm", {"v", "w", "bias"}, {"y"}, "head").i("transB", 1);
        }
        b.output("y");
        const ir::Graph g = test::import_builder(b);
        const std::string cache = (std::filesystem::temp_directory_path() / ("ws_pooled_head_" + std::to_string(::getpid()) + ".json")).string();
        struct Cleanup { std::string path; ~Cleanup() { std::filesystem::remove(path); } } cleanup{cache};
        CudaBuildOptions o;
        o.layout = l;
        o.precision = p;
        o.timing_cache_path = cache;
        o.fuse_pooled_head = false;
        auto plain = CudaEngine::build(g, o);
        ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
        o.fuse_pooled_head = true;
        auto fused = CudaEngine::build(g, o);
        ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
        std::string gemv_choice, fused_choice;
        for (const TacticRecord& r : (*plain)->tactics())
          if (r.node == "head") gemv_choice = r.choice;
        for (const TacticRecord& r : (*fused)->tactics())
          if (r.node == "head") fused_choice = r.choice;
        std::printf("%s: unfused %s | fused %s; kernels %zu -> %zu\n", what.c_str(), gemv_choice.c_str(), fused_choice.c_str(),
                    (*plain)->kernel_count(), (*fused)->kernel_count());
        const bool gemv_won = gemv_choice.rfind("ws gemv", 0) == 0;
        EXPECT_EQ(fused_choice.rfind("ws pooled gemv", 0) == 0, gemv_won) << fused_choice;
        if (gemv_won) {
          ++fused_configs;
          EXPECT_EQ((*fused)->kernel_count() + 1, (*plain)->kernel_count());
          auto layers = test::profile_steps(**fused, 2);
          ASSERT_TRUE(layers.is_ok()) << layers.status().to_string();
          for (const auto& step : *layers) EXPECT_NE(step.node, "gap") << "the pool was absorbed but still has a step";
        }
        std::string err;
        const double tol = p == Precision::kFloat16 ? 2e-2 : 1e-4;
        const test::Comparison cmp = test::run_both(g, p, tol, tol, seed, &err, o);  // fused, the same cache
        ASSERT_TRUE(err.empty()) << err;
        EXPECT_TRUE(test::near_dump_inputs(what, cmp, {tol, tol}));
        EXPECT_GT(cmp.max_ref, 0.0);
      }
  // ResNet-50's head shape: the GEMV beat cuBLASLt by ~3x (run 71), so at least one configuration must have fused.
  EXPECT_GT(fused_configs, 0) << "no configuration fused: the test compared unfused heads only";
}

// Node names need not be unique: two few-row Gemms both named "fc", the first one's output read by a Relu, the second
// one's the graph output. The output cast is folded into the step that writes the output (matched by tensor, not by
// name), so the Relu still reads the first Gemm's fp16 result (review of 2418d90: a name match wrote it into the port).
TEST(Gemv, TwoHeadsWithOneNameMatchTheCpuExecutor) {
  WS_SKIP_WITHOUT_GPU();
  ir::ModelBuilder b{13, "gemv_two_heads"};
  b.input("x", ir::DType::kFloat32, {1, 64});
  const uint64_t seed = test::test_seed("gemv two heads");
  b.initializer("w1", {32, 64}, test::random_values(32 * 64, seed, -0.2f, 0.2f));
  b.initializer("w2", {10, 32}, test::random_values(10 * 32, seed + 1, -0.2f, 0.2f));
  b.node("Gemm", {"x", "w1"}, {"h"}, "fc").i("transB", 1);
  b.node("Relu", {"h"}, {"hr"}, "relu");
  b.node("Gemm", {"hr", "w2"}, {"y"}, "fc").i("transB", 1);
  b.output("y");
  const ir::Graph g = test::import_builder(b);
  auto e = CudaEngine::build(g, CudaBuildOptions{.precision = Precision::kFloat16});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  for (const TacticRecord& r : (*e)->tactics()) std::printf("gemv two heads: %s %s: %s\n", r.node.c_str(), r.op_type.c_str(), r.choice.c_str());
  std::string err;
  const test::Comparison c = test::run_both(g, Precision::kFloat16, 3e-3, 3e-3, seed, &err);
  ASSERT_TRUE(err.empty()) << err;
  EXPECT_TRUE(test::near_dump_inputs("gemv two heads", c, {3e-3, 3e-3}));
}

}  // namespace
}  // namespace ws
