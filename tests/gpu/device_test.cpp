// Device set-up tests: map-host flags before the context (fresh process), the verdict on a context that
// lacks map-host, latency-anchors C10 (flags after an active context; mapped memory round trip), and the
// run-time environment report. Skip without a device (except the pure verdict test).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/cuda_util.h"
#include "cuda/device.h"
#include "device_test_kernels.h"
#include "lanes_gpu_support.h"

namespace ws {
namespace {

TEST(DeviceInit, VerdictWithoutMapHostNamesCauseAndFix) {
  // Runs everywhere: the verdict init_device applies to a live context's flags.
  EXPECT_TRUE(cuda::check_map_host_flags(cudaDeviceMapHost | cudaDeviceScheduleSpin, 0).is_ok());
  const Status s = cuda::check_map_host_flags(cudaDeviceScheduleSpin, 3);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("cudaDeviceMapHost"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("device 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("init_device(3)"), std::string::npos) << "the fix: " << s.message();
  EXPECT_NE(s.message().find("before any cuDNN/cuBLAS"), std::string::npos) << s.message();
  EXPECT_EQ(cuda::device_flags_string(cudaDeviceMapHost | cudaDeviceScheduleBlockingSync), "map-host|blocking-sync");
}

// In a fresh process (gtest's threadsafe death-test style re-executes the binary, so no context exists
// there yet), init_device must create the context with map-host and the requested host-wait flag.
TEST(DeviceInit, FreshProcessContextGetsMapHostAndScheduleFlag) {
  WS_SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const Status s = cuda::init_device(0, cuda::HostWait::kBlockingSync);
        unsigned flags = 0;
        const cudaError_t e = cudaGetDeviceFlags(&flags);
        const bool ok = s.is_ok() && e == cudaSuccess && (flags & cudaDeviceMapHost) &&
                        (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync;
        std::fprintf(stderr, "child: init_device -> %s; flags %s\n", s.is_ok() ? "ok" : s.to_string().c_str(),
                     cuda::device_flags_string(flags).c_str());
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "child: init_device -> ok; flags map-host\\|blocking-sync");
}

TEST(DeviceInit, BadDeviceIndexIsInvalidArgument) {
  WS_SKIP_WITHOUT_GPU();
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  for (int bad : {-1, n}) {
    const Status s = cuda::init_device(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  }
}

// latency-anchors C10: cudaFree(0) first (context active), then cudaSetDeviceFlags(map-host|spin): accept
// success or cudaErrorSetOnActiveProcess, never abort; init_device then succeeds (the runtime's context has
// map-host); a 64 KiB mapped allocation has a device pointer (equal to the host pointer under UVA), and a
// kernel copying bytes 0..255 that the host wrote before the launch reads them back exactly.
TEST(DeviceInit, C10FlagsAfterActiveContextAndMappedRoundTrip) {
  WS_SKIP_WITHOUT_GPU();
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  const cudaError_t e = cudaSetDeviceFlags(cudaDeviceMapHost | cudaDeviceScheduleSpin);
  EXPECT_TRUE(e == cudaSuccess || e == cudaErrorSetOnActiveProcess) << cudaGetErrorName(e);
  std::printf("C10: cudaSetDeviceFlags on an active context returned %s\n", cudaGetErrorName(e));
  (void)cudaGetLastError();
  const Status init = cuda::init_device(0);
  ASSERT_TRUE(init.is_ok()) << init.to_string();

  constexpr size_t kBytes = 64 * 1024;
  auto in = cuda::PinnedBuffer::allocate(kBytes, cudaHostAllocMapped);
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  auto out = cuda::PinnedBuffer::allocate(kBytes, cudaHostAllocMapped);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  void* dev = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&dev, in->get(), 0), cudaSuccess);
  EXPECT_EQ(dev, in->device_ptr());
  int uva = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&uva, cudaDevAttrUnifiedAddressing, 0), cudaSuccess);
  if (uva) EXPECT_EQ(dev, in->get()) << "under UVA the mapped device pointer equals the host pointer";

  auto* host_in = in->as<uint8_t>();
  for (size_t i = 0; i < kBytes; ++i) host_in[i] = uint8_t(i & 255);
  std::memset(out->get(), 0xA5, kBytes);
  auto stream = cuda::Stream::create();
  ASSERT_TRUE(stream.is_ok());
  auto dbuf = cuda::DeviceBuffer::allocate(kBytes);
  ASSERT_TRUE(dbuf.is_ok());
  // mapped → device → mapped, all by kernels; the host reads only after the stream has completed.
  ASSERT_EQ(test::copy_bytes(static_cast<const uint8_t*>(in->device_ptr()), dbuf->as<uint8_t>(), kBytes, stream->get()),
            cudaSuccess);
  ASSERT_EQ(test::copy_bytes(dbuf->as<uint8_t>(), static_cast<uint8_t*>(out->device_ptr()), kBytes, stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  const auto* host_out = out->as<const uint8_t>();
  size_t bad = 0;
  for (size_t i = 0; i < kBytes; ++i) bad += host_out[i] != uint8_t(i & 255);
  EXPECT_EQ(bad, 0u) << "bytes differing after the mapped round trip";
  std::vector<uint8_t> via_memcpy(kBytes);
  ASSERT_EQ(cudaMemcpy(via_memcpy.data(), dbuf->get(), kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::memcmp(via_memcpy.data(), host_in, kBytes), 0);
}

TEST(DeviceInit, ReportIsReadAtRunTime) {
  WS_REQUIRE_LANES_GPU();
  auto r = cuda::device_report(0);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::printf("device: %s\n", r->to_string().c_str());
  EXPECT_FALSE(r->name.empty());
  EXPECT_GT(r->sm_count, 0);
  EXPECT_GT(r->cc_major, 0);
  EXPECT_GT(r->global_memory_bytes, 0u);
  EXPECT_GT(r->driver_version, 0);
  EXPECT_GT(r->runtime_version, 0);
  EXPECT_TRUE(r->can_map_host_memory);
  ASSERT_TRUE(r->flags_read);
  EXPECT_TRUE(r->device_flags & cudaDeviceMapHost) << cuda::device_flags_string(r->device_flags);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_EQ(r->sm_count, prop.multiProcessorCount);
  EXPECT_EQ(r->cc_major, prop.major);
  EXPECT_EQ(r->cc_minor, prop.minor);
}

}  // namespace
}  // namespace ws
