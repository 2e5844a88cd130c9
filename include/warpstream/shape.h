#pragma once
/// \file shape.h
/// Tensor shapes: dims as int64 (row-major, outermost first), shared by the IR, the checkpoint readers and
/// the Flow rail. Host-only, std only.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ws {

using Shape = std::vector<int64_t>;
/// Product of dims (1 for a scalar). Returns -1 when a dim is negative or the product overflows int64.
int64_t shape_elements(std::span<const int64_t> shape);
/// "[1, 3, 224, 224]".
std::string shape_string(std::span<const int64_t> shape);

}  // namespace ws
