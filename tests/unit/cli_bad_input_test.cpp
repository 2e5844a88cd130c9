// `warpstream classify` on bad input, run as a user runs it (the real binary, WS_CLI_PATH): every
// case must exit with code 2 — not a signal — and print exactly one stderr line, starting with
// "error: " and naming the problem. A valid run with the same demo model, labels and image exits 0
// first, so each failure is due to the one thing that was made bad.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <png.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "engine/ir/model_builder.h"
#include "support/demo_reference.h"
#include "support/test_util.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

struct CliResult {
  bool signaled = false;
  int signal = 0;
  int exit_code = -1;
  std::string out, err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class CliBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_.file("demo.onnx");
    test::write_demo_model(model_, {.seed = 6});
    labels_ = dir_.file("labels.txt");
    std::string l;
    for (int i = 0; i < 10; ++i) l += "class_" + std::to_string(i) + "\n";
    test::write_file(labels_, l);
    image_ = dir_.file("img.png");
    std::vector<uint8_t> px(40 * 30 * 3);
    for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 31) % 256);
    png_image img;
    std::memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = 40;
    img.height = 30;
    img.format = PNG_FORMAT_RGB;
    ASSERT_NE(png_image_write_to_file(&img, image_.c_str(), 0, px.data(), 0, nullptr), 0);
  }

  // Any subcommand: `warpstream <args>` (args already quoted where needed).
  CliResult cli(const std::string& args) {
    const std::string out = dir_.file("stdout.txt"), err = dir_.file("stderr.txt");
    const int rc = std::system((quote(WS_CLI_PATH) + " " + args + " > " + quote(out) + " 2> " + quote(err)).c_str());
    CliResult r;
    // std::system runs /bin/sh -c; a signal in the child shows up as the shell's 128+N exit.
    if (WIFSIGNALED(rc)) { r.signaled = true; r.signal = WTERMSIG(rc); }
    if (WIFEXITED(rc)) {
      r.exit_code = WEXITSTATUS(rc);
      if (r.exit_code > 128) { r.signaled = true; r.signal = r.exit_code - 128; }
    }
    r.out = test::read_file(out);
    r.err = test::read_file(err);
    return r;
  }

  CliResult classify(const std::string& model, const std::string& labels, const std::string& image,
                     const std::string& extra = "") {
    return cli("classify --device cpu --model " + quote(model) + " --labels " + quote(labels) + " " + extra + " " + quote(image));
  }

  // Exit 2, no signal, exactly one stderr line "error: …" containing every keyword.
  void expect_one_error(const CliResult& r, std::initializer_list<std::string> keywords) {
    EXPECT_FALSE(r.signaled) << "killed by signal " << r.signal << "; stderr: " << r.err;
    EXPECT_EQ(r.exit_code, 2) << "stderr: " << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.back(), '\n');
    const size_t lines = static_cast<size_t>(std::count(r.err.begin(), r.err.end(), '\n'));
    EXPECT_EQ(lines, 1u) << "stderr:\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << "stderr:\n" << r.err;
    for (const auto& k : keywords) EXPECT_NE(r.err.find(k), std::string::npos) << "missing '" << k << "' in: " << r.err;
  }

  test::TempDir dir_;
  std::string model_, labels_, image_;
};

TEST_F(CliBadInput, ValidRunSucceeds) {
  CliResult r = classify(model_, labels_, image_, "--topk 3");
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("class_"), std::string::npos) << r.out;
}

TEST_F(CliBadInput, TruncatedModel) {
  const std::string full = test::read_file(model_);
  const std::string bad = dir_.file("truncated.onnx");
  test::write_file(bad, full.substr(0, full.size() / 2));
  expect_one_error(classify(bad, labels_, image_), {"invalid model", "truncated.onnx", "truncated"});
}

TEST_F(CliBadInput, RandomBytesModel) {
  std::mt19937 gen(77);
  std::string bytes(3000, '\0');
  for (char& c : bytes) c = static_cast<char>(gen() & 0xFF);
  const std::string bad = dir_.file("random.onnx");
  test::write_file(bad, bytes);
  expect_one_error(classify(bad, labels_, image_), {"invalid model", "random.onnx"});
}

