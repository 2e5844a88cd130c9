#pragma once
/// \file image.h
/// Image decoding for the CLI and tests: PNG (libpng) and JPEG (libjpeg-turbo), detected by
/// content, not by file name. Grayscale, gray+alpha, palette, RGBA and 16-bit PNGs and grayscale /
/// CMYK JPEGs are converted to RGB8.

#include <cstdint>
#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws {

/// RGB8 interleaved, row-major, tightly packed: pixels[(y * width + x) * 3 + c].
struct ImageRgb8 {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

/// Largest image accepted, in pixels (protects against headers that promise huge sizes).
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;  // 268 Mpx

/// Whether a width × height image is within the pixel budget: kMaxImagePixels, lowered by the environment's
/// WS_MAX_IMAGE_PIXELS (the decoders' limit). kInvalidArgument for a non-positive side, kResourceExhausted above the
/// budget (the message names both sides and the limit). `what` prefixes the message (a file name, "image").
Status check_image_size(int64_t width, int64_t height, const std::string& what = "image");

/// Decodes a PNG or JPEG file. Errors: kNotFound (missing/unreadable), kInvalidImage (empty,
/// not PNG/JPEG, truncated or corrupt — the message names the file and the decoder's complaint),
/// kResourceExhausted (more than kMaxImagePixels).
Result<ImageRgb8> decode_image_file(const std::string& path);

}  // namespace ws
