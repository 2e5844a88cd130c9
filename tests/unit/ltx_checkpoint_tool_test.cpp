// ltx_checkpoint_tool_test.cpp — tools/make_ltx_checkpoint.py's output through our loaders (label cpu):
//   - the tiny config sharded (--shard-size 20KB -> 4 shards + diffusers' index json) opens as one checkpoint, holds
//     exactly the tensors and shapes of diffusers' own save_pretrained() output (the committed tests/data/ltx_tiny,
//     written by diffusers 0.42.1) and of ref::ltx_model_tensor_specs, its config.json parses to the same config,
//     the bytes equal the single-file output of the same seed, and the CPU forward of both is bit-identical;
//   - --dtype bf16 is the RNE rounding of the fp32 values of the same seed (the tool draws in fp32);
//   - broken sharded checkpoints each give one clear error naming the file or tensor: a truncated shard, a missing
//     shard file, a tensor the index maps but its shard lacks, a tensor missing from shard and index, a wrong-shaped
//     tensor (through the loader and through `warpstream ltx`, which refuses them before any device work).
// The budget refusal is the GPU path's (LtxModel::build, tests/gpu/ltx_model_test.cpp BudgetTooSmallRefused, and the
// device suite's `warpstream ltx --vram-budget 64MiB` row). Skipped when the Python at WS_TOOL_PYTHON has no torch.

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flow/host/ltx_config.h"
#include "flow/host/ltx_weights_cpu.h"
#include "flow/host/weight_store.h"
#include "reference/ltx.h"
#include "support/safetensors_writer.h"
#include "support/seed.h"
#include "support/test_util.h"
#include "warpstream/numeric.h"
#include "warpstream/safetensors.h"

