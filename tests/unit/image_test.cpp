// decode_image_file: PNG (RGB, RGBA, gray, 16-bit) and JPEG (RGB, gray) files written here with
// libpng / libjpeg, decoded back to RGB8 and compared pixel by pixel with what was written; and
// the refusals: not an image, empty, missing, truncated PNG and JPEG, a header promising 10¹⁰
// pixels (refused before any pixel buffer is allocated).
#include <gtest/gtest.h>

#include <jpeglib.h>
#include <png.h>

#include <cstdio>
#include <cstring>

#include "support/alloc_counter.h"
#include "support/test_util.h"
#include "warpstream/image.h"

namespace ws {
namespace {

using test::TempDir;

// A deterministic W×H test pattern with `channels` channels (gradients + a checkerboard).
std::vector<uint8_t> pattern(int w, int h, int channels) {
  std::vector<uint8_t> p(static_cast<size_t>(w * h * channels));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        p[static_cast<size_t>((y * w + x) * channels + c)] =
            static_cast<uint8_t>((x * 7 + y * 13 + c * 61 + ((x / 4 + y / 4) % 2) * 100) % 256);
  return p;
}

void write_png_simple(const std::string& path, int w, int h, uint32_t format, const std::vector<uint8_t>& pixels) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(w);
  img.height = static_cast<png_uint_32>(h);
  img.format = format;
  ASSERT_NE(png_image_write_to_file(&img, path.c_str(), 0, pixels.data(), 0, nullptr), 0) << img.message;
}

// 16-bit PNG through the low-level API (no gAMA/sRGB chunk, like most 16-bit files in the wild).
void write_png16(const std::string& path, int w, int h, int color_type, int channels, const std::vector<uint16_t>& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) { png_destroy_write_struct(&png, &info); std::fclose(f); FAIL() << "libpng write"; }
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 16, color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  std::vector<uint8_t> row(static_cast<size_t>(w * channels * 2));
  for (int y = 0; y < h; ++y) {
    for (int i = 0; i < w * channels; ++i) {  // big-endian samples
      const uint16_t s = v[static_cast<size_t>(y * w * channels + i)];
      row[static_cast<size_t>(2 * i)] = static_cast<uint8_t>(s >> 8);
      row[static_cast<size_t>(2 * i + 1)] = static_cast<uint8_t>(s & 0xFF);
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

void write_jpeg(const std::string& path, int w, int h, int channels, const std::vector<uint8_t>& pixels, int quality) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels.data()) + static_cast<size_t>(cinfo.next_scanline) * w * channels;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(f);
}

TEST(ImageDecode, PngRgbExact) {
  TempDir dir;
  const auto px = pattern(37, 23, 3);
  write_png_simple(dir.file("rgb.png"), 37, 23, PNG_FORMAT_RGB, px);
  auto img = decode_image_file(dir.file("rgb.png"));
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->width, 37);
  EXPECT_EQ(img->height, 23);
  EXPECT_EQ(img->pixels, px);
}

TEST(ImageDecode, PngRgbaOpaqueKeepsColourTransparentIsBlack) {
  TempDir dir;
  auto px = pattern(16, 8, 4);
  for (int i = 0; i < 16 * 8; ++i) px[static_cast<size_t>(i * 4 + 3)] = (i % 3 == 0) ? 0 : 255;
  write_png_simple(dir.file("rgba.png"), 16, 8, PNG_FORMAT_RGBA, px);
  auto img = decode_image_file(dir.file("rgba.png"));
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  ASSERT_EQ(img->pixels.size(), 16u * 8 * 3);
  for (int i = 0; i < 16 * 8; ++i)
    for (int c = 0; c < 3; ++c) {
      const uint8_t want = (i % 3 == 0) ? 0 : px[static_cast<size_t>(i * 4 + c)];
      ASSERT_EQ(img->pixels[static_cast<size_t>(i * 3 + c)], want) << "pixel " << i << " channel " << c;
    }
}

TEST(ImageDecode, PngGrayReplicatedToRgb) {
  TempDir dir;
  const auto px = pattern(20, 10, 1);
  write_png_simple(dir.file("gray.png"), 20, 10, PNG_FORMAT_GRAY, px);
  auto img = decode_image_file(dir.file("gray.png"));
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  for (int i = 0; i < 200; ++i)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(img->pixels[static_cast<size_t>(i * 3 + c)], px[static_cast<size_t>(i)]) << i;
}

TEST(ImageDecode, Png16BitRgbAndGrayScaleDownTo8Bit) {
  // Sample v·257 (the 16-bit value of 8-bit v) must decode to v, as PIL / OpenCV read it: a 16-bit
  // file without gAMA/sRGB is sRGB-encoded like an 8-bit one, not linear light.
  TempDir dir;
  const auto px8 = pattern(12, 9, 3);
  std::vector<uint16_t> px16(px8.size());
  for (size_t i = 0; i < px8.size(); ++i) px16[i] = static_cast<uint16_t>(px8[i] * 257);
  write_png16(dir.file("rgb16.png"), 12, 9, PNG_COLOR_TYPE_RGB, 3, px16);
  auto img = decode_image_file(dir.file("rgb16.png"));
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  ASSERT_EQ(img->pixels.size(), px8.size());
  for (size_t i = 0; i < px8.size(); ++i) ASSERT_NEAR(img->pixels[i], px8[i], 1) << "rgb16 sample " << i;

  const auto g8 = pattern(12, 9, 1);
  std::vector<uint16_t> g16(g8.size());
  for (size_t i = 0; i < g8.size(); ++i) g16[i] = static_cast<uint16_t>(g8[i] * 257);
  write_png16(dir.file("gray16.png"), 12, 9, PNG_COLOR_TYPE_GRAY, 1, g16);
  auto g = decode_image_file(dir.file("gray16.png"));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  for (size_t i = 0; i < g8.size(); ++i)
    for (int c = 0; c < 3; ++c) ASSERT_NEAR(g->pixels[i * 3 + c], g8[i], 1) << "gray16 sample " << i;
}

