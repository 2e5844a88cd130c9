// CUDA op-table entries (issue 14): the unary math family (Erf, Gelu, Tanh, Exp, Log, Sqrt, Neg, Abs,
// Reciprocal, LeakyRelu, Elu, Selu, Softplus, Softsign, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh,
// Acosh, Atanh, Floor, Ceil, Round, Sign, ThresholdedRelu, Celu, Shrink: one templated kernel, a functor per op),
// standalone inference BatchNormalization (folded at build to y = x·a[c] + b[c]; e.g. DenseNet's BN after a
// Concat, which the BN→Conv pass cannot fold), PRelu and Pow (numpy broadcast), and the variadic
// Sum / Max / Min / Mean (a chain of broadcast binary steps into y; Mean scales by 1/n).
// Kernels: src/kernels/elementwise/unary_math.cu.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/op_util.h"
#include "kernels/elementwise/unary_math.h"

namespace ws::cudaexec {
namespace {

using kernels::BinaryMathOp;
using kernels::ElemType;
using kernels::MathFn;
using kernels::MathFnParams;

// ------------------------------------------------------------------------------------------------
// Unary math

bool math_fn_of(const ir::Node& n, MathFn& f, MathFnParams& p) {
  const std::string& op = n.op_type;
  p = MathFnParams{};
  if (op == "Erf") f = MathFn::kErf;
  else if (op == "Gelu") f = attr_s(n, "approximate", "none") == "tanh" ? MathFn::kGeluTanh : MathFn::kGelu;
  else if (op == "Tanh") f = MathFn::kTanh;
  else if (op == "Exp") f = MathFn::kExp;
  else if (op == "Log") f = MathFn::kLog;
  else if (op == "Sqrt") f = MathFn::kSqrt;
  else if (op == "Neg") f = MathFn::kNeg;
  else if (op == "Abs") f = MathFn::kAbs;
  else if (op == "Reciprocal") f = MathFn::kReciprocal;
  else if (op == "LeakyRelu") { f = MathFn::kLeakyRelu; p.alpha = attr_f(n, "alpha", 0.01f); }
  else if (op == "Elu") { f = MathFn::kElu; p.alpha = attr_f(n, "alpha", 1.0f); }
  else if (op == "Selu") {
    f = MathFn::kSelu;
    p.alpha = attr_f(n, "alpha", 1.67326319217681884765625f);
    p.gamma = attr_f(n, "gamma", 1.05070102214813232421875f);
  }
  else if (op == "Softplus") f = MathFn::kSoftplus;
  else if (op == "Softsign") f = MathFn::kSoftsign;
  else if (op == "Sin") f = MathFn::kSin;
  else if (op == "Cos") f = MathFn::kCos;
  else if (op == "Tan") f = MathFn::kTan;
  else if (op == "Asin") f = MathFn::kAsin;
  else if (op == "Acos") f = MathFn::kAcos;
  else if (op == "Atan") f = MathFn::kAtan;
  else if (op == "Sinh") f = MathFn::kSinh;
  else if (op == "Cosh") f = MathFn::kCosh;
  else if (op == "Asinh") f = MathFn::kAsinh;
  else if (op == "Acosh") f = MathFn::kAcosh;
  else if (op == "Atanh") f = MathFn::kAtanh;
  else if (op == "Floor") f = MathFn::kFloor;
  else if (op == "Ceil") f = MathFn::kCeil;
  else if (op == "Round") f = MathFn::kRound;
  else if (op == "Sign") f = MathFn::kSign;
  else if (op == "ThresholdedRelu") { f = MathFn::kThresholdedRelu; p.alpha = attr_f(n, "alpha", 1.0f); }
  else if (op == "Celu") { f = MathFn::kCelu; p.alpha = attr_f(n, "alpha", 1.0f); }
  else if (op == "Shrink") { f = MathFn::kShrink; p.bias = attr_f(n, "bias", 0.0f); p.lambd = attr_f(n, "lambd", 0.5f); }
  else return false;
  return true;
}

Status supports_math(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  MathFn f;
  MathFnParams p;
  if (!math_fn_of(c.node, f, p)) return refuse(c, "no math functor for this op");
  return Status::ok();
}

Status bind_math(BindContext& c, Step& s) {
  MathFn f;
  MathFnParams p;
  if (!math_fn_of(c.node, f, p)) return refuse(c, "no math functor for this op");
  const int64_t count = in_t(c, 0).elements();
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::unary_math(et, f, p, io.in[0], io.out[0], count, st); };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// BatchNormalization (inference). Constant statistics: folded at build, a[c] = scale[c] / sqrt(var[c] + eps),
// b[c] = bias[c] − mean[c]·a[c] (double), y = x·a[c] + b[c]. Runtime statistics (graph inputs): read per element.

bool batch_norm_params_constant(const BindContext& c) {
  for (size_t i = 1; i < 5; ++i)
    if (!in_t(c, i).is_constant()) return false;
  return true;
}

Status supports_batch_norm(const BindContext& c) {
  for (size_t i = 0; i < 5; ++i) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  if (in_t(c, 0).shape.size() < 2) return refuse(c, "input X must be N×C×...");
  return Status::ok();
}

Status bind_batch_norm(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t channels = x[1];
  int64_t inner = 1;
  for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
  const double eps = attr_f(c.node, "epsilon", 1e-5f);
  if (c.nhwc) {  // channels-last (assign_layouts admits constant statistics only): channel = i % C
    if (!batch_norm_params_constant(c)) return internal_error(c.node.describe(c.graph.opset) + ": an NHWC BatchNormalization needs constant statistics");
    inner = 1;
  }
  if (!batch_norm_params_constant(c)) {  // statistics known only at run time (graph inputs): read per element
    const int64_t count = in_t(c, 0).elements();
    const ElemType et = c.elem;
    const float feps = static_cast<float>(eps);
    s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return kernels::batch_norm_runtime(et, io.in[0], io.out[0], io.in[1], io.in[2], io.in[3], io.in[4], feps, count, channels, inner, st);
    };
    return Status::ok();
  }
  const float* scale = in_t(c, 1).data_as<float>();
  const float* bias = in_t(c, 2).data_as<float>();
  const float* mean = in_t(c, 3).data_as<float>();
  const float* var = in_t(c, 4).data_as<float>();
  std::vector<float> a(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) {
    const double ak = static_cast<double>(scale[k]) / std::sqrt(static_cast<double>(var[k]) + eps);
    a[static_cast<size_t>(k)] = static_cast<float>(ak);
    b[static_cast<size_t>(k)] = static_cast<float>(static_cast<double>(bias[k]) - static_cast<double>(mean[k]) * ak);
  }
  WS_ASSIGN_OR_RETURN(const void* da, c.upload_values(a, true));
  WS_ASSIGN_OR_RETURN(const void* db, c.upload_values(b, true));
  const auto* fa = static_cast<const float*>(da);
  const auto* fb = static_cast<const float*>(db);
  const int64_t count = in_t(c, 0).elements();
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::channel_affine(et, io.in[0], io.out[0], fa, fb, count, channels, inner, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// PRelu, Pow (two inputs, broadcast) and the variadic Sum / Max / Min / Mean

Status supports_all_float(const BindContext& c) {
  for (size_t i = 0; i < c.node.inputs.size(); ++i) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  if (out_shape(c).size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "output rank above 8");
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    if (in_t(c, i).shape.size() > out_shape(c).size()) return refuse(c, "an input has a higher rank than the output");
  return Status::ok();
}

// Mod: floats with fmod = 1 (the analyzer refuses fmod = 0 on floats, as the spec does); integer Mod is folded at
// build when its operands are constants, else refused here.
Status supports_mod(const BindContext& c) {
  WS_RETURN_IF_ERROR(supports_all_float(c));
  if (attr_i(c.node, "fmod", 0) != 1) return refuse(c, "fmod = 0 (integer Mod) on float tensors");
  return Status::ok();
}

template <BinaryMathOp kOp>
Status bind_binary_math(BindContext& c, Step& s) {
  WS_ASSIGN_OR_RETURN(auto d, broadcast_dims(in_t(c, 0).shape, in_t(c, 1).shape, out_shape(c)));
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::binary_math(et, kOp, io.in[0], io.in[1], io.out[0], d, st); };
  return Status::ok();
}

// Pow: a float32 base (runtime or constant, uploaded by the engine: data_inputs 1) and a float32 exponent, or an
// integer constant exponent (Pow-12/15 allow int32 / int64 / ... exponents) converted to float at build — exactly,
// since every value must be within ±2^24.
std::vector<double> int_constant_values(const ir::Tensor& t) {
  const size_t n = static_cast<size_t>(t.elements());
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case ir::DType::kInt64: v[i] = static_cast<double>(t.data_as<int64_t>()[i]); break;
      case ir::DType::kInt32: v[i] = static_cast<double>(t.data_as<int32_t>()[i]); break;
      case ir::DType::kInt8: v[i] = static_cast<double>(t.data_as<int8_t>()[i]); break;
      default: v[i] = static_cast<double>(t.data_as<uint8_t>()[i]); break;
    }
  }
  return v;
}

