// einsum_test.cpp — Einsum (issue 14, MaxViT's attention): the equation parser's refusals, the direct CPU
// evaluation (reference/einsum.h) against loops written out here, and the CUDA executor's lowering
// (ir::lower_einsum: Transpose / ReduceSum / Reshape / MatMul) run on the CPU executor against the direct
// evaluation — two independent implementations of one equation. Random inputs print their seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "engine/ir/einsum_lowering.h"
#include "reference/einsum.h"
#include "core/limits.h"
#include "support/engine_util.h"
#include "support/seed.h"

namespace ws {
namespace {

using ir::DType;
using ir::ModelBuilder;
using V = std::vector<float>;

V random_values(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  V v(n);
  for (float& x : v) x = d(rng);
  return v;
}

size_t elements(const ir::Shape& s) {
  size_t n = 1;
  for (int64_t d : s) n *= static_cast<size_t>(d);
  return n;
}

V direct(const std::string& eq, const std::vector<ir::Shape>& shapes, const std::vector<V>& in) {
  auto spec = ref::parse_einsum(eq, shapes);
  EXPECT_TRUE(spec.is_ok()) << spec.status().to_string();
  if (!spec.is_ok()) return {};
  V out(elements(spec.value().output_shape()), NAN);
  std::vector<const float*> p;
  for (const V& v : in) p.push_back(v.data());
  ref::einsum<float>(spec.value(), p, out.data());
  return out;
}

TEST(Einsum, ParserRefusesWhatTheSpecRulesOut) {
  struct Bad { const char* eq; std::vector<ir::Shape> shapes; const char* says; };
  for (const Bad& b : std::vector<Bad>{
           {"ij,jk->ik", {{2, 3}}, "2 input terms for 1 operands"},
           {"ij->i", {{2, 3, 4}}, "2 labels for an operand of rank 3"},
           {"i$->i", {{2, 3}}, "is not a label"},
           {"i..j...->ij", {{2, 3, 4}}, "'.' outside an ellipsis"},
           {"...i...->i", {{2, 3, 4}}, "more than one ellipsis"},
           {"ij,jk->ik", {{2, 3}, {4, 5}}, "label 'j' is 3 in one place and 4"},
           {"ij->ik", {{2, 3}}, "label 'k' is in no input"},
           {"ij->ii", {{2, 2}}, "appears twice"},
           {"...ij->ij", {{5, 2, 3}}, "does not name '...'"},
           {"ij->i->j", {{2, 3}}, "more than one '->'"},
           {"...i,...i->...i", {{2, 3}, {4, 3}}, "extents must agree or be 1"},
           {"ii->i", {{1, 3}}, "a diagonal needs one extent"}}) {
    auto r = ref::parse_einsum(b.eq, b.shapes);
    ASSERT_FALSE(r.is_ok()) << b.eq << " was accepted";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel) << b.eq;
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << b.eq << ": " << r.status().message();
  }
}

TEST(Einsum, ImplicitOutputIsAlphabeticalWithEllipsisFirst) {
  auto r = ref::parse_einsum("...jb,...ia", {{7, 2, 3}, {1, 4, 5}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // Labels used once: a, b, i, j -> output [..., a, b, i, j]; the ellipsis dim broadcasts 7 against 1.
  EXPECT_EQ(r.value().output_shape(), (std::vector<int64_t>{7, 5, 3, 4, 2}));
}

TEST(Einsum, DirectMatchesLoopsWrittenOut) {
  const uint64_t seed = test::seed_for("einsum direct");
  std::mt19937 rng(static_cast<uint32_t>(seed));
  // bij,bjk->bik
  const V a = random_values(2 * 3 * 4, rng), b = random_values(2 * 4 * 5, rng);
  const V got = direct("bij, bjk -> bik", {{2, 3, 4}, {2, 4, 5}}, {a, b});
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j) s += double(a[(n * 3 + i) * 4 + j]) * b[(n * 4 + j) * 5 + k];
        ASSERT_NEAR(got[static_cast<size_t>((n * 3 + i) * 5 + k)], s, 1e-5) << n << " " << i << " " << k;
      }
  // ij->ji, ii->i (diagonal), i,i (implicit scalar), ij-> (total), i,j->ij (outer)
  const V m = random_values(3 * 3, rng), u = random_values(3, rng), w = random_values(4, rng);
  const V t = direct("ij->ji", {{3, 3}}, {m});
  const V d = direct("ii->i", {{3, 3}}, {m});
  const V dot = direct("i,i", {{3}, {3}}, {u, u});
  const V total = direct("ij->", {{3, 3}}, {m});
  const V outer = direct("i,j->ij", {{3}, {4}}, {u, w});
  double want_dot = 0, want_total = 0;
  for (int i = 0; i < 3; ++i) {
    want_dot += double(u[static_cast<size_t>(i)]) * u[static_cast<size_t>(i)];
    EXPECT_FLOAT_EQ(d[static_cast<size_t>(i)], m[static_cast<size_t>(i * 3 + i)]);
    for (int j = 0; j < 3; ++j) {
      EXPECT_FLOAT_EQ(t[static_cast<size_t>(j * 3 + i)], m[static_cast<size_t>(i * 3 + j)]);
      want_total += m[static_cast<size_t>(i * 3 + j)];
    }
    for (int j = 0; j < 4; ++j)
      EXPECT_FLOAT_EQ(outer[static_cast<size_t>(i * 4 + j)], u[static_cast<size_t>(i)] * w[static_cast<size_t>(j)]);
  }
  ASSERT_EQ(dot.size(), 1u);
  EXPECT_NEAR(dot[0], want_dot, 1e-6);
  EXPECT_NEAR(total[0], want_total, 1e-5);
}

// Named labels broadcast from 1 across operands, as numpy.einsum and ONNX Runtime do (the hostile-input check of
// 2026-12-02 found ONNX Runtime accepting what we refused as an invalid model): a contracted label and a batch label.
TEST(Einsum, NamedLabelsBroadcastFromOne) {
  std::mt19937 rng(static_cast<uint32_t>(test::seed_for("einsum named broadcast")));
  {
    const V a = random_values(2, rng), b = random_values(12, rng);  // a [2, 1], b [3, 4]
    const V y = direct("ij,jk->ik", {{2, 1}, {3, 4}}, {a, b});
    ASSERT_EQ(y.size(), 8u);
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) {
        double want = 0;
        for (int j = 0; j < 3; ++j) want += double(a[size_t(i)]) * b[size_t(j * 4 + k)];
        EXPECT_NEAR(y[size_t(i * 4 + k)], want, 1e-5) << i << "," << k;
      }
  }
  {
    const V a = random_values(6, rng), b = random_values(60, rng);  // a [1, 2, 3], b [5, 3, 4]
    const V y = direct("bij,bjk->bik", {{1, 2, 3}, {5, 3, 4}}, {a, b});
    ASSERT_EQ(y.size(), 40u);
    for (int n = 0; n < 5; ++n)
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 4; ++k) {
          double want = 0;
          for (int j = 0; j < 3; ++j) want += double(a[size_t(i * 3 + j)]) * b[size_t(n * 12 + j * 4 + k)];
          EXPECT_NEAR(y[size_t(n * 8 + i * 4 + k)], want, 1e-5) << n << "," << i << "," << k;
        }
  }
}

