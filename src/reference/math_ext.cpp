// math_ext.cpp — elementwise math beyond reference/elementwise.cpp: Erf-13, Tanh-13, Exp-13, Log-13,
// Sqrt-13, Neg-13, Abs-13, Reciprocal-13, LeakyRelu-16, Elu-6, Selu-6, Softplus-1, Softsign-1,
// Gelu-20, Floor-13, Ceil-13; binary Pow-15, PRelu-16, Max/Min-13, integer Add…Mod for shape
// arithmetic; Equal/Less/Greater/LessOrEqual/GreaterOrEqual, And/Or/Xor, Not. numpy broadcasting
// (https://github.com/onnx/onnx/blob/main/docs/Broadcasting.md).
#include <cmath>
#include <cstring>
#include <limits>

#include "reference/ops_ext.h"

namespace ws::ref {
namespace {

// y[i] = f(a[off_a], b[off_b]) over y_dims with broadcast strides.
template <typename A, typename B, typename Y, typename F>
void broadcast2(const A* a, std::span<const int64_t> a_dims, const B* b, std::span<const int64_t> b_dims, Y* y,
                std::span<const int64_t> y_dims, F f) {
  const RankArray sa = broadcast_strides(a_dims, y_dims), sb = broadcast_strides(b_dims, y_dims);
  const size_t r = y_dims.size();
  const int64_t total = element_count(y_dims);
  RankArray idx{};
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < total; ++i) {
    y[i] = f(a[oa], b[ob]);
    for (size_t k = r; k-- > 0;) {
      ++idx[k];
      oa += sa[k];
      ob += sb[k];
      if (idx[k] < y_dims[k]) break;
      oa -= sa[k] * idx[k];
      ob -= sb[k] * idx[k];
      idx[k] = 0;
    }
  }
}

float nan_max(float u, float v) { return std::isnan(u) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : (u < v ? v : u); }
float nan_min(float u, float v) { return std::isnan(u) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : (v < u ? v : u); }

}  // namespace

void math(MathOp op, const float* x, float* y, int64_t count, const MathParams& p) {
  auto map = [&](auto f) { for (int64_t i = 0; i < count; ++i) y[i] = f(x[i]); };
  const float alpha = p.alpha, gamma = p.gamma;
  switch (op) {
    case MathOp::kErf: map([](float v) { return std::erf(v); }); break;
    case MathOp::kTanh: map([](float v) { return std::tanh(v); }); break;
    case MathOp::kExp: map([](float v) { return std::exp(v); }); break;
    case MathOp::kLog: map([](float v) { return std::log(v); }); break;
    case MathOp::kSqrt: map([](float v) { return std::sqrt(v); }); break;
    case MathOp::kNeg: map([](float v) { return -v; }); break;
    case MathOp::kAbs: map([](float v) { return std::fabs(v); }); break;
    case MathOp::kReciprocal: map([](float v) { return 1.0f / v; }); break;
    case MathOp::kFloor: map([](float v) { return std::floor(v); }); break;
    case MathOp::kCeil: map([](float v) { return std::ceil(v); }); break;
    case MathOp::kLeakyRelu: map([=](float v) { return v < 0.0f ? alpha * v : v; }); break;
    case MathOp::kElu: map([=](float v) { return v < 0.0f ? alpha * std::expm1(v) : v; }); break;
    case MathOp::kSelu: map([=](float v) { return v <= 0.0f ? gamma * alpha * std::expm1(v) : gamma * v; }); break;
    case MathOp::kSoftplus:
      // ln(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large |x|.
      map([](float v) { return std::isnan(v) ? v : std::fmax(v, 0.0f) + std::log1p(std::exp(-std::fabs(v))); });
      break;
    case MathOp::kSoftsign: map([](float v) { return v / (1.0f + std::fabs(v)); }); break;
    case MathOp::kGelu:
      map([](float v) { return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))); });
      break;
    case MathOp::kGeluTanh:
      map([](float v) {
        const double d = v;
        return static_cast<float>(0.5 * d * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d))));
      });
      break;
    case MathOp::kCelu:
      map([=](float v) { return std::fmax(0.0f, v) + std::fmin(0.0f, alpha * std::expm1(v / alpha)); });
      break;
    case MathOp::kSin: map([](float v) { return std::sin(v); }); break;
    case MathOp::kCos: map([](float v) { return std::cos(v); }); break;
    case MathOp::kTan: map([](float v) { return std::tan(v); }); break;
    case MathOp::kAsin: map([](float v) { return std::asin(v); }); break;
    case MathOp::kAcos: map([](float v) { return std::acos(v); }); break;
    case MathOp::kAtan: map([](float v) { return std::atan(v); }); break;
    case MathOp::kSinh: map([](float v) { return std::sinh(v); }); break;
    case MathOp::kCosh: map([](float v) { return std::cosh(v); }); break;
    case MathOp::kAsinh: map([](float v) { return std::asinh(v); }); break;
    case MathOp::kAcosh: map([](float v) { return std::acosh(v); }); break;
    case MathOp::kAtanh: map([](float v) { return std::atanh(v); }); break;
    case MathOp::kSign: map([](float v) { return std::isnan(v) ? v : static_cast<float>((v > 0.0f) - (v < 0.0f)); }); break;
    case MathOp::kRound: map([](float v) { return std::nearbyint(v); }); break;  // default FE_TONEAREST: half to even
    case MathOp::kThresholdedRelu: map([=](float v) { return v > alpha ? v : 0.0f; }); break;
    case MathOp::kShrink: {
      const float bias = p.bias, lambd = p.lambd;
      map([=](float v) { return v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0f); });
      break;
    }
  }
}

