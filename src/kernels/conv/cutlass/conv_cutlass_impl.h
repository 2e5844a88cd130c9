#pragma once
/// \file conv_cutlass_impl.h
/// Plain-C++ interface between the CUTLASS conv instantiation files (src/kernels/conv/cutlass/*.cu, compiled for sm_90a
/// with the CUTLASS headers, only when they are found) and the dispatcher conv_cutlass.cpp. No CUTLASS types here.
/// Each instantiation checks one problem (can_implement + the semaphore count) or launches it; nothing is kept between
/// calls, so one function serves every context and thread. See conv_cutlass.h for what is computed.

#include <cuda_runtime.h>

#include <cstddef>

namespace ws::kernels::cutlass_conv {

enum class RunResult { kOk, kUnsupported, kError };

/// One batch of a dense NHWC fp16 conv: x [n][h][w][c], w KRSC [k][r][s][c], y [n][p][q][k]; bias fp16 [k] (read
/// through a stride-0 C operand), pads top / left (bottom / right follow from p, q).
struct ConvArgs {
  int n, h, w, c, k, r, s, p, q;
  int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
  int splits;  ///< serial split-K slices (CUTLASS SplitKMode::kSerial), >= 1
  const void* x;
  const void* weight;
  const void* bias;
  void* y;
  int* semaphore;  ///< splits > 1: one int per output tile, zero before the first launch (each launch leaves them zero)
  cudaStream_t stream;
  bool pdl;  ///< launch with programmatic dependent launch (sm_90): the kernel waits for its predecessor first
};

/// launch == false: can_implement only, *semaphore_ints = the tiles' semaphore count for args.splits (0 when 1), no
/// device work. launch == true: the same checks, then one kernel launch on args.stream (capturable; no allocation, no
/// synchronisation; the first launch on a device sets the kernel's dynamic shared-memory limit).
using ConvFn = RunResult (*)(const ConvArgs& a, bool launch, size_t* semaphore_ints);

/// The ReLU / linear epilogue of the 64x64x32_s4 instantiations run on the host for one element: slice k of `count`,
/// accumulator `acc`, source `src` (bias for slice 0, the fp16 running sum after); returns what the kernel stores.
float f16_relu_epilogue_on_host(float acc, float src, int k, int count);
float f16_linear_epilogue_on_host(float acc, float src, int k, int count);

RunResult f16_relu_64x64x32_s4(const ConvArgs& a, bool launch, size_t* semaphore_ints);
RunResult f16_linear_64x64x32_s4(const ConvArgs& a, bool launch, size_t* semaphore_ints);
RunResult f16_relu_64x64x64_s3(const ConvArgs& a, bool launch, size_t* semaphore_ints);
RunResult f16_linear_64x64x64_s3(const ConvArgs& a, bool launch, size_t* semaphore_ints);
/// c == 8 exactly, splits 1 only (IteratorAlgorithm::kFixedChannels: 4 taps of 8 channels per 32-deep K step).
RunResult f16_relu_64x64x32_s4_c8(const ConvArgs& a, bool launch, size_t* semaphore_ints);
RunResult f16_linear_64x64x32_s4_c8(const ConvArgs& a, bool launch, size_t* semaphore_ints);

}  // namespace ws::kernels::cutlass_conv
