// reference_layout_test.cpp — ws::ref softmax (ONNX Softmax-13), transpose and concat.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {
namespace {

TEST(ReferenceSoftmax, LastAxisAndInnerAxis) {
  const float x[6] = {1, 2, 3, 1000, 1000, 1000};
  float y[6];
  softmax(x, y, 2, 3, 1);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(y[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(y[1], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(y[2], std::exp(3.0) / z, 1e-6);
  for (int i = 3; i < 6; ++i) EXPECT_NEAR(y[i], 1.0 / 3.0, 1e-6);  // stable for large inputs
  // Axis 0 of a [3, 2] tensor: outer 1, axis 3, inner 2.
  const float x2[6] = {1, 0, 2, 0, 3, 0};
  softmax(x2, y, 1, 3, 2);
  EXPECT_NEAR(y[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(y[2], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(y[4], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(y[1], 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(y[3], 1.0 / 3.0, 1e-6);
}

TEST(ReferenceTranspose, PermutationsOfRank3And4) {
  const Dims xd{2, 3, 4};
  std::vector<float> x(24);
  std::iota(x.begin(), x.end(), 0.0f);
  const std::vector<Dims> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const Dims& perm : perms) {
    std::vector<float> y(24);
    transpose(x.data(), xd, perm, y.data(), 4);
    const int64_t yd[3] = {xd[perm[0]], xd[perm[1]], xd[perm[2]]};
    const int64_t xs[3] = {12, 4, 1};
    for (int64_t i = 0; i < yd[0]; ++i)
      for (int64_t j = 0; j < yd[1]; ++j)
        for (int64_t k = 0; k < yd[2]; ++k)
          ASSERT_EQ(y[(i * yd[1] + j) * yd[2] + k], x[i * xs[perm[0]] + j * xs[perm[1]] + k * xs[perm[2]]]);
  }
  // 8-byte elements, rank 4, NCHW -> NHWC.
  const Dims x4{2, 3, 2, 2};
  std::vector<int64_t> xi(24), yi(24);
  std::iota(xi.begin(), xi.end(), int64_t{100});
  transpose(xi.data(), x4, Dims{0, 2, 3, 1}, yi.data(), 8);
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w)
        for (int c = 0; c < 3; ++c) ASSERT_EQ(yi[((n * 2 + h) * 2 + w) * 3 + c], xi[((n * 3 + c) * 2 + h) * 2 + w]);
  // Scalar.
  const float s = 7.0f;
  float t = 0;
  transpose(&s, Dims{}, Dims{}, &t, 4);
  EXPECT_EQ(t, 7.0f);
}

TEST(ReferenceConcat, Axes) {
  const float a[6] = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const float b[4] = {7, 8, 9, 10};       // [2, 2]
  const void* ins[2] = {a, b};
  const Dims dims[2] = {{2, 3}, {2, 2}};
  float y[10];
  concat(ins, dims, 1, y, 4);
  const float e1[10] = {1, 2, 3, 7, 8, 4, 5, 6, 9, 10};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(y[i], e1[i]);
  const float c[3] = {11, 12, 13};  // [1, 3]
  const void* ins0[2] = {a, c};
  const Dims dims0[2] = {{2, 3}, {1, 3}};
  concat(ins0, dims0, 0, y, 4);
  const float e0[9] = {1, 2, 3, 4, 5, 6, 11, 12, 13};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(y[i], e0[i]);
  // Empty input along the axis.
  const Dims dims_empty[2] = {{2, 3}, {2, 0}};
  const void* ins_e[2] = {a, nullptr};
  concat(ins_e, dims_empty, 1, y, 4);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], a[i]);
}

}  // namespace
}  // namespace ws::ref