void binary_f32(Binary2Op op, const float* a, std::span<const int64_t> a_dims, const float* b,
                std::span<const int64_t> b_dims, float* y, std::span<const int64_t> y_dims) {
  switch (op) {
    case Binary2Op::kPow: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](float u, float v) { return std::pow(u, v); }); break;
    case Binary2Op::kPRelu: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](float u, float s) { return u < 0.0f ? s * u : u; }); break;
    case Binary2Op::kMax: broadcast2(a, a_dims, b, b_dims, y, y_dims, nan_max); break;
    case Binary2Op::kMin: broadcast2(a, a_dims, b, b_dims, y, y_dims, nan_min); break;
    case Binary2Op::kAdd: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](float u, float v) { return u + v; }); break;
    case Binary2Op::kSub: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](float u, float v) { return u - v; }); break;
    case Binary2Op::kMul: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](float u, float v) { return u * v; }); break;
    case Binary2Op::kDiv: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](float u, float v) { return u / v; }); break;
    case Binary2Op::kMod: case Binary2Op::kFmod:
      broadcast2(a, a_dims, b, b_dims, y, y_dims, [](float u, float v) { return std::fmod(u, v); });
      break;
  }
}

void binary_i64(Binary2Op op, const int64_t* a, std::span<const int64_t> a_dims, const int64_t* b,
                std::span<const int64_t> b_dims, int64_t* y, std::span<const int64_t> y_dims) {
  // Wrapping arithmetic through uint64 (no signed-overflow UB on hostile values).
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  switch (op) {
    case Binary2Op::kAdd: broadcast2(a, a_dims, b, b_dims, y, y_dims, [&](int64_t u, int64_t v) { return wrap(static_cast<uint64_t>(u) + static_cast<uint64_t>(v)); }); break;
    case Binary2Op::kSub: broadcast2(a, a_dims, b, b_dims, y, y_dims, [&](int64_t u, int64_t v) { return wrap(static_cast<uint64_t>(u) - static_cast<uint64_t>(v)); }); break;
    case Binary2Op::kMul: broadcast2(a, a_dims, b, b_dims, y, y_dims, [&](int64_t u, int64_t v) { return wrap(static_cast<uint64_t>(u) * static_cast<uint64_t>(v)); }); break;
    case Binary2Op::kDiv:
      broadcast2(a, a_dims, b, b_dims, y, y_dims, [](int64_t u, int64_t v) -> int64_t {
        if (v == 0 || (v == -1 && u == std::numeric_limits<int64_t>::min())) return 0;
        return u / v;
      });
      break;
    case Binary2Op::kMod:
      broadcast2(a, a_dims, b, b_dims, y, y_dims, [](int64_t u, int64_t v) -> int64_t {
        if (v == 0 || v == -1) return 0;
        int64_t m = u % v;
        if (m != 0 && ((m < 0) != (v < 0))) m += v;
        return m;
      });
      break;
    case Binary2Op::kFmod:
      broadcast2(a, a_dims, b, b_dims, y, y_dims, [](int64_t u, int64_t v) -> int64_t { return (v == 0 || v == -1) ? 0 : u % v; });
      break;
    case Binary2Op::kMax: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](int64_t u, int64_t v) { return u < v ? v : u; }); break;
    case Binary2Op::kMin: broadcast2(a, a_dims, b, b_dims, y, y_dims, [](int64_t u, int64_t v) { return v < u ? v : u; }); break;
    case Binary2Op::kPow: case Binary2Op::kPRelu: break;  // not defined on int64 here (the op table refuses)
  }
}

