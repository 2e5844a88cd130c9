// Names that come from files — report labels and metric names (`compare`), class labels (`classify`) — reach the
// terminal escaped (core/escape.h: control bytes as \xNN) and truncated when huge (escape_name: 200 bytes +
// "... (N bytes)"), so a file cannot clear the screen, forge lines or flood the output.
#include <gtest/gtest.h>

#include <png.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/compare.h"
#include "core/escape.h"
#include "support/test_util.h"

namespace ws {
namespace {

TEST(EscapeName, TruncatesLongNamesKeepingUtf8Whole) {
  EXPECT_EQ(escape_name("conv1"), "conv1");
  EXPECT_EQ(escape_name("a\nb"), "a\\x0ab");
  const std::string longname(5000, 'n');
  EXPECT_EQ(escape_name(longname), std::string(200, 'n') + "... (5000 bytes)");
  EXPECT_EQ(ws::quoted(longname), "'" + std::string(200, 'n') + "... (5000 bytes)'");
  // A 2-byte character straddling byte 200 is dropped whole, not cut into an invalid byte.
  const std::string straddle = std::string(199, 'a') + "\xc3\xa9" + std::string(100, 'b');
  EXPECT_EQ(escape_name(straddle), std::string(199, 'a') + "... (301 bytes)");
  // Whole messages are never truncated.
  EXPECT_EQ(escape_text(longname), longname);
}

TEST(CompareEscapes, LabelsAndMetricNamesInTableAndWarnings) {
  nlohmann::json ours = {{"schema", "warpstream-bench/1"}, {"label", "x\n\x1b[31mRED\r"}, {"primary", "m"},
                         {"metrics", {{"m", {{"p50", 100.0}, {"p99", 200.0}, {"p99_9", 300.0}}}}}};
  nlohmann::json peer = ours;
  peer["label"] = std::string(1000, 'L');
  peer["primary"] = "gone\x1b[2J";
  auto r = bench::compare_reports({ours, peer}, {"a", "b"});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.table.find('\x1b'), std::string::npos) << r.table;
  EXPECT_NE(r.table.find("| x\\x0a\\x1b[31mRED\\x0d |"), std::string::npos) << r.table;
  EXPECT_NE(r.table.find(std::string(200, 'L') + "... (1000 bytes)"), std::string::npos) << r.table;
  bool warned = false;
  for (const auto& w : r.warnings) {
    EXPECT_EQ(w.find('\x1b'), std::string::npos) << w;
    warned |= w.find("has no metric 'gone\\x1b[2J'") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

TEST(ClassifyEscapes, LabelsFromTheLabelsFile) {
  test::TempDir dir;
  const std::string model = dir.file("demo.onnx"), labels = dir.file("labels.txt"), image = dir.file("img.png");
  const std::string cli = std::string("'") + WS_CLI_PATH + "'";
  ASSERT_EQ(std::system((cli + " make-demo-model '" + model + "' > /dev/null").c_str()), 0);
  std::string l;
  for (int i = 0; i < 10; ++i) l += "class\r_" + std::to_string(i) + "\x1b[2J\n";  // (a final \r is CRLF, stripped)
  test::write_file(labels, l);
  std::vector<uint8_t> px(32 * 32 * 3, 100);
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = 32;
  img.height = 32;
  img.format = PNG_FORMAT_RGB;
  ASSERT_NE(png_image_write_to_file(&img, image.c_str(), 0, px.data(), 0, nullptr), 0);
  const std::string out = dir.file("out.txt");
  const int rc = std::system((cli + " classify --device cpu --topk 3 --model '" + model + "' --labels '" + labels +
                              "' '" + image + "' > '" + out + "' 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  const std::string text = test::read_file(out);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_NE(text.find("class\\x0d_"), std::string::npos) << text;
  EXPECT_NE(text.find("\\x1b[2J"), std::string::npos) << text;
}

}  // namespace
}  // namespace ws
