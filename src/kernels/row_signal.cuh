#pragma once
/// \file row_signal.cuh
/// Device side of ws::RowSignal (warpstream/row_signal.h): a producer publishes rows, a consumer waits for them.
/// PTX memory model (PTX ISA §8, "Memory Consistency Model"): st.release.gpu / ld.acquire.gpu on the flag words; the
/// block's other threads are ordered by bar.sync on either side. Test: tests/gpu/row_signal_test.cpp.
#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/row_signal.h"

namespace ws::kernels::device {

/// This frame's flag value (the epoch word + 1). Read once, at kernel start: the epoch changes only after this
/// kernel has completed (the frame's last kernel bumps it).
__device__ __forceinline__ uint32_t row_target(const RowSignal& s) { return *s.epoch + 1u; }

/// Publishes row r: call with every thread of the block after its stores of row r (the barrier orders them before
/// thread 0's release).
__device__ __forceinline__ void publish_row(const RowSignal& s, int r, uint32_t target) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    __threadfence();
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(s.flags + r), "r"(target) : "memory");
  }
}

/// Publishes one piece (e.g. one tile) of rows [lo, hi] (a producer whose rows are written in several pieces;
/// RowSignal::counters): call with every thread of the block after the piece's stores. `blocks_of(r)` is how many pieces
/// row r has in all; the add that completes a row's count resets the counter and stores the flag.
template <typename BlocksOf>
__device__ __forceinline__ void publish_rows_counted(const RowSignal& s, int lo, int hi, uint32_t target, BlocksOf blocks_of) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    __threadfence();  // this block's stores, before its arrival is counted
    for (int r = lo; r <= hi; ++r) {
      const uint32_t n = uint32_t(blocks_of(r));
      if (atomicAdd(s.counters + r, 1u) + 1u == n) {  // the row's last block: every other block's fence came before its add
        s.counters[r] = 0u;  // the next frame's adds come after this grid has completed (stream order)
        __threadfence();
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(s.flags + r), "r"(target) : "memory");
      }
    }
  }
}

/// Waits until rows [lo, hi] (clamped to the tensor) are published for this frame: thread 0 polls, then the block
/// barrier. Call with every thread of the block. Gives up after kRowWaitMaxPolls polls on one row: stores 1 to s.error and returns (the frame's result is then invalid).
__device__ __forceinline__ void wait_rows(const RowSignal& s, int lo, int hi, uint32_t target) {
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    lo = lo < 0 ? 0 : lo;
    hi = hi >= int(s.rows) ? int(s.rows) - 1 : hi;
    bool gave_up = false;
    for (int r = lo; r <= hi && !gave_up; ++r) {
      uint32_t polls = 0;
      for (;;) {
        uint32_t v;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(s.flags + r) : "memory");
        if (int32_t(v - target) >= 0) break;
        if (++polls >= kRowWaitMaxPolls) {  // the tile's other rows are not waited for either
          atomicExch(s.error, 1u);
          gave_up = true;
          break;
        }
        __nanosleep(100);
      }
    }
  }
  __syncthreads();
}

}  // namespace ws::kernels::device
