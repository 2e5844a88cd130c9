#pragma once
/// \file ops_ext.h
/// CPU reference for the ops added for the torchvision zoo and ONNX's conformance suites
/// (issue 14): indexing and data movement (Gather, Slice, Split, Expand, Tile, Cast, Where),
/// more elementwise math (Erf … Softsign, Pow, PRelu, comparisons, variadic Sum/Max/Min/Mean),
/// reductions and normalisations (Reduce*, LayerNormalization, InstanceNormalization,
/// LogSoftmax), ConvTranspose and Resize. Plain single-threaded C++, dense row-major tensors,
/// no allocation unless stated; each function names the ONNX operator version it follows
/// (https://onnx.ai/onnx/operators/). Callers validate shapes and attributes and size outputs
/// (the op table does); these functions assume valid arguments.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "reference/reference.h"

namespace ws::ref {

// ---------------------------------------------------------------------------------------------
// Element types these kernels handle (a subset of ONNX TensorProto.DataType, same numbers).
enum class Elem : int32_t { kFloat32 = 1, kUInt8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kBool = 9, kFloat16 = 10, kFloat64 = 11 };
size_t elem_size(Elem e);

/// Highest tensor rank the broadcasting/indexing kernels here handle (they keep their index
/// counters on the stack so a run allocates nothing); the op table refuses higher ranks.
inline constexpr size_t kMaxRank = 12;
using RankArray = std::array<int64_t, kMaxRank>;
/// Strides (in elements) of `in_dims` broadcast to `out_dims` (numpy rules: missing leading dims
/// and dims of 1 get stride 0). `in_dims` must broadcast to `out_dims`; ranks <= kMaxRank.
RankArray broadcast_strides(std::span<const int64_t> in_dims, std::span<const int64_t> out_dims);

// ---------------------------------------------------------------------------------------------
// Indexing and data movement (element size in bytes; any element type)

/// Gather-13: x viewed [outer, axis_len, inner]; y [outer, n_indices, inner]. Indices are
/// already normalised to [0, axis_len) by the caller.
void gather(const void* x, int64_t outer, int64_t axis_len, int64_t inner, const int64_t* indices,
            int64_t n_indices, void* y, size_t element_bytes);
/// Slice-13 with resolved per-axis start and step (every axis of x listed; step != 0):
/// y[i0, i1, ...] = x[start0 + i0*step0, ...], y dims `y_dims`.
void slice(const void* x, std::span<const int64_t> x_dims, std::span<const int64_t> starts,
           std::span<const int64_t> steps, void* y, std::span<const int64_t> y_dims, size_t element_bytes);
/// Expand-13 (numpy broadcast of x to y_dims) — also the copy used by Tile-style broadcasting.
void expand(const void* x, std::span<const int64_t> x_dims, void* y, std::span<const int64_t> y_dims,
            size_t element_bytes);
/// Tile-13: y dims = x dims × repeats.
void tile(const void* x, std::span<const int64_t> x_dims, void* y, std::span<const int64_t> y_dims,
          size_t element_bytes);
/// Cast-13 between float32, float16 (IEEE half, round to nearest even), float64, int8/uint8/
/// int32/int64 (float→int truncates toward zero as C++ does; out-of-range values are
/// implementation-defined in ONNX and saturate here) and bool (x != 0).
void cast(const void* x, Elem from, void* y, Elem to, int64_t count);
/// Where-16: y = cond ? a : b with numpy broadcasting of all three to y_dims. cond is bool (1 byte).
void where(const uint8_t* cond, std::span<const int64_t> c_dims, const void* a, std::span<const int64_t> a_dims,
           const void* b, std::span<const int64_t> b_dims, void* y, std::span<const int64_t> y_dims,
           size_t element_bytes);

/// GatherElements-13: y[i…] = x[i… with coordinate `axis` replaced by indices[i…]]; indices
/// (normalised to [0, x_dims[axis])) and y have dims `idx_dims` (same rank as x).
void gather_elements(const void* x, std::span<const int64_t> x_dims, const int64_t* indices,
                     std::span<const int64_t> idx_dims, int64_t axis, void* y, size_t element_bytes);
/// Trilu-14 over the last two axes [batch, n, m]: keeps j − i >= k (upper) or j − i <= k (lower),
/// zeroes the rest.
void trilu(const void* x, int64_t batch, int64_t n, int64_t m, int64_t k, bool upper, void* y, size_t element_bytes);

/// ScatterND-16 (reduction "none"): y = x, then for each of the n_updates index tuples (k values
/// each, normalised), the slice y[idx…, :] = updates[i, :] (slice = product of x_dims[k:]).
/// Later updates win where tuples repeat (the spec leaves that order undefined).
void scatter_nd(const void* x, std::span<const int64_t> x_dims, const int64_t* indices, int64_t n_updates, int64_t k,
                const void* updates, void* y, size_t element_bytes);

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// ---------------------------------------------------------------------------------------------
// Elementwise math

enum class MathOp {
  kErf, kTanh, kExp, kLog, kSqrt, kNeg, kAbs, kReciprocal, kLeakyRelu, kElu, kSelu, kSoftplus, kSoftsign,
  kGelu, kGeluTanh, kFloor, kCeil, kCelu, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh,
  kAtanh, kSign, kRound, kThresholdedRelu, kShrink
};
struct MathParams {
  float alpha = 0.01f;  ///< LeakyRelu (0.01), Elu (1.0), Selu (1.67326…), Celu (1.0), ThresholdedRelu (1.0)
  float gamma = 1.05070102f;  ///< Selu
  float bias = 0.0f, lambd = 0.5f;  ///< Shrink-9
};
/// LeakyRelu-16: x<0 ? alpha*x : x. Elu-6: x<0 ? alpha*(e^x−1) : x. Selu-6: gamma*(x<=0 ?
/// alpha*(e^x−1) : x). Softplus-1: ln(1+e^x) (stable form). Softsign-1: x/(1+|x|).
/// Gelu-20: 0.5x(1+erf(x/√2)); kGeluTanh: 0.5x(1+tanh(√(2/π)(x+0.044715x³))).
/// Celu-12: max(0,x) + min(0, alpha·(e^(x/alpha) − 1)). Sign-13, Round-11 (half to even),
/// ThresholdedRelu-10: x > alpha ? x : 0. Shrink-9: x < −lambd ? x + bias : x > lambd ? x − bias : 0.
/// Sin … Atanh-7/9: std:: functions.
void math(MathOp op, const float* x, float* y, int64_t count, const MathParams& p = {});

/// Binary ops beyond Add/Sub/Mul/Div, numpy broadcasting.
enum class Binary2Op { kPow, kPRelu, kMax, kMin, kAdd, kSub, kMul, kDiv, kMod, kFmod };
/// float32 operands: Pow-15 (std::pow), PRelu-16 (x<0 ? slope*x : x; a = x, b = slope), Max/Min-13
/// (NaN propagates), Add…Div.
void binary_f32(Binary2Op op, const float* a, std::span<const int64_t> a_dims, const float* b,
                std::span<const int64_t> b_dims, float* y, std::span<const int64_t> y_dims);
/// int64 operands (shape arithmetic): Add, Sub, Mul, Div (truncating, as ONNX's integer Div),
/// Max, Min, Mod (fmod = 0: sign of the divisor, Python style), Fmod (sign of the dividend, C
/// style). Division by zero yields 0. On float32, kMod is C fmod (Mod with fmod = 1).
void binary_i64(Binary2Op op, const int64_t* a, std::span<const int64_t> a_dims, const int64_t* b,
                std::span<const int64_t> b_dims, int64_t* y, std::span<const int64_t> y_dims);
enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };
/// Equal-13 / Less-13 / Greater-13 / LessOrEqual-16 / GreaterOrEqual-16 → bool (1 byte),
/// numpy broadcasting. `elem` is kFloat32, kInt64, kInt32 or kBool (Equal only for bool).
void compare(CompareOp op, Elem elem, const void* a, std::span<const int64_t> a_dims, const void* b,
             std::span<const int64_t> b_dims, uint8_t* y, std::span<const int64_t> y_dims);