Status supports_pow(const BindContext& c) {
  WS_RETURN_IF_ERROR(require_runtime_float(c, 0));
  const ir::Tensor& e = in_t(c, 1);
  if (e.dtype != ir::DType::kFloat32) {
    const bool int_type = e.dtype == ir::DType::kInt64 || e.dtype == ir::DType::kInt32 || e.dtype == ir::DType::kInt8 ||
                          e.dtype == ir::DType::kUInt8;
    if (!int_type || !e.is_constant())
      return refuse(c, "exponent of element type " + std::string(ir::dtype_name(e.dtype)) +
                           " (float32, or an integer constant known at build)");
    const std::vector<double> v = int_constant_values(e);
    for (double x : v)
      if (std::fabs(x) > 16777216.0) return refuse(c, "an integer exponent beyond ±2^24 (not exact in float32)");
  }
  if (out_shape(c).size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "output rank above 8");
  for (size_t i = 0; i < 2; ++i)
    if (in_t(c, i).shape.size() > out_shape(c).size()) return refuse(c, "an input has a higher rank than the output");
  return Status::ok();
}

Status bind_pow(BindContext& c, Step& s) {
  const ir::Tensor& e = in_t(c, 1);
  if (e.is_constant()) {
    if (e.dtype == ir::DType::kFloat32) {
      WS_ASSIGN_OR_RETURN(s.inputs[1].ptr, c.upload(c.node.inputs[1], false));
    } else {
      const std::vector<double> v = int_constant_values(e);
      WS_ASSIGN_OR_RETURN(s.inputs[1].ptr, c.upload_values(std::vector<float>(v.begin(), v.end()), false));
    }
    s.inputs[1].kind = Operand::Kind::kConst;
  }
  return bind_binary_math<BinaryMathOp::kPow>(c, s);
}

