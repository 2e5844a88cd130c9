// reference_conv_test.cpp — ws::ref::conv_nd against hand-computed ONNX Conv examples and a naive
// seven-loop implementation on random shapes (ranks 1-3, groups, strides, dilations, pads).

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {
namespace {

// Direct transcription of the ONNX Conv definition; zero padding by bounds checks.
void naive_conv(const std::vector<float>& x, const std::vector<float>& w, const float* bias, std::vector<float>& y,
                const ConvParams& p) {
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0},
          out[3] = {1, 1, 1};
  for (int i = 0; i < p.rank; ++i) {
    const int j = 3 - p.rank + i;
    in[j] = p.in[i];
    k[j] = p.kernel[i];
    s[j] = p.stride[i];
    d[j] = p.dilation[i];
    pb[j] = p.pad_begin[i];
    out[j] = p.out[i];
  }
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  y.assign(p.n * p.c_out * out[0] * out[1] * out[2], 0.0f);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oc = 0; oc < p.c_out; ++oc) {
      const int64_t g = oc / cout_g;
      for (int64_t od = 0; od < out[0]; ++od)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow) {
            double acc = bias ? bias[oc] : 0.0;
            for (int64_t ic = 0; ic < cin_g; ++ic)
              for (int64_t kd = 0; kd < k[0]; ++kd)
                for (int64_t kh = 0; kh < k[1]; ++kh)
                  for (int64_t kw = 0; kw < k[2]; ++kw) {
                    const int64_t id = od * s[0] + kd * d[0] - pb[0];
                    const int64_t ih = oh * s[1] + kh * d[1] - pb[1];
                    const int64_t iw = ow * s[2] + kw * d[2] - pb[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                    const float xv = x[(((n * p.c_in + g * cin_g + ic) * in[0] + id) * in[1] + ih) * in[2] + iw];
                    const float wv = w[(((oc * cin_g + ic) * k[0] + kd) * k[1] + kh) * k[2] + kw];
                    acc += static_cast<double>(xv) * wv;
                  }
            y[(((n * p.c_out + oc) * out[0] + od) * out[1] + oh) * out[2] + ow] = static_cast<float>(acc);
          }
    }
}

int64_t floor_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

TEST(ReferenceConv, StridesAndAsymmetricPadding) {
  // ONNX Conv doc example "conv_with_strides_and_asymmetric_padding": X = 0..34 as 1x1x7x5.
  std::vector<float> x(35);
  for (int i = 0; i < 35; ++i) x[i] = static_cast<float>(i);
  std::vector<float> w(9, 1.0f);
  ConvParams p;
  p.rank = 2;
  p.in[0] = 7, p.in[1] = 5;
  p.kernel[0] = 3, p.kernel[1] = 3;
  p.stride[0] = 2, p.stride[1] = 2;
  p.pad_begin[0] = 1, p.pad_begin[1] = 0;  // top, left
  p.pad_end[0] = 1, p.pad_end[1] = 0;      // bottom, right
  p.out[0] = floor_out(7, 3, 2, 1, 1, 1), p.out[1] = floor_out(5, 3, 2, 1, 0, 0);
  ASSERT_EQ(p.out[0], 4);
  ASSERT_EQ(p.out[1], 2);
  std::vector<float> y(8, -1.0f);
  conv_nd(x.data(), w.data(), nullptr, y.data(), p);
  const float expect[8] = {21, 33, 99, 117, 189, 207, 171, 183};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], expect[i]) << i;
}

TEST(ReferenceConv, OneDimensionalSamePadding) {
  const float x[4] = {1, 2, 3, 4};
  const float w[2] = {1, 1};
  ConvParams p;
  p.rank = 1;
  p.in[0] = 4;
  p.kernel[0] = 2;
  p.out[0] = 4;
  float y[4];
  p.pad_begin[0] = 0, p.pad_end[0] = 1;  // SAME_UPPER: extra pad at the end
  conv_nd(x, w, nullptr, y, p);
  EXPECT_FLOAT_EQ(y[0], 3);
  EXPECT_FLOAT_EQ(y[1], 5);
  EXPECT_FLOAT_EQ(y[2], 7);
  EXPECT_FLOAT_EQ(y[3], 4);
  p.pad_begin[0] = 1, p.pad_end[0] = 0;  // SAME_LOWER: extra pad at the beginning
  conv_nd(x, w, nullptr, y, p);
  EXPECT_FLOAT_EQ(y[0], 1);
  EXPECT_FLOAT_EQ(y[1], 3);
  EXPECT_FLOAT_EQ(y[2], 5);
  EXPECT_FLOAT_EQ(y[3], 7);
}

TEST(ReferenceConv, BiasAndPointwise) {
  // 1x1 conv: 2 input channels, 5 output channels (exercises the 4-row block and the remainder).
  ConvParams p;
  p.c_in = 2, p.c_out = 5;
  p.in[0] = 1, p.in[1] = 3;
  p.out[0] = 1, p.out[1] = 3;
  const float x[6] = {1, 2, 3, 10, 20, 30};
  const float w[10] = {1, 0, 0, 1, 1, 1, 2, -1, 0.5f, 0.5f};
  const float b[5] = {0, 1, 2, 3, 4};
  float y[15];
  conv_nd(x, w, b, y, p);
  const float expect[15] = {1, 2, 3, 11, 21, 31, 13, 24, 35, -5, -13, -21, 9.5f, 15, 20.5f};
  for (int i = 0; i < 15; ++i) EXPECT_FLOAT_EQ(y[i], expect[i]) << i;
}

