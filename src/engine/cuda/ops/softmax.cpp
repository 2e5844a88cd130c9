// CUDA op-table entry: Softmax (opset < 13: flattened from `axis`; opset >= 13: along `axis`).
#include "engine/cuda/op_util.h"
#include "engine/cuda/ops/views.h"
#include "kernels/pool/pool.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;


Status bind_softmax(BindContext& c, Step& s) {
  const AxisView v = softmax_view(c);
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::softmax(et, io.in[0], io.out[0], v.outer, v.len, v.inner, st);
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
