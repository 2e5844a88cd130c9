#pragma once
/// \file ltx_block.h
/// One LTX-Video transformer block on the GPU in bf16 (diffusers LTXVideoTransformerBlock; math in
/// /work/shared/research/ltx-video-and-streaming.md sections 1.3-1.5):
///   n  = RMSNorm(x)*(1+scale_msa)+shift_msa;   x += to_out(SDPA(RoPE(norm_q(q)), RoPE(norm_k(k)), v)) * gate_msa
///   x += to_out(SDPA(norm_q(W_q x), norm_k(W_k enc), W_v enc, bias));   (cross-attention, no gate, no RoPE)
///   n  = RMSNorm(x)*(1+scale_mlp)+shift_mlp;    x += W2·GELU_tanh(W1·n + b1) + b2) * gate_mlp
///
/// Build-time object: LtxBlock::build plans every GEMM (cuBLASLt heuristic, fixed workspace), both attentions
/// (cuDNN fused SDPA via cudnn-frontend, else the fallback kernel; which one ran is reported per call site),
/// allocates all activations and workspaces once and binds every pointer. enqueue(stream) then only launches:
/// no allocation, no host synchronisation, CUDA-graph capturable (the profiling pass enqueues stage by stage).
///
/// Layouts (all device, row-major): x [B, S, D] bf16 (the residual stream, updated in place), temb [B, S', 6D] bf16
/// (S' = 1 per-sample or S per-token), enc [B, T, Dc] bf16, enc_bias [B, T] bf16 additive (diffusers' (1-mask)*-1e4;
/// null = no mask), rope cos/sin float32 [S, D] (one table for every batch item). D = heads * head_dim.
/// Linears use the PyTorch weight [out, in] as stored; attn1's q/k/v are fused into one [3D, D] GEMM and attn2's
/// k/v into one [2D, Dc] GEMM at upload (the attention reads them through row strides, no copies).
/// Weight formats: bf16; fp8 e4m3 with per-output-channel float32 scales through cuBLASLt FP8; int8 with
/// per-output-channel scales through our tensor-core INT8 GEMM (gemm_s8_mma) with its dequant epilogue. For fp8/int8
/// the activations are quantized per token right before each linear (see ltx_linear.h for how scales are applied).

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "warpstream/status.h"

namespace ws::flow {

enum class LtxWeightFormat { kBF16, kFP8, kINT8 };
const char* ltx_weight_format_name(LtxWeightFormat f);

/// Block hyper-parameters (diffusers config: num_attention_heads, attention_head_dim, cross_attention_dim; FF = 4D).
struct LtxBlockConfig {
  int heads = 32;
  int head_dim = 64;
  int cross_dim = 2048;
  int ff_dim = 0;            ///< 0 = 4 * D
  float norm_eps = 1e-6f;    ///< norm1 / norm2 (config norm_eps)
  float qk_norm_eps = 1e-5f; ///< norm_q / norm_k (hard-coded in diffusers)
  int dim() const { return heads * head_dim; }  ///< callers bound heads * head_dim first (LtxBlockWeights::validate)
  int ff() const { return ff_dim > 0 ? ff_dim : 4 * dim(); }
};

/// Problem size the block is planned for.
struct LtxBlockGeometry {
  int batch = 1;
  int tokens = 0;       ///< S (video tokens per sample)
  int text_tokens = 0;  ///< T
  int temb_rows = 1;    ///< 1 (per-sample timestep) or S (per-token)
  bool mask = true;     ///< cross-attention gets the additive [B, T] bias
  bool rope = true;     ///< attn1 applies RoPE (false only for tests)
};

/// A host tensor the upload reads (a view; the provider owns the bytes). `scale` is the per-output-channel float32
/// scale of an already-converted fp8 / int8 tensor (required for those, null otherwise). `file` names the checkpoint file for messages.
struct LtxHostTensor {
  enum class Type { kF32, kBF16, kF8E4M3, kS8 } type = Type::kBF16;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  const float* scale = nullptr;
  std::string file;
};
/// Looks a tensor up by its full diffusers name ("transformer_blocks.0.attn1.to_q.weight"); kNotFound naming the
/// tensor and the file when absent.
using LtxTensorSource = std::function<Result<LtxHostTensor>(const std::string& name)>;

/// The names of one block's tensors under `prefix` (e.g. "transformer_blocks.0.").
std::vector<std::string> ltx_block_tensor_names(const std::string& prefix);

/// One block's weights on the device in one allocation, in the chosen format (conversion on the host at upload:
/// bf16/f32 -> bf16, or -> fp8 e4m3 (absmax/448) / int8 (absmax/127, round half even, clamp 127) with
/// per-output-channel scales for the linear weights, or already-converted fp8/int8 tensors with their scales taken
/// as they are; norms, biases and the modulation table stay bf16). Shapes are checked against the config; errors name the tensor and the file.
class LtxBlockWeights {
 public:
  /// Host-only check of every tensor's presence, dtype and shape (no CUDA call): the errors upload would give.
  static Status validate(const LtxTensorSource& source, const std::string& prefix, const LtxBlockConfig& cfg);
  static Result<LtxBlockWeights> upload(const LtxTensorSource& source, const std::string& prefix,
                                        const LtxBlockConfig& cfg, LtxWeightFormat format);
  struct Linear {
    const void* w = nullptr;      ///< bf16 or e4m3 [out, in]
    const float* scale = nullptr; ///< fp8 / int8: float32 [out]
    const void* bias = nullptr;   ///< bf16 [out]
    const float* bias_f32 = nullptr;  ///< int8: float32 [out] (the INT8 GEMM epilogue's bias)
    int out = 0, in = 0;
  };
  Linear attn1_qkv, attn1_out, attn2_q, attn2_kv, attn2_out, ff0, ff2;
  const void* sst = nullptr;                       ///< bf16 [6, D]
  const void* attn1_norm_q = nullptr, *attn1_norm_k = nullptr;  ///< bf16 [D]
  const void* attn2_norm_q = nullptr, *attn2_norm_k = nullptr;
  LtxWeightFormat format = LtxWeightFormat::kBF16;
  size_t device_bytes() const { return buffer_.bytes(); }

