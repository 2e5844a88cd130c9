// pool.cpp — N-D pooling (spatial rank 1..3) and per-channel normalisation.
// Follows ONNX MaxPool-12 (dilations, Indices output with storage_order), AveragePool-11/19
// (count_include_pad, dilations), GlobalAveragePool-1 and BatchNormalization-15 (inference mode).
// ceil_mode is the caller's business: it sizes out[] so trailing windows may run past
// input + pad_end; such positions are skipped and never counted.

#include <cmath>
#include <limits>

#include "reference/reference.h"
#include "reference/window_geometry.h"

namespace ws::ref {
namespace {

using Geometry = detail::WindowGeometry;
using detail::make_window_geometry;

// Kernel taps k in [lo, hi) ⊆ [0, kernel) with lo_bound <= start + k*dil < hi_bound.
inline void tap_range(int64_t start, int64_t dil, int64_t kernel, int64_t lo_bound, int64_t hi_bound, int64_t& lo,
                      int64_t& hi) {
  const int64_t a = lo_bound - start;  // need k*dil >= a
  lo = a <= 0 ? 0 : (a + dil - 1) / dil;
  const int64_t b = hi_bound - 1 - start;  // need k*dil <= b
  hi = b < 0 ? 0 : b / dil + 1;
  if (hi > kernel) hi = kernel;
  if (lo > hi) lo = hi;
}

}  // namespace

void max_pool_nd(const float* x, float* y, int64_t* indices, int storage_order, const PoolParams& p) {
  const Geometry g = make_window_geometry(p);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
    const float* xp = x + nc * in_plane;
    float* yp = y + nc * out_plane;
    int64_t* ip = indices ? indices + nc * out_plane : nullptr;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      const int64_t sd = od * g.s[0] - g.pb[0];
      int64_t kd0, kd1;
      tap_range(sd, g.d[0], g.k[0], 0, g.in[0], kd0, kd1);
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const int64_t sh = oh * g.s[1] - g.pb[1];
        int64_t kh0, kh1;
        tap_range(sh, g.d[1], g.k[1], 0, g.in[1], kh0, kh1);
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          const int64_t sw = ow * g.s[2] - g.pb[2];
          int64_t kw0, kw1;
          tap_range(sw, g.d[2], g.k[2], 0, g.in[2], kw0, kw1);
          float best = neg_inf;
          int64_t bd = -1, bh = -1, bw = -1;
          for (int64_t kd = kd0; kd < kd1; ++kd) {
            const int64_t id = sd + kd * g.d[0];
            for (int64_t kh = kh0; kh < kh1; ++kh) {
              const int64_t ih = sh + kh * g.d[1];
              const float* row = xp + (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = kw0; kw < kw1; ++kw) {
                const int64_t iw = sw + kw * g.d[2];
                const float v = row[iw];
                // First maximum in window order wins; the first real element replaces the
                // -inf start even when it is itself -inf so that the index is always valid.
                if (v > best || bd < 0) {
                  best = v;
                  bd = id;
                  bh = ih;
                  bw = iw;
                }
              }
            }
          }
          const int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
          yp[o] = bd < 0 ? neg_inf : best;
          if (ip) {
            int64_t idx = -1;  // a window entirely in padding has no index
            if (bd >= 0)
              idx = storage_order == 0 ? (bd * g.in[1] + bh) * g.in[2] + bw
                                       : bd + bh * g.in[0] + bw * g.in[0] * g.in[1];
            ip[o] = idx < 0 ? -1 : nc * in_plane + idx;
          }
        }
      }
    }
  }
}

void average_pool_nd(const float* x, float* y, const PoolParams& p) {
  const Geometry g = make_window_geometry(p);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
    const float* xp = x + nc * in_plane;
    float* yp = y + nc * out_plane;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      const int64_t sd = od * g.s[0] - g.pb[0];
      int64_t kd0, kd1, pd0, pd1;
      tap_range(sd, g.d[0], g.k[0], 0, g.in[0], kd0, kd1);
      tap_range(sd, g.d[0], g.k[0], -g.pb[0], g.in[0] + g.pe[0], pd0, pd1);
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const int64_t sh = oh * g.s[1] - g.pb[1];
        int64_t kh0, kh1, ph0, ph1;
        tap_range(sh, g.d[1], g.k[1], 0, g.in[1], kh0, kh1);
        tap_range(sh, g.d[1], g.k[1], -g.pb[1], g.in[1] + g.pe[1], ph0, ph1);
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          const int64_t sw = ow * g.s[2] - g.pb[2];
          int64_t kw0, kw1, pw0, pw1;
          tap_range(sw, g.d[2], g.k[2], 0, g.in[2], kw0, kw1);
          tap_range(sw, g.d[2], g.k[2], -g.pb[2], g.in[2] + g.pe[2], pw0, pw1);
          float sum = 0.0f;
          for (int64_t kd = kd0; kd < kd1; ++kd) {
            const int64_t id = sd + kd * g.d[0];
            for (int64_t kh = kh0; kh < kh1; ++kh) {
              const int64_t ih = sh + kh * g.d[1];
              const float* row = xp + (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = kw0; kw < kw1; ++kw) sum += row[sw + kw * g.d[2]];
            }
          }
          const int64_t count = p.count_include_pad ? (pd1 - pd0) * (ph1 - ph0) * (pw1 - pw0)
                                                    : (kd1 - kd0) * (kh1 - kh0) * (kw1 - kw0);
          // A window with nothing to count (only possible past the pads) yields NaN like 0/0.
          yp[(od * g.out[1] + oh) * g.out[2] + ow] =
              count > 0 ? sum / static_cast<float>(count) : std::numeric_limits<float>::quiet_NaN();
        }
      }
    }
  }
}

void global_average_pool(const float* x, float* y, int64_t n, int64_t c, int64_t spatial) {
  for (int64_t i = 0; i < n * c; ++i) {
    const float* xp = x + i * spatial;
    // Eight partial sums let the compiler vectorise without reassociation flags.
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= spatial; j += 8)
      for (int l = 0; l < 8; ++l) acc[l] += xp[j + l];
    float sum = 0.0f;
    for (; j < spatial; ++j) sum += xp[j];
    sum += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    y[i] = spatial > 0 ? sum / static_cast<float>(spatial) : std::numeric_limits<float>::quiet_NaN();
  }
}

void batch_norm_inference(const float* x, const float* scale, const float* bias, const float* mean,
                          const float* var, float epsilon, float* y, int64_t n, int64_t c, int64_t spatial) {
  for (int64_t ch = 0; ch < c; ++ch) {
    const float inv = 1.0f / std::sqrt(var[ch] + epsilon);
    const float a = scale[ch] * inv;
    const float m = mean[ch], b = bias[ch];
    for (int64_t i = 0; i < n; ++i) {
      const float* xp = x + (i * c + ch) * spatial;
      float* yp = y + (i * c + ch) * spatial;
      for (int64_t j = 0; j < spatial; ++j) yp[j] = (xp[j] - m) * a + b;
    }
  }
}

}  // namespace ws::ref
