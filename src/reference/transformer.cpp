// CPU oracle for LTX-Video's transformer ops (see transformer.h for the math and the layouts).
#include "reference/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

namespace ws::ref {
namespace {

/// Runs fn(begin, end) over [0, count) split into contiguous chunks, one per worker; inline when the
/// work (count * cost_per_item) is small or only one worker is configured.
template <typename Fn>
void parallel_for(int64_t count, double cost_per_item, Fn&& fn) {
  const int workers = reference_threads();
  if (workers <= 1 || count <= 1 || static_cast<double>(count) * cost_per_item < 1e6) {
    fn(int64_t{0}, count);
    return;
  }
  const int64_t n = std::min<int64_t>(workers, count);
  const int64_t chunk = (count + n - 1) / n;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const int64_t begin = t * chunk, end = std::min(count, begin + chunk);
    if (begin >= end) break;
    threads.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  for (auto& th : threads) th.join();
}

/// Dot product of two float vectors in double (four independent accumulators, fixed order).
double dot_f64(const float* a, const float* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += static_cast<double>(a[i]) * b[i];
    s1 += static_cast<double>(a[i + 1]) * b[i + 1];
    s2 += static_cast<double>(a[i + 2]) * b[i + 2];
    s3 += static_cast<double>(a[i + 3]) * b[i + 3];
  }
  for (; i < n; ++i) s0 += static_cast<double>(a[i]) * b[i];
  return (s0 + s1) + (s2 + s3);
}

/// torch.linspace(start, end, steps) for float on one element (the scalar formula of ATen's CPU kernel
/// and of its CUDA kernel): start + step * i for i < steps / 2, else end - step * (steps - 1 - i).
float linspace_at(float start, float end, int64_t steps, int64_t i) {
  if (steps == 1) return start;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t halfway = steps / 2;
  return i < halfway ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - i - 1);
}

/// Fill cos/sin rows from per-token normalised coordinates c[3] (see ltx_rope_tables).
void rope_row(const LtxRopeParams& p, const float* freqs, int64_t n, const float c[3], float* cos_row,
              float* sin_row) {
  const int64_t pad = p.dim % 6;
  for (int64_t i = 0; i < pad; ++i) {
    cos_row[i] = 1.0f;
    sin_row[i] = 0.0f;
  }
  float g2[3];
  for (int a = 0; a < 3; ++a) g2[a] = c[a] * 2.0f - 1.0f;
  for (int64_t k = 0; k < n; ++k) {
    for (int a = 0; a < 3; ++a) {
      const float angle = freqs[k] * g2[a];
      const float cs = std::cos(angle), sn = std::sin(angle);
      const int64_t at = pad + 2 * (3 * k + a);
      cos_row[at] = cs;
      cos_row[at + 1] = cs;
      sin_row[at] = sn;
      sin_row[at + 1] = sn;
    }
  }
}

/// freq[k] = (theta ^ linspace(0, 1, n)[k] * pi) / 2 in float, diffusers' order.
std::vector<float> rope_freqs(const LtxRopeParams& p) {
  const int64_t n = p.dim / 6;
  std::vector<float> freqs(static_cast<size_t>(n));
  const float pi = static_cast<float>(M_PI);
  for (int64_t k = 0; k < n; ++k) {
    const float e = linspace_at(0.0f, 1.0f, n, k);
    float f = std::pow(p.theta, e);
    f = f * pi;
    f = f / 2.0f;
    freqs[static_cast<size_t>(k)] = f;
  }
  return freqs;
}

}  // namespace

int reference_threads() {
  static const int threads = [] {
    if (const char* env = std::getenv("WS_REF_THREADS")) {
      const int v = std::atoi(env);
      if (v >= 1) return v;
    }
    const unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
  }();
  return threads;
}

void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float var = static_cast<float>(ss / static_cast<double>(dim));
    const float inv = 1.0f / std::sqrt(var + eps);
    for (int64_t i = 0; i < dim; ++i) {
      float v = xr[i] * inv;
      if (weight != nullptr) v = v * weight[i];
      yr[i] = v;
    }
  }
}

void layer_norm_noaffine(const float* x, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(dim);
    double sq = 0.0;
    for (int64_t i = 0; i < dim; ++i) {
      const double d = xr[i] - mean;
      sq += d * d;
    }
    const double var = sq / static_cast<double>(dim);
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
    for (int64_t i = 0; i < dim; ++i) yr[i] = static_cast<float>((xr[i] - mean) * inv);
  }
}

