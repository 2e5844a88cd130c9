// preprocess.cpp — RGB8 interleaved image → normalised float32 NCHW [1, 3, dst_h, dst_w] by
// bilinear resampling with half-pixel centres (ONNX Resize-13 coordinate_transformation_mode =
// "half_pixel", mode = "linear", no antialias; = OpenCV INTER_LINEAR / PyTorch
// align_corners=False), then ×1/255 and per-channel (x - mean) * inv_std.
//
// Exact float32 formula, one output pixel (dx, dy) at a time; a GPU kernel (one thread per output
// pixel) must evaluate the same expressions in the same order, without FMA contraction
// (nvcc: -fmad=false or __fmul_rn/__fadd_rn), to match bit for bit:
//   scale_x = (float)src_w / (float)dst_w                         (likewise scale_y)
//   sx = ((float)dx + 0.5f) * scale_x - 0.5f
//   sx = min(max(sx, 0.0f), (float)(src_w - 1))
//   x0 = (int)floorf(sx);  x1 = min(x0 + 1, src_w - 1);  fx = sx - (float)x0   (likewise y)
//   for each channel c (R=0, G=1, B=2), p_yx = (float)rgb[y*src_row_bytes + x*3 + c]:
//     top    = p00 + (p01 - p00) * fx        (p00 = (y0,x0), p01 = (y0,x1))
//     bottom = p10 + (p11 - p10) * fx        (p10 = (y1,x0), p11 = (y1,x1))
//     v      = top + (bottom - top) * fy
//     out[c, dy, dx] = (v * (1.0f / 255.0f) - mean[c]) * inv_std[c]

#include <algorithm>
#include <cmath>
#include <string>

#include "reference/reference.h"

namespace ws::ref {

Status preprocess_rgb8_to_nchw(const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes,
                               float* out, int64_t dst_h, int64_t dst_w, const Normalize& norm) {
  if (src_h < 1 || src_w < 1 || dst_h < 1 || dst_w < 1)
    return invalid_argument("preprocess: image extents must be >= 1, got source " + std::to_string(src_w) + "x" +
                            std::to_string(src_h) + " and destination " + std::to_string(dst_w) + "x" +
                            std::to_string(dst_h));
  if (src_row_bytes < 3 * src_w)
    return invalid_argument("preprocess: row pitch " + std::to_string(src_row_bytes) +
                            " bytes is less than 3 * width = " + std::to_string(3 * src_w));
  if (!rgb || !out) return invalid_argument("preprocess: null image or output pointer");

  const float scale_x = static_cast<float>(src_w) / static_cast<float>(dst_w);
  const float scale_y = static_cast<float>(src_h) / static_cast<float>(dst_h);
  const float max_x = static_cast<float>(src_w - 1), max_y = static_cast<float>(src_h - 1);
  const int64_t plane = dst_h * dst_w;
  constexpr float kInv255 = 1.0f / 255.0f;
  for (int64_t dy = 0; dy < dst_h; ++dy) {
    float sy = (static_cast<float>(dy) + 0.5f) * scale_y - 0.5f;
    sy = std::min(std::max(sy, 0.0f), max_y);
    const int64_t y0 = static_cast<int64_t>(std::floor(sy));
    const int64_t y1 = std::min<int64_t>(y0 + 1, src_h - 1);
    const float fy = sy - static_cast<float>(y0);
    const uint8_t* row0 = rgb + y0 * src_row_bytes;
    const uint8_t* row1 = rgb + y1 * src_row_bytes;
    for (int64_t dx = 0; dx < dst_w; ++dx) {
      float sx = (static_cast<float>(dx) + 0.5f) * scale_x - 0.5f;
      sx = std::min(std::max(sx, 0.0f), max_x);
      const int64_t x0 = static_cast<int64_t>(std::floor(sx));
      const int64_t x1 = std::min<int64_t>(x0 + 1, src_w - 1);
      const float fx = sx - static_cast<float>(x0);
      for (int c = 0; c < 3; ++c) {
        const float p00 = row0[x0 * 3 + c], p01 = row0[x1 * 3 + c];
        const float p10 = row1[x0 * 3 + c], p11 = row1[x1 * 3 + c];
        const float top = p00 + (p01 - p00) * fx;
        const float bottom = p10 + (p11 - p10) * fx;
        const float v = top + (bottom - top) * fy;
        out[c * plane + dy * dst_w + dx] = (v * kInv255 - norm.mean[c]) * norm.inv_std[c];
      }
    }
  }
  return Status::ok();
}

}  // namespace ws::ref
