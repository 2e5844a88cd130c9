// `warpstream onnx-test` on hand-made case folders, run as a user runs it (the real binary,
// WS_CLI_PATH): a model with a symbolic input dimension takes it from its test data (two test sets
// with different batch sizes both pass), and a model the spec rules out (a Conv group that does not
// divide the channels) fails as an invalid model with its reason instead of being skipped, while a model.onnx that
// is not a model at all is bad input (exit 2).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/ir/model_builder.h"
#include "support/test_util.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

void write_tensor(const std::string& path, const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  test::write_file(path, ModelBuilder::float_tensor(name, dims, v).SerializeAsString());
}

struct CliRun {
  int exit_code = -1;
  std::string out;
};
CliRun onnx_test(const test::TempDir& dir, const std::string& case_dir) {
  const std::string out = dir.file("stdout.txt");
  const int rc = std::system((quote(WS_CLI_PATH) + " onnx-test " + quote(case_dir) + " > " + quote(out) + " 2>&1").c_str());
  CliRun r;
  if (WIFEXITED(rc)) r.exit_code = WEXITSTATUS(rc);
  r.out = test::read_file(out);
  return r;
}

TEST(CliOnnxTest, SymbolicInputDimTakenFromTestData) {
  test::TempDir dir;
  const std::filesystem::path c = dir.file("test_symbolic_relu");
  std::filesystem::create_directories(c / "test_data_set_0");
  std::filesystem::create_directories(c / "test_data_set_1");
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {"N", 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  ASSERT_TRUE(m.save((c / "model.onnx").string()).is_ok());
  write_tensor((c / "test_data_set_0/input_0.pb").string(), "x", {1, 3}, {-1, 2, -3});
  write_tensor((c / "test_data_set_0/output_0.pb").string(), "y", {1, 3}, {0, 2, 0});
  write_tensor((c / "test_data_set_1/input_0.pb").string(), "x", {2, 3}, {1, -2, 3, -4, 5, -6});
  write_tensor((c / "test_data_set_1/output_0.pb").string(), "y", {2, 3}, {1, 0, 3, 0, 5, 0});
  const CliRun r = onnx_test(dir, c.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 passed, 0 failed, 0 skipped"), std::string::npos) << r.out;
  // A wrong expected value in the second set must still fail: the shapes come from the data, the
  // comparison is real.
  write_tensor((c / "test_data_set_1/output_0.pb").string(), "y", {2, 3}, {1, 0, 3, 0, 5, 1});
  const CliRun bad = onnx_test(dir, c.string());
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("FAIL test_symbolic_relu"), std::string::npos) << bad.out;
}

TEST(CliOnnxTest, InvalidModelIsAFailureWithItsReason) {
  test::TempDir dir;
  const std::filesystem::path c = dir.file("test_conv_bad_group");
  std::filesystem::create_directories(c / "test_data_set_0");
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 4, 3, 3});
  m.initializer("w", {3, 2, 1, 1}, std::vector<float>(6, 1.0f));
  m.node("Conv", {"x", "w"}, {"y"}).i("group", 3);
  m.output("y");
  ASSERT_TRUE(m.save((c / "model.onnx").string()).is_ok());
  write_tensor((c / "test_data_set_0/input_0.pb").string(), "x", {1, 4, 3, 3}, std::vector<float>(36, 1.0f));
  write_tensor((c / "test_data_set_0/output_0.pb").string(), "y", {1, 3, 3, 3}, std::vector<float>(27, 2.0f));
  const CliRun r = onnx_test(dir, c.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL test_conv_bad_group: invalid model:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'group'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 passed, 1 failed, 0 skipped"), std::string::npos) << r.out;
}

// A forbidden attribute value (a Transpose perm that is not a permutation) is a failure of the model too.
TEST(CliOnnxTest, ForbiddenAttributeIsAFailureNotASkip) {
  test::TempDir dir;
  const std::filesystem::path c = dir.file("test_transpose_bad_perm");
  std::filesystem::create_directories(c / "test_data_set_0");
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3});
  m.node("Transpose", {"x"}, {"y"}).ints("perm", {1, 1});
  m.output("y");
  ASSERT_TRUE(m.save((c / "model.onnx").string()).is_ok());
  write_tensor((c / "test_data_set_0/input_0.pb").string(), "x", {2, 3}, {1, 2, 3, 4, 5, 6});
  write_tensor((c / "test_data_set_0/output_0.pb").string(), "y", {3, 2}, {1, 4, 2, 5, 3, 6});
  const CliRun r = onnx_test(dir, c.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL test_transpose_bad_perm: invalid model:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'perm'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 passed, 1 failed, 0 skipped"), std::string::npos) << r.out;
}

