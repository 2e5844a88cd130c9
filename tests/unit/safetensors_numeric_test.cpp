// Conversions of numeric.h: every FP8 E4M3 code and every bf16 code round-trips; RNE ties and
// saturation at exact values; float -> narrow agrees with a brute-force nearest-code search on
// random floats (seed printed; WS_SEED reproduces).
#include "warpstream/numeric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

namespace ws {
namespace {

uint32_t test_seed() {
  const char* s = std::getenv("WS_SEED");
  const uint32_t seed = s ? static_cast<uint32_t>(std::strtoul(s, nullptr, 10)) : std::random_device{}();
  std::printf("numeric test seed: %u (WS_SEED=%u reproduces)\n", seed, seed);
  return seed;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// ---- FP8 E4M3 ---------------------------------------------------------------------------------

// Brute force: the positive finite code nearest to |x| (ties to the even code), saturating.
uint8_t fp8_reference(float x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xFF : 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 448.0) return sign | 0x7E;
  uint8_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (uint8_t c = 0; c <= 0x7E; ++c) {
    const double d = std::fabs(static_cast<double>(fp8_e4m3_to_float(c)) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) { best = c; best_d = d; }
  }
  return sign | best;
}

TEST(NumericFp8, KnownCodes) {
  EXPECT_EQ(fp8_e4m3_to_float(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(fp8_e4m3_to_float(0x80)));
  EXPECT_EQ(fp8_e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0xB8), -1.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0xFE), -448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x08), 0.015625f);       // 2^-6, smallest normal
  EXPECT_EQ(fp8_e4m3_to_float(0x01), 0.001953125f);    // 2^-9, smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_float(0x07), 7 * 0.001953125f);
  EXPECT_EQ(fp8_e4m3_to_float(0x3C), 1.5f);
  EXPECT_EQ(fp8_e4m3_to_float(0x77), 240.0f);          // 1.875 * 2^7
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xFF)));
  EXPECT_FALSE(std::isnan(fp8_e4m3_to_float(0x7E)));
  EXPECT_FALSE(std::isinf(fp8_e4m3_to_float(0x78)));  // e4m3fn has no infinity: 0x78 is 256
  EXPECT_EQ(fp8_e4m3_to_float(0x78), 256.0f);
}

TEST(NumericFp8, All256CodesRoundTrip) {
  for (int c = 0; c < 256; ++c) {
    const float f = fp8_e4m3_to_float(static_cast<uint8_t>(c));
    EXPECT_EQ(float_to_fp8_e4m3(f), c) << "code 0x" << std::hex << c << " -> " << f;
  }
  // Positive codes decode strictly increasing (a monotone table is what a GEMM epilogue assumes).
  for (int c = 1; c <= 0x7E; ++c) EXPECT_LT(fp8_e4m3_to_float(static_cast<uint8_t>(c - 1)), fp8_e4m3_to_float(static_cast<uint8_t>(c)));
}

TEST(NumericFp8, TiesRoundToEvenBetweenEveryPairOfCodes) {
  for (int c = 0; c < 0x7E; ++c) {
    const float lo = fp8_e4m3_to_float(static_cast<uint8_t>(c));
    const float hi = fp8_e4m3_to_float(static_cast<uint8_t>(c + 1));
    const float mid = (lo + hi) / 2;  // exact: both have <= 4 significant bits
    ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + hi) / 2);
    const int even = (c & 1) == 0 ? c : c + 1;
    EXPECT_EQ(float_to_fp8_e4m3(mid), even) << "tie between 0x" << std::hex << c << " and 0x" << c + 1;
    EXPECT_EQ(float_to_fp8_e4m3(-mid), 0x80 | even);
    EXPECT_EQ(float_to_fp8_e4m3(std::nextafter(mid, 0.0f)), c);
    EXPECT_EQ(float_to_fp8_e4m3(std::nextafter(mid, 1000.0f)), c + 1);
  }
}

