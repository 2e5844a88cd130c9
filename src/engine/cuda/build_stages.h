#pragma once
/// \file build_stages.h
/// The device-free stages of CudaEngine::build (cuda_engine.cpp), in build order:
///   1. optimize_for_cuda: ir::optimize, Einsum lowered to MatMul form (ir::lower_einsum), the port checks (float32 runtime inputs/outputs), and the CUDA
///      executor's fusions (a residual Add into the Conv producing one operand; a Relu / Clip with constant
///      bounds into the Conv before it);
///   2. onnx_view: the nodes as ONNX defines them (a Conv carrying a fused residual analysed as the plain
///      Conv it was), for analyze_node and each entry's supports();
///   3. plan_cuda_arena: one arena over the optimised graph, runtime tensors in the activation type;
///   plus graph_hash (the timing cache's model identity).
/// The device stages — choose tactics through a TimingCache (timing_cache.h), bind steps, ports — follow in
/// cuda_engine.cpp. Everything here is plain C++ on the IR (no CUDA), unit-tested on the CPU in
/// tests/unit/engine_cuda_stages_test.cpp.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "core/escape.h"
#include "core/limits.h"
#include "engine/ir/einsum_lowering.h"
#include "engine/ir/fusion.h"
#include "warpstream/arena.h"
#include "warpstream/cuda_engine.h"
#include "warpstream/graph.h"
#include "warpstream/status.h"

namespace ws::cudaexec {

/// Arena ranges and the shared workspace start on 256-byte boundaries.
constexpr size_t kArenaAlign = 256;
inline size_t arena_align_up(size_t v) { return (v + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

/// Bytes of `t` with elements of `elem` bytes (0 for unknown / negative element counts).
inline size_t tensor_bytes(const ir::Tensor& t, size_t elem) {
  return static_cast<size_t>(std::max<int64_t>(t.elements(), 0)) * elem;
}

/// Clip's bounds when they are build-time constants: the opset < 11 attributes, or float32 scalar constant
/// inputs 1 (min) and 2 (max); absent bounds leave *min / *max unchanged. False for runtime bounds.
inline bool clip_bounds_constant(const ir::Graph& g, const ir::Node& n, float* min, float* max) {
  if (g.opset < 11) {
    if (const ir::Attribute* a = n.find("min")) *min = a->f;
    if (const ir::Attribute* a = n.find("max")) *max = a->f;
    return true;
  }
  for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) {
    if (n.inputs[i] == ir::kNoTensor) continue;
    const ir::Tensor& t = g.tensor(n.inputs[i]);
    if (!t.is_constant() || t.dtype != ir::DType::kFloat32 || t.elements() != 1) return false;
    *(i == 1 ? min : max) = *t.data_as<float>();
  }
  return true;
}

/// A step that may run on the auxiliary stream (CudaBuildOptions::max_aux_streams): node `node` (an index into
/// OptimizedGraph::graph.nodes; node names need not be unique) forks from the main stream where it stands and joins it
/// before node `join` (the first node reading its output). The names are for messages and tactic notes.
struct AuxBranch {
  size_t node = 0, join = 0;
  std::string node_name, join_name;
};

/// A classifier head's GlobalAveragePool that the GEMV reading its (copied) output may absorb (pooled_heads).
struct PooledHead {
  size_t pool_node = 0;                ///< index of the GlobalAveragePool in OptimizedGraph::graph
  ir::TensorId input = ir::kNoTensor;  ///< the pool's input [1, C, H, W], which the fused step reads instead
  bool nhwc = false;                   ///< that input is stored channels-last
};

/// Stage 1's result: the graph the CUDA executor binds, and what its fusions folded into which Conv.
struct OptimizedGraph {
  ir::Graph graph;
  /// Conv node name -> the Relu / Clip node folded into its epilogue (the Conv now writes that node's output).
  std::map<std::string, ir::Node> fused_activation;
  /// Conv nodes carrying a fused residual Add as input 3 (ir::fuse_conv_residual_adds).
  std::set<std::string> residual_convs;
  /// Stage 1b (assign_layouts): the runtime tensors stored channels-last (NHWC) and the reformat nodes inserted.
  std::set<ir::TensorId> nhwc_tensors;
  /// Per node of `graph` (same order): it runs channels-last (BindContext::nhwc). Empty when nothing does.
  std::vector<bool> nhwc_nodes;
  int reformats = 0;
  /// Stage 1b' (pad_hwc8): the reformats to NHWC that also pad the channels to 8 (CudaBuildOptions::hwc8_input), and
  /// their output tensors (the padded copies, [N, 8, H, W] stored NHWC).
  int hwc8_pads = 0;
  std::set<ir::TensorId> hwc8_copies;
  /// Stage 1b'' (port_hwc8, CudaBuildOptions::hwc8_input_port): graph input slot -> the model's input tensor it replaced.
  /// graph.inputs[slot] is now that input's padded copy (TensorFormat::kHWC8 at the port) and the reformat that wrote
  /// the copy is gone; the model's tensor keeps its name and logical shape for the port's TensorDesc and is read by no node.
  std::map<size_t, ir::TensorId> hwc8_ports;
  Layout layout = Layout::kNchw;  ///< the layout chosen (kAuto resolved)
  /// Stage 1c (depthwise_pointwise_pairs): the pointwise Convs that may absorb the depthwise Conv just before them.
  std::set<std::string> depthwise_pointwise;
  /// Stage 1d (mbconv_blocks): the projection Convs of depthwise_pointwise whose depthwise Conv reads a 1×1 expand Conv
  /// just before it: the three may run as one kernel (kernels::conv2d_mbconv).
  std::set<std::string> mbconv;
  /// Stage 1e (expand_depthwise_pairs): the depthwise Convs that may absorb the 1×1 expand Conv just before them
  /// (kernels::conv2d_expand_depthwise).
  std::set<std::string> expand_depthwise;
  /// Stage 1a (hoist_shortcut_convs, CudaBuildOptions::max_aux_streams >= 1): the shortcut Convs moved up to their inputs.
  std::vector<std::string> hoisted;
  /// Stage 1f (aux_branches): the nodes that may run on the auxiliary stream, and where each joins the main stream.
  std::vector<AuxBranch> aux_branches;
  /// Stage 1g (pooled_heads): Gemm / MatMul node index -> the GlobalAveragePool it may absorb (by index: node names
  /// need not be unique).
  std::map<size_t, PooledHead> pooled_heads;
  /// Stage 1a' (stem_pools, CudaBuildOptions::fuse_stem_pool): the output tensors of the stem Convs whose MaxPool — the
  /// node right after each — absorbs them (kernels::stem7x7_maxpool). assign_layouts stores such a Conv's output
  /// channels-last with no reformat of its NCHW input (the fused kernel reads NCHW and writes NHWC); the set is emptied
  /// when the plan is not channels-last. Tensor ids, which the reformat nodes inserted later do not renumber.
  std::set<ir::TensorId> stem_pools;
};

/// The attribute that marks a reformat node assign_layouts inserts: an Identity whose "ws_reformat" is "nhwc"
/// (NCHW in, NHWC out) or "nchw" (NHWC in, NCHW out). onnx_view strips it; bind_steps binds it as a transpose.
inline constexpr const char* kReformatAttr = "ws_reformat";

namespace detail {
inline bool runtime_4d_float(const ir::Graph& g, ir::TensorId id) {
  if (id == ir::kNoTensor) return false;
  const ir::Tensor& t = g.tensor(id);
  return !t.is_constant() && t.dtype == ir::DType::kFloat32 && t.shape.size() == 4;
}
inline bool symmetric_2d_pads(const ir::Node& n) {
  if (const ir::Attribute* a = n.find("auto_pad"); a && a->s != "NOTSET" && a->s != "VALID") return false;
  if (const ir::Attribute* p = n.find("pads"))
    return p->ints.size() == 4 && p->ints[0] == p->ints[2] && p->ints[1] == p->ints[3];
  return true;
}
inline int64_t attr_int(const ir::Node& n, const char* k, int64_t def) {
  const ir::Attribute* a = n.find(k);
  return a ? a->i : def;
}
/// Ops that run channels-last themselves (cuDNN NHWC descriptors) when `g`'s node `n` has this form.
inline bool nhwc_capable(const ir::Graph& g, const ir::Node& n, bool allow_grouped) {
  if (n.outputs.empty() || !runtime_4d_float(g, n.outputs[0])) return false;
  if (n.op_type == "Conv") {
    if (n.inputs.size() < 2 || !runtime_4d_float(g, n.inputs[0]) || !g.tensor(n.inputs[1]).is_constant()) return false;
    if (g.tensor(n.inputs[1]).dtype != ir::DType::kFloat32 || g.tensor(n.inputs[1]).shape.size() != 4) return false;
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoTensor && !g.tensor(n.inputs[2]).is_constant()) return false;
    if (n.inputs.size() > 3 && n.inputs[3] != ir::kNoTensor && !runtime_4d_float(g, n.inputs[3])) return false;
    if (!allow_grouped && attr_int(n, "group", 1) != 1) return false;
    return symmetric_2d_pads(n);
  }
  if (n.op_type == "MaxPool" || n.op_type == "AveragePool") {
    if (!runtime_4d_float(g, n.inputs[0]) || (n.outputs.size() > 1 && n.outputs[1] != ir::kNoTensor)) return false;
    if (attr_int(n, "ceil_mode", 0) != 0 || attr_int(n, "storage_order", 0) != 0) return false;
    if (const ir::Attribute* d = n.find("dilations"))
      for (int64_t v : d->ints)
        if (v != 1) return false;
    return symmetric_2d_pads(n);
  }
  return false;
}
/// Ops whose result does not depend on the layout: elementwise ones when every runtime operand has the output's shape
/// (or is a constant scalar), inference BatchNormalization with constant statistics (a per-channel affine), Pad with
/// constant pads (bound on the permuted axes), and
/// Concat on the channel axis (bound as a per-pixel concatenation in NHWC).
inline bool layout_free(const ir::Graph& g, const ir::Node& n) {
  static const std::set<std::string> unary = {"Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu",
                                              "Selu", "Softplus", "Neg", "Abs", "Erf", "Gelu"};
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean"};
  if (n.outputs.size() != 1 || !runtime_4d_float(g, n.outputs[0]) || n.find(kReformatAttr)) return false;
  const ir::Shape& y = g.tensor(n.outputs[0]).shape;
  if (unary.count(n.op_type)) {
    if (!runtime_4d_float(g, n.inputs[0]) || g.tensor(n.inputs[0]).shape != y) return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] != ir::kNoTensor && !g.tensor(n.inputs[i]).is_constant()) return false;
    return true;
  }
  if (n.op_type == "Pad") {  // constant pads (attribute or input 1), no axes input: per-axis, so the bind permutes them
    if (!runtime_4d_float(g, n.inputs[0]) || n.inputs.size() > 3) return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] != ir::kNoTensor && !g.tensor(n.inputs[i]).is_constant()) return false;
    return true;
  }
  if (n.op_type == "BatchNormalization") {  // constant statistics: a per-channel affine (channel = i % C in NHWC)
    if (n.inputs.size() != 5 || !runtime_4d_float(g, n.inputs[0]) || g.tensor(n.inputs[0]).shape != y) return false;
    for (size_t i = 1; i < 5; ++i)
      if (n.inputs[i] == ir::kNoTensor || !g.tensor(n.inputs[i]).is_constant()) return false;
    return true;
  }
  if (n.op_type == "Concat") {  // on the channel axis: in NHWC memory the concatenation of each pixel's channels
    const int64_t axis = attr_int(n, "axis", 0);
    if (axis != 1 && axis != -3) return false;
    for (ir::TensorId id : n.inputs) {
      if (!runtime_4d_float(g, id)) return false;
      const ir::Shape& x = g.tensor(id).shape;
      if (x[0] != y[0] || x[2] != y[2] || x[3] != y[3]) return false;
    }
    return !n.inputs.empty();
  }
  if (binary.count(n.op_type)) {  // every operand a runtime tensor of y's shape or a constant scalar (x * 0.5, x + 3)
    bool runtime = false;
    for (ir::TensorId id : n.inputs) {
      if (id == ir::kNoTensor) return false;
      const ir::Tensor& t = g.tensor(id);
      if (t.is_constant() && t.elements() == 1) continue;
      if (!runtime_4d_float(g, id) || t.shape != y) return false;
      runtime = true;
    }
    return runtime;
  }
  return false;
}
}  // namespace detail

