// Byte-copy kernel for the mapped-memory test (C10): one thread per byte.
#include "device_test_kernels.h"

namespace ws::test {
namespace {
__global__ void copy_bytes_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
}  // namespace

cudaError_t copy_bytes(const uint8_t* src, uint8_t* dst, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  copy_bytes_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

}  // namespace ws::test
