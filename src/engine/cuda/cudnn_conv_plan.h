#pragma once
/// \file cudnn_conv_plan.h
/// One Conv through cuDNN's legacy API (cudnnConvolutionForward, or cudnnConvolutionBiasActivationForward
/// when fused), NCHW: the descriptors, the chosen algorithm and workspace, an explicit zero-pad for
/// asymmetric pads, and our bias/residual/activation epilogue where cuDNN does not fuse it. Built and timed
/// by ops/conv.cpp; run() only enqueues. The legacy API is deprecated in cuDNN 9 (the graph API via
/// cudnn-frontend is the follow-up); its warnings are silenced here and in ops/conv.cpp only.
#include <cudnn.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/cuda/cuda_ops.h"
#include "engine/cuda/cudnn_fe_conv.h"
#include "kernels/conv/conv.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace ws::cudaexec {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;

inline const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
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
  // A cuDNN graph engine (cudnn_fe_conv.h) instead of the legacy call: NHWC fp16 only, bias/residual/ReLU inside it.
  std::shared_ptr<const FeConv> fe;
  int fe_plan = -1;
  bool epilogue() const { return !fe && !fused && (bias32 || act != Activation::kNone || residual); }
  Status run(cudnnHandle_t h, const void* xin, void* yout, void* ws, cudaStream_t st, const void* r = nullptr) const {
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetStream(h, st));
    const void* xs = xin;
    char* cws = static_cast<char*>(ws);
    if (padded) {
      WS_RETURN_IF_ERROR(kernels::pad_2d_zero(et, xin, ws, planes, in_h, in_w, top, left, ph, pw, st));
      xs = ws;
      cws += pad_bytes;
    }
    if (fe) return fe->run(h, fe_plan, xs, weight, bias_act, residual ? r : nullptr, yout, cws, st);
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

}  // namespace ws::cudaexec

#pragma GCC diagnostic pop
