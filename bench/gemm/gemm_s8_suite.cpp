// INT8 GEMM validation and benchmark driver; see gemm_s8_suite.h.
#include "bench/gemm/gemm_s8_suite.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "bench/event_timer.h"
#include "cuda/cuda_util.h"
#include "kernels/gemm/gemm_s8.h"
#include "kernels/gemm/gemm_s8_cublas.h"
#include "kernels/gemm/gemm_s8_cutlass.h"
#include "bench/gemm/gemm_s8_variants.h"
#include "reference/gemm_s8.h"

namespace ws::kernels {
namespace {

using cuda::DeviceBuffer;
constexpr int kGuardWords = 64;
constexpr unsigned char kSentinel = 0xA5;

std::string shape_name(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

template <typename T>
Result<DeviceBuffer> upload(const std::vector<T>& v) {
  WS_ASSIGN_OR_RETURN(auto b, DeviceBuffer::allocate(std::max<size_t>(v.size() * sizeof(T), 16)));
  if (!v.empty()) WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), v.data(), v.size() * sizeof(T)));
  return b;
}

// Device inputs of one case, in every layout a backend wants.
struct CaseBuffers {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int8_t> a, b;
  std::vector<float> row_scale, col_scale, bias;
  DeviceBuffer da, db, dap, dbtp, dbt, drs, dcs, dbias;
  double pack_ms = 0;
  // CUTLASS plans of this case (caller-owned build-time state: made on first use, then run only),
  // keyed by (schedule, output kind, output buffer).
  std::map<std::tuple<int, DType, void*>, CutlassGemmPlan> cutlass_plans;
};

Result<std::unique_ptr<CaseBuffers>> make_case(const ref::GemmCase& c) {
  auto cb = std::make_unique<CaseBuffers>();
  cb->m = c.m, cb->n = c.n, cb->k = c.k;
  cb->a.resize(size_t(c.m * c.k));
  cb->b.resize(size_t(c.k * c.n));
  ref::fill_s8(cb->a.data(), c.m * c.k, c.fill, c.seed);
  ref::fill_s8(cb->b.data(), c.k * c.n, c.fill, c.seed + 1);
  cb->row_scale.resize(size_t(c.m));
  cb->col_scale.resize(size_t(c.n));
  cb->bias.resize(size_t(c.n));
  ref::fill_f32(cb->row_scale.data(), c.m, 0.002f, 0.01f, c.seed + 2);
  ref::fill_f32(cb->col_scale.data(), c.n, 0.002f, 0.01f, c.seed + 3);
  ref::fill_f32(cb->bias.data(), c.n, -1.f, 1.f, c.seed + 4);
  auto t0 = std::chrono::steady_clock::now();
  auto ap = ref::pack_a_k4(cb->a.data(), c.m, c.k);
  auto btp = ref::pack_bt_k4(cb->b.data(), c.k, c.n);
  cb->pack_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto bt = ref::transpose_s8(cb->b.data(), c.k, c.n);
  WS_ASSIGN_OR_RETURN(cb->da, upload(cb->a));
  WS_ASSIGN_OR_RETURN(cb->db, upload(cb->b));
  WS_ASSIGN_OR_RETURN(cb->dap, upload(ap));
  WS_ASSIGN_OR_RETURN(cb->dbtp, upload(btp));
  WS_ASSIGN_OR_RETURN(cb->dbt, upload(bt));
  WS_ASSIGN_OR_RETURN(cb->drs, upload(cb->row_scale));
  WS_ASSIGN_OR_RETURN(cb->dcs, upload(cb->col_scale));
  WS_ASSIGN_OR_RETURN(cb->dbias, upload(cb->bias));
  return std::move(cb);
}

