#pragma once
/// \file conv_nhwc.h
/// Host-only launcher of WarpStream's channels-last (NHWC) fp16 implicit-GEMM convolution for batch-1 latency on Hopper
/// (sm_90): convs whose GEMM has few output tiles and a deep reduction (ResNet-50 at batch 1: M = 3136 … 49 pixels,
/// K = 576 … 4608), where one tile per CTA leaves most of the 132 SMs idle. The implicit GEMM of cuDNN/CUTLASS
/// ("implicit GEMM convolution", CUTLASS docs/implicit_gemm_convolution.md):
///   C[p][k] = sum_{r,s,c} x[n][iy][ix][c] · w[k][r][s][c],   p = (n, oy, ox), iy = oy·sh − ph + r·dh, ix = ox·sw − pw + s·dw
///   y[n][oy][ox][k] = act(C[p][k] + bias[k] + residual[n][oy][ox][k])   (outside x: 0)
/// Layout: x NHWC [n][h][w][c_in], w KRSC [c_out][kh][kw][c_in] (cuDNN's NHWC filter, what the CUDA executor uploads for
/// channels-last segments), y and residual NHWC [n][out_h][out_w][c_out]; fp16 storage, bias fp32 or nullptr, fp32
/// accumulation on tensor cores (mma.sync m16n8k16 fed by ldmatrix).
/// Split-K across a thread-block cluster (the Hopper programming guide's distributed shared memory): the `splits` CTAs
/// of a cluster share one 64-pixel × tile_n-channel output tile, each sums a contiguous range of whole 64-deep K tiles
/// (tap (r, s) major, channel minor), and the partials are reduced through distributed shared memory in rank order
/// 0, 1, ... — deterministic (the same bits every launch), no global workspace, no counters, one kernel.
/// The weights are read before the programmatic-dependent-launch wait (kernels/pdl.cuh): with `epi.pdl`, `w` must not be
/// written by any kernel of the stream or graph (a predecessor that triggers early can let this kernel overlap the one
/// before it too); the CUDA executor's weights are build-time constants.
/// Forms (NhwcIgemmForm): tile_n 32 or 64 output channels per CTA × splits 1, 2, 4, 8 or 16 (16: a non-portable cluster
/// size: a device that refuses the attribute gets kInvalidArgument for those forms; one that cannot schedule such a
/// cluster returns kCuda at launch; either way the engine's timing skips the form).
/// Covers: group 1, c_in % 64 == 0 and c_out % 8 == 0 (16-byte loads; a 64-deep K tile within one tap), any kernel size, stride, dilation and symmetric
/// or asymmetric pads, batch n >= 1.
/// Thread mapping: grid (ceil(P / 64), ceil(c_out / tile_n), splits), cluster (1, 1, splits) (splits 1: a plain launch),
/// P = n·out_h·out_w; 256
/// threads = 8 warps in a 4 × 2 grid over the tile; a 4-stage cp.async ring; see conv_nhwc.cu.
/// Errors (Status, before any device work): kInvalidArgument for an inconsistent geometry (validate_conv2d), a
/// geometry this kernel does not cover (named), a form that does not exist or (splits 16) the device refused, a null or
/// misaligned operand, a device below compute capability 9.0, a build whose PTX for this GPU predates 9.0; kCuda for a
/// failed launch (the error is not left pending).
/// The CUDA executor times each form as a tactic of channels-last convs beside cuDNN (CudaBuildOptions::nhwc_igemm;
/// ops/conv.cpp; timing-cache impl "ws_nhwc_igemm_n<tile_n>_s<splits>").
/// Test: tests/gpu/conv_nhwc_test.cpp (ws_gpu_tests --gtest_filter='ConvNhwc*': against the CPU reference, every form;
/// timing beside cuDNN: --gtest_also_run_disabled_tests --gtest_filter='ConvNhwc.DISABLED_*').

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "kernels/conv/conv.h"
#include "warpstream/status.h"

namespace ws::kernels {

inline constexpr int kNhwcTileM = 64, kNhwcTileK = 64, kNhwcMaxSplits = 16;
/// The kernel's revision, part of the timing-cache identity when the tactic is on (CudaBuildOptions::nhwc_igemm): a
/// cache timed with an earlier kernel is not trusted. Bump it with every change to the kernel's speed.
inline constexpr const char* kNhwcIgemmRevision = "cluster-v2-plain-s1";

/// One launch configuration: output channels per CTA (32 or 64) and the cluster's split-K count (1, 2, 4, 8 or 16).
struct NhwcIgemmForm {
  int tile_n = 64;
  int splits = 1;
};
/// True for the forms the kernel is built for (see NhwcIgemmForm).
bool nhwc_igemm_form_valid(const NhwcIgemmForm& f);
/// "n<tile_n>_s<splits>" (the timing cache's impl is "ws_nhwc_igemm_" + this).
std::string nhwc_igemm_form_name(const NhwcIgemmForm& f);

/// Applies: group 1, c_in % 64 == 0, c_out % 8 == 0, valid geometry. `why` (optional) says what does not fit.
bool conv2d_nhwc_igemm_applicable(const Conv2dGeometry& g, const char** why = nullptr);

/// y = act(conv(x, w) + bias + residual) as described above, in one kernel. `epi.residual` (fp16 NHWC, y's shape) may
/// be null; `epi.pdl` launches with programmatic dependent launch. Allocates nothing; capturable.
Status conv2d_nhwc_igemm(const Conv2dGeometry& g, const NhwcIgemmForm& form, const void* x, const void* w, void* y,
                         const ConvEpilogue& epi, cudaStream_t stream);

}  // namespace ws::kernels
