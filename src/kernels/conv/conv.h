#pragma once
/// \file conv.h
/// Host-only launchers of WarpStream's own 2-D convolution kernels (src/kernels/conv/conv.cu), the
/// CUDA executor's alternatives to cuDNN (timed against it per node at build, src/engine/cuda/cuda_ops.cpp).
/// Every kernel fuses, in one launch: zero padding (any pads, asymmetric included, by bounds checks — no
/// padded copy), the per-output-channel bias, an optional residual and the activation:
///   y[n][co][oy][ox] = act(sum_{ci in group, ky, kx} w[co][ci][ky][kx] · x[n][g·Cin/G + ci][iy][ix]
///                          + bias[co] + residual[n][co][oy][ox]),
///   iy = oy·stride_h − pad_top + ky·dil_h, ix = ox·stride_w − pad_left + kx·dil_w (outside x: 0).
/// Layout: NCHW activations, OIHW weights ([Cout][Cin/group][kh][kw]), all dense. Element type float32 or
/// float16 (`__half`) for x, w, residual and y (all the same type); bias is float32 (device) or nullptr;
/// accumulation is float32 (fp32: plain FMA, no TF32; fp16 pointwise: tensor cores, fp32 accumulate).
/// Activation semantics are bias_activation's (elementwise.h; NaN propagates through Relu/Clip).
/// All launchers enqueue on `stream`, allocate nothing, synchronise nothing and are capturable.
/// Errors (Status): kInvalidArgument for inconsistent geometry (output extents that do not follow from
/// input, kernel, stride, dilation and pads; channels not divisible by group; non-positive values), a shape
/// the chosen kernel does not cover (see each function), or more than 2^30 elements in a tensor
/// (32-bit indexing); kCuda for a failed launch.
/// Test: tests/gpu/conv_kernels_test.cpp (ws_gpu_tests --gtest_filter='ConvKernels*:CudaEngineConvTactics*'; the fused
/// depthwise → pointwise kernel: 'ConvKernels.DepthwisePointwise*'); FP8:
/// tests/gpu/conv_fp8_test.cpp (--gtest_filter='ConvFp8*').

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/elementwise/elementwise.h"
#include "warpstream/row_signal.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// Geometry of one NCHW 2-D convolution (extents in elements).
struct Conv2dGeometry {
  int64_t n = 1, c_in = 1, in_h = 1, in_w = 1;  ///< x: [n][c_in][in_h][in_w]
  int64_t c_out = 1, out_h = 1, out_w = 1;      ///< y: [n][c_out][out_h][out_w]
  int64_t group = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;  ///< >= 0, may differ (TF "SAME")
};

/// The fused epilogue: bias (float32 [c_out], device, or nullptr), residual (y's shape and element type,
/// device, or nullptr; added after the bias, before the activation), activation.
struct ConvEpilogue {
  const float* bias = nullptr;
  const void* residual = nullptr;
  Activation act = Activation::kNone;
  ActivationParams params;
  /// Launch with programmatic dependent launch (kernels/pdl.cuh; sm_90+): the kernel may start while its
  /// predecessor on the stream / in the captured graph finishes, and waits for it before touching memory.
  /// Not arithmetic: results are identical either way. Callers set it only on compute capability >= 9.0.
  bool pdl = false;
  /// The input wavefront (warpstream/row_signal.h): the kernel waits for each input row's flag instead of for its
  /// predecessor grid, and reads the input through L2. Only the RGB stem form of conv2d_direct
  /// (conv2d_stem3x3_applicable, batch 1) and conv2d_depthwise_pointwise (its depthwise epilogue: 3x3, batch 1, no
  /// residual) take it; every other launcher refuses it (kInvalidArgument), never ignores it.
  RowSignal input_rows;
  /// A chained wavefront: the kernel also publishes its output rows (counted; RowSignal::counters), sharing input_rows'
  /// epoch and error words, and triggers its dependents at block start. Only the RGB stem form of conv2d_direct, with
  /// input_rows set, takes it; every other launcher refuses it.
  RowSignal output_rows;
};