// A relu case folder `name` under `dir` with a good model and output; the input file is written by the caller.
std::filesystem::path relu_case(const test::TempDir& dir, const std::string& name) {
  const std::filesystem::path c = dir.file(name);
  std::filesystem::create_directories(c / "test_data_set_0");
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_TRUE(m.save((c / "model.onnx").string()).is_ok());
  write_tensor((c / "test_data_set_0/output_0.pb").string(), "y", {1, 3}, {0, 2, 0});
  return c;
}

TEST(CliOnnxTest, UnusableTestDataIsBadInputExit2NotAMismatch) {
  // README: exit 1 = a check failed (mismatch), 2 = bad input. Empty, truncated and FIFO input files used to be
  // counted as failures (exit 1), indistinguishable from a wrong output.
  test::TempDir dir;
  const auto empty = relu_case(dir, "empty");
  test::write_file((empty / "test_data_set_0/input_0.pb").string(), "");
  CliRun r = onnx_test(dir, empty.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("BAD empty: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 passed, 0 failed, 0 skipped, 1 bad input"), std::string::npos) << r.out;

  const auto fifo = relu_case(dir, "fifo");
  ASSERT_EQ(::mkfifo((fifo / "test_data_set_0/input_0.pb").c_str(), 0600), 0);
  r = onnx_test(dir, fifo.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;

  // Wrong dtype: both dtypes named.
  const auto dt = relu_case(dir, "dtype");
  auto t = ModelBuilder::float_tensor("x", {1, 3}, {1, 2, 3});
  t.clear_float_data();
  t.clear_raw_data();
  t.set_data_type(7);  // INT64
  for (int i = 0; i < 3; ++i) t.add_int64_data(i);
  test::write_file((dt / "test_data_set_0/input_0.pb").string(), t.SerializeAsString());
  r = onnx_test(dir, dt.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("data is int64 [1, 3] but the model declares float32 [1, 3]"), std::string::npos) << r.out;

  // A good case next to a mismatching one stays exit 1 (no bad input).
  const auto ok = relu_case(dir, "mismatch");
  write_tensor((ok / "test_data_set_0/input_0.pb").string(), "x", {1, 3}, {1, 2, 3});
  r = onnx_test(dir, ok.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

// A model.onnx that is not an ONNX model at all is bad input (exit 2, a BAD line naming the file), like unusable
// test data; a model that parses but the spec rules out stays a FAIL (InvalidModelIsAFailureWithItsReason).
TEST(CliOnnxTest, ModelThatIsNotAModelIsBadInputExit2) {
  test::TempDir dir;
  struct Bad { const char* name; std::string bytes; const char* says; };
  for (const Bad& b : {Bad{"garbage", std::string("\xff\xff\xff\xff not a protobuf \x07\x00", 22), "not a valid ONNX model"},
                       Bad{"empty", std::string(), "file is empty"},
                       Bad{"no_graph", std::string("\x08\x07", 2), "holds no graph nodes"}}) {
    SCOPED_TRACE(b.name);
    const auto c = relu_case(dir, std::string("model_") + b.name);
    write_tensor((c / "test_data_set_0/input_0.pb").string(), "x", {1, 3}, {-1, 2, -3});
    test::write_file((c / "model.onnx").string(), b.bytes);
    const CliRun r = onnx_test(dir, c.string());
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(std::string("BAD model_") + b.name + ": "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(b.says), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("0 passed, 0 failed, 0 skipped, 1 bad input"), std::string::npos) << r.out;
  }
}

TEST(CliOnnxTest, CaseFolderNamesAreEscaped) {
  test::TempDir dir;
  const auto c = relu_case(dir, "case\n\x1b[31mx");
  test::write_file((c / "test_data_set_0/input_0.pb").string(), "");
  const CliRun r = onnx_test(dir, c.string());
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BAD case\\x0a\\x1b[31mx: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ws
