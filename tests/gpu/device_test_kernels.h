#pragma once
// Tiny kernels used by tests/gpu/device_test.cpp (kept out of the gtest TU so it stays plain C++).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ws::test {

/// dst[i] = src[i] for i < n, one thread per byte; returns the launch error.
cudaError_t copy_bytes(const uint8_t* src, uint8_t* dst, size_t n, cudaStream_t stream);

}  // namespace ws::test
