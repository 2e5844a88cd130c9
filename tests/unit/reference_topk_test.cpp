// reference_topk_test.cpp — ws::ref::topk: ordering, ties, NaN handling, K errors, and a random
// comparison with a std::stable_sort-based ranking.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {
namespace {

TEST(ReferenceTopK, OrderAndTies) {
  const float logits[6] = {1.0f, 5.0f, 3.0f, 5.0f, -2.0f, 3.0f};
  TopKEntry out[4];
  ASSERT_TRUE(topk(logits, 6, 4, out).is_ok());
  EXPECT_EQ(out[0].index, 1);
  EXPECT_EQ(out[1].index, 3);
  EXPECT_EQ(out[2].index, 2);
  EXPECT_EQ(out[3].index, 5);
  EXPECT_EQ(out[0].score, 5.0f);
  EXPECT_EQ(out[3].score, 3.0f);
  ASSERT_TRUE(topk(logits, 6, 1, out).is_ok());
  EXPECT_EQ(out[0].index, 1);
}

TEST(ReferenceTopK, NaNHandling) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  {  // all NaN: indices in order, scores stay NaN
    const float logits[5] = {nan, nan, nan, nan, nan};
    TopKEntry out[3];
    ASSERT_TRUE(topk(logits, 5, 3, out).is_ok());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(out[i].index, i);
      EXPECT_TRUE(std::isnan(out[i].score));
    }
  }
  {  // mixed: NaN below every number, tied with -inf (lower index first)
    const float logits[6] = {nan, 2.0f, -inf, nan, -100.0f, 7.0f};
    TopKEntry out[6];
    ASSERT_TRUE(topk(logits, 6, 6, out).is_ok());
    const int32_t expect[6] = {5, 1, 4, 0, 2, 3};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i].index, expect[i]) << i;
    EXPECT_TRUE(std::isnan(out[3].score));
    EXPECT_EQ(out[4].score, -inf);
    EXPECT_TRUE(std::isnan(out[5].score));
    ASSERT_TRUE(topk(logits, 6, 2, out).is_ok());
    EXPECT_EQ(out[0].index, 5);
    EXPECT_EQ(out[1].index, 1);
  }
}

TEST(ReferenceTopK, KErrors) {
  const float logits[40] = {};
  TopKEntry out[kMaxTopK];
  auto s0 = topk(logits, 40, 0, out);
  EXPECT_EQ(s0.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s0.message().find("0"), std::string::npos);
  auto s33 = topk(logits, 40, 33, out);
  EXPECT_EQ(s33.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s33.message().find("33"), std::string::npos);
  EXPECT_NE(s33.message().find("32"), std::string::npos);
  auto s5 = topk(logits, 4, 5, out);
  EXPECT_EQ(s5.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s5.message().find("5"), std::string::npos);
  EXPECT_NE(s5.message().find("4"), std::string::npos);
  EXPECT_TRUE(topk(logits, 40, 32, out).is_ok());
  EXPECT_TRUE(topk(logits, 4, 4, out).is_ok());
  EXPECT_EQ(topk(logits, 0, 1, out).code(), StatusCode::kInvalidArgument);
}

TEST(ReferenceTopK, MatchesSortOnRandomLogits) {
  const uint32_t seed = 2024;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> coarse(-20, 20);  // coarse values force ties
  std::uniform_int_distribution<int> special(0, 30);
  for (int iter = 0; iter < 200; ++iter) {
    const int64_t classes = 1 + iter * 7 % 1000;
    std::vector<float> logits(classes);
    for (auto& v : logits) {
      const int s = special(rng);
      v = s == 0 ? NAN : s == 1 ? -INFINITY : s == 2 ? INFINITY : coarse(rng) * 0.25f;
    }
    const int k = static_cast<int>(std::min<int64_t>(1 + iter % kMaxTopK, classes));
    std::vector<int32_t> order(classes);
    std::iota(order.begin(), order.end(), 0);
    auto key = [&](int32_t i) { return std::isnan(logits[i]) ? -INFINITY : logits[i]; };
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return key(a) > key(b); });
    TopKEntry out[kMaxTopK];
    ASSERT_TRUE(topk(logits.data(), classes, k, out).is_ok());
    for (int i = 0; i < k; ++i) {
      ASSERT_EQ(out[i].index, order[i]) << "seed " << seed << " iter " << iter << " rank " << i;
      const float v = logits[order[i]];
      if (std::isnan(v))
        ASSERT_TRUE(std::isnan(out[i].score));
      else
        ASSERT_EQ(out[i].score, v);
    }
  }
}

}  // namespace
}  // namespace ws::ref
