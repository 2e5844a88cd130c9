#pragma once
/// \file gemm_s8.h
/// INT8 GEMM oracle and host-side helpers (plain C++, never links CUDA):
///  - exact INT64 reference for row-major signed INT8 A[M,K] x B[K,N] -> C[M,N];
///  - the DP4A tiled kernel's packing: 4 int8 along K per int32 word, final group zero-padded;
///  - the fused-epilogue oracle (acc x row scale x column scale + bias, in float64);
///  - deterministic fills and the shape suites of VRAMFlow stages 01/02 (seed 003) and the large suite.

#include <cstdint>
#include <string>
#include <vector>

namespace ws::ref {

/// C[m,n] = sum_k A[m,k] * B[k,n] in INT64. A: [M,K] row-major; B: [K,N] row-major (ldb = N).
void gemm_s8s8s64(const int8_t* a, const int8_t* b, int64_t* c, int64_t m, int64_t n, int64_t k);
/// Same, B given transposed: bt [N,K] row-major (a weight stored [out, in]).
void gemm_s8s8s64_bt(const int8_t* a, const int8_t* bt, int64_t* c, int64_t m, int64_t n, int64_t k);
/// One output of A[M,K] x B[K,N] (row-major B) in INT64.
int64_t gemm_s8_dot(const int8_t* a, const int8_t* b, int64_t n, int64_t k, int64_t row, int64_t col);

/// Number of 4-byte groups along K: ceil(K / 4).
inline int64_t k_groups(int64_t k) { return (k + 3) / 4; }
/// A [M,K] -> [M, ceil(K/4)] int32 words; byte j of word g holds A[m, 4g + j] (little-endian), 0 past K.
std::vector<int32_t> pack_a_k4(const int8_t* a, int64_t m, int64_t k);
/// B [K,N] -> Bt [N, ceil(K/4)] words (B transposed, grouped along K), 0 past K.
std::vector<int32_t> pack_bt_k4(const int8_t* b, int64_t k, int64_t n);
/// B [K,N] -> Bt [N,K] int8 (the K-contiguous weight layout the tensor-core kernel reads).
std::vector<int8_t> transpose_s8(const int8_t* b, int64_t k, int64_t n);

/// out[m,n] = acc[m,n] * row_scale[m] * col_scale[n] (+ bias[n] when bias != nullptr), float64.
void gemm_epilogue_f64(const int64_t* acc, const float* row_scale, const float* col_scale, const float* bias,
                       double* out, int64_t m, int64_t n);

// ---------------------------------------------------------------------------------------------
// Deterministic inputs and shape suites

enum class FillKind {
  kRandom,     ///< uniform in [-128, 127]
  kSmall,      ///< uniform in [-8, 7] (stage 01's square cases)
  kZeros,
  kExtremes,   ///< only -128 and 127 (deterministic pseudo-random signs): the signed extremes
};
const char* fill_kind_name(FillKind kind);
/// Fill `count` int8 values from a splitmix64 stream keyed by `seed`; same seed -> same bytes.
void fill_s8(int8_t* x, int64_t count, FillKind kind, uint64_t seed);
/// Floats uniform in [lo, hi) from a seeded stream (epilogue scales, bias).
void fill_f32(float* x, int64_t count, float lo, float hi, uint64_t seed);

struct GemmCase {
  std::string name;  ///< e.g. "random_17x23x19" (M x N x K)
  int64_t m = 0, n = 0, k = 0;
  FillKind fill = FillKind::kRandom;
  uint64_t seed = 0;  ///< A uses seed, B uses seed + 1
};

/// Stage 01 (naive): random and zeros at M=17,K=19,N=23; extremes with K=1..7; [-8,7] at 128^3..512^3.
std::vector<GemmCase> naive_suite();
/// Stage 02 small suite (exhaustive CPU check): squares, rectangles, tile-boundary shapes, zeros,
/// extremes with K=1..7, random + extremes at K = 31/32/33, 63/64/65, 127/128/129.
std::vector<GemmCase> small_suite();
/// Large suite: 1024^3, 2048^3, 4096^3, (M,K,N) = (8192,4096,4096), (8192,4096,16384), (8192,16384,4096).
/// `scale` < 1 shrinks every dimension (rounded to a multiple of 64, at least 64) for quick runs.
std::vector<GemmCase> large_suite(double scale = 1.0);

struct Position {
  int64_t row, col;
};
/// `count` deterministic output positions of an M x N result: the four corners first, then seeded.
std::vector<Position> check_positions(int64_t m, int64_t n, int count, uint64_t seed);

/// 2*M*N*K / seconds / 1e12.
inline double tops(int64_t m, int64_t n, int64_t k, double ms) {
  return 2.0 * double(m) * double(n) * double(k) / (ms * 1e-3) / 1e12;
}

}  // namespace ws::ref
