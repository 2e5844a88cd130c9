#pragma once
/// \file logic.h
/// Host-only launchers of the CUDA executor's kernels on non-float tensors (src/kernels/elementwise/logic.cu):
/// comparisons (ONNX Equal-13/19, Less-13, Greater-13, LessOrEqual-16, GreaterOrEqual-16) and IsInf-10 / IsNaN-13
/// producing bool,
/// And / Or / Xor / Not on bool, Where-16 (any element size), and Cast-13 between the executor's element
/// types. bool is one byte holding 0 or 1 (ONNX's and the CPU executor's layout). Broadcasting is numpy's,
/// described by BroadcastDims / WhereDims (element strides per output dim, 0 on broadcast dims, rank <= 8).
/// All launchers enqueue on `stream`, allocate nothing, synchronise nothing and are capturable.
/// Errors: kUnsupported for an element type a kernel has no form for; kInvalidArgument for bad dims.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/elementwise/elementwise.h"

namespace ws::kernels {

enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };
enum class LogicOp { kAnd, kOr, kXor };

/// y[i] = a[...] op b[...] as bool (0/1), numpy broadcast over d (d.y_dims = y's dims). `t`: element type
/// of a and b — kFloat32, kFloat16 (compared as float32; NaN compares false, as on the CPU), kInt64, kInt32,
/// kInt8, kUInt8 or kBool (bytes compared as 0/1).
Status compare_broadcast(ElemType t, CompareOp op, const void* a, const void* b, uint8_t* y, const BroadcastDims& d,
                         cudaStream_t stream);

/// y[i] = a[...] op b[...] on bool (any nonzero byte reads as true; y is 0/1).
Status logic_broadcast(LogicOp op, const uint8_t* a, const uint8_t* b, uint8_t* y, const BroadcastDims& d,
                       cudaStream_t stream);

/// y[i] = !x[i] on bool, count elements (x may equal y).
Status logical_not(const uint8_t* x, uint8_t* y, int64_t count, cudaStream_t stream);

/// IsInf-10 (`detect_positive` / `detect_negative` select +inf / -inf) and IsNaN-13: y[i] = class test of x[i]
/// as bool, `count` elements; `t`: kFloat32 or kFloat16 (an fp16 engine's activations).
enum class FloatClass { kIsNaN, kIsInf };
Status float_class(ElemType t, FloatClass what, bool detect_positive, bool detect_negative, const void* x, uint8_t* y,
                   int64_t count, cudaStream_t stream);

/// Where-16: y[i] = cond[...] ? a[...] : b[...], numpy broadcast of all three to y_dims.
struct WhereDims {
  int rank = 0;
  int64_t y_dims[kMaxBroadcastRank] = {};
  int64_t c_strides[kMaxBroadcastRank] = {};
  int64_t a_strides[kMaxBroadcastRank] = {};
  int64_t b_strides[kMaxBroadcastRank] = {};
};
/// a, b and y hold elements of `elem_bytes` bytes (1, 2, 4 or 8; copied bit for bit).
Status where_broadcast(int elem_bytes, const uint8_t* cond, const void* a, const void* b, void* y, const WhereDims& d,
                       cudaStream_t stream);

/// Cast-13 of `count` elements from `from` to `to`, with ref::cast's rules (src/reference/gather_slice.cpp):
/// float -> integer truncates toward zero and saturates (NaN -> 0), anything -> bool is `!= 0`, bool -> number
/// is 0 / 1, int64 <-> int32/int8/uint8 wrap as C++ casts do, float -> float16 rounds to nearest even.
/// Types: kFloat32, kFloat16, kFloat64, kInt64, kInt32, kInt8, kUInt8, kBool. from == to is a copy. float64 -> float16
/// rounds once (as ref::cast).
Status cast_elements(ElemType from, const void* x, ElemType to, void* y, int64_t count, cudaStream_t stream);
/// Whether cast_elements has a form for `t`.
bool cast_supported(ElemType t);

}  // namespace ws::kernels