/// Stage 1b: channels-last segments (Layout). Walks the nodes in order; each node wants NHWC (nhwc_capable,
/// and a layout-free elementwise op with an NHWC operand), NHWC input only (GlobalAveragePool whose input
/// is NHWC), or NCHW (everything else, and every node writing a graph output). Where a node's 4-D runtime input
/// is stored in the other layout, an Identity reformat node (kReformatAttr) is inserted before it, one per
/// (tensor, layout), shared by later consumers; an [N, C, 1, 1] tensor (the same bytes in both layouts) is never
/// reformatted. Graph inputs and outputs stay NCHW. A fused stem Conv (OptimizedGraph::stem_pools) reads its NCHW input
/// as it is and writes channels-last (its MaxPool then reads NHWC with no reformat). OptimizedGraph::layout says kNhwc when any tensor is stored
/// channels-last. kAuto keeps the channels-last plan only if it needs at most 1 + (NHWC convs) / 8 reformats, else
/// the graph is left as it was (NCHW). Errors: kInvalidArgument for layout kNhwc without tactic source cudnn.
/// Device-free.
inline Status assign_layouts(OptimizedGraph& og, const CudaBuildOptions& options) {
  ir::Graph& g = og.graph;
  Layout l = options.layout;
  if (l == Layout::kAuto) {
    bool grouped = false, any = false;
    for (const ir::Node& n : g.nodes)
      if (n.op_type == "Conv") {
        grouped = grouped || detail::attr_int(n, "group", 1) != 1;
        any = any || detail::nhwc_capable(g, n, false);
      }
    // fp8 as fp16: a graph without grouped convs (ResNet-50) runs channels-last on cuDNN fp16, where FP8 has no
    // kernel (ours are NCHW), so fp8 is never slower than fp16 by the layout's choice (device run 47: ResNet-50 fp8
    // in NCHW 757 µs against fp16 NHWC 405 µs); a graph with grouped convs (EfficientNet) stays NCHW, FP8 eligible.
    l = half_storage(options.precision) && (options.tactic_sources & kTacticCudnn) && !grouped && any ? Layout::kNhwc
                                                                                                             : Layout::kNchw;
  }
  if (l == Layout::kNhwc && !(options.tactic_sources & kTacticCudnn))  // an explicit request we cannot honour
    return invalid_argument("CudaBuildOptions::layout = nhwc needs tactic source cudnn (channels-last convs run on cuDNN; enabled "
                            "tactic sources: " + tactic_sources_string(options.tactic_sources) + ")");
  og.layout = Layout::kNchw;  // until a tensor is stored channels-last (below)
  if (l != Layout::kNhwc || options.debug_keep_all_tensors) {
    og.stem_pools.clear();  // the fused stem writes channels-last: only in a channels-last plan
    return Status::ok();
  }
  // auto keeps the plan only when its reformats are few for its channels-last convs (a rule, not a timing):
  // at most 1 + (NHWC convs) / 8. Otherwise the graph is restored and runs NCHW.
  const bool is_auto = options.layout == Layout::kAuto;
  std::vector<ir::Node> saved_nodes;
  const size_t saved_tensors = g.tensors.size();
  if (is_auto) saved_nodes = g.nodes;
  std::set<ir::TensorId> outputs(g.outputs.begin(), g.outputs.end());
  std::map<std::pair<ir::TensorId, bool>, ir::TensorId> copies;  // (source, to NHWC) -> reformatted tensor
  std::vector<ir::Node> nodes;
  nodes.reserve(g.nodes.size() + 4);
  auto stored_nhwc = [&](ir::TensorId id) { return og.nhwc_tensors.count(id) != 0; };
  auto in_layout = [&](ir::TensorId id, bool nhwc) -> ir::TensorId {
    if (!detail::runtime_4d_float(g, id) || stored_nhwc(id) == nhwc) return id;
    const ir::Shape& sh = g.tensor(id).shape;
    if (sh[2] == 1 && sh[3] == 1) return id;  // [N, C, 1, 1]: the same bytes in both layouts
    auto it = copies.find({id, nhwc});
    if (it != copies.end()) return it->second;
    ir::Tensor t = g.tensor(id);
    t.name += nhwc ? "/nhwc" : "/nchw";
    const ir::TensorId nid = static_cast<ir::TensorId>(g.tensors.size());
    g.tensors.push_back(std::move(t));
    ir::Node r;
    r.name = "reformat_" + std::to_string(og.reformats++) + (nhwc ? "_to_nhwc(" : "_to_nchw(") + g.tensor(id).name + ")";
    r.op_type = "Identity";
    r.inputs = {id};
    r.outputs = {nid};
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = nhwc ? "nhwc" : "nchw";
    r.attributes[kReformatAttr] = a;
    nodes.push_back(std::move(r));
    if (nhwc) og.nhwc_tensors.insert(nid);
    copies[{id, nhwc}] = nid;
    return nid;
  };
  for (ir::Node& n : g.nodes) {
    bool writes_output = false;
    for (ir::TensorId o : n.outputs) writes_output = writes_output || outputs.count(o);
    bool want = false, out_nhwc = false;
    std::vector<size_t> layout_inputs;  // the inputs that must be stored in `want`
    if (n.op_type == "Conv" && n.outputs.size() == 1 && og.stem_pools.count(n.outputs[0])) {
      out_nhwc = true;  // a fused stem (stem_pools): reads its NCHW graph input as it is, writes channels-last
    } else if (!writes_output && detail::nhwc_capable(g, n, true)) {
      want = out_nhwc = true;
      layout_inputs = {0};
      if (n.op_type == "Conv" && n.inputs.size() > 3) layout_inputs.push_back(3);
    } else if (!writes_output && detail::layout_free(g, n)) {
      for (ir::TensorId id : n.inputs) want = want || stored_nhwc(id);  // NHWC when any operand is: the segment goes on
      out_nhwc = want;
      for (size_t i = 0; i < n.inputs.size(); ++i) layout_inputs.push_back(i);
    } else if (n.op_type == "GlobalAveragePool" && detail::runtime_4d_float(g, n.inputs[0]) && stored_nhwc(n.inputs[0])) {
      want = true;  // reads NHWC; [N, C, 1, 1] out is the same bytes in both layouts
    } else {
      for (size_t i = 0; i < n.inputs.size(); ++i) layout_inputs.push_back(i);
    }
    for (size_t i : layout_inputs)
      if (i < n.inputs.size()) n.inputs[i] = in_layout(n.inputs[i], want);
    while (og.nhwc_nodes.size() < nodes.size()) og.nhwc_nodes.push_back(false);  // the reformats just inserted
    og.nhwc_nodes.push_back(want);
    if (out_nhwc)
      for (ir::TensorId o : n.outputs)
        if (detail::runtime_4d_float(g, o)) og.nhwc_tensors.insert(o);
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  if (is_auto) {
    int nhwc_convs = 0;
    for (const ir::Node& n : g.nodes)
      if (n.op_type == "Conv" && !n.outputs.empty() && og.nhwc_tensors.count(n.outputs[0])) ++nhwc_convs;
    if (og.reformats > 1 + nhwc_convs / 8) {
      g.nodes = std::move(saved_nodes);
      g.tensors.resize(saved_tensors);
      og.nhwc_tensors.clear();
      og.nhwc_nodes.clear();
      og.reformats = 0;
      og.stem_pools.clear();
      return Status::ok();
    }
  }
  if (!og.nhwc_tensors.empty()) og.layout = Layout::kNhwc;
  return Status::ok();
}

/// Stage 1b' (CudaBuildOptions::hwc8_input; TensorRT's kHWC8): each reformat to NHWC whose source has 1..7 channels
/// and whose output is read only as input 0 of dense Convs (group 1, constant float32 [K, C, R, S] weights) writes the
/// channels zero-padded to 8: its output tensor becomes [N, 8, H, W] (stored NHWC, 16-byte pixels) and each of those
/// Convs reads a new weight initializer zero-padded to [K, 8, R, S], so every sum is unchanged. bind_reformat sees the
/// channel counts differ and launches kernels::nchw_to_nhwc_pad_channels. Device-free; no error.
inline void pad_hwc8(OptimizedGraph& og) {
  ir::Graph& g = og.graph;
  std::map<ir::TensorId, ir::TensorId> padded;  // weight -> its padded copy (convs sharing a weight share the copy)
  for (size_t ri = 0; ri < g.nodes.size(); ++ri) {
    const ir::Node& r = g.nodes[ri];
    const ir::Attribute* a = r.find(kReformatAttr);
    if (!a || a->s != "nhwc" || r.inputs.size() != 1 || r.outputs.size() != 1) continue;
    const ir::TensorId out = r.outputs[0];
    const int64_t c = g.tensor(r.inputs[0]).shape[1];
    constexpr int64_t kPad = 8;
    if (c < 1 || c >= kPad) continue;
    std::vector<size_t> readers;
    bool only_convs = true;
    for (size_t i = 0; i < g.nodes.size() && only_convs; ++i)
      for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k) {
        if (g.nodes[i].inputs[k] != out) continue;
        const ir::Node& n = g.nodes[i];
        // a dense channels-last Conv (constant float32 [K, c, R, S] weights; their bytes were checked by ir::optimize)
        const bool dense = n.op_type == "Conv" && k == 0 && detail::nhwc_capable(g, n, false) && g.tensor(n.inputs[1]).shape[1] == c;
        if (!dense) {
          only_convs = false;
          break;
        }
        readers.push_back(i);
      }
    for (ir::TensorId o : g.outputs) only_convs = only_convs && o != out;
    if (!only_convs || readers.empty()) continue;
    // Padding multiplies the copy, the weights and the convs' work by up to 8: a model just inside the build limits
    // (core/limits.h) is left unpadded rather than pushed over them (the stage is an optimization, never a refusal).
    ir::Shape padded_shape = g.tensor(out).shape;
    padded_shape[1] = kPad;
    bool within = check_shape_within_limits(padded_shape, "hwc8 copy").is_ok();
    for (size_t i : readers) {
      const ir::Shape& w = g.tensor(g.nodes[i].inputs[1]).shape;
      const ir::Shape wp = {w[0], kPad, w[2], w[3]};
      const ir::Shape& y = g.tensor(g.nodes[i].outputs[0]).shape;
      const auto macs = checked_mul(shape_elements(y), kPad * w[2] * w[3]);
      within = within && check_shape_within_limits(wp, "hwc8 weight").is_ok() && check_work_within_limits(macs, "hwc8 conv").is_ok();
    }
    if (!within) continue;
    g.tensor(out).shape[1] = kPad;
    for (size_t i : readers) {
      if (auto it = padded.find(g.nodes[i].inputs[1]); it != padded.end()) {
        g.nodes[i].inputs[1] = it->second;
        continue;
      }
      const ir::TensorId wid = g.nodes[i].inputs[1];
      const ir::Tensor& w = g.tensor(wid);
      const int64_t kk = w.shape[0], rs = w.shape[2] * w.shape[3];
      ir::Tensor p;
      p.name = w.name + "/hwc8";
      p.dtype = ir::DType::kFloat32;
      p.shape = {kk, kPad, w.shape[2], w.shape[3]};
      p.shape_known = true;
      std::vector<float> v(static_cast<size_t>(kk * kPad * rs), 0.0f);
      const float* src = w.data_as<float>();
      for (int64_t o = 0; o < kk; ++o)
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t e = 0; e < rs; ++e) v[static_cast<size_t>((o * kPad + ci) * rs + e)] = src[(o * c + ci) * rs + e];
      p.data.emplace(v.size() * sizeof(float));
      std::memcpy(p.data->data(), v.data(), p.data->size());
      g.tensors.push_back(std::move(p));
      g.nodes[i].inputs[1] = padded[wid] = static_cast<ir::TensorId>(g.tensors.size() - 1);
    }
    ++og.hwc8_pads;
    og.hwc8_copies.insert(out);
  }
}

