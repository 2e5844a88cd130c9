// Checkpoint folders: a single file, a diffusers folder, a 2-shard folder with its index json and
// config.json; lookups across shards, and one clear error for each broken index.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "support/safetensors_writer.h"
#include "support/test_util.h"
#include "warpstream/safetensors.h"

namespace ws::io {
namespace {

using test::SafetensorsSpec;
using test::TempDir;

const std::string kConfig = R"({"_class_name": "LTXVideoTransformer3DModel", "num_layers": 2, "in_channels": 8})";

SafetensorsSpec spec(const std::string& name, std::vector<float> values) {
  return {name, "F32", {static_cast<int64_t>(values.size())}, test::f32_bytes(values)};
}

// shard 1: a, b; shard 2: c. Index maps them; config.json beside.
void write_two_shards(const TempDir& dir, const std::string& weight_map_json) {
  test::write_file(dir.file("diffusion_pytorch_model-00001-of-00002.safetensors"),
                   test::safetensors_image({spec("a", {1, 2}), spec("b", {3, 4, 5})}));
  test::write_file(dir.file("diffusion_pytorch_model-00002-of-00002.safetensors"), test::safetensors_image({spec("c", {6})}));
  test::write_file(dir.file("diffusion_pytorch_model.safetensors.index.json"),
                   R"({"metadata": {"total_size": 24}, "weight_map": )" + weight_map_json + "}");
  test::write_file(dir.file("config.json"), kConfig);
}

const std::string kGoodMap = R"({"a": "diffusion_pytorch_model-00001-of-00002.safetensors",
                                 "b": "diffusion_pytorch_model-00001-of-00002.safetensors",
                                 "c": "diffusion_pytorch_model-00002-of-00002.safetensors"})";

float first_float(const CheckpointTensor& t) {
  float f;
  std::memcpy(&f, t.bytes.data(), 4);
  return f;
}

void expect_error(const Status& s, StatusCode code, std::initializer_list<std::string> needles) {
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const std::string& n : needles) EXPECT_NE(s.message().find(n), std::string::npos) << "missing '" << n << "' in: " << s.message();
}

TEST(SafetensorsCheckpoint, TwoShardFolder) {
  TempDir dir;
  write_two_shards(dir, kGoodMap);
  Result<SafetensorsCheckpoint> r = open_checkpoint(dir.path().string());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const SafetensorsCheckpoint& c = *r;
  ASSERT_EQ(c.files().size(), 2u);
  EXPECT_EQ(c.size(), 3u);
  CheckpointTensor a = c.find("a"), b = c.find("b"), cc = c.find("c");
  ASSERT_NE(a.tensor, nullptr);
  ASSERT_NE(cc.tensor, nullptr);
  EXPECT_EQ(a.file, &c.files()[0]);
  EXPECT_EQ(b.file, &c.files()[0]);
  EXPECT_EQ(cc.file, &c.files()[1]);
  EXPECT_EQ(first_float(a), 1.0f);
  EXPECT_EQ(first_float(b), 3.0f);
  EXPECT_EQ(b.tensor->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(first_float(cc), 6.0f);
  EXPECT_EQ(c.find("d").tensor, nullptr);
  Result<CheckpointTensor> missing = c.get("d");
  expect_error(missing.status(), StatusCode::kNotFound, {"no tensor 'd'"});
  EXPECT_EQ(c.tensors().size(), 3u);
  EXPECT_TRUE(c.has_config());
  EXPECT_EQ(c.config_text(), kConfig);

  // The index file itself is accepted as the checkpoint path.
  Result<SafetensorsCheckpoint> via_index = open_checkpoint(dir.file("diffusion_pytorch_model.safetensors.index.json"));
  ASSERT_TRUE(via_index.is_ok()) << via_index.status().to_string();
  EXPECT_EQ(first_float(via_index->find("c")), 6.0f);

  // Views survive moving the checkpoint.
  SafetensorsCheckpoint moved = std::move(r).value();
  EXPECT_EQ(first_float(moved.find("b")), 3.0f);
}

TEST(SafetensorsCheckpoint, SingleFileAndDiffusersFolder) {
  TempDir dir;
  test::write_file(dir.file("diffusion_pytorch_model.safetensors"), test::safetensors_image({spec("w", {7, 8})}));
  test::write_file(dir.file("other.safetensors"), test::safetensors_image({spec("x", {9})}));
  test::write_file(dir.file("config.json"), kConfig);
  Result<SafetensorsCheckpoint> folder = open_checkpoint(dir.path().string() + "/");
  ASSERT_TRUE(folder.is_ok()) << folder.status().to_string();
  EXPECT_EQ(folder->files().size(), 1u);
  EXPECT_EQ(first_float(folder->find("w")), 7.0f);
  EXPECT_EQ(folder->config_text(), kConfig);
  Result<SafetensorsCheckpoint> file = open_checkpoint(dir.file("other.safetensors"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(first_float(file->find("x")), 9.0f);
  EXPECT_EQ(file->find("w").tensor, nullptr);
  EXPECT_EQ(file->config_path(), dir.file("config.json"));
}

TEST(SafetensorsCheckpoint, FolderWithoutAnyCheckpoint) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "transformer");
  expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kNotFound,
               {"holds no .safetensors", "transformer/ subfolder"});
  expect_error(open_checkpoint(dir.file("absent")).status(), StatusCode::kNotFound, {"absent"});
}

