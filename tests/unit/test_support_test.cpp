// The shared test helpers (tests/support/seed.h, compare_dump.h) do what the GPU and CPU tests rely on:
// seeds are stable per label and differ between labels; a mismatch dump names the first bad index, the
// expected and actual values, and the inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "support/compare_dump.h"
#include "support/seed.h"

namespace ws::test {
namespace {

TEST(TestSupport, SeedsAreStablePerLabelAndDistinctAcrossLabels) {
  EXPECT_EQ(seed_for("conv a"), seed_for("conv a"));
  EXPECT_NE(seed_for("conv a"), seed_for("conv b"));
  EXPECT_EQ(test_seed("x"), test_seed(std::string("x")));
  EXPECT_NE(test_seed("x"), test_seed("y"));
}

TEST(TestSupport, NearDumpPassesWithinTolerance) {
  const std::vector<float> want{1.0f, -2.0f, 3.0f};
  const std::vector<float> got{1.0005f, -2.0f, 3.002f};
  EXPECT_TRUE(near_dump("ok", got, want, {.abs = 1e-3, .rel = 1e-3}));
  EXPECT_FALSE(near_dump("exact", got, want));  // default tolerance is exact
  const std::vector<int32_t> gi{1, 2, 3};
  const std::vector<int64_t> wi{1, 2, 3};
  EXPECT_TRUE(near_dump("int", gi, wi));
}

TEST(TestSupport, NearDumpNamesFirstBadIndexOperandsAndCounts) {
  const std::vector<float> x{10, 11, 12, 13, 14, 15};
  const std::vector<float> want{0, 1, 2, 3, 4, 5};
  std::vector<float> got = want;
  got[3] = 7.5f;
  got[5] = 9.0f;
  const auto r = near_dump("relu", got, want, {.abs = 1e-6}, {{"x", x}});
  ASSERT_FALSE(r);
  const std::string m = r.message();
  EXPECT_NE(m.find("relu: 2 of 6 elements"), std::string::npos) << m;
  EXPECT_NE(m.find("first bad index 3: expected 3, actual 7.5"), std::string::npos) << m;
  EXPECT_NE(m.find("largest |error| 4.5 at index 3"), std::string::npos) << m;
  EXPECT_NE(m.find("input x (6 elements)"), std::string::npos) << m;
  EXPECT_NE(m.find("[3:13]"), std::string::npos) << m;  // the input element at the bad index is marked
}

TEST(TestSupport, NearDumpTreatsNanAsMismatchUnlessExpected) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(near_dump("poisoned", std::vector<float>{nan}, std::vector<float>{1.0f}, {.abs = 1e9}));
  EXPECT_TRUE(near_dump("nan expected", std::vector<float>{nan}, std::vector<float>{nan}));
  EXPECT_FALSE(near_dump("nan missing", std::vector<float>{0.0f}, std::vector<float>{nan}, {.abs = 1e9}));
  EXPECT_FALSE(near_dump("sizes", std::vector<float>{1, 2}, std::vector<float>{1}));
}

}  // namespace
}  // namespace ws::test
