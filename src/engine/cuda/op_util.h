#pragma once
/// \file op_util.h
/// Helpers shared by the CUDA op-table entries (src/engine/cuda/ops/*.cpp): refusing a node with its
/// description, operand / attribute access, the 2-D window (Conv / pool) of a node that passed analyze_node,
/// and the 256-byte alignment of arena and workspace ranges.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/cuda/cuda_ops.h"

namespace ws::cudaexec {

constexpr size_t kAlign = 256;
inline size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

inline Status refuse(const BindContext& c, const std::string& why) {
  return unsupported(c.node.describe(c.graph.opset) + ": not supported by the CUDA executor: " + why);
}
inline const ir::Tensor& in_t(const BindContext& c, size_t i) { return c.graph.tensor(c.node.inputs[i]); }
inline const ir::Shape& out_shape(const BindContext& c, size_t i = 0) { return c.analyzed.output_shapes[i]; }
inline bool has_in(const BindContext& c, size_t i) { return i < c.node.inputs.size() && c.node.inputs[i] != ir::kNoTensor; }

inline Status require_runtime_float(const BindContext& c, size_t i) {
  const ir::Tensor& t = in_t(c, i);
  if (t.dtype != ir::DType::kFloat32) return refuse(c, "input " + std::to_string(i) + " has element type " + ir::dtype_name(t.dtype) + " (float32 only)");
  return Status::ok();
}
inline Status ok_float0(const BindContext& c) { return require_runtime_float(c, 0); }

/// The element type the executor stores a tensor of `dtype` in: float32 in the activation type (float16 in
/// fp16 mode), anything else as it is (bool one byte, int64 eight).
inline kernels::ElemType stored_type(const BindContext& c, ir::DType dtype) {
  return dtype == ir::DType::kFloat32 ? c.elem : dtype;
}

/// Binds every constant input of the node as a device copy in its stored type (BindContext::upload_stored), for
/// entries with data_inputs 0 whose operands may be of any element type.
inline Status bind_constant_inputs(BindContext& c, Step& s) {
  for (size_t k = 0; k < c.node.inputs.size(); ++k) {
    if (!has_in(c, k) || !in_t(c, k).is_constant()) continue;
    WS_ASSIGN_OR_RETURN(const void* p, c.upload_stored(c.node.inputs[k]));
    s.inputs[k] = Operand{Operand::Kind::kConst, 0, p};
  }
  return Status::ok();
}

/// numpy broadcasting of `s` into `rank` output dims: element strides per output dim, 0 on broadcast dims.
inline void broadcast_strides(const ir::Shape& s, int rank, int64_t* out) {
  int64_t st = 1;
  for (int k = rank - 1, j = static_cast<int>(s.size()) - 1; k >= 0; --k, --j) {
    out[k] = (j < 0 || s[static_cast<size_t>(j)] == 1) ? 0 : st;
    if (j >= 0) st *= s[static_cast<size_t>(j)];
  }
}
/// numpy broadcasting of `a` and `b` into `y`. kUnsupported above rank 6.
inline Result<kernels::BroadcastDims> broadcast_dims(const ir::Shape& a, const ir::Shape& b, const ir::Shape& y) {
  kernels::BroadcastDims d;
  if (y.size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return unsupported("rank above 8");
  d.rank = static_cast<int>(y.size());
  for (int k = 0; k < d.rank; ++k) d.y_dims[k] = y[static_cast<size_t>(k)];
  broadcast_strides(a, d.rank, d.a_strides);
  broadcast_strides(b, d.rank, d.b_strides);
  return d;
}

/// A build-time timing for tactic strings: one decimal ("7.2"), µs implied by the caller's text.
inline std::string us1(float us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", us);
  return b;
}

inline int64_t attr_i(const ir::Node& n, const char* k, int64_t d) { const auto* a = n.find(k); return a ? a->i : d; }
inline float attr_f(const ir::Node& n, const char* k, float d) { const auto* a = n.find(k); return a ? a->f : d; }
inline std::vector<int64_t> attr_is(const ir::Node& n, const char* k, std::vector<int64_t> d) { const auto* a = n.find(k); return a ? a->ints : d; }
inline std::string attr_s(const ir::Node& n, const char* k, std::string d) { const auto* a = n.find(k); return a ? a->s : d; }

// Spatial window of a 2-D Conv / pool (the node passed analyze_node, so values are valid).
struct Window2d { int64_t k[2], s[2], d[2], pb[2], pe[2]; };
inline Window2d window_of(const ir::Node& n, const ir::Shape& x, const ir::Shape& y, const std::vector<int64_t>& kernel) {
  Window2d w{};
  auto strides = attr_is(n, "strides", {1, 1}), dil = attr_is(n, "dilations", {1, 1}), pads = attr_is(n, "pads", {0, 0, 0, 0});
  const std::string ap = attr_s(n, "auto_pad", "NOTSET");
  for (int i = 0; i < 2; ++i) {
    w.k[i] = kernel[i]; w.s[i] = strides[i]; w.d[i] = dil[i];
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      const int64_t eff = (w.k[i] - 1) * w.d[i] + 1;
      const int64_t total = std::max<int64_t>(0, (y[i + 2] - 1) * w.s[i] + eff - x[i + 2]);
      w.pb[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[i] = total - w.pb[i];
    } else if (ap == "VALID") {
      w.pb[i] = w.pe[i] = 0;
    } else {
      w.pb[i] = pads[i]; w.pe[i] = pads[i + 2];
    }
  }
  return w;
}

// Spatial window of an N-d Conv / pool (1..3 spatial dims; the node passed analyze_node), as rank 3 with
// leading identity axes (extent 1, kernel 1, stride 1, no pads) — the layout of kernels::ConvNdGeometry.
struct WindowNd { int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3]; };
inline WindowNd window_nd(const ir::Node& n, const ir::Shape& x, const ir::Shape& y, const std::vector<int64_t>& kernel) {
  const size_t r = x.size() - 2, lead = 3 - r;
  WindowNd w{};
  const std::vector<int64_t> ones(r, 1);
  auto strides = attr_is(n, "strides", ones), dil = attr_is(n, "dilations", ones), pads = attr_is(n, "pads", std::vector<int64_t>(2 * r, 0));
  const std::string ap = attr_s(n, "auto_pad", "NOTSET");
  for (size_t a = 0; a < 3; ++a) {
    w.in[a] = w.out[a] = w.k[a] = w.s[a] = w.d[a] = 1;
    w.pb[a] = w.pe[a] = 0;
    if (a < lead) continue;
    const size_t i = a - lead;
    w.in[a] = x[i + 2]; w.out[a] = y[i + 2]; w.k[a] = kernel[i]; w.s[a] = strides[i]; w.d[a] = dil[i];
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      const int64_t eff = (w.k[a] - 1) * w.d[a] + 1;
      const int64_t total = std::max<int64_t>(0, (w.out[a] - 1) * w.s[a] + eff - w.in[a]);
      w.pb[a] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[a] = total - w.pb[a];
    } else if (ap != "VALID") {
      w.pb[a] = pads[i]; w.pe[a] = pads[i + r];
    }
  }
  return w;
}

