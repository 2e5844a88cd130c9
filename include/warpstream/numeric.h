#pragma once
/// \file numeric.h
/// Scalar conversions between float32 and the narrow storage types WarpStream reads from
/// checkpoints: bfloat16, IEEE float16 (binary16) and OCP FP8 E4M3 ("e4m3fn").
///
/// All functions are header-only, host-only, constexpr and independent of the floating-point
/// environment: rounding is done on the bit patterns (round-to-nearest, ties to even — "RNE"),
/// so results do not depend on fesetround().
///
/// - bfloat16: the upper 16 bits of a float32 (1 sign, 8 exponent, 7 mantissa bits).
///   float -> bf16 rounds RNE; values above the largest bf16 round to +-inf as IEEE does
///   (this matches PyTorch's `tensor.to(torch.bfloat16)`); NaN stays a quiet NaN with its sign.
/// - float16: IEEE 754 binary16; only the widening direction (half_to_float) is provided.
/// - FP8 E4M3 ("fn" = finite): OCP 8-bit Floating Point Specification (OFP8) rev 1.0, 2023:
///   1 sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities; S.1111.111 (0x7F, 0xFF)
///   are NaN; largest finite magnitude 448 (0x7E); smallest subnormal 2^-9; subnormals when the
///   exponent field is 0. float -> e4m3 rounds RNE and SATURATES (the OCP "saturation mode"):
///   finite values and infinities beyond +-448 become +-448; NaN becomes NaN (0x7F / 0xFF,
///   keeping the sign). This is what a weight quantiser wants and what cuBLASLt/torch's
///   `float8_e4m3fn` casts of in-range values give.

#include <bit>
#include <cstdint>

namespace ws {

/// bfloat16 bits -> float32 (exact).
constexpr float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

/// float32 -> bfloat16 bits, round-to-nearest-even; NaN -> quiet NaN with the same sign.
constexpr uint16_t float_to_bf16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN: force quiet
  const uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);  // RNE on the dropped 16 bits; carry may reach inf
  return static_cast<uint16_t>(rounded >> 16);
}

/// float32 rounded to the nearest bfloat16 value (RNE), as float32: what a bf16 store keeps of `value`.
constexpr float round_to_bf16(float value) { return bf16_to_float(float_to_bf16(value)); }

/// IEEE binary16 bits -> float32 (exact, subnormals and inf/NaN included).
constexpr float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1Fu;
  uint32_t mant = bits & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    // subnormal: mant * 2^-24; normalise into a float32 normal
    int e = -1;
    do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);
    return std::bit_cast<float>(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FFu) << 13));
  }
  return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

inline constexpr float kFp8E4M3Max = 448.0f;  ///< largest finite FP8 E4M3 magnitude (code 0x7E)

/// FP8 E4M3 (fn) bits -> float32 (exact). 0x7F / 0xFF -> NaN (sign kept).
constexpr float fp8_e4m3_to_float(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exp = (code >> 3) & 0xFu;
  const uint32_t mant = code & 0x7u;
  if (exp == 0xF && mant == 0x7) return std::bit_cast<float>(sign | 0x7FC00000u);
  if (exp == 0) {  // subnormal: mant * 2^-9 (exact in float: mant has <= 3 bits)
    if (mant == 0) return std::bit_cast<float>(sign);
    int top = mant >= 4 ? 2 : (mant >= 2 ? 1 : 0);  // position of the leading 1
    const uint32_t frac = (mant << (23 - top)) & 0x7FFFFFu;
    return std::bit_cast<float>(sign | (static_cast<uint32_t>(127 - 9 + top) << 23) | frac);
  }
  return std::bit_cast<float>(sign | ((exp + 127 - 7) << 23) | (mant << 20));
}

/// float32 -> FP8 E4M3 (fn) bits: RNE, saturating to +-448 (also for +-inf), NaN -> 0x7F/0xFF.
constexpr uint8_t float_to_fp8_e4m3(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Fu);   // NaN
  if (a > 0x43E00000u) return static_cast<uint8_t>(sign | 0x7Eu);   // > 448 (incl. inf): saturate
  const int e = static_cast<int>(a >> 23) - 127;                    // unbiased float exponent
  if (e >= -6) {  // normal e4m3 range: keep 3 of the 23 mantissa bits, RNE (a carry bumps the exponent)
    const uint32_t r = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;     // (biased exp << 3) | mant3
    const uint32_t code = (((r >> 3) - 127 + 7) << 3) | (r & 7u);
    return static_cast<uint8_t>(sign | (code > 0x7Eu ? 0x7Eu : code));
  }
  if ((a >> 23) == 0) return sign;  // float zero or float subnormal (< 2^-126): rounds to +-0
  // e4m3 subnormal range: value in units of 2^-9 = M * 2^(e - 23 + 9), M the 24-bit significand.
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const int shift = 14 - e;  // >= 21
  if (shift > 31) return sign;
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // q == 8 is 2^-6, the smallest normal: code 0x08
  return static_cast<uint8_t>(sign | q);
}

}  // namespace ws
