// linalg.cpp — ONNX Gemm-13 (https://onnx.ai/onnx/operators/onnx__Gemm.html) and MatMul-13
// (numpy.matmul semantics: 1-D operands promoted then squeezed, batch dims broadcast).
// Loops are ordered i-p-j (contiguous rows of B streamed into a row of Y) or, when B is
// transposed, as dot products of contiguous rows with eight partial sums, so both vectorise.

#include <string>

#include "reference/reference.h"

namespace ws::ref {
namespace {


// sum_p a[p*as] * b[p], eight partial sums.
inline float dot(const float* __restrict a, int64_t as, const float* __restrict b, int64_t k) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t p = 0;
  if (as == 1) {
    for (; p + 8 <= k; p += 8)
      for (int l = 0; l < 8; ++l) acc[l] += a[p + l] * b[p + l];
  } else {
    for (; p + 8 <= k; p += 8)
      for (int l = 0; l < 8; ++l) acc[l] += a[(p + l) * as] * b[p + l];
  }
  float s = 0.0f;
  for (; p < k; ++p) s += a[p * as] * b[p];
  return s + (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
}

// y[M,N] += alpha * A * B with A element (i,p) at a[i*ars + p*acs] and B [K,N] row-major.
void gemm_nn(const float* a, int64_t ars, int64_t acs, const float* __restrict b, float* __restrict y, int64_t m,
             int64_t n, int64_t k, float alpha) {
  constexpr int64_t kTileN = 1024;  // keep a slice of the Y row in L1 while streaming B rows
  for (int64_t j0 = 0; j0 < n; j0 += kTileN) {
    const int64_t tn = n - j0 < kTileN ? n - j0 : kTileN;
    for (int64_t i = 0; i < m; ++i) {
      float* __restrict yr = y + i * n + j0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = alpha * a[i * ars + p * acs];
        const float* __restrict br = b + p * n + j0;
        for (int64_t j = 0; j < tn; ++j) yr[j] += av * br[j];
      }
    }
  }
}

}  // namespace

void gemm(const float* a, const float* b, const float* c, std::span<const int64_t> c_dims, float* y, int64_t m,
          int64_t n, int64_t k, bool trans_a, bool trans_b, float alpha, float beta) {
  // Y = beta * C (broadcast) or 0.
  if (c) {
    const size_t cr = c_dims.size();
    const int64_t c_cols = cr >= 1 ? c_dims[cr - 1] : 1;
    const int64_t c_rows = cr >= 2 ? c_dims[cr - 2] : 1;
    const int64_t sj = c_cols == 1 ? 0 : 1;
    const int64_t si = c_rows == 1 ? 0 : c_cols;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = beta * c[i * si + j * sj];
  } else {
    for (int64_t i = 0; i < m * n; ++i) y[i] = 0.0f;
  }
  // A(i,p): a[i*K + p] or, transposed, a[p*M + i].
  const int64_t ars = trans_a ? 1 : k, acs = trans_a ? m : 1;
  if (!trans_b) {
    gemm_nn(a, ars, acs, b, y, m, n, k, alpha);
  } else {
    // B(p,j) = b[j*K + p]: each Y element is a dot product of A's row i with B's row j.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) y[i * n + j] += alpha * dot(a + i * ars, acs, b + j * k, k);
  }
}

Result<Dims> matmul_dims(std::span<const int64_t> a, std::span<const int64_t> b) {
  if (a.empty() || b.empty())
    return invalid_argument("MatMul operands must have rank >= 1, got " + dims_string(a) + " and " +
                            dims_string(b));
  const int64_t ka = a.back();
  const int64_t kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (ka != kb)
    return invalid_argument("MatMul shapes " + dims_string(a) + " and " + dims_string(b) +
                            " have mismatched inner dimensions " + std::to_string(ka) + " vs " +
                            std::to_string(kb));
  const std::span<const int64_t> ab = a.size() > 2 ? a.first(a.size() - 2) : std::span<const int64_t>{};
  const std::span<const int64_t> bb = b.size() > 2 ? b.first(b.size() - 2) : std::span<const int64_t>{};
  auto batch = broadcast_dims(ab, bb);
  if (!batch.is_ok())
    return invalid_argument("MatMul shapes " + dims_string(a) + " and " + dims_string(b) +
                            " have incompatible batch dimensions: " + batch.status().message());
  Dims out = std::move(batch).value();
  if (a.size() >= 2) out.push_back(a[a.size() - 2]);
  if (b.size() >= 2) out.push_back(b.back());
  return out;
}

void matmul(const float* a, std::span<const int64_t> a_dims, const float* b, std::span<const int64_t> b_dims,
            float* y, std::span<const int64_t> y_dims) {
  const size_t ar = a_dims.size(), br = b_dims.size();
  const int64_t m = ar >= 2 ? a_dims[ar - 2] : 1;
  const int64_t k = a_dims[ar - 1];
  const int64_t n = br >= 2 ? b_dims[br - 1] : 1;
  const size_t a_batch_rank = ar > 2 ? ar - 2 : 0;
  const size_t b_batch_rank = br > 2 ? br - 2 : 0;
  const size_t y_batch_rank = y_dims.size() - (ar >= 2 ? 1 : 0) - (br >= 2 ? 1 : 0);
  int64_t batches = 1;
  for (size_t i = 0; i < y_batch_rank; ++i) batches *= y_dims[i];
  if (batches == 0 || m == 0 || n == 0) return;
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Decompose bi over the y batch dims (right to left); broadcast dims of size 1 stay put.
    int64_t rem = bi, a_off = 0, b_off = 0, a_mult = 1, b_mult = 1;
    for (size_t t = 0; t < y_batch_rank; ++t) {
      const int64_t yd = y_dims[y_batch_rank - 1 - t];
      const int64_t coord = rem % yd;
      rem /= yd;
      if (t < a_batch_rank) {
        const int64_t d = a_dims[a_batch_rank - 1 - t];
        if (d != 1) a_off += coord * a_mult;
        a_mult *= d;
      }
      if (t < b_batch_rank) {
        const int64_t d = b_dims[b_batch_rank - 1 - t];
        if (d != 1) b_off += coord * b_mult;
        b_mult *= d;
      }
    }
    float* yp = y + bi * m * n;
    for (int64_t i = 0; i < m * n; ++i) yp[i] = 0.0f;
    // A [M,K] row-major; B [K,N] row-major (a 1-D B is [K,1], the same memory).
    if (n == 1) {  // matrix-vector: contiguous dot products
      for (int64_t i = 0; i < m; ++i) yp[i] = dot(a + a_off * m * k + i * k, 1, b + b_off * k, k);
    } else {
      gemm_nn(a + a_off * m * k, k, 1, b + b_off * k * n, yp, m, n, k, 1.0f);
    }
  }
}

}  // namespace ws::ref