/// Stage 1b'' (CudaBuildOptions::hwc8_input_port; TensorRT's ITensor::setAllowedFormats(kHWC8) on a network input):
/// each graph input whose only reader is a reformat pad_hwc8 padded (OptimizedGraph::hwc8_copies), and that is no graph
/// output, is replaced in graph.inputs by that reformat's output (the padded copy: the producer writes it in
/// TensorFormat::kHWC8) and the reformat node is removed — one kernel less per enqueue. The model's input tensor stays in
/// the graph, read by nothing, for the port's name and logical shape (OptimizedGraph::hwc8_ports). og.reformats counts
/// the reformats left in the plan. Every other input is left as it is (format kLinear). Device-free; no error.
inline void port_hwc8(OptimizedGraph& og) {
  ir::Graph& g = og.graph;
  for (size_t slot = 0; slot < g.inputs.size(); ++slot) {
    const ir::TensorId x = g.inputs[slot];
    if (std::find(g.outputs.begin(), g.outputs.end(), x) != g.outputs.end()) continue;
    size_t reads = 0, reader = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ir::TensorId id : g.nodes[i].inputs)
        if (id == x) {
          ++reads;
          reader = i;
        }
    if (reads != 1) continue;  // unread, or read by another node too (it needs the linear tensor)
    const ir::Node& r = g.nodes[reader];
    const ir::Attribute* a = r.find(kReformatAttr);
    if (!a || a->s != "nhwc" || r.outputs.size() != 1 || !og.hwc8_copies.count(r.outputs[0])) continue;
    g.inputs[slot] = r.outputs[0];
    og.hwc8_ports[slot] = x;
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(reader));
    if (reader < og.nhwc_nodes.size()) og.nhwc_nodes.erase(og.nhwc_nodes.begin() + static_cast<std::ptrdiff_t>(reader));
    --og.reformats;
  }
}

