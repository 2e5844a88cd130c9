// Analyzers of the ops added for the torchvision zoo and ONNX's conformance suites (issue 14);
// see op_table_ext.h. Semantics follow https://onnx.ai/onnx/operators/ at the model's opset; opset
// forms handled: Slice's attributes (< 10) vs inputs, Split's `split` attribute (< 13) vs input vs
// num_outputs (18), Reduce* axes as attribute or input (ReduceSum 13, the others 18), LogSoftmax's
// flattening (< 13), Resize-10's fixed asymmetric/floor behaviour, Upsample-7/9.
#include "engine/ir/op_table_ext.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/checked_math.h"
#include "core/escape.h"
#include "core/limits.h"
#include "engine/ir/op_table_util.h"
#include "reference/einsum.h"
#include "reference/ops_ext.h"

namespace ws::engine::ext {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Shape;
using In = std::span<const void* const>;
using Out = std::span<void* const>;

using op_util::attr_float;
using op_util::attr_int;
using op_util::attr_ints;
using op_util::attr_string;
using op_util::set_outputs;
using op_util::set_single_output;

Status unsupported_dtype(const NodeContext& c, size_t i, const char* allowed) {
  const auto& t = c.input(i);
  return c.error(StatusCode::kUnsupported, "input " + std::to_string(i) + " ('" + t.name + "') has element type " +
                                               ir::dtype_name(t.dtype) + "; supported: " + allowed);
}
Status require_f32(const NodeContext& c, size_t i) {
  if (c.has_input(i) && c.input(i).dtype != DType::kFloat32) return unsupported_dtype(c, i, "float32");
  return Status::ok();
}
Status require_rank(const NodeContext& c, const Shape& s) {
  if (s.size() > ref::kMaxRank)
    return c.error(StatusCode::kUnsupported, "rank " + std::to_string(s.size()) + " is above " + std::to_string(ref::kMaxRank));
  return Status::ok();
}

Result<int64_t> norm_axis(const NodeContext& c, const char* what, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return c.error(StatusCode::kInvalidModel, std::string(what) + " = " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// A constant integer operand (int64 or int32) as int64 values.
Result<std::vector<int64_t>> const_ints(const NodeContext& c, size_t i, const char* what) {
  const auto& t = c.input(i);
  if (!t.is_constant()) {
    return c.error(StatusCode::kUnsupported, std::string(what) + " ('" + t.name + "') must be known at build in this fixed-shape engine");
  }
  if (t.shape.size() > 1) return c.error(StatusCode::kInvalidModel, std::string(what) + " must be a scalar or 1-D tensor, got " + ir::shape_string(t.shape));
  std::vector<int64_t> v(static_cast<size_t>(t.elements()));
  if (t.dtype == DType::kInt64) {
    if (!v.empty()) std::memcpy(v.data(), t.data->data(), v.size() * 8);
  } else if (t.dtype == DType::kInt32) {
    for (size_t k = 0; k < v.size(); ++k) v[k] = t.data_as<int32_t>()[k];
  } else {
    return c.error(StatusCode::kInvalidModel, std::string(what) + " must be int64 or int32, got " + ir::dtype_name(t.dtype));
  }
  return v;
}

Result<ref::Elem> elem_of(const NodeContext& c, DType t, const std::string& what) {
  switch (t) {
    case DType::kFloat32: return ref::Elem::kFloat32;
    case DType::kFloat16: return ref::Elem::kFloat16;
    case DType::kFloat64: return ref::Elem::kFloat64;
    case DType::kInt32: return ref::Elem::kInt32;
    case DType::kInt64: return ref::Elem::kInt64;
    case DType::kInt8: return ref::Elem::kInt8;
    case DType::kUInt8: return ref::Elem::kUInt8;
    case DType::kBool: return ref::Elem::kBool;
    default:
      return c.error(StatusCode::kUnsupported, what + " has element type " + ir::dtype_name(t) +
                                                   "; supported: float32, float16, float64, int64, int32, int8, uint8, bool");
  }
}

Result<Shape> broadcast_all(const NodeContext& c) {
  Shape y = c.input(0).shape;
  for (size_t i = 1; i < c.input_count(); ++i) {
    auto b = ref::broadcast_dims(y, c.input(i).shape);
    if (!b) return c.error(StatusCode::kInvalidModel, b.status().message());
    y = *b;
  }
  WS_RETURN_IF_ERROR(require_rank(c, y));
  return y;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Indexing and data movement

Status analyze_gather(NodeContext& c) {
  const auto& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 1) return c.error(StatusCode::kInvalidModel, "data must have rank >= 1");
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", 0));
  WS_ASSIGN_OR_RETURN(int64_t axis, norm_axis(c, "axis", axis_attr, rank));
  const auto& it = c.input(1);
  if (!it.is_constant()) return c.error(StatusCode::kUnsupported, "indices ('" + it.name + "') must be known at build in this fixed-shape engine");
  if (it.dtype != DType::kInt64 && it.dtype != DType::kInt32) return c.error(StatusCode::kInvalidModel, "indices must be int64 or int32");
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  std::vector<int64_t> idx(static_cast<size_t>(it.elements()));
  for (size_t k = 0; k < idx.size(); ++k) {
    int64_t v = it.dtype == DType::kInt64 ? it.data_as<int64_t>()[k] : it.data_as<int32_t>()[k];
    if (v < -len || v >= len) {
      return c.error(StatusCode::kInvalidModel, "index " + std::to_string(v) + " (element " + std::to_string(k) +
                                                    ") is out of range for axis " + std::to_string(axis) + " of length " + std::to_string(len));
    }
    idx[k] = v < 0 ? v + len : v;
  }
  Shape y(x.shape.begin(), x.shape.begin() + axis);
  y.insert(y.end(), it.shape.begin(), it.shape.end());
  y.insert(y.end(), x.shape.begin() + axis + 1, x.shape.end());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) outer *= x.shape[static_cast<size_t>(i)];
    if (i > axis) inner *= x.shape[static_cast<size_t>(i)];
  }
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  set_single_output(c, x.dtype, y);
  c.kernel = [=](In in, Out out) { ref::gather(in[0], outer, len, inner, idx.data(), static_cast<int64_t>(idx.size()), out[0], es); };
  return Status::ok();
}

Status analyze_slice(NodeContext& c) {
  const auto& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  WS_RETURN_IF_ERROR(require_rank(c, x.shape));
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.graph.opset < 10) {
    WS_ASSIGN_OR_RETURN(starts, attr_ints(c, "starts", {}));
    WS_ASSIGN_OR_RETURN(ends, attr_ints(c, "ends", {}));
    WS_ASSIGN_OR_RETURN(axes, attr_ints(c, "axes", {}));
    if (c.input_count() > 1) return c.error(StatusCode::kInvalidModel, "takes starts/ends as attributes before opset 10, not inputs");
  } else {
    if (c.node.find("starts") || c.node.find("ends")) return c.invalid_attribute("starts", "is an input, not an attribute, from opset 10 on");
    if (c.input_count() < 3) return c.error(StatusCode::kInvalidModel, "needs inputs data, starts, ends (opset >= 10)");
    WS_ASSIGN_OR_RETURN(starts, const_ints(c, 1, "starts"));
    WS_ASSIGN_OR_RETURN(ends, const_ints(c, 2, "ends"));
    if (c.has_input(3)) { WS_ASSIGN_OR_RETURN(axes, const_ints(c, 3, "axes")); }
    if (c.has_input(4)) { WS_ASSIGN_OR_RETURN(steps, const_ints(c, 4, "steps")); }
  }
  if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return c.error(StatusCode::kInvalidModel, "starts, ends, axes and steps differ in length");
  }
  ref::Dims st(static_cast<size_t>(rank), 0), sp(static_cast<size_t>(rank), 1);
  Shape y = x.shape;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t k = 0; k < starts.size(); ++k) {
    WS_ASSIGN_OR_RETURN(int64_t a, norm_axis(c, "axes", axes[k], rank));
    if (seen[static_cast<size_t>(a)]) return c.error(StatusCode::kInvalidModel, "axes repeats axis " + std::to_string(axes[k]));
    seen[static_cast<size_t>(a)] = true;
    const int64_t dim = x.shape[static_cast<size_t>(a)], step = steps[k];
    if (step == 0) return c.error(StatusCode::kInvalidModel, "steps must not be 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s = s < -dim ? 0 : s + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    // s, e are within [-1, dim] here, so only the step can overflow (−INT64_MIN): handled first.
    int64_t n = 0;
    if (step == std::numeric_limits<int64_t>::min()) n = s > e ? 1 : 0;
    else if (step > 0 && e > s) n = (e - s - 1) / step + 1;
    else if (step < 0 && s > e) n = (s - e - 1) / (-step) + 1;
    st[static_cast<size_t>(a)] = s;
    sp[static_cast<size_t>(a)] = step;
    y[static_cast<size_t>(a)] = n;
  }
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  set_single_output(c, x.dtype, y);
  const Shape xs = x.shape;
  c.kernel = [=](In in, Out out) { ref::slice(in[0], xs, st, sp, out[0], y, es); };
  return Status::ok();
}