/// kInvalidArgument naming `who` when `e` carries an input or output RowSignal: the launchers that can neither wait on nor
/// publish rows call it first.
inline Status refuse_input_rows(const ConvEpilogue& e, const char* who) {
  if (e.input_rows)
    return Status(StatusCode::kInvalidArgument, std::string(who) + ": cannot wait on input rows (RowSignal); only conv2d_direct's RGB stem form "
                                                                   "and conv2d_depthwise_pointwise (3x3 depthwise, batch 1) can");
  if (e.output_rows)
    return Status(StatusCode::kInvalidArgument, std::string(who) + ": cannot publish output rows (RowSignal); only conv2d_direct's RGB stem form can");
  return Status::ok();
}

/// conv2d_direct's RGB stem form applies (direct_stem3x3_kernel): group 1, Cin 3, 3×3, Cout <= 4096.
bool conv2d_stem3x3_applicable(const Conv2dGeometry& g);

/// OK when `g` is a consistent convolution (see the file comment for the error cases).
Status validate_conv2d(const Conv2dGeometry& g);

/// Depthwise kernel applies: group == c_in == c_out (channel multiplier 1).
bool conv2d_depthwise_applicable(const Conv2dGeometry& g);
/// Depthwise convolution. Each thread computes `outputs_per_thread` (1 or 4) consecutive output pixels along
/// out_w (1: consecutive threads on consecutive pixels, fully coalesced; 4: weights and index math shared by
/// four outputs, more work per thread), the channel's weights in registers; 3×3 and 5×5 specialised (fully
/// unrolled), any other kernel size through a generic loop. Any stride, dilation and pads.
/// Errors: kInvalidArgument when not applicable or outputs_per_thread is not 1 or 4.
Status conv2d_depthwise(ElemType t, const Conv2dGeometry& g, const void* x, const void* w, void* y,
                        const ConvEpilogue& e, cudaStream_t stream, int outputs_per_thread = 1);

/// Tile configurations of the pointwise GEMM (block tile M × N over Cout × H·W), chosen by timing.
enum class PointwiseTile { k64x64, k32x32 };
const char* pointwise_tile_name(PointwiseTile t);  ///< "64x64" / "32x32"
/// Pointwise kernel applies: 1×1 kernel, stride 1, dilation 1, no pads, group 1.
bool conv2d_pointwise_applicable(const Conv2dGeometry& g);
/// 1×1 convolution as a batched GEMM per image: Y[n] (Cout × HW) = W (Cout × Cin) · X[n] (Cin × HW).
/// Shared-memory tiled; any M, N, K (edges zero-filled in shared memory). float32: FMA, each thread a
/// 4×4 (64×64 tile) or 2×2 (32×32 tile) register block. float16: tensor cores (nvcuda::wmma m16n16k16,
/// fp32 accumulate; needs compute capability >= 7.0 — the caller checks, the kernel traps below it), with a
/// 4-deep register-staged pipeline of k-tiles (global latency hidden behind the other tiles' mma), 16-byte
/// loads when K % 8 == 0 (W) and H·W % 8 == 0 (X), and 16-byte epilogue stores when H·W % 8 == 0.
/// Split-K (`splits` > 1, for deep reductions over few outputs, e.g. EfficientNet's 7×7 projections with
/// K = 1152 and M·N = 320·49, where one tile per block leaves most SMs idle): blockIdx.z covers
/// image × split, each block reduces one K range into float32 partials in `workspace`
/// (conv2d_pointwise_workspace_bytes), then the partials are summed in a fixed order (deterministic) and the
/// epilogue applied: by a second kernel (no `tile_counters`) or inside this one (below). splits = 1: one
/// kernel, no workspace.
/// In-kernel reduction (`tile_counters` given with splits > 1; CUTLASS's "serial" split-K): no second kernel. Each
/// block stores its partials, then counts its arrival on its output tile's counter; the block that arrives last sums
/// the tile's partials in split order (the same order, so the same bits, as the second kernel) and runs the
/// epilogue, then resets the counter to 0. `tile_counters`: conv2d_pointwise_tile_counters(g, tile, splits)
/// device uint32 that are 0 before the first launch (cudaMemset once) and that nothing but these launches
/// writes; each launch leaves them 0 again. Launches sharing them must not run concurrently (one stream order,
/// as the steps of one execution context). A launch that faults leaves them undefined.
/// Errors: kInvalidArgument when not applicable, splits outside 1..kPointwiseMaxSplits, or no workspace.
inline constexpr int kPointwiseMaxSplits = 32;
Status conv2d_pointwise(ElemType t, PointwiseTile tile, const Conv2dGeometry& g, const void* x, const void* w,
                        void* y, const ConvEpilogue& e, cudaStream_t stream, int splits = 1, void* workspace = nullptr,
                        unsigned* tile_counters = nullptr);
