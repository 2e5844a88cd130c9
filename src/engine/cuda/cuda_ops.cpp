// The CUDA executor's op table (see cuda_ops.h): one entry per op, each with supports() and bind().
// Convolutions: cuDNN legacy API (cudnnConvolutionForward / cudnnConvolutionBiasActivationForward),
// NCHW only, algorithm + fused/unfused epilogue timed at build, against our own fused kernels
// (src/kernels/conv: depthwise, pointwise GEMM, direct), per CudaBuildOptions::tactic_sources; GEMM / MatMul: cuBLASLt with the
// context's workspace set explicitly; the rest: our kernels in src/kernels/{elementwise,pool}.
// The legacy cuDNN API is deprecated in cuDNN 9 (the graph API via cudnn-frontend is the follow-up);
// its warnings are silenced in this file only.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include "engine/cuda/cuda_ops.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <cstring>

#include "kernels/conv/conv.h"
#include "kernels/pool/pool.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;

constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

Status refuse(const BindContext& c, const std::string& why) {
  return unsupported(c.node.describe(c.graph.opset) + ": not supported by the CUDA executor: " + why);
}
const ir::Tensor& in_t(const BindContext& c, size_t i) { return c.graph.tensor(c.node.inputs[i]); }
const ir::Shape& out_shape(const BindContext& c, size_t i = 0) { return c.analyzed.output_shapes[i]; }
bool has_in(const BindContext& c, size_t i) { return i < c.node.inputs.size() && c.node.inputs[i] != ir::kNoTensor; }

Status require_runtime_float(const BindContext& c, size_t i) {
  const ir::Tensor& t = in_t(c, i);
  if (t.dtype != ir::DType::kFloat32) return refuse(c, "input " + std::to_string(i) + " has element type " + ir::dtype_name(t.dtype) + " (float32 only)");
  return Status::ok();
}
Status ok_float0(const BindContext& c) { return require_runtime_float(c, 0); }

int64_t attr_i(const ir::Node& n, const char* k, int64_t d) { const auto* a = n.find(k); return a ? a->i : d; }
float attr_f(const ir::Node& n, const char* k, float d) { const auto* a = n.find(k); return a ? a->f : d; }
std::vector<int64_t> attr_is(const ir::Node& n, const char* k, std::vector<int64_t> d) { const auto* a = n.find(k); return a ? a->ints : d; }
std::string attr_s(const ir::Node& n, const char* k, std::string d) { const auto* a = n.find(k); return a ? a->s : d; }

// Spatial window of a 2-D Conv / pool (the node passed analyze_node, so values are valid).
struct Window2d { int64_t k[2], s[2], d[2], pb[2], pe[2]; };
Window2d window_of(const ir::Node& n, const ir::Shape& x, const ir::Shape& y, const std::vector<int64_t>& kernel) {
  Window2d w{};
  auto strides = attr_is(n, "strides", {1, 1}), dil = attr_is(n, "dilations", {1, 1}), pads = attr_is(n, "pads", {0, 0, 0, 0});
  const std::string ap = attr_s(n, "auto_pad", "NOTSET");
  for (int i = 0; i < 2; ++i) {
    w.k[i] = kernel[i]; w.s[i] = strides[i]; w.d[i] = dil[i];
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      const int64_t eff = (w.k[i] - 1) * w.d[i] + 1;
      const int64_t total = std::max<int64_t>(0, (y[i + 2] - 1) * w.s[i] + eff - x[i + 2]);
      w.pb[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[i] = total - w.pb[i];
    } else if (ap == "VALID") {
      w.pb[i] = w.pe[i] = 0;
    } else {
      w.pb[i] = pads[i]; w.pe[i] = pads[i + 2];
    }
  }
  return w;
}

// ------------------------------------------------------------------------------------------------
// Unary ops (and the activation folded into a Conv)

bool clip_bounds(const ir::Graph& g, const ir::Node& n, ActivationParams& p) {
  if (g.opset < 11) {
    p.min = attr_f(n, "min", p.min);
    p.max = attr_f(n, "max", p.max);
    return true;
  }
  for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) {
    if (n.inputs[i] == ir::kNoTensor) continue;
    const ir::Tensor& t = g.tensor(n.inputs[i]);
    if (!t.is_constant() || t.dtype != ir::DType::kFloat32 || t.elements() != 1) return false;
    (i == 1 ? p.min : p.max) = *t.data_as<float>();
  }
  return true;
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

Result<kernels::BroadcastDims> broadcast_of(const ir::Shape& a, const ir::Shape& b, const ir::Shape& y) {
  kernels::BroadcastDims d;
  if (y.size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return unsupported("rank > 6");
  d.rank = static_cast<int>(y.size());
  auto strides = [&](const ir::Shape& s, int64_t* out) {
    int64_t st = 1;
    for (int k = d.rank - 1, j = static_cast<int>(s.size()) - 1; k >= 0; --k, --j) {
      if (j < 0 || s[static_cast<size_t>(j)] == 1) { out[k] = 0; } else { out[k] = st; }
      if (j >= 0) st *= s[static_cast<size_t>(j)];
    }
  };
  for (int k = 0; k < d.rank; ++k) d.y_dims[k] = y[static_cast<size_t>(k)];
  strides(a, d.a_strides);
  strides(b, d.b_strides);
  return d;
}

Status supports_binary(const BindContext& c) {
  WS_RETURN_IF_ERROR(require_runtime_float(c, 0));
  WS_RETURN_IF_ERROR(require_runtime_float(c, 1));
  if (out_shape(c).size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "output rank above 6");
  return Status::ok();
}
template <kernels::BinaryOp kOp>
Status bind_binary(BindContext& c, Step& s) {
  WS_ASSIGN_OR_RETURN(auto d, broadcast_of(in_t(c, 0).shape, in_t(c, 1).shape, out_shape(c)));
  const ElemType et = c.elem;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::binary_broadcast(et, kOp, io.in[0], io.in[1], io.out[0], d, st);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Copies (Reshape-like ops), Transpose, Concat

Status supports_copy(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  for (size_t i = 1; i < c.node.outputs.size(); ++i)
    if (c.node.outputs[i] != ir::kNoTensor) return refuse(c, "optional output " + std::to_string(i) + " (e.g. a Dropout mask) is not produced");
  return Status::ok();
}
Status bind_copy(BindContext& c, Step& s) {
  const size_t bytes = static_cast<size_t>(in_t(c, 0).elements()) * c.elem_bytes;
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    if (bytes && io.in[0] != io.out[0]) WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.out[0], io.in[0], bytes, cudaMemcpyDeviceToDevice, st));
    return Status::ok();
  };
  return Status::ok();
}