Status analyze_split(NodeContext& c) {
  const auto& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  WS_RETURN_IF_ERROR(require_rank(c, x.shape));
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", 0));
  WS_ASSIGN_OR_RETURN(int64_t axis, norm_axis(c, "axis", axis_attr, rank));
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  const int64_t nout = static_cast<int64_t>(c.node.outputs.size());
  std::vector<int64_t> split;
  if (c.graph.opset < 13) {
    WS_ASSIGN_OR_RETURN(split, attr_ints(c, "split", {}));
  } else {
    if (c.node.find("split")) return c.invalid_attribute("split", "is an input, not an attribute, from opset 13 on");
    if (c.has_input(1)) { WS_ASSIGN_OR_RETURN(split, const_ints(c, 1, "split")); }
  }
  WS_ASSIGN_OR_RETURN(int64_t num_outputs, attr_int(c, "num_outputs", 0));
  if (c.node.find("num_outputs") && c.graph.opset < 18)
    return c.invalid_attribute("num_outputs", "is an opset-18 attribute; this model declares opset " + std::to_string(c.graph.opset));
  if (c.node.find("num_outputs") && c.has_input(1))
    return c.invalid_attribute("num_outputs", "and the 'split' input are both given (the spec allows one of them)");
  if (c.node.find("num_outputs") && num_outputs != nout) {
    return c.invalid_attribute("num_outputs", "= " + std::to_string(num_outputs) + " but the node has " + std::to_string(nout) + " outputs");
  }
  if (split.empty()) {
    if (c.node.find("num_outputs")) {  // opset 18: ceil(len / n) each, the last one smaller
      const int64_t chunk = (len + nout - 1) / nout;
      for (int64_t i = 0; i < nout; ++i) split.push_back(std::max<int64_t>(0, std::min(chunk, len - i * chunk)));
    } else {
      if (len % nout != 0) return c.error(StatusCode::kInvalidModel, "axis length " + std::to_string(len) + " does not split evenly into " + std::to_string(nout) + " outputs");
      split.assign(static_cast<size_t>(nout), len / nout);
    }
  }
  if (static_cast<int64_t>(split.size()) != nout) {
    return c.error(StatusCode::kInvalidModel, "split has " + std::to_string(split.size()) + " sizes for " + std::to_string(nout) + " outputs");
  }
  int64_t total = 0;
  for (int64_t s : split) {
    if (s < 0 || s > len) return c.error(StatusCode::kInvalidModel, "split size " + std::to_string(s) + " is out of range");
    total += s;
  }
  if (total != len) return c.error(StatusCode::kInvalidModel, "split sizes sum to " + std::to_string(total) + ", not the axis length " + std::to_string(len));
  set_outputs(c);
  std::vector<ref::Dims> starts, shapes;
  int64_t off = 0;
  for (int64_t i = 0; i < nout; ++i) {
    Shape y = x.shape;
    y[static_cast<size_t>(axis)] = split[static_cast<size_t>(i)];
    ref::Dims st(static_cast<size_t>(rank), 0);
    st[static_cast<size_t>(axis)] = off;
    off += split[static_cast<size_t>(i)];
    c.output_dtypes[static_cast<size_t>(i)] = x.dtype;
    c.output_shapes[static_cast<size_t>(i)] = y;
    starts.push_back(st);
    shapes.push_back(y);
  }
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  const Shape xs = x.shape;
  const ref::Dims steps(static_cast<size_t>(rank), 1);
  c.kernel = [=](In in, Out out) {
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i]) ref::slice(in[0], xs, starts[i], steps, out[i], shapes[i], es);
  };
  return Status::ok();
}

Status analyze_expand(NodeContext& c) {
  const auto& x = c.input(0);
  WS_ASSIGN_OR_RETURN(auto shape, const_ints(c, 1, "shape"));
  for (int64_t d : shape)
    if (d < 0) return c.error(StatusCode::kInvalidModel, "shape " + ir::shape_string(shape) + " has a negative dimension");
  auto y = ref::broadcast_dims(x.shape, shape);
  if (!y) return c.error(StatusCode::kInvalidModel, y.status().message());
  WS_RETURN_IF_ERROR(require_rank(c, *y));
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  set_single_output(c, x.dtype, *y);
  const Shape xs = x.shape, ys = *y;
  c.kernel = [=](In in, Out out) { ref::expand(in[0], xs, out[0], ys, es); };
  return Status::ok();
}

Status analyze_tile(NodeContext& c) {
  const auto& x = c.input(0);
  WS_RETURN_IF_ERROR(require_rank(c, x.shape));
  WS_ASSIGN_OR_RETURN(auto reps, const_ints(c, 1, "repeats"));
  if (reps.size() != x.shape.size()) return c.error(StatusCode::kInvalidModel, "repeats has " + std::to_string(reps.size()) + " values for rank " + std::to_string(x.shape.size()));
  Shape y = x.shape;
  for (size_t i = 0; i < y.size(); ++i) {
    if (reps[i] < 0) return c.error(StatusCode::kInvalidModel, "repeats must be >= 0");
    const std::optional<int64_t> d = checked_mul(y[i], reps[i]);
    if (!d) return c.error(StatusCode::kResourceExhausted, "tiled shape overflows int64 along axis " + std::to_string(i));
    y[i] = *d;
  }
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  set_single_output(c, x.dtype, y);
  const Shape xs = x.shape;
  c.kernel = [=](In in, Out out) { ref::tile(in[0], xs, out[0], y, es); };
  return Status::ok();
}

Status analyze_cast(NodeContext& c) {
  const auto& x = c.input(0);
  const Attribute* to_attr = c.node.find("to");
  if (!to_attr) return c.invalid_attribute("to", "is required");
  WS_ASSIGN_OR_RETURN(int64_t to_i, attr_int(c, "to", 0));
  WS_ASSIGN_OR_RETURN(ref::Elem from, elem_of(c, x.dtype, "input 0 ('" + x.name + "')"));
  const DType to_t = static_cast<DType>(to_i);
  WS_ASSIGN_OR_RETURN(ref::Elem to, elem_of(c, to_t, "attribute 'to'"));
  set_single_output(c, to_t, x.shape);
  const int64_t n = x.elements();
  c.kernel = [=](In in, Out out) { ref::cast(in[0], from, out[0], to, n); };
  return Status::ok();
}

// CastLike-15: Cast to the element type of input 1 (its values are not read).
Status analyze_cast_like(NodeContext& c) {
  const auto& x = c.input(0);
  WS_ASSIGN_OR_RETURN(ref::Elem from, elem_of(c, x.dtype, "input 0 ('" + x.name + "')"));
  const DType to_t = c.input(1).dtype;
  WS_ASSIGN_OR_RETURN(ref::Elem to, elem_of(c, to_t, "input 1 ('" + c.input(1).name + "')"));
  set_single_output(c, to_t, x.shape);
  const int64_t n = x.elements();
  c.kernel = [=](In in, Out out) { ref::cast(in[0], from, out[0], to, n); };
  return Status::ok();
}

Status analyze_where(NodeContext& c) {
  if (c.input(0).dtype != DType::kBool) return unsupported_dtype(c, 0, "bool");
  const auto& a = c.input(1);
  if (c.input(2).dtype != a.dtype) return c.error(StatusCode::kInvalidModel, "X and Y differ in element type");
  WS_ASSIGN_OR_RETURN(Shape y, broadcast_all(c));
  const size_t es = ir::dtype_size(a.dtype);
  if (es == 0) return unsupported_dtype(c, 1, "numeric and bool types");
  set_single_output(c, a.dtype, y);
  const Shape cs = c.input(0).shape, as = a.shape, bs = c.input(2).shape;
  c.kernel = [=](In in, Out out) { ref::where(static_cast<const uint8_t*>(in[0]), cs, in[1], as, in[2], bs, out[0], y, es); };
  return Status::ok();
}

Status analyze_constant_of_shape(NodeContext& c) {
  WS_ASSIGN_OR_RETURN(auto shape, const_ints(c, 0, "input"));
  for (int64_t d : shape)
    if (d < 0) return c.error(StatusCode::kInvalidModel, "shape " + ir::shape_string(shape) + " has a negative dimension");
  std::vector<std::byte> value(4, std::byte{0});
  DType t = DType::kFloat32;
  if (const Attribute* v = c.node.find("value")) {
    if (v->kind != Attribute::Kind::kTensor || !v->tensor || v->tensor->elements() != 1 || !v->tensor->data) {
      return c.invalid_attribute("value", "must be a one-element tensor");
    }
    t = v->tensor->dtype;
    value = *v->tensor->data;
  }
  const size_t es = ir::dtype_size(t);
  if (es == 0 || value.size() != es) return c.bad_attribute("value", "has an unsupported element type");
  set_single_output(c, t, shape);
  const int64_t n = ir::shape_elements(shape);
  c.kernel = [=](In, Out out) {
    auto* y = static_cast<std::byte*>(out[0]);
    for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * static_cast<int64_t>(es), value.data(), es);
  };
  return Status::ok();
}

