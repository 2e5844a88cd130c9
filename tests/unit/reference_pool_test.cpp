// reference_pool_test.cpp — ws::ref MaxPool/AveragePool/GlobalAveragePool/BatchNormalization
// against ONNX doc examples and naive window-enumerating implementations.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {
namespace {

struct Geo {
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
};
Geo geo(const PoolParams& p) {
  Geo g;
  for (int i = 0; i < 3; ++i) {
    const int j = i - (3 - p.rank);
    g.in[i] = j >= 0 ? p.in[j] : 1;
    g.k[i] = j >= 0 ? p.kernel[j] : 1;
    g.s[i] = j >= 0 ? p.stride[j] : 1;
    g.d[i] = j >= 0 ? p.dilation[j] : 1;
    g.pb[i] = j >= 0 ? p.pad_begin[j] : 0;
    g.pe[i] = j >= 0 ? p.pad_end[j] : 0;
    g.out[i] = j >= 0 ? p.out[j] : 1;
  }
  return g;
}

// Enumerates every window position (row-major) with plain bounds checks.
void naive_pool(const std::vector<float>& x, const PoolParams& p, std::vector<float>& ymax, std::vector<int64_t>& idx0,
                std::vector<int64_t>& idx1, std::vector<float>& yavg) {
  const Geo g = geo(p);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  ymax.assign(p.n * p.c * out_plane, 0);
  idx0.assign(ymax.size(), 0);
  idx1.assign(ymax.size(), 0);
  yavg.assign(ymax.size(), 0);
  for (int64_t nc = 0; nc < p.n * p.c; ++nc)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t bi0 = -1, bi1 = -1;
          double sum = 0;
          int64_t cnt = 0, cnt_pad = 0;
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                const int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                const bool in_pads = id >= -g.pb[0] && id < g.in[0] + g.pe[0] && ih >= -g.pb[1] &&
                                     ih < g.in[1] + g.pe[1] && iw >= -g.pb[2] && iw < g.in[2] + g.pe[2];
                if (in_pads) ++cnt_pad;
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
                const float v = x[nc * in_plane + (id * g.in[1] + ih) * g.in[2] + iw];
                sum += v;
                ++cnt;
                if (bi0 < 0 || v > best) {
                  best = v;
                  bi0 = nc * in_plane + (id * g.in[1] + ih) * g.in[2] + iw;
                  bi1 = nc * in_plane + id + ih * g.in[0] + iw * g.in[0] * g.in[1];
                }
              }
          const int64_t o = nc * out_plane + (od * g.out[1] + oh) * g.out[2] + ow;
          ymax[o] = best;
          idx0[o] = bi0;
          idx1[o] = bi1;
          const int64_t div = p.count_include_pad ? cnt_pad : cnt;
          yavg[o] = div ? static_cast<float>(sum / div) : NAN;
        }
}

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil_mode) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  return (ceil_mode ? (span + s - 1) / s : span / s) + 1;
}

TEST(ReferencePool, MaxPoolWithArgmaxStrides) {
  // ONNX maxpool_with_argmax_2d_precomputed_strides: X = 1..25 (5x5), kernel 2, stride 2,
  // storage_order 1.
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[i] = float(i + 1);
  PoolParams p;
  p.in[0] = p.in[1] = 5;
  p.kernel[0] = p.kernel[1] = 2;
  p.stride[0] = p.stride[1] = 2;
  p.out[0] = p.out[1] = 2;
  float y[4];
  int64_t idx[4];
  max_pool_nd(x.data(), y, idx, 1, p);
  const float ey[4] = {7, 9, 17, 19};
  const int64_t ei1[4] = {6, 16, 8, 18};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(y[i], ey[i]);
    EXPECT_EQ(idx[i], ei1[i]);
  }
  max_pool_nd(x.data(), y, idx, 0, p);
  const int64_t ei0[4] = {6, 8, 16, 18};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(idx[i], ei0[i]);
}

