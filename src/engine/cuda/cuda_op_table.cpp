// The CUDA executor's op table (see cuda_ops.h): the entries of every family file under ops/, in one
// sorted list, and the lookups the engine uses. The table is the only place an op type is named.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/cuda/cuda_ops.h"
#include "engine/cuda/fp8_quant.h"

namespace ws::cudaexec {
namespace {

const std::vector<CudaOpDef>& defs() {
  static const std::vector<CudaOpDef> d = [] {
    std::vector<CudaOpDef> all;
    for (auto family : {conv_ops, elementwise_ops, gemm_ops, indexing_ops, logic_ops, math_ops, pool_ops, reduce_ops, shape_ops,
                        softmax_ops}) {
      std::vector<CudaOpDef> f = family();
      all.insert(all.end(), f.begin(), f.end());
    }
    std::sort(all.begin(), all.end(), [](const CudaOpDef& a, const CudaOpDef& b) { return std::string(a.op_type) < b.op_type; });
    return all;
  }();
  return d;
}

}  // namespace

const std::vector<CudaOpDef>& cuda_op_table() { return defs(); }

Status cudnn_status(cudnnStatus_t s, const char* what, const char* file, int line) {
  return Status(StatusCode::kCuda, std::string(what) + " failed: " + cudnnGetErrorString(s) + " (" + file + ":" + std::to_string(line) + ")");
}
Status cublas_status(cublasStatus_t s, const char* what, const char* file, int line) {
  return Status(StatusCode::kCuda, std::string(what) + " failed: cublas status " + std::to_string(int(s)) + " (" + file + ":" + std::to_string(line) + ")");
}


namespace {
// Precision fp8: FP8 candidates exist only for an input with a usable calibrated range ("|fp8cal"); obey: FP8
// tactics only ("|fp8obey"). Both change which tactics a node may have, so both are part of its timing keys.
std::string fp8_key_suffix(const BindContext& c) {
  std::string k;
  if (c.fp8_input_scale()) k += "|fp8cal";
  if (c.options.fp8_obey_precision) k += "|fp8obey";
  return k;
}
}  // namespace

std::optional<float> BindContext::fp8_input_scale() const {
  if (node.inputs.empty() || node.inputs[0] == ir::kNoTensor) return std::nullopt;
  const auto a = options.fp8_activation_amax.find(graph.tensor(node.inputs[0]).name);
  float scale = 0;
  if (a == options.fp8_activation_amax.end() || !fp8_activation_scale(a->second, scale)) return std::nullopt;
  return scale;
}

std::string BindContext::cache_key() const {
  std::string k = std::string(precision_name(precision)) + "|" + node.name + "|" + node.op_type + "|";
  for (ir::TensorId id : node.inputs) k += id == ir::kNoTensor ? "-" : ir::shape_string(graph.tensor(id).shape);
  k += "|act=" + std::string(kernels::activation_name(fused_act));
  if (nhwc) k += "|nhwc";
  if (precision == Precision::kFloat8) k += fp8_key_suffix(*this);  // another candidate set
  return k;
}

std::string BindContext::problem_key() const {
  std::string k = std::string(precision_name(precision)) + "|" + node.op_type + "|";
  for (ir::TensorId id : node.inputs) {
    if (id == ir::kNoTensor) { k += "-;"; continue; }
    const ir::Tensor& t = graph.tensor(id);
    k += ir::shape_string(t.shape) + (t.is_constant() ? "c" : "r") + std::to_string(static_cast<int>(t.dtype)) + ";";
  }
  k += "|act=" + std::string(kernels::activation_name(fused_act));
  k += "," + std::to_string(fused_params.alpha) + "," + std::to_string(fused_params.beta) + "," +
       std::to_string(fused_params.min) + "," + std::to_string(fused_params.max) + (nhwc ? "|nhwc|" : "|");
  for (const auto& [name, a] : node.attributes) {  // std::map: sorted by name
    k += name + "=" + std::to_string(static_cast<int>(a.kind)) + ":";
    switch (a.kind) {
      case ir::Attribute::Kind::kInt: k += std::to_string(a.i); break;
      case ir::Attribute::Kind::kFloat: k += std::to_string(a.f); break;
      case ir::Attribute::Kind::kString: k += std::to_string(a.s.size()) + ":" + a.s; break;
      case ir::Attribute::Kind::kInts: for (int64_t v : a.ints) k += std::to_string(v) + ","; break;
      case ir::Attribute::Kind::kFloats: for (float v : a.floats) k += std::to_string(v) + ","; break;
      case ir::Attribute::Kind::kStrings: for (const auto& v : a.strings) k += std::to_string(v.size()) + ":" + v + ","; break;
      default: k += "node:" + node.name; break;  // a tensor or unknown attribute: this node's problem only
    }
    k += ";";
  }
  if (precision == Precision::kFloat8) k += fp8_key_suffix(*this);
  return k;
}

const CudaOpDef* find_cuda_op(const std::string& op_type) {
  for (const auto& d : defs())
    if (op_type == d.op_type) return &d;
  return nullptr;
}

std::vector<std::string> cuda_supported_ops() {
  std::vector<std::string> v;
  for (const auto& d : defs()) v.emplace_back(d.op_type);
  return v;
}

}  // namespace ws::cudaexec
