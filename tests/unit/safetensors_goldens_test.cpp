// Against files made by the reference implementations (tools/safetensors_goldens.py: PyTorch 2.x,
// safetensors, diffusers 0.42.1): our bf16/fp8 conversions equal torch's casts code for code; the
// WeightStore's int8/fp8 per-channel codes and scales equal torch's computation bit for bit; a
// real diffusers save_pretrained folder (3 shards + index + config.json) opens and resolves.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "flow/host/ltx_config.h"
#include "flow/host/weight_store.h"
#include "support/test_util.h"
#include "warpstream/numeric.h"
#include "warpstream/safetensors.h"

namespace ws {
namespace {

const std::string kDir = std::string(WS_TEST_DATA_DIR) + "/safetensors";

io::SafetensorsCheckpoint open_or_die(const std::string& path) {
  Result<io::SafetensorsCheckpoint> c = io::open_checkpoint(path);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(c).value();
}

template <typename T>
std::vector<T> values(const io::SafetensorsCheckpoint& c, const std::string& name, DType dtype) {
  io::CheckpointTensor t = c.find(name);
  EXPECT_NE(t.tensor, nullptr) << name;
  if (t.tensor == nullptr) return {};
  EXPECT_EQ(t.tensor->dtype, dtype) << name;
  std::vector<T> v(t.bytes.size() / sizeof(T));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
  return v;
}

TEST(SafetensorsGoldens, TorchCastsMatchNumericH) {
  io::SafetensorsCheckpoint c = open_or_die(kDir + "/torch_goldens.safetensors");
  EXPECT_EQ(c.files()[0].metadata().at("generator"), "tools/safetensors_goldens.py");
  const auto src = values<float>(c, "src.f32", DType::kFloat32);
  const auto bf = values<uint16_t>(c, "src.to_bf16", DType::kBFloat16);
  const auto f8 = values<uint8_t>(c, "src.to_fp8", DType::kFloat8E4M3FN);
  ASSERT_GT(src.size(), 2000u);
  ASSERT_EQ(bf.size(), src.size());
  ASSERT_EQ(f8.size(), src.size());
  int bad_bf = 0, bad_f8 = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    if (float_to_bf16(src[i]) != bf[i] && bad_bf++ < 5)
      ADD_FAILURE() << "bf16 [" << i << "] x = " << src[i] << ": ours 0x" << std::hex << float_to_bf16(src[i]) << " torch 0x" << bf[i];
    if (float_to_fp8_e4m3(src[i]) != f8[i] && bad_f8++ < 5)
      ADD_FAILURE() << "fp8 [" << i << "] x = " << src[i] << ": ours 0x" << std::hex << int(float_to_fp8_e4m3(src[i]))
                    << " torch 0x" << int(f8[i]);
    // and decoding torch's code gives torch's value back through our decoder
    if (bf16_to_float(bf[i]) != bf16_to_float(float_to_bf16(src[i])) && bad_bf++ < 5) ADD_FAILURE() << "bf16 decode " << i;
  }
  EXPECT_EQ(bad_bf, 0);
  EXPECT_EQ(bad_f8, 0);
}

TEST(SafetensorsGoldens, WeightStoreMatchesTorchPerChannelQuantisation) {
  io::SafetensorsCheckpoint c = open_or_die(kDir + "/torch_goldens.safetensors");
  const std::vector<std::string> names = {"weight"};
  struct Case { flow::WeightFormat format; const char* q; const char* scale; DType dtype; };
  for (const Case& k : {Case{flow::WeightFormat::kInt8, "int8.q", "int8.scale", DType::kInt8},
                        Case{flow::WeightFormat::kFp8E4M3, "fp8.q", "fp8.scale", DType::kFloat8E4M3FN}}) {
    SCOPED_TRACE(flow::weight_format_name(k.format));
    flow::WeightStoreOptions o;
    o.format = k.format;
    o.quantize = [](const io::SafetensorsTensor& t) { return t.name == "weight"; };
    Result<flow::WeightStore> s = flow::WeightStore::load(c, names, o);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    const flow::StoredTensor& w = **s->get("weight");
    ASSERT_EQ(w.dtype, k.dtype);
    ASSERT_EQ(w.shape, (Shape{64, 96}));
    const auto q = values<uint8_t>(c, k.q, k.dtype);
    const auto scale = values<float>(c, k.scale, DType::kFloat32);
    ASSERT_EQ(q.size(), 64u * 96u);
    ASSERT_EQ(scale.size(), 64u);
    for (size_t r = 0; r < 64; ++r) ASSERT_EQ(w.scales[r], scale[r]) << "scale row " << r;
    EXPECT_EQ(w.scales[7], 1.0f);  // the all-zero row
    for (size_t i = 0; i < q.size(); ++i)
      ASSERT_EQ(w.data_as<uint8_t>()[i], q[i]) << "code [" << i / 96 << ", " << i % 96 << "]";
  }
}

TEST(SafetensorsGoldens, DiffusersShardedFolder) {
  const std::string dir = kDir + "/ltx_tiny_sharded";
  io::SafetensorsCheckpoint c = open_or_die(dir);
  EXPECT_EQ(c.files().size(), 3u);
  const nlohmann::json index = nlohmann::json::parse(test::read_file(dir + "/diffusion_pytorch_model.safetensors.index.json"));
  const auto& map = index.at("weight_map");
  ASSERT_EQ(c.size(), map.size());
  uint64_t total = 0;
  for (auto it = map.begin(); it != map.end(); ++it) {
    io::CheckpointTensor t = c.find(it.key());
    ASSERT_NE(t.tensor, nullptr) << it.key();
    EXPECT_EQ(t.file->path(), dir + "/" + it.value().get<std::string>()) << it.key();
    total += t.tensor->bytes();
  }
  EXPECT_EQ(total, index.at("metadata").at("total_size").get<uint64_t>());
  struct Expect { const char* name; Shape shape; };
  for (const Expect& e : {Expect{"proj_in.weight", {16, 4}}, Expect{"transformer_blocks.0.attn1.to_q.weight", {16, 16}},
                          Expect{"transformer_blocks.0.attn2.to_k.weight", {16, 16}},
                          Expect{"transformer_blocks.0.ff.net.0.proj.weight", {64, 16}},
                          Expect{"transformer_blocks.0.ff.net.2.weight", {16, 64}},
                          Expect{"transformer_blocks.0.scale_shift_table", {6, 16}}, Expect{"scale_shift_table", {2, 16}},
                          Expect{"caption_projection.linear_1.weight", {16, 16}}, Expect{"proj_out.weight", {4, 16}}}) {
    io::CheckpointTensor t = c.find(e.name);
    ASSERT_NE(t.tensor, nullptr) << e.name;
    EXPECT_EQ(t.tensor->shape, e.shape) << e.name;
    EXPECT_EQ(t.tensor->dtype, DType::kFloat32) << e.name;
  }

  ASSERT_TRUE(c.has_config());
  Result<flow::LtxConfig> cfg = flow::parse_ltx_config(c.config_text(), c.config_path());
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->in_channels, 4);
  EXPECT_EQ(cfg->inner_dim(), 16);
  EXPECT_EQ(cfg->cross_attention_dim, 16);
  EXPECT_EQ(cfg->caption_channels, 16);
  EXPECT_EQ(cfg->num_layers, 1);

  // The whole model into one store with fp8 block linears: exactly the 10 block linears convert.
  flow::WeightStoreOptions o;
  o.format = flow::WeightFormat::kFp8E4M3;
  Result<flow::WeightStore> s = flow::WeightStore::load(c, o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->tensors().size(), c.size());
  int converted = 0;
  for (const flow::StoredTensor& t : s->tensors()) {
    if (t.scales != nullptr) {
      ++converted;
      EXPECT_TRUE(flow::is_ltx_block_linear_weight(t.name)) << t.name;
      EXPECT_EQ(t.dtype, DType::kFloat8E4M3FN);
    } else {
      EXPECT_EQ(t.dtype, DType::kFloat32) << t.name;
    }
  }
  EXPECT_EQ(converted, 10);
}

}  // namespace
}  // namespace ws
