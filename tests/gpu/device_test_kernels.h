#pragma once
// Tiny kernels used by tests/gpu/device_test.cpp and tests/gpu/sanitizer_canary_test.cpp (kept out of the gtest
// TUs so they stay plain C++). All in namespace ws::test, so compute-sanitizer's kernel filter of
// scripts/lib/sanitize.sh ('ws::' in the name) selects them like every other kernel of ours.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ws::test {

/// dst[i] = src[i] for i < n, one thread per byte; returns the launch error.
cudaError_t copy_bytes(const uint8_t* src, uint8_t* dst, size_t n, cudaStream_t stream);

/// dst[i] = float(src[i]) for i < n (bf16 bits in, one thread per element): reads every element of src once.
cudaError_t bf16_to_float(const uint16_t* src, float* dst, size_t n, cudaStream_t stream);

/// count += number of i < n with p[i] != upload_pattern(i, seed) (one thread per element, one atomic per block).
cudaError_t count_pattern_mismatches(const uint32_t* p, size_t n, uint32_t seed, unsigned long long* count, cudaStream_t stream);
/// The pattern count_pattern_mismatches expects (host and device).
#ifdef __CUDACC__
__host__ __device__
#endif
inline constexpr uint32_t upload_pattern(size_t i, uint32_t seed) { return uint32_t(i) * 2654435761u ^ seed; }

// ---- sanitizer canaries: each has ONE deliberate bug of one compute-sanitizer tool's class. Launched only by the
// DISABLED_ tests of sanitizer_canary_test.cpp, which scripts/lib/sanitize.sh runs under that tool alone to prove
// the tool, with the suite's options and kernel filter, reports a bug in a kernel of ours. Never call otherwise.

/// memcheck: writes p[n], one element past an allocation of exactly n floats (n*4 bytes; pick n so that the
/// allocation's rounding keeps the stray write inside memory the allocation owns, e.g. n = 63).
cudaError_t canary_out_of_bounds_write(float* p, int n, cudaStream_t stream);
/// racecheck: one 64-thread block writes shared memory and reads another warp's element with no barrier between.
cudaError_t canary_shared_memory_race(float* out, cudaStream_t stream);
/// synccheck: __syncthreads() reached by threads 0..47 of a 64-thread block only (divergent barrier).
cudaError_t canary_divergent_barrier(float* out, cudaStream_t stream);

}  // namespace ws::test