/// Folds Relu / Clip (constant bounds) after a Conv — the Conv's output has a single consumer, is 4-D and is
/// not a graph output — into the Conv's epilogue: the Conv writes the activation's output; the activation
/// node disappears. Returns conv name -> the folded activation node.
inline std::map<std::string, ir::Node> fuse_conv_activations(ir::Graph& g) {
  std::map<std::string, ir::Node> fused;
  std::map<ir::TensorId, int> uses;
  std::map<ir::TensorId, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ir::TensorId in : g.nodes[i].inputs)
      if (in != ir::kNoTensor) uses[in]++;
    for (ir::TensorId o : g.nodes[i].outputs)
      if (o != ir::kNoTensor) producer[o] = i;
  }
  for (ir::TensorId o : g.outputs) uses[o] += 100;
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& act = g.nodes[i];
    if (act.op_type != "Relu" && act.op_type != "Clip") continue;
    auto p = producer.find(act.inputs[0]);
    if (p == producer.end() || uses[act.inputs[0]] != 1) continue;
    ir::Node& conv = g.nodes[p->second];
    if (conv.op_type != "Conv" || fused.count(conv.name) || g.tensor(act.inputs[0]).shape.size() != 4) continue;
    float lo = 0, hi = 0;
    if (act.op_type == "Clip" && !clip_bounds_constant(g, act, &lo, &hi)) continue;
    fused.emplace(conv.name, act);
    conv.outputs[0] = act.outputs[0];
    drop[i] = true;
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  return fused;
}

/// How many node inputs read each tensor; a graph output counts 100 more (it must be stored).
inline std::map<ir::TensorId, int> tensor_reads(const ir::Graph& g) {
  std::map<ir::TensorId, int> uses;
  for (const ir::Node& n : g.nodes)
    for (ir::TensorId in : n.inputs)
      if (in != ir::kNoTensor) uses[in]++;
  for (ir::TensorId o : g.outputs) uses[o] += 100;
  return uses;
}

namespace detail {
inline bool ints_are(const ir::Node& n, const char* k, std::initializer_list<int64_t> want, bool absent_ok) {
  const ir::Attribute* a = n.find(k);
  if (!a) return absent_ok;
  return a->ints == std::vector<int64_t>(want);
}
}  // namespace detail

