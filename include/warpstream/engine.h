#pragma once
/// \file engine.h
/// The CPU reference executor: build once (passes, shape inference, kernel binding, arena plan),
/// then run the fixed plan any number of times without allocating. It is the correctness oracle
/// for the CUDA executor and the fallback that runs the main job on machines without a GPU.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "warpstream/arena.h"
#include "warpstream/graph.h"

namespace ws {

class CpuEngine {
 public:
  /// Default bound on the activation arena: a shape that would need more is refused at build
  /// instead of exhausting the machine.
  static constexpr size_t kDefaultMaxArenaBytes = size_t{4} << 30;
  /// Optimises `graph` (ir::optimize), binds one CPU kernel per node and plans the arena.
  /// Errors: any pass error (names the node/op/attribute/opset); a graph input or output whose
  /// type is not float32 (kUnsupported); an arena over max_arena_bytes (kResourceExhausted,
  /// stating both sizes).
  static Result<std::unique_ptr<CpuEngine>> build(ir::Graph graph, size_t max_arena_bytes = kDefaultMaxArenaBytes);

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  const TensorDesc& input_desc(size_t i) const { return inputs_[i].desc; }
  const TensorDesc& output_desc(size_t i) const { return outputs_[i].desc; }
  /// Where the caller writes input i (dense row-major, input_desc(i).bytes) before run().
  void* input(size_t i) { return inputs_[i].ptr; }
  /// Output i after run() (valid until the next run()).
  const void* output(size_t i) const { return outputs_[i].ptr; }
  /// Executes every step in order. Allocates nothing.
  Status run();
  /// As run(), calling `after_step(step_index, node)` after each node (for node-by-node checks).
  Status run_with_hook(const std::function<void(size_t, const ir::Node&)>& after_step);
  /// Pointer to any tensor by id after run (runtime tensors in the arena, or constant data).
  const void* tensor_data(ir::TensorId id) const;

  const ir::Graph& graph() const { return graph_; }
  const ArenaPlan& arena_plan() const { return plan_; }
  size_t arena_bytes() const { return plan_.bytes; }
  size_t step_count() const { return steps_.size(); }

 private:
  struct Port { TensorDesc desc; void* ptr = nullptr; };
  struct Step {
    const ir::Node* node = nullptr;
    std::function<void(std::span<const void* const>, std::span<void* const>)> kernel;
    std::vector<const void*> in;
    std::vector<void*> out;
  };
  CpuEngine() = default;
  ir::Graph graph_;
  ArenaPlan plan_;
  std::unique_ptr<std::byte[]> arena_;
  std::vector<Step> steps_;
  std::vector<Port> inputs_, outputs_;
};

}  // namespace ws
