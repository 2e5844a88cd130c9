// parse_json_bounded (src/core/json_parse.h): the one bounded JSON parse of the runtime's JSON files, and the
// readers that use it (checkpoint index/config, LTX config, bench reports via `compare`).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/json_parse.h"
#include "flow/host/ltx_config.h"
#include "support/test_util.h"
#include "warpstream/safetensors.h"

namespace ws {
namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonParseBounded, AcceptsUpToTheBoundRefusesOneMore) {
  auto ok = parse_json_bounded(nested(kMaxJsonDepth), "doc");
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  auto deep = parse_json_bounded(nested(kMaxJsonDepth + 1), "doc");
  ASSERT_FALSE(deep.is_ok());
  EXPECT_NE(deep.status().message().find("nested deeper than 64 levels"), std::string::npos) << deep.status().to_string();
  auto objects = parse_json_bounded(R"({"a":{"b":{"c":1}}})", "doc", JsonParseOptions{.max_depth = 2});
  EXPECT_FALSE(objects.is_ok());
}

TEST(JsonParseBounded, DeepDocumentRefusedQuicklyWithoutMemory) {
  // 20M levels: an unbounded DOM build takes gigabytes; the bound stops after 65 bytes.
  const std::string text = nested(20'000'000);
  struct rusage before {};
  getrusage(RUSAGE_SELF, &before);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = parse_json_bounded(text, "deep", JsonParseOptions{.code = StatusCode::kInvalidModel});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  struct rusage after {};
  getrusage(RUSAGE_SELF, &after);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel);
  EXPECT_LT(ms, 1000.0);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak RSS growth";
}

TEST(JsonParseBounded, DuplicateKeysAndBadJsonNamed) {
  auto dup = parse_json_bounded(R"({"k\u001b[31m": 1, "k\u001b[31m": 2})", "cfg 'x'",
                                JsonParseOptions{.refuse_duplicate_keys = true});
  ASSERT_FALSE(dup.is_ok());
  EXPECT_NE(dup.status().message().find("cfg 'x': key 'k\\x1b[31m' appears twice"), std::string::npos)
      << dup.status().message();
  EXPECT_TRUE(parse_json_bounded(R"({"a": 1, "a": 2})", "cfg").is_ok());  // allowed unless asked
  auto bad = parse_json_bounded("{\"a\": ", "cfg");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("cfg is not valid JSON"), std::string::npos);
}

// Found by timing_cache_fuzz: nlohmann's parse error quotes what it last read, as long as the input ("{" + 10,000
// tabs + "r"); the message must stay bounded and keep the parser's position and expectation.
TEST(JsonParseBounded, ParseErrorMessageStaysShortForALongLastRead) {
  const std::string text = "{" + std::string(10000, '\t') + "r";
  auto bad = parse_json_bounded(text, "cache 'c.json'");
  ASSERT_FALSE(bad.is_ok());
  const std::string& m = bad.status().message();
  EXPECT_LT(m.size(), 512u) << m;
  EXPECT_NE(m.find("bytes left out"), std::string::npos) << m;
  EXPECT_NE(m.find("cache 'c.json' is not valid JSON"), std::string::npos) << m;
  EXPECT_NE(m.find("expected"), std::string::npos) << m;  // the tail (what the parser expected) is kept
}

TEST(JsonParseBounded, LtxConfigAndCheckpointIndexUseIt) {
  auto c = flow::parse_ltx_config("{\"x\": " + nested(100) + "}", "config.json");
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("nested deeper than 64"), std::string::npos) << c.status().to_string();
  test::TempDir dir;
  test::write_file(dir.file("diffusion_pytorch_model.safetensors.index.json"), "{\"weight_map\": " + nested(1000) + "}");
  auto ck = io::open_checkpoint(dir.path().string());
  ASSERT_FALSE(ck.is_ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(ck.status().message().find("nested deeper than 64"), std::string::npos) << ck.status().to_string();
}

TEST(JsonParseBounded, CompareRefusesADeepReport) {
  test::TempDir dir;
  test::write_file(dir.file("deep.json"), nested(5'000'000));
  const std::string err = dir.file("err.txt");
  const std::string cmd = std::string("'") + WS_CLI_PATH + "' compare '" + dir.file("deep.json") + "' '" +
                          dir.file("deep.json") + "' > /dev/null 2> '" + err + "'";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  const std::string e = test::read_file(err);
  EXPECT_NE(e.find("nested deeper than 64 levels"), std::string::npos) << e;
}

}  // namespace
}  // namespace ws
