// CPU tests of the INT8 GEMM oracle, K-group packing with zero padding, the shape-suite generators and
// `warpstream gemm` argument errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "bench/gemm/gemm_s8_variants.h"
#include "reference/gemm_s8.h"

namespace ws::ref {
namespace {

TEST(GemmS8Reference, SmallHandComputed) {
  const int8_t a[] = {1, -2, 3, -128, 127, 0};  // 2x3
  const int8_t b[] = {4, 5, -6, 7, -128, 127};  // 3x2
  int64_t c[4];
  gemm_s8s8s64(a, b, c, 2, 2, 3);
  EXPECT_EQ(c[0], 1 * 4 + -2 * -6 + 3 * -128);
  EXPECT_EQ(c[1], 1 * 5 + -2 * 7 + 3 * 127);
  EXPECT_EQ(c[2], -128 * 4 + 127 * -6);
  EXPECT_EQ(c[3], -128 * 5 + 127 * 7);
  EXPECT_EQ(gemm_s8_dot(a, b, 2, 3, 1, 1), c[3]);
  auto bt = transpose_s8(b, 3, 2);
  int64_t c2[4];
  gemm_s8s8s64_bt(a, bt.data(), c2, 2, 2, 3);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c[i], c2[i]);
}

TEST(GemmS8Reference, ExtremesStayExactBeyondInt32Products) {
  std::vector<int8_t> a(4096, -128), b(4096, -128);
  int64_t c = 0;
  gemm_s8s8s64(a.data(), b.data(), &c, 1, 1, 4096);
  EXPECT_EQ(c, int64_t(4096) * 16384);
}

TEST(GemmS8Packing, GroupsOfFourWithZeroPadding) {
  for (int64_t k = 1; k <= 9; ++k) {
    std::vector<int8_t> a(size_t(3 * k));
    fill_s8(a.data(), int64_t(a.size()), FillKind::kExtremes, 11 + k);
    auto p = pack_a_k4(a.data(), 3, k);
    ASSERT_EQ(int64_t(p.size()), 3 * k_groups(k));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t g = 0; g < k_groups(k); ++g)
        for (int q = 0; q < 4; ++q) {
          const int8_t byte = int8_t(uint32_t(p[i * k_groups(k) + g]) >> (8 * q));
          const int64_t kk = 4 * g + q;
          EXPECT_EQ(byte, kk < k ? a[i * k + kk] : 0) << "k=" << k << " row " << i << " idx " << kk;
        }
    std::vector<int8_t> b(size_t(k * 5));
    fill_s8(b.data(), int64_t(b.size()), FillKind::kRandom, 21 + k);
    auto bt = pack_bt_k4(b.data(), k, 5);
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t kk = 0; kk < 4 * k_groups(k); ++kk) {
        const int8_t byte = int8_t(uint32_t(bt[j * k_groups(k) + kk / 4]) >> (8 * (kk % 4)));
        EXPECT_EQ(byte, kk < k ? b[kk * 5 + j] : 0);
      }
  }
}

TEST(GemmS8Packing, PackedDotEqualsReference) {
  const int64_t m = 7, n = 6, k = 13;
  std::vector<int8_t> a(m * k), b(k * n);
  fill_s8(a.data(), m * k, FillKind::kRandom, 1);
  fill_s8(b.data(), k * n, FillKind::kRandom, 2);
  auto ap = pack_a_k4(a.data(), m, k);
  auto bp = pack_bt_k4(b.data(), k, n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t g = 0; g < k_groups(k); ++g)
        for (int q = 0; q < 4; ++q)
          s += int64_t(int8_t(uint32_t(ap[i * k_groups(k) + g]) >> (8 * q))) *
               int8_t(uint32_t(bp[j * k_groups(k) + g]) >> (8 * q));
      EXPECT_EQ(s, gemm_s8_dot(a.data(), b.data(), n, k, i, j));
    }
}

TEST(GemmS8Fill, DeterministicAndInRange) {
  std::vector<int8_t> x(1000), y(1000);
  fill_s8(x.data(), 1000, FillKind::kSmall, 5);
  fill_s8(y.data(), 1000, FillKind::kSmall, 5);
  EXPECT_EQ(x, y);
  for (int8_t v : x) EXPECT_TRUE(v >= -8 && v <= 7);
  fill_s8(x.data(), 1000, FillKind::kExtremes, 5);
  std::set<int> seen(x.begin(), x.end());
  EXPECT_EQ(seen, (std::set<int>{-128, 127}));
  fill_s8(x.data(), 1000, FillKind::kRandom, 5);
  seen = std::set<int>(x.begin(), x.end());
  EXPECT_GT(seen.size(), 200u);
}

