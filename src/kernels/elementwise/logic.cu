// Kernels of the CUDA executor on non-float tensors (issue 14): numpy-broadcast comparisons producing bool
// (Equal, Less, Greater, LessOrEqual, GreaterOrEqual over float32 / float16 / int64 / int32 / int8 / uint8 /
// bool operands), IsInf / IsNaN (float32 / float16 -> bool), And / Or / Xor / Not on bool, Where (cond ? a : b, any element size, bits copied) and Cast
// between float32, float16, int64, int32, int8, uint8 and bool with the CPU reference's rules (ref::cast).
// bool is one byte, 0 or 1. Cast also reads and writes float64 (a model's Cast to / from double).
// Thread mapping: one thread per output element, grid-stride loop, 256-thread blocks (device::grid_for); the
// broadcast index is decoded per element from the output's multi-index (rank <= 8), as binary_kernel does.
// Test: tests/gpu/cuda_engine_ops_test.cpp (ws_gpu_tests --gtest_filter='CudaEngineOps*'): the forms of the
// logic / Where / Cast entries (src/engine/cuda/ops/logic.cpp) through the CUDA executor vs the CPU executor,
// fp32 and fp16; under compute-sanitizer via `scripts/device.sh sanitize`. Not timed (tiny tensors in models).
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda/cuda_util.h"
#include "kernels/elementwise/device_math.cuh"
#include "kernels/elementwise/logic.h"

namespace ws::kernels {
namespace {

using device::grid_for;
using device::kThreads;

// Offsets of output element i in two broadcast operands.
__device__ __forceinline__ void offsets2(int64_t i, const BroadcastDims& d, int64_t& ia, int64_t& ib) {
  int64_t rem = i;
  ia = 0, ib = 0;
#pragma unroll
  for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
    if (k >= d.rank) continue;
    const int64_t idx = rem % d.y_dims[k];
    rem /= d.y_dims[k];
    ia += idx * d.a_strides[k];
    ib += idx * d.b_strides[k];
  }
}

template <typename T>
__device__ __forceinline__ auto value_of(const T* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float value_of(const __half* p, int64_t i) { return __half2float(p[i]); }
struct BoolByte { uint8_t v; };  // a bool element: any nonzero byte is true
__device__ __forceinline__ bool value_of(const BoolByte* p, int64_t i) { return p[i].v != 0; }

template <typename V>
__device__ __forceinline__ bool compare(CompareOp op, V a, V b) {
  switch (op) {
    case CompareOp::kEqual: return a == b;
    case CompareOp::kLess: return a < b;
    case CompareOp::kGreater: return a > b;
    case CompareOp::kLessOrEqual: return a <= b;
    case CompareOp::kGreaterOrEqual: return a >= b;
  }
  return false;
}

template <typename T>
__global__ void compare_kernel(CompareOp op, const T* a, const T* b, uint8_t* y, BroadcastDims d, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    offsets2(i, d, ia, ib);
    y[i] = compare(op, value_of(a, ia), value_of(b, ib)) ? 1 : 0;
  }
}

__global__ void logic_kernel(LogicOp op, const uint8_t* a, const uint8_t* b, uint8_t* y, BroadcastDims d, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    offsets2(i, d, ia, ib);
    const bool x = a[ia] != 0, z = b[ib] != 0;
    y[i] = (op == LogicOp::kAnd ? (x && z) : op == LogicOp::kOr ? (x || z) : (x != z)) ? 1 : 0;
  }
}

__global__ void not_kernel(const uint8_t* x, uint8_t* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] != 0 ? 0 : 1;
}

template <typename T>
__global__ void float_class_kernel(const T* x, uint8_t* y, int64_t count, FloatClass what, bool pos, bool neg) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    // Bit tests (an fp16 value widens exactly): immune to fast-math assumptions about NaN and infinity.
    const uint32_t b = __float_as_uint(value_of(x, i)), mag = b & 0x7fffffffu;
    const bool nan = mag > 0x7f800000u, inf = mag == 0x7f800000u, negative = (b >> 31) != 0;
    y[i] = what == FloatClass::kIsNaN ? nan : inf && ((pos && !negative) || (neg && negative));
  }
}

