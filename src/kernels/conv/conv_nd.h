#pragma once
/// \file conv_nd.h
/// Host-only launchers of the direct N-d window kernels (src/kernels/conv/conv_nd.cu): convolution, transposed
/// convolution (ONNX ConvTranspose-11) and Max / Average pooling over 1..3 spatial dims, for what the 2-D
/// tactics (cuDNN, conv.h, pool.h) do not cover: 3-D Conv / pooling, ConvTranspose, and a Conv whose weight or
/// bias is a runtime tensor. Simple and general rather than fast: one thread per output element, float32
/// accumulation; meant for the small layers of conformance cases and the odd model layer, not a hot path.
/// Geometry is given as rank 3 with leading extents 1 for fewer spatial dims (1-D and 2-D use the same loops).
/// Layout: N, C, spatial... dense (NCDHW); Conv weights [Cout][Cin/group][k...], ConvTranspose weights
/// [Cin][Cout/group][k...]. x, w, bias, residual and y share the element type (float32 or float16).
/// Semantics: ws::ref::conv_nd / conv_transpose_nd / max_pool_nd / average_pool_nd (src/reference).
/// All launchers enqueue on `stream`, allocate nothing, synchronise nothing and are capturable.
/// Errors: kInvalidArgument for inconsistent geometry (non-positive extents, channels not divisible by group);
/// kUnsupported for another element type; kCuda for a failed launch.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/elementwise/elementwise.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// One N-d convolution or transposed convolution; spatial arrays are rank 3 (leading 1s for 1-D / 2-D).
struct ConvNdGeometry {
  int64_t n = 1, c_in = 1, c_out = 1, group = 1;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};  ///< the end pads follow from in / out (outside x reads 0); may be negative
};

/// Convolution (transpose = false): y[n,co,o] = act(Σ_{ci ∈ group(co), k} x[n,ci,o·s − pb + k·d] · w[co,ci,k]
/// + bias[co] + residual[n,co,o]); transposed (transpose = true): y[n,co,o] = act(Σ x[n,ci,i] · w[ci,co mod
/// Cout/group,k] over i·s − pb + k·d = o, + bias[co] + residual). bias ([c_out]) and residual (y's shape) may
/// be nullptr.
Status conv_nd_direct(ElemType t, bool transpose, const ConvNdGeometry& g, const void* x, const void* w, const void* bias,
                      const void* residual, void* y, Activation act, const ActivationParams& p, cudaStream_t stream);

/// One N-d pooling over `planes` = N·C planes; spatial arrays rank 3 as above.
struct PoolNdGeometry {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  bool count_include_pad = false;  ///< AveragePool: divide by the window's cells inside x + pads
};
/// MaxPool (max = true; a window entirely in padding gives -inf) or AveragePool (a window with nothing to
/// count gives NaN, as the reference's 0/0).
Status pool_nd(ElemType t, bool max, const PoolNdGeometry& g, const void* x, void* y, cudaStream_t stream);

}  // namespace ws::kernels
