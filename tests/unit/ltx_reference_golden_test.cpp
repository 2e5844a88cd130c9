// ltx_reference_golden_test.cpp — the CPU LTX-Video reference (src/reference/ltx.h) against diffusers 0.42.1
// itself: tests/data/ltx_tiny/ was written by `tools/ltx_goldens.py --case tiny` (random weights, fp32, CPU torch).
// Two checks per golden case:
//   1. every block alone, fed diffusers' own block input, temb, caption, RoPE tables and mask bias, compared per
//      intermediate (norm1_mod, q_rope, k_rope, attn1_out, hidden_attn1, attn2_out, hidden_attn2, norm2_mod,
//      ff_out, out) — isolates the block from upstream error;
//   2. the whole forward from the raw inputs, compared per stage (RoPE tables, mask bias, proj_in, timestep
//      sinusoid, embedded timestep, temb, caption projection, every block output, output head, output).
// Each comparison prints max-abs error, max |golden| and cosine. Tolerance (fp32 vs fp32, both sides with
// double-or-better accumulation differences only): max-abs error <= kRelTol * max(1, max |golden|), stated below.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/ltx.h"
#include "reference/transformer.h"

namespace ws::ref {
namespace {

// fp32 on both sides; observed errors are <= 1e-6 of the tensor scale (float rounding of the RMSNorm/LayerNorm
// statistics and of GEMM accumulation order; worst seen: norm_out_mod 2.1e-6 at max|golden| 3.0). 2e-5 leaves a
// 10x margin and still catches small math slips: q/k-norm eps 1e-6 instead of 1e-5 fails q_rope (7.2e-5 vs a
// 6.4e-5 bound); a wrong split order, mask sign or RoPE layout moves values by >= 1e-2.
constexpr double kRelTol = 2e-5;

const std::string kDir = std::string(WS_TEST_DATA_DIR) + "/ltx_tiny";

struct Tensor {
  std::string dtype;  ///< as stored: "F32" or "BF16"
  std::vector<int64_t> shape;
  std::vector<float> data;
};
using TensorMap = std::map<std::string, Tensor>;

/// Minimal F32/BF16 safetensors reader (BF16 widened to float) for the committed goldens (the checked, bounded reader is ws::io's).
bool read_safetensors(const std::string& path, TensorMap& out, std::string& error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot open " + path;
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) {
    error = path + ": shorter than 8 bytes";
    return false;
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) {
    error = path + ": header length " + std::to_string(n) + " past the file end";
    return false;
  }
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n), nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    error = path + ": header is not a JSON object";
    return false;
  }
  const size_t data0 = 8 + n;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string dtype = info.at("dtype").get<std::string>();
    if (dtype != "F32" && dtype != "BF16") {
      error = path + ": tensor " + name + " is " + dtype + ", expected F32 or BF16";
      return false;
    }
    const uint64_t elem = dtype == "F32" ? 4 : 2;
    Tensor t;
    t.dtype = dtype;
    t.shape = info.at("shape").get<std::vector<int64_t>>();
    const auto off = info.at("data_offsets").get<std::vector<uint64_t>>();
    int64_t count = 1;
    for (int64_t d : t.shape) count *= d;
    if (off.size() != 2 || off[1] < off[0] || off[1] - off[0] != static_cast<uint64_t>(count) * elem ||
        data0 + off[1] > bytes.size()) {
      error = path + ": tensor " + name + " has bad data_offsets";
      return false;
    }
    t.data.resize(static_cast<size_t>(count));
    const char* src = bytes.data() + data0 + off[0];
    if (elem == 4) {
      std::memcpy(t.data.data(), src, static_cast<size_t>(count) * 4);
    } else {
      for (int64_t i = 0; i < count; ++i) {  // bf16 -> f32: the high half of the float's bits
        uint16_t h = 0;
        std::memcpy(&h, src + 2 * i, 2);
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        std::memcpy(&t.data[static_cast<size_t>(i)], &bits, 4);
      }
    }
    out.emplace(name, std::move(t));
  }
  return true;
}

LtxModelConfig read_config(const std::string& path) {
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  LtxModelConfig c;
  c.in_channels = j.at("in_channels");
  c.out_channels = j.at("out_channels");
  c.patch_size = j.at("patch_size");
  c.patch_size_t = j.at("patch_size_t");
  c.heads = j.at("num_attention_heads");
  c.head_dim = j.at("attention_head_dim");
  c.cross_dim = j.at("cross_attention_dim");
  c.num_layers = j.at("num_layers");
  c.caption_channels = j.at("caption_channels");
  c.norm_eps = j.at("norm_eps");
  return c;
}