template <typename T>
__global__ void where_kernel(const uint8_t* cond, const T* a, const T* b, T* y, WhereDims d, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, ic = 0, ia = 0, ib = 0;
#pragma unroll
    for (int k = kMaxBroadcastRank - 1; k >= 0; --k) {
      if (k >= d.rank) continue;
      const int64_t idx = rem % d.y_dims[k];
      rem /= d.y_dims[k];
      ic += idx * d.c_strides[k];
      ia += idx * d.a_strides[k];
      ib += idx * d.b_strides[k];
    }
    y[i] = cond[ic] != 0 ? a[ia] : b[ib];
  }
}

// ---- Cast: ref::cast's rules ----
// A source element as double (int64 is handled exactly by the caller).
template <typename T>
__device__ __forceinline__ double as_double(const T* p, int64_t i) { return static_cast<double>(p[i]); }
__device__ __forceinline__ double as_double(const __half* p, int64_t i) { return static_cast<double>(__half2float(p[i])); }

// Integer limits as device constants (std::numeric_limits' members are host-only constexpr functions).
template <typename T> struct Limits;
template <> struct Limits<int64_t> { static constexpr int64_t lo = INT64_MIN, hi = INT64_MAX; };
template <> struct Limits<int32_t> { static constexpr int32_t lo = INT32_MIN, hi = INT32_MAX; };
template <> struct Limits<int8_t> { static constexpr int8_t lo = INT8_MIN, hi = INT8_MAX; };
template <> struct Limits<uint8_t> { static constexpr uint8_t lo = 0, hi = UINT8_MAX; };

template <typename T>
__device__ __forceinline__ T saturate(double v) {
  if (isnan(v)) return 0;
  if (v <= static_cast<double>(Limits<T>::lo)) return Limits<T>::lo;
  if (v >= static_cast<double>(Limits<T>::hi)) return Limits<T>::hi;
  return static_cast<T>(v);
}

enum class Kind : int { kF32, kF16, kF64, kI64, kI32, kI8, kU8, kBool };

__device__ __forceinline__ void store_from_double(void* y, Kind to, int64_t i, double v) {
  switch (to) {
    case Kind::kF32: static_cast<float*>(y)[i] = static_cast<float>(v); break;
    case Kind::kF16: static_cast<__half*>(y)[i] = __float2half_rn(static_cast<float>(v)); break;
    case Kind::kF64: static_cast<double*>(y)[i] = v; break;
    case Kind::kI64: static_cast<int64_t*>(y)[i] = saturate<int64_t>(v); break;
    case Kind::kI32: static_cast<int32_t*>(y)[i] = saturate<int32_t>(v); break;
    case Kind::kI8: static_cast<int8_t*>(y)[i] = saturate<int8_t>(v); break;
    case Kind::kU8: static_cast<uint8_t*>(y)[i] = saturate<uint8_t>(v); break;
    case Kind::kBool: static_cast<uint8_t*>(y)[i] = v != 0.0 ? 1 : 0; break;
  }
}

template <typename T>
__global__ void cast_kernel(const T* x, Kind to, void* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<T, double>) {
      if (to == Kind::kF16) {
        // Round once (double -> half), as ref::cast: through float, nudged toward d when float landed on a binary16
        // half-ulp tie that d is not on.
        const double d = x[i];
        float f = static_cast<float>(d);
        uint32_t bits = __float_as_uint(f);
        if ((bits & 0x1fffu) == 0x1000u && static_cast<double>(f) != d) {
          bits += (static_cast<double>(f) < d) == (f > 0) ? 1 : -1;
          f = __uint_as_float(bits);
        }
        static_cast<__half*>(y)[i] = __float2half_rn(f);
        continue;
      }
    }
    store_from_double(y, to, i, as_double(x, i));
  }
}
__global__ void cast_bool_kernel(const uint8_t* x, Kind to, void* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    store_from_double(y, to, i, x[i] != 0 ? 1.0 : 0.0);
}
// int64 source: exact integer paths, as ref::cast (a double would lose int64 precision).
__global__ void cast_i64_kernel(const int64_t* x, Kind to, void* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t v = x[i];
    switch (to) {
      case Kind::kI32: static_cast<int32_t*>(y)[i] = static_cast<int32_t>(v); break;
      case Kind::kI8: static_cast<int8_t*>(y)[i] = static_cast<int8_t>(v); break;
      case Kind::kU8: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v); break;
      case Kind::kBool: static_cast<uint8_t*>(y)[i] = v != 0 ? 1 : 0; break;
      case Kind::kF32: static_cast<float*>(y)[i] = static_cast<float>(v); break;
      default: store_from_double(y, to, i, static_cast<double>(v)); break;
    }
  }
}
// int32 / int8 / uint8 / bool -> int64 exactly.
template <typename T>
__global__ void cast_to_i64_kernel(const T* x, int64_t* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = static_cast<int64_t>(x[i]);
}

