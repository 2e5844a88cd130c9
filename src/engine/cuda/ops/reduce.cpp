// CUDA op-table entries (issue 14): ReduceSum / Mean / Max / Min / Prod / L1 / L2 / SumSquare / LogSum over a
// block of axes (size-1 axes ignored), or over several blocks as one stage per block through the workspace, LogSoftmax, Hardmax, ArgMax/ArgMin,
// LayerNormalization, InstanceNormalization and GlobalMaxPool. Kernels: src/kernels/reduce/reduce.cu ([outer, len, inner]).
#include <algorithm>
#include <string>
#include <vector>

#include "engine/cuda/op_util.h"
#include "engine/cuda/ops/views.h"
#include "kernels/elementwise/unary_math.h"
#include "kernels/reduce/reduce.h"

namespace ws::cudaexec {
namespace {

using kernels::ElemType;
using kernels::ReduceKind;

// ------------------------------------------------------------------------------------------------
// Reduce*

bool reduce_kind_of(const std::string& op, ReduceKind& k) {
  if (op == "ReduceSum") k = ReduceKind::kSum;
  else if (op == "ReduceMean") k = ReduceKind::kMean;
  else if (op == "ReduceMax") k = ReduceKind::kMax;
  else if (op == "ReduceMin") k = ReduceKind::kMin;
  else if (op == "ReduceProd") k = ReduceKind::kProd;
  else if (op == "ReduceL1") k = ReduceKind::kL1;
  else if (op == "ReduceL2") k = ReduceKind::kL2;
  else if (op == "ReduceSumSquare") k = ReduceKind::kSumSquare;
  else if (op == "ReduceLogSum") k = ReduceKind::kLogSum;
  else return false;
  return true;
}

// The reduced axes as [outer, len, inner] stages: one stage when they form one contiguous block (length-1 axes
// ignored); else one stage per maximal block, last block first, each stage's output the next one's input (the
// intermediate results in the step's workspace). Sum / Mean / Max / Min / Prod compose with themselves; L1,
// SumSquare and L2 reduce the first block with their own kind and the rest with Sum (L2: SumSquare, then Sum,
// then √); LogSum sums every block but the last, which takes the log. Mean of means is exact here: the groups of
// one stage all have the same size.
struct ReduceStage { int64_t outer = 1, len = 1, inner = 1; ReduceKind kind = ReduceKind::kSum; };
struct ReduceView {
  int64_t outer = 1, len = 1, inner = 1;
  bool identity = false;
  std::vector<ReduceStage> stages;  // more than one: the multi-block plan (outer/len/inner unused)
  bool sqrt_after = false;          // L2 over several blocks
};
Result<ReduceView> reduce_view(const BindContext& c) {
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes;
  if (const ir::Attribute* a = c.node.find("axes")) {
    axes = a->ints;
  } else if (has_in(c, 1)) {
    const ir::Tensor& t = in_t(c, 1);
    if (!t.is_constant() || t.dtype != ir::DType::kInt64) return refuse(c, "axes must be a constant int64 tensor");
    axes.assign(t.data_as<int64_t>(), t.data_as<int64_t>() + t.elements());
  }
  ReduceView v;
  std::vector<bool> red(static_cast<size_t>(rank), axes.empty());
  if (axes.empty() && attr_i(c.node, "noop_with_empty_axes", 0) != 0) {
    v.identity = true;
    v.outer = shape_elements(x);
    return v;
  }
  for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  // First and last reduced axis of length != 1; every non-reduced axis between them must have length 1.
  int64_t first = -1, last = -1;
  for (int64_t i = 0; i < rank; ++i)
    if (red[static_cast<size_t>(i)] && x[static_cast<size_t>(i)] != 1) { if (first < 0) first = i; last = i; }
  if (first < 0) {  // only length-1 axes reduced: a copy (y has x's elements)
    v.identity = true;
    v.outer = shape_elements(x);
    return v;
  }
  bool contiguous = true;
  for (int64_t i = first; i <= last; ++i)
    contiguous &= red[static_cast<size_t>(i)] || x[static_cast<size_t>(i)] == 1;
  if (!contiguous) {
    ReduceKind k;
    if (!reduce_kind_of(c.node.op_type, k)) return refuse(c, "no reduction kernel for this op");
    // Maximal runs of reduced axes of length != 1 (length-1 axes join either side).
    std::vector<std::pair<int64_t, int64_t>> blocks;  // [begin, end] axis indices
    for (int64_t i = 0; i < rank; ++i) {
      const bool r = red[static_cast<size_t>(i)] && x[static_cast<size_t>(i)] != 1;
      const bool gap = !red[static_cast<size_t>(i)] && x[static_cast<size_t>(i)] != 1;
      if (r) {
        if (!blocks.empty() && blocks.back().second == -1) continue;  // inside an open block
        blocks.push_back({i, -1});
      } else if (gap && !blocks.empty() && blocks.back().second == -1) {
        blocks.back().second = i - 1;
      }
    }
    if (!blocks.empty() && blocks.back().second == -1) blocks.back().second = rank - 1;
    ir::Shape cur = x;
    for (size_t b = blocks.size(); b-- > 0;) {
      ReduceStage st;
      for (int64_t i = 0; i < rank; ++i) {
        const int64_t d = cur[static_cast<size_t>(i)];
        if (i < blocks[b].first) st.outer *= d;
        else if (i <= blocks[b].second) st.len *= d;
        else st.inner *= d;
      }
      for (int64_t i = blocks[b].first; i <= blocks[b].second; ++i)
        if (red[static_cast<size_t>(i)]) cur[static_cast<size_t>(i)] = 1;
        else if (cur[static_cast<size_t>(i)] != 1) return internal_error("reduce plan: a kept axis inside a block");
      const bool first_stage = v.stages.empty(), last_stage = b == 0;
      switch (k) {
        case ReduceKind::kL1: case ReduceKind::kSumSquare: st.kind = first_stage ? k : ReduceKind::kSum; break;
        case ReduceKind::kL2: st.kind = first_stage ? ReduceKind::kSumSquare : ReduceKind::kSum; break;
        case ReduceKind::kLogSum: st.kind = last_stage ? ReduceKind::kLogSum : ReduceKind::kSum; break;
        default: st.kind = k; break;
      }
      v.stages.push_back(st);
    }
    v.sqrt_after = k == ReduceKind::kL2;
    return v;
  }
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x[static_cast<size_t>(i)];
    if (i < first) v.outer *= d;
    else if (i <= last) v.len *= d;
    else v.inner *= d;
  }
  return v;
}

Status supports_reduce(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  ReduceKind k;
  if (!reduce_kind_of(c.node.op_type, k)) return refuse(c, "no reduction kernel for this op");
  WS_ASSIGN_OR_RETURN(ReduceView v, reduce_view(c));
  (void)v;
  return Status::ok();
}

Status bind_reduce(BindContext& c, Step& s) {
  ReduceKind k;
  if (!reduce_kind_of(c.node.op_type, k)) return refuse(c, "no reduction kernel for this op");
  WS_ASSIGN_OR_RETURN(ReduceView v, reduce_view(c));
  const ElemType et = c.elem;
  if (v.identity) {  // every reduced axis has length 1: y = map(x) (Mean/Max/Min/Prod/Sum: x; L1: |x|; L2: |x|; SumSquare: x²)
    const ReduceKind per = k;
    s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return kernels::reduce(et, per, io.in[0], io.out[0], v.outer, 1, 1, st);
    };
    return Status::ok();
  }
  if (v.stages.size() > 1) {
    // Stage outputs alternate between two workspace halves; the last stage writes y.
    std::vector<int64_t> outs;
    for (const ReduceStage& r : v.stages) outs.push_back(r.outer * r.inner);
    size_t half = 0;
    for (size_t i = 0; i + 1 < outs.size(); ++i) half = std::max(half, align_up(static_cast<size_t>(outs[i]) * c.elem_bytes));
    s.workspace_bytes = 2 * half;
    s.kernels = static_cast<int>(v.stages.size()) + (v.sqrt_after ? 1 : 0);
    const std::vector<ReduceStage> stages = v.stages;
    const bool sqrt_after = v.sqrt_after;
    const int64_t count = outs.back();
    s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) -> Status {
      const void* src = io.in[0];
      for (size_t i = 0; i < stages.size(); ++i) {
        void* dst = i + 1 == stages.size() ? io.out[0] : static_cast<uint8_t*>(io.workspace) + (i % 2) * half;
        WS_RETURN_IF_ERROR(kernels::reduce(et, stages[i].kind, src, dst, stages[i].outer, stages[i].len, stages[i].inner, st));
        src = dst;
      }
      if (sqrt_after) WS_RETURN_IF_ERROR(kernels::unary_math(et, kernels::MathFn::kSqrt, {}, io.out[0], io.out[0], count, st));
      return Status::ok();
    };
    return Status::ok();
  }
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::reduce(et, k, io.in[0], io.out[0], v.outer, v.len, v.inner, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// LogSoftmax (opset < 13: flattened from `axis`, default 1; opset >= 13: along `axis`, default -1)

// Hardmax shares LogSoftmax's [outer, len, inner] view (opset < 13: flattened from axis; axis == rank allowed).
Status bind_hardmax(BindContext& c, Step& s) {
  const AxisView v = softmax_view(c);
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::hardmax(et, io.in[0], io.out[0], v.outer, v.len, v.inner, st); };
  return Status::ok();
}

