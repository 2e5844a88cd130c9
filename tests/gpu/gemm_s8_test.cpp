// GPU tests of the INT8 GEMM kernels against the INT64 / float64 CPU oracle (skip without a device).
// Operands are random per run (seed printed as "seed <what> = N (WS_SEED=<base> to reproduce)"); a mismatch
// dumps the first bad index, expected / actual around it and the operands (support/compare_dump.h). Every CUDA
// call is checked. kUnsupported is a FAILURE where the kernel's architecture rule holds (mma.sync: cc >= 8.0;
// CUTLASS: built and cc 9.0), and a skip only where it does not.
#include <gtest/gtest.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "kernels/gemm/gemm_s8.h"
#include "kernels/gemm/gemm_s8_cutlass.h"
#include "bench/gemm/gemm_s8_suite.h"
#include "reference/gemm_s8.h"
#include "support/compare_dump.h"
#include "support/cuda_check.h"
#include "support/seed.h"

namespace ws {
namespace {

bool have_device() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  return ok;
}
#define WS_REQUIRE_GPU() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device"

// Compute capability of the current device as major * 10 + minor (0 when it cannot be read: a failure).
int current_cc() {
  int dev = 0, major = 0, minor = 0;
  EXPECT_TRUE(test::cuda_ok(cudaGetDevice(&dev), "cudaGetDevice"));
  EXPECT_TRUE(test::cuda_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cc major"));
  EXPECT_TRUE(test::cuda_ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "cc minor"));
  return major * 10 + minor;
}
bool mma_supported() { return current_cc() >= 80; }  // int8 mma.sync m16n8k32
bool cutlass_supported() { return kernels::gemm_s8_cutlass_built() && current_cc() == 90; }

template <typename T>
cuda::DeviceBuffer up(const std::vector<T>& v) {
  auto b = cuda::DeviceBuffer::allocate(std::max<size_t>(v.size() * sizeof(T), 16));
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
  if (!b.is_ok()) return {};
  EXPECT_TRUE(test::cuda_ok(::ws::test::upload_sync(b->get(), v.data(), v.size() * sizeof(T)),
                            "cudaMemcpy (upload)"));
  return std::move(b).value();
}

template <typename T>
std::vector<T> down(const cuda::DeviceBuffer& d, size_t count) {
  std::vector<T> v(count);
  EXPECT_TRUE(test::cuda_ok(cudaMemcpy(v.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost),
                            "cudaMemcpy (download)"));
  return v;
}

struct Case {
  int m, n, k;
  ref::FillKind fill;
};
const Case kCases[] = {{17, 23, 19, ref::FillKind::kRandom}, {1, 1, 1, ref::FillKind::kExtremes},
                       {65, 63, 33, ref::FillKind::kExtremes}, {130, 257, 129, ref::FillKind::kRandom},
                       {256, 256, 256, ref::FillKind::kRandom}, {129, 131, 64, ref::FillKind::kExtremes},
                       {64, 64, 7, ref::FillKind::kZeros}};

std::string shape(int m, int n, int k) { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }

TEST(GemmS8Gpu, AllKernelsExact) {
  WS_REQUIRE_GPU();
  const bool mma_ok = mma_supported();
  for (const Case& c : kCases) {
    const uint32_t seed = test::test_seed("gemm_s8 exact " + shape(c.m, c.n, c.k));
    std::vector<int8_t> a(size_t(c.m) * c.k), b(size_t(c.k) * c.n);
    ref::fill_s8(a.data(), int64_t(a.size()), c.fill, seed);
    ref::fill_s8(b.data(), int64_t(b.size()), c.fill, seed + 1);
    std::vector<int64_t> want(size_t(c.m) * c.n);
    ref::gemm_s8s8s64(a.data(), b.data(), want.data(), c.m, c.n, c.k);
    auto da = up(a), db = up(b), dap = up(ref::pack_a_k4(a.data(), c.m, c.k)),
         dbp = up(ref::pack_bt_k4(b.data(), c.k, c.n)), dbt = up(ref::transpose_s8(b.data(), c.k, c.n));
    auto dc = cuda::DeviceBuffer::allocate(want.size() * 4);
    ASSERT_TRUE(dc.is_ok());
    auto check = [&](const std::string& what) {
      WS_ASSERT_CUDA(cudaDeviceSynchronize());
      const auto got = down<int32_t>(*dc, want.size());
      ASSERT_TRUE(test::near_dump(what + " " + shape(c.m, c.n, c.k), got, want, {}, {{"a", a}, {"b", b}}));
    };
    WS_ASSERT_CUDA(::ws::test::memset_sync(dc->get(), 0x5A, dc->bytes()));
    ASSERT_TRUE(kernels::gemm_s8s8s32_naive(da.as<int8_t>(), db.as<int8_t>(), dc->as<int32_t>(), c.m, c.n, c.k, 0));
    check("naive");
    for (int kd : {32, 64, 128})
      for (int s : {65, 68}) {
        WS_ASSERT_CUDA(::ws::test::memset_sync(dc->get(), 0x5A, dc->bytes()));
        ASSERT_TRUE(kernels::gemm_s8s8s32_dp4a_tiled(kd, s, dap.as<int32_t>(), dbp.as<int32_t>(), dc->as<int32_t>(),
                                                     c.m, c.n, c.k, 0));
        check("tiled k" + std::to_string(kd) + " s" + std::to_string(s));
      }
    for (auto t : {kernels::MmaTile::k128x128, kernels::MmaTile::k128x256}) {
      WS_ASSERT_CUDA(::ws::test::memset_sync(dc->get(), 0x5A, dc->bytes()));
      Status st = kernels::gemm_s8_mma(t, DType::kInt32, da.as<int8_t>(), dbt.as<int8_t>(), dc->get(), c.m,
                                       c.n, c.k, {}, 0);
      if (!mma_ok && st.code() == StatusCode::kUnsupported) continue;  // cc < 8.0: refusing is the contract
      ASSERT_TRUE(st) << kernels::mma_tile_name(t) << " on cc " << current_cc() << ": " << st.to_string();
      check(kernels::mma_tile_name(t));
    }
  }
}

// A scaled-epilogue case: random int8 A [m,k] and B [k,n] (B uploaded transposed), per-row / per-column
// scales and a bias, and the float64 reference of scale_r · scale_c · (A·B) + bias.
struct ScaledCase {
  std::vector<int8_t> a, b;
  std::vector<float> rs, cs, bias;
  std::vector<double> want;
  cuda::DeviceBuffer da, dbt, drs, dcs, dbias;
  ScaledCase(int m, int n, int k, const std::string& what) {
    const uint32_t seed = test::test_seed(what + " " + shape(m, n, k));
    a.resize(size_t(m) * k);
    b.resize(size_t(k) * n);
    ref::fill_s8(a.data(), int64_t(a.size()), ref::FillKind::kRandom, seed);
    ref::fill_s8(b.data(), int64_t(b.size()), ref::FillKind::kRandom, seed + 1);
    rs.resize(size_t(m));
    cs.resize(size_t(n));
    bias.resize(size_t(n));
    ref::fill_f32(rs.data(), m, 0.002f, 0.01f, seed + 2);
    ref::fill_f32(cs.data(), n, 0.002f, 0.01f, seed + 3);
    ref::fill_f32(bias.data(), n, -1.f, 1.f, seed + 4);
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

// fp16 / bf16 output bits as float.
std::vector<float> half_bits_to_float(const std::vector<uint16_t>& bits, DType out) {
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    if (out == DType::kFloat16) {
      __half_raw r;
      r.x = bits[i];
      v[i] = __half2float(__half(r));
    } else {
      __nv_bfloat16_raw r;
      r.x = bits[i];
      v[i] = __bfloat162float(__nv_bfloat16(r));
    }
  }
  return v;
}

TEST(GemmS8Gpu, MmaScaledEpilogueF16) {
  WS_REQUIRE_GPU();
  const int m = 130, n = 258, k = 320;
  const ScaledCase c(m, n, k, "mma scaled f16");
  auto dout = cuda::DeviceBuffer::allocate(c.want.size() * 2);
  ASSERT_TRUE(dout.is_ok());
  WS_ASSERT_CUDA(::ws::test::memset_sync(dout->get(), 0xFF, dout->bytes()));  // NaN poison
  Status st = kernels::gemm_s8_mma(kernels::MmaTile::k128x128, DType::kFloat16, c.da.as<int8_t>(),
                                   c.dbt.as<int8_t>(), dout->get(), m, n, k, c.scales(), 0);
  if (!mma_supported() && st.code() == StatusCode::kUnsupported) GTEST_SKIP() << st.to_string();
  ASSERT_TRUE(st) << "cc " << current_cc() << ": " << st.to_string();
  WS_ASSERT_CUDA(cudaDeviceSynchronize());
  const auto got = half_bits_to_float(down<uint16_t>(*dout, c.want.size()), DType::kFloat16);
  // fp16: half an ulp is 2^-11 relative; 1e-3 rel leaves 2x margin, 1e-5 abs floor.
  ASSERT_TRUE(test::near_dump("mma 128x128 f16 scaled", got, c.want, {.abs = 1e-5, .rel = 1e-3},
                              {{"a", c.a}, {"b", c.b}, {"row_scale", c.rs}, {"col_scale", c.cs}, {"bias", c.bias}}));
}

// CUTLASS sm_90a backend (skips when not built or not on cc 9.0, fails on kUnsupported otherwise): int32 exact,
// including M/N/K residues that TMA zero-fills (K % 16 == 0 and N % 4 == 0 are the backend's shape rules; others
// must be refused, not wrong). Runs through a caller-owned CutlassGemmPlan: after create(), run() allocates
// nothing (cuda_allocation_count() unchanged over repeated runs).
TEST(GemmS8Gpu, CutlassExact) {
  WS_REQUIRE_GPU();
  if (!kernels::gemm_s8_cutlass_built()) GTEST_SKIP() << "CUTLASS backend not built";
  if (current_cc() != 90) GTEST_SKIP() << "CUTLASS sm_90a kernels need cc 9.0 (this device: " << current_cc() << ")";
  const int shapes[][3] = {{1, 4, 16}, {130, 260, 144}, {257, 384, 512}, {64, 64, 16}, {300, 132, 1008}};
  for (auto& sh : shapes) {
    const int m = sh[0], n = sh[1], k = sh[2];
    const uint32_t seed = test::test_seed("cutlass exact " + shape(m, n, k));
    std::vector<int8_t> a(size_t(m) * k), b(size_t(k) * n);
    ref::fill_s8(a.data(), int64_t(a.size()), ref::FillKind::kExtremes, seed);
    ref::fill_s8(b.data(), int64_t(b.size()), ref::FillKind::kRandom, seed + 1);
    std::vector<int64_t> want(size_t(m) * n);
    ref::gemm_s8s8s64(a.data(), b.data(), want.data(), m, n, k);
    auto da = up(a), dbt = up(ref::transpose_s8(b.data(), k, n));
    auto dc = cuda::DeviceBuffer::allocate(want.size() * 4);
    ASSERT_TRUE(dc.is_ok());
    for (auto sched : {kernels::CutlassSchedule::kPingpong128x128, kernels::CutlassSchedule::kCoop256x128}) {
      const std::string what = std::string(kernels::cutlass_schedule_name(sched)) + " " + shape(m, n, k);
      auto plan = kernels::CutlassGemmPlan::create(sched, DType::kInt32, da.as<int8_t>(), dbt.as<int8_t>(),
                                                   dc->get(), m, n, k, {}, 0);
      ASSERT_TRUE(plan.is_ok()) << what << ": " << plan.status().to_string();
      const size_t allocs = cuda::cuda_allocation_count();
      for (int rep = 0; rep < 3; ++rep) {
        WS_ASSERT_CUDA(::ws::test::memset_sync(dc->get(), 0x5A, dc->bytes()));
        const Status st = plan->run(0);
        ASSERT_TRUE(st) << what << ": " << st.to_string();
        WS_ASSERT_CUDA(cudaDeviceSynchronize());
        ASSERT_TRUE(test::near_dump(what + " rep " + std::to_string(rep), down<int32_t>(*dc, want.size()), want, {},
                                    {{"a", a}, {"b", b}}));
      }
      EXPECT_EQ(cuda::cuda_allocation_count(), allocs) << what << ": CutlassGemmPlan::run allocated";
    }
  }
  // The dispatcher: CUTLASS where it applies, mma.sync elsewhere (K = 19 here), exact either way.
  for (auto& sh : {std::array<int, 3>{130, 260, 144}, std::array<int, 3>{17, 23, 19}}) {
    const int m = sh[0], n = sh[1], k = sh[2];
    const uint32_t seed = test::test_seed("tensor_core dispatch " + shape(m, n, k));
    std::vector<int8_t> a(size_t(m) * k), b(size_t(k) * n);
    ref::fill_s8(a.data(), int64_t(a.size()), ref::FillKind::kRandom, seed);
    ref::fill_s8(b.data(), int64_t(b.size()), ref::FillKind::kRandom, seed + 1);
    std::vector<int64_t> want(size_t(m) * n);
    ref::gemm_s8s8s64(a.data(), b.data(), want.data(), m, n, k);
    auto da = up(a), dbt = up(ref::transpose_s8(b.data(), k, n));
    auto dc = cuda::DeviceBuffer::allocate(want.size() * 4);
    ASSERT_TRUE(dc.is_ok());
    WS_ASSERT_CUDA(::ws::test::memset_sync(dc->get(), 0x5A, dc->bytes()));
    Status st = kernels::gemm_s8_tensor_core(DType::kInt32, da.as<int8_t>(), dbt.as<int8_t>(), dc->get(), m,
                                             n, k, {}, 0);
    ASSERT_TRUE(st) << st.to_string();
    WS_ASSERT_CUDA(cudaDeviceSynchronize());
    ASSERT_TRUE(test::near_dump("tensor_core " + shape(m, n, k), down<int32_t>(*dc, want.size()), want, {},
                                {{"a", a}, {"b", b}}));
  }
  // Shape rules: K % 16 != 0 is refused (kUnsupported is the contract here, on cc 9.0 too).
  auto d = cuda::DeviceBuffer::allocate(4096);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(kernels::gemm_s8_cutlass(kernels::CutlassSchedule::kPingpong128x128, DType::kInt32,
                                     d->as<int8_t>(), d->as<int8_t>(), d->get(), 4, 4, 17, {}, 0)
                .code(),
            StatusCode::kUnsupported);
  // An empty plan refuses to run.
  kernels::CutlassGemmPlan empty;
  EXPECT_EQ(empty.run(0).code(), StatusCode::kFailedPrecondition);
}

TEST(GemmS8Gpu, CutlassScaledEpilogue) {
  WS_REQUIRE_GPU();
  if (!kernels::gemm_s8_cutlass_built()) GTEST_SKIP() << "CUTLASS backend not built";
  if (!cutlass_supported()) GTEST_SKIP() << "CUTLASS sm_90a kernels need cc 9.0 (this device: " << current_cc() << ")";
  const int m = 130, n = 264, k = 320;
  const ScaledCase c(m, n, k, "cutlass scaled");
  auto dout = cuda::DeviceBuffer::allocate(c.want.size() * 2);
  ASSERT_TRUE(dout.is_ok());
  for (auto out : {DType::kFloat16, DType::kBFloat16})
    for (auto sched : {kernels::CutlassSchedule::kPingpong128x128, kernels::CutlassSchedule::kCoop256x128}) {
      const std::string what = std::string(kernels::cutlass_schedule_name(sched)) +
                               (out == DType::kFloat16 ? " f16" : " bf16") + " scaled";
      WS_ASSERT_CUDA(::ws::test::memset_sync(dout->get(), 0xFF, dout->bytes()));  // NaN poison
      Status st = kernels::gemm_s8_cutlass(sched, out, c.da.as<int8_t>(), c.dbt.as<int8_t>(), dout->get(), m, n, k,
                                           c.scales(), 0);
      ASSERT_TRUE(st) << what << ": " << st.to_string();
      WS_ASSERT_CUDA(cudaDeviceSynchronize());
      const double rel = out == DType::kFloat16 ? 1e-3 : 4e-3;  // half an ulp: 2^-11 / 2^-8, 2x margin
      ASSERT_TRUE(test::near_dump(what, half_bits_to_float(down<uint16_t>(*dout, c.want.size()), out), c.want,
                                  {.abs = 1e-5, .rel = rel},
                                  {{"a", c.a}, {"b", c.b}, {"row_scale", c.rs}, {"col_scale", c.cs}, {"bias", c.bias}}));
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