Status analyze_gather_elements(NodeContext& c) {
  const auto& x = c.input(0);
  const auto& it = c.input(1);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  WS_RETURN_IF_ERROR(require_rank(c, x.shape));
  if (rank < 1 || it.shape.size() != x.shape.size()) return c.error(StatusCode::kInvalidModel, "indices " + ir::shape_string(it.shape) + " must have the rank of data " + ir::shape_string(x.shape));
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", 0));
  WS_ASSIGN_OR_RETURN(int64_t axis, norm_axis(c, "axis", axis_attr, rank));
  for (int64_t k = 0; k < rank; ++k)
    if (k != axis && it.shape[static_cast<size_t>(k)] > x.shape[static_cast<size_t>(k)])
      return c.error(StatusCode::kInvalidModel, "indices " + ir::shape_string(it.shape) + " exceed data " + ir::shape_string(x.shape) + " on axis " + std::to_string(k));
  if (!it.is_constant()) return c.error(StatusCode::kUnsupported, "indices must be known at build in this fixed-shape engine");
  if (it.dtype != DType::kInt64 && it.dtype != DType::kInt32) return c.error(StatusCode::kInvalidModel, "indices must be int64 or int32");
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  std::vector<int64_t> idx(static_cast<size_t>(it.elements()));
  for (size_t k = 0; k < idx.size(); ++k) {
    const int64_t v = it.dtype == DType::kInt64 ? it.data_as<int64_t>()[k] : it.data_as<int32_t>()[k];
    if (v < -len || v >= len) return c.error(StatusCode::kInvalidModel, "index " + std::to_string(v) + " is out of range for axis length " + std::to_string(len));
    idx[k] = v < 0 ? v + len : v;
  }
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  set_single_output(c, x.dtype, it.shape);
  const Shape xs = x.shape, is = it.shape;
  c.kernel = [=](In in, Out out) { ref::gather_elements(in[0], xs, idx.data(), is, axis, out[0], es); };
  return Status::ok();
}

Status analyze_scatter_nd(NodeContext& c) {
  const auto& x = c.input(0);
  const auto& it = c.input(1);
  const auto& u = c.input(2);
  WS_ASSIGN_OR_RETURN(std::string reduction, attr_string(c, "reduction", "none"));
  if (reduction != "none") return c.bad_attribute("reduction", "= '" + reduction + "' is not supported (only none)");
  if (u.dtype != x.dtype) return c.error(StatusCode::kInvalidModel, "updates and data differ in element type");
  if (!it.is_constant()) return c.error(StatusCode::kUnsupported, "indices must be known at build in this fixed-shape engine");
  if (it.dtype != DType::kInt64) return c.error(StatusCode::kInvalidModel, "indices must be int64");
  if (it.shape.empty()) return c.error(StatusCode::kInvalidModel, "indices must have rank >= 1");
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t k = it.shape.back();
  if (k < 1 || k > r) return c.error(StatusCode::kInvalidModel, "indices' last dimension " + std::to_string(k) + " must be in [1, " + std::to_string(r) + "]");
  // updates shape = indices.shape[:-1] + data.shape[k:]
  Shape want(it.shape.begin(), it.shape.end() - 1);
  want.insert(want.end(), x.shape.begin() + k, x.shape.end());
  if (u.shape != want) return c.error(StatusCode::kInvalidModel, "updates " + ir::shape_string(u.shape) + " must be " + ir::shape_string(want));
  const int64_t n = k ? it.elements() / k : 0;
  std::vector<int64_t> idx(it.data_as<int64_t>(), it.data_as<int64_t>() + it.elements());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) {
      int64_t& v = idx[static_cast<size_t>(i * k + j)];
      const int64_t d = x.shape[static_cast<size_t>(j)];
      if (v < -d || v >= d) return c.error(StatusCode::kInvalidModel, "index " + std::to_string(v) + " is out of range for axis " + std::to_string(j) + " of length " + std::to_string(d));
      if (v < 0) v += d;
    }
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  set_single_output(c, x.dtype, x.shape);
  const Shape xs = x.shape;
  c.kernel = [=](In in, Out out) { ref::scatter_nd(in[0], xs, idx.data(), n, k, in[2], out[0], es); };
  return Status::ok();
}

Status analyze_trilu(NodeContext& c) {
  const auto& x = c.input(0);
  if (x.shape.size() < 2) return c.error(StatusCode::kInvalidModel, "input " + ir::shape_string(x.shape) + " must have rank >= 2");
  WS_ASSIGN_OR_RETURN(int64_t upper, attr_int(c, "upper", 1));
  int64_t k = 0;
  if (c.has_input(1)) {
    WS_ASSIGN_OR_RETURN(auto kv, const_ints(c, 1, "k"));
    if (kv.size() != 1) return c.error(StatusCode::kInvalidModel, "k must be a scalar");
    k = kv[0];
  }
  const int64_t n = x.shape[x.shape.size() - 2], m = x.shape.back();
  const int64_t batch = (n != 0 && m != 0) ? x.elements() / (n * m) : 0;
  const size_t es = ir::dtype_size(x.dtype);
  if (es == 0) return unsupported_dtype(c, 0, "numeric and bool types");
  set_single_output(c, x.dtype, x.shape);
  c.kernel = [=](In in, Out out) { ref::trilu(in[0], batch, n, m, k, upper != 0, out[0], es); };
  return Status::ok();
}

Status analyze_cum_sum(NodeContext& c) {
  const auto& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  WS_ASSIGN_OR_RETURN(auto av, const_ints(c, 1, "axis"));
  if (av.size() != 1) return c.error(StatusCode::kInvalidModel, "axis must be a scalar");
  WS_ASSIGN_OR_RETURN(int64_t axis, norm_axis(c, "axis", av[0], rank));
  WS_ASSIGN_OR_RETURN(int64_t exclusive, attr_int(c, "exclusive", 0));
  WS_ASSIGN_OR_RETURN(int64_t reverse, attr_int(c, "reverse", 0));
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64 && x.dtype != DType::kInt64 && x.dtype != DType::kInt32)
    return unsupported_dtype(c, 0, "float32, float64, int64, int32");
  WS_ASSIGN_OR_RETURN(ref::Elem e, elem_of(c, x.dtype, "input 0"));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) outer *= x.shape[static_cast<size_t>(i)];
    if (i > axis) inner *= x.shape[static_cast<size_t>(i)];
  }
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  set_single_output(c, x.dtype, x.shape);
  c.kernel = [=](In in, Out out) { ref::cumsum(e, in[0], out[0], outer, len, inner, exclusive != 0, reverse != 0); };
  return Status::ok();
}

namespace {
// Hardmax / LogSoftmax: float32 in and out over an outer×len×inner view at `axis`; opset 1–12
// coerce to 2-D at axis (axis == rank is then allowed by the flattening rule).
using SoftmaxKernel = void (*)(const float*, float*, int64_t, int64_t, int64_t);
Status bind_softmax_family(NodeContext& c, SoftmaxKernel fn) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  const Shape& x = c.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  const bool legacy = c.graph.opset < 13;
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", legacy ? 1 : -1));
  int64_t axis;
  if (legacy && axis_attr == rank) axis = rank;
  else { WS_ASSIGN_OR_RETURN(axis, norm_axis(c, "axis", axis_attr, rank)); }
  const op_util::AxisSplit sp = op_util::softmax_split(x, axis, legacy);
  const int64_t outer = sp.outer, len = sp.len, inner = sp.inner;
  set_single_output(c, DType::kFloat32, x);
  c.kernel = [=](In in, Out out) { fn(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), outer, len, inner); };
  return Status::ok();
}
}  // namespace

Status analyze_hardmax(NodeContext& c) { return bind_softmax_family(c, ref::hardmax); }

namespace {
// DepthToSpace-13 / SpaceToDepth-13 as one 6-D transpose of a reshaped view.
Status bind_depth_space(NodeContext& c, bool to_space) {
  const auto& x = c.input(0);
  if (x.shape.size() != 4) return c.error(StatusCode::kInvalidModel, "input " + ir::shape_string(x.shape) + " must be N×C×H×W");
  WS_ASSIGN_OR_RETURN(int64_t b, attr_int(c, "blocksize", 0));
  if (!c.node.find("blocksize") || b < 1) return c.error(StatusCode::kInvalidModel, "attribute 'blocksize' is required and must be >= 1");
  WS_ASSIGN_OR_RETURN(std::string mode, attr_string(c, "mode", "DCR"));
  const int64_t n = x.shape[0], ch = x.shape[1], h = x.shape[2], w = x.shape[3];
  if (b > (int64_t{1} << 20)) return c.error(StatusCode::kInvalidModel, "attribute 'blocksize' = " + std::to_string(b) + " is out of range");
  ref::Dims view, perm;
  Shape y;
  if (to_space) {
    if (ch % (b * b) != 0) return c.error(StatusCode::kInvalidModel, "channels " + std::to_string(ch) + " are not divisible by blocksize² " + std::to_string(b * b));
    const int64_t co = ch / (b * b);
    if (mode == "DCR") { view = {n, b, b, co, h, w}; perm = {0, 3, 4, 1, 5, 2}; }
    else if (mode == "CRD") { view = {n, co, b, b, h, w}; perm = {0, 1, 4, 2, 5, 3}; }
    else return c.invalid_attribute("mode", "= " + quoted(mode) + " is not one of DCR, CRD");
    y = {n, co, h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0) return c.error(StatusCode::kInvalidModel, "H and W must be divisible by blocksize " + std::to_string(b));
    view = {n, ch, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    y = {n, ch * b * b, h / b, w / b};
  }
  const size_t es = ir::dtype_size(x.dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8) return unsupported_dtype(c, 0, "numeric types");
  set_single_output(c, x.dtype, y);
  c.kernel = [=](In in, Out out) { ref::transpose(in[0], view, perm, out[0], es); };
  return Status::ok();
}
}  // namespace

Status analyze_depth_to_space(NodeContext& c) { return bind_depth_space(c, true); }
Status analyze_space_to_depth(NodeContext& c) { return bind_depth_space(c, false); }

Status analyze_range(NodeContext& c) {
  const DType t = c.input(0).dtype;
  for (size_t i = 0; i < 3; ++i) {
    const auto& v = c.input(i);
    if (!v.is_constant()) return c.error(StatusCode::kUnsupported, "input " + std::to_string(i) + " must be known at build in this fixed-shape engine");
    if (v.dtype != t || v.elements() != 1) return c.error(StatusCode::kInvalidModel, "start, limit and delta must be scalars of one element type");
  }
  if (t == DType::kInt64) {
    const int64_t s = *c.input(0).data_as<int64_t>(), l = *c.input(1).data_as<int64_t>(), d = *c.input(2).data_as<int64_t>();
    if (d == 0) return c.error(StatusCode::kInvalidModel, "delta must not be 0");
    const double n = std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d));
    if (n > 1e9) return c.error(StatusCode::kResourceExhausted, "range of " + std::to_string(n) + " elements");
    const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(n));
    set_single_output(c, t, {count});
    c.kernel = [=](In, Out out) {  // wrapping arithmetic: no signed overflow on hostile start/delta
      for (int64_t i = 0; i < count; ++i)
        static_cast<int64_t*>(out[0])[i] = static_cast<int64_t>(static_cast<uint64_t>(s) + static_cast<uint64_t>(i) * static_cast<uint64_t>(d));
    };
    return Status::ok();
  }
  if (t == DType::kFloat32) {
    const float s = *c.input(0).data_as<float>(), l = *c.input(1).data_as<float>(), d = *c.input(2).data_as<float>();
    const double n = std::ceil((static_cast<double>(l) - s) / d);
    if (!(std::isfinite(n)) || n > 1e9) return c.error(StatusCode::kInvalidModel, "range start/limit/delta give no finite length");
    const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(n));
    set_single_output(c, t, {count});
    c.kernel = [=](In, Out out) { for (int64_t i = 0; i < count; ++i) static_cast<float*>(out[0])[i] = s + static_cast<float>(i) * d; };
    return Status::ok();
  }
  return unsupported_dtype(c, 0, "float32, int64");
}

