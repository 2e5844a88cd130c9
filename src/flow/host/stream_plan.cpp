// Streaming ring planner; see stream_plan.h. Host-only (no CUDA).
#include "flow/host/stream_plan.h"

#include <cstdio>

namespace ws::flow {

std::string format_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) { v /= 1024.0; ++u; }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

std::string StreamPlan::describe() const {
  return "L=" + std::to_string(layers()) + " layers (" + format_bytes(total_layer_bytes) + "), S=" +
         std::to_string(slots) + " slots x " + format_bytes(slot_bytes) + " = " + format_bytes(ring_bytes) +
         " of " + format_bytes(budget_bytes) + " budget";
}

Result<StreamPlan> build_stream_plan(const std::vector<uint64_t>& layer_bytes, uint64_t budget_bytes, int slots,
                                     uint64_t alignment) {
  if (layer_bytes.empty()) return invalid_argument("stream plan: the layer list is empty (need at least one layer)");
  if (slots < 1) return invalid_argument("stream plan: slots = " + std::to_string(slots) + " must be >= 1");
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return invalid_argument("stream plan: slot alignment " + std::to_string(alignment) + " must be a power of two");
  StreamPlan p;
  p.slots = slots;
  p.alignment = alignment;
  p.budget_bytes = budget_bytes;
  p.layer_bytes = layer_bytes;
  size_t largest_index = 0;
  for (size_t i = 0; i < layer_bytes.size(); ++i) {
    if (layer_bytes[i] == 0) return invalid_argument("stream plan: layer " + std::to_string(i) + " has 0 bytes");
    if (layer_bytes[i] > p.largest_layer_bytes) { p.largest_layer_bytes = layer_bytes[i]; largest_index = i; }
    p.total_layer_bytes += layer_bytes[i];
  }
  p.slot_bytes = round_up(p.largest_layer_bytes, alignment);
  // Overflow-safe S x slot_bytes.
  if (p.slot_bytes > UINT64_MAX / static_cast<uint64_t>(slots))
    return resource_exhausted("stream plan: " + std::to_string(slots) + " slots x " + std::to_string(p.slot_bytes) +
                              " bytes overflows 64 bits");
  const uint64_t need = static_cast<uint64_t>(slots) * p.slot_bytes;
  if (budget_bytes < need) {
    return resource_exhausted("stream plan: VRAM budget " + std::to_string(budget_bytes) + " bytes (" +
                              format_bytes(budget_bytes) + ") is smaller than S x largest layer = " +
                              std::to_string(slots) + " x " + std::to_string(p.slot_bytes) + " = " +
                              std::to_string(need) + " bytes (" + format_bytes(need) + "); largest layer is layer " +
                              std::to_string(largest_index) + " (" + std::to_string(p.largest_layer_bytes) +
                              " bytes, slot rounded to " + std::to_string(alignment) +
                              "-byte alignment). Lower S or raise the budget.");
  }
  p.ring_bytes = need;
  p.peak_device_bytes = need;
  p.slot_offsets.resize(static_cast<size_t>(slots));
  for (int s = 0; s < slots; ++s) p.slot_offsets[static_cast<size_t>(s)] = static_cast<uint64_t>(s) * p.slot_bytes;
  p.layer_slot.resize(layer_bytes.size());
  for (size_t i = 0; i < layer_bytes.size(); ++i) p.layer_slot[i] = ring_slot(static_cast<int>(i), slots);
  return p;
}

}  // namespace ws::flow
