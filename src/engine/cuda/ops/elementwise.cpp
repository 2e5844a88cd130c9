// CUDA op-table entries: unary activations (Relu, Sigmoid, HardSigmoid, HardSwish, Clip) through the
// bias/activation kernel, and numpy-broadcast binary ops (Add, Sub, Mul, Div); src/kernels/elementwise.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/cuda/build_stages.h"
#include "engine/cuda/op_util.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;

// ------------------------------------------------------------------------------------------------
// Unary ops (and the activation folded into a Conv)

bool clip_bounds(const ir::Graph& g, const ir::Node& n, ActivationParams& p) {
  return clip_bounds_constant(g, n, &p.min, &p.max);
}

Status supports_unary(const BindContext& c) { return ok_float0(c); }

Status bind_unary(BindContext& c, Step& s) {
  Activation act = Activation::kNone;
  ActivationParams p;
  if (!activation_of(c.graph, c.node, act, p)) return refuse(c, "activation parameters are not build-time constants");
  const int64_t count = in_t(c, 0).elements();
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::bias_activation(et, io.in[0], io.out[0], nullptr, count, 1, 1, act, p, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Binary broadcast

Status supports_binary(const BindContext& c) {
  WS_RETURN_IF_ERROR(require_runtime_float(c, 0));
  WS_RETURN_IF_ERROR(require_runtime_float(c, 1));
  if (out_shape(c).size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "output rank above 8");
  return Status::ok();
}
template <kernels::BinaryOp kOp>
Status bind_binary(BindContext& c, Step& s) {
  WS_ASSIGN_OR_RETURN(auto d, broadcast_dims(in_t(c, 0).shape, in_t(c, 1).shape, out_shape(c)));
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::binary_broadcast(et, kOp, io.in[0], io.in[1], io.out[0], d, st);
  };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

std::vector<OpSample> unary_samples(const std::string& op) {
  if (op == "HardSigmoid")
    return {single("HardSigmoid_alpha_beta", op, {1, 3, 7, 9}, {A::real("alpha", 0.3f), A::real("beta", 0.4f)}),
            single("HardSigmoid_defaults", op, {2, 50})};
  if (op == "Clip")
    return {{"Clip_min_only", {runtime("x", {2, 50}), constant_values("lo", {}, {-0.5f})},
             {sample_node("Clip", {"x", "lo", ""}, {"y"})}},
            {"Clip_min_max", {runtime("x", {1, 3, 7, 9}), constant_values("lo", {}, {-0.25f}), constant_values("hi", {}, {0.5f})},
             {sample_node("Clip", {"x", "lo", "hi"}, {"y"})}},
            {"Clip_max_only", {runtime("x", {2, 50}), constant_values("hi", {}, {0.125f})},
             {sample_node("Clip", {"x", "", "hi"}, {"y"})}},
            {"Clip_opset6_attributes", {runtime("x", {2, 50})},
             {sample_node("Clip", {"x"}, {"y"}, {A::real("min", -0.3f), A::real("max", 0.7f)})}, 6},
            {"Clip_no_bounds", {runtime("x", {2, 50})}, {sample_node("Clip", {"x"}, {"y"})}}};
  return {single(op, op, {1, 3, 7, 9})};
}

// a [shape_a] (runtime) op b [shape_b] (runtime or constant).
OpSample binary_sample(const std::string& op, std::string label, std::vector<int64_t> a, std::vector<int64_t> b, bool b_const) {
  return {std::move(label),
          {runtime("a", std::move(a)), b_const ? constant("b", std::move(b), 1.0f, op == "Div") : runtime("b", std::move(b))},
          {sample_node(op, {"a", "b"}, {"y"})}};
}

std::vector<OpSample> binary_samples(const std::string& op) {
  std::vector<OpSample> r = {
      binary_sample(op, op + "_same_shape_runtime", {1, 4, 5, 6}, {1, 4, 5, 6}, false),
      binary_sample(op, op + "_channel_const", {1, 4, 5, 6}, {4, 1, 1}, true),
      binary_sample(op, op + "_last_axis_const", {1, 4, 5, 6}, {6}, true),
      binary_sample(op, op + "_outer_broadcast_runtime", {3, 1}, {1, 5}, false),
      binary_sample(op, op + "_rank3_const", {2, 3, 4}, {3, 1}, true),
  };
  if (op == "Div")  // a runtime divisor would meet values near 0: constants only
    r.erase(std::remove_if(r.begin(), r.end(), [](const OpSample& s) { return s.tensors[1].kind == OpSampleTensor::Kind::kRuntime; }), r.end());
  return r;
}

}  // namespace

bool activation_of(const ir::Graph& g, const ir::Node& n, Activation& act, ActivationParams& p) {
  p = ActivationParams{};
  if (n.op_type == "Relu") { act = Activation::kRelu; return true; }
  if (n.op_type == "Sigmoid") { act = Activation::kSigmoid; return true; }
  if (n.op_type == "HardSwish") { act = Activation::kHardSwish; return true; }
  if (n.op_type == "HardSigmoid") {
    act = Activation::kHardSigmoid;
    p.alpha = attr_f(n, "alpha", 0.2f);
    p.beta = attr_f(n, "beta", 0.5f);
    return true;
  }
  if (n.op_type == "Clip") { act = Activation::kClip; return clip_bounds(g, n, p); }
  return false;
}

std::vector<CudaOpDef> elementwise_ops() {
  return {
      {"Add", -1, supports_binary, bind_binary<kernels::BinaryOp::kAdd>, binary_samples},
      {"Clip", 1, supports_unary, bind_unary, unary_samples},
      {"Div", -1, supports_binary, bind_binary<kernels::BinaryOp::kDiv>, binary_samples},
      {"HardSigmoid", 1, supports_unary, bind_unary, unary_samples},
      {"HardSwish", 1, supports_unary, bind_unary, unary_samples},
      {"Mul", -1, supports_binary, bind_binary<kernels::BinaryOp::kMul>, binary_samples},
      {"Relu", 1, supports_unary, bind_unary, unary_samples},
      {"Sigmoid", 1, supports_unary, bind_unary, unary_samples},
      {"Sub", -1, supports_binary, bind_binary<kernels::BinaryOp::kSub>, binary_samples},
  };
}

}  // namespace ws::cudaexec
