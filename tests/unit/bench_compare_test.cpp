// bench/compare + bench/report: ratio table and environment warnings on the small fixtures in
// tests/data/bench (ours.json: p50/p99/p99.9 = 200/220/240 us; peer_same_env.json: 400/440/480 us, same
// environment; peer_other_env.json: 500/550/600 us, SM clock 1500 vs 1980 MHz, other driver, cuDNN and
// model hash). Also the CLI's exit codes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bench/compare.h"
#include "bench/report.h"

namespace {

std::string data(const char* name) { return std::string(WS_TEST_DATA_DIR) + "/bench/" + name; }

nlohmann::json load(const char* name) {
  auto r = ws::bench::read_report_json(data(name));
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r.value() : nlohmann::json();
}

bool has_warning(const ws::bench::CompareResult& r, const std::string& needle) {
  for (const auto& w : r.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

TEST(BenchCompare, RatiosSameEnvironment) {
  auto r = ws::bench::compare_reports({load("ours.json"), load("peer_same_env.json")}, {"a", "b"});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].label, "ours");
  EXPECT_DOUBLE_EQ(r.rows[0].r50, 1.0);
  EXPECT_DOUBLE_EQ(r.rows[1].r50, 0.5);
  EXPECT_DOUBLE_EQ(r.rows[1].r99, 0.5);
  EXPECT_DOUBLE_EQ(r.rows[1].r99_9, 0.5);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_NE(r.table.find("| torch-graph | host_latency_us | 400.0 | 440.0 | 480.0 | 0.500 | 0.500 | 0.500 |"),
            std::string::npos)
      << r.table;
}

// A '|' in a label or metric name would split its markdown cell: written as "\|", the row keeps its 8 columns.
TEST(BenchCompare, PipeInLabelIsEscapedInTheTable) {
  auto a = load("ours.json"), b = load("peer_same_env.json");
  b["label"] = "torch|graph";
  auto r = ws::bench::compare_reports({a, b}, {"a", "b"});
  EXPECT_EQ(r.rows[1].label, "torch|graph");
  const std::string row = "| torch\\|graph | host_latency_us | 400.0 | 440.0 | 480.0 | 0.500 | 0.500 | 0.500 |";
  ASSERT_NE(r.table.find(row), std::string::npos) << r.table;
  // Every table line has the same number of unescaped cell separators.
  size_t start = 0;
  while (start < r.table.size()) {
    const size_t end = r.table.find('\n', start);
    const std::string line = r.table.substr(start, end - start);
    int bars = 0;
    for (size_t i = 0; i < line.size(); ++i) bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    EXPECT_EQ(bars, 9) << line;
    start = end + 1;
  }
}

TEST(BenchCompare, WarnsOnDifferentEnvironment) {
  auto r = ws::bench::compare_reports({load("ours.json"), load("peer_same_env.json"), load("peer_other_env.json")},
                                      {"a", "b", "c"});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_NEAR(r.rows[2].r50, 0.4, 1e-12);
  EXPECT_TRUE(has_warning(r, "sm_clock_mhz differs by more than 5%")) << r.table;
  EXPECT_TRUE(has_warning(r, "driver versions differ"));
  EXPECT_TRUE(has_warning(r, "cuDNN versions differ"));
  EXPECT_TRUE(has_warning(r, "different SHA-256"));
  EXPECT_FALSE(has_warning(r, "mem_clock_mhz"));
  EXPECT_FALSE(has_warning(r, "GPU names"));
}

TEST(BenchCompare, ClockWithinToleranceIsQuiet) {
  auto a = load("ours.json"), b = load("peer_same_env.json");
  b["env"]["sm_clock_mhz_end"] = 1980 * 0.96;  // 4% lower: inside 5%
  EXPECT_TRUE(ws::bench::compare_reports({a, b}, {}).warnings.empty());
  b["env"]["sm_clock_mhz_end"] = 1980 * 0.94;  // 6% lower
  EXPECT_TRUE(has_warning(ws::bench::compare_reports({a, b}, {}), "sm_clock_mhz"));
  b["env"]["sm_clock_mhz_end"] = "unavailable: NVML: Not Supported";
  EXPECT_TRUE(has_warning(ws::bench::compare_reports({a, b}, {}), "sm_clock_mhz unavailable"));
}

TEST(BenchCompare, VersionsCompareAsMajorMinorPatch) {
  // H200 run 2026-11-29: ours reports cuBLAS "13.1.0 (same release as cuBLASLt)", the PyTorch peer the wheel's
  // "13.1.0.3": the same release, which must not warn; a different patch must.
  auto a = load("ours.json"), b = load("peer_same_env.json");
  a["env"]["cublas"] = "13.1.0 (same release as cuBLASLt)";
  b["env"]["cublas"] = "13.1.0.3";
  EXPECT_FALSE(has_warning(ws::bench::compare_reports({a, b}, {}), "cuBLAS versions"));
  b["env"]["cublas"] = "13.1.1.3";
  EXPECT_TRUE(has_warning(ws::bench::compare_reports({a, b}, {}), "cuBLAS versions differ"));
  b["env"]["cublas"] = "unavailable: no nvidia-cublas wheel found";
  EXPECT_TRUE(has_warning(ws::bench::compare_reports({a, b}, {}), "cuBLAS versions"));
}

TEST(BenchReport, RoundTripAndSchemaCheck) {
  ws::bench::Report rep;
  rep.label = "roundtrip";
  rep.config.model = "m.onnx";
  ws::bench::Metric m;
  m.name = "host_latency_us";
  const double xs[] = {1, 2, 3, 4};
  m.samples = xs;
  m.stats = ws::bench::compute_stats(m.samples, 2);
  rep.metrics.push_back(m);
  rep.env.unavailable("gpu_uuid", "no GPU");
  const std::string path = ::testing::TempDir() + "/ws_bench_roundtrip.json";
  ASSERT_TRUE(ws::bench::write_report_json(rep, path).is_ok());
  auto back = ws::bench::read_report_json(path);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back.value()["env"]["gpu_uuid"], "unavailable: no GPU");
  auto s = ws::bench::stats_from_json(back.value()["metrics"]["host_latency_us"]);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.warmup_count, 2u);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  const std::string csv = ::testing::TempDir() + "/ws_bench_samples.csv";
  ASSERT_TRUE(ws::bench::write_samples_csv(rep.metrics, csv).is_ok());
  // Not a report: the schema tag is checked.
  EXPECT_FALSE(ws::bench::read_report_json(csv).is_ok());
}

TEST(BenchCompare, CliExitCodes) {
  const std::string cli = WS_CLI_PATH;
  const std::string ok = cli + " compare " + data("ours.json") + " " + data("peer_other_env.json") + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(ok.c_str()), 0);
  const std::string one = cli + " compare " + data("ours.json") + " >/dev/null 2>&1";
  EXPECT_NE(std::system(one.c_str()), 0);
  const std::string bad = cli + " compare " + data("ours.json") + " /nonexistent.json >/dev/null 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
}

}  // namespace
