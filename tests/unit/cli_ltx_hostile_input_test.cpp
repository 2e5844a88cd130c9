// Hostile options and files for `warpstream ltx-block` / `ltx`, through the real CLI, on a machine without a GPU:
// each must be refused host-side (exit 2, one "error: " line naming the option, file or field) before any device
// work — the CPU build runs the same checks before saying it has no CUDA, a CUDA build before device start-up.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/safetensors_writer.h"
#include "warpstream/safetensors.h"
#include "support/test_util.h"

namespace ws {
namespace {

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class CliLtxHostileInput : public ::testing::Test {
 protected:
  struct Run {
    int exit_code = -1;
    std::string err;
  };
  Run cli(const std::string& args) {
    const std::string err = dir_.file("stderr.txt");
    const int rc = std::system((sh_quote(WS_CLI_PATH) + " " + args + " > /dev/null 2> " + sh_quote(err)).c_str());
    Run r;
    r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.err = test::read_file(err);
    return r;
  }
  void expect_refused(const std::string& args, std::initializer_list<std::string> keywords) {
    const Run r = cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr:\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    for (const auto& k : keywords) EXPECT_NE(r.err.find(k), std::string::npos) << "missing '" << k << "' in: " << r.err;
  }
  // A one-tensor safetensors file with `metadata` (ltx-block reads heads/head_dim/... from it without config.json).
  std::string block_file(const std::string& name, const std::map<std::string, std::string>& metadata = {}) {
    const std::string path = dir_.file(name);
    test::write_file(path, test::safetensors_image({{"transformer_blocks.0.attn1.to_q.weight", "F32", {2, 2},
                                                      test::f32_bytes({1, 2, 3, 4})}},
                                                    metadata));
    return path;
  }
  // A diffusers-style folder: config.json (`config`) + one safetensors file.
  std::string block_dir(const std::string& name, const std::string& config) {
    const std::string d = dir_.file(name);
    std::filesystem::create_directories(d);
    test::write_file(d + "/config.json", config);
    test::write_file(d + "/diffusion_pytorch_model.safetensors",
                     test::safetensors_image({{"x", "F32", {1}, test::f32_bytes({1})}}));
    return d;
  }
  test::TempDir dir_;
};

TEST_F(CliLtxHostileInput, BlockGridWithTrailingJunk) {
  const std::string m = sh_quote(block_file("b.safetensors"));
  expect_refused("ltx-block --model " + m + " --grid 2x2x2junk", {"--grid", "2x2x2junk"});
  expect_refused("ltx-block --model " + m + " --grid 2x2", {"--grid"});
  expect_refused("ltx-block --model " + m + " --grid 4096x4096x4096", {"--grid"});
}

TEST_F(CliLtxHostileInput, BlockOptionBounds) {
  const std::string m = sh_quote(block_file("b.safetensors"));
  expect_refused("ltx-block --model " + m + " --batch 0", {"--batch"});
  expect_refused("ltx-block --model " + m + " --text-tokens 100000", {"--text-tokens"});
  expect_refused("ltx-block --model " + m + " --heads -3", {"--heads"});
  // heads * head_dim = 10^10 overflows int (LtxBlockConfig::dim()): refused with both factors named.
  expect_refused("ltx-block --model " + m + " --heads 100000 --head-dim 100000", {"heads 100000", "head_dim 100000"});
  expect_refused("ltx-block --model " + m + " --weights fp16", {"--weights", "fp16"});
}

TEST_F(CliLtxHostileInput, BlockGoldensFolderMustExist) {
  const std::string m = sh_quote(block_file("b.safetensors"));
  expect_refused("ltx-block --model " + m + " --goldens " + sh_quote(dir_.file("absent")), {"--goldens", "absent"});
  std::filesystem::create_directories(dir_.file("empty_goldens"));
  expect_refused("ltx-block --model " + m + " --goldens " + sh_quote(dir_.file("empty_goldens")),
                 {"goldens.safetensors"});
}

TEST_F(CliLtxHostileInput, BlockConfigWrongTypesNameFileAndField) {
  // Before: nlohmann's type_error escaped as "internal error" (exit 1). Now parse_ltx_config names file and field.
  const std::string d = block_dir("float_heads", R"({"num_attention_heads": 2.5, "attention_head_dim": 4})");
  expect_refused("ltx-block --model " + sh_quote(d), {"config.json", "num_attention_heads", "2.5"});
  const std::string e = block_dir("str_eps", R"({"num_attention_heads": 2, "attention_head_dim": 4, "norm_eps": "x"})");
  expect_refused("ltx-block --model " + sh_quote(e), {"config.json", "norm_eps"});
  const std::string h = block_dir("huge_heads", R"({"num_attention_heads": 1099511627776, "attention_head_dim": 4})");
  expect_refused("ltx-block --model " + sh_quote(h), {"num_attention_heads", "1099511627776"});
}

TEST_F(CliLtxHostileInput, BlockMetadataIsCheckedNotAtoi) {
  // std::atoi("abc") = 0 and atoi("99999999999") is undefined; both are refused naming the key and the value.
  expect_refused("ltx-block --model " + sh_quote(block_file("abc.safetensors", {{"heads", "abc"}})),
                 {"\"heads\"", "'abc'"});
  expect_refused("ltx-block --model " + sh_quote(block_file("huge.safetensors", {{"head_dim", "99999999999"}})),
                 {"\"head_dim\"", "99999999999"});
  expect_refused("ltx-block --model " + sh_quote(block_file("tail.safetensors", {{"heads", "8x"}})), {"'8x'"});
  expect_refused("ltx-block --model " + sh_quote(block_file("neg.safetensors", {{"ff_inner", "-4"}})), {"ff_inner"});
}

TEST_F(CliLtxHostileInput, ModelOptionBounds) {
  const std::string d = sh_quote(block_dir("m", R"({"num_layers": 1, "num_attention_heads": 2, "attention_head_dim": 4})"));
  expect_refused("ltx --model " + d + " --grid 2x2x2junk", {"--grid"});
  expect_refused("ltx --model " + d + " --batch 3", {"--batch"});
  expect_refused("ltx --model " + d + " --text-tokens 0", {"--text-tokens"});
  expect_refused("ltx --model " + d + " --max-slots 100000", {"--max-slots"});
  expect_refused("ltx --model " + d + " --tokens 0", {"--tokens"});
  expect_refused("ltx --model " + d + " --tokens -1", {"--tokens", "-1"});
  expect_refused("ltx --model " + d + " --weights foo", {"--stream-weights", "foo"});
  expect_refused("ltx --model " + d + " --vram-budget junk", {"--vram-budget", "junk"});
  expect_refused("ltx --model " + d + " --tokens 8388608", {"--tokens"});
  expect_refused("ltx --model " + d + " --tokens 8 --grid 1x1x8", {"--tokens", "--grid"});
  expect_refused("ltx --model " + d + " --resident --vram-budget 1GiB", {"--resident", "--vram-budget"});
  expect_refused("ltx --model " + d + " --vram-budget 0", {"--vram-budget", "positive"});
  expect_refused("ltx --model " + d + " --vram-budget ''", {"--vram-budget", "empty"});
  // Arguments are echoed escaped (hostile-input check of 2026-12-02: raw ESC reached the terminal).
  const std::string esc = sh_quote("\x1b[2J");
  for (const std::string& opt : {"--vram-budget", "--weights"}) {
    const Run r = cli("ltx --model " + d + " " + opt + " " + esc);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << opt << ": raw ESC in: " << r.err;
    EXPECT_NE(r.err.find("\\x1b"), std::string::npos) << opt << ": " << r.err;
  }
  const Run cli11 = cli("classify --device " + esc);  // CLI11's own message
  EXPECT_EQ(cli11.exit_code, 2) << cli11.err;
  EXPECT_EQ(cli11.err.find('\x1b'), std::string::npos) << cli11.err;
  const Run cmd = cli(esc);  // an unknown command
  EXPECT_EQ(cmd.exit_code, 2) << cmd.err;
  EXPECT_EQ(cmd.err.find('\x1b'), std::string::npos) << cmd.err;
}

TEST_F(CliLtxHostileInput, MissingCheckpointSaysItDoesNotExist) {
  expect_refused("ltx --model " + sh_quote(dir_.file("no_such_folder")), {"does not exist", "no_such_folder"});
}

TEST_F(CliLtxHostileInput, ModelConfigMustBeABoundedRegularFile) {
  // A FIFO used to block the reader forever; a 90 MB config.json was read whole.
  const std::string fifo_dir = dir_.file("fifo");
  std::filesystem::create_directories(fifo_dir);
  ASSERT_EQ(::mkfifo((fifo_dir + "/config.json").c_str(), 0600), 0);
  test::write_file(fifo_dir + "/diffusion_pytorch_model.safetensors",
                   test::safetensors_image({{"x", "F32", {1}, test::f32_bytes({1})}}));
  expect_refused("ltx --model " + sh_quote(fifo_dir), {"config.json", "not a regular file"});
  const std::string big = block_dir("big", std::string(2 << 20, ' ') + "{}");
  expect_refused("ltx --model " + sh_quote(big), {"config.json", "1048576-byte limit"});
}

TEST_F(CliLtxHostileInput, ModelConfigWrongTypesNameTheField) {
  const std::string d = block_dir("str", R"({"num_layers": "1"})");
  expect_refused("ltx --model " + sh_quote(d), {"config.json", "num_layers"});
}

TEST_F(CliLtxHostileInput, ModelNumLayersCheckedAgainstTheCheckpoint) {
  // 2^20 layers used to build ~30M tensor names (3 GB, 14 s) before "no tensor proj_in.weight".
  const std::string d = block_dir("layers", R"({"num_layers": 1048576})");
  expect_refused("ltx --model " + sh_quote(d), {"num_layers is 1048576", "transformer_blocks.1048575."});
}

TEST_F(CliLtxHostileInput, BlockFileClaimingAGigabyteRefusedBeforeAnyCopy) {
  // A 1 GiB sparse file whose header declares to_q.weight [8, 33554432]: refused from the header (CUDA build: the
  // shape message; CPU build: after the host checks, "built without CUDA"), in well under a second — the
  // WeightStore used to copy the whole gigabyte (2 GB RSS) before the shape check.
  const std::string path = dir_.file("sparse.safetensors");
  const int64_t cols = int64_t{1} << 25;
  std::string header = R"({"__metadata__":{"heads":"2","head_dim":"4","cross_dim":"8"},)"
                       R"("transformer_blocks.0.scale_shift_table":{"dtype":"F32","shape":[6,8],"data_offsets":[0,192]},)"
                       R"("transformer_blocks.0.attn1.to_q.weight":{"dtype":"F32","shape":[8,)" +
                       std::to_string(cols) + R"(],"data_offsets":[192,)" + std::to_string(192 + 8 * cols * 4) + "]}}";
  while (header.size() % 8) header.push_back(' ');
  test::write_file(path, test::le64(header.size()) + header);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(8 + header.size() + 192 + 8 * cols * 4)), 0);
  const auto t0 = std::chrono::steady_clock::now();
#ifdef WS_HAVE_CUDA
  expect_refused("ltx-block --model " + sh_quote(path), {"to_q.weight", "[8, 33554432]", "the config needs [8, 8]"});
#else
  expect_refused("ltx-block --model " + sh_quote(path), {"without CUDA"});
#endif
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST_F(CliLtxHostileInput, ModelFileClaimingAGigabyteRefusedBeforeAnyCopy) {
  // proj_in.weight declared [8, 2^25] in a sparse 1 GiB shard: `ltx` loaded it into the WeightStore (1 GiB copied,
  // 2 GB RSS) and never checked its shape; now LtxModel::validate_tensors refuses it from the header.
  const std::string d = dir_.file("ltx_sparse");
  std::filesystem::create_directories(d);
  test::write_file(d + "/config.json", R"({"num_layers": 1, "num_attention_heads": 2, "attention_head_dim": 4,
      "cross_attention_dim": 8, "caption_channels": 8, "in_channels": 4, "out_channels": 4})");
  const std::string path = d + "/diffusion_pytorch_model.safetensors";
  const int64_t cols = int64_t{1} << 25;
  std::string header = R"({"transformer_blocks.0.scale_shift_table":{"dtype":"F32","shape":[6,8],"data_offsets":[0,192]},)"
                       R"("proj_in.weight":{"dtype":"F32","shape":[8,)" + std::to_string(cols) +
                       R"(],"data_offsets":[192,)" + std::to_string(192 + 8 * cols * 4) + "]}}";
  while (header.size() % 8) header.push_back(' ');
  test::write_file(path, test::le64(header.size()) + header);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(8 + header.size() + 192 + 8 * cols * 4)), 0);
  const auto t0 = std::chrono::steady_clock::now();
