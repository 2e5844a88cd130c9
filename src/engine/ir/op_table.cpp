// The op table: validation, shape inference and the CPU kernel of every supported ONNX op, one
// entry each (see op_table.h). Semantics follow https://onnx.ai/onnx/operators/ at the opset the
// model declares; opset differences are handled where they exist for these ops (Clip bounds as
// attributes before opset 11 and inputs after; Softmax's flattening before opset 13; Reshape's shape
// attribute before opset 5; Dropout's ratio attribute before opset 12).
#include "engine/ir/op_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>

#include "core/checked_math.h"
#include "core/escape.h"
#include "core/limits.h"
#include "engine/ir/op_table_ext.h"
#include "engine/ir/op_table_util.h"
#include "reference/einsum.h"
#include "reference/ops_ext.h"
#include "reference/pad.h"
#include "reference/reference.h"

namespace ws::engine {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Shape;

using op_util::attr_float;
using op_util::attr_int;
using op_util::attr_ints;
using op_util::attr_string;
using op_util::set_single_output;

Status require_float(const NodeContext& c, size_t i) {
  if (!c.has_input(i)) return Status::ok();
  const auto& t = c.input(i);
  if (t.dtype != DType::kFloat32) {
    return c.error(StatusCode::kUnsupported, "input " + std::to_string(i) + " (" + quoted(t.name) + ") has element type " +
                                                 ir::dtype_name(t.dtype) + "; only float32 is supported");
  }
  return Status::ok();
}
Status require_all_float(const NodeContext& c) {
  for (size_t i = 0; i < c.input_count(); ++i) WS_RETURN_IF_ERROR(require_float(c, i));
  return Status::ok();
}

Result<int64_t> normalize_axis(const NodeContext& c, const char* attr, int64_t axis, int64_t rank, bool inclusive_end) {
  const int64_t hi = inclusive_end ? rank : rank - 1;
  if (axis < -rank - (inclusive_end ? 0 : 0) || axis > hi || (axis < 0 && axis + rank < 0)) {
    return c.invalid_attribute(attr, "= " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// ------------------------------------------------------------------------------------------------
// Spatial windows (Conv, MaxPool, AveragePool): strides, dilations, pads, auto_pad, ceil_mode.

struct Window {
  int rank = 0;
  int64_t in[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

Status resolve_window(const NodeContext& c, const Shape& x, const std::vector<int64_t>& kernel, bool allow_ceil,
                      Window& w) {
  const int rank = static_cast<int>(x.size()) - 2;
  if (rank < 1 || rank > 3) {
    return c.error(StatusCode::kUnsupported, "input rank " + std::to_string(x.size()) +
                                                 " is not supported (spatial rank must be 1, 2 or 3)");
  }
  w.rank = rank;
  if (static_cast<int>(kernel.size()) != rank) {
    return c.invalid_attribute("kernel_shape", "has " + std::to_string(kernel.size()) + " values for spatial rank " +
                                               std::to_string(rank));
  }
  WS_ASSIGN_OR_RETURN(auto strides, attr_ints(c, "strides", std::vector<int64_t>(rank, 1)));
  WS_ASSIGN_OR_RETURN(auto dilations, attr_ints(c, "dilations", std::vector<int64_t>(rank, 1)));
  WS_ASSIGN_OR_RETURN(auto pads, attr_ints(c, "pads", std::vector<int64_t>(2 * rank, 0)));
  WS_ASSIGN_OR_RETURN(std::string auto_pad, attr_string(c, "auto_pad", "NOTSET"));
  WS_ASSIGN_OR_RETURN(int64_t ceil_mode, attr_int(c, "ceil_mode", 0));
  if (static_cast<int>(strides.size()) != rank) return c.invalid_attribute("strides", "needs " + std::to_string(rank) + " values");
  if (static_cast<int>(dilations.size()) != rank) return c.invalid_attribute("dilations", "needs " + std::to_string(rank) + " values");
  if (static_cast<int>(pads.size()) != 2 * rank) return c.invalid_attribute("pads", "needs " + std::to_string(2 * rank) + " values");
  if (ceil_mode != 0 && (!allow_ceil || ceil_mode != 1)) return c.bad_attribute("ceil_mode", "= " + std::to_string(ceil_mode) + " is not supported");
  for (int i = 0; i < rank; ++i) {
    w.in[i] = x[static_cast<size_t>(i) + 2];
    w.kernel[i] = kernel[static_cast<size_t>(i)];
    w.stride[i] = strides[static_cast<size_t>(i)];
    w.dilation[i] = dilations[static_cast<size_t>(i)];
    // Values the spec rules out make the model invalid (a failure of the model, not a skip).
    if (w.kernel[i] < 1) return c.error(StatusCode::kInvalidModel, "attribute 'kernel_shape' values must be >= 1");
    if (w.stride[i] < 1) return c.error(StatusCode::kInvalidModel, "attribute 'strides' values must be >= 1");
    if (w.dilation[i] < 1) return c.error(StatusCode::kInvalidModel, "attribute 'dilations' values must be >= 1");
    // Every quantity the reference kernels derive from the window (effective extent, padded
    // extent, last window start) is computed here with overflow checks; the per-tensor element
    // bound (core/limits.h) then bounds the output. Kernels rely on these values being in range.
    auto overflow = [&](const char* what) {
      return c.error(StatusCode::kInvalidModel, std::string(what) + " overflows 64-bit arithmetic along spatial axis " +
                                                    std::to_string(i) + " (kernel " + std::to_string(w.kernel[i]) + ", stride " +
                                                    std::to_string(w.stride[i]) + ", dilation " + std::to_string(w.dilation[i]) + ")");
    };
    std::optional<int64_t> eff_o = checked_mul(w.kernel[i] - 1, w.dilation[i]);
    if (eff_o) eff_o = checked_add(*eff_o, 1);
    if (!eff_o) return overflow("the window extent (kernel - 1) × dilation + 1");
    const int64_t eff = *eff_o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[i] = w.in[i] / w.stride[i] + (w.in[i] % w.stride[i] != 0 ? 1 : 0);
      std::optional<int64_t> need = checked_mul(std::max<int64_t>(w.out[i] - 1, 0), w.stride[i]);
      if (need) need = checked_add(*need, eff);
      if (!need) return overflow("the SAME padding");
      const int64_t total = std::max<int64_t>(0, *need - w.in[i]);
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
      if (!checked_add(w.in[i], total)) return overflow("the padded input");
    } else if (auto_pad == "VALID" || auto_pad == "NOTSET") {
      if (auto_pad == "NOTSET") {
        w.pad_begin[i] = pads[static_cast<size_t>(i)];
        w.pad_end[i] = pads[static_cast<size_t>(i + rank)];
        if (w.pad_begin[i] < 0 || w.pad_end[i] < 0) return c.error(StatusCode::kInvalidModel, "attribute 'pads' = " + ir::shape_string(pads) + ": values must be >= 0");
      }
      std::optional<int64_t> padded = checked_add(w.in[i], w.pad_begin[i]);
      if (padded) padded = checked_add(*padded, w.pad_end[i]);
      if (!padded) return overflow("the padded input (input + pads)");
      const int64_t span = *padded - eff;
      if (span < 0) {
        return c.error(StatusCode::kInvalidModel, "window of " + std::to_string(eff) + " (kernel × dilation) is larger than the padded input " +
                                                      std::to_string(*padded) + " along spatial axis " + std::to_string(i));
      }
      w.out[i] = (ceil_mode ? span / w.stride[i] + (span % w.stride[i] != 0 ? 1 : 0) : span / w.stride[i]) + 1;
      // A window may not start in the end padding (PyTorch/ONNX reference rule for ceil_mode).
      if (ceil_mode && (w.out[i] - 1) * w.stride[i] >= w.in[i] + w.pad_begin[i]) --w.out[i];
    } else {
      return c.invalid_attribute("auto_pad", "= " + quoted(auto_pad) + " is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
  }
  return Status::ok();
}

template <typename P>
void copy_window(const Window& w, P& p) {
  p.rank = w.rank;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = w.in[i]; p.kernel[i] = w.kernel[i]; p.stride[i] = w.stride[i]; p.dilation[i] = w.dilation[i];
    p.pad_begin[i] = w.pad_begin[i]; p.pad_end[i] = w.pad_end[i]; p.out[i] = w.out[i];
  }
}

Shape window_output_shape(int64_t n, int64_t c, const Window& w) {
  Shape s{n, c};
  for (int i = 0; i < w.rank; ++i) s.push_back(w.out[i]);
  return s;
}

// ------------------------------------------------------------------------------------------------
// Ops

Status analyze_conv(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_all_float(c));
  const Shape& x = c.input(0).shape;
  const Shape& wt = c.input(1).shape;
  WS_ASSIGN_OR_RETURN(int64_t group, attr_int(c, "group", 1));
  if (x.size() < 3) return c.error(StatusCode::kInvalidModel, "input X " + ir::shape_string(x) + " must be N×C×spatial");
  if (wt.size() != x.size()) {
    return c.error(StatusCode::kInvalidModel, "weight " + ir::shape_string(wt) + " and input " + ir::shape_string(x) + " differ in rank");
  }
  if (group < 1 || x[1] % group != 0 || wt[0] % group != 0) {
    return c.error(StatusCode::kInvalidModel, "attribute 'group' = " + std::to_string(group) + " must be >= 1 and divide input channels " +
                                        std::to_string(x[1]) + " and output channels " + std::to_string(wt[0]));
  }
  if (const auto cin = checked_mul(wt[1], group); !cin || *cin != x[1]) {
    return c.error(StatusCode::kInvalidModel, "weight " + ir::shape_string(wt) + " with group " + std::to_string(group) +
                                                  " does not match the " + std::to_string(x[1]) + " input channels of X");
  }
  std::vector<int64_t> wk(wt.begin() + 2, wt.end());
  WS_ASSIGN_OR_RETURN(auto kernel, attr_ints(c, "kernel_shape", wk));
  if (kernel != wk) return c.invalid_attribute("kernel_shape", "= " + ir::shape_string(kernel) + " disagrees with the weight shape " + ir::shape_string(wt));
  if (c.has_input(2) && (c.input(2).shape.size() != 1 || c.input(2).shape[0] != wt[0])) {
    return c.error(StatusCode::kInvalidModel, "bias " + ir::shape_string(c.input(2).shape) + " must be [" + std::to_string(wt[0]) + "]");
  }
  Window w;
  WS_RETURN_IF_ERROR(resolve_window(c, x, kernel, false, w));
  ref::ConvParams p;
  copy_window(w, p);
  p.n = x[0]; p.c_in = x[1]; p.c_out = wt[0]; p.groups = group;
  set_single_output(c, DType::kFloat32, window_output_shape(x[0], wt[0], w));
  c.kernel = [p](std::span<const void* const> in, std::span<void* const> out) {
    ref::conv_nd(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                 in.size() > 2 ? static_cast<const float*>(in[2]) : nullptr, static_cast<float*>(out[0]), p);
  };
  return Status::ok();
}

Status analyze_pool(NodeContext& c, bool is_max) {
  WS_RETURN_IF_ERROR(require_float(c, 0));
  const Shape& x = c.input(0).shape;
  if (x.size() < 3) return c.error(StatusCode::kInvalidModel, "input X " + ir::shape_string(x) + " must be N×C×spatial");
  WS_ASSIGN_OR_RETURN(auto kernel, attr_ints(c, "kernel_shape", {}));
  if (kernel.empty()) return c.invalid_attribute("kernel_shape", "is required");
  Window w;
  WS_RETURN_IF_ERROR(resolve_window(c, x, kernel, true, w));
  ref::PoolParams p;
  copy_window(w, p);
  p.n = x[0]; p.c = x[1];
  Shape y = window_output_shape(x[0], x[1], w);
  set_single_output(c, DType::kFloat32, y);
  if (is_max) {
    WS_ASSIGN_OR_RETURN(int64_t storage_order, attr_int(c, "storage_order", 0));
    if (storage_order != 0 && storage_order != 1) return c.invalid_attribute("storage_order", "must be 0 or 1");
    if (c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoTensor) {
      c.output_dtypes[1] = DType::kInt64;
      c.output_shapes[1] = y;
    }
    const int order = static_cast<int>(storage_order);
    c.kernel = [p, order](std::span<const void* const> in, std::span<void* const> out) {
      ref::max_pool_nd(static_cast<const float*>(in[0]), static_cast<float*>(out[0]),
                       out.size() > 1 ? static_cast<int64_t*>(out[1]) : nullptr, order, p);
    };
  } else {
    WS_ASSIGN_OR_RETURN(int64_t cip, attr_int(c, "count_include_pad", 0));
    p.count_include_pad = cip != 0;
    c.kernel = [p](std::span<const void* const> in, std::span<void* const> out) {
      ref::average_pool_nd(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), p);
    };
  }
  return Status::ok();
}
Status analyze_max_pool(NodeContext& c) { return analyze_pool(c, true); }
Status analyze_average_pool(NodeContext& c) { return analyze_pool(c, false); }

Status analyze_global_average_pool(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_float(c, 0));
  const Shape& x = c.input(0).shape;
  if (x.size() < 3) return c.error(StatusCode::kInvalidModel, "input X " + ir::shape_string(x) + " must be N×C×spatial");
  Shape y{x[0], x[1]};
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) { y.push_back(1); spatial *= x[i]; }
  set_single_output(c, DType::kFloat32, y);
  const int64_t n = x[0], ch = x[1];
  c.kernel = [n, ch, spatial](std::span<const void* const> in, std::span<void* const> out) {
    ref::global_average_pool(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), n, ch, spatial);
  };
  return Status::ok();
}

Status analyze_batch_norm(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_all_float(c));
  WS_ASSIGN_OR_RETURN(int64_t training, attr_int(c, "training_mode", 0));
  if (training != 0 || c.node.outputs.size() > 1) {
    return c.error(StatusCode::kUnsupported, "training mode (training_mode=1 or running-statistics outputs) is not supported; export the model in eval mode");
  }
  WS_ASSIGN_OR_RETURN(int64_t spatial_attr, attr_int(c, "spatial", 1));
  if (spatial_attr != 1) return c.bad_attribute("spatial", "= 0 (per-activation statistics) is not supported");
  WS_ASSIGN_OR_RETURN(float eps, attr_float(c, "epsilon", 1e-5f));
  const Shape& x = c.input(0).shape;
  if (x.size() < 2) return c.error(StatusCode::kInvalidModel, "input X " + ir::shape_string(x) + " must be N×C×...");
  for (size_t i = 1; i < 5; ++i) {
    if (c.input(i).shape != Shape{x[1]}) {
      return c.error(StatusCode::kInvalidModel, "input " + std::to_string(i) + " " + ir::shape_string(c.input(i).shape) +
                                                    " must be [" + std::to_string(x[1]) + "]");
    }
  }
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  set_single_output(c, DType::kFloat32, x);
  const int64_t n = x[0], ch = x[1];
  c.kernel = [=](std::span<const void* const> in, std::span<void* const> out) {
    ref::batch_norm_inference(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                              static_cast<const float*>(in[2]), static_cast<const float*>(in[3]),
                              static_cast<const float*>(in[4]), eps, static_cast<float*>(out[0]), n, ch, spatial);
  };
  return Status::ok();
}

