#pragma once
/// \file ltx_config.h
/// LTX-Video transformer configuration read from diffusers' config.json
/// (`LTXVideoTransformer3DModel.__init__` arguments, diffusers 0.42.1,
/// src/diffusers/models/transformers/transformer_ltx.py; ../shared/research/ltx-video-and-streaming.md 1.1).
/// Host-only. Fields absent from the JSON keep diffusers' defaults (the 2B values below), as diffusers
/// does; keys starting with '_' (_class_name, _diffusers_version, ...) are metadata and not required.
///
/// Refused, each with one error naming the field and the value (kInvalidModel; kUnsupported where
/// diffusers accepts the value but this runtime does not implement it):
///   - not JSON, not an object, a key twice;
///   - _class_name present and not "LTXVideoTransformer3DModel";
///   - integer fields that are not integers in [1, 1<<20] (in/out_channels, patch sizes, heads,
///     head_dim, cross_attention_dim, num_layers, caption_channels); norm_eps not a number in (0, 1);
///   - activation_fn other than "gelu-approximate" (kUnsupported);
///   - qk_norm other than "rms_norm_across_heads" (diffusers' only accepted value);
///   - norm_elementwise_affine true, attention_bias / attention_out_bias false (kUnsupported: the
///     block follows diffusers' LTX checkpoints, which all have biases and no norm affine);
///   - boolean fields that are not booleans.

#include <cstdint>
#include <string>
#include <string_view>

#include "warpstream/status.h"

namespace ws::flow {

struct LtxConfig {
  int64_t in_channels = 128;
  int64_t out_channels = 128;
  int64_t patch_size = 1;
  int64_t patch_size_t = 1;
  int64_t num_attention_heads = 32;
  int64_t attention_head_dim = 64;
  int64_t cross_attention_dim = 2048;
  int64_t num_layers = 28;
  int64_t caption_channels = 4096;
  float norm_eps = 1e-6f;
  bool attention_bias = true;
  bool attention_out_bias = true;

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }  ///< D
  int64_t ff_inner_dim() const { return 4 * inner_dim(); }                        ///< GELU-tanh FF, mult 4
};

/// Parses config.json text; `source` (a path) names it in messages.
Result<LtxConfig> parse_ltx_config(std::string_view json_text, const std::string& source);

}  // namespace ws::flow
