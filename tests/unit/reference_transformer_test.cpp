// reference_transformer_test.cpp — the LTX transformer ops of src/reference/transformer.h on small cases
// with hand-computed values and identities (RMSNorm of constant rows, RoPE with zero angle = identity and a
// pi/2 rotation, SDPA with one key = the value, GELU-tanh at known points), plus block-level identities of
// src/reference/ltx.h (zero gates + zero cross-attention = identity; batch and per-token consistency) and the
// 2B/13B parameter counts from the research notes. The diffusers goldens are in ltx_reference_golden_test.cpp.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "reference/ltx.h"
#include "reference/transformer.h"

namespace ws::ref {
namespace {

uint32_t test_seed(uint32_t fallback) {
  if (const char* env = std::getenv("WS_SEED")) return static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
  return fallback;
}

std::vector<float> randn(size_t n, std::mt19937& rng, float sd = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(ReferenceTransformer, RmsNormConstantRowsAndHandValues) {
  const float x[6] = {2, 2, 2, -3, -3, -3};
  float y[6];
  rms_norm(x, nullptr, y, 2, 3, 0.0f);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(y[i], 1.0f);
  for (int i = 3; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], -1.0f);
  const float w[3] = {0.5f, 2.0f, -1.0f};
  rms_norm(x, w, y, 2, 3, 0.0f);
  EXPECT_FLOAT_EQ(y[0], 0.5f);
  EXPECT_FLOAT_EQ(y[1], 2.0f);
  EXPECT_FLOAT_EQ(y[2], -1.0f);
  EXPECT_FLOAT_EQ(y[4], -2.0f);
  // [3, 4]: mean square 12.5; eps enters under the root.
  const float h[2] = {3, 4};
  float g[2];
  rms_norm(h, nullptr, g, 1, 2, 1e-6f);
  EXPECT_NEAR(g[0], 3.0 / std::sqrt(12.5 + 1e-6), 1e-7);
  EXPECT_NEAR(g[1], 4.0 / std::sqrt(12.5 + 1e-6), 1e-7);
  // A zero row stays zero (eps keeps it finite).
  const float z[4] = {0, 0, 0, 0};
  float zy[4];
  rms_norm(z, nullptr, zy, 1, 4, 1e-6f);
  for (float v : zy) EXPECT_EQ(v, 0.0f);
  // In place.
  float ip[3] = {2, 2, 2};
  rms_norm(ip, nullptr, ip, 1, 3, 0.0f);
  EXPECT_FLOAT_EQ(ip[1], 1.0f);
}

TEST(ReferenceTransformer, LayerNormNoAffine) {
  const float x[8] = {1, 2, 3, 4, 5, 5, 5, 5};
  float y[8];
  layer_norm_noaffine(x, y, 2, 4, 1e-6f);
  const double inv = 1.0 / std::sqrt(1.25 + 1e-6);  // mean 2.5, population variance 1.25
  EXPECT_NEAR(y[0], -1.5 * inv, 1e-6);
  EXPECT_NEAR(y[1], -0.5 * inv, 1e-6);
  EXPECT_NEAR(y[2], 0.5 * inv, 1e-6);
  EXPECT_NEAR(y[3], 1.5 * inv, 1e-6);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(y[i], 0.0f);  // constant row -> 0
}

TEST(ReferenceTransformer, AdalnModulatePerSampleAndPerTokenWithStride) {
  // B=2, S=2, D=2. Modulation rows live in a [B, S', 3, D] table (stride 3*D): shift at 0, scale at D.
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  // per-sample (S' = 1): row b = {shift[2], scale[2], unused[2]}
  const float mod_ps[12] = {10, 20, 1, -1, 99, 99,   // b=0: shift (10,20), scale (1,-1)
                            0, 0, 0.5f, 0, 99, 99};  // b=1: shift 0, scale (0.5, 0)
  float y[8];
  adaln_modulate(x, mod_ps, mod_ps + 2, y, 2, 2, 2, 1, 6);
  const float want_ps[8] = {1 * 2 + 10, 2 * 0 + 20, 3 * 2 + 10, 4 * 0 + 20, 5 * 1.5f, 6, 7 * 1.5f, 8};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], want_ps[i]) << i;
  // per-token (S' = S): row (b, s) = index b*2 + s.
  std::vector<float> mod_pt(4 * 6, 0.0f);
  for (int r = 0; r < 4; ++r) {
    mod_pt[r * 6 + 0] = static_cast<float>(r);        // shift[0] = r
    mod_pt[r * 6 + 3] = static_cast<float>(r) - 1.0f; // scale[1] = r - 1
  }
  adaln_modulate(x, mod_pt.data(), mod_pt.data() + 2, y, 2, 2, 2, 2, 6);
  for (int r = 0; r < 4; ++r) {
    EXPECT_FLOAT_EQ(y[r * 2 + 0], x[r * 2 + 0] + static_cast<float>(r)) << r;
    EXPECT_FLOAT_EQ(y[r * 2 + 1], x[r * 2 + 1] * static_cast<float>(r)) << r;
  }
}