// One Einsum node through the CPU executor, as imported (direct) and after lower_einsum.
struct Lowered { V direct, lowered; std::map<std::string, int> ops; std::string refusal; };

Lowered run_both(const std::string& eq, const std::vector<ir::Shape>& shapes, int opset, bool const_first,
                 std::mt19937& rng) {
  ModelBuilder m(opset);
  std::vector<std::string> names;
  std::vector<V> values;
  for (size_t k = 0; k < shapes.size(); ++k) {
    names.push_back("x" + std::to_string(k));
    values.push_back(random_values(elements(shapes[k]), rng));
    if (k == 0 && const_first) m.constant(names[k], shapes[k], values[k]);
    else m.input(names[k], DType::kFloat32, std::vector<ir::Dim>(shapes[k].begin(), shapes[k].end()));
  }
  m.node("Einsum", names, {"y"}).s("equation", eq);
  m.output("y");
  std::vector<V> runtime;
  for (size_t k = const_first ? 1 : 0; k < values.size(); ++k) runtime.push_back(values[k]);
  Lowered r;
  auto e = test::build_engine(m);
  EXPECT_TRUE(e.is_ok()) << eq << ": " << e.status().to_string();
  if (!e.is_ok()) return r;
  r.direct = test::run_engine(**e, runtime);
  auto g = test::import_builder(m);
  EXPECT_TRUE(g.is_ok());
  EXPECT_TRUE(ir::optimize(*g).is_ok());
  for (const ir::Node& n : g->nodes)
    if (n.op_type == "Einsum") r.refusal = ir::einsum_lowering_refusal(*g, n);
  auto count = ir::lower_einsum(*g);
  EXPECT_TRUE(count.is_ok()) << count.status().to_string();
  EXPECT_TRUE(ir::infer_shapes(*g).is_ok());
  r.ops = g->op_histogram();
  auto le = CpuEngine::build(std::move(*g));
  EXPECT_TRUE(le.is_ok()) << eq << " lowered: " << le.status().to_string();
  if (le.is_ok()) r.lowered = test::run_engine(**le, runtime);
  return r;
}

