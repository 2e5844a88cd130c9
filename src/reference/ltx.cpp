// CPU oracle of LTX-Video's transformer block and whole model (see ltx.h; diffusers 0.42.1 order).
#include "reference/ltx.h"

#include <string>
#include <vector>

namespace ws::ref {
namespace {

Status require(bool ok, const std::string& what) {
  return ok ? Status::ok() : invalid_argument("LTX reference: " + what);
}

Status check_linear(const LtxLinear& l, const std::string& name) {
  return require(l.weight != nullptr, "weight '" + name + ".weight' is null");
}

Status check_attention(const LtxAttentionWeights& a, const std::string& name) {
  WS_RETURN_IF_ERROR(check_linear(a.to_q, name + ".to_q"));
  WS_RETURN_IF_ERROR(check_linear(a.to_k, name + ".to_k"));
  WS_RETURN_IF_ERROR(check_linear(a.to_v, name + ".to_v"));
  WS_RETURN_IF_ERROR(check_linear(a.to_out, name + ".to_out.0"));
  WS_RETURN_IF_ERROR(require(a.norm_q != nullptr, "weight '" + name + ".norm_q.weight' is null"));
  return require(a.norm_k != nullptr, "weight '" + name + ".norm_k.weight' is null");
}

/// attention(xq [B, Sq, D], xkv [B, Skv, Ckv]) -> out [B, Sq, D] through to_out. q_keep/k_keep (nullable)
/// receive q and k after norm (+ RoPE).
void attention(const LtxBlockConfig& c, const LtxAttentionWeights& w, const float* xq, const float* xkv,
               int64_t batch, int64_t sq, int64_t skv, int64_t ckv, const float* cos, const float* sin,
               int64_t rope_batch, const float* bias, float* out, std::vector<float>* q_keep,
               std::vector<float>* k_keep) {
  const int64_t d = c.dim();
  std::vector<float> q(static_cast<size_t>(batch * sq * d));
  std::vector<float> k(static_cast<size_t>(batch * skv * d));
  std::vector<float> v(static_cast<size_t>(batch * skv * d));
  std::vector<float> o(static_cast<size_t>(batch * sq * d));
  linear(xq, w.to_q.weight, w.to_q.bias, q.data(), batch * sq, d, d);
  linear(xkv, w.to_k.weight, w.to_k.bias, k.data(), batch * skv, d, ckv);
  linear(xkv, w.to_v.weight, w.to_v.bias, v.data(), batch * skv, d, ckv);
  rms_norm(q.data(), w.norm_q, q.data(), batch * sq, d, c.qk_norm_eps);
  rms_norm(k.data(), w.norm_k, k.data(), batch * skv, d, c.qk_norm_eps);
  if (cos != nullptr) {  // self-attention only: sq == skv == S
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t rb = rope_batch == 1 ? 0 : b;
      const float* cb = cos + rb * sq * d;
      const float* sb = sin + rb * sq * d;
      rope_apply_interleaved(q.data() + b * sq * d, cb, sb, q.data() + b * sq * d, sq, d);
      rope_apply_interleaved(k.data() + b * skv * d, cb, sb, k.data() + b * skv * d, skv, d);
    }
  }
  if (q_keep != nullptr) *q_keep = q;
  if (k_keep != nullptr) *k_keep = k;
  sdpa(q.data(), k.data(), v.data(), bias, o.data(), batch, c.heads, sq, skv, c.head_dim);
  linear(o.data(), w.to_out.weight, w.to_out.bias, out, batch * sq, d, d);
}

}  // namespace