enum class LogicOp { kAnd, kOr, kXor };
/// And/Or/Xor-7 on bool, numpy broadcasting.
void logic(LogicOp op, const uint8_t* a, std::span<const int64_t> a_dims, const uint8_t* b,
           std::span<const int64_t> b_dims, uint8_t* y, std::span<const int64_t> y_dims);
/// Not-1.
void logical_not(const uint8_t* x, uint8_t* y, int64_t count);
/// IsNaN-13 / IsInf-10 (detect_negative, detect_positive) → bool.
void is_nan(const float* x, uint8_t* y, int64_t count);
void is_inf(const float* x, uint8_t* y, int64_t count, bool detect_negative, bool detect_positive);

// ---------------------------------------------------------------------------------------------
// Reductions and normalisation

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };
/// Reduce*-13/18 over the axes marked in `reduce` (one flag per axis of x_dims). The output has
/// the kept dims (y holds element_count of x dims with reduced axes set to 1). An empty
/// reduction (a reduced axis of length 0) gives the identity (0 for sums, −inf for Max,
/// +inf for Min, 1 for Prod; NaN for Mean). Accumulates in double.
void reduce(ReduceOp op, const float* x, std::span<const int64_t> x_dims, std::span<const bool> reduce, float* y);
/// The same for int64 data (Sum, Mean (truncating), Prod, Max, Min, SumSquare; wrapping arithmetic).
void reduce_i64(ReduceOp op, const int64_t* x, std::span<const int64_t> x_dims, std::span<const bool> reduce, int64_t* y);
/// ArgMax-13 / ArgMin-13 along `axis` of [outer, axis_len, inner]; select_last_index picks the
/// last of equal extremes. y [outer, inner] int64.
void arg_extreme(bool is_max, const float* x, int64_t outer, int64_t axis_len, int64_t inner, bool select_last_index,
                 int64_t* y);

