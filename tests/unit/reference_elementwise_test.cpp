// reference_elementwise_test.cpp — ws::ref unary activations and numpy-broadcast binary ops.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {
namespace {

TEST(ReferenceUnary, Values) {
  const float x[6] = {-4.0f, -1.0f, 0.0f, 0.5f, 3.0f, NAN};
  float y[6];
  unary(UnaryOp::kRelu, x, y, 6);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_TRUE(std::isnan(y[5]));
  unary(UnaryOp::kSigmoid, x, y, 6);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(y[i], 1.0 / (1.0 + std::exp(-double(x[i]))), 1e-7);
  const float big[2] = {-100.0f, 100.0f};
  float yb[2];
  unary(UnaryOp::kSigmoid, big, yb, 2);
  EXPECT_GE(yb[0], 0.0f);
  EXPECT_LT(yb[0], 1e-30f);
  EXPECT_EQ(yb[1], 1.0f);
  unary(UnaryOp::kHardSigmoid, x, y, 6);  // 0.2x + 0.5
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 0.3f);
  EXPECT_FLOAT_EQ(y[4], 1.0f);
  unary(UnaryOp::kHardSwish, x, y, 6);
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], -1.0f / 3.0f);
  EXPECT_FLOAT_EQ(y[3], 0.5f * (0.5f / 6.0f + 0.5f));
  EXPECT_FLOAT_EQ(y[4], 3.0f);
  UnaryParams clip;
  clip.min = 0.0f, clip.max = 1.0f;
  unary(UnaryOp::kClip, x, y, 6, clip);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_TRUE(std::isnan(y[5]));
  float inplace[3] = {-1, 2, -3};
  unary(UnaryOp::kRelu, inplace, inplace, 3);
  EXPECT_EQ(inplace[0], 0);
  EXPECT_EQ(inplace[1], 2);
  unary(UnaryOp::kIdentity, x, y, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y[i], x[i]);
}

TEST(ReferenceBroadcast, Dims) {
  auto r = broadcast_dims(Dims{2, 1, 4}, Dims{3, 1});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, (Dims{2, 3, 4}));
  EXPECT_EQ(*broadcast_dims(Dims{}, Dims{5}), Dims{5});
  EXPECT_EQ(*broadcast_dims(Dims{}, Dims{}), Dims{});
  EXPECT_EQ(*broadcast_dims(Dims{0, 3}, Dims{1, 3}), (Dims{0, 3}));
  auto bad = broadcast_dims(Dims{2, 3}, Dims{4, 3});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[2, 3]"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("[4, 3]"), std::string::npos) << bad.status().message();
}

TEST(ReferenceBroadcast, BinaryMatchesNaive) {
  struct Case {
    Dims a, b;
  };
  const Case cases[] = {{{}, {}},           {{3}, {}},           {{}, {3}},          {{2, 3}, {2, 3}},
                        {{2, 3}, {3}},      {{2, 3}, {2, 1}},    {{2, 1}, {1, 3}},   {{1, 3, 1, 5}, {2, 1, 4, 1}},
                        {{2, 3, 4, 5}, {1, 3, 1, 1}}, {{4, 1}, {5}}, {{0, 3}, {3}}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);
  for (const Case& c : cases) {
    auto yd = broadcast_dims(c.a, c.b);
    ASSERT_TRUE(yd.is_ok());
    const Dims& y_dims = *yd;
    std::vector<float> a(element_count(c.a)), b(element_count(c.b));
    for (auto& v : a) v = dist(rng);
    for (auto& v : b) v = dist(rng);
    const int64_t total = element_count(y_dims);
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
      std::vector<float> y(total, NAN);
      binary_broadcast(op, a.data(), c.a, b.data(), c.b, y.data(), y_dims);
      for (int64_t e = 0; e < total; ++e) {
        // Naive: decompose e over y_dims, map each coordinate into a and b.
        int64_t rem = e, ao = 0, bo = 0, am = 1, bm = 1;
        for (size_t t = 0; t < y_dims.size(); ++t) {
          const int64_t coord = rem % y_dims[y_dims.size() - 1 - t];
          rem /= y_dims[y_dims.size() - 1 - t];
          if (t < c.a.size()) {
            const int64_t d = c.a[c.a.size() - 1 - t];
            ao += (d == 1 ? 0 : coord) * am;
            am *= d;
          }
          if (t < c.b.size()) {
            const int64_t d = c.b[c.b.size() - 1 - t];
            bo += (d == 1 ? 0 : coord) * bm;
            bm *= d;
          }
        }
        float expect = 0;
        switch (op) {
          case BinaryOp::kAdd: expect = a[ao] + b[bo]; break;
          case BinaryOp::kSub: expect = a[ao] - b[bo]; break;
          case BinaryOp::kMul: expect = a[ao] * b[bo]; break;
          case BinaryOp::kDiv: expect = a[ao] / b[bo]; break;
        }
        ASSERT_EQ(y[e], expect) << "element " << e;
      }
    }
  }
}

}  // namespace
}  // namespace ws::ref
