// CUDA op-table entries: 2-D pooling (MaxPool, AveragePool; NCHW; 1-D NCL through lift_1d.h; 3-D NCDHW through the
// direct N-d kernel of kernels/conv/conv_nd.h) and GlobalAveragePool; src/kernels/pool. In a channels-last segment
// (BindContext::nhwc, build_stages.h assign_layouts) the 2-D pools and GlobalAveragePool run through cuDNN's
// cudnnPoolingForward with NHWC descriptors (GlobalAveragePool: one H x W average window).
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cuDNN legacy API (as cudnn_conv_plan.h)
#include <memory>
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

// cuDNN pooling over channels-last [N, H, W, C] input (descriptors built once; run() only enqueues).
struct NhwcPoolPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  ~NhwcPoolPlan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (pool) cudnnDestroyPoolingDescriptor(pool);
  }
  Status run(cudnnHandle_t h, const void* in, void* out, cudaStream_t st) const {
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetStream(h, st));
    const float one = 1.0f, zero = 0.0f;
    WS_CUDNN_RETURN_IF_ERROR(cudnnPoolingForward(h, pool, &one, x, in, &zero, y, out));
    return Status::ok();
  }
};

// x, y: [N, C, H, W] logical shapes stored NHWC; window k, stride s, symmetric pads p (assign_layouts admits no other).
Status bind_nhwc_pool(BindContext& c, Step& s, cudnnPoolingMode_t mode, const int64_t k[2], const int64_t st2[2], const int64_t pad[2],
                      const std::string& what) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  auto plan = std::make_shared<NhwcPoolPlan>();
  const cudnnDataType_t dt = half_storage(c.precision) ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&plan->x));
  WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&plan->y));
  WS_CUDNN_RETURN_IF_ERROR(cudnnCreatePoolingDescriptor(&plan->pool));
  WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NHWC, dt, int(x[0]), int(x[1]), int(x[2]), int(x[3])));
  WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NHWC, dt, int(y[0]), int(y[1]), int(y[2]), int(y[3])));
  WS_CUDNN_RETURN_IF_ERROR(cudnnSetPooling2dDescriptor(plan->pool, mode, CUDNN_PROPAGATE_NAN, int(k[0]), int(k[1]), int(pad[0]), int(pad[1]),
                                                       int(st2[0]), int(st2[1])));
  int on = 0, oc = 0, oh = 0, ow = 0;
  WS_CUDNN_RETURN_IF_ERROR(cudnnGetPooling2dForwardOutputDim(plan->pool, plan->x, &on, &oc, &oh, &ow));
  if (on != y[0] || oc != y[1] || oh != y[2] || ow != y[3])
    return internal_error(c.node.describe(c.graph.opset) + ": cuDNN pooling output shape disagrees with shape inference");
  c.tactics.push_back({c.node.name, c.node.op_type, "cudnn pooling " + what + ", NHWC, " + precision_name(c.precision), 0.0f, false});
  s.run = [plan](const StepIo& io, const ContextLibs& libs, cudaStream_t st) { return plan->run(libs.cudnn, io.in[0], io.out[0], st); };
  return Status::ok();
}

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
  if (c.nhwc) {
    const bool incl = attr_i(c.node, "count_include_pad", 0) != 0;
    const cudnnPoolingMode_t mode = kMax ? CUDNN_POOLING_MAX
                                         : incl ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if (w.pb[0] != w.pe[0] || w.pb[1] != w.pe[1] || w.d[0] != 1 || w.d[1] != 1)
      return internal_error(c.node.describe(c.graph.opset) + ": an NHWC pool needs symmetric pads and no dilation");
    const int64_t k[2] = {w.k[0], w.k[1]}, st2[2] = {w.s[0], w.s[1]}, pad[2] = {w.pb[0], w.pb[1]};
    return bind_nhwc_pool(c, s, mode, k, st2, pad, kMax ? "max" : "average");
  }
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
  if (c.nhwc && x.size() == 4) {  // [N, H, W, C] in, [N, C, 1, 1] out: one H x W window
    const int64_t k[2] = {x[2], x[3]}, st2[2] = {1, 1}, pad[2] = {0, 0};
    return bind_nhwc_pool(c, s, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, k, st2, pad, "global average");
  }
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
