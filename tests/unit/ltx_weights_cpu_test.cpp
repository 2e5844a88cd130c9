// ltx_weights_cpu_test.cpp — flow::LtxCpuWeights (src/flow/host/ltx_weights_cpu.h): the committed tiny diffusers
// checkpoints (tests/data/ltx_tiny, written by tools/ltx_goldens.py) load through io::SafetensorsCheckpoint and
// the CPU reference forward on them reproduces diffusers' output; a BF16 re-encoding loads too; a missing
// config.json, a missing tensor, a wrong shape, an unsupported dtype and a num_layers the checkpoint cannot hold
// each give one clear error.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flow/host/ltx_weights_cpu.h"
#include "reference/ltx.h"
#include "support/test_util.h"
#include "warpstream/numeric.h"
#include "warpstream/safetensors.h"

namespace ws::flow {
namespace {

const std::string kDir = std::string(WS_TEST_DATA_DIR) + "/ltx_tiny";

std::vector<float> floats(const io::SafetensorsFile& f, const std::string& name) {
  const io::SafetensorsTensor* t = f.find(name);
  if (t == nullptr || t->dtype != ws::DType::kFloat32) {
    ADD_FAILURE() << "golden " << name << " missing or not F32";
    return {};
  }
  std::vector<float> v(static_cast<size_t>(t->elements()));
  std::memcpy(v.data(), f.bytes(*t).data(), v.size() * sizeof(float));
  return v;
}

/// Runs the reference forward on golden case `prefix` and returns the output.
std::vector<float> run_case(const LtxCpuWeights& w, const io::SafetensorsFile& g, const std::string& prefix) {
  const auto hs = floats(g, prefix + "in.hidden_states");
  const auto enc = floats(g, prefix + "in.encoder_hidden_states");
  const auto ts = floats(g, prefix + "in.timestep");
  const auto mask = floats(g, prefix + "in.encoder_attention_mask");
  const auto grid = floats(g, prefix + "in.grid");
  const io::SafetensorsTensor* hst = g.find(prefix + "in.hidden_states");
  const io::SafetensorsTensor* et = g.find(prefix + "in.encoder_hidden_states");
  if (hst == nullptr || et == nullptr || grid.size() != 3) return {};
  ref::LtxModelInputs in;
  in.batch = hst->shape[0];
  in.frames = static_cast<int64_t>(grid[0]);
  in.height = static_cast<int64_t>(grid[1]);
  in.width = static_cast<int64_t>(grid[2]);
  in.text_seq = et->shape[1];
  in.hidden_states = hs.data();
  in.encoder_hidden_states = enc.data();
  in.timestep = ts.data();
  in.timestep_seq = static_cast<int64_t>(ts.size()) / in.batch;
  in.encoder_attention_mask = mask.data();
  std::vector<float> scale;
  if (g.find(prefix + "in.rope_interpolation_scale") != nullptr) {
    scale = floats(g, prefix + "in.rope_interpolation_scale");
    in.rope_interpolation_scale = scale.data();
  }
  std::vector<float> out(static_cast<size_t>(hst->shape[0] * hst->shape[1] * w.config().out_channels));
  const Status st = ref::ltx_model_forward(w.config(), w.weights(), in, out.data());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

void compare(const std::vector<float>& got, const std::vector<float>& want, double max_abs_tol, double min_cosine,
             const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double err = 0, dot = 0, ng = 0, nw = 0;
  size_t worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(e <= err)) {
      err = e;
      worst = i;
    }
    dot += static_cast<double>(got[i]) * want[i];
    ng += static_cast<double>(got[i]) * got[i];
    nw += static_cast<double>(want[i]) * want[i];
  }
  const double cosine = dot / std::sqrt(ng * nw);
  std::printf("  %-34s max-abs %.3e cosine %.9f\n", what.c_str(), err, cosine);
  EXPECT_LE(err, max_abs_tol) << what << ": worst index " << worst << " ours " << got[worst] << " diffusers "
                              << want[worst];
  EXPECT_GE(cosine, min_cosine) << what;
}

TEST(LtxCpuWeights, TinyCheckpointsReproduceDiffusers) {
  Result<io::SafetensorsFile> g = io::SafetensorsFile::open(kDir + "/goldens.safetensors");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Result<LtxCpuWeights> tiny = LtxCpuWeights::open(kDir);
  ASSERT_TRUE(tiny.is_ok()) << tiny.status().to_string();
  EXPECT_EQ(tiny->config().num_layers, 2);
  EXPECT_EQ(tiny->config().dim(), 16);
  EXPECT_EQ(tiny->config().caption_channels, 16);
  // fp32 vs fp32: same bound as ltx_reference_golden_test (2e-5 of max(1, max |golden|); outputs are < 2).
  for (const char* p : {"base.", "tok.", "scaled."})
    compare(run_case(*tiny, *g, p), floats(*g, std::string(p) + "output"), 4e-5, 0.9999999, std::string(p) + "output");
  Result<LtxCpuWeights> small = LtxCpuWeights::open(kDir + "/small/diffusion_pytorch_model.safetensors");
  ASSERT_TRUE(small.is_ok()) << small.status().to_string();
  EXPECT_EQ(small->config().dim(), 32);
  compare(run_case(*small, *g, "small."), floats(*g, "small.output"), 4e-5, 0.9999999, "small.output");
}

// ---------------------------------------------------------------------------------------------
// Edited checkpoints

struct Entry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::vector<Entry> tiny_entries() {
  std::vector<Entry> v;
  Result<io::SafetensorsFile> f = io::SafetensorsFile::open(kDir + "/diffusion_pytorch_model.safetensors");
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  if (!f.is_ok()) return v;
  for (const io::SafetensorsTensor& t : f->tensors()) {
    const auto b = f->bytes(t);
    v.push_back({t.name, "F32", t.shape, std::string(reinterpret_cast<const char*>(b.data()), b.size())});
  }
  return v;
}

/// Writes `entries` as DIR/diffusion_pytorch_model.safetensors and `config` as DIR/config.json (when non-empty).
void write_checkpoint(const test::TempDir& dir, const std::vector<Entry>& entries, const std::string& config) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const Entry& e : entries) {
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data += e.bytes;
  }
  const std::string h = header.dump();
  std::string file(8, '\0');
  const uint64_t n = h.size();
  std::memcpy(file.data(), &n, 8);
  test::write_file(dir.file("diffusion_pytorch_model.safetensors"), file + h + data);
  if (!config.empty()) test::write_file(dir.file("config.json"), config);
}

