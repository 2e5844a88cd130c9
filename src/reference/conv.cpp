// conv.cpp — direct N-D convolution (spatial rank 1..3), ONNX Conv-11
// (https://onnx.ai/onnx/operators/onnx__Conv.html): grouped, strided, dilated, explicit pads
// (auto_pad resolved by the caller), optional bias. Float32 accumulation.
//
// Strategy (no allocation, vectorisable inner loops):
//  * 1x1, stride 1, no pad: per group a GEMM Y[oc, S] = W[oc, ic] * X[ic, S], tiled over the
//    spatial axis with four output rows accumulated at a time.
//  * otherwise: for each output channel and block of output rows, iterate input channels and
//    kernel taps outermost and accumulate a contiguous run of each output row
//    (y[o] += w * x[o*stride + off]) over the precomputed range of o whose input lies inside the
//    image, so padding costs no per-element branch. 1-D and 2-D are the 3-D loop with leading
//    extents of 1.

#include <algorithm>

#include "reference/reference.h"
#include "reference/window_geometry.h"

namespace ws::ref {
namespace {

// Output positions o in [lo, hi) ⊆ [0, out) with 0 <= o*s + off < in.
inline void valid_range(int64_t in, int64_t out, int64_t s, int64_t off, int64_t& lo, int64_t& hi) {
  // ceil(-off / s) without forming -off + s - 1, which overflows for a stride near 2^63 (ONNX-legal with SAME
  // padding: one output position; onnx_structure_fuzz, 2026-12-01).
  lo = off >= 0 ? 0 : (-off) / s + ((-off) % s != 0 ? 1 : 0);
  const int64_t t = in - 1 - off;
  hi = t < 0 ? 0 : t / s + 1;
  if (hi > out) hi = out;
  if (lo > hi) lo = hi;
}

template <int kStride>
inline void axpy_strided(float* __restrict y, const float* __restrict x, float w, int64_t n, int64_t stride) {
  const int64_t s = kStride > 0 ? kStride : stride;
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i * s];
}

// Y[0..m, 0..s) (+)= W[m, k] * X[k, s]; rows of Y/X have length s, W rows have length k.
void pointwise_gemm(const float* __restrict x, const float* __restrict w, const float* bias, float* __restrict y,
                    int64_t m, int64_t k, int64_t s) {
  constexpr int64_t kTile = 512;
  for (int64_t s0 = 0; s0 < s; s0 += kTile) {
    const int64_t ts = std::min(kTile, s - s0);
    int64_t oc = 0;
    for (; oc + 4 <= m; oc += 4) {
      float* __restrict y0 = y + (oc + 0) * s + s0;
      float* __restrict y1 = y + (oc + 1) * s + s0;
      float* __restrict y2 = y + (oc + 2) * s + s0;
      float* __restrict y3 = y + (oc + 3) * s + s0;
      const float b0 = bias ? bias[oc] : 0.0f, b1 = bias ? bias[oc + 1] : 0.0f;
      const float b2 = bias ? bias[oc + 2] : 0.0f, b3 = bias ? bias[oc + 3] : 0.0f;
      for (int64_t j = 0; j < ts; ++j) {
        y0[j] = b0;
        y1[j] = b1;
        y2[j] = b2;
        y3[j] = b3;
      }
      const float* w0 = w + (oc + 0) * k;
      const float* w1 = w + (oc + 1) * k;
      const float* w2 = w + (oc + 2) * k;
      const float* w3 = w + (oc + 3) * k;
      for (int64_t ic = 0; ic < k; ++ic) {
        const float* __restrict xr = x + ic * s + s0;
        const float a0 = w0[ic], a1 = w1[ic], a2 = w2[ic], a3 = w3[ic];
        for (int64_t j = 0; j < ts; ++j) {
          const float xv = xr[j];
          y0[j] += a0 * xv;
          y1[j] += a1 * xv;
          y2[j] += a2 * xv;
          y3[j] += a3 * xv;
        }
      }
    }
    for (; oc < m; ++oc) {
      float* __restrict yr = y + oc * s + s0;
      const float b = bias ? bias[oc] : 0.0f;
      for (int64_t j = 0; j < ts; ++j) yr[j] = b;
      const float* wr = w + oc * k;
      for (int64_t ic = 0; ic < k; ++ic) {
        const float* __restrict xr = x + ic * s + s0;
        const float a = wr[ic];
        for (int64_t j = 0; j < ts; ++j) yr[j] += a * xr[j];
      }
    }
  }
}

using Geometry = detail::WindowGeometry;

template <int kStrideW>
void conv_direct(const float* x, const float* w, const float* bias, float* y, const ConvParams& p, const Geometry& g) {
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_rows = g.out[0] * g.out[1];
  const int64_t ow_n = g.out[2];
  const int64_t out_plane = out_rows * ow_n;
  const int64_t ksize = g.k[0] * g.k[1] * g.k[2];
  // Rows per block: keep the block of Y resident in L1 while all taps accumulate into it.
  const int64_t block_rows = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ow_n));
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t grp = 0; grp < p.groups; ++grp) {
      for (int64_t ocg = 0; ocg < cout_g; ++ocg) {
        const int64_t oc = grp * cout_g + ocg;
        float* yc = y + (n * p.c_out + oc) * out_plane;
        const float b = bias ? bias[oc] : 0.0f;
        for (int64_t i = 0; i < out_plane; ++i) yc[i] = b;
        const float* wc = w + oc * cin_g * ksize;
        for (int64_t r0 = 0; r0 < out_rows; r0 += block_rows) {
          const int64_t r1 = std::min(out_rows, r0 + block_rows);
          for (int64_t icg = 0; icg < cin_g; ++icg) {
            const float* xc = x + (n * p.c_in + grp * cin_g + icg) * in_plane;
            const float* wk = wc + icg * ksize;
            for (int64_t kd = 0; kd < g.k[0]; ++kd) {
              const int64_t offd = kd * g.d[0] - g.pb[0];
              for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                const int64_t offh = kh * g.d[1] - g.pb[1];
                for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                  const float wv = wk[(kd * g.k[1] + kh) * g.k[2] + kw];
                  const int64_t offw = kw * g.d[2] - g.pb[2];
                  int64_t lo, hi;
                  valid_range(g.in[2], ow_n, g.s[2], offw, lo, hi);
                  if (lo >= hi) continue;
                  int64_t od = r0 / g.out[1], oh = r0 % g.out[1];
                  for (int64_t r = r0; r < r1; ++r) {
                    const int64_t id = od * g.s[0] + offd, ih = oh * g.s[1] + offh;
                    if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1]) {
                      const float* xrow = xc + (id * g.in[1] + ih) * g.in[2];
                      axpy_strided<kStrideW>(yc + r * ow_n + lo, xrow + lo * g.s[2] + offw, wv, hi - lo, g.s[2]);
                    }
                    if (++oh == g.out[1]) {
                      oh = 0;
                      ++od;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

void conv_nd(const float* x, const float* w, const float* bias, float* y, const ConvParams& p) {
  const Geometry g = detail::make_window_geometry(p);
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  if (p.n == 0 || p.c_out == 0 || out_plane == 0) return;

  bool pointwise = true;
  for (int i = 0; i < 3; ++i)
    pointwise = pointwise && g.k[i] == 1 && g.s[i] == 1 && g.pb[i] == 0 && g.out[i] == g.in[i];
  if (pointwise) {
    const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
    const int64_t plane = out_plane;
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t grp = 0; grp < p.groups; ++grp)
        pointwise_gemm(x + (n * p.c_in + grp * cin_g) * plane, w + grp * cout_g * cin_g,
                       bias ? bias + grp * cout_g : nullptr, y + (n * p.c_out + grp * cout_g) * plane, cout_g,
                       cin_g, plane);
    return;
  }
  if (g.s[2] == 1)
    conv_direct<1>(x, w, bias, y, p, g);
  else if (g.s[2] == 2)
    conv_direct<2>(x, w, bias, y, p, g);
  else
    conv_direct<0>(x, w, bias, y, p, g);
}

}  // namespace ws::ref
