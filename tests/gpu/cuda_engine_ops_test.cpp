// Every op of the CUDA executor vs the CPU executor on random inputs (uniform [-1, 1), seeded per run;
// WS_TEST_SEED replays), one single-op (or op + activation) graph each, fp32 and fp16. Tolerances:
// fp32 |gpu − cpu| <= 1e-4 + 1e-4·|cpu| (accumulation order differs from the CPU loops; FMA math, no TF32);
// fp16 <= 2e-2 + 2e-2·|cpu| (fp16 weights/activations, fp32 accumulate; |values| <= ~3 here).
// Outputs are poisoned with NaN (0xFF bytes) before each enqueue. Also: an op the CUDA executor lacks
// fails at build with kUnsupported naming the node and op.
#include <functional>

#include "cuda_engine_test_support.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

struct OpCase {
  std::string name;
  std::function<void(ModelBuilder&)> build;
};

std::vector<float> vals(size_t n, uint64_t seed, float scale = 1.0f) {
  auto v = test::random_values(n, seed);
  for (auto& x : v) x *= scale;
  return v;
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  auto conv = [](std::string name, std::vector<int64_t> x, std::vector<int64_t> w, bool bias, std::function<void(ir::NodeRef&)> attrs,
                 std::string act) {
    return OpCase{name, [=](ModelBuilder& b) {
      b.input("x", DType::kFloat32, {x[0], x[1], x[2], x[3]});
      const size_t wn = size_t(w[0] * w[1] * w[2] * w[3]);
      b.initializer("w", w, vals(wn, 11, 1.0f / std::sqrt(float(w[1] * w[2] * w[3]))));
      std::vector<std::string> in{"x", "w"};
      if (bias) { b.initializer("b", {w[0]}, vals(size_t(w[0]), 12, 0.2f)); in.push_back("b"); }
      auto n = b.node("Conv", in, {act.empty() ? "y" : "c"}, "conv");
      attrs(n);
      if (act == "Relu") b.node("Relu", {"c"}, {"y"}, "act");
      if (act == "Clip") {
        b.initializer("lo", {}, {0.0f});
        b.initializer("hi", {}, {0.3f});
        b.node("Clip", {"c", "lo", "hi"}, {"y"}, "act");
      }
      b.output("y");
    }};
  };
  c.push_back(conv("Conv3x3_pad1_bias", {1, 8, 12, 12}, {16, 8, 3, 3}, true, [](ir::NodeRef& n) { n.ints("pads", {1, 1, 1, 1}); }, ""));
  c.push_back(conv("Conv1x1_relu", {1, 16, 7, 7}, {24, 16, 1, 1}, true, [](ir::NodeRef&) {}, "Relu"));
  c.push_back(conv("ConvDepthwise_s2_asympad_clip", {1, 8, 11, 11}, {8, 1, 3, 3}, true,
                   [](ir::NodeRef& n) { n.i("group", 8).ints("strides", {2, 2}).ints("pads", {0, 0, 1, 1}); }, "Clip"));
  c.push_back(conv("Conv_nobias_dil2_s2", {1, 4, 13, 10}, {6, 4, 3, 3}, false,
                   [](ir::NodeRef& n) { n.ints("strides", {2, 2}).ints("dilations", {2, 2}).ints("pads", {2, 1, 2, 1}); }, ""));
  c.push_back(conv("Conv_group2_sameupper", {1, 8, 9, 9}, {6, 4, 3, 3}, true,
                   [](ir::NodeRef& n) { n.i("group", 2).s("auto_pad", "SAME_UPPER").ints("strides", {2, 2}); }, "Relu"));
  c.push_back(conv("Conv7x7_s2_resnet_stem", {1, 3, 32, 32}, {8, 3, 7, 7}, true,
                   [](ir::NodeRef& n) { n.ints("strides", {2, 2}).ints("pads", {3, 3, 3, 3}); }, "Relu"));

  auto unary = [](std::string op, std::function<void(ir::NodeRef&)> attrs) {
    return OpCase{op, [=](ModelBuilder& b) {
      b.input("x", DType::kFloat32, {1, 3, 7, 9});
      auto n = b.node(op, {"x"}, {"y"});
      attrs(n);
      b.output("y");
    }};
  };
  c.push_back(unary("Relu", [](ir::NodeRef&) {}));
  c.push_back(unary("Sigmoid", [](ir::NodeRef&) {}));
  c.push_back(unary("HardSigmoid", [](ir::NodeRef& n) { n.f("alpha", 0.3f).f("beta", 0.4f); }));
  c.push_back(unary("HardSwish", [](ir::NodeRef&) {}));
  c.push_back({"Clip_standalone", [](ModelBuilder& b) {
    b.input("x", DType::kFloat32, {2, 50});
    b.initializer("lo", {}, {-0.5f});
    b.node("Clip", {"x", "lo", ""}, {"y"});
    b.output("y");
  }});
  c.push_back({"Softmax_last", [](ModelBuilder& b) { b.input("x", DType::kFloat32, {2, 1000}); b.node("Softmax", {"x"}, {"y"}); b.output("y"); }});
  c.push_back({"Softmax_axis1", [](ModelBuilder& b) { b.input("x", DType::kFloat32, {1, 4, 3, 3}); b.node("Softmax", {"x"}, {"y"}).i("axis", 1); b.output("y"); }});

  auto binary = [](std::string op, std::vector<int64_t> a, std::vector<int64_t> bs, bool b_const) {
    return OpCase{op + (b_const ? "_const" : "_runtime"), [=](ModelBuilder& b) {
      std::vector<ir::Dim> ad(a.begin(), a.end()), bd(bs.begin(), bs.end());
      b.input("a", DType::kFloat32, ad);
      size_t bn = 1;
      for (auto d : bs) bn *= size_t(d);
      if (b_const) {
        auto v = vals(bn, 21);
        if (op == "Div") for (auto& x : v) x = x < 0 ? x - 0.5f : x + 0.5f;  // keep away from 0
        b.initializer("b", bs, v);
      } else {
        b.input("b", DType::kFloat32, bd);
      }
      b.node(op, {"a", "b"}, {"y"});
      b.output("y");
    }};
  };
  c.push_back(binary("Add", {1, 4, 5, 6}, {1, 4, 5, 6}, false));
  c.push_back(binary("Add", {1, 4, 5, 6}, {4, 1, 1}, true));
  c.push_back(binary("Sub", {1, 4, 5, 6}, {6}, true));
  c.push_back(binary("Mul", {1, 4, 5, 6}, {1, 4, 1, 1}, false));
  c.push_back(binary("Mul", {3, 1}, {1, 5}, false));
  c.back().name = "Mul_outer_broadcast";
  c.push_back(binary("Div", {2, 3, 4}, {3, 1}, true));

  auto pool = [](std::string name, std::string op, std::function<void(ir::NodeRef&)> attrs) {
    return OpCase{name, [=](ModelBuilder& b) {
      b.input("x", DType::kFloat32, {1, 5, 13, 11});
      auto n = b.node(op, {"x"}, {"y"});
      attrs(n);
      b.output("y");
    }};
  };
  c.push_back(pool("MaxPool_k3s2p1", "MaxPool", [](ir::NodeRef& n) { n.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}); }));
  c.push_back(pool("MaxPool_ceil", "MaxPool", [](ir::NodeRef& n) { n.ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).i("ceil_mode", 1); }));
  c.push_back(pool("AveragePool_excl", "AveragePool", [](ir::NodeRef& n) { n.ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1}); }));
  c.push_back(pool("AveragePool_incl_s2", "AveragePool", [](ir::NodeRef& n) {
    n.ints("kernel_shape", {3, 2}).ints("strides", {2, 2}).ints("pads", {1, 0, 1, 1}).i("count_include_pad", 1);
  }));
  c.push_back({"GlobalAveragePool", [](ModelBuilder& b) { b.input("x", DType::kFloat32, {1, 37, 7, 7}); b.node("GlobalAveragePool", {"x"}, {"y"}); b.output("y"); }});
  c.push_back({"Flatten", [](ModelBuilder& b) { b.input("x", DType::kFloat32, {1, 6, 2, 2}); b.node("Flatten", {"x"}, {"y"}); b.output("y"); }});
  c.push_back({"Reshape", [](ModelBuilder& b) {
    b.input("x", DType::kFloat32, {1, 6, 2, 2});
    b.initializer_i64("s", {2}, {4, -1});
    b.node("Reshape", {"x", "s"}, {"y"});
    b.output("y");
  }});
  c.push_back({"Transpose_0231", [](ModelBuilder& b) { b.input("x", DType::kFloat32, {1, 3, 4, 5}); b.node("Transpose", {"x"}, {"y"}).ints("perm", {0, 2, 3, 1}); b.output("y"); }});
  c.push_back({"Concat_axis1", [](ModelBuilder& b) {
    b.input("a", DType::kFloat32, {1, 3, 4, 5});
    b.input("b", DType::kFloat32, {1, 2, 4, 5});
    b.node("Concat", {"a", "b"}, {"y"}).i("axis", 1);
    b.output("y");
  }});
  c.push_back({"Identity_Dropout_removed", [](ModelBuilder& b) {
    b.input("x", DType::kFloat32, {2, 8});
    b.node("Identity", {"x"}, {"i"});
    b.node("Dropout", {"i"}, {"d"});
    b.node("Relu", {"d"}, {"y"});
    b.output("y");
  }});
  c.push_back({"Gemm_transB_bias", [](ModelBuilder& b) {
    b.input("a", DType::kFloat32, {1, 64});
    b.initializer("w", {10, 64}, vals(640, 31, 0.125f));
    b.initializer("c", {10}, vals(10, 32));
    b.node("Gemm", {"a", "w", "c"}, {"y"}).i("transB", 1);
    b.output("y");
  }});
  c.push_back({"Gemm_transA_alpha_beta", [](ModelBuilder& b) {
    b.input("a", DType::kFloat32, {16, 3});
    b.initializer("w", {16, 7}, vals(112, 33, 0.25f));
    b.initializer("c", {1, 7}, vals(7, 34));
    b.node("Gemm", {"a", "w", "c"}, {"y"}).i("transA", 1).f("alpha", 0.5f).f("beta", 2.0f);
    b.output("y");
  }});
  c.push_back({"Gemm_noC_runtimeB", [](ModelBuilder& b) {
    b.input("a", DType::kFloat32, {5, 12});
    b.input("w", DType::kFloat32, {12, 9});
    b.node("Gemm", {"a", "w"}, {"y"});
    b.output("y");
  }});
  c.push_back({"MatMul_3d_x_2d", [](ModelBuilder& b) {
    b.input("a", DType::kFloat32, {2, 3, 8});
    b.initializer("w", {8, 5}, vals(40, 35, 0.35f));
    b.node("MatMul", {"a", "w"}, {"y"});
    b.output("y");
  }});
  return c;
}