/// LayerNormalization-17: x viewed [rows, cols] (axis flattens the leading dims); per row
/// y = (x − mean)/√(var + eps) · scale + bias; scale/bias [cols] broadcast (bias nullable).
/// mean_out / inv_std_out (nullable) receive [rows] statistics. Computed in double.
void layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                float epsilon, float* mean_out, float* inv_std_out);
/// InstanceNormalization-6: x [n, c, spatial]; per (n, c): (x − mean)/√(var + eps)·scale[c] + bias[c].
void instance_norm(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t c,
                   int64_t spatial, float epsilon);
/// CumSum-14 along the middle axis of [outer, len, inner]; exclusive / reverse as the spec.
/// elem: kFloat32, kFloat64, kInt64 or kInt32 (accumulates in that type).
void cumsum(Elem elem, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse);
/// Hardmax-13 over the middle axis of [outer, len, inner]: 1 at the first maximum, else 0.
void hardmax(const float* x, float* y, int64_t outer, int64_t len, int64_t inner);
/// LogSoftmax-13 over the middle axis of [outer, axis_len, inner] (x − max − log Σ e^(x − max)).
void log_softmax(const float* x, float* y, int64_t outer, int64_t axis_len, int64_t inner);

// ---------------------------------------------------------------------------------------------
// ConvTranspose-11 and Resize-13/18

struct ConvTransposeParams {
  int rank = 2;
  int64_t n = 1, c_in = 1, c_out = 1, groups = 1;  ///< c_out = total output channels
  int64_t in[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t out[3] = {1, 1, 1};  ///< output extents (caller computes from pads/output_padding/output_shape)
};
/// Y[n, co, o...] = Σ X[n, ci, i...] · W[ci, co_in_group, k...] over o = i·stride − pad_begin + k·dilation
/// (+ bias[co]). X [n, c_in, in...], W [c_in, c_out/groups, kernel...], bias [c_out] or nullptr.
void conv_transpose_nd(const float* x, const float* w, const float* bias, float* y, const ConvTransposeParams& p);

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordMode { kHalfPixel, kAsymmetric, kAlignCorners, kPytorchHalfPixel, kTfCropAndResize, kHalfPixelSymmetric };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation_value = 0.0f;
  Dims in_dims, out_dims;  ///< same rank
  std::vector<double> scales;  ///< per axis (out/in unless given explicitly)
  std::vector<double> roi_start, roi_end;  ///< per axis, tf_crop_and_resize only
};
/// Per-axis taps of a Resize, computed once at build: for output index o on axis a, `n` input
/// indices (clamped to the edge) and weights, and whether the coordinate falls outside the input
/// (tf_crop_and_resize → extrapolation_value).
struct ResizeTaps {
  struct Axis {
    std::vector<int64_t> index;
    std::vector<double> weight;
    std::vector<uint8_t> outside;
  };
  size_t rank = 0;
  int64_t n = 1;
  Dims in_dims, out_dims;
  float extrapolation_value = 0.0f;
  std::vector<Axis> axes;
};
/// Resize-13/18/19 taps, after ONNX's reference (onnx/reference/ops/op_resize.py). Allocates.
ResizeTaps make_resize_taps(const ResizeParams& p);
/// y = Σ over the tensor product of per-axis taps of Π weights · x (double accumulation). No allocation.
void resize(const float* x, float* y, const ResizeTaps& taps);

}  // namespace ws::ref