struct Checkpoint {
  LtxModelConfig config;
  TensorMap tensors;
  LtxModelWeights weights;
};

/// Loads config.json + diffusion_pytorch_model.safetensors from `dir` and binds the weights.
void load_checkpoint(const std::string& dir, Checkpoint& ck) {
  ck.config = read_config(dir + "/config.json");
  std::string error;
  ASSERT_TRUE(read_safetensors(dir + "/diffusion_pytorch_model.safetensors", ck.tensors, error)) << error;
  const auto specs = ltx_model_tensor_specs(ck.config);
  ASSERT_EQ(specs.size(), ck.tensors.size()) << "checkpoint holds tensors the reference does not know";
  Result<LtxModelWeights> w = ltx_bind_model_weights(ck.config, [&](const LtxTensorSpec& s) -> Result<const float*> {
    auto it = ck.tensors.find(s.name);
    if (it == ck.tensors.end()) return not_found("tensor " + s.name + " missing");
    if (it->second.shape != s.shape) return invalid_model("tensor " + s.name + " has the wrong shape");
    return it->second.data.data();
  });
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ck.weights = std::move(w.value());
}

const TensorMap& goldens() {
  static const TensorMap map = [] {
    TensorMap m;
    std::string error;
    if (!read_safetensors(kDir + "/goldens.safetensors", m, error)) ADD_FAILURE() << error;
    return m;
  }();
  return map;
}

const Tensor& golden(const std::string& name) {
  static const Tensor kEmpty;
  auto it = goldens().find(name);
  if (it == goldens().end()) {
    ADD_FAILURE() << "golden tensor " << name << " missing from " << kDir << "/goldens.safetensors";
    return kEmpty;
  }
  return it->second;
}

/// Compares `got` with golden `name` (element counts must match; `repeat` > 1 compares `got` against each
/// repeat of itself — used for RoPE tables that we compute once and diffusers per batch).
struct Stats {
  double max_err = 0, max_ref = 0, cosine = 1;
  size_t worst = 0;
};
Stats compare(const std::vector<float>& got, const std::vector<float>& ref) {
  Stats st;
  double dot = 0, ng = 0, nr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = ref[i], v = got[i % got.size()];
    const double e = std::isfinite(v) ? std::fabs(v - r) : INFINITY;
    if (e > st.max_err || (i == 0 && !std::isfinite(e))) {
      st.max_err = e;
      st.worst = i;
    }
    st.max_ref = std::max(st.max_ref, std::fabs(r));
    dot += v * r;
    ng += v * v;
    nr += r * r;
  }
  st.cosine = (ng == 0 && nr == 0) ? 1.0 : dot / std::sqrt(ng * nr);
  return st;
}

void expect_close(const std::string& name, const std::vector<float>& got, int64_t repeat = 1, double abs_tol = 0.0) {
  const Tensor& g = golden(name);
  ASSERT_EQ(got.size() * static_cast<size_t>(repeat), g.data.size()) << name << ": element count";
  double max_err = 0, max_ref = 0, dot = 0, ng = 0, nr = 0;
  size_t worst = 0;
  for (size_t i = 0; i < g.data.size(); ++i) {
    const double r = g.data[i], v = got[i % got.size()];
    ASSERT_TRUE(std::isfinite(v)) << name << "[" << i << "] = " << v;
    const double e = std::fabs(v - r);
    if (e > max_err) {
      max_err = e;
      worst = i;
    }
    max_ref = std::max(max_ref, std::fabs(r));
    dot += v * r;
    ng += v * v;
    nr += r * r;
  }
  const double cosine = (ng == 0 && nr == 0) ? 1.0 : dot / std::sqrt(ng * nr);
  const double tol = abs_tol > 0.0 ? abs_tol : kRelTol * std::max(1.0, max_ref);
  std::printf("  %-28s max-abs %.3e (max|golden| %.3g, tol %.1e) cosine %.9f\n", name.c_str(), max_err, max_ref, tol,
              cosine);
  EXPECT_LE(max_err, tol) << name << ": first worst index " << worst << " ours " << got[worst % got.size()]
                          << " diffusers " << g.data[worst];
}