void run_all(Precision p, double abs_tol, double rel_tol) {
  int index = 0;
  for (const OpCase& oc : cases()) {
    SCOPED_TRACE(oc.name);
    ModelBuilder b(13, oc.name);
    oc.build(b);
    ir::Graph g = test::import_builder(b);
    std::string err;
    auto cmp = test::run_both(g, p, abs_tol, rel_tol, test::seed_for(oc.name) + uint64_t(index++), &err);
    ASSERT_TRUE(err.empty()) << err;
    std::printf("[ op       ] %-32s %s max|diff| %.3g  max rel %.3g  (max|ref| %.3g, %zu values)\n", oc.name.c_str(), precision_name(p),
                cmp.max_abs, cmp.max_rel, cmp.max_ref, cmp.count);
    EXPECT_EQ(cmp.bad, 0u) << cmp.bad << " of " << cmp.count << " outside " << abs_tol << " + " << rel_tol << "·|cpu|; first " << cmp.first_bad;
  }
}

TEST(CudaEngineOps, EveryOpMatchesCpuFp32) {
  WS_REQUIRE_LANES_GPU();
  run_all(Precision::kFloat32, 1e-4, 1e-4);  // fp32 tolerance: abs 1e-4 + rel 1e-4
}

TEST(CudaEngineOps, EveryOpMatchesCpuFp16) {
  WS_REQUIRE_LANES_GPU();
  run_all(Precision::kFloat16, 2e-2, 2e-2);  // fp16 tolerance: abs 2e-2 + rel 2e-2
}

TEST(CudaEngineOps, UnsupportedOpFailsAtBuildNamingNode) {
  WS_REQUIRE_LANES_GPU();
  ModelBuilder b(13);
  b.input("x", DType::kFloat32, {1, 2, 4, 4});
  b.initializer_i64("p", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  b.node("Pad", {"x", "p"}, {"y"}, "reflect_pad").s("mode", "reflect");
  b.output("y");
  auto e = CudaEngine::build(test::import_builder(b), {});
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("reflect_pad"), std::string::npos) << e.status().to_string();
  EXPECT_NE(e.status().message().find("Pad"), std::string::npos) << e.status().to_string();
}

}  // namespace
}  // namespace ws
