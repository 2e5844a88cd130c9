#pragma once
/// \file arena.h
/// The activation arena plan both executors use (CpuEngine and the CUDA executor): one block of
/// memory, every runtime tensor at a fixed offset chosen at build from tensor lifetimes.
/// Implemented in the engine IR module (src/engine/ir/arena_plan.cpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "warpstream/graph.h"

namespace ws {

/// How a port tensor's elements are laid out in memory (TensorRT's nvinfer1::TensorFormat, the two forms used here).
enum class TensorFormat {
  /// Dense row-major in the order of TensorDesc::shape (for a 4-D image tensor: NCHW). bytes = elements · element size.
  kLinear,
  /// TensorRT's kHWC8: a 4-D logical [N, C, H, W] tensor with 1 <= C <= 8 stored channels-last with the channel axis
  /// padded to 8 — [N, H, W, 8], element (n, c, h, w) at index ((n·H + h)·W + w)·8 + c; channels C..7 of every pixel
  /// hold zero (a producer must write them as zero: the padded weights multiply them). One pixel is 8 elements
  /// (16 bytes in float16). bytes = N·H·W·8 · element size. TensorDesc::shape stays the logical [N, C, H, W].
  kHWC8,
};
/// "linear" / "hwc8".
inline const char* tensor_format_name(TensorFormat f) { return f == TensorFormat::kHWC8 ? "hwc8" : "linear"; }
/// Channels of one pixel in TensorFormat::kHWC8 storage.
inline constexpr int64_t kHwc8Channels = 8;

/// A runtime tensor's place in the arena; at an engine port (input_desc / output_desc), what a caller reads or writes.
struct TensorDesc {
  std::string name;                      ///< the model's tensor name
  ir::DType dtype = ir::DType::kFloat32;  ///< element type as stored
  ir::Shape shape;                       ///< logical shape as the model declares it (for kHWC8 too: [N, C, H, W])
  size_t bytes = 0;                      ///< bytes in memory, in `format` (kHWC8: N·H·W·8 · element size)
  TensorFormat format = TensorFormat::kLinear;  ///< memory layout of the `bytes`
};

/// Offsets of every runtime (non-constant) tensor in one arena, assigned at build from tensor
/// lifetimes (first-fit over [first write, last read] intervals; 64-byte aligned).
struct ArenaPlan {
  static constexpr size_t kNotInArena = static_cast<size_t>(-1);
  size_t bytes = 0;                 ///< total arena size
  size_t naive_bytes = 0;           ///< sum of all runtime tensor sizes (no reuse), for reports
  std::vector<size_t> offsets;      ///< per TensorId; kNotInArena for constants / unused tensors
};
/// Plans the arena for `graph` (nodes in execution order). Graph inputs and outputs are live for
/// the whole run, so an input written once survives any number of run() calls.
ArenaPlan plan_arena(const ir::Graph& graph);

}  // namespace ws
