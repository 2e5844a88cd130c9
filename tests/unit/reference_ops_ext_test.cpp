// reference_ops_ext_test.cpp — ws::ref ops added for issue 14 (reference/ops_ext.h), each on
// hand-worked values or the worked examples of the ONNX operator pages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "reference/ops_ext.h"

namespace ws::ref {
namespace {

using V = std::vector<float>;

void expect_near_all(const V& got, const V& want, float tol = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "first bad index " << i;
}

TEST(ReferenceGather, Axis1PicksColumns) {
  const V x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const int64_t idx[3] = {2, 0, 2};
  V y(6);
  gather(x.data(), 2, 3, 1, idx, 3, y.data(), 4);
  EXPECT_EQ(y, (V{3, 1, 3, 6, 4, 6}));
}

TEST(ReferenceGatherElements, Axis1) {
  // ONNX GatherElements example: data [[1,2],[3,4]], indices [[0,0],[1,0]], axis 1 → [[1,1],[4,3]].
  const V x = {1, 2, 3, 4};
  const int64_t idx[4] = {0, 0, 1, 0};
  const Dims d = {2, 2};
  V y(4);
  gather_elements(x.data(), d, idx, d, 1, y.data(), 4);
  EXPECT_EQ(y, (V{1, 1, 4, 3}));
}

TEST(ReferenceScatterND, OnnxDocExample2) {
  // ONNX ScatterND example 1 (1-D): data [1..8], indices [[4],[3],[1],[7]], updates [9,10,11,12]
  // → [1, 11, 3, 10, 9, 6, 7, 12].
  const V x = {1, 2, 3, 4, 5, 6, 7, 8}, u = {9, 10, 11, 12};
  const int64_t idx[4] = {4, 3, 1, 7};
  const Dims d = {8};
  V y(8);
  scatter_nd(x.data(), d, idx, 4, 1, u.data(), y.data(), 4);
  EXPECT_EQ(y, (V{1, 11, 3, 10, 9, 6, 7, 12}));
  // Row update on [2, 3]: indices [[1]] replaces row 1.
  const V m = {1, 2, 3, 4, 5, 6}, row = {7, 8, 9};
  const int64_t r1[1] = {1};
  const Dims md = {2, 3};
  V z(6);
  scatter_nd(m.data(), md, r1, 1, 1, row.data(), z.data(), 4);
  EXPECT_EQ(z, (V{1, 2, 3, 7, 8, 9}));
}

TEST(ReferenceTriluCumSumHardmax, Values) {
  const V x = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // [3, 3]
  V y(9);
  trilu(x.data(), 1, 3, 3, 0, true, y.data(), 4);
  EXPECT_EQ(y, (V{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  trilu(x.data(), 1, 3, 3, -1, false, y.data(), 4);
  EXPECT_EQ(y, (V{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  V c(3);
  cumsum(Elem::kFloat32, x.data(), c.data(), 1, 3, 1, false, false);
  EXPECT_EQ(c, (V{1, 3, 6}));
  cumsum(Elem::kFloat32, x.data(), c.data(), 1, 3, 1, true, true);  // exclusive, reverse
  EXPECT_EQ(c, (V{5, 3, 0}));
  const V h = {3, 7, 7, 1};
  V hy(4);
  hardmax(h.data(), hy.data(), 1, 4, 1);
  EXPECT_EQ(hy, (V{0, 1, 0, 0}));  // first maximum wins
}

TEST(ReferenceSlice, NegativeStepReverses) {
  const V x = {0, 1, 2, 3, 4, 5, 6, 7};  // [2, 4]
  const Dims xd = {2, 4}, st = {1, 3}, sp = {1, -2}, yd = {1, 2};
  V y(2);
  slice(x.data(), xd, st, sp, y.data(), yd, 4);
  EXPECT_EQ(y, (V{7, 5}));
}

TEST(ReferenceExpandTile, BroadcastAndRepeat) {
  const V x = {1, 2};  // [2, 1]
  const Dims xd = {2, 1}, yd = {2, 3};
  V y(6);
  expand(x.data(), xd, y.data(), yd, 4);
  EXPECT_EQ(y, (V{1, 1, 1, 2, 2, 2}));
  const V t = {1, 2, 3, 4};  // [2, 2] tiled [1, 2] → [2, 4]
  const Dims td = {2, 2}, ty = {2, 4};
  V z(8);
  tile(t.data(), td, z.data(), ty, 4);
  EXPECT_EQ(z, (V{1, 2, 1, 2, 3, 4, 3, 4}));
}

TEST(ReferenceWhere, BroadcastsCondition) {
  const uint8_t cond[2] = {1, 0};  // [2] against [2, 2]
  const V a = {1, 2, 3, 4}, b = {-1};
  const Dims cd = {2}, ad = {2, 2}, bd = {}, yd = {2, 2};
  V y(4);
  where(cond, cd, a.data(), ad, b.data(), bd, y.data(), yd, 4);
  EXPECT_EQ(y, (V{1, -1, 3, -1}));
}

TEST(ReferenceCast, HalfRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);                   // rounds up to inf
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie → even (down)
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie → even (up)
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);      // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);      // tie → even (zero)
  EXPECT_EQ(float_to_half(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
}

TEST(ReferenceCast, FloatIntBool) {
  const V x = {-2.7f, 0.0f, 3.9f};
  int64_t y[3];
  cast(x.data(), Elem::kFloat32, y, Elem::kInt64, 3);
  EXPECT_EQ(y[0], -2);
  EXPECT_EQ(y[2], 3);
  uint8_t b[3];
  cast(x.data(), Elem::kFloat32, b, Elem::kBool, 3);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[1], 0);
  const int64_t big = (int64_t{1} << 53) + 1;  // exact int64 → int32 path (wraps like ONNX's numpy)
  int32_t w;
  cast(&big, Elem::kInt64, &w, Elem::kInt32, 1);
  EXPECT_EQ(w, 1);
  double d;
  cast(x.data() + 2, Elem::kFloat32, &d, Elem::kFloat64, 1);
  EXPECT_EQ(d, static_cast<double>(3.9f));
}

TEST(ReferenceMath, Values) {
  const V x = {-1.0f, 0.0f, 2.0f};
  V y(3);
  math(MathOp::kErf, x.data(), y.data(), 3);
  expect_near_all(y, {-0.8427007929f, 0.0f, 0.9953222650f});
  MathParams lp;
  lp.alpha = 0.1f;
  math(MathOp::kLeakyRelu, x.data(), y.data(), 3, lp);
  expect_near_all(y, {-0.1f, 0.0f, 2.0f});
  MathParams ep;
  ep.alpha = 2.0f;
  math(MathOp::kElu, x.data(), y.data(), 3, ep);
  expect_near_all(y, {2.0f * (std::exp(-1.0f) - 1.0f), 0.0f, 2.0f});
  math(MathOp::kSelu, x.data(), y.data(), 3, MathParams{1.6732632f, 1.0507010f});
  expect_near_all(y, {1.0507010f * 1.6732632f * (std::exp(-1.0f) - 1.0f), 0.0f, 2.1014020f}, 1e-5f);
  math(MathOp::kSoftplus, x.data(), y.data(), 3);
  expect_near_all(y, {0.3132616875f, 0.6931471806f, 2.1269280110f});
  const float huge = 1000.0f;
  float sp;
  math(MathOp::kSoftplus, &huge, &sp, 1);
  EXPECT_EQ(sp, 1000.0f);  // no overflow to inf
  math(MathOp::kSoftsign, x.data(), y.data(), 3);
  expect_near_all(y, {-0.5f, 0.0f, 2.0f / 3.0f});
  math(MathOp::kGelu, x.data(), y.data(), 3);
  expect_near_all(y, {-0.1586552539f, 0.0f, 1.9544997361f});
  math(MathOp::kReciprocal, x.data() + 2, y.data(), 1);
  EXPECT_EQ(y[0], 0.5f);
}

TEST(ReferenceMath, RoundSignShrinkCeluIsInf) {
  const V x = {-2.5f, -0.5f, 0.5f, 1.5f, 2.5f};
  V y(5);
  math(MathOp::kRound, x.data(), y.data(), 5);
  EXPECT_EQ(y, (V{-2, -0.0f, 0, 2, 2}));  // half to even
  math(MathOp::kSign, x.data(), y.data(), 5);
  EXPECT_EQ(y, (V{-1, -1, 1, 1, 1}));
  MathParams sp;
  sp.bias = 0.25f;
  sp.lambd = 1.0f;
  math(MathOp::kShrink, x.data(), y.data(), 5, sp);
  EXPECT_EQ(y, (V{-2.25f, 0, 0, 1.25f, 2.25f}));
  MathParams tp;
  tp.alpha = 1.5f;
  math(MathOp::kThresholdedRelu, x.data(), y.data(), 5, tp);
  EXPECT_EQ(y, (V{0, 0, 0, 0, 2.5f}));
  MathParams cp;
  cp.alpha = 2.0f;
  math(MathOp::kCelu, x.data(), y.data(), 5, cp);
  EXPECT_NEAR(y[0], 2.0f * (std::exp(-1.25f) - 1.0f), 1e-6f);
  EXPECT_EQ(y[4], 2.5f);
  const V z = {-INFINITY, 1.0f, INFINITY, NAN};
  uint8_t b[4];
  is_inf(z.data(), b, 4, false, true);
  EXPECT_EQ(std::vector<int>(b, b + 4), (std::vector<int>{0, 0, 1, 0}));
  is_nan(z.data(), b, 4);
  EXPECT_EQ(std::vector<int>(b, b + 4), (std::vector<int>{0, 0, 0, 1}));
}

TEST(ReferenceBinary, PowPReluMaxMin) {
  const V a = {2, -3, 4, -5};  // [2, 2]
  const V b = {3, 0.5f};       // [2]
  const Dims ad = {2, 2}, bd = {2}, yd = {2, 2};
  V y(4);
  binary_f32(Binary2Op::kPow, a.data(), ad, b.data(), bd, y.data(), yd);
  EXPECT_EQ(y[0], 8.0f);
  EXPECT_TRUE(std::isnan(y[1]));  // (-3)^0.5
  EXPECT_EQ(y[2], 64.0f);
  binary_f32(Binary2Op::kPRelu, a.data(), ad, b.data(), bd, y.data(), yd);
  EXPECT_EQ(y, (V{2, -1.5f, 4, -2.5f}));
  binary_f32(Binary2Op::kMax, a.data(), ad, b.data(), bd, y.data(), yd);
  EXPECT_EQ(y, (V{3, 0.5f, 4, 0.5f}));
  const float nan = NAN, one = 1.0f;
  float m;
  const Dims s = {};
  binary_f32(Binary2Op::kMin, &nan, s, &one, s, &m, s);
  EXPECT_TRUE(std::isnan(m));
  const int64_t ia[2] = {7, -7}, ib[1] = {2};
  int64_t iy[2];
  const Dims i2 = {2}, i1 = {1};
  binary_i64(Binary2Op::kDiv, ia, i2, ib, i1, iy, i2);
  EXPECT_EQ(iy[0], 3);
  EXPECT_EQ(iy[1], -3);  // truncation, as C and ONNX integer Div
  binary_i64(Binary2Op::kMod, ia, i2, ib, i1, iy, i2);
  EXPECT_EQ(iy[1], 1);   // fmod = 0: sign of the divisor
}

TEST(ReferenceCompare, BroadcastToBool) {
  const V a = {1, 2, 3}, b = {2};
  const Dims ad = {3}, bd = {1};
  uint8_t y[3];
  compare(CompareOp::kLess, Elem::kFloat32, a.data(), ad, b.data(), bd, y, ad);
  EXPECT_EQ(std::vector<int>(y, y + 3), (std::vector<int>{1, 0, 0}));
  compare(CompareOp::kEqual, Elem::kFloat32, a.data(), ad, b.data(), bd, y, ad);
  EXPECT_EQ(std::vector<int>(y, y + 3), (std::vector<int>{0, 1, 0}));
  compare(CompareOp::kGreater, Elem::kFloat32, a.data(), ad, b.data(), bd, y, ad);
  EXPECT_EQ(std::vector<int>(y, y + 3), (std::vector<int>{0, 0, 1}));
  uint8_t n[3];
  logical_not(y, n, 3);
  EXPECT_EQ(std::vector<int>(n, n + 3), (std::vector<int>{1, 1, 0}));
}

TEST(ReferenceReduce, AxesKeepdimsAndNan) {
  const V x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const Dims xd = {2, 3};
  const bool ax1[2] = {false, true}, ax0[2] = {true, false}, all[2] = {true, true};
  V y(3);
  reduce(ReduceOp::kMean, x.data(), xd, ax1, y.data());
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_EQ(y[1], 5.0f);
  reduce(ReduceOp::kSum, x.data(), xd, ax0, y.data());
  EXPECT_EQ(y, (V{5, 7, 9}));
  reduce(ReduceOp::kL2, x.data(), xd, all, y.data());
  EXPECT_NEAR(y[0], std::sqrt(91.0f), 1e-5f);
  reduce(ReduceOp::kProd, x.data(), xd, all, y.data());
  EXPECT_EQ(y[0], 720.0f);
  reduce(ReduceOp::kLogSumExp, x.data(), xd, ax1, y.data());
  EXPECT_NEAR(y[0], 3.4076059644f, 1e-6f);
  const V xn = {1, NAN, 3};
  const Dims nd = {3};
  const bool one[1] = {true};
  reduce(ReduceOp::kMax, xn.data(), nd, one, y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  const Dims empty = {0};
  reduce(ReduceOp::kMin, xn.data(), empty, one, y.data());
  EXPECT_EQ(y[0], INFINITY);  // identity of an empty Min
}

TEST(ReferenceNorm, LayerInstanceLogSoftmax) {
  const V x = {1, 2, 3, 4};
  const V scale = {2, 2, 2, 2}, bias = {1, 1, 1, 1};
  V y(4);
  float mean, inv;
  layer_norm(x.data(), scale.data(), bias.data(), y.data(), 1, 4, 0.0f, &mean, &inv);
  const float s = 1.0f / std::sqrt(1.25f);
  expect_near_all(y, {1 - 3 * s, 1 - s, 1 + s, 1 + 3 * s}, 1e-5f);
  EXPECT_EQ(mean, 2.5f);
  EXPECT_NEAR(inv, s, 1e-6f);
  // InstanceNorm over [1, 2, 2]: channel 0 {1, 2}, channel 1 {3, 4}; scale {1, 2}, bias {0, 1}.
  const V sc = {1, 2}, bi = {0, 1};
  instance_norm(x.data(), sc.data(), bi.data(), y.data(), 1, 2, 2, 0.0f);
  expect_near_all(y, {-1, 1, -1, 3}, 1e-6f);
  V ls(3);
  log_softmax(x.data(), ls.data(), 1, 3, 1);
  expect_near_all(ls, {-2.4076059644f, -1.4076059644f, -0.4076059644f});
}

TEST(ReferenceConvTranspose, OnnxDocExample1d) {
  // ONNX ConvTranspose "convtranspose_1d": X [1,1,3] = 0 1 2, W [1,2,3] = ones → Y [1,2,5].
  const V x = {0, 1, 2}, w(6, 1.0f);
  ConvTransposeParams p;
  p.rank = 1; p.c_in = 1; p.c_out = 2;
  p.in[0] = 3; p.kernel[0] = 3; p.out[0] = 5;
  V y(10);
  conv_transpose_nd(x.data(), w.data(), nullptr, y.data(), p);
  EXPECT_EQ(y, (V{0, 1, 3, 3, 2, 0, 1, 3, 3, 2}));
  // Stride 2, pad 1 each side, bias 10: out = 2·(3−1) + 3 − 2 = 5; taps at o = 2i − 1 + k.
  p.c_out = 1; p.stride[0] = 2; p.pad_begin[0] = 1; p.out[0] = 5;
  const float b = 10.0f;
  V y2(5);
  conv_transpose_nd(x.data(), w.data(), &b, y2.data(), p);
  EXPECT_EQ(y2, (V{10, 11, 11, 13, 12}));
}

TEST(ReferenceResize, LinearHalfPixelAndNearest) {
  const V x = {1, 2, 3, 4};
  ResizeParams p;
  p.mode = ResizeMode::kLinear;
  p.in_dims = {1, 1, 2, 2};
  p.out_dims = {1, 1, 4, 4};
  p.scales = {1, 1, 2, 2};
  V y(16);
  resize(x.data(), y.data(), make_resize_taps(p));
  // ONNX test_resize_upsample_scales_linear.
  expect_near_all(y, {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  p.mode = ResizeMode::kNearest;
  p.out_dims = {1, 1, 4, 6};
  p.scales = {1, 1, 2, 3};
  V z(24);
  resize(x.data(), z.data(), make_resize_taps(p));
  // ONNX test_resize_upsample_scales_nearest.
  EXPECT_EQ(z, (V{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  p.mode = ResizeMode::kLinear;
  p.coord = CoordMode::kAlignCorners;
  p.in_dims = {1, 1, 1, 2};
  p.out_dims = {1, 1, 1, 3};
  p.scales = {1, 1, 1, 1.5};
  V a(3);
  resize(x.data(), a.data(), make_resize_taps(p));
  EXPECT_EQ(a, (V{1, 1.5f, 2}));
}

}  // namespace
}  // namespace ws::ref