std::string tiny_config(const std::string& key = "", int value = 0) {
  nlohmann::json j = nlohmann::json::parse(test::read_file(kDir + "/config.json"));
  if (!key.empty()) j[key] = value;
  return j.dump();
}

TEST(LtxCpuWeights, Bf16CheckpointLoadsAndStaysClose) {
  std::vector<Entry> entries = tiny_entries();
  ASSERT_FALSE(entries.empty());
  for (Entry& e : entries) {
    std::string b(e.bytes.size() / 2, '\0');
    for (size_t i = 0; i < e.bytes.size() / 4; ++i) {
      float f;
      std::memcpy(&f, e.bytes.data() + 4 * i, 4);
      const uint16_t h = float_to_bf16(f);
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
    e.bytes = b;
    e.dtype = "BF16";
  }
  test::TempDir dir;
  write_checkpoint(dir, entries, tiny_config());
  Result<LtxCpuWeights> w = LtxCpuWeights::open(dir.path().string());
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  // The widened values are exactly the bf16 codes.
  for (const Entry& e : entries)
    if (e.name == "proj_out.bias") {
      for (size_t i = 0; i < 4; ++i) {
        uint16_t h;
        std::memcpy(&h, e.bytes.data() + 2 * i, 2);
        EXPECT_EQ(w->weights().proj_out.bias[i], bf16_to_float(h)) << i;
      }
    }
  Result<io::SafetensorsFile> g = io::SafetensorsFile::open(kDir + "/goldens.safetensors");
  ASSERT_TRUE(g.is_ok());
  // bf16 weights (8 bits of mantissa) against fp32 diffusers: cosine >= 0.999 (the bar for narrow weights).
  compare(run_case(*w, *g, "base."), floats(*g, "base.output"), 0.1, 0.999, "base.output (bf16 weights)");
}

TEST(LtxCpuWeights, RefusesBrokenCheckpointsWithOneClearError) {
  const std::vector<Entry> entries = tiny_entries();
  ASSERT_FALSE(entries.empty());
  auto expect_error = [](const test::TempDir& dir, StatusCode code, const std::string& needle) {
    Result<LtxCpuWeights> w = LtxCpuWeights::open(dir.path().string());
    ASSERT_FALSE(w.is_ok()) << "expected an error containing '" << needle << "'";
    EXPECT_EQ(w.status().code(), code) << w.status().to_string();
    EXPECT_NE(w.status().message().find(needle), std::string::npos) << w.status().to_string();
  };
  {  // no config.json
    test::TempDir dir;
    write_checkpoint(dir, entries, "");
    expect_error(dir, StatusCode::kInvalidModel, "no config.json");
  }
  {  // a tensor missing (renamed)
    std::vector<Entry> e = entries;
    for (Entry& x : e)
      if (x.name == "transformer_blocks.1.attn2.norm_k.weight") x.name = "transformer_blocks.1.attn2.norm_k.weight_old";
    test::TempDir dir;
    write_checkpoint(dir, e, tiny_config());
    expect_error(dir, StatusCode::kNotFound, "transformer_blocks.1.attn2.norm_k.weight");
  }
  {  // wrong shape: config says caption_channels 8, the checkpoint has 16
    test::TempDir dir;
    write_checkpoint(dir, entries, tiny_config("caption_channels", 8));
    expect_error(dir, StatusCode::kInvalidModel, "'caption_projection.linear_1.weight' has shape [16, 16], the config needs [16, 8]");
  }
  {  // unsupported dtype: int8 weights are the GPU path's
    std::vector<Entry> e = entries;
    for (Entry& x : e)
      if (x.name == "proj_out.weight") {
        x.dtype = "I8";
        x.bytes.resize(x.bytes.size() / 4);
      }
    test::TempDir dir;
    write_checkpoint(dir, e, tiny_config());
    expect_error(dir, StatusCode::kUnsupported, "'proj_out.weight' is I8");
  }
  {  // more layers than the checkpoint holds: refused before building 25 specs per claimed layer
    test::TempDir dir;
    write_checkpoint(dir, entries, tiny_config("num_layers", 1000000));
    expect_error(dir, StatusCode::kInvalidModel, "num_layers 1000000 needs 25000015 tensors, the checkpoint holds 65");
  }
}

TEST(LtxCpuBlockWeights, LoadsOneBlockByPrefix) {
  Result<io::SafetensorsCheckpoint> ck = io::open_checkpoint(kDir);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  ref::LtxBlockConfig c;
  c.heads = 2; c.head_dim = 8; c.cross_dim = 16; c.ff_inner = 64;
  Result<LtxCpuBlockWeights> b = LtxCpuBlockWeights::load(*ck, c, "transformer_blocks.1.");
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  const io::CheckpointTensor t = ck->find("transformer_blocks.1.attn1.norm_q.weight");
  ASSERT_NE(t.tensor, nullptr);
  EXPECT_EQ(std::memcmp(b->weights().attn1.norm_q, t.bytes.data(), 16 * sizeof(float)), 0);
  EXPECT_EQ(b->bytes(), 4464 * sizeof(float));
  Result<LtxCpuBlockWeights> missing = LtxCpuBlockWeights::load(*ck, c, "transformer_blocks.2.");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("transformer_blocks.2.scale_shift_table"), std::string::npos)
      << missing.status().to_string();
}

