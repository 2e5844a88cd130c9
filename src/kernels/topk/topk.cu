// Device Top-K (batch 1): the K (<= 32) largest of logits[0..classes), descending, ties → lower index,
// NaN ranks as −∞ (ties with a true −∞, lower index first) but a selected NaN keeps its NaN score —
// exactly ws::ref::topk (src/reference/topk.cpp), which picks the first K elements of the strict total
// order  a ≺ b  ⇔  key(a) > key(b) ∨ (key(a) == key(b) ∧ index(a) < index(b)),  key = NaN ? −∞ : x
// (−0 == +0 as the reference's float compare has it).
// Thread mapping: one block of 256 threads; K rounds; in each round every thread scans a strided slice
// (i = tid, tid + 256, …) for its best candidate, a warp-shuffle argmax reduces 32 → 1, the 8 warp
// winners meet in shared memory and warp 0 reduces them; the winner is appended to the selection kept
// in shared memory. Selected elements are excluded from later rounds by the last winner acting as a
// strict bound in ≺ (every selected element precedes it, every unselected one follows it) — the same
// set as testing membership in the selected list, at O(1) instead of O(K) per element.
// At the end threads 0..K−1 write {logits[index], index} (raw score: NaN and −0 survive) to `out`.
// Test: tests/gpu/topk_test.cpp (ws_gpu_tests --gtest_filter='TopKGpu*').
// Time: ws_gpu_tests --gtest_also_run_disabled_tests --gtest_filter='LanesKernelsTiming*'.
#include <cstdint>
#include <string>

#include "cuda/cuda_util.h"
#include "kernels/topk/topk.h"

namespace ws::kernels {
namespace {

constexpr int kWarps = kTopKBlockThreads / 32;
constexpr int32_t kNoIndex = INT32_MAX;  // "no candidate": key −∞ with an index after every real one

struct Cand {
  float key;
  int32_t idx;
};

// a ≺ b (a ranks before b).
__device__ __forceinline__ bool before(float ka, int32_t ia, float kb, int32_t ib) {
  return ka > kb || (ka == kb && ia < ib);
}

__device__ __forceinline__ float rank_key(float x) { return isnan(x) ? -INFINITY : x; }

// Warp shuffle reduction: lane 0 ends with the warp's first candidate in rank order (ties → lower index).
__device__ __forceinline__ void warp_best(float& best_k, int32_t& best_i) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float ok = __shfl_down_sync(0xffffffffu, best_k, off);
    const int32_t oi = __shfl_down_sync(0xffffffffu, best_i, off);
    if (before(ok, oi, best_k, best_i)) {
      best_k = ok;
      best_i = oi;
    }
  }
}

__global__ void __launch_bounds__(kTopKBlockThreads)
    topk_kernel(const float* __restrict__ logits, int32_t classes, int k, TopKPair* out, RowSignal frame_end) {
  __shared__ float warp_key[kWarps];
  __shared__ int32_t warp_idx[kWarps];
  __shared__ int32_t selected[kTopKMax];  // indices chosen so far, in rank order
  __shared__ float bound_key;             // key of the last winner (strict bound for the next round)
  __shared__ int32_t bound_idx;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) {
    bound_key = INFINITY;  // round 0: nothing selected; (+∞, −1) precedes every element
    bound_idx = -1;
  }
  __syncthreads();

  for (int r = 0; r < k; ++r) {
    const float bk = bound_key;
    const int32_t bi = bound_idx;
    float best_k = -INFINITY;
    int32_t best_i = kNoIndex;
    for (int32_t i = tid; i < classes; i += kTopKBlockThreads) {
      const float key = rank_key(logits[i]);
      // Candidate only if it follows the bound (i.e. not yet selected) and beats the current best.
      if (before(bk, bi, key, i) && before(key, i, best_k, best_i)) {
        best_k = key;
        best_i = i;
      }
    }
    warp_best(best_k, best_i);
    if (lane == 0) {
      warp_key[warp] = best_k;
      warp_idx[warp] = best_i;
    }
    __syncthreads();
    if (warp == 0) {
      best_k = lane < kWarps ? warp_key[lane] : -INFINITY;
      best_i = lane < kWarps ? warp_idx[lane] : kNoIndex;
      warp_best(best_k, best_i);
      if (lane == 0) {
        selected[r] = best_i;  // k <= classes, so a real element always remains
        bound_key = best_k;
        bound_idx = best_i;
      }
    }
    __syncthreads();
  }
  // The frame's end (input wavefront): the frame's other kernels have completed (this one is launched after them in
  // stream order, without PDL), so the error word is final and nobody reads the epoch until the next frame.
  const bool failed = frame_end.error && *frame_end.error != 0u;
  if (tid < k) {
    const int32_t i = selected[tid];
    out[tid] = failed ? TopKPair{__int_as_float(0x7fc00000), kTopKInvalidIndex} : TopKPair{logits[i], i};
  }
  if (frame_end.epoch) {
    __syncthreads();  // every thread has read the error word
    if (tid == 0) {
      if (failed) *frame_end.error = 0u;
      *frame_end.epoch += 1u;
    }
  }
}

}  // namespace

Status topk(const float* logits, int64_t classes, int k, TopKPair* out, cudaStream_t stream, const RowSignal& frame_end) {
  if (k < 1) return invalid_argument("top-k (GPU): K = " + std::to_string(k) + " must be >= 1");
  if (k > kTopKMax)
    return invalid_argument("top-k (GPU): K = " + std::to_string(k) + " exceeds the maximum " +
                            std::to_string(kTopKMax));
  if (k > classes)
    return invalid_argument("top-k (GPU): K = " + std::to_string(k) + " exceeds the number of classes " +
                            std::to_string(classes));
  if (classes >= int64_t(INT32_MAX))
    return invalid_argument("top-k (GPU): " + std::to_string(classes) + " classes exceed the int32 index range");
  if (!logits || !out) return invalid_argument("top-k (GPU): null logits or output pointer");
  if (frame_end && (!frame_end.epoch || !frame_end.error))
    return invalid_argument(std::string("top-k (GPU): the frame-end RowSignal has no ") +
                            (!frame_end.epoch && !frame_end.error ? "epoch and no error" : !frame_end.epoch ? "epoch" : "error") + " word");
  // A signal without flags is "off" for producer and consumer alike: nothing to close.
  topk_kernel<<<1, kTopKBlockThreads, 0, stream>>>(logits, int32_t(classes), k, out, frame_end ? frame_end : RowSignal{});
  WS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::ok();
}

}  // namespace ws::kernels