/// Stage 1a' (CudaBuildOptions::fuse_stem_pool; kernels::stem7x7_maxpool, src/kernels/conv/stem_pool.h): node i a Conv
/// reading a graph input [1, 3, H, W] (7 <= H, W <= 16384) with a constant float32 weight [64, 3, 7, 7], an optional
/// constant bias, no residual, group 1, strides 2, pads 3 (explicit or absent auto_pad), dilations 1; its activation,
/// if folded (fuse_conv_activations), a Relu or Clip; its output read only by node i + 1 and no graph output; node i + 1
/// a MaxPool with kernel 3 × 3, strides 2, pads 1, dilations 1, ceil_mode 0, storage_order 0, no Indices output, writing
/// no graph output. Precision fp16, tactic sources warpstream and cudnn, not hwc8_input or debug_keep_all_tensors.
/// Returns the Convs' output tensors. Device-free.
inline std::set<ir::TensorId> stem_pools(const ir::Graph& g, const std::map<std::string, ir::Node>& fused_activation,
                                         const CudaBuildOptions& options) {
  std::set<ir::TensorId> r;
  if (!options.fuse_stem_pool || options.precision != Precision::kFloat16 || options.debug_keep_all_tensors || options.hwc8_input ||
      !(options.tactic_sources & kTacticWarpStream) || !(options.tactic_sources & kTacticCudnn))
    return r;
  const std::map<ir::TensorId, int> uses = tensor_reads(g);
  auto listed = [](const std::vector<ir::TensorId>& ids, ir::TensorId id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  for (size_t i = 0; i + 1 < g.nodes.size(); ++i) {
    const ir::Node& conv = g.nodes[i];
    const ir::Node& pool = g.nodes[i + 1];
    if (conv.op_type != "Conv" || pool.op_type != "MaxPool" || conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
    if (conv.inputs[0] == ir::kNoTensor || conv.inputs[1] == ir::kNoTensor || !listed(g.inputs, conv.inputs[0])) continue;
    const ir::Tensor& x = g.tensor(conv.inputs[0]);
    const ir::Tensor& w = g.tensor(conv.inputs[1]);
    if (x.is_constant() || x.dtype != ir::DType::kFloat32 || x.shape != ir::Shape{1, 3, x.shape.size() == 4 ? x.shape[2] : 0,
                                                                                  x.shape.size() == 4 ? x.shape[3] : 0})
      continue;
    if (x.shape[2] < 7 || x.shape[3] < 7 || x.shape[2] > 16384 || x.shape[3] > 16384) continue;
    if (!w.is_constant() || w.dtype != ir::DType::kFloat32 || w.shape != ir::Shape{64, 3, 7, 7}) continue;
    if (conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoTensor) {
      const ir::Tensor& b = g.tensor(conv.inputs[2]);
      if (!b.is_constant() || b.dtype != ir::DType::kFloat32 || b.elements() != 64) continue;
    }
    if (conv.inputs.size() > 3 && conv.inputs[3] != ir::kNoTensor) continue;  // a fused residual
    if (detail::attr_int(conv, "group", 1) != 1 || !detail::ints_are(conv, "strides", {2, 2}, false) ||
        !detail::ints_are(conv, "pads", {3, 3, 3, 3}, false) || !detail::ints_are(conv, "dilations", {1, 1}, true) ||
        !detail::ints_are(conv, "kernel_shape", {7, 7}, true))
      continue;
    if (const ir::Attribute* a = conv.find("auto_pad"); a && a->s != "NOTSET") continue;
    if (auto f = fused_activation.find(conv.name); f != fused_activation.end() && f->second.op_type != "Relu" && f->second.op_type != "Clip")
      continue;
    const ir::TensorId mid = conv.outputs[0];
    if (mid == ir::kNoTensor || pool.inputs.empty() || pool.inputs[0] != mid || listed(g.outputs, mid)) continue;
    if (auto u = uses.find(mid); u == uses.end() || u->second != 1) continue;
    if (pool.outputs.empty() || pool.outputs[0] == ir::kNoTensor || listed(g.outputs, pool.outputs[0])) continue;
    if (pool.outputs.size() > 1 && pool.outputs[1] != ir::kNoTensor) continue;
    if (!detail::ints_are(pool, "kernel_shape", {3, 3}, false) || !detail::ints_are(pool, "strides", {2, 2}, false) ||
        !detail::ints_are(pool, "pads", {1, 1, 1, 1}, false) || !detail::ints_are(pool, "dilations", {1, 1}, true) ||
        detail::attr_int(pool, "ceil_mode", 0) != 0 || detail::attr_int(pool, "storage_order", 0) != 0)
      continue;
    if (const ir::Attribute* a = pool.find("auto_pad"); a && a->s != "NOTSET") continue;
    const ir::Shape& y = g.tensor(pool.outputs[0]).shape;
    const int64_t ch = (x.shape[2] - 1) / 2 + 1, cw = (x.shape[3] - 1) / 2 + 1;
    if (y != ir::Shape{1, 64, (ch - 1) / 2 + 1, (cw - 1) / 2 + 1} || g.tensor(pool.outputs[0]).dtype != ir::DType::kFloat32) continue;
    r.insert(mid);
  }
  return r;
}

/// The MBConv fusions' common gate: half storage (the fused kernels are fp16), tactic source warpstream,
/// CudaBuildOptions::fuse_depthwise_pointwise, and not debug_keep_all_tensors (fused intermediates are never written).
inline bool mbconv_fusion_allowed(const CudaBuildOptions& options) {
  return options.fuse_depthwise_pointwise && !options.debug_keep_all_tensors && (options.tactic_sources & kTacticWarpStream) &&
         (options.precision == Precision::kFloat16 || options.precision == Precision::kFloat8);
}

/// A Conv's "group" attribute (1 when absent).
inline int64_t conv_group(const ir::Node& n) {
  const ir::Attribute* a = n.find("group");
  return a ? a->i : int64_t{1};
}

/// Stage 1c. The depthwise → pointwise pairs of MBConv blocks (EfficientNet, MobileNetV2) that bind_conv may run as
/// one fused kernel (kernels::conv2d_depthwise_pointwise) when its timing beats the two kernels: node i is a Conv with
/// a constant [M, C, 1, 1] weight and group 1 whose input 0 is written by node i − 1, a Conv with a constant
/// [C, 1, kh, kw] weight and group C on a [N, C, H, W] input, no fused residual, whose output only node i reads and
/// that is no graph output; both channels-first. Only with half storage (the kernel is fp16 wmma), tactic source
/// warpstream, CudaBuildOptions::fuse_depthwise_pointwise, and without debug_keep_all_tensors (the depthwise output
/// would never be written). Returns node i's names. Candidates only: strides, pads and the kernels' limits are
/// checked at bind (conv2d_depthwise_pointwise_applicable), and the pair stays two steps unless fusing is faster.
inline std::set<std::string> depthwise_pointwise_pairs(const OptimizedGraph& og, const CudaBuildOptions& options) {
  std::set<std::string> r;
  const ir::Graph& g = og.graph;
  if (!mbconv_fusion_allowed(options)) return r;
  std::map<ir::TensorId, int> uses = tensor_reads(g);
  auto nhwc = [&](size_t i) { return i < og.nhwc_nodes.size() && og.nhwc_nodes[i]; };
  auto const_weight = [&](const ir::Node& n) -> const ir::Shape* {
    if (n.inputs.size() < 2 || n.inputs[1] == ir::kNoTensor || !g.tensor(n.inputs[1]).is_constant()) return nullptr;
    const ir::Shape& w = g.tensor(n.inputs[1]).shape;
    return w.size() == 4 ? &w : nullptr;
  };
  for (size_t i = 1; i < g.nodes.size(); ++i) {
    const ir::Node& pw = g.nodes[i];
    const ir::Node& dw = g.nodes[i - 1];
    if (pw.op_type != "Conv" || dw.op_type != "Conv" || nhwc(i) || nhwc(i - 1) || pw.inputs.empty() || dw.inputs.empty() ||
        dw.outputs.size() != 1 || pw.inputs[0] != dw.outputs[0] || uses[dw.outputs[0]] != 1 || og.residual_convs.count(dw.name))
      continue;
    const ir::Shape* wp = const_weight(pw);
    const ir::Shape* wd = const_weight(dw);
    if (!wp || !wd || (*wp)[2] != 1 || (*wp)[3] != 1 || conv_group(pw) != 1) continue;
    if (dw.inputs[0] == ir::kNoTensor || g.tensor(dw.inputs[0]).shape.size() != 4) continue;
    const int64_t c = g.tensor(dw.inputs[0]).shape[1];
    if ((*wd)[0] != c || (*wd)[1] != 1 || conv_group(dw) != c || (*wp)[1] != c) continue;
    if (dw.inputs.size() > 2 && dw.inputs[2] != ir::kNoTensor && !g.tensor(dw.inputs[2]).is_constant()) continue;
    r.insert(pw.name);
  }
  return r;
}

/// Stage 1d. MBConv blocks (expand 1×1 → depthwise → project 1×1) that bind_conv may run as one cluster kernel
/// (kernels::conv2d_mbconv) when its timing beats the three kernels: node i is in og.depthwise_pointwise (so node i − 1 is
/// its depthwise Conv), and node i − 2 is a Conv with a constant [C, Cin, 1, 1] weight and group 1, channels-first, no
/// fused residual, whose output is node i − 1's input 0, read by nothing else and no graph output. Returns node i's
/// names. Candidates only: strides, pads, the kernel's shared-memory limit and compute capability 9.0 are checked at bind.
inline std::set<std::string> mbconv_blocks(const OptimizedGraph& og) {
  std::set<std::string> r;
  const ir::Graph& g = og.graph;
  if (og.depthwise_pointwise.empty()) return r;
  std::map<ir::TensorId, int> uses = tensor_reads(g);
  for (size_t i = 2; i < g.nodes.size(); ++i) {
    const ir::Node& ex = g.nodes[i - 2];
    const ir::Node& dw = g.nodes[i - 1];
    if (!og.depthwise_pointwise.count(g.nodes[i].name) || ex.op_type != "Conv" || ex.outputs.size() != 1 || ex.inputs.size() < 2 ||
        dw.inputs.empty() || dw.inputs[0] != ex.outputs[0] || uses[ex.outputs[0]] != 1 || og.residual_convs.count(ex.name) ||
        (i - 2 < og.nhwc_nodes.size() && og.nhwc_nodes[i - 2]))
      continue;
    if (ex.inputs[1] == ir::kNoTensor || !g.tensor(ex.inputs[1]).is_constant()) continue;
    const ir::Shape& w = g.tensor(ex.inputs[1]).shape;
    if (w.size() != 4 || w[2] != 1 || w[3] != 1 || conv_group(ex) != 1) continue;
    if (ex.inputs.size() > 2 && ex.inputs[2] != ir::kNoTensor && !g.tensor(ex.inputs[2]).is_constant()) continue;
    r.insert(g.nodes[i].name);
  }
  return r;
}

/// Stage 1e. The expand → depthwise pairs of MBConv blocks that bind_conv may run as one fused kernel
/// (kernels::conv2d_expand_depthwise) when its timing beats the two kernels: node i is a Conv with a constant
/// [C, 1, kh, kw] weight and group C, no fused residual, whose input 0 is written by node i − 1, a Conv with a constant
/// [C, Cin, 1, 1] weight and group 1, no fused residual, whose output only node i reads and that is no graph output;
/// both channels-first, constant biases. Gated like depthwise_pointwise_pairs (half storage, tactic source warpstream,
/// CudaBuildOptions::fuse_depthwise_pointwise, not debug_keep_all_tensors) and by CudaBuildOptions::fuse_expand_depthwise. Returns node i's names. Candidates only:
/// strides, pads and shared memory are checked at bind (conv2d_expand_depthwise_mismatch).
inline std::set<std::string> expand_depthwise_pairs(const OptimizedGraph& og, const CudaBuildOptions& options) {
  std::set<std::string> r;
  const ir::Graph& g = og.graph;
  if (!mbconv_fusion_allowed(options) || !options.fuse_expand_depthwise) return r;
  std::map<ir::TensorId, int> uses = tensor_reads(g);
  auto nhwc = [&](size_t i) { return i < og.nhwc_nodes.size() && og.nhwc_nodes[i]; };
  auto const_inputs = [&](const ir::Node& n) -> const ir::Shape* {  // constant weight (4-D) and bias, if any
    if (n.inputs.size() < 2 || n.inputs[1] == ir::kNoTensor || !g.tensor(n.inputs[1]).is_constant()) return nullptr;
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoTensor && !g.tensor(n.inputs[2]).is_constant()) return nullptr;
    const ir::Shape& w = g.tensor(n.inputs[1]).shape;
    return w.size() == 4 ? &w : nullptr;
  };
  for (size_t i = 1; i < g.nodes.size(); ++i) {
    const ir::Node& dw = g.nodes[i];
    const ir::Node& ex = g.nodes[i - 1];
    if (dw.op_type != "Conv" || ex.op_type != "Conv" || nhwc(i) || nhwc(i - 1) || dw.inputs.empty() || ex.inputs.empty() ||
        ex.outputs.size() != 1 || dw.inputs[0] != ex.outputs[0] || uses[ex.outputs[0]] != 1 || og.residual_convs.count(ex.name) ||
        og.residual_convs.count(dw.name))
      continue;
    const ir::Shape* we = const_inputs(ex);
    const ir::Shape* wd = const_inputs(dw);
    if (!we || !wd || (*we)[2] != 1 || (*we)[3] != 1 || conv_group(ex) != 1) continue;
    const int64_t c = (*we)[0];
    if ((*wd)[0] != c || (*wd)[1] != 1 || conv_group(dw) != c) continue;
    r.insert(dw.name);
  }
  return r;
}

/// Stage 1a (CudaBuildOptions::max_aux_streams >= 1, before the residual fusion): for each Add of two Conv outputs, each
/// read only by that Add, where the Conv later in node order (the "shortcut", e.g. ResNet's downsample, which
/// torchvision exports after the main branch) reads only tensors produced before the other Conv, the shortcut moves to
/// just after the last producer of its inputs. Topological order holds (its inputs exist there, its only reader is the
/// Add, later). ir::fuse_conv_residual_adds then folds the Add into the main branch's Conv, the later one now, with the
/// shortcut's output as the residual, and aux_branches finds the shortcut free to run beside the main branch. Returns
/// the moved nodes' names. Device-free.
inline std::vector<std::string> hoist_shortcut_convs(ir::Graph& g) {
  std::vector<std::string> moved;
  std::set<std::string> done;  // each Add is looked at once
  for (size_t pass = 0; pass <= g.nodes.size(); ++pass) {
    std::map<ir::TensorId, int> uses = tensor_reads(g);
    std::map<ir::TensorId, size_t> producer;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ir::TensorId o : g.nodes[i].outputs)
        if (o != ir::kNoTensor) producer[o] = i;
    auto conv_of = [&](ir::TensorId t) -> long {  // the Conv producing t, read only once (by the Add), or -1
      auto p = producer.find(t);
      if (t == ir::kNoTensor || p == producer.end() || uses[t] != 1) return -1;
      const ir::Node& n = g.nodes[p->second];
      return n.op_type == "Conv" && n.outputs.size() == 1 && n.inputs.size() <= 3 ? static_cast<long>(p->second) : -1;
    };
    auto ready = [&](size_t i) {  // 1 + the last producer of node i's runtime inputs (0: graph inputs / constants only)
      size_t r = 0;
      for (ir::TensorId in : g.nodes[i].inputs)
        if (in != ir::kNoTensor)
          if (auto p = producer.find(in); p != producer.end()) r = std::max(r, p->second + 1);
      return r;
    };
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size() && !changed; ++i) {
      const ir::Node& add = g.nodes[i];
      if (add.op_type != "Add" || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1] || !done.insert(add.name).second) continue;
      const long a = conv_of(add.inputs[0]), b = conv_of(add.inputs[1]);
      if (a < 0 || b < 0) continue;
      const size_t main = static_cast<size_t>(std::min(a, b)), shortcut = static_cast<size_t>(std::max(a, b));
      // The shortcut must be ready before the main Conv (else no branch could form), and not among the first two nodes,
      // which aux_branches never branches (the input wavefront's steps): the move would only change which Conv takes the Add.
      const size_t to = ready(shortcut);
      if (to >= main || to < 2) continue;
      ir::Node n = std::move(g.nodes[shortcut]);
      g.nodes.erase(g.nodes.begin() + static_cast<long>(shortcut));
      moved.push_back(n.name);
      g.nodes.insert(g.nodes.begin() + static_cast<long>(to), std::move(n));
      changed = true;
    }
    if (!changed) break;
  }
  return moved;
}

