#pragma once
/// \file cudnn_fe_conv.h
/// One channels-last (NHWC) fp16 2-D convolution with its epilogue as ONE cuDNN runtime-fused graph, through
/// cudnn-frontend (cuDNN's graph API; developer guide "Graph API", the conv_fprop → pointwise chain of
/// cudnn-frontend's samples/cpp/convolution):
///   y[n][oy][ox][k] = act( sum_{r,s,c} w[k][r][s][c] · x[n][iy][ix][c]  +  bias[k]  (+ z[n][oy][ox][k]) )
///   iy = oy·stride_h − pad_h + r·dil_h, ix = ox·stride_w − pad_w + s·dil_w (outside x: 0), act = ReLU or identity.
/// Layouts: x NHWC [n][h][w][c], w KRSC [k][r][s][c] (what ops/conv.cpp uploads for NHWC segments), bias [k],
/// z and y NHWC [n][oh][ow][k]; x, w, bias, z, y all float16; accumulation and the epilogue in float32 (the
/// graph's compute and intermediate type), rounded to half once when y is stored. Symmetric pads, group 1.
///
/// Why: cuDNN's legacy entry point (cudnnConvolutionBiasActivationForward) reaches one engine per algorithm enum;
/// the graph API lists every engine configuration cuDNN's heuristics offer for this exact graph (heuristics modes A
/// and FALLBACK), knobs such as split-K included. Each configuration is a tactic: the CUDA executor times them as
/// graph replay beside the legacy algorithms and our own kernels (ops/conv.cpp), as TensorRT times its tactics.
/// Only deterministic configurations with fp32 reductions are kept (NONDETERMINISTIC and
/// REDUCED_PRECISION_REDUCTION notes deselected), so a replayed graph equals a direct run bit for bit.
///
/// Opt-in (CudaBuildOptions::cudnn_graph_convs, off by default): when the plans built at engine build were shared by every
/// ExecutionContext, 4 lanes running concurrently gave 3 of 4000 ResNet-50 frames another top-1 (device run 71; one lane:
/// every frame equal), so some engine keeps state outside the workspace it is given (in the plan or the handle it was
/// built with). Each context now builds its own plan with its own handle (prepare(); not yet run on a GPU). run() also lets cuDNN create a
/// variant-pack descriptor per call (host allocations in direct enqueue; none in CUDA-graph replay).
/// Compiled with the cudnn-frontend headers only when CMake found them (cmake/cudnn_frontend.cmake defines
/// WS_HAVE_CUDNN_FRONTEND for cudnn_fe_conv.cpp alone); otherwise build() returns kUnsupported "not built" and the
/// executor keeps the legacy algorithms. Host-only header; nothing here allocates device memory.
/// Test: tests/gpu/cudnn_fe_conv_test.cpp (CudnnFeConv*: every built plan against the CPU reference, an engine against the
/// CPU executor, concurrent contexts against one context).

#include <cudnn.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "warpstream/status.h"

namespace ws::cudaexec {

/// Geometry of one NHWC fp16 convolution (extents in elements; out_h/out_w must follow from the rest).
struct FeConvShape {
  int64_t n = 1, c = 0, h = 0, w = 0;  ///< x: [n][h][w][c]
  int64_t k = 0, r = 1, s = 1;         ///< w: [k][r][s][c]
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t out_h = 0, out_w = 0;        ///< y, z: [n][out_h][out_w][k]
  bool residual = false;               ///< y = act(conv + bias + z)
  bool relu = false;                   ///< act = ReLU (else identity)
};

/// True when this build has cudnn-frontend (WS_HAVE_CUDNN_FRONTEND).
bool cudnn_fe_conv_built();
/// CUDNN_FRONTEND_VERSION of the headers this build used (major·10000 + minor·100 + patch); 0 when not built. Part of the
/// timing-cache identity when the graph convs are on: the cache keeps heuristic indices, which another frontend (or
/// cuDNN) version may map to other engines.
int cudnn_fe_version();

class FeConv {
 public:
  /// Validates the graph, asks cuDNN's heuristics (modes A, FALLBACK) for engine configurations, keeps the
  /// deterministic fp32-reduction ones that need at most `max_workspace` bytes and builds, in heuristic order, at most
  /// `max_plans` precompiled and `max_rtc_plans` runtime-compiled (NVRTC at build) ones. `only_graph_index` >= 0 builds
  /// that heuristic index alone (a timing-cache hit: graph_index() of an earlier build).
  /// kUnsupported with cuDNN's message when no configuration builds or the build lacks cudnn-frontend;
  /// kInvalidArgument for a non-positive extent or limit, or a null handle; kCuda when a cuDNN call fails. `name` labels
  /// messages (the node).
  static Result<std::unique_ptr<FeConv>> build(cudnnHandle_t handle, const FeConvShape& shape, const std::string& name,
                                               int max_plans, int max_rtc_plans, int64_t max_workspace,
                                               int64_t only_graph_index = -1);
  ~FeConv();
  FeConv(const FeConv&) = delete;
  FeConv& operator=(const FeConv&) = delete;

  /// Built plans: indices 0 .. plan_count() − 1.
  int plan_count() const;
  /// The heuristic index of built plan `i` in cuDNN's engine-configuration list (what the timing cache keeps); -1 if none.
  int64_t graph_index(int i) const;
  /// Workspace bytes plan `i` needs (0 for most); the caller passes at least this much to run().
  int64_t workspace_bytes(int i) const;
  /// The engine's name and knobs as cuDNN reports them (e.g. "eng0_k2=3_k13=1"), for the tactic list.
  std::string plan_name(int i) const;
  /// Builds plan `i` again for `handle` (a context's own cuDNN handle), so that contexts running concurrently share no
  /// execution plan: run() with that handle uses it while the returned token lives (the context keeps it and drops it
  /// before destroying the handle). Without it run() uses the plan built at build() (the builder's handle). Call it at
  /// context creation, not under stream capture. kInvalidArgument for a bad index or null handle; kUnsupported or kCuda
  /// when cuDNN no longer builds the same engine at that heuristic index.
  Result<std::shared_ptr<const void>> prepare(cudnnHandle_t handle, int i) const;
  /// Enqueues plan `i` on `stream` through `handle` (any handle of this device). z must be non-null exactly when the
  /// shape has a residual; workspace non-null when workspace_bytes(i) > 0; every pointer 16-byte aligned. `handle` is
  /// build()'s handle or one prepare() was called with (kFailedPrecondition otherwise: no plan shared across contexts).
  /// Capturable; cuDNN allocates a variant-pack
  /// descriptor per call (host heap), so call it at capture, not per frame.
  /// kInvalidArgument for a bad index or a null / misaligned operand (named); kCuda when cuDNN refuses the launch.
  Status run(cudnnHandle_t handle, int i, const void* x, const void* w, const void* bias, const void* z, void* y,
             void* workspace, cudaStream_t stream) const;

 private:
  struct Impl;
  explicit FeConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws::cudaexec
