// Build-time FP8 quantisation (src/engine/cuda/fp8_quant.h) and the calibration of precision fp8
// (calibrate_activation_amax / load_calibration_frames, warpstream/classifier.h), on the CPU.
// Peers: the E4M3 grid itself (all 254 finite codes decoded by ws::fp8_e4m3_to_float; the encoder is checked code by
// code, ties and saturation included, in safetensors_numeric_test.cpp, and against the GPU's cvt.e4m3x2 instruction
// by tests/gpu/conv_fp8_test.cpp) and an independent max over the CPU executor's tensors (run_with_hook).
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "engine/cuda/fp8_quant.h"
#include "support/alloc_counter.h"
#include "support/demo_reference.h"
#include "support/test_util.h"
#include "warpstream/classifier.h"
#include "warpstream/numeric.h"

namespace ws {
namespace {

using cudaexec::fp8_activation_scale;
using cudaexec::quantize_rows_e4m3;

TEST(Fp8Quant, RowScalesMapEachRowMaximumTo448AndPadWithZeros) {
  // row 0: max 2.0 at k = 1; row 1: all zeros; row 2: max |-0.75| at k = 4 (negative)
  const std::vector<float> w = {0.5f, 2.0f, -1.0f, 0.25f, 0.0f,   0, 0, 0, 0, 0,   0.1f, 0.2f, 0.3f, -0.6f, -0.75f};
  auto q = quantize_rows_e4m3(w.data(), 3, 5, 32, "w");
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  EXPECT_EQ(q->stride, 32);
  ASSERT_EQ(q->codes.size(), 96u);
  EXPECT_FLOAT_EQ(q->scale[0], 2.0f / 448.0f);
  EXPECT_FLOAT_EQ(q->scale[1], 1.0f);  // all-zero row: any scale, codes 0
  EXPECT_FLOAT_EQ(q->scale[2], 0.75f / 448.0f);
  EXPECT_EQ(q->codes[1], 0x7Eu);             // +448
  EXPECT_EQ(q->codes[2 * 32 + 4], 0xFEu);    // -448
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t k = 5; k < 32; ++k) EXPECT_EQ(q->codes[size_t(r * 32 + k)], 0u) << "padding r" << r << " k" << k;
  for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(q->codes[size_t(32 + k)], 0u);
  // every element within half an E4M3 step of its value (3 mantissa bits: relative 2^-4 for normals)
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t k = 0; k < 5; ++k) {
      const float v = w[size_t(r * 5 + k)], d = q->dequantized(r, k);
      EXPECT_LE(std::fabs(d - v), std::fabs(v) * 0.0625f + 1e-7f) << "r" << r << " k" << k << ": " << v << " -> " << d;
    }
  EXPECT_FLOAT_EQ(q->dequantized(0, 1), 2.0f);
  EXPECT_FLOAT_EQ(q->dequantized(0, 0), 0.5f);  // 0.5 / (2/448) = 112: exact in E4M3
}

TEST(Fp8Quant, CodesAreTheNearestGridPoint) {
  // Against the whole E4M3 grid: for w / scale in [-448, 448], the code's value is a nearest grid point.
  std::vector<float> grid;
  for (int c = 0; c < 256; ++c)
    if (float v = fp8_e4m3_to_float(uint8_t(c)); !std::isnan(v)) grid.push_back(v);
  std::vector<float> w(4096);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(float(i) * 0.37f) * std::exp(float(i % 64) * -0.15f);
  w[7] = 1.0f;  // the row max
  auto q = quantize_rows_e4m3(w.data(), 1, int64_t(w.size()), 32, "w");
  ASSERT_TRUE(q.is_ok());
  for (size_t i = 0; i < w.size(); ++i) {
    const float t = w[i] / q->scale[0];
    float best = INFINITY;
    for (float gv : grid) best = std::min(best, std::fabs(gv - t));
    EXPECT_LE(std::fabs(fp8_e4m3_to_float(q->codes[i]) - t), best * (1 + 1e-6f) + 1e-12f) << "i " << i << " t " << t;
  }
}

// A row whose amax / 448 underflows float32 (amax below ~6e-43) is a zero row, as fp16 storage would make it: scale
// 1, codes 0 — not inf / NaN codes from dividing by a zero scale.
TEST(Fp8Quant, UnderflowingRowIsAZeroRow) {
  const std::vector<float> w = {1e-44f, 0.0f, -5e-45f, 0.0f,   1.0f, 0.5f, 0.0f, -1.0f};
  auto q = quantize_rows_e4m3(w.data(), 2, 4, 32, "w");
  ASSERT_TRUE(q.is_ok());
  EXPECT_FLOAT_EQ(q->scale[0], 1.0f);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(q->codes[size_t(k)], 0u) << k;
  EXPECT_FLOAT_EQ(q->scale[1], 1.0f / 448.0f);
  EXPECT_EQ(q->codes[32 + 0], 0x7Eu);
  EXPECT_EQ(q->codes[32 + 3], 0xFEu);
}

