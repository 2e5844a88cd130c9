#pragma once
/// \file lift_1d.h
/// 1-D Conv / pooling (input [N, C, L]) bound as their 2-D form over [N, C, 1, L] — the same bytes: a shadow
/// copy of the graph whose X (and W, and the outputs) have a unit axis inserted at position 2, and of the node
/// whose window attributes gain that axis's identity values (kernel_shape / strides / dilations 1, pads 0).
/// The shadow lives only while the entry's supports() / bind() runs; constants are uploaded from the real
/// graph by tensor id (their bytes do not change), and the step's run function captures no reference to it.
#include <memory>
#include <utility>

#include "engine/cuda/op_util.h"

namespace ws::cudaexec {

struct Lifted1d {
  ir::Graph graph;
  ir::Node node;
  std::unique_ptr<engine::NodeContext> analyzed;
  std::unique_ptr<BindContext> context;
};

/// Requires in_t(c, 0) of rank 3. `lift_weight`: input 1 is a [M, C/g, k] weight (Conv).
inline std::unique_ptr<Lifted1d> lift_1d(const BindContext& c, bool lift_weight) {
  auto l = std::make_unique<Lifted1d>();
  l->graph = c.graph;  // a copy (constants included): 1-D models are small, and it is freed after bind
  l->node = c.node;
  auto lift = [](ir::Shape& s) {
    if (s.size() >= 2) s.insert(s.begin() + 2, 1);
  };
  lift(l->graph.tensor(c.node.inputs[0]).shape);
  if (lift_weight && has_in(c, 1)) lift(l->graph.tensor(c.node.inputs[1]).shape);
  for (ir::TensorId id : c.node.outputs)
    if (id != ir::kNoTensor) lift(l->graph.tensor(id).shape);
  auto prepend = [&](const char* key, std::vector<int64_t> front) {
    auto it = l->node.attributes.find(key);
    if (it == l->node.attributes.end() || it->second.kind != ir::Attribute::Kind::kInts) return;
    std::vector<int64_t>& v = it->second.ints;
    v.insert(v.begin(), front.begin(), front.end());
  };
  prepend("kernel_shape", {1});
  prepend("strides", {1});
  prepend("dilations", {1});
  if (auto it = l->node.attributes.find("pads"); it != l->node.attributes.end() && it->second.ints.size() == 2)
    it->second.ints = {0, it->second.ints[0], 0, it->second.ints[1]};
  std::vector<ir::Shape> shapes = c.analyzed.output_shapes;
  for (ir::Shape& s : shapes) lift(s);
  l->analyzed = std::make_unique<engine::NodeContext>(engine::NodeContext{l->graph, l->node, c.analyzed.output_dtypes, shapes, {}});
  l->context = std::make_unique<BindContext>(BindContext{l->graph, l->node, *l->analyzed, c.options, c.precision, c.elem, c.elem_bytes,
                                                         c.fused_act, c.fused_params, c.upload, c.upload_values, c.dev, c.cache, c.tactics,
                                                         c.upload_stored, c.nhwc, c.upload_bytes});
  return l;
}

}  // namespace ws::cudaexec
