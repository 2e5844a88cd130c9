// Graph passes run once at build: shape inference, constant folding, BatchNorm→Conv folding and
// dead-node elimination. See include/warpstream/graph.h for each pass's contract.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/op_table.h"
#include "warpstream/graph.h"
#include "core/escape.h"

namespace ws::ir {

namespace {
// A node whose outputs can be computed at build: every input constant, or a Shape / Size whose input's
// shape is known (their kernels read no input data).
bool computable_at_build(const Graph& graph, const Node& node) {
  if (node.op_type == "Shape" || node.op_type == "Size") return graph.tensor(node.inputs[0]).shape_known;
  bool all_const = !node.inputs.empty();
  for (TensorId in : node.inputs) all_const &= in == kNoTensor || graph.tensor(in).is_constant();
  return all_const;
}
// Runs an analysed, computable node's kernel and stores its outputs as constant data.
void evaluate_at_build(Graph& graph, const Node& node, const engine::NodeContext& ctx) {
  std::vector<const void*> ins;
  for (TensorId in : node.inputs) {
    ins.push_back(in == kNoTensor || !graph.tensor(in).is_constant() ? nullptr : graph.tensor(in).data->data());
  }
  std::vector<void*> outs;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == kNoTensor) { outs.push_back(nullptr); continue; }
    Tensor& t = graph.tensor(node.outputs[i]);
    t.dtype = ctx.output_dtypes[i];
    t.shape = ctx.output_shapes[i];
    t.shape_known = true;
    t.data = std::vector<std::byte>(static_cast<size_t>(shape_elements(t.shape)) * dtype_size(t.dtype));
    outs.push_back(t.data->data());
  }
  ctx.kernel(ins, outs);
}
}  // namespace

Status infer_shapes(Graph& graph) {
  for (const Node& node : graph.nodes) {
    engine::NodeContext ctx{graph, node, {}, {}, {}};
    WS_RETURN_IF_ERROR(engine::analyze_node(ctx));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] == kNoTensor) continue;
      Tensor& t = graph.tensor(node.outputs[i]);
      const int64_t n = shape_elements(ctx.output_shapes[i]);
      if (n < 0 || static_cast<uint64_t>(n) * dtype_size(ctx.output_dtypes[i]) > (uint64_t{1} << 34)) {
        return resource_exhausted(node.describe(graph.opset) + ": output " + quoted(t.name) + " " +
                                  shape_string(ctx.output_shapes[i]) + " exceeds 16 GiB");
      }
      if (!t.is_constant()) {
        t.dtype = ctx.output_dtypes[i];
        t.shape = ctx.output_shapes[i];
        t.shape_known = true;
      }
    }
    // Values computable at build are materialised now, so that a later node needing one at build
    // (Reshape's shape from a Shape → Concat chain) sees a constant; fold_constants removes them.
    bool outputs_constant = true;
    for (TensorId o : node.outputs) outputs_constant &= o == kNoTensor || graph.tensor(o).is_constant();
    if (!outputs_constant && computable_at_build(graph, node)) evaluate_at_build(graph, node, ctx);
  }
  return Status::ok();
}

Status fold_constants(Graph& graph) {
  std::vector<Node> kept;
  for (Node& node : graph.nodes) {
    // An analysed Dropout computes an inference run (or training with ratio 0: analyze_dropout refuses the
    // rest), whose mask is all true whatever the data: the mask becomes a constant and leaves the node.
    if (node.op_type == "Dropout" && node.outputs.size() > 1 && node.outputs[1] != kNoTensor &&
        graph.tensor(node.inputs[0]).shape_known && !graph.tensor(node.outputs[1]).is_constant()) {
      Tensor& m = graph.tensor(node.outputs[1]);
      m.dtype = DType::kBool;
      m.shape = graph.tensor(node.inputs[0]).shape;
      m.shape_known = true;
      m.data = std::vector<std::byte>(static_cast<size_t>(shape_elements(m.shape)), std::byte{1});
      node.outputs.resize(1);
    }
    // Shape only needs a known input shape, not its data.
    if (!computable_at_build(graph, node)) { kept.push_back(std::move(node)); continue; }
    engine::NodeContext ctx{graph, node, {}, {}, {}};
    WS_RETURN_IF_ERROR(engine::analyze_node(ctx));
    evaluate_at_build(graph, node, ctx);
  }
  graph.nodes = std::move(kept);
  return Status::ok();
}

