// The issue-16 reproducers (tests/data/hostile/) through the real CLI, as a user runs them: each
// must exit 2 — not a signal — with exactly one stderr line starting with "error: ". Under the
// sanitizer build (scripts/test-sanitize.sh) this also proves no ASAN/UBSAN report: the runtime
// aborts on the first report and the exit code would not be 2.
#include <gtest/gtest.h>

#include <png.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <onnx/onnx_pb.h>

#include "support/demo_reference.h"
#include "support/test_util.h"

namespace ws {
namespace {

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliRun {
  int exit_code = -1;
  bool signaled = false;
  std::string out, err;
};

class CliHostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    labels_ = dir_.file("labels.txt");
    std::string l;
    for (int i = 0; i < 10; ++i) l += "class_" + std::to_string(i) + "\n";
    test::write_file(labels_, l);
    image_ = dir_.file("img.png");
    std::vector<uint8_t> px(16 * 16 * 3, 128);
    png_image img;
    std::memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = 16;
    img.height = 16;
    img.format = PNG_FORMAT_RGB;
    ASSERT_NE(png_image_write_to_file(&img, image_.c_str(), 0, px.data(), 0, nullptr), 0);
  }

  CliRun cli(const std::string& args) {
    const std::string out = dir_.file("stdout.txt"), err = dir_.file("stderr.txt");
    const int rc = std::system((sh_quote(WS_CLI_PATH) + " " + args + " > " + sh_quote(out) + " 2> " + sh_quote(err)).c_str());
    CliRun r;
    if (WIFSIGNALED(rc)) r.signaled = true;
    if (WIFEXITED(rc)) {
      r.exit_code = WEXITSTATUS(rc);
      if (r.exit_code > 128) r.signaled = true;
    }
    r.out = test::read_file(out);
    r.err = test::read_file(err);
    return r;
  }

  void expect_one_error(const CliRun& r, std::initializer_list<std::string> keywords) {
    EXPECT_FALSE(r.signaled) << "stderr: " << r.err;
    EXPECT_EQ(r.exit_code, 2) << "stderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr:\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << "stderr:\n" << r.err;
    for (const auto& k : keywords) EXPECT_NE(r.err.find(k), std::string::npos) << "missing '" << k << "' in: " << r.err;
  }

  std::string hostile(const std::string& name) { return std::string(WS_TEST_DATA_DIR) + "/hostile/" + name; }

  test::TempDir dir_;
  std::string labels_, image_;
};

TEST_F(CliHostileInput, ReshapeWithoutShapeInput) {
  expect_one_error(cli("classify --device cpu --model " + sh_quote(hostile("reshape-input-index.onnx")) + " --labels " +
                       sh_quote(labels_) + " " + sh_quote(image_)),
                   {"invalid model", "Reshape", "input 1 (shape) is missing"});
}

TEST_F(CliHostileInput, PadWithoutPadsInput) {
  expect_one_error(cli("classify --device cpu --model " + sh_quote(hostile("pad-input-index.onnx")) + " --labels " +
                       sh_quote(labels_) + " " + sh_quote(image_)),
                   {"invalid model", "Pad", "input 1 (pads) is missing"});
}

TEST_F(CliHostileInput, ConvWindowOverflow) {
  expect_one_error(cli("classify --device cpu --model " + sh_quote(hostile("conv-window-overflow.onnx")) + " --labels " +
                       sh_quote(labels_) + " " + sh_quote(image_)),
                   {"conv-window-overflow.onnx", "9223372036854775807"});  // the mutated input dim, refused at import
}

TEST_F(CliHostileInput, ShapeWithEmptyOutputName) {
  expect_one_error(cli("classify --device cpu --model " + sh_quote(hostile("fuzz-shape-empty-output.onnx")) + " --labels " +
                       sh_quote(labels_) + " " + sh_quote(image_)),
                   {"required output 0 is missing"});
}

// Found by the CI fuzz step (onnx_import_fuzz, message oracle): an attribute VALUE pasted raw into an analyzer's
// message (ConvTranspose auto_pad = "SAME\x7fU=PER"). NodeContext::error now escapes the whole message.
TEST_F(CliHostileInput, AttributeValueInMessageIsEscaped) {
  const CliRun r = cli("classify --device cpu --model " + sh_quote(hostile("convtranspose_auto_pad_control_byte.onnx")) +
                       " --labels " + sh_quote(labels_) + " " + sh_quote(image_));
  expect_one_error(r, {"auto_pad", "\\x7f"});
  for (char ch : r.err) EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 && ch != '\n') << "control byte in: " << r.err;
  EXPECT_EQ(r.err.find('\x7f'), std::string::npos) << r.err;
}

TEST_F(CliHostileInput, ModelStringsCannotForgeLines) {
  // A node name with a newline and an escape sequence: still one error line, bytes escaped.
  ir::ModelBuilder m(13);
  m.input("input", ir::DType::kFloat32, {1, 3, 16, 16});
  m.node("NoSuchOp", {"input"}, {"y"}, "x\nerror: forged\x1b[2J");
  m.output("y");
  const std::string bad = dir_.file("forge.onnx");
  ASSERT_TRUE(m.save(bad).is_ok());
  CliRun r = cli("classify --device cpu --model " + sh_quote(bad) + " --labels " + sh_quote(labels_) + " " + sh_quote(image_));
  expect_one_error(r, {"\\x0aerror: forged\\x1b[2J"});
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
}

TEST_F(CliHostileInput, OnnxTestTensorThatPromisesAGigabyte) {
  // 13 bytes of input_0.pb promising 2^28 floats: refused without allocating them, and the case
  // fails cleanly (exit 1: a failed case, not a crash).
  const std::string dir = dir_.file("case");
  std::filesystem::create_directories(dir + "/test_data_set_0");
  ir::ModelBuilder m(13);
  m.input("x", ir::DType::kFloat32, {1, 4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  ASSERT_TRUE(m.save(dir + "/model.onnx").is_ok());
  onnx::TensorProto tp;
  tp.set_data_type(onnx::TensorProto::FLOAT);
  tp.add_dims(int64_t{1} << 28);
  std::string bytes;
  ASSERT_TRUE(tp.SerializeToString(&bytes));
  test::write_file(dir + "/test_data_set_0/input_0.pb", bytes);
  test::write_file(dir + "/test_data_set_0/output_0.pb", bytes);
  CliRun r = cli("onnx-test " + sh_quote(dir));
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("input_0.pb"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace ws