Status make_unary(NodeContext& c, ref::UnaryOp op, ref::UnaryParams params) {
  WS_RETURN_IF_ERROR(require_float(c, 0));
  const Shape x = c.input(0).shape;
  set_single_output(c, DType::kFloat32, x);
  const int64_t count = ir::shape_elements(x);
  c.kernel = [op, params, count](std::span<const void* const> in, std::span<void* const> out) {
    ref::unary(op, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), count, params);
  };
  return Status::ok();
}
Status analyze_relu(NodeContext& c) { return make_unary(c, ref::UnaryOp::kRelu, {}); }
Status analyze_sigmoid(NodeContext& c) { return make_unary(c, ref::UnaryOp::kSigmoid, {}); }
Status analyze_hard_swish(NodeContext& c) { return make_unary(c, ref::UnaryOp::kHardSwish, {}); }
Status analyze_hard_sigmoid(NodeContext& c) {
  ref::UnaryParams p;
  WS_ASSIGN_OR_RETURN(p.alpha, attr_float(c, "alpha", 0.2f));
  WS_ASSIGN_OR_RETURN(p.beta, attr_float(c, "beta", 0.5f));
  return make_unary(c, ref::UnaryOp::kHardSigmoid, p);
}

Result<float> scalar_input(const NodeContext& c, size_t i, float fallback) {
  if (!c.has_input(i)) return fallback;
  const auto& t = c.input(i);
  if (t.dtype != DType::kFloat32 || t.elements() != 1) {
    return c.error(StatusCode::kUnsupported, "input " + std::to_string(i) + " (" + quoted(t.name) + ") must be a float32 scalar");
  }
  return *t.data_as<float>();
}

