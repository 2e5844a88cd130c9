#pragma once
/// \file ltx.h
/// CPU oracle of LTX-Video's transformer as diffusers 0.42.1 computes it (`LTXVideoTransformerBlock`,
/// `LTXVideoTransformer3DModel`), fp32, row-major, built from the ops in transformer.h. It is the reference
/// the GPU block/model are checked against and the no-GPU path. Never links CUDA, never reads files
/// (weights come in as raw float pointers; a loader elsewhere maps a checkpoint onto LtxModelWeights).
/// Math: shared/research/ltx-video-and-streaming.md sections 1.2 (model), 1.3 (block), 1.4 (RoPE),
/// 1.5 (attention); goldens: tools/ltx_goldens.py -> tests/data/ltx_tiny/.
///
/// Shapes: B batch, S video tokens (= F * H * W latent grid, patch 1), T text tokens, D inner dim
/// (= heads * head_dim), C cross-attention dim (= D in every LTX checkpoint: the caption projection
/// maps to D), S' = 1 (per-sample timestep) or S (per-token timestep). All tensors fp32 row-major.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/transformer.h"
#include "warpstream/status.h"

namespace ws::ref {

// ---------------------------------------------------------------------------------------------
// One block

struct LtxBlockConfig {
  int64_t heads = 32;
  int64_t head_dim = 64;
  int64_t cross_dim = 2048;  ///< in-features of attn2.to_k / to_v (= D in LTX checkpoints)
  int64_t ff_inner = 8192;   ///< FeedForward inner dim (mult 4: 4 * D)
  float norm_eps = 1e-6f;    ///< norm1 / norm2 (RMSNorm, no affine)
  float qk_norm_eps = 1e-5f; ///< attn norm_q / norm_k (torch.nn.RMSNorm over the full inner dim, affine)
  int64_t dim() const { return heads * head_dim; }
  /// 2B block: 32 x 64, cross 2048, FF 8192. 13B block: 32 x 128, cross 4096, FF 16384.
  static LtxBlockConfig ltx_2b() { return {}; }
  static LtxBlockConfig ltx_13b() { return {32, 128, 4096, 16384}; }
};

/// torch.nn.Linear parameters: weight [out, in] (row-major, PyTorch layout), bias [out] (nullptr = none).
struct LtxLinear {
  const float* weight = nullptr;
  const float* bias = nullptr;
};

/// `LTXAttention` parameters; key suffixes under "<prefix>attn1." / "<prefix>attn2.":
///   to_q.weight [D, D], to_q.bias [D]          to_k.weight [D, Ckv], to_k.bias [D]
///   to_v.weight [D, Ckv], to_v.bias [D]        to_out.0.weight [D, D], to_out.0.bias [D]
///   norm_q.weight [D], norm_k.weight [D]       (Ckv = D for attn1, cross_dim for attn2)
struct LtxAttentionWeights {
  LtxLinear to_q, to_k, to_v, to_out;
  const float* norm_q = nullptr;  ///< [D], required
  const float* norm_k = nullptr;  ///< [D], required
};

/// `LTXVideoTransformerBlock` parameters; diffusers keys (prefix "transformer_blocks.<i>." in the model):
///   scale_shift_table [6, D]                      -> scale_shift_table
///   attn1.* (self-attention, Ckv = D)             -> attn1
///   attn2.* (cross-attention, Ckv = cross_dim)    -> attn2
///   ff.net.0.proj.weight [ff_inner, D], .bias     -> ff_in   (then GELU-tanh)
///   ff.net.2.weight [D, ff_inner], .bias          -> ff_out
/// norm1 / norm2 have no parameters.
struct LtxBlockWeights {
  const float* scale_shift_table = nullptr;  ///< [6, D]: rows shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp
  LtxAttentionWeights attn1, attn2;
  LtxLinear ff_in, ff_out;
};

/// Activations of one block call.
struct LtxBlockArgs {
  int64_t batch = 1;
  int64_t seq = 0;       ///< S
  int64_t text_seq = 0;  ///< T
  int64_t temb_seq = 1;  ///< S': 1 (per-sample temb) or S (per-token temb)
  int64_t rope_batch = 1;///< 1 (tables shared by the batch) or B (per-sample tables, video_coords path)
  float* hidden = nullptr;            ///< [B, S, D] in: block input; out: block output (in place)
  const float* encoder = nullptr;     ///< [B, T, cross_dim] (the caption-projected text states)
  const float* temb = nullptr;        ///< [B, S', 6 * D] time_embed output (before adding scale_shift_table)
  const float* rope_cos = nullptr;    ///< [rope_batch, S, D] (ltx_rope_tables)
  const float* rope_sin = nullptr;    ///< [rope_batch, S, D]
  const float* mask_bias = nullptr;   ///< [B, T] additive bias for attn2 ((1 - mask) * -10000), or nullptr
};

/// Optional per-stage copies (each [B, S, D]), filled when a pointer is passed to ltx_block_forward.
/// Names match tools/ltx_goldens.py's "block<i>.<name>" tensors.
struct LtxBlockIntermediates {
  std::vector<float> norm1_mod;    ///< RMSNorm(x) * (1 + scale_msa) + shift_msa (attn1's input)
  std::vector<float> q_rope;       ///< attn1: norm_q(to_q(norm1_mod)) after RoPE (before head split)
  std::vector<float> k_rope;       ///< attn1: norm_k(to_k(norm1_mod)) after RoPE
  std::vector<float> attn1_out;    ///< attn1 output after to_out (before the gate)
  std::vector<float> hidden_attn1; ///< x + attn1_out * gate_msa
  std::vector<float> attn2_out;    ///< attn2(hidden_attn1, encoder, mask) after to_out
  std::vector<float> hidden_attn2; ///< hidden_attn1 + attn2_out
  std::vector<float> norm2_mod;    ///< RMSNorm(hidden_attn2) * (1 + scale_mlp) + shift_mlp
  std::vector<float> ff_out;       ///< FF(norm2_mod) (before the gate); block output = hidden_attn2 + ff_out * gate_mlp
};

/// One `LTXVideoTransformerBlock.forward` (diffusers), in place on args.hidden:
///   ada = scale_shift_table + temb (as [B, S', 6, D]); split shift_msa, scale_msa, gate_msa, shift_mlp,
///   scale_mlp, gate_mlp (that order);
///   n = RMSNorm(x, eps=norm_eps) * (1 + scale_msa) + shift_msa
///   x = x + attn1(n, rope) * gate_msa            (self-attention, no mask)
///   x = x + attn2(x, encoder, mask_bias)         (cross-attention on the UN-normalised x, no gate)
///   n = RMSNorm(x) * (1 + scale_mlp) + shift_mlp
///   x = x + ff_out(gelu_tanh(ff_in(n))) * gate_mlp
/// attn(xq, xkv): q = norm_q(to_q(xq)), k = norm_k(to_k(xkv)) (RMSNorm over the whole D, eps qk_norm_eps,
/// learned weight), v = to_v(xkv); RoPE on q and k (attn1 only, full D, before the head split); SDPA over
/// heads (BSHD, scale 1/sqrt(head_dim), additive mask bias broadcast over heads and queries); to_out.
/// Errors (invalid argument, naming the field): non-positive dims, temb_seq not 1 or S, rope_batch not 1
/// or B, a null required pointer (every weight except biases; mask_bias may be null).
/// Allocates its scratch (about 4 * B * S * max(D, ff_inner) floats + B*T*D*2).
Status ltx_block_forward(const LtxBlockConfig& config, const LtxBlockWeights& weights, const LtxBlockArgs& args,
                         LtxBlockIntermediates* intermediates = nullptr);

// ---------------------------------------------------------------------------------------------
// Whole model

/// diffusers' `LTXVideoTransformer3DModel` config (config.json field names in comments).
struct LtxModelConfig {
  int64_t in_channels = 128;        ///< in_channels
  int64_t out_channels = 128;       ///< out_channels
  int64_t patch_size = 1;           ///< patch_size (RoPE coordinate factor; latents arrive packed)
  int64_t patch_size_t = 1;         ///< patch_size_t
  int64_t heads = 32;               ///< num_attention_heads
  int64_t head_dim = 64;            ///< attention_head_dim
  int64_t cross_dim = 2048;         ///< cross_attention_dim
  int64_t num_layers = 28;          ///< num_layers
  int64_t caption_channels = 4096;  ///< caption_channels
  float norm_eps = 1e-6f;           ///< norm_eps (block RMSNorms; norm_out is LayerNorm eps 1e-6 fixed)
  int64_t timestep_channels = 256;  ///< Timesteps(num_channels=256) — fixed in diffusers
  int64_t dim() const { return heads * head_dim; }
  int64_t ff_inner() const { return 4 * dim(); }
  LtxBlockConfig block() const {
    LtxBlockConfig b;
    b.heads = heads; b.head_dim = head_dim; b.cross_dim = cross_dim; b.ff_inner = ff_inner();
    b.norm_eps = norm_eps;
    return b;
  }
  LtxRopeParams rope() const {
    LtxRopeParams r;
    r.dim = dim(); r.patch_size = patch_size; r.patch_size_t = patch_size_t;
    return r;
  }
  /// 2B (0.9.0/0.9.1/0.9.5): 32 x 64, cross 2048, 28 layers. 13B (0.9.7): 32 x 128, cross 4096, 48 layers.
  /// tiny: diffusers' unit-test config (in/out 4, 2 x 8, cross 16, caption 16, 1 layer).
  static LtxModelConfig ltx_2b() { return {}; }
  static LtxModelConfig ltx_13b() {
    LtxModelConfig c; c.head_dim = 128; c.cross_dim = 4096; c.num_layers = 48; return c;
  }
  static LtxModelConfig tiny() {
    LtxModelConfig c;
    c.in_channels = 4; c.out_channels = 4; c.heads = 2; c.head_dim = 8; c.cross_dim = 16;
    c.num_layers = 1; c.caption_channels = 16;
    return c;
  }
};

/// Whole-model parameters (diffusers keys -> field):
///   proj_in.weight [D, in], .bias [D]                                    -> proj_in
///   scale_shift_table [2, D] (row 0 shift, row 1 scale)                  -> scale_shift_table
///   time_embed.emb.timestep_embedder.linear_1.weight [D, 256], .bias     -> time_linear_1
///   time_embed.emb.timestep_embedder.linear_2.weight [D, D], .bias       -> time_linear_2
///   time_embed.linear.weight [6D, D], .bias [6D]                         -> time_linear
///   caption_projection.linear_1.weight [D, caption_channels], .bias      -> caption_linear_1
///   caption_projection.linear_2.weight [D, D], .bias                     -> caption_linear_2
///   transformer_blocks.<i>.*                                             -> blocks[i] (LtxBlockWeights)
///   proj_out.weight [out, D], .bias [out]                                -> proj_out
struct LtxModelWeights {
  LtxLinear proj_in;
  const float* scale_shift_table = nullptr;
  LtxLinear time_linear_1, time_linear_2, time_linear;
  LtxLinear caption_linear_1, caption_linear_2;
  std::vector<LtxBlockWeights> blocks;
  LtxLinear proj_out;
};

/// Inputs of one forward (diffusers' forward arguments).
struct LtxModelInputs {
  int64_t batch = 1;
  int64_t frames = 1, height = 1, width = 1;  ///< latent grid; S = frames * height * width
  int64_t text_seq = 0;                       ///< T
  const float* hidden_states = nullptr;       ///< [B, S, in_channels] packed latents
  const float* encoder_hidden_states = nullptr;///< [B, T, caption_channels]
  const float* timestep = nullptr;            ///< [B] (timestep_seq 1) or [B, S] (timestep_seq S)
  int64_t timestep_seq = 1;
  const float* encoder_attention_mask = nullptr; ///< [B, T], 1 keep / 0 drop (-> (1 - m) * -10000), or nullptr
  const float* rope_interpolation_scale = nullptr; ///< [3] or nullptr (raw integer coordinates)
  const float* video_coords = nullptr;        ///< [B, 3, S] (overrides grid + scale when set), or nullptr
};

/// Optional whole-model intermediates (names match tools/ltx_goldens.py's model tensors).
struct LtxModelIntermediates {
  std::vector<float> rope_cos, rope_sin;      ///< [rope_batch, S, D] (rope_batch = B with video_coords, else 1)
  std::vector<float> mask_bias;               ///< [B, T] (empty without a mask)
  std::vector<float> proj_in;                 ///< [B, S, D]
  std::vector<float> timestep_proj;           ///< [B * S', 256] sinusoid
  std::vector<float> embedded_timestep;       ///< [B, S', D]
  std::vector<float> temb;                    ///< [B, S', 6D]
  std::vector<float> caption;                 ///< [B, T, D] caption_projection output
  std::vector<std::vector<float>> block_out;  ///< per block [B, S, D]
  std::vector<float> norm_out_mod;            ///< [B, S, D] LayerNorm(x) * (1 + scale) + shift (before proj_out)
  LtxBlockIntermediates block0;               ///< intermediates of block 0
};

/// `LTXVideoTransformer3DModel.forward` (diffusers 0.42.1, research section 1.2):
///   cos, sin = RoPE tables (grid + optional scale, or video_coords); bias = (1 - mask) * -10000;
///   x = proj_in(hidden_states);
///   e = timestep_embedder(sinusoid256(timestep, cos first))  (linear_1 -> SiLU -> linear_2) = embedded_timestep
///   temb = time_linear(silu(e))  ([B, S', 6D]);  enc = caption_linear_2(gelu_tanh(caption_linear_1(encoder)))
///   x = block_i(x, enc, temb, rope, bias) for each block
///   shift = scale_shift_table[0] + e, scale = scale_shift_table[1] + e
///   out = proj_out(LayerNorm_noaffine(x, 1e-6) * (1 + scale) + shift)   -> out [B, S, out_channels]
/// Errors (invalid argument, naming the field): blocks.size() != num_layers, cross_dim != D (the caption
/// projection maps to D, so diffusers itself requires it), a null required pointer (biases may be null),
/// timestep_seq not 1 or S, non-positive dims.
/// Allocates its activations.
Status ltx_model_forward(const LtxModelConfig& config, const LtxModelWeights& weights, const LtxModelInputs& inputs,
                         float* out, LtxModelIntermediates* intermediates = nullptr);

// ---------------------------------------------------------------------------------------------
// Parameter names and shapes (for loaders, checkpoint writers and tests)

struct LtxTensorSpec {
  std::string name;            ///< diffusers key
  std::vector<int64_t> shape;  ///< PyTorch shape ([out, in] for Linear weights)
};
/// The 25 tensors of one block under `prefix` (e.g. "transformer_blocks.3."), in a fixed order:
/// scale_shift_table, attn1.{to_q,to_k,to_v,to_out.0}.{weight,bias}, attn1.norm_{q,k}.weight, the same for
/// attn2, ff.net.0.proj.{weight,bias}, ff.net.2.{weight,bias}.
std::vector<LtxTensorSpec> ltx_block_tensor_specs(const LtxBlockConfig& config, const std::string& prefix = "");
/// Every tensor of the model: non-block tensors first (proj_in, scale_shift_table, time_embed.*,
/// caption_projection.*), then the blocks in order, then proj_out.
std::vector<LtxTensorSpec> ltx_model_tensor_specs(const LtxModelConfig& config);

/// Returns the fp32 data of one tensor (row-major, spec.shape) or the error that explains why not (missing,
/// wrong shape, wrong dtype — the lookup's message is passed through unchanged).
using LtxTensorLookup = std::function<Result<const float*>(const LtxTensorSpec& spec)>;
/// Fills LtxModelWeights by calling `lookup` once per ltx_model_tensor_specs(config) entry (in that order);
/// the first failing lookup's Status is returned. The pointers must outlive the returned weights.
Result<LtxModelWeights> ltx_bind_model_weights(const LtxModelConfig& config, const LtxTensorLookup& lookup);
/// Same for one block whose keys carry `prefix` (e.g. "" for a block file, "transformer_blocks.3." in a model).
Result<LtxBlockWeights> ltx_bind_block_weights(const LtxBlockConfig& config, const std::string& prefix,
                                               const LtxTensorLookup& lookup);

}  // namespace ws::ref