Status supports_transpose(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (in_t(c, 0).shape.size() > static_cast<size_t>(kernels::kMaxBroadcastRank)) return refuse(c, "rank above 6");
  return Status::ok();
}
Status bind_transpose(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> def(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) def[static_cast<size_t>(i)] = rank - 1 - i;
  const auto perm = attr_is(c.node, "perm", def);
  std::vector<int64_t> xs(static_cast<size_t>(rank), 1);
  for (int64_t i = rank - 2; i >= 0; --i) xs[static_cast<size_t>(i)] = xs[static_cast<size_t>(i + 1)] * x[static_cast<size_t>(i + 1)];
  kernels::TransposeDims d;
  d.rank = static_cast<int>(rank);
  for (int64_t k = 0; k < rank; ++k) {
    d.y_dims[k] = x[static_cast<size_t>(perm[static_cast<size_t>(k)])];
    d.x_strides[k] = xs[static_cast<size_t>(perm[static_cast<size_t>(k)])];
  }
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::transpose(eb, io.in[0], io.out[0], d, st); };
  return Status::ok();
}

Status supports_concat(const BindContext& c) {
  for (size_t i = 0; i < c.node.inputs.size(); ++i) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  return Status::ok();
}
Status bind_concat(BindContext& c, Step& s) {
  const ir::Shape& y = out_shape(c);
  const int64_t rank = static_cast<int64_t>(y.size());
  int64_t axis = attr_i(c.node, "axis", 0);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= y[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= y[static_cast<size_t>(i)];
  const size_t es = c.elem_bytes;
  const size_t dpitch = static_cast<size_t>(y[static_cast<size_t>(axis)] * inner) * es;
  std::vector<std::pair<size_t, size_t>> parts;  // (dst byte offset, row bytes)
  size_t off = 0;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const size_t row = static_cast<size_t>(in_t(c, i).shape[static_cast<size_t>(axis)] * inner) * es;
    parts.emplace_back(off, row);
    off += row;
  }
  s.kernels = static_cast<int>(parts.size());
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!parts[i].second || outer == 0) continue;
      WS_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(static_cast<char*>(io.out[0]) + parts[i].first, dpitch, io.in[i], parts[i].second,
                                                parts[i].second, static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, st));
    }
    return Status::ok();
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Pools, Softmax

Status supports_pool(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (in_t(c, 0).shape.size() != 4) return refuse(c, "only 2-D pooling (NCHW input) is implemented");
  if (c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoTensor) return refuse(c, "the Indices output of MaxPool is not produced");
  return Status::ok();
}
template <bool kMax>
Status bind_pool(BindContext& c, Step& s) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& y = out_shape(c);
  const Window2d w = window_of(c.node, x, y, attr_is(c.node, "kernel_shape", {}));
  kernels::Pool2dParams p;
  p.planes = x[0] * x[1]; p.in_h = x[2]; p.in_w = x[3]; p.out_h = y[2]; p.out_w = y[3];
  p.k_h = w.k[0]; p.k_w = w.k[1]; p.s_h = w.s[0]; p.s_w = w.s[1]; p.d_h = w.d[0]; p.d_w = w.d[1];
  p.pad_top = w.pb[0]; p.pad_left = w.pb[1]; p.pad_bottom = w.pe[0]; p.pad_right = w.pe[1];
  p.count_include_pad = attr_i(c.node, "count_include_pad", 0) != 0;
  const ElemType et = c.elem;
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

// ------------------------------------------------------------------------------------------------
// Conv through cuDNN

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act_desc = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  bool fused = false;     // cudnnConvolutionBiasActivationForward (bias + ReLU/identity in cuDNN)
  bool padded = false;    // asymmetric pads: zero-pad into the workspace first
  int64_t planes = 0, in_h = 0, in_w = 0, top = 0, left = 0, ph = 0, pw = 0;
  size_t pad_bytes = 0, cudnn_ws = 0;
  const void* weight = nullptr;
  const float* bias32 = nullptr;   // epilogue bias (nullptr: none)
  const void* bias_act = nullptr;  // fused bias, activation type
  ElemType et = ElemType::kFloat32;
  Activation act = Activation::kNone;
  ActivationParams act_params;
  int64_t count = 0, channels = 0, inner = 0;
  ~ConvPlan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (act_desc) cudnnDestroyActivationDescriptor(act_desc);
  }
  bool residual = false;  // a fused residual Add: y = act(conv + bias + r), r = the step's input 3
  bool epilogue() const { return !fused && (bias32 || act != Activation::kNone || residual); }
  Status run(cudnnHandle_t h, const void* xin, void* yout, void* ws, cudaStream_t st, const void* r = nullptr) const {
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetStream(h, st));
    const void* xs = xin;
    char* cws = static_cast<char*>(ws);
    if (padded) {
      WS_RETURN_IF_ERROR(kernels::pad_2d_zero(et, xin, ws, planes, in_h, in_w, top, left, ph, pw, st));
      xs = ws;
      cws += pad_bytes;
    }
    const float one = 1.0f, zero = 0.0f;
    if (fused) {
      // y = act(conv(x) + alpha2 * z + bias): z is the residual (alpha2 = 1) or unused (alpha2 = 0, z = y).
      WS_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBiasActivationForward(h, &one, x, xs, w, weight, conv, algo, cws, cudnn_ws,
                                                                     residual ? &one : &zero, y, residual ? r : yout, bias,
                                                                     bias_act, act_desc, y, yout));
      return Status::ok();
    }
    WS_CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(h, &one, x, xs, w, weight, conv, algo, cws, cudnn_ws, &zero, y, yout));
    if (epilogue())
      return kernels::bias_residual_activation(et, yout, yout, bias32, residual ? r : nullptr, count, channels, inner, act,
                                               act_params, st);
    return Status::ok();
  }
};