/// Stage 1f (CudaBuildOptions::max_aux_streams >= 1). The nodes that may run on the auxiliary stream: a Conv (not a
/// reformat), not a member of an MBConv fusion candidate (OptimizedGraph depthwise_pointwise / mbconv /
/// expand_depthwise, nor the node just before one), at index >= 2 (steps 0 and 1 may wait on the input wavefront), with
/// one output that is no graph output and whose first reader is two or more nodes later. In node order. Candidates
/// only: bind may keep one on the main stream (split-K tile counters). Device-free.
inline std::vector<AuxBranch> aux_branches(const OptimizedGraph& og, const CudaBuildOptions& options) {
  std::vector<AuxBranch> r;
  const ir::Graph& g = og.graph;
  if (options.max_aux_streams < 1 || options.debug_keep_all_tensors) return r;
  std::set<ir::TensorId> outputs(g.outputs.begin(), g.outputs.end());
  auto fused = [&](size_t i) {
    const std::string& n = g.nodes[i].name;
    return og.depthwise_pointwise.count(n) || og.mbconv.count(n) || og.expand_depthwise.count(n);
  };
  std::map<ir::TensorId, size_t> first_reader;  // tensor -> the first node reading it
  for (size_t j = 0; j < g.nodes.size(); ++j)
    for (ir::TensorId in : g.nodes[j].inputs)
      if (in != ir::kNoTensor) first_reader.emplace(in, j);
  for (size_t s = 2; s < g.nodes.size(); ++s) {
    const ir::Node& n = g.nodes[s];
    if (n.op_type != "Conv" || n.find(kReformatAttr) || n.outputs.size() != 1 || n.outputs[0] == ir::kNoTensor ||
        outputs.count(n.outputs[0]) || fused(s) || (s + 1 < g.nodes.size() && fused(s + 1)) || (s + 2 < g.nodes.size() && og.mbconv.count(g.nodes[s + 2].name)))
      continue;
    const auto reader = first_reader.find(n.outputs[0]);
    if (reader == first_reader.end() || reader->second < s + 2) continue;
    const size_t first = reader->second;
    r.push_back({s, first, n.name, g.nodes[first].name});
  }
  return r;
}

/// The element types a CUDA graph output may have: float32 (float16 inside in fp16 mode, cast back at the port)
/// and the integer / bool tensors the executor computes (comparisons, logic, Cast, shape-like ops), returned as
/// they are in the arena.
inline bool cuda_output_dtype(ir::DType d) {
  return d == ir::DType::kFloat32 || d == ir::DType::kFloat16 || d == ir::DType::kFloat64 || d == ir::DType::kInt64 || d == ir::DType::kInt32 ||
         d == ir::DType::kInt8 || d == ir::DType::kUInt8 || d == ir::DType::kBool;
}

