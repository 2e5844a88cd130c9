// gather_slice.cpp — indexing and data movement for any element type: Gather-13, Slice-13,
// Expand-13, Tile-13, Where-16, Cast-13 (float16 conversion: IEEE 754 binary16, round to nearest
// even). See reference/ops_ext.h for each function's contract.
#include <cmath>
#include <cstring>
#include <limits>

#include "reference/ops_ext.h"

namespace ws::ref {

size_t elem_size(Elem e) {
  switch (e) {
    case Elem::kFloat32: case Elem::kInt32: return 4;
    case Elem::kInt64: case Elem::kFloat64: return 8;
    case Elem::kFloat16: return 2;
    case Elem::kUInt8: case Elem::kInt8: case Elem::kBool: return 1;
  }
  return 0;
}

RankArray broadcast_strides(std::span<const int64_t> in, std::span<const int64_t> out) {
  RankArray s{};
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t ii = in.size() - 1 - k, oi = out.size() - 1 - k;
    s[oi] = in[ii] == 1 ? 0 : stride;
    stride *= in[ii];
  }
  return s;
}

namespace {
// Calls f(out_index, offset_0, offset_1, ...) for every element of out_dims, where offset_j is the
// element offset into operand j under its strides.
template <size_t N, typename F>
void for_each_broadcast(std::span<const int64_t> out_dims, const RankArray (&strides)[N], F f) {
  const int64_t total = element_count(out_dims);
  const size_t r = out_dims.size();
  RankArray idx{};
  int64_t off[N] = {};
  for (int64_t i = 0; i < total; ++i) {
    f(i, off);
    for (size_t k = r; k-- > 0;) {
      ++idx[k];
      for (size_t j = 0; j < N; ++j) off[j] += strides[j][k];
      if (idx[k] < out_dims[k]) break;
      for (size_t j = 0; j < N; ++j) off[j] -= strides[j][k] * idx[k];
      idx[k] = 0;
    }
  }
}
}  // namespace

void gather(const void* x, int64_t outer, int64_t axis_len, int64_t inner, const int64_t* indices, int64_t n_indices,
            void* y, size_t es) {
  const auto* xs = static_cast<const std::byte*>(x);
  auto* ys = static_cast<std::byte*>(y);
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n_indices; ++j)
      std::memcpy(ys + (o * n_indices + j) * row, xs + (o * axis_len + indices[j]) * row, row);
}

void gather_elements(const void* x, std::span<const int64_t> x_dims, const int64_t* indices,
                     std::span<const int64_t> idx_dims, int64_t axis, void* y, size_t es) {
  const size_t r = x_dims.size();
  RankArray xstride{}, idx{};
  int64_t s = 1;
  for (size_t k = r; k-- > 0;) { xstride[k] = s; s *= x_dims[k]; }
  const int64_t total = element_count(idx_dims);
  const auto* xs = static_cast<const std::byte*>(x);
  auto* ys = static_cast<std::byte*>(y);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += (static_cast<int64_t>(k) == axis ? indices[i] : idx[k]) * xstride[k];
    std::memcpy(ys + i * static_cast<int64_t>(es), xs + off * static_cast<int64_t>(es), es);
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < idx_dims[k]) break;
      idx[k] = 0;
    }
  }
}

void scatter_nd(const void* x, std::span<const int64_t> x_dims, const int64_t* indices, int64_t n_updates, int64_t k,
                const void* updates, void* y, size_t es) {
  const int64_t total = element_count(x_dims);
  if (x != y && total) std::memcpy(y, x, static_cast<size_t>(total) * es);
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < x_dims.size(); ++d) slice *= x_dims[d];
  auto* ys = static_cast<std::byte*>(y);
  const auto* us = static_cast<const std::byte*>(updates);
  const size_t row = static_cast<size_t>(slice) * es;
  for (int64_t i = 0; i < n_updates; ++i) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) off = off * x_dims[static_cast<size_t>(j)] + indices[i * k + j];
    if (row) std::memcpy(ys + off * static_cast<int64_t>(row), us + i * static_cast<int64_t>(row), row);
  }
}