Status ltx_block_forward(const LtxBlockConfig& config, const LtxBlockWeights& weights, const LtxBlockArgs& args,
                         LtxBlockIntermediates* inter) {
  const int64_t d = config.dim();
  const int64_t b = args.batch, s = args.seq, t = args.text_seq, sp = args.temb_seq;
  WS_RETURN_IF_ERROR(require(config.heads > 0 && config.head_dim > 0 && config.cross_dim > 0 && config.ff_inner > 0,
                             "block config needs positive heads, head_dim, cross_dim, ff_inner (got " +
                                 std::to_string(config.heads) + ", " + std::to_string(config.head_dim) + ", " +
                                 std::to_string(config.cross_dim) + ", " + std::to_string(config.ff_inner) + ")"));
  WS_RETURN_IF_ERROR(require(d % 2 == 0, "inner dim " + std::to_string(d) + " must be even for RoPE"));
  WS_RETURN_IF_ERROR(require(b > 0 && s > 0 && t > 0, "batch, seq, text_seq must be positive (got " +
                                                          std::to_string(b) + ", " + std::to_string(s) + ", " +
                                                          std::to_string(t) + ")"));
  WS_RETURN_IF_ERROR(require(sp == 1 || sp == s, "temb_seq " + std::to_string(sp) + " must be 1 or seq " +
                                                     std::to_string(s)));
  WS_RETURN_IF_ERROR(require(args.rope_batch == 1 || args.rope_batch == b,
                             "rope_batch " + std::to_string(args.rope_batch) + " must be 1 or batch " +
                                 std::to_string(b)));
  WS_RETURN_IF_ERROR(require(args.hidden != nullptr && args.encoder != nullptr && args.temb != nullptr &&
                                 args.rope_cos != nullptr && args.rope_sin != nullptr,
                             "block args: hidden, encoder, temb, rope_cos and rope_sin are required"));
  WS_RETURN_IF_ERROR(require(weights.scale_shift_table != nullptr, "weight 'scale_shift_table' is null"));
  WS_RETURN_IF_ERROR(check_attention(weights.attn1, "attn1"));
  WS_RETURN_IF_ERROR(check_attention(weights.attn2, "attn2"));
  WS_RETURN_IF_ERROR(check_linear(weights.ff_in, "ff.net.0.proj"));
  WS_RETURN_IF_ERROR(check_linear(weights.ff_out, "ff.net.2"));

  const int64_t tokens = b * s;
  const size_t act = static_cast<size_t>(tokens * d);
  float* x = args.hidden;

  // ada = scale_shift_table[None, None] + temb.reshape(B, S', 6, D)
  std::vector<float> ada(static_cast<size_t>(b * sp * 6 * d));
  for (int64_t r = 0; r < b * sp; ++r)
    for (int64_t j = 0; j < 6 * d; ++j)
      ada[static_cast<size_t>(r * 6 * d + j)] = weights.scale_shift_table[j] + args.temb[r * 6 * d + j];
  const int64_t stride = 6 * d;
  const float* shift_msa = ada.data() + 0 * d;
  const float* scale_msa = ada.data() + 1 * d;
  const float* gate_msa = ada.data() + 2 * d;
  const float* shift_mlp = ada.data() + 3 * d;
  const float* scale_mlp = ada.data() + 4 * d;
  const float* gate_mlp = ada.data() + 5 * d;

  std::vector<float> n(act), a(act);
  rms_norm(x, nullptr, n.data(), tokens, d, config.norm_eps);
  adaln_modulate(n.data(), shift_msa, scale_msa, n.data(), b, s, d, sp, stride);
  if (inter != nullptr) inter->norm1_mod = n;

  attention(config, weights.attn1, n.data(), n.data(), b, s, s, d, args.rope_cos, args.rope_sin, args.rope_batch,
            nullptr, a.data(), inter != nullptr ? &inter->q_rope : nullptr,
            inter != nullptr ? &inter->k_rope : nullptr);
  if (inter != nullptr) inter->attn1_out = a;
  gated_residual(x, a.data(), gate_msa, b, s, d, sp, stride);
  if (inter != nullptr) inter->hidden_attn1.assign(x, x + act);

  attention(config, weights.attn2, x, args.encoder, b, s, t, config.cross_dim, nullptr, nullptr, 1, args.mask_bias,
            a.data(), nullptr, nullptr);
  if (inter != nullptr) inter->attn2_out = a;
  gated_residual(x, a.data(), nullptr, b, s, d, 1, d);
  if (inter != nullptr) inter->hidden_attn2.assign(x, x + act);

  rms_norm(x, nullptr, n.data(), tokens, d, config.norm_eps);
  adaln_modulate(n.data(), shift_mlp, scale_mlp, n.data(), b, s, d, sp, stride);
  if (inter != nullptr) inter->norm2_mod = n;
  std::vector<float> h(static_cast<size_t>(tokens * config.ff_inner));
  linear(n.data(), weights.ff_in.weight, weights.ff_in.bias, h.data(), tokens, config.ff_inner, d);
  gelu_tanh(h.data(), h.data(), tokens * config.ff_inner);
  linear(h.data(), weights.ff_out.weight, weights.ff_out.bias, a.data(), tokens, d, config.ff_inner);
  if (inter != nullptr) inter->ff_out = a;
  gated_residual(x, a.data(), gate_mlp, b, s, d, sp, stride);
  return Status::ok();
}