namespace ws::flow {
namespace {

namespace fs = std::filesystem;

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const std::string kTool = std::string(WS_TOOLS_DIR) + "/make_ltx_checkpoint.py";
const std::string kTiny = std::string(WS_TEST_DATA_DIR) + "/ltx_tiny";

class LtxCheckpointTool : public ::testing::Test {
 protected:
  void SetUp() override {
    static const bool have_torch = shell(sh_quote(WS_TOOL_PYTHON) + " -c 'import torch' > /dev/null 2>&1") == 0;
    if (!have_torch) GTEST_SKIP() << WS_TOOL_PYTHON << " has no torch (tools/make_ltx_checkpoint.py needs it)";
  }
  // Runs the tool into dir_/name with `args`; returns the folder.
  std::string make(const std::string& name, const std::string& args) {
    const std::string out = dir_.file(name);
    const std::string log = dir_.file(name + ".log");
    const int rc = shell(sh_quote(WS_TOOL_PYTHON) + " " + sh_quote(kTool) + " --device cpu --out " + sh_quote(out) +
                         " " + args + " > " + sh_quote(log) + " 2>&1");
    EXPECT_EQ(rc, 0) << "make_ltx_checkpoint.py " << args << ":\n" << test::read_file(log);
    std::printf("  %s", test::read_file(log).c_str());
    return out;
  }
  std::string copy(const std::string& from, const std::string& name) {
    const std::string to = dir_.file(name);
    fs::copy(from, to, fs::copy_options::recursive);
    return to;
  }
  test::TempDir dir_;
};

std::vector<std::string> shard_files(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("-of-") != std::string::npos) v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

LtxConfig config_of(const std::string& dir) {
  const std::string path = dir + "/config.json";
  Result<LtxConfig> c = parse_ltx_config(test::read_file(path), path);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? c.value() : LtxConfig{};
}

// CPU reference forward of the checkpoint in `dir` on seeded inputs (B 2, grid 2x2x3, T 5, mask, RoPE scale).
std::vector<float> forward(const std::string& dir, uint32_t seed) {
  Result<LtxCpuWeights> w = LtxCpuWeights::open(dir);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
  if (!w.is_ok()) return {};
  const ref::LtxModelConfig& c = w->config();
  ref::LtxModelInputs in;
  in.batch = 2; in.frames = 2; in.height = 2; in.width = 3; in.text_seq = 5;
  const int64_t S = in.frames * in.height * in.width;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> hs(static_cast<size_t>(in.batch * S * c.in_channels)), enc(static_cast<size_t>(in.batch * in.text_seq * c.caption_channels));
  for (float& v : hs) v = nd(rng);
  for (float& v : enc) v = nd(rng);
  const std::vector<float> ts = {250.f, 900.f}, mask = {1, 1, 1, 0, 0, 1, 1, 1, 1, 0}, scale = {8.f / 25.f, 32.f, 32.f};
  in.hidden_states = hs.data();
  in.encoder_hidden_states = enc.data();
  in.timestep = ts.data();
  in.encoder_attention_mask = mask.data();
  in.rope_interpolation_scale = scale.data();
  std::vector<float> out(static_cast<size_t>(in.batch * S * c.out_channels), std::nanf(""));  // poisoned
  const Status st = ref::ltx_model_forward(c, w->weights(), in, out.data());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  for (float v : out) EXPECT_TRUE(std::isfinite(v));
  return out;
}

TEST_F(LtxCheckpointTool, ShardedTinyMatchesDiffusersLayoutAndTheSingleFile) {
  const std::string sharded = make("sharded", "--config tiny --dtype fp32 --shard-size 20KB --seed 3");
  const std::string single = make("single", "--config tiny --dtype fp32 --seed 3");
  ASSERT_EQ(shard_files(sharded).size(), 4u);
  ASSERT_TRUE(fs::exists(sharded + "/diffusion_pytorch_model.safetensors.index.json"));
  ASSERT_TRUE(fs::exists(single + "/diffusion_pytorch_model.safetensors"));
  ASSERT_FALSE(fs::exists(single + "/diffusion_pytorch_model.safetensors.index.json"));

  Result<io::SafetensorsCheckpoint> a = io::open_checkpoint(sharded);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  Result<io::SafetensorsCheckpoint> b = io::open_checkpoint(single);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  Result<io::SafetensorsCheckpoint> d = io::open_checkpoint(kTiny);  // diffusers' own save_pretrained() output
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(a->files().size(), 4u);
  EXPECT_TRUE(a->has_config());

  // Same config as diffusers' config.json for the same arguments (every field LtxConfig reads).
  const LtxConfig ca = config_of(sharded), cd = config_of(kTiny);
  EXPECT_EQ(ca.in_channels, cd.in_channels);
  EXPECT_EQ(ca.out_channels, cd.out_channels);
  EXPECT_EQ(ca.num_attention_heads, cd.num_attention_heads);
  EXPECT_EQ(ca.attention_head_dim, cd.attention_head_dim);
  EXPECT_EQ(ca.cross_attention_dim, cd.cross_attention_dim);
  EXPECT_EQ(ca.num_layers, cd.num_layers);
  EXPECT_EQ(ca.caption_channels, cd.caption_channels);
  EXPECT_EQ(ca.norm_eps, cd.norm_eps);
  const auto ja = nlohmann::json::parse(test::read_file(sharded + "/config.json"));
  const auto jd = nlohmann::json::parse(test::read_file(kTiny + "/config.json"));
  EXPECT_EQ(ja, jd) << "config.json differs from diffusers' save_pretrained() output:\n" << ja.dump(1) << "\n" << jd.dump(1);

  // Exactly diffusers' tensor names and shapes, and exactly what the reference binds.
  std::map<std::string, std::vector<int64_t>> got, want;
  for (const io::CheckpointTensor& t : a->tensors()) got[t.tensor->name] = t.tensor->shape;
  for (const io::CheckpointTensor& t : d->tensors()) want[t.tensor->name] = t.tensor->shape;
  EXPECT_EQ(got, want);
  std::map<std::string, std::vector<int64_t>> specs;
  for (const ref::LtxTensorSpec& s : ref::ltx_model_tensor_specs(reference_config(ca))) specs[s.name] = s.shape;
  EXPECT_EQ(got, specs);

  // Same bytes sharded and single-file; the index maps every tensor to the shard that holds it.
  const auto index = nlohmann::json::parse(test::read_file(sharded + "/diffusion_pytorch_model.safetensors.index.json"));
  uint64_t total = 0;
  for (const io::CheckpointTensor& t : b->tensors()) {
    const io::CheckpointTensor s = a->find(t.tensor->name);
    ASSERT_NE(s.tensor, nullptr) << t.tensor->name;
    EXPECT_EQ(s.tensor->dtype, DType::kFloat32);
    ASSERT_EQ(s.bytes.size(), t.bytes.size()) << t.tensor->name;
    EXPECT_EQ(std::memcmp(s.bytes.data(), t.bytes.data(), t.bytes.size()), 0) << t.tensor->name;
    EXPECT_EQ(index["weight_map"][t.tensor->name].get<std::string>(), fs::path(s.file->path()).filename().string());
    total += t.bytes.size();
  }
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), total);

