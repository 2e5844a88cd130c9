#pragma once
/// \file reference.h
/// The CPU oracle: plain, single-threaded C++ over raw float32 pointers and explicit dims.
/// Never links CUDA. Each function follows the ONNX operator spec named beside it
/// (https://onnx.ai/onnx/operators/) and is written so a GPU kernel can be checked against it.
/// All tensors are dense row-major (C order); convolution/pooling data are N, C, spatial... (NCHW for 2-D).
/// Functions do not allocate unless stated; callers size every output.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/binary_op.h"
#include "warpstream/classification.h"
#include "warpstream/status.h"

namespace ws::ref {

using Dims = std::vector<int64_t>;

/// "[2, 3]" — dims for error messages.
std::string dims_string(std::span<const int64_t> dims);
/// Number of elements of a shape (1 for a scalar shape {}).
int64_t element_count(std::span<const int64_t> dims);

// ---------------------------------------------------------------------------------------------
// Convolution and pooling (ONNX Conv-11, MaxPool-12, AveragePool-11/19, GlobalAveragePool-1)
// Spatial rank r = 1, 2 or 3. pad_begin/pad_end are already resolved (auto_pad applied by caller).

struct ConvParams {
  int rank = 2;                 ///< spatial rank, 1..3
  int64_t n = 1, c_in = 1, c_out = 1, groups = 1;
  int64_t in[3] = {1, 1, 1};    ///< input spatial extents
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  int64_t out[3] = {1, 1, 1};   ///< output spatial extents (caller computes)
};

/// Y[n, c_out, out...] = sum over (c_in/groups, kernel...) X * W (+ bias[c_out]).
/// X: [n, c_in, in...], W: [c_out, c_in/groups, kernel...], bias: [c_out] or nullptr.
void conv_nd(const float* x, const float* w, const float* bias, float* y, const ConvParams& p);

struct PoolParams {
  int rank = 2;
  int64_t n = 1, c = 1;
  int64_t in[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  int64_t out[3] = {1, 1, 1};
  bool count_include_pad = false;  ///< AveragePool only
};

/// MaxPool. Padding never wins (treated as -inf). A window that lies entirely in padding
/// (possible with ceil_mode) yields -inf. `indices` (nullable): ONNX flat index of the max
/// into X (row-major if storage_order == 0, column-major over the spatial dims if 1).
/// Ties: the first maximum in row-major window order. An all-padding window's index is -1.
void max_pool_nd(const float* x, float* y, int64_t* indices, int storage_order, const PoolParams& p);
/// AveragePool: divisor = window elements inside the input, or, with count_include_pad, inside
/// input+explicit pads (elements past pad_end added by ceil_mode are never counted).
/// A window with nothing to count (entirely past the pads) yields NaN.
void average_pool_nd(const float* x, float* y, const PoolParams& p);
/// Y[n, c] = mean over `spatial` elements of X[n, c, :].
void global_average_pool(const float* x, float* y, int64_t n, int64_t c, int64_t spatial);

/// BatchNormalization (inference): y = scale[c] * (x - mean[c]) / sqrt(var[c] + epsilon) + bias[c].
/// X: [n, c, spatial].
void batch_norm_inference(const float* x, const float* scale, const float* bias, const float* mean,
                          const float* var, float epsilon, float* y, int64_t n, int64_t c, int64_t spatial);

// ---------------------------------------------------------------------------------------------
// Elementwise

enum class UnaryOp { kRelu, kSigmoid, kHardSigmoid, kHardSwish, kClip, kIdentity };
struct UnaryParams {
  float alpha = 0.2f, beta = 0.5f;  ///< HardSigmoid: max(0, min(1, alpha*x + beta))
  float min = -3.402823466e38f, max = 3.402823466e38f;  ///< Clip (NaN propagates)
};
/// y[i] = op(x[i]) for i < count. HardSwish = x * max(0, min(1, x/6 + 0.5)). In-place allowed.
void unary(UnaryOp op, const float* x, float* y, int64_t count, const UnaryParams& params = {});

using ws::BinaryOp;  ///< src/core/binary_op.h (shared with the CUDA kernels)
/// numpy multidirectional broadcasting. y_dims must equal broadcast(a_dims, b_dims)
/// (use broadcast_dims). Shapes of any rank (rank 0 = scalar).
void binary_broadcast(BinaryOp op, const float* a, std::span<const int64_t> a_dims, const float* b,
                      std::span<const int64_t> b_dims, float* y, std::span<const int64_t> y_dims);
/// numpy broadcast of two shapes; error names both shapes when they are incompatible.
Result<Dims> broadcast_dims(std::span<const int64_t> a, std::span<const int64_t> b);

// ---------------------------------------------------------------------------------------------
// Linear algebra

/// Gemm-13: Y[M,N] = alpha * op(A) * op(B) + beta * C, op = transpose when trans_*.
/// A stored [M,K] (or [K,M] if trans_a), B stored [K,N] (or [N,K] if trans_b).
/// C (nullable) broadcasts unidirectionally to [M,N]: c_dims has rank 0..2.
void gemm(const float* a, const float* b, const float* c, std::span<const int64_t> c_dims, float* y,
          int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, float alpha, float beta);
/// MatMul-13 (numpy matmul): 1-D operands promoted and squeezed as numpy does; batch dims broadcast.
/// y_dims must equal matmul_dims(a_dims, b_dims).
void matmul(const float* a, std::span<const int64_t> a_dims, const float* b, std::span<const int64_t> b_dims,
            float* y, std::span<const int64_t> y_dims);
Result<Dims> matmul_dims(std::span<const int64_t> a, std::span<const int64_t> b);

// ---------------------------------------------------------------------------------------------
// Data movement and normalisation

/// Softmax over `axis` (opset >= 13 semantics): outer × axis × inner view. Numerically stable
/// (subtract the max). For opset < 13 semantics call with the flattened [outer, rest] view and
/// inner = 1.
void softmax(const float* x, float* y, int64_t outer, int64_t axis_len, int64_t inner);
/// Transpose: y = x permuted; y_dims[i] = x_dims[perm[i]]. Element size in bytes (4 or 8).
void transpose(const void* x, std::span<const int64_t> x_dims, std::span<const int64_t> perm, void* y,
               size_t element_bytes);
/// Concat along `axis` (non-negative): inputs[i] has dims input_dims[i]; element size in bytes.
void concat(std::span<const void* const> inputs, std::span<const Dims> input_dims, int64_t axis, void* y,
            size_t element_bytes);

// ---------------------------------------------------------------------------------------------
// Image preprocess and Top-K (written exactly as the GPU kernels compute them)

/// Per-channel normalisation (the public ws::Normalize, include/warpstream/classification.h).
using Normalize = ws::Normalize;

/// RGB8 interleaved [src_h, src_w, 3] (row pitch `src_row_bytes` >= 3*src_w) → float32 NCHW
/// [1, 3, dst_h, dst_w]. Bilinear, pixel-centre aligned (OpenCV INTER_LINEAR / PyTorch
/// align_corners=False, antialias=False): sx = (dx + 0.5) * src_w / dst_w - 0.5, clamped to
/// [0, src_w - 1] (likewise y); taps x0 = floor(sx), x1 = min(x0 + 1, src_w - 1). The blend is
/// computed in float32 as top = p00 + (p01 - p00)*fx ... then ×(1/255) and normalised.
/// Errors: any extent < 1, src_row_bytes < 3*src_w, null pointers. Exact formula: preprocess.cpp.
Status preprocess_rgb8_to_nchw(const uint8_t* rgb, int64_t src_h, int64_t src_w, int64_t src_row_bytes,
                               float* out, int64_t dst_h, int64_t dst_w, const Normalize& norm = {});

using TopKEntry = ws::TopKEntry;  ///< include/warpstream/classification.h
using ws::kMaxTopK;
/// The K largest of `logits[0..classes)`, descending; ties → lower index; NaN ranks as -inf
/// (but keeps its NaN score if selected). Errors: k < 1, k > kMaxTopK, k > classes.
Status topk(const float* logits, int64_t classes, int k, TopKEntry* out);

}  // namespace ws::ref
