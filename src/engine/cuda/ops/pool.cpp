// CUDA op-table entries: 2-D pooling (MaxPool, AveragePool; NCHW; 1-D NCL through lift_1d.h; 3-D NCDHW through the
// direct N-d kernel of kernels/conv/conv_nd.h) and GlobalAveragePool;
// src/kernels/pool.
#include <string>
#include <vector>

#include "engine/cuda/op_util.h"
#include "engine/cuda/ops/lift_1d.h"
#include "kernels/conv/conv_nd.h"
#include "kernels/pool/pool.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;

// ------------------------------------------------------------------------------------------------
// Pools, Softmax

Status supports_pool(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoTensor && in_t(c, 0).shape.size() != 4)
    return refuse(c, "the Indices output of MaxPool is produced for 2-D pooling (NCHW) only");
  if (in_t(c, 0).shape.size() == 5) return Status::ok();  // 3-D: the direct N-d kernel (kernels/conv/conv_nd.h)
  if (in_t(c, 0).shape.size() == 3) {  // 1-D: the 2-D form over [N, C, 1, L] (lift_1d.h)
    auto l = lift_1d(c, false);
    return supports_pool(*l->context);
  }
  if (in_t(c, 0).shape.size() != 4) return refuse(c, "only 1-D, 2-D and 3-D pooling (NCL / NCHW / NCDHW input) are implemented");
  return Status::ok();
}

// 3-D pooling through the direct N-d kernel: one thread per output, the reference's window rules.
Status bind_pool_nd(BindContext& c, Step& s, bool max) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const WindowNd w = window_nd(c.node, x, y, attr_is(c.node, "kernel_shape", {}));
  kernels::PoolNdGeometry g;
  g.planes = x[0] * x[1];
  for (int a = 0; a < 3; ++a) {
    g.in[a] = w.in[a]; g.out[a] = w.out[a]; g.kernel[a] = w.k[a]; g.stride[a] = w.s[a]; g.dilation[a] = w.d[a];
    g.pad_begin[a] = w.pb[a]; g.pad_end[a] = w.pe[a];
  }
  g.count_include_pad = attr_i(c.node, "count_include_pad", 0) != 0;
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::pool_nd(et, max, g, io.in[0], io.out[0], st); };
  return Status::ok();
}

template <bool kMax>
Status bind_pool(BindContext& c, Step& s) {
  if (in_t(c, 0).shape.size() == 5) return bind_pool_nd(c, s, kMax);
  if (in_t(c, 0).shape.size() == 3) {
    auto l = lift_1d(c, false);
    return bind_pool<kMax>(*l->context, s);
  }
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const Window2d w = window_of(c.node, x, y, attr_is(c.node, "kernel_shape", {}));
  kernels::Pool2dParams p;
  p.planes = x[0] * x[1]; p.in_h = x[2]; p.in_w = x[3]; p.out_h = y[2]; p.out_w = y[3];
  p.k_h = w.k[0]; p.k_w = w.k[1]; p.s_h = w.s[0]; p.s_w = w.s[1]; p.d_h = w.d[0]; p.d_w = w.d[1];
  p.pad_top = w.pb[0]; p.pad_left = w.pb[1]; p.pad_bottom = w.pe[0]; p.pad_right = w.pe[1];
  p.count_include_pad = attr_i(c.node, "count_include_pad", 0) != 0;
  const ElemType et = c.elem;
  if (kMax && c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoTensor) {
    const int order = static_cast<int>(attr_i(c.node, "storage_order", 0));
    s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return kernels::max_pool_2d_indices(et, io.in[0], io.out[0], static_cast<int64_t*>(io.out[1]), order, p, st);
    };
    return Status::ok();
  }
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kMax ? kernels::max_pool_2d(et, io.in[0], io.out[0], p, st) : kernels::average_pool_2d(et, io.in[0], io.out[0], p, st);
  };
  return Status::ok();
}

Status bind_global_average_pool(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  const int64_t planes = x[0] * x[1];
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::global_average_pool(et, io.in[0], io.out[0], planes, spatial, st);
  };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

