// WarpStream's transformer kernels (src/kernels/transformer, transformer.h) vs the CPU reference
// (src/reference/transformer.h, fp32 with double reductions) on the same bf16-rounded inputs.
// Random inputs: one seed per operand, printed (WS_SEED=<n> replays the run; tests/support/seed.h). Outputs are
// poisoned with NaN (0xFF bytes: bf16 0xFFFF) before each launch, so an unwritten element fails. A mismatch
// prints the first bad index, expected/actual around it and the input operands (tests/support/compare_dump.h;
// WS_DUMP_DIR=<dir> writes them in full).
// Tolerances (|got − ref| <= abs + rel·|ref|), stated per case below; the common one, kOneRounding
// {abs 1e-4, rel 4e-3}: the kernels compute in fp32 and round each output to bf16 once (half an ulp = 2^-9 =
// 0.00195 relative), rel 4e-3 is one bf16 ulp; abs 1e-4 covers fp32 summation-order noise near zero.
// Shapes: D = 16 (diffusers' tiny config), 2048 and 4096 (2B / 13B), plus dims that take the generic paths
// (not a multiple of 8, or > 8192); S not a multiple of any tile; SDPA head dims 8/40/64/128, Sq not a
// multiple of the 128-query tile, Skv = 128 with masked keys.
// Selfcheck: ws_gpu_tests --gtest_filter='TransformerKernels*' (skips without a CUDA device).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/transformer/transformer.h"
#include "reference/transformer.h"
#include "support/compare_dump.h"
#include "support/cuda_check.h"
#include "support/seed.h"