Status ltx_model_forward(const LtxModelConfig& config, const LtxModelWeights& weights, const LtxModelInputs& in,
                         float* out, LtxModelIntermediates* inter) {
  const int64_t d = config.dim();
  const int64_t b = in.batch, t = in.text_seq;
  WS_RETURN_IF_ERROR(require(config.heads > 0 && config.head_dim > 0 && config.in_channels > 0 &&
                                 config.out_channels > 0 && config.caption_channels > 0 && config.num_layers >= 0,
                             "model config needs positive heads, head_dim, in/out/caption channels"));
  WS_RETURN_IF_ERROR(require(config.cross_dim == d, "cross_attention_dim " + std::to_string(config.cross_dim) +
                                                        " must equal the inner dim " + std::to_string(d) +
                                                        " (the caption projection maps to the inner dim)"));
  WS_RETURN_IF_ERROR(require(b > 0 && t > 0 && in.frames > 0 && in.height > 0 && in.width > 0,
                             "batch, text_seq and the latent grid must be positive (got batch " + std::to_string(b) +
                                 ", text_seq " + std::to_string(t) + ", grid " + std::to_string(in.frames) + "x" +
                                 std::to_string(in.height) + "x" + std::to_string(in.width) + ")"));
  const int64_t s = in.frames * in.height * in.width;
  WS_RETURN_IF_ERROR(require(in.timestep_seq == 1 || in.timestep_seq == s,
                             "timestep_seq " + std::to_string(in.timestep_seq) + " must be 1 or seq " +
                                 std::to_string(s)));
  WS_RETURN_IF_ERROR(require(static_cast<int64_t>(weights.blocks.size()) == config.num_layers,
                             "weights hold " + std::to_string(weights.blocks.size()) + " blocks, config num_layers " +
                                 std::to_string(config.num_layers)));
  WS_RETURN_IF_ERROR(require(in.hidden_states != nullptr && in.encoder_hidden_states != nullptr &&
                                 in.timestep != nullptr && out != nullptr,
                             "inputs: hidden_states, encoder_hidden_states, timestep and out are required"));
  WS_RETURN_IF_ERROR(check_linear(weights.proj_in, "proj_in"));
  WS_RETURN_IF_ERROR(require(weights.scale_shift_table != nullptr, "weight 'scale_shift_table' is null"));
  WS_RETURN_IF_ERROR(check_linear(weights.time_linear_1, "time_embed.emb.timestep_embedder.linear_1"));
  WS_RETURN_IF_ERROR(check_linear(weights.time_linear_2, "time_embed.emb.timestep_embedder.linear_2"));
  WS_RETURN_IF_ERROR(check_linear(weights.time_linear, "time_embed.linear"));
  WS_RETURN_IF_ERROR(check_linear(weights.caption_linear_1, "caption_projection.linear_1"));
  WS_RETURN_IF_ERROR(check_linear(weights.caption_linear_2, "caption_projection.linear_2"));
  WS_RETURN_IF_ERROR(check_linear(weights.proj_out, "proj_out"));

  // 1. RoPE tables.
  const LtxRopeParams rp = config.rope();
  const int64_t rope_batch = in.video_coords != nullptr ? b : 1;
  std::vector<float> cos(static_cast<size_t>(rope_batch * s * d)), sin(cos.size());
  if (in.video_coords != nullptr) {
    for (int64_t i = 0; i < b; ++i)
      ltx_rope_tables_from_coords(rp, in.video_coords + i * 3 * s, s, cos.data() + i * s * d, sin.data() + i * s * d);
  } else {
    ltx_rope_tables(rp, in.frames, in.height, in.width, in.rope_interpolation_scale, cos.data(), sin.data());
  }
  // 2. Mask -> additive bias.
  std::vector<float> bias;
  if (in.encoder_attention_mask != nullptr) {
    bias.resize(static_cast<size_t>(b * t));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = (1.0f - in.encoder_attention_mask[i]) * -10000.0f;
  }
  // 3. proj_in.
  std::vector<float> x(static_cast<size_t>(b * s * d));
  linear(in.hidden_states, weights.proj_in.weight, weights.proj_in.bias, x.data(), b * s, d, config.in_channels);
  if (inter != nullptr) inter->proj_in = x;
  // 4. time_embed.
  const int64_t sp = in.timestep_seq;
  const int64_t nt = b * sp;
  const int64_t tc = config.timestep_channels;
  std::vector<float> tproj(static_cast<size_t>(nt * tc));
  timestep_sinusoid(in.timestep, tproj.data(), nt, tc, true, 0.0f, 10000.0f);
  std::vector<float> e1(static_cast<size_t>(nt * d)), emb(static_cast<size_t>(nt * d));
  linear(tproj.data(), weights.time_linear_1.weight, weights.time_linear_1.bias, e1.data(), nt, d, tc);
  silu(e1.data(), e1.data(), nt * d);
  linear(e1.data(), weights.time_linear_2.weight, weights.time_linear_2.bias, emb.data(), nt, d, d);
  std::vector<float> temb(static_cast<size_t>(nt * 6 * d));
  silu(emb.data(), e1.data(), nt * d);
  linear(e1.data(), weights.time_linear.weight, weights.time_linear.bias, temb.data(), nt, 6 * d, d);
  // 5. caption_projection.
  std::vector<float> c1(static_cast<size_t>(b * t * d)), enc(static_cast<size_t>(b * t * d));
  linear(in.encoder_hidden_states, weights.caption_linear_1.weight, weights.caption_linear_1.bias, c1.data(), b * t, d,
         config.caption_channels);
  gelu_tanh(c1.data(), c1.data(), b * t * d);
  linear(c1.data(), weights.caption_linear_2.weight, weights.caption_linear_2.bias, enc.data(), b * t, d, d);
  if (inter != nullptr) {
    inter->rope_cos = cos;
    inter->rope_sin = sin;
    inter->mask_bias = bias;
    inter->timestep_proj = tproj;
    inter->embedded_timestep = emb;
    inter->temb = temb;
    inter->caption = enc;
    inter->block_out.clear();
  }
  // 6. Blocks.
  const LtxBlockConfig bc = config.block();
  for (int64_t l = 0; l < config.num_layers; ++l) {
    LtxBlockArgs a;
    a.batch = b; a.seq = s; a.text_seq = t; a.temb_seq = sp; a.rope_batch = rope_batch;
    a.hidden = x.data(); a.encoder = enc.data(); a.temb = temb.data();
    a.rope_cos = cos.data(); a.rope_sin = sin.data();
    a.mask_bias = bias.empty() ? nullptr : bias.data();
    Status st = ltx_block_forward(bc, weights.blocks[static_cast<size_t>(l)], a,
                                  (inter != nullptr && l == 0) ? &inter->block0 : nullptr);
    if (!st.is_ok()) return {st.code(), "block " + std::to_string(l) + ": " + st.message()};
    if (inter != nullptr) inter->block_out.push_back(x);
  }
  // 7. Output head: shift = sst[0] + e, scale = sst[1] + e; LayerNorm (no affine, eps 1e-6).
  std::vector<float> ss(static_cast<size_t>(nt * 2 * d));
  for (int64_t r = 0; r < nt; ++r)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < d; ++i)
        ss[static_cast<size_t>((r * 2 + j) * d + i)] = weights.scale_shift_table[j * d + i] + emb[r * d + i];
  layer_norm_noaffine(x.data(), x.data(), b * s, d, 1e-6f);
  adaln_modulate(x.data(), ss.data(), ss.data() + d, x.data(), b, s, d, sp, 2 * d);
  if (inter != nullptr) inter->norm_out_mod = x;
  linear(x.data(), weights.proj_out.weight, weights.proj_out.bias, out, b * s, config.out_channels, d);
  return Status::ok();
}