OpSample indices_sample(std::string label, std::vector<OpSampleAttr> extra) {
  const int64_t H = 6, W = 7;
  std::vector<float> ramp(static_cast<size_t>(H * W));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w) ramp[static_cast<size_t>(h * W + w)] = 2.5f * static_cast<float>(w * H + h);
  std::vector<OpSampleAttr> attrs = {OpSampleAttr::integers("kernel_shape", {3, 3}), OpSampleAttr::integers("strides", {2, 2}),
                                     OpSampleAttr::integers("pads", {1, 1, 1, 1})};
  for (auto& a : extra) attrs.push_back(std::move(a));
  return {std::move(label), {runtime("x", {2, 3, H, W}), constant_values("r", {H, W}, ramp)},
          {sample_node("Add", {"x", "r"}, {"xr"}), sample_node("MaxPool", {"xr"}, {"p", "i"}, attrs),
           sample_node("Cast", {"i"}, {"fi"}, {OpSampleAttr::integer("to", static_cast<int64_t>(ir::DType::kFloat32))}),
           sample_node("Add", {"p", "fi"}, {"y"})}};
}

std::vector<OpSample> pool_samples(const std::string& op) {
  const std::vector<int64_t> x = {1, 5, 13, 11};
  if (op == "MaxPool")
    return {single("MaxPool_k3s2p1", op, x, {A::integers("kernel_shape", {3, 3}), A::integers("strides", {2, 2}), A::integers("pads", {1, 1, 1, 1})}),
            single("MaxPool_ceil", op, x, {A::integers("kernel_shape", {2, 2}), A::integers("strides", {2, 2}), A::integer("ceil_mode", 1)}),
            single("MaxPool_dilation2", op, x, {A::integers("kernel_shape", {2, 2}), A::integers("dilations", {2, 2})}),
            single("MaxPool_same_upper", op, x, {A::integers("kernel_shape", {3, 3}), A::integers("strides", {2, 2}), A::text("auto_pad", "SAME_UPPER")}),
            single("MaxPool1d_k3s2p1", op, {2, 3, 19}, {A::integers("kernel_shape", {3}), A::integers("strides", {2}), A::integers("pads", {1, 1})}),
            single("MaxPool3d_k3s2p1", op, {1, 3, 7, 8, 9}, {A::integers("kernel_shape", {3, 3, 3}), A::integers("strides", {2, 2, 2}), A::integers("pads", {1, 1, 1, 1, 1, 1})}),
            single("MaxPool3d_ceil_dil", op, {2, 2, 6, 7, 5}, {A::integers("kernel_shape", {2, 2, 2}), A::integers("strides", {2, 2, 2}), A::integers("dilations", {1, 2, 1}), A::integer("ceil_mode", 1)}),
            // Indices: x + a ramp 2.5·(w·H + h) makes every window's maximum unique (fp16 rounding cannot move it);
            // the result Y + float(Indices) checks both outputs.
            indices_sample("MaxPool_indices_k3s2p1", {}), indices_sample("MaxPool_indices_storage_order1_ceil", {A::integer("storage_order", 1), A::integer("ceil_mode", 1)})};
  return {single("AveragePool_excl", op, x, {A::integers("kernel_shape", {3, 3}), A::integers("pads", {1, 1, 1, 1})}),
          single("AveragePool_incl_s2", op, x,
                 {A::integers("kernel_shape", {3, 2}), A::integers("strides", {2, 2}), A::integers("pads", {1, 0, 1, 1}), A::integer("count_include_pad", 1)}),
          single("AveragePool_same_lower", op, x, {A::integers("kernel_shape", {2, 2}), A::text("auto_pad", "SAME_LOWER")}),
          single("AveragePool1d_k4s3_pad", op, {1, 5, 23}, {A::integers("kernel_shape", {4}), A::integers("strides", {3}), A::integers("pads", {1, 2})}),
          single("AveragePool3d_excl_pad", op, {1, 3, 6, 7, 8}, {A::integers("kernel_shape", {3, 2, 3}), A::integers("strides", {2, 1, 2}), A::integers("pads", {1, 0, 1, 1, 1, 0})}),
          single("AveragePool3d_incl_ceil", op, {1, 2, 5, 5, 6},
                 {A::integers("kernel_shape", {2, 3, 3}), A::integers("strides", {2, 2, 2}), A::integers("pads", {1, 1, 0, 0, 1, 1}), A::integer("count_include_pad", 1), A::integer("ceil_mode", 1)})};
}

std::vector<OpSample> global_pool_samples(const std::string& op) {
  return {single("GlobalAveragePool", op, {1, 37, 7, 7}), single("GlobalAveragePool_batch2", op, {2, 5, 3, 4})};
}

}  // namespace

std::vector<CudaOpDef> pool_ops() {
  return {
      {"AveragePool", 1, supports_pool, bind_pool<false>, pool_samples},
      {"GlobalAveragePool", 1, ok_float0, bind_global_average_pool, global_pool_samples},
      {"MaxPool", 1, supports_pool, bind_pool<true>, pool_samples},
  };
}

}  // namespace ws::cudaexec
