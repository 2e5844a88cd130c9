#pragma once
// Element-wise comparison that, on a mismatch, dumps the operands: the first bad index, the expected
// and actual values around it, how many elements are bad, the largest error, and every input operand
// (its size, and its values around the bad index). Set $WS_DUMP_DIR to also write each operand in full
// as raw float64 little-endian files (<dir>/<what>.<name>.f64) for offline inspection.
//
//   ASSERT_TRUE(ws::test::near_dump("conv fp16", got, want, {.abs = 1e-3, .rel = 1e-3},
//                                   {{"x", x}, {"w", w}}));
//   ws::test::expect_near_dump("gemm s32", got, want, {}, {{"a", a}, {"b", b}});  // exact: abs = rel = 0
//
// Pass rule: |actual − expected| <= abs + rel·|expected|, and actual is NaN exactly where expected is.
// Values of any arithmetic type (float, double, int8/32/64…) are compared as double; convert half /
// bfloat16 to float first. Header-only, plain C++ + GoogleTest (no CUDA): tests/unit and tests/gpu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ws::test {

/// Tolerance of near_dump: |actual − expected| <= abs + rel·|expected|. Default {0, 0} = exact.
struct Tolerance {
  double abs = 0.0;
  double rel = 0.0;
};

/// A named operand shown in a mismatch dump (an input of the computation, or any context array). Holds a
/// view of the caller's data: it must outlive the near_dump call only.
struct Operand {
  std::string name;
  size_t size = 0;
  std::function<double(size_t)> at;

  template <class T>
  Operand(std::string n, std::span<const T> v)
      : name(std::move(n)), size(v.size()), at([p = v.data()](size_t i) { return static_cast<double>(p[i]); }) {}
  template <class T>
  Operand(std::string n, const std::vector<T>& v) : Operand(std::move(n), std::span<const T>(v)) {}
};

namespace detail {

inline void append_window(std::ostringstream& os, const std::function<double(size_t)>& at, size_t size,
                          size_t center, size_t half_width = 4) {
  if (size == 0) {
    os << "(empty)";
    return;
  }
  const size_t c = std::min(center, size - 1);
  const size_t lo = c > half_width ? c - half_width : 0, hi = std::min(size, c + half_width + 1);
  if (lo > 0) os << "... ";
  for (size_t i = lo; i < hi; ++i) os << (i == c ? "[" : "") << i << ":" << at(i) << (i == c ? "] " : " ");
  if (hi < size) os << "...";
}

inline std::string file_safe(std::string_view s) {
  std::string r(s);
  for (char& ch : r)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') ch = '_';
  return r;
}

inline void write_f64(const std::string& path, const std::function<double(size_t)>& at, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  for (size_t i = 0; i < size && f; ++i) {
    const double v = at(i);
    f.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
}

}  // namespace detail

/// Compares `actual` with `expected` (same length) element by element; success, or a failure whose
/// message is the operand dump described at the top of this file.
template <class A, class E>
::testing::AssertionResult near_dump(std::string_view what, std::span<const A> actual, std::span<const E> expected,
                                     Tolerance tol, std::span<const Operand> inputs) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << what << ": actual has " << actual.size() << " elements, expected "
                                         << expected.size();
  size_t bad = 0, first = 0;
  double max_err = 0.0;
  size_t max_at = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = static_cast<double>(expected[i]), a = static_cast<double>(actual[i]);
    const double d = std::fabs(a - e);
    const bool ok = std::isnan(e) ? std::isnan(a) : (!std::isnan(a) && d <= tol.abs + tol.rel * std::fabs(e));
    if (!std::isnan(d) && d > max_err) {
      max_err = d;
      max_at = i;
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  auto act = [&](size_t i) { return static_cast<double>(actual[i]); };
  auto exp = [&](size_t i) { return static_cast<double>(expected[i]); };
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << expected.size() << " elements outside |actual - expected| <= " << tol.abs
     << " + " << tol.rel << "*|expected|\n  first bad index " << first << ": expected " << exp(first) << ", actual "
     << act(first) << "\n  largest |error| " << max_err << " at index " << max_at << "\n  expected: ";
  detail::append_window(os, exp, expected.size(), first);
  os << "\n  actual:   ";
  detail::append_window(os, act, actual.size(), first);
  for (const Operand& in : inputs) {
    os << "\n  input " << in.name << " (" << in.size << " elements): ";
    detail::append_window(os, in.at, in.size, first);
  }
  if (const char* dir = std::getenv("WS_DUMP_DIR"); dir && *dir) {
    const std::string base = std::string(dir) + "/" + detail::file_safe(what);
    detail::write_f64(base + ".expected.f64", exp, expected.size());
    detail::write_f64(base + ".actual.f64", act, actual.size());
    for (const Operand& in : inputs) detail::write_f64(base + "." + detail::file_safe(in.name) + ".f64", in.at, in.size);
    os << "\n  operands written to " << base << ".*.f64 (float64, little-endian)";
  } else {
    os << "\n  (set WS_DUMP_DIR=<dir> to write every operand in full)";
  }
  return ::testing::AssertionFailure() << os.str();
}

template <class A, class E>
::testing::AssertionResult near_dump(std::string_view what, std::span<const A> actual, std::span<const E> expected,
                                     Tolerance tol = {}, std::initializer_list<Operand> inputs = {}) {
  return near_dump(what, actual, expected, tol, std::span<const Operand>(inputs.begin(), inputs.size()));
}

template <class A, class E>
::testing::AssertionResult near_dump(std::string_view what, const std::vector<A>& actual,
                                     const std::vector<E>& expected, Tolerance tol = {},
                                     std::initializer_list<Operand> inputs = {}) {
  return near_dump(what, std::span<const A>(actual), std::span<const E>(expected), tol, inputs);
}

/// Operands built at run time (e.g. one per graph input).
template <class A, class E>
::testing::AssertionResult near_dump(std::string_view what, const std::vector<A>& actual,
                                     const std::vector<E>& expected, Tolerance tol,
                                     const std::vector<Operand>& inputs) {
  return near_dump(what, std::span<const A>(actual), std::span<const E>(expected), tol,
                   std::span<const Operand>(inputs));
}

/// near_dump reported as a non-fatal failure (ADD_FAILURE); returns true when everything matched, so a
/// caller can stop: `if (!expect_near_dump(...)) return;`.
template <class A, class E>
bool expect_near_dump(std::string_view what, const std::vector<A>& actual, const std::vector<E>& expected,
                      Tolerance tol = {}, std::initializer_list<Operand> inputs = {}) {
  ::testing::AssertionResult r = near_dump(what, actual, expected, tol, inputs);
  if (!r) ADD_FAILURE() << r.message();
  return static_cast<bool>(r);
}

}  // namespace ws::test
