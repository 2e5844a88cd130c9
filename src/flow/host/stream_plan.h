#pragma once
/// \file stream_plan.h
/// Host-only planning for weight streaming (the capacity rail, VRAMFlow stage 04): given the byte
/// size of each layer, a VRAM budget and a slot count S, decide the ring of S device slots that the
/// Streamer (flow/streamer.h) carves once from one device allocation. No CUDA here: plain C++,
/// compiled and unit-tested in the CPU build.
///
/// Ring arithmetic (L layers, S slots, layer i in slot i mod S):
///  - the copy of layer j may start once the compute of layer j - S (the previous user of its slot)
///    has finished; j < S needs no wait;
///  - while layer i computes, the copies of layers i+1 .. i+S-1 may be in flight, so the copy stream
///    runs S-1 layers ahead (S = 1: copy then compute, no overlap; S = 2: double buffering; S = 3: triple).

#include <cstdint>
#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws::flow {

/// Default slot alignment: 256 bytes (cudaMalloc's guarantee; every slot starts as aligned as the ring).
inline constexpr uint64_t kSlotAlignment = 256;

/// Slot used by layer `layer` in a ring of `slots` slots (layer >= 0, slots >= 1).
constexpr int ring_slot(int layer, int slots) { return layer % slots; }
/// Layer that last used the slot that `layer` will use, or -1 if the slot is still fresh.
constexpr int ring_previous_user(int layer, int slots) { return layer >= slots ? layer - slots : -1; }
/// Last layer whose copy may be in flight while `layer` computes: layer + S - 1, capped at L - 1.
constexpr int ring_prefetch_limit(int layer, int slots, int layers) {
  return layer + slots - 1 < layers - 1 ? layer + slots - 1 : layers - 1;
}
/// x rounded up to a multiple of `alignment` (alignment >= 1).
constexpr uint64_t round_up(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

/// The fixed layout of a streaming ring; built once, replayed every pass.
struct StreamPlan {
  int slots = 0;                       ///< S
  uint64_t largest_layer_bytes = 0;    ///< max over layers (unaligned)
  uint64_t slot_bytes = 0;             ///< largest layer rounded up to the slot alignment
  uint64_t alignment = kSlotAlignment; ///< slot alignment in bytes
  std::vector<uint64_t> slot_offsets;  ///< [S] byte offset of each slot inside the ring allocation
  std::vector<uint64_t> layer_bytes;   ///< [L] bytes of each layer (as given)
  std::vector<int> layer_slot;         ///< [L] slot of each layer (i mod S)
  uint64_t total_layer_bytes = 0;      ///< sum of layer_bytes (bytes copied per pass)
  uint64_t ring_bytes = 0;             ///< S x slot_bytes: the one device allocation
  uint64_t budget_bytes = 0;           ///< the VRAM budget the plan was made for
  uint64_t peak_device_bytes = 0;      ///< device bytes the streamer holds for weights (= ring_bytes)

  int layers() const { return static_cast<int>(layer_bytes.size()); }
  /// Byte offset of layer i's slot inside the ring.
  uint64_t layer_offset(int layer) const { return slot_offsets[static_cast<size_t>(layer_slot[static_cast<size_t>(layer)])]; }
  /// One line: "L=16 layers (1.00 GiB), S=3 slots x 64.00 MiB = 192.00 MiB of 2.00 GiB budget".
  std::string describe() const;
};

/// Plans a ring of `slots` slots for `layer_bytes` inside `budget_bytes` of device memory.
/// Errors (kInvalidArgument): empty layer list; a layer of 0 bytes (names its index); slots < 1;
/// alignment 0 or not a power of two. kResourceExhausted when budget < S x slot size, stating both
/// numbers (bytes and MiB), the largest layer and which layer it is.
Result<StreamPlan> build_stream_plan(const std::vector<uint64_t>& layer_bytes, uint64_t budget_bytes, int slots,
                                     uint64_t alignment = kSlotAlignment);

/// "64.00 MiB" style formatting (binary units), used in plan errors and reports.
std::string format_bytes(uint64_t bytes);

}  // namespace ws::flow