TEST(ImageDecode, JpegRgbAndGrayClose) {
  TempDir dir;
  // Smooth content so quality-100 JPEG error stays small: |Δ| <= 4 per sample.
  std::vector<uint8_t> rgb(32 * 24 * 3), gray(32 * 24);
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 32; ++x) {
      gray[static_cast<size_t>(y * 32 + x)] = static_cast<uint8_t>(40 + 4 * x + 2 * y);
      for (int c = 0; c < 3; ++c) rgb[static_cast<size_t>((y * 32 + x) * 3 + c)] = static_cast<uint8_t>(30 + 3 * x + 4 * y + 20 * c);
    }
  write_jpeg(dir.file("gray.jpg"), 32, 24, 1, gray, 100);
  write_jpeg(dir.file("rgb.jpg"), 32, 24, 3, rgb, 100);
  auto g = decode_image_file(dir.file("gray.jpg"));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->width, 32);
  EXPECT_EQ(g->height, 24);
  for (size_t i = 0; i < gray.size(); ++i) {
    ASSERT_EQ(g->pixels[i * 3], g->pixels[i * 3 + 1]) << i;  // gray → R = G = B
    ASSERT_EQ(g->pixels[i * 3], g->pixels[i * 3 + 2]) << i;
    ASSERT_NEAR(g->pixels[i * 3], gray[i], 4) << i;
  }
  auto c = decode_image_file(dir.file("rgb.jpg"));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  for (size_t i = 0; i < rgb.size(); ++i) ASSERT_NEAR(c->pixels[i], rgb[i], 4) << i;
}

TEST(ImageDecode, DetectedByContentNotExtension) {
  TempDir dir;
  const auto px = pattern(5, 4, 3);
  write_png_simple(dir.file("actually_png.jpg"), 5, 4, PNG_FORMAT_RGB, px);
  auto img = decode_image_file(dir.file("actually_png.jpg"));
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->pixels, px);
}

TEST(ImageDecode, NotAnImageIsInvalidImage) {
  TempDir dir;
  test::write_file(dir.file("notes.png"), "this is a text file, not a picture\n");
  auto img = decode_image_file(dir.file("notes.png"));
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kInvalidImage);
  EXPECT_NE(img.status().message().find("notes.png"), std::string::npos);
}

TEST(ImageDecode, EmptyFileIsInvalidImage) {
  TempDir dir;
  test::write_file(dir.file("empty.png"), "");
  auto img = decode_image_file(dir.file("empty.png"));
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kInvalidImage);
  EXPECT_NE(img.status().message().find("empty"), std::string::npos);
}

TEST(ImageDecode, MissingFileIsNotFound) {
  TempDir dir;
  auto img = decode_image_file(dir.file("nowhere.png"));
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kNotFound);
}

TEST(ImageDecode, TruncatedPngIsInvalidImage) {
  TempDir dir;
  write_png_simple(dir.file("full.png"), 64, 64, PNG_FORMAT_RGB, pattern(64, 64, 3));
  const std::string full = test::read_file(dir.file("full.png"));
  for (size_t cut : {full.size() / 2, full.size() - 13, size_t{8}, size_t{20}}) {
    test::write_file(dir.file("cut.png"), full.substr(0, cut));
    auto img = decode_image_file(dir.file("cut.png"));
    ASSERT_FALSE(img.is_ok()) << "cut at " << cut;
    EXPECT_EQ(img.status().code(), StatusCode::kInvalidImage) << "cut at " << cut << ": " << img.status().to_string();
  }
}

TEST(ImageDecode, TruncatedJpegIsInvalidImageNotGrayFilled) {
  TempDir dir;
  write_jpeg(dir.file("full.jpg"), 64, 64, 3, pattern(64, 64, 3), 90);
  const std::string full = test::read_file(dir.file("full.jpg"));
  ASSERT_TRUE(decode_image_file(dir.file("full.jpg")).is_ok());
  for (size_t cut : {full.size() / 2, full.size() - 2, size_t{3}, size_t{100}}) {
    test::write_file(dir.file("cut.jpg"), full.substr(0, cut));
    auto img = decode_image_file(dir.file("cut.jpg"));
    ASSERT_FALSE(img.is_ok()) << "cut at " << cut;
    EXPECT_EQ(img.status().code(), StatusCode::kInvalidImage) << "cut at " << cut << ": " << img.status().to_string();
  }
}

TEST(ImageDecode, HugeHeaderRefusedWithoutAllocating) {
  // A valid PNG header for 100000 × 100000 RGB8 (30 GB decoded) and a few bytes of IDAT.
  const std::string png = test::png_with_huge_header(100000, 100000);
  TempDir dir;
  test::write_file(dir.file("huge.png"), png);
  test::reset_largest_allocation();
  auto img = decode_image_file(dir.file("huge.png"));
  ASSERT_FALSE(img.is_ok());
  EXPECT_TRUE(img.status().code() == StatusCode::kResourceExhausted || img.status().code() == StatusCode::kInvalidImage)
      << img.status().to_string();
  EXPECT_NE(img.status().message().find("100000"), std::string::npos) << img.status().to_string();
  EXPECT_LT(test::largest_allocation(), uint64_t{1} << 24) << "nothing near the promised 30 GB was allocated";
}

}  // namespace
}  // namespace ws