std::vector<LtxTensorSpec> ltx_block_tensor_specs(const LtxBlockConfig& c, const std::string& p) {
  const int64_t d = c.dim();
  std::vector<LtxTensorSpec> v;
  v.push_back({p + "scale_shift_table", {6, d}});
  for (const char* attn : {"attn1", "attn2"}) {
    const int64_t ckv = std::string(attn) == "attn1" ? d : c.cross_dim;
    const std::string a = p + attn + ".";
    v.push_back({a + "to_q.weight", {d, d}});
    v.push_back({a + "to_q.bias", {d}});
    v.push_back({a + "to_k.weight", {d, ckv}});
    v.push_back({a + "to_k.bias", {d}});
    v.push_back({a + "to_v.weight", {d, ckv}});
    v.push_back({a + "to_v.bias", {d}});
    v.push_back({a + "to_out.0.weight", {d, d}});
    v.push_back({a + "to_out.0.bias", {d}});
    v.push_back({a + "norm_q.weight", {d}});
    v.push_back({a + "norm_k.weight", {d}});
  }
  v.push_back({p + "ff.net.0.proj.weight", {c.ff_inner, d}});
  v.push_back({p + "ff.net.0.proj.bias", {c.ff_inner}});
  v.push_back({p + "ff.net.2.weight", {d, c.ff_inner}});
  v.push_back({p + "ff.net.2.bias", {d}});
  return v;
}