// ArgMax / ArgMin (opset 11-13: axis default 0, negative allowed; keepdims only changes the output's shape; opset 12+:
// select_last_index): [outer, len, inner] around `axis`, int64 indices.
Status supports_arg_extreme(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t r = static_cast<int64_t>(x.size());
  const int64_t axis = attr_i(c.node, "axis", 0);
  if (r == 0 || axis < -r || axis >= r) return refuse(c, "axis " + std::to_string(axis) + " for rank " + std::to_string(r));
  if (x[static_cast<size_t>(axis < 0 ? axis + r : axis)] < 1) return refuse(c, "an empty reduced axis has no index");
  return Status::ok();
}

Status bind_arg_extreme(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  int64_t axis = attr_i(c.node, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  const AxisView v = axis_view(x, axis);
  const bool is_min = c.node.op_type == "ArgMin", last = attr_i(c.node, "select_last_index", 0) != 0;
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::arg_extreme(et, io.in[0], static_cast<int64_t*>(io.out[0]), v.outer, v.len, v.inner, is_min, last, st);
  };
  return Status::ok();
}

Status bind_log_softmax(BindContext& c, Step& s) {
  const AxisView v = softmax_view(c);
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::log_softmax(et, io.in[0], io.out[0], v.outer, v.len, v.inner, st); };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// LayerNormalization (rows = dims before axis, len = the rest; scale/bias hold len values; the optional
// Mean / InvStdDev outputs [rows] are written when present) and
// InstanceNormalization (rows = N·C, len = spatial; scale/bias [C]).