TEST(ReferenceTransformer, GatedResidual) {
  float x[4] = {1, 1, 1, 1};
  const float y[4] = {2, 3, 4, 5};
  gated_residual(x, y, nullptr, 1, 2, 2, 1, 2);  // plain add
  EXPECT_FLOAT_EQ(x[0], 3);
  EXPECT_FLOAT_EQ(x[3], 6);
  const float gate[4] = {0, 1, -1, 0.5f};  // per-token rows (S' = S = 2), stride 2
  float z[4] = {0, 0, 0, 0};
  gated_residual(z, y, gate, 1, 2, 2, 2, 2);
  EXPECT_FLOAT_EQ(z[0], 0);
  EXPECT_FLOAT_EQ(z[1], 3);
  EXPECT_FLOAT_EQ(z[2], -4);
  EXPECT_FLOAT_EQ(z[3], 2.5f);
}

TEST(ReferenceTransformer, RopeZeroAngleIsIdentityAndHalfPiRotates) {
  const int64_t d = 6;
  const float x[d] = {1, 2, 3, 4, 5, 6};
  std::vector<float> cos1(d, 1.0f), sin0(d, 0.0f), cos0(d, 0.0f), sin1(d, 1.0f);
  float y[d];
  rope_apply_interleaved(x, cos1.data(), sin0.data(), y, 1, d);
  for (int i = 0; i < d; ++i) EXPECT_EQ(y[i], x[i]);
  rope_apply_interleaved(x, cos0.data(), sin1.data(), y, 1, d);  // pairs (a, b) -> (-b, a)
  const float want[d] = {-2, 1, -4, 3, -6, 5};
  for (int i = 0; i < d; ++i) EXPECT_EQ(y[i], want[i]);
  // Rotating twice by pi/2 negates; a generic angle preserves the pair norm.
  rope_apply_interleaved(y, cos0.data(), sin1.data(), y, 1, d);
  for (int i = 0; i < d; ++i) EXPECT_EQ(y[i], -x[i]);
  std::vector<float> c(d, std::cos(0.3f)), s(d, std::sin(0.3f));
  rope_apply_interleaved(x, c.data(), s.data(), y, 1, d);
  for (int i = 0; i < d; i += 2)
    EXPECT_NEAR(std::hypot(y[i], y[i + 1]), std::hypot(x[i], x[i + 1]), 1e-5);
}

