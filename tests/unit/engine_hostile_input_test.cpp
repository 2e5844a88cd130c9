// Hostile models and files (issue 16): one minimal input per class of finding, each refused with a
// Status — never an out-of-bounds read, a signed overflow, or an allocation a few bytes can
// inflate. The classes: inputs an analyzer reads that the node does not have; shape arithmetic
// that overflows int64; dims that promise more memory than the file holds; absurd-but-valid sizes
// over the per-tensor element bound; model strings (names, op types, attributes) in messages.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <limits>

#include "core/checked_math.h"
#include "core/escape.h"
#include "core/limits.h"
#include "engine/ir/op_table.h"
#include "engine/ir/tensor_proto.h"
#include "support/alloc_counter.h"
#include "support/engine_util.h"
#include "support/refusal_util.h"
#include "support/test_util.h"
#include "bench/report.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// ---- checked arithmetic ------------------------------------------------------------------------

TEST(CheckedMath, AddMulSubRefuseOverflow) {
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_FALSE(checked_add(kMax, 1));
  EXPECT_FALSE(checked_sub(std::numeric_limits<int64_t>::min(), 1));
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_FALSE(checked_mul(int64_t{1} << 32, int64_t{1} << 31));
  EXPECT_FALSE(checked_mul_size(size_t{1} << 63, 2));
  EXPECT_EQ(checked_add_size(1, 2), 3u);
}

