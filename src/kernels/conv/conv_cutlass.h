#pragma once
/// \file conv_cutlass.h
/// Host-only launcher of CUTLASS's implicit-GEMM conv2d fprop (CUTLASS 2.x conv API, cutlass/conv/device/
/// implicit_gemm_convolution.h; the Ampere multistage mainloop on mma.sync, run on Hopper) for channels-last fp16 convs,
/// with CUTLASS's serial split-K and the bias + activation in its epilogue. The library form of what
/// conv2d_nhwc_igemm (conv_nhwc.h) does by hand, both timed as tactics of the same convs (issue 13: "CUTLASS implicit-GEMM
/// convolution for sm_90 as our own tactic"):
///   y[n][oy][ox][k] = act(sum_{r,s,c} x[n][iy][ix][c] · w[k][r][s][c] + bias[k]),  iy = oy·sh − pt + r·dh, ix = ox·sw − pl + s·dw
/// Layout: x NHWC [n][h][w][c_in], w KRSC [c_out][kh][kw][c_in], y NHWC [n][out_h][out_w][c_out]; fp16 storage, bias fp16
/// [c_out] (required: pass zeros for a conv without bias), fp32 accumulation; act ReLU or none. No residual.
/// Split-K (CUTLASS SplitKMode::kSerial): slice j of `splits` sums the channel chunks j, j + splits, ... of every tap; the
/// slices of an output tile add into y in order 0, 1, ... on a per-tile semaphore, so y holds fp16 running sums between
/// slices (one extra fp16 rounding per slice), and the last slice applies the activation and zeroes the semaphore.
/// Covers: group 1, c_in % 8 == 0 (tile k64x64x32s4c8: c_in == 8, split 1), c_out % 8 == 0, any kernel size / stride / dilation, pads top-left as given
/// (bottom-right follow from out_h, out_w), every tensor under 2^31 bytes, 16-byte aligned operands, splits 1..16 with
/// c_in >= splits · tile K. Compute capability 9.0 only (the CUTLASS library target is built for sm_90a).
/// Errors (Status, before any device work): kUnsupported when CUTLASS was not built (no headers at configure time) or the
/// GPU is not compute capability 9.0; kInvalidArgument for an inconsistent geometry, what this form does not cover, a null
/// or misaligned operand, or a missing semaphore; kCuda for a failed launch.
/// Test: tests/gpu/conv_cutlass_test.cpp (ws_gpu_tests --gtest_filter='ConvCutlass*'); timing:
/// --gtest_also_run_disabled_tests --gtest_filter='ConvCutlass.DISABLED_*'. Written 2026-12-05 without a GPU.

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/conv/conv.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Threadblock tiles built: M pixels × N channels × K taps-channels, pipeline stages; 4 warps of 32×32 each.
/// k64x64x32s4c8: c_in == 8 exactly and split 1 only (CUTLASS's fixed-channels iterators: 4 taps of 8 channels per K step;
/// the first layer of an RGB network whose input is padded to 8, CudaBuildOptions::hwc8_input).
enum class CutlassConvTile { k64x64x32s4, k64x64x64s3, k64x64x32s4c8 };
inline constexpr CutlassConvTile kCutlassConvTiles[] = {CutlassConvTile::k64x64x32s4, CutlassConvTile::k64x64x64s3,
                                                        CutlassConvTile::k64x64x32s4c8};
inline constexpr int kCutlassConvMaxSplits = 16;
/// "64x64x32_s4", "64x64x64_s3", "64x64x32_s4_c8" (timing-cache keys and reports).
const char* cutlass_conv_tile_name(CutlassConvTile t);
/// The tile's K depth (channels per mainloop step): split s needs c_in >= s · this.
int cutlass_conv_tile_k(CutlassConvTile t);

/// True when this build holds the CUTLASS conv kernels.
bool conv2d_cutlass_built();

/// Host check only, no device work: the geometry, activation and split count are covered (see above) and CUTLASS's
/// can_implement accepts them; *semaphore_ints (optional) = the int semaphores split-K needs (0 for splits 1).
Status conv2d_cutlass_check(const Conv2dGeometry& g, CutlassConvTile tile, Activation act, int splits, size_t* semaphore_ints = nullptr);

/// The kernels' epilogue functor (tile 64x64x32_s4) evaluated on the host for one output element: split slice k of
/// `count`, fp32 accumulator `acc`, source `src` (the bias for slice 0, y's fp16 running sum for later slices); what
/// the kernel stores, as float. For a test that needs no GPU. kUnsupported when not built; kInvalidArgument for an
/// activation other than ReLU / none or k outside 0..count-1.
Result<float> conv2d_cutlass_epilogue_on_host(Activation act, float acc, float src, int k, int count);

/// y = act(conv(x, w) + bias) as described above, one kernel on `stream` (capturable; no allocation, no synchronisation).
/// `semaphores`: conv2d_cutlass_check's count of ints, zero before the first launch, left zero by each launch; may be null
/// for splits 1.
/// `pdl`: launch with programmatic dependent launch (kernels/pdl.cuh; sm_90): the kernel waits for its predecessor before
/// any memory access and lets its dependents be scheduled from its start (conv_cutlass_kernel.cuh says why there).
Status conv2d_cutlass(const Conv2dGeometry& g, CutlassConvTile tile, int splits, const void* x, const void* w, const void* bias, void* y,
                      Activation act, int* semaphores, cudaStream_t stream, bool pdl = false);

}  // namespace ws::kernels
