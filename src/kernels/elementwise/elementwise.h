#pragma once
/// \file elementwise.h
/// Host-only launchers of the CUDA executor's elementwise kernels (src/kernels/elementwise/elementwise.cu):
/// per-channel bias + activation epilogue (also the plain unary ops), numpy-broadcast binary ops, dtype
/// casts and N-d transpose. Element type: float32 or float16 (arithmetic in float32). All launchers
/// enqueue on `stream`, allocate nothing, synchronise nothing and are capturable.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/binary_op.h"
#include "warpstream/dtype.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Element type of a tensor the kernels read or write: ws::DType, kFloat32 or kFloat16 (arithmetic in
/// float32). Spelled ElemType in the executor's code; it is the one DType of include/warpstream/dtype.h.
using ElemType = ws::DType;

/// Activation applied by the epilogue. Semantics match ws::ref::unary (NaN propagates through Clip/Relu
/// as the CPU reference does).
enum class Activation { kNone, kRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish };
struct ActivationParams {
  float alpha = 0.2f, beta = 0.5f;                          ///< HardSigmoid
  float min = -3.402823466e38f, max = 3.402823466e38f;      ///< Clip
};
const char* activation_name(Activation a);

/// y[i] = act(x[i] + (bias ? bias[(i / inner) % channels] : 0)), i < count. x may equal y.
/// bias is float32 (device) or nullptr. Errors: kInvalidArgument for count < 0 / channels or inner < 1.
Status bias_activation(ElemType t, const void* x, void* y, const float* bias, int64_t count, int64_t channels,
                       int64_t inner, Activation act, const ActivationParams& p, cudaStream_t stream);

/// y[i] = act(x[i] + bias[c] + residual[i]): bias_activation with a residual tensor of the same shape and
/// element type added before the activation (a Conv's fused residual Add, e.g. ResNet's skip connection;
/// residual nullptr = none). x may equal y; residual may also equal y (each element is read
/// before it is written). Errors as bias_activation.
Status bias_residual_activation(ElemType t, const void* x, void* y, const float* bias, const void* residual,
                                int64_t count, int64_t channels, int64_t inner, Activation act,
                                const ActivationParams& p, cudaStream_t stream);

using ws::BinaryOp;  ///< src/core/binary_op.h (the reference names the same type)
inline constexpr int kMaxBroadcastRank = 8;  // N, C and 6 more (the node suite's rank-7 NLL-loss exports)
/// numpy broadcasting: y has `rank` dims `y_dims`; a_strides / b_strides are element strides of a and b
/// per y dim (0 on broadcast dims). rank <= kMaxBroadcastRank.
struct BroadcastDims {
  int rank = 0;
  int64_t y_dims[kMaxBroadcastRank] = {};
  int64_t a_strides[kMaxBroadcastRank] = {};
  int64_t b_strides[kMaxBroadcastRank] = {};
};
Status binary_broadcast(ElemType t, BinaryOp op, const void* a, const void* b, void* y, const BroadcastDims& d,
                        cudaStream_t stream);

/// y = float16(x) / float32(x), count elements.
Status cast_f32_to_f16(const float* x, void* y, int64_t count, cudaStream_t stream);
Status cast_f16_to_f32(const void* x, float* y, int64_t count, cudaStream_t stream);

/// N-d transpose (rank <= kMaxBroadcastRank): y[j] with y index (i0..ir-1) over y_dims reads
/// x[sum i_k * x_strides[k]] (x_strides: x's strides permuted into y's dim order). elem_bytes 2 or 4.
struct TransposeDims {
  int rank = 0;
  int64_t y_dims[kMaxBroadcastRank] = {};
  int64_t x_strides[kMaxBroadcastRank] = {};
};
Status transpose(int elem_bytes, const void* x, void* y, const TransposeDims& d, cudaStream_t stream);

/// NCHW -> NHWC with the channels zero-padded (TensorRT's kHWC8 form of a first-layer input): x [n][c][hw] into
/// y [n][hw][c_pad], y[i][p][k] = x[i][k][p] for k < c, 0 for c <= k < c_pad (every element of y is written: the
/// padding needs no earlier memset). elem_bytes 2 or 4; 1 <= c <= c_pad <= 64. Thread mapping: one thread per
/// pixel (its c_pad channels), grid-stride, 256-thread blocks. Errors: kInvalidArgument for bad sizes (nothing enqueued).
Status nchw_to_nhwc_pad_channels(int elem_bytes, const void* x, void* y, int64_t n, int64_t c, int64_t hw, int64_t c_pad,
                                 cudaStream_t stream);

/// Zero padding of NCHW planes: y[pl][h][w] = x[pl][h - top][w - left] inside x, 0 outside;
/// y is planes × out_h × out_w. (Asymmetric convolution pads, which cuDNN's legacy API lacks.)
Status pad_2d_zero(ElemType t, const void* x, void* y, int64_t planes, int64_t in_h, int64_t in_w, int64_t top,
                   int64_t left, int64_t out_h, int64_t out_w, cudaStream_t stream);

}  // namespace ws::kernels