// ---- our own conv kernels (src/kernels/conv) as tactics ----
enum class WsConv { kDepthwise, kDepthwise4, kPointwise64, kPointwise32, kDirect, kPointwise32Split4, kPointwise32Split8,
                    kPointwise32Split16, kPointwise64Split4 };
int ws_conv_splits(WsConv i) {
  switch (i) {
    case WsConv::kPointwise32Split4: case WsConv::kPointwise64Split4: return 4;
    case WsConv::kPointwise32Split8: return 8;
    case WsConv::kPointwise32Split16: return 16;
    default: return 1;
  }
}
const char* ws_conv_key(WsConv i) {  // timing-cache "impl" value
  switch (i) {
    case WsConv::kDepthwise: return "ws_depthwise";
    case WsConv::kDepthwise4: return "ws_depthwise_x4";
    case WsConv::kPointwise64: return "ws_pointwise_64x64";
    case WsConv::kPointwise32: return "ws_pointwise_32x32";
    case WsConv::kDirect: return "ws_direct";
    case WsConv::kPointwise32Split4: return "ws_pointwise_32x32_splitk4";
    case WsConv::kPointwise32Split8: return "ws_pointwise_32x32_splitk8";
    case WsConv::kPointwise32Split16: return "ws_pointwise_32x32_splitk16";
    case WsConv::kPointwise64Split4: return "ws_pointwise_64x64_splitk4";
  }
  return "?";
}
// Direct kernel as a timed candidate (beside cuDNN) up to this reduction length Cin/group·kh·kw; beyond it
// (or for depthwise convs, which have their own kernel) only when nothing else could run the node.
constexpr int64_t kDirectMaxReduction = 576;

kernels::Conv2dGeometry conv_geometry(const BindContext& c, const ir::Shape& x, const ir::Shape& wt, const ir::Shape& y) {
  const Window2d win = window_of(c.node, x, y, {wt[2], wt[3]});
  kernels::Conv2dGeometry g;
  g.n = x[0]; g.c_in = x[1]; g.in_h = x[2]; g.in_w = x[3];
  g.c_out = y[1]; g.out_h = y[2]; g.out_w = y[3];
  g.group = attr_i(c.node, "group", 1);
  g.kernel_h = wt[2]; g.kernel_w = wt[3];
  g.stride_h = win.s[0]; g.stride_w = win.s[1];
  g.dilation_h = win.d[0]; g.dilation_w = win.d[1];
  g.pad_top = win.pb[0]; g.pad_left = win.pb[1]; g.pad_bottom = win.pe[0]; g.pad_right = win.pe[1];
  return g;
}

// Our kernels that may run this conv, in timing order (empty when warpstream is not an enabled source).
std::vector<WsConv> ws_conv_candidates(const BindContext& c, const kernels::Conv2dGeometry& g, bool tensor_cores) {
  std::vector<WsConv> r;
  if (!(c.options.tactic_sources & kTacticWarpStream) || !kernels::validate_conv2d(g).is_ok()) return r;
  const bool dw = kernels::conv2d_depthwise_applicable(g);
  if (dw) {
    r.push_back(WsConv::kDepthwise);
    if (g.out_w >= 4) r.push_back(WsConv::kDepthwise4);
  }
  if (kernels::conv2d_pointwise_applicable(g) && g.n <= 65535 && (c.precision == Precision::kFloat32 || tensor_cores)) {
    r.push_back(WsConv::kPointwise64);
    r.push_back(WsConv::kPointwise32);
    // split-K where the tile grid is small next to the SM count and K is deep enough to split
    const int64_t n_hw = g.out_h * g.out_w, blocks32 = g.n * ((n_hw + 31) / 32) * ((g.c_out + 31) / 32);
    if (g.c_in >= 128 && blocks32 < 264) {
      r.push_back(WsConv::kPointwise32Split4);
      r.push_back(WsConv::kPointwise64Split4);
      if (g.c_in >= 256) r.push_back(WsConv::kPointwise32Split8);
      if (g.c_in >= 512) r.push_back(WsConv::kPointwise32Split16);
    }
  }
  const int64_t reduction = g.c_in / g.group * g.kernel_h * g.kernel_w;
  if (r.empty() || (!dw && reduction <= kDirectMaxReduction)) r.push_back(WsConv::kDirect);
  return r;
}