Status analyze_clip(NodeContext& c) {
  ref::UnaryParams p;
  if (c.graph.opset < 11) {
    WS_ASSIGN_OR_RETURN(p.min, attr_float(c, "min", p.min));
    WS_ASSIGN_OR_RETURN(p.max, attr_float(c, "max", p.max));
  } else {
    if (c.node.find("min") || c.node.find("max")) {
      return c.invalid_attribute(c.node.find("min") ? "min" : "max", "is an input, not an attribute, from opset 11 on");
    }
    WS_ASSIGN_OR_RETURN(p.min, scalar_input(c, 1, p.min));
    WS_ASSIGN_OR_RETURN(p.max, scalar_input(c, 2, p.max));
  }
  return make_unary(c, ref::UnaryOp::kClip, p);
}

Status analyze_identity(NodeContext& c) {
  const auto& x = c.input(0);
  set_single_output(c, x.dtype, x.shape);
  const size_t bytes = static_cast<size_t>(x.elements()) * ir::dtype_size(x.dtype);
  c.kernel = [bytes](std::span<const void* const> in, std::span<void* const> out) {
    if (bytes && in[0] != out[0]) std::memcpy(out[0], in[0], bytes);
  };
  return Status::ok();
}

Status analyze_dropout(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_float(c, 0));
  if (c.graph.opset < 7) {
    WS_ASSIGN_OR_RETURN(int64_t is_test, attr_int(c, "is_test", 0));
    if (!is_test) return c.bad_attribute("is_test", "= 0 (training) is not supported");
  }
  if (c.has_input(2)) {
    const auto& t = c.input(2);
    if (t.dtype != DType::kBool || t.elements() != 1) return c.error(StatusCode::kInvalidModel, "training_mode must be a bool scalar");
    // Training mode with ratio 0 drops nothing: y = x and the mask is all true (exactly what an
    // inference run computes), as exporters write for train-mode models with dropout 0.
    const bool zero_ratio = c.has_input(1) && c.input(1).dtype == DType::kFloat32 && c.input(1).elements() == 1 &&
                            *c.input(1).data_as<float>() == 0.0f;
    if (static_cast<uint8_t>((*t.data)[0]) != 0 && !zero_ratio) {
      return c.error(StatusCode::kUnsupported, "training mode (training_mode = true) with a non-zero ratio is not supported; inference only");
    }
  }
  const auto& x = c.input(0);
  set_single_output(c, DType::kFloat32, x.shape);
  const bool mask = c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoTensor;
  if (mask) {
    c.output_dtypes[1] = DType::kBool;
    c.output_shapes[1] = x.shape;
  }
  const size_t count = static_cast<size_t>(x.elements());
  c.kernel = [count, mask](std::span<const void* const> in, std::span<void* const> out) {
    if (count && in[0] != out[0]) std::memcpy(out[0], in[0], count * 4);
    if (mask && count) std::memset(out[1], 1, count);
  };
  return Status::ok();
}

Status analyze_binary(NodeContext& c, ref::BinaryOp op) {
  Shape a = c.input(0).shape, b = c.input(1).shape;
  // Opset < 7: no numpy broadcasting; with broadcast = 1, B's dims align with A's from `axis`
  // (default: B is a suffix of A). Rewritten as numpy broadcasting by padding B's dims with 1s.
  if (c.graph.opset < 7) {
    WS_ASSIGN_OR_RETURN(int64_t bc, attr_int(c, "broadcast", 0));
    if (bc != 0) {
      const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
      WS_ASSIGN_OR_RETURN(int64_t axis, attr_int(c, "axis", ra - rb));
      if (axis < 0) axis += ra;
      if (axis < 0 || axis + rb > ra) return c.invalid_attribute("axis", "= " + std::to_string(axis) + " does not place B " + ir::shape_string(b) + " inside A " + ir::shape_string(a) + " (legacy broadcast, opset < 7)");
      b.insert(b.end(), static_cast<size_t>(ra - axis - rb), 1);
    } else if (a != b) {
      return c.error(StatusCode::kInvalidModel, "A " + ir::shape_string(a) + " and B " + ir::shape_string(b) + " differ and broadcast = 0 (opset < 7 has no implicit broadcasting)");
    }
  } else if (c.node.find("broadcast") || c.node.find("axis")) {
    return c.bad_attribute(c.node.find("axis") ? "axis" : "broadcast", "is a legacy (opset < 7) attribute; this model declares opset " + std::to_string(c.graph.opset));
  }
  if (c.input(0).dtype == DType::kInt64 && c.input(1).dtype == DType::kInt64) {  // shape arithmetic
    const ref::Binary2Op op2 = op == ref::BinaryOp::kAdd ? ref::Binary2Op::kAdd : op == ref::BinaryOp::kSub ? ref::Binary2Op::kSub
                             : op == ref::BinaryOp::kMul ? ref::Binary2Op::kMul : ref::Binary2Op::kDiv;
    return ext::bind_binary_i64(c, static_cast<int>(op2), a, b);
  }
  WS_RETURN_IF_ERROR(require_all_float(c));
  auto y = ref::broadcast_dims(a, b);
  if (!y) return c.error(StatusCode::kInvalidModel, y.status().message());
  set_single_output(c, DType::kFloat32, *y);
  Shape ys = *y;
  c.kernel = [op, a, b, ys](std::span<const void* const> in, std::span<void* const> out) {
    ref::binary_broadcast(op, static_cast<const float*>(in[0]), a, static_cast<const float*>(in[1]), b,
                          static_cast<float*>(out[0]), ys);
  };
  return Status::ok();
}
Status analyze_add(NodeContext& c) { return analyze_binary(c, ref::BinaryOp::kAdd); }
Status analyze_sub(NodeContext& c) { return analyze_binary(c, ref::BinaryOp::kSub); }
Status analyze_mul(NodeContext& c) { return analyze_binary(c, ref::BinaryOp::kMul); }
Status analyze_div(NodeContext& c) { return analyze_binary(c, ref::BinaryOp::kDiv); }

