// CUDA op-table entries: shape ops — the copies (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout;
// a device copy, or nothing when input and output share the arena range), Transpose and Concat.
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/build_stages.h"
#include "engine/cuda/op_util.h"
#include "engine/cuda/ops/views.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;

// ------------------------------------------------------------------------------------------------
// Copies (Reshape-like ops), Transpose, Concat

// An optional output nothing reads (a Dropout mask of a train-mode export: ViT, Swin) is simply not written.
bool output_is_read(const ir::Graph& g, ir::TensorId id) {
  for (ir::TensorId o : g.outputs)
    if (o == id) return true;
  for (const ir::Node& n : g.nodes)
    for (ir::TensorId i : n.inputs)
      if (i == id) return true;
  return false;
}

Status supports_copy(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  for (size_t i = 1; i < c.node.outputs.size(); ++i)
    if (c.node.outputs[i] != ir::kNoTensor && output_is_read(c.graph, c.node.outputs[i]))
      return refuse(c, "optional output " + std::to_string(i) + " (e.g. a Dropout mask) is read but not produced");
  return Status::ok();
}

Status supports_transpose(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (in_t(c, 0).shape.size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "rank above 8");
  return Status::ok();
}
Status bind_transpose(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> def(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) def[static_cast<size_t>(i)] = rank - 1 - i;
  const kernels::TransposeDims d = permuted_view(x, attr_is(c.node, "perm", def));
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::transpose(eb, io.in[0], io.out[0], d, st); };
  return Status::ok();
}

Status supports_concat(const BindContext& c) {
  for (size_t i = 0; i < c.node.inputs.size(); ++i) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  return Status::ok();
}
Status bind_concat(BindContext& c, Step& s) {
  // Channels-last (BindContext::nhwc; assign_layouts admits a 4-D concat on axis 1 only): the tensors are
  // [N, H, W, C] in memory, so it is the same copy on the physical shapes along their last axis.
  const bool nhwc = c.nhwc && out_shape(c).size() == 4;
  auto physical = [nhwc](const ir::Shape& x) { return nhwc ? ir::Shape{x[0], x[2], x[3], x[1]} : x; };
  const ir::Shape y = physical(out_shape(c));
  const int64_t rank = static_cast<int64_t>(y.size());
  int64_t axis = attr_i(c.node, "axis", 0);
  if (axis < 0) axis += rank;
  if (nhwc) {
    if (axis != 1) return internal_error(c.node.describe(c.graph.opset) + ": an NHWC Concat must be on the channel axis");
    axis = 3;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= y[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= y[static_cast<size_t>(i)];
  const size_t es = c.elem_bytes;
  const size_t dpitch = static_cast<size_t>(y[static_cast<size_t>(axis)] * inner) * es;
  std::vector<std::pair<size_t, size_t>> parts;  // (dst byte offset, row bytes)
  size_t off = 0;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const size_t row = static_cast<size_t>(physical(in_t(c, i).shape)[static_cast<size_t>(axis)] * inner) * es;
    parts.emplace_back(off, row);
    off += row;
  }
  s.kernels = static_cast<int>(parts.size());
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!parts[i].second || outer == 0) continue;
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(static_cast<char*>(io.out[0]) + parts[i].first, dpitch, io.in[i], parts[i].second,
                                                parts[i].second, static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, st));
    }
    return Status::ok();
  };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

std::vector<OpSample> copy_samples(const std::string& op) {
  if (op == "Reshape")
    return {{"Reshape_minus1", {runtime("x", {1, 6, 2, 2}), constant_i64("s", {2}, {4, -1})}, {sample_node("Reshape", {"x", "s"}, {"y"})}},
            {"Reshape_zero_copies_dim", {runtime("x", {2, 6, 2}), constant_i64("s", {3}, {0, 3, -1})}, {sample_node("Reshape", {"x", "s"}, {"y"})}}};
  if (op == "Flatten") return {single("Flatten_default", op, {1, 6, 2, 2}), single("Flatten_axis2", op, {2, 3, 2, 2}, {A::integer("axis", 2)})};
  if (op == "Squeeze")
    return {{"Squeeze_axes_input", {runtime("x", {1, 6, 1, 2}), constant_i64("ax", {1}, {2})}, {sample_node("Squeeze", {"x", "ax"}, {"y"})}},
            single("Squeeze_all_ones", op, {1, 6, 1, 2}),
            {"Squeeze_opset11_attribute", {runtime("x", {1, 6, 1, 2})}, {sample_node("Squeeze", {"x"}, {"y"}, {A::integers("axes", {0})})}, 11}};
  if (op == "Unsqueeze")
    return {{"Unsqueeze_axes_input", {runtime("x", {6, 2}), constant_i64("ax", {2}, {0, -1})}, {sample_node("Unsqueeze", {"x", "ax"}, {"y"})}},
            {"Unsqueeze_opset11_attribute", {runtime("x", {6, 2})}, {sample_node("Unsqueeze", {"x"}, {"y"}, {A::integers("axes", {1})})}, 11}};
  // Identity / Dropout: a chain that ends in a kernel (the copies may be folded away by the passes).
  std::vector<OpSample> r = {{op + "_then_Relu", {runtime("x", {2, 8})}, {sample_node(op, {"x"}, {"i"}), sample_node("Relu", {"i"}, {"y"})}},
                             single(op + "_alone", op, {2, 8})};
  if (op == "Dropout")  // a train-mode export with ratio 0 (ViT, Swin): a mask output nothing reads
    r.push_back({"Dropout_training_ratio0_unread_mask", {runtime("x", {2, 8}), constant_values("ratio", {}, {0.0f})},
                 {sample_node(op, {"x", "ratio", ""}, {"i", "mask"}, {}), sample_node("Relu", {"i"}, {"y"})}});
  return r;
}

