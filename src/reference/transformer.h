#pragma once
/// \file transformer.h
/// CPU oracle for the transformer ops of LTX-Video (diffusers 0.42.1 `LTXVideoTransformer3DModel`):
/// RMSNorm, LayerNorm, AdaLN modulation, LTX RoPE, GELU-tanh, SiLU, linear, SDPA, gated residual and
/// the timestep sinusoid. Plain C++ over raw float32 pointers, row-major (C order), never links CUDA.
/// The exact math follows shared/research/ltx-video-and-streaming.md sections 1.2-1.5, which cite
/// diffusers' transformer_ltx.py, normalization.py, embeddings.py, attention_dispatch.py.
///
/// Conventions:
///  - Every tensor is dense row-major; shapes are written outermost first ([rows, dim] = dim contiguous).
///  - A "token tensor" is [batch, seq, dim]. A "modulation row" is `dim` contiguous floats; modulation
///    rows are addressed by (b, s') with s' = 0 for per-sample modulation (mod_seq = 1) and s' = s for
///    per-token modulation (mod_seq = seq); row (b, s') starts at `mod + (b * mod_seq + s') * mod_stride`.
///    mod_stride >= dim lets a caller point shift/scale/gate straight into the block's [B, S', 6, D] AdaLN
///    values (mod_stride = 6 * D) without copying.
///  - Reductions (norm statistics, dot products, softmax sums) accumulate in double; elementwise math is
///    done in float in the same order as PyTorch, so fp32 PyTorch goldens match to ~1e-6 relative.
///  - Functions never allocate unless stated; callers size every output. In-place (y == x) is allowed where
///    stated. Dims are not validated here (the LTX block/model entry points validate theirs).
///  - `linear` and `sdpa` split their outer loop over std::thread workers (reference_threads()); results do
///    not depend on the thread count (each output is computed by exactly one thread in a fixed order).

#include <cstdint>

namespace ws::ref {

/// Worker threads used by linear() and sdpa(): WS_REF_THREADS if set (>= 1), else
/// std::thread::hardware_concurrency() (at least 1). Read once per process.
int reference_threads();

// ---------------------------------------------------------------------------------------------
// Normalisation

/// RMSNorm over the last dim (diffusers RMSNorm / torch.nn.RMSNorm):
///   y[r, i] = x[r, i] * rsqrt(mean_i(x[r, :]^2) + eps) * (weight ? weight[i] : 1)
/// x, y: [rows, dim]; weight: [dim] or nullptr (no affine). In-place allowed.
/// LTX uses it with weight = nullptr, eps = 1e-6 (block norm1/norm2) and with the learned weight,
/// eps = 1e-5, across ALL heads (attn norm_q / norm_k over the full inner dim).
void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t dim, float eps);

/// LayerNorm without affine (torch.nn.LayerNorm(dim, eps, elementwise_affine=False)):
///   y[r, i] = (x[r, i] - mean) * rsqrt(var + eps), var = biased (population) variance over dim.
/// x, y: [rows, dim]. In-place allowed. LTX's output head uses eps = 1e-6.
void layer_norm_noaffine(const float* x, float* y, int64_t rows, int64_t dim, float eps);

// ---------------------------------------------------------------------------------------------
// AdaLN modulation and residuals

/// y[b, s, i] = x[b, s, i] * (1 + scale[m, i]) + shift[m, i], m = modulation row (b, s') (see top).
/// x, y: [batch, seq, dim]; shift, scale: modulation rows (mod_seq = 1 or seq; stride mod_stride >= dim).
/// Evaluated as diffusers does: (1 + scale) rounded to float first, then x * that, then + shift.
/// In-place allowed.
void adaln_modulate(const float* x, const float* shift, const float* scale, float* y, int64_t batch,
                    int64_t seq, int64_t dim, int64_t mod_seq, int64_t mod_stride);

/// x[b, s, i] += y[b, s, i] * gate[m, i] (gate: modulation rows as in adaln_modulate), or
/// x += y when gate == nullptr (LTX's cross-attention residual has no gate).
/// x, y: [batch, seq, dim].
void gated_residual(float* x, const float* y, const float* gate, int64_t batch, int64_t seq, int64_t dim,
                    int64_t mod_seq, int64_t mod_stride);

// ---------------------------------------------------------------------------------------------
// Rotary position embedding (LTX-Video, `LTXVideoRotaryPosEmbed` + `apply_rotary_emb`)

/// Parameters of LTX's RoPE. dim is the FULL inner dim (heads * head_dim): RoPE is applied to the
/// whole [.., dim] q/k before the head split.
struct LtxRopeParams {
  int64_t dim = 2048;
  float theta = 10000.0f;
  float base_frames = 20.0f, base_height = 2048.0f, base_width = 2048.0f;
  int64_t patch_size = 1, patch_size_t = 1;
};

