// Tactic sources (include/warpstream/cuda_engine.h: parse_tactic_sources, tactic_sources_string) and the
// `--tactic-sources` option of `warpstream classify` / `warpstream bench`: a bad list is one `error:` line
// and exit 2 (checked before any model, image or device work).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>

#include "support/test_util.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

TEST(TacticSources, ParsesNamesAndAll) {
  auto r = parse_tactic_sources("cudnn,warpstream");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r, uint32_t(kTacticCudnn | kTacticWarpStream));
  EXPECT_EQ(*parse_tactic_sources("warpstream"), uint32_t(kTacticWarpStream));
  EXPECT_EQ(*parse_tactic_sources("cublaslt"), uint32_t(kTacticCublasLt));
  EXPECT_EQ(*parse_tactic_sources("all"), kAllTacticSources);
  EXPECT_EQ(*parse_tactic_sources("warpstream,cudnn,warpstream"), uint32_t(kTacticCudnn | kTacticWarpStream));
  EXPECT_EQ(CudaBuildOptions{}.tactic_sources, kAllTacticSources);
}

TEST(TacticSources, ToStringRoundTrips) {
  EXPECT_EQ(tactic_sources_string(kAllTacticSources), "cudnn,cublaslt,warpstream");
  EXPECT_EQ(tactic_sources_string(kTacticWarpStream), "warpstream");
  EXPECT_EQ(tactic_sources_string(0), "none");
  for (uint32_t s = 1; s <= kAllTacticSources; ++s) EXPECT_EQ(*parse_tactic_sources(tactic_sources_string(s)), s);
}

TEST(TacticSources, BadListsAreInvalidArgumentNamingTheItem) {
  for (const char* bad : {"", "cudnn,", ",cudnn", "cudnn,,warpstream", "CUDNN", "cudnn warpstream", "tensorrt", "none"}) {
    auto r = parse_tactic_sources(bad);
    ASSERT_FALSE(r.is_ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("--tactic-sources"), std::string::npos) << r.status().to_string();
  }
  EXPECT_NE(parse_tactic_sources("cudnn,tensorrt").status().message().find("'tensorrt'"), std::string::npos);
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the CLI; returns the exit code and stderr.
int run_cli(const std::string& args, std::string& err) {
  test::TempDir dir;
  const std::string e = dir.file("err.txt");
  const int rc = std::system((quote(WS_CLI_PATH) + " " + args + " > /dev/null 2> " + quote(e)).c_str());
  err = test::read_file(e);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

void expect_one_error_line(int rc, const std::string& err, const std::string& keyword) {
  EXPECT_EQ(rc, 2) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.rfind("error: ", 0), 0u) << err;
  EXPECT_NE(err.find(keyword), std::string::npos) << err;
}

TEST(TacticSources, ClassifyRejectsBadListWithOneErrorLine) {
  std::string err;
  const int rc = run_cli("classify --device cpu --model /nonexistent/m.onnx --labels /nonexistent/l.txt --tactic-sources cudnn,bogus x.png", err);
  expect_one_error_line(rc, err, "'bogus'");
}

TEST(TacticSources, BenchRejectsBadListWithOneErrorLine) {
  std::string err;
  const int rc = run_cli("bench --model /nonexistent/m.onnx --no-progress --tactic-sources tensorrt", err);
#ifdef WS_HAVE_CUDA
  expect_one_error_line(rc, err, "'tensorrt'");
#else
  EXPECT_EQ(rc, 2) << err;  // a build without CUDA refuses bench as a whole
#endif
}

}  // namespace
}  // namespace ws