Status supports_layer_norm(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  for (size_t i = 1; i < c.node.inputs.size(); ++i)
    if (has_in(c, i)) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  const ir::Shape& x = in_t(c, 0).shape;
  int64_t axis = attr_i(c.node, "axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  int64_t len = 1;
  for (size_t i = static_cast<size_t>(axis); i < x.size(); ++i) len *= x[i];
  for (size_t i = 1; i < 3; ++i)
    if (has_in(c, i) && in_t(c, i).elements() != len) return refuse(c, "scale / bias broadcast over the normalised axes (only full-size scale and bias)");
  return Status::ok();
}

Status bind_layer_norm(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  int64_t axis = attr_i(c.node, "axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  int64_t rows = 1, len = 1;
  for (size_t i = 0; i < x.size(); ++i) (static_cast<int64_t>(i) < axis ? rows : len) *= x[i];
  const float eps = attr_f(c.node, "epsilon", 1e-5f);
  const bool bias = has_in(c, 2);
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {  // Mean / InvStdDev: optional outputs 1, 2
    return kernels::row_norm(et, io.in[0], io.out[0], io.in[1], bias ? io.in[2] : nullptr, rows, len, 0, eps, st,
                             io.out.size() > 1 ? io.out[1] : nullptr, io.out.size() > 2 ? io.out[2] : nullptr);
  };
  return Status::ok();
}

Status supports_instance_norm(const BindContext& c) {
  for (size_t i = 0; i < 3; ++i) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  if (in_t(c, 0).shape.size() < 2) return refuse(c, "input must be N×C×...");
  return Status::ok();
}

Status bind_instance_norm(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t channels = x[1];
  int64_t len = 1;
  for (size_t i = 2; i < x.size(); ++i) len *= x[i];
  const int64_t rows = x[0] * channels;
  const float eps = attr_f(c.node, "epsilon", 1e-5f);
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::row_norm(et, io.in[0], io.out[0], io.in[1], io.in[2], rows, len, channels, eps, st);
  };
  return Status::ok();
}

// GlobalMaxPool: the maximum over the spatial axes of each (n, c) plane (a ReduceMax row).
Status supports_global_max_pool(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (in_t(c, 0).shape.size() < 2) return refuse(c, "input must be N×C×...");
  return Status::ok();
}
Status bind_global_max_pool(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  int64_t len = 1;
  for (size_t i = 2; i < x.size(); ++i) len *= x[i];
  const int64_t outer = x[0] * x[1];
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::reduce(et, ReduceKind::kMax, io.in[0], io.out[0], outer, len, 1, st); };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

// Reduce over `axes` (attribute before opset 18 — ReduceSum: input from opset 13 — or input from 18).
OpSample reduce_sample(const std::string& op, std::string label, std::vector<int64_t> shape, std::vector<int64_t> axes,
                       int64_t keepdims, int64_t opset = 13) {
  const bool as_input = !axes.empty() && (opset >= 18 || op == "ReduceSum");
  OpSample s{std::move(label), {runtime("x", std::move(shape))}, {}, opset};
  std::vector<OpSampleAttr> attrs = {A::integer("keepdims", keepdims)};
  if (as_input) {
    s.tensors.push_back(constant_i64("axes", {static_cast<int64_t>(axes.size())}, axes));
    s.nodes.push_back(sample_node(op, {"x", "axes"}, {"y"}, attrs));
  } else {
    if (!axes.empty()) attrs.push_back(A::integers("axes", axes));
    s.nodes.push_back(sample_node(op, {"x"}, {"y"}, attrs));
  }
  return s;
}

std::vector<OpSample> reduce_samples(const std::string& op) {
  if (op == "ReduceLogSum")  // the log of a sum of positive values (sigmoid outputs)
    return {{"ReduceLogSum_of_sigmoid", {runtime("x", {2, 8, 7, 7})},
             {sample_node("Sigmoid", {"x"}, {"p"}), sample_node(op, {"p"}, {"y"}, {A::integers("axes", {2, 3})})}},
            {"ReduceLogSum_of_sigmoid_last_no_keepdims", {runtime("x", {3, 4, 33})},
             {sample_node("Sigmoid", {"x"}, {"p"}), sample_node(op, {"p"}, {"y"}, {A::integers("axes", {-1}), A::integer("keepdims", 0)})}},
            {"ReduceLogSum_of_sigmoid_two_blocks", {runtime("x", {2, 3, 4, 5})},
             {sample_node("Sigmoid", {"x"}, {"p"}), sample_node(op, {"p"}, {"y"}, {A::integers("axes", {0, 2, 3})})}}};
  return {reduce_sample(op, op + "_spatial_keepdims", {2, 8, 7, 7}, {2, 3}, 1),
          reduce_sample(op, op + "_last_axis", {3, 4, 33}, {-1}, 1),
          reduce_sample(op, op + "_middle_no_keepdims", {2, 3, 4, 5}, {1}, 0),
          reduce_sample(op, op + "_all_axes", {3, 5}, {}, 0),
          reduce_sample(op, op + "_with_unit_axis", {2, 1, 3, 4}, {1, 2}, 1),
          reduce_sample(op, op + "_opset18_axes_input", {2, 3, 4, 5}, {2, 1}, 1, 18),
          // axes that are not one block (MVN / BatchNorm-statistics exports: {0, 2, 3}): one stage per block
          reduce_sample(op, op + "_two_blocks_nchw", {2, 3, 4, 5}, {0, 2, 3}, 1),
          reduce_sample(op, op + "_three_blocks_no_keepdims", {2, 3, 2, 4, 3}, {0, 2, 4}, 0)};
}

std::vector<OpSample> log_softmax_samples(const std::string& op) {
  return {single("LogSoftmax_last", op, {2, 1000}), single("LogSoftmax_axis1", op, {1, 4, 3, 3}, {A::integer("axis", 1)}),
          single("LogSoftmax_opset11_flattened_axis1", op, {2, 3, 4}, {A::integer("axis", 1)}, 11)};
}

// x + a per-column offset 2.5 apart (x in [-1, 1)): the maximum of every row is its offset-5 column, so fp16
// rounding of the input cannot move it.
std::vector<OpSample> hardmax_samples(const std::string& op) {
  return {{"Hardmax_last_axis", {runtime("x", {3, 4, 5}), constant_values("c", {5}, {0.0f, 2.5f, 5.0f, -2.5f, 2.4f})},
           {sample_node("Add", {"x", "c"}, {"p"}), sample_node(op, {"p"}, {"y"})}},
          {"Hardmax_axis1_inner", {runtime("x", {2, 5, 3}), constant_values("c", {5, 1}, {0.0f, 5.0f, 2.5f, -2.5f, 2.4f})},
           {sample_node("Add", {"x", "c"}, {"p"}), sample_node(op, {"p"}, {"y"}, {A::integer("axis", 1)})}}};
}

// The extreme of every row is a constant offset far from the others (fp16 cannot move it); the int64 indices are
// compared through a Cast to float. select_last_index: p = 0·x + c with tied extremes, runtime (not folded).
std::vector<OpSample> arg_extreme_samples(const std::string& op) {
  constexpr int64_t kToFloat = static_cast<int64_t>(ir::DType::kFloat32);
  const bool mn = op == "ArgMin";
  const float e = mn ? -5.0f : 5.0f;
  auto cast = [&](const std::string& from) { return sample_node("Cast", {from}, {"y"}, {A::integer("to", kToFloat)}); };
  return {{op + "_axis0_default", {runtime("x", {5, 3}), constant_values("c", {5, 1}, {0.0f, 2.5f, e, -0.5f, 0.4f})},
           {sample_node("Add", {"x", "c"}, {"p"}), sample_node(op, {"p"}, {"i"}), cast("i")}},
          {op + "_last_axis_no_keepdims", {runtime("x", {2, 3, 7}), constant_values("c", {7}, {0.0f, 2.5f, -2.5f, 1.0f, e, 0.4f, -0.4f})},
           {sample_node("Add", {"x", "c"}, {"p"}), sample_node(op, {"p"}, {"i"}, {A::integer("axis", -1), A::integer("keepdims", 0)}), cast("i")}},
          {op + "_long_rows", {runtime("x", {3, 100}), constant_values("c", {1, 100}, [&] {
             std::vector<float> v(100, 0.0f);
             v[71] = e;
             return v;
           }())},
           {sample_node("Add", {"x", "c"}, {"p"}), sample_node(op, {"p"}, {"i"}, {A::integer("axis", 1)}), cast("i")}},
          {op + "_select_last_index_ties", {runtime("x", {2, 6}), constant_values("zero", {1}, {0.0f}),
                                            constant_values("c", {6}, {1.0f, e, 0.0f, e, -1.0f, e})},
           {sample_node("Mul", {"x", "zero"}, {"z"}), sample_node("Add", {"z", "c"}, {"p"}),
            sample_node(op, {"p"}, {"i"}, {A::integer("axis", 1), A::integer("select_last_index", 1)}), cast("i")}}};
}

std::vector<OpSample> layer_norm_samples(const std::string& op) {
  return {{"LayerNormalization_last_axis", {runtime("x", {2, 5, 96}), constant("g", {96}), constant("b", {96})},
           {sample_node(op, {"x", "g", "b"}, {"y"})}, 17},
          {"LayerNormalization_axis1_no_bias", {runtime("x", {3, 4, 5}), constant("g", {4, 5})},
           {sample_node(op, {"x", "g"}, {"y"}, {A::integer("axis", 1), A::real("epsilon", 1e-3f)})}, 17},
          {"LayerNormalization_runtime_scale", {runtime("x", {4, 40}), runtime("g", {40}), runtime("b", {40})},
           {sample_node(op, {"x", "g", "b"}, {"y"})}, 17},
          // Mean and InvStdDev outputs, checked through y = normalised + mean·inv_std (both broadcast over the row).
          {"LayerNormalization_mean_inv_std_outputs", {runtime("x", {3, 4, 20}), constant("g", {20}), constant("b", {20})},
           {sample_node(op, {"x", "g", "b"}, {"n", "m", "r"}), sample_node("Mul", {"m", "r"}, {"mr"}), sample_node("Add", {"n", "mr"}, {"y"})}, 17}};
}

std::vector<OpSample> instance_norm_samples(const std::string& op) {
  return {{"InstanceNormalization_nchw", {runtime("x", {2, 3, 6, 7}), constant("s", {3}), constant("b", {3})},
           {sample_node(op, {"x", "s", "b"}, {"y"})}},
          {"InstanceNormalization_ncl_eps", {runtime("x", {1, 4, 50}), constant("s", {4}), constant("b", {4})},
           {sample_node(op, {"x", "s", "b"}, {"y"}, {A::real("epsilon", 1e-2f)})}}};
}

}  // namespace

std::vector<CudaOpDef> reduce_ops() {
  std::vector<CudaOpDef> v;
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
                         "ReduceSumSquare"})
    v.push_back({op, 1, supports_reduce, bind_reduce, reduce_samples});
  v.push_back({"LogSoftmax", 1, ok_float0, bind_log_softmax, log_softmax_samples});
  v.push_back({"Hardmax", 1, ok_float0, bind_hardmax, hardmax_samples});
  for (const char* op : {"ArgMax", "ArgMin"}) v.push_back({op, 1, supports_arg_extreme, bind_arg_extreme, arg_extreme_samples});
  v.push_back({"LayerNormalization", -1, supports_layer_norm, bind_layer_norm, layer_norm_samples});
  v.push_back({"InstanceNormalization", -1, supports_instance_norm, bind_instance_norm, instance_norm_samples});
  v.push_back({"GlobalMaxPool", 1, supports_global_max_pool, bind_global_max_pool, [](const std::string& op) {
                 return std::vector<OpSample>{single("GlobalMaxPool_nchw", op, {2, 3, 7, 5}), single("GlobalMaxPool_ncl", op, {1, 4, 33})};
               }});
  return v;
}

}  // namespace ws::cudaexec
