#pragma once
/// \file checked_math.h
/// Overflow-checked integer arithmetic for every size a model or file controls (shapes, pads,
/// strides, element and byte counts). The one place shape arithmetic is checked: callers get
/// std::nullopt instead of undefined behaviour and turn it into a Status naming what overflowed.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ws {

/// a + b, or nullopt when it does not fit in int64_t.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// a - b, or nullopt on overflow.
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// a * b, or nullopt on overflow.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// size_t versions (byte counts).
inline std::optional<size_t> checked_add_size(size_t a, size_t b) {
  size_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<size_t> checked_mul_size(size_t a, size_t b) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// Product of `dims` treating 0 as 1 (the "extent" of a shape: a bound on every partial product
/// of its dims, so code that multiplies any subset of them cannot overflow once this is bounded).
/// nullopt for a negative dim or on overflow.
inline std::optional<int64_t> checked_extent(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    auto m = checked_mul(n, d == 0 ? 1 : d);
    if (!m) return std::nullopt;
    n = *m;
  }
  return n;
}

}  // namespace ws