TEST(Fp8Quant, NonFiniteWeightsAndBadExtentsAreRefused) {
  std::vector<float> w = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f, 3.0f};
  auto q = quantize_rows_e4m3(w.data(), 2, 2, 32, "node 'c1' (Conv)");
  ASSERT_FALSE(q.is_ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("node 'c1' (Conv)"), std::string::npos) << q.status().message();
  EXPECT_NE(q.status().message().find("[0][1]"), std::string::npos) << q.status().message();
  w[1] = INFINITY;
  EXPECT_FALSE(quantize_rows_e4m3(w.data(), 2, 2, 32, "w").is_ok());
  EXPECT_FALSE(quantize_rows_e4m3(w.data(), 0, 2, 32, "w").is_ok());
  EXPECT_FALSE(quantize_rows_e4m3(w.data(), 2, 2, 0, "w").is_ok());
}

TEST(Fp8Quant, ActivationScaleNeedsAPositiveFiniteRange) {
  float s = -1;
  EXPECT_TRUE(fp8_activation_scale(448.0f, s));
  EXPECT_FLOAT_EQ(s, 1.0f);
  EXPECT_TRUE(fp8_activation_scale(6.0f, s));
  EXPECT_FLOAT_EQ(s, 6.0f / 448.0f);
  for (float bad : {0.0f, -1.0f, INFINITY, std::numeric_limits<float>::quiet_NaN(), 1e-45f})
    EXPECT_FALSE(fp8_activation_scale(bad, s)) << bad;
}

void write_png(const std::string& path, int w, int h, uint8_t base) {
  std::vector<uint8_t> px(size_t(w * h * 3));
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(base + (i * 7) % 200);
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = uint32_t(w);
  img.height = uint32_t(h);
  img.format = PNG_FORMAT_RGB;
  ASSERT_NE(png_image_write_to_file(&img, path.c_str(), 0, px.data(), 0, nullptr), 0);
}

TEST(Fp8Calibration, AmaxIsTheMaximumOverFramesOfEveryTensor) {
  test::TempDir dir;
  const std::string model = dir.file("demo.onnx");
  test::write_demo_model(model, {.seed = 11});
  const std::string calib = dir.file("calib");
  std::filesystem::create_directories(calib);
  write_png(calib + "/b.png", 40, 30, 10);
  write_png(calib + "/a.PNG", 33, 21, 50);
  test::write_file(calib + "/notes.txt", "not an image: skipped");
  auto frames = load_calibration_frames(calib);
  ASSERT_TRUE(frames.is_ok()) << frames.status().to_string();
  ASSERT_EQ(frames->size(), 2u);
  EXPECT_EQ((*frames)[0].width, 33);  // sorted by name: a.PNG first
  auto one = load_calibration_frames(calib, 1);
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(one->size(), 1u);
  size_t found = 0;
  auto files = list_calibration_files(calib, 1, &found);
  ASSERT_TRUE(files.is_ok());
  EXPECT_EQ(files->size(), 1u);
  EXPECT_EQ(found, 2u);  // how many there were, for "the first 1 of 2"

  auto cpu = CpuClassifier::build(model, ModelConfig{});
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  auto amax = calibrate_activation_amax(**cpu, *frames);
  ASSERT_TRUE(amax.is_ok()) << amax.status().to_string();
  // Independent: run each frame, take the max of every node output and of the input in the hook ourselves.
  std::map<std::string, float> want;
  const CpuEngine& e = (*cpu)->engine();
  const ir::Graph& g = e.graph();
  auto take = [&](ir::TensorId id) {
    const ir::Tensor& t = g.tensor(id);
    const float* v = static_cast<const float*>(e.tensor_data(id));
    float m = 0;
    for (int64_t i = 0; i < t.elements(); ++i) m = std::max(m, std::fabs(v[i]));
    want[t.name] = std::max(want[t.name], m);
  };
  for (const ImageRgb8& f : *frames) {
    ASSERT_TRUE((*cpu)->classify(f, 1).is_ok());
    take(g.inputs[0]);
    ASSERT_TRUE((*cpu)->mutable_engine().run_with_hook([&](size_t, const ir::Node& n) {
      for (ir::TensorId id : n.outputs) take(id);
    }).is_ok());
  }
  EXPECT_EQ(amax->size(), want.size());
  for (const auto& [name, v] : want) {
    ASSERT_TRUE(amax->count(name)) << name;
    EXPECT_FLOAT_EQ(amax->at(name), v) << name;
    EXPECT_GT(v, 0.0f) << name;
  }
  // the logits' range is that of the last classify's output for at least one frame: > 0 and finite
  const std::string out = g.tensor(g.outputs[0]).name;
  EXPECT_TRUE(std::isfinite(amax->at(out)));
  // calibrate_classifier streams the directory's files one at a time: the same ranges
  size_t used = 0;
  auto streamed = calibrate_classifier(model, ModelConfig{}, calib, {}, &used);
  ASSERT_TRUE(streamed.is_ok()) << streamed.status().to_string();
  EXPECT_EQ(used, 2u);
  EXPECT_EQ(*streamed, *amax);
}

