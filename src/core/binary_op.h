#pragma once
/// \file binary_op.h
/// The elementwise binary operators (ONNX Add-14, Sub-14, Mul-14, Div-14 on floats), one definition
/// named by both the CPU reference (ref::binary_broadcast) and the CUDA kernels
/// (kernels::binary_broadcast), so the executors pass it through without a mapping.

namespace ws {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

}  // namespace ws