// Reshape-like ops copy bytes; the output is a new arena tensor.
void bind_copy(NodeContext& c, DType t, Shape s) {
  const size_t bytes = static_cast<size_t>(ir::shape_elements(s)) * ir::dtype_size(t);
  set_single_output(c, t, std::move(s));
  c.kernel = [bytes](std::span<const void* const> in, std::span<void* const> out) {
    if (bytes && in[0] != out[0]) std::memcpy(out[0], in[0], bytes);
  };
}

Status analyze_flatten(NodeContext& c) {
  const auto& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", 1));
  WS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(c, "axis", axis_attr, rank, true));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= x.shape[static_cast<size_t>(i)];
  bind_copy(c, x.dtype, {outer, inner});
  return Status::ok();
}

Status analyze_reshape(NodeContext& c) {
  const auto& x = c.input(0);
  std::vector<int64_t> target;
  if (c.graph.opset < 5) {
    WS_ASSIGN_OR_RETURN(target, attr_ints(c, "shape", {}));
  } else {
    WS_RETURN_IF_ERROR(c.require_input(1, "shape"));
    const auto& s = c.input(1);
    if (s.dtype != DType::kInt64 || s.shape.size() != 1) {
      return c.error(StatusCode::kInvalidModel, "shape input must be a 1-D int64 tensor, got " + ir::dtype_name(s.dtype) + " " + ir::shape_string(s.shape));
    }
    target.assign(s.data_as<int64_t>(), s.data_as<int64_t>() + s.elements());
  }
  WS_ASSIGN_OR_RETURN(int64_t allowzero, attr_int(c, "allowzero", 0));
  Shape y(target.size());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= x.shape.size()) return c.error(StatusCode::kInvalidModel, "shape value 0 at index " + std::to_string(i) + " copies a dimension the input " + ir::shape_string(x.shape) + " does not have");
      d = x.shape[i];
    }
    if (d == -1) {
      if (infer_at >= 0) return c.error(StatusCode::kInvalidModel, "shape " + ir::shape_string(target) + " has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (d < 0) return c.error(StatusCode::kInvalidModel, "shape " + ir::shape_string(target) + " has a negative dimension");
    y[i] = d;
    const auto k = checked_mul(known, d);
    if (!k) return c.error(StatusCode::kInvalidModel, "shape " + ir::shape_string(target) + " has more elements than 64-bit arithmetic holds");
    known = *k;
  }
  const int64_t total = x.elements();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return c.error(StatusCode::kInvalidModel, "cannot reshape " + ir::shape_string(x.shape) + " to " + ir::shape_string(target));
    }
    y[static_cast<size_t>(infer_at)] = total / known;
  } else if (known != total) {
    return c.error(StatusCode::kInvalidModel, "cannot reshape " + ir::shape_string(x.shape) + " (" + std::to_string(total) +
                                                  " elements) to " + ir::shape_string(target));
  }
  bind_copy(c, x.dtype, y);
  return Status::ok();
}

Status analyze_transpose(NodeContext& c) {
  const auto& x = c.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> def(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) def[static_cast<size_t>(i)] = rank - 1 - i;
  WS_ASSIGN_OR_RETURN(auto perm, attr_ints(c, "perm", def));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  if (static_cast<int64_t>(perm.size()) != rank) return c.invalid_attribute("perm", "has " + std::to_string(perm.size()) + " values for rank " + std::to_string(rank));
  Shape y;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) return c.invalid_attribute("perm", "= " + ir::shape_string(perm) + " is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    y.push_back(x.shape[static_cast<size_t>(p)]);
  }
  const size_t es = ir::dtype_size(x.dtype);
  if (es != 4 && es != 8 && es != 1) return c.error(StatusCode::kUnsupported, "element type " + ir::dtype_name(x.dtype) + " is not supported");
  set_single_output(c, x.dtype, y);
  Shape xs = x.shape;
  c.kernel = [xs, perm, es](std::span<const void* const> in, std::span<void* const> out) {
    ref::transpose(in[0], xs, perm, out[0], es);
  };
  return Status::ok();
}

Status analyze_concat(NodeContext& c) {
  const auto& x0 = c.input(0);
  const int64_t rank = static_cast<int64_t>(x0.shape.size());
  const Attribute* a = c.node.find("axis");
  if (!a) return c.invalid_attribute("axis", "is required");
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", 0));
  WS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(c, "axis", axis_attr, rank, false));
  Shape y = x0.shape;
  y[static_cast<size_t>(axis)] = 0;
  std::vector<ref::Dims> dims;
  for (size_t i = 0; i < c.input_count(); ++i) {
    const auto& t = c.input(i);
    if (t.dtype != x0.dtype) return c.error(StatusCode::kInvalidModel, "inputs mix element types " + ir::dtype_name(x0.dtype) + " and " + ir::dtype_name(t.dtype));
    if (static_cast<int64_t>(t.shape.size()) != rank) return c.error(StatusCode::kInvalidModel, "input " + std::to_string(i) + " " + ir::shape_string(t.shape) + " differs in rank");
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t.shape[static_cast<size_t>(d)] != x0.shape[static_cast<size_t>(d)]) {
        return c.error(StatusCode::kInvalidModel, "input " + std::to_string(i) + " " + ir::shape_string(t.shape) +
                                                      " does not match " + ir::shape_string(x0.shape) + " off the concat axis");
      }
    }
    const auto sum = checked_add(y[static_cast<size_t>(axis)], t.shape[static_cast<size_t>(axis)]);
    if (!sum) return c.error(StatusCode::kInvalidModel, "the concatenated axis overflows 64-bit arithmetic");
    y[static_cast<size_t>(axis)] = *sum;
    dims.push_back(t.shape);
  }
  const size_t es = ir::dtype_size(x0.dtype);
  set_single_output(c, x0.dtype, y);
  c.kernel = [dims, axis, es](std::span<const void* const> in, std::span<void* const> out) {
    ref::concat(in, dims, axis, out[0], es);
  };
  return Status::ok();
}

Status analyze_gemm(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_all_float(c));
  // Gemm-6 and earlier: C broadcasts only with broadcast = 1 (then unidirectionally, as from
  // opset 7 on); broadcast = 0 requires C to be exactly [M, N] (checked below).
  WS_ASSIGN_OR_RETURN(int64_t legacy_broadcast, attr_int(c, "broadcast", 0));
  if (c.node.find("broadcast") && c.graph.opset >= 7) {
    return c.bad_attribute("broadcast", "is a legacy (opset < 7) attribute; this model declares opset " + std::to_string(c.graph.opset));
  }
  WS_ASSIGN_OR_RETURN(int64_t ta, attr_int(c, "transA", 0));
  WS_ASSIGN_OR_RETURN(int64_t tb, attr_int(c, "transB", 0));
  WS_ASSIGN_OR_RETURN(float alpha, attr_float(c, "alpha", 1.0f));
  WS_ASSIGN_OR_RETURN(float beta, attr_float(c, "beta", 1.0f));
  const Shape& a = c.input(0).shape;
  const Shape& b = c.input(1).shape;
  if (a.size() != 2 || b.size() != 2) return c.error(StatusCode::kInvalidModel, "A " + ir::shape_string(a) + " and B " + ir::shape_string(b) + " must be 2-D");
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb) return c.error(StatusCode::kInvalidModel, "inner dimensions differ: A " + ir::shape_string(a) + (ta ? "ᵀ" : "") + " × B " + ir::shape_string(b) + (tb ? "ᵀ" : ""));
  Shape cd;
  if (c.has_input(2)) {
    cd = c.input(2).shape;
    auto bc = ref::broadcast_dims(cd, Shape{m, n});
    if (!bc || *bc != Shape{m, n} || cd.size() > 2) return c.error(StatusCode::kInvalidModel, "C " + ir::shape_string(cd) + " does not broadcast to [" + std::to_string(m) + ", " + std::to_string(n) + "]");
    if (c.graph.opset < 7 && !legacy_broadcast && cd != Shape{m, n}) {
      return c.error(StatusCode::kInvalidModel, "C " + ir::shape_string(cd) + " must be [" + std::to_string(m) + ", " + std::to_string(n) + "] without broadcast = 1 (opset < 7)");
    }
  }
  set_single_output(c, DType::kFloat32, {m, n});
  const bool has_c = c.has_input(2);
  c.kernel = [=](std::span<const void* const> in, std::span<void* const> out) {
    ref::gemm(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
              has_c ? static_cast<const float*>(in[2]) : nullptr, cd, static_cast<float*>(out[0]), m, n, k, ta != 0,
              tb != 0, alpha, beta);
  };
  return Status::ok();
}