TEST(EinsumLowering, MatchesTheDirectEvaluation) {
  const uint64_t seed = test::seed_for("einsum lowering");
  std::mt19937 rng(static_cast<uint32_t>(seed));
  struct Case { const char* eq; std::vector<ir::Shape> shapes; int opset; bool const_first; bool matmul; };
  for (const Case& c : std::vector<Case>{
           // MaxViT's window attention (torchvision: q·kᵀ and attn·v per batch, window, head)
           {"bghid,bghjd->bghij", {{1, 4, 2, 7, 8}, {1, 4, 2, 7, 8}}, 17, false, true},
           {"bghij,bghjd->bghid", {{1, 4, 2, 7, 7}, {1, 4, 2, 7, 8}}, 17, false, true},
           {"bij,bjk->bik", {{3, 2, 5}, {3, 5, 4}}, 12, false, true},
           {"ij,jk", {{3, 4}, {4, 2}}, 13, false, true},                        // implicit -> ik
           {"ik,jk->ij", {{3, 4}, {5, 4}}, 13, true, true},                     // constant A: swapped
           {"...ij,...jk->...ik", {{2, 3, 4, 5}, {5, 6}}, 17, false, true},     // B broadcast over the batch
           {"...ij,...jk->...ik", {{3, 5}, {2, 3, 5, 6}}, 17, false, true},     // A broadcast
           {"i,j->ij", {{3}, {4}}, 13, false, true},                            // outer product (K = 1)
           {"bij,bk->bik", {{2, 3, 4}, {2, 5}}, 12, false, true},               // j summed in A alone (opset 12)
           {"bij,bk->bik", {{2, 3, 4}, {2, 5}}, 13, false, true},               // the same, axes as an input
           {"ijk->kj", {{2, 3, 4}}, 13, false, false},                          // one operand: sum + transpose
           {"ij->", {{3, 4}}, 13, false, false},
           {"ij->ij", {{3, 4}}, 13, false, false},                              // nothing to do: Identity
           {"ij,jk->ik", {{2, 1}, {3, 4}}, 13, false, true},                    // contracted j: 1 against 3
           {"ij,jk->ik", {{2, 3}, {1, 4}}, 13, false, true},                    // ... and 3 against 1
           {"bij,bjk->bik", {{1, 2, 3}, {5, 3, 4}}, 13, false, true}}) {        // batch b: 1 against 5
    SCOPED_TRACE(c.eq);
    const Lowered r = run_both(c.eq, c.shapes, c.opset, c.const_first, rng);
    EXPECT_TRUE(r.refusal.empty()) << r.refusal;
    EXPECT_EQ(r.ops.count("Einsum"), 0u) << "not lowered";
    EXPECT_EQ(r.ops.count("MatMul") > 0, c.matmul);
    ASSERT_EQ(r.direct.size(), r.lowered.size());
    ASSERT_FALSE(r.direct.empty());
    for (size_t i = 0; i < r.direct.size(); ++i)
      ASSERT_NEAR(r.lowered[i], r.direct[i], 1e-5 + 1e-5 * std::fabs(r.direct[i]))
          << "element " << i << " (seed " << seed << ")";
  }
}

TEST(EinsumLowering, LeavesWhatItCannotLowerWithTheReason) {
  const uint64_t seed = test::seed_for("einsum lowering refusals");
  std::mt19937 rng(static_cast<uint32_t>(seed));
  struct Case { const char* eq; std::vector<ir::Shape> shapes; const char* says; };
  for (const Case& c : std::vector<Case>{{"ii->i", {{3, 3}}, "repeats within operand 0"},
                                         {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, "3 operands"},
                                         {"...ij,...jk->...ik", {{2, 1, 3, 4}, {1, 5, 4, 2}}, "broadcast only partly"}}) {
    SCOPED_TRACE(c.eq);
    const Lowered r = run_both(c.eq, c.shapes, 13, false, rng);
    EXPECT_NE(r.refusal.find(c.says), std::string::npos) << r.refusal;
    EXPECT_EQ(r.ops.count("Einsum"), 1u) << "a node that cannot lower must stay";
    ASSERT_EQ(r.direct, r.lowered);  // the CPU executor ran the same Einsum both times
  }
}

}  // namespace
}  // namespace ws