TEST(ReferencePool, MaxPoolPrecomputedPads) {
  // ONNX maxpool_2d_precomputed_pads: 5x5 kernel, pads 2, X = 1..25.
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[i] = float(i + 1);
  PoolParams p;
  p.in[0] = p.in[1] = 5;
  p.kernel[0] = p.kernel[1] = 5;
  p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 2;
  p.out[0] = p.out[1] = 5;
  std::vector<float> y(25);
  std::vector<int64_t> idx(25);
  max_pool_nd(x.data(), y.data(), idx.data(), 0, p);
  const float e[25] = {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25};
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(y[i], e[i]) << i;
    EXPECT_EQ(idx[i], int64_t(e[i]) - 1) << i;
  }
}

TEST(ReferencePool, MaxPoolDilationsAndCeil) {
  // ONNX maxpool_2d_dilations: X 4x4 = 1..16, kernel 2, dilation 2 → [[11,12],[15,16]].
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = float(i + 1);
  PoolParams p;
  p.in[0] = p.in[1] = 4;
  p.kernel[0] = p.kernel[1] = 2;
  p.dilation[0] = p.dilation[1] = 2;
  p.out[0] = p.out[1] = 2;
  float y[4];
  max_pool_nd(x.data(), y, nullptr, 0, p);
  EXPECT_EQ(y[0], 11);
  EXPECT_EQ(y[1], 12);
  EXPECT_EQ(y[2], 15);
  EXPECT_EQ(y[3], 16);
  // ONNX maxpool_2d_ceil: kernel 3, stride 2, ceil_mode → out 2x2 = [[11,12],[15,16]].
  PoolParams c;
  c.in[0] = c.in[1] = 4;
  c.kernel[0] = c.kernel[1] = 3;
  c.stride[0] = c.stride[1] = 2;
  c.out[0] = c.out[1] = pool_out(4, 3, 2, 1, 0, 0, true);
  ASSERT_EQ(c.out[0], 2);
  max_pool_nd(x.data(), y, nullptr, 0, c);
  EXPECT_EQ(y[0], 11);
  EXPECT_EQ(y[1], 12);
  EXPECT_EQ(y[2], 15);
  EXPECT_EQ(y[3], 16);
}

TEST(ReferencePool, AveragePoolCountIncludePad) {
  // 3x3 = 1..9, kernel 2, pads 1, stride 1 → 4x4.
  std::vector<float> x(9);
  for (int i = 0; i < 9; ++i) x[i] = float(i + 1);
  PoolParams p;
  p.in[0] = p.in[1] = 3;
  p.kernel[0] = p.kernel[1] = 2;
  p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 1;
  p.out[0] = p.out[1] = 4;
  float y[16];
  p.count_include_pad = false;
  average_pool_nd(x.data(), y, p);
  EXPECT_FLOAT_EQ(y[0], 1.0f);               // only (0,0) inside
  EXPECT_FLOAT_EQ(y[1], 1.5f);               // (1+2)/2
  EXPECT_FLOAT_EQ(y[5], 3.0f);               // (1+2+4+5)/4
  EXPECT_FLOAT_EQ(y[15], 9.0f);
  p.count_include_pad = true;
  average_pool_nd(x.data(), y, p);
  EXPECT_FLOAT_EQ(y[0], 0.25f);
  EXPECT_FLOAT_EQ(y[1], 0.75f);
  EXPECT_FLOAT_EQ(y[5], 3.0f);
  EXPECT_FLOAT_EQ(y[15], 2.25f);
  // ONNX averagepool_2d_ceil: 4x4 = 1..16, kernel 3, stride 2, ceil → [[6, 7.5], [12, 13.5]].
  std::vector<float> x16(16);
  for (int i = 0; i < 16; ++i) x16[i] = float(i + 1);
  PoolParams c;
  c.in[0] = c.in[1] = 4;
  c.kernel[0] = c.kernel[1] = 3;
  c.stride[0] = c.stride[1] = 2;
  c.out[0] = c.out[1] = 2;
  for (bool include : {false, true}) {  // the ceil_mode overhang is never counted
    c.count_include_pad = include;
    average_pool_nd(x16.data(), y, c);
    EXPECT_FLOAT_EQ(y[0], 6.0f);
    EXPECT_FLOAT_EQ(y[1], 7.5f);
    EXPECT_FLOAT_EQ(y[2], 12.0f);
    EXPECT_FLOAT_EQ(y[3], 13.5f);
  }
}