bool kind_of(ElemType t, Kind& k) {
  switch (t) {
    case ElemType::kFloat32: k = Kind::kF32; return true;
    case ElemType::kFloat16: k = Kind::kF16; return true;
    case ElemType::kFloat64: k = Kind::kF64; return true;
    case ElemType::kInt64: k = Kind::kI64; return true;
    case ElemType::kInt32: k = Kind::kI32; return true;
    case ElemType::kInt8: k = Kind::kI8; return true;
    case ElemType::kUInt8: k = Kind::kU8; return true;
    case ElemType::kBool: k = Kind::kBool; return true;
    default: return false;
  }
}

int64_t broadcast_count(const BroadcastDims& d) {
  int64_t count = 1;
  for (int k = 0; k < d.rank; ++k) count *= d.y_dims[k];
  return count;
}
Status check_dims(const char* what, int rank, const int64_t* dims) {
  if (rank < 0 || rank > kMaxBroadcastRank) return invalid_argument(std::string(what) + ": rank " + std::to_string(rank));
  for (int k = 0; k < rank; ++k)
    if (dims[k] < 0) return invalid_argument(std::string(what) + ": negative dim");
  return Status::ok();
}

}  // namespace

Status compare_broadcast(ElemType t, CompareOp op, const void* a, const void* b, uint8_t* y, const BroadcastDims& d,
                         cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_dims("compare_broadcast", d.rank, d.y_dims));
  const int64_t n = broadcast_count(d);
  if (n == 0) return Status::ok();
  const unsigned g = grid_for(n);
  switch (t) {
    case ElemType::kFloat32: compare_kernel<<<g, kThreads, 0, stream>>>(op, static_cast<const float*>(a), static_cast<const float*>(b), y, d, n); break;
    case ElemType::kFloat16: compare_kernel<<<g, kThreads, 0, stream>>>(op, static_cast<const __half*>(a), static_cast<const __half*>(b), y, d, n); break;
    case ElemType::kInt64: compare_kernel<<<g, kThreads, 0, stream>>>(op, static_cast<const int64_t*>(a), static_cast<const int64_t*>(b), y, d, n); break;
    case ElemType::kInt32: compare_kernel<<<g, kThreads, 0, stream>>>(op, static_cast<const int32_t*>(a), static_cast<const int32_t*>(b), y, d, n); break;
    case ElemType::kInt8: compare_kernel<<<g, kThreads, 0, stream>>>(op, static_cast<const int8_t*>(a), static_cast<const int8_t*>(b), y, d, n); break;
    case ElemType::kUInt8: compare_kernel<<<g, kThreads, 0, stream>>>(op, static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), y, d, n); break;
    case ElemType::kBool: compare_kernel<<<g, kThreads, 0, stream>>>(op, static_cast<const BoolByte*>(a), static_cast<const BoolByte*>(b), y, d, n); break;
    default: return unsupported(std::string("compare_broadcast: element type ") + dtype_name(t));
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status logic_broadcast(LogicOp op, const uint8_t* a, const uint8_t* b, uint8_t* y, const BroadcastDims& d, cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_dims("logic_broadcast", d.rank, d.y_dims));
  const int64_t n = broadcast_count(d);
  if (n == 0) return Status::ok();
  logic_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, a, b, y, d, n);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status logical_not(const uint8_t* x, uint8_t* y, int64_t count, cudaStream_t stream) {
  if (count < 0) return invalid_argument("logical_not: negative count");
  if (count == 0) return Status::ok();
  not_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, y, count);
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status float_class(ElemType t, FloatClass what, bool detect_positive, bool detect_negative, const void* x, uint8_t* y,
                   int64_t count, cudaStream_t stream) {
  if (count < 0) return invalid_argument("float_class: negative count");
  if (count == 0) return Status::ok();
  const unsigned g = grid_for(count);
  switch (t) {
    case ElemType::kFloat32:
      float_class_kernel<<<g, kThreads, 0, stream>>>(static_cast<const float*>(x), y, count, what, detect_positive, detect_negative);
      break;
    case ElemType::kFloat16:
      float_class_kernel<<<g, kThreads, 0, stream>>>(static_cast<const __half*>(x), y, count, what, detect_positive, detect_negative);
      break;
    default: return unsupported("float_class: float32 or float16 input only");
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

Status where_broadcast(int elem_bytes, const uint8_t* cond, const void* a, const void* b, void* y, const WhereDims& d,
                       cudaStream_t stream) {
  WS_RETURN_IF_ERROR(check_dims("where_broadcast", d.rank, d.y_dims));
  int64_t n = 1;
  for (int k = 0; k < d.rank; ++k) n *= d.y_dims[k];
  if (n == 0) return Status::ok();
  const unsigned g = grid_for(n);
  switch (elem_bytes) {
    case 1: where_kernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), static_cast<uint8_t*>(y), d, n); break;
    case 2: where_kernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), static_cast<uint16_t*>(y), d, n); break;
    case 4: where_kernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint32_t*>(a), static_cast<const uint32_t*>(b), static_cast<uint32_t*>(y), d, n); break;
    case 8: where_kernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint64_t*>(a), static_cast<const uint64_t*>(b), static_cast<uint64_t*>(y), d, n); break;
    default: return invalid_argument("where_broadcast: element size " + std::to_string(elem_bytes));
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