TEST_F(CliBadInput, EmptyModel) {
  const std::string bad = dir_.file("empty.onnx");
  test::write_file(bad, "");
  expect_one_error(classify(bad, labels_, image_), {"invalid model", "empty"});
}

TEST_F(CliBadInput, MissingModel) {
  expect_one_error(classify(dir_.file("absent.onnx"), labels_, image_), {"not found", "absent.onnx"});
}

TEST_F(CliBadInput, GigabyteInitializerModel) {
  ModelBuilder m(13);
  m.input("input", DType::kFloat32, {1, 3, 32, 32});
  m.raw_initializer("huge_weight", DType::kFloat32, {100000, 100000, 100});
  m.node("GlobalAveragePool", {"input"}, {"g"});
  m.node("Flatten", {"g"}, {"logits"});
  m.output("logits");
  const std::string bad = dir_.file("huge.onnx");
  ASSERT_TRUE(m.save(bad).is_ok());
  expect_one_error(classify(bad, labels_, image_), {"resource exhausted", "huge_weight"});
}

TEST_F(CliBadInput, ModelWithOneChannelInput) {
  // [1,1,28,28] → Flatten → Gemm → 10 logits: a fine model, but not an RGB classifier.
  ModelBuilder m(13);
  m.input("digits", DType::kFloat32, {1, 1, 28, 28});
  m.initializer("w", {784, 10}, test::random_floats(7840, 1));
  m.node("Flatten", {"digits"}, {"f"});
  m.node("Gemm", {"f", "w"}, {"logits"});
  m.output("logits");
  const std::string bad = dir_.file("mnist.onnx");
  ASSERT_TRUE(m.save(bad).is_ok());
  expect_one_error(classify(bad, labels_, image_), {"'digits'", "[1, 1, 28, 28]", "[1, 3, H, W]"});
}

TEST_F(CliBadInput, ModelWithInt64Input) {
  ModelBuilder m(13);
  m.input("ids", DType::kInt64, {1, 3, 4, 4});
  m.node("Flatten", {"ids"}, {"logits"});
  m.output("logits");
  const std::string bad = dir_.file("int64.onnx");
  ASSERT_TRUE(m.save(bad).is_ok());
  expect_one_error(classify(bad, labels_, image_), {"'ids'", "int64", "float32"});
}

TEST_F(CliBadInput, ImageThatIsNotAnImage) {
  const std::string bad = dir_.file("readme.png");
  test::write_file(bad, "# Not a picture\nJust text.\n");
  expect_one_error(classify(model_, labels_, bad), {"invalid image", "readme.png"});
}

TEST_F(CliBadInput, EmptyImage) {
  const std::string bad = dir_.file("empty.jpg");
  test::write_file(bad, "");
  expect_one_error(classify(model_, labels_, bad), {"invalid image", "empty"});
}

TEST_F(CliBadInput, MissingImage) {
  expect_one_error(classify(model_, labels_, dir_.file("gone.png")), {"not found", "gone.png"});
}

TEST_F(CliBadInput, TopKZero) {
  expect_one_error(classify(model_, labels_, image_, "--topk 0"), {"--topk 0", "out of range"});
}

TEST_F(CliBadInput, TopK33) {
  expect_one_error(classify(model_, labels_, image_, "--topk 33"), {"--topk 33", "out of range"});
}

TEST_F(CliBadInput, TopKAboveClassCount) {
  expect_one_error(classify(model_, labels_, image_, "--topk 11"), {"--topk 11", "10 classes"});
}

TEST_F(CliBadInput, LabelsCountMismatch) {
  const std::string bad = dir_.file("nine.txt");
  std::string l;
  for (int i = 0; i < 9; ++i) l += "c" + std::to_string(i) + "\n";
  test::write_file(bad, l);
  expect_one_error(classify(model_, bad, image_), {"nine.txt", "9 labels", "10 classes"});
}

// Found by the newcomer trial (these aborted with an uncaught exception or gave a wrong reason).
TEST_F(CliBadInput, DirectoryAsImageModelLabelsOrConfig) {
  const std::string d = dir_.path().string();
  expect_one_error(classify(model_, labels_, d), {"is a directory", "image file"});
  expect_one_error(classify(d, labels_, image_), {"is a directory", "model file"});
  expect_one_error(classify(model_, d, image_), {"is a directory", "labels file"});
  expect_one_error(classify(model_, labels_, image_, "--config " + quote(d)), {"is a directory", "config"});
}

