// kernels::conv2d_pointwise_fp8 (FP8 E4M3 tensor cores, src/kernels/conv/conv.cu) against a CPU oracle that emulates
// the quantisation exactly: x rounded to fp16 (the engine's activations), xq = e4m3(x · inv_x_scale) and the weight
// codes of quantize_rows_e4m3 (src/engine/cuda/fp8_quant.h), both decoded with ws::fp8_e4m3_to_float
// (warpstream/numeric.h), products summed in double, times out_scale[m], + bias + residual, activation.
// The kernel sums the same exact products in fp32 and rounds y to fp16, so the tolerance is 2e-3 · max|ref| per case
// (fp16 output rounding: 2^-11 relative; fp32 summation order over K <= 1152 terms). That is 10x tighter than the
// fp16 kernels' test: a wrong scale, a transposed operand or a misplaced fragment fails it. The unquantised fp32
// result is printed beside it (the FP8 error itself), with a loose 0.1 · max|ref| bound against a gross error.
// Inputs ~ U(-1, 1) (x scaled per case), fresh seed per run (printed; WS_SEED replays); y and the split-K workspace
// poisoned with NaN bytes before each launch; a mismatch prints the first bad element with its operands' row/col.
// Needs compute capability 8.9+ (skipped below it). Filter: --gtest_filter='ConvFp8*'.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/cuda/fp8_quant.h"
#include "kernels/conv/conv.h"
#include "support/cuda_check.h"
#include "support/seed.h"
#include "cuda_engine_test_support.h"
#include "lanes_gpu_support.h"
#include "warpstream/numeric.h"

namespace ws {
namespace {

using kernels::Activation;
using kernels::Conv2dGeometry;

bool has_fp8() {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) != cudaSuccess) return false;
  return major * 10 + minor >= 89;
}
#define WS_REQUIRE_FP8_GPU()                                                  \
  WS_REQUIRE_LANES_GPU();                                                     \
  if (!has_fp8()) GTEST_SKIP() << "FP8 tensor cores need compute capability 8.9+"

struct Buf {
  void* p = nullptr;
  explicit Buf(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 16)), cudaSuccess); }
  ~Buf() { if (p) WS_EXPECT_CUDA(cudaFree(p)); }
};

std::vector<float> uniform(size_t n, uint64_t seed, float scale) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    x = scale * (static_cast<float>(s >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
  }
  return v;
}
float half_round(float v) { return __half2float(__float2half_rn(v)); }

Conv2dGeometry pw(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout) {
  Conv2dGeometry g;
  g.n = n; g.c_in = cin; g.in_h = h; g.in_w = w; g.c_out = cout; g.out_h = h; g.out_w = w;
  return g;
}

struct Case {
  std::string name;
  Conv2dGeometry g;
  float x_range;  // x ~ U(-x_range, x_range)
};

