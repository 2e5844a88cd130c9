// reduce.cpp — ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (opset 13/18
// semantics; the op table resolves axes and keepdims), ArgMax/ArgMin-13, LayerNormalization-17,
// InstanceNormalization-6 and LogSoftmax-13. Accumulation in double.
#include <cmath>
#include <limits>

#include "reference/ops_ext.h"

namespace ws::ref {
namespace {

// Calls body(out_index, base_offset) for every kept position and visit(offset) for every reduced
// position under it: x's row-major strides split into kept and reduced axes.
struct ReduceGeometry {
  size_t nk = 0, nr = 0;
  RankArray kd{}, ks{}, rd{}, rs{};
  int64_t outer = 1, inner = 1;
  ReduceGeometry(std::span<const int64_t> x_dims, std::span<const bool> reduce) {
    RankArray stride{};
    const size_t r = x_dims.size();
    int64_t s = 1;
    for (size_t k = r; k-- > 0;) { stride[k] = s; s *= x_dims[k]; }
    for (size_t k = 0; k < r; ++k) {
      if (reduce[k]) { rd[nr] = x_dims[k]; rs[nr++] = stride[k]; inner *= x_dims[k]; }
      else { kd[nk] = x_dims[k]; ks[nk++] = stride[k]; outer *= x_dims[k]; }
    }
  }
  template <typename F>
  void reduced(int64_t base, F visit) const {
    if (inner == 0) return;
    RankArray idx{};
    int64_t off = base;
    for (int64_t i = 0; i < inner; ++i) {
      visit(off);
      for (size_t k = nr; k-- > 0;) {
        ++idx[k];
        off += rs[k];
        if (idx[k] < rd[k]) break;
        off -= rs[k] * idx[k];
        idx[k] = 0;
      }
    }
  }
  int64_t base_of(int64_t o) const {
    int64_t off = 0;
    for (size_t k = nk; k-- > 0;) { off += (o % kd[k]) * ks[k]; o /= kd[k]; }
    return off;
  }
};

}  // namespace

void reduce(ReduceOp op, const float* x, std::span<const int64_t> x_dims, std::span<const bool> reduce_axes, float* y) {
  const ReduceGeometry g(x_dims, reduce_axes);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t o = 0; o < g.outer; ++o) {
    const int64_t base = g.base_of(o);
    double acc;
    switch (op) {
      case ReduceOp::kMax: acc = -inf; break;
      case ReduceOp::kMin: acc = inf; break;
      case ReduceOp::kProd: acc = 1.0; break;
      default: acc = 0.0; break;
    }
    bool nan = false;
    double mx = -inf;
    if (op == ReduceOp::kLogSumExp) {
      g.reduced(base, [&](int64_t i) { mx = std::fmax(mx, x[i]); nan |= std::isnan(x[i]); });
      if (std::isinf(mx)) mx = 0.0;
    }
    g.reduced(base, [&](int64_t i) {
      const double v = x[i];
      switch (op) {
        case ReduceOp::kSum: case ReduceOp::kMean: case ReduceOp::kLogSum: acc += v; break;
        case ReduceOp::kMax: if (std::isnan(v)) nan = true; else if (v > acc) acc = v; break;
        case ReduceOp::kMin: if (std::isnan(v)) nan = true; else if (v < acc) acc = v; break;
        case ReduceOp::kProd: acc *= v; break;
        case ReduceOp::kL1: acc += std::fabs(v); break;
        case ReduceOp::kL2: case ReduceOp::kSumSquare: acc += v * v; break;
        case ReduceOp::kLogSumExp: acc += std::exp(v - mx); break;
      }
    });
    switch (op) {
      case ReduceOp::kMean: acc = g.inner ? acc / static_cast<double>(g.inner) : std::numeric_limits<double>::quiet_NaN(); break;
      case ReduceOp::kL2: acc = std::sqrt(acc); break;
      case ReduceOp::kLogSum: acc = std::log(acc); break;
      case ReduceOp::kLogSumExp: acc = std::log(acc) + mx; break;
      default: break;
    }
    if (nan) acc = std::numeric_limits<double>::quiet_NaN();
    y[o] = static_cast<float>(acc);
  }
}