bool cast_supported(ElemType t) {
  Kind k;
  return kind_of(t, k);
}

Status cast_elements(ElemType from, const void* x, ElemType to, void* y, int64_t count, cudaStream_t stream) {
  Kind fk, tk;
  if (!kind_of(from, fk) || !kind_of(to, tk))
    return unsupported(std::string("cast_elements: ") + dtype_name(from) + " to " + dtype_name(to));
  if (count < 0) return invalid_argument("cast_elements: negative count");
  if (count == 0) return Status::ok();
  if (from == to) {
    if (x != y) WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(y, x, static_cast<size_t>(count) * dtype_size(from), cudaMemcpyDeviceToDevice, stream));
    return Status::ok();
  }
  const unsigned g = grid_for(count);
  if (tk == Kind::kI64 && (fk == Kind::kI32 || fk == Kind::kI8 || fk == Kind::kU8 || fk == Kind::kBool)) {
    auto* yo = static_cast<int64_t*>(y);
    if (fk == Kind::kI32) cast_to_i64_kernel<<<g, kThreads, 0, stream>>>(static_cast<const int32_t*>(x), yo, count);
    else if (fk == Kind::kI8) cast_to_i64_kernel<<<g, kThreads, 0, stream>>>(static_cast<const int8_t*>(x), yo, count);
    else if (fk == Kind::kU8) cast_to_i64_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint8_t*>(x), yo, count);
    else cast_bool_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint8_t*>(x), tk, y, count);
  } else {
    switch (fk) {
      case Kind::kF32: cast_kernel<<<g, kThreads, 0, stream>>>(static_cast<const float*>(x), tk, y, count); break;
      case Kind::kF16: cast_kernel<<<g, kThreads, 0, stream>>>(static_cast<const __half*>(x), tk, y, count); break;
      case Kind::kF64: cast_kernel<<<g, kThreads, 0, stream>>>(static_cast<const double*>(x), tk, y, count); break;
      case Kind::kI64: cast_i64_kernel<<<g, kThreads, 0, stream>>>(static_cast<const int64_t*>(x), tk, y, count); break;
      case Kind::kI32: cast_kernel<<<g, kThreads, 0, stream>>>(static_cast<const int32_t*>(x), tk, y, count); break;
      case Kind::kI8: cast_kernel<<<g, kThreads, 0, stream>>>(static_cast<const int8_t*>(x), tk, y, count); break;
      case Kind::kU8: cast_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint8_t*>(x), tk, y, count); break;
      case Kind::kBool: cast_bool_kernel<<<g, kThreads, 0, stream>>>(static_cast<const uint8_t*>(x), tk, y, count); break;
    }
  }
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