// Enqueues one backend on `s`. out: int32 [M,N] or fp16/bf16 [M,N] (mma scaled variants).
Status run_backend(const GemmBackendInfo& be, CaseBuffers& cb, void* out, CublasS8* blas, cudaStream_t s) {
  const int m = int(cb.m), n = int(cb.n), k = int(cb.k);
  switch (be.kind) {
    case GemmBackendKind::kNaive:
      return gemm_s8s8s32_naive(cb.da.as<int8_t>(), cb.db.as<int8_t>(), static_cast<int32_t*>(out), m, n, k, s);
    case GemmBackendKind::kTiled:
      return gemm_s8s8s32_dp4a_tiled(be.k_depth, be.stride, cb.dap.as<int32_t>(), cb.dbtp.as<int32_t>(),
                                     static_cast<int32_t*>(out), m, n, k, s);
    case GemmBackendKind::kMma: {
      GemmEpilogue ep{cb.drs.as<float>(), cb.dcs.as<float>(), cb.dbias.as<float>()};
      return gemm_s8_mma(be.tile == 0 ? MmaTile::k128x128 : MmaTile::k128x256, be.out, cb.da.as<int8_t>(),
                         cb.dbt.as<int8_t>(), out, m, n, k, ep, s);
    }
    case GemmBackendKind::kCutlass: {
      GemmEpilogue ep{cb.drs.as<float>(), cb.dcs.as<float>(), cb.dbias.as<float>()};
      const auto key = std::make_tuple(be.tile, be.out, out);
      auto it = cb.cutlass_plans.find(key);
      if (it == cb.cutlass_plans.end()) {
        WS_ASSIGN_OR_RETURN(CutlassGemmPlan plan,
                            CutlassGemmPlan::create(be.tile == 0 ? CutlassSchedule::kPingpong128x128
                                                                 : CutlassSchedule::kCoop256x128,
                                                    be.out, cb.da.as<int8_t>(), cb.dbt.as<int8_t>(), out, m, n, k, ep, s));
        it = cb.cutlass_plans.emplace(key, std::move(plan)).first;
      }
      return it->second.run(s);
    }
    case GemmBackendKind::kCublasEx:
      return blas->gemm_ex(cb.da.as<int8_t>(), cb.db.as<int8_t>(), static_cast<int32_t*>(out), m, n, k, s);
    case GemmBackendKind::kCublasLt:
      return blas->lt_run(cb.da.as<int8_t>(), cb.dbt.as<int8_t>(), static_cast<int32_t*>(out), s);
  }
  return internal_error("unknown backend");
}

bool is_scaled(const GemmBackendInfo& be) {
  return (be.kind == GemmBackendKind::kMma || be.kind == GemmBackendKind::kCutlass) && be.out != DType::kInt32;
}
// Backends that may refuse a shape (reported "n/a", not a failure): cuBLAS INT8 alignment rules, and CUTLASS
// (TMA stride alignment, sm_90a only, or not built). Our own kernels may not refuse.
bool may_refuse(const GemmBackendInfo& be) {
  return be.kind == GemmBackendKind::kCublasEx || be.kind == GemmBackendKind::kCublasLt ||
         be.kind == GemmBackendKind::kCutlass;
}

struct Timing {
  double median = 0, min = 0, max = 0;
};

// The shared event timer (bench/event_timer.h); with GemmRunOptions::flush_l2 every run starts from a
// cold L2 (operands read from HBM, as inside a network).
Result<Timing> time_backend(const std::function<Status()>& fn, int warmup, int iters, bench::EventTimer& timer) {
  WS_ASSIGN_OR_RETURN(bench::EventTiming t, timer.time(warmup, iters, fn));
  return Timing{t.median, t.min, t.max};
}

double half_to_double(uint16_t bits, DType out) {
  if (out == DType::kFloat16) {
    __half_raw r;
    r.x = bits;
    return double(__half2float(__half(r)));
  }
  __nv_bfloat16_raw r;
  r.x = bits;
  return double(__bfloat162float(__nv_bfloat16(r)));
}