namespace {
std::unordered_map<TensorId, int> consumer_counts(const Graph& g) {
  std::unordered_map<TensorId, int> uses;
  for (const Node& n : g.nodes)
    for (TensorId in : n.inputs)
      if (in != kNoTensor) uses[in]++;
  for (TensorId o : g.outputs) uses[o]++;
  return uses;
}
std::unordered_map<TensorId, size_t> producers(const Graph& g) {
  std::unordered_map<TensorId, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (TensorId o : g.nodes[i].outputs)
      if (o != kNoTensor) producer[o] = i;
  return producer;
}
void erase_nodes(Graph& g, const std::vector<bool>& drop) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}
}  // namespace

Status fold_batch_norm_into_conv(Graph& graph) {
  auto uses = consumer_counts(graph);
  auto producer = producers(graph);
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t bi = 0; bi < graph.nodes.size(); ++bi) {
    Node& bn = graph.nodes[bi];
    if (bn.op_type != "BatchNormalization" || bn.outputs.size() != 1 || bn.inputs.size() != 5) continue;
    auto p = producer.find(bn.inputs[0]);
    if (p == producer.end()) continue;
    Node& conv = graph.nodes[p->second];
    if (conv.op_type != "Conv" || uses[bn.inputs[0]] != 1) continue;
    bool consts = graph.tensor(conv.inputs[1]).is_constant() &&
                  (conv.inputs.size() < 3 || conv.inputs[2] == kNoTensor || graph.tensor(conv.inputs[2]).is_constant());
    for (int i = 1; i < 5; ++i) consts &= graph.tensor(bn.inputs[static_cast<size_t>(i)]).is_constant();
    if (!consts) continue;
    const Attribute* eps_attr = bn.find("epsilon");
    const float eps = eps_attr ? eps_attr->f : 1e-5f;
    const Tensor& w = graph.tensor(conv.inputs[1]);
    if (w.dtype != DType::kFloat32) continue;
    const int64_t cout = w.shape[0];
    const int64_t per_out = w.elements() / cout;
    const float* scale = graph.tensor(bn.inputs[1]).data_as<float>();
    const float* beta = graph.tensor(bn.inputs[2]).data_as<float>();
    const float* mean = graph.tensor(bn.inputs[3]).data_as<float>();
    const float* var = graph.tensor(bn.inputs[4]).data_as<float>();
    Tensor nw = w;
    nw.name = w.name + "_bnfold";
    Tensor nb;
    nb.name = conv.name + "_bias_bnfold";
    nb.dtype = DType::kFloat32;
    nb.shape = {cout};
    nb.shape_known = true;
    nb.data = std::vector<std::byte>(static_cast<size_t>(cout) * 4);
    const float* old_b = (conv.inputs.size() > 2 && conv.inputs[2] != kNoTensor) ? graph.tensor(conv.inputs[2]).data_as<float>() : nullptr;
    for (int64_t o = 0; o < cout; ++o) {
      // Fold in double so the folded weights are the correctly rounded values of W·s/√(v+ε).
      const double s = static_cast<double>(scale[o]) / std::sqrt(static_cast<double>(var[o]) + eps);
      float* wr = nw.mutable_data_as<float>() + o * per_out;
      for (int64_t j = 0; j < per_out; ++j) wr[j] = static_cast<float>(wr[j] * s);
      const double b0 = old_b ? old_b[o] : 0.0;
      nb.mutable_data_as<float>()[o] = static_cast<float>((b0 - mean[o]) * s + beta[o]);
    }
    conv.inputs.resize(3);
    conv.inputs[1] = graph.add_tensor(std::move(nw));
    conv.inputs[2] = graph.add_tensor(std::move(nb));
    // The conv now writes the BN's output directly.
    const TensorId bn_out = bn.outputs[0];
    graph.nodes[p->second].outputs[0] = bn_out;
    drop[bi] = true;
  }
  erase_nodes(graph, drop);
  return Status::ok();
}


