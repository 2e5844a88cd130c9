// PNG/JPEG → RGB8 through libpng and libjpeg(-turbo); see warpstream/image.h.
#include "warpstream/image.h"

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "core/file_io.h"
#include "core/limits.h"

namespace ws {
namespace {

Result<std::vector<uint8_t>> read_file(const std::string& path) {
  WS_ASSIGN_OR_RETURN(std::vector<char> raw, read_regular_file(path, "image file", size_t{1} << 30));
  return std::vector<uint8_t>(raw.begin(), raw.end());
}

Status check_size(const std::string& path, int64_t w, int64_t h) {
  if (w < 1 || h < 1) return invalid_image(path + ": image has zero width or height");
  // The pixel budget: kMaxImagePixels, lowered by build_limits().max_image_pixels (core/limits.h,
  // WS_MAX_IMAGE_PIXELS), checked before the decoder allocates what the header promises.
  const int64_t limit = std::min(kMaxImagePixels, build_limits().max_image_pixels);
  if (w > limit / h) {
    return resource_exhausted(path + ": " + std::to_string(w) + "×" + std::to_string(h) + " exceeds the " +
                              std::to_string(limit) + "-pixel limit (WS_MAX_IMAGE_PIXELS)");
  }
  return Status::ok();
}

}  // namespace

Status check_image_size(int64_t width, int64_t height, const std::string& what) {
  if (width < 1 || height < 1)
    return invalid_argument(what + ": " + std::to_string(width) + "×" + std::to_string(height) + " image (each side >= 1)");
  const int64_t limit = std::min(kMaxImagePixels, build_limits().max_image_pixels);
  if (width > limit / height) {
    return resource_exhausted(what + ": " + std::to_string(width) + "×" + std::to_string(height) + " exceeds the " +
                              std::to_string(limit) + "-pixel limit (WS_MAX_IMAGE_PIXELS)");
  }
  return Status::ok();
}

namespace {

Result<ImageRgb8> decode_png(const std::string& path, const std::vector<uint8_t>& bytes) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size())) {
    return invalid_image(path + ": not a readable PNG (" + std::string(img.message) + ")");
  }
  Status s = check_size(path, img.width, img.height);
  if (!s.is_ok()) { png_image_free(&img); return s; }
  img.format = PNG_FORMAT_RGB;  // libpng converts gray/palette/alpha/16-bit; alpha is composited on black
  // A 16-bit file without gAMA/sRGB is sRGB-encoded like an 8-bit one (as PIL/OpenCV read it);
  // libpng's simplified API would otherwise take it as linear light and brighten it.
  img.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  ImageRgb8 out;
  out.width = img.width;
  out.height = img.height;
  out.pixels.resize(static_cast<size_t>(out.width * out.height * 3));
  if (!png_image_finish_read(&img, nullptr, out.pixels.data(), 0, nullptr)) {
    std::string msg = img.message;
    png_image_free(&img);
    return invalid_image(path + ": PNG decode failed (" + msg + ")");
  }
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int warnings;
  char first_warning[JMSG_LENGTH_MAX];
};
void jpeg_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}
// libjpeg reports truncation ("Premature end of JPEG file") and corrupt data as warnings and
// fills the rest with gray; we refuse such files instead of classifying a half-gray picture.
void jpeg_record_warning(j_common_ptr cinfo, int level) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (level >= 0) return;  // trace messages
  if (e->warnings++ == 0) (*cinfo->err->format_message)(cinfo, e->first_warning);
}

Result<ImageRgb8> decode_jpeg(const std::string& path, const std::vector<uint8_t>& bytes) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_record_warning;
  err.warnings = 0;
  err.first_warning[0] = 0;
  ImageRgb8 out;  // declared before setjmp so longjmp does not skip its destructor's state
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return invalid_image(path + ": JPEG decode failed (" + std::string(err.message) + ")");
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;  // gray and YCbCr → RGB; CMYK is refused by libjpeg below
  Status s = check_size(path, cinfo.image_width, cinfo.image_height);
  if (!s.is_ok()) { jpeg_destroy_decompress(&cinfo); return s; }
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3) {
    jpeg_destroy_decompress(&cinfo);
    return invalid_image(path + ": JPEG with " + std::to_string(cinfo.output_components) + " components cannot be converted to RGB");
  }
  out.width = cinfo.output_width;
  out.height = cinfo.output_height;
  out.pixels.resize(static_cast<size_t>(out.width * out.height * 3));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * static_cast<size_t>(out.width) * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (err.warnings) return invalid_image(path + ": corrupt or truncated JPEG (" + std::string(err.first_warning) + ")");
  return out;
}

}  // namespace

Result<ImageRgb8> decode_image_file(const std::string& path) {
  WS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path));
  if (bytes.empty()) return invalid_image(path + ": file is empty (0 bytes)");
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) return decode_png(path, bytes);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return decode_jpeg(path, bytes);
  return invalid_image(path + ": not a PNG or JPEG file (unrecognised signature in the first bytes)");
}

}  // namespace ws