TEST_F(CliBadInput, UsageErrorsAreOneErrorLine) {
  expect_one_error(classify(model_, labels_, image_, "--topk abc"), {"usage", "--topk"});
  expect_one_error(classify(model_, labels_, image_, "--device bogus"), {"usage", "--device"});
  expect_one_error(classify(model_, labels_, image_, "--layout NHWC"), {"usage", "--layout", "NHWC"});
  expect_one_error(classify(model_, labels_, image_, "--layout ''"), {"usage", "--layout"});
  const std::string err = dir_.file("err.txt");
  const int rc = std::system((quote(WS_CLI_PATH) + " bogus 2> " + quote(err)).c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_EQ(test::read_file(err).rfind("error: unknown command 'bogus'", 0), 0u) << test::read_file(err);
}

// bench validates every host-side option before it touches the device (no GPU here: a check that came
// after device start-up would report the CUDA driver instead of the option).
TEST_F(CliBadInput, BenchChecksOptionsBeforeTheDevice) {
  const std::string m = quote(model_);
  if (cli("bench --model " + m).err.find("built without CUDA") != std::string::npos) GTEST_SKIP() << "CPU-only build";
  expect_one_error(cli("bench --model " + quote(dir_.file("missing.onnx"))), {"missing.onnx", "--model file", "No such file or directory"});
  // a directory, a FIFO (never opened for reading: no hang) and a name too long each say what is wrong
  expect_one_error(cli("bench --model " + quote(dir_.path().string())), {"--model file", "is a directory"});
  const std::string fifo = dir_.file("fifo.onnx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_one_error(cli("bench --model " + quote(fifo)), {"fifo.onnx", "a FIFO"});
  expect_one_error(cli("bench --model " + quote(dir_.file(std::string(300, 'n')))), {"--model file", "File name too long"});
  expect_one_error(cli("bench --model " + m + " --duration -1"), {"--duration"});
  expect_one_error(cli("bench --model " + m + " --duration nan"), {"--duration"});
  expect_one_error(cli("bench --model " + m + " --duration 1e15"), {"--duration"});
  expect_one_error(cli("bench --model " + m + " --topk 0"), {"--topk"});
  expect_one_error(cli("bench --model " + m + " --topk 33"), {"--topk"});
  expect_one_error(cli("bench --model " + m + " --device -1"), {"--device"});
  expect_one_error(cli("bench --model " + m + " --source 99999999x99999999"), {"--source", "too large"});
  expect_one_error(cli("bench --model " + m + " --frame " + quote(dir_.file("nope.rgb"))), {"nope.rgb", "--frame file", "No such file"});
  expect_one_error(cli("bench --model " + m + " --image " + quote(dir_.path().string())), {"--image file", "is a directory"});
  expect_one_error(cli("bench --model " + m + " --json " + quote(dir_.file("no/such/dir/r.json"))), {"cannot write", "directory"});
  expect_one_error(cli("bench --model " + m + " --samples " + quote(dir_.path().string())), {"cannot write", "is a directory"});
  expect_one_error(cli("bench --model " + m + " --tactic-sources nope"), {"--tactic-sources", "nope"});
  expect_one_error(cli("bench --model " + m + " --pdl --no-pdl"), {"--no-pdl", "excludes", "--pdl"});
  expect_one_error(cli("bench --model " + m + " --armed-launch --no-cuda-graph"), {"--armed-launch", "--no-cuda-graph"});
  expect_one_error(cli("bench --model " + m + " --armed-launch --lanes 5"), {"--armed-launch", "at most 4 lanes", "--lanes 5"});
  // the opt-in pooled head: without our tactics it could fuse nothing; a malformed value; a missing or truncated model
  expect_one_error(cli("bench --model " + m + " --pooled-head --tactic-sources cudnn,cublaslt"), {"--pooled-head", "warpstream"});
  expect_one_error(cli("bench --model " + m + " --pooled-head=banana"), {"--pooled-head", "banana"});
  expect_one_error(cli("bench --pooled-head --model " + quote(dir_.file("missing.onnx"))), {"missing.onnx", "--model file"});
  // the fused stem's off switch takes no value
  expect_one_error(cli("bench --model " + m + " --no-stem-pool=banana"), {"no-stem-pool", "flag override"});
  expect_one_error(cli("bench --model " + m + " --no-stem-pool=false"), {"no-stem-pool", "flag override"});  // no double negative
  // the opt-in cluster split-K form: with the reduce-kernel-only switch, in fp32, without our tactics
  expect_one_error(cli("bench --model " + m + " --split-k-cluster --split-k-reduce-kernel"), {"--split-k-reduce-kernel", "excludes", "--split-k-cluster"});
  expect_one_error(cli("bench --model " + m + " --split-k-cluster"), {"--split-k-cluster", "not with --precision fp32"});
  expect_one_error(cli("bench --model " + m + " --split-k-cluster --precision fp16 --tactic-sources cudnn"), {"--split-k-cluster", "warpstream"});
  // auxiliary streams: out of range (one is used), malformed; --profile-first without the profile it orders
  expect_one_error(cli("bench --model " + m + " --aux-streams 2"), {"--aux-streams", "2"});
  expect_one_error(cli("bench --model " + m + " --aux-streams -1"), {"--aux-streams", "-1"});
  expect_one_error(cli("bench --model " + m + " --aux-streams banana"), {"--aux-streams", "banana"});
  expect_one_error(cli("bench --model " + m + " --profile-first"), {"--profile-first", "--profile-layers"});
  // the frame-level tactic check: without the timing cache it edits, out of range, malformed
  expect_one_error(cli("bench --model " + m + " --frame-tune 4"), {"--frame-tune", "--timing-cache"});
  expect_one_error(cli("bench --model " + m + " --frame-tune 300 --timing-cache " + quote(dir_.file("tc.json"))), {"--frame-tune", "300"});
  expect_one_error(cli("bench --model " + m + " --frame-tune banana --timing-cache " + quote(dir_.file("tc.json"))), {"--frame-tune", "banana"});
  // the input wavefront's depth: out of range, malformed, or without --input-wavefront
  expect_one_error(cli("bench --model " + m + " --input-wavefront --input-wavefront-steps 3"), {"--input-wavefront-steps", "3"});
  expect_one_error(cli("bench --model " + m + " --input-wavefront --input-wavefront-steps banana"), {"--input-wavefront-steps", "banana"});
  expect_one_error(cli("bench --model " + m + " --input-wavefront-steps 1"), {"--input-wavefront-steps", "--input-wavefront"});
  // the opt-in NHWC tactic families: a malformed value, or a request that rules them out
  expect_one_error(cli("bench --model " + m + " --nhwc-igemm=banana"), {"--nhwc-igemm", "banana"});
  expect_one_error(cli("bench --model " + m + " --cudnn-graph --precision fp32"), {"--cudnn-graph", "not with --precision fp32"});
  expect_one_error(cli("bench --model " + m + " --nhwc-igemm --precision fp16 --layout nchw"), {"--nhwc-igemm", "not with --layout nchw"});
  expect_one_error(cli("bench --model " + m + " --nhwc-igemm --precision fp16 --tactic-sources cudnn"), {"--nhwc-igemm", "must include warpstream"});
  expect_one_error(cli("bench --model " + m + " --cudnn-graph --precision fp16 --tactic-sources warpstream"), {"--cudnn-graph", "must include cudnn"});
  expect_one_error(cli("bench --model " + m + " --cutlass-conv --precision fp32"), {"--cutlass-conv", "not with --precision fp32"});
  expect_one_error(cli("bench --model " + m + " --hwc8"), {"--hwc8", "not with --precision fp32"});
  expect_one_error(cli("bench --model " + m + " --hwc8 --precision fp16 --layout nchw"), {"--hwc8", "not with --layout nchw"});
  expect_one_error(cli("bench --model " + m + " --hwc8 --precision fp16 --tactic-sources warpstream"), {"--hwc8", "must include cudnn"});
  // --hwc8-port (--hwc8, and the padded input taken at the engine's port): refused where --hwc8 is
  expect_one_error(cli("bench --model " + m + " --hwc8-port"), {"--hwc8-port", "not with --precision fp32"});
  expect_one_error(cli("bench --model " + m + " --hwc8-port --precision fp16 --layout nchw"), {"--hwc8-port", "not with --layout nchw"});
  expect_one_error(cli("bench --model " + m + " --hwc8-port --precision fp16 --tactic-sources warpstream"), {"--hwc8-port", "must include cudnn"});
  expect_one_error(cli("bench --model " + m + " --hwc8-port=banana"), {"--hwc8-port", "banana"});
  expect_one_error(cli("bench --model " + m + " --cutlass-conv --precision fp16 --layout nchw"), {"--cutlass-conv", "not with --layout nchw"});
  expect_one_error(cli("bench --model " + m + " --cutlass-conv --precision fp16 --tactic-sources cudnn"), {"--cutlass-conv", "must include warpstream"});
  expect_one_error(cli("bench --model " + m + " --cutlass-conv"), {"--cutlass-conv", "bench's default", "--precision fp16"});
  expect_one_error(cli("bench --model " + m + " --cutlass-conv --precision fp16 --tactic-sources warpstream"), {"--cutlass-conv", "must include cudnn"});
  expect_one_error(cli("bench --model " + m + " --nhwc-igemm --precision fp16 --tactic-sources warpstream --layout nhwc"),
                   {"--nhwc-igemm", "must include cudnn"});
  expect_one_error(cli("bench --model " + m + " --layout bogus"), {"--layout", "'bogus'", "auto, nchw or nhwc"});
  expect_one_error(cli("bench --model " + m + " --profile-layers -1"), {"--profile-layers"});
  expect_one_error(cli("bench --model " + m + " --precision fp4"), {"--precision", "'fp4'", "fp32, fp16 or fp8"});
  expect_one_error(cli("bench --model " + m + " --precision fp8"), {"--precision fp8 needs --calibration DIR"});
  expect_one_error(cli("bench --model " + m + " --fp8-obey"), {"--fp8-obey", "fp8 only"});
  expect_one_error(cli("bench --model " + m + " --precision fp16 --calibration " + quote(dir_.path().string())), {"--calibration", "fp8 only"});
  expect_one_error(cli("bench --model " + m + " --precision fp8 --calibration " + quote(dir_.file("nodir"))), {"--calibration", "does not exist"});
  const std::string empty = dir_.file("empty_calib");
  std::filesystem::create_directories(empty);
  expect_one_error(cli("bench --model " + m + " --precision fp8 --calibration " + quote(empty)), {"--calibration", "no .png / .jpg / .jpeg"});
  const std::string broken = dir_.file("broken_calib");
  std::filesystem::create_directories(broken);
  test::write_file(broken + "/a.png", "not a png");
  expect_one_error(cli("bench --model " + m + " --precision fp8 --calibration " + quote(broken)), {"a.png"});
}

// classify: --precision fp8 without --calibration is refused before any work (whatever the device).
TEST_F(CliBadInput, ClassifyFp8NeedsCalibration) {
  expect_one_error(classify(model_, labels_, image_, "--precision fp8"), {"--precision fp8 needs --calibration DIR"});
  expect_one_error(classify(model_, labels_, image_, "--precision fp4"), {"usage", "--precision"});
  const std::string calib = quote(dir_.path().string());  // holds img.png
  expect_one_error(classify(model_, labels_, image_, "--precision fp8 --calibration " + calib), {"fp8", "CUDA executor only", "--device cpu"});
  // --device cpu refuses fp8 before reading the folder (a fixed folder would still not run); --device auto reads it
  // first (the device is resolved after the host checks), so a missing folder is named there.
  expect_one_error(classify(model_, labels_, image_, "--precision fp8 --calibration " + quote(dir_.file("nodir"))), {"fp8", "CUDA executor only", "--device cpu"});
  expect_one_error(cli("classify --device auto --model " + quote(model_) + " --labels " + quote(labels_) + " --precision fp8 --calibration " +
                       quote(dir_.file("nodir")) + " " + quote(image_)),
                   {"--calibration", "does not exist"});
  expect_one_error(classify(model_, labels_, image_, "--fp8-obey"), {"--fp8-obey", "fp8 only"});
  expect_one_error(classify(model_, labels_, image_, "--calibration " + calib), {"--calibration", "fp8 only"});
}

// The model is host work as well: truncated, empty, random-byte, gigabyte-initializer and wrongly shaped
// models are reported by bench before it needs a device, with and without --hwc8 or --hwc8-port (a missing file too).
TEST_F(CliBadInput, BenchRejectsBadModelsBeforeTheDevice) {
  if (cli("bench --model " + quote(model_)).err.find("built without CUDA") != std::string::npos) GTEST_SKIP() << "CPU-only build";
  const std::string full = test::read_file(model_);
  const std::string truncated = dir_.file("truncated.onnx"), empty = dir_.file("empty.onnx");
  test::write_file(truncated, full.substr(0, full.size() / 2));
  test::write_file(empty, "");
  // each also with the channels-last opt-ins (--hwc8 pads the RGB input: still host work, still refused first)
  const std::string hwc8 = " --precision fp16 --hwc8 --cutlass-conv";
  const std::string hwc8_port = " --precision fp16 --hwc8-port --cutlass-conv";
  const std::string no_stem = " --precision fp16 --no-stem-pool";  // the fused stem's off switch: the model is still checked first
  for (const std::string extra : {std::string(), hwc8, hwc8_port, no_stem}) {
    expect_one_error(cli("bench --model " + quote(truncated) + extra), {"truncated.onnx"});
    expect_one_error(cli("bench --model " + quote(empty) + extra), {"empty.onnx"});
  }
  expect_one_error(cli("bench --model " + quote(dir_.file("missing.onnx")) + hwc8), {"missing.onnx", "No such file or directory"});
  expect_one_error(cli("bench --model " + quote(dir_.file("missing.onnx")) + hwc8_port), {"missing.onnx", "No such file or directory"});
  expect_one_error(cli("bench --model " + quote(dir_.file("missing.onnx")) + no_stem), {"missing.onnx", "No such file or directory"});
  {
    ModelBuilder m(13);
    m.input("input", DType::kFloat32, {1, 3, 32, 32});
    m.raw_initializer("huge_weight", DType::kFloat32, {100000, 100000, 100});
    m.node("GlobalAveragePool", {"input"}, {"g"});
    m.node("Flatten", {"g"}, {"logits"});
    m.output("logits");
    const std::string huge = dir_.file("huge.onnx");
    ASSERT_TRUE(m.save(huge).is_ok());
    expect_one_error(cli("bench --model " + quote(huge)), {"huge_weight"});
    expect_one_error(cli("bench --model " + quote(huge) + hwc8), {"huge_weight"});
    expect_one_error(cli("bench --model " + quote(huge) + hwc8_port), {"huge_weight"});
  }
  {
    ModelBuilder m(13);
    m.input("digits", DType::kFloat32, {1, 1, 28, 28});
    m.initializer("w", {784, 10}, test::random_floats(7840, 1));
    m.node("Flatten", {"digits"}, {"f"});
    m.node("Gemm", {"f", "w"}, {"logits"});
    m.output("logits");
    const std::string mnist = dir_.file("mnist.onnx");
    ASSERT_TRUE(m.save(mnist).is_ok());
    expect_one_error(cli("bench --model " + quote(mnist)), {"'digits'", "[1, 1, 28, 28]", "[1, 3, H, W]"});
    expect_one_error(cli("bench --model " + quote(mnist) + hwc8), {"'digits'", "[1, 1, 28, 28]", "[1, 3, H, W]"});
    expect_one_error(cli("bench --model " + quote(mnist) + hwc8_port), {"'digits'", "[1, 1, 28, 28]", "[1, 3, H, W]"});
  }
}

// onnx-test's own options: each bad one is one error line and exit 2, before any case runs.
TEST_F(CliBadInput, OnnxTestRejectsBadOptions) {
  const std::string d = quote(dir_.path().string());
  expect_one_error(cli("onnx-test --precision fp8 " + d), {"--precision", "fp8"});
  expect_one_error(cli("onnx-test --precision fp16 " + d), {"--precision fp16", "--device cuda"});
  expect_one_error(cli("onnx-test --check-support " + d), {"--check-support", "--device cuda"});
  expect_one_error(cli("onnx-test --layout nhwc " + d), {"--layout nhwc", "--device cuda"});
  expect_one_error(cli("onnx-test --layout bogus " + d), {"usage", "--layout"});
  expect_one_error(cli("onnx-test " + quote(dir_.file("no-such-dir"))), {"not a directory"});
  const CliResult cuda = cli("onnx-test --device cuda --tactic-sources bogus " + d);
  if (cuda.err.find("no CUDA support") != std::string::npos) GTEST_SKIP() << "CPU-only build: " << cuda.err;
  expect_one_error(cuda, {"--tactic-sources", "bogus", "expected cudnn, cublaslt, warpstream or all"});
}

TEST_F(CliBadInput, CompareRefusesReportsWithoutTheMetric) {
  const std::string a = dir_.file("a.json");
  test::write_file(a, "{\"schema\": \"warpstream-bench/1\"}");
  expect_one_error(cli("compare " + quote(a) + " " + quote(a)), {"a.json", "p50", "host_latency_us"});
  const std::string ours = quote(std::string(WS_TEST_DATA_DIR) + "/bench/ours.json");
  expect_one_error(cli("compare --clock-tolerance -5 " + ours + " " + ours), {"--clock-tolerance"});
  expect_one_error(cli("compare --clock-tolerance nan " + ours + " " + ours), {"--clock-tolerance"});
  const CliResult ok = cli("compare " + ours + " " + ours);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out.find("nan"), std::string::npos) << ok.out;
  // A percentile of 0 or below gives no ratio (it printed "nan" / "inf" / negative ratios): refused, naming the
  // file and the field.
  for (const char* v : {"0", "-5", "0.0"}) {
    SCOPED_TRACE(v);
    const std::string z = dir_.file("zero.json");
    test::write_file(z, std::string("{\"schema\": \"warpstream-bench/1\", \"metrics\": {\"host_latency_us\": "
                                    "{\"p50\": ") + v + ", \"p99\": 2, \"p99_9\": 3}}}");
    expect_one_error(cli("compare " + ours + " " + quote(z)), {"zero.json", "host_latency_us.p50", "> 0"});
  }
}

// With every option valid and no usable GPU (this machine), bench says so in the runtime's words and exits 3, as
// onnx-test --device cuda does (it used to exit 2, "bad input", with CUDA's "driver version is insufficient").
TEST_F(CliBadInput, BenchWithoutAGpuExitsThree) {
  const std::string m = quote(model_);
  const CliResult probe = cli("bench --model " + m + " --no-pdl --split-k-reduce-kernel --iterations 1 --warmup 0");
  if (probe.err.find("built without CUDA") != std::string::npos) GTEST_SKIP() << "CPU-only build";
  if (probe.exit_code == 0) GTEST_SKIP() << "a usable CUDA device is present: nothing to check here";
  EXPECT_EQ(probe.exit_code, 3) << probe.err;
  EXPECT_NE(probe.err.find("no usable CUDA device"), std::string::npos) << probe.err;
  EXPECT_EQ(probe.err.find("src/"), std::string::npos) << "a source path in a user-facing message: " << probe.err;
}

// make-demo-model to a FIFO nobody reads used to block forever; it is refused at once, naming the reason.
TEST_F(CliBadInput, MakeDemoModelToAFifoWithoutReaderIsRefused) {
  const std::string fifo = dir_.file("out_fifo.onnx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string err = dir_.file("err_fifo.txt");
  const int rc = std::system(("timeout 20 " + quote(WS_CLI_PATH) + " make-demo-model " + quote(fifo) + " 2> " + quote(err)).c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2) << "124 = it hung until timeout killed it; stderr: " << test::read_file(err);
  EXPECT_NE(test::read_file(err).find("FIFO with no reader"), std::string::npos) << test::read_file(err);
}

TEST_F(CliBadInput, MakeDemoModelWriteFailureNamesTheReason) {
  const std::string err = dir_.file("err.txt");
  const int rc = std::system((quote(WS_CLI_PATH) + " make-demo-model " + quote(dir_.file("no/such/dir/m.onnx")) +
                              " 2> " + quote(err)).c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_NE(test::read_file(err).find("No such file or directory"), std::string::npos) << test::read_file(err);
}

}  // namespace
}  // namespace ws