#ifdef WS_HAVE_CUDA
  expect_refused("ltx --model " + sh_quote(d), {"proj_in.weight", "[8, 33554432]", "the config needs [8, 4]"});
#else
  expect_refused("ltx --model " + sh_quote(d), {"without CUDA"});
#endif
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST_F(CliLtxHostileInput, ModelWarnsAboutTensorsTheConfigDoesNotUse) {
  // The tiny model's tensors (tests/data/ltx_tiny) in one shard plus a tensor no LTX transformer has in another:
  // `ltx` says how many tensors it does not use and names them (diffusers' "Some weights ... were not used"),
  // before any device work; a config.json that does not describe the checkpoint shows this way.
  const std::string d = dir_.file("ltx_extra");
  std::filesystem::create_directories(d);
  const std::string tiny = std::string(WS_TEST_DATA_DIR) + "/ltx_tiny";
  std::filesystem::copy_file(tiny + "/config.json", d + "/config.json");
  std::filesystem::copy_file(tiny + "/diffusion_pytorch_model.safetensors", d + "/shard-a.safetensors");
  test::write_file(d + "/shard-b.safetensors",
                   test::safetensors_image({{"vae.decoder.conv_in.weight", "F32", {2, 2}, test::f32_bytes({1, 2, 3, 4})}}, {}));
  auto ck = io::open_checkpoint(tiny + "/diffusion_pytorch_model.safetensors");
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  std::string map;
  for (const io::CheckpointTensor& t : ck->tensors()) map += "\"" + t.tensor->name + "\": \"shard-a.safetensors\", ";
  map += "\"vae.decoder.conv_in.weight\": \"shard-b.safetensors\"";
  test::write_file(d + "/diffusion_pytorch_model.safetensors.index.json", "{\"metadata\": {}, \"weight_map\": {" + map + "}}");
  const Run r = cli("ltx --model " + sh_quote(d) + " --resident --tokens 4 --text-tokens 2 --repeat 1");
#ifdef WS_HAVE_CUDA
  // No GPU here: the device start-up fails after the warning (exit 2); on a GPU machine the tiny model runs (0).
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  EXPECT_NE(r.err.find("warning: ltx: 1 tensor(s) of"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'vae.decoder.conv_in.weight'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
#else
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("without CUDA"), std::string::npos) << r.err;
#endif
}

}  // namespace
}  // namespace ws
