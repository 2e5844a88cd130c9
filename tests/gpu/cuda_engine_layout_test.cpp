// Channels-last segments of the CUDA executor (CudaBuildOptions::layout, build_stages.h assign_layouts): NHWC
// cuDNN convolutions (dense, grouped, depthwise; fused bias / ReLU / residual), NHWC cuDNN pooling (max, average
// with and without padding in the count, global average), layout-free elementwise ops inside a segment, and the
// reformat steps where a segment meets an NCHW-only op (the RGB input's padded to 8 channels with hwc8_input,
// kernels::nchw_to_nhwc_pad_channels, its stem on whichever opt-in tactic wins; with hwc8_input_port that reformat is
// gone and the test writes the input in kHWC8 itself, test::write_input). Each graph runs on the CPU executor (the oracle) and on
// the CUDA executor with layout nhwc and nchw, fp32 (tolerance abs 1e-4 + rel 1e-4) and fp16 (abs 2e-2 + rel
// 2e-2), on random inputs whose seed is printed (WS_SEED reproduces); a mismatch dumps the operands.
//   build/tests/ws_gpu_tests --gtest_filter='CudaEngineLayout.*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cuda_engine_test_support.h"
#include "engine/ir/model_builder.h"
#include "lanes_gpu_support.h"
#include "support/compare_dump.h"
#include "support/small_tests.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

struct Net {
  ir::ModelBuilder b{13, "layout"};
  void conv(const std::string& name, const std::string& in, const std::string& out, std::vector<int64_t> w, int64_t stride,
            int64_t pad, int64_t group = 1) {
    test::add_random_conv(b, name, in, out, w, {stride, stride}, {pad, pad, pad, pad}, group);
  }
};

// ResNet-shaped: stem 3x3 s2 + ReLU, MaxPool 3x3 s2 p1, [Softmax axis 1: NCHW-only], a basic block with its
// residual, a depthwise 3x3 + 1x1 pair (grouped: runs NHWC only when layout is nhwc), AveragePool 3x3 p1
// (count_include_pad `incl`), Sigmoid * x (a same-shape gate), GlobalAveragePool, Flatten, Gemm.
ir::Graph net(bool softmax, bool depthwise, int64_t incl) {
  Net m;
  m.b.input("x", ir::DType::kFloat32, {1, 3, 32, 32});
  m.conv("stem", "x", "c0", {16, 3, 3, 3}, 2, 1);
  m.b.node("Relu", {"c0"}, {"r0"}, "stem_relu");
  m.b.node("MaxPool", {"r0"}, {"p0"}, "pool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  std::string t = "p0";
  if (softmax) {
    m.b.node("Softmax", {t}, {"sm"}, "softmax").i("axis", 1);
    t = "sm";
  }
  m.conv("b1", t, "a1", {16, 16, 3, 3}, 1, 1);
  m.b.node("Relu", {"a1"}, {"a1r"}, "b1_relu");
  m.conv("b2", "a1r", "a2", {16, 16, 3, 3}, 1, 1);
  m.b.node("Add", {"a2", t}, {"s"}, "add");
  m.b.node("Relu", {"s"}, {"sr"}, "add_relu");
  std::string u = "sr";
  if (depthwise) {
    m.conv("dw", "sr", "d", {16, 1, 3, 3}, 1, 1, 16);
    m.b.node("Relu", {"d"}, {"dr"}, "dw_relu");
    m.conv("pw", "dr", "pwo", {24, 16, 1, 1}, 1, 0);
    u = "pwo";
  }
  m.b.node("AveragePool", {u}, {"ap"}, "avg").ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1}).i("count_include_pad", incl);
  m.b.node("Sigmoid", {"ap"}, {"sg"}, "gate");
  m.b.node("Mul", {"sg", "ap"}, {"gm"}, "gate_mul");
  m.b.node("GlobalAveragePool", {"gm"}, {"g"}, "gap");
  m.b.node("Flatten", {"g"}, {"f"}, "flatten");
  const int64_t c = depthwise ? 24 : 16;
  m.b.initializer("fc_w", {10, c}, test::random_values(size_t(10 * c), test::seed_for("fc_w"), -0.5f, 0.5f));
  m.b.node("Gemm", {"f", "fc_w"}, {"y"}, "fc").i("transB", 1);
  m.b.output("y");
  return test::import_builder(m.b);
}

