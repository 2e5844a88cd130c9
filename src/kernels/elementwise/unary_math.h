#pragma once
/// \file unary_math.h
/// Host-only launchers of the CUDA executor's math kernels (src/kernels/elementwise/unary_math.cu):
/// the unary math family (Erf, Gelu, Tanh, Exp, Log, Sqrt, Neg, Abs, Reciprocal, LeakyRelu, Elu, Selu,
/// Softplus, Softsign, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Floor, Ceil,
/// Round (half to even), Sign, ThresholdedRelu, Celu, Shrink, and a scale y = alpha·x), a per-channel affine map (inference
/// BatchNormalization folded to y = x·a[c] + b[c]) and the numpy-broadcast binary math ops PRelu, Pow,
/// Max, Min. Formulas are those of ws::ref::math / ws::ref::binary_f32 (src/reference/ops_ext.h).
/// Element type float32 or float16 (storage; arithmetic in float32). Every launcher enqueues on `stream`,
/// allocates nothing, synchronises nothing and is capturable. Errors: kUnsupported for another element
/// type, kInvalidArgument for bad dims.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/elementwise/elementwise.h"

namespace ws::kernels {

enum class MathFn {
  kErf, kGelu, kGeluTanh, kTanh, kExp, kLog, kSqrt, kNeg, kAbs, kReciprocal,
  kLeakyRelu, kElu, kSelu, kSoftplus, kSoftsign, kSin, kCos, kScale,
  kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh, kFloor, kCeil, kRound, kSign,
  kThresholdedRelu, kCelu, kShrink
};
struct MathFnParams {
  float alpha = 0.01f;        ///< LeakyRelu / Elu / Selu / ThresholdedRelu / Celu alpha; kScale: the factor
  float gamma = 1.05070102f;  ///< Selu
  float bias = 0.0f, lambd = 0.5f;  ///< Shrink
};
const char* math_fn_name(MathFn f);

/// y[i] = f(x[i]), i < count. x may equal y.
Status unary_math(ElemType t, MathFn f, const MathFnParams& p, const void* x, void* y, int64_t count, cudaStream_t stream);

/// y[i] = x[i]·a[c] + b[c] with c = (i / inner) % channels; a, b float32 device arrays [channels].
/// x may equal y.
Status channel_affine(ElemType t, const void* x, void* y, const float* a, const float* b, int64_t count,
                      int64_t channels, int64_t inner, cudaStream_t stream);

/// Inference BatchNormalization with runtime statistics: y = (x − mean[c])/√(var[c] + eps)·scale[c] + bias[c],
/// c = (i / inner) % channels; scale, bias, mean, var device arrays [channels] in the element type `t`.
Status batch_norm_runtime(ElemType t, const void* x, void* y, const void* scale, const void* bias, const void* mean,
                          const void* var, float epsilon, int64_t count, int64_t channels, int64_t inner, cudaStream_t stream);

/// PRelu-16 (a < 0 ? b·a : a; b = slope), Pow-15 (powf), Max-13 / Min-13 (NaN propagates), Mod-13 with fmod = 1
/// (fmodf: the result has the dividend's sign, as C's fmod and ref::Binary2Op's Mod).
enum class BinaryMathOp { kPRelu, kPow, kMax, kMin, kAdd, kFmod };
/// y = op(a, b) with numpy broadcasting over `d` (as binary_broadcast). a or b may equal y when its
/// strides are y's own (each element is read before it is written by the same thread).
Status binary_math(ElemType t, BinaryMathOp op, const void* a, const void* b, void* y, const BroadcastDims& d,
                   cudaStream_t stream);

}  // namespace ws::kernels