struct WsConvPlan {
  WsConv impl = WsConv::kDirect;
  kernels::Conv2dGeometry g;
  kernels::ConvEpilogue epi;
  ElemType et = ElemType::kFloat32;
  const void* weight = nullptr;
  size_t workspace_bytes() const { return kernels::conv2d_pointwise_workspace_bytes(g, ws_conv_splits(impl)); }
  Status run(const void* x, void* y, cudaStream_t st, const void* residual = nullptr, void* workspace = nullptr) const {
    kernels::ConvEpilogue e = epi;
    e.residual = residual;
    switch (impl) {
      case WsConv::kPointwise32Split4:
      case WsConv::kPointwise32Split8:
      case WsConv::kPointwise32Split16:
        return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k32x32, g, x, weight, y, e, st, ws_conv_splits(impl), workspace);
      case WsConv::kPointwise64Split4:
        return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k64x64, g, x, weight, y, e, st, 4, workspace);
      case WsConv::kDepthwise: return kernels::conv2d_depthwise(et, g, x, weight, y, e, st, 1);
      case WsConv::kDepthwise4: return kernels::conv2d_depthwise(et, g, x, weight, y, e, st, 4);
      case WsConv::kPointwise64: return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k64x64, g, x, weight, y, e, st);
      case WsConv::kPointwise32: return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k32x32, g, x, weight, y, e, st);
      case WsConv::kDirect: return kernels::conv2d_direct(et, g, x, weight, y, e, st);
    }
    return internal_error("unknown WarpStream conv kernel");
  }
  // e.g. "ws depthwise 3x3 s2, NCHW, fp16, fused pad+bias+clip"
  std::string describe(Precision prec) const {
    const std::string k = std::to_string(g.kernel_h) + "x" + std::to_string(g.kernel_w);
    const std::string st = " s" + (g.stride_h == g.stride_w ? std::to_string(g.stride_h) : std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w));
    std::string r;
    switch (impl) {
      case WsConv::kDepthwise: r = "ws depthwise " + k + st; break;
      case WsConv::kDepthwise4: r = "ws depthwise " + k + st + " x4"; break;
      case WsConv::kPointwise64:
      case WsConv::kPointwise32:
      case WsConv::kPointwise32Split4:
      case WsConv::kPointwise32Split8:
      case WsConv::kPointwise32Split16:
      case WsConv::kPointwise64Split4: {
        const bool t64 = impl == WsConv::kPointwise64 || impl == WsConv::kPointwise64Split4;
        const int sp = ws_conv_splits(impl);
        r = std::string("ws pointwise ") + (t64 ? "64x64" : "32x32") + (sp > 1 ? " split-K " + std::to_string(sp) : "") +
            (prec == Precision::kFloat16 ? " (wmma tensor cores)" : " (fp32 FMA)");
        break;
      }
      case WsConv::kDirect:
        r = "ws direct " + k + st + (g.group > 1 ? " g" + std::to_string(g.group) : "") +
            (g.dilation_h > 1 || g.dilation_w > 1 ? " d" + std::to_string(g.dilation_h) : "");
        break;
    }
    std::string fused;
    auto add = [&fused](const std::string& part) { fused += (fused.empty() ? "" : "+") + part; };
    if (g.pad_top || g.pad_left || g.pad_bottom || g.pad_right) add("pad");
    if (epi.bias) add("bias");
    if (epi.act != Activation::kNone) add(kernels::activation_name(epi.act));
    return r + ", NCHW, " + precision_name(prec) + ", " + (fused.empty() ? std::string("no epilogue") : "fused " + fused);
  }
};

Status supports_conv(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (in_t(c, 0).shape.size() != 4) return refuse(c, "only 2-D convolution (NCHW input) is implemented");
  if (!in_t(c, 1).is_constant()) return refuse(c, "the weight must be a build-time constant");
  if (has_in(c, 2) && !in_t(c, 2).is_constant()) return refuse(c, "the bias must be a build-time constant");
  const uint32_t src = c.options.tactic_sources;
  const std::string enabled = " (enabled tactic sources: " + tactic_sources_string(src) + ")";
  if (!(src & (kTacticCudnn | kTacticWarpStream))) return refuse(c, "Conv needs tactic source cudnn or warpstream" + enabled);
  if (!(src & kTacticCudnn)) {
    const ir::Shape& x = in_t(c, 0).shape;
    const ir::Shape& wt = in_t(c, 1).shape;
    const Status v = kernels::validate_conv2d(conv_geometry(c, x, wt, out_shape(c)));
    if (!v.is_ok()) return refuse(c, "no WarpStream conv kernel runs it (" + v.message() + ") and cudnn is not enabled" + enabled);
  }
  return Status::ok();
}

