// The CUDA executor's refusals of forms its kernels do not cover: each one-node model below is valid ONNX that
// the CPU executor runs, and CudaEngine::check_support (device-free: no GPU is touched) must refuse it with
// kUnsupported naming the node, the op and the reason — before any GPU work (issue 14, deliverable 4). The forms
// are the limits of the late-session kernels: ScatterND with two updates of one slice (their order would race) or
// an out-of-range index, Resize tf_crop_and_resize without a roi, integer Mod (fmod = 0) on floats, Pow with an
// integer exponent beyond 2^24. Each test also checks that the form one step inside the limit is accepted, so a
// refusal that fires on everything cannot pass. Runs without a GPU (CudaEngine::check_support needs none).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/ir/model_builder.h"
#include "support/engine_util.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

Status support(ModelBuilder& b) {
  auto g = test::import_builder(b);
  if (!g) return g.status();
  return CudaEngine::check_support(std::move(g).value(), CudaBuildOptions{});
}

void expect_refused(ModelBuilder& b, const std::string& node, const std::string& op, const std::string& why) {
  const Status s = support(b);
  ASSERT_FALSE(s.is_ok()) << "accepted; expected a refusal containing '" << why << "'";
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find(node), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find(op), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find(why), std::string::npos) << s.to_string();
}

ModelBuilder scatter_nd(const std::vector<int64_t>& indices) {
  ModelBuilder b(13);
  b.input("x", DType::kFloat32, {4, 3});
  b.initializer_i64("idx", {static_cast<int64_t>(indices.size()), 1}, indices);
  b.input("u", DType::kFloat32, {static_cast<int64_t>(indices.size()), 3});
  b.node("ScatterND", {"x", "idx", "u"}, {"y"}, "scatter_rows");
  b.output("y");
  return b;
}

TEST(CudaEngineRefusals, ScatterNdTwoUpdatesOfOneSlice) {
  ModelBuilder ok = scatter_nd({0, 2});
  EXPECT_TRUE(support(ok).is_ok()) << support(ok).to_string();
  ModelBuilder dup = scatter_nd({1, 1});
  expect_refused(dup, "scatter_rows", "ScatterND", "two updates of the same slice");
  ModelBuilder neg_dup = scatter_nd({3, -1});  // -1 is row 3 again
  expect_refused(neg_dup, "scatter_rows", "ScatterND", "two updates of the same slice");
}

TEST(CudaEngineRefusals, ScatterNdIndexOutOfRange) {
  ModelBuilder b = scatter_nd({0, 4});
  const Status s = support(b);
  ASSERT_FALSE(s.is_ok());
  // Either analysis (shape inference) or the CUDA entry may refuse it; it must name the node either way.
  EXPECT_NE(s.message().find("scatter_rows"), std::string::npos) << s.to_string();
}

ModelBuilder resize(const std::string& coord, bool with_roi) {
  ModelBuilder b(13);
  b.input("x", DType::kFloat32, {1, 1, 4, 4});
  if (with_roi) b.initializer("roi", {8}, {0, 0, 0.25f, 0.25f, 1, 1, 0.75f, 0.75f});
  b.initializer("scales", {4}, {1, 1, 2, 2});
  b.node("Resize", {"x", with_roi ? "roi" : "", "scales"}, {"y"}, "upsample2x").s("mode", "linear").s("coordinate_transformation_mode", coord);
  b.output("y");
  return b;
}

TEST(CudaEngineRefusals, ResizeTfCropAndResizeNeedsRoi) {
  ModelBuilder ok = resize("tf_crop_and_resize", true);
  EXPECT_TRUE(support(ok).is_ok()) << support(ok).to_string();
  ModelBuilder half = resize("half_pixel", false);
  EXPECT_TRUE(support(half).is_ok()) << support(half).to_string();
  ModelBuilder no_roi = resize("tf_crop_and_resize", false);
  const Status s = support(no_roi);
  ASSERT_FALSE(s.is_ok()) << "tf_crop_and_resize without roi accepted";
  EXPECT_NE(s.message().find("upsample2x"), std::string::npos) << s.to_string();
}