// Tolerance of the fused epilogue against the float64 oracle: half an ulp of the output format (fp16 2^-11,
// bf16 2^-9) doubled, plus float32 evaluation error on the unrounded terms, plus an absolute floor.
bool epilogue_close(double got, double want, double term_mag, DType out) {
  const double rel = out == DType::kFloat16 ? 1e-3 : 4e-3;
  return std::fabs(got - want) <= rel * std::fabs(want) + 1e-6 * term_mag + 1e-5;
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// Exhaustive check of an output in `dout` (with guard words after it) against the INT64 oracle.
std::string verify_full(const GemmBackendInfo& be, const CaseBuffers& cb, const std::vector<int64_t>& ref,
                        const DeviceBuffer& dout) {
  const int64_t count = cb.m * cb.n;
  const size_t esize = is_scaled(be) ? 2 : 4;
  std::vector<unsigned char> host(count * esize + kGuardWords * 4);
  if (cudaMemcpy(host.data(), dout.get(), host.size(), cudaMemcpyDeviceToHost) != cudaSuccess) return "copy failed";
  for (size_t i = count * esize; i < host.size(); ++i)
    if (host[i] != kSentinel) return "SENTINEL overwritten at byte " + std::to_string(i - count * esize) + " past C";
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < count; ++i) {
    bool ok;
    if (!is_scaled(be)) {
      int32_t v;
      std::memcpy(&v, host.data() + i * 4, 4);
      ok = int64_t(v) == ref[i];
    } else {
      uint16_t bits;
      std::memcpy(&bits, host.data() + i * 2, 2);
      const int64_t r = i / cb.n, c = i % cb.n;
      const double prod = double(ref[i]) * cb.row_scale[r] * cb.col_scale[c];
      const double want = prod + cb.bias[c];
      ok = epilogue_close(half_to_double(bits, be.out), want, std::fabs(prod) + std::fabs(cb.bias[c]), be.out);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "ok";
  return "MISMATCH " + std::to_string(bad) + " of " + std::to_string(count) + ", first at (" +
         std::to_string(first / cb.n) + "," + std::to_string(first % cb.n) + ")";
}

std::string device_note() {
  int dev = 0, sms = 0, clock_khz = 0, major = 0, minor = 0, rt = 0, drv = 0;
  cudaGetDevice(&dev);
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  // DP4A issue-rate peak: one IDP.4A per lane per clock on the 4 x 16-lane integer pipes of an SM
  // (64 per SM per clock, the 32-bit IMAD rate of the CUDA guide's throughput table for cc 8.x/9.0),
  // each 4 multiplies + 4 adds = 8 ops.
  const double peak = double(sms) * 64 * 8 * double(clock_khz) * 1e3 / 1e12;
  return std::string("device ") + p.name + ", cc " + std::to_string(major) + "." + std::to_string(minor) + ", " +
         std::to_string(sms) + " SMs, max SM clock " + std::to_string(clock_khz / 1000) + " MHz, L2 " +
         std::to_string(p.l2CacheSize >> 20) + " MiB, runtime " + std::to_string(rt) + ", driver " +
         std::to_string(drv) + "; DP4A issue-rate peak = SMs x 64 DP4A/clk x 8 ops x clock = " + fmt("%.1f", peak) +
         " TOPS";
}

}  // namespace

Status run_gemm_check(const GemmRunOptions& opt, GemmReport* rep) {
  rep->notes.push_back(device_note());
  std::printf("# %s\n", rep->notes.back().c_str());
  WS_ASSIGN_OR_RETURN(auto stream, cuda::Stream::create());
  cudaStream_t s = stream.get();
  WS_ASSIGN_OR_RETURN(bench::EventTimer timer, bench::EventTimer::create(s, {.flush_l2 = opt.flush_l2}));
  const auto backends = gemm_backends();

  // ---- stage 00: DP4A probe on known vectors (signed extremes) + seeded random words.
  if (gemm_variant_matches(opt.variant, "dp4a_probe") || gemm_variant_matches(opt.variant, "gemm_s8s8s32_dp4a")) {
    auto w = [](int x0, int x1, int x2, int x3) {
      return int32_t(uint32_t(uint8_t(x0)) | uint32_t(uint8_t(x1)) << 8 | uint32_t(uint8_t(x2)) << 16 |
                     uint32_t(uint8_t(x3)) << 24);
    };
    std::vector<int32_t> a = {w(-128, -128, -128, -128), w(127, 127, 127, 127), w(-128, 127, 0, 1), w(1, 2, 3, 4),
                              w(-1, -1, -1, -1)};
    std::vector<int32_t> b = {w(-128, -128, -128, -128), w(-128, -128, -128, -128), w(127, -128, -1, 5),
                              w(-4, 3, -2, 1), w(127, 127, 127, 127)};
    std::vector<int32_t> c = {0, 7, -3, 100, 0};
    std::vector<int8_t> rnd(4096 * 3);
    ref::fill_s8(rnd.data(), int64_t(rnd.size()), ref::FillKind::kRandom, 7);
    for (int i = 0; i < 1024; ++i) {
      int32_t x, y;
      std::memcpy(&x, rnd.data() + 4 * i, 4);
      std::memcpy(&y, rnd.data() + 4096 + 4 * i, 4);
      a.push_back(x);
      b.push_back(y);
      c.push_back(i * 977 - 500000);
    }
    std::vector<int32_t> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      int64_t sum = c[i];
      for (int q = 0; q < 4; ++q) sum += int64_t(int8_t(uint32_t(a[i]) >> (8 * q))) * int8_t(uint32_t(b[i]) >> (8 * q));
      want[i] = int32_t(sum);
    }
    WS_ASSIGN_OR_RETURN(auto da, upload(a));
    WS_ASSIGN_OR_RETURN(auto db, upload(b));
    WS_ASSIGN_OR_RETURN(auto dc, upload(c));
    WS_ASSIGN_OR_RETURN(auto dout, DeviceBuffer::allocate(a.size() * 4));
    WS_RETURN_IF_ERROR(dp4a_probe(da.as<int32_t>(), db.as<int32_t>(), dc.as<int32_t>(), dout.as<int32_t>(),
                                  int(a.size()), s));
    std::vector<int32_t> got(a.size());
    WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(got.data(), dout.get(), got.size() * 4, cudaMemcpyDeviceToHost, s));
    WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i) bad += got[i] != want[i];
    GemmRow row{"probe", 0, 0, std::to_string(a.size()) + " words", "dp4a_probe"};
    row.verdict = bad ? "MISMATCH " + std::to_string(bad) : "ok";
    std::printf("stage00 dp4a_probe: %zu words (first: -128*-128*4 = %d, 127*-128*4+7 = %d): %s\n", a.size(), got[0],
                got[1], row.verdict.c_str());
    rep->failures += bad ? 1 : 0;
    rep->rows.push_back(row);
  }

  auto run_suite = [&](const char* suite, const std::vector<ref::GemmCase>& cases,
                       const std::function<bool(const GemmBackendInfo&)>& use, bool time_squares) -> Status {
    for (const auto& gc : cases) {
      WS_ASSIGN_OR_RETURN(auto cb, make_case(gc));
      std::vector<int64_t> ref(size_t(gc.m * gc.n));
      ref::gemm_s8s8s64(cb->a.data(), cb->b.data(), ref.data(), gc.m, gc.n, gc.k);
      WS_ASSIGN_OR_RETURN(auto dout, DeviceBuffer::allocate(size_t(gc.m * gc.n) * 4 + kGuardWords * 4));
      std::unique_ptr<CublasS8> blas;
      bool lt_ok = false;
      std::string lt_desc;
      for (const auto& be : backends) {
        if (!use(be) || !gemm_variant_matches(opt.variant, be.name)) continue;
        if ((be.kind == GemmBackendKind::kCublasEx || be.kind == GemmBackendKind::kCublasLt) && !blas) {
          WS_ASSIGN_OR_RETURN(blas, CublasS8::create());
          Status ps = blas->lt_plan(cb->da.as<int8_t>(), cb->dbt.as<int8_t>(), dout.as<int32_t>(), int(gc.m),
                                    int(gc.n), int(gc.k), s, &lt_desc);
          lt_ok = ps.is_ok();
          if (!lt_ok) lt_desc = ps.to_string();
        }
        GemmRow row{suite, 0, 0, gc.name, be.name};
        WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dout.get(), kSentinel, dout.bytes(), s));
        Status st = (be.kind == GemmBackendKind::kCublasLt && !lt_ok) ? unsupported(lt_desc)
                                                                       : run_backend(be, *cb, dout.get(), blas.get(), s);
        if (st.is_ok()) WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
        if (!st.is_ok()) {
          // Baselines and CUTLASS may refuse a shape (alignment rules); our kernels may not.
          if (may_refuse(be) && st.code() == StatusCode::kUnsupported) {
            row.verdict = "n/a: " + st.to_string();
          } else {
            return st;
          }
        } else {
          row.verdict = verify_full(be, *cb, ref, dout);
          if (row.verdict != "ok") ++rep->failures;
        }
        if (time_squares && row.verdict == "ok" && gc.m == gc.n && gc.n == gc.k && gc.m >= 128) {
          WS_ASSIGN_OR_RETURN(auto t, time_backend([&] { return run_backend(be, *cb, dout.get(), blas.get(), s); },
                                                   opt.warmup, opt.iters, timer));
          row.ms_median = t.median, row.ms_min = t.min, row.ms_max = t.max;
          row.tops = ref::tops(gc.m, gc.n, gc.k, t.median);
        }
        if (row.verdict != "ok" || row.tops > 0)
          std::printf("%s %-28s %-48s %s%s\n", suite, gc.name.c_str(), be.name.c_str(), row.verdict.c_str(),
                      row.tops > 0 ? fmt("  median %.4f ms  %.3f TOPS", row.ms_median, row.tops).c_str() : "");
        rep->rows.push_back(row);
      }
    }
    return Status::ok();
  };

  // ---- stage 01: naive kernel, seed's cases, timed squares.
  WS_RETURN_IF_ERROR(run_suite("naive", ref::naive_suite(),
                               [](const GemmBackendInfo& b) { return b.kind == GemmBackendKind::kNaive; }, true));
  // ---- stage 02 + tensor cores + baselines: small suite, exhaustive.
  auto small = ref::small_suite();
  WS_RETURN_IF_ERROR(run_suite("small", small, [](const GemmBackendInfo&) { return true; }, false));
  int ok = 0, total = 0, na = 0;
  for (auto& r : rep->rows) {
    if (r.suite == "probe") continue;
    ++total;
    ok += r.verdict == "ok";
    na += r.verdict.rfind("n/a", 0) == 0;
  }
  std::printf("check: %d comparisons, %d ok, %d n/a (baseline/CUTLASS refused shape), %d failures\n", total, ok, na,
              rep->failures);
  return Status::ok();
}