struct Case {
  const char* name;
  bool softmax, depthwise;
  int64_t incl;
  size_t reformats;  // with layout nhwc
  bool hwc8 = false;  // CudaBuildOptions::hwc8_input, with every opt-in NHWC tactic family (layout nhwc only)
  bool port = false;  // with hwc8: CudaBuildOptions::hwc8_input_port (the input taken in kHWC8, its reformat removed)
};

// Sum of the kernels of a plan's steps (profile_layers, one rep), those of Reformat steps apart.
struct StepKernels {
  size_t reformat = 0, other = 0, reformat_steps = 0;
};
StepKernels step_kernels(CudaEngine& e) {
  StepKernels k;
  auto layers = test::profile_steps(e, 1);
  EXPECT_TRUE(layers.is_ok()) << layers.status().to_string();
  if (!layers.is_ok()) return k;
  for (const auto& l : *layers) {
    (l.op_type == "Reformat" ? k.reformat : k.other) += size_t(l.kernels);
    k.reformat_steps += l.op_type == "Reformat";
  }
  return k;
}

TEST(CudaEngineLayout, NhwcSegmentsMatchCpu) {
  WS_REQUIRE_LANES_GPU();
  const Case cases[] = {{"resnet_like", false, false, 0, 1},
                        {"softmax_inside", true, false, 1, 3},
                        {"depthwise_pair", false, true, 0, 1},
                        {"resnet_like_hwc8", false, false, 0, 1, true},
                        {"resnet_like_hwc8_port", false, false, 0, 0, true, true}};
  for (const Case& k : cases)
    for (Precision p : {Precision::kFloat32, Precision::kFloat16})
      for (Layout l : {Layout::kNhwc, Layout::kNchw}) {
        if (p == Precision::kFloat16 && test::gpu_test_fp32_only()) continue;  // racecheck's form (small_tests.h)
        if (k.hwc8 && l != Layout::kNhwc) continue;
        const std::string what = std::string(k.name) + " " + precision_name(p) + " " + layout_name(l);
        SCOPED_TRACE(what);
        const uint32_t seed = test::test_seed(what);
        const ir::Graph g = net(k.softmax, k.depthwise, k.incl);
        CudaBuildOptions o;
        o.layout = l;
        // the stem's RGB input padded to 8 channels (and its weights to match); the tactic families that need c_in % 8
        o.hwc8_input = o.cutlass_convs = o.nhwc_igemm = o.cudnn_graph_convs = k.hwc8;
        o.hwc8_input_port = k.port;  // run_both writes the input through test::write_input: [N, H, W, 8] for a kHWC8 port
        const double tol = p == Precision::kFloat32 ? 1e-4 : 2e-2;
        std::string err;
        auto cmp = test::run_both(g, p, tol, tol, seed, &err, o);
        ASSERT_TRUE(err.empty()) << err;
        std::printf("[ layout   ] %-34s max|diff| %.3g  max rel %.3g  (max|ref| %.3g, %zu values)\n", what.c_str(), cmp.max_abs, cmp.max_rel,
                    cmp.max_ref, cmp.count);
        EXPECT_TRUE(test::near_dump_inputs(what, cmp, {.abs = tol, .rel = tol}));
        EXPECT_GT(cmp.max_ref, 0.0);
        // What the build chose: every Conv and pool NHWC (nhwc) or none (nchw); the planned reformats.
        o.precision = p;
        auto e = CudaEngine::build(g, o);
        ASSERT_TRUE(e.is_ok()) << e.status().to_string();
        size_t reformats = 0, nhwc_convs = 0, convs = 0, nhwc_pools = 0, hwc8 = 0, ports = 0;
        for (const TacticRecord& t : (*e)->tactics()) {
          reformats += t.op_type == "Reformat";
          hwc8 += t.op_type == "Reformat" && t.choice.find("(kHWC8)") != std::string::npos;
          ports += t.op_type == "Port" && t.choice.find("kHWC8") != std::string::npos;
          if (k.hwc8) std::printf("[ layout   ]   %s: %s\n", t.node.c_str(), t.choice.c_str());
          if (t.op_type == "Conv") { ++convs; nhwc_convs += t.choice.find("NHWC") != std::string::npos; }
          if (t.op_type.find("Pool") != std::string::npos) nhwc_pools += t.choice.find("NHWC") != std::string::npos;
        }
        if (l == Layout::kNhwc) {
          EXPECT_EQ(reformats, k.reformats);
          EXPECT_EQ(nhwc_convs, convs) << "every Conv of these graphs can run channels-last";
          EXPECT_EQ(nhwc_pools, 3u) << "MaxPool, AveragePool, GlobalAveragePool";
          EXPECT_EQ(hwc8, k.hwc8 && !k.port ? 1u : 0u) << "the input's reformat pads 3 channels to 8 only with hwc8_input";
          EXPECT_EQ(ports, k.port ? 1u : 0u) << "with hwc8_input_port the padded input is taken at the port";
        } else {
          EXPECT_EQ(reformats, 0u);
          EXPECT_EQ(nhwc_convs, 0u);
        }
        const TensorDesc& in = (*e)->input_desc(0);
        EXPECT_EQ(in.format, k.port ? TensorFormat::kHWC8 : TensorFormat::kLinear);
        EXPECT_EQ(in.name, "x");
        EXPECT_EQ(in.shape, (ir::Shape{1, 3, 32, 32})) << "the logical shape, in both formats";
        EXPECT_EQ(in.bytes, size_t(32 * 32 * (k.port ? 8 : 3)) * (p == Precision::kFloat32 ? 4 : 2));
        if (k.port) {  // one kernel less per enqueue than the same build without the port: its reformat
          CudaBuildOptions padded = o;
          padded.hwc8_input_port = false;
          auto ep = CudaEngine::build(g, padded);
          ASSERT_TRUE(ep.is_ok()) << ep.status().to_string();
          const StepKernels sp = step_kernels(**e), sr = step_kernels(**ep);
          EXPECT_EQ(sp.reformat_steps, 0u);
          EXPECT_EQ(sr.reformat_steps, 1u);
          EXPECT_EQ(sp.other, (*e)->kernel_count()) << "kernel_count() is the plan's steps";
          EXPECT_EQ(sr.other + sr.reformat, (*ep)->kernel_count());
          // the convs may choose other tactics in the two builds (timed apart; another kernel count for a split-K or
          // an epilogue): the difference is one kernel once those are accounted for
          std::printf("[ layout   ]   kernels per enqueue: %zu with the kHWC8 port, %zu without (%zu / %zu outside the reformat)\n",
                      (*e)->kernel_count(), (*ep)->kernel_count(), sp.other, sr.other);
          EXPECT_EQ((*e)->kernel_count() + 1 + sr.other - sp.other, (*ep)->kernel_count());
          if (sp.other == sr.other) EXPECT_EQ((*e)->kernel_count() + 1, (*ep)->kernel_count());
        }
      }
}