// ------------------------------------------------------------------------------------------------
// Comparison and logic

namespace {
Status analyze_compare(NodeContext& c, ref::CompareOp op) {
  const DType t = c.input(0).dtype;
  if (c.input(1).dtype != t) return c.error(StatusCode::kInvalidModel, "A and B differ in element type");
  if (t == DType::kFloat16 || ir::dtype_size(t) == 0 || (t == DType::kBool && op != ref::CompareOp::kEqual)) {
    return unsupported_dtype(c, 0, "float32, float64, int64, int32, int8, uint8 (and bool for Equal)");
  }
  WS_ASSIGN_OR_RETURN(ref::Elem e, elem_of(c, t, "input 0"));
  WS_ASSIGN_OR_RETURN(Shape y, broadcast_all(c));
  set_single_output(c, DType::kBool, y);
  const Shape as = c.input(0).shape, bs = c.input(1).shape;
  c.kernel = [=](In in, Out out) { ref::compare(op, e, in[0], as, in[1], bs, static_cast<uint8_t*>(out[0]), y); };
  return Status::ok();
}
Status analyze_logic(NodeContext& c, ref::LogicOp op) {
  if (c.input(0).dtype != DType::kBool) return unsupported_dtype(c, 0, "bool");
  if (c.input(1).dtype != DType::kBool) return unsupported_dtype(c, 1, "bool");
  WS_ASSIGN_OR_RETURN(Shape y, broadcast_all(c));
  set_single_output(c, DType::kBool, y);
  const Shape as = c.input(0).shape, bs = c.input(1).shape;
  c.kernel = [=](In in, Out out) {
    ref::logic(op, static_cast<const uint8_t*>(in[0]), as, static_cast<const uint8_t*>(in[1]), bs, static_cast<uint8_t*>(out[0]), y);
  };
  return Status::ok();
}
}  // namespace

Status analyze_equal(NodeContext& c) { return analyze_compare(c, ref::CompareOp::kEqual); }
Status analyze_less(NodeContext& c) { return analyze_compare(c, ref::CompareOp::kLess); }
Status analyze_greater(NodeContext& c) { return analyze_compare(c, ref::CompareOp::kGreater); }
Status analyze_less_or_equal(NodeContext& c) { return analyze_compare(c, ref::CompareOp::kLessOrEqual); }
Status analyze_greater_or_equal(NodeContext& c) { return analyze_compare(c, ref::CompareOp::kGreaterOrEqual); }
Status analyze_and(NodeContext& c) { return analyze_logic(c, ref::LogicOp::kAnd); }
Status analyze_or(NodeContext& c) { return analyze_logic(c, ref::LogicOp::kOr); }
Status analyze_xor(NodeContext& c) { return analyze_logic(c, ref::LogicOp::kXor); }
Status analyze_not(NodeContext& c) {
  if (c.input(0).dtype != DType::kBool) return unsupported_dtype(c, 0, "bool");
  set_single_output(c, DType::kBool, c.input(0).shape);
  const int64_t n = c.input(0).elements();
  c.kernel = [=](In in, Out out) { ref::logical_not(static_cast<const uint8_t*>(in[0]), static_cast<uint8_t*>(out[0]), n); };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Elementwise math

namespace {
Status make_math(NodeContext& c, ref::MathOp op, ref::MathParams p = {}) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  set_single_output(c, DType::kFloat32, c.input(0).shape);
  const int64_t n = c.input(0).elements();
  c.kernel = [=](In in, Out out) { ref::math(op, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), n, p); };
  return Status::ok();
}
// The ops whose one parameter is the float attribute `alpha`.
Status make_math_alpha(NodeContext& c, ref::MathOp op, float alpha_default) {
  ref::MathParams p;
  WS_ASSIGN_OR_RETURN(p.alpha, attr_float(c, "alpha", alpha_default));
  return make_math(c, op, p);
}
}  // namespace

Status analyze_erf(NodeContext& c) { return make_math(c, ref::MathOp::kErf); }
Status analyze_tanh(NodeContext& c) { return make_math(c, ref::MathOp::kTanh); }
Status analyze_exp(NodeContext& c) { return make_math(c, ref::MathOp::kExp); }
Status analyze_log(NodeContext& c) { return make_math(c, ref::MathOp::kLog); }
Status analyze_sqrt(NodeContext& c) { return make_math(c, ref::MathOp::kSqrt); }
Status analyze_neg(NodeContext& c) {
  if (c.input(0).dtype == DType::kInt64) {  // shape arithmetic
    set_single_output(c, DType::kInt64, c.input(0).shape);
    const int64_t n = c.input(0).elements();
    c.kernel = [=](In in, Out out) {
      for (int64_t i = 0; i < n; ++i)
        static_cast<int64_t*>(out[0])[i] = static_cast<int64_t>(0 - static_cast<uint64_t>(static_cast<const int64_t*>(in[0])[i]));
    };
    return Status::ok();
  }
  return make_math(c, ref::MathOp::kNeg);
}
Status analyze_abs(NodeContext& c) { return make_math(c, ref::MathOp::kAbs); }
Status analyze_reciprocal(NodeContext& c) { return make_math(c, ref::MathOp::kReciprocal); }
Status analyze_floor(NodeContext& c) { return make_math(c, ref::MathOp::kFloor); }
Status analyze_ceil(NodeContext& c) { return make_math(c, ref::MathOp::kCeil); }
Status analyze_softplus(NodeContext& c) { return make_math(c, ref::MathOp::kSoftplus); }
Status analyze_softsign(NodeContext& c) { return make_math(c, ref::MathOp::kSoftsign); }
Status analyze_leaky_relu(NodeContext& c) { return make_math_alpha(c, ref::MathOp::kLeakyRelu, 0.01f); }
Status analyze_elu(NodeContext& c) { return make_math_alpha(c, ref::MathOp::kElu, 1.0f); }
Status analyze_selu(NodeContext& c) {
  ref::MathParams p;
  WS_ASSIGN_OR_RETURN(p.alpha, attr_float(c, "alpha", 1.67326319217681884765625f));
  WS_ASSIGN_OR_RETURN(p.gamma, attr_float(c, "gamma", 1.05070102214813232421875f));
  return make_math(c, ref::MathOp::kSelu, p);
}
Status analyze_gelu(NodeContext& c) {
  WS_ASSIGN_OR_RETURN(std::string approx, attr_string(c, "approximate", "none"));
  if (approx != "none" && approx != "tanh") return c.invalid_attribute("approximate", "= " + quoted(approx) + " is not one of none, tanh");
  return make_math(c, approx == "tanh" ? ref::MathOp::kGeluTanh : ref::MathOp::kGelu);
}

