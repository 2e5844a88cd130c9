#pragma once
// Checked CUDA runtime calls for GPU tests: every cudaMemcpy / cudaMemset / synchronize in a test goes
// through one of these, so a failed call fails the test with its expression and error instead of being
// ignored. GPU tests only (includes cuda_runtime.h). Also the one "skip without a device" check:
//   WS_SKIP_WITHOUT_GPU();                                               // GTEST_SKIP with the reason
//
//   WS_ASSERT_CUDA(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));   // fatal: returns from the test
//   WS_EXPECT_CUDA(cudaStreamSynchronize(s));                            // non-fatal
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace ws::test {

/// Success, or a failure naming the call and the CUDA error.
inline ::testing::AssertionResult cuda_ok(cudaError_t e, const char* expr) {
  if (e == cudaSuccess) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " failed: " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e);
}

/// True when a CUDA device can be used; otherwise `why` says what cudaGetDeviceCount reported.
inline bool cuda_device_present(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *why = std::string("no CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + ": " +
           cudaGetErrorString(e);
    return false;
  }
  if (n == 0) {
    *why = "no CUDA device: cudaGetDeviceCount reported 0";
    return false;
  }
  return true;
}

/// cudaMemset, then wait for the device: the fill is complete before any later work on ANY stream.
/// A plain cudaMemset of device memory is asynchronous and runs on the legacy default stream, which a
/// cudaStreamNonBlocking stream (cuda::Stream's default) does not wait for: a poison fill could land AFTER the
/// kernel it was meant to precede (seen under compute-sanitizer memcheck, device run 2 of 2026-12-01: the copy
/// ops' outputs read NaN). Every fill in the GPU tests goes through this.
inline cudaError_t memset_sync(void* dev, int byte, size_t bytes) {
  if (cudaError_t e = cudaMemset(dev, byte, bytes); e != cudaSuccess) return e;
  return cudaDeviceSynchronize();
}

/// cudaMemcpy host → device, then wait for the device: the bytes are in place before any later work on ANY
/// stream. A plain cudaMemcpy from pageable memory returns once the data is staged, before its DMA (on the legacy
/// default stream) has landed — the hazard of memset_sync above, and of ws::cuda::copy_to_device in the library.
/// Every host → device upload in the GPU tests goes through this.
inline cudaError_t upload_sync(void* dev, const void* host, size_t bytes) {
  if (cudaError_t e = cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice); e != cudaSuccess) return e;
  return cudaDeviceSynchronize();
}

}  // namespace ws::test

/// Skip the test (with the reason) when no CUDA device is usable.
#define WS_SKIP_WITHOUT_GPU()                                                \
  do {                                                                       \
    std::string ws_why_;                                                     \
    if (!::ws::test::cuda_device_present(&ws_why_)) GTEST_SKIP() << ws_why_; \
  } while (0)

#define WS_ASSERT_CUDA(expr) ASSERT_TRUE(::ws::test::cuda_ok((expr), #expr))
#define WS_EXPECT_CUDA(expr) EXPECT_TRUE(::ws::test::cuda_ok((expr), #expr))
