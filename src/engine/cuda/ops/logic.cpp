// CUDA op-table entries on non-float tensors (issue 14): Equal / Less / Greater / LessOrEqual / GreaterOrEqual
// (float32, int64, int32, int8, uint8 and — Equal only — bool operands, bool result), And / Or / Xor / Not on
// bool, IsInf / IsNaN (float -> bool), and Where (bool condition; X / Y of any element type the executor stores). Tensors other than float32
// live in the arena in their own type (plan_cuda_arena sizes them by dtype); float32 ones in the activation
// type. Constant operands of any type are uploaded as the executor stores them (BindContext::upload_stored).
// Kernels: src/kernels/elementwise/logic.cu. Cast lives with the indexing entries (ops/indexing.cpp).
#include <string>
#include <vector>

#include "engine/cuda/op_util.h"
#include "kernels/elementwise/logic.h"

namespace ws::cudaexec {
namespace {

using kernels::CompareOp;
using kernels::ElemType;
using kernels::LogicOp;

Status require_rank6(const BindContext& c) {
  if (out_shape(c).size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "output rank above 8");
  return Status::ok();
}

Status require_bool(const BindContext& c, size_t i) {
  if (in_t(c, i).dtype != ir::DType::kBool)
    return refuse(c, "input " + std::to_string(i) + " has element type " + ir::dtype_name(in_t(c, i).dtype) + " (bool only)");
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Comparisons

CompareOp compare_op_of(const std::string& op) {
  if (op == "Less") return CompareOp::kLess;
  if (op == "Greater") return CompareOp::kGreater;
  if (op == "LessOrEqual") return CompareOp::kLessOrEqual;
  if (op == "GreaterOrEqual") return CompareOp::kGreaterOrEqual;
  return CompareOp::kEqual;
}

Status supports_compare(const BindContext& c) {
  const ir::DType t = in_t(c, 0).dtype;
  const bool ok = t == ir::DType::kFloat32 || t == ir::DType::kInt64 || t == ir::DType::kInt32 || t == ir::DType::kInt8 ||
                  t == ir::DType::kUInt8 || (t == ir::DType::kBool && c.node.op_type == "Equal");
  if (!ok) return refuse(c, std::string("operands of element type ") + ir::dtype_name(t) + " (float32, int64, int32, int8, uint8; bool for Equal)");
  return require_rank6(c);
}

Status bind_compare(BindContext& c, Step& s) {
  WS_RETURN_IF_ERROR(bind_constant_inputs(c, s));
  WS_ASSIGN_OR_RETURN(auto d, broadcast_dims(in_t(c, 0).shape, in_t(c, 1).shape, out_shape(c)));
  const ElemType et = stored_type(c, in_t(c, 0).dtype);
  const CompareOp op = compare_op_of(c.node.op_type);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::compare_broadcast(et, op, io.in[0], io.in[1], static_cast<uint8_t*>(io.out[0]), d, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// And / Or / Xor / Not

Status supports_logic(const BindContext& c) {
  for (size_t i = 0; i < c.node.inputs.size(); ++i) WS_RETURN_IF_ERROR(require_bool(c, i));
  return require_rank6(c);
}

Status bind_logic(BindContext& c, Step& s) {
  WS_RETURN_IF_ERROR(bind_constant_inputs(c, s));
  WS_ASSIGN_OR_RETURN(auto d, broadcast_dims(in_t(c, 0).shape, in_t(c, 1).shape, out_shape(c)));
  const LogicOp op = c.node.op_type == "And" ? LogicOp::kAnd : c.node.op_type == "Or" ? LogicOp::kOr : LogicOp::kXor;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::logic_broadcast(op, static_cast<const uint8_t*>(io.in[0]), static_cast<const uint8_t*>(io.in[1]),
                                    static_cast<uint8_t*>(io.out[0]), d, st);
  };
  return Status::ok();
}

Status bind_not(BindContext& c, Step& s) {
  WS_RETURN_IF_ERROR(bind_constant_inputs(c, s));
  const int64_t count = in_t(c, 0).elements();
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::logical_not(static_cast<const uint8_t*>(io.in[0]), static_cast<uint8_t*>(io.out[0]), count, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// IsInf / IsNaN (float -> bool)

Status supports_float_class(const BindContext& c) { return require_runtime_float(c, 0); }

Status bind_float_class(BindContext& c, Step& s) {
  WS_RETURN_IF_ERROR(bind_constant_inputs(c, s));
  const int64_t count = in_t(c, 0).elements();
  const ElemType et = stored_type(c, in_t(c, 0).dtype);
  const bool nan = c.node.op_type == "IsNaN";
  const bool pos = attr_i(c.node, "detect_positive", 1) != 0, neg = attr_i(c.node, "detect_negative", 1) != 0;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::float_class(et, nan ? kernels::FloatClass::kIsNaN : kernels::FloatClass::kIsInf, pos, neg, io.in[0],
                                static_cast<uint8_t*>(io.out[0]), count, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Where

Status supports_where(const BindContext& c) {
  WS_RETURN_IF_ERROR(require_bool(c, 0));
  const size_t bytes = ir::dtype_size(stored_type(c, in_t(c, 1).dtype));
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
    return refuse(c, std::string("X of element type ") + ir::dtype_name(in_t(c, 1).dtype));
  return require_rank6(c);
}

Status bind_where(BindContext& c, Step& s) {
  WS_RETURN_IF_ERROR(bind_constant_inputs(c, s));
  const ir::Shape& y = out_shape(c);
  if (y.size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "output rank above 8");
  kernels::WhereDims d;
  d.rank = static_cast<int>(y.size());
  for (int k = 0; k < d.rank; ++k) d.y_dims[k] = y[static_cast<size_t>(k)];
  broadcast_strides(in_t(c, 0).shape, d.rank, d.c_strides);
  broadcast_strides(in_t(c, 1).shape, d.rank, d.a_strides);
  broadcast_strides(in_t(c, 2).shape, d.rank, d.b_strides);
  const int eb = static_cast<int>(ir::dtype_size(stored_type(c, in_t(c, 1).dtype)));
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::where_broadcast(eb, static_cast<const uint8_t*>(io.in[0]), io.in[1], io.in[2], io.out[0], d, st);
  };
  return Status::ok();
}

// ---- consistency-test forms: every bool tensor is internal (the executor's ports are float32), so each form
// ends in a Where or a Cast back to float ----
using A = OpSampleAttr;
constexpr int64_t kToFloat = static_cast<int64_t>(ir::DType::kFloat32);
constexpr int64_t kToInt64 = static_cast<int64_t>(ir::DType::kInt64);

std::vector<OpSample> compare_samples(const std::string& op) {
  std::vector<OpSample> r = {
      {op + "_runtime_where", {runtime("a", {2, 3, 4}), runtime("b", {2, 3, 4})},
       {sample_node(op, {"a", "b"}, {"m"}), sample_node("Where", {"m", "a", "b"}, {"y"})}},
      {op + "_const_broadcast_cast", {runtime("a", {2, 3, 4}), constant("b", {4})},
       {sample_node(op, {"a", "b"}, {"m"}), sample_node("Cast", {"m"}, {"y"}, {A::integer("to", kToFloat)})}},
      // int64 operands: a·4 truncated to int64 (values -4..3) against an int64 constant row.
      {op + "_int64_broadcast", {runtime("a", {3, 5}), constant_values("four", {}, {4.0f}), constant_i64("k", {5}, {-2, -1, 0, 1, 2})},
       {sample_node("Mul", {"a", "four"}, {"a4"}), sample_node("Cast", {"a4"}, {"i"}, {A::integer("to", kToInt64)}),
        sample_node(op, {"i", "k"}, {"m"}), sample_node("Where", {"m", "a", "a4"}, {"y"})}},
  };
  if (op == "Equal")  // float equality that holds for some elements: Round(2a) against {-1, 0, 1}
    r.push_back({"Equal_rounded_float", {runtime("a", {4, 3}), constant_values("two", {}, {2.0f}), constant_values("v", {3}, {-1.0f, 0.0f, 1.0f})},
                 {sample_node("Mul", {"a", "two"}, {"a2"}), sample_node("Round", {"a2"}, {"r"}), sample_node("Equal", {"r", "v"}, {"m"}),
                  sample_node("Cast", {"m"}, {"y"}, {A::integer("to", kToFloat)})}});
  return r;
}

std::vector<OpSample> logic_samples(const std::string& op) {
  // p = a > 0 ([2, 3, 4]), q = b < 0.25 ([3, 1], broadcast), then op, then Where.
  std::vector<OpSampleTensor> t = {runtime("a", {2, 3, 4}), runtime("b", {3, 1}), constant_values("z", {}, {0.0f}),
                                   constant_values("q4", {}, {0.25f})};
  if (op == "Not")
    return {{"Not_where", {runtime("a", {2, 3, 4}), runtime("b", {2, 3, 4})},
             {sample_node("Greater", {"a", "b"}, {"p"}), sample_node("Not", {"p"}, {"n"}), sample_node("Where", {"n", "a", "b"}, {"y"})}}};
  return {{op + "_broadcast_where", t,
           {sample_node("Greater", {"a", "z"}, {"p"}), sample_node("Less", {"b", "q4"}, {"q"}), sample_node(op, {"p", "q"}, {"m"}),
            sample_node("Where", {"m", "a", "b"}, {"y"})}},
          {op + "_bool_constant_cast", {runtime("a", {3, 4}), constant_values("z", {}, {0.0f}), constant_bool("c", {4}, {1, 0, 1, 0})},
           {sample_node("Greater", {"a", "z"}, {"p"}), sample_node(op, {"p", "c"}, {"m"}), sample_node("Cast", {"m"}, {"y"}, {A::integer("to", kToFloat)})}}};
}

// IsInf / IsNaN: x / (a - a·m) with m in {0, 1} per element makes ±inf and NaN (0/0) at known places; the
// bool result picks between a and b through Where.
std::vector<OpSample> float_class_samples(const std::string& op) {
  // t = a·[1, 0, 1, 0]: zero at odd columns; u = a / t: ±inf where t = 0 and a != 0; v = t / t: NaN there.
  std::vector<OpSampleTensor> in = {runtime("a", {3, 4}), runtime("b", {3, 4}), constant_values("m", {4}, {1, 0, 1, 0})};
  std::vector<OpSampleNode> pre = {sample_node("Mul", {"a", "m"}, {"t"}), sample_node("Div", {"a", "t"}, {"u"}),
                                   sample_node("Div", {"t", "t"}, {"v"})};
  auto form = [&](std::string label, std::string x, std::vector<OpSampleAttr> attrs) {
    std::vector<OpSampleNode> n = pre;
    n.push_back(sample_node(op, {x}, {"k"}, attrs));
    n.push_back(sample_node("Where", {"k", "a", "b"}, {"y"}));
    return OpSample{op + "_" + label, in, n};
  };
  if (op == "IsNaN") return {form("of_zero_by_zero", "v", {}), form("of_inf_is_false", "u", {})};
  return {form("both_signs", "u", {}), form("positive_only", "u", {A::integer("detect_negative", 0)}),
          form("negative_only", "u", {A::integer("detect_positive", 0)}), form("nan_is_false", "v", {})};
}

std::vector<OpSample> where_samples(const std::string&) {
  return {{"Where_bool_constant_cond", {constant_bool("c", {2, 1, 4}, {1, 0, 0, 1, 0, 1, 1, 0}), runtime("a", {2, 3, 4}), runtime("b", {4})},
           {sample_node("Where", {"c", "a", "b"}, {"y"})}},
          {"Where_runtime_cond_const_y", {runtime("a", {1, 3, 5, 2}), constant("b", {5, 1}), constant_values("z", {}, {0.0f})},
           {sample_node("Greater", {"a", "z"}, {"m"}), sample_node("Where", {"m", "a", "b"}, {"y"})}},
          {"Where_int64_values", {runtime("a", {3, 4}), constant_values("z", {}, {0.0f}), constant_i64("i", {4}, {5, -3, 7, 0}), constant_i64("j", {3, 1}, {1, 2, -8})},
           {sample_node("Greater", {"a", "z"}, {"m"}), sample_node("Where", {"m", "i", "j"}, {"w"}),
            sample_node("Cast", {"w"}, {"y"}, {A::integer("to", kToFloat)})}}};
}

}  // namespace

std::vector<CudaOpDef> logic_ops() {
  return {
      {"And", 0, supports_logic, bind_logic, logic_samples},
      {"Equal", 0, supports_compare, bind_compare, compare_samples},
      {"Greater", 0, supports_compare, bind_compare, compare_samples},
      {"GreaterOrEqual", 0, supports_compare, bind_compare, compare_samples},
      {"Less", 0, supports_compare, bind_compare, compare_samples},
      {"LessOrEqual", 0, supports_compare, bind_compare, compare_samples},
      {"IsInf", 0, supports_float_class, bind_float_class, float_class_samples},
      {"IsNaN", 0, supports_float_class, bind_float_class, float_class_samples},
      {"Not", 0, supports_logic, bind_not, logic_samples},
      {"Or", 0, supports_logic, bind_logic, logic_samples},
      {"Where", 0, supports_where, bind_where, where_samples},
      {"Xor", 0, supports_logic, bind_logic, logic_samples},
  };
}

}  // namespace ws::cudaexec