TEST(GemmS8Epilogue, Float64Oracle) {
  const int64_t acc[] = {100, -7};
  const float rs[] = {0.5f}, cs[] = {2.f, 0.25f}, bias[] = {1.f, -1.f};
  double out[2];
  gemm_epilogue_f64(acc, rs, cs, bias, out, 1, 2);
  EXPECT_DOUBLE_EQ(out[0], 101.0);
  EXPECT_DOUBLE_EQ(out[1], -7 * 0.125 - 1);
  gemm_epilogue_f64(acc, rs, cs, nullptr, out, 1, 2);
  EXPECT_DOUBLE_EQ(out[0], 100.0);
}

TEST(GemmS8Suites, SeedCasesPresent) {
  auto naive = naive_suite();
  auto has = [](const std::vector<GemmCase>& s, int64_t m, int64_t n, int64_t k, FillKind f) {
    for (auto& c : s)
      if (c.m == m && c.n == n && c.k == k && c.fill == f) return true;
    return false;
  };
  EXPECT_TRUE(has(naive, 17, 23, 19, FillKind::kRandom));
  EXPECT_TRUE(has(naive, 17, 23, 19, FillKind::kZeros));
  for (int k = 1; k <= 7; ++k) EXPECT_TRUE(has(naive, 17, 23, k, FillKind::kExtremes));
  for (int d : {128, 256, 512}) EXPECT_TRUE(has(naive, d, d, d, FillKind::kSmall));
  auto small = small_suite();
  for (int d : {128, 256, 512}) EXPECT_TRUE(has(small, d, d, d, FillKind::kRandom));
  for (int k : {31, 32, 33, 63, 64, 65, 127, 128, 129}) {
    bool r = false, e = false;
    for (auto& c : small) {
      r |= c.k == k && c.fill == FillKind::kRandom;
      e |= c.k == k && c.fill == FillKind::kExtremes;
    }
    EXPECT_TRUE(r && e) << k;
  }
  std::set<std::string> names;
  for (auto& c : small) EXPECT_TRUE(names.insert(c.name).second) << "duplicate " << c.name;
  auto large = large_suite();
  ASSERT_EQ(large.size(), 6u);
  EXPECT_TRUE(has(large, 8192, 16384, 4096, FillKind::kRandom));  // (M,K,N) = (8192,4096,16384)
  EXPECT_TRUE(has(large, 8192, 4096, 16384, FillKind::kRandom));  // (M,K,N) = (8192,16384,4096)
  for (auto& c : large_suite(0.1)) EXPECT_TRUE(c.m % 64 == 0 && c.n % 64 == 0 && c.k % 64 == 0 && c.m >= 64);
  auto pos = check_positions(100, 50, 64, 3);
  ASSERT_EQ(pos.size(), 64u);
  EXPECT_EQ(pos[3].row, 99);
  EXPECT_EQ(pos[3].col, 49);
  for (auto& p : pos) EXPECT_TRUE(p.row < 100 && p.col < 50);
}

TEST(GemmS8Variants, NamesUniqueAndFilterable) {
  std::set<std::string> names;
  for (auto& b : kernels::gemm_backends()) EXPECT_TRUE(names.insert(b.name).second);
  EXPECT_EQ(names.count("gemm_s8s8s32_dp4a_tiled_64x64x32_s68"), 1u);
  EXPECT_TRUE(kernels::gemm_variant_known("dp4a_tiled"));
  EXPECT_FALSE(kernels::gemm_variant_known("no_such_kernel"));
}

// The output element type of every tensor-core backend is a ws::DType that agrees with its name's s8s8<out> part.
TEST(GemmS8Variants, OutputTypeMatchesName) {
  int tensor_core = 0;
  for (auto& b : kernels::gemm_backends()) {
    SCOPED_TRACE(b.name);
    if (b.kind != kernels::GemmBackendKind::kMma && b.kind != kernels::GemmBackendKind::kCutlass) {
      EXPECT_EQ(b.out, DType::kInt32);
      continue;
    }
    ++tensor_core;
    const DType want = b.name.find("s8s8bf16") != std::string::npos  ? DType::kBFloat16
                       : b.name.find("s8s8f16") != std::string::npos ? DType::kFloat16
                                                                     : DType::kInt32;
    EXPECT_EQ(b.out, want);
    EXPECT_EQ(b.name.find("_scaled") != std::string::npos, want != DType::kInt32);
  }
  EXPECT_EQ(tensor_core, 12);
}

#ifdef WS_CLI_PATH
int cli(const std::string& args) {
  int rc = std::system((std::string(WS_CLI_PATH) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
TEST(GemmCli, ArgumentErrors) {
  EXPECT_EQ(cli("gemm"), 2);                                  // neither --check nor --bench
  EXPECT_EQ(cli("gemm --check --variant no_such_kernel"), 2);
  EXPECT_EQ(cli("gemm --bench --scale 0"), 2);
  EXPECT_EQ(cli("gemm --bench --campaigns 0"), 2);
  EXPECT_EQ(cli("gemm --check --no-such-flag"), 2);
}
#endif

}  // namespace
}  // namespace ws::ref