TEST(ReferenceTransformer, LtxRopeTablesLayoutAndPadding) {
  // dim 16: n = 2 frequencies (1 and 10000, times pi/2), pad = 4 leading (cos 1, sin 0).
  LtxRopeParams p;
  p.dim = 16;
  const int64_t f = 2, h = 3, w = 4, s = f * h * w;
  std::vector<float> cos(s * p.dim), sin(s * p.dim);
  ltx_rope_tables(p, f, h, w, nullptr, cos.data(), sin.data());
  const double freq[2] = {M_PI / 2, 10000.0 * M_PI / 2};
  for (int64_t tok = 0; tok < s; ++tok) {
    const int64_t c[3] = {tok / (h * w), (tok / w) % h, tok % w};  // (f, h, w) row-major
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(cos[tok * 16 + i], 1.0f);
      EXPECT_EQ(sin[tok * 16 + i], 0.0f);
    }
    for (int k = 0; k < 2; ++k)
      for (int a = 0; a < 3; ++a) {
        const double angle = freq[k] * (2.0 * static_cast<double>(c[a]) - 1.0);
        const int64_t at = tok * 16 + 4 + 2 * (3 * k + a);
        // The k = 1 angles reach 10000 * pi/2 * 5 = 78540 rad: float angle rounding (ulp 0.0078) dominates.
        const double tol = k == 0 ? 1e-6 : 2e-2;
        EXPECT_NEAR(cos[at], std::cos(angle), tol) << "token " << tok << " k " << k << " axis " << a;
        EXPECT_NEAR(sin[at], std::sin(angle), tol) << "token " << tok << " k " << k << " axis " << a;
        EXPECT_EQ(cos[at], cos[at + 1]);
        EXPECT_EQ(sin[at], sin[at + 1]);
      }
  }
  // Token (0, 1, 2) k = 0: angles -pi/2, pi/2, 3pi/2 -> sin -1, 1, -1.
  const int64_t tok = 0 * h * w + 1 * w + 2;
  EXPECT_NEAR(sin[tok * 16 + 4], -1.0f, 1e-6);
  EXPECT_NEAR(sin[tok * 16 + 6], 1.0f, 1e-6);
  EXPECT_NEAR(sin[tok * 16 + 8], -1.0f, 1e-6);
}

TEST(ReferenceTransformer, LtxRopeScaledGridMatchesCoordsAndFormula) {
  LtxRopeParams p;
  p.dim = 32;  // n = 5, pad 2 (as the 2B model: 2048 % 6 = 2)
  const float scale[3] = {8.0f / 25.0f, 32.0f, 32.0f};
  const int64_t f = 3, h = 2, w = 5, s = f * h * w;
  std::vector<float> cos(s * p.dim), sin(s * p.dim), cos2(cos.size()), sin2(sin.size());
  ltx_rope_tables(p, f, h, w, scale, cos.data(), sin.data());
  std::vector<float> coords(3 * s);
  for (int64_t tok = 0; tok < s; ++tok) {
    coords[tok] = static_cast<float>(tok / (h * w)) * scale[0];
    coords[s + tok] = static_cast<float>((tok / w) % h) * scale[1];
    coords[2 * s + tok] = static_cast<float>(tok % w) * scale[2];
  }
  ltx_rope_tables_from_coords(p, coords.data(), s, cos2.data(), sin2.data());
  EXPECT_EQ(cos, cos2);
  EXPECT_EQ(sin, sin2);
  // Formula in double: freq_k = 10000^(k/4) * pi/2, coordinate = grid * scale / base.
  for (int64_t tok = 0; tok < s; ++tok) {
    const double c[3] = {(tok / (h * w)) * (8.0 / 25.0) / 20.0, ((tok / w) % h) * 32.0 / 2048.0,
                         (tok % w) * 32.0 / 2048.0};
    EXPECT_EQ(cos[tok * 32 + 0], 1.0f);
    EXPECT_EQ(sin[tok * 32 + 1], 0.0f);
    for (int k = 0; k < 5; ++k)
      for (int a = 0; a < 3; ++a) {
        const double angle = std::pow(10000.0, k / 4.0) * M_PI / 2 * (2 * c[a] - 1);
        const int64_t at = tok * 32 + 2 + 2 * (3 * k + a);
        EXPECT_NEAR(cos[at], std::cos(angle), 2e-3) << tok << " " << k << " " << a;
        EXPECT_NEAR(sin[at], std::sin(angle), 2e-3) << tok << " " << k << " " << a;
      }
  }
}