  const uint32_t seed = test::test_seed("ltx checkpoint tool inputs");
  const std::vector<float> ya = forward(sharded, seed), yb = forward(single, seed);
  ASSERT_FALSE(ya.empty());
  EXPECT_EQ(ya, yb) << "the sharded and the single-file checkpoint give different CPU forwards";
}

TEST_F(LtxCheckpointTool, Bf16IsTheRoundedFp32) {
  const std::string f32 = make("f32", "--config small --dtype fp32 --seed 5");
  const std::string b16 = make("b16", "--config small --dtype bf16 --seed 5 --shard-size 40KB");
  Result<io::SafetensorsCheckpoint> a = io::open_checkpoint(f32);
  Result<io::SafetensorsCheckpoint> b = io::open_checkpoint(b16);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_GT(b->files().size(), 1u);
  size_t checked = 0;
  for (const io::CheckpointTensor& t : a->tensors()) {
    const io::CheckpointTensor h = b->find(t.tensor->name);
    ASSERT_NE(h.tensor, nullptr) << t.tensor->name;
    ASSERT_EQ(h.tensor->dtype, DType::kBFloat16);
    ASSERT_EQ(h.bytes.size() * 2, t.bytes.size());
    for (size_t i = 0; i < h.bytes.size() / 2; ++i) {
      float f;
      uint16_t g;
      std::memcpy(&f, t.bytes.data() + 4 * i, 4);
      std::memcpy(&g, h.bytes.data() + 2 * i, 2);
      ASSERT_EQ(g, float_to_bf16(f)) << t.tensor->name << "[" << i << "] = " << f;
      ++checked;
    }
  }
  size_t params = 0;
  for (const ref::LtxTensorSpec& s : ref::ltx_model_tensor_specs(reference_config(config_of(f32)))) {
    size_t n = 1;
    for (int64_t x : s.shape) n *= static_cast<size_t>(x);
    params += n;
  }
  EXPECT_EQ(checked, params);
  Result<LtxCpuWeights> w = LtxCpuWeights::open(b16);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
}

