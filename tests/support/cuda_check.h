#pragma once
// Checked CUDA runtime calls for GPU tests: every cudaMemcpy / cudaMemset / synchronize in a test goes
// through one of these, so a failed call fails the test with its expression and error instead of being
// ignored. GPU tests only (includes cuda_runtime.h).
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

}  // namespace ws::test

#define WS_ASSERT_CUDA(expr) ASSERT_TRUE(::ws::test::cuda_ok((expr), #expr))
#define WS_EXPECT_CUDA(expr) EXPECT_TRUE(::ws::test::cuda_ok((expr), #expr))
