#pragma once
// Seeds of randomised tests: one base seed per test process, fresh from std::random_device unless
// $WS_SEED is set (the older spelling $WS_TEST_SEED is accepted too), mixed with a label per operand so
// every operand of a run gets its own stream and the whole run replays from the one printed number.
//
//   const uint32_t seed = ws::test::test_seed("conv 3x3 fp16");
//   // prints: seed conv 3x3 fp16 = 123456 (WS_SEED=9876543210 to reproduce)
//
// Header-only (plain C++, no CUDA): usable from tests/unit and tests/gpu alike.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>

namespace ws::test {

/// Base seed of this process: $WS_SEED (or $WS_TEST_SEED) when set, parsed with strtoull (base 10, or
/// 0x-prefixed hex); otherwise 64 fresh bits from std::random_device. Printed once, on first use.
inline uint64_t base_seed() {
  static const uint64_t seed = [] {
    uint64_t s = 0;
    const char* env = std::getenv("WS_SEED");
    if (!env || !*env) env = std::getenv("WS_TEST_SEED");
    if (env && *env) {
      s = std::strtoull(env, nullptr, 0);
    } else {
      std::random_device rd;
      s = (uint64_t(rd()) << 32) ^ rd();
    }
    std::printf("[ seed     ] WS_SEED=%llu (set it to replay this run)\n", static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

/// 64-bit seed of the operand `label`: the base seed mixed with the label (FNV-1a); stable within a run
/// and across runs with the same base seed. Does not print (see test_seed for the printing form).
inline uint64_t seed_for(std::string_view label) {
  uint64_t h = base_seed() ^ 0x9E3779B97F4A7C15ull;
  for (char c : label) h = (h ^ uint8_t(c)) * 0x100000001B3ull;
  return h;
}

/// 32-bit seed (std::mt19937's width) of the random operand `what`, printed as
/// "seed <what> = N (WS_SEED=<base> to reproduce)". Call it once per random operand or case.
inline uint32_t test_seed(const char* what) {
  uint64_t h = seed_for(what ? what : "");  // splitmix64 finaliser: labels differing in one byte spread apart
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  const uint32_t s = static_cast<uint32_t>(h ^ (h >> 32));
  std::printf("seed %s = %u (WS_SEED=%llu to reproduce)\n", what ? what : "", s,
              static_cast<unsigned long long>(base_seed()));
  std::fflush(stdout);
  return s;
}
inline uint32_t test_seed(const std::string& what) { return test_seed(what.c_str()); }

}  // namespace ws::test
