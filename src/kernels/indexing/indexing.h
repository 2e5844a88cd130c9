#pragma once
/// \file indexing.h
/// Host-only launchers of the CUDA executor's indexing kernels (src/kernels/indexing/indexing.cu):
/// Gather along one axis with indices fixed at build, Tile, constant Pad, and Resize (nearest / linear) of the
/// last two axes. (Slice and Expand are strided copies:
/// kernels::transpose with the slice's / broadcast's strides; Split and Concat are cudaMemcpy2DAsync.)
/// Element size 2 or 4 bytes (float16 / float32 storage, copied bitwise). Every launcher enqueues on
/// `stream`, allocates nothing, synchronises nothing and is capturable. Errors: kInvalidArgument for a
/// bad element size, rank or negative dims.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/elementwise/elementwise.h"

namespace ws::kernels {

/// x viewed [outer, axis_len, inner]; indices: `count` int32 device values in [0, axis_len) (normalised
/// at build). y [outer, count, inner]: y[o, j, i] = x[o, indices[j], i].
Status gather(int elem_bytes, const void* x, void* y, const int32_t* indices, int64_t outer, int64_t axis_len,
              int64_t count, int64_t inner, cudaStream_t stream);

/// Tile-13: y dims y_dims[k] = x_dims[k] · repeats[k]; y[i_0..] = x[i_0 % x_dims[0], ...]. rank <= 8.
struct TileDims {
  int rank = 0;
  int64_t y_dims[kMaxBroadcastRank] = {};
  int64_t x_dims[kMaxBroadcastRank] = {};
};
Status tile(int elem_bytes, const void* x, void* y, const TileDims& d, cudaStream_t stream);

/// ScatterND-16 (reduction none), the scatter half (y already holds a copy of the data): for u < n and j < slice,
/// y[offsets[u] + j] = updates[u·slice + j]; offsets (int32, element offsets of each target slice, computed at build)
/// must be distinct. Elements of 1, 2, 4 or 8 bytes, copied bit for bit.
Status scatter_slices(int elem_bytes, const void* updates, void* y, const int32_t* offsets, int64_t n, int64_t slice,
                      cudaStream_t stream);

/// GatherElements-13: y has the dims of the indices (`y_dims`); y[i] = x[i with its `axis` coordinate replaced by
/// indices[i]] — indices: int32 device values in [0, x_dims[axis]) (normalised at build), one per y element;
/// x_strides: x's element strides. rank 1..8.
struct GatherElementsDims {
  int rank = 0;
  int axis = 0;
  int64_t y_dims[kMaxBroadcastRank] = {};
  int64_t x_strides[kMaxBroadcastRank] = {};
};
Status gather_elements(int elem_bytes, const void* x, void* y, const int32_t* indices, const GatherElementsDims& d,
                       cudaStream_t stream);

/// Pad-2/11/13: y dims y_dims[k] = x_dims[k] + begin[k] + end[k] (negative pads crop); y[i] = x[i − begin]
/// inside x; outside, per `mode`: kConstant `value`; kEdge the nearest element of x; kReflect the mirror image
/// without repeating the edge (-1 -> 1, n -> n-2; period 2(n-1), as ref::pad). rank 1..8.
enum class PadMode { kConstant, kReflect, kEdge };
struct PadDims {
  int rank = 0;
  int64_t y_dims[kMaxBroadcastRank] = {};
  int64_t x_dims[kMaxBroadcastRank] = {};
  int64_t begin[kMaxBroadcastRank] = {};
};
Status pad(ElemType t, PadMode mode, const void* x, void* y, const PadDims& d, float value, cudaStream_t stream);

/// Resize of the last two axes of `planes` × in_h × in_w planes to out_h × out_w, with per-output-row and
/// per-output-column taps computed at build (src/engine/cuda/ops/indexing.cpp, double precision, after
/// ONNX's reference): `taps` holds int32 h0[out_h], h1[out_h] (bits), float wh[out_h], then int32 w0[out_w],
/// w1[out_w], float ww[out_w]. Nearest: y = x[h0][w0]; linear: the bilinear blend
/// (1−wh)·((1−ww)·x[h0][w0] + ww·x[h0][w1]) + wh·((1−ww)·x[h1][w0] + ww·x[h1][w1]).
/// Element type float32 or float16 (storage).
/// A first index of -1 (h0 or w0; hi[4·oh] or wi[4·ow] for cubic) marks a coordinate outside the input
/// (tf_crop_and_resize): that output is `extrapolation`.
Status resize_2d(ElemType t, bool linear, const void* x, void* y, const float* taps, int64_t planes, int64_t in_h,
                 int64_t in_w, int64_t out_h, int64_t out_w, cudaStream_t stream, float extrapolation = 0.0f);

/// Cubic Resize (Keys' kernel) of the last two axes, taps computed at build (src/engine/cuda/ops/indexing.cpp):
/// `taps` holds int32 hi[4·out_h] (bits), float hw[4·out_h], then int32 wi[4·out_w], float ww[4·out_w];
/// y = Σ_j Σ_k hw[4·oh + j]·ww[4·ow + k]·x[hi[4·oh + j]][wi[4·ow + k]] (float32 accumulation).
/// Element type float32 or float16 (storage).
Status resize_2d_cubic(ElemType t, const void* x, void* y, const float* taps, int64_t planes, int64_t in_h, int64_t in_w,
                       int64_t out_h, int64_t out_w, cudaStream_t stream, float extrapolation = 0.0f);

}  // namespace ws::kernels