struct ConvCase {
  int rank;
  int64_t n, c_in, c_out, groups;
  int64_t in, k, s, d, pb, pe;
  bool bias;
};

void run_random_case(const ConvCase& cc, std::mt19937& rng, uint32_t seed) {
  ConvParams p;
  p.rank = cc.rank;
  p.n = cc.n, p.c_in = cc.c_in, p.c_out = cc.c_out, p.groups = cc.groups;
  std::uniform_int_distribution<int> jitter(0, 2);
  for (int i = 0; i < cc.rank; ++i) {
    p.in[i] = cc.in + jitter(rng);
    p.kernel[i] = cc.k;
    p.stride[i] = cc.s;
    p.dilation[i] = cc.d;
    p.pad_begin[i] = cc.pb;
    p.pad_end[i] = cc.pe;
    p.out[i] = floor_out(p.in[i], cc.k, cc.s, cc.d, cc.pb, cc.pe);
    ASSERT_GE(p.out[i], 1);
  }
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int64_t in_sp = 1, out_sp = 1, k_sp = 1;
  for (int i = 0; i < cc.rank; ++i) in_sp *= p.in[i], out_sp *= p.out[i], k_sp *= p.kernel[i];
  std::vector<float> x(p.n * p.c_in * in_sp), w(p.c_out * (p.c_in / p.groups) * k_sp), b(p.c_out);
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  std::vector<float> expect;
  naive_conv(x, w, cc.bias ? b.data() : nullptr, expect, p);
  std::vector<float> y(expect.size(), NAN);
  conv_nd(x.data(), w.data(), cc.bias ? b.data() : nullptr, y.data(), p);
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(y[i], expect[i], 1e-5f * (1.0f + std::fabs(expect[i])) * std::sqrt(float(w.size() / p.c_out)))
        << "seed " << seed << " rank " << cc.rank << " c_in " << cc.c_in << " c_out " << cc.c_out << " groups "
        << cc.groups << " k " << cc.k << " s " << cc.s << " d " << cc.d << " pads " << cc.pb << "," << cc.pe
        << " at " << i;
  }
}

TEST(ReferenceConv, MatchesNaiveOnRandomShapes) {
  const uint32_t seed = 12345;
  std::mt19937 rng(seed);
  const ConvCase cases[] = {
      // rank, n, cin, cout, groups, in, k, s, d, pb, pe, bias
      {2, 1, 3, 8, 1, 9, 3, 1, 1, 1, 1, true},    {2, 2, 4, 6, 2, 10, 3, 2, 1, 1, 0, true},
      {2, 1, 8, 8, 8, 12, 3, 1, 1, 1, 1, true},   {2, 1, 8, 8, 8, 13, 5, 2, 1, 2, 2, false},
      {2, 1, 6, 12, 6, 11, 3, 2, 2, 2, 1, true},  {2, 1, 5, 7, 1, 8, 1, 1, 1, 0, 0, true},
      {2, 1, 4, 4, 2, 8, 1, 2, 1, 0, 0, false},   {2, 1, 4, 4, 1, 8, 1, 1, 1, 1, 1, true},
      {2, 1, 3, 5, 1, 9, 4, 3, 1, 0, 3, true},    {2, 1, 2, 3, 1, 7, 3, 1, 3, 3, 0, true},
      {1, 2, 4, 6, 2, 17, 3, 1, 1, 1, 1, true},   {1, 1, 3, 3, 3, 20, 5, 3, 2, 4, 1, true},
      {1, 1, 6, 9, 1, 9, 1, 1, 1, 0, 0, false},   {3, 1, 2, 4, 1, 6, 3, 1, 1, 1, 1, true},
      {3, 2, 4, 4, 4, 7, 3, 2, 1, 1, 2, true},    {3, 1, 3, 2, 1, 8, 2, 2, 2, 0, 1, false},
      {3, 1, 4, 6, 2, 5, 1, 1, 1, 0, 0, true},    {2, 1, 16, 16, 16, 40, 3, 1, 1, 1, 1, true},
      {2, 1, 3, 4, 1, 30, 3, 2, 1, 0, 1, true},   {2, 1, 2, 2, 1, 5, 3, 1, 1, 3, 3, true},
  };
  for (const ConvCase& cc : cases) {
    run_random_case(cc, rng, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(ReferenceConv, WindowsPastThePadsContributeNothing) {
  // out[] larger than the floor formula (as ceil_mode would make it): trailing outputs see only
  // the part of the window inside the input.
  ConvParams p;
  p.rank = 1;
  p.in[0] = 5;
  p.kernel[0] = 2;
  p.stride[0] = 2;
  p.out[0] = 3;
  const float x[5] = {1, 2, 3, 4, 5};
  const float w[2] = {1, 10};
  float y[3];
  conv_nd(x, w, nullptr, y, p);
  EXPECT_FLOAT_EQ(y[0], 21);
  EXPECT_FLOAT_EQ(y[1], 43);
  EXPECT_FLOAT_EQ(y[2], 5);
}

}  // namespace
}  // namespace ws::ref
