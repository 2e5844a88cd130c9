// CUDA op-table entries (issue 14): Gather and GatherElements (indices fixed at build), Slice and Expand (strided copies
// through kernels::transpose: a base offset plus per-axis strides, 0 on broadcast axes, step·stride on
// sliced axes), Split (one cudaMemcpy2DAsync per output), Tile, Cast / CastLike between float32, int64, int32, int8,
// uint8 and bool (kernels/elementwise/logic.h), and
// Resize (nearest / linear / cubic of the last two axes; half_pixel, pytorch_half_pixel, align_corners, asymmetric)
// and Upsample-7/9,
// Pad in constant mode (a standalone Pad; one before a Conv is folded into it by ir::optimize), and
// DepthToSpace / SpaceToDepth (a 6-D transpose).
// Kernels: src/kernels/indexing/indexing.cu, src/kernels/elementwise/elementwise.cu (transpose).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <climits>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/op_util.h"
#include "kernels/elementwise/logic.h"
#include "kernels/indexing/indexing.h"

namespace ws::cudaexec {
namespace {

using kernels::ElemType;

std::vector<int64_t> contiguous_strides(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i)
    st[static_cast<size_t>(i)] = st[static_cast<size_t>(i + 1)] * s[static_cast<size_t>(i + 1)];
  return st;
}

Result<std::vector<int64_t>> const_ints(const BindContext& c, size_t i) {
  if (!has_in(c, i)) return std::vector<int64_t>{};
  const ir::Tensor& t = in_t(c, i);
  if (!t.is_constant()) return refuse(c, "input " + std::to_string(i) + " must be known at build");
  if (t.dtype == ir::DType::kInt64) return std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + t.elements());
  if (t.dtype == ir::DType::kInt32) return std::vector<int64_t>(t.data_as<int32_t>(), t.data_as<int32_t>() + t.elements());
  return refuse(c, "input " + std::to_string(i) + " has element type " + ir::dtype_name(t.dtype) + " (int64 or int32)");
}

