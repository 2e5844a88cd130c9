// layout.cpp — ONNX Softmax-13 (outer × axis × inner view, max-subtracted), Transpose-13 and
// Concat-13 over raw element bytes. No allocation: index arithmetic is recomputed per output row.

#include <cmath>
#include <cstring>

#include "reference/reference.h"

namespace ws::ref {

void softmax(const float* x, float* y, int64_t outer, int64_t axis_len, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    const float* xp = x + o * axis_len * inner;
    float* yp = y + o * axis_len * inner;
    if (inner == 1) {
      float mx = -INFINITY;
      for (int64_t a = 0; a < axis_len; ++a) mx = xp[a] > mx ? xp[a] : mx;
      float sum = 0.0f;
      for (int64_t a = 0; a < axis_len; ++a) {
        yp[a] = std::exp(xp[a] - mx);
        sum += yp[a];
      }
      const float inv = 1.0f / sum;
      for (int64_t a = 0; a < axis_len; ++a) yp[a] *= inv;
      continue;
    }
    for (int64_t i = 0; i < inner; ++i) {
      float mx = -INFINITY;
      for (int64_t a = 0; a < axis_len; ++a) {
        const float v = xp[a * inner + i];
        mx = v > mx ? v : mx;
      }
      float sum = 0.0f;
      for (int64_t a = 0; a < axis_len; ++a) {
        const float e = std::exp(xp[a * inner + i] - mx);
        yp[a * inner + i] = e;
        sum += e;
      }
      const float inv = 1.0f / sum;
      for (int64_t a = 0; a < axis_len; ++a) yp[a * inner + i] *= inv;
    }
  }
}

namespace {

template <typename T>
void transpose_typed(const T* x, std::span<const int64_t> x_dims, std::span<const int64_t> perm, T* y) {
  const size_t r = x_dims.size();
  const int64_t total = element_count(x_dims);
  if (total == 0) return;
  if (r == 0) {
    y[0] = x[0];
    return;
  }
  auto x_stride = [&](size_t d) {
    int64_t s = 1;
    for (size_t i = d + 1; i < r; ++i) s *= x_dims[i];
    return s;
  };
  const int64_t inner = x_dims[perm[r - 1]];
  const int64_t inner_stride = x_stride(perm[r - 1]);
  const int64_t rows = total / inner;
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, off = 0;
    for (size_t t = 1; t < r; ++t) {
      const size_t yi = r - 1 - t;
      const int64_t yd = x_dims[perm[yi]];
      off += (rem % yd) * x_stride(perm[yi]);
      rem /= yd;
    }
    const T* xp = x + off;
    T* yp = y + row * inner;
    if (inner_stride == 1) {
      std::memcpy(yp, xp, sizeof(T) * inner);
    } else {
      for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i * inner_stride];
    }
  }
}


}  // namespace

void transpose(const void* x, std::span<const int64_t> x_dims, std::span<const int64_t> perm, void* y,
               size_t element_bytes) {
  switch (element_bytes) {
    case 1:
      transpose_typed(static_cast<const uint8_t*>(x), x_dims, perm, static_cast<uint8_t*>(y));
      break;
    case 2:
      transpose_typed(static_cast<const uint16_t*>(x), x_dims, perm, static_cast<uint16_t*>(y));
      break;
    case 4:
      transpose_typed(static_cast<const uint32_t*>(x), x_dims, perm, static_cast<uint32_t*>(y));
      break;
    case 8:
      transpose_typed(static_cast<const uint64_t*>(x), x_dims, perm, static_cast<uint64_t*>(y));
      break;
    default: {
      // Any other element size: move bytes one element at a time.
      const size_t r = x_dims.size();
      const int64_t total = element_count(x_dims);
      const auto* xb = static_cast<const uint8_t*>(x);
      auto* yb = static_cast<uint8_t*>(y);
      for (int64_t e = 0; e < total; ++e) {
        int64_t rem = e, off = 0;
        for (size_t t = 0; t < r; ++t) {
          const size_t yi = r - 1 - t;
          const int64_t yd = x_dims[perm[yi]];
          int64_t s = 1;
          for (size_t i = perm[yi] + 1; i < r; ++i) s *= x_dims[i];
          off += (rem % yd) * s;
          rem /= yd;
        }
        std::memcpy(yb + e * element_bytes, xb + off * element_bytes, element_bytes);
      }
    }
  }
}

void concat(std::span<const void* const> inputs, std::span<const Dims> input_dims, int64_t axis, void* y,
            size_t element_bytes) {
  if (inputs.empty()) return;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= input_dims[0][i];
  auto* yb = static_cast<uint8_t*>(y);
  size_t y_off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t t = 0; t < inputs.size(); ++t) {
      const Dims& d = input_dims[t];
      int64_t block = 1;  // elements of input t per outer index
      for (size_t i = axis; i < d.size(); ++i) block *= d[i];
      const size_t bytes = static_cast<size_t>(block) * element_bytes;
      if (bytes) std::memcpy(yb + y_off, static_cast<const uint8_t*>(inputs[t]) + o * bytes, bytes);
      y_off += bytes;
    }
  }
}

}  // namespace ws::ref
