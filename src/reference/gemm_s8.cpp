// INT8 GEMM oracle, packing, epilogue oracle and shape suites; see gemm_s8.h.
#include "reference/gemm_s8.h"

#include <algorithm>
#include <cstring>

namespace ws::ref {

void gemm_s8s8s64(const int8_t* a, const int8_t* b, int64_t* c, int64_t m, int64_t n, int64_t k) {
  std::vector<int64_t> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0);
    for (int64_t p = 0; p < k; ++p) {
      const int64_t av = a[i * k + p];
      if (av == 0) continue;
      const int8_t* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
    }
    std::copy(row.begin(), row.end(), c + i * n);
  }
}

void gemm_s8s8s64_bt(const int8_t* a, const int8_t* bt, int64_t* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t p = 0; p < k; ++p) s += int64_t(a[i * k + p]) * bt[j * k + p];
      c[i * n + j] = s;
    }
}

int64_t gemm_s8_dot(const int8_t* a, const int8_t* b, int64_t n, int64_t k, int64_t row, int64_t col) {
  int64_t s = 0;
  for (int64_t p = 0; p < k; ++p) s += int64_t(a[row * k + p]) * b[p * n + col];
  return s;
}

static inline int32_t pack4(int8_t x0, int8_t x1, int8_t x2, int8_t x3) {
  uint32_t w = uint32_t(uint8_t(x0)) | uint32_t(uint8_t(x1)) << 8 | uint32_t(uint8_t(x2)) << 16 |
               uint32_t(uint8_t(x3)) << 24;
  int32_t r;
  std::memcpy(&r, &w, 4);
  return r;
}

std::vector<int32_t> pack_a_k4(const int8_t* a, int64_t m, int64_t k) {
  const int64_t kg = k_groups(k);
  std::vector<int32_t> out(static_cast<size_t>(m * kg));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t g = 0; g < kg; ++g) {
      int8_t x[4] = {0, 0, 0, 0};
      for (int j = 0; j < 4; ++j)
        if (4 * g + j < k) x[j] = a[i * k + 4 * g + j];
      out[i * kg + g] = pack4(x[0], x[1], x[2], x[3]);
    }
  return out;
}

std::vector<int32_t> pack_bt_k4(const int8_t* b, int64_t k, int64_t n) {
  const int64_t kg = k_groups(k);
  std::vector<int32_t> out(static_cast<size_t>(n * kg));
  for (int64_t g = 0; g < kg; ++g) {
    int8_t x[4];
    for (int64_t j = 0; j < n; ++j) {
      for (int q = 0; q < 4; ++q) x[q] = (4 * g + q < k) ? b[(4 * g + q) * n + j] : int8_t(0);
      out[j * kg + g] = pack4(x[0], x[1], x[2], x[3]);
    }
  }
  return out;
}

std::vector<int8_t> transpose_s8(const int8_t* b, int64_t k, int64_t n) {
  std::vector<int8_t> out(static_cast<size_t>(n * k));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) out[j * k + p] = b[p * n + j];
  return out;
}

void gemm_epilogue_f64(const int64_t* acc, const float* row_scale, const float* col_scale, const float* bias,
                       double* out, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double v = double(acc[i * n + j]) * double(row_scale[i]) * double(col_scale[j]);
      if (bias) v += double(bias[j]);
      out[i * n + j] = v;
    }
}

const char* fill_kind_name(FillKind kind) {
  switch (kind) {
    case FillKind::kRandom: return "random";
    case FillKind::kSmall: return "small";
    case FillKind::kZeros: return "zeros";
    case FillKind::kExtremes: return "extremes";
  }
  return "?";
}

namespace {
struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};
}  // namespace

void fill_s8(int8_t* x, int64_t count, FillKind kind, uint64_t seed) {
  SplitMix64 rng{seed * 0x2545F4914F6CDD1Dull + 1};
  int64_t i = 0;
  switch (kind) {
    case FillKind::kZeros: std::memset(x, 0, static_cast<size_t>(count)); return;
    case FillKind::kRandom:
      for (; i + 8 <= count; i += 8) {
        uint64_t r = rng.next();
        std::memcpy(x + i, &r, 8);
      }
      for (; i < count; ++i) x[i] = int8_t(uint8_t(rng.next()));
      return;
    case FillKind::kSmall:
      for (; i + 16 <= count; i += 16) {
        uint64_t r = rng.next();
        for (int q = 0; q < 16; ++q) x[i + q] = int8_t(int((r >> (4 * q)) & 15) - 8);
      }
      for (; i < count; ++i) x[i] = int8_t(int(rng.next() & 15) - 8);
      return;
    case FillKind::kExtremes:
      for (; i < count; i += 64) {
        uint64_t r = rng.next();
        for (int q = 0; q < 64 && i + q < count; ++q) x[i + q] = ((r >> q) & 1) ? int8_t(127) : int8_t(-128);
      }
      return;
  }
}