Status analyze_celu(NodeContext& c) {
  ref::MathParams p;
  WS_ASSIGN_OR_RETURN(p.alpha, attr_float(c, "alpha", 1.0f));
  if (p.alpha == 0.0f) return c.error(StatusCode::kInvalidModel, "attribute 'alpha' must not be 0");
  return make_math(c, ref::MathOp::kCelu, p);
}
Status analyze_sin(NodeContext& c) { return make_math(c, ref::MathOp::kSin); }
Status analyze_cos(NodeContext& c) { return make_math(c, ref::MathOp::kCos); }
Status analyze_tan(NodeContext& c) { return make_math(c, ref::MathOp::kTan); }
Status analyze_asin(NodeContext& c) { return make_math(c, ref::MathOp::kAsin); }
Status analyze_acos(NodeContext& c) { return make_math(c, ref::MathOp::kAcos); }
Status analyze_atan(NodeContext& c) { return make_math(c, ref::MathOp::kAtan); }
Status analyze_sinh(NodeContext& c) { return make_math(c, ref::MathOp::kSinh); }
Status analyze_cosh(NodeContext& c) { return make_math(c, ref::MathOp::kCosh); }
Status analyze_asinh(NodeContext& c) { return make_math(c, ref::MathOp::kAsinh); }
Status analyze_acosh(NodeContext& c) { return make_math(c, ref::MathOp::kAcosh); }
Status analyze_atanh(NodeContext& c) { return make_math(c, ref::MathOp::kAtanh); }
Status analyze_sign(NodeContext& c) { return make_math(c, ref::MathOp::kSign); }
Status analyze_round(NodeContext& c) { return make_math(c, ref::MathOp::kRound); }
Status analyze_thresholded_relu(NodeContext& c) { return make_math_alpha(c, ref::MathOp::kThresholdedRelu, 1.0f); }
Status analyze_shrink(NodeContext& c) {
  ref::MathParams p;
  WS_ASSIGN_OR_RETURN(p.bias, attr_float(c, "bias", 0.0f));
  WS_ASSIGN_OR_RETURN(p.lambd, attr_float(c, "lambd", 0.5f));
  return make_math(c, ref::MathOp::kShrink, p);
}
Status analyze_is_nan(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  set_single_output(c, DType::kBool, c.input(0).shape);
  const int64_t n = c.input(0).elements();
  c.kernel = [=](In in, Out out) { ref::is_nan(static_cast<const float*>(in[0]), static_cast<uint8_t*>(out[0]), n); };
  return Status::ok();
}
Status analyze_is_inf(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  WS_ASSIGN_OR_RETURN(int64_t neg, attr_int(c, "detect_negative", 1));
  WS_ASSIGN_OR_RETURN(int64_t pos, attr_int(c, "detect_positive", 1));
  set_single_output(c, DType::kBool, c.input(0).shape);
  const int64_t n = c.input(0).elements();
  c.kernel = [=](In in, Out out) { ref::is_inf(static_cast<const float*>(in[0]), static_cast<uint8_t*>(out[0]), n, neg != 0, pos != 0); };
  return Status::ok();
}
Status analyze_size(NodeContext& c) {
  const int64_t n = c.input(0).elements();
  set_single_output(c, DType::kInt64, {});
  c.kernel = [n](In, Out out) { std::memcpy(out[0], &n, 8); };
  return Status::ok();
}
Status analyze_global_max_pool(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  const Shape& x = c.input(0).shape;
  if (x.size() < 3) return c.error(StatusCode::kInvalidModel, "input X " + ir::shape_string(x) + " must be N×C×spatial");
  Shape y{x[0], x[1]};
  for (size_t i = 2; i < x.size(); ++i) y.push_back(1);
  std::array<bool, ref::kMaxRank> flags{};
  WS_RETURN_IF_ERROR(require_rank(c, x));
  for (size_t i = 2; i < x.size(); ++i) flags[i] = true;
  set_single_output(c, DType::kFloat32, y);
  const size_t r = x.size();
  const Shape xs = x;
  c.kernel = [=](In in, Out out) {
    ref::reduce(ref::ReduceOp::kMax, static_cast<const float*>(in[0]), xs, std::span<const bool>(flags.data(), r), static_cast<float*>(out[0]));
  };
  return Status::ok();
}

namespace {
Status make_binary_f32(NodeContext& c, ref::Binary2Op op) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  WS_RETURN_IF_ERROR(require_f32(c, 1));
  WS_ASSIGN_OR_RETURN(Shape y, broadcast_all(c));
  set_single_output(c, DType::kFloat32, y);
  const Shape as = c.input(0).shape, bs = c.input(1).shape;
  c.kernel = [=](In in, Out out) {
    ref::binary_f32(op, static_cast<const float*>(in[0]), as, static_cast<const float*>(in[1]), bs, static_cast<float*>(out[0]), y);
  };
  return Status::ok();
}
}  // namespace

Status bind_binary_i64(NodeContext& c, int op_i, const Shape& a, const Shape& b) {
  const auto op = static_cast<ref::Binary2Op>(op_i);
  auto y = ref::broadcast_dims(a, b);
  if (!y) return c.error(StatusCode::kInvalidModel, y.status().message());
  WS_RETURN_IF_ERROR(require_rank(c, *y));
  set_single_output(c, DType::kInt64, *y);
  const Shape ys = *y;
  c.kernel = [=](In in, Out out) {
    ref::binary_i64(op, static_cast<const int64_t*>(in[0]), a, static_cast<const int64_t*>(in[1]), b, static_cast<int64_t*>(out[0]), ys);
  };
  return Status::ok();
}

// Mod-13: fmod = 1 (C fmod, required for float data) on float32; fmod = 0 (sign of the divisor) on int64.
Status analyze_mod(NodeContext& c) {
  WS_ASSIGN_OR_RETURN(int64_t fmod, attr_int(c, "fmod", 0));
  const DType t = c.input(0).dtype;
  if (c.input(1).dtype != t) return c.error(StatusCode::kInvalidModel, "A and B differ in element type");
  if (t == DType::kFloat32) {
    if (!fmod) return c.error(StatusCode::kInvalidModel, "fmod = 0 is not defined for floating-point data (the spec requires fmod = 1)");
    return make_binary_f32(c, ref::Binary2Op::kMod);
  }
  if (t == DType::kInt64) {
    // fmod = 1: C semantics, sign of the dividend.
    const ref::Binary2Op op = fmod ? ref::Binary2Op::kFmod : ref::Binary2Op::kMod;
    return bind_binary_i64(c, static_cast<int>(op), c.input(0).shape, c.input(1).shape);
  }
  return unsupported_dtype(c, 0, "float32, int64");
}

Status analyze_pow(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  const auto& e = c.input(1);
  if (e.dtype == DType::kFloat32) return make_binary_f32(c, ref::Binary2Op::kPow);
  if ((e.dtype != DType::kInt64 && e.dtype != DType::kInt32 && e.dtype != DType::kFloat64) || !e.is_constant()) {
    return c.error(StatusCode::kUnsupported, "exponent ('" + e.name + "') must be float32, or a constant int64/int32/float64");
  }
  // A constant non-float exponent is converted once at build.
  WS_ASSIGN_OR_RETURN(ref::Elem from, elem_of(c, e.dtype, "exponent"));
  std::vector<float> ev(static_cast<size_t>(e.elements()));
  ref::cast(e.data->data(), from, ev.data(), ref::Elem::kFloat32, e.elements());
  WS_ASSIGN_OR_RETURN(Shape y, broadcast_all(c));
  set_single_output(c, DType::kFloat32, y);
  const Shape as = c.input(0).shape, bs = e.shape;
  c.kernel = [=](In in, Out out) {
    ref::binary_f32(ref::Binary2Op::kPow, static_cast<const float*>(in[0]), as, ev.data(), bs, static_cast<float*>(out[0]), y);
  };
  return Status::ok();
}

Status analyze_prelu(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  WS_RETURN_IF_ERROR(require_f32(c, 1));
  const Shape& x = c.input(0).shape;
  const Shape slope = prelu_slope_shape(x, c.input(1).shape);  // PRelu-6 / PyTorch [C] slope = channel slope
  auto y = ref::broadcast_dims(x, slope);
  if (!y || *y != x) return c.error(StatusCode::kInvalidModel, "slope " + ir::shape_string(c.input(1).shape) + " does not broadcast to X " + ir::shape_string(x));
  WS_RETURN_IF_ERROR(require_rank(c, x));
  set_single_output(c, DType::kFloat32, x);
  c.kernel = [=](In in, Out out) {
    ref::binary_f32(ref::Binary2Op::kPRelu, static_cast<const float*>(in[0]), x, static_cast<const float*>(in[1]), slope, static_cast<float*>(out[0]), x);
  };
  return Status::ok();
}

namespace {
// Sum/Max/Min/Mean-13: y = broadcast(x0); y = op(y, xi) for the rest; Mean divides at the end.
Status make_variadic(NodeContext& c, ref::Binary2Op op, bool mean) {
  for (size_t i = 0; i < c.input_count(); ++i) {
    if (!c.has_input(i)) return c.error(StatusCode::kInvalidModel, "input " + std::to_string(i) + " is missing");
    WS_RETURN_IF_ERROR(require_f32(c, i));
  }
  WS_ASSIGN_OR_RETURN(Shape y, broadcast_all(c));
  set_single_output(c, DType::kFloat32, y);
  std::vector<Shape> dims;
  for (size_t i = 0; i < c.input_count(); ++i) dims.push_back(c.input(i).shape);
  const int64_t n = ir::shape_elements(y);
  const float count = static_cast<float>(dims.size());
  c.kernel = [=](In in, Out out) {
    float* yp = static_cast<float*>(out[0]);
    ref::expand(in[0], dims[0], yp, y, 4);
    for (size_t i = 1; i < dims.size(); ++i) ref::binary_f32(op, yp, y, static_cast<const float*>(in[i]), dims[i], yp, y);
    if (mean) for (int64_t k = 0; k < n; ++k) yp[k] /= count;
  };
  return Status::ok();
}
}  // namespace