// --block-weights fp8|int8: the tool's pre-quantised codes and scales are exactly what WeightStore makes at load from
// the bf16 twin of the same seed (Python quantiser == C++ quantiser, bit for bit); every other tensor is the same
// bytes; the CPU reference reads the 8-bit checkpoint (code x scale) and its forward stays near the bf16 one.
TEST_F(LtxCheckpointTool, PreQuantisedBlockWeightsEqualTheLoadTimeConversion) {
  const std::string b16 = make("q_b16", "--config small --dtype bf16 --seed 7");
  std::vector<float> ref_out = forward(b16, 11);
  for (const char* fmt : {"fp8", "int8"}) {
    SCOPED_TRACE(fmt);
    const WeightFormat wf = std::string(fmt) == "fp8" ? WeightFormat::kFp8E4M3 : WeightFormat::kInt8;
    const std::string q = make(std::string("q_") + fmt,
                               std::string("--config small --dtype bf16 --seed 7 --shard-size 40KB --block-weights ") + fmt);
    Result<io::SafetensorsCheckpoint> a = io::open_checkpoint(b16);
    Result<io::SafetensorsCheckpoint> b = io::open_checkpoint(q);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    WeightStoreOptions conv;
    conv.format = wf;
    Result<WeightStore> sa = WeightStore::load(*a, conv);
    ASSERT_TRUE(sa.is_ok()) << sa.status().to_string();
    std::vector<std::string> names;
    for (const StoredTensor& t : sa->tensors()) names.push_back(t.name);
    Result<WeightStore> sb = WeightStore::load(*b, names);  // as stored: codes + the checkpoint's scales
    ASSERT_TRUE(sb.is_ok()) << sb.status().to_string();
    WeightStoreOptions same = conv;  // asking for the format the file already has is the same load
    ASSERT_TRUE(WeightStore::load(*b, names, same).is_ok());
    size_t quantised = 0;
    for (const StoredTensor& x : sa->tensors()) {
      const StoredTensor* y = sb->find(x.name);
      ASSERT_NE(y, nullptr) << x.name;
      ASSERT_EQ(x.dtype, y->dtype) << x.name;
      ASSERT_EQ(x.shape, y->shape) << x.name;
      ASSERT_EQ(x.bytes, y->bytes) << x.name;
      ASSERT_EQ(std::memcmp(x.data, y->data, x.bytes), 0) << x.name << ": codes/bytes differ";
      ASSERT_EQ(x.scales == nullptr, y->scales == nullptr) << x.name;
      if (x.scales) {
        ++quantised;
        for (int64_t r = 0; r < x.shape[0]; ++r)
          ASSERT_EQ(std::bit_cast<uint32_t>(x.scales[r]), std::bit_cast<uint32_t>(y->scales[r])) << x.name << " row " << r;
      }
    }
    EXPECT_EQ(quantised, 10u * static_cast<size_t>(config_of(b16).num_layers));
    // The other 8-bit format is refused naming the stored one; the CPU reference reads the file.
    WeightStoreOptions other;
    other.format = wf == WeightFormat::kInt8 ? WeightFormat::kFp8E4M3 : WeightFormat::kInt8;
    Result<WeightStore> bad = WeightStore::load(*b, names, other);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("pre-quantised"), std::string::npos) << bad.status().to_string();
    std::vector<float> out = forward(q, 11);
    ASSERT_EQ(out.size(), ref_out.size());
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      dot += double(out[i]) * ref_out[i];
      na += double(out[i]) * out[i];
      nb += double(ref_out[i]) * ref_out[i];
    }
    const double cos = dot / std::sqrt(na * nb);
    std::printf("  %s block weights: CPU forward cosine vs bf16 %.6f\n", fmt, cos);
    EXPECT_GT(cos, 0.99);  // random small model; 8-bit weights cost a little
    EXPECT_LT(cos, 1.0);   // the 8-bit weights were really used
  }
}

// A pre-quantised weight without usable scales: one error naming the scale tensor (WeightStore and the CPU reference).
TEST(LtxPreQuantised, MissingOrBadScalesAreRefused) {
  test::TempDir dir;
  const std::string w = "transformer_blocks.0.attn1.to_q.weight";
  const std::vector<uint8_t> codes = {1, 2, 3, 0x81};
  auto check = [&](const std::string& name, const std::vector<test::SafetensorsSpec>& specs, const std::string& key) {
    const std::string path = dir.file(name + ".safetensors");
    test::write_file(path, test::safetensors_image(specs));
    Result<io::SafetensorsCheckpoint> ck = io::open_checkpoint(path);
    ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
    Result<WeightStore> st = WeightStore::load(*ck);
    ASSERT_FALSE(st.is_ok()) << name;
    EXPECT_NE(st.status().message().find(key), std::string::npos) << name << ": " << st.status().to_string();
  };
  check("missing", {{w, "I8", {2, 2}, codes}}, "weight_scale");
  check("shape", {{w, "I8", {2, 2}, codes}, {"transformer_blocks.0.attn1.to_q.weight_scale", "F32", {3}, test::f32_bytes({1, 1, 1})}},
        "float32 [2]");
  check("zero", {{w, "F8_E4M3", {2, 2}, codes}, {"transformer_blocks.0.attn1.to_q.weight_scale", "F32", {2}, test::f32_bytes({1, 0})}},
        "finite and > 0");
  check("nan", {{w, "I8", {2, 2}, codes}, {"transformer_blocks.0.attn1.to_q.weight_scale", "F32", {2, 1}, test::f32_bytes({std::nanf(""), 1})}},
        "finite and > 0");
  check("huge", {{w, "I8", {2, 2}, codes}, {"transformer_blocks.0.attn1.to_q.weight_scale", "F32", {2}, test::f32_bytes({1, 3e38f})}},
        "still finite");
  check("nan_code", {{w, "F8_E4M3", {2, 2}, {0x38, 0x7F, 0x00, 0x01}},
                     {"transformer_blocks.0.attn1.to_q.weight_scale", "F32", {2}, test::f32_bytes({1, 1})}},
        "fp8 NaN code");
  // [out, 1] scales are accepted; the values land in the store.
  const std::string ok = dir.file("ok.safetensors");
  test::write_file(ok, test::safetensors_image({{"pad", "I8", {3}, {0, 0, 0}},  // scales at an unaligned file offset
                                                {w, "I8", {2, 2}, codes},
                                                {"transformer_blocks.0.attn1.to_q.weight_scale", "F32", {2, 1}, test::f32_bytes({0.5f, 2.0f})}}));
  Result<io::SafetensorsCheckpoint> ck = io::open_checkpoint(ok);
  ASSERT_TRUE(ck.is_ok());
  Result<WeightStore> st = WeightStore::load(*ck);
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
  const StoredTensor* t = st->find(w);
  ASSERT_NE(t, nullptr);
  ASSERT_NE(t->scales, nullptr);
  EXPECT_EQ(t->dtype, DType::kInt8);
  EXPECT_EQ(t->scales[0], 0.5f);
  EXPECT_EQ(t->scales[1], 2.0f);
  EXPECT_EQ(std::memcmp(t->data, codes.data(), 4), 0);
}

