#pragma once
/// \file arena.h
/// The activation arena plan both executors use (CpuEngine and the CUDA executor): one block of
/// memory, every runtime tensor at a fixed offset chosen at build from tensor lifetimes.
/// Implemented in the engine IR module (src/engine/ir/arena_plan.cpp).

#include <cstddef>
#include <string>
#include <vector>

#include "warpstream/graph.h"

namespace ws {

/// A runtime tensor's place in the arena.
struct TensorDesc {
  std::string name;
  ir::DType dtype = ir::DType::kFloat32;
  ir::Shape shape;
  size_t bytes = 0;
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
