// resize.cpp — Resize-13 (https://onnx.ai/onnx/operators/onnx__Resize.html), written after ONNX's
// reference implementation (onnx/reference/ops/op_resize.py): every axis maps an output index to
// an input coordinate by the coordinate transformation mode, then takes 1 (nearest), 2 (linear)
// or 4 (cubic) taps, indices clamped to the edge; the N-D result is the tensor product of the
// per-axis taps. tf_crop_and_resize writes extrapolation_value where the coordinate falls
// outside the input. The taps are computed once (make_resize_taps) so a run allocates nothing.
#include <cmath>

#include "reference/ops_ext.h"

namespace ws::ref {
namespace {

double original_coordinate(const ResizeParams& p, size_t axis, int64_t x_res) {
  // As ONNX's reference: the "resized length" in these formulas is len_in × scale, not the
  // floored output extent (they differ when a scale does not divide evenly).
  const double scale = p.scales[axis];
  const double len_in = static_cast<double>(p.in_dims[axis]), len_out = len_in * scale;
  const double x = static_cast<double>(x_res);
  switch (p.coord) {
    case CoordMode::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      const double adj = len_out / (scale * len_in);
      const double center = len_in / 2.0, offset = center * (1.0 - adj);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case CoordMode::kPytorchHalfPixel: return len_out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CoordMode::kAlignCorners: return len_out == 1 ? 0.0 : x * (len_in - 1) / (len_out - 1);
    case CoordMode::kAsymmetric: return x / scale;
    case CoordMode::kTfCropAndResize: {
      const double s = p.roi_start[axis], e = p.roi_end[axis];
      return len_out > 1 ? s * (len_in - 1) + x * (e - s) * (len_in - 1) / (len_out - 1) : 0.5 * (s + e) * (len_in - 1);
    }
  }
  return 0.0;
}

void cubic_coeffs(double r, double a, double c[4]) {
  c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  c[2] = ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1;
  c[3] = ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a;
}

}  // namespace

ResizeTaps make_resize_taps(const ResizeParams& p) {
  ResizeTaps t;
  const size_t r = p.in_dims.size();
  t.rank = r;
  t.n = p.mode == ResizeMode::kNearest ? 1 : p.mode == ResizeMode::kLinear ? 2 : 4;
  t.in_dims = p.in_dims;
  t.out_dims = p.out_dims;
  t.extrapolation_value = p.extrapolation_value;
  t.axes.resize(r);
  for (size_t a = 0; a < r; ++a) {
    auto& ax = t.axes[a];
    const int64_t len_in = p.in_dims[a], len_out = p.out_dims[a];
    ax.index.resize(static_cast<size_t>(len_out * t.n));
    ax.weight.resize(static_cast<size_t>(len_out * t.n));
    ax.outside.resize(static_cast<size_t>(len_out));
    auto clampi = [len_in](int64_t i) { return i < 0 ? 0 : (i >= len_in ? len_in - 1 : i); };
    for (int64_t o = 0; o < len_out; ++o) {
      const double x = original_coordinate(p, a, o);
      ax.outside[o] = p.coord == CoordMode::kTfCropAndResize && (x < 0 || x > static_cast<double>(len_in - 1));
      int64_t* idx = &ax.index[static_cast<size_t>(o * t.n)];
      double* w = &ax.weight[static_cast<size_t>(o * t.n)];
      if (p.mode == ResizeMode::kNearest) {
        double n = 0.0;
        switch (p.nearest) {
          case NearestMode::kRoundPreferFloor: n = (x == std::floor(x) + 0.5) ? std::floor(x) : std::round(x); break;
          case NearestMode::kRoundPreferCeil: n = (x == std::floor(x) + 0.5) ? std::ceil(x) : std::round(x); break;
          case NearestMode::kFloor: n = std::floor(x); break;
          case NearestMode::kCeil: n = std::ceil(x); break;
        }
        idx[0] = clampi(static_cast<int64_t>(n));
        w[0] = 1.0;
      } else if (p.mode == ResizeMode::kLinear) {
        const double f = std::floor(x), ratio = x - f;
        const int64_t i0 = static_cast<int64_t>(f);
        idx[0] = clampi(i0);
        idx[1] = clampi(i0 + 1);
        w[0] = 1.0 - ratio;
        w[1] = ratio;
        if (x >= static_cast<double>(len_in - 1)) { idx[0] = idx[1] = len_in - 1; w[0] = 1.0; w[1] = 0.0; }
        if (x < 0) { idx[0] = idx[1] = 0; w[0] = 1.0; w[1] = 0.0; }
      } else {
        const double f = std::floor(x), ratio = x - f;
        const int64_t i0 = static_cast<int64_t>(f);
        double c[4];
        cubic_coeffs(ratio, p.cubic_coeff_a, c);
        double sum = 0.0;
        for (int k = 0; k < 4; ++k) {
          const int64_t i = i0 - 1 + k;
          if (p.exclude_outside && (i < 0 || i >= len_in)) c[k] = 0.0;
          sum += c[k];
          idx[k] = clampi(i);
          w[k] = c[k];
        }
        if (p.exclude_outside && sum != 0.0)
          for (int k = 0; k < 4; ++k) w[k] /= sum;
      }
    }
  }
  return t;
}

void resize(const float* x, float* y, const ResizeTaps& t) {
  const size_t r = t.rank;
  RankArray xstride{}, oidx{}, tap{};
  int64_t s = 1;
  for (size_t k = r; k-- > 0;) { xstride[k] = s; s *= t.in_dims[k]; }
  const int64_t total = element_count(t.out_dims);
  for (int64_t o = 0; o < total; ++o) {
    bool outside = false;
    for (size_t k = 0; k < r; ++k) outside |= t.axes[k].outside[static_cast<size_t>(oidx[k])] != 0;
    if (outside) {
      y[o] = t.extrapolation_value;
    } else {
      // Sum over the tensor product of the per-axis taps (tap[k] counts 0..n-1 on every axis).
      double acc = 0.0;
      tap.fill(0);
      for (;;) {
        double w = 1.0;
        int64_t off = 0;
        for (size_t k = 0; k < r; ++k) {
          const size_t j = static_cast<size_t>(oidx[k] * t.n + tap[k]);
          w *= t.axes[k].weight[j];
          off += t.axes[k].index[j] * xstride[k];
        }
        if (w != 0.0) acc += w * x[off];
        size_t k = r;
        while (k-- > 0) {
          if (++tap[k] < t.n) break;
          tap[k] = 0;
        }
        if (k == static_cast<size_t>(-1)) break;
      }
      y[o] = static_cast<float>(acc);
    }
    for (size_t k = r; k-- > 0;) {
      if (++oidx[k] < t.out_dims[k]) break;
      oidx[k] = 0;
    }
  }
}

}  // namespace ws::ref
