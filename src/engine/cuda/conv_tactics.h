#pragma once
/// \file conv_tactics.h
/// Our own conv kernels (src/kernels/conv: depthwise, pointwise GEMM with optional split-K, direct) as Conv
/// tactics beside cuDNN: which of them may run a node (ws_conv_candidates, in timing order), their
/// timing-cache keys, and the plan a chosen one runs (one kernel with padding, bias, residual and
/// activation fused; split-K adds a reduction kernel and needs workspace).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/cuda_ops.h"
#include "kernels/conv/conv.h"

namespace ws::cudaexec {

using kernels::Activation;
using kernels::ElemType;

// ---- our own conv kernels (src/kernels/conv) as tactics ----
enum class WsConv { kDepthwise, kDepthwise4, kPointwise64, kPointwise32, kDirect, kPointwise32Split4, kPointwise32Split8,
                    kPointwise32Split16, kPointwise64Split4,
                    // precision fp8 (kernels::conv2d_pointwise_fp8): the same tiles and split-K factors on E4M3 tensor cores
                    kFp8Pointwise64, kFp8Pointwise32, kFp8Pointwise32Split4, kFp8Pointwise32Split8, kFp8Pointwise32Split16,
                    kFp8Pointwise64Split4 };
/// The tactic runs kernels::conv2d_pointwise_fp8.
bool ws_conv_is_fp8(WsConv i);
// Direct kernel as a timed candidate (beside cuDNN) up to this reduction length Cin/group·kh·kw; beyond it
// (or for depthwise convs, which have their own kernel) only when nothing else could run the node.
constexpr int64_t kDirectMaxReduction = 576;

/// Split-K factor of a pointwise tactic (1: none).
int ws_conv_splits(WsConv i);
/// The tactic's timing-cache "impl" value (e.g. "ws_pointwise_32x32_splitk4").
const char* ws_conv_key(WsConv i);
/// How a split-K tactic reduces its partials: a second kernel over the whole GPU (kernels::conv2d_pointwise with a
/// workspace), inside the GEMM kernel by each tile's last block ("_serial": tile counters), or across the thread-block
/// cluster of each tile through distributed shared memory ("_cluster": kernels::conv2d_pointwise_cluster; fp16, sm_90+).
/// All three give the same bits (the same summation order).
enum class SplitKForm { kReduceKernel, kSerial, kCluster };
/// The timing-cache "impl" value of a tactic in one split-K form: ws_conv_key, plus "_serial" or "_cluster" for a
/// split-K tactic in those forms.
inline std::string ws_conv_form_key(WsConv i, SplitKForm f) {
  const bool split = ws_conv_splits(i) > 1;
  return std::string(ws_conv_key(i)) + (split && f == SplitKForm::kSerial ? "_serial" : split && f == SplitKForm::kCluster ? "_cluster" : "");
}
/// The conv geometry of a 2-D Conv node (x, weight, y shapes; pads resolved from auto_pad).
kernels::Conv2dGeometry conv_geometry(const BindContext& c, const ir::Shape& x, const ir::Shape& wt, const ir::Shape& y);
/// Our kernels that may run this conv, in timing order (empty when warpstream is not an enabled source).
std::vector<WsConv> ws_conv_candidates(const BindContext& c, const kernels::Conv2dGeometry& g, bool tensor_cores);
/// The FP8 pointwise tactics for this conv, in timing order (empty unless it is a pointwise conv and warpstream is
/// an enabled source; the caller decides whether the node runs FP8: precision, calibration, compute capability).
std::vector<WsConv> ws_conv_fp8_candidates(const BindContext& c, const kernels::Conv2dGeometry& g);

/// A fused depthwise → pointwise tactic (kernels::conv2d_depthwise_pointwise): the projection GEMM's tile and split-K
/// factor (1: none; > 1: partials in the workspace, then the reduce kernel).
struct DwPwTactic {
  kernels::PointwiseTile tile = kernels::PointwiseTile::k32x32;
  int splits = 1;
  /// The timing-cache "impl" value, e.g. "ws_dwpw_32x32_splitk4".
  std::string key() const {
    return std::string("ws_dwpw_") + kernels::pointwise_tile_name(tile) + (splits > 1 ? "_splitk" + std::to_string(splits) : "");
  }
};
/// The fused tactics for a pointwise conv `pw`, in timing order: both tiles, and the split-K forms the pointwise conv
/// itself would be offered (the same rule: a small tile grid next to the SM count and a deep enough K).
std::vector<DwPwTactic> dwpw_candidates(const kernels::Conv2dGeometry& pw);

struct WsConvPlan {
  WsConv impl = WsConv::kDirect;
  kernels::Conv2dGeometry g;
  kernels::ConvEpilogue epi;
  ElemType et = ElemType::kFloat32;
  const void* weight = nullptr;
  kernels::PointwiseFp8Weights fp8;  ///< the FP8 tactics' operands (codes, per-channel dequantisation, 1 / x scale)
  /// How a split-K tactic reduces (SplitKForm; the other forms are timed beside the reduce kernel when
  /// CudaBuildOptions::split_k_in_kernel / split_k_cluster allow them). kSerial: run() needs tile counters; kCluster:
  /// neither workspace nor counters.
  SplitKForm split_form = SplitKForm::kReduceKernel;
  bool split() const { return ws_conv_splits(impl) > 1; }
  /// The timing-cache "impl" value (ws_conv_form_key).
  std::string key() const { return ws_conv_form_key(impl, split_form); }
  size_t workspace_bytes() const {
    return split_form == SplitKForm::kCluster ? 0 : kernels::conv2d_pointwise_workspace_bytes(g, ws_conv_splits(impl));
  }
  bool t64() const {
    return impl == WsConv::kPointwise64 || impl == WsConv::kPointwise64Split4 || impl == WsConv::kFp8Pointwise64 || impl == WsConv::kFp8Pointwise64Split4;
  }
  /// uint32 tile counters run() needs (0 without split-K or with the reduction kernel).
  size_t tile_counters() const {
    return split_form == SplitKForm::kSerial
               ? kernels::conv2d_pointwise_tile_counters(g, t64() ? kernels::PointwiseTile::k64x64 : kernels::PointwiseTile::k32x32, ws_conv_splits(impl))
               : 0;
  }
  /// Kernels one run launches.
  int kernels() const { return split() && split_form == SplitKForm::kReduceKernel ? 2 : 1; }
  /// counters: tile_counters() zero uint32 (kernels::conv2d_pointwise), or nullptr when tile_counters() is 0.
  /// `input_rows` / `output_rows`: the input wavefront (StepIo::input_rows / output_rows), for kDirect on the RGB stem
  /// only (the launchers refuse them elsewhere).
  Status run(const void* x, void* y, cudaStream_t st, const void* residual = nullptr, void* workspace = nullptr,
             unsigned* counters = nullptr, const RowSignal* input_rows = nullptr, const RowSignal* output_rows = nullptr) const {
    kernels::ConvEpilogue e = epi;
    e.residual = residual;
    if (input_rows) e.input_rows = *input_rows;
    if (output_rows) e.output_rows = *output_rows;
    if (tile_counters() > 0 && !counters) return internal_error("split-K in-kernel reduction without tile counters");
    if (split_form != SplitKForm::kSerial) counters = nullptr;
    if (split() && split_form == SplitKForm::kCluster) {
      if (ws_conv_is_fp8(impl) || et != ElemType::kFloat16) return internal_error("split-K over a cluster runs fp16 pointwise tactics only");
      return kernels::conv2d_pointwise_cluster(t64() ? kernels::PointwiseTile::k64x64 : kernels::PointwiseTile::k32x32, g, x, weight, y, e, st,
                                               ws_conv_splits(impl));
    }
    switch (impl) {
      case WsConv::kPointwise32Split4:
      case WsConv::kPointwise32Split8:
      case WsConv::kPointwise32Split16:
        return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k32x32, g, x, weight, y, e, st, ws_conv_splits(impl), workspace, counters);
      case WsConv::kPointwise64Split4:
        return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k64x64, g, x, weight, y, e, st, 4, workspace, counters);
      case WsConv::kDepthwise: return kernels::conv2d_depthwise(et, g, x, weight, y, e, st, 1);
      case WsConv::kDepthwise4: return kernels::conv2d_depthwise(et, g, x, weight, y, e, st, 4);
      case WsConv::kPointwise64: return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k64x64, g, x, weight, y, e, st);
      case WsConv::kPointwise32: return kernels::conv2d_pointwise(et, kernels::PointwiseTile::k32x32, g, x, weight, y, e, st);
      case WsConv::kDirect: return kernels::conv2d_direct(et, g, x, weight, y, e, st);
      case WsConv::kFp8Pointwise64:
      case WsConv::kFp8Pointwise64Split4:
        return kernels::conv2d_pointwise_fp8(kernels::PointwiseTile::k64x64, g, x, fp8, y, e, st, ws_conv_splits(impl), workspace, counters);
      case WsConv::kFp8Pointwise32:
      case WsConv::kFp8Pointwise32Split4:
      case WsConv::kFp8Pointwise32Split8:
      case WsConv::kFp8Pointwise32Split16:
        return kernels::conv2d_pointwise_fp8(kernels::PointwiseTile::k32x32, g, x, fp8, y, e, st, ws_conv_splits(impl), workspace, counters);
    }
    return internal_error("unknown WarpStream conv kernel");
  }
  const char* reduction() const {
    return split_form == SplitKForm::kSerial ? " in-kernel reduce" : split_form == SplitKForm::kCluster ? " over a cluster (DSMEM reduction)" : " + reduce kernel";
  }
  // e.g. "ws depthwise 3x3 s2, NCHW, fp16, fused pad+bias+clip"
  std::string describe(Precision prec) const {
    const std::string k = std::to_string(g.kernel_h) + "x" + std::to_string(g.kernel_w);
    const std::string st = " s" + (g.stride_h == g.stride_w ? std::to_string(g.stride_h) : std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w));
    std::string r;
    switch (impl) {
      case WsConv::kDepthwise: r = "ws depthwise " + k + st; break;
      case WsConv::kDepthwise4: r = "ws depthwise " + k + st + " x4"; break;
      case WsConv::kPointwise64:
      case WsConv::kPointwise32:
      case WsConv::kPointwise32Split4:
      case WsConv::kPointwise32Split8:
      case WsConv::kPointwise32Split16:
      case WsConv::kPointwise64Split4: {
        const int sp = ws_conv_splits(impl);
        r = std::string("ws pointwise ") + (t64() ? "64x64" : "32x32") + (sp > 1 ? " split-K " + std::to_string(sp) + reduction() : "") +
            (half_storage(prec) ? " (wmma tensor cores)" : " (fp32 FMA)");
        break;
      }
      case WsConv::kFp8Pointwise64:
      case WsConv::kFp8Pointwise32:
      case WsConv::kFp8Pointwise32Split4:
      case WsConv::kFp8Pointwise32Split8:
      case WsConv::kFp8Pointwise32Split16:
      case WsConv::kFp8Pointwise64Split4: {
        const int sp = ws_conv_splits(impl);
        r = std::string("ws pointwise FP8 ") + (t64() ? "64x64" : "32x32") + (sp > 1 ? " split-K " + std::to_string(sp) + reduction() : "") +
            " (e4m3 mma tensor cores, per-channel weight scales, input scale " + std::to_string(1.0f / fp8.inv_x_scale) + ")";
        break;
      }
      case WsConv::kDirect:
        r = "ws direct " + k + st + (g.group > 1 ? " g" + std::to_string(g.group) : "") +
            (g.dilation_h > 1 || g.dilation_w > 1 ? " d" + std::to_string(g.dilation_h) : "");
        break;
    }
    std::string fused;
    auto add = [&fused](const std::string& part) { fused += (fused.empty() ? "" : "+") + part; };
    if (g.pad_top || g.pad_left || g.pad_bottom || g.pad_right) add("pad");
    if (epi.bias) add("bias");
    if (epi.act != Activation::kNone) add(kernels::activation_name(epi.act));
    const char* storage = ws_conv_is_fp8(impl) ? "fp8 math, fp16 out" : prec == Precision::kFloat8 ? "fp16 (no FP8 kernel or no calibrated input range)" : precision_name(prec);
    return r + ", NCHW, " + storage + ", " + (fused.empty() ? std::string("no epilogue") : "fused " + fused);
  }
};

}  // namespace ws::cudaexec