namespace ws {
namespace {

// Found by the hostile-input check of 2026-12-02: a 1-vs-0 ellipsis broadcast is valid (numpy: shape [0, 2, 4]);
// the lowering took max(1, 0) = 1 as the batch extent and built a Reshape of 0 elements to 12.
TEST(EinsumLowering, BroadcastOfOneAgainstZeroLowers) {
  for (const std::vector<ir::Shape>& shapes : {std::vector<ir::Shape>{{1, 2, 3}, {0, 3, 4}},
                                                std::vector<ir::Shape>{{0, 2, 3}, {1, 3, 4}}}) {
    ModelBuilder m(13);
    m.input("a", DType::kFloat32, std::vector<ir::Dim>(shapes[0].begin(), shapes[0].end()));
    m.input("b", DType::kFloat32, std::vector<ir::Dim>(shapes[1].begin(), shapes[1].end()));
    m.node("Einsum", {"a", "b"}, {"y"}).s("equation", "...ij,...jk");
    m.output("y");
    auto g = test::import_builder(m);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    ASSERT_TRUE(ir::optimize(*g).is_ok());
    auto n = ir::lower_einsum(*g);
    ASSERT_TRUE(n.is_ok()) << n.status().to_string();
    EXPECT_EQ(n.value(), 1);
    const Status st = ir::infer_shapes(*g);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(g->tensor(g->outputs[0]).shape, (ir::Shape{0, 2, 4}));
  }
}

// Einsum's operands share one type and its equation is required: both are invalid models (not "unsupported").
TEST(Einsum, MixedTypesAndAMissingEquationAreInvalidModels) {
  ModelBuilder mixed(13);
  mixed.input("a", DType::kFloat32, {2, 3});
  mixed.input("b", DType::kFloat64, {3, 4});
  mixed.node("Einsum", {"a", "b"}, {"y"}).s("equation", "ij,jk->ik");
  mixed.output("y");
  auto e1 = test::build_engine(mixed);
  ASSERT_FALSE(e1.is_ok());
  EXPECT_EQ(e1.status().code(), StatusCode::kInvalidModel) << e1.status().to_string();
  EXPECT_NE(e1.status().message().find("operand 1 is float64 but operand 0 is float32"), std::string::npos)
      << e1.status().to_string();
  ModelBuilder none(13);
  none.input("a", DType::kFloat32, {2, 3});
  none.node("Einsum", {"a"}, {"y"});
  none.output("y");
  auto e2 = test::build_engine(none);
  ASSERT_FALSE(e2.is_ok());
  EXPECT_EQ(e2.status().code(), StatusCode::kInvalidModel) << e2.status().to_string();
  EXPECT_NE(e2.status().message().find("'equation' is required"), std::string::npos) << e2.status().to_string();
}

// The per-node work bound counts the direct evaluation: 2 per term and operand, never less than the output size.
// 'ab,cd->' over two [64, 64] operands is 2^24 terms (x 2 x 2 = 2^26 counted) from a model of a few bytes.
TEST(Einsum, WorkBoundCountsTheDirectEvaluation) {
  const BuildLimits saved = build_limits();
  BuildLimits l = saved;
  l.max_node_macs = int64_t{1} << 25;
  set_build_limits(l);
  auto build = [](const std::string& eq, ir::Shape a, ir::Shape b) {
    ModelBuilder m(13);
    m.input("a", DType::kFloat32, std::vector<ir::Dim>(a.begin(), a.end()));
    m.input("b", DType::kFloat32, std::vector<ir::Dim>(b.begin(), b.end()));
    m.node("Einsum", {"a", "b"}, {"y"}, "es").s("equation", eq);
    m.output("y");
    auto e = test::build_engine(m);
    return e.is_ok() ? Status::ok() : e.status();
  };
  const Status big = build("ab,cd->", {64, 64}, {64, 64});
  const Status small = build("ab,cd->", {32, 64}, {64, 64});  // 2^23 terms, 2^25 counted: at the bound
  // A size-0 label makes the work 0, but the output [4096, 4096] (2^24 elements, over a 2^22 bound) is still written.
  l.max_node_macs = int64_t{1} << 22;
  set_build_limits(l);
  const Status zero = build("ab,cd->bd", {0, 4096}, {0, 4096});
  set_build_limits(saved);
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.code(), StatusCode::kResourceExhausted) << big.to_string();
  EXPECT_NE(big.message().find("multiply-accumulates"), std::string::npos) << big.to_string();
  EXPECT_TRUE(small.is_ok()) << small.to_string();
  ASSERT_FALSE(zero.is_ok());
  EXPECT_EQ(zero.code(), StatusCode::kResourceExhausted) << zero.to_string();
}

}  // namespace
}  // namespace ws