Status fold_pad_into_conv(Graph& graph) {
  auto uses = consumer_counts(graph);
  auto producer = producers(graph);
  std::vector<bool> drop(graph.nodes.size(), false);
  for (Node& conv : graph.nodes) {
    if (conv.op_type != "Conv") continue;
    auto p = producer.find(conv.inputs[0]);
    if (p == producer.end() || uses[conv.inputs[0]] != 1) continue;
    const Node& pad = graph.nodes[p->second];
    if (pad.op_type != "Pad") continue;
    const Attribute* mode = pad.find("mode");
    if (mode && mode->s != "constant") continue;
    std::vector<int64_t> pads;
    if (graph.opset < 11) {
      const Attribute* a = pad.find("pads");
      const Attribute* v = pad.find("value");
      if (!a || (v && v->f != 0.0f)) continue;
      pads = a->ints;
    } else {
      if (pad.inputs.size() < 2 || !graph.tensor(pad.inputs[1]).is_constant() ||
          graph.tensor(pad.inputs[1]).dtype != DType::kInt64 || (pad.inputs.size() > 3 && pad.inputs[3] != kNoTensor)) continue;
      const Tensor& pt = graph.tensor(pad.inputs[1]);
      pads.assign(pt.data_as<int64_t>(), pt.data_as<int64_t>() + pt.elements());
      if (pad.inputs.size() > 2 && pad.inputs[2] != kNoTensor) {
        const Tensor& v = graph.tensor(pad.inputs[2]);
        if (!v.is_constant() || v.dtype != DType::kFloat32 || v.elements() != 1 || *v.data_as<float>() != 0.0f) continue;
      }
    }
    const size_t r = graph.tensor(pad.inputs[0]).shape.size();
    if (pads.size() != 2 * r || r < 3) continue;
    // Only spatial padding, non-negative.
    bool ok = pads[0] == 0 && pads[1] == 0 && pads[r] == 0 && pads[r + 1] == 0;
    for (int64_t v : pads) ok = ok && v >= 0;
    const Attribute* ap = conv.find("auto_pad");
    if (!ok || (ap && ap->s != "NOTSET")) continue;
    const size_t sr = r - 2;
    std::vector<int64_t> conv_pads(2 * sr, 0);
    if (const Attribute* cp = conv.find("pads")) {
      if (cp->ints.size() != 2 * sr) continue;
      conv_pads = cp->ints;
    }
    for (size_t i = 0; i < sr; ++i) {
      conv_pads[i] += pads[2 + i];
      conv_pads[sr + i] += pads[r + 2 + i];
    }
    Attribute a;
    a.kind = Attribute::Kind::kInts;
    a.ints = conv_pads;
    conv.attributes["pads"] = a;
    conv.inputs[0] = pad.inputs[0];
    drop[p->second] = true;
  }
  erase_nodes(graph, drop);
  return Status::ok();
}

Status eliminate_dead_nodes(Graph& graph) {
  // Bypass Identity and single-output inference Dropout whose output is not a graph output.
  std::unordered_set<TensorId> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  std::unordered_map<TensorId, TensorId> alias;
  std::vector<Node> kept;
  for (Node& n : graph.nodes) {
    for (TensorId& in : n.inputs) {
      auto a = alias.find(in);
      if (a != alias.end()) in = a->second;
    }
    const bool passthrough = n.op_type == "Identity" ||
                             (n.op_type == "Dropout" && (n.outputs.size() == 1 || n.outputs[1] == kNoTensor) &&
                              (n.inputs.size() < 3 || n.inputs[2] == kNoTensor));
    if (passthrough && !graph_outputs.count(n.outputs[0])) {
      alias[n.outputs[0]] = n.inputs[0];
      continue;
    }
    kept.push_back(std::move(n));
  }
  // Drop nodes none of whose outputs reach a graph output (walk backwards).
  std::unordered_set<TensorId> live(graph.outputs.begin(), graph.outputs.end());
  std::vector<bool> keep(kept.size(), false);
  for (size_t i = kept.size(); i-- > 0;) {
    for (TensorId o : kept[i].outputs) keep[i] = keep[i] || (o != kNoTensor && live.count(o));
    if (keep[i])
      for (TensorId in : kept[i].inputs)
        if (in != kNoTensor) live.insert(in);
  }
  std::vector<Node> alive;
  for (size_t i = 0; i < kept.size(); ++i)
    if (keep[i]) alive.push_back(std::move(kept[i]));
  graph.nodes = std::move(alive);
  // Release constant data nothing reads any more.
  for (size_t id = 0; id < graph.tensors.size(); ++id) {
    Tensor& t = graph.tensors[id];
    if (t.is_constant() && !live.count(static_cast<TensorId>(id))) t.data.reset(), t.shape_known = false;
  }
  return Status::ok();
}

Status optimize(Graph& graph) {
  WS_RETURN_IF_ERROR(infer_shapes(graph));
  WS_RETURN_IF_ERROR(fold_constants(graph));
  WS_RETURN_IF_ERROR(fold_batch_norm_into_conv(graph));
  WS_RETURN_IF_ERROR(fold_pad_into_conv(graph));
  WS_RETURN_IF_ERROR(eliminate_dead_nodes(graph));
  return infer_shapes(graph);
}

}  // namespace ws::ir
