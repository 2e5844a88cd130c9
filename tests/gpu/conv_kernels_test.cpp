// WarpStream's own conv kernels (src/kernels/conv) vs the CPU reference (ref::conv_nd + the activation on the
// host), and the CUDA executor built with tactic_sources = warpstream only vs the CPU executor.
// Inputs, weights and bias ~ U(-1, 1), fresh seed per run (printed; WS_SEED replays). Outputs are
// poisoned with NaN (0xFF bytes) before each launch. Tolerances, relative to max|ref| of the case:
// fp32 1e-5 (FMA, fp32 accumulate; only the summation order differs), fp16 2e-2 (inputs/weights rounded to
// fp16 for both sides; fp16 output rounding + tensor-core accumulation order).
// Filter: --gtest_filter='ConvKernels*:CudaEngineConvTactics*' (EfficientNet-Lite0 case: needs the assets,
// scripts/fetch-assets.sh; skipped otherwise).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "cuda_engine_test_support.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/expand_depthwise.h"
#include "kernels/conv/mbconv.h"
#include "reference/reference.h"
#include "support/small_tests.h"
#include "support/cuda_check.h"

namespace ws {
namespace {

using kernels::Activation;
using kernels::Conv2dGeometry;
using kernels::ElemType;

enum class Kernel { kDepthwise, kDepthwise4, kPointwise64, kPointwise32, kDirect, kPointwise32Split5, kPointwise64Split3,
                    kPointwise32Split5InKernel, kPointwise64Split3InKernel,
                    // split-K over a thread-block cluster (fp16 only, compute capability 9.0+): 32x32 over 5 and 16 blocks, 64x64 over 3
                    kPointwise32Split5Cluster, kPointwise32Split16Cluster, kPointwise64Split3Cluster };
bool cluster_kernel(Kernel k) {
  return k == Kernel::kPointwise32Split5Cluster || k == Kernel::kPointwise32Split16Cluster || k == Kernel::kPointwise64Split3Cluster;
}
const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::kDepthwise: return "depthwise";
    case Kernel::kDepthwise4: return "depthwise_x4";
    case Kernel::kPointwise64: return "pointwise64";
    case Kernel::kPointwise32: return "pointwise32";
    case Kernel::kDirect: return "direct";
    case Kernel::kPointwise32Split5: return "pw32_splitk5";
    case Kernel::kPointwise64Split3: return "pw64_splitk3";
    case Kernel::kPointwise32Split5InKernel: return "pw32_splitk5_ik";
    case Kernel::kPointwise64Split3InKernel: return "pw64_splitk3_ik";
    case Kernel::kPointwise32Split5Cluster: return "pw32_splitk5_cluster";
    case Kernel::kPointwise32Split16Cluster: return "pw32_splitk16_cluster";
    case Kernel::kPointwise64Split3Cluster: return "pw64_splitk3_cluster";
  }
  return "?";
}

// Geometry with out_h/out_w computed from the rest.
Conv2dGeometry geo(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t group, int64_t k_h, int64_t k_w, int64_t stride,
                   int64_t dil, std::array<int64_t, 4> pads /* top, left, bottom, right */) {
  Conv2dGeometry g;
  g.n = n; g.c_in = cin; g.in_h = h; g.in_w = w; g.c_out = cout; g.group = group;
  g.kernel_h = k_h; g.kernel_w = k_w; g.stride_h = g.stride_w = stride; g.dilation_h = g.dilation_w = dil;
  g.pad_top = pads[0]; g.pad_left = pads[1]; g.pad_bottom = pads[2]; g.pad_right = pads[3];
  g.out_h = (h + pads[0] + pads[2] - ((k_h - 1) * dil + 1)) / stride + 1;
  g.out_w = (w + pads[1] + pads[3] - ((k_w - 1) * dil + 1)) / stride + 1;
  return g;
}

// A fused kernel's fp16 output `got` against the CPU reference `ref` (within 2e-2·max|ref|, no NaN) and against the
// output `other` of our separate kernels: how many differ at all (bitwise, as floats), how many by more than 4 fp16 ulps
// of the value (2^-8 relative, an absolute floor of 2^-8 near 0), the maxima, and the first offender of each.
struct FusedCheck {
  size_t bad = 0, far = 0, differ = 0;
  double tol = 0, max_diff = 0, max_other = 0;
  std::string first_bad, first_far, first_differ;
};

FusedCheck check_fused(const std::vector<float>& got, const std::vector<float>& ref, const std::vector<float>& other, double max_ref,
                       const char* other_name) {
  FusedCheck k;
  k.tol = 2e-2 * std::max(max_ref, 1e-3);
  auto at = [&](size_t i, const char* name, float v) {
    return "index " + std::to_string(i) + ": fused " + std::to_string(got[i]) + " " + name + " " + std::to_string(v);
  };
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(double(got[i]) - double(ref[i])), d2 = std::fabs(double(got[i]) - double(other[i]));
    if (!std::isnan(diff)) k.max_diff = std::max(k.max_diff, diff);
    if (!std::isnan(d2)) k.max_other = std::max(k.max_other, d2);
    if (std::isnan(got[i]) || !(diff <= k.tol))
      if (k.bad++ == 0) k.first_bad = at(i, "ref", ref[i]);
    if (std::isnan(d2) || !(d2 <= 4.0 * std::ldexp(std::max(std::fabs(double(other[i])), 1.0), -10)))
      if (k.far++ == 0) k.first_far = at(i, other_name, other[i]);
    if (std::memcmp(&got[i], &other[i], sizeof(float)) != 0)
      if (k.differ++ == 0) k.first_differ = at(i, other_name, other[i]);
  }
  return k;
}

// The CPU reference's parameters of a 2-D conv geometry.
ref::ConvParams conv_params(const Conv2dGeometry& g) {
  ref::ConvParams cp;
  cp.rank = 2; cp.n = g.n; cp.c_in = g.c_in; cp.c_out = g.c_out; cp.groups = g.group;
  cp.in[0] = g.in_h; cp.in[1] = g.in_w; cp.kernel[0] = g.kernel_h; cp.kernel[1] = g.kernel_w;
  cp.stride[0] = g.stride_h; cp.stride[1] = g.stride_w; cp.dilation[0] = g.dilation_h; cp.dilation[1] = g.dilation_w;
  cp.pad_begin[0] = g.pad_top; cp.pad_begin[1] = g.pad_left; cp.pad_end[0] = g.pad_bottom; cp.pad_end[1] = g.pad_right;
  cp.out[0] = g.out_h; cp.out[1] = g.out_w;
  return cp;
}

float host_act(float v, Activation a) {
  switch (a) {
    case Activation::kRelu: return v < 0.0f ? 0.0f : v;
    case Activation::kClip: return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
    default: return v;
  }
}

struct DeviceBuf {
  void* p = nullptr;
  explicit DeviceBuf(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 4)), cudaSuccess); }
  ~DeviceBuf() {
    if (p) WS_EXPECT_CUDA(cudaFree(p));
  }
};

void upload(ElemType t, const std::vector<float>& v, void* dst) {
  if (t == ElemType::kFloat32) {
    ASSERT_EQ(::ws::test::upload_sync(dst, v.data(), v.size() * 4), cudaSuccess);
  } else {
    std::vector<__half> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
    ASSERT_EQ(::ws::test::upload_sync(dst, h.data(), h.size() * 2), cudaSuccess);
  }
}

std::vector<float> download(ElemType t, const void* src, size_t n) {
  std::vector<float> v(n);
  if (t == ElemType::kFloat32) {
    EXPECT_EQ(cudaMemcpy(v.data(), src, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  } else {
    std::vector<__half> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), src, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < n; ++i) v[i] = __half2float(h[i]);
  }
  return v;
}

Status launch(Kernel k, ElemType t, const Conv2dGeometry& g, const void* x, const void* w, void* y, const kernels::ConvEpilogue& e) {
  switch (k) {
    case Kernel::kDepthwise: return kernels::conv2d_depthwise(t, g, x, w, y, e, nullptr, 1);
    case Kernel::kDepthwise4: return kernels::conv2d_depthwise(t, g, x, w, y, e, nullptr, 4);
    case Kernel::kPointwise64: return kernels::conv2d_pointwise(t, kernels::PointwiseTile::k64x64, g, x, w, y, e, nullptr);
    case Kernel::kPointwise32: return kernels::conv2d_pointwise(t, kernels::PointwiseTile::k32x32, g, x, w, y, e, nullptr);
    case Kernel::kDirect: return kernels::conv2d_direct(t, g, x, w, y, e, nullptr);
    case Kernel::kPointwise32Split5Cluster: return kernels::conv2d_pointwise_cluster(kernels::PointwiseTile::k32x32, g, x, w, y, e, nullptr, 5);
    case Kernel::kPointwise32Split16Cluster: return kernels::conv2d_pointwise_cluster(kernels::PointwiseTile::k32x32, g, x, w, y, e, nullptr, 16);
    case Kernel::kPointwise64Split3Cluster: return kernels::conv2d_pointwise_cluster(kernels::PointwiseTile::k64x64, g, x, w, y, e, nullptr, 3);
    case Kernel::kPointwise32Split5:
    case Kernel::kPointwise64Split3:
    case Kernel::kPointwise32Split5InKernel:
    case Kernel::kPointwise64Split3InKernel: {
      // split-K: partials in a workspace poisoned with NaN first (every partial must be written before the sum).
      // In-kernel reduction: tile counters zeroed once when allocated, never again — every launch must leave them
      // zero (a counter left behind makes a later launch sum too early or never: NaN or wrong values below).
      const bool in_kernel = k == Kernel::kPointwise32Split5InKernel || k == Kernel::kPointwise64Split3InKernel;
      const bool t32 = k == Kernel::kPointwise32Split5 || k == Kernel::kPointwise32Split5InKernel;
      const int splits = t32 ? 5 : 3;
      const auto tile = t32 ? kernels::PointwiseTile::k32x32 : kernels::PointwiseTile::k64x64;
      static DeviceBuf* ws = nullptr;
      static size_t ws_bytes = 0;
      const size_t need = kernels::conv2d_pointwise_workspace_bytes(g, splits);
      if (need > ws_bytes) { delete ws; ws = new DeviceBuf(need); ws_bytes = need; }
      EXPECT_EQ(::ws::test::memset_sync(ws->p, 0xFF, need), cudaSuccess);
      static DeviceBuf* counters = nullptr;
      static size_t counters_n = 0;
      const size_t nc = kernels::conv2d_pointwise_tile_counters(g, tile, splits);
      if (in_kernel && nc > counters_n) {
        delete counters;
        counters = new DeviceBuf(nc * 4);
        counters_n = nc;
        EXPECT_EQ(::ws::test::memset_sync(counters->p, 0, nc * 4), cudaSuccess);
      }
      return kernels::conv2d_pointwise(t, tile, g, x, w, y, e, nullptr, splits, ws->p, in_kernel ? static_cast<unsigned*>(counters->p) : nullptr);
    }
  }
  return internal_error("?");
}