TEST(CheckedMath, ExtentCountsZeroAsOneSoPartialProductsAreBounded) {
  const std::vector<int64_t> zero_then_huge{0, int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_FALSE(checked_extent(zero_then_huge));  // elements() is 0, but 2^80 partial products
  const std::vector<int64_t> ok{0, 3, 4};
  EXPECT_EQ(checked_extent(ok), 12);
  const std::vector<int64_t> neg{2, -1};
  EXPECT_FALSE(checked_extent(neg));
}

// ---- escaping --------------------------------------------------------------------------------

TEST(Escape, ControlBytesAndInvalidUtf8BecomeHex) {
  EXPECT_EQ(escape_text("conv1"), "conv1");
  EXPECT_EQ(escape_text("a\nb"), "a\\x0ab");
  EXPECT_EQ(escape_text("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(escape_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_text("\xc2\x9b"), "\\xc2\\x9b");          // C1 CSI as UTF-8
  EXPECT_EQ(escape_text("\xe2\x80\xae"), "\\xe2\\x80\\xae");  // right-to-left override
  EXPECT_EQ(escape_text("N×C ᵀ"), "N×C ᵀ");                  // printable UTF-8 stays
  EXPECT_EQ(escape_text(escape_text("x\n\x1b")), escape_text("x\n\x1b"));  // idempotent
  EXPECT_EQ(quoted("a\rb"), "'a\\x0db'");
}

TEST(Escape, NodeNameOpTypeAndAttributeAreEscapedInErrors) {
  ModelBuilder m(13);
  test::one_node_model(m, "Relu\x1b]0;pwned\x07", {"x"}, "evil\nerror: forged line");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  const std::string msg = e.to_string();
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
  EXPECT_MESSAGE_HAS(e, "evil\\x0aerror: forged line");
  EXPECT_MESSAGE_HAS(e, "Relu\\x1b]0;pwned\\x07");

  ModelBuilder a(13);
  a.input("x", DType::kFloat32, {1, 4});
  a.node("Relu", {"x"}, {"y"}, "r").i("bad\x1b[31m", 1);
  a.output("y");
  auto ea = test::build_engine(a);
  ASSERT_FALSE(ea.is_ok());
  EXPECT_MESSAGE_HAS(ea.status(), "'bad\\x1b[31m'");
}

TEST(Escape, StatusToStringIsOneLineWhateverTheMessage) {
  Status s = invalid_model("line1\nline2\x1b[2J");
  EXPECT_EQ(s.to_string(), "invalid model: line1\\x0aline2\\x1b[2J");
}

TEST(Escape, ImportErrorsEscapeTensorAndSourceNames) {
  ModelBuilder m(13);
  test::one_node_model(m, "Relu", {"no\nsuch"}, "r");
  auto g = ir::import_onnx_bytes(m.bytes(), "file\x1b.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_MESSAGE_HAS(g.status(), "'no\\x0asuch'");
  EXPECT_MESSAGE_HAS(g.status(), "file\\x1b.onnx");
}

// ---- inputs an analyzer reads that the node does not have ---------------------------------------

TEST(HostileInput, ReshapeWithoutShapeInputIsRefused) {
  ModelBuilder m(13);
  test::one_node_model(m, "Reshape", {"x"}, "reshape");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(e, "'reshape'");
  EXPECT_MESSAGE_HAS(e, "input 1 (shape) is missing");
}

TEST(HostileInput, ReshapeWithEmptyShapeInputNameIsRefused) {
  ModelBuilder m(13);
  test::one_node_model(m, "Reshape", {"x", ""}, "reshape");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_MESSAGE_HAS(e, "input 1 (shape) is missing");
  EXPECT_MESSAGE_HAS(e, "is empty");
}

TEST(HostileInput, PadWithoutPadsInputIsRefused) {
  ModelBuilder m(13);
  test::one_node_model(m, "Pad", {"x"}, "pad");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(e, "input 1 (pads) is missing");
}

TEST(HostileInput, AccessorNeverReadsPastTheInputList) {
  // The generic guard behind every analyzer: input(i) on an absent position fails the node.
  ir::Graph g;
  g.opset = 13;
  ir::Tensor x;
  x.name = "x";
  x.dtype = DType::kFloat32;
  x.shape = {1};
  x.shape_known = true;
  g.inputs.push_back(g.add_tensor(x));
  ir::Node n;
  n.name = "n";
  n.op_type = "Relu";
  n.inputs = {0};
  engine::NodeContext ctx{g, n, {}, {}, {}};
  const ir::Tensor& absent = ctx.input(5);
  EXPECT_EQ(absent.elements(), 0);
  EXPECT_FALSE(ctx.missing_input_error.is_ok());
  EXPECT_MESSAGE_HAS(ctx.missing_input_error, "input 5");
}

TEST(HostileInput, OmittedRequiredOutputIsRefused) {
  // Found by onnx_structure_fuzz (tests/data/hostile/fuzz-shape-empty-output.onnx): a Shape node
  // whose only output is named "" was evaluated at build into a null destination.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 4});
  m.node("Shape", {"x"}, {""}, "shape");
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(e, "required output 0 is missing");
}

// ---- work amplification ---------------------------------------------------------------------------

TEST(HostileInput, NodeWorkOverTheLimitIsRefused) {
  // Found by onnx_structure_fuzz (tests/fuzz/seeds/onnx/regression-convtranspose-kernel-as-large-as-input.onnx, a
  // timeout under ASAN): ConvTranspose(X, X) with X [1, 1, 238, 106] is 636 M multiply-accumulates from a 169-byte
  // model whose tensors are all small. The per-node bound (WS_MAX_NODE_MACS) refuses it before any kernel runs.
  const BuildLimits saved = build_limits();
  BuildLimits l = saved;
  l.max_node_macs = int64_t{1} << 24;
  set_build_limits(l);
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 238, 106});
  m.node("ConvTranspose", {"x", "x"}, {"y"}, "convt");
  m.output("y");
  const Status e = test::build_status(m);
  ModelBuilder ok(13);  // the same op at a size under the bound builds
  ok.input("x", DType::kFloat32, {1, 1, 20, 10});
  ok.node("ConvTranspose", {"x", "x"}, {"y"}, "convt");
  ok.output("y");
  const Status fine = test::build_status(ok);
  ModelBuilder mm(13);  // MatMul: 256 x 256 x 512 = 2^25 > 2^24
  mm.input("a", DType::kFloat32, {256, 512});
  mm.input("b", DType::kFloat32, {512, 256});
  mm.node("MatMul", {"a", "b"}, {"y"}, "mm");
  mm.output("y");
  const Status big_mm = test::build_status(mm);
  set_build_limits(saved);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kResourceExhausted);
  EXPECT_MESSAGE_HAS(e, "multiply-accumulates");
  EXPECT_MESSAGE_HAS(e, "WS_MAX_NODE_MACS");
  EXPECT_MESSAGE_HAS(e, "convt");
  EXPECT_TRUE(fine.is_ok()) << fine.to_string();
  ASSERT_FALSE(big_mm.is_ok());
  EXPECT_MESSAGE_HAS(big_mm, "33554432 multiply-accumulates");
}

// ---- shape arithmetic overflow ------------------------------------------------------------------

TEST(HostileInput, ConvSameLowerStrideNearInt64MaxRuns) {
  // Found by onnx_structure_fuzz (tests/fuzz/seeds/onnx/regression-conv-stride-near-int64-max-same-lower.onnx): strides
  // 2^63 - 2 with auto_pad SAME_LOWER (legal: one output position per axis) overflowed in the reference conv's range
  // division at run time (UBSAN). The run must give the 1x1 conv of the first pixel of each row: y = w * x.
  ModelBuilder m(13);
  m.initializer("w", {1, 1, 1, 1}, {2.0f});
  test::one_node_model(m, "Conv", {"x", "w"}, "conv", {1, 1, 4, 4})
      .ints("strides", {2, kMax - 1})
      .s("auto_pad", "SAME_LOWER");
  auto e = test::build_engine(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->output_desc(0).shape, (ir::Shape{1, 1, 2, 1}));
  auto* x = static_cast<float*>((*e)->input(0));
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  ASSERT_TRUE((*e)->run().is_ok());
  const auto* y = static_cast<const float*>((*e)->output(0));
  EXPECT_EQ(y[0], 0.0f);   // x[0, 0] * 2
  EXPECT_EQ(y[1], 16.0f);  // x[2, 0] * 2
}

TEST(HostileInput, ConvPadsNearInt64MaxAreRefused) {
  ModelBuilder m(13);
  m.initializer("w", {1, 1, 1, 1}, {1.0f});
  test::one_node_model(m, "Conv", {"x", "w"}, "conv", {1, 1, 4, 4}).ints("pads", {0, 0, kMax, 0});
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(e, "overflows");
}

TEST(HostileInput, PoolDilationAndKernelOverflowAreRefused) {
  ModelBuilder m(13);
  test::one_node_model(m, "MaxPool", {"x"}, "pool", {1, 1, 4, 4}).ints("kernel_shape", {2, 2}).ints("dilations", {kMax, 1});
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_MESSAGE_HAS(e, "overflows");
}

TEST(HostileInput, ConvSameUpperHugeStrideDoesNotOverflow) {
  ModelBuilder m(13);
  m.initializer("w", {1, 1, 1, 1}, {1.0f});
  test::one_node_model(m, "Conv", {"x", "w"}, "conv", {1, 1, 4, 4}).s("auto_pad", "SAME_UPPER").ints("strides", {kMax, kMax});
  auto e = test::build_engine(m);  // legal: one output position per axis
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->output_desc(0).shape, (ir::Shape{1, 1, 1, 1}));
}

