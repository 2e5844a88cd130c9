#pragma once
/// \file conv_nhwc.h
/// Host-only launcher of WarpStream's channels-last (NHWC) fp16 implicit-GEMM convolution with split-K, for batch-1
/// convs whose GEMM has few output tiles and a deep reduction (ResNet-50's 3×3 convs on 14×14 and 7×7 maps: M = 196 or
/// 49 pixels, N = 256 or 512 channels, K = 2304 or 4608), where one tile per block leaves most SMs idle. The implicit
/// GEMM of cuDNN/CUTLASS ("implicit GEMM convolution", CUTLASS docs/implicit_gemm_convolution.md):
///   C[p][k] = sum_{r,s,c} x[n][iy][ix][c] · w[k][r][s][c],   p = (n, oy, ox), iy = oy·sh − ph + r·dh, ix = ox·sw − pw + s·dw
///   y[n][oy][ox][k] = act(C[p][k] + bias[k] + residual[n][oy][ox][k])   (outside x: 0)
/// Layout: x NHWC [n][h][w][c_in], w KRSC [c_out][kh][kw][c_in] (cuDNN's NHWC filter, what the CUDA executor uploads for
/// channels-last segments), y and residual NHWC [n][out_h][out_w][c_out]; fp16 storage, bias fp32 or nullptr, fp32
/// accumulation on tensor cores (nvcuda::wmma m16n16k16; compute capability >= 7.0, the caller checks).
/// Reduction order: K in 32-deep tiles, tap (r, s) major, channel minor; split `s` of `splits` sums a contiguous range of
/// whole tiles; splits > 1 reduce in the kernel (CUTLASS's serial split-K, as conv2d_pointwise's tile_counters): each
/// block stores its fp32 partial tile to `workspace`, the block that arrives last on the tile's counter sums the
/// partials in split order 0, 1, ... (deterministic: the same bits whatever the arrival order) and runs the epilogue,
/// then resets the counter to 0.
/// Covers: group 1, c_in % 32 == 0 and c_out % 8 == 0 (16-byte loads and stores), any kernel size, stride, dilation
/// and symmetric or asymmetric pads, batch n >= 1.
/// Thread mapping: grid (ceil(P / 64), ceil(c_out / 64), splits), P = n·out_h·out_w; 128 threads = 4 warps, each a
/// 32×32 quarter of the block's 64-pixel × 64-channel tile (2×2 wmma fragments); see conv_nhwc.cu.
/// Errors (Status, before any device work): kInvalidArgument for an inconsistent geometry (validate_conv2d), a
/// geometry this kernel does not cover (named), a null operand, splits outside 1..kNhwcMaxSplits, missing workspace or
/// counters for splits > 1; kCuda for a failed launch.
/// The CUDA executor times it as an opt-in tactic of channels-last convs (CudaBuildOptions::nhwc_igemm; ops/conv.cpp).
/// Written 2026-12-05 without a GPU; its first run is the test below.
/// Test: tests/gpu/conv_nhwc_test.cpp (ws_gpu_tests --gtest_filter='ConvNhwc*': against the CPU reference, every
/// split; timing beside cuDNN: --gtest_also_run_disabled_tests --gtest_filter='ConvNhwc.DISABLED_*').

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/conv/conv.h"
#include "warpstream/status.h"

namespace ws::kernels {

inline constexpr int kNhwcTileM = 64, kNhwcTileN = 64, kNhwcTileK = 32, kNhwcMaxSplits = 32;

/// Applies: group 1, c_in % 32 == 0, c_out % 8 == 0, valid geometry. `why` (optional) says what does not fit.
bool conv2d_nhwc_igemm_applicable(const Conv2dGeometry& g, const char** why = nullptr);
/// fp32 partials split-K needs: splits · P · c_out · 4 bytes (0 for splits <= 1).
size_t conv2d_nhwc_igemm_workspace_bytes(const Conv2dGeometry& g, int splits);
/// uint32 tile counters split-K needs (zero before the first launch; each launch leaves them zero):
/// ceil(P / 64) · ceil(c_out / 64) (0 for splits <= 1).
size_t conv2d_nhwc_igemm_tile_counters(const Conv2dGeometry& g, int splits);

/// y = act(conv(x, w) + bias + residual) as described above. `epi.residual` (fp16 NHWC, y's shape) may be null;
/// `epi.pdl` launches with programmatic dependent launch. workspace / counters: see the two functions above.
Status conv2d_nhwc_igemm(const Conv2dGeometry& g, int splits, const void* x, const void* w, void* y, const ConvEpilogue& epi,
                         float* workspace, unsigned* counters, cudaStream_t stream);

}  // namespace ws::kernels
