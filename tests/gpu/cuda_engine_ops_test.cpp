// Every op of the CUDA executor vs the CPU executor, generated from the CUDA op table: for every entry of
// cudaexec::cuda_op_table(), every form it lists (CudaOpDef::samples: attribute combinations, constant vs
// runtime operands, opset variants, fused epilogues) is built as a small graph and run on both executors on
// random inputs (uniform [-1, 1); seed printed per form, WS_SEED replays), fp32 and fp16. A new entry without
// forms fails EveryTableEntryListsForms. Tolerances:
// fp32 |gpu − cpu| <= 1e-4 + 1e-4·|cpu| (accumulation order differs from the CPU loops; FMA math, no TF32);
// fp16 <= 2e-2 + 2e-2·|cpu| (fp16 weights/activations, fp32 accumulate; |values| <= ~3 here).
// Outputs are poisoned with NaN (0xFF bytes) before each enqueue; a mismatch dumps the first bad index, both
// outputs around it and every graph input (support/compare_dump.h). Also: an op the CUDA executor lacks fails
// at build with kUnsupported naming the node and op.
#include <cmath>
#include <functional>
#include <set>

#include "cuda_engine_test_support.h"
#include "engine/cuda/cuda_ops.h"
#include "support/compare_dump.h"

namespace ws {
namespace {

using cudaexec::OpSample;
using cudaexec::OpSampleAttr;
using cudaexec::OpSampleTensor;
using ir::DType;
using ir::ModelBuilder;

// Random constant values: uniform [-scale, scale), or |v| in [0.5, 1.5)·scale with a random sign (nonzero).
std::vector<float> constant_values(const OpSampleTensor& t, uint64_t seed) {
  if (!t.values.empty()) return t.values;
  size_t n = 1;
  for (int64_t d : t.shape) n *= size_t(d);
  auto v = test::random_values(n, seed);
  for (auto& x : v) x = t.nonzero ? (x < 0 ? x - 0.5f : x + 0.5f) * t.scale : x * t.scale;
  return v;
}

ir::Graph sample_graph(const OpSample& s, uint64_t seed) {
  ModelBuilder b(s.opset, s.label);
  uint64_t k = 0;
  for (const OpSampleTensor& t : s.tensors) {
    switch (t.kind) {
      case OpSampleTensor::Kind::kRuntime:
        b.input(t.name, DType::kFloat32, std::vector<ir::Dim>(t.shape.begin(), t.shape.end()));
        break;
      case OpSampleTensor::Kind::kConstant:
        b.initializer(t.name, t.shape, constant_values(t, seed + 1000 + k++));
        break;
      case OpSampleTensor::Kind::kConstantInt64:
        b.initializer_i64(t.name, t.shape, t.ints);
        break;
      case OpSampleTensor::Kind::kConstantBool: {
        std::string bytes;
        for (int64_t v : t.ints) bytes.push_back(v != 0 ? 1 : 0);
        b.raw_initializer(t.name, DType::kBool, t.shape).set_raw_data(bytes);
        break;
      }
    }
  }
  for (const auto& n : s.nodes) {
    auto r = b.node(n.op_type, n.inputs, n.outputs);
    for (const OpSampleAttr& a : n.attrs) {
      switch (a.kind) {
        case OpSampleAttr::Kind::kInt: r.i(a.name, a.i); break;
        case OpSampleAttr::Kind::kFloat: r.f(a.name, a.f); break;
        case OpSampleAttr::Kind::kInts: r.ints(a.name, a.ints); break;
        case OpSampleAttr::Kind::kString: r.s(a.name, a.s); break;
      }
    }
  }
  b.output("y");
  return test::import_builder(b);
}

TEST(CudaEngineOps, EveryTableEntryListsForms) {  // no device needed
  std::set<std::string> labels;
  for (const cudaexec::CudaOpDef& def : cudaexec::cuda_op_table()) {
    ASSERT_NE(def.samples, nullptr) << def.op_type << ": no samples function";
    const auto samples = def.samples(def.op_type);
    EXPECT_FALSE(samples.empty()) << def.op_type << ": lists no consistency-test form";
    for (const OpSample& s : samples) {
      EXPECT_TRUE(labels.insert(s.label).second) << "duplicate form label " << s.label;
      bool uses_op = false;
      for (const auto& n : s.nodes) uses_op |= n.op_type == def.op_type;
      EXPECT_TRUE(uses_op) << s.label << " does not contain a " << def.op_type << " node";
    }
  }
}

// Device-free (runs in CI without a GPU): every form is a valid model the CPU executor builds and runs, and the
// CUDA executor's support checks accept it in fp32 and fp16 — so a form is never silently refused on the GPU.
TEST(CudaEngineOps, EveryFormBuildsOnTheCpuAndPassesCudaSupportChecks) {
  size_t forms = 0;
  for (const cudaexec::CudaOpDef& def : cudaexec::cuda_op_table()) {
    if (!def.samples) continue;
    for (const OpSample& s : def.samples(def.op_type)) {
      SCOPED_TRACE(s.label);
      ir::Graph g = sample_graph(s, test::seed_for(s.label));
      auto cpu = CpuEngine::build(g);
      ASSERT_TRUE(cpu.is_ok()) << s.label << ": " << cpu.status().to_string();
      EXPECT_TRUE((*cpu)->run().is_ok()) << s.label;
      for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
        CudaBuildOptions o;
        o.precision = p;
        const Status st = CudaEngine::check_support(g, o);
        EXPECT_TRUE(st.is_ok()) << s.label << " (" << precision_name(p) << "): " << st.to_string();
      }
      ++forms;
    }
  }
  std::printf("[ forms    ] %zu forms build on the CPU and pass the CUDA support checks\n", forms);
  EXPECT_GT(forms, 100u);
}

void run_all(Precision p, double abs_tol, double rel_tol) {
  size_t forms = 0;
  for (const cudaexec::CudaOpDef& def : cudaexec::cuda_op_table()) {
    if (!def.samples) continue;  // reported by EveryTableEntryListsForms
    for (const OpSample& s : def.samples(def.op_type)) {
      SCOPED_TRACE(s.label);
      const std::string what = s.label + " " + precision_name(p);
      const uint32_t seed = test::test_seed(what);
      const ir::Graph g = sample_graph(s, seed);
      std::string err;
      auto cmp = test::run_both(g, p, abs_tol, rel_tol, seed, &err);
      ASSERT_TRUE(err.empty()) << what << ": " << err;
      ++forms;
      std::printf("[ op       ] %-36s %s max|diff| %.3g  max rel %.3g  (max|ref| %.3g, %zu values)\n", s.label.c_str(),
                  precision_name(p), cmp.max_abs, cmp.max_rel, cmp.max_ref, cmp.count);
      EXPECT_TRUE(test::near_dump_inputs(what, cmp, {.abs = abs_tol, .rel = rel_tol}));
    }
  }
  EXPECT_GT(forms, 0u);
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
  b.initializer_i64("axis", {}, {3});
  b.node("CumSum", {"x", "axis"}, {"y"}, "running_sum");  // in the CPU op table, not in the CUDA one
  b.output("y");
  auto e = CudaEngine::build(test::import_builder(b), {});
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("running_sum"), std::string::npos) << e.status().to_string();
  EXPECT_NE(e.status().message().find("CumSum"), std::string::npos) << e.status().to_string();
}

}  // namespace
}  // namespace ws