TEST(HostileInput, ConvGroupTimesChannelsOverflowIsRefused) {
  ModelBuilder m(13);
  m.initializer("w", {2, 1, 1, 1}, {1.0f, 1.0f});
  test::one_node_model(m, "Conv", {"x", "w"}, "conv", {1, 2, 4, 4}).i("group", int64_t{1} << 62);
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_MESSAGE_HAS(e, "'group'");
}

TEST(HostileInput, ReshapeTargetProductOverflowIsRefused) {
  ModelBuilder m(13);
  m.initializer_i64("s", {3}, {int64_t{1} << 40, int64_t{1} << 40, -1});
  test::one_node_model(m, "Reshape", {"x", "s"}, "reshape");
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(e, "64-bit");
}

TEST(HostileInput, ZeroDimNextToHugeDimsIsRefused) {
  ModelBuilder m(13);
  test::one_node_model(m, "Softmax", {"x"}, "softmax", {0, int64_t{1} << 40, int64_t{1} << 40});
  const Status g = test::import_status(m);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.code(), StatusCode::kResourceExhausted);
  EXPECT_MESSAGE_HAS(g, "'x'");
}

// ---- memory a few bytes can promise -------------------------------------------------------------

TEST(HostileInput, InitializerDimsWithoutDataAllocateNothingBig) {
  for (bool raw : {true, false}) {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 4});
    auto& t = m.raw_initializer("big", DType::kFloat32, {int64_t{1} << 27});  // 512 MiB promised
    if (raw) t.set_raw_data("abcd");
    m.node("Relu", {"x"}, {"y"}, "relu");
    m.output("y");
    const auto bytes = m.bytes();
    test::reset_largest_allocation();
    auto g = ir::import_onnx_bytes(bytes, "big.onnx");
    ASSERT_FALSE(g.is_ok());
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel);
    EXPECT_MESSAGE_HAS(g.status(), "'big'");
    EXPECT_LT(test::largest_allocation(), uint64_t{1} << 20) << "import allocated what the dims promise";
  }
}

