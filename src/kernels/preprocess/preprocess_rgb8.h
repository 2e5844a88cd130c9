#pragma once
/// \file preprocess_rgb8.h
/// Host-only launchers of the fused image preprocess: RGB8 interleaved → bilinear resize (half-pixel
/// centres, no antialias) → ×1/255 → per-channel (x − mean)·inv_std → NCHW float32 or fp16, or fp16 NHWC with
/// the channels padded to 8 (TensorFormat::kHWC8), written straight into the network's input tensor. No
/// intermediate image exists.
/// Computes exactly ws::ref::preprocess_rgb8_to_nchw (src/reference/preprocess.cpp): in float32 the
/// result is bit-identical to the reference; in fp16 it is the reference rounded to nearest-even.

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/classification.h"
#include "warpstream/dtype.h"
#include "warpstream/row_signal.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Per-channel normalisation after ×1/255: out = (x − mean[c]) · inv_std[c] (R, G, B).
/// The public ws::Normalize (defaults: ImageNet, torchvision), the one type the kernel, the reference
/// (ref::Normalize is the same type) and the lanes share.
using PreprocessNormalize = ws::Normalize;

/// Largest accepted extents: a destination side up to kPreprocessMaxDstExtent (the grid's y limit with
/// margin), a source side up to kPreprocessMaxSrcExtent (every coordinate exact in float32).
inline constexpr int64_t kPreprocessMaxDstExtent = 65536;
inline constexpr int64_t kPreprocessMaxSrcExtent = int64_t(1) << 24;

/// Source rows up to this many bytes (3·src_w; a 4096-pixel-wide image) take the row-staged kernel.
inline constexpr int64_t kPreprocessStagedMaxRowBytes = 3 * 4096;

/// Largest source-to-destination width ratio for which kAuto stages rows: the staged kernel reads whole source rows,
/// the direct one about 4 · 32 bytes per destination pixel (two taps on each of two rows, 32-byte sectors), so staging
/// pays only while 6 · src_w < ~128 · dst_w.
inline constexpr int64_t kPreprocessStagedMaxDownscale = 16;

/// Which kernel computes the preprocess (the results are identical, bit for bit):
///   kStaged: one block per destination row copies its two source rows into shared memory with 16-byte loads (a warp
///            reads 512 contiguous bytes), then samples them — the widest reads over PCIe for a *mapped* source
///            (run 78, 1080p → 224: 60.2 against 61.2 µs); source rows up to kPreprocessStagedMaxRowBytes;
///   kDirect: one thread per destination pixel reads its 12 source bytes directly (any width); faster for a source
///            already in device memory (run 78: 8.3 against 9.0 µs);
///   kAuto:   kStaged where preprocess_staged_pays, else kDirect. Callers whose source is in device memory pass
///            kDirect (the lanes in copy mode do); tests and timings name a path.
enum class PreprocessPath { kAuto, kStaged, kDirect };

/// Blocks of the row-publishing form (a RowSignal given): each takes destination rows b, b + this, ... in order, so
/// rows become ready from the top while PCIe stays busy (experiments/wavefront_00_rows.cu).
inline constexpr int64_t kPreprocessPublishBlocks = 32;

/// kAuto's choice of kStaged: rows up to kPreprocessStagedMaxRowBytes and src_w <= kPreprocessStagedMaxDownscale · dst_w.
bool preprocess_staged_pays(int64_t src_w, int64_t dst_w);

/// Enqueue the fused preprocess on `stream`; no allocation, no synchronisation, capturable.
///   rgb:           device-visible pointer to RGB8 interleaved [src_h, src_w, 3] with row pitch
///                  `src_row_bytes` (>= 3·src_w) — device memory, or the device alias of mapped pinned
///                  host memory (PinnedBuffer::device_ptr(); under UVA the host pointer itself).
///   out:           device-visible pointer to [1, 3, dst_h, dst_w] of `out_dtype`: DType::kFloat32 (float)
///                  or DType::kFloat16 (__half); any other element type is kInvalidArgument.
///   Thread mapping: see PreprocessPath (staged: 256 threads per destination row; direct: one thread per
///   destination pixel, 32×8 blocks); each thread computes all three channels of its pixels.
/// Errors (kInvalidArgument, nothing enqueued): any extent < 1 or above the limits above, row pitch
/// < 3·src_w, null pointer, PreprocessPath::kStaged for rows wider than kPreprocessStagedMaxRowBytes.
/// kCuda: the launch failed.
/// `publish` (optional; warpstream/row_signal.h): the row-publishing form for a consumer that starts on the rows already
/// written (the lanes' input wavefront): the row-staged kernel on min(dst_h, kPreprocessPublishBlocks) blocks, each
/// taking its rows in order and publishing each when written; it triggers its programmatic dependents at block start.
/// Same values, bit for bit. Errors (kInvalidArgument): publish.rows != dst_h, no epoch/error word, PreprocessPath::kDirect
/// or rows wider than kPreprocessStagedMaxRowBytes.
Status preprocess_rgb8_to_nchw(const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes, void* out,
                               DType out_dtype, int64_t dst_h, int64_t dst_w, const PreprocessNormalize& norm,
                               cudaStream_t stream, PreprocessPath path = PreprocessPath::kAuto, const RowSignal& publish = {});

/// As preprocess_rgb8_to_nchw, writing TensorFormat::kHWC8 (an engine input taken in kHWC8:
/// CudaBuildOptions::hwc8_input_port): `out` is fp16 [1, dst_h, dst_w, 8], channel c of pixel (y, x) at
/// (y·dst_w + x)·8 + c; channels 0..2 are R, G, B (each __float2half_rn of the reference's value), 3..7 are
/// written 0 on every call. dst_h·dst_w·16 bytes.
///   Thread mapping: as preprocess_rgb8_to_nchw; one 16-byte store per pixel (3 values + 5 zeros).
/// Errors (kInvalidArgument, nothing enqueued): those of preprocess_rgb8_to_nchw; `out_dtype` other than
/// DType::kFloat16 (float32 has no kHWC8 form here); `out` not 16-byte aligned. kCuda: the launch failed. `publish`: as
/// preprocess_rgb8_to_nchw (a row is then all W pixels' 8 channels).
Status preprocess_rgb8_to_nhwc8(const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes, void* out,
                                DType out_dtype, int64_t dst_h, int64_t dst_w, const PreprocessNormalize& norm,
                                cudaStream_t stream, PreprocessPath path = PreprocessPath::kAuto, const RowSignal& publish = {});

}  // namespace ws::kernels
