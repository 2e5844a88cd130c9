#pragma once
/// \file limits.h
/// The build-time memory budget: bounds checked BEFORE any allocation or work whose size a model
/// or input file controls (initializers, attribute tensors, conformance-suite .pb tensors, every
/// inferred tensor shape, hence the arena and the work of each kernel). A file that promises more
/// is refused with kResourceExhausted naming the tensor and the limit.
///
/// Defaults (stated here and in the README):
///   max_tensor_elements = 2^26 (64 Mi elements = 256 MiB of float32) per tensor, measured as the
///                         product of its dims with 0 counted as 1 (so no partial product of a
///                         shape's dims can overflow either);
///   max_tensor_bytes    = 1 GiB per constant tensor read from a file;
///   max_image_pixels    = 2^28 (kMaxImagePixels in warpstream/image.h) per decoded image;
///   max_arena_bytes     = 4 GiB for the CPU engine's activation arena (CpuEngine::build's bound
///                         is the smaller of its argument and this);
///   max_node_macs       = 2^36 multiply-accumulates per node (Conv, ConvTranspose, MatMul, Gemm, pooling
///                         windows; ResNet-50's largest conv is about 2^27), so a small model cannot make one
///                         kernel of the CPU reference (constant folding at build, or a run) work for minutes.
/// User-settable: set_build_limits() (API, tests, fuzzers) or, read once at first use, the
/// environment variables WS_MAX_TENSOR_ELEMENTS, WS_MAX_TENSOR_BYTES, WS_MAX_IMAGE_PIXELS,
/// WS_MAX_ARENA_BYTES and WS_MAX_NODE_MACS (decimal, > 0).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "warpstream/status.h"

namespace ws {

struct BuildLimits {
  static constexpr int64_t kDefaultMaxTensorElements = int64_t{1} << 26;
  static constexpr size_t kDefaultMaxTensorBytes = size_t{1} << 30;
  static constexpr int64_t kDefaultMaxImagePixels = int64_t{1} << 28;
  int64_t max_tensor_elements = kDefaultMaxTensorElements;
  size_t max_tensor_bytes = kDefaultMaxTensorBytes;
  int64_t max_image_pixels = kDefaultMaxImagePixels;
  static constexpr size_t kDefaultMaxArenaBytes = size_t{4} << 30;
  size_t max_arena_bytes = kDefaultMaxArenaBytes;
  static constexpr int64_t kDefaultMaxNodeMacs = int64_t{1} << 36;
  int64_t max_node_macs = kDefaultMaxNodeMacs;
};

/// The limits in force: the defaults, overridden by the environment (first call), or by
/// set_build_limits. A malformed environment value makes check_shape_within_limits fail with
/// kInvalidArgument naming the variable (errors are values; nothing is silently ignored).
const BuildLimits& build_limits();
/// Replaces the limits in force (not thread-safe against concurrent builds; call at start-up).
void set_build_limits(const BuildLimits& limits);

/// Checks `shape` (of the tensor described by `what`, e.g. "output 0 'y'") against
/// max_tensor_elements: negative dims, an overflowing product, or an extent over the limit are
/// refused (kInvalidModel / kResourceExhausted). The one check every inferred or imported shape
/// goes through.
Status check_shape_within_limits(std::span<const int64_t> shape, const std::string& what);

/// Checks the work of one node, `macs` multiply-accumulates (nullopt: the count overflowed int64), against
/// max_node_macs: kResourceExhausted naming `what`, the count and the limit.
Status check_work_within_limits(std::optional<int64_t> macs, const std::string& what);

}  // namespace ws