TEST(NumericFp8, SaturationNanAndTiny) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_fp8_e4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(std::nextafter(448.0f, inf)), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(464.0f), 0x7E);   // would be the tie towards 480 (= the NaN code)
  EXPECT_EQ(float_to_fp8_e4m3(1e30f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(inf), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(-inf), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(-1000.0f), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(float_to_fp8_e4m3(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(float_to_fp8_e4m3(std::ldexp(1.0f, -10)), 0x00);              // half of 2^-9: tie to even 0
  EXPECT_EQ(float_to_fp8_e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(float_to_fp8_e4m3(3 * std::ldexp(1.0f, -10)), 0x02);          // 1.5 * 2^-9: tie to even 2
  EXPECT_EQ(float_to_fp8_e4m3(1e-30f), 0x00);
  EXPECT_EQ(float_to_fp8_e4m3(-1e-30f), 0x80);
  EXPECT_EQ(float_to_fp8_e4m3(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(float_to_fp8_e4m3(-0.0f), 0x80);
}

TEST(NumericFp8, MatchesBruteForceOnRandomFloats) {
  const uint32_t seed = test_seed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> lin(-500.0f, 500.0f);
  std::uniform_real_distribution<float> logmag(-14.0f, 10.0f);
  for (int i = 0; i < 200000; ++i) {
    float x = (i & 1) ? lin(rng) : std::copysign(std::exp2(logmag(rng)), lin(rng));
    if (i % 7 == 0) x = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // any bit pattern
    const uint8_t got = float_to_fp8_e4m3(x);
    const uint8_t want = fp8_reference(x);
    if (got != want) {
      ADD_FAILURE() << "x = " << x << " (bits 0x" << std::hex << bits(x) << "): got 0x" << int(got) << " want 0x" << int(want)
                    << " (seed " << std::dec << seed << ")";
      break;
    }
  }
}

// ---- bfloat16 ---------------------------------------------------------------------------------

TEST(NumericBf16, AllCodesRoundTrip) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = bf16_to_float(static_cast<uint16_t>(c));
    ASSERT_EQ(bits(f), c << 16);
    const uint16_t back = float_to_bf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(back))) << std::hex << c;
      EXPECT_EQ(back & 0x8000, c & 0x8000);
    } else {
      ASSERT_EQ(back, c) << "bf16 code 0x" << std::hex << c;
    }
  }
}

TEST(NumericBf16, RoundToNearestEven) {
  auto f = [](uint32_t b) { return std::bit_cast<float>(b); };
  EXPECT_EQ(float_to_bf16(f(0x3F808000)), 0x3F80);  // tie, 0x3F80 even
  EXPECT_EQ(float_to_bf16(f(0x3F818000)), 0x3F82);  // tie, 0x3F81 odd -> up
  EXPECT_EQ(float_to_bf16(f(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(float_to_bf16(f(0x3F807FFF)), 0x3F80);  // just below
  EXPECT_EQ(float_to_bf16(f(0xBF818000)), 0xBF82);  // negative tie
  EXPECT_EQ(float_to_bf16(f(0x00008000)), 0x0000);  // subnormal tie to even 0
  EXPECT_EQ(float_to_bf16(f(0x00018000)), 0x0002);
  EXPECT_EQ(float_to_bf16(f(0x3F7FFFFF)), 0x3F80);  // carry into the exponent
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to +inf (as PyTorch)
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  // NaN stays NaN (quiet), including a signalling NaN whose payload is only in the low bits.
  const uint16_t n = float_to_bf16(f(0x7F800001));
  EXPECT_TRUE(std::isnan(bf16_to_float(n)));
  EXPECT_EQ(n & 0x0040, 0x0040);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(-std::numeric_limits<float>::quiet_NaN()))));
}

TEST(NumericBf16, MatchesNearestOnRandomFloats) {
  const uint32_t seed = test_seed();
  std::mt19937 rng(seed);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t u = static_cast<uint32_t>(rng());
    const float x = std::bit_cast<float>(u);
    if (std::isnan(x) || std::isinf(x)) continue;
    const uint16_t lo = static_cast<uint16_t>(u >> 16);  // truncation; the answer is lo or lo + 1
    const double dlo = std::fabs(static_cast<double>(bf16_to_float(lo)) - x);
    const uint16_t hi = static_cast<uint16_t>(lo + 1);
    const double xhi = (hi & 0x7F80) == 0x7F80 ? std::ldexp(1.0, 128) * std::copysign(1.0, x)  // rounding up reaches inf
                                               : static_cast<double>(bf16_to_float(hi));
    const double dhi = std::fabs(xhi - x);
    const uint16_t want = dlo < dhi ? lo : (dhi < dlo ? hi : ((lo & 1) == 0 ? lo : hi));
    const uint16_t got = float_to_bf16(x);
    if (got != want) {
      ADD_FAILURE() << "bits 0x" << std::hex << u << ": got 0x" << got << " want 0x" << want << " (seed " << std::dec << seed << ")";
      break;
    }
  }
}

// ---- float16 ----------------------------------------------------------------------------------

TEST(NumericHalf, KnownValues) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03FF), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

#if defined(__FLT16_MAX__)
TEST(NumericHalf, AllCodesMatchTheCompilersFloat16) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float want = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(c)));
    const float got = half_to_float(static_cast<uint16_t>(c));
    if (std::isnan(want)) { EXPECT_TRUE(std::isnan(got)) << std::hex << c; continue; }
    ASSERT_EQ(bits(got), bits(want)) << "half 0x" << std::hex << c;
  }
}
#endif

}  // namespace
}  // namespace ws