// PRelu: the slope read as the CPU analyzer reads it (prelu_slope_shape, engine/ir/op_table.h).
Status bind_prelu(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  WS_ASSIGN_OR_RETURN(auto d, broadcast_dims(x, engine::prelu_slope_shape(x, in_t(c, 1).shape), out_shape(c)));
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::binary_math(et, BinaryMathOp::kPRelu, io.in[0], io.in[1], io.out[0], d, st);
  };
  return Status::ok();
}

// y = in0 op in1; y = y op in_k for k >= 2 (y's own strides: each element is read and written by one
// thread); Mean: y *= 1/n. One input: a copy (its shape is y's), scaled for Mean is the identity.
Status bind_variadic(BindContext& c, Step& s) {
  const std::string& op = c.node.op_type;
  const BinaryMathOp bop = op == "Max" ? BinaryMathOp::kMax : op == "Min" ? BinaryMathOp::kMin : BinaryMathOp::kAdd;
  const bool mean = op == "Mean";
  const ir::Shape& y = out_shape(c);
  const size_t n = c.node.inputs.size();
  std::vector<kernels::BroadcastDims> steps;
  for (size_t k = 1; k < n; ++k) {
    WS_ASSIGN_OR_RETURN(auto d, broadcast_dims(k == 1 ? in_t(c, 0).shape : y, in_t(c, k).shape, y));
    steps.push_back(d);
  }
  const int64_t count = shape_elements(y);
  const size_t bytes = static_cast<size_t>(count) * c.elem_bytes;
  MathFnParams scale;
  scale.alpha = static_cast<float>(1.0 / static_cast<double>(n));
  const ElemType et = c.elem;
  s.kernels = static_cast<int>(std::max<size_t>(1, steps.size()) + (mean && n > 1 ? 1 : 0));
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    if (steps.empty()) {
      if (bytes && io.in[0] != io.out[0]) WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.out[0], io.in[0], bytes, cudaMemcpyDeviceToDevice, st));
      return Status::ok();
    }
    for (size_t k = 0; k < steps.size(); ++k)
      WS_RETURN_IF_ERROR(kernels::binary_math(et, bop, k == 0 ? io.in[0] : io.out[0], io.in[k + 1], io.out[0], steps[k], st));
    if (mean) WS_RETURN_IF_ERROR(kernels::unary_math(et, MathFn::kScale, scale, io.out[0], io.out[0], count, st));
    return Status::ok();
  };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