Status analyze_matmul(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_all_float(c));
  const Shape a = c.input(0).shape, b = c.input(1).shape;
  auto y = ref::matmul_dims(a, b);
  if (!y) return c.error(StatusCode::kInvalidModel, y.status().message());
  set_single_output(c, DType::kFloat32, *y);
  Shape ys = *y;
  c.kernel = [a, b, ys](std::span<const void* const> in, std::span<void* const> out) {
    ref::matmul(static_cast<const float*>(in[0]), a, static_cast<const float*>(in[1]), b, static_cast<float*>(out[0]), ys);
  };
  return Status::ok();
}

Status analyze_softmax(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_float(c, 0));
  const Shape x = c.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  const bool legacy = c.graph.opset < 13;  // opset 1–12: coerce to 2-D at axis
  WS_ASSIGN_OR_RETURN(int64_t axis_attr, attr_int(c, "axis", legacy ? 1 : -1));
  WS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(c, "axis", axis_attr, rank, legacy));
  const op_util::AxisSplit sp = op_util::softmax_split(x, axis, legacy);
  const int64_t outer = sp.outer, len = sp.len, inner = sp.inner;
  set_single_output(c, DType::kFloat32, x);
  c.kernel = [outer, len, inner](std::span<const void* const> in, std::span<void* const> out) {
    ref::softmax(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), outer, len, inner);
  };
  return Status::ok();
}

Status analyze_shape(NodeContext& c) {
  const Shape x = c.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  WS_ASSIGN_OR_RETURN(int64_t start, attr_int(c, "start", 0));
  WS_ASSIGN_OR_RETURN(int64_t end, attr_int(c, "end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x[static_cast<size_t>(i)]);
  set_single_output(c, DType::kInt64, {static_cast<int64_t>(dims.size())});
  c.kernel = [dims](std::span<const void* const>, std::span<void* const> out) {
    if (!dims.empty()) std::memcpy(out[0], dims.data(), dims.size() * 8);
  };
  return Status::ok();
}

// Unsqueeze/Squeeze: axes as attribute before opset 13, as a constant input from 13.
Result<std::vector<int64_t>> axes_operand(const NodeContext& c) {
  if (c.graph.opset < 13) return attr_ints(c, "axes", {});
  if (!c.has_input(1)) return std::vector<int64_t>{};
  const auto& t = c.input(1);
  if (t.dtype != DType::kInt64) return c.error(StatusCode::kInvalidModel, "axes must be int64");
  return std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + t.elements());
}

Status analyze_unsqueeze(NodeContext& c) {
  const auto& x = c.input(0);
  WS_ASSIGN_OR_RETURN(auto axes, axes_operand(c));
  const int64_t rank = static_cast<int64_t>(x.shape.size() + axes.size());
  std::vector<bool> at(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    WS_ASSIGN_OR_RETURN(int64_t n, normalize_axis(c, "axes", a, rank, false));
    if (at[static_cast<size_t>(n)]) return c.invalid_attribute("axes", "repeats axis " + std::to_string(a));
    at[static_cast<size_t>(n)] = true;
  }
  Shape y;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) y.push_back(at[static_cast<size_t>(i)] ? 1 : x.shape[j++]);
  bind_copy(c, x.dtype, y);
  return Status::ok();
}

Status analyze_squeeze(NodeContext& c) {
  const auto& x = c.input(0);
  WS_ASSIGN_OR_RETURN(auto axes, axes_operand(c));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = x.shape[static_cast<size_t>(i)] == 1;
  }
  for (int64_t a : axes) {
    WS_ASSIGN_OR_RETURN(int64_t n, normalize_axis(c, "axes", a, rank, false));
    if (x.shape[static_cast<size_t>(n)] != 1) return c.invalid_attribute("axes", "names axis " + std::to_string(a) + " of size " + std::to_string(x.shape[static_cast<size_t>(n)]) + ", not 1");
    drop[static_cast<size_t>(n)] = true;
  }
  Shape y;
  for (int64_t i = 0; i < rank; ++i) if (!drop[static_cast<size_t>(i)]) y.push_back(x.shape[static_cast<size_t>(i)]);
  bind_copy(c, x.dtype, y);
  return Status::ok();
}