// The CLI on a broken checkpoint: exit 2 and one "error: " line containing every keyword.
void expect_cli_refuses(const std::string& dir, const std::string& scratch, std::initializer_list<std::string> keywords) {
  const std::string err = scratch + "/cli.stderr";
  const int rc = shell(sh_quote(WS_CLI_PATH) + " ltx --model " + sh_quote(dir) + " > /dev/null 2> " + sh_quote(err));
  const std::string text = test::read_file(err);
  EXPECT_EQ(rc, 2) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_EQ(text.rfind("error: ", 0), 0u) << text;
  for (const auto& k : keywords) EXPECT_NE(text.find(k), std::string::npos) << "missing '" << k << "' in: " << text;
}

// Rewrites one shard through `edit` (which may drop or change entries).
void rewrite_shard(const std::string& path, const std::function<void(std::vector<test::SafetensorsSpec>&)>& edit) {
  std::vector<test::SafetensorsSpec> specs;
  {
    Result<io::SafetensorsFile> f = io::SafetensorsFile::open(path);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    for (const io::SafetensorsTensor& t : f->tensors()) {
      const auto b = f->bytes(t);
      specs.push_back({t.name, std::string(io::safetensors_dtype_name(t.dtype)), t.shape,
                       std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(b.data()),
                                            reinterpret_cast<const uint8_t*>(b.data()) + b.size())});
    }
  }
  edit(specs);
  test::write_file(path, test::safetensors_image(specs));
}

// The shard holding `tensor` according to the index.
std::string shard_of(const std::string& dir, const std::string& tensor) {
  const auto index = nlohmann::json::parse(test::read_file(dir + "/diffusion_pytorch_model.safetensors.index.json"));
  return dir + "/" + index["weight_map"][tensor].get<std::string>();
}