void expect_block_close(const std::string& prefix, const LtxBlockIntermediates& in, const std::vector<float>& out) {
  expect_close(prefix + "norm1_mod", in.norm1_mod);
  expect_close(prefix + "q_rope", in.q_rope);
  expect_close(prefix + "k_rope", in.k_rope);
  expect_close(prefix + "attn1_out", in.attn1_out);
  expect_close(prefix + "hidden_attn1", in.hidden_attn1);
  expect_close(prefix + "attn2_out", in.attn2_out);
  expect_close(prefix + "hidden_attn2", in.hidden_attn2);
  expect_close(prefix + "norm2_mod", in.norm2_mod);
  expect_close(prefix + "ff_out", in.ff_out);
  expect_close(prefix + "out", out);
}

/// Golden case: checkpoint folder and tensor prefix.
struct GoldenCase {
  const char* prefix;  ///< "base." ...
  const char* dir;     ///< "" (tiny) or "/small"
};

class LtxReferenceGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(LtxReferenceGolden, EveryBlockAloneMatchesDiffusersPerIntermediate) {
  const std::string p = GetParam().prefix;
  Checkpoint ck;
  ASSERT_NO_FATAL_FAILURE(load_checkpoint(kDir + GetParam().dir, ck));
  const LtxModelConfig& c = ck.config;
  const int64_t d = c.dim();
  const Tensor& hs = golden(p + "in.hidden_states");
  const Tensor& enc = golden(p + "caption");
  const Tensor& temb = golden(p + "temb");
  const int64_t b = hs.shape[0], s = hs.shape[1], t = enc.shape[1], sp = temb.shape[1];
  std::printf("%s block-level: B=%lld S=%lld T=%lld S'=%lld D=%lld\n", p.c_str(), static_cast<long long>(b),
              static_cast<long long>(s), static_cast<long long>(t), static_cast<long long>(sp),
              static_cast<long long>(d));
  const Tensor& cos = golden(p + "rope_cos");
  const Tensor& sin = golden(p + "rope_sin");
  const Tensor& bias = golden(p + "mask_bias");
  for (int64_t l = 0; l < c.num_layers; ++l) {
    std::vector<float> x = l == 0 ? golden(p + "proj_in").data : golden(p + "block" + std::to_string(l - 1) + ".out").data;
    LtxBlockArgs a;
    a.batch = b; a.seq = s; a.text_seq = t; a.temb_seq = sp; a.rope_batch = cos.shape[0];
    a.hidden = x.data(); a.encoder = enc.data.data(); a.temb = temb.data.data();
    a.rope_cos = cos.data.data(); a.rope_sin = sin.data.data(); a.mask_bias = bias.data.data();
    LtxBlockIntermediates inter;
    ASSERT_TRUE(ltx_block_forward(c.block(), ck.weights.blocks[static_cast<size_t>(l)], a, &inter).is_ok());
    expect_block_close(p + "block" + std::to_string(l) + ".", inter, x);
  }
}

