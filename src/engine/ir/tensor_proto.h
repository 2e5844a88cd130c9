#pragma once
/// \file tensor_proto.h
/// In-memory form of ir::read_tensor_proto (warpstream/graph.h): parses one ONNX TensorProto (the
/// conformance suite's input_N.pb / output_N.pb) from bytes. The fuzz entry point of the
/// `onnx-test` reader; read_tensor_proto reads the file (bounded) and calls it.

#include <cstddef>
#include <span>
#include <string>

#include "warpstream/graph.h"

namespace ws::ir {

/// Errors: not a TensorProto (kInvalidModel, with the size), a non-tensor value (kUnsupported),
/// dims that disagree with the data (kInvalidModel), more than max_tensor_bytes (capped by
/// build_limits().max_tensor_bytes) or a shape over the element bound (kResourceExhausted).
/// `source` labels messages (escaped). Nothing is allocated before the data is known present.
Result<Tensor> parse_tensor_proto(std::span<const std::byte> bytes, const std::string& source,
                                  size_t max_tensor_bytes = size_t{1} << 31);

}  // namespace ws::ir
