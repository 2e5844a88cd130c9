#pragma once
/// \file dtype.h
/// The one element-type vocabulary of WarpStream: the IR's tensors (graph.h, spelled ir::DType there),
/// both executors, the kernels' launchers (preprocess output, elementwise/conv/pool element type, INT8
/// GEMM output) and checkpoint readers. Values are ONNX TensorProto.DataType numbers, so they
/// round-trip through ONNX models (https://onnx.ai/onnx/api/mapping.html).

#include <cstddef>
#include <cstdint>
#include <string>

namespace ws {

enum class DType : int32_t {
  kUndefined = 0, kFloat32 = 1, kUInt8 = 2, kInt8 = 3, kUInt16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7,
  kString = 8, kBool = 9, kFloat16 = 10, kFloat64 = 11, kUInt32 = 12, kUInt64 = 13, kBFloat16 = 16,
  kFloat8E4M3FN = 17,  ///< ONNX FLOAT8E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no inf, NaN = 0x7F/0xFF
};

/// Bytes per element (0 for kUndefined/kString).
size_t dtype_size(DType t);
/// "float32", "int64", "bfloat16", "float8e4m3fn" ... ("dtype N" for a number without a name here).
std::string dtype_name(DType t);

}  // namespace ws
