#pragma once
/// \file pad.h
/// Pad-13 (https://onnx.ai/onnx/operators/onnx__Pad.html): N-D, modes constant, reflect, edge.

#include <cstddef>
#include <cstdint>
#include <span>

namespace ws::ref {

inline constexpr size_t kMaxPadRank = 8;  ///< ranks above this are refused at build

enum class PadMode { kConstant, kReflect, kEdge };

/// y = pad(x). pads = [begin_0 … begin_{r-1}, end_0 … end_{r-1}], each >= 0 (negative pads, i.e.
/// cropping, are rejected by the caller). y_dims[i] = x_dims[i] + begin_i + end_i. Reflect requires
/// x_dims[i] > max(begin_i, end_i) on every padded axis (checked by the caller). float32 only.
void pad(const float* x, std::span<const int64_t> x_dims, std::span<const int64_t> pads, PadMode mode, float value,
         float* y);

}  // namespace ws::ref
