// Pad-13 reference: constant / reflect / edge over any rank; one output element at a time through
// a per-axis source-index map, so it is obviously right rather than fast (Pad before a Conv is
// folded into the Conv's pads at build; this runs only where it cannot be).
#include "reference/pad.h"


namespace ws::ref {

void pad(const float* x, std::span<const int64_t> x_dims, std::span<const int64_t> pads, PadMode mode, float value,
         float* y) {
  const size_t r = x_dims.size();
  int64_t y_dims[kMaxPadRank], x_stride[kMaxPadRank], idx[kMaxPadRank];
  for (size_t i = 0; i < r; ++i) x_stride[i] = 1;
  for (size_t i = 0; i < r; ++i) y_dims[i] = x_dims[i] + pads[i] + pads[i + r];
  for (size_t i = r; i-- > 1;) x_stride[i - 1] = x_stride[i] * x_dims[i];
  int64_t total = 1;
  for (size_t i = 0; i < r; ++i) total *= y_dims[i];
  for (int64_t o = 0; o < total; ++o) {
    // idx = multi-index of o in y
    int64_t rem = o, src = 0;
    bool outside = false;
    for (size_t i = r; i-- > 0;) {
      idx[i] = rem % y_dims[i];
      rem /= y_dims[i];
    }
    for (size_t i = 0; i < r; ++i) {
      int64_t s = idx[i] - pads[i];
      const int64_t n = x_dims[i];
      if (s < 0 || s >= n) {
        if (mode == PadMode::kConstant || n == 0) { outside = true; break; }
        if (mode == PadMode::kEdge) s = s < 0 ? 0 : n - 1;
        else {  // reflect without repeating the edge: -1 → 1, n → n-2
          const int64_t period = 2 * (n - 1);
          if (period == 0) s = 0;
          else {
            s %= period;
            if (s < 0) s += period;
            if (s >= n) s = period - s;
          }
        }
      }
      src += s * x_stride[i];
    }
    y[o] = outside ? value : x[src];
  }
}

}  // namespace ws::ref