// WS_LTX_MODEL_DIR = a folder written by `tools/ltx_goldens.py --case model-2b` (config.json, weights, goldens).
// Loads it through LtxCpuWeights::open and compares the fp32 CPU forward per stage. Tolerance: F32 goldens
// (--dtype float32): max-abs <= 1e-4 * max(1, max |golden|); BF16 goldens: cosine >= 0.999 per stage (diffusers
// rounds every activation to bf16). Use --layers 1 and a small --grid for a quick CPU run.
TEST(LtxCpuWeights, FullSizeModelMatchesDiffusersGoldensFromEnv) {
  const char* dir = std::getenv("WS_LTX_MODEL_DIR");
  if (dir == nullptr) GTEST_SKIP() << "set WS_LTX_MODEL_DIR to a tools/ltx_goldens.py --case model-2b output folder";
  Result<LtxCpuWeights> w = LtxCpuWeights::open(dir);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  Result<io::SafetensorsFile> g = io::SafetensorsFile::open(std::string(dir) + "/goldens.safetensors");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Result<io::SafetensorsCheckpoint> ck = io::open_checkpoint(dir);
  ASSERT_TRUE(ck.is_ok());
  const bool bf16 = ck->find("proj_in.weight").tensor->dtype == ws::DType::kBFloat16;
  const std::string p = "model.";
  const auto hs = floats(*g, p + "in.hidden_states");
  const auto enc = floats(*g, p + "in.encoder_hidden_states");
  const auto ts = floats(*g, p + "in.timestep");
  const auto mask = floats(*g, p + "in.encoder_attention_mask");
  const auto grid = floats(*g, p + "in.grid");
  const auto scale = floats(*g, p + "in.rope_interpolation_scale");
  ASSERT_EQ(grid.size(), 3u);
  ref::LtxModelInputs in;
  in.batch = g->find(p + "in.hidden_states")->shape[0];
  in.frames = static_cast<int64_t>(grid[0]);
  in.height = static_cast<int64_t>(grid[1]);
  in.width = static_cast<int64_t>(grid[2]);
  in.text_seq = g->find(p + "in.encoder_hidden_states")->shape[1];
  in.hidden_states = hs.data();
  in.encoder_hidden_states = enc.data();
  in.timestep = ts.data();
  in.timestep_seq = static_cast<int64_t>(ts.size()) / in.batch;
  in.encoder_attention_mask = mask.data();
  in.rope_interpolation_scale = scale.data();
  const int64_t s = in.frames * in.height * in.width;
  std::printf("full-size model (%s weights, %lld layers): B=%lld S=%lld T=%lld\n", bf16 ? "BF16" : "F32",
              static_cast<long long>(w->config().num_layers), static_cast<long long>(in.batch),
              static_cast<long long>(s), static_cast<long long>(in.text_seq));
  std::vector<float> out(static_cast<size_t>(in.batch * s * w->config().out_channels));
  ref::LtxModelIntermediates inter;
  const Status st = ref::ltx_model_forward(w->config(), w->weights(), in, out.data(), &inter);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::vector<float> rope_cos, rope_sin;
  for (int64_t b = 0; b < in.batch; ++b) {  // ours [1, S, D], diffusers' [B, S, D]
    rope_cos.insert(rope_cos.end(), inter.rope_cos.begin(), inter.rope_cos.end());
    rope_sin.insert(rope_sin.end(), inter.rope_sin.begin(), inter.rope_sin.end());
  }
  const std::pair<std::string, const std::vector<float>*> stages[] = {
      {"rope_cos", &rope_cos}, {"rope_sin", &rope_sin}, {"proj_in", &inter.proj_in},
      {"embedded_timestep", &inter.embedded_timestep}, {"temb", &inter.temb}, {"caption", &inter.caption},
      {"block0.out", &inter.block_out[0]}, {"norm_out_mod", &inter.norm_out_mod}, {"output", &out}};
  for (const auto& [name, v] : stages) {
    const auto ref = floats(*g, p + name);
    double max_ref = 0;
    for (float x : ref) max_ref = std::max(max_ref, static_cast<double>(std::fabs(x)));
    if (bf16 || name.rfind("rope_", 0) == 0)  // RoPE tables: float angle rounding, see transformer.h
      compare(*v, ref, bf16 ? INFINITY : 1e-2, 0.999, name);
    else
      compare(*v, ref, 1e-4 * std::max(1.0, max_ref), 0.999999, name);
  }
}

}  // namespace
}  // namespace ws::flow
