#pragma once
/// \file ltx_dequant.h
/// Expansion of a streamed 8-bit LTX block image into the bf16 block image the block's bf16 GEMMs read
/// (LtxModelOptions::stream_weights = fp8 | int8, ltx_model.h). The image is described by up to kLtxDequantMaxSegments
/// segments, all expanded by ONE launch:
///   kCopyBf16:   dst[i] = src[i] for `rows * cols` bf16 elements (norms, modulation table, biases);
///   kFp8E4M3Row: dst[r, c] = bf16_rn(float(e4m3 src[r, c]) * scale[r])   (per-output-channel float32 scale);
///   kInt8Row:    dst[r, c] = bf16_rn(float(int8 src[r, c]) * scale[r]).
/// One IEEE float multiply and one round-to-nearest-even per element: the host dequantisation in ltx_model.cpp gives
/// the same bits (the resident comparison model of tests/gpu/ltx_model_test.cpp is built from it).
/// Host-only declarations; `src` / `dst` device bases, segment offsets in bytes (16-B aligned for the vector path),
/// enqueues only (no allocation, no sync; CUDA-graph capturable).

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/status.h"

namespace ws::flow::ltx {

constexpr int kLtxDequantMaxSegments = 16;

struct LtxDequantSegment {
  enum Kind : int32_t { kCopyBf16 = 0, kFp8E4M3Row = 1, kInt8Row = 2 };
  int32_t kind = kCopyBf16;
  uint64_t src = 0;    ///< byte offset of the codes (or bf16 values) in the source image
  uint64_t dst = 0;    ///< byte offset of the bf16 output in the destination image
  uint64_t scale = 0;  ///< byte offset of float32 [rows] in the source image (8-bit kinds)
  int64_t rows = 0, cols = 0;
};

struct LtxDequantTable {
  LtxDequantSegment seg[kLtxDequantMaxSegments];
  int count = 0;
};

/// Expands every segment of `table` from `src` into `dst` on `stream` (grid: x = element groups, y = segment).
Status dequant_block_image(const void* src, void* dst, const LtxDequantTable& table, cudaStream_t stream);

}  // namespace ws::flow::ltx