void fill_f32(float* x, int64_t count, float lo, float hi, uint64_t seed) {
  SplitMix64 rng{seed * 0x9E3779B97F4A7C15ull + 7};
  for (int64_t i = 0; i < count; ++i) x[i] = lo + (hi - lo) * float(double(rng.next() >> 40) / double(1ull << 24));
}

static std::string case_name(const char* fill, int64_t m, int64_t n, int64_t k) {
  return std::string(fill) + "_" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}
static GemmCase make_case(FillKind f, int64_t m, int64_t n, int64_t k, uint64_t seed) {
  return GemmCase{case_name(fill_kind_name(f), m, n, k), m, n, k, f, seed};
}

std::vector<GemmCase> naive_suite() {
  std::vector<GemmCase> s;
  uint64_t seed = 100;
  s.push_back(make_case(FillKind::kRandom, 17, 23, 19, seed++));
  s.push_back(make_case(FillKind::kZeros, 17, 23, 19, seed++));
  for (int64_t k = 1; k <= 7; ++k) s.push_back(make_case(FillKind::kExtremes, 17, 23, k, seed++));
  for (int64_t d : {128, 256, 512}) s.push_back(make_case(FillKind::kSmall, d, d, d, seed++));
  return s;
}

std::vector<GemmCase> small_suite() {
  std::vector<GemmCase> s;
  uint64_t seed = 200;
  for (int64_t d : {128, 256, 512}) s.push_back(make_case(FillKind::kRandom, d, d, d, seed++));
  // Rectangles and tile boundaries (64 = DP4A tile, 128/256 = tensor-core tiles), off by one.
  const int64_t shapes[][3] = {{17, 23, 19},  {1, 1, 1},     {1, 300, 64},   {300, 1, 64},   {63, 65, 64},
                               {65, 63, 100}, {127, 129, 96}, {129, 257, 160}, {255, 130, 48}, {96, 384, 512},
                               {640, 192, 256}, {200, 72, 1000}};
  for (auto& sh : shapes) s.push_back(make_case(FillKind::kRandom, sh[0], sh[1], sh[2], seed++));
  s.push_back(make_case(FillKind::kZeros, 65, 67, 69, seed++));
  s.push_back(make_case(FillKind::kZeros, 128, 128, 128, seed++));
  for (int64_t k = 1; k <= 7; ++k) s.push_back(make_case(FillKind::kExtremes, 33, 35, k, seed++));
  for (int64_t k : {31, 32, 33, 63, 64, 65, 127, 128, 129}) {
    s.push_back(make_case(FillKind::kRandom, 70, 130, k, seed++));
    s.push_back(make_case(FillKind::kExtremes, 70, 130, k, seed++));
  }
  return s;
}

std::vector<GemmCase> large_suite(double scale) {
  const int64_t shapes[][3] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
                               {8192, 4096, 4096}, {8192, 16384, 4096}, {8192, 4096, 16384}};  // M, N, K
  std::vector<GemmCase> s;
  uint64_t seed = 300;
  auto sc = [scale](int64_t d) {
    if (scale >= 1.0) return d;
    return std::max<int64_t>(64, int64_t(double(d) * scale) / 64 * 64);
  };
  for (auto& sh : shapes) s.push_back(make_case(FillKind::kRandom, sc(sh[0]), sc(sh[1]), sc(sh[2]), seed++));
  return s;
}

std::vector<Position> check_positions(int64_t m, int64_t n, int count, uint64_t seed) {
  std::vector<Position> p;
  if (m <= 0 || n <= 0) return p;
  p.push_back({0, 0});
  p.push_back({0, n - 1});
  p.push_back({m - 1, 0});
  p.push_back({m - 1, n - 1});
  SplitMix64 rng{seed + 0x51ed270b27ull};
  while (int(p.size()) < count) p.push_back({int64_t(rng.next() % uint64_t(m)), int64_t(rng.next() % uint64_t(n))});
  p.resize(std::min<size_t>(p.size(), size_t(count)));
  return p;
}

}  // namespace ws::ref