namespace ws {
namespace {

using kernels::AdaLnTable;
using kernels::NormKind;
using test::Tolerance;

constexpr Tolerance kOneRounding{1e-4, 4e-3};

bool device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define SKIP_WITHOUT_DEVICE() \
  if (!device_present()) GTEST_SKIP() << "no CUDA device"

struct Dev {
  void* p = nullptr;
  explicit Dev(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes < 16 ? 16 : bytes), cudaSuccess); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  __nv_bfloat16* bf() const { return static_cast<__nv_bfloat16*>(p); }
  float* f() const { return static_cast<float*>(p); }
};

float round_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

/// n values ~ U(lo, hi) from the operand's own seed (printed), rounded to bf16 (the kernels' inputs).
std::vector<float> rand_bf16(const std::string& what, size_t n, float lo, float hi) {
  std::mt19937 g(test::test_seed(what));
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = round_bf16(u(g));
  return v;
}
std::vector<float> rand_f32(const std::string& what, size_t n, float lo, float hi) {
  std::mt19937 g(test::test_seed(what));
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return v;
}

void up_bf16(const Dev& d, const std::vector<float>& v) {
  std::vector<__nv_bfloat16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = __float2bfloat16_rn(v[i]);
  WS_ASSERT_CUDA(::ws::test::upload_sync(d.p, h.data(), h.size() * 2));
}
void up_f32(const Dev& d, const std::vector<float>& v) {
  WS_ASSERT_CUDA(::ws::test::upload_sync(d.p, v.data(), v.size() * 4));
}
std::vector<float> down_bf16(const Dev& d, size_t n) {
  std::vector<__nv_bfloat16> h(n);
  WS_EXPECT_CUDA(cudaMemcpy(h.data(), d.p, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = __bfloat162float(h[i]);
  return v;
}
void poison(const Dev& d, size_t bytes) { WS_ASSERT_CUDA(::ws::test::memset_sync(d.p, 0xFF, bytes)); }

// ------------------------------------------------------------------------------------------------
// Host side of the AdaLN modulation: the [B·S', D] shift/scale/gate rows ada(t, c, ·) = table[c] + temb[...]
// (fp32 sum, as the kernel computes it) for chunk c.
struct HostAda {
  std::vector<float> table;  // [chunks, D]
  std::vector<float> temb;   // [mod_rows, row_stride]
  int64_t row_stride = 0, chunk_stride = 0;
  std::vector<float> chunk(int c, int64_t mod_rows, int64_t dim) const {
    std::vector<float> r(size_t(mod_rows * dim));
    for (int64_t m = 0; m < mod_rows; ++m)
      for (int64_t d = 0; d < dim; ++d)
        r[m * dim + d] = table[c * dim + d] + temb[m * row_stride + c * chunk_stride + d];
    return r;
  }
};

// ------------------------------------------------------------------------------------------------
struct NormCase {
  const char* name;
  NormKind kind;
  int64_t batch, seq, dim;
  bool modulate, per_token, table_fp32, weight, in_place;
  bool head_layout;  // output-head AdaLN: table [2, D], temb [B·S', D] shared by shift and scale
};

void run_norm_case(const NormCase& c) {
  SCOPED_TRACE(c.name);
  const int64_t rows = c.batch * c.seq, D = c.dim;
  const int64_t mod_seq = c.per_token ? c.seq : 1, mod_rows = c.batch * mod_seq;
  const std::string tag = std::string("norm ") + c.name;
  const std::vector<float> x = rand_bf16(tag + " x", size_t(rows * D), -2.0f, 2.0f);
  std::vector<float> w;
  if (c.weight) w = rand_bf16(tag + " weight", size_t(D), 0.5f, 1.5f);
  HostAda ada;
  const int chunks = c.head_layout ? 2 : 6;
  ada.row_stride = c.head_layout ? D : 6 * D;
  ada.chunk_stride = c.head_layout ? 0 : D;
  ada.table = c.table_fp32 ? rand_f32(tag + " table", size_t(chunks * D), -0.5f, 0.5f)
                           : rand_bf16(tag + " table", size_t(chunks * D), -0.5f, 0.5f);
  ada.temb = rand_bf16(tag + " temb", size_t(mod_rows * ada.row_stride), -0.5f, 0.5f);
  const int shift_c = c.head_layout ? kernels::kShiftOut : kernels::kShiftMlp;
  const int scale_c = c.head_layout ? kernels::kScaleOut : kernels::kScaleMlp;

  // Reference.
  std::vector<float> want(x.size());
  if (c.kind == NormKind::kRmsNorm) ref::rms_norm(x.data(), c.weight ? w.data() : nullptr, want.data(), rows, D, 1e-6f);
  else ref::layer_norm_noaffine(x.data(), want.data(), rows, D, 1e-6f);
  if (c.modulate) {
    const std::vector<float> shift = ada.chunk(shift_c, mod_rows, D), scale = ada.chunk(scale_c, mod_rows, D);
    ref::adaln_modulate(want.data(), shift.data(), scale.data(), want.data(), c.batch, c.seq, D, mod_seq, D);
  }

  // Device.
  Dev dx(x.size() * 2), dy(x.size() * 2), dw(size_t(D) * 2), dt(ada.table.size() * 4), de(ada.temb.size() * 2);
  up_bf16(dx, x);
  if (c.weight) up_bf16(dw, w);
  if (c.table_fp32) up_f32(dt, ada.table);
  else up_bf16(dt, ada.table);
  up_bf16(de, ada.temb);
  if (!c.in_place) poison(dy, x.size() * 2);
  AdaLnTable m;
  m.table = dt.p;
  m.table_fp32 = c.table_fp32;
  m.temb = de.bf();
  m.temb_row_stride = ada.row_stride;
  m.temb_chunk_stride = ada.chunk_stride;
  m.tokens_per_temb_row = c.per_token ? 1 : c.seq;
  __nv_bfloat16* out = c.in_place ? dx.bf() : dy.bf();
  const Status s = kernels::norm_modulate(c.kind, dx.bf(), out, rows, D, 1e-6f, c.weight ? dw.bf() : nullptr,
                                          c.modulate ? &m : nullptr, shift_c, scale_c, nullptr);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  WS_ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> got = down_bf16(c.in_place ? dx : dy, x.size());
  // Tolerance: kOneRounding (fp32 math, one bf16 rounding of the output).
  EXPECT_TRUE(test::near_dump(tag, got, want, kOneRounding, {{"x", x}, {"table", ada.table}, {"temb", ada.temb}}));
}

TEST(TransformerKernels, NormModulate) {
  SKIP_WITHOUT_DEVICE();
  const NormKind R = NormKind::kRmsNorm, L = NormKind::kLayerNorm;
  const NormCase cases[] = {
      // name                          kind B  S    D      mod    tok    f32    weight inpl   head
      {"rms mod D16 per-sample",        R, 2, 37, 16,    true,  false, false, false, false, false},
      {"rms mod D2048 per-sample",      R, 2, 37, 2048,  true,  false, false, false, false, false},
      {"rms mod D4096 per-token f32",   R, 2, 21, 4096,  true,  true,  true,  false, false, false},
      {"rms mod D2048 per-token inpl",  R, 1, 33, 2048,  true,  true,  false, false, true,  false},
      {"rms mod D2050 generic",         R, 2, 13, 2050,  true,  true,  false, false, false, false},
      {"rms mod D10000 generic",        R, 1, 5,  10000, true,  false, true,  false, false, false},
      {"rms plain D2048",               R, 2, 9,  2048,  false, false, false, false, false, false},
      {"rms weight D2048",              R, 2, 9,  2048,  false, false, false, true,  false, false},
      {"rms weight D40",                R, 3, 7,  40,    false, false, false, true,  true,  false},
      {"rms weight D18 generic",        R, 3, 7,  18,    false, false, false, true,  false, false},
      {"layer head D2048 per-sample",   L, 2, 37, 2048,  true,  false, true,  false, false, true},
      {"layer head D16 per-token",      L, 2, 37, 16,    true,  true,  false, false, false, true},
      {"layer head D4096 inpl",         L, 1, 11, 4096,  true,  false, false, false, true,  true},
      {"layer head D2050 generic",      L, 2, 5,  2050,  true,  true,  true,  false, false, true},
      {"layer plain D10000 generic",    L, 1, 3,  10000, false, false, false, false, false, false},
  };
  for (const NormCase& c : cases) run_norm_case(c);
}

// ------------------------------------------------------------------------------------------------
struct ResidualCase {
  const char* name;
  int64_t batch, seq, dim;
  bool gate, per_token, bias, fused_norm;
};

void run_residual_case(const ResidualCase& c) {
  SCOPED_TRACE(c.name);
  const int64_t rows = c.batch * c.seq, D = c.dim;
  const int64_t mod_seq = c.per_token ? c.seq : 1, mod_rows = c.batch * mod_seq;
  const std::string tag = std::string("residual ") + c.name;
  const std::vector<float> x = rand_bf16(tag + " x", size_t(rows * D), -2.0f, 2.0f);
  const std::vector<float> y = rand_bf16(tag + " y", size_t(rows * D), -2.0f, 2.0f);
  std::vector<float> bias(size_t(D), 0.0f);
  if (c.bias) bias = rand_bf16(tag + " bias", size_t(D), -0.5f, 0.5f);
  HostAda ada;
  ada.row_stride = 6 * D;
  ada.chunk_stride = D;
  ada.table = rand_bf16(tag + " table", size_t(6 * D), -0.5f, 0.5f);
  ada.temb = rand_bf16(tag + " temb", size_t(mod_rows * 6 * D), -0.5f, 0.5f);

  // Reference: x_new = bf16(x + (y + bias)·gate); norm_out = RMSNorm(x_new)·(1 + scale_mlp) + shift_mlp.
  std::vector<float> yb(y.size());
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t d = 0; d < D; ++d) yb[t * D + d] = y[t * D + d] + bias[d];
  std::vector<float> want_x = x;
  const std::vector<float> gate = ada.chunk(kernels::kGateMsa, mod_rows, D);
  ref::gated_residual(want_x.data(), yb.data(), c.gate ? gate.data() : nullptr, c.batch, c.seq, D, mod_seq, D);
  for (float& v : want_x) v = round_bf16(v);
  std::vector<float> want_n(x.size());
  ref::rms_norm(want_x.data(), nullptr, want_n.data(), rows, D, 1e-6f);
  const std::vector<float> shift = ada.chunk(kernels::kShiftMlp, mod_rows, D),
                           scale = ada.chunk(kernels::kScaleMlp, mod_rows, D);
  ref::adaln_modulate(want_n.data(), shift.data(), scale.data(), want_n.data(), c.batch, c.seq, D, mod_seq, D);

  Dev dx(x.size() * 2), dy(x.size() * 2), db(size_t(D) * 2), dn(x.size() * 2), dt(ada.table.size() * 2),
      de(ada.temb.size() * 2);
  up_bf16(dx, x);
  up_bf16(dy, y);
  up_bf16(db, bias);
  up_bf16(dt, ada.table);
  up_bf16(de, ada.temb);
  poison(dn, x.size() * 2);
  AdaLnTable m;
  m.table = dt.p;
  m.temb = de.bf();
  m.temb_row_stride = 6 * D;
  m.temb_chunk_stride = D;
  m.tokens_per_temb_row = c.per_token ? 1 : c.seq;
  const Status s = kernels::gated_residual_add(dx.bf(), dy.bf(), c.bias ? db.bf() : nullptr, rows, D,
                                               c.gate ? &m : nullptr, kernels::kGateMsa, nullptr,
                                               c.fused_norm ? dn.bf() : nullptr, 1e-6f, &m);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  WS_ASSERT_CUDA(cudaDeviceSynchronize());
  // Tolerance x: rel 8e-3 = one bf16 ulp (2^-7 relative at worst: fp32 fma vs mul+add can move a value across
  // a bf16 rounding boundary) + abs 1e-4. norm_out: abs 1e-3, rel 1.2e-2 = that ulp of x plus kOneRounding.
  EXPECT_TRUE(test::near_dump(tag + " x", down_bf16(dx, x.size()), want_x, Tolerance{1e-4, 8e-3},
                              {{"x", x}, {"y", y}, {"bias", bias}, {"gate", gate}}));
  if (c.fused_norm)
    EXPECT_TRUE(test::near_dump(tag + " norm_out", down_bf16(dn, x.size()), want_n, Tolerance{1e-3, 1.2e-2},
                                {{"x_new", want_x}, {"shift", shift}, {"scale", scale}}));
}

TEST(TransformerKernels, GatedResidual) {
  SKIP_WITHOUT_DEVICE();
  const ResidualCase cases[] = {
      // name                            B  S   D     gate   tok    bias   norm
      {"gate per-sample D2048",          2, 37, 2048, true,  false, false, false},
      {"gate per-token bias D4096",      1, 19, 4096, true,  true,  true,  false},
      {"no gate (attn2) D2048 + norm2",  2, 23, 2048, false, false, false, true},
      {"gate + bias + norm2 D16",        2, 37, 16,   true,  false, true,  true},
      {"gate per-token + norm2 D2050",   2, 7,  2050, true,  true,  true,  true},
      {"gate + norm2 D4096 per-token",   1, 13, 4096, true,  true,  false, true},
  };
  for (const ResidualCase& c : cases) run_residual_case(c);
}

// ------------------------------------------------------------------------------------------------
struct RopeCase {
  const char* name;
  int64_t batch, frames, height, width, dim;
  bool per_batch_tables, two_tensors, in_place, rope;
};

void run_rope_case(const RopeCase& c) {
  SCOPED_TRACE(c.name);
  const int64_t S = c.frames * c.height * c.width, rows = c.batch * S, D = c.dim;
  const std::string tag = std::string("qk_rope ") + c.name;
  const std::vector<float> q = rand_bf16(tag + " q", size_t(rows * D), -3.0f, 3.0f);
  const std::vector<float> k = rand_bf16(tag + " k", size_t(rows * D), -3.0f, 3.0f);
  const std::vector<float> wq = rand_bf16(tag + " wq", size_t(D), 0.5f, 1.5f);
  const std::vector<float> wk = rand_bf16(tag + " wk", size_t(D), 0.5f, 1.5f);
  // Tables: [S, D] from raw integer coords (diffusers' unit-test config), or [B, S, D] with a different
  // interpolation scale per sample (LTXPipeline's (8/fps, 32, 32), fps varied).
  ref::LtxRopeParams p;
  p.dim = D;
  const int64_t tables = c.per_batch_tables ? c.batch : 1;
  std::vector<float> cos(size_t(tables * S * D)), sin(cos.size());
  for (int64_t b = 0; b < tables; ++b) {
    const float scale[3] = {8.0f / (25.0f + 5.0f * b), 32.0f, 32.0f};
    ref::ltx_rope_tables(p, c.frames, c.height, c.width, c.per_batch_tables ? scale : nullptr, cos.data() + b * S * D,
                         sin.data() + b * S * D);
  }
  auto reference = [&](const std::vector<float>& x, const std::vector<float>& w) {
    std::vector<float> y(x.size());
    ref::rms_norm(x.data(), w.data(), y.data(), rows, D, 1e-5f);
    if (c.rope)
      for (int64_t b = 0; b < c.batch; ++b) {
        const int64_t tb = c.per_batch_tables ? b : 0;
        ref::rope_apply_interleaved(y.data() + b * S * D, cos.data() + tb * S * D, sin.data() + tb * S * D,
                                    y.data() + b * S * D, S, D);
      }
    return y;
  };
  const std::vector<float> want_q = reference(q, wq), want_k = reference(k, wk);

  Dev dq(q.size() * 2), dk(k.size() * 2), dyq(q.size() * 2), dyk(k.size() * 2), dwq(size_t(D) * 2),
      dwk(size_t(D) * 2), dc(cos.size() * 4), ds(sin.size() * 4);
  up_bf16(dq, q);
  up_bf16(dk, k);
  up_bf16(dwq, wq);
  up_bf16(dwk, wk);
  up_f32(dc, cos);
  up_f32(ds, sin);
  poison(dyq, q.size() * 2);
  poison(dyk, k.size() * 2);
  __nv_bfloat16* oq = c.in_place ? dq.bf() : dyq.bf();
  __nv_bfloat16* ok = c.in_place ? dk.bf() : dyk.bf();
  const Status s = kernels::qk_rmsnorm_rope(dq.bf(), oq, dwq.bf(), c.two_tensors ? dk.bf() : nullptr,
                                            c.two_tensors ? ok : nullptr, dwk.bf(), rows, S, D, 1e-5f,
                                            c.rope ? dc.f() : nullptr, c.rope ? ds.f() : nullptr,
                                            c.per_batch_tables ? S * D : 0, nullptr);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  WS_ASSERT_CUDA(cudaDeviceSynchronize());
  // Tolerance: kOneRounding (fp32 norm + rotation, one bf16 rounding; cos/sin are the same fp32 tables).
  EXPECT_TRUE(test::near_dump(tag + " q", down_bf16(c.in_place ? dq : dyq, q.size()), want_q, kOneRounding,
                              {{"q", q}, {"wq", wq}, {"cos", cos}, {"sin", sin}}));
  if (c.two_tensors)
    EXPECT_TRUE(test::near_dump(tag + " k", down_bf16(c.in_place ? dk : dyk, k.size()), want_k, kOneRounding,
                                {{"k", k}, {"wk", wk}, {"cos", cos}, {"sin", sin}}));
}

TEST(TransformerKernels, QkNormRope) {
  SKIP_WITHOUT_DEVICE();
  const RopeCase cases[] = {
      // name                                B  F  H  W  D      perB   q+k    inpl   rope
      {"tiny D16 (pad 4) q+k",               2, 2, 4, 5, 16,    false, true,  false, true},
      {"D2048 (pad 2) q+k per-batch tables", 2, 2, 3, 5, 2048,  true,  true,  false, true},
      {"D4096 (pad 4) q in place",           1, 1, 3, 7, 4096,  false, false, true,  true},
      {"D2048 q+k in place",                 2, 3, 2, 3, 2048,  false, true,  true,  true},
      {"D2050 generic q+k per-batch",        2, 1, 3, 3, 2050,  true,  true,  false, true},
      {"D10 generic",                        3, 2, 2, 2, 10,    false, true,  false, true},
      {"D10002 generic (no vec)",            1, 1, 1, 3, 10002, false, false, false, true},
      {"no rope (affine RMSNorm) D2048",     2, 1, 3, 3, 2048,  false, true,  false, false},
  };
  for (const RopeCase& c : cases) run_rope_case(c);
}

// ------------------------------------------------------------------------------------------------
TEST(TransformerKernels, GeluTanh) {
  SKIP_WITHOUT_DEVICE();
  struct Case {
    const char* name;
    int64_t rows, dim;
    bool bias, in_place;
  };
  const Case cases[] = {{"D16 bias", 37, 16, true, false},
                        {"D8192 bias", 19, 8192, true, false},
                        {"D16384 in place", 5, 16384, false, true},
                        {"D100 generic bias", 13, 100, true, false},
                        {"D7 generic in place", 11, 7, true, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string tag = std::string("gelu ") + c.name;
    const std::vector<float> x = rand_bf16(tag + " x", size_t(c.rows * c.dim), -5.0f, 5.0f);
    std::vector<float> bias(size_t(c.dim), 0.0f);
    if (c.bias) bias = rand_bf16(tag + " bias", size_t(c.dim), -1.0f, 1.0f);
    std::vector<float> want(x.size());
    for (int64_t t = 0; t < c.rows; ++t)
      for (int64_t d = 0; d < c.dim; ++d) want[t * c.dim + d] = x[t * c.dim + d] + bias[d];
    ref::gelu_tanh(want.data(), want.data(), int64_t(want.size()));
    Dev dx(x.size() * 2), dy(x.size() * 2), db(bias.size() * 2);
    up_bf16(dx, x);
    up_bf16(db, bias);
    poison(dy, x.size() * 2);
    __nv_bfloat16* out = c.in_place ? dx.bf() : dy.bf();
    const Status s = c.bias ? kernels::bias_gelu_tanh(dx.bf(), out, db.bf(), c.rows, c.dim, nullptr)
                            : kernels::gelu_tanh(dx.bf(), out, c.rows * c.dim, nullptr);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    WS_ASSERT_CUDA(cudaDeviceSynchronize());
    // Tolerance: abs 1e-5 (tanhf vs tanh near 1 + tanh → 0, |y| < 2e-6 there), rel 4e-3 (one bf16 rounding).
    EXPECT_TRUE(test::near_dump(tag, down_bf16(c.in_place ? dx : dy, x.size()), want, Tolerance{1e-5, 4e-3},
                                {{"x", x}, {"bias", bias}}));
  }
}

// ------------------------------------------------------------------------------------------------
struct SdpaCase {
  const char* name;
  kernels::SdpaDims d;
  int mask;  // 0 none, 1 diffusers' −10000 on some keys (every 7th + a padded tail per batch), 2 random U(−3, 0)
};

void run_sdpa_case(kernels::SdpaKernel kind, const SdpaCase& c) {
  SCOPED_TRACE(std::string(c.name) + " " + kernels::sdpa_kernel_name(kind));
  const kernels::SdpaDims& d = c.d;
  const int64_t inner = d.heads * d.head_dim;
  const std::string tag = std::string("sdpa ") + c.name;
  const std::vector<float> q = rand_bf16(tag + " q", size_t(d.batch * d.seq_q * inner), -3.0f, 3.0f);
  const std::vector<float> k = rand_bf16(tag + " k", size_t(d.batch * d.seq_kv * inner), -1.0f, 1.0f);
  const std::vector<float> v = rand_bf16(tag + " v", size_t(d.batch * d.seq_kv * inner), -1.0f, 1.0f);
  std::vector<float> bias(size_t(d.batch * d.seq_kv), 0.0f);
  if (c.mask == 1) {
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t j = 0; j < d.seq_kv; ++j) {
        const bool masked = (j % 7 == 3) || j >= d.seq_kv - 5 * (b + 1);
        if (masked && j > 0) bias[b * d.seq_kv + j] = -10000.0f;  // key 0 stays: no fully masked row
      }
  } else if (c.mask == 2) {
    bias = rand_f32(tag + " bias", bias.size(), -3.0f, 0.0f);
  }
  const float scale = 1.0f / std::sqrt(float(d.head_dim));
  std::vector<float> want(q.size());
  ref::sdpa(q.data(), k.data(), v.data(), c.mask ? bias.data() : nullptr, want.data(), d.batch, d.heads, d.seq_q,
            d.seq_kv, d.head_dim, scale);

  Dev dq(q.size() * 2), dk(k.size() * 2), dv(v.size() * 2), db(bias.size() * 4), dout(q.size() * 2);
  up_bf16(dq, q);
  up_bf16(dk, k);
  up_bf16(dv, v);
  up_f32(db, bias);
  poison(dout, q.size() * 2);
  const Status s = kernels::sdpa(kind, d, dq.bf(), dk.bf(), dv.bf(), c.mask ? db.f() : nullptr, scale, dout.bf(), nullptr);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  WS_ASSERT_CUDA(cudaDeviceSynchronize());
  // Tolerance kSimt: abs 2e-4 + rel 4e-3 — fp32 scores/softmax/accumulation (exp2f, online rescaling) vs the
  // double reference, one bf16 rounding of outputs that are convex combinations of |v| <= 1.
  // kMma: abs 4e-3 + rel 8e-3 — P is rounded to bf16 before P·V (and in the row sum), so every softmax weight
  // carries up to 2^-9 relative error twice: |error| <= 2^-8 · max|v| = 3.9e-3; plus the output rounding.
  const Tolerance tol = kind == kernels::SdpaKernel::kMma ? Tolerance{4e-3, 8e-3} : Tolerance{2e-4, 4e-3};
  EXPECT_TRUE(test::near_dump(tag + " " + kernels::sdpa_kernel_name(kind), down_bf16(dout, q.size()), want, tol,
                              {{"q", q}, {"k", k}, {"v", v}, {"bias", bias}}));
}

TEST(TransformerKernels, Sdpa) {
  SKIP_WITHOUT_DEVICE();
  const SdpaCase cases[] = {
      // name                               {B, Sq,  Skv, H, Dh}   mask
      {"Dh64 self S200",                    {2, 200, 200, 2, 64},  0},
      {"Dh64 cross Skv128 masked",          {2, 300, 128, 3, 64},  1},
      {"Dh128 Sq130 Skv77 random bias",     {1, 130, 77, 2, 128},  2},
      {"Dh128 cross Skv128 masked",         {2, 129, 128, 2, 128}, 1},
      {"Dh8 tiny self S512",                {2, 512, 512, 2, 8},   0},
      {"Dh8 tiny cross T16 masked",         {2, 512, 16, 2, 8},    1},
      {"Dh40 (padded to 64) Skv65",         {1, 70, 65, 3, 40},    2},
      {"Dh64 Skv1",                         {1, 5, 1, 1, 64},      0},
  };
  for (const SdpaCase& c : cases) run_sdpa_case(kernels::SdpaKernel::kSimt, c);
}

TEST(TransformerKernels, SdpaMma) {
  SKIP_WITHOUT_DEVICE();
  int dev = 0, major = 0;
  WS_ASSERT_CUDA(cudaGetDevice(&dev));
  WS_ASSERT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  if (major < 8) GTEST_SKIP() << "bf16 mma.sync needs compute capability >= 8.0";
  const SdpaCase cases[] = {
      // name                               {B, Sq,  Skv, H, Dh}   mask
      {"Dh64 self S200",                    {2, 200, 200, 2, 64},  0},
      {"Dh64 cross Skv128 masked",          {2, 300, 128, 3, 64},  1},
      {"Dh128 Sq130 Skv77 random bias",     {1, 130, 77, 2, 128},  2},
      {"Dh128 cross Skv128 masked",         {2, 129, 128, 2, 128}, 1},
      {"Dh128 self S333",                   {1, 333, 333, 2, 128}, 0},
      {"Dh8 tiny self S512",                {2, 512, 512, 2, 8},   0},
      {"Dh8 tiny cross T16 masked",         {2, 512, 16, 2, 8},    1},
      {"Dh16 Sq63 Skv130",                  {2, 63, 130, 3, 16},   2},
      {"Dh40 (padded to 64) Skv65",         {1, 70, 65, 3, 40},    2},
      {"Dh64 Skv1",                         {1, 5, 1, 1, 64},      0},
  };
  for (const SdpaCase& c : cases) run_sdpa_case(kernels::SdpaKernel::kMma, c);
}

// A query whose every key is −inf gets 0 (documented; torch would give NaN), not NaN or garbage.
TEST(TransformerKernels, SdpaFullyMaskedRowIsZero) {
  SKIP_WITHOUT_DEVICE();
  const kernels::SdpaDims d{1, 3, 9, 1, 64};
  const std::vector<float> q = rand_bf16("sdpa masked q", 3 * 64, -1.0f, 1.0f);
  const std::vector<float> kv = rand_bf16("sdpa masked kv", 9 * 64, -1.0f, 1.0f);
  const std::vector<float> bias(9, -INFINITY);
  Dev dq(q.size() * 2), dk(kv.size() * 2), db(bias.size() * 4), dout(q.size() * 2);
  up_bf16(dq, q);
  up_bf16(dk, kv);
  up_f32(db, bias);
  int dev = 0, major = 0;
  WS_ASSERT_CUDA(cudaGetDevice(&dev));
  WS_ASSERT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  for (kernels::SdpaKernel kind : {kernels::SdpaKernel::kSimt, kernels::SdpaKernel::kMma}) {
    if (kind == kernels::SdpaKernel::kMma && major < 8) continue;
    poison(dout, q.size() * 2);
    ASSERT_TRUE(kernels::sdpa(kind, d, dq.bf(), dk.bf(), dk.bf(), db.f(), 0.125f, dout.bf(), nullptr).is_ok());
    WS_ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(test::near_dump(std::string("sdpa fully masked ") + kernels::sdpa_kernel_name(kind),
                                down_bf16(dout, q.size()), std::vector<float>(q.size(), 0.0f)));
  }
}

// ------------------------------------------------------------------------------------------------
// Refusals (host-side checks; no launch happens, so these run without a device too).
TEST(TransformerKernels, RejectsBadArguments) {
  __nv_bfloat16* p = reinterpret_cast<__nv_bfloat16*>(uintptr_t(256));  // never dereferenced
  AdaLnTable m;
  m.temb = p;
  m.temb_row_stride = 96;
  m.temb_chunk_stride = 16;
  m.tokens_per_temb_row = 4;
  EXPECT_EQ(kernels::norm_modulate(NormKind::kRmsNorm, p, p, 0, 16, 1e-6f, nullptr, nullptr, 0, 1, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::norm_modulate(NormKind::kRmsNorm, p, p, 8, 16, -1.0f, nullptr, nullptr, 0, 1, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::rms_norm_modulate(p, p, 8, 16, 1e-6f, m, 0, 6, nullptr).code(), StatusCode::kInvalidArgument);
  m.tokens_per_temb_row = 0;
  EXPECT_EQ(kernels::rms_norm_modulate(p, p, 8, 16, 1e-6f, m, 0, 1, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::gated_residual_add(p, p + 8, nullptr, 8, 16, nullptr, 0, nullptr, p).code(),
            StatusCode::kInvalidArgument);  // norm_out aliases x
  EXPECT_EQ(kernels::qk_rmsnorm_rope(p, p, nullptr, nullptr, nullptr, nullptr, 10, 4, 16, 1e-5f, nullptr, nullptr, 0,
                                     nullptr).code(),
            StatusCode::kInvalidArgument);  // rows % seq
  EXPECT_EQ(kernels::qk_rmsnorm_rope(p, p, nullptr, nullptr, nullptr, nullptr, 8, 4, 15, 1e-5f, nullptr, nullptr, 0,
                                     nullptr).code(),
            StatusCode::kInvalidArgument);  // odd dim
  EXPECT_EQ(kernels::bias_gelu_tanh(p, p, nullptr, 0, 16, nullptr).code(), StatusCode::kInvalidArgument);
  const kernels::SdpaDims dh12{1, 4, 4, 2, 12}, dh256{1, 4, 4, 2, 256}, ok{1, 4, 4, 2, 64};
  EXPECT_FALSE(kernels::sdpa_supported(kernels::SdpaKernel::kSimt, dh12));
  EXPECT_FALSE(kernels::sdpa_supported(kernels::SdpaKernel::kSimt, dh256));
  EXPECT_TRUE(kernels::sdpa_supported(kernels::SdpaKernel::kSimt, ok));
  EXPECT_FALSE(kernels::sdpa_supported(kernels::SdpaKernel::kMma, dh12));
  EXPECT_FALSE(kernels::sdpa_supported(kernels::SdpaKernel::kMma, dh256));
  EXPECT_TRUE(kernels::sdpa_supported(kernels::SdpaKernel::kMma, ok));
  EXPECT_EQ(kernels::sdpa(kernels::SdpaKernel::kSimt, dh12, p, p, p, nullptr, 1.0f, p + 64, nullptr).code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(kernels::sdpa(kernels::SdpaKernel::kSimt, ok, p + 1, p, p, nullptr, 1.0f, p + 64, nullptr).code(),
            StatusCode::kUnsupported);  // q not 16-byte aligned
  EXPECT_EQ(kernels::sdpa(kernels::SdpaKernel::kSimt, ok, p, p, p, nullptr, 1.0f, p, nullptr).code(),
            StatusCode::kInvalidArgument);  // o aliases q
}

}  // namespace
}  // namespace ws
