// CUDA op-table entry: Softmax (opset < 13: flattened from `axis`; opset >= 13: along `axis`).
#include "engine/cuda/op_util.h"
#include "kernels/pool/pool.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;


Status bind_softmax(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  const bool legacy = c.graph.opset < 13;
  int64_t axis = attr_i(c.node, "axis", legacy ? 1 : -1);
  if (axis < 0) axis += rank;
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x[static_cast<size_t>(i)];
    if (i < axis) outer *= d;
    else if (i == axis || legacy) len *= d;
    else inner *= d;
  }
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::softmax(et, io.in[0], io.out[0], outer, len, inner, st);
  };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

std::vector<OpSample> softmax_samples(const std::string& op) {
  return {single("Softmax_last", op, {2, 1000}), single("Softmax_axis1", op, {1, 4, 3, 3}, {A::integer("axis", 1)}),
          single("Softmax_axis_minus2", op, {2, 5, 3}, {A::integer("axis", -2)}),
          single("Softmax_opset11_flattened_axis1", op, {2, 3, 4}, {A::integer("axis", 1)}, 11)};
}

}  // namespace

std::vector<CudaOpDef> softmax_ops() {
  return {
      {"Softmax", 1, ok_float0, bind_softmax, softmax_samples},
  };
}

}  // namespace ws::cudaexec