// Einsum-12 (reference/einsum.h: grammar, broadcasting, implicit output). float32 / float64; the direct
// evaluation accumulates in double. The CUDA executor lowers it to Transpose / ReduceSum / Reshape / MatMul at
// build (ir::lower_einsum) and runs those.
Status analyze_einsum(NodeContext& c) {
  WS_ASSIGN_OR_RETURN(std::string eq, attr_string(c, "equation", ""));
  if (!c.node.find("equation")) return c.error(StatusCode::kInvalidModel, "attribute 'equation' is required");
  if (eq.size() > 1024) return c.bad_attribute("equation", "is longer than 1024 characters");
  const DType dt = c.input(0).dtype;
  if (dt != DType::kFloat32 && dt != DType::kFloat64) return unsupported_dtype(c, 0, "float32 and float64");
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < c.input_count(); ++k) {
    WS_RETURN_IF_ERROR(c.require_input(k, "operand"));
    if (c.input(k).dtype != dt)  // Einsum's operands share one type T (the spec), so a mix is an invalid model
      return c.error(StatusCode::kInvalidModel, "operand " + std::to_string(k) + " is " + ir::dtype_name(c.input(k).dtype) +
                                                    " but operand 0 is " + ir::dtype_name(dt) + " (one type T for all)");
    shapes.push_back(c.input(k).shape);
  }
  Result<ref::EinsumSpec> spec = ref::parse_einsum(eq, shapes);
  if (!spec.is_ok()) return c.error(spec.status().code(), spec.status().message());
  set_single_output(c, dt, spec.value().output_shape());
  auto sp = std::make_shared<const ref::EinsumSpec>(std::move(spec).value());
  const size_t n = shapes.size();
  c.kernel = [sp, dt, n](In in, Out out) {
    if (dt == DType::kFloat32) {
      std::array<const float*, 16> p{};
      for (size_t k = 0; k < n; ++k) p[k] = static_cast<const float*>(in[k]);
      ref::einsum<float>(*sp, std::span<const float* const>(p.data(), n), static_cast<float*>(out[0]));
    } else {
      std::array<const double*, 16> p{};
      for (size_t k = 0; k < n; ++k) p[k] = static_cast<const double*>(in[k]);
      ref::einsum<double>(*sp, std::span<const double* const>(p.data(), n), static_cast<double*>(out[0]));
    }
  };
  return Status::ok();
}

Status analyze_sum(NodeContext& c) { return make_variadic(c, ref::Binary2Op::kAdd, false); }
Status analyze_mean(NodeContext& c) { return make_variadic(c, ref::Binary2Op::kAdd, true); }
Status analyze_max(NodeContext& c) { return make_variadic(c, ref::Binary2Op::kMax, false); }
Status analyze_min(NodeContext& c) { return make_variadic(c, ref::Binary2Op::kMin, false); }

// ------------------------------------------------------------------------------------------------
// Reductions and normalisation

namespace {
Status make_reduce(NodeContext& c, ref::ReduceOp op) {
  const auto& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  WS_RETURN_IF_ERROR(require_rank(c, x.shape));
  const bool is_int = x.dtype == DType::kInt64;
  if (x.dtype != DType::kFloat32 && !is_int) return unsupported_dtype(c, 0, "float32, int64");
  if (is_int && op != ref::ReduceOp::kSum && op != ref::ReduceOp::kProd && op != ref::ReduceOp::kMax &&
      op != ref::ReduceOp::kMin && op != ref::ReduceOp::kMean && op != ref::ReduceOp::kSumSquare) {
    return unsupported_dtype(c, 0, "float32 (int64 for Sum, Mean, Prod, Max, Min, SumSquare)");
  }
  WS_ASSIGN_OR_RETURN(int64_t keepdims, attr_int(c, "keepdims", 1));
  WS_ASSIGN_OR_RETURN(int64_t noop_empty, attr_int(c, "noop_with_empty_axes", 0));
  std::vector<int64_t> axes;
  // Axes: an attribute up to ReduceSum-11 / Reduce*-13, an optional input from ReduceSum-13 / Reduce*-18.
  if (c.node.find("axes")) {
    if (c.has_input(1)) return c.invalid_attribute("axes", "is given both as attribute and as input");
    WS_ASSIGN_OR_RETURN(axes, attr_ints(c, "axes", {}));
  } else if (c.has_input(1)) {
    WS_ASSIGN_OR_RETURN(axes, const_ints(c, 1, "axes"));
  }
  std::vector<bool> red(static_cast<size_t>(rank), axes.empty() && !noop_empty);
  for (int64_t a : axes) {
    WS_ASSIGN_OR_RETURN(int64_t n, norm_axis(c, "axes", a, rank));
    red[static_cast<size_t>(n)] = true;
  }
  Shape y;
  for (int64_t i = 0; i < rank; ++i) {
    if (!red[static_cast<size_t>(i)]) y.push_back(x.shape[static_cast<size_t>(i)]);
    else if (keepdims) y.push_back(1);
  }
  set_single_output(c, x.dtype, y);
  const Shape xs = x.shape;
  // std::vector<bool> has no span view: keep flags as a bool array.
  std::array<bool, ref::kMaxRank> flags{};
  for (size_t i = 0; i < red.size(); ++i) flags[i] = red[i];
  const size_t r = red.size();
  if (is_int) {
    c.kernel = [=](In in, Out out) {
      ref::reduce_i64(op, static_cast<const int64_t*>(in[0]), xs, std::span<const bool>(flags.data(), r), static_cast<int64_t*>(out[0]));
    };
  } else {
    c.kernel = [=](In in, Out out) {
      ref::reduce(op, static_cast<const float*>(in[0]), xs, std::span<const bool>(flags.data(), r), static_cast<float*>(out[0]));
    };
  }
  return Status::ok();
}

Status make_arg(NodeContext& c, bool is_max) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  const Shape& x = c.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", 0));
  WS_ASSIGN_OR_RETURN(int64_t axis, norm_axis(c, "axis", axis_attr, rank));
  WS_ASSIGN_OR_RETURN(int64_t keepdims, attr_int(c, "keepdims", 1));
  WS_ASSIGN_OR_RETURN(int64_t last, attr_int(c, "select_last_index", 0));
  int64_t outer = 1, inner = 1;
  Shape y;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x[static_cast<size_t>(i)];
    if (i < axis) outer *= d;
    if (i > axis) inner *= d;
    if (i != axis) y.push_back(d);
    else if (keepdims) y.push_back(1);
  }
  const int64_t len = x[static_cast<size_t>(axis)];
  if (len == 0) return c.error(StatusCode::kInvalidModel, "cannot take an arg-extreme over an empty axis");
  set_single_output(c, DType::kInt64, y);
  c.kernel = [=](In in, Out out) {
    ref::arg_extreme(is_max, static_cast<const float*>(in[0]), outer, len, inner, last != 0, static_cast<int64_t*>(out[0]));
  };
  return Status::ok();
}
}  // namespace

Status analyze_reduce_sum(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kSum); }
Status analyze_reduce_mean(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kMean); }
Status analyze_reduce_max(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kMax); }
Status analyze_reduce_min(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kMin); }
Status analyze_reduce_prod(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kProd); }
Status analyze_reduce_l1(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kL1); }
Status analyze_reduce_l2(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kL2); }
Status analyze_reduce_log_sum(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kLogSum); }
Status analyze_reduce_log_sum_exp(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kLogSumExp); }
Status analyze_reduce_sum_square(NodeContext& c) { return make_reduce(c, ref::ReduceOp::kSumSquare); }
Status analyze_arg_max(NodeContext& c) { return make_arg(c, true); }
Status analyze_arg_min(NodeContext& c) { return make_arg(c, false); }

Status analyze_layer_normalization(NodeContext& c) {
  for (size_t i = 0; i < 3; ++i) WS_RETURN_IF_ERROR(require_f32(c, i));
  const Shape& x = c.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", -1));
  WS_ASSIGN_OR_RETURN(int64_t axis, norm_axis(c, "axis", axis_attr, rank));
  WS_ASSIGN_OR_RETURN(float eps, attr_float(c, "epsilon", 1e-5f));
  WS_ASSIGN_OR_RETURN(int64_t stash, attr_int(c, "stash_type", 1));
  if (stash != 1) return c.bad_attribute("stash_type", "= " + std::to_string(stash) + " is not supported (float32 statistics only)");
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? rows : cols) *= x[static_cast<size_t>(i)];
  const Shape norm_shape(x.begin() + axis, x.end());
  for (size_t i = 1; i < 3; ++i) {
    if (!c.has_input(i)) continue;
    const Shape& s = c.input(i).shape;
    if (s != norm_shape) {
      return c.error(StatusCode::kUnsupported, std::string(i == 1 ? "Scale " : "B ") + ir::shape_string(s) +
                                                   " must equal the normalised shape " + ir::shape_string(norm_shape) + " (broadcast forms are not supported)");
    }
  }
  set_outputs(c);
  c.output_dtypes[0] = DType::kFloat32;
  c.output_shapes[0] = x;
  Shape stat = x;
  for (int64_t i = axis; i < rank; ++i) stat[static_cast<size_t>(i)] = 1;
  for (size_t o = 1; o < c.node.outputs.size(); ++o) {
    if (c.node.outputs[o] == ir::kNoTensor) continue;
    c.output_dtypes[o] = DType::kFloat32;
    c.output_shapes[o] = stat;
  }
  const bool has_b = c.has_input(2);
  c.kernel = [=](In in, Out out) {
    ref::layer_norm(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                    has_b ? static_cast<const float*>(in[2]) : nullptr, static_cast<float*>(out[0]), rows, cols, eps,
                    out.size() > 1 ? static_cast<float*>(out[1]) : nullptr, out.size() > 2 ? static_cast<float*>(out[2]) : nullptr);
  };
  return Status::ok();
}