ModelBuilder mod(int64_t fmod) {
  ModelBuilder b(13);
  b.input("a", DType::kFloat32, {2, 3});
  b.input("n", DType::kFloat32, {2, 3});
  b.node("Mod", {"a", "n"}, {"y"}, "remainder").i("fmod", fmod);
  b.output("y");
  return b;
}

TEST(CudaEngineRefusals, IntegerModOnFloatsIsRefused) {
  ModelBuilder ok = mod(1);
  EXPECT_TRUE(support(ok).is_ok()) << support(ok).to_string();
  ModelBuilder bad = mod(0);
  const Status s = support(bad);
  ASSERT_FALSE(s.is_ok()) << "Mod fmod=0 on float accepted";
  EXPECT_NE(s.message().find("remainder"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("Mod"), std::string::npos) << s.to_string();
}

ModelBuilder pow_int(int64_t exponent) {
  ModelBuilder b(13);
  b.input("x", DType::kFloat32, {2, 3});
  b.initializer_i64("e", {}, {exponent});
  b.node("Pow", {"x", "e"}, {"y"}, "power");
  b.output("y");
  return b;
}

TEST(CudaEngineRefusals, PowIntegerExponentBeyondFloatPrecision) {
  ModelBuilder ok = pow_int(int64_t{1} << 24);
  EXPECT_TRUE(support(ok).is_ok()) << support(ok).to_string();
  ModelBuilder three = pow_int(3);
  EXPECT_TRUE(support(three).is_ok()) << support(three).to_string();
  ModelBuilder big = pow_int((int64_t{1} << 24) + 1);
  expect_refused(big, "power", "Pow", "beyond");
}

// Not a refusal: kHWC8 (CudaBuildOptions::hwc8_input) on a ResNet-50 stem (RGB [1,3,32,32] -> Conv 7x7 s2 p3 ->
// MaxPool) passes the support checks with the padded copy and weights (the CPU op table analyses the Conv on 8
// channels), and LayoutPlan counts the one padded reformat; without the option nothing is padded. With the kHWC8 input
// port (hwc8_input_port) the padded copy is the graph input: the conv reads it directly, no reformat is left and
// LayoutPlan counts the port. Device-free.
TEST(CudaEngineRefusals, Hwc8StemPassesTheSupportChecks) {
  ModelBuilder b(13);
  b.input("x", DType::kFloat32, {1, 3, 32, 32});
  b.initializer("w", {8, 3, 7, 7}, std::vector<float>(8 * 3 * 49, 0.01f));
  b.node("Conv", {"x", "w"}, {"c"}, "stem").ints("kernel_shape", {7, 7}).ints("strides", {2, 2}).ints("pads", {3, 3, 3, 3});
  b.node("MaxPool", {"c"}, {"p"}, "pool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  b.node("GlobalAveragePool", {"p"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"y"}, "flatten");
  b.output("y");
  for (int mode : {0, 1, 2}) {  // off, hwc8_input, hwc8_input + hwc8_input_port
    auto g = test::import_builder(b);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    CudaBuildOptions o;
    o.precision = Precision::kFloat16;
    o.hwc8_input = mode >= 1;
    o.hwc8_input_port = mode == 2;
    LayoutPlan plan;
    const Status s = CudaEngine::check_support(std::move(g).value(), o, &plan);
    ASSERT_TRUE(s.is_ok()) << "mode " << mode << ": " << s.to_string();
    EXPECT_EQ(plan.layout, Layout::kNhwc);
    EXPECT_EQ(plan.reformats, mode == 2 ? 0u : 1u) << "mode " << mode;
    EXPECT_EQ(plan.hwc8_pads, mode >= 1 ? 1u : 0u) << "mode " << mode;
    EXPECT_EQ(plan.hwc8_ports, mode == 2 ? 1u : 0u) << "mode " << mode;
  }
}

}  // namespace
}  // namespace ws