/// Stage 1g. The pooled classifier heads (CudaBuildOptions::fuse_pooled_head): node i is a Gemm (transA = 0) or MatMul
/// with a constant 2-D weight whose input 0 [1, C] is the output of a GlobalAveragePool on a runtime [1, C, H, W]
/// tensor (no graph input), through zero or more Flatten / Reshape / Squeeze copies; the pool's output and each copy's
/// output have exactly one reader and are no graph outputs, and every node between the pool and node i is one of those
/// copies (they fold away in the arena: copy_aliases, so the pool's step is the one bound just before node i's). Tactic
/// source warpstream, not debug_keep_all_tensors. Keyed by node i's index. Candidates only: bind_gemm fuses when the
/// GEMV tactic won the Gemm's timing (kernels::pooled_gemv). Device-free.
inline std::map<size_t, PooledHead> pooled_heads(const OptimizedGraph& og, const CudaBuildOptions& options) {
  std::map<size_t, PooledHead> r;
  const ir::Graph& g = og.graph;
  if (!options.fuse_pooled_head || options.debug_keep_all_tensors || !(options.tactic_sources & kTacticWarpStream)) return r;
  const std::map<ir::TensorId, int> uses = tensor_reads(g);
  auto one_reader = [&](ir::TensorId id) { auto u = uses.find(id); return u != uses.end() && u->second == 1; };
  auto is_input = [&](ir::TensorId id) { return std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end(); };
  for (size_t i = 1; i < g.nodes.size(); ++i) {
    const ir::Node& mm = g.nodes[i];
    if (mm.op_type != "Gemm" && mm.op_type != "MatMul") continue;
    if (mm.inputs.size() < 2 || mm.inputs[0] == ir::kNoTensor || mm.inputs[1] == ir::kNoTensor) continue;
    if (mm.op_type == "Gemm" && mm.find("transA") && mm.find("transA")->i != 0) continue;
    const ir::Tensor& w = g.tensor(mm.inputs[1]);
    const ir::Shape& a = g.tensor(mm.inputs[0]).shape;
    if (!w.is_constant() || w.shape.size() != 2 || a.size() != 2 || a[0] != 1) continue;
    // Walk back through the copies to the pool: nodes i-1, i-2, ... must be exactly that chain.
    ir::TensorId t = mm.inputs[0];
    size_t j = i;
    bool ok = true;
    while (ok && j > 0) {
      const ir::Node& p = g.nodes[j - 1];
      if (p.outputs.empty() || p.outputs[0] != t || !one_reader(t) || p.inputs.empty() || p.inputs[0] == ir::kNoTensor || p.find(kReformatAttr)) {
        ok = false;
        break;
      }
      --j;
      if (p.op_type == "GlobalAveragePool") break;
      if (p.op_type != "Flatten" && p.op_type != "Reshape" && p.op_type != "Squeeze") ok = false;
      t = p.inputs[0];
    }
    if (!ok || g.nodes[j].op_type != "GlobalAveragePool") continue;
    const ir::Node& pool = g.nodes[j];
    const ir::TensorId x = pool.inputs[0];
    const ir::Tensor& xt = g.tensor(x);
    if (xt.is_constant() || is_input(x) || xt.shape.size() != 4 || xt.shape[0] != 1 || xt.shape[1] != a[1] || xt.dtype != ir::DType::kFloat32) continue;
    r[i] = PooledHead{j, x, og.nhwc_tensors.count(x) > 0};
  }
  return r;
}

/// Stage 1. Errors: kInvalidArgument for hwc8_input_port without hwc8_input, for a negative max_aux_streams, and for
/// precision fp8 without calibrated ranges (fp8_activation_amax empty);
/// ir::optimize's; kUnsupported for a non-float32 graph input or a graph output of another type than
/// cuda_output_dtype (naming the tensor). A graph output may be a constant (folded at build).
inline Result<OptimizedGraph> optimize_for_cuda(ir::Graph graph, const CudaBuildOptions& options) {
  if (options.hwc8_input_port && !options.hwc8_input)
    return invalid_argument("CudaBuildOptions::hwc8_input_port (bench --hwc8-port) needs hwc8_input (--hwc8): the kHWC8 input port "
                            "takes the copy hwc8_input pads to 8 channels; set both, or neither");
  if (options.max_aux_streams < 0)
    return invalid_argument("CudaBuildOptions::max_aux_streams = " + std::to_string(options.max_aux_streams) +
                            " (0: no auxiliary stream; 1 or more: one auxiliary stream for parallel branches)");
  if (options.precision == Precision::kFloat8 && options.fp8_activation_amax.empty())
    return invalid_argument("precision fp8 needs calibrated activation ranges: give --calibration DIR (a few representative images; "
                            "CudaBuildOptions::fp8_activation_amax is empty)");
  WS_RETURN_IF_ERROR(ir::optimize(graph));
  // Einsum runs as the Transpose / ReduceSum / Reshape / MatMul nodes it lowers to (einsum_lowering.h).
  WS_ASSIGN_OR_RETURN(int einsums, ir::lower_einsum(graph));
  if (einsums > 0) WS_RETURN_IF_ERROR(ir::infer_shapes(graph));
  for (ir::TensorId id : graph.inputs)
    if (graph.tensor(id).dtype != ir::DType::kFloat32)
      return unsupported(graph.source + ": graph input " + ::ws::quoted(graph.tensor(id).name) + " has element type " +
                         ir::dtype_name(graph.tensor(id).dtype) + "; only float32 inputs are supported");
  for (ir::TensorId id : graph.outputs)
    if (!cuda_output_dtype(graph.tensor(id).dtype))
      return unsupported(graph.source + ": graph output " + ::ws::quoted(graph.tensor(id).name) + " (" +
                         ir::dtype_name(graph.tensor(id).dtype) + ") must be float32, float16, float64, int64, int32, int8, uint8 or bool");
  OptimizedGraph r;
  if (!options.debug_keep_all_tensors && options.max_aux_streams >= 1) r.hoisted = hoist_shortcut_convs(graph);
  if (!options.debug_keep_all_tensors && options.fuse_residual) r.residual_convs = ir::fuse_conv_residual_adds(graph);
  if (!options.debug_keep_all_tensors) r.fused_activation = fuse_conv_activations(graph);
  r.stem_pools = stem_pools(graph, r.fused_activation, options);
  r.graph = std::move(graph);
  WS_RETURN_IF_ERROR(assign_layouts(r, options));
  if (options.hwc8_input) pad_hwc8(r);
  if (options.hwc8_input_port) port_hwc8(r);
  r.depthwise_pointwise = depthwise_pointwise_pairs(r, options);
  r.mbconv = mbconv_blocks(r);
  r.expand_depthwise = expand_depthwise_pairs(r, options);
  r.aux_branches = aux_branches(r, options);
  r.pooled_heads = pooled_heads(r, options);
  return r;
}

/// Stage 2. The nodes of `g` (OptimizedGraph::graph) as ONNX defines them: a Conv with a fused residual keeps its first 3
/// inputs, and a Conv's trailing omitted inputs beyond the weight are dropped. One entry per node, in order.
inline std::vector<ir::Node> onnx_view(const ir::Graph& g, const std::set<std::string>& residual_convs) {
  std::vector<ir::Node> view;
  view.reserve(g.nodes.size());
  for (const ir::Node& n : g.nodes) {
    view.push_back(n);
    view.back().attributes.erase(kReformatAttr);  // a reformat is analysed as the Identity it is
    if (residual_convs.count(n.name)) view.back().inputs.resize(3);
    while (view.back().inputs.size() > 2 && view.back().inputs.back() == ir::kNoTensor && n.op_type == "Conv")
      view.back().inputs.pop_back();
  }
  return view;
}