Status analyze_instance_normalization(NodeContext& c) {
  for (size_t i = 0; i < 3; ++i) WS_RETURN_IF_ERROR(require_f32(c, i));
  const Shape& x = c.input(0).shape;
  if (x.size() < 3) return c.error(StatusCode::kInvalidModel, "input " + ir::shape_string(x) + " must be N×C×spatial");
  for (size_t i = 1; i < 3; ++i)
    if (c.input(i).shape != Shape{x[1]}) return c.error(StatusCode::kInvalidModel, "input " + std::to_string(i) + " " + ir::shape_string(c.input(i).shape) + " must be [" + std::to_string(x[1]) + "]");
  WS_ASSIGN_OR_RETURN(float eps, attr_float(c, "epsilon", 1e-5f));
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  set_single_output(c, DType::kFloat32, x);
  const int64_t n = x[0], ch = x[1];
  c.kernel = [=](In in, Out out) {
    ref::instance_norm(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<const float*>(in[2]),
                       static_cast<float*>(out[0]), n, ch, spatial, eps);
  };
  return Status::ok();
}

Status analyze_log_softmax(NodeContext& c) { return bind_softmax_family(c, ref::log_softmax); }

// ------------------------------------------------------------------------------------------------
// ConvTranspose and Resize

Status analyze_conv_transpose(NodeContext& c) {
  for (size_t i = 0; i < 3; ++i) WS_RETURN_IF_ERROR(require_f32(c, i));
  const Shape& x = c.input(0).shape;
  const Shape& w = c.input(1).shape;
  if (x.size() < 3 || x.size() > 5) return c.error(StatusCode::kUnsupported, "input " + ir::shape_string(x) + ": spatial rank must be 1, 2 or 3");
  if (w.size() != x.size()) return c.error(StatusCode::kInvalidModel, "weight " + ir::shape_string(w) + " and input " + ir::shape_string(x) + " differ in rank");
  const int rank = static_cast<int>(x.size()) - 2;
  WS_ASSIGN_OR_RETURN(int64_t group, attr_int(c, "group", 1));
  if (group < 1 || x[1] % group != 0) return c.error(StatusCode::kInvalidModel, "group = " + std::to_string(group) + " must be >= 1 and divide the input channels " + std::to_string(x[1]));
  if (w[0] != x[1]) return c.error(StatusCode::kInvalidModel, "weight " + ir::shape_string(w) + " must have " + std::to_string(x[1]) + " (input channels) rows");
  const int64_t c_out = w[1] * group;
  if (c.has_input(2) && c.input(2).shape != Shape{c_out}) return c.error(StatusCode::kInvalidModel, "bias " + ir::shape_string(c.input(2).shape) + " must be [" + std::to_string(c_out) + "]");
  std::vector<int64_t> wk(w.begin() + 2, w.end());
  WS_ASSIGN_OR_RETURN(auto kernel, attr_ints(c, "kernel_shape", wk));
  if (kernel != wk) return c.invalid_attribute("kernel_shape", "= " + ir::shape_string(kernel) + " disagrees with the weight shape " + ir::shape_string(w));
  const std::vector<int64_t> ones(static_cast<size_t>(rank), 1), zeros(static_cast<size_t>(rank), 0);
  WS_ASSIGN_OR_RETURN(auto strides, attr_ints(c, "strides", ones));
  WS_ASSIGN_OR_RETURN(auto dil, attr_ints(c, "dilations", ones));
  WS_ASSIGN_OR_RETURN(auto pads, attr_ints(c, "pads", std::vector<int64_t>(2 * static_cast<size_t>(rank), 0)));
  WS_ASSIGN_OR_RETURN(auto out_pad, attr_ints(c, "output_padding", zeros));
  WS_ASSIGN_OR_RETURN(auto out_shape, attr_ints(c, "output_shape", {}));
  WS_ASSIGN_OR_RETURN(std::string auto_pad, attr_string(c, "auto_pad", "NOTSET"));
  if (strides.size() != static_cast<size_t>(rank) || dil.size() != static_cast<size_t>(rank) || out_pad.size() != static_cast<size_t>(rank) ||
      pads.size() != 2 * static_cast<size_t>(rank)) {
    return c.error(StatusCode::kInvalidModel, "strides/dilations/output_padding need " + std::to_string(rank) + " values and pads " + std::to_string(2 * rank));
  }
  if (!out_shape.empty() && out_shape.size() == static_cast<size_t>(rank) + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != static_cast<size_t>(rank)) return c.invalid_attribute("output_shape", "needs " + std::to_string(rank) + " values");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID") {
    return c.invalid_attribute("auto_pad", "= " + quoted(auto_pad) + " is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  ref::ConvTransposeParams p;
  p.rank = rank; p.n = x[0]; p.c_in = x[1]; p.c_out = c_out; p.groups = group;
  Shape y{x[0], c_out};
  for (int i = 0; i < rank; ++i) {
    const size_t u = static_cast<size_t>(i);
    if (strides[u] < 1 || dil[u] < 1 || kernel[u] < 1) return c.error(StatusCode::kInvalidModel, "strides, dilations and kernel_shape must be >= 1");
    if (pads[u] < 0 || pads[u + static_cast<size_t>(rank)] < 0) return c.error(StatusCode::kInvalidModel, "pads must be >= 0");
    if (pads[u] > (int64_t{1} << 40) || pads[u + static_cast<size_t>(rank)] > (int64_t{1} << 40) || out_pad[u] > (int64_t{1} << 40))
      return c.error(StatusCode::kInvalidModel, "pads/output_padding are out of range");
    if (out_pad[u] < 0 || (out_pad[u] >= strides[u] && out_pad[u] >= dil[u])) return c.error(StatusCode::kInvalidModel, "output_padding must be >= 0 and less than the stride or dilation");
    const int64_t in = x[u + 2];
    // eff = (kernel − 1)·dilation + 1 and full = stride·(in − 1) + output_padding + eff, checked.
    std::optional<int64_t> eff_o = checked_mul(kernel[u] - 1, dil[u]);
    if (eff_o) eff_o = checked_add(*eff_o, 1);
    std::optional<int64_t> full_o = eff_o ? checked_mul(strides[u], in - 1) : std::nullopt;
    if (full_o) full_o = checked_add(*full_o, out_pad[u]);
    if (full_o) full_o = checked_add(*full_o, *eff_o);
    if (!full_o) return c.error(StatusCode::kInvalidModel, "output extent overflows 64-bit arithmetic along spatial axis " + std::to_string(i));
    const int64_t full = *full_o;
    int64_t pb = pads[u], pe = pads[u + static_cast<size_t>(rank)], out;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (!out_shape.empty() && (out_shape[u] < 1 || out_shape[u] > (int64_t{1} << 40))) return c.bad_attribute("output_shape", "values must be in [1, 2^40]");
      std::optional<int64_t> o = !out_shape.empty() ? std::optional<int64_t>(out_shape[u]) : checked_mul(in, strides[u]);
      if (!o) return c.error(StatusCode::kInvalidModel, "output extent overflows 64-bit arithmetic");
      out = *o;
      const int64_t total = full - out;
      if (total < 0 && out_shape.empty()) return c.error(StatusCode::kInvalidModel, "negative total padding");
      // ONNX's reference splits with floor division (a negative total pads the end by −1 first).
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (auto_pad == "SAME_UPPER") { pb = half; pe = total - half; }
      else { pe = half; pb = total - half; }
    } else {
      if (auto_pad == "VALID") pb = pe = 0;
      out = full - pb - pe;
    }
    if (out < 1) return c.error(StatusCode::kInvalidModel, "output extent " + std::to_string(out) + " along spatial axis " + std::to_string(i) + " is < 1");
    p.in[i] = in; p.kernel[i] = kernel[u]; p.stride[i] = strides[u]; p.dilation[i] = dil[u]; p.pad_begin[i] = pb; p.out[i] = out;
    y.push_back(out);
  }
  set_single_output(c, DType::kFloat32, y);
  const bool has_b = c.has_input(2);
  c.kernel = [=](In in, Out out) {
    ref::conv_transpose_nd(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                           has_b ? static_cast<const float*>(in[2]) : nullptr, static_cast<float*>(out[0]), p);
  };
  return Status::ok();
}