void adaln_modulate(const float* x, const float* shift, const float* scale, float* y, int64_t batch,
                    int64_t seq, int64_t dim, int64_t mod_seq, int64_t mod_stride) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t m = b * mod_seq + (mod_seq == 1 ? 0 : s);
      const float* sh = shift + m * mod_stride;
      const float* sc = scale + m * mod_stride;
      const float* xr = x + (b * seq + s) * dim;
      float* yr = y + (b * seq + s) * dim;
      for (int64_t i = 0; i < dim; ++i) {
        const float one_plus = 1.0f + sc[i];
        const float prod = xr[i] * one_plus;
        yr[i] = prod + sh[i];
      }
    }
  }
}

void gated_residual(float* x, const float* y, const float* gate, int64_t batch, int64_t seq, int64_t dim,
                    int64_t mod_seq, int64_t mod_stride) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      float* xr = x + (b * seq + s) * dim;
      const float* yr = y + (b * seq + s) * dim;
      if (gate == nullptr) {
        for (int64_t i = 0; i < dim; ++i) xr[i] = xr[i] + yr[i];
        continue;
      }
      const int64_t m = b * mod_seq + (mod_seq == 1 ? 0 : s);
      const float* g = gate + m * mod_stride;
      for (int64_t i = 0; i < dim; ++i) {
        const float prod = yr[i] * g[i];
        xr[i] = xr[i] + prod;
      }
    }
  }
}

void ltx_rope_tables(const LtxRopeParams& params, int64_t frames, int64_t height, int64_t width,
                     const float* scale, float* cos, float* sin) {
  const std::vector<float> freqs = rope_freqs(params);
  const int64_t n = params.dim / 6;
  int64_t s = 0;
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t h = 0; h < height; ++h) {
      for (int64_t w = 0; w < width; ++w, ++s) {
        float c[3] = {static_cast<float>(f), static_cast<float>(h), static_cast<float>(w)};
        if (scale != nullptr) {
          // diffusers: grid * scale * patch / base, left to right, in float.
          c[0] = c[0] * scale[0];
          c[0] = c[0] * static_cast<float>(params.patch_size_t);
          c[0] = c[0] / params.base_frames;
          c[1] = c[1] * scale[1];
          c[1] = c[1] * static_cast<float>(params.patch_size);
          c[1] = c[1] / params.base_height;
          c[2] = c[2] * scale[2];
          c[2] = c[2] * static_cast<float>(params.patch_size);
          c[2] = c[2] / params.base_width;
        }
        rope_row(params, freqs.data(), n, c, cos + s * params.dim, sin + s * params.dim);
      }
    }
  }
}

void ltx_rope_tables_from_coords(const LtxRopeParams& params, const float* coords, int64_t seq, float* cos,
                                 float* sin) {
  const std::vector<float> freqs = rope_freqs(params);
  const int64_t n = params.dim / 6;
  for (int64_t s = 0; s < seq; ++s) {
    const float c[3] = {coords[s] / params.base_frames, coords[seq + s] / params.base_height,
                        coords[2 * seq + s] / params.base_width};
    rope_row(params, freqs.data(), n, c, cos + s * params.dim, sin + s * params.dim);
  }
}

void rope_apply_interleaved(const float* x, const float* cos, const float* sin, float* y, int64_t rows,
                            int64_t dim) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float* cr = cos + r * dim;
    const float* sr = sin + r * dim;
    float* yr = y + r * dim;
    for (int64_t i = 0; i + 1 < dim; i += 2) {
      const float x0 = xr[i], x1 = xr[i + 1];
      // diffusers: x * cos + rotated * sin, rotated pair = (-x1, x0); products rounded, then summed.
      const float a0 = x0 * cr[i], b0 = -x1 * sr[i];
      const float a1 = x1 * cr[i + 1], b1 = x0 * sr[i + 1];
      yr[i] = a0 + b0;
      yr[i + 1] = a1 + b1;
    }
  }
}

void gelu_tanh(const float* x, float* y, int64_t count) {
  // ATen: kBeta = sqrt(2) * (2 / sqrt(pi)) * 0.5 = sqrt(2 / pi), kKappa = 0.044715.
  const float beta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
  const float kappa = 0.044715f;
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float cube = v * v * v;
    const float inner = beta * (v + kappa * cube);
    y[i] = 0.5f * v * (1.0f + std::tanh(inner));
  }
}