namespace {
template <typename T>
void compare_typed(CompareOp op, const T* a, std::span<const int64_t> ad, const T* b, std::span<const int64_t> bd,
                   uint8_t* y, std::span<const int64_t> yd) {
  switch (op) {
    case CompareOp::kEqual: broadcast2(a, ad, b, bd, y, yd, [](T u, T v) { return static_cast<uint8_t>(u == v); }); break;
    case CompareOp::kLess: broadcast2(a, ad, b, bd, y, yd, [](T u, T v) { return static_cast<uint8_t>(u < v); }); break;
    case CompareOp::kGreater: broadcast2(a, ad, b, bd, y, yd, [](T u, T v) { return static_cast<uint8_t>(u > v); }); break;
    case CompareOp::kLessOrEqual: broadcast2(a, ad, b, bd, y, yd, [](T u, T v) { return static_cast<uint8_t>(u <= v); }); break;
    case CompareOp::kGreaterOrEqual: broadcast2(a, ad, b, bd, y, yd, [](T u, T v) { return static_cast<uint8_t>(u >= v); }); break;
  }
}
}  // namespace

void compare(CompareOp op, Elem elem, const void* a, std::span<const int64_t> ad, const void* b,
             std::span<const int64_t> bd, uint8_t* y, std::span<const int64_t> yd) {
  switch (elem) {
    case Elem::kFloat32: compare_typed(op, static_cast<const float*>(a), ad, static_cast<const float*>(b), bd, y, yd); break;
    case Elem::kFloat64: compare_typed(op, static_cast<const double*>(a), ad, static_cast<const double*>(b), bd, y, yd); break;
    case Elem::kInt64: compare_typed(op, static_cast<const int64_t*>(a), ad, static_cast<const int64_t*>(b), bd, y, yd); break;
    case Elem::kInt32: compare_typed(op, static_cast<const int32_t*>(a), ad, static_cast<const int32_t*>(b), bd, y, yd); break;
    case Elem::kInt8: compare_typed(op, static_cast<const int8_t*>(a), ad, static_cast<const int8_t*>(b), bd, y, yd); break;
    case Elem::kUInt8: case Elem::kBool:
      compare_typed(op, static_cast<const uint8_t*>(a), ad, static_cast<const uint8_t*>(b), bd, y, yd);
      break;
    case Elem::kFloat16: break;  // refused by the op table
  }
}

void logic(LogicOp op, const uint8_t* a, std::span<const int64_t> ad, const uint8_t* b, std::span<const int64_t> bd,
           uint8_t* y, std::span<const int64_t> yd) {
  switch (op) {
    case LogicOp::kAnd: broadcast2(a, ad, b, bd, y, yd, [](uint8_t u, uint8_t v) { return static_cast<uint8_t>(u && v); }); break;
    case LogicOp::kOr: broadcast2(a, ad, b, bd, y, yd, [](uint8_t u, uint8_t v) { return static_cast<uint8_t>(u || v); }); break;
    case LogicOp::kXor: broadcast2(a, ad, b, bd, y, yd, [](uint8_t u, uint8_t v) { return static_cast<uint8_t>((u != 0) != (v != 0)); }); break;
  }
}

void logical_not(const uint8_t* x, uint8_t* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] ? 0 : 1;
}

void is_nan(const float* x, uint8_t* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = std::isnan(x[i]) ? 1 : 0;
}

void is_inf(const float* x, uint8_t* y, int64_t count, bool detect_negative, bool detect_positive) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = std::isinf(x[i]) && ((x[i] < 0 && detect_negative) || (x[i] > 0 && detect_positive)) ? 1 : 0;
}

}  // namespace ws::ref