void trilu(const void* x, int64_t batch, int64_t n, int64_t m, int64_t k, bool upper, void* y, size_t es) {
  const auto* xs = static_cast<const std::byte*>(x);
  auto* ys = static_cast<std::byte*>(y);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const int64_t off = ((b * n + i) * m + j) * static_cast<int64_t>(es);
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (keep) std::memcpy(ys + off, xs + off, es);
        else std::memset(ys + off, 0, es);
      }
}

void slice(const void* x, std::span<const int64_t> x_dims, std::span<const int64_t> starts,
           std::span<const int64_t> steps, void* y, std::span<const int64_t> y_dims, size_t es) {
  const size_t r = x_dims.size();
  RankArray xstride{};
  if (r) xstride[r - 1] = 1;
  for (size_t k = r; k-- > 1;) xstride[k - 1] = xstride[k] * x_dims[k];
  RankArray strides[1] = {};
  int64_t base = 0;
  for (size_t k = 0; k < r; ++k) {
    strides[0][k] = xstride[k] * steps[k];
    base += starts[k] * xstride[k];
  }
  const auto* xs = static_cast<const std::byte*>(x);
  auto* ys = static_cast<std::byte*>(y);
  for_each_broadcast(y_dims, strides, [&](int64_t i, const int64_t* off) {
    std::memcpy(ys + i * static_cast<int64_t>(es), xs + (base + off[0]) * static_cast<int64_t>(es), es);
  });
}

void expand(const void* x, std::span<const int64_t> x_dims, void* y, std::span<const int64_t> y_dims, size_t es) {
  RankArray strides[1] = {broadcast_strides(x_dims, y_dims)};
  const auto* xs = static_cast<const std::byte*>(x);
  auto* ys = static_cast<std::byte*>(y);
  for_each_broadcast(y_dims, strides, [&](int64_t i, const int64_t* off) {
    std::memcpy(ys + i * static_cast<int64_t>(es), xs + off[0] * static_cast<int64_t>(es), es);
  });
}

void tile(const void* x, std::span<const int64_t> x_dims, void* y, std::span<const int64_t> y_dims, size_t es) {
  const size_t r = x_dims.size();
  RankArray xstride{};
  if (r) xstride[r - 1] = 1;
  for (size_t k = r; k-- > 1;) xstride[k - 1] = xstride[k] * x_dims[k];
  const int64_t total = element_count(y_dims);
  const auto* xs = static_cast<const std::byte*>(x);
  auto* ys = static_cast<std::byte*>(y);
  RankArray idx{};
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += (idx[k] % x_dims[k]) * xstride[k];
    std::memcpy(ys + i * static_cast<int64_t>(es), xs + off * static_cast<int64_t>(es), es);
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < y_dims[k]) break;
      idx[k] = 0;
    }
  }
}

void where(const uint8_t* cond, std::span<const int64_t> c_dims, const void* a, std::span<const int64_t> a_dims,
           const void* b, std::span<const int64_t> b_dims, void* y, std::span<const int64_t> y_dims, size_t es) {
  RankArray strides[3] = {broadcast_strides(c_dims, y_dims), broadcast_strides(a_dims, y_dims), broadcast_strides(b_dims, y_dims)};
  const auto* as = static_cast<const std::byte*>(a);
  const auto* bs = static_cast<const std::byte*>(b);
  auto* ys = static_cast<std::byte*>(y);
  const int64_t e = static_cast<int64_t>(es);
  for_each_broadcast(y_dims, strides, [&](int64_t i, const int64_t* off) {
    std::memcpy(ys + i * e, cond[off[0]] ? as + off[1] * e : bs + off[2] * e, es);
  });
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    f = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    f = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= sign;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00);  // NaN
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf (>= 65520)
  if (ax < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal, RNE
    float a;
    std::memcpy(&a, &ax, 4);
    const float q = std::nearbyint(a * 16777216.0f);  // units of 2^-24; default rounding is to nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));
  }
  const uint32_t exp = ((ax >> 23) - 127 + 15);
  uint32_t man = ax & 0x7fffff;
  uint32_t h = (exp << 10) | (man >> 13);
  const uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
  return static_cast<uint16_t>(sign | h);
}