Status bind_conv(BindContext& c, Step& s) {
  auto plan = std::make_shared<ConvPlan>();
  ConvPlan& p = *plan;
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& wt = in_t(c, 1).shape;
  const ir::Shape& y = out_shape(c);
  const int64_t group = attr_i(c.node, "group", 1);
  const Window2d win = window_of(c.node, x, y, {wt[2], wt[3]});
  const cudnnDataType_t dt = c.precision == Precision::kFloat16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const uint32_t sources = c.options.tactic_sources;
  const bool use_cudnn = (sources & kTacticCudnn) != 0;
  p.et = c.elem;
  p.act = c.fused_act;
  p.act_params = c.fused_params;
  p.count = ir::shape_elements(y); p.channels = y[1]; p.inner = y[2] * y[3];
  // A fused residual Add (engine pass fuse_conv_residual_adds) rides as input 3 (runtime tensor of y's shape).
  p.residual = c.node.inputs.size() > 3 && c.node.inputs[3] != ir::kNoTensor;
  const bool resid = p.residual;

  // Our own kernels: padding by bounds checks (no pad kernel, no workspace), bias + activation fused.
  auto own = std::make_shared<WsConvPlan>();
  own->g = conv_geometry(c, x, wt, y);
  own->et = c.elem;
  own->epi.act = c.fused_act;
  own->epi.params = c.fused_params;
  int cc_major = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, c.options.device));
  const std::vector<WsConv> own_candidates = ws_conv_candidates(c, own->g, cc_major >= 7);
  if (!use_cudnn && own_candidates.empty())
    return refuse(c, "no WarpStream conv kernel runs it and cudnn is not enabled (enabled tactic sources: " + tactic_sources_string(sources) + ")");

  // cuDNN: pads — symmetric ones go to cuDNN; asymmetric ones are applied by an explicit zero-pad kernel.
  int64_t sym[2] = {win.pb[0], win.pb[1]};
  int64_t xin[2] = {x[2], x[3]};
  if (win.pb[0] != win.pe[0] || win.pb[1] != win.pe[1]) {
    p.padded = true;
    p.planes = x[0] * x[1]; p.in_h = x[2]; p.in_w = x[3]; p.top = win.pb[0]; p.left = win.pb[1];
    p.ph = x[2] + win.pb[0] + win.pe[0]; p.pw = x[3] + win.pb[1] + win.pe[1];
    p.pad_bytes = align_up(static_cast<size_t>(p.planes * p.ph * p.pw) * c.elem_bytes);
    sym[0] = sym[1] = 0;
    xin[0] = p.ph; xin[1] = p.pw;
  }
  if (use_cudnn) {
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p.x));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p.y));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p.bias));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&p.w));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&p.conv));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateActivationDescriptor(&p.act_desc));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, dt, int(x[0]), int(x[1]), int(xin[0]), int(xin[1])));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, dt, int(y[0]), int(y[1]), int(y[2]), int(y[3])));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(p.bias, CUDNN_TENSOR_NCHW, dt, 1, int(y[1]), 1, 1));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(p.w, dt, CUDNN_TENSOR_NCHW, int(wt[0]), int(wt[1]), int(wt[2]), int(wt[3])));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(p.conv, int(sym[0]), int(sym[1]), int(win.s[0]), int(win.s[1]), int(win.d[0]),
                                                             int(win.d[1]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(p.conv, int(group)));
    // fp32: plain FMA math (no TF32), so results track the CPU executor; fp16: tensor cores, fp32 accumulate.
    const cudnnMathType_t math = c.precision == Precision::kFloat16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(p.conv, math));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetActivationDescriptor(p.act_desc, c.fused_act == Activation::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                                          CUDNN_PROPAGATE_NAN, 0.0));
    int on = 0, oc = 0, oh = 0, ow = 0;
    WS_CUDNN_RETURN_IF_ERROR(cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &on, &oc, &oh, &ow));
    if (on != y[0] || oc != y[1] || oh != y[2] || ow != y[3]) return internal_error(c.node.describe(c.graph.opset) + ": cuDNN output shape disagrees with shape inference");
  }

  WS_ASSIGN_OR_RETURN(p.weight, c.upload(c.node.inputs[1], false));
  own->weight = p.weight;
  if (has_in(c, 2)) {
    WS_ASSIGN_OR_RETURN(const void* b32, c.upload(c.node.inputs[2], true));
    p.bias32 = static_cast<const float*>(b32);
    if (use_cudnn) {
      WS_ASSIGN_OR_RETURN(p.bias_act, c.upload(c.node.inputs[2], false));
    }
  } else if (use_cudnn) {
    WS_ASSIGN_OR_RETURN(p.bias_act, c.upload_values(std::vector<float>(static_cast<size_t>(y[1]), 0.0f), false));
  }
  own->epi.bias = p.bias32;
  // The fused cuDNN path expresses bias + ReLU / bias only (identity only with IMPLICIT_PRECOMP_GEMM).
  const bool fusable = c.fused_act == Activation::kRelu || c.fused_act == Activation::kNone;

  // Timing-cache entry: {"impl": "cudnn" | ws_conv_key(...), "algo", "fused", "time_us"}; entries written
  // before our kernels existed lack "impl" and mean cuDNN. An entry naming a tactic this build cannot use
  // (e.g. another source set — normally excluded by the cache identity) is ignored and re-timed.
  const std::string key = c.cache_key();
  float best_us = 0;
  std::string impl;  // chosen: "cudnn" or a ws_conv_key
  if (const nlohmann::json* e = c.cache.find(key)) {
    const std::string ci = e->value("impl", std::string("cudnn"));
    if (ci == "cudnn" && use_cudnn && e->contains("algo") && e->contains("fused")) {
      p.algo = static_cast<cudnnConvolutionFwdAlgo_t>(e->at("algo").get<int>());
      p.fused = e->at("fused").get<bool>();
      WS_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardWorkspaceSize(c.dev.cudnn, p.x, p.w, p.conv, p.y, p.algo, &p.cudnn_ws));
      impl = ci;
    }
    for (WsConv o : own_candidates)
      if (ci == ws_conv_key(o)) { own->impl = o; impl = ci; }
    if (!impl.empty()) best_us = e->value("time_us", 0.0f);
  }
  const bool from_cache = !impl.empty();
  if (impl.empty()) {
    const size_t xb_own = static_cast<size_t>(ir::shape_elements(x)) * c.elem_bytes;
    const size_t xb = std::max(xb_own, static_cast<size_t>(x[0] * x[1] * xin[0] * xin[1]) * c.elem_bytes);
    const size_t yb = static_cast<size_t>(p.count) * c.elem_bytes;
    WS_ASSIGN_OR_RETURN(void* sx, c.dev.get(0, xb));
    WS_ASSIGN_OR_RETURN(void* sy, c.dev.get(1, yb));
    bool found = false;
    if (use_cudnn) {
      // Workspace scratch as at enqueue: [explicit-pad buffer][cuDNN workspace], so timed runs include the pad kernel.
      WS_ASSIGN_OR_RETURN(void* sws, c.dev.get(2, c.options.max_workspace_bytes + p.pad_bytes));
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int returned = 0;
      // cudnnFind…Ex times every algorithm; should it refuse this configuration, the heuristic list of
      // cudnnGet…_v7 is timed by us instead (each candidate below is re-timed either way).
      if (cudnnFindConvolutionForwardAlgorithmEx(c.dev.cudnn, p.x, sx, p.w, p.weight, p.conv, p.y, sy, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                 &returned, perf, sws, c.options.max_workspace_bytes) != CUDNN_STATUS_SUCCESS) {
        (void)cudaGetLastError();
        if (cudnnGetConvolutionForwardAlgorithm_v7(c.dev.cudnn, p.x, p.w, p.conv, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf) !=
            CUDNN_STATUS_SUCCESS) {
          returned = 0;
          if (own_candidates.empty()) WS_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(c.dev.cudnn, p.x, p.w, p.conv, p.y,
                                                                                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
        }
        for (int i = 0; i < returned; ++i) {
          if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
          size_t ws = 0;
          if (cudnnGetConvolutionForwardWorkspaceSize(c.dev.cudnn, p.x, p.w, p.conv, p.y, perf[i].algo, &ws) == CUDNN_STATUS_SUCCESS) perf[i].memory = ws;
        }
      }
      int tried = 0;
      cudnnConvolutionFwdAlgo_t best_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
      bool best_fused = false;
      size_t best_ws = 0;
      // Timed as enqueued: explicit pad kernel (asymmetric pads) + convolution + epilogue, so the comparison with
      // our single fused kernels is fair.
      // Pass 0: deterministic algorithms, fp32 on FMA math (no TF32); pass 1 (only when pass 0 found nothing): any.
      for (int pass = 0; pass < 2 && !found; ++pass)
      for (int i = 0; i < returned && tried < 4; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > c.options.max_workspace_bytes) continue;
        if (pass == 0 && c.precision == Precision::kFloat32 && perf[i].mathType != CUDNN_FMA_MATH) continue;
        if (pass == 0 && perf[i].determinism != CUDNN_DETERMINISTIC) continue;  // replay must equal direct bitwise
        // Multi-kernel algorithms (transforms + GEMM) only when nothing else runs: timed on the stream they
        // looked fastest, yet in the lanes' graph replay they cost ~55 µs per ResNet-50 3x3 conv against
        // ~11-18 µs average for IMPLICIT_PRECOMP_GEMM (H200 per-layer profiles, docs/results/H200.md, 2026-11-29;
        // chosen after that evidence run, not yet measured on the device).
        if (pass == 0 && (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
                          perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED))
          continue;
        ++tried;
        for (int variant = 0; variant < 2; ++variant) {
          const bool fused = variant == 1;
          if (fused && (!fusable || (c.fused_act == Activation::kNone && perf[i].algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))) continue;
          p.algo = perf[i].algo;
          p.fused = fused;
          p.cudnn_ws = perf[i].memory;
          // a residual is timed in place (z = y: cuDNN and our epilogue read each element before writing it)
          auto t = c.dev.time_us([&](cudaStream_t st) { return p.run(c.dev.cudnn, sx, sy, sws, st, resid ? sy : nullptr); });
          if (!t) { (void)cudaGetLastError(); continue; }  // e.g. the fused call refuses this algo
          if (!found || *t < best_us) { best_us = *t; found = true; best_algo = p.algo; best_fused = fused; best_ws = p.cudnn_ws; }
        }
      }
      p.algo = best_algo;
      p.fused = best_fused;
      p.cudnn_ws = best_ws;
      if (found) impl = "cudnn";
    }
    for (WsConv o : own_candidates) {
      WsConvPlan trial = *own;
      trial.impl = o;
      void* tws = nullptr;
      if (trial.workspace_bytes() > 0) {
        auto got = c.dev.get(2, trial.workspace_bytes());
        if (!got) continue;
        tws = *got;
      }
      auto t = c.dev.time_us([&](cudaStream_t st) { return trial.run(sx, sy, st, resid ? sy : nullptr, tws); }, 10, true);
      if (!t) { (void)cudaGetLastError(); continue; }
      if (!found || *t < best_us) { best_us = *t; found = true; own->impl = o; impl = ws_conv_key(o); }
    }
    if (!found) {
      if (!use_cudnn) return refuse(c, "no WarpStream conv kernel ran (enabled tactic sources: " + tactic_sources_string(sources) + ")");
      return refuse(c, "no cuDNN forward algorithm runs within max_workspace_bytes = " + std::to_string(c.options.max_workspace_bytes) +
                           (own_candidates.empty() ? std::string() : " and no WarpStream conv kernel ran"));
    }
    nlohmann::json entry{{"impl", impl}, {"time_us", best_us}};
    if (impl == "cudnn") { entry["algo"] = int(p.algo); entry["fused"] = p.fused; }
    c.cache.put(key, std::move(entry));
  }
  if (impl != "cudnn") {
    s.workspace_bytes = align_up(own->workspace_bytes());
    s.kernels = ws_conv_splits(own->impl) > 1 ? 2 : 1;
    c.tactics.push_back({c.node.name, "Conv", own->describe(c.precision) + (resid ? " + residual" : ""), best_us, from_cache});
    s.run = [own, resid](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return own->run(io.in[0], io.out[0], st, resid ? io.in[3] : nullptr, io.workspace);
    };
    return Status::ok();
  }
  s.workspace_bytes = p.pad_bytes + align_up(p.cudnn_ws);
  s.kernels = 1 + (p.padded ? 1 : 0) + (p.epilogue() ? 1 : 0);
  const std::string epi = p.fused ? std::string(resid ? "cuDNN fused bias+residual" : "cuDNN fused bias") + (c.fused_act == Activation::kRelu ? "+relu" : "")
                                  : (p.epilogue() ? std::string("epilogue bias+") + (resid ? "residual+" : "") + kernels::activation_name(p.act) : "no epilogue");
  c.tactics.push_back({c.node.name, "Conv", "cudnn algo " + std::to_string(int(p.algo)) + " (" + algo_name(p.algo) + "), NCHW, " +
                                                precision_name(c.precision) + (p.padded ? ", explicit pad" : "") + ", " + epi,
                       best_us, from_cache});
  s.run = [plan](const StepIo& io, const ContextLibs& libs, cudaStream_t st) {
    return plan->run(libs.cudnn, io.in[0], io.out[0], io.workspace, st, plan->residual ? io.in[3] : nullptr);
  };
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Gemm / MatMul through cuBLASLt

struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, cd = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t ws = 0;
  float alpha = 1, beta = 0;
  const void* weight = nullptr;  // constant B (nullptr: runtime input 1)
  const void* cmat = nullptr;    // constant C broadcast to [M, N] (nullptr: none or runtime input 2)
  bool c_runtime = false;
  ~GemmPlan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (cd) cublasLtMatrixLayoutDestroy(cd);
  }
  // Row-major Y[M,N] = op(A)·op(B) is column-major Yᵀ[N,M] = op(B)ᵀ·op(A)ᵀ: cuBLASLt's A is our B.
  Status run(cublasLtHandle_t h, const void* x, const void* w, const void* c, void* y, void* wsp, cudaStream_t st) const {
    const void* cptr = c ? c : y;
    WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(h, op, &alpha, w, a, x, b, c ? &beta : &kZero, cptr, cd, y, cd, &algo, wsp, ws, st));
    return Status::ok();
  }
  static constexpr float kZero = 0.0f;
};

Status supports_gemm(const BindContext& c) {
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    if (has_in(c, i)) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  if (c.node.op_type == "Gemm" && has_in(c, 2) && !in_t(c, 2).is_constant() && in_t(c, 2).shape != out_shape(c))
    return refuse(c, "a runtime C must already have the output shape " + ir::shape_string(out_shape(c)));
  if (c.node.op_type == "MatMul") {
    if (in_t(c, 0).shape.size() < 2 || in_t(c, 1).shape.size() != 2) return refuse(c, "MatMul needs A of rank >= 2 and a 2-D B");
  }
  if (in_t(c, 0).is_constant()) return refuse(c, "a constant A operand is not implemented");
  return Status::ok();
}