Status analyze_pad(NodeContext& c) {
  WS_RETURN_IF_ERROR(require_float(c, 0));
  const Shape x = c.input(0).shape;
  const size_t r = x.size();
  if (r > ref::kMaxPadRank) return c.error(StatusCode::kUnsupported, "rank " + std::to_string(r) + " is above " + std::to_string(ref::kMaxPadRank));
  WS_ASSIGN_OR_RETURN(std::string mode_s, attr_string(c, "mode", "constant"));
  ref::PadMode mode;
  if (mode_s == "constant") mode = ref::PadMode::kConstant;
  else if (mode_s == "reflect") mode = ref::PadMode::kReflect;
  else if (mode_s == "edge") mode = ref::PadMode::kEdge;
  else if (mode_s == "wrap" && c.graph.opset >= 19) return c.bad_attribute("mode", "= 'wrap' (opset 19) is not supported (constant, reflect, edge are)");
  else return c.invalid_attribute("mode", "= " + quoted(mode_s) + " is not a Pad mode of opset " + std::to_string(c.graph.opset) +
                                              " (constant, reflect, edge" + (c.graph.opset >= 19 ? ", wrap" : "") + ")");
  std::vector<int64_t> pads;
  float value = 0.0f;
  if (c.graph.opset < 11) {
    WS_ASSIGN_OR_RETURN(pads, attr_ints(c, "pads", {}));
    WS_ASSIGN_OR_RETURN(value, attr_float(c, "value", 0.0f));
  } else {
    WS_RETURN_IF_ERROR(c.require_input(1, "pads"));
    const auto& p = c.input(1);
    if (p.dtype != DType::kInt64 || p.shape.size() != 1) return c.error(StatusCode::kInvalidModel, "pads must be a 1-D int64 tensor");
    pads.assign(p.data_as<int64_t>(), p.data_as<int64_t>() + p.elements());
    WS_ASSIGN_OR_RETURN(value, scalar_input(c, 2, 0.0f));
    if (c.has_input(3)) return c.error(StatusCode::kUnsupported, "the axes input (opset 18) is not supported");
  }
  if (pads.size() != 2 * r) return c.error(StatusCode::kInvalidModel, "pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(r));
  Shape y(r);
  for (size_t i = 0; i < r; ++i) {
    if (pads[i] < 0 || pads[i + r] < 0) return c.error(StatusCode::kUnsupported, "negative pads (cropping) are not supported");
    if (mode == ref::PadMode::kReflect && (pads[i] >= x[i] || pads[i + r] >= x[i]) && (pads[i] || pads[i + r]))
      return c.error(StatusCode::kInvalidModel, "reflect padding of " + std::to_string(std::max(pads[i], pads[i + r])) + " needs axis " + std::to_string(i) + " longer than " + std::to_string(x[i]));
    std::optional<int64_t> yi = checked_add(x[i], pads[i]);
    if (yi) yi = checked_add(*yi, pads[i + r]);
    if (!yi) return c.error(StatusCode::kInvalidModel, "padded axis " + std::to_string(i) + " overflows 64-bit arithmetic");
    y[i] = *yi;
  }
  set_single_output(c, DType::kFloat32, y);
  c.kernel = [x, pads, mode, value](std::span<const void* const> in, std::span<void* const> out) {
    ref::pad(static_cast<const float*>(in[0]), x, pads, mode, value, static_cast<float*>(out[0]));
  };
  return Status::ok();
}

const std::vector<OpDef>& op_defs() {
  static const std::vector<std::string> kWindow = {"auto_pad", "dilations", "kernel_shape", "pads", "strides"};
  static const std::vector<std::string> kReduce = {"axes", "keepdims", "noop_with_empty_axes"};
  auto with = [](std::vector<std::string> base, std::initializer_list<const char*> more) {
    for (const char* m : more) base.push_back(m);
    return base;
  };
  static const std::vector<OpDef> defs = {
      {"Abs", 1, 1, 1, 1, {}, {}, ext::analyze_abs},
      {"Acos", 1, 1, 1, 1, {}, {}, ext::analyze_acos},
      {"Acosh", 1, 1, 1, 1, {}, {}, ext::analyze_acosh},
      {"Add", 2, 2, 1, 1, {}, {"broadcast", "axis"}, analyze_add},
      {"And", 2, 2, 1, 1, {}, {}, ext::analyze_and},
      {"ArgMax", 1, 1, 1, 1, {}, {"axis", "keepdims", "select_last_index"}, ext::analyze_arg_max},
      {"ArgMin", 1, 1, 1, 1, {}, {"axis", "keepdims", "select_last_index"}, ext::analyze_arg_min},
      {"Asin", 1, 1, 1, 1, {}, {}, ext::analyze_asin},
      {"Asinh", 1, 1, 1, 1, {}, {}, ext::analyze_asinh},
      {"Atan", 1, 1, 1, 1, {}, {}, ext::analyze_atan},
      {"Atanh", 1, 1, 1, 1, {}, {}, ext::analyze_atanh},
      {"AveragePool", 1, 1, 1, 1, {}, with(kWindow, {"ceil_mode", "count_include_pad"}), analyze_average_pool},
      {"BatchNormalization", 5, 5, 1, 5, {}, {"epsilon", "momentum", "spatial", "training_mode", "is_test", "consumed_inputs"}, analyze_batch_norm},
      {"Cast", 1, 1, 1, 1, {}, {"to"}, ext::analyze_cast},
      {"CastLike", 2, 2, 1, 1, {}, {}, ext::analyze_cast_like},
      {"Ceil", 1, 1, 1, 1, {}, {}, ext::analyze_ceil},
      {"Celu", 1, 1, 1, 1, {}, {"alpha"}, ext::analyze_celu},
      {"Clip", 1, 3, 1, 1, {1, 2}, {"min", "max"}, analyze_clip},
      {"Concat", 1, 1 << 20, 1, 1, {}, {"axis"}, analyze_concat},
      {"ConstantOfShape", 1, 1, 1, 1, {0}, {"value"}, ext::analyze_constant_of_shape},
      {"Conv", 2, 3, 1, 1, {}, with(kWindow, {"group"}), analyze_conv},
      {"ConvTranspose", 2, 3, 1, 1, {}, with(kWindow, {"group", "output_padding", "output_shape"}), ext::analyze_conv_transpose},
      {"Cos", 1, 1, 1, 1, {}, {}, ext::analyze_cos},
      {"Cosh", 1, 1, 1, 1, {}, {}, ext::analyze_cosh},
      {"CumSum", 2, 2, 1, 1, {1}, {"exclusive", "reverse"}, ext::analyze_cum_sum},
      {"DepthToSpace", 1, 1, 1, 1, {}, {"blocksize", "mode"}, ext::analyze_depth_to_space},
      {"Div", 2, 2, 1, 1, {}, {"broadcast", "axis"}, analyze_div},
      {"Dropout", 1, 3, 1, 2, {1, 2}, {"ratio", "seed", "is_test"}, analyze_dropout},
      {"Einsum", 1, 16, 1, 1, {}, {"equation"}, ext::analyze_einsum},
      {"Elu", 1, 1, 1, 1, {}, {"alpha"}, ext::analyze_elu},
      {"Equal", 2, 2, 1, 1, {}, {}, ext::analyze_equal},
      {"Erf", 1, 1, 1, 1, {}, {}, ext::analyze_erf},
      {"Exp", 1, 1, 1, 1, {}, {}, ext::analyze_exp},
      {"Expand", 2, 2, 1, 1, {1}, {}, ext::analyze_expand},
      {"Flatten", 1, 1, 1, 1, {}, {"axis"}, analyze_flatten},
      {"Floor", 1, 1, 1, 1, {}, {}, ext::analyze_floor},
      {"Gather", 2, 2, 1, 1, {1}, {"axis"}, ext::analyze_gather},
      {"GatherElements", 2, 2, 1, 1, {1}, {"axis"}, ext::analyze_gather_elements},
      {"Gelu", 1, 1, 1, 1, {}, {"approximate"}, ext::analyze_gelu},
      {"Gemm", 2, 3, 1, 1, {}, {"alpha", "beta", "transA", "transB", "broadcast"}, analyze_gemm},
      {"GlobalAveragePool", 1, 1, 1, 1, {}, {}, analyze_global_average_pool},
      {"GlobalMaxPool", 1, 1, 1, 1, {}, {}, ext::analyze_global_max_pool},
      {"Greater", 2, 2, 1, 1, {}, {}, ext::analyze_greater},
      {"GreaterOrEqual", 2, 2, 1, 1, {}, {}, ext::analyze_greater_or_equal},
      {"HardSigmoid", 1, 1, 1, 1, {}, {"alpha", "beta"}, analyze_hard_sigmoid},
      {"HardSwish", 1, 1, 1, 1, {}, {}, analyze_hard_swish},
      {"Hardmax", 1, 1, 1, 1, {}, {"axis"}, ext::analyze_hardmax},
      {"Identity", 1, 1, 1, 1, {}, {}, analyze_identity},
      {"InstanceNormalization", 3, 3, 1, 1, {}, {"epsilon"}, ext::analyze_instance_normalization},
      {"IsInf", 1, 1, 1, 1, {}, {"detect_negative", "detect_positive"}, ext::analyze_is_inf},
      {"IsNaN", 1, 1, 1, 1, {}, {}, ext::analyze_is_nan},
      {"LayerNormalization", 2, 3, 1, 3, {}, {"axis", "epsilon", "stash_type"}, ext::analyze_layer_normalization},
      {"LeakyRelu", 1, 1, 1, 1, {}, {"alpha"}, ext::analyze_leaky_relu},
      {"Less", 2, 2, 1, 1, {}, {}, ext::analyze_less},
      {"LessOrEqual", 2, 2, 1, 1, {}, {}, ext::analyze_less_or_equal},
      {"Log", 1, 1, 1, 1, {}, {}, ext::analyze_log},
      {"LogSoftmax", 1, 1, 1, 1, {}, {"axis"}, ext::analyze_log_softmax},
      {"MatMul", 2, 2, 1, 1, {}, {}, analyze_matmul},
      {"Max", 1, 1 << 20, 1, 1, {}, {}, ext::analyze_max},
      {"MaxPool", 1, 1, 1, 2, {}, with(kWindow, {"ceil_mode", "storage_order"}), analyze_max_pool},
      {"Mean", 1, 1 << 20, 1, 1, {}, {}, ext::analyze_mean},
      {"Min", 1, 1 << 20, 1, 1, {}, {}, ext::analyze_min},
      {"Mod", 2, 2, 1, 1, {}, {"fmod"}, ext::analyze_mod},
      {"Mul", 2, 2, 1, 1, {}, {"broadcast", "axis"}, analyze_mul},
      {"Neg", 1, 1, 1, 1, {}, {}, ext::analyze_neg},
      {"Not", 1, 1, 1, 1, {}, {}, ext::analyze_not},
      {"Or", 2, 2, 1, 1, {}, {}, ext::analyze_or},
      {"PRelu", 2, 2, 1, 1, {}, {}, ext::analyze_prelu},
      {"Pad", 1, 4, 1, 1, {1, 2, 3}, {"mode", "pads", "value"}, analyze_pad},
      {"Pow", 2, 2, 1, 1, {}, {}, ext::analyze_pow},
      {"Range", 3, 3, 1, 1, {0, 1, 2}, {}, ext::analyze_range},
      {"Reciprocal", 1, 1, 1, 1, {}, {}, ext::analyze_reciprocal},
      {"ReduceL1", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_l1},
      {"ReduceL2", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_l2},
      {"ReduceLogSum", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_log_sum},
      {"ReduceLogSumExp", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_log_sum_exp},
      {"ReduceMax", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_max},
      {"ReduceMean", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_mean},
      {"ReduceMin", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_min},
      {"ReduceProd", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_prod},
      {"ReduceSum", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_sum},
      {"ReduceSumSquare", 1, 2, 1, 1, {1}, kReduce, ext::analyze_reduce_sum_square},
      {"Relu", 1, 1, 1, 1, {}, {}, analyze_relu},
      {"Reshape", 1, 2, 1, 1, {1}, {"shape", "allowzero"}, analyze_reshape},
      {"Resize", 1, 4, 1, 1, {1, 2, 3}, {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"}, ext::analyze_resize},
      {"Round", 1, 1, 1, 1, {}, {}, ext::analyze_round},
      {"ScatterND", 3, 3, 1, 1, {1}, {"reduction"}, ext::analyze_scatter_nd},
      {"Selu", 1, 1, 1, 1, {}, {"alpha", "gamma"}, ext::analyze_selu},
      {"Shape", 1, 1, 1, 1, {}, {"start", "end"}, analyze_shape},
      {"Shrink", 1, 1, 1, 1, {}, {"bias", "lambd"}, ext::analyze_shrink},
      {"Sigmoid", 1, 1, 1, 1, {}, {}, analyze_sigmoid},
      {"Sign", 1, 1, 1, 1, {}, {}, ext::analyze_sign},
      {"Sin", 1, 1, 1, 1, {}, {}, ext::analyze_sin},
      {"Sinh", 1, 1, 1, 1, {}, {}, ext::analyze_sinh},
      {"Size", 1, 1, 1, 1, {}, {}, ext::analyze_size},
      {"Slice", 1, 5, 1, 1, {1, 2, 3, 4}, {"starts", "ends", "axes"}, ext::analyze_slice},
      {"Softmax", 1, 1, 1, 1, {}, {"axis"}, analyze_softmax},
      {"Softplus", 1, 1, 1, 1, {}, {}, ext::analyze_softplus},
      {"Softsign", 1, 1, 1, 1, {}, {}, ext::analyze_softsign},
      {"SpaceToDepth", 1, 1, 1, 1, {}, {"blocksize"}, ext::analyze_space_to_depth},
      {"Split", 1, 2, 1, 1 << 20, {1}, {"axis", "split", "num_outputs"}, ext::analyze_split},
      {"Sqrt", 1, 1, 1, 1, {}, {}, ext::analyze_sqrt},
      {"Squeeze", 1, 2, 1, 1, {1}, {"axes"}, analyze_squeeze},
      {"Sub", 2, 2, 1, 1, {}, {"broadcast", "axis"}, analyze_sub},
      {"Sum", 1, 1 << 20, 1, 1, {}, {}, ext::analyze_sum},
      {"Tan", 1, 1, 1, 1, {}, {}, ext::analyze_tan},
      {"Tanh", 1, 1, 1, 1, {}, {}, ext::analyze_tanh},
      {"ThresholdedRelu", 1, 1, 1, 1, {}, {"alpha"}, ext::analyze_thresholded_relu},
      {"Tile", 2, 2, 1, 1, {1}, {}, ext::analyze_tile},
      {"Transpose", 1, 1, 1, 1, {}, {"perm"}, analyze_transpose},
      {"Trilu", 1, 2, 1, 1, {1}, {"upper"}, ext::analyze_trilu},
      {"Unsqueeze", 1, 2, 1, 1, {1}, {"axes"}, analyze_unsqueeze},
      {"Upsample", 1, 2, 1, 1, {1}, {"mode", "scales"}, ext::analyze_upsample},
      {"Where", 3, 3, 1, 1, {}, {}, ext::analyze_where},
      {"Xor", 2, 2, 1, 1, {}, {}, ext::analyze_xor},
  };
  return defs;
}

}  // namespace

const ir::Tensor& NodeContext::input(size_t i) const {
  if (has_input(i)) return graph.tensor(node.inputs[i]);
  // An analyzer asked for an input the node does not have: never index past node.inputs; hand
  // back an empty placeholder (no element is readable through it) and fail the node.
  static const ir::Tensor kAbsent = [] {
    ir::Tensor t;
    t.name = "(absent)";
    t.shape = {0};
    t.data = std::vector<std::byte>{};
    return t;
  }();
  if (missing_input_error.is_ok()) missing_input_error = require_input(i, "an input this op reads");
  return kAbsent;
}

Status NodeContext::require_input(size_t i, const char* role) const {
  if (has_input(i)) return Status::ok();
  return error(StatusCode::kInvalidModel, "input " + std::to_string(i) + " (" + role + ") is missing: the node has " +
                                              std::to_string(node.inputs.size()) + " input(s)" +
                                              (i < node.inputs.size() ? " and input " + std::to_string(i) + " is empty" : ""));
}

Status NodeContext::error(StatusCode code, const std::string& message) const {
  // describe() escapes name and op type; the message is escaped as a whole too, so an analyzer that pastes a
  // model string (an attribute value, a tensor name) into it cannot forge a line or a terminal sequence
  // (escape_text keeps printable text as is, so already-escaped parts are unchanged).
  return Status(code, node.describe(graph.opset) + ": " + escape_text(message));
}
Status NodeContext::bad_attribute(const std::string& attr, const std::string& message) const {
  return error(StatusCode::kUnsupported, "attribute " + quoted(attr) + " " + message);
}

Status NodeContext::invalid_attribute(const std::string& attr, const std::string& message) const {
  return error(StatusCode::kInvalidModel, "attribute " + quoted(attr) + " " + message);
}

const OpDef* find_op(const std::string& op_type) {
  for (const auto& d : op_defs())
    if (op_type == d.op_type) return &d;
  return nullptr;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& d : op_defs()) names.emplace_back(d.op_type);
  return names;
}

namespace {

/// Multiply-accumulates of the heavy ops from their analysed shapes (nullopt: overflow): Conv = output elements x
/// weight elements per output channel; ConvTranspose = input elements x weight elements per input channel;
/// MatMul / Gemm = output elements x K; pooling = output elements x window. Other ops: their output size.
std::optional<int64_t> node_macs(const NodeContext& c) {
  const std::string& op = c.node.op_type;
  auto product = [](std::span<const int64_t> dims, size_t from) -> std::optional<int64_t> {
    int64_t p = 1;
    for (size_t i = from; i < dims.size(); ++i) {
      auto q = checked_mul(p, std::max<int64_t>(dims[i], 0));
      if (!q) return std::nullopt;
      p = *q;
    }
    return p;
  };
  auto mul = [](std::optional<int64_t> a, std::optional<int64_t> b) -> std::optional<int64_t> {
    if (!a || !b) return std::nullopt;
    return checked_mul(*a, *b);
  };
  const std::optional<int64_t> out = c.output_shapes.empty() ? std::optional<int64_t>(0) : product(c.output_shapes[0], 0);
  auto in_shape = [&](size_t i) -> const ir::Shape* {
    return i < c.node.inputs.size() && c.node.inputs[i] != ir::kNoTensor ? &c.graph.tensor(c.node.inputs[i]).shape : nullptr;
  };
  if (op == "Conv" || op == "ConvInteger") {
    const ir::Shape* w = in_shape(1);
    return w ? mul(out, product(*w, 1)) : out;
  }
  if (op == "ConvTranspose") {
    const ir::Shape* x = in_shape(0);
    const ir::Shape* w = in_shape(1);
    return x && w ? mul(product(*x, 0), product(*w, 1)) : out;
  }
  if (op == "MatMul" || op == "MatMulInteger" || op == "Gemm") {
    const ir::Shape* a = in_shape(0);
    if (!a || a->empty()) return out;
    int64_t k = a->back();
    if (op == "Gemm" && a->size() == 2) {
      const ir::Attribute* t = c.node.find("transA");
      if (t && t->i != 0) k = (*a)[0];
    }
    return mul(out, std::max<int64_t>(k, 1));
  }
  if (op == "Einsum") {  // the direct evaluation: every label combination, one multiply per operand
    const ir::Attribute* eq = c.node.find("equation");
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < c.node.inputs.size(); ++i)
      if (const ir::Shape* s = in_shape(i)) shapes.push_back(*s);
    Result<ref::EinsumSpec> spec = ref::parse_einsum(eq ? eq->s : std::string(), shapes);
    // Counted as 2 per term and operand: the direct loop costs ~2.4 ns a term against ~1 ns a conv MAC (a 2^32-term
    // 'ab,cd->' took 10.5 s, hostile-input check of 2026-12-02); and never less than the output it writes (a label
    // of size 0 makes the work 0 while every output element is still written).
    if (!spec.is_ok()) return out;
    const int64_t w = spec.value().work();
    if (w == std::numeric_limits<int64_t>::max() || !out) return std::nullopt;
    const std::optional<int64_t> terms = checked_mul(w, 2 * static_cast<int64_t>(shapes.size()));
    if (!terms) return std::nullopt;
    return std::max(*terms, *out);
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    const ir::Attribute* k = c.node.find("kernel_shape");
    return k ? mul(out, product(k->ints, 0)) : out;
  }
  return out;
}

}  // namespace