/// The byte copies the arena folds away (TensorRT's no-op shuffles): per tensor id of `g`, the tensor whose arena range
/// it shares, or ir::kNoTensor. Output 0 of a Reshape, Flatten, Squeeze, Unsqueeze, Identity or Dropout node (not a
/// layout reformat, which moves bytes: kReformatAttr) is its input 0's bytes unchanged (ops/views.h bind_device_copy),
/// so it takes input 0's range — resolved to the first tensor of a chain of copies — when both are runtime tensors of
/// the same byte size, the input is no graph input (its slot is the caller's port) and the output is no graph output
/// (an output keeps a slot of its own). The copy's step then has nothing to do and bind_steps drops it (one graph node
/// less per enqueue: ResNet-50's Flatten, EfficientNet-Lite0's Reshape before the classifier). Every reader of either
/// tensor keeps the shared range live (plan_cuda_arena), and no step writes a tensor it reads, so sharing is exact.
inline std::vector<ir::TensorId> copy_aliases(const ir::Graph& g) {
  std::vector<ir::TensorId> alias(g.tensors.size(), ir::kNoTensor);
  auto listed = [](const std::vector<ir::TensorId>& ids, ir::TensorId id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  for (const ir::Node& n : g.nodes) {
    static const std::set<std::string> kCopies = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
    if (!kCopies.count(n.op_type) || n.find(kReformatAttr) || n.inputs.empty() || n.outputs.empty()) continue;
    const ir::TensorId in = n.inputs[0], out = n.outputs[0];
    if (in == ir::kNoTensor || out == ir::kNoTensor || in == out) continue;
    const ir::Tensor& ti = g.tensor(in);
    const ir::Tensor& to = g.tensor(out);
    if (ti.is_constant() || to.is_constant() || ti.dtype != to.dtype || ti.elements() != to.elements() || ti.elements() <= 0) continue;
    if (listed(g.inputs, in) || listed(g.inputs, out) || listed(g.outputs, out)) continue;
    const ir::TensorId root = alias[static_cast<size_t>(in)] != ir::kNoTensor ? alias[static_cast<size_t>(in)] : in;
    alias[static_cast<size_t>(out)] = root;
  }
  return alias;
}

/// Stage 3. The arena over `g`'s runtime tensors, float32 ones stored as float16 when `half`. Normally
/// plan_arena's lifetime-based reuse, with the copies of copy_aliases sharing their input's range; with `keep_all_tensors` (CudaBuildOptions::debug_keep_all_tensors)
/// every runtime tensor a node or port touches gets its own 256-byte-aligned range, in tensor-id order.
/// `depthwise_pointwise` (OptimizedGraph): each named node may read, fused, the input of the depthwise Conv before it,
/// so that input lives until the named node (its range is never reused for the named node's output); the caller passes
/// the expand → depthwise pairs (OptimizedGraph::expand_depthwise) in the same set, as they read node i − 1's input too. `mbconv`
/// (OptimizedGraph): likewise for the input of the expand Conv two nodes before each named node. `pooled`
/// (OptimizedGraph::pooled_heads): each named head keeps its pool's input live until it runs.
inline ArenaPlan plan_cuda_arena(const ir::Graph& g, bool half, bool keep_all_tensors,
                                 const std::set<std::string>& depthwise_pointwise = {}, const std::set<std::string>& mbconv = {},
                                 const std::vector<AuxBranch>& aux = {}, const std::map<size_t, PooledHead>& pooled = {}) {
  ir::Graph shadow;
  shadow.nodes = g.nodes;
  for (size_t i = 1; i < shadow.nodes.size(); ++i) {
    if (depthwise_pointwise.count(g.nodes[i].name) && !g.nodes[i - 1].inputs.empty())
      shadow.nodes[i].inputs.push_back(g.nodes[i - 1].inputs[0]);
    if (i > 1 && mbconv.count(g.nodes[i].name) && !g.nodes[i - 2].inputs.empty())
      shadow.nodes[i].inputs.push_back(g.nodes[i - 2].inputs[0]);
  }
  // A pooled head (pooled_heads) may read its pool's input in the pool's place: that input lives until the head.
  for (const auto& [i, h] : pooled)
    if (i < shadow.nodes.size() && h.input != ir::kNoTensor) shadow.nodes[i].inputs.push_back(h.input);
  // An auxiliary-stream branch runs beside the main stream until its join: its inputs stay live until the join node
  // (so no step before the join overwrites them), as if the join node read them too.
  for (const AuxBranch& b : aux) {
    if (b.node >= b.join || b.join >= g.nodes.size()) continue;
    for (ir::TensorId in : g.nodes[b.node].inputs)
      if (in != ir::kNoTensor) shadow.nodes[b.join].inputs.push_back(in);
  }
  // Folded copies: every read of an aliased tensor is a read of its root (which so stays live until the last of
  // them), and the copy's own write of it is no write at all.
  const std::vector<ir::TensorId> alias = keep_all_tensors ? std::vector<ir::TensorId>(g.tensors.size(), ir::kNoTensor) : copy_aliases(g);
  auto root_of = [&alias](ir::TensorId id) { return id == ir::kNoTensor || alias[static_cast<size_t>(id)] == ir::kNoTensor ? id : alias[static_cast<size_t>(id)]; };
  for (ir::Node& n : shadow.nodes) {
    for (ir::TensorId& id : n.inputs) id = root_of(id);
    for (ir::TensorId& id : n.outputs)
      if (id != ir::kNoTensor && alias[static_cast<size_t>(id)] != ir::kNoTensor) id = ir::kNoTensor;
  }
  shadow.inputs = g.inputs;
  shadow.outputs = g.outputs;
  shadow.tensors.reserve(g.tensors.size());
  for (const ir::Tensor& t : g.tensors) {
    ir::Tensor s;
    s.name = t.name;
    s.shape = t.shape;
    s.shape_known = t.shape_known;
    s.dtype = t.dtype == ir::DType::kFloat32 && half ? ir::DType::kFloat16 : t.dtype;
    if (t.is_constant()) s.data = std::vector<std::byte>();  // marks constant (plan_arena skips it)
    shadow.tensors.push_back(std::move(s));
  }
  if (!keep_all_tensors) {
    ArenaPlan plan = plan_arena(shadow);
    for (size_t id = 0; id < alias.size(); ++id)
      if (alias[id] != ir::kNoTensor) plan.offsets[id] = plan.offsets[static_cast<size_t>(alias[id])];
    return plan;
  }
  ArenaPlan plan;
  plan.offsets.assign(g.tensors.size(), ArenaPlan::kNotInArena);
  std::vector<bool> used(g.tensors.size(), false);
  for (ir::TensorId id : g.inputs) used[static_cast<size_t>(id)] = true;
  for (const ir::Node& n : g.nodes) {
    for (ir::TensorId id : n.inputs)
      if (id != ir::kNoTensor) used[static_cast<size_t>(id)] = true;
    for (ir::TensorId id : n.outputs)
      if (id != ir::kNoTensor) used[static_cast<size_t>(id)] = true;
  }
  for (size_t id = 0; id < g.tensors.size(); ++id) {
    if (!used[id] || g.tensors[id].is_constant()) continue;
    plan.offsets[id] = plan.bytes;
    plan.bytes += arena_align_up(
        std::max<size_t>(tensor_bytes(shadow.tensors[id], ir::dtype_size(shadow.tensors[id].dtype)), 1));
  }
  plan.naive_bytes = plan.bytes;
  return plan;
}

namespace detail {
inline uint64_t fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}
inline uint64_t fnv(uint64_t h, const std::string& s) { return fnv(h, s.data(), s.size() + 1); }
}  // namespace detail

/// Hash (FNV-1a, 16 hex digits) of the optimised graph: structure, attributes, shapes and constant data —
/// the model part of the timing cache's identity.
inline std::string graph_hash(const ir::Graph& g) {
  using detail::fnv;
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, &g.opset, sizeof(g.opset));
  for (const ir::Node& n : g.nodes) {
    h = fnv(h, n.name);
    h = fnv(h, n.op_type);
    for (ir::TensorId id : n.inputs) h = fnv(h, &id, sizeof(id));
    for (ir::TensorId id : n.outputs) h = fnv(h, &id, sizeof(id));
    for (const auto& [k, a] : n.attributes) {
      h = fnv(h, k);
      h = fnv(h, &a.i, sizeof(a.i));
      h = fnv(h, &a.f, sizeof(a.f));
      h = fnv(h, a.s);
      h = fnv(h, a.ints.data(), a.ints.size() * 8);
      h = fnv(h, a.floats.data(), a.floats.size() * 4);
    }
  }
  for (const ir::Tensor& t : g.tensors) {
    h = fnv(h, &t.dtype, sizeof(t.dtype));
    h = fnv(h, t.shape.data(), t.shape.size() * 8);
    if (t.is_constant()) h = fnv(h, t.data->data(), t.data->size());
  }
  for (ir::TensorId id : g.inputs) h = fnv(h, &id, sizeof(id));
  for (ir::TensorId id : g.outputs) h = fnv(h, &id, sizeof(id));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ws::cudaexec