/// cos, sin: [seq, dim] with seq = frames * height * width, tokens in (f, h, w) row-major order
/// (the packing order of the latents). Coordinates:
///   scale == nullptr: c = (f, h, w) as raw integers (diffusers with rope_interpolation_scale None);
///   scale = {s0, s1, s2}: c = (f * s0 * patch_size_t / base_frames, h * s1 * patch_size / base_height,
///                              w * s2 * patch_size / base_width)   (LTXPipeline passes (8/fps, 32, 32)).
/// Frequencies: n = dim / 6, freq[k] = theta ^ linspace(0, 1, n)[k] * pi / 2 (float, torch's linspace
/// formula). Angle for pair index p = 3k + a (axis a = 0 f, 1 h, 2 w): freq[k] * (2 * c[a] - 1).
/// Each angle fills 2 adjacent entries (repeat_interleave(2)). Layout along dim:
///   [0, pad) : cos = 1, sin = 0 (pad = dim % 6, the unrotated LEADING entries);
///   pad + 2p, pad + 2p + 1 : cos/sin of angle p, p = 0 .. 3n-1.
/// Every step is done in float in diffusers' order. linspace uses ATen's scalar formula (that of its CUDA
/// kernel); CPU torch's vectorised linspace rounds some entries 1 ulp differently (27 of 341 for D = 2048), and
/// powf implementations differ by an ulp, so at full size the largest angles (~1.6e4 rad) can move by a few
/// 1e-3 rad against a torch-on-CPU table (measured max |cos diff| 1.7e-3 at D = 2048). Small dims (n <= 5)
/// match torch exactly.
void ltx_rope_tables(const LtxRopeParams& params, int64_t frames, int64_t height, int64_t width,
                     const float* scale, float* cos, float* sin);

/// Same tables from explicit coordinates (diffusers' `video_coords` path, LTXConditionPipeline):
/// coords: [3, seq] in pixel-like units (row 0 frame, 1 height, 2 width); c = coords / base_* (no patch
/// factors, no interpolation scale). cos, sin: [seq, dim].
void ltx_rope_tables_from_coords(const LtxRopeParams& params, const float* coords, int64_t seq, float* cos,
                                 float* sin);

/// Interleaved-pair RoPE on x: [rows, dim] with tables cos, sin: [rows, dim] (row r of x uses row r of
/// the tables; for a [batch, seq, dim] tensor call once per batch with rows = seq):
///   y[2i]   = x[2i]   * cos[2i]   - x[2i+1] * sin[2i]
///   y[2i+1] = x[2i+1] * cos[2i+1] + x[2i]   * sin[2i+1]
/// (diffusers: out = x * cos + rotate(x) * sin, rotate(x) pairs = (-x[2i+1], x[2i])). dim must be even.
/// In-place allowed.
void rope_apply_interleaved(const float* x, const float* cos, const float* sin, float* y, int64_t rows,
                            int64_t dim);

// ---------------------------------------------------------------------------------------------
// Activations

/// y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  (torch GELU approximate="tanh").
/// In-place allowed.
void gelu_tanh(const float* x, float* y, int64_t count);
/// y = x / (1 + exp(-x))  (torch SiLU). In-place allowed.
void silu(const float* x, float* y, int64_t count);

// ---------------------------------------------------------------------------------------------
// Linear and attention

/// torch.nn.Linear: y[m, n] = sum_k x[m, k] * w[n, k] + (bias ? bias[n] : 0).
/// x: [M, K], w: [N, K] (PyTorch's [out, in] weight layout), bias: [N] or nullptr, y: [M, N].
/// Double accumulation (each output one sequential sum over k: bitwise independent of tiling and thread count).
/// y must not alias x or w. Threaded over rows of y; W is cache-tiled (~256 KiB of rows reused by 4 rows of x),
/// about 5 GFLOP/s per core, so a full 2B block at S = 6144 takes ~1 min on 16 cores.
void linear(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t n, int64_t k);

/// Scaled dot-product attention (torch F.scaled_dot_product_attention, not causal), per batch b, head h,
/// query i:
///   out[b, i, h, :] = sum_j softmax_j(scale * q[b, i, h, :] . k[b, j, h, :] + bias[b, j]) * v[b, j, h, :]
/// Layout "BSHD": q, out: [batch, sq, heads, head_dim]; k, v: [batch, skv, heads, head_dim] — i.e. the
/// [batch, seq, heads * head_dim] projection outputs as they are, head h at columns h*head_dim ...
/// bias: additive [batch, skv] broadcast over heads and queries (LTX's cross-attention mask bias,
/// (1 - mask) * -10000), or nullptr. scale <= 0 means 1 / sqrt(head_dim) (the LTX value).
/// Softmax in double, numerically stable (max subtracted). out must not alias q, k, v. Threaded over
/// (b, h). Allocates O(skv) scratch per thread.
void sdpa(const float* q, const float* k, const float* v, const float* bias, float* out, int64_t batch,
          int64_t heads, int64_t sq, int64_t skv, int64_t head_dim, float scale = 0.0f);

// ---------------------------------------------------------------------------------------------
// Timestep embedding

/// diffusers get_timestep_embedding(t, channels, flip_sin_to_cos, downscale_freq_shift, scale=1,
/// max_period): half = channels / 2, freq[i] = exp(-ln(max_period) * i / (half - downscale_freq_shift))
/// (float, in torch's order), arg = t * freq[i];
///   flip_sin_to_cos: out[n] = [cos(arg_0..half-1), sin(arg_0..half-1)]  (LTX: cos FIRST)
///   else:            out[n] = [sin(...), cos(...)]
/// and a zero last column when channels is odd. t: [count]; out: [count, channels].
/// LTX: channels 256, flip_sin_to_cos true, downscale_freq_shift 0, max_period 10000.
void timestep_sinusoid(const float* t, float* out, int64_t count, int64_t channels, bool flip_sin_to_cos = true,
                       float downscale_freq_shift = 0.0f, float max_period = 10000.0f);

}  // namespace ws::ref