// x -> Sigmoid -> op: inputs in (0.27, 0.73), so Log / Sqrt / Reciprocal stay finite and well conditioned.
OpSample positive_input(std::string label, const std::string& op) {
  return {std::move(label), {runtime("x", {2, 3, 5, 7})}, {sample_node("Sigmoid", {"x"}, {"p"}), sample_node(op, {"p"}, {"y"})}};
}

// x -> `pre` -> op (`pre` keeps the operand inside the op's domain or away from its discontinuities, so fp16
// rounding of the input cannot flip a step).
OpSample after(std::string label, const std::string& pre, const std::string& op, std::vector<OpSampleAttr> attrs = {}) {
  return {std::move(label), {runtime("x", {2, 3, 5, 7})}, {sample_node(pre, {"x"}, {"p"}), sample_node(op, {"p"}, {"y"}, std::move(attrs))}};
}

std::vector<OpSample> math_samples(const std::string& op) {
  if (op == "Log" || op == "Sqrt" || op == "Reciprocal") return {positive_input(op + "_of_sigmoid", op)};
  if (op == "Acosh")  // domain x >= 1: 1 / sigmoid(x) in (1.37, 3.7)
    return {{"Acosh_of_reciprocal_sigmoid", {runtime("x", {2, 3, 5, 7})},
             {sample_node("Sigmoid", {"x"}, {"p"}), sample_node("Reciprocal", {"p"}, {"q"}), sample_node(op, {"q"}, {"y"})}}};
  if (op == "Atanh") return {after("Atanh_of_tanh", "Tanh", op)};  // |tanh(x)| <= 0.77
  if (op == "Round")  // 0.4·x + an integer offset per column: every value within 0.4 of an integer, none near a .5 tie
    return {{"Round_near_integers", {runtime("x", {2, 3, 5, 7}), constant_values("k", {}, {0.4f}),
                                      constant_values("c", {7}, {0.0f, 1.0f, 2.0f, -1.0f, -2.0f, 3.0f, 5.0f})},
             {sample_node("Mul", {"x", "k"}, {"p"}), sample_node("Add", {"p", "c"}, {"q"}), sample_node(op, {"q"}, {"y"})}}};
  if (op == "ThresholdedRelu")  // sigmoid(x) in (0.27, 0.73): alpha 0.1 passes all, 0.9 none (no value near alpha)
    return {after("ThresholdedRelu_pass", "Sigmoid", op, {A::real("alpha", 0.1f)}), after("ThresholdedRelu_block", "Sigmoid", op, {A::real("alpha", 0.9f)})};
  if (op == "Shrink")  // bias = lambd: the continuous (soft) form
    return {single("Shrink_soft", op, {2, 3, 5, 7}, {A::real("lambd", 0.4f), A::real("bias", 0.4f)})};
  if (op == "Celu") return {single("Celu_default", op, {2, 3, 5, 7}), single("Celu_alpha", op, {4, 33}, {A::real("alpha", 0.5f)})};
  if (op == "Floor" || op == "Ceil")  // 2.5 + 0.4·x in [2.1, 2.9): no integer nearby
    return {{op + "_offset", {runtime("x", {2, 3, 5, 7}), constant_values("k", {}, {0.4f}), constant_values("c", {}, {2.5f})},
             {sample_node("Mul", {"x", "k"}, {"p"}), sample_node("Add", {"p", "c"}, {"q"}), sample_node(op, {"q"}, {"y"})}}};
  if (op == "Sign") return {after("Sign_of_tanh", "Tanh", op)};
  if (op == "LeakyRelu")
    return {single("LeakyRelu_default", op, {2, 3, 5, 7}), single("LeakyRelu_alpha", op, {4, 33}, {A::real("alpha", 0.2f)})};
  if (op == "Elu") return {single("Elu_default", op, {2, 3, 5, 7}), single("Elu_alpha", op, {4, 33}, {A::real("alpha", 0.5f)})};
  if (op == "Selu")
    return {single("Selu_default", op, {2, 3, 5, 7}), single("Selu_alpha_gamma", op, {4, 33}, {A::real("alpha", 2.0f), A::real("gamma", 3.0f)})};
  if (op == "Gelu")
    return {single("Gelu_erf", op, {2, 3, 5, 7}, {}, 20), single("Gelu_tanh", op, {4, 33}, {A::text("approximate", "tanh")}, 20)};
  if (op == "Exp") return {single("Exp", op, {2, 3, 5, 7}), single("Exp_large", op, {3, 1000})};
  return {single(op, op, {2, 3, 5, 7})};
}

