// reference_preprocess_test.cpp — ws::ref::preprocess_rgb8_to_nchw: half-pixel bilinear resize
// values computed by hand, ImageNet normalisation constants, odd sizes and row pitch.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {
namespace {

Normalize identity_255() {  // out = pixel value (0..255)
  Normalize n;
  for (int c = 0; c < 3; ++c) n.mean[c] = 0.0f, n.inv_std[c] = 255.0f;
  return n;
}

// Grey image with v(y, x) given by f; all three channels equal.
template <typename F>
std::vector<uint8_t> grey(int64_t h, int64_t w, int64_t pitch, F f) {
  std::vector<uint8_t> img(h * pitch, 0xEE);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img[y * pitch + x * 3 + c] = static_cast<uint8_t>(f(y, x));
  return img;
}

TEST(ReferencePreprocess, DownscaleRamp10To5) {
  auto img = grey(10, 10, 30, [](int64_t y, int64_t x) { return 10 * y + x; });
  std::vector<float> out(3 * 25);
  ASSERT_TRUE(preprocess_rgb8_to_nchw(img.data(), 10, 10, 30, out.data(), 5, 5, identity_255()).is_ok());
  for (int c = 0; c < 3; ++c)
    for (int x = 0; x < 5; ++x) {
      EXPECT_NEAR(out[c * 25 + x], 5.5f + 2 * x, 1e-4) << c;
      EXPECT_NEAR(out[c * 25 + 20 + x], 85.5f + 2 * x, 1e-4) << c;
    }
}

TEST(ReferencePreprocess, HalfPixelCases) {
  const Normalize n = identity_255();
  {  // 3x5 ramp → 2x2
    auto img = grey(3, 5, 15, [](int64_t y, int64_t x) { return 10 * y + x; });
    float out[12];
    ASSERT_TRUE(preprocess_rgb8_to_nchw(img.data(), 3, 5, 15, out, 2, 2, n).is_ok());
    EXPECT_NEAR(out[0], 3.25f, 1e-4);
    EXPECT_NEAR(out[1], 5.75f, 1e-4);
    EXPECT_NEAR(out[2], 18.25f, 1e-4);
    EXPECT_NEAR(out[3], 20.75f, 1e-4);
  }
  {  // 2x2 → 4x4 upscale, clamped at the borders
    const uint8_t v[2][2] = {{0, 10}, {20, 30}};
    auto img = grey(2, 2, 6, [&](int64_t y, int64_t x) { return v[y][x]; });
    float out[48];
    ASSERT_TRUE(preprocess_rgb8_to_nchw(img.data(), 2, 2, 6, out, 4, 4, n).is_ok());
    EXPECT_NEAR(out[0], 0.0f, 1e-4);
    EXPECT_NEAR(out[1], 2.5f, 1e-4);
    EXPECT_NEAR(out[2], 7.5f, 1e-4);
    EXPECT_NEAR(out[3], 10.0f, 1e-4);
    EXPECT_NEAR(out[12], 20.0f, 1e-4);
    EXPECT_NEAR(out[15], 30.0f, 1e-4);
  }
  {  // 1x10 → 1x1
    auto img = grey(1, 10, 30, [](int64_t, int64_t x) { return x; });
    float out[3];
    ASSERT_TRUE(preprocess_rgb8_to_nchw(img.data(), 1, 10, 30, out, 1, 1, n).is_ok());
    EXPECT_NEAR(out[0], 4.5f, 1e-4);
  }
}

TEST(ReferencePreprocess, ImageNetNormalisation) {
  struct Case {
    uint8_t rgb[3];
    float expect[3];
  };
  const Case cases[] = {{{0, 0, 0}, {-2.117904f, -2.035714f, -1.804444f}},
                        {{255, 255, 255}, {2.248908f, 2.428571f, 2.640000f}},
                        {{124, 116, 104}, {0.005566f, -0.004902f, 0.008192f}}};
  for (const Case& c : cases) {
    std::vector<uint8_t> img(4 * 4 * 3);
    for (size_t i = 0; i < img.size(); ++i) img[i] = c.rgb[i % 3];
    std::vector<float> out(3 * 2 * 3);
    ASSERT_TRUE(preprocess_rgb8_to_nchw(img.data(), 4, 4, 12, out.data(), 2, 3).is_ok());
    for (int ch = 0; ch < 3; ++ch)
      for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[ch * 6 + i], c.expect[ch], 1e-5) << ch;
  }
}

TEST(ReferencePreprocess, ConstantOddSizesAndPitch) {
  const Normalize n = identity_255();
  const int64_t sizes[][2] = {{1, 1}, {7, 3}, {3, 7}, {13, 1}};
  for (auto& src : sizes)
    for (auto& dst : sizes) {
      const int64_t pitch = src[1] * 3 + 5;  // padded rows
      std::vector<uint8_t> img(src[0] * pitch, 0);
      for (int64_t y = 0; y < src[0]; ++y)
        for (int64_t x = 0; x < src[1]; ++x) {
          img[y * pitch + x * 3 + 0] = 200;
          img[y * pitch + x * 3 + 1] = 17;
          img[y * pitch + x * 3 + 2] = 99;
        }
      std::vector<float> out(3 * dst[0] * dst[1]);
      ASSERT_TRUE(preprocess_rgb8_to_nchw(img.data(), src[0], src[1], pitch, out.data(), dst[0], dst[1], n).is_ok());
      const int64_t plane = dst[0] * dst[1];
      for (int64_t i = 0; i < plane; ++i) {
        EXPECT_NEAR(out[i], 200.0f, 1e-3);
        EXPECT_NEAR(out[plane + i], 17.0f, 1e-3);
        EXPECT_NEAR(out[2 * plane + i], 99.0f, 1e-3);
      }
    }
  // Same image, pitch 3*w vs padded pitch: identical output.
  auto tight = grey(7, 3, 9, [](int64_t y, int64_t x) { return 30 * y + 7 * x; });
  auto padded = grey(7, 3, 16, [](int64_t y, int64_t x) { return 30 * y + 7 * x; });
  std::vector<float> a(3 * 5 * 4), b(3 * 5 * 4);
  ASSERT_TRUE(preprocess_rgb8_to_nchw(tight.data(), 7, 3, 9, a.data(), 5, 4).is_ok());
  ASSERT_TRUE(preprocess_rgb8_to_nchw(padded.data(), 7, 3, 16, b.data(), 5, 4).is_ok());
  EXPECT_EQ(a, b);
}

TEST(ReferencePreprocess, Errors) {
  uint8_t img[12] = {};
  float out[12];
  EXPECT_EQ(preprocess_rgb8_to_nchw(img, 0, 2, 6, out, 2, 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(preprocess_rgb8_to_nchw(img, 2, 2, 6, out, 2, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(preprocess_rgb8_to_nchw(img, 2, 2, 5, out, 2, 2).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ws::ref