TEST_F(LtxCheckpointTool, BrokenShardsGiveOneClearError) {
  const std::string good = make("good", "--config tiny --dtype bf16 --shard-size 20KB --seed 9");
  ASSERT_TRUE(io::open_checkpoint(good).is_ok());
  ASSERT_TRUE(LtxCpuWeights::open(good).is_ok());
  const std::string kTarget = "transformer_blocks.1.attn2.to_v.weight";

  {  // truncated shard: 100 bytes cut off its data section
    const std::string d = copy(good, "truncated");
    const std::string shard = shard_of(d, kTarget);
    const std::string name = fs::path(shard).filename().string();
    fs::resize_file(shard, fs::file_size(shard) - 100);
    Result<io::SafetensorsCheckpoint> c = io::open_checkpoint(d);
    ASSERT_FALSE(c.is_ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidModel) << c.status().to_string();
    EXPECT_NE(c.status().message().find(name), std::string::npos) << c.status().to_string();
    std::printf("  truncated shard: %s\n", c.status().to_string().c_str());
    expect_cli_refuses(d, dir_.path().string(), {name});
  }
  {  // a shard file missing
    const std::string d = copy(good, "noshard");
    const std::string shard = shard_of(d, kTarget);
    fs::remove(shard);
    Result<io::SafetensorsCheckpoint> c = io::open_checkpoint(d);
    ASSERT_FALSE(c.is_ok());
    EXPECT_NE(c.status().message().find(fs::path(shard).filename().string()), std::string::npos) << c.status().to_string();
    std::printf("  missing shard: %s\n", c.status().to_string().c_str());
    expect_cli_refuses(d, dir_.path().string(), {fs::path(shard).filename().string()});
  }
  {  // the index maps a tensor its shard does not hold
    const std::string d = copy(good, "unmapped");
    rewrite_shard(shard_of(d, kTarget), [&](std::vector<test::SafetensorsSpec>& s) {
      s.erase(std::remove_if(s.begin(), s.end(), [&](const auto& t) { return t.name == kTarget; }), s.end());
    });
    Result<io::SafetensorsCheckpoint> c = io::open_checkpoint(d);
    ASSERT_FALSE(c.is_ok());
    EXPECT_NE(c.status().message().find(kTarget), std::string::npos) << c.status().to_string();
    std::printf("  mapped but absent: %s\n", c.status().to_string().c_str());
    expect_cli_refuses(d, dir_.path().string(), {kTarget});
  }
  {  // a tensor missing from both its shard and the index
    const std::string d = copy(good, "missing");
    rewrite_shard(shard_of(d, kTarget), [&](std::vector<test::SafetensorsSpec>& s) {
      s.erase(std::remove_if(s.begin(), s.end(), [&](const auto& t) { return t.name == kTarget; }), s.end());
    });
    const std::string ip = d + "/diffusion_pytorch_model.safetensors.index.json";
    auto index = nlohmann::json::parse(test::read_file(ip));
    index["weight_map"].erase(kTarget);
    test::write_file(ip, index.dump());
    ASSERT_TRUE(io::open_checkpoint(d).is_ok());
    Result<LtxCpuWeights> w = LtxCpuWeights::open(d);
    ASSERT_FALSE(w.is_ok());
    EXPECT_EQ(w.status().code(), StatusCode::kNotFound) << w.status().to_string();
    EXPECT_NE(w.status().message().find(kTarget), std::string::npos) << w.status().to_string();
    std::printf("  missing tensor: %s\n", w.status().to_string().c_str());
#ifdef WS_HAVE_CUDA
    expect_cli_refuses(d, dir_.path().string(), {kTarget});
#else
    expect_cli_refuses(d, dir_.path().string(), {"without CUDA"});
#endif
  }
  {  // a wrong-shaped tensor: attn2.to_v.weight [16, 16] stored as [16, 8]
    const std::string d = copy(good, "shape");
    rewrite_shard(shard_of(d, kTarget), [&](std::vector<test::SafetensorsSpec>& s) {
      for (auto& t : s)
        if (t.name == kTarget) {
          t.shape = {16, 8};
          t.data.resize(16 * 8 * 2);
        }
    });
    Result<LtxCpuWeights> w = LtxCpuWeights::open(d);
    ASSERT_FALSE(w.is_ok());
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidModel) << w.status().to_string();
    EXPECT_NE(w.status().message().find(kTarget), std::string::npos) << w.status().to_string();
    EXPECT_NE(w.status().message().find("[16, 8]"), std::string::npos) << w.status().to_string();
    EXPECT_NE(w.status().message().find("[16, 16]"), std::string::npos) << w.status().to_string();
    std::printf("  wrong shape: %s\n", w.status().to_string().c_str());
#ifdef WS_HAVE_CUDA
    expect_cli_refuses(d, dir_.path().string(), {kTarget, "[16, 8]"});
#else
    expect_cli_refuses(d, dir_.path().string(), {"without CUDA"});
#endif
  }
}

}  // namespace
}  // namespace ws::flow