std::vector<OpSample> transpose_samples(const std::string& op) {
  return {single("Transpose_0231", op, {1, 3, 4, 5}, {A::integers("perm", {0, 2, 3, 1})}),
          single("Transpose_default_reverse", op, {2, 3, 4})};
}

std::vector<OpSample> concat_samples(const std::string& op) {
  return {{"Concat_axis1", {runtime("a", {1, 3, 4, 5}), runtime("b", {1, 2, 4, 5})}, {sample_node(op, {"a", "b"}, {"y"}, {A::integer("axis", 1)})}},
          {"Concat_axis_minus1_three", {runtime("a", {2, 3}), runtime("b", {2, 1}), runtime("c", {2, 4})},
           {sample_node(op, {"a", "b", "c"}, {"y"}, {A::integer("axis", -1)})}},
          {"Concat_with_constant", {runtime("a", {2, 3}), constant("b", {1, 3})}, {sample_node(op, {"a", "b"}, {"y"}, {A::integer("axis", 0)})}}};
}

}  // namespace

std::vector<CudaOpDef> shape_ops() {
  return {
      {"Concat", -1, supports_concat, bind_concat, concat_samples},
      {"Dropout", 1, supports_copy, bind_device_copy, copy_samples},
      {"Flatten", 1, supports_copy, bind_device_copy, copy_samples},
      {"Identity", 1, supports_copy, bind_device_copy, copy_samples},
      {"Reshape", 1, supports_copy, bind_device_copy, copy_samples},
      {"Squeeze", 1, supports_copy, bind_device_copy, copy_samples},
      {"Transpose", 1, supports_transpose, bind_transpose, transpose_samples},
      {"Unsqueeze", 1, supports_copy, bind_device_copy, copy_samples},
  };
}

// A reformat node of assign_layouts (build_stages.h): NCHW -> NHWC ("nhwc") or NHWC -> NCHW ("nchw"), one
// transpose kernel; the tensor's logical shape stays [N, C, H, W]. A reformat to NHWC whose output has more channels
// than its input is pad_hwc8's (CudaBuildOptions::hwc8_input): NHWC with the channels zero-padded.
Status bind_reformat(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const bool to_nhwc = attr_s(c.node, kReformatAttr, "") == "nhwc";
  const ir::Shape& y = c.graph.tensor(c.node.outputs[0]).shape;
  if (to_nhwc && y.size() == 4 && y[1] != x[1]) {
    if (y[1] < x[1] || y[0] != x[0] || y[2] != x[2] || y[3] != x[3])
      return refuse(c, "reformat output " + ir::shape_string(y) + " does not pad input " + ir::shape_string(x) + " along channels");
    const int eb = static_cast<int>(c.elem_bytes);
    const int64_t n = x[0], ch = x[1], hw = x[2] * x[3], cp = y[1];
    s.op_type = "Reformat";
    c.tactics.push_back({c.node.name, "Reformat", "NCHW -> NHWC transpose, channels " + std::to_string(ch) + " zero-padded to " +
                         std::to_string(cp) + " (kHWC8), " + precision_name(c.precision), 0.0f, false});
    s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return kernels::nchw_to_nhwc_pad_channels(eb, io.in[0], io.out[0], n, ch, hw, cp, st);
    };
    return Status::ok();
  }
  const kernels::TransposeDims d = to_nhwc ? permuted_view(x, {0, 2, 3, 1}) : permuted_view({x[0], x[2], x[3], x[1]}, {0, 3, 1, 2});
  const int eb = static_cast<int>(c.elem_bytes);
  s.op_type = "Reformat";
  c.tactics.push_back({c.node.name, "Reformat", std::string(to_nhwc ? "NCHW -> NHWC" : "NHWC -> NCHW") + " transpose, " + precision_name(c.precision),
                       0.0f, false});
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::transpose(eb, io.in[0], io.out[0], d, st); };
  return Status::ok();
}

}  // namespace ws::cudaexec
