#pragma once
/// \file expand_depthwise.h
/// Host-only launcher of the fused expand → depthwise pair of an inverted-residual (MBConv) block: the 1×1 expand
/// conv and the depthwise conv after it in ONE kernel, the expanded tensor e never leaving shared memory. The first
/// two convolutions of the block of MobileNetV2 (Sandler et al., 2018, arXiv:1801.04381) and EfficientNet(-Lite) (Tan
/// & Le, 2019, arXiv:1905.11946):
///   e[c][iy][ix] = act_e(sum_k W_e[c][k] · x[k][iy][ix] + b_e[c])                          (expand, c < C_e)
///   d[c][oy][ox] = act_d(sum_{ky,kx} W_d[c][ky][kx] · e[c][oy·sh − pt + ky][ox·sw − pl + kx] + b_d[c])  (zero padding)
/// Unlike the depthwise → pointwise fusion (conv.h) and the whole-block kernel (mbconv.h), no reduction crosses a
/// block: each expanded channel's depthwise output needs only that channel of e, so block (channel slice, row band)
/// recomputes the expand for its band's input rows (the halo rows twice) and nothing else.
/// Layout: NCHW fp16 activations (x [n][C_in][H][W], d [n][C_e][Ho][Wo]), OIHW fp16 weights (W_e [C_e][C_in][1][1],
/// W_d [C_e][1][kh][kw]), fp32 biases; fp32 accumulation (wmma tensor cores for the expand, in 16-deep k steps in
/// order as our pointwise kernel sums them; fmaf over ky, then kx for the taps, as our depthwise kernel sums them).
/// e is rounded to fp16 where the expand kernel would store it, so d equals our two separate kernels (pointwise, then
/// depthwise) up to the expand kernel's own tiling of its fp32 sums.
/// Thread mapping: grid (ceil(C_e / 16), ceil(Ho / rows), n), 256 threads; block (s, b, img) owns expanded channels
/// [16·s, 16·s + 16) and output rows [b·rows, b·rows + rows) of image img (see expand_depthwise.cu).
/// Test: tests/gpu/conv_kernels_test.cpp (ws_gpu_tests --gtest_filter='ConvKernels.ExpandDepthwise*'; against the
/// CPU reference and our two separate kernels). Time: warpstream bench (the engine times it per pair at build against
/// the two kernels; the depthwise conv's tactic string says which won).

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "kernels/conv/conv.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Output rows per block offered as tactics; 0 = the whole output map in one band.
inline constexpr int kExpandDepthwiseRows[] = {1, 2, 4, 8, 0};
/// Outputs per depthwise unit offered as tactics: a thread computes G consecutive outputs of one row (4: each tap's
/// weight loaded once per 4 outputs, neighbouring outputs' input loads shared at stride 1). The same value for any G.
inline constexpr int kExpandDepthwiseOutputs[] = {1, 4};

/// Why expand → dw is not one pair the kernel covers ("" when it is): expand 1×1, stride 1, no pads, group 1,
/// dilation 1; dw depthwise (group == c_in == c_out == expand's c_out), dilation 1; batch and extents chained;
/// every extent below 2^15, batch at most 65535.
std::string conv2d_expand_depthwise_mismatch(const Conv2dGeometry& expand, const Conv2dGeometry& dw);

/// Shared memory (bytes) one block needs with `rows` output rows per band (0: whole map) and `outputs` per depthwise
/// unit (kExpandDepthwiseOutputs); 0 when the pair does not match (conv2d_expand_depthwise_mismatch), rows < 0 or
/// `outputs` is not offered.
size_t conv2d_expand_depthwise_smem_bytes(const Conv2dGeometry& expand, const Conv2dGeometry& dw, int rows, int outputs = 1);

/// Enqueue the fused pair on `stream` (capturable, no allocation), `rows` output rows per band and `outputs` (1 or 4)
/// consecutive outputs per depthwise unit. x: [n][C_in][H][W] fp16; w_e [C_e][C_in] fp16,
/// e_epi (bias, activation); w_d [C_e][1][kh][kw] fp16, d_epi (bias, activation, pdl); d: [n][C_e][Ho][Wo] fp16,
/// must not alias x. Errors: kInvalidArgument (a mismatch above, rows < 0, outputs not 1 or 4, shared memory above the device's opt-in
/// limit, null pointers, a residual on either epilogue, a build that runs the kernel from PTX below compute capability
/// 7.0 — no wmma); kCuda: the launch failed. Per device, the first call sets the kernels' shared-memory attribute;
/// later calls make no attribute calls.
Status conv2d_expand_depthwise(const Conv2dGeometry& expand, const Conv2dGeometry& dw, int rows, int outputs, const void* x, const void* w_e,
                               const ConvEpilogue& e_epi, const void* w_d, void* d, const ConvEpilogue& d_epi, cudaStream_t stream);

}  // namespace ws::kernels