Status bind_gemm(BindContext& c, Step& s) {
  auto plan = std::make_shared<GemmPlan>();
  GemmPlan& g = *plan;
  const bool is_gemm = c.node.op_type == "Gemm";
  const ir::Shape& as = in_t(c, 0).shape;
  const ir::Shape& bs = in_t(c, 1).shape;
  const int64_t ta = is_gemm ? attr_i(c.node, "transA", 0) : 0, tb = is_gemm ? attr_i(c.node, "transB", 0) : 0;
  int64_t m, k, n;
  int64_t a_rows, a_cols;  // A's storage as a row-major 2-D matrix
  if (is_gemm) { a_rows = as[0]; a_cols = as[1]; }
  else { a_cols = as.back(); a_rows = ir::shape_elements(as) / std::max<int64_t>(a_cols, 1); }
  m = ta ? a_cols : a_rows; k = ta ? a_rows : a_cols;
  n = tb ? bs[0] : bs[1];
  g.alpha = is_gemm ? attr_f(c.node, "alpha", 1.0f) : 1.0f;
  g.beta = is_gemm ? attr_f(c.node, "beta", 1.0f) : 0.0f;
  const cudaDataType_t dt = c.precision == Precision::kFloat16 ? CUDA_R_16F : CUDA_R_32F;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&g.a, dt, uint64_t(bs[1]), uint64_t(bs[0]), int64_t(bs[1])));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&g.b, dt, uint64_t(a_cols), uint64_t(a_rows), int64_t(a_cols)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&g.cd, dt, uint64_t(n), uint64_t(m), int64_t(n)));
  if (in_t(c, 1).is_constant()) {
    WS_ASSIGN_OR_RETURN(g.weight, c.upload(c.node.inputs[1], false));
  }
  if (is_gemm && has_in(c, 2)) {
    const ir::Tensor& ct = in_t(c, 2);
    if (ct.is_constant()) {
      // Materialise C broadcast to [M, N] once at build (unidirectional broadcast of rank 0..2).
      std::vector<float> full(static_cast<size_t>(m * n));
      const ir::Shape& cs = ct.shape;
      const int64_t cr = cs.size() == 2 ? cs[0] : 1, cc = cs.empty() ? 1 : cs.back();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          full[static_cast<size_t>(i * n + j)] = ct.data_as<float>()[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
      WS_ASSIGN_OR_RETURN(g.cmat, c.upload_values(full, false));
    } else {
      g.c_runtime = true;
    }
  }
  const size_t ws_limit = std::min<size_t>(c.options.max_workspace_bytes, size_t{32} << 20);
  cublasLtMatmulPreference_t pref = nullptr;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)> pref_owner(pref, cublasLtMatmulPreferenceDestroy);
  const uint64_t wsl = ws_limit;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsl, sizeof(wsl)));
  cublasLtMatmulHeuristicResult_t heur[8];
  int returned = 0;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(c.dev.lt, g.op, g.a, g.b, g.cd, g.cd, pref, 8, heur, &returned));
  if (returned == 0) return refuse(c, "cuBLASLt has no algorithm for this GEMM");

  const std::string key = c.cache_key();
  int choice = 0;
  float best_us = 0;
  const nlohmann::json* cached = c.cache.find(key);
  if (const nlohmann::json* e = cached) {
    choice = e->at("heuristic_index").get<int>();
    best_us = e->value("time_us", 0.0f);
    if (choice >= returned) return internal_error(c.node.describe(c.graph.opset) + ": timing cache names cuBLASLt heuristic " + std::to_string(choice) + " of " + std::to_string(returned));
  } else {
    const size_t eb = c.elem_bytes;
    WS_ASSIGN_OR_RETURN(void* sx, c.dev.get(0, static_cast<size_t>(m * k) * eb));
    WS_ASSIGN_OR_RETURN(void* sy, c.dev.get(1, static_cast<size_t>(m * n) * eb * (g.c_runtime ? 2 : 1) + static_cast<size_t>(k * n) * eb));
    WS_ASSIGN_OR_RETURN(void* sws, c.dev.get(2, ws_limit));
    void* sw = static_cast<char*>(sy) + static_cast<size_t>(m * n) * eb * (g.c_runtime ? 2 : 1);
    const void* cptr = g.cmat ? g.cmat : (g.c_runtime ? static_cast<char*>(sy) + static_cast<size_t>(m * n) * eb : nullptr);
    bool found = false;
    for (int i = 0; i < returned; ++i) {
      if (heur[i].state != CUBLAS_STATUS_SUCCESS) continue;
      g.algo = heur[i].algo;
      g.ws = heur[i].workspaceSize;
      auto t = c.dev.time_us([&](cudaStream_t st) { return g.run(c.dev.lt, sx, g.weight ? g.weight : sw, cptr, sy, sws, st); });
      if (!t) { (void)cudaGetLastError(); continue; }
      if (!found || *t < best_us) { best_us = *t; choice = i; found = true; }
    }
    if (!found) return refuse(c, "no cuBLASLt algorithm ran");
    c.cache.put(key, {{"heuristic_index", choice}, {"time_us", best_us}});
  }
  g.algo = heur[choice].algo;
  g.ws = heur[choice].workspaceSize;
  s.workspace_bytes = align_up(g.ws);
  c.tactics.push_back({c.node.name, c.node.op_type, "cublasLt heuristic #" + std::to_string(choice) + " of " + std::to_string(returned) +
                                                       " (M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
                                                       ", " + precision_name(c.precision) + ", fp32 accumulate, workspace " + std::to_string(g.ws) + " B)",
                       best_us, cached != nullptr});
  s.run = [plan](const StepIo& io, const ContextLibs& libs, cudaStream_t st) {
    const GemmPlan& p = *plan;
    const void* cptr = p.cmat ? p.cmat : (p.c_runtime ? io.in[2] : nullptr);
    return p.run(libs.lt, io.in[0], p.weight ? p.weight : io.in[1], cptr, io.out[0], io.workspace, st);
  };
  return Status::ok();
}