TEST(Fp8Calibration, BadDirectoriesAreRefusedNamingThem) {
  test::TempDir dir;
  auto r = load_calibration_frames(dir.file("missing"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos) << r.status().message();
  test::write_file(dir.file("plain.txt"), "x");
  r = load_calibration_frames(dir.file("plain.txt"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("not a directory"), std::string::npos) << r.status().message();
  std::filesystem::remove(dir.file("plain.txt"));
  r = load_calibration_frames(dir.path().string());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("no .png / .jpg / .jpeg"), std::string::npos) << r.status().message();
  test::write_file(dir.file("x.jpg"), "garbage");
  r = load_calibration_frames(dir.path().string());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("x.jpg"), std::string::npos) << r.status().message();
  // An image name that is no regular file is refused naming it (it used to be skipped silently).
  for (const char* odd : {"dangling.png", "folder.jpeg"}) {
    test::TempDir sub;
    write_png(sub.file("good.png"), 8, 8, 1);
    if (std::string(odd) == "dangling.png") std::filesystem::create_symlink(sub.file("nowhere.png"), sub.file(odd));
    else std::filesystem::create_directories(sub.file(odd));
    auto listed = list_calibration_files(sub.path().string(), 100);
    ASSERT_FALSE(listed.is_ok()) << odd;
    EXPECT_EQ(listed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(listed.status().message().find(odd), std::string::npos) << listed.status().message();
    EXPECT_NE(listed.status().message().find(std::string(odd) == "dangling.png" ? "dangling link" : "not a regular file"), std::string::npos)
        << listed.status().message();
  }
  test::write_demo_model(dir.file("demo.onnx"));
  auto cpu = CpuClassifier::build(dir.file("demo.onnx"), ModelConfig{});
  ASSERT_TRUE(cpu.is_ok());
  EXPECT_FALSE(calibrate_activation_amax(**cpu, {}).is_ok());
}

// calibrate_classifier (what --calibration runs: one frame decoded at a time) on hostile files: each is refused with
// an error naming the file — a truncated PNG, a zero-byte one, a header promising 100000² pixels (refused before
// anything near its size is allocated) — and a missing model is refused naming the model.
TEST(Fp8Calibration, HostileFilesAreRefusedNamingThem) {
  test::TempDir dir;
  const std::string model = dir.file("demo.onnx");
  test::write_demo_model(model, {.seed = 3});
  const std::string good = dir.file("good.png");
  write_png(good, 40, 30, 20);
  const std::string bytes = test::read_file(good);
  struct Case { const char* name; std::string data; };
  for (const Case& c : {Case{"cut.png", bytes.substr(0, bytes.size() / 2)}, Case{"empty.png", ""},
                        Case{"huge.png", test::png_with_huge_header(100000, 100000)}}) {
    const std::string sub = dir.file(std::string("calib_") + c.name);
    std::filesystem::create_directories(sub);
    test::write_file(sub + "/" + c.name, c.data);
    test::reset_largest_allocation();
    auto r = calibrate_classifier(model, ModelConfig{}, sub);
    ASSERT_FALSE(r.is_ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.name), std::string::npos) << r.status().to_string();
    EXPECT_LT(test::largest_allocation(), uint64_t{1} << 28) << c.name << ": nothing near the promised size was allocated";
  }
  const std::string calib = dir.file("calib_good");
  std::filesystem::create_directories(calib);
  write_png(calib + "/a.png", 8, 8, 1);
  auto missing = calibrate_classifier(dir.file("missing.onnx"), ModelConfig{}, calib);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("missing.onnx"), std::string::npos) << missing.status().to_string();
  EXPECT_TRUE(calibrate_classifier(model, ModelConfig{}, calib).is_ok());
}

}  // namespace
}  // namespace ws
