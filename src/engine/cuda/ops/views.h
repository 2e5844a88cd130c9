#pragma once
/// \file views.h
/// Host-side shape helpers shared by the CUDA op-table entries (src/engine/cuda/ops/*.cpp), run at bind time
/// only: a tensor viewed as [outer, len, inner] around one axis (the softmax family, Gather-like ops), row-major
/// strides and a permuted view for the transpose kernel, and the step of the copy ops (out = in).

#include <cstdint>
#include <vector>

#include "engine/cuda/op_util.h"

namespace ws::cudaexec {

/// x viewed as [outer, len, inner] around `axis` (0 <= axis <= rank): outer = dims before it, len = dim `axis`,
/// inner = dims after it; with `flatten`, len takes every dim from `axis` on and inner is 1.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisView axis_view(const ir::Shape& x, int64_t axis, bool flatten = false) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    const int64_t d = x[static_cast<size_t>(i)];
    if (i < axis) v.outer *= d;
    else if (i == axis || flatten) v.len *= d;
    else v.inner *= d;
  }
  return v;
}

/// The view of Softmax, LogSoftmax and Hardmax (input 0, attribute `axis`): opset < 13 flattens from `axis`
/// (default 1; axis == rank allowed), opset >= 13 works along `axis` (default -1). Negative axes count from the end.
inline AxisView softmax_view(const BindContext& c) {
  const ir::Shape& x = in_t(c, 0).shape;
  const bool legacy = c.graph.opset < 13;
  int64_t axis = attr_i(c.node, "axis", legacy ? 1 : -1);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  return axis_view(x, axis, legacy);
}

/// Row-major element strides of `dims` (the last dim has stride 1).
inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

/// The transpose kernel's arguments for y = x viewed as `dims` (row-major, rank <= 8) with its axes permuted by
/// `perm` (y dim k = x dim perm[k]), as ONNX Transpose defines it.
inline kernels::TransposeDims permuted_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> xs = row_major_strides(dims);
  kernels::TransposeDims d;
  d.rank = static_cast<int>(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    d.y_dims[k] = dims[static_cast<size_t>(perm[k])];
    d.x_strides[k] = xs[static_cast<size_t>(perm[k])];
  }
  return d;
}

/// The step of an op whose output is its input's bytes (Reshape-like ops, Cast float32 -> float32): a device copy
/// of input 0, or nothing when the planner gave both the same arena range.
inline Status bind_device_copy(BindContext& c, Step& s) {
  const size_t bytes = static_cast<size_t>(in_t(c, 0).elements()) * c.elem_bytes;
  if (!s.inputs.empty() && !s.outputs.empty() && s.inputs[0].kind == Operand::Kind::kArena &&
      s.outputs[0].kind == Operand::Kind::kArena && s.inputs[0].offset == s.outputs[0].offset) {
    s.folded = true;  // the arena shares the range (build_stages.h copy_aliases): no copy, no step
    s.kernels = 0;
  }
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    if (bytes && io.in[0] != io.out[0])
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.out[0], io.in[0], bytes, cudaMemcpyDeviceToDevice, st));
    return Status::ok();
  };
  return Status::ok();
}

}  // namespace ws::cudaexec