void reduce_i64(ReduceOp op, const int64_t* x, std::span<const int64_t> x_dims, std::span<const bool> reduce_axes,
                int64_t* y) {
  const ReduceGeometry g(x_dims, reduce_axes);
  for (int64_t o = 0; o < g.outer; ++o) {
    uint64_t acc = 0;  // wrapping sums/products
    int64_t ext = op == ReduceOp::kMax ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    if (op == ReduceOp::kProd) acc = 1;
    g.reduced(g.base_of(o), [&](int64_t i) {
      const int64_t v = x[i];
      switch (op) {
        case ReduceOp::kProd: acc *= static_cast<uint64_t>(v); break;
        case ReduceOp::kMax: ext = v > ext ? v : ext; break;
        case ReduceOp::kMin: ext = v < ext ? v : ext; break;
        case ReduceOp::kSumSquare: acc += static_cast<uint64_t>(v) * static_cast<uint64_t>(v); break;
        default: acc += static_cast<uint64_t>(v); break;
      }
    });
    if (op == ReduceOp::kMean) acc = g.inner ? static_cast<uint64_t>(static_cast<int64_t>(acc) / g.inner) : 0;
    y[o] = (op == ReduceOp::kMax || op == ReduceOp::kMin) ? ext : static_cast<int64_t>(acc);
  }
}

void arg_extreme(bool is_max, const float* x, int64_t outer, int64_t axis_len, int64_t inner, bool select_last_index,
                 int64_t* y) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* p = x + o * axis_len * inner + i;
      int64_t best = 0;
      for (int64_t a = 1; a < axis_len; ++a) {
        const float v = p[a * inner], b = p[best * inner];
        const bool better = is_max ? (v > b || (select_last_index && v == b)) : (v < b || (select_last_index && v == b));
        if (better) best = a;
      }
      y[o * inner + i] = best;
    }
}

void layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                float epsilon, float* mean_out, float* inv_std_out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double sum = 0.0;
    for (int64_t j = 0; j < cols; ++j) sum += xr[j];
    const double mean = sum / static_cast<double>(cols);
    double var = 0.0;
    for (int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(cols);
    const double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t j = 0; j < cols; ++j) {
      const double v = (xr[j] - mean) * inv * scale[j] + (bias ? bias[j] : 0.0f);
      y[r * cols + j] = static_cast<float>(v);
    }
    if (mean_out) mean_out[r] = static_cast<float>(mean);
    if (inv_std_out) inv_std_out[r] = static_cast<float>(inv);
  }
}

void instance_norm(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t c,
                   int64_t spatial, float epsilon) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t off = (b * c + ch) * spatial;
      double sum = 0.0;
      for (int64_t i = 0; i < spatial; ++i) sum += x[off + i];
      const double mean = sum / static_cast<double>(spatial);
      double var = 0.0;
      for (int64_t i = 0; i < spatial; ++i) var += (x[off + i] - mean) * (x[off + i] - mean);
      var /= static_cast<double>(spatial);
      const double inv = 1.0 / std::sqrt(var + epsilon);
      for (int64_t i = 0; i < spatial; ++i)
        y[off + i] = static_cast<float>((x[off + i] - mean) * inv * scale[ch] + bias[ch]);
    }
}

namespace {
template <typename T>
void cumsum_typed(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      T acc = 0;
      for (int64_t t = 0; t < len; ++t) {
        const int64_t a = reverse ? len - 1 - t : t;
        const int64_t off = (o * len + a) * inner + i;
        if (exclusive) { y[off] = acc; acc += x[off]; }
        else { acc += x[off]; y[off] = acc; }
      }
    }
}
}  // namespace

void cumsum(Elem elem, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse) {
  switch (elem) {
    case Elem::kFloat32: cumsum_typed(static_cast<const float*>(x), static_cast<float*>(y), outer, len, inner, exclusive, reverse); break;
    case Elem::kFloat64: cumsum_typed(static_cast<const double*>(x), static_cast<double*>(y), outer, len, inner, exclusive, reverse); break;
    case Elem::kInt64: cumsum_typed(static_cast<const int64_t*>(x), static_cast<int64_t*>(y), outer, len, inner, exclusive, reverse); break;
    case Elem::kInt32: cumsum_typed(static_cast<const int32_t*>(x), static_cast<int32_t*>(y), outer, len, inner, exclusive, reverse); break;
    default: break;  // refused by the op table
  }
}

void hardmax(const float* x, float* y, int64_t outer, int64_t len, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t a = 0; a < len; ++a) {
        const int64_t off = (o * len + a) * inner + i;
        if (x[off] > x[(o * len + best) * inner + i]) best = a;
        y[off] = 0.0f;
      }
      if (len) y[(o * len + best) * inner + i] = 1.0f;
    }
}

void log_softmax(const float* x, float* y, int64_t outer, int64_t axis_len, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* p = x + o * axis_len * inner + i;
      float* q = y + o * axis_len * inner + i;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < axis_len; ++a) mx = std::fmax(mx, p[a * inner]);
      double sum = 0.0;
      for (int64_t a = 0; a < axis_len; ++a) sum += std::exp(p[a * inner] - mx);
      const double lse = mx + std::log(sum);
      for (int64_t a = 0; a < axis_len; ++a) q[a * inner] = static_cast<float>(p[a * inner] - lse);
    }
}

}  // namespace ws::ref