Status supports_rank6(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (in_t(c, 0).shape.size() > static_cast<size_t>(kernels::kMaxBroadcastRank) ||
      out_shape(c).size() > static_cast<size_t>(kernels::kMaxBroadcastRank))
    return refuse(c, "rank above 8");
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Gather: x viewed [outer, axis_len, inner]; indices normalised at build and uploaded as int32 (their bits
// carried in a float32 upload, which copies bytes unchanged).

Status supports_gather(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  const ir::Tensor& idx = in_t(c, 1);
  if (!idx.is_constant() || (idx.dtype != ir::DType::kInt64 && idx.dtype != ir::DType::kInt32))
    return refuse(c, "indices must be an int64/int32 constant");
  const ir::Shape& x = in_t(c, 0).shape;
  int64_t axis = attr_i(c.node, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  if (x[static_cast<size_t>(axis)] > INT32_MAX) return refuse(c, "gathered axis longer than 2^31 - 1");
  return Status::ok();
}

Status bind_gather(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  int64_t axis = attr_i(c.node, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.size(); ++i) inner *= x[i];
  const int64_t len = x[static_cast<size_t>(axis)];
  WS_ASSIGN_OR_RETURN(std::vector<int64_t> idx, const_ints(c, 1));
  std::vector<float> bits(std::max<size_t>(idx.size(), 1));
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t v = idx[j] < 0 ? idx[j] + len : idx[j];
    if (v < 0 || v >= len) return refuse(c, "index " + std::to_string(idx[j]) + " is outside [-" + std::to_string(len) + ", " + std::to_string(len) + ")");
    bits[j] = std::bit_cast<float>(static_cast<int32_t>(v));
  }
  WS_ASSIGN_OR_RETURN(const void* d_idx, c.upload_values(bits, true));
  const auto* indices = static_cast<const int32_t*>(d_idx);
  const int64_t count = static_cast<int64_t>(idx.size());
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::gather(eb, io.in[0], io.out[0], indices, outer, len, count, inner, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// GatherElements: indices (known at build, the shape of y) normalised and uploaded as int32 bits.

Status supports_gather_elements(const BindContext& c) {
  WS_RETURN_IF_ERROR(supports_rank6(c));
  const ir::Tensor& idx = in_t(c, 1);
  if (!idx.is_constant() || (idx.dtype != ir::DType::kInt64 && idx.dtype != ir::DType::kInt32))
    return refuse(c, "indices must be an int64/int32 constant");
  if (in_t(c, 0).shape.empty()) return refuse(c, "scalar input");
  for (int64_t d : in_t(c, 0).shape)
    if (d > INT32_MAX) return refuse(c, "an axis longer than 2^31 - 1");
  return Status::ok();
}

Status bind_gather_elements(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = attr_i(c.node, "axis", 0);
  if (axis < 0) axis += rank;
  const int64_t len = x[static_cast<size_t>(axis)];
  WS_ASSIGN_OR_RETURN(std::vector<int64_t> idx, const_ints(c, 1));
  if (static_cast<int64_t>(idx.size()) != shape_elements(y)) return refuse(c, "indices do not have the output's element count");
  std::vector<float> bits(std::max<size_t>(idx.size(), 1));
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t v = idx[j] < 0 ? idx[j] + len : idx[j];
    if (v < 0 || v >= len) return refuse(c, "index " + std::to_string(idx[j]) + " is outside [-" + std::to_string(len) + ", " + std::to_string(len) + ")");
    bits[j] = std::bit_cast<float>(static_cast<int32_t>(v));
  }
  WS_ASSIGN_OR_RETURN(const void* d_idx, c.upload_values(bits, true));
  const auto* indices = static_cast<const int32_t*>(d_idx);
  const std::vector<int64_t> xs = contiguous_strides(x);
  kernels::GatherElementsDims d;
  d.rank = static_cast<int>(rank);
  d.axis = static_cast<int>(axis);
  for (int64_t k = 0; k < rank; ++k) {
    d.y_dims[k] = y[static_cast<size_t>(k)];
    d.x_strides[k] = xs[static_cast<size_t>(k)];
  }
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::gather_elements(eb, io.in[0], io.out[0], indices, d, st); };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Slice (opset >= 10: starts/ends/axes/steps inputs; earlier: attributes). The output extents come from
// analyze_node; the first element per axis follows the spec's clamping.

Status bind_slice(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> starts, axes, steps;
  if (c.graph.opset < 10) {
    starts = attr_is(c.node, "starts", {});
    axes = attr_is(c.node, "axes", {});
  } else {
    WS_ASSIGN_OR_RETURN(starts, const_ints(c, 1));
    WS_ASSIGN_OR_RETURN(axes, const_ints(c, 3));
    WS_ASSIGN_OR_RETURN(steps, const_ints(c, 4));
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  for (size_t k = 0; k < axes.size() && k < starts.size(); ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    const int64_t dim = x[static_cast<size_t>(a)];
    const int64_t st = steps.empty() ? 1 : steps[k];
    if (st == 0) return refuse(c, "step 0");
    int64_t b = starts[k] < 0 ? starts[k] + dim : starts[k];
    b = st > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, std::max<int64_t>(dim - 1, 0));
    first[static_cast<size_t>(a)] = b;
    step[static_cast<size_t>(a)] = st;
  }
  const std::vector<int64_t> xs = contiguous_strides(x);
  kernels::TransposeDims d;
  d.rank = static_cast<int>(rank);
  int64_t base = 0;
  for (int64_t k = 0; k < rank; ++k) {
    d.y_dims[k] = y[static_cast<size_t>(k)];
    d.x_strides[k] = xs[static_cast<size_t>(k)] * step[static_cast<size_t>(k)];
    base += first[static_cast<size_t>(k)] * xs[static_cast<size_t>(k)];
  }
  const int64_t count = shape_elements(y);
  const size_t offset = static_cast<size_t>(base) * c.elem_bytes;
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    if (count == 0) return Status::ok();
    return kernels::transpose(eb, static_cast<const char*>(io.in[0]) + offset, io.out[0], d, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Expand: x broadcast into y (stride 0 on broadcast axes).

Status bind_expand(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const int64_t count = shape_elements(y);
  const size_t bytes = static_cast<size_t>(count) * c.elem_bytes;
  const int eb = static_cast<int>(c.elem_bytes);
  if (y.empty()) {  // scalar to scalar
    s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      if (io.in[0] != io.out[0]) WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.out[0], io.in[0], bytes, cudaMemcpyDeviceToDevice, st));
      return Status::ok();
    };
    return Status::ok();
  }
  kernels::TransposeDims d;
  d.rank = static_cast<int>(y.size());
  int64_t st = 1;
  for (int k = d.rank - 1, j = static_cast<int>(x.size()) - 1; k >= 0; --k, --j) {
    d.y_dims[k] = y[static_cast<size_t>(k)];
    d.x_strides[k] = (j < 0 || x[static_cast<size_t>(j)] == 1) ? 0 : st;
    if (j >= 0) st *= x[static_cast<size_t>(j)];
  }
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t stream) {
    if (count == 0) return Status::ok();
    return kernels::transpose(eb, io.in[0], io.out[0], d, stream);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Tile

Status bind_tile(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  if (x.empty()) return refuse(c, "scalar input");
  kernels::TileDims d;
  d.rank = static_cast<int>(x.size());
  for (int k = 0; k < d.rank; ++k) { d.x_dims[k] = x[static_cast<size_t>(k)]; d.y_dims[k] = y[static_cast<size_t>(k)]; }
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::tile(eb, io.in[0], io.out[0], d, st); };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Split: output k takes rows [off_k, off_k + len_k) of the axis (lengths from analyze_node).

Status bind_split(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = attr_i(c.node, "axis", 0);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x[static_cast<size_t>(i)];
  const size_t es = c.elem_bytes;
  const size_t spitch = static_cast<size_t>(x[static_cast<size_t>(axis)] * inner) * es;
  std::vector<std::pair<size_t, size_t>> parts;  // (src byte offset in a row, row bytes)
  size_t off = 0;
  for (size_t k = 0; k < c.node.outputs.size(); ++k) {
    const bool known = k < c.analyzed.output_shapes.size() && static_cast<size_t>(axis) < c.analyzed.output_shapes[k].size();
    if (!known) return refuse(c, "output " + std::to_string(k) + " has no inferred shape");
    const size_t row = static_cast<size_t>(c.analyzed.output_shapes[k][static_cast<size_t>(axis)] * inner) * es;
    parts.emplace_back(off, row);
    off += row;
  }
  s.kernels = static_cast<int>(parts.size());
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k >= io.out.size() || !io.out[k] || !parts[k].second || outer == 0) continue;
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(io.out[k], parts[k].second, static_cast<const char*>(io.in[0]) + parts[k].first, spitch,
                                                parts[k].second, static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, st));
    }
    return Status::ok();
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Cast (and CastLike) between the executor's element types: float32 (stored in the activation type), int64,
// int32, int8, uint8, bool (kernels::cast_elements, ref::cast's rules); float32 to float32 is a copy.

Status supports_cast(const BindContext& c) {
  const ir::DType from = in_t(c, 0).dtype, to = c.analyzed.output_dtypes[0];
  // float16 tensors (a model's own Cast to / from float16) are stored as float16 in either engine precision.
  for (ir::DType t : {from, to})
    if (!kernels::cast_supported(t))
      return refuse(c, "Cast from " + std::string(ir::dtype_name(from)) + " to " + ir::dtype_name(to) +
                           " (float32, float16, float64, int64, int32, int8, uint8, bool)");
  return Status::ok();
}

Status bind_cast(BindContext& c, Step& s) {
  WS_RETURN_IF_ERROR(bind_constant_inputs(c, s));
  const ElemType from = stored_type(c, in_t(c, 0).dtype), to = stored_type(c, c.analyzed.output_dtypes[0]);
  const int64_t count = in_t(c, 0).elements();
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::cast_elements(from, io.in[0], to, io.out[0], count, st); };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// DepthToSpace (DCR / CRD) and SpaceToDepth: one 6-D transpose of a reshaped view (as the CPU op table).

Status bind_depth_space(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  if (x.size() != 4) return refuse(c, "input must be N×C×H×W");
  const int64_t b = attr_i(c.node, "blocksize", 1);
  const int64_t n = x[0], ch = x[1], h = x[2], w = x[3];
  std::vector<int64_t> view, perm;
  if (c.node.op_type == "DepthToSpace") {
    const int64_t co = ch / (b * b);
    if (attr_s(c.node, "mode", "DCR") == "CRD") { view = {n, co, b, b, h, w}; perm = {0, 1, 4, 2, 5, 3}; }
    else { view = {n, b, b, co, h, w}; perm = {0, 3, 4, 1, 5, 2}; }
  } else {
    view = {n, ch, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
  }
  std::vector<int64_t> vs(6, 1);
  for (int i = 4; i >= 0; --i) vs[static_cast<size_t>(i)] = vs[static_cast<size_t>(i + 1)] * view[static_cast<size_t>(i + 1)];
  kernels::TransposeDims d;
  d.rank = 6;
  for (int k = 0; k < 6; ++k) {
    d.y_dims[k] = view[static_cast<size_t>(perm[static_cast<size_t>(k)])];
    d.x_strides[k] = vs[static_cast<size_t>(perm[static_cast<size_t>(k)])];
  }
  const int64_t count = shape_elements(x);
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    if (count == 0) return Status::ok();
    return kernels::transpose(eb, io.in[0], io.out[0], d, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Pad, modes constant / reflect / edge (opset < 11: pads / value attributes; 11+: pads input, optional
// constant_value input).

Status supports_pad(const BindContext& c) {
  WS_RETURN_IF_ERROR(supports_rank6(c));
  const std::string mode = attr_s(c.node, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") return refuse(c, "mode '" + mode + "'");
  if (in_t(c, 0).shape.empty()) return refuse(c, "scalar input");
  if (c.graph.opset >= 11 && has_in(c, 2)) {
    const ir::Tensor& v = in_t(c, 2);
    if (!v.is_constant() || v.dtype != ir::DType::kFloat32 || v.elements() != 1) return refuse(c, "constant_value must be a float32 constant scalar");
  }
  if (has_in(c, 3)) return refuse(c, "the axes input (opset 18)");
  return Status::ok();
}

Status bind_pad(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const size_t r = x.size();
  std::vector<int64_t> pads;
  float value = 0.0f;
  if (c.graph.opset < 11) {
    pads = attr_is(c.node, "pads", {});
    value = attr_f(c.node, "value", 0.0f);
  } else {
    WS_ASSIGN_OR_RETURN(pads, const_ints(c, 1));
    if (has_in(c, 2)) value = *in_t(c, 2).data_as<float>();
  }
  if (pads.size() != 2 * r) return refuse(c, "pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(r));
  kernels::PadDims d;
  d.rank = static_cast<int>(r);
  // Channels-last (BindContext::nhwc; 4-D only): memory axis k holds logical axis axes[k] of [N, C, H, W].
  const bool nhwc = c.nhwc && r == 4;
  for (size_t k = 0; k < r; ++k) {
    const size_t a = nhwc ? std::array<size_t, 4>{0, 2, 3, 1}[k] : k;
    d.x_dims[k] = x[a];
    d.y_dims[k] = y[a];
    d.begin[k] = pads[a];
  }
  const std::string mode_s = attr_s(c.node, "mode", "constant");
  const kernels::PadMode mode = mode_s == "reflect" ? kernels::PadMode::kReflect
                                : mode_s == "edge"  ? kernels::PadMode::kEdge
                                                    : kernels::PadMode::kConstant;
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::pad(et, mode, io.in[0], io.out[0], d, value, st); };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// ScatterND-11/13/16 (reduction none; indices an int64 constant, as the analyzer requires): y = data, then each
// update slice written at its target. The target slices' element offsets are computed here; two updates of one
// slice are refused (parallel writes would race; the CPU reference applies them in order).

struct ScatterPlan { std::vector<int64_t> offsets; int64_t slice = 1; };
Result<ScatterPlan> scatter_plan(const BindContext& c) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Tensor& it = in_t(c, 1);
  if (!it.is_constant() || it.dtype != ir::DType::kInt64 || it.shape.empty()) return refuse(c, "indices must be an int64 constant");
  const int64_t k = it.shape.back(), r = static_cast<int64_t>(x.size());
  if (k < 1 || k > r) return refuse(c, "indices' last dimension out of range");
  ScatterPlan p;
  for (int64_t a = k; a < r; ++a) p.slice *= x[static_cast<size_t>(a)];
  const std::vector<int64_t> strides = contiguous_strides(x);
  const int64_t n = it.elements() / k;
  const int64_t* v = it.data_as<int64_t>();
  std::set<int64_t> seen;
  for (int64_t u = 0; u < n; ++u) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t i = v[u * k + j];
      const int64_t d = x[static_cast<size_t>(j)];
      if (i < 0) i += d;
      if (i < 0 || i >= d) return refuse(c, "an index is out of range");
      off += i * strides[static_cast<size_t>(j)];
    }
    if (off > INT32_MAX) return refuse(c, "a target offset above 2^31 - 1");
    if (!seen.insert(off).second) return refuse(c, "two updates of the same slice (their order would race on the GPU)");
    p.offsets.push_back(off);
  }
  return p;
}

Status supports_scatter_nd(const BindContext& c) {
  if (attr_s(c.node, "reduction", "none") != "none") return refuse(c, "reduction other than none");
  const size_t eb = ir::dtype_size(stored_type(c, in_t(c, 0).dtype));
  if (eb != 1 && eb != 2 && eb != 4 && eb != 8) return refuse(c, std::string("data of element type ") + ir::dtype_name(in_t(c, 0).dtype));
  WS_ASSIGN_OR_RETURN(ScatterPlan p, scatter_plan(c));
  (void)p;
  return Status::ok();
}

Status bind_scatter_nd(BindContext& c, Step& s) {
  WS_ASSIGN_OR_RETURN(ScatterPlan p, scatter_plan(c));
  // data and updates: constants uploaded in their stored type (index 1, the indices, is not read by the kernels).
  for (size_t k : {size_t{0}, size_t{2}})
    if (in_t(c, k).is_constant()) {
      WS_ASSIGN_OR_RETURN(const void* ptr, c.upload_stored(c.node.inputs[k]));
      s.inputs[k] = Operand{Operand::Kind::kConst, 0, ptr};
    }
  std::vector<float> bits(std::max<size_t>(p.offsets.size(), 1));
  for (size_t u = 0; u < p.offsets.size(); ++u) bits[u] = std::bit_cast<float>(static_cast<int32_t>(p.offsets[u]));
  WS_ASSIGN_OR_RETURN(const void* d_off, c.upload_values(bits, true));
  const auto* offsets = static_cast<const int32_t*>(d_off);
  const int eb = static_cast<int>(ir::dtype_size(stored_type(c, in_t(c, 0).dtype)));
  const size_t bytes = static_cast<size_t>(in_t(c, 0).elements()) * static_cast<size_t>(eb);
  const int64_t n = static_cast<int64_t>(p.offsets.size()), slice = p.slice;
  s.kernels = 2;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) -> Status {
    if (bytes && io.out[0] != io.in[0]) WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.out[0], io.in[0], bytes, cudaMemcpyDeviceToDevice, st));
    return kernels::scatter_slices(eb, io.in[2], io.out[0], offsets, n, slice, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Resize (opset 10: X, scales; opset 11+: X, roi, scales, sizes): nearest or linear over the last two axes,
// the others unchanged. Taps per output row / column computed here in double, after ONNX's reference
// (coordinates clamped to the edge), uploaded once.

struct ResizeSpec {
  bool linear = false, cubic = false, exclude_outside = false;
  double cubic_a = -0.75;
  std::string coord, nearest;
  double scale_h = 1, scale_w = 1;
  // tf_crop_and_resize: the roi of the last two axes (normalised start / end) and the value outside it.
  double roi_h0 = 0, roi_h1 = 1, roi_w0 = 0, roi_w1 = 1;
  float extrapolation = 0.0f;
};

Result<std::vector<double>> const_doubles(const BindContext& c, size_t i) {
  const ir::Tensor& t = in_t(c, i);
  if (!t.is_constant() || t.dtype != ir::DType::kFloat32) return refuse(c, "input " + std::to_string(i) + " must be a float32 constant");
  return std::vector<double>(t.data_as<float>(), t.data_as<float>() + t.elements());
}

Result<ResizeSpec> resize_spec(const BindContext& c) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const size_t r = x.size();
  if (r < 2 || y.size() != r) return refuse(c, "input rank below 2");
  for (size_t k = 0; k + 2 < r; ++k)
    if (x[k] != y[k]) return refuse(c, "only the last two axes may be resized");
  if (x[r - 2] < 1 || x[r - 1] < 1) return refuse(c, "empty input");
  if (y[r - 2] > INT32_MAX || y[r - 1] > INT32_MAX || x[r - 2] > INT32_MAX || x[r - 1] > INT32_MAX) return refuse(c, "extent above 2^31 - 1");
  // Upsample-7/9 (deprecated in 10) is Resize-10: asymmetric coordinates, floor for nearest; scales as the
  // attribute (7, 8) or input 1 (9).
  const bool upsample = c.node.op_type == "Upsample";
  const bool v10 = c.graph.opset < 11 || upsample;
  ResizeSpec sp;
  const std::string mode = attr_s(c.node, "mode", "nearest");
  if (mode != "nearest" && mode != "linear" && !(mode == "cubic" && !upsample))
    return refuse(c, "mode '" + mode + "' (nearest, linear and cubic only)");
  sp.linear = mode == "linear";
  sp.cubic = mode == "cubic";
  sp.cubic_a = attr_f(c.node, "cubic_coeff_a", -0.75f);
  sp.exclude_outside = attr_i(c.node, "exclude_outside", 0) != 0;
  sp.coord = attr_s(c.node, "coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel");
  if (sp.coord != "half_pixel" && sp.coord != "pytorch_half_pixel" && sp.coord != "align_corners" && sp.coord != "asymmetric" &&
      sp.coord != "tf_crop_and_resize")
    return refuse(c, "coordinate_transformation_mode '" + sp.coord + "'");
  if (sp.coord == "tf_crop_and_resize") {
    if (v10 || !has_in(c, 1)) return refuse(c, "tf_crop_and_resize without a roi input");
    WS_ASSIGN_OR_RETURN(std::vector<double> roi, const_doubles(c, 1));
    if (roi.size() != 2 * r) return refuse(c, "roi has " + std::to_string(roi.size()) + " values for rank " + std::to_string(r));
    sp.roi_h0 = roi[r - 2]; sp.roi_w0 = roi[r - 1]; sp.roi_h1 = roi[2 * r - 2]; sp.roi_w1 = roi[2 * r - 1];
    sp.extrapolation = attr_f(c.node, "extrapolation_value", 0.0f);
  }
  sp.nearest = attr_s(c.node, "nearest_mode", v10 ? "floor" : "round_prefer_floor");
  if (attr_i(c.node, "antialias", 0) != 0 || c.node.find("axes")) return refuse(c, "antialias / axes (opset 18)");
  std::vector<double> scales;
  if (upsample && !has_in(c, 1)) {
    const auto* a = c.node.find("scales");
    if (a == nullptr) return refuse(c, "Upsample without scales");
    scales.assign(a->floats.begin(), a->floats.end());
  } else if (v10) {
    WS_ASSIGN_OR_RETURN(scales, const_doubles(c, 1));
  } else if (has_in(c, 2) && in_t(c, 2).elements() > 0) {
    WS_ASSIGN_OR_RETURN(scales, const_doubles(c, 2));
  }
  if (!scales.empty()) {
    if (scales.size() != r) return refuse(c, "scales has " + std::to_string(scales.size()) + " values for rank " + std::to_string(r));
    for (size_t k = 0; k + 2 < r; ++k)
      if (scales[k] != 1.0) return refuse(c, "only the last two axes may be resized");
    sp.scale_h = scales[r - 2];
    sp.scale_w = scales[r - 1];
  } else {  // sizes: scale = out / in
    sp.scale_h = static_cast<double>(y[r - 2]) / static_cast<double>(x[r - 2]);
    sp.scale_w = static_cast<double>(y[r - 1]) / static_cast<double>(x[r - 1]);
  }
  if (!(sp.scale_h > 0) || !(sp.scale_w > 0)) return refuse(c, "non-positive scale");
  return sp;
}

Status supports_resize(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  WS_ASSIGN_OR_RETURN(ResizeSpec sp, resize_spec(c));
  (void)sp;
  return Status::ok();
}

// One axis: per output index, the first / second input index (int32 bits in a float) and the weight of the second.
void axis_taps(const ResizeSpec& sp, int64_t in, int64_t out, double scale, std::vector<float>& i0, std::vector<float>& i1,
               std::vector<float>& w, double roi0 = 0, double roi1 = 1) {
  // As ONNX's reference (and reference/resize.cpp): the "resized length" in these formulas is in x scale, not
  // the floored output extent (they differ when a scale does not divide evenly: test_resize_downsample_scales_
  // linear_align_corners failed on CUDA in device run 1 of 2026-12-01 with the floored length).
  const double len_out = static_cast<double>(in) * scale;
  for (int64_t o = 0; o < out; ++o) {
    double xo;
    if (sp.coord == "half_pixel") xo = (static_cast<double>(o) + 0.5) / scale - 0.5;
    else if (sp.coord == "pytorch_half_pixel") xo = len_out > 1 ? (static_cast<double>(o) + 0.5) / scale - 0.5 : 0.0;
    else if (sp.coord == "align_corners") xo = len_out == 1 ? 0.0 : static_cast<double>(o) * static_cast<double>(in - 1) / (len_out - 1);
    else if (sp.coord == "tf_crop_and_resize")
      xo = len_out > 1 ? roi0 * static_cast<double>(in - 1) + static_cast<double>(o) * (roi1 - roi0) * static_cast<double>(in - 1) / (len_out - 1)
                       : 0.5 * (roi0 + roi1) * static_cast<double>(in - 1);
    else xo = static_cast<double>(o) / scale;  // asymmetric
    if (sp.coord == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {  // outside: extrapolation
      i0.push_back(std::bit_cast<float>(int32_t{-1}));
      i1.push_back(std::bit_cast<float>(int32_t{-1}));
      w.push_back(0.0f);
      continue;
    }
    int64_t a, b;
    double frac = 0.0;
    if (!sp.linear) {
      const double fl = std::floor(xo);
      double v;
      if (sp.nearest == "floor") v = fl;
      else if (sp.nearest == "ceil") v = std::ceil(xo);
      else if (xo - fl == 0.5) v = sp.nearest == "round_prefer_ceil" ? fl + 1.0 : fl;
      else v = std::round(xo);
      a = b = std::clamp<int64_t>(static_cast<int64_t>(v), 0, in - 1);
    } else {
      const double xc = std::clamp(xo, 0.0, static_cast<double>(in - 1));
      a = static_cast<int64_t>(std::floor(xc));
      b = std::min<int64_t>(a + 1, in - 1);
      frac = xc - static_cast<double>(a);
    }
    i0.push_back(std::bit_cast<float>(static_cast<int32_t>(a)));
    i1.push_back(std::bit_cast<float>(static_cast<int32_t>(b)));
    w.push_back(static_cast<float>(frac));
  }
}

// The input coordinate of output index o on one axis (ONNX Resize's coordinate_transformation_mode; "resized
// length" = in x scale, as in axis_taps).
double resize_coordinate(const ResizeSpec& sp, int64_t in, int64_t o, double scale, double roi0 = 0, double roi1 = 1) {
  const double len_out = static_cast<double>(in) * scale, x = static_cast<double>(o);
  if (sp.coord == "tf_crop_and_resize")
    return len_out > 1 ? roi0 * static_cast<double>(in - 1) + x * (roi1 - roi0) * static_cast<double>(in - 1) / (len_out - 1)
                       : 0.5 * (roi0 + roi1) * static_cast<double>(in - 1);
  if (sp.coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (sp.coord == "pytorch_half_pixel") return len_out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (sp.coord == "align_corners") return len_out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (len_out - 1);
  return x / scale;  // asymmetric
}

// Cubic (Keys, coefficient a = cubic_coeff_a): per output index 4 input indices (clamped to the edge; int32 bits in
// a float) then their 4 weights; exclude_outside zeroes the taps outside the input and renormalises.
void axis_taps_cubic(const ResizeSpec& sp, int64_t in, int64_t out, double scale, std::vector<float>& idx,
                     std::vector<float>& w, double roi0 = 0, double roi1 = 1) {
  const double a = sp.cubic_a;
  for (int64_t o = 0; o < out; ++o) {
    const double xo = resize_coordinate(sp, in, o, scale, roi0, roi1), f = std::floor(xo), t = xo - f;
    if (sp.coord == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {  // outside: extrapolation
      for (int k = 0; k < 4; ++k) idx.push_back(std::bit_cast<float>(int32_t{-1}));
      for (int k = 0; k < 4; ++k) w.push_back(0.0f);
      continue;
    }
    // Keys' kernel at distances 1 + t, t, 1 - t, 2 - t.
    const double d[4] = {1.0 + t, t, 1.0 - t, 2.0 - t};
    double c[4], sum = 0.0;
    for (int k = 0; k < 4; ++k) {
      const double z = d[k];
      c[k] = z <= 1.0 ? ((a + 2.0) * z - (a + 3.0)) * z * z + 1.0 : ((a * z - 5.0 * a) * z + 8.0 * a) * z - 4.0 * a;
      const int64_t i = static_cast<int64_t>(f) - 1 + k;
      if (sp.exclude_outside && (i < 0 || i >= in)) c[k] = 0.0;
      sum += c[k];
    }
    for (int k = 0; k < 4; ++k) {
      const int64_t i = std::clamp<int64_t>(static_cast<int64_t>(f) - 1 + k, 0, in - 1);
      idx.push_back(std::bit_cast<float>(static_cast<int32_t>(i)));
    }
    for (int k = 0; k < 4; ++k) w.push_back(static_cast<float>(sp.exclude_outside && sum != 0.0 ? c[k] / sum : c[k]));
  }
}

Status bind_resize(BindContext& c, Step& s) {
  WS_ASSIGN_OR_RETURN(ResizeSpec sp, resize_spec(c));
  const float extrapolation = sp.extrapolation;
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const size_t r = x.size();
  int64_t planes = 1;
  for (size_t k = 0; k + 2 < r; ++k) planes *= x[k];
  const int64_t in_h = x[r - 2], in_w = x[r - 1], out_h = y[r - 2], out_w = y[r - 1];
  if (sp.cubic) {
    std::vector<float> hi, hw, wi, ww;
    axis_taps_cubic(sp, in_h, out_h, sp.scale_h, hi, hw, sp.roi_h0, sp.roi_h1);
    axis_taps_cubic(sp, in_w, out_w, sp.scale_w, wi, ww, sp.roi_w0, sp.roi_w1);
    std::vector<float> taps;
    for (auto* part : {&hi, &hw, &wi, &ww}) taps.insert(taps.end(), part->begin(), part->end());
    if (taps.empty()) taps.push_back(0.0f);
    WS_ASSIGN_OR_RETURN(const void* d_taps, c.upload_values(taps, true));
    const auto* t = static_cast<const float*>(d_taps);
    const ElemType et = c.elem;
    s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return kernels::resize_2d_cubic(et, io.in[0], io.out[0], t, planes, in_h, in_w, out_h, out_w, st, extrapolation);
    };
    return Status::ok();
  }
  std::vector<float> h0, h1, wh, w0, w1, ww;
  axis_taps(sp, in_h, out_h, sp.scale_h, h0, h1, wh, sp.roi_h0, sp.roi_h1);
  axis_taps(sp, in_w, out_w, sp.scale_w, w0, w1, ww, sp.roi_w0, sp.roi_w1);
  std::vector<float> taps;
  for (auto* part : {&h0, &h1, &wh, &w0, &w1, &ww}) taps.insert(taps.end(), part->begin(), part->end());
  if (taps.empty()) taps.push_back(0.0f);
  WS_ASSIGN_OR_RETURN(const void* d_taps, c.upload_values(taps, true));
  const auto* t = static_cast<const float*>(d_taps);
  const bool linear = sp.linear;
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::resize_2d(et, linear, io.in[0], io.out[0], t, planes, in_h, in_w, out_h, out_w, st, extrapolation);
  };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

std::vector<OpSample> gather_samples(const std::string& op) {
  return {{"Gather_axis1_negative_index", {runtime("x", {2, 5, 3}), constant_i64("i", {2}, {4, -1 - 1})},
           {sample_node(op, {"x", "i"}, {"y"}, {A::integer("axis", 1)})}},
          {"Gather_scalar_index_axis1", {runtime("x", {2, 4, 6}), constant_i64("i", {}, {0})},
           {sample_node(op, {"x", "i"}, {"y"}, {A::integer("axis", 1)})}},
          {"Gather_2d_indices_last_axis", {runtime("x", {2, 3, 5}), constant_i64("i", {2, 2}, {0, 4, 1, 1})},
           {sample_node(op, {"x", "i"}, {"y"}, {A::integer("axis", -1)})}},
          {"Gather_axis0_default", {runtime("x", {4, 6}), constant_i64("i", {3}, {3, 0, 3})}, {sample_node(op, {"x", "i"}, {"y"})}}};
}

std::vector<OpSample> gather_elements_samples(const std::string& op) {
  return {{"GatherElements_axis1", {runtime("x", {3, 4}), constant_i64("i", {3, 2}, {0, 3, -1, 1, 2, 2})},
           {sample_node(op, {"x", "i"}, {"y"}, {A::integer("axis", 1)})}},
          {"GatherElements_axis0_rank3", {runtime("x", {4, 2, 3}), constant_i64("i", {2, 2, 3}, {0, 1, 2, 3, 0, 1, 3, 3, 3, 0, 0, 0})},
           {sample_node(op, {"x", "i"}, {"y"})}},
          {"GatherElements_rank7_axis1", {runtime("x", {2, 3, 2, 1, 2, 1, 2}), constant_i64("i", {2, 1, 2, 1, 2, 1, 2}, {0, 2, 1, 1, 2, 0, 0, 1, 1, 2, 2, 0, 0, 0, 1, 2})},
           {sample_node(op, {"x", "i"}, {"y"}, {A::integer("axis", 1)})}}};
}

std::vector<OpSample> slice_samples(const std::string& op) {
  return {{"Slice_steps_two_axes",
           {runtime("x", {4, 6, 5}), constant_i64("s", {2}, {1, 0}), constant_i64("e", {2}, {4, 6}), constant_i64("a", {2}, {0, 2}),
            constant_i64("st", {2}, {2, 2})},
           {sample_node(op, {"x", "s", "e", "a", "st"}, {"y"})}},
          {"Slice_negative_step", {runtime("x", {5, 6}), constant_i64("s", {1}, {4}), constant_i64("e", {1}, {-100}),
                                   constant_i64("a", {1}, {1}), constant_i64("st", {1}, {-1})},
           {sample_node(op, {"x", "s", "e", "a", "st"}, {"y"})}},
          {"Slice_default_axes", {runtime("x", {3, 4}), constant_i64("s", {2}, {0, 1}), constant_i64("e", {2}, {2, 3})},
           {sample_node(op, {"x", "s", "e"}, {"y"})}},
          {"Slice_negative_start_large_end", {runtime("x", {2, 3, 8}), constant_i64("s", {1}, {-5}), constant_i64("e", {1}, {INT64_MAX}),
                                              constant_i64("a", {1}, {-1})},
           {sample_node(op, {"x", "s", "e", "a"}, {"y"})}},
          {"Slice_opset9_attributes", {runtime("x", {4, 6})},
           {sample_node(op, {"x"}, {"y"}, {A::integers("starts", {1, 2}), A::integers("ends", {3, 5}), A::integers("axes", {0, 1})})}, 9}};
}

std::vector<OpSample> split_samples(const std::string& op) {
  return {{"Split_equal_then_Concat_swapped", {runtime("x", {2, 6, 3})},
           {sample_node(op, {"x"}, {"a", "b"}, {A::integer("axis", 1)}), sample_node("Concat", {"b", "a"}, {"y"}, {A::integer("axis", 1)})}},
          {"Split_sizes_input", {runtime("x", {2, 6, 3}), constant_i64("sp", {3}, {1, 3, 2})},
           {sample_node(op, {"x", "sp"}, {"a", "b", "c"}, {A::integer("axis", 1)}),
            sample_node("Concat", {"c", "a", "b"}, {"y"}, {A::integer("axis", 1)})}},
          {"Split_opset11_attribute_last_axis", {runtime("x", {3, 6})},
           {sample_node(op, {"x"}, {"a", "b"}, {A::integer("axis", -1), A::integers("split", {2, 4})}),
            sample_node("Concat", {"b", "a"}, {"y"}, {A::integer("axis", -1)})}, 11}};
}

std::vector<OpSample> expand_samples(const std::string& op) {
  return {{"Expand_rank_up", {runtime("x", {3, 1}), constant_i64("s", {3}, {2, 3, 4})}, {sample_node(op, {"x", "s"}, {"y"})}},
          {"Expand_same_rank", {runtime("x", {1, 4, 1}), constant_i64("s", {3}, {3, 4, 5})}, {sample_node(op, {"x", "s"}, {"y"})}},
          {"Expand_shape_smaller_than_input", {runtime("x", {2, 3}), constant_i64("s", {3}, {3, 1, 1})}, {sample_node(op, {"x", "s"}, {"y"})}}};
}

std::vector<OpSample> tile_samples(const std::string& op) {
  return {{"Tile_2d", {runtime("x", {2, 3}), constant_i64("r", {2}, {2, 3})}, {sample_node(op, {"x", "r"}, {"y"})}},
          {"Tile_3d_with_ones", {runtime("x", {2, 1, 3}), constant_i64("r", {3}, {1, 4, 2})}, {sample_node(op, {"x", "r"}, {"y"})}}};
}

std::vector<OpSample> pad_samples(const std::string& op) {
  return {{"Pad_constant_value", {runtime("x", {1, 2, 3, 4}), constant_i64("p", {8}, {0, 0, 1, 2, 0, 1, 0, 3}), constant_values("v", {}, {1.5f})},
           {sample_node(op, {"x", "p", "v"}, {"y"})}},
          {"Pad_zero_default_value", {runtime("x", {3, 5}), constant_i64("p", {4}, {2, 0, 1, 1})}, {sample_node(op, {"x", "p"}, {"y"})}},
          {"Pad_rank3_all_axes", {runtime("x", {2, 6, 5}), constant_i64("p", {6}, {1, 0, 2, 1, 3, 1})}, {sample_node(op, {"x", "p"}, {"y"})}},
          {"Pad_opset2_attributes", {runtime("x", {2, 3})},
           {sample_node(op, {"x"}, {"y"}, {A::integers("pads", {1, 0, 0, 2}), A::real("value", -0.5f)})}, 2},
          {"Pad_reflect_nchw", {runtime("x", {1, 2, 4, 5}), constant_i64("p", {8}, {0, 0, 3, 1, 0, 0, 1, 4})},
           {sample_node(op, {"x", "p"}, {"y"}, {A::text("mode", "reflect")})}},
          {"Pad_edge_rank3", {runtime("x", {2, 3, 4}), constant_i64("p", {6}, {0, 2, 5, 1, 0, 3})},
           {sample_node(op, {"x", "p"}, {"y"}, {A::text("mode", "edge")})}},
          {"Pad_reflect_opset2", {runtime("x", {3, 6})},
           {sample_node(op, {"x"}, {"y"}, {A::integers("pads", {2, 1, 0, 5}), A::text("mode", "reflect")})}, 2}};
}

std::vector<OpSample> depth_space_samples(const std::string& op) {
  if (op == "SpaceToDepth") return {single("SpaceToDepth_b2", op, {2, 3, 4, 6}, {A::integer("blocksize", 2)})};
  return {single("DepthToSpace_DCR_b2", op, {1, 8, 3, 5}, {A::integer("blocksize", 2)}),
          single("DepthToSpace_CRD_b2", op, {2, 12, 2, 3}, {A::integer("blocksize", 2), A::text("mode", "CRD")})};
}

std::vector<OpSample> cast_samples(const std::string& op) {
  const int64_t f32 = static_cast<int64_t>(ir::DType::kFloat32);
  // x·4 (exact in float16 too) -> `to` -> float32: truncation toward zero for the integer types, != 0 for bool.
  auto round_trip = [&](std::string label, ir::DType to) -> OpSample {
    return {std::move(label), {runtime("x", {3, 7}), constant_values("four", {}, {4.0f})},
            {sample_node("Mul", {"x", "four"}, {"x4"}), sample_node("Cast", {"x4"}, {"c"}, {A::integer("to", static_cast<int64_t>(to))}),
             sample_node("Cast", {"c"}, {"y"}, {A::integer("to", f32)})}};
  };
  if (op == "CastLike")
    return {{"CastLike_int64_then_float", {runtime("x", {2, 9}), constant_values("four", {}, {4.0f}), constant_i64("like", {1}, {0})},
             {sample_node("Mul", {"x", "four"}, {"x4"}), sample_node("CastLike", {"x4", "like"}, {"c"}), sample_node("Cast", {"c"}, {"y"}, {A::integer("to", f32)})},
             15}};
  return {single("Cast_float_to_float", op, {2, 8}, {A::integer("to", f32)}),
          {"Cast_then_Relu", {runtime("x", {3, 5})}, {sample_node(op, {"x"}, {"c"}, {A::integer("to", f32)}), sample_node("Relu", {"c"}, {"y"})}},
          round_trip("Cast_float_int64_float", ir::DType::kInt64), round_trip("Cast_float_int32_float", ir::DType::kInt32),
          round_trip("Cast_float_int8_float", ir::DType::kInt8), round_trip("Cast_float_bool_float", ir::DType::kBool),
          // float16 inside a float32 graph (mixed-precision exports): x rounded to float16 and back
          {"Cast_float_float16_float", {runtime("x", {3, 7})},
           {sample_node("Cast", {"x"}, {"h"}, {A::integer("to", static_cast<int64_t>(ir::DType::kFloat16))}),
            sample_node("Cast", {"h"}, {"y"}, {A::integer("to", f32)})}},
          // float64 inside a float32 graph: exact both ways
          {"Cast_float_float64_float", {runtime("x", {3, 7})},
           {sample_node("Cast", {"x"}, {"d"}, {A::integer("to", static_cast<int64_t>(ir::DType::kFloat64))}),
            sample_node("Cast", {"d"}, {"y"}, {A::integer("to", f32)})}}};
}

// Resize (opset 13): x, roi (omitted), scales or sizes.
OpSample resize_sample(std::string label, std::vector<int64_t> x, std::vector<float> scales, std::vector<int64_t> sizes,
                       std::vector<OpSampleAttr> attrs) {
  OpSample s{std::move(label), {runtime("x", std::move(x))}, {}};
  if (!scales.empty()) {
    s.tensors.push_back(constant_values("sc", {static_cast<int64_t>(scales.size())}, scales));
    s.nodes.push_back(sample_node("Resize", {"x", "", "sc"}, {"y"}, std::move(attrs)));
  } else {
    s.tensors.push_back(constant_i64("sz", {static_cast<int64_t>(sizes.size())}, sizes));
    s.nodes.push_back(sample_node("Resize", {"x", "", "", "sz"}, {"y"}, std::move(attrs)));
  }
  return s;
}

std::vector<OpSample> resize_samples(const std::string&) {
  return {resize_sample("Resize_nearest_scales_2x", {1, 2, 3, 4}, {1, 1, 2, 2}, {}, {}),
          resize_sample("Resize_nearest_asymmetric_floor_sizes", {2, 2, 5, 4}, {}, {2, 2, 7, 9},
                        {A::text("coordinate_transformation_mode", "asymmetric"), A::text("nearest_mode", "floor")}),
          resize_sample("Resize_nearest_round_prefer_ceil_down", {1, 3, 8, 6}, {1, 1, 0.5f, 0.7f}, {}, {A::text("nearest_mode", "round_prefer_ceil")}),
          resize_sample("Resize_linear_half_pixel_up", {1, 2, 3, 4}, {1, 1, 2.5f, 1.5f}, {}, {A::text("mode", "linear")}),
          resize_sample("Resize_linear_align_corners_sizes", {2, 3, 4, 5}, {}, {2, 3, 7, 3},
                        {A::text("mode", "linear"), A::text("coordinate_transformation_mode", "align_corners")}),
          // scales that do not divide the extent: the resized length of the formula is in x scale (2.4, not 2)
          resize_sample("Resize_linear_align_corners_scales_down", {1, 1, 2, 4}, {1, 1, 0.6f, 0.6f}, {},
                        {A::text("mode", "linear"), A::text("coordinate_transformation_mode", "align_corners")}),
          resize_sample("Resize_linear_pytorch_half_pixel_down", {1, 2, 9, 7}, {1, 1, 0.5f, 0.6f}, {},
                        {A::text("mode", "linear"), A::text("coordinate_transformation_mode", "pytorch_half_pixel")}),
          {"Resize_opset10_nearest", {runtime("x", {1, 2, 3, 4}), constant_values("sc", {4}, {1, 1, 2, 3})},
           {sample_node("Resize", {"x", "sc"}, {"y"})}, 10},
          resize_sample("Resize_cubic_half_pixel_up", {1, 2, 4, 5}, {1, 1, 2.0f, 1.6f}, {}, {A::text("mode", "cubic")}),
          resize_sample("Resize_cubic_exclude_outside_a_half_down", {2, 1, 9, 8}, {1, 1, 0.6f, 0.5f}, {},
                        {A::text("mode", "cubic"), A::real("cubic_coeff_a", -0.5f), A::integer("exclude_outside", 1)}),
          resize_sample("Resize_cubic_align_corners_sizes", {1, 3, 5, 4}, {}, {1, 3, 8, 7},
                        {A::text("mode", "cubic"), A::text("coordinate_transformation_mode", "align_corners")}),
          resize_sample("Resize_cubic_asymmetric_up", {1, 1, 4, 4}, {1, 1, 2.0f, 3.0f}, {},
                        {A::text("mode", "cubic"), A::text("coordinate_transformation_mode", "asymmetric")}),
          // tf_crop_and_resize: a roi reaching past the input on both sides -> extrapolation_value there
          {"Resize_tf_crop_and_resize_linear_extrapolate",
           {runtime("x", {1, 2, 4, 5}), constant_values("roi", {8}, {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f}),
            constant_values("sc", {4}, {1, 1, 1.5f, 1.4f})},
           {sample_node("Resize", {"x", "roi", "sc"}, {"y"},
                        {A::text("mode", "linear"), A::text("coordinate_transformation_mode", "tf_crop_and_resize"),
                         A::real("extrapolation_value", 10.0f)})}},
          {"Resize_tf_crop_and_resize_nearest_sizes",
           {runtime("x", {1, 1, 6, 6}), constant_values("roi", {8}, {0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f}), constant_i64("sz", {4}, {1, 1, 3, 3})},
           {sample_node("Resize", {"x", "roi", "", "sz"}, {"y"},
                        {A::text("coordinate_transformation_mode", "tf_crop_and_resize")})}}};
}

// ScatterND: whole rows (k = 1) and single elements (k = rank) of a runtime tensor replaced by runtime updates.
std::vector<OpSample> scatter_nd_samples(const std::string& op) {
  return {{"ScatterND_rows", {runtime("x", {4, 5, 3}), constant_i64("i", {2, 1}, {3, 1}), runtime("u", {2, 5, 3})},
           {sample_node(op, {"x", "i", "u"}, {"y"})}, 16},
          {"ScatterND_elements_negative_index", {runtime("x", {3, 4}), constant_i64("i", {3, 2}, {0, 1, 2, -1, 1, 0}), runtime("u", {3})},
           {sample_node(op, {"x", "i", "u"}, {"y"})}, 13}};
}

// Upsample-9 (scales input) and Upsample-7 (scales attribute): Resize-10's semantics.
std::vector<OpSample> upsample_samples(const std::string& op) {
  return {{"Upsample9_nearest", {runtime("x", {1, 2, 3, 4}), constant_values("sc", {4}, {1, 1, 2, 3})},
           {sample_node(op, {"x", "sc"}, {"y"}, {A::text("mode", "nearest")})}, 9},
          {"Upsample9_linear", {runtime("x", {2, 1, 3, 2}), constant_values("sc", {4}, {1, 1, 2, 2})},
           {sample_node(op, {"x", "sc"}, {"y"}, {A::text("mode", "linear")})}, 9}};
}

}  // namespace

std::vector<CudaOpDef> indexing_ops() {
  return {
      {"Cast", 0, supports_cast, bind_cast, cast_samples},
      {"CastLike", 0, supports_cast, bind_cast, cast_samples},
      {"DepthToSpace", 1, ok_float0, bind_depth_space, depth_space_samples},
      {"Expand", 1, supports_rank6, bind_expand, expand_samples},
      {"Gather", 1, supports_gather, bind_gather, gather_samples},
      {"GatherElements", 1, supports_gather_elements, bind_gather_elements, gather_elements_samples},
      {"Pad", 1, supports_pad, bind_pad, pad_samples},
      {"Resize", 1, supports_resize, bind_resize, resize_samples},
      {"ScatterND", 0, supports_scatter_nd, bind_scatter_nd, scatter_nd_samples},
      {"Slice", 1, supports_rank6, bind_slice, slice_samples},
      {"SpaceToDepth", 1, ok_float0, bind_depth_space, depth_space_samples},
      {"Split", 1, ok_float0, bind_split, split_samples},
      {"Tile", 1, supports_rank6, bind_tile, tile_samples},
      {"Upsample", 1, supports_resize, bind_resize, upsample_samples},
  };
}

}  // namespace ws::cudaexec