TEST(ReferenceTransformer, GeluTanhAndSiluKnownPoints) {
  // torch.nn.functional.gelu(x, approximate="tanh") and silu in float64.
  const float x[7] = {0.0f, 1.0f, -1.0f, 2.0f, 0.5f, 10.0f, -10.0f};
  const double gelu[7] = {0.0, 0.8411919906082768, -0.15880800939172324, 1.9545976940877752, 0.34571400982514394,
                          10.0, 0.0};
  float y[7];
  gelu_tanh(x, y, 7);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(y[i], gelu[i], 2e-7) << "x = " << x[i];
  const double si[7] = {0.0, 0.7310585786300049, -0.2689414213699951, 1.7615941559557649, 0.3112296656009104,
                        9.999546021312975, -4.5397868702434395e-04};
  silu(x, y, 7);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(y[i], si[i], 1e-6 * std::max(1.0, std::fabs(si[i]))) << "x = " << x[i];
}

TEST(ReferenceTransformer, LinearHandValuesAndThreadedMatchesNaive) {
  const float x[4] = {1, 2, 3, 4};       // [2, 2]
  const float w[6] = {1, 0, 0, 1, 1, 1}; // [3, 2] ([out, in])
  const float b[3] = {0.5f, -1, 0};
  float y[6];
  linear(x, w, b, y, 2, 3, 2);
  const float want[6] = {1.5f, 1, 3, 3.5f, 3, 7};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], want[i]);
  linear(x, w, nullptr, y, 2, 3, 2);
  EXPECT_FLOAT_EQ(y[0], 1);
  // Big enough to split over threads (M*N*K >= 1e6).
  const uint32_t seed = test_seed(1234);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (WS_SEED to reproduce)");
  std::mt19937 rng(seed);
  const int64_t m = 96, n = 80, k = 160;
  auto xs = randn(m * k, rng), ws = randn(n * k, rng), bs = randn(n, rng);
  std::vector<float> ys(m * n);
  linear(xs.data(), ws.data(), bs.data(), ys.data(), m, n, k);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bs[j];
      for (int64_t q = 0; q < k; ++q) acc += static_cast<double>(xs[i * k + q]) * ws[j * k + q];
      ASSERT_NEAR(ys[i * n + j], acc, 1e-5 * std::max(1.0, std::fabs(acc))) << "row " << i << " col " << j;
    }
}

TEST(ReferenceTransformer, SdpaOneKeyUniformAndMasked) {
  const int64_t heads = 2, dh = 3;
  // One key: the output is that key's value for every query, whatever q and the bias are.
  const float q[2 * 6] = {1, -2, 3, 0.5f, 7, -1, /*query 1*/ 0, 0, 0, 9, 9, 9};
  const float k1[6] = {4, 5, 6, -1, -2, -3};
  const float v1[6] = {0.25f, -0.5f, 2, 8, 9, 10};
  const float bias1[1] = {-5.0f};
  float out[12];
  sdpa(q, k1, v1, bias1, out, 1, heads, 2, 1, dh);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 6; ++j) EXPECT_FLOAT_EQ(out[i * 6 + j], v1[j]);
  // q = 0: uniform weights -> mean of the values.
  const float qz[6] = {0, 0, 0, 0, 0, 0};
  const float k3[18] = {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2, 7, 7, 7, 0, 0, 1};
  const float v3[18] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
  sdpa(qz, k3, v3, nullptr, out, 1, heads, 1, 3, dh);
  for (int j = 0; j < 6; ++j) EXPECT_FLOAT_EQ(out[j], (v3[j] + v3[6 + j] + v3[12 + j]) / 3.0f);
  // LTX mask bias -10000 on keys 0 and 2: only key 1 survives.
  const float bias3[3] = {-10000.0f, 0.0f, -10000.0f};
  sdpa(qz, k3, v3, bias3, out, 1, heads, 1, 3, dh);
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(out[j], v3[6 + j], 1e-6);
}