/// Split-K reduced across a thread-block cluster (float16 storage, compute capability 9.0+): the `splits` blocks of one
/// output tile (the fp16 wmma GEMM above, the same tile and the same K ranges) form a cluster (1, 1, splits); each keeps
/// its fp32 partial tile in shared memory, and after a cluster barrier each block sums 1/splits of the tile over the
/// cluster's partials through distributed shared memory (CUDA programming guide, "Distributed Shared Memory"), in split
/// order from 0.0f — the order of the reduce kernel, so y equals conv2d_pointwise's split-K result with the same tile and
/// splits bit for bit — and runs the epilogue. One kernel, no workspace, no counters, no state between launches (safe on
/// concurrent streams). Splits above 8 need non-portable clusters (asked for once per device).
/// Errors: kInvalidArgument when not applicable, splits outside 2..kPointwiseMaxClusterSplits, an unknown tile, a null or
/// misaligned operand (fp16 operands 2-byte, the fp32 bias 4-byte aligned), batch × splits or the output-channel tiles
/// above 65535, a device below compute capability 9.0, a build whose kernel runs from PTX older than 9.0, or splits > 8
/// on a device refusing non-portable clusters; kCuda for a failed launch (the error is not left pending).
inline constexpr int kPointwiseMaxClusterSplits = 16;
/// The cluster form's revision, part of the timing-cache identity when CudaBuildOptions::split_k_cluster is on: a cache
/// timed with an earlier kernel is not trusted. Bump it with every change to the kernel's speed.
inline constexpr const char* kPointwiseClusterRevision = "dsmem-v1";
Status conv2d_pointwise_cluster(PointwiseTile tile, const Conv2dGeometry& g, const void* x, const void* w, void* y, const ConvEpilogue& e,
                                cudaStream_t stream, int splits);
/// Bytes of float32 partials split-K needs: n · splits · Cout · H·W · 4 (0 for splits <= 1).
size_t conv2d_pointwise_workspace_bytes(const Conv2dGeometry& g, int splits);
/// uint32 counters split-K's in-kernel reduction needs: one per output tile, n · ceil(Cout / b) · ceil(H·W / b) with
/// b the tile edge (64 or 32); 0 for splits <= 1. The same for conv2d_pointwise_fp8.
size_t conv2d_pointwise_tile_counters(const Conv2dGeometry& g, PointwiseTile tile, int splits);

/// Depthwise → pointwise in one launch (an MBConv's depthwise conv and the 1×1 projection after it: EfficientNet,
/// MobileNetV2), float16 storage only, tensor cores (compute capability >= 7.0; the caller checks, the kernel traps below):
///   d[n][c][p] = act_dw(sum_{ky,kx} w_dw[c][ky][kx] · x[n][c][iy][ix] + b_dw[c])   rounded to half, never stored;
///   y[n][m][p] = act(sum_c w_pw[m][c] · d[n][c][p] + bias[m] + residual[n][m][p]).
/// The pointwise part is conv2d_pointwise's fp16 wmma GEMM with the same tiles (`tile`) and split-K (partials in
/// `workspace`, conv2d_pointwise_workspace_bytes(pw, splits), then the reduce kernel); its B operand (a 32-channel slice
/// of d for the block's pixels) is computed into shared memory with conv2d_depthwise's arithmetic instead of read from
/// global memory. So y equals conv2d_depthwise → conv2d_pointwise (same tile, same splits) bit for bit, and d's
/// activation round trip and one kernel boundary disappear. Each block recomputes its slice of d once per output-channel
/// tile (ceil(c_out / tile edge) times in all): a tactic the CUDA executor times against the pair, never forced.
/// Layout: NCHW x [n][c][in_h][in_w], w_dw [c][1][kh][kw], w_pw [m][c]; biases float32 or nullptr; any depthwise
/// kernel size, stride, dilation and pads (3×3 and 5×5 unrolled).
/// Errors: kInvalidArgument when either geometry is invalid, `dw` is not depthwise (conv2d_depthwise_applicable), `pw`
/// not pointwise, pw's input is not dw's output, dw_epi carries a residual, an operand is null, splits outside
/// 1..kPointwiseMaxSplits or no workspace; kCuda for a failed launch.
/// Input wavefront: `dw_epi.input_rows` (a RowSignal of x's in_h rows; batch 1, 3×3 depthwise, no residual) makes each
/// block wait for the x rows its pixel tile reads (instead of griddepcontrol.wait at start) and read them through L2;
/// the kernel still ends with griddepcontrol.wait. Anything else carrying a signal is refused (kInvalidArgument).
bool conv2d_depthwise_pointwise_applicable(const Conv2dGeometry& dw, const Conv2dGeometry& pw);
Status conv2d_depthwise_pointwise(PointwiseTile tile, const Conv2dGeometry& dw, const Conv2dGeometry& pw, const void* x, const void* w_dw,
                                  const ConvEpilogue& dw_epi, const void* w_pw, void* y, const ConvEpilogue& e, cudaStream_t stream,
                                  int splits = 1, void* workspace = nullptr);

