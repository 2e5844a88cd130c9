#pragma once
/// \file mbconv.h
/// Host-only launcher of the fused inverted-residual (MBConv) block: expand 1×1 conv → depthwise conv → project 1×1
/// conv in ONE kernel, one thread-block cluster per image (Hopper, compute capability 9.0+; CUDA programming guide
/// §"Thread Block Clusters" and §"Distributed Shared Memory"). The block of MobileNetV2 (Sandler et al., 2018,
/// arXiv:1801.04381) and EfficientNet (Tan & Le, 2019, arXiv:1905.11946), without squeeze-excitation
/// (EfficientNet-Lite):
///   e[c][p]  = act_e(sum_k W_e[c][k] · x[k][p] + b_e[c])                      (expand, c < C_e)
///   d[c][q]  = act_d(sum_{ky,kx} W_d[c][ky][kx] · e[c][iy][ix] + b_d[c])        (depthwise, zero padding)
///   y[m][q]  = act_p(sum_c W_p[m][c] · d[c][q] + b_p[m] + residual[m][q])     (project, m < C_out)
/// Layout: NCHW fp16 activations (x [n][C_in][H][W], y [n][C_out][Ho][Wo]), OIHW fp16 weights, fp32 biases; fp32
/// accumulation (wmma tensor cores for the two GEMMs, fmaf for the depthwise taps, in the depthwise kernel's order).
/// e and d never leave shared memory. Each rounds to fp16 where the three separate kernels would store it, so the
/// result equals the three kernels up to the order of the fp32 sums of the projection (split over the cluster's
/// blocks and summed in rank order: deterministic).
/// Thread mapping: grid (G, n), cluster (G, 1, 1), 256 threads. Block r of the cluster owns expanded channels
/// [r·Cm, (r + 1)·Cm) (Cm = 16·ceil(ceil(C_e / 16) / G)): it stages x and its slices of W_e, W_d and W_p in shared
/// memory, computes its e and d slices, and the projection's partial sum over its channels for every output
/// (fp32, in its shared memory); after a cluster barrier, block r sums all G partials of its share of the outputs
/// through distributed shared memory, adds bias and residual, applies act_p and stores y.
/// Test: tests/gpu/conv_kernels_test.cpp (ws_gpu_tests --gtest_filter='ConvKernels.MbConv*'; against the CPU
/// reference and the three separate kernels). Time: warpstream bench (the engine times it against the three kernels
/// per block at build; the tactic string says which won).

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "kernels/conv/conv.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Cluster sizes offered: 8 (portable) and 16 (non-portable; may not be schedulable on every GPU).
inline constexpr int kMbConvClusterSizes[] = {8, 16};

/// Shared memory (bytes) one block of the fused kernel needs with cluster size `cluster`; 0 when the three geometries
/// are not one MBConv block the kernel covers (see conv2d_mbconv_mismatch).
size_t conv2d_mbconv_smem_bytes(const Conv2dGeometry& expand, const Conv2dGeometry& dw, const Conv2dGeometry& project,
                                int cluster);

/// Why the three convolutions are not one block the kernel runs ("" when they are): expand and project must be 1×1,
/// stride 1, no pads, group 1; dw depthwise (group == channels == expand's c_out == project's c_in), dilation 1;
/// batch, extents chained; every extent below 2^15.
std::string conv2d_mbconv_mismatch(const Conv2dGeometry& expand, const Conv2dGeometry& dw, const Conv2dGeometry& project);

/// Enqueue the fused block on `stream` (capturable, no allocation). x: [n][C_in][H][W] fp16; w_e [C_e][C_in] fp16,
/// e_epi (bias, activation; no residual); w_d [C_e][1][kh][kw] fp16, d_epi (bias, activation; no residual); w_p
/// [C_out][C_e] fp16, p_epi (bias, residual [n][C_out][Ho][Wo] fp16 or nullptr, activation, pdl). y must not alias x.
/// Errors: kInvalidArgument (mismatch above, a cluster size not in kMbConvClusterSizes, shared memory above the
/// device's opt-in limit, null pointers, a residual on e_epi / d_epi); kCuda: the launch failed (e.g. no GPC has room
/// for the cluster, or compute capability below 9.0).
Status conv2d_mbconv(const Conv2dGeometry& expand, const Conv2dGeometry& dw, const Conv2dGeometry& project, int cluster,
                     const void* x, const void* w_e, const ConvEpilogue& e_epi, const void* w_d, const ConvEpilogue& d_epi,
                     const void* w_p, void* y, const ConvEpilogue& p_epi, cudaStream_t stream);

}  // namespace ws::kernels
