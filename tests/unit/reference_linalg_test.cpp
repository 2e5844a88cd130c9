// reference_linalg_test.cpp — ws::ref::gemm (ONNX Gemm-13) and matmul/matmul_dims (MatMul-13,
// numpy matmul) against hand values and naive triple loops.

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {
namespace {

TEST(ReferenceGemm, HandValues) {
  const float a[2] = {1, 2};
  const float bt[6] = {1, 0, 0, 1, 1, 1};  // 3x2, used with trans_b
  const float b[6] = {1, 0, 1, 0, 1, 1};   // 2x3
  float y[3];
  gemm(a, bt, nullptr, {}, y, 1, 3, 2, false, true, 1.0f, 1.0f);
  EXPECT_FLOAT_EQ(y[0], 1);
  EXPECT_FLOAT_EQ(y[1], 2);
  EXPECT_FLOAT_EQ(y[2], 3);
  gemm(a, b, nullptr, {}, y, 1, 3, 2, false, false, 1.0f, 1.0f);
  EXPECT_FLOAT_EQ(y[0], 1);
  EXPECT_FLOAT_EQ(y[1], 2);
  EXPECT_FLOAT_EQ(y[2], 3);
  const float c[3] = {1, 1, 1};
  const int64_t c_dims[1] = {3};
  gemm(a, b, c, c_dims, y, 1, 3, 2, false, false, 0.5f, 2.0f);
  EXPECT_FLOAT_EQ(y[0], 2.5f);
  EXPECT_FLOAT_EQ(y[1], 3.0f);
  EXPECT_FLOAT_EQ(y[2], 3.5f);
  const float c1[1] = {1};
  const int64_t c1_dims[1] = {1};
  gemm(a, bt, c1, c1_dims, y, 1, 3, 2, false, true, 0.5f, 2.0f);
  EXPECT_FLOAT_EQ(y[0], 2.5f);
  EXPECT_FLOAT_EQ(y[1], 3.0f);
  EXPECT_FLOAT_EQ(y[2], 3.5f);
}

TEST(ReferenceGemm, MatchesNaiveAllTransposesAndBiasShapes) {
  const uint32_t seed = 4242;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t m = 7, n = 13, k = 19;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (auto& v : a) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  for (auto& v : c) v = dist(rng);
  const std::vector<std::vector<int64_t>> c_shapes = {{}, {1}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}};
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (size_t cs = 0; cs <= c_shapes.size(); ++cs) {
        const bool has_c = cs < c_shapes.size();
        const std::vector<int64_t> cd = has_c ? c_shapes[cs] : std::vector<int64_t>{};
        std::vector<float> y(m * n);
        gemm(a.data(), b.data(), has_c ? c.data() : nullptr, cd, y.data(), m, n, k, ta, tb, 0.75f, -1.5f);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t p = 0; p < k; ++p)
              s += double(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
            double e = 0.75 * s;
            if (has_c) {
              const int64_t ci = (cd.size() == 2 && cd[0] != 1) ? i : 0;
              const int64_t cj = (!cd.empty() && cd.back() != 1) ? j : 0;
              const int64_t cols = cd.empty() ? 1 : cd.back();
              e += -1.5 * c[ci * cols + cj];
            }
            ASSERT_NEAR(y[i * n + j], e, 1e-5) << "seed " << seed << " ta " << ta << " tb " << tb << " c " << cs;
          }
      }
}

void naive_matmul(const std::vector<float>& a, const Dims& ad, const std::vector<float>& b, const Dims& bd,
                  std::vector<float>& y, const Dims& yd) {
  // Promote to rank >= 2, then broadcast batch dims by explicit index mapping.
  Dims a2 = ad, b2 = bd;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  const size_t r = std::max(a2.size(), b2.size());
  while (a2.size() < r) a2.insert(a2.begin(), 1);
  while (b2.size() < r) b2.insert(b2.begin(), 1);
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < r; ++i) batches *= std::max(a2[i], b2[i]);
  y.assign(batches * m * n, 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t rem = bi, ao = 0, bo = 0, am = 1, bm = 1;
    for (size_t t = r - 2; t-- > 0;) {
      const int64_t yd_t = std::max(a2[t], b2[t]);
      const int64_t coord = rem % yd_t;
      rem /= yd_t;
      ao += (a2[t] == 1 ? 0 : coord) * am;
      bo += (b2[t] == 1 ? 0 : coord) * bm;
      am *= a2[t];
      bm *= b2[t];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += double(a[ao * m * k + i * k + p]) * b[bo * k * n + p * n + j];
        y[bi * m * n + i * n + j] = float(s);
      }
  }
  ASSERT_EQ(static_cast<int64_t>(y.size()), element_count(yd));
}

TEST(ReferenceMatMul, NumpySemantics) {
  struct Case {
    Dims a, b, y;
  };
  const Case cases[] = {
      {{3}, {3}, {}},
      {{3}, {3, 4}, {4}},
      {{2, 3}, {3}, {2}},
      {{5, 2, 3}, {3}, {5, 2}},
      {{3}, {5, 3, 4}, {5, 4}},
      {{2, 3}, {3, 4}, {2, 4}},
      {{2, 1, 2, 3}, {4, 3, 5}, {2, 4, 2, 5}},
      {{1, 4, 2, 3}, {3, 1, 3, 2}, {3, 4, 2, 2}},
      {{6, 2, 17}, {17, 9}, {6, 2, 9}},
      {{2, 0, 3}, {3, 4}, {2, 0, 4}},
  };
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const Case& c : cases) {
    auto yd = matmul_dims(c.a, c.b);
    ASSERT_TRUE(yd.is_ok()) << yd.status().message();
    ASSERT_EQ(*yd, c.y);
    std::vector<float> a(element_count(c.a)), b(element_count(c.b));
    for (auto& v : a) v = dist(rng);
    for (auto& v : b) v = dist(rng);
    std::vector<float> expect;
    naive_matmul(a, c.a, b, c.b, expect, c.y);
    std::vector<float> y(expect.size(), NAN);
    matmul(a.data(), c.a, b.data(), c.b, y.data(), c.y);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expect[i], 1e-5) << i;
  }
}

TEST(ReferenceMatMul, DimsErrors) {
  const Dims a{2, 3}, b{4, 5};
  auto r = matmul_dims(a, b);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("[2, 3]"), std::string::npos);
  EXPECT_NE(r.status().message().find("[4, 5]"), std::string::npos);
  EXPECT_FALSE(matmul_dims(Dims{2, 2, 3}, Dims{3, 3, 4}).is_ok());  // batch 2 vs 3
  EXPECT_FALSE(matmul_dims(Dims{}, Dims{3}).is_ok());               // scalar operand
  EXPECT_FALSE(matmul_dims(Dims{3}, Dims{4}).is_ok());
}

}  // namespace
}  // namespace ws::ref