// Positive variances (a constant with nonzero = |v| in [0.5, 1.5) may be negative: given explicitly).
std::vector<float> variances(int64_t c) {
  std::vector<float> v(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) v[static_cast<size_t>(i)] = 0.25f + 0.37f * static_cast<float>(i % 5);
  return v;
}

std::vector<OpSample> batch_norm_samples(const std::string& op) {
  auto bn_tensors = [](int64_t c) {
    return std::vector<OpSampleTensor>{constant("scale", {c}), constant("bias", {c}), constant("mean", {c}, 0.5f),
                                       constant_values("var", {c}, variances(c))};
  };
  OpSample after_concat{"BatchNormalization_after_Concat", {runtime("a", {1, 3, 4, 5}), runtime("b", {1, 2, 4, 5})},
                        {sample_node("Concat", {"a", "b"}, {"cat"}, {A::integer("axis", 1)}),
                         sample_node(op, {"cat", "scale", "bias", "mean", "var"}, {"y"}, {A::real("epsilon", 1e-3f)})}};
  for (auto& t : bn_tensors(5)) after_concat.tensors.push_back(t);
  OpSample rank2{"BatchNormalization_rank2", {runtime("x", {3, 6})}, {sample_node(op, {"x", "scale", "bias", "mean", "var"}, {"y"})}};
  for (auto& t : bn_tensors(6)) rank2.tensors.push_back(t);
  OpSample rank3{"BatchNormalization_rank3", {runtime("x", {2, 4, 9})}, {sample_node(op, {"x", "scale", "bias", "mean", "var"}, {"y"})}};
  for (auto& t : bn_tensors(4)) rank3.tensors.push_back(t);
  OpSample runtime_stats{"BatchNormalization_runtime_statistics",
                         {runtime("x", {2, 3, 4, 5}), runtime("scale", {3}), runtime("bias", {3}), runtime("mean", {3}),
                          constant_values("var", {3}, variances(3))},
                         {sample_node(op, {"x", "scale", "bias", "mean", "var"}, {"y"})}};
  return {after_concat, rank2, rank3, runtime_stats};
}

std::vector<OpSample> prelu_samples(const std::string& op) {
  return {{"PRelu_channel_slope", {runtime("x", {2, 4, 3, 5}), constant("s", {4, 1, 1})}, {sample_node(op, {"x", "s"}, {"y"})}},
          {"PRelu_scalar_slope", {runtime("x", {2, 4, 3, 5}), constant("s", {1})}, {sample_node(op, {"x", "s"}, {"y"})}},
          // PRelu-6 / PyTorch exports: a [C] slope on N x C x L data is the channel slope (not numpy's last axis).
          {"PRelu_legacy_channel_slope_1d", {runtime("x", {2, 3, 4}), constant("s", {3})}, {sample_node(op, {"x", "s"}, {"y"})}},
          {"PRelu_runtime_slope", {runtime("x", {3, 7}), runtime("s", {3, 7})}, {sample_node(op, {"x", "s"}, {"y"})}}};
}