TEST_P(LtxReferenceGolden, WholeModelMatchesDiffusersPerStage) {
  const std::string p = GetParam().prefix;
  Checkpoint ck;
  ASSERT_NO_FATAL_FAILURE(load_checkpoint(kDir + GetParam().dir, ck));
  const LtxModelConfig& c = ck.config;
  const Tensor& hs = golden(p + "in.hidden_states");
  const Tensor& enc = golden(p + "in.encoder_hidden_states");
  const Tensor& ts = golden(p + "in.timestep");
  const Tensor& grid = golden(p + "in.grid");
  LtxModelInputs in;
  in.batch = hs.shape[0];
  in.frames = static_cast<int64_t>(grid.data[0]);
  in.height = static_cast<int64_t>(grid.data[1]);
  in.width = static_cast<int64_t>(grid.data[2]);
  in.text_seq = enc.shape[1];
  in.hidden_states = hs.data.data();
  in.encoder_hidden_states = enc.data.data();
  in.timestep = ts.data.data();
  in.timestep_seq = ts.shape.size() == 2 ? ts.shape[1] : 1;
  in.encoder_attention_mask = golden(p + "in.encoder_attention_mask").data.data();
  const auto scale_it = goldens().find(p + "in.rope_interpolation_scale");
  in.rope_interpolation_scale = scale_it != goldens().end() ? scale_it->second.data.data() : nullptr;
  std::printf("%s whole model: B=%lld grid %lldx%lldx%lld T=%lld timestep_seq %lld rope scale %s layers %lld\n",
              p.c_str(), static_cast<long long>(in.batch), static_cast<long long>(in.frames),
              static_cast<long long>(in.height), static_cast<long long>(in.width), static_cast<long long>(in.text_seq),
              static_cast<long long>(in.timestep_seq), in.rope_interpolation_scale ? "yes" : "none",
              static_cast<long long>(c.num_layers));
  const int64_t s = in.frames * in.height * in.width;
  std::vector<float> out(static_cast<size_t>(in.batch * s * c.out_channels));
  LtxModelIntermediates inter;
  const Status st = ltx_model_forward(c, ck.weights, in, out.data(), &inter);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  expect_close(p + "rope_cos", inter.rope_cos, in.batch);
  expect_close(p + "rope_sin", inter.rope_sin, in.batch);
  expect_close(p + "mask_bias", inter.mask_bias);
  expect_close(p + "proj_in", inter.proj_in);
  // sin/cos(t * freq_i) in float: a 1-ulp difference in freq_i (torch's vectorised expf vs libm) moves the
  // argument by up to 1 ulp of t (t < 1000: 6.1e-5), so the tolerance is 2 ulps of the largest argument.
  // Observed: 2.99e-5 (base), 2.97e-5 (tok). It washes out downstream (embedded_timestep ~1e-6).
  double max_t = 1.0;
  for (float v : ts.data) max_t = std::max(max_t, static_cast<double>(std::fabs(v)));
  expect_close(p + "timestep_proj", inter.timestep_proj, 1, 2.0 * std::ldexp(1.0, std::ilogb(max_t) - 23));
  expect_close(p + "embedded_timestep", inter.embedded_timestep);
  expect_close(p + "temb", inter.temb);
  expect_close(p + "caption", inter.caption);
  expect_block_close(p + "block0.", inter.block0, inter.block_out[0]);
  for (int64_t l = 1; l < c.num_layers; ++l)
    expect_close(p + "block" + std::to_string(l) + ".out", inter.block_out[static_cast<size_t>(l)]);
  expect_close(p + "norm_out_mod", inter.norm_out_mod);
  expect_close(p + "output", out);
}

INSTANTIATE_TEST_SUITE_P(Tiny, LtxReferenceGolden,
                         ::testing::Values(GoldenCase{"base.", ""}, GoldenCase{"tok.", ""},
                                           GoldenCase{"scaled.", ""}, GoldenCase{"small.", "/small"}),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           std::string n = info.param.prefix;
                           n.pop_back();
                           return n;
                         });

// ---------------------------------------------------------------------------------------------
// Full-size block (run where the goldens exist; skipped otherwise)