TEST(HostileInput, TensorProtoWithDimsAndNoDataAllocatesNothingBig) {
  onnx::TensorProto tp;
  tp.set_data_type(onnx::TensorProto::FLOAT);
  tp.add_dims(int64_t{1} << 28);  // 1 GiB promised by 13 bytes
  std::string bytes;
  ASSERT_TRUE(tp.SerializeToString(&bytes));
  test::reset_largest_allocation();
  auto t = ir::parse_tensor_proto(std::as_bytes(std::span<const char>(bytes)), "input_0.pb");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidModel);
  EXPECT_MESSAGE_HAS(t.status(), "input_0.pb");
  EXPECT_LT(test::largest_allocation(), uint64_t{1} << 20);
}

TEST(HostileInput, LargePadsAreBoundedByTheElementLimit) {
  ModelBuilder m(13);
  m.initializer("w", {32, 1, 3, 3}, std::vector<float>(32 * 9, 0.1f));
  test::one_node_model(m, "Conv", {"x", "w"}, "dw", {1, 32, 112, 112}).i("group", 32).ints("pads", {65536, 0, 0, 0});
  const Status e = test::build_status(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), StatusCode::kResourceExhausted);
  EXPECT_MESSAGE_HAS(e, "'dw'");
  EXPECT_MESSAGE_HAS(e, "WS_MAX_TENSOR_ELEMENTS");
}

TEST(HostileInput, ElementLimitIsUserSettable) {
  const BuildLimits saved = build_limits();
  ModelBuilder m(13);
  test::one_node_model(m, "Relu", {"x"}, "relu", {1, 64});
  ASSERT_TRUE(test::build_engine(m).is_ok());
  BuildLimits tight = saved;
  tight.max_tensor_elements = 32;
  set_build_limits(tight);
  auto e = test::build_engine(m);
  set_build_limits(saved);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted);
  EXPECT_MESSAGE_HAS(e.status(), "32 elements");
}

TEST(HostileInput, ArenaLimitIsUserSettable) {
  const BuildLimits saved = build_limits();
  ModelBuilder m(13);
  test::one_node_model(m, "Relu", {"x"}, "relu", {1, 1024});
  BuildLimits tight = saved;
  tight.max_arena_bytes = 4096;  // x and y need 8 KiB
  set_build_limits(tight);
  auto e = test::build_engine(m);
  set_build_limits(saved);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted);
  EXPECT_MESSAGE_HAS(e.status(), "WS_MAX_ARENA_BYTES");
  ASSERT_TRUE(test::build_engine(m).is_ok());
}

TEST(HostileInput, TensorByteLimitIsUserSettable) {
  const BuildLimits saved = build_limits();
  ModelBuilder m(13);
  m.initializer("w", {1, 4}, {1, 2, 3, 4});
  test::one_node_model(m, "Add", {"x", "w"}, "add");
  BuildLimits tight = saved;
  tight.max_tensor_bytes = 8;
  set_build_limits(tight);
  auto g = test::import_builder(m);
  set_build_limits(saved);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted);
  EXPECT_MESSAGE_HAS(g.status(), "'w'");
}

TEST(HostileInput, ConstantWhoseDataDisagreesWithItsShapeIsRefused) {
  ModelBuilder m(13);
  test::one_node_model(m, "Relu", {"x"}, "relu");
  ir::ImportOptions opt;
  ir::Tensor frozen;
  frozen.dtype = DType::kFloat32;
  frozen.shape = {1, 4};
  frozen.data = std::vector<std::byte>(4);  // 1 element for a [1, 4] shape
  opt.frozen_inputs["x"] = frozen;
  auto e = test::build_engine(m, opt);
  ASSERT_FALSE(e.is_ok());
  EXPECT_MESSAGE_HAS(e.status(), "holds 4 bytes");
}

// ---- bench reports (`warpstream compare`) ---------------------------------------------------------

TEST(HostileInput, ReportFieldOfTheWrongTypeIsABadReport) {
  // Found by bench_report_fuzz (tests/fuzz/seeds/bench/wrong-type-primary.json): "primary": {...} made
  // compare_reports throw nlohmann::type_error, which the CLI reports as an internal error.
  test::TempDir dir;
  const std::string path = dir.file("r.json");
  for (const std::string& bad : {std::string(R"("label": {})"), std::string(R"("primary": 3)"),
                                 std::string(R"("metrics": {"m": []})"), std::string(R"("metrics": {"m": {"p50": "x"}})"),
                                 std::string(R"("dropped_samples": 1e300)")}) {
    test::write_file(path, R"({"schema": "warpstream-bench/1", )" + bad + "}");
    auto r = bench::read_report_json(path);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_MESSAGE_HAS(r.status(), "must be");
  }
}

}  // namespace
}  // namespace ws