TEST(ReferencePool, MatchesNaiveOnRandomShapes) {
  const uint32_t seed = 777;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::uniform_int_distribution<int> pick(0, 1000);
  int checked = 0;
  for (int iter = 0; iter < 300; ++iter) {
    PoolParams p;
    p.rank = 1 + pick(rng) % 3;
    p.n = 1 + pick(rng) % 2;
    p.c = 1 + pick(rng) % 3;
    const bool ceil_mode = pick(rng) % 2;
    p.count_include_pad = pick(rng) % 2;
    int64_t in_sp = 1;
    bool ok = true;
    for (int i = 0; i < p.rank; ++i) {
      p.in[i] = 1 + pick(rng) % (p.rank == 3 ? 6 : 9);
      p.kernel[i] = 1 + pick(rng) % 3;
      p.stride[i] = 1 + pick(rng) % 3;
      p.dilation[i] = 1 + pick(rng) % 2;
      p.pad_begin[i] = pick(rng) % p.kernel[i];  // pads smaller than the kernel, as ONNX requires
      p.pad_end[i] = pick(rng) % p.kernel[i];
      p.out[i] = pool_out(p.in[i], p.kernel[i], p.stride[i], p.dilation[i], p.pad_begin[i], p.pad_end[i], ceil_mode);
      ok = ok && p.out[i] >= 1;
      in_sp *= p.in[i];
    }
    if (!ok) continue;
    ++checked;
    std::vector<float> x(p.n * p.c * in_sp);
    for (auto& v : x) v = std::round(dist(rng) * 2) / 2;  // coarse values create ties
    std::vector<float> emax, eavg;
    std::vector<int64_t> ei0, ei1;
    naive_pool(x, p, emax, ei0, ei1, eavg);
    std::vector<float> ymax(emax.size()), yavg(emax.size());
    std::vector<int64_t> yi(emax.size());
    const int so = pick(rng) % 2;
    max_pool_nd(x.data(), ymax.data(), yi.data(), so, p);
    average_pool_nd(x.data(), yavg.data(), p);
    for (size_t i = 0; i < ymax.size(); ++i) {
      ASSERT_EQ(ymax[i], emax[i]) << "seed " << seed << " iter " << iter << " at " << i;
      ASSERT_EQ(yi[i], so ? ei1[i] : ei0[i]) << "seed " << seed << " iter " << iter << " at " << i;
      if (std::isnan(eavg[i]))
        ASSERT_TRUE(std::isnan(yavg[i])) << "seed " << seed << " iter " << iter;
      else
        ASSERT_NEAR(yavg[i], eavg[i], 1e-5f) << "seed " << seed << " iter " << iter << " at " << i;
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(ReferencePool, GlobalAveragePoolAndBatchNorm) {
  std::vector<float> x(2 * 3 * 13);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 17) - 3.0f;
  float y[6];
  global_average_pool(x.data(), y, 2, 3, 13);
  for (int i = 0; i < 6; ++i) {
    double s = 0;
    for (int j = 0; j < 13; ++j) s += x[i * 13 + j];
    EXPECT_NEAR(y[i], s / 13, 1e-5);
  }
  const float scale[3] = {1, 2, 0.5f}, bias[3] = {0, 1, -1}, mean[3] = {0, 1, 2}, var[3] = {1, 4, 0.25f};
  std::vector<float> bn(x.size());
  batch_norm_inference(x.data(), scale, bias, mean, var, 1e-5f, bn.data(), 2, 3, 13);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int j = 0; j < 13; ++j) {
        const size_t i = (n * 3 + c) * 13 + j;
        EXPECT_NEAR(bn[i], scale[c] * (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5f) + bias[c], 1e-5);
      }
}

}  // namespace
}  // namespace ws::ref