std::vector<LtxTensorSpec> ltx_model_tensor_specs(const LtxModelConfig& c) {
  const int64_t d = c.dim();
  std::vector<LtxTensorSpec> v = {
      {"proj_in.weight", {d, c.in_channels}},
      {"proj_in.bias", {d}},
      {"scale_shift_table", {2, d}},
      {"time_embed.emb.timestep_embedder.linear_1.weight", {d, c.timestep_channels}},
      {"time_embed.emb.timestep_embedder.linear_1.bias", {d}},
      {"time_embed.emb.timestep_embedder.linear_2.weight", {d, d}},
      {"time_embed.emb.timestep_embedder.linear_2.bias", {d}},
      {"time_embed.linear.weight", {6 * d, d}},
      {"time_embed.linear.bias", {6 * d}},
      {"caption_projection.linear_1.weight", {d, c.caption_channels}},
      {"caption_projection.linear_1.bias", {d}},
      {"caption_projection.linear_2.weight", {d, d}},
      {"caption_projection.linear_2.bias", {d}},
  };
  const LtxBlockConfig bc = c.block();
  for (int64_t l = 0; l < c.num_layers; ++l) {
    auto blk = ltx_block_tensor_specs(bc, "transformer_blocks." + std::to_string(l) + ".");
    v.insert(v.end(), blk.begin(), blk.end());
  }
  v.push_back({"proj_out.weight", {c.out_channels, d}});
  v.push_back({"proj_out.bias", {c.out_channels}});
  return v;
}

Result<LtxBlockWeights> ltx_bind_block_weights(const LtxBlockConfig& config, const std::string& prefix,
                                               const LtxTensorLookup& lookup) {
  const std::vector<LtxTensorSpec> specs = ltx_block_tensor_specs(config, prefix);
  std::vector<const float*> p;
  p.reserve(specs.size());
  for (const LtxTensorSpec& s : specs) {
    Result<const float*> r = lookup(s);
    if (!r.is_ok()) return r.status();
    p.push_back(r.value());
  }
  // Order of ltx_block_tensor_specs: sst, attn1 (q w b, k w b, v w b, out w b, norm_q, norm_k), attn2, ff.
  LtxBlockWeights w;
  w.scale_shift_table = p[0];
  size_t i = 1;
  for (LtxAttentionWeights* a : {&w.attn1, &w.attn2}) {
    a->to_q = {p[i], p[i + 1]};
    a->to_k = {p[i + 2], p[i + 3]};
    a->to_v = {p[i + 4], p[i + 5]};
    a->to_out = {p[i + 6], p[i + 7]};
    a->norm_q = p[i + 8];
    a->norm_k = p[i + 9];
    i += 10;
  }
  w.ff_in = {p[i], p[i + 1]};
  w.ff_out = {p[i + 2], p[i + 3]};
  return w;
}

Result<LtxModelWeights> ltx_bind_model_weights(const LtxModelConfig& config, const LtxTensorLookup& lookup) {
  const std::vector<LtxTensorSpec> specs = ltx_model_tensor_specs(config);
  auto get = [&](size_t i) { return lookup(specs[i]); };
  LtxModelWeights w;
  const float* p[13];
  for (size_t i = 0; i < 13; ++i) {
    Result<const float*> r = get(i);
    if (!r.is_ok()) return r.status();
    p[i] = r.value();
  }
  w.proj_in = {p[0], p[1]};
  w.scale_shift_table = p[2];
  w.time_linear_1 = {p[3], p[4]};
  w.time_linear_2 = {p[5], p[6]};
  w.time_linear = {p[7], p[8]};
  w.caption_linear_1 = {p[9], p[10]};
  w.caption_linear_2 = {p[11], p[12]};
  const LtxBlockConfig bc = config.block();
  for (int64_t l = 0; l < config.num_layers; ++l) {
    Result<LtxBlockWeights> b = ltx_bind_block_weights(bc, "transformer_blocks." + std::to_string(l) + ".", lookup);
    if (!b.is_ok()) return b.status();
    w.blocks.push_back(b.value());
  }
  const size_t last = specs.size() - 2;
  for (size_t i = 0; i < 2; ++i) {
    Result<const float*> r = get(last + i);
    if (!r.is_ok()) return r.status();
    (i == 0 ? w.proj_out.weight : w.proj_out.bias) = r.value();
  }
  return w;
}

}  // namespace ws::ref