void silu(const float* x, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void linear(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t n, int64_t k) {
  // Cache tiling only: a tile of W rows (~256 KiB) is reused by every row of the thread's chunk, four rows of
  // x at a time. Every output is the same sequential double sum over k whatever the tiling or thread count.
  const int64_t ctile = std::max<int64_t>(4, (256 * 1024) / std::max<int64_t>(1, k * 4));
  parallel_for(m, static_cast<double>(n) * static_cast<double>(k), [&](int64_t begin, int64_t end) {
    for (int64_t c0 = 0; c0 < n; c0 += ctile) {
      const int64_t c1 = std::min(n, c0 + ctile);
      int64_t r = begin;
      for (; r + 4 <= end; r += 4) {
        const float* x0 = x + r * k;
        const float* x1 = x0 + k;
        const float* x2 = x1 + k;
        const float* x3 = x2 + k;
        for (int64_t c = c0; c < c1; ++c) {
          const float* wc = w + c * k;
          double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
          for (int64_t q = 0; q < k; ++q) {
            const double wq = wc[q];
            a0 += x0[q] * wq;
            a1 += x1[q] * wq;
            a2 += x2[q] * wq;
            a3 += x3[q] * wq;
          }
          const double b = bias != nullptr ? static_cast<double>(bias[c]) : 0.0;
          y[r * n + c] = static_cast<float>(a0 + b);
          y[(r + 1) * n + c] = static_cast<float>(a1 + b);
          y[(r + 2) * n + c] = static_cast<float>(a2 + b);
          y[(r + 3) * n + c] = static_cast<float>(a3 + b);
        }
      }
      for (; r < end; ++r) {
        const float* xr = x + r * k;
        for (int64_t c = c0; c < c1; ++c) {
          const float* wc = w + c * k;
          double a = 0;
          for (int64_t q = 0; q < k; ++q) a += xr[q] * static_cast<double>(wc[q]);
          y[r * n + c] = static_cast<float>(a + (bias != nullptr ? static_cast<double>(bias[c]) : 0.0));
        }
      }
    }
  });
}

void sdpa(const float* q, const float* k, const float* v, const float* bias, float* out, int64_t batch,
          int64_t heads, int64_t sq, int64_t skv, int64_t head_dim, float scale) {
  const double sc = scale > 0.0f ? static_cast<double>(scale) : 1.0 / std::sqrt(static_cast<double>(head_dim));
  const int64_t row = heads * head_dim;  // stride between tokens
  parallel_for(batch * heads, static_cast<double>(sq) * skv * head_dim * 2, [&](int64_t begin, int64_t end) {
    std::vector<double> p(static_cast<size_t>(skv));
    std::vector<double> acc(static_cast<size_t>(head_dim));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / heads, h = bh % heads;
      const float* kb = k + b * skv * row + h * head_dim;
      const float* vb = v + b * skv * row + h * head_dim;
      const float* biasb = bias != nullptr ? bias + b * skv : nullptr;
      for (int64_t i = 0; i < sq; ++i) {
        const float* qi = q + (b * sq + i) * row + h * head_dim;
        double mx = -INFINITY;
        for (int64_t j = 0; j < skv; ++j) {
          double s = dot_f64(qi, kb + j * row, head_dim) * sc;
          if (biasb != nullptr) s += biasb[j];
          p[static_cast<size_t>(j)] = s;
          mx = std::max(mx, s);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < skv; ++j) {
          const double e = std::exp(p[static_cast<size_t>(j)] - mx);
          p[static_cast<size_t>(j)] = e;
          sum += e;
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < skv; ++j) {
          const double pj = p[static_cast<size_t>(j)] / sum;
          const float* vj = vb + j * row;
          for (int64_t d = 0; d < head_dim; ++d) acc[static_cast<size_t>(d)] += pj * vj[d];
        }
        float* oi = out + (b * sq + i) * row + h * head_dim;
        for (int64_t d = 0; d < head_dim; ++d) oi[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
      }
    }
  });
}

void timestep_sinusoid(const float* t, float* out, int64_t count, int64_t channels, bool flip_sin_to_cos,
                       float downscale_freq_shift, float max_period) {
  const int64_t half = channels / 2;
  std::vector<float> freq(static_cast<size_t>(half));
  const float neg_log = static_cast<float>(-std::log(static_cast<double>(max_period)));
  const float denom = static_cast<float>(half) - downscale_freq_shift;
  for (int64_t i = 0; i < half; ++i) {
    float e = neg_log * static_cast<float>(i);
    e = e / denom;
    freq[static_cast<size_t>(i)] = std::exp(e);
  }
  for (int64_t r = 0; r < count; ++r) {
    float* o = out + r * channels;
    for (int64_t i = 0; i < half; ++i) {
      const float arg = t[r] * freq[static_cast<size_t>(i)];
      const float sn = std::sin(arg), cs = std::cos(arg);
      o[i] = flip_sin_to_cos ? cs : sn;
      o[half + i] = flip_sin_to_cos ? sn : cs;
    }
    if (channels % 2 == 1) o[channels - 1] = 0.0f;
  }
}

}  // namespace ws::ref
