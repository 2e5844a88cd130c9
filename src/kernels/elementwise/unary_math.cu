// Math kernels of the CUDA executor (the issue-14 op set):
//  - unary_math: y = f(x) for the unary math family, one templated kernel instantiated per functor
//    (Erf, Gelu (erf and tanh forms), Tanh, Exp, Log, Sqrt, Neg, Abs, Reciprocal, LeakyRelu, Elu, Selu,
//    Softplus (max(x,0) + log1p(e^-|x|)), Softsign, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh,
//    Atanh, Floor, Ceil, Round (half to even), Sign, ThresholdedRelu, Celu, Shrink, Scale);
//  - channel_affine: y = x·a[c] + b[c] (standalone inference BatchNormalization, a and b folded at build);
//  - batch_norm_runtime: the same with scale / bias / mean / var read at run time (statistics that are graph
//    inputs, as in ONNX's node tests);
//  - binary_math: numpy-broadcast PRelu, Pow, Max, Min, Add (the variadic Sum/Max/Min/Mean chain), Mod (fmodf).
// Formulas: ws::ref::math / ws::ref::binary_f32 (src/reference/math_ext.cpp), float32 arithmetic on
// float32 or float16 storage. Thread mapping: one thread per output element, grid-stride loop over an
// int64 index, 256-thread blocks (device::grid_for caps the grid).
// Test: tests/gpu/cuda_engine_ops_test.cpp — ws_gpu_tests --gtest_filter='CudaEngineOps.*' runs every form
// the op table lists (ops/math.cpp) on the CUDA and CPU executors, fp32 and fp16. Time: warpstream
// bench --profile-layers on a model using them (memory bound: bytes moved / duration).
#include <cuda_fp16.h>

#include <string>

#include "cuda/cuda_util.h"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/elementwise/unary_math.h"

namespace ws::kernels {
namespace {

using device::grid_for;
using device::kThreads;
using device::load;
using device::store;

// One functor per op: float32 in, float32 out.
template <MathFn F>
struct Fn;
template <> struct Fn<MathFn::kErf> { __device__ float operator()(float v, const MathFnParams&) const { return erff(v); } };
template <> struct Fn<MathFn::kGelu> {
  __device__ float operator()(float v, const MathFnParams&) const { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
};
template <> struct Fn<MathFn::kGeluTanh> {
  __device__ float operator()(float v, const MathFnParams&) const {
    return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  }
};
template <> struct Fn<MathFn::kTanh> { __device__ float operator()(float v, const MathFnParams&) const { return tanhf(v); } };
template <> struct Fn<MathFn::kExp> { __device__ float operator()(float v, const MathFnParams&) const { return expf(v); } };
template <> struct Fn<MathFn::kLog> { __device__ float operator()(float v, const MathFnParams&) const { return logf(v); } };
template <> struct Fn<MathFn::kSqrt> { __device__ float operator()(float v, const MathFnParams&) const { return sqrtf(v); } };
template <> struct Fn<MathFn::kNeg> { __device__ float operator()(float v, const MathFnParams&) const { return -v; } };
template <> struct Fn<MathFn::kAbs> { __device__ float operator()(float v, const MathFnParams&) const { return fabsf(v); } };
template <> struct Fn<MathFn::kReciprocal> { __device__ float operator()(float v, const MathFnParams&) const { return 1.0f / v; } };
template <> struct Fn<MathFn::kLeakyRelu> {
  __device__ float operator()(float v, const MathFnParams& p) const { return v < 0.0f ? p.alpha * v : v; }
};
template <> struct Fn<MathFn::kElu> {
  __device__ float operator()(float v, const MathFnParams& p) const { return v < 0.0f ? p.alpha * expm1f(v) : v; }
};
template <> struct Fn<MathFn::kSelu> {
  __device__ float operator()(float v, const MathFnParams& p) const { return v <= 0.0f ? p.gamma * p.alpha * expm1f(v) : p.gamma * v; }
};
template <> struct Fn<MathFn::kSoftplus> {
  __device__ float operator()(float v, const MathFnParams&) const { return isnan(v) ? v : fmaxf(v, 0.0f) + log1pf(expf(-fabsf(v))); }
};
template <> struct Fn<MathFn::kSoftsign> { __device__ float operator()(float v, const MathFnParams&) const { return v / (1.0f + fabsf(v)); } };
template <> struct Fn<MathFn::kSin> { __device__ float operator()(float v, const MathFnParams&) const { return sinf(v); } };
template <> struct Fn<MathFn::kCos> { __device__ float operator()(float v, const MathFnParams&) const { return cosf(v); } };
template <> struct Fn<MathFn::kScale> { __device__ float operator()(float v, const MathFnParams& p) const { return p.alpha * v; } };
#define WS_MATH_FN(F, EXPR) \
  template <> struct Fn<MathFn::F> { __device__ float operator()(float v, const MathFnParams& p) const { return EXPR; } };
WS_MATH_FN(kTan, tanf(v))
WS_MATH_FN(kAsin, asinf(v))
WS_MATH_FN(kAcos, acosf(v))
WS_MATH_FN(kAtan, atanf(v))
WS_MATH_FN(kSinh, sinhf(v))
WS_MATH_FN(kCosh, coshf(v))
WS_MATH_FN(kAsinh, asinhf(v))
WS_MATH_FN(kAcosh, acoshf(v))
WS_MATH_FN(kAtanh, atanhf(v))
WS_MATH_FN(kFloor, floorf(v))
WS_MATH_FN(kCeil, ceilf(v))
WS_MATH_FN(kRound, rintf(v))
WS_MATH_FN(kSign, isnan(v) ? v : static_cast<float>((v > 0.0f) - (v < 0.0f)))
WS_MATH_FN(kThresholdedRelu, v > p.alpha ? v : 0.0f)
WS_MATH_FN(kCelu, fmaxf(0.0f, v) + fminf(0.0f, p.alpha * expm1f(v / p.alpha)))
WS_MATH_FN(kShrink, v < -p.lambd ? v + p.bias : (v > p.lambd ? v - p.bias : 0.0f))
#undef WS_MATH_FN

template <typename T, MathFn F>
__global__ void unary_math_kernel(const T* x, T* y, int64_t count, MathFnParams p) {
  const Fn<F> f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    store(y, i, f(load(x, i), p));
}

template <typename T>
__global__ void channel_affine_kernel(const T* x, T* y, const float* __restrict__ a, const float* __restrict__ b, int64_t count,
                                      int64_t channels, int64_t inner) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / inner) % channels;
    store(y, i, fmaf(load(x, i), a[c], b[c]));
  }
}