// in_kernel: split-K reduced inside the kernel (tile counters, zeroed once per case and checked zero after every launch).
void check_case(const Case& c, kernels::PointwiseTile tile, int splits, bool in_kernel = false) {
  const Conv2dGeometry& g = c.g;
  const std::string what = c.name + " tile " + kernels::pointwise_tile_name(tile) + " splits " + std::to_string(splits) + (in_kernel ? " in-kernel" : "");
  SCOPED_TRACE(what);
  const uint64_t seed = test::seed_for("fp8-" + what);
  const int64_t M = g.c_out, K = g.c_in, P = g.out_h * g.out_w;
  const size_t xn = size_t(g.n * K * P), yn = size_t(g.n * M * P);
  std::vector<float> x = uniform(xn, seed, c.x_range), w = uniform(size_t(M * K), seed + 1, 1.0f / std::sqrt(float(K)));
  const std::vector<float> bias = uniform(size_t(M), seed + 2, 0.5f);
  std::vector<float> res = uniform(yn, seed + 3, 1.0f);
  for (float& v : x) v = half_round(v);
  for (float& v : res) v = half_round(v);
  // calibration as the engine does it: amax of the tensor -> scale amax / 448
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  float x_scale = 0;
  ASSERT_TRUE(cudaexec::fp8_activation_scale(amax, x_scale));
  const float inv = 1.0f / x_scale;
  auto q = cudaexec::quantize_rows_e4m3(w.data(), M, K, kernels::kFp8KAlign, "test weight");
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  std::vector<float> out_scale(q->scale);
  for (float& s : out_scale) s *= x_scale;
  std::vector<float> xq(xn);
  for (size_t i = 0; i < xn; ++i) xq[i] = fp8_e4m3_to_float(float_to_fp8_e4m3(x[i] * inv));

  std::vector<__half> xh(xn), rh(yn);
  for (size_t i = 0; i < xn; ++i) xh[i] = __float2half_rn(x[i]);
  for (size_t i = 0; i < yn; ++i) rh[i] = __float2half_rn(res[i]);
  Buf dx(xn * 2), dy(yn * 2), dres(yn * 2), dcodes(q->codes.size()), dscale(size_t(M) * 4), dbias(size_t(M) * 4);
  const size_t ws_bytes = kernels::conv2d_pointwise_workspace_bytes(g, splits);
  Buf dws(ws_bytes);
  const size_t ncount = in_kernel ? kernels::conv2d_pointwise_tile_counters(g, tile, splits) : 0;
  Buf dcount(ncount * 4);
  if (ncount) ASSERT_EQ(test::memset_sync(dcount.p, 0, ncount * 4), cudaSuccess);
  ASSERT_EQ(test::upload_sync(dx.p, xh.data(), xn * 2), cudaSuccess);
  ASSERT_EQ(test::upload_sync(dres.p, rh.data(), yn * 2), cudaSuccess);
  ASSERT_EQ(test::upload_sync(dcodes.p, q->codes.data(), q->codes.size()), cudaSuccess);
  ASSERT_EQ(test::upload_sync(dscale.p, out_scale.data(), size_t(M) * 4), cudaSuccess);
  ASSERT_EQ(test::upload_sync(dbias.p, bias.data(), size_t(M) * 4), cudaSuccess);
  kernels::PointwiseFp8Weights fw{static_cast<const uint8_t*>(dcodes.p), q->stride, static_cast<const float*>(dscale.p), inv};

  struct Variant { Activation act; bool bias, residual; };
  for (const Variant v : {Variant{Activation::kNone, false, false}, Variant{Activation::kClip, true, false}, Variant{Activation::kRelu, true, true}}) {
    SCOPED_TRACE(std::string("act=") + kernels::activation_name(v.act) + (v.bias ? " bias" : "") + (v.residual ? " residual" : ""));
    std::vector<double> ref(yn), exact(yn);
    double max_ref = 0;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < P; ++p) {
          double acc = 0, acc32 = 0;
          for (int64_t k = 0; k < K; ++k) {
            const size_t xi = size_t((n * K + k) * P + p);
            acc += double(fp8_e4m3_to_float(q->codes[size_t(m * q->stride + k)])) * double(xq[xi]);
            acc32 += double(w[size_t(m * K + k)]) * double(x[xi]);
          }
          const size_t yi = size_t((n * M + m) * P + p);
          auto epi = [&](double a) {
            if (v.bias) a += bias[size_t(m)];
            if (v.residual) a += res[yi];
            if (v.act == Activation::kRelu) a = std::max(a, 0.0);
            if (v.act == Activation::kClip) a = std::min(std::max(a, 0.0), 6.0);
            return a;
          };
          ref[yi] = epi(acc * double(out_scale[size_t(m)]));
          exact[yi] = epi(acc32);
          max_ref = std::max(max_ref, std::fabs(ref[yi]));
        }
    kernels::ConvEpilogue e;
    e.bias = v.bias ? static_cast<const float*>(dbias.p) : nullptr;
    e.residual = v.residual ? dres.p : nullptr;
    e.act = v.act;
    if (v.act == Activation::kClip) { e.params.min = 0.0f; e.params.max = 6.0f; }
    ASSERT_EQ(test::memset_sync(dy.p, 0xFF, yn * 2), cudaSuccess);  // NaN poison
    if (ws_bytes) ASSERT_EQ(test::memset_sync(dws.p, 0xFF, ws_bytes), cudaSuccess);
    const Status s = kernels::conv2d_pointwise_fp8(tile, g, dx.p, fw, dy.p, e, nullptr, splits, ws_bytes ? dws.p : nullptr,
                                                   ncount ? static_cast<unsigned*>(dcount.p) : nullptr);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    if (ncount) {  // every tile's last block reset its counter
      std::vector<unsigned> cnt(ncount);
      ASSERT_EQ(cudaMemcpy(cnt.data(), dcount.p, ncount * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < ncount; ++i) ASSERT_EQ(cnt[i], 0u) << "tile counter " << i << " of " << ncount << " not reset";
    }
    std::vector<__half> got(yn);
    ASSERT_EQ(cudaMemcpy(got.data(), dy.p, yn * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    const double tol = 2e-3 * std::max(max_ref, 1e-3);
    size_t bad = 0;
    double max_diff = 0, max_q = 0;
    std::string first;
    for (size_t i = 0; i < yn; ++i) {
      const double gv = __half2float(got[i]);
      const double d = std::fabs(gv - ref[i]);
      if (!std::isnan(d)) max_diff = std::max(max_diff, d);
      max_q = std::max(max_q, std::fabs(ref[i] - exact[i]));
      if (std::isnan(gv) || !(d <= tol)) {
        if (bad++ == 0) {
          const size_t p = i % size_t(P), m = (i / size_t(P)) % size_t(M), n = i / size_t(P * M);
          first = "y[" + std::to_string(n) + "][" + std::to_string(m) + "][" + std::to_string(p) + "]: gpu " + std::to_string(gv) + " ref " +
                  std::to_string(ref[i]) + " (out_scale " + std::to_string(out_scale[m]) + ", x_scale " + std::to_string(x_scale) +
                  ", w row " + std::to_string(m) + " codes[0..1] " + std::to_string(q->codes[m * size_t(q->stride)]) + "," +
                  std::to_string(q->codes[m * size_t(q->stride) + 1]) + ")";
        }
      }
    }
    EXPECT_EQ(bad, 0u) << bad << " of " << yn << " beyond " << tol << " (2e-3 max|ref| " << max_ref << "); first " << first;
    EXPECT_LE(max_q, 0.1 * std::max(max_ref, 1e-3)) << "FP8 result far from the unquantised fp32 convolution";
    if (v.act == Activation::kRelu)
      std::printf("[ fp8 conv ] %-44s max|gpu-ref| %.3g, FP8 error vs fp32 %.3g (max|ref| %.3g, %zu values)\n", what.c_str(), max_diff, max_q,
                  max_ref, yn);
  }
}

TEST(ConvFp8, PointwiseMatchesDequantizedReference) {
  WS_REQUIRE_FP8_GPU();
  const std::vector<Case> cases = {
      {"effnet_expand_16x112x112_to_96", pw(1, 16, 112, 112, 96), 6.0f},
      {"odd_67x5x9_to_33_batch2", pw(2, 67, 5, 9, 33), 1.0f},   // K, N, M not multiples of anything; N odd: scalar loads
      {"n_even_not4_40x7x2_to_24", pw(1, 40, 7, 2, 24), 3.0f},  // H·W = 14: the 2-wide path of the 32 tile, scalars for 64
      {"effnet_project_1152x7x7_to_320", pw(1, 1152, 7, 7, 320), 6.0f},
      {"tiny_values_8x4x4_to_8", pw(1, 8, 4, 4, 8), 1e-3f},     // small amax: the scale, not 1, sets the range
  };
  for (const Case& c : cases)
    for (kernels::PointwiseTile t : {kernels::PointwiseTile::k64x64, kernels::PointwiseTile::k32x32})
    {
      for (int splits : {1, 3}) check_case(c, t, splits);
      check_case(c, t, 3, true);
    }
}

TEST(ConvFp8, BadOperandsAreInvalidArgument) {
  WS_REQUIRE_FP8_GPU();
  const Conv2dGeometry g = pw(1, 40, 4, 4, 8);
  Buf codes(8 * 64), scale(8 * 4), x(40 * 16 * 2), y(8 * 16 * 2);
  kernels::PointwiseFp8Weights w{static_cast<const uint8_t*>(codes.p), 64, static_cast<const float*>(scale.p), 1.0f};
  EXPECT_TRUE(kernels::conv2d_pointwise_fp8(kernels::PointwiseTile::k32x32, g, x.p, w, y.p, {}, nullptr).is_ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto expect_invalid = [&](kernels::PointwiseFp8Weights bad, const Conv2dGeometry& gg, int splits, const char* why) {
    const Status s = kernels::conv2d_pointwise_fp8(kernels::PointwiseTile::k32x32, gg, x.p, bad, y.p, {}, nullptr, splits, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << why << ": " << s.to_string();
  };
  kernels::PointwiseFp8Weights b = w;
  b.k_stride = 40;  // not a multiple of 32
  expect_invalid(b, g, 1, "k_stride 40");
  b = w; b.k_stride = 32;  // below c_in
  expect_invalid(b, g, 1, "k_stride < c_in");
  b = w; b.codes = nullptr;
  expect_invalid(b, g, 1, "null codes");
  b = w; b.inv_x_scale = 0.0f;
  expect_invalid(b, g, 1, "zero scale");
  b = w; b.inv_x_scale = INFINITY;
  expect_invalid(b, g, 1, "infinite scale");
  expect_invalid(w, g, 2, "split-K without workspace");
  Conv2dGeometry strided = g;
  strided.stride_h = strided.stride_w = 2; strided.out_h = strided.out_w = 2;
  expect_invalid(w, strided, 1, "stride 2 is not pointwise");
}

// fp8_obey_precision is a constraint, as TensorRT's kOBEY_PRECISION_CONSTRAINTS: a build in which no conv can run FP8
// (here: no calibrated tensor of the graph) is refused naming the option, not built silently in fp16. Without obey
// the same build succeeds (FP8 is a permission).
TEST(CudaEngineFp8, ObeyWithNoFp8ConvIsRefused) {
  WS_REQUIRE_FP8_GPU();
  CudaBuildOptions o;
  o.precision = Precision::kFloat8;
  o.fp8_activation_amax["no such tensor"] = 1.0f;
  o.fp8_obey_precision = true;
  auto e = CudaEngine::build(test::demo_graph(), o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << e.status().to_string();
  EXPECT_NE(e.status().message().find("--fp8-obey"), std::string::npos) << e.status().message();
  o.fp8_obey_precision = false;
  auto ok = CudaEngine::build(test::demo_graph(), o);
  EXPECT_TRUE(ok.is_ok()) << ok.status().to_string();
  auto arch = kernels::conv2d_pointwise_fp8_arch();
  ASSERT_TRUE(arch.is_ok()) << arch.status().to_string();
  EXPECT_GE(*arch, 89) << "the FP8 kernel's code for this device comes from compute_" << *arch;
}

}  // namespace
}  // namespace ws