TEST(ReferenceTransformer, SdpaMatchesNaiveBshdWithBiasPerBatch) {
  const uint32_t seed = test_seed(77);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (WS_SEED to reproduce)");
  std::mt19937 rng(seed);
  const int64_t b = 2, h = 3, sq = 5, skv = 7, dh = 4, row = h * dh;
  auto q = randn(b * sq * row, rng), k = randn(b * skv * row, rng), v = randn(b * skv * row, rng);
  auto bias = randn(b * skv, rng, 2.0f);
  std::vector<float> out(b * sq * row);
  sdpa(q.data(), k.data(), v.data(), bias.data(), out.data(), b, h, sq, skv, dh);
  for (int64_t bb = 0; bb < b; ++bb)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t i = 0; i < sq; ++i) {
        std::vector<double> p(skv);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < skv; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < dh; ++d)
            dot += static_cast<double>(q[(bb * sq + i) * row + hh * dh + d]) * k[(bb * skv + j) * row + hh * dh + d];
          p[j] = dot / 2.0 + bias[bb * skv + j];  // 1/sqrt(4)
          mx = std::max(mx, p[j]);
        }
        for (auto& e : p) sum += (e = std::exp(e - mx));
        for (int64_t d = 0; d < dh; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < skv; ++j) acc += p[j] / sum * v[(bb * skv + j) * row + hh * dh + d];
          ASSERT_NEAR(out[(bb * sq + i) * row + hh * dh + d], acc, 1e-6)
              << "b " << bb << " h " << hh << " i " << i << " d " << d;
        }
      }
}

