// The CUDA executor's timing cache (src/engine/ir/timing_cache.h; device-free, so it lives in engine_ir):
// these CPU tests cover its load rules (any malformed entry ignores the whole cache, with a warning; another identity is ignored
// silently) and its save rules (temp file + rename under flock: readers never see a partial file, even
// with concurrent writers).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/ir/timing_cache.h"
#include "support/test_util.h"

namespace ws::ir {
namespace {

const nlohmann::json kIdentity = {{"gpu", "test"}, {"graph_hash", "0123"}};

std::string cache_text(const nlohmann::json& entries, const nlohmann::json& key = kIdentity) {
  return nlohmann::json{{"format", TimingCache::kFormat}, {"key", key}, {"entries", entries}}.dump();
}

TEST(TimingCache, SaveThenLoadRoundTrips) {
  test::TempDir dir;
  const std::string path = dir.file("cache.json");
  TimingCache a(kIdentity);
  EXPECT_TRUE(a.needs_save());
  a.put("fp32|conv0|Conv|[1,3,8,8]", {.impl = "cudnn", .algo = 1, .fused = true, .time_us = 12.5f});
  a.put("fp32|fc|Gemm|[1,64]", {.heuristic_index = 3, .time_us = 4.0f});
  a.put("fp16|dw|Conv|[1,8,8,8]", {.impl = "ws_depthwise", .time_us = 2.25f});
  ASSERT_TRUE(a.save(path).is_ok());

  TimingCache b(kIdentity);
  b.load(path);
  EXPECT_EQ(b.origin(), TimingCache::Origin::kMatched);
  EXPECT_TRUE(b.warning().empty());
  EXPECT_FALSE(b.needs_save());
  ASSERT_EQ(b.size(), 3u);
  const TimingEntry* conv = b.find("fp32|conv0|Conv|[1,3,8,8]");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(*conv, (TimingEntry{.impl = "cudnn", .algo = 1, .fused = true, .time_us = 12.5f}));
  ASSERT_NE(b.find("fp32|fc|Gemm|[1,64]"), nullptr);
  EXPECT_EQ(b.find("fp32|fc|Gemm|[1,64]")->heuristic_index, 3);
  EXPECT_FALSE(b.find("fp32|fc|Gemm|[1,64]")->impl.has_value());
  EXPECT_EQ(b.find("missing"), nullptr);
  // Only the cache and its lock file are left: the temporary file was renamed.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"cache.json", "cache.json.lock"}));
}

// The runners-up ("alternatives") round-trip in order with their own fields, and load_as_is reads a file under the identity it
// names (what CudaEngine::tune_frame edits).
TEST(TimingCache, AlternativesRoundTripAndLoadAsIsAdoptsTheFileIdentity) {
  test::TempDir dir;
  const std::string path = dir.file("cache.json");
  TimingCache a(kIdentity);
  TimingEntry e{.impl = "ws_pointwise_32x32_split4", .time_us = 5.5f};
  e.alternatives.push_back({.impl = "cudnn", .algo = 1, .fused = true, .time_us = 5.75f});
  e.alternatives.push_back({.impl = "ws_pointwise_32x32", .time_us = 6.0f});
  a.put("fp16|pw|Conv|[1,96,14,14]", e);
  ASSERT_TRUE(a.save(path).is_ok());
  const TimingCache b = TimingCache::load_as_is(path);
  EXPECT_EQ(b.origin(), TimingCache::Origin::kMatched) << b.warning();
  EXPECT_EQ(b.identity(), kIdentity);
  ASSERT_NE(b.find("fp16|pw|Conv|[1,96,14,14]"), nullptr);
  EXPECT_EQ(*b.find("fp16|pw|Conv|[1,96,14,14]"), e);
  EXPECT_EQ(b.find("fp16|pw|Conv|[1,96,14,14]")->alternatives.at(0).algo, 1);
  // No file: empty, no warning; a malformed file: kMalformed with the reason.
  EXPECT_EQ(TimingCache::load_as_is(dir.file("none.json")).origin(), TimingCache::Origin::kEmpty);
  test::write_file(dir.file("bad.json"), "{\"format\": 3}");
  const TimingCache bad = TimingCache::load_as_is(dir.file("bad.json"));
  EXPECT_EQ(bad.origin(), TimingCache::Origin::kMalformed);
  EXPECT_NE(bad.warning().find("\"format\""), std::string::npos) << bad.warning();
  test::write_file(dir.file("notjson.json"), "{\"format\": ");  // one JSON parse, its error reported
  const TimingCache nj = TimingCache::load_as_is(dir.file("notjson.json"));
  EXPECT_EQ(nj.origin(), TimingCache::Origin::kMalformed);
  EXPECT_NE(nj.warning().find("is not valid JSON"), std::string::npos) << nj.warning();
  EXPECT_TRUE(nj.identity().is_null() || nj.identity().empty()) << "no identity from a file that did not parse";
}

// The same-problem memo (find_problem / put_problem) lives in memory only: it is never saved, never makes the
// cache dirty, and the first entry stored for a problem stays (later nodes reuse the first timing).
TEST(TimingCache, SameProblemMemoIsNeverSaved) {
  test::TempDir dir;
  const std::string path = dir.file("cache.json");
  TimingCache a(kIdentity);
  a.put("fp16|conv0|Conv|[1,8,8,8]", {.impl = "ws_direct", .time_us = 3.0f});
  ASSERT_TRUE(a.save(path).is_ok());
  TimingCache b(kIdentity);
  b.load(path);
  ASSERT_FALSE(b.needs_save());
  b.put_problem("fp16|Conv|[1,8,8,8]r;", {.impl = "ws_direct", .time_us = 3.0f});
  b.put_problem("fp16|Conv|[1,8,8,8]r;", {.impl = "cudnn", .algo = 1, .fused = false, .time_us = 9.0f});
  EXPECT_FALSE(b.needs_save()) << "the memo must not make the cache dirty";
  ASSERT_NE(b.find_problem("fp16|Conv|[1,8,8,8]r;"), nullptr);
  EXPECT_EQ(b.find_problem("fp16|Conv|[1,8,8,8]r;")->impl, "ws_direct") << "the first entry of a problem stays";
  EXPECT_EQ(b.find_problem("other"), nullptr);
  EXPECT_EQ(b.find("fp16|Conv|[1,8,8,8]r;"), nullptr) << "problems are not node entries";
  EXPECT_EQ(b.problem_count(), 1u);
  ASSERT_TRUE(b.save(path).is_ok());
  TimingCache c(kIdentity);
  c.load(path);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.problem_count(), 0u);
  EXPECT_EQ(c.to_json().dump().find("[1,8,8,8]r;"), std::string::npos) << "a memo key reached the file";
}

TEST(TimingCache, MissingFileIsAnEmptyCacheWithoutWarning) {
  test::TempDir dir;
  TimingCache c(kIdentity);
  c.load(dir.file("absent.json"));
  EXPECT_EQ(c.origin(), TimingCache::Origin::kEmpty);
  EXPECT_TRUE(c.warning().empty());
  EXPECT_TRUE(c.needs_save());
}

TEST(TimingCache, ADirectoryOrEmptyFileIsIgnoredWithAWarning) {
  test::TempDir dir;
  TimingCache d(kIdentity);
  d.load(dir.path().string());
  EXPECT_EQ(d.origin(), TimingCache::Origin::kMalformed);
  EXPECT_FALSE(d.warning().empty());
  test::write_file(dir.file("empty.json"), "");
  TimingCache e(kIdentity);
  e.load(dir.file("empty.json"));
  EXPECT_EQ(e.origin(), TimingCache::Origin::kMalformed);
  EXPECT_NE(e.warning().find("not valid JSON"), std::string::npos) << e.warning();
}

TEST(TimingCache, AnotherIdentityIsIgnoredSilentlyAndRewritten) {
  TimingCache c(kIdentity);
  c.parse(cache_text({{"k", {{"heuristic_index", 0}, {"time_us", 1.0}}}}, {{"gpu", "other"}}));
  EXPECT_EQ(c.origin(), TimingCache::Origin::kMismatched);
  EXPECT_TRUE(c.warning().empty());
  EXPECT_EQ(c.find("k"), nullptr);
  EXPECT_TRUE(c.needs_save());
}

// Each case: a minimal malformed input; the whole cache is ignored (the good entry "ok" too) and the
// warning names the problem.
TEST(TimingCache, AnyMalformedEntryIgnoresTheWholeCacheWithAWarning) {
  const nlohmann::json good = {{"impl", "cudnn"}, {"algo", 1}, {"fused", false}, {"time_us", 3.0}};
  struct Case {
    const char* name;
    std::string text;
    const char* why;
  };
  const Case cases[] = {
      {"not json", "{\"format\": ", "is not valid JSON"},
      {"empty file", "", "is not valid JSON"},
      {"array", "[]", "is not a JSON object"},
      {"no format", nlohmann::json{{"key", kIdentity}, {"entries", nlohmann::json::object()}}.dump(), "\"format\""},
      {"entries not object", nlohmann::json{{"format", TimingCache::kFormat}, {"key", kIdentity}, {"entries", 3}}.dump(),
       "\"entries\" object"},
      {"key not object", nlohmann::json{{"format", TimingCache::kFormat}, {"key", "x"}, {"entries", {}}}.dump(), "\"key\" object"},
      {"entry not object", cache_text({{"ok", good}, {"bad", 7}}), "entry \"bad\" is not an object"},
      {"algo string", cache_text({{"ok", good}, {"bad", {{"algo", "1"}, {"fused", true}}}}), "\"algo\" must be an integer"},
      {"algo float", cache_text({{"ok", good}, {"bad", {{"algo", 1.5}}}}), "\"algo\" must be an integer"},
      {"algo negative", cache_text({{"ok", good}, {"bad", {{"algo", -1}}}}), "\"algo\" must be an integer"},
      {"fused int", cache_text({{"ok", good}, {"bad", {{"algo", 1}, {"fused", 1}}}}), "\"fused\" must be a boolean"},
      {"impl number", cache_text({{"ok", good}, {"bad", {{"impl", 4}}}}), "\"impl\" must be a string"},
      {"heuristic string", cache_text({{"ok", good}, {"bad", {{"heuristic_index", "0"}}}}), "\"heuristic_index\""},
      {"heuristic huge", cache_text({{"ok", good}, {"bad", {{"heuristic_index", 1ll << 40}}}}), "\"heuristic_index\""},
      {"time string", cache_text({{"ok", good}, {"bad", {{"heuristic_index", 0}, {"time_us", "fast"}}}}), "\"time_us\""},
      {"time negative", cache_text({{"ok", good}, {"bad", {{"heuristic_index", 0}, {"time_us", -2}}}}), "\"time_us\""},
      {"alternatives object", cache_text({{"ok", good}, {"bad", {{"impl", "x"}, {"alternatives", good}}}}), "\"alternatives\" must be an array"},
      {"alternatives too many", cache_text({{"ok", good}, {"bad", {{"impl", "x"}, {"alternatives", {good, good, good, good, good}}}}}),
       "at most 4"},
      {"alternative bad field", cache_text({{"ok", good}, {"bad", {{"impl", "x"}, {"alternatives", {good, {{"algo", "2"}}}}}}}),
       "alternative 1 field \"algo\""},
      {"alternative nests", cache_text({{"ok", good}, {"bad", {{"impl", "x"}, {"alternatives", {{{"impl", "y"}, {"alternatives", nlohmann::json::array()}}}}}}}),
       "may not nest"},
  };
  for (const Case& c : cases) {
    TimingCache cache(kIdentity);
    cache.parse(c.text, "t.json");
    EXPECT_EQ(cache.origin(), TimingCache::Origin::kMalformed) << c.name;
    EXPECT_EQ(cache.find("ok"), nullptr) << c.name;
    EXPECT_EQ(cache.size(), 0u) << c.name;
    EXPECT_TRUE(cache.needs_save()) << c.name;
    EXPECT_NE(cache.warning().find(c.why), std::string::npos) << c.name << ": " << cache.warning();
    EXPECT_NE(cache.warning().find("ignoring the whole cache"), std::string::npos) << c.name;
  }
  // The same good entry alone loads.
  TimingCache fine(kIdentity);
  fine.parse(cache_text({{"ok", good}}));
  EXPECT_EQ(fine.origin(), TimingCache::Origin::kMatched);
  ASSERT_NE(fine.find("ok"), nullptr);
  EXPECT_EQ(fine.find("ok")->algo, 1);
}

TEST(TimingCache, ControlBytesInKeysAreEscapedInTheWarning) {
  TimingCache c(kIdentity);
  c.parse(cache_text({{"a\x1b[2Jb", 5}}));
  ASSERT_EQ(c.origin(), TimingCache::Origin::kMalformed);
  EXPECT_EQ(c.warning().find('\x1b'), std::string::npos) << c.warning();
  EXPECT_NE(c.warning().find("a\\x1b[2Jb"), std::string::npos) << c.warning();
}

TEST(TimingCache, SaveIntoAMissingDirectoryIsAnError) {
  test::TempDir dir;
  TimingCache c(kIdentity);
  const Status s = c.save(dir.file("no/such/dir/cache.json"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
  EXPECT_NE(s.message().find("no/such/dir/cache.json"), std::string::npos) << s.to_string();
}

// Four writer processes rewrite one cache (entries of different sizes) while this process reads it:
// every read is a complete cache of one writer (never truncated or interleaved JSON).
TEST(TimingCache, ConcurrentWritersNeverLeaveAPartialFile) {
  test::TempDir dir;
  const std::string path = dir.file("cache.json");
  constexpr int kWriters = 4, kSaves = 40;
  std::vector<pid_t> kids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      TimingCache c(kIdentity);
      for (int i = 0; i < 200 * (w + 1); ++i)
        c.put("writer" + std::to_string(w) + "|node" + std::to_string(i), {.heuristic_index = w, .time_us = float(i)});
      int bad = 0;
      for (int s = 0; s < kSaves; ++s) bad += c.save(path).is_ok() ? 0 : 1;
      ::_exit(bad == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  int reads = 0;
  std::vector<int> status(kids.size(), -1);  // exit status once reaped
  for (bool running = true; running;) {
    running = false;
    for (size_t k = 0; k < kids.size(); ++k) {
      if (status[k] != -1) continue;
      int st = 0;
      if (::waitpid(kids[k], &st, WNOHANG) == kids[k]) status[k] = st; else running = true;
    }
    TimingCache r(kIdentity);
    r.load(path);
    ASSERT_NE(r.origin(), TimingCache::Origin::kMalformed) << r.warning();
    if (r.origin() == TimingCache::Origin::kMatched) {
      ++reads;
      // One writer's complete set: 200·(w+1) entries, all of writer w.
      const TimingEntry* first = nullptr;
      for (int w = 0; w < kWriters && !first; ++w)
        if ((first = r.find("writer" + std::to_string(w) + "|node0"))) EXPECT_EQ(r.size(), size_t(200 * (w + 1)));
      ASSERT_NE(first, nullptr);
    }
  }
  for (size_t k = 0; k < kids.size(); ++k)
    EXPECT_TRUE(WIFEXITED(status[k]) && WEXITSTATUS(status[k]) == 0) << "writer " << k << " failed to save";
  TimingCache last(kIdentity);
  last.load(path);
  EXPECT_EQ(last.origin(), TimingCache::Origin::kMatched) << last.warning();
  EXPECT_GT(reads, 0);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

}  // namespace
}  // namespace ws::ir