Status run_gemm_bench(const GemmRunOptions& opt, GemmReport* rep) {
  rep->notes.push_back(device_note());
  std::printf("# %s\n", rep->notes.back().c_str());
  WS_ASSIGN_OR_RETURN(auto stream, cuda::Stream::create());
  cudaStream_t s = stream.get();
  WS_ASSIGN_OR_RETURN(bench::EventTimer timer, bench::EventTimer::create(s, {.flush_l2 = opt.flush_l2}));
  std::vector<GemmBackendInfo> backends;
  for (auto& be : gemm_backends())
    if (be.kind != GemmBackendKind::kNaive && gemm_variant_matches(opt.variant, be.name)) backends.push_back(be);
  // Baselines always run (the percentages need them).
  for (auto kind : {GemmBackendKind::kCublasEx, GemmBackendKind::kCublasLt}) {
    bool have = false;
    for (auto& be : backends) have |= be.kind == kind;
    if (!have)
      for (auto& be : gemm_backends())
        if (be.kind == kind) backends.push_back(be);
  }

  struct Shape {
    ref::GemmCase gc;
    std::unique_ptr<CaseBuffers> cb;
    std::unique_ptr<CublasS8> blas;
    DeviceBuffer dref, dout;
    std::map<std::string, std::string> verdict;
  };
  std::vector<Shape> shapes;
  WS_ASSIGN_OR_RETURN(auto dmis, DeviceBuffer::allocate(16));
  for (auto& gc : ref::large_suite(opt.large_scale)) {
    Shape sh;
    sh.gc = gc;
    WS_ASSIGN_OR_RETURN(sh.cb, make_case(gc));
    CaseBuffers& cb = *sh.cb;
    const std::string name = shape_name(gc.m, gc.n, gc.k);
    rep->notes.push_back(name + ": CPU packing (A and B^T into 4-byte K groups) " + fmt("%.1f", cb.pack_ms) + " ms");
    std::printf("# %s\n", rep->notes.back().c_str());
    WS_ASSIGN_OR_RETURN(sh.blas, CublasS8::create());
    WS_ASSIGN_OR_RETURN(sh.dref, DeviceBuffer::allocate(size_t(gc.m * gc.n) * 4));
    WS_ASSIGN_OR_RETURN(sh.dout, DeviceBuffer::allocate(size_t(gc.m * gc.n) * 4));
    std::string lt_desc;
    Status lp = sh.blas->lt_plan(cb.da.as<int8_t>(), cb.dbt.as<int8_t>(), sh.dout.as<int32_t>(), int(gc.m),
                                 int(gc.n), int(gc.k), s, &lt_desc);
    rep->notes.push_back(name + ": cuBLASLt " + (lp.is_ok() ? lt_desc : lp.to_string()));
    std::printf("# %s\n", rep->notes.back().c_str());
    // Reference on the GPU: cublasGemmEx, itself checked at 64 positions against the INT64 CPU oracle.
    const auto pos = ref::check_positions(gc.m, gc.n, opt.cpu_positions, gc.seed);
    std::vector<int64_t> want(pos.size());
    for (size_t i = 0; i < pos.size(); ++i)
      want[i] = ref::gemm_s8_dot(cb.a.data(), cb.b.data(), gc.n, gc.k, pos[i].row, pos[i].col);
    auto cpu_check = [&](const GemmBackendInfo& be, const DeviceBuffer& d) -> std::string {
      int bad = 0;
      for (size_t i = 0; i < pos.size(); ++i) {
        const size_t off = size_t(pos[i].row * gc.n + pos[i].col);
        if (!is_scaled(be)) {
          int32_t v = 0;
          cudaMemcpy(&v, d.as<int32_t>() + off, 4, cudaMemcpyDeviceToHost);
          bad += int64_t(v) != want[i];
        } else {
          uint16_t bits = 0;
          cudaMemcpy(&bits, d.as<uint16_t>() + off, 2, cudaMemcpyDeviceToHost);
          const double prod = double(want[i]) * cb.row_scale[pos[i].row] * cb.col_scale[pos[i].col];
          bad += !epilogue_close(half_to_double(bits, be.out), prod + cb.bias[pos[i].col],
                                 std::fabs(prod) + std::fabs(cb.bias[pos[i].col]), be.out);
        }
      }
      return bad ? "MISMATCH cpu " + std::to_string(bad) + "/" + std::to_string(pos.size()) : "ok";
    };
    GemmBackendInfo ex_info = gemm_backends()[0];
    for (auto& be : gemm_backends())
      if (be.kind == GemmBackendKind::kCublasEx) ex_info = be;
    Status es = run_backend(ex_info, cb, sh.dref.get(), sh.blas.get(), s);
    if (es.is_ok()) WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    bool have_ref = es.is_ok() && cpu_check(ex_info, sh.dref) == "ok";
    if (!have_ref && lp.is_ok()) {  // fall back to cuBLASLt as the exhaustive reference
      WS_RETURN_IF_ERROR(sh.blas->lt_run(cb.da.as<int8_t>(), cb.dbt.as<int8_t>(), sh.dref.as<int32_t>(), s));
      WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
      GemmBackendInfo lt_info = ex_info;
      lt_info.kind = GemmBackendKind::kCublasLt;
      have_ref = cpu_check(lt_info, sh.dref) == "ok";
      rep->notes.push_back(name + ": cublasGemmEx unusable as reference (" + es.to_string() +
                           "); exhaustive reference = cuBLASLt");
    }
    for (auto& be : backends) {
      std::string v;
      if (be.kind == GemmBackendKind::kCublasLt && !lp.is_ok()) {
        v = "n/a: " + lp.to_string();
      } else {
        Status st = run_backend(be, cb, sh.dout.get(), sh.blas.get(), s);
        if (st.is_ok()) WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
        if (!st.is_ok()) {
          v = "n/a: " + st.to_string();
        } else {
          v = cpu_check(be, sh.dout);
          if (v == "ok" && !is_scaled(be) && have_ref) {
            WS_RETURN_IF_ERROR(count_mismatches_s32(sh.dout.as<int32_t>(), sh.dref.as<int32_t>(), gc.m * gc.n,
                                                    dmis.as<unsigned long long>(),
                                                    reinterpret_cast<long long*>(dmis.as<char>() + 8), s));
            unsigned long long hm[2] = {0, 0};
            WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(hm, dmis.get(), 16, cudaMemcpyDeviceToHost, s));
            WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
            if (hm[0]) v = "MISMATCH vs cuBLAS " + std::to_string(hm[0]) + " at flat " + std::to_string(hm[1]);
          }
          if (!have_ref && v == "ok") v = "ok (cpu 64 only)";
        }
      }
      if (v.rfind("MISMATCH", 0) == 0) ++rep->failures;
      sh.verdict[be.name] = v;
      std::printf("validate %-22s %-48s %s\n", name.c_str(), be.name.c_str(), v.c_str());
    }
    shapes.push_back(std::move(sh));
  }

  const int nb = int(backends.size());
  for (int c = 0; c < opt.campaigns; ++c) {
    std::vector<GemmBackendInfo> order;
    const int shift = (c * std::max(1, nb / std::max(1, opt.campaigns))) % std::max(1, nb);
    for (int i = 0; i < nb; ++i) order.push_back(backends[(i + shift) % nb]);
    if (c % 2 == 1) std::reverse(order.begin(), order.end());
    std::printf("\n== campaign %d of %d; backend order:", c + 1, opt.campaigns);
    for (auto& be : order) std::printf(" %s", be.name.c_str());
    std::printf("\n");
    for (auto& sh : shapes) {
      const std::string name = shape_name(sh.gc.m, sh.gc.n, sh.gc.k);
      std::map<std::string, GemmRow> rows;
      int pos_in_order = 0;
      for (auto& be : order) {
        GemmRow row{"large", c + 1, ++pos_in_order, name, be.name};
        row.verdict = sh.verdict[be.name];
        if (row.verdict.rfind("n/a", 0) != 0) {
          auto t = time_backend([&] { return run_backend(be, *sh.cb, sh.dout.get(), sh.blas.get(), s); }, opt.warmup,
                                opt.iters, timer);
          if (!t.is_ok()) return t.status();
          row.ms_median = t->median, row.ms_min = t->min, row.ms_max = t->max;
          row.tops = ref::tops(sh.gc.m, sh.gc.n, sh.gc.k, t->median);
        }
        rows[be.name] = row;
      }
      double ex = 0, lt = 0;
      for (auto& [n, r] : rows) {
        if (n.rfind("cublas_gemmex", 0) == 0) ex = r.tops;
        if (n.rfind("cublaslt", 0) == 0) lt = r.tops;
      }
      std::printf("-- campaign %d shape %s (MxNxK)\n", c + 1, name.c_str());
      std::printf("   %-48s %10s %10s %9s %9s %9s %9s  %s\n", "backend", "median ms", "max ms", "TOPS", "xK32",
                  "%cuBLAS", "%cuBLASLt", "verdict");
      for (auto& be : order) {
        GemmRow& r = rows[be.name];
        if (be.kind == GemmBackendKind::kTiled) {
          const std::string base =
              "gemm_s8s8s32_dp4a_tiled_64x64x32_s" + std::to_string(be.stride);
          if (rows.count(base) && rows[base].tops > 0) r.speedup_k32 = r.tops / rows[base].tops;
        }
        r.pct_cublas = ex > 0 ? 100 * r.tops / ex : 0;
        r.pct_cublaslt = lt > 0 ? 100 * r.tops / lt : 0;
        std::printf("   %-48s %10.4f %10.4f %9.2f %9s %9.1f %9.1f  %s\n", r.backend.c_str(), r.ms_median, r.ms_max,
                    r.tops, r.speedup_k32 > 0 ? fmt("%.3f", r.speedup_k32).c_str() : "-", r.pct_cublas,
                    r.pct_cublaslt, r.verdict.c_str());
        rep->rows.push_back(r);
      }
    }
  }
  return Status::ok();
}

}  // namespace ws::kernels
