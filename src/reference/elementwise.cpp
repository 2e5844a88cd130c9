// elementwise.cpp — element counts, unary activations and numpy-broadcast binary arithmetic.
// Follows ONNX Relu-14, Sigmoid-13, HardSigmoid-6, HardSwish-14, Clip-13, Identity-16 and
// Add/Sub/Mul/Div-14 with numpy multidirectional broadcasting
// (https://github.com/onnx/onnx/blob/main/docs/Broadcasting.md).

#include <cmath>
#include <string>

#include "reference/reference.h"

namespace ws::ref {

std::string dims_string(std::span<const int64_t> d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(d[i]);
  }
  return s + "]";
}


int64_t element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

namespace {


// Comparisons are written so that NaN propagates (every comparison with NaN is false).
inline float clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

template <typename F>
void map(const float* x, float* y, int64_t count, F f) {
  for (int64_t i = 0; i < count; ++i) y[i] = f(x[i]);
}

template <typename F>
void binary_rows(const float* a, const float* b, float* y, std::span<const int64_t> a_dims,
                 std::span<const int64_t> b_dims, std::span<const int64_t> y_dims, F f) {
  const int64_t total = element_count(y_dims);
  if (total == 0) return;
  const size_t yr = y_dims.size();
  const size_t ar = a_dims.size(), br = b_dims.size();
  // Coalesce nothing; iterate rows of the innermost dimension.
  const int64_t inner = yr ? y_dims[yr - 1] : 1;
  const int64_t a_inner = ar ? a_dims[ar - 1] : 1;
  const int64_t b_inner = br ? b_dims[br - 1] : 1;
  const int64_t sa = (a_inner == 1) ? 0 : 1;
  const int64_t sb = (b_inner == 1) ? 0 : 1;
  const int64_t rows = total / inner;
  for (int64_t r = 0; r < rows; ++r) {
    // Decompose r over y_dims[0 .. yr-2] (right to left), accumulating operand offsets.
    int64_t rem = r, a_off = 0, b_off = 0;
    int64_t a_mult = a_inner, b_mult = b_inner;  // products of operand dims to the right
    for (size_t k = 1; k < yr; ++k) {
      const size_t yi = yr - 1 - k;  // y dim index
      const int64_t coord = rem % y_dims[yi];
      rem /= y_dims[yi];
      if (k < ar) {
        const int64_t ad = a_dims[ar - 1 - k];
        if (ad != 1) a_off += coord * a_mult;
        a_mult *= ad;
      }
      if (k < br) {
        const int64_t bd = b_dims[br - 1 - k];
        if (bd != 1) b_off += coord * b_mult;
        b_mult *= bd;
      }
    }
    const float* ap = a + a_off;
    const float* bp = b + b_off;
    float* yp = y + r * inner;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < inner; ++i) yp[i] = f(ap[i], bp[i]);
    } else if (sa == 1) {
      const float bv = bp[0];
      for (int64_t i = 0; i < inner; ++i) yp[i] = f(ap[i], bv);
    } else if (sb == 1) {
      const float av = ap[0];
      for (int64_t i = 0; i < inner; ++i) yp[i] = f(av, bp[i]);
    } else {
      const float v = f(ap[0], bp[0]);
      for (int64_t i = 0; i < inner; ++i) yp[i] = v;
    }
  }
}

}  // namespace

void unary(UnaryOp op, const float* x, float* y, int64_t count, const UnaryParams& params) {
  switch (op) {
    case UnaryOp::kRelu:
      map(x, y, count, [](float v) { return v < 0.0f ? 0.0f : v; });
      break;
    case UnaryOp::kSigmoid:
      map(x, y, count, [](float v) {
        if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
        const float e = std::exp(v);
        return e / (1.0f + e);
      });
      break;
    case UnaryOp::kHardSigmoid: {
      const float alpha = params.alpha, beta = params.beta;
      map(x, y, count, [=](float v) { return clamp01(alpha * v + beta); });
      break;
    }
    case UnaryOp::kHardSwish:
      map(x, y, count, [](float v) { return v * clamp01(v / 6.0f + 0.5f); });
      break;
    case UnaryOp::kClip: {
      const float lo = params.min, hi = params.max;
      map(x, y, count, [=](float v) { return v < lo ? lo : (v > hi ? hi : v); });
      break;
    }
    case UnaryOp::kIdentity:
      if (x != y) map(x, y, count, [](float v) { return v; });
      break;
  }
}

void binary_broadcast(BinaryOp op, const float* a, std::span<const int64_t> a_dims, const float* b,
                      std::span<const int64_t> b_dims, float* y, std::span<const int64_t> y_dims) {
  switch (op) {
    case BinaryOp::kAdd:
      binary_rows(a, b, y, a_dims, b_dims, y_dims, [](float u, float v) { return u + v; });
      break;
    case BinaryOp::kSub:
      binary_rows(a, b, y, a_dims, b_dims, y_dims, [](float u, float v) { return u - v; });
      break;
    case BinaryOp::kMul:
      binary_rows(a, b, y, a_dims, b_dims, y_dims, [](float u, float v) { return u * v; });
      break;
    case BinaryOp::kDiv:
      binary_rows(a, b, y, a_dims, b_dims, y_dims, [](float u, float v) { return u / v; });
      break;
  }
}

Result<Dims> broadcast_dims(std::span<const int64_t> a, std::span<const int64_t> b) {
  const size_t r = a.size() > b.size() ? a.size() : b.size();
  Dims out(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    int64_t d;
    if (da == db) d = da;
    else if (da == 1) d = db;
    else if (db == 1) d = da;
    else
      return invalid_argument("shapes " + dims_string(a) + " and " + dims_string(b) +
                              " cannot be broadcast: dimension " + std::to_string(da) + " vs " +
                              std::to_string(db) + " (axis -" + std::to_string(k + 1) + ")");
    out[r - 1 - k] = d;
  }
  return out;
}

}  // namespace ws::ref