// Padded max pooling on signed input: ONNX pads MaxPool with -inf, so a border window whose real values are all
// negative keeps its maximum negative (a zero pad would give 0). x [1,8,9,9] uniform in [-1, 1) -> MaxPool 3x3 s2 p1
// (NHWC, after the input's reformat) -> Conv 1x1 (NHWC) -> Flatten (NCHW-only: reformat back) -> y, every
// spatial position of the pooled map visible in y.
// `g` built with layout nhwc against the CPU executor in fp32 and fp16 (fp32 only in racecheck's form), then its
// tactics: `reformats` Reformat steps and, for each op type in `nhwc_ops`, that many steps of it running NHWC.
void expect_nhwc_matches_cpu(const ir::Graph& g, const std::string& label, size_t reformats, const std::map<std::string, size_t>& nhwc_ops) {
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    if (p == Precision::kFloat16 && test::gpu_test_fp32_only()) continue;  // racecheck's form (small_tests.h)
    const std::string what = label + " " + precision_name(p);
    SCOPED_TRACE(what);
    CudaBuildOptions o;
    o.layout = Layout::kNhwc;
    const double tol = p == Precision::kFloat32 ? 1e-4 : 2e-2;
    std::string err;
    auto cmp = test::run_both(g, p, tol, tol, test::test_seed(what), &err, o);
    ASSERT_TRUE(err.empty()) << err;
    EXPECT_TRUE(test::near_dump_inputs(what, cmp, {.abs = tol, .rel = tol}));
    o.precision = p;
    auto e = CudaEngine::build(g, o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    size_t got_reformats = 0;
    std::map<std::string, size_t> got_nhwc;
    for (const TacticRecord& t : (*e)->tactics()) {
      got_reformats += t.op_type == "Reformat";
      if (t.op_type != "Reformat" && t.choice.find("NHWC") != std::string::npos) got_nhwc[t.op_type]++;
    }
    EXPECT_EQ(got_reformats, reformats);
    for (const auto& [op, n] : nhwc_ops) EXPECT_EQ(got_nhwc[op], n) << op << " steps running NHWC";
  }
}

