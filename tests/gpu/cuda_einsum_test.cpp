// Einsum on the CUDA executor (issue 14, MaxViT): the build lowers each Einsum to Transpose / ReduceSum /
// Reshape / MatMul (ir::lower_einsum) and runs those kernels; the CPU executor evaluates the equation directly
// (reference/einsum.h). Both run on the same random inputs (seed printed, WS_SEED replays), fp32 and fp16, with
// the tolerances of cuda_engine_ops_test.cpp (fp32 1e-4 + 1e-4·|cpu|, fp16 2e-2 + 2e-2·|cpu|); outputs are
// poisoned before the enqueue and a mismatch dumps the operands. Device-free part: an Einsum that does not
// lower (a diagonal) is refused at build naming the node and the reason.
#include <cstdio>

#include "cuda_engine_test_support.h"
#include "support/compare_dump.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;

ir::Graph einsum_graph(const std::string& eq, const std::vector<ir::Shape>& shapes) {
  ModelBuilder b(17, "einsum " + eq);
  std::vector<std::string> names;
  for (size_t k = 0; k < shapes.size(); ++k) {
    names.push_back("x" + std::to_string(k));
    b.input(names.back(), DType::kFloat32, std::vector<ir::Dim>(shapes[k].begin(), shapes[k].end()));
  }
  b.node("Einsum", names, {"y"}).s("equation", eq);
  b.output("y");
  return test::import_builder(b);
}

struct Form { const char* eq; std::vector<ir::Shape> shapes; };
const std::vector<Form>& forms() {
  static const std::vector<Form> f = {
      // torchvision MaxViT-T, first stage: [B, windows, heads, tokens, head dim]
      {"bghid,bghjd->bghij", {{1, 64, 2, 49, 32}, {1, 64, 2, 49, 32}}},
      {"bghij,bghjd->bghid", {{1, 64, 2, 49, 49}, {1, 64, 2, 49, 32}}},
      {"...ij,...jk->...ik", {{2, 3, 4, 5}, {5, 6}}},  // B broadcast over the batch
      {"bij,bk->bik", {{2, 3, 4}, {2, 5}}},            // j summed in A alone
      {"ijk->kj", {{2, 3, 4}}},                        // one operand
  };
  return f;
}

void run_forms(Precision p, double abs_tol, double rel_tol) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.eq);
    const std::string what = std::string("einsum ") + f.eq + " " + precision_name(p);
    const uint32_t seed = test::test_seed(what);
    const ir::Graph g = einsum_graph(f.eq, f.shapes);
    std::string err;
    auto cmp = test::run_both(g, p, abs_tol, rel_tol, seed, &err);
    ASSERT_TRUE(err.empty()) << what << ": " << err;
    std::printf("[ einsum   ] %-22s %s max|diff| %.3g (max|ref| %.3g, %zu values)\n", f.eq, precision_name(p),
                cmp.max_abs, cmp.max_ref, cmp.count);
    EXPECT_TRUE(test::near_dump_inputs(what, cmp, {.abs = abs_tol, .rel = rel_tol}));
  }
}

TEST(CudaEinsum, LoweredMatchesCpuFp32) {
  WS_SKIP_WITHOUT_GPU();
  run_forms(Precision::kFloat32, 1e-4, 1e-4);
}

TEST(CudaEinsum, LoweredMatchesCpuFp16) {
  WS_SKIP_WITHOUT_GPU();
  run_forms(Precision::kFloat16, 2e-2, 2e-2);
}

TEST(CudaEinsum, SupportChecksAcceptTheFormsAndNameWhatDoesNotLower) {  // no device needed
  for (const Form& f : forms()) EXPECT_TRUE(CudaEngine::check_support(einsum_graph(f.eq, f.shapes), {}).is_ok()) << f.eq;
  const Status st = CudaEngine::check_support(einsum_graph("ii->i", {{4, 4}}), {});
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("Einsum"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("repeats within operand 0"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ws