/// FP8 (OCP E4M3) operands of a pointwise convolution (CudaBuildOptions precision fp8), all device memory
/// except inv_x_scale. The weight rows are quantised at build with a per-output-channel scale
/// (src/engine/cuda/fp8_quant.h): codes[m][k] = e4m3(W[m][k] / w_scale[m]), zero for k >= c_in; the
/// activation is quantised inside the kernel with one per-tensor scale from calibration: xq = e4m3(x · inv_x_scale)
/// (round to nearest even, saturating at ±448). Dequantisation folds both scales: out_scale[m] = x_scale · w_scale[m].
struct PointwiseFp8Weights {
  const uint8_t* codes = nullptr;    ///< [c_out][k_stride] E4M3 codes, 16-byte aligned
  int64_t k_stride = 0;              ///< row pitch in bytes: c_in rounded up to kFp8KAlign
  const float* out_scale = nullptr;  ///< [c_out] float32
  float inv_x_scale = 1.0f;          ///< 1 / x_scale (finite, > 0)
};
inline constexpr int64_t kFp8KAlign = 32;
/// 1×1 convolution in FP8 on tensor cores (mma.sync m16n8k32 e4m3 × e4m3 → fp32; compute capability 8.9+ —
/// the caller checks, the kernel traps below it): x and y float16 NCHW, fp32 accumulation,
///   y[n][m][p] = act(out_scale[m] · sum_k codes[m][k] · e4m3(x[n][k][p] · inv_x_scale) + bias[m] + residual).
/// Tiles as conv2d_pointwise (64×64 or 32×32, 128 threads); split-K as there (dequantised fp32 partials, the
/// same deterministic reduction: a second kernel, or in the kernel with `tile_counters`). Same applicability as
/// conv2d_pointwise.
/// Errors: kInvalidArgument when not applicable, k_stride not a multiple of kFp8KAlign at least c_in, a null
/// operand, splits outside 1..kPointwiseMaxSplits or no workspace; kCuda for a failed launch.
Status conv2d_pointwise_fp8(PointwiseTile tile, const Conv2dGeometry& g, const void* x, const PointwiseFp8Weights& w, void* y,
                            const ConvEpilogue& e, cudaStream_t stream, int splits = 1, void* workspace = nullptr,
                            unsigned* tile_counters = nullptr);
/// The virtual architecture the FP8 kernel's code for the current device comes from (cudaFuncGetAttributes'
/// ptxVersion, e.g. 90): below 89 the driver runs PTX of an older target (e.g. compute_75 JIT-compiled on an sm_89
/// GPU when the build has no sm_89 code), whose kernel body is a trap. Errors: kCuda.
Result<int> conv2d_pointwise_fp8_arch();

/// Generic direct convolution: any group, kernel, stride, dilation and pads; one thread per output
/// element looping over Cin/group × kh × kw. Meant for small reductions (e.g. the stem conv, Cin = 3)
/// and as the fallback when cuDNN is not an enabled tactic source.
Status conv2d_direct(ElemType t, const Conv2dGeometry& g, const void* x, const void* w, void* y,
                     const ConvEpilogue& e, cudaStream_t stream);

}  // namespace ws::kernels