TEST(CudaEngineLayout, MaxPoolPadsAreMinusInfinityOnSignedInput) {
  WS_REQUIRE_LANES_GPU();
  Net m;
  m.b.input("x", ir::DType::kFloat32, {1, 8, 9, 9});
  m.b.node("MaxPool", {"x"}, {"p"}, "pool").ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  m.conv("mix", "p", "c", {8, 8, 1, 1}, 1, 0);
  m.b.node("Flatten", {"c"}, {"y"}, "flatten");
  m.b.output("y");
  // the pool must run channels-last for this test to mean anything
  expect_nhwc_matches_cpu(test::import_builder(m.b), "maxpool_signed", 2, {{"MaxPool", 1}, {"Conv", 1}});
}

// Byte copies fold into their input's arena range (build_stages.h copy_aliases): the ResNet head's Flatten and a chain
// Reshape -> Flatten -> Squeeze between two convs, in both layouts (NHWC: the copy after a reformat back), each
// against the CPU executor. The folded nodes have no step (profile_layers does not list them; folded_copies() counts
// them); the Unsqueeze whose output is the graph output keeps its copy (an output keeps its own slot).
TEST(CudaEngineLayout, ByteCopiesFoldIntoTheirInputsRange) {
  WS_REQUIRE_LANES_GPU();
  Net m;
  m.b.input("x", ir::DType::kFloat32, {1, 8, 6, 6});
  m.conv("a", "x", "c", {8, 8, 3, 3}, 1, 1);
  m.b.initializer_i64("shape", {4}, {1, 8, 36, 1});
  m.b.node("Reshape", {"c", "shape"}, {"r"}, "reshape");
  m.b.node("Flatten", {"r"}, {"f"}, "flatten").i("axis", 2);  // [8, 36]: the same bytes again
  m.b.initializer_i64("shape2", {4}, {1, 8, 6, 6});
  m.b.node("Reshape", {"f", "shape2"}, {"r2"}, "reshape_back");
  m.conv("b", "r2", "d", {4, 8, 1, 1}, 1, 0);
  m.b.node("Add", {"d", "d"}, {"dd"}, "twice");
  m.b.node("GlobalAveragePool", {"dd"}, {"g"}, "gap");
  m.b.node("Flatten", {"g"}, {"h"}, "head_flatten");
  m.b.initializer_i64("axes", {1}, {0});
  m.b.node("Unsqueeze", {"h", "axes"}, {"y"}, "out_copy");
  m.b.output("y");
  const ir::Graph g = test::import_builder(m.b);
  for (Layout l : {Layout::kNchw, Layout::kNhwc})
    for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
      if (p == Precision::kFloat16 && test::gpu_test_fp32_only()) continue;  // racecheck's form (small_tests.h)
      const std::string what = std::string("folded_copies ") + layout_name(l) + " " + precision_name(p);
      SCOPED_TRACE(what);
      CudaBuildOptions o;
      o.layout = l;
      const double tol = p == Precision::kFloat32 ? 1e-4 : 2e-2;
      std::string err;
      auto cmp = test::run_both(g, p, tol, tol, test::test_seed(what), &err, o);
      ASSERT_TRUE(err.empty()) << err;
      EXPECT_TRUE(test::near_dump_inputs(what, cmp, {.abs = tol, .rel = tol}));
      EXPECT_GT(cmp.max_ref, 0.0);
      o.precision = p;
      auto e = CudaEngine::build(g, o);
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      const std::set<std::string> folded = {"reshape", "flatten", "reshape_back", "head_flatten"};
      EXPECT_EQ((*e)->folded_copies(), folded.size());
      auto layers = test::profile_steps(**e, 1);
      ASSERT_TRUE(layers.is_ok()) << layers.status().to_string();
      bool out_copy = false;
      for (const auto& step : *layers) {
        EXPECT_EQ(folded.count(step.node), 0u) << step.node << " was folded but still has a step";
        out_copy = out_copy || step.node == "out_copy";
      }
      EXPECT_TRUE(out_copy) << "the copy writing the graph output keeps its step";
      std::printf("[ layout   ] %-30s max|diff| %.3g (max|ref| %.3g); %zu steps, %zu kernels, %zu copies folded\n", what.c_str(),
                  cmp.max_abs, cmp.max_ref, layers->size(), (*e)->kernel_count(), folded.size());
    }
}

