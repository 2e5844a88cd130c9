#pragma once
/// \file stem_pool.h
/// The ResNet stem in one kernel (stem_pool.cu): Conv 7×7 / stride 2 / pad 3 from 3 channels to 64, its bias and
/// activation, then MaxPool 3×3 / stride 2 / pad 1 — the first two layers of ResNet-18/34/50/101/152, ResNeXt and
/// Wide-ResNet (He et al. 2016, table 1, "conv1" and the max pool of "conv2_x"):
///
///   c[co][cy][cx] = act(Σ_{ci<3, ky<7, kx<7} w[co][ci][ky][kx] · x[ci][2·cy − 3 + ky][2·cx − 3 + kx] + bias[co])
///                   (x outside the image: 0), rounded to fp16;
///   y[py][px][co] = max over cy ∈ {2·py − 1, 2·py, 2·py + 1} ∩ [0, conv_h), cx likewise, of c[co][cy][cx]
///
/// Shapes and layouts: x is the graph input [1, 3, in_h, in_w] stored NCHW (fp16); y is [1, 64, pool_h, pool_w] stored
/// channels-last (NHWC, fp16), the layout the cuDNN NHWC convolutions after it read; conv_h = (in_h − 1) / 2 + 1,
/// pool_h = (conv_h − 1) / 2 + 1 (floor division; ONNX's output sizes for these pads, ceil_mode 0); the same for
/// widths. The 112 × 112 × 64 conv output never reaches memory, and one kernel replaces three nodes of the NHWC plan
/// (the input reformat NCHW → NHWC, cuDNN's conv, cuDNN's max pool).
/// Arithmetic: tensor cores (mma.sync m16n8k16, fp16 operands, fp32 accumulation), bias and activation in fp32, the
/// conv value rounded to fp16 before the max (as the unfused path stores it); the max propagates NaN (cuDNN's
/// CUDNN_PROPAGATE_NAN). The sum order differs from cuDNN's, so results agree with the unfused path to fp16 rounding
/// of an fp32 sum, not bit for bit.
/// Weights: stem_pool_pack_weights rearranges the ONNX weight [64, 3, 7, 7] (OIHW, float32) once at build into the
/// kernel's fragment order (kStemPoolPackedWeights values, to be stored as fp16); bias float32 [64] or nullptr.
/// Activation: kNone, kRelu or kClip (ActivationParams::min / max), the ones build_stages.h fuse_conv_activations folds.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/elementwise/elementwise.h"
#include "warpstream/status.h"

namespace ws::kernels {

inline constexpr int64_t kStemPoolCin = 3;
inline constexpr int64_t kStemPoolCout = 64;
inline constexpr int64_t kStemPoolKernel = 7;
/// Values in the packed weight buffer: 13 k-steps of 16 (K = 49 taps × 4 channels, the 4th channel and taps 49–51
/// zero) × 8 n-tiles of 8 output channels × 32 lanes × 4 values.
inline constexpr int64_t kStemPoolPackedWeights = 13 * 8 * 32 * 4;
/// Input extents the kernel takes (each of in_h, in_w): 7 ... 16384.
inline constexpr int64_t kStemPoolMinExtent = 7;
inline constexpr int64_t kStemPoolMaxExtent = 16384;

inline constexpr int64_t stem_pool_conv_extent(int64_t in) { return (in - 1) / 2 + 1; }
inline constexpr int64_t stem_pool_out_extent(int64_t in) { return (stem_pool_conv_extent(in) - 1) / 2 + 1; }

/// The activations the fused epilogue applies (the others are refused by stem7x7_maxpool).
inline constexpr bool stem_pool_activation_supported(Activation a) {
  return a == Activation::kNone || a == Activation::kRelu || a == Activation::kClip;
}

/// Host: w [64, 3, 7, 7] float32 (OIHW, 9408 values) → kStemPoolPackedWeights values in the mma.sync B-fragment order
/// of stem_pool.cu (value of k-step s, n-tile t, lane l, slot j at ((s · 8 + t) · 32 + l) · 4 + j). Store them as fp16.
std::vector<float> stem_pool_pack_weights(const float* w);

/// Whether the current device can run the kernel: compute capability 8.0+ and this build's code for it from PTX 8.0+
/// (a build for sm_75 + sm_90 only runs compute_75 PTX on an sm_80/86/89 GPU, which has no mma.sync f16). Learned once
/// per device (one cudaFuncGetAttributes); errors: kCuda, kInvalidArgument for a device ordinal above 63.
Result<bool> stem_pool_runnable();

/// Enqueues the fused stem on `stream` (no allocation, no synchronisation, capturable). `w_packed`: the packed weights
/// in fp16 (device, 16-byte aligned); `bias`: float32 [64] (device) or nullptr. `pdl`: programmatic dependent launch
/// (kernels/pdl.cuh; the weights, constant, are staged in shared memory before pdl_wait).
/// Errors (nothing enqueued): kInvalidArgument for in_h / in_w outside [kStemPoolMinExtent, kStemPoolMaxExtent], a null
/// x / w_packed / y, a w_packed not 16-byte aligned, an unsupported activation; kUnsupported where stem_pool_runnable is
/// false; kCuda when the launch fails.
Status stem7x7_maxpool(const void* x, const void* w_packed, const float* bias, Activation act, const ActivationParams& params, void* y,
                       int64_t in_h, int64_t in_w, bool pdl, cudaStream_t stream);

}  // namespace ws::kernels