namespace {
Result<std::vector<double>> const_floats(const NodeContext& c, size_t i, const char* what) {
  const auto& t = c.input(i);
  if (!t.is_constant()) return c.error(StatusCode::kUnsupported, std::string(what) + " ('" + t.name + "') must be known at build in this fixed-shape engine");
  std::vector<double> v(static_cast<size_t>(t.elements()));
  if (t.dtype == DType::kFloat32) for (size_t k = 0; k < v.size(); ++k) v[k] = t.data_as<float>()[k];
  else if (t.dtype == DType::kFloat64) for (size_t k = 0; k < v.size(); ++k) v[k] = t.data_as<double>()[k];
  else return c.error(StatusCode::kInvalidModel, std::string(what) + " must be float32");
  return v;
}

Status bind_resize(NodeContext& c, ref::ResizeParams p, const std::vector<double>& scales_in, const std::vector<int64_t>& sizes) {
  const Shape& x = c.input(0).shape;
  const size_t r = x.size();
  p.in_dims = x;
  p.out_dims.assign(r, 0);
  p.scales.assign(r, 1.0);
  if (!sizes.empty()) {
    if (sizes.size() != r) return c.error(StatusCode::kInvalidModel, "sizes has " + std::to_string(sizes.size()) + " values for rank " + std::to_string(r));
    for (size_t i = 0; i < r; ++i) {
      if (sizes[i] < 1) return c.error(StatusCode::kInvalidModel, "sizes must be >= 1");
      p.out_dims[i] = sizes[i];
      p.scales[i] = static_cast<double>(sizes[i]) / static_cast<double>(x[i]);
    }
  } else {
    if (scales_in.size() != r) return c.error(StatusCode::kInvalidModel, "scales has " + std::to_string(scales_in.size()) + " values for rank " + std::to_string(r));
    for (size_t i = 0; i < r; ++i) {
      if (!(scales_in[i] > 0) || !std::isfinite(scales_in[i])) return c.error(StatusCode::kInvalidModel, "scales must be > 0");
      // ONNX: output = floor(input × scale) (computed in float32 by the reference's numpy).
      const double o = std::floor(static_cast<double>(static_cast<float>(x[i]) * static_cast<float>(scales_in[i])));
      if (o < 1 || o > 1e9) return c.error(StatusCode::kInvalidModel, "scale " + std::to_string(scales_in[i]) + " gives output extent " + std::to_string(o));
      p.out_dims[i] = static_cast<int64_t>(o);
      p.scales[i] = static_cast<float>(scales_in[i]);
    }
  }
  for (size_t i = 0; i < r; ++i) if (x[i] < 1) return c.error(StatusCode::kInvalidModel, "input " + ir::shape_string(x) + " has an empty axis");
  WS_RETURN_IF_ERROR(require_rank(c, x));
  const int64_t total = ir::shape_elements(p.out_dims);
  if (total < 0 || total > (int64_t{1} << 32)) return c.error(StatusCode::kResourceExhausted, "output " + ir::shape_string(p.out_dims) + " is too large");
  // The taps below are sized by the output extents: bound the output before building them.
  WS_RETURN_IF_ERROR(check_shape_within_limits(p.out_dims, c.node.describe(c.graph.opset) + ": output"));
  set_single_output(c, DType::kFloat32, p.out_dims);
  auto taps = std::make_shared<const ref::ResizeTaps>(ref::make_resize_taps(p));
  c.kernel = [taps](In in, Out out) { ref::resize(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), *taps); };
  return Status::ok();
}
}  // namespace

Status analyze_resize(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  ref::ResizeParams p;
  WS_ASSIGN_OR_RETURN(std::string mode, attr_string(c, "mode", "nearest"));
  if (mode == "nearest") p.mode = ref::ResizeMode::kNearest;
  else if (mode == "linear") p.mode = ref::ResizeMode::kLinear;
  else if (mode == "cubic") p.mode = ref::ResizeMode::kCubic;
  else return c.invalid_attribute("mode", "= " + quoted(mode) + " is not one of nearest, linear, cubic");
  const bool v10 = c.graph.opset < 11;
  WS_ASSIGN_OR_RETURN(std::string coord, attr_string(c, "coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel"));
  if (coord == "half_pixel") p.coord = ref::CoordMode::kHalfPixel;
  else if (coord == "asymmetric") p.coord = ref::CoordMode::kAsymmetric;
  else if (coord == "align_corners") p.coord = ref::CoordMode::kAlignCorners;
  else if (coord == "pytorch_half_pixel") p.coord = ref::CoordMode::kPytorchHalfPixel;
  else if (coord == "tf_crop_and_resize") p.coord = ref::CoordMode::kTfCropAndResize;
  else if (coord == "half_pixel_symmetric") p.coord = ref::CoordMode::kHalfPixelSymmetric;
  else if (coord == "tf_half_pixel_for_nearest" || coord == "tf_half_pixel_for_nn")  // opset 11 (ONNX <= 1.12 spells it _nn)
    return c.bad_attribute("coordinate_transformation_mode", "= " + quoted(coord) + " (opset 11) is not supported");
  else return c.invalid_attribute("coordinate_transformation_mode", "= " + quoted(coord) + " is not a Resize coordinate mode");
  WS_ASSIGN_OR_RETURN(std::string nearest, attr_string(c, "nearest_mode", v10 ? "floor" : "round_prefer_floor"));
  if (nearest == "round_prefer_floor") p.nearest = ref::NearestMode::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil") p.nearest = ref::NearestMode::kRoundPreferCeil;
  else if (nearest == "floor") p.nearest = ref::NearestMode::kFloor;
  else if (nearest == "ceil") p.nearest = ref::NearestMode::kCeil;
  else return c.invalid_attribute("nearest_mode", "= " + quoted(nearest) + " is not one of round_prefer_floor, round_prefer_ceil, floor, ceil");
  WS_ASSIGN_OR_RETURN(p.cubic_coeff_a, attr_float(c, "cubic_coeff_a", -0.75f));
  WS_ASSIGN_OR_RETURN(int64_t excl, attr_int(c, "exclude_outside", 0));
  p.exclude_outside = excl != 0;
  WS_ASSIGN_OR_RETURN(p.extrapolation_value, attr_float(c, "extrapolation_value", 0.0f));
  WS_ASSIGN_OR_RETURN(int64_t antialias, attr_int(c, "antialias", 0));
  const std::string before18 = "is an opset-18 attribute; this model declares opset " + std::to_string(c.graph.opset);
  if (c.graph.opset < 18 && c.node.find("antialias")) return c.invalid_attribute("antialias", before18);
  if (c.graph.opset < 18 && c.node.find("axes")) return c.invalid_attribute("axes", before18);
  if (c.graph.opset < 18 && c.node.find("keep_aspect_ratio_policy")) return c.invalid_attribute("keep_aspect_ratio_policy", before18);
  if (antialias) return c.bad_attribute("antialias", "= 1 (opset 18) is not supported");
  if (c.node.find("axes")) return c.bad_attribute("axes", "(opset 18) is not supported");
  WS_ASSIGN_OR_RETURN(std::string policy, attr_string(c, "keep_aspect_ratio_policy", "stretch"));
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return c.invalid_attribute("keep_aspect_ratio_policy", "= " + quoted(policy) + " is not one of stretch, not_larger, not_smaller");
  if (policy != "stretch") return c.bad_attribute("keep_aspect_ratio_policy", "= " + quoted(policy) + " is not supported");
  const size_t r = c.input(0).shape.size();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (v10) {
    WS_RETURN_IF_ERROR(c.require_input(1, "scales"));
    WS_ASSIGN_OR_RETURN(scales, const_floats(c, 1, "scales"));
  } else {
    if (c.has_input(3) && c.input(3).elements() > 0) { WS_ASSIGN_OR_RETURN(sizes, const_ints(c, 3, "sizes")); }
    if (c.has_input(2) && c.input(2).elements() > 0) {
      if (!sizes.empty()) return c.error(StatusCode::kInvalidModel, "give scales or sizes, not both");
      WS_ASSIGN_OR_RETURN(scales, const_floats(c, 2, "scales"));
    }
    if (sizes.empty() && scales.empty()) return c.error(StatusCode::kInvalidModel, "needs scales or sizes");
    if (p.coord == ref::CoordMode::kTfCropAndResize) {
      if (!c.has_input(1)) return c.error(StatusCode::kInvalidModel, "tf_crop_and_resize needs roi");
      WS_ASSIGN_OR_RETURN(auto roi, const_floats(c, 1, "roi"));
      if (roi.size() != 2 * r) return c.error(StatusCode::kInvalidModel, "roi needs " + std::to_string(2 * r) + " values");
      p.roi_start.assign(roi.begin(), roi.begin() + static_cast<int64_t>(r));
      p.roi_end.assign(roi.begin() + static_cast<int64_t>(r), roi.end());
    }
  }
  return bind_resize(c, std::move(p), scales, sizes);
}

// Upsample-7/9 (deprecated in 10): nearest or linear, asymmetric coordinates, scales as attribute (7) or input (9).
Status analyze_upsample(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_f32(c, 0));
  ref::ResizeParams p;
  WS_ASSIGN_OR_RETURN(std::string mode, attr_string(c, "mode", "nearest"));
  if (mode == "nearest") p.mode = ref::ResizeMode::kNearest;
  else if (mode == "linear" || mode == "bilinear") p.mode = ref::ResizeMode::kLinear;
  else return c.invalid_attribute("mode", "= " + quoted(mode) + " is not one of nearest, linear");
  p.coord = ref::CoordMode::kAsymmetric;
  p.nearest = ref::NearestMode::kFloor;
  std::vector<double> scales;
  if (c.node.find("scales")) {
    const Attribute* a = c.node.find("scales");
    if (a->kind != Attribute::Kind::kFloats) return c.invalid_attribute("scales", "must be a list of floats");
    scales.assign(a->floats.begin(), a->floats.end());
  } else if (c.has_input(1)) {
    WS_ASSIGN_OR_RETURN(scales, const_floats(c, 1, "scales"));
  } else {
    return c.error(StatusCode::kInvalidModel, "needs scales");
  }
  return bind_resize(c, std::move(p), scales, {});
}

}  // namespace ws::engine::ext