 private:
  cuda::DeviceBuffer buffer_;
};

/// Device pointers of the block's inputs/outputs (bound at build; the caller owns them).
struct LtxBlockIO {
  void* x = nullptr;
  const void* temb = nullptr;
  const void* enc = nullptr;
  const void* enc_bias = nullptr;
  const float* rope_cos = nullptr;
  const float* rope_sin = nullptr;
};

struct LtxBlockOptions {
  bool force_fallback_attention = false;  ///< skip cuDNN (tests compare both paths)
  size_t gemm_workspace_bytes = 32u << 20;
  /// External activation arena (borrowed, device, 256-B aligned): when set, the block carves its activations and
  /// workspaces from it instead of allocating its own (LtxBlock::arena_bytes() says how many bytes; a smaller arena
  /// is refused naming both numbers). Blocks that run one after another on ONE stream may share one arena (the
  /// whole model does: one arena for every block instance); device_bytes() then reports 0.
  void* arena = nullptr;
  size_t arena_bytes = 0;
};

/// The activations left in the block's buffers after enqueue (bf16, device), for layerwise checks.
/// ld = row stride in elements.
struct LtxBlockIntermediates {
  const void* norm1 = nullptr;      ///< [B*S, D]  after norm1 + modulation
  const void* q_rope = nullptr;     ///< [B*S, D] (ld) attn1 q after norm_q + RoPE
  int64_t q_rope_ld = 0;
  const void* k_rope = nullptr;     ///< [B*S, D] (ld) attn1 k after norm_k + RoPE
  const void* attn1 = nullptr;      ///< [B*S, D]  attn1 output (after to_out, before the gate)
  const void* attn2 = nullptr;      ///< [B*S, D]  attn2 output (after to_out)
  const void* norm2 = nullptr;      ///< [B*S, D]  after norm2 + modulation
  const void* ff = nullptr;         ///< [B*S, D]  ff output (before the gate)
};

/// `weights` and the buffers in `io` are borrowed: they must outlive the block (the block keeps their pointers).
class LtxBlock {
 public:
  static Result<std::unique_ptr<LtxBlock>> build(const LtxBlockConfig& cfg, const LtxBlockGeometry& geo,
                                                 const LtxBlockWeights& weights, const LtxBlockIO& io,
                                                 const LtxBlockOptions& options = {});
  ~LtxBlock();

  /// Bytes of activations + workspaces the block needs for this problem (what build() allocates, or what an
  /// external LtxBlockOptions::arena must hold). Plans the attentions (cuDNN workspace) on the host; no device
  /// allocation. `format` is the weight format the block will be built with (8-bit adds the quantized activation).
  static Result<size_t> arena_bytes(const LtxBlockConfig& cfg, const LtxBlockGeometry& geo, LtxWeightFormat format,
                                    const LtxBlockOptions& options = {});

  /// The whole block on `stream`.
  Status enqueue(cudaStream_t stream);

  /// Stages in enqueue order (the profiling pass times each between event pairs); flops = 2·M·N·K for GEMMs,
  /// 4·B·H·Sq·Skv·Dh for attention, 0 for memory-bound kernels.
  struct Stage {
    std::string name;
    double flops = 0;
    /// The linear whose weight this stage's GEMM reads, in LtxBlockWeights order (0 attn1_qkv, 1 attn1_out,
    /// 2 attn2_q, 3 attn2_kv, 4 attn2_out, 5 ff0, 6 ff2); -1: none. (The model's per-linear staging dequantises that
    /// weight right before the stage.)
    int linear = -1;
  };
  const std::vector<Stage>& stages() const;
  Status enqueue_stage(size_t index, cudaStream_t stream);

  /// "cuDNN fused SDPA" or "fallback kernel (<why cuDNN was not used>)".
  const std::string& attn1_backend() const;
  const std::string& attn2_backend() const;
  /// Per-linear "name: scaling mode" lines.
  std::vector<std::string> linear_report() const;
  LtxBlockIntermediates intermediates() const;
  /// Device bytes of activations + workspaces the block allocated at build (0 with an external arena).
  size_t device_bytes() const;
  /// Bytes of the arena the block uses (its own or the external one's used part).
  size_t arena_used_bytes() const;

  struct Impl;

 private:
  explicit LtxBlock(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws::flow