template <typename T>
__global__ void batch_norm_runtime_kernel(const T* x, T* y, const T* scale, const T* bias, const T* mean, const T* var, float eps,
                                          int64_t count, int64_t channels, int64_t inner) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / inner) % channels;
    const float a = load(scale, c) / sqrtf(load(var, c) + eps);
    store(y, i, (load(x, i) - load(mean, c)) * a + load(bias, c));
  }
}

__device__ __forceinline__ float apply_binary(BinaryMathOp op, float a, float b) {
  switch (op) {
    case BinaryMathOp::kPRelu: return a < 0.0f ? b * a : a;
    case BinaryMathOp::kPow: return powf(a, b);
    case BinaryMathOp::kMax: return isnan(a) ? a : (isnan(b) ? b : (a > b ? a : b));
    case BinaryMathOp::kMin: return isnan(a) ? a : (isnan(b) ? b : (a < b ? a : b));
    case BinaryMathOp::kAdd: return a + b;
    case BinaryMathOp::kFmod: return fmodf(a, b);
  }
  return 0.0f;
}

template <typename T>
__global__ void binary_math_kernel(BinaryMathOp op, const T* a, const T* b, T* y, BroadcastDims d, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, ia = 0, ib = 0;
#pragma unroll
    for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
      if (k >= d.rank) continue;
      const int64_t idx = rem % d.y_dims[k];
      rem /= d.y_dims[k];
      ia += idx * d.a_strides[k];
      ib += idx * d.b_strides[k];
    }
    const float va = load(a, ia), vb = load(b, ib);
    store(y, i, apply_binary(op, va, vb));
  }
}

Status check_type(ElemType t, const char* what) {
  if (t == ElemType::kFloat32 || t == ElemType::kFloat16) return Status::ok();
  return unsupported(std::string(what) + ": element type " + dtype_name(t) + " (float32 or float16 only)");
}