// Runs kernel `k` on geometry `g` for both precisions × activation {none, relu, clip(0,6)} × bias {no, yes}
// (+ once with a residual) and compares with the CPU reference.
void check_kernel(const std::string& name, Kernel k, const Conv2dGeometry& g) {
  SCOPED_TRACE(name + " / " + kernel_name(k));
  const uint64_t seed = test::seed_for(name + kernel_name(k));
  const int64_t cin_g = g.c_in / g.group;
  const size_t xn = size_t(g.n * g.c_in * g.in_h * g.in_w), wn = size_t(g.c_out * cin_g * g.kernel_h * g.kernel_w);
  const size_t yn = size_t(g.n * g.c_out * g.out_h * g.out_w), inner = size_t(g.out_h * g.out_w);
  const auto x32 = test::random_values(xn, seed), w32 = test::random_values(wn, seed + 1);
  const auto b = test::random_values(size_t(g.c_out), seed + 2), res32 = test::random_values(yn, seed + 3);
  const ref::ConvParams cp = conv_params(g);
  DeviceBuf dx(xn * 4), dw(wn * 4), dy(yn * 4), dres(yn * 4), dbias(size_t(g.c_out) * 4);
  ASSERT_EQ(::ws::test::upload_sync(dbias.p, b.data(), b.size() * 4), cudaSuccess);
  for (ElemType t : {ElemType::kFloat32, ElemType::kFloat16}) {
    const bool half = t == ElemType::kFloat16;
    if (!half && cluster_kernel(k)) continue;  // fp16 only (refusing fp32 storage is the launcher's signature: no ElemType)
    const auto x = half ? test::round_to_half(x32) : x32;
    const auto w = half ? test::round_to_half(w32) : w32;
    const auto res = half ? test::round_to_half(res32) : res32;
    std::vector<float> raw(yn);
    ref::conv_nd(x.data(), w.data(), nullptr, raw.data(), cp);
    upload(t, x, dx.p);
    upload(t, w, dw.p);
    upload(t, res, dres.p);
    const double rel_tol = half ? 2e-2 : 1e-5;
    struct Variant { Activation act; bool bias, residual; };
    std::vector<Variant> variants;
    for (Activation a : {Activation::kNone, Activation::kRelu, Activation::kClip})
      for (bool bias : {false, true}) variants.push_back({a, bias, false});
    variants.push_back({Activation::kNone, true, true});
    for (const Variant& v : variants) {
      SCOPED_TRACE(std::string(half ? "fp16" : "fp32") + " act=" + kernels::activation_name(v.act) + (v.bias ? " bias" : "") +
                   (v.residual ? " residual" : ""));
      std::vector<float> ref(yn);
      double max_ref = 0;
      for (size_t i = 0; i < yn; ++i) {
        float s = raw[i];
        if (v.bias) s += b[(i / inner) % size_t(g.c_out)];
        if (v.residual) s += res[i];
        ref[i] = host_act(s, v.act);
        max_ref = std::max(max_ref, std::fabs(double(ref[i])));
      }
      kernels::ConvEpilogue e;
      e.bias = v.bias ? static_cast<const float*>(dbias.p) : nullptr;
      e.residual = v.residual ? dres.p : nullptr;
      e.act = v.act;
      if (v.act == Activation::kClip) { e.params.min = 0.0f; e.params.max = 6.0f; }
      ASSERT_EQ(::ws::test::memset_sync(dy.p, 0xFF, yn * 4), cudaSuccess);  // NaN poison (both element types)
      Status s = launch(k, t, g, dx.p, dw.p, dy.p, e);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto got = download(t, dy.p, yn);
      const double tol = rel_tol * std::max(max_ref, 1e-3);
      size_t bad = 0;
      double max_diff = 0;
      std::string first;
      for (size_t i = 0; i < yn; ++i) {
        const double d = std::fabs(double(got[i]) - double(ref[i]));
        if (!std::isnan(d)) max_diff = std::max(max_diff, d);
        if (std::isnan(got[i]) || !(d <= tol)) {
          if (bad++ == 0) first = "index " + std::to_string(i) + ": gpu " + std::to_string(got[i]) + " ref " + std::to_string(ref[i]);
        }
      }
      EXPECT_EQ(bad, 0u) << bad << " of " << yn << " beyond " << tol << " (" << rel_tol << "·max|ref| " << max_ref << "); first " << first;
      if (v.act == Activation::kClip && v.bias && !v.residual)
        std::printf("[ conv     ] %-34s %-11s %s max|diff| %.3g (max|ref| %.3g, %zu values)\n", name.c_str(), kernel_name(k),
                    half ? "fp16" : "fp32", max_diff, max_ref, yn);
    }
  }
}

TEST(ConvKernels, DepthwiseMatchesReference) {
  WS_REQUIRE_LANES_GPU();
  for (Kernel k : {Kernel::kDepthwise, Kernel::kDepthwise4}) {
    check_kernel("dw3x3_s1_sym_112x112x32", k, geo(1, 32, 112, 112, 32, 32, 3, 3, 1, 1, {1, 1, 1, 1}));
    check_kernel("dw3x3_s2_asym0011_112x112x32", k, geo(1, 32, 112, 112, 32, 32, 3, 3, 2, 1, {0, 0, 1, 1}));
    check_kernel("dw5x5_s1_sym_7x7x1152", k, geo(1, 1152, 7, 7, 1152, 1152, 5, 5, 1, 1, {2, 2, 2, 2}));
    check_kernel("dw5x5_s2_asym0011_13x9_n2", k, geo(2, 8, 13, 9, 8, 8, 5, 5, 2, 1, {0, 0, 1, 1}));
    check_kernel("dw3x3_s2_asym1122_13x9", k, geo(1, 5, 13, 9, 5, 5, 3, 3, 2, 1, {1, 1, 2, 2}));
    check_kernel("dw3x3_s1_nopad_7x7x1152_n3", k, geo(3, 1152, 7, 7, 1152, 1152, 3, 3, 1, 1, {0, 0, 0, 0}));
    check_kernel("dw7x5_generic_d2_s2", k, geo(1, 6, 17, 13, 6, 6, 7, 5, 2, 2, {3, 2, 4, 5}));
    check_kernel("dw3x3_s1_w3_narrow", k, geo(1, 4, 5, 3, 4, 4, 3, 3, 1, 1, {1, 1, 1, 1}));
  }
}

int cc_major() {
  int dev = 0, major = 0;
  EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  return major;
}