namespace {
double load(const std::byte* p, Elem e) {
  switch (e) {
    case Elem::kFloat32: { float v; std::memcpy(&v, p, 4); return v; }
    case Elem::kFloat64: { double v; std::memcpy(&v, p, 8); return v; }
    case Elem::kFloat16: { uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); }
    case Elem::kInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case Elem::kInt8: return static_cast<double>(static_cast<int8_t>(*p));
    case Elem::kUInt8: return static_cast<double>(static_cast<uint8_t>(*p));
    case Elem::kBool: return *p != std::byte{0} ? 1.0 : 0.0;
    case Elem::kInt64: break;  // handled exactly by the caller
  }
  return 0.0;
}
template <typename T>
T saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}
void store(std::byte* p, Elem e, double v) {
  switch (e) {
    case Elem::kFloat32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case Elem::kFloat64: std::memcpy(p, &v, 8); break;
    case Elem::kFloat16: { uint16_t h = float_to_half(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    case Elem::kInt32: { int32_t i = saturate<int32_t>(v); std::memcpy(p, &i, 4); break; }
    case Elem::kInt64: { int64_t i = saturate<int64_t>(v); std::memcpy(p, &i, 8); break; }
    case Elem::kInt8: { int8_t i = saturate<int8_t>(v); std::memcpy(p, &i, 1); break; }
    case Elem::kUInt8: { uint8_t i = saturate<uint8_t>(v); std::memcpy(p, &i, 1); break; }
    case Elem::kBool: *p = std::byte{v != 0.0}; break;
  }
}
}  // namespace

void cast(const void* x, Elem from, void* y, Elem to, int64_t count) {
  const auto* xs = static_cast<const std::byte*>(x);
  auto* ys = static_cast<std::byte*>(y);
  const size_t fs = elem_size(from), ts = elem_size(to);
  if (from == to) {
    if (count) std::memcpy(y, x, static_cast<size_t>(count) * fs);
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const std::byte* p = xs + i * static_cast<int64_t>(fs);
    std::byte* q = ys + i * static_cast<int64_t>(ts);
    if (from == Elem::kInt64) {
      int64_t v;
      std::memcpy(&v, p, 8);
      switch (to) {  // exact integer paths (double loses int64 precision)
        case Elem::kInt32: { int32_t w = static_cast<int32_t>(v); std::memcpy(q, &w, 4); continue; }
        case Elem::kInt8: { int8_t w = static_cast<int8_t>(v); std::memcpy(q, &w, 1); continue; }
        case Elem::kUInt8: { uint8_t w = static_cast<uint8_t>(v); std::memcpy(q, &w, 1); continue; }
        case Elem::kBool: *q = std::byte{v != 0}; continue;
        case Elem::kFloat32: { float f = static_cast<float>(v); std::memcpy(q, &f, 4); continue; }
        default: store(q, to, static_cast<double>(v)); continue;
      }
    }
    if (to == Elem::kInt64 && (from == Elem::kInt32 || from == Elem::kInt8 || from == Elem::kUInt8 || from == Elem::kBool)) {
      const int64_t v = static_cast<int64_t>(load(p, from));
      std::memcpy(q, &v, 8);
      continue;
    }
    if (from == Elem::kFloat64 && to == Elem::kFloat16) {
      // Round once (double → half) rather than twice through float.
      double d;
      std::memcpy(&d, p, 8);
      float f = static_cast<float>(d);
      // Double rounding only matters at a half-ulp tie of binary16; nudge f toward d when f landed on one.
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      if ((bits & 0x1fff) == 0x1000 && static_cast<double>(f) != d) {
        bits += (static_cast<double>(f) < d) == (f > 0) ? 1 : -1;
        std::memcpy(&f, &bits, 4);
      }
      const uint16_t h = float_to_half(f);
      std::memcpy(q, &h, 2);
      continue;
    }
    store(q, to, load(p, from));
  }
}

}  // namespace ws::ref