template <typename T>
Status launch_unary(MathFn f, const MathFnParams& p, const T* x, T* y, int64_t count, cudaStream_t s) {
  const unsigned g = grid_for(count);
  switch (f) {
#define WS_MATH_CASE(F) case MathFn::F: unary_math_kernel<T, MathFn::F><<<g, kThreads, 0, s>>>(x, y, count, p); break;
    WS_MATH_CASE(kErf) WS_MATH_CASE(kGelu) WS_MATH_CASE(kGeluTanh) WS_MATH_CASE(kTanh) WS_MATH_CASE(kExp)
    WS_MATH_CASE(kLog) WS_MATH_CASE(kSqrt) WS_MATH_CASE(kNeg) WS_MATH_CASE(kAbs) WS_MATH_CASE(kReciprocal)
    WS_MATH_CASE(kLeakyRelu) WS_MATH_CASE(kElu) WS_MATH_CASE(kSelu) WS_MATH_CASE(kSoftplus) WS_MATH_CASE(kSoftsign)
    WS_MATH_CASE(kSin) WS_MATH_CASE(kCos) WS_MATH_CASE(kScale) WS_MATH_CASE(kTan) WS_MATH_CASE(kAsin) WS_MATH_CASE(kAcos)
    WS_MATH_CASE(kAtan) WS_MATH_CASE(kSinh) WS_MATH_CASE(kCosh) WS_MATH_CASE(kAsinh) WS_MATH_CASE(kAcosh) WS_MATH_CASE(kAtanh)
    WS_MATH_CASE(kFloor) WS_MATH_CASE(kCeil) WS_MATH_CASE(kRound) WS_MATH_CASE(kSign) WS_MATH_CASE(kThresholdedRelu)
    WS_MATH_CASE(kCelu) WS_MATH_CASE(kShrink)
#undef WS_MATH_CASE
    default: return invalid_argument("unary_math: unknown function " + std::to_string(static_cast<int>(f)));
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace

const char* math_fn_name(MathFn f) {
  switch (f) {
    case MathFn::kErf: return "erf";
    case MathFn::kGelu: return "gelu";
    case MathFn::kGeluTanh: return "gelu_tanh";
    case MathFn::kTanh: return "tanh";
    case MathFn::kExp: return "exp";
    case MathFn::kLog: return "log";
    case MathFn::kSqrt: return "sqrt";
    case MathFn::kNeg: return "neg";
    case MathFn::kAbs: return "abs";
    case MathFn::kReciprocal: return "reciprocal";
    case MathFn::kLeakyRelu: return "leaky_relu";
    case MathFn::kElu: return "elu";
    case MathFn::kSelu: return "selu";
    case MathFn::kSoftplus: return "softplus";
    case MathFn::kSoftsign: return "softsign";
    case MathFn::kSin: return "sin";
    case MathFn::kCos: return "cos";
    case MathFn::kScale: return "scale";
    case MathFn::kTan: return "tan";
    case MathFn::kAsin: return "asin";
    case MathFn::kAcos: return "acos";
    case MathFn::kAtan: return "atan";
    case MathFn::kSinh: return "sinh";
    case MathFn::kCosh: return "cosh";
    case MathFn::kAsinh: return "asinh";
    case MathFn::kAcosh: return "acosh";
    case MathFn::kAtanh: return "atanh";
    case MathFn::kFloor: return "floor";
    case MathFn::kCeil: return "ceil";
    case MathFn::kRound: return "round";
    case MathFn::kSign: return "sign";
    case MathFn::kThresholdedRelu: return "thresholded_relu";
    case MathFn::kCelu: return "celu";
    case MathFn::kShrink: return "shrink";
  }
  return "?";
}

Status unary_math(ElemType t, MathFn f, const MathFnParams& p, const void* x, void* y, int64_t count, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_type(t, "unary_math"));
  if (count < 0) return invalid_argument("unary_math: count " + std::to_string(count));
  if (count == 0) return Status::ok();
  if (t == ElemType::kFloat32) return launch_unary(f, p, static_cast<const float*>(x), static_cast<float*>(y), count, stream);
  return launch_unary(f, p, static_cast<const __half*>(x), static_cast<__half*>(y), count, stream);
}

Status channel_affine(ElemType t, const void* x, void* y, const float* a, const float* b, int64_t count,
                      int64_t channels, int64_t inner, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_type(t, "channel_affine"));
  if (count < 0 || channels < 1 || inner < 1) return invalid_argument("channel_affine: bad dims");
  if (count == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    channel_affine_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), a, b,
                                                                           count, channels, inner);
  else
    channel_affine_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), a,
                                                                            b, count, channels, inner);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status batch_norm_runtime(ElemType t, const void* x, void* y, const void* scale, const void* bias, const void* mean,
                          const void* var, float epsilon, int64_t count, int64_t channels, int64_t inner, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_type(t, "batch_norm_runtime"));
  if (count < 0 || channels < 1 || inner < 1) return invalid_argument("batch_norm_runtime: bad dims");
  if (count == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    batch_norm_runtime_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), static_cast<const float*>(scale), static_cast<const float*>(bias),
        static_cast<const float*>(mean), static_cast<const float*>(var), epsilon, count, channels, inner);
  else
    batch_norm_runtime_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(
        static_cast<const __half*>(x), static_cast<__half*>(y), static_cast<const __half*>(scale), static_cast<const __half*>(bias),
        static_cast<const __half*>(mean), static_cast<const __half*>(var), epsilon, count, channels, inner);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status binary_math(ElemType t, BinaryMathOp op, const void* a, const void* b, void* y, const BroadcastDims& d,
                   cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_type(t, "binary_math"));
  if (d.rank < 0 || d.rank > kMaxBroadcastRank) return invalid_argument("binary_math: rank " + std::to_string(d.rank));
  int64_t count = 1;
  for (int k = 0; k < d.rank; ++k) {
    if (d.y_dims[k] < 0) return invalid_argument("binary_math: negative dim");
    count *= d.y_dims[k];
  }
  if (count == 0) return Status::ok();
  if (t == ElemType::kFloat32)
    binary_math_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(op, static_cast<const float*>(a), static_cast<const float*>(b),
                                                                        static_cast<float*>(y), d, count);
  else
    binary_math_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(op, static_cast<const __half*>(a),
                                                                         static_cast<const __half*>(b), static_cast<__half*>(y), d, count);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