TEST(SafetensorsCheckpoint, AmbiguousFolder) {
  TempDir dir;
  test::write_file(dir.file("a.safetensors"), test::safetensors_image({spec("x", {1})}));
  test::write_file(dir.file("b.safetensors"), test::safetensors_image({spec("y", {1})}));
  expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidArgument,
               {"several", "'a.safetensors'", "'b.safetensors'"});
}

TEST(SafetensorsCheckpoint, MissingShard) {
  TempDir dir;
  write_two_shards(dir, R"({"a": "diffusion_pytorch_model-00001-of-00002.safetensors", "z": "shard-3.safetensors"})");
  expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kNotFound,
               {"shard 'shard-3.safetensors'", "holds 'z'", "No such file"});
}

TEST(SafetensorsCheckpoint, TensorMissingInItsShard) {
  TempDir dir;
  write_two_shards(dir, R"({"a": "diffusion_pytorch_model-00001-of-00002.safetensors",
                            "b": "diffusion_pytorch_model-00001-of-00002.safetensors",
                            "c": "diffusion_pytorch_model-00001-of-00002.safetensors"})");
  expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel,
               {"tensor 'c' is mapped to shard 'diffusion_pytorch_model-00001-of-00002.safetensors'", "no such tensor"});
}

TEST(SafetensorsCheckpoint, ShardTensorNotInTheMap) {
  TempDir dir;
  write_two_shards(dir, R"({"a": "diffusion_pytorch_model-00001-of-00002.safetensors",
                            "c": "diffusion_pytorch_model-00002-of-00002.safetensors"})");
  expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel,
               {"holds tensor 'b'", "does not list"});
}

TEST(SafetensorsCheckpoint, PathTraversalInShardName) {
  for (const char* bad : {"../escape.safetensors", "sub/x.safetensors", "/etc/passwd", "..", "a\\\\b.safetensors", ""}) {
    SCOPED_TRACE(bad);
    TempDir dir;
    write_two_shards(dir, std::string(R"({"a": ")") + bad + "\"}");
    // A file the traversal would reach must not matter.
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel,
                 {"weight_map['a']", "must be a plain file name"});
  }
}

TEST(SafetensorsCheckpoint, MalformedIndexAndConfig) {
  {
    TempDir dir;
    write_two_shards(dir, "[]");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel, {"\"weight_map\" must be an object"});
  }
  {
    TempDir dir;
    write_two_shards(dir, R"({"a": 3})");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel, {"weight_map['a'] must be a shard file name"});
  }
  {
    TempDir dir;
    write_two_shards(dir, "{}");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel, {"\"weight_map\" is empty"});
  }
  {
    TempDir dir;  // duplicate key: nlohmann's DOM would silently keep the last
    write_two_shards(dir, R"({"a": "diffusion_pytorch_model-00001-of-00002.safetensors",
                              "a": "diffusion_pytorch_model-00002-of-00002.safetensors"})");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel, {"key 'a' appears twice"});
  }
  {
    TempDir dir;
    write_two_shards(dir, kGoodMap);
    test::write_file(dir.file("diffusion_pytorch_model.safetensors.index.json"), "{\"weight_map\": ");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel, {"checkpoint index", "not valid JSON"});
  }
  {
    TempDir dir;
    write_two_shards(dir, kGoodMap);
    test::write_file(dir.file("config.json"), "[1, 2]");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel, {"config.json", "must hold a JSON object"});
  }
  {
    TempDir dir;
    write_two_shards(dir, kGoodMap);
    test::write_file(dir.file("config.json"), R"({"num_layers": 2, "num_layers": 3})");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel, {"config.json", "'num_layers' appears twice"});
  }
  {
    TempDir dir;  // a malformed shard: its own error, prefixed by the index and the shard
    write_two_shards(dir, kGoodMap);
    test::write_file(dir.file("diffusion_pytorch_model-00002-of-00002.safetensors"), "short");
    expect_error(open_checkpoint(dir.path().string()).status(), StatusCode::kInvalidModel,
                 {"shard 'diffusion_pytorch_model-00002-of-00002.safetensors'", "is 5 bytes"});
  }
}

}  // namespace
}  // namespace ws::io

namespace ws::io {
namespace {

TEST(SafetensorsCheckpoint, FromParsedFile) {
  const std::string image = test::safetensors_image({spec("m", {4, 5})});
  Result<SafetensorsFile> f = SafetensorsFile::parse({reinterpret_cast<const std::byte*>(image.data()), image.size()}, "buffer");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  SafetensorsCheckpoint c = SafetensorsCheckpoint::from_file(std::move(f).value());
  EXPECT_EQ(c.path(), "buffer");
  EXPECT_EQ(c.size(), 1u);
  EXPECT_FALSE(c.has_config());
  EXPECT_EQ(first_float(c.find("m")), 4.0f);
}

}  // namespace
}  // namespace ws::io