TEST(ReferenceTransformer, TimestepSinusoidCosFirst) {
  const float t[2] = {0.0f, 1.0f};
  std::vector<float> out(2 * 256);
  timestep_sinusoid(t, out.data(), 2, 256);
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(out[i], 1.0f);          // cos(0)
    EXPECT_EQ(out[128 + i], 0.0f);    // sin(0)
  }
  EXPECT_FLOAT_EQ(out[256 + 0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(out[256 + 128], std::sin(1.0f));
  const double f1 = std::exp(-std::log(10000.0) / 128.0);
  EXPECT_NEAR(out[256 + 1], std::cos(f1), 1e-6);
  EXPECT_NEAR(out[256 + 129], std::sin(f1), 1e-6);
  const double f127 = std::exp(-std::log(10000.0) * 127.0 / 128.0);
  EXPECT_NEAR(out[256 + 127], std::cos(f127), 1e-6);
  // flip_sin_to_cos = false: sin first; odd channel count: zero last column.
  std::vector<float> o2(7);
  timestep_sinusoid(t + 1, o2.data(), 1, 7, false, 1.0f);
  EXPECT_FLOAT_EQ(o2[0], std::sin(1.0f));
  EXPECT_FLOAT_EQ(o2[3], std::cos(1.0f));
  EXPECT_NEAR(o2[1], std::sin(std::exp(-std::log(10000.0) / 2.0)), 1e-6);  // shift 1: i / (3 - 1)
  EXPECT_EQ(o2[6], 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Block identities

struct RandomBlock {
  LtxBlockConfig cfg;
  std::vector<std::vector<float>> store;
  LtxBlockWeights w;
  RandomBlock(const LtxBlockConfig& c, uint32_t seed) : cfg(c) {
    std::mt19937 rng(seed);
    const int64_t d = c.dim();
    auto take = [&](int64_t n, float sd, float mean = 0.0f) {
      store.push_back(randn(n, rng, sd));
      for (auto& v : store.back()) v += mean;
      return store.back().data();
    };
    w.scale_shift_table = take(6 * d, 0.3f);
    for (LtxAttentionWeights* a : {&w.attn1, &w.attn2}) {
      const int64_t ckv = a == &w.attn1 ? d : c.cross_dim;
      a->to_q = {take(d * d, 0.3f), take(d, 0.1f)};
      a->to_k = {take(d * ckv, 0.3f), take(d, 0.1f)};
      a->to_v = {take(d * ckv, 0.3f), take(d, 0.1f)};
      a->to_out = {take(d * d, 0.3f), take(d, 0.1f)};
      a->norm_q = take(d, 0.2f, 1.0f);
      a->norm_k = take(d, 0.2f, 1.0f);
    }
    w.ff_in = {take(c.ff_inner * d, 0.2f), take(c.ff_inner, 0.1f)};
    w.ff_out = {take(d * c.ff_inner, 0.2f), take(d, 0.1f)};
  }
};

LtxBlockConfig small_block() {
  LtxBlockConfig c;
  c.heads = 2; c.head_dim = 6; c.cross_dim = 10; c.ff_inner = 48;
  return c;
}

TEST(ReferenceLtxBlock, ZeroGatesAndZeroCrossAttentionIsIdentity) {
  // gate_msa = gate_mlp = 0 (temb cancels scale_shift_table rows 2 and 5) and attn2.to_out = 0: x must come back
  // unchanged. A wrong modulation split order would gate with a non-zero row and change x.
  const uint32_t seed = test_seed(5);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (WS_SEED to reproduce)");
  const LtxBlockConfig c = small_block();
  RandomBlock blk(c, seed);
  const int64_t d = c.dim(), b = 2, s = 12, t = 5;
  std::vector<float> zeros_w(d * d, 0.0f), zeros_b(d, 0.0f);
  blk.w.attn2.to_out = {zeros_w.data(), zeros_b.data()};
  std::mt19937 rng(seed + 1);
  auto x = randn(b * s * d, rng), enc = randn(b * t * c.cross_dim, rng);
  auto temb = randn(b * 6 * d, rng);
  for (int64_t bb = 0; bb < b; ++bb)
    for (int64_t i = 0; i < d; ++i) {
      temb[bb * 6 * d + 2 * d + i] = -blk.w.scale_shift_table[2 * d + i];
      temb[bb * 6 * d + 5 * d + i] = -blk.w.scale_shift_table[5 * d + i];
    }
  std::vector<float> cos(s * d), sin(s * d);
  LtxRopeParams rp;
  rp.dim = d;
  ltx_rope_tables(rp, 2, 2, 3, nullptr, cos.data(), sin.data());
  std::vector<float> y = x;
  LtxBlockArgs a;
  a.batch = b; a.seq = s; a.text_seq = t; a.hidden = y.data(); a.encoder = enc.data(); a.temb = temb.data();
  a.rope_cos = cos.data(); a.rope_sin = sin.data();
  LtxBlockIntermediates inter;
  ASSERT_TRUE(ltx_block_forward(c, blk.w, a, &inter).is_ok());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << "index " << i;
  // ... while the branches themselves are not zero (the identity is not vacuous).
  double attn1 = 0, ff = 0;
  for (float v : inter.attn1_out) attn1 = std::max(attn1, std::fabs(static_cast<double>(v)));
  for (float v : inter.ff_out) ff = std::max(ff, std::fabs(static_cast<double>(v)));
  EXPECT_GT(attn1, 1e-2);
  EXPECT_GT(ff, 1e-2);
  EXPECT_EQ(inter.q_rope.size(), static_cast<size_t>(b * s * d));
}

TEST(ReferenceLtxBlock, BatchOfTwoEqualsTwoBatchesOfOneAndPerTokenEqualsPerSample) {
  const uint32_t seed = test_seed(9);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (WS_SEED to reproduce)");
  const LtxBlockConfig c = small_block();
  RandomBlock blk(c, seed);
  const int64_t d = c.dim(), b = 2, s = 12, t = 5;
  std::mt19937 rng(seed + 1);
  auto x = randn(b * s * d, rng), enc = randn(b * t * c.cross_dim, rng), temb = randn(b * 6 * d, rng, 0.5f);
  std::vector<float> bias(b * t, 0.0f);
  bias[t - 1] = -10000.0f;  // sample 0: last text token masked
  bias[t + 1] = -10000.0f;  // sample 1: token 1 masked
  std::vector<float> cos(s * d), sin(s * d);
  LtxRopeParams rp;
  rp.dim = d;
  const float scale[3] = {0.32f, 32.0f, 32.0f};
  ltx_rope_tables(rp, 2, 3, 2, scale, cos.data(), sin.data());
  auto run = [&](int64_t batch, float* hidden, const float* e, const float* te, int64_t temb_seq, const float* bi) {
    LtxBlockArgs a;
    a.batch = batch; a.seq = s; a.text_seq = t; a.temb_seq = temb_seq; a.hidden = hidden; a.encoder = e;
    a.temb = te; a.rope_cos = cos.data(); a.rope_sin = sin.data(); a.mask_bias = bi;
    ASSERT_TRUE(ltx_block_forward(c, blk.w, a).is_ok());
  };
  std::vector<float> both = x;
  run(2, both.data(), enc.data(), temb.data(), 1, bias.data());
  for (int64_t bb = 0; bb < b; ++bb) {
    std::vector<float> one(x.begin() + bb * s * d, x.begin() + (bb + 1) * s * d);
    run(1, one.data(), enc.data() + bb * t * c.cross_dim, temb.data() + bb * 6 * d, 1, bias.data() + bb * t);
    for (int64_t i = 0; i < s * d; ++i) ASSERT_EQ(one[i], both[bb * s * d + i]) << "batch " << bb << " index " << i;
  }
  // Per-token temb with every token's row equal to its sample's row == per-sample temb.
  std::vector<float> temb_tok(b * s * 6 * d);
  for (int64_t bb = 0; bb < b; ++bb)
    for (int64_t ss = 0; ss < s; ++ss)
      std::copy(temb.begin() + bb * 6 * d, temb.begin() + (bb + 1) * 6 * d, temb_tok.begin() + (bb * s + ss) * 6 * d);
  std::vector<float> tok = x;
  run(2, tok.data(), enc.data(), temb_tok.data(), s, bias.data());
  EXPECT_EQ(tok, both);
  // The mask matters: without it the output changes.
  std::vector<float> nomask = x;
  run(2, nomask.data(), enc.data(), temb.data(), 1, nullptr);
  EXPECT_NE(nomask, both);
}

TEST(ReferenceLtxBlock, RejectsBadArguments) {
  const LtxBlockConfig c = small_block();
  RandomBlock blk(c, 1);
  const int64_t d = c.dim();
  std::vector<float> x(4 * d), enc(3 * c.cross_dim), temb(6 * d), cos(4 * d), sin(4 * d);
  LtxBlockArgs a;
  a.batch = 1; a.seq = 4; a.text_seq = 3; a.temb_seq = 2;
  a.hidden = x.data(); a.encoder = enc.data(); a.temb = temb.data(); a.rope_cos = cos.data(); a.rope_sin = sin.data();
  Status st = ltx_block_forward(c, blk.w, a);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("temb_seq 2 must be 1 or seq 4"), std::string::npos) << st.message();
  a.temb_seq = 1;
  LtxBlockWeights w = blk.w;
  w.attn2.norm_k = nullptr;
  st = ltx_block_forward(c, w, a);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("attn2.norm_k.weight"), std::string::npos) << st.message();
  EXPECT_TRUE(ltx_block_forward(c, blk.w, a).is_ok());
}

TEST(ReferenceLtxModel, ParameterCountsMatchTheResearchNotes) {
  auto count = [](const std::vector<LtxTensorSpec>& specs) {
    int64_t n = 0;
    for (const auto& s : specs) n += std::accumulate(s.shape.begin(), s.shape.end(), int64_t{1}, std::multiplies<>());
    return n;
  };
  EXPECT_EQ(ltx_block_tensor_specs(LtxBlockConfig::ltx_2b()).size(), 25u);
  EXPECT_EQ(count(ltx_block_tensor_specs(LtxBlockConfig::ltx_2b())), 67155968);
  EXPECT_EQ(count(ltx_block_tensor_specs(LtxBlockConfig::ltx_13b())), 268529664);
  EXPECT_EQ(count(ltx_model_tensor_specs(LtxModelConfig::ltx_2b())), 1923385472);
  EXPECT_EQ(count(ltx_model_tensor_specs(LtxModelConfig::ltx_13b())), 13042569344);
  const auto specs = ltx_model_tensor_specs(LtxModelConfig::tiny());
  EXPECT_EQ(specs.front().name, "proj_in.weight");
  EXPECT_EQ(specs.back().name, "proj_out.bias");
  EXPECT_EQ(specs[13].name, "transformer_blocks.0.scale_shift_table");
}

}  // namespace
}  // namespace ws::ref