/// WS_LTX_BLOCK_DIR = a folder written by `tools/ltx_goldens.py --case block-2b` (block.safetensors +
/// goldens.safetensors). Runs the fp32 CPU block on diffusers' inputs with the checkpoint's weights (BF16 widened)
/// and compares per intermediate. Tolerance: F32 goldens (--dtype float32): max-abs <= 1e-4 * max(1, max|golden|);
/// BF16 goldens: cosine >= 0.999 per intermediate (bf16 rounding of every activation on diffusers' side; the block
/// output is the bar). The CPU cost is about 2 * S * 67M multiply-adds: use a small --grid for a quick run
/// (e.g. 2 4 6) or many cores (WS_REF_THREADS) for S = 6144.
TEST(LtxReferenceBlockFullSize, MatchesDiffusersGoldensFromEnv) {
  const char* dir = std::getenv("WS_LTX_BLOCK_DIR");
  if (dir == nullptr) GTEST_SKIP() << "set WS_LTX_BLOCK_DIR to a tools/ltx_goldens.py --case block-2b output folder";
  TensorMap w, g;
  std::string error;
  ASSERT_TRUE(read_safetensors(std::string(dir) + "/block.safetensors", w, error)) << error;
  ASSERT_TRUE(read_safetensors(std::string(dir) + "/goldens.safetensors", g, error)) << error;
  const bool bf16 = w.at("attn1.to_q.weight").dtype == "BF16";
  const LtxBlockConfig c = LtxBlockConfig::ltx_2b();
  Result<LtxBlockWeights> bw = ltx_bind_block_weights(c, "", [&](const LtxTensorSpec& s) -> Result<const float*> {
    auto it = w.find(s.name);
    if (it == w.end()) return not_found("tensor " + s.name + " missing from block.safetensors");
    if (it->second.shape != s.shape) return invalid_model("tensor " + s.name + " has the wrong shape");
    return it->second.data.data();
  });
  ASSERT_TRUE(bw.is_ok()) << bw.status().to_string();
  const Tensor& hs = g.at("in.hidden");
  const Tensor& enc = g.at("in.encoder");
  const Tensor& temb = g.at("in.temb");
  std::vector<float> x = hs.data;
  LtxBlockArgs a;
  a.batch = hs.shape[0]; a.seq = hs.shape[1]; a.text_seq = enc.shape[1]; a.temb_seq = temb.shape[1];
  a.rope_batch = g.at("in.rope_cos").shape[0];
  a.hidden = x.data(); a.encoder = enc.data.data(); a.temb = temb.data.data();
  a.rope_cos = g.at("in.rope_cos").data.data(); a.rope_sin = g.at("in.rope_sin").data.data();
  a.mask_bias = g.at("in.mask_bias").data.data();
  std::printf("full-size block (%s weights): B=%lld S=%lld T=%lld, %d threads\n", bf16 ? "BF16" : "F32",
              static_cast<long long>(a.batch), static_cast<long long>(a.seq), static_cast<long long>(a.text_seq),
              reference_threads());
  // Our own RoPE tables for the recorded grid (scale (8/25, 32, 32)) against diffusers' (D = 2048: 341
  // frequencies from a rounded linspace, 2 pad entries).
  if (g.count("in.grid") != 0) {
    const auto& gr = g.at("in.grid").data;
    const int64_t f = static_cast<int64_t>(gr[0]), h = static_cast<int64_t>(gr[1]), wd = static_cast<int64_t>(gr[2]);
    LtxRopeParams rp;
    rp.dim = c.dim();
    std::vector<float> cos(static_cast<size_t>(f * h * wd * rp.dim)), sin(cos.size());
    const float scale[3] = {8.0f / 25.0f, 32.0f, 32.0f};
    ltx_rope_tables(rp, f, h, wd, scale, cos.data(), sin.data());
    const Stats sc = compare(cos, g.at("in.rope_cos").data), ss = compare(sin, g.at("in.rope_sin").data);
    std::printf("  %-18s max-abs %.3e cosine %.9f\n  %-18s max-abs %.3e cosine %.9f\n", "rope_cos", sc.max_err,
                sc.cosine, "rope_sin", ss.max_err, ss.cosine);
    // cos/sin of float angles up to 10000*pi/2: a 1-ulp difference in the frequency moves the largest
    // angles by ~2e-3 rad (bf16 tables round to 4e-3 as well).
    EXPECT_LE(sc.max_err, 1e-2);
    EXPECT_LE(ss.max_err, 1e-2);
  }
  LtxBlockIntermediates in;
  ASSERT_TRUE(ltx_block_forward(c, bw.value(), a, &in).is_ok());
  const std::pair<const char*, const std::vector<float>*> got[] = {
      {"norm1_mod", &in.norm1_mod}, {"q_rope", &in.q_rope},       {"k_rope", &in.k_rope},
      {"attn1_out", &in.attn1_out}, {"hidden_attn1", &in.hidden_attn1}, {"attn2_out", &in.attn2_out},
      {"hidden_attn2", &in.hidden_attn2}, {"norm2_mod", &in.norm2_mod}, {"ff_out", &in.ff_out}, {"out", &x}};
  for (const auto& [name, v] : got) {
    const Tensor& ref = g.at(std::string("block.") + name);
    ASSERT_EQ(v->size(), ref.data.size()) << name;
    const Stats st = compare(*v, ref.data);
    std::printf("  %-18s max-abs %.3e (max|golden| %.3g) cosine %.9f\n", name, st.max_err, st.max_ref, st.cosine);
    if (bf16) {
      EXPECT_GE(st.cosine, 0.999) << name << ": worst index " << st.worst << " ours " << (*v)[st.worst]
                                  << " diffusers " << ref.data[st.worst];
    } else {
      EXPECT_LE(st.max_err, 1e-4 * std::max(1.0, st.max_ref))
          << name << ": worst index " << st.worst << " ours " << (*v)[st.worst] << " diffusers " << ref.data[st.worst];
    }
  }
}

}  // namespace
}  // namespace ws::ref