// A DenseNet / Inception piece as torch exports it: two convs joined by a channel Concat (a per-pixel
// concatenation in NHWC), a standalone BatchNormalization (constant statistics; after the Concat nothing folds it;
// channel = i % C), Relu, an explicit Pad before an AveragePool (pads on the permuted axes), a 1x1 conv; Flatten
// (NCHW-only) shows every position. Only x and the last conv's output are reformatted.
TEST(CudaEngineLayout, ConcatBatchNormAndPadMatchCpu) {
  WS_REQUIRE_LANES_GPU();
  Net m;
  m.b.input("x", ir::DType::kFloat32, {1, 6, 9, 8});
  m.conv("a", "x", "ya", {6, 6, 3, 3}, 1, 1);
  m.conv("b", "x", "yb", {4, 6, 1, 1}, 1, 0);
  m.b.node("Concat", {"ya", "yb", "ya"}, {"cat"}, "join").i("axis", 1);  // one input twice
  m.b.initializer("bn_s", {16}, test::random_values(16, test::seed_for("bn_s"), 0.5f, 1.5f));
  m.b.initializer("bn_b", {16}, test::random_values(16, test::seed_for("bn_b"), -0.5f, 0.5f));
  m.b.initializer("bn_m", {16}, test::random_values(16, test::seed_for("bn_m"), -0.5f, 0.5f));
  m.b.initializer("bn_v", {16}, test::random_values(16, test::seed_for("bn_v"), 0.5f, 2.0f));
  m.b.node("BatchNormalization", {"cat", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"}, "bn");
  m.b.node("Relu", {"bn"}, {"r"}, "relu");
  m.b.initializer_i64("pads", {8}, {0, 0, 1, 2, 0, 0, 1, 0});  // asymmetric on purpose: Pad is per axis
  m.b.node("Pad", {"r", "pads"}, {"p"}, "pad");
  m.b.node("AveragePool", {"p"}, {"ap"}, "avg").ints("kernel_shape", {3, 3}).ints("strides", {2, 2});
  m.conv("after", "ap", "c", {5, 16, 1, 1}, 1, 0);
  m.b.node("Flatten", {"c"}, {"y"}, "flatten");
  m.b.output("y");
  expect_nhwc_matches_cpu(test::import_builder(m.b), "bn_pad", 2, {{"Conv", 3}, {"AveragePool", 1}});
}

// The real EfficientNet-Lite0 (when the assets exist) in NHWC, depthwise convs included, against the CPU executor:
// max|gpu − cpu| <= rel · max|cpu| over the logits (rel 1e-3 fp32, 2e-2 fp16, as CudaEngineModel).
TEST(CudaEngineLayout, EfficientNetLite0NhwcMatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_REQUIRE_EFFICIENTNET_LITE0(path);
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    if (p == Precision::kFloat16 && test::gpu_test_fp32_only()) continue;  // racecheck's form (small_tests.h)
    SCOPED_TRACE(precision_name(p));
    auto g = ir::import_onnx(path);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    CudaBuildOptions o;
    o.layout = Layout::kNhwc;
    if (test::small_gpu_tests()) o.tactic_timing_iterations = 1;
    o.timing_cache_path = test::gpu_test_timing_cache(std::string("effnet-nhwc-") + precision_name(p));
    const double rel = p == Precision::kFloat32 ? 1e-3 : 2e-2;
    std::string err;
    auto cmp = test::run_both(*g, p, 1e30, 0, test::seed_for("effnet-nhwc"), &err, o);
    ASSERT_TRUE(err.empty()) << err;
    std::printf("[ layout   ] efficientnet_lite0 nhwc %s max|diff| %.3g (max|ref| %.3g)\n", precision_name(p), cmp.max_abs, cmp.max_ref);
    EXPECT_LE(cmp.max_abs, rel * cmp.max_ref);
    EXPECT_EQ(cmp.bad, 0u) << "NaN where the CPU has a number: " << cmp.first_bad;
    EXPECT_GT(cmp.max_ref, 0.0);
  }
}

}  // namespace
}  // namespace ws