std::vector<OpSample> pow_int_samples();
std::vector<OpSample> pow_samples(const std::string& op) {
  std::vector<OpSample> r = {{"Pow_square", {runtime("x", {2, 3, 4}), constant_values("e", {}, {2.0f})}, {sample_node(op, {"x", "e"}, {"y"})}},
          {"Pow_positive_base_runtime_exponent", {runtime("x", {2, 3, 4}), runtime("e", {3, 4})},
           {sample_node("Sigmoid", {"x"}, {"p"}), sample_node(op, {"p", "e"}, {"y"})}}};
  for (OpSample& f : pow_int_samples()) r.push_back(std::move(f));
  return r;
}

std::vector<OpSample> pow_int_samples() {
  return {{"Pow_int64_exponent", {runtime("x", {2, 3, 4}), constant_i64("e", {4}, {0, 1, 2, 3})}, {sample_node("Pow", {"x", "e"}, {"y"})}, 15}};
}

// Mod with fmod = 1 on floats (ONNX requires fmod = 1 for float inputs): divisors kept away from 0.
std::vector<OpSample> mod_samples(const std::string& op) {
  return {{"Mod_fmod_const_divisor", {runtime("a", {2, 3, 4}), constant_values("b", {4}, {0.3f, -0.7f, 1.5f, -0.25f})},
           {sample_node(op, {"a", "b"}, {"y"}, {OpSampleAttr::integer("fmod", 1)})}},
          {"Mod_fmod_runtime_both_signs", {runtime("a", {3, 5}), runtime("b", {3, 5}), constant_values("k", {}, {0.5f})},
           // b' = sign-mixed, |b'| >= 0.5: k + |b| with the sign of b
           {sample_node("Abs", {"b"}, {"ab"}), sample_node("Add", {"ab", "k"}, {"m"}), sample_node("Sign", {"b"}, {"sg"}),
            sample_node("Mul", {"m", "sg"}, {"d"}), sample_node(op, {"a", "d"}, {"y"}, {OpSampleAttr::integer("fmod", 1)})}}};
}

std::vector<OpSample> variadic_samples(const std::string& op) {
  return {{op + "_one_input", {runtime("a", {2, 5})}, {sample_node(op, {"a"}, {"y"})}},
          {op + "_two_broadcast", {runtime("a", {2, 3, 4}), constant("b", {3, 1})}, {sample_node(op, {"a", "b"}, {"y"})}},
          {op + "_three_runtime", {runtime("a", {2, 3, 4}), runtime("b", {2, 3, 4}), runtime("c", {4})},
           {sample_node(op, {"a", "b", "c"}, {"y"})}},
          {op + "_broadcast_first", {runtime("a", {4}), runtime("b", {2, 3, 4}), runtime("c", {3, 1})},
           {sample_node(op, {"a", "b", "c"}, {"y"})}}};
}

}  // namespace

std::vector<CudaOpDef> math_ops() {
  std::vector<CudaOpDef> v;
  for (const char* op : {"Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Celu", "Cos", "Cosh", "Elu", "Erf",
                         "Exp", "Floor", "Gelu", "LeakyRelu", "Log", "Neg", "Reciprocal", "Round", "Selu", "Shrink", "Sign", "Sin",
                         "Sinh", "Softplus", "Softsign", "Sqrt", "Tan", "Tanh", "ThresholdedRelu"})
    v.push_back({op, 1, supports_math, bind_math, math_samples});
  v.push_back({"BatchNormalization", -1, supports_batch_norm, bind_batch_norm, batch_norm_samples});
  v.push_back({"PRelu", -1, supports_all_float, bind_prelu, prelu_samples});
  v.push_back({"Mod", -1, supports_mod, bind_binary_math<BinaryMathOp::kFmod>, mod_samples});
  v.push_back({"Pow", 1, supports_pow, bind_pow, pow_samples});
  for (const char* op : {"Max", "Mean", "Min", "Sum"}) v.push_back({op, -1, supports_all_float, bind_variadic, variadic_samples});
  return v;
}

}  // namespace ws::cudaexec