Status analyze_node(NodeContext& ctx) {
  const ir::Node& node = ctx.node;
  const OpDef* def = find_op(node.op_type);
  if (!def) {
    return ctx.error(StatusCode::kUnsupported, "op type " + quoted(node.op_type) + " is not supported");
  }
  const int nin = static_cast<int>(node.inputs.size()), nout = static_cast<int>(node.outputs.size());
  if (nin < def->min_inputs || nin > def->max_inputs) {
    return ctx.error(StatusCode::kInvalidModel, "has " + std::to_string(nin) + " inputs; expected " +
                                                    std::to_string(def->min_inputs) + ".." + std::to_string(def->max_inputs));
  }
  if (nout < def->min_outputs || nout > def->max_outputs) {
    return ctx.error(StatusCode::kUnsupported, "has " + std::to_string(nout) + " outputs; supported " +
                                                   std::to_string(def->min_outputs) + ".." + std::to_string(def->max_outputs));
  }
  for (int i = 0; i < def->min_inputs; ++i) {
    if (node.inputs[static_cast<size_t>(i)] == ir::kNoTensor) {
      return ctx.error(StatusCode::kInvalidModel, "required input " + std::to_string(i) + " is missing");
    }
  }
  // Kernels write every output position below min_outputs: an omitted ("") one would be a null
  // destination at run time.
  for (int i = 0; i < def->min_outputs; ++i) {
    if (node.outputs[static_cast<size_t>(i)] == ir::kNoTensor) {
      return ctx.error(StatusCode::kInvalidModel, "required output " + std::to_string(i) + " is missing (empty name)");
    }
  }
  for (const auto& [name, attr] : node.attributes) {
    if (std::find(def->attributes.begin(), def->attributes.end(), name) == def->attributes.end()) {
      return ctx.bad_attribute(name, "is not supported");
    }
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == ir::kNoTensor) continue;
    const ir::Tensor& t = ctx.input(i);
    if (!t.shape_known) {
      return ctx.error(StatusCode::kInternal, "input " + std::to_string(i) + " (" + quoted(t.name) + ") has no inferred shape");
    }
    const std::string what = ctx.node.describe(ctx.graph.opset) + ": input " + std::to_string(i) + " " + quoted(t.name);
    if (!t.is_constant()) {
      WS_RETURN_IF_ERROR(check_shape_within_limits(t.shape, what));
    } else {
      // Constants are bounded by the bytes the file really holds (checked at import), so a large
      // weight passes; only dims whose extent overflows or exceeds both bounds (zero dims next
      // to huge ones) are refused.
      const auto extent = checked_extent(t.shape);
      if (!extent || (*extent > build_limits().max_tensor_elements && *extent != t.elements())) {
        WS_RETURN_IF_ERROR(check_shape_within_limits(t.shape, what));
      }
      // Constant data must hold exactly what the shape promises (initializers are checked at import;
      // this guards folded constants and frozen inputs too), so analyzers may read it.
      const int64_t n = t.elements();
      const size_t es = ir::dtype_size(t.dtype);
      if (n < 0 || (es != 0 && t.data->size() != static_cast<size_t>(n) * es)) {
        return ctx.error(StatusCode::kInvalidModel, "constant input " + std::to_string(i) + " (" + quoted(t.name) + ") holds " +
                                                        std::to_string(t.data->size()) + " bytes, not what its shape " + ir::shape_string(t.shape) + " needs");
      }
    }
    const bool must_be_constant =
        std::find(def->constant_inputs.begin(), def->constant_inputs.end(), static_cast<int>(i)) != def->constant_inputs.end();
    if (must_be_constant && !t.is_constant()) {
      return ctx.error(StatusCode::kUnsupported, "input " + std::to_string(i) + " (" + quoted(t.name) +
                                                     ") must be known at build (an initializer or constant) in this fixed-shape engine");
    }
  }
  Status s = def->analyze(ctx);
  if (!ctx.missing_input_error.is_ok()) return ctx.missing_input_error;
  if (!s.is_ok()) return s;
  if (ctx.output_shapes.size() != node.outputs.size() || ctx.output_dtypes.size() != node.outputs.size()) {
    return ctx.error(StatusCode::kInternal, "analyzer produced " + std::to_string(ctx.output_shapes.size()) + " output shapes for " +
                                                std::to_string(node.outputs.size()) + " outputs");
  }
  // The per-tensor element bound (core/limits.h) on every inferred output: refuses absurd-but-valid
  // sizes (pads of 65536, a mutated input dimension) before the arena or any kernel sees them.
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoTensor) continue;
    WS_RETURN_IF_ERROR(check_shape_within_limits(
        ctx.output_shapes[i], ctx.node.describe(ctx.graph.opset) + ": output " + std::to_string(i) + " " +
                                  quoted(ctx.graph.tensor(node.outputs[i]).name)));
  }
  // The per-node work bound (max_node_macs): small tensors can still mean huge work (a ConvTranspose whose kernel is
  // as large as its input: onnx_structure_fuzz, 2026-12-01, 636 M MACs from a 169-byte model).
  return check_work_within_limits(node_macs(ctx), ctx.node.describe(ctx.graph.opset));
}

}  // namespace ws::engine
