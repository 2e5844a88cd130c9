// GPU tests of the INT8 GEMM kernels against the INT64 / float64 CPU oracle (skip without a device).
#include <gtest/gtest.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemm_s8.h"
#include "kernels/gemm/gemm_s8_cutlass.h"
#include "bench/gemm/gemm_s8_suite.h"
#include "reference/gemm_s8.h"

namespace ws {
namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define WS_REQUIRE_GPU() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device"

template <typename T>
cuda::DeviceBuffer up(const std::vector<T>& v) {
  auto b = cuda::DeviceBuffer::allocate(v.size() * sizeof(T));
  EXPECT_TRUE(b.is_ok());
  cudaMemcpy(b->get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return std::move(b).value();
}

struct Case {
  int m, n, k;
  ref::FillKind fill;
};
const Case kCases[] = {{17, 23, 19, ref::FillKind::kRandom}, {1, 1, 1, ref::FillKind::kExtremes},
                       {65, 63, 33, ref::FillKind::kExtremes}, {130, 257, 129, ref::FillKind::kRandom},
                       {256, 256, 256, ref::FillKind::kRandom}, {129, 131, 64, ref::FillKind::kExtremes},
                       {64, 64, 7, ref::FillKind::kZeros}};

TEST(GemmS8Gpu, AllKernelsExact) {
  WS_REQUIRE_GPU();
  for (const Case& c : kCases) {
    std::vector<int8_t> a(size_t(c.m) * c.k), b(size_t(c.k) * c.n);
    ref::fill_s8(a.data(), int64_t(a.size()), c.fill, 1);
    ref::fill_s8(b.data(), int64_t(b.size()), c.fill, 2);
    std::vector<int64_t> want(size_t(c.m) * c.n);
    ref::gemm_s8s8s64(a.data(), b.data(), want.data(), c.m, c.n, c.k);
    auto da = up(a), db = up(b), dap = up(ref::pack_a_k4(a.data(), c.m, c.k)),
         dbp = up(ref::pack_bt_k4(b.data(), c.k, c.n)), dbt = up(ref::transpose_s8(b.data(), c.k, c.n));
    auto dc = cuda::DeviceBuffer::allocate(want.size() * 4);
    ASSERT_TRUE(dc.is_ok());
    std::vector<int32_t> got(want.size());
    auto check = [&](const char* what) {
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
      cudaMemcpy(got.data(), dc->get(), got.size() * 4, cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(int64_t(got[i]), want[i]) << what << " " << c.m << "x" << c.n << "x" << c.k << " at " << i;
    };
    cudaMemset(dc->get(), 0x5A, dc->bytes());
    ASSERT_TRUE(kernels::gemm_s8s8s32_naive(da.as<int8_t>(), db.as<int8_t>(), dc->as<int32_t>(), c.m, c.n, c.k, 0));
    check("naive");
    for (int kd : {32, 64, 128})
      for (int s : {65, 68}) {
        cudaMemset(dc->get(), 0x5A, dc->bytes());
        ASSERT_TRUE(kernels::gemm_s8s8s32_dp4a_tiled(kd, s, dap.as<int32_t>(), dbp.as<int32_t>(), dc->as<int32_t>(),
                                                     c.m, c.n, c.k, 0));
        check("tiled");
      }
    for (auto t : {kernels::MmaTile::k128x128, kernels::MmaTile::k128x256}) {
      cudaMemset(dc->get(), 0x5A, dc->bytes());
      Status st = kernels::gemm_s8_mma(t, kernels::GemmOut::kS32, da.as<int8_t>(), dbt.as<int8_t>(), dc->get(), c.m,
                                       c.n, c.k, {}, 0);
      if (st.code() == StatusCode::kUnsupported) continue;
      ASSERT_TRUE(st) << st.to_string();
      check(kernels::mma_tile_name(t));
    }
  }
}

// A scaled-epilogue case: random int8 A [m,k] and B [k,n] (B uploaded transposed), per-row / per-column
// scales and a bias, and the float64 reference of scale_r · scale_c · (A·B) + bias.
struct ScaledCase {
  std::vector<double> want;
  cuda::DeviceBuffer da, dbt, drs, dcs, dbias;
  ScaledCase(int m, int n, int k) {
    std::vector<int8_t> a(size_t(m) * k), b(size_t(k) * n);
    ref::fill_s8(a.data(), int64_t(a.size()), ref::FillKind::kRandom, 3);
    ref::fill_s8(b.data(), int64_t(b.size()), ref::FillKind::kRandom, 4);
    std::vector<float> rs(m), cs(n), bias(n);
    ref::fill_f32(rs.data(), m, 0.002f, 0.01f, 5);
    ref::fill_f32(cs.data(), n, 0.002f, 0.01f, 6);
    ref::fill_f32(bias.data(), n, -1.f, 1.f, 7);
    std::vector<int64_t> acc(size_t(m) * n);
    ref::gemm_s8s8s64(a.data(), b.data(), acc.data(), m, n, k);
    want.resize(acc.size());
    ref::gemm_epilogue_f64(acc.data(), rs.data(), cs.data(), bias.data(), want.data(), m, n);
    da = up(a);
    dbt = up(ref::transpose_s8(b.data(), k, n));
    drs = up(rs);
    dcs = up(cs);
    dbias = up(bias);
  }
  kernels::GemmEpilogue scales() const { return {drs.as<float>(), dcs.as<float>(), dbias.as<float>()}; }
};

TEST(GemmS8Gpu, MmaScaledEpilogueF16) {
  WS_REQUIRE_GPU();
  const int m = 130, n = 258, k = 320;
  const ScaledCase c(m, n, k);
  const auto& want = c.want;
  auto dout = cuda::DeviceBuffer::allocate(want.size() * 2);
  ASSERT_TRUE(dout.is_ok());
  Status st = kernels::gemm_s8_mma(kernels::MmaTile::k128x128, kernels::GemmOut::kF16, c.da.as<int8_t>(),
                                   c.dbt.as<int8_t>(), dout->get(), m, n, k, c.scales(), 0);
  if (st.code() == StatusCode::kUnsupported) GTEST_SKIP() << st.to_string();
  ASSERT_TRUE(st) << st.to_string();
  std::vector<__half> got(want.size());
  cudaMemcpy(got.data(), dout->get(), got.size() * 2, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < got.size(); ++i) {
    // fp16: half an ulp is 2^-11 relative; 1e-3 rel leaves 2x margin, 1e-5 abs floor.
    const double g = double(__half2float(got[i]));
    ASSERT_NEAR(g, want[i], 1e-3 * std::fabs(want[i]) + 1e-5) << "at " << i;
  }
}

// CUTLASS sm_90a backend (skips when not built or not on cc 9.0): int32 exact, including M/N/K residues that
// TMA zero-fills (K % 16 == 0 and N % 4 == 0 are the backend's shape rules; others must be refused, not wrong).
TEST(GemmS8Gpu, CutlassExact) {
  WS_REQUIRE_GPU();
  if (!kernels::gemm_s8_cutlass_built()) GTEST_SKIP() << "CUTLASS backend not built";
  const int shapes[][3] = {{1, 4, 16}, {130, 260, 144}, {257, 384, 512}, {64, 64, 16}, {300, 132, 1008}};
  for (auto& sh : shapes) {
    const int m = sh[0], n = sh[1], k = sh[2];
    std::vector<int8_t> a(size_t(m) * k), b(size_t(k) * n);
    ref::fill_s8(a.data(), int64_t(a.size()), ref::FillKind::kExtremes, 11);
    ref::fill_s8(b.data(), int64_t(b.size()), ref::FillKind::kRandom, 12);
    std::vector<int64_t> want(size_t(m) * n);
    ref::gemm_s8s8s64(a.data(), b.data(), want.data(), m, n, k);
    auto da = up(a), dbt = up(ref::transpose_s8(b.data(), k, n));
    auto dc = cuda::DeviceBuffer::allocate(want.size() * 4);
    ASSERT_TRUE(dc.is_ok());
    for (auto sched : {kernels::CutlassSchedule::kPingpong128x128, kernels::CutlassSchedule::kCoop256x128}) {
      cudaMemset(dc->get(), 0x5A, dc->bytes());
      Status st = kernels::gemm_s8_cutlass(sched, kernels::GemmOut::kS32, da.as<int8_t>(), dbt.as<int8_t>(),
                                           dc->get(), m, n, k, {}, 0);
      if (st.code() == StatusCode::kUnsupported) GTEST_SKIP() << st.to_string();
      ASSERT_TRUE(st) << st.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<int32_t> got(want.size());
      cudaMemcpy(got.data(), dc->get(), got.size() * 4, cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(int64_t(got[i]), want[i]) << kernels::cutlass_schedule_name(sched) << " " << m << "x" << n << "x"
                                            << k << " at " << i;
    }
  }
  // The dispatcher: CUTLASS where it applies, mma.sync elsewhere (K = 19 here), exact either way.
  for (auto& sh : {std::array<int, 3>{130, 260, 144}, std::array<int, 3>{17, 23, 19}}) {
    const int m = sh[0], n = sh[1], k = sh[2];
    std::vector<int8_t> a(size_t(m) * k), b(size_t(k) * n);
    ref::fill_s8(a.data(), int64_t(a.size()), ref::FillKind::kRandom, 21);
    ref::fill_s8(b.data(), int64_t(b.size()), ref::FillKind::kRandom, 22);
    std::vector<int64_t> want(size_t(m) * n);
    ref::gemm_s8s8s64(a.data(), b.data(), want.data(), m, n, k);
    auto da = up(a), dbt = up(ref::transpose_s8(b.data(), k, n));
    auto dc = cuda::DeviceBuffer::allocate(want.size() * 4);
    ASSERT_TRUE(dc.is_ok());
    Status st = kernels::gemm_s8_tensor_core(kernels::GemmOut::kS32, da.as<int8_t>(), dbt.as<int8_t>(), dc->get(), m,
                                             n, k, {}, 0);
    ASSERT_TRUE(st) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<int32_t> got(want.size());
    cudaMemcpy(got.data(), dc->get(), got.size() * 4, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(int64_t(got[i]), want[i]) << "tensor_core " << k << " at " << i;
  }
  // Shape rules: K % 16 != 0 is refused.
  auto d = cuda::DeviceBuffer::allocate(4096);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(kernels::gemm_s8_cutlass(kernels::CutlassSchedule::kPingpong128x128, kernels::GemmOut::kS32,
                                     d->as<int8_t>(), d->as<int8_t>(), d->get(), 4, 4, 17, {}, 0)
                .code(),
            StatusCode::kUnsupported);
}

TEST(GemmS8Gpu, CutlassScaledEpilogue) {
  WS_REQUIRE_GPU();
  if (!kernels::gemm_s8_cutlass_built()) GTEST_SKIP() << "CUTLASS backend not built";
  const int m = 130, n = 264, k = 320;
  const ScaledCase c(m, n, k);
  const auto& want = c.want;
  auto dout = cuda::DeviceBuffer::allocate(want.size() * 2);
  ASSERT_TRUE(dout.is_ok());
  for (auto out : {kernels::GemmOut::kF16, kernels::GemmOut::kBF16})
    for (auto sched : {kernels::CutlassSchedule::kPingpong128x128, kernels::CutlassSchedule::kCoop256x128}) {
      Status st = kernels::gemm_s8_cutlass(sched, out, c.da.as<int8_t>(), c.dbt.as<int8_t>(), dout->get(), m, n, k,
                                           c.scales(), 0);
      if (st.code() == StatusCode::kUnsupported) GTEST_SKIP() << st.to_string();
      ASSERT_TRUE(st) << st.to_string();
      std::vector<uint16_t> got(want.size());
      cudaMemcpy(got.data(), dout->get(), got.size() * 2, cudaMemcpyDeviceToHost);
      const double rel = out == kernels::GemmOut::kF16 ? 1e-3 : 4e-3;
      for (size_t i = 0; i < got.size(); ++i) {
        double g;
        if (out == kernels::GemmOut::kF16) {
          __half_raw r;
          r.x = got[i];
          g = double(__half2float(__half(r)));
        } else {
          __nv_bfloat16_raw r;
          r.x = got[i];
          g = double(__bfloat162float(__nv_bfloat16(r)));
        }
        ASSERT_NEAR(g, want[i], rel * std::fabs(want[i]) + 1e-5)
            << kernels::cutlass_schedule_name(sched) << " at " << i;
      }
    }
}

TEST(GemmS8Gpu, CheckSuitePasses) {
  WS_REQUIRE_GPU();
  kernels::GemmRunOptions opt;
  opt.variant = "mma_128x128";  // the full suite runs in `warpstream gemm --check`
  kernels::GemmReport rep;
  Status st = kernels::run_gemm_check(opt, &rep);
  ASSERT_TRUE(st) << st.to_string();
  EXPECT_EQ(rep.failures, 0);
}

}  // namespace
}  // namespace ws