const std::vector<CudaOpDef>& defs() {
  static const std::vector<CudaOpDef> d = {
      {"Add", -1, supports_binary, bind_binary<kernels::BinaryOp::kAdd>},
      {"AveragePool", 1, supports_pool, bind_pool<false>},
      {"Clip", 1, supports_unary, bind_unary},
      {"Concat", -1, supports_concat, bind_concat},
      {"Conv", 0, supports_conv, bind_conv},
      {"Div", -1, supports_binary, bind_binary<kernels::BinaryOp::kDiv>},
      {"Dropout", 1, supports_copy, bind_copy},
      {"Flatten", 1, supports_copy, bind_copy},
      {"Gemm", 1, supports_gemm, bind_gemm},
      {"GlobalAveragePool", 1, ok_float0, bind_global_average_pool},
      {"HardSigmoid", 1, supports_unary, bind_unary},
      {"HardSwish", 1, supports_unary, bind_unary},
      {"Identity", 1, supports_copy, bind_copy},
      {"MatMul", 1, supports_gemm, bind_gemm},
      {"MaxPool", 1, supports_pool, bind_pool<true>},
      {"Mul", -1, supports_binary, bind_binary<kernels::BinaryOp::kMul>},
      {"Relu", 1, supports_unary, bind_unary},
      {"Reshape", 1, supports_copy, bind_copy},
      {"Sigmoid", 1, supports_unary, bind_unary},
      {"Softmax", 1, ok_float0, bind_softmax},
      {"Squeeze", 1, supports_copy, bind_copy},
      {"Sub", -1, supports_binary, bind_binary<kernels::BinaryOp::kSub>},
      {"Transpose", 1, supports_transpose, bind_transpose},
      {"Unsqueeze", 1, supports_copy, bind_copy},
  };
  return d;
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

Status cudnn_status(cudnnStatus_t s, const char* what, const char* file, int line) {
  return Status(StatusCode::kCuda, std::string(what) + " failed: " + cudnnGetErrorString(s) + " (" + file + ":" + std::to_string(line) + ")");
}
Status cublas_status(cublasStatus_t s, const char* what, const char* file, int line) {
  return Status(StatusCode::kCuda, std::string(what) + " failed: cublas status " + std::to_string(int(s)) + " (" + file + ":" + std::to_string(line) + ")");
}

BuildDevice::~BuildDevice() {
  if (cudnn) cudnnDestroy(cudnn);
  if (lt) cublasLtDestroy(lt);
}

Result<void*> BuildDevice::get(int slot, size_t bytes) {
  cuda::DeviceBuffer& b = scratch[slot];
  if (b.bytes() < bytes) {
    b.reset();
    WS_ASSIGN_OR_RETURN(b, cuda::DeviceBuffer::allocate(bytes));
    WS_CUDA_RETURN_IF_ERROR(cudaMemset(b.get(), 0, bytes));
  }
  return b.get();
}

Result<float> BuildDevice::time_us(const std::function<Status(cudaStream_t)>& fn, int reps, bool capture) {
  for (int i = 0; i < 2; ++i) WS_RETURN_IF_ERROR(fn(stream.get()));
  // Timed as the lanes run it: `reps` back-to-back copies captured into one CUDA graph and replayed (per-node
  // launch cost ~0.5 µs on the GPU, no host launch gaps), so a two-kernel tactic is not charged host launch
  // latency that graph replay never pays. Falls back to stream launches if the call cannot be captured.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (capture && cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    Status st = Status::ok();
    for (int i = 0; i < reps && st.is_ok(); ++i) st = fn(stream.get());
    const cudaError_t e = cudaStreamEndCapture(stream.get(), &graph);
    if (!st.is_ok() || e != cudaSuccess || !graph || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) exec = nullptr;
  }
  (void)cudaGetLastError();
  Status st = Status::ok();
  if (exec) {
    st = cudaGraphLaunch(exec, stream.get()) == cudaSuccess ? Status::ok() : internal_error("graph launch failed");  // warm upload
    if (st.is_ok()) {
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream.get()));
      if (cudaGraphLaunch(exec, stream.get()) != cudaSuccess) st = internal_error("graph launch failed");
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream.get()));
    }
  } else {
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream.get()));
    for (int i = 0; i < reps && st.is_ok(); ++i) st = fn(stream.get());
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream.get()));
  }
  const cudaError_t sync = cudaEventSynchronize(stop.get());
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  WS_RETURN_IF_ERROR(st);
  if (sync != cudaSuccess) return Status(StatusCode::kCuda, std::string("tactic timing: ") + cudaGetErrorString(sync));
  WS_ASSIGN_OR_RETURN(float ms, cuda::elapsed_ms(start, stop));
  return ms * 1000.0f / static_cast<float>(reps);
}

std::string BindContext::cache_key() const {
  std::string k = std::string(precision_name(precision)) + "|" + node.name + "|" + node.op_type + "|";
  for (ir::TensorId id : node.inputs) k += id == ir::kNoTensor ? "-" : ir::shape_string(graph.tensor(id).shape);
  k += "|act=" + std::string(kernels::activation_name(fused_act));
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
