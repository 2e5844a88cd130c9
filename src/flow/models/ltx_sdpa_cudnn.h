#pragma once
/// \file ltx_sdpa_cudnn.h
/// cuDNN fused SDPA (flash attention) through cudnn-frontend, planned once and enqueued many times.
/// Compiled with the cudnn-frontend headers only when CMake found them (cmake/cudnn_frontend.cmake defines
/// WS_HAVE_CUDNN_FRONTEND for ltx_sdpa_cudnn.cpp alone); otherwise build() returns kUnsupported "not built" and
/// the caller takes its fallback kernel. Host-only header.
///
/// Layout: Q [B, Sq, ld_q] bf16 with head h at columns h*Dh .. (the [B,S,H*Dh] layout, expressed to cuDNN as
/// dims {B,H,S,Dh} with strides {S*ld, Dh, ld, 1}: no permute), K/V [B, Skv, ld_k/ld_v], O [B, Sq, ld_o].
/// Optional additive bias bf16 [B, Skv] (dims {B,1,1,Skv}: broadcast over heads and queries), non-causal,
/// scale 1/sqrt(Dh), inference (no softmax stats).

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "warpstream/status.h"

namespace ws::flow {

struct SdpaShape {
  int batch = 1, heads = 1, head_dim = 64, sq = 1, skv = 1;
  int64_t ld_q = 0, ld_k = 0, ld_v = 0, ld_o = 0;  ///< row strides in elements (>= heads*head_dim)
  bool bias = false;                              ///< an additive [B, Skv] bias input
  float scale = 0.f;                              ///< 0 = 1/sqrt(head_dim)
};

/// True when this build has cudnn-frontend (WS_HAVE_CUDNN_FRONTEND).
bool cudnn_sdpa_built();

class CudnnSdpa {
 public:
  /// Plans the graph (validate, heuristics mode A, check_support, build_plans). kUnsupported with cuDNN's message
  /// when cuDNN refuses the shape (e.g. head_dim not a multiple of 8) or the build lacks cudnn-frontend;
  /// kCuda when a cuDNN call fails. `name` labels the call site in messages ("attn1").
  static Result<std::unique_ptr<CudnnSdpa>> build(const SdpaShape& shape, const std::string& name);
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  /// Workspace bytes the plan needs (the caller owns the buffer).
  int64_t workspace_bytes() const;
  /// Binds device pointers once (after build; workspace of >= workspace_bytes()).
  Status bind(const void* q, const void* k, const void* v, void* o, const void* bias, void* workspace);
  /// Enqueues on `stream` (cudnnSetStream + execute): no allocation, graph-capturable.
  Status enqueue(cudaStream_t stream);

  struct Impl;

 private:
  explicit CudnnSdpa(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws::flow
