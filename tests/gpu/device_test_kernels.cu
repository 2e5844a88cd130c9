// Test-only kernels: the byte copy of the mapped-memory test (C10), the pattern check of the upload tests
// (tests/gpu/cuda_upload_test.cpp), a bf16 -> float read of a whole buffer (the
// initcheck probe of tests/gpu/sanitizer_canary_test.cpp), and the sanitizer canaries (one deliberate bug each).
// Thread mapping: one thread per element (copy, convert); canaries: one 64-thread block.
// Test: ws_gpu_tests --gtest_filter='DeviceInit.*' (copy); the canaries through `bash scripts/device.sh sanitize`.
#include "device_test_kernels.h"

namespace ws::test {
namespace {
__global__ void copy_bytes_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

__global__ void bf16_to_float_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = __uint_as_float(uint32_t(src[i]) << 16);
}

__global__ void count_pattern_mismatches_kernel(const uint32_t* __restrict__ p, size_t n, uint32_t seed, unsigned long long* count) {
  __shared__ unsigned int block_bad;
  if (threadIdx.x == 0) block_bad = 0;
  __syncthreads();
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && p[i] != upload_pattern(i, seed)) atomicAdd(&block_bad, 1u);
  __syncthreads();
  if (threadIdx.x == 0 && block_bad) atomicAdd(count, static_cast<unsigned long long>(block_bad));
}

__global__ void canary_oob_kernel(float* p, int n) {
  if (threadIdx.x == 0) p[n] = 1.f;  // one past the end: the memcheck canary's bug
}

__global__ void canary_race_kernel(float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = float(threadIdx.x);
  out[threadIdx.x] = s[(threadIdx.x + 32) % 64];  // the other warp's element, no __syncthreads(): racecheck's bug
}

__global__ void canary_barrier_kernel(float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = float(threadIdx.x);
  // Only threads 0..47 reach the barrier (all of warp 0, half of warp 1; 48..63 go past it and exit): synccheck's
  // bug, divergent at block and at warp level. Exited threads count as arrived, so the block does not hang.
  if (threadIdx.x < 48) __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}
}  // namespace

cudaError_t copy_bytes(const uint8_t* src, uint8_t* dst, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  copy_bytes_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t bf16_to_float(const uint16_t* src, float* dst, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  bf16_to_float_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t count_pattern_mismatches(const uint32_t* p, size_t n, uint32_t seed, unsigned long long* count, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  count_pattern_mismatches_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(p, n, seed, count);
  return cudaGetLastError();
}

cudaError_t canary_out_of_bounds_write(float* p, int n, cudaStream_t stream) {
  canary_oob_kernel<<<1, 32, 0, stream>>>(p, n);
  return cudaGetLastError();
}

cudaError_t canary_shared_memory_race(float* out, cudaStream_t stream) {
  canary_race_kernel<<<1, 64, 0, stream>>>(out);
  return cudaGetLastError();
}

cudaError_t canary_divergent_barrier(float* out, cudaStream_t stream) {
  canary_barrier_kernel<<<1, 64, 0, stream>>>(out);
  return cudaGetLastError();
}

}  // namespace ws::test