TEST(ConvKernels, PointwiseMatchesReference) {
  WS_REQUIRE_LANES_GPU();
  std::vector<Kernel> ks = {Kernel::kPointwise64, Kernel::kPointwise32, Kernel::kPointwise32Split5, Kernel::kPointwise64Split3,
                            Kernel::kPointwise32Split5InKernel, Kernel::kPointwise64Split3InKernel};
  if (cc_major() >= 9)
    ks.insert(ks.end(), {Kernel::kPointwise32Split5Cluster, Kernel::kPointwise32Split16Cluster, Kernel::kPointwise64Split3Cluster});
  else
    std::printf("[ conv     ] split-K over a cluster not checked: thread-block clusters need compute capability 9.0\n");
  for (Kernel k : ks) {
    check_kernel("pw_M17_N37_K19_n2", k, geo(2, 19, 37, 1, 17, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    check_kernel("pw_M320_N49_K1152_proj", k, geo(1, 1152, 7, 7, 320, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    check_kernel("pw_M96_N196_K481_odd_n2", k, geo(2, 481, 14, 14, 96, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    check_kernel("pw_M1280_N49_K320", k, geo(1, 320, 7, 7, 1280, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    check_kernel("pw_M16_N12544_K32", k, geo(1, 32, 112, 112, 16, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    check_kernel("pw_M192_N3136_K32", k, geo(1, 32, 56, 56, 192, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    check_kernel("pw_M5_N3_K70_odd", k, geo(1, 70, 3, 1, 5, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    // fp16 pipeline forms: 16-byte loads of both operands over 8 k-tiles (the 4-deep register pipeline
    // refills), and 16-byte X / scalar W loads (K % 8 != 0) with 16-byte epilogue stores, batch 2
    check_kernel("pw_M40_N784_K240_vec", k, geo(1, 240, 28, 28, 40, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
    check_kernel("pw_M24_N784_K20_n2_vecx", k, geo(2, 20, 28, 28, 24, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
  }
}

// Random operands of a pointwise conv `g` in element type `t` — x, w, residual and bias ~ U(-1, 1) from `seed` (+0..3) —
// with the epilogue the split-K form tests use (bias, residual, clip(0, 6)).
struct PointwiseOperands {
  size_t yn;
  DeviceBuf dx, dw, dres, dbias;
  kernels::ConvEpilogue e;
  PointwiseOperands(const Conv2dGeometry& g, ElemType t, uint64_t seed)
      : yn(size_t(g.n * g.c_out * g.out_h * g.out_w)), dx(size_t(g.n * g.c_in * g.in_h * g.in_w) * 4), dw(size_t(g.c_out * g.c_in) * 4),
        dres(yn * 4), dbias(size_t(g.c_out) * 4) {
    upload(t, test::random_values(size_t(g.n * g.c_in * g.in_h * g.in_w), seed), dx.p);
    upload(t, test::random_values(size_t(g.c_out * g.c_in), seed + 1), dw.p);
    upload(t, test::random_values(yn, seed + 3), dres.p);
    const auto b = test::random_values(size_t(g.c_out), seed + 2);
    EXPECT_EQ(::ws::test::upload_sync(dbias.p, b.data(), b.size() * 4), cudaSuccess);
    e.bias = static_cast<const float*>(dbias.p);
    e.residual = dres.p;
    e.act = Activation::kClip;
    e.params.min = 0.0f;
    e.params.max = 6.0f;
  }
};

// Split-K reduced in the kernel (tile counters) gives the bits of the two-kernel form (same summation order), launch
// after launch on the same counters, and leaves every counter zero. Values are checked against the CPU reference in
// PointwiseMatchesReference (the *_ik kernels); this pins determinism and the counters' reset.
TEST(ConvKernels, SplitKInKernelReductionIsBitwiseTheReduceKernel) {
  WS_REQUIRE_LANES_GPU();
  struct Case { const char* name; Conv2dGeometry g; kernels::PointwiseTile tile; int splits; };
  const Case cases[] = {
      {"proj_1152x7x7_to_320_t32_s16", geo(1, 1152, 7, 7, 320, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k32x32, 16},
      {"odd_481x14x14_to_96_n2_t64_s4", geo(2, 481, 14, 14, 96, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k64x64, 4},
      {"head_320x7x7_to_1280_t32_s8", geo(1, 320, 7, 7, 1280, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k32x32, 8},
  };
  for (const Case& c : cases)
    for (ElemType t : {ElemType::kFloat32, ElemType::kFloat16}) {
      SCOPED_TRACE(std::string(c.name) + (t == ElemType::kFloat16 ? " fp16" : " fp32"));
      const Conv2dGeometry& g = c.g;
      const PointwiseOperands op(g, t, test::seed_for(std::string("splitk-ik-") + c.name));
      const DeviceBuf &dx = op.dx, &dw = op.dw;
      const kernels::ConvEpilogue& e = op.e;
      const size_t yn = op.yn, eb = t == ElemType::kFloat16 ? 2 : 4;
      DeviceBuf y_two(yn * 4), y_one(yn * 4);
      const size_t wsb = kernels::conv2d_pointwise_workspace_bytes(g, c.splits), nc = kernels::conv2d_pointwise_tile_counters(g, c.tile, c.splits);
      ASSERT_GT(nc, 0u);
      DeviceBuf ws(wsb), counters(nc * 4);
      ASSERT_EQ(::ws::test::memset_sync(counters.p, 0, nc * 4), cudaSuccess);
      ASSERT_EQ(::ws::test::memset_sync(y_two.p, 0xFF, yn * eb), cudaSuccess);
      ASSERT_EQ(::ws::test::memset_sync(ws.p, 0xFF, wsb), cudaSuccess);
      Status s = kernels::conv2d_pointwise(t, c.tile, g, dx.p, dw.p, y_two.p, e, nullptr, c.splits, ws.p);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<unsigned char> want(yn * eb), got(yn * eb);
      ASSERT_EQ(cudaMemcpy(want.data(), y_two.p, yn * eb, cudaMemcpyDeviceToHost), cudaSuccess);
      for (int rep = 0; rep < 3; ++rep) {
        SCOPED_TRACE("launch " + std::to_string(rep));
        ASSERT_EQ(::ws::test::memset_sync(y_one.p, 0xFF, yn * eb), cudaSuccess);
        ASSERT_EQ(::ws::test::memset_sync(ws.p, 0xFF, wsb), cudaSuccess);
        s = kernels::conv2d_pointwise(t, c.tile, g, dx.p, dw.p, y_one.p, e, nullptr, c.splits, ws.p, static_cast<unsigned*>(counters.p));
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(got.data(), y_one.p, yn * eb, cudaMemcpyDeviceToHost), cudaSuccess);
        size_t diff = 0, first = 0;
        for (size_t i = 0; i < yn * eb; ++i)
          if (got[i] != want[i] && diff++ == 0) first = i / eb;
        const auto gv = download(t, y_one.p, yn), wv = download(t, y_two.p, yn);
        EXPECT_EQ(diff, 0u) << diff << " bytes differ; first at element " << first << ": in-kernel " << gv[first] << " reduce kernel " << wv[first];
        std::vector<unsigned> cnt(nc);
        ASSERT_EQ(cudaMemcpy(cnt.data(), counters.p, nc * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t i = 0; i < nc; ++i) ASSERT_EQ(cnt[i], 0u) << "tile counter " << i << " of " << nc << " not reset";
      }
    }
}

// Split-K over a thread-block cluster gives the bits of the two-kernel form with the same tile and splits (the same
// summation order: 0.0f + partial 0 + partial 1 ...), launch after launch, at every cluster size the engine times (4, 8,
// 16) plus 2 and an odd 3, batch 2, with bias, residual and clip. Values against the CPU reference are checked in
// PointwiseMatchesReference (the *_cluster kernels); refusals in PointwiseClusterRefusesBadInputBeforeTheDevice.
TEST(ConvKernels, SplitKClusterIsBitwiseTheReduceKernel) {
  WS_REQUIRE_LANES_GPU();
  if (cc_major() < 9) GTEST_SKIP() << "thread-block clusters need compute capability 9.0";
  struct Case { const char* name; Conv2dGeometry g; kernels::PointwiseTile tile; int splits; };
  const Case cases[] = {
      {"proj_1152x7x7_to_320_t32_s16", geo(1, 1152, 7, 7, 320, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k32x32, 16},
      {"proj_672x7x7_to_192_t32_s8", geo(1, 672, 7, 7, 192, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k32x32, 8},
      {"odd_481x14x14_to_96_n2_t64_s4", geo(2, 481, 14, 14, 96, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k64x64, 4},
      {"head_320x7x7_to_1280_t32_s4", geo(1, 320, 7, 7, 1280, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k32x32, 4},
      {"exp_80x14x14_to_480_t32_s2", geo(1, 80, 14, 14, 480, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k32x32, 2},
      {"odd_70x3x1_to_5_t64_s3", geo(1, 70, 3, 1, 5, 1, 1, 1, 1, 1, {0, 0, 0, 0}), kernels::PointwiseTile::k64x64, 3},
  };
  const ElemType t = ElemType::kFloat16;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Conv2dGeometry& g = c.g;
    const PointwiseOperands op(g, t, test::seed_for(std::string("splitk-cluster-") + c.name));
    const DeviceBuf &dx = op.dx, &dw = op.dw;
    const kernels::ConvEpilogue& e = op.e;
    const size_t yn = op.yn;
    DeviceBuf y_two(yn * 2), y_cl(yn * 2);
    const size_t wsb = kernels::conv2d_pointwise_workspace_bytes(g, c.splits);
    DeviceBuf ws(wsb);
    ASSERT_EQ(::ws::test::memset_sync(y_two.p, 0xFF, yn * 2), cudaSuccess);
    ASSERT_EQ(::ws::test::memset_sync(ws.p, 0xFF, wsb), cudaSuccess);
    Status s = kernels::conv2d_pointwise(t, c.tile, g, dx.p, dw.p, y_two.p, e, nullptr, c.splits, ws.p);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<unsigned char> want(yn * 2), got(yn * 2);
    ASSERT_EQ(cudaMemcpy(want.data(), y_two.p, yn * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int rep = 0; rep < 3; ++rep) {
      SCOPED_TRACE("launch " + std::to_string(rep));
      ASSERT_EQ(::ws::test::memset_sync(y_cl.p, 0xFF, yn * 2), cudaSuccess);
      s = kernels::conv2d_pointwise_cluster(c.tile, g, dx.p, dw.p, y_cl.p, e, nullptr, c.splits);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(got.data(), y_cl.p, yn * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      size_t diff = 0, first = 0;
      for (size_t i = 0; i < yn * 2; ++i)
        if (got[i] != want[i] && diff++ == 0) first = i / 2;
      const auto gv = download(t, y_cl.p, yn), wv = download(t, y_two.p, yn);
      EXPECT_EQ(diff, 0u) << diff << " bytes differ; first at element " << first << ": cluster " << gv[first] << " reduce kernel " << wv[first];
    }
    if (c.splits == 16) std::printf("[ cluster  ] %-34s split-K 16 (non-portable cluster) bitwise the reduce kernel\n", c.name);
  }
}

// What conv2d_pointwise_cluster refuses, each before any CUDA call (so this runs without a GPU, in CI too): a
// non-pointwise conv, split counts outside 2..16, an unknown tile, null and misaligned operands, batch × splits above
// 65535, and a c_out so large that its channel tiles exceed the grid's 65535. The pointers are never dereferenced.
TEST(ConvKernels, PointwiseClusterRefusesBadInputBeforeTheDevice) {
  alignas(16) static unsigned char buf[64];
  void* p = buf;
  kernels::ConvEpilogue none;
  const Conv2dGeometry pw = geo(1, 64, 7, 7, 32, 1, 1, 1, 1, 1, {0, 0, 0, 0}), k3 = geo(1, 64, 7, 7, 32, 1, 3, 3, 1, 1, {1, 1, 1, 1});
  auto expect_invalid = [&](const Conv2dGeometry& gg, int splits, const void* x, const kernels::ConvEpilogue& e, const char* what,
                            kernels::PointwiseTile tile = kernels::PointwiseTile::k32x32) {
    const Status st = kernels::conv2d_pointwise_cluster(tile, gg, x, p, p, e, nullptr, splits);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << what << ": " << st.to_string();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  };
  expect_invalid(k3, 4, p, none, "1x1");
  expect_invalid(pw, 0, p, none, "split-K");
  expect_invalid(pw, 1, p, none, "split-K");
  expect_invalid(pw, 17, p, none, "split-K");
  expect_invalid(pw, 4, p, none, "unknown tile", static_cast<kernels::PointwiseTile>(7));
  expect_invalid(pw, 4, nullptr, none, "null");
  expect_invalid(pw, 4, static_cast<char*>(p) + 1, none, "aligned");  // an odd fp16 address
  kernels::ConvEpilogue odd_bias;
  odd_bias.bias = reinterpret_cast<const float*>(static_cast<char*>(p) + 2);
  expect_invalid(pw, 4, p, odd_bias, "aligned");
  expect_invalid(geo(4097, 64, 1, 1, 32, 1, 1, 1, 1, 1, {0, 0, 0, 0}), 16, p, none, "65535");         // batch × splits
  expect_invalid(geo(1, 1, 1, 1, 2097153, 1, 1, 1, 1, 1, {0, 0, 0, 0}), 4, p, none, "c_out too large");  // 65537 channel tiles
}

// The fused depthwise → pointwise kernel (kernels::conv2d_depthwise_pointwise) against (a) the CPU reference of the
// pair — ref::conv_nd for the depthwise conv on fp16-rounded operands, + bias, clip(0, 6), rounded to fp16 as the
// unfused pair stores it, then ref::conv_nd for the 1×1 projection + bias + residual — within 2e-2·max|ref| (fp16
// output rounding + tensor-core accumulation order), and (b) our two kernels run back to back (conv2d_depthwise →
// conv2d_pointwise, the same tile and split-K), bit for bit: the fused kernel computes the depthwise values with the
// depthwise kernel's arithmetic and feeds them to the same wmma GEMM. Outputs and split-K partials are poisoned with
// NaN first. Shapes: EfficientNet-Lite0's MBConv pairs (3×3 / 5×5, strides 1 / 2, maps 112² … 7², expanded channels
// 32 … 1152) and off-tile edges (odd channel and pixel counts, batch 2, asymmetric pads, a 7×5 dilated kernel: the
// generic depthwise loop).
TEST(ConvKernels, DepthwisePointwiseMatchesReferenceAndThePairBitwise) {
  WS_REQUIRE_LANES_GPU();
  struct Case { const char* name; Conv2dGeometry dw; int64_t c_out; bool residual; };
  const Case cases[] = {
      {"b0_dw3x3_s1_112x112x32_to16", geo(1, 32, 112, 112, 32, 32, 3, 3, 1, 1, {1, 1, 1, 1}), 16, false},
      {"b1_dw3x3_s2_112x112x96_to24", geo(1, 96, 112, 112, 96, 96, 3, 3, 2, 1, {0, 0, 1, 1}), 24, false},
      {"b4_dw5x5_s1_28x28x240_to40_res", geo(1, 240, 28, 28, 240, 240, 5, 5, 1, 1, {2, 2, 2, 2}), 40, true},
      {"b9_dw5x5_s1_14x14x672_to112_res", geo(1, 672, 14, 14, 672, 672, 5, 5, 1, 1, {2, 2, 2, 2}), 112, true},
      {"b13_dw5x5_s1_7x7x1152_to192_res", geo(1, 1152, 7, 7, 1152, 1152, 5, 5, 1, 1, {2, 2, 2, 2}), 192, true},
      {"b15_dw3x3_s1_7x7x1152_to320", geo(1, 1152, 7, 7, 1152, 1152, 3, 3, 1, 1, {1, 1, 1, 1}), 320, false},
      {"odd_dw3x3_s2_13x9x37_to19_n2_res", geo(2, 37, 13, 9, 37, 37, 3, 3, 2, 1, {1, 1, 2, 2}), 19, true},
      {"generic_dw7x5_d2_s2_17x13x40_to33", geo(1, 40, 17, 13, 40, 40, 7, 5, 2, 2, {3, 2, 4, 5}), 33, false},
  };
  struct Form { kernels::PointwiseTile tile; int splits; };
  const Form forms[] = {{kernels::PointwiseTile::k32x32, 1}, {kernels::PointwiseTile::k64x64, 1}, {kernels::PointwiseTile::k32x32, 4},
                        {kernels::PointwiseTile::k64x64, 3}};
  for (const Case& c : cases) {
    const Conv2dGeometry& gd = c.dw;
    const Conv2dGeometry gp = geo(gd.n, gd.c_out, gd.out_h, gd.out_w, c.c_out, 1, 1, 1, 1, 1, {0, 0, 0, 0});
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(kernels::conv2d_depthwise_pointwise_applicable(gd, gp));
    const uint64_t seed = test::seed_for(std::string("dwpw-") + c.name);
    const size_t xn = size_t(gd.n * gd.c_in * gd.in_h * gd.in_w), wdn = size_t(gd.c_out * gd.kernel_h * gd.kernel_w);
    const size_t dn = size_t(gd.n * gd.c_out * gd.out_h * gd.out_w), wpn = size_t(gp.c_out * gp.c_in);
    const size_t yn = size_t(gp.n * gp.c_out * gp.out_h * gp.out_w), inner = size_t(gp.out_h * gp.out_w), dinner = size_t(gd.out_h * gd.out_w);
    const auto x = test::round_to_half(test::random_values(xn, seed)), wd = test::round_to_half(test::random_values(wdn, seed + 1));
    const auto wp = test::round_to_half(test::random_values(wpn, seed + 2)), res = test::round_to_half(test::random_values(yn, seed + 3));
    const auto bd = test::random_values(size_t(gd.c_out), seed + 4), bp = test::random_values(size_t(gp.c_out), seed + 5);
    std::vector<float> d(dn), ref(yn);
    ref::conv_nd(x.data(), wd.data(), nullptr, d.data(), conv_params(gd));
    for (size_t i = 0; i < dn; ++i) d[i] = host_act(d[i] + bd[(i / dinner) % size_t(gd.c_out)], Activation::kClip);
    d = test::round_to_half(d);  // the depthwise output as the pair stores it (fp16)
    ref::conv_nd(d.data(), wp.data(), nullptr, ref.data(), conv_params(gp));
    double max_ref = 0;
    for (size_t i = 0; i < yn; ++i) {
      ref[i] += bp[(i / inner) % size_t(gp.c_out)] + (c.residual ? res[i] : 0.0f);
      max_ref = std::max(max_ref, std::fabs(double(ref[i])));
    }
    DeviceBuf dx(xn * 2), dwd(wdn * 2), dwp(wpn * 2), dres(yn * 2), dbd(bd.size() * 4), dbp(bp.size() * 4), dd(dn * 2), y_fused(yn * 2),
        y_pair(yn * 2), ws(kernels::conv2d_pointwise_workspace_bytes(gp, 4));
    upload(ElemType::kFloat16, x, dx.p);
    upload(ElemType::kFloat16, wd, dwd.p);
    upload(ElemType::kFloat16, wp, dwp.p);
    upload(ElemType::kFloat16, res, dres.p);
    ASSERT_EQ(::ws::test::upload_sync(dbd.p, bd.data(), bd.size() * 4), cudaSuccess);
    ASSERT_EQ(::ws::test::upload_sync(dbp.p, bp.data(), bp.size() * 4), cudaSuccess);
    kernels::ConvEpilogue ed, ep;
    ed.bias = static_cast<const float*>(dbd.p);
    ed.act = Activation::kClip;
    ed.params.min = 0.0f;
    ed.params.max = 6.0f;
    ep.bias = static_cast<const float*>(dbp.p);
    ep.residual = c.residual ? dres.p : nullptr;
    for (const Form& f : forms) {
      SCOPED_TRACE(std::string(kernels::pointwise_tile_name(f.tile)) + " split-K " + std::to_string(f.splits));
      const size_t wsb = kernels::conv2d_pointwise_workspace_bytes(gp, f.splits);
      ASSERT_EQ(::ws::test::memset_sync(y_fused.p, 0xFF, yn * 2), cudaSuccess);
      if (wsb) ASSERT_EQ(::ws::test::memset_sync(ws.p, 0xFF, wsb), cudaSuccess);
      Status s = kernels::conv2d_depthwise_pointwise(f.tile, gd, gp, dx.p, dwd.p, ed, dwp.p, y_fused.p, ep, nullptr, f.splits, ws.p);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto got = download(ElemType::kFloat16, y_fused.p, yn);
      // the pair: depthwise kernel → fp16 d in global memory → pointwise kernel (same tile, same split-K)
      ASSERT_EQ(::ws::test::memset_sync(dd.p, 0xFF, dn * 2), cudaSuccess);
      ASSERT_EQ(::ws::test::memset_sync(y_pair.p, 0xFF, yn * 2), cudaSuccess);
      if (wsb) ASSERT_EQ(::ws::test::memset_sync(ws.p, 0xFF, wsb), cudaSuccess);
      s = kernels::conv2d_depthwise(ElemType::kFloat16, gd, dx.p, dwd.p, dd.p, ed, nullptr, 1);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      s = kernels::conv2d_pointwise(ElemType::kFloat16, f.tile, gp, dd.p, dwp.p, y_pair.p, ep, nullptr, f.splits, ws.p);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto pair = download(ElemType::kFloat16, y_pair.p, yn);
      const FusedCheck k = check_fused(got, ref, pair, max_ref, "pair");
      EXPECT_EQ(k.bad, 0u) << k.bad << " of " << yn << " beyond " << k.tol << " (2e-2·max|ref| " << max_ref << "); first " << k.first_bad;
      EXPECT_EQ(k.differ, 0u) << k.differ << " of " << yn << " differ from the unfused pair; first " << k.first_differ;
      std::printf("[ dwpw     ] %-36s %s split-K %d max|diff| %.3g (max|ref| %.3g, %zu values), %zu differ from the pair\n", c.name,
                  kernels::pointwise_tile_name(f.tile), f.splits, k.max_diff, max_ref, yn, k.differ);
    }
  }
}

// The fused launcher refuses what it cannot run, before any device work (so no GPU is needed).
TEST(ConvKernels, DepthwisePointwiseRefusesMismatchedPairs) {
  const Conv2dGeometry dw = geo(1, 32, 14, 14, 32, 32, 3, 3, 1, 1, {1, 1, 1, 1});
  const Conv2dGeometry pw = geo(1, 32, 14, 14, 16, 1, 1, 1, 1, 1, {0, 0, 0, 0});
  int dummy = 0;
  void* p = &dummy;
  kernels::ConvEpilogue none;
  auto expect_invalid = [&](const Conv2dGeometry& a, const Conv2dGeometry& b, const kernels::ConvEpilogue& ea, int splits, void* ws,
                            const char* needle) {
    const Status s = kernels::conv2d_depthwise_pointwise(kernels::PointwiseTile::k32x32, a, b, p, p, ea, p, p, none, nullptr, splits, ws);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_invalid(pw, pw, none, 1, nullptr, "not depthwise");
  expect_invalid(dw, dw, none, 1, nullptr, "not pointwise");
  expect_invalid(dw, geo(1, 16, 14, 14, 16, 1, 1, 1, 1, 1, {0, 0, 0, 0}), none, 1, nullptr, "is not the depthwise output");
  expect_invalid(dw, geo(1, 32, 7, 7, 16, 1, 1, 1, 1, 1, {0, 0, 0, 0}), none, 1, nullptr, "is not the depthwise output");
  kernels::ConvEpilogue with_res;
  with_res.residual = p;
  expect_invalid(dw, pw, with_res, 1, nullptr, "residual");
  expect_invalid(dw, pw, none, 4, nullptr, "workspace");
  expect_invalid(dw, pw, none, 0, p, "split-K");
  EXPECT_FALSE(kernels::conv2d_depthwise_pointwise_applicable(dw, dw));
  EXPECT_TRUE(kernels::conv2d_depthwise_pointwise_applicable(dw, pw));
}

// The fused MBConv block (kernels/conv/mbconv.h) against the CPU reference of the three convs (e and d rounded to fp16
// where the separate kernels store them) and against our three separate kernels (expand pointwise 32x32 → depthwise →
// project pointwise 32x32): equal up to the projection's fp32 summation order (split over the cluster's blocks), so
// at most a few fp16 ulps. Every cluster size whose shared memory the device allows; outputs poisoned with NaN.
// The expand (1x1, bias, ReLU6) → depthwise (bias, ReLU6) chain of an MBConv block on one seed, shared by the fused
// MBConv and expand → depthwise tests: fp16-rounded operands (x, weights; biases fp32), the CPU reference (e rounded to
// fp16 where the expand kernel stores it; d_ref after its activation, in float), the operands and epilogues on the
// device, and our two separate kernels' d (pointwise 32x32 without split-K, then depthwise) in `dd` (poisoned first).
// Weights are scaled so that the activations stay O(1) through the 1x1 sums (fan-in up to 1152); `k` scales the taps.
// v · f, rounded to fp16 (random weights scaled to a fan-in).
std::vector<float> scaled_half(std::vector<float> v, double f) {
  for (float& q : v) q = float(q * f);
  return test::round_to_half(v);
}

struct ExDwChain {
  size_t xn = 0, en = 0, dn = 0;
  std::vector<float> x, we, wd, be, bd, d_ref;
  double max_d = 0;  // max |d_ref|
  std::unique_ptr<DeviceBuf> dx, dwe, dwd, dbe, dbd, de, dd;
  kernels::ConvEpilogue ee, ed;
};
void make_exdw_chain(const Conv2dGeometry& ge, const Conv2dGeometry& gd, int64_t k, uint64_t seed, ExDwChain& c) {
  c.xn = size_t(ge.n * ge.c_in * ge.in_h * ge.in_w);
  c.en = size_t(ge.n * ge.c_out * ge.out_h * ge.out_w);
  c.dn = size_t(gd.n * gd.c_out * gd.out_h * gd.out_w);
  const size_t wen = size_t(ge.c_out * ge.c_in), wdn = size_t(gd.c_out * gd.kernel_h * gd.kernel_w);
  const size_t inner_e = size_t(ge.out_h * ge.out_w), inner_d = size_t(gd.out_h * gd.out_w), ce = size_t(ge.c_out);
  c.x = test::round_to_half(test::random_values(c.xn, seed));
  c.we = scaled_half(test::random_values(wen, seed + 1), 2.0 / std::sqrt(double(ge.c_in)));
  c.wd = scaled_half(test::random_values(wdn, seed + 2), 1.0 / double(k));
  c.be = test::random_values(ce, seed + 5);
  c.bd = test::random_values(ce, seed + 6);
  std::vector<float> e(c.en);
  c.d_ref.assign(c.dn, 0.0f);
  ref::conv_nd(c.x.data(), c.we.data(), nullptr, e.data(), conv_params(ge));
  for (size_t i = 0; i < c.en; ++i) e[i] = host_act(e[i] + c.be[(i / inner_e) % ce], Activation::kClip);
  e = test::round_to_half(e);
  ref::conv_nd(e.data(), c.wd.data(), nullptr, c.d_ref.data(), conv_params(gd));
  for (size_t i = 0; i < c.dn; ++i) {
    c.d_ref[i] = host_act(c.d_ref[i] + c.bd[(i / inner_d) % ce], Activation::kClip);
    c.max_d = std::max(c.max_d, std::fabs(double(c.d_ref[i])));
  }
  c.dx = std::make_unique<DeviceBuf>(c.xn * 2);
  c.dwe = std::make_unique<DeviceBuf>(wen * 2);
  c.dwd = std::make_unique<DeviceBuf>(wdn * 2);
  c.dbe = std::make_unique<DeviceBuf>(ce * 4);
  c.dbd = std::make_unique<DeviceBuf>(ce * 4);
  c.de = std::make_unique<DeviceBuf>(c.en * 2);
  c.dd = std::make_unique<DeviceBuf>(c.dn * 2);
  upload(ElemType::kFloat16, c.x, c.dx->p);
  upload(ElemType::kFloat16, c.we, c.dwe->p);
  upload(ElemType::kFloat16, c.wd, c.dwd->p);
  ASSERT_EQ(::ws::test::upload_sync(c.dbe->p, c.be.data(), ce * 4), cudaSuccess);
  ASSERT_EQ(::ws::test::upload_sync(c.dbd->p, c.bd.data(), ce * 4), cudaSuccess);
  c.ee.bias = static_cast<const float*>(c.dbe->p);
  c.ed.bias = static_cast<const float*>(c.dbd->p);
  for (kernels::ConvEpilogue* q : {&c.ee, &c.ed}) {
    q->act = Activation::kClip;
    q->params.min = 0.0f;
    q->params.max = 6.0f;
  }
  ASSERT_EQ(::ws::test::memset_sync(c.de->p, 0xFF, c.en * 2), cudaSuccess);
  ASSERT_EQ(::ws::test::memset_sync(c.dd->p, 0xFF, c.dn * 2), cudaSuccess);
  Status st = kernels::conv2d_pointwise(ElemType::kFloat16, kernels::PointwiseTile::k32x32, ge, c.dx->p, c.dwe->p, c.de->p, c.ee, nullptr);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  st = kernels::conv2d_depthwise(ElemType::kFloat16, gd, c.de->p, c.dwd->p, c.dd->p, c.ed, nullptr, 1);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(ConvKernels, MbConvMatchesReferenceAndTheThreeKernels) {
  WS_REQUIRE_LANES_GPU();
  int dev = 0, major = 0, optin = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), cudaSuccess);
  if (major < 9) GTEST_SKIP() << "thread-block clusters need compute capability 9.0";
  struct Case { const char* name; int64_t n, cin, h, w, ce, cout, k, stride; std::array<int64_t, 4> pads; bool residual; };
  const Case cases[] = {
      {"b13_7x7_192_1152_192_k5_res", 1, 192, 7, 7, 1152, 192, 5, 1, {2, 2, 2, 2}, true},
      {"b15_7x7_192_1152_320_k3", 1, 192, 7, 7, 1152, 320, 3, 1, {1, 1, 1, 1}, false},
      {"b11_14x14_112_672_192_k5_s2", 1, 112, 14, 14, 672, 192, 5, 2, {1, 1, 2, 2}, false},
      {"b9_14x14_112_672_112_k5_res", 1, 112, 14, 14, 672, 112, 5, 1, {2, 2, 2, 2}, true},
      {"b5_28x28_40_240_80_k3_s2", 1, 40, 28, 28, 240, 80, 3, 2, {0, 0, 1, 1}, false},
      {"odd_9x11_20_40_20_k3_n2_res", 2, 20, 9, 11, 40, 20, 3, 1, {1, 1, 1, 1}, true},
  };
  int ran = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Conv2dGeometry ge = geo(c.n, c.cin, c.h, c.w, c.ce, 1, 1, 1, 1, 1, {0, 0, 0, 0});
    const Conv2dGeometry gd = geo(c.n, c.ce, c.h, c.w, c.ce, c.ce, c.k, c.k, c.stride, 1, c.pads);
    const Conv2dGeometry gp = geo(c.n, c.ce, gd.out_h, gd.out_w, c.cout, 1, 1, 1, 1, 1, {0, 0, 0, 0});
    ASSERT_EQ(kernels::conv2d_mbconv_mismatch(ge, gd, gp), "");
    const uint64_t seed = test::seed_for(std::string("mbconv-") + c.name);
    ExDwChain ch;
    ASSERT_NO_FATAL_FAILURE(make_exdw_chain(ge, gd, c.k, seed, ch));
    const size_t yn = size_t(c.n * c.cout * gd.out_h * gd.out_w), inner_d = size_t(gd.out_h * gd.out_w);
    const size_t wpn = size_t(c.cout * c.ce);
    const auto wp = scaled_half(test::random_values(wpn, seed + 3), 2.0 / std::sqrt(double(c.ce)));
    const auto res = test::round_to_half(test::random_values(yn, seed + 4));
    const auto bp = test::random_values(size_t(c.cout), seed + 7);
    const std::vector<float> d = test::round_to_half(ch.d_ref);  // d as the depthwise kernel stores it
    std::vector<float> ref(yn);
    ref::conv_nd(d.data(), wp.data(), nullptr, ref.data(), conv_params(gp));
    double max_ref = 0;
    for (size_t i = 0; i < yn; ++i) {
      ref[i] += bp[(i / inner_d) % size_t(c.cout)] + (c.residual ? res[i] : 0.0f);
      max_ref = std::max(max_ref, std::fabs(double(ref[i])));
    }
    DeviceBuf dwp(wpn * 2), dres(yn * 2), dbp(bp.size() * 4), y_fused(yn * 2), y_three(yn * 2);
    upload(ElemType::kFloat16, wp, dwp.p);
    upload(ElemType::kFloat16, res, dres.p);
    ASSERT_EQ(::ws::test::upload_sync(dbp.p, bp.data(), bp.size() * 4), cudaSuccess);
    const kernels::ConvEpilogue& ee = ch.ee;
    const kernels::ConvEpilogue& ed = ch.ed;
    kernels::ConvEpilogue ep;
    ep.bias = static_cast<const float*>(dbp.p);
    ep.residual = c.residual ? dres.p : nullptr;
    const DeviceBuf &dx = *ch.dx, &dwe = *ch.dwe, &dwd = *ch.dwd;
    // the three separate kernels: the chain's expand and depthwise (above), then the projection
    ASSERT_EQ(::ws::test::memset_sync(y_three.p, 0xFF, yn * 2), cudaSuccess);
    Status s = kernels::conv2d_pointwise(ElemType::kFloat16, kernels::PointwiseTile::k32x32, gp, ch.dd->p, dwp.p, y_three.p, ep, nullptr);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto three = download(ElemType::kFloat16, y_three.p, yn);
    for (int cluster : kernels::kMbConvClusterSizes) {
      SCOPED_TRACE("cluster " + std::to_string(cluster));
      const size_t smem = kernels::conv2d_mbconv_smem_bytes(ge, gd, gp, cluster);
      ASSERT_GT(smem, 0u);
      if (smem > size_t(optin)) {
        std::printf("[ mbconv   ] %-32s cluster %2d needs %zu B of shared memory (device: %d): not run\n", c.name, cluster, smem, optin);
        continue;
      }
      ASSERT_EQ(::ws::test::memset_sync(y_fused.p, 0xFF, yn * 2), cudaSuccess);
      s = kernels::conv2d_mbconv(ge, gd, gp, cluster, dx.p, dwe.p, ee, dwd.p, ed, dwp.p, y_fused.p, ep, nullptr);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      const cudaError_t err = cudaDeviceSynchronize();
      ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
      ++ran;
      const auto got = download(ElemType::kFloat16, y_fused.p, yn);
      const FusedCheck k = check_fused(got, ref, three, max_ref, "three kernels");
      EXPECT_EQ(k.bad, 0u) << k.bad << " of " << yn << " beyond " << k.tol << " (2e-2·max|ref| " << max_ref << "); first " << k.first_bad;
      EXPECT_EQ(k.far, 0u) << k.far << " of " << yn << " more than 4 fp16 ulps from the three kernels; first " << k.first_far;
      std::printf("[ mbconv   ] %-32s cluster %2d smem %6zu B: max|diff| vs reference %.3g (max|ref| %.3g), vs the three kernels %.3g "
                  "(%zu of %zu differ), seed %llu\n",
                  c.name, cluster, smem, k.max_diff, max_ref, k.max_other, k.differ, yn, static_cast<unsigned long long>(seed));
    }
  }
  EXPECT_GT(ran, 0) << "no case fit the device's shared memory";
}

// EfficientNet-Lite0's expand -> depthwise pair geometries and edge ones: batch 2, odd widths (the 2-byte staging
// path), a band wider than the block (the flattened staging path), channel counts leaving a partial 16-channel slice,
// 7x7 / 2x2 / 1x1 / 3x1 kernels on the runtime-extent path, stride above the kernel, pads above the kernel (bands
// whose input rows all lie in the padding), a 1x1 map and a map narrower than the kernel.
struct ExDwCase { const char* name; int64_t n, cin, h, w, ce, k, stride; std::array<int64_t, 4> pads; int64_t kw = 0; /* 0: k */ };
const ExDwCase kExDwCases[] = {
    {"b1_112x112_16_96_k3_s2", 1, 16, 112, 112, 96, 3, 2, {0, 0, 1, 1}},
    {"b3_56x56_24_144_k5_s2", 1, 24, 56, 56, 144, 5, 2, {1, 1, 2, 2}},
    {"b4_28x28_40_240_k5", 1, 40, 28, 28, 240, 5, 1, {2, 2, 2, 2}},
    {"b9_14x14_112_672_k5", 1, 112, 14, 14, 672, 5, 1, {2, 2, 2, 2}},
    {"b13_7x7_192_1152_k5", 1, 192, 7, 7, 1152, 5, 1, {2, 2, 2, 2}},
    {"b15_7x7_192_1152_k3", 1, 192, 7, 7, 1152, 3, 1, {1, 1, 1, 1}},
    {"odd_9x11_20_40_k3_n2", 2, 20, 9, 11, 40, 3, 1, {1, 0, 1, 2}},
    {"odd_13x10_12_24_k7_s2", 1, 12, 13, 10, 24, 7, 2, {3, 3, 3, 3}},
    {"k1_pads_above_kernel_n2", 2, 4, 4, 4, 16, 1, 1, {3, 2, 5, 6}},
    {"k2_stride3", 1, 5, 9, 10, 16, 2, 3, {0, 1, 1, 2}},
    {"map_1x1_k3", 1, 7, 1, 1, 24, 3, 1, {1, 1, 1, 1}},
    {"map_2x3_k5_s2_n2", 2, 9, 2, 3, 20, 5, 2, {2, 2, 2, 2}},
    {"wide_3x301_k3", 1, 6, 3, 301, 16, 3, 1, {1, 1, 1, 1}},
    {"k3x1_6x7", 1, 8, 6, 7, 16, 3, 1, {1, 0, 1, 0}, 1},
};

// The fused expand -> depthwise pair (kernels::conv2d_expand_depthwise) on EfficientNet-Lite0's pair geometries and
// odd ones (batch 2, odd width: the 2-byte staging path, channel counts that leave a partial 16-channel slice, a 7x7
// kernel on the runtime-extent path, asymmetric pads), for every band height offered. Checked against the CPU
// reference (expand, bias, ReLU6, round to fp16, depthwise, bias, ReLU6; tolerance 2e-2·max|ref|) and against our two
// separate kernels (pointwise 32x32 without split-K, then depthwise): bit for bit, as both sum the expand over k in the
// same 16-deep order and the taps in the same order. The output is poisoned (0xFFFF = NaN) before each launch.
TEST(ConvKernels, ExpandDepthwiseMatchesReferenceAndThePair) {
  WS_REQUIRE_LANES_GPU();
  int dev = 0, optin = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), cudaSuccess);
  int ran = 0;
  for (const ExDwCase& c : kExDwCases) {
    SCOPED_TRACE(c.name);
    const Conv2dGeometry ge = geo(c.n, c.cin, c.h, c.w, c.ce, 1, 1, 1, 1, 1, {0, 0, 0, 0});
    const Conv2dGeometry gd = geo(c.n, c.ce, c.h, c.w, c.ce, c.ce, c.k, c.kw ? c.kw : c.k, c.stride, 1, c.pads);
    ASSERT_EQ(kernels::conv2d_expand_depthwise_mismatch(ge, gd), "");
    const uint64_t seed = test::seed_for(std::string("exdw-") + c.name);
    ExDwChain ch;
    ASSERT_NO_FATAL_FAILURE(make_exdw_chain(ge, gd, c.k, seed, ch));
    const size_t dn = ch.dn;
    const std::vector<float>& ref = ch.d_ref;
    const double max_ref = ch.max_d;
    const kernels::ConvEpilogue& ee = ch.ee;
    const kernels::ConvEpilogue& ed = ch.ed;
    const DeviceBuf &dx = *ch.dx, &dwe = *ch.dwe, &dwd = *ch.dwd, &y_pair = *ch.dd;
    DeviceBuf y_fused(dn * 2);
    Status s = Status::ok();
    const auto pair = download(ElemType::kFloat16, y_pair.p, dn);
    for (int rows : kernels::kExpandDepthwiseRows)
    for (int outs : kernels::kExpandDepthwiseOutputs) {
      SCOPED_TRACE("rows " + std::to_string(rows) + ", outputs per unit " + std::to_string(outs));
      const size_t smem = kernels::conv2d_expand_depthwise_smem_bytes(ge, gd, rows, outs);
      ASSERT_GT(smem, 0u);
      if (smem > size_t(optin)) {
        std::printf("[ exdw     ] %-26s rows %d x%d needs %zu B of shared memory (device: %d): not run\n", c.name, rows, outs, smem, optin);
        continue;
      }
      ASSERT_EQ(::ws::test::memset_sync(y_fused.p, 0xFF, dn * 2), cudaSuccess);
      s = kernels::conv2d_expand_depthwise(ge, gd, rows, outs, dx.p, dwe.p, ee, dwd.p, y_fused.p, ed, nullptr);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      const cudaError_t err = cudaDeviceSynchronize();
      ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
      ++ran;
      const auto got = download(ElemType::kFloat16, y_fused.p, dn);
      const FusedCheck k = check_fused(got, ref, pair, max_ref, "pair");
      EXPECT_EQ(k.bad, 0u) << k.bad << " of " << dn << " beyond " << k.tol << " (2e-2·max|ref| " << max_ref << "); first " << k.first_bad;
      // the expand's fp32 sums run in the 32x32 pointwise kernel's k order: the same values bit for bit (runs 61-63)
      EXPECT_EQ(k.differ, 0u) << k.differ << " of " << dn << " differ from the two kernels; first " << k.first_differ;
      std::printf("[ exdw     ] %-26s rows %d x%d smem %6zu B: max|diff| vs reference %.3g (max|ref| %.3g), vs the pair %.3g (%zu of %zu differ), "
                  "seed %llu\n",
                  c.name, rows, outs, smem, k.max_diff, max_ref, k.max_other, k.differ, dn, static_cast<unsigned long long>(seed));
    }
  }
  EXPECT_GT(ran, 0) << "no case fit the device's shared memory";
}

// The expand -> depthwise launcher refuses what it cannot run, before any device work (runs without a GPU).
TEST(ConvKernels, ExpandDepthwiseRefusesWhatItDoesNotCover) {
  const Conv2dGeometry ge = geo(1, 16, 7, 7, 64, 1, 1, 1, 1, 1, {0, 0, 0, 0});
  const Conv2dGeometry gd = geo(1, 64, 7, 7, 64, 64, 3, 3, 1, 1, {1, 1, 1, 1});
  EXPECT_EQ(kernels::conv2d_expand_depthwise_mismatch(ge, gd), "");
  EXPECT_GT(kernels::conv2d_expand_depthwise_smem_bytes(ge, gd, 0), 0u);
  for (const ExDwCase& c : kExDwCases) {  // every geometry of the GPU test is one the launcher accepts, at every band height
    const Conv2dGeometry e = geo(c.n, c.cin, c.h, c.w, c.ce, 1, 1, 1, 1, 1, {0, 0, 0, 0});
    const Conv2dGeometry d = geo(c.n, c.ce, c.h, c.w, c.ce, c.ce, c.k, c.kw ? c.kw : c.k, c.stride, 1, c.pads);
    EXPECT_EQ(kernels::conv2d_expand_depthwise_mismatch(e, d), "") << c.name;
    for (int rows : kernels::kExpandDepthwiseRows)
      for (int outs : kernels::kExpandDepthwiseOutputs)
        EXPECT_GT(kernels::conv2d_expand_depthwise_smem_bytes(e, d, rows, outs), 0u) << c.name << " rows " << rows << " x" << outs;
  }
  EXPECT_NE(kernels::conv2d_expand_depthwise_mismatch(gd, gd).find("expand"), std::string::npos);
  EXPECT_NE(kernels::conv2d_expand_depthwise_mismatch(ge, ge), "");
  EXPECT_NE(kernels::conv2d_expand_depthwise_mismatch(ge, geo(1, 64, 7, 7, 64, 64, 3, 3, 1, 2, {2, 2, 2, 2})).find("depthwise"), std::string::npos);
  EXPECT_NE(kernels::conv2d_expand_depthwise_mismatch(geo(1, 16, 7, 7, 32, 1, 1, 1, 1, 1, {0, 0, 0, 0}), gd).find("chain"), std::string::npos);
  EXPECT_NE(kernels::conv2d_expand_depthwise_mismatch(geo(1, 16, 8, 8, 64, 1, 1, 1, 1, 1, {0, 0, 0, 0}), gd).find("chain"), std::string::npos);
  EXPECT_EQ(kernels::conv2d_expand_depthwise_smem_bytes(gd, gd, 0), 0u);
  EXPECT_EQ(kernels::conv2d_expand_depthwise_smem_bytes(ge, gd, -1), 0u);
  for (int outs : {0, 2, 3, 5, -1}) EXPECT_EQ(kernels::conv2d_expand_depthwise_smem_bytes(ge, gd, 0, outs), 0u) << outs;
  const int64_t big = int64_t(1) << 15;
  EXPECT_NE(kernels::conv2d_expand_depthwise_mismatch(geo(1, 16, 7, 7, big, 1, 1, 1, 1, 1, {0, 0, 0, 0}), geo(1, big, 7, 7, big, big, 3, 3, 1, 1, {1, 1, 1, 1}))
                .find("2^15"),
            std::string::npos);
  // a 4096-wide map in one band: its layout is computed without overflow and is far above any device's shared memory
  const size_t wide = kernels::conv2d_expand_depthwise_smem_bytes(geo(1, 16, 4096, 4096, 64, 1, 1, 1, 1, 1, {0, 0, 0, 0}),
                                                                  geo(1, 64, 4096, 4096, 64, 64, 3, 3, 1, 1, {1, 1, 1, 1}), 0);
  EXPECT_TRUE(wide == 0 || wide > (size_t(1) << 20)) << wide;
  int dummy = 0;
  void* p = &dummy;
  kernels::ConvEpilogue plain, with_res;
  with_res.residual = p;
  EXPECT_EQ(kernels::conv2d_expand_depthwise(gd, gd, 0, 1, p, p, plain, p, p, plain, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_expand_depthwise(ge, gd, -2, 1, p, p, plain, p, p, plain, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_expand_depthwise(ge, gd, 0, 1, nullptr, p, plain, p, p, plain, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_expand_depthwise(ge, gd, 0, 1, p, p, with_res, p, p, plain, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_expand_depthwise(ge, gd, 0, 1, p, p, plain, p, p, with_res, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_expand_depthwise(ge, gd, 0, 3, p, p, plain, p, p, plain, nullptr).code(), StatusCode::kInvalidArgument);
}

// The MBConv launcher refuses what it cannot run, before any device work.
TEST(ConvKernels, MbConvRefusesWhatItDoesNotCover) {
  const Conv2dGeometry ge = geo(1, 16, 7, 7, 64, 1, 1, 1, 1, 1, {0, 0, 0, 0});
  const Conv2dGeometry gd = geo(1, 64, 7, 7, 64, 64, 3, 3, 1, 1, {1, 1, 1, 1});
  const Conv2dGeometry gp = geo(1, 64, 7, 7, 16, 1, 1, 1, 1, 1, {0, 0, 0, 0});
  EXPECT_EQ(kernels::conv2d_mbconv_mismatch(ge, gd, gp), "");
  EXPECT_NE(kernels::conv2d_mbconv_mismatch(gd, gd, gp).find("expand"), std::string::npos);
  EXPECT_NE(kernels::conv2d_mbconv_mismatch(ge, gp, gp), "");
  EXPECT_NE(kernels::conv2d_mbconv_mismatch(ge, gd, gd).find("project"), std::string::npos);
  EXPECT_NE(kernels::conv2d_mbconv_mismatch(geo(1, 16, 7, 7, 32, 1, 1, 1, 1, 1, {0, 0, 0, 0}), gd, gp).find("chain"), std::string::npos);
  EXPECT_EQ(kernels::conv2d_mbconv_smem_bytes(gd, gd, gp, 8), 0u);
  // huge extents: 2^15 expanded channels, or a 256x256 map (65536 pixels), are refused before any layout arithmetic
  const int64_t big = int64_t(1) << 15;
  EXPECT_NE(kernels::conv2d_mbconv_mismatch(geo(1, 16, 7, 7, big, 1, 1, 1, 1, 1, {0, 0, 0, 0}), geo(1, big, 7, 7, big, big, 3, 3, 1, 1, {1, 1, 1, 1}),
                                            geo(1, big, 7, 7, 16, 1, 1, 1, 1, 1, {0, 0, 0, 0})).find("2^15"), std::string::npos);
  EXPECT_EQ(kernels::conv2d_mbconv_smem_bytes(geo(1, 16, 256, 256, 64, 1, 1, 1, 1, 1, {0, 0, 0, 0}), geo(1, 64, 256, 256, 64, 64, 3, 3, 1, 1, {1, 1, 1, 1}),
                                              geo(1, 64, 256, 256, 16, 1, 1, 1, 1, 1, {0, 0, 0, 0}), 16), 0u);
  int dummy = 0;
  void* p = &dummy;
  kernels::ConvEpilogue none, with_res;
  with_res.residual = p;
  EXPECT_EQ(kernels::conv2d_mbconv(ge, gd, gp, 4, p, p, none, p, none, p, p, none, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_mbconv(ge, gd, gp, 8, nullptr, p, none, p, none, p, p, none, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_mbconv(ge, gd, gp, 8, p, p, with_res, p, none, p, p, none, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::conv2d_mbconv(gd, gd, gp, 8, p, p, none, p, none, p, p, none, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(ConvKernels, DirectMatchesReference) {
  WS_REQUIRE_LANES_GPU();
  check_kernel("direct_stem_cin3_s2_asym0011_224", Kernel::kDirect, geo(1, 3, 224, 224, 32, 1, 3, 3, 2, 1, {0, 0, 1, 1}));
  // the stem form (direct_stem3x3_kernel): Cout not a multiple of its 8-channel group, batch 2, dilation 2
  check_kernel("direct_stem_cin3_s1_dil2_cout13_n2", Kernel::kDirect, geo(2, 3, 17, 15, 13, 1, 3, 3, 1, 2, {2, 1, 0, 3}));
  check_kernel("direct_group2_dil2_s2", Kernel::kDirect, geo(1, 8, 13, 11, 6, 2, 3, 3, 2, 2, {2, 1, 2, 1}));
  check_kernel("direct_7x7_s2_pad3_n2", Kernel::kDirect, geo(2, 3, 32, 30, 8, 1, 7, 7, 2, 1, {3, 3, 3, 3}));
  check_kernel("direct_depthwise_shape", Kernel::kDirect, geo(1, 16, 15, 15, 16, 16, 3, 3, 2, 1, {0, 0, 1, 1}));
  check_kernel("direct_1x1", Kernel::kDirect, geo(1, 19, 9, 7, 17, 1, 1, 1, 1, 1, {0, 0, 0, 0}));
}

TEST(ConvKernels, BadGeometryIsInvalidArgument) {
  {
    WS_REQUIRE_LANES_GPU();
    const Conv2dGeometry pw = geo(1, 64, 7, 7, 32, 1, 1, 1, 1, 1, {0, 0, 0, 0});
    Status sk = kernels::conv2d_pointwise(ElemType::kFloat32, kernels::PointwiseTile::k32x32, pw, nullptr, nullptr, nullptr, {}, nullptr, 4,
                                          nullptr);
    EXPECT_EQ(sk.code(), StatusCode::kInvalidArgument) << "split-K without a workspace: " << sk.to_string();
    sk = kernels::conv2d_pointwise(ElemType::kFloat32, kernels::PointwiseTile::k32x32, pw, nullptr, nullptr, nullptr, {}, nullptr, 0, nullptr);
    EXPECT_EQ(sk.code(), StatusCode::kInvalidArgument) << "split-K 0: " << sk.to_string();
  }
  WS_REQUIRE_LANES_GPU();
  Conv2dGeometry g = geo(1, 8, 9, 9, 8, 8, 3, 3, 1, 1, {1, 1, 1, 1});
  g.out_h = 10;  // inconsistent
  Status s = kernels::conv2d_direct(ElemType::kFloat32, g, nullptr, nullptr, nullptr, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  const Conv2dGeometry dense = geo(1, 8, 9, 9, 8, 1, 3, 3, 1, 1, {1, 1, 1, 1});
  s = kernels::conv2d_depthwise(ElemType::kFloat32, dense, nullptr, nullptr, nullptr, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  s = kernels::conv2d_depthwise(ElemType::kFloat32, geo(1, 8, 9, 9, 8, 8, 3, 3, 1, 1, {1, 1, 1, 1}), nullptr, nullptr, nullptr, {}, nullptr, 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  s = kernels::conv2d_pointwise(ElemType::kFloat32, kernels::PointwiseTile::k64x64, dense, nullptr, nullptr, nullptr, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
}

// ---- engine level ----------------------------------------------------------------------------------


// EfficientNet-like block: stem 3x3 s2 (asymmetric TF pads) + ReLU6, depthwise 3x3 s2 (pads 0,0,1,1) + Clip(0,6),
// pointwise 1x1 (no activation), depthwise 5x5 s1 + Clip, pointwise + Relu.
ir::Graph effnet_block_graph() {
  ir::ModelBuilder b(13, "effnet_block");
  auto vals = [](size_t n, uint64_t seed, float scale) {
    auto v = test::random_values(n, seed);
    for (auto& x : v) x *= scale;
    return v;
  };
  b.input("x", ir::DType::kFloat32, {1, 3, 37, 29});
  b.initializer("lo", {}, {0.0f});
  b.initializer("hi", {}, {6.0f});
  auto conv = [&](const std::string& name, const std::string& in, const std::string& out, std::vector<int64_t> w, int64_t group,
                  std::vector<int64_t> strides, std::vector<int64_t> pads, const std::string& act) {
    const size_t wn = size_t(w[0] * w[1] * w[2] * w[3]);
    b.initializer(name + "_w", w, vals(wn, std::hash<std::string>{}(name), 1.5f / std::sqrt(float(w[1] * w[2] * w[3]))));
    b.initializer(name + "_b", {w[0]}, vals(size_t(w[0]), std::hash<std::string>{}(name) + 1, 0.3f));
    const std::string c = act.empty() ? out : name + "_c";
    b.node("Conv", {in, name + "_w", name + "_b"}, {c}, name).i("group", group).ints("strides", strides).ints("pads", pads);
    if (act == "Clip") b.node("Clip", {c, "lo", "hi"}, {out}, name + "_clip");
    if (act == "Relu") b.node("Relu", {c}, {out}, name + "_relu");
  };
  conv("stem", "x", "t0", {16, 3, 3, 3}, 1, {2, 2}, {0, 0, 1, 1}, "Clip");
  conv("dw1", "t0", "t1", {16, 1, 3, 3}, 16, {2, 2}, {0, 0, 1, 1}, "Clip");
  conv("pw1", "t1", "t2", {24, 16, 1, 1}, 1, {1, 1}, {0, 0, 0, 0}, "");
  conv("dw2", "t2", "t3", {24, 1, 5, 5}, 24, {1, 1}, {2, 2, 2, 2}, "Clip");
  conv("pw2", "t3", "y", {40, 24, 1, 1}, 1, {1, 1}, {0, 0, 0, 0}, "Relu");
  b.output("y");
  return test::import_builder(b);
}

void check_ws_only(const std::string& label, const std::function<ir::Graph()>& make) {
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    SCOPED_TRACE(label + " " + precision_name(p));
    CudaBuildOptions opt;
    opt.tactic_sources = kTacticWarpStream;
    const double tol = p == Precision::kFloat32 ? 1e-4 : 2e-2;  // abs + rel each, as CudaEngineModel
    std::string err;
    auto cmp = test::run_both(make(), p, tol, tol, test::seed_for(label), &err, opt);
    ASSERT_TRUE(err.empty()) << err;
    std::printf("[ ws-only  ] %-14s %s max|diff| %.3g max rel %.3g (max|ref| %.3g)\n", label.c_str(), precision_name(p), cmp.max_abs,
                cmp.max_rel, cmp.max_ref);
    EXPECT_EQ(cmp.bad, 0u) << cmp.first_bad;
    opt.precision = p;
    auto e = CudaEngine::build(make(), opt);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    int convs = 0;
    for (const TacticRecord& t : (*e)->tactics()) {
      if (t.op_type != "Conv") continue;
      ++convs;
      std::printf("[ tactic   ] %-10s %s\n", t.node.c_str(), t.choice.c_str());
      EXPECT_EQ(t.choice.rfind("ws ", 0), 0u) << t.node << ": " << t.choice;
    }
    EXPECT_GT(convs, 0);
  }
}

TEST(CudaEngineConvTactics, DemoModelWarpStreamOnlyMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  check_ws_only("demo", [] { return test::demo_graph(); });
}

TEST(CudaEngineConvTactics, DepthwiseClipAsymmetricPadsWarpStreamOnlyMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  check_ws_only("effnet_block", effnet_block_graph);
  CudaBuildOptions opt;
  opt.tactic_sources = kTacticWarpStream;
  auto e = CudaEngine::build(effnet_block_graph(), opt);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  bool saw_dw = false;
  for (const TacticRecord& t : (*e)->tactics()) {
    if (t.node != "dw1") continue;
    saw_dw = true;
    EXPECT_NE(t.choice.find("ws depthwise 3x3 s2"), std::string::npos) << t.choice;
    EXPECT_NE(t.choice.find("fused pad+bias+clip"), std::string::npos) << t.choice;
  }
  EXPECT_TRUE(saw_dw);
  // One kernel per Conv (Clip folded, pads by bounds checks): 5 convs, nothing else but the graph's ops.
  EXPECT_EQ((*e)->kernel_count(), 5u);
}

TEST(CudaEngineConvTactics, AllSourcesMatchCpuAndCacheRecordsImpl) {
  WS_REQUIRE_LANES_GPU();
  const std::string cache =
      (std::filesystem::temp_directory_path() / ("ws_conv_tactics_cache_" + std::to_string(::getpid()) + ".json")).string();
  struct Cleanup { std::string path; ~Cleanup() { std::filesystem::remove(path); } } cleanup{cache};
  CudaBuildOptions opt;
  opt.timing_cache_path = cache;
  std::string err;
  auto cmp = test::run_both(effnet_block_graph(), Precision::kFloat32, 1e-4, 1e-4, test::seed_for("all-sources"), &err, opt);
  ASSERT_TRUE(err.empty()) << err;
  EXPECT_EQ(cmp.bad, 0u) << cmp.first_bad;
  std::ifstream f(cache);
  ASSERT_TRUE(f.good());
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["key"].value("tactic_sources", std::string()), "cudnn,cublaslt,warpstream");
  int conv_entries = 0;
  for (auto it = j["entries"].begin(); it != j["entries"].end(); ++it) {
    if (it.key().find("|Conv|") == std::string::npos) continue;
    ++conv_entries;
    ASSERT_TRUE(it.value().contains("impl")) << it.key();
    const std::string impl = it.value()["impl"];
    EXPECT_TRUE(impl == "cudnn" || impl.rfind("ws_", 0) == 0) << impl;
    if (impl == "cudnn") EXPECT_TRUE(it.value().contains("algo"));
  }
  EXPECT_EQ(conv_entries, 5);
  // Second build from the cache: same choices.
  auto e1 = CudaEngine::build(effnet_block_graph(), opt);
  auto e2 = CudaEngine::build(effnet_block_graph(), opt);
  ASSERT_TRUE(e1.is_ok() && e2.is_ok());
  ASSERT_EQ((*e1)->tactics().size(), (*e2)->tactics().size());
  for (size_t i = 0; i < (*e1)->tactics().size(); ++i) EXPECT_EQ((*e1)->tactics()[i].choice, (*e2)->tactics()[i].choice);
  // An old-format entry (no "impl", cuDNN algo + fused) is still read as cuDNN.
  nlohmann::json old = j;
  for (auto it = old["entries"].begin(); it != old["entries"].end(); ++it)
    if (it.key().find("|Conv|") != std::string::npos) it.value() = {{"algo", 0}, {"fused", false}};
  { std::ofstream o(cache); o << old.dump(); }
  auto e3 = CudaEngine::build(effnet_block_graph(), opt);
  ASSERT_TRUE(e3.is_ok()) << e3.status().to_string();
  for (const TacticRecord& t : (*e3)->tactics())
    if (t.op_type == "Conv") EXPECT_EQ(t.choice.rfind("cudnn algo 0", 0), 0u) << t.node << ": " << t.choice;
}

// EfficientNet-Lite0 (real weights, when the assets exist): WarpStream-only convolutions vs the CPU executor on
// random input, max|gpu − cpu| <= rel · max|cpu| over the logits (rel 1e-3 fp32, 2e-2 fp16, as the lanes test);
// then an all-sources build prints each Conv's winner and its timed µs (information for the device run).
TEST(CudaEngineConvTactics, EfficientNetLite0WarpStreamOnlyMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  std::filesystem::path dir;
  if (const char* d = std::getenv("WS_ASSETS_DIR"); d && *d) dir = d;
  else if (const char* d2 = std::getenv("WS_CACHE_DIR"); d2 && *d2) dir = d2;
  else if (std::filesystem::exists(".assets/models/efficientnet_lite0.onnx")) dir = ".assets";
  else dir = std::filesystem::path(std::getenv("HOME") ? std::getenv("HOME") : "/root") / ".cache" / "warpstream";
  const std::filesystem::path model = dir / "models" / "efficientnet_lite0.onnx";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " not found (scripts/fetch-assets.sh)";
  auto load = [&] {
    auto g = ir::import_onnx(model.string());
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    return g.is_ok() ? std::move(g).value() : ir::Graph{};
  };
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    if (p == Precision::kFloat16 && test::gpu_test_fp32_only()) continue;  // racecheck's form (small_tests.h)
    SCOPED_TRACE(precision_name(p));
    CudaBuildOptions opt;
    opt.tactic_sources = kTacticWarpStream | kTacticCublasLt;
    if (test::small_gpu_tests()) opt.tactic_timing_iterations = 1;  // small form: one timed run per tactic
    opt.timing_cache_path = test::gpu_test_timing_cache(std::string("effnet-ws-only-") + precision_name(p));
    const double rel = p == Precision::kFloat32 ? 1e-3 : 2e-2;
    std::string err;
    auto cmp = test::run_both(load(), p, 1e30, 0, test::seed_for("effnet-ws"), &err, opt);
    ASSERT_TRUE(err.empty()) << err;
    std::printf("[ effnet   ] ws-only %s max|diff| %.3g (max|ref| %.3g)\n", precision_name(p), cmp.max_abs, cmp.max_ref);
    EXPECT_LE(cmp.max_abs, rel * cmp.max_ref);
    EXPECT_EQ(cmp.bad, 0u) << "NaN where the CPU has a number: " << cmp.first_bad;
    EXPECT_GT(cmp.max_ref, 0.0);
    opt.precision = p;
    auto e = CudaEngine::build(load(), opt);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    size_t convs = 0;
    for (const TacticRecord& t : (*e)->tactics())
      if (t.op_type == "Conv") { ++convs; EXPECT_EQ(t.choice.rfind("ws ", 0), 0u) << t.node << ": " << t.choice; }
    std::printf("[ effnet   ] ws-only %s: %zu convs, %zu kernels per enqueue\n", precision_name(p), convs, (*e)->kernel_count());
    CudaBuildOptions all;
    all.precision = p;
    all.timing_cache_path = test::gpu_test_timing_cache(std::string("effnet-all-sources-") + precision_name(p));
    auto ea = CudaEngine::build(load(), all);
    ASSERT_TRUE(ea.is_ok()) << ea.status().to_string();
    size_t ws = 0, n = 0;
    double us = 0;
    for (const TacticRecord& t : (*ea)->tactics()) {
      if (t.op_type != "Conv") continue;
      ++n;
      us += t.time_us;
      if (t.choice.rfind("ws ", 0) == 0) ++ws;
      std::printf("[ effnet   ]   %-28s %7.2f us  %s\n", t.node.c_str(), t.time_us, t.choice.c_str());
    }
    std::printf("[ effnet   ] all sources %s: %zu of %zu convs chose ws, sum of timed conv us %.1f, %zu kernels per enqueue\n",
                precision_name(p), ws, n, us, (*ea)->kernel_count());
  }
}

TEST(CudaEngineConvTactics, NoConvSourceFailsNamingNodeAndSources) {
  WS_REQUIRE_LANES_GPU();
  CudaBuildOptions opt;
  opt.tactic_sources = kTacticCublasLt;
  auto e = CudaEngine::build(effnet_block_graph(), opt);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("stem"), std::string::npos) << e.status().to_string();
  EXPECT_NE(e.status().message().find("enabled tactic sources: cublaslt"), std::string::npos) << e.status().to_string();
}

}  // namespace
}  // namespace ws
