#pragma once
/// \file fp8_quant.h
/// Build-time FP8 quantisation of precision fp8 (host only, header-only, no CUDA needed): E4M3 weight codes with a
/// per-output-channel scale, and the per-tensor activation scale from a calibrated absolute maximum. The recipe is
/// the "max" calibration of TensorRT's FP8 / NVIDIA Transformer Engine's delayed scaling: scale = amax / 448 (the
/// largest finite E4M3 magnitude, OCP OFP8 rev 1.0), q = e4m3(v / scale) rounded to nearest even and saturating
/// (ws::float_to_fp8_e4m3, warpstream/numeric.h), v ≈ q · scale.
/// The kernel side is kernels::conv2d_pointwise_fp8 (src/kernels/conv/conv.h); the CPU oracle of its tests
/// dequantises with these same functions.
/// Test: tests/unit/fp8_quant_test.cpp (ws_tests --gtest_filter='Fp8Quant*').

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "warpstream/numeric.h"
#include "warpstream/status.h"

namespace ws::cudaexec {

/// E4M3 codes of a row-major [rows][cols] float32 matrix, one scale per row (= per output channel of a 1×1 conv
/// weight [c_out][c_in]): scale[r] = max_k |w[r][k]| / 448 (1 and codes 0 for an all-zero row, and for a row so small
/// that amax / 448 underflows float32 — below about 6e-43, which fp16 storage rounds to zero as well), codes[r][k] =
/// e4m3(w[r][k] / scale[r]); rows padded with zero codes to `stride` bytes (cols rounded up to `align`).
struct Fp8RowCodes {
  int64_t rows = 0, cols = 0, stride = 0;
  std::vector<uint8_t> codes;  ///< rows · stride
  std::vector<float> scale;    ///< rows
  /// The value the kernel multiplies with for element (r, k): code · scale (exact in float32 up to the scale's rounding).
  float dequantized(int64_t r, int64_t k) const { return fp8_e4m3_to_float(codes[static_cast<size_t>(r * stride + k)]) * scale[static_cast<size_t>(r)]; }
};

/// Errors: kInvalidArgument naming `what` and the element for a non-finite weight (an FP8 scale cannot carry it),
/// or for non-positive extents / align.
inline Result<Fp8RowCodes> quantize_rows_e4m3(const float* w, int64_t rows, int64_t cols, int64_t align, const std::string& what) {
  if (rows < 1 || cols < 1 || align < 1) return invalid_argument(what + ": FP8 quantisation needs positive extents");
  Fp8RowCodes q;
  q.rows = rows;
  q.cols = cols;
  q.stride = (cols + align - 1) / align * align;
  q.codes.assign(static_cast<size_t>(rows * q.stride), 0);
  q.scale.assign(static_cast<size_t>(rows), 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0.0f;
    for (int64_t k = 0; k < cols; ++k) {
      const float v = w[r * cols + k];
      if (!std::isfinite(v))
        return invalid_argument(what + ": weight [" + std::to_string(r) + "][" + std::to_string(k) + "] is not finite (FP8 needs finite weights)");
      amax = std::max(amax, std::fabs(v));
    }
    const float s = amax / kFp8E4M3Max;
    if (!(s > 0.0f) || !std::isfinite(1.0f / s)) continue;  // zero (or underflowing) row: codes 0, scale 1
    q.scale[static_cast<size_t>(r)] = s;
    for (int64_t k = 0; k < cols; ++k) q.codes[static_cast<size_t>(r * q.stride + k)] = float_to_fp8_e4m3(w[r * cols + k] / s);
  }
  return q;
}

/// Per-tensor activation scale from a calibrated absolute maximum: amax / 448. False (no FP8 for that tensor) when
/// amax is not finite or not positive (a tensor that was all zeros, or overflowed, in every calibration frame).
inline bool fp8_activation_scale(float amax, float& scale) {
  if (!std::isfinite(amax) || !(amax > 0.0f)) return false;
  scale = amax / kFp8E4M3Max;
  return scale > 0.0f && std::isfinite(1.0f / scale);
}

}  // namespace ws::cudaexec