// ---- OpSample builders (the consistency-test forms each family file lists) ----
inline OpSampleTensor runtime(std::string name, std::vector<int64_t> shape) {
  return {std::move(name), std::move(shape), OpSampleTensor::Kind::kRuntime, {}, {}, 1.0f, false};
}
/// A random float32 constant, uniform in [-scale, scale) (|v| >= 0.5 when nonzero).
inline OpSampleTensor constant(std::string name, std::vector<int64_t> shape, float scale = 1.0f, bool nonzero = false) {
  return {std::move(name), std::move(shape), OpSampleTensor::Kind::kConstant, {}, {}, scale, nonzero};
}
inline OpSampleTensor constant_values(std::string name, std::vector<int64_t> shape, std::vector<float> v) {
  return {std::move(name), std::move(shape), OpSampleTensor::Kind::kConstant, std::move(v), {}, 1.0f, false};
}
inline OpSampleTensor constant_i64(std::string name, std::vector<int64_t> shape, std::vector<int64_t> v) {
  return {std::move(name), std::move(shape), OpSampleTensor::Kind::kConstantInt64, {}, std::move(v), 1.0f, false};
}
inline OpSampleTensor constant_bool(std::string name, std::vector<int64_t> shape, std::vector<int64_t> v) {
  return {std::move(name), std::move(shape), OpSampleTensor::Kind::kConstantBool, {}, std::move(v), 1.0f, false};
}
inline OpSampleNode sample_node(std::string op, std::vector<std::string> in, std::vector<std::string> out,
                                std::vector<OpSampleAttr> attrs = {}) {
  return {std::move(op), std::move(in), std::move(out), std::move(attrs)};
}
/// x (runtime, `shape`) -> op(attrs) -> y.
inline OpSample single(std::string label, const std::string& op, std::vector<int64_t> shape,
                       std::vector<OpSampleAttr> attrs = {}, int64_t opset = 13) {
  return {std::move(label), {runtime("x", std::move(shape))}, {sample_node(op, {"x"}, {"y"}, std::move(attrs))}, opset};
}

}  // namespace ws::cudaexec
